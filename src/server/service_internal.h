/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* What the files of gloved's service share: service_options.c (the
 * options) and service.c (start-up, shutdown and main). */

/* gloved --help's text (service_options.c), printed by
 * glove_server_service_main. */
extern const char glove_server_service_usage[];

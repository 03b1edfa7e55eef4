/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove apply (src/host/apply.c; docs/retained-changes.md): the owner-local
 * command over glove/apply/apply.h. argv[0] is "apply". Returns the exit
 * status: 0 done, 1 refused or failed (one line "glove: CODE: message" on
 * stderr), 125 usage error.
 */
int glove_host_apply_main(int argc, char **argv);

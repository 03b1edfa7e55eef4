/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to host: strings from files (a policy, a staged package's
 * metadata, names found on disk) as they reach the operator's terminal. */

/* s escaped by glove_shown (glove/base/shown.h: C0, DEL, C1 and
 * bidirectional controls); NULL shows as "?". Returns one of 8 rotating
 * static buffers, so up to 8 may appear in one printf; a string over 1024
 * bytes is cut and ends in "...". Not thread-safe (the glove CLI's). */
const char *host_shown(const char *s);

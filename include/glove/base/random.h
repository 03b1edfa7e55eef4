/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Random bytes from the kernel (getrandom(2), flags 0: blocks only until
 * the pool is first initialized). For names and identifiers; key material
 * comes from libcrypto (digest.h) as DESIGN.md says.
 */

#include <stddef.h>

/* Fills buf[0..len) (len bytes, any size; short reads and EINTR retried).
 * Returns 0 or -errno of getrandom(2). */
int glove_random_bytes(void *buf, size_t len);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Strict decimal numbers from text (command-line values, cursors): digits
 * only — no sign, no leading space, no base prefix — within [min, max].
 */

#include <stdint.h>

/* Accept one K, M or G suffix (powers of 1024) after the digits. */
#define GLOVE_NUMBER_SUFFIXES 1u

/*
 * Parses s into *out. Returns 0, or -EINVAL when s is NULL, empty, has a
 * character other than digits (and, with GLOVE_NUMBER_SUFFIXES, one final
 * K/M/G in either case), overflows 64 bits, or lies outside [min, max].
 * *out is unchanged on error. Callers word their own error message.
 */
int glove_number_parse_u64(const char *s, unsigned flags, uint64_t min, uint64_t max, uint64_t *out);

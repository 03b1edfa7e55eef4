/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Strict decimal numbers from text (command-line values, cursors): digits
 * only — no sign, no leading space, no base prefix — within [min, max];
 * sizes with a K/M/G/T suffix; durations with a unit.
 */

#include <stddef.h>
#include <stdint.h>

/* Accept one size suffix after the digits: K, M, G or T (powers of 1024,
 * either case), optionally followed by "B" or "iB" (so 1G, 1GB and 1GiB
 * are all 2^30 bytes), or a lone "B" (bytes). */
#define GLOVE_NUMBER_SUFFIXES 1u

/* The accepted forms of a size, for error messages and help. */
#define GLOVE_NUMBER_SIZE_FORMS \
        "use a number of bytes or one with a K, M, G or T suffix (powers of 1024; 512M, 1G, 1GiB)"

/*
 * Parses s into *out. Returns 0, or -EINVAL when s is NULL, empty, has a
 * character other than digits (and, with GLOVE_NUMBER_SUFFIXES, one final
 * suffix as above), overflows 64 bits, or lies outside [min, max] (the
 * bounds apply after the multiplier). *out is unchanged on error. Callers
 * word their own error message.
 */
int glove_number_parse_u64(const char *s, unsigned flags, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Writes size v (bytes) into buf (size bytes, at least 24) in the shortest
 * exact form glove_number_parse_u64 reads back with GLOVE_NUMBER_SUFFIXES:
 * "16T", "64K", "1000" (no suffix when v is not a multiple of 1024). Returns buf.
 */
char *glove_number_format_size(uint64_t v, char *buf, size_t size);

/* The accepted forms of a duration, for error messages and help. */
#define GLOVE_DURATION_FORMS "use a whole number with a unit ms, s, m or h (500ms, 30s, 5m, 2h)"

/*
 * Parses duration s into milliseconds: decimal digits (as above, at most
 * 18 of them) followed by a unit "ms", "s", "m" (minutes) or "h", or by
 * nothing, and then the number is in units of bare_unit_ms (1 for an
 * option whose bare number is milliseconds, 1000 for seconds; must be > 0).
 * Returns 0 with *out_ms in [min_ms, max_ms], or -EINVAL (NULL or empty s,
 * another unit, overflow, outside the bounds); *out_ms is unchanged on error.
 */
int glove_duration_parse_ms(const char *s, uint64_t bare_unit_ms, uint64_t min_ms, uint64_t max_ms,
                            uint64_t *out_ms);

/*
 * Writes duration ms into buf (size bytes, at least 24) in the largest exact
 * unit: "24h", "90s", "1500ms". Returns buf.
 */
char *glove_duration_format_ms(uint64_t ms, char *buf, size_t size);

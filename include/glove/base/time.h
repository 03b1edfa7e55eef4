/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Clocks and timestamps.
 *
 * Monotonic time (CLOCK_MONOTONIC, clock_gettime(2)) measures durations and
 * deadlines; it does not jump with wall-clock changes and does not advance
 * while the system is suspended. Realtime (CLOCK_REALTIME) is wall-clock
 * time since the Unix epoch, used for expiry times (e.g. a plan's
 * expires_at_ms) and for audit timestamps.
 *
 * Timestamps are RFC 3339 (section 5.6) in UTC with exactly six fractional
 * digits, as audit records use (DESIGN.md, "Audit"):
 *     "2026-11-29T13:28:17.123456Z"
 *
 * The clock readers abort(3) if clock_gettime fails, which Linux does not do
 * for these clocks (a failure would mean a broken vDSO or seccomp filter, and
 * continuing with a wrong time would be worse than stopping).
 */

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Bytes needed for an RFC 3339 timestamp: 27 characters plus the NUL. */
#define GLOVE_TIME_RFC3339_MAX 28

/* CLOCK_MONOTONIC now, in microseconds (arbitrary origin, usually boot). */
uint64_t glove_time_monotonic_us(void);

/* CLOCK_MONOTONIC now, in milliseconds (same origin, truncated). */
uint64_t glove_time_monotonic_ms(void);

/* CLOCK_REALTIME now, in milliseconds since 1970-01-01T00:00:00Z (truncated
 * toward negative infinity; negative before the epoch). */
int64_t glove_time_realtime_ms(void);

/*
 * Formats ts (seconds and nanoseconds since the Unix epoch, UTC, leap seconds
 * not represented) as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" into buf, which has
 * GLOVE_TIME_RFC3339_MAX bytes; the result is NUL-terminated and exactly 27
 * characters long. Nanoseconds are truncated to microseconds (never rounded
 * up into the next second).
 *
 * Returns 0; -EINVAL when tv_nsec is outside [0, 999999999]; -EOVERFLOW when
 * the year falls outside 0000..9999 (RFC 3339 has four-digit years). buf
 * holds an empty string on error.
 */
int glove_time_format_rfc3339(const struct timespec *ts, char buf[GLOVE_TIME_RFC3339_MAX]);

/* Formats CLOCK_REALTIME now, as glove_time_format_rfc3339. Returns 0 or a
 * negative errno from it. */
int glove_time_now_rfc3339(char buf[GLOVE_TIME_RFC3339_MAX]);

/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Seconds from the epoch to 0000-01-01T00:00:00Z and to 10000-01-01T00:00:00Z
 * (proleptic Gregorian calendar). */
#define RFC3339_MIN_SEC INT64_C(-62167219200)
#define RFC3339_END_SEC INT64_C(253402300800)

static struct timespec now(clockid_t clock) {
        struct timespec ts;
        if (clock_gettime(clock, &ts) < 0)
                abort();
        return ts;
}

uint64_t glove_time_monotonic_us(void) {
        struct timespec ts = now(CLOCK_MONOTONIC);
        return (uint64_t)ts.tv_sec * UINT64_C(1000000) + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t glove_time_monotonic_ms(void) {
        struct timespec ts = now(CLOCK_MONOTONIC);
        return (uint64_t)ts.tv_sec * UINT64_C(1000) + (uint64_t)ts.tv_nsec / 1000000;
}

int64_t glove_time_realtime_ms(void) {
        struct timespec ts = now(CLOCK_REALTIME);
        /* tv_nsec is always in [0, 1e9), so this floors for negative tv_sec. */
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int glove_time_format_rfc3339(const struct timespec *ts, char buf[GLOVE_TIME_RFC3339_MAX]) {
        buf[0] = '\0';
        if (ts->tv_nsec < 0 || ts->tv_nsec > 999999999)
                return -EINVAL;
        if ((int64_t)ts->tv_sec < RFC3339_MIN_SEC || (int64_t)ts->tv_sec >= RFC3339_END_SEC)
                return -EOVERFLOW;
        struct tm tm;
        time_t t = ts->tv_sec;
        if (!gmtime_r(&t, &tm))
                return -EOVERFLOW;
        int n = snprintf(buf, GLOVE_TIME_RFC3339_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                         tm.tm_sec, (long)(ts->tv_nsec / 1000));
        if (n != GLOVE_TIME_RFC3339_MAX - 1) {
                buf[0] = '\0';
                return -EOVERFLOW;
        }
        return 0;
}

int glove_time_now_rfc3339(char buf[GLOVE_TIME_RFC3339_MAX]) {
        struct timespec ts = now(CLOCK_REALTIME);
        return glove_time_format_rfc3339(&ts, buf);
}

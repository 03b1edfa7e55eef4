/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/time.h"

static void assert_formats(time_t sec, long nsec, const char *expected) {
        char buf[GLOVE_TIME_RFC3339_MAX];
        struct timespec ts = { .tv_sec = sec, .tv_nsec = nsec };
        int r = glove_time_format_rfc3339(&ts, buf);
        if (r != 0)
                fail_msg("formatting %lld.%09ld failed: %d", (long long)sec, nsec, r);
        assert_string_equal(buf, expected);
        assert_int_equal(strlen(buf), GLOVE_TIME_RFC3339_MAX - 1);
}

static void test_format_fixed_instants(void **state) {
        (void)state;
        assert_formats(1795958897, 123456789, "2026-11-29T13:28:17.123456Z");
        assert_formats(0, 0, "1970-01-01T00:00:00.000000Z");
        assert_formats(1709251199, 999999999, "2024-02-29T23:59:59.999999Z"); /* leap day */
        assert_formats(951868800, 1000, "2000-03-01T00:00:00.000001Z");
        assert_formats(-1, 999999999, "1969-12-31T23:59:59.999999Z");
        assert_formats(253402300799, 0, "9999-12-31T23:59:59.000000Z");
        assert_formats(INT64_C(-62167219200), 0, "0000-01-01T00:00:00.000000Z");
}

static void test_nanoseconds_truncate(void **state) {
        (void)state;
        /* 999 ns is below one microsecond: never rounded up. */
        assert_formats(59, 999, "1970-01-01T00:00:59.000000Z");
        assert_formats(59, 999999, "1970-01-01T00:00:59.000999Z");
}

static void test_format_rejects_out_of_range(void **state) {
        (void)state;
        char buf[GLOVE_TIME_RFC3339_MAX];
        struct timespec ts = { .tv_sec = 0, .tv_nsec = 1000000000 };
        assert_int_equal(glove_time_format_rfc3339(&ts, buf), -EINVAL);
        assert_string_equal(buf, "");
        ts.tv_nsec = -1;
        assert_int_equal(glove_time_format_rfc3339(&ts, buf), -EINVAL);
        ts = (struct timespec){ .tv_sec = 253402300800, .tv_nsec = 0 }; /* year 10000 */
        assert_int_equal(glove_time_format_rfc3339(&ts, buf), -EOVERFLOW);
        assert_string_equal(buf, "");
        ts.tv_sec = INT64_C(-62167219201); /* year -1 */
        assert_int_equal(glove_time_format_rfc3339(&ts, buf), -EOVERFLOW);
}

static void test_now_rfc3339_shape(void **state) {
        (void)state;
        char buf[GLOVE_TIME_RFC3339_MAX];
        assert_int_equal(glove_time_now_rfc3339(buf), 0);
        /* YYYY-MM-DDTHH:MM:SS.uuuuuuZ */
        static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
        assert_int_equal(strlen(buf), strlen(shape));
        for (size_t i = 0; shape[i]; i++) {
                if (shape[i] == 'd')
                        assert_true(buf[i] >= '0' && buf[i] <= '9');
                else
                        assert_int_equal(buf[i], shape[i]);
        }
        assert_true(strncmp(buf, "2025", 4) >= 0); /* this code did not exist before */
}

static void test_clocks(void **state) {
        (void)state;
        uint64_t us1 = glove_time_monotonic_us();
        uint64_t ms1 = glove_time_monotonic_ms();
        struct timespec pause = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };
        assert_int_equal(nanosleep(&pause, NULL), 0);
        uint64_t us2 = glove_time_monotonic_us();
        uint64_t ms2 = glove_time_monotonic_ms();
        /* Monotonic and in the stated units: a 20 ms sleep advances at least
         * 20000 us and 20 ms (no upper bound: scheduling may delay us). */
        assert_true(us2 >= us1 + 20000);
        assert_true(ms2 >= ms1 + 20);
        assert_true(ms1 <= us1 / 1000 + 1);

        struct timespec ts;
        assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
        int64_t ms = glove_time_realtime_ms();
        int64_t ref = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        assert_true(ms >= ref);
        assert_true(ms - ref < 60 * 1000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_fixed_instants),
                cmocka_unit_test(test_nanoseconds_truncate),
                cmocka_unit_test(test_format_rejects_out_of_range),
                cmocka_unit_test(test_now_rfc3339_shape),
                cmocka_unit_test(test_clocks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "glove/base/number.h"

static void test_accepts(void **state) {
        (void)state;
        uint64_t v = 7;
        assert_int_equal(glove_number_parse_u64("0", 0, 0, 10, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(glove_number_parse_u64("18446744073709551615", 0, 0, UINT64_MAX, &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(glove_number_parse_u64("4k", GLOVE_NUMBER_SUFFIXES, 0, UINT64_MAX, &v), 0);
        assert_int_equal(v, 4096);
        assert_int_equal(glove_number_parse_u64("2M", GLOVE_NUMBER_SUFFIXES, 0, UINT64_MAX, &v), 0);
        assert_int_equal(v, 2 << 20);
        assert_int_equal(glove_number_parse_u64("3G", GLOVE_NUMBER_SUFFIXES, 0, UINT64_MAX, &v), 0);
        assert_true(v == (UINT64_C(3) << 30));
        /* T, and the B / iB spellings of every suffix (all powers of 1024). */
        static const struct {
                const char *s;
                uint64_t v;
        } sizes[] = {{"2T", UINT64_C(2) << 40}, {"1GB", UINT64_C(1) << 30}, {"1GiB", UINT64_C(1) << 30},
                     {"1gib", UINT64_C(1) << 30}, {"512MB", UINT64_C(512) << 20}, {"64KiB", 64 << 10},
                     {"1024B", 1024}, {"7b", 7}};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                v = 0;
                if (glove_number_parse_u64(sizes[i].s, GLOVE_NUMBER_SUFFIXES, 0, UINT64_MAX, &v) != 0 || v != sizes[i].v)
                        fail_msg("\"%s\" read as %llu", sizes[i].s, (unsigned long long)v);
        }
}

static void test_refuses(void **state) {
        (void)state;
        static const char *const bad[] = {"", " 1", "+1", "-1", "0x10", "1 ", "1.5", "12X", "1KK", "1iB", "1Gi",
                                          "1GBB", "1BB", "1P", "K", "1 G",
                                          "18446744073709551616", "99999999999999999999"};
        uint64_t v = 42;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                if (glove_number_parse_u64(bad[i], GLOVE_NUMBER_SUFFIXES, 0, UINT64_MAX, &v) != -EINVAL)
                        fail_msg("accepted \"%s\"", bad[i]);
        }
        assert_int_equal(v, 42);
        assert_int_equal(glove_number_parse_u64(NULL, 0, 0, 1, &v), -EINVAL);
        /* Suffixes only when asked for, and bounds after the multiplier. */
        assert_int_equal(glove_number_parse_u64("1K", 0, 0, UINT64_MAX, &v), -EINVAL);
        assert_int_equal(glove_number_parse_u64("1K", GLOVE_NUMBER_SUFFIXES, 0, 1023, &v), -EINVAL);
        assert_int_equal(glove_number_parse_u64("17179869184G", GLOVE_NUMBER_SUFFIXES, 0, UINT64_MAX, &v), -EINVAL);
        assert_int_equal(glove_number_parse_u64("0", 0, 1, 10, &v), -EINVAL);
        assert_int_equal(glove_number_parse_u64("11", 0, 1, 10, &v), -EINVAL);
        assert_int_equal(v, 42);
        assert_int_equal(glove_number_parse_u64("1GB", 0, 0, UINT64_MAX, &v), -EINVAL);
}

static void test_format_size(void **state) {
        (void)state;
        char b[24];
        assert_string_equal(glove_number_format_size(UINT64_C(1) << 44, b, sizeof(b)), "16T");
        assert_string_equal(glove_number_format_size(UINT64_C(1) << 20, b, sizeof(b)), "1M");
        assert_string_equal(glove_number_format_size(64 << 10, b, sizeof(b)), "64K");
        assert_string_equal(glove_number_format_size(1000, b, sizeof(b)), "1000");
        assert_string_equal(glove_number_format_size(0, b, sizeof(b)), "0");
        assert_string_equal(glove_number_format_size(UINT64_C(1) << 60, b, sizeof(b)), "1048576T");
}

static void test_duration(void **state) {
        (void)state;
        uint64_t v = 0;
        static const struct {
                const char *s;
                uint64_t bare, v;
        } ok[] = {{"5", 1, 5}, {"5", 1000, 5000}, {"5s", 1, 5000}, {"5s", 1000, 5000}, {"250ms", 1000, 250},
                  {"2m", 1, 120000}, {"3h", 1, 10800000}, {"0s", 1, 0}};
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                v = 42;
                if (glove_duration_parse_ms(ok[i].s, ok[i].bare, 0, UINT64_MAX, &v) != 0 || v != ok[i].v)
                        fail_msg("\"%s\" (bare x%llu) read as %llu", ok[i].s, (unsigned long long)ok[i].bare,
                                 (unsigned long long)v);
        }
        static const char *const bad[] = {"", "s", "5 s", "5S", "5sec", "5min", "1.5s", "-1s", "+1", "5d", "5ms ",
                                          "1000000000000000000ms", "99999999999999999h"};
        v = 42;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (glove_duration_parse_ms(bad[i], 1, 0, UINT64_MAX, &v) != -EINVAL)
                        fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(glove_duration_parse_ms(NULL, 1, 0, 1, &v), -EINVAL);
        assert_int_equal(glove_duration_parse_ms("1", 0, 0, 1, &v), -EINVAL);
        /* Bounds apply after the unit. */
        assert_int_equal(glove_duration_parse_ms("2s", 1, 1, 1999, &v), -EINVAL);
        assert_int_equal(glove_duration_parse_ms("1ms", 1000, 2, 10, &v), -EINVAL);
        assert_int_equal(v, 42);
        char b[24];
        assert_string_equal(glove_duration_format_ms(86400000, b, sizeof(b)), "24h");
        assert_string_equal(glove_duration_format_ms(90000, b, sizeof(b)), "90s");
        assert_string_equal(glove_duration_format_ms(120000, b, sizeof(b)), "2m");
        assert_string_equal(glove_duration_format_ms(1500, b, sizeof(b)), "1500ms");
        assert_string_equal(glove_duration_format_ms(0, b, sizeof(b)), "0ms");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accepts),
                cmocka_unit_test(test_refuses),
                cmocka_unit_test(test_format_size),
                cmocka_unit_test(test_duration),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

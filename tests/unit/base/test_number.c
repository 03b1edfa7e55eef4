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
}

static void test_refuses(void **state) {
        (void)state;
        static const char *const bad[] = {"", " 1", "+1", "-1", "0x10", "1 ", "1.5", "12X", "1KK",
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
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accepts),
                cmocka_unit_test(test_refuses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

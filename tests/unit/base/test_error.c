/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/error.h"

static void test_set_returns_negative_errno(void **state) {
        (void)state;
        struct glove_error err = {0};
        assert_int_equal(glove_error_set(&err, ENOENT, "grant.missing_path", "no %s", "x"), -ENOENT);
        assert_string_equal(err.code, "grant.missing_path");
        assert_string_equal(err.message, "no x");
        assert_int_equal(err.errnum, ENOENT);
        assert_true(glove_error_is_set(&err));
}

static void test_first_error_wins(void **state) {
        (void)state;
        struct glove_error err = {0};
        glove_error_set(&err, EPERM, "first", "first");
        assert_int_equal(glove_error_set(&err, EIO, "second", "second"), -EIO);
        assert_string_equal(err.code, "first");
        assert_int_equal(err.errnum, EPERM);
}

static void test_null_and_zero(void **state) {
        (void)state;
        assert_int_equal(glove_error_set(NULL, -EACCES, "c", "m"), -EACCES);
        struct glove_error err = {0};
        assert_int_equal(glove_error_set(&err, 0, "c", "m"), -EINVAL);
        glove_error_clear(&err);
        assert_false(glove_error_is_set(&err));
        assert_string_equal(err.message, "");
}

static void test_long_message_truncated_on_utf8_boundary(void **state) {
        (void)state;
        char big[2000];
        /* "é" is two bytes; fill so the cut falls inside a character. */
        for (size_t i = 0; i + 2 < sizeof(big); i += 2)
                memcpy(big + i, "\xc3\xa9", 2);
        big[sizeof(big) - 2] = '\0';
        struct glove_error err = {0};
        glove_error_set(&err, EINVAL, "c", "x%s", big);
        size_t n = strlen(err.message);
        assert_true(n < GLOVE_ERROR_MESSAGE_MAX);
        assert_string_equal(err.message + n - 3, "...");
        /* The byte before "..." must not be a UTF-8 lead byte cut in half. */
        unsigned char last = (unsigned char)err.message[n - 4];
        assert_true(last == 0xa9 || last == 'x');
}

static void test_prefix(void **state) {
        (void)state;
        struct glove_error err = {0};
        glove_error_prefix(&err, "ignored");
        assert_false(glove_error_is_set(&err));
        glove_error_set(&err, EIO, "c", "write failed");
        glove_error_prefix(&err, "audit log %s", "/x");
        assert_string_equal(err.message, "audit log /x: write failed");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set_returns_negative_errno),
                cmocka_unit_test(test_first_error_wins),
                cmocka_unit_test(test_null_and_zero),
                cmocka_unit_test(test_long_message_truncated_on_utf8_boundary),
                cmocka_unit_test(test_prefix),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

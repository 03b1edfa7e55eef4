/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/buffer.h"

static void test_init_is_empty(void **state) {
        (void)state;
        struct glove_buffer b;
        glove_buffer_init(&b, 100);
        assert_null(b.data);
        assert_int_equal(b.len, 0);
        assert_int_equal(b.cap, 0);
        assert_int_equal(b.max, 100);
        glove_buffer_free(&b);
        glove_buffer_free(NULL);
}

static void test_append_and_consume(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer b;
        glove_buffer_init(&b, 1024);
        assert_int_equal(glove_buffer_append(&b, "hello ", 6), 0);
        assert_int_equal(glove_buffer_append(&b, "world", 5), 0);
        assert_int_equal(glove_buffer_append(&b, NULL, 0), 0);
        assert_int_equal(b.len, 11);
        assert_memory_equal(b.data, "hello world", 11);

        assert_int_equal(glove_buffer_consume(&b, 6), 0);
        assert_int_equal(b.len, 5);
        assert_memory_equal(b.data, "world", 5);
        assert_int_equal(glove_buffer_consume(&b, 6), -EINVAL);
        assert_int_equal(b.len, 5);
        assert_int_equal(glove_buffer_consume(&b, 0), 0);
        assert_int_equal(glove_buffer_consume(&b, 5), 0);
        assert_int_equal(b.len, 0);
}

static void test_bound_is_never_exceeded(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer b;
        glove_buffer_init(&b, 10);
        assert_int_equal(glove_buffer_append(&b, "0123456", 7), 0);
        /* 7 + 4 > 10: refused, and nothing of it is appended. */
        assert_int_equal(glove_buffer_append(&b, "789A", 4), -EMSGSIZE);
        assert_int_equal(b.len, 7);
        assert_memory_equal(b.data, "0123456", 7);
        assert_true(b.cap <= b.max);
        /* Exactly up to the bound is fine. */
        assert_int_equal(glove_buffer_append(&b, "789", 3), 0);
        assert_int_equal(b.len, 10);
        assert_memory_equal(b.data, "0123456789", 10);
        assert_int_equal(glove_buffer_append(&b, "x", 1), -EMSGSIZE);
        assert_int_equal(b.len, 10);
        /* Consuming makes room again. */
        assert_int_equal(glove_buffer_consume(&b, 4), 0);
        assert_int_equal(glove_buffer_append(&b, "abcd", 4), 0);
        assert_memory_equal(b.data, "456789abcd", 10);
        /* A length that would overflow len + n is refused, not wrapped. */
        assert_int_equal(glove_buffer_append(&b, "x", SIZE_MAX), -EMSGSIZE);
        assert_int_equal(glove_buffer_reserve(&b, SIZE_MAX - 5), -EMSGSIZE);
        assert_int_equal(b.len, 10);
}

static void test_zero_max(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer b;
        glove_buffer_init(&b, 0);
        assert_int_equal(glove_buffer_append(&b, "x", 1), -EMSGSIZE);
        assert_int_equal(glove_buffer_append(&b, "", 0), 0);
        assert_int_equal(b.len, 0);
}

static void test_growth_across_many_appends(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer b;
        const size_t max = 100000;
        glove_buffer_init(&b, max);
        uint8_t chunk[333];
        size_t total = 0;
        for (uint8_t i = 0; total + sizeof(chunk) <= max; i++) {
                memset(chunk, i, sizeof(chunk));
                assert_int_equal(glove_buffer_append(&b, chunk, sizeof(chunk)), 0);
                total += sizeof(chunk);
                assert_true(b.len <= b.cap && b.cap <= b.max);
        }
        assert_int_equal(b.len, total);
        for (size_t k = 0; k < total; k++)
                assert_int_equal(b.data[k], (uint8_t)(k / sizeof(chunk)));
        assert_int_equal(glove_buffer_append(&b, chunk, sizeof(chunk)), -EMSGSIZE);
}

static void test_find_for_line_framing(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer b;
        glove_buffer_init(&b, 64);
        assert_int_equal(glove_buffer_find(&b, '\n', 0), -ENOENT);
        assert_int_equal(glove_buffer_append(&b, "{\"a\":1}\n{\"b\"", 12), 0);
        assert_int_equal(glove_buffer_find(&b, '\n', 0), 7);
        assert_int_equal(glove_buffer_find(&b, '\n', 7), 7);
        assert_int_equal(glove_buffer_find(&b, '\n', 8), -ENOENT);
        assert_int_equal(glove_buffer_find(&b, '\n', 100), -ENOENT);

        /* Frame off the first line, then keep scanning from where we stopped. */
        assert_int_equal(glove_buffer_consume(&b, 8), 0);
        assert_memory_equal(b.data, "{\"b\"", 4);
        size_t scanned = b.len;
        assert_int_equal(glove_buffer_append(&b, ":2}\n", 4), 0);
        assert_int_equal(glove_buffer_find(&b, '\n', scanned), 7);
        assert_int_equal(glove_buffer_find(&b, 0, 0), -ENOENT);
}

static void test_reserve_commit(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer b;
        glove_buffer_init(&b, 8);
        assert_int_equal(glove_buffer_reserve(&b, 5), 0);
        assert_true(b.cap - b.len >= 5 && b.cap <= 8);
        memcpy(b.data + b.len, "abc", 3);
        assert_int_equal(glove_buffer_commit(&b, 3), 0);
        assert_int_equal(b.len, 3);
        assert_int_equal(glove_buffer_commit(&b, b.cap - b.len + 1), -EINVAL);
        assert_int_equal(b.len, 3);
        assert_int_equal(glove_buffer_reserve(&b, 6), -EMSGSIZE);
        assert_int_equal(glove_buffer_reserve(&b, 5), 0);
        assert_memory_equal(b.data, "abc", 3);
}

static void test_reset_keeps_storage(void **state) {
        (void)state;
        struct glove_buffer b;
        glove_buffer_init(&b, 32);
        assert_int_equal(glove_buffer_append(&b, "abc", 3), 0);
        uint8_t *data = b.data;
        size_t cap = b.cap;
        glove_buffer_reset(&b);
        assert_int_equal(b.len, 0);
        assert_ptr_equal(b.data, data);
        assert_int_equal(b.cap, cap);
        assert_int_equal(b.max, 32);
        glove_buffer_free(&b);
        assert_null(b.data);
        assert_int_equal(b.cap, 0);
        assert_int_equal(b.max, 32);
        /* Still usable after free. */
        assert_int_equal(glove_buffer_append(&b, "xy", 2), 0);
        assert_memory_equal(b.data, "xy", 2);
        glove_buffer_free(&b);
}

/* cap_after predicts what reserve allocates (a budget charges it before);
 * reserve_exact allocates no more than asked. */
static void test_cap_after_and_reserve_exact(void **state) {
        (void)state;
        struct glove_buffer b;
        glove_buffer_init(&b, 100000);
        for (size_t n = 1; n < 30000; n = n * 3 + 7) {
                size_t want = glove_buffer_cap_after(&b, n);
                assert_int_equal(glove_buffer_reserve(&b, n), 0);
                assert_int_equal(b.cap, want);
                assert_int_equal(glove_buffer_commit(&b, n / 2), 0);
        }
        assert_int_equal(glove_buffer_cap_after(&b, 100001), 0);
        assert_int_equal(glove_buffer_cap_after(&b, 0), b.cap);
        glove_buffer_free(&b);
        assert_int_equal(glove_buffer_append(&b, "abc", 3), 0);
        assert_int_equal(glove_buffer_reserve_exact(&b, 70000 - 3), 0);
        assert_int_equal(b.cap, 70000);
        assert_memory_equal(b.data, "abc", 3);
        assert_int_equal(glove_buffer_reserve_exact(&b, 100000), -EMSGSIZE);
        assert_int_equal(b.cap, 70000);
        glove_buffer_free(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_init_is_empty),
                cmocka_unit_test(test_append_and_consume),
                cmocka_unit_test(test_bound_is_never_exceeded),
                cmocka_unit_test(test_zero_max),
                cmocka_unit_test(test_growth_across_many_appends),
                cmocka_unit_test(test_find_for_line_framing),
                cmocka_unit_test(test_reserve_commit),
                cmocka_unit_test(test_reset_keeps_storage),
                cmocka_unit_test(test_cap_after_and_reserve_exact),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/kernel/calls.h"

static struct glove_kernel_calls calls;

static void test_add_lookup_remove(void **state) {
        (void)state;
        glove_kernel_calls_init(&calls);
        json_t *a = json_integer(7), *b = json_string("7"), *up = json_integer(100);
        int e;
        struct glove_kernel_call *ca = glove_kernel_calls_add(&calls, a, 0, 100, &e);
        assert_non_null(ca);
        /* The string "7" is a different id from the integer 7. */
        struct glove_kernel_call *cb = glove_kernel_calls_add(&calls, b, 1, 100, &e);
        assert_non_null(cb);
        assert_int_equal(calls.count, 2);
        assert_ptr_equal(glove_kernel_calls_by_agent(&calls, a), ca);
        assert_ptr_equal(glove_kernel_calls_by_agent(&calls, b), cb);
        /* Upstream ids are per upstream. */
        assert_ptr_equal(glove_kernel_calls_by_upstream(&calls, 0, up), ca);
        assert_ptr_equal(glove_kernel_calls_by_upstream(&calls, 1, up), cb);
        json_t *str100 = json_string("100");
        assert_null(glove_kernel_calls_by_upstream(&calls, 0, str100));
        glove_kernel_calls_remove(&calls, ca);
        assert_null(glove_kernel_calls_by_agent(&calls, a));
        assert_ptr_equal(glove_kernel_calls_by_agent(&calls, b), cb);
        assert_int_equal(calls.count, 1);
        glove_kernel_calls_clear(&calls);
        assert_int_equal(calls.count, 0);
        json_decref(a);
        json_decref(b);
        json_decref(up);
        json_decref(str100);
}

/* String ids are compared whole: "n" and "n\u0000x" are different ids
 * (a cancellation of one never reaches the other). */
static void test_string_ids_with_nul(void **state) {
        (void)state;
        glove_kernel_calls_init(&calls);
        json_t *n = json_string("n"), *nx = json_stringn("n\0x", 3), *nul = json_stringn("n\0", 2);
        int e;
        struct glove_kernel_call *c = glove_kernel_calls_add(&calls, n, 0, 1, &e);
        assert_non_null(c);
        assert_null(glove_kernel_calls_by_agent(&calls, nx));
        assert_null(glove_kernel_calls_by_agent(&calls, nul));
        struct glove_kernel_call *cx = glove_kernel_calls_add(&calls, nx, 0, 2, &e);
        assert_non_null(cx);
        assert_ptr_equal(glove_kernel_calls_by_agent(&calls, nx), cx);
        assert_ptr_equal(glove_kernel_calls_by_agent(&calls, n), c);
        glove_kernel_calls_clear(&calls);
        json_decref(n);
        json_decref(nx);
        json_decref(nul);
}

static void test_duplicate_in_flight_refused_first_untouched(void **state) {
        (void)state;
        glove_kernel_calls_init(&calls);
        json_t *id = json_string("dup");
        int e;
        struct glove_kernel_call *first = glove_kernel_calls_add(&calls, id, 0, 1, &e);
        assert_non_null(first);
        json_t *again = json_string("dup");
        assert_null(glove_kernel_calls_add(&calls, again, 1, 2, &e));
        assert_int_equal(e, -EEXIST);
        assert_int_equal(first->upstream, 0);
        assert_int_equal(first->upstream_id, 1);
        assert_int_equal(calls.count, 1);
        /* Once the first completes, the id may be reused. */
        glove_kernel_calls_remove(&calls, first);
        assert_non_null(glove_kernel_calls_add(&calls, again, 1, 2, &e));
        glove_kernel_calls_clear(&calls);
        json_decref(id);
        json_decref(again);
}

static void test_bad_ids_and_bound(void **state) {
        (void)state;
        glove_kernel_calls_init(&calls);
        int e;
        json_t *n = json_null(), *r = json_real(1.5);
        assert_null(glove_kernel_calls_add(&calls, n, 0, 1, &e));
        assert_int_equal(e, -EINVAL);
        assert_null(glove_kernel_calls_add(&calls, r, 0, 1, &e));
        assert_int_equal(e, -EINVAL);
        for (int i = 0; i < GLOVE_KERNEL_CALLS_MAX; i++) {
                json_t *id = json_integer(i);
                assert_non_null(glove_kernel_calls_add(&calls, id, 0, i, &e));
                json_decref(id);
        }
        json_t *over = json_integer(-1);
        assert_null(glove_kernel_calls_add(&calls, over, 0, 5000, &e));
        assert_int_equal(e, -ENOSPC);
        json_decref(n);
        json_decref(r);
        json_t *last = json_integer(GLOVE_KERNEL_CALLS_MAX - 1);
        assert_non_null(glove_kernel_calls_by_agent(&calls, last));
        glove_kernel_calls_clear(&calls);
        json_decref(over);
        json_decref(last);
}

/* Buried upstream ids are found once, per upstream, and the oldest is
 * forgotten first once GLOVE_KERNEL_TOMBSTONES_MAX are remembered. */
static void test_tombstones(void **state) {
        (void)state;
        glove_kernel_calls_init(&calls);
        json_t *id = json_integer(41), *str = json_string("41");
        glove_kernel_calls_bury(&calls, 0, 41, GLOVE_KERNEL_TOMBSTONE_CANCELLED);
        assert_int_equal(glove_kernel_calls_exhume(&calls, 1, id), GLOVE_KERNEL_TOMBSTONE_NONE); /* another upstream */
        assert_int_equal(glove_kernel_calls_exhume(&calls, 0, str), GLOVE_KERNEL_TOMBSTONE_NONE); /* not an integer */
        assert_int_equal(glove_kernel_calls_exhume(&calls, 0, id), GLOVE_KERNEL_TOMBSTONE_CANCELLED);
        assert_int_equal(glove_kernel_calls_exhume(&calls, 0, id), GLOVE_KERNEL_TOMBSTONE_NONE); /* once only */
        /* One more than the ring holds: the first is forgotten, the rest kept. */
        for (int64_t i = 0; i <= GLOVE_KERNEL_TOMBSTONES_MAX; i++)
                glove_kernel_calls_bury(&calls, 2, 1000 + i, GLOVE_KERNEL_TOMBSTONE_TIMEOUT);
        json_t *oldest = json_integer(1000), *second = json_integer(1001), *newest = json_integer(1000 + GLOVE_KERNEL_TOMBSTONES_MAX);
        assert_int_equal(glove_kernel_calls_exhume(&calls, 2, oldest), GLOVE_KERNEL_TOMBSTONE_NONE);
        assert_int_equal(glove_kernel_calls_exhume(&calls, 2, second), GLOVE_KERNEL_TOMBSTONE_TIMEOUT);
        assert_int_equal(glove_kernel_calls_exhume(&calls, 2, newest), GLOVE_KERNEL_TOMBSTONE_TIMEOUT);
        json_decref(id);
        json_decref(str);
        json_decref(oldest);
        json_decref(second);
        json_decref(newest);
}

static void test_split_name(void **state) {
        (void)state;
        size_t n;
        const char *tool;
        assert_int_equal(glove_kernel_split_name("fs.read.file", &n, &tool), 0);
        assert_int_equal(n, 2);
        assert_string_equal(tool, "read.file");
        assert_int_equal(glove_kernel_split_name("nodot", &n, &tool), -EINVAL);
        assert_int_equal(glove_kernel_split_name(".tool", &n, &tool), -EINVAL);
        assert_int_equal(glove_kernel_split_name("fs.", &n, &tool), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_lookup_remove),
                cmocka_unit_test(test_string_ids_with_nul),
                cmocka_unit_test(test_duplicate_in_flight_refused_first_untouched),
                cmocka_unit_test(test_bad_ids_and_bound),
                cmocka_unit_test(test_tombstones),
                cmocka_unit_test(test_split_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/kernel/names.h: the agent's form of resource
 * URIs, glove://NAME/URI, is reversible and cannot be forged. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/kernel/names.h"

static void qualify_then_split(const char *up, const char *uri) {
        char buf[GLOVE_KERNEL_AGENT_URI_MAX + 1];
        int n = glove_kernel_uri_qualify(up, uri, strlen(uri), buf, sizeof(buf));
        assert_true(n > 0);
        assert_int_equal((size_t)n, strlen(buf));
        const char *name, *u;
        size_t nl, ul;
        assert_int_equal(glove_kernel_uri_split(buf, (size_t)n, &name, &nl, &u, &ul), 0);
        assert_int_equal(nl, strlen(up));
        assert_memory_equal(name, up, nl);
        assert_int_equal(ul, strlen(uri));
        assert_memory_equal(u, uri, ul);
}

static void test_round_trip(void **state) {
        (void)state;
        qualify_then_split("ev", "demo://resource/static/document/architecture.md");
        qualify_then_split("fs", "file:///data/a%20b.txt");
        /* The upstream's URI is verbatim, even when it looks like ours. */
        qualify_then_split("a", "glove://b/x");
        qualify_then_split("x-_9", "a");
        qualify_then_split("n234567890123456789012345678901x", "u");
        char b[64];
        assert_int_equal(glove_kernel_uri_qualify("ev", "x://y", 5, b, sizeof(b)), (int)strlen("glove://ev/x://y"));
        assert_string_equal(b, "glove://ev/x://y");
}

static int split(const char *q, size_t len) {
        const char *name, *u;
        size_t nl, ul;
        return glove_kernel_uri_split(q, len, &name, &nl, &u, &ul);
}

static void test_split_refuses(void **state) {
        (void)state;
        /* Not our form: -ENOENT (an own-names upstream's URI, or none). */
        assert_int_equal(split("file:///x", 9), -ENOENT);
        assert_int_equal(split("GLOVE://ev/x", 12), -ENOENT);
        /* Our form, malformed: -EINVAL. */
        assert_int_equal(split("glove://ev", 10), -EINVAL);
        assert_int_equal(split("glove://ev/", 11), -EINVAL);
        assert_int_equal(split("glove:///x", 10), -EINVAL);
        assert_int_equal(split("glove://EV/x", 12), -EINVAL);
        assert_int_equal(split("glove://e.v/x", 13), -EINVAL);
        assert_int_equal(split("glove://n234567890123456789012345678901xy/u", 43), -EINVAL);
        assert_int_equal(split("glove://ev/a\nb", 14), -EINVAL);
        assert_int_equal(split("glove://ev/a\0b", 14), -EINVAL);
        assert_int_equal(split("glove://ev/a\x7f", 13), -EINVAL);
        assert_int_equal(split("glove://ev/a\xc2\x85", 14), -EINVAL); /* C1 NEL */
        assert_int_equal(split("glove://ev/\xff", 12), -EINVAL);     /* not UTF-8 */
        /* The name ends at the first "/": the rest is the URI whatever it holds. */
        const char *name, *u;
        size_t nl, ul;
        assert_int_equal(glove_kernel_uri_split("glove://ev/glove://other/x", 26, &name, &nl, &u, &ul), 0);
        assert_int_equal(nl, 2);
        assert_int_equal(ul, 15);
        assert_memory_equal(u, "glove://other/x", 15);
}

static void test_bounds(void **state) {
        (void)state;
        size_t n = GLOVE_KERNEL_URI_MAX;
        char *uri = malloc(n + 2);
        assert_non_null(uri);
        memset(uri, 'a', n + 1);
        uri[n + 1] = '\0';
        char *buf = malloc(GLOVE_KERNEL_AGENT_URI_MAX + 8);
        assert_non_null(buf);
        assert_true(glove_kernel_uri_qualify("ev", uri, n, buf, GLOVE_KERNEL_AGENT_URI_MAX + 1) > 0);
        assert_int_equal(split(buf, strlen(buf)), 0);
        assert_int_equal(glove_kernel_uri_qualify("ev", uri, n + 1, buf, GLOVE_KERNEL_AGENT_URI_MAX + 8), -EINVAL);
        memcpy(buf, "glove://ev/", 11);
        memcpy(buf + 11, uri, n + 1);
        assert_int_equal(split(buf, 11 + n + 1), -EINVAL);
        /* Too small a buffer, an empty URI, a bad upstream name. */
        char small[8];
        assert_int_equal(glove_kernel_uri_qualify("ev", "abc", 3, small, sizeof(small)), -ENOSPC);
        assert_int_equal(glove_kernel_uri_qualify("ev", "", 0, buf, 64), -EINVAL);
        assert_int_equal(glove_kernel_uri_qualify("E", "a", 1, buf, 64), -EINVAL);
        assert_int_equal(glove_kernel_uri_qualify("a/b", "a", 1, buf, 64), -EINVAL);
        assert_int_equal(glove_kernel_uri_qualify("ev", "a\tb", 3, buf, 64), -EINVAL);
        assert_false(glove_kernel_uri_valid(NULL, 0));
        free(uri);
        free(buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_split_refuses),
                cmocka_unit_test(test_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The canonical recognizer accepts exactly what the jansson-based canonical
 * decoder accepts (json_scan.h), and reports the top-level members. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/json_scan.h"

#define MAX 4096

/* Both verdicts on data[0..len); fails the test when they differ. */
static bool agree(const void *data, size_t len) {
        struct glove_error e1 = { 0 }, e2 = { 0 };
        _cleanup_json_ json_t *v = NULL;
        size_t n = 0;
        bool jansson = glove_json_decode_canonical(data, len, MAX, GLOVE_JSON_OBJECT_ONLY, &v, &e1) == 0;
        bool scan = glove_json_scan_canonical_object(data, len, MAX, NULL, 0, &n, &e2) == 0;
        if (jansson != scan) {
                fprintf(stderr, "disagree on %zu bytes [%.*s]: jansson %s (%s), scan %s (%s)\n", len, (int)len,
                        (const char *)data, jansson ? "accepts" : "refuses", e1.code ? e1.code : "-",
                        scan ? "accepts" : "refuses", e2.code ? e2.code : "-");
                fail();
        }
        if (scan)
                assert_int_equal(n, json_object_size(v));
        return scan;
}

static bool agree_str(const char *s) {
        return agree(s, strlen(s));
}

static const char *const accepted[] = {
        "{}",
        "{\"a\":1}",
        "{\"a\":-1,\"b\":0,\"c\":9223372036854775807,\"d\":-9223372036854775808}",
        "{\"a\":[],\"b\":{},\"c\":[[],{}],\"d\":[1,\"x\",true,false,null]}",
        "{\"\":1,\"a\":2,\"aa\":3,\"b\":4}",
        "{\"A\":1,\"B\":2,\"_\":3,\"a\":4}",
        "{\"s\":\"\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001F\\u000B/\x7f\"}",
        "{\"\\n\":1,\"A\":2}",              /* decoded 0x0a sorts before 'A' */
        "{\"a\":1,\"a\\\"\":2,\"a\\\\\":3}", /* '"' 0x22 < '\\' 0x5c */
        "{\"caf\xc3\xa9\":\"\xe2\x80\xa8\xf0\x9f\x98\x80\"}",
        "{\"k\":{\"b\":1,\"c\":{\"d\":[{\"e\":null}]}}}",
};

static const char *const refused[] = {
        "",
        "[]",
        "1",
        "\"a\"",
        " {}",
        "{} ",
        "{}\n",
        "{\"a\":1,}",
        "{\"a\" :1}",
        "{\"a\": 1}",
        "{\"b\":1,\"a\":2}",
        "{\"a\":1,\"a\":2}",
        "{\"A\":2,\"\\n\":1}",
        "{\"a\":01}",
        "{\"a\":-0}",
        "{\"a\":1.0}",
        "{\"a\":1e3}",
        "{\"a\":1E3}",
        "{\"a\":+1}",
        "{\"a\":9223372036854775808}",
        "{\"a\":-9223372036854775809}",
        "{\"a\":10000000000000000000}",
        "{\"a\":\"\\/\"}",
        "{\"a\":\"\\u0041\"}",
        "{\"a\":\"\\u000a\"}",
        "{\"a\":\"\\u000A\"}",
        "{\"a\":\"\\u001f\"}",
        "{\"a\":\"\\u0000\"}",
        "{\"a\":\"\\u00e9\"}",
        "{\"a\":\"\\ud83d\\ude00\"}",
        "{\"a\":\"\\x\"}",
        "{\"a\":\"\t\"}",
        "{\"a\":\"unterminated}",
        "{\"a\":tru}",
        "{\"a\":True}",
        "{\"a\":nul}",
        "{\"a\":[1,]}",
        "{\"a\":[,1]}",
        "{\"a\"}",
        "{a:1}",
        "{\"a\":1}}",
        "{\"a\":[1}",
        "{\"a\":\"\xc3\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":-}",
        "{\"a\":}",
};

static void test_table(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++)
                assert_true(agree_str(accepted[i]));
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
                assert_false(agree_str(refused[i]));
        /* a raw NUL inside a string */
        assert_false(agree("{\"a\":\"\0\"}", 8));
}

/* Every text one byte away from a canonical one (each byte replaced by each
 * interesting byte, deleted, or doubled) gets the same verdict. */
static void test_mutations(void **state) {
        (void)state;
        static const unsigned char subst[] = { 0,   ' ', '"', ',', ':', '[', ']', '{', '}', '\\', '-', '+', '.',
                                               '0', '1', '9', 'e', 'E', 'u', 'n', 't', 'A', 'F', 'a', 'f', '/',
                                               '\b', '\n', 0x1f, 0x7f, 0x80, 0xc3, 0xe2, 0xed, 0xf0, 0xff };
        unsigned char buf[MAX];
        for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
                const char *t = accepted[i];
                size_t n = strlen(t);
                for (size_t at = 0; at < n; at++) {
                        for (size_t k = 0; k < sizeof(subst); k++) {
                                memcpy(buf, t, n);
                                buf[at] = subst[k];
                                agree(buf, n);
                        }
                        memcpy(buf, t, at);
                        memcpy(buf + at, t + at + 1, n - at - 1);
                        agree(buf, n - 1);
                        memcpy(buf, t, at + 1);
                        memcpy(buf + at + 1, t + at, n - at);
                        agree(buf, n + 1);
                }
        }
}

static void test_depth_bound(void **state) {
        (void)state;
        char buf[512];
        for (int depth = GLOVE_JSON_MAX_DEPTH - 1; depth <= GLOVE_JSON_MAX_DEPTH + 1; depth++) {
                size_t n = 0;
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"a\":");
                for (int i = 1; i < depth; i++)
                        buf[n++] = '[';
                buf[n++] = '1';
                for (int i = 1; i < depth; i++)
                        buf[n++] = ']';
                buf[n++] = '}';
                bool ok = agree(buf, n);
                assert_int_equal(ok, depth <= GLOVE_JSON_MAX_DEPTH);
        }
        struct glove_error e = { 0 };
        size_t members;
        memset(buf, '[', sizeof(buf));
        memcpy(buf, "{\"a\":", 5);
        assert_true(glove_json_scan_canonical_object(buf, sizeof(buf), sizeof(buf), NULL, 0, &members, &e) < 0);
        assert_string_equal(e.code, "json.too_deep");
}

static void test_members_and_bounds(void **state) {
        (void)state;
        const char *t = "{\"a\":{\"x\":[1,2]},\"b\":\"s\\\"\",\"c\":-5}";
        struct glove_json_member_span m[2];
        size_t n = 0;
        struct glove_error e = { 0 };
        assert_int_equal(glove_json_scan_canonical_object(t, strlen(t), MAX, m, 2, &n, &e), 0);
        assert_int_equal(n, 3); /* counted past the array's end, not stored */
        assert_int_equal(m[0].key_len, 1);
        assert_memory_equal(m[0].key, "a", 1);
        assert_int_equal(m[0].value_len, strlen("{\"x\":[1,2]}"));
        assert_memory_equal(m[0].value, "{\"x\":[1,2]}", m[0].value_len);
        assert_memory_equal(m[1].value, "\"s\\\"\"", m[1].value_len);
        assert_int_equal(glove_json_scan_canonical_object(t, strlen(t), strlen(t) - 1, m, 2, &n, &e), -EMSGSIZE);
        assert_string_equal(e.code, "json.too_large");
        assert_int_equal(n, 0);
        e = (struct glove_error){ 0 };
        assert_true(glove_json_scan_canonical_object("{\"a\":1.5}", 9, MAX, m, 2, &n, &e) < 0);
        assert_string_equal(e.code, "json.not_canonical");
}

static void test_span_readers(void **state) {
        (void)state;
        const char *t = "{\"a\":\"id-1\",\"b\":\"x\\\"y\",\"c\":42,\"d\":-1,\"e\":{},\"f\":[],\"g\":\"7\"}";
        struct glove_json_member_span m[8];
        size_t n = 0;
        struct glove_error e = { 0 };
        assert_int_equal(glove_json_scan_canonical_object(t, strlen(t), MAX, m, 8, &n, &e), 0);
        assert_int_equal(n, 7);
        char buf[8];
        int64_t v = 0;
        assert_true(glove_json_span_plain_string(glove_json_span_find(m, n, "a"), buf, sizeof(buf)));
        assert_string_equal(buf, "id-1");
        assert_false(glove_json_span_plain_string(glove_json_span_find(m, n, "a"), buf, 4)); /* too long */
        assert_false(glove_json_span_plain_string(glove_json_span_find(m, n, "b"), buf, sizeof(buf))); /* escape */
        assert_false(glove_json_span_plain_string(glove_json_span_find(m, n, "c"), buf, sizeof(buf)));
        assert_false(glove_json_span_plain_string(NULL, buf, sizeof(buf)));
        assert_true(glove_json_span_int(glove_json_span_find(m, n, "c"), 0, &v));
        assert_int_equal(v, 42);
        assert_false(glove_json_span_int(glove_json_span_find(m, n, "c"), 43, &v));
        assert_false(glove_json_span_int(glove_json_span_find(m, n, "d"), 0, &v));
        assert_false(glove_json_span_int(glove_json_span_find(m, n, "g"), 0, &v));
        assert_false(glove_json_span_int(glove_json_span_find(m, n, "zz"), 0, &v));
        assert_true(glove_json_span_is_object(glove_json_span_find(m, n, "e")));
        assert_false(glove_json_span_is_object(glove_json_span_find(m, n, "f")));
        assert_false(glove_json_span_is_object(NULL));
        const char *what = "x";
        static const char *const all[] = { "a", "b", "c", "d", "e", "f", "g", NULL };
        static const char *const most[] = { "a", "b", "c", "d", "e", "f", NULL };
        static const char *const more[] = { "a", "b", "c", "d", "e", "f", "g", "h", NULL };
        assert_true(glove_json_span_exact(m, n, all, NULL, &what));
        assert_true(glove_json_span_exact(m, n, all, "h", &what));
        assert_true(glove_json_span_exact(m, n, most, "g", &what));
        assert_false(glove_json_span_exact(m, n, most, NULL, &what));
        assert_null(what);
        assert_false(glove_json_span_exact(m, n, more, NULL, &what));
        assert_string_equal(what, "h");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_mutations),
                cmocka_unit_test(test_depth_bound),
                cmocka_unit_test(test_members_and_bounds),
                cmocka_unit_test(test_span_readers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

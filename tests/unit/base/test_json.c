/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"

#define MAX 4096

/* Decodes a NUL-terminated literal; returns the result, err filled. */
static int decode(const char *text, unsigned flags, json_t **out, struct glove_error *err) {
        return glove_json_decode_strict(text, strlen(text), MAX, flags, out, err);
}

/* Asserts that decoding text[0..len) fails with code. */
static void assert_decode_fails_n(const char *text, size_t len, const char *code) {
        struct glove_error err = {0};
        json_t *v = (json_t *)0x1;
        int r = glove_json_decode_strict(text, len, MAX, 0, &v, &err);
        assert_true(r < 0);
        assert_null(v);
        assert_non_null(err.code);
        assert_string_equal(err.code, code);
}

static void assert_decode_fails(const char *text, const char *code) {
        assert_decode_fails_n(text, strlen(text), code);
}

static void assert_decode_ok(const char *text) {
        struct glove_error err = {0};
        _cleanup_json_ json_t *v = NULL;
        int r = decode(text, 0, &v, &err);
        if (r < 0)
                fail_msg("decoding %s failed: %s %s", text, err.code, err.message);
        assert_non_null(v);
}

/* ---- UTF-8 ---- */

static void test_utf8_valid_sequences(void **state) {
        (void)state;
        /* 1-4 byte forms, including the extremes of each range. */
        static const char *ok[] = {
                "", "a", "\x7f", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf",
                "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",
                "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(ok); i++)
                assert_true(glove_json_utf8_valid(ok[i], strlen(ok[i]), NULL));
        /* NUL is valid UTF-8 (the decoder rejects it separately). */
        assert_true(glove_json_utf8_valid("a\0b", 3, NULL));
        assert_true(glove_json_utf8_valid(NULL, 0, NULL));
}

static void test_utf8_invalid_sequences(void **state) {
        (void)state;
        static const struct {
                const char *s;
                size_t bad;
        } cases[] = {
                { "\x80", 0 },                   /* lone continuation */
                { "ab\xbf", 2 },                 /* lone continuation later */
                { "\xc0\xaf", 0 },               /* overlong '/' (2 bytes) */
                { "\xc1\xbf", 0 },               /* overlong (2 bytes) */
                { "\xe0\x80\xaf", 0 },           /* overlong '/' (3 bytes) */
                { "\xe0\x9f\xbf", 0 },           /* overlong U+07FF */
                { "\xf0\x80\x80\xaf", 0 },       /* overlong '/' (4 bytes) */
                { "\xf0\x8f\xbf\xbf", 0 },       /* overlong U+FFFF */
                { "x\xed\xa0\x80", 1 },          /* surrogate U+D800 */
                { "\xed\xbf\xbf", 0 },           /* surrogate U+DFFF */
                { "\xf4\x90\x80\x80", 0 },       /* U+110000 */
                { "\xf5\x80\x80\x80", 0 },       /* lead byte beyond range */
                { "\xff", 0 },
                { "\xfe", 0 },
                { "\xc3", 0 },                   /* truncated 2-byte */
                { "ok\xe2\x82", 2 },             /* truncated 3-byte */
                { "\xf0\x9f\x98", 0 },           /* truncated 4-byte */
                { "\xc3\x28", 0 },               /* bad continuation */
                { "\xe2\x28\xa1", 0 },
                { "\xf0\x9f\x28\x80", 0 },
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(cases); i++) {
                size_t bad = 999;
                if (glove_json_utf8_valid(cases[i].s, strlen(cases[i].s), &bad))
                        fail_msg("case %zu accepted", i);
                assert_int_equal(bad, cases[i].bad);
        }
}

/* ---- strict decoding ---- */

static void test_decode_accepts_valid_json(void **state) {
        (void)state;
        assert_decode_ok("{}");
        assert_decode_ok(" \t\r\n[1, -2, \"x\", true, false, null, {\"a\": {}}] \n");
        assert_decode_ok("\"caf\xc3\xa9\"");
        assert_decode_ok("\"\\ud83d\\ude00\""); /* escaped surrogate pair */
        assert_decode_ok("9223372036854775807");
        assert_decode_ok("-9223372036854775808");

        struct glove_error err = {0};
        _cleanup_json_ json_t *v = NULL;
        assert_int_equal(decode("{\"n\":42,\"r\":1.5,\"e\":1e2}", 0, &v, &err), 0);
        assert_true(json_is_integer(json_object_get(v, "n")));
        assert_int_equal(json_integer_value(json_object_get(v, "n")), 42);
        assert_true(json_is_real(json_object_get(v, "r")));
        assert_true(json_is_real(json_object_get(v, "e")));
}

static void test_decode_too_large(void **state) {
        (void)state;
        struct glove_error err = {0};
        json_t *v = NULL;
        const char *text = "[1,2,3]";
        assert_int_equal(glove_json_decode_strict(text, 7, 6, 0, &v, &err), -EMSGSIZE);
        assert_string_equal(err.code, "json.too_large");
        assert_null(v);
        glove_error_clear(&err);
        /* Exactly at the bound is fine. */
        assert_int_equal(glove_json_decode_strict(text, 7, 7, 0, &v, &err), 0);
        json_decref(v);
}

static void test_decode_rejects_invalid_utf8(void **state) {
        (void)state;
        assert_decode_fails("\"\xc0\xaf\"", "json.invalid_utf8");
        assert_decode_fails("\"\xed\xa0\x80\"", "json.invalid_utf8");
        assert_decode_fails("\"\xf4\x90\x80\x80\"", "json.invalid_utf8");
        assert_decode_fails("{\"k\xff\":1}", "json.invalid_utf8");
        /* Escaped lone surrogates are not valid characters either. */
        assert_decode_fails("\"\\ud800\"", "json.syntax");
}

static void test_decode_rejects_nul(void **state) {
        (void)state;
        assert_decode_fails_n("{\"a\":1}\0", 8, "json.embedded_nul");
        assert_decode_fails_n("\"a\0b\"", 5, "json.embedded_nul");
        assert_decode_fails("\"a\\u0000b\"", "json.embedded_nul");
        assert_decode_fails("{\"a\\u0000\":1}", "json.embedded_nul");
}

static void test_decode_rejects_duplicate_keys(void **state) {
        (void)state;
        assert_decode_fails("{\"a\":1,\"a\":2}", "json.duplicate_key");
        assert_decode_fails("{\"x\":{\"b\":1,\"b\":1}}", "json.duplicate_key");
        /* Same key spelled with an escape is the same key. */
        assert_decode_fails("{\"a\":1,\"\\u0061\":2}", "json.duplicate_key");
}

static char *nested(size_t depth, const char *open, const char *close, const char *inner) {
        size_t n = depth * (strlen(open) + strlen(close)) + strlen(inner) + 1;
        char *s = malloc(n);
        assert_non_null(s);
        s[0] = '\0';
        for (size_t i = 0; i < depth; i++)
                strcat(s, open);
        strcat(s, inner);
        for (size_t i = 0; i < depth; i++)
                strcat(s, close);
        return s;
}

static void test_decode_depth_limit(void **state) {
        (void)state;
        _cleanup_free_ char *ok_arrays = nested(GLOVE_JSON_MAX_DEPTH, "[", "]", "");
        assert_decode_ok(ok_arrays);
        _cleanup_free_ char *ok_objects = nested(GLOVE_JSON_MAX_DEPTH, "{\"a\":", "}", "1");
        /* "{"a":1}" nested 64 times is depth 64. */
        assert_decode_ok(ok_objects);
        _cleanup_free_ char *deep = nested(GLOVE_JSON_MAX_DEPTH + 1, "[", "]", "");
        assert_decode_fails(deep, "json.too_deep");
        _cleanup_free_ char *deep_obj = nested(GLOVE_JSON_MAX_DEPTH + 1, "{\"a\":", "}", "1");
        assert_decode_fails(deep_obj, "json.too_deep");
        /* Brackets inside strings (with escaped quotes) do not count. */
        _cleanup_free_ char *in_string = nested(200, "[", "", "");
        size_t n = strlen(in_string);
        _cleanup_free_ char *text = malloc(n + 32);
        assert_non_null(text);
        strcpy(text, "[\"\\\"");
        strcat(text, in_string);
        strcat(text, "{{\\\\\"]");
        assert_decode_ok(text);
}

/* "[" then n copies of item joined by ",", then "]". */
static char *array_of(size_t n, const char *item) {
        size_t il = strlen(item);
        char *s = malloc(n * (il + 1) + 3);
        assert_non_null(s);
        size_t o = 0;
        s[o++] = '[';
        for (size_t i = 0; i < n; i++) {
                if (i)
                        s[o++] = ',';
                memcpy(s + o, item, il);
                o += il;
        }
        s[o++] = ']';
        s[o] = '\0';
        return s;
}

static void test_decode_value_bound(void **state) {
        (void)state;
        /* The array itself is one value: MAX - 1 elements fit exactly. */
        _cleanup_free_ char *fits = array_of(GLOVE_JSON_MAX_VALUES - 1, "1");
        _cleanup_free_ char *over = array_of(GLOVE_JSON_MAX_VALUES, "1");
        _cleanup_free_ char *objects = array_of(GLOVE_JSON_MAX_VALUES / 2, "{}");
        json_t *v = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_json_decode_strict(fits, strlen(fits), SIZE_MAX, GLOVE_JSON_BOUND_VALUES, &v, &err), 0);
        assert_int_equal(json_array_size(v), GLOVE_JSON_MAX_VALUES - 1);
        json_decref(v);
        v = NULL;
        assert_int_equal(glove_json_decode_strict(over, strlen(over), SIZE_MAX, GLOVE_JSON_BOUND_VALUES, &v, &err),
                         -E2BIG);
        assert_string_equal(err.code, "json.too_many_values");
        assert_null(v);
        assert_int_equal(glove_json_decode_strict(objects, strlen(objects), SIZE_MAX, GLOVE_JSON_BOUND_VALUES, &v,
                                                  &err),
                         -E2BIG);
        /* Commas and brackets inside a string do not count. */
        size_t n = 3 * (size_t)GLOVE_JSON_MAX_VALUES;
        _cleanup_free_ char *str = malloc(n + 5);
        assert_non_null(str);
        memcpy(str, "[\"", 2);
        for (size_t i = 0; i < n; i++)
                str[2 + i] = ",[{"[i % 3];
        memcpy(str + 2 + n, "\"]", 3);
        assert_int_equal(glove_json_decode_strict(str, strlen(str), SIZE_MAX, GLOVE_JSON_BOUND_VALUES, &v, &err), 0);
        json_decref(v);
        /* Without the flag, no bound. */
        assert_int_equal(glove_json_decode_strict(over, strlen(over), SIZE_MAX, 0, &v, &err), 0);
        json_decref(v);
}

static void test_decode_rejects_syntax_and_trailing(void **state) {
        (void)state;
        assert_decode_fails("", "json.syntax");
        assert_decode_fails("   ", "json.syntax");
        assert_decode_fails("{", "json.syntax");
        assert_decode_fails("{\"a\":1,}", "json.syntax");
        assert_decode_fails("[01]", "json.syntax");
        assert_decode_fails("{'a':1}", "json.syntax");
        assert_decode_fails("NaN", "json.syntax");
        assert_decode_fails("\xef\xbb\xbf{}", "json.syntax"); /* BOM */
        assert_decode_fails("{} {}", "json.trailing_data");
        assert_decode_fails("[1]x", "json.trailing_data");
        assert_decode_fails("99999999999999999999", "json.number_out_of_range");
        assert_decode_fails("1e400", "json.number_out_of_range");
}

/* Asserts that decoding text fails with code and exactly message. */
static void assert_decode_message(const char *text, const char *code, const char *message) {
        struct glove_error err = {0};
        json_t *v = NULL;
        assert_true(glove_json_decode_strict(text, strlen(text), MAX, 0, &v, &err) < 0);
        assert_string_equal(err.code, code);
        if (strcmp(err.message, message) != 0)
                fail_msg("decoding \"%s\": got \"%s\", expected \"%s\"", text, err.message, message);
}

static void test_decode_errors_name_line_and_column(void **state) {
        (void)state;
        size_t l, c;
        glove_json_line_column("ab\ncd", 5, 0, &l, &c);
        assert_true(l == 1 && c == 1);
        glove_json_line_column("ab\ncd", 5, 4, &l, &c);
        assert_true(l == 2 && c == 2);
        glove_json_line_column("ab\ncd", 5, 99, &l, &c); /* clamped to the end */
        assert_true(l == 2 && c == 3);
        glove_json_line_column("\xc3\xa9x", 3, 2, &l, &c); /* columns count characters */
        assert_true(l == 1 && c == 2);
        /* A trailing comma is named as such, at the comma, in an object and
         * in an array alike. */
        assert_decode_message("{\n  \"a\": 1,\n}\n", "json.syntax",
                              "invalid JSON at line 2, column 9: a comma before '}' (JSON allows no trailing comma); "
                              "remove it");
        assert_decode_message("{\"a\": [1, 2 ,\n\t]}", "json.syntax",
                              "invalid JSON at line 1, column 13: a comma before ']' (JSON allows no trailing comma); "
                              "remove it");
        /* Commas inside strings are not trailing commas. */
        assert_decode_message("{\"a\": \",}\" x}", "json.syntax", "invalid JSON at line 1, column 12: '}' expected near 'x'");
        assert_decode_message("{\"a\":\n 1", "json.syntax",
                              "invalid JSON at line 2, column 3 (the end of the text): '}' expected near end of file");
        assert_decode_message("{}\n\n  x", "json.trailing_data",
                              "invalid JSON at line 3, column 3: end of file expected near 'x'");
        assert_decode_message("[\"\xc3\xa9\",\n \"\xff\"]", "json.invalid_utf8",
                              "invalid UTF-8 in JSON text at line 2, column 3");
}

static void test_decode_object_only(void **state) {
        (void)state;
        struct glove_error err = {0};
        json_t *v = NULL;
        assert_int_equal(decode("[1]", GLOVE_JSON_OBJECT_ONLY, &v, &err), -EINVAL);
        assert_string_equal(err.code, "json.not_object");
        assert_null(v);
        glove_error_clear(&err);
        assert_int_equal(decode("\"s\"", GLOVE_JSON_OBJECT_ONLY, &v, &err), -EINVAL);
        assert_string_equal(err.code, "json.not_object");
        glove_error_clear(&err);
        assert_int_equal(decode("{}", GLOVE_JSON_OBJECT_ONLY, &v, &err), 0);
        json_decref(v);
        /* Without the flag, scalars are accepted at top level. */
        assert_int_equal(decode("17", 0, &v, &err), 0);
        assert_int_equal(json_integer_value(v), 17);
        json_decref(v);
        assert_int_equal(decode("{}", 0x80, &v, &err), -EINVAL);
        assert_string_equal(err.code, "json.invalid_argument");
}

static void test_decode_error_message_is_escaped(void **state) {
        (void)state;
        struct glove_error err = {0};
        json_t *v = NULL;
        assert_true(decode("[\x1b[31m", 0, &v, &err) < 0);
        assert_null(strchr(err.message, '\x1b'));
}

/* ---- canonical form ---- */

static void assert_canonical_encoding(const char *input, const char *expected) {
        struct glove_error err = {0};
        _cleanup_json_ json_t *v = NULL;
        assert_int_equal(decode(input, 0, &v, &err), 0);
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        assert_int_equal(glove_json_encode_canonical(v, &out, &len, &err), 0);
        assert_string_equal(out, expected);
        assert_int_equal(len, strlen(expected));
}

static void test_encode_canonical(void **state) {
        (void)state;
        assert_canonical_encoding("{ \"b\" : 1 , \"a\" : [ 3 , 2 , {\"z\":null,\"y\":true} ] }",
                                  "{\"a\":[3,2,{\"y\":true,\"z\":null}],\"b\":1}");
        /* Keys sort by bytes: uppercase before lowercase, shorter prefix first. */
        assert_canonical_encoding("{\"b\":0,\"B\":0,\"ab\":0,\"a\":0,\"\xc3\xa9\":0}",
                                  "{\"B\":0,\"a\":0,\"ab\":0,\"b\":0,\"\xc3\xa9\":0}");
        /* UTF-8 stays unescaped; escapes of ASCII are undone; controls escaped. */
        assert_canonical_encoding("\"\\u00e9\\u0041\\/\\t\\u0001\\\"\\\\\"",
                                  "\"\xc3\xa9\x41/\\t\\u0001\\\"\\\\\"");
        assert_canonical_encoding("-0", "0");
        assert_canonical_encoding("[]", "[]");
}

static void test_encode_rejects_reals(void **state) {
        (void)state;
        struct glove_error err = {0};
        _cleanup_json_ json_t *v = NULL;
        assert_int_equal(decode("{\"limits\":{\"pids\":[1,2.0]}}", 0, &v, &err), 0);
        char *out = (char *)0x1;
        assert_int_equal(glove_json_encode_canonical(v, &out, NULL, &err), -EINVAL);
        assert_null(out);
        assert_string_equal(err.code, "json.real_not_allowed");
        assert_non_null(strstr(err.message, "$.limits.pids[1]"));

        glove_error_clear(&err);
        json_t *r = json_real(0.5);
        assert_int_equal(glove_json_encode_canonical(r, &out, NULL, &err), -EINVAL);
        json_decref(r);
        assert_string_equal(err.code, "json.real_not_allowed");

        glove_error_clear(&err);
        assert_int_equal(glove_json_reject_reals(json_object_get(v, "limits"), "$.limits", &err), -EINVAL);
        assert_non_null(strstr(err.message, "$.limits.pids[1]"));
}

static void test_encode_rejects_nul_and_depth(void **state) {
        (void)state;
        struct glove_error err = {0};
        char *out = NULL;
        _cleanup_json_ json_t *o = json_object();
        assert_int_equal(json_object_set_new(o, "s", json_stringn("a\0b", 3)), 0);
        assert_int_equal(glove_json_encode_canonical(o, &out, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "json.embedded_nul");
        assert_non_null(strstr(err.message, "$.s"));

        glove_error_clear(&err);
        _cleanup_json_ json_t *deep = json_array();
        json_t *cur = deep;
        for (int i = 1; i < GLOVE_JSON_MAX_DEPTH; i++) {
                json_t *next = json_array();
                json_array_append_new(cur, next);
                cur = next;
        }
        assert_int_equal(glove_json_encode_canonical(deep, &out, NULL, &err), 0);
        free(out);
        json_array_append_new(cur, json_array());
        assert_int_equal(glove_json_encode_canonical(deep, &out, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "json.too_deep");
}

static void test_is_canonical(void **state) {
        (void)state;
        struct glove_error err = {0};
        const char *yes = "{\"a\":[1,{\"b\":\"\xc3\xa9\"}],\"c\":true}";
        assert_int_equal(glove_json_is_canonical(yes, strlen(yes), MAX, 0, &err), 1);
        static const char *no[] = {
                "{\"c\":true,\"a\":[1,{\"b\":\"\xc3\xa9\"}]}", /* order */
                "{\"a\":[1,{\"b\":\"\\u00e9\"}],\"c\":true}",  /* escaped UTF-8 */
                "{\"a\": [1,{\"b\":\"\xc3\xa9\"}],\"c\":true}", /* whitespace */
                "{\"a\":[1,{\"b\":\"\xc3\xa9\"}],\"c\":true}\n", /* trailing newline */
                "-0",
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(no); i++)
                assert_int_equal(glove_json_is_canonical(no[i], strlen(no[i]), MAX, 0, &err), 0);
        assert_false(glove_error_is_set(&err));

        /* Invalid or non-encodable input is an error, not "not canonical". */
        assert_int_equal(glove_json_is_canonical("{\"a\":1,\"a\":1}", 13, MAX, 0, &err), -EINVAL);
        assert_string_equal(err.code, "json.duplicate_key");
        glove_error_clear(&err);
        assert_int_equal(glove_json_is_canonical("[1.0]", 5, MAX, 0, &err), -EINVAL);
        assert_string_equal(err.code, "json.real_not_allowed");
}

static void test_decode_canonical(void **state) {
        (void)state;
        struct glove_error err = {0};
        json_t *v = NULL;
        const char *yes = "{\"a\":1,\"b\":[]}";
        assert_int_equal(glove_json_decode_canonical(yes, strlen(yes), MAX, GLOVE_JSON_OBJECT_ONLY,
                                                     &v, &err), 0);
        assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
        json_decref(v);
        v = NULL;
        const char *no = "{\"b\":[],\"a\":1}";
        assert_int_equal(glove_json_decode_canonical(no, strlen(no), MAX, 0, &v, &err), -EINVAL);
        assert_null(v);
        assert_string_equal(err.code, "json.not_canonical");
        assert_non_null(strstr(err.message, "first difference at line 1, column 3"));
}

/* Round trip: canonical output decodes strictly and is itself canonical. */
static void test_canonical_round_trip(void **state) {
        (void)state;
        struct glove_error err = {0};
        _cleanup_json_ json_t *v = NULL;
        const char *in = "{\"z\":[{\"k\":\"\\u2028 \\n\"}],\"m\":-5,\"a\":{\"\xf0\x9f\x98\x80\":false}}";
        assert_int_equal(decode(in, 0, &v, &err), 0);
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        assert_int_equal(glove_json_encode_canonical(v, &out, &len, &err), 0);
        assert_int_equal(glove_json_is_canonical(out, len, MAX, 0, &err), 1);
        _cleanup_json_ json_t *back = NULL;
        assert_int_equal(glove_json_decode_strict(out, len, MAX, 0, &back, &err), 0);
        assert_true(json_equal(v, back));
}

/* ---- paths ---- */

static void test_paths(void **state) {
        (void)state;
        char buf[GLOVE_JSON_PATH_MAX];
        assert_int_equal(glove_json_path_member(buf, sizeof(buf), NULL, "limits"), 0);
        assert_string_equal(buf, "$.limits");
        assert_int_equal(glove_json_path_member(buf, sizeof(buf), "$.limits", "pids"), 0);
        assert_string_equal(buf, "$.limits.pids");
        assert_int_equal(glove_json_path_index(buf, sizeof(buf), "$.path_grants", 12), 0);
        assert_string_equal(buf, "$.path_grants[12]");
        assert_int_equal(glove_json_path_member(buf, sizeof(buf), "$", "a\nb\xc3\xa9"), 0);
        assert_string_equal(buf, "$.a\\x0ab\\xc3\\xa9");
        /* Exactly fitting, then one byte short: an error, never a cut. */
        char small[9];
        assert_int_equal(glove_json_path_member(small, sizeof(small), "$", "abcdef"), 0);
        assert_string_equal(small, "$.abcdef");
        assert_int_equal(glove_json_path_member(small, sizeof(small), "$", "abcdefg"), -ENAMETOOLONG);
        assert_string_equal(small, "");
        assert_int_equal(glove_json_path_index(small, 4, "$", 10), -ENAMETOOLONG);
}

/* ---- typed getters ---- */

static json_t *sample(void) {
        json_t *v = NULL;
        struct glove_error err = {0};
        const char *text = "{\"name\":\"agent\",\"limits\":{\"pids\":64,\"mem\":1.5,\"neg\":-3},"
                           "\"on\":true,\"off\":null,\"list\":[1,2,3],\"nul\":\"x\"}";
        assert_int_equal(decode(text, GLOVE_JSON_OBJECT_ONLY, &v, &err), 0);
        return v;
}

static void assert_err(int r, struct glove_error *err, const char *code, const char *path) {
        assert_int_equal(r, -EINVAL);
        assert_non_null(err->code);
        assert_string_equal(err->code, code);
        /* The message starts with the JSON path of the offending value. */
        size_t n = strlen(path);
        if (strncmp(err->message, path, n) != 0 || err->message[n] != ':')
                fail_msg("message \"%s\" does not start with \"%s:\"", err->message, path);
        glove_error_clear(err);
}

static void test_get_string(void **state) {
        (void)state;
        _cleanup_json_ json_t *v = sample();
        struct glove_error err = {0};
        const char *s = NULL;
        assert_int_equal(glove_json_get_string(v, "name", NULL, 5, &s, &err), 0);
        assert_string_equal(s, "agent");
        assert_err(glove_json_get_string(v, "name", NULL, 4, &s, &err), &err, "json.too_long", "$.name");
        assert_err(glove_json_get_string(v, "nope", "$", 99, &s, &err), &err, "json.missing_field", "$.nope");
        assert_err(glove_json_get_string(v, "on", NULL, 99, &s, &err), &err, "json.wrong_type", "$.on");
        assert_err(glove_json_get_string(v, "off", NULL, 99, &s, &err), &err, "json.wrong_type", "$.off");
        assert_err(glove_json_get_string(json_object_get(v, "list"), "x", "$.list", 9, &s, &err),
                   &err, "json.not_object", "$.list");

        json_t *with_nul = json_stringn("a\0b", 3);
        assert_err(glove_json_as_string(with_nul, "$.x", 9, &s, &err), &err, "json.embedded_nul", "$.x");
        json_decref(with_nul);
        assert_string_equal(s, "agent"); /* untouched by failures */
}

static void test_get_int(void **state) {
        (void)state;
        _cleanup_json_ json_t *v = sample();
        json_t *limits = NULL;
        struct glove_error err = {0};
        int64_t x = 0;
        assert_int_equal(glove_json_get_object(v, "limits", NULL, &limits, &err), 0);
        assert_int_equal(glove_json_get_int(limits, "pids", "$.limits", 1, 64, &x, &err), 0);
        assert_int_equal(x, 64);
        assert_int_equal(glove_json_get_int(limits, "neg", "$.limits", INT64_MIN, 0, &x, &err), 0);
        assert_int_equal(x, -3);
        assert_err(glove_json_get_int(limits, "pids", "$.limits", 1, 63, &x, &err), &err,
                   "json.out_of_range", "$.limits.pids");
        assert_err(glove_json_get_int(limits, "neg", "$.limits", 0, 10, &x, &err), &err,
                   "json.out_of_range", "$.limits.neg");
        assert_err(glove_json_get_int(limits, "mem", "$.limits", 0, 10, &x, &err), &err,
                   "json.not_integer", "$.limits.mem");
        assert_err(glove_json_get_int(v, "name", NULL, 0, 10, &x, &err), &err, "json.wrong_type", "$.name");
        assert_err(glove_json_get_int(limits, "cpu", "$.limits", 0, 10, &x, &err), &err,
                   "json.missing_field", "$.limits.cpu");
        assert_int_equal(x, -3);
}

static void test_get_bool_array_object(void **state) {
        (void)state;
        _cleanup_json_ json_t *v = sample();
        struct glove_error err = {0};
        bool b = false;
        json_t *a = NULL;
        assert_int_equal(glove_json_get_bool(v, "on", NULL, &b, &err), 0);
        assert_true(b);
        assert_err(glove_json_get_bool(v, "off", NULL, &b, &err), &err, "json.wrong_type", "$.off");
        assert_err(glove_json_get_bool(v, "list", NULL, &b, &err), &err, "json.wrong_type", "$.list");

        assert_int_equal(glove_json_get_array(v, "list", NULL, 3, &a, &err), 0);
        assert_int_equal(json_array_size(a), 3);
        assert_err(glove_json_get_array(v, "list", NULL, 2, &a, &err), &err, "json.too_many_items", "$.list");
        {
                /* The count agrees with its noun: "1 item". */
                _cleanup_json_ json_t *one = json_pack("{s:[i]}", "l", 1);
                assert_int_equal(glove_json_get_array(one, "l", NULL, 0, &a, &err), -EINVAL);
                assert_non_null(strstr(err.message, "array has 1 item, the limit is 0"));
                glove_error_clear(&err);
        }
        assert_err(glove_json_get_array(v, "limits", NULL, 9, &a, &err), &err, "json.wrong_type", "$.limits");
        assert_err(glove_json_get_object(v, "list", NULL, &a, &err), &err, "json.wrong_type", "$.list");

        /* Array elements are checked with the glove_json_as_* functions. */
        char path[GLOVE_JSON_PATH_MAX];
        assert_int_equal(glove_json_path_index(path, sizeof(path), "$.list", 2), 0);
        int64_t x = 0;
        assert_err(glove_json_as_int(json_array_get(a, 2), path, 0, 2, &x, &err), &err,
                   "json.out_of_range", "$.list[2]");
        assert_int_equal(glove_json_as_int(json_array_get(a, 2), path, 0, 3, &x, &err), 0);
        assert_int_equal(x, 3);
        assert_err(glove_json_as_bool(NULL, path, &b, &err), &err, "json.wrong_type", "$.list[2]");
}

static void test_check_keys(void **state) {
        (void)state;
        _cleanup_json_ json_t *v = sample();
        struct glove_error err = {0};
        static const char *const all[] = { "name", "limits", "on", "off", "list", "nul", NULL };
        static const char *const some[] = { "name", "limits", "on", "off", "nul", NULL };
        static const char *const limit_keys[] = { "pids", "neg", NULL };
        assert_int_equal(glove_json_check_keys(v, all, NULL, &err), 0);
        assert_err(glove_json_check_keys(v, some, NULL, &err), &err, "json.unknown_field", "$.list");
        assert_err(glove_json_check_keys(json_object_get(v, "limits"), limit_keys, "$.limits", &err),
                   &err, "json.unknown_field", "$.limits.mem");
        static const char *const none[] = { NULL };
        _cleanup_json_ json_t *empty = json_object();
        assert_int_equal(glove_json_check_keys(empty, none, NULL, &err), 0);
        assert_err(glove_json_check_keys(json_object_get(v, "list"), all, "$.list", &err), &err,
                   "json.not_object", "$.list");

        /* A key that is a prefix of an allowed key is still unknown. */
        _cleanup_json_ json_t *p = json_pack("{s:i}", "nam", 1);
        assert_err(glove_json_check_keys(p, all, NULL, &err), &err, "json.unknown_field", "$.nam");

        /* Hostile keys are escaped in the message. */
        _cleanup_json_ json_t *h = json_pack("{s:i}", "\x1b]0;pwned\x07", 1);
        assert_true(glove_json_check_keys(h, all, NULL, &err) < 0);
        assert_null(strchr(err.message, '\x1b'));
        assert_null(strchr(err.message, '\x07'));
        assert_non_null(strstr(err.message, "\\x1b]0;pwned\\x07"));
}

/* Control characters are escaped \u00xx with lower-case hex (RFC 8785,
 * what Python's json.dumps and JSON.stringify write); an upper-case escape
 * is not canonical, on the fast path (short texts) and the long one; an
 * escaped backslash followed by "u" and hex is text, left alone. */
static void test_canonical_escape_case(void **state) {
        (void)state;
        json_t *v = json_pack("{s:s}", "s", "a\x1b[1mB\x1f\x0b\\u00AB");
        assert_non_null(v);
        char *out = NULL;
        size_t n = 0;
        assert_int_equal(glove_json_encode_canonical(v, &out, &n, NULL), 0);
        assert_string_equal(out, "{\"s\":\"a\\u001b[1mB\\u001f\\u000b\\\\u00AB\"}");
        assert_int_equal(glove_json_is_canonical(out, n, 1 << 20, 0, NULL), 1);
        free(out);
        const char *upper = "{\"s\":\"a\\u001B[1mB\\u001f\\u000b\\\\u00AB\"}";
        assert_int_equal(glove_json_is_canonical(upper, strlen(upper), 1 << 20, 0, NULL), 0);
        /* The same past the fast path's 4096 bytes. */
        char big[6000];
        memset(big, 'x', sizeof(big));
        memcpy(big, "{\"s\":\"\\u001B", 12);
        memcpy(big + sizeof(big) - 2, "\"}", 2);
        assert_int_equal(glove_json_is_canonical(big, sizeof(big), 1 << 20, 0, NULL), 0);
        big[11] = 'b';
        assert_int_equal(glove_json_is_canonical(big, sizeof(big), 1 << 20, 0, NULL), 1);
        json_decref(v);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_utf8_valid_sequences),
                cmocka_unit_test(test_utf8_invalid_sequences),
                cmocka_unit_test(test_decode_accepts_valid_json),
                cmocka_unit_test(test_decode_too_large),
                cmocka_unit_test(test_decode_value_bound),
                cmocka_unit_test(test_decode_rejects_invalid_utf8),
                cmocka_unit_test(test_decode_rejects_nul),
                cmocka_unit_test(test_decode_rejects_duplicate_keys),
                cmocka_unit_test(test_decode_depth_limit),
                cmocka_unit_test(test_decode_rejects_syntax_and_trailing),
                cmocka_unit_test(test_decode_object_only),
                cmocka_unit_test(test_decode_error_message_is_escaped),
                cmocka_unit_test(test_decode_errors_name_line_and_column),
                cmocka_unit_test(test_encode_canonical),
                cmocka_unit_test(test_encode_rejects_reals),
                cmocka_unit_test(test_encode_rejects_nul_and_depth),
                cmocka_unit_test(test_is_canonical),
                cmocka_unit_test(test_decode_canonical),
                cmocka_unit_test(test_canonical_round_trip),
                cmocka_unit_test(test_canonical_escape_case),
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_get_string),
                cmocka_unit_test(test_get_int),
                cmocka_unit_test(test_get_bool_array_object),
                cmocka_unit_test(test_check_keys),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

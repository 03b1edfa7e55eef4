/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for glove_json_pointer_get (RFC 6901) and the pointer syntax
 * accepted in rules. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/policy/policy.h"
#include "internal.h"

/* RFC 6901 section 5, the example document, verbatim. */
static const char rfc6901_doc[] =
        "{\n"
        "   \"foo\": [\"bar\", \"baz\"],\n"
        "   \"\": 0,\n"
        "   \"a/b\": 1,\n"
        "   \"c%d\": 2,\n"
        "   \"e^f\": 3,\n"
        "   \"g|h\": 4,\n"
        "   \"i\\\\j\": 5,\n"
        "   \"k\\\"l\": 6,\n"
        "   \" \": 7,\n"
        "   \"m~n\": 8\n"
        "}\n";

static json_t *load(const char *text) {
        json_error_t je;
        json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &je);
        assert_non_null(v);
        return v;
}

static const json_t *get_ok(const json_t *root, const char *pointer) {
        const json_t *out = (const json_t *)0x1;
        assert_int_equal(glove_json_pointer_get(root, pointer, &out), 0);
        return out;
}

static void assert_int_at(const json_t *root, const char *pointer, json_int_t want) {
        const json_t *v = get_ok(root, pointer);
        assert_non_null(v);
        assert_true(json_is_integer(v));
        assert_int_equal(json_integer_value(v), want);
}

static void assert_absent(const json_t *root, const char *pointer) {
        assert_null(get_ok(root, pointer));
}

static void assert_malformed(const json_t *root, const char *pointer) {
        const json_t *out = (const json_t *)0x1;
        assert_int_equal(glove_json_pointer_get(root, pointer, &out), -EINVAL);
        assert_null(out);
}

/* Section 5: every pointer of the example, with the value it must name. */
static void test_rfc6901_section5(void **state) {
        (void)state;
        _cleanup_json_ json_t *doc = load(rfc6901_doc);
        assert_ptr_equal(get_ok(doc, ""), doc); /* the whole document */
        const json_t *foo = get_ok(doc, "/foo");
        _cleanup_json_ json_t *want_foo = load("[\"bar\", \"baz\"]");
        assert_true(json_equal(foo, want_foo));
        assert_string_equal(json_string_value(get_ok(doc, "/foo/0")), "bar");
        assert_int_at(doc, "/", 0);
        assert_int_at(doc, "/a~1b", 1);
        assert_int_at(doc, "/c%d", 2);
        assert_int_at(doc, "/e^f", 3);
        assert_int_at(doc, "/g|h", 4);
        assert_int_at(doc, "/i\\j", 5);
        assert_int_at(doc, "/k\"l", 6);
        assert_int_at(doc, "/ ", 7);
        assert_int_at(doc, "/m~0n", 8);
}

/* Section 4: "~1" is decoded before "~0" would be, so "~01" is "~1". */
static void test_escape_order(void **state) {
        (void)state;
        _cleanup_json_ json_t *doc = load("{\"~1\": 1, \"/\": 2, \"~\": 3, \"~/\": 4, \"~~\": 5}");
        assert_int_at(doc, "/~01", 1);
        assert_int_at(doc, "/~1", 2);
        assert_int_at(doc, "/~0", 3);
        assert_int_at(doc, "/~0~1", 4);
        assert_int_at(doc, "/~0~0", 5);
        assert_absent(doc, "/~10"); /* "/0" */
}

static void test_arrays(void **state) {
        (void)state;
        _cleanup_json_ json_t *doc = load("{\"a\": [10, 11, [20, 21], {\"0\": 30}]}");
        assert_int_at(doc, "/a/0", 10);
        assert_int_at(doc, "/a/1", 11);
        assert_int_at(doc, "/a/2/1", 21);
        assert_int_at(doc, "/a/3/0", 30); /* "0" is a key for an object */
        assert_absent(doc, "/a/4");       /* past the end */
        assert_absent(doc, "/a/-");       /* "-" names the element after the last: absent */
        assert_absent(doc, "/a/01");      /* leading zero */
        assert_absent(doc, "/a/00");
        assert_absent(doc, "/a/+1");
        assert_absent(doc, "/a/-1");
        assert_absent(doc, "/a/1a");
        assert_absent(doc, "/a/ 1");
        assert_absent(doc, "/a/");         /* empty token on an array */
        assert_absent(doc, "/a/18446744073709551616");
        assert_absent(doc, "/a/99999999999999999999999");
}

static void test_absent_and_scalars(void **state) {
        (void)state;
        _cleanup_json_ json_t *doc = load("{\"s\": \"str\", \"n\": null, \"o\": {\"\": {\"x\": true}}}");
        assert_absent(doc, "/missing");
        assert_absent(doc, "/s/0");       /* no stepping into a string */
        assert_absent(doc, "/s/x");
        assert_true(json_is_null(get_ok(doc, "/n")));
        assert_absent(doc, "/n/x");
        assert_true(json_is_true(get_ok(doc, "/o//x"))); /* empty key in the middle */
        assert_absent(doc, "/o/x");
        assert_absent(NULL, "/x");
        assert_null(get_ok(NULL, ""));
        _cleanup_json_ json_t *scalar = json_integer(5);
        assert_ptr_equal(get_ok(scalar, ""), scalar);
        assert_absent(scalar, "/0");
}

static void test_long_token(void **state) {
        (void)state;
        char key[1200];
        memset(key, 'k', sizeof(key) - 1);
        key[sizeof(key) - 1] = '\0';
        _cleanup_json_ json_t *doc = json_object();
        assert_int_equal(json_object_set_new(doc, key, json_integer(9)), 0);
        char pointer[sizeof(key) + 1];
        pointer[0] = '/';
        memcpy(pointer + 1, key, sizeof(key));
        assert_int_at(doc, pointer, 9);
        pointer[600] = '~';
        pointer[601] = '0';
        assert_absent(doc, pointer);
}

static void test_malformed(void **state) {
        (void)state;
        _cleanup_json_ json_t *doc = load("{\"a\": 1}");
        assert_malformed(doc, "a");
        assert_malformed(doc, "#/a");
        assert_malformed(doc, "/~");
        assert_malformed(doc, "/~2");
        assert_malformed(doc, "/a~");
        assert_malformed(doc, "/a/~x");
        assert_malformed(doc, "/missing/~"); /* malformed even past an absent step */
        const json_t *out;
        assert_int_equal(glove_json_pointer_get(doc, NULL, &out), -EINVAL);
        assert_int_equal(glove_json_pointer_get(doc, "/a", NULL), -EINVAL);
}

/* Pointers in rules: start with "/", at most 256 bytes, UTF-8, RFC 6901. */
static void test_rule_pointer_syntax(void **state) {
        (void)state;
        const char *why = NULL;
        assert_true(glove_policy_pointer_valid("/", &why));
        assert_true(glove_policy_pointer_valid("/path", &why));
        assert_true(glove_policy_pointer_valid("/a~0b/~1/0/-", &why));
        assert_true(glove_policy_pointer_valid("/\xc3\xa9t\xc3\xa9", &why));
        assert_false(glove_policy_pointer_valid("", &why));
        assert_non_null(why);
        assert_false(glove_policy_pointer_valid(NULL, &why));
        assert_false(glove_policy_pointer_valid("path", &why));
        assert_false(glove_policy_pointer_valid("/a~2", &why));
        assert_false(glove_policy_pointer_valid("/a~", &why));
        assert_false(glove_policy_pointer_valid("/\xff", &why));
        char p[GLOVE_POLICY_POINTER_MAX + 2];
        memset(p, 'a', sizeof(p));
        p[0] = '/';
        p[GLOVE_POLICY_POINTER_MAX] = '\0';
        assert_true(glove_policy_pointer_valid(p, &why)); /* 256 bytes */
        p[GLOVE_POLICY_POINTER_MAX] = 'a';
        p[GLOVE_POLICY_POINTER_MAX + 1] = '\0';
        assert_false(glove_policy_pointer_valid(p, &why)); /* 257 bytes */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rfc6901_section5),
                cmocka_unit_test(test_escape_order),
                cmocka_unit_test(test_arrays),
                cmocka_unit_test(test_absent_and_scalars),
                cmocka_unit_test(test_long_token),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_rule_pointer_syntax),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

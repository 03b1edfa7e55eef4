/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the prompt and resource rules of
 * include/glove/policy/policy.h: their own namespaces (a tool rule allows no
 * prompt), NAME:PATTERN parsing, literal and prefix matching, deny wins,
 * argument rules on prompt arguments and on {uri, path}, file: URI paths,
 * templates, and the policy file's "prompts" and "resources" members. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/policy/policy.h"
#include "internal.h"

static struct glove_policy *new_policy(void) {
        struct glove_policy *p = NULL;
        assert_int_equal(glove_policy_new(&p), 0);
        return p;
}

static void load(struct glove_policy *p, const char *text) {
        struct glove_error err = {0};
        if (glove_policy_load_json(p, text, strlen(text), &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
}

static void load_fails(const char *text, const char *code) {
        struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        int r = glove_policy_load_json(p, text, strlen(text), &err);
        if (r >= 0 || strcmp(err.code, code) != 0)
                fail_msg("%s: expected %s, got %d %s %s", text, code, r, err.code ? err.code : "-", err.message);
        glove_policy_free(p);
}

static struct glove_policy_verdict res(const struct glove_policy *p, const char *up, const char *uri) {
        struct glove_policy_verdict v;
        glove_policy_check_resource(p, up, uri, strlen(uri), &v);
        return v;
}

static void test_prompts_are_their_own_namespace(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow(p, "ev.*", &err), 0);
        /* A tool rule allows no prompt. */
        assert_false(glove_policy_prompt_visible(p, "ev", "greet"));
        struct glove_policy_verdict v;
        glove_policy_check_prompt(p, "ev", "greet", NULL, &v);
        assert_false(v.allowed);
        assert_string_equal(v.rule, "default deny");
        assert_false(glove_policy_allows_any(p, GLOVE_POLICY_FEATURE_PROMPTS, "ev"));
        assert_int_equal(glove_policy_allow_prompt(p, "ev.*", &err), 0);
        assert_int_equal(glove_policy_deny_prompt(p, "ev.secret", &err), 0);
        assert_true(glove_policy_allows_any(p, GLOVE_POLICY_FEATURE_PROMPTS, "ev"));
        assert_false(glove_policy_allows_any(p, GLOVE_POLICY_FEATURE_PROMPTS, "fs"));
        assert_true(glove_policy_prompt_visible(p, "ev", "greet"));
        assert_false(glove_policy_prompt_visible(p, "ev", "secret"));
        glove_policy_check_prompt(p, "ev", "secret", NULL, &v);
        assert_false(v.allowed);
        assert_string_equal(v.rule, "deny ev.secret");
        /* And a prompt rule allows no tool. */
        assert_true(glove_policy_tool_visible(p, "ev", "greet"));
        glove_policy_free(p);
        p = new_policy();
        assert_int_equal(glove_policy_allow_prompt(p, "ev.greet", &err), 0);
        assert_false(glove_policy_tool_visible(p, "ev", "greet"));
        /* Argument rules look into the prompt's arguments. */
        assert_int_equal(glove_policy_allow_prompt_arg(p, "ev.greet:/who=al", &err), 0);
        json_t *a = json_pack("{s:s}", "who", "alice");
        glove_policy_check_prompt(p, "ev", "greet", a, &v);
        assert_true(v.allowed);
        assert_string_equal(v.rule, "allow ev.greet");
        json_object_set_new(a, "who", json_string("bob"));
        glove_policy_check_prompt(p, "ev", "greet", a, &v);
        assert_false(v.allowed);
        assert_string_equal(v.rule, "ev.greet:/who prefix \"al\"");
        json_decref(a);
        assert_int_equal(glove_policy_allow_prompt(p, "ev", &err), -EINVAL);
        assert_string_equal(err.code, "policy.bad_tool_name");
        glove_policy_free(p);
}

static void test_resource_rule_parse(void **state) {
        (void)state;
        size_t n;
        bool prefix;
        const char *why;
        assert_true(glove_policy_resource_rule_parse("fs:file:///data/*", &n, &prefix, &why));
        assert_int_equal(n, 2);
        assert_true(prefix);
        assert_true(glove_policy_resource_rule_parse("ev:demo://x", &n, &prefix, &why));
        assert_false(prefix);
        assert_true(glove_policy_resource_rule_parse("ev:*", &n, &prefix, &why));
        assert_true(prefix);
        const char *bad[] = {"ev", "ev:", ":x", "EV:x", "e.v:x", "ev:a*b", "ev:**", "ev:a\nb", "ev:\x7f", "ev:\xff",
                             "n234567890123456789012345678901234:x"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (glove_policy_resource_rule_parse(bad[i], &n, &prefix, &why))
                        fail_msg("accepted %s", bad[i]);
        char *big = malloc(GLOVE_POLICY_URI_MAX + 8);
        assert_non_null(big);
        memcpy(big, "ev:", 3);
        memset(big + 3, 'a', GLOVE_POLICY_URI_MAX);
        big[3 + GLOVE_POLICY_URI_MAX] = '\0';
        assert_true(glove_policy_resource_rule_parse(big, &n, &prefix, &why));
        big[3 + GLOVE_POLICY_URI_MAX] = 'a';
        big[4 + GLOVE_POLICY_URI_MAX] = '\0';
        assert_false(glove_policy_resource_rule_parse(big, &n, &prefix, &why));
        free(big);
        struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow_resource(p, "ev:a*b", &err), -EINVAL);
        assert_string_equal(err.code, "policy.bad_resource_rule");
        glove_policy_free(p);
}

static void test_resource_decisions(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        assert_false(res(p, "ev", "demo://a").allowed); /* default deny */
        assert_int_equal(glove_policy_allow_resource(p, "ev:demo://static/*", &err), 0);
        assert_int_equal(glove_policy_allow_resource(p, "ev:demo://one", &err), 0);
        assert_int_equal(glove_policy_deny_resource(p, "ev:demo://static/secret*", &err), 0);
        struct glove_policy_verdict v = res(p, "ev", "demo://static/a.md");
        assert_true(v.allowed);
        assert_string_equal(v.rule, "allow resource ev:demo://static/*");
        assert_true(res(p, "ev", "demo://static/").allowed);
        assert_true(res(p, "ev", "demo://one").allowed);
        assert_false(res(p, "ev", "demo://one/more").allowed); /* a literal is exact */
        assert_false(res(p, "ev", "demo://static").allowed);
        v = res(p, "ev", "demo://static/secret/x");
        assert_false(v.allowed);
        assert_string_equal(v.reason, "policy_denied");
        assert_string_equal(v.rule, "deny resource ev:demo://static/secret*");
        /* Another upstream, a bad URI. */
        assert_false(res(p, "fs", "demo://static/a.md").allowed);
        assert_false(res(p, "ev", "demo://static/a\nb").allowed);
        glove_policy_check_resource(p, "ev", "demo://static/a\0b", 17, &v);
        assert_false(v.allowed);
        /* Templates: the patterns only. */
        const char *t = "demo://static/{id}";
        assert_true(glove_policy_resource_template_visible(p, "ev", t, strlen(t)));
        t = "demo://static/secret/{id}";
        assert_false(glove_policy_resource_template_visible(p, "ev", t, strlen(t)));
        assert_true(glove_policy_allows_any(p, GLOVE_POLICY_FEATURE_RESOURCES, "ev"));
        assert_false(glove_policy_allows_any(p, GLOVE_POLICY_FEATURE_RESOURCES, "fs"));
        glove_policy_free(p);
}

/* The red-team pass's spellings of a denied file: each is refused, the
 * canonical ones are decided by the rules. */
static void test_file_uri_canonical(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow_resource(p, "fs:file:///srv/data/*", &err), 0);
        assert_int_equal(glove_policy_deny_resource(p, "fs:file:///srv/data/private/*", &err), 0);
        assert_true(res(p, "fs", "file:///srv/data/a.txt").allowed);
        assert_true(res(p, "fs", "file:///srv/data/dir/").allowed);
        assert_true(res(p, "fs", "file:///srv/data/a%20b.txt").allowed);     /* a space needs its escape */
        assert_true(res(p, "fs", "file:///srv/data/a.txt?x=./../y").allowed); /* the query is no path */
        assert_false(res(p, "fs", "file:///srv/data/private/key").allowed);
        static const char *const other[] = {
                "file:///srv/data/%70rivate/key", "file:///srv/data//private/key", "file:///srv/data/./private/key",
                "file:///srv/data/private%2Fkey", "file:///srv/data/%2fprivate/key", "file:///srv/data/pr%69vate/key",
                "file:///srv/data/../data/private/key", "file:///srv/data/private/..", "file://localhost/srv/data/private/key",
                "FILE:///srv/data/private/key", "file:/srv/data/private/key", "file:///srv/data/a%c3%a9",
                "file:///srv/data/a%2", "file:///srv/data/a%GG",
        };
        for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
                struct glove_policy_verdict v = res(p, "fs", other[i]);
                if (v.allowed)
                        fail_msg("%s was allowed", other[i]);
                assert_string_equal(v.rule, "non-canonical file URI");
        }
        assert_true(res(p, "fs", "file:///srv/data/a%C3%A9").allowed);
        glove_policy_free(p);
}

static void test_file_uri_path(void **state) {
        (void)state;
        struct {
                const char *uri, *path;
        } cases[] = {
                {"file:///data/a.txt", "/data/a.txt"},
                {"file://localhost/data/a.txt", "/data/a.txt"},
                {"FILE:///x", "/x"},
                {"file:///data/%2e%2e/etc", "/data/../etc"},
                {"file:///a%20b?q=1#f", "/a b"},
                {"file://host/x", NULL},
                {"file:/x", NULL},
                {"http://x/y", NULL},
                {"file:///a%00b", NULL},
                {"file:///a%zz", NULL},
                {"file:///a%2", NULL},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *p = glove_policy_file_uri_path(cases[i].uri, strlen(cases[i].uri));
                if (!cases[i].path ? p != NULL : !p || strcmp(p, cases[i].path) != 0)
                        fail_msg("%s: got %s", cases[i].uri, p ? p : "(none)");
                free(p);
        }
}

static void test_resource_argument_rules(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        load(p, "{\"version\":1,\"resources\":{\"allow\":[\"fs:*\"],\"arguments\":{\"fs\":["
                "{\"kind\":\"path_within\",\"pointer\":\"/path\",\"root\":\"/data\"},"
                "{\"kind\":\"max_length\",\"pointer\":\"/uri\",\"max\":40}]}}}");
        assert_true(res(p, "fs", "file:///data/a.txt").allowed);
        struct glove_policy_verdict v = res(p, "fs", "file:///etc/passwd");
        assert_false(v.allowed);
        assert_string_equal(v.rule, "resource fs:/path path_within /data");
        assert_false(res(p, "fs", "file:///data/../etc/passwd").allowed);
        assert_false(res(p, "fs", "file:///data/%2e%2e/etc/passwd").allowed);
        assert_false(res(p, "fs", "file:///data/%00").allowed);
        /* Not a local file: URI: no /path, so the rule fails closed. */
        assert_false(res(p, "fs", "demo://data/a").allowed);
        assert_false(res(p, "fs", "file://other/data/a").allowed);
        v = res(p, "fs", "file:///data/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        assert_false(v.allowed);
        assert_string_equal(v.rule, "resource fs:/uri max_length 40");
        /* Templates are not judged by argument rules. */
        const char *t = "demo://{x}";
        assert_true(glove_policy_resource_template_visible(p, "fs", t, strlen(t)));
        glove_policy_free(p);
}

static void test_policy_file(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        load(p, "{\"version\":1,\"allow\":[\"ev.echo\"],"
                "\"prompts\":{\"allow\":[\"ev.*\"],\"deny\":[\"ev.x\"],\"arguments\":{\"ev.greet\":[{\"kind\":\"one_of\",\"pointer\":\"/who\","
                "\"values\":[\"a\",\"b\"]}]}},"
                "\"resources\":{\"allow\":[\"ev:demo://*\"],\"deny\":[\"ev:demo://s*\"]}}");
        assert_true(glove_policy_prompt_visible(p, "ev", "greet"));
        assert_false(glove_policy_prompt_visible(p, "ev", "x"));
        assert_true(res(p, "ev", "demo://a").allowed);
        assert_false(res(p, "ev", "demo://sx").allowed);
        json_t *j = glove_policy_to_json(p);
        assert_non_null(j);
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        assert_string_equal(s, "{\"allow\":[\"ev.echo\"],\"arguments\":{},\"deny\":[],"
                               "\"prompts\":{\"allow\":[\"ev.*\"],\"arguments\":{\"ev.greet\":[\"ev.greet:/who one_of [\\\"a\\\",\\\"b\\\"]\"]},\"deny\":[\"ev.x\"]},"
                               "\"resources\":{\"allow\":[\"ev:demo://*\"],\"arguments\":{},\"deny\":[\"ev:demo://s*\"]}}");
        free(s);
        json_decref(j);
        /* Rules of an unknown upstream, in either kind. */
        const char *names[] = {"fs"};
        struct glove_error err = {0};
        assert_int_equal(glove_policy_check_upstreams(p, names, 1, &err), -EINVAL);
        assert_string_equal(err.code, "policy.unknown_upstream");
        glove_policy_free(p);
        p = new_policy();
        load(p, "{\"version\":1,\"resources\":{\"allow\":[\"ev:*\"]}}");
        const char *ev[] = {"ev"};
        assert_int_equal(glove_policy_check_upstreams(p, ev, 1, &err), 0);
        assert_int_equal(glove_policy_check_upstreams(p, names, 1, &err), -EINVAL);
        assert_non_null(strstr(err.message, "resource rule"));
        glove_policy_free(p);

        load_fails("{\"version\":1,\"prompts\":{\"allow\":[\"ev.*\"],\"extra\":1}}", "policy.unknown_field");
        load_fails("{\"version\":1,\"resources\":{\"allow\":[\"ev:*\"],\"arguments\":{\"ev.x\":[]}}}", "policy.bad_upstream_name");
        load_fails("{\"version\":1,\"resources\":{\"allow\":[\"ev:a*b\"]}}", "policy.bad_resource_rule");
        load_fails("{\"version\":1,\"resources\":{\"allow\":[]}}", "policy.empty_list");
        load_fails("{\"version\":1,\"resources\":{}}", "policy.empty_list");
        load_fails("{\"version\":1,\"prompts\":[]}", "policy.wrong_type");
        load_fails("{\"version\":1,\"prompts\":{\"allow\":[\"ev\"]}}", "policy.bad_tool_name");
        load_fails("{\"version\":1,\"prompts\":{\"allow\":[\"ev.a\",\"ev.a\"]}}", "policy.duplicate_rule");
        load_fails("{\"version\":1,\"resources\":{\"arguments\":{\"ev\":[{\"kind\":\"path_within\",\"pointer\":\"/path\",\"root\":\"rel\"}]}}}",
                   "policy.bad_root");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prompts_are_their_own_namespace),
                cmocka_unit_test(test_resource_rule_parse),
                cmocka_unit_test(test_resource_decisions),
                cmocka_unit_test(test_file_uri_canonical),
                cmocka_unit_test(test_file_uri_path),
                cmocka_unit_test(test_resource_argument_rules),
                cmocka_unit_test(test_policy_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

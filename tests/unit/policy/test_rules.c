/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the rules and decisions of include/glove/policy/policy.h:
 * allow/deny/wildcard precedence, tool visibility, --allow-arg parsing, each
 * argument rule kind accepting and refusing, and the rule a verdict names. */
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
        assert_non_null(p);
        return p;
}

static void policy_freep(struct glove_policy **p) {
        glove_policy_free(*p);
}
#define _cleanup_policy_ _cleanup_(policy_freep)

static void allow(struct glove_policy *p, const char *q) {
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow(p, q, &err), 0);
}

static void deny(struct glove_policy *p, const char *q) {
        struct glove_error err = {0};
        assert_int_equal(glove_policy_deny(p, q, &err), 0);
}

static void allow_arg(struct glove_policy *p, const char *spec) {
        struct glove_error err = {0};
        int r = glove_policy_allow_arg(p, spec, &err);
        if (r < 0)
                fail_msg("%s: %s %s", spec, err.code, err.message);
}

static void load(struct glove_policy *p, const char *text) {
        struct glove_error err = {0};
        int r = glove_policy_load_json(p, text, strlen(text), &err);
        if (r < 0)
                fail_msg("%s: %s", err.code, err.message);
}

/* Decides upstream.tool with arguments given as JSON text (NULL: absent). */
static struct glove_policy_verdict decide(const struct glove_policy *p, const char *upstream, const char *tool,
                                          const char *args) {
        struct glove_policy_verdict v;
        memset(&v, 0xa5, sizeof(v));
        json_t *a = NULL;
        if (args) {
                json_error_t je;
                a = json_loads(args, JSON_DECODE_ANY, &je);
                assert_non_null(a);
        }
        glove_policy_check_call(p, upstream, tool, a, &v);
        json_decref(a);
        return v;
}

static void assert_allowed(const struct glove_policy *p, const char *up, const char *tool, const char *args,
                           const char *rule) {
        struct glove_policy_verdict v = decide(p, up, tool, args);
        if (!v.allowed)
                fail_msg("%s.%s %s: denied by %s", up, tool, args ? args : "", v.rule);
        assert_null(v.reason);
        assert_string_equal(v.rule, rule);
}

static void assert_denied(const struct glove_policy *p, const char *up, const char *tool, const char *args,
                          const char *reason, const char *rule) {
        struct glove_policy_verdict v = decide(p, up, tool, args);
        if (v.allowed)
                fail_msg("%s.%s %s: allowed by %s", up, tool, args ? args : "", v.rule);
        assert_non_null(v.reason);
        assert_string_equal(v.reason, reason);
        assert_string_equal(v.rule, rule);
}

#define DENIED "policy_denied"

/* ---- allow, deny, wildcard, visibility ---- */

static void test_default_deny(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        assert_denied(p, "fs", "read_file", NULL, DENIED, "default deny");
        assert_denied(p, "fs", "read_file", "{}", DENIED, "default deny");
        assert_false(glove_policy_tool_visible(p, "fs", "read_file"));
        struct glove_policy_verdict v;
        glove_policy_check_call(NULL, "fs", "x", NULL, &v);
        assert_false(v.allowed);
        assert_string_equal(v.rule, "default deny");
        assert_false(glove_policy_tool_visible(NULL, "fs", "x"));
}

static void test_allow_exact_and_wildcard(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.read_file");
        allow(p, "everything.*");
        assert_allowed(p, "fs", "read_file", "{}", "allow fs.read_file");
        assert_denied(p, "fs", "write_file", "{}", DENIED, "default deny");
        assert_denied(p, "fs", "read_file2", "{}", DENIED, "default deny");
        assert_denied(p, "fs", "read_fil", "{}", DENIED, "default deny");
        assert_allowed(p, "everything", "echo", NULL, "allow everything.*");
        assert_allowed(p, "everything", "a.b.c", NULL, "allow everything.*");
        /* A wildcard covers one upstream, matched by whole name. */
        assert_denied(p, "everything2", "echo", NULL, DENIED, "default deny");
        assert_denied(p, "everythin", "echo", NULL, DENIED, "default deny");
        assert_denied(p, "fs2", "read_file", NULL, DENIED, "default deny");
        /* The split is at the first dot: TOOL may hold dots. */
        allow(p, "web.a.b");
        assert_allowed(p, "web", "a.b", NULL, "allow web.a.b");
        assert_denied(p, "web.a", "b", NULL, DENIED, "default deny");
        /* An exact rule names the decision when a wildcard also matches. */
        allow(p, "everything.echo");
        assert_allowed(p, "everything", "echo", NULL, "allow everything.echo");
        assert_true(glove_policy_tool_visible(p, "fs", "read_file"));
        assert_true(glove_policy_tool_visible(p, "everything", "anything"));
        assert_false(glove_policy_tool_visible(p, "fs", "write_file"));
}

static void test_deny_wins(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.*");
        deny(p, "fs.write_file");
        assert_allowed(p, "fs", "read_file", NULL, "allow fs.*");
        assert_denied(p, "fs", "write_file", NULL, DENIED, "deny fs.write_file");
        assert_false(glove_policy_tool_visible(p, "fs", "write_file"));
        assert_true(glove_policy_tool_visible(p, "fs", "read_file"));

        /* A deny wildcard beats an exact allow, whatever the order. */
        _cleanup_policy_ struct glove_policy *q = new_policy();
        deny(q, "git.*");
        allow(q, "git.status");
        allow(q, "git.*");
        assert_denied(q, "git", "status", NULL, DENIED, "deny git.*");
        assert_false(glove_policy_tool_visible(q, "git", "status"));

        /* The same exact tool allowed and denied: denied. */
        _cleanup_policy_ struct glove_policy *r = new_policy();
        allow(r, "a.b");
        deny(r, "a.b");
        assert_denied(r, "a", "b", NULL, DENIED, "deny a.b");

        /* Exact deny named before a wildcard deny. */
        deny(r, "a.*");
        assert_denied(r, "a", "b", NULL, DENIED, "deny a.b");
        assert_denied(r, "a", "c", NULL, DENIED, "deny a.*");

        /* Deny beats arguments: even rules that pass do not matter. */
        _cleanup_policy_ struct glove_policy *s = new_policy();
        allow(s, "fs.read_file");
        deny(s, "fs.read_file");
        allow_arg(s, "fs.read_file:/path=/data/");
        assert_denied(s, "fs", "read_file", "{\"path\":\"/data/x\"}", DENIED, "deny fs.read_file");
}

static void test_duplicate_rules_are_one(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.read_file");
        allow(p, "fs.read_file");
        deny(p, "fs.x");
        deny(p, "fs.x");
        assert_int_equal(p->n_allow, 1);
        assert_int_equal(p->n_deny, 1);
        assert_int_equal(p->n_rules, 2);
}

static void test_visibility_ignores_argument_rules(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.read_file");
        allow_arg(p, "fs.read_file:/path=/data/");
        assert_true(glove_policy_tool_visible(p, "fs", "read_file"));
        /* Argument rules alone allow nothing (--allow-arg only restricts). */
        allow_arg(p, "fs.other:/path=/data/");
        assert_false(glove_policy_tool_visible(p, "fs", "other"));
        assert_denied(p, "fs", "other", "{\"path\":\"/data/x\"}", DENIED, "default deny");
}

/* Tool names an upstream reports that no rule could name are never visible
 * nor callable, not even through NAME.*. */
static void test_unnameable_tools(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.*");
        const char *bad[] = {"", "a\nb", "a\x7f", "a\xc2\x85", "\xff", "*", "a*", NULL};
        for (size_t i = 0; bad[i]; i++) {
                assert_false(glove_policy_tool_visible(p, "fs", bad[i]));
                assert_denied(p, "fs", bad[i], NULL, DENIED, "default deny");
        }
        char longtool[GLOVE_POLICY_TOOL_MAX + 2];
        memset(longtool, 't', sizeof(longtool) - 1);
        longtool[sizeof(longtool) - 1] = '\0';
        assert_false(glove_policy_tool_visible(p, "fs", longtool));
        longtool[GLOVE_POLICY_TOOL_MAX] = '\0';
        assert_true(glove_policy_tool_visible(p, "fs", longtool));
        assert_false(glove_policy_tool_visible(p, NULL, "x"));
        assert_false(glove_policy_tool_visible(p, "fs", NULL));
        assert_denied(p, NULL, "x", NULL, DENIED, "default deny");
}

/* A counted name (a JSON string) is judged whole: a NUL anywhere makes it
 * unnameable, never the prefix before the NUL (issue: an upstream's
 * "bad\u0000hidden" must not become the callable "bad"). */
static void test_tool_name_valid_counted(void **state) {
        (void)state;
        assert_true(glove_policy_tool_name_valid("bad", 3));
        assert_false(glove_policy_tool_name_valid("bad\0hidden", 10));
        assert_false(glove_policy_tool_name_valid("bad\0", 4));
        assert_false(glove_policy_tool_name_valid("\0bad", 4));
        assert_false(glove_policy_tool_name_valid("", 0));
        assert_false(glove_policy_tool_name_valid(NULL, 0));
        assert_false(glove_policy_tool_name_valid("a*", 2));
        assert_false(glove_policy_tool_name_valid("a\x7f", 2));
        assert_false(glove_policy_tool_name_valid("\xc3", 1));
        assert_true(glove_policy_tool_name_valid("\xc3\xa9", 2));
        char t[GLOVE_POLICY_TOOL_MAX + 1];
        memset(t, 't', sizeof(t));
        assert_true(glove_policy_tool_name_valid(t, GLOVE_POLICY_TOOL_MAX));
        assert_false(glove_policy_tool_name_valid(t, GLOVE_POLICY_TOOL_MAX + 1));
}

static void test_bad_tool_names(void **state) {
        (void)state;
        char name33[64], tool129[160], ok_long[200];
        memset(name33, 'n', 33);
        strcpy(name33 + 33, ".t");
        tool129[0] = 'a';
        tool129[1] = '.';
        memset(tool129 + 2, 't', 129);
        tool129[131] = '\0';
        memset(ok_long, 'n', 32);
        ok_long[32] = '.';
        memset(ok_long + 33, 't', 128);
        ok_long[161] = '\0';
        const char *bad[] = {
                "", "fs", ".tool", "fs.", "FS.tool", "f s.tool", "fs.a\tb", "fs.a\x7f",
                "fs.a\xc2\x80", "fs.\xff", "fs.\xc3", "fs.read_*", "fs.**", "fs.*x", "*.tool", "*.*", "é.x",
                name33, tool129, NULL,
        };
        _cleanup_policy_ struct glove_policy *p = new_policy();
        for (size_t i = 0; bad[i]; i++) {
                struct glove_error err = {0};
                assert_int_equal(glove_policy_allow(p, bad[i], &err), -EINVAL);
                assert_string_equal(err.code, "policy.bad_tool_name");
                /* The module names no command-line flag (the CLI adds it). */
                assert_null(strstr(err.message, "--allow"));
                struct glove_error err2 = {0};
                assert_int_equal(glove_policy_deny(p, bad[i], &err2), -EINVAL);
                assert_string_equal(err2.code, "policy.bad_tool_name");
        }
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow(p, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "policy.bad_tool_name");
        assert_int_equal(p->n_rules, 0);
        /* Good ones, at the limits. */
        allow(p, ok_long);
        allow(p, "a-b_c9.x");
        allow(p, "fs.read:file=x y"); /* TOOL is any printable text */
        allow(p, "fs.\xc3\xa9t\xc3\xa9");
        assert_allowed(p, "fs", "\xc3\xa9t\xc3\xa9", NULL, "allow fs.\xc3\xa9t\xc3\xa9");
        /* A NULL err is allowed. */
        assert_int_equal(glove_policy_allow(p, "bad", NULL), -EINVAL);
}

static void test_rule_limits(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        char q[64];
        for (int i = 0; i < GLOVE_POLICY_RULES_MAX; i++) {
                snprintf(q, sizeof(q), "up.tool%d", i);
                if (i % 2)
                        allow(p, q);
                else
                        deny(p, q);
        }
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow(p, "up.one_more", &err), -ENOSPC);
        assert_string_equal(err.code, "policy.too_many_rules");
        struct glove_error err2 = {0};
        assert_int_equal(glove_policy_allow_arg(p, "up.tool1:/a=b", &err2), -ENOSPC);
        assert_string_equal(err2.code, "policy.too_many_rules");
        allow(p, "up.tool1"); /* a rule already held is no new rule */

        _cleanup_policy_ struct glove_policy *t = new_policy();
        for (int i = 0; i < GLOVE_POLICY_TOOL_RULES_MAX; i++) {
                snprintf(q, sizeof(q), "fs.x:/p=v%d", i);
                allow_arg(t, q);
        }
        struct glove_error err3 = {0};
        assert_int_equal(glove_policy_allow_arg(t, "fs.x:/p=last", &err3), -ENOSPC);
        assert_string_equal(err3.code, "policy.too_many_rules");
        allow_arg(t, "fs.y:/p=other tool");
}

/* ---- --allow-arg ---- */

static void test_allow_arg_parsing_errors(void **state) {
        (void)state;
        char long_ptr[GLOVE_POLICY_POINTER_MAX + 32];
        snprintf(long_ptr, sizeof(long_ptr), "fs.t:/%0*d=x", GLOVE_POLICY_POINTER_MAX, 0);
        char *long_prefix = malloc(GLOVE_POLICY_VALUE_MAX + 32);
        assert_non_null(long_prefix);
        int n = snprintf(long_prefix, 32, "fs.t:/p=");
        memset(long_prefix + n, 'v', GLOVE_POLICY_VALUE_MAX + 1);
        long_prefix[n + GLOVE_POLICY_VALUE_MAX + 1] = '\0';
        const struct {
                const char *spec;
                const char *in_message;
        } cases[] = {
                {"", "empty"},
                {"fs.read_file", "no ':'"},
                {"fs.read_file:/path", "no '='"},
                {"fs.read_file/path=/data", "no ':'"},
                {"fs.read_file:path=/data", "start with \"/\""},
                {"fs.read_file:=/data", "start with \"/\""},
                {"fs.read_file:/a~2=/data", "followed by 0 or 1"},
                {"fs.read_file:/a~=/data", "followed by 0 or 1"},
                {"fs.read_file:/path=", "PREFIX after '=' is empty"},
                {"fs.read_file:/\xff=x", "UTF-8"},
                {"fs.read_file:/p=\xff", "UTF-8"},
                {"fs.*:/path=/data", "wildcard"},
                {"fs:/path=/data", "no dot"},
                {":/path=/data", "no dot"},
                {"FS.x:/path=/data", "NAME"},
                {"fs.:/path=/data", "empty"},
                {"fs.a\tb:/path=/data", "control"},
                {long_ptr, "longer than 256"},
                {long_prefix, "longer than 4095"},
        };
        _cleanup_policy_ struct glove_policy *p = new_policy();
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_error err = {0};
                int r = glove_policy_allow_arg(p, cases[i].spec, &err);
                if (r != -EINVAL || !err.code || strcmp(err.code, "policy.bad_arg_rule") != 0 ||
                    !strstr(err.message, cases[i].in_message))
                        fail_msg("case %zu: r=%d %s: %s", i, r, err.code ? err.code : "-", err.message);
                assert_null(strstr(err.message, "--allow-arg")); /* the CLI adds the flag */
        }
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow_arg(p, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "policy.bad_arg_rule");
        assert_int_equal(p->n_rules, 0);
        free(long_prefix);
}

static void test_allow_arg_prefix(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.*");
        /* The first ':' ends TOOL and the first '=' after it ends POINTER;
         * PREFIX may hold both. */
        allow_arg(p, "fs.write_file:/opts/mode=a=b:c");
        const char *rule = "fs.write_file:/opts/mode prefix \"a=b:c\"";
        assert_allowed(p, "fs", "write_file", "{\"opts\":{\"mode\":\"a=b:c\"}}", "allow fs.*");
        assert_allowed(p, "fs", "write_file", "{\"opts\":{\"mode\":\"a=b:cd\"}}", "allow fs.*");
        assert_denied(p, "fs", "write_file", "{\"opts\":{\"mode\":\"a=b:\"}}", DENIED, rule);
        assert_denied(p, "fs", "write_file", "{\"opts\":{\"mode\":\"xa=b:c\"}}", DENIED, rule);
        assert_denied(p, "fs", "write_file", "{\"opts\":{}}", DENIED, rule);
        assert_denied(p, "fs", "write_file", "{}", DENIED, rule);
        assert_denied(p, "fs", "write_file", NULL, DENIED, rule);
        assert_denied(p, "fs", "write_file", "{\"opts\":{\"mode\":1}}", DENIED, rule);
        assert_denied(p, "fs", "write_file", "{\"opts\":{\"mode\":[\"a=b:c\"]}}", DENIED, rule);
        /* The other tools of the upstream are not affected. */
        assert_allowed(p, "fs", "read_file", "{}", "allow fs.*");
        /* Escaped pointers. */
        allow_arg(p, "fs.esc:/a~1b/~0=x");
        assert_allowed(p, "fs", "esc", "{\"a/b\":{\"~\":\"xy\"}}", "allow fs.*");
        assert_denied(p, "fs", "esc", "{\"a/b\":{\"~\":\"y\"}}", DENIED, "fs.esc:/a~1b/~0 prefix \"x\"");
        /* Array elements. */
        allow_arg(p, "fs.arr:/paths/1=/data/");
        assert_allowed(p, "fs", "arr", "{\"paths\":[\"/etc\",\"/data/x\"]}", "allow fs.*");
        assert_denied(p, "fs", "arr", "{\"paths\":[\"/data/x\",\"/etc\"]}", DENIED, "fs.arr:/paths/1 prefix \"/data/\"");
}

/* ---- each rule kind ---- */

static void test_arguments_not_object(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.*");
        const char *bad[] = {"[]", "\"x\"", "1", "null", "true", NULL};
        for (size_t i = 0; bad[i]; i++)
                assert_denied(p, "fs", "t", bad[i], "invalid_params", "arguments must be an object");
        /* A tool not allowed is policy_denied whatever its arguments. */
        assert_denied(p, "git", "t", "[]", DENIED, "default deny");
        /* Absent arguments, no rules: allowed. */
        assert_allowed(p, "fs", "t", NULL, "allow fs.*");
}

static void test_kind_exact_and_one_of(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        load(p, "{\"version\":1,\"allow\":[\"db.query\"],\"arguments\":{\"db.query\":["
                "{\"pointer\":\"/db\",\"kind\":\"exact\",\"value\":\"prod\"},"
                "{\"pointer\":\"/mode\",\"kind\":\"one_of\",\"values\":[\"read\",\"\",\"list\"]}]}}");
        const char *exact = "db.query:/db exact \"prod\"";
        const char *one_of = "db.query:/mode one_of [\"read\",\"\",\"list\"]";
        assert_allowed(p, "db", "query", "{\"db\":\"prod\",\"mode\":\"read\"}", "allow db.query");
        assert_allowed(p, "db", "query", "{\"db\":\"prod\",\"mode\":\"\"}", "allow db.query");
        assert_allowed(p, "db", "query", "{\"db\":\"prod\",\"mode\":\"list\",\"other\":1}", "allow db.query");
        assert_denied(p, "db", "query", "{\"db\":\"prod2\",\"mode\":\"read\"}", DENIED, exact);
        assert_denied(p, "db", "query", "{\"db\":\"pro\",\"mode\":\"read\"}", DENIED, exact);
        assert_denied(p, "db", "query", "{\"db\":\"PROD\",\"mode\":\"read\"}", DENIED, exact);
        assert_denied(p, "db", "query", "{\"db\":null,\"mode\":\"read\"}", DENIED, exact);
        assert_denied(p, "db", "query", "{\"mode\":\"read\"}", DENIED, exact);
        assert_denied(p, "db", "query", "{\"db\":\"prod\",\"mode\":\"write\"}", DENIED, one_of);
        assert_denied(p, "db", "query", "{\"db\":\"prod\",\"mode\":\"rea\"}", DENIED, one_of);
        assert_denied(p, "db", "query", "{\"db\":\"prod\",\"mode\":\"reads\"}", DENIED, one_of);
        assert_denied(p, "db", "query", "{\"db\":\"prod\",\"mode\":true}", DENIED, one_of);
        assert_denied(p, "db", "query", "{\"db\":\"prod\"}", DENIED, one_of);
        /* Rules are checked in order: the first failing one is named. */
        assert_denied(p, "db", "query", "{\"db\":\"x\",\"mode\":\"x\"}", DENIED, exact);
}

static void test_kind_max_length(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        load(p, "{\"version\":1,\"allow\":[\"t.echo\",\"t.empty\"],\"arguments\":{"
                "\"t.echo\":[{\"pointer\":\"/message\",\"kind\":\"max_length\",\"max\":4}],"
                "\"t.empty\":[{\"pointer\":\"/s\",\"kind\":\"max_length\",\"max\":0}]}}");
        const char *rule = "t.echo:/message max_length 4";
        assert_allowed(p, "t", "echo", "{\"message\":\"abcd\"}", "allow t.echo");
        assert_allowed(p, "t", "echo", "{\"message\":\"\"}", "allow t.echo");
        assert_allowed(p, "t", "echo", "{\"message\":\"\xc3\xa9\xc3\xa9\"}", "allow t.echo"); /* 4 bytes */
        assert_denied(p, "t", "echo", "{\"message\":\"abcde\"}", DENIED, rule);
        assert_denied(p, "t", "echo", "{\"message\":\"\xc3\xa9\xc3\xa9x\"}", DENIED, rule); /* bytes, not chars */
        /* Non-strings are refused, however short their text. */
        assert_denied(p, "t", "echo", "{\"message\":1}", DENIED, rule);
        assert_denied(p, "t", "echo", "{\"message\":[]}", DENIED, rule);
        assert_denied(p, "t", "echo", "{\"message\":{}}", DENIED, rule);
        assert_denied(p, "t", "echo", "{\"message\":null}", DENIED, rule);
        assert_denied(p, "t", "echo", "{}", DENIED, rule);
        assert_allowed(p, "t", "empty", "{\"s\":\"\"}", "allow t.empty");
        assert_denied(p, "t", "empty", "{\"s\":\"x\"}", DENIED, "t.empty:/s max_length 0");
}

/* Strings with NUL (possible in jansson through json_stringn) satisfy no
 * rule of any kind. */
static void test_nul_bytes_refused_by_every_kind(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        load(p, "{\"version\":1,\"allow\":[\"u.*\"],\"arguments\":{"
                "\"u.prefix\":[{\"pointer\":\"/v\",\"kind\":\"prefix\",\"value\":\"/data/\"}],"
                "\"u.exact\":[{\"pointer\":\"/v\",\"kind\":\"exact\",\"value\":\"ab\"}],"
                "\"u.one_of\":[{\"pointer\":\"/v\",\"kind\":\"one_of\",\"values\":[\"ab\"]}],"
                "\"u.path\":[{\"pointer\":\"/v\",\"kind\":\"path_within\",\"root\":\"/data\"}],"
                "\"u.len\":[{\"pointer\":\"/v\",\"kind\":\"max_length\",\"max\":100}]}}");
        const struct {
                const char *tool;
                const char *bytes;
                size_t len;
        } cases[] = {
                {"prefix", "/data/x\0/../../etc", 18},
                {"exact", "ab\0", 3},
                {"exact", "a\0b", 3},
                {"one_of", "ab\0", 3},
                {"path", "/data/x\0y", 9},
                {"path", "/data\0", 6},
                {"len", "\0", 1},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_json_ json_t *args = json_object();
                json_object_set_new(args, "v", json_stringn(cases[i].bytes, cases[i].len));
                /* Without the NUL the same value passes. */
                _cleanup_json_ json_t *clean = json_object();
                json_object_set_new(clean, "v", json_string(cases[i].bytes));
                struct glove_policy_verdict v;
                glove_policy_check_call(p, "u", cases[i].tool, clean, &v);
                if (!v.allowed && strcmp(cases[i].tool, "exact") != 0)
                        fail_msg("case %zu: clean value refused by %s", i, v.rule);
                glove_policy_check_call(p, "u", cases[i].tool, args, &v);
                if (v.allowed)
                        fail_msg("case %zu: NUL value allowed", i);
                assert_string_equal(v.reason, DENIED);
                assert_non_null(strstr(v.rule, cases[i].tool));
        }
}

/* path_within, directly: root, value, expected. */
static void test_path_within_table(void **state) {
        (void)state;
        const struct {
                const char *root;
                const char *path;
                bool ok;
        } cases[] = {
                {"/data", "/data", true},
                {"/data", "/data/", true},
                {"/data", "/data/x", true},
                {"/data", "/data/x/y.txt", true},
                {"/data", "/data/x/", true},
                {"/data", "/data//x", true},
                {"/data", "//data/x", true},
                {"/data", "/data/./x", true},
                {"/data", "/./data/x", true},
                {"/data", "/data/.", true},
                {"/data", "/data/...", true},
                {"/data", "/data/..x", true},
                {"/data", "/data/x..", true},
                {"/data", "/data/.hidden", true},
                {"/data", "/data/x/../y", false},  /* any ".." is refused, even beneath */
                {"/data", "/data/..", false},
                {"/data", "/data/../etc/passwd", false},
                {"/data", "/data/x/../../etc", false},
                {"/data", "/../data/x", false},
                {"/data", "/data/x/..", false},
                {"/data", "/data/x/../", false},
                {"/data", "/data2", false},
                {"/data", "/data2/x", false},
                {"/data", "/dat", false},
                {"/data", "/", false},
                {"/data", "//", false},
                {"/data", "/etc/passwd", false},
                {"/data", "data/x", false},
                {"/data", "./data/x", false},
                {"/data", "../data/x", false},
                {"/data", "", false},
                {"/data", "~/data", false},
                {"/data", "/DATA/x", false},
                {"/a/b", "/a/b/c", true},
                {"/a/b", "/a//b/c", true},
                {"/a/b", "/a/./b", true},
                {"/a/b", "/a", false},
                {"/a/b", "/a/bc", false},
                {"/a/b", "/a/c/b", false},
                {"/", "/", true},
                {"/", "/etc/passwd", true},
                {"/", "//x", true},
                {"/", "/x/../y", false},
                {"/", "x", false},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                bool got = glove_policy_path_within(cases[i].path, strlen(cases[i].path), cases[i].root);
                if (got != cases[i].ok)
                        fail_msg("root %s path \"%s\": got %d", cases[i].root, cases[i].path, got);
        }
        /* Bounded: a path over GLOVE_PATH_MAX - 1 bytes is refused. */
        char *longp = malloc(GLOVE_PATH_MAX + 1);
        assert_non_null(longp);
        memcpy(longp, "/data/", 6);
        memset(longp + 6, 'x', GLOVE_PATH_MAX - 6);
        assert_false(glove_policy_path_within(longp, GLOVE_PATH_MAX, "/data"));
        assert_true(glove_policy_path_within(longp, GLOVE_PATH_MAX - 1, "/data"));
        free(longp);
}

static void test_kind_path_within(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.read_file");
        load(p, "{\"version\":1,\"arguments\":{\"fs.read_file\":["
                "{\"pointer\":\"/path\",\"kind\":\"path_within\",\"root\":\"/data\"}]}}");
        const char *rule = "fs.read_file:/path path_within /data";
        assert_allowed(p, "fs", "read_file", "{\"path\":\"/data/notes.txt\"}", "allow fs.read_file");
        assert_allowed(p, "fs", "read_file", "{\"path\":\"/data\"}", "allow fs.read_file");
        assert_allowed(p, "fs", "read_file", "{\"path\":\"/data/sub/\"}", "allow fs.read_file");
        assert_allowed(p, "fs", "read_file", "{\"path\":\"//data//sub\"}", "allow fs.read_file");
        assert_denied(p, "fs", "read_file", "{\"path\":\"/data/../etc/passwd\"}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":\"/data/x/../../etc\"}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":\"../etc/passwd\"}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":\"notes.txt\"}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":\"/data2/x\"}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":\"/etc/passwd\"}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":[\"/data/x\"]}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":{\"p\":\"/data/x\"}}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":7}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"path\":null}", DENIED, rule);
        assert_denied(p, "fs", "read_file", "{\"file\":\"/data/x\"}", DENIED, rule);
        assert_denied(p, "fs", "read_file", NULL, DENIED, rule);
}

static void test_kind_prefix_in_file(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        load(p, "{\"version\":1,\"allow\":[\"web.fetch\"],\"arguments\":{\"web.fetch\":["
                "{\"pointer\":\"/url\",\"kind\":\"prefix\",\"value\":\"https://example.org/\"}]}}");
        const char *rule = "web.fetch:/url prefix \"https://example.org/\"";
        assert_allowed(p, "web", "fetch", "{\"url\":\"https://example.org/\"}", "allow web.fetch");
        assert_allowed(p, "web", "fetch", "{\"url\":\"https://example.org/a?b\"}", "allow web.fetch");
        assert_denied(p, "web", "fetch", "{\"url\":\"https://example.org\"}", DENIED, rule);
        assert_denied(p, "web", "fetch", "{\"url\":\"https://example.org.evil/\"}", DENIED, rule);
        assert_denied(p, "web", "fetch", "{\"url\":\"HTTPS://example.org/\"}", DENIED, rule);
        assert_denied(p, "web", "fetch", "{\"url\":\" https://example.org/\"}", DENIED, rule);
        assert_denied(p, "web", "fetch", "{\"url\":false}", DENIED, rule);
}

/* Every argument rule of a tool must pass, wherever it came from. */
static void test_all_rules_must_pass(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "fs.write_file");
        allow_arg(p, "fs.write_file:/path=/data/");
        load(p, "{\"version\":1,\"arguments\":{\"fs.write_file\":["
                "{\"pointer\":\"/path\",\"kind\":\"path_within\",\"root\":\"/data\"},"
                "{\"pointer\":\"/content\",\"kind\":\"max_length\",\"max\":5}]}}");
        assert_allowed(p, "fs", "write_file", "{\"path\":\"/data/a\",\"content\":\"hello\"}", "allow fs.write_file");
        assert_denied(p, "fs", "write_file", "{\"path\":\"/data/../etc\",\"content\":\"x\"}", DENIED,
                      "fs.write_file:/path path_within /data");
        assert_denied(p, "fs", "write_file", "{\"path\":\"/data/a\",\"content\":\"hello!\"}", DENIED,
                      "fs.write_file:/content max_length 5");
        assert_denied(p, "fs", "write_file", "{\"path\":\"/database\",\"content\":\"x\"}", DENIED,
                      "fs.write_file:/path prefix \"/data/\"");
}

/* The rule text escapes control characters and quotes, and is cut with
 * "..." when longer than a verdict holds. */
static void test_rule_text(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        allow(p, "t.*");
        load(p, "{\"version\":1,\"arguments\":{\"t.q\":["
                "{\"pointer\":\"/a\\nb\",\"kind\":\"exact\",\"value\":\"x\\\"y\\\\z\\u0001\"}]}}");
        assert_denied(p, "t", "q", "{}", DENIED, "t.q:/a\\u000ab exact \"x\\\"y\\\\z\\u0001\"");

        char *text = malloc(8192);
        assert_non_null(text);
        int n = snprintf(text, 8192, "{\"version\":1,\"arguments\":{\"t.long\":["
                                     "{\"pointer\":\"/v\",\"kind\":\"prefix\",\"value\":\"");
        for (int i = 0; i < 300; i++)
                n += snprintf(text + n, 8192 - (size_t)n, "\xc3\xa9"); /* 600 bytes of é */
        snprintf(text + n, 8192 - (size_t)n, "\"}]}}");
        load(p, text);
        free(text);
        struct glove_policy_verdict v = decide(p, "t", "long", "{}");
        assert_false(v.allowed);
        size_t len = strlen(v.rule);
        assert_true(len < GLOVE_POLICY_RULE_MAX);
        assert_true(len > GLOVE_POLICY_RULE_MAX - 10);
        assert_string_equal(v.rule + len - 3, "...");
        assert_memory_equal(v.rule, "t.long:/v prefix \"\xc3\xa9", 20);
        /* Cut at a UTF-8 boundary: what precedes "..." is whole characters. */
        assert_int_equal((len - 3 - strlen("t.long:/v prefix \"")) % 2, 0);
}

/* The rules as data: every rule in order, upstream names checked, the
 * launch record's JSON. */
static void test_rules_as_data(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        assert_int_equal(glove_policy_allow(p, "fs.read_file", &err), 0);
        assert_int_equal(glove_policy_allow(p, "git.*", &err), 0);
        assert_int_equal(glove_policy_deny(p, "fs.write_file", &err), 0);
        assert_int_equal(glove_policy_allow_arg(p, "fs.read_file:/path=/data/", &err), 0);
        struct glove_policy_rule_ref r;
        assert_true(glove_policy_rule_at(p, 0, &r));
        assert_string_equal(r.kind, "allow");
        assert_string_equal(r.qualified, "fs.read_file");
        assert_int_equal(r.name_len, 2);
        assert_false(r.wildcard);
        assert_true(glove_policy_rule_at(p, 1, &r));
        assert_true(r.wildcard);
        assert_int_equal(r.name_len, 3);
        assert_true(glove_policy_rule_at(p, 2, &r));
        assert_string_equal(r.kind, "deny");
        assert_true(glove_policy_rule_at(p, 3, &r));
        assert_string_equal(r.kind, "arguments");
        assert_string_equal(r.qualified, "fs.read_file");
        assert_false(glove_policy_rule_at(p, 4, &r));

        const char *both[] = {"fs", "git"};
        assert_int_equal(glove_policy_check_upstreams(p, both, 2, &err), 0);
        const char *one[] = {"fs"};
        assert_int_equal(glove_policy_check_upstreams(p, one, 1, &err), -EINVAL);
        assert_string_equal(err.code, "policy.unknown_upstream");
        assert_non_null(strstr(err.message, "allow git.*: no upstream is named git (the upstreams are: fs)"));
        glove_error_clear(&err);
        /* A name that is a prefix of another is not that other. */
        const char *prefix[] = {"f", "gi", "git"};
        assert_int_equal(glove_policy_check_upstreams(p, prefix, 3, &err), -EINVAL);
        assert_non_null(strstr(err.message, "no upstream is named fs"));
        glove_error_clear(&err);

        _cleanup_json_ json_t *j = glove_policy_to_json(p);
        assert_non_null(j);
        _cleanup_free_ char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_string_equal(text, "{\"allow\":[\"fs.read_file\",\"git.*\"],\"deny\":[\"fs.write_file\"],"
                                  "\"arguments\":{\"fs.read_file\":[\"fs.read_file:/path prefix \\\"/data/\\\"\"]}}");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rules_as_data),
                cmocka_unit_test(test_default_deny),
                cmocka_unit_test(test_allow_exact_and_wildcard),
                cmocka_unit_test(test_deny_wins),
                cmocka_unit_test(test_duplicate_rules_are_one),
                cmocka_unit_test(test_visibility_ignores_argument_rules),
                cmocka_unit_test(test_unnameable_tools),
                cmocka_unit_test(test_tool_name_valid_counted),
                cmocka_unit_test(test_bad_tool_names),
                cmocka_unit_test(test_rule_limits),
                cmocka_unit_test(test_allow_arg_parsing_errors),
                cmocka_unit_test(test_allow_arg_prefix),
                cmocka_unit_test(test_arguments_not_object),
                cmocka_unit_test(test_kind_exact_and_one_of),
                cmocka_unit_test(test_kind_max_length),
                cmocka_unit_test(test_nul_bytes_refused_by_every_kind),
                cmocka_unit_test(test_path_within_table),
                cmocka_unit_test(test_kind_path_within),
                cmocka_unit_test(test_kind_prefix_in_file),
                cmocka_unit_test(test_all_rules_must_pass),
                cmocka_unit_test(test_rule_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

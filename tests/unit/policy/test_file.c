/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the policy file (glove_policy_load_json/_load_file,
 * docs/policy.md): one fixture per rejection reason under
 * tests/fixtures/policy/, named "<expected code>--<reason>.json", and valid
 * examples named "valid--<name>.json". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/policy/policy.h"
#include "internal.h"

#ifndef POLICY_FIXTURES
#error "POLICY_FIXTURES must name tests/fixtures/policy"
#endif

static void policy_freep(struct glove_policy **p) {
        glove_policy_free(*p);
}
#define _cleanup_policy_ _cleanup_(policy_freep)

static struct glove_policy *new_policy(void) {
        struct glove_policy *p = NULL;
        assert_int_equal(glove_policy_new(&p), 0);
        return p;
}

static const char *fixture(const char *name) {
        static char path[1024];
        snprintf(path, sizeof(path), "%s/%s", POLICY_FIXTURES, name);
        return path;
}

/* Reads a whole fixture into a malloc'd buffer. */
static char *read_fixture(const char *name, size_t *len) {
        FILE *f = fopen(fixture(name), "rb");
        if (!f)
                fail_msg("cannot open fixture %s", name);
        char *buf = malloc(GLOVE_POLICY_FILE_MAX + 1);
        assert_non_null(buf);
        *len = fread(buf, 1, GLOVE_POLICY_FILE_MAX + 1, f);
        fclose(f);
        return buf;
}

#define RULE0 "$.arguments.fs.read_file[0]"

/* Every rejection fixture: its file, and the JSON path its message must start
 * with (NULL where the JSON text itself is broken and the message gives a
 * line, column or offset instead). The code is the file name's prefix. */
static const struct {
        const char *file;
        const char *path;
} rejections[] = {
        {"policy.bad_pointer--bad-escape.json", RULE0 ".pointer"},
        {"policy.bad_pointer--empty.json", RULE0 ".pointer"},
        {"policy.bad_pointer--relative.json", RULE0 ".pointer"},
        {"policy.bad_pointer--trailing-tilde.json", RULE0 ".pointer"},
        {"policy.bad_pointer--uri-fragment.json", RULE0 ".pointer"},
        {"policy.bad_root--dot-dot.json", RULE0 ".root"},
        {"policy.bad_root--dot.json", RULE0 ".root"},
        {"policy.bad_root--double-slash.json", RULE0 ".root"},
        {"policy.bad_root--empty.json", RULE0 ".root"},
        {"policy.bad_root--relative.json", RULE0 ".root"},
        {"policy.bad_root--trailing-slash.json", RULE0 ".root"},
        {"policy.bad_tool_name--allow-no-dot.json", "$.allow[0]"},
        {"policy.bad_tool_name--arguments-key.json", "$.arguments.read_file"},
        {"policy.bad_tool_name--arguments-wildcard.json", "$.arguments.fs.*"},
        {"policy.bad_tool_name--control-character.json", "$.allow[0]"},
        {"policy.bad_tool_name--deny-uppercase-name.json", "$.deny[0]"},
        {"policy.bad_tool_name--empty-tool.json", "$.deny[0]"},
        {"policy.bad_tool_name--name-too-long.json", "$.allow[0]"},
        {"policy.bad_tool_name--star-inside-tool.json", "$.allow[0]"},
        {"policy.bad_tool_name--tool-too-long.json", "$.allow[0]"},
        {"policy.duplicate_key--rule.json", NULL},
        {"policy.duplicate_key--top-level.json", NULL},
        {"policy.duplicate_rule--allow.json", "$.allow[2]"},
        {"policy.duplicate_rule--argument-rule.json", "$.arguments.fs.read_file[2]"},
        {"policy.duplicate_rule--deny.json", "$.deny[1]"},
        {"policy.duplicate_value--one-of.json", RULE0 ".values[2]"},
        {"policy.embedded_nul--escape.json", NULL},
        {"policy.empty_list--allow.json", "$.allow"},
        {"policy.empty_list--arguments.json", "$.arguments"},
        {"policy.empty_list--deny.json", "$.deny"},
        {"policy.empty_list--one-of-values.json", RULE0 ".values"},
        {"policy.empty_list--tool-rules.json", "$.arguments.fs.read_file"},
        {"policy.empty_value--prefix.json", RULE0 ".value"},
        {"policy.invalid_utf8--key.json", NULL},
        {"policy.invalid_utf8--value.json", NULL},
        {"policy.missing_field--kind.json", RULE0 ".kind"},
        {"policy.missing_field--max.json", RULE0 ".max"},
        {"policy.missing_field--one-of-values.json", RULE0 ".values"},
        {"policy.missing_field--pointer.json", RULE0 ".pointer"},
        {"policy.missing_field--prefix-value.json", RULE0 ".value"},
        {"policy.missing_field--root.json", RULE0 ".root"},
        {"policy.missing_field--version.json", "$.version"},
        {"policy.not_object--array.json", "$"},
        {"policy.not_object--string.json", "$"},
        {"policy.out_of_range--max-negative.json", RULE0 ".max"},
        {"policy.out_of_range--max-too-large.json", RULE0 ".max"},
        {"policy.out_of_range--version-beyond-int64.json", NULL},
        {"policy.syntax--comment.json", NULL},
        {"policy.syntax--empty-file.json", NULL},
        {"policy.syntax--trailing-data.json", NULL},
        {"policy.syntax--truncated.json", NULL},
        {"policy.too_deep--nesting.json", NULL},
        {"policy.too_long--one-of-value.json", RULE0 ".values[1]"},
        {"policy.too_long--pointer.json", RULE0 ".pointer"},
        {"policy.too_long--root.json", RULE0 ".root"},
        {"policy.too_long--value.json", RULE0 ".value"},
        {"policy.too_many_rules--allow-and-deny.json", "$.deny[424]"},
        {"policy.too_many_rules--allow.json", "$.allow"},
        {"policy.too_many_rules--tool.json", "$.arguments.fs.read_file"},
        {"policy.too_many_values--one-of.json", RULE0 ".values"},
        {"policy.unknown_field--rule-misspelt.json", RULE0 ".roots"},
        {"policy.unknown_field--rule-root-on-prefix.json", RULE0 ".root"},
        {"policy.unknown_field--top-level.json", "$.comment"},
        {"policy.unknown_kind--case.json", RULE0 ".kind"},
        {"policy.unknown_kind--regex.json", RULE0 ".kind"},
        {"policy.unsupported_version--0.json", "$.version"},
        {"policy.unsupported_version--2.json", "$.version"},
        {"policy.unknown_field--upstream-client-key.json", "$.upstreams.fs.client.smell"},
        {"policy.unknown_field--upstream-sandbox.json", "$.upstreams.fs.sandbox.read"},
        {"policy.unknown_field--upstream-key.json", "$.upstreams.fs.other"},
        {"policy.wrong_type--upstream-client-value.json", "$.upstreams.fs.client.roots"},
        {"policy.wrong_type--upstream-entry.json", "$.upstreams.fs"},
        {"policy.empty_list--upstreams.json", "$.upstreams"},
        {"policy.empty_list--upstream-client.json", "$.upstreams.fs.client"},
        {"policy.wrong_type--allow-item.json", "$.allow[1]"},
        {"policy.wrong_type--allow-string.json", "$.allow"},
        {"policy.wrong_type--arguments-array.json", "$.arguments"},
        {"policy.wrong_type--deny-item-null.json", "$.deny[0]"},
        {"policy.wrong_type--kind-number.json", RULE0 ".kind"},
        {"policy.wrong_type--max-real.json", RULE0 ".max"},
        {"policy.wrong_type--max-string.json", RULE0 ".max"},
        {"policy.wrong_type--one-of-item.json", RULE0 ".values[1]"},
        {"policy.wrong_type--pointer-array.json", RULE0 ".pointer"},
        {"policy.wrong_type--root-null.json", RULE0 ".root"},
        {"policy.wrong_type--rule-string.json", RULE0},
        {"policy.wrong_type--tool-rules-object.json", "$.arguments.fs.read_file"},
        {"policy.wrong_type--value-number.json", RULE0 ".value"},
        {"policy.wrong_type--values-string.json", RULE0 ".values"},
        {"policy.wrong_type--version-real.json", "$.version"},
        {"policy.wrong_type--version-string.json", "$.version"},
        /* "upstreams" and each upstream's "sandbox" (upstreams.c). */
        {"policy.unknown_field--sandbox-key.json", "$.upstreams.py.sandbox.net"},
        {"policy.bad_grant--sandbox-relative.json", "$.upstreams.py.sandbox.ro[0]"},
        {"policy.bad_env_name--sandbox.json", "$.upstreams.py.sandbox.env[0]"},
        {"policy.bad_upstream_name--uppercase.json", "$.upstreams.PY"},
        {"policy.uncontained_grants--ro.json", "$.upstreams.py.sandbox"},
        {"policy.empty_list--sandbox-ro.json", "$.upstreams.py.sandbox.ro"},
        {"policy.duplicate_rule--sandbox-env.json", "$.upstreams.py.sandbox.env[1]"},
        {"policy.wrong_type--sandbox-contained.json", "$.upstreams.py.sandbox.contained"},
        {"policy.wrong_type--upstreams-array.json", "$.upstreams"},
        {"policy.wrong_type--sandbox-egress-item.json", "$.upstreams.py.sandbox.egress[0]"},
        {"policy.too_many_grants--sandbox-ro.json", "$.upstreams.py.sandbox.ro"},
};

/* Every code a policy file's content can be refused with (docs/policy.md);
 * each must have a fixture. */
static const char *const content_codes[] = {
        "policy.syntax", "policy.not_object", "policy.duplicate_key", "policy.invalid_utf8",
        "policy.embedded_nul", "policy.too_deep", "policy.missing_field", "policy.unknown_field",
        "policy.wrong_type", "policy.out_of_range", "policy.too_long", "policy.unsupported_version",
        "policy.bad_tool_name", "policy.bad_pointer", "policy.bad_root", "policy.unknown_kind",
        "policy.empty_list", "policy.empty_value", "policy.duplicate_rule", "policy.duplicate_value",
        "policy.too_many_rules", "policy.too_many_values",
        "policy.bad_grant", "policy.bad_env_name", "policy.bad_upstream_name", "policy.uncontained_grants",
        "policy.too_many_grants",
};

/* The code a fixture's name carries: the text before "--". */
static void code_of(const char *file, char *code, size_t cap) {
        const char *sep = strstr(file, "--");
        assert_non_null(sep);
        assert_true((size_t)(sep - file) < cap);
        memcpy(code, file, (size_t)(sep - file));
        code[sep - file] = '\0';
}

static void test_rejection_fixtures(void **state) {
        (void)state;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(rejections); i++) {
                char code[64];
                size_t len;
                code_of(rejections[i].file, code, sizeof(code));
                _cleanup_free_ char *data = read_fixture(rejections[i].file, &len);
                _cleanup_policy_ struct glove_policy *p = new_policy();
                /* A rule already present stays, and nothing else is merged. */
                assert_int_equal(glove_policy_allow(p, "keep.me", NULL), 0);
                struct glove_error err = {0};
                int r = glove_policy_load_json(p, data, len, &err);
                if (r >= 0 || !err.code || strcmp(err.code, code) != 0)
                        fail_msg("%s: r=%d code=%s message=%s", rejections[i].file, r, err.code ? err.code : "-",
                                 err.message);
                assert_int_equal(-r, err.errnum);
                if (rejections[i].path) {
                        size_t n = strlen(rejections[i].path);
                        if (strncmp(err.message, rejections[i].path, n) != 0 || err.message[n] != ':')
                                fail_msg("%s: message does not start with \"%s:\": %s", rejections[i].file,
                                         rejections[i].path, err.message);
                }
                assert_int_equal(p->n_rules, 1);
                assert_int_equal(p->n_allow, 1);
                assert_int_equal(p->n_deny, 0);
                assert_int_equal(p->n_tools, 0);
                /* The same through a file, with the file's name in front. */
                struct glove_error ferr = {0};
                assert_int_equal(glove_policy_load_file(p, fixture(rejections[i].file), &ferr), r);
                assert_string_equal(ferr.code, code);
                assert_non_null(strstr(ferr.message, rejections[i].file));
        }
}

/* The fixture directory and the table agree: no fixture goes untested, and
 * every content code has at least one fixture. */
static void test_fixture_directory_complete(void **state) {
        (void)state;
        DIR *d = opendir(POLICY_FIXTURES);
        assert_non_null(d);
        size_t seen = 0, valid = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                if (strncmp(e->d_name, "valid--", 7) == 0) {
                        valid++;
                        continue;
                }
                bool found = false;
                for (size_t i = 0; i < GLOVE_ELEMENTSOF(rejections) && !found; i++)
                        found = strcmp(rejections[i].file, e->d_name) == 0;
                if (!found)
                        fail_msg("fixture %s is not in the table", e->d_name);
                seen++;
        }
        closedir(d);
        assert_int_equal(seen, GLOVE_ELEMENTSOF(rejections));
        assert_true(valid >= 3);
        for (size_t c = 0; c < GLOVE_ELEMENTSOF(content_codes); c++) {
                bool found = false;
                for (size_t i = 0; i < GLOVE_ELEMENTSOF(rejections) && !found; i++) {
                        char code[64];
                        code_of(rejections[i].file, code, sizeof(code));
                        found = strcmp(code, content_codes[c]) == 0;
                }
                if (!found)
                        fail_msg("no fixture for %s", content_codes[c]);
        }
}

/* ---- valid examples ---- */

/* "upstreams": each sandbox decoded with every member present, contained
 * unless false; an upstream without one has none; names are checked
 * against the --upstream names. */
static void test_upstreams_sandbox(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        if (glove_policy_load_file(p, fixture("valid--upstreams.json"), &err) < 0)
                fail_msg("%s %s", err.code, err.message);
        const json_t *fs = glove_policy_upstream_sandbox(p, "fs");
        assert_non_null(fs);
        assert_string_equal(json_string_value(json_array_get(json_object_get(fs, "ro"), 0)), "/opt/mcp");
        assert_string_equal(json_string_value(json_array_get(json_object_get(fs, "rw"), 0)), "/srv/data");
        assert_string_equal(json_string_value(json_array_get(json_object_get(fs, "env"), 0)), "FS_TOKEN");
        assert_string_equal(json_string_value(json_array_get(json_object_get(fs, "egress"), 0)), "api.example.com");
        assert_true(json_is_true(json_object_get(fs, "contained")));
        const json_t *py = glove_policy_upstream_sandbox(p, "py");
        assert_non_null(py);
        assert_true(json_is_false(json_object_get(py, "contained")));
        assert_int_equal(json_array_size(json_object_get(py, "ro")), 0);
        assert_int_equal(json_array_size(json_object_get(py, "env")), 1);
        assert_null(glove_policy_upstream_sandbox(p, "other"));
        const char *both[] = {"fs", "py"}, *one[] = {"fs"};
        assert_int_equal(glove_policy_check_sandbox_upstreams(p, both, 2, &err), 0);
        struct glove_error e2 = {0};
        assert_int_equal(glove_policy_check_sandbox_upstreams(p, one, 1, &e2), -EINVAL);
        assert_string_equal(e2.code, "policy.unknown_upstream");
        assert_non_null(strstr(e2.message, "py"));
        /* A policy without the file has no sandboxes. */
        _cleanup_policy_ struct glove_policy *q = new_policy();
        assert_null(glove_policy_upstream_sandbox(q, "fs"));
        assert_int_equal(glove_policy_check_sandbox_upstreams(q, one, 0, &e2), 0);
}

struct expect {
        const char *upstream, *tool, *args;
        bool allowed;
        const char *rule;
};

static void check_decisions(const char *file, const struct expect *x, size_t n) {
        _cleanup_policy_ struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        if (glove_policy_load_file(p, fixture(file), &err) < 0)
                fail_msg("%s: %s %s", file, err.code, err.message);
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *a = NULL;
                if (x[i].args) {
                        json_error_t je;
                        a = json_loads(x[i].args, 0, &je);
                        assert_non_null(a);
                }
                struct glove_policy_verdict v;
                glove_policy_check_call(p, x[i].upstream, x[i].tool, a, &v);
                if (v.allowed != x[i].allowed || strcmp(v.rule, x[i].rule) != 0)
                        fail_msg("%s case %zu (%s.%s %s): allowed=%d rule=%s", file, i, x[i].upstream, x[i].tool,
                                 x[i].args ? x[i].args : "", v.allowed, v.rule);
        }
}

static void test_valid_minimal(void **state) {
        (void)state;
        const struct expect x[] = {{"fs", "read_file", "{}", false, "default deny"}};
        check_decisions("valid--minimal.json", x, GLOVE_ELEMENTSOF(x));
}

static void test_valid_filesystem(void **state) {
        (void)state;
        const struct expect x[] = {
                {"fs", "read_file", "{\"path\":\"/data/a.txt\"}", true, "allow fs.read_file"},
                {"fs", "read_file", "{\"path\":\"/data/../etc/passwd\"}", false,
                 "fs.read_file:/path path_within /data"},
                {"fs", "read_file", "{\"path\":\"/data/x\"}", true, "allow fs.read_file"},
                {"fs", "list_directory", "{\"path\":\"/data\"}", true, "allow fs.list_directory"},
                {"fs", "list_directory", "{\"path\":\"/\"}", false, "fs.list_directory:/path path_within /data"},
                {"fs", "write_file", "{\"path\":\"/data/x\"}", false, "default deny"},
                {"everything", "add", "{\"a\":1,\"b\":2}", true, "allow everything.*"},
                {"everything", "longRunningOperation", "{}", false, "deny everything.longRunningOperation"},
                {"everything", "echo", "{\"message\":\"hi\"}", true, "allow everything.*"},
                {"everything", "echo", "{\"message\":5}", false, "everything.echo:/message max_length 1024"},
        };
        check_decisions("valid--filesystem.json", x, GLOVE_ELEMENTSOF(x));
        /* The 256-byte limit on the path, and one byte over. */
        char args[400];
        snprintf(args, sizeof(args), "{\"path\":\"/data/%0250d\"}", 0);
        const struct expect y[] = {
                {"fs", "read_file", args, true, "allow fs.read_file"},
        };
        check_decisions("valid--filesystem.json", y, GLOVE_ELEMENTSOF(y));
        snprintf(args, sizeof(args), "{\"path\":\"/data/%0251d\"}", 0);
        const struct expect z[] = {
                {"fs", "read_file", args, false, "fs.read_file:/path max_length 256"},
        };
        check_decisions("valid--filesystem.json", z, GLOVE_ELEMENTSOF(z));
}

static void test_valid_every_kind(void **state) {
        (void)state;
        const char *q = "{\"database\":\"analytics\",\"mode\":\"read\",\"sql\":\"select 1\"}";
        const struct expect x[] = {
                {"db", "query", q, true, "allow db.query"},
                {"db", "query", "{\"database\":\"billing\",\"mode\":\"read\",\"sql\":\"select 1\"}", false,
                 "db.query:/database exact \"analytics\""},
                {"db", "query", "{\"database\":\"analytics\",\"mode\":\"write\",\"sql\":\"x\"}", false,
                 "db.query:/mode one_of [\"read\",\"explain\"]"},
                {"db", "query", "{\"database\":\"analytics\",\"mode\":\"explain\"}", false,
                 "db.query:/sql max_length 4096"},
                {"web", "fetch", "{\"url\":\"https://docs.example.org/page\"}", true, "allow web.fetch"},
                {"web", "fetch", "{\"url\":\"https://docs.example.org.evil/\"}", false,
                 "web.fetch:/url prefix \"https://docs.example.org/\""},
                {"git", "status", NULL, true, "allow git.*"},
                {"git", "push", "{}", false, "deny git.push"},
                {"git", "reset", "{}", false, "deny git.reset"},
                {"git", "add", "{\"paths\":[\"/work/repo/src/a.c\",\"/etc/passwd\"]}", true, "allow git.*"},
                {"git", "add", "{\"paths\":[\"/work/repo/../x\"]}", false, "git.add:/paths/0 path_within /work/repo"},
                {"git", "add", "{\"paths\":[]}", false, "git.add:/paths/0 path_within /work/repo"},
                {"git", "commit", "{\"options\":{\"message\":\"\"},\"a/b~c\":\"\"}", true, "allow git.*"},
                {"git", "commit", "{\"options\":{\"message\":\"x\"},\"a/b~c\":\"\"}", false,
                 "git.commit:/options/message max_length 0"},
                {"git", "commit", "{\"options\":{\"message\":\"\"},\"a/b~c\":\" \"}", false,
                 "git.commit:/a~1b~0c exact \"\""},
        };
        check_decisions("valid--every-kind.json", x, GLOVE_ELEMENTSOF(x));
}

/* ---- merging with command-line rules ---- */

static void load_ok(struct glove_policy *p, const char *text) {
        struct glove_error err = {0};
        if (glove_policy_load_json(p, text, strlen(text), &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
}

static void test_merge_with_command_line(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        assert_int_equal(glove_policy_allow(p, "fs.read_file", NULL), 0);
        assert_int_equal(glove_policy_allow_arg(p, "fs.read_file:/path=/data/", NULL), 0);
        load_ok(p, "{\"version\":1,\"allow\":[\"fs.read_file\",\"fs.list\"],\"deny\":[\"fs.write\"],"
                   "\"arguments\":{\"fs.read_file\":[{\"pointer\":\"/path\",\"kind\":\"max_length\",\"max\":12}],"
                   "\"fs.list\":[{\"pointer\":\"/path\",\"kind\":\"path_within\",\"root\":\"/data\"}]}}");
        assert_int_equal(p->n_allow, 2); /* fs.read_file once */
        assert_int_equal(p->n_deny, 1);
        assert_int_equal(p->n_tools, 2);
        assert_int_equal(p->n_rules, 2 + 1 + 3);
        struct glove_policy_verdict v;
        _cleanup_json_ json_t *ok = json_pack("{s:s}", "path", "/data/a.txt");
        _cleanup_json_ json_t *longp = json_pack("{s:s}", "path", "/data/abcdefgh");
        glove_policy_check_call(p, "fs", "read_file", ok, &v);
        assert_true(v.allowed);
        glove_policy_check_call(p, "fs", "read_file", longp, &v);
        assert_false(v.allowed);
        assert_string_equal(v.rule, "fs.read_file:/path max_length 12");
        /* A second file adds to the first. */
        load_ok(p, "{\"version\":1,\"deny\":[\"fs.list\"]}");
        assert_false(glove_policy_tool_visible(p, "fs", "list"));
}

static void test_merge_limits_all_or_nothing(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        char q[64];
        for (int i = 0; i < GLOVE_POLICY_RULES_MAX - 2; i++) {
                snprintf(q, sizeof(q), "up.t%d", i);
                assert_int_equal(glove_policy_allow(p, q, NULL), 0);
        }
        struct glove_error err = {0};
        const char *three = "{\"version\":1,\"allow\":[\"a.x\",\"a.y\",\"a.z\"]}";
        assert_int_equal(glove_policy_load_json(p, three, strlen(three), &err), -ENOSPC);
        assert_string_equal(err.code, "policy.too_many_rules");
        assert_int_equal(p->n_rules, GLOVE_POLICY_RULES_MAX - 2);
        assert_false(glove_policy_tool_visible(p, "a", "x"));
        /* Rules the policy already holds do not count twice. */
        load_ok(p, "{\"version\":1,\"allow\":[\"up.t0\",\"up.t1\",\"a.x\",\"a.y\"]}");
        assert_int_equal(p->n_rules, GLOVE_POLICY_RULES_MAX);

        _cleanup_policy_ struct glove_policy *t = new_policy();
        for (int i = 0; i < GLOVE_POLICY_TOOL_RULES_MAX - 1; i++) {
                snprintf(q, sizeof(q), "fs.x:/p=v%d", i);
                assert_int_equal(glove_policy_allow_arg(t, q, NULL), 0);
        }
        const char *two = "{\"version\":1,\"allow\":[\"fs.y\"],\"arguments\":{\"fs.x\":["
                          "{\"pointer\":\"/a\",\"kind\":\"max_length\",\"max\":1},"
                          "{\"pointer\":\"/b\",\"kind\":\"max_length\",\"max\":1}]}}";
        struct glove_error err2 = {0};
        assert_int_equal(glove_policy_load_json(t, two, strlen(two), &err2), -ENOSPC);
        assert_string_equal(err2.code, "policy.too_many_rules");
        assert_non_null(strstr(err2.message, "fs.x"));
        assert_int_equal(t->n_rules, GLOVE_POLICY_TOOL_RULES_MAX - 1);
        assert_false(glove_policy_tool_visible(t, "fs", "y"));
}

/* ---- sizes, files, arguments ---- */

static void test_size_limit(void **state) {
        (void)state;
        char *buf = malloc(GLOVE_POLICY_FILE_MAX + 1);
        assert_non_null(buf);
        const char *doc = "{\"version\":1,\"allow\":[\"fs.read_file\"]}";
        memset(buf, ' ', GLOVE_POLICY_FILE_MAX + 1);
        memcpy(buf, doc, strlen(doc));
        _cleanup_policy_ struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        assert_int_equal(glove_policy_load_json(p, buf, GLOVE_POLICY_FILE_MAX, &err), 0);
        assert_true(glove_policy_tool_visible(p, "fs", "read_file"));
        assert_int_equal(glove_policy_load_json(p, buf, GLOVE_POLICY_FILE_MAX + 1, &err), -EMSGSIZE);
        assert_string_equal(err.code, "policy.too_large");

        char tmpl[] = "/tmp/glove-ut-policy-XXXXXX";
        int fd = mkstemp(tmpl);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, buf, GLOVE_POLICY_FILE_MAX + 1), GLOVE_POLICY_FILE_MAX + 1);
        close(fd);
        struct glove_error ferr = {0};
        assert_int_equal(glove_policy_load_file(p, tmpl, &ferr), -EMSGSIZE);
        assert_string_equal(ferr.code, "policy.too_large");
        assert_int_equal(truncate(tmpl, GLOVE_POLICY_FILE_MAX), 0);
        struct glove_error ferr2 = {0};
        assert_int_equal(glove_policy_load_file(p, tmpl, &ferr2), 0);
        unlink(tmpl);
        free(buf);
}

static void test_load_file_errors(void **state) {
        (void)state;
        _cleanup_policy_ struct glove_policy *p = new_policy();
        struct glove_error err = {0};
        assert_int_equal(glove_policy_load_file(p, "/nonexistent/glove/policy.json", &err), -ENOENT);
        assert_string_equal(err.code, "policy.io");
        assert_non_null(strstr(err.message, "/nonexistent/glove/policy.json"));

        struct glove_error derr = {0};
        assert_int_equal(glove_policy_load_file(p, POLICY_FIXTURES, &derr), -EINVAL);
        assert_string_equal(derr.code, "policy.not_regular_file");

        /* A FIFO is refused without blocking on it. */
        char dir[] = "/tmp/glove-ut-policy-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char fifo[64];
        snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        struct glove_error ferr = {0};
        assert_int_equal(glove_policy_load_file(p, fifo, &ferr), -EINVAL);
        assert_string_equal(ferr.code, "policy.not_regular_file");
        unlink(fifo);
        rmdir(dir);

        struct glove_error aerr = {0};
        assert_int_equal(glove_policy_load_file(NULL, "x", &aerr), -EINVAL);
        assert_string_equal(aerr.code, "policy.invalid_argument");
        struct glove_error berr = {0};
        assert_int_equal(glove_policy_load_json(p, NULL, 3, &berr), -EINVAL);
        assert_string_equal(berr.code, "policy.invalid_argument");
        struct glove_error cerr = {0};
        assert_int_equal(glove_policy_load_json(p, NULL, 0, &cerr), -EINVAL);
        assert_string_equal(cerr.code, "policy.syntax");
        assert_int_equal(p->n_rules, 0);
}

/* A policy file anyone but the invoker could change is refused: the file
 * writable by group or others, or a directory above it writable by others
 * (not sticky); the same file in a private directory loads. */
static void test_load_file_unsafe(void **state) {
        (void)state;
        char dir[] = "/tmp/glove-ut-policy-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char file[96], sub[96], subfile[128];
        snprintf(file, sizeof(file), "%s/policy.json", dir);
        snprintf(sub, sizeof(sub), "%s/open", dir);
        snprintf(subfile, sizeof(subfile), "%s/policy.json", sub);
        const char *doc = "{\"version\":1,\"allow\":[\"fs.read_file\"]}";
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
        close(fd);
        static const mode_t bad[] = {0666, 0602, 0620};
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(bad); i++) {
                assert_int_equal(chmod(file, bad[i]), 0);
                _cleanup_policy_ struct glove_policy *p = new_policy();
                struct glove_error err = {0};
                assert_int_equal(glove_policy_load_file(p, file, &err), -EPERM);
                assert_string_equal(err.code, "policy.file_unsafe");
                assert_non_null(strstr(err.message, "the file is writable"));
                assert_int_equal(p->n_rules, 0);
        }
        assert_int_equal(chmod(file, 0644), 0);
        {
                _cleanup_policy_ struct glove_policy *p = new_policy();
                struct glove_error err = {0};
                assert_int_equal(glove_policy_load_file(p, file, &err), 0);
                assert_true(glove_policy_tool_visible(p, "fs", "read_file"));
        }
        /* A world-writable directory on the path (no sticky bit). */
        assert_int_equal(mkdir(sub, 0700), 0);
        assert_int_equal(chmod(sub, 0777), 0);
        assert_int_equal(link(file, subfile), 0);
        {
                _cleanup_policy_ struct glove_policy *p = new_policy();
                struct glove_error err = {0};
                assert_int_equal(glove_policy_load_file(p, subfile, &err), -EPERM);
                assert_string_equal(err.code, "policy.file_unsafe");
                assert_non_null(strstr(err.message, "the directory"));
                assert_non_null(strstr(err.message, "/open is writable by others"));
        }
        assert_int_equal(chmod(sub, 0755), 0);
        {
                _cleanup_policy_ struct glove_policy *p = new_policy();
                struct glove_error err = {0};
                assert_int_equal(glove_policy_load_file(p, subfile, &err), 0);
        }
        unlink(subfile);
        rmdir(sub);
        unlink(file);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rejection_fixtures),
                cmocka_unit_test(test_fixture_directory_complete),
                cmocka_unit_test(test_valid_minimal),
                cmocka_unit_test(test_valid_filesystem),
                cmocka_unit_test(test_valid_every_kind),
                cmocka_unit_test(test_merge_with_command_line),
                cmocka_unit_test(test_upstreams_sandbox),
                cmocka_unit_test(test_merge_limits_all_or_nothing),
                cmocka_unit_test(test_size_limit),
                cmocka_unit_test(test_load_file_errors),
                cmocka_unit_test(test_load_file_unsafe),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* glove/supervisor/policy.h: the policy decoder, table-driven over
 * tests/fixtures/supervisor/policy (one fixture per rejection reason). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/supervisor/policy.h"
#include "helpers.h"

static struct glove_supervisor_policy *decode_ok(const char *text, size_t len) {
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = NULL;
        int r = glove_supervisor_policy_decode(text, len, &p, &err);
        if (r < 0)
                fail_msg("valid policy rejected: %s %s", err.code, err.message);
        assert_non_null(p);
        return p;
}

static void test_valid_policy(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = fixture_read("policy/valid.json", &len);
        _cleanup_policy_ struct glove_supervisor_policy *p = decode_ok(text, len);
        assert_int_equal(glove_supervisor_policy_revision(p), 7);
        assert_int_equal(glove_supervisor_policy_max_plan_ttl_ms(p), 120000);

        /* The policy digest is the SHA-256 of the exact bytes. */
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_digest_sha256(text, len, md, NULL), 0);
        assert_int_equal(glove_digest_hex_encode(md, sizeof(md), hex, sizeof(hex)), 0);
        assert_string_equal(glove_supervisor_policy_digest(p), hex);
}

static void test_launch_queries(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = fixture_read("policy/valid.json", &len);
        _cleanup_policy_ struct glove_supervisor_policy *p = decode_ok(text, len);

        assert_true(glove_supervisor_policy_template_can_launch(p, "codex-safe"));
        assert_true(glove_supervisor_policy_template_can_launch(p, "claude-discovery"));
        /* A template without launch validates plans but can never launch. */
        assert_false(glove_supervisor_policy_template_can_launch(p, "codex-plan-only"));
        assert_false(glove_supervisor_policy_template_can_launch(p, "nope"));
        assert_false(glove_supervisor_policy_template_can_launch(p, NULL));

        const struct glove_supervisor_launch_template *l = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_supervisor_policy_template_launch(p, "codex-safe", &l, &err), 0);
        assert_string_equal(l->executable_path, "/usr/bin/true");
        assert_null(l->runtime_discovery);
        assert_int_equal(l->n_arguments, 1);
        assert_string_equal(l->arguments[0], "--version");
        assert_int_equal(l->n_environment, 2);
        assert_string_equal(l->environment[1], "TERM=xterm-256color");
        assert_int_equal(l->n_read_only_paths, 1);

        assert_int_equal(glove_supervisor_policy_template_launch(p, "claude-discovery", &l, &err), 0);
        assert_string_equal(l->runtime_discovery, "claude-code");
        assert_string_equal(l->executable_path, "");
        assert_int_equal(l->n_executable_search_paths, 1);

        assert_int_equal(glove_supervisor_policy_template_launch(p, "codex-plan-only", &l, &err), -ENOEXEC);
        assert_string_equal(err.code, "policy.template_not_launchable");
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_policy_template_launch(p, "missing", &l, &err), -ENOENT);
        assert_string_equal(err.code, "policy.unknown_runtime_template");
}

/* Every fixture in the manifest is rejected with its code and path, the
 * message starts with the path, and nothing is returned. */
static void test_rejection_fixtures(void **state) {
        (void)state;
        struct manifest_line *lines;
        char *mtext;
        size_t n = manifest_read("policy", &lines, &mtext);
        assert_true(n >= 100);
        size_t failures = 0;
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(lines[i].n, 3);
                const char *file = lines[i].words[0], *code = lines[i].words[1], *want_path = lines[i].words[2];
                char rel[256];
                snprintf(rel, sizeof(rel), "policy/%s", file);
                size_t len;
                char *text = fixture_read(rel, &len);
                struct glove_error err = { 0 };
                struct glove_supervisor_policy *p = (void *)0x1;
                char path[GLOVE_JSON_PATH_MAX];
                int r = glove_supervisor_policy_decode_ex(text, len, &p, path, sizeof(path), &err);
                bool ok = r < 0 && p == NULL && err.code && strcmp(err.code, code) == 0 &&
                          strcmp(path, want_path) == 0 && strncmp(err.message, path, strlen(path)) == 0 &&
                          err.message[strlen(path)] == ':';
                if (!ok) {
                        print_error("%s: want %s at %s, got r=%d %s at %s: %s\n", file, code, want_path, r,
                                    err.code ? err.code : "(none)", path, err.message);
                        failures++;
                }
                if (r == 0)
                        glove_supervisor_policy_free(p);
                free(text);
        }
        free(lines);
        free(mtext);
        assert_int_equal(failures, 0);
}

/* The spec's own example policy: its adapter_command_digest (05a49649...)
 * is the encoding stopped after the environment list, written before
 * read_only_paths was committed (docs/digests.md), so it is rejected with
 * the digest Glove computes (the e66c0652...) in the message; with
 * that digest it is accepted. */
static const char spec_example[] =
        "{\"schema_version\":1,\"revision\":7,\"max_plan_ttl_ms\":120000,\"runtime_templates\":[{"
        "\"runtime_template_id\":\"codex-safe\",\"runtime_id\":\"codex\",\"adapter_command_digest\":\"%s\","
        "\"sandbox_backend\":\"linux_production\",\"allowed_path_aliases\":[\"workspace\"],"
        "\"allowed_projection_destinations\":[\"libraries\"],\"launch\":{\"executable_path\":\"/usr/bin/true\","
        "\"arguments\":[\"--version\"],\"environment\":[\"PATH=/usr/bin:/bin\",\"TERM=xterm-256color\"],"
        "\"read_only_paths\":[\"/opt/operator-harness/codex-runtime\"]}}],\"path_aliases\":[{\"alias\":"
        "\"workspace\",\"host_path\":\"/srv/work/sage-protocol\",\"target_path\":\"/workspace\","
        "\"max_ttl_secs\":120,\"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\","
        "\"create_policy\":\"empty_directory\",\"cleanup_policy\":\"remove\",\"max_bytes\":2097152}]}],"
        "\"library_projection_destinations\":[{\"alias\":\"libraries\",\"target_path\":"
        "\"/opt/sage/library-bundles\"}],\"resource_profiles\":[{\"profile_id\":\"small\",\"cpu_time_ms\":1000,"
        "\"memory_bytes\":67108864,\"pids\":16,\"wall_time_ms\":2000,\"disk_bytes\":2097152,"
        "\"terminal_output_bytes\":1048576}],\"egress_policy_ids\":[\"no-network\"],\"tool_policy_ids\":"
        "[\"sage-readonly\"],\"secret_handles\":[\"codex-token\"]}";

static void test_spec_example(void **state) {
        (void)state;
        char text[4096];
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = NULL;
        snprintf(text, sizeof(text), spec_example, "05a49649e7973f6f8d6b119c9d525472517e6021fb38f8b191e0b40c8c4741d0");
        assert_int_equal(glove_supervisor_policy_decode(text, strlen(text), &p, &err), -EINVAL);
        assert_string_equal(err.code, "policy.adapter_digest_mismatch");
        assert_non_null(strstr(err.message, "e66c0652fedc80fcdfe875761036053f973708ad72207e388c07de41553c4e33"));

        snprintf(text, sizeof(text), spec_example, "e66c0652fedc80fcdfe875761036053f973708ad72207e388c07de41553c4e33");
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_policy_decode(text, strlen(text), &p, &err), 0);
        assert_true(glove_supervisor_policy_template_can_launch(p, "codex-safe"));
        glove_supervisor_policy_free(p);
}

static void test_too_large(void **state) {
        (void)state;
        size_t n = GLOVE_POLICY_MAX_BYTES + 1;
        _cleanup_free_ char *big = malloc(n);
        assert_non_null(big);
        memset(big, ' ', n);
        big[0] = '{';
        big[n - 1] = '}';
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = NULL;
        char path[GLOVE_JSON_PATH_MAX];
        assert_int_equal(glove_supervisor_policy_decode_ex(big, n, &p, path, sizeof(path), &err), -EMSGSIZE);
        assert_string_equal(err.code, "policy.too_large");
        assert_string_equal(path, "$");
        assert_null(p);
}

static void test_misuse_and_small_path_buffer(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        assert_int_equal(glove_supervisor_policy_decode("{}", 2, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "policy.invalid_argument");

        /* A path buffer too small for the path gets a cut path. */
        size_t len;
        _cleanup_free_ char *text = fixture_read("policy/unknown_field-launch.json", &len);
        struct glove_supervisor_policy *p = NULL;
        char path[16];
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_policy_decode_ex(text, len, &p, path, sizeof(path), &err), -EINVAL);
        assert_int_equal(strlen(path), sizeof(path) - 1);
        assert_string_equal(path + sizeof(path) - 4, "...");
        assert_string_equal(err.code, "policy.unknown_field");
        /* err may be NULL: the return value alone still tells. */
        assert_int_equal(glove_supervisor_policy_decode(text, len, &p, NULL), -EINVAL);
        glove_supervisor_policy_free(NULL);
}

/* An unknown member with a very long name: the path is cut to fit
 * GLOVE_JSON_PATH_MAX and ends in "...", never overflowing. */
static void test_long_unknown_key(void **state) {
        (void)state;
        static const size_t lengths[] = { 200, 252, 253, 254, 255, 300, 10000 };
        for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
                size_t len;
                _cleanup_free_ char *text = fixture_read("policy/valid.json", &len);
                _cleanup_json_ json_t *v = json_loadb(text, len, 0, NULL);
                _cleanup_free_ char *key = malloc(lengths[i] + 1);
                memset(key, 'k', lengths[i]);
                key[lengths[i]] = '\0';
                json_t *t = json_array_get(json_object_get(v, "runtime_templates"), 2);
                json_object_set_new(json_object_get(t, "launch"), key, json_true());
                _cleanup_free_ char *out = json_dumps(v, JSON_COMPACT);
                struct glove_error err = { 0 };
                struct glove_supervisor_policy *p = NULL;
                char path[GLOVE_JSON_PATH_MAX];
                assert_int_equal(glove_supervisor_policy_decode_ex(out, strlen(out), &p, path, sizeof(path), &err),
                                 -EINVAL);
                assert_string_equal(err.code, "policy.unknown_field");
                assert_true(strlen(path) < GLOVE_JSON_PATH_MAX);
                assert_memory_equal(path, "$.runtime_templates[2].launch.kkk", 33);
                if (strlen(path) == GLOVE_JSON_PATH_MAX - 1)
                        assert_string_equal(path + strlen(path) - 3, "...");
        }
}

/* Optional sections: egress_policies and secret_mounts may be absent; a
 * template may lack launch. */
static void test_optional_sections(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = fixture_read("policy/valid.json", &len);
        json_error_t je;
        _cleanup_json_ json_t *v = json_loadb(text, len, 0, &je);
        assert_non_null(v);
        json_object_del(v, "egress_policies");
        json_object_del(v, "secret_mounts");
        _cleanup_free_ char *out = json_dumps(v, JSON_COMPACT);
        struct glove_supervisor_policy *p = decode_ok(out, strlen(out));
        glove_supervisor_policy_free(p);
}

/* A secret target may not overlap the adapter's skills directory (at,
 * beneath or above it: the chain Glove creates, e.g. /home/agent/.codex for
 * codex) of its runtime, nor an alias's or a destination's target; a path
 * beside them is accepted. */
static void test_secret_target_layout(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = fixture_read("policy/valid.json", &len);
        static const struct {
                const char *runtime_id, *target, *code;
        } cases[] = {
                { "codex", "/home/agent/.codex/skills", "policy.secret_target_skills" },
                { "codex", "/home/agent/.codex/skills/review/SKILL.md", "policy.secret_target_skills" },
                { "codex", "/home/agent/.codex/skills/x", "policy.secret_target_skills" },
                { "codex", "/home/agent/.codex", "policy.secret_target_skills" },
                { "claude-code", "/home/agent/.claude", "policy.secret_target_skills" },
                { "claude-code", "/home/agent/.claude/skills/a/SKILL.md", "policy.secret_target_skills" },
                { "codex", "/home/agent/.codex/auth.json", NULL },
                { "codex", "/home/agent/.codex/skillsx", NULL },
                /* another runtime's skills directory is not this one's */
                { "codex", "/home/agent/.claude/skills/a", NULL },
                { "claude-code", "/home/agent/.claude.json", NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                json_error_t je;
                _cleanup_json_ json_t *v = json_loadb(text, len, 0, &je);
                assert_non_null(v);
                json_t *m = json_array_get(json_object_get(v, "secret_mounts"), 0);
                json_object_set_new(m, "runtime_id", json_string(cases[i].runtime_id));
                json_object_set_new(m, "target_path", json_string(cases[i].target));
                _cleanup_free_ char *out = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
                struct glove_error err = { 0 };
                struct glove_supervisor_policy *p = NULL;
                char path[GLOVE_JSON_PATH_MAX];
                int r = glove_supervisor_policy_decode_ex(out, strlen(out), &p, path, sizeof(path), &err);
                if (!cases[i].code) {
                        if (r < 0)
                                fail_msg("%s %s refused: %s %s", cases[i].runtime_id, cases[i].target, err.code,
                                         err.message);
                        glove_supervisor_policy_free(p);
                        continue;
                }
                if (r != -EINVAL || !err.code || strcmp(err.code, cases[i].code) != 0)
                        fail_msg("%s %s: want %s, got %d %s", cases[i].runtime_id, cases[i].target, cases[i].code, r,
                                 err.code ? err.code : "(none)");
                assert_string_equal(path, "$.secret_mounts[0].target_path");
                assert_null(p);
        }
        /* An alias's and a destination's sandbox targets, moved beneath the
         * home, are no place for a lease either. */
        static const char *const sections[][2] = { { "path_aliases", "/home/agent/work" },
                                                    { "library_projection_destinations", "/home/agent/.codex/auth.json" } };
        for (size_t i = 0; i < 2; i++) {
                json_error_t je;
                _cleanup_json_ json_t *v = json_loadb(text, len, 0, &je);
                assert_non_null(v);
                json_t *a = json_array_get(json_object_get(v, sections[i][0]), 0);
                json_object_set_new(a, "target_path", json_string(sections[i][1]));
                json_t *m = json_array_get(json_object_get(v, "secret_mounts"), 0);
                json_object_set_new(m, "target_path", json_string(i == 0 ? "/home/agent/work/auth.json"
                                                                         : "/home/agent/.codex/auth.json"));
                _cleanup_free_ char *out = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
                struct glove_error err = { 0 };
                struct glove_supervisor_policy *p = NULL;
                char path[GLOVE_JSON_PATH_MAX];
                int r = glove_supervisor_policy_decode_ex(out, strlen(out), &p, path, sizeof(path), &err);
                if (r != -EINVAL || !err.code || strcmp(err.code, "policy.secret_target_overlap") != 0)
                        fail_msg("%s: want policy.secret_target_overlap, got %d %s: %s", sections[i][0], r,
                                 err.code ? err.code : "(none)", err.message);
                assert_string_equal(path, "$.secret_mounts[0].target_path");
        }
}

/* The example in docs/session-policy.md (the first ```json block after
 * "## Example") is a valid policy. */
static void test_docs_example(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *doc = fixture_read("../../../docs/session-policy.md", &len);
        char *start = strstr(doc, "\n## Example\n");
        assert_non_null(start);
        start = strstr(start, "```json\n");
        assert_non_null(start);
        start += strlen("```json\n");
        char *end = strstr(start, "```");
        assert_non_null(end);
        struct glove_supervisor_policy *p = decode_ok(start, (size_t)(end - start));
        assert_true(glove_supervisor_policy_template_can_launch(p, "codex-safe"));
        glove_supervisor_policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_policy),
                cmocka_unit_test(test_launch_queries),
                cmocka_unit_test(test_rejection_fixtures),
                cmocka_unit_test(test_spec_example),
                cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_misuse_and_small_path_buffer),
                cmocka_unit_test(test_optional_sections),
                cmocka_unit_test(test_docs_example),
                cmocka_unit_test(test_secret_target_layout),
                cmocka_unit_test(test_long_unknown_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

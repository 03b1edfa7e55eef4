/* SPDX-License-Identifier: Apache-2.0 */
/* glove/supervisor/plan.h: plan validation, table-driven over
 * tests/fixtures/supervisor/plan (one fixture per reason), plus the expiry
 * window, reason bounds and canonical-encoding vectors. */
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
#include "glove/base/json.h"
#include "glove/supervisor/plan.h"
#include "helpers.h"

static int setup(void **state) {
        size_t len;
        _cleanup_free_ char *text = fixture_read("policy/valid.json", &len);
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = NULL;
        if (glove_supervisor_policy_decode(text, len, &p, &err) < 0) {
                print_error("policy: %s %s\n", err.code, err.message);
                return -1;
        }
        *state = p;
        return 0;
}

static int teardown(void **state) {
        glove_supervisor_policy_free(*state);
        return 0;
}

static void validate(void **state, const char *text, size_t len, int64_t now, struct glove_plan_verdict *v) {
        struct glove_error err = { 0 };
        int r = glove_supervisor_plan_validate(*state, text, len, now, v, &err);
        if (r < 0)
                fail_msg("validate failed: %d %s %s", r, err.code, err.message);
}

static void print_reasons(const char *what, const struct glove_plan_verdict *v) {
        print_error("%s: %zu reasons:", what, v->n_reasons_total);
        for (size_t i = 0; i < v->n_reasons; i++)
                print_error(" %s@%s", v->reasons[i].code, v->reasons[i].path);
        print_error("\n");
}

static void test_valid_plan(void **state) {
        size_t len;
        _cleanup_free_ char *text = fixture_read("plan/valid.json", &len);
        struct glove_plan_verdict v;
        validate(state, text, len, FIXTURE_NOW_MS, &v);
        if (!v.valid)
                print_reasons("valid.json", &v);
        assert_true(v.valid);
        assert_int_equal(v.n_reasons_total, 0);

        /* plan_content_digest is the SHA-256 of the exact bytes. */
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_digest_sha256(text, len, md, NULL), 0);
        glove_digest_hex_encode(md, sizeof(md), hex, sizeof(hex));
        assert_string_equal(v.plan_content_digest, hex);
}

static void test_rejection_fixtures(void **state) {
        struct manifest_line *lines;
        char *mtext;
        size_t n = manifest_read("plan", &lines, &mtext);
        assert_true(n >= 50);
        size_t failures = 0;
        for (size_t i = 0; i < n; i++) {
                const char *file = lines[i].words[0];
                char rel[256];
                snprintf(rel, sizeof(rel), "plan/%s", file);
                size_t len;
                char *text = fixture_read(rel, &len);
                struct glove_plan_verdict v;
                validate(state, text, len, FIXTURE_NOW_MS, &v);
                bool ok = !v.valid && v.n_reasons == lines[i].n - 1 && v.n_reasons_total == v.n_reasons;
                for (size_t k = 0; ok && k < v.n_reasons; k++) {
                        char got[256];
                        snprintf(got, sizeof(got), "%s@%s", v.reasons[k].code, v.reasons[k].path);
                        ok = strcmp(got, lines[i].words[k + 1]) == 0;
                }
                /* The digest is there exactly when the bytes were canonical. */
                bool canonical = strcmp(v.reasons[0].path, "$") != 0;
                if (ok && canonical != (v.plan_content_digest[0] != '\0'))
                        ok = false;
                if (!ok) {
                        print_error("%s (want", file);
                        for (size_t k = 1; k < lines[i].n; k++)
                                print_error(" %s", lines[i].words[k]);
                        print_error(") ");
                        print_reasons("got", &v);
                        failures++;
                }
                free(text);
        }
        free(lines);
        free(mtext);
        assert_int_equal(failures, 0);
}

/* Rewrites the valid plan with member key set to an integer, canonically. */
static char *plan_with_int(const char *key, json_int_t value) {
        size_t len;
        _cleanup_free_ char *text = fixture_read("plan/valid.json", &len);
        _cleanup_json_ json_t *root = json_loadb(text, len, 0, NULL);
        assert_non_null(root);
        json_object_set_new(root, key, json_integer(value));
        char *out = NULL;
        assert_int_equal(glove_json_encode_canonical(root, &out, NULL, NULL), 0);
        return out;
}

/* now < expires_at_ms <= now + max_plan_ttl_ms (120000). */
static void test_expiry_window(void **state) {
        static const struct {
                int64_t offset;
                const char *code; /* NULL: valid */
        } cases[] = {
                { -1, "plan.expired" },      { 0, "plan.expired" },          { 1, NULL },
                { 60000, NULL },             { 120000, NULL },               { 120001, "plan.expiry_too_far" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_free_ char *plan = plan_with_int("expires_at_ms", FIXTURE_NOW_MS + cases[i].offset);
                struct glove_plan_verdict v;
                validate(state, plan, strlen(plan), FIXTURE_NOW_MS, &v);
                if (!cases[i].code) {
                        assert_true(v.valid);
                        continue;
                }
                assert_false(v.valid);
                assert_int_equal(v.n_reasons, 1);
                assert_string_equal(v.reasons[0].code, cases[i].code);
                assert_string_equal(v.reasons[0].path, "$.expires_at_ms");
        }
        /* A clock near the end of int64 does not overflow the window. */
        _cleanup_free_ char *plan = plan_with_int("expires_at_ms", FIXTURE_NOW_MS + 1000);
        struct glove_plan_verdict v;
        validate(state, plan, strlen(plan), INT64_MAX - 5, &v);
        assert_string_equal(v.reasons[0].code, "plan.expired");
}

/* A template without launch admits plan validation. */
static void test_plan_only_template(void **state) {
        size_t len;
        _cleanup_free_ char *text = fixture_read("plan/valid.json", &len);
        _cleanup_json_ json_t *root = json_loadb(text, len, 0, NULL);
        json_object_set_new(root, "runtime_template_id", json_string("codex-plan-only"));
        json_object_set_new(root, "sandbox_backend", json_string("remote_linux_container"));
        json_object_set_new(root, "adapter_command_digest",
                            json_string("0000000000000000000000000000000000000000000000000000000000000000"));
        json_object_set_new(root, "library_projections", json_array());
        _cleanup_free_ char *plan = NULL;
        assert_int_equal(glove_json_encode_canonical(root, &plan, NULL, NULL), 0);
        struct glove_plan_verdict v;
        validate(state, plan, strlen(plan), FIXTURE_NOW_MS, &v);
        if (!v.valid)
                print_reasons("plan-only", &v);
        assert_true(v.valid);
        assert_false(glove_supervisor_policy_template_can_launch(*state, "codex-plan-only"));
}

/* More reasons than GLOVE_PLAN_REASONS_MAX: the first ones are stored, all
 * are counted; long paths are cut with "...". */
static void test_reason_bounds(void **state) {
        size_t len;
        _cleanup_free_ char *text = fixture_read("plan/valid.json", &len);
        _cleanup_json_ json_t *root = json_loadb(text, len, 0, NULL);
        char key[300];
        for (int i = 0; i < 40; i++) {
                snprintf(key, sizeof(key), "extra_%02d", i);
                json_object_set_new(root, key, json_true());
        }
        memset(key, 'k', 250);
        key[250] = '\0';
        json_object_set_new(root, key, json_true());
        _cleanup_free_ char *plan = NULL;
        assert_int_equal(glove_json_encode_canonical(root, &plan, NULL, NULL), 0);
        struct glove_plan_verdict v;
        validate(state, plan, strlen(plan), FIXTURE_NOW_MS, &v);
        assert_false(v.valid);
        assert_int_equal(v.n_reasons, GLOVE_PLAN_REASONS_MAX);
        assert_int_equal(v.n_reasons_total, 41);
        assert_string_equal(v.reasons[0].code, "plan.unknown_field");
        assert_string_equal(v.reasons[0].path, "$.extra_00");
        /* Sorted keys: "k..." comes after "extra_*"; it is counted, not stored. */
        bool cut_seen = false;
        for (size_t i = 0; i < v.n_reasons; i++) {
                size_t n = strlen(v.reasons[i].path);
                assert_true(n < GLOVE_PLAN_REASON_PATH_MAX);
                cut_seen |= n >= 3 && strcmp(v.reasons[i].path + n - 3, "...") == 0;
        }
        assert_false(cut_seen);
}

static void test_long_path_cut(void **state) {
        static const size_t lengths[] = { 158, 250, 253, 254, 255, 256, 300, 5000 };
        for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
                size_t len;
                _cleanup_free_ char *text = fixture_read("plan/valid.json", &len);
                _cleanup_json_ json_t *root = json_loadb(text, len, 0, NULL);
                _cleanup_free_ char *key = malloc(lengths[i] + 1);
                memset(key, 'k', lengths[i]);
                key[lengths[i]] = '\0';
                json_object_set_new(root, key, json_true());
                _cleanup_free_ char *plan = NULL;
                assert_int_equal(glove_json_encode_canonical(root, &plan, NULL, NULL), 0);
                struct glove_plan_verdict v;
                validate(state, plan, strlen(plan), FIXTURE_NOW_MS, &v);
                assert_int_equal(v.n_reasons, 1);
                size_t n = strlen(v.reasons[0].path);
                assert_int_equal(n, GLOVE_PLAN_REASON_PATH_MAX - 1);
                assert_string_equal(v.reasons[0].path + n - 3, "...");
                assert_memory_equal(v.reasons[0].path, "$.kkk", 5);
        }
}

static void test_invalid_arguments(void **state) {
        struct glove_plan_verdict v;
        struct glove_error err = { 0 };
        assert_int_equal(glove_supervisor_plan_validate(NULL, "{}", 2, 0, &v, &err), -EINVAL);
        assert_string_equal(err.code, "plan.invalid_argument");
        assert_int_equal(glove_supervisor_plan_validate(*state, NULL, 5, 0, &v, NULL), -EINVAL);
        assert_int_equal(glove_supervisor_plan_validate(*state, "{}", 2, 0, NULL, NULL), -EINVAL);
        /* Empty and oversized input are reasons, not errors. */
        assert_int_equal(glove_supervisor_plan_validate(*state, NULL, 0, 0, &v, NULL), 0);
        assert_string_equal(v.reasons[0].code, "plan.invalid_json");
        _cleanup_free_ char *big = malloc(GLOVE_PLAN_MAX_BYTES + 1);
        memset(big, ' ', GLOVE_PLAN_MAX_BYTES + 1);
        assert_int_equal(glove_supervisor_plan_validate(*state, big, GLOVE_PLAN_MAX_BYTES + 1, 0, &v, NULL), 0);
        assert_string_equal(v.reasons[0].code, "plan.too_large");
        assert_string_equal(v.plan_content_digest, "");
}

/* Canonical-encoding vectors from tests/vectors/digest_vectors.py: the
 * canonical bytes of each input, and their SHA-256 (what
 * plan_content_digest would be for a plan with those bytes). */
static const struct {
        const char *input, *canonical, *sha256;
} canonical_vectors[] = {
        { "{ \"b\": 1, \"a\": [true, false, null] }", "{\"a\":[true,false,null],\"b\":1}",
          "087e44ed138472a81a4a0f8ae84e8f358d0d957d27f51123952aa88c007b1f9f" },
        { "{\"z\":{\"y\":[1,{\"b\":\"x\",\"a\":-2}],\"x\":\"\"},\"a\":0}",
          "{\"a\":0,\"z\":{\"x\":\"\",\"y\":[1,{\"a\":-2,\"b\":\"x\"}]}}",
          "b4474c940184f5f8c4bfd446331b83d0ad702b8dd7ab3edcb328b3a14c889338" },
        { "{\"s\":\"caf\\u00e9 \\u20ac \\ud83d\\ude00\"}", "{\"s\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
          "370587c889af9c5886cbf76fd1f9e9dd179a5fb245bc1f966f8d897c2eac2d19" },
        { "{\"q\":\"\\\"\\\\\\n\\t\\u0001/\"}", "{\"q\":\"\\\"\\\\\\n\\t\\u0001/\"}",
          "e7d90e5e82f77fb96cf6c034128c3b020635084c72da2c19f73b88622e1beae0" },
        { "{\"e\":\"\\u001B[0m\\u001f\"}", "{\"e\":\"\\u001b[0m\\u001f\"}",
          "d75a93def04756f8c2d370622c2c17be13b34a4962b03a3d3333dff331e1960c" },
        { "{\"max\":9223372036854775807,\"min\":-9223372036854775808}",
          "{\"max\":9223372036854775807,\"min\":-9223372036854775808}",
          "161a1dcda7bae00f28f0ba32675f218fd4977065d2aa0439cf451c6d066dbbfb" },
};

static void test_canonical_vectors(void **state) {
        for (size_t i = 0; i < sizeof(canonical_vectors) / sizeof(canonical_vectors[0]); i++) {
                const char *in = canonical_vectors[i].input, *want = canonical_vectors[i].canonical;
                _cleanup_json_ json_t *v = NULL;
                assert_int_equal(glove_json_decode_strict(in, strlen(in), 4096, 0, &v, NULL), 0);
                _cleanup_free_ char *out = NULL;
                assert_int_equal(glove_json_encode_canonical(v, &out, NULL, NULL), 0);
                assert_string_equal(out, want);
                uint8_t md[GLOVE_DIGEST_SHA256_LEN];
                char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
                glove_digest_sha256(out, strlen(out), md, NULL);
                glove_digest_hex_encode(md, sizeof(md), hex, sizeof(hex));
                assert_string_equal(hex, canonical_vectors[i].sha256);
                /* As plans: the canonical bytes pass the canonical gate (they
                 * then fail the schema), the others do not. */
                struct glove_plan_verdict pv;
                validate(state, want, strlen(want), FIXTURE_NOW_MS, &pv);
                assert_string_not_equal(pv.reasons[0].code, "plan.not_canonical");
                assert_string_equal(pv.plan_content_digest, hex);
                if (strcmp(in, want) != 0) {
                        validate(state, in, strlen(in), FIXTURE_NOW_MS, &pv);
                        assert_string_equal(pv.reasons[0].code, "plan.not_canonical");
                        assert_int_equal(pv.n_reasons_total, 1);
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_plan),
                cmocka_unit_test(test_rejection_fixtures),
                cmocka_unit_test(test_expiry_window),
                cmocka_unit_test(test_plan_only_template),
                cmocka_unit_test(test_reason_bounds),
                cmocka_unit_test(test_long_path_cut),
                cmocka_unit_test(test_invalid_arguments),
                cmocka_unit_test(test_canonical_vectors),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* glove/refinement/binding.h: the plan's kind members and refinement
 * binding (every code, every reason collected, with its path), the plan
 * rules (path grants, exactly the fixture and the selected skill), and the
 * plan context read from a plan. Plans are mutations of
 * tests/fixtures/refinement/example-plan.json. */
#include "helpers.h"

static json_t *plan(void) {
        return read_json("example-plan.json");
}

/* "code@path" lines of every reason, joined by spaces. */
static const char *decode_reasons(const json_t *p, int *ret, struct glove_refinement_binding *b) {
        static char out[2048];
        struct reasons rs = { 0 };
        enum glove_refinement_plan_kind kind;
        struct glove_refinement_binding local;
        struct glove_error err = { 0 };
        *ret = glove_refinement_plan_decode(p, &kind, b ? b : &local, collect, &rs, &err);
        out[0] = '\0';
        for (size_t i = 0; i < rs.n; i++) {
                size_t n = strlen(out);
                snprintf(out + n, sizeof(out) - n, "%s%s@%s", i ? " " : "", rs.code[i], rs.path[i]);
        }
        assert_int_equal(*ret == 0, rs.n == 0);
        return out;
}

static void test_example(void **state) {
        (void)state;
        _cleanup_json_ json_t *p = plan();
        struct glove_refinement_binding b;
        enum glove_refinement_plan_kind kind = GLOVE_REFINEMENT_PLAN_ORDINARY;
        struct reasons rs = { 0 };
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_plan_decode(p, &kind, &b, collect, &rs, &err), 0);
        assert_int_equal(kind, GLOVE_REFINEMENT_PLAN_REFINEMENT);
        assert_int_equal(rs.n, 0);
        assert_int_equal(b.variant, GLOVE_REFINEMENT_VARIANT_BASE);
        assert_string_equal(b.fixture.projection_id, "refinement-fixture");
        assert_string_equal(b.fixture.destination_alias, "refinement-fixtures");
        assert_string_equal(b.base.projection_id, "skill-base");
        assert_string_equal(b.candidate.projection_id, "skill-candidate");
        assert_string_equal(b.candidate.destination_alias, "libraries");
        assert_true(glove_refinement_hex64_valid(b.matched_context_digest));
        assert_ptr_equal(glove_refinement_binding_selected(&b), &b.base);
        assert_ptr_equal(glove_refinement_binding_unselected(&b), &b.candidate);
        assert_int_equal(glove_refinement_plan_check_rules(p, &b, collect, &rs, &err), 0);
        assert_int_equal(rs.n, 0);
}

static void test_ordinary(void **state) {
        (void)state;
        _cleanup_json_ json_t *p = plan();
        jset(p, "evaluation_protocol", NULL);
        jset(p, "refinement", NULL);
        struct glove_refinement_binding b;
        memset(&b, 0x5a, sizeof(b));
        enum glove_refinement_plan_kind kind = GLOVE_REFINEMENT_PLAN_REFINEMENT;
        struct reasons rs = { 0 };
        assert_int_equal(glove_refinement_plan_decode(p, &kind, &b, collect, &rs, NULL), 0);
        assert_int_equal(kind, GLOVE_REFINEMENT_PLAN_ORDINARY);
        assert_int_equal(rs.n, 0);
        assert_null(b.fixture.projection_id);
        assert_null(b.matched_context_digest);
        /* A NULL report function still counts reasons. */
        jset(p, "refinement", json_object());
        assert_int_equal(glove_refinement_plan_decode(p, &kind, &b, NULL, NULL, NULL), -EINVAL);
}

struct bcase {
        const char *member; /* dotted */
        json_t *value;      /* NULL: delete */
        const char *want;   /* "code@path ..." */
};

static void run_cases(struct bcase *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *p = plan();
                jset(p, cases[i].member, cases[i].value);
                int r;
                const char *got = decode_reasons(p, &r, NULL);
                if (strcmp(got, cases[i].want) != 0)
                        fail_msg("case %zu (%s):\n got  %s\n want %s", i, cases[i].member, got, cases[i].want);
                assert_int_equal(r, -EINVAL);
        }
}

static void test_binding_codes(void **state) {
        (void)state;
        char upper[65];
        memset(upper, 'A', 64);
        upper[64] = '\0';
        const char *base_digest;
        {
                _cleanup_json_ json_t *p = plan();
                base_digest = strdup(json_string_value(
                        json_object_get(json_object_get(json_object_get(p, "refinement"), "base"), "content_digest")));
        }
        struct bcase cases[] = {
                { "refinement", NULL, "plan.refinement_missing@$.refinement" },
                { "evaluation_protocol", NULL, "plan.refinement_without_protocol@$.evaluation_protocol" },
                { "evaluation_protocol", json_string("refinement-eval-v2"),
                  "plan.refinement_unknown_protocol@$.evaluation_protocol" },
                { "evaluation_protocol", json_integer(1), "plan.refinement_wrong_type@$.evaluation_protocol" },
                { "refinement", json_array(), "plan.refinement_wrong_type@$.refinement" },
                { "refinement.extra", json_true(), "plan.refinement_unknown_field@$.refinement.extra" },
                { "refinement.base.kind", json_string("skill"), "plan.refinement_unknown_field@$.refinement.base.kind" },
                { "refinement.variant", NULL, "plan.refinement_missing_field@$.refinement.variant" },
                { "refinement.fixture", NULL, "plan.refinement_missing_field@$.refinement.fixture" },
                { "refinement.base.content_digest", NULL,
                  "plan.refinement_missing_field@$.refinement.base.content_digest" },
                { "refinement.matched_context_digest", NULL,
                  "plan.refinement_missing_field@$.refinement.matched_context_digest" },
                { "refinement.candidate", json_string("skill-candidate"),
                  "plan.refinement_wrong_type@$.refinement.candidate" },
                { "refinement.variant", json_integer(0), "plan.refinement_wrong_type@$.refinement.variant" },
                { "refinement.fixture.destination_alias", json_null(),
                  "plan.refinement_wrong_type@$.refinement.fixture.destination_alias" },
                { "refinement.base.projection_id", json_string("a/b"),
                  "plan.refinement_invalid_identifier@$.refinement.base.projection_id" },
                { "refinement.candidate.destination_alias", json_string(""),
                  "plan.refinement_invalid_identifier@$.refinement.candidate.destination_alias" },
                { "refinement.matched_context_digest", json_string("abc"),
                  "plan.refinement_invalid_digest@$.refinement.matched_context_digest" },
                { "refinement.fixture.content_digest", json_string(upper),
                  "plan.refinement_invalid_digest@$.refinement.fixture.content_digest" },
                { "refinement.variant", json_string("control"), "plan.refinement_invalid_variant@$.refinement.variant" },
                { "refinement.candidate.projection_id", json_string("skill-base"),
                  "plan.refinement_projection_reused@$.refinement.candidate.projection_id" },
                { "refinement.fixture.projection_id", json_string("skill-candidate"),
                  "plan.refinement_projection_reused@$.refinement.fixture.projection_id" },
                { "refinement.fixture.content_digest", json_string(base_digest),
                  "plan.refinement_projection_reused@$.refinement.fixture.content_digest" },
        };
        run_cases(cases, sizeof(cases) / sizeof(cases[0]));
        free((char *)base_digest);
}

/* Every reason is reported, in check order. */
static void test_every_reason(void **state) {
        (void)state;
        _cleanup_json_ json_t *p = plan();
        jset(p, "evaluation_protocol", json_string("other"));
        jset(p, "refinement.zz", json_integer(1));
        jset(p, "refinement.base.content_digest", json_string("x"));
        jset(p, "refinement.variant", json_string("both"));
        int r;
        assert_string_equal(decode_reasons(p, &r, NULL),
                            "plan.refinement_unknown_protocol@$.evaluation_protocol "
                            "plan.refinement_unknown_field@$.refinement.zz "
                            "plan.refinement_invalid_digest@$.refinement.base.content_digest "
                            "plan.refinement_invalid_variant@$.refinement.variant");
        /* Messages name no plan value. */
        struct reasons rs = { 0 };
        enum glove_refinement_plan_kind kind;
        struct glove_refinement_binding b;
        glove_refinement_plan_decode(p, &kind, &b, collect, &rs, NULL);
        for (size_t i = 0; i < rs.n; i++) {
                assert_null(strstr(rs.message[i], "other"));
                assert_null(strstr(rs.message[i], "both"));
        }
}

/* ---- the plan rules ---- */

static json_t *entry(const char *id, const char *digest, const char *dest) {
        return json_pack("{s:s,s:s,s:s}", "content_digest", digest, "destination_alias", dest, "projection_id", id);
}

static const char *rules(json_t *p) {
        static char out[2048];
        struct glove_refinement_binding b;
        int r;
        decode_reasons(p, &r, &b);
        assert_int_equal(r, 0);
        struct reasons rs = { 0 };
        struct glove_error err = { 0 };
        r = glove_refinement_plan_check_rules(p, &b, collect, &rs, &err);
        assert_int_equal(r == 0, rs.n == 0);
        out[0] = '\0';
        for (size_t i = 0; i < rs.n; i++) {
                size_t n = strlen(out);
                snprintf(out + n, sizeof(out) - n, "%s%s@%s", i ? " " : "", rs.code[i], rs.path[i]);
        }
        return out;
}

static void test_rules(void **state) {
        (void)state;
        _cleanup_json_ json_t *p0 = plan();
        json_t *ref = json_object_get(p0, "refinement");
        const char *fd = json_string_value(json_object_get(json_object_get(ref, "fixture"), "content_digest"));
        const char *bd = json_string_value(json_object_get(json_object_get(ref, "base"), "content_digest"));
        const char *cd = json_string_value(json_object_get(json_object_get(ref, "candidate"), "content_digest"));
        json_t *fixture = entry("refinement-fixture", fd, "refinement-fixtures");
        json_t *base = entry("skill-base", bd, "libraries");
        json_t *cand = entry("skill-candidate", cd, "libraries");
        struct {
                json_t *projections;
                json_t *grants;
                const char *variant;
                const char *want;
        } cases[] = {
                { json_pack("[O,O]", fixture, base), json_pack("[{s:s},{s:s}]", "alias", "a", "alias", "b"), NULL,
                  "plan.refinement_path_grants@$.path_grants[0] plan.refinement_path_grants@$.path_grants[1]" },
                { json_pack("[O,O,O]", fixture, base, cand), NULL, NULL,
                  "plan.refinement_projection_count@$.library_projections "
                  "plan.refinement_unselected_projected@$.library_projections[2]" },
                { json_pack("[O]", fixture), NULL, NULL,
                  "plan.refinement_projection_count@$.library_projections "
                  "plan.refinement_variant_not_projected@$.library_projections" },
                { json_pack("[]"), NULL, NULL,
                  "plan.refinement_projection_count@$.library_projections "
                  "plan.refinement_fixture_not_projected@$.library_projections "
                  "plan.refinement_variant_not_projected@$.library_projections" },
                /* The variant names the other skill. */
                { json_pack("[O,O]", fixture, cand), NULL, NULL,
                  "plan.refinement_unselected_projected@$.library_projections[1] "
                  "plan.refinement_variant_not_projected@$.library_projections" },
                { json_pack("[O,O]", fixture, base), NULL, "candidate",
                  "plan.refinement_unselected_projected@$.library_projections[1] "
                  "plan.refinement_variant_not_projected@$.library_projections" },
                { json_pack("[o,O]", entry("extra", fd, "refinement-fixtures"), base), NULL, NULL,
                  "plan.refinement_unknown_projection@$.library_projections[0] "
                  "plan.refinement_fixture_not_projected@$.library_projections" },
                { json_pack("[O,o]", fixture, entry("skill-base", cd, "libraries")), NULL, NULL,
                  "plan.refinement_projection_mismatch@$.library_projections[1]" },
                { json_pack("[o,O]", entry("refinement-fixture", fd, "libraries"), base), NULL, NULL,
                  "plan.refinement_projection_mismatch@$.library_projections[0]" },
                /* Shapes are the plan validator's: skipped here. */
                { json_pack("[O,O,i]", fixture, base, 3), NULL, NULL,
                  "plan.refinement_projection_count@$.library_projections" },
                /* The candidate run. */
                { json_pack("[O,O]", fixture, cand), NULL, "candidate", "" },
                { json_pack("[O,O]", fixture, base), json_array(), NULL, "" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_json_ json_t *p = plan();
                jset(p, "library_projections", cases[i].projections);
                if (cases[i].grants)
                        jset(p, "path_grants", cases[i].grants);
                if (cases[i].variant)
                        jset(p, "refinement.variant", json_string(cases[i].variant));
                const char *got = rules(p);
                if (strcmp(got, cases[i].want) != 0)
                        fail_msg("case %zu:\n got  %s\n want %s", i, got, cases[i].want);
        }
        json_decref(fixture);
        json_decref(base);
        json_decref(cand);
        /* path_grants and library_projections absent: left to the validator. */
        _cleanup_json_ json_t *p = plan();
        jset(p, "path_grants", NULL);
        jset(p, "library_projections", json_string("x"));
        assert_string_equal(rules(p), "");
}

/* ---- the plan context ---- */

static void test_context_from_plan(void **state) {
        (void)state;
        _cleanup_json_ json_t *p = plan();
        struct glove_refinement_binding b;
        int r;
        decode_reasons(p, &r, &b);
        assert_int_equal(r, 0);
        struct glove_refinement_plan_context ctx;
        const char **handles = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_plan_context_from_plan(p, &b, &ctx, &handles, &err), 0);
        assert_string_equal(ctx.runtime_id, "codex");
        assert_string_equal(ctx.runtime_template_id, "codex-safe");
        assert_string_equal(ctx.sandbox_backend, "linux_production");
        assert_string_equal(ctx.egress_policy_id, "fake-model");
        assert_string_equal(ctx.tool_policy_id, "default-tools");
        assert_int_equal(ctx.n_secret_handles, 1);
        assert_string_equal(ctx.secret_handles[0], "openai-key");
        assert_ptr_equal(ctx.secret_handles, handles);
        assert_int_equal(ctx.limits.cpu_time_ms, 60000);
        assert_int_equal(ctx.limits.memory_bytes, 2147483648LL);
        assert_int_equal(ctx.limits.pids, 256);
        assert_int_equal(ctx.limits.wall_time_ms, 300000);
        assert_int_equal(ctx.limits.disk_bytes, 1073741824LL);
        assert_int_equal(ctx.limits.terminal_output_bytes, 16777216);
        assert_int_equal(ctx.policy_revision, 7);
        assert_true(glove_refinement_projection_equal(&ctx.base, &b.base));
        assert_true(glove_refinement_projection_equal(&ctx.candidate, &b.candidate));
        free(handles);

        const char *bad[] = { "runtime_id", "limits.pids", "limits", "secret_handles", "policy_revision",
                              "tool_policy_id" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_json_ json_t *q = plan();
                jset(q, bad[i], json_real(1.5));
                err = (struct glove_error){ 0 };
                handles = NULL;
                assert_int_equal(glove_refinement_plan_context_from_plan(q, &b, &ctx, &handles, &err), -EINVAL);
                assert_string_equal(err.code, "refinement.plan_context_invalid");
                assert_null(handles);
        }
        _cleanup_json_ json_t *q = plan();
        jset(q, "secret_handles", json_pack("[s,i]", "a", 1));
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_plan_context_from_plan(q, &b, &ctx, &handles, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.plan_context_invalid");
        jset(q, "secret_handles", json_array());
        assert_int_equal(glove_refinement_plan_context_from_plan(q, &b, &ctx, &handles, &err), 0);
        assert_null(handles);
        assert_int_equal(ctx.n_secret_handles, 0);
}

static void test_misuse(void **state) {
        (void)state;
        enum glove_refinement_plan_kind kind;
        struct glove_refinement_binding b;
        struct glove_error err = { 0 };
        _cleanup_json_ json_t *arr = json_array();
        assert_int_equal(glove_refinement_plan_decode(arr, &kind, &b, NULL, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_plan_decode(NULL, &kind, &b, NULL, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_plan_check_rules(arr, &b, NULL, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        err = (struct glove_error){ 0 };
        const char **h;
        struct glove_refinement_plan_context ctx;
        assert_int_equal(glove_refinement_plan_context_from_plan(arr, &b, &ctx, &h, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        assert_string_equal(glove_refinement_variant_name(1), "candidate");
        assert_null(glove_refinement_variant_name(2));
        /* Identifier classes. */
        assert_true(glove_refinement_plan_identifier_valid("_x"));
        assert_false(glove_refinement_id_valid("_x"));
        assert_true(glove_refinement_id_valid("x_"));
        assert_false(glove_refinement_plan_identifier_valid(NULL));
        assert_false(glove_refinement_hex64_valid(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_example),       cmocka_unit_test(test_ordinary),
                cmocka_unit_test(test_binding_codes), cmocka_unit_test(test_every_reason),
                cmocka_unit_test(test_rules),         cmocka_unit_test(test_context_from_plan),
                cmocka_unit_test(test_misuse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

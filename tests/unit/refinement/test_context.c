/* SPDX-License-Identifier: Apache-2.0 */
/* glove/refinement/context.h: the C digests equal the independent Python
 * reference's vectors (tests/fixtures/refinement/vectors.json, written from
 * tests/vectors/refinement_vectors.py); a matched pair has equal contexts
 * although variant, session, expiry and selected projection differ;
 * changing any included member changes its digest, changing an excluded
 * one does not. */
#include "helpers.h"

struct digests {
        char plan[65], fixture[65], matched[65], document[65];
};

/* The digests of a plan and a fixture (objects), computed by the C code:
 * the plan through its binding, the fixture through the decoder. */
static void compute(const json_t *plan, const json_t *fixture, struct digests *d) {
        struct glove_refinement_binding b;
        enum glove_refinement_plan_kind kind;
        struct reasons rs = { 0 };
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_plan_decode(plan, &kind, &b, collect, &rs, &err), 0);
        struct glove_refinement_plan_context ctx;
        const char **handles = NULL;
        assert_int_equal(glove_refinement_plan_context_from_plan(plan, &b, &ctx, &handles, &err), 0);
        assert_int_equal(glove_refinement_plan_context_digest(&ctx, d->plan, &err), 0);
        free(handles);
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = fixture_of(fixture);
        assert_int_equal(glove_refinement_fixture_context_digest(f, d->fixture, &err), 0);
        assert_int_equal(glove_refinement_matched_context_digest(d->plan, d->fixture, d->matched, &err), 0);
        memcpy(d->document, f->document_digest, 65);
}

static const char *field(const json_t *v, const char *key) {
        const char *s = json_string_value(json_object_get(v, key));
        assert_non_null(s);
        return s;
}

static void test_vectors(void **state) {
        (void)state;
        _cleanup_json_ json_t *all = read_json("vectors.json");
        json_t *vs = json_object_get(all, "vectors");
        assert_true(json_array_size(vs) >= 7);
        size_t i;
        json_t *v;
        json_array_foreach(vs, i, v) {
                json_t *plan = json_object_get(v, "plan"), *fixture = json_object_get(v, "fixture");
                struct digests d;
                compute(plan, fixture, &d);
                const char *name = field(v, "name");
                if (strcmp(d.plan, field(v, "plan_context_digest")) != 0 ||
                    strcmp(d.fixture, field(v, "fixture_context_digest")) != 0 ||
                    strcmp(d.matched, field(v, "matched_context_digest")) != 0 ||
                    strcmp(d.document, field(v, "fixture_document_digest")) != 0)
                        fail_msg("vector %s: C gives plan %s fixture %s matched %s document %s", name, d.plan,
                                 d.fixture, d.matched, d.document);
                /* Each vector's plan commits its fixture and matched
                 * context: the fixture passes the check. */
                struct glove_refinement_binding b;
                char pc[65];
                struct glove_refinement_bound bound;
                bound_of(plan, field(fixture, "session_id"), &b, pc, &bound);
                _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = fixture_of(fixture);
                struct glove_error err = { 0 };
                char path[GLOVE_JSON_PATH_MAX];
                if (glove_refinement_fixture_check(f, &bound, path, &err) < 0)
                        fail_msg("vector %s: %s", name, err.message);
        }
}

/* The worked example's pair: only variant, session, expiry and selected
 * projection (and so the fixture document and its commitment) differ. */
static void test_matched_pair(void **state) {
        (void)state;
        _cleanup_json_ json_t *all = read_json("vectors.json");
        json_t *vs = json_object_get(all, "vectors");
        json_t *a = json_array_get(vs, 0), *b = json_array_get(vs, 1);
        assert_string_equal(field(a, "name"), "pair-base");
        assert_string_equal(field(b, "name"), "pair-candidate");
        struct digests da, db;
        compute(json_object_get(a, "plan"), json_object_get(a, "fixture"), &da);
        compute(json_object_get(b, "plan"), json_object_get(b, "fixture"), &db);
        assert_string_equal(da.plan, db.plan);
        assert_string_equal(da.fixture, db.fixture);
        assert_string_equal(da.matched, db.matched);
        assert_string_not_equal(da.document, db.document);
        json_t *pa = json_object_get(a, "plan"), *pb = json_object_get(b, "plan");
        assert_false(json_equal(json_object_get(pa, "expires_at_ms"), json_object_get(pb, "expires_at_ms")));
        assert_false(json_equal(json_object_get(pa, "library_projections"), json_object_get(pb, "library_projections")));
        json_t *fa = json_object_get(a, "fixture"), *fb = json_object_get(b, "fixture");
        assert_string_not_equal(field(fa, "session_id"), field(fb, "session_id"));
        assert_string_not_equal(field(fa, "variant"), field(fb, "variant"));
}

/* ---- the plan context: each member counts, expiry and selection do not ---- */

static void plan_digest(const json_t *plan, char out[65]) {
        struct glove_refinement_binding b;
        enum glove_refinement_plan_kind kind;
        struct reasons rs = { 0 };
        assert_int_equal(glove_refinement_plan_decode(plan, &kind, &b, collect, &rs, NULL), 0);
        struct glove_refinement_plan_context ctx;
        const char **handles = NULL;
        assert_int_equal(glove_refinement_plan_context_from_plan(plan, &b, &ctx, &handles, NULL), 0);
        assert_int_equal(glove_refinement_plan_context_digest(&ctx, out, NULL), 0);
        free(handles);
}

static const char *OTHER_DIGEST = "00000000000000000000000000000000000000000000000000000000000000ff";

static void test_plan_context_members(void **state) {
        (void)state;
        _cleanup_json_ json_t *p0 = read_json("example-plan.json");
        char d0[65];
        plan_digest(p0, d0);
        struct {
                const char *member;
                json_t *value;
        } included[] = {
                { "runtime_id", json_string("claude-code") },
                { "runtime_template_id", json_string("codex-safe-2") },
                { "adapter_command_digest", json_string(OTHER_DIGEST) },
                { "sandbox_backend", json_string("apple_container") },
                { "egress_policy_id", json_string("none") },
                { "tool_policy_id", json_string("other-tools") },
                { "secret_handles", json_array() },
                { "secret_handles", json_pack("[s,s]", "openai-key", "z-key") },
                { "policy_revision", json_integer(8) },
                { "limits.cpu_time_ms", json_integer(60001) },
                { "limits.memory_bytes", json_integer(2147483649LL) },
                { "limits.pids", json_integer(257) },
                { "limits.wall_time_ms", json_integer(300001) },
                { "limits.disk_bytes", json_integer(1073741825LL) },
                { "limits.terminal_output_bytes", json_integer(16777217) },
                { "refinement.base.projection_id", json_string("skill-base-2") },
                { "refinement.base.content_digest", json_string(OTHER_DIGEST) },
                { "refinement.base.destination_alias", json_string("libraries-2") },
                { "refinement.candidate.projection_id", json_string("skill-candidate-2") },
                { "refinement.candidate.content_digest", json_string(OTHER_DIGEST) },
                { "refinement.candidate.destination_alias", json_string("libraries-2") },
        }, excluded[] = {
                { "expires_at_ms", json_integer(1) },
                { "refinement.variant", json_string("candidate") },
                { "refinement.fixture.content_digest", json_string(OTHER_DIGEST) },
                { "refinement.fixture.projection_id", json_string("fixture-2") },
                { "refinement.matched_context_digest", json_string(OTHER_DIGEST) },
                { "library_projections", json_array() },
                { "path_grants", json_pack("[{}]") },
                { "schema_version", json_integer(2) },
        };
        for (size_t i = 0; i < sizeof(included) / sizeof(included[0]); i++) {
                _cleanup_json_ json_t *p = read_json("example-plan.json");
                jset(p, included[i].member, included[i].value);
                char d[65];
                plan_digest(p, d);
                if (strcmp(d, d0) == 0)
                        fail_msg("changing %s leaves the plan-context digest", included[i].member);
        }
        for (size_t i = 0; i < sizeof(excluded) / sizeof(excluded[0]); i++) {
                _cleanup_json_ json_t *p = read_json("example-plan.json");
                jset(p, excluded[i].member, excluded[i].value);
                char d[65];
                plan_digest(p, d);
                if (strcmp(d, d0) != 0)
                        fail_msg("changing %s changes the plan-context digest", excluded[i].member);
        }
}

static void fixture_digest(const json_t *v, char out[65]) {
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = fixture_of(v);
        assert_int_equal(glove_refinement_fixture_context_digest(f, out, NULL), 0);
}

static void test_fixture_context_members(void **state) {
        (void)state;
        _cleanup_json_ json_t *f0 = read_json("example-fixture.json");
        char d0[65];
        fixture_digest(f0, d0);
        const char *cand = json_string_value(json_object_get(f0, "candidate_projection_digest"));
        struct {
                const char *member;
                json_t *value;
        } included[] = {
                { "evaluation_run_id", json_string("run-2") },
                { "matched_pair_id", json_string("pair-2") },
                { "proposal_digest", json_string(OTHER_DIGEST) },
                { "candidate_projection_digest", json_string(OTHER_DIGEST) },
                { "fixture_digest", json_string(OTHER_DIGEST) },
                { "dataset_digest", json_string(OTHER_DIGEST) },
                { "fixture_id", json_string("lint-4") },
                { "dataset_reference", json_string("glove-demo/lint-tasks@v2") },
                { "seed", json_integer(43) },
                { "model_identity", json_string("other-model") },
                { "harness", json_string("codex-cli@0.46.0") },
                { "module", NULL },
                { "module.identity", json_string("lint-module@3") },
                { "module.selectors", json_pack("[s]", "python") },
                { "expected.exit_code", json_integer(1) },
                { "expected.max_wall_latency_us", NULL },
                { "expected.max_wall_latency_us", json_integer(120000001) },
                { "expected.required_literals", json_pack("[s]", "PASS lint") },
                { "expected.forbidden_literals", json_array() },
        }, excluded[] = {
                { "session_id", json_string("s-other") },
                { "selected_projection.projection_id", json_string("skill-base-2") },
                { "selected_projection.destination_alias", json_string("libraries-2") },
        };
        for (size_t i = 0; i < sizeof(included) / sizeof(included[0]); i++) {
                _cleanup_json_ json_t *v = read_json("example-fixture.json");
                jset(v, included[i].member, included[i].value);
                char d[65];
                fixture_digest(v, d);
                if (strcmp(d, d0) == 0)
                        fail_msg("changing %s leaves the fixture-context digest", included[i].member);
        }
        /* base_projection_digest moves with the selected projection's digest
         * (the fixture requires them equal for a base run). */
        {
                _cleanup_json_ json_t *v = read_json("example-fixture.json");
                jset(v, "base_projection_digest", json_string(OTHER_DIGEST));
                jset(v, "selected_projection.content_digest", json_string(OTHER_DIGEST));
                char d[65];
                fixture_digest(v, d);
                assert_string_not_equal(d, d0);
        }
        for (size_t i = 0; i < sizeof(excluded) / sizeof(excluded[0]); i++) {
                _cleanup_json_ json_t *v = read_json("example-fixture.json");
                jset(v, excluded[i].member, excluded[i].value);
                char d[65];
                fixture_digest(v, d);
                if (strcmp(d, d0) != 0)
                        fail_msg("changing %s changes the fixture-context digest", excluded[i].member);
        }
        /* The variant with its selected projection. */
        _cleanup_json_ json_t *v = read_json("example-fixture.json");
        jset(v, "variant", json_string("candidate"));
        jset(v, "selected_projection.content_digest", json_string(cand));
        char d[65];
        fixture_digest(v, d);
        assert_string_equal(d, d0);
}

/* The objects hashed are exactly those of docs/digests.md. */
static void test_objects(void **state) {
        (void)state;
        _cleanup_json_ json_t *p = read_json("example-plan.json");
        struct glove_refinement_binding b;
        enum glove_refinement_plan_kind kind;
        struct reasons rs = { 0 };
        assert_int_equal(glove_refinement_plan_decode(p, &kind, &b, collect, &rs, NULL), 0);
        struct glove_refinement_plan_context ctx;
        const char **handles = NULL;
        assert_int_equal(glove_refinement_plan_context_from_plan(p, &b, &ctx, &handles, NULL), 0);
        _cleanup_json_ json_t *o = NULL;
        assert_int_equal(glove_refinement_plan_context_json(&ctx, &o, NULL), 0);
        free(handles);
        size_t len;
        _cleanup_free_ char *text = canonical(o, &len);
        assert_non_null(strstr(text, "\"schema\":\"glove.refinement-plan-context-v1\""));
        assert_int_equal(json_object_size(o), 12);
        assert_null(json_object_get(o, "expires_at_ms"));

        _cleanup_json_ json_t *fx = read_json("example-fixture.json");
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = fixture_of(fx);
        _cleanup_json_ json_t *fc = NULL;
        assert_int_equal(glove_refinement_fixture_context_json(f, &fc, NULL), 0);
        /* The fixture without three members, the schema renamed. */
        json_object_del(fx, "session_id");
        json_object_del(fx, "variant");
        json_object_del(fx, "selected_projection");
        json_object_set_new(fx, "schema", json_string("glove.refinement-fixture-context-v1"));
        assert_true(json_equal(fx, fc));

        char m[65];
        const char *a = "1111111111111111111111111111111111111111111111111111111111111111";
        const char *c = "2222222222222222222222222222222222222222222222222222222222222222";
        assert_int_equal(glove_refinement_matched_context_digest(a, c, m, NULL), 0);
        char want[65];
        _cleanup_json_ json_t *mo = json_pack("{s:s,s:s,s:s}", "fixture_context_digest", c, "plan_context_digest", a,
                                              "schema", "glove.refinement-matched-context-v1");
        assert_int_equal(glove_refinement_json_digest(mo, want, NULL), 0);
        assert_string_equal(m, want);
        /* The order of the two digests matters. */
        char swapped[65];
        assert_int_equal(glove_refinement_matched_context_digest(c, a, swapped, NULL), 0);
        assert_string_not_equal(m, swapped);
}

static void test_misuse(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        char out[65];
        assert_int_equal(glove_refinement_matched_context_digest("abc", OTHER_DIGEST, out, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        struct glove_refinement_plan_context ctx = { 0 };
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_plan_context_digest(&ctx, out, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_plan_context_digest(NULL, out, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        /* Complete but for a negative limit, or a string that is not UTF-8. */
        ctx = (struct glove_refinement_plan_context){
                .runtime_id = "r", .runtime_template_id = "t", .adapter_command_digest = OTHER_DIGEST,
                .sandbox_backend = "linux_production", .egress_policy_id = "e", .tool_policy_id = "t",
                .limits = { 1, 1, 1, 1, 1, 1 }, .policy_revision = 1,
                .base = { "b", OTHER_DIGEST, "d" }, .candidate = { "c", OTHER_DIGEST, "d" },
        };
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_plan_context_digest(&ctx, out, &err), 0);
        ctx.limits.pids = -1;
        assert_int_equal(glove_refinement_plan_context_digest(&ctx, out, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        ctx.limits.pids = 1;
        ctx.runtime_id = "\xff";
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_plan_context_digest(&ctx, out, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_context_digest(NULL, out, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),
                cmocka_unit_test(test_matched_pair),
                cmocka_unit_test(test_plan_context_members),
                cmocka_unit_test(test_fixture_context_members),
                cmocka_unit_test(test_objects),
                cmocka_unit_test(test_misuse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

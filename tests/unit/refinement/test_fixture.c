/* SPDX-License-Identifier: Apache-2.0 */
/* glove/refinement/fixture.h: the worked example decodes to what it says;
 * every refusal of tests/fixtures/refinement/bad/MANIFEST gives its code and
 * path (decoder and plan check); the bounds are accepted at their edge and
 * refused one past it. */
#include "helpers.h"

static const char *SESSION = "s-lint-3-base";

static void test_example(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = read_fixture("example-fixture.json", &len);
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = NULL;
        struct glove_error err = { 0 };
        char path[GLOVE_JSON_PATH_MAX];
        assert_int_equal(glove_refinement_fixture_decode(text, len, &f, path, &err), 0);
        assert_string_equal(path, "");
        assert_string_equal(f->evaluation_run_id, "run-2026-01-01-001");
        assert_string_equal(f->matched_pair_id, "pair-lint-3");
        assert_string_equal(f->session_id, SESSION);
        assert_int_equal(f->variant, GLOVE_REFINEMENT_VARIANT_BASE);
        assert_string_equal(f->fixture_id, "lint-3");
        assert_string_equal(f->dataset_reference, "glove-demo/lint-tasks@v1");
        assert_int_equal(f->seed, 42);
        assert_string_equal(f->model_identity, "openai/gpt-5-codex@2025-09-15");
        assert_string_equal(f->harness, "codex-cli@0.45.0");
        assert_true(f->has_module);
        assert_string_equal(f->module_identity, "lint-module@2");
        assert_int_equal(f->n_module_selectors, 2);
        assert_string_equal(f->module_selectors[1], "shell");
        assert_string_equal(f->selected_projection.projection_id, "skill-base");
        assert_string_equal(f->selected_projection.destination_alias, "libraries");
        assert_string_equal(f->selected_projection.content_digest, f->base_projection_digest);
        assert_int_equal(f->expected_termination, GLOVE_REFINEMENT_EXPECT_EXITED);
        assert_int_equal(f->expected_exit_code, 0);
        assert_true(f->has_max_wall_latency);
        assert_int_equal(f->max_wall_latency_us, 120000000);
        assert_int_equal(f->n_required, 3);
        assert_int_equal(f->required[2].len, strlen("\xe2\x9c\x93 all checks passed"));
        assert_memory_equal(f->required[2].bytes, "\xe2\x9c\x93 all checks passed", f->required[2].len);
        assert_int_equal(f->n_forbidden, 1);
        assert_string_equal(f->forbidden[0].bytes, "Traceback (most recent call last)");
        /* document_digest is the SHA-256 of the bytes: what the plan commits. */
        uint8_t md[32];
        char hex[65];
        assert_int_equal(glove_digest_sha256(text, len, md, NULL), 0);
        glove_digest_hex_encode(md, 32, hex, sizeof(hex));
        assert_string_equal(f->document_digest, hex);
        _cleanup_json_ json_t *plan = read_json("example-plan.json");
        assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(json_object_get(plan, "refinement"), "fixture"), "content_digest")),
                            hex);
        /* And it matches the plan that commits it. */
        struct glove_refinement_binding b;
        char pc[65];
        struct glove_refinement_bound bound;
        bound_of(plan, SESSION, &b, pc, &bound);
        assert_int_equal(glove_refinement_fixture_check(f, &bound, path, &err), 0);
        assert_string_equal(path, "");
}

/* One MANIFEST line: FILE CODE PATH. */
static void check_bad(const char *file, const char *code, const char *want_path) {
        char name[512];
        snprintf(name, sizeof(name), "bad/%s", file);
        size_t len;
        _cleanup_free_ char *text = read_fixture(name, &len);
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = NULL;
        struct glove_error err = { 0 };
        char path[GLOVE_JSON_PATH_MAX];
        int r = glove_refinement_fixture_decode(text, len, &f, path, &err);
        if (strncmp(code, "refinement.fixture_mismatch_", 28) != 0) {
                if (r == 0)
                        fail_msg("%s: accepted, want %s", file, code);
                assert_int_equal(r, -EINVAL);
                assert_null(f);
                if (strcmp(err.code, code) != 0 || strcmp(path, want_path) != 0)
                        fail_msg("%s: got %s at %s (%s), want %s at %s", file, err.code, path, err.message, code,
                                 want_path);
                /* The message starts with the path. */
                assert_int_equal(strncmp(err.message, want_path, strlen(want_path)), 0);
                return;
        }
        if (r < 0)
                fail_msg("%s: refused by the decoder: %s %s", file, err.code, err.message);
        _cleanup_json_ json_t *plan = read_json("example-plan.json");
        struct glove_refinement_binding b;
        char pc[65];
        struct glove_refinement_bound bound;
        bound_of(plan, SESSION, &b, pc, &bound);
        /* The plan commits this file, except for the document case (see
         * generate.py). */
        if (strcmp(code, "refinement.fixture_mismatch_document") != 0)
                bound.fixture.content_digest = f->document_digest;
        r = glove_refinement_fixture_check(f, &bound, path, &err);
        if (r == 0)
                fail_msg("%s: matched the plan, want %s", file, code);
        assert_int_equal(r, -EINVAL);
        if (strcmp(err.code, code) != 0 || strcmp(path, want_path) != 0)
                fail_msg("%s: got %s at %s (%s), want %s at %s", file, err.code, path, err.message, code, want_path);
}

static void test_manifest(void **state) {
        (void)state;
        _cleanup_free_ char *manifest = read_fixture("bad/MANIFEST", NULL);
        size_t lines = 0;
        char *save = NULL;
        for (char *line = strtok_r(manifest, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (line[0] == '#')
                        continue;
                char file[256], code[128], path[256];
                assert_int_equal(sscanf(line, "%255s %127s %255s", file, code, path), 3);
                check_bad(file, code, path);
                lines++;
        }
        assert_true(lines >= 60);
}

/* ---- bounds ---- */

static json_t *example(void) {
        return read_json("example-fixture.json");
}

static const char *decode_code(const json_t *v, char path[GLOVE_JSON_PATH_MAX]) {
        static struct glove_error err;
        err = (struct glove_error){ 0 };
        size_t len;
        _cleanup_free_ char *text = canonical(v, &len);
        struct glove_refinement_fixture *f = NULL;
        int r = glove_refinement_fixture_decode(text, len, &f, path, &err);
        glove_refinement_fixture_free(f);
        return r < 0 ? err.code : "ok";
}

static json_t *strings(size_t n, size_t len, char fill) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
                char *s = malloc(len + 1);
                memset(s, fill, len);
                snprintf(s, len + 1, "%03zu", i); /* sorted, distinct prefixes */
                s[3 < len ? 3 : len] = fill;
                s[len] = '\0';
                json_array_append_new(a, json_string(s));
                free(s);
        }
        return a;
}

static void test_edges_accepted(void **state) {
        (void)state;
        char path[GLOVE_JSON_PATH_MAX];
        _cleanup_json_ json_t *v = example();
        char id[129];
        memset(id, 'a', 128);
        id[128] = '\0';
        char text[257];
        memset(text, 't', 256);
        text[256] = '\0';
        jset(v, "seed", json_integer(GLOVE_REFINEMENT_INT_MAX));
        jset(v, "expected.exit_code", json_integer(255));
        jset(v, "expected.max_wall_latency_us", json_integer(GLOVE_REFINEMENT_LATENCY_MAX_US));
        jset(v, "expected.required_literals", strings(64, 10, 'r'));
        jset(v, "expected.forbidden_literals", strings(3, 1024, 'f'));
        jset(v, "module.selectors", strings(32, 5, 's'));
        jset(v, "session_id", json_string(id));
        jset(v, "selected_projection.projection_id", json_string(id));
        jset(v, "harness", json_string(text));
        jset(v, "dataset_reference", json_string("!~"));
        assert_string_equal(decode_code(v, path), "ok");
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = fixture_of(v);
        assert_int_equal(f->seed, GLOVE_REFINEMENT_INT_MAX);
        assert_int_equal(f->n_required, 64);
        assert_int_equal(f->forbidden[2].len, 1024);
        assert_int_equal(f->n_module_selectors, 32);

        /* Optional members absent, empty lists. */
        _cleanup_json_ json_t *w = example();
        jset(w, "module", NULL);
        jset(w, "expected.max_wall_latency_us", NULL);
        jset(w, "expected.required_literals", json_array());
        jset(w, "expected.forbidden_literals", json_array());
        jset(w, "seed", json_integer(0));
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *g = fixture_of(w);
        assert_false(g->has_module);
        assert_null(g->module_identity);
        assert_false(g->has_max_wall_latency);
        assert_int_equal(g->n_required + g->n_forbidden, 0);

        /* An empty selector list with a module; a candidate run. */
        _cleanup_json_ json_t *x = example();
        jset(x, "module.selectors", json_array());
        jset(x, "variant", json_string("candidate"));
        jset(x, "selected_projection.content_digest",
             json_string(json_string_value(json_object_get(x, "candidate_projection_digest"))));
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *h = fixture_of(x);
        assert_true(h->has_module);
        assert_int_equal(h->n_module_selectors, 0);
        assert_int_equal(h->variant, GLOVE_REFINEMENT_VARIANT_CANDIDATE);
}

static void test_edges_refused(void **state) {
        (void)state;
        char path[GLOVE_JSON_PATH_MAX];
        struct {
                const char *member;
                json_t *value;
                const char *code, *path;
        } cases[] = {
                { "seed", json_integer(GLOVE_REFINEMENT_INT_MAX + 1), "refinement.fixture_out_of_range", "$.seed" },
                { "expected.exit_code", json_integer(-1), "refinement.fixture_out_of_range", "$.expected.exit_code" },
                { "expected.max_wall_latency_us", json_integer(GLOVE_REFINEMENT_LATENCY_MAX_US + 1),
                  "refinement.fixture_out_of_range", "$.expected.max_wall_latency_us" },
                { "expected.required_literals", strings(65, 10, 'r'), "refinement.fixture_item_count",
                  "$.expected.required_literals" },
                { "expected.forbidden_literals", strings(65, 10, 'r'), "refinement.fixture_item_count",
                  "$.expected.forbidden_literals" },
                { "expected.forbidden_literals", strings(1, 1025, 'f'), "refinement.fixture_literal_too_long",
                  "$.expected.forbidden_literals[0]" },
                { "expected.forbidden_literals", json_pack("[s]", ""), "refinement.fixture_empty_literal",
                  "$.expected.forbidden_literals[0]" },
                { "module.selectors", strings(33, 5, 's'), "refinement.fixture_item_count", "$.module.selectors" },
                { "module.identity", json_string(""), "refinement.fixture_invalid_text", "$.module.identity" },
                { "module.identity", json_string("a\x7f"), "refinement.fixture_invalid_text", "$.module.identity" },
                { "session_id", json_string(""), "refinement.fixture_invalid_identifier", "$.session_id" },
                { "matched_pair_id", json_string("_pair"), "refinement.fixture_invalid_identifier",
                  "$.matched_pair_id" },
                { "selected_projection.destination_alias", json_string("a/b"),
                  "refinement.fixture_invalid_identifier", "$.selected_projection.destination_alias" },
                { "fixture_digest", json_string(""), "refinement.fixture_invalid_digest", "$.fixture_digest" },
                { "expected", json_array(), "refinement.fixture_wrong_type", "$.expected" },
                { "selected_projection", json_string("skill-base"), "refinement.fixture_wrong_type",
                  "$.selected_projection" },
                { "schema", json_integer(1), "refinement.fixture_wrong_type", "$.schema" },
                { "variant", json_true(), "refinement.fixture_wrong_type", "$.variant" },
                { "module.selectors", json_pack("[i]", 1), "refinement.fixture_wrong_type", "$.module.selectors[0]" },
                { "expected.termination", NULL, "refinement.fixture_missing_field", "$.expected.termination" },
                { "selected_projection.content_digest", NULL, "refinement.fixture_missing_field",
                  "$.selected_projection.content_digest" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_json_ json_t *v = example();
                jset(v, cases[i].member, cases[i].value);
                const char *code = decode_code(v, path);
                if (strcmp(code, cases[i].code) != 0 || strcmp(path, cases[i].path) != 0)
                        fail_msg("case %zu (%s): got %s at %s, want %s at %s", i, cases[i].member, code, path,
                                 cases[i].code, cases[i].path);
        }
        /* A wrong schema is reported before an unknown member. */
        _cleanup_json_ json_t *v = example();
        jset(v, "schema", json_string("glove.refinement-eval-fixture-v0"));
        jset(v, "zzz", json_integer(1));
        assert_string_equal(decode_code(v, path), "refinement.fixture_unsupported_schema");
}

/* Exactly GLOVE_REFINEMENT_FIXTURE_MAX_BYTES is accepted, one more byte is
 * refused before anything else is looked at. */
static void test_size(void **state) {
        (void)state;
        _cleanup_json_ json_t *v = example();
        jset(v, "expected.forbidden_literals", strings(62, 1024, 'f'));
        size_t len;
        free(canonical(v, &len));
        size_t missing = GLOVE_REFINEMENT_FIXTURE_MAX_BYTES - len;
        assert_true(missing > 3 && missing - 3 <= 1024);
        /* One more literal (sorted last: "999" > "061"), with its quotes and comma. */
        char *last = malloc(missing - 3 + 1);
        memset(last, 'z', missing - 3);
        memcpy(last, "999", 3);
        last[missing - 3] = '\0';
        json_array_append_new(json_object_get(json_object_get(v, "expected"), "forbidden_literals"), json_string(last));
        free(last);
        _cleanup_free_ char *text = canonical(v, &len);
        assert_int_equal(len, GLOVE_REFINEMENT_FIXTURE_MAX_BYTES);
        struct glove_refinement_fixture *f = NULL;
        struct glove_error err = { 0 };
        char path[GLOVE_JSON_PATH_MAX];
        assert_int_equal(glove_refinement_fixture_decode(text, len, &f, path, &err), 0);
        assert_int_equal(f->n_forbidden, 63);
        glove_refinement_fixture_free(f);

        _cleanup_free_ char *big = malloc(len + 1);
        memcpy(big, text, len);
        big[len] = ' ';
        f = NULL;
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_decode(big, len + 1, &f, path, &err), -EMSGSIZE);
        assert_string_equal(err.code, "refinement.fixture_too_large");
        assert_string_equal(path, "$");
        assert_null(f);
}

static void test_misuse(void **state) {
        (void)state;
        struct glove_refinement_fixture *f = NULL;
        struct glove_error err = { 0 };
        char path[GLOVE_JSON_PATH_MAX];
        assert_int_equal(glove_refinement_fixture_decode(NULL, 3, &f, path, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_decode("{}", 2, NULL, path, &err), -EINVAL);
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_decode(NULL, 0, &f, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.fixture_invalid_json");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_check(NULL, NULL, path, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        glove_refinement_fixture_free(NULL);
        assert_null(glove_refinement_expected_termination_name(1));
        assert_string_equal(glove_refinement_expected_termination_name(0), "exited");
}

/* The check reports the first difference in its documented order. */
static void test_check_order(void **state) {
        (void)state;
        _cleanup_json_ json_t *plan = read_json("example-plan.json");
        size_t len;
        _cleanup_free_ char *text = read_fixture("example-fixture.json", &len);
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = NULL;
        struct glove_error err = { 0 };
        char path[GLOVE_JSON_PATH_MAX];
        assert_int_equal(glove_refinement_fixture_decode(text, len, &f, path, &err), 0);
        struct glove_refinement_binding b;
        char pc[65];
        struct glove_refinement_bound bound;
        bound_of(plan, "another-session", &b, pc, &bound);
        bound.variant = GLOVE_REFINEMENT_VARIANT_CANDIDATE;
        assert_int_equal(glove_refinement_fixture_check(f, &bound, path, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.fixture_mismatch_session");
        bound.session_id = SESSION;
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_check(f, &bound, path, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.fixture_mismatch_variant");
        /* The plan's matched-context digest must be the one of this plan
         * context and this fixture. */
        bound.variant = GLOVE_REFINEMENT_VARIANT_BASE;
        char other[65];
        memset(other, 'a', 64);
        other[64] = '\0';
        bound.plan_context_digest = other;
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_check(f, &bound, path, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.fixture_mismatch_matched_context");
        assert_string_equal(path, "$");
        bound.plan_context_digest = "not hex";
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_fixture_check(f, &bound, path, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_example),       cmocka_unit_test(test_manifest),
                cmocka_unit_test(test_edges_accepted), cmocka_unit_test(test_edges_refused),
                cmocka_unit_test(test_size),          cmocka_unit_test(test_misuse),
                cmocka_unit_test(test_check_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The refinement-eval-v1 fixture: strict decoder and plan check (see
 * fixture.h; docs/refinement.md, "The fixture"). The first failure is
 * reported, with its JSON path. */
#include "glove/refinement/fixture.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/refinement/context.h"

#define FX(word) "refinement.fixture_" word

static const char *const top_keys[] = {
        "base_projection_digest", "candidate_projection_digest", "dataset_digest", "dataset_reference",
        "evaluation_run_id", "expected", "fixture_digest", "fixture_id", "harness", "matched_pair_id",
        "model_identity", "module", "proposal_digest", "schema", "seed", "selected_projection", "session_id",
        "variant", NULL,
};
static const char *const expected_keys[] = {
        "exit_code", "forbidden_literals", "max_wall_latency_us", "required_literals", "termination", NULL,
};
static const char *const module_keys[] = { "identity", "selectors", NULL };
static const char *const projection_keys[] = { "content_digest", "destination_alias", "projection_id", NULL };

const char *glove_refinement_expected_termination_name(int termination) {
        return termination == GLOVE_REFINEMENT_EXPECT_EXITED ? "exited" : NULL;
}

/* ---- decoding state: the first failure wins ---- */

struct fx {
        struct glove_error *err;
        char *path; /* caller's buffer, or NULL */
};

static int fx_fail(struct fx *c, int errnum, const char *code, const char *path, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
static int fx_fail(struct fx *c, int errnum, const char *code, const char *path, const char *fmt, ...) {
        char text[GLOVE_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (c->path)
                snprintf(c->path, GLOVE_JSON_PATH_MAX, "%s", path);
        return glove_error_set(c->err, errnum, code, "%s: %s", path, text);
}

static int fx_oom(struct fx *c) {
        return glove_error_set(c->err, ENOMEM, "refinement.no_memory", "out of memory decoding the fixture");
}

/* ---- the bytes ---- */

static const char *json_code(const char *code) {
        static const struct {
                const char *json, *fixture;
        } map[] = {
                { "json.too_large", FX("too_large") },         { "json.embedded_nul", FX("embedded_nul") },
                { "json.invalid_utf8", FX("invalid_utf8") },   { "json.too_deep", FX("invalid_json") },
                { "json.syntax", FX("invalid_json") },         { "json.trailing_data", FX("invalid_json") },
                { "json.duplicate_key", FX("duplicate_key") }, { "json.number_out_of_range", FX("out_of_range") },
                { "json.not_object", FX("not_object") },
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (code && strcmp(code, map[i].json) == 0)
                        return map[i].fixture;
        return FX("invalid_json");
}

/* The path of the first real number in v (arrays in order, objects in
 * their order), or false. */
static bool find_real(const json_t *v, const char *path, char out[GLOVE_JSON_PATH_MAX], int depth) {
        if (json_is_real(v)) {
                snprintf(out, GLOVE_JSON_PATH_MAX, "%s", path);
                return true;
        }
        if (depth > GLOVE_JSON_MAX_DEPTH)
                return false;
        char sub[GLOVE_JSON_PATH_MAX];
        if (json_is_array(v)) {
                size_t i;
                const json_t *e;
                json_array_foreach(v, i, e) {
                        if (glove_json_path_index(sub, sizeof(sub), path, i) == 0 && find_real(e, sub, out, depth + 1))
                                return true;
                }
        } else if (json_is_object(v)) {
                const char *k;
                const json_t *e;
                json_object_foreach((json_t *)v, k, e) {
                        if (glove_json_path_member(sub, sizeof(sub), path, k) == 0 && find_real(e, sub, out, depth + 1))
                                return true;
                }
        }
        return false;
}

static int decode_bytes(struct fx *c, const void *data, size_t len, json_t **out) {
        if (len > GLOVE_REFINEMENT_FIXTURE_MAX_BYTES)
                return fx_fail(c, EMSGSIZE, FX("too_large"), "$", "the fixture is %zu bytes, the limit is %d", len,
                               GLOVE_REFINEMENT_FIXTURE_MAX_BYTES);
        struct glove_error jerr = { 0 };
        _cleanup_json_ json_t *root = NULL;
        int r = glove_json_decode_strict(data, len, GLOVE_REFINEMENT_FIXTURE_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &root,
                                         &jerr);
        if (r == -ENOMEM)
                return fx_oom(c);
        if (r < 0)
                return fx_fail(c, EINVAL, json_code(jerr.code), "$", "%s", jerr.message);
        char rp[GLOVE_JSON_PATH_MAX];
        if (find_real(root, "$", rp, 1))
                return fx_fail(c, EINVAL, FX("real_number"), rp, "a number with a fraction or exponent; only integers");
        _cleanup_free_ char *canon = NULL;
        size_t canon_len = 0;
        r = glove_json_encode_canonical(root, &canon, &canon_len, &jerr);
        if (r == -ENOMEM)
                return fx_oom(c);
        if (r < 0)
                return fx_fail(c, EINVAL, FX("invalid_json"), "$", "%s", jerr.message);
        if (canon_len != len || memcmp(canon, data, len) != 0) {
                size_t at = 0;
                while (at < len && at < canon_len && ((const char *)data)[at] == canon[at])
                        at++;
                return fx_fail(c, EINVAL, FX("not_canonical"), "$",
                               "the bytes are not the canonical JSON encoding (sorted keys, no whitespace, no "
                               "trailing newline, minimal escapes); first difference at byte %zu",
                               at);
        }
        *out = TAKE_PTR(root);
        return 0;
}

/* ---- members ---- */

static void member_path(char out[GLOVE_JSON_PATH_MAX], const char *parent, const char *key) {
        if (glove_json_path_member(out, GLOVE_JSON_PATH_MAX, parent, key) < 0)
                snprintf(out, GLOVE_JSON_PATH_MAX, "%s", parent);
}

static void index_path(char out[GLOVE_JSON_PATH_MAX], const char *parent, size_t i) {
        if (glove_json_path_index(out, GLOVE_JSON_PATH_MAX, parent, i) < 0)
                snprintf(out, GLOVE_JSON_PATH_MAX, "%s", parent);
}

static int check_keys(struct fx *c, const json_t *obj, const char *const allowed[], const char *path) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)obj, k, v) {
                bool known = false;
                for (size_t i = 0; allowed[i] && !known; i++)
                        known = strcmp(allowed[i], k) == 0;
                if (!known) {
                        char mp[GLOVE_JSON_PATH_MAX];
                        member_path(mp, path, k);
                        return fx_fail(c, EINVAL, FX("unknown_field"), mp, "not a member of the fixture format");
                }
        }
        return 0;
}

static const char *type_word(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a real";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        default:
                return "null";
        }
}

/* The member key of obj, of JSON type type, or NULL with the failure set. */
static json_t *member(struct fx *c, const json_t *obj, const char *key, const char *path, json_type type,
                      const char *want) {
        char mp[GLOVE_JSON_PATH_MAX];
        member_path(mp, path, key);
        json_t *v = json_object_get(obj, key);
        if (!v) {
                fx_fail(c, EINVAL, FX("missing_field"), mp, "required member is absent");
                return NULL;
        }
        if (json_typeof(v) != type) {
                fx_fail(c, EINVAL, FX("wrong_type"), mp, "must be %s, not %s", want, type_word(v));
                return NULL;
        }
        return v;
}

static int get_string(struct fx *c, const json_t *obj, const char *key, const char *path, const char **out) {
        json_t *v = member(c, obj, key, path, JSON_STRING, "a string");
        if (!v)
                return -EINVAL;
        *out = json_string_value(v);
        return 0;
}

static int get_id(struct fx *c, const json_t *obj, const char *key, const char *path, bool plan_identifier,
                  const char **out) {
        if (get_string(c, obj, key, path, out) < 0)
                return -EINVAL;
        bool ok = plan_identifier ? glove_refinement_plan_identifier_valid(*out) : glove_refinement_id_valid(*out);
        if (ok)
                return 0;
        char mp[GLOVE_JSON_PATH_MAX];
        member_path(mp, path, key);
        return fx_fail(c, EINVAL, FX("invalid_identifier"), mp,
                       plan_identifier ? "must be 1..128 bytes of [A-Za-z0-9._:-]"
                                       : "must be 1..128 bytes of [A-Za-z0-9._:-], the first a letter or digit");
}

static int get_hex(struct fx *c, const json_t *obj, const char *key, const char *path, const char **out) {
        if (get_string(c, obj, key, path, out) < 0)
                return -EINVAL;
        if (glove_refinement_hex64_valid(*out))
                return 0;
        char mp[GLOVE_JSON_PATH_MAX];
        member_path(mp, path, key);
        return fx_fail(c, EINVAL, FX("invalid_digest"), mp, "must be 64 lowercase hex digits (SHA-256)");
}

static bool text_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_REFINEMENT_TEXT_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
                        return false;
        return true;
}

static int check_text(struct fx *c, const char *s, const char *path) {
        if (text_valid(s))
                return 0;
        return fx_fail(c, EINVAL, FX("invalid_text"), path,
                       "must be 1..%d bytes of printable ASCII without space", GLOVE_REFINEMENT_TEXT_MAX);
}

static int get_text(struct fx *c, const json_t *obj, const char *key, const char *path, const char **out) {
        if (get_string(c, obj, key, path, out) < 0)
                return -EINVAL;
        char mp[GLOVE_JSON_PATH_MAX];
        member_path(mp, path, key);
        return check_text(c, *out, mp);
}

static int get_int(struct fx *c, const json_t *obj, const char *key, const char *path, int64_t min, int64_t max,
                   int64_t *out) {
        json_t *v = member(c, obj, key, path, JSON_INTEGER, "an integer");
        if (!v)
                return -EINVAL;
        json_int_t n = json_integer_value(v);
        if (n < min || n > max) {
                char mp[GLOVE_JSON_PATH_MAX];
                member_path(mp, path, key);
                return fx_fail(c, EINVAL, FX("out_of_range"), mp, "must be %lld..%lld", (long long)min,
                               (long long)max);
        }
        *out = n;
        return 0;
}

/* Strictly increasing byte order: 0 when a < b, else the code. */
static const char *order_code(const char *a, size_t alen, const char *b, size_t blen) {
        size_t n = alen < blen ? alen : blen;
        int cmp = memcmp(a, b, n);
        if (cmp == 0)
                cmp = alen < blen ? -1 : alen > blen ? 1 : 0;
        if (cmp == 0)
                return FX("duplicate");
        return cmp > 0 ? FX("unsorted") : NULL;
}

static int get_literals(struct fx *c, const json_t *obj, const char *key, const char *path,
                        struct glove_refinement_literal **out, size_t *n_out) {
        char ap[GLOVE_JSON_PATH_MAX];
        member_path(ap, path, key);
        json_t *arr = member(c, obj, key, path, JSON_ARRAY, "an array of strings");
        if (!arr)
                return -EINVAL;
        size_t n = json_array_size(arr);
        if (n > GLOVE_REFINEMENT_MAX_LITERALS)
                return fx_fail(c, EINVAL, FX("item_count"), ap, "%zu literals, at most %d", n,
                               GLOVE_REFINEMENT_MAX_LITERALS);
        struct glove_refinement_literal *lits = n ? calloc(n, sizeof(*lits)) : NULL;
        if (n && !lits)
                return fx_oom(c);
        for (size_t i = 0; i < n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                index_path(ep, ap, i);
                const json_t *e = json_array_get(arr, i);
                int r = 0;
                if (!json_is_string(e))
                        r = fx_fail(c, EINVAL, FX("wrong_type"), ep, "must be a string, not %s", type_word(e));
                else if (json_string_length(e) == 0)
                        r = fx_fail(c, EINVAL, FX("empty_literal"), ep, "a literal has at least one byte");
                else if (json_string_length(e) > GLOVE_REFINEMENT_LITERAL_MAX)
                        r = fx_fail(c, EINVAL, FX("literal_too_long"), ep, "%zu bytes, at most %d",
                                    json_string_length(e), GLOVE_REFINEMENT_LITERAL_MAX);
                if (r == 0) {
                        lits[i].bytes = json_string_value(e);
                        lits[i].len = json_string_length(e);
                        const char *code =
                                i ? order_code(lits[i - 1].bytes, lits[i - 1].len, lits[i].bytes, lits[i].len) : NULL;
                        if (code)
                                r = fx_fail(c, EINVAL, code, ep,
                                            "literals are in strictly increasing byte order, each once");
                }
                if (r < 0) {
                        free(lits);
                        return r;
                }
        }
        *out = lits;
        *n_out = n;
        return 0;
}

static int get_projection(struct fx *c, const json_t *obj, const char *key, const char *path,
                          struct glove_refinement_projection *out) {
        char op[GLOVE_JSON_PATH_MAX];
        member_path(op, path, key);
        json_t *o = member(c, obj, key, path, JSON_OBJECT, "an object");
        if (!o)
                return -EINVAL;
        if (check_keys(c, o, projection_keys, op) < 0 || get_hex(c, o, "content_digest", op, &out->content_digest) < 0 ||
            get_id(c, o, "destination_alias", op, true, &out->destination_alias) < 0 ||
            get_id(c, o, "projection_id", op, true, &out->projection_id) < 0)
                return -EINVAL;
        return 0;
}

static int get_expected(struct fx *c, const json_t *root, struct glove_refinement_fixture *f) {
        const char *path = "$.expected";
        json_t *o = member(c, root, "expected", "$", JSON_OBJECT, "an object");
        if (!o || check_keys(c, o, expected_keys, path) < 0)
                return -EINVAL;
        if (get_int(c, o, "exit_code", path, 0, GLOVE_REFINEMENT_EXIT_CODE_MAX, &f->expected_exit_code) < 0 ||
            get_literals(c, o, "forbidden_literals", path, &f->forbidden, &f->n_forbidden) < 0)
                return -EINVAL;
        if (json_object_get(o, "max_wall_latency_us")) {
                if (get_int(c, o, "max_wall_latency_us", path, 1, GLOVE_REFINEMENT_LATENCY_MAX_US,
                            &f->max_wall_latency_us) < 0)
                        return -EINVAL;
                f->has_max_wall_latency = true;
        }
        if (get_literals(c, o, "required_literals", path, &f->required, &f->n_required) < 0)
                return -EINVAL;
        const char *term;
        if (get_string(c, o, "termination", path, &term) < 0)
                return -EINVAL;
        if (strcmp(term, "exited") != 0)
                return fx_fail(c, EINVAL, FX("invalid_value"), "$.expected.termination",
                               "must be \"exited\" (the only termination V1 expects)");
        f->expected_termination = GLOVE_REFINEMENT_EXPECT_EXITED;
        /* A literal both required and forbidden can never pass. */
        for (size_t i = 0; i < f->n_forbidden; i++)
                for (size_t k = 0; k < f->n_required; k++)
                        if (f->forbidden[i].len == f->required[k].len &&
                            memcmp(f->forbidden[i].bytes, f->required[k].bytes, f->required[k].len) == 0) {
                                char ep[GLOVE_JSON_PATH_MAX];
                                index_path(ep, "$.expected.forbidden_literals", i);
                                return fx_fail(c, EINVAL, FX("literal_conflict"), ep,
                                               "also a required literal (required_literals[%zu])", k);
                        }
        return 0;
}

static int get_module(struct fx *c, const json_t *root, struct glove_refinement_fixture *f) {
        if (!json_object_get(root, "module"))
                return 0;
        const char *path = "$.module";
        json_t *o = member(c, root, "module", "$", JSON_OBJECT, "an object");
        if (!o || check_keys(c, o, module_keys, path) < 0 || get_text(c, o, "identity", path, &f->module_identity) < 0)
                return -EINVAL;
        json_t *arr = member(c, o, "selectors", path, JSON_ARRAY, "an array of strings");
        if (!arr)
                return -EINVAL;
        size_t n = json_array_size(arr);
        if (n > GLOVE_REFINEMENT_MAX_SELECTORS)
                return fx_fail(c, EINVAL, FX("item_count"), "$.module.selectors", "%zu selectors, at most %d", n,
                               GLOVE_REFINEMENT_MAX_SELECTORS);
        f->module_selectors = n ? calloc(n, sizeof(*f->module_selectors)) : NULL;
        if (n && !f->module_selectors)
                return fx_oom(c);
        for (size_t i = 0; i < n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                index_path(ep, "$.module.selectors", i);
                const json_t *e = json_array_get(arr, i);
                if (!json_is_string(e))
                        return fx_fail(c, EINVAL, FX("wrong_type"), ep, "must be a string, not %s", type_word(e));
                const char *s = json_string_value(e);
                if (check_text(c, s, ep) < 0)
                        return -EINVAL;
                const char *code = i ? order_code(f->module_selectors[i - 1], strlen(f->module_selectors[i - 1]), s,
                                                  strlen(s))
                                     : NULL;
                if (code)
                        return fx_fail(c, EINVAL, code, ep, "selectors are in strictly increasing byte order, each once");
                f->module_selectors[i] = s;
                f->n_module_selectors = i + 1;
        }
        f->has_module = true;
        return 0;
}

static int get_variant(struct fx *c, const json_t *root, enum glove_refinement_variant *out) {
        const char *s;
        if (get_string(c, root, "variant", "$", &s) < 0)
                return -EINVAL;
        if (strcmp(s, "base") == 0)
                *out = GLOVE_REFINEMENT_VARIANT_BASE;
        else if (strcmp(s, "candidate") == 0)
                *out = GLOVE_REFINEMENT_VARIANT_CANDIDATE;
        else
                return fx_fail(c, EINVAL, FX("invalid_value"), "$.variant", "must be \"base\" or \"candidate\"");
        return 0;
}

static int decode_members(struct fx *c, const json_t *root, struct glove_refinement_fixture *f) {
        const char *schema;
        if (get_string(c, root, "schema", "$", &schema) < 0)
                return -EINVAL;
        if (strcmp(schema, GLOVE_REFINEMENT_FIXTURE_SCHEMA) != 0)
                return fx_fail(c, EINVAL, FX("unsupported_schema"), "$.schema",
                               "must be \"" GLOVE_REFINEMENT_FIXTURE_SCHEMA "\"");
        if (check_keys(c, root, top_keys, "$") < 0)
                return -EINVAL;
        /* In key order. */
        if (get_hex(c, root, "base_projection_digest", "$", &f->base_projection_digest) < 0 ||
            get_hex(c, root, "candidate_projection_digest", "$", &f->candidate_projection_digest) < 0 ||
            get_hex(c, root, "dataset_digest", "$", &f->dataset_digest) < 0 ||
            get_text(c, root, "dataset_reference", "$", &f->dataset_reference) < 0 ||
            get_id(c, root, "evaluation_run_id", "$", false, &f->evaluation_run_id) < 0 ||
            get_expected(c, root, f) < 0 || get_hex(c, root, "fixture_digest", "$", &f->fixture_digest) < 0 ||
            get_id(c, root, "fixture_id", "$", false, &f->fixture_id) < 0 ||
            get_text(c, root, "harness", "$", &f->harness) < 0 ||
            get_id(c, root, "matched_pair_id", "$", false, &f->matched_pair_id) < 0 ||
            get_text(c, root, "model_identity", "$", &f->model_identity) < 0 || get_module(c, root, f) < 0 ||
            get_hex(c, root, "proposal_digest", "$", &f->proposal_digest) < 0 ||
            get_int(c, root, "seed", "$", 0, GLOVE_REFINEMENT_INT_MAX, &f->seed) < 0 ||
            get_projection(c, root, "selected_projection", "$", &f->selected_projection) < 0 ||
            get_id(c, root, "session_id", "$", false, &f->session_id) < 0 || get_variant(c, root, &f->variant) < 0)
                return -EINVAL;
        const char *want = f->variant == GLOVE_REFINEMENT_VARIANT_BASE ? f->base_projection_digest
                                                                       : f->candidate_projection_digest;
        if (strcmp(f->selected_projection.content_digest, want) != 0)
                return fx_fail(c, EINVAL, FX("selected_mismatch"), "$.selected_projection.content_digest",
                               "not the %s_projection_digest of the fixture's variant",
                               glove_refinement_variant_name(f->variant));
        return 0;
}

int glove_refinement_fixture_decode(const void *data, size_t len, struct glove_refinement_fixture **out,
                                    char path[GLOVE_JSON_PATH_MAX], struct glove_error *err) {
        if (path)
                path[0] = '\0';
        if (!out || (!data && len > 0))
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing fixture bytes or out");
        *out = NULL;
        struct fx c = { .err = err, .path = path };
        struct glove_refinement_fixture *f = calloc(1, sizeof(*f));
        if (!f)
                return fx_oom(&c);
        int r = decode_bytes(&c, data, len, &f->root);
        if (r == 0)
                r = decode_members(&c, f->root, f);
        if (r == 0) {
                uint8_t md[GLOVE_DIGEST_SHA256_LEN];
                r = glove_digest_sha256(data, len, md, err);
                if (r == 0)
                        glove_digest_hex_encode(md, sizeof(md), f->document_digest, sizeof(f->document_digest));
        }
        if (r < 0) {
                glove_refinement_fixture_free(f);
                return r;
        }
        *out = f;
        return 0;
}

void glove_refinement_fixture_free(struct glove_refinement_fixture *f) {
        if (!f)
                return;
        free(f->required);
        free(f->forbidden);
        free(f->module_selectors);
        json_decref(f->root);
        free(f);
}

/* ---- the check against the plan ---- */

static bool eq(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

int glove_refinement_fixture_check(const struct glove_refinement_fixture *f,
                                   const struct glove_refinement_bound *b, char path[GLOVE_JSON_PATH_MAX],
                                   struct glove_error *err) {
        if (path)
                path[0] = '\0';
        if (!f || !b || !b->session_id || !b->fixture.content_digest || !b->base.content_digest ||
            !b->candidate.content_digest || !glove_refinement_hex64_valid(b->matched_context_digest) ||
            !glove_refinement_hex64_valid(b->plan_context_digest) || !glove_refinement_variant_name(b->variant))
                return glove_error_set(err, EINVAL, "refinement.invalid_argument",
                                       "missing fixture or bound member");
        struct fx c = { .err = err, .path = path };
        if (!eq(f->document_digest, b->fixture.content_digest))
                return fx_fail(&c, EINVAL, FX("mismatch_document"), "$",
                               "the SHA-256 of the fixture's bytes is not the fixture projection's content_digest");
        if (!eq(f->session_id, b->session_id))
                return fx_fail(&c, EINVAL, FX("mismatch_session"), "$.session_id", "not this session's id");
        if (f->variant != b->variant)
                return fx_fail(&c, EINVAL, FX("mismatch_variant"), "$.variant", "the plan selects \"%s\"",
                               glove_refinement_variant_name(b->variant));
        if (!eq(f->base_projection_digest, b->base.content_digest))
                return fx_fail(&c, EINVAL, FX("mismatch_base"), "$.base_projection_digest",
                               "not the content_digest of the plan's base projection");
        if (!eq(f->candidate_projection_digest, b->candidate.content_digest))
                return fx_fail(&c, EINVAL, FX("mismatch_candidate"), "$.candidate_projection_digest",
                               "not the content_digest of the plan's candidate projection");
        const struct glove_refinement_projection *sel =
                b->variant == GLOVE_REFINEMENT_VARIANT_BASE ? &b->base : &b->candidate;
        if (!glove_refinement_projection_equal(&f->selected_projection, sel))
                return fx_fail(&c, EINVAL, FX("mismatch_selected"), "$.selected_projection",
                               "not exactly the plan's %s projection (projection_id, content_digest, "
                               "destination_alias)",
                               glove_refinement_variant_name(b->variant));
        char fixture_ctx[GLOVE_DIGEST_SHA256_HEX_LEN + 1], matched[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        int r = glove_refinement_fixture_context_digest(f, fixture_ctx, err);
        if (r < 0)
                return r;
        r = glove_refinement_matched_context_digest(b->plan_context_digest, fixture_ctx, matched, err);
        if (r < 0)
                return r;
        if (strcmp(matched, b->matched_context_digest) != 0)
                return fx_fail(&c, EINVAL, FX("mismatch_matched_context"), "$",
                               "the matched-context digest of the plan and this fixture is %s, the plan binds "
                               "another",
                               matched);
        return 0;
}

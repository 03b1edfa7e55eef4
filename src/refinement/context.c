/* SPDX-License-Identifier: Apache-2.0 */
/* The plan-context, fixture-context and matched-context digests (see
 * context.h; docs/digests.md, "Refinement context digests"). */
#include "glove/refinement/context.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/refinement/fixture.h"

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "refinement.no_memory", "out of memory building a refinement context");
}

int glove_refinement_json_digest(const json_t *v, char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1],
                                 struct glove_error *err) {
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        int r = glove_json_encode_canonical(v, &bytes, &len, err);
        if (r < 0)
                return r;
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        r = glove_digest_sha256(bytes, len, md, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(md, sizeof(md), out, GLOVE_DIGEST_SHA256_HEX_LEN + 1);
        return 0;
}

/* ---- building objects: set() steals the value, NULL values fail ---- */

struct builder {
        json_t *obj;
        bool bad;   /* a NULL string or an out-of-range integer */
        bool oom;
};

static void set(struct builder *b, const char *key, json_t *v) {
        if (!v) {
                b->oom = true;
                return;
        }
        if (json_object_set_new(b->obj, key, v) < 0)
                b->oom = true;
}

static void set_str(struct builder *b, const char *key, const char *s) {
        if (!s || !glove_json_utf8_valid(s, strlen(s), NULL)) {
                b->bad = true;
                return;
        }
        set(b, key, json_string(s));
}

static void set_int(struct builder *b, const char *key, int64_t n) {
        if (n < 0 || n > GLOVE_REFINEMENT_INT_MAX) {
                b->bad = true;
                return;
        }
        set(b, key, json_integer(n));
}

static json_t *projection_json(struct builder *outer, const struct glove_refinement_projection *p) {
        struct builder b = { .obj = json_object() };
        if (!b.obj) {
                outer->oom = true;
                return NULL;
        }
        set_str(&b, "content_digest", p->content_digest);
        set_str(&b, "destination_alias", p->destination_alias);
        set_str(&b, "projection_id", p->projection_id);
        outer->bad |= b.bad;
        outer->oom |= b.oom;
        return b.obj;
}

static int finish(struct builder *b, json_t **out, struct glove_error *err, const char *what) {
        if (b->oom || !b->obj) {
                json_decref(b->obj);
                return no_memory(err);
        }
        if (b->bad) {
                json_decref(b->obj);
                return glove_error_set(err, EINVAL, "refinement.invalid_argument",
                                       "%s: a member is missing or not UTF-8, or an integer is outside 0..2^53-1", what);
        }
        *out = b->obj;
        return 0;
}

/* ---- plan context ---- */

int glove_refinement_plan_context_json(const struct glove_refinement_plan_context *ctx, json_t **out,
                                       struct glove_error *err) {
        if (!ctx || !out || (ctx->n_secret_handles && !ctx->secret_handles))
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing plan context");
        *out = NULL;
        struct builder b = { .obj = json_object() };
        if (!b.obj)
                return no_memory(err);
        set_str(&b, "adapter_command_digest", ctx->adapter_command_digest);
        set(&b, "base_projection", projection_json(&b, &ctx->base));
        set(&b, "candidate_projection", projection_json(&b, &ctx->candidate));
        set_str(&b, "egress_policy_id", ctx->egress_policy_id);
        struct builder lim = { .obj = json_object() };
        if (lim.obj) {
                set_int(&lim, "cpu_time_ms", ctx->limits.cpu_time_ms);
                set_int(&lim, "disk_bytes", ctx->limits.disk_bytes);
                set_int(&lim, "memory_bytes", ctx->limits.memory_bytes);
                set_int(&lim, "pids", ctx->limits.pids);
                set_int(&lim, "terminal_output_bytes", ctx->limits.terminal_output_bytes);
                set_int(&lim, "wall_time_ms", ctx->limits.wall_time_ms);
                b.bad |= lim.bad;
                b.oom |= lim.oom;
        }
        set(&b, "limits", lim.obj);
        set_int(&b, "policy_revision", ctx->policy_revision);
        set_str(&b, "runtime_id", ctx->runtime_id);
        set_str(&b, "runtime_template_id", ctx->runtime_template_id);
        set_str(&b, "sandbox_backend", ctx->sandbox_backend);
        set_str(&b, "schema", GLOVE_REFINEMENT_PLAN_CONTEXT_SCHEMA);
        json_t *handles = json_array();
        for (size_t i = 0; handles && i < ctx->n_secret_handles; i++) {
                if (!ctx->secret_handles[i] ||
                    !glove_json_utf8_valid(ctx->secret_handles[i], strlen(ctx->secret_handles[i]), NULL))
                        b.bad = true;
                else if (json_array_append_new(handles, json_string(ctx->secret_handles[i])) < 0)
                        b.oom = true;
        }
        set(&b, "secret_handles", handles);
        set_str(&b, "tool_policy_id", ctx->tool_policy_id);
        return finish(&b, out, err, "plan context");
}

int glove_refinement_plan_context_digest(const struct glove_refinement_plan_context *ctx,
                                         char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err) {
        _cleanup_json_ json_t *v = NULL;
        int r = glove_refinement_plan_context_json(ctx, &v, err);
        if (r < 0)
                return r;
        return glove_refinement_json_digest(v, out, err);
}

/* ---- fixture context ---- */

static json_t *literals_json(struct builder *b, const struct glove_refinement_literal *lits, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, json_stringn(lits[i].bytes, lits[i].len)) < 0)
                        b->oom = true;
        return a;
}

int glove_refinement_fixture_context_json(const struct glove_refinement_fixture *f, json_t **out,
                                          struct glove_error *err) {
        if (!f || !out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing fixture");
        *out = NULL;
        struct builder b = { .obj = json_object() };
        if (!b.obj)
                return no_memory(err);
        set_str(&b, "base_projection_digest", f->base_projection_digest);
        set_str(&b, "candidate_projection_digest", f->candidate_projection_digest);
        set_str(&b, "dataset_digest", f->dataset_digest);
        set_str(&b, "dataset_reference", f->dataset_reference);
        set_str(&b, "evaluation_run_id", f->evaluation_run_id);
        struct builder ex = { .obj = json_object() };
        if (ex.obj) {
                set_int(&ex, "exit_code", f->expected_exit_code);
                set(&ex, "forbidden_literals", literals_json(&ex, f->forbidden, f->n_forbidden));
                if (f->has_max_wall_latency)
                        set_int(&ex, "max_wall_latency_us", f->max_wall_latency_us);
                set(&ex, "required_literals", literals_json(&ex, f->required, f->n_required));
                set_str(&ex, "termination", glove_refinement_expected_termination_name(f->expected_termination));
                b.bad |= ex.bad;
                b.oom |= ex.oom;
        }
        set(&b, "expected", ex.obj);
        set_str(&b, "fixture_digest", f->fixture_digest);
        set_str(&b, "fixture_id", f->fixture_id);
        set_str(&b, "harness", f->harness);
        set_str(&b, "matched_pair_id", f->matched_pair_id);
        set_str(&b, "model_identity", f->model_identity);
        if (f->has_module) {
                struct builder m = { .obj = json_object() };
                if (m.obj) {
                        set_str(&m, "identity", f->module_identity);
                        json_t *sel = json_array();
                        for (size_t i = 0; sel && i < f->n_module_selectors; i++)
                                if (json_array_append_new(sel, json_string(f->module_selectors[i])) < 0)
                                        m.oom = true;
                        set(&m, "selectors", sel);
                        b.bad |= m.bad;
                        b.oom |= m.oom;
                }
                set(&b, "module", m.obj);
        }
        set_str(&b, "proposal_digest", f->proposal_digest);
        set_str(&b, "schema", GLOVE_REFINEMENT_FIXTURE_CONTEXT_SCHEMA);
        set_int(&b, "seed", f->seed);
        return finish(&b, out, err, "fixture context");
}

int glove_refinement_fixture_context_digest(const struct glove_refinement_fixture *f,
                                            char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err) {
        _cleanup_json_ json_t *v = NULL;
        int r = glove_refinement_fixture_context_json(f, &v, err);
        if (r < 0)
                return r;
        return glove_refinement_json_digest(v, out, err);
}

/* ---- matched context ---- */

int glove_refinement_matched_context_digest(const char *plan_context_digest, const char *fixture_context_digest,
                                            char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err) {
        if (!glove_refinement_hex64_valid(plan_context_digest) || !glove_refinement_hex64_valid(fixture_context_digest) ||
            !out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument",
                                       "the context digests must be 64 lowercase hex digits");
        struct builder b = { .obj = json_object() };
        if (!b.obj)
                return no_memory(err);
        set_str(&b, "fixture_context_digest", fixture_context_digest);
        set_str(&b, "plan_context_digest", plan_context_digest);
        set_str(&b, "schema", GLOVE_REFINEMENT_MATCHED_CONTEXT_SCHEMA);
        _cleanup_json_ json_t *v = NULL;
        int r = finish(&b, &v, err, "matched context");
        if (r < 0)
                return r;
        return glove_refinement_json_digest(v, out, err);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The refinement binding of a plan and the plan rules of refinement-eval-v1
 * (see binding.h; docs/refinement.md, "The plan"). Every reason is
 * reported, as the plan validator collects them. */
#include "glove/refinement/binding.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/json.h"

static const char *const binding_keys[] = { "base", "candidate", "fixture", "matched_context_digest", "variant", NULL };
static const char *const projection_keys[] = { "content_digest", "destination_alias", "projection_id", NULL };

struct sink {
        glove_refinement_report_fn report;
        void *ctx;
        size_t n;
};

static void reason(struct sink *s, const char *code, const char *path, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void reason(struct sink *s, const char *code, const char *path, const char *fmt, ...) {
        char text[GLOVE_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        s->n++;
        if (s->report)
                s->report(s->ctx, code, path, text);
}

static void member_path(char out[GLOVE_JSON_PATH_MAX], const char *parent, const char *key) {
        if (glove_json_path_member(out, GLOVE_JSON_PATH_MAX, parent, key) < 0)
                snprintf(out, GLOVE_JSON_PATH_MAX, "%s", parent);
}

static void index_path(char out[GLOVE_JSON_PATH_MAX], const char *parent, size_t i) {
        if (glove_json_path_index(out, GLOVE_JSON_PATH_MAX, parent, i) < 0)
                snprintf(out, GLOVE_JSON_PATH_MAX, "%s", parent);
}

const struct glove_refinement_projection *glove_refinement_binding_selected(const struct glove_refinement_binding *b) {
        return b->variant == GLOVE_REFINEMENT_VARIANT_BASE ? &b->base : &b->candidate;
}

const struct glove_refinement_projection *
glove_refinement_binding_unselected(const struct glove_refinement_binding *b) {
        return b->variant == GLOVE_REFINEMENT_VARIANT_BASE ? &b->candidate : &b->base;
}

/* ---- the binding ---- */

static void unknown_keys(struct sink *s, const json_t *obj, const char *const allowed[], const char *path) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)obj, k, v) {
                bool known = false;
                for (size_t i = 0; allowed[i] && !known; i++)
                        known = strcmp(allowed[i], k) == 0;
                if (!known) {
                        char mp[GLOVE_JSON_PATH_MAX];
                        member_path(mp, path, k);
                        reason(s, "plan.refinement_unknown_field", mp, "not a member of the refinement binding");
                }
        }
}

/* The string member key of obj, or NULL with a reason. */
static const char *string_member(struct sink *s, const json_t *obj, const char *key, const char *path) {
        char mp[GLOVE_JSON_PATH_MAX];
        member_path(mp, path, key);
        const json_t *v = json_object_get(obj, key);
        if (!v) {
                reason(s, "plan.refinement_missing_field", mp, "required member is absent");
                return NULL;
        }
        if (!json_is_string(v)) {
                reason(s, "plan.refinement_wrong_type", mp, "must be a string");
                return NULL;
        }
        return json_string_value(v);
}

static const char *identifier_member(struct sink *s, const json_t *obj, const char *key, const char *path) {
        const char *v = string_member(s, obj, key, path);
        if (v && !glove_refinement_plan_identifier_valid(v)) {
                char mp[GLOVE_JSON_PATH_MAX];
                member_path(mp, path, key);
                reason(s, "plan.refinement_invalid_identifier", mp, "must be 1..128 bytes of [A-Za-z0-9._:-]");
                return NULL;
        }
        return v;
}

static const char *digest_member(struct sink *s, const json_t *obj, const char *key, const char *path) {
        const char *v = string_member(s, obj, key, path);
        if (v && !glove_refinement_hex64_valid(v)) {
                char mp[GLOVE_JSON_PATH_MAX];
                member_path(mp, path, key);
                reason(s, "plan.refinement_invalid_digest", mp, "must be 64 lowercase hex digits (SHA-256)");
                return NULL;
        }
        return v;
}

static void decode_projection(struct sink *s, const json_t *binding, const char *key,
                              struct glove_refinement_projection *p) {
        char op[GLOVE_JSON_PATH_MAX];
        member_path(op, "$.refinement", key);
        const json_t *o = json_object_get(binding, key);
        if (!o) {
                reason(s, "plan.refinement_missing_field", op, "required member is absent");
                return;
        }
        if (!json_is_object(o)) {
                reason(s, "plan.refinement_wrong_type", op,
                       "must be an object {\"content_digest\",\"destination_alias\",\"projection_id\"}");
                return;
        }
        unknown_keys(s, o, projection_keys, op);
        p->content_digest = digest_member(s, o, "content_digest", op);
        p->destination_alias = identifier_member(s, o, "destination_alias", op);
        p->projection_id = identifier_member(s, o, "projection_id", op);
}

static bool same(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

static void decode_binding(struct sink *s, const json_t *o, struct glove_refinement_binding *b) {
        unknown_keys(s, o, binding_keys, "$.refinement");
        decode_projection(s, o, "base", &b->base);
        decode_projection(s, o, "candidate", &b->candidate);
        decode_projection(s, o, "fixture", &b->fixture);
        b->matched_context_digest = digest_member(s, o, "matched_context_digest", "$.refinement");
        const char *v = string_member(s, o, "variant", "$.refinement");
        if (same(v, "base"))
                b->variant = GLOVE_REFINEMENT_VARIANT_BASE;
        else if (same(v, "candidate"))
                b->variant = GLOVE_REFINEMENT_VARIANT_CANDIDATE;
        else if (v)
                reason(s, "plan.refinement_invalid_variant", "$.refinement.variant", "must be \"base\" or \"candidate\"");
        /* Three distinct projections: the fixture is removed from the
         * child's mounts, so it must not be a skill. */
        if (same(b->base.projection_id, b->candidate.projection_id))
                reason(s, "plan.refinement_projection_reused", "$.refinement.candidate.projection_id",
                       "the base and candidate projections have the same projection_id");
        if (same(b->fixture.projection_id, b->base.projection_id) ||
            same(b->fixture.projection_id, b->candidate.projection_id))
                reason(s, "plan.refinement_projection_reused", "$.refinement.fixture.projection_id",
                       "the fixture projection has a skill projection's projection_id");
        if (same(b->fixture.content_digest, b->base.content_digest) ||
            same(b->fixture.content_digest, b->candidate.content_digest))
                reason(s, "plan.refinement_projection_reused", "$.refinement.fixture.content_digest",
                       "the fixture projection has a skill projection's content_digest");
}

int glove_refinement_plan_decode(const json_t *plan, enum glove_refinement_plan_kind *kind,
                                 struct glove_refinement_binding *out, glove_refinement_report_fn report, void *ctx,
                                 struct glove_error *err) {
        if (!json_is_object(plan) || !kind || !out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing plan object, kind or out");
        memset(out, 0, sizeof(*out));
        *kind = GLOVE_REFINEMENT_PLAN_ORDINARY;
        struct sink s = { .report = report, .ctx = ctx };
        const json_t *proto = json_object_get(plan, "evaluation_protocol");
        const json_t *ref = json_object_get(plan, "refinement");
        if (!proto && !ref)
                return 0;
        if (proto && !json_is_string(proto))
                reason(&s, "plan.refinement_wrong_type", "$.evaluation_protocol",
                       "must be the string \"" GLOVE_REFINEMENT_PROTOCOL "\"");
        else if (proto && strcmp(json_string_value(proto), GLOVE_REFINEMENT_PROTOCOL) != 0)
                reason(&s, "plan.refinement_unknown_protocol", "$.evaluation_protocol",
                       "the only evaluation protocol is \"" GLOVE_REFINEMENT_PROTOCOL "\"");
        else if (!proto)
                reason(&s, "plan.refinement_without_protocol", "$.evaluation_protocol",
                       "a plan with a refinement binding names \"evaluation_protocol\": \"" GLOVE_REFINEMENT_PROTOCOL
                       "\"; it never runs as an ordinary session with a resource receipt");
        if (!ref)
                reason(&s, "plan.refinement_missing", "$.refinement",
                       "a " GLOVE_REFINEMENT_PROTOCOL " plan carries its refinement binding");
        else if (!json_is_object(ref))
                reason(&s, "plan.refinement_wrong_type", "$.refinement", "must be an object");
        else
                decode_binding(&s, ref, out);
        if (s.n)
                return -EINVAL;
        *kind = GLOVE_REFINEMENT_PLAN_REFINEMENT;
        return 0;
}

/* ---- the plan rules ---- */

int glove_refinement_plan_check_rules(const json_t *plan, const struct glove_refinement_binding *b,
                                      glove_refinement_report_fn report, void *ctx, struct glove_error *err) {
        if (!json_is_object(plan) || !b)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing plan object or binding");
        struct sink s = { .report = report, .ctx = ctx };
        char ep[GLOVE_JSON_PATH_MAX];

        const json_t *grants = json_object_get(plan, "path_grants");
        for (size_t i = 0; json_is_array(grants) && i < json_array_size(grants); i++) {
                index_path(ep, "$.path_grants", i);
                reason(&s, "plan.refinement_path_grants", ep, "a " GLOVE_REFINEMENT_PROTOCOL " plan has no path grants");
        }

        const json_t *arr = json_object_get(plan, "library_projections");
        if (json_is_array(arr)) {
                const struct glove_refinement_projection *sel = glove_refinement_binding_selected(b);
                const struct glove_refinement_projection *other = glove_refinement_binding_unselected(b);
                const char *variant = glove_refinement_variant_name(b->variant);
                if (json_array_size(arr) != 2)
                        reason(&s, "plan.refinement_projection_count", "$.library_projections",
                               "exactly two library projections: the fixture and the selected skill");
                bool seen_fixture = false, seen_selected = false;
                for (size_t i = 0; i < json_array_size(arr); i++) {
                        const json_t *e = json_array_get(arr, i);
                        const char *id = json_string_value(json_object_get(e, "projection_id"));
                        if (!id)
                                continue; /* the plan validator reports the shape */
                        index_path(ep, "$.library_projections", i);
                        const struct glove_refinement_projection *want = NULL;
                        if (same(id, b->fixture.projection_id)) {
                                want = &b->fixture;
                                seen_fixture = true;
                        } else if (same(id, sel->projection_id)) {
                                want = sel;
                                seen_selected = true;
                        } else if (same(id, other->projection_id)) {
                                reason(&s, "plan.refinement_unselected_projected", ep,
                                       "the variant is %s, so the other skill is not projected", variant);
                                continue;
                        } else {
                                reason(&s, "plan.refinement_unknown_projection", ep,
                                       "neither the fixture nor the selected skill of the refinement binding");
                                continue;
                        }
                        const char *digest = json_string_value(json_object_get(e, "content_digest"));
                        const char *dest = json_string_value(json_object_get(e, "destination_alias"));
                        if ((digest && !same(digest, want->content_digest)) ||
                            (dest && !same(dest, want->destination_alias)))
                                reason(&s, "plan.refinement_projection_mismatch", ep,
                                       "its content_digest or destination_alias is not the binding's");
                }
                if (!seen_fixture && b->fixture.projection_id)
                        reason(&s, "plan.refinement_fixture_not_projected", "$.library_projections",
                               "the binding's fixture projection is not among the library projections");
                if (!seen_selected && sel->projection_id)
                        reason(&s, "plan.refinement_variant_not_projected", "$.library_projections",
                               "the selected (%s) skill projection is not among the library projections", variant);
        }
        return s.n ? -EINVAL : 0;
}

/* ---- the plan context ---- */

static int context_invalid(struct glove_error *err, const char *member) {
        return glove_error_set(err, EINVAL, "refinement.plan_context_invalid",
                               "$.%s: absent or of the wrong type (the plan was not validated)", member);
}

static int plan_string(const json_t *o, const char *key, const char **out, struct glove_error *err) {
        *out = json_string_value(json_object_get(o, key));
        return *out ? 0 : context_invalid(err, key);
}

static int plan_int(const json_t *o, const char *key, const char *name, int64_t *out, struct glove_error *err) {
        const json_t *v = json_object_get(o, key);
        if (!json_is_integer(v))
                return context_invalid(err, name);
        *out = json_integer_value(v);
        return 0;
}

int glove_refinement_plan_context_from_plan(const json_t *plan, const struct glove_refinement_binding *b,
                                            struct glove_refinement_plan_context *ctx, const char ***handles,
                                            struct glove_error *err) {
        if (!json_is_object(plan) || !b || !ctx || !handles)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing plan, binding or context");
        memset(ctx, 0, sizeof(*ctx));
        *handles = NULL;
        int r = 0;
        if ((r = plan_string(plan, "runtime_id", &ctx->runtime_id, err)) < 0 ||
            (r = plan_string(plan, "runtime_template_id", &ctx->runtime_template_id, err)) < 0 ||
            (r = plan_string(plan, "adapter_command_digest", &ctx->adapter_command_digest, err)) < 0 ||
            (r = plan_string(plan, "sandbox_backend", &ctx->sandbox_backend, err)) < 0 ||
            (r = plan_string(plan, "egress_policy_id", &ctx->egress_policy_id, err)) < 0 ||
            (r = plan_string(plan, "tool_policy_id", &ctx->tool_policy_id, err)) < 0 ||
            (r = plan_int(plan, "policy_revision", "policy_revision", &ctx->policy_revision, err)) < 0)
                return r;
        const json_t *lim = json_object_get(plan, "limits");
        if ((r = plan_int(lim, "cpu_time_ms", "limits.cpu_time_ms", &ctx->limits.cpu_time_ms, err)) < 0 ||
            (r = plan_int(lim, "memory_bytes", "limits.memory_bytes", &ctx->limits.memory_bytes, err)) < 0 ||
            (r = plan_int(lim, "pids", "limits.pids", &ctx->limits.pids, err)) < 0 ||
            (r = plan_int(lim, "wall_time_ms", "limits.wall_time_ms", &ctx->limits.wall_time_ms, err)) < 0 ||
            (r = plan_int(lim, "disk_bytes", "limits.disk_bytes", &ctx->limits.disk_bytes, err)) < 0 ||
            (r = plan_int(lim, "terminal_output_bytes", "limits.terminal_output_bytes",
                          &ctx->limits.terminal_output_bytes, err)) < 0)
                return r;
        const json_t *arr = json_object_get(plan, "secret_handles");
        if (!json_is_array(arr))
                return context_invalid(err, "secret_handles");
        size_t n = json_array_size(arr);
        const char **v = n ? calloc(n, sizeof(*v)) : NULL;
        if (n && !v)
                return glove_error_set(err, ENOMEM, "refinement.no_memory", "out of memory");
        for (size_t i = 0; i < n; i++) {
                v[i] = json_string_value(json_array_get(arr, i));
                if (!v[i]) {
                        free(v);
                        return context_invalid(err, "secret_handles[]");
                }
        }
        ctx->secret_handles = v;
        ctx->n_secret_handles = n;
        ctx->base = b->base;
        ctx->candidate = b->candidate;
        *handles = v;
        return 0;
}

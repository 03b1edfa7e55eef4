/* SPDX-License-Identifier: Apache-2.0 */
/* Identifier-only session plans (DESIGN.md "Session plan"; spec
 * session-policy.md "A submitted plan must match"). Every reason is
 * collected, each with its stable "plan.*" code and JSON path. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/refinement/binding.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/plan.h"
#include "internal.h"

/* JSON-safe integer bound for plan numbers (2^53 - 1). */
#define PLAN_INT_MAX 9007199254740991LL

static const char *const plan_keys[] = {
        "adapter_command_digest", "egress_policy_id", "evaluation_protocol", "expires_at_ms", "library_projections",
        "limits", "refinement",
        "path_grants", "policy_revision", "runtime_id", "runtime_template_id", "sandbox_backend",
        "schema_version", "secret_handles", "tool_policy_id", NULL,
};
static const char *const grant_keys[] = {
        "access", "alias", "cleanup_policy", "exposure_generation", "exposure_id", "materialization", "max_bytes",
        "ttl_secs", NULL,
};
static const char *const projection_keys[] = { "content_digest", "destination_alias", "projection_id", NULL };
static const char *const limit_keys[] = {
        "cpu_time_ms", "disk_bytes", "memory_bytes", "pids", "terminal_output_bytes", "wall_time_ms", NULL,
};

struct plan_state {
        struct sv_ctx *c;
        const struct glove_supervisor_policy *p;
        const json_t *root;
        const struct sv_template *t; /* NULL when runtime_template_id is bad or unknown */
        const char *template_id;     /* the plan's runtime_template_id, or NULL when it is bad */
        int64_t expires_at_ms;       /* the plan's, or 0 when it is bad */
        const struct glove_exposures *x; /* NULL: no exposure registry */
        int64_t now_ms;
};

/* ---- header fields ---- */

static void check_versions_and_expiry(struct plan_state *s) {
        struct sv_ctx *c = s->c;
        int64_t v;
        if (sv_get_int(c, s->root, "schema_version", NULL, 0, PLAN_INT_MAX, &v) >= 0 && v != 1)
                sv_fail(c, "plan.unsupported_schema_version", "$.schema_version", "only schema_version 1 is known");
        if (sv_get_int(c, s->root, "policy_revision", NULL, 0, PLAN_INT_MAX, &v) >= 0 && v != s->p->revision)
                sv_fail(c, "plan.revision_mismatch", "$.policy_revision", "the policy revision is %lld",
                        (long long)s->p->revision);
        if (sv_get_int(c, s->root, "expires_at_ms", NULL, 0, PLAN_INT_MAX, &v) < 0)
                return;
        s->expires_at_ms = v;
        /* In its window when now < expires_at_ms <= now + max_plan_ttl_ms. */
        int64_t ttl = s->p->max_plan_ttl_ms;
        int64_t latest = s->now_ms > INT64_MAX - ttl ? INT64_MAX : s->now_ms + ttl;
        if (v <= s->now_ms)
                sv_fail(c, "plan.expired", "$.expires_at_ms", "the plan has expired");
        else if (v > latest)
                sv_fail(c, "plan.expiry_too_far", "$.expires_at_ms", "expires more than %lld ms from now",
                        (long long)ttl);
}

static void check_runtime(struct plan_state *s) {
        struct sv_ctx *c = s->c;
        const char *id, *runtime_id, *digest;
        int backend;
        if (sv_get_identifier(c, s->root, "runtime_template_id", NULL, &id) >= 0) {
                s->template_id = id;
                s->t = sv_policy_template(s->p, id);
                if (!s->t)
                        sv_fail(c, "plan.unknown_runtime_template", "$.runtime_template_id",
                                "no runtime template with this id");
        }
        if (sv_get_identifier(c, s->root, "runtime_id", NULL, &runtime_id) >= 0 && s->t &&
            strcmp(runtime_id, s->t->runtime_id) != 0)
                sv_fail(c, "plan.runtime_mismatch", "$.runtime_id", "not the template's runtime_id");
        if (sv_get_string(c, s->root, "adapter_command_digest", NULL, GLOVE_PLAN_MAX_BYTES, &digest) >= 0) {
                if (!sv_digest_hex_valid(digest))
                        sv_fail(c, sv_plan_value_code(digest, "plan.invalid_digest"), "$.adapter_command_digest",
                                "must be 64 lowercase hex characters");
                else if (s->t && strcmp(digest, s->t->adapter_command_digest) != 0)
                        sv_fail(c, "plan.adapter_digest_mismatch", "$.adapter_command_digest",
                                "not the template's adapter_command_digest");
        }
        if (sv_get_enum(c, s->root, "sandbox_backend", NULL, &sv_backend_names, &backend) >= 0 && s->t &&
            backend != s->t->backend)
                sv_fail(c, "plan.backend_mismatch", "$.sandbox_backend", "not the template's sandbox_backend");
}

static void check_policy_ids(struct plan_state *s) {
        struct sv_ctx *c = s->c;
        const char *id;
        if (sv_get_identifier(c, s->root, "egress_policy_id", NULL, &id) >= 0 &&
            !sv_strings_contain(&s->p->egress_policy_ids, id))
                sv_fail(c, "plan.egress_policy_not_allowed", "$.egress_policy_id", "not in the policy's egress_policy_ids");
        if (sv_get_identifier(c, s->root, "tool_policy_id", NULL, &id) >= 0 &&
            !sv_strings_contain(&s->p->tool_policy_ids, id))
                sv_fail(c, "plan.tool_policy_not_allowed", "$.tool_policy_id", "not in the policy's tool_policy_ids");

        struct sv_strings handles = { 0 };
        if (sv_get_identifier_array(c, s->root, "secret_handles", NULL, GLOVE_PLAN_MAX_SECRET_HANDLES, true,
                                    &handles) < 0)
                return;
        for (size_t i = 0; i < handles.n; i++) {
                if (sv_strings_contain(&s->p->secret_handles, handles.v[i]))
                        continue;
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.secret_handles", i);
                sv_fail(c, "plan.secret_handle_not_allowed", ep, "not in the policy's secret_handles");
        }
        free(handles.v);
}

static void check_limits(struct plan_state *s) {
        struct sv_ctx *c = s->c;
        json_t *o;
        if (sv_get_object(c, s->root, "limits", NULL, &o) < 0)
                return;
        int bad = sv_check_keys(c, o, limit_keys, "$.limits");
        int64_t v[SV_LIMIT_COUNT];
        for (size_t k = 0; k < SV_LIMIT_COUNT; k++)
                if (sv_get_int(c, o, sv_limit_names[k], "$.limits", 1, PLAN_INT_MAX, &v[k]) < 0)
                        bad = -EINVAL;
        if (bad < 0)
                return;
        /* "all six numeric resource limits": equal to one configured profile. */
        for (size_t i = 0; i < s->p->n_profiles; i++)
                if (memcmp(s->p->profiles[i].limits, v, sizeof(v)) == 0)
                        return;
        sv_fail(c, "plan.limits_mismatch", "$.limits", "the six limits equal no resource profile of the policy");
}

/* ---- path_grants ---- */

/* One decoded grant: it names either a policy alias or an exposure
 * (exposure.h, "plans"); key is the one that orders path_grants. */
struct grant {
        const char *alias;                        /* alias grants */
        const char *exposure_id;                  /* exposure grants */
        int64_t generation;
        bool exposure;
        const char *key;                          /* alias or exposure_id; NULL when unreadable */
        int access, materialization, cleanup;
        int64_t max_bytes, ttl_secs;
        const char *target;                       /* sandbox target once admitted, else NULL */
};

static bool alias_allowed(const struct plan_state *s, const char *alias) {
        if (!sv_policy_alias(s->p, alias))
                return false;
        return !s->t || sv_strings_contain(&s->t->allowed_path_aliases, alias);
}

static void check_grant_policy(struct plan_state *s, struct grant *g, const char *path) {
        char mp[GLOVE_JSON_PATH_MAX];
        if (!alias_allowed(s, g->alias)) {
                sv_path_member(mp, path, "alias");
                sv_fail(s->c, "plan.path_alias_not_allowed", mp, "alias not allowed for this runtime template");
                return;
        }
        const struct sv_path_alias *al = sv_policy_alias(s->p, g->alias);
        const struct sv_access_tuple *a = NULL;
        for (size_t i = 0; i < al->n_access && !a; i++)
                if (al->access[i].access == g->access && al->access[i].materialization == g->materialization)
                        a = &al->access[i];
        if (!a) {
                sv_fail(s->c, "plan.path_access_not_allowed", path,
                        "the alias allows no such (access, materialization)");
        } else {
                if (a->cleanup_policy != g->cleanup) {
                        sv_path_member(mp, path, "cleanup_policy");
                        sv_fail(s->c, "plan.path_cleanup_mismatch", mp, "not the alias's cleanup_policy");
                }
                if (g->max_bytes > a->max_bytes) {
                        sv_path_member(mp, path, "max_bytes");
                        sv_fail(s->c, "plan.path_quota_exceeded", mp, "exceeds the alias's max_bytes");
                }
        }
        if (g->ttl_secs > al->max_ttl_secs) {
                sv_path_member(mp, path, "ttl_secs");
                sv_fail(s->c, "plan.path_ttl_exceeded", mp, "exceeds the alias's max_ttl_secs");
        }
        g->target = al->target_path;
}

/* An exposure grant against the registry at now (exposure.h,
 * glove_exposures_check_grant): the reason is reported at the member the
 * registry names, or at the grant. */
static void check_grant_exposure(struct plan_state *s, struct grant *g, const char *path) {
        if (!s->x) {
                sv_fail(s->c, "plan.exposures_unavailable", path,
                        "this gloved has no path exposures (--path-exposure-policy)");
                return;
        }
        if (!s->template_id)
                return; /* the plan already fails at runtime_template_id; the grant is judged with a valid one */
        const struct glove_exposure_grant eg = {
                .exposure_id = g->exposure_id,
                .generation = g->generation,
                .access = sv_access_names.names[g->access],
                .materialization = sv_materialization_names.names[g->materialization],
                .cleanup_policy = sv_cleanup_names.names[g->cleanup],
                .max_bytes = g->max_bytes,
                .ttl_secs = g->ttl_secs,
                .runtime_template_id = s->template_id,
                .plan_expires_at_ms = s->expires_at_ms,
        };
        const char *member = NULL;
        const char *code = glove_exposures_check_grant(s->x, &eg, s->now_ms, &member);
        if (code) {
                char mp[GLOVE_JSON_PATH_MAX];
                if (member)
                        sv_path_member(mp, path, member);
                else
                        snprintf(mp, sizeof(mp), "%s", path);
                sv_fail(s->c, code, mp, "the exposure does not admit this grant");
                return;
        }
        g->target = glove_exposures_target(s->x, g->exposure_id);
}

/* "exp-" and 32 lowercase hex digits. */
static bool exposure_id_valid(const char *v) {
        if (strncmp(v, "exp-", 4) != 0 || strlen(v) != GLOVE_EXPOSURE_ID_SIZE - 1)
                return false;
        for (const char *q = v + 4; *q; q++)
                if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')))
                        return false;
        return true;
}

/* What the grant names: exactly one of "alias" and the exposure pair
 * ("exposure_id" with "exposure_generation"); anything else is
 * plan.path_grant_target at the grant. */
static int decode_grant_target(struct plan_state *s, const json_t *o, const char *path, struct grant *g) {
        struct sv_ctx *c = s->c;
        bool has_alias = json_object_get(o, "alias") != NULL;
        bool has_exposure = json_object_get(o, "exposure_id") || json_object_get(o, "exposure_generation");
        if (has_alias && has_exposure)
                return sv_fail(c, "plan.path_grant_target", path,
                               "names both an alias and an exposure; a grant names exactly one");
        if (!has_alias && !has_exposure)
                return sv_fail(c, "plan.path_grant_target", path,
                               "names neither an alias nor an exposure (exposure_id and exposure_generation)");
        if (has_alias) {
                if (sv_get_identifier(c, o, "alias", path, &g->alias) < 0)
                        return g->alias = NULL, -EINVAL;
                g->key = g->alias;
                return 0;
        }
        g->exposure = true;
        int bad = 0;
        const char *id;
        if (sv_get_string(c, o, "exposure_id", path, GLOVE_PLAN_MAX_BYTES, &id) < 0) {
                bad = -EINVAL;
        } else if (!exposure_id_valid(id)) {
                char mp[GLOVE_JSON_PATH_MAX];
                sv_path_member(mp, path, "exposure_id");
                bad = sv_fail(c, sv_plan_value_code(id, "plan.invalid_identifier"), mp,
                              "must be \"exp-\" and 32 lowercase hex digits");
        } else {
                g->exposure_id = g->key = id;
        }
        if (sv_get_int(c, o, "exposure_generation", path, 1, PLAN_INT_MAX, &g->generation) < 0)
                bad = -EINVAL;
        return bad;
}

static int decode_grant(struct plan_state *s, const json_t *o, const char *path, struct grant *g) {
        struct sv_ctx *c = s->c;
        if (sv_as_object(c, o, path) < 0)
                return -EINVAL;
        int bad = sv_check_keys(c, o, grant_keys, path);
        if (decode_grant_target(s, o, path, g) < 0)
                bad = -EINVAL;
        if (sv_get_enum(c, o, "access", path, &sv_access_names, &g->access) < 0)
                bad = -EINVAL;
        if (sv_get_enum(c, o, "materialization", path, &sv_materialization_names, &g->materialization) < 0)
                bad = -EINVAL;
        if (sv_get_enum(c, o, "cleanup_policy", path, &sv_cleanup_names, &g->cleanup) < 0)
                bad = -EINVAL;
        if (sv_get_int(c, o, "max_bytes", path, 1, PLAN_INT_MAX, &g->max_bytes) < 0)
                bad = -EINVAL;
        if (sv_get_int(c, o, "ttl_secs", path, 1, PLAN_INT_MAX, &g->ttl_secs) < 0)
                bad = -EINVAL;
        return bad;
}

/* Sortedness of an array of objects by one identifier member; prev is
 * NULL after an element whose key could not be read. */
static void check_order(struct sv_ctx *c, const char *prev, const char *cur, const char *path) {
        if (!prev || !cur)
                return;
        int cmp = strcmp(prev, cur);
        if (cmp == 0)
                sv_fail(c, "plan.array_duplicate", path, "a second entry with the same identifier");
        else if (cmp > 0)
                sv_fail(c, "plan.array_unsorted", path, "entries must be sorted by identifier");
}

/* Sandbox locations an exposure's target may not be at, beneath or above
 * (the policy refuses them for alias targets, policy.target_reserved). */
static const char *const reserved_targets[] = { "/dev", "/proc", "/run", "/sys", "/tmp", "/var/tmp" };

/* The sandbox paths of this plan an exposure's target (which comes from
 * the exposure policy, not from this policy) must stay clear of, beyond the
 * other grants: the reserved locations, the template's launch paths
 * (mounted at their own path), the plan's projection destinations and its
 * secret mounts. Returns what it overlaps, or NULL. */
static const char *exposure_target_conflict(const struct plan_state *s, const char *target) {
        for (size_t i = 0; i < sizeof(reserved_targets) / sizeof(reserved_targets[0]); i++)
                if (sv_paths_overlap(target, reserved_targets[i]))
                        return reserved_targets[i];
        if (s->t && s->t->has_launch) {
                if (s->t->launch.executable_path && s->t->launch.executable_path[0] &&
                    sv_paths_overlap(target, s->t->launch.executable_path))
                        return s->t->launch.executable_path;
                for (size_t i = 0; i < s->t->read_only_paths.n; i++)
                        if (sv_paths_overlap(target, s->t->read_only_paths.v[i]))
                                return s->t->read_only_paths.v[i];
        }
        const json_t *projections = json_object_get(s->root, "library_projections");
        for (size_t i = 0; i < json_array_size(projections); i++) {
                const json_t *pr = json_array_get(projections, i);
                const char *dest = json_string_value(json_object_get(pr, "destination_alias"));
                for (size_t k = 0; dest && k < s->p->n_destinations; k++)
                        if (strcmp(s->p->destinations[k].alias, dest) == 0 &&
                            sv_paths_overlap(target, s->p->destinations[k].target_path))
                                return s->p->destinations[k].target_path;
        }
        const json_t *handles = json_object_get(s->root, "secret_handles");
        for (size_t i = 0; s->t && i < json_array_size(handles); i++) {
                const char *h = json_string_value(json_array_get(handles, i));
                for (size_t k = 0; h && k < s->p->n_secret_mounts; k++) {
                        const struct sv_secret_mount *m = &s->p->secret_mounts[k];
                        if (strcmp(m->handle, h) == 0 && strcmp(m->runtime_id, s->t->runtime_id) == 0 &&
                            sv_paths_overlap(target, m->target_path))
                                return m->target_path;
                }
        }
        return NULL;
}

/* Admitted grants whose sandbox targets overlap (an exposure's target is
 * its root's, so two exposures of one root, or an exposure and an alias,
 * may collide; alias targets are disjoint by policy). Reported at the later
 * grant, plan.path_target_overlap. */
static void check_grant_targets(struct plan_state *s, const struct grant *g, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (!g[i].target)
                        continue;
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.path_grants", i);
                bool hit = false;
                /* A repeated alias or exposure is plan.array_duplicate already. */
                for (size_t k = 0; k < i && !hit; k++)
                        hit = g[k].target && sv_paths_overlap(g[i].target, g[k].target) &&
                              !(g[k].key && g[i].key && strcmp(g[k].key, g[i].key) == 0);
                if (hit) {
                        sv_fail(s->c, "plan.path_target_overlap", ep, "its sandbox target overlaps an earlier grant's");
                        continue;
                }
                const char *other = g[i].exposure ? exposure_target_conflict(s, g[i].target) : NULL;
                if (other)
                        sv_fail(s->c, "plan.path_target_overlap", ep, "its sandbox target overlaps %s", other);
        }
}

static void check_path_grants(struct plan_state *s) {
        json_t *arr;
        if (sv_get_array(s->c, s->root, "path_grants", NULL, GLOVE_PLAN_MAX_PATH_GRANTS, &arr) < 0)
                return;
        struct grant g[GLOVE_PLAN_MAX_PATH_GRANTS];
        size_t n = json_array_size(arr);
        const char *prev = NULL;
        for (size_t i = 0; i < n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.path_grants", i);
                g[i] = (struct grant){ 0 };
                int r = decode_grant(s, json_array_get(arr, i), ep, &g[i]);
                check_order(s->c, prev, g[i].key, ep);
                prev = g[i].key;
                if (r < 0)
                        continue;
                if (g[i].exposure)
                        check_grant_exposure(s, &g[i], ep);
                else
                        check_grant_policy(s, &g[i], ep);
        }
        check_grant_targets(s, g, n);
}

/* ---- library_projections ---- */

static bool destination_allowed(const struct plan_state *s, const char *alias) {
        bool known = false;
        for (size_t i = 0; i < s->p->n_destinations && !known; i++)
                known = strcmp(s->p->destinations[i].alias, alias) == 0;
        return known && (!s->t || sv_strings_contain(&s->t->allowed_projection_destinations, alias));
}

static const char *decode_projection(struct plan_state *s, const json_t *o, const char *path) {
        struct sv_ctx *c = s->c;
        const char *id = NULL, *digest, *dest;
        char mp[GLOVE_JSON_PATH_MAX];
        if (sv_as_object(c, o, path) < 0)
                return NULL;
        sv_check_keys(c, o, projection_keys, path);
        if (sv_get_identifier(c, o, "projection_id", path, &id) < 0)
                id = NULL;
        sv_path_member(mp, path, "content_digest");
        if (sv_get_string(c, o, "content_digest", path, GLOVE_PLAN_MAX_BYTES, &digest) >= 0 &&
            !sv_digest_hex_valid(digest))
                sv_fail(c, sv_plan_value_code(digest, "plan.invalid_digest"), mp,
                        "must be 64 lowercase hex characters (SHA-256)");
        sv_path_member(mp, path, "destination_alias");
        if (sv_get_identifier(c, o, "destination_alias", path, &dest) >= 0 && !destination_allowed(s, dest))
                sv_fail(c, "plan.projection_destination_not_allowed", mp,
                        "destination alias not allowed for this runtime template");
        return id;
}

static void check_projections(struct plan_state *s) {
        json_t *arr;
        if (sv_get_array(s->c, s->root, "library_projections", NULL, GLOVE_PLAN_MAX_LIBRARY_PROJECTIONS, &arr) < 0)
                return;
        const char *prev = NULL;
        for (size_t i = 0; i < json_array_size(arr); i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.library_projections", i);
                const char *id = decode_projection(s, json_array_get(arr, i), ep);
                check_order(s->c, prev, id, ep);
                prev = id;
        }
}

/* ---- refinement-eval-v1 (docs/refinement.md, "The plan") ---- */

static void report_reason(void *ctx, const char *code, const char *path, const char *message) {
        (void)sv_fail(ctx, code, path, "%s", message);
}

/* The evaluation protocol and its binding: a plan that names the protocol
 * is a refinement plan and obeys its rules; a binding without it never
 * runs as an ordinary session. */
static void check_refinement(struct plan_state *s) {
        enum glove_refinement_plan_kind kind;
        struct glove_refinement_binding b;
        struct glove_error e = { 0 };
        if (glove_refinement_plan_decode(s->root, &kind, &b, report_reason, s->c, &e) < 0 || glove_error_is_set(&e))
                return;
        if (kind == GLOVE_REFINEMENT_PLAN_REFINEMENT)
                (void)glove_refinement_plan_check_rules(s->root, &b, report_reason, s->c, NULL);
}

/* ---- entry point ---- */

int glove_supervisor_plan_validate(const struct glove_supervisor_policy *policy, const void *plan, size_t len,
                                   int64_t now_ms, struct glove_plan_verdict *verdict, struct glove_error *err) {
        return glove_supervisor_plan_validate_ex(policy, NULL, plan, len, now_ms, verdict, err);
}

int glove_supervisor_plan_validate_ex(const struct glove_supervisor_policy *policy,
                                      const struct glove_exposures *exposures, const void *plan, size_t len,
                                      int64_t now_ms, struct glove_plan_verdict *verdict, struct glove_error *err) {
        if (!policy || !verdict || (!plan && len > 0))
                return glove_error_set(err, EINVAL, "plan.invalid_argument", "missing policy, plan or verdict");
        memset(verdict, 0, sizeof(*verdict));
        struct sv_ctx c = { .plan = true, .err = err, .verdict = verdict };

        struct glove_error jerr = { 0 };
        _cleanup_json_ json_t *root = NULL;
        int r = glove_json_decode_canonical(plan, len, GLOVE_PLAN_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &root, &jerr);
        if (r == -ENOMEM)
                return glove_error_set(err, ENOMEM, "plan.no_memory", "out of memory decoding the plan");
        if (r < 0) {
                sv_fail_json(&c, &jerr, "$");
                return 0;
        }
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        r = glove_digest_sha256(plan, len, md, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(md, sizeof(md), verdict->plan_content_digest, sizeof(verdict->plan_content_digest));

        struct plan_state s = { .c = &c, .p = policy, .root = root, .x = exposures, .now_ms = now_ms };
        sv_check_keys(&c, root, plan_keys, NULL);
        check_versions_and_expiry(&s);
        check_runtime(&s);
        check_policy_ids(&s);
        check_limits(&s);
        check_path_grants(&s);
        check_projections(&s);
        check_refinement(&s);
        if (c.oom)
                return -ENOMEM;
        verdict->valid = verdict->n_reasons_total == 0;
        return 0;
}

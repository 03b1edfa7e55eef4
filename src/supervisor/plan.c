/* SPDX-License-Identifier: Apache-2.0 */
/* Identifier-only session plans (DESIGN.md "Session plan"; spec
 * session-policy.md "A submitted plan must match"). Every reason is
 * collected, each with its stable "plan.*" code and JSON path. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/supervisor/plan.h"
#include "internal.h"

/* JSON-safe integer bound for plan numbers (2^53 - 1). */
#define PLAN_INT_MAX 9007199254740991LL

static const char *const plan_keys[] = {
        "adapter_command_digest", "egress_policy_id", "expires_at_ms", "library_projections", "limits",
        "path_grants", "policy_revision", "runtime_id", "runtime_template_id", "sandbox_backend",
        "schema_version", "secret_handles", "tool_policy_id", NULL,
};
static const char *const grant_keys[] = {
        "access", "alias", "cleanup_policy", "materialization", "max_bytes", "ttl_secs", NULL,
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

struct grant {
        const char *alias;
        int access, materialization, cleanup;
        int64_t max_bytes, ttl_secs;
};

static bool alias_allowed(const struct plan_state *s, const char *alias) {
        if (!sv_policy_alias(s->p, alias))
                return false;
        return !s->t || sv_strings_contain(&s->t->allowed_path_aliases, alias);
}

static void check_grant_policy(struct plan_state *s, const struct grant *g, const char *path) {
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
}

static int decode_grant(struct plan_state *s, const json_t *o, const char *path, struct grant *g) {
        struct sv_ctx *c = s->c;
        if (sv_as_object(c, o, path) < 0)
                return -EINVAL;
        int bad = sv_check_keys(c, o, grant_keys, path);
        if (sv_get_identifier(c, o, "alias", path, &g->alias) < 0)
                bad = -EINVAL, g->alias = NULL;
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

static void check_path_grants(struct plan_state *s) {
        json_t *arr;
        if (sv_get_array(s->c, s->root, "path_grants", NULL, GLOVE_PLAN_MAX_PATH_GRANTS, &arr) < 0)
                return;
        const char *prev = NULL;
        for (size_t i = 0; i < json_array_size(arr); i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.path_grants", i);
                struct grant g = { 0 };
                int r = decode_grant(s, json_array_get(arr, i), ep, &g);
                check_order(s->c, prev, g.alias, ep);
                prev = g.alias;
                if (r >= 0)
                        check_grant_policy(s, &g, ep);
        }
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

/* ---- entry point ---- */

int glove_supervisor_plan_validate(const struct glove_supervisor_policy *policy, const void *plan, size_t len,
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

        struct plan_state s = { .c = &c, .p = policy, .root = root, .now_ms = now_ms };
        sv_check_keys(&c, root, plan_keys, NULL);
        check_versions_and_expiry(&s);
        check_runtime(&s);
        check_policy_ids(&s);
        check_limits(&s);
        check_path_grants(&s);
        check_projections(&s);
        if (c.oom)
                return -ENOMEM;
        verdict->valid = verdict->n_reasons_total == 0;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The session policy decoder (spec session-policy.md, "Policy schema";
 * docs/session-policy.md). First offence wins; every offence has a stable
 * "policy.*" code and the JSON path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/supervisor/policy.h"
#include "internal.h"

#define P(x) "policy." x

static const char *const top_keys[] = {
        "egress_policies", "egress_policy_ids", "library_projection_destinations", "max_plan_ttl_ms",
        "path_aliases", "resource_profiles", "revision", "runtime_templates", "schema_version",
        "secret_handles", "secret_mounts", "tool_policy_ids", NULL,
};
static const char *const template_keys[] = {
        "adapter_command_digest", "allowed_path_aliases", "allowed_projection_destinations", "launch",
        "runtime_id", "runtime_template_id", "sandbox_backend", NULL,
};
static const char *const alias_keys[] = { "access", "alias", "host_path", "max_ttl_secs", "target_path", NULL };
static const char *const access_keys[] = {
        "access", "cleanup_policy", "create_policy", "materialization", "max_bytes", NULL,
};
static const char *const destination_keys[] = { "alias", "target_path", NULL };
static const char *const profile_keys[] = {
        "cpu_time_ms", "disk_bytes", "memory_bytes", "pids", "profile_id", "terminal_output_bytes",
        "wall_time_ms", NULL,
};
static const int64_t limit_max[SV_LIMIT_COUNT] = {
        GLOVE_POLICY_CPU_TIME_MS_MAX, GLOVE_POLICY_MEMORY_BYTES_MAX, GLOVE_POLICY_PIDS_MAX,
        GLOVE_POLICY_WALL_TIME_MS_MAX, GLOVE_POLICY_DISK_BYTES_MAX, GLOVE_POLICY_TERMINAL_OUTPUT_BYTES_MAX,
};

static int no_memory(struct sv_ctx *c) {
        c->oom = true;
        return glove_error_set(c->err, ENOMEM, P("no_memory"), "out of memory decoding the policy");
}

/* Gets a required array member with at least min and at most max items,
 * and allocates an array of n zeroed elements of size elem in *items. */
static int get_items(struct sv_ctx *c, const json_t *obj, const char *key, size_t min, size_t max, size_t elem,
                     json_t **arr, void **items, size_t *n) {
        int r = sv_get_array(c, obj, key, NULL, max, arr);
        if (r < 0)
                return r;
        *n = json_array_size(*arr);
        if (*n < min) {
                char mp[GLOVE_JSON_PATH_MAX];
                sv_path_member(mp, NULL, key);
                return sv_fail(c, P("too_few_items"), mp, "at least %zu entries are required", min);
        }
        *items = calloc(*n ? *n : 1, elem);
        return *items ? 0 : no_memory(c);
}

/* ---- path_aliases ---- */

/* A combination an operator could write but that would break containment:
 * a write mode other than the legacy direct_write must not bind the host
 * path; direct_write is exactly a bind; ephemeral data is removed. */
static const char *access_combination_problem(const struct sv_access_tuple *a) {
        bool write = a->access != SV_ACCESS_READ;
        if (write && a->access != SV_ACCESS_DIRECT_WRITE && a->materialization == SV_MAT_BIND)
                return "ephemeral_write and retained_write need an isolated materialization, not bind";
        if (a->access == SV_ACCESS_DIRECT_WRITE && a->materialization != SV_MAT_BIND)
                return "direct_write is only defined with materialization bind";
        if (a->access == SV_ACCESS_EPHEMERAL_WRITE && a->cleanup_policy != SV_CLEANUP_REMOVE)
                return "ephemeral_write requires cleanup_policy remove";
        return NULL;
}

static int decode_access(struct sv_ctx *c, const json_t *o, const char *path, struct sv_access_tuple *a) {
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, access_keys, path);
        if (r >= 0)
                r = sv_get_enum(c, o, "access", path, &sv_access_names, &a->access);
        if (r >= 0)
                r = sv_get_enum(c, o, "materialization", path, &sv_materialization_names, &a->materialization);
        if (r >= 0)
                r = sv_get_enum(c, o, "create_policy", path, &sv_create_names, &a->create_policy);
        if (r >= 0)
                r = sv_get_enum(c, o, "cleanup_policy", path, &sv_cleanup_names, &a->cleanup_policy);
        if (r >= 0)
                r = sv_get_int(c, o, "max_bytes", path, 1, GLOVE_POLICY_QUOTA_BYTES_MAX, &a->max_bytes);
        if (r < 0)
                return r;
        const char *problem = access_combination_problem(a);
        return problem ? sv_fail(c, P("invalid_access_combination"), path, "%s", problem) : 0;
}

static int decode_access_list(struct sv_ctx *c, const json_t *o, const char *path, struct sv_path_alias *al) {
        json_t *arr;
        char ap[GLOVE_JSON_PATH_MAX];
        sv_path_member(ap, path, "access");
        int r = sv_get_array(c, o, "access", path, GLOVE_POLICY_MAX_ACCESS_TUPLES, &arr);
        if (r < 0)
                return r;
        al->n_access = json_array_size(arr);
        if (al->n_access == 0)
                return sv_fail(c, P("too_few_items"), ap, "at least one access tuple is required");
        al->access = calloc(al->n_access, sizeof(*al->access));
        if (!al->access)
                return no_memory(c);
        for (size_t i = 0; i < al->n_access; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, ap, i);
                r = decode_access(c, json_array_get(arr, i), ep, &al->access[i]);
                if (r < 0)
                        return r;
                if (i == 0)
                        continue;
                /* Canonical: sorted by (access, materialization), each pair once. */
                const struct sv_access_tuple *p = &al->access[i - 1], *q = &al->access[i];
                int cmp = strcmp(sv_access_names.names[p->access], sv_access_names.names[q->access]);
                if (cmp == 0)
                        cmp = strcmp(sv_materialization_names.names[p->materialization],
                                     sv_materialization_names.names[q->materialization]);
                if (cmp >= 0)
                        return sv_fail(c, cmp == 0 ? P("array_duplicate") : P("array_unsorted"), ep,
                                       "access tuples must be sorted by (access, materialization), each pair once");
        }
        return 0;
}

static int decode_alias(struct sv_ctx *c, const json_t *o, const char *path, struct sv_path_alias *al) {
        char mp[GLOVE_JSON_PATH_MAX];
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, alias_keys, path);
        if (r >= 0)
                r = sv_get_identifier(c, o, "alias", path, &al->alias);
        if (r >= 0)
                r = sv_get_string(c, o, "host_path", path, GLOVE_LAUNCH_MAX_PATH, &al->host_path);
        sv_path_member(mp, path, "host_path");
        if (r >= 0)
                r = sv_check_host_path(c, al->host_path, mp);
        if (r >= 0)
                r = sv_get_string(c, o, "target_path", path, GLOVE_LAUNCH_MAX_PATH, &al->target_path);
        sv_path_member(mp, path, "target_path");
        if (r >= 0)
                r = sv_check_abs_path(c, al->target_path, mp);
        if (r >= 0)
                r = sv_get_int(c, o, "max_ttl_secs", path, 1, GLOVE_POLICY_PATH_TTL_SECS_MAX, &al->max_ttl_secs);
        if (r >= 0)
                r = decode_access_list(c, o, path, al);
        return r;
}

static const char *alias_key(const void *items, size_t i) {
        return ((const struct sv_path_alias *)items)[i].alias;
}

static int decode_aliases(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p) {
        json_t *arr;
        void *items;
        int r = get_items(c, root, "path_aliases", 0, GLOVE_POLICY_MAX_PATH_ALIASES, sizeof(*p->aliases), &arr,
                          &items, &p->n_aliases);
        if (r < 0)
                return r;
        p->aliases = items;
        for (size_t i = 0; i < p->n_aliases; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.path_aliases", i);
                r = decode_alias(c, json_array_get(arr, i), ep, &p->aliases[i]);
                if (r < 0)
                        return r;
        }
        return sv_check_sorted(c, "$.path_aliases", p->n_aliases, alias_key, p->aliases);
}

/* ---- library_projection_destinations ---- */

static const char *destination_key(const void *items, size_t i) {
        return ((const struct sv_destination *)items)[i].alias;
}

static int decode_destinations(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p) {
        json_t *arr;
        void *items;
        int r = get_items(c, root, "library_projection_destinations", 0, GLOVE_POLICY_MAX_DESTINATIONS,
                          sizeof(*p->destinations), &arr, &items, &p->n_destinations);
        if (r < 0)
                return r;
        p->destinations = items;
        for (size_t i = 0; i < p->n_destinations; i++) {
                char ep[GLOVE_JSON_PATH_MAX], mp[GLOVE_JSON_PATH_MAX];
                const json_t *o = json_array_get(arr, i);
                struct sv_destination *d = &p->destinations[i];
                sv_path_index(ep, "$.library_projection_destinations", i);
                sv_path_member(mp, ep, "target_path");
                r = sv_as_object(c, o, ep);
                if (r >= 0)
                        r = sv_check_keys(c, o, destination_keys, ep);
                if (r >= 0)
                        r = sv_get_identifier(c, o, "alias", ep, &d->alias);
                if (r >= 0)
                        r = sv_get_string(c, o, "target_path", ep, GLOVE_LAUNCH_MAX_PATH, &d->target_path);
                if (r >= 0)
                        r = sv_check_abs_path(c, d->target_path, mp);
                if (r < 0)
                        return r;
        }
        return sv_check_sorted(c, "$.library_projection_destinations", p->n_destinations, destination_key,
                               p->destinations);
}

/* ---- resource_profiles ---- */

static const char *profile_key(const void *items, size_t i) {
        return ((const struct sv_profile *)items)[i].id;
}

static int decode_profile(struct sv_ctx *c, const json_t *o, const char *path, struct sv_profile *pr) {
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, profile_keys, path);
        if (r >= 0)
                r = sv_get_identifier(c, o, "profile_id", path, &pr->id);
        for (size_t k = 0; r >= 0 && k < SV_LIMIT_COUNT; k++)
                r = sv_get_int(c, o, sv_limit_names[k], path, 1, limit_max[k], &pr->limits[k]);
        return r;
}

static int decode_profiles(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p) {
        json_t *arr;
        void *items;
        int r = get_items(c, root, "resource_profiles", 1, GLOVE_POLICY_MAX_RESOURCE_PROFILES,
                          sizeof(*p->profiles), &arr, &items, &p->n_profiles);
        if (r < 0)
                return r;
        p->profiles = items;
        for (size_t i = 0; i < p->n_profiles; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.resource_profiles", i);
                r = decode_profile(c, json_array_get(arr, i), ep, &p->profiles[i]);
                if (r < 0)
                        return r;
                /* A plan names its profile by the six values, so two
                 * profiles with the same values would be ambiguous. */
                for (size_t k = 0; k < i; k++)
                        if (memcmp(p->profiles[k].limits, p->profiles[i].limits, sizeof(p->profiles[i].limits)) == 0)
                                return sv_fail(c, P("duplicate_profile_limits"), ep,
                                               "same six limits as resource profile %zu", k);
        }
        r = sv_check_sorted(c, "$.resource_profiles", p->n_profiles, profile_key, p->profiles);
        if (r < 0)
                return r;
        /* "max_plan_ttl_ms must exceed every resource profile's wall_time_ms
         * by at least one second." */
        for (size_t i = 0; i < p->n_profiles; i++)
                if (p->max_plan_ttl_ms - p->profiles[i].limits[SV_LIMIT_WALL_TIME_MS] < GLOVE_POLICY_LAUNCH_HEADROOM_MS)
                        return sv_fail(c, P("plan_ttl_headroom"), "$.max_plan_ttl_ms",
                                       "must exceed resource profile \"%s\" wall_time_ms (%lld) by at least %lld ms",
                                       p->profiles[i].id, (long long)p->profiles[i].limits[SV_LIMIT_WALL_TIME_MS],
                                       (long long)GLOVE_POLICY_LAUNCH_HEADROOM_MS);
        return 0;
}

/* ---- runtime_templates ---- */

static int check_references(struct sv_ctx *c, const struct glove_supervisor_policy *p, const struct sv_template *t,
                            const char *path) {
        char ap[GLOVE_JSON_PATH_MAX], ep[GLOVE_JSON_PATH_MAX];
        sv_path_member(ap, path, "allowed_path_aliases");
        for (size_t i = 0; i < t->allowed_path_aliases.n; i++)
                if (!sv_policy_alias(p, t->allowed_path_aliases.v[i])) {
                        sv_path_index(ep, ap, i);
                        return sv_fail(c, P("unknown_path_alias"), ep, "no path_aliases entry has this alias");
                }
        sv_path_member(ap, path, "allowed_projection_destinations");
        for (size_t i = 0; i < t->allowed_projection_destinations.n; i++) {
                bool found = false;
                for (size_t k = 0; k < p->n_destinations && !found; k++)
                        found = strcmp(p->destinations[k].alias, t->allowed_projection_destinations.v[i]) == 0;
                if (!found) {
                        sv_path_index(ep, ap, i);
                        return sv_fail(c, P("unknown_projection_destination"), ep,
                                       "no library_projection_destinations entry has this alias");
                }
        }
        return 0;
}

static int check_launch_digest(struct sv_ctx *c, const struct sv_template *t, const char *path) {
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        int r = glove_supervisor_launch_template_digest(&t->launch, hex, c->err);
        if (r < 0)
                return r;
        if (strcmp(hex, t->adapter_command_digest) == 0)
                return 0;
        char mp[GLOVE_JSON_PATH_MAX];
        sv_path_member(mp, path, "adapter_command_digest");
        return sv_fail(c, P("adapter_digest_mismatch"), mp,
                       "does not match the launch template; runtime_launch_template_digest is %s", hex);
}

static int decode_template(struct sv_ctx *c, const struct glove_supervisor_policy *p, const json_t *o,
                           const char *path, struct sv_template *t) {
        char mp[GLOVE_JSON_PATH_MAX];
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, template_keys, path);
        if (r >= 0)
                r = sv_get_identifier(c, o, "runtime_template_id", path, &t->id);
        if (r >= 0)
                r = sv_get_identifier(c, o, "runtime_id", path, &t->runtime_id);
        if (r >= 0)
                r = sv_get_string(c, o, "adapter_command_digest", path, GLOVE_LAUNCH_MAX_PATH,
                                  &t->adapter_command_digest);
        sv_path_member(mp, path, "adapter_command_digest");
        if (r >= 0 && !sv_digest_hex_valid(t->adapter_command_digest))
                r = sv_fail(c, P("invalid_digest"), mp, "must be 64 lowercase hex characters (SHA-256)");
        if (r >= 0)
                r = sv_get_enum(c, o, "sandbox_backend", path, &sv_backend_names, &t->backend);
        if (r >= 0)
                r = sv_get_identifier_array(c, o, "allowed_path_aliases", path, GLOVE_POLICY_MAX_PATH_ALIASES, false,
                                            &t->allowed_path_aliases);
        if (r >= 0)
                r = sv_get_identifier_array(c, o, "allowed_projection_destinations", path,
                                            GLOVE_POLICY_MAX_DESTINATIONS, false, &t->allowed_projection_destinations);
        if (r >= 0)
                r = check_references(c, p, t, path);
        if (r < 0)
                return r;
        /* launch is optional: without it the template validates plans but
         * can never launch. */
        const json_t *launch = json_object_get(o, "launch");
        if (!launch)
                return 0;
        sv_path_member(mp, path, "launch");
        r = sv_decode_launch(c, launch, mp, t);
        return r < 0 ? r : check_launch_digest(c, t, path);
}

static const char *template_key(const void *items, size_t i) {
        return ((const struct sv_template *)items)[i].id;
}

static int decode_templates(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p) {
        json_t *arr;
        void *items;
        int r = get_items(c, root, "runtime_templates", 1, GLOVE_POLICY_MAX_RUNTIME_TEMPLATES,
                          sizeof(*p->templates), &arr, &items, &p->n_templates);
        if (r < 0)
                return r;
        p->templates = items;
        for (size_t i = 0; i < p->n_templates; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.runtime_templates", i);
                r = decode_template(c, p, json_array_get(arr, i), ep, &p->templates[i]);
                if (r < 0)
                        return r;
        }
        return sv_check_sorted(c, "$.runtime_templates", p->n_templates, template_key, p->templates);
}

/* ---- top level ---- */

static int decode_root(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p) {
        int64_t version;
        int r = sv_check_keys(c, root, top_keys, NULL);
        if (r >= 0)
                r = sv_get_int(c, root, "schema_version", NULL, 0, GLOVE_POLICY_REVISION_MAX, &version);
        if (r >= 0 && version != 1)
                r = sv_fail(c, P("unsupported_schema_version"), "$.schema_version", "only schema_version 1 is known");
        if (r >= 0)
                r = sv_get_int(c, root, "revision", NULL, 1, GLOVE_POLICY_REVISION_MAX, &p->revision);
        if (r >= 0)
                r = sv_get_int(c, root, "max_plan_ttl_ms", NULL, 1, GLOVE_POLICY_PLAN_TTL_MS_MAX, &p->max_plan_ttl_ms);
        if (r >= 0)
                r = decode_aliases(c, root, p);
        if (r >= 0)
                r = decode_destinations(c, root, p);
        if (r >= 0)
                r = decode_profiles(c, root, p);
        if (r >= 0)
                r = sv_get_identifier_array(c, root, "egress_policy_ids", NULL, GLOVE_POLICY_MAX_IDENTIFIERS, false,
                                            &p->egress_policy_ids);
        if (r >= 0)
                r = sv_get_identifier_array(c, root, "tool_policy_ids", NULL, GLOVE_POLICY_MAX_IDENTIFIERS, false,
                                            &p->tool_policy_ids);
        if (r >= 0)
                r = sv_get_identifier_array(c, root, "secret_handles", NULL, GLOVE_POLICY_MAX_IDENTIFIERS, false,
                                            &p->secret_handles);
        if (r >= 0)
                r = sv_decode_egress_policies(c, root, p);
        if (r >= 0)
                r = decode_templates(c, root, p);
        if (r >= 0)
                r = sv_decode_secret_mounts(c, root, p);
        if (r >= 0)
                r = sv_check_policy_paths(c, p);
        return r;
}

int glove_supervisor_policy_decode_ex(const void *data, size_t len, struct glove_supervisor_policy **out,
                                      char *path, size_t path_size, struct glove_error *err) {
        struct sv_ctx c = { .err = err, .path_out = path, .path_cap = path_size };
        if (path && path_size > 0)
                path[0] = '\0';
        if (!out)
                return glove_error_set(err, EINVAL, P("invalid_argument"), "$: no output pointer");
        *out = NULL;
        if (!data && len > 0)
                return sv_fail(&c, P("invalid_argument"), "$", "NULL data with a length");

        struct glove_error jerr = { 0 };
        _cleanup_json_ json_t *root = NULL;
        int r = glove_json_decode_strict(data, len, GLOVE_POLICY_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &root, &jerr);
        if (r < 0) {
                int f = sv_fail_json(&c, &jerr, "$");
                return r == -EMSGSIZE || r == -ENOMEM ? r : f;
        }
        struct glove_supervisor_policy *p = calloc(1, sizeof(*p));
        if (!p)
                return no_memory(&c);
        p->root = json_incref(root);
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        r = glove_digest_sha256(data, len, md, err);
        if (r >= 0)
                r = glove_digest_hex_encode(md, sizeof(md), p->digest, sizeof(p->digest));
        if (r >= 0)
                r = decode_root(&c, root, p);
        if (r < 0 || c.failed) {
                glove_supervisor_policy_free(p);
                return c.oom ? -ENOMEM : (r < 0 ? r : -EINVAL);
        }
        *out = p;
        return 0;
}

int glove_supervisor_policy_decode(const void *data, size_t len, struct glove_supervisor_policy **out,
                                   struct glove_error *err) {
        return glove_supervisor_policy_decode_ex(data, len, out, NULL, 0, err);
}

void glove_supervisor_policy_free(struct glove_supervisor_policy *p) {
        if (!p)
                return;
        for (size_t i = 0; p->templates && i < p->n_templates; i++)
                sv_template_free(&p->templates[i]);
        free(p->templates);
        for (size_t i = 0; p->aliases && i < p->n_aliases; i++)
                free(p->aliases[i].access);
        free(p->aliases);
        free(p->destinations);
        free(p->profiles);
        free(p->egress_policy_ids.v);
        free(p->tool_policy_ids.v);
        free(p->secret_handles.v);
        for (size_t i = 0; p->egress && i < p->n_egress; i++)
                free(p->egress[i].targets);
        free(p->egress);
        free(p->secret_mounts);
        json_decref(p->root);
        free(p);
}

/* ---- queries ---- */

const struct sv_template *sv_policy_template(const struct glove_supervisor_policy *p, const char *id) {
        for (size_t i = 0; id && i < p->n_templates; i++)
                if (strcmp(p->templates[i].id, id) == 0)
                        return &p->templates[i];
        return NULL;
}

const struct sv_path_alias *sv_policy_alias(const struct glove_supervisor_policy *p, const char *alias) {
        for (size_t i = 0; alias && i < p->n_aliases; i++)
                if (strcmp(p->aliases[i].alias, alias) == 0)
                        return &p->aliases[i];
        return NULL;
}

int64_t glove_supervisor_policy_revision(const struct glove_supervisor_policy *policy) {
        return policy->revision;
}

int64_t glove_supervisor_policy_max_plan_ttl_ms(const struct glove_supervisor_policy *policy) {
        return policy->max_plan_ttl_ms;
}

const char *glove_supervisor_policy_digest(const struct glove_supervisor_policy *policy) {
        return policy->digest;
}

bool glove_supervisor_policy_template_can_launch(const struct glove_supervisor_policy *policy,
                                                 const char *runtime_template_id) {
        const struct sv_template *t = policy ? sv_policy_template(policy, runtime_template_id) : NULL;
        return t && t->has_launch;
}

const char *glove_supervisor_policy_template_runtime_id(const struct glove_supervisor_policy *policy,
                                                        const char *runtime_template_id) {
        const struct sv_template *t = policy && runtime_template_id ? sv_policy_template(policy, runtime_template_id)
                                                                    : NULL;
        return t ? t->runtime_id : NULL;
}

int glove_supervisor_policy_template_launch(const struct glove_supervisor_policy *policy,
                                            const char *runtime_template_id,
                                            const struct glove_supervisor_launch_template **out,
                                            struct glove_error *err) {
        const struct sv_template *t = policy ? sv_policy_template(policy, runtime_template_id) : NULL;
        if (!t)
                return glove_error_set(err, ENOENT, P("unknown_runtime_template"),
                                       "no runtime template with this id");
        if (!t->has_launch)
                return glove_error_set(err, ENOEXEC, P("template_not_launchable"),
                                       "runtime template \"%s\" has no launch block: it validates plans but "
                                       "can never launch", t->id);
        *out = &t->launch;
        return 0;
}

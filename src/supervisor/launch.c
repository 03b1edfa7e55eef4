/* SPDX-License-Identifier: Apache-2.0 */
/* Runtime launch templates: decoding, checks, and
 * runtime_launch_template_digest (docs/digests.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/supervisor/adapter.h"
#include "glove/supervisor/launch.h"
#include "internal.h"

/* ---- digest ---- */

static int put_u32(struct glove_digest_sha256 *h, uint32_t v, struct glove_error *err) {
        const uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
        return glove_digest_sha256_update(h, b, sizeof(b), err);
}

/* str(s): u32 BE byte length, then the bytes (no terminator). */
static int put_str(struct glove_digest_sha256 *h, const char *s, struct glove_error *err) {
        if (!s)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "NULL launch string");
        size_t n = strlen(s);
        if (n > UINT32_MAX)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "launch string longer than 4 GiB");
        int r = put_u32(h, (uint32_t)n, err);
        return r < 0 ? r : glove_digest_sha256_update(h, s, n, err);
}

/* list(l): u32 BE count, then str(e) for each entry in order. */
static int put_list(struct glove_digest_sha256 *h, const char *const *v, size_t n, struct glove_error *err) {
        if (!v && n > 0)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "NULL launch list");
        if (n > UINT32_MAX)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "launch list too long");
        int r = put_u32(h, (uint32_t)n, err);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = put_str(h, v[i], err);
        return r;
}

int glove_supervisor_launch_template_digest(const struct glove_supervisor_launch_template *t,
                                            char out_hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1],
                                            struct glove_error *err) {
        if (!t)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "no launch template");
        if (!t->executable_path)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "NULL executable_path");
        bool discovery = t->runtime_discovery && t->runtime_discovery[0];
        /* Version 1 has no place for search paths, so a non-empty list
         * there could not be committed. */
        if (!discovery && t->n_executable_search_paths > 0)
                return glove_error_set(err, EINVAL, "launch.invalid_argument",
                                       "executable_search_paths without runtime_discovery");
        struct glove_digest_sha256 *h _cleanup_digest_sha256_ = NULL;
        int r = glove_digest_sha256_init(&h, err);
        if (r < 0)
                return r;
        const uint8_t version = discovery ? GLOVE_LAUNCH_DIGEST_VERSION_DISCOVERY : GLOVE_LAUNCH_DIGEST_VERSION_PINNED;
        r = put_str(h, GLOVE_LAUNCH_DIGEST_DOMAIN, err);
        if (r >= 0)
                r = glove_digest_sha256_update(h, &version, 1, err);
        if (r >= 0 && discovery)
                r = put_str(h, t->runtime_discovery, err);
        if (r >= 0 && discovery)
                r = put_list(h, t->executable_search_paths, t->n_executable_search_paths, err);
        if (r >= 0)
                r = put_str(h, t->executable_path, err);
        if (r >= 0)
                r = put_list(h, t->arguments, t->n_arguments, err);
        if (r >= 0)
                r = put_list(h, t->environment, t->n_environment, err);
        if (r >= 0)
                r = put_list(h, t->read_only_paths, t->n_read_only_paths, err);

        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        if (r >= 0)
                r = glove_digest_sha256_final(h, md, err);
        if (r < 0)
                return r;
        return glove_digest_hex_encode(md, sizeof(md), out_hex, GLOVE_DIGEST_SHA256_HEX_LEN + 1);
}

/* ---- decoding ---- */

static const char *const launch_keys[] = {
        "arguments", "environment", "executable_path", "executable_search_paths", "read_only_paths",
        "runtime_discovery", NULL,
};

/* NAME=VALUE with NAME from [A-Za-z_][A-Za-z0-9_]*; *name_len gets |NAME|. */
static bool environment_entry_valid(const char *s, size_t *name_len) {
        const char *p = s;
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
                return false;
        for (p++; *p && *p != '='; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                      *p == '_'))
                        return false;
        *name_len = (size_t)(p - s);
        return *p == '=';
}

static int check_arguments(struct sv_ctx *c, const struct sv_strings *a, const char *path) {
        for (size_t i = 0; i < a->n; i++) {
                if (a->v[i][0])
                        continue;
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, path, i);
                return sv_fail(c, "policy.empty_string", ep, "an argument must not be empty");
        }
        return 0;
}

static int check_environment(struct sv_ctx *c, const struct sv_strings *e, const char *path) {
        size_t prev_name = 0;
        for (size_t i = 0; i < e->n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, path, i);
                size_t name;
                if (!environment_entry_valid(e->v[i], &name))
                        return sv_fail(c, "policy.invalid_environment", ep,
                                       "entry must be NAME=VALUE with NAME from [A-Za-z_][A-Za-z0-9_]*");
                if (i > 0) {
                        const char *p = e->v[i - 1];
                        if (prev_name == name && strncmp(p, e->v[i], name) == 0)
                                return sv_fail(c, "policy.array_duplicate", ep, "variable named twice");
                        if (strcmp(p, e->v[i]) >= 0)
                                return sv_fail(c, "policy.array_unsorted", ep,
                                               "entries must be in strictly increasing byte order");
                }
                prev_name = name;
        }
        return 0;
}

/* An adapter runtime's HOME and managed variable are Glove's (adapter.h):
 * a template that sets either is refused. */
static int check_managed_environment(struct sv_ctx *c, const struct sv_template *t, const struct sv_strings *e,
                                     const char *path) {
        const struct glove_supervisor_adapter *a = glove_supervisor_adapter_find(t->runtime_id);
        if (!a)
                return 0;
        size_t managed = a->managed_env ? strcspn(a->managed_env, "=") : 0;
        for (size_t i = 0; i < e->n; i++) {
                size_t name = strcspn(e->v[i], "=");
                bool home = name == 4 && strncmp(e->v[i], "HOME", 4) == 0;
                if (!home && !(managed && name == managed && strncmp(e->v[i], a->managed_env, managed) == 0))
                        continue;
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, path, i);
                return sv_fail(c, "policy.managed_environment", ep,
                               "%.*s is set by Glove for the %s adapter (%s%s%s); remove it from the template",
                               (int)name, e->v[i], a->runtime_id, "HOME=" GLOVE_SUPERVISOR_ADAPTER_HOME,
                               a->managed_env ? ", " : "", a->managed_env ? a->managed_env : "");
        }
        return 0;
}

/* Host paths, no two overlapping; sorted when sorted is true. */
static int check_path_list(struct sv_ctx *c, const struct sv_strings *l, const char *path, bool sorted) {
        for (size_t i = 0; i < l->n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, path, i);
                int r = sv_check_host_path(c, l->v[i], ep);
                if (r < 0)
                        return r;
                if (sorted && i > 0 && strcmp(l->v[i - 1], l->v[i]) >= 0)
                        return sv_fail(c, strcmp(l->v[i - 1], l->v[i]) == 0 ? "policy.array_duplicate"
                                                                            : "policy.array_unsorted",
                                       ep, "paths must be sorted by bytes and unique");
                for (size_t k = 0; k < i; k++)
                        if (sv_paths_overlap(l->v[k], l->v[i]))
                                return sv_fail(c, strcmp(l->v[k], l->v[i]) == 0 ? "policy.array_duplicate"
                                                                                : "policy.path_overlap",
                                               ep, "path duplicates or overlaps entry %zu", k);
        }
        return 0;
}

static int decode_executable(struct sv_ctx *c, const json_t *obj, const char *path, struct sv_template *t) {
        char mp[GLOVE_JSON_PATH_MAX];
        const char *discovery = NULL, *exe;
        int r;
        if (json_object_get(obj, "runtime_discovery")) {
                sv_path_member(mp, path, "runtime_discovery");
                r = sv_get_string(c, obj, "runtime_discovery", path, GLOVE_POLICY_IDENTIFIER_MAX, &discovery);
                if (r < 0)
                        return r;
                if (sv_enum_find(&sv_discovery_names, discovery) < 0)
                        return sv_fail(c, "policy.discovery_unsupported", mp,
                                       "not a built-in native adapter (claude-code, codex, copilot, opencode, pi)");
                if (strcmp(discovery, t->runtime_id) != 0)
                        return sv_fail(c, "policy.discovery_runtime_mismatch", mp,
                                       "runtime_discovery must equal the template's runtime_id");
        }
        r = sv_get_string(c, obj, "executable_path", path, GLOVE_LAUNCH_MAX_PATH, &exe);
        if (r < 0)
                return r;
        sv_path_member(mp, path, "executable_path");
        if (discovery && exe[0])
                return sv_fail(c, "policy.discovery_executable_path", mp,
                               "executable_path must be empty when runtime_discovery is set");
        if (!discovery) {
                r = sv_check_host_path(c, exe, mp);
                if (r < 0)
                        return r;
        }
        r = sv_get_string_list(c, obj, "executable_search_paths", path, false, GLOVE_LAUNCH_MAX_ITEMS,
                               GLOVE_LAUNCH_MAX_PATH, &t->search_paths);
        if (r < 0)
                return r;
        sv_path_member(mp, path, "executable_search_paths");
        if (discovery && t->search_paths.n == 0)
                return sv_fail(c, "policy.discovery_search_paths", mp,
                               "runtime_discovery requires at least one explicit search directory");
        if (!discovery && t->search_paths.n > 0)
                return sv_fail(c, "policy.search_paths_without_discovery", mp,
                               "executable_search_paths requires runtime_discovery");
        r = check_path_list(c, &t->search_paths, mp, false);
        if (r < 0)
                return r;
        t->launch.runtime_discovery = discovery;
        t->launch.executable_path = exe;
        return 0;
}

int sv_decode_launch(struct sv_ctx *c, const json_t *obj, const char *path, struct sv_template *t) {
        char mp[GLOVE_JSON_PATH_MAX];
        int r = sv_as_object(c, obj, path);
        if (r >= 0)
                r = sv_check_keys(c, obj, launch_keys, path);
        if (r >= 0)
                r = decode_executable(c, obj, path, t);
        if (r < 0)
                return r;

        r = sv_get_string_list(c, obj, "arguments", path, true, GLOVE_LAUNCH_MAX_ITEMS, GLOVE_LAUNCH_MAX_STRING,
                               &t->arguments);
        sv_path_member(mp, path, "arguments");
        if (r >= 0)
                r = check_arguments(c, &t->arguments, mp);
        if (r >= 0)
                r = sv_get_string_list(c, obj, "environment", path, true, GLOVE_LAUNCH_MAX_ITEMS,
                                       GLOVE_LAUNCH_MAX_STRING, &t->environment);
        sv_path_member(mp, path, "environment");
        if (r >= 0)
                r = check_environment(c, &t->environment, mp);

        if (r >= 0)
                r = check_managed_environment(c, t, &t->environment, mp);
        if (r >= 0)
                r = sv_get_string_list(c, obj, "read_only_paths", path, true, GLOVE_LAUNCH_MAX_ITEMS,
                                       GLOVE_LAUNCH_MAX_PATH, &t->read_only_paths);
        sv_path_member(mp, path, "read_only_paths");
        if (r >= 0)
                r = check_path_list(c, &t->read_only_paths, mp, true);
        if (r < 0)
                return r;
        /* "Runtime paths cannot ... overlap a pinned executable." */
        for (size_t i = 0; t->launch.executable_path[0] && i < t->read_only_paths.n; i++) {
                if (!sv_paths_overlap(t->read_only_paths.v[i], t->launch.executable_path))
                        continue;
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, mp, i);
                return sv_fail(c, "policy.executable_overlap", ep,
                               "read-only path overlaps the pinned executable_path");
        }

        t->launch.executable_search_paths = t->search_paths.v;
        t->launch.n_executable_search_paths = t->search_paths.n;
        t->launch.arguments = t->arguments.v;
        t->launch.n_arguments = t->arguments.n;
        t->launch.environment = t->environment.v;
        t->launch.n_environment = t->environment.n;
        t->launch.read_only_paths = t->read_only_paths.v;
        t->launch.n_read_only_paths = t->read_only_paths.n;
        t->has_launch = true;
        return 0;
}

void sv_template_free(struct sv_template *t) {
        free(t->allowed_path_aliases.v);
        free(t->allowed_projection_destinations.v);
        free(t->search_paths.v);
        free(t->arguments.v);
        free(t->environment.v);
        free(t->read_only_paths.v);
}

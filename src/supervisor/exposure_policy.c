/* SPDX-License-Identifier: Apache-2.0 */
/* The exposure policy: strict decoder and protected-file loader (see
 * glove/supervisor/exposure.h, "The exposure policy"). Built on the session
 * policy's decoding toolkit (internal.h), first error wins. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exposure_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "internal.h"

#define P(x) "policy." x

static const char *const top_keys[] = { "roots", "schema_version", NULL };
static const char *const root_keys[] = {
        "access", "max_ttl_secs", "path", "root_id", "runtime_template_ids", "target_path", NULL,
};
static const char *const mode_keys[] = { "access", "cleanup_policy", "materialization", "max_bytes", NULL };

/* Host paths beyond the session policy's /dev, /proc, /sys: runtime state. */
static const char *const restricted_roots[] = { "/run" };

static int no_memory(struct sv_ctx *c) {
        c->oom = true;
        return glove_error_set(c->err, ENOMEM, P("no_memory"), "out of memory decoding the exposure policy");
}

/* Each access has exactly one materialization an exposure may use; a copy
 * keeps writes away from the project until an owner applies them. */
const char *exp_mode_problem(int access, int mat, int cleanup) {
        switch (access) {
        case SV_ACCESS_READ:
                return mat == SV_MAT_BIND ? NULL : "read exposures use materialization bind";
        case SV_ACCESS_EPHEMERAL_WRITE:
                if (mat != SV_MAT_COPY)
                        return "ephemeral_write exposures use materialization copy";
                return cleanup == SV_CLEANUP_REMOVE ? NULL : "ephemeral_write requires cleanup_policy remove";
        case SV_ACCESS_RETAINED_WRITE:
                return mat == SV_MAT_COPY ? NULL : "retained_write exposures use materialization copy";
        default:
                return "direct_write is not allowed for exposures (the agent would write the project itself)";
        }
}

static int decode_mode(struct sv_ctx *c, const json_t *o, const char *path, struct glove_exposure_mode *m) {
        int access = -1, mat = -1, cleanup = -1;
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, mode_keys, path);
        if (r >= 0)
                r = sv_get_enum(c, o, "access", path, &sv_access_names, &access);
        if (r >= 0)
                r = sv_get_enum(c, o, "materialization", path, &sv_materialization_names, &mat);
        if (r >= 0)
                r = sv_get_enum(c, o, "cleanup_policy", path, &sv_cleanup_names, &cleanup);
        if (r >= 0)
                r = sv_get_int(c, o, "max_bytes", path, 1, GLOVE_POLICY_QUOTA_BYTES_MAX, &m->max_bytes);
        if (r < 0)
                return r;
        const char *problem = exp_mode_problem(access, mat, cleanup);
        if (problem)
                return sv_fail(c, P("invalid_access_combination"), path, "%s", problem);
        m->access = sv_access_names.names[access];
        m->materialization = sv_materialization_names.names[mat];
        m->cleanup_policy = sv_cleanup_names.names[cleanup];
        return 0;
}

static int decode_modes(struct sv_ctx *c, const json_t *o, const char *path, struct glove_exposure_root *root) {
        json_t *arr;
        char ap[GLOVE_JSON_PATH_MAX];
        sv_path_member(ap, path, "access");
        int r = sv_get_array(c, o, "access", path, GLOVE_EXPOSURE_MAX_MODES, &arr);
        if (r < 0)
                return r;
        size_t n = json_array_size(arr);
        if (n == 0)
                return sv_fail(c, P("too_few_items"), ap, "at least one access tuple is required");
        struct glove_exposure_mode *modes = calloc(n, sizeof(*modes));
        if (!modes)
                return no_memory(c);
        root->modes = modes;
        root->n_modes = n;
        for (size_t i = 0; i < n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, ap, i);
                r = decode_mode(c, json_array_get(arr, i), ep, &modes[i]);
                if (r < 0)
                        return r;
                if (i == 0)
                        continue;
                int cmp = strcmp(modes[i - 1].access, modes[i].access);
                if (cmp == 0)
                        cmp = strcmp(modes[i - 1].materialization, modes[i].materialization);
                if (cmp >= 0)
                        return sv_fail(c, cmp == 0 ? P("array_duplicate") : P("array_unsorted"), ep,
                                       "access tuples must be sorted by (access, materialization), each pair once");
        }
        return 0;
}

static int decode_root_entry(struct sv_ctx *c, const json_t *o, const char *path, struct glove_exposure_root *root) {
        char mp[GLOVE_JSON_PATH_MAX];
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, root_keys, path);
        if (r >= 0)
                r = sv_get_identifier(c, o, "root_id", path, &root->root_id);
        if (r >= 0)
                r = sv_get_string(c, o, "path", path, GLOVE_LAUNCH_MAX_PATH, &root->path);
        sv_path_member(mp, path, "path");
        if (r >= 0)
                r = sv_check_host_path(c, root->path, mp);
        for (size_t i = 0; r >= 0 && i < GLOVE_ELEMENTSOF(restricted_roots); i++)
                if (glove_path_is_beneath(root->path, restricted_roots[i]))
                        r = sv_fail(c, P("path_restricted"), mp, "host path lies beneath %s", restricted_roots[i]);
        if (r >= 0)
                r = sv_get_string(c, o, "target_path", path, GLOVE_LAUNCH_MAX_PATH, &root->target_path);
        sv_path_member(mp, path, "target_path");
        if (r >= 0)
                r = sv_check_abs_path(c, root->target_path, mp);
        if (r >= 0)
                r = sv_get_int(c, o, "max_ttl_secs", path, 1, GLOVE_EXPOSURE_TTL_SECS_MAX, &root->max_ttl_secs);
        if (r >= 0)
                r = decode_modes(c, o, path, root);
        struct sv_strings ids = { 0 };
        if (r >= 0)
                r = sv_get_identifier_array(c, o, "runtime_template_ids", path, GLOVE_EXPOSURE_MAX_RUNTIMES, false,
                                            &ids);
        if (r >= 0) {
                root->runtime_template_ids = ids.v;
                root->n_runtimes = ids.n;
                sv_path_member(mp, path, "runtime_template_ids");
                if (ids.n == 0)
                        r = sv_fail(c, P("too_few_items"), mp, "at least one runtime template id is required");
        }
        return r;
}

static const char *root_key(const void *items, size_t i) {
        return ((const struct glove_exposure_root *)items)[i].root_id;
}

static int decode_top(struct sv_ctx *c, const json_t *top, struct glove_exposure_policy *p) {
        int64_t version;
        int r = sv_check_keys(c, top, top_keys, NULL);
        if (r >= 0)
                r = sv_get_int(c, top, "schema_version", NULL, 0, INT64_MAX, &version);
        if (r >= 0 && version != GLOVE_EXPOSURE_SCHEMA_VERSION)
                r = sv_fail(c, P("unsupported_schema_version"), "$.schema_version", "only schema_version 1 is known");
        json_t *arr = NULL;
        if (r >= 0)
                r = sv_get_array(c, top, "roots", NULL, GLOVE_EXPOSURE_MAX_ROOTS, &arr);
        if (r < 0)
                return r;
        size_t n = json_array_size(arr);
        if (n == 0)
                return sv_fail(c, P("too_few_items"), "$.roots", "at least one root is required");
        p->roots = calloc(n, sizeof(*p->roots));
        if (!p->roots)
                return no_memory(c);
        p->n_roots = n;
        for (size_t i = 0; i < n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.roots", i);
                r = decode_root_entry(c, json_array_get(arr, i), ep, &p->roots[i]);
                if (r < 0)
                        return r;
        }
        r = sv_check_sorted(c, "$.roots", n, root_key, p->roots);
        for (size_t i = 0; r >= 0 && i < n; i++)
                for (size_t k = 0; r >= 0 && k < i; k++)
                        if (sv_paths_overlap(p->roots[i].path, p->roots[k].path)) {
                                char ep[GLOVE_JSON_PATH_MAX], mp[GLOVE_JSON_PATH_MAX];
                                sv_path_index(ep, "$.roots", i);
                                sv_path_member(mp, ep, "path");
                                r = sv_fail(c, P("path_overlap"), mp, "overlaps the path of roots[%zu]", k);
                        }
        return r;
}

int glove_exposure_policy_decode(const void *data, size_t len, struct glove_exposure_policy **out, char *path,
                                 size_t path_size, struct glove_error *err) {
        struct sv_ctx c = { .err = err, .path_out = path, .path_cap = path_size };
        if (path && path_size > 0)
                path[0] = '\0';
        if (!out)
                return glove_error_set(err, EINVAL, P("invalid_argument"), "$: no output pointer");
        *out = NULL;
        if (!data && len > 0)
                return sv_fail(&c, P("invalid_argument"), "$", "NULL data with a length");

        struct glove_error jerr = { 0 };
        _cleanup_json_ json_t *top = NULL;
        int r = glove_json_decode_strict(data, len, GLOVE_EXPOSURE_POLICY_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &top,
                                         &jerr);
        if (r < 0) {
                int f = sv_fail_json(&c, &jerr, "$");
                return r == -EMSGSIZE || r == -ENOMEM ? r : f;
        }
        struct glove_exposure_policy *p = calloc(1, sizeof(*p));
        if (!p)
                return no_memory(&c);
        p->root = json_incref(top);
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        r = glove_digest_sha256(data, len, md, err);
        if (r >= 0)
                r = glove_digest_hex_encode(md, sizeof(md), p->digest, sizeof(p->digest));
        if (r >= 0)
                r = decode_top(&c, top, p);
        if (r < 0 || c.failed) {
                glove_exposure_policy_free(p);
                return c.oom ? -ENOMEM : (r < 0 ? r : -EINVAL);
        }
        *out = p;
        return 0;
}

int glove_exposure_policy_load_text(const char *path, uid_t owner_uid, struct glove_exposure_policy **out,
                                    char **text, size_t *len, struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, P("invalid_argument"), "no output pointer");
        *out = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = sv_load_protected_file(path, owner_uid, GLOVE_EXPOSURE_POLICY_MAX_BYTES, &buf, &n, err);
        if (r < 0)
                return r;
        r = glove_exposure_policy_decode(buf, n, out, NULL, 0, err);
        if (r < 0) {
                glove_error_prefix(err, "%s", path);
                return r;
        }
        if (text) {
                *text = TAKE_PTR(buf);
                *len = n;
        }
        return 0;
}

int glove_exposure_policy_load(const char *path, uid_t owner_uid, struct glove_exposure_policy **out,
                               struct glove_error *err) {
        return glove_exposure_policy_load_text(path, owner_uid, out, NULL, NULL, err);
}

void glove_exposure_policy_free(struct glove_exposure_policy *p) {
        if (!p)
                return;
        for (size_t i = 0; p->roots && i < p->n_roots; i++) {
                free((void *)p->roots[i].modes);
                free((void *)p->roots[i].runtime_template_ids);
        }
        free(p->roots);
        json_decref(p->root);
        free(p);
}

size_t glove_exposure_policy_root_count(const struct glove_exposure_policy *p) {
        return p ? p->n_roots : 0;
}

const struct glove_exposure_root *glove_exposure_policy_root(const struct glove_exposure_policy *p, size_t i) {
        return p && i < p->n_roots ? &p->roots[i] : NULL;
}

const char *glove_exposure_policy_digest(const struct glove_exposure_policy *p) {
        return p ? p->digest : NULL;
}

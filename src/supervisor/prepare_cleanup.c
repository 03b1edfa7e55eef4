/* SPDX-License-Identifier: Apache-2.0 */
/*
 * After a managed session (include/glove/supervisor/prepare.h;
 * docs/session-policy.md, "Resolution and retained images"): cleanup of its
 * materializations, the leftovers of a start that never completed, and the
 * retained images frozen read-only after a host restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/supervisor/prepare.h"
#include "image.h"
#include "internal.h"
#include "prepare_internal.h"

/* ---- cleanup ---- */

/* The path_grants array of stored plan bytes (*root owns it). */
static int plan_grants(const char *plan, size_t plan_len, json_t **root, const json_t **grants,
                       struct glove_error *err) {
        if (glove_json_decode_canonical(plan, plan_len, GLOVE_PLAN_MAX_BYTES, 0, root, NULL) < 0 ||
            !json_is_array(json_object_get(*root, "path_grants")))
                return sv_bad_plan(err, "not a canonical JSON object with path_grants");
        *grants = json_object_get(*root, "path_grants");
        return 0;
}

/* Grant i of a stored plan's path_grants, its name (alias or exposure_id)
 * an identifier (it names directories under the root). */
static int stored_grant(const json_t *grants, size_t i, struct sv_grant *g, struct glove_error *err) {
        int r = sv_decode_grant(json_array_get(grants, i), g, err);
        if (r < 0)
                return r;
        return sv_identifier_valid(g->name) ? 0 : sv_bad_plan(err, "an alias or exposure_id");
}

int glove_supervisor_cleanup(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                             const char *plan, size_t plan_len, json_t **removed, json_t **kept,
                             struct glove_error *err) {
        if (removed)
                *removed = NULL;
        if (kept)
                *kept = NULL;
        int r = sv_check_args(cfg, session_id, plan, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_t *root = NULL;
        const json_t *grants = NULL;
        if ((r = plan_grants(plan, plan_len, &root, &grants, err)) < 0)
                return r;
        _cleanup_json_ json_t *rm = json_array(), *kp = json_array();
        if (!rm || !kp)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        for (size_t i = 0; i < json_array_size(grants); i++) {
                struct sv_grant g;
                if ((r = stored_grant(grants, i, &g, err)) < 0)
                        return r;
                bool remove = g.cleanup == SV_CLEANUP_REMOVE;
                if (g.access == SV_ACCESS_RETAINED_WRITE) {
                        r = sv_image_cleanup(cfg->materialization_root_fd, cfg->materialization_root, session_id,
                                             g.name, remove, err);
                        if (r < 0)
                                return r;
                } else if (g.access != SV_ACCESS_EPHEMERAL_WRITE) {
                        continue; /* read binds leave nothing on the host */
                }
                if (json_array_append_new(remove ? rm : kp, json_string(g.name)) < 0)
                        return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        }
        sv_image_cleanup_session(cfg->materialization_root_fd, session_id);
        if (removed)
                *removed = TAKE_PTR(rm);
        if (kept)
                *kept = TAKE_PTR(kp);
        return 0;
}

int glove_supervisor_release_leftovers(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                       const char *plan, size_t plan_len, struct glove_error *err) {
        int r = sv_check_args(cfg, session_id, plan, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_t *root = NULL;
        const json_t *grants = NULL;
        if ((r = plan_grants(plan, plan_len, &root, &grants, err)) < 0)
                return r;
        for (size_t i = 0; i < json_array_size(grants); i++) {
                struct sv_grant g;
                if ((r = stored_grant(grants, i, &g, err)) < 0)
                        return r;
                if (g.access != SV_ACCESS_RETAINED_WRITE)
                        continue;
                /* sv_image_cleanup without removing the image: detach the
                 * mount, remove its empty directory. */
                r = sv_image_cleanup(cfg->materialization_root_fd, cfg->materialization_root, session_id, g.name,
                                     false, err);
                if (r < 0)
                        return r;
        }
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "mounts/%s", session_id);
        (void)unlinkat(cfg->materialization_root_fd, rel, AT_REMOVEDIR);
        return 0;
}

int glove_supervisor_freeze_retained(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                     const json_t *materializations, json_t **frozen, struct glove_error *err) {
        *frozen = json_array();
        if (!cfg || !session_id || !*frozen)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "a configuration and a session are required");
        int ret = 0;
        size_t i;
        const json_t *m;
        json_array_foreach(materializations, i, m) {
                const char *kind = json_string_value(json_object_get(m, "kind"));
                const char *alias = json_string_value(json_object_get(m, "alias"));
                if (!alias) /* an exposure's image is named by its exposure_id */
                        alias = json_string_value(json_object_get(m, "exposure_id"));
                if (!kind || strcmp(kind, "retained_image") != 0 || !alias || !alias[0] || strchr(alias, '/') || strcmp(alias, ".") == 0 ||
                    strcmp(alias, "..") == 0 || strlen(alias) > 255)
                        continue;
                const json_t *img = json_object_get(m, "image");
                json_int_t ino = json_integer_value(json_object_get(img, "ino"));
                json_int_t size = json_integer_value(json_object_get(img, "size"));
                /* The old boot's mount, if this is no real restart (a
                 * namespace that only looks like one), goes first. */
                char rel[PATH_MAX];
                snprintf(rel, sizeof(rel), "%s/mounts/%s/%s", cfg->materialization_root, session_id, alias);
                (void)umount2(rel, MNT_DETACH | UMOUNT_NOFOLLOW);
                struct glove_error e = { 0 };
                if (sv_image_freeze(cfg->materialization_root_fd, session_id, alias, (uint64_t)ino, (uint64_t)size, &e) < 0) {
                        if (ret == 0) {
                                ret = -(e.errnum ? e.errnum : EIO);
                                if (err)
                                        *err = e;
                        }
                        continue;
                }
                json_array_append_new(*frozen, json_string(alias));
        }
        return ret;
}

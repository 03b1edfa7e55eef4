/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A retained grant's stage is a copy (issue 30; docs/retained-changes.md;
 * spec session-policy.md, the retained-change paragraphs): the fresh image
 * of prepare.c is filled, before the agent starts, with a copy of the
 * alias's (or exposure's) directory pinned at prepare, by the rules of the
 * ephemeral copy (glove_tree_copy_dir), and the baseline is recorded: the
 * source's identity, the manifest of the source taken before the copy and
 * the manifest of the stage right after it, in
 * ROOT/images/SESSION/NAME.baseline.json, which inspection and apply read.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/base/json.h"
#include "glove/container/mount_plan.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/manifest.h"
#include "glove/supervisor/prepare.h"
#include "image.h"
#include "internal.h"
#include "prepare_internal.h"

#define _cleanup_manifest_ __attribute__((cleanup(glove_manifest_freep)))

static int add(json_t *o, const char *k, json_t *v) {
        return json_object_set_new(o, k, v) < 0 ? -1 : 0;
}

/* The identity of the source's parent and the source's name in it, for an
 * alias (its host path): the parent opened without following links, and
 * the entry in it required to be the pinned source. */
static int alias_parent(const char *what, const char *path, const struct stat *src, json_t *o,
                        struct glove_error *err) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", path);
        char *slash = strrchr(parent, '/');
        if (!slash || !slash[1])
                return glove_error_set(err, EINVAL, "materialize.stage", "%s: %s has no parent directory", what, path);
        const char *name = path + (slash - parent) + 1;
        if (slash == parent)
                slash[1] = '\0';
        else
                *slash = '\0';
        _cleanup_close_ int pfd = -1;
        int r = glove_fd_open_nofollow(parent, O_PATH | O_DIRECTORY, &pfd, NULL);
        struct stat pst, est;
        if (r < 0 || fstat(pfd, &pst) < 0 || fstatat(pfd, name, &est, AT_SYMLINK_NOFOLLOW) < 0 ||
            est.st_dev != src->st_dev || est.st_ino != src->st_ino)
                return glove_error_set(err, ESTALE, "materialize.changed",
                                       "%s: %s changed while the stage was prepared; start the session again", what,
                                       path);
        return add(o, "parent", json_pack("{sIsI}", "dev", (json_int_t)pst.st_dev, "ino", (json_int_t)pst.st_ino)) |
               add(o, "name", json_string(name));
}

/* The baseline's "source" member for m (NULL: out of memory, or err set). */
static json_t *source_json(const struct glove_supervisor_runtime_config *cfg, const struct sv_mount *m,
                           const struct sv_stage_source *s, const struct stat *st, struct glove_error *err) {
        _cleanup_json_ json_t *o = json_object();
        if (!o || add(o, "dev", json_integer((json_int_t)st->st_dev)) || add(o, "ino", json_integer((json_int_t)st->st_ino)) ||
            add(o, "mode", json_integer((json_int_t)(st->st_mode & 07777))))
                return NULL;
        if (m->exposure) {
                char sid[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
                if (glove_exposures_source_identity_digest(cfg->exposures, m->name, m->exposure_generation, sid, err) < 0)
                        return NULL;
                if (add(o, "kind", json_string("exposure")) || add(o, "exposure_id", json_string(m->name)) ||
                    add(o, "generation", json_integer((json_int_t)m->exposure_generation)) ||
                    add(o, "scope_digest", json_string(m->scope_digest)) || add(o, "source_identity_digest", json_string(sid)))
                        return NULL;
        } else {
                if (add(o, "kind", json_string("alias")) || add(o, "alias", json_string(m->alias)) ||
                    add(o, "path", json_string(s->host_path)) || alias_parent(m->alias, s->host_path, st, o, err) < 0)
                        return NULL;
        }
        return TAKE_PTR(o);
}

static int write_baseline(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                          const struct sv_mount *m, json_t *source, const struct glove_manifest *src_m,
                          const struct glove_manifest *stage_m, struct glove_error *err) {
        _cleanup_json_ json_t *b = json_object();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int r = b ? 0 : -1;
        r |= add(b, "schema", json_string("glove.retained-baseline.v1")) | add(b, "session_id", json_string(session_id)) |
             add(b, "grant", json_string(m->alias)) | add(b, "source", source ? json_incref(source) : json_null()) |
             add(b, "source_manifest", src_m ? glove_manifest_to_json(src_m) : json_null()) |
             add(b, "stage_manifest", glove_manifest_to_json(stage_m)) |
             add(b, "image", json_pack("{sIsI}", "ino", (json_int_t)m->img->image_ino, "size", (json_int_t)m->img->size)) |
             add(b, "created_at_ms", json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (r != 0 || glove_json_encode_canonical(b, &text, &len, NULL) < 0)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "images/%s", session_id);
        _cleanup_close_ int dfd = -1;
        r = glove_fd_open_beneath(cfg->materialization_root_fd, rel, O_RDONLY | O_DIRECTORY, &dfd, NULL);
        char name[300];
        snprintf(name, sizeof(name), "%s" SV_STAGE_BASELINE_SUFFIX, m->alias);
        if (r >= 0)
                r = glove_file_replace(dfd, name, text, len, 0600, GLOVE_FILE_REPLACE_NOREPLACE, NULL);
        if (r < 0)
                return glove_error_set(err, -r, "materialize.stage", "%s: the stage's baseline cannot be recorded: %s",
                                       m->alias, strerror(-r));
        return 0;
}

/* A manifest failure of the source or the stage as a launch refusal. */
static int manifest_refusal(const struct sv_mount *m, const char *what, struct glove_error *why,
                            struct glove_error *err) {
        if (why->code && strcmp(why->code, "manifest.too_large") == 0)
                return glove_error_set(err, EFBIG, "materialize.quota_exceeded",
                                       "%s: the %s does not fit in the retained image's %llu bytes; raise max_bytes "
                                       "(%s)",
                                       m->alias, what, (unsigned long long)m->max_bytes, why->message);
        /* The ephemeral copy's codes for the same conditions. */
        const char *code = "materialize.stage";
        if (why->code && strcmp(why->code, "manifest.changed") == 0)
                code = "materialize.changed";
        else if (why->code && strcmp(why->code, "manifest.too_deep") == 0)
                code = "materialize.too_deep";
        else if (why->code && (strcmp(why->code, "manifest.crosses_mount") == 0 ||
                               strcmp(why->code, "manifest.bad_name") == 0 || strcmp(why->code, "manifest.io") == 0))
                code = "materialize.copy";
        return glove_error_set(err, why->errnum ? why->errnum : EIO, code, "%s: the %s: %s", m->alias, what,
                               why->message);
}

/* What the copy makes of a source entry's permission bits (tree_copy.c):
 * a file's & 0777, a directory's & 0777 with the owner's rwx. */
static uint32_t copied_mode(const struct glove_manifest_entry *e) {
        return e->type == GLOVE_MANIFEST_DIR ? (e->mode & 0777) | 0700 : e->mode & 0777;
}

/* The stage must be exactly the copy of the source manifest taken before
 * it: every directory, file and symbolic link with its type, size, digest
 * and copied mode, nothing else (FIFOs, sockets and devices are not
 * copied). Anything else means the source changed while it was copied:
 * the baseline would not be what the agent started from. */
int sv_stage_check_copy(const struct sv_mount *m, const struct glove_manifest *src,
                        const struct glove_manifest *stage, struct glove_error *err) {
        size_t k = 0;
        for (size_t i = 0; i < src->n; i++) {
                const struct glove_manifest_entry *a = &src->v[i];
                if (a->type != GLOVE_MANIFEST_DIR && a->type != GLOVE_MANIFEST_FILE && a->type != GLOVE_MANIFEST_SYMLINK)
                        continue;
                const struct glove_manifest_entry *b = k < stage->n ? &stage->v[k] : NULL;
                if (!b || strcmp(a->path, b->path) != 0 || a->type != b->type || a->size != b->size ||
                    strcmp(a->sha256, b->sha256) != 0 || (a->type != GLOVE_MANIFEST_SYMLINK && copied_mode(a) != (b->mode & 0777)))
                        return glove_error_set(err, ESTALE, "materialize.changed",
                                               "%s: %s changed while the stage was copied from the source; start the "
                                               "session again when nothing else writes to the source",
                                               m->alias, b && glove_manifest_path_cmp(b->path, a->path) < 0 ? b->path : a->path);
                k++;
        }
        if (k < stage->n)
                return glove_error_set(err, ESTALE, "materialize.changed",
                                       "%s: %s appeared while the stage was copied from the source; start the session "
                                       "again when nothing else writes to the source",
                                       m->alias, stage->v[k].path);
        return 0;
}

/* The ephemeral copy runs in the sandbox, where the agent's ids reach only
 * what their permission bits grant (capabilities do not cover files of an
 * unmapped owner); the retained copy runs in gloved, as root. So that it
 * copies nothing more, every directory must be readable and searchable and
 * every file readable by uid:gid through its owner, group or other bits. */
static int check_readable(const struct sv_mount *m, const struct glove_manifest *src, uid_t uid, gid_t gid,
                          struct glove_error *err) {
        for (size_t i = 0; i < src->n; i++) {
                const struct glove_manifest_entry *e = &src->v[i];
                if (e->type != GLOVE_MANIFEST_DIR && e->type != GLOVE_MANIFEST_FILE)
                        continue;
                unsigned shift = e->uid == uid ? 6 : e->gid == gid ? 3 : 0;
                unsigned need = e->type == GLOVE_MANIFEST_DIR ? 5 : 4; /* r-x, r-- */
                if (((e->mode >> shift) & need) != need)
                        return glove_error_set(err, EACCES, "materialize.copy",
                                               "%s: %s: the service user (uid %u) may not read it (owner uid %u, mode "
                                               "%04o): a copy takes only what the agent's ids could read",
                                               m->alias, e->path, (unsigned)uid, (unsigned)e->uid, (unsigned)e->mode);
        }
        return 0;
}

int sv_stage_source_manifest(const struct glove_supervisor_runtime_config *cfg, const struct sv_mount *m,
                             const struct sv_stage_source *s, struct glove_manifest **out, struct glove_error *err) {
        *out = NULL;
        if (s->fd < 0)
                return 0;
        _cleanup_close_ int dir = openat(s->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return glove_error_set(err, errno, "materialize.stage", "%s: the source cannot be opened: %s",
                                       m->alias, strerror(errno));
        struct glove_error why = { 0 };
        if (glove_manifest_build(dir, m->max_bytes, out, &why) < 0)
                return manifest_refusal(m, "source", &why, err);
        int r = check_readable(m, *out, cfg->agent_uid, cfg->agent_gid, err);
        if (r < 0) {
                glove_manifest_free(*out);
                *out = NULL;
        }
        return r;
}

int sv_stage_fill(const struct glove_supervisor_runtime_config *cfg, const char *session_id, struct sv_mount *m,
                  const struct sv_stage_source *s, struct glove_manifest *src_manifest, struct glove_error *err) {
        _cleanup_close_ int img = openat(m->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (img < 0)
                return glove_error_set(err, errno, "materialize.mount", "%s: the mounted image cannot be opened: %s",
                                       m->alias, strerror(errno));
        /* mkfs's lost+found is not the project's: the stage starts as the
         * source exactly (e2fsck makes it again should it ever need it). */
        if (unlinkat(img, "lost+found", AT_REMOVEDIR) < 0 && errno != ENOENT)
                return glove_error_set(err, errno, "materialize.stage", "%s: the image's lost+found: %s", m->alias,
                                       strerror(errno));
        json_t *source = NULL;
        struct stat st;
        if (s->fd >= 0) {
                _cleanup_close_ int src = openat(s->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (src < 0 || fstat(src, &st) < 0)
                        return glove_error_set(err, errno, "materialize.stage", "%s: the source cannot be opened: %s",
                                               m->alias, strerror(errno));
                int r = glove_tree_copy_dir(src, img, m->alias, m->max_bytes, cfg->agent_uid, cfg->agent_gid, false, err);
                if (r < 0)
                        return r;
                /* The stage's root takes the source root's permission bits
                 * (the owner keeps rwx: the agent works in it). */
                if (fchmod(img, (st.st_mode & 0777) | 0700) < 0)
                        return glove_error_set(err, errno, "materialize.stage", "%s: chmod: %s", m->alias,
                                               strerror(errno));
                source = source_json(cfg, m, s, &st, err);
                if (!source)
                        return err && err->code ? -(err->errnum ? err->errnum : EIO)
                                                : glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        }
        _cleanup_json_ json_t *source_ref = source;
        if (syncfs(img) < 0)
                return glove_error_set(err, errno, "materialize.stage", "%s: syncing the stage: %s", m->alias,
                                       strerror(errno));
        _cleanup_manifest_ struct glove_manifest *stage = NULL;
        struct glove_error why = { 0 };
        if (glove_manifest_build(img, 0, &stage, &why) < 0)
                return manifest_refusal(m, "stage", &why, err);
        int r = src_manifest ? sv_stage_check_copy(m, src_manifest, stage, err) : 0;
        if (r < 0)
                return r;
        r = write_baseline(cfg, session_id, m, source, src_manifest, stage, err);
        if (r < 0)
                return r;
        snprintf(m->stage_digest, sizeof(m->stage_digest), "%s", stage->digest);
        snprintf(m->source_digest, sizeof(m->source_digest), "%s", src_manifest ? src_manifest->digest : "");
        m->stage_entries = stage->n;
        m->stage_bytes = stage->file_bytes;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A retained grant's frozen stage opened for reading
 * (include/glove/supervisor/stage.h; issue 30; docs/retained-changes.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/supervisor/stage.h"
#include "image.h"
#include "glove/supervisor/prepare.h"
#include "internal.h"
#include "prepare_internal.h"

#define BASELINE_MAX (64u << 20)

void glove_supervisor_stage_close(struct glove_supervisor_stage *s) {
        if (!s)
                return;
        json_decref(s->baseline);
        glove_manifest_free(s->at_start);
        glove_manifest_free(s->source);
        if (s->fd >= 0)
                close(s->fd);
        free(s);
}

static int bad_baseline(struct glove_error *err, const char *grant, const char *what) {
        return glove_error_set(err, EINVAL, "retained.baseline_invalid",
                               "%s: the stage's baseline file %s; the stage cannot be inspected or applied", grant, what);
}

/* Reads images/SESSION/GRANT.baseline.json into s. */
static int read_baseline(int root_fd, const char *session, const char *grant, struct glove_supervisor_stage *s,
                         struct glove_error *err) {
        char rel[PATH_MAX];
        if (snprintf(rel, sizeof(rel), "images/%s/%s.baseline.json", session, grant) >= (int)sizeof(rel))
                return glove_error_set(err, ENAMETOOLONG, "retained.no_stage", "%s: name too long", grant);
        _cleanup_close_ int fd = -1;
        int r = glove_fd_open_beneath(root_fd, rel, O_RDONLY, &fd, NULL);
        if (r == -ENOENT)
                return glove_error_set(err, ENOENT, "retained.no_stage",
                                       "%s: session %s has no retained stage with a baseline (never made, made before "
                                       "stages were copies, or cleaned up)",
                                       grant, session);
        if (r < 0)
                return glove_error_set(err, -r, "retained.no_stage", "%s: the baseline cannot be opened: %s", grant,
                                       strerror(-r));
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid() ||
            (st.st_mode & 077) || (uint64_t)st.st_size > BASELINE_MAX)
                return bad_baseline(err, grant, "is not a regular, single-link, owner-only file of the service user");
        _cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
        if (!buf)
                return glove_error_set(err, ENOMEM, "retained.no_memory", "out of memory");
        size_t got = 0;
        while (got < (size_t)st.st_size) {
                ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
                if (n <= 0)
                        return bad_baseline(err, grant, "cannot be read");
                got += (size_t)n;
        }
        if (glove_json_decode_canonical(buf, got, BASELINE_MAX, 0, &s->baseline, NULL) < 0 ||
            !json_is_object(s->baseline))
                return bad_baseline(err, grant, "is not canonical JSON");
        const json_t *b = s->baseline;
        const char *schema = json_string_value(json_object_get(b, "schema"));
        const char *sid = json_string_value(json_object_get(b, "session_id"));
        const char *g = json_string_value(json_object_get(b, "grant"));
        const json_t *img = json_object_get(b, "image");
        const json_t *src = json_object_get(b, "source");
        if (!schema || strcmp(schema, "glove.retained-baseline.v1") != 0 || !sid || strcmp(sid, session) != 0 || !g ||
            strcmp(g, grant) != 0 || !json_is_integer(json_object_get(img, "ino")) ||
            !json_is_integer(json_object_get(img, "size")) || !(json_is_null(src) || json_is_object(src)))
                return bad_baseline(err, grant, "does not name this session and grant");
        s->image_ino = (uint64_t)json_integer_value(json_object_get(img, "ino"));
        s->image_size = (uint64_t)json_integer_value(json_object_get(img, "size"));
        struct glove_error why = { 0 };
        if (glove_manifest_from_json(json_object_get(b, "stage_manifest"), &s->at_start, &why) < 0)
                return bad_baseline(err, grant, "holds an invalid stage manifest");
        const json_t *sm = json_object_get(b, "source_manifest");
        if (json_is_null(src) != json_is_null(sm))
                return bad_baseline(err, grant, "has a source without its manifest, or the reverse");
        if (!json_is_null(sm) && glove_manifest_from_json(sm, &s->source, &why) < 0)
                return bad_baseline(err, grant, "holds an invalid source manifest");
        return 0;
}

/* Refuses an image the session still has mounted writable at
 * mounts/SESSION/GRANT (a frozen, read-only mount there is fine). */
static int check_not_in_use(int root_fd, const char *session, const char *grant, struct glove_error *err) {
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "mounts/%s/%s", session, grant);
        _cleanup_close_ int fd = -1;
        if (glove_fd_open_beneath(root_fd, rel, O_PATH | O_DIRECTORY, &fd, NULL) < 0)
                return 0;
        struct statx stx;
        struct statvfs sv;
        if (statx(fd, "", AT_EMPTY_PATH, 0, &stx) == 0 && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
            (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) && fstatvfs(fd, &sv) == 0 && !(sv.f_flag & ST_RDONLY))
                return glove_error_set(err, EBUSY, "retained.in_use",
                                       "%s: session %s still has its stage mounted writable (is it running? stop it "
                                       "first)",
                                       grant, session);
        return 0;
}

/* How long an inspection or apply waits for the session's own file
 * system of the image to go (ms), and how often it looks. */
#define LIVE_WAIT_MS 3000
#define LIVE_POLL_MS 50

/* Refuses an image that a writable loop device still backs: the
 * session's file system, unmounted lazily, lives on until its last
 * reference goes and its data are written back, and until then a
 * read-only mount of the file would read the image as it was (with
 * noload, even without the journal's last transactions). Waits up to
 * LIVE_WAIT_MS for it to go. */
static int wait_not_live(const struct stat *image, const char *grant, struct glove_error *err) {
        for (int waited = 0;; waited += LIVE_POLL_MS) {
                bool live = false;
                int r = sv_loop_bound_writable((uint64_t)image->st_dev, (uint64_t)image->st_ino, &live, err);
                if (r < 0)
                        return r;
                if (!live)
                        return 0;
                if (waited >= LIVE_WAIT_MS)
                        return glove_error_set(err, EBUSY, "retained.in_use",
                                               "%s: the session's file system of the image is still live (a "
                                               "writable loop device backs it; it is being written back or "
                                               "something still holds it): try again in a moment",
                                               grant);
                struct timespec ts = { .tv_nsec = LIVE_POLL_MS * 1000000L };
                nanosleep(&ts, NULL);
        }
}

/* The detached read-only mount of the image open as image. */
static int mount_detached(int image, const char *grant, int *out, struct glove_error *err) {
        struct sv_image img = { 0 };
        _cleanup_close_ int loop = -1, fs = -1, mnt = -1;
        int r = sv_loop_attach_flags(image, grant, LO_FLAGS_READ_ONLY, &loop, &img, err);
        if (r < 0)
                return r;
        char dev[40];
        snprintf(dev, sizeof(dev), "/proc/self/fd/%d", loop);
        fs = fsopen("ext4", FSOPEN_CLOEXEC);
        if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "source", dev, 0) < 0 ||
            fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0) < 0 || fsconfig(fs, FSCONFIG_SET_FLAG, "noload", NULL, 0) < 0 ||
            fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
            (mnt = fsmount(fs, FSMOUNT_CLOEXEC,
                           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) < 0)
                return glove_error_set(err, errno, "retained.mount", "%s: mounting the image read-only (%s): %s", grant,
                                       img.loop_device, strerror(errno));
        struct stat st;
        int root = openat(mnt, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0 || fstat(root, &st) < 0 || st.st_dev != (dev_t)img.loop_rdev) {
                if (root >= 0)
                        close(root);
                return glove_error_set(err, EIO, "retained.mount", "%s: the mounted image is not the loop device %s",
                                       grant, img.loop_device);
        }
        *out = root; /* holds the mount; the loop device goes with it (autoclear) */
        return 0;
}

int glove_supervisor_stage_open(int root_fd, const char *session, const char *grant, bool mount,
                                struct glove_supervisor_stage **out, struct glove_error *err) {
        *out = NULL;
        if (root_fd < 0 || !session || !grant || !sv_identifier_valid(session) || !sv_identifier_valid(grant))
                return glove_error_set(err, EINVAL, "retained.no_stage", "a session and a grant identifier are required");
        struct glove_supervisor_stage *s = calloc(1, sizeof(*s));
        if (!s)
                return glove_error_set(err, ENOMEM, "retained.no_memory", "out of memory");
        s->fd = -1;
        int r = read_baseline(root_fd, session, grant, s, err);
        if (r >= 0 && mount)
                r = check_not_in_use(root_fd, session, grant, err);
        if (r >= 0 && mount) {
                char rel[PATH_MAX];
                snprintf(rel, sizeof(rel), "images/%s/%s.ext4", session, grant);
                _cleanup_close_ int image = -1;
                struct stat st;
                r = glove_fd_open_beneath(root_fd, rel, O_RDONLY, &image, NULL);
                if (r < 0)
                        r = glove_error_set(err, -r, "retained.image_changed", "%s: the image is missing: %s", grant,
                                            strerror(-r));
                else if (fstat(image, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != s->image_ino ||
                         (uint64_t)st.st_size > s->image_size)
                        r = glove_error_set(err, EPERM, "retained.image_changed",
                                            "%s: the image is not the one recorded (inode or size differs)", grant);
                else if ((r = wait_not_live(&st, grant, err)) < 0)
                        ;
                else
                        r = mount_detached(image, grant, &s->fd, err);
        }
        if (r < 0) {
                glove_supervisor_stage_close(s);
                return r;
        }
        *out = s;
        return 0;
}

int glove_supervisor_stage_changes(const struct glove_supervisor_stage *s, struct glove_manifest **now,
                                   json_t **changes, struct glove_error *err) {
        *now = NULL;
        *changes = NULL;
        if (!s || s->fd < 0)
                return glove_error_set(err, EINVAL, "retained.no_stage", "the stage is not mounted");
        int r = glove_manifest_build(s->fd, s->image_size, now, err);
        if (r >= 0)
                r = glove_manifest_diff(s->at_start, *now, changes, err);
        if (r < 0) {
                glove_manifest_free(*now);
                *now = NULL;
        }
        return r;
}

/* Bytes of listed entries a retained_changes result carries in all, so
 * that it fits a control frame (1 MiB) whatever the paths. */
#define CHANGES_LIST_BUDGET (512u * 1024)

/* Adds "counts" (every list's full length) to changes and keeps, list by
 * list, only the entries that fit in what is left of *budget (their
 * compact JSON's bytes); "truncated" says whether any was left out.
 * What happened to the source's own entries comes first: removed,
 * modified and mode_changed are bounded by the source, while the agent
 * can add entries without bound, so additions can never push a change to
 * an existing file out of the listing. */
static int trim_changes(json_t *changes, size_t *budget) {
        static const char *const lists[] = { "removed", "modified", "mode_changed", "added" };
        json_t *counts = json_object();
        bool truncated = false;
        if (!counts || json_object_set_new(changes, "counts", counts) < 0)
                return -1;
        for (size_t k = 0; k < 4; k++) {
                json_t *a = json_object_get(changes, lists[k]);
                size_t n = json_array_size(a), keep = 0;
                if (json_object_set_new(counts, lists[k], json_integer((json_int_t)n)) < 0)
                        return -1;
                for (; keep < n; keep++) {
                        size_t len = json_dumpb(json_array_get(a, keep), NULL, 0, JSON_COMPACT) + 1;
                        if (len > *budget)
                                break;
                        *budget -= len;
                }
                if (keep < n) {
                        truncated = true;
                        *budget = 0; /* later lists list nothing: the order stays meaningful */
                        while (json_array_size(a) > keep)
                                json_array_remove(a, json_array_size(a) - 1);
                }
        }
        return json_object_set_new(changes, "truncated", json_boolean(truncated)) < 0 ? -1 : 0;
}

int glove_supervisor_retained_changes(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                      const char *plan, size_t plan_len, json_t **result, struct glove_error *err) {
        *result = NULL;
        _cleanup_json_ json_t *root = NULL;
        if (!cfg || cfg->materialization_root_fd < 0 ||
            glove_json_decode_canonical(plan, plan_len, GLOVE_PLAN_MAX_BYTES, 0, &root, NULL) < 0 ||
            !json_is_array(json_object_get(root, "path_grants")))
                return sv_bad_plan(err, "not a canonical JSON object with path_grants");
        _cleanup_json_ json_t *list = json_array();
        if (!list)
                return glove_error_set(err, ENOMEM, "retained.no_memory", "out of memory");
        const json_t *grants = json_object_get(root, "path_grants");
        /* Each retained grant gets its share of the budget: one grant's
         * thousands of changes never hide another's few. */
        size_t n_retained = 0;
        for (size_t i = 0; i < json_array_size(grants); i++) {
                struct sv_grant g;
                if (sv_decode_grant(json_array_get(grants, i), &g, NULL) == 0 && g.access == SV_ACCESS_RETAINED_WRITE)
                        n_retained++;
        }
        const size_t share = CHANGES_LIST_BUDGET / (n_retained ? n_retained : 1);
        for (size_t i = 0; i < json_array_size(grants); i++) {
                struct sv_grant g;
                int r = sv_decode_grant(json_array_get(grants, i), &g, err);
                if (r < 0)
                        return r;
                if (g.access != SV_ACCESS_RETAINED_WRITE)
                        continue;
                struct glove_supervisor_stage *s = NULL;
                struct glove_error e = { 0 };
                size_t budget;
                json_t *item = NULL;
                struct glove_manifest *now = NULL;
                json_t *changes = NULL;
                if (glove_supervisor_stage_open(cfg->materialization_root_fd, session_id, g.name, true, &s, &e) < 0 ||
                    glove_supervisor_stage_changes(s, &now, &changes, &e) < 0)
                        item = json_pack("{s:s,s:{s:s,s:s}}", "grant", g.name, "error", "code",
                                         e.code ? e.code : "retained.failed", "message", e.message);
                else if ((budget = share, trim_changes(changes, &budget)) < 0)
                        json_decref(changes), item = NULL;
                else {
                        /* What glove apply would refuse in this stage, said
                         * now rather than discovered at apply. */
                        struct glove_error ce = { 0 };
                        json_t *check = glove_manifest_check_apply(now, now->v[0].uid, &ce) < 0 ||
                                                        glove_manifest_check_carried(s->source, geteuid(), getegid(),
                                                                                     &ce) < 0
                                                ? json_pack("{s:s,s:s}", "code", ce.code, "message", ce.message)
                                                : json_null();
                        item = json_pack("{s:s,s:{s:s?,s:s},s:s,s:o,s:o}", "grant", g.name, "baseline",
                                         "source_manifest_digest", s->source ? s->source->digest : NULL,
                                         "stage_manifest_digest", s->at_start->digest, "stage_manifest_digest",
                                         now->digest, "changes", changes, "apply_refusal", check);
                }
                glove_manifest_free(now);
                glove_supervisor_stage_close(s);
                if (!item || json_array_append_new(list, item) < 0)
                        return glove_error_set(err, ENOMEM, "retained.no_memory", "out of memory");
        }
        *result = json_pack("{s:s,s:O}", "session_id", session_id, "grants", list);
        return *result ? 0 : glove_error_set(err, ENOMEM, "retained.no_memory", "out of memory");
}

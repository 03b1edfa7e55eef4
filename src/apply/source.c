/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The source side of an apply (include/glove/apply/apply.h): reopening the
 * recorded source's parent by descriptor, the entry identities recovery
 * classifies by, the stale-baseline check and the space check.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "apply_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"

static int64_t jint(const json_t *o, const char *k) {
        return json_integer_value(json_object_get(o, k));
}

int ap_open_parent(const struct glove_apply_context *c, const json_t *source, struct ap_parent *out,
                   struct glove_error *err) {
        *out = (struct ap_parent){ .fd = -1 };
        const char *kind = json_string_value(json_object_get(source, "kind"));
        if (kind && strcmp(kind, "alias") == 0) {
                const char *path = json_string_value(json_object_get(source, "path"));
                const char *name = json_string_value(json_object_get(source, "name"));
                const json_t *parent = json_object_get(source, "parent");
                if (!path || !name || !json_is_object(parent) || strlen(name) >= sizeof(out->name))
                        return glove_error_set(err, EINVAL, "apply.source_missing", "the recorded source is incomplete");
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", path);
                char *slash = strrchr(dir, '/');
                if (!slash)
                        return glove_error_set(err, EINVAL, "apply.source_missing", "the recorded source is incomplete");
                if (slash == dir)
                        slash[1] = '\0';
                else
                        *slash = '\0';
                int r = glove_fd_open_nofollow(dir, O_PATH | O_DIRECTORY, &out->fd, NULL);
                struct stat st;
                if (r < 0)
                        return glove_error_set(err, -r, "apply.source_missing",
                                               "the source's parent directory cannot be opened: %s", strerror(-r));
                if (fstat(out->fd, &st) < 0 || (int64_t)st.st_dev != jint(parent, "dev") ||
                    (int64_t)st.st_ino != jint(parent, "ino")) {
                        close(out->fd);
                        out->fd = -1;
                        return glove_error_set(err, ESTALE, "apply.stale_baseline",
                                               "the source's parent directory was replaced since the stage was taken");
                }
                snprintf(out->name, sizeof(out->name), "%s", name);
                return 0;
        }
        if (kind && strcmp(kind, "exposure") == 0) {
                if (!c->exposures)
                        return glove_error_set(err, EOPNOTSUPP, "apply.exposures_unavailable",
                                               "the grant is a path exposure and no exposure registry was opened "
                                               "(give --path-exposure-policy and --path-exposure-journal)");
                struct glove_exposure_parent p = { .parent_fd = -1 };
                int r = glove_exposures_recover_parent(
                        c->exposures, json_string_value(json_object_get(source, "exposure_id")),
                        jint(source, "generation"), json_string_value(json_object_get(source, "scope_digest")),
                        json_string_value(json_object_get(source, "source_identity_digest")), &p, err);
                if (r < 0)
                        return r;
                out->fd = p.parent_fd;
                snprintf(out->name, sizeof(out->name), "%s", p.name);
                return 0;
        }
        return glove_error_set(err, EINVAL, "apply.no_source", "the stage started empty: there is no source to apply to");
}

void ap_parent_close(struct ap_parent *p) {
        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
}

bool ap_entry(int parent_fd, const char *name, uint64_t *dev, uint64_t *ino) {
        struct stat st;
        if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                return false;
        *dev = (uint64_t)st.st_dev;
        *ino = (uint64_t)st.st_ino;
        return true;
}

int ap_check_baseline(const struct ap_parent *p, const json_t *source, const struct glove_manifest *recorded,
                      struct glove_error *err) {
        uint64_t dev, ino;
        if (!ap_entry(p->fd, p->name, &dev, &ino))
                return glove_error_set(err, ENOENT, "apply.source_missing", "the source directory is gone");
        if ((int64_t)dev != jint(source, "dev") || (int64_t)ino != jint(source, "ino"))
                return glove_error_set(err, ESTALE, "apply.stale_baseline",
                                       "the source directory was replaced since the stage was taken (another inode)");
        _cleanup_close_ int fd = openat(p->fd, p->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_ino != ino || (uint64_t)st.st_dev != dev)
                return glove_error_set(err, ESTALE, "apply.stale_baseline", "the source directory changed while it was opened");
        _cleanup_(glove_manifest_freep) struct glove_manifest *now = NULL;
        struct glove_error why = { 0 };
        /* Bounded by what was recorded: more is a change anyway. */
        if (glove_manifest_build(fd, recorded->file_bytes + 1, &now, &why) < 0) {
                if (why.code && strcmp(why.code, "manifest.too_large") == 0)
                        return glove_error_set(err, ESTALE, "apply.stale_baseline",
                                               "the source grew since the stage was taken");
                return glove_error_set(err, why.errnum ? why.errnum : EIO, "apply.stale_baseline",
                                       "the source cannot be compared with its baseline: %s", why.message);
        }
        if (strcmp(now->digest, recorded->digest) != 0)
                return glove_error_set(err, ESTALE, "apply.stale_baseline",
                                       "the source changed since the stage was taken (manifest %.16s..., recorded "
                                       "%.16s...); its changes would be lost: start a new session from the current "
                                       "source",
                                       now->digest, recorded->digest);
        /* The digest leaves out owners, links and attributes: what an
         * exchange would lose of them is checked on the source as it is. */
        return glove_manifest_check_carried(now, geteuid(), getegid(), err);
}

int ap_check_space(int parent_fd, const struct glove_manifest *stage, struct glove_error *err) {
        struct statvfs sv;
        if (fstatvfs(parent_fd, &sv) < 0)
                return glove_error_set(err, errno, "apply.no_space", "the source's file system: %s", strerror(errno));
        /* The logical tree: every file's bytes and a block per entry. */
        unsigned long long need = stage->file_bytes + (unsigned long long)stage->n * 4096ULL +
                                  (unsigned long long)GLOVE_APPLY_SPACE_RESERVE_BYTES;
        unsigned long long avail = (unsigned long long)sv.f_bavail * (unsigned long long)sv.f_frsize;
        if (avail < need)
                return glove_error_set(err, ENOSPC, "apply.no_space",
                                       "the source's file system has %llu bytes available; the staged tree needs "
                                       "%llu (its files, a block per entry, and a 64 MiB reserve)",
                                       avail, need);
        return 0;
}

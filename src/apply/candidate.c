/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apply candidate (glove/apply/candidate.h; issue 30, spec
 * session-policy.md: the primitive "copies without following links,
 * recursively syncs the candidate"): the copy of a frozen stage beside the
 * source, and the removal of a tree without following anything.
 *
 * The copy is driven by the manifest, not by the stage's listing: every
 * directory and regular file of the manifest is opened beneath the stage by
 * its relative path (openat2, nothing followed, no mount crossed) and must
 * still be of the recorded type and size; a name the stage holds beyond the
 * manifest is not copied, as it is not part of what was inspected. What
 * was read is then proved by the candidate's own manifest, compared with
 * the stage's entry by entry (contents by their digests).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/apply/candidate.h"
#include "glove/base/cleanup.h"
#include "glove/base/path.h"

/* Bytes copied at a time. */
#define COPY_CHUNK (128 * 1024)

static int open_beneath(int dirfd, const char *rel, int flags) {
        struct open_how how = {
                .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        for (int tries = 0;; tries++) {
                int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                /* EAGAIN: a rename raced the lookup; the kernel asks to retry. */
                if (errno != EAGAIN || tries >= 8)
                        return -errno;
        }
}

/* One path component: not empty, ".", "..", with no '/', at most NAME_MAX. */
static bool name_ok(const char *name) {
        return name && name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
               strlen(name) <= NAME_MAX;
}

/* fsync of a directory given by any descriptor, O_PATH included (which
 * cannot be synced itself: the directory is opened again to read). */
static int sync_dir(int fd) {
        if (fsync(fd) == 0)
                return 0;
        if (errno != EBADF)
                return -errno;
        _cleanup_close_ int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rfd < 0)
                return -errno;
        return fsync(rfd) < 0 ? -errno : 0;
}

/* ---- removal ---- */

struct rm {
        dev_t dev;                 /* the parent's file system */
        char path[GLOVE_PATH_MAX]; /* the current directory beneath the parent, for messages */
        size_t len;
        struct glove_error *err;
};

static int rm_fail(struct rm *r, int e, const char *name, const char *what) {
        if (e == EXDEV)
                return glove_error_set(r->err, EXDEV, "apply.remove",
                                       "%s/%s is a mount point (or on another file system); removal does not "
                                       "cross mounts",
                                       r->path, name);
        return glove_error_set(r->err, e, "apply.remove", "%s/%s: %s: %s", r->path, name, what, glove_errno_text(e));
}

static int rm_dir(struct rm *r, int dfd, unsigned depth);

/* Removes name of the directory dirfd (at level depth - 1), whatever it is. */
static int rm_entry(struct rm *r, int dirfd, const char *name, unsigned depth) {
        struct stat st, ost;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : rm_fail(r, errno, name, "stat");
        if (st.st_dev != r->dev)
                return rm_fail(r, EXDEV, name, "");
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? rm_fail(r, errno, name, "unlink") : 0;
        if (depth > GLOVE_MANIFEST_DEPTH_MAX + 1)
                return rm_fail(r, ELOOP, name, "more directory levels than a candidate has");
        int fd = open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return rm_fail(r, -fd, name, "open");
        if (fstat(fd, &ost) < 0 || ost.st_dev != st.st_dev || ost.st_ino != st.st_ino) {
                close(fd);
                return rm_fail(r, ESTALE, name, "replaced while it was removed");
        }
        size_t len = r->len, nl = strlen(name);
        if (len + 1 + nl >= sizeof(r->path)) {
                close(fd);
                return rm_fail(r, ENAMETOOLONG, name, "path");
        }
        r->path[len] = '/';
        memcpy(r->path + len + 1, name, nl + 1);
        r->len = len + 1 + nl;
        int ret = rm_dir(r, fd, depth);
        r->len = len;
        r->path[len] = '\0';
        if (ret < 0)
                return ret;
        return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? rm_fail(r, errno, name, "rmdir") : 0;
}

/* Empties the opened directory dfd (taken) at level depth. */
static int rm_dir(struct rm *r, int dfd, unsigned depth) {
        struct stat st;
        /* A directory without write or search permission for its owner
         * (the stage's modes are copied) is opened up before it is emptied;
         * EPERM (not the owner) is left to unlinkat to report. */
        if (fstat(dfd, &st) == 0 && (st.st_mode & 0700) != 0700)
                (void)fchmod(dfd, (st.st_mode & 07777) | 0700);
        DIR *d = fdopendir(dfd);
        if (!d) {
                int e = errno;
                close(dfd);
                return rm_fail(r, e, ".", "reading the directory");
        }
        int ret = 0;
        /* Passes until one finds nothing: a listing read while names are
         * removed may skip some. */
        for (bool found = true; found && ret == 0;) {
                found = false;
                rewinddir(d);
                for (;;) {
                        errno = 0;
                        struct dirent *de = readdir(d);
                        if (!de) {
                                if (errno)
                                        ret = rm_fail(r, errno, ".", "reading the directory");
                                break;
                        }
                        const char *n = de->d_name;
                        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
                                continue;
                        found = true;
                        if ((ret = rm_entry(r, dirfd(d), n, depth + 1)) < 0)
                                break;
                }
        }
        closedir(d);
        return ret;
}

int glove_apply_tree_remove(int parent_fd, const char *name, struct glove_error *err) {
        if (!name_ok(name))
                return glove_error_set(err, EINVAL, "apply.remove", "\"%s\" is not one path component",
                                       name ? name : "(null)");
        struct rm r = {.err = err};
        snprintf(r.path, sizeof(r.path), ".");
        r.len = 1;
        struct stat pst;
        if (fstat(parent_fd, &pst) < 0)
                return rm_fail(&r, errno, name, "stat of the parent");
        r.dev = pst.st_dev;
        int ret = rm_entry(&r, parent_fd, name, 1);
        if (ret < 0)
                return ret;
        if ((ret = sync_dir(parent_fd)) < 0)
                return rm_fail(&r, -ret, name, "fsync of the parent");
        return 0;
}

/* ---- the copy ---- */

struct copy {
        int stage, cand;
        const char *name; /* the candidate's name, for messages */
        uid_t uid;
        gid_t gid;
        uint8_t *buf;     /* COPY_CHUNK bytes */
        struct glove_error *err;
};

static int copy_fail(struct copy *c, int e, const char *path, const char *what) {
        if (e == ENOSPC || e == EDQUOT)
                return glove_error_set(c->err, e, "apply.no_space",
                                       "candidate %s: %s: %s: the source's file system is full (%s)", c->name, path,
                                       what, glove_errno_text(e));
        return glove_error_set(c->err, e, "apply.copy", "candidate %s: %s: %s: %s", c->name, path, what,
                               glove_errno_text(e));
}

static int mismatch(struct copy *c, const char *path, const char *what) {
        return glove_error_set(c->err, ESTALE, "apply.candidate_mismatch",
                               "candidate %s: the stage's %s %s since its manifest was built; nothing is applied",
                               c->name, path, what);
}

/* The owner of a new object: the caller's effective ids, set only when the
 * file system chose others (a set-group-ID parent, say). */
static int own(struct copy *c, int fd, const char *path) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return copy_fail(c, errno, path, "stat");
        if ((st.st_uid != c->uid || st.st_gid != c->gid) && fchown(fd, c->uid, c->gid) < 0)
                return copy_fail(c, errno, path, "chown");
        return 0;
}

/* Opens the directory of the candidate that holds e's path, and its last name. */
static int open_dest_parent(struct copy *c, const char *path, const char **base) {
        const char *slash = strrchr(path, '/');
        *base = slash ? slash + 1 : path;
        _cleanup_free_ char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
        if (!dir)
                return copy_fail(c, ENOMEM, path, "allocation");
        int fd = open_beneath(c->cand, dir, O_RDONLY | O_DIRECTORY);
        return fd < 0 ? copy_fail(c, -fd, dir, "open") : fd;
}

/* Opens e beneath the stage, to read, and checks its type and size. */
static int open_stage(struct copy *c, const struct glove_manifest_entry *e) {
        bool dir = e->type == GLOVE_MANIFEST_DIR;
        /* O_NONBLOCK: should the name have become a FIFO, the open does
         * not wait for a writer (and the type check refuses it). */
        int fd = open_beneath(c->stage, e->path, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK);
        if (fd < 0) {
                int x = -fd;
                if (x == ENOENT || x == ELOOP || x == ENOTDIR || x == EXDEV)
                        return mismatch(c, e->path, "was removed or replaced");
                return copy_fail(c, x, e->path, "open in the stage");
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int x = errno;
                close(fd);
                return copy_fail(c, x, e->path, "stat in the stage");
        }
        if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode) || (uint64_t)st.st_size != e->size) {
                close(fd);
                return mismatch(c, e->path, dir ? "is no longer a directory" : "changed type or size");
        }
        return fd;
}

/* Copies exactly size bytes of in to out: more or fewer is a mismatch. */
static int copy_data(struct copy *c, int in, int out, const struct glove_manifest_entry *e) {
        uint64_t done = 0;
        for (;;) {
                ssize_t k = read(in, c->buf, COPY_CHUNK);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return copy_fail(c, errno, e->path, "read");
                if (k == 0)
                        break;
                if ((done += (uint64_t)k) > e->size)
                        return mismatch(c, e->path, "grew");
                for (ssize_t off = 0; off < k;) {
                        ssize_t w = write(out, c->buf + off, (size_t)(k - off));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return copy_fail(c, errno, e->path, "write");
                        off += w;
                }
        }
        return done == e->size ? 0 : mismatch(c, e->path, "shrank");
}

static int copy_file(struct copy *c, int dparent, const char *base, const struct glove_manifest_entry *e) {
        _cleanup_close_ int in = open_stage(c, e);
        if (in < 0)
                return in;
        _cleanup_close_ int out = openat(dparent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return copy_fail(c, errno, e->path, "create");
        int r = copy_data(c, in, out, e);
        if (r == 0)
                r = own(c, out, e->path);
        if (r == 0 && fchmod(out, e->mode & 0777) < 0)
                r = copy_fail(c, errno, e->path, "chmod");
        if (r == 0 && fsync(out) < 0)
                r = copy_fail(c, errno, e->path, "fsync");
        int fd = TAKE_FD(out);
        if (close(fd) < 0 && r == 0)
                r = copy_fail(c, errno, e->path, "close");
        return r;
}

static int copy_dir(struct copy *c, int dparent, const char *base, const struct glove_manifest_entry *e) {
        _cleanup_close_ int in = open_stage(c, e);
        if (in < 0)
                return in;
        if (mkdirat(dparent, base, 0700) < 0)
                return copy_fail(c, errno, e->path, "mkdir");
        _cleanup_close_ int fd = openat(dparent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return copy_fail(c, errno, e->path, "open");
        /* 0700 while it is filled (a umask may have taken bits); the mode
         * of the manifest is set once its children are in. */
        if (fchmod(fd, 0700) < 0)
                return copy_fail(c, errno, e->path, "chmod");
        return own(c, fd, e->path);
}

/* Directories bottom-up (the manifest is sorted, so every child comes
 * after its parent): owner, mode, fsync; the root last, with root_mode. */
static int finish_dirs(struct copy *c, const struct glove_manifest *m, mode_t root_mode) {
        for (size_t i = m->n; i-- > 0;) {
                const struct glove_manifest_entry *e = &m->v[i];
                if (e->type != GLOVE_MANIFEST_DIR)
                        continue;
                _cleanup_close_ int fd = open_beneath(c->cand, e->path, O_RDONLY | O_DIRECTORY);
                if (fd < 0)
                        return copy_fail(c, -fd, e->path, "open");
                int r = own(c, fd, e->path);
                if (r < 0)
                        return r;
                mode_t mode = i == 0 ? (root_mode & 0777) : (e->mode & 0777);
                if (fchmod(fd, mode) < 0)
                        return copy_fail(c, errno, e->path, "chmod");
                if (fsync(fd) < 0)
                        return copy_fail(c, errno, e->path, "fsync");
        }
        return 0;
}

/* The candidate's manifest against m, entry by entry. */
static int verify(struct copy *c, const struct glove_manifest *m, mode_t root_mode) {
        struct glove_manifest *cm = NULL;
        struct glove_error local = {0};
        int r = glove_manifest_build(c->cand, 0, &cm, &local);
        if (r < 0)
                return glove_error_set(c->err, -r, "apply.copy",
                                       "candidate %s: building its manifest: %s: %s", c->name,
                                       local.code ? local.code : "", local.message);
        if (cm->n != m->n)
                r = mismatch(c, ".", "gained or lost entries");
        for (size_t i = 0; r == 0 && i < m->n; i++) {
                const struct glove_manifest_entry *a = &m->v[i], *b = &cm->v[i];
                uint32_t mode = i == 0 ? (uint32_t)(root_mode & 0777) : a->mode;
                if (strcmp(a->path, b->path) != 0 || a->type != b->type)
                        r = mismatch(c, a->path, "was removed or replaced");
                else if (a->size != b->size || strcmp(a->sha256, b->sha256) != 0)
                        r = mismatch(c, a->path, "changed contents");
                else if (mode != b->mode)
                        r = mismatch(c, a->path, "changed mode");
        }
        glove_manifest_free(cm);
        return r;
}

static int copy_entries(struct copy *c, const struct glove_manifest *m, mode_t root_mode) {
        if (m->n == 0 || strcmp(m->v[0].path, ".") != 0 || m->v[0].type != GLOVE_MANIFEST_DIR)
                return glove_error_set(c->err, EINVAL, "apply.copy", "candidate %s: the manifest has no root",
                                       c->name);
        /* The stage's root must still be a directory (O_PATH allowed). */
        _cleanup_close_ int root = open_stage(c, &m->v[0]);
        if (root < 0)
                return root;
        for (size_t i = 1; i < m->n; i++) {
                const struct glove_manifest_entry *e = &m->v[i];
                if (e->type != GLOVE_MANIFEST_DIR && e->type != GLOVE_MANIFEST_FILE)
                        return glove_error_set(c->err, EINVAL, "apply.copy",
                                               "candidate %s: %s is neither a file nor a directory; the manifest "
                                               "did not pass the apply checks",
                                               c->name, e->path);
                const char *base = NULL;
                _cleanup_close_ int dparent = open_dest_parent(c, e->path, &base);
                if (dparent < 0)
                        return dparent;
                int r = e->type == GLOVE_MANIFEST_DIR ? copy_dir(c, dparent, base, e) : copy_file(c, dparent, base, e);
                if (r < 0)
                        return r;
        }
        int r = finish_dirs(c, m, root_mode);
        if (r < 0)
                return r;
        return verify(c, m, root_mode);
}

int glove_apply_candidate_copy(int stage_fd, const struct glove_manifest *m, int parent_fd, const char *name,
                               mode_t root_mode, struct glove_error *err) {
        if (!m || !name_ok(name))
                return glove_error_set(err, EINVAL, "apply.copy", "candidate \"%s\": not one path component%s",
                                       name ? name : "(null)", m ? "" : ", or no manifest");
        struct copy c = {.stage = stage_fd, .name = name, .uid = geteuid(), .gid = getegid(), .err = err};
        if (mkdirat(parent_fd, name, 0700) < 0) {
                if (errno == EEXIST)
                        return glove_error_set(err, EEXIST, "apply.candidate_exists",
                                               "candidate %s already exists beside the source; discard it first",
                                               name);
                return copy_fail(&c, errno, ".", "mkdir");
        }
        int r = 0;
        c.cand = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (c.cand < 0)
                r = copy_fail(&c, errno, ".", "open");
        if (r == 0 && fchmod(c.cand, 0700) < 0)
                r = copy_fail(&c, errno, ".", "chmod");
        if (r == 0 && !(c.buf = malloc(COPY_CHUNK)))
                r = copy_fail(&c, ENOMEM, ".", "allocation");
        if (r == 0)
                r = copy_entries(&c, m, root_mode);
        free(c.buf);
        if (c.cand >= 0)
                close(c.cand);
        if (r == 0 && (r = sync_dir(parent_fd)) < 0)
                r = copy_fail(&c, -r, "..", "fsync of the parent");
        if (r < 0)
                (void)glove_apply_tree_remove(parent_fd, name, NULL);
        return r;
}

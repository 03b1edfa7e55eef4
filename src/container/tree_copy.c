/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The copy that fills a TREE entry's fresh tmpfs from a host directory
 * (include/glove/container/mount_plan.h, glove_mount_plan_add_tree). Runs in
 * the sandbox child before it reports ready, under the rules of
 * include/glove/container/sandbox.h: no allocation, no stdio, no directory
 * stream. Directories are read with getdents64 into one stack buffer; the
 * walk is iterative, with a fixed array of one state per level (two
 * descriptors, the position to resume reading at, the times to restore), so
 * its stack use does not grow with the tree. A directory's listing is
 * re-read from the saved position (lseek to the d_off cookie) after each
 * subdirectory, which keeps one buffer for all levels.
 *
 * Nothing is followed: every name is opened relative to its parent's
 * descriptor with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) (a mount point beneath the
 * source is refused, EXDEV), after fstatat(AT_SYMLINK_NOFOLLOW) chose what
 * to do with it, and what was opened is checked to be what was looked at.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/error.h"
#include "glove/base/path.h"
#include "glove/container/mount_plan.h"
#include "internal.h"

/* Bytes of the one getdents64 buffer. */
#define DENTS_BUF 4096
/* Bytes of the relative path kept for messages (longer ones are cut). */
#define REL_MAX 320

struct raw_dirent64 {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
};

struct level {
        int src, dst;                  /* the directory being copied and its copy */
        int64_t pos;                   /* where reading src resumes (a d_off cookie) */
        struct timespec times[2];      /* src's atime and mtime, set on dst when done */
        size_t rel_len;                /* length of rel for this directory */
};

struct walk {
        const char *label;
        uint64_t size;
        uid_t uid;
        gid_t gid;
        bool skip_links;               /* GLOVE_MOUNT_F_SKIP_LINKS: links are not recreated */
        char rel[REL_MAX];             /* the current entry's path relative to the source */
        size_t rel_len;
};

static int open_beneath(int dirfd, const char *name, int flags) {
        struct open_how how = {
                .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
}

/* Appends "/name" (or "name" at the top) to w->rel, cut when too long. */
static void rel_push(struct walk *w, const char *name) {
        size_t n = w->rel_len;
        if (n > 0 && n < sizeof(w->rel) - 1)
                w->rel[n++] = '/';
        size_t len = strlen(name);
        if (n + len >= sizeof(w->rel))
                len = n < sizeof(w->rel) - 1 ? sizeof(w->rel) - 1 - n : 0;
        memcpy(w->rel + n, name, len);
        n += len;
        w->rel[n] = '\0';
        w->rel_len = n;
}

static void rel_pop(struct walk *w, size_t len) {
        w->rel_len = len;
        w->rel[len] = '\0';
}

/* The failure of a step on the current entry: the tmpfs full, a mount
 * point, or anything else. */
static int report(struct walk *w, int e, const char *what, struct glove_error *err) {
        const char *rel = w->rel_len ? w->rel : ".";
        if (e == ENOSPC || e == EDQUOT)
                return glove_error_set(err, e, "materialize.quota_exceeded",
                                       "%s: %s does not fit in the %llu bytes of the copy (%s)", w->label, rel,
                                       (unsigned long long)w->size, glove_errno_text(e));
        if (e == EXDEV)
                return glove_error_set(err, e, "materialize.copy", "%s: %s is a mount point; a copy does not cross mounts",
                                       w->label, rel);
        return glove_error_set(err, e, "materialize.copy", "%s: %s: %s: %s", w->label, rel, what, glove_errno_text(e));
}

/* Owner, permission bits and times of a new file or directory. */
static int finish_node(struct walk *w, int fd, mode_t mode, const struct stat *st, bool times, struct glove_error *err) {
        if (fchown(fd, w->uid, w->gid) < 0)
                return report(w, errno, "chown", err);
        if (fchmod(fd, mode) < 0)
                return report(w, errno, "chmod", err);
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        if (times && futimens(fd, ts) < 0)
                return report(w, errno, "setting its times", err);
        return 0;
}

/* Copies the regular file name of sdir (looked at: st) into ddir. */
__attribute__((noinline)) static int copy_file(struct walk *w, int sdir, int ddir, const char *name, const struct stat *st,
                                               struct glove_error *err) {
        /* O_NONBLOCK: should name have become a FIFO since fstatat, the
         * open does not wait for a writer (and it is refused below). */
        int in = open_beneath(sdir, name, O_RDONLY | O_NONBLOCK);
        if (in < 0)
                return report(w, errno, "open", err);
        struct stat ist;
        if (fstat(in, &ist) < 0 || !S_ISREG(ist.st_mode) || ist.st_dev != st->st_dev || ist.st_ino != st->st_ino) {
                close(in);
                return report(w, ESTALE, "changed while it was copied", err);
        }
        int out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0) {
                int e = errno;
                close(in);
                return report(w, e, "create", err);
        }
        int r = glove_copy_fd(in, out, SIZE_MAX);
        close(in);
        if (r < 0)
                r = report(w, -r, "copy", err);
        if (r == 0)
                r = finish_node(w, out, ist.st_mode & 0777, &ist, true, err);
        /* A write may report ENOSPC only at close on some file systems; not
         * on tmpfs, but the close is checked all the same. */
        if (close(out) < 0 && r == 0)
                r = report(w, errno, "close", err);
        return r;
}

/* Recreates the symbolic link name of sdir in ddir with the same text. */
__attribute__((noinline)) static int copy_link(struct walk *w, int sdir, int ddir, const char *name, const struct stat *st,
                                               struct glove_error *err) {
        char target[GLOVE_PATH_MAX];
        ssize_t n = readlinkat(sdir, name, target, sizeof(target));
        if (n < 0)
                return report(w, errno, "readlink", err);
        if ((size_t)n >= sizeof(target))
                return report(w, ENAMETOOLONG, "readlink", err);
        target[n] = '\0';
        if (symlinkat(target, ddir, name) < 0)
                return report(w, errno, "symlink", err);
        if (fchownat(ddir, name, w->uid, w->gid, AT_SYMLINK_NOFOLLOW) < 0)
                return report(w, errno, "chown", err);
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        if (utimensat(ddir, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
                return report(w, errno, "setting its times", err);
        return 0;
}

/* Creates the copy of directory name of parent and opens both: *src, *dst. */
__attribute__((noinline)) static int open_dir_pair(struct walk *w, const struct level *parent, const char *name,
                                                   const struct stat *st, int *src, int *dst, struct glove_error *err) {
        *src = open_beneath(parent->src, name, O_RDONLY | O_DIRECTORY);
        if (*src < 0)
                return report(w, errno, "open", err);
        struct stat sst;
        if (fstat(*src, &sst) < 0 || sst.st_dev != st->st_dev || sst.st_ino != st->st_ino) {
                close(*src);
                return report(w, ESTALE, "changed while it was copied", err);
        }
        int r = 0;
        if (mkdirat(parent->dst, name, 0700) < 0)
                r = report(w, errno, "mkdir", err);
        if (r == 0 && (*dst = openat(parent->dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                r = report(w, errno, "open", err);
        if (r == 0 && (r = finish_node(w, *dst, (sst.st_mode & 0777) | 0700, &sst, false, err)) < 0)
                close(*dst);
        if (r < 0)
                close(*src);
        return r;
}

int glove_tree_copy(int src_root, int dst_root, const struct glove_mount_plan *plan, const struct glove_mount_entry *e,
                    struct glove_error *err) {
        const char *label = glove_mount_entry_label(plan, e);
        return glove_tree_copy_dir(src_root, dst_root, label ? label : "tree", e->size, e->uid, e->gid,
                                   (e->flags & GLOVE_MOUNT_F_SKIP_LINKS) != 0, err);
}

int glove_tree_copy_dir(int src_root, int dst_root, const char *label, uint64_t size, uid_t uid, gid_t gid,
                        bool skip_links, struct glove_error *err) {
        struct walk w = {
                .label = label,
                .size = size,
                .uid = uid,
                .gid = gid,
                .skip_links = skip_links,
        };
        struct level lv[GLOVE_MOUNT_TREE_DEPTH_MAX + 1];
        struct stat st;
        if (fstat(src_root, &st) < 0)
                return report(&w, errno, "stat", err);
        lv[0] = (struct level){.src = src_root, .dst = dst_root, .times = {st.st_atim, st.st_mtim}};
        char buf[DENTS_BUF] __attribute__((aligned(8)));
        int depth = 0, r = 0;
        while (depth >= 0 && r == 0) {
                struct level *l = &lv[depth];
                rel_pop(&w, l->rel_len);
                if (lseek(l->src, (off_t)l->pos, SEEK_SET) < 0) {
                        r = report(&w, errno, "seek", err);
                        break;
                }
                long n = syscall(SYS_getdents64, l->src, buf, sizeof(buf));
                if (n < 0) {
                        r = report(&w, errno, "reading the directory", err);
                        break;
                }
                if (n == 0) {
                        /* Done: the directory's times, now that nothing more
                         * is created in it. */
                        if (futimens(l->dst, l->times) < 0) {
                                r = report(&w, errno, "setting its times", err);
                                break;
                        }
                        if (depth > 0) {
                                close(l->src);
                                close(l->dst);
                        }
                        depth--;
                        continue;
                }
                for (long off = 0; off < n && r == 0;) {
                        const struct raw_dirent64 *d = (const struct raw_dirent64 *)(buf + off);
                        off += d->d_reclen;
                        l->pos = d->d_off;
                        const char *name = d->d_name;
                        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
                                continue;
                        rel_pop(&w, l->rel_len);
                        rel_push(&w, name);
                        if (fstatat(l->src, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                r = report(&w, errno, "stat", err);
                                break;
                        }
                        if (S_ISREG(st.st_mode)) {
                                r = copy_file(&w, l->src, l->dst, name, &st, err);
                        } else if (S_ISLNK(st.st_mode)) {
                                if (!w.skip_links)
                                        r = copy_link(&w, l->src, l->dst, name, &st, err);
                        } else if (S_ISDIR(st.st_mode)) {
                                if (depth >= GLOVE_MOUNT_TREE_DEPTH_MAX) {
                                        r = glove_error_set(err, ELOOP, "materialize.too_deep",
                                                            "%s: %s is more than %d directories deep", w.label, w.rel,
                                                            GLOVE_MOUNT_TREE_DEPTH_MAX);
                                        break;
                                }
                                struct level *next = &lv[depth + 1];
                                r = open_dir_pair(&w, l, name, &st, &next->src, &next->dst, err);
                                if (r < 0)
                                        break;
                                next->pos = 0;
                                next->times[0] = st.st_atim;
                                next->times[1] = st.st_mtim;
                                next->rel_len = w.rel_len;
                                depth++;
                                break; /* the parent's listing resumes at l->pos */
                        }
                        /* FIFOs, sockets, block and character devices (and
                         * links with skip_links): skipped. */
                }
        }
        for (; depth > 0; depth--) {
                close(lv[depth].src);
                close(lv[depth].dst);
        }
        return r;
}

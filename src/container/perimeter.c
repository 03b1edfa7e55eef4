/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mount perimeter, built inside the sandbox's new mount namespace by
 * executing the plan Glove built before the clone (include/glove/container/
 * mount_plan.h; issue "glove exec", Mount perimeter):
 *
 *   1. every mount source is cloned into a detached tree (open_tree with
 *      OPEN_TREE_CLONE) or opened while the host view is still reachable:
 *      BIND and COPY sources, grants re-opened without following links and
 *      checked against the identity pinned by Glove;
 *   2. a fresh tmpfs becomes the new root and the entries run in order:
 *      each destination is created beneath the new root without crossing a
 *      link, detached trees get their attributes (mount_setattr) and are
 *      attached with move_mount; fresh file systems are mounted, files and
 *      links written;
 *   3. pivot_root into it, the old root detached, the root and /dev made
 *      read-only, the mounts beneath the grants vetted.
 *
 * The child allocates nothing: the plan is the parent's memory, read only.
 * Descriptors opened here (detached trees, sources, directories) are all
 * O_CLOEXEC and are closed together by the child's close_range before it
 * reports ready; only writable files are closed at once (a mount with an
 * open writable file cannot be made read-only).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/error.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "glove/container/environment.h"
#include "glove/container/mount_plan.h"
#include "internal.h"

/* Where the new root is assembled before pivot_root. */
#define STAGING "/tmp"

static int sys_open_tree(int dfd, const char *path, unsigned flags) {
        return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags) {
        return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static int sys_mount_setattr(int dfd, const char *path, unsigned flags, uint64_t set) {
        struct mount_attr attr = {.attr_set = set};
        return (int)syscall(SYS_mount_setattr, dfd, path, flags, &attr, sizeof(attr));
}

/* Creates the missing directories of rel (relative, normalized) beneath
 * root without following links; the final component becomes a directory
 * (is_dir) or an empty file. Existing components are used as they are. */
static int make_mountpoint(int root, const char *rel, bool is_dir, struct glove_error *err) {
        char buf[GLOVE_PATH_MAX];
        snprintf(buf, sizeof(buf), "%s", rel);
        _cleanup_close_ int cur = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return glove_error_set(err, errno, "mount.mountpoint", "dup: %s", glove_errno_text(errno));
        char *p = buf;
        for (;;) {
                char *slash = strchr(p, '/');
                bool last = slash == NULL;
                if (slash)
                        *slash = '\0';
                int fd = openat(cur, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT) {
                        int r;
                        if (!last || is_dir)
                                r = mkdirat(cur, p, 0755);
                        else {
                                r = openat(cur, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                                if (r >= 0)
                                        r = close(r);
                        }
                        if (r < 0)
                                return glove_error_set(err, errno, "mount.mountpoint",
                                                       "cannot create the mount point /%s inside the sandbox: %s", rel, glove_errno_text(errno));
                        fd = openat(cur, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                }
                if (fd < 0)
                        return glove_error_set(err, errno, "mount.mountpoint", "/%s: %s", rel, glove_errno_text(errno));
                struct stat st;
                if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode) || (!last && !S_ISDIR(st.st_mode))) {
                        close(fd);
                        return glove_error_set(err, ELOOP, "mount.mountpoint",
                                               "mount point /%s crosses a symbolic link or non-directory inside the sandbox", rel);
                }
                close(cur);
                cur = fd;
                if (last)
                        return 0;
                p = slash + 1;
        }
}

int glove_copy_fd(int in, int out, size_t len) {
        size_t done = 0;
        bool use_sendfile = true;
        while (done < len) {
                ssize_t n;
                if (use_sendfile) {
                        n = sendfile(out, in, NULL, len - done);
                        if (n < 0 && (errno == EINVAL || errno == ENOSYS)) {
                                use_sendfile = false;
                                continue;
                        }
                } else {
                        char buf[8192];
                        size_t want = len - done < sizeof(buf) ? len - done : sizeof(buf);
                        n = read(in, buf, want);
                        if (n > 0 && glove_fd_write_all(out, buf, (size_t)n) < 0)
                                return -errno;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                done += (size_t)n;
        }
        return 0;
}


/* The executor's state: the staging root and the last parent directory
 * resolved beneath it (entries of one directory follow each other). A
 * mount at PARENT/NAME never covers PARENT itself, so the cached
 * descriptor stays the directory the next entry of PARENT means. */
struct exec_ctx {
        const struct glove_mount_plan *plan;
        int root;
        int parent_fd;                  /* -1: none cached */
        char parent[GLOVE_PATH_MAX];
        int mask_tree;                  /* a detached /dev/null not yet used by a MASK, or -1 */
        const char *mask_done;          /* dest of an attached MASK to clone from, or NULL */
};

static int sys_openat2_dir(int dirfd, const char *rel) {
        struct open_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
}

/* The directory holding dest (relative, normal) beneath the root, created
 * when missing (make_mountpoint's rules: no link, no non-directory on the
 * way); *last is dest's final component. Returns the descriptor (borrowed:
 * cached in c) or -errno with err set. */
static int parent_dir(struct exec_ctx *c, const char *dest, const char **last, struct glove_error *err) {
        const char *slash = strrchr(dest, '/');
        if (!slash) {
                *last = dest;
                return c->root;
        }
        *last = slash + 1;
        size_t n = (size_t)(slash - dest);
        if (c->parent_fd >= 0 && strlen(c->parent) == n && memcmp(c->parent, dest, n) == 0)
                return c->parent_fd;
        char rel[GLOVE_PATH_MAX];
        memcpy(rel, dest, n);
        rel[n] = '\0';
        int fd = sys_openat2_dir(c->root, rel);
        if (fd < 0) {
                /* Missing, a link, not a directory, or no openat2: the walk
                 * creates or refuses with the precise reason. */
                int r = make_mountpoint(c->root, rel, true, err);
                if (r < 0)
                        return r;
                r = glove_fd_open_beneath(c->root, rel, O_PATH | O_DIRECTORY, &fd, err);
                if (r < 0)
                        return r;
        }
        if (c->parent_fd >= 0)
                close(c->parent_fd);
        c->parent_fd = fd;
        memcpy(c->parent, rel, n + 1);
        return fd;
}

/* Creates the mount point dest (a directory or an empty file) and returns
 * the directory and name to mount on in *dirfd / *name, or, when dest
 * already existed, an O_PATH descriptor of it in *target (name NULL).
 * Never crosses a link. */
static int mountpoint(struct exec_ctx *c, const char *dest, bool is_dir, int *dirfd, const char **name, int *target,
                      struct glove_error *err) {
        *target = -1;
        int pfd = parent_dir(c, dest, name, err);
        if (pfd < 0)
                return pfd;
        *dirfd = pfd;
        int r = is_dir ? mkdirat(pfd, *name, 0755) : mknodat(pfd, *name, S_IFREG | 0644, 0);
        if (r == 0)
                return 0;
        if (errno != EEXIST)
                return glove_error_set(err, errno, "mount.mountpoint", "cannot create the mount point /%s inside the sandbox: %s",
                                       dest, glove_errno_text(errno));
        /* Already there (a directory of /usr, a nested grant's path in its
         * parent's bind): use it as it is unless it is a link. */
        int fd = openat(pfd, *name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
                return glove_error_set(err, errno, "mount.mountpoint", "/%s: %s", dest, glove_errno_text(errno));
        if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
                close(fd);
                return glove_error_set(err, ELOOP, "mount.mountpoint",
                                       "mount point /%s crosses a symbolic link or non-directory inside the sandbox", dest);
        }
        *target = fd;
        *name = NULL;
        return 0;
}

/* Gives the detached tree its attributes and attaches it at dest. */
static int attach(struct exec_ctx *c, int tree, const char *dest, bool is_dir, uint64_t attrs, struct glove_error *err) {
        int dirfd, target;
        const char *name;
        int r = mountpoint(c, dest, is_dir, &dirfd, &name, &target, err);
        if (r < 0)
                return r;
        _cleanup_close_ int t = target;
        if (attrs && sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, attrs) < 0)
                return glove_error_set(err, errno, "mount.setattr", "mount_setattr on /%s: %s", dest, glove_errno_text(errno));
        /* Without MOVE_MOUNT_T_SYMLINKS the final component (just created,
         * or checked above) is not followed. */
        r = name ? sys_move_mount(tree, "", dirfd, name, MOVE_MOUNT_F_EMPTY_PATH)
                 : sys_move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        if (r < 0)
                return glove_error_set(err, errno, "mount.attach", "move_mount to /%s: %s", dest, glove_errno_text(errno));
        return 0;
}

static unsigned long ms_flags(uint64_t attrs) {
        return ((attrs & MOUNT_ATTR_RDONLY) ? MS_RDONLY : 0) | ((attrs & MOUNT_ATTR_NOSUID) ? MS_NOSUID : 0) |
               ((attrs & MOUNT_ATTR_NODEV) ? MS_NODEV : 0) | ((attrs & MOUNT_ATTR_NOEXEC) ? MS_NOEXEC : 0);
}

static int mount_fresh(struct exec_ctx *c, const char *dest, const char *fstype, uint64_t attrs, const char *data,
                       struct glove_error *err) {
        int dirfd, target;
        const char *name;
        int r = mountpoint(c, dest, true, &dirfd, &name, &target, err);
        if (r < 0)
                return r;
        if (target >= 0)
                close(target);
        /* The path was just checked component by component; nothing else
         * runs in this mount namespace. */
        char path[GLOVE_PATH_MAX + 8];
        snprintf(path, sizeof(path), STAGING "/%s", dest);
        if (mount(fstype, path, fstype, ms_flags(attrs), data && *data ? data : NULL) < 0)
                return glove_error_set(err, errno, "mount.fresh", "mount %s on /%s: %s", fstype, dest, glove_errno_text(errno));
        return 0;
}

/* Re-opens a grant in this mount namespace and checks it is the object Glove
 * pinned; a swapped component fails here rather than redirecting a mount. */
static int clone_grant(const struct glove_mount_entry *e, const char *path, const char *shown, int *tree,
                       struct glove_error *err) {
        _cleanup_close_ int fd = -1;
        int r = glove_fd_open_nofollow(path, O_PATH, &fd, shown == path ? err : NULL);
        if (r < 0 && shown != path)
                return glove_error_set(err, -r, "grant.changed", "%s: %s", shown, glove_errno_text(-r));
        if (r < 0) {
                glove_error_prefix(err, "grant changed after it was checked");
                return r;
        }
        path = shown;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "grant.changed", "%s: %s", path, glove_errno_text(errno));
        if (st.st_dev != e->dev || st.st_ino != e->ino)
                return glove_error_set(err, ESTALE, "grant.changed",
                                       "%s was replaced between its check and its mount; refusing to mount it", path);
        /* Recursive: in the sandbox's user namespace the mounts beneath a
         * grant are locked to it, and the kernel refuses to copy the grant
         * without them. check_grant_submounts vets them once attached. */
        *tree = sys_open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        if (*tree < 0)
                return glove_error_set(err, errno, "mount.clone", "open_tree %s: %s", path, glove_errno_text(errno));
        return 0;
}

/* Re-opens a TREE's source directory like a grant (no link followed, the
 * identity pinned by Glove) and opens it for reading. */
static int open_tree_source(const struct glove_mount_entry *e, const char *path, const char *shown, int *dir,
                            struct glove_error *err) {
        _cleanup_close_ int fd = -1;
        int r = glove_fd_open_nofollow(path, O_PATH, &fd, shown == path ? err : NULL);
        if (r < 0 && shown != path)
                return glove_error_set(err, -r, "grant.changed", "%s: %s", shown, glove_errno_text(-r));
        if (r < 0) {
                glove_error_prefix(err, "copy source changed after it was checked");
                return r;
        }
        path = shown;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "grant.changed", "%s: %s", path, glove_errno_text(errno));
        if (st.st_dev != e->dev || st.st_ino != e->ino || !S_ISDIR(st.st_mode))
                return glove_error_set(err, ESTALE, "grant.changed",
                                       "%s was replaced between its check and its copy; refusing to copy it", path);
        *dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (*dir < 0)
                return glove_error_set(err, errno, "materialize.copy", "%s: %s", path, glove_errno_text(errno));
        return 0;
}

/* A TREE: its tmpfs, then the copy into it (src: the source directory, or
 * -1 for an empty tree). */
static int make_tree(struct exec_ctx *c, const struct glove_mount_entry *e, const char *dest, int src, struct glove_error *err) {
        int r = mount_fresh(c, dest, "tmpfs", e->attrs, glove_mount_plan_str(c->plan, e->options), err);
        if (r < 0 || src < 0)
                return r;
        _cleanup_close_ int top = -1;
        r = glove_fd_open_beneath(c->root, dest, O_RDONLY | O_DIRECTORY, &top, err);
        if (r < 0)
                return r;
        return glove_tree_copy(src, top, c->plan, e, err);
}

/* Phase 1: the sources, while the host is reachable. src[i] is entry i's
 * detached tree or open file, or -1 (none, or an optional source that is
 * absent). */
static int open_sources(const struct glove_mount_plan *plan, int *src, struct glove_error *err) {
        for (size_t i = 0; i < plan->count; i++) {
                const struct glove_mount_entry *e = &plan->entries[i];
                const char *path = glove_mount_plan_str(plan, e->source);
                /* A private source is named by its label, never its path. */
                const char *shown = (e->flags & GLOVE_MOUNT_F_PRIVATE) && e->name ? glove_mount_plan_str(plan, e->name)
                                                                                  : path;
                src[i] = -1;
                if (e->kind == GLOVE_MOUNT_BIND && (e->flags & GLOVE_MOUNT_F_GRANT)) {
                        int r = clone_grant(e, path, shown, &src[i], err);
                        if (r < 0)
                                return r;
                } else if (e->kind == GLOVE_MOUNT_BIND) {
                        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW |
                                         ((e->flags & GLOVE_MOUNT_F_DIR) ? AT_RECURSIVE : 0);
                        src[i] = sys_open_tree(AT_FDCWD, path, flags);
                        if (src[i] < 0 && !(errno == ENOENT && (e->flags & GLOVE_MOUNT_F_OPTIONAL)))
                                return glove_error_set(err, errno, "mount.clone", "open_tree %s: %s", path, glove_errno_text(errno));
                } else if (e->kind == GLOVE_MOUNT_TREE && e->source) {
                        int r = open_tree_source(e, path, shown, &src[i], err);
                        if (r < 0)
                                return r;
                } else if (e->kind == GLOVE_MOUNT_COPY) {
                        int r = glove_fd_open_nofollow(path, O_RDONLY, &src[i], err);
                        if (r == -ENOENT && (e->flags & GLOVE_MOUNT_F_OPTIONAL))
                                continue;
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int write_new(struct exec_ctx *c, const struct glove_mount_entry *e, const char *dest, int src, struct glove_error *err) {
        const char *name;
        int pfd = parent_dir(c, dest, &name, err);
        if (pfd < 0)
                return pfd;
        _cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, e->mode);
        if (fd < 0)
                return glove_error_set(err, errno, e->code, "cannot write /%s: %s", dest, glove_errno_text(errno));
        int r = src >= 0 ? glove_copy_fd(src, fd, e->size)
                         : glove_fd_write_all(fd, glove_mount_plan_str(c->plan, e->bytes), e->bytes_len);
        if (r < 0)
                return glove_error_set(err, -r, e->code, "cannot write /%s: %s", dest, glove_errno_text(-r));
        if ((e->flags & GLOVE_MOUNT_F_OWNED) && (fchown(fd, e->uid, e->gid) < 0 || fchmod(fd, e->mode) < 0))
                return glove_error_set(err, errno, e->code, "cannot own /%s: %s", dest, glove_errno_text(errno));
        return 0;
}

/* A DIR entry: a new directory owned by the agent (mode set through the
 * descriptor, whatever the umask). */
static int make_dir(struct exec_ctx *c, const struct glove_mount_entry *e, const char *dest, struct glove_error *err) {
        const char *name;
        int pfd = parent_dir(c, dest, &name, err);
        if (pfd < 0)
                return pfd;
        if (mkdirat(pfd, name, 0700) < 0)
                return glove_error_set(err, errno, e->code, "cannot create the directory /%s: %s", dest,
                                       glove_errno_text(errno));
        _cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fchown(fd, e->uid, e->gid) < 0 || fchmod(fd, e->mode) < 0)
                return glove_error_set(err, errno, e->code, "cannot own the directory /%s: %s", dest,
                                       glove_errno_text(errno));
        return 0;
}

/* Covers the existing file dest with the host's /dev/null, read-only and
 * nodev: the first from a clone of /dev/null, the others cloned from the
 * first (a clone keeps the attributes). */
static int mask(struct exec_ctx *c, const struct glove_mount_entry *e, const char *dest, struct glove_error *err) {
        const char *name;
        int pfd = parent_dir(c, dest, &name, err);
        if (pfd < 0)
                return pfd;
        int tree = c->mask_tree;
        if (tree < 0 && c->mask_done)
                tree = sys_open_tree(c->root, c->mask_done, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
        else if (tree < 0) {
                tree = sys_open_tree(AT_FDCWD, glove_mount_plan_str(c->plan, e->source), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
                if (tree >= 0 && sys_mount_setattr(tree, "", AT_EMPTY_PATH, e->attrs) < 0)
                        return glove_error_set(err, errno, "mount.proc", "masking /%s: %s", dest, glove_errno_text(errno));
        }
        if (tree < 0)
                return glove_error_set(err, errno, "mount.proc", "masking /%s: %s", dest, glove_errno_text(errno));
        if (sys_move_mount(tree, "", pfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
                if (errno == ENOENT || errno == ENOTDIR) {
                        c->mask_tree = tree; /* absent here: kept for the next */
                        return 0;
                }
                return glove_error_set(err, errno, "mount.proc", "masking /%s: %s", dest, glove_errno_text(errno));
        }
        c->mask_tree = -1;
        c->mask_done = dest;
        return 0;
}

static int readonly(struct exec_ctx *c, const struct glove_mount_entry *e, const char *dest, struct glove_error *err) {
        const char *name;
        int pfd = parent_dir(c, dest, &name, err);
        if (pfd < 0)
                return pfd;
        int tree = sys_open_tree(pfd, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
        if (tree < 0) {
                if (errno == ENOENT)
                        return 0;
                return glove_error_set(err, errno, "mount.proc", "open_tree /%s: %s", dest, glove_errno_text(errno));
        }
        if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, e->attrs) < 0 ||
            sys_move_mount(tree, "", pfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return glove_error_set(err, errno, "mount.proc", "making /%s read-only: %s", dest, glove_errno_text(errno));
        return 0;
}

static int write_existing(struct exec_ctx *c, const struct glove_mount_entry *e, const char *dest, struct glove_error *err) {
        const char *name;
        int pfd = parent_dir(c, dest, &name, err);
        if (pfd < 0)
                return pfd;
        _cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || glove_fd_write_all(fd, glove_mount_plan_str(c->plan, e->bytes), e->bytes_len) < 0)
                return glove_error_set(err, errno, e->code, "setting /%s: %s", dest, glove_errno_text(errno));
        return 0;
}

/* The agent's PTY slave comes from the host's devpts, which the sandbox does
 * not mount: the same inode is bound at /dev/console so that ttyname() finds
 * it (glibc matches device and inode when the /proc link does not resolve). */
static int bind_tty(struct exec_ctx *c, int tty_fd, const char *dest, uint64_t attrs, struct glove_error *err) {
        /* Fail closed: PID 1 reopens the agent's terminal through this bind
         * (so the agent cannot change the host node), and it must exist. */
        char proc[64], path[GLOVE_PATH_MAX];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tty_fd);
        ssize_t n = readlink(proc, path, sizeof(path) - 1);
        if (n <= 0 || (size_t)n >= sizeof(path) - 1 || path[0] != '/')
                return glove_error_set(err, n < 0 ? errno : ENOENT, "mount.attach", "the terminal has no path to bind at /%s", dest);
        path[n] = '\0';
        int tree = sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
        if (tree < 0)
                return glove_error_set(err, errno, "mount.attach", "cannot clone the terminal %s: %s", path, glove_errno_text(errno));
        struct stat a, b;
        if (fstat(tree, &a) < 0 || fstat(tty_fd, &b) < 0 || a.st_rdev != b.st_rdev || a.st_ino != b.st_ino) {
                close(tree);
                return glove_error_set(err, ESTALE, "mount.attach", "%s no longer names the agent's terminal", path);
        }
        return attach(c, tree, dest, false, attrs, err);
}

static int run_entry(struct exec_ctx *c, const struct glove_sandbox_config *cfg, const struct glove_mount_entry *e, int src,
                     struct glove_error *err) {
        const struct glove_mount_plan *plan = c->plan;
        const char *dest = glove_mount_plan_str(plan, e->dest);
        switch (e->kind) {
        case GLOVE_MOUNT_BIND: {
                if (src < 0)
                        return 0; /* optional and absent */
                int r = attach(c, src, dest, e->flags & GLOVE_MOUNT_F_DIR, e->attrs, err);
                if (r < 0 && (e->flags & GLOVE_MOUNT_F_GRANT))
                        glove_error_prefix(err, "grant %s",
                                           glove_mount_plan_str(plan, (e->flags & GLOVE_MOUNT_F_PRIVATE) && e->name
                                                                              ? e->name
                                                                              : e->source));
                return r;
        }
        case GLOVE_MOUNT_COPY:
                return src < 0 ? 0 : write_new(c, e, dest, src, err);
        case GLOVE_MOUNT_FILE:
                return write_new(c, e, dest, -1, err);
        case GLOVE_MOUNT_SYMLINK: {
                const char *name;
                int pfd = parent_dir(c, dest, &name, err);
                if (pfd < 0)
                        return pfd;
                if (symlinkat(glove_mount_plan_str(plan, e->source), pfd, name) < 0)
                        return glove_error_set(err, errno, e->code, "symlink /%s: %s", dest, glove_errno_text(errno));
                return 0;
        }
        case GLOVE_MOUNT_TMPFS:
                return mount_fresh(c, dest, "tmpfs", e->attrs, glove_mount_plan_str(plan, e->options), err);
        case GLOVE_MOUNT_PROC:
                return mount_fresh(c, dest, "proc", e->attrs, glove_mount_plan_str(plan, e->options), err);
        case GLOVE_MOUNT_DEVPTS:
                return mount_fresh(c, dest, "devpts", e->attrs, glove_mount_plan_str(plan, e->options), err);
        case GLOVE_MOUNT_WRITE:
                return write_existing(c, e, dest, err);
        case GLOVE_MOUNT_READONLY:
                return readonly(c, e, dest, err);
        case GLOVE_MOUNT_MASK:
                return mask(c, e, dest, err);
        case GLOVE_MOUNT_TREE:
                return make_tree(c, e, dest, src, err);
        case GLOVE_MOUNT_DIR:
                return make_dir(c, e, dest, err);
        case GLOVE_MOUNT_TTY:
                return cfg->controlling_tty && cfg->stdin_fd >= 0 ? bind_tty(c, cfg->stdin_fd, dest, e->attrs, err) : 0;
        }
        return glove_error_set(err, EINVAL, "mount.root", "unknown mount plan entry %d for /%s", (int)e->kind, dest);
}

static int pivot(int root, struct glove_error *err) {
        if (fchdir(root) < 0)
                return glove_error_set(err, errno, "mount.pivot", "fchdir: %s", glove_errno_text(errno));
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return glove_error_set(err, errno, "mount.pivot", "pivot_root: %s", glove_errno_text(errno));
        /* The old root is now stacked under "."; detach it. */
        if (umount2(".", MNT_DETACH) < 0)
                return glove_error_set(err, errno, "mount.pivot", "detaching the old root: %s", glove_errno_text(errno));
        if (chdir("/") < 0)
                return glove_error_set(err, errno, "mount.pivot", "chdir /: %s", glove_errno_text(errno));
        /* The root tmpfs and /dev become read-only; /tmp, HOME, /dev/shm and
         * write grants are separate mounts and stay writable. */
        if (sys_mount_setattr(AT_FDCWD, "/", 0, MOUNT_ATTR_RDONLY) < 0)
                return glove_error_set(err, errno, "mount.readonly", "making / read-only: %s", glove_errno_text(errno));
        if (sys_mount_setattr(AT_FDCWD, "/dev", AT_SYMLINK_NOFOLLOW, MOUNT_ATTR_RDONLY) < 0)
                return glove_error_set(err, errno, "mount.readonly", "making /dev read-only: %s", glove_errno_text(errno));
        return 0;
}

/* Grants are cloned recursively (the kernel refuses a partial copy of a
 * tree whose mounts a user namespace may not uncover), so a mount beneath a
 * grant comes along. Refuses the run when one of those is a kernel interface
 * file system (a proc mounted in a chroot would be the host's /proc), and
 * when any mount lies beneath a private entry (a path exposure, which
 * reaches only its project's own file system: a bind mount beneath it could
 * bring in a directory from outside the approved root).
 * Reads the sandbox's own /proc/self/mountinfo, after pivot_root. */
/* Longest /proc/self/mountinfo line read; a longer one fails the check
 * (fail closed) rather than being skipped. Kept on the stack. */
#define MOUNTINFO_LINE_MAX (16 * 1024)

/* Checks one mountinfo line (NUL-terminated, modified in place). */
static int check_mountinfo_line(const struct glove_mount_plan *plan, char *line, struct glove_error *err) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
        char *save = NULL, *field[5] = {0};
        char *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 5; i++, tok = strtok_r(NULL, " ", &save))
                field[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
                tok = strtok_r(NULL, " ", &save);
        char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
        if (!field[4] || !fstype)
                return 0;
        glove_mountinfo_unescape(field[4]);
        /* A path exposure carries no mount at all: whatever lies strictly
         * beneath its destination came from the host tree (the entries
         * after it never target beneath it: plan.path_target_overlap). */
        for (size_t i = 0; i < plan->count; i++) {
                const struct glove_mount_entry *e = &plan->entries[i];
                if (!(e->flags & GLOVE_MOUNT_F_PRIVATE) || (e->kind != GLOVE_MOUNT_BIND && e->kind != GLOVE_MOUNT_TREE))
                        continue;
                char at[GLOVE_PATH_MAX + 1];
                snprintf(at, sizeof(at), "/%s", glove_mount_plan_str(plan, e->dest));
                if (strcmp(field[4], at) != 0 && glove_path_is_beneath(field[4], at)) {
                        const char *label = glove_mount_entry_label(plan, e); /* never the host path */
                        return glove_error_set(err, EXDEV, "grant.submount",
                                               "%s: a mount lies beneath it (a path exposure reaches only its "
                                               "project's own file system); unmount it on the host, or enroll a "
                                               "project with no mount beneath it",
                                               label ? label : "exposure");
                }
        }
        if (!glove_grant_kernel_fs(fstype))
                return 0;
        for (size_t i = 0; i < plan->count; i++) {
                const struct glove_mount_entry *e = &plan->entries[i];
                if (e->kind != GLOVE_MOUNT_BIND || !(e->flags & GLOVE_MOUNT_F_GRANT) || !(e->flags & GLOVE_MOUNT_F_DIR))
                        continue;
                /* Beneath the destination, where the clone was attached
                 * (a grant's is its source; a pinned bind's may differ). */
                char at[GLOVE_PATH_MAX + 1];
                snprintf(at, sizeof(at), "/%s", glove_mount_plan_str(plan, e->dest));
                const char *path = glove_mount_plan_str(plan, e->source);
                const char *label = glove_mount_entry_label(plan, e);
                if (glove_path_is_beneath(field[4], at)) {
                        bool private = e->flags & GLOVE_MOUNT_F_PRIVATE; /* named by its label only */
                        return glove_error_set(err, EPERM, "grant.kernel_fs",
                                               "%s %s: %s beneath it is a %s mount, an interface to the "
                                               "host's kernel; grant the directories beside it instead",
                                               label ? label : "grant", private ? "" : path,
                                               private ? "a directory" : field[4], fstype);
                }
        }
        return 0;
}

static bool has_checked_entries(const struct glove_mount_plan *plan) {
        for (size_t i = 0; i < plan->count; i++)
                if (plan->entries[i].flags & (GLOVE_MOUNT_F_GRANT | GLOVE_MOUNT_F_PRIVATE))
                        return true;
        return false;
}

static int check_grant_submounts(const struct glove_mount_plan *plan, struct glove_error *err) {
        if (!has_checked_entries(plan))
                return 0;
        _cleanup_close_ int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "mount.check", "/proc/self/mountinfo: %s", glove_errno_text(errno));
        char buf[MOUNTINFO_LINE_MAX + 1];
        size_t have = 0;
        bool eof = false;
        while (!eof || have > 0) {
                if (!eof && have < MOUNTINFO_LINE_MAX) {
                        ssize_t n = read(fd, buf + have, MOUNTINFO_LINE_MAX - have);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return glove_error_set(err, errno, "mount.check", "reading /proc/self/mountinfo: %s",
                                                       glove_errno_text(errno));
                        if (n == 0)
                                eof = true;
                        have += (size_t)n;
                }
                char *nl = memchr(buf, '\n', have);
                if (!nl && !eof) {
                        if (have < MOUNTINFO_LINE_MAX)
                                continue;
                        return glove_error_set(err, E2BIG, "mount.check",
                                               "a line of /proc/self/mountinfo is longer than %d bytes",
                                               MOUNTINFO_LINE_MAX);
                }
                size_t len = nl ? (size_t)(nl - buf) : have;
                buf[len] = '\0';
                int r = check_mountinfo_line(plan, buf, err);
                if (r < 0)
                        return r;
                size_t used = nl ? len + 1 : have;
                memmove(buf, buf + used, have - used);
                have -= used;
        }
        return 0;
}

int glove_perimeter_build(const struct glove_sandbox_config *cfg, struct glove_error *err) {
        const struct glove_mount_plan *plan = cfg->mounts;
        /* Nothing done here propagates back to the host. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return glove_error_set(err, errno, "mount.private", "making mounts private: %s", glove_errno_text(errno));
        int src[GLOVE_MOUNT_PLAN_MAX];
        int r = open_sources(plan, src, err);
        if (r < 0)
                return r;
        if (mount("glove", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096") < 0)
                return glove_error_set(err, errno, "mount.root", "mounting the root tmpfs: %s", glove_errno_text(errno));
        int root = open(STAGING, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                return glove_error_set(err, errno, "mount.root", "opening the root tmpfs: %s", glove_errno_text(errno));
        struct exec_ctx c = {.plan = plan, .root = root, .parent_fd = -1, .mask_tree = -1};
        for (size_t i = 0; r == 0 && i < plan->count; i++)
                r = run_entry(&c, cfg, &plan->entries[i], src[i], err);
        r = r ?: pivot(root, err);
        r = r ?: check_grant_submounts(plan, err);
        if (r < 0)
                return r;
        const char *cwd = glove_mount_plan_str(plan, plan->cwd);
        if (!*cwd)
                cwd = GLOVE_ENV_HOME;
        if (chdir(cwd) < 0)
                return glove_error_set(err, errno, "mount.chdir", "chdir %s: %s", cwd, glove_errno_text(errno));
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mount perimeter, built inside the sandbox's new mount namespace
 * (issue "glove exec", Mount perimeter):
 *
 *   1. every mount source is cloned into a detached tree (open_tree with
 *      OPEN_TREE_CLONE) while the host view is still reachable: /usr, the
 *      curated /etc entries, the /dev nodes and the grants (re-opened without
 *      following links and checked against the identity pinned by Glove);
 *   2. a fresh tmpfs becomes the new root and is populated: the detached
 *      trees get their attributes (mount_setattr: ro/nosuid/nodev) and are
 *      attached with move_mount to targets resolved without following links
 *      beneath the new root; /proc, /dev, /tmp and HOME are mounted fresh;
 *   3. pivot_root into it, the old root detached, the root made read-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
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
#include "internal.h"

/* Where the new root is assembled before pivot_root. */
#define STAGING "/tmp"

/* Host /etc entries the agent may see, read-only. Anything not listed is
 * absent: shadow, gshadow, sudoers, ssh keys, machine-id, ssl/private, npm
 * and git configuration, credentials of any kind. Symbolic links are
 * recreated as links (their target text resolves inside the sandbox). */
static const char *const etc_entries[] = {
        "alternatives", "bash.bashrc", "debian_version", "host.conf", "ld.so.cache", "localtime", "mime.types",
        "nsswitch.conf", "os-release", "profile", "protocols", "services", "ssl/certs", "ssl/openssl.cnf", "timezone",
};

/* Device nodes bound from the host /dev. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

/* The merged-/usr links (or directories on hosts that are not merged). */
static const char *const usr_links[] = {"bin", "lib", "lib32", "lib64", "libx32", "sbin"};

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

/* Clones the mount at fd (or path under dfd) into a detached tree. */
static int clone_tree(int dfd, const char *path, bool recursive, int *out, struct glove_error *err) {
        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
        if (!*path)
                flags |= AT_EMPTY_PATH;
        int fd = sys_open_tree(dfd, path, flags);
        if (fd < 0)
                return glove_error_set(err, errno, "mount.clone", "open_tree %s: %s", *path ? path : "(grant)", glove_errno_text(errno));
        *out = fd;
        return 0;
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

/* Gives the detached tree its attributes and attaches it at rel. */
static int attach(int root, int tree, const char *rel, bool is_dir, uint64_t attrs, struct glove_error *err) {
        int r = make_mountpoint(root, rel, is_dir, err);
        if (r < 0)
                return r;
        if (attrs && sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, attrs) < 0)
                return glove_error_set(err, errno, "mount.setattr", "mount_setattr on /%s: %s", rel, glove_errno_text(errno));
        _cleanup_close_ int target = -1;
        r = glove_fd_open_beneath(root, rel, O_PATH, &target, err);
        if (r < 0)
                return r;
        if (sys_move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return glove_error_set(err, errno, "mount.attach", "move_mount to /%s: %s", rel, glove_errno_text(errno));
        return 0;
}

static int mount_fresh(int root, const char *rel, const char *fstype, unsigned long flags, const char *data,
                       struct glove_error *err) {
        int r = make_mountpoint(root, rel, true, err);
        if (r < 0)
                return r;
        char target[GLOVE_PATH_MAX];
        snprintf(target, sizeof(target), STAGING "/%s", rel);
        if (mount(fstype, target, fstype, flags, data) < 0)
                return glove_error_set(err, errno, "mount.fresh", "mount %s on /%s: %s", fstype, rel, glove_errno_text(errno));
        return 0;
}

static int write_at(int dirfd, const char *name, const char *content, mode_t mode, struct glove_error *err) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 || glove_fd_write_all(fd, content, strlen(content)) < 0)
                return glove_error_set(err, errno, "mount.etc", "cannot write /etc/%s: %s", name, glove_errno_text(errno));
        return 0;
}

static int copy_fd(int in, int out, size_t len);

static int write_copy(int root, const char *rel, int src, size_t len, struct glove_error *err) {
        _cleanup_close_ int fd = openat(root, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return glove_error_set(err, errno, "mount.etc", "cannot write /%s: %s", rel, glove_errno_text(errno));
        int r = copy_fd(src, fd, len);
        if (r < 0)
                return glove_error_set(err, -r, "mount.etc", "cannot write /%s: %s", rel, glove_errno_text(-r));
        return 0;
}

/* Sources cloned from the host before the staging root covers anything. */
struct sources {
        int usr;
        int etc[GLOVE_ELEMENTSOF(etc_entries)];
        bool etc_link[GLOVE_ELEMENTSOF(etc_entries)];   /* recreated as a link (target read when built) */
        int etc_copy[GLOVE_ELEMENTSOF(etc_entries)];    /* small file copied: open for reading */
        size_t etc_copy_len[GLOVE_ELEMENTSOF(etc_entries)];
        bool etc_dir[GLOVE_ELEMENTSOF(etc_entries)];
        int usr_link_tree[GLOVE_ELEMENTSOF(usr_links)];
        bool usr_link[GLOVE_ELEMENTSOF(usr_links)];
        int dev[GLOVE_ELEMENTSOF(dev_nodes)];
        int grant[GLOVE_GRANTS_MAX];
};

static void sources_init(struct sources *s) {
        memset(s, 0, sizeof(*s));
        s->usr = -1;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->etc); i++)
                s->etc[i] = s->etc_copy[i] = -1;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->usr_link_tree); i++)
                s->usr_link_tree[i] = -1;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->dev); i++)
                s->dev[i] = -1;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->grant); i++)
                s->grant[i] = -1;
}

/* Regular /etc files up to this size are copied into the sandbox's /etc
 * rather than bound: a copy costs a few system calls, a bind a mount. */
#define ETC_COPY_MAX (256 * 1024)

/* Copies len bytes (fewer at end of file) of the regular file in to out,
 * through the kernel (sendfile) or a stack buffer: no allocation in the
 * sandbox child. Returns 0 or -errno. */
static int copy_fd(int in, int out, size_t len) {
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

/* Reads the target of the link at host_path into buf (NUL-terminated). */
static int read_link(const char *host_path, char *buf, size_t size, struct glove_error *err) {
        ssize_t n = readlink(host_path, buf, size - 1);
        if (n < 0)
                return glove_error_set(err, errno, "mount.clone", "readlink %s: %s", host_path, glove_errno_text(errno));
        buf[n] = '\0';
        return 0;
}

/* Clones a host path that may be a link (recorded; its target is read when
 * the link is recreated), a directory (cloned), a small regular file (kept
 * open in *copy_fd for copying, when copy_fd is given) or a larger one
 * (cloned), or absent (skipped). */
static int clone_optional(const char *host_path, int *tree, bool *link, bool *is_dir, int *copy_fd_out, size_t *copy_len,
                          struct glove_error *err) {
        struct stat st;
        if (lstat(host_path, &st) < 0)
                return errno == ENOENT ? 0 : glove_error_set(err, errno, "mount.clone", "%s: %s", host_path, glove_errno_text(errno));
        if (S_ISLNK(st.st_mode)) {
                *link = true;
                return 0;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return 0;
        if (is_dir)
                *is_dir = S_ISDIR(st.st_mode);
        _cleanup_close_ int fd = -1;
        bool small = copy_fd_out && S_ISREG(st.st_mode) && st.st_size <= ETC_COPY_MAX;
        int r = glove_fd_open_nofollow(host_path, small ? O_RDONLY : O_PATH, &fd, err);
        if (r < 0)
                return r;
        if (small) {
                *copy_fd_out = TAKE_FD(fd);
                *copy_len = (size_t)st.st_size;
                return 0;
        }
        return clone_tree(fd, "", true, tree, err);
}

/* Re-opens a grant in this mount namespace and checks it is the object Glove
 * pinned; a swapped component fails here rather than redirecting a mount. */
static int clone_grant(const struct glove_grant *g, int *tree, struct glove_error *err) {
        _cleanup_close_ int fd = -1;
        int r = glove_fd_open_nofollow(g->path, O_PATH, &fd, err);
        if (r < 0) {
                glove_error_prefix(err, "grant changed after it was checked");
                return r;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "grant.changed", "%s: %s", g->path, glove_errno_text(errno));
        if (st.st_dev != g->dev || st.st_ino != g->ino)
                return glove_error_set(err, ESTALE, "grant.changed",
                                       "%s was replaced between its check and its mount; refusing to mount it", g->path);
        /* Recursive: in the sandbox's user namespace the mounts beneath a
         * grant are locked to it, and the kernel refuses to copy the grant
         * without them. check_grant_submounts vets them once attached. */
        return clone_tree(fd, "", true, tree, err);
}

static int clone_sources(const struct glove_sandbox_config *cfg, struct sources *s, struct glove_error *err) {
        int r = clone_tree(AT_FDCWD, "/usr", true, &s->usr, err);
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(usr_links); i++) {
                char host[64];
                snprintf(host, sizeof(host), "/%s", usr_links[i]);
                r = clone_optional(host, &s->usr_link_tree[i], &s->usr_link[i], NULL, NULL, NULL, err);
        }
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(etc_entries); i++) {
                char host[GLOVE_PATH_MAX];
                snprintf(host, sizeof(host), "/etc/%s", etc_entries[i]);
                r = clone_optional(host, &s->etc[i], &s->etc_link[i], &s->etc_dir[i], &s->etc_copy[i], &s->etc_copy_len[i], err);
        }
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(dev_nodes); i++) {
                char host[64];
                snprintf(host, sizeof(host), "/dev/%s", dev_nodes[i]);
                r = clone_tree(AT_FDCWD, host, false, &s->dev[i], err);
        }
        for (size_t i = 0; r == 0 && i < cfg->grants->count; i++)
                r = clone_grant(&cfg->grants->items[i], &s->grant[i], err);
        return r;
}

static int build_etc(int root, struct sources *s, uid_t uid, gid_t gid, struct glove_error *err) {
        int r = make_mountpoint(root, "etc", true, err);
        if (r < 0)
                return r;
        char buf[1024];
        /* The agent's entry first, so a lookup of its ids finds it even when
         * they coincide with nobody's (an invoker running as 65534). */
        snprintf(buf, sizeof(buf),
                 "agent:x:%u:%u:Glove agent:" GLOVE_ENV_HOME ":/bin/sh\n"
                 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                 (unsigned)uid, (unsigned)gid);
        _cleanup_close_ int etcw = openat(root, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (etcw < 0)
                return glove_error_set(err, errno, "mount.etc", "/etc: %s", glove_errno_text(errno));
        r = write_at(etcw, "passwd", buf, 0644, err);
        if (r < 0)
                return r;
        snprintf(buf, sizeof(buf), "agent:x:%u:\nroot:x:0:\nnogroup:x:65534:\n", (unsigned)gid);
        r = write_at(etcw, "group", buf, 0644, err);
        r = r ?: write_at(etcw, "hostname", GLOVE_SANDBOX_HOSTNAME "\n", 0644, err);
        r = r ?: write_at(etcw, "hosts", "127.0.0.1\tlocalhost " GLOVE_SANDBOX_HOSTNAME "\n::1\tlocalhost ip6-localhost ip6-loopback\n", 0644, err);
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(etc_entries); i++) {
                char rel[GLOVE_PATH_MAX];
                snprintf(rel, sizeof(rel), "etc/%s", etc_entries[i]);
                if (s->etc_link[i]) {
                        const char *slash = strrchr(etc_entries[i], '/');
                        if (slash) {
                                char parent[GLOVE_PATH_MAX];
                                snprintf(parent, sizeof(parent), "etc/%.*s", (int)(slash - etc_entries[i]), etc_entries[i]);
                                r = make_mountpoint(root, parent, true, err);
                        }
                        char host[GLOVE_PATH_MAX], target[GLOVE_PATH_MAX];
                        snprintf(host, sizeof(host), "/etc/%s", etc_entries[i]);
                        r = r ?: read_link(host, target, sizeof(target), err);
                        if (r == 0 && symlinkat(target, root, rel) < 0)
                                r = glove_error_set(err, errno, "mount.etc", "symlink /%s: %s", rel, glove_errno_text(errno));
                } else if (s->etc_copy[i] >= 0) {
                        const char *slash = strrchr(etc_entries[i], '/');
                        if (slash) {
                                char parent[GLOVE_PATH_MAX];
                                snprintf(parent, sizeof(parent), "etc/%.*s", (int)(slash - etc_entries[i]), etc_entries[i]);
                                r = make_mountpoint(root, parent, true, err);
                        }
                        if (r == 0)
                                r = write_copy(root, rel, s->etc_copy[i], s->etc_copy_len[i], err);
                } else if (s->etc[i] >= 0) {
                        r = attach(root, s->etc[i], rel, s->etc_dir[i],
                                   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
                }
        }
        return r;
}

/* The agent's PTY slave comes from the host's devpts, which the sandbox does
 * not mount: the same inode is bound at /dev/console so that ttyname() finds
 * it (glibc matches device and inode when the /proc link does not resolve). */
static int bind_tty(int root, int tty_fd, struct glove_error *err) {
        char proc[64], path[GLOVE_PATH_MAX];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tty_fd);
        ssize_t n = readlink(proc, path, sizeof(path) - 1);
        if (n <= 0 || path[0] != '/')
                return 0; /* not a path we can reach: leave ttyname() failing */
        path[n] = '\0';
        _cleanup_close_ int tree = sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
        if (tree < 0)
                return 0;
        struct stat a, b;
        if (fstat(tree, &a) < 0 || fstat(tty_fd, &b) < 0 || a.st_rdev != b.st_rdev || a.st_ino != b.st_ino)
                return 0; /* the path no longer names this PTY */
        return attach(root, tree, "dev/console", false, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
}

static int build_dev(int root, struct sources *s, uint64_t disk, int tty_fd, struct glove_error *err) {
        int r = mount_fresh(root, "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64", err);
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(dev_nodes); i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "dev/%s", dev_nodes[i]);
                /* Read-only: with a root invoker the agent owns the host's
                 * device inodes and could otherwise chmod them. Reading and
                 * writing the devices needs no writable mount. */
                r = attach(root, s->dev[i], rel, false, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
        }
        r = r ?: mount_fresh(root, "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,max=256", err);
        char shm_opts[64];
        snprintf(shm_opts, sizeof(shm_opts), "mode=1777,size=%llu", (unsigned long long)(disk ? disk : 64ULL << 20));
        r = r ?: mount_fresh(root, "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, shm_opts, err);
        static const char *const links[][2] = {
                {"pts/ptmx", "dev/ptmx"},        {"/proc/self/fd", "dev/fd"},
                {"/proc/self/fd/0", "dev/stdin"}, {"/proc/self/fd/1", "dev/stdout"},
                {"/proc/self/fd/2", "dev/stderr"},
        };
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(links); i++)
                if (symlinkat(links[i][0], root, links[i][1]) < 0)
                        r = glove_error_set(err, errno, "mount.dev", "symlink /%s: %s", links[i][1], glove_errno_text(errno));
        if (r == 0 && tty_fd >= 0)
                r = bind_tty(root, tty_fd, err);
        return r;
}

/* Host-wide knobs under the fresh /proc, made read-only: a root invoker's
 * agent is host uid 0 for permission checks, and sysctl files (core_pattern,
 * ...) check only the owner. */
static const char *const proc_readonly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "asound", "scsi", "driver"};

/* Host-wide files of /proc that only root may read (mode 0400). A root
 * invoker's agent is host uid 0 for the owner check, so they are covered
 * with the host's /dev/null on a nodev mount: opening one fails (EACCES). */
static const char *const proc_root_only[] = {"slabinfo",    "vmallocinfo",  "kpageflags", "kpagecount",
                                             "kpagecgroup", "pagetypeinfo", "timer_list", "kcore",
                                             "kmsg",        "sched_debug",  "mtrr"};

/* Whether the sandbox's uid 0..n maps to host uid 0 (a root invoker): the
 * outside id of /proc/self/uid_map, read from inside the sandbox's user
 * namespace, is relative to the host's. */
static bool maps_host_root(void) {
        int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return true; /* cannot tell: mask */
        char buf[128];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf) - 1)) < 0 && errno == EINTR)
                ;
        close(fd);
        if (n <= 0)
                return true;
        buf[n] = '\0';
        /* "INSIDE OUTSIDE COUNT": the second number. */
        const char *p = buf;
        unsigned long long out = 0;
        for (int field = 0; field < 2; field++) {
                while (*p == ' ')
                        p++;
                if (*p < '0' || *p > '9')
                        return true;
                out = 0;
                while (*p >= '0' && *p <= '9')
                        out = out * 10 + (unsigned long long)(*p++ - '0');
        }
        return out == 0;
}

static int mask_root_only(int root, struct glove_error *err) {
        if (!maps_host_root())
                return 0;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(proc_root_only); i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "proc/%s", proc_root_only[i]);
                struct stat st;
                if (fstatat(root, rel, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                _cleanup_close_ int tree = sys_open_tree(AT_FDCWD, "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
                if (tree < 0 ||
                    sys_mount_setattr(tree, "", AT_EMPTY_PATH,
                                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC) < 0 ||
                    sys_move_mount(tree, "", root, rel, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return glove_error_set(err, errno, "mount.proc", "masking /%s: %s", rel, glove_errno_text(errno));
        }
        return 0;
}

static int harden_proc(int root, struct glove_error *err) {
        int r = mask_root_only(root, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(proc_readonly); i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "proc/%s", proc_readonly[i]);
                _cleanup_close_ int tree = sys_open_tree(root, rel, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
                if (tree < 0) {
                        if (errno == ENOENT)
                                continue;
                        return glove_error_set(err, errno, "mount.proc", "open_tree /%s: %s", rel, glove_errno_text(errno));
                }
                if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE,
                                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC) < 0 ||
                    sys_move_mount(tree, "", root, rel, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return glove_error_set(err, errno, "mount.proc", "making /%s read-only: %s", rel, glove_errno_text(errno));
        }
        return 0;
}

/* Inotify instances and watches are counted per user in every user
 * namespace up to the host's, where the invoker's own limit applies: the
 * sandbox's namespace gets its own, lower limits (written through the fresh
 * /proc, whose user/ sysctls are those of the sandbox's user namespace,
 * before /proc/sys is made read-only). */
static int limit_user_counters(const struct glove_sandbox_config *cfg, int root, struct glove_error *err) {
        const struct {
                const char *rel;
                uint32_t value;
        } knobs[] = {
                {"proc/sys/user/max_inotify_instances", cfg->inotify_instances},
                {"proc/sys/user/max_inotify_watches", cfg->inotify_watches},
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(knobs); i++) {
                if (!knobs[i].value)
                        continue;
                _cleanup_close_ int fd = openat(root, knobs[i].rel, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
                char buf[16];
                int n = snprintf(buf, sizeof(buf), "%u\n", (unsigned)knobs[i].value);
                if (fd < 0 || write(fd, buf, (size_t)n) != n)
                        return glove_error_set(err, errno, "mount.proc", "setting /%s: %s", knobs[i].rel,
                                               glove_errno_text(errno));
        }
        return 0;
}

/* Grants are attached parents first, so a nested grant of the same mode is
 * mounted on top of its parent's bind: order[] sorted by path (insertion
 * sort; qsort may allocate, and there are at most GLOVE_GRANTS_MAX). */
static void grant_order(const struct glove_grant *g, size_t *order, size_t n) {
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        for (size_t i = 1; i < n; i++) {
                size_t v = order[i], j = i;
                for (; j > 0 && strcmp(g[order[j - 1]].path, g[v].path) > 0; j--)
                        order[j] = order[j - 1];
                order[j] = v;
        }
}

static int build_root(const struct glove_sandbox_config *cfg, int root, struct sources *s, uid_t uid, gid_t gid,
                      struct glove_error *err) {
        const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        int r = attach(root, s->usr, "usr", true, ro, err);
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(usr_links); i++) {
                if (s->usr_link[i]) {
                        char host[64], target[GLOVE_PATH_MAX];
                        snprintf(host, sizeof(host), "/%s", usr_links[i]);
                        r = read_link(host, target, sizeof(target), err);
                        if (r == 0 && symlinkat(target, root, usr_links[i]) < 0)
                                r = glove_error_set(err, errno, "mount.usr", "symlink /%s: %s", usr_links[i], glove_errno_text(errno));
                } else if (s->usr_link_tree[i] >= 0) {
                        r = attach(root, s->usr_link_tree[i], usr_links[i], true, ro, err);
                }
        }
        r = r ?: build_etc(root, s, uid, gid, err);
        r = r ?: mount_fresh(root, "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err);
        r = r ?: limit_user_counters(cfg, root, err);
        r = r ?: harden_proc(root, err);
        r = r ?: build_dev(root, s, cfg->disk_bytes, cfg->controlling_tty ? cfg->stdin_fd : -1, err);
        /* Each private writable tmpfs is sized to the disk limit: the agent
         * fills its own quota (ENOSPC), never the host's disk or memory. */
        char size[48] = "";
        if (cfg->disk_bytes)
                snprintf(size, sizeof(size), ",size=%llu", (unsigned long long)cfg->disk_bytes);
        char tmp_opts[80];
        snprintf(tmp_opts, sizeof(tmp_opts), "mode=1777%s", size);
        r = r ?: mount_fresh(root, "tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp_opts, err);
        char home_opts[128];
        snprintf(home_opts, sizeof(home_opts), "mode=0700,uid=%u,gid=%u%s", (unsigned)uid, (unsigned)gid, size);
        const char *home_rel = &GLOVE_ENV_HOME[1];
        r = r ?: mount_fresh(root, home_rel, "tmpfs", MS_NOSUID | MS_NODEV, home_opts, err);
        if (r < 0)
                return r;

        const struct glove_grant_set *gs = cfg->grants;
        size_t order[GLOVE_GRANTS_MAX];
        grant_order(gs->items, order, gs->count);
        for (size_t k = 0; r == 0 && k < gs->count; k++) {
                const struct glove_grant *g = &gs->items[order[k]];
                uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                if (g->mode == GLOVE_GRANT_READ)
                        attrs |= MOUNT_ATTR_RDONLY;
                r = attach(root, s->grant[order[k]], g->path + 1, g->is_dir, attrs, err);
                if (r < 0)
                        glove_error_prefix(err, "grant %s", g->path);
        }
        return r;
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

static void sources_close(struct sources *s) {
        glove_closep(&s->usr);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->etc); i++) {
                glove_closep(&s->etc[i]);
                glove_closep(&s->etc_copy[i]);
        }
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->usr_link_tree); i++) {
                glove_closep(&s->usr_link_tree[i]);
        }
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->dev); i++)
                glove_closep(&s->dev[i]);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(s->grant); i++)
                glove_closep(&s->grant[i]);
}

void glove_mountinfo_unescape(char *s) {
        char *w = s;
        for (char *r = s; *r;) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
                    r[3] <= '7') {
                        *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
                        r += 4;
                } else {
                        *w++ = *r++;
                }
        }
        *w = '\0';
}

/* Grants are cloned recursively (the kernel refuses a partial copy of a
 * tree whose mounts a user namespace may not uncover), so a mount beneath a
 * grant comes along. Refuses the run when one of those is a kernel interface
 * file system (a proc mounted in a chroot would be the host's /proc).
 * Reads the sandbox's own /proc/self/mountinfo, after pivot_root. */
/* Longest /proc/self/mountinfo line read; a longer one fails the check
 * (fail closed) rather than being skipped. Kept on the stack. */
#define MOUNTINFO_LINE_MAX (16 * 1024)

/* Checks one mountinfo line (NUL-terminated, modified in place). */
static int check_mountinfo_line(const struct glove_grant_set *gs, char *line, struct glove_error *err) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
        char *save = NULL, *field[5] = {0};
        char *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 5; i++, tok = strtok_r(NULL, " ", &save))
                field[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
                tok = strtok_r(NULL, " ", &save);
        char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
        if (!field[4] || !fstype || !glove_grant_kernel_fs(fstype))
                return 0;
        glove_mountinfo_unescape(field[4]);
        for (size_t i = 0; i < gs->count; i++) {
                const struct glove_grant *g = &gs->items[i];
                if (g->is_dir && glove_path_is_beneath(field[4], g->path))
                        return glove_error_set(err, EPERM, "grant.kernel_fs",
                                               "%s %s: %s beneath it is a %s mount, an interface to the "
                                               "host's kernel; grant the directories beside it instead",
                                               g->workspace                   ? "--workspace"
                                               : g->mode == GLOVE_GRANT_WRITE ? "--write"
                                                                              : "--read",
                                               g->path, field[4], fstype);
        }
        return 0;
}

static int check_grant_submounts(const struct glove_grant_set *gs, struct glove_error *err) {
        if (gs->count == 0)
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
                int r = check_mountinfo_line(gs, buf, err);
                if (r < 0)
                        return r;
                size_t used = nl ? len + 1 : have;
                memmove(buf, buf + used, have - used);
                have -= used;
        }
        return 0;
}

int glove_perimeter_build(const struct glove_sandbox_config *cfg, uid_t uid, gid_t gid, struct glove_error *err) {
        /* Nothing done here propagates back to the host. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return glove_error_set(err, errno, "mount.private", "making mounts private: %s", glove_errno_text(errno));
        _cleanup_(sources_close) struct sources s;
        sources_init(&s);
        int r = clone_sources(cfg, &s, err);
        if (r < 0)
                return r;
        if (mount("glove", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096") < 0)
                return glove_error_set(err, errno, "mount.root", "mounting the root tmpfs: %s", glove_errno_text(errno));
        _cleanup_close_ int root = open(STAGING, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                return glove_error_set(err, errno, "mount.root", "opening the root tmpfs: %s", glove_errno_text(errno));
        r = build_root(cfg, root, &s, uid, gid, err);
        r = r ?: pivot(root, err);
        r = r ?: check_grant_submounts(cfg->grants, err);
        if (r < 0)
                return r;
        const struct glove_grant *ws = glove_grant_set_workspace(cfg->grants);
        const char *cwd = ws ? ws->path : GLOVE_ENV_HOME;
        if (chdir(cwd) < 0)
                return glove_error_set(err, errno, "mount.chdir", "chdir %s: %s", cwd, glove_errno_text(errno));
        return 0;
}

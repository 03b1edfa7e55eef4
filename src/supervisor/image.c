/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Retained ext4 images for managed sessions (issue 9, "retained_write";
 * docs/session-policy.md, "Resolution and retained images").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/supervisor/prepare.h"
#include "image.h"

/* The block major of loop devices (Documentation/admin-guide/devices.txt). */
#define SV_LOOP_MAJOR 7

static const char *const mkfs_candidates[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4" };

/* Root-owned and not writable by group or others. */
static bool root_safe(const struct stat *st) {
        return st->st_uid == 0 && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

static int dir_safe(const char *file, char *why, size_t cap) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", file);
        char *slash = strrchr(dir, '/');
        if (!slash)
                return -EINVAL;
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        struct stat st;
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || !root_safe(&st)) {
                snprintf(why, cap, "%s: its directory %s is not root-owned or is writable by group or others", file, dir);
                return -EPERM;
        }
        return 0;
}

int sv_mkfs_resolve(char out[PATH_MAX], struct glove_error *err) {
        char why[PATH_MAX * 2 + 128] = "";
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(mkfs_candidates); i++) {
                const char *cand = mkfs_candidates[i];
                struct stat lst, st;
                if (lstat(cand, &lst) < 0)
                        continue;
                char resolved[PATH_MAX];
                if (!realpath(cand, resolved)) {
                        snprintf(why, sizeof(why), "%s: cannot be resolved: %s", cand, strerror(errno));
                        continue;
                }
                if (stat(resolved, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR)) {
                        snprintf(why, sizeof(why), "%s: %s is not an executable regular file", cand, resolved);
                        continue;
                }
                if (!root_safe(&st)) {
                        snprintf(why, sizeof(why), "%s: %s is not root-owned or is writable by group or others", cand,
                                 resolved);
                        continue;
                }
                if (dir_safe(resolved, why, sizeof(why)) < 0 || dir_safe(cand, why, sizeof(why)) < 0)
                        continue;
                snprintf(out, PATH_MAX, "%s", resolved);
                return 0;
        }
        if (why[0])
                return glove_error_set(err, EPERM, "retained.mkfs_unsafe", "%s", why);
        return glove_error_set(err, ENOENT, "retained.no_mkfs",
                               "neither /usr/sbin/mkfs.ext4 nor /sbin/mkfs.ext4 exists (install e2fsprogs)");
}

/* PROC_USER_INIT_INO: the inode number of the initial user namespace. */
#define SV_INIT_USER_NS_INO 4026531837ULL

bool glove_supervisor_retained_probe(struct glove_error *why) {
        char mkfs[PATH_MAX];
        if (sv_mkfs_resolve(mkfs, why) < 0)
                return false;
        int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                glove_error_set(why, errno, "retained.no_loop_control", "/dev/loop-control cannot be opened read-write: %s",
                                strerror(errno));
                return false;
        }
        close(fd);
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2] = { 0 };
        bool cap = syscall(SYS_capget, &hdr, data) == 0 &&
                   (data[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32)));
        struct stat ns;
        bool init_ns = stat("/proc/self/ns/user", &ns) == 0 && (unsigned long long)ns.st_ino == SV_INIT_USER_NS_INO;
        if (geteuid() != 0 || !cap || !init_ns) {
                glove_error_set(why, EPERM, "retained.no_mount_capability",
                                "mounting an image needs effective uid 0 with CAP_SYS_ADMIN in the initial user "
                                "namespace (euid %u, CAP_SYS_ADMIN %s, %s user namespace)",
                                (unsigned)geteuid(), cap ? "effective" : "missing", init_ns ? "initial" : "a nested");
                return false;
        }
        return true;
}

/* The descriptor number the image has in mkfs.ext4 (its path there is
 * /proc/self/fd/3: the file gloved created, whatever its name now is). */
#define MKFS_IMAGE_FD 3

/* Runs mkfs.ext4 on the image open as image_fd, through that descriptor.
 * Output kept bounded for the message. */
static int run_mkfs(int image_fd, uid_t uid, gid_t gid, struct glove_error *err) {
        char mkfs[PATH_MAX];
        int r = sv_mkfs_resolve(mkfs, err);
        if (r < 0) {
                char why[sizeof(err->message)];
                snprintf(why, sizeof(why), "%s", err ? err->message : "mkfs.ext4 unusable");
                return glove_error_set(err, -r, "materialize.mkfs", "%s", why);
        }
        char ext[64];
        snprintf(ext, sizeof(ext), "root_owner=%u:%u,nodiscard", (unsigned)uid, (unsigned)gid);
        char image[32];
        snprintf(image, sizeof(image), "/proc/self/fd/%d", MKFS_IMAGE_FD);
        char *const argv[] = { "mkfs.ext4", "-F", "-q", "-t", "ext4", "-m", "0", "-E", ext, image, NULL };
        /* Above stdio and MKFS_IMAGE_FD, so that the dup2 below always
         * makes a new descriptor (one without FD_CLOEXEC). */
        _cleanup_close_ int src = fcntl(image_fd, F_DUPFD_CLOEXEC, MKFS_IMAGE_FD + 1);
        if (src < 0)
                return glove_error_set(err, errno, "materialize.mkfs", "dup: %s", strerror(errno));
        char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return glove_error_set(err, errno, "materialize.mkfs", "pipe: %s", strerror(errno));
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&at);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_adddup2(&fa, p[1], 2);
        posix_spawn_file_actions_adddup2(&fa, src, MKFS_IMAGE_FD);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &all);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        pid_t pid;
        r = posix_spawn(&pid, mkfs, &fa, &at, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        close(p[1]);
        if (r != 0) {
                close(p[0]);
                return glove_error_set(err, r, "materialize.mkfs", "%s: cannot be executed: %s", mkfs, strerror(r));
        }
        char out[GLOVE_SUPERVISOR_MKFS_OUTPUT_MAX + 1];
        size_t got = 0;
        for (;;) {
                char buf[512];
                ssize_t n = read(p[0], buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                size_t take = (size_t)n;
                if (take > GLOVE_SUPERVISOR_MKFS_OUTPUT_MAX - got)
                        take = GLOVE_SUPERVISOR_MKFS_OUTPUT_MAX - got;
                memcpy(out + got, buf, take);
                got += take;
        }
        close(p[0]);
        out[got] = '\0';
        for (size_t i = 0; i < got; i++)
                if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f)
                        out[i] = ' ';
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return glove_error_set(err, errno, "materialize.mkfs", "waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return glove_error_set(err, EIO, "materialize.mkfs", "%s failed (%s %d): %s", mkfs,
                                       WIFEXITED(status) ? "exit status" : "signal",
                                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), out);
        return 0;
}

/* Attaches image_fd to a free loop device with autoclear. *loop_fd holds
 * the device open (closing it with no mount detaches it). */
int sv_loop_attach_flags(int image_fd, const char *name, uint32_t flags, int *loop_fd, struct sv_image *img,
                             struct glove_error *err) {
        _cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (ctl < 0)
                return glove_error_set(err, errno, "materialize.loop", "/dev/loop-control: %s", strerror(errno));
        for (int attempt = 0; attempt < 64; attempt++) {
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                if (n < 0)
                        return glove_error_set(err, errno, "materialize.loop", "LOOP_CTL_GET_FREE: %s", strerror(errno));
                char dev[32];
                snprintf(dev, sizeof(dev), "/dev/loop%d", n);
                int fd = open(dev, O_RDWR | O_CLOEXEC);
                if (fd < 0) {
                        if (errno == ENOENT || errno == ENXIO)
                                continue; /* raced with a removal */
                        return glove_error_set(err, errno, "materialize.loop", "%s: %s", dev, strerror(errno));
                }
                /* What the name gave must be a loop device (major 7) before
                 * it is configured; from here on only the descriptor is used. */
                struct stat bst;
                if (fstat(fd, &bst) < 0 || !S_ISBLK(bst.st_mode) || major(bst.st_rdev) != SV_LOOP_MAJOR) {
                        close(fd);
                        return glove_error_set(err, EPERM, "materialize.loop", "%s is not a loop block device", dev);
                }
                struct loop_config cfg = { .fd = (unsigned)image_fd, .info = { .lo_flags = LO_FLAGS_AUTOCLEAR | flags } };
                size_t nl = strnlen(name, sizeof(cfg.info.lo_file_name) - 1);
                memcpy(cfg.info.lo_file_name, name, nl);
                if (ioctl(fd, LOOP_CONFIGURE, &cfg) < 0) {
                        int e = errno;
                        close(fd);
                        if (e == EBUSY)
                                continue; /* another attacher took it first */
                        return glove_error_set(err, e, "materialize.loop", "%s: LOOP_CONFIGURE: %s", dev, strerror(e));
                }
                struct stat st;
                if (fstat(fd, &st) < 0) {
                        int e = errno;
                        close(fd);
                        return glove_error_set(err, e, "materialize.loop", "%s: fstat: %s", dev, strerror(e));
                }
                snprintf(img->loop_device, sizeof(img->loop_device), "%s", dev);
                img->loop_rdev = st.st_rdev;
                *loop_fd = fd;
                return 0;
        }
        return glove_error_set(err, EBUSY, "materialize.loop", "no free loop device after 64 attempts");
}

int sv_loop_bound_writable(uint64_t dev, uint64_t ino, bool *live, struct glove_error *err) {
        *live = false;
        DIR *d = opendir("/sys/block");
        if (!d)
                return glove_error_set(err, errno, "materialize.loop", "/sys/block: %s", strerror(errno));
        struct dirent *e;
        while ((e = readdir(d))) {
                const char *p = e->d_name;
                if (strncmp(p, "loop", 4) != 0 || !p[4] || strspn(p + 4, "0123456789") != strlen(p + 4))
                        continue;
                char node[300];
                snprintf(node, sizeof(node), "/dev/%s", p);
                _cleanup_close_ int fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
                struct stat st;
                struct loop_info64 info;
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode) || major(st.st_rdev) != SV_LOOP_MAJOR ||
                    ioctl(fd, LOOP_GET_STATUS64, &info) < 0)
                        continue;
                /* lo_device is the kernel's huge_encode_dev form. */
                unsigned maj = (unsigned)((info.lo_device & 0xfff00) >> 8);
                unsigned min = (unsigned)((info.lo_device & 0xff) | ((info.lo_device >> 12) & 0xfff00));
                if (maj == major((dev_t)dev) && min == minor((dev_t)dev) && info.lo_inode == ino &&
                    !(info.lo_flags & LO_FLAGS_READ_ONLY)) {
                        *live = true;
                        break;
                }
        }
        closedir(d);
        return 0;
}

/* Mounts the loop device named dev, which must still be the block device
 * want_rdev that was configured through its descriptor, on the directory
 * open (O_PATH) as dir_fd, through that descriptor. The source is passed by
 * name, not as /proc/self/fd/N (which the kernel would resolve the same
 * way), because mountinfo shows the source string as given and tools and
 * recovery look for /dev/loopN there; the callers check the mounted root's
 * device afterwards, so a name swapped in between cannot pass unnoticed. */
static int mount_dev(const char *dev, uint64_t want_rdev, int dir_fd, unsigned long flags, const char *data) {
        struct stat st;
        if (stat(dev, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode) || st.st_rdev != (dev_t)want_rdev)
                return -EXDEV;
        char target[32];
        snprintf(target, sizeof(target), "/proc/self/fd/%d", dir_fd);
        return mount(dev, target, "ext4", flags, data) < 0 ? -errno : 0;
}

/* Detaches the mount whose root the O_PATH descriptor fd is, after checking
 * that it is one (STATX_ATTR_MOUNT_ROOT) and that it is what is expected:
 * on device want_dev, or on a loop device when want_dev is 0, and, when
 * nonzero, with mount id want_mnt and root inode want_ino. The unmount goes
 * through the descriptor (/proc/self/fd/N), so what was checked is what is
 * detached. *detached tells whether there was a mount to detach. */
static int detach_fd(int fd, uint64_t want_dev, uint64_t want_mnt, uint64_t want_ino, const char *name,
                     const char *code, bool *detached, struct glove_error *err) {
        *detached = false;
        struct statx stx;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &stx) < 0)
                return glove_error_set(err, errno, code, "%s: statx: %s", name, strerror(errno));
        if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return glove_error_set(err, ENOTSUP, code, "%s: the kernel does not say whether it is a mount; left alone",
                                       name);
        if (!(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return 0; /* nothing mounted there */
        dev_t dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        bool same = want_dev ? dev == (dev_t)want_dev : major(dev) == SV_LOOP_MAJOR;
        same = same && (!want_mnt || stx.stx_mnt_id == want_mnt) && (!want_ino || stx.stx_ino == want_ino);
        if (!same)
                return glove_error_set(err, EPERM, code,
                                       "%s: what is mounted there is not the session's retained image (device %u:%u); "
                                       "left alone",
                                       name, major(dev), minor(dev));
        char path[32];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (umount2(path, MNT_DETACH) < 0)
                return glove_error_set(err, errno, code, "%s: unmount: %s", name, strerror(errno));
        *detached = true;
        return 0;
}

static int loop_attach(int image_fd, const char *name, int *loop_fd, struct sv_image *img, struct glove_error *err) {
        return sv_loop_attach_flags(image_fd, name, 0, loop_fd, img, err);
}

static int mkdir_open(int dirfd, const char *name, bool *created, int *out, struct glove_error *err) {
        if (mkdirat(dirfd, name, 0700) == 0) {
                if (created)
                        *created = true;
        } else if (errno != EEXIST) {
                int e = errno;
                return glove_error_set(err, e, e == ENOSPC || e == EDQUOT ? "materialize.root_full" : "materialize.image",
                                       "%s: mkdir: %s", name, strerror(e));
        }
        int r = glove_fd_open_beneath(dirfd, name, O_PATH | O_DIRECTORY, out, NULL);
        if (r < 0)
                return glove_error_set(err, -r, "materialize.image", "%s: not a directory under the materialization root: %s",
                                       name, strerror(-r));
        return 0;
}

int sv_image_create(int root_fd, const char *root, const char *session, const char *alias, uint64_t size,
                    uid_t uid, gid_t gid, struct sv_image *img, struct glove_error *err) {
        *img = (struct sv_image){ .size = size };
        char name[300];
        snprintf(name, sizeof(name), "%s.ext4", alias);
        if (snprintf(img->mount_path, sizeof(img->mount_path), "%s/mounts/%s/%s", root, session, alias) >=
                    (int)sizeof(img->mount_path))
                return glove_error_set(err, ENAMETOOLONG, "materialize.image", "%s: path too long", alias);
        _cleanup_close_ int images = -1, isess = -1, mounts = -1, msess = -1, mdir = -1, image = -1, loop = -1, top = -1;
        bool isess_new = false, msess_new = false, mdir_new = false, image_new = false;
        int r = mkdir_open(root_fd, "images", NULL, &images, err);
        if (r >= 0)
                r = mkdir_open(images, session, &isess_new, &isess, err);
        if (r < 0)
                goto fail;
        image = openat(isess, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (image < 0) {
                int e = errno;
                r = glove_error_set(err, e,
                                    e == ENOSPC || e == EDQUOT ? "materialize.root_full" : "materialize.image",
                                    e == EEXIST ? "%s: an image of this session already exists (images are never reused)"
                                                : "%s: cannot create the image: %s",
                                    alias, strerror(e));
                goto fail;
        }
        image_new = true;
        /* The host file system keeps SV_IMAGE_RESERVE_BYTES free after the
         * image: sessions cannot fill the disk gloved's journals live on. */
        struct statvfs vfs;
        if (fstatvfs(image, &vfs) == 0 &&
            (uint64_t)vfs.f_bavail * vfs.f_frsize < size + (uint64_t)SV_IMAGE_RESERVE_BYTES) {
                r = glove_error_set(err, ENOSPC, "materialize.root_full",
                                    "%s: an image of %llu bytes would leave less than %llu MiB free under the "
                                    "materialization root (%llu bytes available)",
                                    alias, (unsigned long long)size,
                                    (unsigned long long)(SV_IMAGE_RESERVE_BYTES >> 20),
                                    (unsigned long long)vfs.f_bavail * vfs.f_frsize);
                goto fail;
        }
        if (fchmod(image, 0600) < 0 || fallocate(image, 0, 0, (off_t)size) < 0) {
                int e = errno;
                r = glove_error_set(err, e,
                                    e == ENOSPC || e == EDQUOT ? "materialize.root_full" : "materialize.image",
                                    e == ENOSPC || e == EDQUOT
                                            ? "%s: the materialization root has no room for an image of %llu bytes"
                                            : "%s: cannot allocate an image of %llu bytes: %s",
                                    alias, (unsigned long long)size, strerror(e));
                goto fail;
        }
        /* Again once allocated: another session's image may have been
         * allocated between the check above and ours (prepares run on
         * several threads). */
        if (fstatvfs(image, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < (uint64_t)SV_IMAGE_RESERVE_BYTES) {
                r = glove_error_set(err, ENOSPC, "materialize.root_full",
                                    "%s: after allocating the image less than %llu MiB stay free under the "
                                    "materialization root",
                                    alias, (unsigned long long)(SV_IMAGE_RESERVE_BYTES >> 20));
                goto fail;
        }
        r = run_mkfs(image, uid, gid, err);
        if (r < 0)
                goto fail;
        /* mkfs never shrinks a file, but re-check: the whole size stays allocated. */
        struct stat st;
        errno = 0;
        if (fallocate(image, 0, 0, (off_t)size) < 0 || fstat(image, &st) < 0 || (uint64_t)st.st_size != size) {
                int e = errno ? errno : EIO;
                r = glove_error_set(err, e, e == ENOSPC ? "materialize.root_full" : "materialize.image",
                                    "%s: the image is not %llu bytes after mkfs", alias, (unsigned long long)size);
                goto fail;
        }
        img->image_dev = st.st_dev;
        img->image_ino = st.st_ino;
        r = loop_attach(image, name, &loop, img, err);
        if (r < 0)
                goto fail;
        r = mkdir_open(root_fd, "mounts", NULL, &mounts, err);
        if (r >= 0)
                r = mkdir_open(mounts, session, &msess_new, &msess, err);
        if (r >= 0)
                r = mkdir_open(msess, alias, &mdir_new, &mdir, err);
        if (r < 0)
                goto fail;
        r = mount_dev(img->loop_device, img->loop_rdev, mdir, MS_NOSUID | MS_NODEV, NULL);
        if (r < 0) {
                r = glove_error_set(err, -r, "materialize.mount", "%s: mounting %s: %s", alias, img->loop_device,
                                    strerror(-r));
                goto fail;
        }
        img->mounted = true;
        r = glove_fd_open_beneath(msess, alias, O_PATH | O_DIRECTORY, &top, NULL);
        struct statx stx;
        if (r < 0 || statx(top, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &stx) < 0 ||
            makedev(stx.stx_dev_major, stx.stx_dev_minor) != img->loop_rdev) {
                r = glove_error_set(err, r < 0 ? -r : EIO, "materialize.mount", "%s: the mounted image is not at %s", alias,
                                    img->mount_path);
                goto fail;
        }
        img->root_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        img->root_ino = stx.stx_ino;
        img->mnt_id = stx.stx_mnt_id;
        return 0; /* closing loop: the mount holds the device; autoclear detaches it after the last unmount */
fail:
        if (img->mounted) {
                /* Only what this call mounted: the loop device it configured. */
                _cleanup_close_ int at = -1;
                bool gone;
                if (msess >= 0 && glove_fd_open_beneath(msess, alias, O_PATH | O_DIRECTORY, &at, NULL) >= 0)
                        (void)detach_fd(at, img->loop_rdev, 0, 0, alias, "materialize.mount", &gone, NULL);
                img->mounted = false;
        }
        if (loop >= 0) {
                close(loop); /* autoclear: no mount, so the device detaches */
                loop = -1;
        }
        if (mdir_new)
                (void)unlinkat(msess, alias, AT_REMOVEDIR);
        if (msess_new)
                (void)unlinkat(mounts, session, AT_REMOVEDIR);
        if (image_new)
                (void)unlinkat(isess, name, 0);
        if (isess_new)
                (void)unlinkat(images, session, AT_REMOVEDIR);
        return r;
}

int sv_image_release(struct sv_image *img, struct glove_error *err) {
        if (!img->mounted)
                return 0;
        img->mounted = false;
        _cleanup_close_ int fd = -1;
        int r = glove_fd_open_nofollow(img->mount_path, O_PATH | O_DIRECTORY, &fd, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return glove_error_set(err, -r, "materialize.mount", "%s: %s", img->mount_path, strerror(-r));
        bool gone;
        return detach_fd(fd, img->root_dev, img->mnt_id, img->root_ino, img->mount_path, "materialize.mount", &gone, err);
}

int sv_image_cleanup(int root_fd, const char *root, const char *session, const char *alias, bool remove_image,
                     struct glove_error *err) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/mounts/%s/%s", root, session, alias);
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "mounts/%s/%s", session, alias);
        /* Resolved beneath the root by descriptor; only a retained image's
         * mount (an ext4 on a loop device) is detached. */
        _cleanup_close_ int at = -1;
        int r = glove_fd_open_beneath(root_fd, rel, O_PATH | O_DIRECTORY, &at, NULL);
        if (r < 0 && r != -ENOENT)
                return glove_error_set(err, -r, "materialize.cleanup", "%s: %s", path, strerror(-r));
        bool gone = false;
        struct statfs sfs;
        if (r >= 0 && fstatfs(at, &sfs) == 0 && (unsigned long)sfs.f_type != EXT4_SUPER_MAGIC) {
                /* Not an ext4 at all: not an image, whatever is there. */
                struct statx stx;
                if (statx(at, "", AT_EMPTY_PATH, 0, &stx) == 0 && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                        return glove_error_set(err, EPERM, "materialize.cleanup",
                                               "%s: what is mounted there is not a retained image; left alone", path);
        } else if (r >= 0) {
                r = detach_fd(at, 0, 0, 0, path, "materialize.cleanup", &gone, err);
                if (r < 0)
                        return r;
        }
        if (unlinkat(root_fd, rel, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return glove_error_set(err, errno, "materialize.cleanup", "%s: %s", path, strerror(errno));
        if (remove_image) {
                snprintf(rel, sizeof(rel), "images/%s/%s.ext4", session, alias);
                if (unlinkat(root_fd, rel, 0) < 0 && errno != ENOENT)
                        return glove_error_set(err, errno, "materialize.cleanup", "%s/%s: %s", root, rel,
                                               strerror(errno));
                /* The stage's baseline goes with its image (prepare_stage.c). */
                snprintf(rel, sizeof(rel), "images/%s/%s.baseline.json", session, alias);
                if (unlinkat(root_fd, rel, 0) < 0 && errno != ENOENT)
                        return glove_error_set(err, errno, "materialize.cleanup", "%s/%s: %s", root, rel,
                                               strerror(errno));
        }
        return 0;
}

void sv_image_cleanup_session(int root_fd, const char *session) {
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "mounts/%s", session);
        (void)unlinkat(root_fd, rel, AT_REMOVEDIR);
        snprintf(rel, sizeof(rel), "images/%s", session);
        (void)unlinkat(root_fd, rel, AT_REMOVEDIR);
}

int sv_image_freeze(int root_fd, const char *session, const char *alias, uint64_t ino, uint64_t size,
                    struct glove_error *err) {
        char rel[PATH_MAX], name[300];
        snprintf(name, sizeof(name), "%s.ext4", alias);
        if (snprintf(rel, sizeof(rel), "images/%s/%s", session, name) >= (int)sizeof(rel))
                return glove_error_set(err, ENAMETOOLONG, "materialize.freeze", "%s: path too long", alias);
        _cleanup_close_ int image = -1, mounts = -1, msess = -1, mdir = -1, loop = -1;
        int r = glove_fd_open_beneath(root_fd, rel, O_RDONLY, &image, NULL);
        if (r < 0)
                return glove_error_set(err, -r, "materialize.freeze", "%s: the image is missing: %s", alias, strerror(-r));
        /* The descriptor and quota checks: the recorded file, at most the
         * recorded size. */
        struct stat st;
        if (fstat(image, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != ino || (uint64_t)st.st_size > size)
                return glove_error_set(err, EPERM, "materialize.freeze",
                                       "%s: the image is not the one recorded (inode or size differs): left alone", alias);
        struct sv_image img = { 0 };
        r = sv_loop_attach_flags(image, name, LO_FLAGS_READ_ONLY, &loop, &img, err);
        if (r < 0)
                return r;
        r = mkdir_open(root_fd, "mounts", NULL, &mounts, err);
        if (r >= 0)
                r = mkdir_open(mounts, session, NULL, &msess, err);
        if (r >= 0)
                r = mkdir_open(msess, alias, NULL, &mdir, err);
        if (r < 0)
                return r;
        /* Read-only, and noload: the journal of an image whose host went
         * down is not replayed (that would write); what is seen is what was
         * on disk. Checked like sv_image_create's. */
        r = mount_dev(img.loop_device, img.loop_rdev, mdir, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "noload");
        if (r < 0)
                return glove_error_set(err, -r, "materialize.freeze", "%s: mounting %s read-only: %s", alias,
                                       img.loop_device, strerror(-r));
        /* What is mounted there now is the device configured above. */
        _cleanup_close_ int top = -1;
        struct stat tst;
        if (glove_fd_open_beneath(msess, alias, O_PATH | O_DIRECTORY, &top, NULL) < 0 || fstat(top, &tst) < 0 ||
            tst.st_dev != (dev_t)img.loop_rdev) {
                if (top >= 0) {
                        bool gone;
                        (void)detach_fd(top, img.loop_rdev, 0, 0, alias, "materialize.freeze", &gone, NULL);
                }
                return glove_error_set(err, EIO, "materialize.freeze", "%s: the mounted image is not at mounts/%s/%s",
                                       alias, session, alias);
        }
        return 0; /* closing loop: autoclear after the last unmount */
}

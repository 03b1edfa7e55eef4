/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/random.h"

#define TEMP_HEX 16
#define TEMP_SUFFIX ".tmp"
#define TEMP_MAX (GLOVE_FILE_REPLACE_NAME_MAX + TEMP_HEX + 8)

static int fail(struct glove_error *err, int r, const char *name, const char *what) {
        if (r == -EEXIST)
                return glove_error_set(err, EEXIST, "file.exists", "%s exists already; not replaced", name);
        return glove_error_set(err, -r, "file.replace", "%s: %s: %s", name, what, glove_errno_text(-r));
}

static int temp_name(const char *name, char *out, size_t size) {
        uint8_t rnd[TEMP_HEX / 2];
        int r = glove_random_bytes(rnd, sizeof(rnd));
        if (r < 0)
                return r;
        char hex[TEMP_HEX + 1];
        for (size_t i = 0; i < sizeof(rnd); i++)
                snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
        int n = snprintf(out, size, ".%s.%s" TEMP_SUFFIX, name, hex);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Writes, sets the mode and syncs (as flags ask) an open new file. */
static int fill(int fd, const void *data, size_t len, mode_t mode, unsigned flags) {
        int r = len ? glove_fd_write_all(fd, data, len) : 0;
        if (r == 0 && fchmod(fd, mode & 07777) < 0)
                r = -errno;
        if (r == 0 && !(flags & GLOVE_FILE_REPLACE_NO_SYNC) && fsync(fd) < 0)
                r = -errno;
        return r;
}

/* Links the unnamed file fd as dirfd/as: by AT_EMPTY_PATH (needs
 * CAP_DAC_READ_SEARCH on older kernels), else through /proc/self/fd. */
static int link_tmpfile(int fd, int dirfd, const char *as) {
        if (linkat(fd, "", dirfd, as, AT_EMPTY_PATH) == 0)
                return 0;
        if (errno == EEXIST)
                return -EEXIST;
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, proc, dirfd, as, AT_SYMLINK_FOLLOW) == 0)
                return 0;
        return -errno;
}

static int sync_dir(int dirfd) {
        if (fsync(dirfd) == 0)
                return 0;
        if (errno != EBADF)
                return -errno;
        /* An O_PATH descriptor cannot be synced: reopen it. */
        _cleanup_close_ int d = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d < 0 || fsync(d) < 0)
                return -errno;
        return 0;
}

/* Moves the named temporary tmp to name (as flags ask); removes tmp when
 * that fails. */
static int commit(int dirfd, const char *tmp, const char *name, unsigned flags) {
        int r = 0;
        if (flags & GLOVE_FILE_REPLACE_NOREPLACE) {
                if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) < 0) {
                        r = -errno;
                        /* File systems without RENAME_NOREPLACE: link is
                         * just as exclusive. */
                        if (r == -EINVAL && linkat(dirfd, tmp, dirfd, name, 0) == 0)
                                r = 0;
                        else if (r == -EINVAL)
                                r = -errno;
                        (void)unlinkat(dirfd, tmp, 0);
                }
        } else if (renameat(dirfd, tmp, dirfd, name) < 0) {
                r = -errno;
                (void)unlinkat(dirfd, tmp, 0);
        }
        return r;
}

/* The O_TMPFILE way. Returns 0, a -errno to report, or 1 when the file
 * system cannot make or link unnamed files (the caller falls back). */
static int replace_unnamed(int dirfd, const char *name, const char *tmp, const void *data, size_t len, mode_t mode,
                           unsigned flags, const char **what) {
        _cleanup_close_ int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode & 0777);
        if (fd < 0) {
                if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL || errno == ENOENT)
                        return 1;
                *what = "create";
                return -errno;
        }
        int r = fill(fd, data, len, mode, flags);
        if (r < 0) {
                *what = "write";
                return r;
        }
        if (flags & GLOVE_FILE_REPLACE_NOREPLACE) {
                r = link_tmpfile(fd, dirfd, name);
                if (r == 0 || r == -EEXIST)
                        return r;
        } else {
                r = link_tmpfile(fd, dirfd, tmp);
                if (r == 0) {
                        *what = "rename";
                        return commit(dirfd, tmp, name, flags);
                }
        }
        /* Neither AT_EMPTY_PATH nor /proc: fall back, unless the failure is
         * one a named file would meet too. */
        if (r == -ENOSPC || r == -EDQUOT || r == -EROFS || r == -EIO) {
                *what = "link";
                return r;
        }
        return 1;
}

int glove_file_replace(int dirfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
                       struct glove_error *err) {
        if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
            (!data && len))
                return glove_error_set(err, EINVAL, "file.invalid_argument", "%s: not a file name",
                                       name ? name : "(null)");
        if (strlen(name) > GLOVE_FILE_REPLACE_NAME_MAX)
                return glove_error_set(err, ENAMETOOLONG, "file.invalid_argument", "%.64s...: name too long",
                                       name);
        char tmp[TEMP_MAX];
        int r = temp_name(name, tmp, sizeof(tmp));
        if (r < 0)
                return fail(err, r, name, "random name");
        const char *what = "create";
        r = flags & GLOVE_FILE_REPLACE_NAMED_TEMP ? 1 : replace_unnamed(dirfd, name, tmp, data, len, mode, flags, &what);
        if (r < 0)
                return fail(err, r, name, what);
        if (r == 1) {
                _cleanup_close_ int fd =
                        openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
                if (fd < 0)
                        return fail(err, -errno, name, "create a temporary file");
                r = fill(fd, data, len, mode, flags);
                if (r < 0) {
                        (void)unlinkat(dirfd, tmp, 0);
                        return fail(err, r, name, "write");
                }
                r = commit(dirfd, tmp, name, flags);
                if (r < 0)
                        return fail(err, r, name, "rename");
        }
        if (flags & GLOVE_FILE_REPLACE_SYNC_DIR) {
                r = sync_dir(dirfd);
                if (r < 0)
                        return fail(err, r, name, "fsync of the directory");
        }
        return 0;
}

bool glove_file_replace_temp_target(const char *entry, char *target, size_t size) {
        size_t n = entry ? strlen(entry) : 0;
        const size_t tail = 1 + TEMP_HEX + strlen(TEMP_SUFFIX); /* ".<hex>.tmp" */
        if (n < 1 + 1 + tail || entry[0] != '.' || strcmp(entry + n - strlen(TEMP_SUFFIX), TEMP_SUFFIX) != 0)
                return false;
        const char *dot = entry + n - tail;
        if (*dot != '.')
                return false;
        for (size_t i = 1; i <= TEMP_HEX; i++)
                if (!strchr("0123456789abcdef", dot[i]) || !dot[i])
                        return false;
        size_t tl = (size_t)(dot - entry) - 1;
        if (target) {
                if (tl + 1 > size)
                        return false;
                memcpy(target, entry + 1, tl);
                target[tl] = '\0';
        }
        return true;
}

int glove_file_replace_sweep(int dirfd, const char *name) {
        int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
                int r = -errno;
                if (dfd >= 0)
                        close(dfd);
                return r;
        }
        int removed = 0;
        struct dirent *e;
        char target[TEMP_MAX];
        while ((e = readdir(d)))
                if (glove_file_replace_temp_target(e->d_name, target, sizeof(target)) &&
                    strcmp(target, name) == 0 && unlinkat(dirfd, e->d_name, 0) == 0)
                        removed++;
        closedir(d);
        return removed;
}

static bool protected_same_identity(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
               a->st_uid == b->st_uid && a->st_nlink == b->st_nlink && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int protected_check(const struct stat *st, const char *path, uid_t owner_uid, size_t max_bytes,
                           const struct glove_protected_file_codes *c, struct glove_error *err) {
        if (!S_ISREG(st->st_mode))
                return glove_error_set(err, EINVAL, c->not_regular, "%s: not a regular file", path);
        if (st->st_uid != owner_uid)
                return glove_error_set(err, EPERM, c->owner, "%s: owned by uid %u, expected uid %u (the user it is "
                                       "loaded as)", path, (unsigned)st->st_uid, (unsigned)owner_uid);
        if ((st->st_mode & 07777) != 0600)
                return glove_error_set(err, EPERM, c->mode, "%s: mode %04o, expected 0600 (chmod 0600 it)", path,
                                       (unsigned)(st->st_mode & 07777));
        if (st->st_nlink != 1)
                return glove_error_set(err, EPERM, c->links, "%s: %lu hard links, expected exactly 1", path,
                                       (unsigned long)st->st_nlink);
        if ((uint64_t)st->st_size > max_bytes)
                return glove_error_set(err, EFBIG, c->too_large, "%s: %lld bytes, the limit is %zu", path,
                                       (long long)st->st_size, max_bytes);
        return 0;
}

int glove_file_load_protected(const char *path, uid_t owner_uid, size_t max_bytes,
                              const struct glove_protected_file_codes *c, void (*after_read)(int fd, const char *path),
                              char **out, size_t *out_len, struct glove_error *err) {
        *out = NULL;
        *out_len = 0;
        if (!path || path[0] != '/')
                return glove_error_set(err, EINVAL, c->path_relative, "%s: the path must be absolute",
                                       path ? path : "(null)");
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                int e = errno;
                if (e == ELOOP)
                        return glove_error_set(err, ELOOP, c->symlink, "%s: is a symbolic link; name the file itself",
                                               path);
                return glove_error_set(err, e, c->open, "%s: cannot open: %s", path, strerror(e));
        }
        struct stat before, after;
        if (fstat(fd, &before) < 0)
                return glove_error_set(err, errno, c->open, "%s: fstat: %s", path, strerror(errno));
        int r = protected_check(&before, path, owner_uid, max_bytes, c, err);
        if (r < 0)
                return r;
        /* Bounded by the size fstat saw: growth after it fails the read
         * (-EFBIG) and is reported as a change below. */
        size_t size = (size_t)before.st_size;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        r = glove_fd_read_bounded(fd, size, &buf, &n, NULL);
        bool grew = r == -EFBIG;
        if (r == -ENOMEM)
                return glove_error_set(err, ENOMEM, c->no_memory, "%s: out of memory", path);
        if (r < 0 && !grew)
                return glove_error_set(err, -r, c->read, "%s: read: %s", path, strerror(-r));
        if (after_read)
                after_read(fd, path);
        if (fstat(fd, &after) < 0)
                return glove_error_set(err, errno, c->read, "%s: fstat: %s", path, strerror(errno));
        if (grew || n != size || !protected_same_identity(&before, &after))
                return glove_error_set(err, EAGAIN, c->changed,
                                       "%s: changed while it was read; replace it atomically (write a new file, "
                                       "chmod 0600, rename it over the old one) and retry",
                                       path);
        *out = TAKE_PTR(buf);
        *out_len = n;
        return 0;
}

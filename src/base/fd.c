/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/path.h"

static int sys_openat2(int dirfd, const char *path, int flags, uint64_t resolve) {
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
                .resolve = resolve,
        };
        if (flags & O_CREAT)
                how.mode = 0600;
        return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

static int report(int e, const char *path, struct glove_error *err) {
        if (e == ELOOP)
                return glove_error_set(err, ELOOP, "path.symlink",
                                       "%s: a component is a symbolic link (pass the resolved path)", path);
        if (e == ENOENT)
                return glove_error_set(err, ENOENT, "path.missing", "%s: no such file or directory", path);
        if (e == EXDEV)
                return glove_error_set(err, EXDEV, "path.escape", "%s: resolves outside its root", path);
        return glove_error_set(err, e, "path.open", "%s: %s", path, glove_errno_text(e)); /* also in the sandbox child */
}

/* Fallback for kernels without openat2: walk component by component. */
static int walk_nofollow(int dirfd, const char *path, int flags, int *out_fd) {
        _cleanup_close_ int cur = -1;
        const char *p = path;
        if (*p == '/') {
                cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                while (*p == '/')
                        p++;
        } else {
                cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        }
        if (cur < 0)
                return -errno;
        if (!*p) {
                *out_fd = TAKE_FD(cur);
                return 0;
        }
        char comp[256];
        for (;;) {
                const char *end = strchrnul(p, '/');
                size_t n = (size_t)(end - p);
                if (n >= sizeof(comp))
                        return -ENAMETOOLONG;
                if ((n == 2 && p[0] == '.' && p[1] == '.'))
                        return -EXDEV;
                memcpy(comp, p, n);
                comp[n] = '\0';
                while (*end == '/')
                        end++;
                bool last = *end == '\0';
                int fd = openat(cur, comp, last ? (flags | O_NOFOLLOW | O_CLOEXEC) : (O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC), 0600);
                if (fd < 0)
                        return errno == ENOTDIR ? -ELOOP : -errno;
                if (last) {
                        struct stat st;
                        if ((flags & O_PATH) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
                                close(fd);
                                return -ELOOP;
                        }
                        *out_fd = fd;
                        return 0;
                }
                close(cur);
                cur = fd;
                p = end;
        }
}

int glove_fd_open_nofollow(const char *abs_path, int flags, int *out_fd, struct glove_error *err) {
        *out_fd = -1;
        if (!abs_path || abs_path[0] != '/')
                return glove_error_set(err, EINVAL, "path.relative", "%s: not an absolute path", abs_path ? abs_path : "(null)");
        int fd = sys_openat2(AT_FDCWD, abs_path, flags, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
        if (fd < 0 && errno == ENOSYS) {
                int r = walk_nofollow(AT_FDCWD, abs_path, flags, &fd);
                if (r < 0)
                        return report(-r, abs_path, err);
        } else if (fd < 0) {
                return report(errno, abs_path, err);
        }
        /* O_PATH|O_NOFOLLOW on a final symlink opens the link itself. */
        struct stat st;
        if ((flags & O_PATH) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
                close(fd);
                return report(ELOOP, abs_path, err);
        }
        *out_fd = fd;
        return 0;
}

int glove_fd_open_beneath(int dirfd, const char *rel, int flags, int *out_fd, struct glove_error *err) {
        *out_fd = -1;
        int fd = sys_openat2(dirfd, rel, flags, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH);
        if (fd < 0 && errno == ENOSYS) {
                if (rel[0] == '/')
                        return report(EXDEV, rel, err);
                int r = walk_nofollow(dirfd, rel, flags, &fd);
                if (r < 0)
                        return report(-r, rel, err);
        } else if (fd < 0) {
                return report(errno, rel, err);
        }
        struct stat st;
        if ((flags & O_PATH) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
                close(fd);
                return report(ELOOP, rel, err);
        }
        *out_fd = fd;
        return 0;
}

int glove_fd_write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int glove_fd_read_exact(int fd, void *buf, size_t len) {
        char *p = buf;
        while (len > 0) {
                ssize_t n = read(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EPIPE;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int glove_fd_ensure_std(void) {
        for (int fd = 0; fd <= 2; fd++) {
                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                int n = open("/dev/null", O_RDWR);
                if (n < 0)
                        return -errno;
                if (n != fd) {
                        /* A lower number was free too; it gets fixed on its own turn. */
                        if (dup2(n, fd) < 0) {
                                int e = errno;
                                close(n);
                                return -e;
                        }
                        close(n);
                }
        }
        return 0;
}

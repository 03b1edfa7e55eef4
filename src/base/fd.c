/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
        /* O_PATH|O_NOFOLLOW on a final symlink opens the link itself; with
         * O_DIRECTORY the kernel refuses one (ENOTDIR), so no check then. */
        struct stat st;
        if ((flags & O_PATH) && !(flags & O_DIRECTORY) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
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
        if ((flags & O_PATH) && !(flags & O_DIRECTORY) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
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

int glove_fd_pair_pipe(struct glove_fd_pair *p, int flags) {
        p->fd[0] = p->fd[1] = -1;
        int fds[2];
        if (pipe2(fds, flags | O_CLOEXEC) < 0)
                return -errno;
        p->fd[0] = fds[0];
        p->fd[1] = fds[1];
        return 0;
}

int glove_fd_pair_socketpair(struct glove_fd_pair *p, int type) {
        p->fd[0] = p->fd[1] = -1;
        int fds[2];
        if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) < 0)
                return -errno;
        p->fd[0] = fds[0];
        p->fd[1] = fds[1];
        return 0;
}

/* First buffer for input of unknown size (pipes, /proc files). */
#define READ_BOUNDED_FIRST 4096

/* Moves the first used bytes of *buf into a new buffer of cap + 1 bytes,
 * zeroing and freeing the old one. */
static int grow(char **buf, size_t used, size_t cap) {
        char *n = malloc(cap + 1);
        if (!n)
                return -ENOMEM;
        memcpy(n, *buf, used);
        explicit_bzero(*buf, used);
        free(*buf);
        *buf = n;
        return 0;
}

/* The reader behind both public functions; label (or NULL) starts every
 * message. */
static int read_bounded(int fd, size_t max, const char *label, char **out, size_t *len,
                        struct glove_error *err) {
        const char *sep = label ? ": " : "";
        label = label ? label : "";
        /* cap: bytes the buffer can take before the NUL; one more than max
         * at most, so that a file of max + 1 bytes is noticed. */
        size_t cap = max < READ_BOUNDED_FIRST ? max + 1 : READ_BOUNDED_FIRST;
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
                cap = (uint64_t)st.st_size < max ? (size_t)st.st_size + 1 : max + 1;
        _cleanup_free_ char *buf = malloc(cap + 1);
        if (!buf)
                return glove_error_set(err, ENOMEM, "file.no_memory", "%s%sout of memory", label, sep);
        size_t got = 0;
        for (;;) {
                if (got == cap) {
                        size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
                        if (grow(&buf, got, ncap) < 0) {
                                explicit_bzero(buf, got);
                                return glove_error_set(err, ENOMEM, "file.no_memory", "%s%sout of memory", label, sep);
                        }
                        cap = ncap;
                }
                ssize_t n = read(fd, buf + got, cap - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        explicit_bzero(buf, got);
                        return glove_error_set(err, e, "file.read", "%s%sread: %s", label, sep, strerror(e));
                }
                if (n == 0)
                        break;
                got += (size_t)n;
                if (got > max) {
                        explicit_bzero(buf, got);
                        return glove_error_set(err, EFBIG, "file.too_large", "%s%slarger than %zu bytes", label,
                                               sep, max);
                }
        }
        buf[got] = '\0';
        *out = TAKE_PTR(buf);
        *len = got;
        return 0;
}

int glove_fd_read_bounded(int fd, size_t max, char **out, size_t *len, struct glove_error *err) {
        if (out)
                *out = NULL;
        if (len)
                *len = 0;
        if (!out || !len || max > GLOVE_FD_READ_BOUNDED_MAX)
                return glove_error_set(err, EINVAL, "file.invalid_argument", "no output, or a bound over %zu bytes",
                                       GLOVE_FD_READ_BOUNDED_MAX);
        return read_bounded(fd, max, NULL, out, len, err);
}

int glove_file_read_bounded(int dirfd, const char *path, int open_flags, size_t max, char **out, size_t *len,
                            struct glove_error *err) {
        if (out)
                *out = NULL;
        if (len)
                *len = 0;
        if (!out || !len || !path || max > GLOVE_FD_READ_BOUNDED_MAX)
                return glove_error_set(err, EINVAL, "file.invalid_argument",
                                       "no path or output, or a bound over %zu bytes", GLOVE_FD_READ_BOUNDED_MAX);
        if ((open_flags & (O_ACCMODE | O_CREAT | O_TRUNC | O_PATH)) != 0 || (open_flags & O_TMPFILE) == O_TMPFILE)
                return glove_error_set(err, EINVAL, "file.invalid_argument",
                                       "%s: a bounded read opens for reading only", path);
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | open_flags);
        if (fd < 0)
                return glove_error_set(err, errno, "file.open", "%s: cannot open: %s", path, strerror(errno));
        return read_bounded(fd, max, path, out, len, err);
}

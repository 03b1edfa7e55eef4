/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/remote_executor/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Opens fd_dir/orig_fd write-only and non-blocking, and keeps it only when
 * it is the object of orig (same type, st_dev, st_ino). Returns the new
 * descriptor, or -1 when there is none (any failure: the caller falls
 * back).
 */
static int reopen_private(int orig_fd, const char *fd_dir, const struct stat *orig) {
        if (!fd_dir)
                return -1;
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/%d", fd_dir, orig_fd);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -1;
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        struct stat st;
        if (fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != (orig->st_mode & S_IFMT) || st.st_dev != orig->st_dev ||
            st.st_ino != orig->st_ino) {
                close(fd);
                return -1;
        }
        return fd;
}

int glove_remote_executor_output_open(int orig_fd, const char *fd_dir, struct glove_remote_executor_output *out,
                                      struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "executor.invalid_argument", "no output to prepare");
        *out = (struct glove_remote_executor_output){ .fd = -1, .orig_fd = orig_fd,
                                                       .mode = GLOVE_REMOTE_EXECUTOR_OUTPUT_DIRECT };
        if (orig_fd < 0)
                return glove_error_set(err, EINVAL, "executor.invalid_argument", "no output descriptor");
        struct stat st;
        if (fstat(orig_fd, &st) < 0)
                return glove_error_set(err, errno, "executor.internal", "cannot examine standard output: %s",
                                       glove_errno_text(errno));
        int flags = fcntl(orig_fd, F_GETFL);
        if (flags < 0)
                return glove_error_set(err, errno, "executor.internal", "cannot read standard output's flags: %s",
                                       glove_errno_text(errno));
        if (S_ISREG(st.st_mode) || (flags & O_NONBLOCK)) {
                out->fd = orig_fd;
                return 0;
        }
        if (S_ISSOCK(st.st_mode)) {
                out->fd = orig_fd;
                out->mode = GLOVE_REMOTE_EXECUTOR_OUTPUT_SOCKET;
                return 0;
        }
        int fd = reopen_private(orig_fd, fd_dir, &st);
        if (fd >= 0) {
                out->fd = fd;
                out->mode = GLOVE_REMOTE_EXECUTOR_OUTPUT_REOPENED;
                return 0;
        }
        /* The last resort: the shared description, cleared again on release. */
        if (fcntl(orig_fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return glove_error_set(err, errno, "executor.internal", "cannot make standard output non-blocking: %s",
                                       glove_errno_text(errno));
        out->fd = orig_fd;
        out->mode = GLOVE_REMOTE_EXECUTOR_OUTPUT_SHARED;
        return 0;
}

int glove_remote_executor_output_release(struct glove_remote_executor_output *out) {
        if (!out)
                return 0;
        int saved = errno, r = 0;
        if (out->mode == GLOVE_REMOTE_EXECUTOR_OUTPUT_REOPENED && out->fd >= 0) {
                (void)close(out->fd);
        } else if (out->mode == GLOVE_REMOTE_EXECUTOR_OUTPUT_SHARED) {
                int flags = fcntl(out->orig_fd, F_GETFL);
                if (flags < 0 || fcntl(out->orig_fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                        r = -errno;
        }
        out->mode = GLOVE_REMOTE_EXECUTOR_OUTPUT_DIRECT;
        out->fd = -1;
        errno = saved;
        return r;
}

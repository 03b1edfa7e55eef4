/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper's executable (keeper.h, "the executable and its launch";
 * docs/recovery.md, "The keeper"): gloved finds, opens and verifies
 * glove-keeper once; at each launch it checks it again and double-forks a
 * child that only moves descriptors and execs it with the launch
 * (keeper_launch.c encodes it; keeper_main.c is glove-keeper's side).
 */
#include "glove/keeper/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "keeper_internal.h"

#define N_FDS_MAX GLOVE_KEEPER_LAUNCH_FDS_MAX

/* ---- the executable ---- */

static int exe_stat_ok(const struct stat *st, const char *path, struct glove_error *err) {
        if (!S_ISREG(st->st_mode) || !(st->st_mode & S_IXUSR))
                return glove_error_set(err, EPERM, "keeper.unsafe", "%s is not an executable regular file", path);
        if (st->st_mode & (S_IWGRP | S_IWOTH))
                return glove_error_set(err, EPERM, "keeper.unsafe", "%s is writable by group or others (mode %04o)", path,
                                       (unsigned)(st->st_mode & 07777));
        if (st->st_uid != 0 && st->st_uid != geteuid())
                return glove_error_set(err, EPERM, "keeper.unsafe", "%s is owned by uid %u, neither root nor gloved's",
                                       path, (unsigned)st->st_uid);
        return 0;
}

/* The candidates: beside /proc/self/exe, then its ../libexec/glove. */
static int exe_find(char out[4096], struct glove_error *err) {
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return glove_error_set(err, errno ? errno : EINVAL, "keeper.missing", "/proc/self/exe: %s",
                                       strerror(errno ? errno : EINVAL));
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash)
                return glove_error_set(err, EINVAL, "keeper.missing", "gloved's directory is unknown");
        *slash = '\0';
        static const char *const rel[] = { "/" GLOVE_KEEPER_EXE_NAME, "/../libexec/glove/" GLOVE_KEEPER_EXE_NAME };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(rel); i++) {
                char path[4200];
                snprintf(path, sizeof(path), "%s%s", exe, rel[i]);
                struct stat st;
                if (lstat(path, &st) < 0)
                        continue;
                char *real = realpath(path, NULL);
                if (!real || strlen(real) >= 4096) {
                        free(real);
                        continue;
                }
                snprintf(out, 4096, "%s", real);
                free(real);
                return 0;
        }
        return glove_error_set(err, ENOENT, "keeper.missing", "%s is not in %s nor in %s/../libexec/glove",
                               GLOVE_KEEPER_EXE_NAME, exe, exe);
}

int glove_keeper_exe_open(const char *path, struct glove_keeper_exe *out, struct glove_error *err) {
        *out = (struct glove_keeper_exe){ .fd = -1 };
        if (path) {
                if (path[0] != '/' || strlen(path) >= sizeof(out->path))
                        return glove_error_set(err, EINVAL, "keeper.missing", "the keeper path must be absolute");
                snprintf(out->path, sizeof(out->path), "%s", path);
        } else {
                int r = exe_find(out->path, err);
                if (r < 0)
                        return r;
        }
        _cleanup_close_ int fd = open(out->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, errno == ENOENT ? "keeper.missing" : "keeper.unsafe", "%s: %s",
                                       out->path, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "keeper.unsafe", "%s: %s", out->path, strerror(errno));
        int r = exe_stat_ok(&st, out->path, err);
        if (r < 0)
                return r;
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        if ((r = glove_digest_sha256_init(&ctx, err)) < 0)
                return r;
        _cleanup_free_ uint8_t *buf = malloc(65536);
        if (!buf)
                return glove_error_set(err, ENOMEM, "keeper.unsafe", "out of memory reading %s", out->path);
        off_t total = 0;
        for (;;) {
                ssize_t got = pread(fd, buf, 65536, total);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0)
                        return glove_error_set(err, errno, "keeper.unsafe", "%s: %s", out->path, strerror(errno));
                if (got == 0)
                        break;
                if ((r = glove_digest_sha256_update(ctx, buf, (size_t)got, err)) < 0)
                        return r;
                total += got;
        }
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        if ((r = glove_digest_sha256_final(ctx, d, err)) < 0)
                return r;
        if (total != st.st_size)
                return glove_error_set(err, EAGAIN, "keeper.replaced", "%s changed while it was read", out->path);
        (void)glove_digest_hex_encode(d, sizeof(d), out->sha256, sizeof(out->sha256));
        out->dev = st.st_dev;
        out->ino = st.st_ino;
        out->size = st.st_size;
        out->mtime = st.st_mtim;
        out->uid = st.st_uid;
        out->fd = TAKE_FD(fd);
        return 0;
}

int glove_keeper_exe_check(const struct glove_keeper_exe *x, struct glove_error *err) {
        if (!x || x->fd < 0)
                return glove_error_set(err, ENOENT, "keeper.missing", "%s was not found when gloved started",
                                       GLOVE_KEEPER_EXE_NAME);
        struct stat st, at;
        if (fstat(x->fd, &st) < 0)
                return glove_error_set(err, errno, "keeper.unsafe", "%s: %s", x->path, strerror(errno));
        int r = exe_stat_ok(&st, x->path, err);
        if (r < 0)
                return r;
        if (lstat(x->path, &at) < 0)
                return glove_error_set(err, errno, errno == ENOENT ? "keeper.missing" : "keeper.replaced",
                                       "%s: %s (gloved verified it at start)", x->path, strerror(errno));
        if ((r = exe_stat_ok(&at, x->path, err)) < 0)
                return r;
        if (at.st_dev != x->dev || at.st_ino != x->ino || st.st_size != x->size || st.st_mtim.tv_sec != x->mtime.tv_sec ||
            st.st_mtim.tv_nsec != x->mtime.tv_nsec)
                return glove_error_set(err, ESTALE, "keeper.replaced",
                                       "%s is not the file gloved verified at start (sha256 %.16s...): restart gloved "
                                       "after an upgrade",
                                       x->path, x->sha256);
        return 0;
}

void glove_keeper_exe_close(struct glove_keeper_exe *x) {
        if (x && x->fd >= 0) {
                close(x->fd);
                x->fd = -1;
        }
}

/* ---- the spawn ---- */

/* Between fork and exec: system calls only. Copies every descriptor above
 * the targets first (so that no move lands on one still needed), moves
 * fds[i] to GLOVE_KEEPER_LAUNCH_FD + i, /dev/null to 0 and 1 and the log to
 * 2, marks every other descriptor close-on-exec (gloved's never reach a
 * keeper) and execs exe. Never returns: on failure writes errno to report
 * (close-on-exec: it reads end of file when the exec happened). */
_Noreturn static void child_exec(int exe, const int *fds, size_t n, int log_fd, int null_fd, int report) {
        enum { ABOVE = GLOVE_KEEPER_LAUNCH_FD + N_FDS_MAX + 2 };
        int tmp[N_FDS_MAX + 1];
        int xfd = fcntl(exe, F_DUPFD_CLOEXEC, ABOVE);
        int rep = fcntl(report, F_DUPFD_CLOEXEC, ABOVE);
        int lg = fcntl(log_fd, F_DUPFD_CLOEXEC, ABOVE);
        int nul = fcntl(null_fd, F_DUPFD_CLOEXEC, ABOVE);
        if (xfd < 0 || rep < 0 || lg < 0 || nul < 0)
                goto fail;
        for (size_t i = 0; i < n; i++)
                if ((tmp[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, ABOVE)) < 0)
                        goto fail;
        if (dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(lg, 2) < 0)
                goto fail;
        for (size_t i = 0; i < n; i++)
                if (dup2(tmp[i], GLOVE_KEEPER_LAUNCH_FD + (int)i) < 0)
                        goto fail;
        if (syscall(SYS_close_range, (unsigned)(GLOVE_KEEPER_LAUNCH_FD + n), ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                goto fail;
        static char name[] = GLOVE_KEEPER_EXE_NAME;
        char *const argv[] = { name, NULL };
        char *const envp[] = { NULL };
        syscall(SYS_execveat, xfd, "", argv, envp, AT_EMPTY_PATH);
fail:;
        int e = errno;
        if (rep >= 0)
                (void)!write(rep, &e, sizeof(e));
        _exit(127);
}

int glove_keeper_spawn(const struct glove_keeper_exe *x, const struct glove_keeper_args *a, int log_fd,
                       struct glove_error *err) {
        int r = glove_keeper_exe_check(x, err);
        if (r < 0)
                return r;
        int fds[N_FDS_MAX + 1];
        size_t n = 0;
        _cleanup_close_ int memfd = -1;
        if ((r = glove_keeper_launch_encode(a, &memfd, fds + 1, &n, err)) < 0)
                return r;
        fds[0] = memfd;
        n++;
        _cleanup_close_ int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0 || log_fd < 0)
                return glove_error_set(err, null_fd < 0 ? errno : EBADF, "keeper.fork", "/dev/null or the keeper log");
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return glove_error_set(err, errno, "keeper.fork", "pipe2: %s", strerror(errno));
        pid_t pid = fork();
        if (pid == 0) {
                /* From here on system calls only: _Fork runs no atfork
                 * handler and takes no lock. */
                close(p[0]);
                pid_t q = _Fork();
                if (q != 0)
                        _exit(q < 0 ? 1 : 0);
                child_exec(x->fd, fds, n, log_fd, null_fd, p[1]);
        }
        int fe = errno;
        close(p[1]);
        int status = 0;
        if (pid > 0)
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
        int child_errno = 0;
        ssize_t got = -1;
        if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
                do
                        got = read(p[0], &child_errno, sizeof(child_errno));
                while (got < 0 && errno == EINTR);
        close(p[0]);
        if (pid < 0)
                return glove_error_set(err, fe, "keeper.fork", "fork: %s", strerror(fe));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return glove_error_set(err, EAGAIN, "keeper.fork", "the session keeper could not be started");
        if (got != 0)
                return glove_error_set(err, got > 0 && child_errno ? child_errno : EIO, "keeper.fork",
                                       "exec of %s: %s", x->path, strerror(got > 0 && child_errno ? child_errno : EIO));
        return 0;
}

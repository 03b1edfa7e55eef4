/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper process's first steps (keeper.h, glove_keeper_run): every
 * signal disposition to its default (SIGPIPE ignored), and the descriptor
 * layout: 0 and 1 on /dev/null, 2 on DIR/SESSION.log, the four given ones
 * at 3..6, then the held ones, the inherited stream and the service
 * descriptors, contiguous from FD_HOLD_FIRST; every other one closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "keeper_internal.h"

/* Closes every descriptor from first on. */
static void close_from(int first) {
        if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
                return;
        struct rlimit rl;
        int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
                          ? (int)rl.rlim_cur
                          : 65536;
        for (int fd = first; fd < max; fd++)
                (void)close(fd);
}

void glove_keeper_reset_signals(void) {
        sigset_t none;
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigemptyset(&dfl.sa_mask);
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)sigaction(sig, &dfl, NULL);
        struct sigaction ign = { .sa_handler = SIG_IGN };
        sigemptyset(&ign.sa_mask);
        (void)sigaction(SIGPIPE, &ign, NULL);
}

/* Moves fd to want (O_CLOEXEC); fd was first copied above every target. */
static int move_to(int tmp, int want) {
        if (tmp < 0)
                return -1;
        return dup3(tmp, want, O_CLOEXEC) < 0 ? -1 : want;
}

int glove_keeper_setup_fds(const struct glove_keeper_args *a, const char *id, struct glove_keeper_fd_layout *out) {
        enum {
                N = 5 + GLOVE_KEEPER_HOLD_FDS_MAX + GLOVE_KEEPER_SERVICE_FDS_MAX,
                ABOVE = FD_HOLD_FIRST + GLOVE_KEEPER_HOLD_FDS_MAX + 1 + GLOVE_KEEPER_SERVICE_FDS_MAX,
        };
        size_t n_hold = a->hold_fds ? a->n_hold_fds : 0;
        size_t n_svc = a->service_fds ? a->n_service_fds : 0;
        bool inherit = a->desc->has_inherit_fd;
        if (n_hold > GLOVE_KEEPER_HOLD_FDS_MAX || n_svc > GLOVE_KEEPER_SERVICE_FDS_MAX)
                return -1;
        /* 0..3 the four, then held, then the inherited stream, then services. */
        int src[N] = { a->channel_fd, a->listen_fd, a->dir_fd, a->desc->audit ? a->desc->audit->fd : -1 };
        size_t n = 4;
        for (size_t i = 0; i < n_hold; i++)
                src[n++] = a->hold_fds[i];
        if (inherit)
                src[n++] = a->desc->inherit_fd;
        for (size_t i = 0; i < n_svc; i++)
                src[n++] = a->service_fds[i];
        int tmp[N];
        /* First above every target and every standard number: no move can
         * land on a descriptor still needed. */
        for (size_t i = 0; i < n; i++) {
                tmp[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD_CLOEXEC, ABOVE) : -1;
                if ((i != 3 || src[i] >= 0) && tmp[i] < 0)
                        return -1; /* the audit log too: its number must be ours */
        }
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                (void)dup2(null, STDIN_FILENO);
                (void)dup2(null, STDOUT_FILENO);
        }
        char name[NAME_MAX_KEEPER];
        snprintf(name, sizeof(name), "%s.log", id);
        int log = openat(tmp[2], name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        (void)dup2(log >= 0 ? log : null, STDERR_FILENO);
        if (log > STDERR_FILENO)
                close(log);
        if (null > STDERR_FILENO)
                close(null);
        if (move_to(tmp[0], FD_CHANNEL) < 0 || move_to(tmp[1], FD_LISTEN) < 0 || move_to(tmp[2], FD_DIR) < 0)
                return -1;
        int last = FD_DIR;
        if (tmp[3] >= 0) {
                if (move_to(tmp[3], FD_AUDIT) != FD_AUDIT)
                        return -1;
                last = FD_AUDIT;
        } else if (n > 4) {
                (void)close(FD_AUDIT); /* gloved's, whatever it was: never kept */
        }
        /* Held (lease locks: they must outlive gloved), the inherited
         * stream, the services: contiguous from FD_HOLD_FIRST. */
        *out = (struct glove_keeper_fd_layout){ .inherit = -1, .service_first = FD_HOLD_FIRST + (int)n_hold + (inherit ? 1 : 0) };
        for (size_t i = 4; i < n; i++) {
                int want = FD_HOLD_FIRST + (int)(i - 4);
                if (move_to(tmp[i], want) != want)
                        return -1;
                last = want;
        }
        if (inherit)
                out->inherit = FD_HOLD_FIRST + (int)n_hold;
        close_from(last + 1);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/child.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int glove_child_open(pid_t pid, struct glove_child *c) {
        c->pid = -1;
        c->pidfd = -1;
        if (pid <= 0)
                return -EINVAL;
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0 && errno != ENOSYS)
                return -errno;
        c->pid = pid;
        c->pidfd = fd;
        return 0;
}

/* Reaps pid without a pidfd. */
static void reap_pid(pid_t pid) {
        while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR) {
        }
}

void glove_child_kill_and_reap(struct glove_child *c) {
        if (!c || (c->pid <= 0 && c->pidfd < 0))
                return;
        int saved = errno;
        if (c->pidfd >= 0) {
                (void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
                siginfo_t si;
                int r;
                for (;;) {
                        r = waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED | __WALL);
                        if (r == 0 || (errno != EINTR && errno != EAGAIN))
                                break;
                        /* A non-blocking pidfd (PIDFD_NONBLOCK, or O_NONBLOCK
                         * set for an event loop) answers EAGAIN until the
                         * child exits: wait for it to become readable. */
                        if (errno == EAGAIN) {
                                struct pollfd pfd = { .fd = c->pidfd, .events = POLLIN };
                                (void)poll(&pfd, 1, -1);
                        }
                }
                /* Kernels before 5.4 know pidfd_open's pidfds but not
                 * P_PIDFD: wait by PID (still our unreaped child). */
                if (r < 0 && errno == EINVAL && c->pid > 0)
                        reap_pid(c->pid);
                (void)close(c->pidfd);
        } else {
                (void)kill(c->pid, SIGKILL);
                reap_pid(c->pid);
        }
        c->pid = -1;
        c->pidfd = -1;
        errno = saved;
}

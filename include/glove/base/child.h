/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A child process owned by a scope: its PID and a pidfd (pidfd_open(2) or
 * clone3 with CLONE_PIDFD). A variable declared _cleanup_child_ kills and
 * reaps the child when it leaves scope unless glove_child_take disarmed it
 * first, so an error path between fork and hand-over cannot leave a running
 * or zombie child behind.
 *
 * The cleanup BLOCKS until the child is reaped (SIGKILL cannot be caught, so
 * this is short unless the child is stuck in uninterruptible sleep, for
 * example on a hung file system). It is meant for error paths and teardown
 * of a child this code created, not for the normal end of a child on an
 * event loop: there, watch the pidfd and reap with WNOHANG, then disarm.
 *
 * Only the parent may own a struct glove_child, and only while nothing else
 * reaps the child (no SIGCHLD set to SIG_IGN, no waitpid(-1) elsewhere):
 * then the PID cannot be reused before the cleanup reaps it.
 */

#include <sys/types.h>

struct glove_child {
        pid_t pid;  /* > 0 when armed, -1 when empty */
        int pidfd;  /* owned, O_CLOEXEC; -1 when none */
};

#define GLOVE_CHILD_INIT { .pid = -1, .pidfd = -1 }

/*
 * Arms *c for the child pid (a direct child of the caller, not yet reaped):
 * opens its pidfd with pidfd_open(2) (close-on-exec). On kernels without
 * pidfd_open (ENOSYS) c->pidfd stays -1 and the cleanup falls back to
 * kill(2) and waitpid(2) on the PID. Returns 0, -EINVAL for pid <= 0, or
 * -errno from pidfd_open (*c is left empty, and the child is not touched).
 */
int glove_child_open(pid_t pid, struct glove_child *c);

/*
 * Kills and reaps the child *c names, then empties *c (pid -1, pidfd -1).
 * Sends SIGKILL through the pidfd (pidfd_send_signal) or, without one, to
 * the PID; then waits with waitid(P_PIDFD, ..., WEXITED) (or waitpid), retrying
 * EINTR; a non-blocking pidfd is polled until the child has exited. Blocks
 * until the child is reaped. A child that already exited is
 * just reaped. Does nothing on an empty *c or a NULL c. Preserves errno.
 * Its exit status is discarded: use it on paths where the outcome no longer
 * matters.
 */
void glove_child_kill_and_reap(struct glove_child *c);

/*
 * Returns *c and empties it (pid -1, pidfd -1): ownership of the child and
 * of its pidfd moves to the caller, and a _cleanup_child_ variable no longer
 * kills it.
 */
static inline struct glove_child glove_child_take(struct glove_child *c) {
        struct glove_child taken = *c;
        c->pid = -1;
        c->pidfd = -1;
        return taken;
}

#define _cleanup_child_ __attribute__((cleanup(glove_child_kill_and_reap)))

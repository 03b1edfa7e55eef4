/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove-remote-executor's standard output, made writable with a deadline
 * without changing state it shares with its caller (docs/remote-executor.md,
 * "Start-up"; spec/architecture.md, "Construction-only remote backend").
 *
 * The frame writer (glove/remote_executor/frame.h) must never wait in
 * write(2) past a deadline, so it needs an output that does not block. The
 * executor's standard output is an open file description it shares with
 * whoever started it (sshd, a wrapper script, a pipeline, a terminal):
 * setting O_NONBLOCK on it with F_SETFL would make every other writer of
 * that description get EAGAIN, during and after the executor's run. So the
 * output is prepared, by the kind of object behind the descriptor:
 *
 *   a regular file      used as it is: writing one never waits for a reader
 *                       (GLOVE_REMOTE_EXECUTOR_OUTPUT_DIRECT)
 *   already O_NONBLOCK  used as it is: nothing to change (DIRECT)
 *   a socket            used as it is: the frame writer sends with
 *                       send(2) MSG_DONTWAIT, which does not block whatever
 *                       the description's flags (SOCKET)
 *   anything else       (a pipe, FIFO, terminal or other device) reopened
 *                       through FD_DIR/N (the executor passes
 *                       "/proc/self/fd") with O_WRONLY | O_NONBLOCK |
 *                       O_NOCTTY | O_CLOEXEC: a private, non-blocking
 *                       description of the same object, accepted only when
 *                       fstat gives the same type, st_dev and st_ino
 *                       (REOPENED)
 *   none of these       (the reopen failed or reached another object: no
 *                       /proc, a pipe of another uid, a named FIFO without
 *                       a reader) the last resort: O_NONBLOCK is set on the
 *                       shared description and
 *                       glove_remote_executor_output_release clears it
 *                       again (SHARED); the caller must release on every
 *                       exit path, signals included
 *
 * Standard input is never changed: the frame reader polls before each read
 * and takes EAGAIN as "wait again", so it needs no flag.
 *
 * Error codes (struct glove_error): executor.internal for a descriptor
 * that cannot be examined or changed (-errno: fstat or fcntl failed, e.g.
 * -EBADF), executor.invalid_argument for misuse (-EINVAL). err may be NULL.
 */

#include "glove/base/error.h"

enum glove_remote_executor_output_mode {
        GLOVE_REMOTE_EXECUTOR_OUTPUT_DIRECT = 0, /* the descriptor as it is */
        GLOVE_REMOTE_EXECUTOR_OUTPUT_SOCKET,     /* the descriptor as it is; written with MSG_DONTWAIT */
        GLOVE_REMOTE_EXECUTOR_OUTPUT_REOPENED,   /* a private non-blocking description; closed on release */
        GLOVE_REMOTE_EXECUTOR_OUTPUT_SHARED,     /* O_NONBLOCK set on the shared one; cleared on release */
};

/*
 * A prepared output. fd is where frames are written (glove_remote_executor
 * frame_write and serve take it); orig_fd is the caller's descriptor.
 */
struct glove_remote_executor_output {
        int fd;
        int orig_fd;
        enum glove_remote_executor_output_mode mode;
};

/*
 * Prepares orig_fd for frame writes by the table above. fd_dir names a
 * directory in which the entry named by orig_fd's number reopens it
 * ("/proc/self/fd" in the executor; unit tests pass another to reach the
 * other cases); NULL skips the reopen. On success *out holds the mode and
 * the descriptor to write to (orig_fd itself, or a new one out owns); a
 * failure leaves nothing changed and *out with fd -1. Returns 0, or
 * -errno (executor.internal), -EINVAL (executor.invalid_argument).
 */
int glove_remote_executor_output_open(int orig_fd, const char *fd_dir, struct glove_remote_executor_output *out,
                                      struct glove_error *err);

/*
 * Undoes glove_remote_executor_output_open: REOPENED closes the private
 * descriptor; SHARED clears O_NONBLOCK on the shared description again (only
 * that flag: others that someone else changed meanwhile stay as they are);
 * DIRECT and SOCKET do nothing. Leaves *out DIRECT with fd -1, so a second
 * call does nothing. Async-signal-safe (close and fcntl only), so a signal
 * handler may call it; the caller blocks those signals around its own
 * call. Returns 0 or -errno of fcntl (the flag may then still be set).
 */
int glove_remote_executor_output_release(struct glove_remote_executor_output *out);

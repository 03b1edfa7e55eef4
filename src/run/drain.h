/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's terminal and output for glove exec (issue "limits",
 * Terminal): a PTY whose master stays with Glove when Glove's stdin is a
 * terminal (or --tty), else pipes. The agent's stdin is never Glove's own:
 * it is the PTY or a fresh pipe, and Glove copies its stdin into it (a null
 * device gives a pipe already at end of file, with no thread). Every byte
 * the agent writes is relayed promptly and counted by glove_watch_output()
 * on Glove's side; past the output limit nothing more is relayed and the run
 * is killed. Internal to the run module.
 *
 * Drain threads do blocking reads and writes; they are not an event loop.
 * Glove's own terminal is put in raw mode while a PTY is in use and restored
 * on every exit path (glove_drain_stop, and an atexit handler).
 */

#include <pthread.h>
#include <stdbool.h>
#include <termios.h>

#include "glove/base/error.h"
#include "glove/container/sandbox.h"
#include "run_limits.h"

struct glove_drain {
        bool pty;
        int master;                     /* PTY master, or -1 */
        int out_read, err_read;         /* pipe read ends (no PTY), or -1 */
        int in_write;                   /* pipe feeding Glove's stdin to the agent (no PTY), or -1 */
        int child_fds[3];               /* what the agent gets as 0, 1, 2 (-1: Glove's own) */
        pthread_t threads[3];
        int n_threads;
        struct glove_watch *watch;
        bool stopped;
};

/* True when the last byte relayed to Glove's terminal or stderr was not a
 * newline (Glove's own messages then start on a new line). */
bool glove_drain_mid_line(const struct glove_drain *d);

/* Empties d so that glove_drain_stop is safe before setup. */
void glove_drain_init(struct glove_drain *d);

/* Sets up the PTY or the pipes and fills cfg's stdio fields. */
int glove_drain_setup(struct glove_drain *d, bool want_pty, struct glove_watch *w, struct glove_sandbox_config *cfg,
                      struct glove_error *err);

/* After spawn: closes Glove's copies of the agent's ends and starts the
 * threads. */
int glove_drain_start(struct glove_drain *d, struct glove_error *err);

/* Copies Glove's terminal window size to the PTY (at start and on SIGWINCH);
 * the kernel then signals the agent's foreground process group. */
void glove_drain_resize(struct glove_drain *d);

/* After PID 1 is gone: waits (bounded) until the output is flushed, restores
 * the terminal, closes everything. */
void glove_drain_stop(struct glove_drain *d);

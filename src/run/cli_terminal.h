/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Glove's own terminal as one client of a session's terminal (glove exec
 * and glove run; issue "limits", Terminal): copies Glove's stdin into the
 * session's input and the session's output to Glove's stdout and stderr, on
 * the loop, with flow control (a slow stdout holds the agent's output
 * instead of blocking the loop, so limits still fire). Internal to the run
 * module: this is the one place that uses descriptors 0, 1 and 2 and the
 * outer terminal's modes.
 *
 * Glove's 0, 1 and 2 are never made non-blocking themselves (their open file
 * descriptions are shared with the invoking shell): pipes, FIFOs and
 * terminals are reopened through /proc/self/fd as private non-blocking
 * descriptions; sockets use MSG_DONTWAIT; regular files and the null device
 * never block. With a PTY, the outer terminal is put in raw mode and
 * restored by glove_cli_terminal_free.
 */

#include <stdbool.h>
#include <systemd/sd-event.h>
#include <termios.h>

#include "glove/base/error.h"
#include "glove/session/terminal.h"

struct glove_cli_terminal;

/* What the session needs to know before it starts: whether Glove's stdin is
 * the null device (the agent then gets a pipe already at end of file), the
 * outer terminal's modes and size (for a PTY). */
struct glove_cli_terminal_probe {
        bool stdin_null;
        bool stdin_tty;
        bool stdout_tty;
        bool have_modes;
        struct termios modes;
        unsigned short rows, cols;
};
void glove_cli_terminal_probe(struct glove_cli_terminal_probe *p);

/* Attaches to t (whose mode decides: PTY output goes to 1; pipes: stream 1
 * to 1 and 2 to 2; stdin is copied in unless the mode has no input). */
int glove_cli_terminal_attach(sd_event *loop, struct glove_terminal *t, const struct glove_cli_terminal_probe *p,
                              bool copy_stdin, struct glove_cli_terminal **out, struct glove_error *err);

/* fn runs (on the loop) the first time a write to Glove's stdout (fd 1) or
 * stderr (fd 2) fails, with the errno; that stream's further output is
 * discarded. */
void glove_cli_terminal_on_write_error(struct glove_cli_terminal *c, void (*fn)(void *userdata, int fd, int errnum),
                                       void *userdata);

/* The outer window size changed (SIGWINCH): copies it to the PTY. */
void glove_cli_terminal_resize(struct glove_cli_terminal *c);

/* True when the last byte written to stdout or stderr was not a newline. */
bool glove_cli_terminal_mid_line(const struct glove_cli_terminal *c);

/* Writes what is still pending (blocking, at most timeout_ms in all), then
 * detaches, restores the outer terminal, closes the private descriptors.
 * NULL is fine. */
void glove_cli_terminal_free(struct glove_cli_terminal *c, int timeout_ms);

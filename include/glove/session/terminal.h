/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The terminal of one session (issue "One session engine", Build: the
 * terminal object; spec session-policy.md, terminal_output_bytes): the
 * agent's side of its stdio, owned by the engine and driven by the caller's
 * sd-event loop. Three modes:
 *
 *   GLOVE_TERMINAL_PTY      one PTY: the slave is the agent's 0, 1 and 2 and
 *                           its controlling terminal; the master stays here
 *   GLOVE_TERMINAL_PIPES    three pipes: input, output (stream 1), errors
 *                           (stream 2)
 *   GLOVE_TERMINAL_STDERR   only the error pipe: the caller supplies the
 *                           agent's 0 and 1 itself (glove run's MCP channel)
 *
 * Any number of clients (up to GLOVE_TERMINAL_CLIENTS_MAX) may attach and
 * detach at any time. Every byte the agent writes is counted against the
 * output limit, kept in a bounded circular transcript, and handed to every
 * attached client in order. Past the limit nothing more is relayed and the
 * owner's breach callback runs once. Input from any client is queued (at most
 * GLOVE_TERMINAL_INPUT_MAX bytes) and written when the agent's side can take
 * it.
 *
 * Flow control: a client that cannot take more output calls
 * glove_terminal_client_hold(c, true); while any client holds, no more of the
 * agent's output is read (the agent blocks on its full PTY or pipe) until it
 * releases the hold. A detached client's hold ends with it.
 *
 * Nothing here touches the process's descriptors 0, 1, 2, its termios, its
 * signal dispositions or atexit: a CLI attaches its own terminal as one client.
 * Writes to the input pipe can raise SIGPIPE once the agent closed its end:
 * the process must ignore or block SIGPIPE (glove and gloved do). Every
 * descriptor is O_CLOEXEC and owned by the terminal; everything runs on the
 * loop thread (no locks, no threads).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>
#include <termios.h>

#include "glove/base/error.h"

#define GLOVE_TERMINAL_CLIENTS_MAX 64
/* Bytes of input queued towards the agent. */
#define GLOVE_TERMINAL_INPUT_MAX (64 * 1024)
/* Default and largest transcript, in bytes. */
#define GLOVE_TERMINAL_TRANSCRIPT_DEFAULT (64 * 1024)
#define GLOVE_TERMINAL_TRANSCRIPT_MAX (16 * 1024 * 1024)
/* Largest chunk handed to a client at once. */
#define GLOVE_TERMINAL_CHUNK 65536

enum glove_terminal_mode {
        GLOVE_TERMINAL_PIPES,
        GLOVE_TERMINAL_PTY,
        GLOVE_TERMINAL_STDERR,
};

struct glove_terminal_config {
        enum glove_terminal_mode mode;
        uint64_t output_limit;            /* bytes of output relayed at most; 0: unlimited */
        size_t transcript_bytes;          /* ring size; 0: GLOVE_TERMINAL_TRANSCRIPT_DEFAULT */
        bool input_closed;                /* pipes: the agent's stdin is at end of file from the start */
        const struct termios *modes;      /* PTY: initial modes, NULL for the kernel's */
        unsigned short rows, cols;        /* PTY: initial window size, 0 for none */
        /* Called once, on the loop thread, when the output limit is passed. */
        void (*breach)(void *userdata);
        /* Called once when every output stream reached end of file. */
        void (*output_ended)(void *userdata);
        void *userdata;
};

struct glove_terminal_client_ops {
        /* Output of the agent, in order. stream is 1 or 2 (always 1 for a
         * PTY). buf is valid during the call only; n is 1..GLOVE_TERMINAL_CHUNK. */
        void (*output)(void *userdata, int stream, const void *buf, size_t n);
        /* Every output stream ended (the agent and everything it started
         * closed them, or the terminal was closed). Optional. */
        void (*ended)(void *userdata);
        /* The input queue, which refused bytes before, has room again (half
         * of it free), or input can no longer be taken (then
         * glove_terminal_input answers -EPIPE). May run from inside
         * glove_terminal_input (the queue emptied at once); a client should
         * only schedule its next write from here. Optional. */
        void (*input_room)(void *userdata);
};

struct glove_terminal;
struct glove_terminal_client;

/*
 * Makes the PTY or the pipes. The agent's ends come back through
 * glove_terminal_child_fds(); nothing is read until glove_terminal_start().
 * Errors: "tty.open", "terminal.pipe", "terminal.config" (a bound exceeded).
 * *out is owned by the caller (glove_terminal_free).
 */
int glove_terminal_new(const struct glove_terminal_config *cfg, struct glove_terminal **out, struct glove_error *err);

/* The agent's 0, 1 and 2 (-1 where the mode leaves it to the caller); they
 * stay owned by the terminal until glove_terminal_start() closes them. */
void glove_terminal_child_fds(const struct glove_terminal *t, int fds[3]);

/* True for GLOVE_TERMINAL_PTY (the agent takes the slave as its controlling
 * terminal). */
bool glove_terminal_is_pty(const struct glove_terminal *t);

/*
 * After the sandbox holds its copies: closes the agent's ends here and starts
 * reading and writing on loop. Returns 0 or -errno ("terminal.event_loop").
 */
int glove_terminal_start(struct glove_terminal *t, sd_event *loop, struct glove_error *err);

/*
 * Attaches a client. With replay, the transcript kept so far is handed to it
 * first (as stream 1). *out stays valid until glove_terminal_detach() or
 * glove_terminal_free(). Returns 0, -ENOSPC past GLOVE_TERMINAL_CLIENTS_MAX,
 * or -ENOMEM.
 */
int glove_terminal_attach(struct glove_terminal *t, const struct glove_terminal_client_ops *ops, void *userdata, bool replay,
                          struct glove_terminal_client **out);

/* Detaches and frees c (NULL is fine). Safe inside c's own callbacks. */
void glove_terminal_detach(struct glove_terminal_client *c);

/* Flow control (see above). */
void glove_terminal_client_hold(struct glove_terminal_client *c, bool hold);

/*
 * Queues n bytes of input for the agent. Returns n, fewer when the queue is
 * nearly full (the rest was not taken; every client's input_room runs once
 * there is room again), -EPIPE once input was closed or the agent's side is
 * gone.
 */
ssize_t glove_terminal_input(struct glove_terminal *t, const void *buf, size_t n);

/* Input ends: pipes: the agent sees end of file once the queue is written;
 * PTY: the line discipline's end-of-file character (VEOF) is queued, twice
 * after a partial line, in canonical mode only (raw mode has no end of
 * input). Input queued after this is refused (-EPIPE). */
void glove_terminal_input_close(struct glove_terminal *t);

/* PTY: sets the window size (the kernel signals the agent's foreground
 * process group with SIGWINCH). Pipes: -ENOTTY. rows and cols 1..65535. */
int glove_terminal_resize(struct glove_terminal *t, unsigned rows, unsigned cols);

/*
 * Counts n bytes the agent wrote on a channel the terminal does not carry
 * (glove run's MCP channel) against the same output limit. Returns how many
 * of them may still pass: n below the limit, what is left up to it
 * otherwise (the breach callback then runs once).
 */
size_t glove_terminal_count(struct glove_terminal *t, size_t n);

/* Bytes the agent wrote so far, relayed or not (all streams and counted
 * channels). */
uint64_t glove_terminal_output_bytes(const struct glove_terminal *t);

/* True once every output stream reached end of file. */
bool glove_terminal_output_done(const struct glove_terminal *t);

/* Copies the last min(cap, kept) transcript bytes into buf, oldest first;
 * returns how many. */
size_t glove_terminal_transcript(const struct glove_terminal *t, void *buf, size_t cap);

/* Stops reading (what is unread is dropped) and tells every client it ended.
 * Idempotent. */
void glove_terminal_close(struct glove_terminal *t);

/* Closes everything, detaches every client; NULL is fine. */
void glove_terminal_free(struct glove_terminal *t);

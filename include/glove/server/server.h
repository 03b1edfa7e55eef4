/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The connection loop of gloved: one sd-event loop serves every client
 * (DESIGN.md, "Libraries"; issue "gloved control plane", The service).
 *
 * For each accepted connection:
 *   - SO_PEERCRED: a peer whose uid differs from the service uid is closed
 *     at once, before any byte is read or written;
 *   - the peer's user namespace must be gloved's own or an ancestor's
 *     (peerns.h): otherwise its first request, whatever it is, is answered
 *     with auth.foreign_user_namespace (or auth.peer_unverified) and the
 *     connection is closed; a descriptor of gloved's user namespace passed
 *     with SCM_RIGHTS before authentication is the proof of an ancestor;
 *   - the first frame must be {"id","method":"authenticate","params":
 *     {"secret":HEX64}}; the secret is compared in constant time with the
 *     bootstrap secret and (when there is one) the owner secret, both
 *     always; the one it equals gives the connection its role (methods.h:
 *     "controller" or "owner", answered as {"authenticated":true,
 *     "protocol_version":1,"role":ROLE,"service":"gloved"}); anything
 *     else is answered with auth.required or auth.failed and the
 *     connection is closed;
 *   - frames are read into a buffer bounded by the frame bound; a prefix
 *     over GLOVE_PROTOCOL_FRAME_MAX is answered with frame.too_large and the
 *     connection is closed without reading the payload; a payload that is not
 *     a request is answered with frame.malformed / request.invalid and closed;
 *   - one request is handled at a time per connection, in order: while its
 *     response is unsent the connection is not read and its next frame is
 *     not handled (back-pressure: at most one response, one frame bound, is
 *     queued per connection);
 *   - requests may be pipelined: every whole frame already received (several
 *     in one write, or completed by a write that also starts the next) is
 *     answered in turn without waiting for more input, at most 8 per wakeup
 *     so that other connections are served in between; after the peer's end
 *     of file the whole frames received are still answered, then the
 *     connection is closed (a partial frame is dropped);
 *   - deadlines (CLOCK_MONOTONIC): authentication within client_timeout_ms
 *     of the accept; a started frame completed, and a response fully sent,
 *     within client_timeout_ms (a whole frame that waits because the peer
 *     does not read its earlier responses counts as sending); an idle
 *     authenticated connection is closed after idle_timeout_ms. Expiry
 *     closes only that connection.
 *   - at most max_connections at once; further ones are accepted and closed.
 *   - pushed frames (notifications without an id, the attach streams of
 *     the managed runtime) share the connection's output queue with the
 *     responses, in the order they were queued; at most
 *     GLOVE_RUNTIME_PUSH_MAX bytes of them may be pending besides the one
 *     response (glove_server_conn_push refuses more, and the runtime then
 *     skips that attachment's output until the queue drains below half the
 *     bound, glove_server_conn_want_drain); while only pushed frames are pending the
 *     connection is still read and answered, and the peer must keep taking
 *     them (no progress for client_timeout_ms closes it); a connection that
 *     holds attachments has no idle deadline; a connection that closes
 *     detaches its attachments (glove_runtime_conn_closed).
 * SIGTERM and SIGINT end the loop cleanly (connections closed, return 0).
 * sd_notify("READY=1") is sent when the loop starts and "STOPPING=1" when it
 * ends (no-ops outside systemd).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/server/methods.h"

#define GLOVE_SERVER_SECRET_LEN 32
#define GLOVE_SERVER_CLIENT_TIMEOUT_MS_DEFAULT 5000
#define GLOVE_SERVER_IDLE_TIMEOUT_MS_DEFAULT 600000
#define GLOVE_SERVER_MAX_CONNECTIONS_DEFAULT 256

struct glove_log;

struct glove_server_options {
        int listen_fd;                          /* listening AF_UNIX stream socket, O_NONBLOCK (borrowed) */
        uid_t uid;                              /* the only peer uid admitted */
        const uint8_t *secret;                  /* GLOVE_SERVER_SECRET_LEN bytes (borrowed): the controller's */
        const uint8_t *owner_secret;            /* GLOVE_SERVER_SECRET_LEN bytes (borrowed) or NULL: the owner's */
        uint64_t client_timeout_ms;             /* 1..3600000 */
        uint64_t idle_timeout_ms;               /* 1..86400000 */
        unsigned max_connections;               /* 1..4096 */
        struct glove_server_components *components; /* borrowed */
        struct glove_log *log;                  /* gloved's log (borrowed; NULL: none) */
};

/*
 * Runs the loop until SIGTERM or SIGINT (blocked in the calling thread for
 * the duration and delivered through sd-event). Returns 0 after a clean stop,
 * or a negative errno with err set (server.event: the loop could not be set
 * up or failed).
 */
int glove_server_run(const struct glove_server_options *opts, struct glove_error *err);

/*
 * Queues msg (stolen; NULL is -ENOMEM) as a pushed frame on connection c
 * (a notification: no id) and arms c for writing. Never sends or closes
 * inline, so it is safe from any callback on the loop. last allows a small
 * slack past the bound for the final notice of a dropped attachment.
 * Returns 0; -ENOBUFS when GLOVE_RUNTIME_PUSH_MAX bytes of pushed frames
 * would be exceeded (nothing queued); -EPIPE when c is closing; the
 * frame.h codes' errno when msg cannot be encoded.
 */
int glove_server_conn_push(struct glove_server_conn *c, json_t *msg, bool last);

/*
 * Queues one session_output notification for session_id carrying
 * data[0..n) (borrowed) as a pushed frame on c, the same bytes
 * glove_server_conn_push would queue for it
 * (glove_protocol_frame_encode_output), with the same bound and results.
 */
int glove_server_conn_push_output(struct glove_server_conn *c, const char *session_id, const void *data, size_t n);

/* Bytes of pushed frames pending on c (not counting the pending response),
 * 0..GLOVE_RUNTIME_PUSH_MAX plus the last notices' slack. */
size_t glove_server_conn_pushed_pending(const struct glove_server_conn *c);

/*
 * Asks for one call of glove_runtime_conn_drained(runtime, c) once
 * the pushed frames pending on c fall below GLOVE_RUNTIME_PUSH_MAX / 2. The
 * call is made from the loop after c's socket took bytes, never inline;
 * none is made when c closes first. Asking again before it is made changes
 * nothing.
 */
void glove_server_conn_want_drain(struct glove_server_conn *c);

/* Counts attachments held on c (delta +1 or -1): a connection with any has
 * no idle deadline. */
void glove_server_conn_attachments(struct glove_server_conn *c, int delta);

/* The runtime's view of c (runtime.h, struct glove_runtime_peer): its
 * operations are the five above. Borrowed: lives as long as c. */
struct glove_runtime_peer *glove_server_conn_peer(struct glove_server_conn *c);

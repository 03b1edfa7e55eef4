/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A blocking client of the gloved control protocol (docs/control-protocol.md),
 * used by `glove ctl`, tests and benchmarks.
 *
 * Stable error codes:
 *   client.unreachable   the socket or the bootstrap secret cannot be used:
 *                        missing, refused, wrong permissions (-errno)
 *   client.auth_failed   the service refused the secret (-EACCES)
 *   client.timeout       no complete answer within the timeout (-ETIMEDOUT)
 *   client.protocol      the service broke the framing or answered with
 *                        something that is not a response (-EPROTO)
 *   client.closed        the service closed the connection (-ECONNRESET)
 *   client.invalid_argument, client.no_memory
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"

/* Longest remote error code and message kept, bytes including NUL. */
#define GLOVE_PROTOCOL_CLIENT_CODE_MAX 96
#define GLOVE_PROTOCOL_CLIENT_MESSAGE_MAX 512

struct glove_protocol_client;

/* The error half of a response. */
struct glove_protocol_remote_error {
        char code[GLOVE_PROTOCOL_CLIENT_CODE_MAX];
        char message[GLOVE_PROTOCOL_CLIENT_MESSAGE_MAX];
        json_t *data;   /* new reference (an object) or NULL; caller releases */
};

/*
 * Connects to RUNTIME_DIR/gloved.sock, reads RUNTIME_DIR/bootstrap-secret and
 * authenticates. Every later call must complete within timeout_ms
 * (1..3600000) milliseconds. *out is owned by the caller
 * (glove_protocol_client_close). Errors: see top of file.
 */
int glove_protocol_client_open(const char *runtime_dir, uint64_t timeout_ms, struct glove_protocol_client **out,
                              struct glove_error *err);

/*
 * As glove_protocol_client_open, authenticating with the secret in
 * RUNTIME_DIR/secret_name (a plain file name, e.g. "owner-secret": the
 * owner's credential of dynamic path exposures, docs/exposures.md) instead
 * of bootstrap-secret.
 */
int glove_protocol_client_open_secret(const char *runtime_dir, const char *secret_name, uint64_t timeout_ms,
                                      struct glove_protocol_client **out, struct glove_error *err);

/*
 * Sends {"id":N,"method":method,"params":params} (params borrowed; NULL
 * means {}) and waits for the response with that id.
 * Returns 0 with *result a new reference to the result object; 1 when the
 * service answered with an error (remote filled; *result NULL); or a
 * negative errno with err set when the exchange failed (see top of file).
 */
int glove_protocol_client_call(struct glove_protocol_client *c, const char *method, json_t *params, json_t **result,
                              struct glove_protocol_remote_error *remote, struct glove_error *err);

/*
 * Sends {"id":N,"method":method,"params":params} (params borrowed; NULL
 * means {}) without waiting for the response; *id (may be NULL) receives N,
 * so the caller can match the response read later with
 * glove_protocol_client_next. The send itself must complete within the
 * client's timeout. Returns 0 or a negative errno with err set
 * (client.closed, client.timeout, client.invalid_argument, frame.*).
 */
int glove_protocol_client_send(struct glove_protocol_client *c, const char *method, json_t *params, int64_t *id,
                              struct glove_error *err);

/*
 * Reads the next frame from gloved, a response (has "id") or a pushed
 * notification ({"method","params"} without "id"), waiting at most
 * timeout_ms milliseconds (0: only what has already arrived). Notifications
 * that glove_protocol_client_call read while it waited for its own response
 * come first, in arrival order (it keeps at most 4096; more is
 * client.protocol). Returns 1 with *frame (a new reference, the whole
 * decoded object; not otherwise checked), 0 when no complete frame came
 * within the timeout (*frame NULL), or a negative errno with err set
 * (client.closed, client.protocol, client.no_memory).
 */
int glove_protocol_client_next(struct glove_protocol_client *c, uint64_t timeout_ms, json_t **frame,
                              struct glove_error *err);

/* The connection's socket, for poll(POLLIN) by a caller that multiplexes it
 * with other descriptors (borrowed: do not read, write or close it). A
 * frame may already be buffered without the socket being readable: check
 * glove_protocol_client_buffered first. */
int glove_protocol_client_fd(const struct glove_protocol_client *c);

/* True when glove_protocol_client_next would return a frame without reading
 * the socket (a held notification or a complete buffered frame). */
bool glove_protocol_client_buffered(const struct glove_protocol_client *c);

/*
 * One recv(2) without waiting, into the receive buffer (at most 256 KiB;
 * the frames it completes are then buffered). Returns 1 when bytes came, 0
 * when none were there, or a negative errno with err set (client.closed at
 * end of file or on a receive error, client.protocol when the buffer holds
 * a whole frame bound already, client.no_memory).
 */
int glove_protocol_client_receive(struct glove_protocol_client *c, struct glove_error *err);

/*
 * The raw payload of the whole frame that starts offset bytes into the
 * receive buffer, not decoded (for a caller that recognizes a frame's exact
 * bytes and so can skip its JSON decoding): 1 with *payload (borrowed, valid
 * until the next call on c), *payload_len and *frame_len (prefix included;
 * offset + *frame_len is where the next frame starts); 0 when no whole
 * frame is there, or while notifications held by glove_protocol_client_call
 * wait (they come first: read them with glove_protocol_client_next); a
 * negative errno (client.protocol) when the framing is broken. Frames
 * peeked are not consumed: glove_protocol_client_consume_raw(c, n) drops the
 * first n buffered bytes (whole frames only, at most what is buffered).
 */
int glove_protocol_client_peek_raw(const struct glove_protocol_client *c, size_t offset, const uint8_t **payload,
                                  size_t *payload_len, size_t *frame_len, struct glove_error *err);
void glove_protocol_client_consume_raw(struct glove_protocol_client *c, size_t n);

/* Closes the connection and frees c (NULL allowed). */
void glove_protocol_client_close(struct glove_protocol_client *c);

static inline void glove_protocol_client_closep(struct glove_protocol_client **c) {
        if (c)
                glove_protocol_client_close(*c);
}
#define _cleanup_client_ __attribute__((cleanup(glove_protocol_client_closep)))

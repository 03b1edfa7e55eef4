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

#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"

/* Longest remote error code and message kept, bytes including NUL. */
#define GLOVE_CONTROL_CLIENT_CODE_MAX 96
#define GLOVE_CONTROL_CLIENT_MESSAGE_MAX 512

struct glove_control_client;

/* The error half of a response. */
struct glove_control_remote_error {
        char code[GLOVE_CONTROL_CLIENT_CODE_MAX];
        char message[GLOVE_CONTROL_CLIENT_MESSAGE_MAX];
        json_t *data;   /* new reference (an object) or NULL; caller releases */
};

/*
 * Connects to RUNTIME_DIR/gloved.sock, reads RUNTIME_DIR/bootstrap-secret and
 * authenticates. Every later call must complete within timeout_ms
 * (1..3600000) milliseconds. *out is owned by the caller
 * (glove_control_client_close). Errors: see top of file.
 */
int glove_control_client_open(const char *runtime_dir, uint64_t timeout_ms, struct glove_control_client **out,
                              struct glove_error *err);

/*
 * Sends {"id":N,"method":method,"params":params} (params borrowed; NULL
 * means {}) and waits for the response with that id.
 * Returns 0 with *result a new reference to the result object; 1 when the
 * service answered with an error (remote filled; *result NULL); or a
 * negative errno with err set when the exchange failed (see top of file).
 */
int glove_control_client_call(struct glove_control_client *c, const char *method, json_t *params, json_t **result,
                              struct glove_control_remote_error *remote, struct glove_error *err);

/* Closes the connection and frees c (NULL allowed). */
void glove_control_client_close(struct glove_control_client *c);

static inline void glove_control_client_closep(struct glove_control_client **c) {
        if (c)
                glove_control_client_close(*c);
}
#define _cleanup_client_ __attribute__((cleanup(glove_control_client_closep)))

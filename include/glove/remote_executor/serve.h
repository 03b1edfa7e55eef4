/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove-remote-executor's --stdio channel: requests, responses and the
 * loop that answers them (spec/architecture.md, "Construction-only remote
 * backend"; docs/remote-executor.md, "Requests and responses"). The
 * executor is construction evidence, not a remote runtime: the only method
 * is remote_health, and it always answers not_operational.
 *
 * Each frame (glove/remote_executor/frame.h) holds one JSON object, decoded
 * strictly (glove_json_decode_strict with GLOVE_JSON_OBJECT_ONLY and
 * GLOVE_JSON_BOUND_VALUES):
 *   request   {"id": ID, "method": NAME, "ttl_ms": TTL, "params": {...}}
 *             ID an integer 0..2^53; NAME 1..64 bytes of [a-z_]; TTL an
 *             integer in GLOVE_REMOTE_EXECUTOR_TTL_MIN_MS..._MAX_MS;
 *             "params" optional (absent means {}); no other members
 *   response  {"id": ID, "result": {"status": "not_operational",
 *                                   "executable_sha256": HEX,
 *                                   "image_sha256": HEX}}
 *             {"id": ID, "error": {"code": CODE, "message": TEXT}}
 *             (ID is null when the request's id could not be read)
 * Keys are written sorted, compact (JSON_COMPACT | JSON_SORT_KEYS).
 *
 * Error responses, after which the channel goes on (codes on the wire):
 *   executor.frame_empty      a zero-length frame
 *   executor.frame_malformed  the payload is not one strict JSON object
 *   executor.request_invalid  a missing, mistyped, out-of-range or unknown
 *                             member; params given to remote_health
 *   executor.ttl_expired      the frame's receipt used up its TTL
 *   method_not_found          any method but remote_health (every lifecycle
 *                             method among them)
 * Deadlines of the responses: a request whose members are all valid is
 * checked against its TTL first (frame.h,
 * glove_remote_executor_ttl_deadline); when time is left, its response
 * (result, method_not_found, or request_invalid for params given to
 * remote_health) is written within its request deadline; ttl_expired is
 * written within the request deadline that has passed, i.e. with one
 * attempt that does not wait. frame_empty, frame_malformed and
 * request_invalid for a request whose members are not all valid, which have
 * no usable TTL, are written within the frame's channel deadline.
 *
 * Errors that end the channel (glove_remote_executor_serve returns them,
 * after writing one error frame with id null where one can still be
 * written: within the frame's channel deadline, or one attempt that does
 * not wait when that has passed): executor.frame_too_large,
 * executor.frame_truncated, executor.frame_timeout, executor.read_failed
 * (no frame attempted); and the write errors executor.write_timeout and
 * executor.write_failed (no frame attempted), executor.no_memory.
 */

#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/remote_executor/frame.h"
#include "glove/remote_executor/identity.h"

/* The one method. */
#define GLOVE_REMOTE_EXECUTOR_METHOD_HEALTH "remote_health"
/* Bounds of a request. */
#define GLOVE_REMOTE_EXECUTOR_METHOD_MAX 64
#define GLOVE_REMOTE_EXECUTOR_ID_MAX ((int64_t)1 << 53)

/* glove-remote-executor's exit statuses (docs/remote-executor.md, "Exit
 * statuses"). */
enum {
        GLOVE_REMOTE_EXECUTOR_EXIT_OK = 0,       /* end of input at a frame boundary */
        GLOVE_REMOTE_EXECUTOR_EXIT_INTERNAL = 1, /* out of memory, an unexpected failure */
        GLOVE_REMOTE_EXECUTOR_EXIT_USAGE = 2,    /* any argument list but exactly --stdio */
        GLOVE_REMOTE_EXECUTOR_EXIT_IDENTITY = 3, /* the identity refused; no frame read */
        GLOVE_REMOTE_EXECUTOR_EXIT_FRAMING = 4,  /* a frame that ends the channel */
        GLOVE_REMOTE_EXECUTOR_EXIT_OUTPUT = 5,   /* a response not written by its deadline, or the output failed */
};

/*
 * The exit status for an error code that ended the executor (code as set in
 * a struct glove_error by this module; NULL means success, 0):
 * executor.usage 2; executor.identity_* and executor.self_measure 3;
 * executor.frame_* and executor.read_failed 4; executor.write_* 5; any
 * other 1.
 */
int glove_remote_executor_exit_status(const char *code);

/*
 * Answers one frame's payload frame->payload[0..frame->len) (the frame as
 * glove_remote_executor_frame_read returned it) at time now_ms: stores the
 * response object in *response (a new reference the caller owns) and the
 * absolute deadline by which it must be written in *deadline_ms (a
 * deadline already passed means one attempt that does not wait). identity gives the digests
 * remote_health reports (its executable_sha256 is the measured one).
 * Returns 0, or -ENOMEM (executor.no_memory) with *response NULL.
 */
int glove_remote_executor_answer(const struct glove_remote_executor_frame *frame, uint64_t now_ms,
                                 const struct glove_remote_executor_identity *identity, json_t **response,
                                 uint64_t *deadline_ms, struct glove_error *err);

/*
 * Serves the channel: reads frames from in_fd, answers each
 * (glove_remote_executor_answer) and writes the response to out_fd, which
 * must not block (glove_remote_executor_frame_write; the executor passes
 * the fd of glove_remote_executor_output_open), until end of
 * input at a frame boundary (returns 0) or an error that ends the channel
 * (returns it negative with err set; see the top of this header). Reads no
 * frame after an error. channel_timeout_ms is the channel timeout
 * (GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS in the executor).
 */
int glove_remote_executor_serve(int in_fd, int out_fd, const struct glove_remote_executor_clock *clock,
                                uint64_t channel_timeout_ms, const struct glove_remote_executor_identity *identity,
                                struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The local-service framing (spec session-policy.md, "Guest observation
 * channels and Sage guest proposals": "One opaque request and response,
 * each at most 16 KiB, share one absolute deadline"; architecture.md,
 * "Guest specialized-channel admission": "sequential existing G2 frames").
 *
 * A frame is a 4-byte big-endian length N followed by N payload bytes,
 * 1 <= N <= GLOVE_SERVICES_FRAME_MAX. The payload is opaque: never parsed.
 * Frames travel on non-blocking connected stream sockets (AF_UNIX
 * SOCK_STREAM); reads use recv(2), writes send(2) with MSG_NOSIGNAL.
 *
 * Every call takes an absolute deadline (deadline_ms: CLOCK_MONOTONIC
 * milliseconds, glove/base/time.h glove_time_monotonic_ms; 0 means none)
 * and an optional stop descriptor (stop_fd: an eventfd or a pipe's read
 * end, -1 for none): once it is readable the call stops with
 * services.cancelled. Stop is checked before the socket at each wait.
 *
 * Stable error codes:
 *   services.frame_empty      a length of 0 (-EBADMSG)
 *   services.frame_too_large  a length above GLOVE_SERVICES_FRAME_MAX; the
 *                             body is not read (-EMSGSIZE)
 *   services.closed           end of stream: -EPIPE at a frame boundary
 *                             (before any byte of a frame), -EPROTO inside a
 *                             frame (after part of the length or payload);
 *                             on write, the peer is gone (-EPIPE, -ECONNRESET)
 *   services.timeout          the deadline passed (-ETIMEDOUT)
 *   services.cancelled        stop_fd became readable (-ECANCELED)
 *   services.io               any other failure (-errno)
 *   services.invalid_argument a NULL buffer or length (-EINVAL)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* The largest request or response payload, in bytes (16 KiB). */
#define GLOVE_SERVICES_FRAME_MAX 16384
/* Bytes of the length prefix. */
#define GLOVE_SERVICES_FRAME_HEADER 4

/*
 * Reads one frame from fd into buf (GLOVE_SERVICES_FRAME_MAX bytes) and its
 * payload length into *len (1..GLOVE_SERVICES_FRAME_MAX). Reads exactly the
 * frame: no byte past it is consumed. On failure *len is 0 and the stream
 * position is unspecified (the caller must stop using the stream).
 */
int glove_services_frame_read(int fd, int stop_fd, uint64_t deadline_ms, uint8_t *buf, size_t *len,
                              struct glove_error *err);

/*
 * Writes one frame holding buf[0..len) (1 <= len <= GLOVE_SERVICES_FRAME_MAX:
 * services.frame_empty or services.frame_too_large otherwise, nothing sent).
 * Returns 0 once every byte is in the socket's send buffer.
 */
int glove_services_frame_write(int fd, int stop_fd, uint64_t deadline_ms, const uint8_t *buf, size_t len,
                               struct glove_error *err);

/*
 * Tells whether input is waiting on fd without consuming it
 * (recv(MSG_PEEK|MSG_DONTWAIT) of one byte): *queued true when at least one
 * byte is waiting. End of stream (the peer closed or shut down its writing
 * side) is not queued input: *queued false and *eof (may be NULL) true.
 * Returns 0, or -errno with services.closed (-ECONNRESET) or services.io.
 */
int glove_services_queued(int fd, bool *queued, bool *eof, struct glove_error *err);

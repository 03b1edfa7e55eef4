/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The frames of glove-remote-executor's --stdio channel, their receive and
 * write deadlines, and the conversion of a request's TTL into a request
 * deadline (spec/architecture.md, "Construction-only remote backend";
 * docs/remote-executor.md, "Frames").
 *
 * A frame is a 4-byte big-endian payload length N followed by N bytes,
 * 1 <= N <= GLOVE_REMOTE_EXECUTOR_FRAME_MAX. An empty frame (N = 0) is
 * invalid but leaves the stream in step (nothing follows its prefix).
 *
 * Time: every function takes a clock (struct glove_remote_executor_clock),
 * so tests can drive it; times are milliseconds of that clock (the
 * executor's is CLOCK_MONOTONIC, glove_remote_executor_clock_monotonic).
 * Descriptors are the caller's: nothing here opens, closes or changes the
 * flags of one. Readiness is awaited with poll(2); the reader reads with
 * read(2) after POLLIN and takes EAGAIN as "wait again", so a blocking or
 * non-blocking input both work; the writer needs an output that does not
 * block: a socket (written with send(2) MSG_DONTWAIT, whatever its flags),
 * a regular file, or a non-blocking descriptor (O_NONBLOCK); otherwise a
 * write larger than the room in a pipe would block past its deadline.
 * glove/remote_executor/output.h prepares one from standard output without
 * changing the description shared with the caller.
 *
 * Stable error codes (struct glove_error), with their return values:
 *   executor.frame_too_large  a length prefix over the bound (-EMSGSIZE);
 *                             refused from the prefix alone, no payload byte
 *                             is read
 *   executor.frame_empty      a zero length prefix (-ENODATA)
 *   executor.frame_truncated  end of input inside a frame: after 1 to 3
 *                             prefix bytes or inside the payload (-EPIPE)
 *   executor.frame_timeout    the frame's bytes did not all arrive by its
 *                             channel deadline (-ETIMEDOUT), including a
 *                             frame of which no byte arrived
 *   executor.read_failed      poll(2) or read(2) failed (-errno)
 *   executor.ttl_expired      the frame's receipt used up its TTL (-ETIME)
 *   executor.write_timeout    a frame could not be written in full by its
 *                             deadline; the rest is abandoned (-ETIMEDOUT)
 *   executor.write_failed     poll(2) or write(2) failed, e.g. the reader
 *                             went away (-EPIPE) (-errno)
 *   executor.invalid_argument misuse: NULL pointer, a payload of 0 or more
 *                             than GLOVE_REMOTE_EXECUTOR_FRAME_MAX bytes
 *                             (-EINVAL)
 * Every err argument may be NULL.
 */

#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* Largest frame payload, bytes (16 KiB), in both directions. */
#define GLOVE_REMOTE_EXECUTOR_FRAME_MAX (16u * 1024)
/* Length prefix, bytes. */
#define GLOVE_REMOTE_EXECUTOR_FRAME_PREFIX 4
/* The channel timeout, milliseconds (10 s): a frame must arrive whole
 * within this time of its receive start, which is taken before its first
 * byte is awaited (so idle time before a frame counts). */
#define GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS 10000u
/* Bounds of a request's ttl_ms, milliseconds (1 ms to 60 s). */
#define GLOVE_REMOTE_EXECUTOR_TTL_MIN_MS 1
#define GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS 60000

/*
 * A clock: now_ms(ctx) returns the current time in milliseconds; it must
 * not go backwards. ctx is passed through (may be NULL).
 */
struct glove_remote_executor_clock {
        uint64_t (*now_ms)(void *ctx);
        void *ctx;
};

/* The executor's clock: CLOCK_MONOTONIC in milliseconds (glove/base/time.h). */
extern const struct glove_remote_executor_clock glove_remote_executor_clock_monotonic;

/*
 * One received frame. receive_start_ms is the clock's time taken before the
 * frame's first byte was awaited, channel_deadline_ms = receive_start_ms +
 * the channel timeout, complete_ms the clock's time once its last byte was
 * read. payload holds len bytes (len >= 1) followed by a NUL not counted in
 * len.
 */
struct glove_remote_executor_frame {
        uint64_t receive_start_ms;
        uint64_t channel_deadline_ms;
        uint64_t complete_ms;
        size_t len;
        uint8_t payload[GLOVE_REMOTE_EXECUTOR_FRAME_MAX + 1];
};

/*
 * Reads one frame from fd into *out. First takes the receive start (the
 * clock's now) and the channel deadline (receive start + channel_timeout_ms),
 * then reads the 4 prefix bytes and the payload, each read preceded by a
 * poll(2) for POLLIN bounded by the time left to the channel deadline; reads
 * never ask for more bytes than the frame still needs, so nothing of the
 * next frame is consumed.
 *
 * Returns 1 with *out filled; 0 on end of input before any byte of a frame
 * (a clean end of the channel); or a negative error with err set (see the
 * top of this header): -EMSGSIZE, -ENODATA, -EPIPE, -ETIMEDOUT, -errno.
 * out->receive_start_ms and out->channel_deadline_ms are set whatever the
 * outcome (the caller bounds its error response by them); the rest of *out
 * is meaningful only when 1 is returned.
 */
int glove_remote_executor_frame_read(int fd, const struct glove_remote_executor_clock *clock,
                                     uint64_t channel_timeout_ms, struct glove_remote_executor_frame *out,
                                     struct glove_error *err);

/*
 * The request deadline of a request with ttl_ms whose frame's receive
 * started at receive_start_ms, now now_ms: the TTL minus all frame-receive
 * time (now_ms - receive_start_ms; taken as 0 if the clock is behind the
 * start), as an absolute time, receive_start_ms + ttl_ms. ttl_ms must be in
 * [GLOVE_REMOTE_EXECUTOR_TTL_MIN_MS, GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS].
 *
 * Returns 0 and sets *deadline_ms (> now_ms) when time is left; -ETIME
 * (executor.ttl_expired, the message gives the TTL and the receive time)
 * when the receipt used up the TTL (now_ms >= receive_start_ms + ttl_ms),
 * *deadline_ms untouched; -EINVAL (executor.invalid_argument) for a ttl_ms
 * out of bounds or a NULL deadline_ms.
 */
int glove_remote_executor_ttl_deadline(uint64_t receive_start_ms, uint64_t now_ms, int64_t ttl_ms,
                                       uint64_t *deadline_ms, struct glove_error *err);

/*
 * Writes one frame (the prefix and payload[0..len), 1 <= len <=
 * GLOVE_REMOTE_EXECUTOR_FRAME_MAX) to fd, which must not block (a socket,
 * a regular file or a non-blocking descriptor: see the top of this header;
 * glove_remote_executor_output_open prepares one), finishing by deadline_ms: writes what fits, then polls for POLLOUT for at
 * most the time left, until all is written. When deadline_ms has already
 * passed, one write is still attempted without waiting (a frame that fits
 * in the room the output has goes out at once); nothing is ever awaited
 * past deadline_ms.
 *
 * Returns 0 when the whole frame was written; -ETIMEDOUT
 * (executor.write_timeout: the message says how many bytes went out, so
 * the output may hold part of a frame and the channel cannot go on);
 * -errno (executor.write_failed); -EINVAL (executor.invalid_argument).
 */
int glove_remote_executor_frame_write(int fd, const struct glove_remote_executor_clock *clock, uint64_t deadline_ms,
                                      const void *payload, size_t len, struct glove_error *err);

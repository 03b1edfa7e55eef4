/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/remote_executor/frame.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/bytes.h"
#include "glove/base/time.h"

static uint64_t monotonic_now(void *ctx) {
        (void)ctx;
        return glove_time_monotonic_ms();
}

const struct glove_remote_executor_clock glove_remote_executor_clock_monotonic = {
        .now_ms = monotonic_now,
        .ctx = NULL,
};

static uint64_t now_of(const struct glove_remote_executor_clock *clock) {
        return clock->now_ms(clock->ctx);
}

/* Milliseconds left to deadline as a poll(2) timeout (0 when passed). */
static int poll_budget(uint64_t now, uint64_t deadline) {
        if (now >= deadline)
                return 0;
        uint64_t left = deadline - now;
        return left > INT_MAX ? INT_MAX : (int)left;
}

/*
 * Waits for events on fd until deadline. Returns 1 when ready (including
 * POLLHUP/POLLERR: the next read or write tells what happened), 0 when the
 * deadline has passed, or -errno.
 */
static int wait_ready(int fd, short events, const struct glove_remote_executor_clock *clock, uint64_t deadline) {
        for (;;) {
                int budget = poll_budget(now_of(clock), deadline);
                if (budget == 0)
                        return 0;
                struct pollfd p = { .fd = fd, .events = events };
                int r = poll(&p, 1, budget);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (r > 0) {
                        if (p.revents & POLLNVAL)
                                return -EBADF;
                        return 1;
                }
                /* A poll timeout: the loop re-reads the clock and stops
                 * once the deadline has passed. */
        }
}

/*
 * Reads exactly len bytes into buf by deadline. Returns 1 when all arrived,
 * 0 on end of input before the first byte, -EPIPE on end of input after
 * some (*got says how many), -ETIMEDOUT, or -errno.
 */
static int read_by(int fd, uint8_t *buf, size_t len, const struct glove_remote_executor_clock *clock,
                   uint64_t deadline, size_t *got) {
        *got = 0;
        while (*got < len) {
                int r = wait_ready(fd, POLLIN, clock, deadline);
                if (r < 0)
                        return r;
                if (r == 0)
                        return -ETIMEDOUT;
                ssize_t n = read(fd, buf + *got, len - *got);
                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return *got == 0 ? 0 : -EPIPE;
                *got += (size_t)n;
        }
        return 1;
}

int glove_remote_executor_frame_read(int fd, const struct glove_remote_executor_clock *clock,
                                     uint64_t channel_timeout_ms, struct glove_remote_executor_frame *out,
                                     struct glove_error *err) {
        if (!clock || !clock->now_ms || !out)
                return glove_error_set(err, EINVAL, "executor.invalid_argument", "no clock or no frame to read into");
        out->receive_start_ms = now_of(clock);
        out->channel_deadline_ms = out->receive_start_ms + channel_timeout_ms;
        out->complete_ms = 0;
        out->len = 0;

        uint8_t prefix[GLOVE_REMOTE_EXECUTOR_FRAME_PREFIX];
        size_t got;
        int r = read_by(fd, prefix, sizeof(prefix), clock, out->channel_deadline_ms, &got);
        if (r == 0)
                return 0;
        if (r == -EPIPE)
                return glove_error_set(err, EPIPE, "executor.frame_truncated",
                                       "the input ended after %zu of the %d bytes of a frame's length prefix", got,
                                       GLOVE_REMOTE_EXECUTOR_FRAME_PREFIX);
        if (r == -ETIMEDOUT)
                return glove_error_set(err, ETIMEDOUT, "executor.frame_timeout",
                                       "%zu of the %d bytes of a frame's length prefix arrived within the channel "
                                       "timeout of %llu ms",
                                       got, GLOVE_REMOTE_EXECUTOR_FRAME_PREFIX, (unsigned long long)channel_timeout_ms);
        if (r < 0)
                return glove_error_set(err, -r, "executor.read_failed", "reading the input failed: %s",
                                       glove_errno_text(-r));

        uint32_t n = glove_get_be32(prefix);
        if (n == 0)
                return glove_error_set(err, ENODATA, "executor.frame_empty",
                                       "a frame of zero bytes (a frame holds one JSON object)");
        if (n > GLOVE_REMOTE_EXECUTOR_FRAME_MAX)
                return glove_error_set(err, EMSGSIZE, "executor.frame_too_large",
                                       "a frame of %u bytes exceeds the bound of %u bytes", n,
                                       GLOVE_REMOTE_EXECUTOR_FRAME_MAX);

        r = read_by(fd, out->payload, n, clock, out->channel_deadline_ms, &got);
        if (r == 0 || r == -EPIPE)
                return glove_error_set(err, EPIPE, "executor.frame_truncated",
                                       "the input ended after %zu of the %u bytes of a frame", got, n);
        if (r == -ETIMEDOUT)
                return glove_error_set(err, ETIMEDOUT, "executor.frame_timeout",
                                       "%zu of the %u bytes of a frame arrived within the channel timeout of %llu ms",
                                       got, n, (unsigned long long)channel_timeout_ms);
        if (r < 0)
                return glove_error_set(err, -r, "executor.read_failed", "reading the input failed: %s",
                                       glove_errno_text(-r));
        out->payload[n] = '\0';
        out->len = n;
        out->complete_ms = now_of(clock);
        return 1;
}

int glove_remote_executor_ttl_deadline(uint64_t receive_start_ms, uint64_t now_ms, int64_t ttl_ms,
                                       uint64_t *deadline_ms, struct glove_error *err) {
        if (!deadline_ms || ttl_ms < GLOVE_REMOTE_EXECUTOR_TTL_MIN_MS || ttl_ms > GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS)
                return glove_error_set(err, EINVAL, "executor.invalid_argument",
                                       "a TTL of %lld ms is outside %d..%d ms", (long long)ttl_ms,
                                       GLOVE_REMOTE_EXECUTOR_TTL_MIN_MS, GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS);
        uint64_t received = now_ms > receive_start_ms ? now_ms - receive_start_ms : 0;
        if (received >= (uint64_t)ttl_ms)
                return glove_error_set(err, ETIME, "executor.ttl_expired",
                                       "the request's TTL of %lld ms was used up while its frame was received "
                                       "(%llu ms)",
                                       (long long)ttl_ms, (unsigned long long)received);
        *deadline_ms = now_ms + ((uint64_t)ttl_ms - received);
        return 0;
}

/* Writes what fits of buf without waiting: returns bytes written (0 when
 * the output is full), or -errno. A socket is written with send(2)
 * MSG_DONTWAIT, which does not wait whatever its description's flags (so
 * they need not change); any other descriptor with write(2), which waits
 * unless the descriptor is non-blocking or a regular file. */
static ssize_t write_some(int fd, const uint8_t *buf, size_t len) {
        for (;;) {
                ssize_t n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == ENOTSOCK)
                        n = write(fd, buf, len);
                if (n >= 0)
                        return n;
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN)
                        return 0;
                return -errno;
        }
}

int glove_remote_executor_frame_write(int fd, const struct glove_remote_executor_clock *clock, uint64_t deadline_ms,
                                      const void *payload, size_t len, struct glove_error *err) {
        if (!clock || !clock->now_ms || !payload || len == 0 || len > GLOVE_REMOTE_EXECUTOR_FRAME_MAX)
                return glove_error_set(err, EINVAL, "executor.invalid_argument",
                                       "a frame of %zu bytes (1..%u) or no clock", len,
                                       GLOVE_REMOTE_EXECUTOR_FRAME_MAX);
        uint8_t buf[GLOVE_REMOTE_EXECUTOR_FRAME_PREFIX + GLOVE_REMOTE_EXECUTOR_FRAME_MAX];
        glove_put_be32(buf, (uint32_t)len);
        memcpy(buf + GLOVE_REMOTE_EXECUTOR_FRAME_PREFIX, payload, len);
        size_t total = GLOVE_REMOTE_EXECUTOR_FRAME_PREFIX + len, done = 0;
        for (;;) {
                ssize_t n = write_some(fd, buf + done, total - done);
                if (n < 0)
                        return glove_error_set(err, (int)-n, "executor.write_failed",
                                               "writing a response failed after %zu of %zu bytes: %s", done, total,
                                               glove_errno_text((int)-n));
                done += (size_t)n;
                if (done == total)
                        return 0;
                int r = wait_ready(fd, POLLOUT, clock, deadline_ms);
                if (r < 0)
                        return glove_error_set(err, -r, "executor.write_failed",
                                               "waiting to write a response failed after %zu of %zu bytes: %s", done,
                                               total, glove_errno_text(-r));
                if (r == 0)
                        return glove_error_set(err, ETIMEDOUT, "executor.write_timeout",
                                               "a response could not be written by its deadline: %zu of %zu bytes "
                                               "went out, the rest was abandoned",
                                               done, total);
        }
}

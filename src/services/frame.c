/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Length-prefixed frames with a deadline and a stop descriptor
 * (glove/services/frame.h).
 */
#include "glove/services/frame.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "glove/base/time.h"
#include "internal.h"

int svc_wait(int fd, short events, int stop_fd, uint64_t deadline_ms, const char *what, struct glove_error *err) {
        for (;;) {
                int timeout = -1;
                if (deadline_ms) {
                        uint64_t now = glove_time_monotonic_ms();
                        if (now >= deadline_ms) {
                                /* A stop that came first still wins. */
                                struct pollfd s = { .fd = stop_fd, .events = POLLIN };
                                if (stop_fd >= 0 && poll(&s, 1, 0) > 0 && (s.revents & (POLLIN | POLLHUP | POLLERR)))
                                        break;
                                return glove_error_set(err, ETIMEDOUT, "services.timeout",
                                                       "%s: the deadline passed", what);
                        }
                        uint64_t left = deadline_ms - now;
                        timeout = left > INT_MAX ? INT_MAX : (int)left;
                }
                struct pollfd p[2] = {
                        { .fd = stop_fd, .events = POLLIN },
                        { .fd = fd, .events = events },
                };
                int r = poll(p, 2, timeout);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return glove_error_set(err, errno, "services.io", "%s: poll: %s", what, strerror(errno));
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
                        break;
                if (fd >= 0 && p[1].revents)
                        return 0;
                /* Timed out (or spurious): the deadline test above decides. */
                if (!deadline_ms)
                        continue;
        }
        return glove_error_set(err, ECANCELED, "services.cancelled", "%s: cancelled", what);
}

/* Reads exactly n bytes into buf; *got counts the bytes read so far of the
 * frame (for the boundary rule). */
static int read_exact(int fd, int stop_fd, uint64_t deadline_ms, uint8_t *buf, size_t n, size_t *got,
                      struct glove_error *err) {
        size_t off = 0;
        while (off < n) {
                ssize_t k = recv(fd, buf + off, n - off, MSG_DONTWAIT);
                if (k > 0) {
                        off += (size_t)k;
                        *got += (size_t)k;
                        continue;
                }
                if (k == 0) {
                        if (*got == 0)
                                return glove_error_set(err, EPIPE, "services.closed",
                                                       "the peer closed the stream (at a frame boundary)");
                        return glove_error_set(err, EPROTO, "services.closed",
                                               "the peer closed the stream inside a frame (after %zu bytes)", *got);
                }
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                        int r = svc_wait(fd, POLLIN, stop_fd, deadline_ms, "reading a frame", err);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (errno == ECONNRESET)
                        return glove_error_set(err, ECONNRESET, "services.closed", "the peer reset the stream");
                return glove_error_set(err, errno, "services.io", "recv: %s", strerror(errno));
        }
        return 0;
}

int glove_services_frame_read(int fd, int stop_fd, uint64_t deadline_ms, uint8_t *buf, size_t *len,
                              struct glove_error *err) {
        if (!buf || !len)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no frame buffer or length");
        *len = 0;
        uint8_t h[GLOVE_SERVICES_FRAME_HEADER];
        size_t got = 0;
        int r = read_exact(fd, stop_fd, deadline_ms, h, sizeof(h), &got, err);
        if (r < 0)
                return r;
        uint32_t n = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | (uint32_t)h[3];
        if (n == 0)
                return glove_error_set(err, EBADMSG, "services.frame_empty", "an empty frame (length 0)");
        if (n > GLOVE_SERVICES_FRAME_MAX)
                return glove_error_set(err, EMSGSIZE, "services.frame_too_large",
                                       "a frame of %u bytes (at most %d)", (unsigned)n, GLOVE_SERVICES_FRAME_MAX);
        if ((r = read_exact(fd, stop_fd, deadline_ms, buf, n, &got, err)) < 0)
                return r;
        *len = n;
        return 0;
}

int glove_services_frame_write(int fd, int stop_fd, uint64_t deadline_ms, const uint8_t *buf, size_t len,
                               struct glove_error *err) {
        if (!buf && len > 0)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no frame buffer");
        if (len == 0)
                return glove_error_set(err, EBADMSG, "services.frame_empty", "an empty frame cannot be sent");
        if (len > GLOVE_SERVICES_FRAME_MAX)
                return glove_error_set(err, EMSGSIZE, "services.frame_too_large",
                                       "a frame of %zu bytes cannot be sent (at most %d)", len,
                                       GLOVE_SERVICES_FRAME_MAX);
        uint8_t out[GLOVE_SERVICES_FRAME_HEADER + GLOVE_SERVICES_FRAME_MAX];
        out[0] = (uint8_t)(len >> 24);
        out[1] = (uint8_t)(len >> 16);
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        memcpy(out + GLOVE_SERVICES_FRAME_HEADER, buf, len);
        size_t total = len + GLOVE_SERVICES_FRAME_HEADER, off = 0;
        while (off < total) {
                ssize_t k = send(fd, out + off, total - off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k >= 0) {
                        off += (size_t)k;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                        int r = svc_wait(fd, POLLOUT, stop_fd, deadline_ms, "writing a frame", err);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (errno == EPIPE || errno == ECONNRESET)
                        return glove_error_set(err, errno, "services.closed", "the peer closed the stream: %s",
                                               strerror(errno));
                return glove_error_set(err, errno, "services.io", "send: %s", strerror(errno));
        }
        return 0;
}

int glove_services_queued(int fd, bool *queued, bool *eof, struct glove_error *err) {
        if (!queued)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no output pointer");
        *queued = false;
        if (eof)
                *eof = false;
        for (;;) {
                uint8_t b;
                ssize_t k = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
                if (k > 0) {
                        *queued = true;
                        return 0;
                }
                if (k == 0) {
                        if (eof)
                                *eof = true;
                        return 0;
                }
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return 0;
                if (errno == ECONNRESET)
                        return glove_error_set(err, ECONNRESET, "services.closed", "the peer reset the stream");
                return glove_error_set(err, errno, "services.io", "recv: %s", strerror(errno));
        }
}

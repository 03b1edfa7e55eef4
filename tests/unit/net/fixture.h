/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared pieces of the net module's end-to-end tests: a TCP echo server on
 * the loopback (the destination), an audit recorder, and a small proxy
 * client. Everything is bounded: sockets carry 5 s receive and send
 * timeouts, waits end after 5 s.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/time.h"
#include "glove/net/relay.h"

#define FX_IO_TIMEOUT_MS 5000
#define FX_ECHO_CONNS 64

/* ---- echo server -------------------------------------------------------- */

struct echo {
        int lfd, stop;
        uint16_t port;
        pthread_t thread;
        atomic_int accepted;
        int conns[FX_ECHO_CONNS];
};

static void *echo_main(void *arg) {
        struct echo *e = arg;
        for (int i = 0; i < FX_ECHO_CONNS; i++)
                e->conns[i] = -1;
        for (;;) {
                struct pollfd p[2 + FX_ECHO_CONNS];
                p[0] = (struct pollfd){ .fd = e->stop, .events = POLLIN };
                p[1] = (struct pollfd){ .fd = e->lfd, .events = POLLIN };
                for (int i = 0; i < FX_ECHO_CONNS; i++)
                        p[2 + i] = (struct pollfd){ .fd = e->conns[i], .events = POLLIN };
                if (poll(p, 2 + FX_ECHO_CONNS, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[0].revents)
                        break;
                if (p[1].revents & POLLIN) {
                        int fd = accept4(e->lfd, NULL, NULL, SOCK_CLOEXEC);
                        if (fd >= 0) {
                                atomic_fetch_add(&e->accepted, 1);
                                int slot = -1;
                                for (int i = 0; i < FX_ECHO_CONNS && slot < 0; i++)
                                        if (e->conns[i] < 0)
                                                slot = i;
                                if (slot < 0)
                                        close(fd);
                                else
                                        e->conns[slot] = fd;
                        }
                }
                for (int i = 0; i < FX_ECHO_CONNS; i++) {
                        if (e->conns[i] < 0 || !p[2 + i].revents)
                                continue;
                        char buf[65536];
                        ssize_t n = read(e->conns[i], buf, sizeof(buf));
                        ssize_t off = 0;
                        while (n > 0 && off < n) {
                                ssize_t w = send(e->conns[i], buf + off, (size_t)(n - off), MSG_NOSIGNAL);
                                if (w <= 0)
                                        break;
                                off += w;
                        }
                        if (n <= 0 || off < n) {
                                close(e->conns[i]);
                                e->conns[i] = -1;
                        }
                }
        }
        for (int i = 0; i < FX_ECHO_CONNS; i++)
                if (e->conns[i] >= 0)
                        close(e->conns[i]);
        return NULL;
}

/* Starts an echo server on 127.0.0.1 (family AF_INET) or ::1 (AF_INET6).
 * Returns 0 or -errno (no such address here). */
static __attribute__((unused)) int echo_start(struct echo *e, int family) {
        memset(e, 0, sizeof(*e));
        e->lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (e->lfd < 0)
                return -errno;
        struct sockaddr_storage ss = { 0 };
        socklen_t len;
        if (family == AF_INET) {
                struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
                sin->sin_family = AF_INET;
                sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                len = sizeof(*sin);
        } else {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
                sin6->sin6_family = AF_INET6;
                sin6->sin6_addr = in6addr_loopback;
                len = sizeof(*sin6);
        }
        if (bind(e->lfd, (struct sockaddr *)&ss, len) < 0 || listen(e->lfd, 64) < 0 ||
            getsockname(e->lfd, (struct sockaddr *)&ss, &len) < 0) {
                int r = -errno;
                close(e->lfd);
                return r;
        }
        e->port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                          : ((struct sockaddr_in6 *)&ss)->sin6_port);
        e->stop = eventfd(0, EFD_CLOEXEC);
        if (e->stop < 0 || pthread_create(&e->thread, NULL, echo_main, e) != 0)
                abort();
        return 0;
}

static __attribute__((unused)) void echo_stop(struct echo *e) {
        uint64_t one = 1;
        if (write(e->stop, &one, sizeof(one)) != sizeof(one))
                abort();
        pthread_join(e->thread, NULL);
        close(e->stop);
        close(e->lfd);
}

/* ---- audit recorder ----------------------------------------------------- */

struct rec {
        enum glove_net_egress_phase phase;
        bool allowed;
        enum glove_net_egress_reason reason;
        uint64_t id;
        int status;
        char method[40];
        char host[256];
        uint16_t port;
        char address[64];
        char cls[32];
        uint64_t up, down, duration_ms;
        bool mcp_endpoint;
};

#define FX_RECS_MAX 64

struct recorder {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct rec recs[FX_RECS_MAX];
        int n;
        int refuse_open; /* return -EIO for OPEN events */
        int concurrent, max_concurrent;
};

static __attribute__((unused)) int record_event(const struct glove_net_egress_event *ev, void *userdata) {
        struct recorder *rc = userdata;
        pthread_mutex_lock(&rc->lock);
        if (++rc->concurrent > rc->max_concurrent)
                rc->max_concurrent = rc->concurrent;
        if (rc->n < FX_RECS_MAX) {
                struct rec *r = &rc->recs[rc->n++];
                r->phase = ev->phase;
                r->allowed = ev->allowed;
                r->reason = ev->reason;
                r->id = ev->connection_id;
                r->status = ev->http_status;
                snprintf(r->method, sizeof(r->method), "%s", ev->method);
                snprintf(r->host, sizeof(r->host), "%s", ev->host);
                r->port = ev->port;
                snprintf(r->address, sizeof(r->address), "%s", ev->address);
                snprintf(r->cls, sizeof(r->cls), "%s", ev->address_class);
                r->up = ev->bytes_up;
                r->down = ev->bytes_down;
                r->duration_ms = ev->duration_ms;
                r->mcp_endpoint = ev->mcp_endpoint;
        }
        rc->concurrent--;
        pthread_cond_broadcast(&rc->cond);
        int refuse = ev->phase == GLOVE_NET_EGRESS_OPEN && rc->refuse_open;
        pthread_mutex_unlock(&rc->lock);
        return refuse ? -EIO : 0;
}

static __attribute__((unused)) void recorder_init(struct recorder *rc) {
        memset(rc, 0, sizeof(*rc));
        pthread_mutex_init(&rc->lock, NULL);
        pthread_cond_init(&rc->cond, NULL);
}

static __attribute__((unused)) void recorder_destroy(struct recorder *rc) {
        pthread_mutex_destroy(&rc->lock);
        pthread_cond_destroy(&rc->cond);
}

/* Waits until at least n events are recorded (5 s at most); returns the
 * count. */
static __attribute__((unused)) int recorder_wait(struct recorder *rc, int n) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += FX_IO_TIMEOUT_MS / 1000;
        pthread_mutex_lock(&rc->lock);
        while (rc->n < n && pthread_cond_timedwait(&rc->cond, &rc->lock, &deadline) == 0)
                ;
        int got = rc->n;
        pthread_mutex_unlock(&rc->lock);
        return got;
}

/* ---- client ------------------------------------------------------------- */

static __attribute__((unused)) void set_timeouts(int fd) {
        struct timeval tv = { .tv_sec = FX_IO_TIMEOUT_MS / 1000 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A TCP connection to 127.0.0.1:port, or -errno. */
static __attribute__((unused)) int tcp_connect(uint16_t port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        set_timeouts(fd);
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static __attribute__((unused)) int write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Reads a response head byte by byte (so no tunnel byte is consumed) into
 * buf; returns the status code, or -1 on EOF, error or timeout. A reset
 * after a complete head still counts. */
static __attribute__((unused)) int read_status(int fd, char *buf, size_t size) {
        size_t n = 0;
        while (n + 1 < size) {
                ssize_t r = recv(fd, buf + n, 1, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                n++;
                buf[n] = '\0';
                if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0)
                        break;
        }
        buf[n] = '\0';
        int status;
        if (n < 12 || sscanf(buf, "HTTP/1.1 %d ", &status) != 1)
                return -1;
        return status;
}

/* Reads until EOF (or error); returns bytes read, -1 on timeout. */
static __attribute__((unused)) ssize_t read_to_eof(int fd, char *buf, size_t size) {
        size_t n = 0;
        for (;;) {
                char sink[4096];
                char *dst = n < size ? buf + n : sink;
                size_t room = n < size ? size - n : sizeof(sink);
                ssize_t r = recv(fd, dst, room, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return -1;
                if (r <= 0)
                        return (ssize_t)n;
                n += (size_t)r;
        }
}

/* Sends out[0..len) while reading back into in[0..len) (the echo), then
 * half-closes and expects EOF. Returns 0 when everything came back equal. */
static __attribute__((unused)) int exchange(int fd, const char *out, size_t len, char *in) {
        size_t sent = 0, got = 0;
        bool shut = false;
        uint64_t deadline = glove_time_monotonic_ms() + FX_IO_TIMEOUT_MS;
        for (;;) {
                if (sent == len && !shut) {
                        shutdown(fd, SHUT_WR);
                        shut = true;
                }
                struct pollfd p = { .fd = fd, .events = POLLIN | (sent < len ? POLLOUT : 0) };
                uint64_t now = glove_time_monotonic_ms();
                if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
                        return -1;
                if (p.revents & POLLOUT) {
                        size_t chunk = len - sent > 65536 ? 65536 : len - sent;
                        ssize_t n = send(fd, out + sent, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (n > 0)
                                sent += (size_t)n;
                        else if (n < 0 && errno != EAGAIN)
                                return -1;
                }
                if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
                        char sink[1];
                        char *dst = got < len ? in + got : sink;
                        size_t room = got < len ? len - got : 1;
                        ssize_t n = recv(fd, dst, room, MSG_DONTWAIT);
                        if (n == 0)
                                return got == len && sent == len && memcmp(in, out, len) == 0 ? 0 : -1;
                        if (n < 0 && errno != EAGAIN)
                                return -1;
                        if (n > 0) {
                                if (got >= len)
                                        return -1; /* more than was sent */
                                got += (size_t)n;
                        }
                }
        }
}

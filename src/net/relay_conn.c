/* SPDX-License-Identifier: Apache-2.0 */
/* One connection of the egress relay: request head, decision, connect,
 * tunnel (include/glove/net/relay.h describes the steps). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/time.h"
#include "glove/net/address.h"
#include "internal.h"

/* Bytes a tunnel moves per splice(2) call (the pipe's size is raised to
 * this where the system allows). */
#define TUNNEL_PIPE_SIZE (1024 * 1024)
/* Longest answer head of a forwarded request that is rewritten (larger ones
 * pass unchanged). */
#define RESPONSE_HEAD_MAX (16 * 1024)

int glove_net_wait(int fd, short events, int stop_fd, uint64_t deadline_ms) {
        for (;;) {
                uint64_t now = glove_time_monotonic_ms();
                if (now >= deadline_ms)
                        return 0;
                uint64_t left = deadline_ms - now;
                struct pollfd p[2] = { { .fd = stop_fd, .events = POLLIN }, { .fd = fd, .events = events } };
                int r = poll(p, 2, left > 60000 ? 60000 : (int)left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 || p[0].revents)
                        return -1;
                if (p[1].revents)
                        return 1;
        }
}

static void write_answer(int fd, int stop_fd, int status, enum glove_net_egress_reason reason, bool may_block) {
        char buf[GLOVE_NET_RESPONSE_MAX];
        size_t len = glove_net_response_format(status, reason, buf), off = 0;
        uint64_t deadline = glove_time_monotonic_ms() + GLOVE_NET_LINGER_MS;
        while (off < len) {
                ssize_t n = send(fd, buf + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0) {
                        off += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && may_block && glove_net_wait(fd, POLLOUT, stop_fd, deadline) > 0)
                        continue;
                return;
        }
}

void glove_net_answer_and_close(int fd, int stop_fd, int status, enum glove_net_egress_reason reason,
                                bool may_block) {
        if (status > 0)
                write_answer(fd, stop_fd, status, reason, may_block);
        /* Lingering close: send FIN, then drop what the agent still sends for
         * a bounded time, so its kernel does not answer our answer with a
         * reset that would discard it. */
        (void)shutdown(fd, SHUT_WR);
        uint64_t deadline = glove_time_monotonic_ms() + GLOVE_NET_LINGER_MS;
        size_t dropped = 0;
        char sink[4096];
        while (dropped < GLOVE_NET_LINGER_BYTES) {
                ssize_t n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
                if (n > 0) {
                        dropped += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && may_block && glove_net_wait(fd, POLLIN, stop_fd, deadline) > 0)
                        continue;
                break;
        }
        (void)close(fd);
}

/* The state of one connection while it is served. */
struct conn {
        struct glove_net_relay *r;
        struct glove_net_conn *slot;
        int client, dest;
        struct glove_net_egress_event ev;
        char host[GLOVE_NET_HOST_MAX + 1];
        char address[GLOVE_NET_ADDRESS_TEXT_MAX];
        char method[GLOVE_NET_METHOD_MAX + 1];
        char head[GLOVE_NET_HEAD_MAX];
        size_t head_got, head_len;
        bool private_ok; /* the matched rules let this destination be private */
        bool forward;    /* a plain-HTTP request forwarded, not a CONNECT tunnel */
        char *fwd;       /* forward: the rewritten head, then the bytes read after
                          * the received head; sent upstream first (owned) */
        size_t fwd_len;
        char *resp;      /* forward: the upstream's answer as read until its head
                          * is complete, then what the agent gets first (owned) */
        size_t resp_got;
        bool resp_done;  /* the answer's head has been handled: splice the rest */
};

static void emit(struct conn *c, enum glove_net_egress_phase phase, enum glove_net_egress_reason reason, int status) {
        c->ev.phase = phase;
        c->ev.allowed = phase != GLOVE_NET_EGRESS_DENY;
        c->ev.reason = reason;
        c->ev.http_status = status;
        c->ev.duration_ms = glove_time_monotonic_ms() - c->slot->start_ms;
}

/* Refuses the connection: audits, then answers (status 0: silently) and
 * closes. The record comes first, so that whoever sees the answer (the agent
 * issuing its next request, an operator reading the log) finds the denial on
 * record, in the order the requests were answered. */
static void deny(struct conn *c, enum glove_net_egress_reason reason, int status) {
        emit(c, GLOVE_NET_EGRESS_DENY, reason, status);
        (void)glove_net_relay_emit(c->r, &c->ev);
        glove_net_answer_and_close(c->client, c->r->stop_fd, status, reason, true);
        c->client = -1;
}

/* True when fd is a connected TCP socket (the only thing the helper passes). */
static bool is_tcp_stream(int fd) {
        int type = 0, domain = 0;
        socklen_t len = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
                return false;
        len = sizeof(domain);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
                return false;
        return domain == AF_INET || domain == AF_INET6;
}

static void set_nonblock_nodelay(int fd) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Reads until the head is complete. Returns OK or the reason to refuse. */
static enum glove_net_egress_reason read_head(struct conn *c) {
        uint64_t deadline = c->slot->start_ms + c->r->head_timeout_ms;
        for (;;) {
                c->head_len = glove_net_head_end(c->head, c->head_got);
                if (c->head_len)
                        return GLOVE_NET_EGRESS_OK;
                /* A bare LF can never end in CRLF CRLF: say so now rather than
                 * after the head deadline. */
                if (glove_net_head_bare_lf(c->head, c->head_got))
                        return GLOVE_NET_EGRESS_BAD_REQUEST;
                if (c->head_got == sizeof(c->head))
                        return GLOVE_NET_EGRESS_HEAD_TOO_LARGE;
                ssize_t n = recv(c->client, c->head + c->head_got, sizeof(c->head) - c->head_got, MSG_DONTWAIT);
                if (n > 0) {
                        c->head_got += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        int w = glove_net_wait(c->client, POLLIN, c->r->stop_fd, deadline);
                        if (w == 0)
                                return GLOVE_NET_EGRESS_TIMEOUT;
                        if (w < 0)
                                return GLOVE_NET_EGRESS_RELAY_STOPPED;
                        continue;
                }
                return GLOVE_NET_EGRESS_INCOMPLETE_REQUEST;
        }
}

/* The checked destinations of one request. */
struct destinations {
        struct sockaddr_storage addr[GLOVE_NET_CONNECT_ADDRESSES_MAX];
        socklen_t len[GLOVE_NET_CONNECT_ADDRESSES_MAX];
        size_t n;
};

static void note_address(struct conn *c, const struct sockaddr *sa) {
        const void *a = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                                                 : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (!inet_ntop(sa->sa_family, a, c->address, sizeof(c->address)))
                c->address[0] = '\0';
        c->ev.address_class = glove_net_address_class_name(glove_net_address_classify(sa));
}

/* Checks one resolved address and keeps it. Returns false (with the
 * offending address noted) when it is private and that is not allowed. */
static bool check_address(struct conn *c, const struct sockaddr *sa, socklen_t len, uint16_t port,
                          struct destinations *d) {
        if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
                return true; /* never connected to */
        if (glove_net_address_class_is_private(glove_net_address_classify(sa)) && !c->private_ok) {
                note_address(c, sa);
                return false;
        }
        if (d->n == GLOVE_NET_CONNECT_ADDRESSES_MAX || len > sizeof(d->addr[0]))
                return true;
        memcpy(&d->addr[d->n], sa, len);
        if (sa->sa_family == AF_INET)
                ((struct sockaddr_in *)&d->addr[d->n])->sin_port = htons(port);
        else
                ((struct sockaddr_in6 *)&d->addr[d->n])->sin6_port = htons(port);
        d->len[d->n++] = len;
        return true;
}

/* Resolves and checks every address. Returns OK or the reason to refuse. */
static enum glove_net_egress_reason resolve(struct conn *c, const struct glove_net_request_head *h,
                                            struct destinations *d) {
        d->n = 0;
        if (h->host.kind == GLOVE_NET_HOST_IPV4) {
                struct sockaddr_in sin = { .sin_family = AF_INET };
                memcpy(&sin.sin_addr, h->host.addr, 4);
                return check_address(c, (struct sockaddr *)&sin, sizeof(sin), h->port, d)
                               ? GLOVE_NET_EGRESS_OK
                               : GLOVE_NET_EGRESS_PRIVATE_ADDRESS;
        }
        if (h->host.kind == GLOVE_NET_HOST_IPV6) {
                struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
                memcpy(&sin6.sin6_addr, h->host.addr, 16);
                return check_address(c, (struct sockaddr *)&sin6, sizeof(sin6), h->port, d)
                               ? GLOVE_NET_EGRESS_OK
                               : GLOVE_NET_EGRESS_PRIVATE_ADDRESS;
        }
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP };
        struct addrinfo *res = NULL;
        if (getaddrinfo(h->host.text, NULL, &hints, &res) != 0 || !res)
                return GLOVE_NET_EGRESS_RESOLVE_FAILED;
        enum glove_net_egress_reason reason = GLOVE_NET_EGRESS_OK;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
                if (!check_address(c, ai->ai_addr, ai->ai_addrlen, h->port, d)) {
                        reason = GLOVE_NET_EGRESS_PRIVATE_ADDRESS;
                        break;
                }
        freeaddrinfo(res);
        if (reason == GLOVE_NET_EGRESS_OK && d->n == 0)
                reason = GLOVE_NET_EGRESS_RESOLVE_FAILED;
        return reason;
}

/* Connects to the checked addresses in order. Returns OK (c->dest set),
 * CONNECT_FAILED (*status 502 or 504) or RELAY_STOPPED. */
static enum glove_net_egress_reason connect_checked(struct conn *c, const struct destinations *d, int *status) {
        uint64_t deadline = glove_time_monotonic_ms() + c->r->connect_timeout_ms;
        *status = 502;
        for (size_t i = 0; i < d->n; i++) {
                const struct sockaddr *sa = (const struct sockaddr *)&d->addr[i];
                note_address(c, sa);
                _cleanup_close_ int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (fd < 0)
                        continue;
                if (connect(fd, sa, d->len[i]) < 0) {
                        if (errno != EINPROGRESS && errno != EINTR)
                                continue;
                        int w = glove_net_wait(fd, POLLOUT, c->r->stop_fd, deadline);
                        if (w < 0)
                                return GLOVE_NET_EGRESS_RELAY_STOPPED;
                        if (w == 0) {
                                *status = 504;
                                return GLOVE_NET_EGRESS_CONNECT_FAILED;
                        }
                        int e = 0;
                        socklen_t len = sizeof(e);
                        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0 || e != 0)
                                continue;
                }
                c->dest = TAKE_FD(fd);
                return GLOVE_NET_EGRESS_OK;
        }
        return GLOVE_NET_EGRESS_CONNECT_FAILED;
}

/* One direction of a tunnel. */
struct direction {
        int src, dst;
        int pipe[2];
        size_t queued;       /* bytes in the pipe */
        const char *pre;     /* bytes read with the head, sent first */
        size_t pre_len;
        bool eof, shut;
        /* Readiness as last seen: false after EAGAIN, true again when poll
         * reports the socket (no splice that is known to fail). */
        bool src_ready, dst_ready;
        uint64_t *moved;
};

static bool pending(const struct direction *d) {
        return d->queued > 0 || d->pre_len > 0;
}

/* Moves what it can without blocking. Returns 0 or -errno. */
static int step(struct direction *d, size_t chunk, bool *progress) {
        while (d->pre_len > 0) {
                ssize_t n = send(d->dst, d->pre, d->pre_len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                if (n < 0)
                        return -errno;
                d->pre += n;
                d->pre_len -= (size_t)n;
                *d->moved += (uint64_t)n;
                *progress = true;
        }
        /* The pipe is refilled once it is empty: one large splice each way
         * rather than many small ones (CPU per byte is what a busy host
         * runs out of). */
        if (d->queued == 0 && !d->eof && d->src_ready) {
                ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, chunk, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n > 0) {
                        d->queued = (size_t)n;
                        *progress = true;
                } else if (n == 0) {
                        d->eof = true;
                        *progress = true;
                } else if (errno == EAGAIN) {
                        d->src_ready = false;
                } else if (errno != EINTR) {
                        return -errno;
                }
        }
        while (d->queued > 0 && d->dst_ready) {
                ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->queued, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        d->dst_ready = false;
                        break;
                }
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                d->queued -= (size_t)n;
                *d->moved += (uint64_t)n;
                *progress = true;
        }
        if (d->eof && !pending(d) && !d->shut) {
                (void)shutdown(d->dst, SHUT_WR);
                d->shut = true;
                *progress = true;
        }
        return 0;
}

static bool done(const struct direction *d) {
        return d->shut;
}

static short want(const struct direction *in_src, const struct direction *out_dst) {
        short ev = 0;
        if (!pending(in_src) && !in_src->eof)
                ev |= POLLIN;
        if (pending(out_dst))
                ev |= POLLOUT;
        return ev;
}

static int open_pipe(int p[2]) {
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        (void)fcntl(p[1], F_SETPIPE_SZ, TUNNEL_PIPE_SIZE);
        int size = fcntl(p[1], F_GETPIPE_SZ);
        return size > 0 ? size : 65536;
}

/* Forwarded request: reads the upstream's answer until its head is complete,
 * then queues it for the agent (down->pre) with `Connection: close` (the
 * agent's connection ends with this answer), or unchanged when it is not a
 * final HTTP/1.x head within RESPONSE_HEAD_MAX. Returns 0 or -errno. */
static int response_head(struct conn *c, struct direction *down, bool *progress) {
        if (!c->resp) {
                c->resp = malloc(RESPONSE_HEAD_MAX);
                if (!c->resp)
                        return -ENOMEM;
        }
        ssize_t n = recv(c->dest, c->resp + c->resp_got, RESPONSE_HEAD_MAX - c->resp_got, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        *progress = true;
        if (n == 0)
                down->eof = true;
        c->resp_got += (size_t)n;
        size_t end = glove_net_head_end(c->resp, c->resp_got);
        bool not_http = c->resp_got >= 5 && memcmp(c->resp, "HTTP/", 5) != 0;
        if (!end && !not_http && n > 0 && c->resp_got < RESPONSE_HEAD_MAX)
                return 0; /* more to come */
        c->resp_done = true;
        down->pre = c->resp;
        down->pre_len = c->resp_got;
        if (!end || not_http)
                return 0;
        size_t rest = c->resp_got - end, cap = end + 32;
        char *out = malloc(cap + rest);
        if (!out)
                return -ENOMEM;
        size_t len = glove_net_response_close(c->resp, end, out, cap);
        if (len == 0) {
                free(out);
                return 0;
        }
        memcpy(out + len, c->resp + end, rest);
        free(c->resp);
        c->resp = out;
        down->pre = out;
        down->pre_len = len + rest;
        return 0;
}

/* Relays until the tunnel ends; returns why it ended. */
static enum glove_net_egress_reason tunnel(struct conn *c) {
        struct direction up = { .src = c->client, .dst = c->dest, .pipe = { -1, -1 }, .src_ready = true, .dst_ready = true,
                                .moved = &c->ev.bytes_up };
        struct direction down = { .src = c->dest, .dst = c->client, .pipe = { -1, -1 }, .src_ready = true,
                                  .dst_ready = true, .moved = &c->ev.bytes_down };
        if (c->forward) {
                up.pre = c->fwd;
                up.pre_len = c->fwd_len;
        } else {
                up.pre = c->head + c->head_len;
                up.pre_len = c->head_got - c->head_len;
        }
        enum glove_net_egress_reason reason = GLOVE_NET_EGRESS_INTERNAL;
        int up_chunk = open_pipe(up.pipe), down_chunk = up_chunk < 0 ? -1 : open_pipe(down.pipe);
        if (up_chunk < 0 || down_chunk < 0)
                goto out;
        uint64_t start = glove_time_monotonic_ms(), last = start;
        bool hup = false;
        for (;;) {
                bool progress = false;
                int e = step(&up, (size_t)up_chunk, &progress);
                if (e == 0)
                        e = c->forward && !c->resp_done ? response_head(c, &down, &progress)
                                                        : step(&down, (size_t)down_chunk, &progress);
                if (e < 0) {
                        reason = GLOVE_NET_EGRESS_RESET;
                        break;
                }
                /* A forwarded request is one exchange (Connection: close): it is
                 * over once the upstream's answer has been passed on. */
                if ((done(&up) || c->forward) && done(&down)) {
                        reason = GLOVE_NET_EGRESS_CLOSED;
                        break;
                }
                if (!progress && hup) { /* a hang-up that moves nothing */
                        reason = GLOVE_NET_EGRESS_RESET;
                        break;
                }
                uint64_t now = glove_time_monotonic_ms();
                if (progress)
                        last = now;
                if (now - start >= c->r->max_duration_ms) {
                        reason = GLOVE_NET_EGRESS_ABSOLUTE_TIMEOUT;
                        break;
                }
                if (now - last >= c->r->idle_timeout_ms) {
                        reason = GLOVE_NET_EGRESS_IDLE_TIMEOUT;
                        break;
                }
                uint64_t left = start + c->r->max_duration_ms - now;
                if (last + c->r->idle_timeout_ms - now < left)
                        left = last + c->r->idle_timeout_ms - now;
                struct pollfd p[3] = {
                        { .fd = c->r->stop_fd, .events = POLLIN },
                        { .fd = c->client, .events = want(&up, &down) },
                        { .fd = c->dest, .events = want(&down, &up) },
                };
                int n = poll(p, 3, progress ? 0 : (left > 60000 ? 60000 : (int)left));
                if (n < 0 && errno != EINTR)
                        break;
                if (n <= 0)
                        continue;
                if (p[0].revents) {
                        reason = GLOVE_NET_EGRESS_RELAY_STOPPED;
                        break;
                }
                if ((p[1].revents | p[2].revents) & (POLLERR | POLLNVAL)) {
                        reason = GLOVE_NET_EGRESS_RESET;
                        break;
                }
                hup = (p[1].revents | p[2].revents) & POLLHUP;
                /* What poll reports (a hang-up too: the next splice sees it). */
                const short rd = POLLIN | POLLHUP | POLLRDHUP, wr = POLLOUT | POLLHUP;
                up.src_ready |= (p[1].revents & rd) != 0;
                down.dst_ready |= (p[1].revents & wr) != 0;
                down.src_ready |= (p[2].revents & rd) != 0;
                up.dst_ready |= (p[2].revents & wr) != 0;
        }
out:
        for (int i = 0; i < 2; i++) {
                if (up.pipe[i] >= 0)
                        close(up.pipe[i]);
                if (down.pipe[i] >= 0)
                        close(down.pipe[i]);
        }
        return reason;
}

/* The method and target of a head that was refused before it was complete
 * (bare LF, too large, too slow, cut short), for the record: its first line,
 * when it has arrived, parsed as if it had ended in CRLF. */
static void note_partial_target(struct conn *c) {
        const char *nl = memchr(c->head, '\n', c->head_got);
        size_t n = nl ? (size_t)(nl - c->head) : 0;
        if (n > 0 && c->head[n - 1] == '\r')
                n--;
        if (n == 0 || n > GLOVE_NET_HEAD_MAX - 4)
                return;
        char *line = malloc(n + 4);
        if (!line)
                return;
        memcpy(line, c->head, n);
        memcpy(line + n, "\r\n\r\n", 4);
        struct glove_net_request_head h;
        int status;
        (void)glove_net_head_parse(line, n + 4, c->r->credentials, &h, &status);
        memcpy(c->method, h.method, sizeof(c->method));
        if (h.target_ok) {
                memcpy(c->host, h.host.text, sizeof(c->host));
                c->ev.port = h.port;
        }
        free(line);
}

/* Forwarded request: c->fwd gets the head rewritten to origin form and the
 * bytes read after the received head. False: out of memory. */
static bool build_forward(struct conn *c, const struct glove_net_request_head *h) {
        size_t rest = c->head_got - c->head_len, cap = c->head_len + GLOVE_NET_FORWARD_EXTRA;
        c->fwd = malloc(cap + rest);
        if (!c->fwd)
                return false;
        c->fwd_len = glove_net_forward_head(c->head, c->head_len, h, c->fwd, cap);
        if (c->fwd_len == 0)
                return false;
        memcpy(c->fwd + c->fwd_len, c->head + c->head_len, rest);
        c->fwd_len += rest;
        return true;
}

/* c->dest is connected: the OPEN event, the 200 of a CONNECT, the tunnel,
 * the CLOSE event. */
static void relay_open(struct conn *c) {
        set_nonblock_nodelay(c->dest);
        /* A forwarded request gets the upstream's own answer: the proxy
         * answers nothing itself (http_status 0). */
        int answered = c->forward ? 0 : 200;
        emit(c, GLOVE_NET_EGRESS_OPEN, GLOVE_NET_EGRESS_OK, answered);
        if (glove_net_relay_emit(c->r, &c->ev) < 0) {
                /* Fail closed: no record, no tunnel. No further event. */
                glove_net_answer_and_close(c->client, c->r->stop_fd, 502, GLOVE_NET_EGRESS_AUDIT_FAILED, true);
                c->client = -1;
                return;
        }
        enum glove_net_egress_reason reason;
        if (c->forward) {
                reason = tunnel(c);
        } else {
                char ok[GLOVE_NET_RESPONSE_MAX];
                size_t len = glove_net_response_format(200, GLOVE_NET_EGRESS_OK, ok);
                /* The socket is fresh and empty: the answer fits in its buffer. */
                if (send(c->client, ok, len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
                        reason = GLOVE_NET_EGRESS_RESET;
                else
                        reason = tunnel(c);
        }
        emit(c, GLOVE_NET_EGRESS_CLOSE, reason, answered);
        (void)glove_net_relay_emit(c->r, &c->ev);
}

/* Whether h names the run's MCP endpoint: 127.0.0.1 or localhost (the
 * endpoint's own spellings, the ones its Host check takes) at its port. */
static bool endpoint_target(const struct glove_net_relay *r, const struct glove_net_request_head *h) {
        static const uint8_t loopback[4] = {127, 0, 0, 1};
        if (!r->endpoint_port || h->port != r->endpoint_port)
                return false;
        if (h->host.kind == GLOVE_NET_HOST_IPV4)
                return memcmp(h->host.addr, loopback, 4) == 0;
        return h->host.kind == GLOVE_NET_HOST_NAME && strcmp(h->host.text, "localhost") == 0;
}

/* Passes fd to the MCP endpoint over its channel (one byte, one descriptor),
 * as the sandbox's listener helper does; the endpoint gets its own copy.
 * Waits at most the connect timeout for room. Returns 0 or -errno. */
static int hand_over(struct conn *c, int fd) {
        char byte = 0;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        memset(&control, 0, sizeof(control));
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                              .msg_controllen = sizeof(control.buf) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        uint64_t deadline = glove_time_monotonic_ms() + c->r->connect_timeout_ms;
        for (;;) {
                if (sendmsg(c->r->endpoint_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
                        return 0;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return -errno;
                int w = glove_net_wait(c->r->endpoint_fd, POLLOUT, c->r->stop_fd, deadline);
                if (w <= 0)
                        return w == 0 ? -ETIMEDOUT : -ECANCELED;
        }
}

/* A request for the run's MCP endpoint (relay.h): handed over, not egress. */
static void serve_endpoint(struct conn *c, const struct glove_net_request_head *h) {
        c->ev.mcp_endpoint = true;
        c->forward = h->form == GLOVE_NET_TARGET_HTTP;
        if (!c->forward && c->head_got == c->head_len) {
                /* CONNECT with nothing sent ahead: the agent's own
                 * connection goes. It is handed over first and answered
                 * 200 only then, so that an endpoint that is gone is a 502
                 * (never a 200 and a close). The endpoint writes nothing
                 * before it has read a request, and the agent sends its
                 * first one only once it has read the 200: the 200 still
                 * comes first on the connection. */
                int e = hand_over(c, c->client);
                if (e < 0)
                        return deny(c, e == -ECANCELED ? GLOVE_NET_EGRESS_RELAY_STOPPED : GLOVE_NET_EGRESS_CONNECT_FAILED,
                                    e == -ECANCELED ? 0 : 502);
                emit(c, GLOVE_NET_EGRESS_OPEN, GLOVE_NET_EGRESS_OK, 200);
                if (glove_net_relay_emit(c->r, &c->ev) < 0) {
                        /* Fail closed: the endpoint's copy sees the agent
                         * go after this answer. */
                        glove_net_answer_and_close(c->client, c->r->stop_fd, 502, GLOVE_NET_EGRESS_AUDIT_FAILED, true);
                        c->client = -1;
                        return;
                }
                char ok[GLOVE_NET_RESPONSE_MAX];
                size_t len = glove_net_response_format(200, GLOVE_NET_EGRESS_OK, ok);
                enum glove_net_egress_reason reason = GLOVE_NET_EGRESS_RESET;
                if (send(c->client, ok, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len)
                        reason = GLOVE_NET_EGRESS_HANDED_OVER;
                emit(c, GLOVE_NET_EGRESS_CLOSE, reason, 200);
                (void)glove_net_relay_emit(c->r, &c->ev);
                return; /* conn_main closes the relay's copy */
        }
        if (c->forward && !build_forward(c, h))
                return deny(c, GLOVE_NET_EGRESS_INTERNAL, 502);
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return deny(c, GLOVE_NET_EGRESS_INTERNAL, 502);
        int e = hand_over(c, sv[1]);
        close(sv[1]);
        if (e < 0) {
                close(sv[0]);
                return deny(c, e == -ECANCELED ? GLOVE_NET_EGRESS_RELAY_STOPPED : GLOVE_NET_EGRESS_CONNECT_FAILED,
                            e == -ECANCELED ? 0 : 502);
        }
        c->dest = sv[0];
        relay_open(c);
}

static void serve(struct conn *c) {
        if (!is_tcp_stream(c->client)) {
                /* Not what the helper passes: answer nothing. */
                (void)close(c->client);
                c->client = -1;
                emit(c, GLOVE_NET_EGRESS_DENY, GLOVE_NET_EGRESS_BAD_DESCRIPTOR, 0);
                (void)glove_net_relay_emit(c->r, &c->ev);
                return;
        }
        set_nonblock_nodelay(c->client);
        enum glove_net_egress_reason reason = read_head(c);
        if (reason != GLOVE_NET_EGRESS_OK) {
                int status = reason == GLOVE_NET_EGRESS_HEAD_TOO_LARGE ? 431
                             : reason == GLOVE_NET_EGRESS_TIMEOUT      ? 408
                             : reason == GLOVE_NET_EGRESS_BAD_REQUEST  ? 400
                                                                       : 0;
                note_partial_target(c);
                return deny(c, reason, status);
        }
        struct glove_net_request_head h;
        int status;
        reason = glove_net_head_parse(c->head, c->head_len, c->r->credentials, &h, &status);
        memcpy(c->method, h.method, sizeof(c->method));
        if (h.target_ok) {
                memcpy(c->host, h.host.text, sizeof(c->host));
                c->ev.port = h.port;
        }
        if (reason != GLOVE_NET_EGRESS_OK)
                return deny(c, reason, status);
        if (endpoint_target(c->r, &h))
                return serve_endpoint(c, &h);
        if (!glove_net_policy_allows(&c->r->policy, &h.host, h.port))
                return deny(c, GLOVE_NET_EGRESS_NOT_ALLOWED, 403);
        c->forward = h.form == GLOVE_NET_TARGET_HTTP;
        if (c->forward && !build_forward(c, &h))
                return deny(c, GLOVE_NET_EGRESS_INTERNAL, 502);
        c->private_ok = glove_net_policy_allows_private(&c->r->policy, &h.host, h.port);
        struct destinations *d = calloc(1, sizeof(*d));
        if (!d)
                return deny(c, GLOVE_NET_EGRESS_INTERNAL, 502);
        reason = resolve(c, &h, d);
        if (reason == GLOVE_NET_EGRESS_OK)
                reason = connect_checked(c, d, &status);
        free(d);
        switch (reason) {
        case GLOVE_NET_EGRESS_OK: break;
        case GLOVE_NET_EGRESS_PRIVATE_ADDRESS: return deny(c, reason, 403);
        case GLOVE_NET_EGRESS_RESOLVE_FAILED: return deny(c, reason, 502);
        case GLOVE_NET_EGRESS_CONNECT_FAILED: return deny(c, reason, status);
        default: return deny(c, reason, 0);
        }
        relay_open(c);
}

void *glove_net_conn_main(void *arg) {
        struct glove_net_conn *slot = arg;
        struct conn *c = calloc(1, sizeof(*c));
        if (c) {
                c->r = slot->relay;
                c->slot = slot;
                c->client = slot->fd;
                c->dest = -1;
                c->ev.connection_id = slot->id;
                c->ev.host = c->host;
                c->ev.method = c->method;
                c->ev.address = c->address;
                c->ev.address_class = "";
                serve(c);
                if (c->client >= 0)
                        close(c->client);
                if (c->dest >= 0)
                        close(c->dest);
                explicit_bzero(c->head, sizeof(c->head));
                if (c->fwd) {
                        explicit_bzero(c->fwd, c->fwd_len);
                        free(c->fwd);
                }
                free(c->resp);
                free(c);
        } else {
                glove_net_answer_and_close(slot->fd, slot->relay->stop_fd, 502, GLOVE_NET_EGRESS_INTERNAL, true);
                struct glove_net_egress_event ev = {
                        .phase = GLOVE_NET_EGRESS_DENY, .reason = GLOVE_NET_EGRESS_INTERNAL,
                        .connection_id = slot->id, .http_status = 502, .method = "", .host = "", .address = "",
                        .address_class = "",
                };
                (void)glove_net_relay_emit(slot->relay, &ev);
        }
        struct glove_net_relay *r = slot->relay;
        pthread_mutex_lock(&r->lock);
        slot->finished = true;
        r->active--;
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The sd-event connection loop of gloved (see server.h). */
#include "glove/server/server.h"

#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "glove/base/base64.h"
#include "glove/base/buffer.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/base/log.h"
#include "glove/protocol/frame.h"
#include "glove/server/peerns.h"
#include "glove/runtime/runtime.h"
#define HAVE_RUNTIME(o) ((o)->components && (o)->components->runtime)

#define READ_CHUNK (64u * 1024)
#define ACCEPT_BATCH 64
#define IN_MAX (GLOVE_PROTOCOL_FRAME_PREFIX + GLOVE_PROTOCOL_FRAME_MAX)
#define RESP_MAX (GLOVE_PROTOCOL_FRAME_PREFIX + GLOVE_PROTOCOL_FRAME_MAX)
/* Room past the pushed-frame bound for the last notice of an attachment
 * that is dropped (session_detached, session_ended: small frames). */
#define PUSH_SLACK (16u * 1024)
/* One response plus GLOVE_RUNTIME_PUSH_MAX of pushed frames (server.h). */
#define OUT_MAX (RESP_MAX + GLOVE_RUNTIME_PUSH_MAX + PUSH_SLACK)
/* Buffered frames answered per wakeup of one connection before the loop
 * turns to the others, so pipelined requests share the loop fairly
 * (documented in server.h and docs/control-protocol.md). */
#define FRAMES_PER_WAKEUP 8

struct server;

struct glove_server_conn {
        struct glove_runtime_peer peer; /* first: what the runtime holds */
        struct server *srv;
        struct glove_server_conn *prev, *next;
        int fd;
        sd_event_source *io, *timer;
        struct glove_buffer in, out;
        bool authed, closing;
        enum glove_server_role role; /* what authenticate proved (controller until then) */
        /* The peer's user namespace was refused at accept (peerns.h): the
         * first request, whatever it is, is answered with this code. */
        const char *ns_code;
        char ns_message[512];
        bool ns_needs_proof; /* outside gloved's view: refused unless ns_proven */
        bool ns_proven;      /* a descriptor of gloved's user namespace arrived (peerns.h) */
        bool eof;       /* the peer's end of file (or a read error) was seen: read no more */
        bool want_drain; /* the runtime waits for the pushed frames to drain (want_drain) */
        size_t resp_end; /* out bytes up to the end of the pending response (0: none pending) */
        size_t resp_len; /* length of that response frame */
        unsigned attachments; /* attach streams held by the runtime: no idle deadline */
        uint64_t accepted_us, frame_start_us, write_start_us, activity_us;
};

struct server {
        sd_event *ev;
        const struct glove_server_options *o;
        struct glove_server_conn *conns;
        unsigned n_conns;
        struct glove_server_peerns userns; /* the admitted user namespaces */
};

static uint64_t now_us(struct server *s) {
        uint64_t t = 0;
        (void)sd_event_now(s->ev, CLOCK_MONOTONIC, &t);
        return t;
}

static void conn_free(struct glove_server_conn *c) {
        struct server *s = c->srv;
        if (HAVE_RUNTIME(s->o))
                glove_runtime_conn_closed(s->o->components->runtime, &c->peer);
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_conns--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        glove_buffer_free(&c->in);
        glove_buffer_free(&c->out);
        free(c);
}

/* Queues msg (stolen) as a frame; on encoding failure queues a fixed error. */
static void queue(struct glove_server_conn *c, json_t *msg) {
        struct glove_error e = { 0 };
        size_t before = c->out.len;
        if (c->resp_end == 0)
                c->write_start_us = now_us(c->srv);
        if (msg && glove_protocol_frame_encode(msg, &c->out, &e) == 0) {
                json_decref(msg);
                c->resp_end = c->out.len;
                c->resp_len = c->out.len - before;
                return;
        }
        json_decref(msg);
        static const char fallback[] =
                "{\"error\":{\"code\":\"internal\",\"data\":{},\"message\":\"the response could not be encoded\"},"
                "\"id\":null}";
        uint8_t prefix[4] = { 0, 0, 0, (uint8_t)(sizeof(fallback) - 1) };
        glove_buffer_append(&c->out, prefix, sizeof(prefix));
        glove_buffer_append(&c->out, fallback, sizeof(fallback) - 1);
        c->resp_end = c->out.len;
        c->resp_len = c->out.len - before;
        c->closing = true;
}

static void refuse(struct glove_server_conn *c, json_t *id, const char *code, const char *message) {
        queue(c, glove_protocol_response_error(id, code, message, NULL));
        c->closing = true;
}

static const char *const auth_keys[] = { "secret", NULL };

static void authenticate(struct glove_server_conn *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *hex;
        uint8_t secret[GLOVE_SERVER_SECRET_LEN];
        if (strcmp(req->method, "authenticate") != 0)
                return refuse(c, req->id, "auth.required", "the first request must be authenticate");
        if (glove_json_check_keys(req->params, auth_keys, "$.params", &e) < 0 ||
            glove_json_get_string(req->params, "secret", "$.params", 2 * GLOVE_SERVER_SECRET_LEN, &hex, &e) < 0 ||
            glove_digest_hex_decode(hex, strlen(hex), secret, sizeof(secret), &e) < 0)
                return refuse(c, req->id, "auth.failed", "authentication failed");
        /* Both compared, each in constant time, whichever matches. */
        const struct glove_server_options *o = c->srv->o;
        bool controller = glove_digest_equal(secret, o->secret, sizeof(secret));
        bool owner = o->owner_secret ? glove_digest_equal(secret, o->owner_secret, sizeof(secret)) : false;
        explicit_bzero(secret, sizeof(secret));
        if (!(controller | owner))
                return refuse(c, req->id, "auth.failed", "authentication failed");
        c->authed = true;
        c->role = owner ? GLOVE_SERVER_ROLE_OWNER : GLOVE_SERVER_ROLE_CONTROLLER;
        queue(c, glove_protocol_response_result(req->id, json_pack("{s:b,s:i,s:s,s:s}", "authenticated", 1,
                                                                  "protocol_version", GLOVE_SERVER_PROTOCOL_VERSION,
                                                                  "role", owner ? "owner" : "controller",
                                                                  "service", "gloved")));
}

static void handle(struct glove_server_conn *c, const uint8_t *payload, size_t len) {
        struct glove_error e = { 0 };
        struct glove_protocol_request req;
        _cleanup_json_ json_t *root = NULL;
        int r = glove_protocol_request_parse(payload, len, &root, &req, &e);
        if (c->ns_code && !(c->ns_needs_proof && c->ns_proven)) { /* whatever was sent, the secret included */
                if (c->ns_needs_proof)
                        glove_log(c->srv->o->log, GLOVE_LOG_WARNING, c->ns_code, NULL, "connection refused: %s: %s",
                                  c->ns_code, c->ns_message);
                return refuse(c, glove_protocol_request_id(root), c->ns_code, c->ns_message);
        }
        if (r < 0)
                return refuse(c, glove_protocol_request_id(root), e.code, e.message);
        if (!c->authed)
                return authenticate(c, &req);
        queue(c, glove_server_dispatch_role(c->srv->o->components, c, c->role, &req));
}

/* True when the input buffer starts with a whole frame, or with a prefix
 * already known to be bad: either way the next serve() has work to do. */
static bool frame_ready(const struct glove_server_conn *c) {
        struct glove_error e = { 0 };
        const uint8_t *payload;
        size_t plen, flen;
        return glove_protocol_frame_next(c->in.data, c->in.len, &payload, &plen, &flen, &e) != 0;
}

/* Handles the first buffered frame when it is whole: queues its response (or
 * a refusal, which marks the connection closing) and consumes its bytes.
 * Returns 1 when a frame was handled, 0 when no whole frame is buffered. */
static int answer_one(struct glove_server_conn *c) {
        struct glove_error e = { 0 };
        const uint8_t *payload;
        size_t plen, flen;
        int r = glove_protocol_frame_next(c->in.data, c->in.len, &payload, &plen, &flen, &e);
        if (r == 0)
                return 0;
        if (r < 0) {
                refuse(c, NULL, e.code, e.message);
                return 1;
        }
        handle(c, payload, plen);
        glove_buffer_consume(&c->in, flen);
        c->activity_us = now_us(c->srv);
        if (c->in.len)
                c->frame_start_us = c->activity_us;
        return 1;
}

/* Returns -1 when the connection must close now. */
static int flush(struct glove_server_conn *c) {
        while (c->out.len) {
                ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                if (n <= 0)
                        return -1;
                glove_buffer_consume(&c->out, (size_t)n);
                c->resp_end = c->resp_end > (size_t)n ? c->resp_end - (size_t)n : 0;
                c->activity_us = now_us(c->srv);
        }
        return c->closing ? -1 : 0;
}

/*
 * Answers the frames already buffered, in order, one at a time: a frame is
 * handled only once the previous response has been fully sent, so at most one
 * response (OUT_MAX bytes) is ever queued per connection (back-pressure).
 * Stops when no whole frame is buffered, when a response waits for the socket
 * to drain, when the connection is closing, or after FRAMES_PER_WAKEUP frames
 * (rearm() then waits for EPOLLOUT, so the remaining frames are answered on
 * the next wakeup, after other connections had their turn). Returns -1 when
 * the connection must close now.
 */
static int serve(struct glove_server_conn *c) {
        for (unsigned i = 0; i < FRAMES_PER_WAKEUP && c->resp_end == 0 && !c->closing; i++) {
                if (!answer_one(c))
                        return 0;
                if (flush(c) < 0)
                        return -1;
        }
        return 0;
}

/* recv of at most room bytes into c->in. Before authentication a
 * descriptor passed with them (SCM_RIGHTS) is taken as the proof of
 * peerns.h and closed; later ones are closed unread. */
static ssize_t recv_proof(struct glove_server_conn *c, size_t room) {
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = c->in.data + c->in.len, .iov_len = room };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return n;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        if (!c->authed && glove_server_peerns_proof(&c->srv->userns, fd))
                                c->ns_proven = true;
                        close(fd);
                }
        }
        return n;
}

/* Returns -1 on end of file or error. */
static int fill(struct glove_server_conn *c) {
        for (;;) {
                size_t room = c->in.max - c->in.len;
                if (room == 0)
                        return 0;
                if (room > READ_CHUNK)
                        room = READ_CHUNK;
                if (glove_buffer_reserve(&c->in, room) < 0)
                        return -1;
                ssize_t n = recv_proof(c, room);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                if (n <= 0)
                        return -1;
                if (c->in.len == 0)
                        c->frame_start_us = now_us(c->srv);
                glove_buffer_commit(&c->in, (size_t)n);
                c->activity_us = now_us(c->srv);
                if ((size_t)n < room)
                        return 0;
        }
}

static uint64_t deadline(const struct glove_server_conn *c) {
        const struct glove_server_options *o = c->srv->o;
        uint64_t client = o->client_timeout_ms * 1000, d = UINT64_MAX;
        if (!c->authed)
                d = c->accepted_us + client;
        if (c->resp_end && c->write_start_us + client < d)
                d = c->write_start_us + client;
        /* Pushed frames only: the peer must keep taking them. */
        if (c->out.len && !c->resp_end && c->activity_us + client < d)
                d = c->activity_us + client;
        if (c->in.len && c->frame_start_us + client < d)
                d = c->frame_start_us + client;
        if (c->authed && !c->in.len && !c->out.len && !c->attachments)
                d = c->activity_us + o->idle_timeout_ms * 1000;
        return d;
}

/*
 * Sets the events wanted and the deadline; returns -1 on failure. A pending
 * response, or a whole frame still buffered, waits for EPOLLOUT: the socket
 * must take the response before the next frame is handled. Otherwise the
 * connection reads (EPOLLIN) unless it is closing or saw end of file.
 */
static int rearm(struct glove_server_conn *c) {
        uint32_t ev = 0;
        bool ready = !c->closing && frame_ready(c);
        if (c->out.len || ready)
                ev = EPOLLOUT;
        /* Pushed frames pending do not stop reading: a detach must get
         * through while output streams. */
        if (!c->resp_end && !ready && !c->closing && !c->eof)
                ev |= EPOLLIN;
        if (sd_event_source_set_io_events(c->io, ev) < 0)
                return -1;
        if (sd_event_source_set_time(c->timer, deadline(c)) < 0 ||
            sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT) < 0)
                return -1;
        return 0;
}

/* Sends what is pending, reads when nothing is, answers buffered frames
 * (serve), then closes the connection or re-arms it. */
static int on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)fd;
        struct glove_server_conn *c = userdata;
        if ((revents & EPOLLOUT) && flush(c) < 0)
                goto drop;
        if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c->resp_end == 0 && !c->closing && !c->eof &&
            fill(c) < 0)
                c->eof = true;
        if (serve(c) < 0)
                goto drop;
        if (c->want_drain && !c->closing && glove_server_conn_pushed_pending(c) < GLOVE_RUNTIME_PUSH_MAX / 2) {
                c->want_drain = false;
                if (HAVE_RUNTIME(c->srv->o))
                        glove_runtime_conn_drained(c->srv->o->components->runtime, &c->peer);
        }
        if (c->closing && c->out.len == 0)
                goto drop;
        /* After end of file: close once every whole frame is answered and
         * sent; a partial frame can never complete. */
        if (c->eof && c->out.len == 0 && !frame_ready(c))
                goto drop;
        if (rearm(c) < 0)
                goto drop;
        return 0;
drop:
        conn_free(c);
        return 0;
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        struct glove_server_conn *c = userdata;
        /* A whole frame still buffered waits for the peer to read the
         * previous responses: that is a send stall, not a frame one. */
        glove_log(c->srv->o->log, GLOVE_LOG_WARNING, "conn.deadline", NULL, "connection dropped: %s deadline passed",
                !c->authed ? "authentication"
                           : (c->out.len || frame_ready(c) ? "send" : (c->in.len ? "frame" : "idle")));
        conn_free(c);
        return 0;
}

/* Takes back a pushed frame appended since before when it passes the bound;
 * otherwise arms c for writing. */
static int pushed_frame(struct glove_server_conn *c, size_t before, bool last) {
        size_t pushed = before - (c->resp_end ? c->resp_len : 0);
        size_t bound = GLOVE_RUNTIME_PUSH_MAX + (last ? PUSH_SLACK : 0);
        if (pushed + (c->out.len - before) > bound) {
                c->out.len = before; /* taken back: over the bound */
                return -ENOBUFS;
        }
        if (rearm(c) < 0)
                c->closing = true;
        return 0;
}

int glove_server_conn_push(struct glove_server_conn *c, json_t *msg, bool last) {
        struct glove_error e = { 0 };
        if (!msg)
                return -ENOMEM;
        if (c->closing) {
                json_decref(msg);
                return -EPIPE;
        }
        size_t before = c->out.len;
        int r = glove_protocol_frame_encode(msg, &c->out, &e);
        json_decref(msg);
        if (r < 0)
                return r;
        return pushed_frame(c, before, last);
}

int glove_server_conn_push_output(struct glove_server_conn *c, const char *session_id, const void *data, size_t n) {
        struct glove_error e = { 0 };
        if (c->closing)
                return -EPIPE;
        size_t before = c->out.len;
        /* Refused before encoding when it cannot fit under the bound. */
        size_t pushed = before - (c->resp_end ? c->resp_len : 0);
        if (pushed + GLOVE_PROTOCOL_FRAME_PREFIX + GLOVE_BASE64_LEN(n) > GLOVE_RUNTIME_PUSH_MAX)
                return -ENOBUFS;
        int r = glove_protocol_frame_encode_output(&c->out, session_id, data, n, &e);
        if (r < 0)
                return r;
        return pushed_frame(c, before, false);
}

size_t glove_server_conn_pushed_pending(const struct glove_server_conn *c) {
        size_t resp = c->resp_end ? c->resp_len : 0;
        return c->out.len > resp ? c->out.len - resp : 0;
}

void glove_server_conn_want_drain(struct glove_server_conn *c) {
        c->want_drain = true;
}

void glove_server_conn_attachments(struct glove_server_conn *c, int delta) {
        if (delta < 0 && c->attachments < (unsigned)-delta)
                c->attachments = 0;
        else
                c->attachments = (unsigned)((int)c->attachments + delta);
        if (rearm(c) < 0)
                c->closing = true;
}

/* ---- the runtime's view of a connection (runtime.h) ---- */

static struct glove_server_conn *conn_of(const struct glove_runtime_peer *p) {
        return (struct glove_server_conn *)((char *)p - offsetof(struct glove_server_conn, peer));
}

static int peer_push(struct glove_runtime_peer *p, json_t *msg, bool last) {
        return glove_server_conn_push(conn_of(p), msg, last);
}

static int peer_push_output(struct glove_runtime_peer *p, const char *session_id, const void *data, size_t n) {
        return glove_server_conn_push_output(conn_of(p), session_id, data, n);
}

static size_t peer_pushed_pending(const struct glove_runtime_peer *p) {
        return glove_server_conn_pushed_pending(conn_of(p));
}

static void peer_want_drain(struct glove_runtime_peer *p) {
        glove_server_conn_want_drain(conn_of(p));
}

static void peer_attachments(struct glove_runtime_peer *p, int delta) {
        glove_server_conn_attachments(conn_of(p), delta);
}

static const struct glove_runtime_peer_ops peer_ops = {
        .push = peer_push,
        .push_output = peer_push_output,
        .pushed_pending = peer_pushed_pending,
        .want_drain = peer_want_drain,
        .attachments = peer_attachments,
};

struct glove_runtime_peer *glove_server_conn_peer(struct glove_server_conn *c) {
        return &c->peer;
}

static void accept_one(struct server *s, int fd) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred) ||
            cred.uid != s->o->uid) {
                glove_log(s->o->log, GLOVE_LOG_WARNING, "auth.foreign_uid", NULL,
                          "connection refused: peer uid %d is not the service uid %u",
                        len == sizeof(cred) ? (int)cred.uid : -1, (unsigned)s->o->uid);
                close(fd);
                return;
        }
        if (s->n_conns >= s->o->max_connections) {
                glove_log(s->o->log, GLOVE_LOG_WARNING, "conn.too_many", NULL, "connection refused: %u connections open",
                          s->n_conns);
                close(fd);
                return;
        }
        struct glove_server_conn *c = calloc(1, sizeof(*c));
        if (c)
                c->peer.ops = &peer_ops;
        if (!c) {
                close(fd);
                return;
        }
        c->srv = s;
        c->fd = fd;
        struct glove_error e = { 0 };
        pid_t pid = 0;
        int nr = glove_server_peerns_check(&s->userns, fd, &pid, &e);
        if (nr > 0) {
                /* Judged by the proof that comes with the first frame. */
                c->ns_code = e.code;
                c->ns_needs_proof = true;
                snprintf(c->ns_message, sizeof(c->ns_message), "%s", e.message);
        } else if (nr < 0) {
                /* Answered on the socket (the first request gets the code)
                 * and logged here; nothing else of the request is looked at. */
                c->ns_code = e.code;
                snprintf(c->ns_message, sizeof(c->ns_message), "%s", e.message);
                glove_log(s->o->log, GLOVE_LOG_WARNING, e.code, NULL, "connection refused: %s: %s", e.code, e.message);
        }
        glove_buffer_init(&c->in, IN_MAX);
        glove_buffer_init(&c->out, OUT_MAX);
        c->accepted_us = c->activity_us = now_us(s);
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        if (sd_event_add_io(s->ev, &c->io, fd, EPOLLIN, on_io, c) < 0 ||
            sd_event_add_time(s->ev, &c->timer, CLOCK_MONOTONIC, deadline(c), 1000, on_timer, c) < 0)
                conn_free(c);
}

static int on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)revents;
        for (int i = 0; i < ACCEPT_BATCH; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno != EAGAIN && errno != EWOULDBLOCK)
                                glove_log(((struct server *)userdata)->o->log, GLOVE_LOG_ERROR, "conn.accept", NULL,
                                          "accept: %s", strerror(errno));
                        break;
                }
                accept_one(userdata, cfd);
        }
        return 0;
}

static int on_signal(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata) {
        const struct glove_server_options *o = userdata;
        glove_log(o->log, GLOVE_LOG_NOTICE, "service.stopping", NULL, "%s received; stopping",
                  si->ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        return sd_event_exit(sd_event_source_get_event(src), 0);
}

/* The log's rate-limit reports are written when a flood stops, not only
 * at the next line. */
static int on_log_tick(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)usec;
        struct glove_log *log = userdata;
        glove_log_tick(log);
        (void)sd_event_source_set_time_relative(src, glove_log_rate_interval_us(log));
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

int glove_server_run(const struct glove_server_options *o, struct glove_error *err) {
        struct server s = { .o = o };
        sigset_t mask, old;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, &old) < 0)
                return glove_error_set(err, errno, "server.event", "sigprocmask: %s", strerror(errno));
        sd_event_source *lsrc = NULL, *sterm = NULL, *sint = NULL, *ltick = NULL;
        int r = glove_server_peerns_init(&s.userns, err);
        if (r < 0) {
                sigprocmask(SIG_SETMASK, &old, NULL);
                return r;
        }
        r = sd_event_new(&s.ev);
        if (r >= 0 && HAVE_RUNTIME(o))
                glove_runtime_set_loop(o->components->runtime, s.ev);
        if (r >= 0)
                r = sd_event_add_io(s.ev, &lsrc, o->listen_fd, EPOLLIN, on_listen, &s);
        if (r >= 0)
                r = sd_event_add_signal(s.ev, &sterm, SIGTERM, on_signal, (void *)o);
        if (r >= 0)
                r = sd_event_add_signal(s.ev, &sint, SIGINT, on_signal, (void *)o);
        if (r >= 0 && o->log)
                r = sd_event_add_time_relative(s.ev, &ltick, CLOCK_MONOTONIC, glove_log_rate_interval_us(o->log),
                                               1000000, on_log_tick, o->log);
        if (r >= 0) {
                (void)sd_notify(0, "READY=1\nSTATUS=accepting control connections");
                r = sd_event_loop(s.ev);
                (void)sd_notify(0, "STOPPING=1");
        }
        while (s.conns)
                conn_free(s.conns);
        if (HAVE_RUNTIME(o))
                glove_runtime_shutdown(o->components->runtime);
        sd_event_source_disable_unref(lsrc);
        sd_event_source_disable_unref(sterm);
        sd_event_source_disable_unref(sint);
        sd_event_source_disable_unref(ltick);
        sd_event_unref(s.ev);
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return glove_error_set(err, -r, "server.event", "event loop: %s", strerror(-r));
        return 0;
}

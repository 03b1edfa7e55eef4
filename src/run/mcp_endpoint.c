/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove run's in-sandbox MCP endpoints, host side (mcp_endpoint.h): the
 * listener's channel, connections, the in-sandbox command's stdio relay,
 * audit. HTTP is in mcp_http.c, the multiplexer in mcp_mux.c.
 */
#include "mcp_endpoint_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/cleanup.h"

/* Bytes buffered from one connection: a head, a frame and one read. */
#define CONN_IN_MAX(ep) (GLOVE_MCP_HTTP_HEAD_MAX + (ep)->cfg.max_frame + GLOVE_MCP_READ_CHUNK + 2)

const char *ep_transport_name(enum ep_transport t) {
        return t == EP_HTTP ? "http" : "command";
}

size_t glove_mcp_endpoint_memory_budget(size_t max_frame) {
        size_t b = 3 * max_frame + 1024 * 1024;
        return b > GLOVE_MCP_ENDPOINT_MEMORY_FLOOR ? b : GLOVE_MCP_ENDPOINT_MEMORY_FLOOR;
}

/* A connection's charge: its buffers' allocations beyond the free part. */
static size_t conn_charge(size_t in_cap, size_t out_cap) {
        size_t t = in_cap + out_cap;
        return t > GLOVE_MCP_ENDPOINT_CONN_FREE ? t - GLOVE_MCP_ENDPOINT_CONN_FREE : 0;
}

static size_t gateway_charge(size_t cap) {
        return cap > GLOVE_MCP_ENDPOINT_GATEWAY_FREE ? cap - GLOVE_MCP_ENDPOINT_GATEWAY_FREE : 0;
}

size_t ep_held(const struct ep *ep) {
        size_t n = gateway_charge(ep->gw_out.buf.cap) + ep->backlog_bytes;
        for (const struct ep_conn *c = ep->conns; c; c = c->next)
                n += conn_charge(c->in.cap, c->out.buf.cap);
        return n;
}

bool ep_room(const struct ep *ep, size_t more) {
        size_t held = ep_held(ep);
        return held <= ep->budget && more <= ep->budget - held;
}

bool ep_gateway_fits(const struct ep *ep, size_t cap) {
        size_t was = gateway_charge(ep->gw_out.buf.cap), will = gateway_charge(cap);
        return will <= was || ep_room(ep, will - was);
}

bool conn_fits(const struct ep_conn *c, size_t in_cap, size_t out_cap) {
        size_t was = conn_charge(c->in.cap, c->out.buf.cap), will = conn_charge(in_cap, out_cap);
        return will <= was || ep_room(c->ep, will - was);
}

/* Returns what an emptied buffer holds: an idle connection is charged
 * nothing. Input only from the read path (c->req and a body being served
 * point into it). */
static void conn_trim(struct ep_conn *c, bool input) {
        if (input && c->in.len == 0 && c->in.cap)
                glove_buffer_free(&c->in);
        if (!glove_mcp_writer_pending(&c->out) && c->out.buf.cap)
                glove_buffer_free(&c->out.buf);
}

void ep_fail(struct ep *ep, int errnum, const char *code, const char *fmt, ...) {
        if (ep->failed)
                return;
        ep->failed = true;
        struct glove_error e = {0};
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        glove_error_set(&e, errnum, code, "%s", msg);
        sd_event_source_set_enabled(ep->accept_io, SD_EVENT_OFF);
        if (ep->cfg.failed)
                ep->cfg.failed(ep->cfg.userdata, &e);
}

int ep_audit(struct ep *ep, const char *event, json_t *fields) {
        _cleanup_json_ json_t *f = fields;
        struct glove_audit_log *a = ep->cfg.audit;
        if (!a || a->fd < 0 || ep->failed)
                return 0;
        /* Charged to the agent before it is written: the record, plus the
         * fields the audit layer adds (ts, event, run_id: under 128 bytes). */
        if (f && ep->cfg.agent_bytes && !ep->cfg.agent_bytes(ep->cfg.userdata, json_dumpb(f, NULL, 0, JSON_COMPACT) + 128))
                return 0;
        struct glove_error e = {0};
        int r = f ? glove_audit_append(a, event, f, &e) : -ENOMEM;
        if (r < 0) {
                ep_fail(ep, e.errnum ? e.errnum : ENOMEM, e.code ? e.code : "audit.encode", "%s",
                        e.code ? e.message : "cannot build an endpoint record");
                return r;
        }
        return 0;
}

void ep_refused(struct ep *ep, enum ep_transport t, int status, const char *reason) {
        (void)ep_audit(ep, "endpoint_refused",
                       json_pack("{s:s,s:i,s:s}", "transport", ep_transport_name(t), "status", status, "reason", reason));
}

void conn_close(struct ep_conn *c) {
        struct ep *ep = c->ep;
        if (c->kind == CONN_STDIO && c->session >= 0)
                mux_session_close(ep, c->session, c->eof ? "closed" : "connection");
        else if (c->kind == CONN_HTTP && c->session >= 0 && ep->sessions[c->session].used &&
                 ep->sessions[c->session].serial == c->session_serial && ep->sessions[c->session].conn == c)
                ep->sessions[c->session].conn = NULL; /* the GET stream is gone; the session stays */
        if (c->kind == CONN_HTTP)
                mux_conn_gone(ep, c); /* its modern request, if any, is cancelled */
        for (size_t i = 0; i < GLOVE_MCP_ENDPOINT_INFLIGHT_MAX; i++)
                if (ep->inflight[i].used && ep->inflight[i].conn == c)
                        ep->inflight[i].conn = NULL;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        glove_buffer_free(&c->in);
        glove_mcp_writer_free(&c->out);
        if (c->prev)
                c->prev->next = c->next;
        else
                ep->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        ep->n_conns--;
        free(c);
}

void conn_update(struct ep_conn *c) {
        if (c->dead)
                return;
        uint32_t ev = EPOLLIN | EPOLLRDHUP;
        if (c->eof)
                ev = 0;
        if (glove_mcp_writer_pending(&c->out))
                ev |= EPOLLOUT;
        sd_event_source_set_io_events(c->io, ev);
}

int conn_push(struct ep_conn *c, const void *data, size_t len) {
        size_t cap = glove_buffer_cap_after(&c->out.buf, len);
        if (!cap && len)
                return -EMSGSIZE; /* the connection's own bound: not reading */
        if (!conn_fits(c, c->in.cap, cap)) {
                ep_refused(c->ep, c->kind == CONN_STDIO ? EP_COMMAND : EP_HTTP, 0, "endpoint.memory_full");
                return -ENOBUFS;
        }
        return glove_mcp_writer_queue(&c->out, data, len);
}

int conn_queue(struct ep_conn *c, const void *data, size_t len) {
        int r = conn_push(c, data, len);
        if (r < 0)
                return r;
        r = glove_mcp_writer_flush(&c->out, c->fd);
        if (r < 0 && r != -EAGAIN)
                return r;
        conn_trim(c, false);
        conn_update(c);
        return 0;
}

/* The connection's one timer: a head or idle timeout kills it; once it is
 * dead the same timer, due at once, closes it from the loop. */
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        struct ep_conn *c = userdata;
        if (c->dead)
                conn_close(c);
        else if (c->kind == CONN_HTTP && c->state == H_WAIT && c->probing)
                http_probe(c);
        else
                conn_kill(c);
        return 0;
}

void conn_kill(struct ep_conn *c) {
        if (c->dead)
                return;
        c->dead = true;
        sd_event_source_set_enabled(c->io, SD_EVENT_OFF);
        /* The close runs from the loop after this callback, on the timer the
         * connection already owns: nothing is allocated here, so nothing can
         * fail into freeing c under a caller that still uses it (callers
         * test c->dead after a call that may kill). A time in the past (1 µs
         * of CLOCK_MONOTONIC) is due at the next iteration. Setting the time
         * and enabling an existing time source only reorder the loop's
         * queue; should either fail, c stays dead, silent and counted until
         * glove_mcp_endpoint_free closes it. */
        if (sd_event_source_set_time(c->timer, 1) >= 0)
                (void)sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

void conn_arm(struct ep_conn *c, uint64_t usec) {
        if (c->dead)
                return; /* the timer is the pending close */
        if (!usec) {
                sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time_relative(c->timer, usec);
        sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

void stdio_input_ended(struct ep_conn *c) {
        struct ep *ep = c->ep;
        /* The command's stdin ended: its answers still come, then it closes. */
        if (c->session >= 0 && ep->sessions[c->session].used && ep->sessions[c->session].inflight > 0)
                return;
        c->state = H_CLOSING;
        if (!glove_mcp_writer_pending(&c->out))
                conn_kill(c);
}

/* The in-sandbox command's lines. */
static void stdio_process(struct ep_conn *c) {
        struct ep *ep = c->ep;
        size_t off = 0;
        for (;;) {
                const char *p = (const char *)c->in.data + off;
                size_t avail = c->in.len - off;
                const char *nl = avail ? memchr(p, '\n', avail) : NULL;
                if (!nl) {
                        if (avail > ep->cfg.max_frame) {
                                glove_buffer_consume(&c->in, off);
                                conn_kill(c); /* the frame bound: the session ends */
                                return;
                        }
                        break;
                }
                size_t n = (size_t)(nl - p);
                off += n + 1;
                if (n && p[n - 1] == '\r')
                        n--;
                if (n == 0)
                        continue;
                if (n > ep->cfg.max_frame) {
                        glove_buffer_consume(&c->in, off);
                        conn_kill(c);
                        return;
                }
                enum glove_mcp_kind kind;
                json_t *error = NULL;
                if (mux_from_client(ep, c->session, c, p, n, &kind, &error) < 0 && error) {
                        _cleanup_free_ char *line = NULL;
                        size_t ln = 0;
                        if (glove_mcp_encode(error, ep->cfg.max_frame, &line, &ln) == 0 && conn_queue(c, line, ln) < 0) {
                                json_decref(error);
                                conn_kill(c);
                                return;
                        }
                }
                json_decref(error);
        }
        glove_buffer_consume(&c->in, off);
        if (c->eof)
                stdio_input_ended(c);
}

/* Writes a one-line refusal to the command and closes after it. */
static void stdio_refuse(struct ep_conn *c, const char *reason, const char *text) {
        char line[256];
        int n = snprintf(line, sizeof(line), "ERR %s %s\n", reason, text);
        c->kind = CONN_STDIO;
        c->session = -1;
        c->state = H_CLOSING;
        ep_refused(c->ep, EP_COMMAND, 0, reason);
        if (conn_queue(c, line, (size_t)n) < 0 || !glove_mcp_writer_pending(&c->out))
                conn_kill(c);
        else
                shutdown(c->fd, SHUT_RD);
}

/* The first bytes decide: the command's preface, or HTTP. Returns false when
 * more bytes are needed. */
static bool classify(struct ep_conn *c) {
        struct ep *ep = c->ep;
        size_t pl = strlen(GLOVE_MCP_ENDPOINT_PREFACE);
        size_t n = c->in.len < pl ? c->in.len : pl;
        bool prefix = memcmp(c->in.data, GLOVE_MCP_ENDPOINT_PREFACE, n) == 0;
        if (prefix && c->in.len < pl && !c->eof)
                return false;
        if (prefix && c->in.len >= pl) {
                glove_buffer_consume(&c->in, pl);
                if (!ep->cfg.command) {
                        stdio_refuse(c, "endpoint.command_disabled", "this run serves no in-sandbox command (--mcp-endpoint)");
                        return true;
                }
                int s = mux_session_open(ep, EP_COMMAND, c);
                if (s < 0) {
                        stdio_refuse(c, "endpoint.sessions_full", "too many MCP client sessions at once");
                        return true;
                }
                c->kind = CONN_STDIO;
                c->session = s;
                c->session_serial = ep->sessions[s].serial;
                conn_arm(c, 0);
                if (conn_queue(c, "OK\n", 3) < 0) {
                        conn_kill(c);
                        return true;
                }
                return true;
        }
        c->kind = CONN_HTTP;
        return true;
}

/* The memory budget has no room for c's input: what it holds is dropped
 * first (its memory back), then it is refused and closed, audited. An HTTP
 * request is refused in http.c before its body comes (its length is
 * known); here are the command's lines and bytes sent ahead of their turn. */
static void conn_over_budget(struct ep_conn *c) {
        glove_buffer_free(&c->in);
        if (c->kind != CONN_STDIO) {
                ep_refused(c->ep, EP_HTTP, 0, "endpoint.memory_full");
                conn_kill(c);
                return;
        }
        static const char line[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":"
                                   "\"Glove's memory for this agent's MCP connections is taken: the line is dropped and the "
                                   "connection closed\",\"data\":{\"reason\":\"endpoint.memory_full\"}}}\n";
        ep_refused(c->ep, EP_COMMAND, 0, "endpoint.memory_full");
        c->state = H_CLOSING;
        c->eof = true; /* nothing more is read from it */
        if (conn_queue(c, line, sizeof(line) - 1) < 0 || !glove_mcp_writer_pending(&c->out))
                conn_kill(c);
        else
                shutdown(c->fd, SHUT_RD);
}

static void conn_readable(struct ep_conn *c) {
        /* A body's room was reserved exactly when its head came
         * (mcp_http.c): read no further than its end, so that it never
         * grows (the next request's bytes come on the next read). */
        size_t want = GLOVE_MCP_READ_CHUNK;
        if (c->kind == CONN_HTTP && c->state == H_BODY && c->head_len + c->body_len > c->in.len &&
            c->head_len + c->body_len - c->in.len < want)
                want = (size_t)(c->head_len + c->body_len - c->in.len);
        size_t cap = glove_buffer_cap_after(&c->in, want);
        if (!cap) {
                conn_kill(c);
                return;
        }
        if (!conn_fits(c, cap, c->out.buf.cap)) {
                conn_over_budget(c);
                return;
        }
        int r = glove_buffer_reserve(&c->in, want);
        if (r < 0) {
                conn_kill(c);
                return;
        }
        ssize_t n = read(c->fd, c->in.data + c->in.len, want);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                conn_kill(c);
                return;
        }
        if (n == 0)
                c->eof = true;
        else
                glove_buffer_commit(&c->in, (size_t)n);
        if (c->kind == CONN_NEW) {
                if (c->in.len == 0 && c->eof) {
                        conn_kill(c);
                        return;
                }
                if (!classify(c))
                        return;
                if (c->state == H_CLOSING)
                        return;
        }
        if (c->kind == CONN_STDIO)
                stdio_process(c);
        else
                http_process(c);
        if (!c->dead) {
                conn_trim(c, true);
                if (c->eof)
                        conn_update(c); /* nothing more to read: not polled for it again */
        }
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        struct ep_conn *c = userdata;
        if (c->dead)
                return 0;
        if (revents & EPOLLOUT) {
                int r = glove_mcp_writer_flush(&c->out, c->fd);
                if (r < 0 && r != -EAGAIN) {
                        conn_kill(c);
                        return 0;
                }
                if (r == 0 && c->state == H_CLOSING) {
                        conn_kill(c);
                        return 0;
                }
                conn_trim(c, false);
                conn_update(c);
        }
        if (!c->dead && revents & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
                if (c->eof) {
                        if (revents & (EPOLLHUP | EPOLLERR))
                                conn_kill(c);
                        return 0;
                }
                conn_readable(c);
        }
        return 0;
}

/* A connection from the listener helper. */
static void conn_new(struct ep *ep, int fd) {
        if (ep->n_conns >= GLOVE_MCP_ENDPOINT_CONNS_MAX) {
                ep_refused(ep, EP_HTTP, 0, "endpoint.connections_full");
                close(fd);
                return;
        }
        int fl = fcntl(fd, F_GETFL);
        struct ep_conn *c = calloc(1, sizeof(*c));
        if (!c || fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
                free(c);
                close(fd);
                return;
        }
        /* Answers go out at once: no Nagle delay waiting for the ACK of a
         * previous segment (a TCP socket; the command's too). */
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->ep = ep;
        c->fd = fd;
        c->session = -1;
        c->inflight = -1;
        c->keep_alive = true;
        glove_buffer_init(&c->in, CONN_IN_MAX(ep));
        glove_mcp_writer_init(&c->out, GLOVE_MCP_ENDPOINT_OUTBOX_MAX);
        if (sd_event_add_io(ep->cfg.event, &c->io, fd, EPOLLIN | EPOLLRDHUP, on_conn_io, c) < 0 ||
            sd_event_add_time(ep->cfg.event, &c->timer, CLOCK_MONOTONIC, 0, 0, on_timer, c) < 0) {
                sd_event_source_disable_unref(c->io);
                sd_event_source_disable_unref(c->timer);
                glove_buffer_free(&c->in);
                glove_mcp_writer_free(&c->out);
                free(c);
                close(fd);
                return;
        }
        c->next = ep->conns;
        if (ep->conns)
                ep->conns->prev = c;
        ep->conns = c;
        ep->n_conns++;
        conn_arm(c, GLOVE_MCP_ENDPOINT_HEAD_TIMEOUT_USEC);
}

/* Receives one descriptor from the listener's channel. */
static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        struct ep *ep = userdata;
        char byte;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
        ssize_t n = recvmsg(ep->accept_fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                /* The helper is gone (the sandbox ended): no more connections. */
                sd_event_source_set_enabled(ep->accept_io, SD_EVENT_OFF);
                return 0;
        }
        (void)revents;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int))) {
                        int cfd;
                        memcpy(&cfd, CMSG_DATA(cm), sizeof(int));
                        conn_new(ep, cfd);
                }
        return 0;
}

static int on_gateway_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        return mux_gateway_io(userdata, revents);
}

int glove_mcp_endpoint_new(const struct glove_mcp_endpoint_config *cfg, struct glove_mcp_endpoint **out, struct glove_error *err) {
        *out = NULL;
        struct ep *ep = calloc(1, sizeof(*ep));
        if (!ep) {
                close(cfg->gateway_fd);
                close(cfg->accept_fd);
                return glove_error_set(err, ENOMEM, "endpoint.nomem", "out of memory");
        }
        ep->cfg = *cfg;
        ep->budget = glove_mcp_endpoint_memory_budget(cfg->max_frame);
        ep->gw_fd = cfg->gateway_fd;
        ep->accept_fd = cfg->accept_fd;
        glove_mcp_reader_init(&ep->gw_in, cfg->max_frame);
        glove_mcp_writer_init(&ep->gw_out, 64 * 1024 * 1024);
        int fl = fcntl(ep->gw_fd, F_GETFL);
        int r = fl < 0 || fcntl(ep->gw_fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
        if (r >= 0)
                r = sd_event_add_io(cfg->event, &ep->accept_io, ep->accept_fd, EPOLLIN, on_accept, ep);
        if (r >= 0)
                r = sd_event_add_io(cfg->event, &ep->gw_io, ep->gw_fd, EPOLLIN, on_gateway_io, ep);
        if (r < 0) {
                glove_mcp_endpoint_free((struct glove_mcp_endpoint *)ep);
                return glove_error_set(err, -r, "endpoint.event_loop", "endpoint event sources: %s", strerror(-r));
        }
        *out = (struct glove_mcp_endpoint *)ep;
        return 0;
}

void glove_mcp_endpoint_free(struct glove_mcp_endpoint *e) {
        struct ep *ep = (struct ep *)e;
        if (!ep)
                return;
        /* The run ends: every session still open ends on record, as every
         * other end of a session is (nothing goes to the gateway any more:
         * the run tells it the agent is gone, which ends its calls). */
        ep->ending = true;
        for (int s = 0; s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX; s++)
                mux_session_close(ep, s, "run_ended");
        ep->failed = true; /* no more audit or notify while tearing down */
        while (ep->conns)
                conn_close(ep->conns);
        for (int s = 0; s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX; s++)
                for (size_t i = 0; i < ep->sessions[s].n_backlog; i++)
                        free(ep->sessions[s].backlog[i]);
        for (size_t i = 0; i < GLOVE_MCP_ENDPOINT_INFLIGHT_MAX; i++)
                if (ep->inflight[i].used) {
                        json_decref(ep->inflight[i].id);
                        json_decref(ep->inflight[i].token);
                }
        for (size_t i = 0; i < GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX; i++)
                json_decref(ep->server_req[i].id);
        sd_event_source_disable_unref(ep->accept_io);
        sd_event_source_disable_unref(ep->gw_io);
        if (ep->accept_fd >= 0)
                close(ep->accept_fd);
        if (ep->gw_fd >= 0)
                close(ep->gw_fd);
        glove_mcp_reader_free(&ep->gw_in);
        glove_mcp_writer_free(&ep->gw_out);
        free(ep);
}

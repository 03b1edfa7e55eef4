/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The multiplexer of glove run's MCP endpoints (mcp_endpoint.h): every client
 * session onto the gateway's one agent channel.
 *
 *  - A client request's id becomes "m<slot>.<gen>" on the channel (slot: its
 *    entry in the in-flight table, gen: that entry's use count), unique
 *    whatever the sessions chose; a progressToken in params._meta becomes
 *    the same string. The gateway's response is routed by that id back to its
 *    session with the client's own id restored; a notifications/progress by
 *    its token, the client's token restored. notifications/cancelled from a
 *    client names its own id: it is rewritten too (unknown ids are dropped).
 *  - A request from the gateway (server to client, ids "glove-...") goes to
 *    one initialized session: the most recently initialized one that
 *    declared the capability the method needs (sampling, elicitation,
 *    roots), else the most recently initialized one; none: the gateway is
 *    answered -32603 with data.reason "endpoint.no_session". The answer is
 *    taken only from that session.
 *  - A notification tagged with a subscriptionId (a 2026-07-28
 *    subscriptions/listen's) goes to the listen's client only, its own id
 *    restored, on the listen's stream (an SSE answer over HTTP).
 *  - Other notifications from the gateway go to every initialized session.
 *  - A session that ends has its requests in flight cancelled at the gateway
 *    (notifications/cancelled) and its pending server requests answered with
 *    an error ("endpoint.session_ended"); late answers find no entry and are
 *    dropped. What is owed to the gateway this way is never lost for want of
 *    room: when its queue has none (the memory budget at its limit), the
 *    message is kept in its slot and queued as soon as the queue drains
 *    (mux_send_owed).
 *  - Modern requests (MCP 2026-07-28: params._meta names
 *    io.modelcontextprotocol/protocolVersion) are forwarded like any other,
 *    ids and tokens rewritten; the gateway checks their _meta. A command
 *    session is of one era: a modern request after initialize, or an
 *    initialize after a modern request, is refused -32600
 *    "endpoint.era_mixed" (audited, never forwarded). Over HTTP a modern
 *    request has no session (slot session -1): its answer and progress go
 *    to the POST's connection only, and the connection's going away cancels
 *    it at the gateway. Each is on record (endpoint_request: transport, the
 *    channel id, method) before the gateway reads it, as a session is. A
 *    modern session is never initialized, so it gets no server-to-client
 *    requests and no broadcast notifications.
 */
#include "mcp_endpoint_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/kernel/era.h"
#include "glove/mcp/jsonrpc.h"

/* Requests one session may have in flight. */
#define SESSION_INFLIGHT_MAX 256

static bool session_live(struct ep *ep, int s, uint64_t serial) {
        return s >= 0 && s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX && ep->sessions[s].used && ep->sessions[s].serial == serial;
}

int mux_session_find(struct ep *ep, const char *sid, size_t n) {
        if (n != 32)
                return -1;
        for (int s = 0; s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX; s++)
                if (ep->sessions[s].used && ep->sessions[s].transport == EP_HTTP && memcmp(ep->sessions[s].sid, sid, 32) == 0)
                        return s;
        return -1;
}

/* With every slot taken, a new HTTP session may take the place of the
 * least recently used HTTP session that is idle: no GET stream, nothing in
 * flight (clients such as the SDK's never DELETE theirs). Its client gets
 * 404 next time and starts a new session, as the transport says. */
static void evict_idle(struct ep *ep) {
        int victim = -1;
        for (int s = 0; s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX; s++) {
                struct ep_session *ss = &ep->sessions[s];
                if (!ss->used)
                        return; /* a free slot */
                if (ss->transport != EP_HTTP || ss->conn || ss->inflight)
                        continue;
                if (victim < 0 || ss->last_used < ep->sessions[victim].last_used)
                        victim = s;
        }
        if (victim >= 0)
                mux_session_close(ep, victim, "evicted");
}

int mux_session_open(struct ep *ep, enum ep_transport t, struct ep_conn *conn) {
        if (t == EP_HTTP)
                evict_idle(ep);
        for (int s = 0; s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX; s++) {
                struct ep_session *ss = &ep->sessions[s];
                if (ss->used)
                        continue;
                memset(ss, 0, sizeof(*ss));
                if (t == EP_HTTP) {
                        uint8_t rnd[16];
                        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                                return -1;
                        for (size_t i = 0; i < sizeof(rnd); i++)
                                snprintf(ss->sid + 2 * i, 3, "%02x", rnd[i]);
                }
                ss->used = true;
                ss->serial = ++ep->next_serial;
                ss->last_used = ++ep->next_use;
                ss->transport = t;
                ss->conn = t == EP_COMMAND ? conn : NULL;
                ss->era = t == EP_HTTP ? ERA_LEGACY : ERA_NONE; /* an HTTP session is made by initialize */
                (void)ep_audit(ep, "endpoint_session",
                               json_pack("{s:s,s:I,s:s}", "phase", "open", "session", (json_int_t)ss->serial, "transport",
                                         ep_transport_name(t)));
                return s;
        }
        ep_refused(ep, t, t == EP_HTTP ? 503 : 0, "endpoint.sessions_full");
        return -1;
}

/* Queues one message towards the gateway. */
static int gw_send(struct ep *ep, const json_t *msg) {
        _cleanup_free_ char *line = NULL;
        size_t n = 0;
        int r = glove_mcp_encode(msg, ep->cfg.max_frame, &line, &n);
        if (r < 0)
                return r;
        /* The queue towards the gateway counts against the endpoint's
         * memory budget (-ENOBUFS), besides its own bound (-EMSGSIZE: the
         * gateway is not reading). */
        size_t cap = glove_buffer_cap_after(&ep->gw_out.buf, n);
        if (!cap)
                return -EMSGSIZE;
        if (!ep_gateway_fits(ep, cap))
                return -ENOBUFS;
        r = glove_mcp_writer_queue(&ep->gw_out, line, n);
        if (r < 0)
                return r;
        r = glove_mcp_writer_flush(&ep->gw_out, ep->gw_fd);
        if (r < 0 && r != -EAGAIN) {
                ep_fail(ep, -r, "endpoint.gateway", "writing to the gateway: %s", strerror(-r));
                return r;
        }
        if (!glove_mcp_writer_pending(&ep->gw_out))
                glove_buffer_free(&ep->gw_out.buf);
        sd_event_source_set_io_events(ep->gw_io, EPOLLIN | (glove_mcp_writer_pending(&ep->gw_out) ? EPOLLOUT : 0));
        return 0;
}

static void wire_id(size_t slot, uint32_t gen, char *buf, size_t size) {
        snprintf(buf, size, "m%zu.%" PRIu32, slot, gen);
}

/* The in-flight slot a wire id (string "m<slot>.<gen>") names, or -1. */
static int wire_slot(struct ep *ep, const json_t *id) {
        if (!json_is_string(id))
                return -1;
        const char *s = json_string_value(id);
        if (s[0] != 'm')
                return -1;
        char *end;
        unsigned long slot = strtoul(s + 1, &end, 10);
        if (end == s + 1 || *end != '.' || slot >= GLOVE_MCP_ENDPOINT_INFLIGHT_MAX)
                return -1;
        const char *g = end + 1;
        unsigned long gen = strtoul(g, &end, 10);
        if (end == g || *end)
                return -1;
        struct ep_inflight *f = &ep->inflight[slot];
        if (!f->used || f->gen != gen)
                return -1;
        char want[32];
        wire_id(slot, f->gen, want, sizeof(want));
        return strcmp(want, s) == 0 ? (int)slot : -1;
}

static void inflight_free(struct ep *ep, int slot) {
        struct ep_inflight *f = &ep->inflight[slot];
        if (session_live(ep, f->session, f->session_serial) && ep->sessions[f->session].inflight)
                ep->sessions[f->session].inflight--;
        json_decref(f->id);
        json_decref(f->token);
        f->id = f->token = NULL;
        f->used = false;
        f->conn = NULL;
        if (f->cancel_owed) {
                f->cancel_owed = NULL;
                ep->owed--;
        }
}

/* A JSON-RPC error for a client (a new reference). */
static json_t *client_error(const json_t *id, int code, const char *message, const char *reason) {
        json_t *nul = json_null();
        json_t *e = glove_mcp_rpc_error(id ? id : nul, code, message, reason, NULL);
        json_decref(nul);
        return e;
}

/* Sends to a session a message outside an answer (stolen). */
void mux_deliver(struct ep *ep, int s, json_t *msg) {
        struct ep_session *ss = &ep->sessions[s];
        if (!msg)
                return;
        if (ss->transport == EP_COMMAND) {
                _cleanup_free_ char *line = NULL;
                size_t n = 0;
                if (ss->conn && glove_mcp_encode(msg, ep->cfg.max_frame, &line, &n) == 0 && conn_queue(ss->conn, line, n) < 0)
                        conn_kill(ss->conn); /* not reading: the session ends */
                json_decref(msg);
                return;
        }
        if (ss->conn && ss->conn->state == H_STREAM) {
                if (http_sse_event(ss->conn, msg) < 0)
                        conn_kill(ss->conn);
                json_decref(msg);
                return;
        }
        /* No GET stream: kept, encoded (its bytes are what is charged),
         * unless the backlog or the endpoint's memory budget is full:
         * dropped. */
        char *text = ss->n_backlog < GLOVE_MCP_ENDPOINT_BACKLOG_MAX ? json_dumps(msg, JSON_COMPACT) : NULL;
        json_decref(msg);
        if (!text)
                return;
        size_t charge = EP_BACKLOG_CHARGE(strlen(text));
        if (!ep_room(ep, charge)) {
                free(text);
                return;
        }
        ep->backlog_bytes += charge;
        ss->backlog[ss->n_backlog++] = text;
}

static bool method_is(const char *m, const char *want) {
        return m && strcmp(m, want) == 0;
}

/* The capability a server-to-client method needs. */
static bool session_can(const struct ep_session *ss, const char *method) {
        if (method_is(method, "sampling/createMessage"))
                return ss->cap_sampling;
        if (method_is(method, "elicitation/create"))
                return ss->cap_elicitation;
        if (method_is(method, "roots/list"))
                return ss->cap_roots;
        return true;
}

static int pick_session(struct ep *ep, const char *method) {
        int best = -1, any = -1;
        for (int s = 0; s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX; s++) {
                struct ep_session *ss = &ep->sessions[s];
                if (!ss->used || !ss->initialized)
                        continue;
                if (any < 0 || ss->init_order > ep->sessions[any].init_order)
                        any = s;
                if (session_can(ss, method) && (best < 0 || ss->init_order > ep->sessions[best].init_order))
                        best = s;
        }
        return best >= 0 ? best : any;
}

static void record_capabilities(struct ep_session *ss, const json_t *params) {
        json_t *caps = json_object_get(params, "capabilities");
        ss->cap_sampling = json_object_get(caps, "sampling") != NULL;
        ss->cap_elicitation = json_object_get(caps, "elicitation") != NULL;
        ss->cap_roots = json_object_get(caps, "roots") != NULL;
}

/* Glove's own session-capabilities key on a client's request
 * (glove/kernel/era.h): a legacy request of a session carries what its
 * session declared in initialize (nothing before it), over any value the
 * client wrote; any other request carries none. Returns 0 or -ENOMEM. */
static int stamp_session_caps(const struct ep_session *ss, bool modern, json_t *params) {
        json_t *meta = json_object_get(params, "_meta");
        if (!ss || modern) {
                if (json_is_object(meta))
                        json_object_del(meta, GLOVE_KERNEL_META_SESSION_CAPS);
                return 0;
        }
        if (!json_is_object(params))
                return 0;
        json_t *caps = json_object();
        if (caps && ss->initialized) {
                if ((ss->cap_sampling && json_object_set_new(caps, "sampling", json_object()) < 0) ||
                    (ss->cap_elicitation && json_object_set_new(caps, "elicitation", json_object()) < 0) ||
                    (ss->cap_roots && json_object_set_new(caps, "roots", json_object()) < 0))
                        json_decref(TAKE_PTR(caps));
        }
        if (!caps || (!json_is_object(meta) && json_object_set_new(params, "_meta", meta = json_object()) < 0) || !meta) {
                json_decref(caps);
                return -ENOMEM;
        }
        return json_object_set_new(meta, GLOVE_KERNEL_META_SESSION_CAPS, caps) < 0 ? -ENOMEM : 0;
}

bool mux_modern(const json_t *params) {
        return json_object_get(json_object_get(params, "_meta"), EP_META_VERSION) != NULL;
}

/* A session's requests are of one era. Returns 0, or -EINVAL with
 * *error_out set (audited). */
static int check_era(struct ep *ep, struct ep_session *ss, struct glove_mcp_message *m, bool modern, json_t **error_out) {
        const char *message = NULL;
        if (modern && ss->era == ERA_LEGACY)
                message = "modern request on a legacy session: a session that sent initialize speaks its negotiated "
                          "version; send modern (2026-07-28) requests on a new connection without initialize";
        else if (!modern && method_is(m->method, "initialize") && ss->era == ERA_MODERN)
                message = "initialize on a modern session: this connection sent modern (2026-07-28) requests; "
                          "open a new connection for a legacy session";
        if (!message)
                return 0;
        *error_out = client_error(m->id, -32600, message, "endpoint.era_mixed");
        ep_refused(ep, ss->transport, ss->transport == EP_HTTP ? 400 : 0, "endpoint.era_mixed");
        return -EINVAL;
}

static int client_request(struct ep *ep, int s, struct ep_conn *conn, struct glove_mcp_message *m, json_t **error_out) {
        bool modern = mux_modern(m->params);
        struct ep_session *ss = s >= 0 ? &ep->sessions[s] : NULL;
        if (!ss && !(modern && conn && conn->kind == CONN_HTTP)) {
                *error_out = client_error(m->id, -32600, "no MCP session for this request", "endpoint.session_required");
                return -EINVAL;
        }
        if (ss) {
                int r = check_era(ep, ss, m, modern, error_out);
                if (r < 0)
                        return r;
        }
        int slot = -1;
        for (int i = 0; i < GLOVE_MCP_ENDPOINT_INFLIGHT_MAX && (!ss || ss->inflight < SESSION_INFLIGHT_MAX); i++)
                if (!ep->inflight[i].used) {
                        slot = i;
                        break;
                }
        if (slot < 0) {
                *error_out = client_error(m->id, -32000, "too many requests in flight", "endpoint.inflight_full");
                return -EBUSY;
        }
        struct ep_inflight *f = &ep->inflight[slot];
        char wire[32];
        wire_id((size_t)slot, f->gen + 1, wire, sizeof(wire));
        bool translatable = method_is(m->method, "tools/call") || method_is(m->method, "prompts/get") ||
                            method_is(m->method, "resources/read");
        if ((translatable || json_object_get(json_object_get(m->params, "_meta"), GLOVE_KERNEL_META_SESSION_CAPS)) &&
            stamp_session_caps(ss, modern, m->params) < 0) {
                *error_out = client_error(m->id, -32603, "out of memory", "endpoint.nomem");
                return -ENOMEM;
        }
        json_t *meta = json_object_get(m->params, "_meta");
        json_t *token = json_object_get(meta, "progressToken");
        json_t *orig_id = json_incref(m->id);
        json_t *orig_token = json_incref(token);
        if (json_object_set_new(m->root, "id", json_string(wire)) < 0 ||
            (token && json_object_set_new(meta, "progressToken", json_string(wire)) < 0)) {
                json_decref(orig_id);
                json_decref(orig_token);
                *error_out = client_error(m->id, -32603, "out of memory", "endpoint.nomem");
                return -ENOMEM;
        }
        if (ss && !modern && method_is(m->method, "initialize"))
                record_capabilities(ss, m->params);
        int r = gw_send(ep, m->root);
        if (r == -ENOBUFS) {
                *error_out = client_error(orig_id, -32000, "Glove's memory for this agent's MCP connections is taken; retry later",
                                          "endpoint.memory_full");
                json_decref(orig_id);
                json_decref(orig_token);
                return r;
        }
        if (r < 0) {
                *error_out = client_error(orig_id, -32000, r == -EMSGSIZE ? "the gateway is not reading" : "cannot forward",
                                          "endpoint.gateway");
                json_decref(orig_id);
                json_decref(orig_token);
                return r;
        }
        /* A request without a session (a modern HTTP POST) has no
         * endpoint_session record to say how it came: its own record does,
         * under the id the gateway's records carry. Queued is not read: the
         * gateway reads it from this loop, after this record. A failed
         * append fails the endpoint, which stops the run. */
        if (!ss)
                (void)ep_audit(ep, "endpoint_request",
                               json_pack("{s:s,s:s,s:s}", "transport", ep_transport_name(EP_HTTP), "id", wire, "method", m->method));
        f->used = true;
        f->gen++;
        f->session = s;
        f->session_serial = ss ? ss->serial : 0;
        f->id = orig_id;
        f->token = orig_token;
        f->initialize = !modern && method_is(m->method, "initialize");
        f->conn = conn && conn->kind == CONN_HTTP ? conn : NULL;
        if (ss) {
                ss->inflight++;
                if (ss->era == ERA_NONE)
                        ss->era = modern ? ERA_MODERN : f->initialize ? ERA_LEGACY : ERA_NONE;
        }
        if (f->conn)
                f->conn->inflight = slot;
        return 0;
}

/* notifications/cancelled from a client: its own id to the wire id. */
static int client_cancel(struct ep *ep, int s, struct glove_mcp_message *m) {
        json_t *rid = json_object_get(m->params, "requestId");
        for (int i = 0; rid && i < GLOVE_MCP_ENDPOINT_INFLIGHT_MAX; i++) {
                struct ep_inflight *f = &ep->inflight[i];
                if (f->used && f->session == s && f->session_serial == ep->sessions[s].serial && json_equal(f->id, rid)) {
                        char wire[32];
                        wire_id((size_t)i, f->gen, wire, sizeof(wire));
                        json_object_set_new(m->params, "requestId", json_string(wire));
                        return gw_send(ep, m->root);
                }
        }
        return 0; /* not in flight: nothing to cancel */
}

/* A client's answer to a server-to-client request. */
static int client_response(struct ep *ep, int s, struct glove_mcp_message *m) {
        for (size_t i = 0; i < GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX; i++) {
                struct ep_server_request *q = &ep->server_req[i];
                if (q->used && q->session == s && q->session_serial == ep->sessions[s].serial && json_equal(q->id, m->id)) {
                        int r = gw_send(ep, m->root);
                        json_decref(q->id);
                        q->id = NULL;
                        q->used = false;
                        return r;
                }
        }
        return 0; /* not asked of this session: dropped */
}

int mux_from_client(struct ep *ep, int s, struct ep_conn *conn, const char *text, size_t len, enum glove_mcp_kind *kind_out,
                    json_t **error_out) {
        *error_out = NULL;
        struct glove_mcp_message m = {0};
        json_t *bad_id = NULL;
        struct glove_error e = {0};
        int r = glove_mcp_message_parse(text, len, ep->cfg.max_frame, GLOVE_MCP_PARSE_BOUND_VALUES, &m, &bad_id, &e);
        if (r < 0) {
                int code = strcmp(e.code, "mcp.parse") == 0 ? -32700 : -32600;
                *error_out = client_error(bad_id, code, e.message, e.code);
                json_decref(bad_id);
                return r;
        }
        json_decref(bad_id); /* the parser gives the id on success too */
        *kind_out = m.kind;
        if (s < 0 && m.kind != GLOVE_MCP_REQUEST) {
                /* Only a modern request comes without a session (mcp_http.c). */
                glove_mcp_message_free(&m);
                return -EINVAL;
        }
        if (s >= 0)
                ep->sessions[s].last_used = ++ep->next_use;
        switch (m.kind) {
        case GLOVE_MCP_REQUEST:
                r = client_request(ep, s, conn, &m, error_out);
                break;
        case GLOVE_MCP_NOTIFICATION:
                r = method_is(m.method, "notifications/cancelled") ? client_cancel(ep, s, &m) : gw_send(ep, m.root);
                break;
        case GLOVE_MCP_RESPONSE:
                r = client_response(ep, s, &m);
                break;
        }
        glove_mcp_message_free(&m);
        if (r == -ENOBUFS)
                ep_refused(ep, s >= 0 ? ep->sessions[s].transport : EP_HTTP, 0, "endpoint.memory_full");
        return r;
}

/* The gateway's response to a client request. */
static void gateway_response(struct ep *ep, struct glove_mcp_message *m) {
        int slot = wire_slot(ep, m->id);
        if (slot < 0)
                return; /* no longer wanted (its session ended), or not ours */
        struct ep_inflight *f = &ep->inflight[slot];
        if (f->cancel_owed) {
                /* Answered before its cancellation could go: nothing to
                 * cancel any more, and no one to tell. */
                inflight_free(ep, slot);
                return;
        }
        int s = f->session;
        if (s < 0) {
                /* A modern HTTP request: answered on its POST, if still there. */
                struct ep_conn *conn = f->conn;
                json_object_set(m->root, "id", f->id);
                if (conn)
                        conn->inflight = -1;
                inflight_free(ep, slot);
                if (conn)
                        http_answer(conn, m->root);
                return;
        }
        if (!session_live(ep, s, f->session_serial)) {
                inflight_free(ep, slot);
                return;
        }
        json_object_set(m->root, "id", f->id);
        struct ep_session *ss = &ep->sessions[s];
        if (f->initialize && json_object_get(m->root, "result")) {
                ss->initialized = true;
                ss->init_order = ++ep->next_init_order;
        }
        struct ep_conn *conn = f->conn;
        if (conn)
                conn->inflight = -1;
        inflight_free(ep, slot);
        if (ss->transport == EP_HTTP && conn)
                http_answer(conn, m->root);
        else
                mux_deliver(ep, s, json_incref(m->root));
        if (ss->used && ss->transport == EP_COMMAND && ss->conn && ss->conn->eof && !ss->conn->dead && ss->inflight == 0)
                stdio_input_ended(ss->conn);
}

/* The in-flight request of the wire id or token tag (borrowed) whose
 * session (if any) is still the one that sent it, or NULL. */
static struct ep_inflight *tagged_request(struct ep *ep, const json_t *tag) {
        int slot = wire_slot(ep, tag);
        if (slot < 0)
                return NULL;
        struct ep_inflight *f = &ep->inflight[slot];
        return f->session >= 0 && !session_live(ep, f->session, f->session_serial) ? NULL : f;
}

/* A notification about request f (its tag already the client's own) on
 * f's stream: its SSE answer, else its session. A session-less request
 * answered as JSON has no stream to ride (the client asked for JSON
 * only): nothing is sent. */
static void notify_request(struct ep *ep, struct ep_inflight *f, json_t *root) {
        if (f->conn && f->conn->sse) {
                if (http_sse_event(f->conn, root) < 0)
                        conn_kill(f->conn);
                return;
        }
        if (f->session >= 0)
                mux_deliver(ep, f->session, json_incref(root));
}

static void gateway_progress(struct ep *ep, struct glove_mcp_message *m) {
        struct ep_inflight *f = tagged_request(ep, json_object_get(m->params, "progressToken"));
        if (!f || !f->token)
                return;
        json_object_set(m->params, "progressToken", f->token);
        notify_request(ep, f, m->root);
}

static void gateway_request(struct ep *ep, struct glove_mcp_message *m) {
        /* A request the gateway asks for an agent's request (an input
         * request it translates) goes to that request's session only, if
         * it can take it; the key goes no further. */
        json_t *meta = json_object_get(m->params, "_meta");
        json_t *related = json_is_object(meta) ? json_object_get(meta, GLOVE_KERNEL_META_RELATED) : NULL;
        int s;
        if (related) {
                struct ep_inflight *f = tagged_request(ep, related);
                s = f && f->session >= 0 && ep->sessions[f->session].initialized && session_can(&ep->sessions[f->session], m->method)
                            ? f->session
                            : -1;
                json_object_del(meta, GLOVE_KERNEL_META_RELATED);
                if (json_object_size(meta) == 0)
                        json_object_del(m->params, "_meta");
        } else {
                s = pick_session(ep, m->method);
        }
        size_t q = 0;
        while (q < GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX && ep->server_req[q].used)
                q++;
        if (s < 0 || q == GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX) {
                _cleanup_json_ json_t *e = glove_mcp_rpc_error(m->id, -32603,
                                                               s < 0 ? "no MCP client session can take this request"
                                                                     : "too many requests to clients pending",
                                                               s < 0 ? "endpoint.no_session" : "endpoint.server_requests_full", NULL);
                if (e)
                        (void)gw_send(ep, e);
                return;
        }
        ep->server_req[q] = (struct ep_server_request){
                .used = true, .id = json_incref(m->id), .session = s, .session_serial = ep->sessions[s].serial};
        mux_deliver(ep, s, json_incref(m->root));
}

/* A notification of a subscriptions/listen (MCP 2026-07-28: tagged with
 * _meta["io.modelcontextprotocol/subscriptionId"], the listen's wire id):
 * to the listen's client only, its own id restored; an unknown tag is
 * dropped. */
static void gateway_listen(struct ep *ep, struct glove_mcp_message *m, json_t *meta) {
        struct ep_inflight *f = tagged_request(ep, json_object_get(meta, EP_META_SUBSCRIPTION));
        if (!f)
                return;
        json_object_set(meta, EP_META_SUBSCRIPTION, f->id);
        notify_request(ep, f, m->root);
}

static void gateway_notification(struct ep *ep, struct glove_mcp_message *m) {
        if (method_is(m->method, "notifications/progress")) {
                gateway_progress(ep, m);
                return;
        }
        json_t *meta = json_object_get(m->params, "_meta");
        if (json_is_object(meta) && json_object_get(meta, EP_META_SUBSCRIPTION)) {
                gateway_listen(ep, m, meta);
                return;
        }
        if (method_is(m->method, "notifications/cancelled")) {
                json_t *rid = json_object_get(m->params, "requestId");
                for (size_t i = 0; rid && i < GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX; i++) {
                        struct ep_server_request *q = &ep->server_req[i];
                        if (q->used && json_equal(q->id, rid)) {
                                if (session_live(ep, q->session, q->session_serial))
                                        mux_deliver(ep, q->session, json_incref(m->root));
                                json_decref(q->id);
                                q->id = NULL;
                                q->used = false;
                                if (q->error_owed) { /* withdrawn: no answer owed */
                                        q->error_owed = false;
                                        ep->owed--;
                                }
                        }
                }
                return;
        }
        for (int s = 0; s < GLOVE_MCP_ENDPOINT_SESSIONS_MAX; s++)
                if (ep->sessions[s].used && ep->sessions[s].initialized)
                        mux_deliver(ep, s, json_incref(m->root));
}

static void gateway_line(struct ep *ep, const char *line, size_t len) {
        struct glove_mcp_message m = {0};
        struct glove_error e = {0};
        if (glove_mcp_message_parse(line, len, ep->cfg.max_frame, 0, &m, NULL, &e) < 0)
                return;
        if (m.kind == GLOVE_MCP_RESPONSE)
                gateway_response(ep, &m);
        else if (m.kind == GLOVE_MCP_REQUEST)
                gateway_request(ep, &m);
        else
                gateway_notification(ep, &m);
        glove_mcp_message_free(&m);
}

int mux_gateway_io(struct ep *ep, uint32_t revents) {
        if (revents & EPOLLOUT) {
                int r = glove_mcp_writer_flush(&ep->gw_out, ep->gw_fd);
                if (r < 0 && r != -EAGAIN) {
                        ep_fail(ep, -r, "endpoint.gateway", "writing to the gateway: %s", strerror(-r));
                        sd_event_source_set_enabled(ep->gw_io, SD_EVENT_OFF);
                        return 0;
                }
                if (!glove_mcp_writer_pending(&ep->gw_out))
                        glove_buffer_free(&ep->gw_out.buf);
                mux_send_owed(ep); /* the queue drained: room for what is owed */
        }
        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                ssize_t n = glove_mcp_reader_fill(&ep->gw_in, ep->gw_fd);
                if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINTR)) {
                        /* The gateway closed the channel: nothing more comes. */
                        sd_event_source_set_enabled(ep->gw_io, SD_EVENT_OFF);
                        return 0;
                }
                const char *line;
                size_t len;
                int r;
                while ((r = glove_mcp_reader_next(&ep->gw_in, &line, &len)) == 1)
                        gateway_line(ep, line, len);
                if (r < 0) {
                        ep_fail(ep, EMSGSIZE, "endpoint.gateway", "a gateway message longer than the frame bound");
                        sd_event_source_set_enabled(ep->gw_io, SD_EVENT_OFF);
                        return 0;
                }
                mux_send_owed(ep);
        }
        sd_event_source_set_io_events(ep->gw_io, EPOLLIN | (glove_mcp_writer_pending(&ep->gw_out) ? EPOLLOUT : 0));
        return 0;
}

/* notifications/cancelled to the gateway for in-flight slot i. Returns 0,
 * or a negative errno when the queue had no room (or the endpoint failed:
 * -EPIPE, nothing is sent any more). */
static int cancel_at_gateway(struct ep *ep, int i, const char *reason) {
        if (ep->failed || ep->ending)
                return -EPIPE;
        char wire[32];
        wire_id((size_t)i, ep->inflight[i].gen, wire, sizeof(wire));
        _cleanup_json_ json_t *n = json_pack("{s:s,s:s,s:{s:s,s:s}}", "jsonrpc", "2.0", "method", "notifications/cancelled", "params",
                                             "requestId", wire, "reason", reason);
        return n ? gw_send(ep, n) : -ENOMEM;
}

/* Slot i's client is gone: its request is cancelled at the gateway and the
 * slot freed; when the queue has no room (the memory budget at its limit,
 * or the queue's own bound), the cancellation is owed instead: the slot
 * stays taken, bound to no one, until mux_send_owed queues it. So a
 * cancellation is never lost for want of room. Returns true when the slot
 * is free. */
static bool inflight_cancel(struct ep *ep, int i, const char *reason) {
        if (cancel_at_gateway(ep, i, reason) == 0 || ep->failed || ep->ending) {
                inflight_free(ep, i);
                return true;
        }
        struct ep_inflight *f = &ep->inflight[i];
        if (session_live(ep, f->session, f->session_serial) && ep->sessions[f->session].inflight)
                ep->sessions[f->session].inflight--;
        json_decref(f->id);
        json_decref(f->token);
        f->id = f->token = NULL;
        f->session = -1;
        f->session_serial = 0;
        f->conn = NULL;
        f->cancel_owed = reason;
        ep->owed++;
        return false;
}

/* The error answering the gateway's request q, whose session ended.
 * Returns 0 or a negative errno (no room, or the endpoint failed). */
static int server_request_ended(struct ep *ep, struct ep_server_request *q) {
        if (ep->failed || ep->ending)
                return -EPIPE;
        _cleanup_json_ json_t *e = glove_mcp_rpc_error(q->id, -32603, "the MCP client session ended", "endpoint.session_ended", NULL);
        return e ? gw_send(ep, e) : -ENOMEM;
}

void mux_send_owed(struct ep *ep) {
        for (int i = 0; ep->owed && !ep->failed && i < GLOVE_MCP_ENDPOINT_INFLIGHT_MAX; i++) {
                struct ep_inflight *f = &ep->inflight[i];
                if (!f->used || !f->cancel_owed)
                        continue;
                if (cancel_at_gateway(ep, i, f->cancel_owed) < 0)
                        return; /* still no room: the next drain */
                inflight_free(ep, i);
        }
        for (size_t i = 0; ep->owed && !ep->failed && i < GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX; i++) {
                struct ep_server_request *q = &ep->server_req[i];
                if (!q->used || !q->error_owed)
                        continue;
                if (server_request_ended(ep, q) < 0)
                        return;
                json_decref(q->id);
                q->id = NULL;
                q->used = false;
                q->error_owed = false;
                ep->owed--;
        }
}

void mux_conn_gone(struct ep *ep, struct ep_conn *c) {
        for (int i = 0; i < GLOVE_MCP_ENDPOINT_INFLIGHT_MAX; i++) {
                struct ep_inflight *f = &ep->inflight[i];
                if (!f->used || f->conn != c || f->session >= 0)
                        continue;
                c->inflight = -1;
                (void)inflight_cancel(ep, i, "the MCP client closed the response stream");
        }
}

void mux_session_close(struct ep *ep, int s, const char *reason) {
        struct ep_session *ss = &ep->sessions[s];
        if (!ss->used)
                return;
        /* Gone from here on: nothing reached from the answers below (a
         * pipelined request on a waiting connection) finds it again. */
        ss->used = false;
        size_t cancelled = 0;
        for (int i = 0; i < GLOVE_MCP_ENDPOINT_INFLIGHT_MAX; i++) {
                struct ep_inflight *f = &ep->inflight[i];
                if (!f->used || f->session != s || f->session_serial != ss->serial)
                        continue;
                struct ep_conn *waiting = f->conn;
                json_t *answer = waiting ? client_error(f->id, -32000, "the MCP client session ended", "endpoint.session_ended") : NULL;
                if (waiting)
                        waiting->inflight = -1;
                (void)inflight_cancel(ep, i, "the MCP client session ended");
                if (waiting && answer)
                        http_answer(waiting, answer);
                json_decref(answer);
                cancelled++;
        }
        for (size_t i = 0; i < GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX; i++) {
                struct ep_server_request *q = &ep->server_req[i];
                if (!q->used || q->session != s || q->session_serial != ss->serial)
                        continue;
                if (server_request_ended(ep, q) < 0 && !ep->failed && !ep->ending) {
                        /* No room: owed (mux_send_owed), never lost. */
                        q->session = -1;
                        q->session_serial = 0;
                        q->error_owed = true;
                        ep->owed++;
                        continue;
                }
                json_decref(q->id);
                q->id = NULL;
                q->used = false;
        }
        for (size_t i = 0; i < ss->n_backlog; i++) {
                ep->backlog_bytes -= EP_BACKLOG_CHARGE(strlen(ss->backlog[i]));
                free(ss->backlog[i]);
        }
        ss->n_backlog = 0;
        struct ep_conn *stream = ss->transport == EP_HTTP ? ss->conn : NULL;
        (void)ep_audit(ep, "endpoint_session",
                       json_pack("{s:s,s:I,s:s,s:s,s:I}", "phase", "close", "session", (json_int_t)ss->serial, "transport",
                                 ep_transport_name(ss->transport), "reason", reason, "cancelled", (json_int_t)cancelled));
        ss->conn = NULL;
        if (stream)
                http_session_ended(stream);
}

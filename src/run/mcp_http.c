/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Streamable HTTP MCP endpoint (MCP 2025-11-25 "Transports", Streamable
 * HTTP; compatible with 2025-06-18 and 2025-03-26; and MCP 2026-07-28
 * "Streamable HTTP" for modern requests, below) at /mcp on the sandbox's
 * loopback, served on glove run's loop (mcp_endpoint.h):
 *
 *   POST    one JSON-RPC message (Content-Length; chunked bodies: 411). A
 *           request is answered application/json, or text/event-stream when
 *           the client accepts it and the request carries a progressToken
 *           (its progress comes first on that stream) or does not accept JSON;
 *           a notification or response: 202. An initialize without
 *           Mcp-Session-Id starts a session and its answer carries the id.
 *   GET     the session's SSE stream for server-to-client messages (one per
 *           session: a second is 409).
 *   DELETE  ends the session.
 * Refusals: 403 Host or Origin not this endpoint's (DNS rebinding), 400 no
 * Mcp-Session-Id, 404 an unknown or ended one, 400 an unsupported
 * MCP-Protocol-Version, 404 another path, 405 another method, 406/415 Accept
 * or Content-Type, 413 a body over --max-frame, 431/400/505 a bad head,
 * 503 the endpoint's memory budget has no room for the body (Retry-After).
 * Bodies of refusals are JSON-RPC errors with data.reason.
 *
 * Modern requests (a POSTed request whose params._meta names
 * io.modelcontextprotocol/protocolVersion; MCP 2026-07-28 "Streamable
 * HTTP") have no session: no Mcp-Session-Id is needed, minted or echoed
 * (an unknown one is ignored; one of a live legacy session: 400, -32600
 * "endpoint.era_mixed"). Their headers are checked against the body, each
 * failure a 400 with the request's id: MCP-Protocol-Version missing or not
 * the _meta's version, Mcp-Method missing or not the method, Mcp-Name
 * missing or not params.name (tools/call, prompts/get) or params.uri
 * (resources/read), its "=?base64?...?=" form decoded first: -32020
 * "endpoint.header_mismatch"; a version Glove does not serve modern:
 * -32022 with data.supported and data.requested. On tools/call, each
 * argument the tool's inputSchema annotates with "x-mcp-header": NAME
 * (reached through "properties" keys) must be mirrored in Mcp-Param-NAME
 * when it has a value, and such a header given only then, once, equal to
 * it once decoded: -32020 otherwise (and for a header holding a byte a
 * plain header value may not). The answer's status follows its error:
 * -32020/-32021/-32022 and a -32602 for a _meta without clientCapabilities
 * 400, -32601 404 (JSON answers only; an SSE answer has sent 200). A client
 * that closes the connection before the answer cancels the request at the
 * gateway; one that only stops sending (a half-close) is answered
 * ("Half-close" below).
 * GET and DELETE without Mcp-Session-Id: 405, Allow: POST.
 */
#include "mcp_endpoint_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/kernel/era.h"
#include "glove/mcp/jsonrpc.h"

/* The versions modern requests may name (MCP 2026-07-28 "Versioning"),
 * newest first; a -32022 answer lists them, then the legacy ones. */
static const char *const modern_versions[] = {GLOVE_KERNEL_ERA_MODERN_VERSION};

static const char *status_text(int status) {
        switch (status) {
        case 200: return "OK";
        case 202: return "Accepted";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 406: return "Not Acceptable";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 415: return "Unsupported Media Type";
        case 431: return "Request Header Fields Too Large";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Error";
        }
}

static bool version_supported(struct glove_mcp_http_span v) {
        static const char *const known[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                if (glove_mcp_http_span_eq(v, known[i]))
                        return true;
        return false;
}

/* After a complete answer: the next request, or the close. */
static void request_done(struct ep_conn *c) {
        c->sse = false;
        c->modern = false;
        c->meta_partial = false;
        c->sse_ok = false;
        c->probing = false;
        c->inflight = -1;
        if (!c->keep_alive) {
                c->state = H_CLOSING;
                shutdown(c->fd, SHUT_RD);
                if (!glove_mcp_writer_pending(&c->out))
                        conn_kill(c);
                return;
        }
        c->state = H_HEAD;
        conn_arm(c, GLOVE_MCP_ENDPOINT_IDLE_TIMEOUT_USEC);
}

/* Queues a whole response. extra: more header lines (each ending CRLF) or "". */
static int respond(struct ep_conn *c, int status, const char *extra, const char *type, const char *body, size_t len) {
        char head[512];
        int n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n%s%s%s%sContent-Length: %zu\r\n%s\r\n", status,
                         status_text(status), type ? "Content-Type: " : "", type ? type : "", type ? "\r\n" : "", extra, len,
                         c->keep_alive ? "" : "Connection: close\r\n");
        if (n < 0 || (size_t)n >= sizeof(head))
                return -EINVAL;
        int r = len ? conn_push(c, head, (size_t)n) : conn_queue(c, head, (size_t)n);
        if (r >= 0 && len)
                r = conn_queue(c, body, len);
        if (r < 0)
                conn_kill(c);
        return r;
}

static void session_header(const struct ep_conn *c, char *buf, size_t size) {
        buf[0] = '\0';
        struct ep *ep = c->ep;
        if (c->session >= 0 && ep->sessions[c->session].used && ep->sessions[c->session].serial == c->session_serial &&
            ep->sessions[c->session].transport == EP_HTTP)
                snprintf(buf, size, "Mcp-Session-Id: %s\r\n", ep->sessions[c->session].sid);
}

/* A JSON body for a status (msg borrowed). */
static void respond_json(struct ep_conn *c, int status, const json_t *msg) {
        _cleanup_free_ char *body = json_dumps(msg, JSON_COMPACT);
        char extra[128];
        session_header(c, extra, sizeof(extra));
        if (!body) {
                conn_kill(c);
                return;
        }
        if (respond(c, status, extra, "application/json", body, strlen(body)) == 0)
                request_done(c);
}

/* A refusal: audited; a JSON-RPC error body with data.reason. close: the
 * connection ends after it (the head could not be trusted). A request
 * refused at its head never leaves its body to be read as the next head:
 * a body of known length (at most --max-frame) is skipped, and any other
 * (chunked, or longer) closes the connection, which the answer says
 * (Connection: close). */
static void refuse(struct ep_conn *c, int status, const char *reason, const char *message, bool close_after, const char *extra) {
        ep_refused(c->ep, EP_HTTP, status, reason);
        if (close_after)
                c->keep_alive = false;
        if (c->state == H_HEAD && c->keep_alive) {
                const struct glove_mcp_http_request *q = &c->req;
                if (q->has_transfer_encoding || (q->has_content_length && q->content_length > c->ep->cfg.max_frame))
                        c->keep_alive = false;
                else if (q->has_content_length)
                        c->discard = q->content_length;
        }
        json_t *nul = json_null();
        _cleanup_json_ json_t *e = glove_mcp_rpc_error(nul, status == 400 ? -32600 : -32000, message, reason, NULL);
        json_decref(nul);
        _cleanup_free_ char *body = e ? json_dumps(e, JSON_COMPACT) : NULL;
        if (!body) {
                conn_kill(c);
                return;
        }
        if (respond(c, status, extra ? extra : "", "application/json", body, strlen(body)) == 0)
                request_done(c);
}

int http_sse_event(struct ep_conn *c, const json_t *msg) {
        _cleanup_free_ char *json = json_dumps(msg, JSON_COMPACT);
        if (!json)
                return -ENOMEM;
        return http_sse_text(c, json, strlen(json));
}

int http_sse_text(struct ep_conn *c, const char *json, size_t jn) {
        static const char pre[] = "event: message\ndata: ";
        size_t payload = sizeof(pre) - 1 + jn + 2;
        char size[32];
        int n = snprintf(size, sizeof(size), "%zx\r\n", payload);
        int r = conn_push(c, size, (size_t)n);
        r = r < 0 ? r : conn_push(c, pre, sizeof(pre) - 1);
        r = r < 0 ? r : conn_push(c, json, jn);
        r = r < 0 ? r : conn_queue(c, "\n\n\r\n", 4);
        return r;
}

static int sse_start(struct ep_conn *c) {
        char extra[128], head[512];
        session_header(c, extra, sizeof(extra));
        int n = snprintf(head, sizeof(head),
                         "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                         "Transfer-Encoding: chunked\r\n%s\r\n",
                         extra);
        return conn_queue(c, head, (size_t)n);
}

/* The status of a modern request's JSON answer (MCP 2026-07-28
 * "Streamable HTTP", status codes): its error decides. */
static int modern_status(const struct ep_conn *c, const json_t *msg) {
        json_t *error = json_object_get(msg, "error");
        if (!error)
                return 200;
        switch (json_integer_value(json_object_get(error, "code"))) {
        case -32020: /* HeaderMismatch */
        case -32021: /* MissingRequiredClientCapability */
        case -32022: /* UnsupportedProtocolVersion */
                return 400;
        case -32602: /* invalid params: a 400 when the _meta is incomplete */
                return c->meta_partial ? 400 : 200;
        case -32601:
                return 404;
        default:
                return 200;
        }
}

/* Half-close. A client may stop sending once its request is complete
 * (shutdown(SHUT_WR), a half-close): its request is still answered.
 * Only a full close cancels a modern request (MCP 2026-07-28 "Streamable
 * HTTP": a closed response stream is the cancellation). Over TCP both are
 * one FIN, so the endpoint asks: it writes to a client whose modern request
 * waits after its FIN, and a client that has closed answers that with a
 * reset, which ends the connection and cancels the request (mux_conn_gone).
 * An SSE answer gets an SSE comment line at once and every
 * GLOVE_MCP_ENDPOINT_PROBE_USEC; a JSON answer not given within that time
 * becomes an SSE answer (200, the comment line, then the answer as an
 * event) when the client accepts text/event-stream over HTTP/1.1, as every
 * 2026-07-28 client must. A client that does not cannot be asked: its
 * request is answered when its answer comes. A Unix socket's peer that
 * closes is a hang-up at once (the egress relay's hand-over), no asking
 * needed. */
static void probe_write(struct ep_conn *c) {
        static const char comment[] = "b\r\n: waiting\n\n\r\n"; /* a chunk: an SSE comment line */
        if (!c->sse) {
                if (sse_start(c) < 0) {
                        conn_kill(c);
                        return;
                }
                c->sse = true;
        }
        if (conn_queue(c, comment, sizeof(comment) - 1) < 0) {
                conn_kill(c);
                return;
        }
        conn_arm(c, GLOVE_MCP_ENDPOINT_PROBE_USEC);
}

void http_probe(struct ep_conn *c) {
        if (c->dead || c->state != H_WAIT || !c->probing)
                return;
        probe_write(c);
}

/* The client of a waiting modern request stopped sending (EOF). */
static void client_stopped(struct ep_conn *c) {
        if (c->probing)
                return;
        if (!c->sse && !c->sse_ok)
                return; /* cannot be asked: answered when the answer comes */
        c->probing = true;
        if (c->sse)
                probe_write(c);
        else
                conn_arm(c, GLOVE_MCP_ENDPOINT_PROBE_USEC);
}

/* The client sent its last byte: close once what is queued has gone. */
static void conn_end(struct ep_conn *c) {
        if (!glove_mcp_writer_pending(&c->out)) {
                conn_kill(c);
                return;
        }
        c->state = H_CLOSING;
        conn_update(c);
}

void http_answer(struct ep_conn *c, json_t *msg) {
        if (c->dead || c->state != H_WAIT)
                return;
        if (c->sse) {
                if (http_sse_event(c, msg) < 0 || conn_queue(c, "0\r\n\r\n", 5) < 0) {
                        conn_kill(c);
                        return;
                }
                request_done(c);
        } else {
                respond_json(c, c->modern ? modern_status(c, msg) : 200, msg);
        }
        if (!c->dead && c->state == H_HEAD && (c->in.len || c->eof))
                http_process(c);
}

void http_session_ended(struct ep_conn *c) {
        if (c->dead || c->state != H_STREAM)
                return;
        c->session = -1;
        /* The last chunk ends the response cleanly and the connection
         * stays open for the client's next request: closing it now would
         * break a client that reuses it, as the response's head (sent when
         * the stream began) announced no close. */
        if (conn_queue(c, "0\r\n\r\n", 5) < 0) {
                conn_kill(c);
                return;
        }
        request_done(c);
}

/* The session a request names (Mcp-Session-Id), or -1 after a refusal. */
static int request_session(struct ep_conn *c) {
        const struct glove_mcp_http_request *q = &c->req;
        if (!q->session_id.s) {
                refuse(c, 400, "endpoint.session_required", "Mcp-Session-Id is required after initialize", false, NULL);
                return -1;
        }
        int s = mux_session_find(c->ep, q->session_id.s, q->session_id.n);
        if (s < 0) {
                refuse(c, 404, "endpoint.session_unknown", "no such MCP session (unknown or ended)", false, NULL);
                return -1;
        }
        c->session = s;
        c->session_serial = c->ep->sessions[s].serial;
        return s;
}

static bool accepts_json(const struct glove_mcp_http_request *q) {
        return !q->accept.s || glove_mcp_http_list_has(q->accept, "application/json", true);
}

static bool accepts_sse(const struct glove_mcp_http_request *q) {
        return q->accept.s && glove_mcp_http_list_has(q->accept, "text/event-stream", true);
}

/* A refusal of a request whose body was read: audited, a JSON-RPC error
 * with the request's id (borrowed, may be NULL) and data.reason, plus the
 * members of data_more (stolen, may be NULL). No Mcp-Session-Id. */
static void refuse_request(struct ep_conn *c, int status, int code, const char *reason, const char *message, const json_t *id,
                           json_t *data_more) {
        ep_refused(c->ep, EP_HTTP, status, reason);
        json_t *nul = json_null();
        _cleanup_json_ json_t *e = glove_mcp_rpc_error(id ? id : nul, code, message, reason, NULL);
        json_decref(nul);
        json_t *data = json_object_get(json_object_get(e, "error"), "data");
        if (data && data_more)
                json_object_update(data, data_more);
        json_decref(data_more);
        _cleanup_free_ char *body = e ? json_dumps(e, JSON_COMPACT) : NULL;
        if (!body) {
                conn_kill(c);
                return;
        }
        c->session = -1;
        if (respond(c, status, "", "application/json", body, strlen(body)) == 0)
                request_done(c);
}

/* The text header value h (trimmed by the parser, at most
 * GLOVE_MCP_HTTP_HEAD_MAX bytes) carries, into out (room for h.n bytes),
 * its length in *n: in the form "=?base64?B?=" what B decodes to (strict
 * base64, any bytes), else h itself (MCP 2026-07-28 "Streamable HTTP",
 * value encoding). False when B is not base64, or h holds a byte a plain
 * header value may not (outside visible ASCII, SP and HTAB: such a value
 * must be sent encoded). */
static bool header_text(struct glove_mcp_http_span h, uint8_t *out, size_t *n) {
        static const char pre[] = "=?base64?", post[] = "?=";
        size_t pn = sizeof(pre) - 1, qn = sizeof(post) - 1;
        for (size_t i = 0; i < h.n; i++)
                if (((unsigned char)h.s[i] < 0x20 && h.s[i] != '\t') || (unsigned char)h.s[i] > 0x7e)
                        return false;
        if (h.n >= pn + qn && memcmp(h.s, pre, pn) == 0 && memcmp(h.s + h.n - qn, post, qn) == 0) {
                ssize_t got = glove_base64_decode_into(h.s + pn, h.n - pn - qn, out);
                if (got < 0)
                        return false;
                *n = (size_t)got;
                return true;
        }
        memcpy(out, h.s, h.n);
        *n = h.n;
        return true;
}

/* Whether header value h says text (n bytes), decoded first (header_text). */
static bool header_says(struct glove_mcp_http_span h, const char *text, size_t n) {
        uint8_t out[GLOVE_MCP_HTTP_HEAD_MAX];
        size_t got;
        return text && h.n <= sizeof(out) && header_text(h, out, &got) && got == n && memcmp(out, text, n) == 0;
}

/* ---- Mcp-Param-* (MCP 2026-07-28 "Streamable HTTP", custom headers from
 * tool parameters): a tools/call's arguments that its tool's inputSchema
 * annotates with "x-mcp-header": NAME are mirrored in the header
 * Mcp-Param-NAME, which must then agree with the body. */

/* Deepest chain of "properties" keys followed to an annotation. */
#define PARAM_DEPTH_MAX 16

/* The value of the field "Mcp-Param-" + name[0..nn) of c's head (the name
 * compared in any case, OWS trimmed), and in *count how many such fields
 * it has. The head is c->in[0..head_len), as the parser checked it (CRLF
 * lines, token names, no obs-fold). */
static struct glove_mcp_http_span param_field(const struct ep_conn *c, const char *name, size_t nn, int *count) {
        static const char pre[] = "mcp-param-";
        size_t pn = sizeof(pre) - 1;
        const char *p = (const char *)c->in.data, *end = p + c->head_len;
        struct glove_mcp_http_span v = {0};
        *count = 0;
        const char *line = memchr(p, '\n', c->head_len); /* after the request line */
        for (line = line ? line + 1 : end; line < end;) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                if (!nl)
                        break;
                const char *le = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
                const char *colon = memchr(line, ':', (size_t)(le - line));
                if (colon && (size_t)(colon - line) == pn + nn && strncasecmp(line, pre, pn) == 0 &&
                    strncasecmp(line + pn, name, nn) == 0) {
                        const char *vs = colon + 1, *ve = le;
                        while (vs < ve && (*vs == ' ' || *vs == '\t'))
                                vs++;
                        while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t'))
                                ve--;
                        v = (struct glove_mcp_http_span){vs, (size_t)(ve - vs)};
                        (*count)++;
                }
                line = nl + 1;
        }
        return v;
}

/* Whether text t[0..n) is a JSON number equal to v (compared as numbers:
 * "42.0" says 42; the spec's integers are within 2^53). */
static bool number_says(const char *t, size_t n, double v) {
        char buf[64];
        if (n == 0 || n >= sizeof(buf))
                return false;
        memcpy(buf, t, n);
        buf[n] = '\0';
        size_t i = buf[0] == '-';
        if (buf[i] < '0' || buf[i] > '9')
                return false; /* no "+1", ".5", "inf", "0x1" */
        char *e;
        errno = 0;
        double d = strtod(buf, &e);
        return *e == '\0' && errno == 0 && d == v;
}

/* Whether header value h says the argument value v (a string byte for
 * byte, an integer or other number numerically, a boolean as true or
 * false; anything else cannot be mirrored), decoded first. */
static bool param_says(struct glove_mcp_http_span h, const json_t *v) {
        uint8_t out[GLOVE_MCP_HTTP_HEAD_MAX];
        size_t n;
        if (h.n > sizeof(out) || !header_text(h, out, &n))
                return false;
        const char *t = (const char *)out;
        if (json_is_string(v))
                return n == json_string_length(v) && memcmp(t, json_string_value(v), n) == 0;
        if (json_is_integer(v))
                return number_says(t, n, (double)json_integer_value(v));
        if (json_is_real(v))
                return number_says(t, n, json_real_value(v));
        if (json_is_boolean(v))
                return json_is_true(v) ? n == 4 && memcmp(t, "true", 4) == 0 : n == 5 && memcmp(t, "false", 5) == 0;
        return false;
}

/* Checks the annotated properties of schema (a tool's inputSchema, or an
 * object property in it, reached through "properties" keys only, as the
 * revision allows) against args (the arguments at that path, or NULL).
 * path: the path so far ("a.b", for the message). Returns NULL, or the
 * problem written into problem[0..size). */
static const char *params_check(const struct ep_conn *c, const json_t *schema, const json_t *args, const char *path, int depth,
                                char *problem, size_t size) {
        const json_t *props = json_object_get(schema, "properties");
        if (!json_is_object(props) || depth >= PARAM_DEPTH_MAX)
                return NULL;
        const char *key;
        json_t *prop;
        json_object_foreach((json_t *)props, key, prop) {
                char at[256];
                snprintf(at, sizeof(at), "%s%s%s", path, path[0] ? "." : "", key);
                const json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;
                const json_t *name = json_object_get(prop, "x-mcp-header");
                if (json_is_string(name) && json_string_length(name) > 0 && strlen(json_string_value(name)) == json_string_length(name)) {
                        const char *hn = json_string_value(name);
                        int count;
                        struct glove_mcp_http_span h = param_field(c, hn, strlen(hn), &count);
                        bool value = v && !json_is_null(v);
                        if (count > 1)
                                snprintf(problem, size, "Mcp-Param-%s is given %d times", hn, count);
                        else if (value && !count)
                                snprintf(problem, size, "Mcp-Param-%s is required: params.arguments.%s has a value (x-mcp-header)", hn, at);
                        else if (!value && count)
                                snprintf(problem, size, "Mcp-Param-%s is given but params.arguments.%s has no value", hn, at);
                        else if (value && !param_says(h, v))
                                snprintf(problem, size, "Mcp-Param-%s differs from params.arguments.%s", hn, at);
                        else
                                problem[0] = '\0';
                        if (problem[0])
                                return problem;
                }
                const char *p = params_check(c, prop, v, at, depth + 1, problem, size);
                if (p)
                        return p;
        }
        return NULL;
}

/* The value of JSON string v (borrowed) and its length in *n; NULL when v
 * is not a string. */
static const char *json_text(const json_t *v, size_t *n) {
        *n = json_is_string(v) ? json_string_length(v) : 0;
        return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool modern_version(struct glove_mcp_http_span v) {
        for (size_t i = 0; i < sizeof(modern_versions) / sizeof(modern_versions[0]); i++)
                if (v.n == strlen(modern_versions[i]) && memcmp(v.s, modern_versions[i], v.n) == 0)
                        return true;
        return false;
}

/* The headers of a modern request against its body m (MCP 2026-07-28
 * "Streamable HTTP", standard headers). Returns true, or false after
 * answering 400. */
static bool modern_headers_ok(struct ep_conn *c, const struct glove_mcp_message *m) {
        const struct glove_mcp_http_request *q = &c->req;
        json_t *meta = json_object_get(m->params, "_meta");
        size_t vn, mn = strlen(m->method), nn;
        const char *version = json_text(json_object_get(meta, EP_META_VERSION), &vn);
        const char *problem = NULL;
        char param_problem[512];
        /* A header that disagrees with the body is a mismatch (-32020)
         * whatever the versions; one that agrees names a version Glove may
         * not serve (-32022). */
        if (!q->protocol_version.s)
                problem = "MCP-Protocol-Version is required on a modern request";
        else if (!version || q->protocol_version.n != vn || memcmp(q->protocol_version.s, version, vn) != 0)
                problem = "MCP-Protocol-Version differs from params._meta's io.modelcontextprotocol/protocolVersion";
        else if (!modern_version(q->protocol_version)) {
                json_t *supported = json_array();
                for (size_t i = 0; i < sizeof(modern_versions) / sizeof(modern_versions[0]); i++)
                        json_array_append_new(supported, json_string(modern_versions[i]));
                /* And the legacy ones (by initialize), as the gateway lists them. */
                for (size_t i = 0; i < GLOVE_MCP_PROTOCOL_VERSIONS_COUNT; i++)
                        json_array_append_new(supported, json_string(glove_mcp_protocol_versions[i]));
                json_t *more = json_pack("{s:o,s:s%}", "supported", supported, "requested", q->protocol_version.s,
                                         q->protocol_version.n);
                refuse_request(c, 400, -32022, "endpoint.protocol_version", "Unsupported protocol version", m->id, more);
                return false;
        } else if (!q->mcp_method.s)
                problem = "Mcp-Method is required on a modern request";
        else if (q->mcp_method.n != mn || memcmp(q->mcp_method.s, m->method, mn) != 0)
                problem = "Mcp-Method differs from the request's method";
        if (!problem) {
                const char *key = strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0 ? "name"
                                  : strcmp(m->method, "resources/read") == 0                                      ? "uri"
                                                                                                                  : NULL;
                const char *value = key ? json_text(json_object_get(m->params, key), &nn) : NULL;
                if (key && !value) {
                        char what[64];
                        snprintf(what, sizeof(what), "params.%s must be a string", key);
                        refuse_request(c, 400, -32602, "endpoint.invalid_params", what, m->id, NULL);
                        return false;
                }
                if (key && !q->mcp_name.s)
                        problem = "Mcp-Name is required on tools/call, prompts/get and resources/read";
                else if (key && !header_says(q->mcp_name, value, nn))
                        problem = strcmp(key, "uri") == 0 ? "Mcp-Name differs from params.uri" : "Mcp-Name differs from params.name";
                /* The tool's annotated arguments (Mcp-Param-*), as the
                 * agent's tools/list shows its inputSchema. */
                const json_t *schema = !problem && strcmp(m->method, "tools/call") == 0 && c->ep->cfg.tool_schema &&
                                                       strlen(value) == nn
                                               ? c->ep->cfg.tool_schema(c->ep->cfg.userdata, value)
                                               : NULL;
                if (schema)
                        problem = params_check(c, schema, json_object_get(m->params, "arguments"), "", 0, param_problem,
                                               sizeof(param_problem));
        }
        if (!problem)
                return true;
        refuse_request(c, 400, -32020, "endpoint.header_mismatch", problem, m->id, NULL);
        return false;
}

static void post_forward(struct ep_conn *c, int s, const char *body, size_t len);

static void serve_post(struct ep_conn *c, const char *body, size_t len) {
        struct ep *ep = c->ep;
        const struct glove_mcp_http_request *q = &c->req;
        if (!q->content_type.s || !glove_mcp_http_list_has(q->content_type, "application/json", false)) {
                refuse(c, 415, "endpoint.content_type", "Content-Type must be application/json", false, NULL);
                return;
        }
        if (!accepts_json(q) && !accepts_sse(q)) {
                refuse(c, 406, "endpoint.not_acceptable", "Accept must allow application/json or text/event-stream", false, NULL);
                return;
        }
        size_t i = 0;
        while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
                i++;
        if (i < len && body[i] == '[') {
                refuse(c, 400, "endpoint.batch", "JSON-RPC batches are not supported", false, NULL);
                return;
        }
        /* The body decides the era (the parse errors are the
         * multiplexer's to answer, below). */
        bool initialize = false, modern = false, request = false;
        struct glove_mcp_message m = {0};
        struct glove_error pe = {0};
        if (glove_mcp_message_parse(body, len, ep->cfg.max_frame, GLOVE_MCP_PARSE_BOUND_VALUES, &m, NULL, &pe) == 0 &&
            m.kind == GLOVE_MCP_REQUEST) {
                request = true;
                modern = mux_modern(m.params);
                initialize = !modern && strcmp(m.method, "initialize") == 0;
        }
        if (request && !modern && q->protocol_version.s && modern_version(q->protocol_version)) {
                /* A modern header on a request without the envelope's
                 * version: a modern request missing its required _meta
                 * (MCP 2026-07-28 "Streamable HTTP", status codes: 400,
                 * -32602), answered with its id. */
                refuse_request(c, 400, -32602, "endpoint.invalid_params",
                               "a request with MCP-Protocol-Version 2026-07-28 needs params._meta with "
                               "io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
                               m.id, NULL);
                glove_mcp_message_free(&m);
                return;
        }
        if (modern) {
                bool ok = modern_headers_ok(c, &m);
                if (ok && q->session_id.s && mux_session_find(ep, q->session_id.s, q->session_id.n) >= 0) {
                        refuse_request(c, 400, -32600, "endpoint.era_mixed",
                                       "modern request on a legacy session: a modern (2026-07-28) request takes no "
                                       "Mcp-Session-Id; send it without one",
                                       m.id, NULL);
                        ok = false;
                }
                if (ok)
                        c->meta_partial = !json_object_get(json_object_get(m.params, "_meta"), "io.modelcontextprotocol/clientCapabilities");
                /* subscriptions/listen is answered by a stream of
                 * notifications: SSE from the start. */
                c->listen = ok && m.method && strcmp(m.method, "subscriptions/listen") == 0;
                glove_mcp_message_free(&m);
                if (!ok)
                        return;
                c->session = -1;
                c->modern = true;
                post_forward(c, -1, body, len);
                return;
        }
        glove_mcp_message_free(&m);
        /* Legacy: the version was not checked with the head (a modern
         * request's is checked above, against other versions). */
        if (q->protocol_version.s && !version_supported(q->protocol_version)) {
                refuse(c, 400, "endpoint.protocol_version", "unsupported MCP-Protocol-Version", false, NULL);
                return;
        }
        int s;
        if (!q->session_id.s && initialize) {
                s = mux_session_open(ep, EP_HTTP, NULL);
                if (s < 0) {
                        refuse(c, 503, "endpoint.sessions_full", "too many MCP client sessions at once", false, NULL);
                        return;
                }
                c->session = s;
                c->session_serial = ep->sessions[s].serial;
        } else if ((s = request_session(c)) < 0) {
                return;
        }
        post_forward(c, s, body, len);
}

/* The POSTed message to the multiplexer (session s, -1: a modern request),
 * then the answer's start. */
static void post_forward(struct ep_conn *c, int s, const char *body, size_t len) {
        struct ep *ep = c->ep;
        const struct glove_mcp_http_request *q = &c->req;
        enum glove_mcp_kind kind = GLOVE_MCP_NOTIFICATION;
        json_t *error = NULL;
        int r = mux_from_client(ep, s, c, body, len, &kind, &error);
        if (r < 0) {
                if (error)
                        respond_json(c, r == -EBADMSG || r == -EINVAL ? 400 : 200, error);
                else if (r == -ENOBUFS)
                        refuse(c, 503, "endpoint.memory_full", "Glove's memory for this agent's MCP connections is taken; retry later",
                               false, "Retry-After: 1\r\n");
                else
                        refuse(c, 400, "endpoint.bad_message", "the message could not be forwarded", false, NULL);
                json_decref(error);
                return;
        }
        if (kind != GLOVE_MCP_REQUEST) {
                char extra[128];
                session_header(c, extra, sizeof(extra));
                if (respond(c, 202, extra, NULL, NULL, 0) == 0)
                        request_done(c);
                return;
        }
        c->state = H_WAIT;
        conn_arm(c, 0);
        bool progress = c->inflight >= 0 && ep->inflight[c->inflight].token;
        c->sse_ok = q->minor == 1 && accepts_sse(q); /* chunked: HTTP/1.1 only */
        if (c->sse_ok && (progress || c->listen || !accepts_json(q))) {
                c->sse = true;
                if (sse_start(c) < 0)
                        conn_kill(c);
        }
}

static void serve_get(struct ep_conn *c) {
        struct ep *ep = c->ep;
        if (!accepts_sse(&c->req)) {
                refuse(c, 406, "endpoint.not_acceptable", "a GET stream needs Accept: text/event-stream", false, NULL);
                return;
        }
        if (c->req.minor == 0) {
                refuse(c, 505, "endpoint.http_version", "a GET stream needs HTTP/1.1", false, NULL);
                return;
        }
        int s = request_session(c);
        if (s < 0)
                return;
        struct ep_session *ss = &ep->sessions[s];
        if (ss->conn && !ss->conn->dead) {
                refuse(c, 409, "endpoint.stream_exists", "this session already has a GET stream", false, NULL);
                return;
        }
        if (sse_start(c) < 0) {
                conn_kill(c);
                return;
        }
        c->state = H_STREAM;
        conn_arm(c, 0);
        ss->conn = c;
        for (size_t i = 0; i < ss->n_backlog; i++) {
                size_t n = strlen(ss->backlog[i]);
                /* Released before it is queued: the budget sees one copy. */
                _cleanup_free_ char *text = ss->backlog[i];
                ep->backlog_bytes -= EP_BACKLOG_CHARGE(n);
                if (!c->dead && http_sse_text(c, text, n) < 0)
                        conn_kill(c);
        }
        ss->n_backlog = 0;
}

static void serve_delete(struct ep_conn *c) {
        int s = request_session(c);
        if (s < 0)
                return;
        mux_session_close(c->ep, s, "deleted");
        c->session = -1;
        if (respond(c, 200, "", NULL, NULL, 0) == 0)
                request_done(c);
}

/* The head is parsed: the checks every request passes, then the method. */
static void serve_head(struct ep_conn *c) {
        struct ep *ep = c->ep;
        const struct glove_mcp_http_request *q = &c->req;
        char a[64], b[64];
        snprintf(a, sizeof(a), "127.0.0.1:%u", ep->cfg.port);
        snprintf(b, sizeof(b), "localhost:%u", ep->cfg.port);
        if (q->minor == 0 && !glove_mcp_http_list_has(q->connection, "keep-alive", false))
                c->keep_alive = false;
        if (glove_mcp_http_list_has(q->connection, "close", false))
                c->keep_alive = false;
        if (!glove_mcp_http_span_eq(q->host, a) && !glove_mcp_http_span_eq(q->host, b)) {
                refuse(c, 403, "endpoint.bad_host", "Host must be 127.0.0.1:PORT or localhost:PORT of this endpoint", true, NULL);
                return;
        }
        snprintf(a, sizeof(a), "http://127.0.0.1:%u", ep->cfg.port);
        snprintf(b, sizeof(b), "http://localhost:%u", ep->cfg.port);
        if (q->origin.s && !glove_mcp_http_span_eq(q->origin, a) && !glove_mcp_http_span_eq(q->origin, b)) {
                refuse(c, 403, "endpoint.bad_origin", "Origin is not this endpoint's", true, NULL);
                return;
        }
        struct glove_mcp_http_span path = q->target;
        const char *qm = memchr(path.s, '?', path.n);
        if (qm)
                path.n = (size_t)(qm - path.s);
        if (!ep->cfg.http || path.n != 4 || memcmp(path.s, "/mcp", 4) != 0) {
                refuse(c, 404, "endpoint.http_not_found", ep->cfg.http ? "the MCP endpoint is /mcp" : "this run serves no HTTP endpoint",
                       false, NULL);
                return;
        }
        if (q->method == GLOVE_MCP_HTTP_OTHER) {
                refuse(c, 405, "endpoint.http_method", "GET, POST or DELETE", false, "Allow: GET, POST, DELETE\r\n");
                return;
        }
        /* GET and DELETE serve legacy sessions only: without one, this is
         * a modern (2026-07-28) endpoint, which only takes POSTs. */
        if (q->method != GLOVE_MCP_HTTP_POST && !q->session_id.s) {
                refuse(c, 405, "endpoint.http_method",
                       "GET and DELETE need an Mcp-Session-Id (a legacy session); modern requests are POSTed", false,
                       "Allow: POST\r\n");
                return;
        }
        /* A POST's version is checked with its body (its era decides). */
        if (q->method != GLOVE_MCP_HTTP_POST && q->protocol_version.s && !version_supported(q->protocol_version)) {
                refuse(c, 400, "endpoint.protocol_version", "unsupported MCP-Protocol-Version", false, NULL);
                return;
        }
        if (q->method == GLOVE_MCP_HTTP_POST) {
                if (q->has_transfer_encoding || !q->has_content_length) {
                        refuse(c, 411, "endpoint.http_length_required", "a POST needs Content-Length (chunked bodies are not supported)",
                               true, NULL);
                        return;
                }
                if (q->content_length > ep->cfg.max_frame) {
                        refuse(c, 413, "endpoint.http_body_too_large", "the body is longer than --max-frame", true, NULL);
                        return;
                }
                /* The whole request's room is taken now, exactly, or the
                 * request is refused before its body comes: the endpoint's
                 * memory is bounded as a whole (mcp_endpoint.h, "Memory"). */
                size_t total = c->head_len + (size_t)q->content_length;
                const uint8_t *was = c->in.data;
                if (!conn_fits(c, total > c->in.cap ? total : c->in.cap, c->out.buf.cap) ||
                    glove_buffer_reserve_exact(&c->in, total > c->in.len ? total - c->in.len : 0) < 0) {
                        refuse(c, 503, "endpoint.memory_full",
                               "Glove's memory for this agent's MCP connections is taken; retry when a request has been answered",
                               true, "Retry-After: 1\r\n");
                        return;
                }
                /* c->req points into c->in: moved by the growth, it is
                 * parsed again from the same bytes (it parsed before).
                 * With the room taken here the body's reads never move it
                 * again before serve_post. */
                if (c->in.data != was) {
                        const char *reason = NULL;
                        if (glove_mcp_http_request_parse((const char *)c->in.data, c->head_len, &c->req, &reason) != 0) {
                                conn_kill(c);
                                return;
                        }
                }
                c->body_len = q->content_length;
                c->state = H_BODY;
                return;
        }
        if (q->has_transfer_encoding || (q->has_content_length && q->content_length > 0)) {
                refuse(c, 400, "endpoint.http_bad_head", "GET and DELETE take no body", true, NULL);
                return;
        }
        if (q->method == GLOVE_MCP_HTTP_GET)
                serve_get(c);
        else
                serve_delete(c);
}

void http_process(struct ep_conn *c) {
        while (!c->dead) {
                if (c->state == H_HEAD && c->discard) {
                        size_t n = c->in.len < c->discard ? c->in.len : (size_t)c->discard;
                        glove_buffer_consume(&c->in, n);
                        c->discard -= n;
                        if (c->discard) {
                                if (c->eof)
                                        conn_kill(c);
                                return;
                        }
                }
                if (c->state == H_HEAD) {
                        c->session = -1;
                        bool bare = false;
                        size_t end = glove_mcp_http_head_end((const char *)c->in.data, c->in.len, &bare);
                        if (bare) {
                                refuse(c, 400, "endpoint.http_bad_head", "lines must end in CRLF", true, NULL);
                                return;
                        }
                        if (!end || end > GLOVE_MCP_HTTP_HEAD_MAX) {
                                if (end > GLOVE_MCP_HTTP_HEAD_MAX || c->in.len > GLOVE_MCP_HTTP_HEAD_MAX)
                                        refuse(c, 431, "endpoint.http_head_too_large", "the request head is too large", true, NULL);
                                else if (c->eof)
                                        conn_end(c); /* its answers go out first */
                                return;
                        }
                        const char *reason = NULL;
                        int st = glove_mcp_http_request_parse((const char *)c->in.data, end, &c->req, &reason);
                        c->head_len = end;
                        if (st) {
                                refuse(c, st, reason, "malformed request head", true, NULL);
                                return;
                        }
                        conn_arm(c, GLOVE_MCP_ENDPOINT_HEAD_TIMEOUT_USEC);
                        /* The head stays in c->in until the request is served
                         * (c->req points into it). */
                        enum http_state before = c->state;
                        serve_head(c);
                        if (c->dead)
                                return;
                        if (c->state != H_BODY) {
                                glove_buffer_consume(&c->in, c->head_len);
                                if (c->state == before && before == H_HEAD)
                                        continue;
                                if (c->state == H_CLOSING)
                                        return;
                                continue;
                        }
                }
                if (c->state == H_BODY) {
                        if (c->in.len < c->head_len + c->body_len) {
                                if (c->eof)
                                        conn_kill(c);
                                return;
                        }
                        serve_post(c, (const char *)c->in.data + c->head_len, (size_t)c->body_len);
                        if (c->dead)
                                return;
                        glove_buffer_consume(&c->in, c->head_len + (size_t)c->body_len);
                        if (c->state == H_HEAD)
                                continue;
                        return;
                }
                /* H_WAIT, H_STREAM, H_CLOSING: later bytes wait; the client
                 * closing a stream ends it. A modern request's client that
                 * stops sending is asked whether it is still there (above,
                 * "Half-close"): its close cancels the request, its
                 * half-close does not. */
                if (c->eof && c->state == H_STREAM)
                        conn_kill(c);
                else if (c->eof && c->state == H_WAIT && c->modern)
                        client_stopped(c);
                return;
        }
}

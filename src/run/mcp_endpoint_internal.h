/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to glove run's MCP endpoint (mcp_endpoint.c, mcp_mux.c,
 * mcp_http.c). */

#include <jansson.h>

#include "glove/base/buffer.h"
#include "glove/mcp/frame.h"
#include "glove/mcp/http_request.h"
#include "mcp_endpoint.h"

enum ep_transport { EP_COMMAND, EP_HTTP };

enum conn_kind { CONN_NEW, CONN_STDIO, CONN_HTTP };

/* A session's era (MCP 2026-07-28 "Versioning"): none yet, legacy (it sent
 * initialize; every HTTP session), modern (it sent a request whose
 * params._meta names io.modelcontextprotocol/protocolVersion). The two do
 * not mix on one session: "endpoint.era_mixed". */
enum ep_era { ERA_NONE, ERA_LEGACY, ERA_MODERN };

/* The _meta key that makes a request modern (MCP 2026-07-28). */
#define EP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define EP_META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

enum http_state {
        H_HEAD,    /* reading a request head */
        H_BODY,    /* reading its body */
        H_WAIT,    /* a request is with the gateway; its answer comes */
        H_STREAM,  /* a GET's SSE stream */
        H_CLOSING, /* the last bytes go out, then close */
};

struct ep;

struct ep_conn {
        struct ep *ep;
        struct ep_conn *next, *prev;
        int fd;
        sd_event_source *io, *timer; /* timer: head/idle timeout, then the deferred close */
        bool dead;         /* conn_kill: closed from the loop next (never freed before) */
        enum conn_kind kind;
        struct glove_buffer in;
        struct glove_mcp_writer out;
        bool eof;
        /* stdio: its session; HTTP: the session of the request waited on or
         * of the stream (-1: none) */
        int session;
        uint64_t session_serial;
        /* HTTP */
        enum http_state state;
        struct glove_mcp_http_request req;
        size_t head_len;
        uint64_t body_len;
        uint64_t discard; /* H_HEAD: body bytes of a request refused at its head, still to skip */
        bool keep_alive;
        bool sse;          /* the answer in H_WAIT is an SSE stream (headers sent) */
        bool modern;       /* H_WAIT: the request is modern (no session; its status follows its error) */
        bool meta_partial; /* ... and its _meta lacks clientCapabilities (the gateway's -32602 is a 400) */
        bool listen;       /* ... and it is a subscriptions/listen (its notifications ride an SSE answer) */
        bool sse_ok;       /* H_WAIT: the answer may become an SSE stream (HTTP/1.1, Accept has it) */
        bool probing;      /* H_WAIT: the client stopped sending; its timer probes (http_probe) */
        int inflight;      /* H_WAIT: the slot answered on this connection, -1 */
};

struct ep_session {
        bool used;
        uint64_t serial;
        enum ep_transport transport;
        bool initialized;
        enum ep_era era;
        uint64_t init_order;
        bool cap_sampling, cap_elicitation, cap_roots;
        char sid[33];                  /* HTTP: the Mcp-Session-Id */
        struct ep_conn *conn;          /* command: its connection; HTTP: the GET stream */
        char *backlog[GLOVE_MCP_ENDPOINT_BACKLOG_MAX]; /* HTTP: messages for the GET stream (compact JSON) */
        size_t n_backlog;
        size_t inflight;               /* requests of this session in flight */
        uint64_t last_used;            /* ep->next_use when a client message last came */
};

struct ep_inflight {
        bool used;
        uint32_t gen;
        int session;                   /* -1: a modern HTTP request, no session (answered on conn only) */
        uint64_t session_serial;
        json_t *id;                    /* the client's own id */
        json_t *token;                 /* its progressToken, or NULL */
        bool initialize;
        struct ep_conn *conn;          /* HTTP: the POST waiting for the answer */
        /* Its client went away and the gateway's queue had no room for its
         * notifications/cancelled: the slot is kept (no id, no session, no
         * connection) until the cancellation is queued (mux_send_owed) or
         * the gateway's answer comes first. reason: a static string. */
        const char *cancel_owed;
};

struct ep_server_request {
        bool used;
        json_t *id;                    /* the gateway's id ("glove-...") */
        int session;
        uint64_t session_serial;
        /* Its session ended and the gateway's queue had no room for the
         * error answering it: kept (session -1) until that is queued. */
        bool error_owed;
};

struct ep {
        struct glove_mcp_endpoint_config cfg;
        sd_event_source *accept_io, *gw_io;
        int accept_fd, gw_fd;
        struct glove_mcp_reader gw_in;
        struct glove_mcp_writer gw_out;
        struct ep_conn *conns;
        size_t n_conns;
        struct ep_session sessions[GLOVE_MCP_ENDPOINT_SESSIONS_MAX];
        uint64_t next_serial, next_init_order, next_use;
        struct ep_inflight inflight[GLOVE_MCP_ENDPOINT_INFLIGHT_MAX];
        struct ep_server_request server_req[GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX];
        bool failed;
        bool ending;                   /* glove_mcp_endpoint_free: sessions close, nothing more to the gateway */
        size_t owed;                   /* slots with cancel_owed or error_owed set */
        size_t budget;                 /* glove_mcp_endpoint_memory_budget(cfg.max_frame) */
        size_t backlog_bytes;          /* charged for the sessions' backlogs */
};

/* mcp_endpoint.c */
void ep_fail(struct ep *ep, int errnum, const char *code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int ep_audit(struct ep *ep, const char *event, json_t *fields);
void ep_refused(struct ep *ep, enum ep_transport t, int status, const char *reason);
void conn_close(struct ep_conn *c);
/* Marks c dead and closes it from the loop, after the current callback
 * (safe anywhere). Never frees c itself: a caller may read c->dead after
 * any call that can kill. */
void conn_kill(struct ep_conn *c);
/* The bytes charged to the memory budget now (mcp_endpoint.h, "Memory"). */
size_t ep_held(const struct ep *ep);
/* Whether the budget has room for `more` bytes beyond what is held. */
bool ep_room(const struct ep *ep, size_t more);
/* What one backlog message of len bytes is charged (its allocation). */
#define EP_BACKLOG_CHARGE(len) ((len) + 64)
/* Whether the gateway's queue may grow to cap bytes within the budget. */
bool ep_gateway_fits(const struct ep *ep, size_t cap);
/* Whether c may have input and output buffers of in_cap and out_cap bytes
 * within the budget. */
bool conn_fits(const struct ep_conn *c, size_t in_cap, size_t out_cap);
/* Queues and writes what the peer takes. Errors: -EMSGSIZE (the
 * connection's own bound), -ENOBUFS (the memory budget: audited
 * "endpoint.memory_full"), -ENOMEM, a write error. The caller kills c. */
int conn_queue(struct ep_conn *c, const void *data, size_t len);
/* Queues without writing (a later conn_queue writes it all at once). */
int conn_push(struct ep_conn *c, const void *data, size_t len);
void conn_update(struct ep_conn *c);
void conn_arm(struct ep_conn *c, uint64_t usec);
const char *ep_transport_name(enum ep_transport t);
/* The command's input is at its end: close once no answer is owed. */
void stdio_input_ended(struct ep_conn *c);

/* mcp_mux.c */
/* A new session; returns its slot or -1 (full: "endpoint.sessions_full"). */
int mux_session_open(struct ep *ep, enum ep_transport t, struct ep_conn *conn);
/* Ends a session: its requests are cancelled at the gateway, its pending
 * server requests answered with an error. reason for the audit record. */
void mux_session_close(struct ep *ep, int s, const char *reason);
/* One message from a client session (a line or an HTTP body). For HTTP,
 * conn is the POST's connection; *kind_out tells what it was. s is -1 for
 * a modern request POSTed without a session (conn required): its answer
 * and progress go to conn only. Returns 0, or a negative value with
 * *error_out set when it is refused (the caller answers; -EINVAL: the
 * request is invalid, HTTP 400). */
int mux_from_client(struct ep *ep, int s, struct ep_conn *conn, const char *msg, size_t len, enum glove_mcp_kind *kind_out,
                    json_t **error_out);
/* The gateway's channel is readable / writable. */
int mux_gateway_io(struct ep *ep, uint32_t revents);
/* A message for a session outside an answer to its request. */
void mux_deliver(struct ep *ep, int s, json_t *msg);
/* Whether a request's params make it modern (EP_META_VERSION in _meta). */
bool mux_modern(const json_t *params);
/* The connection c goes away with a session-less modern request in flight
 * on it: the gateway gets notifications/cancelled for it (MCP 2026-07-28
 * "Streamable HTTP": a closed response stream is the cancellation). */
void mux_conn_gone(struct ep *ep, struct ep_conn *c);
/* Queues what is owed to the gateway (cancellations, errors answering its
 * requests to a session that ended) that found no room before, in slot
 * order, as far as the queue takes them. */
void mux_send_owed(struct ep *ep);
/* The session for an HTTP Mcp-Session-Id, or -1. */
int mux_session_find(struct ep *ep, const char *sid, size_t n);

/* mcp_http.c */
/* Bytes arrived (or EOF) on an HTTP connection: serve what is complete. */
void http_process(struct ep_conn *c);
/* The answer to the request c waits on (msg borrowed). */
void http_answer(struct ep_conn *c, json_t *msg);
/* A message for an SSE stream (the GET stream, or the POST's SSE answer). */
int http_sse_event(struct ep_conn *c, const json_t *msg);
/* The same for a message already encoded (compact JSON, len bytes). */
int http_sse_text(struct ep_conn *c, const char *json, size_t len);
/* The connection's session ended: a stream is finished. */
void http_session_ended(struct ep_conn *c);
/* The timer of a connection whose modern request waits after its client
 * stopped sending: whether the client is still there is asked (mcp_http.c,
 * "Half-close"). */
void http_probe(struct ep_conn *c);

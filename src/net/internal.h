/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internals of the net module shared between its source files and its unit
 * tests (tests/unit/net). Not a public interface. */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/net/relay.h"
#include "glove/net/rule.h"

/* base64 of "glove:" + a GLOVE_NET_TOKEN_MAX token, with its NUL. */
#define GLOVE_NET_CREDENTIALS_MAX 192
/* Longest answer the proxy writes (status line, headers, body). */
#define GLOVE_NET_RESPONSE_MAX 512
/* After a denial: read and drop at most this many bytes for at most this
 * long before closing, so the agent reads the answer instead of a reset. */
#define GLOVE_NET_LINGER_BYTES (64 * 1024)
#define GLOVE_NET_LINGER_MS 1000
/* Descriptors taken from one message on the helper channel. */
#define GLOVE_NET_RECV_FDS_MAX 8
/* Stack of each relay thread. */
#define GLOVE_NET_THREAD_STACK (512 * 1024)

/* Length of the request head in buf[0..len) including its terminating blank
 * line ("\r\n\r\n"), or 0 when the head is not complete yet. */
size_t glove_net_head_end(const char *buf, size_t len);

/* True when buf[0..len) holds a bare LF (a '\n' not preceded by '\r'): a
 * head that can never end in "\r\n\r\n", answered 400 at once. */
bool glove_net_head_bare_lf(const char *buf, size_t len);

/* Longest method token kept (longer ones are refused with 400). */
#define GLOVE_NET_METHOD_MAX 32

/* The request-target forms the proxy tells apart (RFC 9112 section 3.2). */
enum glove_net_target_form {
        GLOVE_NET_TARGET_NONE = 0,  /* not parsed */
        GLOVE_NET_TARGET_AUTHORITY, /* host:port (CONNECT) */
        GLOVE_NET_TARGET_HTTP,      /* absolute form, http:// */
        GLOVE_NET_TARGET_HTTPS,     /* absolute form, https:// (refused) */
        GLOVE_NET_TARGET_OTHER,     /* origin form ("/..."), "*", or another scheme */
};

struct glove_net_request_head {
        char method[GLOVE_NET_METHOD_MAX + 1]; /* "" when the request line did not parse */
        enum glove_net_target_form form;
        struct glove_net_host host;
        uint16_t port;
        bool target_ok; /* host and port hold the target asked for: the
                         * authority (CONNECT), the URL's authority (default
                         * port 80 for http://, 443 for https://), or the Host
                         * header of another form (default 80); filled on every
                         * refusal that comes after the request line parsed */
        /* GLOVE_NET_TARGET_HTTP: offsets into the parsed buffer. */
        size_t authority_off, authority_len; /* the URL's authority */
        size_t path_off, path_len;           /* path and query after the authority; len 0: "/" */
        size_t headers_off;                  /* first byte after the request line's CRLF */
};

/*
 * Parses the complete request head buf[0..len) (ending in "\r\n\r\n") of a
 * proxy request and checks its credentials against credentials (the base64
 * text expected after "Basic "). Returns GLOVE_NET_EGRESS_OK and fills *out
 * for `CONNECT host:port HTTP/1.1` (form AUTHORITY) and for an absolute-form
 * `METHOD http://host[:port]/path HTTP/1.1` with any other method (form HTTP;
 * at most one Host header, equal to the URL's authority). Otherwise returns
 * the reason of the refusal with the HTTP status in *status: BAD_REQUEST 400
 * (syntax, target) or 505 (version), METHOD_NOT_ALLOWED 405 (CONNECT-less
 * authority or origin form), BAD_AUTH 407, HEAD_TOO_LARGE 431 (too many
 * header lines), HTTPS_NEEDS_CONNECT 400, HOST_MISMATCH 400. out->method and
 * out->target_ok are filled whenever the request line parsed.
 */
enum glove_net_egress_reason glove_net_head_parse(const char *buf, size_t len, const char *credentials,
                                                  struct glove_net_request_head *out, int *status);

/* Extra room a forwarded head may need over the received one (a Host line
 * and "Connection: close"). */
#define GLOVE_NET_FORWARD_EXTRA (GLOVE_NET_RULE_TEXT_MAX + 64)

/*
 * Writes the head to send upstream for a forwarded request (h->form HTTP,
 * parsed from buf[0..len) by glove_net_head_parse) into out (cap bytes, at
 * least len + GLOVE_NET_FORWARD_EXTRA): the request line in origin form
 * (`METHOD /path HTTP/1.1`), every header line as received except every
 * Proxy-* field (Proxy-Authorization, Proxy-Connection, ...), Connection,
 * Keep-Alive, TE, Trailer, Upgrade and the fields the Connection header
 * names, a Host line with the URL's
 * authority when the request had none, then `Connection: close` and the
 * blank line. Returns its length, or 0 when cap is too small.
 */
size_t glove_net_forward_head(const char *buf, size_t len, const struct glove_net_request_head *h, char *out,
                              size_t cap);

/*
 * The head of a forwarded request's answer, buf[0..len) (a complete head
 * ending in "\r\n\r\n"), rewritten for the agent into out (cap bytes, at
 * least len + 32): its Connection, Keep-Alive and Proxy-Connection fields
 * dropped and `Connection: close` added, since the agent's connection ends
 * with this answer. Returns its length, or 0 when buf is not the head of a
 * final HTTP/1.x answer (a 1xx, another protocol, malformed) or cap is too
 * small: the answer is then passed on unchanged.
 */
size_t glove_net_response_close(const char *buf, size_t len, char *out, size_t cap);

/* Writes the proxy's answer with status (200, 400, 403, ...) for reason into
 * buf (GLOVE_NET_RESPONSE_MAX bytes). Returns its length. */
size_t glove_net_response_format(int status, enum glove_net_egress_reason reason, char *buf);

struct glove_net_relay;

/* One connection slot of a relay. */
struct glove_net_conn {
        struct glove_net_relay *relay;
        pthread_t thread;
        bool used;      /* a thread was started and not yet joined */
        bool finished;  /* the thread is done; join it */
        int fd;         /* the agent's connection (owned by the thread) */
        uint64_t id;
        uint64_t start_ms;
};

struct glove_net_relay {
        struct glove_net_policy policy;
        char credentials[GLOVE_NET_CREDENTIALS_MAX];
        unsigned max_connections;
        uint32_t head_timeout_ms, connect_timeout_ms, idle_timeout_ms, max_duration_ms;
        glove_net_audit_fn audit;
        void *audit_userdata;
        uint16_t endpoint_port; /* the run's MCP endpoint (relay.h); 0: none */
        int endpoint_fd;        /* its channel's sending end, or -1 */
        int unix_fd;
        int stop_fd; /* eventfd; readable once the relay stops */
        pthread_t acceptor;
        bool acceptor_started;
        pthread_mutex_t lock;       /* slots, active, next_id */
        pthread_mutex_t audit_lock; /* serializes audit callbacks */
        struct glove_net_conn *slots;
        unsigned active;
        uint64_t next_id;
};

/* Calls the audit callback (serialized); returns its result (0 without one). */
int glove_net_relay_emit(struct glove_net_relay *r, const struct glove_net_egress_event *ev);

/* Thread body serving one connection slot (relay_conn.c). */
void *glove_net_conn_main(void *slot);

/* Waits until fd has one of events, the relay stops, or deadline_ms
 * (CLOCK_MONOTONIC ms) passes. Returns 1 (ready), 0 (deadline), -1 (stop). */
int glove_net_wait(int fd, short events, int stop_fd, uint64_t deadline_ms);

/* Writes an answer to the agent and closes fd after a bounded linger
 * (shutdown, drain, close). status 0 writes nothing. */
void glove_net_answer_and_close(int fd, int stop_fd, int status, enum glove_net_egress_reason reason,
                                bool may_block);

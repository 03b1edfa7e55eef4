/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host-side egress relay: an authenticated, audited HTTP CONNECT proxy
 * (RFC 9110 section 9.3.6) that also forwards plain-HTTP requests in absolute
 * form (RFC 9112 section 3.2.2), serving the connections the namespace-local helper
 * (helper.h) passes over the run's Unix channel (spec architecture.md,
 * "Platform isolation: network"; issue 4, "Audited egress"; docs/egress.md).
 *
 * It runs in Glove's own process, outside the sandbox, on its own threads:
 * one acceptor thread receiving descriptors (SCM_RIGHTS) and one thread per
 * connection, at most max_connections of them. For each connection:
 *
 *   1. read the request head, at most GLOVE_NET_HEAD_MAX bytes, within
 *      head_timeout_ms (431 / 408 otherwise; a bare LF is answered 400 at
 *      once);
 *   2. the request line must be `CONNECT host:port HTTP/1.1`, or
 *      `METHOD http://host[:port]/path HTTP/1.1` with another method (port 80
 *      by default; at most one Host header, naming the same authority, else
 *      400 host_mismatch); an https:// URL gets 400 https_needs_connect, any
 *      other form 405, another version 505, malformed syntax 400. The method
 *      and target are parsed first, so that every refusal is audited with
 *      them;
 *   3. exactly one `Proxy-Authorization: Basic base64(glove:TOKEN)` with the
 *      run's token, compared in constant time, else 407;
 *   4. the target must match a rule of the policy (no name is resolved
 *      otherwise), else 403 not_allowed;
 *   5. names are resolved on the host (getaddrinfo); when no matching rule
 *      allows private destinations (rule.h) and ANY resolved address is not public
 *      (address.h), the request is refused with 403 private_address, even if
 *      other addresses are public (a name that mixes them is treated as a
 *      rebinding attempt); address literals are checked the same way;
 *   6. the relay connects to the checked addresses in resolver order (no
 *      second resolution) until one answers within connect_timeout_ms (502
 *      otherwise), emits the OPEN audit event, answers
 *      `HTTP/1.1 200 Connection established`, and relays bytes both ways
 *      (splice(2) through a pipe per direction), passing half-closes on,
 *      until both directions have ended, a socket fails, no byte moved for
 *      idle_timeout_ms, max_duration_ms passed, or the relay stops;
 *   7. a forwarded request instead sends the upstream its head rewritten to
 *      origin form, without Proxy-Authorization and hop-by-hop fields, with
 *      `Connection: close`, then relays bytes both ways as a tunnel (the
 *      bodies are not parsed; the answer's head gets `Connection: close` too;
 *      http_status 0 in its OPEN and CLOSE events) until the upstream's
 *      answer has been passed on: one request per connection.
 *
 * The run's own MCP endpoint (endpoint_port, docs/mcp-mediation.md,
 * "Endpoints") is not egress: after step 3, a request whose target is
 * 127.0.0.1:endpoint_port or localhost:endpoint_port (any case) skips steps
 * 4 to 7 and goes to the endpoint through the endpoint's own channel
 * (endpoint_fd, the descriptors the sandbox's listener helper passes there):
 *
 *   - CONNECT: the agent's connection itself is handed over, then come
 *     the OPEN event (route mcp_endpoint), the 200 and at once a CLOSE
 *     event with reason handed_over (the endpoint serves and audits it
 *     from then on; no relay thread, no relay timeout stays with it; the
 *     endpoint writes nothing before it has read a request, so the 200 is
 *     the first thing the agent reads). When the agent sent bytes after its
 *     CONNECT head before the 200, one end of a socketpair is handed over
 *     instead, then OPEN, the 200, and the bytes are relayed as a tunnel;
 *   - absolute form (`METHOD http://127.0.0.1:PORT/mcp ...`): one end of a
 *     socketpair is handed over and the request goes to it as step 7 sends
 *     a forwarded one (origin form, `Connection: close`), as a tunnel with
 *     the relay's timeouts; OPEN and CLOSE events (route mcp_endpoint).
 *
 * A hand-over that fails (the endpoint is gone) is a DENY connect_failed
 * 502 with its one-line body, in every form: nothing is answered 200
 * before the endpoint has the connection. Nothing else on any loopback is
 * reachable this way: every other port and address goes through steps 4 to
 * 7 as before. Host and Origin are left
 * to the endpoint, which checks them as for a direct connection.
 *
 * Beyond max_connections the acceptor answers 503 itself without reading the
 * request. Every denial answer carries Connection: close and a one-line
 * text/plain body naming the reason.
 *
 * Audit: every descriptor received produces exactly one DENY event, or one
 * OPEN event followed by exactly one CLOSE event (the OPEN event alone when
 * the callback refuses it). Calls are serialized by the relay (never two at
 * once), made on relay threads.
 *
 * Stable error codes of glove_net_relay_start: egress.bad_config (-EINVAL),
 * egress.bad_token (-EINVAL), egress.no_memory (-ENOMEM), egress.relay
 * (-errno: eventfd or pthread_create failed).
 */

#include <stdbool.h>
#include <stdint.h>

#include "glove/base/error.h"
#include "glove/net/rule.h"

/* Largest request head (request line, header lines, blank line), bytes. */
#define GLOVE_NET_HEAD_MAX 8192
/* Most header lines in a request head. */
#define GLOVE_NET_HEADERS_MAX 64
/* Defaults (a zero field in the configuration selects them) and ceilings. */
#define GLOVE_NET_MAX_CONNECTIONS_DEFAULT 64
#define GLOVE_NET_MAX_CONNECTIONS_LIMIT 1024
#define GLOVE_NET_HEAD_TIMEOUT_MS_DEFAULT 10000
#define GLOVE_NET_CONNECT_TIMEOUT_MS_DEFAULT 10000
#define GLOVE_NET_IDLE_TIMEOUT_MS_DEFAULT (5 * 60 * 1000)
#define GLOVE_NET_MAX_DURATION_MS_DEFAULT (60 * 60 * 1000)
#define GLOVE_NET_TIMEOUT_MS_LIMIT (24 * 60 * 60 * 1000)
/* Most resolved addresses the relay tries to connect to (all of them are
 * checked, however many the resolver returns). */
#define GLOVE_NET_CONNECT_ADDRESSES_MAX 16
/* Longest numeric address text in an event ("ffff:...", INET6_ADDRSTRLEN). */
#define GLOVE_NET_ADDRESS_TEXT_MAX 46

enum glove_net_egress_phase {
        GLOVE_NET_EGRESS_DENY,  /* refused; the only event of this connection */
        GLOVE_NET_EGRESS_OPEN,  /* allowed and connected; sent before the 200 */
        GLOVE_NET_EGRESS_CLOSE, /* the tunnel of an OPEN event ended */
};

/* Stable reason codes; glove_net_egress_reason_name gives the string. The
 * HTTP status answered to the agent follows each one. */
enum glove_net_egress_reason {
        GLOVE_NET_EGRESS_OK = 0,              /* "ok": OPEN events (200) */
        GLOVE_NET_EGRESS_CLOSED,              /* "closed": CLOSE, both directions ended */
        GLOVE_NET_EGRESS_RESET,               /* "reset": CLOSE, a socket failed */
        GLOVE_NET_EGRESS_IDLE_TIMEOUT,        /* "idle_timeout": CLOSE */
        GLOVE_NET_EGRESS_ABSOLUTE_TIMEOUT,    /* "absolute_timeout": CLOSE */
        GLOVE_NET_EGRESS_RELAY_STOPPED,       /* "relay_stopped": CLOSE or DENY, no answer */
        GLOVE_NET_EGRESS_BAD_REQUEST,         /* "bad_request": 400, or 505 for another version */
        GLOVE_NET_EGRESS_HEAD_TOO_LARGE,      /* "head_too_large": 431 */
        GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED,  /* "method_not_allowed": 405 */
        GLOVE_NET_EGRESS_BAD_AUTH,            /* "bad_auth": 407 */
        GLOVE_NET_EGRESS_NOT_ALLOWED,         /* "not_allowed": 403 */
        GLOVE_NET_EGRESS_PRIVATE_ADDRESS,     /* "private_address": 403 */
        GLOVE_NET_EGRESS_RESOLVE_FAILED,      /* "resolve_failed": 502 */
        GLOVE_NET_EGRESS_CONNECT_FAILED,      /* "connect_failed": 502 (504 on timeout) */
        GLOVE_NET_EGRESS_TOO_MANY_CONNECTIONS,/* "too_many_connections": 503 */
        GLOVE_NET_EGRESS_TIMEOUT,             /* "timeout": 408, head not complete in time */
        GLOVE_NET_EGRESS_INCOMPLETE_REQUEST,  /* "incomplete_request": the agent closed first */
        GLOVE_NET_EGRESS_BAD_DESCRIPTOR,      /* "bad_descriptor": not a TCP socket; closed */
        GLOVE_NET_EGRESS_AUDIT_FAILED,        /* "audit_failed": 502, the OPEN callback refused */
        GLOVE_NET_EGRESS_INTERNAL,            /* "internal": 502, a local resource failed */
        GLOVE_NET_EGRESS_HOST_MISMATCH,       /* "host_mismatch": 400, a forwarded request's Host
                                               * header names another authority than its URL */
        GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT, /* "https_needs_connect": 400, an https:// URL in
                                               * absolute form (tunnel it with CONNECT) */
        GLOVE_NET_EGRESS_HANDED_OVER,         /* "handed_over": CLOSE, a CONNECT to the run's MCP
                                               * endpoint whose connection went to the endpoint */
};

/* One audit event. Pointers are valid only during the callback. */
struct glove_net_egress_event {
        enum glove_net_egress_phase phase;
        bool allowed;                        /* decision: true for OPEN and CLOSE */
        enum glove_net_egress_reason reason;
        uint64_t connection_id;              /* 1, 2, ... per relay; ties OPEN to CLOSE */
        int http_status;                     /* answered to the agent by the proxy; 0 when none
                                              * (and for a forwarded request, answered by
                                              * its upstream) */
        const char *method;                  /* the request's method ("CONNECT", "GET", ...);
                                              * "" when the request line was not read or
                                              * could not be parsed */
        const char *host;                    /* requested host (rule.h text form); "" when the
                                              * request had no valid target */
        uint16_t port;                       /* requested port; 0 likewise */
        const char *address;                 /* numeric address connected to, or the one that
                                              * decided (private_address, connect_failed); "" */
        const char *address_class;           /* address.h class name of address; "" with address "" */
        uint64_t bytes_up;                   /* agent -> destination, after the 200 */
        uint64_t bytes_down;                 /* destination -> agent, after the 200 */
        uint64_t duration_ms;                /* from receiving the descriptor to this event */
        bool mcp_endpoint;                   /* routed to the run's MCP endpoint (endpoint_port),
                                              * not to a destination: address "" */
};

/*
 * Audit callback. The return value matters for OPEN events only: a negative
 * value refuses the connection (fail closed: 502 audit_failed, no CLOSE
 * event follows). It must not call glove_net_relay_stop.
 */
typedef int (*glove_net_audit_fn)(const struct glove_net_egress_event *ev, void *userdata);

struct glove_net_relay_config {
        const struct glove_net_policy *policy; /* copied by start */
        const char *token;                      /* the run's token (proxy_env.h); copied */
        unsigned max_connections;               /* 0: default; 1..GLOVE_NET_MAX_CONNECTIONS_LIMIT */
        uint32_t head_timeout_ms;               /* 0: default; each timeout at most ..._LIMIT */
        uint32_t connect_timeout_ms;
        uint32_t idle_timeout_ms;
        uint32_t max_duration_ms;
        glove_net_audit_fn audit;               /* may be NULL (no audit) */
        void *audit_userdata;
        /* The run's MCP HTTP endpoint, routed to instead of refused (above):
         * its port on the sandbox's loopback (1..65535; 0: no route, and
         * endpoint_fd is ignored), and a sending end of the endpoint's
         * SOCK_SEQPACKET channel (each message: one byte and one descriptor,
         * SCM_RIGHTS), taken by glove_net_relay_start in every case. */
        uint16_t endpoint_port;
        int endpoint_fd;
};

struct glove_net_relay;

/* The stable name of a reason ("ok", "not_allowed", ...). */
const char *glove_net_egress_reason_name(enum glove_net_egress_reason r);

/* "deny", "open" or "close". */
const char *glove_net_egress_phase_name(enum glove_net_egress_phase p);

/*
 * Starts a relay serving descriptors received on unix_fd (the relay's end of
 * the helper channel). Takes ownership of unix_fd (and of endpoint_fd when
 * endpoint_port is not 0) in every case (closed on
 * error, and by glove_net_relay_stop). Stores the relay in *out.
 * Returns 0 or a negative errno with the codes above.
 */
int glove_net_relay_start(const struct glove_net_relay_config *config, int unix_fd,
                          struct glove_net_relay **out, struct glove_error *err);

/*
 * Stops the relay at the end of the run: stops accepting, cuts every open
 * tunnel (CLOSE events with relay_stopped) and waiting request (DENY with
 * relay_stopped), joins every thread, closes every descriptor and frees r.
 * Waits for a name lookup in progress to return (bounded by the resolver's
 * own timeouts, resolv.conf(5)). NULL is allowed.
 */
void glove_net_relay_stop(struct glove_net_relay *r);

/* Connections currently being served (for tests and status). */
unsigned glove_net_relay_active(struct glove_net_relay *r);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The local-service proxy of one session (spec architecture.md, "Guest
 * specialized-channel admission" and "Historical synthetic status
 * milestone"; session-policy.md, "Guest observation channels and Sage guest
 * proposals").
 *
 * One worker thread per route, a fixed set started by
 * glove_services_proxy_start and joined by glove_services_proxy_stop. Each
 * worker forwards opaque frames (frame.h) between its guest side and its
 * upstream endpoint (endpoint.h), and records each exchange (audit.h). The
 * workers block every signal; they print nothing and touch no global state.
 *
 * One exchange (both transports), under one absolute deadline that starts
 * when the request's first byte is seen (INHERITED) or when the guest
 * connection is accepted (PATHNAME), now + exchange_timeout_ms:
 *   1. read one request frame from the guest;
 *   2. connect the upstream (glove_services_endpoint_connect_stop: identity
 *      checked before and after, SO_PEERCRED uid == service_uid), send the
 *      request, read one response frame; bytes after the response on the
 *      upstream are services.frame_trailing; close the upstream;
 *   3. queued input on the guest side is services.pipelined;
 *   4. append delivery_pending with status "pending" (deadline checked before
 *      and after; audit_late or audit_failed end the exchange unreleased);
 *   5. queued input on the guest side is services.pipelined;
 *   6. send the response to the guest;
 *   7. input queued on the guest side while the agent has not yet read the
 *      whole response (SIOCOUTQ of the guest end above zero) is
 *      services.pipelined (the response was sent, so delivered is never
 *      written: delivery_failed is); input queued once it had read it all
 *      is its next request, served at the next boundary (an agent that
 *      answers a response at once is not taken for a pipelining one);
 *   8. append delivered with status "ok" (deadline checked). If that append
 *      fails or is late, the response is already out: no delivery_failed is
 *      written (the durable delivery_pending stands as the conservative
 *      record), and the stream is poisoned.
 * End of stream on the guest side (a half-close) is not queued input.
 * A failure in steps 1 to 7, once a request's first byte was seen (or a
 * PATHNAME connection accepted), is recorded with a best-effort
 * delivery_failed whose status is the failure's code, written with no
 * deadline, whether or not delivery_pending was written before it; then:
 *   INHERITED: the stream is poisoned: the worker closes the guest end (the
 *   guest sees end of stream), serves it no more and ends;
 *   PATHNAME: that connection is closed; the listener keeps serving.
 * Latency in every record is the milliseconds since the exchange began.
 *
 * INHERITED (inherited-stream-v1): guest_fd is the supervisor end of a
 * connected AF_UNIX SOCK_STREAM socketpair; sequential exchanges on it until
 * the guest closes it at a request boundary (state CLOSED, no record), a
 * failure poisons it, or the proxy stops. A stop while a worker waits for a
 * request records nothing; a stop during an exchange is services.cancelled.
 *
 * PATHNAME (compatibility transport): guest_fd is a bound, listening
 * AF_UNIX SOCK_STREAM socket (glove_services_pathname_listen). Each accepted
 * connection (accept4 SOCK_CLOEXEC|SOCK_NONBLOCK) must have SO_PEERCRED uid
 * == service_uid (otherwise: delivery_failed services.peer_uid, closed), then
 * carries exactly one exchange and is closed. A connection closed before any
 * request byte records nothing. A listener failure poisons the route.
 *
 * Stable error codes of exchanges (audit statuses and last_code):
 *   services.pipelined       input queued at the request boundary or around the
 *                            response's release
 *   services.frame_trailing  bytes after the upstream's response
 *   services.peer_uid        a guest (PATHNAME) or upstream peer of another uid
 *   and those of frame.h, endpoint.h and audit.h.
 * Errors of glove_services_proxy_start: services.invalid_argument (-EINVAL),
 * services.no_memory (-ENOMEM), services.io (-errno: eventfd, pthread_create).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/services/endpoint.h"

/* At most this many routes per proxy. */
#define GLOVE_SERVICES_MAX_ROUTES 16
/* Bounds of exchange_timeout_ms. */
#define GLOVE_SERVICES_EXCHANGE_TIMEOUT_MAX_MS 600000
/* The listen(2) backlog of glove_services_pathname_listen. */
#define GLOVE_SERVICES_LISTEN_BACKLOG 16

enum glove_services_transport {
        GLOVE_SERVICES_TRANSPORT_PATHNAME,
        GLOVE_SERVICES_TRANSPORT_INHERITED,
};

struct glove_services_route {
        const char *alias;                        /* identifier (config.h); copied */
        struct glove_services_endpoint *upstream; /* moved in: owned by the proxy from the start call on,
                                                     also when it fails */
        int guest_fd;                             /* moved in, as upstream: INHERITED: the supervisor end of the
                                                     socketpair; PATHNAME: a bound, listening SOCK_STREAM socket */
};

struct glove_services_proxy_config {
        const char *session_id;                   /* 1..GLOVE_SERVICES_SESSION_ID_MAX printable ASCII; copied */
        enum glove_services_transport transport;
        const struct glove_services_route *routes;
        size_t n_routes;                          /* 1..GLOVE_SERVICES_MAX_ROUTES, aliases unique */
        uid_t service_uid;                        /* the SO_PEERCRED uid required of guest (PATHNAME) and
                                                     upstream peers; every upstream must be pinned for it */
        int audit_fd;                             /* moved in; opened O_WRONLY|O_APPEND on a file that
                                                     supports fdatasync */
        uint32_t exchange_timeout_ms;             /* 1..GLOVE_SERVICES_EXCHANGE_TIMEOUT_MAX_MS */
        /* The audit file's size bound, bytes (the session's disk_bytes:
         * the file lives on the host); an exchange that finds the file at
         * or past it before its delivery_pending append fails with
         * services.audit_full (the stream is poisoned, nothing released).
         * 0: no bound. */
        uint64_t audit_max_bytes;
};

struct glove_services_proxy;

/*
 * Validates c and starts one worker per route. Every descriptor and
 * endpoint c moves in is owned by the proxy from this call on: on failure
 * they are closed and freed before the call returns, so the caller never
 * closes or frees them (whatever the result). On success *out (stop it with
 * glove_services_proxy_stop) holds the running proxy; NULL on failure.
 */
int glove_services_proxy_start(const struct glove_services_proxy_config *c, struct glove_services_proxy **out,
                               struct glove_error *err);

/* Stops (signals the stop descriptor every wait includes), joins every
 * worker, closes every descriptor and frees every endpoint and p. A worker
 * in a kernel-blocked fdatasync finishes it first. NULL: nothing. */
void glove_services_proxy_stop(struct glove_services_proxy *p);

enum glove_services_route_state {
        GLOVE_SERVICES_ROUTE_SERVING,  /* the worker serves */
        GLOVE_SERVICES_ROUTE_CLOSED,   /* INHERITED: the guest closed the stream at a request boundary */
        GLOVE_SERVICES_ROUTE_POISONED, /* INHERITED: a failure closed the stream; PATHNAME: the listener failed */
};

struct glove_services_route_status {
        uint64_t delivered;     /* exchanges recorded delivered */
        uint64_t failed;        /* exchanges that failed (refused PATHNAME peers included) */
        enum glove_services_route_state state;
        const char *last_code;  /* static code of the latest failure, NULL when none */
};

/* Number of routes of p. */
size_t glove_services_proxy_route_count(const struct glove_services_proxy *p);

/*
 * A snapshot of route i (in the order of the start call) into *out; for
 * tests and status. The counters only grow; state changes once, from
 * SERVING, after the failure's record and the guest end's close. Returns 0,
 * or -EINVAL when i is out of range.
 */
int glove_services_proxy_status(const struct glove_services_proxy *p, size_t i, struct glove_services_route_status *out);

/*
 * Makes the inherited-stream-v1 socket pair of one adapter-bound alias (spec
 * session-policy.md: "one nonblocking close-on-exec AF_UNIX stream
 * socketpair"; architecture.md: "owner-0600"): socketpair(AF_UNIX,
 * SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC) with both ends fchmod'ed to 0600.
 * *supervisor_fd becomes an INHERITED route's guest_fd; *guest_fd is the
 * end the child receives (as descriptor 3, by the launcher). The caller owns
 * both; both are -1 on failure. Errors: services.io (-errno),
 * services.invalid_argument.
 */
int glove_services_inherited_pair(int *supervisor_fd, int *guest_fd, struct glove_error *err);

/*
 * Creates the compatibility listener for alias (an identifier, config.h)
 * in the directory dir_fd (the session's private owner-only directory, any
 * descriptor of it, O_PATH included): a socket(AF_UNIX,
 * SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK) bound through
 * "/proc/self/fd/DIRFD/ALIAS", set to mode 0600 with fchmodat, checked to be
 * a socket owned by the caller with mode 0600, and listening with
 * GLOVE_SERVICES_LISTEN_BACKLOG. *fd_out (caller owns; the proxy takes it as
 * a PATHNAME route's guest_fd) is -1 on failure. An existing name is
 * -EADDRINUSE. The caller removes the name after the proxy stops.
 * Errors: services.invalid_argument, services.listen (-errno).
 */
int glove_services_pathname_listen(int dir_fd, const char *alias, int *fd_out, struct glove_error *err);

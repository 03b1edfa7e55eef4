/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove run's in-sandbox MCP endpoints, host side (docs/mcp-mediation.md,
 * "Endpoints"): the connections the sandbox's listener helper passes over
 * an inherited channel (SCM_RIGHTS, glove/net/helper.h) are served here, on
 * glove run's sd-event loop; with egress on, the egress relay passes
 * requests for the endpoint's own address over the same channel
 * (glove/net/relay.h: the agent's TCP connection after a CONNECT, or an
 * AF_UNIX stream socket carrying one origin-form request):
 *
 *  - a connection whose first bytes are GLOVE_MCP_ENDPOINT_PREFACE comes
 *    from the in-sandbox command (/run/glove/mcp-stdio): newline-delimited
 *    JSON-RPC, one client session per connection;
 *  - any other connection is HTTP/1.1: the Streamable HTTP transport (MCP
 *    2025-11-25 "Transports") at /mcp, one client session per
 *    Mcp-Session-Id; and MCP 2026-07-28 "Streamable HTTP" for modern
 *    requests (params._meta names io.modelcontextprotocol/protocolVersion):
 *    no session, their headers checked against their body (mcp_http.c).
 *
 * A command connection is of one era: initialize (legacy) or modern
 * requests, never both ("endpoint.era_mixed", mcp_mux.c).
 *
 * Writes to a client that has gone raise SIGPIPE: the caller ignores or
 * blocks it (glove run ignores it).
 *
 * Every session is multiplexed onto the gateway's one agent channel
 * (mcp_mux.c): request ids and progress tokens are rewritten to unique
 * strings and restored on the way back, notifications are broadcast,
 * server-to-client requests ("glove-..." ids) go to one session.
 *
 * Bounds: GLOVE_MCP_ENDPOINT_SESSIONS_MAX sessions, _CONNS_MAX connections,
 * _INFLIGHT_MAX requests in flight (all sessions), _SERVER_REQUESTS_MAX
 * server-to-client requests pending, _OUTBOX_MAX bytes queued per session
 * or connection, and over all of them the memory budget below. Stable
 * codes: "endpoint.*" (docs/mcp-mediation.md).
 *
 * Memory: what the endpoint holds lives in glove run's own process, outside
 * the agent's cgroup, so it is bounded as a whole, not per connection: the
 * bytes allocated for every connection's input (partial heads, bodies and
 * lines) and queued output, the messages waiting for an HTTP session's GET
 * stream and the queue towards the gateway count against one budget,
 * glove_mcp_endpoint_memory_budget(max_frame) bytes, beyond
 * GLOVE_MCP_ENDPOINT_CONN_FREE bytes per connection and
 * GLOVE_MCP_ENDPOINT_GATEWAY_FREE of the gateway's queue that are always
 * available (request heads, refusals, small messages, cancellations). Past it an HTTP
 * request is refused 503 "endpoint.memory_full" with Connection: close, a
 * command's connection gets a JSON-RPC error with that reason and is
 * closed, a connection whose answer cannot be queued is closed; each is
 * audited (endpoint_refused). The whole is at most
 * budget + GLOVE_MCP_ENDPOINT_CONNS_MAX * GLOVE_MCP_ENDPOINT_CONN_FREE +
 * GLOVE_MCP_ENDPOINT_GATEWAY_FREE (budget + 13 MiB). A message the gateway's
 * queue has no room for is refused to its client with -32000
 * "endpoint.memory_full". What the endpoint owes the gateway when a client
 * goes away (notifications/cancelled for each request in flight, an error
 * for each of the gateway's requests the session held) is never refused:
 * without room it waits in its in-flight slot and is queued once the queue
 * drains.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "glove/audit/log.h"
#include "glove/base/error.h"

#define GLOVE_MCP_ENDPOINT_PREFACE "GLOVE-MCP-STDIO/1\n"
#define GLOVE_MCP_ENDPOINT_SESSIONS_MAX 32
#define GLOVE_MCP_ENDPOINT_CONNS_MAX 64
#define GLOVE_MCP_ENDPOINT_INFLIGHT_MAX 1024
#define GLOVE_MCP_ENDPOINT_SERVER_REQUESTS_MAX 64
#define GLOVE_MCP_ENDPOINT_OUTBOX_MAX (16 * 1024 * 1024)
/* The memory budget's floor, bytes (the budget at --max-frame 4M). */
#define GLOVE_MCP_ENDPOINT_MEMORY_FLOOR (32 * 1024 * 1024)
/* Bytes of input and output buffers each connection has outside the
 * budget: a request head and one read, and a small answer. */
#define GLOVE_MCP_ENDPOINT_CONN_FREE (192 * 1024)
/* Bytes of the queue towards the gateway outside the budget. */
#define GLOVE_MCP_ENDPOINT_GATEWAY_FREE (1024 * 1024)
/* Messages kept for an HTTP session without a GET stream. */
#define GLOVE_MCP_ENDPOINT_BACKLOG_MAX 256
/* A request head (and its body) must arrive within this, µs. */
#define GLOVE_MCP_ENDPOINT_HEAD_TIMEOUT_USEC (30 * 1000 * 1000ULL)
/* An idle keep-alive connection is closed after this, µs. */
#define GLOVE_MCP_ENDPOINT_IDLE_TIMEOUT_USEC (120 * 1000 * 1000ULL)
/* A client that stopped sending (a FIN: a half-close, or a close) while its
 * modern request waits is asked whether it is still there this often, µs
 * (mcp_http.c, "Half-close"). */
#define GLOVE_MCP_ENDPOINT_PROBE_USEC (1000 * 1000ULL)
/* The default port on the sandbox's loopback. */
#define GLOVE_MCP_ENDPOINT_PORT_DEFAULT 8931

struct glove_mcp_endpoint;

struct glove_mcp_endpoint_config {
        sd_event *event;                 /* borrowed, outlives the endpoint */
        int gateway_fd;                  /* the multiplexer's end of the gateway's agent channel (taken) */
        int accept_fd;                   /* Glove's end of the listener's SCM_RIGHTS channel (taken) */
        uint16_t port;                   /* the sandbox's port: Host and Origin must name it */
        bool http;                       /* serve HTTP connections */
        bool command;                    /* serve the in-sandbox command's connections */
        size_t max_frame;                /* longest message (line or HTTP body), bytes */
        struct glove_audit_log *audit;   /* borrowed, may be NULL or fd -1 */
        /* Optional: charges n bytes of an endpoint record (endpoint_session,
         * endpoint_refused) to the agent, as if it had sent them (its
         * output limit); false: over the limit, the record is not written
         * (the agent is being stopped). Without it an agent that opens and
         * drops connections in a loop would grow the audit log unbounded. */
        bool (*agent_bytes)(void *userdata, size_t n);
        /* A failure of the endpoint (audit append, the gateway's channel):
         * err borrowed for the call. The caller stops the run. */
        void (*failed)(void *userdata, const struct glove_error *err);
        /* Optional: the inputSchema of the tool an agent's tools/call
         * names (name: params.name, NUL-terminated), as the agent's
         * tools/list shows it; NULL when there is no such tool. Borrowed
         * for the call. A modern HTTP tools/call's Mcp-Param-* headers are
         * checked against its arguments by the "x-mcp-header" annotations
         * it holds (mcp_http.c); without the callback they are not. */
        const json_t *(*tool_schema)(void *userdata, const char *name);
        void *userdata;
};

/* The endpoint's memory budget for a --max-frame of max_frame bytes:
 * GLOVE_MCP_ENDPOINT_MEMORY_FLOOR, or 3 * max_frame + 1 MiB when that is
 * larger (a largest request, its copy towards the gateway and a largest
 * answer at once): 32 MiB at 4 MiB, 49 MiB at 16 MiB, 769 MiB at the
 * 256 MiB maximum. Bytes. */
size_t glove_mcp_endpoint_memory_budget(size_t max_frame);

/* Creates the endpoint on cfg->event. Both descriptors are taken, also on
 * failure. Errors: "endpoint.event_loop", "endpoint.nomem". */
int glove_mcp_endpoint_new(const struct glove_mcp_endpoint_config *cfg, struct glove_mcp_endpoint **out, struct glove_error *err);

/* Closes every connection and session and the channels. Each session still
 * open is recorded closed first (endpoint_session, reason "run_ended"),
 * unless the endpoint failed; nothing more is sent to the gateway (the
 * caller tells it the agent is gone). NULL is fine. */
void glove_mcp_endpoint_free(struct glove_mcp_endpoint *ep);

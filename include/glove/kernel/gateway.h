/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The MCP gateway between one agent and its upstream MCP servers (spec
 * architecture.md, MCP request flow; docs/mcp-mediation.md): Glove is the
 * MCP server the agent talks to, and forwards only policy-approved tool
 * calls to host-side upstreams.
 *
 *  - server-to-client requests of upstreams (sampling/createMessage,
 *    elicitation/create, roots/list) reach the agent only where policy grants
 *    that upstream the feature (glove_policy_client_features), with ids
 *    "glove-N", at most GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX at once,
 *    timed out after call_timeout_ms; the agent's answers go back with the
 *    upstream's id; logging/setLevel, notifications/message and the
 *    list_changed notifications are relayed under the same grants
 *    (docs/mcp-mediation.md, "Client features");
 *  - initialize and ping are answered by the gateway; tools/list merges the
 *    upstreams' tools that policy shows, named UPSTREAM.TOOL, in pages of
 *    GLOVE_KERNEL_GATEWAY_TOOLS_PAGE; tools/call is decided by policy, and an
 *    allowed call is forwarded with its own upstream id, correlated back,
 *    timed out after call_timeout_ms and cancelled on request;
 *  - MCP 2026-07-28 requests (params._meta names the revision) are served
 *    beside the legacy revisions (glove/kernel/era.h): server/discover is
 *    answered by the gateway, results gain "resultType" (and "ttlMs",
 *    "cacheScope" when cacheable), the reserved _meta keys never reach an
 *    upstream, and on a channel not shared (cfg.shared_channel) the agent
 *    keeps to the era it began with (docs/mcp-mediation.md, "Protocol
 *    revisions");
 *  - an upstream may itself speak only 2026-07-28 (glove/mcp/upstream.h,
 *    "Eras"): its requests are stamped by the upstream client; the gateway
 *    leaves it out of logging/setLevel and roots/list_changed, refuses
 *    resources/(un)subscribe of its resources ("upstream_not_supported") and
 *    does not announce its resources.subscribe (docs/mcp-mediation.md,
 *    "Protocol revisions of upstreams");
 *  - a modern upstream's input_required results (multi round-trip
 *    requests) are decided by the client-feature policy: relayed to a
 *    modern agent with a requestState sealed under a key of the run, or,
 *    for a legacy agent, asked of it as requests of Glove's own and
 *    retried with its answers ("Input requests"); a modern agent's
 *    subscriptions/listen gets the list-changed kinds the upstreams can
 *    change, tagged with its id ("Subscriptions");
 *  - every decision and notable event is appended to the audit log (when one
 *    is given), fail closed: a failed append stops the gateway;
 *  - the upstreams are started by glove_kernel_gateway_new; once every one of
 *    them is initialized and listed, the caller is told (READY) that the agent
 *    may start; if that takes longer than call_timeout_ms after the agent
 *    channel is attached, the gateway fails, unless the upstreams not ready
 *    are optional: those are left out and the gateway starts without them.
 *
 * Runs on a caller-supplied sd-event loop. Daemon-safe: no statics holding
 * state, no signal dispositions or masks, no prctl on the caller, no
 * environment (upstream environments are in their specs), no printing, no
 * exit. The gateway owns every descriptor, event source and child process it
 * creates and releases them in glove_kernel_gateway_free. As for any sd-event
 * child source, the caller keeps SIGCHLD blocked; and since writes to a pipe
 * whose reader is gone raise SIGPIPE, the caller ignores or blocks SIGPIPE.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "glove/audit/log.h"
#include "glove/base/error.h"
#include "glove/mcp/upstream.h"
#include "glove/policy/policy.h"

/* Most upstreams of one gateway. */
#define GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX 32
/* Tools per tools/list page sent to the agent. */
#define GLOVE_KERNEL_GATEWAY_TOOLS_PAGE 100
/* Bytes queued towards an agent that is not reading. */
#define GLOVE_KERNEL_GATEWAY_AGENT_PENDING_MAX (64 * 1024 * 1024)
/* Requests of upstreams to the client (sampling, elicitation, roots)
 * held or in flight towards the agent at once. */
#define GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX 64
/* logging/setLevel requests of the agent in flight at once. */
#define GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX 8
/* Bytes queued towards the agent above which relayed notifications
 * (notifications/message, list_changed) are dropped instead of queued
 * (audited "notification_dropped"); responses still use the whole
 * GLOVE_KERNEL_GATEWAY_AGENT_PENDING_MAX. */
#define GLOVE_KERNEL_GATEWAY_NOTIFY_PENDING_MAX (4 * 1024 * 1024)
/* Grace between SIGTERM and SIGKILL for upstreams at the end, µs. */
#define GLOVE_KERNEL_GATEWAY_GRACE_USEC (2 * 1000 * 1000ULL)

struct glove_kernel_gateway;

enum glove_kernel_gateway_event {
        /* Every upstream is initialized and listed: the agent may start.
         * Reported once. A negative return from notify means the caller
         * could not start it (the caller then stops the gateway). */
        GLOVE_KERNEL_GATEWAY_READY,
        /* The gateway failed (err says why: an audit append, the agent's
         * channel, an upstream during startup, the startup bound) and is
         * stopping. May be reported more than once; err is always the
         * gateway's first failure (a later one does not replace it, as with
         * glove_error_set). */
        GLOVE_KERNEL_GATEWAY_FAILED,
        /* An optional upstream (cfg.upstream_optional) failed or did not
         * finish initializing within the startup bound: the gateway starts
         * without it (err: "upstream.left_out", the message names it and
         * says why). Once per such upstream, before READY; the return value
         * is ignored. */
        GLOVE_KERNEL_GATEWAY_LEFT_OUT,
        /* After glove_kernel_gateway_agent_exited: every upstream process has
         * been reaped. Reported once; the caller may leave its loop. */
        GLOVE_KERNEL_GATEWAY_FINISHED,
};

/* err is set for FAILED and LEFT_OUT only (borrowed for the call), NULL
 * otherwise. */
typedef int (*glove_kernel_gateway_notify_fn)(struct glove_kernel_gateway *gw, enum glove_kernel_gateway_event event,
                                              const struct glove_error *err, void *userdata);

struct glove_kernel_gateway_config {
        const struct glove_policy *policy;                  /* borrowed, outlives the gateway */
        const struct glove_mcp_upstream_spec *upstreams;    /* borrowed array, outlives the gateway; names distinct */
        size_t n_upstreams;                                 /* 1..GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX */
        /* Borrowed array of n_upstreams, or NULL (none): an optional
         * upstream that fails or is not ready within the startup bound is
         * left out (audited "upstream_left_out" {name, reason}, LEFT_OUT)
         * instead of failing the gateway; its tools are absent from
         * tools/list, calls to them answer upstream_unavailable, and the
         * initialize result's "instructions" name it. */
        const bool *upstream_optional;
        /* Borrowed array of n_upstreams, or NULL (none): an own-names
         * upstream's tools and prompts reach the agent under their own
         * names (not NAME.TOOL) and its resource URIs unchanged (not
         * glove://NAME/...); policy rules still name them NAME.TOOL. Once
         * every upstream is ready, names the agent would see twice fail
         * the start ("gateway.name_collision"). docs/mcp-mediation.md. */
        const bool *upstream_own_names;
        int64_t call_timeout_ms;                            /* per call, and the startup bound; >= 1 */
        size_t max_frame;                                   /* longest JSON-RPC line accepted from anyone, bytes */
        struct glove_audit_log *audit;                      /* borrowed, may be NULL (or closed: fd < 0) */
        bool audit_arguments;                               /* call records carry the arguments themselves */
        /* How the caller names these bounds in texts that reach the agent,
         * the audit log or the caller's error (e.g. its options):
         * call_timeout_rule is data.rule of a timeout error (NULL:
         * "call_timeout_ms N"); max_frame_name is used in "longer than
         * NAME" (NULL: "the frame bound"). Borrowed. */
        const char *call_timeout_rule;
        const char *max_frame_name;
        /* Optional: accounts n bytes read from the agent; false means they
         * are over a limit and are not handled. */
        bool (*agent_bytes)(void *userdata, size_t n);
        /* Optional: each line an upstream writes to its stderr (upstream
         * names it, line[0..len) is as written, any byte, at most
         * GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX, cut when its rest was
         * dropped; all borrowed for the call; ops->stderr_line of
         * glove/mcp/upstream.h). NULL: the upstreams share the caller's
         * stderr. */
        void (*upstream_stderr)(void *userdata, const char *upstream, const char *line, size_t len, bool cut);
        /* The agent channel is shared by several client sessions (glove
         * run's --mcp-endpoint: src/run/mcp_mux.c merges them), which may
         * speak different MCP eras: the gateway then does not refuse a
         * modern request after an initialize, nor the reverse (the
         * multiplexer keeps each session to one era). False for the
         * agent's own stdio, which the gateway polices
         * (docs/mcp-mediation.md, "Protocol revisions"). */
        bool shared_channel;
        glove_kernel_gateway_notify_fn notify;              /* required */
        void *userdata;
};

/*
 * Creates a gateway on event (borrowed, must outlive it) and starts every
 * upstream of cfg (each audited as "upstream_start" {name, path, pid}) with
 * its initialize sent. cfg is copied; what it points to is borrowed. On
 * failure nothing is left behind. Errors: "gateway.config" (EINVAL: bad
 * counts, duplicate upstream names), "upstream.start",
 * "upstream.event_loop", "audit.*", "gateway.nomem".
 */
int glove_kernel_gateway_new(sd_event *event, const struct glove_kernel_gateway_config *cfg,
                             struct glove_kernel_gateway **out, struct glove_error *err);

/*
 * Gives the gateway the agent's channel: read_fd carries the agent's
 * JSON-RPC messages to the gateway (the agent's stdout), write_fd the
 * gateway's answers to the agent (its stdin). Both are taken over (made
 * non-blocking, closed by the gateway, also on failure). Arms the startup
 * bound; READY is reported from the loop, never from inside this call.
 * Once only. Errors: "gateway.attached" (EALREADY), "gateway.event_loop".
 */
int glove_kernel_gateway_attach_agent(struct glove_kernel_gateway *gw, int read_fd, int write_fd, struct glove_error *err);

/* Stops after a failure of the caller: the agent's messages are no longer
 * read, the upstreams are sent SIGTERM. Idempotent. */
void glove_kernel_gateway_stop(struct glove_kernel_gateway *gw);

/* The agent is gone: calls in flight end ("agent_exited"), the upstreams are
 * sent SIGTERM (SIGKILL after GLOVE_KERNEL_GATEWAY_GRACE_USEC), and
 * FINISHED is reported once they are all reaped (possibly from inside this
 * call). */
void glove_kernel_gateway_agent_exited(struct glove_kernel_gateway *gw);

/* The number of upstreams and the i-th one (borrowed, i < count). */
size_t glove_kernel_gateway_upstreams(const struct glove_kernel_gateway *gw);
const struct glove_mcp_upstream *glove_kernel_gateway_upstream(const struct glove_kernel_gateway *gw, size_t i);

/* The name of the upstream whose exit (or closed channel) before it was
 * ready is the gateway's failure ("upstream.start ... failed during
 * initialization"; borrowed from its spec), or NULL when the failure, if
 * any, is another. */
const char *glove_kernel_gateway_failed_upstream(const struct glove_kernel_gateway *gw);

/*
 * Kills and reaps every upstream (SIGKILL), and releases every descriptor,
 * event source and reference of the gateway.
 * In-flight calls are dropped unrecorded. NULL is fine. Not from inside one
 * of its own callbacks.
 */
void glove_kernel_gateway_free(struct glove_kernel_gateway *gw);

/* The result of an agent's initialize: the version the agent asked for when
 * Glove speaks it, else Glove's newest; capabilities
 * {"tools":{"listChanged":true}}; serverInfo Glove. A new reference or NULL
 * (ENOMEM). params borrowed, may be NULL. (The gateway then makes the
 * capabilities those of its ready upstreams under policy: listChanged only
 * when one has it, logging when one offers and is granted it; and adds
 * "instructions": granted upstreams' own, and the upstreams left out.) */
json_t *glove_kernel_gateway_initialize_result(const json_t *params);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The gateway's state, shared by gateway.c (lifecycle, upstream events),
 * gateway_agent.c (the agent's channel) and gateway_calls.c (tools/call).
 * Internal to the kernel module. */

#include "glove/kernel/calls.h"
#include "glove/kernel/gateway.h"
#include "glove/mcp/frame.h"
#include "glove/mcp/jsonrpc.h"

struct glove_kernel_gateway;

struct gw_upstream {
        struct glove_kernel_gateway *gw;
        size_t index;
        struct glove_mcp_upstream *u;     /* owned */
        struct glove_mcp_upstream_config cfg;   /* the client's configuration; userdata is this */
        bool optional;                    /* cfg.upstream_optional[index] */
        bool left_out;                    /* optional, and started without (GLOVE_KERNEL_GATEWAY_LEFT_OUT) */
        bool own_names;                   /* cfg.upstream_own_names[index]: tools, prompts and URIs unqualified */
        json_t *subscribed;               /* owned or NULL: {URI: true} the agent subscribed to (upstream URIs) */
        json_t *prompt_names;             /* owned or NULL: its prompt names listed at start (own-names runs) */
        char left_out_why[160];           /* why, for the agent's instructions */
};

struct glove_kernel_gateway {
        sd_event *event;                  /* a reference */
        struct glove_kernel_gateway_config cfg;
        struct gw_upstream ups[GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX];
        size_t n_ups;
        struct glove_kernel_calls *calls; /* owned (large: GLOVE_KERNEL_CALLS_MAX slots) */

        int agent_in, agent_out;          /* owned: towards the agent (write), from it (read); -1 when closed */
        struct glove_mcp_reader agent_reader;
        struct glove_mcp_writer agent_writer;
        sd_event_source *agent_out_src, *agent_in_src;
        sd_event_source *startup_timer, *startup_check, *grace_timer;
        /* One timer for every call's timeout: armed at the earliest deadline
         * (calls all get the same timeout, so a new call rarely moves it), and
         * rescanned when it fires. No timer syscall per call. */
        sd_event_source *call_timer;
        uint64_t call_timer_at;           /* armed deadline (monotonic µs), 0 when off */

        int own_names_stage;              /* 0: not checked, 1: prompts being listed, 2: checked */
        bool constructing;                /* inside glove_kernel_gateway_new: failures are returned, not notified */
        bool attached, released, stopping, agent_gone, finished;
        struct glove_error err;           /* the latest failure */
};

/* gateway.c */
int gw_audit(struct glove_kernel_gateway *gw, const char *event, json_t *fields);
bool gw_auditing(const struct glove_kernel_gateway *gw);
void gw_fail(struct glove_kernel_gateway *gw);
void gw_check_startup(struct glove_kernel_gateway *gw);

/* gateway_agent.c */
int gw_send_agent(struct glove_kernel_gateway *gw, json_t *msg);
void gw_agent_error(struct glove_kernel_gateway *gw, const json_t *id, int code, const char *message, const char *reason,
                    const char *rule);
int gw_on_agent_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata);
int gw_on_agent_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* gateway_calls.c */
void gw_handle_tools_call(struct glove_kernel_gateway *gw, const json_t *id, json_t *params);
/* A request of the agent whose id is that of a call in flight: answered
 * -32600 with id null (data.id the duplicate id) and never dispatched; a
 * tools/call is audited as a denied call. */
void gw_refuse_duplicate(struct glove_kernel_gateway *gw, const json_t *id, const char *method, json_t *params);
void gw_handle_agent_cancel(struct glove_kernel_gateway *gw, json_t *params);
void gw_upstream_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m);
/* The upstream's answer to upstream_id was longer than max_frame and was
 * skipped: that call fails (response_too_large), the upstream goes on. */
void gw_upstream_oversized(struct glove_kernel_gateway *gw, struct gw_upstream *gu, int64_t upstream_id);
void gw_upstream_progress(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m);
void gw_fail_calls_of(struct glove_kernel_gateway *gw, size_t upstream);
void gw_finish_all_calls(struct glove_kernel_gateway *gw, const char *status);
int gw_on_call_timer(sd_event_source *s, uint64_t usec, void *userdata);
/* SHA-256 hex of args as call records give it ("{}" when NULL); out
 * empty on failure. Returns 0 or -errno. */
int gw_hash_arguments(const json_t *args, char out[65]);
/* Ends c: its result record (call_result or request_result), its slot. */
void gw_call_finish(struct glove_kernel_gateway *gw, struct glove_kernel_call *c, const char *status);
/* c is forwarded now: its start time, the shared timer armed. */
void gw_call_started(struct glove_kernel_gateway *gw, struct glove_kernel_call *c);

/* gateway_features.c: resources, prompts, completion (docs/mcp-mediation.md) */
/* Handles the agent's request method when it is one of the features;
 * false when it is not (the caller goes on). */
bool gw_feature_request(struct glove_kernel_gateway *gw, const json_t *id, const char *method, json_t *params);
/* The upstream's answer to a non-tool request c. */
void gw_feature_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c,
                         struct glove_mcp_message *m);
/* notifications/resources/updated from gu. */
void gw_feature_updated(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m);
/* The capability object cap ("resources", "prompts", "completions") u
 * announced, or NULL. */
const json_t *gw_capability(const struct glove_mcp_upstream *u, const char *cap);
/* Neither left out nor DEAD. */
bool gw_usable(const struct gw_upstream *gu);
/* Sends method with params (stolen, may be NULL) to gu as c's request:
 * c is re-keyed to gu and a new upstream id. */
void gw_feature_send(struct gw_upstream *gu, struct glove_kernel_call *c, const char *method, json_t *params);
/* The fields of a request_result record (NULL: ENOMEM). */
json_t *gw_request_result_fields(const struct glove_kernel_call *c, const char *status);
/* The own-names upstream (--upstream-own-names) whose tool (kind
 * TOOL_CALL) or prompt (PROMPT_GET) is name, or NULL. */
struct gw_upstream *gw_own_name_upstream(struct glove_kernel_gateway *gw, enum glove_kernel_request_kind kind,
                                         const char *name);
/* gateway_own_names.c */
/* The initialize result's resources, prompts and completions capabilities,
 * added to caps (an object). */
void gw_feature_capabilities(struct glove_kernel_gateway *gw, json_t *caps);
/* With own-names upstreams, before READY: lists the prompts of every
 * upstream offering them (once; false until that is done, then
 * gw_check_startup is called again), then refuses names the agent would
 * see twice (gw->err "gateway.name_collision", gw_fail; false). True when
 * the start may go on. */
bool gw_own_names_ready(struct glove_kernel_gateway *gw);

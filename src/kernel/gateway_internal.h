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
/* The fast path of responses (issue 13): queued, written by
 * gw_agent_drained once the lines of one read are handled. */
int gw_queue_agent_response(struct glove_kernel_gateway *gw, const json_t *id, bool is_error, const char *value, size_t len);
void gw_agent_drained(struct glove_kernel_gateway *gw);
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
/* Fast path (issue 13): a response that glove_mcp_response_scan vouched
 * for, to a call in flight whose result is relayed unchanged
 * (glove_kernel_call.verbatim), forwarded with its value's bytes as they
 * came. Returns false (nothing done) for any other id: the tree path then
 * handles it (or drops it on record) as before. */
bool gw_upstream_raw_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const char *line,
                              const struct glove_mcp_raw_response *r);
/* The upstream's answer to upstream_id was longer than max_frame and was
 * skipped: that call fails (response_too_large), the upstream goes on. */
void gw_upstream_oversized(struct glove_kernel_gateway *gw, struct gw_upstream *gu, int64_t upstream_id);
void gw_upstream_progress(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m);
/* Holds or releases the writes towards every upstream (glove_mcp_upstream_hold). */
void gw_hold_upstreams(struct glove_kernel_gateway *gw, bool hold);
void gw_fail_calls_of(struct glove_kernel_gateway *gw, size_t upstream);
void gw_finish_all_calls(struct glove_kernel_gateway *gw, const char *status);
int gw_on_call_timer(sd_event_source *s, uint64_t usec, void *userdata);

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
        unsigned features;                /* client features policy grants it (glove_policy_client_features) */
        json_t *client_caps;              /* owned: the capabilities declared in its initialize */
        bool backlog_dropping;            /* its notifications are being dropped (agent backlog) */
};

/* A request of an upstream to the client (sampling/createMessage,
 * elicitation/create, roots/list), held until the agent is initialized,
 * then sent to the agent with id "glove-N" (gateway_client.c). */
struct gw_client_request {
        bool used, sent;
        size_t upstream;
        json_t *upstream_id;              /* owned: the upstream's own id (NULL for a translated input request) */
        /* A translated input request (mrtr.c): the agent id of the call it
         * belongs to (owned) and the upstream's key for it (owned); the
         * answer goes to the call, never to the upstream. */
        json_t *call_id;
        json_t *key;
        json_t *params;                   /* owned while held; NULL once sent */
        char method[32];
        char id[32];                      /* "glove-N", unique over the gateway's life */
        uint64_t start_us;
};

/* An open subscriptions/listen of a modern agent (listen.c). */
#define GW_LISTENS_MAX 16
#define GW_LISTEN_TOOLS 1u
#define GW_LISTEN_PROMPTS 2u
#define GW_LISTEN_RESOURCES 4u
struct gw_listen {
        bool used;
        json_t *id;                       /* owned: the listen request's id (its subscriptionId) */
        unsigned kinds;                   /* GW_LISTEN_* honoured */
};

/* A logging/setLevel of the agent, sent to every upstream that takes it. */
struct gw_set_level {
        bool used;
        json_t *agent_id;                 /* owned */
        uint64_t start_us;
        size_t waiting;                   /* answers still to come */
        bool pending[GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX];
        int64_t upstream_id[GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX];
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
        /* Server-to-client requests and relays (gateway_client.c). */
        json_t *agent_caps;               /* owned: the agent's initialize capabilities, NULL before it */
        bool agent_initialized;           /* notifications/initialized seen */
        /* Eras (glove/kernel/era.h): what the agent's channel has spoken. */
        bool agent_sent_initialize;       /* an initialize was answered */
        bool agent_sent_modern;           /* a well-formed 2026-07-28 request was served */
        bool cur_modern;                  /* the request being dispatched is a modern one */
        /* Multi round-trip requests (mrtr.c). */
        const json_t *cur_caps;           /* borrowed: the dispatched modern request's clientCapabilities, or NULL */
        json_t *cur_seal;                 /* owned or NULL: the verified seal of the dispatched request's requestState */
        uint8_t mrtr_key[32];             /* the key of this run's seals (getrandom) */
        struct gw_listen listens[GW_LISTENS_MAX];
        size_t cur_len;                   /* bytes of the agent's line being dispatched */
        struct gw_client_request client_reqs[GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX];
        size_t n_client_reqs;
        uint64_t next_client_id;
        struct gw_set_level set_levels[GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX];
        sd_event_source *client_timer;
        uint64_t client_timer_at;

        bool constructing;                /* inside glove_kernel_gateway_new: failures are returned, not notified */
        bool attached, released, stopping, agent_gone, finished;
        struct glove_error err;           /* the latest failure */
        const char *failed_upstream;      /* the upstream whose death at startup is err (its spec's name), or NULL */
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
/* The same with insert[0..insert_len) written inside value at offset at
 * (the members a modern result gains, glove_kernel_era_insert). */
int gw_queue_agent_response_with(struct glove_kernel_gateway *gw, const json_t *id, bool is_error, const char *value, size_t len,
                                 const char *insert, size_t insert_len, size_t at);
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
/* True when name, offered as an own name, reads as NAME.X of an upstream
 * that is not own-names: it is then neither listed nor routed as an own
 * name (the qualified name keeps its meaning). */
bool gw_own_name_shadows(struct glove_kernel_gateway *gw, const char *name);
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

/* mrtr.c: multi round-trip requests of MCP 2026-07-28 (basic/patterns/
 * mrtr.mdx) between modern upstreams and modern agents. */
/* Draws the seal key of this run. Returns 0, or -errno ("gateway.random"). */
int gw_mrtr_init(struct glove_kernel_gateway *gw, struct glove_error *err);
/* GLOVE_POLICY_CLIENT_* bits of a clientCapabilities object (borrowed;
 * non-objects give 0). */
unsigned gw_mrtr_features(const json_t *caps);
/* For a call c about to go to gu: records c->client_features (what the
 * dispatched request declared, cut to the policy's grant), and, for a
 * modern upstream, puts exactly those capabilities into params._meta
 * (upstream.c's envelope keeps them). Returns 0 or -ENOMEM. */
int gw_mrtr_envelope(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c, json_t *params);
/* True when m (an upstream's response) is a result with resultType
 * "input_required". */
bool gw_mrtr_is_input_required(const struct glove_mcp_message *m);
/* Decides m, an input_required result of gu for call c: relayed to the
 * agent with a seal as requestState (c finished "input_required"; returns
 * NULL), or turned into an error response written to *err (err->root
 * owned by the caller; returns err) that the caller handles as the
 * upstream's answer. Every input request's decision is on record
 * (client_request). Returns NULL also when out of memory for err. */
struct glove_mcp_message *gw_mrtr_result(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c,
                                         struct glove_mcp_message *m, struct glove_mcp_message *err);
/* Before dispatch of a modern request of method with params: when it
 * carries inputResponses or requestState, checks that the method may be
 * retried, that requestState is a seal of this run and that the answers
 * are objects, and keeps the seal's payload in gw->cur_seal. Returns true
 * to go on; false when the request was refused (answered -32602, on
 * record). */
bool gw_mrtr_retry(struct glove_kernel_gateway *gw, const json_t *id, const char *method, json_t *params);
/* At the forward of call c to gu with params (the upstream's copy): when
 * the dispatched request carried a seal, binds it (same upstream, method
 * and target), gives back the upstream's own requestState (or none) and
 * cuts inputResponses to the keys asked (on record: input_responses).
 * Returns 0, -EPERM (the seal is of another request) or -ENOMEM. */
int gw_mrtr_bind(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const struct glove_kernel_call *c, json_t *params);
/* The end of a request's dispatch: cur_seal released, cur_caps cleared. */
void gw_mrtr_done(struct glove_kernel_gateway *gw);
/* The legacy agent answered a translated input request (key) of the call
 * whose agent id is call_id: gathered, and when it was the last of the
 * round the call is retried with inputResponses (an error answer fails
 * the call, input_failed). A call that ended meanwhile: nothing. */
void gw_mrtr_input_answered(struct glove_kernel_gateway *gw, const json_t *call_id, const json_t *key, const struct glove_mcp_message *m);
/* A translated input request of the call call_id could not be answered:
 * the call fails with that error (code, message, reason, rule), if still
 * in flight. */
void gw_mrtr_input_failed(struct glove_kernel_gateway *gw, const json_t *call_id, int code, const char *message, const char *reason,
                          const char *rule);

/* listen.c: subscriptions/listen of MCP 2026-07-28 for modern agents. */
/* GW_LISTEN_* kinds some usable upstream announces listChanged for. */
unsigned gw_listen_offered(struct glove_kernel_gateway *gw);
/* True when id (borrowed) is an open listen's. */
bool gw_listen_has(const struct glove_kernel_gateway *gw, const json_t *id);
/* Opens a listen for the modern request id with params (its filter in
 * params.notifications, an object, else -32602): on record ("listen",
 * phase "open", the kinds honoured), acknowledged with
 * notifications/subscriptions/acknowledged; at most GW_LISTENS_MAX
 * (-32600 beyond). Never answered while open. */
void gw_listen_open(struct glove_kernel_gateway *gw, const json_t *id, json_t *params);
/* Ends the listen id (the agent's notifications/cancelled; how: why, for
 * the record). Returns false when no listen has that id. */
bool gw_listen_cancel(struct glove_kernel_gateway *gw, const json_t *id, const char *how);
/* method (a notifications/X/list_changed) goes to every open listen that
 * honours its kind, tagged with the listen's id. */
void gw_listen_notify(struct glove_kernel_gateway *gw, const char *method);
/* Every listen dropped (the agent is gone, or the gateway freed). */
void gw_listen_clear(struct glove_kernel_gateway *gw);

/* gateway_client.c */
/* The agent spoke 2026-07-28 and never sent initialize: the requests of
 * upstreams held for it are refused (agent_unsupported), as are later
 * ones (phase 2 relays them as input_required results). */
void gw_client_agent_modern(struct glove_kernel_gateway *gw);
int gw_client_init(struct glove_kernel_gateway *gw, struct glove_error *err);
void gw_client_free(struct glove_kernel_gateway *gw);
/* The client feature (GLOVE_POLICY_CLIENT_*) a server-to-client request
 * method needs, with the agent's capability key in *cap (borrowed static
 * text); 0 and NULL for another method or NULL. */
unsigned gw_client_method_feature(const char *method, const char **cap);
/* The capabilities to declare to upstream gu (by its features): a new
 * reference or NULL. */
json_t *gw_client_declared(unsigned features);
void gw_client_upstream_request(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m);
/* True when m answered a logging/setLevel Glove sent (consumed). */
bool gw_client_upstream_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m);
void gw_client_upstream_notification(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m);
void gw_client_upstream_gone(struct glove_kernel_gateway *gw, struct gw_upstream *gu);
/* True when m answered a request Glove sent the agent (consumed). */
bool gw_client_agent_response(struct glove_kernel_gateway *gw, struct glove_mcp_message *m);
/* A translated input request (mrtr.c): KEY's method with params (copied)
 * asked of the legacy agent as a request of Glove's own ("glove-N"), held
 * until it initialized; its answer goes to gw_mrtr_input_answered, its
 * failure (refusal, timeout, agent gone) to gw_mrtr_input_failed, both
 * naming call_id (the call's agent id, referenced). The decision must be
 * on record already. Returns 0, -ENOSPC (no slot of
 * GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX) or -ENOMEM. */
int gw_client_input_request(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const json_t *call_id, const char *key,
                            const char *method, const json_t *params);
/* The call call_id (borrowed) ended: its translated input requests still
 * open are ended too (the agent told notifications/cancelled for those it
 * got; client_result "cancelled"). */
void gw_client_input_cancel(struct glove_kernel_gateway *gw, const json_t *call_id);
void gw_client_agent_initialize(struct glove_kernel_gateway *gw, const json_t *params);
void gw_client_agent_notification(struct glove_kernel_gateway *gw, struct glove_mcp_message *m);
void gw_client_set_level(struct glove_kernel_gateway *gw, const json_t *id, json_t *params);
void gw_client_agent_gone(struct glove_kernel_gateway *gw);
/* Adds to the initialize result's capabilities what the ready upstreams
 * offer and policy allows: tools.listChanged, logging. */
void gw_client_announce(struct glove_kernel_gateway *gw, json_t *capabilities);
/* True when logging/setLevel has an upstream to go to. */
bool gw_client_logging_offered(struct glove_kernel_gateway *gw);
/* Appends the instructions policy relays to text (a growing string). */
int gw_client_instructions(struct glove_kernel_gateway *gw, char **text, size_t *len);

/* SPDX-License-Identifier: Apache-2.0 */
/* Server-to-client traffic under policy (gateway.h; docs/mcp-mediation.md,
 * "Client features"): the upstreams' sampling/createMessage,
 * elicitation/create and roots/list requests relayed to the agent with
 * Glove's own ids, the agent's answers routed back, logging/setLevel fanned
 * out, notifications/message and list_changed relayed, the agent's
 * notifications/roots/list_changed relayed, and the capabilities and
 * instructions announced on either side. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/time.h"
#include "glove/kernel/era.h"

static uint64_t timeout_us(const struct glove_kernel_gateway *gw) {
        return (uint64_t)gw->cfg.call_timeout_ms * 1000;
}

static const char *uname_of(const struct glove_kernel_gateway *gw, size_t i) {
        return glove_mcp_upstream_name(gw->ups[i].u);
}

unsigned gw_client_method_feature(const char *method, const char **cap) {
        if (!method)
                return *cap = NULL, 0;
        if (strcmp(method, "sampling/createMessage") == 0)
                return *cap = "sampling", GLOVE_POLICY_CLIENT_SAMPLING;
        if (strcmp(method, "elicitation/create") == 0)
                return *cap = "elicitation", GLOVE_POLICY_CLIENT_ELICITATION;
        if (strcmp(method, "roots/list") == 0)
                return *cap = "roots", GLOVE_POLICY_CLIENT_ROOTS;
        return *cap = NULL, 0;
}

json_t *gw_client_declared(unsigned features) {
        json_t *caps = json_object();
        if (caps && (features & GLOVE_POLICY_CLIENT_SAMPLING))
                json_object_set_new(caps, "sampling", json_object());
        if (caps && (features & GLOVE_POLICY_CLIENT_ELICITATION))
                json_object_set_new(caps, "elicitation", json_object());
        if (caps && (features & GLOVE_POLICY_CLIENT_ROOTS))
                json_object_set_new(caps, "roots", json_pack("{s:b}", "listChanged", 1));
        return caps;
}

/* ------------------------------------------------------------------ timer */

static int on_client_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void timer_arm(struct glove_kernel_gateway *gw, uint64_t deadline) {
        if (!gw->client_timer || (gw->client_timer_at && gw->client_timer_at <= deadline))
                return;
        sd_event_source_set_time(gw->client_timer, deadline);
        sd_event_source_set_enabled(gw->client_timer, SD_EVENT_ONESHOT);
        gw->client_timer_at = deadline;
}

int gw_client_init(struct glove_kernel_gateway *gw, struct glove_error *err) {
        int rr = sd_event_add_time(gw->event, &gw->client_timer, CLOCK_MONOTONIC, 0, 1000, on_client_timer, gw);
        if (rr >= 0)
                rr = sd_event_source_set_enabled(gw->client_timer, SD_EVENT_OFF);
        if (rr < 0)
                return glove_error_set(err, -rr, "gateway.event_loop", "event loop: %s", strerror(-rr));
        return 0;
}

/* ------------------------------------------------------------------ requests of upstreams */

static void request_clear(struct glove_kernel_gateway *gw, struct gw_client_request *q) {
        if (!q->used)
                return;
        json_decref(q->upstream_id);
        json_decref(q->params);
        json_decref(q->call_id);
        json_decref(q->key);
        memset(q, 0, sizeof(*q));
        gw->n_client_reqs--;
}

/* Answers the upstream's request with an error and audits the denial. */
static void refuse_request(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const json_t *id, const char *method,
                           int code, const char *message, const char *reason, const char *rule) {
        gw_audit(gw, "client_request",
                 json_pack("{s:s,s:s,s:O,s:s,s:s,s:s}", "upstream", glove_mcp_upstream_name(gu->u), "method", method, "id", id,
                           "decision", "deny", "reason", reason, "rule", rule));
        glove_mcp_upstream_send(gu->u, glove_mcp_rpc_error(id, code, message, reason, rule));
}

/* Refuses q before it reached the agent: to the upstream (its request), or,
 * for a translated input request, on record and to the call it belongs to. */
static void refuse_held(struct glove_kernel_gateway *gw, struct gw_client_request *q, int code, const char *message,
                        const char *reason, const char *rule) {
        struct gw_upstream *gu = &gw->ups[q->upstream];
        if (!q->call_id) {
                refuse_request(gw, gu, q->upstream_id, q->method, code, message, reason, rule);
                return;
        }
        gw_audit(gw, "client_request",
                 json_pack("{s:s,s:s,s:O,s:O,s:s,s:s,s:s}", "upstream", glove_mcp_upstream_name(gu->u), "method", q->method, "id",
                           q->call_id, "key", q->key, "decision", "deny", "reason", reason, "rule", rule));
        gw_mrtr_input_failed(gw, q->call_id, code, message, reason, rule);
}

/* Ends q (audited client_result with status), answering the upstream with
 * an error when code is not 0 (a translated input request: failing its
 * call), and telling the agent it is cancelled when it was sent there and
 * cancel_reason is not NULL. */
static void request_end(struct glove_kernel_gateway *gw, struct gw_client_request *q, const char *status, int code,
                        const char *message, const char *reason, const char *rule, const char *cancel_reason) {
        struct gw_upstream *gu = &gw->ups[q->upstream];
        gw_audit(gw, "client_result",
                 json_pack("{s:s,s:s,s:O,s:s,s:s,s:I}", "upstream", glove_mcp_upstream_name(gu->u), "method", q->method, "id",
                           q->call_id ? q->key : q->upstream_id, "glove_id", q->id, "status", status, "latency_us",
                           (json_int_t)(glove_time_monotonic_us() - q->start_us)));
        /* A translated input request fails its call once q is gone (the
         * call's end ends its other input requests). */
        json_t *failed_call = code && q->call_id ? json_incref(q->call_id) : NULL;
        if (code && !q->call_id)
                glove_mcp_upstream_send(gu->u, glove_mcp_rpc_error(q->upstream_id, code, message, reason, rule));
        if (q->sent && cancel_reason && gw->agent_in >= 0)
                gw_send_agent(gw, glove_mcp_rpc_request(NULL, "notifications/cancelled",
                                                        json_pack("{s:s,s:s}", "requestId", q->id, "reason", cancel_reason)));
        request_clear(gw, q);
        if (failed_call)
                gw_mrtr_input_failed(gw, failed_call, code, message, reason, rule);
        json_decref(failed_call);
}

/* Sends a request on to the agent (the decision on record first, fail
 * closed), or refuses it when the agent did not declare the capability in
 * its initialize (agent_unsupported). */
static void request_forward(struct glove_kernel_gateway *gw, struct gw_client_request *q) {
        const char *cap = NULL;
        (void)gw_client_method_feature(q->method, &cap);
        struct gw_upstream *gu = &gw->ups[q->upstream];
        /* An agent that spoke only 2026-07-28 takes no requests on its
         * channel (phase 2 relays them as input_required results). */
        /* A translated input request on a shared channel was decided with
         * its session's capabilities (the multiplexer checks them again). */
        bool session_decided = q->call_id && gw->cfg.shared_channel;
        if (!cap || (!session_decided && (!json_is_object(json_object_get(gw->agent_caps, cap)) || (!gw->agent_caps && gw->agent_sent_modern)))) {
                char rule[64];
                snprintf(rule, sizeof(rule), "agent capability %s", cap ? cap : "?");
                refuse_held(gw, q, GLOVE_RPC_METHOD_NOT_FOUND, "the agent does not offer this capability", "agent_unsupported", rule);
                request_clear(gw, q);
                return;
        }
        /* A translated input request's decision is on record already. */
        if (!q->call_id && gw_audit(gw, "client_request",
                     json_pack("{s:s,s:s,s:O,s:s,s:s,s:s}", "upstream", glove_mcp_upstream_name(gu->u), "method", q->method, "id",
                               q->upstream_id, "decision", "allow", "rule", cap, "glove_id", q->id)) < 0) {
                request_clear(gw, q);
                return;
        }
        json_t *id = json_string(q->id);
        json_t *params = q->params;
        q->params = NULL;
        q->sent = true;
        gw_send_agent(gw, glove_mcp_rpc_request(id, q->method, params));
        json_decref(id);
}

void gw_client_upstream_request(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        const char *cap = NULL;
        unsigned feature = gw_client_method_feature(m->method, &cap);
        if (!feature) {
                glove_mcp_upstream_send(gu->u, glove_mcp_rpc_error(m->id, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", NULL, NULL));
                return;
        }
        if (!(gu->features & feature)) {
                refuse_request(gw, gu, m->id, m->method, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", "policy_denied",
                               "default deny");
                return;
        }
        if (gw->agent_gone || gw->stopping) {
                refuse_request(gw, gu, m->id, m->method, GLOVE_RPC_INTERNAL_ERROR, "the agent is gone", "agent_unavailable",
                               "agent");
                return;
        }
        struct gw_client_request *q = NULL;
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX && !q; i++)
                if (!gw->client_reqs[i].used)
                        q = &gw->client_reqs[i];
        for (size_t i = 0; q && i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++) {
                const struct gw_client_request *o = &gw->client_reqs[i];
                if (o->used && o->upstream == gu->index && json_equal(o->upstream_id, m->id)) {
                        refuse_request(gw, gu, m->id, m->method, GLOVE_RPC_INVALID_REQUEST,
                                       "a request with this id is already in flight", "invalid_request", "request id in flight");
                        return;
                }
        }
        if (!q) {
                char rule[48];
                snprintf(rule, sizeof(rule), "in-flight bound %d", GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX);
                refuse_request(gw, gu, m->id, m->method, GLOVE_RPC_INVALID_REQUEST, "too many requests in flight",
                               "too_many_requests", rule);
                return;
        }
        memset(q, 0, sizeof(*q));
        q->used = true;
        gw->n_client_reqs++;
        q->upstream = gu->index;
        q->upstream_id = json_incref(m->id);
        q->params = m->params ? json_incref(m->params) : json_object();
        snprintf(q->method, sizeof(q->method), "%s", m->method);
        snprintf(q->id, sizeof(q->id), "glove-%" PRIu64, ++gw->next_client_id);
        q->start_us = glove_time_monotonic_us();
        timer_arm(gw, q->start_us + timeout_us(gw));
        if (gw->agent_initialized || (!gw->agent_caps && gw->agent_sent_modern))
                request_forward(gw, q); /* (refused there when the agent spoke only 2026-07-28) */
        /* else held until the agent's notifications/initialized (MCP: no
         * requests before it), or its timeout. */
}

void gw_client_input_cancel(struct glove_kernel_gateway *gw, const json_t *call_id) {
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++) {
                struct gw_client_request *q = &gw->client_reqs[i];
                if (!q->used || !q->call_id || !json_equal(q->call_id, call_id))
                        continue;
                if (q->sent)
                        request_end(gw, q, "cancelled", 0, NULL, NULL, NULL, "the request it was asked for ended");
                else
                        request_clear(gw, q);
        }
}

int gw_client_input_request(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const json_t *call_id, const char *key,
                            const char *method, const json_t *params) {
        struct gw_client_request *q = NULL;
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX && !q; i++)
                if (!gw->client_reqs[i].used)
                        q = &gw->client_reqs[i];
        if (!q || strlen(method) >= sizeof(q->method))
                return -ENOSPC;
        memset(q, 0, sizeof(*q));
        q->used = true;
        gw->n_client_reqs++;
        q->upstream = gu->index;
        q->call_id = json_incref((json_t *)call_id);
        q->key = json_string(key);
        q->params = params ? json_deep_copy(params) : json_object();
        if (!q->key || !q->params) {
                request_clear(gw, q);
                return -ENOMEM;
        }
        /* On a shared channel the multiplexer sends it to the session of
         * the request it is asked for, and to no other. */
        if (gw->cfg.shared_channel) {
                json_t *meta = json_object_get(q->params, "_meta");
                if (!json_is_object(meta) && json_object_set_new(q->params, "_meta", meta = json_object()) < 0)
                        meta = NULL;
                if (!meta || json_object_set(meta, GLOVE_KERNEL_META_RELATED, (json_t *)call_id) < 0) {
                        request_clear(gw, q);
                        return -ENOMEM;
                }
        }
        snprintf(q->method, sizeof(q->method), "%s", method);
        snprintf(q->id, sizeof(q->id), "glove-%" PRIu64, ++gw->next_client_id);
        q->start_us = glove_time_monotonic_us();
        timer_arm(gw, q->start_us + timeout_us(gw));
        if (gw->agent_initialized)
                request_forward(gw, q);
        return 0;
}

bool gw_client_agent_response(struct glove_kernel_gateway *gw, struct glove_mcp_message *m) {
        if (!json_is_string(m->id))
                return false;
        struct gw_client_request *q = NULL;
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX && !q; i++) {
                struct gw_client_request *c = &gw->client_reqs[i];
                if (c->used && c->sent && strlen(c->id) == json_string_length(m->id) && strcmp(c->id, json_string_value(m->id)) == 0)
                        q = c;
        }
        if (!q)
                return false;
        struct gw_upstream *gu = &gw->ups[q->upstream];
        bool is_error = json_object_get(m->root, "error") != NULL;
        if (q->call_id) {
                /* A translated input request: the answer is the call's
                 * (one that is not an object fails it). */
                json_t *call_id = json_incref(q->call_id), *key = json_incref(q->key);
                request_end(gw, q, is_error ? "error" : json_is_object(json_object_get(m->root, "result")) ? "ok" : "invalid", 0, NULL,
                            NULL, NULL, NULL);
                gw_mrtr_input_answered(gw, call_id, key, m);
                json_decref(call_id);
                json_decref(key);
                return true;
        }
        json_t *out = json_pack("{s:s,s:O}", "jsonrpc", "2.0", "id", q->upstream_id);
        if (out)
                json_object_set(out, is_error ? "error" : "result", json_object_get(m->root, is_error ? "error" : "result"));
        request_end(gw, q, is_error ? "error" : "ok", 0, NULL, NULL, NULL, NULL);
        glove_mcp_upstream_send(gu->u, out);
        return true;
}

/* ------------------------------------------------------------------ logging/setLevel */

static void set_level_clear(struct gw_set_level *sl) {
        json_decref(sl->agent_id);
        memset(sl, 0, sizeof(*sl));
}

/* A 2026-07-28 upstream has no logging/setLevel (its level is per
 * request, and Glove stamps none): it takes no part, as one without the
 * logging capability (docs/mcp-mediation.md, "Protocol revisions of
 * upstreams"). */
static bool takes_logging(const struct gw_upstream *gu) {
        return !gu->left_out && (gu->features & GLOVE_POLICY_CLIENT_LOGGING) && !glove_mcp_upstream_modern(gu->u) &&
               glove_mcp_upstream_state(gu->u) == GLOVE_MCP_UPSTREAM_READY && glove_mcp_upstream_offers(gu->u, "logging", NULL);
}

bool gw_client_logging_offered(struct glove_kernel_gateway *gw) {
        for (size_t i = 0; i < gw->n_ups; i++)
                if (takes_logging(&gw->ups[i]))
                        return true;
        return false;
}

void gw_client_set_level(struct glove_kernel_gateway *gw, const json_t *id, json_t *params) {
        if (!gw_client_logging_offered(gw)) {
                gw_agent_error(gw, id, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", NULL, NULL);
                return;
        }
        struct gw_set_level *sl = NULL;
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX && !sl; i++)
                if (!gw->set_levels[i].used)
                        sl = &gw->set_levels[i];
        if (!sl) {
                gw_agent_error(gw, id, GLOVE_RPC_INVALID_REQUEST, "too many logging/setLevel requests in flight", "invalid_params",
                               "in-flight bound");
                return;
        }
        sl->used = true;
        sl->agent_id = json_incref((json_t *)id);
        sl->start_us = glove_time_monotonic_us();
        json_t *names = json_array();
        for (size_t i = 0; i < gw->n_ups; i++) {
                struct gw_upstream *gu = &gw->ups[i];
                if (!takes_logging(gu))
                        continue;
                sl->pending[i] = true;
                sl->upstream_id[i] = glove_mcp_upstream_next_id(gu->u);
                sl->waiting++;
                json_array_append_new(names, json_string(glove_mcp_upstream_name(gu->u)));
        }
        json_t *level = params ? json_object_get(params, "level") : NULL;
        if (gw_audit(gw, "logging_set_level", json_pack("{s:O,s:O,s:o}", "id", id, "level", level ? level : json_null(),
                                                        "upstreams", names)) < 0) {
                set_level_clear(sl);
                return;
        }
        timer_arm(gw, sl->start_us + timeout_us(gw));
        for (size_t i = 0; i < gw->n_ups && sl->used; i++) {
                if (!sl->pending[i])
                        continue;
                json_t *uid = json_integer(sl->upstream_id[i]);
                glove_mcp_upstream_send(gw->ups[i].u,
                                        glove_mcp_rpc_request(uid, "logging/setLevel", params ? json_incref(params) : json_object()));
                json_decref(uid);
        }
}

/* One upstream's part of sl is over: an error (code != 0) answers the
 * agent at once; the last success answers {}. */
static void set_level_part(struct glove_kernel_gateway *gw, struct gw_set_level *sl, size_t upstream, const json_t *error,
                           int code, const char *message, const char *reason) {
        sl->pending[upstream] = false;
        sl->waiting--;
        if (error || code) {
                if (error) {
                        json_t *out = json_pack("{s:s,s:O,s:O}", "jsonrpc", "2.0", "id", sl->agent_id, "error", error);
                        gw_send_agent(gw, out);
                } else {
                        gw_agent_error(gw, sl->agent_id, code, message, reason, uname_of(gw, upstream));
                }
                set_level_clear(sl);
                return;
        }
        if (sl->waiting == 0) {
                gw_send_agent(gw, glove_mcp_rpc_result(sl->agent_id, json_object()));
                set_level_clear(sl);
        }
}

bool gw_client_upstream_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        if (!json_is_integer(m->id))
                return false;
        int64_t id = json_integer_value(m->id);
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX; i++) {
                struct gw_set_level *sl = &gw->set_levels[i];
                if (!sl->used || !sl->pending[gu->index] || sl->upstream_id[gu->index] != id)
                        continue;
                set_level_part(gw, sl, gu->index, json_object_get(m->root, "error"), 0, NULL, NULL);
                return true;
        }
        return false;
}

/* ------------------------------------------------------------------ timeouts */

static int on_client_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        struct glove_kernel_gateway *gw = userdata;
        gw->client_timer_at = 0;
        uint64_t now = glove_time_monotonic_us(), next = 0;
        char rule[64];
        if (gw->cfg.call_timeout_rule)
                snprintf(rule, sizeof(rule), "%s", gw->cfg.call_timeout_rule);
        else
                snprintf(rule, sizeof(rule), "call_timeout_ms %lld", (long long)gw->cfg.call_timeout_ms);
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++) {
                struct gw_client_request *q = &gw->client_reqs[i];
                if (!q->used)
                        continue;
                uint64_t deadline = q->start_us + timeout_us(gw);
                if (deadline <= now && !q->sent) {
                        /* Held: the agent never finished initializing. */
                        refuse_held(gw, q, GLOVE_RPC_UPSTREAM_TIMEOUT, "the agent did not initialize in time", "agent_timeout", rule);
                        request_clear(gw, q);
                } else if (deadline <= now)
                        request_end(gw, q, "timeout", GLOVE_RPC_UPSTREAM_TIMEOUT, "the agent did not answer in time", "agent_timeout",
                                    rule, "timeout");
                else if (!next || deadline < next)
                        next = deadline;
        }
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX; i++) {
                struct gw_set_level *sl = &gw->set_levels[i];
                if (!sl->used)
                        continue;
                uint64_t deadline = sl->start_us + timeout_us(gw);
                if (deadline <= now) {
                        gw_agent_error(gw, sl->agent_id, GLOVE_RPC_UPSTREAM_TIMEOUT, "the upstream did not answer in time",
                                       "upstream_timeout", rule);
                        set_level_clear(sl);
                } else if (!next || deadline < next)
                        next = deadline;
        }
        if (next)
                timer_arm(gw, next);
        return 0;
}

/* ------------------------------------------------------------------ notifications */

/* Relays a notification of upstream gu to the agent unless the agent's
 * backlog is over GLOVE_KERNEL_GATEWAY_NOTIFY_PENDING_MAX: then it is
 * dropped, audited once per upstream until the backlog is under it again. */
static void relay_to_agent(struct glove_kernel_gateway *gw, struct gw_upstream *gu, json_t *msg, const char *method) {
        if (gw->agent_in < 0 || !gw->agent_initialized) {
                json_decref(msg);
                return;
        }
        if (gw->agent_writer.buf.len > GLOVE_KERNEL_GATEWAY_NOTIFY_PENDING_MAX) {
                json_decref(msg);
                if (!gu->backlog_dropping)
                        gw_audit(gw, "notification_dropped",
                                 json_pack("{s:s,s:s,s:s,s:I}", "from", glove_mcp_upstream_name(gu->u), "method", method, "reason",
                                           "agent_backlog", "pending", (json_int_t)gw->agent_writer.buf.len));
                gu->backlog_dropping = true;
                return;
        }
        gu->backlog_dropping = false;
        gw_send_agent(gw, msg);
}

/* notifications/message: the upstream's name goes into "logger" (NAME, or
 * NAME.LOGGER when it gave one) so that the agent can tell who speaks. */
static void relay_log(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        if (!(gu->features & GLOVE_POLICY_CLIENT_LOGGING) || !json_is_object(m->params))
                return;
        const char *name = glove_mcp_upstream_name(gu->u);
        json_t *params = json_deep_copy(m->params);
        if (!params)
                return;
        json_t *logger = json_object_get(params, "logger");
        json_t *qualified = NULL;
        if (json_is_string(logger)) {
                size_t n = strlen(name) + 1 + json_string_length(logger);
                _cleanup_free_ char *buf = malloc(n + 1);
                if (buf) {
                        memcpy(buf, name, strlen(name));
                        buf[strlen(name)] = '.';
                        memcpy(buf + strlen(name) + 1, json_string_value(logger), json_string_length(logger));
                        qualified = json_stringn(buf, n);
                }
        } else {
                qualified = json_string(name);
        }
        if (!qualified) {
                json_decref(params);
                return;
        }
        json_object_set_new(params, "logger", qualified);
        relay_to_agent(gw, gu, glove_mcp_rpc_request(NULL, "notifications/message", params), "notifications/message");
}

/* The upstream cancels a request of its own that Glove holds. */
static void upstream_cancelled(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        json_t *rid = json_is_object(m->params) ? json_object_get(m->params, "requestId") : NULL;
        for (size_t i = 0; rid && i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++) {
                struct gw_client_request *q = &gw->client_reqs[i];
                if (q->used && q->upstream == gu->index && json_equal(q->upstream_id, rid)) {
                        if (!q->sent) {
                                request_clear(gw, q);
                                return;
                        }
                        request_end(gw, q, "cancelled", 0, NULL, NULL, NULL, "cancelled by the upstream");
                        return;
                }
        }
}

void gw_client_upstream_notification(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        const char *method = m->method;
        if (strcmp(method, "notifications/message") == 0) {
                relay_log(gw, gu, m);
        } else if (strcmp(method, "notifications/cancelled") == 0) {
                upstream_cancelled(gw, gu, m);
        } else if (strcmp(method, "notifications/resources/list_changed") == 0 ||
                   strcmp(method, "notifications/prompts/list_changed") == 0) {
                /* Relayed when the upstream announced that capability. */
                const char *cap = strstr(method, "resources") ? "resources" : "prompts";
                if (gw->released && glove_mcp_upstream_offers(gu->u, cap, NULL)) {
                        relay_to_agent(gw, gu, glove_mcp_rpc_request(NULL, method, NULL), method);
                        gw_listen_notify(gw, method);
                }
        }
        /* Others (resources/updated, ...) are not relayed. */
}

void gw_client_agent_notification(struct glove_kernel_gateway *gw, struct glove_mcp_message *m) {
        if (strcmp(m->method, "notifications/initialized") == 0) {
                if (gw->agent_initialized)
                        return;
                gw->agent_initialized = true;
                for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++)
                        if (gw->client_reqs[i].used && !gw->client_reqs[i].sent)
                                request_forward(gw, &gw->client_reqs[i]);
                return;
        }
        if (strcmp(m->method, "notifications/roots/list_changed") != 0)
                return;
        json_t *to = json_array();
        for (size_t i = 0; i < gw->n_ups; i++) {
                struct gw_upstream *gu = &gw->ups[i];
                /* 2026-07-28 has no roots/list_changed: not sent there. */
                if (!(gu->features & GLOVE_POLICY_CLIENT_ROOTS) || gu->left_out || glove_mcp_upstream_modern(gu->u) ||
                    glove_mcp_upstream_state(gu->u) == GLOVE_MCP_UPSTREAM_DEAD)
                        continue;
                json_array_append_new(to, json_string(glove_mcp_upstream_name(gu->u)));
        }
        if (gw_audit(gw, "client_notification", json_pack("{s:s,s:s,s:O}", "from", "agent", "method", m->method, "to", to)) < 0) {
                json_decref(to);
                return;
        }
        size_t k;
        json_t *n;
        json_array_foreach(to, k, n) {
                for (size_t i = 0; i < gw->n_ups; i++)
                        if (strcmp(glove_mcp_upstream_name(gw->ups[i].u), json_string_value(n)) == 0)
                                glove_mcp_upstream_send(gw->ups[i].u, glove_mcp_rpc_request(NULL, m->method, NULL));
        }
        json_decref(to);
}

void gw_client_agent_modern(struct glove_kernel_gateway *gw) {
        if (gw->agent_caps)
                return; /* it sent initialize too (a shared channel): its capabilities stand */
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++)
                if (gw->client_reqs[i].used && !gw->client_reqs[i].sent)
                        request_forward(gw, &gw->client_reqs[i]);
}

void gw_client_agent_initialize(struct glove_kernel_gateway *gw, const json_t *params) {
        json_t *caps = params ? json_object_get(params, "capabilities") : NULL;
        json_decref(gw->agent_caps);
        gw->agent_caps = json_is_object(caps) ? json_deep_copy(caps) : json_object();
}

/* ------------------------------------------------------------------ ends */

void gw_client_upstream_gone(struct glove_kernel_gateway *gw, struct gw_upstream *gu) {
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++) {
                struct gw_client_request *q = &gw->client_reqs[i];
                if (q->used && q->upstream == gu->index && q->sent)
                        request_end(gw, q, "unavailable", 0, NULL, NULL, NULL, "the upstream is gone");
                else if (q->used && q->upstream == gu->index)
                        request_clear(gw, q);
        }
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX; i++) {
                struct gw_set_level *sl = &gw->set_levels[i];
                if (sl->used && sl->pending[gu->index])
                        set_level_part(gw, sl, gu->index, NULL, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running",
                                       "upstream_unavailable");
        }
}

void gw_client_agent_gone(struct glove_kernel_gateway *gw) {
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++) {
                struct gw_client_request *q = &gw->client_reqs[i];
                if (q->used && q->sent)
                        request_end(gw, q, "agent_exited", GLOVE_RPC_INTERNAL_ERROR, "the agent is gone", "agent_unavailable",
                                    "agent", NULL);
                else if (q->used) {
                        refuse_held(gw, q, GLOVE_RPC_INTERNAL_ERROR, "the agent is gone", "agent_unavailable", "agent");
                        request_clear(gw, q);
                }
        }
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX; i++)
                if (gw->set_levels[i].used)
                        set_level_clear(&gw->set_levels[i]);
}

void gw_client_free(struct glove_kernel_gateway *gw) {
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX; i++)
                request_clear(gw, &gw->client_reqs[i]);
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_SET_LEVEL_MAX; i++)
                if (gw->set_levels[i].used)
                        set_level_clear(&gw->set_levels[i]);
        for (size_t i = 0; i < GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX; i++) {
                json_decref(gw->ups[i].client_caps);
                gw->ups[i].client_caps = NULL;
        }
        json_decref(gw->agent_caps);
        gw->agent_caps = NULL;
        gw->client_timer = sd_event_source_disable_unref(gw->client_timer);
}

/* ------------------------------------------------------------------ initialize towards the agent */

static bool usable(const struct gw_upstream *gu) {
        return !gu->left_out && glove_mcp_upstream_state(gu->u) != GLOVE_MCP_UPSTREAM_DEAD;
}

void gw_client_announce(struct glove_kernel_gateway *gw, json_t *capabilities) {
        bool list_changed = false;
        for (size_t i = 0; i < gw->n_ups; i++)
                list_changed = list_changed || (usable(&gw->ups[i]) && glove_mcp_upstream_offers(gw->ups[i].u, "tools", "listChanged"));
        json_t *tools = json_object_get(capabilities, "tools");
        if (json_is_object(tools)) {
                if (list_changed)
                        json_object_set_new(tools, "listChanged", json_true());
                else
                        json_object_del(tools, "listChanged");
        }
        if (gw_client_logging_offered(gw))
                json_object_set_new(capabilities, "logging", json_object());
}

static int append(char **text, size_t *len, const char *s, size_t n) {
        char *p = realloc(*text, *len + n + 1);
        if (!p)
                return -ENOMEM;
        memcpy(p + *len, s, n);
        *len += n;
        p[*len] = '\0';
        *text = p;
        return 0;
}

int gw_client_instructions(struct glove_kernel_gateway *gw, char **text, size_t *len) {
        for (size_t i = 0; i < gw->n_ups; i++) {
                const struct gw_upstream *gu = &gw->ups[i];
                const char *instr = glove_mcp_upstream_instructions(gu->u);
                if (!(gu->features & GLOVE_POLICY_CLIENT_INSTRUCTIONS) || !usable(gu) || !instr)
                        continue;
                char head[GLOVE_MCP_UPSTREAM_NAME_MAX + 64];
                int w = snprintf(head, sizeof(head), "%sInstructions of the upstream %s (its tools are %s.TOOL):\n",
                                 *len ? "\n\n" : "", glove_mcp_upstream_name(gu->u), glove_mcp_upstream_name(gu->u));
                if (w < 0 || append(text, len, head, strlen(head)) < 0 || append(text, len, instr, strlen(instr)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

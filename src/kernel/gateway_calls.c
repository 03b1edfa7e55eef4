/* SPDX-License-Identifier: Apache-2.0 */
/* tools/call: the policy decision, forwarding, correlation of the response,
 * timeouts and cancellation (gateway.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_internal.h"
#include "glove/kernel/era.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/time.h"

static uint64_t timeout_us(const struct glove_kernel_gateway *gw) {
        return (uint64_t)gw->cfg.call_timeout_ms * 1000;
}

static json_t *call_result_fields(struct glove_kernel_call *c, const char *status) {
        return json_pack("{s:O,s:s,s:s,s:I}", "id", c->agent_id, "tool", c->tool, "upstream_status", status, "latency_us",
                         (json_int_t)(glove_time_monotonic_us() - c->start_us));
}

static void call_finish(struct glove_kernel_gateway *gw, struct glove_kernel_call *c, const char *status) {
        /* A translated call's open input requests end with it (mrtr.c). */
        if (c->answers)
                gw_client_input_cancel(gw, c->agent_id);
        /* The shared timer is left as it is: if it fires for a call that is
         * gone, the scan finds nothing due and re-arms. */
        if (gw_auditing(gw) && !c->internal)
                gw_audit(gw, c->kind == GLOVE_KERNEL_REQUEST_TOOL_CALL ? "call_result" : "request_result",
                         c->kind == GLOVE_KERNEL_REQUEST_TOOL_CALL ? call_result_fields(c, status)
                                                                    : gw_request_result_fields(c, status));
        glove_kernel_calls_remove(gw->calls, c);
}

void gw_call_finish(struct glove_kernel_gateway *gw, struct glove_kernel_call *c, const char *status) {
        call_finish(gw, c, status);
}

/* Arms the shared call timer at deadline when it is off or set later. */
static void call_timer_arm(struct glove_kernel_gateway *gw, uint64_t deadline) {
        if (!gw->call_timer || (gw->call_timer_at && gw->call_timer_at <= deadline))
                return;
        sd_event_source_set_time(gw->call_timer, deadline);
        sd_event_source_set_enabled(gw->call_timer, SD_EVENT_ONESHOT);
        gw->call_timer_at = deadline;
}

void gw_call_started(struct glove_kernel_gateway *gw, struct glove_kernel_call *c) {
        c->start_us = glove_time_monotonic_us();
        call_timer_arm(gw, c->start_us + timeout_us(gw));
}

static void call_timeout(struct glove_kernel_gateway *gw, struct glove_kernel_call *c) {
        struct glove_mcp_upstream *u = gw->ups[c->upstream].u;
        char rule[64];
        if (gw->cfg.call_timeout_rule)
                snprintf(rule, sizeof(rule), "%s", gw->cfg.call_timeout_rule);
        else
                snprintf(rule, sizeof(rule), "call_timeout_ms %lld", (long long)gw->cfg.call_timeout_ms);
        if (!c->internal)
                gw_agent_error(gw, c->agent_id, GLOVE_RPC_UPSTREAM_TIMEOUT, "the upstream did not answer in time", "upstream_timeout",
                               rule);
        /* Finished before the send: a send that finds the upstream dead
         * fails its calls at once, and this one must not be among them. */
        int64_t upstream_id = c->upstream_id;
        size_t upstream = c->upstream;
        bool internal = c->internal;
        call_finish(gw, c, "timeout");
        glove_kernel_calls_bury(gw->calls, upstream, upstream_id, GLOVE_KERNEL_TOMBSTONE_TIMEOUT);
        if (internal) { /* Glove's own start-up listing: the start fails */
                glove_error_set(&gw->err, ETIMEDOUT, "upstream.start", "upstream %s did not answer prompts/list within %lld ms",
                                glove_mcp_upstream_name(u), (long long)gw->cfg.call_timeout_ms);
                gw_fail(gw);
        }
        json_t *params = json_pack("{s:I,s:s}", "requestId", (json_int_t)upstream_id, "reason", "timeout");
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(NULL, "notifications/cancelled", params));
}

int gw_on_call_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        struct glove_kernel_gateway *gw = userdata;
        gw->call_timer_at = 0;
        uint64_t now = glove_time_monotonic_us(), next = 0;
        for (size_t i = 0, seen = 0; i < GLOVE_KERNEL_CALLS_MAX && seen < gw->calls->count; i++) {
                struct glove_kernel_call *c = &gw->calls->slots[i];
                if (!c->used)
                        continue;
                uint64_t deadline = c->start_us + timeout_us(gw);
                if (deadline <= now) {
                        call_timeout(gw, c); /* removes c; count drops, so do not count it */
                        continue;
                }
                seen++;
                if (!next || deadline < next)
                        next = deadline;
        }
        if (next)
                call_timer_arm(gw, next);
        return 0;
}

void gw_fail_calls_of(struct glove_kernel_gateway *gw, size_t upstream) {
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && gw->calls->count > 0; i++) {
                struct glove_kernel_call *c = &gw->calls->slots[i];
                if (!c->used || c->upstream != upstream)
                        continue;
                if (!c->internal)
                        gw_agent_error(gw, c->agent_id, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running",
                                       "upstream_unavailable", glove_mcp_upstream_name(gw->ups[upstream].u));
                call_finish(gw, c, "unavailable");
        }
}

void gw_hold_upstreams(struct glove_kernel_gateway *gw, bool hold) {
        for (size_t i = 0; i < gw->n_ups; i++)
                glove_mcp_upstream_hold(gw->ups[i].u, hold);
}

void gw_finish_all_calls(struct glove_kernel_gateway *gw, const char *status) {
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && gw->calls->count > 0; i++)
                if (gw->calls->slots[i].used)
                        call_finish(gw, &gw->calls->slots[i], status);
}

/* SHA-256 of the call's arguments as given, whatever their JSON type (a
 * string or null that is refused is digested too), encoded compactly with
 * sorted keys (reals with 17 significant digits); of "{}" when absent.
 * out receives 64 lowercase hex digits and a NUL. Returns 0, or a negative
 * errno (out of memory, digest failure) with out empty. */
static int hash_arguments(const json_t *args, char out[65]) {
        out[0] = '\0';
        /* JSON_ENCODE_ANY: without it jansson encodes only objects and arrays.
         * The encoding holds no raw NUL ("\u0000" stays escaped), so strlen
         * is its length. */
        _cleanup_free_ char *enc =
                args ? json_dumps(args, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17)) : strdup("{}");
        uint8_t d[32];
        if (!enc)
                return -ENOMEM;
        int rr = glove_digest_sha256(enc, strlen(enc), d, NULL);
        if (rr < 0)
                return rr;
        glove_digest_hex_encode(d, sizeof(d), out, 65);
        return 0;
}

int gw_hash_arguments(const json_t *args, char out[65]) {
        return hash_arguments(args, out);
}

/* The fields of a call record, or NULL when they cannot be built (out of
 * memory, or sha empty because the digest failed): gw_audit() then fails
 * the gateway, so a decision is never recorded without its digest. */
static json_t *decision_fields(struct glove_kernel_gateway *gw, const json_t *id, const char *tool, const char *decision,
                               const char *reason, const char *rule, const json_t *args, const char *sha) {
        if (!sha[0])
                return NULL;
        json_t *f = json_pack("{s:O,s:s,s:s,s:s}", "id", id, "tool", tool, "decision", decision, "rule", rule);
        if (!f)
                return NULL;
        if ((reason && json_object_set_new(f, "reason", json_string(reason)) < 0) ||
            json_object_set_new(f, "arguments_sha256", json_string(sha)) < 0 ||
            (gw->cfg.audit_arguments && json_object_set_new(f, "arguments", args ? json_deep_copy(args) : json_object()) < 0)) {
                json_decref(f);
                return NULL;
        }
        return f;
}

/* Refuses a tools/call: audit first (the refusal stands either way), then
 * answer the agent. */
static void refuse_call(struct glove_kernel_gateway *gw, const json_t *id, const char *tool, int code, const char *message,
                        const char *reason, const char *rule, const json_t *args) {
        if (gw_auditing(gw)) {
                char sha[65];
                (void)hash_arguments(args, sha); /* on failure sha is empty and the record fails closed */
                gw_audit(gw, "call", decision_fields(gw, id, tool, "deny", reason, rule, args, sha));
        }
        gw_agent_error(gw, id, code, message, reason, rule);
}

void gw_refuse_duplicate(struct glove_kernel_gateway *gw, const json_t *id, const char *method, json_t *params) {
        if (strcmp(method, "tools/call") == 0 && gw_auditing(gw)) {
                json_t *args = params ? json_object_get(params, "arguments") : NULL;
                const char *name = glove_mcp_string(params ? json_object_get(params, "name") : NULL);
                char sha[65];
                (void)hash_arguments(args, sha); /* on failure sha is empty and the record fails closed */
                gw_audit(gw, "call",
                         decision_fields(gw, id, name && strlen(name) < GLOVE_KERNEL_TOOL_MAX ? name : "(none)", "deny",
                                         "invalid_params", "request id in flight", args, sha));
        }
        /* id null (JSON-RPC: an Invalid Request whose id cannot be used):
         * the one answer with this id stays the first request's. */
        json_t *e = glove_mcp_rpc_error(NULL, GLOVE_RPC_INVALID_REQUEST, "a request with this id is already in flight",
                                        "invalid_params", "request id in flight");
        json_t *data = e ? json_object_get(json_object_get(e, "error"), "data") : NULL;
        if (data)
                json_object_set(data, "id", (json_t *)id);
        gw_send_agent(gw, e);
}

/* The upstream named by the UPSTREAM part of name, or NULL. */
static struct gw_upstream *find_upstream(struct glove_kernel_gateway *gw, const char *name, const char **tool) {
        size_t ulen;
        if (glove_kernel_split_name(name, &ulen, tool) < 0)
                return NULL;
        for (size_t i = 0; i < gw->n_ups; i++) {
                const char *un = glove_mcp_upstream_name(gw->ups[i].u);
                if (strlen(un) == ulen && memcmp(un, name, ulen) == 0)
                        return &gw->ups[i];
        }
        return NULL;
}

/* Registers and forwards an allowed call to gu. */
static void forward_call(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const json_t *id, const char *name,
                         const char *tool, json_t *params, const json_t *args, const char *rule) {
        struct glove_mcp_upstream *u = gu->u;
        int e;
        struct glove_kernel_call *c = glove_kernel_calls_add(gw->calls, id, gu->index, glove_mcp_upstream_next_id(u), &e);
        if (!c) {
                if (e == -EEXIST) /* refused before any dispatch (gw_refuse_duplicate); kept for safety */
                        gw_refuse_duplicate(gw, id, "tools/call", params);
                else
                        refuse_call(gw, id, name, GLOVE_RPC_INVALID_REQUEST, "too many calls in flight", "invalid_params",
                                    "in-flight bound", args);
                return;
        }
        c->owner = gw;
        c->verbatim = true; /* a tools/call result is relayed as it is */
        c->modern = gw->cur_modern;
        snprintf(c->tool, sizeof(c->tool), "%s", name);
        /* Every call: a modern retry's seal bound to this route; the
         * capabilities the request declared passed on (mrtr.c). */
        int b = c->modern ? gw_mrtr_bind(gw, gu, c, params) : 0;
        if (b >= 0)
                b = gw_mrtr_envelope(gw, gu, c, params);
        if (b < 0) {
                glove_kernel_calls_remove(gw->calls, c);
                refuse_call(gw, id, name, GLOVE_RPC_INVALID_PARAMS,
                            b == -EPERM ? "requestState belongs to another request (method, upstream or target differ)"
                                        : "out of memory",
                            "invalid_params", "params.requestState", args);
                return;
        }
        if (gw_auditing(gw))
                (void)hash_arguments(args, c->arguments_sha256); /* only audit records use it; empty fails them closed */
        json_t *meta = json_object_get(params, "_meta");
        json_t *token = json_is_object(meta) ? json_object_get(meta, "progressToken") : NULL;
        if (token)
                c->progress_token = json_incref(token);
        /* Fail closed: the decision is on record before the call leaves. */
        if (gw_auditing(gw) && gw_audit(gw, "call", decision_fields(gw, id, name, "allow", NULL, rule, args, c->arguments_sha256)) < 0) {
                gw_agent_error(gw, id, GLOVE_RPC_INTERNAL_ERROR, "audit append failed; the call was not forwarded", NULL, NULL);
                glove_kernel_calls_remove(gw->calls, c);
                return;
        }
        /* The agent's params are forwarded as they are (the message is ours
         * and not used after this), with the tool's own name; json_string
         * copies tool before the old name is released. */
        json_t *fwd = json_incref(params);
        json_object_set_new(fwd, "name", json_string(tool));
        if (c->retry_params) /* kept for translated rounds: the upstream's own name too */
                json_object_set(c->retry_params, "name", json_object_get(fwd, "name"));
        json_t *uid = json_integer(c->upstream_id);
        c->start_us = glove_time_monotonic_us();
        call_timer_arm(gw, c->start_us + timeout_us(gw));
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(uid, "tools/call", fwd));
        json_decref(uid);
}

void gw_handle_tools_call(struct glove_kernel_gateway *gw, const json_t *id, json_t *params) {
        json_t *jname = params ? json_object_get(params, "name") : NULL;
        json_t *args = params ? json_object_get(params, "arguments") : NULL;
        const char *name = glove_mcp_string(jname);
        if (json_is_string(jname) && !name) {
                refuse_call(gw, id, "(contains NUL)", GLOVE_RPC_INVALID_PARAMS, "the tool name contains NUL", "invalid_params",
                            "params.name", args);
                return;
        }
        if (!name || strlen(name) >= GLOVE_KERNEL_TOOL_MAX) {
                refuse_call(gw, id, name ? "(too long)" : "(none)", GLOVE_RPC_INVALID_PARAMS,
                            "tools/call needs params.name, a tool name string", "invalid_params", "params.name", args);
                return;
        }
        const char *tool = name;
        struct gw_upstream *gu = gw_own_name_upstream(gw, GLOVE_KERNEL_REQUEST_TOOL_CALL, name);
        if (!gu) {
                gu = find_upstream(gw, name, &tool);
                if (gu && gu->own_names)
                        gu = NULL; /* its tools have their own names only */
        }
        bool dead = gu && glove_mcp_upstream_state(gu->u) == GLOVE_MCP_UPSTREAM_DEAD;
        if (!gu || (!dead && !glove_mcp_upstream_has_tool(gu->u, tool))) {
                refuse_call(gw, id, name, GLOVE_RPC_INVALID_PARAMS, "unknown tool", "unknown_tool", "no such upstream tool", args);
                return;
        }
        const char *uname = glove_mcp_upstream_name(gu->u);
        /* Records name the tool as rules do (NAME.TOOL), also when the
         * agent called it by its own name (--upstream-own-names). */
        char qualified[sizeof(((struct glove_kernel_call *)0)->tool)];
        if (gu->own_names) {
                int w = snprintf(qualified, sizeof(qualified), "%s.%s", uname, tool);
                if (w > 0 && (size_t)w < sizeof(qualified))
                        name = qualified;
        }
        struct glove_policy_verdict v;
        glove_policy_check_call(gw->cfg.policy, uname, tool, args, &v);
        if (!v.allowed) {
                bool bad_args = strcmp(v.reason, "invalid_params") == 0;
                refuse_call(gw, id, name, bad_args ? GLOVE_RPC_INVALID_PARAMS : GLOVE_RPC_POLICY_DENIED,
                            bad_args ? "tools/call arguments must be an object" : "the call is not allowed by policy", v.reason,
                            v.rule, args);
                return;
        }
        if (dead) {
                refuse_call(gw, id, name, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running", "upstream_unavailable",
                            uname, args);
                return;
        }
        forward_call(gw, gu, id, name, tool, params, args, v.rule);
}

/* The agent cancels a call in flight (MCP: notifications/cancelled): it is
 * answered nothing (the spec has the receiver send no response), its slot
 * is freed at once (SDK-based upstreams never answer a cancelled request,
 * so waiting for the answer would hold the slot until --call-timeout), the
 * upstream is told with its own request id, and the id is buried so that a
 * late answer is dropped. */
void gw_handle_agent_cancel(struct glove_kernel_gateway *gw, json_t *params) {
        json_t *rid = params ? json_object_get(params, "requestId") : NULL;
        if (rid && gw_listen_cancel(gw, rid, "cancelled"))
                return; /* a subscriptions/listen ended (listen.c) */
        struct glove_kernel_call *c = rid ? glove_kernel_calls_by_agent(gw->calls, rid) : NULL;
        if (!c)
                return;
        int64_t upstream_id = c->upstream_id;
        size_t upstream = c->upstream;
        json_t *fwd = json_pack("{s:I}", "requestId", (json_int_t)upstream_id);
        json_t *reason = json_object_get(params, "reason");
        if (fwd && json_is_string(reason))
                json_object_set(fwd, "reason", reason);
        /* Finished before the send, as for a timeout. */
        call_finish(gw, c, "cancelled");
        glove_kernel_calls_bury(gw->calls, upstream, upstream_id, GLOVE_KERNEL_TOMBSTONE_CANCELLED);
        glove_mcp_upstream_send(gw->ups[upstream].u, glove_mcp_rpc_request(NULL, "notifications/cancelled", fwd));
}

/* The upstream's answer m to call c reaches the agent. */
static void deliver(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c, struct glove_mcp_message *m) {
        if (c->kind != GLOVE_KERNEL_REQUEST_TOOL_CALL) {
                gw_feature_response(gw, gu, c, m);
                return;
        }
        bool is_error = json_object_get(m->root, "error") != NULL;
        json_t *out = json_pack("{s:s,s:O}", "jsonrpc", "2.0", "id", c->agent_id);
        json_t *body = json_object_get(m->root, is_error ? "error" : "result");
        if (out && c->modern && !is_error && glove_kernel_era_complete(body, false) < 0)
                json_decref(TAKE_PTR(out));
        if (out)
                json_object_set(out, is_error ? "error" : "result", body);
        gw_send_agent(gw, out);
        call_finish(gw, c, is_error ? "error" : "ok");
}

void gw_upstream_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        struct glove_kernel_call *c = glove_kernel_calls_by_upstream(gw->calls, gu->index, m->id);
        if (!c) {
                /* Never delivered: a late answer to a call that ended, or
                 * an id Glove never sent. */
                enum glove_kernel_tombstone_kind kind = glove_kernel_calls_exhume(gw->calls, gu->index, m->id);
                const char *why = kind == GLOVE_KERNEL_TOMBSTONE_CANCELLED ? "cancelled"
                                  : kind == GLOVE_KERNEL_TOMBSTONE_TIMEOUT ? "timeout"
                                                                           : "unknown_id";
                gw_audit(gw, "response_dropped",
                         json_pack("{s:s,s:O,s:s}", "from", glove_mcp_upstream_name(gu->u), "id", m->id, "reason", why));
                return;
        }
        /* A 2026-07-28 input_required result: relayed under policy with a
         * seal, or answered as an error (mrtr.c). */
        if (gw_mrtr_is_input_required(m)) {
                struct glove_mcp_message e = {0};
                if (gw_mrtr_result(gw, gu, c, m, &e))
                        deliver(gw, gu, c, &e);
                json_decref(e.root);
                return;
        }
        deliver(gw, gu, c, m);
}

bool gw_upstream_raw_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const char *line,
                              const struct glove_mcp_raw_response *r) {
        json_t *jid = json_integer(r->id);
        struct glove_kernel_call *c = jid ? glove_kernel_calls_by_upstream(gw->calls, gu->index, jid) : NULL;
        json_decref(jid);
        if (!c || !c->verbatim)
                return false;
        const char *value = line + r->value_off;
        /* The result of a modern request gains "resultType" (decision 3),
         * written into the upstream's bytes without decoding them; text
         * the insertion cannot place goes the tree path. */
        char insert[64];
        size_t at = 0;
        int n = 0;
        if (c->modern && !r->is_error) {
                n = glove_kernel_era_insert(value, r->value_len, false, insert, sizeof(insert), &at);
                if (n < 0)
                        return false;
        }
        /* As gw_upstream_response: the answer goes to the agent (a failure
         * to queue fails the gateway), then the call ends on record. */
        (void)gw_queue_agent_response_with(gw, c->agent_id, r->is_error, value, r->value_len, insert, (size_t)n, at);
        call_finish(gw, c, r->is_error ? "error" : "ok");
        return true;
}

void gw_upstream_oversized(struct glove_kernel_gateway *gw, struct gw_upstream *gu, int64_t upstream_id) {
        json_t *jid = json_integer(upstream_id);
        struct glove_kernel_call *c = jid ? glove_kernel_calls_by_upstream(gw->calls, gu->index, jid) : NULL;
        if (!c) {
                /* A late answer (buried) or an unknown id: nothing to fail;
                 * frame_oversized is on record. */
                if (jid)
                        (void)glove_kernel_calls_exhume(gw->calls, gu->index, jid);
                json_decref(jid);
                return;
        }
        json_decref(jid);
        char rule[80], message[128];
        snprintf(rule, sizeof(rule), "%s %zu", gw->cfg.max_frame_name ? gw->cfg.max_frame_name : "max_frame", gw->cfg.max_frame);
        snprintf(message, sizeof(message), "the upstream's response is longer than %s",
                 gw->cfg.max_frame_name ? gw->cfg.max_frame_name : "the frame bound");
        if (c->internal) { /* Glove's own start-up listing: the start fails */
                glove_error_set(&gw->err, EMSGSIZE, "upstream.protocol", "upstream %s: its prompts/list answer is %s",
                                glove_mcp_upstream_name(gu->u), message + strlen("the upstream's response is "));
                call_finish(gw, c, "too_large");
                gw_fail(gw);
                return;
        }
        gw_agent_error(gw, c->agent_id, GLOVE_RPC_RESPONSE_TOO_LARGE, message, "response_too_large", rule);
        call_finish(gw, c, "too_large");
}

void gw_upstream_progress(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        /* Relayed only for a call of this upstream that carries the token. */
        json_t *token = m->params ? json_object_get(m->params, "progressToken") : NULL;
        for (size_t i = 0, seen = 0; token && i < GLOVE_KERNEL_CALLS_MAX && seen < gw->calls->count; i++) {
                struct glove_kernel_call *c = &gw->calls->slots[i];
                if (!c->used)
                        continue;
                seen++;
                if (c->upstream == gu->index && c->progress_token && json_equal(c->progress_token, token)) {
                        gw_send_agent(gw, json_incref(m->root));
                        break;
                }
        }
}

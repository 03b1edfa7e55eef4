/* SPDX-License-Identifier: Apache-2.0 */
/* Multi round-trip requests of MCP 2026-07-28 (basic/patterns/mrtr.mdx,
 * SEP-2322) between a modern upstream and a modern agent
 * (gateway_internal.h; docs/mcp-mediation.md, "Input requests").
 *
 * An upstream's InputRequiredResult asks the client for elicitation,
 * sampling or roots inside a result. Each input request is decided as the
 * same request of a legacy upstream would be (the upstream's client
 * features in the policy, then the capabilities the agent declared in
 * that request), on record with the same client_request record; a refused
 * one fails the agent's request. An allowed result reaches the agent with
 * Glove's own requestState: a seal (HMAC-SHA-256 under a key of this run)
 * over the upstream, the method, the target (tool, prompt or resource as
 * routed), the keys asked and the upstream's own requestState. The agent's
 * retry is forwarded only with a seal that verifies and binds the route the
 * retry takes; its inputResponses are cut to the keys asked, and the
 * upstream gets back exactly the requestState it gave. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_internal.h"
#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/random.h"
#include "glove/base/time.h"
#include "glove/kernel/era.h"

/* The bound on rounds of one translated request. */
#define TRANSLATED_ROUNDS_MAX 16
/* Bounds on the legacy requests kept for translation (bytes of the agent's
 * line): one, and all in flight together. */
#define TRANSLATED_PARAMS_MAX ((size_t)1 << 20)
#define TRANSLATED_BUDGET ((size_t)16 << 20)

/* The seal: "glove1." BASE64(payload) "." HEX(HMAC-SHA-256(key, BASE64(payload))). */
#define SEAL_PREFIX "glove1."
/* Bound on the input requests of one result (a map of the upstream's keys). */
#define INPUT_REQUESTS_MAX 64

int gw_mrtr_init(struct glove_kernel_gateway *gw, struct glove_error *err) {
        int r = glove_random_bytes(gw->mrtr_key, sizeof(gw->mrtr_key));
        if (r < 0)
                return glove_error_set(err, -r, "gateway.random", "getrandom: %s", strerror(-r));
        return 0;
}

/* The input request methods MCP 2026-07-28 allows, the same three a
 * legacy server sends as requests. */
static const char *const input_methods[] = {"sampling/createMessage", "elicitation/create", "roots/list"};

unsigned gw_mrtr_features(const json_t *caps) {
        unsigned f = 0;
        if (!json_is_object(caps))
                return 0;
        if (json_is_object(json_object_get(caps, "sampling")))
                f |= GLOVE_POLICY_CLIENT_SAMPLING;
        if (json_is_object(json_object_get(caps, "elicitation")))
                f |= GLOVE_POLICY_CLIENT_ELICITATION;
        if (json_is_object(json_object_get(caps, "roots")))
                f |= GLOVE_POLICY_CLIENT_ROOTS;
        return f;
}

/* The method a request kind is (only the three that may be answered with
 * an InputRequiredResult), or NULL. */
static const char *kind_method(enum glove_kernel_request_kind k) {
        switch (k) {
        case GLOVE_KERNEL_REQUEST_TOOL_CALL:
                return "tools/call";
        case GLOVE_KERNEL_REQUEST_PROMPT_GET:
                return "prompts/get";
        case GLOVE_KERNEL_REQUEST_RESOURCE_READ:
                return "resources/read";
        default:
                return NULL;
        }
}

static bool translation_room(const struct glove_kernel_gateway *gw, size_t len);

int gw_mrtr_envelope(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c, json_t *params) {
        /* What the request declared: a modern one in its own _meta, a
         * legacy one in its session's initialize (on a shared channel, as
         * the multiplexer says; else the agent's one initialize). */
        const json_t *declared = c->modern || gw->cfg.shared_channel ? gw->cur_caps : gw->agent_caps;
        c->client_features = gw_mrtr_features(declared) & gu->features;
        /* A legacy request to a modern upstream declares what it could be
         * translated for, and only when it can be kept. */
        if (!c->modern && c->client_features && glove_mcp_upstream_modern(gu->u) && kind_method(c->kind) &&
            !translation_room(gw, gw->cur_len)) {
                c->client_features = 0;
                c->untranslated = true;
        }
        if (!glove_mcp_upstream_modern(gu->u) || !json_is_object(params))
                return 0;
        /* The agent's own values (e.g. elicitation's form/url modes) for
         * the capabilities the policy grants this upstream; nothing else. */
        json_t *caps = json_object();
        for (size_t i = 0; caps && i < sizeof(input_methods) / sizeof(input_methods[0]); i++) {
                const char *cap;
                unsigned bit = gw_client_method_feature(input_methods[i], &cap);
                if ((c->client_features & bit) && json_object_set_new(caps, cap, json_deep_copy(json_object_get(declared, cap))) < 0)
                        json_decref(TAKE_PTR(caps));
        }
        json_t *meta = json_object_get(params, "_meta");
        if (!caps || (!json_is_object(meta) && json_object_set_new(params, "_meta", meta = json_object()) < 0) || !meta ||
            json_object_set_new(meta, GLOVE_KERNEL_ERA_META_CAPS, caps) < 0)
                return -ENOMEM;
        /* A legacy request that may be answered input_required: kept for
         * the retries Glove makes for it. */
        if (!c->modern && c->client_features && kind_method(c->kind) && !(c->retry_params = json_deep_copy(params)))
                return -ENOMEM;
        if (c->retry_params)
                c->retained = gw->cur_len;
        return 0;
}

/* Whether a legacy request of len bytes may be kept for translation: at
 * most TRANSLATED_PARAMS_MAX alone, TRANSLATED_BUDGET with every call
 * kept in flight (the agent must not grow Glove's own memory beyond
 * that; a call in flight is otherwise not kept). */
static bool translation_room(const struct glove_kernel_gateway *gw, size_t len) {
        if (len > TRANSLATED_PARAMS_MAX)
                return false;
        size_t total = len;
        for (size_t i = 0, seen = 0; i < GLOVE_KERNEL_CALLS_MAX && seen < gw->calls->count; i++) {
                const struct glove_kernel_call *o = &gw->calls->slots[i];
                if (!o->used)
                        continue;
                seen++;
                total += o->retained;
        }
        return total <= TRANSLATED_BUDGET;
}

/* ------------------------------------------------------------------ the seal */

static int mac_hex(const struct glove_kernel_gateway *gw, const char *text, size_t len, char hex[2 * GLOVE_DIGEST_SHA256_LEN + 1]) {
        uint8_t mac[GLOVE_DIGEST_SHA256_LEN];
        struct glove_error e = {0};
        if (glove_digest_hmac_sha256(gw->mrtr_key, sizeof(gw->mrtr_key), text, len, mac, &e) < 0)
                return -EIO;
        return glove_digest_hex_encode(mac, sizeof(mac), hex, 2 * GLOVE_DIGEST_SHA256_LEN + 1);
}

/* A new seal string for payload (borrowed), or NULL (out of memory). */
static json_t *seal(const struct glove_kernel_gateway *gw, const json_t *payload) {
        _cleanup_free_ char *text = json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return NULL;
        size_t n = strlen(text);
        size_t b64 = GLOVE_BASE64_LEN(n);
        size_t total = strlen(SEAL_PREFIX) + b64 + 1 + 2 * GLOVE_DIGEST_SHA256_LEN;
        _cleanup_free_ char *out = malloc(total + 1);
        if (!out)
                return NULL;
        char *p = stpcpy(out, SEAL_PREFIX);
        char *body = p;
        p += glove_base64_encode_into(text, n, p);
        *p++ = '.';
        if (mac_hex(gw, body, (size_t)(p - 1 - body), p) < 0)
                return NULL;
        return json_stringn(out, total);
}

/* The payload of a seal the agent sent (a new reference), or NULL when it
 * is not one of this run's. */
static json_t *unseal(const struct glove_kernel_gateway *gw, const json_t *state) {
        const char *s = json_string_value(state);
        size_t len = json_string_length(state);
        size_t pre = strlen(SEAL_PREFIX);
        if (!s || len < pre + 1 + 2 * GLOVE_DIGEST_SHA256_LEN || memcmp(s, SEAL_PREFIX, pre) != 0)
                return NULL;
        const char *body = s + pre;
        size_t blen = len - pre - 1 - 2 * GLOVE_DIGEST_SHA256_LEN;
        if (body[blen] != '.')
                return NULL;
        char want[2 * GLOVE_DIGEST_SHA256_LEN + 1];
        if (mac_hex(gw, body, blen, want) < 0)
                return NULL;
        /* Constant time over the MAC's text. */
        unsigned char diff = 0;
        for (size_t i = 0; i < 2 * GLOVE_DIGEST_SHA256_LEN; i++)
                diff |= (unsigned char)(want[i] ^ body[blen + 1 + i]);
        if (diff)
                return NULL;
        _cleanup_free_ uint8_t *text = malloc(GLOVE_BASE64_DECODED_MAX(blen) + 1);
        ssize_t n = text ? glove_base64_decode_into(body, blen, text) : -1;
        if (n < 0)
                return NULL;
        /* JSON_ALLOW_NUL: an upstream's state may hold U+0000 (sealed
         * as \u0000). */
        json_t *payload = json_loadb((const char *)text, (size_t)n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        if (!json_is_object(payload)) {
                json_decref(payload);
                return NULL;
        }
        return payload;
}

/* ------------------------------------------------------------------ an upstream's InputRequiredResult */

bool gw_mrtr_is_input_required(const struct glove_mcp_message *m) {
        const json_t *result = json_object_get(m->root, "result");
        const char *rt = json_is_object(result) ? glove_mcp_string(json_object_get(result, "resultType")) : NULL;
        return rt && strcmp(rt, "input_required") == 0;
}

/* What a call is about, as routed: the qualified tool name, or the prompt
 * or URI as the agent named it. */
static const char *call_target(const struct glove_kernel_call *c) {
        if (c->kind == GLOVE_KERNEL_REQUEST_TOOL_CALL)
                return c->tool;
        return json_is_string(c->subject) ? json_string_value(c->subject) : "";
}

/* A client_request record of one input request; "era" is the agent's
 * request's (a legacy one's input requests are translated). Returns
 * gw_audit's. */
static int record_input(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const struct glove_kernel_call *c, const char *key,
                        const char *method, const char *decision, const char *reason, const char *rule) {
        json_t *f = json_pack("{s:s,s:s,s:O,s:s,s:s,s:s,s:s}", "upstream", glove_mcp_upstream_name(gu->u), "method",
                              method ? method : "(none)", "id", c->agent_id, "key", key, "decision", decision, "rule", rule, "era",
                              c->modern ? GLOVE_KERNEL_ERA_MODERN_VERSION : "legacy");
        if (f && reason)
                json_object_set_new(f, "reason", json_string(reason));
        return gw_audit(gw, "client_request", f);
}


/* Sends c again to its upstream with the answers gathered and the
 * upstream's requestState (a translated round is over). */
static void retry(struct glove_kernel_gateway *gw, struct glove_kernel_call *c) {
        struct gw_upstream *gu = &gw->ups[c->upstream];
        json_t *params = json_deep_copy(c->retry_params);
        json_t *answers = TAKE_PTR(c->answers);
        json_t *keys = json_array();
        const char *key;
        json_t *v;
        json_object_foreach(answers, key, v) json_array_append_new(keys, json_string(key));
        if (!params || !answers || !keys || json_object_set(params, "inputResponses", answers) < 0 ||
            (c->retry_state && json_object_set(params, "requestState", c->retry_state) < 0) ||
            gw_audit(gw, "input_responses",
                     json_pack("{s:O,s:s,s:s,s:s,s:O,s:[],s:b}", "id", c->agent_id, "upstream", glove_mcp_upstream_name(gu->u),
                               "method", kind_method(c->kind), "target", call_target(c), "keys", keys, "dropped", "translated",
                               1)) < 0) {
                json_decref(params);
                json_decref(answers);
                json_decref(keys);
                gw_agent_error(gw, c->agent_id, GLOVE_RPC_INTERNAL_ERROR, "the request could not be retried (out of memory or audit failure)",
                               "internal_error", "gateway");
                gw_call_finish(gw, c, "error");
                return;
        }
        json_decref(answers);
        json_decref(keys);
        c->upstream_id = glove_mcp_upstream_next_id(gu->u);
        c->start_us = glove_time_monotonic_us();
        json_t *uid = json_integer(c->upstream_id);
        glove_mcp_upstream_send(gu->u, glove_mcp_rpc_request(uid, kind_method(c->kind), params));
        json_decref(uid);
}

void gw_mrtr_input_failed(struct glove_kernel_gateway *gw, const json_t *call_id, int code, const char *message, const char *reason,
                          const char *rule) {
        struct glove_kernel_call *c = glove_kernel_calls_by_agent(gw->calls, call_id);
        if (!c || !c->retry_params)
                return;
        gw_agent_error(gw, c->agent_id, code, message, reason, rule);
        gw_call_finish(gw, c, "error");
}

void gw_mrtr_input_answered(struct glove_kernel_gateway *gw, const json_t *call_id, const json_t *key, const struct glove_mcp_message *m) {
        struct glove_kernel_call *c = glove_kernel_calls_by_agent(gw->calls, call_id);
        const char *k = json_string_value(key);
        if (!c || !c->answers || !k || json_object_get(c->answers, k))
                return;
        json_t *result = json_object_get(m->root, "result");
        if (!json_is_object(result)) {
                gw_mrtr_input_failed(gw, call_id, GLOVE_RPC_INTERNAL_ERROR,
                                     "the agent answered an input request of the upstream with an error", "input_failed", k);
                return;
        }
        if (json_object_set(c->answers, k, result) < 0) {
                gw_mrtr_input_failed(gw, call_id, GLOVE_RPC_INTERNAL_ERROR, "out of memory", "internal_error", "gateway");
                return;
        }
        if (--c->waiting == 0)
                retry(gw, c);
}

/* A legacy agent's call c got input_required from gu: each input request
 * (decided already) is asked of the agent as a request of Glove's; the
 * retry follows the last answer (at once when there is none). Returns 0,
 * or -1 when nothing could be asked (c not ended). */
static int translate(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c, json_t *requests,
                     json_t *state) {
        json_decref(c->answers);
        json_decref(c->retry_state);
        c->answers = json_object();
        c->retry_state = state ? json_incref(state) : NULL;
        c->waiting = 0;
        c->rounds++;
        if (!c->answers)
                return -1;
        const char *key;
        json_t *r;
        _cleanup_json_ json_t *id = json_incref(c->agent_id);
        json_object_foreach(requests, key, r) {
                int rr = gw_client_input_request(gw, gu, id, key, glove_mcp_string(json_object_get(r, "method")),
                                                 json_object_get(r, "params"));
                /* Refused on its way (an agent that initialized again
                 * without the capability): the call has ended already. */
                if (glove_kernel_calls_by_agent(gw->calls, id) != c || !c->answers)
                        return 0;
                if (rr < 0)
                        return -1;
                c->waiting++;
        }
        if (c->waiting == 0)
                retry(gw, c);
        return 0;
}

struct glove_mcp_message *gw_mrtr_result(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c,
                                         struct glove_mcp_message *m, struct glove_mcp_message *err) {
        json_t *result = json_object_get(m->root, "result");
        json_t *requests = json_object_get(result, "inputRequests");
        json_t *state = json_object_get(result, "requestState");
        const char *method = kind_method(c->kind);
        int code = GLOVE_RPC_INTERNAL_ERROR;
        const char *message = NULL, *reason = NULL, *rule = NULL;
        char rulebuf[96];
        bool translated = !c->modern && c->retry_params && !c->internal;
        if ((!c->modern && !translated) || c->internal || !glove_mcp_upstream_modern(gu->u)) {
                /* A legacy request that declared no capability the policy
                 * grants (so none was declared to the upstream): there is
                 * nothing to translate to. */
                message = "the upstream asked for input from the client (sampling, elicitation or roots) in a 2026-07-28 "
                          "input_required result, which this legacy (initialize) request cannot answer";
                reason = "upstream_input_required";
                rule = glove_mcp_upstream_name(gu->u);
                gw_audit(gw, "client_request",
                         json_pack("{s:s,s:s,s:O,s:s,s:s,s:s}", "upstream", glove_mcp_upstream_name(gu->u), "method", "input_required",
                                   "id", c->agent_id ? c->agent_id : json_null(), "decision", "deny", "reason",
                                   c->untranslated ? "translation_budget" : "agent_legacy", "rule",
                                   c->untranslated ? "translation budget 16 MiB" : "agent era"));
        } else if (translated && c->rounds >= TRANSLATED_ROUNDS_MAX) {
                snprintf(rulebuf, sizeof(rulebuf), "rounds %d", TRANSLATED_ROUNDS_MAX);
                message = "the upstream kept answering input_required";
                reason = "too_many_rounds";
                rule = rulebuf;
                gw_audit(gw, "upstream_invalid_message",
                         json_pack("{s:s,s:O,s:s}", "from", glove_mcp_upstream_name(gu->u), "id", m->id, "reason", "too_many_rounds"));
        } else if (!method || (requests && (!json_is_object(requests) || json_object_size(requests) > INPUT_REQUESTS_MAX)) ||
                   (state && !json_is_string(state)) || (!requests && !state) || (requests && json_object_size(requests) == 0 && !state)) {
                message = "the upstream answered with an input_required result MCP 2026-07-28 does not allow here";
                reason = "upstream_invalid_result";
                rule = glove_mcp_upstream_name(gu->u);
                gw_audit(gw, "upstream_invalid_message",
                         json_pack("{s:s,s:O,s:s}", "from", glove_mcp_upstream_name(gu->u), "id", m->id, "reason",
                                   method ? "input_required_malformed" : "input_required_not_allowed"));
        } else {
                /* Every input request decided, as a legacy upstream's
                 * request would be; the first refusal fails the call. A
                 * translated round needs a relay slot per input request. */
                const char *key;
                json_t *r;
                bool room = !translated || json_object_size(requests) <= GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX - gw->n_client_reqs;
                json_object_foreach(requests, key, r) {
                        const char *cap = NULL;
                        const char *im = json_is_object(r) ? glove_mcp_string(json_object_get(r, "method")) : NULL;
                        unsigned bit = gw_client_method_feature(im, &cap);
                        json_t *ip = json_is_object(r) ? json_object_get(r, "params") : NULL;
                        if (!room) {
                                snprintf(rulebuf, sizeof(rulebuf), "in-flight bound %d", GLOVE_KERNEL_GATEWAY_CLIENT_REQUESTS_MAX);
                                record_input(gw, gu, c, key, im, "deny", "too_many_requests", rulebuf);
                                code = GLOVE_RPC_INVALID_REQUEST;
                                message = "too many requests to the agent in flight to translate this input_required result";
                                reason = "too_many_requests";
                                rule = rulebuf;
                        } else if (!bit || (ip && !json_is_object(ip))) { /* params is optional (roots/list has none) */
                                record_input(gw, gu, c, key, im, "deny", "invalid_request", "inputRequests");
                                message = "the upstream's input_required result holds an input request MCP 2026-07-28 does not define";
                                reason = "upstream_invalid_result";
                                rule = glove_mcp_upstream_name(gu->u);
                        } else if (!(gu->features & bit)) {
                                record_input(gw, gu, c, key, im, "deny", "policy_denied", "default deny");
                                code = GLOVE_RPC_POLICY_DENIED;
                                message = "the upstream asked the client for input the policy does not allow it";
                                reason = "policy_denied";
                                snprintf(rulebuf, sizeof(rulebuf), "client feature %s", cap);
                                rule = rulebuf;
                        } else if (!(c->client_features & bit)) {
                                snprintf(rulebuf, sizeof(rulebuf), "agent capability %s", cap);
                                record_input(gw, gu, c, key, im, "deny", "agent_unsupported", rulebuf);
                                message = "the upstream asked the client for input the agent did not declare in this request";
                                reason = "agent_unsupported";
                                rule = rulebuf;
                        }
                        if (message)
                                break;
                }
        }
        if (!message) {
                /* Allowed: the decisions on record first (fail closed). */
                json_t *keys = json_object();
                const char *key;
                json_t *r;
                int bad = keys ? 0 : -1;
                json_object_foreach(requests, key, r) {
                        const char *cap = NULL;
                        const char *im = glove_mcp_string(json_object_get(r, "method"));
                        (void)gw_client_method_feature(im, &cap);
                        if (record_input(gw, gu, c, key, im, "allow", NULL, cap) < 0 ||
                            (keys && json_object_set_new(keys, key, json_string(im)) < 0))
                                bad = -1;
                }
                if (translated) {
                        json_decref(keys);
                        if (!bad && translate(gw, gu, c, requests, state) == 0)
                                return NULL;
                        /* Input requests already asked are answered to a
                         * call that is gone: dropped. */
                        message = "the input requests could not be asked of the agent (too many in flight, or out of memory)";
                        reason = "internal_error";
                        rule = "gateway";
                        goto fail;
                }
                json_t *payload = keys ? json_pack("{s:i,s:s,s:s,s:s,s:O}", "v", 1, "u", glove_mcp_upstream_name(gu->u), "m", method,
                                                   "t", call_target(c), "k", keys)
                                       : NULL;
                json_decref(keys);
                if (payload && state)
                        json_object_set(payload, "s", state);
                json_t *sealed = payload && !bad ? seal(gw, payload) : NULL;
                json_decref(payload);
                /* A seal the agent could not send back within the frame
                 * bound would end the rounds: refused now. */
                if (sealed && json_string_length(sealed) + 1024 > gw->cfg.max_frame) {
                        json_decref(sealed);
                        message = "the upstream's requestState is too large to be sealed and sent back within the frame bound";
                        reason = "upstream_invalid_result";
                        rule = glove_mcp_upstream_name(gu->u);
                        goto fail;
                }
                json_t *out = sealed ? json_copy(result) : NULL;
                if (out && json_object_set_new(out, "requestState", sealed) == 0) {
                        gw_send_agent(gw, glove_mcp_rpc_result(c->agent_id, out));
                        gw_call_finish(gw, c, "input_required");
                        return NULL;
                }
                json_decref(out);
                message = "the input_required result could not be relayed (out of memory or audit failure)";
                reason = "internal_error";
                rule = "gateway";
        }
fail:
        err->root = glove_mcp_rpc_error(m->id, code, message, reason, rule);
        if (!err->root)
                return NULL;
        err->id = json_object_get(err->root, "id");
        err->kind = GLOVE_MCP_RESPONSE;
        return err;
}

/* ------------------------------------------------------------------ the agent's retry */

bool gw_mrtr_retry(struct glove_kernel_gateway *gw, const json_t *id, const char *method, json_t *params) {
        json_t *responses = json_object_get(params, "inputResponses");
        json_t *state = json_object_get(params, "requestState");
        if (!responses && !state)
                return true;
        const char *message = NULL, *rule = NULL;
        json_t *payload = NULL;
        if (strcmp(method, "tools/call") != 0 && strcmp(method, "prompts/get") != 0 && strcmp(method, "resources/read") != 0) {
                message = "inputResponses and requestState only retry tools/call, prompts/get or resources/read";
                rule = "params.inputResponses";
        } else if (!state) {
                message = "inputResponses need the requestState of the input_required result they answer";
                rule = "params.requestState";
        } else if (!(payload = unseal(gw, state))) {
                message = "requestState is not one Glove gave in this run (altered, or from elsewhere)";
                rule = "params.requestState";
        } else if (responses && !json_is_object(responses)) {
                message = "inputResponses must be an object";
                rule = "params.inputResponses";
        } else {
                const char *key;
                json_t *v;
                json_object_foreach(responses, key, v) if (!json_is_object(v)) {
                        message = "every inputResponses value must be an object (the answer to one input request)";
                        rule = "params.inputResponses";
                        break;
                }
        }
        if (message) {
                json_decref(payload);
                gw_audit(gw, "era_refused",
                         json_pack("{s:O,s:s,s:s,s:s}", "id", id, "method", method, "reason", "invalid_params", "rule", rule));
                gw_send_agent(gw, glove_mcp_rpc_error(id, GLOVE_RPC_INVALID_PARAMS, message, "invalid_params", rule));
                return false;
        }
        json_decref(gw->cur_seal);
        gw->cur_seal = payload;
        return true;
}

int gw_mrtr_bind(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const struct glove_kernel_call *c, json_t *params) {
        json_t *p = gw->cur_seal;
        if (!p)
                return 0;
        const char *method = kind_method(c->kind);
        const char *u = json_string_value(json_object_get(p, "u"));
        const char *pm = json_string_value(json_object_get(p, "m"));
        const char *t = json_string_value(json_object_get(p, "t"));
        json_t *keys = json_object_get(p, "k");
        if (!method || !u || !pm || !t || !json_is_object(keys) || strcmp(u, glove_mcp_upstream_name(gu->u)) != 0 ||
            strcmp(pm, method) != 0 || strcmp(t, call_target(c)) != 0)
                return -EPERM;
        /* The upstream's own requestState, or none; the answers to the
         * keys it asked, no others. */
        json_t *inner = json_object_get(p, "s");
        if (inner && json_object_set(params, "requestState", inner) < 0)
                return -ENOMEM;
        if (!inner)
                (void)json_object_del(params, "requestState");
        json_t *responses = json_object_get(params, "inputResponses");
        json_t *kept = json_object();
        json_t *dropped = json_array();
        if (!kept || !dropped) {
                json_decref(kept);
                json_decref(dropped);
                return -ENOMEM;
        }
        const char *key;
        json_t *v;
        json_object_foreach(responses, key, v) {
                if (json_object_get(keys, key))
                        json_object_set(kept, key, v);
                else
                        json_array_append_new(dropped, json_string(key));
        }
        json_t *answered = json_array();
        json_object_foreach(kept, key, v) json_array_append_new(answered, json_string(key));
        gw_audit(gw, "input_responses",
                 json_pack("{s:O,s:s,s:s,s:s,s:o,s:o}", "id", c->agent_id, "upstream", u, "method", method, "target", t, "keys",
                           answered ? answered : json_array(), "dropped", dropped));
        if (responses)
                json_object_set_new(params, "inputResponses", kept);
        else
                json_decref(kept);
        return 0;
}

void gw_mrtr_done(struct glove_kernel_gateway *gw) {
        json_decref(gw->cur_seal);
        gw->cur_seal = NULL;
        gw->cur_caps = NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Resources, prompts and completion under policy (docs/mcp-mediation.md,
 * "Resources, prompts and completion"): routing by qualified name or
 * glove:// URI, the policy decision and its record, forwarding through the
 * call table (so progress, cancellation and timeouts work as for
 * tools/call), lists gathered from every upstream in turn, subscriptions.
 * The initialize capabilities and own names are in gateway_own_names.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_internal.h"
#include "glove/kernel/era.h"
#include "glove/base/cleanup.h"
#include "glove/base/number.h"
#include "glove/base/time.h"
#include "glove/kernel/names.h"

/* Entries per list page sent to the agent (as tools/list). */
#define FEATURE_PAGE GLOVE_KERNEL_GATEWAY_TOOLS_PAGE
/* Entries read from one upstream's listing, and pages followed. */
#define FEATURE_ENTRIES_MAX GLOVE_MCP_UPSTREAM_TOOLS_MAX
#define FEATURE_PAGES_MAX GLOVE_MCP_UPSTREAM_PAGES_MAX
/* Largest list cursor. */
#define FEATURE_TOTAL_MAX ((unsigned long long)GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX * FEATURE_ENTRIES_MAX)
/* URIs one upstream may have subscribed by the agent. */
#define SUBSCRIPTIONS_MAX 1024

static const char *kind_method(enum glove_kernel_request_kind k) {
        switch (k) {
        case GLOVE_KERNEL_REQUEST_TOOL_CALL: return "tools/call";
        case GLOVE_KERNEL_REQUEST_RESOURCE_READ: return "resources/read";
        case GLOVE_KERNEL_REQUEST_SUBSCRIBE: return "resources/subscribe";
        case GLOVE_KERNEL_REQUEST_UNSUBSCRIBE: return "resources/unsubscribe";
        case GLOVE_KERNEL_REQUEST_PROMPT_GET: return "prompts/get";
        case GLOVE_KERNEL_REQUEST_COMPLETE: return "completion/complete";
        case GLOVE_KERNEL_REQUEST_LIST_RESOURCES: return "resources/list";
        case GLOVE_KERNEL_REQUEST_LIST_TEMPLATES: return "resources/templates/list";
        case GLOVE_KERNEL_REQUEST_LIST_PROMPTS: return "prompts/list";
        }
        return "?";
}

static bool is_list(enum glove_kernel_request_kind k) {
        return k == GLOVE_KERNEL_REQUEST_LIST_RESOURCES || k == GLOVE_KERNEL_REQUEST_LIST_TEMPLATES ||
               k == GLOVE_KERNEL_REQUEST_LIST_PROMPTS;
}

/* The capability object cap ("resources", "prompts", "completions") of u,
 * or NULL. */
const json_t *gw_capability(const struct glove_mcp_upstream *u, const char *cap) {
        const json_t *caps = glove_mcp_upstream_capabilities(u);
        const json_t *c = caps ? json_object_get(caps, cap) : NULL;
        return json_is_object(c) ? c : NULL;
}

bool gw_usable(const struct gw_upstream *gu) {
        return !gu->left_out && glove_mcp_upstream_state(gu->u) != GLOVE_MCP_UPSTREAM_DEAD;
}

json_t *gw_request_result_fields(const struct glove_kernel_call *c, const char *status) {
        json_t *f = json_pack("{s:O,s:s,s:s,s:I}", "id", c->agent_id, "method", kind_method(c->kind), "upstream_status", status,
                              "latency_us", (json_int_t)(glove_time_monotonic_us() - c->start_us));
        if (f && c->subject)
                json_object_set(f, "subject", c->subject);
        return f;
}

/* ------------------------------------------------------------------ decisions on record */

/* The "request" record: id, method, subject, upstream, decision, rule,
 * reason (on deny), arguments_sha256 (when args_sha is given). */
static json_t *request_fields(struct glove_kernel_gateway *gw, const json_t *id, const char *method, const json_t *subject,
                              const char *upstream, const char *decision, const char *reason, const char *rule,
                              const json_t *args, bool with_args) {
        json_t *f = json_pack("{s:O,s:s,s:s,s:s}", "id", id, "method", method, "decision", decision, "rule", rule);
        if (!f)
                return NULL;
        bool ok = json_object_set(f, "subject", subject ? (json_t *)subject : json_null()) == 0;
        if (upstream)
                ok = ok && json_object_set_new(f, "upstream", json_string(upstream)) == 0;
        if (reason)
                ok = ok && json_object_set_new(f, "reason", json_string(reason)) == 0;
        if (with_args) {
                char sha[65];
                ok = ok && gw_hash_arguments(args, sha) == 0 && json_object_set_new(f, "arguments_sha256", json_string(sha)) == 0;
                if (gw->cfg.audit_arguments)
                        ok = ok && json_object_set_new(f, "arguments", args ? json_deep_copy(args) : json_object()) == 0;
        }
        if (!ok) {
                json_decref(f);
                return NULL;
        }
        return f;
}

/* A subject for records: the string s as the agent gave it (a JSON string
 * holding what it holds, bounded for the record), or null. */
static json_t *subject_of(const json_t *s) {
        if (!json_is_string(s))
                return json_null();
        size_t n = json_string_length(s);
        return glove_audit_string(json_string_value(s), n < 512 ? n : 512);
}

static void refuse(struct glove_kernel_gateway *gw, const json_t *id, const char *method, const json_t *subject,
                   const char *upstream, int code, const char *message, const char *reason, const char *rule,
                   const json_t *args, bool with_args) {
        if (gw_auditing(gw))
                gw_audit(gw, "request", request_fields(gw, id, method, subject, upstream, "deny", reason, rule, args, with_args));
        gw_agent_error(gw, id, code, message, reason, rule);
}

/* Registers c for gu and sends method with params (stolen) under c's
 * upstream id. */
void gw_feature_send(struct gw_upstream *gu, struct glove_kernel_call *c, const char *method,
                     json_t *params) {
        c->upstream = gu->index;
        c->upstream_id = glove_mcp_upstream_next_id(gu->u);
        json_t *uid = json_integer(c->upstream_id);
        glove_mcp_upstream_send(gu->u, glove_mcp_rpc_request(uid, method, params));
        json_decref(uid);
}

/* Forwards an allowed request to gu: the record first (fail closed), then
 * the slot, the timer and the send. params (stolen) are what the upstream
 * gets; subject (stolen) names it in records. */
static void forward(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const json_t *id, enum glove_kernel_request_kind kind,
                    json_t *params, json_t *subject, const char *rule, const json_t *args, bool with_args) {
        _cleanup_json_ json_t *p = params, *s = subject;
        const char *method = kind_method(kind);
        const char *uname = glove_mcp_upstream_name(gu->u);
        int e;
        struct glove_kernel_call *c = glove_kernel_calls_add(gw->calls, id, gu->index, 0, &e);
        if (!c) {
                refuse(gw, id, method, s, uname, GLOVE_RPC_INVALID_REQUEST, "too many calls in flight", "invalid_params",
                       "in-flight bound", args, with_args);
                return;
        }
        c->owner = gw;
        c->kind = kind;
        c->modern = gw->cur_modern;
        c->subject = json_incref(s);
        /* Every request: a modern retry's seal bound to this route; the
         * capabilities the request declared passed on (a legacy one's:
         * none, its input_required could not be answered; mrtr.c). */
        int b = c->modern ? gw_mrtr_bind(gw, gu, c, p) : 0;
        if (b >= 0)
                b = gw_mrtr_envelope(gw, gu, c, p);
        if (b < 0) {
                glove_kernel_calls_remove(gw->calls, c);
                refuse(gw, id, method, s, uname, GLOVE_RPC_INVALID_PARAMS,
                       b == -EPERM ? "requestState belongs to another request (method, upstream or target differ)"
                                   : "out of memory",
                       "invalid_params", "params.requestState", args, with_args);
                return;
        }
        if (gw_auditing(gw) &&
            gw_audit(gw, "request", request_fields(gw, id, method, s, uname, "allow", NULL, rule, args, with_args)) < 0) {
                gw_agent_error(gw, id, GLOVE_RPC_INTERNAL_ERROR, "audit append failed; the request was not forwarded", NULL, NULL);
                glove_kernel_calls_remove(gw->calls, c);
                return;
        }
        json_t *meta = json_object_get(p, "_meta");
        json_t *token = json_is_object(meta) ? json_object_get(meta, "progressToken") : NULL;
        if (token)
                c->progress_token = json_incref(token);
        gw_call_started(gw, c);
        gw_feature_send(gu, c, method, TAKE_PTR(p));
}

/* ------------------------------------------------------------------ routing */

static struct gw_upstream *upstream_named(struct glove_kernel_gateway *gw, const char *name, size_t len) {
        for (size_t i = 0; i < gw->n_ups; i++) {
                const char *un = glove_mcp_upstream_name(gw->ups[i].u);
                if (strlen(un) == len && memcmp(un, name, len) == 0)
                        return &gw->ups[i];
        }
        return NULL;
}

static bool names_contain(const json_t *names, const char *name) {
        size_t i;
        json_t *n;
        json_array_foreach(names, i, n) if (strcmp(json_string_value(n), name) == 0) return true;
        return false;
}

bool gw_own_name_shadows(struct glove_kernel_gateway *gw, const char *name) {
        size_t ulen;
        const char *rest;
        if (glove_kernel_split_name(name, &ulen, &rest) < 0)
                return false;
        struct gw_upstream *other = upstream_named(gw, name, ulen);
        return other && !other->own_names;
}

struct gw_upstream *gw_own_name_upstream(struct glove_kernel_gateway *gw, enum glove_kernel_request_kind kind, const char *name) {
        /* An own name that reads as NAME.X of an upstream under qualified
         * names is never an own name, also when an upstream lists it only
         * after the start-time check (list_changed): it would take over
         * that upstream's calls (red-team finding). */
        if (gw_own_name_shadows(gw, name))
                return NULL;
        for (size_t i = 0; i < gw->n_ups; i++) {
                struct gw_upstream *gu = &gw->ups[i];
                if (!gu->own_names)
                        continue;
                if (kind == GLOVE_KERNEL_REQUEST_TOOL_CALL ? glove_mcp_upstream_has_tool(gu->u, name)
                                                           : gu->prompt_names && names_contain(gu->prompt_names, name))
                        return gu;
        }
        return NULL;
}

/* The upstream of a prompt the agent names, and the prompt's own name: an
 * own-names upstream's prompt by its own name, else NAME.PROMPT of an
 * upstream that is not own-names, else the one own-names upstream
 * offering prompts (whose list may have changed since the start). */
static struct gw_upstream *route_prompt(struct glove_kernel_gateway *gw, const char *name, const char **prompt) {
        struct gw_upstream *gu = gw_own_name_upstream(gw, GLOVE_KERNEL_REQUEST_PROMPT_GET, name);
        if (gu) {
                *prompt = name;
                return gu;
        }
        size_t ulen;
        if (glove_kernel_split_name(name, &ulen, prompt) == 0) {
                gu = upstream_named(gw, name, ulen);
                if (gu && !gu->own_names)
                        return gu;
        }
        struct gw_upstream *only = NULL;
        for (size_t i = 0; i < gw->n_ups; i++)
                if (gw->ups[i].own_names && gw_capability(gw->ups[i].u, "prompts")) {
                        if (only)
                                return NULL;
                        only = &gw->ups[i];
                }
        *prompt = name;
        return only;
}

/* Where the agent's URI goes. Returns the upstream with *uri and *len the
 * upstream's own URI, or NULL with *why: "invalid" (not a string, holding
 * a control character, too long, a malformed glove:// form) or "unknown"
 * (no such upstream; not the glove:// form and no own-names upstream
 * offers resources). */
static struct gw_upstream *route_uri(struct glove_kernel_gateway *gw, const json_t *juri, const char **uri, size_t *len,
                                     const char **why) {
        *why = "invalid";
        if (!json_is_string(juri))
                return NULL;
        const char *q = json_string_value(juri);
        size_t qlen = json_string_length(juri);
        if (qlen > GLOVE_KERNEL_AGENT_URI_MAX)
                return NULL;
        const char *name;
        size_t nlen;
        int rr = glove_kernel_uri_split(q, qlen, &name, &nlen, uri, len);
        if (rr == -EINVAL)
                return NULL;
        if (rr == 0) {
                struct gw_upstream *gu = upstream_named(gw, name, nlen);
                *why = "unknown";
                return gu && !gu->own_names ? gu : NULL;
        }
        if (!glove_kernel_uri_valid(q, qlen))
                return NULL;
        *why = "unknown";
        for (size_t i = 0; i < gw->n_ups; i++)
                if (gw->ups[i].own_names && gw_capability(gw->ups[i].u, "resources")) {
                        *uri = q;
                        *len = qlen;
                        return &gw->ups[i];
                }
        return NULL;
}

/* The agent's form of gu's URI into out; false when it cannot be named
 * (an own-names upstream's URI that looks like the glove:// form, or one
 * no rule could match). */
static bool agent_uri(const struct gw_upstream *gu, const char *uri, size_t len, char *out, size_t size) {
        if (gu->own_names) {
                if (!glove_kernel_uri_valid(uri, len) || len + 1 > size ||
                    strncmp(uri, GLOVE_KERNEL_URI_SCHEME, sizeof(GLOVE_KERNEL_URI_SCHEME) - 1) == 0)
                        return false;
                memcpy(out, uri, len);
                out[len] = '\0';
                return true;
        }
        return glove_kernel_uri_qualify(glove_mcp_upstream_name(gu->u), uri, len, out, size) >= 0;
}

/* ------------------------------------------------------------------ resources */

static void handle_resource(struct glove_kernel_gateway *gw, const json_t *id, enum glove_kernel_request_kind kind,
                            json_t *params) {
        const char *method = kind_method(kind);
        json_t *juri = params ? json_object_get(params, "uri") : NULL;
        _cleanup_json_ json_t *subject = subject_of(juri);
        const char *uri, *why;
        size_t len;
        struct gw_upstream *gu = route_uri(gw, juri, &uri, &len, &why);
        if (!gu) {
                bool invalid = strcmp(why, "invalid") == 0;
                refuse(gw, id, method, subject, NULL, GLOVE_RPC_INVALID_PARAMS,
                       invalid ? "params.uri must be a resource URI Glove gave out: glove://NAME/URI, at most 4096 bytes of URI "
                                 "without control characters"
                               : "unknown resource: no such upstream",
                       invalid ? "invalid_params" : "unknown_resource", invalid ? "params.uri" : "no such upstream", NULL, false);
                return;
        }
        const char *uname = glove_mcp_upstream_name(gu->u);
        struct glove_policy_verdict v;
        glove_policy_check_resource(gw->cfg.policy, uname, uri, len, &v);
        if (!v.allowed) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_POLICY_DENIED, "the resource is not allowed by policy", v.reason,
                       v.rule, NULL, false);
                return;
        }
        if (!gw_usable(gu)) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running",
                       "upstream_unavailable", uname, NULL, false);
                return;
        }
        if (!gw_capability(gu->u, "resources")) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_INVALID_PARAMS, "unknown resource: the upstream offers no resources",
                       "unknown_resource", uname, NULL, false);
                return;
        }
        if ((kind == GLOVE_KERNEL_REQUEST_SUBSCRIBE || kind == GLOVE_KERNEL_REQUEST_UNSUBSCRIBE) && glove_mcp_upstream_modern(gu->u)) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_METHOD_NOT_FOUND,
                       "the upstream speaks MCP 2026-07-28, which has no resources/subscribe; Glove does not relay its "
                       "resource subscriptions yet",
                       "upstream_not_supported", uname, NULL, false);
                return;
        }
        if (kind == GLOVE_KERNEL_REQUEST_SUBSCRIBE && !json_object_getn(gu->subscribed, uri, len) &&
            json_object_size(gu->subscribed) >= SUBSCRIPTIONS_MAX) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_INVALID_PARAMS, "too many subscriptions", "invalid_params",
                       "subscription bound", NULL, false);
                return;
        }
        if (kind == GLOVE_KERNEL_REQUEST_UNSUBSCRIBE && gu->subscribed)
                json_object_deln(gu->subscribed, uri, len); /* no update is relayed from now on */
        json_t *fwd = json_deep_copy(params);
        if (fwd)
                json_object_set_new(fwd, "uri", json_stringn(uri, len));
        forward(gw, gu, id, kind, fwd, TAKE_PTR(subject), v.rule, NULL, false);
        struct glove_kernel_call *c = kind == GLOVE_KERNEL_REQUEST_SUBSCRIBE ? glove_kernel_calls_by_agent(gw->calls, id) : NULL;
        if (c && c->kind == kind) {
                if (!gu->subscribed)
                        gu->subscribed = json_object();
                c->gathered = json_stringn(uri, len);
                if (gu->subscribed && c->gathered)
                        json_object_setn_new(gu->subscribed, uri, len, json_true());
        }
}

/* resources/read result: every content's uri in the agent's form (an
 * entry whose URI cannot be named is left out). */
static void map_contents(const struct gw_upstream *gu, json_t *result) {
        json_t *contents = json_object_get(result, "contents");
        if (!json_is_array(contents))
                return;
        char buf[GLOVE_KERNEL_AGENT_URI_MAX + 1];
        for (size_t i = 0; i < json_array_size(contents);) {
                json_t *e = json_array_get(contents, i);
                json_t *u = json_is_object(e) ? json_object_get(e, "uri") : NULL;
                if (u && json_is_string(u) && agent_uri(gu, json_string_value(u), json_string_length(u), buf, sizeof(buf))) {
                        json_object_set_new(e, "uri", json_string(buf));
                        i++;
                } else if (u) {
                        json_array_remove(contents, i);
                } else {
                        i++;
                }
        }
}

void gw_feature_updated(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_mcp_message *m) {
        json_t *u = m->params ? json_object_get(m->params, "uri") : NULL;
        const char *uri = json_is_string(u) ? json_string_value(u) : NULL;
        size_t len = uri ? json_string_length(u) : 0;
        struct glove_policy_verdict v;
        bool subscribed = uri && gu->subscribed && json_object_getn(gu->subscribed, uri, len);
        if (subscribed)
                glove_policy_check_resource(gw->cfg.policy, glove_mcp_upstream_name(gu->u), uri, len, &v);
        char buf[GLOVE_KERNEL_AGENT_URI_MAX + 1];
        if (!subscribed || !v.allowed || !agent_uri(gu, uri, len, buf, sizeof(buf))) {
                gw_audit(gw, "notification_dropped", json_pack("{s:s,s:s,s:s}", "from", glove_mcp_upstream_name(gu->u), "method",
                                                             m->method, "reason", "not_subscribed"));
                return;
        }
        json_t *params = json_deep_copy(m->params);
        if (params)
                json_object_set_new(params, "uri", json_string(buf));
        gw_send_agent(gw, glove_mcp_rpc_request(NULL, "notifications/resources/updated", params));
}

/* ------------------------------------------------------------------ prompts and completion */

/* params.name of a prompts/get (or ref.name of a completion): a string
 * without NUL shorter than GLOVE_KERNEL_TOOL_MAX, or NULL. */
static const char *prompt_name(const json_t *j) {
        const char *n = glove_mcp_string(j);
        return n && n[0] && strlen(n) < GLOVE_KERNEL_TOOL_MAX ? n : NULL;
}

static void handle_prompt_get(struct glove_kernel_gateway *gw, const json_t *id, json_t *params) {
        const char *method = "prompts/get";
        json_t *jname = params ? json_object_get(params, "name") : NULL;
        json_t *args = params ? json_object_get(params, "arguments") : NULL;
        _cleanup_json_ json_t *subject = subject_of(jname);
        const char *name = prompt_name(jname), *prompt = NULL;
        if (!name) {
                refuse(gw, id, method, subject, NULL, GLOVE_RPC_INVALID_PARAMS, "prompts/get needs params.name, a prompt name string",
                       "invalid_params", "params.name", args, true);
                return;
        }
        struct gw_upstream *gu = route_prompt(gw, name, &prompt);
        if (!gu || !gw_capability(gu->u, "prompts")) {
                refuse(gw, id, method, subject, NULL, GLOVE_RPC_INVALID_PARAMS, "unknown prompt", "unknown_prompt",
                       "no such upstream prompt", args, true);
                return;
        }
        const char *uname = glove_mcp_upstream_name(gu->u);
        struct glove_policy_verdict v;
        glove_policy_check_prompt(gw->cfg.policy, uname, prompt, args, &v);
        if (!v.allowed) {
                bool bad = strcmp(v.reason, "invalid_params") == 0;
                refuse(gw, id, method, subject, uname, bad ? GLOVE_RPC_INVALID_PARAMS : GLOVE_RPC_POLICY_DENIED,
                       bad ? "prompts/get arguments must be an object" : "the prompt is not allowed by policy", v.reason, v.rule,
                       args, true);
                return;
        }
        if (!gw_usable(gu)) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running",
                       "upstream_unavailable", uname, args, true);
                return;
        }
        json_t *fwd = json_deep_copy(params);
        if (fwd)
                json_object_set_new(fwd, "name", json_string(prompt));
        forward(gw, gu, id, GLOVE_KERNEL_REQUEST_PROMPT_GET, fwd, TAKE_PTR(subject), v.rule, args, true);
}

/* completion/complete: for a prompt's argument (ref/prompt, allowed when
 * the prompt is listed) or a resource template's (ref/resource, allowed
 * when the template is), at the upstream that owns it. */
static void handle_complete(struct glove_kernel_gateway *gw, const json_t *id, json_t *params) {
        const char *method = "completion/complete";
        json_t *ref = params ? json_object_get(params, "ref") : NULL;
        json_t *arg = params ? json_object_get(params, "argument") : NULL;
        const char *type = glove_mcp_string(json_is_object(ref) ? json_object_get(ref, "type") : NULL);
        bool is_prompt = type && strcmp(type, "ref/prompt") == 0, is_resource = type && strcmp(type, "ref/resource") == 0;
        json_t *target = is_prompt ? json_object_get(ref, "name") : is_resource ? json_object_get(ref, "uri") : NULL;
        _cleanup_json_ json_t *subject = subject_of(target);
        if (!is_prompt && !is_resource) {
                refuse(gw, id, method, subject, NULL, GLOVE_RPC_INVALID_PARAMS,
                       "completion/complete needs params.ref of type ref/prompt or ref/resource", "invalid_params", "params.ref", arg,
                       true);
                return;
        }
        struct gw_upstream *gu;
        const char *own = NULL, *why = NULL;
        size_t len = 0;
        bool allowed = false;
        char rule[GLOVE_POLICY_RULE_MAX] = "default deny";
        if (is_prompt) {
                const char *name = prompt_name(target);
                gu = name ? route_prompt(gw, name, &own) : NULL;
                if (gu && gw_capability(gu->u, "prompts")) {
                        struct glove_policy_verdict v;
                        glove_policy_check_prompt(gw->cfg.policy, glove_mcp_upstream_name(gu->u), own, NULL, &v);
                        allowed = glove_policy_prompt_visible(gw->cfg.policy, glove_mcp_upstream_name(gu->u), own);
                        snprintf(rule, sizeof(rule), "%s", allowed && v.allowed ? v.rule : allowed ? "prompt listed" : v.rule);
                } else {
                        gu = NULL;
                }
        } else {
                gu = route_uri(gw, target, &own, &len, &why);
                if (gu) {
                        allowed = glove_policy_resource_template_visible(gw->cfg.policy, glove_mcp_upstream_name(gu->u), own, len);
                        snprintf(rule, sizeof(rule), "%s", allowed ? "resource template listed" : "default deny");
                }
        }
        if (!gu) {
                bool invalid = why && strcmp(why, "invalid") == 0;
                refuse(gw, id, method, subject, NULL, GLOVE_RPC_INVALID_PARAMS, invalid ? "invalid params.ref.uri" : "unknown reference",
                       invalid ? "invalid_params" : is_prompt ? "unknown_prompt" : "unknown_resource",
                       invalid ? "params.ref.uri" : "no such upstream prompt or resource", arg, true);
                return;
        }
        const char *uname = glove_mcp_upstream_name(gu->u);
        if (!allowed) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_POLICY_DENIED, "the completion is not allowed by policy",
                       "policy_denied", rule, arg, true);
                return;
        }
        if (!gw_usable(gu)) {
                refuse(gw, id, method, subject, uname, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running",
                       "upstream_unavailable", uname, arg, true);
                return;
        }
        json_t *fwd = json_deep_copy(params);
        json_t *fref = fwd ? json_object_get(fwd, "ref") : NULL;
        if (fref)
                json_object_set_new(fref, is_prompt ? "name" : "uri", is_prompt ? json_string(own) : json_stringn(own, len));
        forward(gw, gu, id, GLOVE_KERNEL_REQUEST_COMPLETE, fwd, TAKE_PTR(subject), rule, arg, true);
}

/* ------------------------------------------------------------------ lists */

static const char *list_key(enum glove_kernel_request_kind k) {
        return k == GLOVE_KERNEL_REQUEST_LIST_RESOURCES ? "resources"
               : k == GLOVE_KERNEL_REQUEST_LIST_TEMPLATES ? "resourceTemplates"
                                                          : "prompts";
}

static bool list_eligible(const struct gw_upstream *gu, enum glove_kernel_request_kind k) {
        return gw_usable(gu) && glove_mcp_upstream_state(gu->u) == GLOVE_MCP_UPSTREAM_READY &&
               gw_capability(gu->u, k == GLOVE_KERNEL_REQUEST_LIST_PROMPTS ? "prompts" : "resources");
}

/* The entry as the agent sees it (a new reference), or NULL when the
 * policy does not show it or it cannot be named. */
static json_t *list_entry(struct glove_kernel_gateway *gw, const struct gw_upstream *gu, enum glove_kernel_request_kind k,
                          const json_t *e, bool all) {
        const char *uname = glove_mcp_upstream_name(gu->u);
        if (!json_is_object(e))
                return NULL;
        if (k == GLOVE_KERNEL_REQUEST_LIST_PROMPTS) {
                json_t *n = json_object_get(e, "name");
                if (!json_is_string(n) || !glove_policy_tool_name_valid(json_string_value(n), json_string_length(n)) ||
                    (!all && !glove_policy_prompt_visible(gw->cfg.policy, uname, json_string_value(n))))
                        return NULL;
                char q[GLOVE_KERNEL_TOOL_MAX + 64];
                snprintf(q, sizeof(q), "%s%s%s", gu->own_names ? "" : uname, gu->own_names ? "" : ".", json_string_value(n));
                json_t *copy = json_deep_copy(e);
                if (copy)
                        json_object_set_new(copy, "name", json_string(q));
                return copy;
        }
        const char *field = k == GLOVE_KERNEL_REQUEST_LIST_RESOURCES ? "uri" : "uriTemplate";
        json_t *u = json_object_get(e, field);
        if (!json_is_string(u))
                return NULL;
        const char *uri = json_string_value(u);
        size_t len = json_string_length(u);
        bool shown;
        if (k == GLOVE_KERNEL_REQUEST_LIST_RESOURCES) {
                struct glove_policy_verdict v;
                glove_policy_check_resource(gw->cfg.policy, uname, uri, len, &v);
                shown = v.allowed;
        } else {
                shown = glove_policy_resource_template_visible(gw->cfg.policy, uname, uri, len);
        }
        char buf[GLOVE_KERNEL_AGENT_URI_MAX + 1];
        if (!shown || !agent_uri(gu, uri, len, buf, sizeof(buf)))
                return NULL;
        json_t *copy = json_deep_copy(e);
        if (copy)
                json_object_set_new(copy, field, json_string(buf));
        return copy;
}

/* Sends the page gathered (or, for Glove's own start-up listing, hands the
 * names over) and ends c. */
static void list_done(struct glove_kernel_gateway *gw, struct glove_kernel_call *c) {
        if (c->internal) {
                gw_call_finish(gw, c, "ok");
                gw_check_startup(gw); /* goes on once every start-up listing is done */
                return;
        }
        json_t *result = json_pack("{s:o}", list_key(c->kind), c->gathered ? json_incref(c->gathered) : json_array());
        if (result && c->list_more) {
                char next[32];
                snprintf(next, sizeof(next), "%zu", c->list_start + FEATURE_PAGE);
                json_object_set_new(result, "nextCursor", json_string(next));
        }
        if (c->modern && result && glove_kernel_era_complete(result, true) < 0)
                json_decref(TAKE_PTR(result));
        gw_send_agent(gw, glove_mcp_rpc_result(c->agent_id, result));
        gw_call_finish(gw, c, "ok");
}

static void list_fail(struct glove_kernel_gateway *gw, struct glove_kernel_call *c, const struct gw_upstream *gu, const char *reason,
                      const char *what) {
        char msg[160];
        snprintf(msg, sizeof(msg), "upstream %s %s %s", glove_mcp_upstream_name(gu->u), what, kind_method(c->kind));
        if (c->internal) {
                glove_error_set(&gw->err, EPROTO, "upstream.protocol", "%s", msg);
                gw_call_finish(gw, c, "error");
                gw_fail(gw);
                return;
        }
        gw_agent_error(gw, c->agent_id, GLOVE_RPC_INTERNAL_ERROR, msg, reason, glove_mcp_upstream_name(gu->u));
        gw_call_finish(gw, c, "error");
}

/* The params of a list request to an upstream: its cursor (borrowed, or
 * NULL) and the agent's progress token, if it gave one. */
static json_t *list_params(const struct glove_kernel_call *c, json_t *cursor) {
        if (!cursor && !c->progress_token)
                return NULL;
        json_t *p = json_object();
        if (p && cursor)
                json_object_set(p, "cursor", cursor);
        if (p && c->progress_token)
                json_object_set_new(p, "_meta", json_pack("{s:O}", "progressToken", c->progress_token));
        return p;
}

/* Asks the next eligible upstream from index from on, or ends the list. */
static void list_next_upstream(struct glove_kernel_gateway *gw, struct glove_kernel_call *c, size_t from) {
        for (size_t i = from; i < gw->n_ups; i++) {
                if (!list_eligible(&gw->ups[i], c->kind))
                        continue;
                c->list_pages = 1;
                c->list_entries = 0;
                gw_feature_send(&gw->ups[i], c, kind_method(c->kind), list_params(c, NULL));
                return;
        }
        list_done(gw, c);
}

static void list_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c,
                          struct glove_mcp_message *m) {
        json_t *result = json_object_get(m->root, "result");
        json_t *arr = json_is_object(result) ? json_object_get(result, list_key(c->kind)) : NULL;
        if (!json_is_array(arr)) {
                list_fail(gw, c, gu, "upstream_error", result ? "answered wrongly to" : "failed");
                return;
        }
        c->list_entries += json_array_size(arr);
        if (c->list_entries > FEATURE_ENTRIES_MAX) {
                list_fail(gw, c, gu, "upstream_list_too_long", "listed more than 4096 entries in");
                return;
        }
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
                /* Glove's own start-up listing takes every prompt a rule
                 * could name, allowed or not: a collision is one either way. */
                json_t *shown = list_entry(gw, gu, c->kind, e, c->internal);
                if (!shown)
                        continue;
                if (c->internal) {
                        json_array_append_new(c->gathered, json_incref(json_object_get(e, "name")));
                        json_decref(shown);
                        continue;
                }
                if (c->list_seen++ < c->list_start) {
                        json_decref(shown);
                        continue;
                }
                if (json_array_size(c->gathered) == FEATURE_PAGE) {
                        json_decref(shown);
                        c->list_more = true;
                        list_done(gw, c);
                        return;
                }
                json_array_append_new(c->gathered, shown);
        }
        json_t *next = json_object_get(result, "nextCursor");
        if (json_is_string(next)) {
                if (++c->list_pages > FEATURE_PAGES_MAX) {
                        list_fail(gw, c, gu, "upstream_list_too_long", "gave more than 256 pages in");
                        return;
                }
                gw_feature_send(gu, c, kind_method(c->kind), list_params(c, next));
                return;
        }
        if (c->internal)
                list_done(gw, c); /* one upstream's own listing */
        else
                list_next_upstream(gw, c, gu->index + 1);
}

/* Starts gathering a list for the agent's request id (or Glove's own,
 * internal: every entry, no page). */
static struct glove_kernel_call *list_start(struct glove_kernel_gateway *gw, const json_t *id, enum glove_kernel_request_kind kind,
                                            size_t start, bool internal, const json_t *params) {
        int e;
        struct glove_kernel_call *c = glove_kernel_calls_add(gw->calls, id, 0, 0, &e);
        if (!c) {
                if (!internal)
                        gw_agent_error(gw, id, GLOVE_RPC_INVALID_REQUEST, "too many calls in flight", "invalid_params", "in-flight bound");
                return NULL;
        }
        c->owner = gw;
        c->kind = kind;
        c->modern = !internal && gw->cur_modern;
        c->internal = internal;
        c->list_start = start;
        c->gathered = json_array();
        json_t *meta = params ? json_object_get(params, "_meta") : NULL;
        json_t *token = json_is_object(meta) ? json_object_get(meta, "progressToken") : NULL;
        if (token)
                c->progress_token = json_incref(token);
        gw_call_started(gw, c);
        list_next_upstream(gw, c, 0);
        return c;
}

static void handle_list(struct glove_kernel_gateway *gw, const json_t *id, enum glove_kernel_request_kind kind, json_t *params) {
        size_t start = 0;
        json_t *cursor = params ? json_object_get(params, "cursor") : NULL;
        if (cursor) {
                uint64_t v = 0;
                const char *text = glove_mcp_string(cursor);
                if (!text || glove_number_parse_u64(text, 0, 0, FEATURE_TOTAL_MAX, &v) < 0) {
                        gw_agent_error(gw, id, GLOVE_RPC_INVALID_PARAMS, "invalid cursor", "invalid_params", "params.cursor");
                        return;
                }
                start = (size_t)v;
        }
        (void)list_start(gw, id, kind, start, false, params);
}

/* ------------------------------------------------------------------ responses */

void gw_feature_response(struct glove_kernel_gateway *gw, struct gw_upstream *gu, struct glove_kernel_call *c,
                         struct glove_mcp_message *m) {
        if (is_list(c->kind)) {
                list_response(gw, gu, c, m);
                return;
        }
        bool is_error = json_object_get(m->root, "error") != NULL;
        json_t *body = json_object_get(m->root, is_error ? "error" : "result");
        json_t *out = json_pack("{s:s,s:O}", "jsonrpc", "2.0", "id", c->agent_id);
        if (out && body && !is_error && c->kind == GLOVE_KERNEL_REQUEST_RESOURCE_READ) {
                json_t *copy = json_deep_copy(body);
                map_contents(gu, copy);
                json_object_set_new(out, "result", copy);
        } else if (out) {
                json_object_set(out, is_error ? "error" : "result", body ? body : json_null());
        }
        /* A modern request's result: resultType, and a resources/read is
         * cacheable (decision 3). */
        if (out && c->modern && !is_error &&
            glove_kernel_era_complete(json_object_get(out, "result"), c->kind == GLOVE_KERNEL_REQUEST_RESOURCE_READ) < 0)
                json_decref(TAKE_PTR(out));
        if (c->kind == GLOVE_KERNEL_REQUEST_SUBSCRIBE && json_is_string(c->gathered)) {
                /* Relayed from now on (the upstream may update before it
                 * answers, so the URI was recorded at the request). */
                if (is_error && gu->subscribed)
                        json_object_deln(gu->subscribed, json_string_value(c->gathered), json_string_length(c->gathered));
        }
        gw_send_agent(gw, out);
        gw_call_finish(gw, c, is_error ? "error" : "ok");
}

/* ------------------------------------------------------------------ dispatch */

bool gw_feature_request(struct glove_kernel_gateway *gw, const json_t *id, const char *method, json_t *params) {
        static const struct {
                const char *method;
                enum glove_kernel_request_kind kind;
        } table[] = {
                {"resources/list", GLOVE_KERNEL_REQUEST_LIST_RESOURCES},
                {"resources/templates/list", GLOVE_KERNEL_REQUEST_LIST_TEMPLATES},
                {"prompts/list", GLOVE_KERNEL_REQUEST_LIST_PROMPTS},
                {"resources/read", GLOVE_KERNEL_REQUEST_RESOURCE_READ},
                {"resources/subscribe", GLOVE_KERNEL_REQUEST_SUBSCRIBE},
                {"resources/unsubscribe", GLOVE_KERNEL_REQUEST_UNSUBSCRIBE},
                {"prompts/get", GLOVE_KERNEL_REQUEST_PROMPT_GET},
                {"completion/complete", GLOVE_KERNEL_REQUEST_COMPLETE},
        };
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                if (strcmp(method, table[i].method) != 0)
                        continue;
                if (params && !json_is_object(params)) {
                        gw_agent_error(gw, id, GLOVE_RPC_INVALID_PARAMS, "params must be an object", "invalid_params", "params");
                        return true;
                }
                enum glove_kernel_request_kind k = table[i].kind;
                if (is_list(k))
                        handle_list(gw, id, k, params);
                else if (k == GLOVE_KERNEL_REQUEST_PROMPT_GET)
                        handle_prompt_get(gw, id, params);
                else if (k == GLOVE_KERNEL_REQUEST_COMPLETE)
                        handle_complete(gw, id, params);
                else
                        handle_resource(gw, id, k, params);
                return true;
        }
        return false;
}

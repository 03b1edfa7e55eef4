/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's side of the gateway: its channel, initialize, ping and the
 * merged tools/list (gateway.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_internal.h"
#include "glove/kernel/era.h"
#include "glove/base/cleanup.h"
#include "glove/base/number.h"

/* Largest tools/list cursor (an offset into the combined list). */
#define TOOLS_TOTAL_MAX ((unsigned long long)GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX * GLOVE_MCP_UPSTREAM_TOOLS_MAX)

static void agent_flush(struct glove_kernel_gateway *gw) {
        if (gw->agent_in < 0)
                return;
        int rr = glove_mcp_writer_flush(&gw->agent_writer, gw->agent_in);
        if (rr == -EAGAIN) {
                sd_event_source_set_enabled(gw->agent_in_src, SD_EVENT_ON);
                return;
        }
        sd_event_source_set_enabled(gw->agent_in_src, SD_EVENT_OFF);
        if (rr < 0) {
                /* The agent closed its stdin; nothing more can reach it. */
                glove_mcp_writer_free(&gw->agent_writer);
                glove_mcp_writer_init(&gw->agent_writer, GLOVE_KERNEL_GATEWAY_AGENT_PENDING_MAX);
                gw->agent_in_src = sd_event_source_disable_unref(gw->agent_in_src);
                glove_closep(&gw->agent_in);
                gw->agent_in = -1;
        }
}

int gw_send_agent(struct glove_kernel_gateway *gw, json_t *msg) {
        _cleanup_json_ json_t *m = msg;
        if (!m || gw->agent_in < 0)
                return -EPIPE;
        int rr = glove_mcp_writer_queue_json(&gw->agent_writer, m, SIZE_MAX);
        if (rr < 0) {
                glove_error_set(&gw->err, -rr, "mcp.agent_backlog", "the agent does not read its stdin (%zu bytes pending)",
                                gw->agent_writer.buf.len);
                gw_fail(gw);
                return rr;
        }
        agent_flush(gw);
        return 0;
}

/* Fast path of responses (issue 13): queues {"jsonrpc":"2.0","id":ID,
 * "result"|"error":VALUE} and a newline, VALUE being the upstream's bytes
 * as they came (glove/mcp/response_scan.h vouched for them): the message
 * gw_send_agent would write for the same response decoded, but for how the
 * value is formatted. Not written yet: gw_agent_drained (or the next
 * gw_send_agent) writes what the lines of one read queued, at once.
 * Errors as gw_send_agent's. */
int gw_queue_agent_response_with(struct glove_kernel_gateway *gw, const json_t *id, bool is_error, const char *value, size_t len,
                                 const char *insert, size_t insert_len, size_t at) {
        if (gw->agent_in < 0)
                return -EPIPE;
        char small[64];
        _cleanup_free_ char *big = NULL;
        size_t idlen = json_dumpb(id, small, sizeof(small), JSON_ENCODE_ANY | JSON_COMPACT);
        const char *idtext = small;
        if (idlen > sizeof(small)) {
                big = malloc(idlen);
                if (!big || json_dumpb(id, big, idlen, JSON_ENCODE_ANY | JSON_COMPACT) != idlen)
                        idlen = 0;
                idtext = big;
        }
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
        const char *member = is_error ? ",\"error\":" : ",\"result\":";
        if (at > len)
                at = len;
        const struct glove_mcp_piece pieces[] = {
                {head, sizeof(head) - 1}, {idtext, idlen},          {member, strlen(member)},
                {value, at},              {insert, insert_len},     {value + at, len - at},
                {"}\n", 2},
        };
        int rr = idlen ? glove_mcp_writer_queue_pieces(&gw->agent_writer, pieces, sizeof(pieces) / sizeof(pieces[0])) : -EINVAL;
        if (rr < 0) {
                glove_error_set(&gw->err, -rr, "mcp.agent_backlog", "the agent does not read its stdin (%zu bytes pending)",
                                gw->agent_writer.buf.len);
                gw_fail(gw);
                return rr;
        }
        return 0;
}

int gw_queue_agent_response(struct glove_kernel_gateway *gw, const json_t *id, bool is_error, const char *value, size_t len) {
        return gw_queue_agent_response_with(gw, id, is_error, value, len, "", 0, 0);
}

void gw_agent_drained(struct glove_kernel_gateway *gw) {
        if (glove_mcp_writer_pending(&gw->agent_writer))
                agent_flush(gw);
}

void gw_agent_error(struct glove_kernel_gateway *gw, const json_t *id, int code, const char *message, const char *reason,
                    const char *rule) {
        gw_send_agent(gw, glove_mcp_rpc_error(id, code, message, reason, rule));
}

/* Appends the tools of u that policy shows, from the start-th visible one
 * on, until page holds a whole page; *index counts visible tools. Returns
 * true when there are more than fit. */
static bool list_upstream_tools(struct glove_kernel_gateway *gw, const struct gw_upstream *gu, size_t start,
                                size_t *index, json_t *page) {
        const struct glove_mcp_upstream *u = gu->u;
        const char *uname = glove_mcp_upstream_name(u);
        size_t k;
        json_t *t;
        json_array_foreach(glove_mcp_upstream_tools(u), k, t) {
                /* A C string that is the whole name: the client keeps only
                 * valid, distinct names. */
                const char *tname = json_string_value(json_object_get(t, "name"));
                if (!glove_policy_tool_visible(gw->cfg.policy, uname, tname))
                        continue;
                /* An own name another upstream's qualified name or an
                 * earlier own-names upstream already stands for: the
                 * agent sees each name once, meaning what calls do. */
                if (gu->own_names && (gw_own_name_shadows(gw, tname) ||
                                      gw_own_name_upstream(gw, GLOVE_KERNEL_REQUEST_TOOL_CALL, tname) != gu))
                        continue;
                if ((*index)++ < start)
                        continue;
                if (json_array_size(page) == GLOVE_KERNEL_GATEWAY_TOOLS_PAGE)
                        return true;
                json_t *copy = json_deep_copy(t);
                char qualified[GLOVE_KERNEL_TOOL_MAX + 64];
                if (gu->own_names) /* --upstream-own-names */
                        snprintf(qualified, sizeof(qualified), "%s", tname);
                else
                        snprintf(qualified, sizeof(qualified), "%s.%s", uname, tname);
                json_object_set_new(copy, "name", json_string(qualified));
                json_array_append_new(page, copy);
        }
        return false;
}

static void handle_tools_list(struct glove_kernel_gateway *gw, const json_t *id, json_t *params) {
        size_t start = 0;
        json_t *cursor = params ? json_object_get(params, "cursor") : NULL;
        if (cursor) {
                uint64_t v = 0;
                /* Our cursors are decimal offsets; "100\u0000x" is none. */
                const char *text = glove_mcp_string(cursor);
                if (!text || glove_number_parse_u64(text, 0, 0, TOOLS_TOTAL_MAX, &v) < 0) {
                        gw_agent_error(gw, id, GLOVE_RPC_INVALID_PARAMS, "invalid cursor", "invalid_params", "params.cursor");
                        return;
                }
                start = (size_t)v;
        }
        json_t *tools = json_array();
        size_t index = 0;
        bool more = false;
        for (size_t i = 0; i < gw->n_ups && !more; i++) {
                const struct glove_mcp_upstream *u = gw->ups[i].u;
                if (glove_mcp_upstream_state(u) == GLOVE_MCP_UPSTREAM_DEAD || !glove_mcp_upstream_tools(u))
                        continue;
                more = list_upstream_tools(gw, &gw->ups[i], start, &index, tools);
        }
        json_t *result = json_pack("{s:o}", "tools", tools);
        if (more && result) {
                char next[32];
                snprintf(next, sizeof(next), "%zu", start + GLOVE_KERNEL_GATEWAY_TOOLS_PAGE);
                json_object_set_new(result, "nextCursor", json_string(next));
        }
        if (gw->cur_modern && result && glove_kernel_era_complete(result, true) < 0)
                json_decref(TAKE_PTR(result));
        gw_send_agent(gw, glove_mcp_rpc_result(id, result));
}

/* The initialize result: the capabilities the ready upstreams offer and
 * policy allows (gw_client_announce), and "instructions" holding the
 * upstreams' own where policy relays them, then naming the upstreams left
 * out at start (the agent's way to tell that tools it may expect are
 * absent). */
static json_t *initialize_result(struct glove_kernel_gateway *gw, const json_t *params) {
        json_t *result = glove_kernel_gateway_initialize_result(params);
        if (!result)
                return NULL;
        gw_client_announce(gw, json_object_get(result, "capabilities"));   /* tools, logging */
        gw_feature_capabilities(gw, json_object_get(result, "capabilities")); /* resources, prompts, completions */
        _cleanup_free_ char *relayed = NULL;
        size_t relayed_len = 0;
        if (gw_client_instructions(gw, &relayed, &relayed_len) < 0) {
                json_decref(result);
                return NULL;
        }
        size_t count = 0;
        for (size_t i = 0; i < gw->n_ups; i++)
                count += gw->ups[i].left_out;
        char text[GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX * 200 + 200];
        size_t n = 0;
        text[0] = '\0';
        for (size_t i = 0; i < gw->n_ups && count > 0; i++) {
                const struct gw_upstream *gu = &gw->ups[i];
                if (!gu->left_out)
                        continue;
                int w = snprintf(text + n, sizeof(text) - n, "%s%s (%s)",
                                 n ? "; " : count == 1 ? "Glove started without the upstream " : "Glove started without the upstreams ",
                                 glove_mcp_upstream_name(gu->u), gu->left_out_why);
                if (w > 0)
                        n = n + (size_t)w < sizeof(text) ? n + (size_t)w : sizeof(text) - 1;
        }
        if (count > 0)
                snprintf(text + n, sizeof(text) - n, "%s", count == 1
                         ? ". Its tools are absent from tools/list, and a call of one answers upstream_unavailable."
                         : ". Their tools are absent from tools/list, and a call of one answers upstream_unavailable.");
        if (!relayed_len && count == 0)
                return result;
        _cleanup_free_ char *all = NULL;
        if (asprintf(&all, "%s%s%s", relayed ? relayed : "", relayed_len && count ? "\n\n" : "", text) < 0) {
                all = NULL;
                json_decref(result);
                return NULL;
        }
        json_object_set_new(result, "instructions", json_string(all));
        return result;
}

/* server/discover (2026-07-28 server/discover.mdx): what initialize would
 * announce now, computed the same way, with every revision Glove serves. */
static json_t *discover_result(struct glove_kernel_gateway *gw) {
        _cleanup_json_ json_t *init = initialize_result(gw, NULL);
        if (!init)
                return NULL;
        /* What Glove does not serve to 2026-07-28 clients is not announced:
         * resources.subscribe means resourceSubscriptions on
         * subscriptions/listen, and logging is per-request logLevel.
         * listChanged is the listen's, for the kinds it honours. */
        json_t *caps = json_deep_copy(json_object_get(init, "capabilities"));
        unsigned listen = gw_listen_offered(gw);
        json_object_del(caps, "logging");
        json_object_del(json_object_get(caps, "resources"), "subscribe");
        static const struct {
                const char *cap;
                unsigned bit;
        } kinds[] = {{"tools", GW_LISTEN_TOOLS}, {"prompts", GW_LISTEN_PROMPTS}, {"resources", GW_LISTEN_RESOURCES}};
        for (size_t k = 0; caps && k < sizeof(kinds) / sizeof(kinds[0]); k++) {
                json_t *v = json_object_get(caps, kinds[k].cap);
                if (json_is_object(v) && (listen & kinds[k].bit) && json_object_set_new(v, "listChanged", json_true()) < 0)
                        json_decref(TAKE_PTR(caps));
                else if (json_is_object(v) && !(listen & kinds[k].bit))
                        json_object_del(v, "listChanged");
        }
        json_t *r = json_pack("{s:s,s:o,s:o}", "resultType", "complete", "supportedVersions", glove_kernel_era_supported(),
                              "capabilities", caps ? caps : json_object());
        json_t *instructions = json_object_get(init, "instructions");
        if (r && instructions)
                json_object_set(r, "instructions", instructions);
        if (r && (json_object_set_new(r, "ttlMs", json_integer(0)) < 0 ||
                  json_object_set_new(r, "cacheScope", json_string("private")) < 0 ||
                  json_object_set_new(r, "_meta", json_pack("{s:O}", GLOVE_KERNEL_ERA_META_SERVER_INFO,
                                                            json_object_get(init, "serverInfo"))) < 0))
                json_decref(TAKE_PTR(r));
        return r;
}

/* A request refused for its era (no upstream sees it): on record as
 * "era_refused" {id, method, reason, rule} (docs/mcp-mediation.md), then
 * answered with msg (stolen). */
static void era_refuse(struct glove_kernel_gateway *gw, const json_t *id, const char *method, json_t *msg) {
        _cleanup_json_ json_t *m = msg;
        json_t *data = json_object_get(json_object_get(m, "error"), "data");
        gw_audit(gw, "era_refused",
                 json_pack("{s:O,s:s,s:s,s:s}", "id", id ? id : json_null(), "method", method, "reason",
                           glove_mcp_string(json_object_get(data, "reason")) ?: "?", "rule",
                           glove_mcp_string(json_object_get(data, "rule")) ?: "?"));
        gw_send_agent(gw, TAKE_PTR(m));
}

/* Methods 2026-07-28 removed (changelog): only legacy requests may use them. */
static bool removed_in_modern(const char *method) {
        static const char *const removed[] = {
                "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
                "notifications/initialized", "notifications/roots/list_changed",
        };
        for (size_t i = 0; i < sizeof(removed) / sizeof(removed[0]); i++)
                if (strcmp(method, removed[i]) == 0)
                        return true;
        return false;
}

/* The checks a 2026-07-28 request passes before it is served like any
 * other (docs/mcp-mediation.md, "Protocol revisions"). Returns true when
 * it was answered here. */
static bool modern_request(struct glove_kernel_gateway *gw, struct glove_mcp_message *m, enum glove_kernel_era era) {
        const char *method = m->method;
        if (era != GLOVE_KERNEL_ERA_MODERN) {
                era_refuse(gw, m->id, method, glove_kernel_era_error(m->id, m->params, era));
                return true;
        }
        if (!gw->cfg.shared_channel && gw->agent_sent_initialize) {
                era_refuse(gw, m->id, method,
                           glove_mcp_rpc_error(m->id, GLOVE_RPC_INVALID_REQUEST, "modern request on a legacy session", "era_mixed",
                                               "this channel began with initialize (a legacy session); 2026-07-28 requests need "
                                               "a channel of their own"));
                return true;
        }
        if (removed_in_modern(method)) {
                char msg[128];
                snprintf(msg, sizeof(msg), "method not found: %s is not part of MCP " GLOVE_KERNEL_ERA_MODERN_VERSION, method);
                era_refuse(gw, m->id, method,
                           glove_mcp_rpc_error(m->id, GLOVE_RPC_METHOD_NOT_FOUND, msg, "method_removed", GLOVE_KERNEL_ERA_MODERN_VERSION));
                return true;
        }
        if (!gw->agent_sent_modern) {
                gw->agent_sent_modern = true;
                gw_client_agent_modern(gw);
        }
        /* A retry's members: checked before any method is served (mrtr.c;
         * the methods Glove serves itself take none). */
        if (!gw_mrtr_retry(gw, m->id, method, m->params))
                return true;
        if (strcmp(method, "subscriptions/listen") == 0) {
                gw_listen_open(gw, m->id, m->params);
                return true;
        }
        if (strcmp(method, "server/discover") == 0) {
                gw_send_agent(gw, glove_mcp_rpc_result(m->id, discover_result(gw)));
                return true;
        }
        /* What a legacy upstream must not be sent (decision 4); the
         * progress token and other keys stay. */
        glove_kernel_era_strip(m->params);
        return false;
}

static void handle_agent_message(struct glove_kernel_gateway *gw, struct glove_mcp_message *m) {
        if (m->kind == GLOVE_MCP_RESPONSE) {
                /* An answer to a request Glove relayed from an upstream goes
                 * back there; any other is dropped. */
                if (!gw_client_agent_response(gw, m))
                        gw_audit(gw, "response_dropped", json_pack("{s:s,s:O}", "from", "agent", "id", m->id));
                return;
        }
        const char *method = m->method;
        enum glove_kernel_era era = glove_kernel_era_of(m->params);
        if (m->kind == GLOVE_MCP_NOTIFICATION) {
                if (era != GLOVE_KERNEL_ERA_LEGACY && removed_in_modern(method)) {
                        /* Not answered (a notification), not acted on. */
                        gw_audit(gw, "era_refused",
                                 json_pack("{s:n,s:s,s:s,s:s}", "id", "method", method, "reason", "method_removed", "rule",
                                           GLOVE_KERNEL_ERA_MODERN_VERSION));
                        return;
                }
                if (era != GLOVE_KERNEL_ERA_LEGACY)
                        glove_kernel_era_strip(m->params);
                if (strcmp(method, "notifications/cancelled") == 0)
                        gw_handle_agent_cancel(gw, m->params);
                else
                        gw_client_agent_notification(gw, m); /* initialized, roots/list_changed */
                return;
        }
        /* JSON-RPC ids are unique among requests in flight: a second one
         * would make two answers carry the same id. */
        if (glove_kernel_calls_by_agent(gw->calls, m->id) || gw_listen_has(gw, m->id)) {
                gw_refuse_duplicate(gw, m->id, method, m->params);
                return;
        }
        /* inputResponses and requestState answer a 2026-07-28
         * input_required result (mrtr.c checks a modern request's); a
         * legacy request carrying them would reach an upstream as a
         * user's or a model's answer no policy decided. */
        if (era == GLOVE_KERNEL_ERA_LEGACY &&
            (json_object_get(m->params, "inputResponses") || json_object_get(m->params, "requestState"))) {
                era_refuse(gw, m->id, method,
                           glove_mcp_rpc_error(m->id, GLOVE_RPC_INVALID_PARAMS,
                                               "inputResponses and requestState answer a 2026-07-28 input_required "
                                               "result; a legacy (initialize) request cannot carry them",
                                               "invalid_params", "params.inputResponses"));
                return;
        }
        /* Reserved _meta keys never reach an upstream, whatever the era
         * (a modern upstream gets Glove's own envelope). */
        if (era == GLOVE_KERNEL_ERA_LEGACY)
                glove_kernel_era_strip(m->params);
        /* The capabilities a request declares outlive the strip (a
         * reference held until the dispatch ends): a modern one's in its
         * _meta; a legacy one's on a shared channel, those of its session
         * (the multiplexer's key; glove/kernel/era.h). The key is Glove's
         * own and goes no further, whoever wrote it. */
        json_t *meta = json_object_get(m->params, "_meta");
        json_t *caps = NULL;
        if (era == GLOVE_KERNEL_ERA_MODERN)
                caps = json_incref(json_object_get(meta, GLOVE_KERNEL_ERA_META_CAPS));
        else if (era == GLOVE_KERNEL_ERA_LEGACY && gw->cfg.shared_channel && json_is_object(json_object_get(meta, GLOVE_KERNEL_META_SESSION_CAPS)))
                caps = json_incref(json_object_get(meta, GLOVE_KERNEL_META_SESSION_CAPS));
        if (json_is_object(meta) && json_object_get(meta, GLOVE_KERNEL_META_SESSION_CAPS)) {
                json_object_del(meta, GLOVE_KERNEL_META_SESSION_CAPS);
                if (json_object_size(meta) == 0)
                        json_object_del(m->params, "_meta");
        }
        if (era != GLOVE_KERNEL_ERA_LEGACY) {
                if (modern_request(gw, m, era)) {
                        json_decref(caps);
                        gw_mrtr_done(gw);
                        return;
                }
        } else if (strcmp(method, "initialize") == 0) {
                if (!gw->cfg.shared_channel && gw->agent_sent_modern) {
                        era_refuse(gw, m->id, method,
                                   glove_mcp_rpc_error(m->id, GLOVE_RPC_INVALID_REQUEST, "initialize on a modern session",
                                                       "era_mixed", "this channel began with 2026-07-28 requests; initialize "
                                                       "(a legacy session) needs a channel of its own"));
                        return;
                }
                gw->agent_sent_initialize = true;
        }
        gw->cur_modern = era == GLOVE_KERNEL_ERA_MODERN;
        gw->cur_caps = caps;
        if (strcmp(method, "initialize") == 0) {
                gw_client_agent_initialize(gw, m->params);
                gw_send_agent(gw, glove_mcp_rpc_result(m->id, initialize_result(gw, m->params)));
        } else if (strcmp(method, "logging/setLevel") == 0)
                gw_client_set_level(gw, m->id, m->params);
        else if (strcmp(method, "ping") == 0)
                gw_send_agent(gw, glove_mcp_rpc_result(m->id, json_object()));
        else if (strcmp(method, "tools/list") == 0)
                handle_tools_list(gw, m->id, m->params);
        else if (strcmp(method, "tools/call") == 0)
                gw_handle_tools_call(gw, m->id, m->params);
        else if (gw_feature_request(gw, m->id, method, m->params))
                ; /* resources, prompts, completion */
        else
                gw_agent_error(gw, m->id, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", NULL, NULL);
        gw->cur_modern = false;
        gw_mrtr_done(gw);
        json_decref(caps);
}

/* Handles one line from the agent. */
static void handle_agent_line(struct glove_kernel_gateway *gw, const char *line, size_t len) {
        struct glove_mcp_message m;
        json_t *rid = NULL;
        struct glove_error e = {0};
        if (glove_mcp_message_parse(line, len, gw->cfg.max_frame, GLOVE_MCP_PARSE_BOUND_VALUES, &m, &rid, &e) < 0) {
                bool parse = strcmp(e.code, "mcp.parse") == 0;
                gw_agent_error(gw, parse ? NULL : rid, parse ? GLOVE_RPC_PARSE_ERROR : GLOVE_RPC_INVALID_REQUEST, e.message, NULL,
                               NULL);
                json_decref(rid);
                return;
        }
        json_decref(rid);
        gw->cur_len = len;
        handle_agent_message(gw, &m);
        glove_mcp_message_free(&m);
}

static int agent_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)revents;
        struct glove_kernel_gateway *gw = userdata;
        ssize_t n = glove_mcp_reader_fill(&gw->agent_reader, fd);
        if (n == -EAGAIN)
                return 0;
        /* The caller may count the channel towards a limit. */
        if (n > 0 && gw->cfg.agent_bytes && !gw->cfg.agent_bytes(gw->cfg.userdata, (size_t)n)) {
                /* Over the limit (the agent is being killed): read no more,
                 * or the buffer would grow on every wake-up until then. */
                gw->agent_out_src = sd_event_source_disable_unref(gw->agent_out_src);
                return 0;
        }
        for (;;) {
                const char *line;
                size_t len;
                int rr = glove_mcp_reader_next(&gw->agent_reader, &line, &len);
                if (rr == -EMSGSIZE) {
                        const char *bound = gw->cfg.max_frame_name ? gw->cfg.max_frame_name : "the frame bound";
                        gw_audit(gw, "frame_oversized", json_pack("{s:s,s:I}", "from", "agent", "max_frame", (json_int_t)gw->cfg.max_frame));
                        glove_error_set(&gw->err, EMSGSIZE, "mcp.frame_too_large",
                                        "the agent sent a line longer than %s %zu bytes; the channel is closed", bound, gw->cfg.max_frame);
                        gw_fail(gw);
                        return 0;
                }
                if (rr <= 0)
                        break;
                handle_agent_line(gw, line, len);
                if (gw->stopping)
                        return 0;
        }
        if (n <= 0) {
                /* End of the agent's output (or a read error): nothing more will
                 * come; the agent's exit ends the session. */
                gw->agent_out_src = sd_event_source_disable_unref(gw->agent_out_src);
                glove_closep(&gw->agent_out);
                gw->agent_out = -1;
        }
        return 0;
}

/* The requests of one read of the agent reach each upstream in one write
 * (issue 13): the upstreams' writes are held while its lines are handled. */
int gw_on_agent_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct glove_kernel_gateway *gw = userdata;
        gw_hold_upstreams(gw, true);
        int rr = agent_readable(s, fd, revents, userdata);
        gw_hold_upstreams(gw, false);
        return rr;
}

int gw_on_agent_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        (void)revents;
        agent_flush(userdata);
        return 0;
}

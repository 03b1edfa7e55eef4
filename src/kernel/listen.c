/* SPDX-License-Identifier: Apache-2.0 */
/* subscriptions/listen of MCP 2026-07-28 (basic/patterns/subscriptions.mdx)
 * served by the gateway to a modern agent (gateway_internal.h;
 * docs/mcp-mediation.md, "Subscriptions"). A listen is a request that is
 * never answered while it lasts: Glove acknowledges it with
 * notifications/subscriptions/acknowledged naming the kinds it honours,
 * then sends the list-changed notifications of those kinds on it, each
 * tagged with the listen's id; the agent ends it with
 * notifications/cancelled. Resource subscriptions are not honoured (the
 * acknowledgement leaves them out, as the revision lets a server do). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway_internal.h"
#include "glove/base/cleanup.h"
#include "glove/kernel/era.h"

/* The filter keys and the notification each stands for. */
static const struct {
        const char *key;
        const char *method;
        unsigned bit;
} kinds[] = {
        {"toolsListChanged", "notifications/tools/list_changed", GW_LISTEN_TOOLS},
        {"promptsListChanged", "notifications/prompts/list_changed", GW_LISTEN_PROMPTS},
        {"resourcesListChanged", "notifications/resources/list_changed", GW_LISTEN_RESOURCES},
};

/* The kinds whose listChanged the agent is announced (tools: some usable
 * upstream announces it; prompts and resources: as initialize's
 * capabilities say, which also need the policy to show some): what a
 * listen may get. */
static unsigned offered(struct glove_kernel_gateway *gw) {
        unsigned f = 0;
        for (size_t i = 0; i < gw->n_ups; i++)
                if (gw_usable(&gw->ups[i]) && glove_mcp_upstream_offers(gw->ups[i].u, "tools", "listChanged"))
                        f |= GW_LISTEN_TOOLS;
        _cleanup_json_ json_t *caps = json_object();
        if (caps)
                gw_feature_capabilities(gw, caps);
        if (json_is_true(json_object_get(json_object_get(caps, "prompts"), "listChanged")))
                f |= GW_LISTEN_PROMPTS;
        if (json_is_true(json_object_get(json_object_get(caps, "resources"), "listChanged")))
                f |= GW_LISTEN_RESOURCES;
        return f;
}

unsigned gw_listen_offered(struct glove_kernel_gateway *gw) {
        return offered(gw);
}

static json_t *tag(const json_t *id) {
        return json_pack("{s:{s:O}}", "_meta", GLOVE_KERNEL_ERA_META_SUBSCRIPTION, id);
}

bool gw_listen_has(const struct glove_kernel_gateway *gw, const json_t *id) {
        for (size_t i = 0; i < GW_LISTENS_MAX; i++)
                if (gw->listens[i].used && json_equal(gw->listens[i].id, id))
                        return true;
        return false;
}

void gw_listen_open(struct glove_kernel_gateway *gw, const json_t *id, json_t *params) {
        json_t *filter = json_object_get(params, "notifications");
        if (!json_is_object(filter)) {
                gw_agent_error(gw, id, GLOVE_RPC_INVALID_PARAMS, "subscriptions/listen needs params.notifications, an object",
                               "invalid_params", "params.notifications");
                return;
        }
        struct gw_listen *l = NULL;
        for (size_t i = 0; i < GW_LISTENS_MAX && !l; i++)
                if (!gw->listens[i].used)
                        l = &gw->listens[i];
        if (!l) {
                char rule[48];
                snprintf(rule, sizeof(rule), "listen bound %d", GW_LISTENS_MAX);
                gw_agent_error(gw, id, GLOVE_RPC_INVALID_REQUEST, "too many subscriptions/listen open", "too_many_requests", rule);
                return;
        }
        unsigned can = offered(gw), want = 0;
        json_t *honoured = json_object();
        for (size_t k = 0; honoured && k < sizeof(kinds) / sizeof(kinds[0]); k++)
                if (json_is_true(json_object_get(filter, kinds[k].key))) {
                        want |= kinds[k].bit;
                        if ((can & kinds[k].bit) && json_object_set_new(honoured, kinds[k].key, json_true()) < 0)
                                json_decref(TAKE_PTR(honoured));
                }
        json_t *ack = honoured ? tag(id) : NULL;
        if (!ack || json_object_set(ack, "notifications", honoured) < 0 ||
            gw_audit(gw, "listen",
                     json_pack("{s:O,s:s,s:O,s:b}", "id", id, "phase", "open", "honoured", honoured, "resource_subscriptions_refused",
                               json_array_size(json_object_get(filter, "resourceSubscriptions")) > 0)) < 0) {
                json_decref(ack);
                json_decref(honoured);
                gw_agent_error(gw, id, GLOVE_RPC_INTERNAL_ERROR, "the listen could not be opened (out of memory or audit failure)",
                               "internal_error", "gateway");
                return;
        }
        json_decref(honoured);
        *l = (struct gw_listen){.used = true, .id = json_incref((json_t *)id), .kinds = want & can};
        gw_send_agent(gw, glove_mcp_rpc_request(NULL, "notifications/subscriptions/acknowledged", ack));
}

bool gw_listen_cancel(struct glove_kernel_gateway *gw, const json_t *id, const char *how) {
        for (size_t i = 0; i < GW_LISTENS_MAX; i++) {
                struct gw_listen *l = &gw->listens[i];
                if (!l->used || !json_equal(l->id, id))
                        continue;
                gw_audit(gw, "listen", json_pack("{s:O,s:s,s:s}", "id", l->id, "phase", "close", "how", how));
                json_decref(l->id);
                *l = (struct gw_listen){0};
                return true;
        }
        return false;
}

void gw_listen_notify(struct glove_kernel_gateway *gw, const char *method) {
        unsigned bit = 0;
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
                if (strcmp(method, kinds[k].method) == 0)
                        bit = kinds[k].bit;
        for (size_t i = 0; bit && i < GW_LISTENS_MAX; i++) {
                struct gw_listen *l = &gw->listens[i];
                if (l->used && (l->kinds & bit))
                        gw_send_agent(gw, glove_mcp_rpc_request(NULL, method, tag(l->id)));
        }
}

void gw_listen_clear(struct glove_kernel_gateway *gw) {
        for (size_t i = 0; i < GW_LISTENS_MAX; i++) {
                json_decref(gw->listens[i].id);
                gw->listens[i] = (struct gw_listen){0};
        }
}

/* SPDX-License-Identifier: Apache-2.0 */
/* What the initialize result announces for resources, prompts and
 * completions, and --upstream-own-names: the start-up listing of prompts
 * and the collision check (docs/mcp-mediation.md, "Own names"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway_internal.h"

/* ------------------------------------------------------------------ initialize */

void gw_feature_capabilities(struct glove_kernel_gateway *gw, json_t *caps) {
        bool prompts = false, resources = false, subscribe = false, list_changed = false, completions = false;
        bool prompts_changed = false;
        for (size_t i = 0; i < gw->n_ups; i++) {
                const struct gw_upstream *gu = &gw->ups[i];
                if (!gw_usable(gu) || glove_mcp_upstream_state(gu->u) != GLOVE_MCP_UPSTREAM_READY)
                        continue;
                const char *uname = glove_mcp_upstream_name(gu->u);
                bool p = gw_capability(gu->u, "prompts") && glove_policy_allows_any(gw->cfg.policy, GLOVE_POLICY_FEATURE_PROMPTS, uname);
                const json_t *r = gw_capability(gu->u, "resources");
                bool rr = r && glove_policy_allows_any(gw->cfg.policy, GLOVE_POLICY_FEATURE_RESOURCES, uname);
                prompts = prompts || p;
                prompts_changed = prompts_changed || (p && json_is_true(json_object_get(gw_capability(gu->u, "prompts"), "listChanged")));
                resources = resources || rr;
                /* A 2026-07-28 upstream's resources.subscribe means
                 * resourceSubscriptions on subscriptions/listen, which Glove
                 * does not maintain yet: not announced for it. */
                subscribe = subscribe || (rr && !glove_mcp_upstream_modern(gu->u) && json_is_true(json_object_get(r, "subscribe")));
                list_changed = list_changed || (rr && json_is_true(json_object_get(r, "listChanged")));
                completions = completions || (gw_capability(gu->u, "completions") && (p || rr));
        }
        if (prompts)
                json_object_set_new(caps, "prompts", prompts_changed ? json_pack("{s:b}", "listChanged", 1) : json_object());
        if (resources) {
                json_t *o = json_object();
                if (o && subscribe)
                        json_object_set_new(o, "subscribe", json_true());
                if (o && list_changed)
                        json_object_set_new(o, "listChanged", json_true());
                json_object_set_new(caps, "resources", o);
        }
        if (completions)
                json_object_set_new(caps, "completions", json_object());
}

/* ------------------------------------------------------------------ own names */

/* The name the agent sees for gu's tool or prompt n. */
static void seen_name(const struct gw_upstream *gu, const char *n, char *out, size_t size) {
        if (gu->own_names)
                snprintf(out, size, "%s", n);
        else
                snprintf(out, size, "%s.%s", glove_mcp_upstream_name(gu->u), n);
}

/* Whether gu's names of the kind include the name the agent sees as q: the
 * seen names of b's entries are compared with a's. Sets gw->err and
 * returns true on the first collision. */
static bool collide(struct glove_kernel_gateway *gw, const struct gw_upstream *a, const struct gw_upstream *b, const json_t *na,
                    const json_t *nb, const char *what) {
        size_t i, k;
        json_t *x, *y;
        char sa[GLOVE_KERNEL_TOOL_MAX + 64], sb[GLOVE_KERNEL_TOOL_MAX + 64];
        json_array_foreach(na, i, x) {
                const char *xn = json_is_object(x) ? json_string_value(json_object_get(x, "name")) : json_string_value(x);
                if (!xn)
                        continue;
                seen_name(a, xn, sa, sizeof(sa));
                json_array_foreach(nb, k, y) {
                        const char *yn = json_is_object(y) ? json_string_value(json_object_get(y, "name")) : json_string_value(y);
                        if (!yn)
                                continue;
                        seen_name(b, yn, sb, sizeof(sb));
                        if (strcmp(sa, sb) != 0)
                                continue;
                        glove_error_set(&gw->err, EINVAL, "gateway.name_collision",
                                        "the %s %s of upstream %s and the %s %s of upstream %s would both reach the agent as %s "
                                        "(--upstream-own-names)",
                                        what, xn, glove_mcp_upstream_name(a->u), what, yn, glove_mcp_upstream_name(b->u), sa);
                        return true;
                }
        }
        return false;
}

static bool check_collisions(struct glove_kernel_gateway *gw) {
        for (size_t i = 0; i < gw->n_ups; i++)
                for (size_t k = i + 1; k < gw->n_ups; k++) {
                        const struct gw_upstream *a = &gw->ups[i], *b = &gw->ups[k];
                        if ((!a->own_names && !b->own_names) || a->left_out || b->left_out)
                                continue;
                        if (collide(gw, a, b, glove_mcp_upstream_tools(a->u), glove_mcp_upstream_tools(b->u), "tool") ||
                            collide(gw, a, b, a->prompt_names, b->prompt_names, "prompt"))
                                return true;
                        if (a->own_names && b->own_names && gw_capability(a->u, "resources") && gw_capability(b->u, "resources")) {
                                glove_error_set(&gw->err, EINVAL, "gateway.name_collision",
                                                "upstreams %s and %s both offer resources under their own URIs: a URI could not "
                                                "be routed (--upstream-own-names)",
                                                glove_mcp_upstream_name(a->u), glove_mcp_upstream_name(b->u));
                                return true;
                        }
                }
        return false;
}

/* Glove's own prompts/list of one upstream at start: the names go to
 * gu->prompt_names when it ends (list_done finishes the call; the names
 * are taken here first). */
static int startup_list(struct glove_kernel_gateway *gw, struct gw_upstream *gu) {
        char id[48];
        snprintf(id, sizeof(id), "glove-startup-prompts-%zu", gu->index);
        json_t *jid = json_string(id);
        int e;
        struct glove_kernel_call *c = jid ? glove_kernel_calls_add(gw->calls, jid, gu->index, 0, &e) : NULL;
        json_decref(jid);
        if (!c)
                return -ENOMEM;
        c->owner = gw;
        c->kind = GLOVE_KERNEL_REQUEST_LIST_PROMPTS;
        c->internal = true;
        c->gathered = json_array();
        json_decref(gu->prompt_names);
        gu->prompt_names = json_incref(c->gathered);
        gw_call_started(gw, c);
        c->list_pages = 1;
        gw_feature_send(gu, c, "prompts/list", NULL);
        return 0;
}

bool gw_own_names_ready(struct glove_kernel_gateway *gw) {
        bool any = false;
        for (size_t i = 0; i < gw->n_ups; i++)
                any = any || gw->ups[i].own_names;
        if (!any || gw->own_names_stage == 2)
                return true;
        if (gw->own_names_stage == 0) {
                gw->own_names_stage = 1;
                for (size_t i = 0; i < gw->n_ups; i++)
                        if (!gw->ups[i].left_out && gw_capability(gw->ups[i].u, "prompts") && startup_list(gw, &gw->ups[i]) < 0) {
                                glove_error_set(&gw->err, ENOMEM, "gateway.nomem", "out of memory");
                                gw_fail(gw);
                                return false;
                        }
        }
        for (size_t i = 0, seen = 0; i < GLOVE_KERNEL_CALLS_MAX && seen < gw->calls->count; i++) {
                if (!gw->calls->slots[i].used)
                        continue;
                seen++;
                if (gw->calls->slots[i].internal)
                        return false; /* still listing */
        }
        gw->own_names_stage = 2;
        if (check_collisions(gw)) {
                gw_fail(gw);
                return false;
        }
        return true;
}

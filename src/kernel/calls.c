/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/kernel/calls.h"

#include <errno.h>
#include <string.h>

void glove_kernel_calls_init(struct glove_kernel_calls *calls) {
        memset(calls, 0, sizeof(*calls));
}

void glove_kernel_calls_remove(struct glove_kernel_calls *calls, struct glove_kernel_call *call) {
        if (!call || !call->used)
                return;
        json_decref(call->agent_id);
        if (call->progress_token)
                json_decref(call->progress_token);
        json_decref(call->subject);
        json_decref(call->gathered);
        json_decref(call->retry_params);
        json_decref(call->answers);
        json_decref(call->retry_state);
        memset(call, 0, sizeof(*call));
        calls->count--;
}

void glove_kernel_calls_clear(struct glove_kernel_calls *calls) {
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && calls->count > 0; i++)
                glove_kernel_calls_remove(calls, &calls->slots[i]);
}

/* JSON-RPC ids are equal when both are the same string or the same integer;
 * the string "1" and the integer 1 are different ids. */
static bool same_id(const json_t *a, const json_t *b) {
        if (json_is_integer(a) && json_is_integer(b))
                return json_integer_value(a) == json_integer_value(b);
        if (json_is_string(a) && json_is_string(b))
                return json_string_length(a) == json_string_length(b) &&
                       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
        return false;
}

struct glove_kernel_call *glove_kernel_calls_by_agent(struct glove_kernel_calls *calls, const json_t *agent_id) {
        size_t seen = 0;
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && seen < calls->count; i++) {
                struct glove_kernel_call *c = &calls->slots[i];
                if (!c->used)
                        continue;
                seen++;
                if (same_id(c->agent_id, agent_id))
                        return c;
        }
        return NULL;
}

struct glove_kernel_call *glove_kernel_calls_by_upstream(struct glove_kernel_calls *calls, size_t upstream,
                                                         const json_t *upstream_id) {
        if (!json_is_integer(upstream_id))
                return NULL;
        int64_t id = json_integer_value(upstream_id);
        size_t seen = 0;
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && seen < calls->count; i++) {
                struct glove_kernel_call *c = &calls->slots[i];
                if (!c->used)
                        continue;
                seen++;
                if (c->upstream == upstream && c->upstream_id == id)
                        return c;
        }
        return NULL;
}

struct glove_kernel_call *glove_kernel_calls_add(struct glove_kernel_calls *calls, const json_t *agent_id,
                                                 size_t upstream, int64_t upstream_id, int *error) {
        *error = 0;
        if (!json_is_string(agent_id) && !json_is_integer(agent_id)) {
                *error = -EINVAL;
                return NULL;
        }
        if (glove_kernel_calls_by_agent(calls, agent_id)) {
                *error = -EEXIST;
                return NULL;
        }
        if (calls->count >= GLOVE_KERNEL_CALLS_MAX) {
                *error = -ENOSPC;
                return NULL;
        }
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX; i++) {
                struct glove_kernel_call *c = &calls->slots[i];
                if (c->used)
                        continue;
                memset(c, 0, sizeof(*c));
                c->used = true;
                c->agent_id = json_incref((json_t *)agent_id);
                c->upstream = upstream;
                c->upstream_id = upstream_id;
                calls->count++;
                return c;
        }
        *error = -ENOSPC;
        return NULL;
}

void glove_kernel_calls_bury(struct glove_kernel_calls *calls, size_t upstream, int64_t upstream_id,
                             enum glove_kernel_tombstone_kind kind) {
        calls->tombstones[calls->tombstone_next] = (struct glove_kernel_tombstone){upstream, upstream_id, kind};
        calls->tombstone_next = (calls->tombstone_next + 1) % GLOVE_KERNEL_TOMBSTONES_MAX;
}

enum glove_kernel_tombstone_kind glove_kernel_calls_exhume(struct glove_kernel_calls *calls, size_t upstream,
                                                           const json_t *upstream_id) {
        if (!json_is_integer(upstream_id))
                return GLOVE_KERNEL_TOMBSTONE_NONE;
        int64_t id = json_integer_value(upstream_id);
        for (size_t i = 0; i < GLOVE_KERNEL_TOMBSTONES_MAX; i++) {
                struct glove_kernel_tombstone *t = &calls->tombstones[i];
                if (t->kind != GLOVE_KERNEL_TOMBSTONE_NONE && t->upstream == upstream && t->upstream_id == id) {
                        enum glove_kernel_tombstone_kind kind = t->kind;
                        memset(t, 0, sizeof(*t));
                        return kind;
                }
        }
        return GLOVE_KERNEL_TOMBSTONE_NONE;
}

int glove_kernel_split_name(const char *qualified, size_t *upstream_len, const char **tool) {
        const char *dot = strchr(qualified, '.');
        if (!dot || dot == qualified || dot[1] == '\0')
                return -EINVAL;
        *upstream_len = (size_t)(dot - qualified);
        *tool = dot + 1;
        return 0;
}

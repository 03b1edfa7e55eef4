/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Correlation of forwarded tools/call requests (issue "glove run",
 * Correlation): each call an agent makes gets its own upstream request id;
 * the table maps the upstream's response back to the agent's id. An agent id
 * already in flight is refused without disturbing the first call.
 *
 * Bounded: at most GLOVE_KERNEL_CALLS_MAX calls in flight. Lookups are linear
 * over the occupied slots, which stay few (one per concurrent call).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GLOVE_KERNEL_CALLS_MAX 1024
#define GLOVE_KERNEL_TOOL_MAX 192

struct glove_kernel_call {
        bool used;
        json_t *agent_id;            /* owned reference: the agent's request id (string or integer) */
        size_t upstream;             /* index of the upstream the call went to */
        int64_t upstream_id;         /* id Glove gave the forwarded request */
        json_t *progress_token;      /* owned reference or NULL: params._meta.progressToken */
        uint64_t start_us;           /* monotonic time the call was forwarded */
        bool cancelled;              /* the agent cancelled it; the response is dropped */
        void *owner;                 /* the caller's context, opaque here */
        char tool[GLOVE_KERNEL_TOOL_MAX];   /* qualified name, for audit records */
        char arguments_sha256[65];
};

struct glove_kernel_calls {
        struct glove_kernel_call slots[GLOVE_KERNEL_CALLS_MAX];
        size_t count;
};

void glove_kernel_calls_init(struct glove_kernel_calls *calls);

/* Releases every entry (references and all). */
void glove_kernel_calls_clear(struct glove_kernel_calls *calls);

/*
 * Registers a call of agent_id (borrowed; a reference is taken) to upstream
 * under upstream_id. Returns the entry, or NULL with *error = -EEXIST when
 * agent_id is already in flight (the first call is untouched), -ENOSPC when
 * GLOVE_KERNEL_CALLS_MAX calls are in flight, -EINVAL for an id that is not
 * a string or an integer.
 */
struct glove_kernel_call *glove_kernel_calls_add(struct glove_kernel_calls *calls, const json_t *agent_id,
                                                 size_t upstream, int64_t upstream_id, int *error);

/* The in-flight call with this agent id, or NULL. String ids are compared
 * with their JSON length, so "n" and "n\u0000x" are different ids. */
struct glove_kernel_call *glove_kernel_calls_by_agent(struct glove_kernel_calls *calls, const json_t *agent_id);

/* The in-flight call of upstream with this upstream id (a JSON integer), or
 * NULL (unknown, or not an integer). */
struct glove_kernel_call *glove_kernel_calls_by_upstream(struct glove_kernel_calls *calls, size_t upstream,
                                                         const json_t *upstream_id);

/* Frees the entry's references and its slot. */
void glove_kernel_calls_remove(struct glove_kernel_calls *calls, struct glove_kernel_call *call);

/*
 * Splits a qualified tool name "UPSTREAM.TOOL" at its first dot (issue
 * "glove run": tools reach the agent as NAME.TOOL). qualified is
 * NUL-terminated: a name taken from a JSON string must have been checked to
 * hold no NUL first. *upstream_len is the length of UPSTREAM; *tool points
 * after the dot. Returns 0, or -EINVAL when there is no dot, UPSTREAM or TOOL
 * is empty.
 */
int glove_kernel_split_name(const char *qualified, size_t *upstream_len, const char **tool);

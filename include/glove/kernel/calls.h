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
/* Upstream ids of calls that ended without their answer (cancelled by the
 * agent, timed out) that are remembered, so that a late answer is known as
 * one and dropped; past this the oldest is forgotten first (its answer, if
 * it ever comes, is then dropped as an unknown id: never delivered either). */
#define GLOVE_KERNEL_TOMBSTONES_MAX 4096

/* What a forwarded request is (docs/mcp-mediation.md): a tools/call, or
 * one of the other requests Glove forwards to one upstream, or a list
 * gathered from every upstream in turn (one slot, re-keyed to each
 * upstream request it sends). */
enum glove_kernel_request_kind {
        GLOVE_KERNEL_REQUEST_TOOL_CALL = 0,
        GLOVE_KERNEL_REQUEST_RESOURCE_READ,
        GLOVE_KERNEL_REQUEST_SUBSCRIBE,
        GLOVE_KERNEL_REQUEST_UNSUBSCRIBE,
        GLOVE_KERNEL_REQUEST_PROMPT_GET,
        GLOVE_KERNEL_REQUEST_COMPLETE,
        GLOVE_KERNEL_REQUEST_LIST_RESOURCES,
        GLOVE_KERNEL_REQUEST_LIST_TEMPLATES,
        GLOVE_KERNEL_REQUEST_LIST_PROMPTS,
};

struct glove_kernel_call {
        bool used;
        enum glove_kernel_request_kind kind;   /* TOOL_CALL unless set */
        json_t *subject;             /* owned or NULL: what a non-tool request is about, for its records
                                      * (the URI as the agent named it, a prompt, a completion ref) */
        json_t *gathered;            /* owned or NULL: a list's entries gathered so far (an array) */
        size_t list_start;           /* a list: the agent's offset (its cursor) */
        size_t list_seen;            /* a list: visible entries met so far */
        size_t list_pages;           /* a list: pages asked of the current upstream */
        size_t list_entries;         /* a list: entries of the current upstream so far */
        bool list_more;              /* a list: more entries than the page holds */
        bool internal;               /* Glove's own request (a start-up listing): answered to no agent */
        json_t *agent_id;            /* owned reference: the agent's request id (string or integer) */
        size_t upstream;             /* index of the upstream the call went to */
        int64_t upstream_id;         /* id Glove gave the forwarded request */
        json_t *progress_token;      /* owned reference or NULL: params._meta.progressToken */
        uint64_t start_us;           /* monotonic time the call was forwarded */
        void *owner;                 /* the caller's context, opaque here */
        char tool[GLOVE_KERNEL_TOOL_MAX];   /* qualified name, for audit records */
        char arguments_sha256[65];
        /* Its response goes to the agent unchanged but for the id, so the
         * fast path of responses may forward the upstream's bytes as they
         * are (issue 13). False (the default) for a request whose result
         * the gateway rewrites: the tree path then handles its response. */
        bool verbatim;
        /* The agent's request was a 2026-07-28 one (glove/kernel/era.h):
         * its result is marked "resultType":"complete" (and, for cacheable
         * ones, "ttlMs" and "cacheScope") on its way to the agent. */
        bool modern;
        /* A modern request: the client features (GLOVE_POLICY_CLIENT_*)
         * both the agent declared in it and the policy grants the
         * upstream; what an input_required result may ask for. */
        unsigned client_features;
        /* A legacy agent's request to a modern upstream whose
         * input_required Glove translates (the agent answers requests of
         * Glove; mrtr.c): the params as forwarded (owned), the answers
         * gathered this round (owned object, key -> result), the
         * upstream's requestState (owned or NULL), the input requests
         * still unanswered, and the rounds so far. */
        json_t *retry_params;
        json_t *answers;
        json_t *retry_state;
        size_t waiting;
        unsigned rounds;
        size_t retained;             /* bytes retry_params stands for (the agent's line), for the budget */
        bool untranslated;           /* it could have been translated, but the budget was spent */
};

/* Why a call ended before its answer came. */
enum glove_kernel_tombstone_kind {
        GLOVE_KERNEL_TOMBSTONE_NONE = 0,      /* a free ring entry */
        GLOVE_KERNEL_TOMBSTONE_CANCELLED,     /* the agent sent notifications/cancelled */
        GLOVE_KERNEL_TOMBSTONE_TIMEOUT,       /* the call timed out */
};

struct glove_kernel_tombstone {
        size_t upstream;
        int64_t upstream_id;
        enum glove_kernel_tombstone_kind kind;
};

struct glove_kernel_calls {
        struct glove_kernel_call slots[GLOVE_KERNEL_CALLS_MAX];
        size_t count;
        /* A ring of GLOVE_KERNEL_TOMBSTONES_MAX entries: next is where the
         * next one goes (overwriting the oldest once full). */
        struct glove_kernel_tombstone tombstones[GLOVE_KERNEL_TOMBSTONES_MAX];
        size_t tombstone_next;
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

/* Remembers that upstream's request upstream_id ended without its answer
 * (kind: CANCELLED or TIMEOUT). O(1); once GLOVE_KERNEL_TOMBSTONES_MAX are
 * remembered, the oldest is forgotten. */
void glove_kernel_calls_bury(struct glove_kernel_calls *calls, size_t upstream, int64_t upstream_id,
                             enum glove_kernel_tombstone_kind kind);

/* When upstream_id (a JSON integer, borrowed) of upstream is remembered:
 * forgets it (one answer per request) and returns its kind; else
 * GLOVE_KERNEL_TOMBSTONE_NONE. Linear in GLOVE_KERNEL_TOMBSTONES_MAX, and
 * only asked for an answer that matches no call in flight. */
enum glove_kernel_tombstone_kind glove_kernel_calls_exhume(struct glove_kernel_calls *calls, size_t upstream,
                                                           const json_t *upstream_id);

/*
 * Splits a qualified tool name "UPSTREAM.TOOL" at its first dot (issue
 * "glove run": tools reach the agent as NAME.TOOL). qualified is
 * NUL-terminated: a name taken from a JSON string must have been checked to
 * hold no NUL first. *upstream_len is the length of UPSTREAM; *tool points
 * after the dot. Returns 0, or -EINVAL when there is no dot, UPSTREAM or TOOL
 * is empty.
 */
int glove_kernel_split_name(const char *qualified, size_t *upstream_len, const char **tool);

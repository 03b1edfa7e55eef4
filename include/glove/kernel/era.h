/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * MCP protocol eras (issue 23; MCP 2026-07-28, basic/versioning.mdx and
 * basic/index.mdx "_meta"): a request of revision 2026-07-28 ("modern")
 * names its revision and the client's capabilities in params._meta on
 * every request; the revisions up to 2025-11-25 ("legacy") negotiate them
 * once with initialize. The gateway serves both (docs/mcp-mediation.md,
 * "Protocol revisions"). These helpers are pure: no state, no I/O.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The one modern revision Glove serves. */
#define GLOVE_KERNEL_ERA_MODERN_VERSION "2026-07-28"
/* The _meta keys of a modern request (2026-07-28 RequestMetaObject). */
#define GLOVE_KERNEL_ERA_META_PREFIX "io.modelcontextprotocol/"
#define GLOVE_KERNEL_ERA_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define GLOVE_KERNEL_ERA_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define GLOVE_KERNEL_ERA_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
/* The listen a notification rides (basic/patterns/subscriptions.mdx): the
 * subscriptions/listen request's id. */
#define GLOVE_KERNEL_ERA_META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"
/* Glove's own _meta keys between the endpoints' multiplexer and the
 * gateway on a shared channel (gateway config shared_channel), never seen
 * by a client or an upstream: on a legacy request, the capabilities its
 * session declared in initialize (set by the multiplexer over any the
 * client sent); on a request of the gateway to the agent, the wire id of
 * the agent's request it is asked for (the multiplexer sends it to that
 * request's session only). */
#define GLOVE_KERNEL_META_SESSION_CAPS "glove.dev/sessionCapabilities"
#define GLOVE_KERNEL_META_RELATED "glove.dev/relatedRequest"
/* 2026-07-28 UnsupportedProtocolVersionError. */
#define GLOVE_RPC_UNSUPPORTED_VERSION -32022

enum glove_kernel_era {
        GLOVE_KERNEL_ERA_LEGACY = 0,   /* params._meta has no protocolVersion key */
        GLOVE_KERNEL_ERA_MODERN,       /* a well-formed 2026-07-28 request */
        GLOVE_KERNEL_ERA_BAD_VERSION,  /* the key is there: not a string, or not GLOVE_KERNEL_ERA_MODERN_VERSION */
        GLOVE_KERNEL_ERA_BAD_CAPS,     /* the version is served, clientCapabilities is missing or not an object */
};

/* The era of a message by its params (borrowed, may be NULL or not an
 * object: then LEGACY). Only the presence of the protocolVersion key in an
 * object params._meta makes a message modern (decision 1 of issue 23); a
 * version Glove serves in legacy sessions ("2025-11-25", ...) is still
 * BAD_VERSION there: those are negotiated with initialize. */
enum glove_kernel_era glove_kernel_era_of(const json_t *params);

/* Every revision Glove serves, modern first, then
 * glove_mcp_protocol_versions: a new array, or NULL (ENOMEM). */
json_t *glove_kernel_era_supported(void);

/* The error of a request whose params are BAD_VERSION (code
 * GLOVE_RPC_UNSUPPORTED_VERSION, message "Unsupported protocol version",
 * data {reason "unsupported_protocol_version", rule, supported,
 * requested: the value when a string, else its compact JSON text}) or
 * BAD_CAPS (-32602 naming the key, data {reason "invalid_params", rule}):
 * a whole JSON-RPC message for id (borrowed, may be NULL), a new reference,
 * or NULL (ENOMEM, or another era). */
json_t *glove_kernel_era_error(const json_t *id, const json_t *params, enum glove_kernel_era era);

/* Removes the keys of params._meta that begin with
 * GLOVE_KERNEL_ERA_META_PREFIX, and _meta itself when that empties it;
 * other keys (progressToken, ...) stay. params is changed in place (may be
 * NULL). Before a modern request goes to a legacy upstream (decision 4). */
void glove_kernel_era_strip(json_t *params);

/* Marks result (an object; anything else is left alone) as a modern
 * result: "resultType":"complete" unless it has a resultType; when
 * cacheable also "ttlMs":0 and "cacheScope":"private", each unless there.
 * Returns 0 or -ENOMEM. */
int glove_kernel_era_complete(json_t *result, bool cacheable);

/*
 * The same on the text of a result (value[0..len), a JSON value that
 * glove/mcp/response_scan.h vouched for: valid, no escaped key), without
 * decoding it: the text to insert is written to out (at most size bytes,
 * no NUL) and *at is where it goes (just after the opening brace). Returns
 * its length (0: nothing to insert, every member is there already or the
 * value is not an object), or -EINVAL when the text is not what the
 * scanner vouches for (the caller then decodes it), -ENOSPC when out is
 * too small (64 bytes always suffice).
 */
int glove_kernel_era_insert(const char *value, size_t len, bool cacheable, char *out, size_t size, size_t *at);

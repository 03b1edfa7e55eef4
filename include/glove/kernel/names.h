/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * How resource URIs of several upstreams are kept apart (docs/mcp-mediation.md,
 * "Resources"): the agent sees upstream NAME's URI U as "glove://NAME/U",
 * U verbatim, so the mapping is reversible and whatever follows "NAME/" goes
 * to upstream NAME only, unchanged. An agent cannot forge routing: the
 * upstream is the NAME between "glove://" and the first "/", and nothing in
 * U is interpreted by Glove (the policy then decides on U itself).
 */

#include <stdbool.h>
#include <stddef.h>

/* The agent's form starts with this. */
#define GLOVE_KERNEL_URI_SCHEME "glove://"
/* Longest upstream URI, bytes (as the policy's resource rules). */
#define GLOVE_KERNEL_URI_MAX 4096
/* Longest agent-side URI: scheme, NAME (32), "/", the upstream URI. */
#define GLOVE_KERNEL_AGENT_URI_MAX (sizeof(GLOVE_KERNEL_URI_SCHEME) - 1 + 32 + 1 + GLOVE_KERNEL_URI_MAX)

/*
 * The agent's form of upstream's uri[0..len) into out (a buffer of
 * out_size bytes, NUL-terminated on success). upstream is [a-z0-9_-]{1,32}.
 * Returns the length written, or -EINVAL (upstream not a name; uri empty,
 * over GLOVE_KERNEL_URI_MAX, not UTF-8 or holding a control character: C0
 * including NUL, DEL, C1), -ENOSPC (out too small).
 */
int glove_kernel_uri_qualify(const char *upstream, const char *uri, size_t len, char *out, size_t out_size);

/*
 * Splits an agent-side URI q[0..len) ("glove://NAME/U"): *name and
 * *name_len are NAME, *uri and *uri_len U (all pointing into q). Returns 0,
 * -ENOENT when q does not start with "glove://" (not the agent's form: an
 * own-names upstream's URI, or none), -EINVAL when it does but NAME is not
 * [a-z0-9_-]{1,32} followed by "/", U is empty, over GLOVE_KERNEL_URI_MAX,
 * not UTF-8 or holds a control character.
 */
int glove_kernel_uri_split(const char *q, size_t len, const char **name, size_t *name_len, const char **uri,
                           size_t *uri_len);

/* True when s[0..len) is 1 to GLOVE_KERNEL_URI_MAX bytes of UTF-8 without
 * control characters. */
bool glove_kernel_uri_valid(const char *s, size_t len);

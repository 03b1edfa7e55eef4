/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The guest-channel admission table (spec architecture.md, "Guest
 * specialized-channel admission"; spec session-policy.md, "Guest observation
 * channels and Sage guest proposals"): the host registers one descriptor per
 * payload contract (schema), then freezes the table, before any registry
 * (glove/channel/registry.h) is built on it. Channel itself knows no schema:
 * every schema string comes from a registering adapter (src/adapters/).
 *
 * Life cycle: glove_channel_host_new, any number of _register calls (each
 * one's failure must be propagated by the host: a registration failure is a
 * start-up failure), one _freeze, then read-only use. A frozen table is
 * immutable and may be read from any number of threads at once; before
 * freezing it is single-thread confined.
 *
 * Catalog digest (computed at freeze; the sealed capability and the launch
 * binding commit it): SHA-256, lowercase hex, over the length-prefixed
 * encoding of docs/digests.md ("Guest-channel catalog digest"):
 *     str("glove.channel.catalog.v1")
 *     u32(number of schemas)
 *     for each schema, sorted by schema_id (bytewise):
 *       str(schema_id) u32(body_max_bytes) u32(ttl_max_ms)
 * with u32 four bytes big-endian and str(s) = u32(byte length) || bytes.
 * Validators are code and are not committed.
 *
 * Stable error codes (struct glove_error; err may be NULL everywhere):
 *   channel.invalid_argument   NULL table or descriptor (-EINVAL)
 *   channel.register_schema_id schema_id NULL or outside
 *                              [a-z0-9][a-z0-9._-]{0,127} (-EINVAL)
 *   channel.register_validator validate is NULL (-EINVAL)
 *   channel.register_bounds    body_max_bytes outside 1..GLOVE_CHANNEL_BODY_MAX,
 *                              or ttl_max_ms outside 1..GLOVE_CHANNEL_TTL_LIMIT_MS
 *                              (-EINVAL)
 *   channel.register_duplicate the schema_id is registered already (-EEXIST)
 *   channel.register_full      GLOVE_CHANNEL_HOST_SCHEMAS_MAX schemas already
 *                              (-ENOSPC)
 *   channel.host_frozen        register or freeze after freeze (-EPERM)
 *   channel.host_empty         freeze with no schema registered (-ENOENT)
 *   channel.no_memory          (-ENOMEM)
 *   digest.*                   the catalog digest could not be computed
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"

/* Largest canonical JSON body of any schema, in bytes (8 KiB). */
#define GLOVE_CHANNEL_BODY_MAX 8192
/* Longest schema_id, in bytes. */
#define GLOVE_CHANNEL_SCHEMA_ID_MAX 128
/* Largest ttl_max_ms a descriptor may declare (one day, in milliseconds). */
#define GLOVE_CHANNEL_TTL_LIMIT_MS 86400000u
/* Most schemas one table holds. */
#define GLOVE_CHANNEL_HOST_SCHEMAS_MAX 32
/* Lowercase hex SHA-256 plus NUL. */
#define GLOVE_CHANNEL_DIGEST_HEX_SIZE 65

struct glove_channel_descriptor {
        /* [a-z0-9][a-z0-9._-]{0,127}; copied at registration. */
        const char *schema_id;
        /* Body semantics: body is the intent's "body" member (a JSON object,
         * borrowed, canonical, at most body_max_bytes canonical bytes).
         * Returns 0 to admit, or a negative errno with err set to a stable
         * code of the registering adapter (a missing code is reported as
         * channel.body_rejected). Called with the registry's lock held, on
         * any thread: must be pure (no I/O, no global state) and
         * thread-safe. */
        int (*validate)(const json_t *body, struct glove_error *err);
        /* Largest canonical JSON body in bytes, 1..GLOVE_CHANNEL_BODY_MAX. */
        size_t body_max_bytes;
        /* Bound on an intent's ttl_ms, 1..GLOVE_CHANNEL_TTL_LIMIT_MS. */
        uint32_t ttl_max_ms;
};

/* The table. Opaque. */
struct glove_channel_host;

/*
 * Allocates an empty, unfrozen table into *out (the caller owns it:
 * glove_channel_host_free). Errors: channel.no_memory.
 */
int glove_channel_host_new(struct glove_channel_host **out, struct glove_error *err);

/*
 * Registers a copy of *d (schema_id is copied; validate is kept as a
 * pointer). Errors: channel.invalid_argument, channel.register_schema_id,
 * channel.register_validator, channel.register_bounds,
 * channel.register_duplicate, channel.register_full, channel.host_frozen,
 * channel.no_memory. Nothing is registered on error.
 */
int glove_channel_host_register(struct glove_channel_host *h, const struct glove_channel_descriptor *d,
                                struct glove_error *err);

/*
 * Freezes the table: no further registration, and computes the catalog
 * digest (see the top of this header). Errors: channel.host_empty,
 * channel.host_frozen (already frozen), digest.* (the table stays
 * unfrozen).
 */
int glove_channel_host_freeze(struct glove_channel_host *h, struct glove_error *err);

/* True when h is frozen (h NULL: false). */
bool glove_channel_host_frozen(const struct glove_channel_host *h);

/*
 * The descriptor registered for schema_id (exact bytes), or NULL (also for
 * NULL arguments). The pointer and its schema_id are owned by h and valid
 * until glove_channel_host_free.
 */
const struct glove_channel_descriptor *glove_channel_host_find(const struct glove_channel_host *h,
                                                               const char *schema_id);

/* Number of registered schemas. */
size_t glove_channel_host_count(const struct glove_channel_host *h);

/*
 * The i-th descriptor in schema_id order (bytewise), i < count; NULL
 * otherwise. Owned by h.
 */
const struct glove_channel_descriptor *glove_channel_host_at(const struct glove_channel_host *h, size_t i);

/*
 * The catalog digest (64 lowercase hex characters, NUL-terminated, owned by
 * h) of a frozen table; NULL when h is NULL or not frozen.
 */
const char *glove_channel_host_catalog_digest(const struct glove_channel_host *h);

/* Frees h (NULL allowed). Every registry built on h must be freed first. */
void glove_channel_host_free(struct glove_channel_host *h);

static inline void glove_channel_host_freep(struct glove_channel_host **h) {
        if (h)
                glove_channel_host_free(*h);
}
#define _cleanup_channel_host_ __attribute__((cleanup(glove_channel_host_freep)))

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Helpers shared by the channel sources: identifier charsets and the
 * length-prefixed digest encoding of docs/digests.md. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"

/* [a-z0-9][a-z0-9._-]{0,127}: a registered schema_id. */
bool channel_schema_id_valid(const char *s);

/* [A-Za-z0-9][A-Za-z0-9._:-]{0,127}: schema_id and idempotency_key of an
 * intent, session_id and runtime_id of a registry. */
bool channel_identifier_valid(const char *s);

/* True when s is exactly 64 lowercase hex characters. */
bool channel_hex64(const char *s);

/* Feeds u32(v), four bytes big-endian. */
int channel_lp_u32(struct glove_digest_sha256 *ctx, uint32_t v, struct glove_error *err);

/* Feeds str(s) = u32(len) || s[0..len). len must fit in 32 bits. */
int channel_lp_str(struct glove_digest_sha256 *ctx, const void *s, size_t len, struct glove_error *err);

/* Finishes ctx into hex (65 bytes with the NUL). */
int channel_lp_final_hex(struct glove_digest_sha256 *ctx, char hex[65], struct glove_error *err);

#include <jansson.h>

/* A structurally decoded intent (glove/channel/registry.h, "Intent"). */
struct channel_intent {
        json_t *doc;           /* owned: the decoded intent */
        const char *schema_id; /* borrowed from doc */
        const char *key;       /* idempotency_key, borrowed from doc */
        int64_t issued_at_ms;
        int64_t ttl_ms;        /* 1..GLOVE_CHANNEL_TTL_LIMIT_MS */
        const json_t *body;    /* borrowed from doc: an object */
};

/* Decodes data[0..len) strictly: size, canonical JSON object, exactly the
 * five members with their types, identifier charsets, integer ranges (ttl
 * against the table-wide limit only). Codes: channel.intent_*,
 * channel.schema_id_invalid, channel.idempotency_key_invalid,
 * channel.time_out_of_range, channel.ttl_out_of_range. */
int channel_intent_decode(const void *data, size_t len, struct channel_intent *out, struct glove_error *err);

/* Releases what channel_intent_decode holds (safe on a zeroed struct). */
void channel_intent_release(struct channel_intent *i);

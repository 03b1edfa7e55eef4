/* SPDX-License-Identifier: Apache-2.0 */
/* Structural decoding of a guest intent and the intent digest (see
 * glove/channel/registry.h, "Intent" and "Intent digest"). */
#include <errno.h>
#include <string.h>

#include "channel_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/channel/registry.h"

#define INTENT_DOMAIN "glove.channel.intent.v1"

static const char *const intent_keys[] = { "body", "idempotency_key", "issued_at_ms", "schema_id", "ttl_ms", NULL };

int glove_channel_intent_digest(const char *schema_id, const void *body, size_t body_len,
                                char hex[GLOVE_CHANNEL_DIGEST_HEX_SIZE], struct glove_error *err) {
        if (!schema_id || (!body && body_len) || !hex)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "intent digest of nothing");
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        int r = glove_digest_sha256_init(&ctx, err);
        if (r == 0)
                r = channel_lp_str(ctx, INTENT_DOMAIN, strlen(INTENT_DOMAIN), err);
        if (r == 0)
                r = channel_lp_str(ctx, schema_id, strlen(schema_id), err);
        if (r == 0)
                r = channel_lp_str(ctx, body, body_len, err);
        if (r == 0)
                r = channel_lp_final_hex(ctx, hex, err);
        return r;
}

static int member(const json_t *doc, const char *key, json_type type, const json_t **out, struct glove_error *err) {
        const json_t *v = json_object_get(doc, key);
        if (!v)
                return glove_error_set(err, EINVAL, "channel.intent_invalid", "the intent has no member %s", key);
        if (json_typeof(v) != type)
                return glove_error_set(err, EINVAL, "channel.intent_invalid", "the intent's %s has the wrong type",
                                       key);
        *out = v;
        return 0;
}

static int decode_json(const void *data, size_t len, json_t **out, struct glove_error *err) {
        struct glove_error jerr = { 0 };
        int r = glove_json_decode_canonical(data, len, GLOVE_CHANNEL_INTENT_MAX,
                                            GLOVE_JSON_OBJECT_ONLY | GLOVE_JSON_BOUND_VALUES, out, &jerr);
        if (r >= 0)
                return 0;
        if (r == -ENOMEM)
                return glove_error_set(err, ENOMEM, "channel.no_memory", "out of memory decoding an intent");
        if (jerr.code && strcmp(jerr.code, "json.not_canonical") == 0)
                return glove_error_set(err, EINVAL, "channel.intent_not_canonical",
                                       "the intent is not canonical JSON: %s", jerr.message);
        return glove_error_set(err, EINVAL, "channel.intent_invalid", "the intent is not one strict JSON object: %s (%s)",
                               jerr.message, jerr.code ? jerr.code : "json");
}

int channel_intent_decode(const void *data, size_t len, struct channel_intent *out, struct glove_error *err) {
        memset(out, 0, sizeof(*out));
        if (!data && len)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "no intent bytes");
        if (len > GLOVE_CHANNEL_INTENT_MAX)
                return glove_error_set(err, EMSGSIZE, "channel.intent_too_large", "intent of %zu bytes (at most %d)",
                                       len, GLOVE_CHANNEL_INTENT_MAX);
        _cleanup_json_ json_t *doc = NULL;
        int r = decode_json(data, len, &doc, err);
        if (r < 0)
                return r;
        struct glove_error kerr = { 0 };
        if (glove_json_check_keys(doc, intent_keys, NULL, &kerr) < 0)
                return glove_error_set(err, EINVAL, "channel.intent_unknown_member", "%s", kerr.message);
        const json_t *schema, *key, *issued, *ttl, *body;
        if ((r = member(doc, "schema_id", JSON_STRING, &schema, err)) < 0 ||
            (r = member(doc, "idempotency_key", JSON_STRING, &key, err)) < 0 ||
            (r = member(doc, "issued_at_ms", JSON_INTEGER, &issued, err)) < 0 ||
            (r = member(doc, "ttl_ms", JSON_INTEGER, &ttl, err)) < 0 ||
            (r = member(doc, "body", JSON_OBJECT, &body, err)) < 0)
                return r;
        if (!channel_identifier_valid(json_string_value(schema)))
                return glove_error_set(err, EINVAL, "channel.schema_id_invalid",
                                       "schema_id is not 1..%d bytes of [A-Za-z0-9._:-] starting with [A-Za-z0-9]",
                                       GLOVE_CHANNEL_ID_MAX);
        if (!channel_identifier_valid(json_string_value(key)))
                return glove_error_set(err, EINVAL, "channel.idempotency_key_invalid",
                                       "idempotency_key is not 1..%d bytes of [A-Za-z0-9._:-] starting with [A-Za-z0-9]",
                                       GLOVE_CHANNEL_ID_MAX);
        json_int_t at = json_integer_value(issued), t = json_integer_value(ttl);
        if (at < 0 || at > GLOVE_CHANNEL_TIME_MAX_MS)
                return glove_error_set(err, EINVAL, "channel.time_out_of_range",
                                       "issued_at_ms %lld is outside 0..%lld", (long long)at,
                                       (long long)GLOVE_CHANNEL_TIME_MAX_MS);
        if (t < 1 || t > (json_int_t)GLOVE_CHANNEL_TTL_LIMIT_MS)
                return glove_error_set(err, EINVAL, "channel.ttl_out_of_range", "ttl_ms %lld is outside 1..%u",
                                       (long long)t, GLOVE_CHANNEL_TTL_LIMIT_MS);
        out->schema_id = json_string_value(schema);
        out->key = json_string_value(key);
        out->issued_at_ms = at;
        out->ttl_ms = t;
        out->body = body;
        out->doc = TAKE_PTR(doc);
        return 0;
}

void channel_intent_release(struct channel_intent *i) {
        if (i && i->doc) {
                json_decref(i->doc);
                i->doc = NULL;
        }
}

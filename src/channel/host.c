/* SPDX-License-Identifier: Apache-2.0 */
/* The admission table: registration, freezing and the catalog digest (see
 * glove/channel/host.h), and the helpers of channel_internal.h. */
#include "glove/channel/host.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "channel_internal.h"
#include "glove/base/bytes.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"

#define CATALOG_DOMAIN "glove.channel.catalog.v1"

struct glove_channel_host {
        struct glove_channel_descriptor d[GLOVE_CHANNEL_HOST_SCHEMAS_MAX]; /* sorted by schema_id */
        char *ids[GLOVE_CHANNEL_HOST_SCHEMAS_MAX];                        /* owned; d[i].schema_id */
        size_t n;
        bool frozen;
        char digest[GLOVE_CHANNEL_DIGEST_HEX_SIZE];
};

/* ---- channel_internal.h ---- */

static bool alnum_lower(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c) {
        return alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

bool channel_schema_id_valid(const char *s) {
        if (!s || !alnum_lower(s[0]))
                return false;
        size_t i = 1;
        for (; s[i]; i++) {
                if (i >= GLOVE_CHANNEL_SCHEMA_ID_MAX)
                        return false;
                if (!alnum_lower(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
                        return false;
        }
        return true;
}

bool channel_identifier_valid(const char *s) {
        if (!s || !alnum(s[0]))
                return false;
        for (size_t i = 1; s[i]; i++) {
                if (i >= 128)
                        return false;
                if (!alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != ':' && s[i] != '-')
                        return false;
        }
        return true;
}

bool channel_hex64(const char *s) {
        if (!s)
                return false;
        for (size_t i = 0; i < 64; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s[64] == '\0';
}

int channel_lp_u32(struct glove_digest_sha256 *ctx, uint32_t v, struct glove_error *err) {
        uint8_t b[4];
        glove_put_be32(b, v);
        return glove_digest_sha256_update(ctx, b, sizeof(b), err);
}

int channel_lp_str(struct glove_digest_sha256 *ctx, const void *s, size_t len, struct glove_error *err) {
        if (len > UINT32_MAX)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "string of %zu bytes to digest", len);
        int r = channel_lp_u32(ctx, (uint32_t)len, err);
        if (r < 0)
                return r;
        return glove_digest_sha256_update(ctx, s, len, err);
}

int channel_lp_final_hex(struct glove_digest_sha256 *ctx, char hex[65], struct glove_error *err) {
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        int r = glove_digest_sha256_final(ctx, md, err);
        if (r < 0)
                return r;
        return glove_digest_hex_encode(md, sizeof(md), hex, 65);
}

/* ---- the table ---- */

int glove_channel_host_new(struct glove_channel_host **out, struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "no place for the admission table");
        *out = calloc(1, sizeof(**out));
        if (!*out)
                return glove_error_set(err, ENOMEM, "channel.no_memory", "out of memory for the admission table");
        return 0;
}

int glove_channel_host_register(struct glove_channel_host *h, const struct glove_channel_descriptor *d,
                                struct glove_error *err) {
        if (!h || !d)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "no table or no descriptor");
        if (h->frozen)
                return glove_error_set(err, EPERM, "channel.host_frozen",
                                       "the admission table is frozen; register every schema before freezing it");
        if (!channel_schema_id_valid(d->schema_id))
                return glove_error_set(err, EINVAL, "channel.register_schema_id",
                                       "schema id is not 1..%d bytes of [a-z0-9._-] starting with [a-z0-9]",
                                       GLOVE_CHANNEL_SCHEMA_ID_MAX);
        if (!d->validate)
                return glove_error_set(err, EINVAL, "channel.register_validator", "schema %s has no body validator",
                                       d->schema_id);
        if (d->body_max_bytes < 1 || d->body_max_bytes > GLOVE_CHANNEL_BODY_MAX || d->ttl_max_ms < 1 ||
            d->ttl_max_ms > GLOVE_CHANNEL_TTL_LIMIT_MS)
                return glove_error_set(err, EINVAL, "channel.register_bounds",
                                       "schema %s: body_max_bytes %zu (allowed 1..%d), ttl_max_ms %u (allowed 1..%u)",
                                       d->schema_id, d->body_max_bytes, GLOVE_CHANNEL_BODY_MAX, d->ttl_max_ms,
                                       GLOVE_CHANNEL_TTL_LIMIT_MS);
        size_t at = 0;
        for (; at < h->n; at++) {
                int c = strcmp(d->schema_id, h->ids[at]);
                if (c == 0)
                        return glove_error_set(err, EEXIST, "channel.register_duplicate",
                                               "schema %s is registered already", d->schema_id);
                if (c < 0)
                        break;
        }
        if (h->n >= GLOVE_CHANNEL_HOST_SCHEMAS_MAX)
                return glove_error_set(err, ENOSPC, "channel.register_full", "the admission table holds %d schemas",
                                       GLOVE_CHANNEL_HOST_SCHEMAS_MAX);
        char *id = strdup(d->schema_id);
        if (!id)
                return glove_error_set(err, ENOMEM, "channel.no_memory", "out of memory for a schema");
        memmove(&h->d[at + 1], &h->d[at], (h->n - at) * sizeof(h->d[0]));
        memmove(&h->ids[at + 1], &h->ids[at], (h->n - at) * sizeof(h->ids[0]));
        h->d[at] = *d;
        h->d[at].schema_id = id;
        h->ids[at] = id;
        h->n++;
        return 0;
}

static int catalog_digest(const struct glove_channel_host *h, char hex[GLOVE_CHANNEL_DIGEST_HEX_SIZE],
                          struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        int r = glove_digest_sha256_init(&ctx, err);
        if (r == 0)
                r = channel_lp_str(ctx, CATALOG_DOMAIN, strlen(CATALOG_DOMAIN), err);
        if (r == 0)
                r = channel_lp_u32(ctx, (uint32_t)h->n, err);
        for (size_t i = 0; r == 0 && i < h->n; i++) {
                r = channel_lp_str(ctx, h->ids[i], strlen(h->ids[i]), err);
                if (r == 0)
                        r = channel_lp_u32(ctx, (uint32_t)h->d[i].body_max_bytes, err);
                if (r == 0)
                        r = channel_lp_u32(ctx, h->d[i].ttl_max_ms, err);
        }
        if (r == 0)
                r = channel_lp_final_hex(ctx, hex, err);
        return r;
}

int glove_channel_host_freeze(struct glove_channel_host *h, struct glove_error *err) {
        if (!h)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "no admission table");
        if (h->frozen)
                return glove_error_set(err, EPERM, "channel.host_frozen", "the admission table is frozen already");
        if (h->n == 0)
                return glove_error_set(err, ENOENT, "channel.host_empty",
                                       "the admission table has no schema; a registry needs at least one");
        int r = catalog_digest(h, h->digest, err);
        if (r < 0)
                return r;
        h->frozen = true;
        return 0;
}

bool glove_channel_host_frozen(const struct glove_channel_host *h) {
        return h && h->frozen;
}

const struct glove_channel_descriptor *glove_channel_host_find(const struct glove_channel_host *h,
                                                               const char *schema_id) {
        if (!h || !schema_id)
                return NULL;
        size_t lo = 0, hi = h->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(schema_id, h->ids[mid]);
                if (c == 0)
                        return &h->d[mid];
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

size_t glove_channel_host_count(const struct glove_channel_host *h) {
        return h ? h->n : 0;
}

const struct glove_channel_descriptor *glove_channel_host_at(const struct glove_channel_host *h, size_t i) {
        return h && i < h->n ? &h->d[i] : NULL;
}

const char *glove_channel_host_catalog_digest(const struct glove_channel_host *h) {
        return h && h->frozen ? h->digest : NULL;
}

void glove_channel_host_free(struct glove_channel_host *h) {
        if (!h)
                return;
        for (size_t i = 0; i < h->n; i++)
                free(h->ids[i]);
        free(h);
}

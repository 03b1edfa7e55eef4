/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apply authorization: its canonical JSON, the signed message, its
 * digest and its verification (glove/apply/trust.h; docs/retained-changes.md,
 * "Trust policy, keys and authorization").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/apply/trust.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "trust_internal.h"

#define AUTH_SCHEMA "glove.apply-authorization.v1"
/* The domain separation of the signed message, NUL included. */
static const char auth_domain[] = "glove.apply.authorization.v1";
#define AUTH_DOMAIN_LEN sizeof(auth_domain)

static int invalid(struct glove_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int invalid(struct glove_error *err, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char msg[GLOVE_ERROR_MESSAGE_MAX];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return glove_error_set(err, EINVAL, "apply.authorization_invalid", "apply authorization: %s", msg);
}

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
}

/* True when s (within a field of size cap) is 64 lowercase hex digits. */
static bool hex64_valid(const char *s, size_t cap) {
        if (strnlen(s, cap) != GLOVE_APPLY_HEX_SIZE - 1)
                return false;
        for (size_t i = 0; i < GLOVE_APPLY_HEX_SIZE - 1; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* Checks every member of a (the rules of glove/apply/trust.h). */
static int auth_check(const struct glove_apply_authorization *a, struct glove_error *err) {
        static const char name_rule[] = "must be 1 to 128 characters of A-Z a-z 0-9 . _ -, not \".\" or \"..\"";
        if (strnlen(a->schema, sizeof(a->schema)) == sizeof(a->schema) || strcmp(a->schema, AUTH_SCHEMA) != 0)
                return invalid(err, "$.schema: must be \"%s\"", AUTH_SCHEMA);
        if (!glove_apply_identifier_valid(a->session_id, GLOVE_APPLY_NAME_MAX, true))
                return invalid(err, "$.session_id: %s", name_rule);
        if (!glove_apply_identifier_valid(a->grant, GLOVE_APPLY_NAME_MAX, true))
                return invalid(err, "$.grant: %s", name_rule);
        char want[sizeof(a->grant_id)];
        snprintf(want, sizeof(want), "%s/%s", a->session_id, a->grant);
        if (strnlen(a->grant_id, sizeof(a->grant_id)) == sizeof(a->grant_id) || strcmp(a->grant_id, want) != 0)
                return invalid(err, "$.grant_id: must be session_id \"/\" grant (\"%s\")", want);
        if (!hex64_valid(a->baseline_manifest_digest, sizeof(a->baseline_manifest_digest)))
                return invalid(err, "$.baseline_manifest_digest: must be 64 lowercase hex digits");
        if (!hex64_valid(a->stage_manifest_digest, sizeof(a->stage_manifest_digest)))
                return invalid(err, "$.stage_manifest_digest: must be 64 lowercase hex digits");
        if (!hex64_valid(a->nonce, sizeof(a->nonce)))
                return invalid(err, "$.nonce: must be 64 lowercase hex digits");
        if (!glove_apply_identifier_valid(a->key_id, GLOVE_APPLY_KEY_ID_MAX, false))
                return invalid(err, "$.key_id: must be 1 to %d characters of A-Z a-z 0-9 . _ -",
                               GLOVE_APPLY_KEY_ID_MAX);
        if (a->issued_at_ms < 0)
                return invalid(err, "$.issued_at_ms: must not be negative (milliseconds since the epoch)");
        if (a->expires_at_ms < a->issued_at_ms)
                return invalid(err, "$.expires_at_ms: %lld is before issued_at_ms %lld", (long long)a->expires_at_ms,
                               (long long)a->issued_at_ms);
        if (a->expires_at_ms - a->issued_at_ms > GLOVE_APPLY_AUTH_TTL_MAX_MS)
                return invalid(err, "$.expires_at_ms: valid for %lld ms, more than the %lld allowed; issue one that "
                               "expires sooner",
                               (long long)(a->expires_at_ms - a->issued_at_ms), (long long)GLOVE_APPLY_AUTH_TTL_MAX_MS);
        return 0;
}

int glove_apply_authorization_encode(const struct glove_apply_authorization *a, char **out, size_t *len,
                                     struct glove_error *err) {
        *out = NULL;
        *len = 0;
        int r = auth_check(a, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_t *o = json_pack(
                "{s:s, s:I, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s}", "baseline_manifest_digest",
                a->baseline_manifest_digest, "expires_at_ms", (json_int_t)a->expires_at_ms, "grant", a->grant,
                "grant_id", a->grant_id, "issued_at_ms", (json_int_t)a->issued_at_ms, "key_id", a->key_id, "nonce",
                a->nonce, "schema", a->schema, "session_id", a->session_id, "stage_manifest_digest",
                a->stage_manifest_digest);
        if (!o)
                return no_memory(err);
        struct glove_error je = { 0 };
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        r = glove_json_encode_canonical(o, &text, &n, &je);
        if (r == -ENOMEM)
                return no_memory(err);
        if (r < 0)
                return invalid(err, "%s (%s)", je.message, je.code);
        if (n > GLOVE_APPLY_AUTH_MAX_BYTES)
                return invalid(err, "%zu bytes, more than the %d allowed", n, GLOVE_APPLY_AUTH_MAX_BYTES);
        *out = TAKE_PTR(text);
        *len = n;
        return 0;
}

/* Copies the string member key of o (at most cap - 1 bytes) into dst. */
static int copy_member(const json_t *o, const char *key, char *dst, size_t cap, struct glove_error *err) {
        struct glove_error je = { 0 };
        const char *s = NULL;
        if (glove_json_get_string(o, key, NULL, cap - 1, &s, &je) < 0)
                return invalid(err, "%s (%s)", je.message, je.code);
        memcpy(dst, s, strlen(s) + 1);
        return 0;
}

int glove_apply_authorization_decode(const char *buf, size_t len, struct glove_apply_authorization *a,
                                     struct glove_error *err) {
        static const char *const allowed[] = { "baseline_manifest_digest", "expires_at_ms", "grant", "grant_id",
                                               "issued_at_ms", "key_id", "nonce", "schema", "session_id",
                                               "stage_manifest_digest", NULL };
        if (len > GLOVE_APPLY_AUTH_MAX_BYTES)
                return invalid(err, "%zu bytes, more than the %d allowed", len, GLOVE_APPLY_AUTH_MAX_BYTES);
        struct glove_error je = { 0 };
        _cleanup_json_ json_t *o = NULL;
        int r = glove_json_decode_canonical(buf, len, GLOVE_APPLY_AUTH_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &o, &je);
        if (r == -ENOMEM)
                return no_memory(err);
        if (r < 0 || glove_json_check_keys(o, allowed, NULL, &je) < 0)
                return invalid(err, "%s (%s)", je.message, je.code);
        struct glove_apply_authorization d;
        memset(&d, 0, sizeof(d));
        int64_t issued = 0, expires = 0;
        if ((r = copy_member(o, "schema", d.schema, sizeof(d.schema), err)) < 0 ||
            (r = copy_member(o, "session_id", d.session_id, sizeof(d.session_id), err)) < 0 ||
            (r = copy_member(o, "grant", d.grant, sizeof(d.grant), err)) < 0 ||
            (r = copy_member(o, "grant_id", d.grant_id, sizeof(d.grant_id), err)) < 0 ||
            (r = copy_member(o, "baseline_manifest_digest", d.baseline_manifest_digest,
                             sizeof(d.baseline_manifest_digest), err)) < 0 ||
            (r = copy_member(o, "stage_manifest_digest", d.stage_manifest_digest, sizeof(d.stage_manifest_digest),
                             err)) < 0 ||
            (r = copy_member(o, "key_id", d.key_id, sizeof(d.key_id), err)) < 0 ||
            (r = copy_member(o, "nonce", d.nonce, sizeof(d.nonce), err)) < 0)
                return r;
        if (glove_json_get_int(o, "issued_at_ms", NULL, INT64_MIN, INT64_MAX, &issued, &je) < 0 ||
            glove_json_get_int(o, "expires_at_ms", NULL, INT64_MIN, INT64_MAX, &expires, &je) < 0)
                return invalid(err, "%s (%s)", je.message, je.code);
        d.issued_at_ms = issued;
        d.expires_at_ms = expires;
        r = auth_check(&d, err);
        if (r < 0)
                return r;
        *a = d;
        return 0;
}

int glove_apply_authorization_message(const char *buf, size_t len, uint8_t **msg, size_t *msg_len,
                                      struct glove_error *err) {
        *msg = NULL;
        *msg_len = 0;
        if (len > GLOVE_APPLY_AUTH_MAX_BYTES)
                return invalid(err, "%zu bytes, more than the %d allowed", len, GLOVE_APPLY_AUTH_MAX_BYTES);
        uint8_t *m = malloc(AUTH_DOMAIN_LEN + len + 1);
        if (!m)
                return no_memory(err);
        memcpy(m, auth_domain, AUTH_DOMAIN_LEN);
        if (len)
                memcpy(m + AUTH_DOMAIN_LEN, buf, len);
        m[AUTH_DOMAIN_LEN + len] = 0;
        *msg = m;
        *msg_len = AUTH_DOMAIN_LEN + len;
        return 0;
}

int glove_apply_authorization_digest(const char *buf, size_t len, char out[GLOVE_APPLY_HEX_SIZE],
                                     struct glove_error *err) {
        _cleanup_free_ uint8_t *msg = NULL;
        size_t n = 0;
        int r = glove_apply_authorization_message(buf, len, &msg, &n, err);
        if (r < 0)
                return r;
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        struct glove_error de = { 0 };
        if (glove_digest_sha256(msg, n, d, &de) < 0)
                return glove_error_set(err, EIO, "apply.crypto", "the authorization digest: %s", de.message);
        (void)glove_digest_hex_encode(d, sizeof(d), out, GLOVE_APPLY_HEX_SIZE);
        return 0;
}

int glove_apply_authorization_verify(const struct glove_apply_trust *t, const char *buf, size_t len,
                                     const uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN], int64_t now_ms,
                                     struct glove_apply_authorization *a, struct glove_error *err) {
        struct glove_apply_authorization d;
        int r = glove_apply_authorization_decode(buf, len, &d, err);
        if (r < 0)
                return r;
        _cleanup_free_ uint8_t *msg = NULL;
        size_t n = 0;
        r = glove_apply_authorization_message(buf, len, &msg, &n, err);
        if (r < 0)
                return r;
        /* The signature first: nothing of an unauthenticated text is
         * reported beyond its shape. */
        r = glove_apply_trust_verify(t, d.key_id, msg, n, sig, err);
        if (r < 0)
                return r;
        if (now_ms < d.issued_at_ms)
                return glove_error_set(err, EPERM, "apply.authorization_expired",
                                       "the apply authorization is not valid yet: issued for %lld ms, now is %lld "
                                       "ms (check the clocks, or issue a new one)",
                                       (long long)d.issued_at_ms, (long long)now_ms);
        if (now_ms > d.expires_at_ms)
                return glove_error_set(err, EPERM, "apply.authorization_expired",
                                       "the apply authorization expired at %lld ms, now is %lld ms: issue a new one",
                                       (long long)d.expires_at_ms, (long long)now_ms);
        *a = d;
        return 0;
}

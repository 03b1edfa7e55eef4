/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/digest.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

struct glove_digest_sha256 {
        EVP_MD_CTX *md;
        bool finished;
};

/* Records a libcrypto failure with the first queued OpenSSL reason, and
 * empties the error queue so it does not leak into later calls. */
static int crypto_failed(struct glove_error *err, const char *what) {
        char reason[256] = "no reason given";
        unsigned long e = ERR_get_error();
        if (e != 0)
                ERR_error_string_n(e, reason, sizeof(reason));
        ERR_clear_error();
        return glove_error_set(err, EIO, "digest.crypto_failed", "%s failed: %s", what, reason);
}

static int null_with_length(struct glove_error *err) {
        return glove_error_set(err, EINVAL, "digest.invalid_argument",
                               "NULL data pointer with a non-zero length");
}

/* The SHA-256 implementation of the default provider, fetched once and
 * kept for the life of the process (never freed): EVP_sha256() makes every
 * EVP_Digest look it up again in the provider store (EVP_MD_fetch(3),
 * "Implicit fetch"), which cost more than the digest of a tools/call's
 * arguments itself. NULL when it cannot be fetched (no libcrypto); a later
 * call tries again. Safe from any thread. */
static const EVP_MD *sha256_md(void) {
        static _Atomic(EVP_MD *) cached;
        EVP_MD *md = atomic_load_explicit(&cached, memory_order_acquire);
        if (md)
                return md;
        md = EVP_MD_fetch(NULL, OSSL_DIGEST_NAME_SHA2_256, NULL);
        if (!md)
                return NULL;
        EVP_MD *expected = NULL;
        if (!atomic_compare_exchange_strong_explicit(&cached, &expected, md, memory_order_acq_rel, memory_order_acquire)) {
                EVP_MD_free(md); /* another thread's is kept */
                return expected;
        }
        return md;
}

int glove_digest_sha256(const void *data, size_t len,
                        uint8_t out[GLOVE_DIGEST_SHA256_LEN], struct glove_error *err) {
        if (!data && len > 0)
                return null_with_length(err);
        unsigned int n = 0;
        const EVP_MD *md = sha256_md();
        if (!md || EVP_Digest(data ? data : "", len, out, &n, md, NULL) != 1 ||
            n != GLOVE_DIGEST_SHA256_LEN)
                return crypto_failed(err, "SHA-256");
        return 0;
}

int glove_digest_sha256_init(struct glove_digest_sha256 **out, struct glove_error *err) {
        *out = NULL;
        struct glove_digest_sha256 *ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
                return glove_error_set(err, ENOMEM, "digest.no_memory", "out of memory");
        ctx->md = EVP_MD_CTX_new();
        if (!ctx->md) {
                free(ctx);
                return glove_error_set(err, ENOMEM, "digest.no_memory", "out of memory");
        }
        const EVP_MD *md = sha256_md();
        if (!md || EVP_DigestInit_ex2(ctx->md, md, NULL) != 1) {
                glove_digest_sha256_free(ctx);
                return crypto_failed(err, "SHA-256 init");
        }
        *out = ctx;
        return 0;
}

int glove_digest_sha256_update(struct glove_digest_sha256 *ctx, const void *data, size_t len,
                               struct glove_error *err) {
        if (!data && len > 0)
                return null_with_length(err);
        if (ctx->finished)
                return glove_error_set(err, EINVAL, "digest.invalid_argument",
                                       "SHA-256 update after final");
        if (EVP_DigestUpdate(ctx->md, data ? data : "", len) != 1)
                return crypto_failed(err, "SHA-256 update");
        return 0;
}

int glove_digest_sha256_final(struct glove_digest_sha256 *ctx,
                              uint8_t out[GLOVE_DIGEST_SHA256_LEN], struct glove_error *err) {
        if (ctx->finished)
                return glove_error_set(err, EINVAL, "digest.invalid_argument",
                                       "SHA-256 final called twice");
        ctx->finished = true;
        unsigned int n = 0;
        if (EVP_DigestFinal_ex(ctx->md, out, &n) != 1 || n != GLOVE_DIGEST_SHA256_LEN)
                return crypto_failed(err, "SHA-256 final");
        return 0;
}

int glove_digest_sha256_reset(struct glove_digest_sha256 *ctx, struct glove_error *err) {
        /* A NULL type reuses the context's fetched digest (EVP_DigestInit_ex2(3)). */
        if (EVP_DigestInit_ex2(ctx->md, NULL, NULL) != 1)
                return crypto_failed(err, "SHA-256 init");
        ctx->finished = false;
        return 0;
}

void glove_digest_sha256_free(struct glove_digest_sha256 *ctx) {
        if (!ctx)
                return;
        EVP_MD_CTX_free(ctx->md);
        free(ctx);
}

int glove_digest_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                             uint8_t out[GLOVE_DIGEST_SHA256_LEN], struct glove_error *err) {
        if (!key || key_len == 0)
                return glove_error_set(err, EINVAL, "digest.invalid_argument",
                                       "HMAC key must not be empty");
        if (!data && len > 0)
                return null_with_length(err);

        EVP_MAC *mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
        if (!mac)
                return crypto_failed(err, "HMAC fetch");
        EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
        EVP_MAC_free(mac);
        if (!ctx)
                return crypto_failed(err, "HMAC context");

        char digest_name[] = "SHA256";
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
                OSSL_PARAM_construct_end(),
        };
        size_t n = 0;
        int r = 0;
        if (EVP_MAC_init(ctx, key, key_len, params) != 1 ||
            EVP_MAC_update(ctx, data ? data : (const void *)"", len) != 1 ||
            EVP_MAC_final(ctx, out, &n, GLOVE_DIGEST_SHA256_LEN) != 1 ||
            n != GLOVE_DIGEST_SHA256_LEN)
                r = crypto_failed(err, "HMAC-SHA-256");
        EVP_MAC_CTX_free(ctx);
        return r;
}

int glove_digest_hex_encode(const void *data, size_t len, char *out, size_t out_size) {
        static const char digits[] = "0123456789abcdef";
        if (len > (SIZE_MAX - 1) / 2 || out_size < 2 * len + 1)
                return -ENOBUFS;
        const uint8_t *p = data;
        for (size_t i = 0; i < len; i++) {
                out[2 * i] = digits[p[i] >> 4];
                out[2 * i + 1] = digits[p[i] & 0xf];
        }
        out[2 * len] = '\0';
        return 0;
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int glove_digest_hex_decode(const char *hex, size_t hex_len, uint8_t *out, size_t out_len,
                            struct glove_error *err) {
        if (out_len > SIZE_MAX / 2 || hex_len != 2 * out_len)
                return glove_error_set(err, EINVAL, "digest.bad_hex",
                                       "hex text is %zu character%s, expected exactly %zu",
                                       hex_len, hex_len == 1 ? "" : "s", out_len > SIZE_MAX / 2 ? SIZE_MAX : 2 * out_len);
        for (size_t i = 0; i < hex_len; i++)
                if (hex_value(hex[i]) < 0)
                        return glove_error_set(err, EINVAL, "digest.bad_hex",
                                               "character at offset %zu is not lowercase hex", i);
        for (size_t i = 0; i < out_len; i++)
                out[i] = (uint8_t)(hex_value(hex[2 * i]) << 4 | hex_value(hex[2 * i + 1]));
        return 0;
}

bool glove_digest_equal(const void *a, const void *b, size_t len) {
        return CRYPTO_memcmp(a, b, len) == 0;
}

int glove_digest_random(void *out, size_t len, struct glove_error *err) {
        uint8_t *p = out;
        while (len > 0) {
                size_t chunk = len > (size_t)INT_MAX ? (size_t)INT_MAX : len;
                if (RAND_bytes(p, (int)chunk) != 1)
                        return crypto_failed(err, "RAND_bytes");
                p += chunk;
                len -= chunk;
        }
        return 0;
}

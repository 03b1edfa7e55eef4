/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Digests, MACs, hex and randomness, wrapping OpenSSL libcrypto 3 (EVP,
 * EVP_MAC, CRYPTO_memcmp, RAND_bytes). No cryptography is implemented here.
 *
 *   SHA-256      FIPS 180-4 (output 32 bytes)
 *   HMAC-SHA-256 RFC 2104 / FIPS 198-1, test vectors from RFC 4231
 *   hex          RFC 4648 section 8 (base16), Glove's strict form: lowercase
 *                only, exact length
 *
 * Stable error codes (struct glove_error):
 *   digest.crypto_failed   libcrypto reported a failure (-EIO)
 *   digest.no_memory       allocation failed (-ENOMEM)
 *   digest.invalid_argument misuse: NULL pointer with a length, empty HMAC key,
 *                          update or final after final (-EINVAL)
 *   digest.bad_hex         hex text of the wrong length or with a character
 *                          outside [0-9a-f] (-EINVAL)
 *   digest.buffer_too_small output buffer too small (-ENOBUFS)
 * Every err argument may be NULL.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* SHA-256 digest length in bytes, and its hex form in characters (no NUL). */
#define GLOVE_DIGEST_SHA256_LEN 32
#define GLOVE_DIGEST_SHA256_HEX_LEN 64

/*
 * SHA-256 of data[0..len) into out (GLOVE_DIGEST_SHA256_LEN bytes). data may
 * be NULL when len is 0. Returns 0, or -EIO (digest.crypto_failed).
 */
int glove_digest_sha256(const void *data, size_t len,
                        uint8_t out[GLOVE_DIGEST_SHA256_LEN], struct glove_error *err);

/* Incremental SHA-256 (opaque; wraps an EVP_MD_CTX). */
struct glove_digest_sha256;

/*
 * Allocates a SHA-256 context ready for updates and stores it in *out (owned
 * by the caller; release with glove_digest_sha256_free or
 * _cleanup_digest_sha256_). Returns 0, -ENOMEM or -EIO; *out is NULL on error.
 */
int glove_digest_sha256_init(struct glove_digest_sha256 **out, struct glove_error *err);

/*
 * Feeds data[0..len) (NULL allowed when len is 0). Returns 0, -EIO, or
 * -EINVAL after glove_digest_sha256_final.
 */
int glove_digest_sha256_update(struct glove_digest_sha256 *ctx, const void *data, size_t len,
                               struct glove_error *err);

/*
 * Writes the digest of everything fed so far into out. The context is then
 * finished: further update/final calls return -EINVAL. Returns 0, -EIO or
 * -EINVAL.
 */
int glove_digest_sha256_final(struct glove_digest_sha256 *ctx,
                              uint8_t out[GLOVE_DIGEST_SHA256_LEN], struct glove_error *err);

/*
 * Starts ctx over as a new, empty SHA-256 computation, whatever state it is
 * in (finished or not), keeping its allocation and its algorithm: cheaper
 * than a new context for each of many short messages (no allocation, no
 * algorithm lookup). Returns 0 or -EIO.
 */
int glove_digest_sha256_reset(struct glove_digest_sha256 *ctx, struct glove_error *err);

/* Releases ctx (NULL allowed). */
void glove_digest_sha256_free(struct glove_digest_sha256 *ctx);

static inline void glove_digest_sha256_freep(struct glove_digest_sha256 **ctx) {
        if (ctx)
                glove_digest_sha256_free(*ctx);
}
#define _cleanup_digest_sha256_ __attribute__((cleanup(glove_digest_sha256_freep)))

/*
 * HMAC-SHA-256 (RFC 2104 with SHA-256; verified with RFC 4231) of
 * data[0..len) under key[0..key_len) into out (GLOVE_DIGEST_SHA256_LEN
 * bytes). Keys of any non-zero length are accepted (keys longer than 64
 * bytes are hashed first, per RFC 2104); an empty key is rejected with
 * -EINVAL (digest.invalid_argument). data may be NULL when len is 0.
 * Returns 0, -EINVAL or -EIO.
 */
int glove_digest_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                             uint8_t out[GLOVE_DIGEST_SHA256_LEN], struct glove_error *err);

/*
 * Writes data[0..len) as lowercase hex plus a terminating NUL into out, which
 * has out_size bytes and must hold at least 2*len+1. Returns 0 or -ENOBUFS
 * (out untouched; no truncation).
 */
int glove_digest_hex_encode(const void *data, size_t len, char *out, size_t out_size);

/*
 * Decodes exactly out_len bytes from hex[0..hex_len). Strict: hex_len must be
 * exactly 2*out_len and every character in [0-9a-f] (uppercase, whitespace,
 * prefixes are rejected). Returns 0, or -EINVAL (digest.bad_hex; the message
 * gives the offset); out is written only on success.
 */
int glove_digest_hex_decode(const char *hex, size_t hex_len, uint8_t *out, size_t out_len,
                            struct glove_error *err);

/*
 * Constant-time equality of a[0..len) and b[0..len) (CRYPTO_memcmp): the time
 * taken depends on len only, not on the contents. Use for MACs and tokens.
 */
bool glove_digest_equal(const void *a, const void *b, size_t len);

/*
 * Fills out[0..len) with cryptographically secure random bytes from the
 * libcrypto DRBG (RAND_bytes). Any len is accepted (requested in chunks).
 * Returns 0, or -EIO (digest.crypto_failed; out contents then unspecified).
 */
int glove_digest_random(void *out, size_t len, struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the remote unit tests: an ssh-ed25519 key text built from its
 * parts (RFC 8709 section 4 blob, RFC 4648 base64), a valid configuration. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/base64.h"
#include "glove/remote/backend.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* The text "PREFIX BASE64(blob)" of a blob string(alg) string(key[0..klen)),
 * with key bytes 1, 2, 3, ... into out (size bytes). */
static inline void tk_key_text(const char *prefix, const char *alg, size_t klen, char *out, size_t size) {
        uint8_t blob[256];
        size_t n = 0, al = strlen(alg);
        blob[n++] = 0, blob[n++] = 0, blob[n++] = 0, blob[n++] = (uint8_t)al;
        memcpy(blob + n, alg, al);
        n += al;
        blob[n++] = 0, blob[n++] = 0, blob[n++] = 0, blob[n++] = (uint8_t)klen;
        for (size_t i = 0; i < klen; i++)
                blob[n++] = (uint8_t)(i + 1);
        char b64[512];
        glove_base64_encode_cstr(blob, n, b64, sizeof(b64));
        int r = snprintf(out, size, "%s%s", prefix, *prefix ? " " : "");
        if (r < 0 || (size_t)r + strlen(b64) >= size)
                abort();
        memcpy(out + r, b64, strlen(b64) + 1);
}

/* A valid configuration document with host_key key and the given
 * identity, digest and extra top-level text (e.g. ",\"x\":1"). */
static inline char *tk_document(const char *host, int port, const char *user, const char *key, const char *identity,
                                const char *digest, const char *extra) {
        char *doc = NULL;
        if (asprintf(&doc,
                     "{\"schema\": \"glove.remote-backend-v1\", \"remote_backend\": {\"ssh_destination\": "
                     "{\"host\": \"%s\", \"port\": %d, \"user\": \"%s\"}, \"host_key\": \"%s\", "
                     "\"container_identity\": \"%s\", \"container_image_digest\": \"%s\"}%s}",
                     host, port, user, key, identity, digest, extra) < 0)
                return NULL;
        return doc;
}

/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/apply/authorization.c src/apply/trust.c src/supervisor/manifest.c
/*
 * libFuzzer target: the decoders an apply reads from files the owner or a
 * crash may have left (docs/retained-changes.md): the canonical apply
 * authorization (glove_apply_authorization_decode) and a stored manifest
 * (glove_manifest_from_json, as in a stage's baseline file). The first byte
 * chooses the decoder; the rest is its input. Built and run by
 * scripts/fuzz.sh; seeds in fuzz/corpus/apply_authorization/.
 *
 * Invariants besides memory safety: a refusal names an apply.* or
 * manifest.* code; a decoded authorization encodes back to the exact input
 * bytes (the format is canonical); a decoded manifest's JSON form decodes
 * again to the same digest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/apply/trust.h"
#include "glove/base/json.h"
#include "glove/supervisor/manifest.h"

static void authorization(const uint8_t *data, size_t size) {
        struct glove_apply_authorization a;
        struct glove_error err = { 0 };
        if (glove_apply_authorization_decode((const char *)data, size, &a, &err) < 0) {
                if (!err.code || strncmp(err.code, "apply.", 6) != 0)
                        abort();
                return;
        }
        char *out = NULL;
        size_t len = 0;
        if (glove_apply_authorization_encode(&a, &out, &len, NULL) < 0 || len != size || memcmp(out, data, size) != 0)
                abort();
        free(out);
}

static void manifest(const uint8_t *data, size_t size) {
        json_t *j = NULL;
        if (glove_json_decode_strict((const char *)data, size, 1 << 20, 0, &j, NULL) < 0)
                return;
        struct glove_manifest *m = NULL;
        struct glove_error err = { 0 };
        if (glove_manifest_from_json(j, &m, &err) < 0) {
                if (!err.code || strncmp(err.code, "manifest.", 9) != 0)
                        abort();
                json_decref(j);
                return;
        }
        json_t *again = glove_manifest_to_json(m);
        struct glove_manifest *m2 = NULL;
        if (!again || glove_manifest_from_json(again, &m2, NULL) < 0 || strcmp(m->digest, m2->digest) != 0)
                abort();
        glove_manifest_free(m2);
        glove_manifest_free(m);
        json_decref(again);
        json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        if (data[0] & 1)
                manifest(data + 1, size - 1);
        else
                authorization(data + 1, size - 1);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the canonical recognizer (glove/base/json_scan.h)
 * against the jansson-based canonical decoder (glove/base/json.h). The
 * input is one JSON text. Invariant besides memory safety: the two accept
 * exactly the same texts, and for an accepted one the recognizer's member
 * count is the object's size and every member's value span is itself
 * canonical. (The session store replays with the recognizer; this is what
 * makes its checks those of the decoder.) Built and run by scripts/fuzz.sh;
 * seeds in fuzz/corpus/json_scan/.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/json_scan.h"

#define MAX_BYTES (64u * 1024)
#define MEMBERS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct glove_json_member_span m[MEMBERS];
        struct glove_error e1 = { 0 }, e2 = { 0 };
        _cleanup_json_ json_t *v = NULL;
        size_t n = 0;
        bool jansson = glove_json_decode_canonical(data, size, MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &v, &e1) == 0;
        bool scan = glove_json_scan_canonical_object(data, size, MAX_BYTES, m, MEMBERS, &n, &e2) == 0;
        if (jansson != scan)
                abort();
        if (!scan)
                return 0;
        if (n != json_object_size(v))
                abort();
        for (size_t i = 0; i < n && i < MEMBERS; i++)
                if (glove_json_is_canonical(m[i].value, m[i].value_len, MAX_BYTES, 0, NULL) != 1)
                        abort();
        return 0;
}

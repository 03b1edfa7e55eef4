/* SPDX-License-Identifier: Apache-2.0 */
#include "index.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a, 64-bit. Keys are service-validated identifiers; the index is not
 * exposed to untrusted load large enough for collisions to matter (bounded
 * at 10 000 sessions). */
static uint64_t hash(const char *s) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= 0x100000001b3ull;
        }
        return h;
}

int glove_store_index_get(const struct glove_store_index *ix, const char *key, size_t *value) {
        if (ix->cap == 0)
                return -ENOENT;
        for (size_t i = hash(key) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
                if (!ix->keys[i])
                        return -ENOENT;
                if (strcmp(ix->keys[i], key) == 0) {
                        *value = ix->values[i];
                        return 0;
                }
        }
}

static void insert(const char **keys, size_t *values, size_t cap, const char *key, size_t value) {
        size_t i = hash(key) & (cap - 1);
        while (keys[i])
                i = (i + 1) & (cap - 1);
        keys[i] = key;
        values[i] = value;
}

int glove_store_index_put(struct glove_store_index *ix, const char *key, size_t value) {
        if ((ix->len + 1) * 2 > ix->cap) {
                size_t cap = ix->cap ? ix->cap * 2 : 64;
                const char **keys = calloc(cap, sizeof(*keys));
                size_t *values = calloc(cap, sizeof(*values));
                if (!keys || !values) {
                        free(keys);
                        free(values);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < ix->cap; i++)
                        if (ix->keys[i])
                                insert(keys, values, cap, ix->keys[i], ix->values[i]);
                free(ix->keys);
                free(ix->values);
                ix->keys = keys;
                ix->values = values;
                ix->cap = cap;
        }
        insert(ix->keys, ix->values, ix->cap, key, value);
        ix->len++;
        return 0;
}

void glove_store_index_free(struct glove_store_index *ix) {
        free(ix->keys);
        free(ix->values);
        *ix = (struct glove_store_index){ 0 };
}

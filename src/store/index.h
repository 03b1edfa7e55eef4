/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A string-keyed open-addressing hash index (internal to the control
 * module). Keys are borrowed: they must outlive the index and stay unchanged.
 * Values are indexes into the caller's array. No removal (journals only grow).
 */

#include <stddef.h>

struct glove_store_index {
        const char **keys;   /* NULL for an empty slot */
        size_t *values;
        size_t cap;          /* power of two, or 0 */
        size_t len;
};

/* Looks key up; returns 0 and stores the value in *value, or -ENOENT. */
int glove_store_index_get(const struct glove_store_index *ix, const char *key, size_t *value);

/* Inserts key (must not be present). Returns 0 or -ENOMEM. */
int glove_store_index_put(struct glove_store_index *ix, const char *key, size_t value);

/* Frees the tables (not the keys). */
void glove_store_index_free(struct glove_store_index *ix);

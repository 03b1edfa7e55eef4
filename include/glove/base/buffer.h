/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A bounded, growable byte buffer (DESIGN.md, "Bounded everything"): bytes
 * are appended at the back and consumed from the front, as for line or
 * length-prefixed framing of a byte stream. The buffer never holds more than
 * its hard maximum: an append that would exceed it fails with -EMSGSIZE and
 * leaves the buffer unchanged; nothing is ever silently truncated.
 *
 * The fields are public for reading (data[0..len) is the content); change
 * them only through these functions. data is NULL until the first growth.
 * Not thread-safe.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct glove_buffer {
        uint8_t *data; /* malloc'd storage, or NULL while cap is 0 */
        size_t len;    /* bytes held, data[0..len) */
        size_t cap;    /* bytes allocated, len <= cap <= max */
        size_t max;    /* hard bound on len, in bytes */
};

/* Smallest allocation made on first growth (bytes), unless max is smaller. */
#define GLOVE_BUFFER_MIN_CAP 256

/*
 * Initializes b as empty with a hard bound of max bytes. Allocates nothing.
 * max may be 0 (then every non-empty append fails).
 */
void glove_buffer_init(struct glove_buffer *b, size_t max);

/*
 * Makes room for at least n more bytes without exceeding max, so that
 * data[len..len+n) may be written (e.g. by read(2)) and then committed with
 * glove_buffer_commit. Growth doubles, capped at max.
 * Returns 0, -EMSGSIZE when len + n > max, or -ENOMEM; b is unchanged on error.
 */
int glove_buffer_reserve(struct glove_buffer *b, size_t n);

/*
 * The capacity (bytes) glove_buffer_reserve(b, n) would leave b with: cap
 * when no growth is needed, else the doubled size it would allocate; 0 when
 * it would fail with -EMSGSIZE. Lets a caller charge a growth to a budget
 * before it happens. Allocates nothing.
 */
size_t glove_buffer_cap_after(const struct glove_buffer *b, size_t n);

/*
 * As glove_buffer_reserve, but a growth allocates exactly len + n bytes
 * (no doubling): for a caller that knows the size it needs, e.g. a body
 * whose length was announced. Returns 0, -EMSGSIZE, -ENOMEM; b is unchanged
 * on error.
 */
int glove_buffer_reserve_exact(struct glove_buffer *b, size_t n);

/*
 * Marks n bytes written at data[len..) as content (after glove_buffer_reserve).
 * Returns 0, or -EINVAL when n exceeds cap - len (b unchanged).
 */
int glove_buffer_commit(struct glove_buffer *b, size_t n);

/*
 * Appends a copy of data[0..n) (data may be NULL when n is 0).
 * Returns 0, -EMSGSIZE when len + n > max, or -ENOMEM; on error b is
 * unchanged (no partial append).
 */
int glove_buffer_append(struct glove_buffer *b, const void *data, size_t n);

/*
 * Removes the first n bytes, moving the rest to the front.
 * Returns 0, or -EINVAL when n > len (b unchanged).
 */
int glove_buffer_consume(struct glove_buffer *b, size_t n);

/*
 * Returns the offset of the first occurrence of byte in data[from..len), or
 * -ENOENT when there is none (also when from >= len). Passing the previous
 * len as from lets a framer avoid rescanning bytes it has already searched.
 */
ssize_t glove_buffer_find(const struct glove_buffer *b, uint8_t byte, size_t from);

/* Empties b (len = 0) and keeps its allocation and max. */
void glove_buffer_reset(struct glove_buffer *b);

/* Frees the storage; b stays usable as an empty buffer with the same max.
 * NULL allowed. */
void glove_buffer_free(struct glove_buffer *b);

#define _cleanup_buffer_ __attribute__((cleanup(glove_buffer_free)))

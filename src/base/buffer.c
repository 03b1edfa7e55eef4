/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/buffer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void glove_buffer_init(struct glove_buffer *b, size_t max) {
        *b = (struct glove_buffer){ .max = max };
}

size_t glove_buffer_cap_after(const struct glove_buffer *b, size_t n) {
        if (n > b->max || b->len > b->max - n)
                return 0;
        size_t need = b->len + n;
        if (need <= b->cap)
                return b->cap;
        size_t cap = b->cap ? b->cap : GLOVE_BUFFER_MIN_CAP;
        while (cap < need && cap <= b->max / 2)
                cap *= 2;
        if (cap < need)
                cap = need; /* doubling would pass max; need <= max */
        if (cap > b->max)
                cap = b->max; /* only when max < GLOVE_BUFFER_MIN_CAP; still >= need */
        return cap;
}

static int grow_to(struct glove_buffer *b, size_t cap) {
        uint8_t *p = realloc(b->data, cap);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->cap = cap;
        return 0;
}

int glove_buffer_reserve(struct glove_buffer *b, size_t n) {
        if (n > b->max || b->len > b->max - n)
                return -EMSGSIZE;
        size_t cap = glove_buffer_cap_after(b, n);
        return cap <= b->cap ? 0 : grow_to(b, cap);
}

int glove_buffer_reserve_exact(struct glove_buffer *b, size_t n) {
        if (n > b->max || b->len > b->max - n)
                return -EMSGSIZE;
        size_t need = b->len + n;
        return need <= b->cap ? 0 : grow_to(b, need);
}

int glove_buffer_commit(struct glove_buffer *b, size_t n) {
        if (n > b->cap - b->len)
                return -EINVAL;
        b->len += n;
        return 0;
}

int glove_buffer_append(struct glove_buffer *b, const void *data, size_t n) {
        if (n == 0)
                return 0;
        int r = glove_buffer_reserve(b, n);
        if (r < 0)
                return r;
        memcpy(b->data + b->len, data, n);
        b->len += n;
        return 0;
}

int glove_buffer_consume(struct glove_buffer *b, size_t n) {
        if (n > b->len)
                return -EINVAL;
        if (n == 0)
                return 0;
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
        return 0;
}

ssize_t glove_buffer_find(const struct glove_buffer *b, uint8_t byte, size_t from) {
        if (from >= b->len)
                return -ENOENT;
        const uint8_t *p = memchr(b->data + from, byte, b->len - from);
        return p ? (ssize_t)(p - b->data) : -ENOENT;
}

void glove_buffer_reset(struct glove_buffer *b) {
        b->len = 0;
}

void glove_buffer_free(struct glove_buffer *b) {
        if (!b)
                return;
        free(b->data);
        b->data = NULL;
        b->len = 0;
        b->cap = 0;
}

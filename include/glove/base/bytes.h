/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Big-endian integers in byte buffers (the control protocol's length prefix,
 * the journals' records). p must hold 4 (be32) or 8 (be64) bytes; no
 * alignment is needed.
 */

#include <stdint.h>

static inline void glove_put_be32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}
static inline uint32_t glove_get_be32(const uint8_t *p) {
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline void glove_put_be64(uint8_t *p, uint64_t v) {
        glove_put_be32(p, (uint32_t)(v >> 32));
        glove_put_be32(p + 4, (uint32_t)v);
}
static inline uint64_t glove_get_be64(const uint8_t *p) {
        return ((uint64_t)glove_get_be32(p) << 32) | glove_get_be32(p + 4);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Strict RFC 4648 section 4 base64 (see base64.h). */
#include "glove/base/base64.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The value of each base64 character plus one; 0 for every other byte. */
static const uint8_t value1[256] = {
        ['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6, ['G'] = 7, ['H'] = 8, ['I'] = 9,
        ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16, ['Q'] = 17,
        ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24, ['Y'] = 25,
        ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32, ['g'] = 33,
        ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41,
        ['p'] = 42, ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48, ['w'] = 49,
        ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56, ['4'] = 57,
        ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64
};

size_t glove_base64_encode_into(const void *data, size_t n, char *out) {
        const uint8_t *p = data;
        char *o = out;
        size_t i = 0;
        /* Whole groups of three bytes: no branch per character. */
        for (; i + 3 <= n; i += 3, o += 4) {
                uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
                o[0] = alphabet[v >> 18];
                o[1] = alphabet[(v >> 12) & 63];
                o[2] = alphabet[(v >> 6) & 63];
                o[3] = alphabet[v & 63];
        }
        if (i < n) {
                uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
                o[0] = alphabet[v >> 18];
                o[1] = alphabet[(v >> 12) & 63];
                o[2] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
                o[3] = '=';
                o += 4;
        }
        return (size_t)(o - out);
}

int glove_base64_encode_cstr(const void *data, size_t n, char *out, size_t out_size) {
        if (n > GLOVE_BASE64_INPUT_MAX || GLOVE_BASE64_LEN(n) > (size_t)INT_MAX || out_size < GLOVE_BASE64_LEN(n) + 1)
                return -ENOBUFS;
        size_t len = glove_base64_encode_into(data, n, out);
        out[len] = '\0';
        return (int)len;
}

char *glove_base64_encode(const void *data, size_t n) {
        if (n > GLOVE_BASE64_INPUT_MAX)
                return NULL;
        char *out = malloc(GLOVE_BASE64_LEN(n) + 1);
        if (out)
                out[glove_base64_encode_into(data, n, out)] = '\0';
        return out;
}

ssize_t glove_base64_decode_into(const char *text, size_t len, uint8_t *out) {
        if (len % 4)
                return -EINVAL;
        const uint8_t *t = (const uint8_t *)text;
        size_t full = len, k = 0, pad = 0;
        if (len) {
                pad = t[len - 1] == '=' ? (t[len - 2] == '=' ? 2 : 1) : 0;
                if (pad)
                        full = len - 4;
        }
        for (size_t i = 0; i < full; i += 4) {
                uint32_t a = value1[t[i]], b = value1[t[i + 1]], c = value1[t[i + 2]], d = value1[t[i + 3]];
                if (!a || !b || !c || !d)
                        return -EINVAL;
                uint32_t w = (a - 1) << 18 | (b - 1) << 12 | (c - 1) << 6 | (d - 1);
                out[k] = (uint8_t)(w >> 16);
                out[k + 1] = (uint8_t)(w >> 8);
                out[k + 2] = (uint8_t)w;
                k += 3;
        }
        if (pad) {
                const uint8_t *q = t + full;
                uint32_t a = value1[q[0]], b = value1[q[1]], c = pad == 1 ? value1[q[2]] : 1;
                if (!a || !b || !c)
                        return -EINVAL;
                /* Canonical: the bits dropped by padding are zero. */
                if ((pad == 2 && ((b - 1) & 15)) || (pad == 1 && ((c - 1) & 3)))
                        return -EINVAL;
                uint32_t w = (a - 1) << 18 | (b - 1) << 12 | (c - 1) << 6;
                out[k++] = (uint8_t)(w >> 16);
                if (pad == 1)
                        out[k++] = (uint8_t)(w >> 8);
        }
        return (ssize_t)k;
}

int glove_base64_decode(const char *text, size_t len, size_t max, uint8_t **out, size_t *n) {
        *out = NULL;
        *n = 0;
        if (len % 4)
                return -EINVAL;
        size_t pad = len && text[len - 1] == '=' ? (text[len - 2] == '=' ? 2 : 1) : 0;
        if (GLOVE_BASE64_DECODED_MAX(len) - pad > max)
                return -EMSGSIZE;
        uint8_t *buf = malloc(len ? GLOVE_BASE64_DECODED_MAX(len) : 1);
        if (!buf)
                return -ENOMEM;
        ssize_t k = glove_base64_decode_into(text, len, buf);
        if (k < 0) {
                free(buf);
                return -EINVAL;
        }
        *out = buf;
        *n = (size_t)k;
        return 0;
}

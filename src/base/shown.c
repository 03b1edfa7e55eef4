/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/shown.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A bidirectional control's code point when p starts with its UTF-8
 * encoding (3 bytes, or 2 for U+061C), else 0. */
static uint32_t bidi_at(const unsigned char *p, size_t *len) {
        if (p[0] == 0xd8 && p[1] == 0x9c) {
                *len = 2;
                return 0x061c;
        }
        if (p[0] != 0xe2 || !p[1] || !p[2])
                return 0;
        uint32_t cp = ((uint32_t)(p[0] & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f);
        if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
                return 0;
        if (cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
                *len = 3;
                return cp;
        }
        return 0;
}

char *glove_shown(const char *s, char *out, size_t size) {
        size_t o = 0, cap = size - 4; /* room for "..." and the NUL */
        if (!s)
                s = "?";
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                char piece[16];
                size_t in = 1, n;
                size_t blen = 0;
                uint32_t bidi = bidi_at(p, &blen);
                bool c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
                if (bidi) {
                        n = (size_t)snprintf(piece, sizeof(piece), "\\u{%04X}", (unsigned)bidi);
                        in = blen;
                } else if (*p == '\\') {
                        /* The escape character itself, so that every
                         * shown string reads back as one original. */
                        n = (size_t)snprintf(piece, sizeof(piece), "\\\\");
                } else if (*p < 0x20 || *p == 0x7f || c1) {
                        n = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", c1 ? p[1] : *p);
                        in = c1 ? 2 : 1;
                } else {
                        /* A whole UTF-8 sequence at once, so a cut never
                         * splits one (a stray byte goes alone). */
                        size_t k = 1;
                        if (*p >= 0xc0)
                                while (k < 4 && (p[k] & 0xc0) == 0x80)
                                        k++;
                        memcpy(piece, p, k);
                        n = in = k;
                }
                if (o + n > cap) {
                        memcpy(out + o, "...", 4);
                        return out;
                }
                memcpy(out + o, piece, n);
                o += n;
                p += in;
        }
        out[o] = '\0';
        return out;
}

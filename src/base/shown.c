/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/shown.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The code point of the well-formed UTF-8 sequence at p (2 to 4 bytes),
 * its length in *len; 0 when p does not start one. */
static uint32_t decode_at(const unsigned char *p, size_t *len) {
        size_t k;
        uint32_t cp;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                k = 2, cp = p[0] & 0x1f;
        else if (p[0] >= 0xe0 && p[0] <= 0xef)
                k = 3, cp = p[0] & 0x0f;
        else if (p[0] >= 0xf0 && p[0] <= 0xf4)
                k = 4, cp = p[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < k; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        *len = k;
        return cp;
}

/* Code points a terminal shows as nothing, or as a plain space, or that
 * reorder text: bidirectional controls (UAX #9), the other format
 * characters (Cf), the line and paragraph separators (Zl, Zp), the
 * spaces other than U+0020 (Zs), variation selectors and the Hangul
 * fillers. Each is shown as \u{...}. */
static bool hidden(uint32_t cp) {
        static const uint32_t ranges[][2] = {
                { 0x00a0, 0x00a0 },   { 0x00ad, 0x00ad },   { 0x034f, 0x034f },   { 0x0600, 0x0605 },
                { 0x061c, 0x061c },   { 0x06dd, 0x06dd },   { 0x070f, 0x070f },   { 0x0890, 0x0891 },
                { 0x08e2, 0x08e2 },   { 0x115f, 0x1160 },   { 0x1680, 0x1680 },   { 0x180b, 0x180f },
                { 0x2000, 0x200f },   { 0x2028, 0x202f },   { 0x205f, 0x206f },   { 0x3000, 0x3000 },
                { 0x3164, 0x3164 },   { 0xfe00, 0xfe0f },   { 0xfeff, 0xfeff },   { 0xffa0, 0xffa0 },
                { 0xfff9, 0xfffb },   { 0x110bd, 0x110bd }, { 0x110cd, 0x110cd }, { 0x13430, 0x1343f },
                { 0x1bca0, 0x1bca3 }, { 0x1d173, 0x1d17a }, { 0xe0000, 0xe0fff },
        };
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
                if (cp >= ranges[i][0] && cp <= ranges[i][1])
                        return true;
        return false;
}

static char *show(const char *s, char *out, size_t size, bool name) {
        size_t o = 0, cap = size - 4; /* room for "..." and the NUL */
        if (!s)
                s = "?";
        const unsigned char *start = (const unsigned char *)s;
        for (const unsigned char *p = start; *p;) {
                char piece[16];
                size_t in = 1, n;
                size_t clen = 0;
                uint32_t cp = *p >= 0x80 ? decode_at(p, &clen) : 0;
                if (cp >= 0x80 && cp <= 0x9f) {
                        n = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", (unsigned)cp);
                        in = clen;
                } else if (cp && hidden(cp)) {
                        n = (size_t)snprintf(piece, sizeof(piece), "\\u{%04X}", (unsigned)cp);
                        in = clen;
                } else if (*p == '\\') {
                        /* The escape character itself, so that every
                         * shown string reads back as one original. */
                        n = (size_t)snprintf(piece, sizeof(piece), "\\\\");
                } else if (*p < 0x20 || *p == 0x7f ||
                           (name && *p == ' ' && (p == start || !p[1] || p[1] == ' ' || p[-1] == ' '))) {
                        n = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", *p);
                } else {
                        /* A whole UTF-8 sequence at once, so a cut never
                         * splits one (a stray byte goes alone). */
                        size_t k = clen ? clen : 1;
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

char *glove_shown(const char *s, char *out, size_t size) {
        return show(s, out, size, false);
}

char *glove_shown_name(const char *s, char *out, size_t size) {
        return show(s, out, size, true);
}

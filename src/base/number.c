/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/number.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Leading digits of s into *v; returns the first byte after them, or NULL
 * when there is no digit or the value overflows 64 bits. */
static const char *digits(const char *s, uint64_t *v) {
        if (!s || *s < '0' || *s > '9')
                return NULL;
        uint64_t x = 0;
        const char *p = s;
        for (; *p >= '0' && *p <= '9'; p++) {
                uint64_t d = (uint64_t)(*p - '0');
                if (x > (UINT64_MAX - d) / 10)
                        return NULL;
                x = x * 10 + d;
        }
        *v = x;
        return p;
}

/* The multiplier of size suffix p (the whole rest of the text), or 0. */
static uint64_t size_multiplier(const char *p) {
        static const char letters[] = "KMGT";
        if (*p == '\0')
                return 1;
        if ((p[0] == 'B' || p[0] == 'b') && p[1] == '\0')
                return 1;
        const char *l = p[0] ? strchr(letters, p[0] & ~0x20) : NULL;
        if (!l || !*l)
                return 0;
        uint64_t mult = UINT64_C(1) << (10 * (unsigned)(l - letters + 1));
        p++;
        if (*p == 'i' || *p == 'I') {
                p++;
                if (*p != 'B' && *p != 'b')
                        return 0;
        }
        if (*p == 'B' || *p == 'b')
                p++;
        return *p == '\0' ? mult : 0;
}

int glove_number_parse_u64(const char *s, unsigned flags, uint64_t min, uint64_t max, uint64_t *out) {
        uint64_t v = 0;
        const char *p = digits(s, &v);
        if (!p)
                return -EINVAL;
        uint64_t mult = (flags & GLOVE_NUMBER_SUFFIXES) ? size_multiplier(p) : (*p == '\0');
        if (mult == 0 || v > UINT64_MAX / mult)
                return -EINVAL;
        v *= mult;
        if (v < min || v > max)
                return -EINVAL;
        *out = v;
        return 0;
}

char *glove_number_format_size(uint64_t v, char *buf, size_t size) {
        static const char letters[] = "KMGT";
        int shift = 0;
        while (v != 0 && shift < 4 && (v & 1023) == 0) {
                v >>= 10;
                shift++;
        }
        if (shift == 0)
                snprintf(buf, size, "%llu", (unsigned long long)v);
        else
                snprintf(buf, size, "%llu%c", (unsigned long long)v, letters[shift - 1]);
        return buf;
}

int glove_duration_parse_ms(const char *s, uint64_t bare_unit_ms, uint64_t min_ms, uint64_t max_ms,
                            uint64_t *out_ms) {
        uint64_t v = 0;
        const char *p = digits(s, &v);
        if (!p || bare_unit_ms == 0 || (size_t)(p - s) > 18)
                return -EINVAL;
        uint64_t mult = strcmp(p, "") == 0    ? bare_unit_ms
                        : strcmp(p, "ms") == 0 ? 1
                        : strcmp(p, "s") == 0  ? 1000
                        : strcmp(p, "m") == 0  ? 60 * 1000
                        : strcmp(p, "h") == 0  ? 3600 * 1000
                                               : 0;
        if (mult == 0 || v > UINT64_MAX / mult)
                return -EINVAL;
        v *= mult;
        if (v < min_ms || v > max_ms)
                return -EINVAL;
        *out_ms = v;
        return 0;
}

char *glove_duration_format_ms(uint64_t ms, char *buf, size_t size) {
        if (ms != 0 && ms % (3600 * 1000) == 0)
                snprintf(buf, size, "%lluh", (unsigned long long)(ms / (3600 * 1000)));
        else if (ms != 0 && ms % (60 * 1000) == 0)
                snprintf(buf, size, "%llum", (unsigned long long)(ms / (60 * 1000)));
        else if (ms != 0 && ms % 1000 == 0)
                snprintf(buf, size, "%llus", (unsigned long long)(ms / 1000));
        else
                snprintf(buf, size, "%llums", (unsigned long long)ms);
        return buf;
}

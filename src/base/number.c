/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/number.h"

#include <errno.h>

int glove_number_parse_u64(const char *s, unsigned flags, uint64_t min, uint64_t max, uint64_t *out) {
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        uint64_t v = 0;
        const char *p = s;
        for (; *p >= '0' && *p <= '9'; p++) {
                uint64_t d = (uint64_t)(*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        uint64_t mult = 1;
        if (flags & GLOVE_NUMBER_SUFFIXES) {
                if (*p == 'K' || *p == 'k')
                        mult = UINT64_C(1) << 10;
                else if (*p == 'M' || *p == 'm')
                        mult = UINT64_C(1) << 20;
                else if (*p == 'G' || *p == 'g')
                        mult = UINT64_C(1) << 30;
                if (mult > 1)
                        p++;
        }
        if (*p != '\0' || v > UINT64_MAX / mult)
                return -EINVAL;
        v *= mult;
        if (v < min || v > max)
                return -EINVAL;
        *out = v;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Agent-side resource URIs "glove://NAME/U" (names.h). */
#include "glove/kernel/names.h"

#include <errno.h>
#include <string.h>

#include "glove/base/json.h"

static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool glove_kernel_uri_valid(const char *s, size_t len) {
        if (!s || len == 0 || len > GLOVE_KERNEL_URI_MAX || !glove_json_utf8_valid(s, len, NULL))
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < 0x20 || c == 0x7f ||
                    (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9f))
                        return false;
        }
        return true;
}

int glove_kernel_uri_qualify(const char *upstream, const char *uri, size_t len, char *out, size_t out_size) {
        size_t n = upstream ? strnlen(upstream, 33) : 0;
        if (n == 0 || n > 32 || !glove_kernel_uri_valid(uri, len))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!name_char(upstream[i]))
                        return -EINVAL;
        size_t sl = sizeof(GLOVE_KERNEL_URI_SCHEME) - 1, total = sl + n + 1 + len;
        if (total + 1 > out_size)
                return -ENOSPC;
        memcpy(out, GLOVE_KERNEL_URI_SCHEME, sl);
        memcpy(out + sl, upstream, n);
        out[sl + n] = '/';
        memcpy(out + sl + n + 1, uri, len);
        out[total] = '\0';
        return (int)total;
}

int glove_kernel_uri_split(const char *q, size_t len, const char **name, size_t *name_len, const char **uri,
                           size_t *uri_len) {
        size_t sl = sizeof(GLOVE_KERNEL_URI_SCHEME) - 1;
        if (!q || len < sl || memcmp(q, GLOVE_KERNEL_URI_SCHEME, sl) != 0)
                return -ENOENT;
        size_t n = 0;
        while (sl + n < len && n <= 32 && name_char(q[sl + n]))
                n++;
        if (n == 0 || n > 32 || sl + n >= len || q[sl + n] != '/')
                return -EINVAL;
        const char *u = q + sl + n + 1;
        size_t ul = len - sl - n - 1;
        if (!glove_kernel_uri_valid(u, ul))
                return -EINVAL;
        *name = q + sl;
        *name_len = n;
        *uri = u;
        *uri_len = ul;
        return 0;
}

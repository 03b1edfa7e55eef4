/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Cuts s (of capacity cap, NUL-terminated) so it ends on a UTF-8 boundary and
 * marks the cut with "...". */
static void mark_truncated(char *s, size_t cap) {
        size_t n = cap - 4;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
                n--;
        memcpy(s + n, "...", 4);
}

int glove_error_setv(struct glove_error *err, int errnum, const char *code,
                     const char *fmt, va_list ap) {
        if (errnum < 0)
                errnum = -errnum;
        if (errnum == 0)
                errnum = EINVAL;
        if (!err || err->code)
                return -errnum;
        err->errnum = errnum;
        err->code = code ? code : "glove.unknown";
        int n = vsnprintf(err->message, sizeof(err->message), fmt, ap);
        if (n < 0)
                snprintf(err->message, sizeof(err->message), "%s", err->code);
        else if ((size_t)n >= sizeof(err->message))
                mark_truncated(err->message, sizeof(err->message));
        return -errnum;
}

int glove_error_set(struct glove_error *err, int errnum, const char *code,
                    const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = glove_error_setv(err, errnum, code, fmt, ap);
        va_end(ap);
        return r;
}

void glove_error_clear(struct glove_error *err) {
        if (!err)
                return;
        err->errnum = 0;
        err->code = NULL;
        err->message[0] = '\0';
}

void glove_error_prefix(struct glove_error *err, const char *fmt, ...) {
        if (!glove_error_is_set(err))
                return;
        char prefix[GLOVE_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        char joined[GLOVE_ERROR_MESSAGE_MAX];
        n = snprintf(joined, sizeof(joined), "%s: %s", prefix, err->message);
        if (n >= 0 && (size_t)n >= sizeof(joined))
                mark_truncated(joined, sizeof(joined));
        memcpy(err->message, joined, sizeof(joined));
}

void glove_error_prepend_word(struct glove_error *err, const char *word) {
        if (!glove_error_is_set(err) || !word)
                return;
        char joined[GLOVE_ERROR_MESSAGE_MAX];
        int n = snprintf(joined, sizeof(joined), "%s %s", word, err->message);
        if (n >= 0 && (size_t)n >= sizeof(joined))
                mark_truncated(joined, sizeof(joined));
        memcpy(err->message, joined, sizeof(joined));
}

const char *glove_errno_text(int errnum) {
        /* strerrordesc_np (glibc 2.32) is a table lookup without gettext;
         * strerror translates through the locale, taking its locks. */
        const char *s = strerrordesc_np(errnum < 0 ? -errnum : errnum);
        return s ? s : "Unknown error";
}

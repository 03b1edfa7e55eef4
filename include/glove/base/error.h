/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The one error type of Glove (DESIGN.md, "C conventions").
 *
 * Functions return 0 on success or a negative errno-style value on failure.
 * Where a caller needs words, they also fill a struct glove_error with a
 * stable machine code (a static string such as "grant.missing_path") and a
 * one-line human message. Stable codes cross every boundary: CLI error text,
 * audit records, and (later) the control protocol.
 */

#include <stdarg.h>
#include <stddef.h>

/* Longest human message kept, including the terminating NUL; longer messages
 * are cut at a UTF-8 boundary and end in "...". */
#define GLOVE_ERROR_MESSAGE_MAX 512

struct glove_error {
        int errnum;        /* positive errno value, 0 when no error is set */
        const char *code;  /* static stable code, NULL when no error is set */
        char message[GLOVE_ERROR_MESSAGE_MAX];
};

/*
 * Records an error. errnum is an errno value (sign ignored; 0 becomes EINVAL),
 * code a static string that must outlive err (a literal), fmt a printf format
 * for the message. err may be NULL, in which case only the return value is
 * produced. The first error set wins: a later call on an err that already
 * holds an error leaves it unchanged (the root cause is kept).
 *
 * Returns -errnum (always negative), so callers can write
 * `return glove_error_set(err, ENOENT, "x.y", "...")`.
 */
int glove_error_set(struct glove_error *err, int errnum, const char *code,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* As glove_error_set, with a va_list. */
int glove_error_setv(struct glove_error *err, int errnum, const char *code,
                     const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

/* Resets err to "no error". err may be NULL. */
void glove_error_clear(struct glove_error *err);

/* True when err holds an error. */
static inline int glove_error_is_set(const struct glove_error *err) {
        return err && err->code != NULL;
}

/*
 * Prepends "word " to the message of an error already set: how a front end
 * names the command-line flag before a lower module's message that starts
 * with the offending value (DESIGN.md: flag names live in the CLI). No effect
 * when err is NULL or holds no error; a message that no longer fits is cut
 * as glove_error_set cuts it.
 */
void glove_error_prepend_word(struct glove_error *err, const char *word);

/*
 * Prepends "context: " to an error already set (for callers that add where
 * the failure happened). No effect when err is NULL or holds no error.
 */
void glove_error_prefix(struct glove_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/*
 * The English text of errno value errnum, as strerror() gives it in the C
 * locale ("No such file or directory"), or "Unknown error" for a value the
 * C library does not know. Takes no lock, reads no locale and allocates
 * nothing: usable in a child cloned from a multi-threaded process and in a
 * signal handler. The text is static; the sign of errnum is ignored.
 */
const char *glove_errno_text(int errnum);

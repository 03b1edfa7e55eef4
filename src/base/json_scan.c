/* SPDX-License-Identifier: Apache-2.0 */
/* A recognizer of canonical JSON objects that builds no value (json_scan.h). */
#include "glove/base/json_scan.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "glove/base/json.h"

struct scan {
        const unsigned char *p, *end;
        size_t depth; /* containers open around the current position */
        const char *code;
        const char *what;
};

/* Records the first failure; every scan function returns false after it. */
static bool fail(struct scan *s, const char *code, const char *what) {
        if (!s->code) {
                s->code = code;
                s->what = what;
        }
        return false;
}

static bool not_canonical(struct scan *s, const char *what) {
        return fail(s, "json.not_canonical", what);
}

static bool eat(struct scan *s, unsigned char c) {
        if (s->p < s->end && *s->p == c) {
                s->p++;
                return true;
        }
        return false;
}

static bool is_upper_hex(unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

static unsigned hex_value(unsigned char c) {
        return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'A' + 10);
}

/* The escape after a backslash at s->p: only the one the encoder writes for
 * that character. Stores the decoded byte in *byte. */
static bool scan_escape(struct scan *s, unsigned char *byte) {
        if (s->p >= s->end)
                return not_canonical(s, "unterminated string");
        unsigned char c = *s->p++;
        switch (c) {
        case '"':
        case '\\':
                *byte = c;
                return true;
        case 'b':
                *byte = '\b';
                return true;
        case 'f':
                *byte = '\f';
                return true;
        case 'n':
                *byte = '\n';
                return true;
        case 'r':
                *byte = '\r';
                return true;
        case 't':
                *byte = '\t';
                return true;
        case 'u':
                break;
        default:
                return not_canonical(s, "an escape the canonical encoder does not write");
        }
        if (s->end - s->p < 4 || s->p[0] != '0' || s->p[1] != '0' || !is_upper_hex(s->p[2]) ||
            !is_upper_hex(s->p[3]))
                return not_canonical(s, "a \\u escape of a character the canonical encoder writes as itself");
        unsigned v = hex_value(s->p[2]) * 16 + hex_value(s->p[3]);
        s->p += 4;
        if (v == 0)
                return fail(s, "json.embedded_nul", "string contains NUL");
        if (v >= 0x20 || v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t')
                return not_canonical(s, "a \\u escape of a character with a shorter canonical form");
        *byte = (unsigned char)v;
        return true;
}

/* Skips whole 8-byte words that hold no '"', no '\\' and no byte below
 * 0x20 (bytes of 0x80 and above are plain: UTF-8 was checked before);
 * the caller finishes byte by byte. Word tests as in "Bit Twiddling Hacks"
 * (a byte of x is zero: (x - 0x01..) & ~x & 0x80..). */
static const unsigned char *skip_plain(const unsigned char *p, const unsigned char *end) {
        const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
        while (end - p >= 8) {
                uint64_t x;
                memcpy(&x, p, sizeof(x));
                uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
                uint64_t special = ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) |
                                   ((x - ones * 0x20) & ~x);
                if (special & highs)
                        break;
                p += 8;
        }
        return p;
}

/* A string at s->p (the opening quote). Its body (between the quotes) is
 * stored in *body, *body_len; *escaped tells whether it holds an escape.
 * The text is already known to be valid UTF-8 without NUL bytes. */
static bool scan_string(struct scan *s, const unsigned char **body, size_t *body_len, bool *escaped) {
        if (!eat(s, '"'))
                return not_canonical(s, "expected a string");
        *body = s->p;
        *escaped = false;
        for (;;) {
                /* the run of bytes that stand for themselves */
                const unsigned char *p = skip_plain(s->p, s->end), *end = s->end;
                while (p < end && *p >= 0x20 && *p != '"' && *p != '\\')
                        p++;
                s->p = p;
                if (p == end)
                        return not_canonical(s, "unterminated string");
                unsigned char c = *s->p++;
                if (c == '"') {
                        *body_len = (size_t)(p - *body);
                        return true;
                }
                if (c != '\\')
                        return not_canonical(s, "a raw control character in a string");
                unsigned char byte;
                if (!scan_escape(s, &byte))
                        return false;
                *escaped = true;
        }
}

/* The next decoded byte of a scanned string body; *p advances. */
static unsigned char next_decoded(const unsigned char **p) {
        unsigned char c = *(*p)++;
        if (c != '\\')
                return c;
        c = *(*p)++;
        switch (c) {
        case 'b':
                return '\b';
        case 'f':
                return '\f';
        case 'n':
                return '\n';
        case 'r':
                return '\r';
        case 't':
                return '\t';
        case 'u': {
                unsigned char v = (unsigned char)(hex_value((*p)[2]) * 16 + hex_value((*p)[3]));
                *p += 4;
                return v;
        }
        default:
                return c; /* '"' or '\\' */
        }
}

/* Compares two scanned keys by their decoded bytes, as jansson's
 * JSON_SORT_KEYS does (memcmp, then the shorter first). */
static int key_compare(const unsigned char *a, size_t an, bool a_escaped, const unsigned char *b, size_t bn,
                       bool b_escaped) {
        if (!a_escaped && !b_escaped) {
                int r = memcmp(a, b, an < bn ? an : bn);
                return r ? r : (an > bn) - (an < bn);
        }
        const unsigned char *ae = a + an, *be = b + bn;
        while (a < ae && b < be) {
                unsigned char x = next_decoded(&a), y = next_decoded(&b);
                if (x != y)
                        return x < y ? -1 : 1;
        }
        return (a < ae) - (b < be);
}

/* An integer: -?(0|[1-9][0-9]*) within int64, not "-0". A fraction or an
 * exponent after it is left for the caller's next token to refuse. */
static bool scan_integer(struct scan *s) {
        static const char max_digits[] = "9223372036854775807";
        bool negative = eat(s, '-');
        const unsigned char *start = s->p;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
                s->p++;
        size_t n = (size_t)(s->p - start);
        if (n == 0)
                return not_canonical(s, "expected a value");
        if (start[0] == '0' && (n > 1 || negative))
                return not_canonical(s, "a number with a leading zero, or -0");
        if (n > sizeof(max_digits) - 1)
                return not_canonical(s, "an integer outside int64");
        if (n == sizeof(max_digits) - 1) {
                int c = memcmp(start, max_digits, n);
                /* -9223372036854775808 is the one value one past the positive bound */
                if (c > 0 && !(negative && memcmp(start, "9223372036854775808", n) == 0))
                        return not_canonical(s, "an integer outside int64");
        }
        if (s->p < s->end && (*s->p == '.' || *s->p == 'e' || *s->p == 'E'))
                return not_canonical(s, "a real number (only integers are canonical)");
        return true;
}

static bool scan_literal(struct scan *s, const char *word, size_t n) {
        if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
                return not_canonical(s, "expected a value");
        s->p += n;
        return true;
}

static bool scan_value(struct scan *s);

static bool enter(struct scan *s) {
        if (++s->depth > GLOVE_JSON_MAX_DEPTH)
                return fail(s, "json.too_deep", "nesting deeper than the bound");
        return true;
}

static bool scan_array(struct scan *s) {
        s->p++; /* '[' */
        if (!enter(s))
                return false;
        if (!eat(s, ']')) {
                do {
                        if (!scan_value(s))
                                return false;
                } while (eat(s, ','));
                if (!eat(s, ']'))
                        return not_canonical(s, "expected ',' or ']'");
        }
        s->depth--;
        return true;
}

/* An object at s->p ('{'); the first max_members members are stored in
 * members when it is the top level (members != NULL). */
static bool scan_object(struct scan *s, struct glove_json_member_span *members, size_t max_members, size_t *count) {
        s->p++; /* '{' */
        if (!enter(s))
                return false;
        size_t n = 0;
        const unsigned char *prev = NULL;
        size_t prev_len = 0;
        bool prev_escaped = false;
        if (!eat(s, '}')) {
                do {
                        const unsigned char *key, *value;
                        size_t key_len;
                        bool escaped;
                        if (!scan_string(s, &key, &key_len, &escaped))
                                return false;
                        if (prev && key_compare(prev, prev_len, prev_escaped, key, key_len, escaped) >= 0)
                                return not_canonical(s, "object keys not in strictly increasing order");
                        if (!eat(s, ':'))
                                return not_canonical(s, "expected ':'");
                        value = s->p;
                        if (!scan_value(s))
                                return false;
                        if (members && n < max_members)
                                members[n] = (struct glove_json_member_span){
                                        .key = (const char *)key,
                                        .key_len = key_len,
                                        .value = (const char *)value,
                                        .value_len = (size_t)(s->p - value),
                                };
                        n++;
                        prev = key;
                        prev_len = key_len;
                        prev_escaped = escaped;
                } while (eat(s, ','));
                if (!eat(s, '}'))
                        return not_canonical(s, "expected ',' or '}'");
        }
        s->depth--;
        if (count)
                *count = n;
        return true;
}

static bool scan_value(struct scan *s) {
        if (s->p >= s->end)
                return not_canonical(s, "expected a value");
        const unsigned char *body;
        size_t len;
        bool escaped;
        switch (*s->p) {
        case '{':
                return scan_object(s, NULL, 0, NULL);
        case '[':
                return scan_array(s);
        case '"':
                return scan_string(s, &body, &len, &escaped);
        case 't':
                return scan_literal(s, "true", 4);
        case 'f':
                return scan_literal(s, "false", 5);
        case 'n':
                return scan_literal(s, "null", 4);
        default:
                return scan_integer(s);
        }
}

int glove_json_scan_canonical_object(const void *data, size_t len, size_t max_bytes,
                                     struct glove_json_member_span *members, size_t max_members,
                                     size_t *n_members, struct glove_error *err) {
        *n_members = 0;
        if (len > max_bytes)
                return glove_error_set(err, EMSGSIZE, "json.too_large", "JSON text is %zu bytes, the limit is %zu",
                                       len, max_bytes);
        const unsigned char *p = data;
        const unsigned char *nul = len ? memchr(p, 0, len) : NULL;
        if (nul)
                return glove_error_set(err, EINVAL, "json.embedded_nul", "NUL byte at offset %zu in JSON text",
                                       (size_t)(nul - p));
        size_t where = 0;
        if (!glove_json_utf8_valid(p, len, &where))
                return glove_error_set(err, EINVAL, "json.invalid_utf8", "invalid UTF-8 at offset %zu in JSON text",
                                       where);
        if (len == 0 || p[0] != '{')
                return glove_error_set(err, EINVAL, "json.not_object", "$: expected an object");
        struct scan s = { .p = p, .end = p + len };
        size_t n = 0;
        if (scan_object(&s, members, max_members, &n) && s.p != s.end)
                not_canonical(&s, "bytes after the object");
        if (s.code)
                return glove_error_set(err, EINVAL, s.code, "JSON text is not canonical at byte %zu: %s",
                                       (size_t)(s.p - p), s.what);
        *n_members = n;
        return 0;
}

/* ---- reading members ---- */

const struct glove_json_member_span *glove_json_span_find(const struct glove_json_member_span *members, size_t n,
                                                          const char *key) {
        size_t len = strlen(key);
        for (size_t i = 0; i < n; i++)
                if (members[i].key_len == len && memcmp(members[i].key, key, len) == 0)
                        return &members[i];
        return NULL;
}

bool glove_json_span_exact(const struct glove_json_member_span *members, size_t n, const char *const keys[],
                           const char *optional, const char **what) {
        size_t found = 0;
        for (size_t k = 0; keys[k]; k++) {
                if (!glove_json_span_find(members, n, keys[k])) {
                        *what = keys[k];
                        return false;
                }
                found++;
        }
        if (optional && glove_json_span_find(members, n, optional))
                found++;
        *what = NULL;
        return found == n; /* keys are distinct: a surplus is a member not listed */
}

bool glove_json_span_plain_string(const struct glove_json_member_span *m, char *buf, size_t cap) {
        if (!m || m->value_len < 2 || m->value[0] != '"' || m->value_len - 2 >= cap ||
            memchr(m->value + 1, '\\', m->value_len - 2))
                return false;
        memcpy(buf, m->value + 1, m->value_len - 2);
        buf[m->value_len - 2] = '\0';
        return true;
}

bool glove_json_span_int(const struct glove_json_member_span *m, int64_t min, int64_t *out) {
        if (!m || m->value[0] < '0' || m->value[0] > '9')
                return false;
        /* the scan checked -?(0|[1-9][0-9]*) within int64: no overflow */
        int64_t v = 0;
        for (size_t i = 0; i < m->value_len; i++)
                v = v * 10 + (m->value[i] - '0');
        *out = v;
        return v >= min;
}

bool glove_json_span_is_object(const struct glove_json_member_span *m) {
        return m && m->value[0] == '{';
}

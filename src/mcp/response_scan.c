/* SPDX-License-Identifier: Apache-2.0 */
/* The non-allocating scanner of an upstream's responses (response_scan.h).
 *
 * Every function answers true only when the text it read is JSON that
 * jansson, decoding as glove_json_decode_strict does (JSON_REJECT_DUPLICATES,
 * JSON_ALLOW_NUL), accepts with the same meaning; false means "cannot
 * tell", never "invalid": the caller then goes the tree parser's way. */
#include "glove/mcp/response_scan.h"

#include <string.h>

#include "glove/base/json.h"

struct scan {
        const unsigned char *p;
        size_t i, n;
        unsigned depth;                               /* containers open, as shape_within_limits counts them */
        size_t nkeys;                                 /* keys of the open objects, in key_off/key_len */
        uint32_t key_off[GLOVE_MCP_SCAN_KEYS_MAX];
        uint32_t key_len[GLOVE_MCP_SCAN_KEYS_MAX];
};

static bool value(struct scan *s);

static void skip_ws(struct scan *s) {
        while (s->i < s->n && (s->p[s->i] == ' ' || s->p[s->i] == '\t' || s->p[s->i] == '\r' || s->p[s->i] == '\n'))
                s->i++;
}

static bool at(const struct scan *s, unsigned char c) {
        return s->i < s->n && s->p[s->i] == c;
}

static bool is_digit(unsigned char c) {
        return c >= '0' && c <= '9';
}

static int hex4(const struct scan *s, size_t at_) {
        if (at_ + 4 > s->n)
                return -1;
        int v = 0;
        for (size_t k = 0; k < 4; k++) {
                unsigned char c = s->p[at_ + k];
                int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

/* A string at s->i (its opening quote); on true s->i is past its closing
 * quote and *escaped tells whether it holds an escape. Raw control
 * characters, unknown escapes and unpaired surrogates are jansson's
 * errors: false. Bytes from 0x80 up were validated as UTF-8 by the
 * caller; "\u0000" is accepted (JSON_ALLOW_NUL). */
static bool string(struct scan *s, bool *escaped) {
        *escaped = false;
        s->i++;
        while (s->i < s->n) {
                unsigned char c = s->p[s->i];
                if (c == '"') {
                        s->i++;
                        return true;
                }
                if (c < 0x20)
                        return false;
                if (c != '\\') {
                        s->i++;
                        continue;
                }
                *escaped = true;
                if (s->i + 1 >= s->n)
                        return false;
                unsigned char e = s->p[s->i + 1];
                if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                        s->i += 2;
                        continue;
                }
                if (e != 'u')
                        return false;
                int v = hex4(s, s->i + 2);
                if (v < 0 || (v >= 0xDC00 && v <= 0xDFFF))
                        return false;
                s->i += 6;
                if (v >= 0xD800 && v <= 0xDBFF) {
                        /* A high surrogate must be followed by an escaped low one. */
                        if (s->i + 1 >= s->n || s->p[s->i] != '\\' || s->p[s->i + 1] != 'u')
                                return false;
                        int w = hex4(s, s->i + 2);
                        if (w < 0xDC00 || w > 0xDFFF)
                                return false;
                        s->i += 6;
                }
        }
        return false;
}

/* A number at s->i (jansson's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?).
 * An integer is decided when it has at most 18 digits (it fits int64, as
 * strtoll needs); a real when its leading digit's decimal exponent is within
 * ±GLOVE_MCP_SCAN_REAL_EXP_MAX (no overflow in strtod). *integer and *int_value
 * describe an integer (int_value only when int_out is wanted). */
static bool number(struct scan *s, bool *integer, int64_t *int_value) {
        bool neg = at(s, '-');
        s->i += neg;
        if (s->i >= s->n || !is_digit(s->p[s->i]))
                return false;
        size_t int_start = s->i;
        if (s->p[s->i] == '0')
                s->i++;
        else
                while (s->i < s->n && is_digit(s->p[s->i]))
                        s->i++;
        size_t int_digits = s->i - int_start;
        if (s->i < s->n && is_digit(s->p[s->i]))
                return false; /* "01": jansson's "invalid token" */
        size_t frac_start = s->i, frac_digits = 0;
        bool real = false;
        if (at(s, '.')) {
                real = true;
                s->i++;
                frac_start = s->i;
                while (s->i < s->n && is_digit(s->p[s->i]))
                        s->i++;
                frac_digits = s->i - frac_start;
                if (frac_digits == 0)
                        return false;
        }
        long exp = 0;
        if (at(s, 'e') || at(s, 'E')) {
                real = true;
                s->i++;
                bool eneg = at(s, '-');
                if (at(s, '+') || at(s, '-'))
                        s->i++;
                size_t e_start = s->i;
                while (s->i < s->n && is_digit(s->p[s->i])) {
                        if (s->i - e_start >= 6)
                                return false; /* an exponent this long: the tree parser decides */
                        exp = exp * 10 + (s->p[s->i] - '0');
                        s->i++;
                }
                if (s->i == e_start)
                        return false;
                exp = eneg ? -exp : exp;
        }
        *integer = !real;
        if (!real) {
                if (int_digits > 18)
                        return false;
                int64_t v = 0;
                for (size_t k = 0; k < int_digits; k++)
                        v = v * 10 + (s->p[int_start + k] - '0');
                *int_value = neg ? -v : v;
                return true;
        }
        /* The first non-zero digit of the mantissa, and its decimal exponent. */
        long lead = 0;
        bool nonzero = false;
        for (size_t k = 0; k < int_digits && !nonzero; k++)
                if (s->p[int_start + k] != '0') {
                        nonzero = true;
                        lead = (long)(int_digits - 1 - k);
                }
        for (size_t k = 0; k < frac_digits && !nonzero; k++)
                if (s->p[frac_start + k] != '0') {
                        nonzero = true;
                        lead = -(long)(k + 1);
                }
        if (!nonzero)
                return true; /* zero, whatever its exponent */
        long e10 = lead + exp;
        return e10 <= GLOVE_MCP_SCAN_REAL_EXP_MAX && e10 >= -GLOVE_MCP_SCAN_REAL_EXP_MAX;
}

static bool literal(struct scan *s, const char *word) {
        size_t l = strlen(word);
        if (s->n - s->i < l || memcmp(s->p + s->i, word, l) != 0)
                return false;
        s->i += l;
        return true;
}

static bool open_container(struct scan *s) {
        if (++s->depth > GLOVE_JSON_MAX_DEPTH)
                return false; /* json.too_deep */
        s->i++;
        skip_ws(s);
        return true;
}

static bool object(struct scan *s) {
        if (!open_container(s))
                return false;
        size_t base = s->nkeys;
        if (at(s, '}')) {
                s->i++;
                s->depth--;
                return true;
        }
        for (;;) {
                if (!at(s, '"'))
                        return false;
                size_t start = s->i + 1;
                bool escaped;
                if (!string(s, &escaped) || escaped)
                        return false; /* a key with an escape could spell another: the tree parser compares them */
                uint32_t off = (uint32_t)start, len = (uint32_t)(s->i - 1 - start);
                if (s->nkeys - base >= GLOVE_MCP_SCAN_OBJECT_KEYS_MAX || s->nkeys >= GLOVE_MCP_SCAN_KEYS_MAX)
                        return false;
                for (size_t k = base; k < s->nkeys; k++)
                        if (s->key_len[k] == len && memcmp(s->p + s->key_off[k], s->p + off, len) == 0)
                                return false; /* a duplicate key: jansson refuses it */
                s->key_off[s->nkeys] = off;
                s->key_len[s->nkeys] = len;
                s->nkeys++;
                skip_ws(s);
                if (!at(s, ':'))
                        return false;
                s->i++;
                skip_ws(s);
                if (!value(s))
                        return false;
                skip_ws(s);
                if (at(s, ',')) {
                        s->i++;
                        skip_ws(s);
                        continue;
                }
                if (!at(s, '}'))
                        return false;
                s->i++;
                s->nkeys = base;
                s->depth--;
                return true;
        }
}

static bool array(struct scan *s) {
        if (!open_container(s))
                return false;
        if (at(s, ']')) {
                s->i++;
                s->depth--;
                return true;
        }
        for (;;) {
                if (!value(s))
                        return false;
                skip_ws(s);
                if (at(s, ',')) {
                        s->i++;
                        skip_ws(s);
                        continue;
                }
                if (!at(s, ']'))
                        return false;
                s->i++;
                s->depth--;
                return true;
        }
}

static bool value(struct scan *s) {
        if (s->i >= s->n)
                return false;
        bool escaped, integer;
        int64_t v;
        switch (s->p[s->i]) {
        case '{':
                return object(s);
        case '[':
                return array(s);
        case '"':
                return string(s, &escaped);
        case 't':
                return literal(s, "true");
        case 'f':
                return literal(s, "false");
        case 'n':
                return literal(s, "null");
        default:
                return number(s, &integer, &v);
        }
}

enum { K_JSONRPC = 1u << 0, K_ID = 1u << 1, K_RESULT = 1u << 2, K_ERROR = 1u << 3 };

/* The top-level object: only "jsonrpc" ("2.0" exactly), an integer "id",
 * and one of "result" and "error" (an object). Anything else — "method",
 * "params", an unknown or escaped key, a key twice — is left to the tree
 * parser. */
static bool top_object(struct scan *s, struct glove_mcp_raw_response *out) {
        if (!at(s, '{') || !open_container(s))
                return false;
        unsigned seen = 0;
        for (;;) {
                if (!at(s, '"'))
                        return false;
                size_t start = s->i + 1;
                bool escaped;
                if (!string(s, &escaped) || escaped)
                        return false;
                const char *k = (const char *)s->p + start;
                size_t klen = s->i - 1 - start;
                unsigned key = klen == 7 && memcmp(k, "jsonrpc", 7) == 0  ? K_JSONRPC
                               : klen == 2 && memcmp(k, "id", 2) == 0      ? K_ID
                               : klen == 6 && memcmp(k, "result", 6) == 0  ? K_RESULT
                               : klen == 5 && memcmp(k, "error", 5) == 0   ? K_ERROR
                                                                           : 0;
                if (!key || (seen & key))
                        return false;
                seen |= key;
                skip_ws(s);
                if (!at(s, ':'))
                        return false;
                s->i++;
                skip_ws(s);
                size_t vstart = s->i;
                bool integer = false;
                int64_t id = 0;
                switch (key) {
                case K_JSONRPC:
                        if (!literal(s, "\"2.0\""))
                                return false;
                        break;
                case K_ID:
                        if (!number(s, &integer, &id) || !integer)
                                return false; /* a string id, or not an id at all */
                        out->id = id;
                        break;
                case K_ERROR:
                        if (!at(s, '{'))
                                return false; /* "error" must be an object */
                        /* fall through */
                default:
                        if (!value(s))
                                return false;
                        out->is_error = key == K_ERROR;
                        out->value_off = vstart;
                        out->value_len = s->i - vstart;
                        break;
                }
                skip_ws(s);
                if (at(s, ',')) {
                        s->i++;
                        skip_ws(s);
                        continue;
                }
                if (!at(s, '}'))
                        return false;
                s->i++;
                s->depth--;
                break;
        }
        unsigned one = seen & (K_RESULT | K_ERROR);
        return (seen & K_JSONRPC) && (seen & K_ID) && (one == K_RESULT || one == K_ERROR);
}

int glove_mcp_response_scan(const char *line, size_t len, size_t max_frame, struct glove_mcp_raw_response *out) {
        memset(out, 0, sizeof(*out));
        /* The tree parser's first checks (glove_json_decode_strict), in its
         * order; a line of 4 GiB or more is left to it too (offsets are
         * 32-bit). */
        if (len == 0 || len > max_frame || len >= UINT32_MAX || memchr(line, '\0', len) ||
            !glove_json_utf8_valid(line, len, NULL))
                return 0;
        struct scan s;
        s.p = (const unsigned char *)line;
        s.i = 0;
        s.n = len;
        s.depth = 0;
        s.nkeys = 0;
        skip_ws(&s);
        if (!top_object(&s, out))
                return 0;
        skip_ws(&s);
        return s.i == s.n ? 1 : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"

#define CANONICAL_DUMP_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)
#define KNOWN_DECODE_FLAGS \
        ((unsigned)GLOVE_JSON_OBJECT_ONLY | (unsigned)GLOVE_JSON_ALLOW_NUL_ESCAPE | (unsigned)GLOVE_JSON_BOUND_VALUES)
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* ---- bounded text sink for paths and messages ---- */

struct sink {
        char *buf;
        size_t cap;
        size_t len;
        bool overflow;
};

static void sink_init(struct sink *s, char *buf, size_t cap) {
        s->buf = buf;
        s->cap = cap;
        s->len = 0;
        s->overflow = cap == 0;
        if (cap > 0)
                buf[0] = '\0';
}

static void sink_putc(struct sink *s, char c) {
        if (s->overflow)
                return;
        if (s->len + 1 >= s->cap) {
                s->overflow = true;
                return;
        }
        s->buf[s->len++] = c;
        s->buf[s->len] = '\0';
}

/* Printable ASCII is copied; every other byte is written as \xNN. */
static void sink_put_escaped(struct sink *s, const char *p, size_t n) {
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < n && !s->overflow; i++) {
                unsigned char c = (unsigned char)p[i];
                if (c >= 0x20 && c < 0x7f) {
                        sink_putc(s, (char)c);
                        continue;
                }
                sink_putc(s, '\\');
                sink_putc(s, 'x');
                sink_putc(s, hex[c >> 4]);
                sink_putc(s, hex[c & 0xf]);
        }
}

static void sink_put_index(struct sink *s, size_t index) {
        char tmp[32];
        int n = snprintf(tmp, sizeof(tmp), "[%zu]", index);
        sink_put_escaped(s, tmp, (size_t)n);
}

static void sink_put_root(struct sink *s, const char *parent) {
        const char *p = parent ? parent : "$";
        sink_put_escaped(s, p, strlen(p));
}

/* For messages only: an overflowing text ends in "..." instead of failing. */
static const char *sink_finish_for_message(struct sink *s) {
        if (s->overflow && s->cap >= 4)
                memcpy(s->buf + s->cap - 4, "...", 4);
        return s->buf;
}

int glove_json_path_member(char *buf, size_t cap, const char *parent, const char *key) {
        struct sink s;
        sink_init(&s, buf, cap);
        sink_put_root(&s, parent);
        sink_putc(&s, '.');
        sink_put_escaped(&s, key, strlen(key));
        if (s.overflow) {
                if (cap > 0)
                        buf[0] = '\0';
                return -ENAMETOOLONG;
        }
        return 0;
}

int glove_json_path_index(char *buf, size_t cap, const char *parent, size_t index) {
        struct sink s;
        sink_init(&s, buf, cap);
        sink_put_root(&s, parent);
        sink_put_index(&s, index);
        if (s.overflow) {
                if (cap > 0)
                        buf[0] = '\0';
                return -ENAMETOOLONG;
        }
        return 0;
}

static const char *msg_path(char buf[GLOVE_JSON_PATH_MAX], const char *path) {
        struct sink s;
        sink_init(&s, buf, GLOVE_JSON_PATH_MAX);
        sink_put_root(&s, path);
        return sink_finish_for_message(&s);
}

static const char *msg_member(char buf[GLOVE_JSON_PATH_MAX], const char *parent,
                              const char *key, size_t key_len) {
        struct sink s;
        sink_init(&s, buf, GLOVE_JSON_PATH_MAX);
        sink_put_root(&s, parent);
        sink_putc(&s, '.');
        sink_put_escaped(&s, key, key_len);
        return sink_finish_for_message(&s);
}

static size_t object_iter_key_len(void *iter, const char *key) {
#if JANSSON_VERSION_HEX >= 0x020e00
        (void)key;
        return json_object_iter_key_len(iter);
#else
        (void)iter;
        return strlen(key);
#endif
}

static const char *type_name(const json_t *v) {
        if (!v)
                return "nothing";
        switch (json_typeof(v)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a real number";
        case JSON_TRUE: return "true";
        case JSON_FALSE: return "false";
        case JSON_NULL: return "null";
        }
        return "an unknown value";
}

/* ---- UTF-8 and nesting pre-checks ---- */

bool glove_json_utf8_valid(const void *data, size_t len, size_t *bad_offset) {
        const unsigned char *p = data;
        size_t i = 0;
        while (i < len) {
                unsigned char c = p[i];
                if (c < 0x80) {
                        /* ASCII runs, eight bytes at a time */
                        uint64_t w;
                        while (len - i >= sizeof(w) && (memcpy(&w, p + i, sizeof(w)), !(w & 0x8080808080808080ull)))
                                i += sizeof(w);
                        if (i < len && p[i] < 0x80)
                                i++;
                        continue;
                }
                /* RFC 3629 section 4: the second byte's range depends on the
                 * lead byte; that excludes overlongs, surrogates and > U+10FFFF. */
                size_t need;
                unsigned char lo = 0x80, hi = 0xbf;
                if (c >= 0xc2 && c <= 0xdf) {
                        need = 1;
                } else if (c == 0xe0) {
                        need = 2;
                        lo = 0xa0;
                } else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
                        need = 2;
                } else if (c == 0xed) {
                        need = 2;
                        hi = 0x9f;
                } else if (c == 0xf0) {
                        need = 3;
                        lo = 0x90;
                } else if (c >= 0xf1 && c <= 0xf3) {
                        need = 3;
                } else if (c == 0xf4) {
                        need = 3;
                        hi = 0x8f;
                } else {
                        goto bad;
                }
                if (len - i <= need)
                        goto bad;
                if (p[i + 1] < lo || p[i + 1] > hi)
                        goto bad;
                for (size_t k = 2; k <= need; k++)
                        if ((p[i + k] & 0xc0) != 0x80)
                                goto bad;
                i += need + 1;
        }
        return true;
bad:
        if (bad_offset)
                *bad_offset = i;
        return false;
}

/* Counts '[' and '{' outside strings. Returns false, with the offset of the
 * bracket that goes one level too deep, when the limit is exceeded. Only an
 * upper bound for malformed text, which jansson rejects afterwards anyway. */
/* Scans the text once, outside strings: nesting depth against
 * GLOVE_JSON_MAX_DEPTH, and, when max_values > 0, the number of values,
 * bounded above by 1 + the opening brackets + the commas (each comma or
 * opening bracket can start at most one value). Returns 0, or 1 for too deep,
 * 2 for too many values, with *where at the offending byte. */
static int shape_within_limits(const unsigned char *p, size_t len, size_t max_values, size_t *where) {
        size_t depth = 0, values = 1;
        bool in_string = false;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = p[i];
                if (in_string) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                if (c == '"') {
                        in_string = true;
                } else if (c == '[' || c == '{') {
                        if (++depth > GLOVE_JSON_MAX_DEPTH) {
                                *where = i;
                                return 1;
                        }
                        values++;
                } else if ((c == ']' || c == '}') && depth > 0) {
                        depth--;
                } else if (c == ',') {
                        values++;
                } else {
                        continue;
                }
                if (max_values && values > max_values) {
                        *where = i;
                        return 2;
                }
        }
        return 0;
}

/* ---- decoding ---- */

void glove_json_line_column(const void *data, size_t len, size_t offset, size_t *line, size_t *column) {
        const unsigned char *p = data;
        size_t l = 1, c = 1;
        if (offset > len)
                offset = len;
        for (size_t i = 0; i < offset; i++) {
                if (p[i] == '\n') {
                        l++;
                        c = 1;
                } else if ((p[i] & 0xc0) != 0x80) {
                        c++;
                }
        }
        *line = l;
        *column = c;
}

/* "line L, column C" of offset in data, into buf. */
static const char *where_text(char buf[64], const void *data, size_t len, size_t offset) {
        size_t l, c;
        glove_json_line_column(data, len, offset, &l, &c);
        snprintf(buf, 64, "line %zu, column %zu", l, c);
        return buf;
}

/* The first comma outside strings that only whitespace separates from a
 * closing ']' or '}': returns true with *comma and *close at their offsets. */
static bool first_trailing_comma(const unsigned char *p, size_t len, size_t *comma, size_t *close) {
        bool in_string = false;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = p[i];
                if (in_string) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                if (c == '"') {
                        in_string = true;
                        continue;
                }
                if (c != ',')
                        continue;
                size_t k = i + 1;
                while (k < len && (p[k] == ' ' || p[k] == '\t' || p[k] == '\n' || p[k] == '\r'))
                        k++;
                if (k < len && (p[k] == ']' || p[k] == '}')) {
                        *comma = i;
                        *close = k;
                        return true;
                }
        }
        return false;
}

static int map_jansson_error(const json_error_t *je, const void *data, size_t len, struct glove_error *err) {
        char text[GLOVE_JSON_PATH_MAX];
        struct sink s;
        sink_init(&s, text, sizeof(text));
        sink_put_escaped(&s, je->text, strnlen(je->text, sizeof(je->text) - 1));
        sink_finish_for_message(&s);

        int errnum = EINVAL;
        const char *code;
        switch (json_error_code(je)) {
        case json_error_out_of_memory:
                errnum = ENOMEM;
                code = "json.no_memory";
                break;
        case json_error_stack_overflow:
                code = "json.too_deep";
                break;
        case json_error_invalid_utf8:
                code = "json.invalid_utf8";
                break;
        case json_error_null_character:
        case json_error_null_byte_in_key:
                code = "json.embedded_nul";
                break;
        case json_error_duplicate_key:
                code = "json.duplicate_key";
                break;
        case json_error_numeric_overflow:
                code = "json.number_out_of_range";
                break;
        case json_error_end_of_input_expected:
                code = "json.trailing_data";
                break;
        default:
                code = "json.syntax";
                break;
        }
        char where[64];
        /* jansson's position is just past the token it could not take: the
         * token itself is what the reader must look at. */
        size_t at = je->position > 0 ? (size_t)je->position - 1 : 0;
        size_t comma, close;
        if (strcmp(code, "json.syntax") == 0 && first_trailing_comma(data, len, &comma, &close) && close == at)
                return glove_error_set(err, EINVAL, code,
                                       "invalid JSON at %s: a comma before '%c' (JSON allows no trailing comma); "
                                       "remove it",
                                       where_text(where, data, len, comma), ((const char *)data)[close]);
        if (strstr(je->text, "near end of file"))
                return glove_error_set(err, errnum, code, "invalid JSON at %s (the end of the text): %s",
                                       where_text(where, data, len, len), text);
        return glove_error_set(err, errnum, code, "invalid JSON at %s: %s", where_text(where, data, len, at), text);
}

int glove_json_decode_strict(const void *data, size_t len, size_t max_bytes,
                             unsigned flags, json_t **out, struct glove_error *err) {
        *out = NULL;
        if (flags & ~KNOWN_DECODE_FLAGS)
                return glove_error_set(err, EINVAL, "json.invalid_argument",
                                       "unknown JSON decode flags 0x%x", flags);
        if (len > max_bytes)
                return glove_error_set(err, EMSGSIZE, "json.too_large",
                                       "JSON text is %zu bytes, the limit is %zu", len, max_bytes);
        if (len == 0)
                return glove_error_set(err, EINVAL, "json.syntax", "empty JSON text");

        const unsigned char *p = data;
        const unsigned char *nul = memchr(p, 0, len);
        char at[64];
        if (nul)
                return glove_error_set(err, EINVAL, "json.embedded_nul", "NUL byte in JSON text at %s",
                                       where_text(at, p, len, (size_t)(nul - p)));
        size_t where = 0;
        if (!glove_json_utf8_valid(p, len, &where))
                return glove_error_set(err, EINVAL, "json.invalid_utf8", "invalid UTF-8 in JSON text at %s",
                                       where_text(at, p, len, where));
        int shape = shape_within_limits(p, len, (flags & GLOVE_JSON_BOUND_VALUES) ? GLOVE_JSON_MAX_VALUES : 0,
                                        &where);
        if (shape == 1)
                return glove_error_set(err, EINVAL, "json.too_deep",
                                       "JSON nesting deeper than %d at %s",
                                       GLOVE_JSON_MAX_DEPTH, where_text(at, p, len, where));
        if (shape == 2)
                return glove_error_set(err, E2BIG, "json.too_many_values",
                                       "more than %d JSON values (at %s)", GLOVE_JSON_MAX_VALUES,
                                       where_text(at, p, len, where));

        json_error_t je;
        json_t *v = json_loadb(data, len,
                               JSON_REJECT_DUPLICATES | JSON_DECODE_ANY |
                                       ((flags & GLOVE_JSON_ALLOW_NUL_ESCAPE) ? JSON_ALLOW_NUL : 0),
                               &je);
        if (!v)
                return map_jansson_error(&je, data, len, err);
        if ((flags & GLOVE_JSON_OBJECT_ONLY) && !json_is_object(v)) {
                const char *got = type_name(v);
                json_decref(v);
                return glove_error_set(err, EINVAL, "json.not_object",
                                       "$: expected an object, got %s", got);
        }
        *out = v;
        return 0;
}

/* ---- tree checks ---- */

struct walk_frame {
        const char *key; /* NULL for an array element */
        size_t key_len;
        size_t index;
};

struct walk {
        const char *root;
        bool check_nul;
        size_t depth; /* frames in use = containers above the current value */
        struct walk_frame frames[GLOVE_JSON_MAX_DEPTH];
};

static const char *walk_path(const struct walk *w, char buf[GLOVE_JSON_PATH_MAX]) {
        struct sink s;
        sink_init(&s, buf, GLOVE_JSON_PATH_MAX);
        sink_put_root(&s, w->root);
        for (size_t i = 0; i < w->depth; i++) {
                if (w->frames[i].key) {
                        sink_putc(&s, '.');
                        sink_put_escaped(&s, w->frames[i].key, w->frames[i].key_len);
                } else {
                        sink_put_index(&s, w->frames[i].index);
                }
        }
        return sink_finish_for_message(&s);
}

/* Sets err for the value at the walk's current position. Kept out of line so
 * the recursion does not carry a path buffer in every frame. */
static __attribute__((noinline)) int walk_fail(const struct walk *w, const char *code,
                                                const char *what, struct glove_error *err) {
        char path[GLOVE_JSON_PATH_MAX];
        return glove_error_set(err, EINVAL, code, "%s: %s", walk_path(w, path), what);
}

static int walk_value(struct walk *w, const json_t *v, struct glove_error *err);

static int walk_child(struct walk *w, const char *key, size_t key_len, size_t index,
                      const json_t *child, struct glove_error *err) {
        w->frames[w->depth] = (struct walk_frame){ .key = key, .key_len = key_len, .index = index };
        w->depth++;
        int r;
        if (key && w->check_nul && memchr(key, 0, key_len))
                r = walk_fail(w, "json.embedded_nul", "object key contains NUL", err);
        else
                r = walk_value(w, child, err);
        w->depth--;
        return r;
}

static int walk_container(struct walk *w, const json_t *v, struct glove_error *err) {
        if (w->depth + 1 > GLOVE_JSON_MAX_DEPTH)
                return walk_fail(w, "json.too_deep", "nesting deeper than " STRINGIFY(GLOVE_JSON_MAX_DEPTH), err);
        if (json_is_array(v)) {
                for (size_t i = 0; i < json_array_size(v); i++) {
                        int r = walk_child(w, NULL, 0, i, json_array_get(v, i), err);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        json_t *obj = (json_t *)v; /* iteration does not modify the object */
        for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
                const char *key = json_object_iter_key(it);
                int r = walk_child(w, key, object_iter_key_len(it, key), 0,
                                   json_object_iter_value(it), err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int walk_value(struct walk *w, const json_t *v, struct glove_error *err) {
        switch (json_typeof(v)) {
        case JSON_REAL:
                return walk_fail(w, "json.real_not_allowed", "real number not allowed, only integers", err);
        case JSON_STRING:
                if (w->check_nul && memchr(json_string_value(v), 0, json_string_length(v)))
                        return walk_fail(w, "json.embedded_nul", "string contains NUL", err);
                return 0;
        case JSON_ARRAY:
        case JSON_OBJECT:
                return walk_container(w, v, err);
        default:
                return 0;
        }
}

int glove_json_reject_reals(const json_t *v, const char *path, struct glove_error *err) {
        if (!v)
                return glove_error_set(err, EINVAL, "json.invalid_argument", "no JSON value");
        struct walk w = { .root = path };
        return walk_value(&w, v, err);
}

/* ---- canonical form ---- */

/* jansson writes the \u00XX escapes of control characters with upper-case
 * hex; the canonical form has lower case (RFC 8785, section 3.2.2.2; what
 * Python's json.dumps and ECMAScript's JSON.stringify write), so that a
 * controller's encoder and Glove's agree byte for byte. Outside strings
 * there is no backslash; inside, each escape is skipped whole so that an
 * escaped backslash followed by "u" is left alone. */
static void lower_unicode_escapes(char *p, size_t n) {
        for (size_t i = 0; i + 1 < n; i++) {
                if (p[i] != '\\')
                        continue;
                i++;
                if (p[i] != 'u')
                        continue;
                for (size_t k = i + 1; k < n && k <= i + 4; k++)
                        if (p[k] >= 'A' && p[k] <= 'F')
                                p[k] = (char)(p[k] - 'A' + 'a');
                i += 4;
        }
}

int glove_json_encode_canonical(const json_t *v, char **out, size_t *out_len,
                                struct glove_error *err) {
        *out = NULL;
        if (out_len)
                *out_len = 0;
        if (!v)
                return glove_error_set(err, EINVAL, "json.invalid_argument", "no JSON value");
        struct walk w = { .check_nul = true };
        int r = walk_value(&w, v, err);
        if (r < 0)
                return r;

        /* Measure, then dump into our own malloc'd buffer, so the caller can
         * free() it whatever allocator jansson was configured with. */
        size_t n = json_dumpb(v, NULL, 0, CANONICAL_DUMP_FLAGS);
        if (n == 0)
                return glove_error_set(err, EINVAL, "json.encode_failed",
                                       "JSON value cannot be encoded (invalid UTF-8 string?)");
        _cleanup_free_ char *buf = malloc(n + 1);
        if (!buf)
                return glove_error_set(err, ENOMEM, "json.no_memory",
                                       "out of memory encoding %zu bytes of JSON", n);
        if (json_dumpb(v, buf, n, CANONICAL_DUMP_FLAGS) != n)
                return glove_error_set(err, EINVAL, "json.encode_failed",
                                       "JSON value changed size while encoding");
        buf[n] = '\0';
        lower_unicode_escapes(buf, n);
        *out = TAKE_PTR(buf);
        if (out_len)
                *out_len = n;
        return 0;
}

/* Texts up to this many bytes are compared without an allocation. */
#define CANONICAL_COMPARE_STACK 4096

/* Returns 1 when data equals v's canonical encoding, 0 when it differs
 * (first differing offset in *diff), negative on encoding failure. */
static int compare_canonical(const void *data, size_t len, const json_t *v, size_t *diff,
                             struct glove_error *err) {
        /* The common case, text that is canonical: one dump into a buffer
         * of the text's size (jansson returns the size it needs, so a
         * longer encoding is seen without being written whole). */
        if (v && len <= CANONICAL_COMPARE_STACK) {
                struct walk w = { .check_nul = true };
                int r = walk_value(&w, v, err);
                if (r < 0)
                        return r;
                char buf[CANONICAL_COMPARE_STACK];
                size_t n = json_dumpb(v, buf, len, CANONICAL_DUMP_FLAGS);
                if (n == len)
                        lower_unicode_escapes(buf, n);
                if (n == len && memcmp(buf, data, len) == 0) {
                        *diff = len;
                        return 1;
                }
        }
        _cleanup_free_ char *canon = NULL;
        size_t canon_len = 0;
        int r = glove_json_encode_canonical(v, &canon, &canon_len, err);
        if (r < 0)
                return r;
        const unsigned char *a = data, *b = (const unsigned char *)canon;
        size_t n = len < canon_len ? len : canon_len;
        size_t i = 0;
        while (i < n && a[i] == b[i])
                i++;
        *diff = i;
        return i == len && i == canon_len;
}

int glove_json_is_canonical(const void *data, size_t len, size_t max_bytes,
                            unsigned flags, struct glove_error *err) {
        _cleanup_json_ json_t *v = NULL;
        int r = glove_json_decode_strict(data, len, max_bytes, flags, &v, err);
        if (r < 0)
                return r;
        size_t diff;
        return compare_canonical(data, len, v, &diff, err);
}

int glove_json_decode_canonical(const void *data, size_t len, size_t max_bytes,
                                unsigned flags, json_t **out, struct glove_error *err) {
        _cleanup_json_ json_t *v = NULL;
        *out = NULL;
        int r = glove_json_decode_strict(data, len, max_bytes, flags, &v, err);
        if (r < 0)
                return r;
        size_t diff = 0;
        r = compare_canonical(data, len, v, &diff, err);
        if (r < 0)
                return r;
        if (r == 0) {
                char at[64];
                return glove_error_set(err, EINVAL, "json.not_canonical",
                                       "JSON text is not in canonical form (first difference at %s)",
                                       where_text(at, data, len, diff));
        }
        *out = TAKE_PTR(v);
        return 0;
}

/* ---- typed access ---- */

int glove_json_as_string(const json_t *v, const char *path, size_t max_bytes,
                         const char **out, struct glove_error *err) {
        char p[GLOVE_JSON_PATH_MAX];
        if (!json_is_string(v))
                return glove_error_set(err, EINVAL, "json.wrong_type", "%s: expected a string, got %s",
                                       msg_path(p, path), type_name(v));
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n > max_bytes)
                return glove_error_set(err, EINVAL, "json.too_long",
                                       "%s: string is %zu bytes, the limit is %zu",
                                       msg_path(p, path), n, max_bytes);
        if (memchr(s, 0, n))
                return glove_error_set(err, EINVAL, "json.embedded_nul", "%s: string contains NUL",
                                       msg_path(p, path));
        *out = s;
        return 0;
}

int glove_json_as_int(const json_t *v, const char *path, int64_t min, int64_t max,
                      int64_t *out, struct glove_error *err) {
        char p[GLOVE_JSON_PATH_MAX];
        if (json_is_real(v))
                return glove_error_set(err, EINVAL, "json.not_integer",
                                       "%s: expected an integer, got a real number", msg_path(p, path));
        if (!json_is_integer(v))
                return glove_error_set(err, EINVAL, "json.wrong_type", "%s: expected an integer, got %s",
                                       msg_path(p, path), type_name(v));
        int64_t x = (int64_t)json_integer_value(v);
        if (x < min || x > max)
                return glove_error_set(err, EINVAL, "json.out_of_range",
                                       "%s: %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]",
                                       msg_path(p, path), x, min, max);
        *out = x;
        return 0;
}

int glove_json_as_bool(const json_t *v, const char *path, bool *out, struct glove_error *err) {
        char p[GLOVE_JSON_PATH_MAX];
        if (!json_is_boolean(v))
                return glove_error_set(err, EINVAL, "json.wrong_type", "%s: expected true or false, got %s",
                                       msg_path(p, path), type_name(v));
        *out = json_is_true(v);
        return 0;
}

/* Finds the required member key of obj; mpath receives its path. */
static int get_member(const json_t *obj, const char *key, const char *path,
                      char mpath[GLOVE_JSON_PATH_MAX], json_t **child, struct glove_error *err) {
        char p[GLOVE_JSON_PATH_MAX];
        if (!json_is_object(obj))
                return glove_error_set(err, EINVAL, "json.not_object", "%s: expected an object, got %s",
                                       msg_path(p, path), type_name(obj));
        msg_member(mpath, path, key, strlen(key));
        json_t *c = json_object_get(obj, key);
        if (!c)
                return glove_error_set(err, EINVAL, "json.missing_field",
                                       "%s: required field is missing", mpath);
        *child = c;
        return 0;
}

int glove_json_get_string(const json_t *obj, const char *key, const char *path,
                          size_t max_bytes, const char **out, struct glove_error *err) {
        char mpath[GLOVE_JSON_PATH_MAX];
        json_t *c;
        int r = get_member(obj, key, path, mpath, &c, err);
        return r < 0 ? r : glove_json_as_string(c, mpath, max_bytes, out, err);
}

int glove_json_get_int(const json_t *obj, const char *key, const char *path,
                       int64_t min, int64_t max, int64_t *out, struct glove_error *err) {
        char mpath[GLOVE_JSON_PATH_MAX];
        json_t *c;
        int r = get_member(obj, key, path, mpath, &c, err);
        return r < 0 ? r : glove_json_as_int(c, mpath, min, max, out, err);
}

int glove_json_get_bool(const json_t *obj, const char *key, const char *path,
                        bool *out, struct glove_error *err) {
        char mpath[GLOVE_JSON_PATH_MAX];
        json_t *c;
        int r = get_member(obj, key, path, mpath, &c, err);
        return r < 0 ? r : glove_json_as_bool(c, mpath, out, err);
}

int glove_json_get_array(const json_t *obj, const char *key, const char *path,
                         size_t max_items, json_t **out, struct glove_error *err) {
        char mpath[GLOVE_JSON_PATH_MAX];
        json_t *c;
        int r = get_member(obj, key, path, mpath, &c, err);
        if (r < 0)
                return r;
        if (!json_is_array(c))
                return glove_error_set(err, EINVAL, "json.wrong_type", "%s: expected an array, got %s",
                                       mpath, type_name(c));
        if (json_array_size(c) > max_items)
                return glove_error_set(err, EINVAL, "json.too_many_items",
                                       "%s: array has %zu item%s, the limit is %zu",
                                       mpath, json_array_size(c), json_array_size(c) == 1 ? "" : "s", max_items);
        *out = c;
        return 0;
}

int glove_json_get_object(const json_t *obj, const char *key, const char *path,
                          json_t **out, struct glove_error *err) {
        char mpath[GLOVE_JSON_PATH_MAX];
        json_t *c;
        int r = get_member(obj, key, path, mpath, &c, err);
        if (r < 0)
                return r;
        if (!json_is_object(c))
                return glove_error_set(err, EINVAL, "json.wrong_type", "%s: expected an object, got %s",
                                       mpath, type_name(c));
        *out = c;
        return 0;
}

static bool key_allowed(const char *const allowed_keys[], const char *key, size_t key_len) {
        for (size_t i = 0; allowed_keys && allowed_keys[i]; i++)
                if (strlen(allowed_keys[i]) == key_len && memcmp(allowed_keys[i], key, key_len) == 0)
                        return true;
        return false;
}

int glove_json_check_keys(const json_t *obj, const char *const allowed_keys[],
                          const char *path, struct glove_error *err) {
        char p[GLOVE_JSON_PATH_MAX];
        if (!json_is_object(obj))
                return glove_error_set(err, EINVAL, "json.not_object", "%s: expected an object, got %s",
                                       msg_path(p, path), type_name(obj));
        json_t *o = (json_t *)obj; /* iteration does not modify the object */
        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
                const char *key = json_object_iter_key(it);
                size_t key_len = object_iter_key_len(it, key);
                if (!key_allowed(allowed_keys, key, key_len))
                        return glove_error_set(err, EINVAL, "json.unknown_field", "%s: unknown field",
                                               msg_member(p, path, key, key_len));
        }
        return 0;
}

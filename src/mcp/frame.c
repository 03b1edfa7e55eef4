/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/mcp/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"

void glove_mcp_reader_init(struct glove_mcp_reader *r, size_t max_frame) {
        memset(r, 0, sizeof(*r));
        r->max_frame = max_frame;
        /* Room for one maximal line, its "\r\n", and one more read. */
        glove_buffer_init(&r->buf, max_frame + 2 + GLOVE_MCP_READ_CHUNK);
}

void glove_mcp_reader_free(struct glove_mcp_reader *r) {
        glove_buffer_free(&r->buf);
}

/* Drops the lines already handed out, so their space can be reused. */
static void compact(struct glove_mcp_reader *r) {
        if (r->off == 0)
                return;
        glove_buffer_consume(&r->buf, r->off);
        r->scanned = r->scanned > r->off ? r->scanned - r->off : 0;
        r->off = 0;
}

ssize_t glove_mcp_reader_fill(struct glove_mcp_reader *r, int fd) {
        compact(r);
        int rr = glove_buffer_reserve(&r->buf, GLOVE_MCP_READ_CHUNK);
        if (rr < 0)
                return rr;
        ssize_t n;
        do
                n = read(fd, r->buf.data + r->buf.len, GLOVE_MCP_READ_CHUNK);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        if (n == 0) {
                r->eof = true;
                return 0;
        }
        glove_buffer_commit(&r->buf, (size_t)n);
        return n;
}

int glove_mcp_reader_feed(struct glove_mcp_reader *r, const void *data, size_t len) {
        compact(r);
        return glove_buffer_append(&r->buf, data, len);
}

/* ------------------------------------------------------------------ skipping an oversized line */

enum { SCAN_KEY = 1, SCAN_COLON, SCAN_VALUE, SCAN_AFTER };
/* SCAN_K_ESCAPED: a key written with an escape, which could spell "id" or
 * "method": the line is then routed nowhere (never to a wrong call). */
enum { SCAN_K_OTHER = 0, SCAN_K_ID, SCAN_K_METHOD, SCAN_K_ESCAPED };

static bool scan_digit(unsigned char c) {
        return c >= '0' && c <= '9';
}

static void scan_capture(struct glove_mcp_line_scan *s, unsigned char c) {
        if (s->text_len < sizeof(s->text) - 1)
                s->text[s->text_len++] = (char)c;
        else
                s->text_over = true;
}

static void scan_text_start(struct glove_mcp_line_scan *s) {
        s->text_len = 0;
        s->text_over = false;
}

static bool scan_text_is(const struct glove_mcp_line_scan *s, const char *word) {
        return !s->text_over && s->text_len == strlen(word) && memcmp(s->text, word, s->text_len) == 0;
}

/* The digits of an "id" value have ended. */
static void scan_number_done(struct glove_mcp_line_scan *s) {
        s->in_number = false;
        s->text[s->text_len] = '\0';
        const char *t = s->text;
        bool neg = *t == '-';
        t += neg;
        if (s->text_over || !*t || (t[0] == '0' && t[1])) {
                s->id_bad = true;
                return;
        }
        uint64_t v = 0;
        for (; *t; t++) {
                if (!scan_digit((unsigned char)*t) || v > (UINT64_MAX - 9) / 10) {
                        s->id_bad = true;
                        return;
                }
                v = v * 10 + (uint64_t)(*t - '0');
        }
        if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
                s->id_bad = true;
                return;
        }
        s->id = neg ? (int64_t)(0 - v) : (int64_t)v;
        s->id_ok = true;
}

/* One byte of a skipped line: tracks strings, nesting and, at the top level
 * of an object, which key a value belongs to. Only valid JSON is routed
 * right; anything else at worst finds no id. */
static void scan_byte(struct glove_mcp_line_scan *s, unsigned char c) {
        s->last_cr = c == '\r';
        if (s->in_string) {
                if (s->escape)
                        s->escape = false;
                else if (c == '\\') {
                        s->escape = true;
                        s->key_escaped = s->key_escaped || s->capture;
                }
                else if (c == '"') {
                        s->in_string = false;
                        if (s->capture) {
                                s->capture = false;
                                s->key = s->key_escaped            ? SCAN_K_ESCAPED
                                         : scan_text_is(s, "id")     ? SCAN_K_ID
                                         : scan_text_is(s, "method") ? SCAN_K_METHOD
                                                                     : SCAN_K_OTHER;
                                s->key_escaped = false;
                                s->ids += s->key == SCAN_K_ID;
                                s->method = s->method || s->key == SCAN_K_METHOD || s->key == SCAN_K_ESCAPED;
                                s->id_bad = s->id_bad || s->key == SCAN_K_ESCAPED;
                                s->expect = SCAN_COLON;
                        }
                        return;
                }
                if (s->capture)
                        scan_capture(s, c);
                return;
        }
        if (s->in_number) {
                if (scan_digit(c)) {
                        scan_capture(s, c);
                        return;
                }
                if (c == '.' || c == 'e' || c == 'E')
                        s->id_bad = true; /* not an integer */
                scan_number_done(s);
        }
        bool value = s->depth == 1 && s->expect == SCAN_VALUE;
        switch (c) {
        case '"':
                s->in_string = true;
                s->capture = s->depth == 1 && s->expect == SCAN_KEY;
                scan_text_start(s);
                break;
        case '{':
        case '[':
                if (s->depth < UINT32_MAX)
                        s->depth++;
                if (s->depth == 1)
                        s->expect = c == '{' ? SCAN_KEY : SCAN_AFTER;
                break;
        case '}':
        case ']':
                if (s->depth > 0)
                        s->depth--;
                break;
        case ':':
                if (s->depth == 1 && s->expect == SCAN_COLON)
                        s->expect = SCAN_VALUE;
                return;
        case ',':
                if (s->depth == 1)
                        s->expect = SCAN_KEY;
                return;
        case ' ':
        case '\t':
        case '\r':
        case '\n':
                return;
        default:
                if (value && s->key == SCAN_K_ID && (c == '-' || scan_digit(c))) {
                        s->in_number = true;
                        scan_text_start(s);
                        scan_capture(s, c);
                }
                break;
        }
        if (value) {
                s->expect = SCAN_AFTER;
                if (s->key == SCAN_K_ID && !s->in_number)
                        s->id_bad = true; /* a string, an object, a literal: not one of Glove's ids */
        }
}

void glove_mcp_reader_skip_oversized(struct glove_mcp_reader *r) {
        r->skip_oversized = true;
}

const struct glove_mcp_skipped *glove_mcp_reader_skipped(const struct glove_mcp_reader *r) {
        return &r->skipped;
}

static void skip_start(struct glove_mcp_reader *r) {
        memset(&r->scan, 0, sizeof(r->scan));
        memset(&r->skipped, 0, sizeof(r->skipped));
        r->skipping = true;
}

/* Scans and discards what is buffered of the skipped line. Returns
 * -EMSGSIZE when its newline was reached, 0 when more is to come. */
static int skip_more(struct glove_mcp_reader *r) {
        ssize_t nl = glove_buffer_find(&r->buf, '\n', r->off);
        size_t end = nl < 0 ? r->buf.len : (size_t)nl;
        struct glove_mcp_line_scan *s = &r->scan;
        for (size_t i = r->off; i < end; i++)
                scan_byte(s, r->buf.data[i]);
        r->skipped.bytes += end - r->off;
        if (nl < 0) {
                r->off = r->scanned = r->buf.len;
                return 0;
        }
        r->off = r->scanned = end + 1;
        r->skipping = false;
        if (s->in_number)
                scan_number_done(s);
        if (s->last_cr && r->skipped.bytes > 0)
                r->skipped.bytes--;
        r->skipped.has_method = s->method;
        r->skipped.has_int_id = s->ids == 1 && s->id_ok && !s->id_bad;
        r->skipped.id = r->skipped.has_int_id ? s->id : 0;
        return -EMSGSIZE;
}

int glove_mcp_reader_next(struct glove_mcp_reader *r, const char **line, size_t *len) {
        for (;;) {
                if (r->skipping)
                        return skip_more(r);
                size_t from = r->scanned > r->off ? r->scanned : r->off;
                ssize_t nl = glove_buffer_find(&r->buf, '\n', from);
                if (nl < 0) {
                        r->scanned = r->buf.len;
                        /* A pending line may end in "\r" awaiting its "\n". */
                        size_t pending = r->buf.len - r->off;
                        if (pending > 0 && r->buf.data[r->buf.len - 1] == '\r')
                                pending--;
                        if (pending <= r->max_frame)
                                return 0;
                        if (!r->skip_oversized)
                                return -EMSGSIZE;
                        skip_start(r);
                        continue;
                }
                size_t end = (size_t)nl;
                char *start = (char *)r->buf.data + r->off;
                size_t content = end - r->off;
                if (content > 0 && start[content - 1] == '\r')
                        content--;
                if (content > r->max_frame) {
                        if (!r->skip_oversized)
                                return -EMSGSIZE;
                        skip_start(r);
                        continue;
                }
                r->off = end + 1;
                r->scanned = r->off;
                if (content == 0)
                        continue;
                start[content] = '\0';
                *line = start;
                *len = content;
                return 1;
        }
}

static const char *const top_level_keys[] = {"jsonrpc", "id", "method", "params", "result", "error", NULL};

int glove_mcp_message_parse(const char *line, size_t len, size_t max_frame, unsigned flags,
                            struct glove_mcp_message *msg, json_t **id_out, struct glove_error *err) {
        memset(msg, 0, sizeof(*msg));
        if (id_out)
                *id_out = NULL;
        json_t *root = NULL;
        struct glove_error jerr = {0};
        /* "\u0000" inside a string is valid JSON: an argument carrying one is
         * answered by policy (with the request's id), not as a parse error. */
        unsigned jflags = GLOVE_JSON_ALLOW_NUL_ESCAPE |
                          ((flags & GLOVE_MCP_PARSE_BOUND_VALUES) ? (unsigned)GLOVE_JSON_BOUND_VALUES : 0u);
        if (glove_json_decode_strict(line, len, max_frame, jflags, &root, &jerr) < 0)
                return glove_error_set(err, EBADMSG, "mcp.parse", "%s", jerr.message);
        _cleanup_json_ json_t *owned = root;
        if (json_is_array(root))
                return glove_error_set(err, EINVAL, "mcp.batch", "JSON-RPC batches are not accepted");
        if (!json_is_object(root))
                return glove_error_set(err, EINVAL, "mcp.invalid", "a JSON-RPC message must be an object");
        json_t *id = json_object_get(root, "id");
        if (id && (json_is_string(id) || json_is_integer(id)) && id_out)
                *id_out = json_incref(id);
        const char *bad = NULL;
        for (void *it = json_object_iter(root); it && !bad; it = json_object_iter_next(root, it)) {
                const char *k = json_object_iter_key(it);
                bool known = false;
                for (size_t i = 0; top_level_keys[i]; i++)
                        known = known || strcmp(k, top_level_keys[i]) == 0;
                if (!known)
                        bad = k;
        }
        if (bad)
                return glove_error_set(err, EINVAL, "mcp.invalid", "unknown member in a JSON-RPC message");
        json_t *v = json_object_get(root, "jsonrpc");
        /* Counted: "2.0\u0000x" is not "2.0". */
        if (!json_is_string(v) || json_string_length(v) != 3 || memcmp(json_string_value(v), "2.0", 3) != 0)
                return glove_error_set(err, EINVAL, "mcp.invalid", "\"jsonrpc\" must be \"2.0\"");
        if (id && !json_is_string(id) && !json_is_integer(id))
                return glove_error_set(err, EINVAL, "mcp.invalid", "\"id\" must be a string or an integer");
        if (id && json_is_string(id) && strlen(json_string_value(id)) != json_string_length(id))
                return glove_error_set(err, EINVAL, "mcp.invalid", "\"id\" contains NUL");
        json_t *method = json_object_get(root, "method");
        json_t *params = json_object_get(root, "params");
        json_t *result = json_object_get(root, "result");
        json_t *error = json_object_get(root, "error");
        if (method) {
                if (!json_is_string(method) || strlen(json_string_value(method)) != json_string_length(method))
                        return glove_error_set(err, EINVAL, "mcp.invalid", "\"method\" must be a string without NUL");
                if (result || error)
                        return glove_error_set(err, EINVAL, "mcp.invalid", "a request carries no result or error");
                if (params && !json_is_object(params))
                        return glove_error_set(err, EINVAL, "mcp.invalid", "\"params\" must be an object");
                msg->kind = id ? GLOVE_MCP_REQUEST : GLOVE_MCP_NOTIFICATION;
                msg->method = json_string_value(method);
        } else {
                if (!id || params || (!result == !error))
                        return glove_error_set(err, EINVAL, "mcp.invalid",
                                               "a response has an id and exactly one of result and error");
                if (error && !json_is_object(error))
                        return glove_error_set(err, EINVAL, "mcp.invalid", "\"error\" must be an object");
                msg->kind = GLOVE_MCP_RESPONSE;
        }
        msg->root = TAKE_PTR(owned);
        msg->id = id;
        msg->params = params;
        return 0;
}

void glove_mcp_message_free(struct glove_mcp_message *msg) {
        if (msg->root)
                json_decref(msg->root);
        memset(msg, 0, sizeof(*msg));
}

int glove_mcp_encode(const json_t *msg, size_t max_frame, char **out, size_t *len) {
        *out = NULL;
        *len = 0;
        size_t need = json_dumpb(msg, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (need == 0)
                return -EINVAL;
        if (need > max_frame)
                return -EMSGSIZE;
        char *buf = malloc(need + 1);
        if (!buf)
                return -ENOMEM;
        if (json_dumpb(msg, buf, need, JSON_COMPACT | JSON_PRESERVE_ORDER) != need) {
                free(buf);
                return -EINVAL;
        }
        buf[need] = '\n';
        *out = buf;
        *len = need + 1;
        return 0;
}

void glove_mcp_writer_init(struct glove_mcp_writer *w, size_t max_pending) {
        glove_buffer_init(&w->buf, max_pending);
}

void glove_mcp_writer_free(struct glove_mcp_writer *w) {
        glove_buffer_free(&w->buf);
}

int glove_mcp_writer_queue(struct glove_mcp_writer *w, const void *data, size_t len) {
        return glove_buffer_append(&w->buf, data, len);
}

struct queue_ctx {
        struct glove_mcp_writer *w;
        size_t start, max_frame;
        int err;
};

static int queue_chunk(const char *buffer, size_t size, void *data) {
        struct queue_ctx *q = data;
        if (q->w->buf.len - q->start + size > q->max_frame) {
                q->err = -EMSGSIZE;
                return -1;
        }
        int rr = glove_buffer_append(&q->w->buf, buffer, size);
        if (rr < 0) {
                q->err = rr;
                return -1;
        }
        return 0;
}

int glove_mcp_writer_queue_json(struct glove_mcp_writer *w, const json_t *msg, size_t max_frame) {
        /* One pass straight into the room the buffer already has, which is
         * the rule once it has grown to the size of the messages it
         * carries (its storage is kept as it drains): jansson then writes
         * the text in one go instead of handing it over token by token.
         * A message the room cannot hold with its newline is encoded
         * again below, token by token, growing the buffer. */
        size_t room = w->buf.cap - w->buf.len;
        if (room > 1) {
                size_t need = json_dumpb(msg, (char *)w->buf.data + w->buf.len, room - 1, JSON_COMPACT | JSON_PRESERVE_ORDER);
                if (need == 0)
                        return -EINVAL; /* not encodable, or encoded to nothing: not a message */
                if (need > max_frame)
                        return -EMSGSIZE;
                if (need < room) {
                        w->buf.data[w->buf.len + need] = '\n';
                        return glove_buffer_commit(&w->buf, need + 1);
                }
        }
        struct queue_ctx q = {w, w->buf.len, max_frame, 0};
        int rr = json_dump_callback(msg, queue_chunk, &q, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (rr == 0 && w->buf.len == q.start)
                q.err = -EINVAL; /* encoded to nothing: not a message */
        else if (rr < 0 && q.err == 0)
                q.err = -EINVAL;
        if (q.err == 0)
                q.err = glove_buffer_append(&w->buf, "\n", 1);
        if (q.err < 0) {
                w->buf.len = q.start; /* drop what this message queued */
                return q.err;
        }
        return 0;
}

int glove_mcp_writer_queue_pieces(struct glove_mcp_writer *w, const struct glove_mcp_piece *pieces, size_t n) {
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
                if (pieces[i].len > SIZE_MAX - total)
                        return -EMSGSIZE;
                total += pieces[i].len;
        }
        int rr = glove_buffer_reserve(&w->buf, total);
        if (rr < 0)
                return rr;
        size_t off = w->buf.len;
        for (size_t i = 0; i < n; i++) {
                if (pieces[i].len)
                        memcpy(w->buf.data + off, pieces[i].base, pieces[i].len);
                off += pieces[i].len;
        }
        return glove_buffer_commit(&w->buf, total);
}

int glove_mcp_writer_flush(struct glove_mcp_writer *w, int fd) {
        while (w->buf.len > 0) {
                ssize_t n = write(fd, w->buf.data, w->buf.len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
                }
                glove_buffer_consume(&w->buf, (size_t)n);
        }
        return 0;
}

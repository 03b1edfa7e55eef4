/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/mcp/frame.c
/*
 * libFuzzer target: the MCP stdio line reader and message decoder
 * (include/glove/mcp/frame.h), which read the agent's bytes. Built and run
 * by scripts/fuzz.sh; seeds in fuzz/corpus/mcp_frame/ (fuzz/gen_mcp_http_seeds.py).
 *
 * Input: 4 header bytes, then the byte stream as the agent writes it.
 *   h[0..1]  max_frame = 1 + (big-endian u16 % 4096), so oversized lines
 *            are frequent
 *   h[2]     bit 0: parse with GLOVE_MCP_PARSE_BOUND_VALUES; bit 1: read
 *            through a non-blocking pipe with glove_mcp_reader_fill instead
 *            of glove_mcp_reader_feed; bits 2..7 seed the chunk sizes
 *   h[3]     the writer's pending bound, h[3] * 64 bytes
 * The stream is handed to the reader in chunks of 1..GLOVE_MCP_READ_CHUNK
 * bytes (sizes from a generator seeded by the header), and the lines are
 * drained after every chunk, as the run loop does.
 *
 * Invariants besides memory safety and leaks:
 *   - the reader yields exactly the lines of a reference splitter over the
 *     whole stream (split at "\n", one "\r" before it removed, empty lines
 *     skipped), in order, each NUL-terminated and at most max_frame bytes;
 *     -EMSGSIZE comes exactly where the reference finds the first line
 *     (or unterminated tail) longer than max_frame, and nothing else does;
 *   - the reader never holds more than max_frame + 2 + one read, and feeding
 *     or filling one read after draining never fails;
 *   - glove_mcp_reader_fill returns -EAGAIN on an empty pipe, 0 and eof at
 *     its end;
 *   - message_parse fails only with the documented codes and errnos; a
 *     recovered id is a string or an integer; a decoded message has the
 *     documented shape (kind, a method without NUL, an id string or
 *     integer, params an object);
 *   - glove_mcp_encode of a decoded message is one line (no newline but the
 *     last) within max_frame or -EMSGSIZE, decodes back to an equal message
 *     of the same kind, and reads back through a fresh reader unchanged;
 *   - the writer never holds more than its bound, refuses a message that
 *     does not fit whole (-EMSGSIZE, queue unchanged), and what it flushes
 *     to a pipe is exactly what was accepted, in order;
 *   - a reader that skips (glove_mcp_reader_skip_oversized) yields every
 *     line of the reference and -EMSGSIZE once per terminated line longer
 *     than max_frame, in order, within the same memory bound; a skipped
 *     line's bytes are its length, and its scan agrees with the decoder:
 *     when the line decodes (strictly) it has_int_id with an id only if the
 *     object's "id" is that integer, and for a line without a backslash
 *     exactly then; has_method whenever the object has "method", and
 *     without a backslash only then.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/json.h"
#include "glove/mcp/frame.h"

#define CHECK(c) \
        do { \
                if (!(c)) \
                        abort(); \
        } while (0)

struct expect {
        const uint8_t *line; /* in the stream; NULL: the error */
        size_t len;
};

/* The reference splitter: the lines of s[0..n), ending at the first one
 * longer than max_frame (an entry with line NULL). Returns the count. */
static size_t split(const uint8_t *s, size_t n, size_t max_frame, struct expect *out) {
        size_t k = 0, start = 0;
        for (size_t i = 0; i <= n; i++) {
                bool tail = i == n;
                if (!tail && s[i] != '\n')
                        continue;
                size_t len = i - start;
                if (len > 0 && s[start + len - 1] == '\r')
                        len--;
                if (len > max_frame) {
                        out[k++] = (struct expect){ NULL, 0 };
                        return k;
                }
                if (!tail && len > 0)
                        out[k++] = (struct expect){ s + start, len };
                start = i + 1;
        }
        return k;
}

static uint32_t rng_next(uint32_t *x) {
        *x ^= *x << 13;
        *x ^= *x >> 17;
        *x ^= *x << 5;
        return *x;
}

static size_t chunk_size(uint32_t *x) {
        uint32_t v = rng_next(x);
        switch (v & 3) {
        case 0: return 1;
        case 1: return 1 + (v >> 2) % 16;
        case 2: return 1 + (v >> 2) % 512;
        default: return 1 + (v >> 2) % GLOVE_MCP_READ_CHUNK;
        }
}

struct writer_check {
        struct glove_mcp_writer w;
        size_t max;
        int p[2];              /* non-blocking pipe the writer flushes to */
        uint8_t *shadow;       /* accepted bytes not yet read back */
        size_t shadow_len, shadow_cap;
};

/* Reads what the pipe holds and compares it with the front of the shadow. */
static void writer_drain(struct writer_check *c) {
        uint8_t buf[4096];
        for (;;) {
                ssize_t n = read(c->p[0], buf, sizeof(buf));
                if (n < 0) {
                        CHECK(errno == EAGAIN);
                        return;
                }
                CHECK(n > 0);
                CHECK((size_t)n <= c->shadow_len && memcmp(buf, c->shadow, (size_t)n) == 0);
                memmove(c->shadow, c->shadow + n, c->shadow_len - (size_t)n);
                c->shadow_len -= (size_t)n;
        }
}

static void writer_flush(struct writer_check *c) {
        for (;;) {
                int r = glove_mcp_writer_flush(&c->w, c->p[1]);
                CHECK(r == 0 || r == -EAGAIN);
                CHECK(glove_mcp_writer_pending(&c->w) == (r == -EAGAIN));
                writer_drain(c);
                if (r == 0)
                        break;
        }
        CHECK(c->shadow_len == 0);
}

static void writer_queue(struct writer_check *c, const char *data, size_t len) {
        size_t before = c->w.buf.len;
        int r = glove_mcp_writer_queue(&c->w, data, len);
        if (before + len > c->max) {
                CHECK(r == -EMSGSIZE && c->w.buf.len == before);
                /* What a run does next is drop the peer; here: flush and go on. */
                writer_flush(c);
                return;
        }
        CHECK(r == 0 && c->w.buf.len == before + len && c->w.buf.len <= c->max);
        if (c->shadow_len + len > c->shadow_cap) {
                c->shadow_cap = (c->shadow_len + len) * 2;
                c->shadow = realloc(c->shadow, c->shadow_cap);
                CHECK(c->shadow);
        }
        memcpy(c->shadow + c->shadow_len, data, len);
        c->shadow_len += len;
        if (c->w.buf.len > c->max / 2)
                writer_flush(c);
}

static bool valid_id(const json_t *id) {
        return json_is_integer(id) || (json_is_string(id) && strlen(json_string_value(id)) == json_string_length(id));
}

/* Decodes one line and checks what frame.h promises about the result. */
static void check_message(const char *line, size_t len, size_t max_frame, unsigned flags, struct writer_check *wc) {
        struct glove_mcp_message m;
        json_t *rid = NULL;
        struct glove_error e = { 0 };
        int r = glove_mcp_message_parse(line, len, max_frame, flags, &m, &rid, &e);
        if (rid)
                CHECK(json_is_string(rid) || json_is_integer(rid));
        if (r < 0) {
                CHECK(e.code && m.root == NULL);
                if (strcmp(e.code, "mcp.parse") == 0)
                        CHECK(r == -EBADMSG);
                else
                        CHECK((strcmp(e.code, "mcp.batch") == 0 || strcmp(e.code, "mcp.invalid") == 0) &&
                              r == -EINVAL);
                json_decref(rid);
                return;
        }
        CHECK(r == 0 && json_is_object(m.root));
        /* frame.h documents the id reference on error; a caller may get one
         * on success too, and must then drop it. */
        CHECK(!rid || rid == m.id);
        json_decref(rid);
        switch (m.kind) {
        case GLOVE_MCP_REQUEST:
        case GLOVE_MCP_NOTIFICATION:
                CHECK(m.method && (m.kind == GLOVE_MCP_REQUEST) == (m.id != NULL));
                CHECK(strlen(m.method) == json_string_length(json_object_get(m.root, "method")));
                CHECK(!json_object_get(m.root, "result") && !json_object_get(m.root, "error"));
                break;
        case GLOVE_MCP_RESPONSE:
                CHECK(!m.method && m.id && !m.params);
                CHECK(!json_object_get(m.root, "result") != !json_object_get(m.root, "error"));
                break;
        default: abort();
        }
        CHECK(!m.id || valid_id(m.id));
        CHECK(!m.params || json_is_object(m.params));

        char *out = NULL;
        size_t olen = 0;
        int er = glove_mcp_encode(m.root, max_frame, &out, &olen);
        CHECK(er == 0 || er == -EMSGSIZE);
        if (er == 0) {
                CHECK(olen >= 2 && olen - 1 <= max_frame && out[olen - 1] == '\n');
                CHECK(!memchr(out, '\n', olen - 1));
                struct glove_mcp_message back;
                json_t *bid = NULL;
                CHECK(glove_mcp_message_parse(out, olen - 1, max_frame, flags, &back, &bid, NULL) == 0);
                CHECK(back.kind == m.kind && json_equal(back.root, m.root));
                json_decref(bid);
                glove_mcp_message_free(&back);
                CHECK(back.root == NULL);

                struct glove_mcp_reader rr;
                glove_mcp_reader_init(&rr, max_frame);
                const char *l;
                size_t ll;
                CHECK(glove_mcp_reader_feed(&rr, out, olen) == 0);
                CHECK(glove_mcp_reader_next(&rr, &l, &ll) == 1 && ll == olen - 1 && memcmp(l, out, ll) == 0);
                CHECK(glove_mcp_reader_next(&rr, &l, &ll) == 0);
                glove_mcp_reader_free(&rr);

                writer_queue(wc, out, olen);
        }
        free(out);
        glove_mcp_message_free(&m);
        CHECK(m.root == NULL && m.method == NULL && m.id == NULL);
}

/* The skipped line s[0..len) as the decoder sees it, against the scan. */
static void check_skipped(const uint8_t *line, size_t len, const struct glove_mcp_skipped *sk) {
        CHECK(sk->bytes == len);
        json_t *root = NULL;
        if (glove_json_decode_strict(line, len, SIZE_MAX, GLOVE_JSON_ALLOW_NUL_ESCAPE, &root, NULL) < 0)
                return;
        json_t *id = json_is_object(root) ? json_object_get(root, "id") : NULL;
        bool method = json_is_object(root) && json_object_get(root, "method");
        bool int_id = json_is_integer(id);
        if (sk->has_int_id)
                CHECK(int_id && json_integer_value(id) == sk->id);
        if (method)
                CHECK(sk->has_method);
        if (!memchr(line, '\\', len))
                CHECK(sk->has_int_id == int_id && sk->has_method == method);
        json_decref(root);
}

/* Feeds s[0..n) in chunks to a reader that skips oversized lines. */
static void skip_pass(const uint8_t *s, size_t n, size_t max_frame, uint32_t x) {
        struct glove_mcp_reader r;
        glove_mcp_reader_init(&r, max_frame);
        glove_mcp_reader_skip_oversized(&r);
        const size_t bound = max_frame + 2 + GLOVE_MCP_READ_CHUNK;
        size_t start = 0, scan = 0, off = 0; /* reference: the next line starts at start */
        while (off < n) {
                size_t c = chunk_size(&x);
                if (c > n - off)
                        c = n - off;
                CHECK(glove_mcp_reader_feed(&r, s + off, c) == 0);
                off += c;
                CHECK(r.buf.len <= bound);
                for (;;) {
                        const char *line;
                        size_t len;
                        int nr = glove_mcp_reader_next(&r, &line, &len);
                        /* The reference's next line that is whole in s[0..off). */
                        size_t want_len = 0;
                        bool found = false;
                        while (!found) {
                                const uint8_t *nl = scan < off ? memchr(s + scan, '\n', off - scan) : NULL;
                                if (!nl) {
                                        scan = off;
                                        break;
                                }
                                size_t end = (size_t)(nl - s);
                                want_len = end - start;
                                if (want_len > 0 && s[start + want_len - 1] == '\r')
                                        want_len--;
                                if (want_len > 0) {
                                        found = true;
                                        break;
                                }
                                start = scan = end + 1;
                        }
                        if (!found) {
                                CHECK(nr == 0);
                                break;
                        }
                        const uint8_t *want = s + start;
                        start = scan = (size_t)((const uint8_t *)memchr(s + start, '\n', off - start) - s) + 1;
                        if (want_len > max_frame) {
                                CHECK(nr == -EMSGSIZE);
                                check_skipped(want, want_len, glove_mcp_reader_skipped(&r));
                        } else {
                                CHECK(nr == 1 && len == want_len && memcmp(line, want, len) == 0 && line[len] == '\0');
                        }
                }
        }
        glove_mcp_reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 4)
                return 0;
        size_t max_frame = 1 + (((size_t)data[0] << 8 | data[1]) % 4096);
        unsigned flags = (data[2] & 1) ? GLOVE_MCP_PARSE_BOUND_VALUES : 0;
        bool use_fill = data[2] & 2;
        uint32_t x = 0x9e3779b9u ^ ((uint32_t)data[2] << 8 | data[3]) ^ (uint32_t)size;
        const uint8_t *s = data + 4;
        size_t n = size - 4;

        /* At most one entry per newline, plus the error. */
        struct expect *want = calloc(n + 2, sizeof(*want));
        CHECK(want);
        size_t n_want = split(s, n, max_frame, want);

        struct writer_check wc = { .max = (size_t)data[3] * 64 };
        glove_mcp_writer_init(&wc.w, wc.max);
        CHECK(pipe2(wc.p, O_CLOEXEC | O_NONBLOCK) == 0);
        /* A small pipe, so that flushes stop at -EAGAIN now and then. */
        (void)fcntl(wc.p[1], F_SETPIPE_SZ, 4096);

        int rp[2] = { -1, -1 };
        if (use_fill)
                CHECK(pipe2(rp, O_CLOEXEC | O_NONBLOCK) == 0);

        struct glove_mcp_reader r;
        glove_mcp_reader_init(&r, max_frame);
        const size_t bound = max_frame + 2 + GLOVE_MCP_READ_CHUNK;
        size_t got = 0, off = 0;
        bool failed = false;
        while (!failed) {
                bool last = off == n;
                if (!last) {
                        size_t c = chunk_size(&x);
                        if (c > n - off)
                                c = n - off;
                        if (use_fill) {
                                CHECK(write(rp[1], s + off, c) == (ssize_t)c);
                                ssize_t f = glove_mcp_reader_fill(&r, rp[0]);
                                CHECK(f == (ssize_t)c);
                        } else {
                                CHECK(glove_mcp_reader_feed(&r, s + off, c) == 0);
                        }
                        off += c;
                } else if (use_fill) {
                        close(rp[1]);
                        rp[1] = -1;
                        CHECK(glove_mcp_reader_fill(&r, rp[0]) == 0 && r.eof);
                }
                CHECK(r.buf.len <= bound);
                for (;;) {
                        const char *line;
                        size_t len;
                        int nr = glove_mcp_reader_next(&r, &line, &len);
                        if (nr == 0)
                                break;
                        CHECK(got < n_want);
                        if (nr == -EMSGSIZE) {
                                CHECK(want[got].line == NULL);
                                failed = true;
                                break;
                        }
                        CHECK(nr == 1 && want[got].line && len == want[got].len && len <= max_frame);
                        CHECK((const uint8_t *)line >= r.buf.data && (const uint8_t *)line + len < r.buf.data + r.buf.len);
                        CHECK(memcmp(line, want[got].line, len) == 0 && line[len] == '\0');
                        got++;
                        check_message(line, len, max_frame, flags, &wc);
                }
                if (last)
                        break;
                /* Drained: one more read fits, and the empty pipe says so. */
                if (use_fill && !failed)
                        CHECK(glove_mcp_reader_fill(&r, rp[0]) == -EAGAIN && !r.eof);
        }
        /* All lines came, and the error exactly when the reference has one. */
        CHECK(got + failed == n_want);
        skip_pass(s, n, max_frame, x);

        writer_flush(&wc);
        glove_mcp_reader_free(&r);
        CHECK(r.buf.data == NULL);
        glove_mcp_writer_free(&wc.w);
        free(wc.shadow);
        close(wc.p[0]);
        close(wc.p[1]);
        if (rp[0] >= 0)
                close(rp[0]);
        if (rp[1] >= 0)
                close(rp[1]);
        free(want);
        return 0;
}

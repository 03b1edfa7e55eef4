/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/mcp/frame.h"

static void feed(struct glove_mcp_reader *r, const char *s) {
        assert_int_equal(glove_mcp_reader_feed(r, s, strlen(s)), 0);
}

static void expect_line(struct glove_mcp_reader *r, const char *want) {
        const char *line;
        size_t len;
        assert_int_equal(glove_mcp_reader_next(r, &line, &len), 1);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(line, want, len);
}

static void test_split_reads(void **state) {
        (void)state;
        struct glove_mcp_reader r;
        glove_mcp_reader_init(&r, 1024);
        const char *line;
        size_t len;
        feed(&r, "{\"a\":");
        assert_int_equal(glove_mcp_reader_next(&r, &line, &len), 0);
        feed(&r, "1}");
        assert_int_equal(glove_mcp_reader_next(&r, &line, &len), 0);
        feed(&r, "\n{\"b\":2}\r\n\n\n{\"c\"");
        expect_line(&r, "{\"a\":1}");
        expect_line(&r, "{\"b\":2}");
        assert_int_equal(glove_mcp_reader_next(&r, &line, &len), 0);
        feed(&r, ":3}\n");
        expect_line(&r, "{\"c\":3}");
        assert_int_equal(glove_mcp_reader_next(&r, &line, &len), 0);
        glove_mcp_reader_free(&r);
}

static void test_long_line_detected_before_newline(void **state) {
        (void)state;
        struct glove_mcp_reader r;
        glove_mcp_reader_init(&r, 1024);
        char big[1025];
        memset(big, 'x', sizeof(big));
        assert_int_equal(glove_mcp_reader_feed(&r, big, 1024), 0);
        const char *line;
        size_t len;
        assert_int_equal(glove_mcp_reader_next(&r, &line, &len), 0); /* exactly max: still fine */
        assert_int_equal(glove_mcp_reader_feed(&r, big, 1), 0);
        assert_int_equal(glove_mcp_reader_next(&r, &line, &len), -EMSGSIZE);
        glove_mcp_reader_free(&r);
}

static void test_line_of_exactly_max_accepted(void **state) {
        (void)state;
        struct glove_mcp_reader r;
        glove_mcp_reader_init(&r, 8);
        feed(&r, "12345678\r\n123456789\n");
        expect_line(&r, "12345678");
        const char *line;
        size_t len;
        assert_int_equal(glove_mcp_reader_next(&r, &line, &len), -EMSGSIZE);
        glove_mcp_reader_free(&r);
}

static void test_fill_from_pipe_in_pieces(void **state) {
        (void)state;
        int p[2];
        assert_int_equal(pipe2(p, O_NONBLOCK), 0);
        struct glove_mcp_reader r;
        glove_mcp_reader_init(&r, 64);
        assert_int_equal(glove_mcp_reader_fill(&r, p[0]), -EAGAIN);
        assert_int_equal(write(p[1], "{\"x\":1}\n{\"y\"", 12), 12);
        assert_int_equal(glove_mcp_reader_fill(&r, p[0]), 12);
        expect_line(&r, "{\"x\":1}");
        assert_int_equal(write(p[1], ":2}\n", 4), 4);
        close(p[1]);
        assert_int_equal(glove_mcp_reader_fill(&r, p[0]), 4);
        expect_line(&r, "{\"y\":2}");
        assert_int_equal(glove_mcp_reader_fill(&r, p[0]), 0);
        assert_true(r.eof);
        close(p[0]);
        glove_mcp_reader_free(&r);
}

/* Feeds text in pieces of at most `piece` bytes, calling next after each;
 * returns how many times next said -EMSGSIZE, and checks the buffer never
 * grew past max_frame + 2 + one read. */
static int feed_skipping(struct glove_mcp_reader *r, const char *text, size_t n, size_t piece, const char **lines, int *nlines) {
        int oversized = 0;
        for (size_t at = 0; at < n;) {
                size_t k = n - at < piece ? n - at : piece;
                assert_int_equal(glove_mcp_reader_feed(r, text + at, k), 0);
                at += k;
                for (;;) {
                        const char *line;
                        size_t len;
                        int rr = glove_mcp_reader_next(r, &line, &len);
                        if (rr == 0)
                                break;
                        if (rr == -EMSGSIZE) {
                                oversized++;
                                continue;
                        }
                        assert_int_equal(rr, 1);
                        lines[(*nlines)++] = strndup(line, len);
                }
                assert_true(r->buf.len <= r->max_frame + 2 + GLOVE_MCP_READ_CHUNK);
        }
        return oversized;
}

/* A reader that skips: a line over max_frame (far longer than its buffer)
 * is discarded as it comes, reported once with its length, method and
 * integer id (before or after the long member), and the next lines are
 * read as usual. */
static void test_skip_oversized(void **state) {
        (void)state;
        struct {
                const char *head, *tail;
                bool has_method, has_int_id;
                int64_t id;
        } cases[] = {
                {"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"t\":\"", "\"}}", false, true, 42},
                {"{\"result\":{\"id\":7,\"t\":\"\\\"}", "\"},\"jsonrpc\":\"2.0\",\"id\":-9223372036854775808}", false, true, INT64_MIN},
                {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"d\":\"", "\"}}", true, false, 0},
                {"{\"id\":\"s\",\"result\":{\"t\":\"", "\"}}", false, false, 0},
                {"{\"id\":1.5,\"result\":{\"t\":\"", "\"}}", false, false, 0},
                {"{\"id\":1,\"id\":2,\"result\":{\"t\":\"", "\"}}", false, false, 0},
                {"{\"id\":99999999999999999999,\"result\":{\"t\":\"", "\"}}", false, false, 0},
                /* "\u0069d" is "id" once decoded: an escaped key is routed nowhere. */
                {"{\"\\u0069d\":5,\"result\":{\"t\":\"", "\"}}", true, false, 0},
        };
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                struct glove_mcp_reader r;
                glove_mcp_reader_init(&r, 1024);
                glove_mcp_reader_skip_oversized(&r);
                size_t pad = 300000, hl = strlen(cases[c].head), tl = strlen(cases[c].tail);
                const char *after = "\r\n{\"after\":1}\n";
                size_t n = strlen("{\"before\":1}\n") + hl + pad + tl + strlen(after);
                char *text = malloc(n + 1);
                assert_non_null(text);
                char *p = stpcpy(text, "{\"before\":1}\n");
                p = stpcpy(p, cases[c].head);
                memset(p, 'x', pad);
                p += pad;
                p = stpcpy(p, cases[c].tail);
                stpcpy(p, after);
                const char *lines[4];
                int nlines = 0;
                assert_int_equal(feed_skipping(&r, text, n, 4000, lines, &nlines), 1);
                assert_int_equal(nlines, 2);
                assert_string_equal(lines[0], "{\"before\":1}");
                assert_string_equal(lines[1], "{\"after\":1}");
                const struct glove_mcp_skipped *sk = glove_mcp_reader_skipped(&r);
                assert_int_equal(sk->bytes, hl + pad + tl);
                assert_int_equal(sk->has_method, cases[c].has_method);
                if (sk->has_int_id != cases[c].has_int_id)
                        fail_msg("case %zu: has_int_id %d", c, sk->has_int_id);
                if (cases[c].has_int_id)
                        assert_true(sk->id == cases[c].id);
                for (int i = 0; i < nlines; i++)
                        free((void *)lines[i]);
                free(text);
                glove_mcp_reader_free(&r);
        }
}

static int parse(const char *s, struct glove_mcp_message *m, const char **code) {
        struct glove_error err = {0};
        json_t *id = NULL;
        int r = glove_mcp_message_parse(s, strlen(s), 4096, 0, m, &id, &err);
        *code = err.code;
        if (id)
                json_decref(id);
        return r;
}

static void test_message_kinds(void **state) {
        (void)state;
        struct glove_mcp_message m;
        const char *code;
        assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &m, &code), 0);
        assert_int_equal(m.kind, GLOVE_MCP_REQUEST);
        assert_string_equal(m.method, "ping");
        glove_mcp_message_free(&m);
        assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m, &code), 0);
        assert_int_equal(m.kind, GLOVE_MCP_NOTIFICATION);
        assert_null(m.id);
        glove_mcp_message_free(&m);
        assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &m, &code), 0);
        assert_int_equal(m.kind, GLOVE_MCP_RESPONSE);
        glove_mcp_message_free(&m);
        /* A NUL elsewhere (an argument) is kept whole, for policy to judge. */
        assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                               "\"params\":{\"arguments\":{\"p\":\"a\\u0000b\"}}}", &m, &code), 0);
        json_t *p = json_object_get(json_object_get(m.params, "arguments"), "p");
        assert_int_equal(json_string_length(p), 3);
        assert_memory_equal(json_string_value(p), "a\0b", 3);
        glove_mcp_message_free(&m);
}

static void test_message_rejections(void **state) {
        (void)state;
        static const struct {
                const char *text;
                const char *code;
        } cases[] = {
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", "mcp.parse"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\"}", "mcp.parse"},
                {"not json", "mcp.parse"},
                {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", "mcp.batch"},
                {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", "mcp.invalid"},
                {"{\"id\":1,\"method\":\"ping\"}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"extra\":1}", "mcp.invalid"},
                {"42", "mcp.invalid"},
                /* "\u0000" is valid JSON, but never where Glove reads a C
                 * string: "2.0\u0000x" is not "2.0", and a NUL in a string id
                 * or in method is refused rather than cut. */
                {"{\"jsonrpc\":\"2.0\\u0000x\",\"id\":1,\"method\":\"ping\"}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\\u0000\",\"id\":1,\"method\":\"ping\"}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"ping\"}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000x\"}", "mcp.invalid"},
                {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\\u0000\"}", "mcp.invalid"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_mcp_message m;
                const char *code = NULL;
                assert_true(parse(cases[i].text, &m, &code) < 0);
                assert_non_null(code);
                if (strcmp(code, cases[i].code) != 0)
                        fail_msg("case %zu (%s): got %s, want %s", i, cases[i].text, code, cases[i].code);
                assert_null(m.root);
        }
}

static void test_error_recovers_id(void **state) {
        (void)state;
        struct glove_mcp_message m;
        struct glove_error err = {0};
        json_t *id = NULL;
        const char *s = "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":3}";
        assert_true(glove_mcp_message_parse(s, strlen(s), 4096, 0, &m, &id, &err) < 0);
        assert_non_null(id);
        assert_string_equal(json_string_value(id), "abc");
        json_decref(id);
}

static void test_writer_bound(void **state) {
        (void)state;
        struct glove_mcp_writer w;
        glove_mcp_writer_init(&w, 10);
        assert_int_equal(glove_mcp_writer_queue(&w, "12345", 5), 0);
        assert_int_equal(glove_mcp_writer_queue(&w, "123456", 6), -EMSGSIZE);
        assert_int_equal(w.buf.len, 5);
        int p[2];
        assert_int_equal(pipe2(p, O_NONBLOCK), 0);
        assert_int_equal(glove_mcp_writer_flush(&w, p[1]), 0);
        char got[8] = {0};
        assert_int_equal(read(p[0], got, sizeof(got)), 5);
        assert_string_equal(got, "12345");
        close(p[0]);
        assert_int_equal(glove_mcp_writer_queue(&w, "x", 1), 0);
        assert_int_equal(glove_mcp_writer_flush(&w, p[1]), -EPIPE);
        close(p[1]);
        glove_mcp_writer_free(&w);
}

/* glove_mcp_writer_queue_json writes exactly what glove_mcp_encode makes,
 * and queues all of a message or nothing. */
static void test_writer_queue_json(void **state) {
        (void)state;
        const char *texts[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"t\":\"caf\\u00e9 \\u0000 \\n\",\"r\":0.1,\"i\":-12,\"z\":[true,null,{}]}}}",
                "{\"b\":1,\"a\":2}",
                "[]",
        };
        struct glove_mcp_writer w;
        glove_mcp_writer_init(&w, 4096);
        size_t total = 0;
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
                json_t *v = json_loads(texts[i], JSON_ALLOW_NUL, NULL);
                assert_non_null(v);
                char *enc = NULL;
                size_t len = 0;
                assert_int_equal(glove_mcp_encode(v, SIZE_MAX, &enc, &len), 0);
                assert_int_equal(glove_mcp_writer_queue_json(&w, v, SIZE_MAX), 0);
                assert_int_equal(w.buf.len, total + len);
                assert_memory_equal(w.buf.data + total, enc, len);
                total += len;
                /* Over max_frame (without the newline): nothing queued. */
                assert_int_equal(glove_mcp_writer_queue_json(&w, v, len - 2), -EMSGSIZE);
                assert_int_equal(w.buf.len, total);
                assert_int_equal(glove_mcp_writer_queue_json(&w, v, len - 1), 0);
                assert_memory_equal(w.buf.data + total, enc, len);
                total += len;
                free(enc);
                json_decref(v);
        }
        /* A message encoded straight into the buffer's room (it fits with
         * its newline) and one a byte too long for it (encoded again,
         * growing the buffer) are queued alike, all or nothing. */
        json_t *obj = json_loads(texts[1], 0, NULL); /* {"b":1,"a":2}: 13 bytes, 14 with the newline */
        for (size_t spare = 12; spare <= 16; spare++) {
                struct glove_mcp_writer r;
                glove_mcp_writer_init(&r, 4096);
                assert_int_equal(glove_buffer_reserve(&r.buf, 256), 0);
                size_t cap = r.buf.cap;
                r.buf.len = cap - spare; /* spare bytes of room */
                memset(r.buf.data, 'x', r.buf.len);
                assert_int_equal(glove_mcp_writer_queue_json(&r, obj, 12), -EMSGSIZE);
                assert_int_equal(r.buf.len, cap - spare);
                assert_int_equal(glove_mcp_writer_queue_json(&r, obj, 13), 0);
                assert_int_equal(r.buf.len, cap - spare + 14);
                assert_memory_equal(r.buf.data + cap - spare, "{\"b\":1,\"a\":2}\n", 14);
                assert_true(spare >= 14 ? r.buf.cap == cap : r.buf.cap > cap);
                glove_mcp_writer_free(&r);
        }
        /* Not encodable (a bare number is not a message): nothing queued,
         * with room or without. */
        json_t *num = json_integer(1);
        assert_int_equal(glove_mcp_writer_queue_json(&w, num, SIZE_MAX), -EINVAL);
        assert_int_equal(w.buf.len, total);
        struct glove_mcp_writer empty;
        glove_mcp_writer_init(&empty, 4096);
        assert_int_equal(glove_mcp_writer_queue_json(&empty, num, SIZE_MAX), -EINVAL);
        assert_int_equal(empty.buf.len, 0);
        glove_mcp_writer_free(&empty);
        json_decref(num);
        json_decref(obj);
        /* Over the pending bound: nothing queued. */
        struct glove_mcp_writer small;
        glove_mcp_writer_init(&small, 16);
        json_t *v = json_loads(texts[1], 0, NULL);
        assert_int_equal(glove_mcp_writer_queue_json(&small, v, SIZE_MAX), 0); /* 14 bytes */
        assert_int_equal(small.buf.len, 14);
        assert_int_equal(glove_mcp_writer_queue_json(&small, v, SIZE_MAX), -EMSGSIZE);
        assert_int_equal(small.buf.len, 14);
        json_decref(v);
        glove_mcp_writer_free(&small);
        glove_mcp_writer_free(&w);
}

static void test_writer_queue_pieces(void **state) {
        (void)state;
        struct glove_mcp_writer w;
        glove_mcp_writer_init(&w, 12);
        const struct glove_mcp_piece p[] = {{"{\"a\":", 5}, {"", 0}, {"1", 1}, {"}\n", 2}};
        assert_int_equal(glove_mcp_writer_queue_pieces(&w, p, 4), 0);
        assert_int_equal(w.buf.len, 8);
        assert_memory_equal(w.buf.data, "{\"a\":1}\n", 8);
        /* 8 more do not fit in 12: all or nothing. */
        assert_int_equal(glove_mcp_writer_queue_pieces(&w, p, 4), -EMSGSIZE);
        assert_int_equal(w.buf.len, 8);
        glove_mcp_writer_free(&w);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_split_reads),
                cmocka_unit_test(test_long_line_detected_before_newline),
                cmocka_unit_test(test_line_of_exactly_max_accepted),
                cmocka_unit_test(test_fill_from_pipe_in_pieces),
                cmocka_unit_test(test_skip_oversized),
                cmocka_unit_test(test_message_kinds),
                cmocka_unit_test(test_message_rejections),
                cmocka_unit_test(test_error_recovers_id),
                cmocka_unit_test(test_writer_bound),
                cmocka_unit_test(test_writer_queue_json),
                cmocka_unit_test(test_writer_queue_pieces),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The fast path of upstream responses (glove/mcp/response_scan.h): a case
 * per acceptance rule of the tree parser, and a differential test — for
 * every input (hand-written cases, deterministic mutations of them, the
 * fuzz corpora), the scanner accepts only what glove_mcp_message_parse
 * accepts as a response with an integer id, and the message the gateway
 * forwards from the scanned bytes equals the one it builds from the tree. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/json.h"
#include "glove/mcp/frame.h"
#include "glove/mcp/response_scan.h"

#define MAX_FRAME (1024 * 1024)

static size_t fast_accepted, checked;

/* What the gateway sends the agent for a response, id replaced: built from
 * the tree as gw_upstream_response does. */
static json_t *tree_output(const struct glove_mcp_message *m) {
        bool is_error = json_object_get(m->root, "error") != NULL;
        json_t *out = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "id", "agent-id");
        json_object_set(out, is_error ? "error" : "result", json_object_get(m->root, is_error ? "error" : "result"));
        return out;
}

/* The same message built from the scanned bytes, as the fast path does,
 * decoded again. */
static json_t *fast_output(const char *line, const struct glove_mcp_raw_response *r) {
        const char *head = r->is_error ? "{\"jsonrpc\":\"2.0\",\"id\":\"agent-id\",\"error\":"
                                        : "{\"jsonrpc\":\"2.0\",\"id\":\"agent-id\",\"result\":";
        size_t hl = strlen(head), n = hl + r->value_len + 1;
        char *buf = malloc(n);
        assert_non_null(buf);
        memcpy(buf, head, hl);
        memcpy(buf + hl, line + r->value_off, r->value_len);
        buf[n - 1] = '}';
        struct glove_mcp_message m;
        /* It must itself be a message the tree parser accepts. */
        int rc = glove_mcp_message_parse(buf, n, SIZE_MAX, 0, &m, NULL, NULL);
        free(buf);
        assert_int_equal(rc, 0);
        assert_int_equal(m.kind, GLOVE_MCP_RESPONSE);
        json_t *root = json_incref(m.root);
        glove_mcp_message_free(&m);
        return root;
}

/* The differential property for one line; returns the scanner's answer. */
static int differential(const char *line, size_t len) {
        struct glove_mcp_raw_response r;
        int fast = glove_mcp_response_scan(line, len, MAX_FRAME, &r);
        assert_true(fast == 0 || fast == 1);
        checked++;
        if (!fast)
                return 0;
        fast_accepted++;
        struct glove_mcp_message m;
        int rc = glove_mcp_message_parse(line, len, MAX_FRAME, 0, &m, NULL, NULL);
        if (rc != 0)
                fail_msg("the scanner accepted a line the tree parser refuses: %.*s", (int)(len > 200 ? 200 : len), line);
        assert_int_equal(m.kind, GLOVE_MCP_RESPONSE);
        assert_true(json_is_integer(m.id));
        assert_int_equal(json_integer_value(m.id), r.id);
        assert_int_equal(r.is_error, json_object_get(m.root, "error") != NULL);
        assert_true(r.value_off + r.value_len <= len);
        json_t *want = tree_output(&m), *got = fast_output(line, &r);
        assert_true(json_equal(want, got));
        json_decref(want);
        json_decref(got);
        glove_mcp_message_free(&m);
        return 1;
}

static int diff_str(const char *s) {
        return differential(s, strlen(s));
}

/* The tree parser refuses s, and so the scanner must leave it. */
static void refused(const char *s, size_t len) {
        struct glove_mcp_message m;
        assert_int_not_equal(glove_mcp_message_parse(s, len, MAX_FRAME, 0, &m, NULL, NULL), 0);
        assert_int_equal(differential(s, len), 0);
}

static void refused_str(const char *s) {
        refused(s, strlen(s));
}

/* The tree parser accepts s, but the scanner leaves it to it. */
static void left_to_tree(const char *s) {
        struct glove_mcp_message m;
        assert_int_equal(glove_mcp_message_parse(s, strlen(s), MAX_FRAME, 0, &m, NULL, NULL), 0);
        glove_mcp_message_free(&m);
        assert_int_equal(diff_str(s), 0);
}

static const char *const seeds[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: bench\"}]}}",
        "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: a\\nb \\\"q\\\" \\u00e9 \\ud83d\\ude00 \\u0000\"}],"
        "\"isError\":false},\"jsonrpc\":\"2.0\",\"id\":12}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,\"message\":\"unknown tool\",\"data\":null}}",
        " { \"jsonrpc\" : \"2.0\" , \"id\" : -0 , \"result\" : { } } \t",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":[1,-2,0.5,-1.25e-3,1E+2,0,true,false,null,\"x\",[],{}],"
        "\"structuredContent\":{\"a\":{\"b\":{\"c\":[{\"d\":1}]}}}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":999999999999999999,\"result\":\"a string result\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"a\":1,\"b\":{\"a\":1},\"c\":[{\"a\":1},{\"a\":2}]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"t\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"r\":1.7976931348623157e300,\"s\":5e-300,\"z\":0e999999}}",
};

static void test_accepts_ordinary_responses(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
                if (diff_str(seeds[i]) != 1)
                        fail_msg("seed %zu is not taken by the fast path: %s", i, seeds[i]);
        struct glove_mcp_raw_response r;
        const char *s = seeds[2];
        assert_int_equal(glove_mcp_response_scan(s, strlen(s), MAX_FRAME, &r), 1);
        assert_int_equal(r.id, 3);
        assert_true(r.is_error);
        assert_int_equal(r.value_len, strlen("{\"code\":-32602,\"message\":\"unknown tool\",\"data\":null}"));
        assert_memory_equal(s + r.value_off, "{\"code\"", 7);
        s = seeds[3];
        assert_int_equal(glove_mcp_response_scan(s, strlen(s), MAX_FRAME, &r), 1);
        assert_int_equal(r.id, 0);
        assert_false(r.is_error);
        assert_int_equal(r.value_len, 3); /* "{ }", without the blanks around it */
}

/* One case per rule of glove_mcp_message_parse (and glove_json_decode_strict
 * beneath it) that a response could break. */
static void test_refuses_what_the_tree_refuses(void **state) {
        (void)state;
        /* not JSON, or not all of it */
        refused_str("");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}} x");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[1,]}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\" 1}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{'a':1}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":tru}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":truex}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":NaN}");
        /* numbers */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":01}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1.}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":.5}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":-}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1e}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":+1}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":99999999999999999999}");   /* too big integer */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":-9223372036854775809}");   /* too big negative */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1e400}");                 /* real overflow */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":-1.5e309}");
        /* strings */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\tb\"}");              /* raw control character */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\\x41\"}");             /* unknown escape */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\\u12\"}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\\ud800\"}");           /* lone high surrogate */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\\udc00\"}");           /* lone low surrogate */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\\ud800\\u0041\"}");    /* bad pair */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"abc}");
        /* bytes */
        refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\0b\"}", 37);              /* raw NUL */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xc3\x28\"}");          /* invalid UTF-8 */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xc0\xaf\"}");          /* overlong */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xed\xa0\x80\"}");      /* encoded surrogate */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xf4\x90\x80\x80\"}");  /* above U+10FFFF */
        /* duplicate keys, at the top and deeper */
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1,\"b\":2,\"a\":3}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":[{\"k\":{},\"k\":[]}]}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1,\"\\u0061\":2}}"); /* the same key, escaped */
        /* JSON-RPC */
        refused_str("[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]");                   /* a batch */
        refused_str("\"jsonrpc\"");
        refused_str("{\"id\":1,\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.1\",\"id\":1,\"result\":{}}");
        refused_str("{\"jsonrpc\":2.0,\"id\":1,\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\\u0000\",\"id\":1,\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":true,\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000\",\"result\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":[]}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"params\":{}}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"extra\":1}");
        refused_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"result\":{}}");
}

/* Nesting: GLOVE_JSON_MAX_DEPTH brackets are fine for both, one more for
 * neither. */
static void test_depth_bound(void **state) {
        (void)state;
        for (int extra = 0; extra <= 1; extra++) {
                int inner = GLOVE_JSON_MAX_DEPTH - 1 + extra; /* the top-level object is one */
                char buf[512];
                size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":");
                for (int i = 0; i < inner; i++)
                        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", i % 2 ? "{\"k\":" : "[");
                buf[n++] = '0';
                for (int i = inner - 1; i >= 0; i--)
                        buf[n++] = i % 2 ? '}' : ']';
                buf[n++] = '}';
                buf[n] = '\0';
                if (extra)
                        refused(buf, n);
                else
                        assert_int_equal(differential(buf, n), 1);
        }
}

/* Valid responses the scanner does not decide: the tree parser takes them
 * as before. */
static void test_leaves_the_rest_to_the_tree(void **state) {
        (void)state;
        left_to_tree("{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":{}}");                 /* a string id */
        left_to_tree("{\"\\u006asonrpc\":\"2.0\",\"id\":1,\"result\":{}}");                 /* an escaped key */
        left_to_tree("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"\\n\":1}}");
        left_to_tree("{\"jsonrpc\":\"2\\u002e0\",\"id\":1,\"result\":{}}");
        left_to_tree("{\"jsonrpc\":\"2.0\",\"id\":1234567890123456789,\"result\":{}}");     /* 19 digits */
        left_to_tree("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1e301}");
        left_to_tree("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1e-301}");
        left_to_tree("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");                  /* a request */
        left_to_tree("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}");
        char big[2048];
        size_t n = (size_t)snprintf(big, sizeof(big), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{");
        for (int i = 0; i <= GLOVE_MCP_SCAN_OBJECT_KEYS_MAX; i++)
                n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"k%d\":%d", i ? "," : "", i, i);
        snprintf(big + n, sizeof(big) - n, "}}");
        left_to_tree(big);
}

/* Deterministic mutations of every seed: each byte replaced by each of a
 * set of bytes that matter to JSON, deleted, or doubled. */
static void test_differential_mutations(void **state) {
        (void)state;
        static const char subst[] = "{}[]\",:\\ 0-1e.E+tnu\x01\x80\xc3\xff";
        char buf[1024];
        size_t before = checked;
        for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
                const char *seed = seeds[s];
                size_t n = strlen(seed);
                assert_true(n + 1 < sizeof(buf));
                for (size_t i = 0; i < n; i++) {
                        for (size_t k = 0; k < sizeof(subst) - 1; k++) {
                                memcpy(buf, seed, n);
                                buf[i] = subst[k];
                                differential(buf, n);
                        }
                        memcpy(buf, seed, i);
                        memcpy(buf + i, seed + i + 1, n - i - 1);
                        differential(buf, n - 1);
                        memcpy(buf, seed, i + 1);
                        memcpy(buf + i + 1, seed + i, n - i);
                        differential(buf, n + 1);
                }
        }
        assert_true(checked - before > 10000);
}

/* Every line of every file of the fuzz corpora. */
static void corpus_dir(const char *dir) {
        DIR *d = opendir(dir);
        if (!d)
                fail_msg("cannot open the corpus %s: %s", dir, strerror(errno));
        struct dirent *e;
        size_t files = 0;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                FILE *f = fopen(path, "rb");
                if (!f)
                        continue;
                static char data[8 * 1024 * 1024];
                size_t n = fread(data, 1, sizeof(data), f);
                fclose(f);
                files++;
                size_t start = 0;
                for (size_t i = 0; i <= n; i++)
                        if (i == n || data[i] == '\n') {
                                size_t len = i - start;
                                if (len > 0 && data[start + len - 1] == '\r')
                                        len--;
                                if (len <= MAX_FRAME)
                                        differential(data + start, len);
                                start = i + 1;
                        }
                differential(data, n < MAX_FRAME ? n : MAX_FRAME);
        }
        closedir(d);
        assert_true(files > 0);
}

static void test_differential_corpus(void **state) {
        (void)state;
        corpus_dir(FUZZ_CORPUS "/mcp_response_scan");
        corpus_dir(FUZZ_CORPUS "/mcp_frame");
}

static void test_fast_path_taken(void **state) {
        (void)state;
        /* The property above would hold for a scanner that takes nothing. */
        assert_true(fast_accepted > 100);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accepts_ordinary_responses),
                cmocka_unit_test(test_refuses_what_the_tree_refuses),
                cmocka_unit_test(test_depth_bound),
                cmocka_unit_test(test_leaves_the_rest_to_the_tree),
                cmocka_unit_test(test_differential_mutations),
                cmocka_unit_test(test_differential_corpus),
                cmocka_unit_test(test_fast_path_taken),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

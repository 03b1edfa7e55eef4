/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the endpoint's HTTP request head (glove/mcp/http_request.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/mcp/http_request.h"

/* Parses text (a complete head) from an allocation of exactly its size. */
static int parse(const char *text, struct glove_mcp_http_request *req, const char **reason) {
        size_t n = strlen(text);
        char *copy = malloc(n);
        memcpy(copy, text, n);
        int st = glove_mcp_http_request_parse(copy, n, req, reason);
        /* The spans point into copy: check them before freeing. */
        static char host[256];
        host[0] = '\0';
        if (st == 0 && req->host.s && req->host.n < sizeof(host)) {
                memcpy(host, req->host.s, req->host.n);
                host[req->host.n] = '\0';
                req->host.s = host;
        }
        free(copy);
        return st;
}

static void test_post(void **state) {
        (void)state;
        struct glove_mcp_http_request q;
        const char *reason;
        assert_int_equal(parse("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nContent-Length: 12\r\n"
                               "Accept: application/json, text/event-stream\r\n\r\n",
                               &q, &reason),
                         0);
        assert_int_equal(q.method, GLOVE_MCP_HTTP_POST);
        assert_int_equal(q.minor, 1);
        assert_true(q.has_content_length);
        assert_int_equal(q.content_length, 12);
        assert_true(glove_mcp_http_span_eq(q.host, "127.0.0.1:8931"));
        assert_null(q.mcp_method.s);
        assert_null(q.mcp_name.s);
}

/* MCP 2026-07-28's standard headers are kept (trimmed); Mcp-Param-* are
 * not, and any number of them is accepted. */
static void test_modern_fields(void **state) {
        (void)state;
        struct glove_mcp_http_request q;
        const char *reason;
        static const char head[] = "POST /mcp HTTP/1.1\r\nHost: h\r\nmcp-method:  tools/call \r\nMcp-Name: =?base64?eA==?=\r\n"
                                   "Mcp-Param-Region: eu\r\nMcp-Param-Other: 1\r\n\r\n";
        assert_int_equal(glove_mcp_http_request_parse(head, strlen(head), &q, &reason), 0);
        assert_int_equal(q.mcp_method.n, strlen("tools/call"));
        assert_memory_equal(q.mcp_method.s, "tools/call", q.mcp_method.n);
        assert_int_equal(q.mcp_name.n, strlen("=?base64?eA==?="));
        assert_memory_equal(q.mcp_name.s, "=?base64?eA==?=", q.mcp_name.n);
}

static void test_refusals(void **state) {
        (void)state;
        struct glove_mcp_http_request q;
        const char *reason;
        static const struct {
                const char *head;
                int status;
                const char *reason;
        } cases[] = {
                {"GARBAGE\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST  /mcp HTTP/1.1\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST mcp HTTP/1.1\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST http://x/mcp HTTP/1.1\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/2.0\r\n\r\n", 505, "endpoint.http_version"},
                {"POST /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\n folded\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nMcp-Session-Id: a\r\nmcp-session-id: b\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nMcp-Method: a\r\nmcp-method: a\r\n\r\n", 400, "endpoint.http_bad_head"},
                {"POST /mcp HTTP/1.1\r\nMcp-Name: a\r\nMCP-NAME: b\r\n\r\n", 400, "endpoint.http_bad_head"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int st = parse(cases[i].head, &q, &reason);
                if (st != cases[i].status)
                        fail_msg("case %zu (%s): status %d", i, cases[i].head, st);
                assert_string_equal(reason, cases[i].reason);
        }
        /* More fields than the bound. */
        char big[8192] = "POST /mcp HTTP/1.1\r\n";
        for (int i = 0; i <= GLOVE_MCP_HTTP_FIELDS_MAX; i++)
                strcat(big, "X-A: b\r\n");
        strcat(big, "\r\n");
        assert_int_equal(parse(big, &q, &reason), 431);
        assert_string_equal(reason, "endpoint.http_head_too_large");
}

static void test_head_end(void **state) {
        (void)state;
        bool bare;
        const char *h = "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\nBODY";
        assert_int_equal(glove_mcp_http_head_end(h, strlen(h), &bare), strlen(h) - 4);
        assert_false(bare);
        h = "GET /mcp HTTP/1.1\r\nHost: x\r\n";
        assert_int_equal(glove_mcp_http_head_end(h, strlen(h), &bare), 0);
        h = "GET /mcp HTTP/1.1\nHost: x\r\n\r\n";
        assert_int_equal(glove_mcp_http_head_end(h, strlen(h), &bare), 0);
        assert_true(bare);
}

static void test_lists(void **state) {
        (void)state;
        struct glove_mcp_http_span a = {"application/json;q=0.9, text/event-stream", 41};
        assert_true(glove_mcp_http_list_has(a, "text/event-stream", true));
        assert_true(glove_mcp_http_list_has(a, "application/json", true));
        struct glove_mcp_http_span b = {"application/json;q=0", 20};
        assert_false(glove_mcp_http_list_has(b, "application/json", true));
        struct glove_mcp_http_span c = {"*/*", 3};
        assert_true(glove_mcp_http_list_has(c, "text/event-stream", true));
        assert_false(glove_mcp_http_list_has(c, "text/event-stream", false));
        struct glove_mcp_http_span d = {"keep-alive, Close", 17};
        assert_true(glove_mcp_http_list_has(d, "close", false));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_post),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_modern_fields),
                cmocka_unit_test(test_head_end),
                cmocka_unit_test(test_lists),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

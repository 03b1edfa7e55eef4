/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the proxy's request-head parser and answers
 * (src/net/internal.h; exercised end to end in test_relay.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

/* base64("glove:secret") */
#define CRED "Z2xvdmU6c2VjcmV0"
#define AUTH "Proxy-Authorization: Basic " CRED "\r\n"

static void test_head_end(void **state) {
        (void)state;
        assert_int_equal(glove_net_head_end("", 0), 0);
        assert_int_equal(glove_net_head_end("CONNECT a:1 HTTP/1.1\r\n", 22), 0);
        assert_int_equal(glove_net_head_end("CONNECT a:1 HTTP/1.1\r\n\r\nXYZ", 27), 24);
        assert_int_equal(glove_net_head_end("A\n\nB\r\n\r\n", 8), 8);
}

struct row {
        const char *head;
        enum glove_net_egress_reason reason;
        int status;
        const char *host;
        uint16_t port;
};

static const struct row rows[] = {
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_OK, 200, "example.com", 443 },
        { "CONNECT Example.COM:8443 HTTP/1.1\r\nHost: example.com:8443\r\nUser-Agent: x/1\r\n"
          "proxy-authorization:   basic   " CRED "  \r\n\r\n", GLOVE_NET_EGRESS_OK, 200, "example.com", 8443 },
        { "CONNECT [::1]:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_OK, 200, "::1", 443 },
        /* Credentials. */
        { "CONNECT example.com:443 HTTP/1.1\r\n\r\n", GLOVE_NET_EGRESS_BAD_AUTH, 407, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic Z2xvdmU6c2VjcmV1\r\n\r\n",
          GLOVE_NET_EGRESS_BAD_AUTH, 407, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic " CRED "x\r\n\r\n",
          GLOVE_NET_EGRESS_BAD_AUTH, 407, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: Bearer " CRED "\r\n\r\n",
          GLOVE_NET_EGRESS_BAD_AUTH, 407, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: " CRED "\r\n\r\n",
          GLOVE_NET_EGRESS_BAD_AUTH, 407, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH AUTH "\r\n", GLOVE_NET_EGRESS_BAD_AUTH, 407, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\nAuthorization: Basic " CRED "\r\n\r\n",
          GLOVE_NET_EGRESS_BAD_AUTH, 407, NULL, 0 },
        /* Method and version. */
        { "connect example.com:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, 405,
          "example.com", 443 },
        { "GET example.com:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, 405, "example.com", 443 },
        /* Origin form is no proxy request: 405, named by its Host header. */
        { "GET /x HTTP/1.1\r\nHost: Example.com:8080\r\n\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, 405,
          "example.com", 8080 },
        { "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, 405, "example.com", 80 },
        /* Plain-HTTP forwarding: absolute form, port 80 by default. */
        { "GET http://example.com/ HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_OK, 200, "example.com", 80 },
        { "GET HTTP://Example.com:8080/a?b HTTP/1.1\r\nHost: example.COM:8080\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_OK, 200,
          "example.com", 8080 },
        { "POST http://127.0.0.1:11434 HTTP/1.1\r\nHost: 127.0.0.1:11434\r\nContent-Length: 3\r\n" AUTH "\r\n",
          GLOVE_NET_EGRESS_OK, 200, "127.0.0.1", 11434 },
        { "GET http://example.com:80/ HTTP/1.1\r\nHost: example.com\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_OK, 200,
          "example.com", 80 },
        { "POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\n\r\n", GLOVE_NET_EGRESS_BAD_AUTH, 407,
          "example.com", 80 },
        { "GET http://example.com/ HTTP/1.1\r\nHost: other.example\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_HOST_MISMATCH,
          400, "example.com", 80 },
        { "GET http://example.com/ HTTP/1.1\r\nHost: example.com:8080\r\n" AUTH "\r\n",
          GLOVE_NET_EGRESS_HOST_MISMATCH, 400, "example.com", 80 },
        { "GET http://example.com/ HTTP/1.1\r\nHost: bad host\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_HOST_MISMATCH,
          400, "example.com", 80 },
        { "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nHost: example.com\r\n" AUTH "\r\n",
          GLOVE_NET_EGRESS_BAD_REQUEST, 400, "example.com", 80 },
        { "GET http://user@example.com/ HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "GET https://example.com/ HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT, 400,
          "example.com", 443 },
        { "GET ftp://example.com/ HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, 405, NULL, 0 },
        { "GET http://example.com/ HTTP/1.0\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 505, "example.com", 80 },
        { "CONNECT example.com:443 HTTP/1.0\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 505, NULL, 0 },
        { "CONNECT example.com:443 HTTP/2.0\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 505, NULL, 0 },
        /* Syntax. */
        { "\r\n\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT  example.com:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1 \r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH " folded\r\n\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH "No-Colon\r\n\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH "Bad Name: x\r\n\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH ": empty\r\n\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH "X: a\x01" "b\r\n\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:443 HTTP/1.1\r\n" AUTH "X: a\rb\r\n\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        /* Targets (checked after the credentials). */
        { "CONNECT example.com HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT /index.html HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT http://example.com:443/ HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT user@example.com:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT 2130706433:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT example.com:99999 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
        { "CONNECT b\xc3\xbc" "cher.de:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_BAD_REQUEST, 400, NULL, 0 },
};

static void test_parse_table(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const struct row *row = &rows[i];
                struct glove_net_request_head h;
                int status = -1;
                size_t len = strlen(row->head);
                enum glove_net_egress_reason got = glove_net_head_parse(row->head, len, CRED, &h, &status);
                if (got != row->reason || status != row->status)
                        fail_msg("row %zu: want %s/%d, got %s/%d", i, glove_net_egress_reason_name(row->reason),
                                 row->status, glove_net_egress_reason_name(got), status);
                if (row->reason == GLOVE_NET_EGRESS_BAD_AUTH && !row->host) {
                        /* The refusal can still name the target. */
                        assert_true(h.target_ok);
                        assert_string_equal(h.host.text, "example.com");
                }
                if (row->host) {
                        assert_true(h.target_ok);
                        assert_string_equal(h.host.text, row->host);
                        assert_int_equal(h.port, row->port);
                }
        }
}

/* The method and target are known on every refusal after the request line. */
static void test_refusals_name_the_request(void **state) {
        (void)state;
        struct glove_net_request_head h;
        int status;
        const char *head = "DELETE example.com:8443 HTTP/1.1\r\n\r\n";
        assert_int_equal(glove_net_head_parse(head, strlen(head), CRED, &h, &status), GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED);
        assert_string_equal(h.method, "DELETE");
        assert_true(h.target_ok);
        assert_int_equal(h.port, 8443);
        head = "CONNECT example.com:443 HTTP/1.1\r\nBad Name: x\r\n\r\n";
        assert_int_equal(glove_net_head_parse(head, strlen(head), CRED, &h, &status), GLOVE_NET_EGRESS_BAD_REQUEST);
        assert_string_equal(h.method, "CONNECT");
        assert_true(h.target_ok);
        head = "CONNECT  example.com:443 HTTP/1.1\r\n\r\n";
        assert_int_equal(glove_net_head_parse(head, strlen(head), CRED, &h, &status), GLOVE_NET_EGRESS_BAD_REQUEST);
        assert_string_equal(h.method, "");
        assert_false(h.target_ok);
}

static void test_bare_lf(void **state) {
        (void)state;
        assert_false(glove_net_head_bare_lf("", 0));
        assert_false(glove_net_head_bare_lf("GET / HTTP/1.1\r\nHost: a\r\n", 25));
        assert_false(glove_net_head_bare_lf("GET / HTTP/1.1\r", 15)); /* LF still to come */
        assert_true(glove_net_head_bare_lf("\n", 1));
        assert_true(glove_net_head_bare_lf("GET / HTTP/1.1\n", 15));
        assert_true(glove_net_head_bare_lf("GET / HTTP/1.1\r\nHost: a\n", 24));
}

/* Forwarding: origin form, hop-by-hop fields and credentials removed, Host
 * added when missing, Connection: close. */
static void test_forward_head(void **state) {
        (void)state;
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\n" AUTH
                  "User-Agent: t/1\r\nProxy-Connection: keep-alive\r\nproxy-x: 1\r\n\r\n",
                  "GET /a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: t/1\r\nConnection: close\r\n\r\n" },
                { "GET http://Example.com HTTP/1.1\r\n" AUTH "\r\n",
                  "GET / HTTP/1.1\r\nHost: Example.com\r\nConnection: close\r\n\r\n" },
                { "GET http://example.com?q HTTP/1.1\r\n" AUTH "\r\n",
                  "GET /?q HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n" },
                { "POST http://h.example/v1 HTTP/1.1\r\nhost: h.example\r\nConnection: keep-alive, X-Hop\r\n"
                  "X-Hop: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\nContent-Length: 2\r\n"
                  "proxy-authorization: Basic " CRED "\r\n\r\n",
                  "POST /v1 HTTP/1.1\r\nhost: h.example\r\nContent-Length: 2\r\nConnection: close\r\n\r\n" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_net_request_head h;
                int status;
                size_t len = strlen(cases[i].in);
                if (glove_net_head_parse(cases[i].in, len, CRED, &h, &status) != GLOVE_NET_EGRESS_OK)
                        fail_msg("case %zu does not parse", i);
                assert_int_equal(h.form, GLOVE_NET_TARGET_HTTP);
                char out[GLOVE_NET_HEAD_MAX + GLOVE_NET_FORWARD_EXTRA];
                size_t n = glove_net_forward_head(cases[i].in, len, &h, out, sizeof(out));
                assert_int_not_equal(n, 0);
                out[n] = '\0';
                assert_string_equal(out, cases[i].out);
                assert_null(strstr(out, CRED));
                assert_int_equal(glove_net_forward_head(cases[i].in, len, &h, out, 10), 0); /* too small */
        }
}

/* The answer of a forwarded request tells the agent its connection closes. */
static void test_response_close(void **state) {
        (void)state;
        static const struct {
                const char *in, *out; /* out NULL: passed unchanged (0) */
        } cases[] = {
                { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n",
                  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n" },
                { "HTTP/1.0 404 File not found\r\nServer: x\r\n\r\n",
                  "HTTP/1.0 404 File not found\r\nServer: x\r\nConnection: close\r\n\r\n" },
                { "HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n" },
                { "HTTP/1.1 100 Continue\r\n\r\n", NULL },
                { "HTTP/2 200 OK\r\n\r\n", NULL },
                { "POST /v1 HTTP/1.1\r\nHost: a\r\n\r\n", NULL },
                { "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", NULL },
                { "HTTP/1.1 200 OK\nX: y\r\n\r\n", NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char out[512];
                size_t len = strlen(cases[i].in);
                size_t n = glove_net_response_close(cases[i].in, len, out, len + 32);
                if (!cases[i].out) {
                        if (n != 0)
                                fail_msg("case %zu: rewritten", i);
                        continue;
                }
                assert_int_not_equal(n, 0);
                out[n] = '\0';
                assert_string_equal(out, cases[i].out);
                assert_int_equal(glove_net_response_close(cases[i].in, len, out, n - 1), 0);
        }
}

static void test_too_many_headers(void **state) {
        (void)state;
        char head[GLOVE_NET_HEAD_MAX];
        size_t n = (size_t)snprintf(head, sizeof(head), "CONNECT a.example:443 HTTP/1.1\r\n" AUTH);
        for (int i = 1; i < GLOVE_NET_HEADERS_MAX; i++)
                n += (size_t)snprintf(head + n, sizeof(head) - n, "X-%d: y\r\n", i);
        memcpy(head + n, "\r\n", 3);
        struct glove_net_request_head h;
        int status;
        assert_int_equal(glove_net_head_parse(head, n + 2, CRED, &h, &status), GLOVE_NET_EGRESS_OK);
        n += (size_t)snprintf(head + n, sizeof(head) - n, "X-last: y\r\n\r\n");
        assert_int_equal(glove_net_head_parse(head, n, CRED, &h, &status), GLOVE_NET_EGRESS_HEAD_TOO_LARGE);
        assert_int_equal(status, 431);
}

static void test_responses(void **state) {
        (void)state;
        char buf[GLOVE_NET_RESPONSE_MAX];
        size_t n = glove_net_response_format(200, GLOVE_NET_EGRESS_OK, buf);
        assert_int_equal(n, strlen("HTTP/1.1 200 Connection established\r\n\r\n"));
        assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
        n = glove_net_response_format(407, GLOVE_NET_EGRESS_BAD_AUTH, buf);
        assert_int_equal(n, strlen(buf));
        assert_non_null(strstr(buf, "HTTP/1.1 407 Proxy Authentication Required\r\n"));
        assert_non_null(strstr(buf, "Proxy-Authenticate: Basic realm=\"glove\"\r\n"));
        assert_non_null(strstr(buf, "\r\n\r\nglove egress proxy: bad_auth\n"));
        n = glove_net_response_format(405, GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, buf);
        assert_non_null(strstr(buf, "Allow: CONNECT\r\n"));
        const char *body = strstr(buf, "\r\n\r\n") + 4;
        char cl[64];
        snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(body));
        assert_non_null(strstr(buf, cl));
        assert_non_null(strstr(buf, "Connection: close\r\n"));
        n = glove_net_response_format(400, GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT, buf);
        assert_non_null(strstr(buf, "HTTP/1.1 400 Bad Request\r\n"));
        assert_non_null(strstr(buf, "glove egress proxy: https_needs_connect (send CONNECT"));
        body = strstr(buf, "\r\n\r\n") + 4;
        snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(body));
        assert_non_null(strstr(buf, cl));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_head_end),
                cmocka_unit_test(test_parse_table),
                cmocka_unit_test(test_too_many_headers),
                cmocka_unit_test(test_refusals_name_the_request),
                cmocka_unit_test(test_bare_lf),
                cmocka_unit_test(test_forward_head),
                cmocka_unit_test(test_response_close),
                cmocka_unit_test(test_responses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

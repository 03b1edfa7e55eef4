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
        { "GET http://example.com/ HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, 405, NULL, 0 },
        { "POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\n\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED,
          405, NULL, 0 },
        { "connect example.com:443 HTTP/1.1\r\n" AUTH "\r\n", GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, 405, NULL, 0 },
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
                struct glove_net_connect_head h;
                int status = -1;
                size_t len = strlen(row->head);
                enum glove_net_egress_reason got = glove_net_head_parse(row->head, len, CRED, &h, &status);
                if (got != row->reason || status != row->status)
                        fail_msg("row %zu: want %s/%d, got %s/%d", i, glove_net_egress_reason_name(row->reason),
                                 row->status, glove_net_egress_reason_name(got), status);
                if (row->reason == GLOVE_NET_EGRESS_BAD_AUTH) {
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

static void test_too_many_headers(void **state) {
        (void)state;
        char head[GLOVE_NET_HEAD_MAX];
        size_t n = (size_t)snprintf(head, sizeof(head), "CONNECT a.example:443 HTTP/1.1\r\n" AUTH);
        for (int i = 1; i < GLOVE_NET_HEADERS_MAX; i++)
                n += (size_t)snprintf(head + n, sizeof(head) - n, "X-%d: y\r\n", i);
        memcpy(head + n, "\r\n", 3);
        struct glove_net_connect_head h;
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
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_head_end),
                cmocka_unit_test(test_parse_table),
                cmocka_unit_test(test_too_many_headers),
                cmocka_unit_test(test_responses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

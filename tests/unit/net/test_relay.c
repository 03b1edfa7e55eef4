/* SPDX-License-Identifier: Apache-2.0 */
/*
 * End-to-end tests of include/glove/net/relay.h with the real helper
 * (helper.h) in one process tree: a socketpair stands in for the inherited
 * Unix channel, the helper's listener runs on a thread on 127.0.0.1, the
 * relay serves what it passes, and a TCP echo server on the loopback is the
 * destination. Traffic stays on 127.0.0.1 and ::1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "fixture.h"
#include "glove/net/helper.h"
#include "glove/net/proxy_env.h"
#include "glove/net/rule.h"

struct fx {
        struct echo echo;
        struct recorder rec;
        struct glove_net_policy policy;
        char token[GLOVE_NET_TOKEN_LEN + 1];
        char auth[512]; /* "Proxy-Authorization: Basic ...\r\n" */
        int listen_fd;
        uint16_t proxy_port;
        pthread_t listener;
        int helper_fd;
        int listener_ret;
        struct glove_net_relay *relay;
};

static void *listener_main(void *arg) {
        struct fx *f = arg;
        f->listener_ret = glove_net_listener_run(f->helper_fd, f->listen_fd, NULL);
        return NULL;
}

static void auth_header(const char *token, char *out, size_t size) {
        /* base64 by the test's own table, independent of the relay's. */
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char plain[256], enc[400];
        int n = snprintf(plain, sizeof(plain), "glove:%s", token);
        size_t o = 0;
        for (int i = 0; i < n; i += 3) {
                unsigned v = (unsigned char)plain[i] << 16 | (i + 1 < n ? (unsigned char)plain[i + 1] << 8 : 0) |
                             (i + 2 < n ? (unsigned char)plain[i + 2] : 0);
                enc[o++] = b64[v >> 18 & 63];
                enc[o++] = b64[v >> 12 & 63];
                enc[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
                enc[o++] = i + 2 < n ? b64[v & 63] : '=';
        }
        enc[o] = '\0';
        snprintf(out, size, "Proxy-Authorization: Basic %s\r\n", enc);
}

/* Starts echo server, helper listener thread and relay. rules may contain
 * "%E" for the echo server's port. */
static void fx_start(struct fx *f, const char *const *rules, bool allow_private,
                     const struct glove_net_relay_config *overrides) {
        memset(f, 0, sizeof(*f));
        assert_int_equal(echo_start(&f->echo, AF_INET), 0);
        recorder_init(&f->rec);
        glove_net_policy_init(&f->policy);
        for (size_t i = 0; rules && rules[i]; i++) {
                char rule[300];
                const char *e = strstr(rules[i], "%E");
                if (e)
                        snprintf(rule, sizeof(rule), "%.*s%u%s", (int)(e - rules[i]), rules[i], f->echo.port, e + 2);
                else
                        snprintf(rule, sizeof(rule), "%s", rules[i]);
                struct glove_error err = { 0 };
                /* Every rule gets the flag given (address literals included,
                 * unlike glove_net_policy_add), so allow_private false tests
                 * the private-address refusal on the echo server's loopback. */
                if (glove_net_policy_add_rule(&f->policy, rule, allow_private, &err) < 0)
                        fail_msg("rule %s: %s", rule, err.message);
        }
        assert_int_equal(glove_net_token_generate(f->token, NULL), 0);
        auth_header(f->token, f->auth, sizeof(f->auth));
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        f->helper_fd = sv[1];
        struct glove_error err = { 0 };
        assert_int_equal(glove_net_listener_open(0, &f->listen_fd, &f->proxy_port, &err), 0);
        assert_true(f->proxy_port > 0);
        struct glove_net_relay_config cfg = { 0 };
        if (overrides)
                cfg = *overrides;
        cfg.policy = &f->policy;
        cfg.token = f->token;
        cfg.audit = record_event;
        cfg.audit_userdata = &f->rec;
        if (glove_net_relay_start(&cfg, sv[0], &f->relay, &err) < 0)
                fail_msg("relay: %s", err.message);
        assert_int_equal(pthread_create(&f->listener, NULL, listener_main, f), 0);
}

static void fx_stop(struct fx *f) {
        glove_net_relay_stop(f->relay);
        /* The relay closed its end: the helper sees the hang-up and returns. */
        pthread_join(f->listener, NULL);
        assert_int_equal(f->listener_ret, 0);
        close(f->helper_fd);
        close(f->listen_fd);
        echo_stop(&f->echo);
        glove_net_policy_free(&f->policy);
        recorder_destroy(&f->rec);
}

/* Opens a proxy connection and sends "CONNECT target" with the given header
 * block (NULL: the right credentials) and extra bytes after the head.
 * Returns the descriptor and the status in *status. */
static int proxy_request(struct fx *f, const char *method, const char *target, const char *headers,
                         const char *extra, int *status) {
        int fd = tcp_connect(f->proxy_port);
        assert_true(fd >= 0);
        char req[1024];
        int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n%s", method, target, target,
                         headers ? headers : f->auth, extra ? extra : "");
        assert_int_equal(write_all(fd, req, (size_t)n), 0);
        char head[1024];
        *status = read_status(fd, head, sizeof(head));
        return fd;
}

static int echo_target(struct fx *f, char *buf, size_t size) {
        return snprintf(buf, size, "127.0.0.1:%u", f->echo.port);
}

/* Asserts the only event is a DENY with reason and status. */
static void assert_single_deny(struct fx *f, enum glove_net_egress_reason reason, int status) {
        assert_int_equal(recorder_wait(&f->rec, 1), 1);
        usleep(20 * 1000);
        pthread_mutex_lock(&f->rec.lock);
        struct rec r = f->rec.recs[0];
        int n = f->rec.n;
        pthread_mutex_unlock(&f->rec.lock);
        assert_int_equal(n, 1);
        assert_int_equal(r.phase, GLOVE_NET_EGRESS_DENY);
        assert_false(r.allowed);
        if (r.reason != reason)
                fail_msg("reason %s, want %s", glove_net_egress_reason_name(r.reason), glove_net_egress_reason_name(reason));
        assert_int_equal(r.status, status);
}

static void test_allowed_connect_relays_both_ways(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        char target[64];
        echo_target(&f, target, sizeof(target));
        int status;
        /* Bytes sent right behind the head reach the destination first. */
        int fd = proxy_request(&f, "CONNECT", target, NULL, "early", &status);
        assert_int_equal(status, 200);
        char back[5];
        assert_int_equal(recv(fd, back, 5, MSG_WAITALL), 5);
        assert_memory_equal(back, "early", 5);
        /* 3 MiB each way through splice, then half-close and EOF. */
        size_t len = 3 * 1024 * 1024;
        char *out = malloc(len), *in = malloc(len);
        assert_non_null(out);
        assert_non_null(in);
        for (size_t i = 0; i < len; i++)
                out[i] = (char)(i * 131 + (i >> 11));
        assert_int_equal(exchange(fd, out, len, in), 0);
        close(fd);
        free(out);
        free(in);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        struct rec open = f.rec.recs[0], closed = f.rec.recs[1];
        assert_int_equal(open.phase, GLOVE_NET_EGRESS_OPEN);
        assert_true(open.allowed);
        assert_int_equal(open.reason, GLOVE_NET_EGRESS_OK);
        assert_int_equal(open.status, 200);
        assert_string_equal(open.host, "127.0.0.1");
        assert_int_equal(open.port, f.echo.port);
        assert_string_equal(open.address, "127.0.0.1");
        assert_string_equal(open.cls, "loopback");
        assert_int_equal(open.up, 0);
        assert_int_equal(closed.phase, GLOVE_NET_EGRESS_CLOSE);
        assert_true(closed.allowed);
        assert_int_equal(closed.id, open.id);
        if (closed.reason != GLOVE_NET_EGRESS_CLOSED)
                fail_msg("close reason %s", glove_net_egress_reason_name(closed.reason));
        assert_int_equal(closed.up, len + 5);
        assert_int_equal(closed.down, len + 5);
        assert_string_equal(closed.address, "127.0.0.1");
        assert_true(closed.duration_ms >= open.duration_ms);
        assert_int_equal(atomic_load(&f.echo.accepted), 1);
        assert_int_equal(f.rec.max_concurrent, 1);
        fx_stop(&f);
}

static void test_wrong_or_missing_token_is_407(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        static const char *const bad[] = {
                "",
                "Proxy-Authorization: Basic Z2xvdmU6d3Jvbmc=\r\n", /* glove:wrong */
                "Authorization: Basic Z2xvdmU6d3Jvbmc=\r\n",
        };
        for (size_t i = 0; i < 4; i++) {
                struct fx f;
                fx_start(&f, rules, true, NULL);
                char target[64], other[512];
                echo_target(&f, target, sizeof(target));
                const char *headers = i < 3 ? bad[i] : other;
                if (i == 3) {
                        /* The right token for another run. */
                        auth_header("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", other,
                                    sizeof(other));
                }
                int status;
                int fd = proxy_request(&f, "CONNECT", target, headers, NULL, &status);
                assert_int_equal(status, 407);
                close(fd);
                assert_single_deny(&f, GLOVE_NET_EGRESS_BAD_AUTH, 407);
                /* The refusal names what was asked for. */
                assert_string_equal(f.rec.recs[0].host, "127.0.0.1");
                assert_int_equal(f.rec.recs[0].port, f.echo.port);
                assert_string_equal(f.rec.recs[0].address, "");
                assert_int_equal(atomic_load(&f.echo.accepted), 0);
                fx_stop(&f);
        }
}

static void test_host_not_allowed_is_403(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", ".example.com", NULL };
        static const char *const targets[] = { "not-allowed.invalid:443", "127.0.0.2:%E", "example.com:443",
                                               "www.example.com:80", "[::ffff:127.0.0.1]:1" };
        for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
                struct fx f;
                fx_start(&f, rules, true, NULL);
                char target[64];
                const char *e = strstr(targets[i], "%E");
                if (e)
                        snprintf(target, sizeof(target), "%.*s%u", (int)(e - targets[i]), targets[i], f.echo.port);
                else
                        snprintf(target, sizeof(target), "%s", targets[i]);
                int status;
                int fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
                assert_int_equal(status, 403);
                close(fd);
                assert_single_deny(&f, GLOVE_NET_EGRESS_NOT_ALLOWED, 403);
                assert_string_equal(f.rec.recs[0].address, ""); /* nothing resolved */
                assert_int_equal(atomic_load(&f.echo.accepted), 0);
                fx_stop(&f);
        }
}

static void test_private_address_needs_allow_private(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", "[::ffff:127.0.0.1]:%E", NULL };
        for (int mapped = 0; mapped < 2; mapped++) {
                struct fx f;
                fx_start(&f, rules, false, NULL);
                char target[64];
                snprintf(target, sizeof(target), mapped ? "[::ffff:127.0.0.1]:%u" : "127.0.0.1:%u", f.echo.port);
                int status;
                int fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
                assert_int_equal(status, 403);
                close(fd);
                assert_single_deny(&f, GLOVE_NET_EGRESS_PRIVATE_ADDRESS, 403);
                assert_string_equal(f.rec.recs[0].address, mapped ? "::ffff:127.0.0.1" : "127.0.0.1");
                assert_string_equal(f.rec.recs[0].cls, "loopback");
                assert_int_equal(atomic_load(&f.echo.accepted), 0);
                fx_stop(&f);
        }
}

static bool localhost_resolves(void) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
        if (getaddrinfo("localhost", NULL, &hints, &res) != 0)
                return false;
        freeaddrinfo(res);
        return true;
}

static void test_name_resolving_to_private_address(void **state) {
        (void)state;
        if (!localhost_resolves()) {
                print_message("skipped: the name localhost does not resolve on this host\n");
                skip();
        }
        static const char *const rules[] = { "localhost:%E", NULL };
        struct fx f;
        fx_start(&f, rules, false, NULL);
        char target[64];
        snprintf(target, sizeof(target), "LocalHost:%u", f.echo.port);
        int status;
        int fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 403);
        close(fd);
        assert_single_deny(&f, GLOVE_NET_EGRESS_PRIVATE_ADDRESS, 403);
        assert_string_equal(f.rec.recs[0].host, "localhost");
        assert_string_equal(f.rec.recs[0].cls, "loopback");
        assert_int_equal(atomic_load(&f.echo.accepted), 0);
        fx_stop(&f);

        /* With --egress-allow-private the same name works; when localhost
         * also resolves to ::1 (nothing listens there), the relay moves on to
         * the next checked address. */
        fx_start(&f, rules, true, NULL);
        snprintf(target, sizeof(target), "localhost:%u", f.echo.port);
        fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 200);
        char in[4];
        assert_int_equal(exchange(fd, "ping", 4, in), 0);
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        assert_string_equal(f.rec.recs[0].address, "127.0.0.1");
        assert_int_equal(f.rec.recs[1].up, 4);
        assert_int_equal(f.rec.recs[1].down, 4);
        fx_stop(&f);
}

static void test_concurrency_cap_is_503(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct glove_net_relay_config cfg = { .max_connections = 2 };
        struct fx f;
        fx_start(&f, rules, true, &cfg);
        char target[64];
        echo_target(&f, target, sizeof(target));
        int status, a, b, c;
        a = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 200);
        b = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 200);
        assert_int_equal(glove_net_relay_active(f.relay), 2);
        c = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 503);
        close(c);
        assert_int_equal(recorder_wait(&f.rec, 3), 3);
        struct rec busy = f.rec.recs[2];
        assert_int_equal(busy.phase, GLOVE_NET_EGRESS_DENY);
        assert_int_equal(busy.reason, GLOVE_NET_EGRESS_TOO_MANY_CONNECTIONS);
        assert_int_equal(busy.status, 503);
        /* The relay connected twice (the echo server may accept late). */
        for (int i = 0; i < 500 && atomic_load(&f.echo.accepted) < 2; i++)
                usleep(10 * 1000);
        assert_int_equal(atomic_load(&f.echo.accepted), 2);
        /* The tunnels still work, and a freed slot serves the next one. */
        char in[3];
        assert_int_equal(exchange(a, "abc", 3, in), 0);
        close(a);
        assert_int_equal(recorder_wait(&f.rec, 4), 4);
        for (int i = 0; i < 500 && glove_net_relay_active(f.relay) > 1; i++)
                usleep(10 * 1000);
        c = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 200);
        close(c);
        close(b);
        fx_stop(&f);
}

static void test_idle_timeout_closes(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct glove_net_relay_config cfg = { .idle_timeout_ms = 300 };
        struct fx f;
        fx_start(&f, rules, true, &cfg);
        char target[64];
        echo_target(&f, target, sizeof(target));
        int status;
        int fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 200);
        assert_int_equal(write_all(fd, "x", 1), 0);
        char c;
        assert_int_equal(recv(fd, &c, 1, 0), 1);
        uint64_t t0 = glove_time_monotonic_ms();
        char buf[16];
        assert_int_equal(read_to_eof(fd, buf, sizeof(buf)), 0); /* the relay closes */
        uint64_t waited = glove_time_monotonic_ms() - t0;
        assert_true(waited >= 200 && waited < 3000);
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        assert_int_equal(f.rec.recs[1].reason, GLOVE_NET_EGRESS_IDLE_TIMEOUT);
        assert_int_equal(f.rec.recs[1].up, 1);
        assert_int_equal(f.rec.recs[1].down, 1);
        fx_stop(&f);
}

static void test_absolute_timeout_closes(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct glove_net_relay_config cfg = { .idle_timeout_ms = 5000, .max_duration_ms = 400 };
        struct fx f;
        fx_start(&f, rules, true, &cfg);
        char target[64];
        echo_target(&f, target, sizeof(target));
        int status;
        int fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 200);
        /* Never idle: a byte every 50 ms until the relay cuts the tunnel. */
        uint64_t t0 = glove_time_monotonic_ms();
        bool cut = false;
        while (!cut && glove_time_monotonic_ms() - t0 < 3000) {
                if (send(fd, "y", 1, MSG_NOSIGNAL) != 1)
                        break;
                char c;
                ssize_t n = recv(fd, &c, 1, 0);
                cut = n <= 0;
                usleep(50 * 1000);
        }
        assert_true(glove_time_monotonic_ms() - t0 < 3000);
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        assert_int_equal(f.rec.recs[1].reason, GLOVE_NET_EGRESS_ABSOLUTE_TIMEOUT);
        fx_stop(&f);
}

/* A plain-HTTP request in absolute form is forwarded: the echo server
 * returns exactly the head it received (origin form, no credentials,
 * Connection: close) and the body after it. */
static void test_plain_http_is_forwarded(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        int fd = tcp_connect(f.proxy_port);
        char req[1024];
        int n = snprintf(req, sizeof(req),
                         "POST http://127.0.0.1:%u/v1/chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s"
                         "Proxy-Connection: keep-alive\r\nContent-Length: 4\r\n\r\nBODY",
                         f.echo.port, f.echo.port, f.auth);
        assert_int_equal(write_all(fd, req, (size_t)n), 0);
        shutdown(fd, SHUT_WR);
        char got[2048];
        ssize_t g = read_to_eof(fd, got, sizeof(got) - 1);
        assert_true(g > 0);
        got[g] = '\0';
        char want[512];
        snprintf(want, sizeof(want),
                 "POST /v1/chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: 4\r\nConnection: close\r\n\r\nBODY",
                 f.echo.port);
        assert_string_equal(got, want);
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        pthread_mutex_lock(&f.rec.lock);
        struct rec o = f.rec.recs[0], c = f.rec.recs[1];
        pthread_mutex_unlock(&f.rec.lock);
        assert_int_equal(o.phase, GLOVE_NET_EGRESS_OPEN);
        assert_int_equal(c.phase, GLOVE_NET_EGRESS_CLOSE);
        assert_string_equal(o.method, "POST");
        assert_string_equal(c.method, "POST");
        assert_string_equal(c.host, "127.0.0.1");
        assert_int_equal(c.port, f.echo.port);
        assert_int_equal(c.status, 0); /* the upstream answered, not the proxy */
        assert_int_equal(c.reason, GLOVE_NET_EGRESS_CLOSED);
        assert_int_equal(c.up, strlen(want));
        assert_int_equal(c.down, strlen(want));
        fx_stop(&f);
}

/* Refusals of plain-HTTP requests name the method and target asked for. */
static void test_plain_http_refusals(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        static const struct {
                const char *fmt; /* %u: the echo port (twice) */
                int status;
                enum glove_net_egress_reason reason;
                const char *method;
        } cases[] = {
                { "GET http://127.0.0.1:%u/ HTTP/1.1\r\nHost: 127.0.0.2:%u\r\n", 400, GLOVE_NET_EGRESS_HOST_MISMATCH, "GET" },
                { "GET https://127.0.0.1:%u/ HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n", 400,
                  GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT, "GET" },
                { "PUT 127.0.0.1:%u HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n", 405, GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, "PUT" },
                { "GET /x HTTP/1.1\r\nX-Port: %u\r\nHost: 127.0.0.1:%u\r\n", 405, GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED, "GET" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct fx f;
                fx_start(&f, rules, true, NULL);
                int fd = tcp_connect(f.proxy_port);
                char req[1024];
                int n = snprintf(req, sizeof(req), cases[i].fmt, f.echo.port, f.echo.port);
                n += snprintf(req + n, sizeof(req) - (size_t)n, "%s\r\n", f.auth);
                assert_int_equal(write_all(fd, req, (size_t)n), 0);
                char head[1024];
                assert_int_equal(read_status(fd, head, sizeof(head)), cases[i].status);
                close(fd);
                assert_single_deny(&f, cases[i].reason, cases[i].status);
                pthread_mutex_lock(&f.rec.lock);
                struct rec r = f.rec.recs[0];
                pthread_mutex_unlock(&f.rec.lock);
                assert_string_equal(r.method, cases[i].method);
                assert_string_equal(r.host, "127.0.0.1");
                assert_int_equal(r.port, f.echo.port);
                assert_int_equal(atomic_load(&f.echo.accepted), 0);
                fx_stop(&f);
        }
}

/* A head with bare LF line ends is refused at once (400), with its target. */
static void test_bare_lf_is_400(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct fx f;
        /* A head deadline far beyond the test's own read timeout: only an
         * immediate answer passes. */
        struct glove_net_relay_config o = { .head_timeout_ms = 60000 };
        fx_start(&f, rules, true, &o);
        int fd = tcp_connect(f.proxy_port);
        char req[256];
        int n = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\nHost: x\n\n", f.echo.port);
        assert_int_equal(write_all(fd, req, (size_t)n), 0);
        char head[1024];
        assert_int_equal(read_status(fd, head, sizeof(head)), 400);
        close(fd);
        assert_single_deny(&f, GLOVE_NET_EGRESS_BAD_REQUEST, 400);
        pthread_mutex_lock(&f.rec.lock);
        struct rec r = f.rec.recs[0];
        pthread_mutex_unlock(&f.rec.lock);
        assert_string_equal(r.method, "CONNECT");
        assert_string_equal(r.host, "127.0.0.1");
        assert_int_equal(r.port, f.echo.port);
        fx_stop(&f);
}

static void test_http10_is_505(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        int fd = tcp_connect(f.proxy_port);
        char req[512];
        int n = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.0\r\n%s\r\n", f.echo.port, f.auth);
        assert_int_equal(write_all(fd, req, (size_t)n), 0);
        char head[512];
        assert_int_equal(read_status(fd, head, sizeof(head)), 505);
        close(fd);
        assert_single_deny(&f, GLOVE_NET_EGRESS_BAD_REQUEST, 505);
        fx_stop(&f);
}

static void test_oversized_head_is_431(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        int fd = tcp_connect(f.proxy_port);
        size_t len = GLOVE_NET_HEAD_MAX + 4096;
        char *req = malloc(len);
        assert_non_null(req);
        int n = snprintf(req, len, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n%sX-Pad: ", f.echo.port, f.auth);
        memset(req + n, 'a', len - (size_t)n);
        /* The relay answers after 8 KiB; the rest may meet a closed socket. */
        (void)write_all(fd, req, len);
        free(req);
        char head[512];
        assert_int_equal(read_status(fd, head, sizeof(head)), 431);
        close(fd);
        assert_single_deny(&f, GLOVE_NET_EGRESS_HEAD_TOO_LARGE, 431);
        /* The request line had arrived: the record names it. */
        assert_string_equal(f.rec.recs[0].method, "CONNECT");
        assert_string_equal(f.rec.recs[0].host, "127.0.0.1");
        assert_int_equal(f.rec.recs[0].port, f.echo.port);
        assert_int_equal(atomic_load(&f.echo.accepted), 0);
        fx_stop(&f);
}

static void test_slow_head_is_408(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct glove_net_relay_config cfg = { .head_timeout_ms = 200 };
        struct fx f;
        fx_start(&f, rules, true, &cfg);
        int fd = tcp_connect(f.proxy_port);
        assert_int_equal(write_all(fd, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n", 30), 0);
        char head[512];
        assert_int_equal(read_status(fd, head, sizeof(head)), 408);
        close(fd);
        assert_single_deny(&f, GLOVE_NET_EGRESS_TIMEOUT, 408);
        assert_string_equal(f.rec.recs[0].method, "CONNECT");
        assert_string_equal(f.rec.recs[0].host, "127.0.0.1");
        assert_int_equal(f.rec.recs[0].port, 1);
        /* A connection that closes before finishing its head gets no answer. */
        fd = tcp_connect(f.proxy_port);
        assert_int_equal(write_all(fd, "CONN", 4), 0);
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        assert_int_equal(f.rec.recs[1].reason, GLOVE_NET_EGRESS_INCOMPLETE_REQUEST);
        assert_int_equal(f.rec.recs[1].status, 0);
        assert_string_equal(f.rec.recs[1].method, ""); /* no request line */
        assert_string_equal(f.rec.recs[1].host, "");
        fx_stop(&f);
}

static void test_connect_failed_is_502(void **state) {
        (void)state;
        /* A port nothing listens on: bind one, learn it, close it. */
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t sl = sizeof(sin);
        assert_int_equal(bind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
        assert_int_equal(getsockname(s, (struct sockaddr *)&sin, &sl), 0);
        close(s);
        char rule[64];
        snprintf(rule, sizeof(rule), "127.0.0.1:%u", ntohs(sin.sin_port));
        const char *const rules[] = { rule, NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        int status;
        int fd = proxy_request(&f, "CONNECT", rule, NULL, NULL, &status);
        assert_int_equal(status, 502);
        close(fd);
        assert_single_deny(&f, GLOVE_NET_EGRESS_CONNECT_FAILED, 502);
        assert_string_equal(f.rec.recs[0].address, "127.0.0.1");
        fx_stop(&f);
}

static void test_audit_refusal_fails_closed(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        f.rec.refuse_open = 1;
        char target[64];
        echo_target(&f, target, sizeof(target));
        int status;
        int fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 502);
        char buf[64] = { 0 };
        assert_int_equal(read_to_eof(fd, buf, sizeof(buf) - 1), 33);
        assert_string_equal(buf, "glove egress proxy: audit_failed\n");
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 1), 1);
        usleep(50 * 1000);
        assert_int_equal(f.rec.n, 1);
        assert_int_equal(f.rec.recs[0].phase, GLOVE_NET_EGRESS_OPEN);
        fx_stop(&f);
}

static void test_stop_cuts_open_tunnels(void **state) {
        (void)state;
        static const char *const rules[] = { "127.0.0.1:%E", NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        char target[64];
        echo_target(&f, target, sizeof(target));
        int status;
        int open_fd = proxy_request(&f, "CONNECT", target, NULL, NULL, &status);
        assert_int_equal(status, 200);
        int waiting = tcp_connect(f.proxy_port); /* never sends its head */
        assert_true(waiting >= 0);
        for (int i = 0; i < 500 && glove_net_relay_active(f.relay) < 2; i++)
                usleep(10 * 1000);
        assert_int_equal(glove_net_relay_active(f.relay), 2);
        uint64_t t0 = glove_time_monotonic_ms();
        glove_net_relay_stop(f.relay);
        assert_true(glove_time_monotonic_ms() - t0 < 2000);
        char buf[8];
        assert_true(read_to_eof(open_fd, buf, sizeof(buf)) >= 0);
        assert_true(read_to_eof(waiting, buf, sizeof(buf)) >= 0);
        close(open_fd);
        close(waiting);
        assert_int_equal(f.rec.n, 3);
        int stopped = 0;
        for (int i = 0; i < 3; i++)
                stopped += f.rec.recs[i].reason == GLOVE_NET_EGRESS_RELAY_STOPPED;
        assert_int_equal(stopped, 2);
        /* The helper noticed. */
        pthread_join(f.listener, NULL);
        assert_int_equal(f.listener_ret, 0);
        close(f.helper_fd);
        close(f.listen_fd);
        echo_stop(&f.echo);
        glove_net_policy_free(&f.policy);
        recorder_destroy(&f.rec);
}

static void test_ipv6_literal(void **state) {
        (void)state;
        struct echo e6;
        if (echo_start(&e6, AF_INET6) < 0) {
                print_message("skipped: no ::1 on this host\n");
                skip();
        }
        char rule[64];
        snprintf(rule, sizeof(rule), "[::1]:%u", e6.port);
        const char *const rules[] = { rule, NULL };
        struct fx f;
        fx_start(&f, rules, true, NULL);
        int status;
        int fd = proxy_request(&f, "CONNECT", rule, NULL, NULL, &status);
        assert_int_equal(status, 200);
        char in[6];
        assert_int_equal(exchange(fd, "abcdef", 6, in), 0);
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        assert_string_equal(f.rec.recs[0].host, "::1");
        assert_string_equal(f.rec.recs[0].address, "::1");
        assert_string_equal(f.rec.recs[1].cls, "loopback");
        assert_int_equal(atomic_load(&e6.accepted), 1);
        fx_stop(&f);
        echo_stop(&e6);
}

static void test_rogue_descriptors(void **state) {
        (void)state;
        /* A compromised helper could pass anything: the relay serves only
         * TCP sockets and tolerates several descriptors in one message. */
        struct recorder rec;
        recorder_init(&rec);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        char token[GLOVE_NET_TOKEN_LEN + 1];
        assert_int_equal(glove_net_token_generate(token, NULL), 0);
        struct glove_net_relay_config cfg = { .token = token, .audit = record_event, .audit_userdata = &rec };
        struct glove_net_relay *relay;
        assert_int_equal(glove_net_relay_start(&cfg, sv[0], &relay, NULL), 0);
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        int fds[2] = { p[0], p[1] };
        char byte = 'x';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(fds))];
        } control;
        memset(&control, 0, sizeof(control));
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                              .msg_controllen = sizeof(control.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(fds));
        memcpy(CMSG_DATA(c), fds, sizeof(fds));
        assert_int_equal(sendmsg(sv[1], &msg, 0), 1);
        close(p[0]);
        close(p[1]);
        assert_int_equal(recorder_wait(&rec, 2), 2);
        assert_int_equal(rec.recs[0].reason, GLOVE_NET_EGRESS_BAD_DESCRIPTOR);
        assert_int_equal(rec.recs[1].reason, GLOVE_NET_EGRESS_BAD_DESCRIPTOR);
        close(sv[1]);
        glove_net_relay_stop(relay);
        recorder_destroy(&rec);
}

/* ---- the run's MCP endpoint (relay.h): routed, not egress ---------------- */

#define EP_PORT 4242

/* A relay whose MCP endpoint is EP_PORT; *ep gets the endpoint's end of its
 * channel (the test plays the endpoint). No policy rule at all. */
static void fx_start_endpoint(struct fx *f, int *ep) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        struct glove_net_relay_config o = { .endpoint_port = EP_PORT, .endpoint_fd = sv[1] };
        fx_start(f, NULL, false, &o);
        *ep = sv[0];
}

/* The descriptor the relay handed to the endpoint within timeout_ms, or -1. */
static int endpoint_receive(int ep, int timeout_ms) {
        struct pollfd p = { .fd = ep, .events = POLLIN };
        if (poll(&p, 1, timeout_ms) != 1)
                return -1;
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                              .msg_controllen = sizeof(control.buf) };
        if (recvmsg(ep, &msg, MSG_CMSG_CLOEXEC) != 1)
                return -1;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int)))
                return -1;
        int fd;
        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        set_timeouts(fd);
        return fd;
}

/* Sends "GET http://authority/mcp" with a matching Host and the right
 * credentials; returns the descriptor and the status in *status. */
static int proxy_get(struct fx *f, const char *authority, int *status) {
        int fd = tcp_connect(f->proxy_port);
        assert_true(fd >= 0);
        char req[1024];
        int n = snprintf(req, sizeof(req), "GET http://%s/mcp HTTP/1.1\r\nHost: %s\r\n%s\r\n", authority, authority, f->auth);
        assert_int_equal(write_all(fd, req, (size_t)n), 0);
        char head[1024];
        *status = read_status(fd, head, sizeof(head));
        return fd;
}

/* Bytes one way and back between the agent's socket and the endpoint's. */
static void assert_connected(int agent, int endpoint) {
        char b[4];
        assert_int_equal(write_all(agent, "ping", 4), 0);
        assert_int_equal(recv(endpoint, b, 4, MSG_WAITALL), 4);
        assert_memory_equal(b, "ping", 4);
        assert_int_equal(write_all(endpoint, "pong", 4), 0);
        assert_int_equal(recv(agent, b, 4, MSG_WAITALL), 4);
        assert_memory_equal(b, "pong", 4);
}

static void test_endpoint_connect_is_handed_over(void **state) {
        (void)state;
        struct fx f;
        int ep;
        fx_start_endpoint(&f, &ep);
        static const char *const targets[] = { "127.0.0.1:4242", "localhost:4242" };
        int agents[2], endpoints[2];
        for (int i = 0; i < 2; i++) {
                int status;
                int fd = proxy_request(&f, "CONNECT", targets[i], NULL, NULL, &status);
                assert_int_equal(status, 200);
                int got = endpoint_receive(ep, FX_IO_TIMEOUT_MS);
                assert_true(got >= 0);
                /* The agent's own TCP connection, not a relayed copy. */
                int type = 0, domain = 0;
                socklen_t len = sizeof(type);
                assert_int_equal(getsockopt(got, SOL_SOCKET, SO_TYPE, &type, &len), 0);
                len = sizeof(domain);
                assert_int_equal(getsockopt(got, SOL_SOCKET, SO_DOMAIN, &domain, &len), 0);
                assert_int_equal(type, SOCK_STREAM);
                assert_int_equal(domain, AF_INET);
                assert_connected(fd, got);
                agents[i] = fd;
                endpoints[i] = got;
                assert_int_equal(recorder_wait(&f.rec, 2 * i + 2), 2 * i + 2);
                pthread_mutex_lock(&f.rec.lock);
                struct rec o = f.rec.recs[2 * i], c = f.rec.recs[2 * i + 1];
                pthread_mutex_unlock(&f.rec.lock);
                assert_int_equal(o.phase, GLOVE_NET_EGRESS_OPEN);
                assert_int_equal(o.status, 200);
                assert_true(o.mcp_endpoint);
                assert_string_equal(o.address, "");
                assert_string_equal(o.host, i == 0 ? "127.0.0.1" : "localhost");
                assert_int_equal(o.port, EP_PORT);
                assert_int_equal(c.phase, GLOVE_NET_EGRESS_CLOSE);
                assert_int_equal(c.id, o.id);
                assert_true(c.mcp_endpoint);
                if (c.reason != GLOVE_NET_EGRESS_HANDED_OVER)
                        fail_msg("close reason %s", glove_net_egress_reason_name(c.reason));
        }
        /* No relay thread stays with a handed-over connection (though both
         * are still open): the threads end right after their CLOSE. */
        for (int i = 0; i < 500 && glove_net_relay_active(f.relay) != 0; i++)
                usleep(10 * 1000);
        assert_int_equal(glove_net_relay_active(f.relay), 0);
        for (int i = 0; i < 2; i++) {
                assert_connected(agents[i], endpoints[i]);
                close(agents[i]);
                close(endpoints[i]);
        }
        /* Bytes sent right behind the CONNECT head still arrive first,
         * through a relayed socketpair. */
        int status;
        int fd = proxy_request(&f, "CONNECT", "127.0.0.1:4242", NULL, "early", &status);
        assert_int_equal(status, 200);
        int got = endpoint_receive(ep, FX_IO_TIMEOUT_MS);
        assert_true(got >= 0);
        char b[5];
        assert_int_equal(recv(got, b, 5, MSG_WAITALL), 5);
        assert_memory_equal(b, "early", 5);
        assert_connected(fd, got);
        close(fd);
        close(got);
        assert_int_equal(recorder_wait(&f.rec, 6), 6);
        assert_int_equal(f.rec.recs[5].reason, GLOVE_NET_EGRESS_CLOSED);
        assert_true(f.rec.recs[5].mcp_endpoint);
        assert_int_equal(atomic_load(&f.echo.accepted), 0);
        fx_stop(&f);
        close(ep);
}

static void test_endpoint_absolute_form_is_rewritten(void **state) {
        (void)state;
        struct fx f;
        int ep;
        fx_start_endpoint(&f, &ep);
        int fd = tcp_connect(f.proxy_port);
        char req[1024];
        int n = snprintf(req, sizeof(req),
                         "POST http://localhost:4242/mcp?x=1 HTTP/1.1\r\nHost: localhost:4242\r\n%s"
                         "Proxy-Connection: keep-alive\r\nContent-Length: 4\r\n\r\nBODY",
                         f.auth);
        assert_int_equal(write_all(fd, req, (size_t)n), 0);
        int got = endpoint_receive(ep, FX_IO_TIMEOUT_MS);
        assert_true(got >= 0);
        /* Origin form, the same Host, no proxy fields, one exchange. */
        static const char want[] = "POST /mcp?x=1 HTTP/1.1\r\nHost: localhost:4242\r\nContent-Length: 4\r\n"
                                   "Connection: close\r\n\r\nBODY";
        char in[sizeof(want)];
        assert_int_equal(recv(got, in, sizeof(want) - 1, MSG_WAITALL), (ssize_t)sizeof(want) - 1);
        in[sizeof(want) - 1] = '\0';
        assert_string_equal(in, want);
        static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_int_equal(write_all(got, answer, sizeof(answer) - 1), 0);
        close(got);
        char out[512];
        ssize_t g = read_to_eof(fd, out, sizeof(out) - 1);
        assert_true(g > 0);
        out[g] = '\0';
        assert_string_equal(out, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        close(fd);
        assert_int_equal(recorder_wait(&f.rec, 2), 2);
        pthread_mutex_lock(&f.rec.lock);
        struct rec o = f.rec.recs[0], c = f.rec.recs[1];
        pthread_mutex_unlock(&f.rec.lock);
        assert_int_equal(o.phase, GLOVE_NET_EGRESS_OPEN);
        assert_true(o.mcp_endpoint);
        assert_string_equal(o.method, "POST");
        assert_string_equal(o.host, "localhost");
        assert_string_equal(o.address, "");
        assert_int_equal(o.status, 0);
        assert_int_equal(c.phase, GLOVE_NET_EGRESS_CLOSE);
        assert_true(c.mcp_endpoint);
        assert_int_equal(c.reason, GLOVE_NET_EGRESS_CLOSED);
        assert_int_equal(c.up, strlen(want));
        assert_int_equal(atomic_load(&f.echo.accepted), 0);
        fx_stop(&f);
        close(ep);
}

/* Only the endpoint's own address and port are routed: any other loopback
 * port or address is egress, refused without a rule; the credentials are
 * still required. */
static void test_endpoint_nothing_else_is_routed(void **state) {
        (void)state;
        struct fx f;
        int ep;
        fx_start_endpoint(&f, &ep);
        static const char *const targets[] = { "127.0.0.1:4243", "localhost:4243", "127.0.0.2:4242", "[::1]:4242",
                                               "localhost.example:4242" };
        int expected = 0;
        for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
                int status;
                int fd = proxy_request(&f, "CONNECT", targets[i], NULL, NULL, &status);
                if (status != 403)
                        fail_msg("CONNECT %s: %d", targets[i], status);
                close(fd);
                expected++;
                fd = proxy_get(&f, targets[i], &status);
                if (status != 403)
                        fail_msg("GET http://%s/mcp: %d", targets[i], status);
                close(fd);
                expected++;
        }
        int status;
        int fd = proxy_request(&f, "CONNECT", "127.0.0.1:4242", "", NULL, &status);
        assert_int_equal(status, 407);
        close(fd);
        expected++;
        assert_int_equal(recorder_wait(&f.rec, expected), expected);
        pthread_mutex_lock(&f.rec.lock);
        for (int i = 0; i < f.rec.n; i++) {
                assert_int_equal(f.rec.recs[i].phase, GLOVE_NET_EGRESS_DENY);
                assert_false(f.rec.recs[i].mcp_endpoint);
                if (i < expected - 1)
                        assert_int_equal(f.rec.recs[i].reason, GLOVE_NET_EGRESS_NOT_ALLOWED);
        }
        pthread_mutex_unlock(&f.rec.lock);
        assert_int_equal(endpoint_receive(ep, 100), -1);
        fx_stop(&f);
        close(ep);
}

/* The endpoint is gone: 502 connect_failed with its body, on record as the
 * endpoint's (one DENY, no OPEN), in every form: absolute form, and a
 * CONNECT, with or without bytes sent ahead of the answer. A CONNECT is
 * handed over before it is answered, so it is never answered 200 and then
 * closed. */
static void test_endpoint_gone_is_502(void **state) {
        (void)state;
        struct fx f;
        int ep;
        fx_start_endpoint(&f, &ep);
        close(ep);
        static const char body[] = "glove egress proxy: connect_failed\n";
        for (int form = 0; form < 3; form++) {
                int status;
                int fd = form == 0 ? proxy_get(&f, "127.0.0.1:4242", &status)
                                   : proxy_request(&f, "CONNECT", form == 1 ? "127.0.0.1:4242" : "localhost:4242", NULL,
                                                   form == 2 ? "early" : NULL, &status);
                if (status != 502)
                        fail_msg("form %d: status %d", form, status);
                char out[256];
                ssize_t n = read_to_eof(fd, out, sizeof(out) - 1);
                assert_true(n >= 0);
                out[n] = '\0';
                assert_string_equal(out, body);
                close(fd);
                assert_int_equal(recorder_wait(&f.rec, form + 1), form + 1);
                usleep(20 * 1000);
                pthread_mutex_lock(&f.rec.lock);
                struct rec r = f.rec.recs[form];
                int recs = f.rec.n;
                pthread_mutex_unlock(&f.rec.lock);
                if (recs != form + 1 || r.phase != GLOVE_NET_EGRESS_DENY || r.reason != GLOVE_NET_EGRESS_CONNECT_FAILED)
                        fail_msg("form %d: %d records, the last phase %d reason %s", form, recs, (int)r.phase,
                                 glove_net_egress_reason_name(r.reason));
                assert_int_equal(r.status, 502);
                assert_true(r.mcp_endpoint);
                assert_string_equal(r.method, form == 0 ? "GET" : "CONNECT");
        }
        fx_stop(&f);
}

static void test_config_refusals(void **state) {
        (void)state;
        struct glove_net_relay *relay = (void *)1;
        struct glove_error err = { 0 };
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        struct glove_net_relay_config cfg = { .token = "bad token" };
        assert_int_equal(glove_net_relay_start(&cfg, sv[0], &relay, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_token");
        assert_null(relay);
        /* sv[0] was closed: the peer sees the hang-up. */
        struct pollfd p = { .fd = sv[1], .events = 0 };
        assert_int_equal(poll(&p, 1, 1000), 1);
        assert_true(p.revents & POLLHUP);
        close(sv[1]);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        close(sv[1]);
        cfg = (struct glove_net_relay_config){ .token = "abc", .max_connections = GLOVE_NET_MAX_CONNECTIONS_LIMIT + 1 };
        glove_error_clear(&err);
        assert_int_equal(glove_net_relay_start(&cfg, sv[0], &relay, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_config");
        /* An endpoint port without its channel. */
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        close(sv[1]);
        cfg = (struct glove_net_relay_config){ .token = "abc", .endpoint_port = 8931, .endpoint_fd = -1 };
        glove_error_clear(&err);
        assert_int_equal(glove_net_relay_start(&cfg, sv[0], &relay, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_config");
        glove_net_relay_stop(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_allowed_connect_relays_both_ways),
                cmocka_unit_test(test_wrong_or_missing_token_is_407),
                cmocka_unit_test(test_host_not_allowed_is_403),
                cmocka_unit_test(test_private_address_needs_allow_private),
                cmocka_unit_test(test_name_resolving_to_private_address),
                cmocka_unit_test(test_concurrency_cap_is_503),
                cmocka_unit_test(test_idle_timeout_closes),
                cmocka_unit_test(test_absolute_timeout_closes),
                cmocka_unit_test(test_plain_http_is_forwarded),
                cmocka_unit_test(test_plain_http_refusals),
                cmocka_unit_test(test_bare_lf_is_400),
                cmocka_unit_test(test_http10_is_505),
                cmocka_unit_test(test_oversized_head_is_431),
                cmocka_unit_test(test_slow_head_is_408),
                cmocka_unit_test(test_connect_failed_is_502),
                cmocka_unit_test(test_audit_refusal_fails_closed),
                cmocka_unit_test(test_stop_cuts_open_tunnels),
                cmocka_unit_test(test_ipv6_literal),
                cmocka_unit_test(test_rogue_descriptors),
                cmocka_unit_test(test_endpoint_connect_is_handed_over),
                cmocka_unit_test(test_endpoint_absolute_form_is_rewritten),
                cmocka_unit_test(test_endpoint_nothing_else_is_routed),
                cmocka_unit_test(test_endpoint_gone_is_502),
                cmocka_unit_test(test_config_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

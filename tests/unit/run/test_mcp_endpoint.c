/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests: the multiplexer of glove run's MCP endpoints (mcp_endpoint.h,
 * mcp_mux.c) between in-sandbox command sessions (socketpairs passed as the
 * listener helper would, with SCM_RIGHTS) and a fake gateway (the test holds
 * the gateway's end of the agent channel).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp_endpoint.h"

/* Linked with --wrap=sd_event_add_time_relative: while fail_time_sources
 * is set, every new relative time source fails as without memory. */
static bool fail_time_sources;
int __real_sd_event_add_time_relative(sd_event *e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
                                      sd_event_time_handler_t callback, void *userdata);
int __wrap_sd_event_add_time_relative(sd_event *e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
                                      sd_event_time_handler_t callback, void *userdata);
int __wrap_sd_event_add_time_relative(sd_event *e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
                                      sd_event_time_handler_t callback, void *userdata) {
        if (fail_time_sources)
                return -ENOMEM;
        return __real_sd_event_add_time_relative(e, s, clock, usec, accuracy, callback, userdata);
}

struct fixture {
        sd_event *e;
        struct glove_mcp_endpoint *ep;
        int gw;      /* the gateway's end */
        int helper;  /* the listener helper's end */
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        int gw[2], acc[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, gw), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, acc), 0);
        assert_int_equal(sd_event_new(&f->e), 0);
        struct glove_mcp_endpoint_config cfg = {
                .event = f->e, .gateway_fd = gw[1], .accept_fd = acc[1], .port = 8931, .http = true, .command = true,
                .max_frame = 1 << 20,
        };
        struct glove_error err = {0};
        assert_int_equal(glove_mcp_endpoint_new(&cfg, &f->ep, &err), 0);
        f->gw = gw[0];
        f->helper = acc[0];
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        glove_mcp_endpoint_free(f->ep);
        close(f->gw);
        close(f->helper);
        sd_event_unref(f->e);
        free(f);
        return 0;
}

/* A new connection from "inside": its client end, non-blocking. */
static int connect_client(struct fixture *f) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        char byte = 'c';
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        memset(&control, 0, sizeof(control));
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
        assert_int_equal(sendmsg(f->helper, &msg, 0), 1);
        close(sv[1]);
        fcntl(sv[0], F_SETFL, O_NONBLOCK);
        return sv[0];
}

static void say(int fd, const char *text) {
        size_t n = strlen(text);
        assert_int_equal(write(fd, text, n), (ssize_t)n);
}

/* One line from fd, running the loop meanwhile; NULL when none came. */
static json_t *hear(struct fixture *f, int fd) {
        static char buf[1 << 16];
        size_t len = 0;
        for (int round = 0; round < 400; round++) {
                sd_event_run(f->e, 5000);
                for (;;) {
                        ssize_t n = read(fd, buf + len, 1);
                        if (n <= 0)
                                break;
                        len++;
                        if (buf[len - 1] == '\n') {
                                buf[len - 1] = '\0';
                                if (strcmp(buf, "OK") == 0) {
                                        len = 0;
                                        continue;
                                }
                                json_t *j = json_loads(buf, 0, NULL);
                                assert_non_null(j);
                                return j;
                        }
                }
        }
        return NULL;
}

/* Nothing arrives on fd for a while. */
static void quiet(struct fixture *f, int fd) {
        for (int round = 0; round < 20; round++)
                sd_event_run(f->e, 5000);
        char c;
        assert_true(read(fd, &c, 1) < 0 && errno == EAGAIN);
}

static const char *str(json_t *j, const char *path) {
        json_t *v = j;
        char key[64];
        const char *p = path;
        while (*p && v) {
                const char *dot = strchr(p, '.');
                size_t n = dot ? (size_t)(dot - p) : strlen(p);
                memcpy(key, p, n);
                key[n] = '\0';
                v = json_object_get(v, key);
                p = dot ? dot + 1 : p + n;
        }
        return json_string_value(v);
}

/* A command session through initialize (caps: its capabilities JSON). */
static int session(struct fixture *f, const char *caps) {
        int c = connect_client(f);
        say(c, "GLOVE-MCP-STDIO/1\n");
        char line[256];
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                 "\"capabilities\":%s,\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n",
                 caps);
        say(c, line);
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        assert_string_equal(str(g, "method"), "initialize");
        char answer[256];
        snprintf(answer, sizeof(answer), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{}}\n", str(g, "id"));
        json_decref(g);
        say(f->gw, answer);
        json_t *r = hear(f, c);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), 0);
        json_decref(r);
        return c;
}

static void test_same_ids_two_sessions(void **state) {
        struct fixture *f = *state;
        int a = session(f, "{}"), b = session(f, "{}");
        say(a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
        say(b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
        json_t *g1 = hear(f, f->gw), *g2 = hear(f, f->gw);
        assert_non_null(g1);
        assert_non_null(g2);
        /* Unique on the channel. */
        assert_string_not_equal(str(g1, "id"), str(g2, "id"));
        /* Answered in the other order, each tagged with its wire id. */
        char ans[256];
        snprintf(ans, sizeof(ans), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"wire\":\"%s\"}}\n", str(g2, "id"), str(g2, "id"));
        say(f->gw, ans);
        snprintf(ans, sizeof(ans), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"wire\":\"%s\"}}\n", str(g1, "id"), str(g1, "id"));
        say(f->gw, ans);
        json_t *ra = hear(f, a), *rb = hear(f, b);
        assert_non_null(ra);
        assert_non_null(rb);
        assert_int_equal(json_integer_value(json_object_get(ra, "id")), 1);
        assert_int_equal(json_integer_value(json_object_get(rb, "id")), 1);
        /* a's request went first: its wire id is g1's. */
        assert_string_equal(str(ra, "result.wire"), str(g1, "id"));
        assert_string_equal(str(rb, "result.wire"), str(g2, "id"));
        /* A second answer to the same wire id reaches no one. */
        say(f->gw, ans);
        quiet(f, a);
        quiet(f, b);
        json_decref(g1);
        json_decref(g2);
        json_decref(ra);
        json_decref(rb);
        close(a);
        close(b);
}

static void test_server_requests(void **state) {
        struct fixture *f = *state;
        /* No initialized session: the gateway is answered. */
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"id\":\"glove-1\",\"method\":\"sampling/createMessage\",\"params\":{}}\n");
        json_t *e = hear(f, f->gw);
        assert_non_null(e);
        assert_string_equal(str(e, "id"), "glove-1");
        assert_string_equal(str(e, "error.data.reason"), "endpoint.no_session");
        json_decref(e);
        int plain = session(f, "{}"), sampler = session(f, "{\"sampling\":{}}"), later = session(f, "{}");
        /* To the most recent session that declared sampling, not the latest. */
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"id\":\"glove-2\",\"method\":\"sampling/createMessage\",\"params\":{}}\n");
        json_t *q = hear(f, sampler);
        assert_non_null(q);
        assert_string_equal(str(q, "id"), "glove-2");
        json_decref(q);
        quiet(f, plain);
        quiet(f, later);
        /* Another session's answer with that id is dropped; the chosen one's goes through. */
        say(later, "{\"jsonrpc\":\"2.0\",\"id\":\"glove-2\",\"result\":{\"from\":\"later\"}}\n");
        say(sampler, "{\"jsonrpc\":\"2.0\",\"id\":\"glove-2\",\"result\":{\"from\":\"sampler\"}}\n");
        json_t *r = hear(f, f->gw);
        assert_non_null(r);
        assert_string_equal(str(r, "result.from"), "sampler");
        json_decref(r);
        /* roots/list: nobody declared roots: the most recently initialized. */
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"id\":\"glove-3\",\"method\":\"roots/list\"}\n");
        q = hear(f, later);
        assert_non_null(q);
        json_decref(q);
        /* The session ends before answering: the gateway gets an error. */
        close(later);
        e = hear(f, f->gw);
        assert_non_null(e);
        assert_string_equal(str(e, "id"), "glove-3");
        assert_string_equal(str(e, "error.data.reason"), "endpoint.session_ended");
        json_decref(e);
        /* A broadcast notification reaches every initialized session. */
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n");
        json_t *n1 = hear(f, plain), *n2 = hear(f, sampler);
        assert_non_null(n1);
        assert_non_null(n2);
        json_decref(n1);
        json_decref(n2);
        close(plain);
        close(sampler);
}

static void test_progress_and_end(void **state) {
        struct fixture *f = *state;
        int a = session(f, "{}"), b = session(f, "{}");
        say(a, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"_meta\":{\"progressToken\":\"tok\"}}}\n");
        say(b, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"_meta\":{\"progressToken\":\"tok\"}}}\n");
        json_t *ga = hear(f, f->gw), *gb = hear(f, f->gw);
        assert_non_null(ga);
        assert_non_null(gb);
        /* Tokens rewritten: the two sessions' "tok" differ on the channel. */
        assert_string_not_equal(str(ga, "params._meta.progressToken"), str(gb, "params._meta.progressToken"));
        char n[256];
        snprintf(n, sizeof(n), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"%s\",\"progress\":1}}\n",
                 str(gb, "params._meta.progressToken"));
        say(f->gw, n);
        json_t *p = hear(f, b);
        assert_non_null(p);
        assert_string_equal(str(p, "params.progressToken"), "tok");
        json_decref(p);
        quiet(f, a);
        /* a cancels its own id 7: the gateway hears its wire id. */
        say(a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7}}\n");
        json_t *c = hear(f, f->gw);
        assert_non_null(c);
        assert_string_equal(str(c, "params.requestId"), str(ga, "id"));
        json_decref(c);
        /* b goes away with its call in flight: cancelled at the gateway. */
        close(b);
        c = hear(f, f->gw);
        assert_non_null(c);
        assert_string_equal(str(c, "method"), "notifications/cancelled");
        assert_string_equal(str(c, "params.requestId"), str(gb, "id"));
        json_decref(c);
        json_decref(ga);
        json_decref(gb);
        close(a);
}

static void test_refusals(void **state) {
        struct fixture *f = *state;
        int c = connect_client(f);
        say(c, "GLOVE-MCP-STDIO/1\n");
        say(c, "not json\n");
        json_t *e = hear(f, c);
        assert_non_null(e);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "error"), "code")), -32700);
        json_decref(e);
        close(c);
}

/* Reads what fd has until text appears (the loop runs meanwhile). */
static bool read_until(struct fixture *f, int fd, char *buf, size_t size, const char *text) {
        size_t len = 0;
        buf[0] = '\0';
        for (int round = 0; round < 400 && !strstr(buf, text); round++) {
                sd_event_run(f->e, 5000);
                ssize_t n;
                while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0) {
                        len += (size_t)n;
                        buf[len] = '\0';
                }
        }
        return strstr(buf, text) != NULL;
}

/* A connection killed while the loop cannot allocate is still closed, and
 * never used after it is freed: a refused HTTP request (403, the head is
 * not trusted: closed after the answer) is killed inside the refusal, and
 * the request parser goes on reading the connection afterwards. Under ASan
 * a use after free fails the test; in any build the client sees the answer,
 * then the end of the connection. */
static void test_kill_without_memory(void **state) {
        struct fixture *f = *state;
        for (int i = 0; i < 3; i++) {
                int c = connect_client(f);
                fail_time_sources = true;
                say(c, "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\n\r\n");
                char buf[4096];
                bool refused = read_until(f, c, buf, sizeof(buf), "\r\n\r\n");
                fail_time_sources = false;
                assert_true(refused);
                assert_non_null(strstr(buf, "HTTP/1.1 403 "));
                assert_non_null(strstr(buf, "Connection: close\r\n"));
                bool closed = false;
                for (int round = 0; round < 400 && !closed; round++) {
                        sd_event_run(f->e, 5000);
                        char b;
                        ssize_t n = read(c, &b, 1);
                        closed = n == 0 || (n < 0 && errno != EAGAIN);
                }
                assert_true(closed);
                close(c);
        }
}

/* A body that comes after its head and is larger than one read: the
 * request head the connection keeps (pointers into its input buffer) must
 * still be valid when the body is served, however the buffer grew. Under
 * ASan a use after free fails the test; in any build the request is
 * answered (400: no Mcp-Session-Id). */
static void test_large_body_after_head(void **state) {
        struct fixture *f = *state;
        int c = connect_client(f);
        size_t body = 300 * 1024;
        char head[256];
        snprintf(head, sizeof(head),
                 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nContent-Type: application/json\r\n"
                 "Accept: application/json\r\nContent-Length: %zu\r\n\r\n",
                 body);
        say(c, head);
        for (int round = 0; round < 10; round++)
                sd_event_run(f->e, 1000);
        char *b = malloc(body);
        assert_non_null(b);
        memset(b, ' ', body);
        memcpy(b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 40);
        size_t off = 0;
        for (int round = 0; round < 4000 && off < body; round++) {
                ssize_t n = write(c, b + off, body - off);
                if (n > 0)
                        off += (size_t)n;
                sd_event_run(f->e, 1000);
        }
        free(b);
        assert_int_equal(off, body);
        char buf[4096];
        assert_true(read_until(f, c, buf, sizeof(buf), "endpoint.session_required"));
        assert_non_null(strstr(buf, "HTTP/1.1 400 "));
        close(c);
}

static void test_http_stream(void **state) {
        struct fixture *f = *state;
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"capabilities\":{\"sampling\":{}}}}";
        char req[1024], buf[8192];
        int c = connect_client(f);
        snprintf(req, sizeof(req),
                 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: application/json, text/event-stream\r\n"
                 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                 strlen(init), init);
        say(c, req);
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        char ans[256];
        snprintf(ans, sizeof(ans), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{}}\n", str(g, "id"));
        json_decref(g);
        say(f->gw, ans);
        assert_true(read_until(f, c, buf, sizeof(buf), "\"result\""));
        char *sid = strstr(buf, "Mcp-Session-Id: ");
        assert_non_null(sid);
        char id[33];
        memcpy(id, sid + 16, 32);
        id[32] = '\0';
        /* A request to the client before the GET stream waits for it. */
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"id\":\"glove-9\",\"method\":\"sampling/createMessage\",\"params\":{}}\n");
        int s = connect_client(f);
        snprintf(req, sizeof(req), "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", id);
        say(s, req);
        assert_true(read_until(f, s, buf, sizeof(buf), "glove-9"));
        assert_non_null(strstr(buf, "text/event-stream"));
        /* A broadcast notification comes on the stream as an SSE event. */
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n");
        assert_true(read_until(f, s, buf, sizeof(buf), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"));
        /* The client's answer (POST, 202) reaches the gateway. */
        static const char reply[] = "{\"jsonrpc\":\"2.0\",\"id\":\"glove-9\",\"result\":{\"ok\":1}}";
        snprintf(req, sizeof(req),
                 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: application/json\r\nMcp-Session-Id: %s\r\n"
                 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                 id, strlen(reply), reply);
        say(c, req);
        json_t *r = hear(f, f->gw);
        assert_non_null(r);
        assert_string_equal(str(r, "id"), "glove-9");
        json_decref(r);
        assert_true(read_until(f, c, buf, sizeof(buf), "202 Accepted"));
        /* DELETE ends the session and its stream. */
        snprintf(req, sizeof(req), "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nMcp-Session-Id: %s\r\n\r\n", id);
        say(c, req);
        assert_true(read_until(f, c, buf, sizeof(buf), "200 OK"));
        assert_true(read_until(f, s, buf, sizeof(buf), "0\r\n\r\n"));
        /* The stream's response ended cleanly and its head announced no
         * close: the connection serves the client's next request (a
         * client that reuses it must not see a reset). */
        assert_null(strstr(buf, "Connection: close"));
        snprintf(req, sizeof(req), "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nMcp-Session-Id: %s\r\n\r\n", id);
        say(s, req);
        assert_true(read_until(f, s, buf, sizeof(buf), "endpoint.session_unknown"));
        assert_non_null(strstr(buf, "HTTP/1.1 404 "));
        close(s);
        close(c);
}

/* A POST refused at its head (an unknown MCP-Protocol-Version, a wrong
 * path, a method the endpoint does not serve) keeps the connection, and
 * its body is skipped, never read as the next request's head: the next
 * request on the same connection is served. A refused body of unknown
 * length (chunked) closes the connection, and the answer says so. */
static void test_refused_body_skipped(void **state) {
        struct fixture *f = *state;
        static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{}}";
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"capabilities\":{}}}";
        static const char *const refused[][3] = {
                { "POST /mcp", "MCP-Protocol-Version: 2099-01-01\r\n", "endpoint.protocol_version" },
                { "POST /other", "", "endpoint.http_not_found" },
                { "PUT /mcp", "", "endpoint.http_method" },
        };
        char req[1024], buf[8192];
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                int c = connect_client(f);
                /* The refused request and the next one in one write: the
                 * body must be skipped exactly. */
                snprintf(req, sizeof(req),
                         "%s HTTP/1.1\r\nHost: 127.0.0.1:8931\r\n%sAccept: application/json, text/event-stream\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s"
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: application/json, text/event-stream\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                         refused[i][0], refused[i][1], strlen(body), body, strlen(init), init);
                say(c, req);
                assert_true(read_until(f, c, buf, sizeof(buf), refused[i][2]));
                assert_null(strstr(buf, "Connection: close"));
                json_t *g = hear(f, f->gw);
                assert_non_null(g);
                assert_string_equal(str(g, "method"), "initialize");
                char ans[256];
                snprintf(ans, sizeof(ans), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{}}\n", str(g, "id"));
                json_decref(g);
                say(f->gw, ans);
                assert_true(read_until(f, c, buf, sizeof(buf), "\"result\""));
                assert_null(strstr(buf, "endpoint.http_bad_head"));
                close(c);
        }
        /* The body of a request refused at its head that arrives later,
         * in pieces, is skipped too. */
        int c = connect_client(f);
        snprintf(req, sizeof(req),
                 "POST /other HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n",
                 strlen(body));
        say(c, req);
        assert_true(read_until(f, c, buf, sizeof(buf), "endpoint.http_not_found"));
        char first[16];
        snprintf(first, sizeof(first), "%.11s", body);
        say(c, first);
        for (int round = 0; round < 5; round++)
                sd_event_run(f->e, 1000);
        say(c, body + strlen(first));
        say(c, "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nMcp-Session-Id: 0123\r\n\r\n");
        assert_true(read_until(f, c, buf, sizeof(buf), "endpoint.session_unknown"));
        close(c);
        /* Chunked: the length is unknown, so the connection closes, and
         * the refusal says so. */
        c = connect_client(f);
        say(c, "POST /other HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_true(read_until(f, c, buf, sizeof(buf), "endpoint.http_not_found"));
        assert_non_null(strstr(buf, "Connection: close\r\n"));
        close(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_same_ids_two_sessions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_server_requests, setup, teardown),
                cmocka_unit_test_setup_teardown(test_progress_and_end, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_http_stream, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_without_memory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_large_body_after_head, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_body_skipped, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

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
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/sockios.h>
#include <arpa/inet.h>
#include <netinet/in.h>
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
        struct glove_audit_log audit; /* on a memfd */
        sd_event *e;
        struct glove_mcp_endpoint *ep;
        int gw;      /* the gateway's end */
        int helper;  /* the listener helper's end */
};

/* The gateway's tools as the agent sees them, for Mcp-Param-*: the tool
 * "hdr" annotates region, count, dry and opts.zone (and an item of list,
 * which the revision does not allow and which is not checked). */
static json_t *hdr_schema;
static const json_t *tool_schema(void *userdata, const char *name) {
        (void)userdata;
        return strcmp(name, "hdr") == 0 ? hdr_schema : NULL;
}

static int setup(void **state) {
        if (!hdr_schema)
                hdr_schema = json_loads("{\"type\":\"object\",\"properties\":{"
                                        "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
                                        "\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"
                                        "\"dry\":{\"type\":\"boolean\",\"x-mcp-header\":\"Dry\"},"
                                        "\"opts\":{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"}}},"
                                        "\"list\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"x-mcp-header\":\"Item\"}},"
                                        "\"q\":{\"type\":\"string\"}}}",
                                        0, NULL);
        assert_non_null(hdr_schema);
        struct fixture *f = calloc(1, sizeof(*f));
        int gw[2], acc[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, gw), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, acc), 0);
        assert_int_equal(sd_event_new(&f->e), 0);
        f->audit.fd = memfd_create("audit", MFD_CLOEXEC);
        assert_true(f->audit.fd >= 0);
        f->audit.path = "audit";
        struct glove_mcp_endpoint_config cfg = {
                .event = f->e, .gateway_fd = gw[1], .accept_fd = acc[1], .port = 8931, .http = true, .command = true,
                .max_frame = 1 << 20, .audit = &f->audit, .tool_schema = tool_schema,
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
        close(f->audit.fd);
        sd_event_unref(f->e);
        free(f);
        return 0;
}

/* Passes fd to the endpoint as the listener helper does, and closes it. */
static void pass_fd(struct fixture *f, int fd) {
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
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        assert_int_equal(sendmsg(f->helper, &msg, 0), 1);
        close(fd);
}

/* A new connection from "inside": its client end, non-blocking. A Unix
 * socket, as the egress relay hands over. */
static int connect_client(struct fixture *f) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pass_fd(f, sv[1]);
        fcntl(sv[0], F_SETFL, O_NONBLOCK);
        return sv[0];
}

/* The same over TCP on 127.0.0.1, as the sandbox's listener passes: a
 * close and a half-close of the client are one FIN there. */
static int connect_client_tcp(struct fixture *f) {
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(l >= 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof(a);
        assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(l, 1), 0);
        assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(c >= 0);
        assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
        int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(s >= 0);
        close(l);
        pass_fd(f, s);
        fcntl(c, F_SETFL, O_NONBLOCK);
        return c;
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

/* A legacy tools/call carries its own session's capabilities to the
 * gateway (glove.dev/sessionCapabilities, over any the client wrote; none
 * before initialize), and a request of the gateway naming an agent's
 * request (glove.dev/relatedRequest) goes to that request's session only,
 * the key removed; to no session when that one cannot take it (red-team
 * finding: translated input requests went to the latest session). */
static void test_session_caps_and_related(void **state) {
        struct fixture *f = *state;
        int asker = session(f, "{\"elicitation\":{}}"), later = session(f, "{\"elicitation\":{}}"), plain = session(f, "{}");
        say(asker, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"u.t\",\"_meta\":"
                   "{\"glove.dev/sessionCapabilities\":{\"sampling\":{},\"roots\":{}}}}}\n");
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        json_t *caps = json_object_get(json_object_get(json_object_get(g, "params"), "_meta"), "glove.dev/sessionCapabilities");
        json_t *want = json_pack("{s:{}}", "elicitation");
        assert_true(json_equal(caps, want)); /* the session's, not the client's forgery */
        json_decref(want);
        char wire[32];
        snprintf(wire, sizeof(wire), "%s", str(g, "id"));
        json_decref(g);
        say(plain, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"u.t\"}}\n");
        g = hear(f, f->gw);
        assert_non_null(g);
        caps = json_object_get(json_object_get(json_object_get(g, "params"), "_meta"), "glove.dev/sessionCapabilities");
        assert_true(json_is_object(caps) && json_object_size(caps) == 0);
        char plain_wire[32];
        snprintf(plain_wire, sizeof(plain_wire), "%s", str(g, "id"));
        json_decref(g);
        /* The gateway asks for asker's call: asker gets it (not the later
         * session that also declared elicitation), without the key. */
        char line[384];
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":\"glove-7\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"m\","
                 "\"_meta\":{\"glove.dev/relatedRequest\":\"%s\"}}}\n",
                 wire);
        say(f->gw, line);
        json_t *q = hear(f, asker);
        assert_non_null(q);
        assert_string_equal(str(q, "id"), "glove-7");
        assert_null(json_object_get(json_object_get(q, "params"), "_meta"));
        json_decref(q);
        quiet(f, later);
        quiet(f, plain);
        /* For plain's call (no elicitation declared): no session takes it. */
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":\"glove-8\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"m\","
                 "\"_meta\":{\"glove.dev/relatedRequest\":\"%s\"}}}\n",
                 plain_wire);
        say(f->gw, line);
        json_t *e = hear(f, f->gw);
        assert_non_null(e);
        assert_string_equal(str(e, "id"), "glove-8");
        assert_string_equal(str(e, "error.data.reason"), "endpoint.no_session");
        json_decref(e);
        quiet(f, later);
        quiet(f, asker);
        close(asker);
        close(later);
        close(plain);
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

/* ---- MCP 2026-07-28 ("modern") requests ---- */

/* The audit log's records with this reason. */
static int audited(struct fixture *f, const char *reason) {
        static char buf[1 << 16];
        ssize_t n = pread(f->audit.fd, buf, sizeof(buf) - 1, 0);
        assert_true(n >= 0);
        buf[n] = '\0';
        char want[128];
        snprintf(want, sizeof(want), "\"reason\":\"%s\"", reason);
        int count = 0;
        for (const char *p = buf; (p = strstr(p, want)); p++)
                count++;
        return count;
}

/* Whether one record of the audit log holds every one of the texts (up to
 * four; NULL ends them). */
static bool audit_line(struct fixture *f, const char *a, const char *b, const char *c, const char *d) {
        static char buf[1 << 16];
        ssize_t n = pread(f->audit.fd, buf, sizeof(buf) - 1, 0);
        assert_true(n >= 0);
        buf[n] = '\0';
        for (char *line = buf, *nl; *line; line = nl + 1) {
                nl = strchr(line, '\n');
                if (!nl)
                        break;
                *nl = '\0';
                bool all = strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c)) && (!d || strstr(line, d));
                *nl = '\n';
                if (all)
                        return true;
        }
        return false;
}

#define META_OK "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define MODERN_HEADERS(method) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " method "\r\n"

/* POSTs body with the extra header lines (each ending CRLF). */
static void post(int fd, const char *headers, const char *body) {
        char req[8192];
        snprintf(req, sizeof(req),
                 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: application/json, text/event-stream\r\n"
                 "Content-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n%s",
                 headers, strlen(body), body);
        say(fd, req);
}

struct http_resp {
        int status;
        char head[4096];
        json_t *body; /* NULL: none or not JSON */
};

/* One whole response with a Content-Length body from fd (the loop runs). */
static void http_read(struct fixture *f, int fd, struct http_resp *r) {
        static char buf[1 << 16];
        size_t len = 0;
        char *end = NULL;
        size_t need = 0;
        for (int round = 0; round < 400; round++) {
                sd_event_run(f->e, 5000);
                ssize_t n;
                while (len + 1 < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
                        len += (size_t)n;
                buf[len] = '\0';
                if (!end && (end = strstr(buf, "\r\n\r\n"))) {
                        const char *cl = strstr(buf, "Content-Length: ");
                        assert_true(cl && cl < end);
                        need = (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10);
                }
                if (end && len >= need)
                        break;
        }
        assert_non_null(end);
        assert_int_equal(len, need);
        memset(r, 0, sizeof(*r));
        assert_int_equal(sscanf(buf, "HTTP/1.1 %d ", &r->status), 1);
        size_t hn = (size_t)(end + 4 - buf);
        assert_true(hn < sizeof(r->head));
        memcpy(r->head, buf, hn);
        r->body = need > hn ? json_loadb(end + 4, need - hn, 0, NULL) : NULL;
}

static int error_code(const json_t *j) {
        return (int)json_integer_value(json_object_get(json_object_get(j, "error"), "code"));
}

/* The gateway answers wire request g (borrowed) with text, "result":{...} or "error":{...}. */
static void gw_answer(struct fixture *f, const json_t *g, const char *member) {
        char ans[1024];
        snprintf(ans, sizeof(ans), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",%s}\n", str((json_t *)g, "id"), member);
        say(f->gw, ans);
}

/* A modern POST needs no session: forwarded with its id rewritten and its
 * _meta intact (on record as an endpoint_request with its transport),
 * answered JSON without Mcp-Session-Id; on one connection,
 * one after another; Mcp-Name in plain and base64 form, for names and
 * URIs; unknown Mcp-Param-* accepted. */
static void test_modern_post(void **state) {
        struct fixture *f = *state;
        static const struct {
                const char *headers, *body, *method;
        } ok[] = {
                {MODERN_HEADERS("tools/call") "Mcp-Name: echo\r\nMcp-Param-Region: eu\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{}," META_OK "}}",
                 "tools/call"},
                {MODERN_HEADERS("tools/call") "Mcp-Name: =?base64?aMOpIHgg?=\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"h\\u00e9 x \"," META_OK "}}",
                 "tools/call"},
                {MODERN_HEADERS("prompts/get") "Mcp-Name: p1\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"prompts/get\",\"params\":{\"name\":\"p1\"," META_OK "}}", "prompts/get"},
                {MODERN_HEADERS("resources/read") "Mcp-Name: file:///a/b\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///a/b\"," META_OK "}}",
                 "resources/read"},
                {MODERN_HEADERS("server/discover"),
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"server/discover\",\"params\":{" META_OK "}}", "server/discover"},
        };
        int c = connect_client(f);
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                post(c, ok[i].headers, ok[i].body);
                json_t *g = hear(f, f->gw);
                assert_non_null(g);
                assert_string_equal(str(g, "method"), ok[i].method);
                assert_true(str(g, "id") && str(g, "id")[0] == 'm');
                assert_string_equal("2026-07-28",
                                    json_string_value(json_object_get(json_object_get(json_object_get(g, "params"), "_meta"),
                                                                      "io.modelcontextprotocol/protocolVersion")));
                /* On record before it went, with its transport: the id is
                 * the one the gateway's records carry. */
                char id[64], method[64];
                snprintf(id, sizeof(id), "\"id\":\"%s\"", str(g, "id"));
                snprintf(method, sizeof(method), "\"method\":\"%s\"", ok[i].method);
                if (!audit_line(f, "\"event\":\"endpoint_request\"", "\"transport\":\"http\"", id, method))
                        fail_msg("case %zu: no endpoint_request record for %s", i, str(g, "id"));
                gw_answer(f, g, "\"result\":{\"resultType\":\"complete\"}");
                json_decref(g);
                struct http_resp r;
                http_read(f, c, &r);
                assert_int_equal(r.status, 200);
                assert_non_null(strstr(r.head, "Content-Type: application/json"));
                assert_null(strstr(r.head, "Mcp-Session-Id"));
                assert_int_equal(json_integer_value(json_object_get(r.body, "id")), 5);
                assert_string_equal(str(r.body, "result.resultType"), "complete");
                json_decref(r.body);
        }
        close(c);
}

/* Every header rule of a modern POST: 400, the code, data.reason, the
 * request's id; nothing reaches the gateway; each refusal is audited and
 * the connection serves the next request. */
static void test_modern_header_refusals(void **state) {
        struct fixture *f = *state;
#define CALL(name) "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"" name "\"," META_OK "}}"
        static const struct {
                const char *headers, *body;
                int code;
                const char *reason;
        } cases[] = {
                /* MCP-Protocol-Version */
                {"Mcp-Method: tools/call\r\nMcp-Name: echo\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                /* A header that differs from the body is a mismatch, whatever the versions. */
                {"MCP-Protocol-Version: 2099-01-01\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n", CALL("echo"), -32020,
                 "endpoint.header_mismatch"},
                {"MCP-Protocol-Version: 2025-11-25\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"_meta\":{"
                 "\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\"}}}",
                 -32022, "endpoint.protocol_version"},
                {MODERN_HEADERS("tools/call") "Mcp-Name: echo\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"_meta\":{"
                 "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-29\"}}}",
                 -32020, "endpoint.header_mismatch"},
                /* Mcp-Method */
                {"MCP-Protocol-Version: 2026-07-28\r\nMcp-Name: echo\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                {MODERN_HEADERS("tools/list") "Mcp-Name: echo\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                {MODERN_HEADERS("Tools/call") "Mcp-Name: echo\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                /* Mcp-Name */
                {MODERN_HEADERS("tools/call"), CALL("echo"), -32020, "endpoint.header_mismatch"},
                {MODERN_HEADERS("tools/call") "Mcp-Name: other\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                {MODERN_HEADERS("tools/call") "Mcp-Name: =?base64?b3RoZXI=?=\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                {MODERN_HEADERS("tools/call") "Mcp-Name: =?base64?ZWNobw?=\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                {MODERN_HEADERS("tools/call") "Mcp-Name: =?BASE64?ZWNobw==?=\r\n", CALL("echo"), -32020, "endpoint.header_mismatch"},
                /* No params.name to compare: the params are invalid. */
                {MODERN_HEADERS("tools/call") "Mcp-Name: echo\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{" META_OK "}}", -32602, "endpoint.invalid_params"},
                {MODERN_HEADERS("prompts/get"), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"prompts/get\",\"params\":{\"name\":\"p\"," META_OK "}}",
                 -32020, "endpoint.header_mismatch"},
                {MODERN_HEADERS("resources/read") "Mcp-Name: file:///b\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///a\"," META_OK "}}", -32020,
                 "endpoint.header_mismatch"},
                /* The modern header on a request whose _meta lacks the
                 * version, or that has none: the envelope is missing. */
                {MODERN_HEADERS("server/discover"), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"server/discover\",\"params\":{}}", -32602,
                 "endpoint.invalid_params"},
                {MODERN_HEADERS("server/discover"),
                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"server/discover\",\"params\":{\"_meta\":{"
                 "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
                 -32602, "endpoint.invalid_params"},
        };
#undef CALL
        int c = connect_client(f);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                post(c, cases[i].headers, cases[i].body);
                struct http_resp r;
                http_read(f, c, &r);
                if (r.status != 400 || error_code(r.body) != cases[i].code)
                        fail_msg("case %zu: status %d code %d", i, r.status, error_code(r.body));
                assert_string_equal(str(r.body, "error.data.reason"), cases[i].reason);
                assert_int_equal(json_integer_value(json_object_get(r.body, "id")), 9);
                assert_null(strstr(r.head, "Connection: close"));
                if (cases[i].code == -32022) {
                        json_t *data = json_object_get(json_object_get(r.body, "error"), "data");
                        assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"), 0)), "2026-07-28");
                        assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"), 1)), "2025-11-25");
                        assert_string_equal(str(data, "requested"), "2025-11-25");
                }
                json_decref(r.body);
        }
        quiet(f, f->gw);
        assert_int_equal(audited(f, "endpoint.header_mismatch"), 13);
        assert_int_equal(audited(f, "endpoint.protocol_version"), 1);
        assert_int_equal(audited(f, "endpoint.invalid_params"), 3);
        close(c);
}

/* Mcp-Param-*: a tools/call's arguments its tool annotates (x-mcp-header)
 * must be mirrored in their headers, equal once decoded (integers
 * numerically, booleans as true/false, the base64 form for any text),
 * header names in any case; a mismatch, a missing or extra or repeated
 * header, or one holding a byte a header may not carry plainly is 400
 * -32020, audited, never forwarded. Unannotated arguments, unknown
 * Mcp-Param-* fields and tools without annotations are not checked. */
static void test_modern_param_headers(void **state) {
        struct fixture *f = *state;
#define HDR(args) "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"hdr\",\"arguments\":" args "," META_OK "}}"
#define H MODERN_HEADERS("tools/call") "Mcp-Name: hdr\r\n"
        static const struct {
                const char *headers, *body;
                bool ok;
        } cases[] = {
                {H "Mcp-Param-Region: eu-west1\r\nMcp-Param-Count: 7\r\nMcp-Param-Dry: true\r\nMcp-Param-Zone: b\r\n",
                 HDR("{\"region\":\"eu-west1\",\"count\":7,\"dry\":true,\"opts\":{\"zone\":\"b\"},\"q\":\"x\",\"list\":[\"i\"]}"), true},
                /* Numerically, decoded, any case; absent and null values need none; others are ignored. */
                {H "mcp-param-count: 7.0\r\nMCP-PARAM-REGION: =?base64?SGVsbG8sIOS4lueVjA==?=\r\nMcp-Param-Other: 1\r\n",
                 HDR("{\"region\":\"Hello, \\u4e16\\u754c\",\"count\":7,\"dry\":null}"), true},
                {H "Mcp-Param-Dry: false\r\n", HDR("{\"dry\":false,\"opts\":{}}"), true},
                {H, HDR("{}"), true},
                {H "Mcp-Param-Region: =?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=\r\n", HDR("{\"region\":\"=?base64?literal?=\"}"), true},
                /* Refused. */
                {H, HDR("{\"region\":\"eu\"}"), false},
                {H "Mcp-Param-Region: us\r\n", HDR("{\"region\":\"eu\"}"), false},
                {H "Mcp-Param-Region: eu\r\nMcp-Param-Region: eu\r\n", HDR("{\"region\":\"eu\"}"), false},
                {H "Mcp-Param-Region: eu\r\n", HDR("{\"q\":\"eu\"}"), false},
                {H "Mcp-Param-Region: eu\r\n", HDR("{\"region\":null}"), false},
                {H "Mcp-Param-Count: 8\r\n", HDR("{\"count\":7}"), false},
                {H "Mcp-Param-Count: 7abc\r\n", HDR("{\"count\":7}"), false},
                {H "Mcp-Param-Count: +7\r\n", HDR("{\"count\":7}"), false},
                {H "Mcp-Param-Dry: True\r\n", HDR("{\"dry\":true}"), false},
                {H "Mcp-Param-Dry: 1\r\n", HDR("{\"dry\":true}"), false},
                {H "Mcp-Param-Zone: a\r\n", HDR("{\"opts\":{\"zone\":\"b\"}}"), false},
                {H, HDR("{\"opts\":{\"zone\":\"b\"}}"), false},
                {H "Mcp-Param-Region: =?base64?ZXU?=\r\n", HDR("{\"region\":\"eu\"}"), false},
                {H "Mcp-Param-Region: \xc3\xa9\r\n", HDR("{\"region\":\"\\u00e9\"}"), false},
                {H "Mcp-Param-Region: {}\r\n", HDR("{\"region\":{}}"), false},
        };
#undef H
#undef HDR
        int c = connect_client(f);
        int refused = 0;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                post(c, cases[i].headers, cases[i].body);
                if (cases[i].ok) {
                        json_t *g = hear(f, f->gw);
                        if (!g)
                                fail_msg("case %zu: not forwarded", i);
                        assert_string_equal(str(g, "params.name"), "hdr");
                        gw_answer(f, g, "\"result\":{\"resultType\":\"complete\"}");
                        json_decref(g);
                }
                struct http_resp r;
                http_read(f, c, &r);
                if (cases[i].ok ? r.status != 200 : r.status != 400 || error_code(r.body) != -32020)
                        fail_msg("case %zu: status %d code %d: %s", i, r.status, error_code(r.body), str(r.body, "error.message"));
                if (!cases[i].ok) {
                        assert_string_equal(str(r.body, "error.data.reason"), "endpoint.header_mismatch");
                        assert_int_equal(json_integer_value(json_object_get(r.body, "id")), 9);
                        refused++;
                        quiet(f, f->gw);
                }
                json_decref(r.body);
        }
        assert_int_equal(audited(f, "endpoint.header_mismatch"), refused);
        /* A tool the callback does not know: nothing to check. */
        post(c, MODERN_HEADERS("tools/call") "Mcp-Name: echo\r\nMcp-Param-Region: us\r\n",
             "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"region\":\"eu\"}," META_OK "}}");
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        json_decref(g);
        close(c);
}

/* The answer's status follows its error (JSON answers). */
static void test_modern_status(void **state) {
        struct fixture *f = *state;
        static const struct {
                const char *meta, *member;
                int status;
        } cases[] = {
                {META_OK, "\"result\":{\"resultType\":\"complete\"}", 200},
                {META_OK, "\"error\":{\"code\":-32022,\"message\":\"x\",\"data\":{\"supported\":[],\"requested\":\"x\"}}", 400},
                {META_OK, "\"error\":{\"code\":-32021,\"message\":\"x\"}", 400},
                {META_OK, "\"error\":{\"code\":-32601,\"message\":\"x\"}", 404},
                {META_OK, "\"error\":{\"code\":-32602,\"message\":\"unknown tool\"}", 200},
                {"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}",
                 "\"error\":{\"code\":-32602,\"message\":\"clientCapabilities missing\"}", 400},
                {META_OK, "\"error\":{\"code\":-32001,\"message\":\"denied\"}", 200},
        };
        int c = connect_client(f);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char body[512];
                snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"tools/list\",\"params\":{%s}}", cases[i].meta);
                post(c, MODERN_HEADERS("tools/list"), body);
                json_t *g = hear(f, f->gw);
                assert_non_null(g);
                gw_answer(f, g, cases[i].member);
                json_decref(g);
                struct http_resp r;
                http_read(f, c, &r);
                if (r.status != cases[i].status)
                        fail_msg("case %zu: status %d", i, r.status);
                assert_string_equal(str(r.body, "id"), "q");
                json_decref(r.body);
        }
        close(c);
}

/* Sessions and eras over HTTP: a modern POST naming a legacy session is
 * refused (400, -32600, audited, no session id echoed), an unknown session
 * id is ignored; GET and DELETE without a session are 405 (Allow: POST)
 * with a JSON-RPC body; legacy requests are as before. */
static void test_modern_http_sessions(void **state) {
        struct fixture *f = *state;
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"capabilities\":{}}}";
        static const char modern[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" META_OK "}}";
        static const char legacy[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}";
        int c = connect_client(f);
        /* A legacy session, started without MCP-Protocol-Version. */
        post(c, "", init);
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        gw_answer(f, g, "\"result\":{}");
        json_decref(g);
        struct http_resp r;
        http_read(f, c, &r);
        assert_int_equal(r.status, 200);
        char *p = strstr(r.head, "Mcp-Session-Id: ");
        assert_non_null(p);
        char sid[33], h[256];
        memcpy(sid, p + 16, 32);
        sid[32] = '\0';
        json_decref(r.body);
        /* Modern with that session: refused. */
        snprintf(h, sizeof(h), MODERN_HEADERS("tools/list") "Mcp-Session-Id: %s\r\n", sid);
        post(c, h, modern);
        http_read(f, c, &r);
        assert_int_equal(r.status, 400);
        assert_int_equal(error_code(r.body), -32600);
        assert_string_equal(str(r.body, "error.data.reason"), "endpoint.era_mixed");
        assert_null(strstr(r.head, "Mcp-Session-Id"));
        json_decref(r.body);
        quiet(f, f->gw);
        assert_int_equal(audited(f, "endpoint.era_mixed"), 1);
        /* Modern with an unknown session id: served without a session. */
        post(c, MODERN_HEADERS("tools/list") "Mcp-Session-Id: 0123456789abcdef0123456789abcdef\r\n", modern);
        g = hear(f, f->gw);
        assert_non_null(g);
        gw_answer(f, g, "\"result\":{}");
        json_decref(g);
        http_read(f, c, &r);
        assert_int_equal(r.status, 200);
        assert_null(strstr(r.head, "Mcp-Session-Id"));
        json_decref(r.body);
        /* Legacy, in its session, with its version header: as before (the
         * session id echoed). */
        snprintf(h, sizeof(h), "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\n", sid);
        post(c, h, legacy);
        g = hear(f, f->gw);
        assert_non_null(g);
        gw_answer(f, g, "\"result\":{}");
        json_decref(g);
        http_read(f, c, &r);
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.head, sid));
        json_decref(r.body);
        /* Legacy without a session: 400 as before; a request without the
         * envelope under the modern version: a modern request missing its
         * _meta (400, -32602, its id), on a session or not. */
        post(c, "", legacy);
        http_read(f, c, &r);
        assert_int_equal(r.status, 400);
        assert_string_equal(str(r.body, "error.data.reason"), "endpoint.session_required");
        json_decref(r.body);
        snprintf(h, sizeof(h), "MCP-Protocol-Version: 2026-07-28\r\nMcp-Session-Id: %s\r\n", sid);
        post(c, h, legacy);
        http_read(f, c, &r);
        assert_int_equal(r.status, 400);
        assert_int_equal(error_code(r.body), -32602);
        assert_string_equal(str(r.body, "error.data.reason"), "endpoint.invalid_params");
        assert_int_equal(json_integer_value(json_object_get(r.body, "id")), 3);
        json_decref(r.body);
        quiet(f, f->gw);
        /* GET and DELETE without a session: 405. */
        say(c, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\r\n");
        http_read(f, c, &r);
        assert_int_equal(r.status, 405);
        assert_non_null(strstr(r.head, "Allow: POST\r\n"));
        assert_string_equal(str(r.body, "error.data.reason"), "endpoint.http_method");
        json_decref(r.body);
        say(c, "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\n\r\n");
        http_read(f, c, &r);
        assert_int_equal(r.status, 405);
        assert_non_null(strstr(r.head, "Allow: POST\r\n"));
        assert_non_null(r.body);
        json_decref(r.body);
        /* DELETE with the session: as before. */
        snprintf(h, sizeof(h), "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nMcp-Session-Id: %s\r\n\r\n", sid);
        say(c, h);
        char buf[4096];
        assert_true(read_until(f, c, buf, sizeof(buf), "\r\n\r\n"));
        assert_non_null(strstr(buf, "HTTP/1.1 200 "));
        close(c);
}

/* A modern request asking for progress gets an SSE answer: its progress
 * (the client's token restored), then its answer. A client that closes
 * the connection of a modern request in flight, JSON or SSE, cancels it at
 * the gateway; the late answer goes nowhere. */
static void test_modern_sse_and_cancel(void **state) {
        struct fixture *f = *state;
        static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{"
                                   "\"progressToken\":\"tk\",\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
        char buf[8192], n[512];
        int c = connect_client(f);
        post(c, MODERN_HEADERS("tools/call") "Mcp-Name: slow\r\n", call);
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        assert_true(read_until(f, c, buf, sizeof(buf), "text/event-stream"));
        assert_null(strstr(buf, "Mcp-Session-Id"));
        snprintf(n, sizeof(n), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"%s\",\"progress\":1}}\n",
                 str(g, "params._meta.progressToken"));
        say(f->gw, n);
        assert_true(read_until(f, c, buf, sizeof(buf), "\"progressToken\":\"tk\""));
        gw_answer(f, g, "\"result\":{\"resultType\":\"complete\"}");
        json_decref(g);
        assert_true(read_until(f, c, buf, sizeof(buf), "0\r\n\r\n"));
        assert_non_null(strstr(buf, "\"id\":4"));
        close(c);
        quiet(f, f->gw);
        /* Closed while waiting: JSON (Accept: application/json) and SSE.
         * (A client that only stops sending is not gone:
         * test_modern_half_close.) */
        for (int sse = 0; sse < 2; sse++) {
                c = connect_client(f);
                char req[2048];
                const char *body = sse == 1 ? call
                                       : "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"," META_OK "}}";
                snprintf(req, sizeof(req),
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: %s\r\nContent-Type: application/json\r\n"
                         MODERN_HEADERS("tools/call") "Mcp-Name: slow\r\nContent-Length: %zu\r\n\r\n%s",
                         sse == 1 ? "text/event-stream" : "application/json", strlen(body), body);
                say(c, req);
                g = hear(f, f->gw);
                assert_non_null(g);
                if (sse == 1)
                        assert_true(read_until(f, c, buf, sizeof(buf), "text/event-stream"));
                close(c);
                json_t *x = hear(f, f->gw);
                assert_non_null(x);
                assert_string_equal(str(x, "method"), "notifications/cancelled");
                assert_string_equal(str(x, "params.requestId"), str(g, "id"));
                json_decref(x);
                /* The late answer finds no one (and nothing breaks). */
                gw_answer(f, g, "\"result\":{}");
                json_decref(g);
                quiet(f, f->gw);
        }
        /* A legacy request's connection closing cancels nothing (its session
         * lives on): as before. */
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"capabilities\":{}}}";
        c = connect_client(f);
        post(c, "", init);
        g = hear(f, f->gw);
        assert_non_null(g);
        close(c);
        quiet(f, f->gw);
        json_decref(g);
}

/* Reads fd into buf until its end (the loop runs meanwhile). True when the
 * end came. */
static bool read_to_end(struct fixture *f, int fd, char *buf, size_t size) {
        size_t len = 0;
        buf[0] = '\0';
        for (int round = 0; round < 600; round++) {
                sd_event_run(f->e, 5000);
                for (;;) {
                        ssize_t n = read(fd, buf + len, size - 1 - len);
                        if (n > 0) {
                                len += (size_t)n;
                                buf[len] = '\0';
                                continue;
                        }
                        if (n == 0 || (errno != EAGAIN && errno != EINTR))
                                return true;
                        break;
                }
        }
        return false;
}

/* A client that stops sending once its modern request is complete
 * (shutdown(SHUT_WR), a half-close) still gets its answer, over a Unix
 * socket and over TCP, whether the answer comes at once (JSON), after the
 * endpoint asked whether the client is still there (the JSON answer turned
 * into an SSE answer, a comment line first), or on an SSE answer; nothing
 * is cancelled, and the connection closes after the answer. Over TCP, where
 * a close is the same FIN, a client that has closed is found gone by that
 * asking and its request is cancelled, JSON or SSE. */
static void test_modern_half_close(void **state) {
        struct fixture *f = *state;
        static const char json_call[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"," META_OK "}}";
        static const char sse_call[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{"
                                       "\"progressToken\":\"tk\",\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                       "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
        static char buf[16384];
        for (int tcp = 0; tcp < 2; tcp++)
                for (int when = 0; when < 3; when++) { /* JSON at once, JSON after the asking, SSE */
                        int c = tcp ? connect_client_tcp(f) : connect_client(f);
                        post(c, MODERN_HEADERS("tools/call") "Mcp-Name: slow\r\n", when == 2 ? sse_call : json_call);
                        json_t *g = hear(f, f->gw);
                        assert_non_null(g);
                        assert_int_equal(shutdown(c, SHUT_WR), 0);
                        if (when >= 1 && !read_until(f, c, buf, sizeof(buf), ": waiting\n\n"))
                                fail_msg("tcp %d case %d: not asked: %s", tcp, when, buf);
                        else
                                for (int round = 0; round < 20; round++)
                                        sd_event_run(f->e, 1000);
                        gw_answer(f, g, "\"result\":{\"resultType\":\"complete\",\"content\":[]}");
                        json_decref(g);
                        size_t before = strlen(buf);
                        char *rest = when >= 1 ? buf + before : buf;
                        if (!read_to_end(f, c, rest, sizeof(buf) - (size_t)(rest - buf)))
                                fail_msg("tcp %d case %d: the connection did not end after the answer", tcp, when);
                        if (when == 0) {
                                assert_non_null(strstr(buf, "HTTP/1.1 200 "));
                                assert_non_null(strstr(buf, "Content-Type: application/json"));
                                assert_null(strstr(buf, ": waiting"));
                        } else {
                                assert_non_null(strstr(buf, "HTTP/1.1 200 "));
                                assert_non_null(strstr(buf, "Content-Type: text/event-stream"));
                                assert_non_null(strstr(buf, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,"));
                                assert_non_null(strstr(buf, "0\r\n\r\n"));
                        }
                        if (!strstr(buf, "\"resultType\":\"complete\""))
                                fail_msg("tcp %d case %d: no answer in %s", tcp, when, buf);
                        quiet(f, f->gw); /* nothing was cancelled */
                        close(c);
                }
        /* TCP: a client that closed, not half-closed, is found gone, JSON
         * (after the asking) or SSE (at once): the request is cancelled. */
        for (int sse = 0; sse < 2; sse++) {
                int c = connect_client_tcp(f);
                post(c, MODERN_HEADERS("tools/call") "Mcp-Name: slow\r\n", sse ? sse_call : json_call);
                json_t *g = hear(f, f->gw);
                assert_non_null(g);
                if (sse) /* read, so that the close is a FIN, not a reset */
                        assert_true(read_until(f, c, buf, sizeof(buf), "text/event-stream"));
                close(c);
                json_t *x = hear(f, f->gw);
                assert_non_null(x);
                assert_string_equal(str(x, "method"), "notifications/cancelled");
                assert_string_equal(str(x, "params.requestId"), str(g, "id"));
                json_decref(x);
                json_decref(g);
        }
}

/* The command endpoint: a connection speaks one era. Modern without
 * initialize is forwarded; initialize after it is refused -32600 and not
 * forwarded; a modern request after initialize likewise; both audited. */
static void test_command_eras(void **state) {
        struct fixture *f = *state;
        int m = connect_client(f);
        say(m, "GLOVE-MCP-STDIO/1\n");
        say(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META_OK "}}\n");
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        assert_string_equal(str(g, "method"), "server/discover");
        gw_answer(f, g, "\"result\":{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\"]}");
        json_decref(g);
        json_t *r = hear(f, m);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), 1);
        json_decref(r);
        say(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}\n");
        r = hear(f, m);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), 2);
        assert_int_equal(error_code(r), -32600);
        assert_string_equal(str(r, "error.data.reason"), "endpoint.era_mixed");
        json_decref(r);
        quiet(f, f->gw);
        /* Still modern: the next modern request goes through; a modern
         * session gets no broadcast notifications. */
        say(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{" META_OK "}}\n");
        g = hear(f, f->gw);
        assert_non_null(g);
        json_decref(g);
        /* A legacy session: a modern request after initialize is refused. */
        int l = session(f, "{}");
        say(l, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{" META_OK "}}\n");
        r = hear(f, l);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), 4);
        assert_int_equal(error_code(r), -32600);
        assert_string_equal(str(r, "error.data.reason"), "endpoint.era_mixed");
        json_decref(r);
        quiet(f, f->gw);
        assert_int_equal(audited(f, "endpoint.era_mixed"), 2);
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n");
        r = hear(f, l);
        assert_non_null(r);
        json_decref(r);
        quiet(f, m);
        /* The modern connection ends with its request in flight: cancelled. */
        close(m);
        g = hear(f, f->gw);
        assert_non_null(g);
        assert_string_equal(str(g, "method"), "notifications/cancelled");
        json_decref(g);
        close(l);
}

/* The run ends with client sessions open (an HTTP session nobody
 * DELETEd, a command connection still there, each with a request in
 * flight): each one's close is on record, reason run_ended, as every other
 * end of a session is. Nothing more goes to the gateway: the run tells it
 * the agent is gone, which ends its calls. */
static void test_sessions_closed_at_run_end(void **state) {
        struct fixture *f = *state;
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"capabilities\":{}}}";
        int c = connect_client(f);
        post(c, "", init);
        json_t *g = hear(f, f->gw);
        assert_non_null(g);
        gw_answer(f, g, "\"result\":{}");
        json_decref(g);
        struct http_resp r;
        http_read(f, c, &r);
        assert_int_equal(r.status, 200);
        json_decref(r.body);
        int s = session(f, "{}");
        say(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}\n");
        g = hear(f, f->gw);
        assert_non_null(g);
        json_decref(g);
        assert_int_equal(audited(f, "run_ended"), 0);
        glove_mcp_endpoint_free(f->ep);
        f->ep = NULL;
        assert_int_equal(audited(f, "run_ended"), 2);
        static char buf[1 << 16];
        ssize_t n = pread(f->audit.fd, buf, sizeof(buf) - 1, 0);
        assert_true(n > 0);
        buf[n] = '\0';
        assert_non_null(strstr(buf, "\"phase\":\"close\",\"session\":1,\"transport\":\"http\",\"reason\":\"run_ended\",\"cancelled\":0"));
        assert_non_null(strstr(buf, "\"phase\":\"close\",\"session\":2,\"transport\":\"command\",\"reason\":\"run_ended\",\"cancelled\":1"));
        n = read(f->gw, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        assert_null(strstr(buf, "notifications/cancelled"));
        close(c);
        close(s);
}

/* ---- what the endpoint owes the gateway ---- */

/* Writes all of text to the non-blocking fd, running the loop meanwhile,
 * then until the endpoint has read it all (SIOCOUTQ) and a little more. */
static void say_all(struct fixture *f, int fd, const char *text, size_t n) {
        size_t off = 0;
        for (int round = 0; round < 20000 && off < n; round++) {
                ssize_t w = write(fd, text + off, n - off);
                if (w > 0)
                        off += (size_t)w;
                sd_event_run(f->e, 1000);
        }
        assert_int_equal(off, n);
        int queued = 1;
        for (int round = 0; round < 20000 && queued > 0; round++) {
                assert_int_equal(ioctl(fd, SIOCOUTQ, &queued), 0);
                sd_event_run(f->e, 1000);
        }
        assert_int_equal(queued, 0);
        for (int round = 0; round < 5; round++)
                sd_event_run(f->e, 1000);
}

/* How many lines on fd (read now, without blocking) carry text. */
static int lines_with(int fd, const char *text) {
        static char buf[1 << 16];
        static size_t len;
        int count = 0;
        ssize_t n;
        while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
                len += (size_t)n;
                buf[len] = '\0';
                char *nl;
                while ((nl = strchr(buf, '\n'))) {
                        *nl = '\0';
                        count += strstr(buf, text) != NULL;
                        len -= (size_t)(nl + 1 - buf);
                        memmove(buf, nl + 1, len + 1);
                }
        }
        return count;
}

/* Everything the endpoint sends the gateway until it is quiet (the loop
 * runs), as parsed lines appended to out. */
static void drain_gateway(struct fixture *f, json_t *out) {
        size_t cap = 64 << 20, len = 0;
        char *buf = malloc(cap);
        assert_non_null(buf);
        for (int idle = 0; idle < 100;) {
                sd_event_run(f->e, 1000);
                ssize_t n;
                bool got = false;
                while (len < cap && (n = read(f->gw, buf + len, cap - len)) > 0) {
                        len += (size_t)n;
                        got = true;
                }
                idle = got ? 0 : idle + 1;
        }
        assert_true(len < cap);
        for (char *p = buf, *nl; (nl = memchr(p, '\n', len - (size_t)(p - buf))); p = nl + 1) {
                json_t *j = json_loadb(p, (size_t)(nl - p), 0, NULL);
                assert_non_null(j);
                json_array_append_new(out, j);
        }
        free(buf);
}

/* Connections and sessions that end while the queue towards the gateway is
 * full (the endpoint's memory budget at its limit, the gateway not
 * reading) still cancel every request they had in flight and answer every
 * request of the gateway they held: nothing owed to the gateway is lost
 * for want of room; it goes as soon as the queue drains. */
static void test_owed_at_budget_limit(void **state) {
        struct fixture *f = *state;
        /* Three modern HTTP requests in flight. */
        int h[3];
        json_t *requests = json_object(), *cancelled = json_object();
        for (int i = 0; i < 3; i++) {
                h[i] = connect_client(f);
                post(h[i], MODERN_HEADERS("tools/call") "Mcp-Name: slow\r\n",
                     "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"," META_OK "}}");
                json_t *g = hear(f, f->gw);
                assert_non_null(g);
                json_object_set_new(requests, str(g, "id"), json_true());
                json_decref(g);
        }
        /* A legacy command session holding a request of the gateway. */
        int s = session(f, "{\"sampling\":{}}");
        say(f->gw, "{\"jsonrpc\":\"2.0\",\"id\":\"glove-1\",\"method\":\"sampling/createMessage\",\"params\":{}}\n");
        json_t *q = hear(f, s);
        assert_non_null(q);
        json_decref(q);
        /* The gateway stops reading. The session's calls fill the queue
         * towards it, until the budget refuses one, then smaller ones until
         * even one shorter than a cancellation finds no room. */
        size_t size = 900 * 1024;
        int id = 100, refused = 0;
        char *line = malloc(size + 256);
        assert_non_null(line);
        while (size >= 48) {
                size_t pad = size > 96 ? size - 96 : 0;
                int n = snprintf(line, 128, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"a\":\"", id++);
                memset(line + n, 'x', pad);
                memcpy(line + n + pad, "\"}}\n", 5);
                say_all(f, s, line, strlen(line));
                int r = lines_with(s, "endpoint.memory_full");
                if (r) {
                        refused += r;
                        size /= 2;
                }
                assert_true(id < 100 + 200);
        }
        free(line);
        assert_true(refused > 0);
        /* Every one of them goes now, the gateway still not reading. */
        close(s);
        for (int i = 0; i < 3; i++)
                close(h[i]);
        for (int round = 0; round < 50; round++)
                sd_event_run(f->e, 1000);
        json_t *got = json_array();
        drain_gateway(f, got);
        bool answered = false;
        size_t i;
        json_t *m;
        json_array_foreach(got, i, m) {
                const char *method = str(m, "method");
                if (method && strcmp(method, "tools/call") == 0)
                        json_object_set_new(requests, str(m, "id"), json_true());
                else if (method && strcmp(method, "notifications/cancelled") == 0)
                        json_object_set_new(cancelled, str(m, "params.requestId"), json_true());
                else if (str(m, "id") && strcmp(str(m, "id"), "glove-1") == 0)
                        answered = str(m, "error.data.reason") && strcmp(str(m, "error.data.reason"), "endpoint.session_ended") == 0;
        }
        /* The three HTTP requests and the session's forwarded calls. */
        assert_true(json_object_size(requests) > 3 + 10);
        const char *key;
        json_t *v;
        json_object_foreach(requests, key, v) {
                if (!json_object_get(cancelled, key))
                        fail_msg("%s was never cancelled (%zu of %zu requests were)", key, json_object_size(cancelled),
                                 json_object_size(requests));
        }
        assert_int_equal(json_object_size(cancelled), json_object_size(requests));
        assert_true(answered);
        json_decref(requests);
        json_decref(cancelled);
        json_decref(got);
}

int main(void) {
        /* As glove run (mcp_endpoint.h): a write to a client that has gone
         * is an error, not a signal. */
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_same_ids_two_sessions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_server_requests, setup, teardown),
                cmocka_unit_test_setup_teardown(test_session_caps_and_related, setup, teardown),
                cmocka_unit_test_setup_teardown(test_progress_and_end, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_http_stream, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_without_memory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_large_body_after_head, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_body_skipped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modern_post, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modern_header_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modern_param_headers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modern_status, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modern_http_sessions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modern_sse_and_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modern_half_close, setup, teardown),
                cmocka_unit_test_setup_teardown(test_command_eras, setup, teardown),
                cmocka_unit_test_setup_teardown(test_owed_at_budget_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sessions_closed_at_run_end, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/services/proxy.h with real sockets, a real upstream thread and a
 * real audit file. INHERITED: sequential exchanges on one stream and each
 * way it is poisoned (pipelined input, an upstream timeout, an upstream
 * replaced between exchanges, oversized and empty requests, trailing
 * upstream bytes, an audit descriptor that fails); PATHNAME: the listener,
 * exchanges on several connections, a pipelined connection closed alone, a
 * peer of another uid; stop while waiting and during an exchange; start's
 * refusals release what was moved in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>

#include "glove/base/fd.h"
#include "glove/services/proxy.h"
#include "helpers.h"

#define SESSION "sess-1"
#define ALIAS "observe"
#define NOBODY 65534

struct env {
        char dir[FIXTURE_PATH_MAX];
        char svc[FIXTURE_PATH_MAX];   /* the upstream's parent, 0700 */
        char sock[FIXTURE_PATH_MAX];  /* svc/up.sock */
        char log[FIXTURE_PATH_MAX];   /* the audit file */
        char local[FIXTURE_PATH_MAX]; /* the compatibility directory */
        struct upstream up;
        bool up_running;
        struct glove_services_proxy *p;
        int guest; /* the guest's end (INHERITED) */
};

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        assert_non_null(e);
        fixture_tmpdir(e->dir, "proxy");
        fixture_join(e->svc, e->dir, "svc");
        assert_int_equal(mkdir(e->svc, 0700), 0);
        fixture_join(e->sock, e->svc, "up.sock");
        fixture_join(e->log, e->dir, "audit.jsonl");
        fixture_join(e->local, e->dir, "local");
        e->guest = -1;
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        glove_services_proxy_stop(e->p);
        if (e->guest >= 0)
                close(e->guest);
        if (e->up_running)
                upstream_stop(&e->up);
        fixture_rm_rf(e->dir);
        free(e);
        return 0;
}

static void start_upstream(struct env *e, enum upstream_mode mode) {
        upstream_start(&e->up, e->sock, mode);
        e->up_running = true;
}

static int open_audit(const struct env *e) {
        int fd = open(e->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        return fd;
}

static struct glove_services_endpoint *pin(const struct env *e, uid_t uid) {
        struct glove_error err = { 0 };
        struct glove_services_endpoint *ep = NULL;
        expect_ok(glove_services_endpoint_pin(e->sock, uid, &ep, &err), err);
        return ep;
}

static void start_proxy(struct env *e, enum glove_services_transport t, int guest_fd, int audit_fd, uid_t uid,
                        uint32_t timeout_ms) {
        struct glove_services_route route = { .alias = ALIAS, .upstream = pin(e, uid), .guest_fd = guest_fd };
        struct glove_services_proxy_config c = {
                .session_id = SESSION,
                .transport = t,
                .routes = &route,
                .n_routes = 1,
                .service_uid = uid,
                .audit_fd = audit_fd,
                .exchange_timeout_ms = timeout_ms,
        };
        struct glove_error err = { 0 };
        expect_ok(glove_services_proxy_start(&c, &e->p, &err), err);
}

/* An INHERITED proxy over a fresh socket pair; e->guest is the guest end. */
static void start_inherited(struct env *e, int audit_fd, uint32_t timeout_ms) {
        int sup = -1;
        struct glove_error err = { 0 };
        expect_ok(glove_services_inherited_pair(&sup, &e->guest, &err), err);
        struct stat st;
        assert_int_equal(fstat(e->guest, &st), 0);
        assert_true(S_ISSOCK(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_true(fcntl(e->guest, F_GETFD) & FD_CLOEXEC);
        assert_true(fcntl(e->guest, F_GETFL) & O_NONBLOCK);
        start_proxy(e, GLOVE_SERVICES_TRANSPORT_INHERITED, sup, audit_fd, geteuid(), timeout_ms);
}

static struct glove_services_route_status status(const struct env *e) {
        struct glove_services_route_status s;
        assert_int_equal(glove_services_proxy_status(e->p, 0, &s), 0);
        return s;
}

/* Waits (at most 10 s, a bound against hanging, not a timing assertion)
 * until route 0 has delivered and failed at least these counts. */
static void wait_counts(const struct env *e, uint64_t delivered, uint64_t failed) {
        for (int i = 0; i < 2000; i++) {
                struct glove_services_route_status s = status(e);
                if (s.delivered >= delivered && s.failed >= failed)
                        return;
                usleep(5000);
        }
        struct glove_services_route_status s = status(e);
        fail_msg("route never reached delivered %llu failed %llu (it has %llu, %llu)", (unsigned long long)delivered,
                 (unsigned long long)failed, (unsigned long long)s.delivered, (unsigned long long)s.failed);
}

static void wait_state(const struct env *e, enum glove_services_route_state want) {
        for (int i = 0; i < 2000; i++) {
                if (status(e).state == want)
                        return;
                usleep(5000);
        }
        fail_msg("route never reached state %d (it is %d)", (int)want, (int)status(e).state);
}

/* "phase:status" of every audit record, space-separated, into out; every
 * record is checked to hold exactly the seven fields of this session. */
static void audit_summary(const struct env *e, char *out, size_t cap) {
        char *text = NULL;
        size_t len = 0;
        struct glove_error err = { 0 };
        expect_ok(glove_file_read_bounded(AT_FDCWD, e->log, 0, 1 << 20, &text, &len, &err), err);
        out[0] = '\0';
        size_t o = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                json_error_t je;
                json_t *r = json_loads(line, JSON_REJECT_DUPLICATES, &je);
                if (!r)
                        fail_msg("audit line is not JSON: %s", line);
                assert_int_equal(json_object_size(r), 7);
                assert_string_equal(json_string_value(json_object_get(r, "event")), "local_service");
                assert_string_equal(json_string_value(json_object_get(r, "session_id")), SESSION);
                assert_string_equal(json_string_value(json_object_get(r, "alias")), ALIAS);
                assert_true(json_is_integer(json_object_get(r, "latency_ms")));
                int n = snprintf(out + o, cap - o, "%s%s:%s", o ? " " : "",
                                 json_string_value(json_object_get(r, "phase")),
                                 json_string_value(json_object_get(r, "status")));
                assert_true(n > 0 && (size_t)n < cap - o);
                o += (size_t)n;
                json_decref(r);
        }
        free(text);
}

#define expect_audit(e, want)                                                                                   \
        do {                                                                                                    \
                char got_[2048];                                                                                \
                audit_summary((e), got_, sizeof(got_));                                                         \
                if (strcmp(got_, (want)) != 0)                                                                  \
                        fail_msg("%s:%d: audit\n  want \"%s\"\n  got  \"%s\"", __FILE__, __LINE__, (want), got_); \
        } while (0)

#define PENDING_OK "delivery_pending:pending delivered:ok"

/* Sends req as a frame on fd and returns the response frame's length in
 * out, or the failure (with err). */
static int call(int fd, const char *req, uint8_t *out, size_t *len, struct glove_error *err) {
        int r = glove_services_frame_write(fd, -1, glove_time_monotonic_ms() + 5000, (const uint8_t *)req, strlen(req),
                                           err);
        if (r < 0)
                return r;
        return glove_services_frame_read(fd, -1, glove_time_monotonic_ms() + 10000, out, len, err);
}

static void call_ok(int fd, const char *req) {
        uint8_t out[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        expect_ok(call(fd, req, out, &len, &err), err);
        char want[256];
        snprintf(want, sizeof(want), "re:%s", req);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(out, want, len);
}

/* r and err say the stream was closed by the proxy: end of stream, or a
 * reset when the proxy closed its end with input still unread. */
#define expect_closed(r, err)                                                                                   \
        do {                                                                                                    \
                int rc_ = (r);                                                                                  \
                if ((rc_ != -EPIPE && rc_ != -ECONNRESET) || !(err).code ||                                     \
                    strcmp((err).code, "services.closed") != 0)                                                 \
                        fail_msg("%s:%d: want the stream closed, got %d %s (%s)", __FILE__, __LINE__, rc_,      \
                                 (err).code ? (err).code : "(none)", (err).message);                           \
        } while (0)

/* The guest sees the stream closed and never a response. */
static void expect_eof(int fd) {
        uint8_t out[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        expect_closed(glove_services_frame_read(fd, -1, glove_time_monotonic_ms() + 10000, out, &len, &err), err);
}

/* ---- INHERITED ---- */

static void test_inherited_exchanges(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        start_inherited(e, open_audit(e), 5000);
        call_ok(e->guest, "hello");
        wait_counts(e, 1, 0);
        call_ok(e->guest, "world");
        wait_counts(e, 2, 0);
        expect_audit(e, PENDING_OK " " PENDING_OK);
        assert_int_equal(atomic_load(&e->up.connections), 2);
        struct glove_services_route_status s = status(e);
        assert_int_equal(s.state, GLOVE_SERVICES_ROUTE_SERVING);
        assert_null(s.last_code);
        /* The guest leaves at a request boundary: closed, nothing recorded. */
        close(e->guest);
        e->guest = -1;
        wait_state(e, GLOVE_SERVICES_ROUTE_CLOSED);
        expect_audit(e, PENDING_OK " " PENDING_OK);
        assert_int_equal(status(e).failed, 0);
}

/* An agent that writes its next request as soon as it has read a
 * response is not pipelining: 200 exchanges back to back are all
 * delivered (the post-release check once took such a request for a
 * pipelined one now and then). */
static void test_inherited_back_to_back(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        start_inherited(e, open_audit(e), 5000);
        for (int i = 0; i < 200; i++)
                call_ok(e->guest, "next");
        wait_counts(e, 200, 0);
        assert_int_equal(status(e).state, GLOVE_SERVICES_ROUTE_SERVING);
}

/* An agent that reads a response's header and part of its body, then
 * writes its next request (however long after): pipelining, poisoned when
 * that request arrives; the first exchange stays delivered. */
static void test_inherited_partial_read(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        start_inherited(e, open_audit(e), 5000);
        assert_int_equal(send(e->guest, "\0\0\0\5hello", 9, MSG_NOSIGNAL), 9);
        char head[6];
        struct pollfd pf = { .fd = e->guest, .events = POLLIN };
        assert_int_equal(poll(&pf, 1, 10000), 1);
        wait_counts(e, 1, 0);
        /* The response is "re:hello" (8 bytes): read its header and 2. */
        ssize_t got = 0;
        while (got < 6) {
                ssize_t k = recv(e->guest, head + got, (size_t)(6 - got), 0);
                assert_true(k > 0);
                got += k;
        }
        assert_int_equal(send(e->guest, "\0\0\0\1x", 5, MSG_NOSIGNAL), 5);
        wait_state(e, GLOVE_SERVICES_ROUTE_POISONED);
        expect_audit(e, PENDING_OK " delivery_failed:services.pipelined");
        assert_int_equal(atomic_load(&e->up.connections), 1);
}

static void test_inherited_pipelined(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        start_inherited(e, open_audit(e), 5000);
        /* Two requests in one send: the second is queued when the first's
         * response would be released. */
        assert_int_equal(send(e->guest, "\0\0\0\1a\0\0\0\1b", 10, MSG_NOSIGNAL), 10);
        expect_eof(e->guest);
        wait_state(e, GLOVE_SERVICES_ROUTE_POISONED);
        expect_audit(e, "delivery_failed:services.pipelined");
        assert_string_equal(status(e).last_code, "services.pipelined");
        assert_int_equal(status(e).delivered, 0);
        /* The first request went upstream; the second never did. */
        assert_int_equal(atomic_load(&e->up.connections), 1);
}

static void test_inherited_timeout(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_SILENT);
        start_inherited(e, open_audit(e), 200);
        uint8_t out[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        expect_closed(call(e->guest, "hello", out, &len, &err), err);
        wait_state(e, GLOVE_SERVICES_ROUTE_POISONED);
        expect_audit(e, "delivery_failed:services.timeout");
        assert_int_equal(status(e).failed, 1);
}

static void test_inherited_replaced(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        start_inherited(e, open_audit(e), 5000);
        call_ok(e->guest, "one");
        wait_counts(e, 1, 0);
        /* Another socket at the same path (a new inode: the old one is
         * still bound while the new one is made). */
        struct upstream other;
        upstream_start(&other, e->sock, UPSTREAM_ECHO);
        uint8_t out[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        expect_closed(call(e->guest, "two", out, &len, &err), err);
        wait_state(e, GLOVE_SERVICES_ROUTE_POISONED);
        expect_audit(e, PENDING_OK " delivery_failed:services.endpoint_replaced");
        assert_int_equal(atomic_load(&other.connections), 0);
        upstream_stop(&other);
}

static void test_inherited_bad_lengths(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        const struct {
                const char *header;
                const char *record;
        } cases[] = {
                { "\0\0\x40\x01", "delivery_failed:services.frame_too_large" }, /* 16385 */
                { "\xff\xff\xff\xff", "delivery_failed:services.frame_too_large" },
                { "\0\0\0\0", "delivery_failed:services.frame_empty" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                (void)unlink(e->log);
                start_inherited(e, open_audit(e), 5000);
                assert_int_equal(send(e->guest, cases[i].header, 4, MSG_NOSIGNAL), 4);
                expect_eof(e->guest);
                wait_state(e, GLOVE_SERVICES_ROUTE_POISONED);
                expect_audit(e, cases[i].record);
                glove_services_proxy_stop(e->p);
                e->p = NULL;
                close(e->guest);
                e->guest = -1;
        }
        /* No upstream connection was ever made. */
        assert_int_equal(atomic_load(&e->up.connections), 0);
}

static void test_inherited_trailing(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_TRAILING);
        start_inherited(e, open_audit(e), 5000);
        uint8_t out[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        expect_closed(call(e->guest, "hello", out, &len, &err), err);
        wait_state(e, GLOVE_SERVICES_ROUTE_POISONED);
        expect_audit(e, "delivery_failed:services.frame_trailing");
}

static void test_inherited_audit_fails(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        int fd = open_audit(e);
        close(fd);
        int ro = open(e->log, O_RDONLY | O_CLOEXEC);
        assert_true(ro >= 0);
        start_inherited(e, ro, 5000);
        uint8_t out[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        /* The response was never released: end of stream, no bytes. */
        expect_closed(call(e->guest, "hello", out, &len, &err), err);
        wait_state(e, GLOVE_SERVICES_ROUTE_POISONED);
        assert_string_equal(status(e).last_code, "services.audit_failed");
        assert_int_equal(status(e).delivered, 0);
        assert_int_equal(atomic_load(&e->up.connections), 1);
        expect_audit(e, "");
}

static void test_stop_during_exchange(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_SILENT);
        start_inherited(e, open_audit(e), GLOVE_SERVICES_EXCHANGE_TIMEOUT_MAX_MS);
        struct glove_error err = { 0 };
        expect_ok(glove_services_frame_write(e->guest, -1, 0, (const uint8_t *)"hello", 5, &err), err);
        for (int i = 0; i < 2000 && atomic_load(&e->up.connections) == 0; i++)
                usleep(5000);
        assert_int_equal(atomic_load(&e->up.connections), 1);
        /* The worker waits for the upstream's response (a 10-minute
         * deadline): stop cancels it and joins. */
        glove_services_proxy_stop(e->p);
        e->p = NULL;
        expect_eof(e->guest);
        expect_audit(e, "delivery_failed:services.cancelled");
}

static void test_stop_while_waiting(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        start_inherited(e, open_audit(e), 5000);
        call_ok(e->guest, "hello");
        wait_counts(e, 1, 0);
        /* The worker waits for the next request with no deadline. */
        glove_services_proxy_stop(e->p);
        e->p = NULL;
        expect_eof(e->guest);
        expect_audit(e, PENDING_OK);
}

/* ---- PATHNAME ---- */

static int make_listener(struct env *e, const char *alias) {
        if (mkdir(e->local, 0700) < 0)
                assert_int_equal(errno, EEXIST);
        int dfd = open(e->local, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        struct glove_error err = { 0 };
        int lfd = -1;
        expect_ok(glove_services_pathname_listen(dfd, alias, &lfd, &err), err);
        assert_true(lfd >= 0);
        /* A second listener of the same name is refused. */
        int again = -1;
        glove_error_clear(&err);
        expect_error(glove_services_pathname_listen(dfd, alias, &again, &err), err, -EADDRINUSE, "services.listen");
        assert_int_equal(again, -1);
        glove_error_clear(&err);
        expect_error(glove_services_pathname_listen(dfd, "../x", &again, &err), err, -EINVAL,
                     "services.invalid_argument");
        close(dfd);
        return lfd;
}

static void local_path(const struct env *e, char out[FIXTURE_PATH_MAX]) {
        fixture_join(out, e->local, ALIAS);
}

static void test_pathname(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        int lfd = make_listener(e, ALIAS);
        char path[FIXTURE_PATH_MAX];
        local_path(e, path);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISSOCK(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(st.st_uid, geteuid());
        start_proxy(e, GLOVE_SERVICES_TRANSPORT_PATHNAME, lfd, open_audit(e), geteuid(), 5000);

        /* Two connections, one exchange each. */
        for (int i = 0; i < 2; i++) {
                int c = fixture_connect(path);
                assert_true(c >= 0);
                call_ok(c, i ? "second" : "first");
                /* One exchange per connection: then the proxy closes it. */
                expect_eof(c);
                close(c);
        }
        wait_counts(e, 2, 0);
        expect_audit(e, PENDING_OK " " PENDING_OK);

        /* A connection that leaves before any request records nothing. */
        int c = fixture_connect(path);
        assert_true(c >= 0);
        close(c);

        /* A pipelined connection is closed alone; the listener serves on. */
        c = fixture_connect(path);
        assert_true(c >= 0);
        assert_int_equal(send(c, "\0\0\0\1a\0\0\0\1b", 10, MSG_NOSIGNAL), 10);
        expect_eof(c);
        close(c);
        wait_counts(e, 2, 1);
        c = fixture_connect(path);
        assert_true(c >= 0);
        call_ok(c, "third");
        close(c);
        wait_counts(e, 3, 1);
        expect_audit(e, PENDING_OK " " PENDING_OK " delivery_failed:services.pipelined " PENDING_OK);
        assert_int_equal(status(e).state, GLOVE_SERVICES_ROUTE_SERVING);
        assert_int_equal(atomic_load(&e->up.connections), 4);

        /* Stop while the worker waits for a connection. */
        glove_services_proxy_stop(e->p);
        e->p = NULL;
}

static void test_pathname_peer_uid(void **state) {
        struct env *e = *state;
        SKIP_UNLESS_ROOT("a guest of another uid than the service needs files of another owner (root)");
        start_upstream(e, UPSTREAM_ECHO);
        /* The service uid is nobody; this (root) process is the guest. */
        assert_int_equal(chown(e->svc, NOBODY, NOBODY), 0);
        assert_int_equal(chown(e->sock, NOBODY, NOBODY), 0);
        int lfd = make_listener(e, ALIAS);
        start_proxy(e, GLOVE_SERVICES_TRANSPORT_PATHNAME, lfd, open_audit(e), NOBODY, 5000);
        char path[FIXTURE_PATH_MAX];
        local_path(e, path);
        int c = fixture_connect(path);
        assert_true(c >= 0);
        uint8_t out[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        expect_closed(call(c, "hello", out, &len, &err), err);
        close(c);
        wait_counts(e, 0, 1);
        expect_audit(e, "delivery_failed:services.peer_uid");
        assert_int_equal(atomic_load(&e->up.connections), 0);
        assert_int_equal(status(e).state, GLOVE_SERVICES_ROUTE_SERVING);
}

/* ---- start's refusals ---- */

static bool is_closed(int fd) {
        return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

static void test_start_refusals(void **state) {
        struct env *e = *state;
        start_upstream(e, UPSTREAM_ECHO);
        struct {
                const char *alias;
                enum glove_services_transport t;
                uint32_t timeout;
        } cases[] = {
                { "Bad", GLOVE_SERVICES_TRANSPORT_INHERITED, 5000 },
                { ALIAS, GLOVE_SERVICES_TRANSPORT_PATHNAME, 5000 }, /* a socket pair is not a listener */
                { ALIAS, GLOVE_SERVICES_TRANSPORT_INHERITED, 0 },
                { ALIAS, GLOVE_SERVICES_TRANSPORT_INHERITED, GLOVE_SERVICES_EXCHANGE_TIMEOUT_MAX_MS + 1 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int sv[2];
                assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
                int audit_fd = open_audit(e);
                struct glove_services_route route = { .alias = cases[i].alias, .upstream = pin(e, geteuid()),
                                                      .guest_fd = sv[1] };
                struct glove_services_proxy_config c = {
                        .session_id = SESSION, .transport = cases[i].t, .routes = &route, .n_routes = 1,
                        .service_uid = geteuid(), .audit_fd = audit_fd, .exchange_timeout_ms = cases[i].timeout,
                };
                struct glove_error err = { 0 };
                struct glove_services_proxy *p = (void *)0x1;
                expect_error(glove_services_proxy_start(&c, &p, &err), err, -EINVAL, "services.invalid_argument");
                assert_null(p);
                /* What was moved in is released (the endpoint: ASan's leak
                 * check). */
                assert_true(is_closed(sv[1]));
                assert_true(is_closed(audit_fd));
                close(sv[0]);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_inherited_exchanges, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_back_to_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_partial_read, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_pipelined, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_replaced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_bad_lengths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_trailing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inherited_audit_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_during_exchange, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_while_waiting, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pathname, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pathname_peer_uid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_start_refusals, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The observation server (glove/channel/server.h): a real listening socket
 * in a private directory; a client's intent is admitted and answered; the
 * registry holds it; refusals carry the registry's code; an unknown peer
 * is answered channel.unknown_peer; a silent client and a bad frame are
 * closed with no response and the next client is served; stop cancels a
 * connection in progress and joins. */
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/bytes.h"
#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/channel/server.h"
#include "glove/services/frame.h"

#define NOW 1700000000000LL

struct env {
        char dir[128];
        char sock[192];
        int dir_fd;
        struct glove_channel_host *host;
        struct glove_channel_registry *r;
        struct glove_channel_server *s;
        atomic_int unknown;     /* resolve answers NULL */
        atomic_int resolved;    /* resolve calls that returned the registry */
        atomic_int unresolved;  /* unresolve calls */
        pid_t last_pid;
};

static int64_t fixed_now(void) {
        return NOW;
}

static int obs_validate(const json_t *body, struct glove_error *err) {
        if (!json_is_integer(json_object_get(body, "n")))
                return glove_error_set(err, EINVAL, "test.obs_n", "n missing");
        return 0;
}

static struct glove_channel_registry *resolve(void *ctx, pid_t pid) {
        struct env *e = ctx;
        e->last_pid = pid;
        if (atomic_load(&e->unknown))
                return NULL;
        atomic_fetch_add(&e->resolved, 1);
        return e->r;
}

static void unresolve(void *ctx, struct glove_channel_registry *r) {
        struct env *e = ctx;
        assert_ptr_equal(r, e->r);
        atomic_fetch_add(&e->unresolved, 1);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p);
}

static int listener(const char *path) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0)
                abort();
        return fd;
}

static int start(struct env *e, uint32_t io_timeout_ms) {
        struct glove_channel_server_config c = {
                .listen_fd = listener(e->sock),
                .peer_uid = getuid(),
                .accept_window_ms = 50,
                .io_timeout_ms = io_timeout_ms,
                .resolve = resolve,
                .unresolve = unresolve,
                .ctx = e,
                .now_ms = fixed_now,
        };
        struct glove_error err = { 0 };
        int r = glove_channel_server_start(&c, &e->s, &err);
        if (r < 0)
                fprintf(stderr, "start: %s: %s\n", err.code, err.message);
        return r;
}

static int setup(void **state) {
        const char *base = getenv("TMPDIR");
        struct env *e = calloc(1, sizeof(*e));
        snprintf(e->dir, sizeof(e->dir), "%s/glove-chan-srv.XXXXXX", base && base[0] == '/' ? base : "/tmp");
        if (!mkdtemp(e->dir))
                abort();
        snprintf(e->sock, sizeof(e->sock), "%s/obs.sock", e->dir);
        e->dir_fd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct glove_channel_descriptor d = {
                .schema_id = "obs.v1", .validate = obs_validate, .body_max_bytes = 256, .ttl_max_ms = 60000 };
        struct glove_error err = { 0 };
        if (glove_channel_host_new(&e->host, &err) < 0 || glove_channel_host_register(e->host, &d, &err) < 0 ||
            glove_channel_host_freeze(e->host, &err) < 0 ||
            glove_channel_registry_open(e->dir_fd, "s.channel", "sess-1", "pi", e->host, 16, &e->r, &err) < 0) {
                fprintf(stderr, "%s: %s\n", err.code, err.message);
                return -1;
        }
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        glove_channel_server_stop(e->s);
        glove_channel_registry_free(e->r);
        glove_channel_host_free(e->host);
        close(e->dir_fd);
        nftw(e->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(e);
        return 0;
}

/* The server counts an answer after its send returns, which may be after
 * the client read it: the stats once ok + err answers were counted (at
 * most 5 s of 1 ms polls; not a timing assertion). */
static void settled_stats(const struct glove_channel_server *srv, uint64_t answers, struct glove_channel_server_stats *st) {
        for (int i = 0; i < 5000; i++) {
                glove_channel_server_stats(srv, st);
                if (st->answered_ok + st->answered_err >= answers)
                        return;
                (void)nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
        }
}

static int client(const struct env *e) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        assert_true(strlen(e->sock) < sizeof(a.sun_path));
        memcpy(a.sun_path, e->sock, strlen(e->sock) + 1);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        return fd;
}

/* Sends text as one frame and returns the response frame, or NULL when
 * the server closed with no response (err holds the client's code). */
static json_t *exchange(const struct env *e, const char *text, struct glove_error *err) {
        int fd = client(e);
        uint64_t deadline = glove_time_monotonic_ms() + 10000;
        memset(err, 0, sizeof(*err));
        assert_int_equal(glove_services_frame_write(fd, -1, deadline, (const uint8_t *)text, strlen(text), err), 0);
        static uint8_t buf[GLOVE_SERVICES_FRAME_MAX + 1];
        size_t len = 0;
        json_t *resp = NULL;
        if (glove_services_frame_read(fd, -1, deadline, buf, &len, err) == 0) {
                resp = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, NULL);
                assert_non_null(resp);
                assert_int_equal(glove_json_is_canonical(buf, len, len, 0, NULL), 1);
        }
        close(fd);
        return resp;
}

static char *intent(const char *schema, const char *key, const char *body) {
        char *s = NULL;
        assert_true(asprintf(&s,
                             "{\"body\":%s,\"idempotency_key\":\"%s\",\"issued_at_ms\":%lld,\"schema_id\":\"%s\","
                             "\"ttl_ms\":1000}",
                             body, key, NOW, schema) > 0);
        return s;
}

static void test_admit(void **state) {
        struct env *e = *state;
        assert_int_equal(start(e, 2000), 0);
        _cleanup_free_ char *t = intent("obs.v1", "k1", "{\"n\":1}");
        struct glove_error err;
        _cleanup_json_ json_t *r = exchange(e, t, &err);
        assert_non_null(r);
        assert_true(json_is_true(json_object_get(r, "ok")));
        assert_int_equal(json_integer_value(json_object_get(r, "seq")), 1);
        assert_true(json_is_false(json_object_get(r, "duplicate")));
        assert_int_equal(strlen(json_string_value(json_object_get(r, "digest"))), 64);
        assert_int_equal(glove_channel_registry_count(e->r), 1);
        assert_int_equal(e->last_pid, getpid());
        _cleanup_json_ json_t *again = exchange(e, t, &err);
        assert_true(json_is_true(json_object_get(again, "duplicate")));
        assert_int_equal(json_integer_value(json_object_get(again, "seq")), 1);
        _cleanup_free_ char *u = intent("proposal.v1", "k2", "{\"n\":1}");
        _cleanup_json_ json_t *refused = exchange(e, u, &err);
        assert_true(json_is_false(json_object_get(refused, "ok")));
        assert_string_equal(json_string_value(json_object_get(refused, "code")), "channel.schema_unregistered");
        assert_int_equal(json_object_size(refused), 2);
        _cleanup_free_ char *v = intent("obs.v1", "k3", "{\"m\":1}");
        _cleanup_json_ json_t *invalid = exchange(e, v, &err);
        assert_string_equal(json_string_value(json_object_get(invalid, "code")), "test.obs_n");
        assert_int_equal(glove_channel_registry_count(e->r), 1);
        assert_int_equal(atomic_load(&e->resolved), atomic_load(&e->unresolved));
        struct glove_channel_server_stats st;
        settled_stats(e->s, 4, &st);
        assert_int_equal(st.answered_ok, 2);
        assert_int_equal(st.answered_err, 2);
}

static void test_unknown_peer(void **state) {
        struct env *e = *state;
        atomic_store(&e->unknown, 1);
        assert_int_equal(start(e, 2000), 0);
        _cleanup_free_ char *t = intent("obs.v1", "k1", "{\"n\":1}");
        struct glove_error err;
        _cleanup_json_ json_t *r = exchange(e, t, &err);
        assert_non_null(r);
        assert_true(json_is_false(json_object_get(r, "ok")));
        assert_string_equal(json_string_value(json_object_get(r, "code")), "channel.unknown_peer");
        assert_int_equal(glove_channel_registry_count(e->r), 0);
        assert_int_equal(atomic_load(&e->unresolved), 0);
}

/* A client that sends nothing is closed at the 200 ms I/O deadline with no
 * response, and the server serves the next client. */
static void test_silent_client(void **state) {
        struct env *e = *state;
        assert_int_equal(start(e, 200), 0);
        int fd = client(e);
        struct glove_error err = { 0 };
        uint8_t buf[16];
        size_t len = 0;
        assert_true(glove_services_frame_read(fd, -1, glove_time_monotonic_ms() + 10000, buf, &len, &err) < 0);
        assert_string_equal(err.code, "services.closed");
        close(fd);
        _cleanup_free_ char *t = intent("obs.v1", "k1", "{\"n\":1}");
        _cleanup_json_ json_t *r = exchange(e, t, &err);
        assert_non_null(r);
        assert_true(json_is_true(json_object_get(r, "ok")));
        struct glove_channel_server_stats st;
        settled_stats(e->s, 1, &st);
        assert_int_equal(st.dropped, 1);
        assert_int_equal(st.answered_ok, 1);
}

/* A framing failure (an empty frame, a length above the bound, a partial
 * frame) closes the connection with no response; nothing is admitted. */
static void test_bad_frames(void **state) {
        struct env *e = *state;
        assert_int_equal(start(e, 300), 0);
        const uint8_t empty[4] = { 0, 0, 0, 0 };
        uint8_t huge[4];
        glove_put_be32(huge, GLOVE_SERVICES_FRAME_MAX + 1);
        const uint8_t partial[6] = { 0, 0, 0, 10, '{', '}' };
        struct { const uint8_t *b; size_t n; } cases[] = { { empty, 4 }, { huge, 4 }, { partial, 6 } };
        for (size_t i = 0; i < 3; i++) {
                int fd = client(e);
                assert_int_equal(write(fd, cases[i].b, cases[i].n), (ssize_t)cases[i].n);
                struct glove_error err = { 0 };
                uint8_t buf[16];
                size_t len = 0;
                assert_true(glove_services_frame_read(fd, -1, glove_time_monotonic_ms() + 10000, buf, &len, &err) < 0);
                assert_string_equal(err.code, "services.closed");
                close(fd);
        }
        assert_int_equal(glove_channel_registry_count(e->r), 0);
        struct glove_channel_server_stats st;
        glove_channel_server_stats(e->s, &st);
        assert_int_equal(st.dropped, 3);
}

/* Stop cancels a connection waiting on its (long) I/O deadline and joins;
 * the client then sees the stream closed with no response. */
static void test_stop(void **state) {
        struct env *e = *state;
        assert_int_equal(start(e, GLOVE_CHANNEL_SERVER_IO_MAX_MS), 0);
        int fd = client(e);
        /* wait until the worker has accepted it */
        for (int i = 0; i < 1000; i++) {
                struct glove_channel_server_stats st;
                glove_channel_server_stats(e->s, &st);
                if (st.accepted == 1)
                        break;
                usleep(5000);
        }
        glove_channel_server_stop(e->s);
        e->s = NULL;
        struct glove_error err = { 0 };
        uint8_t buf[16];
        size_t len = 0;
        assert_true(glove_services_frame_read(fd, -1, glove_time_monotonic_ms() + 10000, buf, &len, &err) < 0);
        assert_string_equal(err.code, "services.closed");
        close(fd);
        /* the listening socket is closed too */
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        assert_true(strlen(e->sock) < sizeof(a.sun_path));
        memcpy(a.sun_path, e->sock, strlen(e->sock) + 1);
        assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), -1);
        assert_int_equal(errno, ECONNREFUSED);
        close(c);
}

static void test_start_arguments(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        struct glove_channel_server *s = NULL;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct glove_channel_server_config c = {
                .listen_fd = sv[0], .peer_uid = getuid(), .accept_window_ms = 50, .io_timeout_ms = 50,
                .resolve = resolve, .ctx = e };
        assert_int_equal(glove_channel_server_start(&c, &s, &err), -EINVAL);
        assert_string_equal(err.code, "channel.server_listen");
        assert_true(fcntl(sv[0], F_GETFD) < 0); /* moved in: closed */
        close(sv[1]);
        c.listen_fd = listener(e->sock);
        c.io_timeout_ms = 0;
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_server_start(&c, &s, &err), -EINVAL);
        assert_string_equal(err.code, "channel.invalid_argument");
        assert_null(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_admit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unknown_peer, setup, teardown),
                cmocka_unit_test_setup_teardown(test_silent_client, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_frames, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_start_arguments, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

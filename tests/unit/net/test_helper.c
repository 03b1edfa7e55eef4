/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit and namespace tests for include/glove/net/helper.h.
 *
 * The namespace test builds the real arrangement: a child process unshares a
 * user and network namespace (as the sandbox does), brings lo up, listens on
 * its own 127.0.0.1 and passes connections over a socketpair to the relay in
 * the parent, which reaches an HTTP server on the host's loopback. From
 * inside, an agent-side C client and curl (when installed) reach the server
 * only through the proxy; direct connections fail. Skips with the reason when
 * user namespaces are unavailable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "fixture.h"
#include "glove/net/helper.h"
#include "glove/net/proxy_env.h"
#include "glove/net/rule.h"

#define CURL "/usr/bin/curl"
#define CHILD_SKIP 77

/* Receives one descriptor from unix_fd (5 s at most); -1 on failure. */
static int recv_fd(int unix_fd) {
        struct pollfd p = { .fd = unix_fd, .events = POLLIN };
        if (poll(&p, 1, FX_IO_TIMEOUT_MS) != 1)
                return -1;
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                              .msg_controllen = sizeof(control.buf) };
        if (recvmsg(unix_fd, &msg, MSG_CMSG_CLOEXEC) != 1)
                return -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (!c || c->cmsg_type != SCM_RIGHTS)
                return -1;
        int fd;
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}

struct listener_args {
        int unix_fd, listen_fd, ret;
};

static void *listener_main(void *arg) {
        struct listener_args *a = arg;
        a->ret = glove_net_listener_run(a->unix_fd, a->listen_fd, NULL);
        return NULL;
}

static void test_listener_passes_unread_connections(void **state) {
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        struct listener_args a = { .unix_fd = sv[1] };
        uint16_t port = 0;
        assert_int_equal(glove_net_listener_open(0, &a.listen_fd, &port, NULL), 0);
        assert_true(port > 0);
        int fl = fcntl(a.listen_fd, F_GETFD);
        assert_true(fl & FD_CLOEXEC);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, listener_main, &a), 0);
        for (int i = 0; i < 3; i++) {
                int client = tcp_connect(port);
                assert_true(client >= 0);
                char msg[32];
                int n = snprintf(msg, sizeof(msg), "agent bytes %d", i);
                assert_int_equal(write_all(client, msg, (size_t)n), 0);
                int passed = recv_fd(sv[0]);
                assert_true(passed >= 0);
                /* The helper read nothing: every byte is still there. */
                char got[32];
                assert_int_equal(recv(passed, got, (size_t)n, MSG_WAITALL), n);
                assert_memory_equal(got, msg, (size_t)n);
                assert_int_equal(write_all(passed, "back", 4), 0);
                assert_int_equal(recv(client, got, 4, MSG_WAITALL), 4);
                assert_memory_equal(got, "back", 4);
                close(passed);
                close(client);
        }
        /* The helper closed its copies: only the relay's copy kept them open,
         * so closing it ended each connection (seen above as no hang). The
         * relay going away ends the helper. */
        close(sv[0]);
        pthread_join(t, NULL);
        assert_int_equal(a.ret, 0);
        close(sv[1]);
        close(a.listen_fd);
}

static void test_listener_open_port_in_use(void **state) {
        (void)state;
        int fd;
        uint16_t port;
        assert_int_equal(glove_net_listener_open(0, &fd, &port, NULL), 0);
        int fd2 = 7;
        struct glove_error err = { 0 };
        assert_int_equal(glove_net_listener_open(port, &fd2, NULL, &err), -EADDRINUSE);
        assert_string_equal(err.code, "egress.listen");
        assert_int_equal(fd2, -1);
        close(fd);
}

static void test_listener_run_bad_descriptors(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        assert_true(glove_net_listener_run(-1, -1, &err) < 0);
        assert_string_equal(err.code, "egress.helper");
}

/* ---- namespace test ------------------------------------------------------ */

/* A minimal HTTP server on the host's 127.0.0.1: one fixed answer. */
struct http_server {
        int lfd, stop;
        uint16_t port;
        pthread_t thread;
        atomic_int served;
};

#define HTTP_BODY "hello glove\n"

static void *http_main(void *arg) {
        struct http_server *h = arg;
        for (;;) {
                struct pollfd p[2] = { { .fd = h->stop, .events = POLLIN }, { .fd = h->lfd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0 || p[0].revents)
                        break;
                int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                set_timeouts(fd);
                char buf[4096];
                size_t n = 0;
                while (n < sizeof(buf)) {
                        ssize_t r = recv(fd, buf + n, sizeof(buf) - n, 0);
                        if (r <= 0)
                                break;
                        n += (size_t)r;
                        if (n >= 4 && memmem(buf, n, "\r\n\r\n", 4))
                                break;
                }
                static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " "12"
                                             "\r\nConnection: close\r\n\r\n" HTTP_BODY;
                if (n >= 4 && write_all(fd, answer, sizeof(answer) - 1) == 0)
                        atomic_fetch_add(&h->served, 1);
                close(fd);
        }
        return NULL;
}

/* Binds before the fork; the thread starts after it. */
static void http_bind(struct http_server *h) {
        memset(h, 0, sizeof(*h));
        h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sin);
        assert_int_equal(bind(h->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
        assert_int_equal(listen(h->lfd, 16), 0);
        assert_int_equal(getsockname(h->lfd, (struct sockaddr *)&sin, &len), 0);
        h->port = ntohs(sin.sin_port);
        h->stop = eventfd(0, EFD_CLOEXEC);
}

/* ---- the agent side, in the child (no cmocka here: exit codes) ---------- */

#define CHECK(cond, code, ...)                                 \
        do {                                                   \
                if (!(cond)) {                                 \
                        fprintf(stderr, "child: " __VA_ARGS__); \
                        fprintf(stderr, "\n");                 \
                        _exit(code);                           \
                }                                              \
        } while (0)

static int raw_connect(const char *ip, uint16_t port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        set_timeouts(fd);
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
        inet_pton(AF_INET, ip, &sin.sin_addr);
        int r = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? -errno : 0;
        close(fd);
        return r;
}

/* Runs curl with env and args; returns its exit status and its stdout. */
static int run_curl(const char *const *envp, const char *const *args, char *out, size_t size) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                dup2(p[1], 1);
                execve(CURL, (char *const *)args, (char *const *)envp);
                _exit(127);
        }
        close(p[1]);
        size_t n = 0;
        for (;;) {
                ssize_t r = read(p[0], out + n, size - 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0 || (n += (size_t)r) == size - 1)
                        break;
        }
        out[n] = '\0';
        close(p[0]);
        int st;
        if (waitpid(pid, &st, 0) < 0)
                return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void agent_side(int unix_fd, uint16_t http_port, const char *token, bool have_curl) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
                fprintf(stderr, "unshare(CLONE_NEWUSER|CLONE_NEWNET): %s\n", strerror(errno));
                _exit(CHILD_SKIP);
        }
        /* A fresh namespace: lo is down, so not even the loopback answers. */
        int r = raw_connect("127.0.0.1", http_port);
        CHECK(r == -ENETUNREACH, 10, "connect before lo up: %s", strerror(-r));
        struct glove_error err = { 0 };
        CHECK(glove_net_loopback_up(&err) == 0, 11, "loopback up: %s", err.message);
        CHECK(glove_net_loopback_up(&err) == 0, 12, "loopback up again: %s", err.message);
        /* The host's server is not reachable directly: this 127.0.0.1 is the
         * namespace's own, and there is no route anywhere else. */
        r = raw_connect("127.0.0.1", http_port);
        CHECK(r == -ECONNREFUSED, 13, "direct connect to the host port: %s", r ? strerror(-r) : "connected");
        r = raw_connect("192.0.2.1", 80);
        CHECK(r == -ENETUNREACH, 14, "connect off the loopback: %s", r ? strerror(-r) : "connected");

        int lfd;
        uint16_t port;
        CHECK(glove_net_listener_open(0, &lfd, &port, &err) == 0, 15, "listen: %s", err.message);
        struct listener_args a = { .unix_fd = unix_fd, .listen_fd = lfd };
        pthread_t t;
        CHECK(pthread_create(&t, NULL, listener_main, &a) == 0, 16, "thread");

        /* An agent-side C client speaking CONNECT with the credentials. */
        struct glove_net_proxy_env env;
        CHECK(glove_net_proxy_env_build(token, port, 0, &env, &err) == 0, 17, "env: %s", err.message);
        const char *proxy = strchr(env.envp[0], '=') + 1; /* http://glove:TOKEN@127.0.0.1:PORT */
        const char *cred = strstr(proxy, "glove:");
        char user_pass[256];
        snprintf(user_pass, sizeof(user_pass), "%.*s", (int)(strchr(cred, '@') - cred), cred);
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char enc[400];
        size_t o = 0, n = strlen(user_pass);
        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned char)user_pass[i] << 16 | (i + 1 < n ? (unsigned char)user_pass[i + 1] << 8 : 0) |
                             (i + 2 < n ? (unsigned char)user_pass[i + 2] : 0);
                enc[o++] = b64[v >> 18 & 63];
                enc[o++] = b64[v >> 12 & 63];
                enc[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
                enc[o++] = i + 2 < n ? b64[v & 63] : '=';
        }
        enc[o] = '\0';
        int fd = tcp_connect(port);
        CHECK(fd >= 0, 18, "connect to the listener: %s", strerror(-fd));
        char req[1024];
        int len = snprintf(req, sizeof(req),
                           "CONNECT 127.0.0.1:%u HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n"
                           "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", http_port, enc);
        CHECK(write_all(fd, req, (size_t)len) == 0, 19, "write");
        char head[512];
        int status = read_status(fd, head, sizeof(head));
        CHECK(status == 200, 20, "CONNECT answered %d", status);
        char body[1024];
        ssize_t got = read_to_eof(fd, body, sizeof(body) - 1);
        CHECK(got > 0, 21, "no answer through the tunnel");
        body[got] = '\0';
        CHECK(strstr(body, "HTTP/1.1 200 OK") && strstr(body, HTTP_BODY), 22, "tunnel answer: %s", body);
        close(fd);

        /* Without the credentials: 407. */
        fd = tcp_connect(port);
        len = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", http_port);
        CHECK(write_all(fd, req, (size_t)len) == 0, 23, "write");
        status = read_status(fd, head, sizeof(head));
        CHECK(status == 407, 24, "CONNECT without credentials answered %d", status);
        close(fd);

        if (have_curl) {
                /* curl, configured only by the environment Glove gives agents. */
                const char *envp[GLOVE_NET_PROXY_ENV_COUNT + 2];
                for (size_t i = 0; i < GLOVE_NET_PROXY_ENV_COUNT; i++)
                        envp[i] = env.envp[i];
                envp[GLOVE_NET_PROXY_ENV_COUNT] = "PATH=/usr/bin:/bin";
                envp[GLOVE_NET_PROXY_ENV_COUNT + 1] = NULL;
                char url[128], out[1024];
                snprintf(url, sizeof(url), "http://127.0.0.1:%u/", http_port);
                const char *ok[] = { "curl", "-sS", "--max-time", "5", "--proxytunnel", url, NULL };
                int rc = run_curl(envp, ok, out, sizeof(out));
                CHECK(rc == 0 && strcmp(out, HTTP_BODY) == 0, 30, "curl through the proxy: exit %d, '%s'", rc, out);
                snprintf(url, sizeof(url), "http://127.0.0.2:%u/", http_port);
                const char *denied[] = { "curl", "-sS", "--max-time", "5", "--proxytunnel", url, NULL };
                rc = run_curl(envp, denied, out, sizeof(out));
                CHECK(rc == 56, 31, "curl to a host not on the list: exit %d (want 56)", rc);
                snprintf(url, sizeof(url), "http://127.0.0.1:%u/", http_port);
                const char *direct[] = { "curl", "-sS", "--max-time", "5", "--noproxy", "*", url, NULL };
                rc = run_curl(envp, direct, out, sizeof(out));
                CHECK(rc == 7, 32, "curl without the proxy: exit %d (want 7, cannot connect)", rc);
        }
        _exit(0);
}

static void test_namespace_agent_reaches_host_only_through_proxy(void **state) {
        (void)state;
        bool have_curl = access(CURL, X_OK) == 0;
        if (!have_curl)
                print_message("note: %s is not installed; the curl part is skipped, the C client still runs\n", CURL);
        struct http_server h;
        http_bind(&h);
        char token[GLOVE_NET_TOKEN_LEN + 1];
        assert_int_equal(glove_net_token_generate(token, NULL), 0);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(sv[0]);
                close(h.lfd);
                agent_side(sv[1], h.port, token, have_curl);
        }
        close(sv[1]);
        assert_int_equal(pthread_create(&h.thread, NULL, http_main, &h), 0);

        struct recorder rec;
        recorder_init(&rec);
        struct glove_net_policy policy;
        glove_net_policy_init(&policy);
        char rule[64];
        snprintf(rule, sizeof(rule), "127.0.0.1:%u", h.port);
        assert_int_equal(glove_net_policy_add(&policy, rule, NULL), 0);
        struct glove_net_relay_config cfg = { .policy = &policy, .token = token, .audit = record_event,
                                              .audit_userdata = &rec };
        struct glove_net_relay *relay;
        assert_int_equal(glove_net_relay_start(&cfg, sv[0], &relay, NULL), 0);

        /* Bounded wait for the child (20 s). */
        int st = 0;
        pid_t w = 0;
        for (int i = 0; i < 2000 && (w = waitpid(pid, &st, WNOHANG)) == 0; i++)
                usleep(10 * 1000);
        if (w == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
        }
        glove_net_relay_stop(relay);
        uint64_t one = 1;
        assert_int_equal(write(h.stop, &one, sizeof(one)), sizeof(one));
        pthread_join(h.thread, NULL);
        close(h.stop);
        close(h.lfd);
        glove_net_policy_free(&policy);
        if (w != 0 && WIFEXITED(st) && WEXITSTATUS(st) == CHILD_SKIP) {
                recorder_destroy(&rec);
                print_message("skipped: user and network namespaces are not available to this user\n");
                skip();
        }
        assert_int_equal(w, pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail_msg("agent side failed: status 0x%x (exit %d; see its message above)", st, WEXITSTATUS(st));

        /* The audit trail matches what the agent did. */
        int opens = 0, closes = 0, bad_auth = 0, not_allowed = 0;
        for (int i = 0; i < rec.n; i++) {
                struct rec *r = &rec.recs[i];
                opens += r->phase == GLOVE_NET_EGRESS_OPEN;
                if (r->phase == GLOVE_NET_EGRESS_CLOSE) {
                        closes++;
                        assert_true(r->up > 0 && r->down > 0);
                }
                bad_auth += r->reason == GLOVE_NET_EGRESS_BAD_AUTH;
                not_allowed += r->reason == GLOVE_NET_EGRESS_NOT_ALLOWED;
        }
        int tunnels = have_curl ? 2 : 1;
        assert_int_equal(opens, tunnels);
        assert_int_equal(closes, tunnels);
        assert_int_equal(bad_auth, 1);
        assert_int_equal(not_allowed, have_curl ? 1 : 0);
        assert_int_equal(atomic_load(&h.served), tunnels);
        recorder_destroy(&rec);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_listener_passes_unread_connections),
                cmocka_unit_test(test_listener_open_port_in_use),
                cmocka_unit_test(test_listener_run_bad_descriptors),
                cmocka_unit_test(test_namespace_agent_reaches_host_only_through_proxy),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

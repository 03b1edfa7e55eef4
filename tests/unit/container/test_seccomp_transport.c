/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/seccomp.h, the local-service
 * transport programs installed in a real child: managed_inherited with a
 * stream socketpair end at descriptor 3 (what is allowed there, what is
 * refused there and everywhere else, and the same probes answering
 * otherwise under plain managed and without a filter), and managed_unix
 * connecting to a listening pathname socket. test_seccomp.c holds their
 * table tests. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/container/seccomp.h"
#include "seccomp_probe.h"

/* A named probe list: the child runs its probes under a filter (or none)
 * and sends back one result per probe. */
#define NPROBES_MAX 32

struct nctx {
        struct probe_result r[NPROBES_MAX];
        int value; /* one value a probe read (getsockopt's SO_TYPE) */
        char data[16]; /* bytes a probe read */
};

/* Runs fn (which fills a struct nctx) in a child under prog (NULL: none)
 * after setup; the filter must install. */
static void nprobe(void (*setup)(void *), void (*fn)(void *, void *), void *arg, const struct sock_fprog *prog,
                   struct nctx *out) {
        assert_int_equal(probe_fork(prog, setup, fn, arg, out, sizeof(*out)), 0);
}

static void nexpect(const struct nctx *c, int i, const char *name, int want_errno) {
        probe_expect(&c->r[i], name, want_errno);
}

/* The inherited-stream child: the guest end of a stream socketpair at 3,
 * another socket (a socketpair end, as a runtime makes for its children)
 * at 4, nothing else above 2 but the result pipe. */
struct inh {
        int guest;  /* the guest end (any number; moved to 3) */
        int other;  /* another AF_UNIX socket (moved to 4) */
};

static void inh_setup(void *arg) {
        struct inh *h = arg;
        int g = fcntl(h->guest, F_DUPFD_CLOEXEC, 20), o = fcntl(h->other, F_DUPFD_CLOEXEC, 20);
        if (g < 0 || o < 0 || dup2(g, 3) < 0 || dup2(o, 4) < 0)
                _exit(93);
        close(g);
        close(o);
}

enum {
        I_GETSOCKNAME_3,
        I_GETSOCKOPT_TYPE_3,
        I_WRITE_3,
        I_READ_3,
        I_SHUTDOWN_3,
        I_SOCKETPAIR,
        I_OK_COUNT, /* the ones above succeed under the filter */
        I_GETSOCKOPT_RCVBUF_3 = I_OK_COUNT,
        I_GETSOCKOPT_PEERCRED_3,
        I_GETPEERNAME_3,
        I_GETSOCKNAME_4,
        I_GETSOCKOPT_TYPE_4,
        I_GETSOCKNAME_3_HIGHBITS,
        I_SOCKET_UNIX,
        I_CONNECT_3,
        I_SETSOCKOPT_3,
        I_BIND_4,
        I_LISTEN_4,
        I_ACCEPT4_4,
        I_COUNT,
};

static const char *const inh_names[I_COUNT] = {
        [I_GETSOCKNAME_3] = "getsockname(3)",
        [I_GETSOCKOPT_TYPE_3] = "getsockopt(3, SOL_SOCKET, SO_TYPE)",
        [I_WRITE_3] = "write(3)",
        [I_READ_3] = "read(3)",
        [I_SHUTDOWN_3] = "shutdown(3, SHUT_WR)",
        [I_SOCKETPAIR] = "socketpair(AF_UNIX)",
        [I_GETSOCKOPT_RCVBUF_3] = "getsockopt(3, SOL_SOCKET, SO_RCVBUF)",
        [I_GETSOCKOPT_PEERCRED_3] = "getsockopt(3, SOL_SOCKET, SO_PEERCRED)",
        [I_GETPEERNAME_3] = "getpeername(3)",
        [I_GETSOCKNAME_4] = "getsockname(4)",
        [I_GETSOCKOPT_TYPE_4] = "getsockopt(4, SOL_SOCKET, SO_TYPE)",
        [I_GETSOCKNAME_3_HIGHBITS] = "getsockname(1<<32|3)",
        [I_SOCKET_UNIX] = "socket(AF_UNIX)",
        [I_CONNECT_3] = "connect(3)",
        [I_SETSOCKOPT_3] = "setsockopt(3, SOL_SOCKET, SO_RCVBUF)",
        [I_BIND_4] = "bind(4)",
        [I_LISTEN_4] = "listen(4)",
        [I_ACCEPT4_4] = "accept4(4)",
};

static void inh_probes(void *out, void *arg) {
        (void)arg;
        struct nctx *c = out;
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);
        probe_record(&c->r[I_GETSOCKNAME_3], syscall(SYS_getsockname, 3, &sa, &len));
        int v = -1;
        socklen_t vl = sizeof(v);
        probe_record(&c->r[I_GETSOCKOPT_TYPE_3], syscall(SYS_getsockopt, 3, SOL_SOCKET, SO_TYPE, &v, &vl));
        c->value = v;
        probe_record(&c->r[I_WRITE_3], write(3, "ping", 4));
        probe_record(&c->r[I_READ_3], read(3, c->data, sizeof(c->data) - 1));
        probe_record(&c->r[I_SHUTDOWN_3], shutdown(3, SHUT_WR));
        int sv[2];
        long r = syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
        probe_record(&c->r[I_SOCKETPAIR], r);
        if (r == 0) {
                close(sv[0]);
                close(sv[1]);
        }
        int big = 0;
        vl = sizeof(big);
        probe_record(&c->r[I_GETSOCKOPT_RCVBUF_3], syscall(SYS_getsockopt, 3, SOL_SOCKET, SO_RCVBUF, &big, &vl));
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        probe_record(&c->r[I_GETSOCKOPT_PEERCRED_3], syscall(SYS_getsockopt, 3, SOL_SOCKET, SO_PEERCRED, &cred, &cl));
        len = sizeof(sa);
        probe_record(&c->r[I_GETPEERNAME_3], syscall(SYS_getpeername, 3, &sa, &len));
        len = sizeof(sa);
        probe_record(&c->r[I_GETSOCKNAME_4], syscall(SYS_getsockname, 4, &sa, &len));
        vl = sizeof(v);
        probe_record(&c->r[I_GETSOCKOPT_TYPE_4], syscall(SYS_getsockopt, 4, SOL_SOCKET, SO_TYPE, &v, &vl));
        len = sizeof(sa);
        probe_record(&c->r[I_GETSOCKNAME_3_HIGHBITS], syscall(SYS_getsockname, 0x100000003UL, &sa, &len));
        long fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        probe_record(&c->r[I_SOCKET_UNIX], fd);
        if (fd >= 0)
                close((int)fd);
        /* An abstract name: nothing on any file system either way. */
        struct sockaddr_un to = {.sun_family = AF_UNIX};
        memcpy(to.sun_path, "\0glove-test-nothing", 20);
        socklen_t tl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 20);
        probe_record(&c->r[I_CONNECT_3], syscall(SYS_connect, 3, &to, tl));
        int one = 4096;
        probe_record(&c->r[I_SETSOCKOPT_3], syscall(SYS_setsockopt, 3, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one)));
        probe_record(&c->r[I_BIND_4], syscall(SYS_bind, 4, &to, tl));
        probe_record(&c->r[I_LISTEN_4], syscall(SYS_listen, 4, 1));
        probe_record(&c->r[I_ACCEPT4_4], syscall(SYS_accept4, 4, NULL, NULL, SOCK_NONBLOCK));
}

/* Runs the inherited probes under prog; the supervisor's end gets "ping",
 * end of file (the guest's shutdown) and sent "pong" beforehand. */
static void inh_run(const struct sock_fprog *prog, struct nctx *c) {
        int sv[2], other[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, other), 0);
        assert_int_equal(write(sv[0], "pong", 4), 4);
        struct inh h = {.guest = sv[1], .other = other[0]};
        nprobe(inh_setup, inh_probes, &h, prog, c);
        close(sv[1]);
        close(other[0]);
        close(other[1]);
        char buf[16] = {0};
        assert_int_equal(read(sv[0], buf, sizeof(buf)), 4);
        assert_memory_equal(buf, "ping", 4);
        assert_int_equal(read(sv[0], buf, sizeof(buf)), 0);
        close(sv[0]);
}

static void test_inherited_in_child(void **state) {
        (void)state;
        struct nctx c;
        inh_run(&glove_seccomp_prebuilt_managed_inherited, &c);
        for (int i = 0; i < I_OK_COUNT; i++)
                nexpect(&c, i, inh_names[i], 0);
        assert_int_equal(c.value, SOCK_STREAM);
        assert_int_equal(c.r[I_READ_3].ret, 4);
        assert_memory_equal(c.data, "pong", 4);
        for (int i = I_OK_COUNT; i < I_COUNT; i++)
                nexpect(&c, i, inh_names[i], EPERM);
}

/* Without the inherited rules (plain managed, and no filter) the same probes
 * answer otherwise: the denials come from those rules. */
static void test_inherited_probes_differ(void **state) {
        (void)state;
        struct nctx c;
        inh_run(&glove_seccomp_prebuilt_managed, &c);
        const int open_in_managed[] = {I_GETSOCKOPT_RCVBUF_3, I_GETSOCKOPT_PEERCRED_3, I_GETPEERNAME_3,
                                       I_GETSOCKNAME_4, I_GETSOCKOPT_TYPE_4};
        for (size_t i = 0; i < sizeof(open_in_managed) / sizeof(open_in_managed[0]); i++)
                nexpect(&c, open_in_managed[i], inh_names[open_in_managed[i]], 0);
        /* bind on a socketpair end works; listen on a connected stream is EINVAL. */
        nexpect(&c, I_BIND_4, inh_names[I_BIND_4], 0);
        nexpect(&c, I_LISTEN_4, inh_names[I_LISTEN_4], EINVAL);
        if (outer_seccomp_mode() != 0) {
                print_message("skipped the unfiltered half: this process already runs under a seccomp filter\n");
                return;
        }
        inh_run(NULL, &c);
        /* The kernel looks the name up first (ECONNREFUSED: nothing there). */
        if (c.r[I_CONNECT_3].ret != -1 || c.r[I_CONNECT_3].err == EPERM)
                fail_msg("connect(3) without a filter: %ld errno %d", c.r[I_CONNECT_3].ret, c.r[I_CONNECT_3].err);
        nexpect(&c, I_SETSOCKOPT_3, inh_names[I_SETSOCKOPT_3], 0);
        nexpect(&c, I_SOCKET_UNIX, inh_names[I_SOCKET_UNIX], 0);
}

/* The pathname transport: a Unix socket of the agent's own connects to a
 * listening pathname socket; other families and setsockopt stay refused. */
enum { U_SOCKET_UNIX, U_CONNECT, U_SOCKET_INET, U_SOCKET_INET6, U_SOCKET_NETLINK, U_SETSOCKOPT, U_COUNT };

static const char *const unix_names[U_COUNT] = {
        [U_SOCKET_UNIX] = "socket(AF_UNIX)",   [U_CONNECT] = "connect(pathname)",
        [U_SOCKET_INET] = "socket(AF_INET)",   [U_SOCKET_INET6] = "socket(AF_INET6)",
        [U_SOCKET_NETLINK] = "socket(AF_NETLINK)", [U_SETSOCKOPT] = "setsockopt(SO_RCVBUF)",
};

static void unix_probes(void *out, void *arg) {
        struct nctx *c = out;
        const struct sockaddr_un *to = arg;
        long fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        probe_record(&c->r[U_SOCKET_UNIX], fd);
        if (fd >= 0) {
                probe_record(&c->r[U_CONNECT], syscall(SYS_connect, fd, to, sizeof(*to)));
                int v = 4096;
                probe_record(&c->r[U_SETSOCKOPT], syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
                close((int)fd);
        } else {
                c->r[U_CONNECT] = c->r[U_SETSOCKOPT] = (struct probe_result){-1, EBADF};
        }
        probe_record(&c->r[U_SOCKET_INET], syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        probe_record(&c->r[U_SOCKET_INET6], syscall(SYS_socket, AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
        probe_record(&c->r[U_SOCKET_NETLINK], syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0));
}

static void test_managed_unix_in_child(void **state) {
        (void)state;
        char dir[] = "/tmp/glove-seccomp-unix-XXXXXX";
        assert_non_null(mkdtemp(dir));
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
        int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(l >= 0);
        assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(l, 4), 0);
        struct nctx c;
        nprobe(NULL, unix_probes, &sa, &glove_seccomp_prebuilt_managed_unix, &c);
        nexpect(&c, U_SOCKET_UNIX, unix_names[U_SOCKET_UNIX], 0);
        nexpect(&c, U_CONNECT, unix_names[U_CONNECT], 0);
        for (int i = U_SOCKET_INET; i < U_COUNT; i++)
                nexpect(&c, i, unix_names[i], EPERM);
        /* The connection reached the listener. */
        int a = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        assert_true(a >= 0);
        close(a);
        /* Plain managed refuses the Unix socket itself. */
        nprobe(NULL, unix_probes, &sa, &glove_seccomp_prebuilt_managed, &c);
        nexpect(&c, U_SOCKET_UNIX, unix_names[U_SOCKET_UNIX], EPERM);
        close(l);
        unlink(sa.sun_path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_inherited_in_child),
                cmocka_unit_test(test_inherited_probes_differ),
                cmocka_unit_test(test_managed_unix_in_child),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

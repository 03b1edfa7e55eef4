/* SPDX-License-Identifier: Apache-2.0 */
/* The control socket's peer user namespace check (glove/server/peerns.h):
 * a peer of the test's own user namespace is admitted, one in a user
 * namespace the test made below it is refused, and the proof is a
 * descriptor of the test's own user namespace and nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/server/peerns.h"

static void test_own_namespace_admitted(void **state) {
        (void)state;
        struct glove_server_peerns t;
        struct glove_error e = { 0 };
        assert_int_equal(glove_server_peerns_init(&t, &e), 0);
        assert_true(t.n >= 1);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid_t pid = -1;
        assert_int_equal(glove_server_peerns_check(&t, sv[0], &pid, &e), 0);
        assert_int_equal(pid, getpid());
        int own = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
        assert_true(own >= 0);
        assert_true(glove_server_peerns_proof(&t, own));
        int net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        assert_true(net >= 0);
        assert_false(glove_server_peerns_proof(&t, net));
        assert_false(glove_server_peerns_proof(&t, sv[1]));
        close(own);
        close(net);
        close(sv[0]);
        close(sv[1]);
}

/* A child that moves into a new user namespace (below the test's) and
 * then connects: refused, whatever it would send. */
static void test_descendant_refused(void **state) {
        (void)state;
        struct glove_server_peerns t;
        struct glove_error e = { 0 };
        assert_int_equal(glove_server_peerns_init(&t, &e), 0);
        int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(l >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX }; /* abstract, unique per test process */
        int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "glove-test-peerns-%d", (int)getpid());
        socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
        assert_int_equal(bind(l, (struct sockaddr *)&sa, alen), 0);
        assert_int_equal(listen(l, 1), 0);
        int ready[2];
        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
                (void)!write(ready[1], &c, 1);
                if (c != 'y')
                        _exit(0);
                int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (s < 0 || connect(s, (struct sockaddr *)&sa, alen) < 0)
                        _exit(2);
                char b;
                (void)!read(s, &b, 1); /* until the parent closes */
                _exit(0);
        }
        close(ready[1]);
        char c = 0;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        if (c != 'y') {
                waitpid(child, NULL, 0);
                close(l);
                skip(); /* user namespaces are not permitted here */
        }
        int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(a >= 0);
        pid_t pid = 0;
        int r = glove_server_peerns_check(&t, a, &pid, &e);
        assert_int_equal(r, -EPERM);
        assert_string_equal(e.code, "auth.foreign_user_namespace");
        assert_int_equal(pid, child);
        close(a);
        close(l);
        int st = 0;
        waitpid(child, &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_own_namespace_admitted),
                cmocka_unit_test(test_descendant_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

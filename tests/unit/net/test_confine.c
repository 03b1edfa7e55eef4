/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for include/glove/net/confine.h: argument checks, and in a
 * child process with its own user and network namespace (as the sandbox's
 * PID 1) the confinement itself: TCP bind refused, connect allowed to the
 * listed port only. Skips with the reason where user namespaces or
 * Landlock's TCP rights (ABI 4) are missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/net/confine.h"
#include "glove/net/helper.h"

#define CHILD_SKIP 77

static void test_bad_arguments(void **state) {
        (void)state;
        struct glove_error err = {0};
        uint16_t many[GLOVE_NET_CONFINE_PORTS_MAX + 1] = {1, 2, 3, 4, 5};
        assert_int_equal(glove_net_tcp_confine(many, sizeof(many) / sizeof(many[0]), &err), -EINVAL);
        assert_string_equal(err.code, "egress.confine");
        uint16_t zero = 0;
        assert_int_equal(glove_net_tcp_confine(&zero, 1, NULL), -EINVAL);
        assert_int_equal(glove_net_tcp_confine(NULL, 1, NULL), -EINVAL);
}

static int connect_to(uint16_t port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
        close(fd);
        return r;
}

/* In the child: 0 when every expectation held, 1 + step otherwise. */
static int child(void) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
                fprintf(stderr, "unshare(CLONE_NEWUSER|CLONE_NEWNET): %s\n", strerror(errno));
                return CHILD_SKIP;
        }
        if (glove_net_loopback_up(NULL) < 0)
                return 1;
        int allowed = -1, other = -1;
        uint16_t allowed_port = 0, other_port = 0;
        if (glove_net_listener_open(0, &allowed, &allowed_port, NULL) < 0 ||
            glove_net_listener_open(0, &other, &other_port, NULL) < 0)
                return 2;
        struct glove_error err = {0};
        int r = glove_net_tcp_confine(&allowed_port, 1, &err);
        if (r == -EOPNOTSUPP) {
                fprintf(stderr, "%s\n", err.message);
                return CHILD_SKIP;
        }
        if (r < 0)
                return 3;
        if (connect_to(allowed_port) != 0)
                return 4;
        if (connect_to(other_port) != -EACCES)
                return 5;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno != EACCES)
                return 6;
        close(fd);
        return 0;
}

static void test_confined(void **state) {
        (void)state;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(child());
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) == CHILD_SKIP)
                skip();
        assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bad_arguments),
                cmocka_unit_test(test_confined),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd_count.h"
#include "glove/base/child.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* A child that waits to be killed. */
static pid_t sleeper(void) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

/* True when pid is no longer a child of ours (reaped). */
static bool reaped(pid_t pid) {
        return waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static void test_cleanup_kills_and_reaps(void **state) {
        (void)state;
        int before = count_fds();
        pid_t pid = sleeper();
        {
                _cleanup_child_ struct glove_child c = GLOVE_CHILD_INIT;
                assert_int_equal(glove_child_open(pid, &c), 0);
                assert_int_equal(c.pid, pid);
                assert_true(c.pidfd >= 0);
                assert_true(fcntl(c.pidfd, F_GETFD) & FD_CLOEXEC);
                assert_int_equal(count_fds(), before + 1);
                errno = EXDEV;
        }
        assert_int_equal(errno, EXDEV);
        assert_true(reaped(pid));
        assert_int_equal(count_fds(), before);
}

static void test_cleanup_reaps_exited_child(void **state) {
        (void)state;
        int before = count_fds();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(3);
        struct glove_child c;
        assert_int_equal(glove_child_open(pid, &c), 0);
        /* Wait until it is a zombie, without reaping it. */
        siginfo_t si;
        assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
        glove_child_kill_and_reap(&c);
        assert_int_equal(c.pid, -1);
        assert_int_equal(c.pidfd, -1);
        assert_true(reaped(pid));
        /* A second call on the emptied child does nothing. */
        glove_child_kill_and_reap(&c);
        glove_child_kill_and_reap(NULL);
        assert_int_equal(count_fds(), before);
}

static void test_take_disarms(void **state) {
        (void)state;
        int before = count_fds();
        int go[2];
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* Exits 7 once the parent closes its end: had the cleanup
                 * run, the child would have died of SIGKILL instead. */
                close(go[1]);
                char b;
                (void)read(go[0], &b, 1);
                _exit(7);
        }
        close(go[0]);
        struct glove_child kept;
        {
                _cleanup_child_ struct glove_child c = GLOVE_CHILD_INIT;
                assert_int_equal(glove_child_open(pid, &c), 0);
                kept = glove_child_take(&c);
                assert_int_equal(c.pid, -1);
                assert_int_equal(c.pidfd, -1);
        }
        assert_int_equal(kept.pid, pid);
        close(go[1]);
        siginfo_t si = {0};
        assert_int_equal(waitid(P_PIDFD, (id_t)kept.pidfd, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_EXITED);
        assert_int_equal(si.si_status, 7);
        close(kept.pidfd);
        assert_int_equal(count_fds(), before);
}

static void test_nonblocking_pidfd(void **state) {
        (void)state;
        int before = count_fds();
        pid_t pid = sleeper();
        {
                _cleanup_child_ struct glove_child c = GLOVE_CHILD_INIT;
                assert_int_equal(glove_child_open(pid, &c), 0);
                /* As an event loop would have it: waitid answers EAGAIN
                 * until the child has exited. */
                assert_int_equal(fcntl(c.pidfd, F_SETFL, O_NONBLOCK), 0);
        }
        assert_true(reaped(pid));
        assert_int_equal(count_fds(), before);
}

static void test_without_pidfd(void **state) {
        (void)state;
        pid_t pid = sleeper();
        {
                _cleanup_child_ struct glove_child c = {.pid = pid, .pidfd = -1};
        }
        assert_true(reaped(pid));
}

static void test_open_errors(void **state) {
        (void)state;
        struct glove_child c = {.pid = 5, .pidfd = 5};
        assert_int_equal(glove_child_open(0, &c), -EINVAL);
        assert_int_equal(c.pid, -1);
        assert_int_equal(c.pidfd, -1);
        assert_int_equal(glove_child_open(-4, &c), -EINVAL);
        /* A reaped child has no process left to open. */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(0);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        assert_int_equal(glove_child_open(pid, &c), -ESRCH);
        assert_int_equal(c.pid, -1);
        glove_child_kill_and_reap(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cleanup_kills_and_reaps),
                cmocka_unit_test(test_cleanup_reaps_exited_child),
                cmocka_unit_test(test_take_disarms),
                cmocka_unit_test(test_nonblocking_pidfd),
                cmocka_unit_test(test_without_pidfd),
                cmocka_unit_test(test_open_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's standard output, prepared without changing the description
 * it shares with its caller (glove/remote_executor/output.h), on real
 * pipes, sockets, files and terminals that the test holds too: their
 * file-status flags, read through the test's own descriptor of the same
 * description, must be what they were. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_clock.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/remote_executor/frame.h"
#include "glove/remote_executor/output.h"

#define PROC_FD "/proc/self/fd"

static int flags_of(int fd) {
        int f = fcntl(fd, F_GETFL);
        assert_true(f >= 0);
        return f;
}

static void same_object(int a, int b) {
        struct stat sa, sb;
        assert_int_equal(fstat(a, &sa), 0);
        assert_int_equal(fstat(b, &sb), 0);
        assert_true(sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}

/* Writes 1 KiB frames to fd with a deadline already passed (one attempt
 * each, no wait) until one does not fit: returns how many went out. A
 * descriptor that blocked would hang here (and the test's timeout fail it). */
static size_t fill(int fd) {
        static char payload[1024];
        memset(payload, 'x', sizeof(payload));
        uint64_t t = 100;
        struct fake_clock c = { .times = &t, .n = 1 };
        struct glove_remote_executor_clock clock = fake_clock_of(&c);
        for (size_t n = 0;; n++) {
                struct glove_error err = { 0 };
                int r = glove_remote_executor_frame_write(fd, &clock, 0, payload, sizeof(payload), &err);
                if (r < 0) {
                        assert_int_equal(r, -ETIMEDOUT);
                        assert_string_equal(err.code, "executor.write_timeout");
                        return n;
                }
                assert_true(n < 100000);
        }
}

/* A blocking pipe: reopened as a private non-blocking description of the
 * same pipe; the shared one keeps its flags while the output is full and
 * after release. */
static void test_pipe_reopened(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        int before = flags_of(p.fd[1]);
        assert_false(before & O_NONBLOCK);
        struct glove_remote_executor_output out;
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_output_open(p.fd[1], PROC_FD, &out, &err), 0);
        assert_int_equal(out.mode, GLOVE_REMOTE_EXECUTOR_OUTPUT_REOPENED);
        assert_int_equal(out.orig_fd, p.fd[1]);
        assert_true(out.fd >= 0 && out.fd != p.fd[1]);
        same_object(out.fd, p.fd[1]);
        assert_true(flags_of(out.fd) & O_NONBLOCK);
        assert_true(fcntl(out.fd, F_GETFD) & FD_CLOEXEC);
        assert_int_equal(flags_of(p.fd[1]), before);
        assert_true(fill(out.fd) > 0);
        assert_int_equal(flags_of(p.fd[1]), before);
        /* The frames went into the caller's pipe. */
        uint8_t prefix[4];
        assert_int_equal(read(p.fd[0], prefix, 4), 4);
        assert_int_equal(prefix[2], 4); /* 1024 bytes */
        int fd = out.fd;
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed */
        assert_int_equal(out.fd, -1);
        assert_int_equal(flags_of(p.fd[1]), before);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
}

/* A blocking socket: used as it is, written with MSG_DONTWAIT; a full
 * socket is a write timeout, not a wait, and its flags never change. */
static void test_socket_as_is(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_socketpair(&p, SOCK_STREAM), 0);
        int before = flags_of(p.fd[1]);
        assert_false(before & O_NONBLOCK);
        struct glove_remote_executor_output out;
        assert_int_equal(glove_remote_executor_output_open(p.fd[1], PROC_FD, &out, NULL), 0);
        assert_int_equal(out.mode, GLOVE_REMOTE_EXECUTOR_OUTPUT_SOCKET);
        assert_int_equal(out.fd, p.fd[1]);
        assert_true(fill(out.fd) > 0);
        assert_int_equal(flags_of(p.fd[1]), before);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(fcntl(p.fd[1], F_GETFD) >= 0, 1); /* the caller's stays open */
        assert_int_equal(flags_of(p.fd[1]), before);
}

/* A regular file never waits: used as it is. So is a descriptor the caller
 * made non-blocking itself. */
static void test_direct(void **state) {
        (void)state;
        char path[] = "/tmp/glove-test-rexec-out-XXXXXX";
        _cleanup_close_ int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(unlink(path), 0);
        int before = flags_of(fd);
        struct glove_remote_executor_output out;
        assert_int_equal(glove_remote_executor_output_open(fd, PROC_FD, &out, NULL), 0);
        assert_int_equal(out.mode, GLOVE_REMOTE_EXECUTOR_OUTPUT_DIRECT);
        assert_int_equal(out.fd, fd);
        uint64_t t = 100;
        struct fake_clock c = { .times = &t, .n = 1 };
        struct glove_remote_executor_clock clock = fake_clock_of(&c);
        assert_int_equal(glove_remote_executor_frame_write(out.fd, &clock, 0, "{}", 2, NULL), 0);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(flags_of(fd), before);
        assert_int_equal(lseek(fd, 0, SEEK_END), 6);

        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, O_NONBLOCK), 0);
        before = flags_of(p.fd[1]);
        assert_int_equal(glove_remote_executor_output_open(p.fd[1], PROC_FD, &out, NULL), 0);
        assert_int_equal(out.mode, GLOVE_REMOTE_EXECUTOR_OUTPUT_DIRECT);
        assert_int_equal(out.fd, p.fd[1]);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(flags_of(p.fd[1]), before);
}

/* A terminal (the slave of a pseudo-terminal): reopened like a pipe. */
static void test_terminal_reopened(void **state) {
        (void)state;
        _cleanup_close_ int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 || !ptsname(master)) {
                print_message("skipping: no pseudo-terminal here (%s)\n", strerror(errno));
                return;
        }
        _cleanup_close_ int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(slave >= 0);
        int before = flags_of(slave);
        struct glove_remote_executor_output out;
        assert_int_equal(glove_remote_executor_output_open(slave, PROC_FD, &out, NULL), 0);
        assert_int_equal(out.mode, GLOVE_REMOTE_EXECUTOR_OUTPUT_REOPENED);
        same_object(out.fd, slave);
        assert_true(flags_of(out.fd) & O_NONBLOCK);
        assert_int_equal(flags_of(slave), before);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(flags_of(slave), before);
}

/* The last resort, when no private description can be had: O_NONBLOCK on
 * the shared description, cleared again on release (and only it). */
static void shared_case(int fd, const char *fd_dir) {
        int before = flags_of(fd);
        struct glove_remote_executor_output out;
        assert_int_equal(glove_remote_executor_output_open(fd, fd_dir, &out, NULL), 0);
        assert_int_equal(out.mode, GLOVE_REMOTE_EXECUTOR_OUTPUT_SHARED);
        assert_int_equal(out.fd, fd);
        assert_int_equal(flags_of(fd), before | O_NONBLOCK);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(flags_of(fd), before);
        assert_int_equal(out.fd, -1);
        /* A second release does nothing. */
        assert_int_equal(fcntl(fd, F_SETFL, before | O_NONBLOCK), 0);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(flags_of(fd), before | O_NONBLOCK);
        assert_int_equal(fcntl(fd, F_SETFL, before), 0);
}

static char tmpdir[64];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void)st;
        (void)ftw;
        return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void test_shared_last_resort(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        /* No directory to reopen through. */
        shared_case(p.fd[1], NULL);
        shared_case(p.fd[1], "/nonexistent-glove-test");
        /* An entry that reaches another pipe: refused by st_ino. */
        _cleanup_fd_pair_ struct glove_fd_pair other = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&other, 0), 0);
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/glove-test-rexec-fd-XXXXXX");
        assert_non_null(mkdtemp(tmpdir));
        char link[128], target[64];
        snprintf(link, sizeof(link), "%s/%d", tmpdir, p.fd[1]);
        snprintf(target, sizeof(target), PROC_FD "/%d", other.fd[1]);
        assert_int_equal(symlink(target, link), 0);
        shared_case(p.fd[1], tmpdir);
        /* A named FIFO whose reader has gone cannot be reopened for
         * writing without blocking (ENXIO, fifo(7)). */
        char fifo[128];
        snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        int r = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(r >= 0);
        _cleanup_close_ int w = open(fifo, O_WRONLY | O_CLOEXEC);
        assert_true(w >= 0);
        assert_int_equal(close(r), 0);
        shared_case(w, PROC_FD);
        assert_int_equal(nftw(tmpdir, remove_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
        /* Release clears O_NONBLOCK only: a flag someone else set meanwhile stays. */
        struct glove_remote_executor_output out;
        assert_int_equal(glove_remote_executor_output_open(p.fd[1], NULL, &out, NULL), 0);
        assert_int_equal(fcntl(p.fd[1], F_SETFL, flags_of(p.fd[1]) | O_APPEND), 0);
        assert_int_equal(glove_remote_executor_output_release(&out), 0);
        assert_int_equal(flags_of(p.fd[1]) & (O_APPEND | O_NONBLOCK), O_APPEND);
}

static void test_arguments(void **state) {
        (void)state;
        struct glove_remote_executor_output out;
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_output_open(1, PROC_FD, NULL, &err), -EINVAL);
        assert_string_equal(err.code, "executor.invalid_argument");
        glove_error_clear(&err);
        assert_int_equal(glove_remote_executor_output_open(-1, PROC_FD, &out, &err), -EINVAL);
        assert_int_equal(out.fd, -1);
        glove_error_clear(&err);
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(glove_remote_executor_output_open(fd, PROC_FD, &out, &err), -EBADF);
        assert_string_equal(err.code, "executor.internal");
        assert_int_equal(out.fd, -1);
        assert_int_equal(glove_remote_executor_output_release(NULL), 0);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pipe_reopened),    cmocka_unit_test(test_socket_as_is),
                cmocka_unit_test(test_direct),           cmocka_unit_test(test_terminal_reopened),
                cmocka_unit_test(test_shared_last_resort), cmocka_unit_test(test_arguments),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

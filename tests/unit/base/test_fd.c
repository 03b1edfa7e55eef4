/* SPDX-License-Identifier: Apache-2.0 */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd_count.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"

/* A private directory per test run; dirfd open for the whole run. */
static char dir[64];
static int dirfd_ = -1;

static int setup(void **state) {
        (void)state;
        snprintf(dir, sizeof(dir), "/tmp/glove-test-fd-XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        dirfd_ = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state) {
        (void)state;
        const char *names[] = {"exact", "over", "empty", "zero", "fifo", "link", "big", "nul"};
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(names); i++)
                (void)unlinkat(dirfd_, names[i], 0);
        close(dirfd_);
        return rmdir(dir);
}

/* Writes n bytes of a repeating pattern into dir/name. */
static void make_file(const char *name, size_t n) {
        int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        char *buf = malloc(n ? n : 1);
        assert_non_null(buf);
        for (size_t i = 0; i < n; i++)
                buf[i] = (char)('a' + i % 26);
        assert_int_equal(glove_fd_write_all(fd, buf, n), 0);
        free(buf);
        close(fd);
}

static void assert_pattern(const char *buf, size_t n) {
        for (size_t i = 0; i < n; i++)
                assert_int_equal(buf[i], (char)('a' + i % 26));
        assert_int_equal(buf[n], '\0');
}

static bool has_flag(int fd, int getcmd, int flag) {
        int f = fcntl(fd, getcmd);
        assert_true(f >= 0);
        return (f & flag) != 0;
}

/* ---- pairs ---- */

static void test_pair_pipe(void **state) {
        (void)state;
        int before = count_fds();
        {
                _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
                assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
                assert_true(has_flag(p.fd[0], F_GETFD, FD_CLOEXEC));
                assert_true(has_flag(p.fd[1], F_GETFD, FD_CLOEXEC));
                assert_false(has_flag(p.fd[0], F_GETFL, O_NONBLOCK));
                assert_int_equal(write(p.fd[1], "x", 1), 1);
                char c;
                assert_int_equal(read(p.fd[0], &c, 1), 1);
                assert_int_equal(c, 'x');
                assert_int_equal(count_fds(), before + 2);
        }
        assert_int_equal(count_fds(), before);
        {
                _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
                assert_int_equal(glove_fd_pair_pipe(&p, O_NONBLOCK), 0);
                assert_true(has_flag(p.fd[0], F_GETFL, O_NONBLOCK));
                assert_true(has_flag(p.fd[1], F_GETFD, FD_CLOEXEC));
        }
        assert_int_equal(count_fds(), before);
}

static void test_pair_failure_leaves_empty(void **state) {
        (void)state;
        int before = count_fds();
        struct glove_fd_pair p = {{7, 8}};
        assert_int_equal(glove_fd_pair_pipe(&p, -1 & ~O_CLOEXEC), -EINVAL);
        assert_int_equal(p.fd[0], -1);
        assert_int_equal(p.fd[1], -1);
        p.fd[0] = 7;
        assert_int_equal(glove_fd_pair_socketpair(&p, 0x7fff), -EINVAL);
        assert_int_equal(p.fd[0], -1);
        assert_int_equal(p.fd[1], -1);

        /* Out of descriptors but one: nothing half-made is left behind. */
        struct rlimit old, low;
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
        int highest = -1;
        for (int fd = 0; fd < 1024; fd++)
                if (fcntl(fd, F_GETFD) >= 0)
                        highest = fd;
        low = old;
        low.rlim_cur = (rlim_t)highest + 1 + 8;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        struct glove_fd_vec fill = GLOVE_FD_VEC_INIT;
        for (;;) {
                int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        break;
                assert_int_equal(glove_fd_vec_push(&fill, fd), 0);
        }
        assert_true(fill.n > 0);
        close(glove_fd_take(&fill.fd[fill.n - 1]));
        int r = glove_fd_pair_pipe(&p, 0);
        int r2 = glove_fd_pair_socketpair(&p, SOCK_STREAM);
        glove_fd_vec_clear(&fill);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
        assert_int_equal(r, -EMFILE);
        assert_int_equal(r2, -EMFILE);
        assert_int_equal(p.fd[0], -1);
        assert_int_equal(p.fd[1], -1);
        assert_int_equal(count_fds(), before);
}

static void test_pair_socketpair(void **state) {
        (void)state;
        int before = count_fds();
        {
                _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
                assert_int_equal(glove_fd_pair_socketpair(&p, SOCK_SEQPACKET | SOCK_NONBLOCK), 0);
                assert_true(has_flag(p.fd[0], F_GETFD, FD_CLOEXEC));
                assert_true(has_flag(p.fd[1], F_GETFD, FD_CLOEXEC));
                assert_true(has_flag(p.fd[1], F_GETFL, O_NONBLOCK));
                assert_int_equal(send(p.fd[0], "ab", 2, 0), 2);
                char b[4];
                assert_int_equal(recv(p.fd[1], b, sizeof(b), 0), 2);
                assert_int_equal(count_fds(), before + 2);
        }
        assert_int_equal(count_fds(), before);
}

/* ---- bounded reads ---- */

static void test_read_exactly_max(void **state) {
        (void)state;
        int before = count_fds();
        make_file("exact", 100000);
        _cleanup_free_ char *buf = NULL;
        size_t len = 1;
        struct glove_error err = {0};
        assert_int_equal(glove_file_read_bounded(dirfd_, "exact", O_NOFOLLOW, 100000, &buf, &len, &err), 0);
        assert_int_equal(len, 100000);
        assert_pattern(buf, len);
        assert_false(glove_error_is_set(&err));
        assert_int_equal(count_fds(), before);
}

static void test_read_max_plus_one(void **state) {
        (void)state;
        int before = count_fds();
        make_file("over", 100001);
        char *buf = (char *)1;
        size_t len = 1;
        struct glove_error err = {0};
        assert_int_equal(glove_file_read_bounded(dirfd_, "over", 0, 100000, &buf, &len, &err), -EFBIG);
        assert_null(buf);
        assert_int_equal(len, 0);
        assert_string_equal(err.code, "file.too_large");
        assert_string_equal(err.message, "over: larger than 100000 bytes");
        assert_int_equal(count_fds(), before);

        /* The descriptor form says the same without a path. */
        glove_error_clear(&err);
        int fd = openat(dirfd_, "over", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(glove_fd_read_bounded(fd, 100000, &buf, &len, &err), -EFBIG);
        assert_string_equal(err.message, "larger than 100000 bytes");
        close(fd);
        assert_int_equal(count_fds(), before);
}

static void test_read_empty(void **state) {
        (void)state;
        int before = count_fds();
        make_file("empty", 0);
        _cleanup_free_ char *buf = NULL;
        size_t len = 1;
        assert_int_equal(glove_file_read_bounded(dirfd_, "empty", 0, 10, &buf, &len, NULL), 0);
        assert_non_null(buf);
        assert_int_equal(len, 0);
        assert_int_equal(buf[0], '\0');
        free(TAKE_PTR(buf));
        /* A bound of 0 takes an empty file and refuses one byte. */
        assert_int_equal(glove_file_read_bounded(dirfd_, "empty", 0, 0, &buf, &len, NULL), 0);
        assert_int_equal(len, 0);
        free(TAKE_PTR(buf));
        make_file("zero", 1);
        assert_int_equal(glove_file_read_bounded(dirfd_, "zero", 0, 0, &buf, &len, NULL), -EFBIG);
        assert_null(buf);
        assert_int_equal(count_fds(), before);
}

static void test_read_keeps_nul_bytes(void **state) {
        (void)state;
        int fd = openat(dirfd_, "nul", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(glove_fd_write_all(fd, "a\0b", 3), 0);
        close(fd);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        assert_int_equal(glove_file_read_bounded(dirfd_, "nul", 0, 3, &buf, &len, NULL), 0);
        assert_int_equal(len, 3);
        assert_memory_equal(buf, "a\0b\0", 4);
}

/* Writes n pattern bytes into a pipe from a child process (more than the
 * pipe holds, so the reader sees short reads), then closes it. */
static pid_t pipe_writer(int wfd, int rfd, size_t n) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(rfd);
                char chunk[26 * 41];
                for (size_t i = 0; i < sizeof(chunk); i++)
                        chunk[i] = (char)('a' + i % 26);
                while (n > 0) {
                        size_t k = n < sizeof(chunk) ? n : sizeof(chunk);
                        if (glove_fd_write_all(wfd, chunk, k) < 0)
                                _exit(1);
                        n -= k;
                }
                _exit(0);
        }
        close(wfd);
        return pid;
}

static void test_read_pipe(void **state) {
        (void)state;
        int before = count_fds();
        const size_t sizes[] = {0, 1, 4095, 4096, 4097, 300000};
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(sizes); i++) {
                struct glove_fd_pair p;
                assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
                pid_t pid = pipe_writer(p.fd[1], p.fd[0], sizes[i]);
                _cleanup_free_ char *buf = NULL;
                size_t len = 0;
                assert_int_equal(glove_fd_read_bounded(p.fd[0], 300000, &buf, &len, NULL), 0);
                assert_int_equal(len, sizes[i]);
                assert_pattern(buf, len);
                close(p.fd[0]);
                int st;
                assert_int_equal(waitpid(pid, &st, 0), pid);
                assert_int_equal(st, 0);
        }
        /* max + 1 through a pipe: refused, not truncated. */
        struct glove_fd_pair p;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        pid_t pid = pipe_writer(p.fd[1], p.fd[0], 5001);
        char *buf = NULL;
        size_t len = 0;
        struct glove_error err = {0};
        assert_int_equal(glove_fd_read_bounded(p.fd[0], 5000, &buf, &len, &err), -EFBIG);
        assert_string_equal(err.code, "file.too_large");
        assert_null(buf);
        close(p.fd[0]);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        assert_int_equal(count_fds(), before);
}

static void test_read_fifo(void **state) {
        (void)state;
        int before = count_fds();
        assert_int_equal(mkfifoat(dirfd_, "fifo", 0600), 0);
        /* O_NONBLOCK: the open does not wait for a writer. */
        int w = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        struct glove_error err = {0};
        int rfd = openat(dirfd_, "fifo", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rfd >= 0);
        w = openat(dirfd_, "fifo", O_WRONLY | O_CLOEXEC);
        assert_true(w >= 0);
        /* A writer still open and nothing to read: would block. */
        assert_int_equal(glove_fd_read_bounded(rfd, 100, &buf, &len, &err), -EAGAIN);
        assert_string_equal(err.code, "file.read");
        assert_int_equal(glove_fd_write_all(w, "hello", 5), 0);
        close(w);
        assert_int_equal(glove_fd_read_bounded(rfd, 100, &buf, &len, NULL), 0);
        assert_int_equal(len, 5);
        assert_string_equal(buf, "hello");
        close(rfd);
        free(TAKE_PTR(buf));
        /* Opened by name with O_NONBLOCK and no writer: end of file at once. */
        assert_int_equal(glove_file_read_bounded(dirfd_, "fifo", O_NONBLOCK, 100, &buf, &len, NULL), 0);
        assert_int_equal(len, 0);
        assert_int_equal(count_fds(), before);
}

static void test_read_proc_file(void **state) {
        (void)state;
        int before = count_fds();
        /* st_size is 0 for /proc files: the size is only a hint. */
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        assert_int_equal(glove_file_read_bounded(AT_FDCWD, "/proc/self/status", 0, 1 << 20, &buf, &len, NULL), 0);
        assert_true(len > 0);
        assert_non_null(strstr(buf, "Name:"));
        assert_int_equal(strlen(buf), len);
        assert_int_equal(count_fds(), before);
}

static void test_read_from_offset(void **state) {
        (void)state;
        make_file("exact", 100000);
        int fd = openat(dirfd_, "exact", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(lseek(fd, 99990, SEEK_SET), 99990);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        assert_int_equal(glove_fd_read_bounded(fd, 10, &buf, &len, NULL), 0);
        assert_int_equal(len, 10);
        assert_memory_equal(buf, "uvwxyzabcd", 10); /* 99990 % 26 == 20 */
        close(fd);
}

static void test_read_errors(void **state) {
        (void)state;
        int before = count_fds();
        char *buf = (char *)1;
        size_t len = 1;
        struct glove_error err = {0};
        assert_int_equal(glove_file_read_bounded(dirfd_, "missing", 0, 10, &buf, &len, &err), -ENOENT);
        assert_null(buf);
        assert_int_equal(len, 0);
        assert_string_equal(err.code, "file.open");
        assert_non_null(strstr(err.message, "missing: cannot open: "));

        make_file("big", 3);
        assert_int_equal(symlinkat("big", dirfd_, "link"), 0);
        glove_error_clear(&err);
        assert_int_equal(glove_file_read_bounded(dirfd_, "link", O_NOFOLLOW, 10, &buf, &len, &err), -ELOOP);
        assert_string_equal(err.code, "file.open");
        /* Without O_NOFOLLOW the link is followed. */
        assert_int_equal(glove_file_read_bounded(dirfd_, "link", 0, 10, &buf, &len, NULL), 0);
        assert_int_equal(len, 3);
        free(TAKE_PTR(buf));

        glove_error_clear(&err);
        assert_int_equal(glove_file_read_bounded(AT_FDCWD, dir, O_DIRECTORY, 10, &buf, &len, &err), -EISDIR);
        assert_string_equal(err.code, "file.read");

        const int bad[] = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_PATH, O_TMPFILE};
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(bad); i++) {
                glove_error_clear(&err);
                assert_int_equal(glove_file_read_bounded(dirfd_, "big", bad[i], 10, &buf, &len, &err), -EINVAL);
                assert_string_equal(err.code, "file.invalid_argument");
        }
        assert_int_equal(glove_file_read_bounded(dirfd_, NULL, 0, 10, &buf, &len, NULL), -EINVAL);
        assert_int_equal(glove_file_read_bounded(dirfd_, "big", 0, GLOVE_FD_READ_BOUNDED_MAX + 1, &buf, &len, NULL),
                         -EINVAL);
        assert_int_equal(glove_fd_read_bounded(0, 10, NULL, &len, NULL), -EINVAL);
        assert_int_equal(glove_fd_read_bounded(0, 10, &buf, NULL, NULL), -EINVAL);
        assert_int_equal(glove_fd_read_bounded(-1, 10, &buf, &len, NULL), -EBADF);
        assert_null(buf);
        assert_int_equal(count_fds(), before);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pair_pipe),
                cmocka_unit_test(test_pair_failure_leaves_empty),
                cmocka_unit_test(test_pair_socketpair),
                cmocka_unit_test(test_read_exactly_max),
                cmocka_unit_test(test_read_max_plus_one),
                cmocka_unit_test(test_read_empty),
                cmocka_unit_test(test_read_keeps_nul_bytes),
                cmocka_unit_test(test_read_pipe),
                cmocka_unit_test(test_read_fifo),
                cmocka_unit_test(test_read_proc_file),
                cmocka_unit_test(test_read_from_offset),
                cmocka_unit_test(test_read_errors),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

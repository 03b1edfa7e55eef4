/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd_count.h"
#include "glove/base/cleanup.h"

static bool is_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0;
}

static int new_fd(void) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static void test_fd_take(void **state) {
        (void)state;
        int before = count_fds();
        int kept;
        {
                _cleanup_close_ int fd = new_fd();
                kept = glove_fd_take(&fd);
                assert_int_equal(fd, -1);
        }
        assert_true(is_open(kept));
        assert_int_equal(count_fds(), before + 1);
        close(kept);
        int empty = -1;
        assert_int_equal(glove_fd_take(&empty), -1);
        assert_int_equal(count_fds(), before);
}

static void test_fd_vec_close(void **state) {
        (void)state;
        int before = count_fds();
        int fds[4] = {new_fd(), -1, new_fd(), new_fd()};
        int copy[4];
        memcpy(copy, fds, sizeof(fds));
        errno = EXDEV;
        glove_fd_vec_close(fds, 4);
        assert_int_equal(errno, EXDEV);
        for (int i = 0; i < 4; i++) {
                assert_int_equal(fds[i], -1);
                if (copy[i] >= 0)
                        assert_false(is_open(copy[i]));
        }
        glove_fd_vec_close(NULL, 0);
        assert_int_equal(count_fds(), before);
}

static void test_fd_pair_cleanup(void **state) {
        (void)state;
        int before = count_fds();
        int a, b;
        {
                _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
                p.fd[0] = a = new_fd();
                p.fd[1] = b = new_fd();
                assert_int_equal(count_fds(), before + 2);
        }
        assert_false(is_open(a));
        assert_false(is_open(b));
        assert_int_equal(count_fds(), before);
        {
                /* One end handed out: only the other is closed. */
                _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
                p.fd[0] = new_fd();
                p.fd[1] = new_fd();
                a = glove_fd_take(&p.fd[1]);
        }
        assert_true(is_open(a));
        assert_int_equal(count_fds(), before + 1);
        close(a);
        {
                _cleanup_fd_pair_ struct glove_fd_pair empty = GLOVE_FD_PAIR_INIT;
                assert_int_equal(empty.fd[0], -1);
                assert_int_equal(empty.fd[1], -1);
        }
        glove_fd_pair_close(NULL);
        assert_int_equal(count_fds(), before);
}

static void test_fd_vec_struct(void **state) {
        (void)state;
        int before = count_fds();
        int taken;
        {
                _cleanup_fd_vec_ struct glove_fd_vec v = GLOVE_FD_VEC_INIT;
                assert_int_equal(glove_fd_vec_push(&v, -1), -EBADF);
                for (int i = 0; i < GLOVE_FD_VEC_MAX; i++)
                        assert_int_equal(glove_fd_vec_push(&v, new_fd()), 0);
                assert_int_equal(v.n, GLOVE_FD_VEC_MAX);
                int extra = new_fd();
                assert_int_equal(glove_fd_vec_push(&v, extra), -ENOSPC);
                /* Not taken on failure: still ours to close. */
                assert_true(is_open(extra));
                close(extra);
                taken = glove_fd_take(&v.fd[3]);
                assert_int_equal(count_fds(), before + GLOVE_FD_VEC_MAX);
        }
        assert_true(is_open(taken));
        assert_int_equal(count_fds(), before + 1);
        close(taken);
        struct glove_fd_vec v = GLOVE_FD_VEC_INIT;
        assert_int_equal(glove_fd_vec_push(&v, new_fd()), 0);
        glove_fd_vec_clear(&v);
        assert_int_equal(v.n, 0);
        glove_fd_vec_clear(NULL);
        assert_int_equal(count_fds(), before);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fd_take),
                cmocka_unit_test(test_fd_vec_close),
                cmocka_unit_test(test_fd_pair_cleanup),
                cmocka_unit_test(test_fd_vec_struct),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

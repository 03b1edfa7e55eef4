/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's frame reader, TTL conversion and frame writer
 * (glove/remote_executor/frame.h), on real pipes with scripted clocks. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_clock.h"
#include "glove/base/bytes.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/remote_executor/frame.h"

#define FRAME_SIZE sizeof(struct glove_remote_executor_frame)

static void put(int fd, const void *data, size_t len) {
        assert_int_equal(glove_fd_write_all(fd, data, len), 0);
}

static void put_frame(int fd, const char *json) {
        uint8_t prefix[4];
        glove_put_be32(prefix, (uint32_t)strlen(json));
        put(fd, prefix, 4);
        put(fd, json, strlen(json));
}

static void put_prefix(int fd, uint32_t n) {
        uint8_t prefix[4];
        glove_put_be32(prefix, n);
        put(fd, prefix, 4);
}

static struct glove_remote_executor_frame *new_frame(void) {
        struct glove_remote_executor_frame *f = malloc(FRAME_SIZE);
        assert_non_null(f);
        return f;
}

/* Bytes still waiting in a pipe (the reader consumed no more than it had to). */
static size_t left_in(int fd) {
        int n = 0;
        assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
        return (size_t)n;
}

static void test_read_one_frame_and_its_times(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        put_frame(p.fd[1], "{\"a\":1}");
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        static const uint64_t t[] = { 1000, 1001, 1002, 1003 };
        struct fake_clock fc = { .times = t, .n = 4 };
        struct glove_remote_executor_clock clock = fake_clock_of(&fc);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &clock, 10000, f, &err), 1);
        assert_int_equal(f->len, 7);
        assert_memory_equal(f->payload, "{\"a\":1}", 8); /* and the NUL after it */
        assert_int_equal(f->receive_start_ms, 1000);
        assert_int_equal(f->channel_deadline_ms, 11000);
        assert_int_equal(f->complete_ms, 1003);
        assert_false(glove_error_is_set(&err));
}

/* Two frames in the pipe at once: the first read leaves the second whole. */
static void test_read_leaves_the_next_frame(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        put_frame(p.fd[1], "{}");
        put_frame(p.fd[1], "[1,2]");
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                          &err),
                         1);
        assert_int_equal(f->len, 2);
        assert_int_equal(left_in(p.fd[0]), 9);
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                          &err),
                         1);
        assert_memory_equal(f->payload, "[1,2]", 5);
        glove_fd_pair_close(&p);
}

/* The end of input before a frame's first byte is a clean end (0); inside a
 * prefix or a payload it is frame_truncated. */
static void test_read_end_of_input(void **state) {
        (void)state;
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        struct {
                const char *bytes;
                size_t len;
                int want;
                const char *code;
        } cases[] = {
                { "", 0, 0, NULL },
                { "\0", 1, -EPIPE, "executor.frame_truncated" },
                { "\0\0\0", 3, -EPIPE, "executor.frame_truncated" },
                { "\0\0\0\5", 4, -EPIPE, "executor.frame_truncated" },
                { "\0\0\0\5{\"a\"", 8, -EPIPE, "executor.frame_truncated" },
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(cases); i++) {
                _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
                assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
                if (cases[i].len)
                        put(p.fd[1], cases[i].bytes, cases[i].len);
                close(glove_fd_take(&p.fd[1]));
                struct glove_error err = { 0 };
                int r = glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                         &err);
                assert_int_equal(r, cases[i].want);
                if (cases[i].code)
                        assert_string_equal(err.code, cases[i].code);
                else
                        assert_false(glove_error_is_set(&err));
        }
}

/* An oversized prefix is refused from the prefix alone: no payload byte is
 * read. The largest payload is accepted. */
static void test_read_bounds(void **state) {
        (void)state;
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        put_prefix(p.fd[1], GLOVE_REMOTE_EXECUTOR_FRAME_MAX + 1);
        put(p.fd[1], "xyz", 3);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                          &err),
                         -EMSGSIZE);
        assert_string_equal(err.code, "executor.frame_too_large");
        assert_non_null(strstr(err.message, "16385"));
        assert_int_equal(left_in(p.fd[0]), 3);

        _cleanup_fd_pair_ struct glove_fd_pair q = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&q, 0), 0);
        assert_true(fcntl(q.fd[1], F_SETPIPE_SZ, 65536) >= 65536);
        _cleanup_free_ char *big = malloc(GLOVE_REMOTE_EXECUTOR_FRAME_MAX);
        assert_non_null(big);
        memset(big, ' ', GLOVE_REMOTE_EXECUTOR_FRAME_MAX);
        put_prefix(q.fd[1], GLOVE_REMOTE_EXECUTOR_FRAME_MAX);
        put(q.fd[1], big, GLOVE_REMOTE_EXECUTOR_FRAME_MAX);
        glove_error_clear(&err);
        assert_int_equal(glove_remote_executor_frame_read(q.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                          &err),
                         1);
        assert_int_equal(f->len, GLOVE_REMOTE_EXECUTOR_FRAME_MAX);
}

/* An empty frame is refused, and the stream stays in step: the next frame
 * reads whole. */
static void test_read_empty_frame_keeps_step(void **state) {
        (void)state;
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        put_prefix(p.fd[1], 0);
        put_frame(p.fd[1], "{\"b\":2}");
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                          &err),
                         -ENODATA);
        assert_string_equal(err.code, "executor.frame_empty");
        glove_error_clear(&err);
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                          &err),
                         1);
        assert_memory_equal(f->payload, "{\"b\":2}", 7);
}

/* The channel deadline is taken before the first byte is awaited: a clock
 * already past it ends the read with frame_timeout, whether no byte, part of
 * the prefix or part of the payload had arrived. */
static void test_read_channel_deadline(void **state) {
        (void)state;
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        struct {
                const char *bytes;
                size_t len;
                const uint64_t *times;
                size_t n;
                const char *says;
        } cases[] = {
                /* start 0, then the first wait already sees the deadline */
                { "", 0, (const uint64_t[]){ 0, 10000 }, 2, "0 of the 4 bytes" },
                { "\0\0", 2, (const uint64_t[]){ 0, 0, 10000 }, 3, "2 of the 4 bytes" },
                { "\0\0\0\5{\"", 6, (const uint64_t[]){ 500, 500, 500, 10499, 10500 }, 5, "2 of the 5 bytes" },
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(cases); i++) {
                _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
                assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
                if (cases[i].len)
                        put(p.fd[1], cases[i].bytes, cases[i].len);
                struct fake_clock fc = { .times = cases[i].times, .n = cases[i].n };
                struct glove_remote_executor_clock clock = fake_clock_of(&fc);
                struct glove_error err = { 0 };
                assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &clock, 10000, f, &err), -ETIMEDOUT);
                assert_string_equal(err.code, "executor.frame_timeout");
                assert_non_null(strstr(err.message, cases[i].says));
                assert_int_equal(f->channel_deadline_ms, cases[i].times[0] + 10000);
        }
}

/* With the real clock, a writer that stays silent ends the read at the
 * channel timeout (a short one here; the writer is still open, so only the
 * deadline can end it). */
static void test_read_silent_writer_times_out(void **state) {
        (void)state;
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, 0), 0);
        put(p.fd[1], "\0\0\0\2{", 5);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 30, f, &err),
                         -ETIMEDOUT);
        assert_string_equal(err.code, "executor.frame_timeout");
        assert_true(f->channel_deadline_ms == f->receive_start_ms + 30);
}

/* A non-blocking input works too: EAGAIN after a wake-up waits again. */
static void test_read_nonblocking_input(void **state) {
        (void)state;
        _cleanup_free_ struct glove_remote_executor_frame *f = new_frame();
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, O_NONBLOCK), 0);
        put_frame(p.fd[1], "{\"c\":3}");
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_read(p.fd[0], &glove_remote_executor_clock_monotonic, 10000, f,
                                                          &err),
                         1);
        assert_int_equal(f->len, 7);
}

/* The request deadline is the receive start plus the TTL: the TTL minus
 * all the time the frame took to arrive (idle time before it included). */
static void test_ttl_deadline(void **state) {
        (void)state;
        uint64_t d = 0;
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_ttl_deadline(1000, 1000, 500, &d, &err), 0);
        assert_int_equal(d, 1500);
        assert_int_equal(glove_remote_executor_ttl_deadline(1000, 1300, 500, &d, &err), 0);
        assert_int_equal(d, 1500);
        assert_int_equal(glove_remote_executor_ttl_deadline(1000, 1499, 500, &d, &err), 0);
        assert_int_equal(d, 1500);
        assert_int_equal(glove_remote_executor_ttl_deadline(1000, 1000, 1, &d, &err), 0);
        assert_int_equal(d, 1001);
        assert_int_equal(glove_remote_executor_ttl_deadline(0, 0, GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS, &d, &err), 0);
        assert_int_equal(d, GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS);
        /* A clock behind the start counts no receive time. */
        assert_int_equal(glove_remote_executor_ttl_deadline(1000, 900, 50, &d, &err), 0);
        assert_int_equal(d, 950);
        assert_false(glove_error_is_set(&err));
}

static void test_ttl_expired(void **state) {
        (void)state;
        uint64_t d = 42;
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_ttl_deadline(1000, 1500, 500, &d, &err), -ETIME);
        assert_string_equal(err.code, "executor.ttl_expired");
        assert_non_null(strstr(err.message, "500 ms"));
        assert_int_equal(d, 42);
        glove_error_clear(&err);
        assert_int_equal(glove_remote_executor_ttl_deadline(1000, 900000, 60000, &d, &err), -ETIME);
        assert_int_equal(d, 42);
}

static void test_ttl_bounds(void **state) {
        (void)state;
        uint64_t d = 42;
        const int64_t bad[] = { 0, -1, GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS + 1, INT64_MAX, INT64_MIN };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(bad); i++) {
                struct glove_error err = { 0 };
                assert_int_equal(glove_remote_executor_ttl_deadline(0, 0, bad[i], &d, &err), -EINVAL);
                assert_string_equal(err.code, "executor.invalid_argument");
        }
        assert_int_equal(glove_remote_executor_ttl_deadline(0, 0, 5, NULL, NULL), -EINVAL);
        assert_int_equal(d, 42);
}

static void test_write_frame(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, O_NONBLOCK), 0);
        struct glove_error err = { 0 };
        uint64_t now = glove_remote_executor_clock_monotonic.now_ms(NULL);
        assert_int_equal(glove_remote_executor_frame_write(p.fd[1], &glove_remote_executor_clock_monotonic, now + 1000,
                                                           "{\"x\":1}", 7, &err),
                         0);
        uint8_t got[16];
        assert_int_equal(read(p.fd[0], got, sizeof(got)), 11);
        assert_memory_equal(got, "\0\0\0\7{\"x\":1}", 11);
        /* A deadline that has passed still gets one attempt without waiting. */
        assert_int_equal(glove_remote_executor_frame_write(p.fd[1], &glove_remote_executor_clock_monotonic, 0, "{}", 2,
                                                           &err),
                         0);
        assert_int_equal(read(p.fd[0], got, sizeof(got)), 6);
}

/* Fills a non-blocking pipe until a write would block. */
static void fill(int fd) {
        char junk[4096];
        memset(junk, 'j', sizeof(junk));
        for (;;) {
                ssize_t n = write(fd, junk, sizeof(junk));
                if (n < 0) {
                        assert_int_equal(errno, EAGAIN);
                        return;
                }
        }
}

/* An output with no room: with a deadline passed, the one attempt fails at
 * once; with a short deadline, the wait ends at it. Nothing waits past it. */
static void test_write_full_output_times_out(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, O_NONBLOCK), 0);
        fill(p.fd[1]);
        struct glove_error err = { 0 };
        static const uint64_t t[] = { 5000 };
        struct fake_clock fc = { .times = t, .n = 1 };
        struct glove_remote_executor_clock clock = fake_clock_of(&fc);
        assert_int_equal(glove_remote_executor_frame_write(p.fd[1], &clock, 5000, "{}", 2, &err), -ETIMEDOUT);
        assert_string_equal(err.code, "executor.write_timeout");
        assert_non_null(strstr(err.message, "0 of 6 bytes"));
        glove_error_clear(&err);
        uint64_t now = glove_remote_executor_clock_monotonic.now_ms(NULL);
        assert_int_equal(glove_remote_executor_frame_write(p.fd[1], &glove_remote_executor_clock_monotonic, now + 30,
                                                           "{}", 2, &err),
                         -ETIMEDOUT);
        assert_string_equal(err.code, "executor.write_timeout");
}

static void test_write_reader_gone(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, O_NONBLOCK), 0);
        close(glove_fd_take(&p.fd[0]));
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_write(p.fd[1], &glove_remote_executor_clock_monotonic, UINT64_MAX,
                                                           "{}", 2, &err),
                         -EPIPE);
        assert_string_equal(err.code, "executor.write_failed");
}

static void test_write_bounds(void **state) {
        (void)state;
        _cleanup_fd_pair_ struct glove_fd_pair p = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&p, O_NONBLOCK), 0);
        _cleanup_free_ char *big = calloc(1, GLOVE_REMOTE_EXECUTOR_FRAME_MAX + 1);
        assert_non_null(big);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_frame_write(p.fd[1], &glove_remote_executor_clock_monotonic, UINT64_MAX,
                                                           big, 0, &err),
                         -EINVAL);
        assert_string_equal(err.code, "executor.invalid_argument");
        assert_int_equal(glove_remote_executor_frame_write(p.fd[1], &glove_remote_executor_clock_monotonic, UINT64_MAX,
                                                           big, GLOVE_REMOTE_EXECUTOR_FRAME_MAX + 1, NULL),
                         -EINVAL);
        assert_int_equal(left_in(p.fd[0]), 0);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read_one_frame_and_its_times),
                cmocka_unit_test(test_read_leaves_the_next_frame),
                cmocka_unit_test(test_read_end_of_input),
                cmocka_unit_test(test_read_bounds),
                cmocka_unit_test(test_read_empty_frame_keeps_step),
                cmocka_unit_test(test_read_channel_deadline),
                cmocka_unit_test(test_read_silent_writer_times_out),
                cmocka_unit_test(test_read_nonblocking_input),
                cmocka_unit_test(test_ttl_deadline),
                cmocka_unit_test(test_ttl_expired),
                cmocka_unit_test(test_ttl_bounds),
                cmocka_unit_test(test_write_frame),
                cmocka_unit_test(test_write_full_output_times_out),
                cmocka_unit_test(test_write_reader_gone),
                cmocka_unit_test(test_write_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

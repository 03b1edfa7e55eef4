/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/services/frame.h on real socket pairs: round trips at the bounds,
 * the empty and oversized lengths (the body left unread), end of stream at
 * and inside a frame, a deadline against a silent peer, the stop
 * descriptor, and the queued-input peek.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/eventfd.h>

#include "helpers.h"

struct pair {
        int a, b;
};

static int setup(void **state) {
        struct pair *p = calloc(1, sizeof(*p));
        assert_non_null(p);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        p->a = sv[0];
        p->b = sv[1];
        *state = p;
        return 0;
}

static int teardown(void **state) {
        struct pair *p = *state;
        if (p->a >= 0)
                close(p->a);
        if (p->b >= 0)
                close(p->b);
        free(p);
        return 0;
}

static uint64_t in_ms(uint64_t ms) {
        return glove_time_monotonic_ms() + ms;
}

static void send_header(int fd, uint32_t n) {
        uint8_t h[4] = { (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n };
        assert_int_equal(send(fd, h, 4, MSG_NOSIGNAL), 4);
}

static void test_round_trip(void **state) {
        struct pair *p = *state;
        static uint8_t in[GLOVE_SERVICES_FRAME_MAX], out[GLOVE_SERVICES_FRAME_MAX];
        for (size_t i = 0; i < sizeof(in); i++)
                in[i] = (uint8_t)(i * 7 + 1);
        const size_t sizes[] = { 1, 2, 300, GLOVE_SERVICES_FRAME_MAX };
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
                struct glove_error err = { 0 };
                expect_ok(glove_services_frame_write(p->a, -1, in_ms(5000), in, sizes[k], &err), err);
                size_t len = 0;
                expect_ok(glove_services_frame_read(p->b, -1, in_ms(5000), out, &len, &err), err);
                assert_int_equal(len, sizes[k]);
                assert_memory_equal(out, in, len);
        }
        /* The wire form: a big-endian length, then the payload. */
        struct glove_error err = { 0 };
        expect_ok(glove_services_frame_write(p->a, -1, 0, (const uint8_t *)"abc", 3, &err), err);
        uint8_t raw[8];
        assert_int_equal(recv(p->b, raw, sizeof(raw), 0), 7);
        assert_memory_equal(raw, "\0\0\0\3abc", 7);
        /* Two frames back to back: read one at a time, nothing past each. */
        expect_ok(glove_services_frame_write(p->a, -1, 0, (const uint8_t *)"one", 3, &err), err);
        expect_ok(glove_services_frame_write(p->a, -1, 0, (const uint8_t *)"two", 3, &err), err);
        size_t len = 0;
        expect_ok(glove_services_frame_read(p->b, -1, 0, out, &len, &err), err);
        assert_memory_equal(out, "one", 3);
        bool queued = false;
        expect_ok(glove_services_queued(p->b, &queued, NULL, &err), err);
        assert_true(queued);
        expect_ok(glove_services_frame_read(p->b, -1, 0, out, &len, &err), err);
        assert_memory_equal(out, "two", 3);
}

static void test_bad_lengths(void **state) {
        struct pair *p = *state;
        static uint8_t buf[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 99;
        struct glove_error err = { 0 };
        send_header(p->a, 0);
        expect_error(glove_services_frame_read(p->b, -1, in_ms(5000), buf, &len, &err), err, -EBADMSG,
                     "services.frame_empty");
        assert_int_equal(len, 0);

        const uint32_t big[] = { GLOVE_SERVICES_FRAME_MAX + 1, 0xffffffffu };
        for (size_t i = 0; i < 2; i++) {
                send_header(p->a, big[i]);
                assert_int_equal(send(p->a, "body", 4, MSG_NOSIGNAL), 4);
                glove_error_clear(&err);
                expect_error(glove_services_frame_read(p->b, -1, in_ms(5000), buf, &len, &err), err, -EMSGSIZE,
                             "services.frame_too_large");
                /* The body was not read. */
                char rest[8];
                assert_int_equal(recv(p->b, rest, sizeof(rest), 0), 4);
                assert_memory_equal(rest, "body", 4);
        }

        /* Writing refuses the same lengths and sends nothing. */
        glove_error_clear(&err);
        expect_error(glove_services_frame_write(p->a, -1, 0, buf, 0, &err), err, -EBADMSG, "services.frame_empty");
        glove_error_clear(&err);
        expect_error(glove_services_frame_write(p->a, -1, 0, buf, GLOVE_SERVICES_FRAME_MAX + 1, &err), err, -EMSGSIZE,
                     "services.frame_too_large");
        bool queued = true;
        expect_ok(glove_services_queued(p->b, &queued, NULL, &err), err);
        assert_false(queued);
}

static void test_closed(void **state) {
        struct pair *p = *state;
        uint8_t buf[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        /* Inside the payload. */
        send_header(p->a, 10);
        assert_int_equal(send(p->a, "12345", 5, MSG_NOSIGNAL), 5);
        assert_int_equal(shutdown(p->a, SHUT_WR), 0);
        expect_error(glove_services_frame_read(p->b, -1, in_ms(5000), buf, &len, &err), err, -EPROTO,
                     "services.closed");
        close(p->a);
        close(p->b);

        /* Inside the length. */
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        p->a = sv[0];
        p->b = sv[1];
        assert_int_equal(send(p->a, "\0\0", 2, MSG_NOSIGNAL), 2);
        assert_int_equal(shutdown(p->a, SHUT_WR), 0);
        glove_error_clear(&err);
        expect_error(glove_services_frame_read(p->b, -1, in_ms(5000), buf, &len, &err), err, -EPROTO,
                     "services.closed");
        close(p->b);

        /* At a frame boundary. */
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        close(p->a);
        p->a = sv[0];
        p->b = sv[1];
        struct glove_error werr = { 0 };
        expect_ok(glove_services_frame_write(p->a, -1, 0, (const uint8_t *)"x", 1, &werr), werr);
        close(p->a);
        p->a = -1;
        expect_ok(glove_services_frame_read(p->b, -1, in_ms(5000), buf, &len, &werr), werr);
        glove_error_clear(&err);
        expect_error(glove_services_frame_read(p->b, -1, in_ms(5000), buf, &len, &err), err, -EPIPE,
                     "services.closed");
        bool queued = true, eof = false;
        expect_ok(glove_services_queued(p->b, &queued, &eof, &err), err);
        assert_false(queued);
        assert_true(eof);
        /* Writing to a peer that is gone. */
        glove_error_clear(&err);
        expect_error(glove_services_frame_write(p->b, -1, 0, (const uint8_t *)"x", 1, &err), err, -EPIPE,
                     "services.closed");
}

static void test_timeout(void **state) {
        struct pair *p = *state;
        uint8_t buf[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        /* A silent peer. */
        expect_error(glove_services_frame_read(p->b, -1, in_ms(100), buf, &len, &err), err, -ETIMEDOUT,
                     "services.timeout");
        /* A peer that stops inside the frame. */
        send_header(p->a, 10);
        glove_error_clear(&err);
        expect_error(glove_services_frame_read(p->b, -1, in_ms(100), buf, &len, &err), err, -ETIMEDOUT,
                     "services.timeout");
        /* A peer that never reads: the send buffer fills up. */
        static uint8_t big[GLOVE_SERVICES_FRAME_MAX];
        int r = 0;
        glove_error_clear(&err);
        for (int i = 0; i < 10000 && r == 0; i++)
                r = glove_services_frame_write(p->b, -1, in_ms(100), big, sizeof(big), &err);
        expect_error(r, err, -ETIMEDOUT, "services.timeout");
}

static void test_cancelled(void **state) {
        struct pair *p = *state;
        int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(stop >= 0);
        uint8_t buf[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        struct glove_error err = { 0 };
        /* Not stopped yet: the deadline decides. */
        expect_error(glove_services_frame_read(p->b, stop, in_ms(50), buf, &len, &err), err, -ETIMEDOUT,
                     "services.timeout");
        uint64_t one = 1;
        assert_int_equal(write(stop, &one, sizeof(one)), sizeof(one));
        glove_error_clear(&err);
        expect_error(glove_services_frame_read(p->b, stop, 0, buf, &len, &err), err, -ECANCELED, "services.cancelled");
        /* A pipe's read end works too, and stop wins over a passed deadline. */
        int pp[2];
        assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
        assert_int_equal(write(pp[1], "x", 1), 1);
        glove_error_clear(&err);
        expect_error(glove_services_frame_read(p->b, pp[0], in_ms(0), buf, &len, &err), err, -ECANCELED,
                     "services.cancelled");
        close(pp[0]);
        close(pp[1]);
        close(stop);
}

static void test_queued(void **state) {
        struct pair *p = *state;
        bool queued = true, eof = true;
        struct glove_error err = { 0 };
        expect_ok(glove_services_queued(p->b, &queued, &eof, &err), err);
        assert_false(queued);
        assert_false(eof);
        assert_int_equal(send(p->a, "z", 1, MSG_NOSIGNAL), 1);
        expect_ok(glove_services_queued(p->b, &queued, &eof, &err), err);
        assert_true(queued);
        assert_false(eof);
        /* Peeking did not consume. */
        char c = 0;
        assert_int_equal(recv(p->b, &c, 1, 0), 1);
        assert_int_equal(c, 'z');
        /* A half-close is end of stream, not input. */
        assert_int_equal(shutdown(p->a, SHUT_WR), 0);
        expect_ok(glove_services_queued(p->b, &queued, &eof, &err), err);
        assert_false(queued);
        assert_true(eof);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_lengths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_closed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancelled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queued, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

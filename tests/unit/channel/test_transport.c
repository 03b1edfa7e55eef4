/* SPDX-License-Identifier: Apache-2.0 */
/* The guest-channel transport (glove/channel/transport.h): only a
 * connected AF_UNIX stream with the required peer UID is adopted (a
 * datagram pair, a pipe and an AF_INET socket are refused, and the
 * descriptor is closed); frames round-trip; a deadline or the stop token
 * ends a receive and poisons the transport. Real socket pairs. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/time.h"
#include "glove/channel/transport.h"

static bool fd_closed(int fd) {
        return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

static void expect_refused(int fd, uid_t uid, const char *code) {
        struct glove_error err = { 0 };
        struct glove_channel_transport *t = (void *)1;
        assert_true(glove_channel_transport_new(fd, uid, &t, &err) < 0);
        assert_null(t);
        assert_string_equal(err.code, code);
        assert_true(fd_closed(fd));
}

static void test_wrong_type(void **state) {
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
        expect_refused(sv[0], getuid(), "channel.transport_type");
        close(sv[1]);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        expect_refused(sv[0], getuid(), "channel.transport_type");
        close(sv[1]);
}

static void test_wrong_family(void **state) {
        (void)state;
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        expect_refused(p[0], getuid(), "channel.transport_family");
        close(p[1]);
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s >= 0);
        expect_refused(s, getuid(), "channel.transport_family");
}

static void test_wrong_peer(void **state) {
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        expect_refused(sv[0], getuid() + 1, "channel.transport_peer_uid");
        close(sv[1]);
        /* an unconnected stream socket has no peer */
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s >= 0);
        expect_refused(s, getuid(), "channel.transport_peer_uid");
        struct glove_error err = { 0 };
        struct glove_channel_transport *t = NULL;
        assert_int_equal(glove_channel_transport_new(-1, getuid(), &t, &err), -EINVAL);
        assert_string_equal(err.code, "channel.invalid_argument");
}

static void test_round_trip(void **state) {
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct glove_error err = { 0 };
        _cleanup_channel_transport_ struct glove_channel_transport *a = NULL, *b = NULL;
        assert_int_equal(glove_channel_transport_new(sv[0], getuid(), &a, &err), 0);
        assert_int_equal(glove_channel_transport_new(sv[1], getuid(), &b, &err), 0);
        assert_true(fcntl(sv[0], F_GETFL) & O_NONBLOCK);
        assert_int_equal(glove_channel_transport_peer_pid(a), getpid());
        assert_int_equal(glove_channel_transport_peer_uid(a), getuid());
        uint64_t deadline = glove_time_monotonic_ms() + 5000;
        const char *msg = "{\"hello\":1}";
        assert_int_equal(glove_channel_transport_send(b, deadline, -1, (const uint8_t *)msg, strlen(msg), &err), 0);
        uint8_t buf[GLOVE_CHANNEL_FRAME_MAX];
        size_t len = 0;
        assert_int_equal(glove_channel_transport_recv(a, deadline, -1, buf, &len, &err), 0);
        assert_int_equal(len, strlen(msg));
        assert_memory_equal(buf, msg, len);
        /* a full-size frame both ways */
        static uint8_t big[GLOVE_CHANNEL_FRAME_MAX];
        memset(big, 'x', sizeof(big));
        assert_int_equal(glove_channel_transport_send(a, deadline, -1, big, sizeof(big), &err), 0);
        assert_int_equal(glove_channel_transport_recv(b, deadline, -1, buf, &len, &err), 0);
        assert_int_equal(len, sizeof(big));
        assert_false(glove_channel_transport_poisoned(a));
        assert_false(glove_channel_transport_poisoned(b));
}

static void test_deadline_and_stop(void **state) {
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct glove_error err = { 0 };
        _cleanup_channel_transport_ struct glove_channel_transport *a = NULL, *b = NULL;
        assert_int_equal(glove_channel_transport_new(sv[0], getuid(), &a, &err), 0);
        assert_int_equal(glove_channel_transport_new(sv[1], getuid(), &b, &err), 0);
        uint8_t buf[GLOVE_CHANNEL_FRAME_MAX];
        size_t len = 0;
        assert_true(glove_channel_transport_recv(a, glove_time_monotonic_ms() + 100, -1, buf, &len, &err) < 0);
        assert_string_equal(err.code, "services.timeout");
        assert_true(glove_channel_transport_poisoned(a));
        memset(&err, 0, sizeof(err));
        const char *msg = "x";
        assert_true(glove_channel_transport_send(a, glove_time_monotonic_ms() + 1000, -1, (const uint8_t *)msg, 1,
                                                 &err) < 0);
        assert_string_equal(err.code, "channel.transport_poisoned");
        int stop = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(stop >= 0);
        memset(&err, 0, sizeof(err));
        assert_true(glove_channel_transport_recv(b, glove_time_monotonic_ms() + 60000, stop, buf, &len, &err) < 0);
        assert_string_equal(err.code, "services.cancelled");
        assert_true(glove_channel_transport_poisoned(b));
        close(stop);
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_transport_recv(b, 0, -1, buf, &len, &err), -EINVAL);
        assert_string_equal(err.code, "channel.invalid_argument");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wrong_type),   cmocka_unit_test(test_wrong_family),
                cmocka_unit_test(test_wrong_peer),   cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_deadline_and_stop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

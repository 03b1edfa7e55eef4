/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's requests, responses and channel loop
 * (glove/remote_executor/serve.h), over pipes with scripted clocks. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_clock.h"
#include "glove/base/bytes.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/remote_executor/serve.h"

#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct glove_remote_executor_identity ID = { .executable_sha256 = HEX_A, .image_sha256 = HEX_B };

/* A received frame holding json, received from 1000 to 1010. */
static struct glove_remote_executor_frame *frame_of(const char *json) {
        struct glove_remote_executor_frame *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        f->len = strlen(json);
        assert_true(f->len <= GLOVE_REMOTE_EXECUTOR_FRAME_MAX);
        memcpy(f->payload, json, f->len);
        f->receive_start_ms = 1000;
        f->channel_deadline_ms = 1000 + GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS;
        f->complete_ms = 1010;
        return f;
}

/* Answers json at now and returns the compact, sorted response text. */
static char *answer(const char *json, uint64_t now, uint64_t *deadline) {
        _cleanup_free_ struct glove_remote_executor_frame *f = frame_of(json);
        _cleanup_json_ json_t *resp = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_answer(f, now, &ID, &resp, deadline, &err), 0);
        assert_non_null(resp);
        char *s = json_dumps(resp, JSON_COMPACT | JSON_SORT_KEYS);
        assert_non_null(s);
        return s;
}

/* The error code of a response text, and its id ("null" or the number). */
static void expect_error(const char *resp, const char *id, const char *code) {
        json_error_t je;
        _cleanup_json_ json_t *v = json_loads(resp, 0, &je);
        assert_non_null(v);
        _cleanup_free_ char *got_id = json_dumps(json_object_get(v, "id"), JSON_ENCODE_ANY);
        if (strcmp(got_id, id) != 0)
                fail_msg("response %s: id %s, expected %s", resp, got_id, id);
        const char *c = json_string_value(json_object_get(json_object_get(v, "error"), "code"));
        if (!c || strcmp(c, code) != 0)
                fail_msg("response %s: expected error %s", resp, code);
        assert_null(json_object_get(v, "result"));
}

static void test_health_is_not_operational(void **state) {
        (void)state;
        uint64_t d = 0;
        const char *reqs[] = {
                "{\"id\":7,\"method\":\"remote_health\",\"ttl_ms\":500}",
                "{\"id\":7,\"method\":\"remote_health\",\"ttl_ms\":500,\"params\":{}}",
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(reqs); i++) {
                _cleanup_free_ char *s = answer(reqs[i], 1200, &d);
                assert_string_equal(s, "{\"id\":7,\"result\":{\"executable_sha256\":\"" HEX_A
                                       "\",\"image_sha256\":\"" HEX_B "\",\"status\":\"not_operational\"}}");
                /* receive start + TTL: the receive time is subtracted */
                assert_int_equal(d, 1500);
        }
}

/* Every lifecycle method, and any other name, is method_not_found, with the
 * request's deadline. */
static void test_other_methods_not_found(void **state) {
        (void)state;
        const char *methods[] = { "start_session", "attach",        "write_stdin",     "resize",
                                  "signal",        "detach",        "stop_session",    "cleanup_session",
                                  "capabilities",  "remote_launch", "remote_health_x", "x" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(methods); i++) {
                char req[160];
                snprintf(req, sizeof(req), "{\"id\":%zu,\"method\":\"%s\",\"ttl_ms\":100,\"params\":{\"a\":1}}", i,
                         methods[i]);
                uint64_t d = 0;
                _cleanup_free_ char *s = answer(req, 1050, &d);
                char id[16];
                snprintf(id, sizeof(id), "%zu", i);
                expect_error(s, id, "method_not_found");
                assert_int_equal(d, 1100);
        }
}

/* A frame whose receipt used up its TTL is rejected; its deadline is the
 * one that passed (one attempt, no wait). */
static void test_ttl_expired(void **state) {
        (void)state;
        uint64_t d = 0;
        _cleanup_free_ char *s = answer("{\"id\":3,\"method\":\"remote_health\",\"ttl_ms\":200}", 1200, &d);
        expect_error(s, "3", "executor.ttl_expired");
        assert_int_equal(d, 1200);
        _cleanup_free_ char *s2 = answer("{\"id\":4,\"method\":\"start_session\",\"ttl_ms\":1}", 5000, &d);
        expect_error(s2, "4", "executor.ttl_expired");
        assert_true(d <= 5000);
}

/* Malformed bodies and invalid requests: the channel deadline; the id is
 * echoed when it was readable. */
static void test_bad_requests(void **state) {
        (void)state;
        struct {
                const char *json;
                const char *id;
                const char *code;
        } cases[] = {
                { "{\"id\":1,", "null", "executor.frame_malformed" },
                { "[1]", "null", "executor.frame_malformed" },
                { "{\"id\":1,\"id\":2,\"method\":\"remote_health\",\"ttl_ms\":5}", "null", "executor.frame_malformed" },
                { "{\"id\":1,\"method\":\"remote_health\",\"ttl_ms\":5}x", "null", "executor.frame_malformed" },
                { "{\"method\":\"remote_health\",\"ttl_ms\":5}", "null", "executor.request_invalid" },
                { "{\"id\":\"1\",\"method\":\"remote_health\",\"ttl_ms\":5}", "null", "executor.request_invalid" },
                { "{\"id\":-1,\"method\":\"remote_health\",\"ttl_ms\":5}", "null", "executor.request_invalid" },
                { "{\"id\":9007199254740993,\"method\":\"remote_health\",\"ttl_ms\":5}", "null",
                  "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"remote_health\"}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"remote_health\",\"ttl_ms\":0}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"remote_health\",\"ttl_ms\":60001}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"remote_health\",\"ttl_ms\":5.0}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"ttl_ms\":5}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"Remote_health\",\"ttl_ms\":5}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"\",\"ttl_ms\":5}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"method\":7,\"ttl_ms\":5}", "2", "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"remote_health\",\"ttl_ms\":5,\"params\":[]}", "2",
                  "executor.request_invalid" },
                { "{\"id\":2,\"method\":\"remote_health\",\"ttl_ms\":5,\"jsonrpc\":\"2.0\"}", "2",
                  "executor.request_invalid" },
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(cases); i++) {
                uint64_t d = 0;
                _cleanup_free_ char *s = answer(cases[i].json, 1001, &d);
                expect_error(s, cases[i].id, cases[i].code);
                assert_int_equal(d, 1000 + GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS);
        }
        /* params given to remote_health: a valid request, so its own deadline. */
        uint64_t d = 0;
        _cleanup_free_ char *s = answer("{\"id\":5,\"method\":\"remote_health\",\"ttl_ms\":50,\"params\":{\"x\":1}}",
                                        1001, &d);
        expect_error(s, "5", "executor.request_invalid");
        assert_int_equal(d, 1050);
}

static void test_exit_status(void **state) {
        (void)state;
        assert_int_equal(glove_remote_executor_exit_status(NULL), 0);
        assert_int_equal(glove_remote_executor_exit_status("executor.usage"), 2);
        const char *identity[] = { "executor.identity_missing", "executor.identity_empty",
                                   "executor.identity_malformed", "executor.identity_writable",
                                   "executor.identity_owner", "executor.identity_mismatch",
                                   "executor.identity_type", "executor.identity_too_large",
                                   "executor.identity_read", "executor.self_measure" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(identity); i++)
                assert_int_equal(glove_remote_executor_exit_status(identity[i]), 3);
        assert_int_equal(glove_remote_executor_exit_status("executor.frame_too_large"), 4);
        assert_int_equal(glove_remote_executor_exit_status("executor.frame_truncated"), 4);
        assert_int_equal(glove_remote_executor_exit_status("executor.frame_timeout"), 4);
        assert_int_equal(glove_remote_executor_exit_status("executor.read_failed"), 4);
        assert_int_equal(glove_remote_executor_exit_status("executor.write_timeout"), 5);
        assert_int_equal(glove_remote_executor_exit_status("executor.write_failed"), 5);
        assert_int_equal(glove_remote_executor_exit_status("executor.no_memory"), 1);
}

/* ---------------------------------------------------------------- serve */

struct channel {
        struct glove_fd_pair in;  /* the test writes in.fd[1], serve reads in.fd[0] */
        struct glove_fd_pair out; /* serve writes out.fd[1] (non-blocking), the test reads out.fd[0] */
};

static void channel_open(struct channel *c) {
        c->in = (struct glove_fd_pair)GLOVE_FD_PAIR_INIT;
        c->out = (struct glove_fd_pair)GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_pipe(&c->in, 0), 0);
        assert_int_equal(glove_fd_pair_pipe(&c->out, 0), 0);
        assert_int_equal(fcntl(c->out.fd[1], F_SETFL, O_NONBLOCK), 0);
}

static void channel_close(struct channel *c) {
        glove_fd_pair_close(&c->in);
        glove_fd_pair_close(&c->out);
}

static void send_raw(struct channel *c, const void *data, size_t len) {
        assert_int_equal(glove_fd_write_all(c->in.fd[1], data, len), 0);
}

static void send_json(struct channel *c, const char *json) {
        uint8_t prefix[4];
        glove_put_be32(prefix, (uint32_t)strlen(json));
        send_raw(c, prefix, 4);
        send_raw(c, json, strlen(json));
}

/* Reads every response frame serve wrote (its output closed first) as
 * lines "RESPONSE\n" into out. */
static void responses(struct channel *c, char *out, size_t size) {
        close(glove_fd_take(&c->out.fd[1]));
        char *buf = NULL;
        size_t len = 0;
        assert_int_equal(glove_fd_read_bounded(c->out.fd[0], 1 << 20, &buf, &len, NULL), 0);
        out[0] = '\0';
        size_t at = 0, o = 0;
        while (at < len) {
                assert_true(len - at >= 4);
                uint32_t n = glove_get_be32((uint8_t *)buf + at);
                assert_true(len - at - 4 >= n);
                assert_true(o + n + 2 <= size);
                memcpy(out + o, buf + at + 4, n);
                o += n;
                out[o++] = '\n';
                out[o] = '\0';
                at += 4 + n;
        }
        free(buf);
}

static void test_serve_until_end_of_input(void **state) {
        (void)state;
        struct channel c;
        channel_open(&c);
        send_json(&c, "{\"id\":1,\"method\":\"remote_health\",\"ttl_ms\":5000}");
        send_raw(&c, "\0\0\0\0", 4); /* empty: an error, and the channel goes on */
        send_json(&c, "{\"id\":2,"); /* malformed: the same */
        send_json(&c, "{\"id\":3,\"method\":\"start_session\",\"ttl_ms\":5000}");
        close(glove_fd_take(&c.in.fd[1]));
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_serve(c.in.fd[0], c.out.fd[1], &glove_remote_executor_clock_monotonic,
                                                     GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS, &ID, &err),
                         0);
        assert_false(glove_error_is_set(&err));
        char out[4096];
        responses(&c, out, sizeof(out));
        const char *lines[4];
        char *save = NULL;
        size_t n = 0;
        for (char *l = strtok_r(out, "\n", &save); l && n < 4; l = strtok_r(NULL, "\n", &save))
                lines[n++] = l;
        assert_int_equal(n, 4);
        assert_non_null(strstr(lines[0], "\"status\":\"not_operational\""));
        expect_error(lines[1], "null", "executor.frame_empty");
        expect_error(lines[2], "null", "executor.frame_malformed");
        expect_error(lines[3], "3", "method_not_found");
        channel_close(&c);
}

/* Oversized and truncated frames end the channel after one error frame;
 * nothing after them is read. */
static void test_serve_fatal_frames(void **state) {
        (void)state;
        struct {
                const char *bytes;
                size_t len;
                int want;
                const char *code;
        } cases[] = {
                { "\0\0\x40\x01{}", 6, -EMSGSIZE, "executor.frame_too_large" },
                { "\xff\xff\xff\xff", 4, -EMSGSIZE, "executor.frame_too_large" },
                { "\0\0\0\x09{\"id\":", 10, -EPIPE, "executor.frame_truncated" },
                { "\0\0", 2, -EPIPE, "executor.frame_truncated" },
        };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(cases); i++) {
                struct channel c;
                channel_open(&c);
                send_json(&c, "{\"id\":1,\"method\":\"remote_health\",\"ttl_ms\":5000}");
                send_raw(&c, cases[i].bytes, cases[i].len);
                close(glove_fd_take(&c.in.fd[1]));
                struct glove_error err = { 0 };
                assert_int_equal(glove_remote_executor_serve(c.in.fd[0], c.out.fd[1],
                                                             &glove_remote_executor_clock_monotonic,
                                                             GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS, &ID, &err),
                                 cases[i].want);
                assert_string_equal(err.code, cases[i].code);
                assert_int_equal(glove_remote_executor_exit_status(err.code), GLOVE_REMOTE_EXECUTOR_EXIT_FRAMING);
                char out[4096];
                responses(&c, out, sizeof(out));
                char *second = strchr(out, '\n');
                assert_non_null(second);
                *second++ = '\0';
                assert_non_null(strstr(out, "not_operational"));
                char *end = strchr(second, '\n');
                assert_non_null(end);
                *end = '\0';
                expect_error(second, "null", cases[i].code);
                assert_string_equal(end + 1, "");
                channel_close(&c);
        }
}

/* A frame still incomplete at its channel deadline ends the channel; the
 * error frame gets one attempt (its deadline has passed). */
static void test_serve_channel_deadline(void **state) {
        (void)state;
        struct channel c;
        channel_open(&c);
        send_raw(&c, "\0\0\0\x05{", 5);
        static const uint64_t t[] = { 0, 0, 0, 10000 };
        struct fake_clock fc = { .times = t, .n = 4 };
        struct glove_remote_executor_clock clock = fake_clock_of(&fc);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_serve(c.in.fd[0], c.out.fd[1], &clock, 10000, &ID, &err), -ETIMEDOUT);
        assert_string_equal(err.code, "executor.frame_timeout");
        char out[4096];
        responses(&c, out, sizeof(out));
        *strchr(out, '\n') = '\0';
        expect_error(out, "null", "executor.frame_timeout");
        channel_close(&c);
}

/* The TTL counts all receive time: a clock that moves 400 ms between the
 * receive start and the answer rejects a 300 ms TTL and accepts a 500 ms
 * one. */
static void test_serve_ttl_counts_receive_time(void **state) {
        (void)state;
        struct channel c;
        channel_open(&c);
        send_json(&c, "{\"id\":1,\"method\":\"remote_health\",\"ttl_ms\":300}");
        send_json(&c, "{\"id\":2,\"method\":\"remote_health\",\"ttl_ms\":500}");
        close(glove_fd_take(&c.in.fd[1]));
        /* Every reading is 100 ms after the one before: a frame's receipt
         * reads the clock 4 times (start, before the prefix, before the
         * payload, complete), so the answer's "now" is 400 ms after the
         * start. */
        struct fake_clock fc = { .step = 100 };
        struct glove_remote_executor_clock clock = fake_clock_of(&fc);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_serve(c.in.fd[0], c.out.fd[1], &clock, 10000, &ID, &err), 0);
        char out[4096];
        responses(&c, out, sizeof(out));
        char *second = strchr(out, '\n');
        *second++ = '\0';
        expect_error(out, "1", "executor.ttl_expired");
        assert_non_null(strstr(second, "\"id\":2,\"result\""));
        channel_close(&c);
}

/* A reader that went away: the response cannot be written, exit 5. */
static void test_serve_output_gone(void **state) {
        (void)state;
        struct channel c;
        channel_open(&c);
        close(glove_fd_take(&c.out.fd[0]));
        send_json(&c, "{\"id\":1,\"method\":\"remote_health\",\"ttl_ms\":5000}");
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_serve(c.in.fd[0], c.out.fd[1], &glove_remote_executor_clock_monotonic,
                                                     10000, &ID, &err),
                         -EPIPE);
        assert_string_equal(err.code, "executor.write_failed");
        assert_int_equal(glove_remote_executor_exit_status(err.code), GLOVE_REMOTE_EXECUTOR_EXIT_OUTPUT);
        channel_close(&c);
}

/* An output that never drains: the response is abandoned at its request
 * deadline (a scripted clock past it), exit 5. */
static void test_serve_output_full(void **state) {
        (void)state;
        struct channel c;
        channel_open(&c);
        char junk[4096];
        memset(junk, 'j', sizeof(junk));
        while (write(c.out.fd[1], junk, sizeof(junk)) > 0) {
        }
        send_json(&c, "{\"id\":1,\"method\":\"remote_health\",\"ttl_ms\":500}");
        static const uint64_t t[] = { 0, 0, 0, 10, 10, 600 };
        struct fake_clock fc = { .times = t, .n = 6 };
        struct glove_remote_executor_clock clock = fake_clock_of(&fc);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_serve(c.in.fd[0], c.out.fd[1], &clock, 10000, &ID, &err), -ETIMEDOUT);
        assert_string_equal(err.code, "executor.write_timeout");
        assert_int_equal(glove_remote_executor_exit_status(err.code), GLOVE_REMOTE_EXECUTOR_EXIT_OUTPUT);
        channel_close(&c);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_health_is_not_operational),
                cmocka_unit_test(test_other_methods_not_found),
                cmocka_unit_test(test_ttl_expired),
                cmocka_unit_test(test_bad_requests),
                cmocka_unit_test(test_exit_status),
                cmocka_unit_test(test_serve_until_end_of_input),
                cmocka_unit_test(test_serve_fatal_frames),
                cmocka_unit_test(test_serve_channel_deadline),
                cmocka_unit_test(test_serve_ttl_counts_receive_time),
                cmocka_unit_test(test_serve_output_gone),
                cmocka_unit_test(test_serve_output_full),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Frame splitting, request decoding and responses (glove/control/frame.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/buffer.h"
#include "glove/base/cleanup.h"
#include "glove/control/frame.h"

static size_t framed(uint8_t *out, const char *json) {
        size_t n = strlen(json);
        out[0] = (uint8_t)(n >> 24);
        out[1] = (uint8_t)(n >> 16);
        out[2] = (uint8_t)(n >> 8);
        out[3] = (uint8_t)n;
        memcpy(out + 4, json, n);
        return n + 4;
}

static void test_next_needs_bytes(void **state) {
        (void)state;
        uint8_t buf[64];
        const uint8_t *p;
        size_t pl, fl;
        size_t n = framed(buf, "{\"a\":1}");
        for (size_t i = 0; i < n; i++)
                assert_int_equal(glove_control_frame_next(buf, i, &p, &pl, &fl, NULL), 0);
        assert_int_equal(glove_control_frame_next(buf, n, &p, &pl, &fl, NULL), 1);
        assert_int_equal(pl, 7);
        assert_int_equal(fl, n);
        assert_ptr_equal(p, buf + 4);
        assert_memory_equal(p, "{\"a\":1}", 7);
}

static void test_next_two_frames(void **state) {
        (void)state;
        uint8_t buf[64];
        const uint8_t *p;
        size_t pl, fl;
        size_t n = framed(buf, "{}");
        n += framed(buf + n, "[1]");
        assert_int_equal(glove_control_frame_next(buf, n, &p, &pl, &fl, NULL), 1);
        assert_int_equal(fl, 6);
        assert_int_equal(glove_control_frame_next(buf + fl, n - fl, &p, &pl, &fl, NULL), 1);
        assert_memory_equal(p, "[1]", 3);
}

/* Oversized and empty prefixes are refused from the 4 prefix bytes alone. */
static void test_next_bad_prefix(void **state) {
        (void)state;
        const uint8_t *p;
        size_t pl, fl;
        struct glove_error e = { 0 };
        uint8_t big[4] = { 0x00, 0x10, 0x00, 0x01 }; /* 1 MiB + 1 */
        assert_int_equal(glove_control_frame_next(big, 4, &p, &pl, &fl, &e), -EMSGSIZE);
        assert_string_equal(e.code, "frame.too_large");
        uint8_t max[4] = { 0x00, 0x10, 0x00, 0x00 }; /* exactly 1 MiB: waits */
        assert_int_equal(glove_control_frame_next(max, 4, &p, &pl, &fl, NULL), 0);
        uint8_t huge[4] = { 0xff, 0xff, 0xff, 0xff };
        assert_int_equal(glove_control_frame_next(huge, 4, &p, &pl, &fl, NULL), -EMSGSIZE);
        glove_error_clear(&e);
        uint8_t zero[4] = { 0 };
        assert_int_equal(glove_control_frame_next(zero, 4, &p, &pl, &fl, &e), -EINVAL);
        assert_string_equal(e.code, "frame.empty");
}

static void test_parse_good(void **state) {
        (void)state;
        struct glove_control_request req;
        _cleanup_json_ json_t *root = NULL;
        const char *s = "{\"id\":\"a-1\",\"method\":\"session_status\",\"params\":{\"session_id\":\"s\"}}";
        assert_int_equal(glove_control_request_parse(s, strlen(s), &root, &req, NULL), 0);
        assert_string_equal(json_string_value(req.id), "a-1");
        assert_string_equal(req.method, "session_status");
        assert_string_equal(json_string_value(json_object_get(req.params, "session_id")), "s");
}

static void test_parse_params_optional_int_id(void **state) {
        (void)state;
        struct glove_control_request req;
        _cleanup_json_ json_t *root = NULL;
        const char *s = "{\"id\":9007199254740992,\"method\":\"capabilities\"}";
        assert_int_equal(glove_control_request_parse(s, strlen(s), &root, &req, NULL), 0);
        assert_true(json_is_object(req.params));
        assert_int_equal(json_object_size(req.params), 0);
}

struct bad {
        const char *text;
        const char *code;
        bool id_readable;
};

static void test_parse_rejections(void **state) {
        (void)state;
        static const struct bad cases[] = {
                { "", "frame.malformed", false },
                { "[]", "frame.malformed", false },
                { "{\"id\":1,\"method\":\"x\"} {}", "frame.malformed", false },
                { "{\"id\":1,\"id\":2,\"method\":\"x\"}", "frame.malformed", false },
                { "{\"id\":1,\"method\":\"x\",\"params\":{\"a\":1,\"a\":2}}", "frame.malformed", false },
                { "{\"id\":1,\"method\":\"\xc3\x28\"}", "frame.malformed", false },
                { "{\"id\":1,\"method\":\"x\\u0000\"}", "frame.malformed", false },
                { "{\"id\":1,\"method\":\"x\",\"extra\":true}", "request.invalid", true },
                { "{\"method\":\"x\"}", "request.invalid", false },
                { "{\"id\":-1,\"method\":\"x\"}", "request.invalid", false },
                { "{\"id\":1.5,\"method\":\"x\"}", "request.invalid", false },
                { "{\"id\":9007199254740993,\"method\":\"x\"}", "request.invalid", false },
                { "{\"id\":\"\",\"method\":\"x\"}", "request.invalid", false },
                { "{\"id\":null,\"method\":\"x\"}", "request.invalid", false },
                { "{\"id\":[1],\"method\":\"x\"}", "request.invalid", false },
                { "{\"id\":1}", "request.invalid", true },
                { "{\"id\":1,\"method\":\"\"}", "request.invalid", true },
                { "{\"id\":1,\"method\":\"Capabilities\"}", "request.invalid", true },
                { "{\"id\":1,\"method\":7}", "request.invalid", true },
                { "{\"id\":1,\"method\":\"x\",\"params\":[]}", "request.invalid", true },
                { "{\"id\":1,\"method\":\"x\",\"params\":null}", "request.invalid", true },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_control_request req;
                struct glove_error e = { 0 };
                json_t *root = NULL;
                int r = glove_control_request_parse(cases[i].text, strlen(cases[i].text), &root, &req, &e);
                if (r == 0 || strcmp(e.code, cases[i].code) != 0)
                        fail_msg("case %zu (%s): got %d %s", i, cases[i].text, r, e.code ? e.code : "(none)");
                assert_int_equal(glove_control_request_id(root) != NULL, cases[i].id_readable);
                json_decref(root);
        }
        /* A method name of 65 bytes, and an id of 129 bytes. */
        char text[512];
        snprintf(text, sizeof(text), "{\"id\":1,\"method\":\"%065d\"}", 0);
        for (char *c = strstr(text, "\"0") + 1; *c == '0'; c++)
                *c = 'a';
        struct glove_control_request req;
        json_t *root = NULL;
        assert_int_equal(glove_control_request_parse(text, strlen(text), &root, &req, NULL), -EINVAL);
        json_decref(root);
}

static void test_encode_round_trip(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer out;
        glove_buffer_init(&out, 1 << 20);
        _cleanup_json_ json_t *msg = glove_control_response_error(json_integer(3), "session.not_found", "no such session", NULL);
        json_decref(json_object_get(msg, "id")); /* the id was a fresh reference */
        assert_non_null(msg);
        assert_int_equal(glove_control_frame_encode(msg, &out, NULL), 0);
        const uint8_t *p;
        size_t pl, fl;
        assert_int_equal(glove_control_frame_next(out.data, out.len, &p, &pl, &fl, NULL), 1);
        const char *expect =
                "{\"error\":{\"code\":\"session.not_found\",\"data\":{},\"message\":\"no such session\"},\"id\":3}";
        assert_int_equal(pl, strlen(expect));
        assert_memory_equal(p, expect, pl);

        _cleanup_json_ json_t *ok = glove_control_response_result(NULL, json_pack("{s:b}", "valid", 1));
        glove_buffer_reset(&out);
        assert_int_equal(glove_control_frame_encode(ok, &out, NULL), 0);
        assert_memory_equal(out.data + 4, "{\"id\":null,\"result\":{\"valid\":true}}", out.len - 4);
}

static void test_encode_too_large(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer out;
        glove_buffer_init(&out, 8u << 20);
        char *big = malloc(GLOVE_CONTROL_FRAME_MAX + 1);
        memset(big, 'x', GLOVE_CONTROL_FRAME_MAX);
        big[GLOVE_CONTROL_FRAME_MAX] = '\0';
        _cleanup_json_ json_t *msg = json_pack("{s:s}", "x", big);
        free(big);
        struct glove_error e = { 0 };
        assert_int_equal(glove_control_frame_encode(msg, &out, &e), -EMSGSIZE);
        assert_string_equal(e.code, "frame.too_large");
        assert_int_equal(out.len, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_next_needs_bytes),
                cmocka_unit_test(test_next_two_frames),
                cmocka_unit_test(test_next_bad_prefix),
                cmocka_unit_test(test_parse_good),
                cmocka_unit_test(test_parse_params_optional_int_id),
                cmocka_unit_test(test_parse_rejections),
                cmocka_unit_test(test_encode_round_trip),
                cmocka_unit_test(test_encode_too_large),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Frame splitting, request decoding and responses (glove/protocol/frame.h). */
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
#include "glove/protocol/frame.h"

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
                assert_int_equal(glove_protocol_frame_next(buf, i, &p, &pl, &fl, NULL), 0);
        assert_int_equal(glove_protocol_frame_next(buf, n, &p, &pl, &fl, NULL), 1);
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
        assert_int_equal(glove_protocol_frame_next(buf, n, &p, &pl, &fl, NULL), 1);
        assert_int_equal(fl, 6);
        assert_int_equal(glove_protocol_frame_next(buf + fl, n - fl, &p, &pl, &fl, NULL), 1);
        assert_memory_equal(p, "[1]", 3);
}

/* Oversized and empty prefixes are refused from the 4 prefix bytes alone. */
static void test_next_bad_prefix(void **state) {
        (void)state;
        const uint8_t *p;
        size_t pl, fl;
        struct glove_error e = { 0 };
        uint8_t big[4] = { 0x00, 0x10, 0x00, 0x01 }; /* 1 MiB + 1 */
        assert_int_equal(glove_protocol_frame_next(big, 4, &p, &pl, &fl, &e), -EMSGSIZE);
        assert_string_equal(e.code, "frame.too_large");
        uint8_t max[4] = { 0x00, 0x10, 0x00, 0x00 }; /* exactly 1 MiB: waits */
        assert_int_equal(glove_protocol_frame_next(max, 4, &p, &pl, &fl, NULL), 0);
        uint8_t huge[4] = { 0xff, 0xff, 0xff, 0xff };
        assert_int_equal(glove_protocol_frame_next(huge, 4, &p, &pl, &fl, NULL), -EMSGSIZE);
        glove_error_clear(&e);
        uint8_t zero[4] = { 0 };
        assert_int_equal(glove_protocol_frame_next(zero, 4, &p, &pl, &fl, &e), -EINVAL);
        assert_string_equal(e.code, "frame.empty");
}

static void test_parse_good(void **state) {
        (void)state;
        struct glove_protocol_request req;
        _cleanup_json_ json_t *root = NULL;
        const char *s = "{\"id\":\"a-1\",\"method\":\"session_status\",\"params\":{\"session_id\":\"s\"}}";
        assert_int_equal(glove_protocol_request_parse(s, strlen(s), &root, &req, NULL), 0);
        assert_string_equal(json_string_value(req.id), "a-1");
        assert_string_equal(req.method, "session_status");
        assert_string_equal(json_string_value(json_object_get(req.params, "session_id")), "s");
}

static void test_parse_params_optional_int_id(void **state) {
        (void)state;
        struct glove_protocol_request req;
        _cleanup_json_ json_t *root = NULL;
        const char *s = "{\"id\":9007199254740992,\"method\":\"capabilities\"}";
        assert_int_equal(glove_protocol_request_parse(s, strlen(s), &root, &req, NULL), 0);
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
                struct glove_protocol_request req;
                struct glove_error e = { 0 };
                json_t *root = NULL;
                int r = glove_protocol_request_parse(cases[i].text, strlen(cases[i].text), &root, &req, &e);
                if (r == 0 || strcmp(e.code, cases[i].code) != 0)
                        fail_msg("case %zu (%s): got %d %s", i, cases[i].text, r, e.code ? e.code : "(none)");
                assert_int_equal(glove_protocol_request_id(root) != NULL, cases[i].id_readable);
                json_decref(root);
        }
        /* A method name of 65 bytes, and an id of 129 bytes. */
        char text[512];
        snprintf(text, sizeof(text), "{\"id\":1,\"method\":\"%065d\"}", 0);
        for (char *c = strstr(text, "\"0") + 1; *c == '0'; c++)
                *c = 'a';
        struct glove_protocol_request req;
        json_t *root = NULL;
        assert_int_equal(glove_protocol_request_parse(text, strlen(text), &root, &req, NULL), -EINVAL);
        json_decref(root);
}

static void test_encode_round_trip(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer out;
        glove_buffer_init(&out, 1 << 20);
        _cleanup_json_ json_t *msg = glove_protocol_response_error(json_integer(3), "session.not_found", "no such session", NULL);
        json_decref(json_object_get(msg, "id")); /* the id was a fresh reference */
        assert_non_null(msg);
        assert_int_equal(glove_protocol_frame_encode(msg, &out, NULL), 0);
        const uint8_t *p;
        size_t pl, fl;
        assert_int_equal(glove_protocol_frame_next(out.data, out.len, &p, &pl, &fl, NULL), 1);
        const char *expect =
                "{\"error\":{\"code\":\"session.not_found\",\"data\":{},\"message\":\"no such session\"},\"id\":3}";
        assert_int_equal(pl, strlen(expect));
        assert_memory_equal(p, expect, pl);

        _cleanup_json_ json_t *ok = glove_protocol_response_result(NULL, json_pack("{s:b}", "valid", 1));
        glove_buffer_reset(&out);
        assert_int_equal(glove_protocol_frame_encode(ok, &out, NULL), 0);
        assert_memory_equal(out.data + 4, "{\"id\":null,\"result\":{\"valid\":true}}", out.len - 4);
}

static void test_encode_too_large(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer out;
        glove_buffer_init(&out, 8u << 20);
        char *big = malloc(GLOVE_PROTOCOL_FRAME_MAX + 1);
        memset(big, 'x', GLOVE_PROTOCOL_FRAME_MAX);
        big[GLOVE_PROTOCOL_FRAME_MAX] = '\0';
        _cleanup_json_ json_t *msg = json_pack("{s:s}", "x", big);
        free(big);
        struct glove_error e = { 0 };
        assert_int_equal(glove_protocol_frame_encode(msg, &out, &e), -EMSGSIZE);
        assert_string_equal(e.code, "frame.too_large");
        assert_int_equal(out.len, 0);
}

/* A plain reference base64 (RFC 4648, padded), bit by bit, independent of
 * the encoder under test. */
static char *ref_base64(const uint8_t *p, size_t n) {
        static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc((n + 2) / 3 * 4 + 1);
        size_t o = 0, bits = 0;
        uint32_t acc = 0;
        for (size_t i = 0; i < n; i++) {
                acc = acc << 8 | p[i];
                bits += 8;
                while (bits >= 6) {
                        bits -= 6;
                        out[o++] = a[(acc >> bits) & 63];
                }
        }
        if (bits)
                out[o++] = a[(acc << (6 - bits)) & 63];
        while (o % 4)
                out[o++] = '=';
        out[o] = '\0';
        return out;
}

/* xorshift: reproducible pseudo-random bytes. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static void random_id(char *id, size_t len) {
        static const char first[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        static const char rest[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-";
        for (size_t i = 0; i < len; i++)
                id[i] = i == 0 ? first[rnd() % (sizeof(first) - 1)] : rest[rnd() % (sizeof(rest) - 1)];
        id[len] = '\0';
}

/* The direct session_output encoder gives exactly the frame jansson's
 * canonical encoding (glove_protocol_frame_encode) gives, for random data of
 * random lengths (every remainder mod 3, up to past 64 KiB) and random ids of
 * the identifier charset (1..128 bytes). */
static void test_output_frame_matches_jansson(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer direct, ref;
        glove_buffer_init(&direct, 4u << 20);
        glove_buffer_init(&ref, 4u << 20);
        uint8_t *data = malloc(70000);
        assert_non_null(data);
        for (int round = 0; round < 400; round++) {
                size_t n = round < 12 ? (size_t)round : round % 7 == 0 ? 65536 - (size_t)(rnd() % 3) : rnd() % 70000;
                for (size_t i = 0; i < n; i++)
                        data[i] = (uint8_t)rnd();
                char id[GLOVE_PROTOCOL_REQUEST_ID_MAX + 1];
                random_id(id, 1 + rnd() % GLOVE_PROTOCOL_REQUEST_ID_MAX);
                char *b64 = ref_base64(data, n);
                _cleanup_json_ json_t *msg = json_pack("{s:s,s:{s:s,s:s}}", "method", "session_output", "params",
                                                       "session_id", id, "data_b64", b64);
                free(b64);
                assert_non_null(msg);
                glove_buffer_reset(&direct);
                glove_buffer_reset(&ref);
                /* Something already queued stays in front, untouched. */
                assert_int_equal(glove_buffer_append(&direct, "q", 1), 0);
                assert_int_equal(glove_buffer_append(&ref, "q", 1), 0);
                assert_int_equal(glove_protocol_frame_encode(msg, &ref, NULL), 0);
                assert_int_equal(glove_protocol_frame_encode_output(&direct, id, data, n, NULL), 0);
                assert_int_equal(direct.len, ref.len);
                assert_memory_equal(direct.data, ref.data, ref.len);
        }
        free(data);
}

static void test_output_frame_refusals(void **state) {
        (void)state;
        _cleanup_buffer_ struct glove_buffer out;
        struct glove_error e = { 0 };
        glove_buffer_init(&out, 1u << 20);
        const char *bad[] = { "", "a\"b", "a\\b", "a\nb", "caf\xc3\xa9", "a\x7f" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                e = (struct glove_error){ 0 };
                assert_int_equal(glove_protocol_frame_encode_output(&out, bad[i], "x", 1, &e), -EINVAL);
                assert_string_equal(e.code, "frame.encode");
                assert_int_equal(out.len, 0);
        }
        char longid[GLOVE_PROTOCOL_REQUEST_ID_MAX + 2];
        memset(longid, 'a', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = '\0';
        assert_int_equal(glove_protocol_frame_encode_output(&out, longid, "x", 1, &e), -EINVAL);
        /* Over the buffer's bound: frame.too_large, nothing appended. */
        _cleanup_buffer_ struct glove_buffer small;
        glove_buffer_init(&small, 100);
        e = (struct glove_error){ 0 };
        assert_int_equal(glove_protocol_frame_encode_output(&small, "s1", "0123456789012345678901234567890123456789", 40,
                                                           &e),
                         -EMSGSIZE);
        assert_string_equal(e.code, "frame.too_large");
        assert_int_equal(small.len, 0);
        /* Over the frame bound. */
        _cleanup_buffer_ struct glove_buffer big;
        glove_buffer_init(&big, 4u << 20);
        size_t n = GLOVE_PROTOCOL_FRAME_MAX / 4 * 3;
        uint8_t *data = calloc(1, n);
        e = (struct glove_error){ 0 };
        assert_int_equal(glove_protocol_frame_encode_output(&big, "s1", data, n, &e), -EMSGSIZE);
        assert_string_equal(e.code, "frame.too_large");
        assert_int_equal(big.len, 0);
        free(data);
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
                cmocka_unit_test(test_output_frame_matches_jansson),
                cmocka_unit_test(test_output_frame_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

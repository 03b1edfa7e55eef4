/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"

/* Asserts that the 32-byte digest d has the lowercase hex form hex. */
static void assert_digest_hex(const uint8_t d[GLOVE_DIGEST_SHA256_LEN], const char *hex) {
        char got[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_digest_hex_encode(d, GLOVE_DIGEST_SHA256_LEN, got, sizeof(got)), 0);
        assert_string_equal(got, hex);
}

/* FIPS 180-2, appendix B.1 and B.2, plus the empty message. */
static void test_sha256_vectors(void **state) {
        (void)state;
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        struct glove_error err = {0};
        assert_int_equal(glove_digest_sha256("abc", 3, d, &err), 0);
        assert_digest_hex(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_int_equal(glove_digest_sha256(NULL, 0, d, &err), 0);
        assert_digest_hex(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_int_equal(glove_digest_sha256(m2, strlen(m2), d, &err), 0);
        assert_digest_hex(d, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        assert_int_equal(glove_digest_sha256(NULL, 1, d, &err), -EINVAL);
        assert_string_equal(err.code, "digest.invalid_argument");
}

/* FIPS 180-2 appendix B.3 (one million 'a'), fed in uneven pieces. */
static void test_sha256_incremental(void **state) {
        (void)state;
        struct glove_error err = {0};
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        assert_int_equal(glove_digest_sha256_init(&ctx, &err), 0);
        char a[997];
        memset(a, 'a', sizeof(a));
        size_t left = 1000000;
        while (left > 0) {
                size_t n = left < sizeof(a) ? left : sizeof(a);
                assert_int_equal(glove_digest_sha256_update(ctx, a, n, &err), 0);
                left -= n;
        }
        assert_int_equal(glove_digest_sha256_update(ctx, NULL, 0, &err), 0);
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        assert_int_equal(glove_digest_sha256_final(ctx, d, &err), 0);
        assert_digest_hex(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

        /* A finished context refuses further use. */
        assert_int_equal(glove_digest_sha256_update(ctx, "x", 1, &err), -EINVAL);
        assert_string_equal(err.code, "digest.invalid_argument");
        glove_error_clear(&err);
        assert_int_equal(glove_digest_sha256_final(ctx, d, &err), -EINVAL);
}

static void test_sha256_incremental_matches_oneshot(void **state) {
        (void)state;
        struct glove_error err = {0};
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        assert_int_equal(glove_digest_sha256_init(&ctx, &err), 0);
        assert_int_equal(glove_digest_sha256_update(ctx, "a", 1, &err), 0);
        assert_int_equal(glove_digest_sha256_update(ctx, "bc", 2, &err), 0);
        uint8_t d1[GLOVE_DIGEST_SHA256_LEN], d2[GLOVE_DIGEST_SHA256_LEN];
        assert_int_equal(glove_digest_sha256_final(ctx, d1, &err), 0);
        assert_int_equal(glove_digest_sha256("abc", 3, d2, &err), 0);
        assert_memory_equal(d1, d2, sizeof(d1));
}

/* A reset context computes a fresh digest, after a final or midway. */
static void test_sha256_reset(void **state) {
        (void)state;
        struct glove_error err = {0};
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        assert_int_equal(glove_digest_sha256_init(&ctx, &err), 0);
        for (int round = 0; round < 3; round++) {
                assert_int_equal(glove_digest_sha256_update(ctx, "xyz", 3, &err), 0);
                if (round == 1) /* unfinished: the bytes so far are dropped */
                        assert_int_equal(glove_digest_sha256_reset(ctx, &err), 0);
                else
                        assert_int_equal(glove_digest_sha256_final(ctx, d, &err), 0);
                assert_int_equal(glove_digest_sha256_reset(ctx, &err), 0);
                assert_int_equal(glove_digest_sha256_update(ctx, "abc", 3, &err), 0);
                assert_int_equal(glove_digest_sha256_final(ctx, d, &err), 0);
                assert_digest_hex(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
                assert_int_equal(glove_digest_sha256_reset(ctx, &err), 0);
        }
        assert_int_equal(glove_digest_sha256_final(ctx, d, &err), 0);
        assert_digest_hex(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* RFC 4231 section 4, test cases 1, 2 and 6. */
static void test_hmac_sha256_rfc4231(void **state) {
        (void)state;
        struct glove_error err = {0};
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];

        uint8_t key1[20];
        memset(key1, 0x0b, sizeof(key1));
        assert_int_equal(glove_digest_hmac_sha256(key1, sizeof(key1), "Hi There", 8, d, &err), 0);
        assert_digest_hex(d, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

        const char *data2 = "what do ya want for nothing?";
        assert_int_equal(glove_digest_hmac_sha256("Jefe", 4, data2, strlen(data2), d, &err), 0);
        assert_digest_hex(d, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

        uint8_t key6[131];
        memset(key6, 0xaa, sizeof(key6));
        const char *data6 = "Test Using Larger Than Block-Size Key - Hash Key First";
        assert_int_equal(glove_digest_hmac_sha256(key6, sizeof(key6), data6, strlen(data6), d, &err), 0);
        assert_digest_hex(d, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void test_hmac_rejects_empty_key(void **state) {
        (void)state;
        struct glove_error err = {0};
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        assert_int_equal(glove_digest_hmac_sha256("", 0, "x", 1, d, &err), -EINVAL);
        assert_string_equal(err.code, "digest.invalid_argument");
        glove_error_clear(&err);
        assert_int_equal(glove_digest_hmac_sha256("k", 1, NULL, 0, d, &err), 0);
}

static void test_hex_encode(void **state) {
        (void)state;
        const uint8_t bytes[] = { 0x00, 0x01, 0x7f, 0x80, 0xab, 0xff };
        char out[13];
        assert_int_equal(glove_digest_hex_encode(bytes, sizeof(bytes), out, sizeof(out)), 0);
        assert_string_equal(out, "00017f80abff");
        /* One byte short for the NUL: refused, buffer untouched. */
        char small[12];
        memset(small, 'Z', sizeof(small));
        assert_int_equal(glove_digest_hex_encode(bytes, sizeof(bytes), small, sizeof(small)), -ENOBUFS);
        assert_int_equal(small[0], 'Z');
        char empty[1];
        assert_int_equal(glove_digest_hex_encode(NULL, 0, empty, sizeof(empty)), 0);
        assert_string_equal(empty, "");
}

static void test_hex_decode_strict(void **state) {
        (void)state;
        struct glove_error err = {0};
        uint8_t out[3] = { 0 };
        assert_int_equal(glove_digest_hex_decode("00a0ff", 6, out, 3, &err), 0);
        assert_int_equal(out[0], 0x00);
        assert_int_equal(out[1], 0xa0);
        assert_int_equal(out[2], 0xff);

        static const char *bad[] = { "00A0ff", "00a0f", "00a0fff", "00a0fg", " 0a0ff", "0x00ff",
                                     "00a0f\n" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(bad); i++) {
                uint8_t o[3] = { 1, 2, 3 };
                glove_error_clear(&err);
                assert_int_equal(glove_digest_hex_decode(bad[i], strlen(bad[i]), o, 3, &err), -EINVAL);
                assert_string_equal(err.code, "digest.bad_hex");
                assert_int_equal(o[0], 1); /* written only on success */
        }
        /* Counts in the message agree with their noun: "1 character". */
        glove_error_clear(&err);
        assert_int_equal(glove_digest_hex_decode("0", 1, out, 3, &err), -EINVAL);
        assert_non_null(strstr(err.message, "is 1 character, expected exactly 6"));
        glove_error_clear(&err);
        assert_int_equal(glove_digest_hex_decode("00a0f", 5, out, 3, &err), -EINVAL);
        assert_non_null(strstr(err.message, "is 5 characters,"));
        /* Round trip of every byte value. */
        uint8_t all[256], back[256];
        char hex[513];
        for (size_t i = 0; i < 256; i++)
                all[i] = (uint8_t)i;
        assert_int_equal(glove_digest_hex_encode(all, sizeof(all), hex, sizeof(hex)), 0);
        assert_int_equal(glove_digest_hex_decode(hex, 512, back, sizeof(back), &err), 0);
        assert_memory_equal(all, back, sizeof(all));
}

static void test_equal(void **state) {
        (void)state;
        assert_true(glove_digest_equal("abcd", "abcd", 4));
        assert_false(glove_digest_equal("abcd", "abce", 4));
        assert_false(glove_digest_equal("abcd", "xbcd", 4));
        assert_true(glove_digest_equal("abcd", "abXX", 2));
        assert_true(glove_digest_equal("", "", 0));
}

static void test_random(void **state) {
        (void)state;
        struct glove_error err = {0};
        uint8_t a[32] = { 0 }, b[32] = { 0 }, zero[32] = { 0 };
        assert_int_equal(glove_digest_random(a, sizeof(a), &err), 0);
        assert_int_equal(glove_digest_random(b, sizeof(b), &err), 0);
        /* 2^-256 chance of a false failure. */
        assert_memory_not_equal(a, b, sizeof(a));
        assert_memory_not_equal(a, zero, sizeof(a));
        assert_int_equal(glove_digest_random(NULL, 0, &err), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sha256_vectors),
                cmocka_unit_test(test_sha256_incremental),
                cmocka_unit_test(test_sha256_incremental_matches_oneshot),
                cmocka_unit_test(test_sha256_reset),
                cmocka_unit_test(test_hmac_sha256_rfc4231),
                cmocka_unit_test(test_hmac_rejects_empty_key),
                cmocka_unit_test(test_hex_encode),
                cmocka_unit_test(test_hex_decode_strict),
                cmocka_unit_test(test_equal),
                cmocka_unit_test(test_random),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

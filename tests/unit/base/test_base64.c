/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/base64.h"

/* RFC 4648 section 10 test vectors, and the proxy credentials' form. */
static const char *const vectors[][2] = {
        { "", "" },         { "f", "Zg==" },         { "fo", "Zm8=" },         { "foo", "Zm9v" },
        { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" }, { "glove:secret", "Z2xvdmU6c2VjcmV0" },
};
#define N_VECTORS (sizeof(vectors) / sizeof(vectors[0]))

/* A plain reference base64 (padded), bit by bit, independent of the code
 * under test. */
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

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static void test_vectors(void **state) {
        (void)state;
        for (size_t i = 0; i < N_VECTORS; i++) {
                const char *in = vectors[i][0], *want = vectors[i][1];
                size_t n = strlen(in);
                assert_int_equal(GLOVE_BASE64_LEN(n), strlen(want));
                char buf[32];
                memset(buf, 'x', sizeof(buf));
                assert_int_equal(glove_base64_encode_into(in, n, buf), strlen(want));
                assert_memory_equal(buf, want, strlen(want));
                assert_int_equal(buf[strlen(want)], 'x'); /* no NUL written */
                assert_int_equal(glove_base64_encode_cstr(in, n, buf, sizeof(buf)), (int)strlen(want));
                assert_string_equal(buf, want);
                char *e = glove_base64_encode(in, n);
                assert_non_null(e);
                assert_string_equal(e, want);
                free(e);
                uint8_t back[32];
                assert_int_equal(glove_base64_decode_into(want, strlen(want), back), n);
                assert_memory_equal(back, in, n);
                uint8_t *d = NULL;
                size_t dn = 99;
                assert_int_equal(glove_base64_decode(want, strlen(want), 100, &d, &dn), 0);
                assert_non_null(d);
                assert_int_equal(dn, n);
                assert_memory_equal(d, in, n);
                free(d);
        }
}

/* The cstr form refuses a buffer without room for the text and its NUL,
 * and writes nothing then. */
static void test_cstr_bounds(void **state) {
        (void)state;
        char small[5] = "abcd";
        assert_int_equal(glove_base64_encode_cstr("foo", 3, small, 4), -ENOBUFS);
        assert_string_equal(small, "abcd");
        assert_int_equal(glove_base64_encode_cstr("foo", 3, small, 5), 4);
        assert_string_equal(small, "Zm9v");
        char one[1] = { 'x' };
        assert_int_equal(glove_base64_encode_cstr("", 0, one, 1), 0);
        assert_int_equal(one[0], '\0');
        assert_int_equal(glove_base64_encode_cstr("", 0, one, 0), -ENOBUFS);
        assert_null(glove_base64_encode("", GLOVE_BASE64_INPUT_MAX + 1));
}

/* Random data of every length up to 300 and every remainder mod 3: the
 * encoder agrees with the reference and the decoder inverts it. */
static void test_random_round_trip(void **state) {
        (void)state;
        uint8_t data[300], back[300];
        for (size_t n = 0; n < sizeof(data); n++) {
                for (size_t i = 0; i < n; i++)
                        data[i] = (uint8_t)rnd();
                char *b64 = ref_base64(data, n);
                char enc[GLOVE_BASE64_LEN(300)];
                assert_int_equal(glove_base64_encode_into(data, n, enc), strlen(b64));
                assert_memory_equal(enc, b64, strlen(b64));
                assert_int_equal(glove_base64_decode_into(b64, strlen(b64), back), n);
                assert_memory_equal(back, data, n);
                free(b64);
        }
}

/* Strict: length, alphabet, padding place, canonical padding bits. */
static void test_strict(void **state) {
        (void)state;
        uint8_t back[16];
        const char *bad[] = { "A",    "AA",   "AAA",  "A===",     "====",     "AB=A", "A=AA", "AB\"A",
                              "AAAA====", "AB==AAAA", "AAB=", "AF==", "AA A", "Zm9", "Zm!v", "Zh==",
                              "Zm8\n", "Zm-_", "Zm9v\r\n", "Zg=", "Zm9=" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(glove_base64_decode_into(bad[i], strlen(bad[i]), back), -EINVAL);
                uint8_t *d = (uint8_t *)"not-null";
                size_t n = 7;
                assert_int_equal(glove_base64_decode(bad[i], strlen(bad[i]), 100, &d, &n), -EINVAL);
                assert_null(d);
                assert_int_equal(n, 0);
        }
        /* A NUL is a character like any other: refused. */
        assert_int_equal(glove_base64_decode_into("AA\0A", 4, back), -EINVAL);
        /* Every byte outside the alphabet is refused in every position. */
        for (int c = 0; c < 256; c++) {
                if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/')
                        continue;
                for (int pos = 0; pos < 4; pos++) {
                        char t[5] = "AAAA";
                        t[pos] = (char)c;
                        if (c == '=' && pos >= 2)
                                continue; /* padding: tested above */
                        assert_int_equal(glove_base64_decode_into(t, 4, back), -EINVAL);
                }
        }
        assert_int_equal(glove_base64_decode_into("AAE=", 4, back), 2);
        assert_int_equal(glove_base64_decode_into("AQ==", 4, back), 1);
        assert_int_equal(back[0], 1);
        assert_int_equal(glove_base64_decode_into("", 0, back), 0);
}

/* The decoded-size bound of glove_base64_decode, exactly at and past max. */
static void test_decode_max(void **state) {
        (void)state;
        uint8_t *d = NULL;
        size_t n = 0;
        assert_int_equal(glove_base64_decode("Zm9vYmFy", 8, 5, &d, &n), -EMSGSIZE);
        assert_null(d);
        assert_int_equal(glove_base64_decode("Zm9vYmFy", 8, 6, &d, &n), 0);
        assert_int_equal(n, 6);
        free(d);
        assert_int_equal(glove_base64_decode("Zm9vYg==", 8, 4, &d, &n), 0);
        assert_int_equal(n, 4);
        free(d);
        assert_int_equal(glove_base64_decode("Zm9vYg==", 8, 3, &d, &n), -EMSGSIZE);
        assert_int_equal(glove_base64_decode("", 0, 0, &d, &n), 0);
        assert_non_null(d);
        assert_int_equal(n, 0);
        free(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),        cmocka_unit_test(test_cstr_bounds),
                cmocka_unit_test(test_random_round_trip), cmocka_unit_test(test_strict),
                cmocka_unit_test(test_decode_max),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

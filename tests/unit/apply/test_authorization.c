/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/apply/trust.h, the apply authorization: its canonical bytes, the
 * strict decoder, the signed message and digest, and verification with a
 * generated key listed in a root-owned trust policy (the verification cases
 * are skipped when not root: the trust policy cannot be root-owned then).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "trust_fixture.h"

#define BASE "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define STAGE "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define NONCE "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define ISSUED 1700000000000LL
#define EXPIRES 1700000600000LL

static const char sample_text[] =
        "{\"baseline_manifest_digest\":\"" BASE "\",\"expires_at_ms\":1700000600000,\"grant\":\"project\","
        "\"grant_id\":\"sess-01/project\",\"issued_at_ms\":1700000000000,\"key_id\":\"owner-1\",\"nonce\":\"" NONCE
        "\",\"schema\":\"glove.apply-authorization.v1\",\"session_id\":\"sess-01\",\"stage_manifest_digest\":\"" STAGE
        "\"}";
/* sha256("glove.apply.authorization.v1\0" || sample_text), by sha256sum(1). */
static const char sample_digest[] = "bb386d64217e30a4be54a0756072f491ed293469d22e63878b836e4cd19b7e09";

static struct glove_apply_authorization sample(void) {
        struct glove_apply_authorization a;
        memset(&a, 0, sizeof(a));
        strcpy(a.schema, "glove.apply-authorization.v1");
        strcpy(a.session_id, "sess-01");
        strcpy(a.grant, "project");
        strcpy(a.grant_id, "sess-01/project");
        strcpy(a.baseline_manifest_digest, BASE);
        strcpy(a.stage_manifest_digest, STAGE);
        strcpy(a.key_id, "owner-1");
        strcpy(a.nonce, NONCE);
        a.issued_at_ms = ISSUED;
        a.expires_at_ms = EXPIRES;
        return a;
}

static void assert_same(const struct glove_apply_authorization *a, const struct glove_apply_authorization *b) {
        assert_string_equal(a->schema, b->schema);
        assert_string_equal(a->session_id, b->session_id);
        assert_string_equal(a->grant, b->grant);
        assert_string_equal(a->grant_id, b->grant_id);
        assert_string_equal(a->baseline_manifest_digest, b->baseline_manifest_digest);
        assert_string_equal(a->stage_manifest_digest, b->stage_manifest_digest);
        assert_string_equal(a->key_id, b->key_id);
        assert_string_equal(a->nonce, b->nonce);
        assert_int_equal(a->issued_at_ms, b->issued_at_ms);
        assert_int_equal(a->expires_at_ms, b->expires_at_ms);
}

/* Encoding a must fail naming member; so must decoding its bytes, built
 * canonically from the same values without the encoder's checks. */
static void expect_invalid(const struct glove_apply_authorization *a, const char *member) {
        struct glove_error err = { 0 };
        char *text = (void *)0x1;
        size_t len = 1;
        expect_error(glove_apply_authorization_encode(a, &text, &len, &err), err, -EINVAL,
                     "apply.authorization_invalid");
        expect_message(err, member);
        assert_null(text);
        _cleanup_json_ json_t *o = json_pack(
                "{s:s, s:I, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s}", "baseline_manifest_digest",
                a->baseline_manifest_digest, "expires_at_ms", (json_int_t)a->expires_at_ms, "grant", a->grant,
                "grant_id", a->grant_id, "issued_at_ms", (json_int_t)a->issued_at_ms, "key_id", a->key_id, "nonce",
                a->nonce, "schema", a->schema, "session_id", a->session_id, "stage_manifest_digest",
                a->stage_manifest_digest);
        if (!o)
                return; /* not UTF-8: jansson itself refuses it */
        _cleanup_free_ char *raw = NULL;
        assert_int_equal(glove_json_encode_canonical(o, &raw, &len, NULL), 0);
        struct glove_apply_authorization d;
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_decode(raw, len, &d, &err), err, -EINVAL,
                     "apply.authorization_invalid");
        expect_message(err, member);
}

static void test_encode_exact(void **state) {
        (void)state;
        struct glove_apply_authorization a = sample();
        char *text = NULL;
        size_t len = 0;
        struct glove_error err = { 0 };
        assert_int_equal(glove_apply_authorization_encode(&a, &text, &len, &err), 0);
        assert_string_equal(text, sample_text);
        assert_int_equal(len, strlen(sample_text));
        struct glove_apply_authorization d;
        memset(&d, 0x55, sizeof(d));
        assert_int_equal(glove_apply_authorization_decode(text, len, &d, &err), 0);
        assert_same(&a, &d);
        free(text);
}

static void test_message_and_digest(void **state) {
        (void)state;
        uint8_t *msg = NULL;
        size_t n = 0;
        size_t len = strlen(sample_text);
        assert_int_equal(glove_apply_authorization_message(sample_text, len, &msg, &n, NULL), 0);
        static const char domain[] = "glove.apply.authorization.v1";
        assert_int_equal(n, sizeof(domain) + len);
        assert_memory_equal(msg, domain, sizeof(domain)); /* the NUL included */
        assert_memory_equal(msg + sizeof(domain), sample_text, len);
        free(msg);
        char hex[GLOVE_APPLY_HEX_SIZE];
        assert_int_equal(glove_apply_authorization_digest(sample_text, len, hex, NULL), 0);
        assert_string_equal(hex, sample_digest);
        /* One byte more is another digest. */
        char other[sizeof(sample_text)];
        memcpy(other, sample_text, sizeof(sample_text));
        other[strlen("{\"baseline_manifest_digest\":\"")] = '1';
        char hex2[GLOVE_APPLY_HEX_SIZE];
        assert_int_equal(glove_apply_authorization_digest(other, len, hex2, NULL), 0);
        assert_string_not_equal(hex, hex2);
}

static void test_decode_not_canonical(void **state) {
        (void)state;
        size_t len = strlen(sample_text);
        struct glove_apply_authorization d;
        struct glove_error err = { 0 };
        /* A space, a trailing newline, members out of order, an escaped
         * character that need not be. */
        char spaced[1024];
        snprintf(spaced, sizeof(spaced), "{ %s", sample_text + 1);
        char newline[1024];
        snprintf(newline, sizeof(newline), "%s\n", sample_text);
        const char *reordered =
                "{\"expires_at_ms\":1700000600000,\"baseline_manifest_digest\":\"" BASE "\",\"grant\":\"project\","
                "\"grant_id\":\"sess-01/project\",\"issued_at_ms\":1700000000000,\"key_id\":\"owner-1\",\"nonce\":\"" NONCE
                "\",\"schema\":\"glove.apply-authorization.v1\",\"session_id\":\"sess-01\",\"stage_manifest_digest\":\"" STAGE
                "\"}";
        char escaped[1024];
        snprintf(escaped, sizeof(escaped), "%s", sample_text);
        char *g = strstr(escaped, "\"project\"");
        assert_non_null(g);
        memmove(g + 7, g + 2, strlen(g + 2) + 1);
        memcpy(g + 1, "\\u0070", 6); /* "\u0070roject" */
        const char *cases[] = { spaced, newline, reordered, escaped };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                glove_error_clear(&err);
                expect_error(glove_apply_authorization_decode(cases[i], strlen(cases[i]), &d, &err), err, -EINVAL,
                             "apply.authorization_invalid");
        }
        /* Not JSON, not an object, too large. */
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_decode("{", 1, &d, &err), err, -EINVAL, "apply.authorization_invalid");
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_decode("[]", 2, &d, &err), err, -EINVAL, "apply.authorization_invalid");
        char *big = malloc(GLOVE_APPLY_AUTH_MAX_BYTES + 1);
        assert_non_null(big);
        memset(big, ' ', GLOVE_APPLY_AUTH_MAX_BYTES + 1);
        memcpy(big, sample_text, len);
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_decode(big, GLOVE_APPLY_AUTH_MAX_BYTES + 1, &d, &err), err, -EINVAL,
                     "apply.authorization_invalid");
        free(big);
        /* The sample itself decodes. */
        assert_int_equal(glove_apply_authorization_decode(sample_text, len, &d, NULL), 0);
}

static void test_decode_members(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        struct glove_apply_authorization d;
        /* Unknown member, missing member, wrong types. */
        _cleanup_json_ json_t *o = NULL;
        assert_int_equal(glove_json_decode_strict(sample_text, strlen(sample_text), 4096, 0, &o, NULL), 0);
        static const struct {
                const char *key, *words;
                json_t *(*value)(void);
        } edits[] = {
                { "comment", "$.comment", NULL },
                { "nonce", "$.nonce", NULL },
                { "schema", "$.schema", NULL },
                { "issued_at_ms", "$.issued_at_ms", NULL },
        };
        for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
                _cleanup_json_ json_t *c = json_deep_copy(o);
                if (json_object_get(c, edits[i].key))
                        assert_int_equal(json_object_del(c, edits[i].key), 0);
                else
                        assert_int_equal(json_object_set_new(c, edits[i].key, json_string("x")), 0);
                _cleanup_free_ char *raw = NULL;
                size_t len = 0;
                assert_int_equal(glove_json_encode_canonical(c, &raw, &len, NULL), 0);
                glove_error_clear(&err);
                expect_error(glove_apply_authorization_decode(raw, len, &d, &err), err, -EINVAL,
                             "apply.authorization_invalid");
                expect_message(err, edits[i].words);
        }
        struct {
                const char *key;
                json_t *value;
        } types[] = {
                { "issued_at_ms", json_string("1700000000000") },
                { "expires_at_ms", json_true() },
                { "grant", json_integer(1) },
                { "nonce", json_null() },
        };
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
                _cleanup_json_ json_t *c = json_deep_copy(o);
                assert_int_equal(json_object_set_new(c, types[i].key, types[i].value), 0);
                _cleanup_free_ char *raw = NULL;
                size_t len = 0;
                assert_int_equal(glove_json_encode_canonical(c, &raw, &len, NULL), 0);
                glove_error_clear(&err);
                expect_error(glove_apply_authorization_decode(raw, len, &d, &err), err, -EINVAL,
                             "apply.authorization_invalid");
                expect_message(err, types[i].key);
        }
        /* A real where an integer belongs is not canonical JSON at all. */
        char real[1024];
        snprintf(real, sizeof(real), "%s", sample_text);
        char *p = strstr(real, "1700000600000");
        memcpy(p, "1.70000060e12", 13);
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_decode(real, strlen(real), &d, &err), err, -EINVAL,
                     "apply.authorization_invalid");
}

static void test_identifiers(void **state) {
        (void)state;
        char long_name[GLOVE_APPLY_NAME_MAX + 2];
        memset(long_name, 'a', GLOVE_APPLY_NAME_MAX + 1);
        long_name[GLOVE_APPLY_NAME_MAX + 1] = '\0';
        const char *bad[] = { "", ".", "..", "a/b", "a b", "\xc3\xa9", "a\\b", long_name };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_apply_authorization a = sample();
                snprintf(a.session_id, sizeof(a.session_id), "%s", bad[i]);
                snprintf(a.grant_id, sizeof(a.grant_id), "%s/%s", a.session_id, a.grant);
                if (strlen(bad[i]) <= GLOVE_APPLY_NAME_MAX)
                        expect_invalid(&a, "session_id");
                a = sample();
                snprintf(a.grant, sizeof(a.grant), "%s", bad[i]);
                snprintf(a.grant_id, sizeof(a.grant_id), "%s/%s", a.session_id, a.grant);
                if (strlen(bad[i]) <= GLOVE_APPLY_NAME_MAX)
                        expect_invalid(&a, "grant");
                a = sample();
                snprintf(a.key_id, sizeof(a.key_id), "%s", bad[i]);
                if (i != 1 && i != 2 && strlen(bad[i]) <= GLOVE_APPLY_KEY_ID_MAX) /* "." and ".." are key ids */
                        expect_invalid(&a, "key_id");
        }
        /* Names of 128 characters are the longest, key ids of 64. */
        struct glove_apply_authorization a = sample();
        memset(a.session_id, 's', GLOVE_APPLY_NAME_MAX);
        a.session_id[GLOVE_APPLY_NAME_MAX] = '\0';
        memset(a.grant, 'g', GLOVE_APPLY_NAME_MAX);
        a.grant[GLOVE_APPLY_NAME_MAX] = '\0';
        snprintf(a.grant_id, sizeof(a.grant_id), "%s/%s", a.session_id, a.grant);
        memset(a.key_id, 'k', GLOVE_APPLY_KEY_ID_MAX);
        a.key_id[GLOVE_APPLY_KEY_ID_MAX] = '\0';
        char *text = NULL;
        size_t len = 0;
        struct glove_error err = { 0 };
        assert_int_equal(glove_apply_authorization_encode(&a, &text, &len, &err), 0);
        struct glove_apply_authorization d;
        assert_int_equal(glove_apply_authorization_decode(text, len, &d, &err), 0);
        assert_same(&a, &d);
        free(text);
        /* A 129-character session id in the bytes (the struct cannot hold it). */
        char raw[2048];
        snprintf(raw, sizeof(raw), "%s", sample_text);
        char *s = strstr(raw, "\"session_id\":\"sess-01\"");
        assert_non_null(s);
        char tail[1024];
        snprintf(tail, sizeof(tail), "%s", s + strlen("\"session_id\":\"sess-01\""));
        snprintf(s, sizeof(raw) - (size_t)(s - raw), "\"session_id\":\"%s\"%s", long_name, tail);
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_decode(raw, strlen(raw), &d, &err), err, -EINVAL,
                     "apply.authorization_invalid");
        expect_message(err, "session_id");
        /* A 65-character key id in the bytes. */
        snprintf(raw, sizeof(raw), "%s", sample_text);
        s = strstr(raw, "\"owner-1\"");
        assert_non_null(s);
        snprintf(tail, sizeof(tail), "%s", s + strlen("\"owner-1\""));
        snprintf(s, sizeof(raw) - (size_t)(s - raw), "\"%.*s\"%s", GLOVE_APPLY_KEY_ID_MAX + 1, long_name, tail);
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_decode(raw, strlen(raw), &d, &err), err, -EINVAL,
                     "apply.authorization_invalid");
        expect_message(err, "key_id");
}

static void test_hex_and_grant_id(void **state) {
        (void)state;
        const char *bad[] = {
                "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", /* uppercase */
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",  /* 63 */
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg", /* g */
                "",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_apply_authorization a = sample();
                strcpy(a.baseline_manifest_digest, bad[i]);
                expect_invalid(&a, "baseline_manifest_digest");
                a = sample();
                strcpy(a.stage_manifest_digest, bad[i]);
                expect_invalid(&a, "stage_manifest_digest");
                a = sample();
                strcpy(a.nonce, bad[i]);
                expect_invalid(&a, "nonce");
        }
        const char *grant_ids[] = { "sess-01/other", "other/project", "sess-01project", "sess-01/project/", "" };
        for (size_t i = 0; i < sizeof(grant_ids) / sizeof(grant_ids[0]); i++) {
                struct glove_apply_authorization a = sample();
                strcpy(a.grant_id, grant_ids[i]);
                expect_invalid(&a, "grant_id");
        }
        struct glove_apply_authorization a = sample();
        strcpy(a.schema, "glove.apply-authorization.v2");
        expect_invalid(&a, "schema");
}

static void test_times(void **state) {
        (void)state;
        struct glove_apply_authorization a = sample();
        a.expires_at_ms = a.issued_at_ms - 1;
        expect_invalid(&a, "before issued_at_ms");
        a = sample();
        a.expires_at_ms = a.issued_at_ms + GLOVE_APPLY_AUTH_TTL_MAX_MS + 1;
        expect_invalid(&a, "expires_at_ms");
        a = sample();
        a.issued_at_ms = -1;
        a.expires_at_ms = 0;
        expect_invalid(&a, "issued_at_ms");
        a = sample();
        a.issued_at_ms = INT64_MAX - 1;
        a.expires_at_ms = INT64_MAX;
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(glove_apply_authorization_encode(&a, &text, &len, NULL), 0);
        free(text);
        /* The bounds themselves are valid. */
        const int64_t ttls[] = { 0, GLOVE_APPLY_AUTH_TTL_MAX_MS };
        for (size_t i = 0; i < 2; i++) {
                a = sample();
                a.expires_at_ms = a.issued_at_ms + ttls[i];
                struct glove_error err = { 0 };
                assert_int_equal(glove_apply_authorization_encode(&a, &text, &len, &err), 0);
                struct glove_apply_authorization d;
                assert_int_equal(glove_apply_authorization_decode(text, len, &d, &err), 0);
                assert_same(&a, &d);
                free(text);
        }
}

/* ---- verification with real keys ---- */

struct venv {
        char dir[FIXTURE_PATH_MAX];
        struct glove_apply_key *owner, *other, *impostor;
        struct glove_apply_trust *trust;
        char *text;
        size_t len;
        uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN];
};

static void sign(const struct glove_apply_key *k, const char *text, size_t len, uint8_t sig[64]) {
        _cleanup_free_ uint8_t *msg = NULL;
        size_t n = 0;
        struct glove_error err = { 0 };
        assert_int_equal(glove_apply_authorization_message(text, len, &msg, &n, &err), 0);
        assert_int_equal(glove_apply_key_sign(k, msg, n, sig, &err), 0);
}

static int vsetup(void **state) {
        struct venv *e = calloc(1, sizeof(*e));
        assert_non_null(e);
        fixture_tmpdir(e->dir, "auth");
        char pub[45], other_pub[45], imp_pub[45];
        e->owner = fixture_new_key(e->dir, "owner.key", "owner-1", pub);
        e->other = fixture_new_key(e->dir, "other.key", "other", other_pub);
        /* Another key that claims the listed id. */
        e->impostor = fixture_new_key(e->dir, "impostor.key", "owner-1", imp_pub);
        assert_string_not_equal(pub, imp_pub);
        char path[FIXTURE_PATH_MAX];
        fixture_join(path, e->dir, "trust.json");
        const char *ids[] = { "owner-1" };
        const char *pubs[] = { pub };
        fixture_write_policy(path, 1, ids, pubs, 0644);
        if (geteuid() == 0) {
                struct glove_error err = { 0 };
                if (glove_apply_trust_load(path, &e->trust, &err) < 0)
                        fail_msg("%s: %s", err.code, err.message);
        }
        struct glove_apply_authorization a = sample();
        assert_int_equal(glove_apply_authorization_encode(&a, &e->text, &e->len, NULL), 0);
        sign(e->owner, e->text, e->len, e->sig);
        *state = e;
        return 0;
}

static int vteardown(void **state) {
        struct venv *e = *state;
        glove_apply_key_free(e->owner);
        glove_apply_key_free(e->other);
        glove_apply_key_free(e->impostor);
        glove_apply_trust_free(e->trust);
        free(e->text);
        fixture_rm_rf(e->dir);
        free(e);
        return 0;
}

static void test_verify(void **state) {
        struct venv *e = *state;
        SKIP_UNLESS_ROOT("verification needs a root-owned trust policy");
        struct glove_apply_authorization a;
        struct glove_error err = { 0 };
        const int64_t now[] = { ISSUED, ISSUED + 1, EXPIRES };
        for (size_t i = 0; i < 3; i++) {
                memset(&a, 0, sizeof(a));
                if (glove_apply_authorization_verify(e->trust, e->text, e->len, e->sig, now[i], &a, &err) < 0)
                        fail_msg("%s: %s", err.code, err.message);
                struct glove_apply_authorization want = sample();
                assert_same(&a, &want);
        }
}

static void test_verify_tampered(void **state) {
        struct venv *e = *state;
        SKIP_UNLESS_ROOT("verification needs a root-owned trust policy");
        struct glove_apply_authorization a;
        struct glove_error err = { 0 };
        /* Every byte of the nonce, changed to another valid digit, still
         * decodes and no longer verifies. */
        char *copy = strdup(e->text);
        char *nonce = strstr(copy, NONCE);
        assert_non_null(nonce);
        for (size_t i = 0; i < 64; i++) {
                char saved = nonce[i];
                nonce[i] = saved == 'f' ? 'e' : (char)(saved == '9' ? 'a' : saved + 1);
                glove_error_clear(&err);
                assert_int_equal(glove_apply_authorization_decode(copy, e->len, &a, NULL), 0);
                expect_error(glove_apply_authorization_verify(e->trust, copy, e->len, e->sig, ISSUED, &a, &err), err,
                             -EPERM, "apply.bad_signature");
                nonce[i] = saved;
        }
        /* A later expiry (still valid) is tampering too. */
        char *exp = strstr(copy, "1700000600000");
        exp[7] = '7';
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_verify(e->trust, copy, e->len, e->sig, ISSUED, &a, &err), err, -EPERM,
                     "apply.bad_signature");
        free(copy);
        /* A changed signature bit. */
        for (size_t i = 0; i < GLOVE_APPLY_SIGNATURE_LEN; i += 7) {
                uint8_t bad[GLOVE_APPLY_SIGNATURE_LEN];
                memcpy(bad, e->sig, sizeof(bad));
                bad[i] ^= 0x80;
                glove_error_clear(&err);
                expect_error(glove_apply_authorization_verify(e->trust, e->text, e->len, bad, ISSUED, &a, &err), err,
                             -EPERM, "apply.bad_signature");
        }
        /* Signed without the domain prefix: the same bytes, another message. */
        uint8_t raw_sig[GLOVE_APPLY_SIGNATURE_LEN];
        assert_int_equal(glove_apply_key_sign(e->owner, e->text, e->len, raw_sig, NULL), 0);
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_verify(e->trust, e->text, e->len, raw_sig, ISSUED, &a, &err), err,
                     -EPERM, "apply.bad_signature");
        /* A key that claims the listed id. */
        uint8_t imp_sig[GLOVE_APPLY_SIGNATURE_LEN];
        sign(e->impostor, e->text, e->len, imp_sig);
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_verify(e->trust, e->text, e->len, imp_sig, ISSUED, &a, &err), err,
                     -EPERM, "apply.bad_signature");
}

static void test_verify_untrusted(void **state) {
        struct venv *e = *state;
        SKIP_UNLESS_ROOT("verification needs a root-owned trust policy");
        struct glove_apply_authorization a = sample();
        strcpy(a.key_id, "other");
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        assert_int_equal(glove_apply_authorization_encode(&a, &text, &len, NULL), 0);
        uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN];
        sign(e->other, text, len, sig);
        struct glove_error err = { 0 };
        expect_error(glove_apply_authorization_verify(e->trust, text, len, sig, ISSUED, &a, &err), err, -EPERM,
                     "apply.untrusted_key");
        expect_message(err, "\"other\"");
}

static void test_verify_expired(void **state) {
        struct venv *e = *state;
        SKIP_UNLESS_ROOT("verification needs a root-owned trust policy");
        struct glove_apply_authorization a;
        memset(&a, 0x55, sizeof(a));
        struct glove_apply_authorization untouched = a;
        struct glove_error err = { 0 };
        expect_error(glove_apply_authorization_verify(e->trust, e->text, e->len, e->sig, EXPIRES + 1, &a, &err), err,
                     -EPERM, "apply.authorization_expired");
        expect_message(err, "expired");
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_verify(e->trust, e->text, e->len, e->sig, ISSUED - 1, &a, &err), err,
                     -EPERM, "apply.authorization_expired");
        expect_message(err, "not valid yet");
        assert_memory_equal(&a, &untouched, sizeof(a));
        /* Bytes that do not decode are refused before any signature check. */
        glove_error_clear(&err);
        expect_error(glove_apply_authorization_verify(e->trust, "{}", 2, e->sig, ISSUED, &a, &err), err, -EINVAL,
                     "apply.authorization_invalid");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_encode_exact),
                cmocka_unit_test(test_message_and_digest),
                cmocka_unit_test(test_decode_not_canonical),
                cmocka_unit_test(test_decode_members),
                cmocka_unit_test(test_identifiers),
                cmocka_unit_test(test_hex_and_grant_id),
                cmocka_unit_test(test_times),
                cmocka_unit_test_setup_teardown(test_verify, vsetup, vteardown),
                cmocka_unit_test_setup_teardown(test_verify_tampered, vsetup, vteardown),
                cmocka_unit_test_setup_teardown(test_verify_untrusted, vsetup, vteardown),
                cmocka_unit_test_setup_teardown(test_verify_expired, vsetup, vteardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

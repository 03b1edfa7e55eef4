/* SPDX-License-Identifier: Apache-2.0 */
/* The receipt journal (glove/store/receipts.h): key generation, the
 * HMAC-SHA-256 chain from the anchor, paging, exact acknowledgement, and
 * torn-tail recovery. Receipts are appended through the internal API. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/store/receipts.h"
#include "helpers.h"

static const uint8_t ANCHOR[32] = { 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
                                    0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5,
                                    0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf };

/* The envelope MAC domains, written out here rather than taken from the
 * library (receipts.h, top). */
#define RESOURCE_ENVELOPE_DOMAIN "glove.receipt.envelope.v1"
#define REFINEMENT_ENVELOPE_DOMAIN "glove.receipt.refinement-envelope.v1"

struct fixture {
        char *dir, *journal, *seal, *key, *ack;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        f->dir = th_tempdir();
        f->journal = th_join(f->dir, "receipts.journal");
        f->seal = th_join(f->dir, "receipts.journal.seal");
        f->key = th_join(f->dir, "receipt.key");
        f->ack = th_join(f->dir, "receipts.ack");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        free(f->journal);
        free(f->seal);
        free(f->key);
        free(f->ack);
        th_rmtree(f->dir);
        free(f);
        return 0;
}

static int open_r(struct fixture *f, const uint8_t *anchor, struct glove_store_receipts **r, struct glove_error *e) {
        struct glove_store_receipts_options o = { .state_dir = f->dir, .owner = geteuid(), .anchor = anchor };
        return glove_store_receipts_open(&o, r, e);
}

static void append(struct glove_store_receipts *r, int i) {
        _cleanup_json_ json_t *body = json_pack("{s:i,s:s}", "cpu_time_ms", 100 * i, "termination", "exited");
        uint64_t seq = 0;
        assert_int_equal(glove_store_receipts_append(r, "resource.v1", "sess-1", body, 1764000000000 + i, &seq, NULL),
                         0);
        assert_int_equal(seq, (uint64_t)i);
}

static json_t *page(struct glove_store_receipts *r, uint64_t after, uint64_t limit) {
        json_t *p = NULL;
        assert_int_equal(glove_store_receipts_page(r, after, limit, &p, NULL), 0);
        return p;
}

/* Recomputes the chain independently from the key file and the anchor. */
static void verify_chain(struct fixture *f, const json_t *pg, const uint8_t anchor[32]) {
        size_t klen;
        unsigned char *key = th_read(f->key, &klen);
        assert_int_equal(klen, 32);
        uint8_t prev[32];
        memcpy(prev, anchor, 32);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(pg, "envelopes"), i, e) {
                char *env = json_dumps(json_object_get(e, "envelope"), JSON_COMPACT | JSON_SORT_KEYS);
                size_t n = strlen(env);
                const char *kind = json_string_value(json_object_get(json_object_get(e, "envelope"), "kind"));
                const char *domain = strcmp(kind, "session.refinement") == 0 ? REFINEMENT_ENVELOPE_DOMAIN
                                                                              : RESOURCE_ENVELOPE_DOMAIN;
                size_t dn = strlen(domain) + 1;
                unsigned char *msg = malloc(dn + 32 + n);
                memcpy(msg, domain, dn);
                memcpy(msg + dn, prev, 32);
                memcpy(msg + dn + 32, env, n);
                uint8_t mac[32];
                char hex[65];
                assert_int_equal(glove_digest_hmac_sha256(key, 32, msg, dn + 32 + n, mac, NULL), 0);
                glove_digest_hex_encode(mac, 32, hex, sizeof(hex));
                assert_string_equal(json_string_value(json_object_get(e, "mac")), hex);
                memcpy(prev, mac, 32);
                free(msg);
                free(env);
        }
        free(key);
}

static void test_key_and_chain(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        struct stat st;
        assert_int_equal(stat(f->key, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(st.st_size, 32);
        uint8_t head[32];
        assert_int_equal(glove_store_receipts_head(r, head), 0);
        assert_memory_equal(head, ANCHOR, 32);
        for (int i = 1; i <= 5; i++)
                append(r, i);
        _cleanup_json_ json_t *pg = page(r, 0, 256);
        assert_int_equal(json_array_size(json_object_get(pg, "envelopes")), 5);
        verify_chain(f, pg, ANCHOR);
        json_t *last = json_array_get(json_object_get(pg, "envelopes"), 4);
        json_t *h = json_object_get(pg, "head");
        assert_int_equal(json_integer_value(json_object_get(h, "sequence")), 5);
        assert_string_equal(json_string_value(json_object_get(h, "mac")),
                            json_string_value(json_object_get(last, "mac")));
        json_t *env = json_object_get(last, "envelope");
        assert_int_equal(json_integer_value(json_object_get(env, "sequence")), 5);
        assert_string_equal(json_string_value(json_object_get(env, "kind")), "resource.v1");
        assert_string_equal(json_string_value(json_object_get(env, "session_id")), "sess-1");
        glove_store_receipts_close(r);

        /* Restart: the same key is reused and the chain verifies on replay. */
        size_t k1len;
        unsigned char *k1 = th_read(f->key, &k1len);
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_head(r, head), 5);
        append(r, 6);
        _cleanup_json_ json_t *pg2 = page(r, 0, 256);
        verify_chain(f, pg2, ANCHOR);
        glove_store_receipts_close(r);
        size_t k2len;
        unsigned char *k2 = th_read(f->key, &k2len);
        assert_memory_equal(k1, k2, 32);
        free(k1);
        free(k2);
}

static void test_paging(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        for (int i = 1; i <= 7; i++)
                append(r, i);
        _cleanup_json_ json_t *p1 = page(r, 0, 3);
        assert_int_equal(json_array_size(json_object_get(p1, "envelopes")), 3);
        assert_true(json_is_true(json_object_get(p1, "more")));
        _cleanup_json_ json_t *p2 = page(r, 3, 3);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(p2, "envelopes"), 0),
                                                            "sequence")),
                         4);
        _cleanup_json_ json_t *p3 = page(r, 6, 3);
        assert_int_equal(json_array_size(json_object_get(p3, "envelopes")), 1);
        assert_false(json_is_true(json_object_get(p3, "more")));
        _cleanup_json_ json_t *p4 = page(r, 7, 3);
        assert_int_equal(json_array_size(json_object_get(p4, "envelopes")), 0);
        json_t *bad = NULL;
        assert_int_equal(glove_store_receipts_page(r, 8, 3, &bad, &e), -EINVAL);
        assert_string_equal(e.code, "receipts.invalid_argument");
        glove_error_clear(&e);
        assert_int_equal(glove_store_receipts_page(r, 0, 0, &bad, &e), -EINVAL);
        glove_error_clear(&e);
        assert_int_equal(glove_store_receipts_page(r, 0, 257, &bad, &e), -EINVAL);
        assert_null(bad);
        glove_store_receipts_close(r);
}

static void test_ack_exact_head(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        struct glove_error e = { 0 };
        char anchor_hex[65], head_hex[65], prev_hex[65];
        glove_digest_hex_encode(ANCHOR, 32, anchor_hex, sizeof(anchor_hex));
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_ack(r, 0, anchor_hex, NULL), 0); /* empty chain: head is the anchor */
        append(r, 1);
        append(r, 2);
        uint8_t head[32];
        glove_store_receipts_head(r, head);
        glove_digest_hex_encode(head, 32, head_hex, sizeof(head_hex));
        _cleanup_json_ json_t *pg = page(r, 0, 10);
        snprintf(prev_hex, sizeof(prev_hex), "%s",
                 json_string_value(json_object_get(json_array_get(json_object_get(pg, "envelopes"), 0), "mac")));
        assert_int_equal(glove_store_receipts_ack(r, 1, prev_hex, &e), -EINVAL); /* not the head */
        assert_string_equal(e.code, "receipts.ack_mismatch");
        glove_error_clear(&e);
        assert_int_equal(glove_store_receipts_ack(r, 2, prev_hex, &e), -EINVAL);
        assert_string_equal(e.code, "receipts.ack_mismatch");
        glove_error_clear(&e);
        assert_int_equal(glove_store_receipts_ack(r, 1, head_hex, &e), -EINVAL);
        glove_error_clear(&e);
        assert_int_equal(glove_store_receipts_ack(r, 2, "XYZ", &e), -EINVAL);
        assert_string_equal(e.code, "receipts.invalid_argument");
        assert_int_equal(glove_store_receipts_ack(r, 2, head_hex, NULL), 0);
        glove_store_receipts_close(r);
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        _cleanup_json_ json_t *pg2 = page(r, 0, 10);
        assert_int_equal(json_integer_value(json_object_get(pg2, "acknowledged_sequence")), 2);
        glove_store_receipts_close(r);
        /* An acknowledgement that names a receipt the chain does not hold. */
        th_write(f->ack, "{\"head_mac\":\"0000000000000000000000000000000000000000000000000000000000000000\","
                         "\"sequence\":2}",
                 strlen("{\"head_mac\":\"0000000000000000000000000000000000000000000000000000000000000000\","
                        "\"sequence\":2}"));
        glove_error_clear(&e);
        assert_int_equal(open_r(f, NULL, &r, &e), -EBADMSG);
        assert_string_equal(e.code, "receipts.ack_invalid");
}

/* A crash during an append leaves an incomplete last record that was never
 * sealed: every cut inside it is recovered, earlier receipts intact, and
 * the chain continues from the previous head. */
static void test_torn_tail(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        append(r, 1);
        append(r, 2);
        uint8_t head2[32];
        glove_store_receipts_head(r, head2);
        glove_store_receipts_close(r);
        size_t sl, l2;
        unsigned char *seal2 = th_read(f->seal, &sl);
        unsigned char *j2 = th_read(f->journal, &l2);
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        append(r, 3);
        glove_store_receipts_close(r);
        size_t l3;
        unsigned char *j3 = th_read(f->journal, &l3);
        for (size_t cut = l2 + 1; cut < l3; cut++) {
                th_write(f->journal, j3, cut);
                th_write(f->seal, seal2, sl);
                assert_int_equal(open_r(f, NULL, &r, NULL), 0);
                uint64_t torn, off;
                glove_store_receipts_recovery(r, &torn, &off);
                assert_int_equal(torn, cut - l2);
                assert_int_equal(off, l2);
                uint8_t head[32];
                assert_int_equal(glove_store_receipts_head(r, head), 2);
                assert_memory_equal(head, head2, 32);
                _cleanup_json_ json_t *pg = page(r, 0, 10);
                assert_int_equal(json_integer_value(json_object_get(json_object_get(pg, "recovery"), "torn_bytes")),
                                 (json_int_t)(cut - l2));
                glove_store_receipts_close(r);
                size_t now;
                unsigned char *j = th_read(f->journal, &now);
                assert_int_equal(now, l2);
                assert_memory_equal(j, j2, l2);
                free(j);
        }
        /* After recovery the chain continues. */
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        append(r, 3);
        _cleanup_json_ json_t *pg = page(r, 0, 10);
        verify_chain(f, pg, ANCHOR);
        glove_store_receipts_close(r);
        /* A sealed receipt cut short is not a crash artefact: refused. */
        size_t l;
        unsigned char *j = th_read(f->journal, &l);
        th_write(f->journal, j, l - 1);
        struct glove_error e = { 0 };
        assert_int_equal(open_r(f, NULL, &r, &e), -EBADMSG);
        assert_string_equal(e.code, "journal.resized");
        th_write(f->journal, j, l);
        free(j);
        free(seal2);
        free(j2);
        free(j3);
}

static void test_refusals(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        append(r, 1);
        append(r, 2);
        glove_store_receipts_close(r);
        uint8_t other[32] = { 1 };
        assert_int_equal(open_r(f, other, &r, &e), -EINVAL);
        assert_string_equal(e.code, "receipts.anchor_mismatch");
        /* A flipped byte inside an envelope breaks the MAC chain. */
        size_t l;
        unsigned char *j = th_read(f->journal, &l);
        j[64 + 10] ^= 1;
        th_write(f->journal, j, l);
        glove_error_clear(&e);
        assert_int_equal(open_r(f, NULL, &r, &e), -EBADMSG);
        assert_string_equal(e.code, "journal.chain_mismatch");
        j[64 + 10] ^= 1;
        th_write(f->journal, j, l);
        /* Another key cannot verify the chain. */
        size_t kl;
        unsigned char *key = th_read(f->key, &kl);
        key[0] ^= 1;
        th_write(f->key, key, kl);
        glove_error_clear(&e);
        assert_int_equal(open_r(f, NULL, &r, &e), -EBADMSG);
        assert_string_equal(e.code, "journal.chain_mismatch");
        key[0] ^= 1;
        th_write(f->key, key, kl);
        assert_int_equal(chmod(f->key, 0644), 0);
        glove_error_clear(&e);
        assert_int_equal(open_r(f, NULL, &r, &e), -EPERM);
        assert_string_equal(e.code, "receipts.key_insecure");
        assert_int_equal(unlink(f->key), 0);
        glove_error_clear(&e);
        assert_int_equal(open_r(f, NULL, &r, &e), -ENOENT);
        assert_string_equal(e.code, "receipts.key_missing");
        free(j);
        free(key);
}

/* Writes a receipt journal holding one envelope, chained under the fixture's
 * key from header's anchor, and its seal. */
static void write_envelope_in(struct fixture *f, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                              const char *env, const char *domain) {
        size_t kl, n = strlen(env), dn = strlen(domain) + 1;
        unsigned char *key = th_read(f->key, &kl);
        unsigned char msg[1024], out[1024], seal[GLOVE_STORE_JOURNAL_SEAL_LEN] = { 0 };
        uint8_t mac[32];
        assert_true(dn + 32 + n <= sizeof(msg));
        memcpy(msg, domain, dn);
        memcpy(msg + dn, header + 32, 32);
        memcpy(msg + dn + 32, env, n);
        assert_int_equal(glove_digest_hmac_sha256(key, 32, msg, dn + 32 + n, mac, NULL), 0);
        memcpy(out, header, GLOVE_STORE_JOURNAL_HEADER_LEN);
        size_t len = GLOVE_STORE_JOURNAL_HEADER_LEN;
        glove_put_be32(out + len, (uint32_t)n);
        memcpy(out + len + 4, env, n);
        memcpy(out + len + 4 + n, mac, 32);
        len += 4 + n + 32;
        assert_int_equal(glove_store_journal_seal_slot(header, 1, len, mac, seal + GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE,
                                                         NULL),
                         0);
        /* The genesis slot as well, as gloved leaves it (the chain anchor is
         * the head of zero records). */
        assert_int_equal(glove_store_journal_seal_slot(header, 0, GLOVE_STORE_JOURNAL_HEADER_LEN, header + 32, seal,
                                                         NULL),
                         0);
        th_write(f->journal, out, len);
        th_write(f->seal, seal, sizeof(seal));
        free(key);
}

static void write_envelope(struct fixture *f, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                           const char *env) {
        write_envelope_in(f, header, env, RESOURCE_ENVELOPE_DOMAIN);
}

/* Replay refuses an envelope that is not exactly the documented canonical
 * object, or whose sequence is not its position. */
static void test_bad_envelopes_refused(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        glove_store_receipts_close(r);
        size_t hl;
        unsigned char *header = th_read(f->journal, &hl);
        assert_int_equal(hl, GLOVE_STORE_JOURNAL_HEADER_LEN);
        struct {
                const char *env, *code;
        } cases[] = {
                { "{\"appended_at_ms\":1,\"kind\":\"resource.v1\",\"receipt\":{\"a\":1},\"sequence\":1,"
                  "\"session_id\":\"s1\"}",
                  NULL },
                { "{\"appended_at_ms\":1,\"kind\":\"resource.v1\",\"receipt\":{\"a\":1},\"sequence\":1, "
                  "\"session_id\":\"s1\"}",
                  "receipts.bad_record" },
                { "{\"appended_at_ms\":1,\"extra\":0,\"kind\":\"resource.v1\",\"receipt\":{},\"sequence\":1,"
                  "\"session_id\":\"s1\"}",
                  "receipts.bad_record" },
                { "{\"appended_at_ms\":1,\"kind\":\"resource.v1\",\"receipt\":{},\"sequence\":1}",
                  "receipts.bad_record" },
                { "{\"appended_at_ms\":1,\"kind\":\"resource.v1\",\"receipt\":[],\"sequence\":1,"
                  "\"session_id\":\"s1\"}",
                  "receipts.bad_record" },
                { "{\"appended_at_ms\":-1,\"kind\":\"resource.v1\",\"receipt\":{},\"sequence\":1,"
                  "\"session_id\":\"s1\"}",
                  "receipts.bad_record" },
                { "{\"appended_at_ms\":1,\"kind\":\"Bad\",\"receipt\":{},\"sequence\":1,\"session_id\":\"s1\"}",
                  "receipts.bad_record" },
                { "{\"appended_at_ms\":1,\"kind\":\"resource.v1\",\"receipt\":{},\"sequence\":\"1\","
                  "\"session_id\":\"s1\"}",
                  "receipts.bad_record" },
                { "{\"appended_at_ms\":1,\"kind\":\"resource.v1\",\"receipt\":{},\"sequence\":2,"
                  "\"session_id\":\"s1\"}",
                  "receipts.sequence" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_error e = { 0 };
                write_envelope(f, header, cases[i].env);
                int rc = open_r(f, NULL, &r, &e);
                if (!cases[i].code) {
                        assert_int_equal(rc, 0);
                        glove_store_receipts_close(r);
                        continue;
                }
                if (rc == 0 || strcmp(e.code, cases[i].code) != 0)
                        fail_msg("case %zu: expected %s, got %d %s", i, cases[i].code, rc, e.code ? e.code : "-");
        }
        free(header);
}

static void test_append_rejections(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        _cleanup_json_ json_t *body = json_object();
        _cleanup_json_ json_t *arr = json_array();
        assert_int_equal(glove_store_receipts_append(r, "Bad Kind", "s", body, 1, NULL, &e), -EINVAL);
        assert_string_equal(e.code, "receipts.invalid_argument");
        assert_int_equal(glove_store_receipts_append(r, "k", "bad id", body, 1, NULL, NULL), -EINVAL);
        assert_int_equal(glove_store_receipts_append(r, "k", "s", arr, 1, NULL, NULL), -EINVAL);
        assert_int_equal(glove_store_receipts_append(r, "k", "s", body, -1, NULL, NULL), -EINVAL);
        _cleanup_json_ json_t *real = json_pack("{s:f}", "x", 1.5);
        glove_error_clear(&e);
        assert_int_equal(glove_store_receipts_append(r, "k", "s", real, 1, NULL, &e), -EINVAL);
        assert_true(glove_store_receipts_has_room(r, 1000));
        uint8_t head[32];
        assert_int_equal(glove_store_receipts_head(r, head), 0);
        glove_store_receipts_close(r);
}


/* ---- compaction (docs/recovery.md, "Compaction") ---- */

static void ack_head(struct glove_store_receipts *r) {
        uint8_t head[32];
        char hex[65];
        uint64_t n = glove_store_receipts_head(r, head);
        glove_digest_hex_encode(head, 32, hex, sizeof(hex));
        assert_int_equal(glove_store_receipts_ack(r, n, hex, NULL), 0);
}

/* Five receipts acknowledged, two more after them. *mac5 receives the MAC
 * of receipt 5. */
static void build_acked(struct fixture *f, uint8_t mac5[32]) {
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        for (int i = 1; i <= 5; i++)
                append(r, i);
        assert_int_equal(glove_store_receipts_head(r, mac5), 5);
        ack_head(r);
        append(r, 6);
        append(r, 7);
        glove_store_receipts_close(r);
}

static void expect_kept(struct fixture *f, struct glove_store_receipts *r, const uint8_t mac5[32]) {
        uint8_t head[32];
        assert_int_equal(glove_store_receipts_head(r, head), 7);
        json_t *pg = page(r, 5, 10);
        assert_int_equal(json_array_size(json_object_get(pg, "envelopes")), 2);
        assert_int_equal(json_integer_value(json_object_get(pg, "acknowledged_sequence")), 5);
        char hex[65];
        glove_digest_hex_encode(ANCHOR, 32, hex, sizeof(hex));
        assert_string_equal(json_string_value(json_object_get(pg, "anchor")), hex);
        verify_chain(f, pg, mac5);
        json_decref(pg);
}

static void test_compact_drops_acknowledged(void **state) {
        struct fixture *f = *state;
        uint8_t mac5[32], head[32], head2[32];
        build_acked(f, mac5);
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        glove_store_receipts_head(r, head);
        uint64_t bytes = glove_store_receipts_journal_bytes(r);
        assert_true(glove_store_receipts_pending(r, "sess-1"));
        assert_int_equal(glove_store_receipts_compact(r, NULL), 0);
        assert_int_equal(glove_store_receipts_base(r), 5);
        assert_true(glove_store_receipts_journal_bytes(r) < bytes);
        glove_store_receipts_head(r, head2);
        assert_memory_equal(head, head2, 32);
        expect_kept(f, r, mac5);
        json_t *p = NULL;
        struct glove_error e = { 0 };
        assert_true(glove_store_receipts_page(r, 0, 10, &p, &e) < 0);
        assert_string_equal(e.code, "receipts.compacted");
        /* The chain goes on from the head. */
        append(r, 8);
        glove_store_receipts_close(r);
        r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_head(r, head), 8);
        json_t *pg = page(r, 5, 10);
        assert_int_equal(json_array_size(json_object_get(pg, "envelopes")), 3);
        verify_chain(f, pg, mac5);
        json_decref(pg);
        /* Everything acknowledged: an empty tail that still knows its head. */
        ack_head(r);
        assert_false(glove_store_receipts_pending(r, "sess-1"));
        assert_int_equal(glove_store_receipts_compact(r, NULL), 0);
        glove_store_receipts_close(r);
        r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_head(r, head2), 8);
        assert_memory_equal(head, head2, 32);
        assert_int_equal(glove_store_receipts_base(r), 8);
        append(r, 9);
        glove_store_receipts_close(r);
        /* Another anchor is still refused. */
        uint8_t other[32] = { 1 };
        r = NULL;
        e = (struct glove_error){ 0 };
        assert_true(open_r(f, other, &r, &e) < 0);
        assert_string_equal(e.code, "receipts.anchor_mismatch");
}

static int crash_at;
static void crash_hook(void *ctx, enum glove_store_compact_step s) {
        (void)ctx;
        if ((int)s == crash_at)
                _exit(42);
}

static void test_compact_crash_at_every_step(void **state) {
        struct fixture *outer = *state;
        for (int stepno = GLOVE_STORE_COMPACT_BEGIN; stepno < GLOVE_STORE_COMPACT_STEP_COUNT; stepno++) {
                if (stepno == GLOVE_STORE_COMPACT_CHECKPOINT_WRITTEN + 100)
                        continue;
                char name[32];
                snprintf(name, sizeof(name), "step%d", stepno);
                struct fixture g = { .dir = th_join(outer->dir, name) };
                assert_int_equal(mkdir(g.dir, 0700), 0);
                g.journal = th_join(g.dir, "receipts.journal");
                g.seal = th_join(g.dir, "receipts.journal.seal");
                g.key = th_join(g.dir, "receipt.key");
                g.ack = th_join(g.dir, "receipts.ack");
                uint8_t mac5[32];
                build_acked(&g, mac5);
                crash_at = stepno;
                pid_t pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                        struct glove_store_receipts *r = NULL;
                        struct glove_store_receipts_options o = { .state_dir = g.dir, .owner = geteuid(),
                                                                    .anchor = ANCHOR, .hook = crash_hook };
                        if (glove_store_receipts_open(&o, &r, NULL) < 0)
                                _exit(1);
                        (void)glove_store_receipts_compact(r, NULL);
                        _exit(2);
                }
                int status = 0;
                assert_int_equal(waitpid(pid, &status, 0), pid);
                assert_true(WIFEXITED(status));
                assert_int_equal(WEXITSTATUS(status), 42);
                struct glove_store_receipts *r = NULL;
                struct glove_error e = { 0 };
                if (open_r(&g, ANCHOR, &r, &e) < 0)
                        fail_msg("step %d: reopen: %s: %s", stepno, e.code, e.message);
                assert_int_equal(glove_store_receipts_base(r),
                                 stepno >= GLOVE_STORE_COMPACT_CHECKPOINT_INSTALLED ? 5 : 0);
                expect_kept(&g, r, mac5);
                append(r, 8);
                glove_store_receipts_close(r);
                r = NULL;
                assert_int_equal(open_r(&g, ANCHOR, &r, NULL), 0);
                uint8_t head[32];
                assert_int_equal(glove_store_receipts_head(r, head), 8);
                glove_store_receipts_close(r);
                free(g.journal), free(g.seal), free(g.key), free(g.ack), free(g.dir);
        }
}

static void put_file(const char *path, const void *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        close(fd);
}

static void expect_refused(struct fixture *f, const char *code) {
        struct glove_store_receipts *r = NULL;
        struct glove_error e = { 0 };
        size_t jl = 0, jl2 = 0;
        unsigned char *j1 = th_read(f->journal, &jl);
        assert_true(open_r(f, ANCHOR, &r, &e) < 0);
        assert_string_equal(e.code, code);
        assert_non_null(strstr(e.message, "nothing was deleted"));
        unsigned char *j2 = th_read(f->journal, &jl2);
        assert_int_equal(jl, jl2);
        assert_memory_equal(j1, j2, jl);
        free(j1), free(j2);
}

static void test_checkpoint_refusals(void **state) {
        struct fixture *f = *state;
        uint8_t mac5[32];
        build_acked(f, mac5);
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_compact(r, NULL), 0);
        glove_store_receipts_close(r);
        char *ck = th_join(f->dir, "receipts.journal.ckpt");
        size_t cl = 0, kl = 0;
        unsigned char *orig = th_read(ck, &cl), *key = th_read(f->key, &kl);
        assert_int_equal(cl, 232);
        for (size_t off = 16; off < cl; off += 13) {
                unsigned char b[232];
                memcpy(b, orig, cl);
                b[off] ^= 4;
                put_file(ck, b, cl);
                expect_refused(f, off < 24 || (off >= 192 && off < 200) ? "checkpoint.corrupt" : "checkpoint.mac_mismatch");
        }
        put_file(ck, orig, cl - 1);
        expect_refused(f, "checkpoint.corrupt");
        /* Made with another key. */
        put_file(ck, orig, cl);
        unsigned char other[32];
        memcpy(other, key, 32);
        other[0] ^= 1;
        put_file(f->key, other, 32);
        expect_refused(f, "checkpoint.mac_mismatch");
        put_file(f->key, key, 32);
        /* Missing: the tail says it continues a checkpoint. */
        assert_int_equal(unlink(ck), 0);
        expect_refused(f, "checkpoint.missing");
        put_file(ck, orig, cl);
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        expect_kept(f, r, mac5);
        glove_store_receipts_close(r);
        free(orig), free(key), free(ck);
}

/* Automatic: an acknowledgement past the threshold compacts. */
static void test_compact_on_ack(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        struct glove_store_receipts_options o = { .state_dir = f->dir, .owner = geteuid(), .anchor = ANCHOR,
                                                    .compact_records = 4 };
        assert_int_equal(glove_store_receipts_open(&o, &r, NULL), 0);
        for (int i = 1; i <= 40; i++) {
                append(r, i);
                if (i % 3 == 0)
                        ack_head(r);
        }
        assert_int_equal(glove_store_receipts_base(r), 36); /* at 39 only 3 were kept: below the threshold */
        glove_store_receipts_close(r);
        r = NULL;
        assert_int_equal(glove_store_receipts_open(&o, &r, NULL), 0);
        uint8_t head[32];
        assert_int_equal(glove_store_receipts_head(r, head), 40);
        json_t *pg = page(r, 39, 10);
        assert_int_equal(json_array_size(json_object_get(pg, "envelopes")), 1);
        json_decref(pg);
        glove_store_receipts_close(r);
}

/* ---- two kinds: session.terminal and session.refinement ---- */

/* Appends receipt i, of kind kind, or (kind NULL) session.terminal for odd i
 * and session.refinement for even i, for session "sess-I". */
static void append_kind(struct glove_store_receipts *r, const char *kind, int i) {
        if (!kind)
                kind = i % 2 ? GLOVE_STORE_RECEIPTS_KIND_TERMINAL : GLOVE_STORE_RECEIPTS_KIND_REFINEMENT;
        char sid[32];
        snprintf(sid, sizeof(sid), "sess-%d", i);
        _cleanup_json_ json_t *body = json_pack("{s:i,s:s}", "n", i, "session_id", sid);
        uint64_t seq = 0;
        assert_int_equal(glove_store_receipts_append(r, kind, sid, body, 1764000000000 + i, &seq, NULL), 0);
        assert_int_equal(seq, (uint64_t)i);
}

/* The MAC of an envelope's bytes after prev under the fixture's key, in
 * the given domain. */
static void mac_in(struct fixture *f, const char *domain, const uint8_t prev[32], const char *env, uint8_t out[32]) {
        size_t kl, n = strlen(env), dn = strlen(domain) + 1;
        unsigned char *key = th_read(f->key, &kl);
        unsigned char *msg = malloc(dn + 32 + n);
        memcpy(msg, domain, dn);
        memcpy(msg + dn, prev, 32);
        memcpy(msg + dn + 32, env, n);
        assert_int_equal(glove_digest_hmac_sha256(key, 32, msg, dn + 32 + n, out, NULL), 0);
        free(msg);
        free(key);
}

static void test_envelope_domain(void **state) {
        (void)state;
        assert_string_equal(glove_store_receipts_envelope_domain("session.refinement"), REFINEMENT_ENVELOPE_DOMAIN);
        assert_string_equal(glove_store_receipts_envelope_domain(GLOVE_STORE_RECEIPTS_KIND_REFINEMENT),
                            REFINEMENT_ENVELOPE_DOMAIN);
        assert_string_equal(glove_store_receipts_envelope_domain("session.terminal"), RESOURCE_ENVELOPE_DOMAIN);
        assert_string_equal(glove_store_receipts_envelope_domain(GLOVE_STORE_RECEIPTS_KIND_TERMINAL),
                            RESOURCE_ENVELOPE_DOMAIN);
        assert_string_equal(glove_store_receipts_envelope_domain("session.refinementx"), RESOURCE_ENVELOPE_DOMAIN);
        assert_string_equal(glove_store_receipts_envelope_domain("session.refinemen"), RESOURCE_ENVELOPE_DOMAIN);
        assert_string_equal(glove_store_receipts_envelope_domain("resource.v1"), RESOURCE_ENVELOPE_DOMAIN);
        assert_string_equal(glove_store_receipts_envelope_domain(NULL), RESOURCE_ENVELOPE_DOMAIN);
}

/* One chain for both kinds: each envelope is MACed in its kind's domain, a
 * reopen replays and verifies the mixed chain, paging keeps each kind and
 * MAC, and the chain goes on across kinds. */
static void test_mixed_kinds(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        for (int i = 1; i <= 6; i++)
                append_kind(r, NULL, i);
        _cleanup_json_ json_t *before = page(r, 0, 256);
        verify_chain(f, before, ANCHOR);
        glove_store_receipts_close(r);
        r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        uint8_t head[32];
        assert_int_equal(glove_store_receipts_head(r, head), 6);
        _cleanup_json_ json_t *after = page(r, 0, 256);
        assert_true(json_equal(before, after));
        verify_chain(f, after, ANCHOR);
        json_t *list = json_object_get(after, "envelopes");
        assert_int_equal(json_array_size(list), 6);
        /* Each refinement MAC is not what the resource domain gives (and the
         * reverse): the domains are distinct. */
        uint8_t prev[32];
        memcpy(prev, ANCHOR, 32);
        for (size_t i = 0; i < 6; i++) {
                json_t *item = json_array_get(list, i);
                json_t *env = json_object_get(item, "envelope");
                const char *kind = json_string_value(json_object_get(env, "kind"));
                assert_string_equal(kind, i % 2 == 0 ? "session.terminal" : "session.refinement");
                char *bytes = json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS);
                uint8_t own[32], other[32], got[32];
                mac_in(f, i % 2 == 0 ? RESOURCE_ENVELOPE_DOMAIN : REFINEMENT_ENVELOPE_DOMAIN, prev, bytes, own);
                mac_in(f, i % 2 == 0 ? REFINEMENT_ENVELOPE_DOMAIN : RESOURCE_ENVELOPE_DOMAIN, prev, bytes, other);
                const char *hex = json_string_value(json_object_get(item, "mac"));
                assert_int_equal(glove_digest_hex_decode(hex, strlen(hex), got, 32, NULL), 0);
                assert_memory_equal(got, own, 32);
                assert_memory_not_equal(got, other, 32);
                memcpy(prev, got, 32);
                free(bytes);
        }
        assert_memory_equal(prev, head, 32);
        /* find tells the kinds apart. */
        uint64_t seq = 0;
        _cleanup_json_ json_t *found = NULL;
        assert_int_equal(glove_store_receipts_find(r, "session.refinement", "sess-4", &seq, &found), 1);
        assert_int_equal(seq, 4);
        assert_int_equal(json_integer_value(json_object_get(found, "n")), 4);
        assert_int_equal(glove_store_receipts_find(r, "session.terminal", "sess-4", &seq, NULL), 0);
        /* The chain continues across kinds after the reopen. */
        append_kind(r, NULL, 7);
        append_kind(r, NULL, 8);
        _cleanup_json_ json_t *more = page(r, 0, 256);
        verify_chain(f, more, ANCHOR);
        glove_store_receipts_close(r);
        r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_head(r, head), 8);
        glove_store_receipts_close(r);
}

/* An envelope whose MAC was made in the other kind's domain is refused at
 * open as a broken chain; in its own domain it opens. */
static void test_wrong_domain_refused(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        glove_store_receipts_close(r);
        size_t hl;
        unsigned char *header = th_read(f->journal, &hl);
        assert_int_equal(hl, GLOVE_STORE_JOURNAL_HEADER_LEN);
        static const char refinement[] = "{\"appended_at_ms\":1,\"kind\":\"session.refinement\",\"receipt\":{\"a\":1},"
                                         "\"sequence\":1,\"session_id\":\"s1\"}";
        static const char terminal[] = "{\"appended_at_ms\":1,\"kind\":\"session.terminal\",\"receipt\":{\"a\":1},"
                                       "\"sequence\":1,\"session_id\":\"s1\"}";
        static const char near[] = "{\"appended_at_ms\":1,\"kind\":\"session.refinement2\",\"receipt\":{\"a\":1},"
                                   "\"sequence\":1,\"session_id\":\"s1\"}";
        struct {
                const char *env, *domain;
                bool ok;
        } cases[] = {
                { refinement, REFINEMENT_ENVELOPE_DOMAIN, true },
                { refinement, RESOURCE_ENVELOPE_DOMAIN, false },
                { terminal, RESOURCE_ENVELOPE_DOMAIN, true },
                { terminal, REFINEMENT_ENVELOPE_DOMAIN, false },
                { near, RESOURCE_ENVELOPE_DOMAIN, true },
                { near, REFINEMENT_ENVELOPE_DOMAIN, false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_error e = { 0 };
                write_envelope_in(f, header, cases[i].env, cases[i].domain);
                int rc = open_r(f, NULL, &r, &e);
                if (cases[i].ok) {
                        if (rc != 0)
                                fail_msg("case %zu: refused: %s: %s", i, e.code, e.message);
                        uint8_t head[32];
                        assert_int_equal(glove_store_receipts_head(r, head), 1);
                        glove_store_receipts_close(r);
                        r = NULL;
                        continue;
                }
                if (rc != -EBADMSG || strcmp(e.code, "journal.chain_mismatch") != 0)
                        fail_msg("case %zu: expected journal.chain_mismatch, got %d %s", i, rc, e.code ? e.code : "-");
                glove_error_clear(&e);
        }
        free(header);

        /* In a journal written by the library: a refinement record between
         * two terminal ones, re-tagged in the resource domain (and the
         * records after it re-chained, so only the domain is wrong). */
        th_rmtree(f->dir);
        f->dir = th_tempdir();
        free(f->journal), free(f->seal), free(f->key), free(f->ack);
        f->journal = th_join(f->dir, "receipts.journal");
        f->seal = th_join(f->dir, "receipts.journal.seal");
        f->key = th_join(f->dir, "receipt.key");
        f->ack = th_join(f->dir, "receipts.ack");
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        append_kind(r, NULL, 1);
        append_kind(r, NULL, 2);
        append_kind(r, NULL, 3);
        glove_store_receipts_close(r);
        r = NULL;
        size_t l;
        unsigned char *j = th_read(f->journal, &l);
        size_t off = GLOVE_STORE_JOURNAL_HEADER_LEN;
        uint8_t prev[32];
        memcpy(prev, ANCHOR, 32);
        for (int rec = 1; rec <= 3; rec++) {
                uint32_t n = glove_get_be32(j + off);
                char *env = strndup((const char *)j + off + 4, n);
                uint8_t mac[32];
                mac_in(f, RESOURCE_ENVELOPE_DOMAIN, prev, env, mac); /* every record in the resource domain */
                memcpy(j + off + 4 + n, mac, 32);
                memcpy(prev, mac, 32);
                off += 4 + n + 32;
                free(env);
        }
        assert_int_equal(off, l);
        th_write(f->journal, j, l);
        struct glove_error e = { 0 };
        assert_int_equal(open_r(f, ANCHOR, &r, &e), -EBADMSG);
        assert_string_equal(e.code, "journal.chain_mismatch");
        free(j);
}

/* A refinement receipt torn during its append: every cut is recovered, the
 * earlier receipts (of both kinds) stay, and the chain goes on. */
static void test_torn_refinement_tail(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        append_kind(r, NULL, 1);
        append_kind(r, NULL, 2);
        append_kind(r, NULL, 3);
        uint8_t head3[32];
        glove_store_receipts_head(r, head3);
        glove_store_receipts_close(r);
        size_t sl, l3;
        unsigned char *seal3 = th_read(f->seal, &sl);
        unsigned char *j3 = th_read(f->journal, &l3);
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        append_kind(r, NULL, 4); /* session.refinement */
        glove_store_receipts_close(r);
        size_t l4;
        unsigned char *j4 = th_read(f->journal, &l4);
        for (size_t cut = l3 + 1; cut < l4; cut++) {
                th_write(f->journal, j4, cut);
                th_write(f->seal, seal3, sl);
                struct glove_error e = { 0 };
                if (open_r(f, NULL, &r, &e) != 0)
                        fail_msg("cut %zu: %s: %s", cut, e.code, e.message);
                uint64_t torn, at;
                glove_store_receipts_recovery(r, &torn, &at);
                assert_int_equal(torn, cut - l3);
                assert_int_equal(at, l3);
                uint8_t head[32];
                assert_int_equal(glove_store_receipts_head(r, head), 3);
                assert_memory_equal(head, head3, 32);
                glove_store_receipts_close(r);
                r = NULL;
        }
        assert_int_equal(open_r(f, NULL, &r, NULL), 0);
        append_kind(r, NULL, 4);
        append_kind(r, NULL, 5);
        _cleanup_json_ json_t *pg = page(r, 0, 10);
        verify_chain(f, pg, ANCHOR);
        glove_store_receipts_close(r);
        /* The refinement receipt appended again is byte for byte the torn
         * one (same envelope, same chain). */
        size_t l;
        unsigned char *j = th_read(f->journal, &l);
        assert_true(l > l4);
        assert_memory_equal(j, j4, l4);
        free(j);
        free(seal3);
        free(j3);
        free(j4);
}

/* Compaction with both kinds: the kept receipts keep their MACs (each in its
 * own domain), the head is unchanged, a reopen verifies the tail. */
static void test_compact_mixed_kinds(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        for (int i = 1; i <= 5; i++)
                append_kind(r, NULL, i);
        uint8_t mac5[32], head[32], head2[32];
        assert_int_equal(glove_store_receipts_head(r, mac5), 5);
        ack_head(r);
        append_kind(r, NULL, 6); /* refinement */
        append_kind(r, NULL, 7); /* terminal */
        append_kind(r, GLOVE_STORE_RECEIPTS_KIND_REFINEMENT, 8);
        glove_store_receipts_head(r, head);
        _cleanup_json_ json_t *before = page(r, 5, 10);
        assert_int_equal(glove_store_receipts_compact(r, NULL), 0);
        assert_int_equal(glove_store_receipts_base(r), 5);
        _cleanup_json_ json_t *after = page(r, 5, 10);
        assert_true(json_equal(json_object_get(before, "envelopes"), json_object_get(after, "envelopes")));
        glove_store_receipts_head(r, head2);
        assert_memory_equal(head, head2, 32);
        verify_chain(f, after, mac5);
        glove_store_receipts_close(r);
        r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_head(r, head2), 8);
        assert_memory_equal(head, head2, 32);
        _cleanup_json_ json_t *reopened = page(r, 5, 10);
        assert_true(json_equal(json_object_get(before, "envelopes"), json_object_get(reopened, "envelopes")));
        verify_chain(f, reopened, mac5);
        append_kind(r, NULL, 9);
        glove_store_receipts_close(r);
}

/* receipt_mac: the HMAC over the refinement receipt domain and the canonical
 * receipt without receipt_mac; independent of member order and of a
 * receipt_mac already present; changes with any member and with the key. */
static void test_receipt_mac(void **state) {
        struct fixture *f = *state;
        struct glove_store_receipts *r = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        _cleanup_json_ json_t *a = json_pack("{s:s,s:{s:b,s:[]},s:s,s:i}", "variant", "base", "evaluator", "complete",
                                             1, "defects", "session_id", "s-1", "n", 7);
        _cleanup_json_ json_t *b = json_pack("{s:i,s:s,s:s,s:{s:[],s:b}}", "n", 7, "session_id", "s-1", "variant",
                                             "base", "evaluator", "defects", "complete", 1);
        char ma[65], mb[65], mc[65];
        assert_int_equal(glove_store_receipts_receipt_mac(r, a, ma, NULL), 0);
        assert_int_equal(glove_store_receipts_receipt_mac(r, b, mb, NULL), 0);
        assert_int_equal(strlen(ma), 64);
        assert_int_equal(strspn(ma, "0123456789abcdef"), 64);
        assert_string_equal(ma, mb);
        /* Independently: HMAC(key, "glove.receipt.refinement.v1\0" || canonical). */
        static const char canon[] =
                "{\"evaluator\":{\"complete\":true,\"defects\":[]},\"n\":7,\"session_id\":\"s-1\",\"variant\":\"base\"}";
        static const char domain[] = "glove.receipt.refinement.v1";
        size_t kl;
        unsigned char *key = th_read(f->key, &kl);
        unsigned char msg[256];
        memcpy(msg, domain, sizeof(domain));
        memcpy(msg + sizeof(domain), canon, strlen(canon));
        uint8_t want[32];
        char want_hex[65];
        assert_int_equal(glove_digest_hmac_sha256(key, 32, msg, sizeof(domain) + strlen(canon), want, NULL), 0);
        glove_digest_hex_encode(want, 32, want_hex, sizeof(want_hex));
        assert_string_equal(ma, want_hex);
        /* Not the envelope domain's MAC of the same bytes. */
        static const char edomain[] = RESOURCE_ENVELOPE_DOMAIN;
        memcpy(msg, edomain, sizeof(edomain));
        memcpy(msg + sizeof(edomain), canon, strlen(canon));
        assert_int_equal(glove_digest_hmac_sha256(key, 32, msg, sizeof(edomain) + strlen(canon), want, NULL), 0);
        glove_digest_hex_encode(want, 32, want_hex, sizeof(want_hex));
        assert_string_not_equal(ma, want_hex);
        /* A receipt_mac member, whatever it says, is left out. */
        json_object_set_new(b, "receipt_mac", json_string(ma));
        assert_int_equal(glove_store_receipts_receipt_mac(r, b, mb, NULL), 0);
        assert_string_equal(ma, mb);
        json_object_set_new(b, "receipt_mac", json_string("forged"));
        assert_int_equal(glove_store_receipts_receipt_mac(r, b, mb, NULL), 0);
        assert_string_equal(ma, mb);
        assert_string_equal(json_string_value(json_object_get(b, "receipt_mac")), "forged"); /* not changed */
        /* Any change of the receipt changes it. */
        json_object_set_new(b, "variant", json_string("candidate"));
        assert_int_equal(glove_store_receipts_receipt_mac(r, b, mc, NULL), 0);
        assert_string_not_equal(ma, mc);
        json_object_set_new(b, "variant", json_string("base"));
        json_object_set_new(json_object_get(b, "evaluator"), "complete", json_false());
        assert_int_equal(glove_store_receipts_receipt_mac(r, b, mc, NULL), 0);
        assert_string_not_equal(ma, mc);
        json_object_set_new(json_object_get(b, "evaluator"), "complete", json_true());
        json_object_set_new(b, "extra", json_null());
        assert_int_equal(glove_store_receipts_receipt_mac(r, b, mc, NULL), 0);
        assert_string_not_equal(ma, mc);
        json_object_del(b, "extra");
        assert_int_equal(glove_store_receipts_receipt_mac(r, b, mc, NULL), 0);
        assert_string_equal(ma, mc);
        /* Refusals. */
        _cleanup_json_ json_t *arr = json_array();
        assert_int_equal(glove_store_receipts_receipt_mac(r, arr, mc, &e), -EINVAL);
        assert_string_equal(e.code, "receipts.invalid_argument");
        assert_string_equal(mc, "");
        glove_error_clear(&e);
        _cleanup_json_ json_t *real = json_pack("{s:f}", "x", 1.5);
        assert_true(glove_store_receipts_receipt_mac(r, real, mc, &e) < 0);
        assert_string_equal(e.code, "json.real_not_allowed");
        glove_error_clear(&e);
        glove_store_receipts_close(r);
        /* Another key, another MAC. */
        key[0] ^= 1;
        th_write(f->key, key, kl);
        assert_int_equal(unlink(f->journal), 0);
        assert_int_equal(unlink(f->seal), 0);
        r = NULL;
        assert_int_equal(open_r(f, ANCHOR, &r, NULL), 0);
        assert_int_equal(glove_store_receipts_receipt_mac(r, a, mc, NULL), 0);
        assert_string_not_equal(ma, mc);
        glove_store_receipts_close(r);
        free(key);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_key_and_chain, setup, teardown),
                cmocka_unit_test_setup_teardown(test_paging, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ack_exact_head, setup, teardown),
                cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_envelopes_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_append_rejections, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_drops_acknowledged, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_crash_at_every_step, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_on_ack, setup, teardown),
                cmocka_unit_test(test_envelope_domain),
                cmocka_unit_test_setup_teardown(test_mixed_kinds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wrong_domain_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_torn_refinement_tail, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_mixed_kinds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_receipt_mac, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

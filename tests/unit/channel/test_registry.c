/* SPDX-License-Identifier: Apache-2.0 */
/* The durable admission registry (glove/channel/registry.h): admission and
 * its digest, idempotent retries and conflicts, the fail-closed refusals
 * (unregistered schema, skew, expiry, bounds, strict intent) that write
 * nothing, capacity, replay on reopen, quarantine of a retired schema,
 * refusal of a corrupt, truncated, grown or foreign journal (records
 * written directly with the generic journal layer), paging, and concurrent
 * enqueues. Real files in a private temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/bytes.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/channel/registry.h"
#include "glove/store/journal.h"

#define NOW 1700000000000LL
#define SESSION "sess-1"
#define RUNTIME "pi"
#define NAME "s1.channel"

struct env {
        char dir[128];
        char path[192];
        int dir_fd;
        struct glove_channel_host *host;    /* obs.v1 and retire.v1 */
        struct glove_channel_host *reduced; /* obs.v1 only */
        struct glove_channel_registry *r;
};

/* obs.v1 bodies: {"n": 0..10} and optionally "pad" (a string). */
static int obs_validate(const json_t *body, struct glove_error *err) {
        const json_t *n = json_object_get(body, "n");
        if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 10)
                return glove_error_set(err, EINVAL, "test.obs_n", "n is not 0..10");
        return 0;
}

static int accept_all(const json_t *body, struct glove_error *err) {
        (void)body;
        (void)err;
        return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p);
}

static struct glove_channel_host *make_host(bool with_retire) {
        struct glove_channel_host *h = NULL;
        struct glove_channel_descriptor obs = {
                .schema_id = "obs.v1", .validate = obs_validate, .body_max_bytes = 64, .ttl_max_ms = 60000 };
        struct glove_channel_descriptor ret = {
                .schema_id = "retire.v1", .validate = accept_all, .body_max_bytes = 256, .ttl_max_ms = 60000 };
        if (glove_channel_host_new(&h, NULL) < 0 || glove_channel_host_register(h, &obs, NULL) < 0 ||
            (with_retire && glove_channel_host_register(h, &ret, NULL) < 0) || glove_channel_host_freeze(h, NULL) < 0)
                abort();
        return h;
}

static int open_with(struct env *e, const struct glove_channel_host *h, uint32_t cap, struct glove_error *err) {
        return glove_channel_registry_open(e->dir_fd, NAME, SESSION, RUNTIME, h, cap, &e->r, err);
}

static int setup(void **state) {
        const char *base = getenv("TMPDIR");
        struct env *e = calloc(1, sizeof(*e));
        snprintf(e->dir, sizeof(e->dir), "%s/glove-channel-reg.XXXXXX", base && base[0] == '/' ? base : "/tmp");
        if (!mkdtemp(e->dir))
                abort();
        snprintf(e->path, sizeof(e->path), "%s/%s", e->dir, NAME);
        e->dir_fd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        e->host = make_host(true);
        e->reduced = make_host(false);
        struct glove_error err = { 0 };
        if (open_with(e, e->host, 16, &err) < 0) {
                fprintf(stderr, "open: %s: %s\n", err.code, err.message);
                return -1;
        }
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        glove_channel_registry_free(e->r);
        glove_channel_host_free(e->host);
        glove_channel_host_free(e->reduced);
        close(e->dir_fd);
        nftw(e->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(e);
        return 0;
}

/* A canonical intent; body is JSON text. Caller frees. */
static char *intent(const char *schema, const char *key, int64_t issued, int64_t ttl, const char *body) {
        json_t *b = json_loads(body, JSON_REJECT_DUPLICATES, NULL);
        assert_non_null(b);
        json_t *o = json_pack("{s:o,s:s,s:I,s:s,s:I}", "body", b, "idempotency_key", key, "issued_at_ms",
                              (json_int_t)issued, "schema_id", schema, "ttl_ms", (json_int_t)ttl);
        assert_non_null(o);
        char *s = NULL;
        assert_int_equal(glove_json_encode_canonical(o, &s, NULL, NULL), 0);
        json_decref(o);
        return s;
}

static int enq(struct env *e, const char *text, int64_t now, struct glove_channel_admission *a,
               struct glove_error *err) {
        memset(err, 0, sizeof(*err));
        return glove_channel_registry_enqueue(e->r, text, strlen(text), now, a, err);
}

static off_t file_size(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 ? st.st_size : -1;
}

/* The documented digest, computed here independently. */
static void expected_digest(const char *schema, const char *body, char hex[65]) {
        uint8_t buf[1024];
        size_t n = 0;
        const char *parts[] = { "glove.channel.intent.v1", schema, body };
        for (size_t i = 0; i < 3; i++) {
                glove_put_be32(buf + n, (uint32_t)strlen(parts[i]));
                memcpy(buf + n + 4, parts[i], strlen(parts[i]));
                n += 4 + strlen(parts[i]);
        }
        uint8_t md[32];
        assert_int_equal(glove_digest_sha256(buf, n, md, NULL), 0);
        assert_int_equal(glove_digest_hex_encode(md, 32, hex, 65), 0);
}

static void test_admit(void **state) {
        struct env *e = *state;
        struct glove_error err;
        struct glove_channel_admission a;
        _cleanup_free_ char *t = intent("obs.v1", "k1", NOW, 5000, "{\"n\":3}");
        assert_int_equal(enq(e, t, NOW + 10, &a, &err), 0);
        assert_int_equal(a.seq, 1);
        assert_false(a.duplicate);
        char want[65];
        expected_digest("obs.v1", "{\"n\":3}", want);
        assert_string_equal(a.digest, want);
        assert_int_equal(glove_channel_registry_count(e->r), 1);
        _cleanup_json_ json_t *page = NULL;
        assert_int_equal(glove_channel_registry_page(e->r, 0, 10, &page, &err), 0);
        _cleanup_free_ char *s = NULL;
        assert_int_equal(glove_json_encode_canonical(page, &s, NULL, NULL), 0);
        char expect[512];
        snprintf(expect, sizeof(expect),
                 "{\"entries\":[{\"body\":{\"n\":3},\"digest\":\"%s\",\"idempotency_key\":\"k1\",\"issued_at_ms\":%lld,"
                 "\"runtime_id\":\"pi\",\"schema_id\":\"obs.v1\",\"seq\":1,\"state\":\"admitted\",\"ttl_ms\":5000}],"
                 "\"next_after\":null}",
                 want, NOW);
        assert_string_equal(s, expect);
        assert_true(file_size(e->path) > GLOVE_STORE_JOURNAL_HEADER_LEN);
}

static void test_duplicate_and_conflict(void **state) {
        struct env *e = *state;
        struct glove_error err;
        struct glove_channel_admission a, b;
        _cleanup_free_ char *t = intent("obs.v1", "k1", NOW, 5000, "{\"n\":3}");
        assert_int_equal(enq(e, t, NOW, &a, &err), 0);
        off_t size = file_size(e->path);
        assert_int_equal(enq(e, t, NOW + 100, &b, &err), 0);
        assert_true(b.duplicate);
        assert_int_equal(b.seq, a.seq);
        assert_string_equal(b.digest, a.digest);
        assert_int_equal(file_size(e->path), size);
        /* same key, other times: the digest binds schema and body only */
        _cleanup_free_ char *t2 = intent("obs.v1", "k1", NOW + 50, 6000, "{\"n\":3}");
        assert_int_equal(enq(e, t2, NOW + 100, &b, &err), 0);
        assert_true(b.duplicate);
        _cleanup_free_ char *c = intent("obs.v1", "k1", NOW, 5000, "{\"n\":4}");
        assert_int_equal(enq(e, c, NOW, &b, &err), -EEXIST);
        assert_string_equal(err.code, "channel.idempotency_conflict");
        assert_int_equal(file_size(e->path), size);
        assert_int_equal(glove_channel_registry_count(e->r), 1);
}

static void expect_refused(struct env *e, const char *text, int64_t now, const char *code) {
        struct glove_error err;
        off_t size = file_size(e->path);
        size_t count = glove_channel_registry_count(e->r);
        assert_true(enq(e, text, now, NULL, &err) < 0);
        if (!err.code || strcmp(err.code, code) != 0)
                fail_msg("%s: got %s (%s), want %s", text, err.code, err.message, code);
        assert_int_equal(file_size(e->path), size);
        assert_int_equal(glove_channel_registry_count(e->r), count);
}

static void test_unregistered(void **state) {
        struct env *e = *state;
        _cleanup_free_ char *t = intent("proposal.v1", "k9", NOW, 5000, "{\"n\":3}");
        expect_refused(e, t, NOW, "channel.schema_unregistered");
        /* exact bytes: no case folding */
        _cleanup_free_ char *u = intent("OBS.v1", "k9", NOW, 5000, "{\"n\":3}");
        expect_refused(e, u, NOW, "channel.schema_unregistered");
}

static void test_time(void **state) {
        struct env *e = *state;
        struct glove_error err;
        _cleanup_free_ char *ahead = intent("obs.v1", "a", NOW + GLOVE_CHANNEL_SKEW_MAX_MS + 1, 60000, "{\"n\":1}");
        expect_refused(e, ahead, NOW, "channel.clock_skew");
        _cleanup_free_ char *behind = intent("obs.v1", "b", NOW - GLOVE_CHANNEL_SKEW_MAX_MS - 1, 60000, "{\"n\":1}");
        expect_refused(e, behind, NOW, "channel.clock_skew");
        _cleanup_free_ char *edge = intent("obs.v1", "c", NOW + GLOVE_CHANNEL_SKEW_MAX_MS, 60000, "{\"n\":1}");
        assert_int_equal(enq(e, edge, NOW, NULL, &err), 0);
        _cleanup_free_ char *exp = intent("obs.v1", "d", NOW - 1000, 1000, "{\"n\":1}");
        expect_refused(e, exp, NOW, "channel.expired");
        _cleanup_free_ char *live = intent("obs.v1", "e", NOW - 1000, 1001, "{\"n\":1}");
        assert_int_equal(enq(e, live, NOW, NULL, &err), 0);
        _cleanup_free_ char *ttl = intent("obs.v1", "f", NOW, 60001, "{\"n\":1}");
        expect_refused(e, ttl, NOW, "channel.ttl_out_of_range");
        _cleanup_free_ char *ttl0 = intent("obs.v1", "g", NOW, 0, "{\"n\":1}");
        expect_refused(e, ttl0, NOW, "channel.ttl_out_of_range");
        _cleanup_free_ char *neg = intent("obs.v1", "h", -5, 100, "{\"n\":1}");
        expect_refused(e, neg, NOW, "channel.time_out_of_range");
}

static void test_strict_intent(void **state) {
        struct env *e = *state;
        expect_refused(e, "{\"body\":{\"n\":1},\"extra\":1,\"idempotency_key\":\"k\",\"issued_at_ms\":1700000000000,"
                          "\"schema_id\":\"obs.v1\",\"ttl_ms\":100}",
                       NOW, "channel.intent_unknown_member");
        expect_refused(e, "{\"body\":{\"n\":1},\"idempotency_key\":\"k\",\"issued_at_ms\":1700000000000,"
                          "\"schema_id\":\"obs.v1\"}",
                       NOW, "channel.intent_invalid");
        expect_refused(e, "{\"schema_id\":\"obs.v1\",\"body\":{\"n\":1},\"idempotency_key\":\"k\",\"issued_at_ms\":"
                          "1700000000000,\"ttl_ms\":100}",
                       NOW, "channel.intent_not_canonical");
        expect_refused(e, "{\"body\":{\"n\":1},\"body\":{\"n\":1},\"idempotency_key\":\"k\",\"issued_at_ms\":"
                          "1700000000000,\"schema_id\":\"obs.v1\",\"ttl_ms\":100}",
                       NOW, "channel.intent_invalid");
        expect_refused(e, "{\"body\":[],\"idempotency_key\":\"k\",\"issued_at_ms\":1700000000000,"
                          "\"schema_id\":\"obs.v1\",\"ttl_ms\":100}",
                       NOW, "channel.intent_invalid");
        expect_refused(e, "{\"body\":{\"n\":1.5},\"idempotency_key\":\"k\",\"issued_at_ms\":1700000000000,"
                          "\"schema_id\":\"obs.v1\",\"ttl_ms\":100}",
                       NOW, "channel.intent_invalid");
        expect_refused(e, "[1]", NOW, "channel.intent_invalid");
        _cleanup_free_ char *badkey = intent("obs.v1", "-k", NOW, 100, "{\"n\":1}");
        expect_refused(e, badkey, NOW, "channel.idempotency_key_invalid");
        _cleanup_free_ char *spacekey = intent("obs.v1", "a b", NOW, 100, "{\"n\":1}");
        expect_refused(e, spacekey, NOW, "channel.idempotency_key_invalid");
        _cleanup_free_ char *badschema = intent("obs/v1", "k", NOW, 100, "{\"n\":1}");
        expect_refused(e, badschema, NOW, "channel.schema_id_invalid");
        _cleanup_free_ char *big = intent("obs.v1", "k", NOW, 100,
                                          "{\"n\":1,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}");
        expect_refused(e, big, NOW, "channel.body_too_large");
        _cleanup_free_ char *bad = intent("obs.v1", "k", NOW, 100, "{\"n\":11}");
        expect_refused(e, bad, NOW, "test.obs_n");
        char huge[GLOVE_CHANNEL_INTENT_MAX + 2];
        memset(huge, ' ', sizeof(huge) - 1);
        huge[sizeof(huge) - 1] = '\0';
        expect_refused(e, huge, NOW, "channel.intent_too_large");
}

static void test_capacity(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        glove_channel_registry_free(e->r);
        e->r = NULL;
        assert_int_equal(open_with(e, e->host, 2, &err), 0);
        _cleanup_free_ char *a = intent("obs.v1", "a", NOW, 100, "{\"n\":1}");
        _cleanup_free_ char *b = intent("obs.v1", "b", NOW, 100, "{\"n\":1}");
        _cleanup_free_ char *c = intent("obs.v1", "c", NOW, 100, "{\"n\":1}");
        assert_int_equal(enq(e, a, NOW, NULL, &err), 0);
        assert_int_equal(enq(e, b, NOW, NULL, &err), 0);
        expect_refused(e, c, NOW, "channel.registry_full");
        /* an idempotent retry still answers at capacity */
        struct glove_channel_admission ad;
        assert_int_equal(enq(e, a, NOW, &ad, &err), 0);
        assert_true(ad.duplicate);
        assert_int_equal(ad.seq, 1);
}

static void test_reopen(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        struct glove_channel_admission ad;
        _cleanup_free_ char *a = intent("obs.v1", "a", NOW, 100, "{\"n\":1}");
        _cleanup_free_ char *b = intent("retire.v1", "b", NOW, 100, "{\"x\":\"y\"}");
        _cleanup_free_ char *c = intent("obs.v1", "c", NOW, 100, "{\"n\":2}");
        assert_int_equal(enq(e, a, NOW, NULL, &err), 0);
        assert_int_equal(enq(e, b, NOW, NULL, &err), 0);
        glove_channel_registry_free(e->r);
        e->r = NULL;
        assert_int_equal(open_with(e, e->host, 16, &err), 0);
        assert_int_equal(glove_channel_registry_count(e->r), 2);
        assert_int_equal(glove_channel_registry_quarantined(e->r), 0);
        assert_int_equal(enq(e, c, NOW + 1, &ad, &err), 0);
        assert_int_equal(ad.seq, 3);
        assert_false(ad.duplicate);
        assert_int_equal(enq(e, a, NOW + 1, &ad, &err), 0);
        assert_true(ad.duplicate);
        assert_int_equal(ad.seq, 1);
        /* a second open of the same journal is locked out */
        struct glove_channel_registry *other = NULL;
        memset(&err, 0, sizeof(err));
        assert_true(glove_channel_registry_open(e->dir_fd, NAME, SESSION, RUNTIME, e->host, 16, &other, &err) < 0);
        assert_string_equal(err.code, "journal.locked");
}

static void test_quarantine(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        _cleanup_free_ char *a = intent("obs.v1", "a", NOW, 100, "{\"n\":1}");
        _cleanup_free_ char *b = intent("retire.v1", "b", NOW, 100, "{\"x\":\"y\"}");
        assert_int_equal(enq(e, a, NOW, NULL, &err), 0);
        assert_int_equal(enq(e, b, NOW, NULL, &err), 0);
        glove_channel_registry_free(e->r);
        e->r = NULL;
        assert_int_equal(open_with(e, e->reduced, 16, &err), 0);
        assert_int_equal(glove_channel_registry_count(e->r), 2);
        assert_int_equal(glove_channel_registry_quarantined(e->r), 1);
        _cleanup_json_ json_t *page = NULL;
        assert_int_equal(glove_channel_registry_page(e->r, 1, 10, &page, &err), 0);
        json_t *entries = json_object_get(page, "entries");
        assert_int_equal(json_array_size(entries), 1);
        json_t *q = json_array_get(entries, 0);
        assert_string_equal(json_string_value(json_object_get(q, "state")), "quarantined");
        assert_string_equal(json_string_value(json_object_get(q, "reason")), "schema_retired");
        assert_string_equal(json_string_value(json_object_get(q, "schema_id")), "retire.v1");
        assert_string_equal(json_string_value(json_object_get(q, "idempotency_key")), "b");
        assert_int_equal(json_integer_value(json_object_get(q, "seq")), 2);
        assert_null(json_object_get(q, "body"));
        char want[65];
        expected_digest("retire.v1", "{\"x\":\"y\"}", want);
        assert_string_equal(json_string_value(json_object_get(q, "digest")), want);
        expect_refused(e, b, NOW, "channel.quarantined");
        _cleanup_free_ char *fresh = intent("retire.v1", "new", NOW, 100, "{\"x\":\"y\"}");
        expect_refused(e, fresh, NOW, "channel.schema_unregistered");
        /* the key of a quarantined entry is refused whatever the schema */
        _cleanup_free_ char *reuse = intent("obs.v1", "b", NOW, 100, "{\"n\":1}");
        expect_refused(e, reuse, NOW, "channel.quarantined");
        /* the admitted entry is untouched */
        struct glove_channel_admission ad;
        assert_int_equal(enq(e, a, NOW, &ad, &err), 0);
        assert_true(ad.duplicate);
        /* back under the full table it is admitted again */
        glove_channel_registry_free(e->r);
        e->r = NULL;
        assert_int_equal(open_with(e, e->host, 16, &err), 0);
        assert_int_equal(glove_channel_registry_quarantined(e->r), 0);
}

static void reopen_expect(struct env *e, const char *code) {
        struct glove_error err = { 0 };
        assert_true(open_with(e, e->host, 16, &err) < 0);
        assert_null(e->r);
        if (!err.code || strcmp(err.code, code) != 0)
                fail_msg("open: got %s (%s), want %s", err.code, err.message, code);
}

/* Writes two records and closes; returns the journal's size. */
static off_t two_records(struct env *e) {
        struct glove_error err = { 0 };
        _cleanup_free_ char *a = intent("obs.v1", "a", NOW, 100, "{\"n\":1}");
        _cleanup_free_ char *b = intent("obs.v1", "b", NOW, 100, "{\"n\":2}");
        assert_int_equal(enq(e, a, NOW, NULL, &err), 0);
        assert_int_equal(enq(e, b, NOW, NULL, &err), 0);
        glove_channel_registry_free(e->r);
        e->r = NULL;
        return file_size(e->path);
}

static void patch(const char *path, off_t at, const void *bytes, size_t n) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, bytes, n, at), (ssize_t)n);
        close(fd);
}

static void test_corrupt_flip(void **state) {
        struct env *e = *state;
        off_t size = two_records(e);
        int fd = open(e->path, O_RDONLY | O_CLOEXEC);
        char c;
        off_t at = size - 40; /* inside the last record's payload */
        assert_int_equal(pread(fd, &c, 1, at), 1);
        close(fd);
        c ^= 0x01;
        patch(e->path, at, &c, 1);
        reopen_expect(e, "journal.chain_mismatch");
}

static void test_corrupt_truncate(void **state) {
        struct env *e = *state;
        off_t size = two_records(e);
        assert_int_equal(truncate(e->path, size - 10), 0);
        reopen_expect(e, "journal.truncated");
}

static void test_corrupt_garbage(void **state) {
        struct env *e = *state;
        off_t size = two_records(e);
        patch(e->path, size, "garbage!", 8);
        reopen_expect(e, "journal.bad_length");
}

static void test_foreign_session(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        two_records(e);
        assert_true(glove_channel_registry_open(e->dir_fd, NAME, "sess-2", RUNTIME, e->host, 16, &e->r, &err) < 0);
        assert_string_equal(err.code, "channel.journal_foreign");
        memset(&err, 0, sizeof(err));
        assert_true(glove_channel_registry_open(e->dir_fd, NAME, SESSION, "codex", e->host, 16, &e->r, &err) < 0);
        assert_string_equal(err.code, "channel.journal_foreign");
}

/* ---- records written directly with the generic journal layer ---- */

static int t_chain(void *ctx, const uint8_t prev[32], uint64_t seq, const void *p, size_t len, uint8_t out[32],
                   struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_chain_sha256("glove.channel.journal.v1", prev, seq, p, len, out, err);
}

static int t_genesis(void *ctx, const uint8_t header[64], uint8_t out[32], struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_genesis_sha256("glove.channel.genesis.v1", header, out, err);
}

static const struct glove_store_journal_format t_format = {
        .magic = { 'G', 'L', 'V', 'C', 'H', 'A', 'N', '1' },
        .version = 1,
        .max_payload = GLOVE_CHANNEL_RECORD_MAX,
        .max_records = GLOVE_CHANNEL_CAPACITY_MAX,
        .max_bytes = 64 + (uint64_t)GLOVE_CHANNEL_CAPACITY_MAX * (GLOVE_CHANNEL_RECORD_MAX + 36),
        .chain = t_chain,
        .genesis = t_genesis,
};

static void write_direct(struct env *e, const char *record) {
        glove_channel_registry_free(e->r);
        e->r = NULL;
        unlink(e->path);
        char seal[256];
        snprintf(seal, sizeof(seal), "%s.seal", e->path);
        unlink(seal);
        uint8_t buf[256], param[32];
        size_t n = 0;
        const char *parts[] = { "glove.channel.registry.v1", SESSION, RUNTIME };
        for (size_t i = 0; i < 3; i++) {
                glove_put_be32(buf + n, (uint32_t)strlen(parts[i]));
                memcpy(buf + n + 4, parts[i], strlen(parts[i]));
                n += 4 + strlen(parts[i]);
        }
        assert_int_equal(glove_digest_sha256(buf, n, param, NULL), 0);
        struct glove_store_journal_open_options o = { .path = e->path, .owner = geteuid(), .create_param = param };
        struct glove_store_journal *j = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_store_journal_open(&t_format, &o, NULL, NULL, &j, NULL, &err), 0);
        assert_int_equal(glove_store_journal_append(j, record, strlen(record), NULL, NULL, &err), 0);
        glove_store_journal_close(j);
}

static char *record(const char *session, const char *digest, int64_t seq) {
        char want[65];
        expected_digest("obs.v1", "{\"n\":1}", want);
        char *s = NULL;
        assert_true(asprintf(&s,
                             "{\"body\":{\"n\":1},\"digest\":\"%s\",\"idempotency_key\":\"a\",\"issued_at_ms\":1,"
                             "\"runtime_id\":\"pi\",\"schema_id\":\"obs.v1\",\"seq\":%lld,\"session_id\":\"%s\","
                             "\"ttl_ms\":100}",
                             digest ? digest : want, (long long)seq, session) > 0);
        return s;
}

static void test_direct_records(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        _cleanup_free_ char *good = record(SESSION, NULL, 1);
        write_direct(e, good);
        assert_int_equal(open_with(e, e->host, 16, &err), 0);
        assert_int_equal(glove_channel_registry_count(e->r), 1);
        _cleanup_free_ char *foreign = record("sess-other", NULL, 1);
        write_direct(e, foreign);
        reopen_expect(e, "channel.journal_foreign");
        _cleanup_free_ char *bad_digest =
                record(SESSION, "0000000000000000000000000000000000000000000000000000000000000000", 1);
        write_direct(e, bad_digest);
        reopen_expect(e, "channel.journal_invalid");
        _cleanup_free_ char *bad_seq = record(SESSION, NULL, 2);
        write_direct(e, bad_seq);
        reopen_expect(e, "channel.journal_invalid");
        write_direct(e, "{\"body\":{}}");
        reopen_expect(e, "channel.journal_invalid");
}

static void test_page(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        for (int i = 0; i < 5; i++) {
                char key[8];
                snprintf(key, sizeof(key), "k%d", i);
                _cleanup_free_ char *t = intent("obs.v1", key, NOW, 100, "{\"n\":1}");
                assert_int_equal(enq(e, t, NOW, NULL, &err), 0);
        }
        _cleanup_json_ json_t *p1 = NULL, *p2 = NULL, *p3 = NULL;
        assert_int_equal(glove_channel_registry_page(e->r, 0, 2, &p1, &err), 0);
        assert_int_equal(json_array_size(json_object_get(p1, "entries")), 2);
        assert_int_equal(json_integer_value(json_object_get(p1, "next_after")), 2);
        assert_int_equal(glove_channel_registry_page(e->r, 2, 3, &p2, &err), 0);
        assert_int_equal(json_array_size(json_object_get(p2, "entries")), 3);
        assert_true(json_is_null(json_object_get(p2, "next_after")));
        assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(p2, "entries"), 0), "seq")),
                         3);
        assert_int_equal(glove_channel_registry_page(e->r, 99, 3, &p3, &err), 0);
        assert_int_equal(json_array_size(json_object_get(p3, "entries")), 0);
        json_t *bad = NULL;
        assert_int_equal(glove_channel_registry_page(e->r, 0, 0, &bad, &err), -EINVAL);
        assert_string_equal(err.code, "channel.invalid_argument");
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_registry_page(e->r, 0, GLOVE_CHANNEL_PAGE_MAX + 1, &bad, &err), -EINVAL);
}

static void test_close(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        _cleanup_free_ char *a = intent("obs.v1", "a", NOW, 100, "{\"n\":1}");
        assert_int_equal(enq(e, a, NOW, NULL, &err), 0);
        glove_channel_registry_close(e->r);
        glove_channel_registry_close(e->r);
        assert_int_equal(enq(e, a, NOW, NULL, &err), -EBADF);
        assert_string_equal(err.code, "channel.registry_closed");
        _cleanup_json_ json_t *p = NULL;
        assert_int_equal(glove_channel_registry_page(e->r, 0, 10, &p, &err), 0);
        assert_int_equal(json_array_size(json_object_get(p, "entries")), 1);
}

static void test_open_arguments(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        struct glove_channel_registry *r = NULL;
        struct glove_channel_host *unfrozen = NULL;
        assert_int_equal(glove_channel_host_new(&unfrozen, NULL), 0);
        assert_int_equal(glove_channel_registry_open(e->dir_fd, "x.channel", SESSION, RUNTIME, unfrozen, 4, &r, &err),
                         -EINVAL);
        assert_string_equal(err.code, "channel.host_not_frozen");
        glove_channel_host_free(unfrozen);
        const char *bad_names[] = { "", "a/b", "..", "." };
        for (size_t i = 0; i < 4; i++) {
                memset(&err, 0, sizeof(err));
                assert_int_equal(glove_channel_registry_open(e->dir_fd, bad_names[i], SESSION, RUNTIME, e->host, 4,
                                                             &r, &err),
                                 -EINVAL);
                assert_string_equal(err.code, "channel.invalid_argument");
        }
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_registry_open(e->dir_fd, "x.channel", SESSION, RUNTIME, e->host, 0, &r, &err),
                         -EINVAL);
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_registry_open(e->dir_fd, "x.channel", SESSION, RUNTIME, e->host,
                                                     GLOVE_CHANNEL_CAPACITY_MAX + 1, &r, &err),
                         -EINVAL);
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_registry_open(e->dir_fd, "x.channel", "bad id", RUNTIME, e->host, 4, &r, &err),
                         -EINVAL);
        assert_null(r);
}

struct worker {
        struct env *e;
        int base;
        int failures;
};

static void *enqueue_many(void *arg) {
        struct worker *w = arg;
        for (int i = 0; i < 25; i++) {
                char key[16];
                snprintf(key, sizeof(key), "t%d-%d", w->base, i);
                char *t = intent("obs.v1", key, NOW, 100, "{\"n\":1}");
                struct glove_error err = { 0 };
                if (glove_channel_registry_enqueue(w->e->r, t, strlen(t), NOW, NULL, &err) < 0)
                        w->failures++;
                json_t *p = NULL;
                if (glove_channel_registry_page(w->e->r, 0, 100, &p, &err) < 0)
                        w->failures++;
                json_decref(p);
                free(t);
        }
        return NULL;
}

static void test_threads(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        glove_channel_registry_free(e->r);
        e->r = NULL;
        assert_int_equal(open_with(e, e->host, 64, &err), 0);
        struct worker w[2] = { { e, 0, 0 }, { e, 1, 0 } };
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&t[i], NULL, enqueue_many, &w[i]), 0);
        for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
        assert_int_equal(w[0].failures + w[1].failures, 0);
        assert_int_equal(glove_channel_registry_count(e->r), 50);
        glove_channel_registry_free(e->r);
        e->r = NULL;
        assert_int_equal(open_with(e, e->host, 64, &err), 0);
        assert_int_equal(glove_channel_registry_count(e->r), 50);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_admit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_duplicate_and_conflict, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unregistered, setup, teardown),
                cmocka_unit_test_setup_teardown(test_time, setup, teardown),
                cmocka_unit_test_setup_teardown(test_strict_intent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capacity, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
                cmocka_unit_test_setup_teardown(test_quarantine, setup, teardown),
                cmocka_unit_test_setup_teardown(test_corrupt_flip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_corrupt_truncate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_corrupt_garbage, setup, teardown),
                cmocka_unit_test_setup_teardown(test_foreign_session, setup, teardown),
                cmocka_unit_test_setup_teardown(test_direct_records, setup, teardown),
                cmocka_unit_test_setup_teardown(test_page, setup, teardown),
                cmocka_unit_test_setup_teardown(test_close, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

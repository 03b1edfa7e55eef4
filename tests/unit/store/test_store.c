/* SPDX-License-Identifier: Apache-2.0 */
/* The durable session store (glove/store/store.h): create, retry and
 * conflict, lifecycle transitions, restart, and strict replay against
 * truncation at every offset, byte flips, reordering, duplication and
 * external growth. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/store/dirs.h"
#include "glove/store/receipts.h"
#include "glove/store/store.h"
#include "helpers.h"

#define CDIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define NOW 1764000000000

struct fixture {
        char *dir, *path, *seal;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        f->dir = th_tempdir();
        f->path = th_join(f->dir, "sessions.journal");
        f->seal = th_join(f->dir, "sessions.journal.seal");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        free(f->path);
        free(f->seal);
        th_rmtree(f->dir);
        free(f);
        return 0;
}

static void sha_hex(const char *s, char hex[65]) {
        uint8_t d[32];
        assert_int_equal(glove_digest_sha256(s, strlen(s), d, NULL), 0);
        glove_digest_hex_encode(d, 32, hex, 65);
}

static int create(struct glove_store *st, const char *id, const char *key, const char *plan, bool *replayed,
                  struct glove_error *e) {
        char hex[65];
        sha_hex(plan, hex);
        struct glove_store_create q = { .session_id = id, .idempotency_key = key,
                                                .controller_plan_digest = CDIGEST, .plan_content_digest = hex,
                                                .plan = plan, .plan_len = strlen(plan), .now_ms = NOW };
        const struct glove_store_session *s = NULL;
        bool r2;
        return glove_store_create(st, &q, &s, replayed ? replayed : &r2, e);
}

static const char *const PLAN1 = "{\"runtime_id\":\"a\",\"schema_version\":1}";
static const char *const PLAN2 = "{\"runtime_id\":\"b\",\"schema_version\":1}";

static int transition(struct glove_store *st, const char *id, enum glove_store_session_state to,
                      struct glove_error *e) {
        bool appended;
        return glove_store_transition(st, id, to, "", NOW + 1, &appended, e);
}

/* Three sessions; the last record is a transition. */
static void build_good(struct fixture *f) {
        struct glove_store *st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(create(st, "s1", "k1", PLAN1, NULL, NULL), 0);
        assert_int_equal(transition(st, "s1", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
        assert_int_equal(create(st, "s2", "k2", PLAN2, NULL, NULL), 0);
        assert_int_equal(transition(st, "s1", GLOVE_STORE_SESSION_STARTING, NULL), 0);
        assert_int_equal(create(st, "s3", "k3", PLAN1, NULL, NULL), 0);
        bool appended;
        assert_int_equal(glove_store_transition(st, "s2", GLOVE_STORE_SESSION_FAILED, "runtime.lost", NOW + 2,
                                                        &appended, NULL),
                         0);
        assert_true(appended);
        glove_store_close(st);
}

static void check_good(struct glove_store *st) {
        assert_int_equal(glove_store_sessions(st), 3);
        assert_int_equal(glove_store_records(st), 6);
        const struct glove_store_session *s1 = glove_store_find(st, "s1");
        const struct glove_store_session *s2 = glove_store_find(st, "s2");
        assert_non_null(s1);
        assert_non_null(s2);
        assert_int_equal(s1->state, GLOVE_STORE_SESSION_STARTING);
        assert_int_equal(s1->n_history, 2);
        assert_int_equal(s1->history[0].from, GLOVE_STORE_SESSION_CREATED);
        assert_int_equal(s1->history[1].to, GLOVE_STORE_SESSION_STARTING);
        assert_int_equal(s1->history[1].seq, 4);
        assert_string_equal(s1->plan, PLAN1);
        assert_string_equal(s1->idempotency_key, "k1");
        assert_string_equal(s1->controller_plan_digest, CDIGEST);
        char hex[65];
        sha_hex(PLAN1, hex);
        assert_string_equal(s1->plan_content_digest, hex);
        assert_int_equal(s1->created_at_ms, NOW);
        assert_int_equal(s2->state, GLOVE_STORE_SESSION_FAILED);
        assert_string_equal(s2->history[0].reason, "runtime.lost");
        assert_ptr_equal(glove_store_find_key(st, "k3"), glove_store_find(st, "s3"));
        assert_null(glove_store_find(st, "s4"));
}

static void test_restart_keeps_sessions(void **state) {
        struct fixture *f = *state;
        build_good(f);
        for (int i = 0; i < 2; i++) {
                struct glove_store *st = NULL;
                assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
                check_good(st);
                glove_store_close(st);
        }
        size_t len;
        unsigned char *b = th_read(f->path, &len);
        struct glove_store *mem = NULL;
        assert_int_equal(glove_store_replay_bytes(b, len, &mem, NULL), 0);
        check_good(mem);
        struct glove_error e = { 0 };
        assert_int_equal(create(mem, "s9", "k9", PLAN1, NULL, &e), -EROFS);
        glove_store_close(mem);
        free(b);
}

static void test_retry_and_conflict(void **state) {
        struct fixture *f = *state;
        struct glove_store *st = NULL;
        struct glove_error e = { 0 };
        bool replayed = true;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(create(st, "s1", "k1", PLAN1, &replayed, NULL), 0);
        assert_false(replayed);
        assert_int_equal(create(st, "s1", "k1", PLAN1, &replayed, NULL), 0);
        assert_true(replayed);
        assert_int_equal(glove_store_records(st), 1);

        const char *conflicts[][3] = { { "s1", "k1", PLAN2 }, { "s2", "k1", PLAN1 }, { "s1", "k2", PLAN1 } };
        for (size_t i = 0; i < 3; i++) {
                glove_error_clear(&e);
                assert_int_equal(create(st, conflicts[i][0], conflicts[i][1], conflicts[i][2], NULL, &e), -EEXIST);
                assert_string_equal(e.code, "session.conflict");
        }
        /* Same key and plan, other controller digest. */
        char hex[65];
        sha_hex(PLAN1, hex);
        struct glove_store_create q = { .session_id = "s1", .idempotency_key = "k1",
                                                .controller_plan_digest = hex, .plan_content_digest = hex,
                                                .plan = PLAN1, .plan_len = strlen(PLAN1), .now_ms = NOW };
        const struct glove_store_session *s;
        glove_error_clear(&e);
        assert_int_equal(glove_store_create(st, &q, &s, &replayed, &e), -EEXIST);
        assert_string_equal(e.code, "session.conflict");

        /* Malformed requests. */
        const char *bad_ids[] = { "", "-x", "a b", "x/y", "\xc3\xa9" };
        for (size_t i = 0; i < 5; i++) {
                glove_error_clear(&e);
                assert_int_equal(create(st, bad_ids[i], "k9", PLAN1, NULL, &e), -EINVAL);
                assert_string_equal(e.code, "store.invalid_id");
        }
        char longid[GLOVE_STORE_ID_MAX + 2];
        memset(longid, 'a', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = '\0';
        glove_error_clear(&e);
        assert_int_equal(create(st, longid, "k9", PLAN1, NULL, &e), -EINVAL);
        longid[GLOVE_STORE_ID_MAX] = '\0';
        assert_int_equal(create(st, longid, "k9", PLAN1, NULL, NULL), 0);
        q = (struct glove_store_create){ .session_id = "s5", .idempotency_key = "k5",
                                                 .controller_plan_digest = CDIGEST, .plan_content_digest = CDIGEST,
                                                 .plan = PLAN1, .plan_len = strlen(PLAN1), .now_ms = NOW };
        glove_error_clear(&e);
        assert_int_equal(glove_store_create(st, &q, &s, &replayed, &e), -EINVAL);
        assert_string_equal(e.code, "store.digest_mismatch");
        q.controller_plan_digest = "ABC";
        glove_error_clear(&e);
        assert_int_equal(glove_store_create(st, &q, &s, &replayed, &e), -EINVAL);
        assert_string_equal(e.code, "store.invalid_digest");
        glove_error_clear(&e);
        assert_int_equal(create(st, "s6", "k6", "{\"b\":1, \"a\":2}", NULL, &e), -EINVAL);
        assert_string_equal(e.code, "store.invalid_plan");
        glove_error_clear(&e);
        assert_int_equal(create(st, "s6", "k6", "[1]", NULL, &e), -EINVAL);
        assert_string_equal(e.code, "store.invalid_plan");
        assert_int_equal(glove_store_records(st), 2);
        glove_store_close(st);
}

static void test_transitions(void **state) {
        struct fixture *f = *state;
        struct glove_store *st = NULL;
        struct glove_error e = { 0 };
        bool appended;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(create(st, "s1", "k1", PLAN1, NULL, NULL), 0);
        static const enum glove_store_session_state chain[] = {
                GLOVE_STORE_SESSION_PREPARING, GLOVE_STORE_SESSION_STARTING, GLOVE_STORE_SESSION_RUNNING,
                GLOVE_STORE_SESSION_STOPPING, GLOVE_STORE_SESSION_EXITED
        };
        for (size_t i = 0; i < 5; i++) {
                assert_int_equal(glove_store_transition(st, "s1", chain[i], "", NOW, &appended, NULL), 0);
                assert_true(appended);
                /* Idempotent: the same request again appends nothing. */
                assert_int_equal(glove_store_transition(st, "s1", chain[i], "", NOW, &appended, NULL), 0);
                assert_false(appended);
        }
        assert_int_equal(glove_store_records(st), 6);
        assert_int_equal(glove_store_transition(st, "s1", GLOVE_STORE_SESSION_FAILED, "", NOW, &appended, &e),
                         -EINVAL);
        assert_string_equal(e.code, "session.terminal");
        glove_error_clear(&e);
        assert_int_equal(create(st, "s2", "k2", PLAN1, NULL, NULL), 0);
        assert_int_equal(glove_store_transition(st, "s2", GLOVE_STORE_SESSION_RUNNING, "", NOW, &appended, &e),
                         -EINVAL);
        assert_string_equal(e.code, "session.invalid_transition");
        glove_error_clear(&e);
        assert_int_equal(glove_store_transition(st, "nope", GLOVE_STORE_SESSION_FAILED, "", NOW, &appended,
                                                        &e),
                         -ENOENT);
        assert_string_equal(e.code, "session.not_found");
        glove_error_clear(&e);
        assert_int_equal(glove_store_transition(st, "s2", GLOVE_STORE_SESSION_FAILED, "Bad Reason", NOW,
                                                        &appended, &e),
                         -EINVAL);
        assert_int_equal(glove_store_transition(st, "s2", GLOVE_STORE_SESSION_FAILED, "adapter.crashed", NOW,
                                                        &appended, NULL),
                         0);
        glove_store_close(st);
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        const struct glove_store_session *s1 = glove_store_find(st, "s1");
        assert_int_equal(s1->state, GLOVE_STORE_SESSION_EXITED);
        assert_int_equal(s1->n_history, 5);
        assert_int_equal(glove_store_find(st, "s2")->state, GLOVE_STORE_SESSION_FAILED);
        glove_store_close(st);
}

/* ---- tamper tests ---- */

struct offsets {
        size_t start[16];
        size_t n;
};

static int collect(void *userdata, uint64_t seq, const void *payload, size_t len, const uint8_t tag[32],
                   struct glove_error *err) {
        (void)seq;
        (void)tag;
        (void)err;
        (void)payload;
        struct offsets *o = userdata;
        o->start[o->n++] = len; /* lengths; record_offsets turns them into offsets */
        return 0;
}

static void record_offsets(const unsigned char *b, size_t len, struct offsets *o) {
        struct glove_store_journal_scan scan;
        memset(o, 0, sizeof(*o));
        assert_int_equal(glove_store_journal_scan(&glove_store_format, b, len, collect, o, &scan, NULL), 0);
        size_t off = GLOVE_STORE_JOURNAL_HEADER_LEN;
        for (size_t i = 0; i < o->n; i++) {
                size_t l = o->start[i];
                o->start[i] = off;
                off += l + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD;
        }
        o->start[o->n] = off;
        assert_int_equal(off, len);
}

/* Opening must fail with code (NULL: any code), and rewrite nothing. */
static void expect_refused(struct fixture *f, const char *code, const char *what, size_t at) {
        size_t jl, sl, jl2, sl2;
        unsigned char *j = th_read(f->path, &jl), *s = th_read(f->seal, &sl);
        struct glove_store *st = NULL;
        struct glove_error e = { 0 };
        int r = glove_store_open(f->path, geteuid(), &st, NULL, &e);
        if (r == 0)
                fail_msg("%s at %zu: the store opened", what, at);
        if (code && strcmp(e.code, code) != 0)
                fail_msg("%s at %zu: expected %s, got %s: %s", what, at, code, e.code, e.message);
        assert_null(st);
        unsigned char *j2 = th_read(f->path, &jl2), *s2 = th_read(f->seal, &sl2);
        assert_int_equal(jl, jl2);
        assert_int_equal(sl, sl2);
        assert_memory_equal(j, j2, jl);
        assert_memory_equal(s, s2, sl);
        free(j);
        free(s);
        free(j2);
        free(s2);
}

static void test_truncate_every_offset_of_last_record(void **state) {
        struct fixture *f = *state;
        build_good(f);
        size_t len;
        unsigned char *good = th_read(f->path, &len);
        struct offsets o;
        record_offsets(good, len, &o);
        size_t last = o.start[o.n - 1];
        for (size_t cut = last; cut < len; cut++) {
                th_write(f->path, good, cut);
                /* The journal holds fewer records than its seal committed: at
                 * the record boundary, and also when the sealed last record is
                 * cut short (that is never taken for a torn tail). */
                expect_refused(f, "journal.resized", "truncation", cut);
        }
        /* Truncation inside earlier records and the header fails too. */
        for (size_t cut = 0; cut < last; cut += 7) {
                th_write(f->path, good, cut);
                expect_refused(f, NULL, "truncation", cut);
        }
        th_write(f->path, good, len);
        struct glove_store *st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        check_good(st);
        glove_store_close(st);
        free(good);
}

static void test_flip_every_byte(void **state) {
        struct fixture *f = *state;
        build_good(f);
        size_t len;
        unsigned char *good = th_read(f->path, &len);
        unsigned char *bad = malloc(len + 64);
        for (size_t i = 0; i < len; i++) {
                memcpy(bad, good, len);
                bad[i] ^= (unsigned char)(1u << (i % 8));
                th_write(f->path, bad, len);
                expect_refused(f, NULL, "flip", i);
        }
        /* The chain is what catches payload edits. */
        struct offsets o;
        record_offsets(good, len, &o);
        memcpy(bad, good, len);
        bad[o.start[1] + 10] ^= 0x20;
        th_write(f->path, bad, len);
        expect_refused(f, "journal.chain_mismatch", "payload flip", o.start[1] + 10);
        memcpy(bad, good, len);
        bad[5] ^= 1;
        th_write(f->path, bad, len);
        expect_refused(f, "journal.bad_header", "magic flip", 5);
        memcpy(bad, good, len);
        bad[40] ^= 1; /* store id: the genesis changes */
        th_write(f->path, bad, len);
        expect_refused(f, "journal.chain_mismatch", "store id flip", 40);
        th_write(f->path, good, len);
        free(good);
        free(bad);
}

static void test_reorder_and_duplicate(void **state) {
        struct fixture *f = *state;
        build_good(f);
        size_t len;
        unsigned char *good = th_read(f->path, &len);
        struct offsets o;
        record_offsets(good, len, &o);
        unsigned char *bad = malloc(2 * len);
        /* Swap records 4 and 5. */
        size_t a = o.start[3], b = o.start[4], c = o.start[5];
        memcpy(bad, good, a);
        memcpy(bad + a, good + b, c - b);
        memcpy(bad + a + (c - b), good + a, b - a);
        memcpy(bad + c, good + c, len - c);
        th_write(f->path, bad, len);
        expect_refused(f, "journal.chain_mismatch", "reorder", a);
        /* Duplicate the last record at the end. */
        size_t last = o.start[o.n - 1];
        memcpy(bad, good, len);
        memcpy(bad + len, good + last, len - last);
        th_write(f->path, bad, len + (len - last));
        expect_refused(f, "journal.chain_mismatch", "duplicate last", len);
        /* Duplicate record 2 in place after itself. */
        size_t r2 = o.start[1], r3 = o.start[2];
        memcpy(bad, good, r3);
        memcpy(bad + r3, good + r2, r3 - r2);
        memcpy(bad + r3 + (r3 - r2), good + r3, len - r3);
        th_write(f->path, bad, len + (r3 - r2));
        expect_refused(f, "journal.chain_mismatch", "duplicate middle", r3);
        /* Drop record 2. */
        memcpy(bad, good, r2);
        memcpy(bad + r2, good + r3, len - r3);
        th_write(f->path, bad, len - (r3 - r2));
        expect_refused(f, "journal.chain_mismatch", "drop middle", r2);
        th_write(f->path, good, len);
        free(good);
        free(bad);
}

static void test_grow_externally(void **state) {
        struct fixture *f = *state;
        build_good(f);
        size_t len;
        unsigned char *good = th_read(f->path, &len);
        unsigned char *bad = calloc(1, len + 200);
        memcpy(bad, good, len);
        /* Four or more zero bytes are a record of length 0. */
        size_t extra[] = { 4, 36, 40, 200 };
        for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
                th_write(f->path, bad, len + extra[i]);
                expect_refused(f, NULL, "zero growth", extra[i]);
        }
        /* A plausible length prefix followed by garbage. */
        bad[len + 3] = 20;
        for (size_t i = 4; i < 60; i++)
                bad[len + i] = (unsigned char)(i * 37);
        th_write(f->path, bad, len + 60);
        expect_refused(f, "journal.chain_mismatch", "garbage record", len);
        free(good);
        free(bad);
}

/* An incomplete record past the seal is what a crash in the middle of an
 * append leaves (nothing was answered for it): it is cut, its bytes are kept
 * in FILE.torn, the sessions before it are intact and the store appends
 * again. Shorter than a length prefix, or a prefix and part of a payload. */
static void test_torn_tail_past_seal_is_recovered(void **state) {
        struct fixture *f = *state;
        build_good(f);
        size_t len;
        unsigned char *good = th_read(f->path, &len);
        unsigned char *bad = calloc(1, len + 200);
        memcpy(bad, good, len);
        bad[len + 3] = 120;
        for (size_t i = 4; i < 60; i++)
                bad[len + i] = (unsigned char)(i * 37);
        char torn[PATH_MAX];
        snprintf(torn, sizeof(torn), "%s.torn", f->path);
        size_t cuts[] = { 1, 3, 30 }, kept = 0;
        for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
                th_write(f->path, bad, len + cuts[i]);
                struct glove_store *st = NULL;
                struct glove_store_journal_report rep;
                struct glove_error e = { 0 };
                if (glove_store_open(f->path, geteuid(), &st, &rep, &e) != 0)
                        fail_msg("torn tail of %zu bytes: refused: %s: %s", cuts[i], e.code, e.message);
                assert_int_equal(rep.torn_bytes, cuts[i]);
                assert_int_equal(rep.torn_offset, len);
                check_good(st);
                glove_store_close(st);
                size_t jl, tl;
                unsigned char *j = th_read(f->path, &jl), *t = th_read(torn, &tl);
                assert_int_equal(jl, len);
                assert_memory_equal(j, good, len);
                kept += cuts[i];
                assert_int_equal(tl, kept); /* each cut appended to FILE.torn */
                assert_memory_equal(t + tl - cuts[i], bad + len, cuts[i]);
                free(j);
                free(t);
        }
        unlink(torn);
        free(good);
        free(bad);
}

/* A valid journal whose payloads break the store's own rules. */
static void write_records(struct fixture *f, const char *const payloads[], size_t n) {
        struct glove_store_journal *j = NULL;
        struct glove_store_journal_open_options o = { .path = f->path, .owner = geteuid() };
        assert_int_equal(glove_store_journal_open(&glove_store_format, &o, NULL, NULL, &j, NULL, NULL), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(glove_store_journal_append(j, payloads[i], strlen(payloads[i]), NULL, NULL, NULL), 0);
        glove_store_journal_close(j);
}

#define PD1 "3b1c0b5c4b7fbae1b1f8e8ae0a06a5b2bd1f0d4e5a33a84b0d7d1b9a0f3c7b51"

static void test_semantic_replay_errors(void **state) {
        struct fixture *f = *state;
        char pd[65], create1[512], create1b[512], create2[512];
        sha_hex(PLAN1, pd);
        snprintf(create1, sizeof(create1),
                 "{\"controller_plan_digest\":\"" CDIGEST "\",\"created_at_ms\":1,\"idempotency_key\":\"k1\","
                 "\"kind\":\"create\",\"plan\":%s,\"plan_content_digest\":\"%s\",\"seq\":1,\"session_id\":\"s1\"}",
                 PLAN1, pd);
        snprintf(create1b, sizeof(create1b),
                 "{\"controller_plan_digest\":\"" CDIGEST "\",\"created_at_ms\":1,\"idempotency_key\":\"k1\","
                 "\"kind\":\"create\",\"plan\":%s,\"plan_content_digest\":\"" PD1 "\",\"seq\":1,\"session_id\":\"s1\"}",
                 PLAN1);
        snprintf(create2, sizeof(create2),
                 "{\"controller_plan_digest\":\"" CDIGEST "\",\"created_at_ms\":1,\"idempotency_key\":\"k2\","
                 "\"kind\":\"create\",\"plan\":%s,\"plan_content_digest\":\"%s\",\"seq\":2,\"session_id\":\"s1\"}",
                 PLAN1, pd);
        struct {
                const char *p[2];
                size_t n;
                const char *code;
        } cases[] = {
                { { create1b }, 1, "store.digest_mismatch" },
                { { "{\"kind\":\"create\", \"seq\":1}" }, 1, "store.bad_record" },
                { { "{\"kind\":\"delete\",\"seq\":1}" }, 1, "store.bad_record" },
                { { "{\"kind\":\"create\",\"seq\":2}" }, 1, "store.sequence" },
                { { "[1]" }, 1, "store.bad_record" },
                { { create1, create2 }, 2, "store.duplicate_session" },
                { { "{\"at_ms\":1,\"from\":\"created\",\"kind\":\"transition\",\"reason\":\"\",\"seq\":1,"
                    "\"session_id\":\"s1\",\"to\":\"preparing\"}" },
                  1, "store.unknown_session" },
                { { create1, "{\"at_ms\":1,\"from\":\"created\",\"kind\":\"transition\",\"reason\":\"\",\"seq\":2,"
                             "\"session_id\":\"s1\",\"to\":\"running\"}" },
                  2, "store.bad_transition" },
                { { create1, "{\"at_ms\":1,\"from\":\"preparing\",\"kind\":\"transition\",\"reason\":\"\",\"seq\":2,"
                             "\"session_id\":\"s1\",\"to\":\"starting\"}" },
                  2, "store.bad_transition" },
                { { create1, "{\"at_ms\":1,\"extra\":0,\"from\":\"created\",\"kind\":\"transition\",\"reason\":\"\","
                             "\"seq\":2,\"session_id\":\"s1\",\"to\":\"failed\"}" },
                  2, "store.bad_record" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                unlink(f->path);
                unlink(f->seal);
                write_records(f, cases[i].p, cases[i].n);
                expect_refused(f, cases[i].code, "semantic case", i);
        }
        /* The positive control: the same writer with good records opens. */
        unlink(f->path);
        unlink(f->seal);
        const char *good[] = { create1 };
        write_records(f, good, 1);
        struct glove_store *st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_non_null(glove_store_find(st, "s1"));
        glove_store_close(st);
}

/* A create record with plan bytes plan[0..plan_len) hashed into its
 * plan_content_digest (digest NULL) or with the given digest; envelope
 * members as written by the store, with sep between "kind" and "plan". */
static char *create_record(const char *plan, size_t plan_len, const char *digest, const char *sep) {
        char hex[65];
        if (!digest) {
                uint8_t d[32];
                assert_int_equal(glove_digest_sha256(plan, plan_len, d, NULL), 0);
                glove_digest_hex_encode(d, 32, hex, 65);
                digest = hex;
        }
        static const char head[] = "{\"controller_plan_digest\":\"" CDIGEST "\",\"created_at_ms\":1,"
                                   "\"idempotency_key\":\"k1\",\"kind\":\"create\"";
        char tail[160];
        snprintf(tail, sizeof(tail), ",\"plan_content_digest\":\"%s\",\"seq\":1,\"session_id\":\"s1\"}", digest);
        size_t n = strlen(head) + strlen(sep) + 8 + plan_len + strlen(tail);
        char *r = malloc(n + 1);
        assert_non_null(r);
        snprintf(r, n + 1, "%s%s,\"plan\":", head, sep);
        size_t at = strlen(r);
        memcpy(r + at, plan, plan_len);
        memcpy(r + at + plan_len, tail, strlen(tail) + 1);
        return r;
}

/* Replay takes the plan's bytes from between the first ,"plan": and the last
 * ,"plan_content_digest":" and checks the record around them with jansson:
 * plans that hold those texts themselves replay byte for byte; plan bytes
 * that are not an object, hold a NUL, exceed the bound or do not hash to
 * the digest, and envelopes that are not canonical, are refused. */
static void test_plan_bytes_at_replay(void **state) {
        struct fixture *f = *state;
        static const char *const good[] = {
                "{\"a\":1,\"plan\":2}",
                "{\"a\":1,\"plan_content_digest\":\"x\",\"seq\":1}",
                "{\"a\":{\"b\":1,\"plan\":{\"c\":\",\\\"plan\\\":\"}},\"plan_content_digest\":\"" CDIGEST "\"}",
        };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                char *rec = create_record(good[i], strlen(good[i]), NULL, "");
                const char *p[] = { rec };
                unlink(f->path);
                unlink(f->seal);
                write_records(f, p, 1);
                struct glove_store *st = NULL;
                struct glove_error e = { 0 };
                if (glove_store_open(f->path, geteuid(), &st, NULL, &e) < 0)
                        fail_msg("good plan %zu refused: %s: %s", i, e.code, e.message);
                const struct glove_store_session *s = glove_store_find(st, "s1");
                assert_non_null(s);
                assert_int_equal(s->plan_len, strlen(good[i]));
                assert_memory_equal(s->plan, good[i], s->plan_len + 1);
                glove_store_close(st);
                free(rec);
        }
        static char big[GLOVE_STORE_PLAN_MAX + 2];
        size_t n = GLOVE_STORE_PLAN_MAX + 1;
        memset(big, 'x', n);
        memcpy(big, "{\"a\":\"", 6);
        memcpy(big + n - 2, "\"}", 2);
        struct {
                const char *plan;
                size_t len;
                const char *digest, *sep, *code;
        } cases[] = {
                { "[1]", 3, NULL, "", "store.bad_record" },
                { "\"{}\"", 4, NULL, "", "store.bad_record" },
                { "{\"a\":1", 6, NULL, "", "store.bad_record" },
                { "{\"a\":\"\0\"}", 9, NULL, "", "store.bad_record" },
                { big, n, NULL, "", "store.bad_record" },
                { PLAN1, strlen(PLAN1), PD1, "", "store.digest_mismatch" },
                { PLAN1, strlen(PLAN1), NULL, " ", "store.bad_record" },             /* envelope not canonical */
                { PLAN1, strlen(PLAN1), NULL, ",\"x\":1", "store.bad_record" },      /* a member too many */
                { PLAN1, strlen(PLAN1), "0123", "", "store.bad_record" },            /* a short digest */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *rec = create_record(cases[i].plan, cases[i].len, cases[i].digest, cases[i].sep);
                unlink(f->path);
                unlink(f->seal);
                struct glove_store_journal *j = NULL;
                struct glove_store_journal_open_options o = { .path = f->path, .owner = geteuid() };
                assert_int_equal(glove_store_journal_open(&glove_store_format, &o, NULL, NULL, &j, NULL, NULL),
                                 0);
                size_t len = strlen(rec);
                if (cases[i].len != strlen(cases[i].plan)) /* a NUL inside: the record's length from its parts */
                        len = strlen(rec) + strlen(rec + strlen(rec) + 1) + 1;
                assert_int_equal(glove_store_journal_append(j, rec, len, NULL, NULL, NULL), 0);
                glove_store_journal_close(j);
                expect_refused(f, cases[i].code, "plan bytes case", i);
                free(rec);
        }
}

/* ---- the runtime identity on the transition to running ---- */

#define RUNTIME1 "{\"boot_id\":\"b\",\"keeper\":{\"pid\":7,\"socket\":\"keepers/s1.sock\"},\"pid\":42}"

/* s1 moved to starting, ready for running. */
static struct glove_store *open_starting(struct fixture *f) {
        struct glove_store *st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(create(st, "s1", "k1", PLAN1, NULL, NULL), 0);
        assert_int_equal(transition(st, "s1", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
        assert_int_equal(transition(st, "s1", GLOVE_STORE_SESSION_STARTING, NULL), 0);
        return st;
}

static int run_with(struct glove_store *st, const char *id, enum glove_store_session_state to,
                    const char *runtime, size_t len, bool *appended, struct glove_error *e) {
        return glove_store_transition_runtime(st, id, to, "", NOW + 5, runtime, len, appended, e);
}

static void expect_invalid_runtime(struct glove_store *st, enum glove_store_session_state to,
                                   const char *runtime, size_t len) {
        struct glove_error e = { 0 };
        bool appended = true;
        uint64_t records = glove_store_records(st);
        assert_int_equal(run_with(st, "s1", to, runtime, len, &appended, &e), -EINVAL);
        assert_string_equal(e.code, "store.invalid_runtime");
        assert_false(appended);
        assert_int_equal(glove_store_records(st), records);
        glove_error_clear(&e);
}

static void check_runtime(const struct glove_store_session *s) {
        assert_int_equal(s->state, GLOVE_STORE_SESSION_RUNNING);
        assert_non_null(s->runtime);
        assert_int_equal(s->runtime_len, strlen(RUNTIME1));
        assert_memory_equal(s->runtime, RUNTIME1, s->runtime_len + 1); /* with its NUL */
}

static void test_runtime_recorded_and_replayed(void **state) {
        struct fixture *f = *state;
        struct glove_store *st = open_starting(f);
        bool appended = false;
        assert_null(glove_store_find(st, "s1")->runtime);
        assert_int_equal(run_with(st, "s1", GLOVE_STORE_SESSION_RUNNING, RUNTIME1, strlen(RUNTIME1), &appended, NULL),
                         0);
        assert_true(appended);
        check_runtime(glove_store_find(st, "s1"));
        /* Asking for running again appends nothing and keeps the identity. */
        assert_int_equal(run_with(st, "s1", GLOVE_STORE_SESSION_RUNNING, "{\"pid\":1}", 9, &appended, NULL), 0);
        assert_false(appended);
        check_runtime(glove_store_find(st, "s1"));
        assert_int_equal(transition(st, "s1", GLOVE_STORE_SESSION_STOPPING, NULL), 0);
        glove_store_close(st);

        /* The record is in the documented format, member sorted in place. */
        size_t len;
        unsigned char *b = th_read(f->path, &len);
        const char *rec = "{\"at_ms\":1764000000005,\"from\":\"starting\",\"kind\":\"transition\",\"reason\":\"\","
                          "\"runtime\":" RUNTIME1 ",\"seq\":4,\"session_id\":\"s1\",\"to\":\"running\"}";
        assert_non_null(memmem(b, len, rec, strlen(rec)));
        /* Reopened, and replayed from memory: the same bytes; the later
         * transition keeps them. */
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        const struct glove_store_session *s = glove_store_find(st, "s1");
        assert_int_equal(s->state, GLOVE_STORE_SESSION_STOPPING);
        assert_int_equal(s->runtime_len, strlen(RUNTIME1));
        assert_memory_equal(s->runtime, RUNTIME1, s->runtime_len + 1);
        glove_store_close(st);
        struct glove_store *mem = NULL;
        assert_int_equal(glove_store_replay_bytes(b, len, &mem, NULL), 0);
        assert_memory_equal(glove_store_find(mem, "s1")->runtime, RUNTIME1, strlen(RUNTIME1) + 1);
        glove_store_close(mem);
        free(b);
}

static void test_runtime_refused_at_append(void **state) {
        struct fixture *f = *state;
        struct glove_store *st = open_starting(f);
        /* not on another state than running */
        expect_invalid_runtime(st, GLOVE_STORE_SESSION_FAILED, RUNTIME1, strlen(RUNTIME1));
        expect_invalid_runtime(st, GLOVE_STORE_SESSION_STOPPING, RUNTIME1, strlen(RUNTIME1));
        /* not one canonical object */
        static const char *const not_objects[] = { "[1]", "1", "\"x\"", "null", "{ \"a\":1}", "{\"b\":1,\"a\":2}",
                                                   "{\"a\":1.5}", "{\"a\":1}{}", "", "{" };
        for (size_t i = 0; i < sizeof(not_objects) / sizeof(not_objects[0]); i++)
                expect_invalid_runtime(st, GLOVE_STORE_SESSION_RUNNING, not_objects[i], strlen(not_objects[i]));
        /* the length is the caller's: bytes past it are not read */
        expect_invalid_runtime(st, GLOVE_STORE_SESSION_RUNNING, RUNTIME1, strlen(RUNTIME1) - 1);
        /* larger than the bound, by one byte */
        static char big[GLOVE_STORE_RUNTIME_MAX + 2];
        size_t n = GLOVE_STORE_RUNTIME_MAX + 1;
        memset(big, 'x', n);
        memcpy(big, "{\"a\":\"", 6);
        memcpy(big + n - 2, "\"}", 2);
        big[n] = '\0';
        expect_invalid_runtime(st, GLOVE_STORE_SESSION_RUNNING, big, n);
        /* nested as deep as the bound: the record around it would exceed it */
        char deep[2 * GLOVE_JSON_MAX_DEPTH + 8];
        size_t d = 5;
        memcpy(deep, "{\"a\":", 5);
        for (int i = 1; i < GLOVE_JSON_MAX_DEPTH; i++)
                deep[d++] = '[';
        for (int i = 1; i < GLOVE_JSON_MAX_DEPTH; i++)
                deep[d++] = ']';
        deep[d++] = '}';
        expect_invalid_runtime(st, GLOVE_STORE_SESSION_RUNNING, deep, d);
        assert_int_equal(glove_store_find(st, "s1")->state, GLOVE_STORE_SESSION_STARTING);
        /* exactly the bound is accepted */
        bool appended = false;
        memcpy(big + n - 3, "\"}", 3);
        assert_int_equal(run_with(st, "s1", GLOVE_STORE_SESSION_RUNNING, big, n - 1, &appended, NULL), 0);
        assert_true(appended);
        assert_int_equal(glove_store_find(st, "s1")->runtime_len, GLOVE_STORE_RUNTIME_MAX);
        glove_store_close(st);
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_memory_equal(glove_store_find(st, "s1")->runtime, big, GLOVE_STORE_RUNTIME_MAX + 1);
        glove_store_close(st);
}

static void test_runtime_replay_rules(void **state) {
        struct fixture *f = *state;
        char pd[65], create1[512], t[3][256], bad[GLOVE_STORE_RUNTIME_MAX + 512];
        static const char *const names[] = { "created", "preparing", "starting", "running" };
        sha_hex(PLAN1, pd);
        snprintf(create1, sizeof(create1),
                 "{\"controller_plan_digest\":\"" CDIGEST "\",\"created_at_ms\":1,\"idempotency_key\":\"k1\","
                 "\"kind\":\"create\",\"plan\":%s,\"plan_content_digest\":\"%s\",\"seq\":1,\"session_id\":\"s1\"}",
                 PLAN1, pd);
        for (int i = 0; i < 2; i++)
                snprintf(t[i], sizeof(t[i]),
                         "{\"at_ms\":1,\"from\":\"%s\",\"kind\":\"transition\",\"reason\":\"\",\"seq\":%d,"
                         "\"session_id\":\"s1\",\"to\":\"%s\"}",
                         names[i], i + 2, names[i + 1]);
        /* A fourth record: to (running or failed) from starting, with runtime value. */
#define LAST(to, value)                                                                                          \
        snprintf(bad, sizeof(bad),                                                                             \
                 "{\"at_ms\":1,\"from\":\"starting\",\"kind\":\"transition\",\"reason\":\"\",\"runtime\":%s,"  \
                 "\"seq\":4,\"session_id\":\"s1\",\"to\":\"%s\"}",                                            \
                 value, to)
        static char big[GLOVE_STORE_RUNTIME_MAX + 2];
        size_t n = GLOVE_STORE_RUNTIME_MAX + 1;
        memset(big, 'x', n);
        memcpy(big, "{\"a\":\"", 6);
        memcpy(big + n - 2, "\"}", 2);
        struct {
                const char *to, *value, *code;
        } cases[] = {
                { "running", RUNTIME1, NULL },    /* accepted */
                { "failed", RUNTIME1, "store.bad_record" },
                { "running", "[1]", "store.bad_record" },
                { "running", "\"x\"", "store.bad_record" },
                { "running", "7", "store.bad_record" },
                { "running", "null", "store.bad_record" },
                { "running", big, "store.bad_record" },
                { "running", "{\"b\":1,\"a\":2}", "store.bad_record" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                LAST(cases[i].to, cases[i].value);
                const char *p[] = { create1, t[0], t[1], bad };
                unlink(f->path);
                unlink(f->seal);
                write_records(f, p, 4);
                if (cases[i].code) {
                        expect_refused(f, cases[i].code, "runtime case", i);
                        continue;
                }
                struct glove_store *st = NULL;
                assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
                check_runtime(glove_store_find(st, "s1"));
                glove_store_close(st);
        }
        /* on a transition that is not the one to running */
        snprintf(t[2], sizeof(t[2]),
                 "{\"at_ms\":1,\"from\":\"created\",\"kind\":\"transition\",\"reason\":\"\",\"runtime\":{},"
                 "\"seq\":2,\"session_id\":\"s1\",\"to\":\"preparing\"}");
        const char *p[] = { create1, t[2] };
        unlink(f->path);
        unlink(f->seal);
        write_records(f, p, 2);
        expect_refused(f, "store.bad_record", "runtime on preparing", 0);
#undef LAST
}

static void test_second_writer_refused(void **state) {
        struct fixture *f = *state;
        struct glove_store *a = NULL, *b = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(glove_store_open(f->path, geteuid(), &a, NULL, NULL), 0);
        assert_int_equal(glove_store_open(f->path, geteuid(), &b, NULL, &e), -EBUSY);
        assert_string_equal(e.code, "journal.locked");
        glove_store_close(a);
}


/* ---- compaction (docs/recovery.md, "Compaction") ---- */

static bool retire_all(void *ctx, const struct glove_store_session *s) {
        (void)ctx;
        (void)s;
        return true;
}

static void run_to_end(struct glove_store *st, const char *id) {
        static const enum glove_store_session_state path[] = { GLOVE_STORE_SESSION_PREPARING,
                                                                 GLOVE_STORE_SESSION_STARTING,
                                                                 GLOVE_STORE_SESSION_RUNNING,
                                                                 GLOVE_STORE_SESSION_STOPPING,
                                                                 GLOVE_STORE_SESSION_EXITED };
        for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
                bool appended;
                struct glove_error e = { 0 };
                const char *rt = path[i] == GLOVE_STORE_SESSION_RUNNING ? "{\"boot_id\":\"b\",\"pid\":7}" : NULL;
                assert_int_equal(glove_store_transition_runtime(st, id, path[i], "", NOW + 2, rt,
                                                                        rt ? strlen(rt) : 0, &appended, &e),
                                 0);
        }
}

/* s-done: ended and cleaned (retired at compaction); s-ended: ended, not
 * cleaned; s-run: running; s-new: created. */
static void build_mixed(struct fixture *f) {
        struct glove_store *st = NULL;
        bool appended;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(create(st, "s-done", "k-done", PLAN1, NULL, NULL), 0);
        run_to_end(st, "s-done");
        assert_int_equal(glove_store_cleanup(st, "s-done", NOW + 3, &appended, NULL), 0);
        assert_true(appended);
        assert_int_equal(glove_store_cleanup(st, "s-done", NOW + 3, &appended, NULL), 0);
        assert_false(appended);
        assert_int_equal(create(st, "s-ended", "k-ended", PLAN2, NULL, NULL), 0);
        run_to_end(st, "s-ended");
        assert_int_equal(create(st, "s-run", "k-run", PLAN1, NULL, NULL), 0);
        assert_int_equal(transition(st, "s-run", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
        assert_int_equal(create(st, "s-new", "k-new", PLAN2, NULL, NULL), 0);
        struct glove_error e = { 0 };
        assert_int_equal(glove_store_cleanup(st, "s-run", NOW, &appended, &e), -EBUSY);
        assert_string_equal(e.code, "session.not_terminal");
        glove_store_close(st);
}

/* The live sessions of build_mixed, with their history, as one string. */
static void describe(const struct glove_store *st, char *buf, size_t len) {
        size_t off = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < glove_store_sessions(st); i++) {
                const struct glove_store_session *s = glove_store_at(st, i);
                off += (size_t)snprintf(buf + off, len - off, "%s/%s/%s/%llu/%d/%s:", s->session_id, s->idempotency_key,
                                        glove_store_session_state_name(s->state),
                                        (unsigned long long)s->created_seq, s->cleaned, s->runtime ? s->runtime : "-");
                for (size_t h = 0; h < s->n_history; h++)
                        off += (size_t)snprintf(buf + off, len - off, "%llu,", (unsigned long long)s->history[h].seq);
        }
}

static void test_compact_drops_retired_and_continues(void **state) {
        struct fixture *f = *state;
        build_mixed(f);
        struct glove_store *st = NULL;
        char before[2048], after[2048];
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        uint64_t records = glove_store_records(st);
        assert_int_equal(records, 16); /* 4 creates, 11 transitions, 1 cleanup */
        glove_store_set_retention(st, retire_all, NULL);
        struct glove_store_compaction c;
        assert_int_equal(glove_store_compact(st, &c, NULL), 0);
        assert_int_equal(c.dropped, 1);
        assert_int_equal(c.kept, 3);
        assert_null(glove_store_find(st, "s-done"));
        assert_non_null(glove_store_find(st, "s-ended"));
        assert_int_equal(glove_store_records(st), records);
        assert_int_equal(glove_store_tail_records(st), 0);
        describe(st, before, sizeof(before));
        /* The sequence continues after the checkpoint. */
        assert_int_equal(transition(st, "s-new", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
        assert_int_equal(glove_store_records(st), records + 1);
        glove_store_close(st);
        st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_null(glove_store_find(st, "s-done"));
        assert_int_equal(glove_store_records(st), records + 1);
        const struct glove_store_session *s = glove_store_find(st, "s-new");
        assert_int_equal(s->n_history, 1);
        assert_int_equal(s->history[0].seq, records + 1);
        /* Compacting again keeps everything live and verbatim. */
        assert_int_equal(glove_store_compact(st, &c, NULL), 0);
        assert_int_equal(c.dropped, 0);
        glove_store_close(st);
        st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        describe(st, after, sizeof(after));
        assert_non_null(strstr(after, "s-run/k-run/preparing"));
        assert_non_null(strstr(after, "{\"boot_id\":\"b\",\"pid\":7}"));
        /* The idempotency key of a live session still answers a retry. */
        bool replayed = false;
        assert_int_equal(create(st, "s-ended", "k-ended", PLAN2, &replayed, NULL), 0);
        assert_true(replayed);
        glove_store_close(st);
        (void)before;
}

static void test_compact_automatically(void **state) {
        struct fixture *f = *state;
        struct glove_store *st = NULL;
        struct glove_store_options o = { .path = f->path, .owner = geteuid(), .compact_records = 10 };
        assert_int_equal(glove_store_open_with(&o, &st, NULL, NULL), 0);
        glove_store_set_retention(st, retire_all, NULL);
        char id[32], key[32];
        for (int i = 0; i < 60; i++) {
                bool appended;
                snprintf(id, sizeof(id), "s%d", i);
                snprintf(key, sizeof(key), "k%d", i);
                assert_int_equal(create(st, id, key, PLAN1, NULL, NULL), 0);
                run_to_end(st, id);
                assert_int_equal(glove_store_cleanup(st, id, NOW + 5, &appended, NULL), 0);
                assert_true(glove_store_tail_records(st) <= 10 + 7);
                assert_true(glove_store_sessions(st) <= 3);
        }
        assert_false(glove_store_last_compaction(st)->failed);
        uint64_t records = glove_store_records(st);
        assert_int_equal(records, 60 * 7);
        glove_store_close(st);
        st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(glove_store_records(st), records);
        assert_non_null(glove_store_find(st, "s59"));
        glove_store_close(st);
}

/* Sessions live at the same time have their records interleaved in the
 * journal; the checkpoint keeps journal order, so it replays (found by the
 * gloved soak: 8 sessions in flight). */
static void test_compact_interleaved_sessions_replay(void **state) {
        struct fixture *f = *state;
        struct glove_store *st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(create(st, "a", "k-a", PLAN1, NULL, NULL), 0);
        assert_int_equal(create(st, "b", "k-b", PLAN2, NULL, NULL), 0);
        assert_int_equal(transition(st, "a", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
        assert_int_equal(create(st, "c", "k-c", PLAN1, NULL, NULL), 0);
        assert_int_equal(transition(st, "b", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
        assert_int_equal(transition(st, "a", GLOVE_STORE_SESSION_STARTING, NULL), 0);
        assert_int_equal(transition(st, "c", GLOVE_STORE_SESSION_FAILED, NULL), 0);
        char before[2048], after[2048];
        describe(st, before, sizeof(before));
        uint64_t records = glove_store_records(st);
        struct glove_store_compaction c;
        assert_int_equal(glove_store_compact(st, &c, NULL), 0);
        assert_int_equal(c.kept, 3);
        assert_int_equal(c.entries, records);
        glove_store_close(st);
        st = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, &e), 0);
        describe(st, after, sizeof(after));
        assert_string_equal(before, after);
        assert_int_equal(glove_store_records(st), records);
        /* And once more on top of the first checkpoint. */
        assert_int_equal(transition(st, "b", GLOVE_STORE_SESSION_STARTING, NULL), 0);
        assert_int_equal(glove_store_compact(st, &c, NULL), 0);
        glove_store_close(st);
        st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, &e), 0);
        assert_int_equal(glove_store_find(st, "b")->state, GLOVE_STORE_SESSION_STARTING);
        glove_store_close(st);
}

/* Kills a child at each named step of a compaction; the reopened store has
 * every live session, and its chain goes on. */
static int crash_at;
static void crash_hook(void *ctx, enum glove_store_compact_step s) {
        (void)ctx;
        if ((int)s == crash_at)
                _exit(42);
}

static void test_compact_crash_at_every_step(void **state) {
        struct fixture *f = *state;
        char want[2048], got[2048];
        struct fixture *outer = f;
        for (int stepno = GLOVE_STORE_COMPACT_BEGIN; stepno < GLOVE_STORE_COMPACT_STEP_COUNT; stepno++) {
                char name[32];
                snprintf(name, sizeof(name), "step%d", stepno);
                struct fixture g = { .dir = th_join(outer->dir, name) };
                assert_int_equal(mkdir(g.dir, 0700), 0);
                g.path = th_join(g.dir, "sessions.journal");
                g.seal = th_join(g.dir, "sessions.journal.seal");
                f = &g;
                build_mixed(f);
                struct glove_store *st = NULL;
                assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
                uint64_t records = glove_store_records(st);
                glove_store_close(st);
                st = NULL;
                crash_at = stepno;
                pid_t pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                        struct glove_store_options o = { .path = f->path, .owner = geteuid(),
                                                                 .hook = crash_hook };
                        if (glove_store_open_with(&o, &st, NULL, NULL) < 0)
                                _exit(1);
                        glove_store_set_retention(st, retire_all, NULL);
                        (void)glove_store_compact(st, NULL, NULL);
                        _exit(2);
                }
                int status = 0;
                assert_int_equal(waitpid(pid, &status, 0), pid);
                assert_true(WIFEXITED(status));
                assert_int_equal(WEXITSTATUS(status), 42);
                struct glove_error e = { 0 };
                struct glove_store_options o = { .path = f->path, .owner = geteuid() };
                if (glove_store_open_with(&o, &st, NULL, &e) < 0)
                        fail_msg("step %d: reopen: %s: %s", stepno, e.code, e.message);
                bool installed = stepno >= GLOVE_STORE_COMPACT_CHECKPOINT_INSTALLED;
                assert_int_equal(glove_store_find(st, "s-done") == NULL, installed);
                assert_non_null(glove_store_find(st, "s-ended"));
                assert_non_null(glove_store_find(st, "s-run"));
                assert_non_null(glove_store_find(st, "s-new"));
                assert_int_equal(glove_store_records(st), records);
                describe(st, want, sizeof(want));
                assert_int_equal(transition(st, "s-new", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
                glove_store_close(st);
                st = NULL;
                assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
                assert_int_equal(glove_store_records(st), records + 1);
                glove_store_close(st);
                st = NULL;
                /* No leftover of the interrupted compaction remains. */
                char *tmp = th_join(f->dir, ".sessions.journal.ckpt.new");
                struct stat sb;
                assert_int_equal(lstat(tmp, &sb), -1);
                free(tmp);
                tmp = th_join(f->dir, ".sessions.journal.seal.compact");
                assert_int_equal(lstat(tmp, &sb), -1);
                free(tmp);
                (void)got;
                free(g.path), free(g.seal), free(g.dir);
        }
}

/* Writes a file anew (mode 0600), creating it when missing. */
static void put_file(const char *path, const void *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        close(fd);
}

static void expect_refusal(struct fixture *f, const char *code) {
        struct glove_store *st = NULL;
        struct glove_error e = { 0 };
        char *ck = th_join(f->dir, "sessions.journal.ckpt");
        size_t jl = 0, cl = 0, jl2 = 0, cl2 = 0;
        bool have_ck = access(ck, F_OK) == 0;
        unsigned char *j1 = th_read(f->path, &jl), *c1 = have_ck ? th_read(ck, &cl) : NULL;
        assert_true(glove_store_open(f->path, geteuid(), &st, NULL, &e) < 0);
        assert_null(st);
        assert_string_equal(e.code, code);
        assert_non_null(strstr(e.message, "nothing was deleted"));
        assert_int_equal(access(ck, F_OK) == 0, have_ck);
        unsigned char *j2 = th_read(f->path, &jl2), *c2 = have_ck ? th_read(ck, &cl2) : NULL;
        assert_int_equal(jl, jl2);
        assert_int_equal(cl, cl2);
        assert_true(jl == 0 || memcmp(j1, j2, jl) == 0);
        assert_true(cl == 0 || memcmp(c1, c2, cl) == 0);
        free(j1), free(j2), free(c1), free(c2), free(ck);
}

static void compacted(struct fixture *f) {
        build_mixed(f);
        struct glove_store *st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        glove_store_set_retention(st, retire_all, NULL);
        assert_int_equal(glove_store_compact(st, NULL, NULL), 0);
        assert_int_equal(transition(st, "s-new", GLOVE_STORE_SESSION_PREPARING, NULL), 0);
        glove_store_close(st);
}

static void test_checkpoint_corruption_refused(void **state) {
        struct fixture *f = *state;
        compacted(f);
        char *ck = th_join(f->dir, "sessions.journal.ckpt");
        size_t cl = 0;
        unsigned char *orig = th_read(ck, &cl);
        /* A flipped byte anywhere: header, an entry, the MAC. */
        size_t offs[] = { 30, 100, 210, cl / 2, cl - 1 };
        for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
                unsigned char *b = malloc(cl);
                memcpy(b, orig, cl);
                b[offs[i]] ^= 0x20;
                put_file(ck, b, cl);
                expect_refusal(f, offs[i] < 16 ? "checkpoint.corrupt" : "checkpoint.mac_mismatch");
                free(b);
        }
        /* Truncated, and grown. */
        put_file(ck, orig, cl - 7);
        expect_refusal(f, "checkpoint.corrupt");
        put_file(ck, orig, 100);
        expect_refusal(f, "checkpoint.corrupt");
        /* Entries reordered (the first two swapped; the MAC no longer fits). */
        {
                unsigned char *b = malloc(cl);
                memcpy(b, orig, cl);
                uint32_t l1 = glove_get_be32(orig + 200);
                uint32_t l2 = glove_get_be32(orig + 200 + 4 + l1);
                memcpy(b + 200, orig + 200 + 4 + l1, 4 + l2);
                memcpy(b + 200 + 4 + l2, orig + 200, 4 + l1);
                put_file(ck, b, cl);
                expect_refusal(f, "checkpoint.mac_mismatch");
                free(b);
        }
        /* Missing checkpoint: the tail says it continues one. */
        assert_int_equal(unlink(ck), 0);
        expect_refusal(f, "checkpoint.missing");
        put_file(ck, orig, cl);
        /* A journal of another store next to this checkpoint. */
        size_t jl = 0;
        unsigned char *tail = th_read(f->path, &jl);
        unsigned char *seal = NULL;
        size_t sl = 0;
        seal = th_read(f->seal, &sl);
        assert_int_equal(unlink(f->path), 0);
        assert_int_equal(unlink(f->seal), 0);
        assert_int_equal(unlink(ck), 0);
        {
                struct glove_store *st = NULL;
                assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
                assert_int_equal(create(st, "other", "other", PLAN1, NULL, NULL), 0);
                glove_store_close(st);
        }
        put_file(ck, orig, cl);
        expect_refusal(f, "checkpoint.mismatch");
        /* The original tail back: opens, with every live session. */
        put_file(f->path, tail, jl);
        put_file(f->seal, seal, sl);
        struct glove_store *st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_int_equal(glove_store_sessions(st), 3);
        glove_store_close(st);
        free(tail), free(seal), free(orig), free(ck);
}

/* The tail after a checkpoint is as strict as a journal: a truncated or
 * corrupt tail record refuses. */
static void test_tail_corruption_refused(void **state) {
        struct fixture *f = *state;
        compacted(f);
        size_t jl = 0;
        unsigned char *j = th_read(f->path, &jl);
        size_t at = jl > 40 ? jl - 40 : 0;
        j[at] ^= 1;
        th_write(f->path, j, jl);
        struct glove_store *st = NULL;
        struct glove_error e = { 0 };
        assert_true(glove_store_open(f->path, geteuid(), &st, NULL, &e) < 0);
        assert_string_equal(e.code, "journal.chain_mismatch");
        j[at] ^= 1;
        th_write(f->path, j, 64); /* cut to the header: the seal committed a record */
        e = (struct glove_error){ 0 };
        assert_true(glove_store_open(f->path, geteuid(), &st, NULL, &e) < 0);
        assert_string_equal(e.code, "journal.resized");
        free(j);
}

/* gloved's retention rule: ended, cleaned up, and no unacknowledged receipt
 * names it (service.c, docs/recovery.md "Compaction"). */
static bool retire_acknowledged(void *ctx, const struct glove_store_session *s) {
        return !glove_store_receipts_pending(ctx, s->session_id);
}

static void test_retention_waits_for_the_acknowledgement(void **state) {
        struct fixture *f = *state;
        struct glove_store *st = NULL;
        struct glove_store_receipts *rc = NULL;
        struct glove_store_receipts_options ro = { .state_dir = f->dir, .owner = geteuid() };
        assert_int_equal(glove_store_receipts_open(&ro, &rc, NULL), 0);
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        glove_store_set_retention(st, retire_acknowledged, rc);
        bool appended;
        assert_int_equal(create(st, "s1", "k1", PLAN1, NULL, NULL), 0);
        run_to_end(st, "s1");
        json_t *body = json_pack("{s:s}", "state", "exited");
        assert_int_equal(glove_store_receipts_append(rc, "session.terminal", "s1", body, NOW, NULL, NULL), 0);
        json_decref(body);
        /* Not cleaned up: kept. */
        assert_int_equal(glove_store_compact(st, NULL, NULL), 0);
        assert_non_null(glove_store_find(st, "s1"));
        /* Cleaned up, its receipt not acknowledged: kept. */
        assert_int_equal(glove_store_cleanup(st, "s1", NOW + 9, &appended, NULL), 0);
        assert_int_equal(glove_store_compact(st, NULL, NULL), 0);
        assert_non_null(glove_store_find(st, "s1"));
        /* Acknowledged: gone, and gone after a restart. */
        uint8_t head[32];
        char hex[65];
        uint64_t n = glove_store_receipts_head(rc, head);
        glove_digest_hex_encode(head, 32, hex, sizeof(hex));
        assert_int_equal(glove_store_receipts_ack(rc, n, hex, NULL), 0);
        assert_int_equal(glove_store_compact(st, NULL, NULL), 0);
        assert_null(glove_store_find(st, "s1"));
        assert_null(glove_store_find_key(st, "k1"));
        glove_store_close(st);
        st = NULL;
        assert_int_equal(glove_store_open(f->path, geteuid(), &st, NULL, NULL), 0);
        assert_null(glove_store_find(st, "s1"));
        assert_int_equal(glove_store_sessions(st), 0);
        glove_store_close(st);
        glove_store_receipts_close(rc);
}

/* A private directory's descriptor carries the kept-directory tag that
 * glove exec and glove run look for (glove/store/dirs.h); a directory that
 * fails the checks yields no descriptor. */
static void test_private_dir_is_tagged_kept(void **state) {
        struct fixture *f = *state;
        assert_int_equal(chmod(f->dir, 0700), 0);
        struct glove_error e = { 0 };
        int fd = -1;
        assert_int_equal(glove_store_dir_open_private(f->dir, geteuid(), false, &fd, &e), 0);
        int fl = fcntl(fd, F_GETFL);
        assert_true(fl >= 0);
        assert_true((fl & GLOVE_STORE_KEPT_DIR_FLAG) == GLOVE_STORE_KEPT_DIR_FLAG);
        assert_true((fl & O_PATH) == 0);
        close(fd);
        /* A plain open of the same directory is not tagged. */
        fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_true((fcntl(fd, F_GETFL) & GLOVE_STORE_KEPT_DIR_FLAG) == 0);
        close(fd);
        assert_int_equal(chmod(f->dir, 0755), 0);
        fd = -1;
        assert_true(glove_store_dir_open_private(f->dir, geteuid(), false, &fd, &e) < 0);
        assert_string_equal(e.code, "dirs.insecure");
        assert_int_equal(fd, -1);
        assert_int_equal(chmod(f->dir, 0700), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_restart_keeps_sessions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_retry_and_conflict, setup, teardown),
                cmocka_unit_test_setup_teardown(test_transitions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_truncate_every_offset_of_last_record, setup, teardown),
                cmocka_unit_test_setup_teardown(test_flip_every_byte, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reorder_and_duplicate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_grow_externally, setup, teardown),
                cmocka_unit_test_setup_teardown(test_torn_tail_past_seal_is_recovered, setup, teardown),
                cmocka_unit_test_setup_teardown(test_semantic_replay_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_plan_bytes_at_replay, setup, teardown),
                cmocka_unit_test_setup_teardown(test_second_writer_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_recorded_and_replayed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_refused_at_append, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_replay_rules, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_drops_retired_and_continues, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_interleaved_sessions_replay, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_automatically, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compact_crash_at_every_step, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_corruption_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tail_corruption_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_retention_waits_for_the_acknowledgement, setup, teardown),
                cmocka_unit_test_setup_teardown(test_private_dir_is_tagged_kept, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The apply reservation journal (glove/apply/journal.h): reservations and
 * every transition replayed to the same state, single use across every
 * transaction and restart, the order rules, strict replay of records
 * written directly with the generic layer, a changed byte, a torn tail, the
 * lock, the parent check, and the room kept for open transactions. Real
 * files in a private temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/apply/journal.h"
#include "glove/base/bytes.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/store/journal.h"

#define T0 1700000000000LL

struct env {
        char dir[128];
        char path[192];
        struct glove_apply_journal *j;
        int serial; /* makes the grant ids and digests of dig()/grant() unique */
};

static struct glove_error *fresh(struct glove_error *e) {
        memset(e, 0, sizeof(*e));
        return e;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p);
}

static struct env *env_in(const char *base) {
        struct env *e = calloc(1, sizeof(*e));
        snprintf(e->dir, sizeof(e->dir), "%s/glove-apply-journal.XXXXXX", base);
        if (!mkdtemp(e->dir))
                abort();
        snprintf(e->path, sizeof(e->path), "%s/apply.journal", e->dir);
        return e;
}

static int setup(void **state) {
        const char *base = getenv("TMPDIR");
        struct env *e = env_in(base && base[0] == '/' ? base : "/tmp");
        struct glove_error err = { 0 };
        if (glove_apply_journal_open(e->path, &e->j, &err) < 0) {
                fprintf(stderr, "open: %s: %s\n", err.code, err.message);
                return -1;
        }
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        glove_apply_journal_close(e->j);
        nftw(e->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(e);
        return 0;
}

static int reopen(struct env *e, struct glove_error *err) {
        glove_apply_journal_close(e->j);
        e->j = NULL;
        return glove_apply_journal_open(e->path, &e->j, fresh(err));
}

/* A 64-hex digest: kind letter, then the serial, padded with zeros. */
static void dig(char out[65], char kind, int serial) {
        snprintf(out, 65, "%c%063d", kind, serial);
}

/* A reservation with fresh grant id and digests; txid into out. */
static int reserve_n(struct env *e, int n, char txid[65], struct glove_error *err) {
        char grant[64], a[65], b[65], s[65];
        snprintf(grant, sizeof(grant), "sess-%d/work", n);
        dig(a, 'a', n);
        dig(b, 'b', n);
        dig(s, 'c', n);
        json_t *bind = json_pack("{s:s,s:i}", "session", "sess", "n", n);
        int r = glove_apply_journal_reserve(e->j, grant, a, b, s, bind, T0 + n, txid, fresh(err));
        json_decref(bind);
        return r;
}

static int reserve_new(struct env *e, char txid[65], struct glove_error *err) {
        return reserve_n(e, ++e->serial, txid, err);
}

/* Appends type with fields given as JSON text ("" for none). */
static int step(struct env *e, const char *txid, const char *type, const char *fields, struct glove_error *err) {
        json_t *f = NULL;
        if (fields[0]) {
                json_error_t je;
                f = json_loads(fields, 0, &je);
                assert_non_null(f);
        }
        int r = glove_apply_journal_append(e->j, txid, type, f, T0 + 100, fresh(err));
        json_decref(f);
        return r;
}

#define PREPARED "{\"candidate\":{\"name\":\".glove-apply-1\"}}"
#define COMMITTED "{\"exchange\":{\"parent\":{\"dev\":1,\"ino\":2}}}"
#define APPLIED "{\"outcome\":\"applied\",\"code\":null,\"receipt\":{\"r\":1}}"
#define FAILED "{\"outcome\":\"failed\",\"code\":\"apply.stale_baseline\",\"receipt\":{\"r\":2}}"
#define AMBIGUOUS "{\"code\":\"apply.exchange_unknown\"}"

static void expect_ok(struct env *e, const char *txid, const char *type, const char *fields) {
        struct glove_error err;
        int r = step(e, txid, type, fields, &err);
        if (r < 0)
                fprintf(stderr, "%s %s: %s: %s\n", type, fields, err.code, err.message);
        assert_int_equal(r, 0);
}

static off_t file_size(const char *path) {
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        return st.st_size;
}

/* A refused append: its code, and nothing written. */
static void expect_refused(struct env *e, const char *txid, const char *type, const char *fields, int errnum,
                           const char *code) {
        struct glove_error err;
        off_t before = file_size(e->path);
        enum glove_apply_state st = glove_apply_journal_find(e->j, txid) ? glove_apply_journal_find(e->j, txid)->state
                                                                         : GLOVE_APPLY_RESERVED;
        int r = step(e, txid, type, fields, &err);
        if (r != -errnum || !err.code || strcmp(err.code, code) != 0)
                fprintf(stderr, "%s %s: expected %s, got %d %s: %s\n", type, fields, code, r,
                        err.code ? err.code : "-", err.message);
        assert_int_equal(r, -errnum);
        assert_string_equal(err.code, code);
        assert_int_equal(file_size(e->path), before);
        if (glove_apply_journal_find(e->j, txid))
                assert_int_equal(glove_apply_journal_find(e->j, txid)->state, st);
}

/* The folded state as JSON, to compare across a reopen. */
static json_t *snapshot(const struct glove_apply_journal *j) {
        json_t *a = json_array();
        for (size_t i = 0; i < glove_apply_journal_count(j); i++) {
                const struct glove_apply_tx *t = glove_apply_journal_tx(j, i);
                json_array_append_new(
                        a, json_pack("{s:s,s:i,s:b,s:s,s:s,s:s,s:s,s:O?,s:O?,s:O?,s:O?,s:s?}", "txid", t->txid,
                                     "state", (int)t->state, "cleaned", t->cleaned, "grant", t->grant_id, "auth",
                                     t->authorization_digest, "stage", t->stage_manifest_digest, "base",
                                     t->baseline_manifest_digest, "reserved", t->reserved, "prepared", t->prepared,
                                     "committed", t->committed, "terminal", t->terminal, "ambiguous",
                                     t->ambiguous_code));
        }
        return a;
}

static void assert_replays(struct env *e) {
        json_t *before = snapshot(e->j);
        struct glove_error err;
        assert_int_equal(reopen(e, &err), 0);
        json_t *after = snapshot(e->j);
        assert_true(json_equal(before, after));
        json_decref(before);
        json_decref(after);
}

/* ---- the format, written independently of the code under test ---- */

static int t_chain(void *ctx, const uint8_t prev[32], uint64_t seq, const void *payload, size_t len,
                   uint8_t out[32], struct glove_error *err) {
        (void)ctx;
        static const char dom[] = "glove.apply.journal.v1";
        size_t n = sizeof(dom) + 32 + 12 + len;
        uint8_t *buf = malloc(n);
        memcpy(buf, dom, sizeof(dom));
        memcpy(buf + sizeof(dom), prev, 32);
        glove_put_be64(buf + sizeof(dom) + 32, seq);
        glove_put_be32(buf + sizeof(dom) + 40, (uint32_t)len);
        memcpy(buf + sizeof(dom) + 44, payload, len);
        int r = glove_digest_sha256(buf, n, out, err);
        free(buf);
        return r;
}

static int t_genesis(void *ctx, const uint8_t header[64], uint8_t out[32], struct glove_error *err) {
        (void)ctx;
        static const char dom[] = "glove.apply.genesis.v1";
        uint8_t buf[sizeof(dom) + 64];
        memcpy(buf, dom, sizeof(dom));
        memcpy(buf + sizeof(dom), header, 64);
        return glove_digest_sha256(buf, sizeof(buf), out, err);
}

static const struct glove_store_journal_format t_format = {
        .magic = { 'G', 'L', 'V', 'A', 'P', 'L', 'Y', '1' },
        .version = 1,
        .max_payload = 16384,
        .max_records = 100000,
        .max_bytes = 64ULL << 20,
        .chain = t_chain,
        .genesis = t_genesis,
};

struct payloads {
        char *v[16];
        size_t n;
};

static int collect(void *userdata, uint64_t seq, const void *payload, size_t len, const uint8_t tag[32],
                   struct glove_error *err) {
        (void)seq;
        (void)tag;
        (void)err;
        struct payloads *p = userdata;
        if (p->n < 16)
                p->v[p->n++] = strndup(payload, len);
        return 0;
}

/* Replaces the journal by one holding recs (JSON text) in order. */
static void write_journal(struct env *e, const char *const *recs, size_t n) {
        glove_apply_journal_close(e->j);
        e->j = NULL;
        char seal[256];
        snprintf(seal, sizeof(seal), "%s.seal", e->path);
        unlink(e->path);
        unlink(seal);
        struct glove_store_journal_open_options o = { .path = e->path, .owner = geteuid() };
        struct glove_store_journal *sj = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_store_journal_open(&t_format, &o, NULL, NULL, &sj, NULL, &err), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(glove_store_journal_append(sj, recs[i], strlen(recs[i]), NULL, NULL, &err), 0);
        glove_store_journal_close(sj);
}

#define TX1 "1111111111111111111111111111111111111111111111111111111111111111"
#define TX2 "2222222222222222222222222222222222222222222222222222222222222222"
#define DA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define DD "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define RES(tx, g, a, s)                                                                                           \
        "{\"at_ms\":1,\"authorization_digest\":\"" a "\",\"baseline_manifest_digest\":\"" DB "\",\"bindings\":{}," \
        "\"grant_id\":\"" g "\",\"stage_manifest_digest\":\"" s "\",\"txid\":\"" tx "\",\"type\":\"reserved\"}"
#define REC(tx, type, more) "{\"at_ms\":2," more "\"txid\":\"" tx "\",\"type\":\"" type "\"}"

/* ---- reservations and transitions ---- */

static void test_reserve_and_replay(void **state) {
        struct env *e = *state;
        struct glove_error err;
        char a[65], b[65], c[65], d[65], f[65];
        /* a: the whole applied path, with its bindings checked as stored. */
        json_t *bind = json_pack("{s:s,s:{s:i}}", "session", "s1", "source", "ino", 7);
        assert_int_equal(glove_apply_journal_reserve(e->j, "s1/work", DA, DB, DC, bind, T0, a, fresh(&err)), 0);
        json_object_set_new(bind, "session", json_string("changed"));
        const struct glove_apply_tx *t = glove_apply_journal_find(e->j, a);
        assert_non_null(t);
        assert_int_equal(strlen(a), 64);
        assert_string_equal(t->txid, a);
        assert_int_equal(t->state, GLOVE_APPLY_RESERVED);
        assert_string_equal(t->grant_id, "s1/work");
        assert_string_equal(t->authorization_digest, DA);
        assert_string_equal(t->baseline_manifest_digest, DB);
        assert_string_equal(t->stage_manifest_digest, DC);
        assert_string_equal(json_string_value(json_object_get(json_object_get(t->reserved, "bindings"), "session")),
                            "s1");
        json_decref(bind);
        expect_ok(e, a, "prepared", PREPARED);
        assert_int_equal(glove_apply_journal_find(e->j, a)->state, GLOVE_APPLY_PREPARED);
        expect_ok(e, a, "committed", COMMITTED);
        assert_int_equal(glove_apply_journal_find(e->j, a)->state, GLOVE_APPLY_COMMITTED);
        expect_ok(e, a, "terminal", APPLIED);
        t = glove_apply_journal_find(e->j, a);
        assert_int_equal(t->state, GLOVE_APPLY_APPLIED);
        assert_false(t->cleaned);
        assert_true(json_is_null(json_object_get(t->terminal, "code")));
        expect_ok(e, a, "cleaned", "");
        t = glove_apply_journal_find(e->j, a);
        assert_true(t->cleaned);
        assert_int_equal(t->state, GLOVE_APPLY_APPLIED);
        assert_string_equal(json_string_value(json_object_get(json_object_get(t->prepared, "candidate"), "name")),
                            ".glove-apply-1");
        assert_non_null(json_object_get(t->committed, "exchange"));
        /* b: prepared then failed; c: ambiguous twice; d: reserved only;
         * f: failed straight from reserved. */
        assert_int_equal(reserve_new(e, b, &err), 0);
        expect_ok(e, b, "prepared", PREPARED);
        expect_ok(e, b, "terminal", FAILED);
        assert_int_equal(glove_apply_journal_find(e->j, b)->state, GLOVE_APPLY_FAILED);
        assert_int_equal(reserve_new(e, c, &err), 0);
        expect_ok(e, c, "ambiguous", "{\"code\":\"apply.first\"}");
        expect_ok(e, c, "ambiguous", AMBIGUOUS);
        t = glove_apply_journal_find(e->j, c);
        assert_int_equal(t->state, GLOVE_APPLY_AMBIGUOUS);
        assert_string_equal(t->ambiguous_code, "apply.exchange_unknown");
        assert_int_equal(reserve_new(e, d, &err), 0);
        assert_int_equal(reserve_new(e, f, &err), 0);
        expect_ok(e, f, "terminal", FAILED);
        assert_string_equal(json_string_value(json_object_get(glove_apply_journal_find(e->j, f)->terminal, "code")),
                            "apply.stale_baseline");
        /* Lookups and order. */
        assert_int_equal(glove_apply_journal_count(e->j), 5);
        const char *order[] = { a, b, c, d, f };
        for (size_t i = 0; i < 5; i++)
                assert_string_equal(glove_apply_journal_tx(e->j, i)->txid, order[i]);
        assert_null(glove_apply_journal_tx(e->j, 5));
        assert_null(glove_apply_journal_find(e->j, TX1));
        assert_string_equal(glove_apply_journal_find_grant(e->j, "s1/work")->txid, a);
        assert_null(glove_apply_journal_find_grant(e->j, "s9/work"));
        assert_int_equal(glove_apply_journal_torn_bytes(e->j), 0);
        assert_replays(e);
        assert_int_equal(glove_apply_journal_count(e->j), 5);
        assert_true(glove_apply_journal_find(e->j, a)->cleaned);
        assert_string_equal(glove_apply_journal_find(e->j, c)->ambiguous_code, "apply.exchange_unknown");
        assert_int_equal(glove_apply_journal_find(e->j, d)->state, GLOVE_APPLY_RESERVED);
}

/* The bytes on disk: the documented format (read here with an independent
 * chain and genesis) and canonical records. */
static void test_format(void **state) {
        struct env *e = *state;
        struct glove_error err;
        char a[65];
        json_t *bind = json_pack("{s:s}", "session", "s1");
        assert_int_equal(glove_apply_journal_reserve(e->j, "s1/work", DA, DB, DC, bind, 5, a, fresh(&err)), 0);
        json_decref(bind);
        assert_int_equal(glove_apply_journal_append(e->j, a, "ambiguous", NULL, 6, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "apply.invalid_argument");
        json_t *f = json_pack("{s:s}", "code", "apply.x");
        assert_int_equal(glove_apply_journal_append(e->j, a, "ambiguous", f, 6, fresh(&err)), 0);
        json_decref(f);
        glove_apply_journal_close(e->j);
        e->j = NULL;
        int fd = open(e->path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        static char buf[1 << 16];
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        assert_true(n > 64);
        assert_memory_equal(buf, "GLVAPLY1", 8);
        struct payloads p = { 0 };
        struct glove_store_journal_scan scan;
        assert_int_equal(glove_store_journal_scan(&t_format, buf, (size_t)n, collect, &p, &scan, fresh(&err)), 0);
        assert_int_equal(p.n, 2);
        char want[1024];
        snprintf(want, sizeof(want),
                 "{\"at_ms\":5,\"authorization_digest\":\"%s\",\"baseline_manifest_digest\":\"%s\",\"bindings\":"
                 "{\"session\":\"s1\"},\"grant_id\":\"s1/work\",\"stage_manifest_digest\":\"%s\",\"txid\":\"%s\","
                 "\"type\":\"reserved\"}",
                 DA, DB, DC, a);
        assert_string_equal(p.v[0], want);
        snprintf(want, sizeof(want), "{\"at_ms\":6,\"code\":\"apply.x\",\"txid\":\"%s\",\"type\":\"ambiguous\"}", a);
        assert_string_equal(p.v[1], want);
        for (size_t i = 0; i < p.n; i++)
                free(p.v[i]);
        assert_int_equal(reopen(e, &err), 0);
}

/* ---- single use ---- */

static void expect_replayed(struct env *e, const char *g, const char *a, const char *s, const char *code) {
        struct glove_error err;
        char tx[65] = "";
        size_t count = glove_apply_journal_count(e->j);
        off_t before = file_size(e->path);
        json_t *bind = json_object();
        int r = glove_apply_journal_reserve(e->j, g, a, DD, s, bind, T0, tx, fresh(&err));
        json_decref(bind);
        if (r != -EEXIST || strcmp(err.code, code) != 0)
                fprintf(stderr, "expected %s: %d %s: %s\n", code, r, err.code ? err.code : "-", err.message);
        assert_int_equal(r, -EEXIST);
        assert_string_equal(err.code, code);
        assert_int_equal(glove_apply_journal_count(e->j), count);
        assert_int_equal(file_size(e->path), before);
}

/* Every combination that reuses something of the first transaction, in
 * the order authorization, grant, manifest. */
static void expect_all_replayed(struct env *e) {
        char a2[65], s2[65];
        dig(a2, 'e', 1);
        dig(s2, 'f', 1);
        expect_replayed(e, "s1/work", a2, s2, "apply.replayed_grant");
        expect_replayed(e, "s2/work", DA, s2, "apply.replayed_authorization");
        expect_replayed(e, "s2/work", a2, DC, "apply.replayed_manifest");
        expect_replayed(e, "s1/work", DA, DC, "apply.replayed_authorization");
        expect_replayed(e, "s2/work", DA, DC, "apply.replayed_authorization");
}

static void test_single_use(void **state) {
        struct env *e = *state;
        struct glove_error err;
        char a[65], b[65], a2[65], s2[65];
        json_t *bind = json_object();
        assert_int_equal(glove_apply_journal_reserve(e->j, "s1/work", DA, DB, DC, bind, T0, a, fresh(&err)), 0);
        expect_all_replayed(e);
        /* The same baseline is not single-use. */
        dig(a2, 'e', 2);
        dig(s2, 'f', 2);
        assert_int_equal(glove_apply_journal_reserve(e->j, "s3/work", a2, DB, s2, bind, T0, b, fresh(&err)), 0);
        /* Terminal, then cleaned, then after a restart: still used. */
        expect_ok(e, a, "terminal", FAILED);
        expect_all_replayed(e);
        expect_ok(e, b, "prepared", PREPARED);
        expect_ok(e, b, "committed", COMMITTED);
        expect_ok(e, b, "terminal", APPLIED);
        expect_ok(e, b, "cleaned", "");
        expect_replayed(e, "s3/work", DD, DD, "apply.replayed_grant");
        expect_replayed(e, "s4/work", a2, DD, "apply.replayed_authorization");
        expect_replayed(e, "s4/work", DD, s2, "apply.replayed_manifest");
        assert_int_equal(reopen(e, &err), 0);
        expect_all_replayed(e);
        expect_replayed(e, "s3/work", DD, DD, "apply.replayed_grant");
        expect_replayed(e, "s4/work", a2, DD, "apply.replayed_authorization");
        expect_replayed(e, "s4/work", DD, s2, "apply.replayed_manifest");
        json_decref(bind);
}

/* ---- the order rules ---- */

/* A fresh transaction brought to a state by the steps in path. */
static void tx_at(struct env *e, char tx[65], const char *path) {
        struct glove_error err;
        assert_int_equal(reserve_new(e, tx, &err), 0);
        if (strstr(path, "P"))
                expect_ok(e, tx, "prepared", PREPARED);
        if (strstr(path, "C"))
                expect_ok(e, tx, "committed", COMMITTED);
        if (strstr(path, "A"))
                expect_ok(e, tx, "terminal", APPLIED);
        if (strstr(path, "F"))
                expect_ok(e, tx, "terminal", FAILED);
        if (strstr(path, "X"))
                expect_ok(e, tx, "ambiguous", AMBIGUOUS);
        if (strstr(path, "K"))
                expect_ok(e, tx, "cleaned", "");
}

static void bad_step(struct env *e, const char *path, const char *type, const char *fields) {
        char tx[65];
        tx_at(e, tx, path);
        expect_refused(e, tx, type, fields, EINVAL, "apply.invalid_transition");
}

static void test_order(void **state) {
        struct env *e = *state;
        char tx[65];
        /* From reserved: committed, applied and cleaned skip a step. */
        bad_step(e, "", "committed", COMMITTED);
        bad_step(e, "", "terminal", APPLIED);
        bad_step(e, "", "cleaned", "");
        /* From prepared. */
        bad_step(e, "P", "prepared", PREPARED);
        bad_step(e, "P", "terminal", APPLIED);
        bad_step(e, "P", "cleaned", "");
        /* From committed: a committed exchange ends applied (or ambiguous). */
        bad_step(e, "PC", "terminal", FAILED);
        bad_step(e, "PC", "committed", COMMITTED);
        bad_step(e, "PC", "prepared", PREPARED);
        bad_step(e, "PC", "cleaned", "");
        /* After an applied terminal: no second terminal, no ambiguous. */
        bad_step(e, "PCA", "terminal", APPLIED);
        bad_step(e, "PCA", "terminal", FAILED);
        bad_step(e, "PCA", "ambiguous", AMBIGUOUS);
        bad_step(e, "PCA", "prepared", PREPARED);
        /* Cleaned once, and nothing after it. */
        bad_step(e, "PCAK", "cleaned", "");
        bad_step(e, "PCAK", "ambiguous", AMBIGUOUS);
        bad_step(e, "PCAK", "terminal", APPLIED);
        /* A failed terminal is final and never cleaned. */
        bad_step(e, "F", "cleaned", "");
        bad_step(e, "F", "terminal", FAILED);
        bad_step(e, "F", "ambiguous", AMBIGUOUS);
        bad_step(e, "PF", "committed", COMMITTED);
        /* Ambiguous is for the owner: only ambiguous follows it. */
        bad_step(e, "X", "terminal", FAILED);
        bad_step(e, "X", "terminal", APPLIED);
        bad_step(e, "X", "prepared", PREPARED);
        bad_step(e, "PX", "committed", COMMITTED);
        bad_step(e, "PCX", "terminal", APPLIED);
        bad_step(e, "PCX", "cleaned", "");
        /* And what is allowed. */
        tx_at(e, tx, "X");
        expect_ok(e, tx, "ambiguous", AMBIGUOUS);
        tx_at(e, tx, "PX");
        tx_at(e, tx, "PCX");
        tx_at(e, tx, "PF");
        tx_at(e, tx, "F");
        tx_at(e, tx, "PCAK");
        assert_replays(e);
}

/* ---- fields and arguments ---- */

static void test_bad_fields(void **state) {
        struct env *e = *state;
        struct glove_error err;
        char tx[65], pc[65];
        tx_at(e, tx, "");
        tx_at(e, pc, "PC");
        const char *const bad_reserved[][2] = {
                { "terminal", "{\"code\":\"apply.x\",\"receipt\":{}}" },
                { "terminal", "{\"outcome\":\"done\",\"code\":\"apply.x\",\"receipt\":{}}" },
                { "terminal", "{\"outcome\":\"failed\",\"code\":null,\"receipt\":{}}" },
                { "terminal", "{\"outcome\":\"failed\",\"receipt\":{}}" },
                { "terminal", "{\"outcome\":\"failed\",\"code\":\"Apply.X\",\"receipt\":{}}" },
                { "terminal", "{\"outcome\":\"failed\",\"code\":\"apply.x\"}" },
                { "terminal", "{\"outcome\":\"failed\",\"code\":\"apply.x\",\"receipt\":[]}" },
                { "terminal", "{\"outcome\":\"failed\",\"code\":\"apply.x\",\"receipt\":{},\"extra\":1}" },
                { "prepared", "" },
                { "prepared", "{\"candidate\":[]}" },
                { "prepared", "{\"candidate\":{\"size\":1.5}}" },
                { "prepared", "{\"candidate\":{},\"txid\":\"" TX1 "\"}" },
                { "prepared", "{\"candidate\":{},\"type\":\"prepared\"}" },
                { "prepared", "{\"candidate\":{},\"at_ms\":1}" },
                { "ambiguous", "" },
                { "ambiguous", "{\"code\":7}" },
                { "cleaned", "{\"why\":\"x\"}" },
                { "reserved", "" },
                { "finished", "" },
        };
        for (size_t i = 0; i < sizeof(bad_reserved) / sizeof(bad_reserved[0]); i++)
                expect_refused(e, tx, bad_reserved[i][0], bad_reserved[i][1], EINVAL, "apply.invalid_argument");
        expect_refused(e, pc, "terminal", "{\"outcome\":\"applied\",\"code\":\"apply.x\",\"receipt\":{}}", EINVAL,
                       "apply.invalid_argument");
        expect_refused(e, pc, "committed", "{\"exchange\":\"x\"}", EINVAL, "apply.invalid_argument");
        expect_refused(e, TX1, "prepared", PREPARED, ENOENT, "apply.unknown_transaction");
        json_t *f = json_pack("{s:{}}", "candidate");
        assert_int_equal(glove_apply_journal_append(e->j, tx, "prepared", f, -1, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "apply.invalid_argument");
        json_decref(f);
        /* Reservation arguments. */
        json_t *bind = json_object(), *arr = json_array();
        char out[65];
        const char *const grants[] = { "", "s 1/work", "s1/wörk", NULL };
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(glove_apply_journal_reserve(e->j, grants[i], DA, DB, DC, bind, T0, out, fresh(&err)),
                                 -EINVAL);
                assert_string_equal(err.code, "apply.invalid_argument");
        }
        const char *const digests[] = { "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "aa", DA "a",
                                        NULL };
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", digests[i], DB, DC, bind, T0, out, fresh(&err)),
                                 -EINVAL);
                assert_string_equal(err.code, "apply.invalid_argument");
                assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", DA, digests[i], DC, bind, T0, out, fresh(&err)),
                                 -EINVAL);
                assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", DA, DB, digests[i], bind, T0, out, fresh(&err)),
                                 -EINVAL);
        }
        assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", DA, DB, DC, arr, T0, out, fresh(&err)), -EINVAL);
        assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", DA, DB, DC, NULL, T0, out, fresh(&err)), -EINVAL);
        assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", DA, DB, DC, bind, -5, out, fresh(&err)), -EINVAL);
        json_object_set_new(bind, "ratio", json_real(0.5));
        assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", DA, DB, DC, bind, T0, out, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "apply.invalid_argument");
        /* A record over 16 KiB. */
        char *big = malloc(17000);
        memset(big, 'x', 16999);
        big[16999] = '\0';
        json_object_set_new(bind, "ratio", json_string(big));
        free(big);
        assert_int_equal(glove_apply_journal_reserve(e->j, "g/1", DA, DB, DC, bind, T0, out, fresh(&err)), -EMSGSIZE);
        assert_string_equal(err.code, "journal.bad_length");
        json_decref(bind);
        json_decref(arr);
        /* Nothing of this was written. */
        assert_int_equal(glove_apply_journal_count(e->j), 2);
        assert_int_equal(glove_apply_journal_find(e->j, tx)->state, GLOVE_APPLY_RESERVED);
        assert_replays(e);
        assert_int_equal(glove_apply_journal_count(e->j), 2);
}

/* ---- damaged and invalid journals ---- */

static void test_changed_byte(void **state) {
        struct env *e = *state;
        struct glove_error err;
        char tx[65];
        tx_at(e, tx, "P");
        glove_apply_journal_close(e->j);
        e->j = NULL;
        int fd = open(e->path, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        char byte;
        off_t at = GLOVE_STORE_JOURNAL_HEADER_LEN + 4 + 30;
        assert_int_equal(pread(fd, &byte, 1, at), 1);
        byte ^= 0x01;
        assert_int_equal(pwrite(fd, &byte, 1, at), 1);
        close(fd);
        assert_int_equal(glove_apply_journal_open(e->path, &e->j, fresh(&err)), -EBADMSG);
        assert_string_equal(err.code, "journal.chain_mismatch");
        assert_null(e->j);
}

static void expect_invalid(struct env *e, const char *const *recs, size_t n, const char *needle) {
        write_journal(e, recs, n);
        struct glove_error err;
        int r = glove_apply_journal_open(e->path, &e->j, fresh(&err));
        if (r >= 0 || !err.code || strcmp(err.code, "apply.journal_invalid") != 0 || !strstr(err.message, needle))
                fprintf(stderr, "expected journal_invalid with \"%s\": %d %s: %s\n", needle, r,
                        err.code ? err.code : "-", err.message);
        assert_int_equal(r, -EBADMSG);
        assert_null(e->j);
        assert_string_equal(err.code, "apply.journal_invalid");
        assert_non_null(strstr(err.message, needle));
}

#define APPLIED_F "\"code\":null,\"outcome\":\"applied\",\"receipt\":{},"
#define FAILED_F "\"code\":\"apply.x\",\"outcome\":\"failed\",\"receipt\":{},"

static void test_invalid_records(void **state) {
        struct env *e = *state;
        struct glove_error err;
        /* A valid hand-written journal opens: the test's format is the code's. */
        const char *good[] = {
                RES(TX1, "s1/g", DA, DC),
                REC(TX1, "prepared", "\"candidate\":{},"),
                REC(TX1, "committed", "\"exchange\":{},"),
                REC(TX1, "terminal", APPLIED_F),
                REC(TX1, "cleaned", ""),
                RES(TX2, "s2/g", DC, DA),
                REC(TX2, "ambiguous", "\"code\":\"apply.y\","),
        };
        write_journal(e, good, 7);
        assert_int_equal(glove_apply_journal_open(e->path, &e->j, fresh(&err)), 0);
        assert_int_equal(glove_apply_journal_count(e->j), 2);
        assert_true(glove_apply_journal_find(e->j, TX1)->cleaned);
        assert_int_equal(glove_apply_journal_find(e->j, TX2)->state, GLOVE_APPLY_AMBIGUOUS);
        /* Records that decode but break the order. */
        const char *skip[] = { RES(TX1, "s1/g", DA, DC), REC(TX1, "committed", "\"exchange\":{},") };
        expect_invalid(e, skip, 2, "record 2: a committed record for transaction " TX1 ", which is reserved");
        const char *fail_after_commit[] = { RES(TX1, "s1/g", DA, DC), REC(TX1, "prepared", "\"candidate\":{},"),
                                            REC(TX1, "committed", "\"exchange\":{},"), REC(TX1, "terminal", FAILED_F) };
        expect_invalid(e, fail_after_commit, 4, "record 4:");
        const char *after_ambiguous[] = { RES(TX1, "s1/g", DA, DC), REC(TX1, "ambiguous", "\"code\":\"apply.y\","),
                                          REC(TX1, "terminal", FAILED_F) };
        expect_invalid(e, after_ambiguous, 3, "record 3:");
        const char *twice[] = { RES(TX1, "s1/g", DA, DC), REC(TX1, "terminal", FAILED_F),
                                REC(TX1, "terminal", FAILED_F) };
        expect_invalid(e, twice, 3, "record 3:");
        const char *clean_failed[] = { RES(TX1, "s1/g", DA, DC), REC(TX1, "terminal", FAILED_F),
                                       REC(TX1, "cleaned", "") };
        expect_invalid(e, clean_failed, 3, "cleaned follows only an applied terminal");
        const char *unknown_tx[] = { RES(TX1, "s1/g", DA, DC), REC(TX2, "prepared", "\"candidate\":{},") };
        expect_invalid(e, unknown_tx, 2, "never reserved");
        const char *dup_tx[] = { RES(TX1, "s1/g", DA, DC), RES(TX1, "s2/g", DD, DB) };
        expect_invalid(e, dup_tx, 2, "reserved a second time");
        /* Single use holds in the file too. */
        const char *dup_grant[] = { RES(TX1, "s1/g", DA, DC), RES(TX2, "s1/g", DD, DB) };
        expect_invalid(e, dup_grant, 2, "apply.replayed_grant");
        const char *dup_auth[] = { RES(TX1, "s1/g", DA, DC), RES(TX2, "s2/g", DA, DB) };
        expect_invalid(e, dup_auth, 2, "apply.replayed_authorization");
        const char *dup_stage[] = { RES(TX1, "s1/g", DA, DC), RES(TX2, "s2/g", DD, DC) };
        expect_invalid(e, dup_stage, 2, "apply.replayed_manifest");
        /* Records that do not decode as the header says. */
        const char *unknown_type[] = { RES(TX1, "s1/g", DA, DC), REC(TX1, "finished", "") };
        expect_invalid(e, unknown_type, 2, "record 2: unknown record type \"finished\"");
        const char *not_canonical[] = { "{\"type\": \"reserved\"}" };
        expect_invalid(e, not_canonical, 1, "record 1:");
        const char *upper_tx[] = { RES("ABCDEF1111111111111111111111111111111111111111111111111111111111", "s1/g", DA,
                                       DC) };
        expect_invalid(e, upper_tx, 1, "$.txid is not 64 lowercase hex digits");
        const char *short_digest[] = { RES(TX1, "s1/g", "abc", DC) };
        expect_invalid(e, short_digest, 1, "authorization_digest");
        const char *bad_grant[] = { RES(TX1, "s1 g", DA, DC) };
        expect_invalid(e, bad_grant, 1, "$.grant_id");
        const char *extra[] = { RES(TX1, "s1/g", DA, DC), REC(TX1, "cleaned", "\"why\":1,") };
        expect_invalid(e, extra, 2, "record 2:");
        const char *no_receipt[] = { RES(TX1, "s1/g", DA, DC),
                                     REC(TX1, "terminal", "\"code\":\"apply.x\",\"outcome\":\"failed\",") };
        expect_invalid(e, no_receipt, 2, "receipt");
        const char *neg_time[] = { "{\"at_ms\":-1,\"authorization_digest\":\"" DA "\",\"baseline_manifest_digest\":\"" DB
                                   "\",\"bindings\":{},\"grant_id\":\"s/g\",\"stage_manifest_digest\":\"" DC
                                   "\",\"txid\":\"" TX1 "\",\"type\":\"reserved\"}" };
        expect_invalid(e, neg_time, 1, "at_ms");
        const char *not_object[] = { "[1]" };
        expect_invalid(e, not_object, 1, "record 1:");
}

/* A record cut short by a crash inside an append is cut off and kept. */
static void test_torn_tail(void **state) {
        struct env *e = *state;
        struct glove_error err;
        char tx[65], tx2[65];
        tx_at(e, tx, "P");
        glove_apply_journal_close(e->j);
        e->j = NULL;
        int fd = open(e->path, O_WRONLY | O_APPEND | O_CLOEXEC);
        assert_true(fd >= 0);
        const uint8_t partial[10] = { 0, 0, 0, 200, '{', '"', 'a', 't', '_', 'm' };
        assert_int_equal(write(fd, partial, sizeof(partial)), (ssize_t)sizeof(partial));
        close(fd);
        assert_int_equal(glove_apply_journal_open(e->path, &e->j, fresh(&err)), 0);
        assert_int_equal(glove_apply_journal_torn_bytes(e->j), sizeof(partial));
        assert_int_equal(glove_apply_journal_count(e->j), 1);
        assert_int_equal(glove_apply_journal_find(e->j, tx)->state, GLOVE_APPLY_PREPARED);
        char torn[256];
        snprintf(torn, sizeof(torn), "%s.torn", e->path);
        assert_int_equal(file_size(torn), sizeof(partial));
        assert_int_equal(reserve_new(e, tx2, &err), 0);
        assert_replays(e);
        assert_int_equal(glove_apply_journal_torn_bytes(e->j), 0);
        assert_int_equal(glove_apply_journal_count(e->j), 2);
}

/* ---- the file and its directory ---- */

static void test_locked(void **state) {
        struct env *e = *state;
        struct glove_error err;
        struct glove_apply_journal *second = NULL;
        assert_int_equal(glove_apply_journal_open(e->path, &second, fresh(&err)), -EBUSY);
        assert_string_equal(err.code, "journal.locked");
        assert_null(second);
        /* Another process. */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct glove_apply_journal *j = NULL;
                struct glove_error cerr = { 0 };
                int r = glove_apply_journal_open(e->path, &j, &cerr);
                _exit(r == -EBUSY && cerr.code && strcmp(cerr.code, "journal.locked") == 0 ? 0 : 1);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        /* Released at close. */
        assert_int_equal(reopen(e, &err), 0);
}

static void test_directory(void **state) {
        struct env *e = *state;
        struct glove_error err;
        glove_apply_journal_close(e->j);
        e->j = NULL;
        assert_int_equal(chmod(e->dir, 0750), 0);
        assert_int_equal(glove_apply_journal_open(e->path, &e->j, fresh(&err)), -EPERM);
        assert_string_equal(err.code, "dirs.insecure");
        assert_null(e->j);
        assert_int_equal(chmod(e->dir, 0700), 0);
        /* The directory is not created. */
        char missing[256];
        snprintf(missing, sizeof(missing), "%s/sub/apply.journal", e->dir);
        assert_int_equal(glove_apply_journal_open(missing, &e->j, fresh(&err)), -ENOENT);
        assert_string_equal(err.code, "path.missing");
        assert_null(e->j);
        struct stat st;
        assert_true(stat(missing, &st) < 0);
        assert_int_equal(glove_apply_journal_open("apply.journal", &e->j, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "journal.parent_insecure");
        /* The journal file itself. */
        assert_int_equal(chmod(e->path, 0644), 0);
        assert_int_equal(glove_apply_journal_open(e->path, &e->j, fresh(&err)), -EPERM);
        assert_string_equal(err.code, "journal.file_insecure");
        assert_int_equal(chmod(e->path, 0600), 0);
        assert_int_equal(glove_apply_journal_open(e->path, &e->j, fresh(&err)), 0);
}

/* ---- room for the open transactions ---- */

static int big_reserve(struct env *e, int n, char tx[65], struct glove_error *err) {
        static char pad[15800];
        memset(pad, 'p', sizeof(pad) - 1);
        char grant[64], a[65], b[65], s[65];
        snprintf(grant, sizeof(grant), "sess-%d/work", n);
        dig(a, 'a', n);
        dig(b, 'b', n);
        dig(s, 'c', n);
        json_t *bind = json_pack("{s:s}", "pad", pad);
        int r = glove_apply_journal_reserve(e->j, grant, a, b, s, bind, T0, tx, fresh(err));
        json_decref(bind);
        return r;
}

/* Reservations with the largest records are refused once the journal could
 * not hold the rest of every open one; then every open one still finishes
 * with the largest records. */
static void test_full(void **state) {
        (void)state;
        struct stat st;
        if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode) || access("/dev/shm", W_OK) < 0) {
                fprintf(stderr, "skipped: no writable /dev/shm to fill a journal in\n");
                skip();
        }
        struct env *e = env_in("/dev/shm");
        struct glove_error err = { 0 };
        assert_int_equal(glove_apply_journal_open(e->path, &e->j, &err), 0);
        static char txs[4000][65];
        static char pad[15800];
        memset(pad, 'q', sizeof(pad) - 1);
        json_t *cand = json_pack("{s:{s:s}}", "candidate", "pad", pad);
        json_t *exch = json_pack("{s:{s:s}}", "exchange", "pad", pad);
        json_t *term = json_pack("{s:s,s:n,s:{s:s}}", "outcome", "applied", "code", "receipt", "pad", pad);
        /* Rounds: reserve until refused, then finish every open one with
         * the largest records (the records are a little smaller than the
         * largest, so the next round may fit a few more). */
        int n = 0, round = 0, done = 0;
        for (;; round++) {
                assert_true(round < 20);
                int r = 0, first = n;
                while (n < 4000 && (r = big_reserve(e, n, txs[n], &err)) == 0)
                        n++;
                assert_int_equal(r, -ENOSPC);
                assert_string_equal(err.code, "journal.full");
                assert_int_equal(glove_apply_journal_count(e->j), (size_t)n);
                if (round == 0)
                        assert_true(n > 100);
                if (n == first)
                        break;
                for (; done < n; done++) {
                        const char *t = txs[done];
                        assert_int_equal(glove_apply_journal_append(e->j, t, "prepared", cand, T0, fresh(&err)), 0);
                        assert_int_equal(glove_apply_journal_append(e->j, t, "committed", exch, T0, fresh(&err)), 0);
                        assert_int_equal(glove_apply_journal_append(e->j, t, "terminal", term, T0, fresh(&err)), 0);
                        r = glove_apply_journal_append(e->j, t, "cleaned", NULL, T0, fresh(&err));
                        if (r < 0)
                                fprintf(stderr, "cleaned %d: %s: %s\n", done, err.code, err.message);
                        assert_int_equal(r, 0);
                }
        }
        json_decref(cand);
        json_decref(exch);
        json_decref(term);
        /* Nothing is open and nothing more fits: the journal is used up to
         * the last reservation's worth. */
        assert_true((uint64_t)file_size(e->path) > GLOVE_APPLY_JOURNAL_MAX_BYTES - 5 * (16384 + 36));
        assert_int_equal(reopen(e, &err), 0);
        assert_int_equal(glove_apply_journal_count(e->j), (size_t)n);
        glove_apply_journal_close(e->j);
        nftw(e->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_reserve_and_replay, setup, teardown),
                cmocka_unit_test_setup_teardown(test_format, setup, teardown),
                cmocka_unit_test_setup_teardown(test_single_use, setup, teardown),
                cmocka_unit_test_setup_teardown(test_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_fields, setup, teardown),
                cmocka_unit_test_setup_teardown(test_changed_byte, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid_records, setup, teardown),
                cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
                cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
                cmocka_unit_test_setup_teardown(test_directory, setup, teardown),
                cmocka_unit_test(test_full),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

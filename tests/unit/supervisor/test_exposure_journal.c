/* SPDX-License-Identifier: Apache-2.0 */
/* The exposure journal (glove/supervisor/exposure.h, "The exposure
 * journal"): replay to the same state, the file checks and the lock, damaged
 * journals, records that break the sequence rules, the recovery lookup and
 * the digest vector of docs/digests.md. */
#include "exposure_helpers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "exposure_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/store/journal.h"

static int setup(void **state) {
        struct xenv *e = xenv_new();
        struct glove_error err = { 0 };
        if (xopen(e, T0, &err) < 0) {
                fprintf(stderr, "open: %s: %s\n", err.code, err.message);
                return -1;
        }
        *state = e;
        return 0;
}

static int teardown(void **state) {
        xenv_free(*state);
        return 0;
}

static int reopen(struct xenv *e, int64_t now, struct glove_error *err) {
        glove_exposures_close(e->x);
        e->x = NULL;
        return xopen(e, now, fresh(err));
}

/* ---- replay ---- */

/* Closes and reopens the registry; the catalog and list must not change. */
static void assert_replays(struct xenv *e, int64_t now) {
        json_t *cat = glove_exposures_catalog(e->x, now), *list = glove_exposures_list(e->x, now);
        struct glove_error err = { 0 };
        assert_int_equal(reopen(e, now, &err), 0);
        json_t *cat2 = glove_exposures_catalog(e->x, now), *list2 = glove_exposures_list(e->x, now);
        assert_true(json_equal(cat, cat2));
        assert_true(json_equal(list, list2));
        json_decref(cat);
        json_decref(cat2);
        json_decref(list);
        json_decref(list2);
}

static void test_replay_identical(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        json_t *a = NULL;
        assert_replays(e, T0);
        assert_int_equal(xcreate(e, "a", T0, &a, fresh(&err)), 0);
        assert_replays(e, T0 + 1);
        assert_int_equal(xcreate(e, "b", T0 + 2, NULL, fresh(&err)), 0);
        assert_replays(e, T0 + 3);
        assert_int_equal(glove_exposures_revoke(e->x, xid(a), 0, T0 + 4, NULL, fresh(&err)), 0);
        assert_replays(e, T0 + 5);
        assert_int_equal(xcreate(e, "a", T0 + 6, NULL, fresh(&err)), 0);
        assert_replays(e, T0 + 7);
        /* Opening past b's expiry writes its expire record. */
        int64_t later = T0 + 2 + TTL_MAX * 1000LL;
        assert_int_equal(reopen(e, later, &err), 0);
        json_t *cat = glove_exposures_catalog(e->x, later);
        size_t i;
        json_t *v;
        int expired = 0;
        json_array_foreach(json_object_get(cat, "exposures"), i, v) {
                expired += strcmp(json_string_value(json_object_get(v, "state")), "expired") == 0;
        }
        assert_int_equal(expired, 1);
        json_decref(cat);
        assert_int_equal(glove_exposures_expire_due(e->x, later, fresh(&err)), 0);
        assert_replays(e, later);
        json_decref(a);
}

/* ---- the file ---- */

static void test_locked_and_insecure(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        struct glove_exposures *second = NULL;
        struct glove_exposures_options o = { .policy = e->policy, .journal_path = e->journal, .owner = getuid() };
        assert_int_equal(glove_exposures_open(&o, T0, &second, fresh(&err)), -EBUSY);
        assert_string_equal(err.code, "journal.locked");
        assert_null(second);
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(chmod(e->journal, 0644), 0);
        assert_true(xopen(e, T0, fresh(&err)) < 0);
        assert_string_equal(err.code, "journal.file_insecure");
        assert_int_equal(chmod(e->journal, 0600), 0);
        assert_int_equal(xopen(e, T0, fresh(&err)), 0);
}

static void test_damaged(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        assert_int_equal(xcreate(e, "a", T0, NULL, fresh(&err)), 0);
        glove_exposures_close(e->x);
        e->x = NULL;
        struct stat st;
        assert_int_equal(stat(e->journal, &st), 0);
        int fd = open(e->journal, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        /* One byte of the payload changed. */
        char byte;
        off_t at = GLOVE_STORE_JOURNAL_HEADER_LEN + 4 + 20;
        assert_int_equal(pread(fd, &byte, 1, at), 1);
        byte ^= 0x01;
        assert_int_equal(pwrite(fd, &byte, 1, at), 1);
        assert_true(xopen(e, T0, fresh(&err)) < 0);
        assert_string_equal(err.code, "journal.chain_mismatch");
        byte ^= 0x01;
        assert_int_equal(pwrite(fd, &byte, 1, at), 1);
        assert_int_equal(xopen(e, T0, fresh(&err)), 0);
        glove_exposures_close(e->x);
        e->x = NULL;
        /* Cut inside the record. */
        assert_int_equal(ftruncate(fd, st.st_size - 5), 0);
        assert_true(xopen(e, T0, fresh(&err)) < 0);
        assert_string_equal(err.code, "journal.truncated");
        /* Cut at the record boundary: the seal says a record is missing. */
        assert_int_equal(ftruncate(fd, GLOVE_STORE_JOURNAL_HEADER_LEN), 0);
        assert_true(xopen(e, T0, fresh(&err)) < 0);
        assert_string_equal(err.code, "journal.resized");
        close(fd);
}

/* ---- hand-built journals ---- */

struct payloads {
        char *v[16];
        size_t len[16], n;
};

static int collect(void *userdata, uint64_t seq, const void *payload, size_t len,
                   const uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)seq;
        (void)tag;
        (void)err;
        struct payloads *p = userdata;
        p->v[p->n] = strndup(payload, len);
        p->len[p->n++] = len;
        return 0;
}

/* The records of the registry's journal (the registry is closed). */
static void read_records(struct xenv *e, struct payloads *out) {
        glove_exposures_close(e->x);
        e->x = NULL;
        memset(out, 0, sizeof(*out));
        int fd = open(e->journal, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        static char buf[1 << 16];
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        assert_true(n > 0);
        struct glove_store_journal_scan scan;
        struct glove_error err = { 0 };
        assert_int_equal(glove_store_journal_scan(&exp_journal_format, buf, (size_t)n, collect, out, &scan, &err), 0);
}

/* Replaces the journal by one holding recs (canonical JSON strings) in order. */
static void write_journal(struct xenv *e, const char *const *recs, size_t n) {
        char seal[800];
        snprintf(seal, sizeof(seal), "%s%s", e->journal, GLOVE_STORE_JOURNAL_SEAL_SUFFIX);
        unlink(e->journal);
        unlink(seal);
        struct glove_store_journal_open_options o = { .path = e->journal, .owner = getuid() };
        struct glove_store_journal *j = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_store_journal_open(&exp_journal_format, &o, NULL, NULL, &j, NULL, &err), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(glove_store_journal_append(j, recs[i], strlen(recs[i]), NULL, NULL, &err), 0);
        glove_store_journal_close(j);
}

static void expect_invalid(struct xenv *e, const char *const *recs, size_t n, const char *needle) {
        write_journal(e, recs, n);
        struct glove_error err = { 0 };
        int r = xopen(e, T0, &err);
        if (r >= 0 || !err.code || strcmp(err.code, "exposure.journal_invalid") != 0 || !strstr(err.message, needle))
                fprintf(stderr, "expected journal_invalid with \"%s\": r=%d %s: %s\n", needle, r,
                        err.code ? err.code : "-", err.message);
        assert_true(r < 0);
        assert_null(e->x);
        assert_string_equal(err.code, "exposure.journal_invalid");
        assert_non_null(strstr(err.message, needle));
}

#define ID_A "exp-0123456789abcdef0123456789abcdef"
#define ID_B "exp-fedcba9876543210fedcba9876543210"
#define NONCE "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

/* A create record with correct digests (canonical JSON, malloc'd). */
static char *create_rec(const char *id, int64_t gen, const char *rel, int64_t created, const char *label) {
        struct exp_entry en = { .root_id = (char *)"src", .rel = (char *)rel };
        snprintf(en.id, sizeof(en.id), "%s", id);
        struct exp_gen g = {
                .generation = gen, .root = { 1, 2 }, .source = { 1, 4 }, .parent = { 1, 3 },
                .label = (char *)label, .created_at_ms = created, .expires_at_ms = created + 1000,
        };
        snprintf(g.nonce, sizeof(g.nonce), "%s", NONCE);
        g.modes = json_pack("[{s:s,s:s,s:s,s:i}]", "access", "read", "cleanup_policy", "remove", "materialization",
                            "bind", "max_bytes", 10);
        g.runtimes = json_pack("[s]", "codex-safe");
        struct glove_error err = { 0 };
        assert_int_equal(exp_source_digest(g.nonce, &g.parent, &g.source, g.source_digest, &err), 0);
        assert_int_equal(exp_scope_digest(id, gen, g.nonce, "src", rel, g.modes, g.runtimes, g.expires_at_ms,
                                          g.source_digest, g.scope_digest, &err),
                         0);
        json_t *rec = exp_create_record(&en, &g);
        char *out = NULL;
        assert_int_equal(glove_json_encode_canonical(rec, &out, NULL, &err), 0);
        json_decref(rec);
        json_decref(g.modes);
        json_decref(g.runtimes);
        return out;
}

static char *state_rec(const char *type, const char *id, int64_t gen, int64_t at) {
        json_t *rec = exp_state_record(type, id, gen, at);
        char *out = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_json_encode_canonical(rec, &out, NULL, &err), 0);
        json_decref(rec);
        return out;
}

static char *replace(const char *s, const char *from, const char *to) {
        const char *at = strstr(s, from);
        assert_non_null(at);
        size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
        char *out = malloc(n);
        snprintf(out, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
        return out;
}

static void test_sequence_rules(void **state) {
        struct xenv *e = *state;
        glove_exposures_close(e->x);
        e->x = NULL;
        char *a1 = create_rec(ID_A, 1, "a", T0, "a"), *a2 = create_rec(ID_A, 2, "a", T0 + 20, "a");
        char *b1 = create_rec(ID_B, 1, "a", T0 + 30, "b"), *b1b = create_rec(ID_B, 1, "b", T0 + 30, "b");
        char *rev1 = state_rec("revoke", ID_A, 1, T0 + 10), *rev2 = state_rec("revoke", ID_A, 2, T0 + 10);
        char *early = state_rec("expire", ID_A, 1, T0 + 999), *exp1 = state_rec("expire", ID_A, 1, T0 + 1000);
        char *back = state_rec("revoke", ID_A, 1, T0 - 1), *revb = state_rec("revoke", ID_B, 1, T0 + 40);
        char *tampered = replace(a1, "\"path\":\"a\"", "\"path\":\"c\"");
        char *noncanon = replace(a1, "{\"created_at_ms\"", "{ \"created_at_ms\"");
        char *unknown = replace(a1, "{\"created_at_ms\"", "{\"color\":1,\"created_at_ms\"");
        char *badtype = replace(rev1, "\"revoke\"", "\"rename\"");

        /* The positive control: create, revoke, generation 2, another project. */
        const char *good[] = { a1, rev1, a2, b1b };
        write_journal(e, good, 4);
        struct glove_error err = { 0 };
        assert_int_equal(xopen(e, T0 + 100, &err), 0);
        json_t *list = glove_exposures_list(e->x, T0 + 100);
        assert_int_equal(json_array_size(json_object_get(list, "exposures")), 2);
        json_decref(list);
        glove_exposures_close(e->x);
        e->x = NULL;

        const char *reorder[] = { rev1, a1 };
        expect_invalid(e, reorder, 2, "record 1:");
        const char *gap[] = { a2 };
        expect_invalid(e, gap, 1, "record 1:");
        const char *while_live[] = { a1, a2 };
        expect_invalid(e, while_live, 2, "record 2:");
        const char *same_project[] = { a1, b1 };
        expect_invalid(e, same_project, 2, "record 2:");
        const char *wrong_gen[] = { a1, rev2 };
        expect_invalid(e, wrong_gen, 2, "record 2:");
        const char *twice[] = { a1, rev1, rev1 };
        expect_invalid(e, twice, 3, "record 3:");
        const char *time_back[] = { a1, back };
        expect_invalid(e, time_back, 2, "record 2:");
        const char *before_expiry[] = { a1, early };
        expect_invalid(e, before_expiry, 2, "record 2:");
        const char *unknown_id[] = { a1, revb };
        expect_invalid(e, unknown_id, 2, "record 2:");
        const char *digest[] = { tampered };
        expect_invalid(e, digest, 1, "scope_digest");
        const char *not_canonical[] = { noncanon };
        expect_invalid(e, not_canonical, 1, "record 1:");
        const char *extra_field[] = { unknown };
        expect_invalid(e, extra_field, 1, "color");
        const char *bad_type[] = { a1, badtype };
        expect_invalid(e, bad_type, 2, "record 2:");
        /* An expire at the expiry is fine. */
        char *a2late = create_rec(ID_A, 2, "a", T0 + 2000, "a");
        const char *expire_ok[] = { a1, exp1, a2late };
        write_journal(e, expire_ok, 3);
        assert_int_equal(xopen(e, T0 + 100, fresh(&err)), 0);

        free(a2late);
        char *all[] = { a1, a2, b1, b1b, rev1, rev2, early, exp1, back, revb, tampered, noncanon, unknown, badtype };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(all); i++)
                free(all[i]);
}

static void test_reorder_real(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        json_t *a = NULL;
        assert_int_equal(xcreate(e, "a", T0, &a, fresh(&err)), 0);
        assert_int_equal(glove_exposures_revoke(e->x, xid(a), 0, T0 + 1, NULL, fresh(&err)), 0);
        json_decref(a);
        struct payloads p;
        read_records(e, &p);
        assert_int_equal(p.n, 2);
        const char *swapped[] = { p.v[1], p.v[0] };
        expect_invalid(e, swapped, 2, "record 1:");
        const char *dup[] = { p.v[0], p.v[0] };
        expect_invalid(e, dup, 2, "record 2:");
        const char *same[] = { p.v[0], p.v[1] };
        write_journal(e, same, 2);
        assert_int_equal(xopen(e, T0 + 2, fresh(&err)), 0);
        for (size_t i = 0; i < p.n; i++)
                free(p.v[i]);
}

/* ---- recovery ---- */

static void test_recover_parent(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        json_t *a = NULL;
        char dir[1024];
        xsub(e, "parent", dir, sizeof(dir));
        xmkdir(dir);
        assert_int_equal(xcreate(e, "parent/proj", T0, &a, fresh(&err)), 0);
        char id[GLOVE_EXPOSURE_ID_SIZE], scope[GLOVE_EXPOSURE_DIGEST_HEX_SIZE], src[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
        snprintf(id, sizeof(id), "%s", xid(a));
        snprintf(scope, sizeof(scope), "%s", json_string_value(json_object_get(a, "scope_digest")));
        json_decref(a);
        assert_int_equal(glove_exposures_source_identity_digest(e->x, id, 1, src, fresh(&err)), 0);
        assert_int_equal(strlen(src), 64);
        assert_int_equal(glove_exposures_source_identity_digest(e->x, id, 2, src, fresh(&err)), -ENOENT);
        assert_string_equal(err.code, "exposure.unknown");
        assert_int_equal(glove_exposures_source_identity_digest(e->x, id, 1, src, fresh(&err)), 0);
        assert_int_equal(glove_exposures_revoke(e->x, id, 0, T0 + 1, NULL, fresh(&err)), 0);

        struct glove_exposure_parent par;
        assert_int_equal(glove_exposures_recover_parent(e->x, id, 1, scope, src, &par, fresh(&err)), 0);
        assert_string_equal(par.name, "proj");
        assert_true(par.source_matches);
        struct stat a_st, b_st;
        assert_int_equal(fstat(par.parent_fd, &a_st), 0);
        assert_int_equal(stat(dir, &b_st), 0);
        assert_true(a_st.st_ino == b_st.st_ino && a_st.st_dev == b_st.st_dev);
        close(par.parent_fd);

        char wrong[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
        snprintf(wrong, sizeof(wrong), "%s", scope);
        wrong[0] = wrong[0] == '0' ? '1' : '0';
        assert_int_equal(glove_exposures_recover_parent(e->x, id, 1, wrong, src, &par, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.digest_mismatch");
        assert_int_equal(par.parent_fd, -1);
        assert_int_equal(glove_exposures_recover_parent(e->x, id, 1, scope, wrong, &par, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.digest_mismatch");
        assert_int_equal(glove_exposures_recover_parent(e->x, id, 3, scope, src, &par, fresh(&err)), -ENOENT);
        assert_string_equal(err.code, "exposure.unknown");

        /* The project replaced: the parent is still found, the source does not match. */
        char proj[1024], old[1100];
        xsub(e, "parent/proj", proj, sizeof(proj));
        snprintf(old, sizeof(old), "%s.old", proj);
        assert_int_equal(rename(proj, old), 0);
        xmkdir(proj);
        assert_int_equal(glove_exposures_recover_parent(e->x, id, 1, scope, src, &par, fresh(&err)), 0);
        assert_false(par.source_matches);
        close(par.parent_fd);
        /* The parent replaced at the same path. */
        char pold[1100];
        snprintf(pold, sizeof(pold), "%s.old", dir);
        assert_int_equal(rename(dir, pold), 0);
        xmkdir(dir);
        assert_int_equal(glove_exposures_recover_parent(e->x, id, 1, scope, src, &par, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.changed");
        assert_int_equal(par.parent_fd, -1);
        /* A link in its place. */
        assert_int_equal(rmdir(dir), 0);
        assert_int_equal(symlink(pold, dir), 0);
        assert_int_equal(glove_exposures_recover_parent(e->x, id, 1, scope, src, &par, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.changed");
}

/* ---- the digest vector (docs/digests.md, "Exposure digests") ---- */

static void test_digest_vector(void **state) {
        (void)state;
        struct exp_ident parent = { 2049, 131073 }, source = { 2049, 131074 };
        char sd[GLOVE_EXPOSURE_DIGEST_HEX_SIZE], sc[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
        struct glove_error err = { 0 };
        assert_int_equal(exp_source_digest(NONCE, &parent, &source, sd, &err), 0);
        assert_string_equal(sd, "9801f69093969be0417d5aab26ffec90af0552f6955c58f638bf7d1168a09ad2");
        json_t *modes = json_pack("[{s:s,s:s,s:s,s:I}]", "access", "read", "cleanup_policy", "remove",
                                  "materialization", "bind", "max_bytes", (json_int_t)1073741824);
        json_t *rts = json_pack("[s]", "codex-safe");
        assert_int_equal(exp_scope_digest(ID_A, 1, NONCE, "src", "app/web", modes, rts, 1767229200000LL, sd, sc, &err),
                         0);
        assert_string_equal(sc, "143f107065d81d667f10c86f75f6d7603b406568316e85c24bc70c73640982bc");
        json_decref(modes);
        json_decref(rts);
}

/* ---- appends are checked before they are written ---- */

/* Every record gloved appends passes replay's checks first: a request
 * replay would refuse is refused before the journal changes, so gloved can
 * always start again on what it wrote (a path with a control character was
 * once appended, then refused at the next start). */
static void test_append_checked(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        json_t *a = NULL;
        assert_int_equal(xcreate(e, "a", T0, &a, fresh(&err)), 0);
        struct payloads p;
        read_records(e, &p);
        assert_int_equal(reopen(e, T0, &err), 0);
        uint64_t n = glove_store_journal_records(e->x->journal);

        /* A project named with a control character. */
        char q[1024];
        xsub(e, "new\nline", q, sizeof(q));
        xmkdir(q);
        struct glove_exposure_request req = { .path = q, .label = "ok" };
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.path_invalid");
        assert_non_null(strstr(err.message, "0x0a"));
        /* A clock past what the journal records. */
        req = (struct glove_exposure_request){ .path = q };
        xsub(e, "b", q, sizeof(q));
        xmkdir(q);
        assert_int_equal(glove_exposures_create(e->x, &req, INT64_MAX - 5, NULL, fresh(&err)), -ERANGE);
        assert_string_equal(err.code, "exposure.clock");
        assert_int_equal(glove_store_journal_records(e->x->journal), n);

        /* Records replay would refuse, handed to the append itself. */
        json_t *bad[4];
        bad[0] = exp_state_record("revoke", "exp-00000000000000000000000000000000", 1, T0 + 2);
        bad[1] = exp_state_record("revoke", xid(a), 2, T0 + 2);
        bad[2] = exp_state_record("revoke", xid(a), 1, T0 - 1);
        bad[3] = exp_state_record("revoke", xid(a), 1, INT64_MAX);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(bad); i++) {
                assert_int_equal(exp_append(e->x, bad[i], fresh(&err)), -EINVAL);
                assert_string_equal(err.code, "exposure.record_refused");
                assert_non_null(strstr(err.message, "nothing was appended"));
                json_decref(bad[i]);
        }
        /* A pair whose second record is refused appends neither: the
         * revoke that would have ended the live generation is not written. */
        json_t *rec = json_loadb(p.v[0], strlen(p.v[0]), 0, NULL);
        assert_non_null(rec);
        json_object_set_new(rec, "generation", json_integer(2));
        json_object_set_new(rec, "path", json_string("a\n"));
        json_t *end = exp_state_record("revoke", xid(a), 1, T0 + 2);
        assert_int_equal(exp_append_pair(e->x, end, rec, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.record_refused");
        json_object_set_new(rec, "path", json_string("a"));
        assert_int_equal(exp_append_pair(e->x, end, rec, fresh(&err)), -EINVAL); /* the digests differ */
        assert_string_equal(err.code, "exposure.record_refused");
        assert_non_null(strstr(err.message, "digest"));
        json_decref(end);
        json_decref(rec);
        for (size_t i = 0; i < p.n; i++)
                free(p.v[i]);
        assert_int_equal(glove_store_journal_records(e->x->journal), n);
        json_t *cat = glove_exposures_catalog(e->x, T0 + 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(cat, "exposures"), 0),
                                                               "state")),
                            "live");
        json_decref(cat);
        assert_replays(e, T0 + 3);
        /* The registry still appends what it builds. */
        assert_int_equal(glove_exposures_revoke(e->x, xid(a), 0, T0 + 4, NULL, fresh(&err)), 0);
        assert_int_equal(glove_store_journal_records(e->x->journal), n + 1);
        assert_replays(e, T0 + 5);
        json_decref(a);
}

/* A full journal refuses the next create or revoke with journal.full,
 * appends nothing, and still replays to the same state. Filled by
 * create/revoke cycles of one project (one exposure id, one generation per
 * cycle) in /dev/shm, where the appends' syncs cost nothing. */
/* The live generations the journal holds (state records not yet written). */
static size_t journal_live(const struct glove_exposures *x) {
        size_t n = 0;
        for (size_t i = 0; i < x->n_entries; i++)
                n += x->entries[i].gens[x->entries[i].n_gens - 1].state == EXP_LIVE;
        return n;
}

/* Fills a journal by create/revoke cycles: creates are refused
 * (journal.full) while room stays for one state record per live exposure,
 * so a revoke still succeeds and the expiry at the next open still writes
 * its records; every state replays identically. */
static void test_journal_full(void **state) {
        (void)state;
        struct stat st;
        if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode) || access("/dev/shm", W_OK) < 0) {
                fprintf(stderr, "skipped: no writable /dev/shm to fill a journal in\n");
                skip();
        }
        struct xenv *e = xenv_new();
        char shm[64] = "/dev/shm/glove-exposure-full.XXXXXX";
        assert_non_null(mkdtemp(shm));
        assert_int_equal(chmod(shm, 0700), 0);
        snprintf(e->journal, sizeof(e->journal), "%s/exposures.journal", shm);
        struct glove_error err = { 0 };
        assert_int_equal(xopen(e, T0, &err), 0);
        int64_t now = T0;
        /* Two exposures stay live through the cycles: "keep" is revoked
         * once creates are refused, "lapse" expires. */
        json_t *keep = NULL, *lapse = NULL;
        assert_int_equal(xcreate(e, "keep", ++now, &keep, fresh(&err)), 0);
        assert_int_equal(xcreate(e, "lapse", ++now, &lapse, fresh(&err)), 0);
        int r = 0;
        bool refused_create = false;
        for (int cycle = 0; r == 0 && cycle <= GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS; cycle++) {
                json_t *a = NULL;
                r = xcreate(e, "p", ++now, &a, fresh(&err));
                if (r == 0)
                        r = glove_exposures_revoke(e->x, xid(a), 0, ++now, NULL, fresh(&err));
                else
                        refused_create = true;
                json_decref(a);
        }
        /* The create was refused, never a revoke. */
        assert_true(refused_create);
        assert_int_equal(r, -ENOSPC);
        assert_string_equal(err.code, "journal.full");
        assert_non_null(strstr(err.message, "revoke and expiry still work"));
        assert_non_null(strstr(err.message, "move the journal and its .seal aside"));
        /* Room for a state record of each live exposure is left. */
        assert_int_equal(journal_live(e->x), 2);
        assert_true(glove_store_journal_records(e->x->journal) + 2 <= GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS);
        assert_true(glove_store_journal_records(e->x->journal) + 5 > GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS);
        /* Nothing half-made: the state before the refused append replays. */
        assert_replays(e, now);
        json_t *list = glove_exposures_list(e->x, now);
        json_t *entry = NULL;
        size_t i;
        json_array_foreach(json_object_get(list, "exposures"), i, entry) {
                if (strcmp(xid(entry), xid(keep)) != 0 && strcmp(xid(entry), xid(lapse)) != 0)
                        break;
        }
        /* Every create of the cycles made one generation. */
        assert_true(json_integer_value(json_object_get(entry, "generation")) >=
                    GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS / 2 - 3);
        json_decref(list);
        /* Creates stay refused after the restart; revoking a live one works. */
        json_t *b = NULL;
        assert_int_equal(xcreate(e, "p", ++now, &b, fresh(&err)), -ENOSPC);
        assert_string_equal(err.code, "journal.full");
        assert_null(b);
        assert_int_equal(glove_exposures_revoke(e->x, xid(keep), 0, ++now, NULL, fresh(&err)), 0);
        assert_replays(e, now);
        /* "lapse" expires: the open past its expiry writes its record. */
        uint64_t before = glove_store_journal_records(e->x->journal);
        int64_t late = T0 + TTL_MAX * 1000LL + 60000;
        assert_int_equal(reopen(e, late, &err), 0);
        assert_int_equal(glove_store_journal_records(e->x->journal), before + 1);
        assert_int_equal(journal_live(e->x), 0);
        assert_replays(e, late);
        json_decref(keep);
        json_decref(lapse);
        glove_exposures_close(e->x);
        e->x = NULL;
        char seal[sizeof(e->journal) + 8];
        snprintf(seal, sizeof(seal), "%s.seal", e->journal);
        unlink(seal);
        unlink(e->journal);
        rmdir(shm);
        xenv_free(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_replay_identical, setup, teardown),
                cmocka_unit_test_setup_teardown(test_locked_and_insecure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_damaged, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sequence_rules, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reorder_real, setup, teardown),
                cmocka_unit_test_setup_teardown(test_recover_parent, setup, teardown),
                cmocka_unit_test(test_digest_vector),
                cmocka_unit_test_setup_teardown(test_append_checked, setup, teardown),
                cmocka_unit_test(test_journal_full),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Chained journals and their seal (glove/store/journal.h), on a small
 * format so that the bounds are reachable. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "glove/store/journal.h"
#include "glove/store/store.h"
#include "helpers.h"

static struct glove_store_journal_format fmt;

struct fixture {
        char *dir, *path, *seal;
};

static int setup(void **state) {
        fmt = glove_store_format;
        memcpy(fmt.magic, "GLVTEST1", 8);
        fmt.max_payload = 16;
        fmt.max_records = 3;
        fmt.max_bytes = GLOVE_STORE_JOURNAL_HEADER_LEN + 3 * (16 + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD);
        struct fixture *f = calloc(1, sizeof(*f));
        f->dir = th_tempdir();
        f->path = th_join(f->dir, "j");
        f->seal = th_join(f->dir, "j.seal");
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

static int open_j(struct fixture *f, struct glove_store_journal **j, struct glove_store_journal_report *rep,
                  struct glove_error *e) {
        struct glove_store_journal_open_options o = { .path = f->path, .owner = geteuid() };
        return glove_store_journal_open(&fmt, &o, NULL, NULL, j, rep, e);
}

static void append_n(struct fixture *f, int n) {
        struct glove_store_journal *j = NULL;
        assert_int_equal(open_j(f, &j, NULL, NULL), 0);
        for (int i = 0; i < n; i++) {
                char p[16];
                snprintf(p, sizeof(p), "rec%d", i % 10);
                assert_int_equal(glove_store_journal_append(j, p, strlen(p), NULL, NULL, NULL), 0);
        }
        glove_store_journal_close(j);
}

static void test_create_and_reopen(void **state) {
        struct fixture *f = *state;
        struct glove_store_journal *j = NULL;
        struct glove_store_journal_report rep;
        assert_int_equal(open_j(f, &j, &rep, NULL), 0);
        assert_true(rep.created);
        assert_int_equal(glove_store_journal_records(j), 0);
        uint64_t seq = 0;
        uint8_t tag[32], head[32];
        assert_int_equal(glove_store_journal_append(j, "hello", 5, &seq, tag, NULL), 0);
        assert_int_equal(seq, 1);
        glove_store_journal_head(j, head);
        assert_memory_equal(tag, head, 32);
        glove_store_journal_close(j);

        struct stat st;
        assert_int_equal(stat(f->path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(st.st_size, 64 + 4 + 5 + 32);
        assert_int_equal(stat(f->seal, &st), 0);
        assert_int_equal(st.st_size, GLOVE_STORE_JOURNAL_SEAL_LEN);

        assert_int_equal(open_j(f, &j, &rep, NULL), 0);
        assert_false(rep.created);
        assert_false(rep.unsealed_record);
        assert_int_equal(glove_store_journal_records(j), 1);
        glove_store_journal_head(j, head);
        assert_memory_equal(tag, head, 32);
        glove_store_journal_close(j);
}

static void test_bounds(void **state) {
        struct fixture *f = *state;
        struct glove_store_journal *j = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(open_j(f, &j, NULL, NULL), 0);
        assert_int_equal(glove_store_journal_append(j, "", 0, NULL, NULL, &e), -EINVAL);
        assert_string_equal(e.code, "journal.bad_length");
        glove_error_clear(&e);
        assert_int_equal(glove_store_journal_append(j, "0123456789abcdefX", 17, NULL, NULL, &e), -EINVAL);
        assert_string_equal(e.code, "journal.bad_length");
        for (int i = 0; i < 3; i++)
                assert_int_equal(glove_store_journal_append(j, "0123456789abcdef", 16, NULL, NULL, NULL), 0);
        uint64_t size = glove_store_journal_size(j);
        assert_false(glove_store_journal_has_room(j, 1));
        glove_error_clear(&e);
        assert_int_equal(glove_store_journal_append(j, "x", 1, NULL, NULL, &e), -ENOSPC);
        assert_string_equal(e.code, "journal.full");
        assert_int_equal(glove_store_journal_size(j), size);
        glove_store_journal_close(j);
        struct stat st;
        assert_int_equal(stat(f->path, &st), 0);
        assert_int_equal((uint64_t)st.st_size, size);
}

static void test_lock(void **state) {
        struct fixture *f = *state;
        struct glove_store_journal *a = NULL, *b = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(open_j(f, &a, NULL, NULL), 0);
        assert_int_equal(open_j(f, &b, NULL, &e), -EBUSY);
        assert_string_equal(e.code, "journal.locked");
        glove_store_journal_close(a);
        assert_int_equal(open_j(f, &b, NULL, NULL), 0);
        glove_store_journal_close(b);
}

static void expect_open_fails(struct fixture *f, const char *code) {
        struct glove_store_journal *j = NULL;
        struct glove_error e = { 0 };
        int r = open_j(f, &j, NULL, &e);
        if (r == 0 || strcmp(e.code, code) != 0)
                fail_msg("expected %s, got %d %s: %s", code, r, e.code ? e.code : "(none)", e.message);
        assert_null(j);
}

static void test_missing_files(void **state) {
        struct fixture *f = *state;
        append_n(f, 2);
        size_t n;
        unsigned char *seal = th_read(f->seal, &n);
        assert_int_equal(unlink(f->seal), 0);
        expect_open_fails(f, "journal.seal_missing");
        /* The journal gone while the seal records commits. */
        int fd = open(f->seal, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0 && write(fd, seal, n) == (ssize_t)n);
        close(fd);
        assert_int_equal(unlink(f->path), 0);
        expect_open_fails(f, "journal.missing");
        free(seal);
        /* An empty seal (creation interrupted before the seal was written)
         * commits nothing: the journal is created. */
        th_write(f->seal, "", 0);
        struct glove_store_journal *j = NULL;
        assert_int_equal(open_j(f, &j, NULL, NULL), 0);
        assert_int_equal(glove_store_journal_records(j), 0);
        glove_store_journal_close(j);
}

static void test_insecure_files(void **state) {
        struct fixture *f = *state;
        append_n(f, 1);
        assert_int_equal(chmod(f->path, 0644), 0);
        expect_open_fails(f, "journal.file_insecure");
        assert_int_equal(chmod(f->path, 0600), 0);
        assert_int_equal(chmod(f->seal, 0640), 0);
        expect_open_fails(f, "journal.file_insecure");
        assert_int_equal(chmod(f->seal, 0600), 0);
        char *link2 = th_join(f->dir, "j.link");
        assert_int_equal(link(f->path, link2), 0);
        expect_open_fails(f, "journal.file_insecure");
        assert_int_equal(unlink(link2), 0);
        char *moved = th_join(f->dir, "j.real");
        assert_int_equal(rename(f->path, moved), 0);
        assert_int_equal(symlink(moved, f->path), 0);
        expect_open_fails(f, "journal.file_insecure");
        assert_int_equal(unlink(f->path), 0);
        assert_int_equal(rename(moved, f->path), 0);
        assert_int_equal(chmod(f->dir, 0750), 0);
        expect_open_fails(f, "dirs.insecure");
        assert_int_equal(chmod(f->dir, 0700), 0);
        struct glove_store_journal *j = NULL;
        assert_int_equal(open_j(f, &j, NULL, NULL), 0);
        glove_store_journal_close(j);
        free(link2);
        free(moved);
}

/* A record written but not sealed (a crash between the two syncs) is
 * accepted once; two are not. */
static void test_unsealed_record(void **state) {
        struct fixture *f = *state;
        append_n(f, 1);
        size_t n;
        unsigned char *seal1 = th_read(f->seal, &n);
        append_n(f, 1);
        unsigned char *seal2 = th_read(f->seal, &n);
        th_write(f->seal, seal1, n);
        struct glove_store_journal *j = NULL;
        struct glove_store_journal_report rep;
        assert_int_equal(open_j(f, &j, &rep, NULL), 0);
        assert_true(rep.unsealed_record);
        assert_int_equal(glove_store_journal_records(j), 2);
        /* The next append seals everything again. */
        assert_int_equal(glove_store_journal_append(j, "third", 5, NULL, NULL, NULL), 0);
        glove_store_journal_close(j);
        assert_int_equal(open_j(f, &j, &rep, NULL), 0);
        assert_false(rep.unsealed_record);
        assert_int_equal(glove_store_journal_records(j), 3);
        glove_store_journal_close(j);
        /* Seal of record 1 against a journal of 3 records. */
        th_write(f->seal, seal1, n);
        expect_open_fails(f, "journal.resized");
        /* Seal of record 2 against 3 records: the crash window again. */
        th_write(f->seal, seal2, n);
        assert_int_equal(open_j(f, &j, &rep, NULL), 0);
        assert_true(rep.unsealed_record);
        glove_store_journal_close(j);
        free(seal1);
        free(seal2);
}

static void test_seal_corrupt(void **state) {
        struct fixture *f = *state;
        append_n(f, 2);
        size_t n;
        unsigned char *seal = th_read(f->seal, &n);
        /* Slot of record 2 (offset 0) destroyed: slot of record 1 remains,
         * one unsealed record is accepted. */
        assert_int_equal(n, GLOVE_STORE_JOURNAL_SEAL_LEN);
        unsigned char c[GLOVE_STORE_JOURNAL_SEAL_LEN];
        memcpy(c, seal, sizeof(c));
        c[10] ^= 1;
        th_write(f->seal, c, n);
        struct glove_store_journal *j = NULL;
        struct glove_store_journal_report rep;
        assert_int_equal(open_j(f, &j, &rep, NULL), 0);
        assert_true(rep.unsealed_record);
        glove_store_journal_close(j);
        /* Both slots destroyed. */
        c[512 + 10] ^= 1;
        th_write(f->seal, c, n);
        expect_open_fails(f, "journal.seal_corrupt");
        th_write(f->seal, seal, n - 1);
        expect_open_fails(f, "journal.seal_corrupt");
        th_write(f->seal, seal, n);
        free(seal);
}

/* The file grows behind the writer: the next append refuses, and every one
 * after it (fail closed). */
static void test_resized_behind_writer(void **state) {
        struct fixture *f = *state;
        struct glove_store_journal *j = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(open_j(f, &j, NULL, NULL), 0);
        assert_int_equal(glove_store_journal_append(j, "a", 1, NULL, NULL, NULL), 0);
        int fd = open(f->path, O_WRONLY | O_APPEND);
        assert_int_equal(write(fd, "zz", 2), 2);
        close(fd);
        assert_int_equal(glove_store_journal_append(j, "b", 1, NULL, NULL, &e), -EBADMSG);
        assert_string_equal(e.code, "journal.resized");
        glove_error_clear(&e);
        assert_int_equal(glove_store_journal_append(j, "c", 1, NULL, NULL, &e), -EIO);
        assert_string_equal(e.code, "journal.broken");
        glove_store_journal_close(j);
}

static void test_torn_tail_recover_mode(void **state) {
        struct fixture *f = *state;
        append_n(f, 1);
        size_t n;
        unsigned char *seal = th_read(f->seal, &n);
        append_n(f, 1);
        size_t len;
        unsigned char *full = th_read(f->path, &len);
        size_t end1 = 64 + 4 + 4 + 32; /* "rec0" */
        for (size_t cut = end1 + 1; cut < len; cut++) {
                th_write(f->path, full, cut);
                th_write(f->seal, seal, n);
                struct glove_store_journal *j = NULL;
                struct glove_store_journal_report rep;
                struct glove_store_journal_open_options o = { .path = f->path, .owner = geteuid(),
                                                                .recover_torn_tail = true };
                assert_int_equal(glove_store_journal_open(&fmt, &o, NULL, NULL, &j, &rep, NULL), 0);
                assert_int_equal(rep.torn_bytes, cut - end1);
                assert_int_equal(rep.torn_offset, end1);
                assert_int_equal(glove_store_journal_records(j), 1);
                glove_store_journal_close(j);
                struct stat st;
                assert_int_equal(stat(f->path, &st), 0);
                assert_int_equal((size_t)st.st_size, end1);
        }
        free(seal);
        free(full);
}

static void test_scan_in_memory(void **state) {
        struct fixture *f = *state;
        append_n(f, 3);
        size_t len;
        unsigned char *b = th_read(f->path, &len);
        struct glove_store_journal_scan scan;
        struct glove_error e = { 0 };
        assert_int_equal(glove_store_journal_scan(&fmt, b, len, NULL, NULL, &scan, NULL), 0);
        assert_int_equal(scan.records, 3);
        assert_int_equal(scan.end, len);
        assert_int_equal(scan.torn_bytes, 0);
        assert_int_equal(glove_store_journal_scan(&fmt, b, len - 1, NULL, NULL, &scan, NULL), 0);
        assert_int_equal(scan.records, 2);
        assert_int_equal(scan.torn_bytes, len - 1 - scan.end);
        assert_int_equal(glove_store_journal_scan(&fmt, b, 63, NULL, NULL, &scan, &e), -EBADMSG);
        assert_string_equal(e.code, "journal.bad_header");
        glove_error_clear(&e);
        b[8] ^= 1; /* version */
        assert_int_equal(glove_store_journal_scan(&fmt, b, len, NULL, NULL, &scan, &e), -EBADMSG);
        assert_string_equal(e.code, "journal.bad_header");
        free(b);
}

/* A newest seal slot wiped and the journal cut at the end of the previous
 * record: what no crash leaves (the slot is written only after its record is
 * synced), so start refuses it (journal.record_lost). Every other slot
 * damage that a crash can leave is still accepted. */
static void test_record_lost(void **state) {
        struct fixture *f = *state;
        append_n(f, 2);
        struct stat st;
        assert_int_equal(stat(f->path, &st), 0);
        off_t two = st.st_size;
        append_n(f, 1);
        size_t n;
        unsigned char *seal = th_read(f->seal, &n);
        unsigned char wiped[GLOVE_STORE_JOURNAL_SEAL_LEN];
        assert_int_equal(n, sizeof(wiped));
        memcpy(wiped, seal, n);
        /* Record 3's slot is at (3 mod 2) * 512. */
        memset(wiped + GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE, 0, GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN);
        th_write(f->seal, wiped, n);
        /* With record 3 still there: the crash window (accepted). */
        struct glove_store_journal *j = NULL;
        struct glove_store_journal_report rep;
        assert_int_equal(open_j(f, &j, &rep, NULL), 0);
        assert_true(rep.unsealed_record);
        glove_store_journal_close(j);
        th_write(f->seal, wiped, n);
        assert_int_equal(truncate(f->path, two), 0);
        expect_open_fails(f, "journal.record_lost");
        /* The older slot replaced by garbage instead: the same. */
        memcpy(wiped, seal, n);
        memset(wiped + GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE, 0x5a, 8);
        th_write(f->seal, wiped, n);
        expect_open_fails(f, "journal.record_lost");
        /* The intact seal of 3 records against the cut journal. */
        th_write(f->seal, seal, n);
        expect_open_fails(f, "journal.resized");
        free(seal);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_create_and_reopen, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_insecure_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unsealed_record, setup, teardown),
                cmocka_unit_test_setup_teardown(test_seal_corrupt, setup, teardown),
                cmocka_unit_test_setup_teardown(test_record_lost, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resized_behind_writer, setup, teardown),
                cmocka_unit_test_setup_teardown(test_torn_tail_recover_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scan_in_memory, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* glove_supervisor_policy_load: the protected-file checks (spec
 * session-policy.md, "Protected files"), on real files in a temporary
 * directory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/supervisor/policy.h"
#include "helpers.h"
#include "internal.h"

struct env {
        char dir[64];
        char file[128];
        char *text;
        size_t len;
};

static void write_file(const char *path, const void *data, size_t len, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        snprintf(e->dir, sizeof(e->dir), "/tmp/glove-policy-test.XXXXXX");
        if (!mkdtemp(e->dir))
                return -1;
        snprintf(e->file, sizeof(e->file), "%s/session-policy.json", e->dir);
        e->text = fixture_read("policy/valid.json", &e->len);
        write_file(e->file, e->text, e->len, 0600);
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        const char *names[] = { "session-policy.json", "link", "second", "fifo", "dir", "big", "bad" };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                char p[192];
                snprintf(p, sizeof(p), "%s/%s", e->dir, names[i]);
                if (unlink(p) < 0 && (errno == EISDIR || errno == EPERM))
                        rmdir(p);
        }
        rmdir(e->dir);
        free(e->text);
        free(e);
        return 0;
}

static void expect_load(const char *path, uid_t uid, int want_r, const char *want_code) {
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = (void *)0x1;
        int r = glove_supervisor_policy_load(path, uid, &p, &err);
        if (want_code == NULL) {
                if (r < 0)
                        fail_msg("%s: %s %s", path, err.code, err.message);
                assert_non_null(p);
                glove_supervisor_policy_free(p);
                return;
        }
        if (r != want_r || !err.code || strcmp(err.code, want_code) != 0)
                fail_msg("%s: want %d %s, got %d %s (%s)", path, want_r, want_code, r, err.code, err.message);
        assert_null(p);
        /* The message names the file. */
        assert_non_null(strstr(err.message, path));
}

static void test_valid(void **state) {
        struct env *e = *state;
        expect_load(e->file, geteuid(), 0, NULL);
}

static void test_mode(void **state) {
        struct env *e = *state;
        static const mode_t bad[] = { 0644, 0640, 0604, 0400, 0700, 0660, 04600, 01600 };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(chmod(e->file, bad[i]), 0);
                expect_load(e->file, geteuid(), -EPERM, "policy.file_mode");
        }
}

static void test_owner(void **state) {
        struct env *e = *state;
        expect_load(e->file, geteuid() + 1, -EPERM, "policy.file_owner");
        if (geteuid() != 0) {
                print_message("skip: chown to another uid needs root; owner mismatch checked via owner_uid\n");
                return;
        }
        assert_int_equal(chown(e->file, 65534, 65534), 0);
        expect_load(e->file, 0, -EPERM, "policy.file_owner");
        expect_load(e->file, 65534, 0, NULL);
}

static void test_hard_links(void **state) {
        struct env *e = *state;
        char second[192];
        snprintf(second, sizeof(second), "%s/second", e->dir);
        assert_int_equal(link(e->file, second), 0);
        expect_load(e->file, geteuid(), -EPERM, "policy.file_links");
        expect_load(second, geteuid(), -EPERM, "policy.file_links");
        assert_int_equal(unlink(second), 0);
        expect_load(e->file, geteuid(), 0, NULL);
}

static void test_symlink(void **state) {
        struct env *e = *state;
        char link_path[192];
        snprintf(link_path, sizeof(link_path), "%s/link", e->dir);
        assert_int_equal(symlink(e->file, link_path), 0);
        expect_load(link_path, geteuid(), -ELOOP, "policy.file_symlink");
}

static void test_not_regular(void **state) {
        struct env *e = *state;
        char p[192];
        snprintf(p, sizeof(p), "%s/dir", e->dir);
        assert_int_equal(mkdir(p, 0600), 0);
        expect_load(p, geteuid(), -EINVAL, "policy.file_not_regular");
        /* A FIFO must not block the loader (O_NONBLOCK) and is refused. */
        snprintf(p, sizeof(p), "%s/fifo", e->dir);
        assert_int_equal(mkfifo(p, 0600), 0);
        expect_load(p, geteuid(), -EINVAL, "policy.file_not_regular");
}

static void test_size(void **state) {
        struct env *e = *state;
        char p[192];
        snprintf(p, sizeof(p), "%s/big", e->dir);
        size_t n = GLOVE_POLICY_MAX_BYTES + 1;
        _cleanup_free_ char *big = malloc(n);
        memset(big, ' ', n);
        write_file(p, big, n, 0600);
        expect_load(p, geteuid(), -EFBIG, "policy.file_too_large");
        /* Exactly the limit passes the file checks (and is then decoded). */
        memcpy(big, e->text, e->len);
        write_file(p, big, GLOVE_POLICY_MAX_BYTES, 0600);
        expect_load(p, geteuid(), 0, NULL);
}

static void test_missing_and_relative(void **state) {
        struct env *e = *state;
        char p[192];
        snprintf(p, sizeof(p), "%s/absent.json", e->dir);
        expect_load(p, geteuid(), -ENOENT, "policy.file_open");
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *pol = NULL;
        assert_int_equal(glove_supervisor_policy_load("session-policy.json", geteuid(), &pol, &err), -EINVAL);
        assert_string_equal(err.code, "policy.file_path_relative");
}

static void test_bad_content(void **state) {
        struct env *e = *state;
        char p[192];
        snprintf(p, sizeof(p), "%s/bad", e->dir);
        write_file(p, "{\"schema_version\":1,\"x\":2}", 26, 0600);
        expect_load(p, geteuid(), -EINVAL, "policy.unknown_field");
}

/* The hook runs between reading and rechecking; each variant changes the
 * file through another descriptor or name. */
static int hook_variant;

static void change_file(int fd, const char *path) {
        (void)fd;
        switch (hook_variant) {
        case 0: { /* append */
                int w = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
                assert_true(w >= 0);
                assert_int_equal(write(w, " ", 1), 1);
                close(w);
                break;
        }
        case 1: /* mode change */
                assert_int_equal(chmod(path, 0400), 0);
                break;
        case 2: { /* rewrite in place, same size (mtime changes) */
                struct timespec ts = { .tv_sec = 0, .tv_nsec = 2 * 1000 * 1000 };
                nanosleep(&ts, NULL);
                int w = open(path, O_WRONLY | O_CLOEXEC);
                assert_true(w >= 0);
                assert_int_equal(pwrite(w, "{", 1, 0), 1);
                close(w);
                break;
        }
        default: { /* a second hard link appears */
                char second[256];
                snprintf(second, sizeof(second), "%s.second", path);
                assert_int_equal(link(path, second), 0);
                unlink(second);
                break;
        }
        }
}

static void test_changed_while_read(void **state) {
        struct env *e = *state;
        for (hook_variant = 0; hook_variant < 4; hook_variant++) {
                write_file(e->file, e->text, e->len, 0600);
                glove_supervisor_policy_load_test_hook = change_file;
                expect_load(e->file, geteuid(), -EAGAIN, "policy.file_changed");
                glove_supervisor_policy_load_test_hook = NULL;
        }
        write_file(e->file, e->text, e->len, 0600);
        expect_load(e->file, geteuid(), 0, NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_valid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hard_links, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlink, setup, teardown),
                cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
                cmocka_unit_test_setup_teardown(test_size, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_and_relative, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_content, setup, teardown),
                cmocka_unit_test_setup_teardown(test_changed_while_read, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd_count.h"
#include "glove/base/cleanup.h"
#include "glove/base/file.h"

static char dir[64];
static int dirfd_ = -1;

static void empty_dir(void) {
        DIR *d = opendir(dir);
        assert_non_null(d);
        struct dirent *e;
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                        (void)unlinkat(dirfd_, e->d_name, 0);
        closedir(d);
}

static int setup(void **state) {
        (void)state;
        snprintf(dir, sizeof(dir), "/tmp/glove-test-file-XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state) {
        (void)state;
        empty_dir();
        close(dirfd_);
        return rmdir(dir);
}

/* The names in the directory, sorted, joined by ",". */
static void listing(char *out, size_t size) {
        struct dirent **v;
        int n = scandir(dir, &v, NULL, alphasort);
        assert_true(n >= 0);
        out[0] = '\0';
        for (int i = 0; i < n; i++) {
                if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, "..")) {
                        if (out[0])
                                strncat(out, ",", size - strlen(out) - 1);
                        strncat(out, v[i]->d_name, size - strlen(out) - 1);
                }
                free(v[i]);
        }
        free(v);
}

static void assert_content(const char *name, const char *want) {
        char buf[256] = { 0 };
        _cleanup_close_ int fd = openat(dirfd_, name, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        assert_int_equal(n, (ssize_t)strlen(want));
        assert_string_equal(buf, want);
}

/* The flags a test adds: 0 (O_TMPFILE where available) or NAMED_TEMP. */
static unsigned extra(void **state) {
        return *state ? GLOVE_FILE_REPLACE_NAMED_TEMP : 0;
}

static void test_replace_creates_and_replaces(void **state) {
        unsigned x = extra(state);
        empty_dir();
        int before = count_fds();
        mode_t old = umask(077);
        struct glove_error e = { 0 };
        assert_int_equal(glove_file_replace(dirfd_, "state", "one", 3, 0644, GLOVE_FILE_REPLACE_SYNC_DIR | x, &e), 0);
        umask(old);
        assert_content("state", "one");
        struct stat st;
        assert_int_equal(fstatat(dirfd_, "state", &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, 0644); /* the umask does not apply */
        assert_int_equal(glove_file_replace(dirfd_, "state", "second", 6, 0600, x, &e), 0);
        assert_content("state", "second");
        assert_int_equal(fstatat(dirfd_, "state", &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(glove_file_replace(dirfd_, "empty", NULL, 0, 0600, GLOVE_FILE_REPLACE_NO_SYNC | x, &e), 0);
        assert_content("empty", "");
        char names[256];
        listing(names, sizeof(names));
        assert_string_equal(names, "empty,state"); /* no temporary left */
        assert_int_equal(count_fds(), before);
}

static void test_replace_symlink_not_followed(void **state) {
        unsigned x = extra(state);
        empty_dir();
        assert_int_equal(symlinkat("target", dirfd_, "link"), 0);
        assert_int_equal(glove_file_replace(dirfd_, "link", "x", 1, 0600, x, NULL), 0);
        struct stat st;
        assert_int_equal(fstatat(dirfd_, "link", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(fstatat(dirfd_, "target", &st, AT_SYMLINK_NOFOLLOW), -1);
        empty_dir();
}

static void test_noreplace(void **state) {
        unsigned x = extra(state);
        empty_dir();
        struct glove_error e = { 0 };
        assert_int_equal(glove_file_replace(dirfd_, "key", "old", 3, 0600, GLOVE_FILE_REPLACE_NOREPLACE | x, &e), 0);
        assert_int_equal(glove_file_replace(dirfd_, "key", "new", 3, 0600, GLOVE_FILE_REPLACE_NOREPLACE | x, &e),
                         -EEXIST);
        assert_string_equal(e.code, "file.exists");
        assert_non_null(strstr(e.message, "key"));
        assert_content("key", "old");
        char names[256];
        listing(names, sizeof(names));
        assert_string_equal(names, "key");
}

/* A write that fails (the file size limit) leaves the old content and no
 * temporary, whichever way the temporary was made. */
static void test_failure_keeps_old(void **state) {
        unsigned x = extra(state);
        empty_dir();
        assert_int_equal(glove_file_replace(dirfd_, "state", "old", 3, 0600, 0, NULL), 0);
        struct rlimit saved, small = { .rlim_cur = 8, .rlim_max = 0 };
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
        small.rlim_max = saved.rlim_max;
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
        int before = count_fds();
        struct glove_error e = { 0 };
        int r = glove_file_replace(dirfd_, "state", "much longer than eight bytes", 28, 0600, x, &e);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
        signal(SIGXFSZ, prev);
        assert_int_equal(r, -EFBIG);
        assert_string_equal(e.code, "file.replace");
        assert_non_null(strstr(e.message, "state"));
        assert_int_equal(count_fds(), before);
        assert_content("state", "old");
        char names[256];
        listing(names, sizeof(names));
        assert_string_equal(names, "state");
}

static void test_failure_bad_directory(void **state) {
        (void)state;
        struct glove_error e = { 0 };
        assert_true(glove_file_replace(-1, "x", "a", 1, 0600, 0, &e) < 0);
        assert_string_equal(e.code, "file.replace");
}

static void test_invalid_names(void **state) {
        (void)state;
        const char *bad[] = { "", ".", "..", "a/b" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(bad); i++) {
                struct glove_error e = { 0 };
                assert_int_equal(glove_file_replace(dirfd_, bad[i], "a", 1, 0600, 0, &e), -EINVAL);
                assert_string_equal(e.code, "file.invalid_argument");
        }
        char longname[GLOVE_FILE_REPLACE_NAME_MAX + 2];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(glove_file_replace(dirfd_, longname, "a", 1, 0600, 0, NULL), -ENAMETOOLONG);
        assert_int_equal(glove_file_replace(dirfd_, "x", NULL, 1, 0600, 0, NULL), -EINVAL);
}

/* An O_PATH directory descriptor works, directory sync included. */
static void test_opath_directory(void **state) {
        unsigned x = extra(state);
        empty_dir();
        _cleanup_close_ int p = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(p >= 0);
        struct glove_error e = { 0 };
        assert_int_equal(glove_file_replace(p, "f", "z", 1, 0600, GLOVE_FILE_REPLACE_SYNC_DIR | x, &e), 0);
        assert_content("f", "z");
}

static void test_temp_target_and_sweep(void **state) {
        (void)state;
        empty_dir();
        char t[64];
        assert_true(glove_file_replace_temp_target(".s-1.status.0123456789abcdef.tmp", t, sizeof(t)));
        assert_string_equal(t, "s-1.status");
        assert_false(glove_file_replace_temp_target(".s-1.status.tmp", t, sizeof(t)));
        assert_false(glove_file_replace_temp_target(".x.0123456789abcdeg.tmp", NULL, 0));
        assert_false(glove_file_replace_temp_target("x.0123456789abcdef.tmp", NULL, 0));
        assert_false(glove_file_replace_temp_target("..0123456789abcdef.tmp", NULL, 0));
        assert_false(glove_file_replace_temp_target(".s-1.status.0123456789abcdef.tmp", t, 4));
        const char *files[] = { ".a.0123456789abcdef.tmp", ".a.fedcba9876543210.tmp", ".b.0123456789abcdef.tmp",
                                "a" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(files); i++)
                assert_int_equal(glove_file_replace(dirfd_, files[i], "", 0, 0600, GLOVE_FILE_REPLACE_NO_SYNC, NULL),
                                 0);
        assert_int_equal(glove_file_replace_sweep(dirfd_, "a"), 2);
        char names[256];
        listing(names, sizeof(names));
        assert_string_equal(names, ".b.0123456789abcdef.tmp,a");
}

int main(void) {
        static int named = 1;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_replace_creates_and_replaces),
                cmocka_unit_test_prestate(test_replace_creates_and_replaces, &named),
                cmocka_unit_test(test_replace_symlink_not_followed),
                cmocka_unit_test_prestate(test_replace_symlink_not_followed, &named),
                cmocka_unit_test(test_noreplace),
                cmocka_unit_test_prestate(test_noreplace, &named),
                cmocka_unit_test(test_failure_keeps_old),
                cmocka_unit_test_prestate(test_failure_keeps_old, &named),
                cmocka_unit_test(test_failure_bad_directory),
                cmocka_unit_test(test_invalid_names),
                cmocka_unit_test(test_opath_directory),
                cmocka_unit_test_prestate(test_opath_directory, &named),
                cmocka_unit_test(test_temp_target_and_sweep),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

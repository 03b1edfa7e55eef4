/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/grant.h, on a real directory tree
 * made under /tmp for each run. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/container/grant.h"

/* Canonical (realpath) base of the tree:
 *   dir/  dir/sub/  dir/sub/deep.txt  file.txt  b/  bc/  bc/audit.log
 *   bfile  bfile2  link_dir -> dir  link_file -> file.txt  fifo
 *   outside.log  hard.log (hard link to file.txt)  many/d0..d128 */
static char base[PATH_MAX];

/* base + "/" + rel, in one of a few rotating buffers. */
static const char *P(const char *rel) {
        static char bufs[8][PATH_MAX];
        static unsigned next;
        char *b = bufs[next++ % 8];
        int n = snprintf(b, PATH_MAX, "%s/%s", base, rel);
        if (n < 0 || n >= PATH_MAX)
                abort();
        return b;
}

static void touch(const char *rel) {
        int fd = open(P(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "x\n", 2), 2);
        close(fd);
}

static int setup_tree(void **state) {
        (void)state;
        char tmpl[] = "/tmp/glove-ut-grant-XXXXXX";
        if (!mkdtemp(tmpl) || !realpath(tmpl, base))
                return -1;
        if (mkdir(P("dir"), 0755) || mkdir(P("dir/sub"), 0755) || mkdir(P("b"), 0755) || mkdir(P("bc"), 0755) ||
            mkdir(P("many"), 0755))
                return -1;
        touch("dir/sub/deep.txt");
        touch("file.txt");
        touch("bc/audit.log");
        touch("bfile");
        touch("bfile2");
        touch("outside.log");
        if (symlink("dir", P("link_dir")) || symlink("file.txt", P("link_file")) || mkfifo(P("fifo"), 0600) ||
            link(P("file.txt"), P("hard.log")))
                return -1;
        for (int i = 0; i <= GLOVE_GRANTS_MAX; i++) {
                char rel[32];
                snprintf(rel, sizeof(rel), "many/d%d", i);
                if (mkdir(P(rel), 0755))
                        return -1;
        }
        return 0;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void)st;
        (void)type;
        (void)ftw;
        return remove(path);
}

static int teardown_tree(void **state) {
        (void)state;
        if (base[0] == '/' && strncmp(base, "/tmp/glove-ut-grant-", 20) == 0)
                return nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

/* Adds and expects success; returns the index of the grant. */
static void add_ok(struct glove_grant_set *set, const char *path, enum glove_grant_mode mode, bool ws, const char *cwd) {
        struct glove_error err = {0};
        int r = glove_grant_set_add(set, path, mode, ws, cwd, &err);
        if (r != 0)
                fail_msg("adding %s: %d %s: %s", path, r, err.code ? err.code : "(no code)", err.message);
}

static void add_fails(struct glove_grant_set *set, const char *path, enum glove_grant_mode mode, bool ws, const char *cwd,
                      int errnum, const char *code) {
        struct glove_error err = {0};
        size_t before = set->count;
        int r = glove_grant_set_add(set, path, mode, ws, cwd, &err);
        if (r != -errnum || !err.code || strcmp(err.code, code) != 0)
                fail_msg("adding %s: expected %d %s, got %d %s (%s)", path, -errnum, code, r, err.code ? err.code : "(none)",
                         err.message);
        assert_int_equal(err.errnum, errnum);
        assert_int_equal(set->count, before);
}

static void test_absolute_dir(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        assert_int_equal(set.count, 0);
        assert_null(glove_grant_set_workspace(&set));
        add_ok(&set, P("dir"), GLOVE_GRANT_READ, false, NULL);
        assert_int_equal(set.count, 1);
        const struct glove_grant *g = &set.items[0];
        assert_string_equal(g->path, P("dir"));
        assert_int_equal(g->mode, GLOVE_GRANT_READ);
        assert_false(g->workspace);
        assert_true(g->is_dir);
        assert_true(g->fd >= 0);
        assert_null(glove_grant_set_workspace(&set));
        glove_grant_set_clear(&set);
        assert_int_equal(set.count, 0);
}

static void test_identity_matches_stat(void **state) {
        (void)state;
        const char *paths[] = {"dir", "dir/sub", "file.txt"};
        for (size_t i = 0; i < 3; i++) {
                struct glove_grant_set set;
                glove_grant_set_init(&set);
                add_ok(&set, P(paths[i]), GLOVE_GRANT_WRITE, false, NULL);
                const struct glove_grant *g = &set.items[0];
                struct stat st;
                assert_int_equal(stat(P(paths[i]), &st), 0);
                assert_int_equal(g->dev, st.st_dev);
                assert_int_equal(g->ino, st.st_ino);
                assert_int_equal(g->is_dir, S_ISDIR(st.st_mode));
                /* The descriptor is an O_PATH, close-on-exec handle on the same inode. */
                struct stat fst;
                assert_int_equal(fstat(g->fd, &fst), 0);
                assert_int_equal(fst.st_dev, st.st_dev);
                assert_int_equal(fst.st_ino, st.st_ino);
                int fl = fcntl(g->fd, F_GETFL);
                assert_true(fl >= 0);
                assert_true((fl & O_PATH) == O_PATH);
                assert_int_equal(fcntl(g->fd, F_GETFD), FD_CLOEXEC);
                /* Mount id as statx reports it for the path. */
                struct statx stx;
                assert_int_equal(statx(AT_FDCWD, P(paths[i]), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx), 0);
                if (stx.stx_mask & STATX_MNT_ID)
                        assert_int_equal(g->mnt_id, stx.stx_mnt_id);
                int fd = g->fd;
                glove_grant_set_clear(&set);
                /* clear closed the descriptor. */
                assert_int_equal(fcntl(fd, F_GETFD), -1);
                assert_int_equal(errno, EBADF);
        }
}

static void test_relative_to_cwd(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_ok(&set, "dir/sub", GLOVE_GRANT_READ, false, base);
        add_ok(&set, "file.txt", GLOVE_GRANT_WRITE, false, base);
        add_ok(&set, "sub", GLOVE_GRANT_READ, false, P("dir"));
        assert_int_equal(set.count, 2); /* dir/sub twice: merged */
        assert_string_equal(set.items[0].path, P("dir/sub"));
        assert_true(set.items[0].is_dir);
        assert_string_equal(set.items[1].path, P("file.txt"));
        assert_false(set.items[1].is_dir);
        glove_grant_set_clear(&set);
        /* bc/.. is the base itself. */
        add_ok(&set, "..", GLOVE_GRANT_WRITE, false, P("bc/"));
        assert_int_equal(set.count, 1);
        assert_string_equal(set.items[0].path, base);
        glove_grant_set_clear(&set);
        /* A relative path without an absolute cwd is refused. */
        struct glove_error err = {0};
        assert_true(glove_grant_set_add(&set, "dir", GLOVE_GRANT_READ, false, NULL, &err) < 0);
        assert_int_equal(set.count, 0);
        glove_error_clear(&err);
        assert_true(glove_grant_set_add(&set, "dir", GLOVE_GRANT_READ, false, "relative/cwd", &err) < 0);
        assert_int_equal(set.count, 0);
}

static void test_dotdot_normalized(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        char raw[PATH_MAX];
        assert_true(snprintf(raw, sizeof(raw), "%s//dir/./sub/../../dir/sub/", base) < (int)sizeof(raw));
        add_ok(&set, raw, GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, "./dir/sub/../../b/.", GLOVE_GRANT_READ, false, base);
        assert_true(snprintf(raw, sizeof(raw), "%s/dir/sub/../../file.txt", base) < (int)sizeof(raw));
        add_ok(&set, raw, GLOVE_GRANT_READ, false, NULL);
        assert_int_equal(set.count, 3);
        assert_string_equal(set.items[0].path, P("dir/sub"));
        assert_string_equal(set.items[1].path, P("b"));
        assert_string_equal(set.items[2].path, P("file.txt"));
        assert_false(set.items[2].is_dir);
        glove_grant_set_clear(&set);
}

static void test_symlink_refused(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        /* In a middle component. */
        add_fails(&set, P("link_dir/sub"), GLOVE_GRANT_READ, false, NULL, ELOOP, "grant.symlink");
        add_fails(&set, P("link_dir/sub/deep.txt"), GLOVE_GRANT_WRITE, false, NULL, ELOOP, "grant.symlink");
        add_fails(&set, "link_dir/sub", GLOVE_GRANT_READ, false, base, ELOOP, "grant.symlink");
        /* As the final component, to a directory and to a file. */
        add_fails(&set, P("link_dir"), GLOVE_GRANT_READ, false, NULL, ELOOP, "grant.symlink");
        add_fails(&set, P("link_dir/"), GLOVE_GRANT_READ, false, NULL, ELOOP, "grant.symlink");
        add_fails(&set, P("link_file"), GLOVE_GRANT_READ, false, NULL, ELOOP, "grant.symlink");
        add_fails(&set, P("link_dir"), GLOVE_GRANT_WRITE, true, NULL, ELOOP, "grant.symlink");
        assert_int_equal(set.count, 0);
        /* The message names the link, where it points and the path to grant. */
        struct glove_error err = {0};
        char want[3 * PATH_MAX];
        assert_int_equal(glove_grant_set_add(&set, P("link_dir/sub"), GLOVE_GRANT_READ, false, NULL, &err), -ELOOP);
        snprintf(want, sizeof(want), "%s: %s is a symbolic link to dir (grants never follow one): use %s instead",
                 P("link_dir/sub"), P("link_dir"), P("dir/sub"));
        assert_string_equal(err.message, want);
        err = (struct glove_error){0};
        assert_int_equal(glove_grant_set_add(&set, P("link_file"), GLOVE_GRANT_READ, false, NULL, &err), -ELOOP);
        snprintf(want, sizeof(want), "%s: %s is a symbolic link to file.txt (grants never follow one): use %s instead",
                 P("link_file"), P("link_file"), P("file.txt"));
        assert_string_equal(err.message, want);
        /* A dangling link: nothing to use instead. */
        err = (struct glove_error){0};
        assert_int_equal(symlink("gone\x1b[2J", P("link_gone")), 0);
        assert_int_equal(glove_grant_set_add(&set, P("link_gone"), GLOVE_GRANT_READ, false, NULL, &err), -ELOOP);
        snprintf(want, sizeof(want),
                 "%s: %s is a symbolic link to gone\\x1b[2J (grants never follow one), and the path resolves to "
                 "nothing (No such file or directory): grant the real path",
                 P("link_gone"), P("link_gone"));
        assert_string_equal(err.message, want);
        /* Escaped: a terminal control in the resolved path is shown, not sent. */
        assert_int_equal(mkdir(P("ctl\x1b]0;x\x07"), 0755), 0);
        assert_int_equal(symlink("ctl\x1b]0;x\x07", P("link_ctl")), 0);
        err = (struct glove_error){0};
        assert_int_equal(glove_grant_set_add(&set, P("link_ctl"), GLOVE_GRANT_READ, false, NULL, &err), -ELOOP);
        assert_null(strchr(err.message, '\x1b'));
        assert_null(strchr(err.message, '\x07'));
        snprintf(want, sizeof(want), "use %s/ctl\\x1b]0;x\\x07 instead", base);
        assert_non_null(strstr(err.message, want));
        unlink(P("link_gone"));
        unlink(P("link_ctl"));
        rmdir(P("ctl\x1b]0;x\x07"));
        glove_grant_set_clear(&set);
}

static void test_missing_path(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_fails(&set, P("nope"), GLOVE_GRANT_READ, false, NULL, ENOENT, "grant.missing_path");
        add_fails(&set, P("nope/deeper"), GLOVE_GRANT_READ, false, NULL, ENOENT, "grant.missing_path");
        add_fails(&set, P("dir/sub/nope.txt"), GLOVE_GRANT_WRITE, false, NULL, ENOENT, "grant.missing_path");
        add_fails(&set, "nope", GLOVE_GRANT_WRITE, true, base, ENOENT, "grant.missing_path");
        glove_grant_set_clear(&set);
}

static void test_restricted(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        const char *restricted[] = {"/", "/proc", "/proc/self", "/proc/1/root", "/sys", "/sys/x", "/sys/kernel",
                                    "/dev", "/dev/null", "/dev/shm", "/../proc", "//dev//", "/tmp/../sys/x"};
        for (size_t i = 0; i < sizeof(restricted) / sizeof(restricted[0]); i++) {
                add_fails(&set, restricted[i], GLOVE_GRANT_READ, false, NULL, EPERM, "grant.restricted");
                add_fails(&set, restricted[i], GLOVE_GRANT_WRITE, false, NULL, EPERM, "grant.restricted");
        }
        /* Relative paths resolving there, too. */
        add_fails(&set, "dev", GLOVE_GRANT_READ, false, "/", EPERM, "grant.restricted");
        add_fails(&set, "..", GLOVE_GRANT_READ, false, "/usr", EPERM, "grant.restricted");
        add_fails(&set, "self", GLOVE_GRANT_READ, false, "/proc", EPERM, "grant.restricted");
        add_fails(&set, "/", GLOVE_GRANT_WRITE, true, NULL, EPERM, "grant.restricted");
        /* Whole components only: /devices and /procfoo are not /dev or /proc
         * (they do not exist, so the open reports them missing). */
        add_fails(&set, "/devices-glove-test", GLOVE_GRANT_READ, false, NULL, ENOENT, "grant.missing_path");
        add_fails(&set, "/procfoo-glove-test", GLOVE_GRANT_READ, false, NULL, ENOENT, "grant.missing_path");
        assert_int_equal(set.count, 0);
        glove_grant_set_clear(&set);
}

/* Writable grants of the host's system trees are refused by path; read-only
 * ones, /tmp and /var/tmp, and /root's non-hidden entries are not. */
static void test_system_directory(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        const char *system[] = {"/usr", "/usr/bin", "/etc", "/var", "/var/lib", "/root", "/boot", "/lib", "/sbin"};
        for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++) {
                struct stat st;
                if (lstat(system[i], &st) < 0 || !S_ISDIR(st.st_mode))
                        continue; /* a merged-/usr link, or absent on this host */
                add_fails(&set, system[i], GLOVE_GRANT_WRITE, false, NULL, EPERM, "grant.system_directory");
                add_fails(&set, system[i], GLOVE_GRANT_WRITE, true, NULL, EPERM, "grant.system_directory");
        }
        add_ok(&set, "/usr", GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, "/var/tmp", GLOVE_GRANT_WRITE, false, NULL);
        add_ok(&set, P("dir"), GLOVE_GRANT_WRITE, false, NULL);
        glove_grant_set_clear(&set);
        glove_grant_set_init(&set);
        set.allow_system_write = true;
        add_ok(&set, "/usr", GLOVE_GRANT_WRITE, false, NULL);
        glove_grant_set_clear(&set);
}

/* A directory holding one of the caller's markers (here gloved's bootstrap
 * secret) is refused, and so is anything inside it, in either mode, with
 * the caller's code; without guards the container refuses nothing of it. */
static const struct glove_grant_marker test_markers[] = { { "bootstrap-secret", S_IFREG } };

static void test_guard_markers(void **state) {
        (void)state;
        assert_int_equal(mkdir(P("rt"), 0700), 0);
        assert_int_equal(mkdir(P("rt/inner"), 0700), 0);
        touch("rt/bootstrap-secret");
        struct glove_grant_guards guards = { .code = "grant.gloved_runtime", .markers = test_markers, .n_markers = 1 };
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_ok(&set, P("rt"), GLOVE_GRANT_READ, false, NULL);
        glove_grant_set_clear(&set);
        set.guards = &guards;
        add_fails(&set, P("rt"), GLOVE_GRANT_READ, false, NULL, EPERM, "grant.gloved_runtime");
        add_fails(&set, P("rt/bootstrap-secret"), GLOVE_GRANT_READ, false, NULL, EPERM, "grant.gloved_runtime");
        add_fails(&set, P("rt/inner"), GLOVE_GRANT_WRITE, false, NULL, EPERM, "grant.gloved_runtime");
        assert_int_equal(unlink(P("rt/bootstrap-secret")), 0);
        add_ok(&set, P("rt"), GLOVE_GRANT_READ, false, NULL);
        glove_grant_set_clear(&set);
}

/* A guarded directory: a grant holding it, inside it or of it is refused
 * with the caller's code; a sibling is not. glove_grant_guards_check
 * answers the same for a bare path. */
static void test_guard_dirs(void **state) {
        (void)state;
        assert_int_equal(mkdir(P("gd"), 0700), 0);
        assert_int_equal(mkdir(P("gd/st"), 0700), 0);
        assert_int_equal(mkdir(P("gd/other"), 0700), 0);
        struct glove_grant_guards guards = { .code = "test.guarded" };
        struct glove_error err = { 0 };
        assert_int_equal(glove_grant_guards_add(&guards, P("gd/st"), "a test directory", &err), 0);
        assert_int_equal(glove_grant_guards_add(&guards, "relative", "x", &err), -EINVAL);
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        set.guards = &guards;
        add_fails(&set, P("gd"), GLOVE_GRANT_READ, false, NULL, EPERM, "test.guarded");
        add_fails(&set, P("gd/st"), GLOVE_GRANT_WRITE, false, NULL, EPERM, "test.guarded");
        add_ok(&set, P("gd/other"), GLOVE_GRANT_WRITE, false, NULL);
        glove_grant_set_clear(&set);
        assert_int_equal(glove_grant_guards_check(&guards, P("gd"), &err), -EPERM);
        assert_string_equal(err.code, "test.guarded");
        assert_int_equal(glove_grant_guards_check(&guards, P("gd/other"), &err), 0);
        assert_int_equal(glove_grant_guards_check(NULL, P("gd"), &err), 0);
        glove_grant_guards_free(&guards);
}

static void test_fifo_refused(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_fails(&set, P("fifo"), GLOVE_GRANT_READ, false, NULL, EINVAL, "grant.file_type");
        add_fails(&set, P("fifo"), GLOVE_GRANT_WRITE, false, NULL, EINVAL, "grant.file_type");
        glove_grant_set_clear(&set);
}

static void test_same_path_same_mode_merged(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_ok(&set, P("dir"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, P("dir"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, P("dir/"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, "dir/sub/..", GLOVE_GRANT_READ, false, base);
        assert_int_equal(set.count, 1);
        assert_string_equal(set.items[0].path, P("dir"));
        add_ok(&set, P("file.txt"), GLOVE_GRANT_WRITE, false, NULL);
        add_ok(&set, P("file.txt"), GLOVE_GRANT_WRITE, false, NULL);
        assert_int_equal(set.count, 2);
        glove_grant_set_clear(&set);
}

static void test_workspace_merges_with_write(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_ok(&set, P("b"), GLOVE_GRANT_WRITE, false, NULL);
        add_ok(&set, P("b"), GLOVE_GRANT_WRITE, true, NULL);
        assert_int_equal(set.count, 1);
        const struct glove_grant *ws = glove_grant_set_workspace(&set);
        assert_non_null(ws);
        assert_string_equal(ws->path, P("b"));
        assert_int_equal(ws->mode, GLOVE_GRANT_WRITE);
        assert_true(ws->workspace);
        glove_grant_set_clear(&set);
}

static void test_nested_same_mode_accepted(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_ok(&set, P("dir"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, P("dir/sub"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, P("dir/sub/deep.txt"), GLOVE_GRANT_READ, false, NULL);
        assert_int_equal(set.count, 3);
        glove_grant_set_clear(&set);
        add_ok(&set, P("dir/sub"), GLOVE_GRANT_WRITE, false, NULL);
        add_ok(&set, P("dir"), GLOVE_GRANT_WRITE, false, NULL);
        assert_int_equal(set.count, 2);
        assert_string_equal(set.items[0].path, P("dir/sub"));
        assert_string_equal(set.items[1].path, P("dir"));
        glove_grant_set_clear(&set);
}

static void test_nested_different_mode_conflict(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        /* Outer first. */
        add_ok(&set, P("dir"), GLOVE_GRANT_READ, false, NULL);
        add_fails(&set, P("dir/sub"), GLOVE_GRANT_WRITE, false, NULL, EINVAL, "grant.conflict");
        add_fails(&set, P("dir/sub/deep.txt"), GLOVE_GRANT_WRITE, false, NULL, EINVAL, "grant.conflict");
        add_fails(&set, P("dir/sub"), GLOVE_GRANT_WRITE, true, NULL, EINVAL, "grant.conflict");
        glove_grant_set_clear(&set);
        /* Inner first. */
        add_ok(&set, P("dir/sub"), GLOVE_GRANT_WRITE, false, NULL);
        add_fails(&set, P("dir"), GLOVE_GRANT_READ, false, NULL, EINVAL, "grant.conflict");
        add_fails(&set, base, GLOVE_GRANT_READ, false, NULL, EINVAL, "grant.conflict");
        glove_grant_set_clear(&set);
        add_ok(&set, P("dir/sub"), GLOVE_GRANT_READ, false, NULL);
        add_fails(&set, P("dir"), GLOVE_GRANT_WRITE, true, NULL, EINVAL, "grant.conflict");
        assert_null(glove_grant_set_workspace(&set));
        glove_grant_set_clear(&set);
        /* The same path with two modes. */
        add_ok(&set, P("file.txt"), GLOVE_GRANT_READ, false, NULL);
        add_fails(&set, P("file.txt"), GLOVE_GRANT_WRITE, false, NULL, EINVAL, "grant.conflict");
        add_fails(&set, "./file.txt", GLOVE_GRANT_WRITE, false, base, EINVAL, "grant.conflict");
        assert_int_equal(set.count, 1);
        assert_int_equal(set.items[0].mode, GLOVE_GRANT_READ);
        glove_grant_set_clear(&set);
}

static void test_sibling_prefix_not_nested(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        /* base/bc is not inside base/b: different modes are fine. */
        add_ok(&set, P("b"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, P("bc"), GLOVE_GRANT_WRITE, false, NULL);
        add_ok(&set, P("bfile"), GLOVE_GRANT_WRITE, false, NULL);
        add_ok(&set, P("bfile2"), GLOVE_GRANT_READ, false, NULL);
        assert_int_equal(set.count, 4);
        glove_grant_set_clear(&set);
}

static void test_workspace_twice(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_ok(&set, P("dir"), GLOVE_GRANT_WRITE, true, NULL);
        add_fails(&set, P("b"), GLOVE_GRANT_WRITE, true, NULL, EINVAL, "grant.workspace_twice");
        add_fails(&set, P("dir"), GLOVE_GRANT_WRITE, true, NULL, EINVAL, "grant.workspace_twice");
        const struct glove_grant *ws = glove_grant_set_workspace(&set);
        assert_non_null(ws);
        assert_string_equal(ws->path, P("dir"));
        assert_true(ws->is_dir);
        assert_int_equal(ws->mode, GLOVE_GRANT_WRITE);
        /* Ordinary grants are still taken. */
        add_ok(&set, P("b"), GLOVE_GRANT_READ, false, NULL);
        assert_int_equal(set.count, 2);
        assert_ptr_equal(glove_grant_set_workspace(&set), &set.items[0]);
        glove_grant_set_clear(&set);
}

static void test_workspace_not_dir(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        add_fails(&set, P("file.txt"), GLOVE_GRANT_WRITE, true, NULL, ENOTDIR, "grant.workspace_not_dir");
        assert_null(glove_grant_set_workspace(&set));
        /* A file as a plain grant is fine. */
        add_ok(&set, P("file.txt"), GLOVE_GRANT_WRITE, false, NULL);
        glove_grant_set_clear(&set);
}

static void test_too_many(void **state) {
        (void)state;
        static struct glove_grant_set set;
        glove_grant_set_init(&set);
        char rel[32];
        for (int i = 0; i < GLOVE_GRANTS_MAX; i++) {
                snprintf(rel, sizeof(rel), "many/d%d", i);
                add_ok(&set, P(rel), i % 2 ? GLOVE_GRANT_WRITE : GLOVE_GRANT_READ, false, NULL);
        }
        assert_int_equal(set.count, GLOVE_GRANTS_MAX);
        snprintf(rel, sizeof(rel), "many/d%d", GLOVE_GRANTS_MAX);
        add_fails(&set, P(rel), GLOVE_GRANT_READ, false, NULL, E2BIG, "grant.too_many");
        /* A merge needs no new slot. */
        add_ok(&set, P("many/d0"), GLOVE_GRANT_READ, false, NULL);
        assert_int_equal(set.count, GLOVE_GRANTS_MAX);
        glove_grant_set_clear(&set);
}

static void test_mode_name(void **state) {
        (void)state;
        assert_string_equal(glove_grant_mode_name(GLOVE_GRANT_READ), "read");
        assert_string_equal(glove_grant_mode_name(GLOVE_GRANT_WRITE), "write");
}

/* check_hidden with the identity stat() reports for rel. */
static int hidden(const struct glove_grant_set *set, const char *rel, struct glove_error *err) {
        struct stat st;
        assert_int_equal(stat(P(rel), &st), 0);
        glove_error_clear(err);
        return glove_grant_set_check_hidden(set, P(rel), st.st_dev, st.st_ino, err);
}

static void assert_exposed(const struct glove_grant_set *set, const char *rel) {
        struct glove_error err = {0};
        int r = hidden(set, rel, &err);
        if (r != -EPERM)
                fail_msg("%s: expected -EPERM (exposed), got %d", rel, r);
        assert_string_equal(err.code, "grant.exposes_audit_log");
        assert_int_equal(err.errnum, EPERM);
        assert_non_null(strstr(err.message, P(rel)));
}

static void assert_hidden(const struct glove_grant_set *set, const char *rel) {
        struct glove_error err = {0};
        int r = hidden(set, rel, &err);
        if (r != 0)
                fail_msg("%s: expected 0 (hidden), got %d %s: %s", rel, r, err.code ? err.code : "", err.message);
        assert_false(glove_error_is_set(&err));
}

static void test_check_hidden(void **state) {
        (void)state;
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        /* Nothing granted: everything is hidden. */
        assert_hidden(&set, "outside.log");
        add_ok(&set, P("dir"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, P("file.txt"), GLOVE_GRANT_READ, false, NULL);
        add_ok(&set, P("b"), GLOVE_GRANT_WRITE, false, NULL);
        add_ok(&set, P("bfile"), GLOVE_GRANT_WRITE, false, NULL);
        /* Beneath a granted directory, at any depth. */
        assert_exposed(&set, "dir/sub/deep.txt");
        /* Outside every grant. */
        assert_hidden(&set, "outside.log");
        /* A granted file itself. */
        assert_exposed(&set, "file.txt");
        /* The same inode as a granted file under another name. */
        assert_exposed(&set, "hard.log");
        /* Common prefix, different component: /base/bc/... is not under /base/b,
         * and /base/bfile2 is not /base/bfile. */
        assert_hidden(&set, "bc/audit.log");
        assert_hidden(&set, "bfile2");
        glove_grant_set_clear(&set);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_absolute_dir),
                cmocka_unit_test(test_identity_matches_stat),
                cmocka_unit_test(test_relative_to_cwd),
                cmocka_unit_test(test_dotdot_normalized),
                cmocka_unit_test(test_symlink_refused),
                cmocka_unit_test(test_missing_path),
                cmocka_unit_test(test_restricted),
                cmocka_unit_test(test_fifo_refused),
                cmocka_unit_test(test_system_directory),
                cmocka_unit_test(test_guard_markers),
                cmocka_unit_test(test_guard_dirs),
                cmocka_unit_test(test_same_path_same_mode_merged),
                cmocka_unit_test(test_workspace_merges_with_write),
                cmocka_unit_test(test_nested_same_mode_accepted),
                cmocka_unit_test(test_nested_different_mode_conflict),
                cmocka_unit_test(test_sibling_prefix_not_nested),
                cmocka_unit_test(test_workspace_twice),
                cmocka_unit_test(test_workspace_not_dir),
                cmocka_unit_test(test_too_many),
                cmocka_unit_test(test_mode_name),
                cmocka_unit_test(test_check_hidden),
        };
        return cmocka_run_group_tests(tests, setup_tree, teardown_tree);
}

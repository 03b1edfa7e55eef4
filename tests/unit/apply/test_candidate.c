/* SPDX-License-Identifier: Apache-2.0 */
/* The apply candidate (glove/apply/candidate.h): the copy of a stage beside
 * a source, checked against the stage's manifest, and the no-follow removal
 * of a tree, on real trees in a private temporary directory. */
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/apply/candidate.h"
#include "glove/supervisor/manifest.h"

struct env {
        char base[64];   /* the private temporary directory */
        char stage[96];  /* base/stage */
        char parent[96]; /* base/parent: where candidates go */
        int stage_fd, parent_fd;
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st, (void)ftw;
        return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        snprintf(e->base, sizeof(e->base), "/tmp/glove-candidate-XXXXXX");
        if (!mkdtemp(e->base))
                return -1;
        snprintf(e->stage, sizeof(e->stage), "%s/stage", e->base);
        snprintf(e->parent, sizeof(e->parent), "%s/parent", e->base);
        if (mkdir(e->stage, 0755) < 0 || chmod(e->stage, 0755) < 0 || mkdir(e->parent, 0700) < 0)
                return -1;
        e->stage_fd = open(e->stage, O_PATH | O_DIRECTORY | O_CLOEXEC);
        e->parent_fd = open(e->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (e->stage_fd < 0 || e->parent_fd < 0)
                return -1;
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        close(e->stage_fd);
        close(e->parent_fd);
        /* The stage holds read-only directories: removed as a candidate is. */
        int tmp = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (tmp < 0 || glove_apply_tree_remove(tmp, e->base + strlen("/tmp/"), NULL) < 0)
                nftw(e->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        if (tmp >= 0)
                close(tmp);
        free(e);
        return 0;
}

/* Writes text to dir/rel with mode. */
static void put(const char *dir, const char *rel, const char *text, mode_t mode) {
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static void mkd(const char *dir, const char *rel, mode_t mode) {
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, rel);
        assert_int_equal(mkdir(p, 0700), 0);
        assert_int_equal(chmod(p, mode), 0);
}

/* A stage: files and directories of several modes, one of them read-only
 * and one file of 300 KiB (more than one copy chunk). */
static void stage_tree(struct env *e) {
        put(e->stage, "README", "read me\n", 0644);
        put(e->stage, "run.sh", "#!/bin/sh\necho hi\n", 0755);
        put(e->stage, "empty", "", 0600);
        mkd(e->stage, "src", 0750);
        put(e->stage, "src/main.c", "int main(void) { return 0; }\n", 0644);
        mkd(e->stage, "src/lib", 0755);
        put(e->stage, "src/lib/frozen", "read only\n", 0400);
        mkd(e->stage, "ro", 0755);
        put(e->stage, "ro/data", "data\n", 0644);
        assert_int_equal(chmod(strcat(strcpy((char[128]){0}, e->stage), "/ro"), 0555), 0);
        char p[512];
        snprintf(p, sizeof(p), "%s/big", e->stage);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        char buf[1024];
        for (int i = 0; i < 300; i++) {
                memset(buf, 'a' + i % 26, sizeof(buf));
                assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
        }
        close(fd);
}

static struct glove_manifest *build_at(int fd) {
        struct glove_manifest *m = NULL;
        struct glove_error err = {0};
        int r = glove_manifest_build(fd, 0, &m, &err);
        if (r < 0)
                fprintf(stderr, "build: %s: %s\n", err.code, err.message);
        assert_int_equal(r, 0);
        return m;
}

static struct glove_manifest *stage_manifest(struct env *e) {
        struct glove_manifest *m = build_at(e->stage_fd);
        struct glove_error err = {0};
        assert_int_equal(glove_manifest_check_apply(m, geteuid(), &err), 0);
        return m;
}

static struct glove_manifest *candidate_manifest(struct env *e, const char *name) {
        int fd = openat(e->parent_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        assert_true(fd >= 0);
        struct glove_manifest *m = build_at(fd);
        close(fd);
        return m;
}

static bool exists(int dirfd, const char *rel) {
        struct stat st;
        return fstatat(dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int copy(struct env *e, const struct glove_manifest *m, const char *name, mode_t root_mode,
                struct glove_error *err) {
        *err = (struct glove_error){0};
        return glove_apply_candidate_copy(e->stage_fd, m, e->parent_fd, name, root_mode, err);
}

/* ---- the copy ---- */

static void test_copy_equals_manifest(void **state) {
        struct env *e = *state;
        stage_tree(e);
        struct glove_manifest *m = stage_manifest(e);
        struct glove_error err;
        int r = copy(e, m, "cand", 0755, &err);
        if (r < 0)
                fprintf(stderr, "copy: %s: %s\n", err.code, err.message);
        assert_int_equal(r, 0);
        struct glove_manifest *c = candidate_manifest(e, "cand");
        assert_string_equal(c->digest, m->digest);
        assert_int_equal(c->n, m->n);
        for (size_t i = 0; i < c->n; i++) {
                assert_int_equal(c->v[i].uid, geteuid());
                assert_int_equal(c->v[i].gid, getegid());
                assert_int_equal(c->v[i].nlink, c->v[i].type == GLOVE_MANIFEST_FILE ? 1 : c->v[i].nlink);
                assert_false(c->v[i].sparse);
                assert_false(c->v[i].xattr);
        }
        /* The copy passes the apply checks itself. */
        assert_int_equal(glove_manifest_check_apply(c, geteuid(), &err), 0);
        glove_manifest_free(c);
        /* A second candidate under another name, from the same manifest. */
        assert_int_equal(copy(e, m, "cand2", 0755, &err), 0);
        c = candidate_manifest(e, "cand2");
        assert_string_equal(c->digest, m->digest);
        glove_manifest_free(c);
        glove_manifest_free(m);
}

static void test_root_mode(void **state) {
        struct env *e = *state;
        stage_tree(e);
        struct glove_manifest *m = stage_manifest(e);
        struct glove_error err;
        assert_int_equal(copy(e, m, "cand", 0710, &err), 0);
        struct stat st;
        assert_int_equal(fstatat(e->parent_fd, "cand", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(st.st_mode & 07777, 0710);
        struct glove_manifest *c = candidate_manifest(e, "cand");
        assert_string_not_equal(c->digest, m->digest);
        assert_int_equal(c->v[0].mode, 0710);
        for (size_t i = 1; i < c->n; i++) {
                assert_string_equal(c->v[i].path, m->v[i].path);
                assert_int_equal(c->v[i].mode, m->v[i].mode);
                assert_string_equal(c->v[i].sha256, m->v[i].sha256);
        }
        glove_manifest_free(c);
        glove_manifest_free(m);
}

static void test_candidate_exists(void **state) {
        struct env *e = *state;
        stage_tree(e);
        struct glove_manifest *m = stage_manifest(e);
        mkd(e->parent, "cand", 0700);
        put(e->parent, "cand/keep", "mine", 0600);
        struct glove_error err;
        assert_int_equal(copy(e, m, "cand", 0755, &err), -EEXIST);
        assert_string_equal(err.code, "apply.candidate_exists");
        assert_true(exists(e->parent_fd, "cand/keep"));
        assert_false(exists(e->parent_fd, "cand/README"));
        /* Not one path component. */
        static const char *const bad[] = {"", ".", "..", "a/b", "/abs"};
        for (size_t i = 0; i < 5; i++) {
                assert_int_equal(copy(e, m, bad[i], 0755, &err), -EINVAL);
                assert_string_equal(err.code, "apply.copy");
        }
        glove_manifest_free(m);
}

static void expect_mismatch(struct env *e, const struct glove_manifest *m, const char *path) {
        struct glove_error err;
        int r = copy(e, m, "cand", 0755, &err);
        if (r != -ESTALE)
                fprintf(stderr, "expected a mismatch, got %d %s: %s\n", r, err.code, err.message);
        assert_int_equal(r, -ESTALE);
        assert_string_equal(err.code, "apply.candidate_mismatch");
        assert_non_null(strstr(err.message, path));
        assert_false(exists(e->parent_fd, "cand"));
}

static void test_stage_changed(void **state) {
        struct env *e = *state;
        stage_tree(e);
        struct glove_manifest *m = stage_manifest(e);
        /* The same size, other contents: found by the candidate's manifest. */
        put(e->stage, "src/main.c", "int main(void) { return 1; }\n", 0644);
        expect_mismatch(e, m, "src/main.c");
        put(e->stage, "src/main.c", "int main(void) { return 0; }\n", 0644);
        /* Longer: found while copying. */
        put(e->stage, "README", "read me, and more\n", 0644);
        expect_mismatch(e, m, "README");
        put(e->stage, "README", "read me\n", 0644);
        /* A mode changed: the modes are the manifest's, not the stage's. */
        put(e->stage, "run.sh", "#!/bin/sh\necho hi\n", 0700);
        struct glove_error err;
        assert_int_equal(copy(e, m, "cand", 0755, &err), 0);
        struct stat st;
        assert_int_equal(fstatat(e->parent_fd, "cand/run.sh", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "cand", &err), 0);
        put(e->stage, "run.sh", "#!/bin/sh\necho hi\n", 0755);
        /* A file replaced by a FIFO (the copy does not wait on it). */
        char p[512];
        snprintf(p, sizeof(p), "%s/empty", e->stage);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(mkfifo(p, 0600), 0);
        expect_mismatch(e, m, "empty");
        assert_int_equal(unlink(p), 0);
        /* Removed. */
        expect_mismatch(e, m, "empty");
        put(e->stage, "empty", "", 0600);
        /* A directory replaced by a symbolic link to a copy of it. */
        char q[512];
        snprintf(p, sizeof(p), "%s/src", e->stage);
        snprintf(q, sizeof(q), "%s/src-moved", e->base);
        assert_int_equal(rename(p, q), 0);
        assert_int_equal(symlink(q, p), 0);
        expect_mismatch(e, m, "src");
        assert_int_equal(unlink(p), 0);
        assert_int_equal(rename(q, p), 0);
        /* Back as it was: the copy succeeds. */
        assert_int_equal(copy(e, m, "cand", 0755, &err), 0);
        glove_manifest_free(m);
}

static void test_no_space(void **state) {
        struct env *e = *state;
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: a small tmpfs for the parent needs root\n");
                skip();
        }
        stage_tree(e); /* 300 KiB in big */
        struct glove_manifest *m = stage_manifest(e);
        if (mount("candidate-test", e->parent, "tmpfs", 0, "size=64k,mode=0700") < 0) {
                fprintf(stderr, "skipped: mount tmpfs: %s\n", strerror(errno));
                skip();
        }
        int pfd = open(e->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(pfd >= 0);
        struct glove_error err = {0};
        int r = glove_apply_candidate_copy(e->stage_fd, m, pfd, "cand", 0755, &err);
        assert_int_equal(r, -ENOSPC);
        assert_string_equal(err.code, "apply.no_space");
        assert_non_null(strstr(err.message, "big"));
        assert_false(exists(pfd, "cand"));
        close(pfd);
        assert_int_equal(umount2(e->parent, MNT_DETACH), 0);
        glove_manifest_free(m);
}

/* ---- removal ---- */

static void test_remove_deep(void **state) {
        struct env *e = *state;
        /* The candidate and 64 levels beneath it, a read-only directory and
         * a file in each level. */
        char rel[512] = "t";
        mkd(e->parent, rel, 0755);
        for (int i = 0; i < GLOVE_MANIFEST_DEPTH_MAX; i++) {
                strcat(rel, "/d");
                mkd(e->parent, rel, 0755);
                char f[600];
                snprintf(f, sizeof(f), "%s/f", rel);
                put(e->parent, f, "x", 0400);
        }
        assert_int_equal(chmod(strcat(strcpy((char[640]){0}, e->parent), "/t/d"), 0500), 0);
        struct glove_error err = {0};
        int r = glove_apply_tree_remove(e->parent_fd, "t", &err);
        if (r < 0)
                fprintf(stderr, "remove: %s: %s\n", err.code, err.message);
        assert_int_equal(r, 0);
        assert_false(exists(e->parent_fd, "t"));
        /* Idempotent. */
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), 0);
        /* A file, or a symbolic link, by that name is removed itself. */
        put(e->parent, "t", "file", 0600);
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), 0);
        assert_false(exists(e->parent_fd, "t"));
        /* One level more than a candidate can have is refused. */
        strcpy(rel, "t");
        mkd(e->parent, rel, 0755);
        for (int i = 0; i < GLOVE_MANIFEST_DEPTH_MAX + 1; i++) {
                strcat(rel, "/d");
                mkd(e->parent, rel, 0755);
        }
        err = (struct glove_error){0};
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), -ELOOP);
        assert_string_equal(err.code, "apply.remove");
        /* With an O_PATH parent (it is synced through a new descriptor). */
        rel[strlen(rel) - 2] = '\0';
        char p[700];
        snprintf(p, sizeof(p), "%s/%s/d", e->parent, rel);
        assert_int_equal(rmdir(p), 0);
        int opath = open(e->parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(glove_apply_tree_remove(opath, "t", &err), 0);
        close(opath);
        assert_false(exists(e->parent_fd, "t"));
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "..", &err), -EINVAL);
}

static void test_remove_no_follow(void **state) {
        struct env *e = *state;
        char outside[128], p[512];
        snprintf(outside, sizeof(outside), "%s/outside", e->base);
        assert_int_equal(mkdir(outside, 0700), 0);
        put(outside, "precious", "keep me", 0600);
        mkd(e->parent, "t", 0755);
        mkd(e->parent, "t/sub", 0755);
        snprintf(p, sizeof(p), "%s/t/sub/dirlink", e->parent);
        assert_int_equal(symlink(outside, p), 0);
        snprintf(p, sizeof(p), "%s/t/filelink", e->parent);
        char target[256];
        snprintf(target, sizeof(target), "%s/precious", outside);
        assert_int_equal(symlink(target, p), 0);
        struct glove_error err = {0};
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), 0);
        assert_false(exists(e->parent_fd, "t"));
        struct stat st;
        assert_int_equal(stat(target, &st), 0);
        assert_int_equal(st.st_size, 7);
        assert_int_equal(stat(outside, &st), 0);
        /* A symbolic link as the name itself: the link goes, not its target. */
        snprintf(p, sizeof(p), "%s/t", e->parent);
        assert_int_equal(symlink(outside, p), 0);
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), 0);
        assert_false(exists(e->parent_fd, "t"));
        assert_int_equal(stat(target, &st), 0);
}

static void test_remove_mount(void **state) {
        struct env *e = *state;
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: mounting a tmpfs inside the tree needs root\n");
                skip();
        }
        mkd(e->parent, "t", 0755);
        mkd(e->parent, "t/m", 0755);
        put(e->parent, "t/before", "x", 0600);
        char p[512];
        snprintf(p, sizeof(p), "%s/t/m", e->parent);
        if (mount("candidate-test", p, "tmpfs", 0, "size=64k") < 0) {
                fprintf(stderr, "skipped: mount tmpfs: %s\n", strerror(errno));
                skip();
        }
        put(e->parent, "t/m/inside", "on the mount", 0600);
        struct glove_error err = {0};
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), -EXDEV);
        assert_string_equal(err.code, "apply.remove");
        assert_true(exists(e->parent_fd, "t/m/inside"));
        assert_int_equal(umount2(p, MNT_DETACH), 0);
        /* A bind mount of the same file system is a mount all the same. */
        char src[256];
        snprintf(src, sizeof(src), "%s/bindsrc", e->base);
        assert_int_equal(mkdir(src, 0700), 0);
        put(src, "inside", "bound", 0600);
        assert_int_equal(mount(src, p, NULL, MS_BIND, NULL), 0);
        err = (struct glove_error){0};
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), -EXDEV);
        assert_int_equal(umount2(p, MNT_DETACH), 0);
        assert_true(exists(AT_FDCWD, strcat(src, "/inside")));
        assert_int_equal(glove_apply_tree_remove(e->parent_fd, "t", &err), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_copy_equals_manifest, setup, teardown),
                cmocka_unit_test_setup_teardown(test_root_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_candidate_exists, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stage_changed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_space, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remove_deep, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remove_no_follow, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remove_mount, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

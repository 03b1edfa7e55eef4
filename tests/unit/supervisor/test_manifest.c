/* SPDX-License-Identifier: Apache-2.0 */
/* Manifests (glove/supervisor/manifest.h): the no-follow walker and its
 * bounds, the digest, the stored JSON form, what apply accepts and the
 * difference of two manifests, on real trees in a private temporary
 * directory. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/supervisor/manifest.h"
#include "manifest_internal.h"
#include "prepare_internal.h"

struct env {
        char base[64]; /* the private temporary directory */
        char root[96]; /* base/t: the tree under test */
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st, (void)ftw;
        return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        snprintf(e->base, sizeof(e->base), "/tmp/glove-manifest-XXXXXX");
        if (!mkdtemp(e->base))
                return -1;
        snprintf(e->root, sizeof(e->root), "%s/t", e->base);
        if (mkdir(e->root, 0755) < 0 || chmod(e->root, 0755) < 0)
                return -1;
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        nftw(e->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(e);
        return 0;
}

static void pathof(char *out, size_t cap, const struct env *e, const char *rel) {
        snprintf(out, cap, "%s/%s", e->root, rel);
}

static void put(const struct env *e, const char *rel, const char *text, mode_t mode) {
        char p[512];
        pathof(p, sizeof(p), e, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static void mkd(const struct env *e, const char *rel, mode_t mode) {
        char p[512];
        pathof(p, sizeof(p), e, rel);
        assert_int_equal(mkdir(p, 0700), 0);
        assert_int_equal(chmod(p, mode), 0);
}

/* A small tree: a (file), d/ (dir), d/b (file), d/e/ (empty dir). */
static void small_tree(const struct env *e) {
        put(e, "a", "alpha\n", 0644);
        mkd(e, "d", 0755);
        put(e, "d/b", "bravo bravo\n", 0600);
        mkd(e, "d/e", 0700);
}

static int build_rc(const struct env *e, size_t max_entries, uint64_t max_bytes, struct glove_manifest **m,
                    struct glove_error *err) {
        int fd = open(e->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        *err = (struct glove_error){0};
        int r = glove_manifest_build_bounded(fd, max_bytes, max_entries, m, err);
        close(fd);
        return r;
}

static struct glove_manifest *build(const struct env *e) {
        struct glove_manifest *m = NULL;
        struct glove_error err;
        int r = build_rc(e, GLOVE_MANIFEST_ENTRIES_MAX, 0, &m, &err);
        if (r < 0)
                fprintf(stderr, "build: %s: %s\n", err.code, err.message);
        assert_int_equal(r, 0);
        assert_non_null(m);
        return m;
}

static void expect_build_error(const struct env *e, size_t max_entries, uint64_t max_bytes, int rc,
                               const char *code) {
        struct glove_manifest *m = NULL;
        struct glove_error err;
        int r = build_rc(e, max_entries, max_bytes, &m, &err);
        if (r != rc)
                fprintf(stderr, "expected %s, got %d %s: %s\n", code, r, err.code, err.message);
        assert_int_equal(r, rc);
        assert_null(m);
        assert_string_equal(err.code, code);
}

static const struct glove_manifest_entry *find(const struct glove_manifest *m, const char *path) {
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->v[i].path, path) == 0)
                        return &m->v[i];
        return NULL;
}

static void sha_hex(const void *data, size_t len, char out[65]) {
        uint8_t md[32];
        assert_int_equal(glove_digest_sha256(data, len, md, NULL), 0);
        assert_int_equal(glove_digest_hex_encode(md, 32, out, 65), 0);
}

static char *digest_of(const struct env *e) {
        struct glove_manifest *m = build(e);
        char *d = strdup(m->digest);
        glove_manifest_free(m);
        return d;
}

/* ---- the walk and the digest ---- */

static void test_entries(void **state) {
        struct env *e = *state;
        small_tree(e);
        struct glove_manifest *m = build(e);
        assert_int_equal(m->n, 5);
        const char *order[] = {".", "a", "d", "d/b", "d/e"};
        for (size_t i = 0; i < 5; i++)
                assert_string_equal(m->v[i].path, order[i]);
        const struct glove_manifest_entry *a = find(m, "a"), *root = find(m, "."), *b = find(m, "d/b");
        assert_int_equal(root->type, GLOVE_MANIFEST_DIR);
        assert_int_equal(root->mode, 0755);
        assert_string_equal(root->sha256, "");
        assert_int_equal(a->type, GLOVE_MANIFEST_FILE);
        assert_int_equal(a->mode, 0644);
        assert_int_equal(a->size, 6);
        assert_int_equal(a->nlink, 1);
        assert_int_equal(a->uid, geteuid());
        assert_false(a->sparse);
        char hex[65];
        sha_hex("alpha\n", 6, hex);
        assert_string_equal(a->sha256, hex);
        assert_int_equal(b->mode, 0600);
        assert_int_equal(m->file_bytes, 6 + 12);
        assert_int_equal(find(m, "d/e")->type, GLOVE_MANIFEST_DIR);

        /* The digest is the one the header defines, computed here from
         * the whole array at once. */
        json_t *arr = json_array();
        for (size_t i = 0; i < m->n; i++) {
                const struct glove_manifest_entry *x = &m->v[i];
                const char *t = x->type == GLOVE_MANIFEST_DIR ? "dir" : "file";
                json_array_append_new(arr, json_pack("{s:I,s:s,s:s,s:I,s:s}", "mode", (json_int_t)x->mode, "path",
                                                     x->path, "sha256", x->sha256, "size", (json_int_t)x->size,
                                                     "type", t));
        }
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(glove_json_encode_canonical(arr, &text, &len, NULL), 0);
        json_decref(arr);
        char *buf = malloc(18 + len);
        memcpy(buf, "glove.manifest.v1", 18); /* with its NUL */
        memcpy(buf + 18, text, len);
        sha_hex(buf, 18 + len, hex);
        assert_string_equal(m->digest, hex);
        free(buf);
        free(text);
        glove_manifest_free(m);
}

static void test_digest_changes(void **state) {
        struct env *e = *state;
        small_tree(e);
        char p[512], q[512];
        char *d0 = digest_of(e), *d;
        /* Stable. */
        d = digest_of(e);
        assert_string_equal(d, d0);
        free(d);
        /* Not the times, not the owner, not the link count. */
        pathof(p, sizeof(p), e, "a");
        struct timespec ts[2] = {{.tv_sec = 1000}, {.tv_sec = 2000}};
        assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
        snprintf(q, sizeof(q), "%s/outside-link", e->base);
        assert_int_equal(link(p, q), 0);
        if (geteuid() == 0)
                assert_int_equal(chown(p, 12345, 12345), 0);
        d = digest_of(e);
        assert_string_equal(d, d0);
        free(d);
        assert_int_equal(unlink(q), 0);
        /* Contents of the same size. */
        put(e, "a", "alphA\n", 0644);
        d = digest_of(e);
        assert_string_not_equal(d, d0);
        free(d);
        put(e, "a", "alpha\n", 0644);
        d = digest_of(e);
        assert_string_equal(d, d0);
        free(d);
        /* Mode. */
        assert_int_equal(chmod(p, 0640), 0);
        d = digest_of(e);
        assert_string_not_equal(d, d0);
        free(d);
        assert_int_equal(chmod(p, 0644), 0);
        /* Name. */
        pathof(q, sizeof(q), e, "a2");
        assert_int_equal(rename(p, q), 0);
        d = digest_of(e);
        assert_string_not_equal(d, d0);
        free(d);
        assert_int_equal(rename(q, p), 0);
        /* Type: the empty directory d/e becomes an empty file. */
        pathof(q, sizeof(q), e, "d/e");
        assert_int_equal(rmdir(q), 0);
        put(e, "d/e", "", 0700);
        d = digest_of(e);
        assert_string_not_equal(d, d0);
        free(d);
        assert_int_equal(unlink(q), 0);
        mkd(e, "d/e", 0700);
        d = digest_of(e);
        assert_string_equal(d, d0);
        free(d);
        free(d0);
}

static void test_sorted(void **state) {
        struct env *e = *state;
        put(e, "b", "", 0644);
        mkd(e, "a", 0755);
        put(e, "a/c", "", 0644);
        put(e, "a-b", "", 0644);
        put(e, "A", "", 0644);
        put(e, "a.", "", 0644);
        /* Names whose bytes sort before "." still come after the root. */
        put(e, "-x", "", 0644);
        put(e, "#a#", "", 0644);
        put(e, " lead", "", 0644);
        struct glove_manifest *m = build(e);
        const char *order[] = {".", " lead", "#a#", "-x", "A", "a", "a-b", "a.", "a/c", "b"};
        assert_int_equal(m->n, 10);
        for (size_t i = 0; i < m->n; i++)
                assert_string_equal(m->v[i].path, order[i]);
        /* And such a manifest reads back (a baseline file) and diffs. */
        json_t *j = glove_manifest_to_json(m);
        struct glove_manifest *back = NULL;
        assert_int_equal(glove_manifest_from_json(j, &back, NULL), 0);
        assert_string_equal(back->digest, m->digest);
        json_t *d = NULL;
        assert_int_equal(glove_manifest_diff(m, back, &d, NULL), 0);
        assert_int_equal(json_integer_value(json_object_get(d, "unchanged")), 10);
        json_decref(d);
        json_decref(j);
        glove_manifest_free(back);
        glove_manifest_free(m);
}

static void test_symlink_not_followed(void **state) {
        struct env *e = *state;
        char p[512], outside[256];
        snprintf(outside, sizeof(outside), "%s/outside", e->base);
        assert_int_equal(mkdir(outside, 0700), 0);
        snprintf(p, sizeof(p), "%s/secret", outside);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        pathof(p, sizeof(p), e, "l");
        assert_int_equal(symlink(outside, p), 0);
        mkd(e, "d", 0755);
        pathof(p, sizeof(p), e, "d/up");
        assert_int_equal(symlink("..", p), 0);
        struct glove_manifest *m = build(e);
        assert_int_equal(m->n, 4); /* ".", "d", "d/up", "l" */
        const struct glove_manifest_entry *l = find(m, "l");
        assert_non_null(l);
        assert_int_equal(l->type, GLOVE_MANIFEST_SYMLINK);
        assert_int_equal(l->size, strlen(outside));
        char hex[65];
        sha_hex(outside, strlen(outside), hex);
        assert_string_equal(l->sha256, hex);
        assert_false(l->xattr);
        assert_null(find(m, "l/secret"));
        assert_int_equal(find(m, "d/up")->type, GLOVE_MANIFEST_SYMLINK);
        assert_int_equal(find(m, "d/up")->size, 2);
        assert_int_equal(m->file_bytes, 0);
        glove_manifest_free(m);
        /* The link's target text is in the digest. */
        char *d0 = digest_of(e);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(symlink("./", p), 0);
        char *d1 = digest_of(e);
        assert_string_not_equal(d0, d1);
        free(d0);
        free(d1);
}

static void test_fifo(void **state) {
        struct env *e = *state;
        char p[512];
        pathof(p, sizeof(p), e, "pipe");
        assert_int_equal(mkfifo(p, 0620), 0);
        assert_int_equal(chmod(p, 0620), 0);
        struct glove_manifest *m = build(e); /* does not wait for a writer */
        const struct glove_manifest_entry *f = find(m, "pipe");
        assert_non_null(f);
        assert_int_equal(f->type, GLOVE_MANIFEST_FIFO);
        assert_int_equal(f->mode, 0620);
        assert_int_equal(f->size, 0);
        assert_string_equal(f->sha256, "");
        json_t *j = glove_manifest_to_json(m);
        json_t *entry = json_array_get(json_object_get(j, "entries"), 1);
        assert_string_equal(json_string_value(json_object_get(entry, "type")), "fifo");
        json_decref(j);
        glove_manifest_free(m);
}

static void test_crosses_mount(void **state) {
        struct env *e = *state;
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: mounting a tmpfs beneath the tree needs root\n");
                skip();
        }
        mkd(e, "sub", 0755);
        put(e, "file", "x", 0644);
        char p[512], src[512];
        pathof(p, sizeof(p), e, "sub");
        if (mount("manifest-test", p, "tmpfs", 0, "size=64k") < 0) {
                fprintf(stderr, "skipped: mount tmpfs: %s\n", strerror(errno));
                skip();
        }
        expect_build_error(e, GLOVE_MANIFEST_ENTRIES_MAX, 0, -EXDEV, "manifest.crosses_mount");
        assert_int_equal(umount2(p, MNT_DETACH), 0);
        /* A bind mount of the same file system (same st_dev) is a mount
         * all the same. */
        snprintf(src, sizeof(src), "%s/bindsrc", e->base);
        assert_int_equal(mkdir(src, 0700), 0);
        assert_int_equal(mount(src, p, NULL, MS_BIND, NULL), 0);
        expect_build_error(e, GLOVE_MANIFEST_ENTRIES_MAX, 0, -EXDEV, "manifest.crosses_mount");
        assert_int_equal(umount2(p, MNT_DETACH), 0);
        struct glove_manifest *m = build(e);
        glove_manifest_free(m);
}

static void test_bounds(void **state) {
        struct env *e = *state;
        small_tree(e); /* 5 entries, 18 bytes of files */
        struct glove_manifest *m = NULL;
        struct glove_error err;
        assert_int_equal(build_rc(e, 5, 18, &m, &err), 0);
        glove_manifest_free(m);
        expect_build_error(e, 4, 0, -E2BIG, "manifest.too_large");
        expect_build_error(e, 5, 17, -EFBIG, "manifest.too_large");
        /* A name that is not UTF-8. */
        put(e, "bad\xff", "", 0644);
        expect_build_error(e, 100, 0, -EILSEQ, "manifest.bad_name");
}

static void test_depth(void **state) {
        struct env *e = *state;
        char rel[512] = "";
        for (int i = 0; i < GLOVE_MANIFEST_DEPTH_MAX; i++) {
                strcat(rel, i ? "/d" : "d");
                mkd(e, rel, 0755);
        }
        strcat(rel, "/f");
        put(e, rel, "deep", 0644); /* a file in the deepest directory is fine */
        struct glove_manifest *m = build(e);
        assert_int_equal(m->n, 1 + GLOVE_MANIFEST_DEPTH_MAX + 1);
        glove_manifest_free(m);
        rel[strlen(rel) - 2] = '\0';
        strcat(rel, "/d");
        mkd(e, rel, 0755);
        expect_build_error(e, GLOVE_MANIFEST_ENTRIES_MAX, 0, -ELOOP, "manifest.too_deep");
}

/* ---- the stored form ---- */

static void expect_from_json_error(json_t *j, const char *what) {
        struct glove_manifest *m = NULL;
        struct glove_error err = {0};
        int r = glove_manifest_from_json(j, &m, &err);
        if (r != -EINVAL)
                fprintf(stderr, "%s: accepted\n", what);
        assert_int_equal(r, -EINVAL);
        assert_null(m);
        assert_string_equal(err.code, "manifest.invalid");
}

static void test_json_round_trip(void **state) {
        struct env *e = *state;
        small_tree(e);
        char p[512];
        pathof(p, sizeof(p), e, "l");
        assert_int_equal(symlink("a", p), 0);
        struct glove_manifest *m = build(e);
        json_t *j = glove_manifest_to_json(m);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "schema")), "glove.manifest.v1");
        /* Through its canonical text, as it is stored. */
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(glove_json_encode_canonical(j, &text, &len, NULL), 0);
        json_t *back = NULL;
        assert_int_equal(glove_json_decode_strict(text, len, 1 << 20, GLOVE_JSON_OBJECT_ONLY, &back, NULL), 0);
        free(text);
        struct glove_manifest *m2 = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_manifest_from_json(back, &m2, &err), 0);
        assert_string_equal(m2->digest, m->digest);
        assert_int_equal(m2->n, m->n);
        assert_int_equal(m2->file_bytes, m->file_bytes);
        for (size_t i = 0; i < m->n; i++) {
                const struct glove_manifest_entry *a = &m->v[i], *b = &m2->v[i];
                assert_string_equal(a->path, b->path);
                assert_int_equal(a->type, b->type);
                assert_int_equal(a->mode, b->mode);
                assert_int_equal(a->size, b->size);
                assert_int_equal(a->nlink, b->nlink);
                assert_int_equal(a->uid, b->uid);
                assert_int_equal(a->gid, b->gid);
                assert_int_equal(a->sparse, b->sparse);
                assert_int_equal(a->xattr, b->xattr);
                assert_string_equal(a->sha256, b->sha256);
        }
        glove_manifest_free(m2);

        /* A tampered digest. */
        json_t *t = json_deep_copy(back);
        char bad[65];
        snprintf(bad, sizeof(bad), "%s", m->digest);
        bad[0] = bad[0] == '0' ? '1' : '0';
        json_object_set_new(t, "digest", json_string(bad));
        expect_from_json_error(t, "tampered digest");
        json_decref(t);
        /* A tampered entry under the old digest: the contents of "a". */
        t = json_deep_copy(back);
        json_object_set_new(json_array_get(json_object_get(t, "entries"), 1), "sha256",
                            json_string("0000000000000000000000000000000000000000000000000000000000000000"));
        expect_from_json_error(t, "tampered entry");
        json_decref(t);
        /* Unsorted entries ("a" and "d" swapped). */
        t = json_deep_copy(back);
        json_t *te = json_object_get(t, "entries");
        json_t *one = json_incref(json_array_get(te, 1));
        json_array_set(te, 1, json_array_get(te, 2));
        json_array_set_new(te, 2, one);
        expect_from_json_error(t, "unsorted");
        json_decref(t);
        /* A repeated entry. */
        t = json_deep_copy(back);
        json_array_insert_new(json_object_get(t, "entries"), 1,
                              json_deep_copy(json_array_get(json_object_get(t, "entries"), 1)));
        expect_from_json_error(t, "repeated");
        json_decref(t);
        /* A missing member of an entry, and of the manifest. */
        t = json_deep_copy(back);
        json_object_del(json_array_get(json_object_get(t, "entries"), 1), "nlink");
        expect_from_json_error(t, "missing nlink");
        json_decref(t);
        static const char *const top[] = {"digest", "entries", "file_bytes", "schema"};
        for (size_t i = 0; i < 4; i++) {
                t = json_deep_copy(back);
                json_object_del(t, top[i]);
                expect_from_json_error(t, top[i]);
                json_decref(t);
        }
        /* An unknown member, another schema, a wrong sum, a path with "..". */
        t = json_deep_copy(back);
        json_object_set_new(t, "extra", json_true());
        expect_from_json_error(t, "extra");
        json_decref(t);
        t = json_deep_copy(back);
        json_object_set_new(t, "schema", json_string("glove.manifest.v2"));
        expect_from_json_error(t, "schema");
        json_decref(t);
        t = json_deep_copy(back);
        json_object_set_new(t, "file_bytes", json_integer((json_int_t)m->file_bytes + 1));
        expect_from_json_error(t, "file_bytes");
        json_decref(t);
        t = json_deep_copy(back);
        json_object_set_new(json_array_get(json_object_get(t, "entries"), 4), "path", json_string("d/../x"));
        expect_from_json_error(t, "dot-dot");
        json_decref(t);
        /* Without the root. */
        t = json_deep_copy(back);
        json_array_remove(json_object_get(t, "entries"), 0);
        expect_from_json_error(t, "no root");
        json_decref(t);
        json_decref(back);
        json_decref(j);
        glove_manifest_free(m);
}

/* ---- what apply accepts ---- */

static void expect_apply_error(const struct env *e, uid_t owner, const char *code, const char *path) {
        struct glove_manifest *m = build(e);
        struct glove_error err = {0};
        int r = glove_manifest_check_apply(m, owner, &err);
        if (r != -EPERM)
                fprintf(stderr, "expected %s, got %d\n", code, r);
        assert_int_equal(r, -EPERM);
        assert_string_equal(err.code, code);
        assert_non_null(strstr(err.message, path));
        glove_manifest_free(m);
}

static void reset_tree(struct env *e) {
        nftw(e->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        assert_int_equal(mkdir(e->root, 0755), 0);
        assert_int_equal(chmod(e->root, 0755), 0);
        small_tree(e);
}

static void test_check_apply(void **state) {
        struct env *e = *state;
        char p[512], q[512];
        small_tree(e);
        struct glove_manifest *m = build(e);
        struct glove_error err = {0};
        assert_int_equal(glove_manifest_check_apply(m, geteuid(), &err), 0);
        glove_manifest_free(m);

        pathof(p, sizeof(p), e, "d/l");
        assert_int_equal(symlink("b", p), 0);
        expect_apply_error(e, geteuid(), "apply.symlink", "d/l");
        reset_tree(e);

        pathof(p, sizeof(p), e, "d/pipe");
        assert_int_equal(mkfifo(p, 0600), 0);
        expect_apply_error(e, geteuid(), "apply.special_file", "d/pipe");
        reset_tree(e);

        pathof(p, sizeof(p), e, "a");
        pathof(q, sizeof(q), e, "d/a-again");
        assert_int_equal(link(p, q), 0);
        expect_apply_error(e, geteuid(), "apply.hard_link", "a");
        reset_tree(e);

        assert_int_equal(chmod(p, 04755), 0);
        expect_apply_error(e, geteuid(), "apply.special_mode", "a");
        reset_tree(e);

        pathof(q, sizeof(q), e, "d/e");
        assert_int_equal(chmod(q, 01777), 0);
        expect_apply_error(e, geteuid(), "apply.special_mode", "d/e");
        reset_tree(e);

        /* A sparse file: 1 MiB of hole. */
        pathof(q, sizeof(q), e, "d/sparse");
        int fd = open(q, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 1 << 20), 0);
        close(fd);
        m = build(e);
        assert_true(find(m, "d/sparse")->sparse);
        glove_manifest_free(m);
        expect_apply_error(e, geteuid(), "apply.sparse", "d/sparse");
        reset_tree(e);

        if (setxattr(p, "user.x", "1", 1, 0) == 0) {
                m = build(e);
                assert_true(find(m, "a")->xattr);
                assert_false(find(m, "d/b")->xattr);
                glove_manifest_free(m);
                expect_apply_error(e, geteuid(), "apply.xattr", "a");
        } else {
                fprintf(stderr, "skipped the xattr case: setxattr user.x: %s\n", strerror(errno));
        }
        reset_tree(e);

        /* Everything belongs to the owner named: another uid is foreign. */
        expect_apply_error(e, geteuid() + 1, "apply.foreign_owner", ".");
}

static void expect_carried_error(const struct env *e, uid_t uid, gid_t gid, const char *path, const char *what) {
        struct glove_manifest *m = build(e);
        struct glove_error err = {0};
        int r = glove_manifest_check_carried(m, uid, gid, &err);
        if (r != -EPERM || !strstr(err.message, what))
                fprintf(stderr, "expected %s (%s), got %d: %s\n", path, what, r, err.message);
        assert_int_equal(r, -EPERM);
        assert_string_equal(err.code, "apply.source_unsupported");
        assert_true(strncmp(err.message, path, strlen(path)) == 0 && err.message[strlen(path)] == ':');
        assert_non_null(strstr(err.message, what));
        glove_manifest_free(m);
}

/* What an exchange would lose of the source: each offence refused with
 * its path; a symbolic link and a sparse file are not this check's. */
static void test_check_carried(void **state) {
        struct env *e = *state;
        char p[512], q[512];
        small_tree(e);
        pathof(p, sizeof(p), e, "d/l");
        assert_int_equal(symlink("b", p), 0);
        pathof(q, sizeof(q), e, "d/sparse");
        int fd = open(q, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 1 << 20), 0);
        close(fd);
        struct glove_manifest *m = build(e);
        struct glove_error err = {0};
        assert_int_equal(glove_manifest_check_carried(m, geteuid(), getegid(), &err), 0);
        /* Another uid or group than who applies: the root first. */
        assert_int_equal(glove_manifest_check_carried(m, geteuid() + 1, getegid(), &err), -EPERM);
        assert_string_equal(err.code, "apply.source_unsupported");
        assert_int_equal(glove_manifest_check_carried(m, geteuid(), getegid() + 1, &err), -EPERM);
        assert_non_null(strstr(err.message, "ownership"));
        glove_manifest_free(m);
        reset_tree(e);

        pathof(p, sizeof(p), e, "d/pipe");
        assert_int_equal(mkfifo(p, 0600), 0);
        expect_carried_error(e, geteuid(), getegid(), "d/pipe", "fifo");
        reset_tree(e);

        pathof(p, sizeof(p), e, "a");
        pathof(q, sizeof(q), e, "d/a-again");
        assert_int_equal(link(p, q), 0);
        expect_carried_error(e, geteuid(), getegid(), "a", "2 hard links");
        reset_tree(e);

        pathof(q, sizeof(q), e, "d/e");
        assert_int_equal(chmod(q, 02755), 0);
        expect_carried_error(e, geteuid(), getegid(), "d/e", "mode 2755");
        reset_tree(e);

        if (setxattr(p, "user.x", "1", 1, 0) == 0)
                expect_carried_error(e, geteuid(), getegid(), "a", "extended attributes");
        else
                fprintf(stderr, "skipped the xattr case: setxattr user.x: %s\n", strerror(errno));
        reset_tree(e);

        /* An append-only file (the owner's integrity protection) where the
         * file system keeps inode flags and this process may set them. */
        pathof(q, sizeof(q), e, "d/b");
        int ffd = open(q, O_RDONLY | O_CLOEXEC);
        int fl = 0;
        assert_true(ffd >= 0);
        if (ioctl(ffd, FS_IOC_GETFLAGS, &fl) == 0 && (fl |= FS_APPEND_FL, ioctl(ffd, FS_IOC_SETFLAGS, &fl) == 0)) {
                expect_carried_error(e, geteuid(), getegid(), "d/b", "append-only (chattr +a)");
                fl &= ~FS_APPEND_FL;
                assert_int_equal(ioctl(ffd, FS_IOC_SETFLAGS, &fl), 0);
        } else {
                fprintf(stderr, "skipped the append-only case: FS_IOC_SETFLAGS: %s\n", strerror(errno));
        }
        close(ffd);

        if (geteuid() == 0) {
                pathof(q, sizeof(q), e, "d/b");
                assert_int_equal(chown(q, 12345, getegid()), 0);
                expect_carried_error(e, 0, getegid(), "d/b", "uid 12345");
                assert_int_equal(chown(q, 0, 12345), 0);
                expect_carried_error(e, 0, getegid(), "d/b", "group 12345");
        }
}

static void test_foreign_owner(void **state) {
        struct env *e = *state;
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: giving a file to uid 12345 needs root\n");
                skip();
        }
        small_tree(e);
        char p[512];
        pathof(p, sizeof(p), e, "d/b");
        assert_int_equal(chown(p, 12345, 12345), 0);
        expect_apply_error(e, 0, "apply.foreign_owner", "d/b");
}

/* ---- the difference ---- */

static json_t *paths_of(json_t *arr) {
        json_t *out = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v) json_array_append(out, json_object_get(v, "path"));
        return out;
}

static void assert_paths(json_t *diff, const char *key, const char *want) {
        json_t *p = paths_of(json_object_get(diff, key));
        char *s = json_dumps(p, JSON_COMPACT);
        if (strcmp(s, want) != 0)
                fprintf(stderr, "%s: %s, wanted %s\n", key, s, want);
        assert_string_equal(s, want);
        free(s);
        json_decref(p);
}

static void test_diff(void **state) {
        struct env *e = *state;
        small_tree(e);
        put(e, "m", "mode only", 0644);
        put(e, "x", "both", 0644);
        put(e, "gone", "bye", 0644);
        struct glove_manifest *before = build(e);
        char p[512];
        put(e, "d/b", "bravo changed, longer\n", 0600);
        pathof(p, sizeof(p), e, "m");
        assert_int_equal(chmod(p, 0600), 0);
        put(e, "x", "BOTH", 0755);
        pathof(p, sizeof(p), e, "gone");
        assert_int_equal(unlink(p), 0);
        put(e, "new", "hello", 0644);
        mkd(e, "d/e/sub", 0755);
        struct glove_manifest *after = build(e);
        json_t *diff = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_manifest_diff(before, after, &diff, &err), 0);
        assert_paths(diff, "added", "[\"d/e/sub\",\"new\"]");
        assert_paths(diff, "removed", "[\"gone\"]");
        assert_paths(diff, "modified", "[\"d/b\",\"x\"]");
        assert_paths(diff, "mode_changed", "[\"m\",\"x\"]");
        /* ".", "a", "d", "d/e" */
        assert_int_equal(json_integer_value(json_object_get(diff, "unchanged")), 4);
        json_t *mod = json_array_get(json_object_get(diff, "modified"), 0);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(mod, "before"), "size")), 12);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(mod, "after"), "size")), 22);
        assert_string_equal(json_string_value(json_object_get(json_object_get(mod, "after"), "type")), "file");
        char hex[65];
        sha_hex("bravo changed, longer\n", 22, hex);
        assert_string_equal(json_string_value(json_object_get(json_object_get(mod, "after"), "sha256")), hex);
        json_t *mc = json_array_get(json_object_get(diff, "mode_changed"), 0);
        assert_int_equal(json_integer_value(json_object_get(mc, "before")), 0644);
        assert_int_equal(json_integer_value(json_object_get(mc, "after")), 0600);
        json_t *added = json_array_get(json_object_get(diff, "added"), 1);
        assert_int_equal(json_integer_value(json_object_get(added, "size")), 5);
        assert_int_equal(json_object_size(added), 5);
        json_decref(diff);
        /* A manifest against itself: nothing but unchanged entries. */
        assert_int_equal(glove_manifest_diff(after, after, &diff, &err), 0);
        assert_int_equal(json_array_size(json_object_get(diff, "added")), 0);
        assert_int_equal(json_array_size(json_object_get(diff, "modified")), 0);
        assert_int_equal(json_integer_value(json_object_get(diff, "unchanged")), after->n);
        json_decref(diff);
        glove_manifest_free(before);
        glove_manifest_free(after);
}

/* The launch's check that a retained stage is the copy of the source
 * manifest taken before it (prepare_stage.c, sv_stage_check_copy): the
 * tree under test plays the source, then the stage. */
static void test_stage_is_copy(void **state) {
        struct env *e = *state;
        struct sv_mount m = { .alias = "w" };
        char p[256];
        put(e, "a", "xx", 0644);
        mkd(e, "ro", 0555);
        pathof(p, sizeof(p), e, "fifo");
        assert_int_equal(mkfifo(p, 0600), 0);
        struct glove_manifest *src = build(e);
        /* What the copy makes: the FIFO skipped, the directory with rwx. */
        assert_int_equal(unlink(p), 0);
        pathof(p, sizeof(p), e, "ro");
        assert_int_equal(chmod(p, 0755), 0);
        struct glove_manifest *stage = build(e);
        struct glove_error err = { 0 };
        assert_int_equal(sv_stage_check_copy(&m, src, stage, &err), 0);
        glove_manifest_free(stage);
        /* A file that changed between the manifest and the copy. */
        put(e, "a", "yy", 0644);
        stage = build(e);
        assert_int_equal(sv_stage_check_copy(&m, src, stage, &err), -ESTALE);
        assert_string_equal(err.code, "materialize.changed");
        assert_non_null(strstr(err.message, "w: a changed"));
        glove_manifest_free(stage);
        /* A file that appeared. */
        put(e, "a", "xx", 0644);
        put(e, "b", "", 0644);
        stage = build(e);
        err = (struct glove_error){ 0 };
        assert_int_equal(sv_stage_check_copy(&m, src, stage, &err), -ESTALE);
        assert_non_null(strstr(err.message, "w: b "));
        glove_manifest_free(stage);
        /* A mode the copy would not have made. */
        pathof(p, sizeof(p), e, "b");
        assert_int_equal(unlink(p), 0);
        pathof(p, sizeof(p), e, "a");
        assert_int_equal(chmod(p, 0600), 0);
        stage = build(e);
        err = (struct glove_error){ 0 };
        assert_int_equal(sv_stage_check_copy(&m, src, stage, &err), -ESTALE);
        glove_manifest_free(stage);
        glove_manifest_free(src);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_entries, setup, teardown),
                cmocka_unit_test_setup_teardown(test_digest_changes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sorted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stage_is_copy, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crosses_mount, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_depth, setup, teardown),
                cmocka_unit_test_setup_teardown(test_json_round_trip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_check_apply, setup, teardown),
                cmocka_unit_test_setup_teardown(test_foreign_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(test_check_carried, setup, teardown),
                cmocka_unit_test_setup_teardown(test_diff, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

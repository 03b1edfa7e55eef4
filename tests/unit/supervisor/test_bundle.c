/* SPDX-License-Identifier: Apache-2.0 */
/* glove/supervisor/bundle.h: the strict decoder (every refusal) and the file
 * checks beneath a bundle root (mode, links, symlink, size, name, owner, a
 * file changed or replaced while it is checked). Files live in a fresh
 * directory below the test's working directory (the build directory). */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/supervisor/bundle.h"

static char base[PATH_MAX];
static int root_fd = -1;

#define MANIFEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void sha_hex(const void *d, size_t n, char out[65]) {
        uint8_t b[32];
        assert_int_equal(glove_digest_sha256(d, n, b, NULL), 0);
        glove_digest_hex_encode(b, 32, out, 65);
}

/* A canonical bundle with one skill and one behavior entry. */
static void valid_text(char *buf, size_t cap) {
        char d1[65], d2[65];
        sha_hex("# Review\nLook closely.\n", 23, d1);
        sha_hex("be terse", 8, d2);
        snprintf(buf, cap,
                 "{\"entries\":[{\"content\":\"# Review\\nLook closely.\\n\",\"content_digest\":\"%s\",\"key\":\"review\","
                 "\"kind\":\"skill\"},{\"content\":\"be terse\",\"content_digest\":\"%s\",\"key\":\"tone\","
                 "\"kind\":\"behavior\"}],\"schema_version\":1,\"source_library_ref\":\"lib@1\","
                 "\"source_manifest_digest\":\"" MANIFEST "\"}",
                 d1, d2);
}

static const char *decode_code(const char *text) {
        static struct glove_error err;
        err = (struct glove_error){ 0 };
        struct glove_bundle *b = NULL;
        int r = glove_bundle_decode(text, strlen(text), NULL, &b, &err);
        glove_bundle_free(b);
        return r < 0 ? err.code : "ok";
}

static void test_decode_valid(void **state) {
        (void)state;
        char t[2048];
        valid_text(t, sizeof(t));
        struct glove_bundle *b = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_bundle_decode(t, strlen(t), NULL, &b, &err), 0);
        assert_int_equal(b->n_entries, 2);
        assert_string_equal(b->entries[0].key, "review");
        assert_int_equal(b->entries[0].kind, GLOVE_BUNDLE_SKILL);
        assert_string_equal(b->entries[0].content, "# Review\nLook closely.\n");
        assert_int_equal(b->entries[1].kind, GLOVE_BUNDLE_BEHAVIOR);
        assert_string_equal(b->source_library_ref, "lib@1");
        assert_string_equal(b->source_manifest_digest, MANIFEST);
        glove_bundle_free(b);
}

/* Replaces the first occurrence of from in t by to. */
static void subst(char *t, size_t cap, const char *from, const char *to) {
        char *p = strstr(t, from);
        assert_non_null(p);
        char rest[4096];
        snprintf(rest, sizeof(rest), "%s", p + strlen(from));
        snprintf(p, cap - (size_t)(p - t), "%s%s", to, rest);
}

static void test_decode_refusals(void **state) {
        (void)state;
        char t[4096];
        /* Duplicate keys, plain and escaped ("schema_versio\u006e"). */
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"schema_version\":1,", "\"schema_version\":1,\"schema_version\":1,");
        assert_string_equal(decode_code(t), "bundle.duplicate_key");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"schema_version\":1,", "\"schema_version\":1,\"schema_versio\\u006e\":1,");
        assert_string_equal(decode_code(t), "bundle.duplicate_key");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"key\":\"review\",", "\"key\":\"review\",\"k\\u0065y\":\"x\",");
        assert_string_equal(decode_code(t), "bundle.duplicate_key");
        /* Escapes that are not canonical. */
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "lib@1", "lib\\u00401");
        assert_string_equal(decode_code(t), "bundle.not_canonical");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "{\"entries\"", "{ \"entries\"");
        assert_string_equal(decode_code(t), "bundle.not_canonical");
        /* Nesting deeper than the bound. */
        char deep[256];
        size_t n = 0;
        n += (size_t)snprintf(deep + n, sizeof(deep) - n, "{\"entries\":");
        for (int i = 0; i < 70; i++)
                deep[n++] = '[';
        for (int i = 0; i < 70; i++)
                deep[n++] = ']';
        snprintf(deep + n, sizeof(deep) - n, "}");
        assert_string_equal(decode_code(deep), "bundle.too_deep");
        /* Invalid UTF-8 in a string. */
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "lib@1", "lib\xc3\x28");
        assert_string_equal(decode_code(t), "bundle.invalid_utf8");
        subst(t, sizeof(t), "lib\xc3\x28", "lib\xed\xa0\x80"); /* a surrogate */
        assert_string_equal(decode_code(t), "bundle.invalid_utf8");
        /* A wrong content digest. */
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "be terse", "be tersE");
        assert_string_equal(decode_code(t), "bundle.content_digest");
        /* Unknown fields, top level and in an entry. */
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"schema_version\":1,", "\"extra\":1,\"schema_version\":1,");
        assert_string_equal(decode_code(t), "bundle.unknown_field");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"kind\":\"behavior\"", "\"kind\":\"behavior\",\"kinds\":\"x\"");
        assert_string_equal(decode_code(t), "bundle.unknown_field");
        /* prompt_ref, wherever it is. */
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"kind\":\"behavior\"", "\"kind\":\"behavior\",\"prompt_ref\":\"x\"");
        assert_string_equal(decode_code(t), "bundle.prompt_ref");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "{\"entries\"", "{\"a\":{\"b\":[{\"prompt_ref\":1}]},\"entries\"");
        assert_string_equal(decode_code(t), "bundle.prompt_ref");
        /* Kinds: the five pass, anything else fails closed. */
        const char *kinds[] = { "prompt", "template", "workflow", "behavior" };
        for (size_t i = 0; i < 4; i++) {
                valid_text(t, sizeof(t));
                char k[64];
                snprintf(k, sizeof(k), "\"kind\":\"%s\"", kinds[i]);
                subst(t, sizeof(t), "\"kind\":\"behavior\"", k);
                assert_string_equal(decode_code(t), "ok");
        }
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"kind\":\"behavior\"", "\"kind\":\"script\"");
        assert_string_equal(decode_code(t), "bundle.unknown_kind");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"kind\":\"skill\"", "\"kind\":\"Skill\"");
        assert_string_equal(decode_code(t), "bundle.unknown_kind");
        /* Shape. */
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"schema_version\":1", "\"schema_version\":2");
        assert_string_equal(decode_code(t), "bundle.schema_version");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"schema_version\":1", "\"schema_version\":\"1\"");
        assert_string_equal(decode_code(t), "bundle.wrong_type");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"source_library_ref\":\"lib@1\",", "");
        assert_string_equal(decode_code(t), "bundle.missing_field");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), MANIFEST, "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef");
        assert_string_equal(decode_code(t), "bundle.invalid_hex");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "\"key\":\"tone\"", "\"key\":\"review\"");
        assert_string_equal(decode_code(t), "bundle.duplicate_entry");
        const char *bad_keys[] = { ".hidden", "..", "a/b", "-x", "" };
        for (size_t i = 0; i < 5; i++) {
                valid_text(t, sizeof(t));
                char k[64];
                snprintf(k, sizeof(k), "\"key\":\"%s\"", bad_keys[i]);
                subst(t, sizeof(t), "\"key\":\"tone\"", k);
                assert_string_equal(decode_code(t), i == 4 ? "bundle.wrong_type" : "bundle.invalid_key");
        }
        assert_string_equal(decode_code("[1]"), "bundle.malformed");
        /* More values than the bound, refused before they are built. */
        size_t cap = 16 + 3 * 100001;
        char *many = malloc(cap);
        assert_non_null(many);
        size_t m = (size_t)snprintf(many, cap, "{\"entries\":[");
        for (int i = 0; i < 100001; i++)
                m += (size_t)snprintf(many + m, cap - m, "%s[]", i ? "," : "");
        snprintf(many + m, cap - m, "]}");
        assert_string_equal(decode_code(many), "bundle.too_many_entries");
        free(many);
        assert_string_equal(decode_code("{\"entries\":[1.5]}"), "bundle.malformed");
        valid_text(t, sizeof(t));
        subst(t, sizeof(t), "be terse", "be \\u0000terse");
        assert_string_equal(decode_code(t), "bundle.malformed");
}

/* ---- files ---- */

static void path_of(char *p, size_t cap, const char *name) {
        snprintf(p, cap, "%s/%s", base, name);
}

/* Writes text as <sha>.json (mode 0600) beneath the root; digest out. */
static void put_bundle(const char *text, size_t len, char digest[65]) {
        sha_hex(text, len, digest);
        char p[PATH_MAX], name[80];
        snprintf(name, sizeof(name), "%s.json", digest);
        path_of(p, sizeof(p), name);
        unlink(p);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, len), (ssize_t)len);
        assert_int_equal(fchmod(fd, 0600), 0);
        close(fd);
}

static const char *load_code(const char *digest) {
        static struct glove_error err;
        err = (struct glove_error){ 0 };
        struct glove_bundle *b = NULL;
        int r = glove_bundle_load(root_fd, digest, geteuid(), &b, &err);
        glove_bundle_free(b);
        return r < 0 ? err.code : "ok";
}

static void bundle_path(char *p, size_t cap, const char *digest) {
        char name[80];
        snprintf(name, sizeof(name), "%s.json", digest);
        path_of(p, cap, name);
}

static void test_load_valid(void **state) {
        (void)state;
        char t[2048], d[65];
        valid_text(t, sizeof(t));
        put_bundle(t, strlen(t), d);
        struct glove_bundle *b = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_bundle_load(root_fd, d, geteuid(), &b, &err), 0);
        char p[PATH_MAX];
        bundle_path(p, sizeof(p), d);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(b->ino, st.st_ino);
        assert_int_equal(b->dev, st.st_dev);
        assert_int_equal(b->size, strlen(t));
        assert_true(b->fd >= 0);
        assert_string_equal(b->digest, d);
        assert_int_equal(b->n_entries, 2);
        glove_bundle_free(b);
}

static void test_load_refusals(void **state) {
        (void)state;
        char t[2048], d[65], p[PATH_MAX], q[PATH_MAX];
        valid_text(t, sizeof(t));
        put_bundle(t, strlen(t), d);
        bundle_path(p, sizeof(p), d);
        /* mode 0644, 0400 */
        assert_int_equal(chmod(p, 0644), 0);
        assert_string_equal(load_code(d), "bundle.mode");
        assert_int_equal(chmod(p, 0400), 0);
        assert_string_equal(load_code(d), "bundle.mode");
        assert_int_equal(chmod(p, 0600), 0);
        assert_string_equal(load_code(d), "ok");
        /* two links */
        path_of(q, sizeof(q), "second-link");
        assert_int_equal(link(p, q), 0);
        assert_string_equal(load_code(d), "bundle.links");
        assert_int_equal(unlink(q), 0);
        assert_string_equal(load_code(d), "ok");
        /* a symbolic link named by the digest, to a good file */
        path_of(q, sizeof(q), "real.json");
        assert_int_equal(rename(p, q), 0);
        assert_int_equal(symlink("real.json", p), 0);
        assert_string_equal(load_code(d), "bundle.symlink");
        assert_int_equal(unlink(p), 0);
        assert_int_equal(rename(q, p), 0);
        /* a name that is not the digest of the content */
        char other[65];
        sha_hex("something else", 14, other);
        bundle_path(q, sizeof(q), other);
        assert_int_equal(rename(p, q), 0);
        assert_string_equal(load_code(other), "bundle.digest_mismatch");
        assert_int_equal(rename(q, p), 0);
        /* missing, a bad digest, a directory */
        assert_string_equal(load_code("1111111111111111111111111111111111111111111111111111111111111111"),
                            "bundle.missing");
        assert_string_equal(load_code("ABCD"), "bundle.invalid_digest");
        assert_string_equal(load_code("../x"), "bundle.invalid_digest");
        char dd[65];
        sha_hex("dir", 3, dd);
        bundle_path(q, sizeof(q), dd);
        assert_int_equal(mkdir(q, 0700), 0);
        assert_string_equal(load_code(dd), "bundle.file_type");
        /* over 16 MiB (sparse) */
        char big[65];
        sha_hex("big", 3, big);
        bundle_path(q, sizeof(q), big);
        int fd = open(q, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)GLOVE_BUNDLE_MAX_BYTES + 1), 0);
        close(fd);
        assert_string_equal(load_code(big), "bundle.too_large");
        /* another owner (root only can make one) */
        if (geteuid() == 0) {
                assert_int_equal(chown(p, 65534, 65534), 0);
                assert_string_equal(load_code(d), "bundle.owner");
                assert_int_equal(chown(p, 0, 0), 0);
        } else {
                print_message("bundle.owner: skipped, only root can give a file another owner\n");
        }
        assert_string_equal(load_code(d), "ok");
        /* a canonical bundle that fails decoding is still refused after
         * the file checks pass */
        char bad[2048], bd[65];
        valid_text(bad, sizeof(bad));
        subst(bad, sizeof(bad), "\"kind\":\"behavior\"", "\"kind\":\"exec\"");
        put_bundle(bad, strlen(bad), bd);
        assert_string_equal(load_code(bd), "bundle.unknown_kind");
}

/* The file changes between the open and the read: appended to in place, or
 * a different file renamed over the name. */
static void test_changed_while_checked(void **state) {
        (void)state;
        char t[2048], d[65], p[PATH_MAX], q[PATH_MAX];
        valid_text(t, sizeof(t));
        put_bundle(t, strlen(t), d);
        bundle_path(p, sizeof(p), d);
        int fd = -1;
        struct stat st;
        struct glove_error err = { 0 };
        assert_int_equal(glove_bundle_file_open(root_fd, d, geteuid(), &fd, &st, &err), 0);
        int w = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
        assert_true(w >= 0);
        assert_int_equal(write(w, " ", 1), 1);
        close(w);
        char *data = NULL;
        size_t len = 0;
        assert_int_equal(glove_bundle_file_verify(root_fd, d, fd, &st, &data, &len, &err), -ESTALE);
        assert_string_equal(err.code, "bundle.changed");
        assert_null(data);
        close(fd);
        /* replaced by rename: the descriptor still reads the old file, whose
         * name is now another's */
        put_bundle(t, strlen(t), d);
        assert_int_equal(glove_bundle_file_open(root_fd, d, geteuid(), &fd, &st, &err), 0);
        path_of(q, sizeof(q), "replacement");
        int r = open(q, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(r >= 0);
        assert_int_equal(write(r, t, strlen(t)), (ssize_t)strlen(t));
        close(r);
        assert_int_equal(rename(q, p), 0);
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_bundle_file_verify(root_fd, d, fd, &st, &data, &len, &err), -ESTALE);
        assert_string_equal(err.code, "bundle.changed");
        close(fd);
        /* unchanged: verified */
        assert_int_equal(glove_bundle_file_open(root_fd, d, geteuid(), &fd, &st, &err), 0);
        assert_int_equal(glove_bundle_file_verify(root_fd, d, fd, &st, &data, &len, &err), 0);
        assert_int_equal(len, strlen(t));
        assert_memory_equal(data, t, len);
        free(data);
        close(fd);
}

static void test_kind_names(void **state) {
        (void)state;
        assert_string_equal(glove_bundle_kind_name(GLOVE_BUNDLE_SKILL), "skill");
        assert_null(glove_bundle_kind_name(99));
        assert_true(glove_bundle_key_valid("Review-2.x_y:z"));
        assert_false(glove_bundle_key_valid("a b"));
}

/* The vectors of docs/digests.md, from tests/vectors/skills_projection_vectors.py. */
static void test_skills_digest_vectors(void **state) {
        (void)state;
        char out[65], rd[65], ld[65];
        assert_int_equal(glove_bundle_skills_digest("", NULL, 0, out, NULL), 0);
        assert_string_equal(out, "3efe24d8cff49c99fe4683b7b71751b4674cf158c9d0ac42c3e3fd2e50c47e03");
        assert_int_equal(glove_bundle_skills_digest("/home/agent/.codex/skills", NULL, 0, out, NULL), 0);
        assert_string_equal(out, "78f0eded62a59a91975421b18e2b7bd3ea88c1538dbaddba16eeb5b426f15f03");
        sha_hex("# Review\nRead the diff twice.\n", strlen("# Review\nRead the diff twice.\n"), rd);
        sha_hex("lint everything", 15, ld);
        const struct glove_bundle_skill_ref two[] = {
                { "lint", "/home/agent/.codex/skills/lint/SKILL.md", ld },
                { "review", "/home/agent/.codex/skills/review/SKILL.md", rd },
        };
        assert_int_equal(glove_bundle_skills_digest("/home/agent/.codex/skills", two, 2, out, NULL), 0);
        assert_string_equal(out, "0fabc57a9a2f942b5e6c15e7d684e8e5a62e3f6ba22878e8fc82247e30e403b6");
        /* every field is committed: another path, digest or order differs */
        const struct glove_bundle_skill_ref other[] = {
                { "lint", "/home/agent/.codex/skills/lint/SKILL.md", ld },
                { "review", "/home/agent/.codex/skills/review/SKILL.md", ld },
        };
        assert_int_equal(glove_bundle_skills_digest("/home/agent/.codex/skills", other, 2, out, NULL), 0);
        assert_string_not_equal(out, "0fabc57a9a2f942b5e6c15e7d684e8e5a62e3f6ba22878e8fc82247e30e403b6");
        assert_int_equal(glove_bundle_skills_digest("/home/agent/.claude/skills", two, 2, out, NULL), 0);
        assert_string_not_equal(out, "0fabc57a9a2f942b5e6c15e7d684e8e5a62e3f6ba22878e8fc82247e30e403b6");
}

static int setup(void **state) {
        (void)state;
        char cwd[PATH_MAX];
        assert_non_null(getcwd(cwd, sizeof(cwd)));
        snprintf(base, sizeof(base), "%s/bundle-test-%d", cwd, (int)getpid());
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", base);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(mkdir(base, 0700), 0);
        root_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(root_fd >= 0);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        close(root_fd);
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", base);
        assert_int_equal(system(cmd), 0);
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_valid),          cmocka_unit_test(test_decode_refusals),
                cmocka_unit_test(test_load_valid),            cmocka_unit_test(test_load_refusals),
                cmocka_unit_test(test_changed_while_checked), cmocka_unit_test(test_kind_names),
                cmocka_unit_test(test_skills_digest_vectors),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/apply/trust.h: key files (generate, load, sign), the Ed25519 wiring
 * (RFC 8032 section 7.1, test 1), and the root-controlled trust policy: every
 * insecurity on real files and directories. As root every case runs; as
 * another user the trust policy cannot be root-owned, so the refusal is
 * tested and the acceptance cases are skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "glove/base/digest.h"
#include "trust_fixture.h"

struct env {
        char dir[FIXTURE_PATH_MAX];
};

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        assert_non_null(e);
        fixture_tmpdir(e->dir, "trust");
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        fixture_rm_rf(e->dir);
        free(e);
        return 0;
}

static int load_key(const char *path, struct glove_error *err) {
        struct glove_apply_key *k = (void *)0x1;
        int r = glove_apply_key_load(path, &k, err);
        if (r < 0)
                assert_null(k);
        glove_apply_key_free(r < 0 ? NULL : k);
        return r;
}

static int load_trust(const char *path, struct glove_error *err) {
        struct glove_apply_trust *t = (void *)0x1;
        int r = glove_apply_trust_load(path, &t, err);
        if (r < 0)
                assert_null(t);
        glove_apply_trust_free(r < 0 ? NULL : t);
        return r;
}

/* Asserts that loading the trust policy at path fails with want_code and
 * that the message names object. */
static void expect_trust(const char *path, int want_r, const char *want_code, const char *object) {
        struct glove_error err = { 0 };
        expect_error(load_trust(path, &err), err, want_r, want_code);
        if (object)
                expect_message(err, object);
}

static void expect_trust_ok(const char *path) {
        struct glove_error err = { 0 };
        if (load_trust(path, &err) < 0)
                fail_msg("%s: %s: %s", path, err.code, err.message);
}

/* ---- key files ---- */

static void test_key_generate(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX], pub[45], pub2[45];
        fixture_join(path, e->dir, "owner.key");
        struct glove_apply_key *k = fixture_new_key(e->dir, "owner.key", "owner-1", pub);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(st.st_uid, geteuid());
        assert_int_equal(st.st_nlink, 1);
        assert_string_equal(glove_apply_key_id(k), "owner-1");
        assert_int_equal(strlen(pub), 44);

        /* Ed25519 is deterministic: the same message, the same signature;
         * another message, another signature. */
        uint8_t s1[64], s2[64], s3[64];
        struct glove_error err = { 0 };
        assert_int_equal(glove_apply_key_sign(k, "abc", 3, s1, &err), 0);
        assert_int_equal(glove_apply_key_sign(k, "abc", 3, s2, &err), 0);
        assert_int_equal(glove_apply_key_sign(k, "abd", 3, s3, &err), 0);
        assert_memory_equal(s1, s2, 64);
        assert_memory_not_equal(s1, s3, 64);

        /* Never overwritten: the file keeps its key. */
        char before[512];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = read(fd, before, sizeof(before));
        close(fd);
        assert_true(n > 0);
        expect_error(glove_apply_key_generate(path, "owner-1", &err), err, -EEXIST, "apply.key_exists");
        struct glove_apply_key *again = NULL;
        assert_int_equal(glove_apply_key_load(path, &again, NULL), 0);
        assert_int_equal(glove_apply_key_public(again, pub2, NULL), 0);
        assert_string_equal(pub, pub2);
        glove_apply_key_free(again);
        glove_apply_key_free(k);

        /* A second key is another key. */
        k = fixture_new_key(e->dir, "second.key", "owner-2", pub2);
        assert_string_not_equal(pub, pub2);
        glove_apply_key_free(k);

        /* Bad ids, and a directory that does not exist. */
        const char *bad_ids[] = { "", "a/b", "a b", "é", "0123456789012345678901234567890123456789012345678901234567890123x" };
        char other[FIXTURE_PATH_MAX];
        fixture_join(other, e->dir, "bad.key");
        for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
                struct glove_error e2 = { 0 };
                expect_error(glove_apply_key_generate(other, bad_ids[i], &e2), e2, -EINVAL, "apply.key_invalid");
                assert_int_equal(access(other, F_OK), -1);
        }
        /* 64 characters is the longest id. */
        struct glove_error e3 = { 0 };
        assert_int_equal(glove_apply_key_generate(other, "0123456789012345678901234567890123456789012345678901234567890123",
                                                  &e3),
                         0);
        fixture_join(other, e->dir, "missing/x.key");
        struct glove_error e4 = { 0 };
        expect_error(glove_apply_key_generate(other, "owner-1", &e4), e4, -ENOENT, "apply.key_write");
}

static void test_key_load_insecure(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX], p2[FIXTURE_PATH_MAX], pub[45];
        fixture_join(path, e->dir, "owner.key");
        glove_apply_key_free(fixture_new_key(e->dir, "owner.key", "owner-1", pub));
        struct glove_error err = { 0 };
        const mode_t bad[] = { 0640, 0604, 0620, 0602, 0610, 0601, 0644 };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                glove_error_clear(&err);
                assert_int_equal(chmod(path, bad[i]), 0);
                expect_error(load_key(path, &err), err, -EPERM, "apply.key_insecure");
                expect_message(err, "chmod 0600");
        }
        assert_int_equal(chmod(path, 0400), 0);
        assert_int_equal(load_key(path, NULL), 0);
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(load_key(path, NULL), 0);

        /* A symbolic link to it. */
        fixture_join(p2, e->dir, "link.key");
        assert_int_equal(symlink(path, p2), 0);
        glove_error_clear(&err);
        expect_error(load_key(p2, &err), err, -EPERM, "apply.key_insecure");
        expect_message(err, "symbolic link");

        /* Two links. */
        fixture_join(p2, e->dir, "hard.key");
        assert_int_equal(link(path, p2), 0);
        glove_error_clear(&err);
        expect_error(load_key(path, &err), err, -EPERM, "apply.key_insecure");
        expect_message(err, "hard links");
        assert_int_equal(unlink(p2), 0);
        assert_int_equal(load_key(path, NULL), 0);

        /* Not a regular file. */
        fixture_join(p2, e->dir, "fifo.key");
        assert_int_equal(mkfifo(p2, 0600), 0);
        glove_error_clear(&err);
        expect_error(load_key(p2, &err), err, -EPERM, "apply.key_insecure");
        fixture_join(p2, e->dir, "dir.key");
        assert_int_equal(mkdir(p2, 0700), 0);
        glove_error_clear(&err);
        expect_error(load_key(p2, &err), err, -EPERM, "apply.key_insecure");

        /* Missing. */
        fixture_join(p2, e->dir, "none.key");
        glove_error_clear(&err);
        expect_error(load_key(p2, &err), err, -ENOENT, "apply.key_missing");

        /* Owned by someone else. */
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: a key owned by another user needs root to chown\n");
                return;
        }
        assert_int_equal(chown(path, 12345, 12345), 0);
        glove_error_clear(&err);
        expect_error(load_key(path, &err), err, -EPERM, "apply.key_insecure");
        expect_message(err, "uid 12345");
}

static void test_key_load_invalid(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX];
        fixture_join(path, e->dir, "k.key");
        static const char *const bad[] = {
                "not json",
                "[]",
                "{\"key_id\":\"a\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}",
                "{\"key_id\":\"a\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\"schema\":\"x\"}",
                "{\"key_id\":\"a\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\"schema\":\"glove.apply-key.v1\","
                "\"extra\":1}",
                "{\"key_id\":\"a/b\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\"schema\":"
                "\"glove.apply-key.v1\"}",
                "{\"key_id\":\"a\",\"private_key\":\"!AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\"schema\":"
                "\"glove.apply-key.v1\"}",
                /* 31 bytes, 33 bytes */
                "{\"key_id\":\"a\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\",\"schema\":"
                "\"glove.apply-key.v1\"}",
                "{\"key_id\":\"a\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"schema\":"
                "\"glove.apply-key.v1\"}",
                "{\"key_id\":\"a\",\"key_id\":\"b\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\","
                "\"schema\":\"glove.apply-key.v1\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                fixture_write(path, bad[i], strlen(bad[i]), 0600);
                struct glove_error err = { 0 };
                expect_error(load_key(path, &err), err, -EINVAL, "apply.key_invalid");
                expect_message(err, path);
        }
        /* The good one of the same shape loads. */
        const char *good = "{\"key_id\":\"a\",\"private_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\","
                           "\"schema\":\"glove.apply-key.v1\"}";
        fixture_write(path, good, strlen(good), 0600);
        assert_int_equal(load_key(path, NULL), 0);

        /* A syntax error does not quote the secret. */
        const char *broken = "{\"key_id\":\"a\",\"private_key\":\"SECRETSECRETSECRETSECRETSECRETSECRETSECRE=\" "
                             "\"schema\":\"glove.apply-key.v1\"}";
        fixture_write(path, broken, strlen(broken), 0600);
        struct glove_error err = { 0 };
        expect_error(load_key(path, &err), err, -EINVAL, "apply.key_invalid");
        assert_null(strstr(err.message, "SECRET"));

        /* More than 4 KiB. */
        char big[5000];
        memset(big, ' ', sizeof(big));
        memcpy(big, good, strlen(good));
        fixture_write(path, big, sizeof(big), 0600);
        glove_error_clear(&err);
        expect_error(load_key(path, &err), err, -EINVAL, "apply.key_invalid");
}

/* RFC 8032 section 7.1, TEST 1: the empty message. */
static const char rfc_secret[] = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
static const char rfc_public[] = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
static const char rfc_signature[] = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e"
                                    "39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

static void test_rfc8032_vector(void **state) {
        struct env *e = *state;
        uint8_t seed[32], pub[32], want_sig[64], sig[64];
        assert_int_equal(glove_digest_hex_decode(rfc_secret, 64, seed, 32, NULL), 0);
        assert_int_equal(glove_digest_hex_decode(rfc_public, 64, pub, 32, NULL), 0);
        assert_int_equal(glove_digest_hex_decode(rfc_signature, 128, want_sig, 64, NULL), 0);
        char path[FIXTURE_PATH_MAX], want_pub[45], got_pub[45];
        fixture_join(path, e->dir, "rfc.key");
        fixture_write_key(path, "rfc8032-1", seed);
        struct glove_apply_key *k = NULL;
        struct glove_error err = { 0 };
        if (glove_apply_key_load(path, &k, &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
        assert_int_equal(glove_base64_encode_cstr(pub, 32, want_pub, sizeof(want_pub)), 44);
        assert_int_equal(glove_apply_key_public(k, got_pub, &err), 0);
        assert_string_equal(got_pub, want_pub);
        assert_int_equal(glove_apply_key_sign(k, "", 0, sig, &err), 0);
        assert_memory_equal(sig, want_sig, 64);
        glove_apply_key_free(k);
}

/* The same vector verified through a trust policy listing its public key. */
static void test_rfc8032_verify(void **state) {
        struct env *e = *state;
        SKIP_UNLESS_ROOT("verifying through a trust policy needs a root-owned trust policy");
        uint8_t pub[32], want_sig[64];
        assert_int_equal(glove_digest_hex_decode(rfc_public, 64, pub, 32, NULL), 0);
        assert_int_equal(glove_digest_hex_decode(rfc_signature, 128, want_sig, 64, NULL), 0);
        char want_pub[45];
        assert_int_equal(glove_base64_encode_cstr(pub, 32, want_pub, sizeof(want_pub)), 44);
        struct glove_error err = { 0 };
        char tpath[FIXTURE_PATH_MAX];
        fixture_join(tpath, e->dir, "trust.json");
        const char *ids[] = { "rfc8032-1" };
        const char *pubs[] = { want_pub };
        fixture_write_policy(tpath, 1, ids, pubs, 0644);
        struct glove_apply_trust *t = NULL;
        assert_int_equal(glove_apply_trust_load(tpath, &t, &err), 0);
        assert_int_equal(glove_apply_trust_verify(t, "rfc8032-1", "", 0, want_sig, &err), 0);
        for (size_t i = 0; i < 64; i += 21) {
                uint8_t bad[64];
                memcpy(bad, want_sig, 64);
                bad[i] ^= 0x01;
                glove_error_clear(&err);
                expect_error(glove_apply_trust_verify(t, "rfc8032-1", "", 0, bad, &err), err, -EPERM,
                             "apply.bad_signature");
        }
        glove_error_clear(&err);
        expect_error(glove_apply_trust_verify(t, "rfc8032-1", "x", 1, want_sig, &err), err, -EPERM,
                     "apply.bad_signature");
        glove_apply_trust_free(t);
}

/* ---- the trust policy ---- */

/* A policy in dir/name listing a fresh key (and another). */
static void write_policy(const char *dir, const char *name, mode_t mode, char path[FIXTURE_PATH_MAX]) {
        static const char *const ids[] = { "owner-1", "backup" };
        static const char *const pubs[] = { "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
                                            "PUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw=" };
        fixture_join(path, dir, name);
        fixture_write_policy(path, 2, ids, pubs, mode);
}

static void test_trust_accept(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX];
        write_policy(e->dir, "trust.json", 0644, path);
        if (geteuid() != 0) {
                /* Not root: the policy's directory is ours, so it is refused. */
                expect_trust(path, -EPERM, "apply.trust_insecure", e->dir);
                fprintf(stderr, "skipped: accepting a trust policy needs it to be root-owned\n");
                skip();
        }
        struct glove_apply_trust *t = NULL;
        struct glove_error err = { 0 };
        if (glove_apply_trust_load(path, &t, &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
        assert_int_equal(glove_apply_trust_count(t), 2);
        assert_string_equal(glove_apply_trust_key_id(t, 0), "owner-1");
        assert_string_equal(glove_apply_trust_key_id(t, 1), "backup");
        assert_null(glove_apply_trust_key_id(t, 2));
        uint8_t sig[64] = { 0 };
        expect_error(glove_apply_trust_verify(t, "nobody", "", 0, sig, &err), err, -EPERM, "apply.untrusted_key");
        glove_error_clear(&err);
        expect_error(glove_apply_trust_verify(t, NULL, "", 0, sig, &err), err, -EPERM, "apply.untrusted_key");
        glove_apply_trust_free(t);
        /* 0600 and 0444 are fine too. */
        assert_int_equal(chmod(path, 0600), 0);
        expect_trust_ok(path);
        assert_int_equal(chmod(path, 0444), 0);
        expect_trust_ok(path);
}

static void test_trust_file_insecure(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX];
        write_policy(e->dir, "trust.json", 0644, path);
        SKIP_UNLESS_ROOT("the file checks are reached only through root-owned directories");
        const mode_t bad[] = { 0664, 0646, 0666, 0624, 0602 };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(chmod(path, bad[i]), 0);
                expect_trust(path, -EPERM, "apply.trust_insecure", "chmod go-w");
        }
        assert_int_equal(chmod(path, 0644), 0);
        expect_trust_ok(path);
        /* Owned by another user (with a safe mode). */
        assert_int_equal(chown(path, 12345, 0), 0);
        expect_trust(path, -EPERM, "apply.trust_insecure", "uid 12345");
        expect_trust(path, -EPERM, "apply.trust_insecure", "chown root");
        assert_int_equal(chown(path, 0, 12345), 0);
        expect_trust_ok(path); /* the group does not matter without group write */
        assert_int_equal(chown(path, 0, 0), 0);
        /* Two links. */
        char second[FIXTURE_PATH_MAX];
        fixture_join(second, e->dir, "second.json");
        assert_int_equal(link(path, second), 0);
        expect_trust(path, -EPERM, "apply.trust_insecure", "2 hard links");
        expect_trust(second, -EPERM, "apply.trust_insecure", "hard links");
        assert_int_equal(unlink(second), 0);
        expect_trust_ok(path);
        /* A symbolic link as the last component. */
        char lnk[FIXTURE_PATH_MAX];
        fixture_join(lnk, e->dir, "alias.json");
        assert_int_equal(symlink("trust.json", lnk), 0);
        expect_trust(lnk, -EPERM, "apply.trust_insecure", "symbolic link");
        /* Not a regular file. */
        char other[FIXTURE_PATH_MAX];
        fixture_join(other, e->dir, "fifo.json");
        assert_int_equal(mkfifo(other, 0644), 0);
        expect_trust(other, -EPERM, "apply.trust_insecure", "not a regular file");
        fixture_join(other, e->dir, "dir.json");
        assert_int_equal(mkdir(other, 0755), 0);
        expect_trust(other, -EPERM, "apply.trust_insecure", "not a regular file");
}

static void test_trust_dir_insecure(void **state) {
        struct env *e = *state;
        char sub[FIXTURE_PATH_MAX], path[FIXTURE_PATH_MAX];
        fixture_join(sub, e->dir, "etc");
        assert_int_equal(mkdir(sub, 0755), 0);
        write_policy(sub, "trust.json", 0644, path);
        SKIP_UNLESS_ROOT("the directory checks need root-owned directories");
        expect_trust_ok(path);
        /* The file's own directory writable by others, by group, or by
         * others with the sticky bit: all refused, naming the directory. */
        const mode_t bad[] = { 0777, 0757, 0775, 0770, 01777, 01775 };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(chmod(sub, bad[i]), 0);
                expect_trust(path, -EPERM, "apply.trust_insecure", sub);
                expect_trust(path, -EPERM, "apply.trust_insecure", "chmod go-w");
        }
        assert_int_equal(chmod(sub, 0755), 0);
        expect_trust_ok(path);
        /* An ancestor writable by others without the sticky bit. */
        assert_int_equal(chmod(e->dir, 0777), 0);
        expect_trust(path, -EPERM, "apply.trust_insecure", e->dir);
        assert_int_equal(chmod(e->dir, 0700), 0);
        /* The directory, or an ancestor, owned by another user. */
        assert_int_equal(chown(sub, 12345, 0), 0);
        expect_trust(path, -EPERM, "apply.trust_insecure", "uid 12345");
        assert_int_equal(chown(sub, 0, 0), 0);
        assert_int_equal(chown(e->dir, 12345, 0), 0);
        expect_trust(path, -EPERM, "apply.trust_insecure", e->dir);
        assert_int_equal(chown(e->dir, 0, 0), 0);
        expect_trust_ok(path);
}

static void test_trust_sticky_ancestor(void **state) {
        struct env *e = *state;
        char shared[FIXTURE_PATH_MAX], own[FIXTURE_PATH_MAX], path[FIXTURE_PATH_MAX];
        fixture_join(shared, e->dir, "shared");
        assert_int_equal(mkdir(shared, 0700), 0);
        assert_int_equal(chmod(shared, 01777), 0);
        fixture_join(own, shared, "own");
        assert_int_equal(mkdir(own, 0700), 0);
        write_policy(own, "trust.json", 0644, path);
        SKIP_UNLESS_ROOT("the sticky-ancestor case needs root-owned directories");
        /* A root-owned 0700 directory inside a root-owned 1777 one. */
        expect_trust_ok(path);
        /* Without the sticky bit, that ancestor is refused. */
        assert_int_equal(chmod(shared, 0777), 0);
        expect_trust(path, -EPERM, "apply.trust_insecure", shared);
        /* A sticky ancestor owned by another user is refused too. */
        assert_int_equal(chmod(shared, 01777), 0);
        assert_int_equal(chown(shared, 12345, 0), 0);
        expect_trust(path, -EPERM, "apply.trust_insecure", shared);
        assert_int_equal(chown(shared, 0, 0), 0);
        expect_trust_ok(path);
        /* The file directly in the sticky directory: its own directory. */
        char direct[FIXTURE_PATH_MAX];
        write_policy(shared, "trust.json", 0644, direct);
        expect_trust(direct, -EPERM, "apply.trust_insecure", "sticky bit does not excuse");
}

static void test_trust_symlink_in_path(void **state) {
        struct env *e = *state;
        char real[FIXTURE_PATH_MAX], lnk[FIXTURE_PATH_MAX], path[FIXTURE_PATH_MAX], via[FIXTURE_PATH_MAX];
        fixture_join(real, e->dir, "real");
        assert_int_equal(mkdir(real, 0755), 0);
        write_policy(real, "trust.json", 0644, path);
        fixture_join(lnk, e->dir, "link");
        assert_int_equal(symlink("real", lnk), 0);
        fixture_join(via, lnk, "trust.json");
        SKIP_UNLESS_ROOT("the walk reaches the link only through root-owned directories");
        expect_trust_ok(path);
        expect_trust(via, -EPERM, "apply.trust_insecure", "symbolic link");
        expect_trust(via, -EPERM, "apply.trust_insecure", lnk);
}

static void test_trust_missing_and_paths(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX];
        fixture_join(path, e->dir, "none.json");
        struct glove_error err = { 0 };
        if (geteuid() == 0) {
                expect_trust(path, -ENOENT, "apply.trust_missing", path);
                fixture_join(path, e->dir, "nodir/trust.json");
                expect_trust(path, -ENOENT, "apply.trust_missing", "no such directory");
        }
        const char *bad[] = { "trust.json", "", "/", "/etc/", "/etc//glove/x.json", "/etc/./x.json", "/etc/../x.json",
                              "/tmp/.." };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                glove_error_clear(&err);
                expect_error(load_trust(bad[i], &err), err, -EINVAL, "apply.trust_invalid");
        }
        glove_error_clear(&err);
        expect_error(load_trust(NULL, &err), err, -EINVAL, "apply.trust_invalid");
        /* A root-owned, single-link, 0644 file on root-owned directories
         * passes the walk at any uid and is then refused for its content:
         * the walk does not need privilege. */
        struct stat st, est;
        if (lstat("/etc/passwd", &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && st.st_nlink == 1 &&
            !(st.st_mode & 022) && lstat("/etc", &est) == 0 && S_ISDIR(est.st_mode) && est.st_uid == 0 &&
            !(est.st_mode & 022)) {
                glove_error_clear(&err);
                expect_error(load_trust("/etc/passwd", &err), err, -EINVAL, "apply.trust_invalid");
        } else {
                fprintf(stderr, "note: /etc/passwd is not a root-owned single-link file here; walk-only case "
                                "not run\n");
        }
}

static void test_trust_invalid_json(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX];
        fixture_join(path, e->dir, "trust.json");
        SKIP_UNLESS_ROOT("the content is read only from a root-owned trust policy");
#define K1 "\"11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\""
#define K2 "\"PUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw=\""
#define S "\"schema\":\"glove.apply-trust.v1\""
        static const struct {
                const char *text, *words;
        } bad[] = {
                { "nope", "json.syntax" },
                { "[]", "json.not_object" },
                { "{" S "}", "keys" },
                { "{\"keys\":[{\"key_id\":\"a\",\"public_key\":" K1 "}]}", "schema" },
                { "{\"schema\":\"glove.apply-trust.v2\",\"keys\":[{\"key_id\":\"a\",\"public_key\":" K1 "}]}", "$.schema" },
                { "{" S ",\"keys\":[]}", "lists no key" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":" K1 "}],\"x\":1}", "$.x" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":" K1 ",\"comment\":\"\"}]}", "$.keys[0].comment" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\"}]}", "public_key" },
                { "{" S ",\"keys\":[\"a\"]}", "$.keys[0]" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":" K1 "},{\"key_id\":\"a\",\"public_key\":" K2 "}]}",
                  "unique" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":" K1 "},{\"key_id\":\"b\",\"public_key\":" K1 "}]}",
                  "$.keys[1].public_key" },
                { "{" S ",\"keys\":[{\"key_id\":\"a b\",\"public_key\":" K1 "}]}", "$.keys[0].key_id" },
                { "{" S ",\"keys\":[{\"key_id\":\"\",\"public_key\":" K1 "}]}", "$.keys[0].key_id" },
                { "{" S ",\"keys\":[{\"key_id\":\"0123456789012345678901234567890123456789012345678901234567890123x\","
                  "\"public_key\":" K1 "}]}",
                  "$.keys[0].key_id" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":\"11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}]}",
                  "not valid base64" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=\"}]}",
                  "not valid base64" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\"}]}",
                  "another length" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}",
                  "another length" },
                { "{" S "," S ",\"keys\":[{\"key_id\":\"a\",\"public_key\":" K1 "}]}", "json.duplicate_key" },
                { "{" S ",\"keys\":[{\"key_id\":\"a\",\"key_id\":\"b\",\"public_key\":" K1 "}]}", "json.duplicate_key" },
                { "{" S ",\"keys\":[{\"key_id\":1,\"public_key\":" K1 "}]}", "json.wrong_type" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                fixture_write(path, bad[i].text, strlen(bad[i].text), 0644);
                struct glove_error err = { 0 };
                expect_error(load_trust(path, &err), err, -EINVAL, "apply.trust_invalid");
                expect_message(err, path);
                expect_message(err, bad[i].words);
        }
        /* 64 keys are accepted, 65 refused. */
        static const char *ids[65], *pubs[65];
        static char idbuf[65][8], pubbuf[65][45];
        for (size_t i = 0; i < 65; i++) {
                uint8_t raw[32] = { 0 };
                raw[0] = (uint8_t)i;
                snprintf(idbuf[i], sizeof(idbuf[i]), "k%zu", i);
                assert_int_equal(glove_base64_encode_cstr(raw, 32, pubbuf[i], 45), 44);
                ids[i] = idbuf[i];
                pubs[i] = pubbuf[i];
        }
        fixture_write_policy(path, 64, ids, pubs, 0644);
        expect_trust_ok(path);
        fixture_write_policy(path, 65, ids, pubs, 0644);
        expect_trust(path, -EINVAL, "apply.trust_invalid", "json.too_many_items");
        /* Larger than the bound. */
        char *big = malloc(GLOVE_APPLY_TRUST_MAX_BYTES + 1);
        assert_non_null(big);
        memset(big, ' ', GLOVE_APPLY_TRUST_MAX_BYTES + 1);
        fixture_write(path, big, GLOVE_APPLY_TRUST_MAX_BYTES + 1, 0644);
        free(big);
        expect_trust(path, -EINVAL, "apply.trust_invalid", "bytes");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_key_generate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_key_load_insecure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_key_load_invalid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rfc8032_vector, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rfc8032_verify, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trust_accept, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trust_file_insecure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trust_dir_insecure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trust_sticky_ancestor, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trust_symlink_in_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trust_missing_and_paths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trust_invalid_json, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

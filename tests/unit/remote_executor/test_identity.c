/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's identity file: decoding, the owner and mode checks, the
 * measurement of an executable (glove/remote_executor/identity.h). */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/remote_executor/identity.h"

#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define GOOD "{\"executable_sha256\":\"" HEX_A "\",\"image_sha256\":\"" HEX_B "\"}"

static char dir[64];
static char sub[96];

static int setup(void **state) {
        (void)state;
        snprintf(dir, sizeof(dir), "/tmp/glove-test-rexec-XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(sub, sizeof(sub), "%s/glove", dir);
        return mkdir(sub, 0755);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void)st;
        (void)ftw;
        return type == FTW_DP ? rmdir(path) : unlink(path);
}

static int teardown(void **state) {
        (void)state;
        return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void decode_fails(const char *text, int want, const char *code, const char *says) {
        struct glove_remote_executor_identity id;
        memset(&id, 'z', sizeof(id));
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_identity_decode(text, strlen(text), &id, &err), want);
        assert_string_equal(err.code, code);
        if (says && !strstr(err.message, says))
                fail_msg("message \"%s\" lacks \"%s\"", err.message, says);
        assert_int_equal(id.executable_sha256[0], 'z'); /* untouched */
}

static void test_decode_good(void **state) {
        (void)state;
        struct glove_remote_executor_identity id;
        struct glove_error err = { 0 };
        const char *texts[] = { GOOD, "\n  " GOOD "\n\n",
                                "{\"image_sha256\":\"" HEX_B "\",\"executable_sha256\":\"" HEX_A "\"}" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(texts); i++) {
                assert_int_equal(glove_remote_executor_identity_decode(texts[i], strlen(texts[i]), &id, &err), 0);
                assert_string_equal(id.executable_sha256, HEX_A);
                assert_string_equal(id.image_sha256, HEX_B);
        }
        assert_false(glove_error_is_set(&err));
}

static void test_decode_empty(void **state) {
        (void)state;
        decode_fails("", -ENODATA, "executor.identity_empty", "empty");
        decode_fails(" \n\t\r\n", -ENODATA, "executor.identity_empty", NULL);
        struct glove_remote_executor_identity id;
        assert_int_equal(glove_remote_executor_identity_decode(NULL, 0, &id, NULL), -ENODATA);
}

static void test_decode_malformed(void **state) {
        (void)state;
        const char *M = "executor.identity_malformed";
        decode_fails("not json", -EINVAL, M, "json.syntax");
        decode_fails("[\"" HEX_A "\"]", -EINVAL, M, "json.not_object");
        decode_fails(GOOD GOOD, -EINVAL, M, "json.trailing_data");
        decode_fails("{\"executable_sha256\":\"" HEX_A "\",\"executable_sha256\":\"" HEX_A
                     "\",\"image_sha256\":\"" HEX_B "\"}",
                     -EINVAL, M, "json.duplicate_key");
        decode_fails("{\"executable_sha256\":\"" HEX_A "\"}", -EINVAL, M, "$.image_sha256");
        decode_fails("{\"image_sha256\":\"" HEX_B "\"}", -EINVAL, M, "$.executable_sha256");
        decode_fails("{\"executable_sha256\":\"" HEX_A "\",\"image_sha256\":\"" HEX_B "\",\"note\":1}", -EINVAL, M,
                     "$.note");
        decode_fails("{\"executable_sha256\":\"" HEX_A "\",\"image_sha256\":7}", -EINVAL, M, "$.image_sha256");
        /* upper case, one short, one long, a prefix, a non-hex letter */
        decode_fails("{\"executable_sha256\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
                     "\"image_sha256\":\"" HEX_B "\"}",
                     -EINVAL, M, "executable_sha256");
        decode_fails("{\"executable_sha256\":\"" HEX_A "\",\"image_sha256\":\"" HEX_B
                     "0\"}",
                     -EINVAL, M, "image_sha256");
        decode_fails("{\"executable_sha256\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                     "\"image_sha256\":\"" HEX_B "\"}",
                     -EINVAL, M, "executable_sha256");
        decode_fails("{\"executable_sha256\":\"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                     "\"image_sha256\":\"" HEX_B "\"}",
                     -EINVAL, M, "executable_sha256");
        decode_fails("{\"executable_sha256\":\"gaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                     "\"image_sha256\":\"" HEX_B "\"}",
                     -EINVAL, M, "executable_sha256");
        decode_fails("{\"executable_sha256\":\"" HEX_A "\\u0000\",\"image_sha256\":\"" HEX_B "\"}", -EINVAL, M, NULL);
}

static void test_decode_too_large(void **state) {
        (void)state;
        size_t n = GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX + 1;
        _cleanup_free_ char *text = malloc(n + 1);
        assert_non_null(text);
        memset(text, ' ', n);
        memcpy(text, GOOD, strlen(GOOD));
        text[n] = '\0';
        decode_fails(text, -EFBIG, "executor.identity_too_large", "4097");
        /* At the bound, trailing whitespace is fine. */
        struct glove_remote_executor_identity id;
        assert_int_equal(glove_remote_executor_identity_decode(text, n - 1, &id, NULL), 0);
}

/* Writes dir/glove/NAME with content and mode (umask not applied). */
static void put_file(const char *name, const char *content, mode_t mode) {
        char path[160];
        snprintf(path, sizeof(path), "%s/%s", sub, name);
        (void)unlink(path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(glove_fd_write_all(fd, content, strlen(content)), 0);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static int load(const char *name, uid_t owner, struct glove_remote_executor_identity *id, struct glove_error *err) {
        return glove_remote_executor_identity_load(sub, name, owner, id, err);
}

static void load_fails(const char *name, uid_t owner, int want, const char *code, const char *says) {
        struct glove_remote_executor_identity id;
        struct glove_error err = { 0 };
        assert_int_equal(load(name, owner, &id, &err), want);
        assert_string_equal(err.code, code);
        if (says && !strstr(err.message, says))
                fail_msg("message \"%s\" lacks \"%s\"", err.message, says);
}

static void test_load_good(void **state) {
        (void)state;
        put_file("id", GOOD "\n", 0644);
        struct glove_remote_executor_identity id;
        struct glove_error err = { 0 };
        assert_int_equal(load("id", getuid(), &id, &err), 0);
        assert_string_equal(id.executable_sha256, HEX_A);
        assert_string_equal(id.image_sha256, HEX_B);
        put_file("id", GOOD, 0400);
        assert_int_equal(load("id", getuid(), &id, &err), 0);
        assert_false(glove_error_is_set(&err));
}

static void test_load_missing(void **state) {
        (void)state;
        load_fails("absent", getuid(), -ENOENT, "executor.identity_missing", "/glove/absent does not exist");
        struct glove_remote_executor_identity id;
        struct glove_error err = { 0 };
        char gone[128];
        snprintf(gone, sizeof(gone), "%s/nothere", dir);
        assert_int_equal(glove_remote_executor_identity_load(gone, "id", getuid(), &id, &err), -ENOENT);
        assert_string_equal(err.code, "executor.identity_missing");
        assert_non_null(strstr(err.message, "directory"));
}

static void test_load_empty_and_malformed(void **state) {
        (void)state;
        put_file("id", "", 0644);
        load_fails("id", getuid(), -ENODATA, "executor.identity_empty", "/glove/id");
        put_file("id", "{\"executable_sha256\":\"" HEX_A "\"}", 0644);
        load_fails("id", getuid(), -EINVAL, "executor.identity_malformed", "$.image_sha256");
}

/* Group- or other-writable, file or directory: refused, whoever owns it. */
static void test_load_writable(void **state) {
        (void)state;
        put_file("id", GOOD, 0664);
        load_fails("id", getuid(), -EPERM, "executor.identity_writable", "group");
        put_file("id", GOOD, 0646);
        load_fails("id", getuid(), -EPERM, "executor.identity_writable", "others");
        put_file("id", GOOD, 0622);
        load_fails("id", getuid(), -EPERM, "executor.identity_writable", NULL);
        put_file("id", GOOD, 0644);
        assert_int_equal(chmod(sub, 0775), 0);
        load_fails("id", getuid(), -EPERM, "executor.identity_writable", "directory");
        assert_int_equal(chmod(sub, 0757), 0);
        load_fails("id", getuid(), -EPERM, "executor.identity_writable", "directory");
        assert_int_equal(chmod(sub, 0755), 0);
        struct glove_remote_executor_identity id;
        assert_int_equal(load("id", getuid(), &id, NULL), 0);
}

/* Owned by another uid than the required one: the directory is checked
 * first, then the file (root can give the file away to show the latter). */
static void test_load_owner(void **state) {
        (void)state;
        put_file("id", GOOD, 0644);
        load_fails("id", getuid() + 1, -EPERM, "executor.identity_owner", "directory");
        if (getuid() != 0) {
                print_message("skipping the file-owner half: giving a file away needs root\n");
                return;
        }
        char path[160];
        snprintf(path, sizeof(path), "%s/id", sub);
        assert_int_equal(chown(path, 65534, 65534), 0);
        load_fails("id", 0, -EPERM, "executor.identity_owner", "uid 65534");
}

/* Links are not followed and only a regular file is read. */
static void test_load_type(void **state) {
        (void)state;
        put_file("real", GOOD, 0644);
        char path[160];
        snprintf(path, sizeof(path), "%s/link", sub);
        (void)unlink(path);
        assert_int_equal(symlink("real", path), 0);
        load_fails("link", getuid(), -ELOOP, "executor.identity_type", "symbolic link");
        snprintf(path, sizeof(path), "%s/fifo", sub);
        assert_int_equal(mkfifo(path, 0644), 0);
        load_fails("fifo", getuid(), -EINVAL, "executor.identity_type", "is a FIFO, not a regular file");
        snprintf(path, sizeof(path), "%s/adir", sub);
        assert_int_equal(mkdir(path, 0755), 0);
        load_fails("adir", getuid(), -EINVAL, "executor.identity_type", "is a directory, not a regular file");
        /* A UNIX socket: opening one fails with ENXIO, which must not turn
         * it into executor.identity_read. */
        snprintf(path, sizeof(path), "%s/sock", sub);
        _cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        assert_true(strlen(path) < sizeof(sa.sun_path));
        memcpy(sa.sun_path, path, strlen(path) + 1);
        assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(chmod(path, 0644), 0);
        load_fails("sock", getuid(), -EINVAL, "executor.identity_type", "is a socket, not a regular file");
        assert_int_equal(listen(s, 1), 0);
        load_fails("sock", getuid(), -EINVAL, "executor.identity_type", "is a socket, not a regular file");
        /* A device (the numbers of /dev/null), when this test may make one. */
        snprintf(path, sizeof(path), "%s/dev", sub);
        if (mknod(path, S_IFCHR | 0644, makedev(1, 3)) == 0)
                load_fails("dev", getuid(), -EINVAL, "executor.identity_type", "is a character device");
        else
                print_message("skipping the device case: mknod: %s (it needs CAP_MKNOD)\n", strerror(errno));
        /* A directory reached through a link. */
        char linkdir[128];
        snprintf(linkdir, sizeof(linkdir), "%s/glove-link", dir);
        assert_int_equal(symlink("glove", linkdir), 0);
        struct glove_remote_executor_identity id;
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_identity_load(linkdir, "real", getuid(), &id, &err), -ELOOP);
        assert_string_equal(err.code, "executor.identity_type");
        /* A file where the directory should be. */
        snprintf(linkdir, sizeof(linkdir), "%s/real", sub);
        glove_error_clear(&err);
        assert_int_equal(glove_remote_executor_identity_load(linkdir, "x", getuid(), &id, &err), -ENOTDIR);
        assert_string_equal(err.code, "executor.identity_type");
}

static void test_load_too_large(void **state) {
        (void)state;
        _cleanup_free_ char *text = malloc(GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX + 2);
        assert_non_null(text);
        memset(text, ' ', GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX + 1);
        memcpy(text, GOOD, strlen(GOOD));
        text[GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX + 1] = '\0';
        put_file("id", text, 0644);
        load_fails("id", getuid(), -EFBIG, "executor.identity_too_large", NULL);
}

static void test_load_arguments(void **state) {
        (void)state;
        struct glove_remote_executor_identity id;
        assert_int_equal(glove_remote_executor_identity_load("tmp", "id", 0, &id, NULL), -EINVAL);
        assert_int_equal(glove_remote_executor_identity_load(sub, "a/b", 0, &id, NULL), -EINVAL);
        assert_int_equal(glove_remote_executor_identity_load(sub, "", 0, &id, NULL), -EINVAL);
        assert_int_equal(glove_remote_executor_identity_load(sub, "id", 0, NULL, NULL), -EINVAL);
}

/* SHA-256 vectors of FIPS 180-4 ("abc") and of empty input. */
static void test_measure(void **state) {
        (void)state;
        put_file("exe", "abc", 0755);
        char path[160];
        snprintf(path, sizeof(path), "%s/exe", sub);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_remote_executor_measure(fd, hex, NULL), 0);
        assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        put_file("empty", "", 0755);
        snprintf(path, sizeof(path), "%s/empty", sub);
        _cleanup_close_ int fd2 = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd2 >= 0);
        assert_int_equal(glove_remote_executor_measure(fd2, hex, NULL), 0);
        assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_measure(-1, hex, &err), -EBADF);
        assert_string_equal(err.code, "executor.self_measure");
}

static void test_check(void **state) {
        (void)state;
        struct glove_remote_executor_identity id;
        assert_int_equal(glove_remote_executor_identity_decode(GOOD, strlen(GOOD), &id, NULL), 0);
        assert_int_equal(glove_remote_executor_identity_check(&id, HEX_A, NULL), 0);
        struct glove_error err = { 0 };
        assert_int_equal(glove_remote_executor_identity_check(&id, HEX_B, &err), -EPERM);
        assert_string_equal(err.code, "executor.identity_mismatch");
        assert_non_null(strstr(err.message, HEX_A));
        assert_non_null(strstr(err.message, HEX_B));
        /* One character off at the end. */
        char near[] = HEX_A;
        near[63] = 'b';
        assert_int_equal(glove_remote_executor_identity_check(&id, near, NULL), -EPERM);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_good),
                cmocka_unit_test(test_decode_empty),
                cmocka_unit_test(test_decode_malformed),
                cmocka_unit_test(test_decode_too_large),
                cmocka_unit_test_setup_teardown(test_load_good, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_missing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_empty_and_malformed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_writable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_type, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_too_large, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_measure, setup, teardown),
                cmocka_unit_test(test_check),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

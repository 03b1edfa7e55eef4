/* SPDX-License-Identifier: Apache-2.0 */
/* glove/remote/artifacts.h: the exact OpenSSH client configuration and
 * known_hosts text, their modes, replacement, and nothing left behind when
 * the second file cannot be written. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/remote/artifacts.h"
#include "helpers.h"
#include "keys.h"

static struct glove_remote_backend backend(void) {
        char key[256];
        tk_key_text("ssh-ed25519", "ssh-ed25519", 32, key, sizeof(key));
        _cleanup_free_ char *doc = tk_document("builder.example.net", 2222, "glove", key,
                                               "registry.example.net/glove/runtime@sha256:" HEX64, "sha256:" HEX64, "");
        struct glove_remote_backend b;
        assert_int_equal(glove_remote_backend_decode(doc, strlen(doc), &b, NULL), 0);
        return b;
}

static const char want_config[] =
        "# The OpenSSH client configuration of gloved's remote backend (construction only:\n"
        "# gloved runs no ssh). Written at every start, removed at stop; docs/remote-backend.md.\n"
        "GlobalKnownHostsFile none\n"
        "UserKnownHostsFile /run/user/1000/glove/remote-known_hosts\n"
        "StrictHostKeyChecking yes\n"
        "HostKeyAlgorithms ssh-ed25519\n"
        "UpdateHostKeys no\n"
        "ControlMaster no\n"
        "ControlPath none\n"
        "ControlPersist no\n"
        "IdentitiesOnly yes\n"
        "IdentityFile none\n"
        "IdentityAgent none\n"
        "BatchMode yes\n"
        "\n"
        "Host glove-remote\n"
        "\tHostName builder.example.net\n"
        "\tPort 2222\n"
        "\tUser glove\n"
        "\tHostKeyAlias glove-remote\n";

static void test_render(void **state) {
        (void)state;
        struct glove_remote_backend b = backend();
        _cleanup_free_ char *config = NULL, *kh = NULL;
        size_t cl, kl;
        assert_int_equal(glove_remote_artifacts_render(&b, "/run/user/1000/glove", &config, &cl, &kh, &kl, NULL), 0);
        assert_string_equal(config, want_config);
        assert_int_equal(cl, strlen(want_config));
        char want_kh[300];
        snprintf(want_kh, sizeof(want_kh), "glove-remote %s\n", b.host_key_text);
        assert_string_equal(kh, want_kh);
        assert_int_equal(kl, strlen(want_kh));
}

static void test_render_unsafe_dir(void **state) {
        (void)state;
        struct glove_remote_backend b = backend();
        static const char *const bad[] = { "relative/dir", "/run/a b", "/run/a%d", "/run/$HOME", "/run/a\"b",
                                           "/run/a#b", "/run/a=b", "/run/a\tb", "/run/a,b", "/run/~", "" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *config = (char *)1, *kh = (char *)1;
                size_t cl, kl;
                struct glove_error e = { 0 };
                assert_int_equal(glove_remote_artifacts_render(&b, bad[i], &config, &cl, &kh, &kl, &e), -EINVAL);
                assert_string_equal(e.code, "remote.runtime_dir_unsafe");
                assert_null(config);
                assert_null(kh);
        }
}

/* The names in dir, sorted, joined by spaces ("" when empty). */
static char *listing(const char *dir) {
        struct dirent **ents;
        int n = scandir(dir, &ents, NULL, alphasort);
        assert_true(n >= 0);
        char *out = calloc(1, 4096);
        for (int i = 0; i < n; i++) {
                if (strcmp(ents[i]->d_name, ".") != 0 && strcmp(ents[i]->d_name, "..") != 0) {
                        if (out[0])
                                strcat(out, " ");
                        strcat(out, ents[i]->d_name);
                }
                free(ents[i]);
        }
        free(ents);
        return out;
}

static void test_write_and_remove(void **state) {
        (void)state;
        struct glove_remote_backend b = backend();
        char *dir = th_tempdir();
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        /* Stale files of an earlier gloved are replaced. */
        _cleanup_free_ char *cpath = th_join(dir, GLOVE_REMOTE_SSH_CONFIG_NAME),
                            *kpath = th_join(dir, GLOVE_REMOTE_KNOWN_HOSTS_NAME);
        int fd = open(kpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        assert_int_equal(write(fd, "stale\n", 6), 6);
        close(fd);
        umask(0);
        assert_int_equal(glove_remote_artifacts_write(dfd, dir, &b, NULL), 0);
        umask(022);
        struct stat st;
        assert_int_equal(stat(cpath, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(stat(kpath, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        size_t len;
        _cleanup_free_ char *config = (char *)th_read(cpath, &len);
        config[len] = '\0';
        assert_non_null(strstr(config, "\nUserKnownHostsFile "));
        _cleanup_free_ char *kh = (char *)th_read(kpath, &len);
        kh[len] = '\0';
        assert_memory_equal(kh, "glove-remote ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 50);
        _cleanup_free_ char *names = listing(dir);
        assert_string_equal(names, "remote-known_hosts remote-ssh_config");
        assert_int_equal(glove_remote_artifacts_remove(dfd), 2);
        assert_int_equal(glove_remote_artifacts_remove(dfd), 0);
        _cleanup_free_ char *empty = listing(dir);
        assert_string_equal(empty, "");
        close(dfd);
        th_rmtree(dir);
}

/* The configuration cannot be written (a non-empty directory holds its
 * name): the known_hosts written first is removed, no temporary remains,
 * and the error names the file. */
static void test_second_fails_first_removed(void **state) {
        (void)state;
        struct glove_remote_backend b = backend();
        char *dir = th_tempdir();
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *blocker = th_join(dir, GLOVE_REMOTE_SSH_CONFIG_NAME);
        _cleanup_free_ char *inside = th_join(blocker, "x");
        assert_int_equal(mkdir(blocker, 0700), 0);
        assert_int_equal(mkdir(inside, 0700), 0);
        struct glove_error e = { 0 };
        assert_true(glove_remote_artifacts_write(dfd, dir, &b, &e) < 0);
        assert_string_equal(e.code, "remote.artifact_write");
        assert_non_null(strstr(e.message, ": " GLOVE_REMOTE_SSH_CONFIG_NAME ": "));
        _cleanup_free_ char *names = listing(dir);
        assert_string_equal(names, GLOVE_REMOTE_SSH_CONFIG_NAME); /* only the blocker, not ours */
        /* An unsafe directory path: nothing is written at all. */
        assert_int_equal(rmdir(inside), 0);
        assert_int_equal(rmdir(blocker), 0);
        memset(&e, 0, sizeof(e));
        assert_int_equal(glove_remote_artifacts_write(dfd, "/a b", &b, &e), -EINVAL);
        _cleanup_free_ char *none = listing(dir);
        assert_string_equal(none, "");
        close(dfd);
        th_rmtree(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_render),
                cmocka_unit_test(test_render_unsafe_dir),
                cmocka_unit_test(test_write_and_remove),
                cmocka_unit_test(test_second_fails_first_removed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* ExecStart= quoting and unit rendering (glove/host/daemon.h). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/host/daemon.h"

static void expect_quote(const char *word, const char *want) {
        struct glove_error err = { 0 };
        _cleanup_free_ char *q = NULL;
        assert_int_equal(glove_host_systemd_quote(word, &q, &err), 0);
        assert_string_equal(q, want);
}

static void test_quote(void **state) {
        (void)state;
        expect_quote("/usr/bin/gloved", "/usr/bin/gloved");
        expect_quote("--runtime-dir", "--runtime-dir");
        expect_quote("/home/a b/x", "\"/home/a b/x\"");
        /* Specifiers and variables never expand; quotes and backslashes are escaped. */
        expect_quote("/p/100%", "\"/p/100%%\"");
        expect_quote("/p/$HOME", "\"/p/$$HOME\"");
        expect_quote("/p/\"q\"\\", "\"/p/\\\"q\\\"\\\\\"");
        expect_quote(";", "\";\"");
        struct glove_error err = { 0 };
        char *q = NULL;
        assert_int_equal(glove_host_systemd_quote("/a\nb", &q, &err), -EINVAL);
        assert_string_equal(err.code, "daemon.bad_path");
        assert_int_equal(glove_host_systemd_quote("", &q, &err), -EINVAL);
        assert_null(q);
}

static struct glove_host_daemon_layout layout(const char *state) {
        return (struct glove_host_daemon_layout){
                .gloved = strdup("/opt/glove/bin/gloved"),
                .unit_dir = strdup("/h/.config/systemd/user"),
                .runtime_dir = strdup("/run/user/1000/glove"),
                .state_dir = strdup(state),
                .config_dir = strdup("/h/.config/glove"),
                .policy = strdup("/h/.config/glove/session-policy.json"),
                .store = strdup("/h/s/sessions.journal"),
                .mroot = strdup("/h/s/sessions"),
                .listen = strdup("/run/user/1000/glove/gloved.sock"),
        };
}

static void test_render_service(void **state) {
        (void)state;
        struct glove_host_daemon_layout l = layout("/h/my state%");
        struct glove_error err = { 0 };
        _cleanup_free_ char *old = NULL, *new = NULL;
        assert_int_equal(glove_host_daemon_render_service(&l, 252, &old, &err), 0);
        assert_non_null(strstr(old, "\nExecStart=/opt/glove/bin/gloved --runtime-dir /run/user/1000/glove "
                                    "--state-dir \"/h/my state%%\" --session-policy "
                                    "/h/.config/glove/session-policy.json --session-store /h/s/sessions.journal "
                                    "--materialization-root /h/s/sessions\n"));
        assert_non_null(strstr(old, "\nType=notify\n"));
        assert_non_null(strstr(old, "\nKillMode=process\n"));
        assert_non_null(strstr(old, "\nDelegate=cpu memory pids\n"));
        assert_null(strstr(old, "\nDelegateSubgroup="));
        assert_non_null(strstr(old, "\n# No DelegateSubgroup=glove-host: it needs systemd >= 254 and this manager is 252;\n"));
        assert_null(strchr(old, '@')); /* every template key was filled in */
        assert_int_equal(glove_host_daemon_render_service(&l, 254, &new, &err), 0);
        assert_non_null(strstr(new, "\nDelegateSubgroup=glove-host\n"));
        glove_host_daemon_layout_free(&l);
        assert_null(l.gloved);
}

/* The same words for a shell (what doctor and daemon start print): the
 * unit's ExecStart= line but quoted as sh reads it. */
static void test_command_line_for_a_shell(void **state) {
        (void)state;
        struct glove_host_daemon_layout l = layout("/h/it's 100%$");
        struct glove_error err = { 0 };
        _cleanup_free_ char *sh = NULL, *unit = NULL, *service = NULL;
        assert_int_equal(glove_host_daemon_command_line(&l, GLOVE_HOST_QUOTE_SHELL, &sh, &err), 0);
        assert_string_equal(sh, "/opt/glove/bin/gloved --runtime-dir /run/user/1000/glove --state-dir "
                                "'/h/it'\\''s 100%$' --session-policy /h/.config/glove/session-policy.json "
                                "--session-store /h/s/sessions.journal --materialization-root /h/s/sessions");
        /* The systemd form is exactly the unit's ExecStart=. */
        assert_int_equal(glove_host_daemon_command_line(&l, GLOVE_HOST_QUOTE_SYSTEMD, &unit, &err), 0);
        assert_int_equal(glove_host_daemon_render_service(&l, 254, &service, &err), 0);
        char want[1024];
        snprintf(want, sizeof(want), "\nExecStart=%s\n", unit);
        assert_non_null(strstr(service, want));
        glove_host_daemon_layout_free(&l);
}

/* With an exposure policy, gloved also gets the exposure options. */
static void test_command_line_with_exposures(void **state) {
        (void)state;
        struct glove_host_daemon_layout l = layout("/h/s");
        l.exposure_policy = strdup("/h/.config/glove/exposure-policy.json");
        l.exposure_journal = strdup("/h/s/exposures.journal");
        struct glove_error err = { 0 };
        _cleanup_free_ char *sh = NULL;
        assert_int_equal(glove_host_daemon_command_line(&l, GLOVE_HOST_QUOTE_SHELL, &sh, &err), 0);
        const char *tail = " --materialization-root /h/s/sessions --path-exposure-policy "
                           "/h/.config/glove/exposure-policy.json --path-exposure-journal /h/s/exposures.journal";
        assert_true(strlen(sh) > strlen(tail));
        assert_string_equal(sh + strlen(sh) - strlen(tail), tail);
        glove_host_daemon_layout_free(&l);
        /* Without the policy, neither option. */
        l = layout("/h/s");
        _cleanup_free_ char *plain = NULL;
        assert_int_equal(glove_host_daemon_command_line(&l, GLOVE_HOST_QUOTE_SHELL, &plain, &err), 0);
        assert_null(strstr(plain, "exposure"));
        glove_host_daemon_layout_free(&l);
}

/* A $, quote or backslash in gloved's own path cannot be written as an
 * executable name systemd reads back as the same path: refused. */
static void test_render_service_refuses_unreadable_executable(void **state) {
        (void)state;
        const char *bad[] = { "/opt/bin$X/gloved", "/opt/bin\"q/gloved", "/opt/bin'q/gloved", "/opt/bin\\q/gloved" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_host_daemon_layout l = layout("/h/s");
                free(l.gloved);
                l.gloved = strdup(bad[i]);
                struct glove_error err = { 0 };
                char *out = NULL;
                assert_int_equal(glove_host_daemon_render_service(&l, 252, &out, &err), -EINVAL);
                assert_string_equal(err.code, "daemon.bad_path");
                assert_null(out);
                glove_host_daemon_layout_free(&l);
        }
}

static void test_render_socket(void **state) {
        (void)state;
        struct glove_host_daemon_layout l = layout("/h/s");
        struct glove_error err = { 0 };
        _cleanup_free_ char *s = NULL;
        assert_int_equal(glove_host_daemon_render_socket(&l, &s, &err), 0);
        assert_non_null(strstr(s, "\nListenStream=/run/user/1000/glove/gloved.sock\nSocketMode=0600\nDirectoryMode=0700\n"));
        free(l.listen);
        l.listen = strdup("/run/a b/gloved.sock");
        char *bad = NULL;
        assert_int_equal(glove_host_daemon_render_socket(&l, &bad, &err), -EINVAL);
        assert_string_equal(err.code, "daemon.bad_path");
        free(l.listen);
        l.listen = malloc(200);
        memset(l.listen, 'a', 199);
        l.listen[0] = '/';
        l.listen[199] = '\0';
        assert_int_equal(glove_host_daemon_render_socket(&l, &bad, &err), -ENAMETOOLONG);
        glove_host_daemon_layout_free(&l);
}

static void test_layout_needs_gloved_next_to_glove(void **state) {
        (void)state;
        struct glove_host_daemon_layout l;
        struct glove_error err = { 0 };
        assert_int_equal(glove_host_daemon_layout_resolve("/nonexistent-dir/glove", &l, &err), -ENOENT);
        assert_string_equal(err.code, "daemon.no_gloved");
        assert_null(l.gloved);
}

static void make_file(const char *dir, const char *name, mode_t mode) {
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

/* resolve tree/glove and check which gloved and build tree it names. */
static void expect_layout(const char *tree, const char *want_gloved, const char *want_tree) {
        char self[512];
        snprintf(self, sizeof(self), "%s/glove", tree);
        struct glove_host_daemon_layout l;
        struct glove_error err = { 0 };
        assert_int_equal(glove_host_daemon_layout_resolve(self, &l, &err), 0);
        assert_string_equal(l.gloved, want_gloved);
        if (want_tree)
                assert_string_equal(l.build_tree, want_tree);
        else
                assert_null(l.build_tree);
        glove_host_daemon_layout_free(&l);
}

/* A glove in a meson build tree prefers an installed gloved from PATH
 * (make clean removes the tree's); a PATH directory others can write, or
 * one that is a build tree itself, is passed over. */
static void test_layout_build_tree_prefers_installed(void **state) {
        (void)state;
        char base[] = "/tmp/glove-test-daemon.XXXXXX";
        assert_non_null(mkdtemp(base));
        char tree[256], pfx[256], priv[300], want[300], path[600], tree_gloved[300];
        snprintf(tree, sizeof(tree), "%s/build", base);
        snprintf(pfx, sizeof(pfx), "%s/bin", base);
        snprintf(priv, sizeof(priv), "%s/meson-private", tree);
        assert_int_equal(mkdir(tree, 0700), 0);
        assert_int_equal(mkdir(pfx, 0700), 0);
        assert_int_equal(mkdir(priv, 0700), 0);
        make_file(tree, "glove", 0755);
        make_file(tree, "gloved", 0755);
        make_file(tree, "build.ninja", 0644);
        snprintf(tree_gloved, sizeof(tree_gloved), "%s/gloved", tree);
        snprintf(want, sizeof(want), "%s/gloved", pfx);
        char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
        setenv("XDG_CONFIG_HOME", base, 1);
        setenv("XDG_STATE_HOME", base, 1);
        setenv("XDG_RUNTIME_DIR", base, 1);
        /* No installed gloved (the tree on PATH is no installation). */
        snprintf(path, sizeof(path), "relative:%s:%s/", tree, pfx);
        setenv("PATH", path, 1);
        expect_layout(tree, tree_gloved, tree);
        /* An installed one, and then one others could replace. */
        make_file(pfx, "gloved", 0755);
        expect_layout(tree, want, tree);
        assert_int_equal(chmod(pfx, 0777), 0);
        expect_layout(tree, tree_gloved, tree);
        assert_int_equal(chmod(pfx, 0700), 0);
        assert_int_equal(chmod(want, 0775), 0);
        expect_layout(tree, tree_gloved, tree);
        assert_int_equal(chmod(want, 0755), 0);
        /* Outside a build tree: the sibling, whatever PATH holds. */
        char ninja[300];
        snprintf(ninja, sizeof(ninja), "%s/build.ninja", tree);
        assert_int_equal(unlink(ninja), 0);
        expect_layout(tree, tree_gloved, NULL);
        if (old_path)
                setenv("PATH", old_path, 1);
        free(old_path);
        char glove[300];
        snprintf(glove, sizeof(glove), "%s/glove", tree);
        assert_int_equal(unlink(glove), 0);
        assert_int_equal(unlink(tree_gloved), 0);
        assert_int_equal(unlink(want), 0);
        assert_int_equal(rmdir(priv), 0);
        assert_int_equal(rmdir(tree), 0);
        assert_int_equal(rmdir(pfx), 0);
        assert_int_equal(rmdir(base), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_quote),
                cmocka_unit_test(test_render_service),
                cmocka_unit_test(test_render_service_refuses_unreadable_executable),
                cmocka_unit_test(test_command_line_for_a_shell),
                cmocka_unit_test(test_command_line_with_exposures),
                cmocka_unit_test(test_render_socket),
                cmocka_unit_test(test_layout_needs_gloved_next_to_glove),
                cmocka_unit_test(test_layout_build_tree_prefers_installed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

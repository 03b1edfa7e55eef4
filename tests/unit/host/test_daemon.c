/* SPDX-License-Identifier: Apache-2.0 */
/* ExecStart= quoting and unit rendering (glove/host/daemon.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_quote),
                cmocka_unit_test(test_render_service),
                cmocka_unit_test(test_render_service_refuses_unreadable_executable),
                cmocka_unit_test(test_command_line_for_a_shell),
                cmocka_unit_test(test_render_socket),
                cmocka_unit_test(test_layout_needs_gloved_next_to_glove),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

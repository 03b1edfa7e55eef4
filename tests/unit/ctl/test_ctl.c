/* SPDX-License-Identifier: Apache-2.0 */
/* glove ctl (ctl.h): usage errors, exit statuses, an unreachable service and
 * the terminal-safe rendering of what gloved sends (ctl_internal.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_internal.h"
#include "glove/ctl/ctl.h"

/* Runs glove ctl with argv (NULL-terminated) and returns its status; what it
 * wrote on descriptor fd (1 or 2) is copied into out[cap]. */
static int run_ctl(int fd, char *out, size_t cap, const char *const *argv) {
        int argc = 0;
        while (argv[argc])
                argc++;
        char tmpl[] = "/tmp/glove-ctl-test.XXXXXX";
        int t = mkstemp(tmpl);
        assert_true(t >= 0);
        unlink(tmpl);
        fflush(fd == 1 ? stdout : stderr);
        int saved = dup(fd);
        assert_true(saved >= 0);
        assert_true(dup2(t, fd) == fd);
        int r = glove_ctl_main(argc, (char **)argv);
        fflush(fd == 1 ? stdout : stderr);
        assert_true(dup2(saved, fd) == fd);
        close(saved);
        ssize_t n = pread(t, out, cap - 1, 0);
        close(t);
        out[n > 0 ? n : 0] = '\0';
        return r;
}

static void test_help_is_on_stdout(void **state) {
        (void)state;
        char out[8192];
        const char *argv[] = { "ctl", "--help", NULL };
        assert_int_equal(run_ctl(1, out, sizeof(out), argv), 0);
        assert_non_null(strstr(out, "Usage: glove ctl"));
        assert_non_null(strstr(out, "create-session"));
}

static void test_usage_errors_exit_125_with_a_code(void **state) {
        (void)state;
        char err[4096];
        const char *unknown[] = { "ctl", "--frobnicate", "capabilities", NULL };
        assert_int_equal(run_ctl(2, err, sizeof(err), unknown), GLOVE_CTL_EXIT_FAILURE);
        assert_non_null(strstr(err, "usage.ctl"));
        assert_non_null(strstr(err, "--frobnicate"));

        const char *missing[] = { "ctl", "--json", NULL };
        assert_int_equal(run_ctl(2, err, sizeof(err), missing), GLOVE_CTL_EXIT_FAILURE);
        assert_non_null(strstr(err, "missing COMMAND"));

        const char *zero[] = { "ctl", "--timeout-ms", "0", "capabilities", NULL };
        assert_int_equal(run_ctl(2, err, sizeof(err), zero), GLOVE_CTL_EXIT_FAILURE);
        assert_non_null(strstr(err, "--timeout-ms 0: expected a duration from 1ms to 1h; use a whole number with a unit"));
}

static void test_no_service_is_a_client_failure(void **state) {
        (void)state;
        char dir[] = "/tmp/glove-ctl-test-dir.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char err[4096];
        const char *argv[] = { "ctl", "--runtime-dir", dir, "capabilities", NULL };
        assert_int_equal(run_ctl(2, err, sizeof(err), argv), GLOVE_CTL_EXIT_FAILURE);
        assert_non_null(strstr(err, "glove: client."));
        rmdir(dir);
}

static void test_shown_escapes_terminal_controls(void **state) {
        (void)state;
        assert_string_equal(ctl_shown("plain text"), "plain text");
        assert_string_equal(ctl_shown("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_string_equal(ctl_shown("\r\n\x7f"), "\\x0d\\x0a\\x7f");
        /* C1 controls (U+0080..U+009F, two bytes in UTF-8) are escaped too;
         * other UTF-8 passes. */
        assert_string_equal(ctl_shown("x\xc2\x9by"), "x\\x9by");
        assert_string_equal(ctl_shown("caf\xc3\xa9"), "caf\xc3\xa9");
        assert_string_equal(ctl_shown("a\xe2\x80\xae" "b"), "a\\u{202E}b"); /* a bidi override */
        assert_string_equal(ctl_shown(NULL), "?");
        char big[4096];
        memset(big, 'z', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        const char *s = ctl_shown(big);
        assert_true(strlen(s) < 1024);
        assert_string_equal(s + strlen(s) - 3, "...");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_help_is_on_stdout),
                cmocka_unit_test(test_usage_errors_exit_125_with_a_code),
                cmocka_unit_test(test_no_service_is_a_client_failure),
                cmocka_unit_test(test_shown_escapes_terminal_controls),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

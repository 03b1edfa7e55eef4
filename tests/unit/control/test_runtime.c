/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of the managed runtime: signal names, base64, receipts. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/json.h"
#include "glove/control/runtime.h"

static void test_signals(void **state) {
        (void)state;
        assert_int_equal(glove_control_signal_parse("SIGTERM"), SIGTERM);
        assert_int_equal(glove_control_signal_parse("SIGWINCH"), SIGWINCH);
        assert_int_equal(glove_control_signal_parse("SIGKILL"), SIGKILL);
        assert_int_equal(glove_control_signal_parse("SIGSEGV"), -1);
        assert_int_equal(glove_control_signal_parse("sigterm"), -1);
        assert_int_equal(glove_control_signal_parse("15"), -1);
        assert_int_equal(glove_control_signal_parse(NULL), -1);
}

static void test_receipt(void **state) {
        (void)state;
        char cd[65], pd[65];
        memset(cd, 'a', 64);
        cd[64] = 0;
        memset(pd, 'b', 64);
        pd[64] = 0;
        json_t *binding = json_pack("{s:[s],s:{s:s,s:i}}", "argv", "/usr/bin/python3", "cgroup", "path", "/x", "inode", 7);
        struct glove_control_receipt_facts f = {
                .session_id = "s-1", .controller_plan_digest = cd, .plan_content_digest = pd,
                .launch_binding = binding, .started_at_ms = 10, .ended_at_ms = 20,
                .termination = GLOVE_CONTROL_TERM_LIMIT, .limit = "pids", .signal = SIGKILL, .exit_code = -1,
                .cpu_time_ms = 1, .output_bytes = 2, .peak_memory_bytes = 3, .wall_time_ms = 4,
        };
        json_t *r = glove_control_receipt_build(&f);
        assert_non_null(r);
        char *bytes;
        size_t len;
        struct glove_error e = { 0 };
        assert_int_equal(glove_json_encode_canonical(r, &bytes, &len, &e), 0);
        char digest[65];
        assert_int_equal(glove_control_json_digest(binding, digest, &e), 0);
        char want[2048];
        snprintf(want, sizeof(want),
                 "{\"controller_plan_digest\":\"%s\",\"ended_at_ms\":20,\"exit_code\":null,\"launch_binding\":"
                 "{\"argv\":[\"/usr/bin/python3\"],\"cgroup\":{\"inode\":7,\"path\":\"/x\"}},"
                 "\"launch_binding_digest\":\"%s\",\"plan_content_digest\":\"%s\",\"receipt_schema_version\":1,"
                 "\"session_id\":\"s-1\",\"started_at_ms\":10,\"state\":\"exited\",\"termination\":{\"kind\":\"limit\","
                 "\"limit\":\"pids\",\"signal\":9},\"usage\":{\"cpu_time_ms\":1,\"disk_bytes\":0,\"output_bytes\":2,"
                 "\"peak_memory_bytes\":3,\"wall_time_ms\":4}}",
                 cd, digest, pd);
        assert_string_equal(bytes, want);
        free(bytes);
        json_decref(r);
        f.termination = GLOVE_CONTROL_TERM_START_FAILED;
        f.code = "materialize.symlink";
        f.started_at_ms = -1;
        r = glove_control_receipt_build(&f);
        assert_string_equal(json_string_value(json_object_get(r, "state")), "failed");
        json_t *t = json_object_get(r, "termination");
        assert_string_equal(json_string_value(json_object_get(t, "code")), "materialize.symlink");
        assert_null(json_object_get(t, "limit"));
        assert_true(json_is_null(json_object_get(r, "started_at_ms")));
        json_decref(r);
        json_decref(binding);
        assert_string_equal(glove_control_limit_plan_name(GLOVE_CGROUP_LIMIT_CPU_TIME), "cpu_time_ms");
        assert_string_equal(glove_control_limit_plan_name(GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT), "terminal_output_bytes");
        assert_null(glove_control_limit_plan_name(GLOVE_CGROUP_LIMIT_NONE));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_signals),
                cmocka_unit_test(test_receipt),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

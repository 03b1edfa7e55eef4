/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of the managed runtime: signal names, the output skip
 * state, receipts. */
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
#include "glove/protocol/frame.h"
#include "glove/keeper/keeper.h"
#include "glove/runtime/runtime.h"
#include "glove/server/server.h"

static void test_signals(void **state) {
        (void)state;
        assert_int_equal(glove_runtime_signal_parse("SIGTERM"), SIGTERM);
        assert_int_equal(glove_runtime_signal_parse("SIGWINCH"), SIGWINCH);
        assert_int_equal(glove_runtime_signal_parse("SIGKILL"), SIGKILL);
        assert_int_equal(glove_runtime_signal_parse("SIGSEGV"), -1);
        assert_int_equal(glove_runtime_signal_parse("sigterm"), -1);
        assert_int_equal(glove_runtime_signal_parse("15"), -1);
        assert_int_equal(glove_runtime_signal_parse(NULL), -1);
}

/* Skipping counts (saturating), resumes below half the bound only, and the
 * gap notice is the documented canonical frame. */
static void test_output_skip(void **state) {
        (void)state;
        struct glove_runtime_output_skip k = { 0 };
        assert_false(glove_runtime_output_skip_resumes(&k, 0, GLOVE_RUNTIME_PUSH_MAX));
        glove_runtime_output_skip_add(&k, 1000);
        glove_runtime_output_skip_add(&k, 24);
        assert_true(k.skipping);
        assert_true(k.skipped_bytes == 1024);
        assert_false(glove_runtime_output_skip_resumes(&k, GLOVE_RUNTIME_PUSH_MAX, GLOVE_RUNTIME_PUSH_MAX));
        assert_false(glove_runtime_output_skip_resumes(&k, GLOVE_RUNTIME_PUSH_MAX / 2, GLOVE_RUNTIME_PUSH_MAX));
        assert_true(glove_runtime_output_skip_resumes(&k, GLOVE_RUNTIME_PUSH_MAX / 2 - 1, GLOVE_RUNTIME_PUSH_MAX));
        assert_true(glove_runtime_output_skip_resumes(&k, 0, GLOVE_RUNTIME_PUSH_MAX));
        k.skipped_bytes = (uint64_t)INT64_MAX - 5;
        glove_runtime_output_skip_add(&k, 100);
        assert_true(k.skipped_bytes == (uint64_t)INT64_MAX);

        json_t *m = glove_runtime_output_gap_message("s-1", 4194304);
        assert_non_null(m);
        struct glove_buffer out;
        glove_buffer_init(&out, 4096);
        assert_int_equal(glove_protocol_frame_encode(m, &out, NULL), 0);
        static const char want[] =
                "{\"method\":\"session_output_gap\",\"params\":{\"session_id\":\"s-1\",\"skipped_bytes\":4194304}}";
        assert_int_equal(out.len, GLOVE_PROTOCOL_FRAME_PREFIX + sizeof(want) - 1);
        assert_memory_equal(out.data + GLOVE_PROTOCOL_FRAME_PREFIX, want, sizeof(want) - 1);
        glove_buffer_free(&out);
        json_decref(m);
        m = glove_runtime_output_gap_message("s-1", UINT64_MAX);
        assert_true(json_integer_value(json_object_get(json_object_get(m, "params"), "skipped_bytes")) == INT64_MAX);
        json_decref(m);
}

static void test_receipt(void **state) {
        (void)state;
        char cd[65], pd[65];
        memset(cd, 'a', 64);
        cd[64] = 0;
        memset(pd, 'b', 64);
        pd[64] = 0;
        json_t *binding = json_pack("{s:[s],s:{s:s,s:i}}", "argv", "/usr/bin/python3", "cgroup", "path", "/x", "inode", 7);
        struct glove_runtime_receipt_facts f = {
                .session_id = "s-1", .controller_plan_digest = cd, .plan_content_digest = pd,
                .launch_binding = binding, .started_at_ms = 10, .ended_at_ms = 20,
                .termination = GLOVE_RUNTIME_TERM_LIMIT, .limit = "pids", .signal = SIGKILL, .exit_code = -1,
                .cpu_time_ms = 1, .output_bytes = 2, .peak_memory_bytes = 3, .wall_time_ms = 4,
        };
        json_t *r = glove_runtime_receipt_build(&f);
        assert_non_null(r);
        char *bytes;
        size_t len;
        struct glove_error e = { 0 };
        assert_int_equal(glove_json_encode_canonical(r, &bytes, &len, &e), 0);
        /* The digest commits to the whole binding; the receipt carries its
         * view: the executable as a digest, no cgroup, no host path. */
        char digest[65], exe[65], ro[65];
        assert_int_equal(glove_runtime_json_digest(binding, digest, &e), 0);
        json_t *x = json_pack("{s:[s],s:[]}", "argv", "/usr/bin/python3", "mounts");
        assert_int_equal(glove_runtime_json_digest(x, exe, &e), 0);
        json_decref(x);
        x = json_array();
        assert_int_equal(glove_runtime_json_digest(x, ro, &e), 0);
        json_decref(x);
        char want[2048];
        snprintf(want, sizeof(want),
                 "{\"controller_plan_digest\":\"%s\",\"ended_at_ms\":20,\"exit_code\":null,\"launch_binding\":"
                 "{\"executable_digest\":\"%s\",\"materializations\":[],\"mounts\":[],"
                 "\"read_only_paths_digest\":\"%s\"},"
                 "\"launch_binding_digest\":\"%s\",\"plan_content_digest\":\"%s\",\"receipt_schema_version\":1,"
                 "\"session_id\":\"s-1\",\"started_at_ms\":10,\"state\":\"exited\",\"termination\":{\"kind\":\"limit\","
                 "\"limit\":\"pids\",\"signal\":9},\"usage\":{\"cpu_time_ms\":1,\"disk_bytes\":0,\"output_bytes\":2,"
                 "\"peak_memory_bytes\":3,\"wall_time_ms\":4}}",
                 cd, exe, ro, digest, pd);
        assert_string_equal(bytes, want);
        free(bytes);
        json_decref(r);
        f.termination = GLOVE_RUNTIME_TERM_START_FAILED;
        f.code = "materialize.symlink";
        f.started_at_ms = -1;
        r = glove_runtime_receipt_build(&f);
        assert_string_equal(json_string_value(json_object_get(r, "state")), "failed");
        json_t *t = json_object_get(r, "termination");
        assert_string_equal(json_string_value(json_object_get(t, "code")), "materialize.symlink");
        assert_null(json_object_get(t, "limit"));
        assert_true(json_is_null(json_object_get(r, "started_at_ms")));
        json_decref(r);
        json_decref(binding);
        assert_string_equal(glove_keeper_limit_plan_name(GLOVE_CGROUP_LIMIT_CPU_TIME), "cpu_time_ms");
        assert_string_equal(glove_keeper_limit_plan_name(GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT), "terminal_output_bytes");
        assert_null(glove_keeper_limit_plan_name(GLOVE_CGROUP_LIMIT_NONE));
}

/* The receipt's view of a whole binding names no host path, loop device or
 * cgroup, keeps the sandbox targets, and passes stand-ins through. */
static void test_receipt_binding(void **state) {
        (void)state;
        json_error_t je;
        json_t *full = json_loads(
                "{\"adapter\":{\"executable\":{\"dev\":1,\"discovered\":true,\"ino\":2,\"path\":\"/host/bin/codex\"},"
                "\"home\":\"/home/agent\",\"managed_environment\":[\"CODEX_HOME=/home/agent/.codex\"],"
                "\"runtime_id\":\"codex\",\"skills_dir\":\"/home/agent/.codex/skills\"},"
                "\"argv\":[\"/host/bin/codex\",\"/host/arg\"],\"cgroup\":{\"inode\":7,\"path\":\"/host/cg\"},"
                "\"egress\":{\"policy_id\":\"e\",\"targets\":[\"a.example:443\"]},\"environment_names\":[\"HOME\"],"
                "\"leases\":[],\"limits\":{\"pids\":1},"
                "\"materializations\":[{\"alias\":\"keep\",\"image\":{\"dev\":1,\"ino\":2,\"size\":9},"
                "\"kind\":\"retained_image\",\"loop\":{\"device\":\"/host/dev/loop7\",\"rdev\":3},\"mount\":{\"mnt_id\":4}}],"
                "\"mounts\":[{\"kind\":\"executable\",\"read_only\":true,\"source\":{\"dev\":1,\"ino\":2,\"mnt_id\":3},"
                "\"target\":\"/host/bin/codex\"},{\"kind\":\"read_only_path\",\"read_only\":true,\"target\":\"/host/ro\"},"
                "{\"alias\":\"keep\",\"kind\":\"retained_image\",\"max_bytes\":9,\"read_only\":false,"
                "\"source\":{\"dev\":1,\"ino\":2,\"mnt_id\":3},\"target\":\"/keep\"}],"
                "\"runtime_template_id\":\"t\"}",
                JSON_REJECT_DUPLICATES, &je);
        assert_non_null(full);
        json_t *v = glove_runtime_receipt_binding(full);
        assert_non_null(v);
        char *bytes;
        struct glove_error e = { 0 };
        assert_int_equal(glove_json_encode_canonical(v, &bytes, NULL, &e), 0);
        if (strstr(bytes, "/host") || strstr(bytes, "cgroup") || strstr(bytes, "loop") || strstr(bytes, "mnt_id"))
                fail_msg("a host path or identity in the receipt's binding: %s", bytes);
        assert_non_null(strstr(bytes, "\"target\":\"/keep\""));
        assert_non_null(strstr(bytes, "\"executable\":{\"discovered\":true}"));
        assert_non_null(strstr(bytes, "\"size\":9"));
        assert_int_equal(strlen(json_string_value(json_object_get(v, "executable_digest"))), 64);
        assert_int_equal(strlen(json_string_value(json_object_get(v, "read_only_paths_digest"))), 64);
        free(bytes);
        json_decref(v);
        json_decref(full);
        full = json_pack("{s:i}", "omitted_bytes", 70000);
        v = glove_runtime_receipt_binding(full);
        assert_true(json_equal(v, full));
        json_decref(v);
        json_decref(full);
}

/* The capabilities' cgroup_placement follows the probe; "none" when the
 * runtime is not operational. */
static void test_cgroup_placement(void **state) {
        (void)state;
        static const struct {
                enum glove_cgroup_backend backend;
                enum glove_cgroup_placement placement;
                int error;
                const char *want;
        } cases[] = {
                { GLOVE_CGROUP_BACKEND_V2, GLOVE_CGROUP_PLACEMENT_BESIDE, 0, "beside" },
                { GLOVE_CGROUP_BACKEND_V2, GLOVE_CGROUP_PLACEMENT_UNDER, 0, "under" },
                { GLOVE_CGROUP_BACKEND_V1, GLOVE_CGROUP_PLACEMENT_V1, 0, "v1" },
                { GLOVE_CGROUP_BACKEND_NONE, GLOVE_CGROUP_PLACEMENT_NONE, -EACCES, "none" },
                { GLOVE_CGROUP_BACKEND_V2, GLOVE_CGROUP_PLACEMENT_BESIDE, -ESTALE, "none" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_cgroup_probe probe = { .backend = cases[i].backend, .placement = cases[i].placement };
                struct glove_error why = { 0 };
                struct glove_runtime_options o = { .cgroup = &probe, .cgroup_error = cases[i].error,
                                                           .cgroup_why = &why };
                struct glove_runtime *rt = NULL;
                struct glove_error e = { 0 };
                assert_int_equal(glove_runtime_new(&o, &rt, &e), 0);
                assert_string_equal(glove_runtime_cgroup_placement(rt), cases[i].want);
                glove_runtime_free(rt);
        }
        assert_string_equal(glove_runtime_cgroup_placement(NULL), "none");
}

/* The registry's gate (runtime.h, glove_runtime_receipt_kind_check): a
 * refinement plan takes only a refinement receipt, any other plan only a
 * resource receipt; a plan that does not decode takes neither. */
static char *read_file(const char *path, size_t *len) {
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        char *buf = malloc(1 << 20);
        assert_non_null(buf);
        *len = fread(buf, 1, (1 << 20) - 1, f);
        buf[*len] = '\0';
        fclose(f);
        return buf;
}

static void test_receipt_kind(void **state) {
        (void)state;
        size_t n = 0;
        char *plan = read_file(REFINEMENT_DIR "/example-plan.json", &n);
        /* The example is one canonical line; the stored plan has no newline. */
        while (n && plan[n - 1] == '\n')
                n--;
        struct glove_error e = { 0 };
        assert_int_equal(glove_runtime_receipt_kind_check(plan, n, "session.refinement", &e), 0);
        assert_int_equal(glove_runtime_receipt_kind_check(plan, n, "session.terminal", &e), -EINVAL);
        assert_string_equal(e.code, "receipts.kind_mismatch");
        /* The same plan without its two refinement members is an ordinary one. */
        json_t *v = json_loadb(plan, n, 0, NULL);
        assert_non_null(v);
        json_object_del(v, "evaluation_protocol");
        json_object_del(v, "refinement");
        char *ord = NULL;
        size_t olen = 0;
        assert_int_equal(glove_json_encode_canonical(v, &ord, &olen, NULL), 0);
        struct glove_error e2 = { 0 };
        assert_int_equal(glove_runtime_receipt_kind_check(ord, olen, "session.terminal", &e2), 0);
        assert_int_equal(glove_runtime_receipt_kind_check(ord, olen, "session.refinement", &e2), -EINVAL);
        assert_string_equal(e2.code, "receipts.kind_mismatch");
        /* A binding without the protocol decodes as neither. */
        json_object_set_new(v, "refinement", json_object());
        free(ord);
        assert_int_equal(glove_json_encode_canonical(v, &ord, &olen, NULL), 0);
        struct glove_error e3 = { 0 };
        assert_int_equal(glove_runtime_receipt_kind_check(ord, olen, "session.terminal", &e3), -EINVAL);
        assert_string_equal(e3.code, "receipts.kind_mismatch");
        free(ord);
        json_decref(v);
        free(plan);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_signals),
                cmocka_unit_test(test_cgroup_placement),
                cmocka_unit_test(test_output_skip),
                cmocka_unit_test(test_receipt),
                cmocka_unit_test(test_receipt_kind),
                cmocka_unit_test(test_receipt_binding),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

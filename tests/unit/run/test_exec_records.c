/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/run/exec_records.h: the fields of the launch and exit
 * audit records of `glove exec`, compared as exact JSON text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec_records.h"

/* Dumps j in insertion order and compares with expected; consumes j. */
static void expect_json(json_t *j, const char *expected) {
        assert_non_null(j);
        char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_non_null(s);
        if (strcmp(s, expected) != 0)
                fail_msg("got\n  %s\nexpected\n  %s", s, expected);
        free(s);
        json_decref(j);
}

/* A grant set filled by hand: the record reports what the set holds. */
static void add_grant(struct glove_grant_set *set, const char *path, enum glove_grant_mode mode, bool ws) {
        struct glove_grant *g = &set->items[set->count++];
        *g = (struct glove_grant){.path = strdup(path), .mode = mode, .workspace = ws, .is_dir = true, .fd = -1};
        assert_non_null(g->path);
}

static const char *const host_env[] = {
        "LANG=en_US.UTF-8",
        "TERM=xterm",
        "API_TOKEN=tok-SECRET-123",
        "OTHER=unrelated-SECRET",
        "EMPTY=",
        NULL,
};

static void test_launch_fields(void **state) {
        (void)state;
        char *argv[] = {"/usr/bin/agent", "--model", "x y", "\xc3\xa9", "", NULL};
        struct glove_grant_set grants;
        glove_grant_set_init(&grants);
        add_grant(&grants, "/home/u/project", GLOVE_GRANT_WRITE, true);
        add_grant(&grants, "/home/u/docs", GLOVE_GRANT_READ, false);
        add_grant(&grants, "/srv/out", GLOVE_GRANT_WRITE, false);
        const char *names[] = {"API_TOKEN", "EMPTY"};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host_env, names, 2, &env, &err), 0);
        struct glove_sandbox sb = {
                .pid = 1234,
                .pidfd = -1,
                .report_fd = -1,
                .release_fd = -1,
                .uid_map = {.inside = 1000, .outside = 0, .count = 1},
                .gid_map = {.inside = 1000, .outside = 0, .count = 1},
        };
        json_t *f = glove_exec_launch_fields(argv, &grants, &env, &sb);
        assert_non_null(f);
        char *s = json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_non_null(s);
        /* Environment values never appear: only names. */
        assert_null(strstr(s, "SECRET"));
        assert_null(strstr(s, "tok-"));
        assert_null(strstr(s, "en_US"));
        assert_null(strstr(s, "xterm"));
        assert_null(strstr(s, "/usr/local/bin"));
        assert_null(strstr(s, "/home/agent"));
        assert_null(strstr(s, "="));
        free(s);
        /* The env names in the order the environment holds them. */
        char envnames[512] = "";
        for (size_t i = 0; i < env.count; i++) {
                size_t n = strcspn(env.envp[i], "=");
                snprintf(envnames + strlen(envnames), sizeof(envnames) - strlen(envnames), "%s\"%.*s\"", i ? "," : "",
                         (int)n, env.envp[i]);
        }
        char expected[2048];
        snprintf(expected, sizeof(expected),
                 "{\"argv\":[\"/usr/bin/agent\",\"--model\",\"x y\",\"\xc3\xa9\",\"\"],"
                 "\"grants\":[{\"path\":\"/home/u/project\",\"mode\":\"write\",\"workspace\":true},"
                 "{\"path\":\"/home/u/docs\",\"mode\":\"read\",\"workspace\":false},"
                 "{\"path\":\"/srv/out\",\"mode\":\"write\",\"workspace\":false}],"
                 "\"env\":[%s],"
                 "\"uid_map\":[{\"inside\":1000,\"outside\":0,\"count\":1}],"
                 "\"gid_map\":[{\"inside\":1000,\"outside\":0,\"count\":1}]}",
                 envnames);
        expect_json(f, expected);
        /* And the set of names is exactly the agent's environment. */
        json_t *f2 = glove_exec_launch_fields(argv, &grants, &env, &sb);
        json_t *jenv = json_object_get(f2, "env");
        assert_int_equal(json_array_size(jenv), 8);
        const char *want[] = {"PATH", "HOME", "TMPDIR", "LANG", "TERM", "GLOVE_SANDBOXED", "API_TOKEN", "EMPTY"};
        for (size_t w = 0; w < 8; w++) {
                bool found = false;
                for (size_t i = 0; i < json_array_size(jenv); i++)
                        found = found || strcmp(json_string_value(json_array_get(jenv, i)), want[w]) == 0;
                if (!found)
                        fail_msg("env name %s missing from the launch record", want[w]);
        }
        json_decref(f2);
        glove_env_free(&env);
        glove_grant_set_clear(&grants);
}

static void test_launch_fields_unprivileged_map_and_empty(void **state) {
        (void)state;
        char *argv[] = {"sh", NULL};
        struct glove_grant_set grants;
        glove_grant_set_init(&grants);
        const char *const host[] = {NULL};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host, NULL, 0, &env, &err), 0);
        struct glove_sandbox sb = {
                .uid_map = {.inside = 4294967294u, .outside = 4294967294u, .count = 1},
                .gid_map = {.inside = 100, .outside = 65534, .count = 1},
        };
        json_t *f = glove_exec_launch_fields(argv, &grants, &env, &sb);
        /* No TERM in the host: 5 names. */
        expect_json(f, "{\"argv\":[\"sh\"],\"grants\":[],"
                       "\"env\":[\"PATH\",\"HOME\",\"TMPDIR\",\"LANG\",\"GLOVE_SANDBOXED\"],"
                       "\"uid_map\":[{\"inside\":4294967294,\"outside\":4294967294,\"count\":1}],"
                       "\"gid_map\":[{\"inside\":100,\"outside\":65534,\"count\":1}]}");
        glove_env_free(&env);
}

static void test_launch_fields_not_utf8(void **state) {
        (void)state;
        /* argv and paths are host bytes: not UTF-8 is recorded escaped, never
         * refused (a launch record that cannot be built stops the run). */
        char *argv[] = {"ls", "caf\xe9", "\xc3\xa9t\xc3\xa9", NULL};
        struct glove_grant_set grants;
        glove_grant_set_init(&grants);
        add_grant(&grants, "/data/\xff\xfe", GLOVE_GRANT_READ, false);
        const char *const host[] = {NULL};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host, NULL, 0, &env, &err), 0);
        struct glove_sandbox sb = {.uid_map = {1000, 1000, 1}, .gid_map = {1000, 1000, 1}};
        expect_json(glove_exec_launch_fields(argv, &grants, &env, &sb),
                    "{\"argv\":[\"ls\",\"caf\\\\xe9\",\"\xc3\xa9t\xc3\xa9\"],"
                    "\"grants\":[{\"path\":\"/data/\\\\xff\\\\xfe\",\"mode\":\"read\",\"workspace\":false}],"
                    "\"env\":[\"PATH\",\"HOME\",\"TMPDIR\",\"LANG\",\"GLOVE_SANDBOXED\"],"
                    "\"uid_map\":[{\"inside\":1000,\"outside\":1000,\"count\":1}],"
                    "\"gid_map\":[{\"inside\":1000,\"outside\":1000,\"count\":1}]}");
        glove_env_free(&env);
        glove_grant_set_clear(&grants);
}

static void test_launch_fields_real_grants(void **state) {
        (void)state;
        /* Grants resolved by glove_grant_set_add report their normalized path. */
        char tmpl[] = "/tmp/glove-ut-records-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        char *canon = realpath(tmpl, NULL);
        assert_non_null(canon);
        struct glove_grant_set grants;
        glove_grant_set_init(&grants);
        struct glove_error err = {0};
        assert_int_equal(glove_grant_set_add(&grants, "./x/..//.", GLOVE_GRANT_READ, false, canon, &err), 0);
        char *argv[] = {"a", NULL};
        const char *const host[] = {NULL};
        struct glove_env env;
        assert_int_equal(glove_env_build(host, NULL, 0, &env, &err), 0);
        struct glove_sandbox sb = {.uid_map = {0, 0, 1}, .gid_map = {0, 0, 1}};
        json_t *f = glove_exec_launch_fields(argv, &grants, &env, &sb);
        assert_non_null(f);
        json_t *g0 = json_array_get(json_object_get(f, "grants"), 0);
        assert_string_equal(json_string_value(json_object_get(g0, "path")), canon);
        assert_string_equal(json_string_value(json_object_get(g0, "mode")), "read");
        assert_true(json_is_false(json_object_get(g0, "workspace")));
        assert_int_equal(json_object_size(g0), 3);
        json_decref(f);
        glove_env_free(&env);
        glove_grant_set_clear(&grants);
        assert_int_equal(rmdir(canon), 0);
        free(canon);
}

static void test_exit_fields_exited(void **state) {
        (void)state;
        struct glove_sandbox_outcome o = {.kind = GLOVE_SANDBOX_EXITED, .value = 3};
        expect_json(glove_exec_exit_fields(&o, 3, 42),
                    "{\"exit_code\":3,\"status\":3,\"signal\":null,\"wall_time_ms\":42}");
        o.value = 0;
        expect_json(glove_exec_exit_fields(&o, 0, 0), "{\"exit_code\":0,\"status\":0,\"signal\":null,\"wall_time_ms\":0}");
        o.value = 255;
        expect_json(glove_exec_exit_fields(&o, 255, UINT64_C(86400000)),
                    "{\"exit_code\":255,\"status\":255,\"signal\":null,\"wall_time_ms\":86400000}");
}

static void test_exit_fields_signaled(void **state) {
        (void)state;
        struct glove_sandbox_outcome o = {.kind = GLOVE_SANDBOX_SIGNALED, .value = 9};
        expect_json(glove_exec_exit_fields(&o, 137, 1500),
                    "{\"exit_code\":137,\"status\":null,\"signal\":9,\"wall_time_ms\":1500}");
        o.value = 15;
        expect_json(glove_exec_exit_fields(&o, 143, 7),
                    "{\"exit_code\":143,\"status\":null,\"signal\":15,\"wall_time_ms\":7}");
}

static void test_exit_fields_exec_failed(void **state) {
        (void)state;
        struct glove_sandbox_outcome o = {.kind = GLOVE_SANDBOX_EXEC_FAILED, .value = ENOENT};
        snprintf(o.detail, sizeof(o.detail), "execve: No such file or directory");
        expect_json(glove_exec_exit_fields(&o, 127, 5),
                    "{\"exit_code\":127,\"status\":null,\"signal\":null,\"wall_time_ms\":5}");
        o.value = EACCES;
        expect_json(glove_exec_exit_fields(&o, 126, 6),
                    "{\"exit_code\":126,\"status\":null,\"signal\":null,\"wall_time_ms\":6}");
        struct glove_sandbox_outcome lost = {.kind = GLOVE_SANDBOX_LOST, .value = 0};
        expect_json(glove_exec_exit_fields(&lost, 125, 8),
                    "{\"exit_code\":125,\"status\":null,\"signal\":null,\"wall_time_ms\":8}");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_launch_fields),
                cmocka_unit_test(test_launch_fields_unprivileged_map_and_empty),
                cmocka_unit_test(test_launch_fields_not_utf8),
                cmocka_unit_test(test_launch_fields_real_grants),
                cmocka_unit_test(test_exit_fields_exited),
                cmocka_unit_test(test_exit_fields_signaled),
                cmocka_unit_test(test_exit_fields_exec_failed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

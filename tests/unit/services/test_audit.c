/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/services/audit.h on a real file: the record's shape parsed back, a
 * deadline already passed (nothing written), a descriptor that cannot be
 * written, and refused arguments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>

#include "glove/base/fd.h"
#include "glove/services/audit.h"
#include "helpers.h"

struct env {
        char dir[FIXTURE_PATH_MAX];
        char log[FIXTURE_PATH_MAX];
        int fd;
};

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        assert_non_null(e);
        fixture_tmpdir(e->dir, "audit");
        fixture_join(e->log, e->dir, "audit.jsonl");
        e->fd = open(e->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        assert_true(e->fd >= 0);
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        close(e->fd);
        fixture_rm_rf(e->dir);
        free(e);
        return 0;
}

static char *read_log(const char *path, size_t *len) {
        char *text = NULL;
        struct glove_error err = { 0 };
        expect_ok(glove_file_read_bounded(AT_FDCWD, path, 0, 1 << 20, &text, len, &err), err);
        return text;
}

static void test_shape(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        expect_ok(glove_services_audit_append(e->fd, "s-1", "observe", GLOVE_SERVICES_PHASE_PENDING, "pending", 3,
                                              glove_time_monotonic_ms() + 60000, &err),
                  err);
        expect_ok(glove_services_audit_append(e->fd, "s-1", "observe", GLOVE_SERVICES_PHASE_FAILED, "services.timeout",
                                              250, 0, &err),
                  err);
        size_t len = 0;
        char *text = read_log(e->log, &len);
        char *nl = strchr(text, '\n');
        assert_non_null(nl);
        assert_int_equal(text[len - 1], '\n');
        *nl = '\0';
        /* Canonical: sorted keys, compact. */
        assert_true(strncmp(text, "{\"alias\":\"observe\",\"event\":\"local_service\",\"latency_ms\":3,"
                                  "\"phase\":\"delivery_pending\",\"session_id\":\"s-1\",\"status\":\"pending\","
                                  "\"ts\":\"",
                            strlen("{\"alias\":\"observe\",\"event\":\"local_service\",\"latency_ms\":3,"
                                   "\"phase\":\"delivery_pending\",\"session_id\":\"s-1\",\"status\":\"pending\","
                                   "\"ts\":\"")) == 0);
        json_error_t je;
        json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
        assert_non_null(o);
        assert_int_equal(json_object_size(o), 7);
        const char *ts = json_string_value(json_object_get(o, "ts"));
        assert_non_null(ts);
        assert_int_equal(strlen(ts), 27);
        assert_int_equal(ts[10], 'T');
        assert_int_equal(ts[19], '.');
        assert_int_equal(ts[26], 'Z');
        json_decref(o);

        o = json_loads(nl + 1, JSON_REJECT_DUPLICATES, &je);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(o, "phase")), "delivery_failed");
        assert_string_equal(json_string_value(json_object_get(o, "status")), "services.timeout");
        assert_int_equal(json_integer_value(json_object_get(o, "latency_ms")), 250);
        json_decref(o);
        free(text);
}

static void test_late(void **state) {
        struct env *e = *state;
        struct glove_error err = { 0 };
        expect_error(glove_services_audit_append(e->fd, "s-1", "observe", GLOVE_SERVICES_PHASE_PENDING, "pending", 0,
                                                 glove_time_monotonic_ms(), &err),
                     err, -ETIMEDOUT, "services.audit_late");
        size_t len = 99;
        char *text = read_log(e->log, &len);
        assert_int_equal(len, 0);
        free(text);
}

static void test_failed(void **state) {
        struct env *e = *state;
        int ro = open(e->log, O_RDONLY | O_CLOEXEC);
        assert_true(ro >= 0);
        struct glove_error err = { 0 };
        expect_error(glove_services_audit_append(ro, "s-1", "observe", GLOVE_SERVICES_PHASE_PENDING, "pending", 0, 0,
                                                 &err),
                     err, -EBADF, "services.audit_failed");
        close(ro);
        /* A pipe takes the write but cannot be made durable. */
        int pp[2];
        assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
        glove_error_clear(&err);
        expect_error(glove_services_audit_append(pp[1], "s-1", "observe", GLOVE_SERVICES_PHASE_PENDING, "pending", 0, 0,
                                                 &err),
                     err, -EINVAL, "services.audit_failed");
        close(pp[0]);
        close(pp[1]);
}

static void test_arguments(void **state) {
        struct env *e = *state;
        const struct {
                const char *session, *alias, *phase, *status;
        } bad[] = {
                { "", "observe", "delivered", "ok" },
                { "s 1", "observe", "delivered", "ok" },
                { "s-1", "Observe", "delivered", "ok" },
                { "s-1", "observe", "sent", "ok" },
                { "s-1", "observe", "delivered", "OK" },
                { "s-1", "observe", "delivered", "" },
                { "s-1", "observe", "delivered", NULL },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_error err = { 0 };
                expect_error(glove_services_audit_append(e->fd, bad[i].session, bad[i].alias, bad[i].phase,
                                                         bad[i].status, 0, 0, &err),
                             err, -EINVAL, "services.invalid_argument");
        }
        size_t len = 99;
        char *text = read_log(e->log, &len);
        assert_int_equal(len, 0);
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_shape, setup, teardown),
                cmocka_unit_test_setup_teardown(test_late, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_arguments, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

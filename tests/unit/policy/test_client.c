/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for client features per upstream (glove_policy_allow_client,
 * the policy file's "upstreams", docs/policy.md "Client features"). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glove/policy/policy.h"

static struct glove_policy *new_policy(void) {
        struct glove_policy *p = NULL;
        assert_int_equal(glove_policy_new(&p), 0);
        return p;
}

static void test_cli_grants(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        struct glove_error e = {0};
        assert_int_equal(glove_policy_client_features(p, "ev"), 0); /* default deny */
        assert_int_equal(glove_policy_allow_client(p, "ev:sampling,roots", &e), 0);
        assert_int_equal(glove_policy_allow_client(p, "ev:logging", &e), 0);
        assert_int_equal(glove_policy_client_features(p, "ev"),
                         GLOVE_POLICY_CLIENT_SAMPLING | GLOVE_POLICY_CLIENT_ROOTS | GLOVE_POLICY_CLIENT_LOGGING);
        assert_int_equal(glove_policy_client_features(p, "other"), 0);
        const char *bad[] = {"ev", "ev:", ":sampling", "ev:smell", "ev:sampling,", "EV:sampling", "ev:sampling,,roots",
                             "a-very-long-upstream-name-of-33-ch:roots"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_error be = {0};
                assert_int_equal(glove_policy_allow_client(p, bad[i], &be), -EINVAL);
                assert_string_equal(be.code, "policy.bad_client_rule");
        }
        glove_policy_free(p);
}

static void test_file_grants_and_json(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        struct glove_error e = {0};
        const char *doc = "{\"version\":1,\"upstreams\":{\"fs\":{\"client\":{\"sampling\":true,\"elicitation\":false,"
                          "\"instructions\":true}}}}";
        assert_int_equal(glove_policy_load_json(p, doc, strlen(doc), &e), 0);
        assert_int_equal(glove_policy_allow_client(p, "fs:roots", &e), 0);
        assert_int_equal(glove_policy_client_features(p, "fs"),
                         GLOVE_POLICY_CLIENT_SAMPLING | GLOVE_POLICY_CLIENT_INSTRUCTIONS | GLOVE_POLICY_CLIENT_ROOTS);
        json_t *j = glove_policy_to_json(p);
        assert_non_null(j);
        json_t *want = json_pack("[s,s,s]", "sampling", "roots", "instructions");
        assert_true(json_equal(json_object_get(json_object_get(j, "client"), "fs"), want));
        json_decref(want);
        json_decref(j);
        /* Names are checked against the upstreams like rules. */
        const char *names[] = {"ev"};
        struct glove_error ue = {0};
        assert_int_equal(glove_policy_check_upstreams(p, names, 1, &ue), -EINVAL);
        assert_string_equal(ue.code, "policy.unknown_upstream");
        const char *names2[] = {"ev", "fs"};
        assert_int_equal(glove_policy_check_upstreams(p, names2, 2, &ue), 0);
        glove_policy_free(p);
}

static void test_no_grants_no_json_key(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        struct glove_error e = {0};
        assert_int_equal(glove_policy_allow(p, "fs.read", &e), 0);
        json_t *j = glove_policy_to_json(p);
        assert_null(json_object_get(j, "client")); /* the launch record is as before */
        json_decref(j);
        glove_policy_free(p);
}

static void test_failed_file_merges_nothing(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        struct glove_error e = {0};
        const char *doc = "{\"version\":1,\"upstreams\":{\"fs\":{\"client\":{\"sampling\":true}},\"ev\":{\"sandbox\":{\"bogus\":1}}}}";
        assert_int_equal(glove_policy_load_json(p, doc, strlen(doc), &e), -EINVAL);
        assert_string_equal(e.code, "policy.unknown_field");
        assert_int_equal(glove_policy_client_features(p, "fs"), 0);
        glove_policy_free(p);
}

static void test_bound(void **state) {
        (void)state;
        struct glove_policy *p = new_policy();
        char spec[64];
        struct glove_error e = {0};
        for (int i = 0; i < GLOVE_POLICY_CLIENTS_MAX; i++) {
                snprintf(spec, sizeof(spec), "u%d:roots", i);
                assert_int_equal(glove_policy_allow_client(p, spec, &e), 0);
        }
        assert_int_equal(glove_policy_allow_client(p, "u0:sampling", &e), 0); /* an existing one grows */
        assert_int_equal(glove_policy_allow_client(p, "extra:roots", &e), -ENOSPC);
        assert_string_equal(e.code, "policy.too_many_rules");
        glove_policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cli_grants),
                cmocka_unit_test(test_file_grants_and_json),
                cmocka_unit_test(test_no_grants_no_json_key),
                cmocka_unit_test(test_failed_file_merges_nothing),
                cmocka_unit_test(test_bound),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The guided policy generator (glove/host/guided.h): its text is accepted by
 * the policy decoder gloved uses, carries the ten-minute plan lifetime and
 * the two profiles with their headroom, computes adapter_command_digest with
 * glove_supervisor_launch_template_digest, sorts templates, and reports a
 * template the decoder refuses with the decoder's code. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/host/guided.h"
#include "glove/supervisor/policy.h"

static json_t *starter_text(char **text) {
        struct glove_host_guided_template t;
        glove_host_guided_starter(&t);
        struct glove_host_guided_options o = { .templates = &t, .n_templates = 1 };
        size_t len = 0;
        struct glove_error err = { 0 };
        assert_int_equal(glove_host_guided_policy_text(&o, text, &len, &err), 0);
        assert_int_equal(strlen(*text), len);
        assert_int_equal((*text)[len - 1], '\n');
        json_error_t je;
        json_t *p = json_loadb(*text, len, JSON_REJECT_DUPLICATES, &je);
        assert_non_null(p);
        return p;
}

static void test_starter_is_accepted(void **state) {
        (void)state;
        _cleanup_free_ char *text = NULL;
        _cleanup_json_ json_t *p = starter_text(&text);
        struct glove_supervisor_policy *pol = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_supervisor_policy_decode(text, strlen(text), &pol, &err), 0);
        assert_int_equal(glove_supervisor_policy_max_plan_ttl_ms(pol), 600000);
        assert_int_equal(glove_supervisor_policy_revision(pol), 1);
        assert_true(glove_supervisor_policy_template_can_launch(pol, GLOVE_HOST_GUIDED_STARTER_TEMPLATE_ID));
        glove_supervisor_policy_free(pol);
}

static void test_profiles_and_headroom(void **state) {
        (void)state;
        _cleanup_free_ char *text = NULL;
        _cleanup_json_ json_t *p = starter_text(&text);
        json_t *profiles = json_object_get(p, "resource_profiles");
        assert_int_equal(json_array_size(profiles), 2);
        json_t *inter = json_array_get(profiles, 0), *small = json_array_get(profiles, 1);
        assert_string_equal(json_string_value(json_object_get(inter, "profile_id")), "interactive");
        assert_string_equal(json_string_value(json_object_get(small, "profile_id")), "small");
        assert_int_equal(json_integer_value(json_object_get(small, "wall_time_ms")), 120000);
        assert_int_equal(json_integer_value(json_object_get(inter, "wall_time_ms")), 300000);
        json_int_t ttl = json_integer_value(json_object_get(p, "max_plan_ttl_ms"));
        assert_int_equal(ttl, 600000);
        assert_true(ttl - json_integer_value(json_object_get(inter, "wall_time_ms")) >= GLOVE_POLICY_LAUNCH_HEADROOM_MS);
        assert_true(ttl - json_integer_value(json_object_get(small, "wall_time_ms")) >= GLOVE_POLICY_LAUNCH_HEADROOM_MS);
        /* offline and tool-less */
        assert_string_equal(json_string_value(json_array_get(json_object_get(p, "egress_policy_ids"), 0)), "no-network");
        assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(p, "egress_policies"), 0),
                                                         "targets")), 0);
        assert_int_equal(json_array_size(json_object_get(p, "path_aliases")), 0);
        assert_int_equal(json_array_size(json_object_get(p, "secret_handles")), 0);
}

static void test_digest_is_the_supervisors(void **state) {
        (void)state;
        _cleanup_free_ char *text = NULL;
        _cleanup_json_ json_t *p = starter_text(&text);
        struct glove_host_guided_template t;
        glove_host_guided_starter(&t);
        char want[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        struct glove_error err = { 0 };
        assert_int_equal(glove_supervisor_launch_template_digest(&t.launch, want, &err), 0);
        json_t *tpl = json_array_get(json_object_get(p, "runtime_templates"), 0);
        assert_string_equal(json_string_value(json_object_get(tpl, "adapter_command_digest")), want);
        json_t *launch = json_object_get(tpl, "launch");
        assert_string_equal(json_string_value(json_object_get(launch, "executable_path")), "/usr/bin/echo");
        assert_null(json_object_get(launch, "runtime_discovery"));
}

static void test_templates_sorted(void **state) {
        (void)state;
        const char *args[] = { "-c", "exit 0" };
        struct glove_host_guided_template t[2] = {
                { .runtime_template_id = "zeta", .runtime_id = "rt",
                  .launch = { .executable_path = "/usr/bin/dash", .arguments = args, .n_arguments = 2 } },
                { .runtime_template_id = "alpha", .runtime_id = "rt",
                  .launch = { .executable_path = "/usr/bin/true" } },
        };
        struct glove_host_guided_options o = { .revision = 9, .templates = t, .n_templates = 2 };
        _cleanup_free_ char *text = NULL;
        size_t len;
        struct glove_error err = { 0 };
        assert_int_equal(glove_host_guided_policy_text(&o, &text, &len, &err), 0);
        _cleanup_json_ json_t *p = json_loads(text, 0, NULL);
        json_t *a = json_object_get(p, "runtime_templates");
        assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "runtime_template_id")), "alpha");
        assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "runtime_template_id")), "zeta");
        assert_int_equal(json_integer_value(json_object_get(p, "revision")), 9);
}

static void test_refused_template_reports_decoder_code(void **state) {
        (void)state;
        struct glove_host_guided_template t = { .runtime_template_id = "bad", .runtime_id = "rt",
                                                .launch = { .executable_path = "usr/bin/true" } };
        struct glove_host_guided_options o = { .templates = &t, .n_templates = 1 };
        _cleanup_free_ char *text = NULL;
        size_t len;
        struct glove_error err = { 0 };
        assert_true(glove_host_guided_policy_text(&o, &text, &len, &err) < 0);
        assert_null(text);
        assert_string_equal(err.code, "policy.path_not_absolute");
        assert_non_null(strstr(err.message, "$.runtime_templates[0].launch.executable_path"));

        struct glove_host_guided_template id = { .runtime_template_id = "has space", .runtime_id = "rt",
                                                 .launch = { .executable_path = "/usr/bin/true" } };
        o.templates = &id;
        glove_error_clear(&err);
        assert_true(glove_host_guided_policy_text(&o, &text, &len, &err) < 0);
        assert_string_equal(err.code, "policy.invalid_identifier");
        o.n_templates = 0;
        glove_error_clear(&err);
        assert_int_equal(glove_host_guided_policy_text(&o, &text, &len, &err), -EINVAL);
        assert_string_equal(err.code, "guided.invalid_argument");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_starter_is_accepted),
                cmocka_unit_test(test_profiles_and_headroom),
                cmocka_unit_test(test_digest_is_the_supervisors),
                cmocka_unit_test(test_templates_sorted),
                cmocka_unit_test(test_refused_template_reports_decoder_code),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

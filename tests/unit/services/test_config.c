/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/services/config.h: a good configuration decodes and reads back;
 * every kind of bad input is refused with its stable code and JSON path;
 * the protected-file rules of glove_services_config_load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "glove/services/config.h"
#include "helpers.h"

#define GOOD                                                                                                    \
        "{\"schema_version\":1,\"endpoints\":["                                                                 \
        "{\"alias\":\"metrics\",\"socket_path\":\"/run/m/metrics.sock\",\"runtime_ids\":[\"codex\",\"pi\"]},"  \
        "{\"alias\":\"observe\",\"socket_path\":\"/run/sage/obs.sock\",\"runtime_ids\":[\"pi\"],"              \
        "\"guest_channel\":\"sage.glove-observation.v1\"}]}"

static struct glove_services_config *decode_ok(const char *text) {
        struct glove_error err = { 0 };
        struct glove_services_config *c = NULL;
        expect_ok(glove_services_config_decode(text, strlen(text), &c, &err), err);
        assert_non_null(c);
        return c;
}

static void test_good(void **state) {
        (void)state;
        struct glove_services_config *c = decode_ok(GOOD);
        assert_int_equal(glove_services_config_count(c), 2);
        const struct glove_services_config_endpoint *m = glove_services_config_endpoint(c, 0);
        assert_string_equal(m->alias, "metrics");
        assert_string_equal(m->socket_path, "/run/m/metrics.sock");
        assert_int_equal(m->n_runtime_ids, 2);
        assert_string_equal(m->runtime_ids[0], "codex");
        assert_string_equal(m->runtime_ids[1], "pi");
        assert_false(m->has_guest_channel);
        assert_null(glove_services_config_guest_channel(c, 0));
        assert_string_equal(glove_services_config_guest_channel(c, 1), "sage.glove-observation.v1");
        assert_null(glove_services_config_endpoint(c, 2));
        size_t i = 99;
        assert_true(glove_services_config_find(c, "observe", &i));
        assert_int_equal(i, 1);
        assert_false(glove_services_config_find(c, "nope", &i));
        assert_true(glove_services_config_allows(c, 0, "codex"));
        assert_true(glove_services_config_allows(c, 1, "pi"));
        assert_false(glove_services_config_allows(c, 1, "codex"));
        assert_false(glove_services_config_allows(c, 2, "pi"));
        assert_false(glove_services_config_allows(c, 0, "cod"));
        glove_services_config_free(c);

        glove_services_config_free(NULL);
}

struct bad {
        const char *text;
        const char *code;
        const char *where; /* in the message, or NULL */
};

#define EP(alias, path, ids) "{\"alias\":\"" alias "\",\"socket_path\":\"" path "\",\"runtime_ids\":[" ids "]}"
#define CFG(eps) "{\"schema_version\":1,\"endpoints\":[" eps "]}"

static void test_bad(void **state) {
        (void)state;
        static const struct bad cases[] = {
                { CFG(EP("b", "/r/b.sock", "\"pi\"") "," EP("a", "/r/a.sock", "\"pi\"")), "services.config_unsorted",
                  "$.endpoints[1].alias" },
                { CFG(EP("a", "/r/a.sock", "\"pi\"") "," EP("a", "/r/b.sock", "\"pi\"")), "services.config_duplicate",
                  "$.endpoints[1].alias" },
                { CFG(EP("a", "/r/a.sock", "\"pi\"") "," EP("b", "/r/a.sock", "\"pi\"")), "services.config_duplicate",
                  "$.endpoints[1].socket_path" },
                { CFG(""), "services.config_empty", "$.endpoints" },
                { CFG(EP("a", "r/a.sock", "\"pi\"")), "services.config_path", "$.endpoints[0].socket_path" },
                { CFG(EP("a", "/r/../a.sock", "\"pi\"")), "services.config_path", "$.endpoints[0].socket_path" },
                { CFG(EP("a", "/r/./a.sock", "\"pi\"")), "services.config_path", NULL },
                { CFG(EP("a", "/r//a.sock", "\"pi\"")), "services.config_path", NULL },
                { CFG(EP("a", "/r/a/", "\"pi\"")), "services.config_path", NULL },
                { CFG(EP("a", "/", "\"pi\"")), "services.config_path", NULL },
                { CFG(EP("a", "/r/a\\u0001", "\"pi\"")), "services.config_path", NULL },
                { CFG(EP("a", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                             "aaaaaaaaaaa",
                          "\"pi\"")),
                  "services.config_path", NULL },
                { CFG(EP("A", "/r/a.sock", "\"pi\"")), "services.config_identifier", "$.endpoints[0].alias" },
                { CFG(EP("-a", "/r/a.sock", "\"pi\"")), "services.config_identifier", NULL },
                { CFG(EP("a.b", "/r/a.sock", "\"pi\"")), "services.config_identifier", NULL },
                { CFG(EP("a", "/r/a.sock", "\"Pi\"")), "services.config_identifier", "$.endpoints[0].runtime_ids[0]" },
                { CFG(EP("a", "/r/a.sock", "\"pi\",\"codex\"")), "services.config_unsorted",
                  "$.endpoints[0].runtime_ids[1]" },
                { CFG(EP("a", "/r/a.sock", "\"pi\",\"pi\"")), "services.config_duplicate", NULL },
                { CFG(EP("a", "/r/a.sock", "")), "services.config_empty", "$.endpoints[0].runtime_ids" },
                { CFG(EP("a", "/r/a.sock", "\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"")),
                  "services.config_too_many", NULL },
                { CFG(EP("a", "/r/a.sock", "1")), "services.config_type", "$.endpoints[0].runtime_ids[0]" },
                { CFG("{\"alias\":\"a\",\"socket_path\":\"/r/a\",\"runtime_ids\":[\"pi\"],\"port\":80}"),
                  "services.config_unknown_field", "$.endpoints[0].port" },
                { CFG("{\"alias\":\"a\",\"socket_path\":\"/r/a\",\"runtime_ids\":[\"pi\"],\"guest_channel\":\"X\"}"),
                  "services.config_identifier", "$.endpoints[0].guest_channel" },
                { CFG("{\"alias\":\"a\",\"socket_path\":\"/r/a\",\"runtime_ids\":[\"pi\"],\"guest_channel\":null}"),
                  "services.config_type", "$.endpoints[0].guest_channel" },
                { CFG("{\"alias\":\"a\",\"runtime_ids\":[\"pi\"]}"), "services.config_missing_field",
                  "$.endpoints[0].socket_path" },
                { CFG("{\"alias\":\"a\",\"alias\":\"b\",\"socket_path\":\"/r/a\",\"runtime_ids\":[\"pi\"]}"),
                  "services.config_duplicate", NULL },
                { "{\"schema_version\":1,\"endpoints\":[],\"uid\":0}", "services.config_unknown_field", "$.uid" },
                { "{\"schema_version\":2,\"endpoints\":[]}", "services.config_schema_version", "$.schema_version" },
                { "{\"schema_version\":\"1\",\"endpoints\":[]}", "services.config_type", "$.schema_version" },
                { "{\"schema_version\":1.0,\"endpoints\":[]}", "services.config_type", NULL },
                { "{\"schema_version\":1}", "services.config_missing_field", "$.endpoints" },
                { "{\"schema_version\":1,\"endpoints\":{}}", "services.config_type", "$.endpoints" },
                { "{\"schema_version\":1,\"endpoints\":[1]}", "services.config_type", "$.endpoints[0]" },
                { "{\"schema_version\":1,\"endpoints\":[]", "services.config_invalid_json", NULL },
                { "[]", "services.config_invalid_json", NULL },
                { "{\"schema_version\":1,\"endpoints\":[]} x", "services.config_invalid_json", NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_error err = { 0 };
                struct glove_services_config *c = (void *)0x1;
                int r = glove_services_config_decode(cases[i].text, strlen(cases[i].text), &c, &err);
                if (r >= 0 || !err.code || strcmp(err.code, cases[i].code) != 0)
                        fail_msg("case %zu (%s): want %s, got %d %s (%s)", i, cases[i].text, cases[i].code, r,
                                 err.code ? err.code : "(none)", err.message);
                assert_null(c);
                if (cases[i].where && !strstr(err.message, cases[i].where))
                        fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.message, cases[i].where);
        }
}

static void test_too_many_endpoints(void **state) {
        (void)state;
        char text[8192];
        size_t n = (size_t)snprintf(text, sizeof(text), "{\"schema_version\":1,\"endpoints\":[");
        for (int i = 0; i < GLOVE_SERVICES_MAX_ENDPOINTS + 1; i++)
                n += (size_t)snprintf(text + n, sizeof(text) - n,
                                      "%s{\"alias\":\"a%02d\",\"socket_path\":\"/r/a%02d\",\"runtime_ids\":[\"pi\"]}",
                                      i ? "," : "", i, i);
        n += (size_t)snprintf(text + n, sizeof(text) - n, "]}");
        struct glove_error err = { 0 };
        struct glove_services_config *c = NULL;
        expect_error(glove_services_config_decode(text, n, &c, &err), err, -E2BIG, "services.config_too_many");
        /* Exactly the maximum is fine: drop the last endpoint. */
        char *last = strrchr(text, '{');
        strcpy(last - 1, "]}");
        struct glove_error err2 = { 0 };
        expect_ok(glove_services_config_decode(text, strlen(text), &c, &err2), err2);
        assert_int_equal(glove_services_config_count(c), GLOVE_SERVICES_MAX_ENDPOINTS);
        glove_services_config_free(c);
}

static void test_too_large(void **state) {
        (void)state;
        size_t n = GLOVE_SERVICES_CONFIG_MAX_BYTES + 1;
        char *text = malloc(n);
        assert_non_null(text);
        memset(text, ' ', n);
        struct glove_error err = { 0 };
        struct glove_services_config *c = NULL;
        expect_error(glove_services_config_decode(text, n, &c, &err), err, -EMSGSIZE, "services.config_too_large");
        free(text);
}

static void write_file(const char *path, const char *text, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static void test_load(void **state) {
        (void)state;
        char dir[FIXTURE_PATH_MAX], path[FIXTURE_PATH_MAX];
        fixture_tmpdir(dir, "config");
        fixture_join(path, dir, "services.json");
        write_file(path, GOOD, 0600);
        struct glove_error err = { 0 };
        struct glove_services_config *c = NULL;
        expect_ok(glove_services_config_load(path, geteuid(), &c, &err), err);
        assert_int_equal(glove_services_config_count(c), 2);
        glove_services_config_free(c);

        assert_int_equal(chmod(path, 0644), 0);
        glove_error_clear(&err);
        expect_error(glove_services_config_load(path, geteuid(), &c, &err), err, -EPERM, "services.file_mode");
        assert_null(c);

        assert_int_equal(chmod(path, 0600), 0);
        glove_error_clear(&err);
        expect_error(glove_services_config_load(path, geteuid() + 1, &c, &err), err, -EPERM, "services.file_owner");

        /* A decode error names the file. */
        write_file(path, "{\"schema_version\":3,\"endpoints\":[]}", 0600);
        glove_error_clear(&err);
        expect_error(glove_services_config_load(path, geteuid(), &c, &err), err, -EINVAL,
                     "services.config_schema_version");
        assert_non_null(strstr(err.message, path));

        glove_error_clear(&err);
        expect_error(glove_services_config_load("services.json", geteuid(), &c, &err), err, -EINVAL,
                     "services.file_path_relative");
        fixture_rm_rf(dir);
}

static void test_validators(void **state) {
        (void)state;
        assert_true(glove_services_identifier_valid("a"));
        assert_true(glove_services_identifier_valid("0bs_erve-2"));
        assert_false(glove_services_identifier_valid(""));
        assert_false(glove_services_identifier_valid("_a"));
        assert_false(glove_services_identifier_valid(NULL));
        char long_id[65];
        memset(long_id, 'a', 64);
        long_id[64] = '\0';
        assert_false(glove_services_identifier_valid(long_id));
        long_id[63] = '\0';
        assert_true(glove_services_identifier_valid(long_id));
        assert_true(glove_services_socket_path_valid("/a"));
        assert_true(glove_services_socket_path_valid("/a/b..c/.d"));
        assert_false(glove_services_socket_path_valid("/a/.."));
        assert_false(glove_services_socket_path_valid("//a"));
        assert_false(glove_services_socket_path_valid(NULL));
        char path[GLOVE_SERVICES_SOCKET_PATH_MAX + 2];
        memset(path, 'a', sizeof(path));
        path[0] = '/';
        path[GLOVE_SERVICES_SOCKET_PATH_MAX] = '\0';
        assert_true(glove_services_socket_path_valid(path));
        path[GLOVE_SERVICES_SOCKET_PATH_MAX] = 'a';
        path[GLOVE_SERVICES_SOCKET_PATH_MAX + 1] = '\0';
        assert_false(glove_services_socket_path_valid(path));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good),
                cmocka_unit_test(test_bad),
                cmocka_unit_test(test_too_many_endpoints),
                cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_load),
                cmocka_unit_test(test_validators),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

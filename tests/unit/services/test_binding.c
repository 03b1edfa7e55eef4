/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/services/binding.h: a pinned endpoint's identities to JSON and
 * back, the canonical shape, and refused input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>

#include "glove/base/json.h"
#include "glove/services/binding.h"
#include "helpers.h"

static void test_round_trip(void **state) {
        (void)state;
        char dir[FIXTURE_PATH_MAX], svc[FIXTURE_PATH_MAX], sock[FIXTURE_PATH_MAX];
        fixture_tmpdir(dir, "binding");
        fixture_join(svc, dir, "svc");
        assert_int_equal(mkdir(svc, 0700), 0);
        fixture_join(sock, svc, "up.sock");
        int l = fixture_listen(sock, 0600);
        struct glove_error err = { 0 };
        struct glove_services_endpoint *ep = NULL;
        expect_ok(glove_services_endpoint_pin(sock, geteuid(), &ep, &err), err);

        /* Both identities through JSON text, then a reopen with them. */
        json_t *pj = NULL, *sj = NULL;
        expect_ok(glove_services_identity_json(glove_services_endpoint_parent_identity(ep), &pj, &err), err);
        expect_ok(glove_services_identity_json(glove_services_endpoint_socket_identity(ep), &sj, &err), err);
        char *text = NULL;
        expect_ok(glove_json_encode_canonical(sj, &text, NULL, &err), err);
        assert_non_null(strstr(text, "{\"dev\":"));
        assert_non_null(strstr(text, ",\"ino\":"));
        json_t *back = NULL;
        expect_ok(glove_json_decode_strict(text, strlen(text), 4096, 0, &back, &err), err);
        struct glove_services_identity p, s;
        expect_ok(glove_services_identity_from_json(pj, "$.parent", &p, &err), err);
        expect_ok(glove_services_identity_from_json(back, "$.socket", &s, &err), err);
        assert_true(glove_services_identity_equal(&s, glove_services_endpoint_socket_identity(ep)));
        assert_true(glove_services_identity_equal(&p, glove_services_endpoint_parent_identity(ep)));
        struct glove_services_endpoint *again = NULL;
        expect_ok(glove_services_endpoint_reopen(sock, &p, &s, geteuid(), &again, &err), err);
        glove_services_endpoint_free(again);
        json_decref(back);
        json_decref(pj);
        json_decref(sj);
        free(text);
        glove_services_endpoint_free(ep);
        close(l);
        fixture_rm_rf(dir);
}

static void test_range(void **state) {
        (void)state;
        struct glove_services_identity id = { .dev = (uint64_t)INT64_MAX + 1, .ino = 1 };
        json_t *j = (void *)0x1;
        struct glove_error err = { 0 };
        expect_error(glove_services_identity_json(&id, &j, &err), err, -EOVERFLOW, "services.identity_range");
        assert_null(j);
        id = (struct glove_services_identity){ .dev = INT64_MAX, .ino = INT64_MAX, .uid = UINT32_MAX,
                                               .mode = UINT32_MAX, .nlink = UINT32_MAX };
        expect_ok(glove_services_identity_json(&id, &j, &err), err);
        struct glove_services_identity back;
        expect_ok(glove_services_identity_from_json(j, NULL, &back, &err), err);
        assert_true(glove_services_identity_equal(&id, &back));
        json_decref(j);
}

static void test_invalid(void **state) {
        (void)state;
        const char *bad[] = {
                "[]",
                "{\"dev\":1,\"ino\":2,\"mode\":3,\"nlink\":1}",
                "{\"dev\":1,\"ino\":2,\"mode\":3,\"nlink\":1,\"uid\":0,\"path\":\"/x\"}",
                "{\"dev\":-1,\"ino\":2,\"mode\":3,\"nlink\":1,\"uid\":0}",
                "{\"dev\":1,\"ino\":\"2\",\"mode\":3,\"nlink\":1,\"uid\":0}",
                "{\"dev\":1,\"ino\":2,\"mode\":3,\"nlink\":1,\"uid\":4294967296}",
                "{\"dev\":1,\"ino\":2.5,\"mode\":3,\"nlink\":1,\"uid\":0}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                json_error_t je;
                json_t *v = json_loads(bad[i], 0, &je);
                assert_non_null(v);
                struct glove_services_identity id = { .dev = 77 };
                struct glove_error err = { 0 };
                expect_error(glove_services_identity_from_json(v, "$.socket", &id, &err), err, -EINVAL,
                             "services.identity_invalid");
                assert_int_equal(id.dev, 77);
                assert_non_null(strstr(err.message, "$.socket"));
                json_decref(v);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_range),
                cmocka_unit_test(test_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/run/run_protocol.h: the messages `glove run` builds and
 * how it reads JSON strings from its peers as C strings (a NUL inside a
 * string must never cut it: docs/mcp-mediation.md, Framing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run_protocol.h"

static void test_string_refuses_nul(void **state) {
        (void)state;
        json_t *plain = json_string("2025-06-18");
        json_t *cut = json_stringn("2025-06-18\0x", 12);
        json_t *trailing = json_stringn("2025-06-18\0", 11);
        json_t *num = json_integer(1);
        assert_string_equal(glove_run_string(plain), "2025-06-18");
        assert_null(glove_run_string(cut));
        assert_null(glove_run_string(trailing));
        assert_null(glove_run_string(num));
        assert_null(glove_run_string(NULL));
        json_t *empty = json_string("");
        assert_string_equal(glove_run_string(empty), "");
        json_decref(plain);
        json_decref(cut);
        json_decref(trailing);
        json_decref(num);
        json_decref(empty);
}

static void test_version_supported(void **state) {
        (void)state;
        assert_true(glove_run_version_supported("2025-06-18"));
        assert_true(glove_run_version_supported("2024-11-05"));
        assert_false(glove_run_version_supported("2025-06-1"));
        assert_false(glove_run_version_supported(""));
        assert_false(glove_run_version_supported(NULL));
}

/* The version the agent gets back for params.protocolVersion. */
static void expect_answer(json_t *params, const char *want) {
        json_t *res = glove_run_initialize_result(params);
        assert_non_null(res);
        json_t *v = json_object_get(res, "protocolVersion");
        assert_true(json_is_string(v));
        assert_int_equal(json_string_length(v), strlen(want));
        assert_string_equal(json_string_value(v), want);
        json_decref(res);
        json_decref(params);
}

static void test_initialize_version(void **state) {
        (void)state;
        expect_answer(json_pack("{s:s}", "protocolVersion", "2024-11-05"), "2024-11-05");
        expect_answer(json_pack("{s:s}", "protocolVersion", "1999-01-01"), "2025-11-25");
        expect_answer(json_pack("{s:i}", "protocolVersion", 5), "2025-11-25");
        expect_answer(json_object(), "2025-11-25");
        /* "2024-11-05\u0000x" is not a version Glove speaks: it gets Glove's
         * newest, not "2024-11-05" (the text before the NUL). */
        expect_answer(json_pack("{s:s%}", "protocolVersion", "2024-11-05\0x", (size_t)12), "2025-11-25");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_string_refuses_nul),
                cmocka_unit_test(test_version_supported),
                cmocka_unit_test(test_initialize_version),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

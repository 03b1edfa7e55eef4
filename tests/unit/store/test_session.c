/* SPDX-License-Identifier: Apache-2.0 */
/* The lifecycle state machine (glove/store/session.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glove/store/session.h"

#define S(x) GLOVE_STORE_SESSION_##x

static void test_names_round_trip(void **state) {
        (void)state;
        static const char *const expect[] = { "created", "preparing", "starting", "running",
                                              "stopping", "exited", "failed" };
        for (int i = 0; i < GLOVE_STORE_SESSION_STATE_COUNT; i++) {
                enum glove_store_session_state s;
                assert_string_equal(glove_store_session_state_name((enum glove_store_session_state)i), expect[i]);
                assert_int_equal(glove_store_session_state_parse(expect[i], &s, NULL), 0);
                assert_int_equal(s, i);
        }
        assert_string_equal(glove_store_session_state_name(S(STATE_COUNT)), "unknown");
        struct glove_error e = { 0 };
        enum glove_store_session_state s;
        assert_int_equal(glove_store_session_state_parse("Created", &s, &e), -EINVAL);
        assert_string_equal(e.code, "session.unknown_state");
        assert_int_equal(glove_store_session_state_parse(NULL, &s, NULL), -EINVAL);
}

/* Every (from, to) pair against the spec's diagram. */
static void test_transition_table(void **state) {
        (void)state;
        for (int f = 0; f < GLOVE_STORE_SESSION_STATE_COUNT; f++) {
                for (int t = 0; t < GLOVE_STORE_SESSION_STATE_COUNT; t++) {
                        struct glove_error e = { 0 };
                        int r = glove_store_session_transition_check((enum glove_store_session_state)f,
                                                                       (enum glove_store_session_state)t, &e);
                        bool terminal = f == S(EXITED) || f == S(FAILED);
                        if (f == t) {
                                assert_int_equal(r, 0); /* idempotent */
                        } else if (terminal) {
                                assert_int_equal(r, -EINVAL);
                                assert_string_equal(e.code, "session.terminal");
                        } else if (t == S(FAILED) || t == f + 1) {
                                assert_int_equal(r, 1);
                        } else {
                                assert_int_equal(r, -EINVAL);
                                assert_string_equal(e.code, "session.invalid_transition");
                        }
                }
        }
}

static void test_specific_edges(void **state) {
        (void)state;
        assert_int_equal(glove_store_session_transition_check(S(CREATED), S(PREPARING), NULL), 1);
        assert_int_equal(glove_store_session_transition_check(S(STOPPING), S(EXITED), NULL), 1);
        assert_int_equal(glove_store_session_transition_check(S(CREATED), S(FAILED), NULL), 1);
        assert_int_equal(glove_store_session_transition_check(S(CREATED), S(RUNNING), NULL), -EINVAL);
        assert_int_equal(glove_store_session_transition_check(S(RUNNING), S(STARTING), NULL), -EINVAL);
        assert_int_equal(glove_store_session_transition_check(S(EXITED), S(FAILED), NULL), -EINVAL);
        assert_int_equal(glove_store_session_transition_check(S(FAILED), S(CREATED), NULL), -EINVAL);
        assert_int_equal(glove_store_session_transition_check(S(STATE_COUNT), S(CREATED), NULL), -EINVAL);
        assert_true(glove_store_session_state_terminal(S(EXITED)));
        assert_true(glove_store_session_state_terminal(S(FAILED)));
        assert_false(glove_store_session_state_terminal(S(STOPPING)));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names_round_trip),
                cmocka_unit_test(test_transition_table),
                cmocka_unit_test(test_specific_edges),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

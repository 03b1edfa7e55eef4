/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Assertions on a Glove call's return value and its struct glove_error
 * (tests/unit/apply, tests/unit/services). Include after <cmocka.h>.
 */

#include <string.h>

/* Asserts that r is want_r and err's code is want_code, printing both. */
#define expect_error(r, err, want_r, want_code)                                                                 \
        do {                                                                                                    \
                int r_ = (r);                                                                                   \
                if (r_ != (want_r) || !(err).code || strcmp((err).code, (want_code)) != 0)                      \
                        fail_msg("%s:%d: want %d %s, got %d %s (%s)", __FILE__, __LINE__, (int)(want_r),        \
                                 (want_code), r_, (err).code ? (err).code : "(none)", (err).message);          \
        } while (0)

/* Asserts success, printing the error otherwise. */
#define expect_ok(r, err)                                                                                       \
        do {                                                                                                    \
                int r_ = (r);                                                                                   \
                if (r_ != 0)                                                                                    \
                        fail_msg("%s:%d: want 0, got %d %s (%s)", __FILE__, __LINE__, r_,                       \
                                 (err).code ? (err).code : "(none)", (err).message);                           \
        } while (0)

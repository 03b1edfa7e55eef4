/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/shown.h"

static void test_escapes_what_a_terminal_acts_on(void **state) {
        (void)state;
        char out[256];
        assert_string_equal(glove_shown("plain text, caf\xc3\xa9", out, sizeof(out)), "plain text, caf\xc3\xa9");
        assert_string_equal(glove_shown("\x1b]0;owned\x07x\r\n\x7f", out, sizeof(out)), "\\x1b]0;owned\\x07x\\x0d\\x0a\\x7f");
        assert_string_equal(glove_shown("a\xc2\x9b" "2Jb", out, sizeof(out)), "a\\x9b2Jb"); /* C1 CSI */
        assert_string_equal(glove_shown("x\xe2\x80\xaeyz\xe2\x81\xa6w\xd8\x9c", out, sizeof(out)), "x\\u{202E}yz\\u{2066}w\\u{061C}");
        assert_string_equal(glove_shown("\xe2\x80\x94", out, sizeof(out)), "\xe2\x80\x94"); /* an em dash stays */
        assert_string_equal(glove_shown(NULL, out, sizeof(out)), "?");
        /* A backslash is escaped too: the four characters \x0a and a
         * newline never show alike. */
        assert_string_equal(glove_shown("a\\x0a", out, sizeof(out)), "a\\\\x0a");
        assert_string_equal(glove_shown("a\n", out, sizeof(out)), "a\\x0a");
}

static void test_cuts_at_a_character(void **state) {
        (void)state;
        char out[12];
        assert_string_equal(glove_shown("abcdefghijklmnop", out, sizeof(out)), "abcdefgh...");
        assert_string_equal(glove_shown("abcdefg\xc3\xa9z", out, sizeof(out)), "abcdefg...");
        char whole[GLOVE_SHOWN_SIZE(3)];
        assert_string_equal(glove_shown("\xe2\x80\xae", whole, sizeof(whole)), "\\u{202E}");
        char whole2[GLOVE_SHOWN_SIZE(2)];
        assert_string_equal(glove_shown("\x1b\x1b", whole2, sizeof(whole2)), "\\x1b\\x1b");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escapes_what_a_terminal_acts_on),
                cmocka_unit_test(test_cuts_at_a_character),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

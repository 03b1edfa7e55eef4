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
        /* What shows as nothing or as a plain space: soft hyphen, zero
         * width space, word joiner, BOM, line separator, no-break space,
         * ideographic space, a tag character; an accented letter stays. */
        assert_string_equal(glove_shown("m\xc2\xadx\xe2\x80\x8by\xe2\x81\xa0z\xef\xbb\xbf", out, sizeof(out)),
                            "m\\u{00AD}x\\u{200B}y\\u{2060}z\\u{FEFF}");
        assert_string_equal(glove_shown("\xe2\x80\xa8\xc2\xa0\xe3\x80\x80\xf3\xa0\x80\xa1\xc3\xa9", out, sizeof(out)),
                            "\\u{2028}\\u{00A0}\\u{3000}\\u{E0021}\xc3\xa9");
        /* Plain spaces stay in text. */
        assert_string_equal(glove_shown("  a  b ", out, sizeof(out)), "  a  b ");
}

static void test_names(void **state) {
        (void)state;
        char out[256];
        /* In a name, a space at either end or next to another is shown:
         * no run of spaces pads a name into a wrapped, forged line. */
        assert_string_equal(glove_shown_name("my file.txt", out, sizeof(out)), "my file.txt");
        assert_string_equal(glove_shown_name(" a  b ", out, sizeof(out)), "\\x20a\\x20\\x20b\\x20");
        assert_string_equal(glove_shown_name("w   removed", out, sizeof(out)), "w\\x20\\x20\\x20removed");
        assert_string_equal(glove_shown_name(" ", out, sizeof(out)), "\\x20");
        assert_string_equal(glove_shown_name("a\x1b", out, sizeof(out)), "a\\x1b");
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
                cmocka_unit_test(test_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/*
 * Text from a file or a peer as it may reach an operator's terminal
 * (docs/threat-model.md): what a terminal would act on instead of showing
 * is written as an escape, so a policy file, a template or a daemon's answer
 * cannot move the cursor, set the title, ring the bell or reorder what the
 * operator reads.
 *
 *  - C0 controls (U+0000..U+001F, so ESC, BEL, CR, LF, TAB too) and DEL:
 *    \xNN;
 *  - C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F): \xNN of the code
 *    point (0x9b is CSI);
 *  - the backslash itself: \\ (so a name holding the four characters
 *    "\x0a" never shows like one holding a newline);
 *  - what a terminal shows as nothing or as a plain space, or what
 *    reorders text: bidirectional controls (Unicode UAX #9: U+061C,
 *    U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), the other format
 *    characters (Cf: U+00AD soft hyphen, U+200B..U+200D, U+2060..U+2064,
 *    U+FEFF, the tags U+E0000.., ...), the line and paragraph separators
 *    (U+2028, U+2029), every space but U+0020 (U+00A0, U+2000..U+200A,
 *    U+3000, ...), variation selectors and the Hangul fillers:
 *    \u{NNNN};
 * everything else, other UTF-8 included, is copied as it is.
 */
#include <stddef.h>

/*
 * Writes s as shown above into out (size bytes, size >= 8), always
 * NUL-terminated. When the whole does not fit, it is cut at a character
 * boundary and ends in "..." (out is for showing, never for parsing).
 * s NULL is shown as "?". Returns out. No allocation, no state: safe in any
 * thread.
 */
char *glove_shown(const char *s, char *out, size_t size);

/*
 * As glove_shown, for a name listed one per line (a path in a listing of
 * changes): a space that begins or ends it or stands next to another
 * space is shown as \x20 too, so that no run of spaces can pad a name
 * until the terminal wraps it into what looks like another line, and no
 * name differs from another by invisible spaces. A single inner space
 * stays as it is.
 */
char *glove_shown_name(const char *s, char *out, size_t size);

/* A buffer size that shows any string of up to n bytes whole. */
#define GLOVE_SHOWN_SIZE(n) ((n) * 4 + 4)

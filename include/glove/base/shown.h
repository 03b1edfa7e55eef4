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
 *  - bidirectional controls (Unicode UAX #9: U+061C, U+200E, U+200F,
 *    U+202A..U+202E, U+2066..U+2069): \u{NNNN};
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

/* A buffer size that shows any string of up to n bytes whole. */
#define GLOVE_SHOWN_SIZE(n) ((n) * 4 + 4)

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef GLOVE_MCP_JSON_TEXT_H
#define GLOVE_MCP_JSON_TEXT_H

/*
 * Walking JSON text (RFC 8259) without decoding it, for the fast paths that
 * read or amend a message's bytes in place (a result's resultType, the
 * members a 2026-07-28 result gains). The text is assumed valid: the
 * response scanner (glove/mcp/response_scan.h) vouched for it. On text
 * that is not, each function still ends without reading s[len] or beyond.
 * Pure, no allocation, thread-safe.
 */

#include <stddef.h>

/* The index of the first byte at or after s[i] that is not JSON
 * whitespace (space, tab, LF, CR), or len. */
size_t glove_mcp_text_skip_ws(const char *s, size_t len, size_t i);

/* The index after the string whose opening quote is s[i], or len when it
 * does not end before len. Escapes are skipped, not checked. */
size_t glove_mcp_text_skip_string(const char *s, size_t len, size_t i);

/* The index after the value that starts at s[i] (a string, an object or
 * array with all it holds, or a literal or number), or len when it does
 * not end before len; i itself when s[i] ends a value (',', '}', ']'). */
size_t glove_mcp_text_skip_value(const char *s, size_t len, size_t i);

#endif

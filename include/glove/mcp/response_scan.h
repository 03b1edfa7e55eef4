/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The fast path of an upstream's responses (issue 13, Performance): a
 * response is mostly bytes Glove does not need to understand. A careful,
 * non-allocating scanner checks that a line is a JSON-RPC response that
 * glove_mcp_message_parse (frame.h) would accept with flags 0, and locates
 * its integer "id" and the bytes of its "result" or "error" value, so the
 * caller can route it by its id and forward those bytes verbatim, without
 * building a tree or encoding it again.
 *
 * The scanner never accepts a line the tree parser refuses: it answers
 * "yes, this is such a response" only when it is sure, and "cannot tell"
 * for everything else — invalid JSON, invalid UTF-8, a raw NUL, nesting
 * deeper than GLOVE_JSON_MAX_DEPTH, a duplicate key at any depth, but also
 * valid text it does not decide (a key written with an escape, an object
 * with more than GLOVE_MCP_SCAN_OBJECT_KEYS_MAX keys, an integer of 19
 * digits or more, a real whose decimal exponent is beyond
 * ±GLOVE_MCP_SCAN_REAL_EXP_MAX, a string id, a request or a notification).
 * The caller then decodes the line with glove_mcp_message_parse, which
 * decides as it always did. tests/unit/mcp/test_response_scan.c holds a
 * case per rule and a differential test against the tree parser;
 * fuzz/mcp_response_scan.c fuzzes the same property.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most keys one object may have for the scanner to decide it (duplicates
 * are found by comparing each key with the earlier ones of its object). */
#define GLOVE_MCP_SCAN_OBJECT_KEYS_MAX 64
/* Most keys of all the objects open at one time (the scanner's memory). */
#define GLOVE_MCP_SCAN_KEYS_MAX 512
/* Reals whose leading digit's decimal exponent is beyond this are left to
 * the tree parser (which refuses an overflow). */
#define GLOVE_MCP_SCAN_REAL_EXP_MAX 300

struct glove_mcp_raw_response {
        int64_t id;              /* the top-level "id", an integer */
        bool is_error;           /* the value is "error" (an object), not "result" */
        size_t value_off;        /* the value's bytes: line[value_off .. value_off + value_len) */
        size_t value_len;
};

/*
 * Scans line (len bytes; no newline) as an upstream's message. Returns 1
 * when it is a JSON-RPC response that glove_mcp_message_parse(line, len,
 * max_frame, 0, ...) accepts, whose "id" is an integer: *out describes it.
 * Returns 0 when it cannot tell (*out is then unspecified): the caller
 * decodes the line with the tree parser. O(len × GLOVE_MCP_SCAN_OBJECT_KEYS_MAX)
 * at worst, O(len) for ordinary messages; uses about 4 KiB of stack, no
 * heap; line is borrowed.
 */
int glove_mcp_response_scan(const char *line, size_t len, size_t max_frame, struct glove_mcp_raw_response *out);

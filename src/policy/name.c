/* SPDX-License-Identifier: Apache-2.0 */
/* Qualified tool names "NAME.TOOL" (issue "glove run": tools reach the agent
 * as NAME.TOOL, split at the first dot). */
#include <string.h>

#include "glove/base/json.h"
#include "internal.h"

static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Checks TOOL bytes t[0..n): length, UTF-8, no control characters, no "*"
 * (the caller handles the whole-TOOL wildcard). */
static bool tool_bytes_valid(const char *t, size_t n, const char **why) {
        if (n == 0) {
                *why = "the tool part after the dot is empty";
                return false;
        }
        if (n > GLOVE_POLICY_TOOL_MAX) {
                *why = "the tool part is longer than 128 bytes";
                return false;
        }
        if (!glove_json_utf8_valid(t, n, NULL)) {
                *why = "the tool part is not valid UTF-8";
                return false;
        }
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)t[i];
                bool c1 = c == 0xc2 && i + 1 < n && (unsigned char)t[i + 1] >= 0x80 &&
                          (unsigned char)t[i + 1] <= 0x9f;
                if (c < 0x20 || c == 0x7f || c1) {
                        *why = "the tool part contains a control character";
                        return false;
                }
                if (c == '*') {
                        *why = "\"*\" is a wildcard only as the whole tool part (NAME.*)";
                        return false;
                }
        }
        return true;
}

bool glove_policy_name_parse(const char *qualified, bool wildcard_ok, size_t *name_len, bool *wildcard,
                             const char **why) {
        if (!qualified) {
                *why = "no name given";
                return false;
        }
        size_t total = strnlen(qualified, GLOVE_POLICY_QUALIFIED_MAX + 1);
        if (total > GLOVE_POLICY_QUALIFIED_MAX) {
                *why = "longer than NAME.TOOL allows (32 + 1 + 128 bytes)";
                return false;
        }
        const char *dot = memchr(qualified, '.', total);
        if (!dot) {
                *why = "expected NAME.TOOL (no dot)";
                return false;
        }
        size_t n = (size_t)(dot - qualified);
        if (n == 0 || n > GLOVE_POLICY_NAME_MAX) {
                *why = "the upstream NAME must be 1 to 32 characters";
                return false;
        }
        for (size_t i = 0; i < n; i++) {
                if (!name_char(qualified[i])) {
                        *why = "the upstream NAME may only hold a-z, 0-9, '_' and '-'";
                        return false;
                }
        }
        const char *tool = dot + 1;
        size_t tool_len = total - n - 1;
        bool wild = tool_len == 1 && tool[0] == '*';
        if (wild && !wildcard_ok) {
                *why = "a wildcard NAME.* is not allowed here; name one tool";
                return false;
        }
        if (!wild && !tool_bytes_valid(tool, tool_len, why))
                return false;
        *name_len = n;
        *wildcard = wild;
        return true;
}

bool glove_policy_tool_valid(const char *tool) {
        if (!tool)
                return false;
        return glove_policy_tool_name_valid(tool, strnlen(tool, GLOVE_POLICY_TOOL_MAX + 1));
}

bool glove_policy_tool_name_valid(const char *tool, size_t len) {
        const char *why;
        if (!tool || len == 0)
                return false;
        /* tool_bytes_valid looks at every byte of the count: a NUL is a C0
         * control character, wherever it is. */
        return tool_bytes_valid(tool, len, &why);
}

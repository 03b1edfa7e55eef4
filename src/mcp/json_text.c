/* SPDX-License-Identifier: Apache-2.0 */
/* Walking JSON text without decoding it (glove/mcp/json_text.h). */
#include "glove/mcp/json_text.h"

#include <stdbool.h>

static bool ws(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t glove_mcp_text_skip_ws(const char *s, size_t len, size_t i) {
        while (i < len && ws(s[i]))
                i++;
        return i;
}

size_t glove_mcp_text_skip_string(const char *s, size_t len, size_t i) {
        for (i++; i < len; i++) {
                if (s[i] == '\\')
                        i++;
                else if (s[i] == '"')
                        return i + 1;
        }
        return len;
}

size_t glove_mcp_text_skip_value(const char *s, size_t len, size_t i) {
        if (i >= len)
                return len;
        if (s[i] == '"')
                return glove_mcp_text_skip_string(s, len, i);
        if (s[i] == '{' || s[i] == '[') {
                size_t depth = 0;
                while (i < len) {
                        char c = s[i];
                        if (c == '"') {
                                i = glove_mcp_text_skip_string(s, len, i);
                                continue;
                        }
                        if (c == '{' || c == '[')
                                depth++;
                        else if ((c == '}' || c == ']') && --depth == 0)
                                return i + 1;
                        i++;
                }
                return len;
        }
        while (i < len && !ws(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']')
                i++;
        return i;
}

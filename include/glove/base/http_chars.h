/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Byte classes of HTTP/1.1 heads, shared by the egress proxy's head parser
 * (src/net/http_head.c) and the in-sandbox MCP endpoint's (src/mcp/
 * http_request.c). Pure, header-only. */
#include <stdbool.h>
#include <string.h>

/* RFC 9110 section 5.6.2 tchar (a byte of a token: a method, a field name). */
static inline bool glove_http_is_tchar(unsigned char c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                return true;
        return c && strchr("!#$%&'*+-.^_`|~", c);
}

/* A field value byte (RFC 9110 section 5.5): VCHAR, SP, HTAB, obs-text. */
static inline bool glove_http_is_value_char(unsigned char c) {
        return c == '\t' || (c >= 0x20 && c != 0x7f);
}

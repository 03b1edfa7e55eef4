/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The request head of the in-sandbox Streamable HTTP MCP endpoint (MCP
 * specification 2025-11-25 "Transports", Streamable HTTP; HTTP/1.1 per RFC
 * 9112, fields per RFC 9110). Pure functions over bytes the agent sent:
 * no allocation, no descriptors; fuzzed by fuzz/mcp_http_request.c.
 *
 * Strict: lines end in CRLF (a bare LF is a bad head), no obs-fold, no
 * control characters in field values, field names are tokens, exactly one SP
 * between the three parts of the request line, the target in origin form
 * ("/..."), HTTP/1.1 or HTTP/1.0. The fields the endpoint acts on (Host,
 * Origin, Content-Length, Transfer-Encoding, Mcp-Session-Id,
 * MCP-Protocol-Version, Mcp-Method, Mcp-Name) may appear once each; Accept, Content-Type and
 * Connection are kept from their first line (later lines of Accept are
 * refused rather than merged: "endpoint.http_bad_head").
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest request head (request line, fields, the blank line), bytes. */
#define GLOVE_MCP_HTTP_HEAD_MAX 16384
/* Most field lines in one head. */
#define GLOVE_MCP_HTTP_FIELDS_MAX 64
/* Longest request target, bytes. */
#define GLOVE_MCP_HTTP_TARGET_MAX 1024

enum glove_mcp_http_method {
        GLOVE_MCP_HTTP_GET,
        GLOVE_MCP_HTTP_POST,
        GLOVE_MCP_HTTP_DELETE,
        GLOVE_MCP_HTTP_OTHER, /* a valid token the endpoint does not serve: 405 */
};

/* A field value: a span of the head (not NUL-terminated), or absent (s NULL). */
struct glove_mcp_http_span {
        const char *s;
        size_t n;
};

struct glove_mcp_http_request {
        enum glove_mcp_http_method method;
        struct glove_mcp_http_span target;     /* origin form, starts with '/' */
        int minor;                             /* HTTP/1.<minor>: 0 or 1 */
        struct glove_mcp_http_span host, origin, accept, content_type, connection, session_id, protocol_version;
        /* MCP 2026-07-28 "Streamable HTTP", standard headers: the request's
         * method and its params.name or params.uri (maybe in the
         * "=?base64?...?=" form); other Mcp-Param-* fields are not kept. */
        struct glove_mcp_http_span mcp_method, mcp_name;
        bool has_content_length;
        uint64_t content_length;               /* when has_content_length */
        bool has_transfer_encoding;            /* any Transfer-Encoding: the endpoint answers 411 */
};

/*
 * Where the head ends in buf[0..len): the offset just past its first
 * "\r\n\r\n", or 0 when it is not complete. When a bare "\n" (one not after
 * "\r") comes before that, *bare_lf is set (may be NULL) and the caller
 * refuses the head.
 */
size_t glove_mcp_http_head_end(const char *buf, size_t len, bool *bare_lf);

/*
 * Parses one complete head head[0..len) (len as glove_mcp_http_head_end gave,
 * at most GLOVE_MCP_HTTP_HEAD_MAX). *req points into head. Returns 0, or the
 * HTTP status to answer and *reason (a static stable code) set:
 *   400 "endpoint.http_bad_head"   malformed line, bad field, a duplicate of a
 *                                  field that must be single, Content-Length not
 *                                  a decimal within 2^53, Transfer-Encoding with
 *                                  Content-Length, target not in origin form
 *   431 "endpoint.http_head_too_large"  more than GLOVE_MCP_HTTP_FIELDS_MAX
 *                                  fields, len over GLOVE_MCP_HTTP_HEAD_MAX, or
 *                                  a target over GLOVE_MCP_HTTP_TARGET_MAX
 *   505 "endpoint.http_version"    not HTTP/1.0 or HTTP/1.1
 */
int glove_mcp_http_request_parse(const char *head, size_t len, struct glove_mcp_http_request *req, const char **reason);

/* Whether span equals text, ASCII case-insensitively. */
bool glove_mcp_http_span_eq(struct glove_mcp_http_span sp, const char *text);

/*
 * Whether a list-valued field (Accept, Connection) names token (a media
 * range "type/subtype" or a connection option), case-insensitively, ignoring
 * parameters (";q=...") and whitespace. For Accept, "*" + "/" + "*" and
 * "type/" + "*" match too when wildcards is true. A q=0 parameter
 * excludes the element.
 */
bool glove_mcp_http_list_has(struct glove_mcp_http_span sp, const char *token, bool wildcards);

/* SPDX-License-Identifier: Apache-2.0 */
/* The endpoint's HTTP request head (include/glove/mcp/http_request.h). */
#include "glove/mcp/http_request.h"

#include <string.h>
#include <strings.h>

#include "glove/base/http_chars.h"

#define BAD "endpoint.http_bad_head"

size_t glove_mcp_http_head_end(const char *buf, size_t len, bool *bare_lf) {
        if (bare_lf)
                *bare_lf = false;
        for (size_t i = 0; i < len; i++) {
                if (buf[i] != '\n')
                        continue;
                if (i == 0 || buf[i - 1] != '\r') {
                        if (bare_lf)
                                *bare_lf = true;
                        return 0;
                }
                if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
                        return i + 1;
        }
        return 0;
}

bool glove_mcp_http_span_eq(struct glove_mcp_http_span sp, const char *text) {
        size_t n = strlen(text);
        return sp.s && sp.n == n && strncasecmp(sp.s, text, n) == 0;
}

static int set_once(struct glove_mcp_http_span *field, const char *v, size_t n) {
        if (field->s)
                return -1;
        field->s = v;
        field->n = n;
        return 0;
}

static int parse_length(const char *v, size_t n, uint64_t *out) {
        if (n == 0 || n > 16)
                return -1;
        uint64_t x = 0;
        for (size_t i = 0; i < n; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return -1;
                x = x * 10 + (uint64_t)(v[i] - '0');
        }
        if (x > (UINT64_C(1) << 53))
                return -1;
        *out = x;
        return 0;
}

static bool name_is(const char *name, size_t n, const char *want) {
        return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

/* One field line (without CRLF). Returns 0, or -1 (bad head). */
static int parse_field(const char *line, size_t n, struct glove_mcp_http_request *req) {
        size_t c = 0;
        while (c < n && line[c] != ':') {
                if (!glove_http_is_tchar((unsigned char)line[c]))
                        return -1;
                c++;
        }
        if (c == 0 || c == n)
                return -1;
        const char *v = line + c + 1;
        size_t vn = n - c - 1;
        for (size_t i = 0; i < vn; i++)
                if (!glove_http_is_value_char((unsigned char)v[i]))
                        return -1;
        while (vn && (*v == ' ' || *v == '\t'))
                v++, vn--;
        while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
                vn--;
        if (name_is(line, c, "host"))
                return set_once(&req->host, v, vn);
        if (name_is(line, c, "origin"))
                return set_once(&req->origin, v, vn);
        if (name_is(line, c, "mcp-session-id"))
                return set_once(&req->session_id, v, vn);
        if (name_is(line, c, "mcp-protocol-version"))
                return set_once(&req->protocol_version, v, vn);
        if (name_is(line, c, "mcp-method"))
                return set_once(&req->mcp_method, v, vn);
        if (name_is(line, c, "mcp-name"))
                return set_once(&req->mcp_name, v, vn);
        if (name_is(line, c, "accept"))
                return set_once(&req->accept, v, vn);
        if (name_is(line, c, "content-type"))
                return set_once(&req->content_type, v, vn);
        if (name_is(line, c, "connection"))
                return set_once(&req->connection, v, vn);
        if (name_is(line, c, "transfer-encoding")) {
                req->has_transfer_encoding = true;
                return 0;
        }
        if (name_is(line, c, "content-length")) {
                if (req->has_content_length)
                        return -1;
                req->has_content_length = true;
                return parse_length(v, vn, &req->content_length);
        }
        return 0;
}

static int parse_request_line(const char *line, size_t n, struct glove_mcp_http_request *req, const char **reason) {
        const char *sp1 = memchr(line, ' ', n);
        if (!sp1 || sp1 == line) {
                *reason = BAD;
                return 400;
        }
        size_t mn = (size_t)(sp1 - line);
        for (size_t i = 0; i < mn; i++)
                if (!glove_http_is_tchar((unsigned char)line[i])) {
                        *reason = BAD;
                        return 400;
                }
        const char *t = sp1 + 1;
        const char *end = line + n;
        const char *sp2 = memchr(t, ' ', (size_t)(end - t));
        if (!sp2 || sp2 == t || sp2 + 1 >= end) {
                *reason = BAD;
                return 400;
        }
        size_t tn = (size_t)(sp2 - t);
        for (size_t i = 0; i < tn; i++)
                if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f) {
                        *reason = BAD;
                        return 400;
                }
        if (t[0] != '/') {
                *reason = BAD;
                return 400;
        }
        if (tn > GLOVE_MCP_HTTP_TARGET_MAX) {
                *reason = "endpoint.http_head_too_large";
                return 431;
        }
        const char *ver = sp2 + 1;
        size_t vn = (size_t)(end - ver);
        if (memchr(ver, ' ', vn)) {
                *reason = BAD;
                return 400;
        }
        if (vn == 8 && memcmp(ver, "HTTP/1.1", 8) == 0)
                req->minor = 1;
        else if (vn == 8 && memcmp(ver, "HTTP/1.0", 8) == 0)
                req->minor = 0;
        else {
                *reason = "endpoint.http_version";
                return 505;
        }
        req->target = (struct glove_mcp_http_span){t, tn};
        if (mn == 3 && memcmp(line, "GET", 3) == 0)
                req->method = GLOVE_MCP_HTTP_GET;
        else if (mn == 4 && memcmp(line, "POST", 4) == 0)
                req->method = GLOVE_MCP_HTTP_POST;
        else if (mn == 6 && memcmp(line, "DELETE", 6) == 0)
                req->method = GLOVE_MCP_HTTP_DELETE;
        else
                req->method = GLOVE_MCP_HTTP_OTHER;
        return 0;
}

int glove_mcp_http_request_parse(const char *head, size_t len, struct glove_mcp_http_request *req, const char **reason) {
        memset(req, 0, sizeof(*req));
        *reason = NULL;
        if (len > GLOVE_MCP_HTTP_HEAD_MAX) {
                *reason = "endpoint.http_head_too_large";
                return 431;
        }
        /* The head ends in exactly one blank line. */
        if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0) {
                *reason = BAD;
                return 400;
        }
        size_t pos = 0, fields = 0;
        bool first = true;
        while (pos < len - 2) {
                const char *nl = memchr(head + pos, '\n', len - pos);
                if (!nl) {
                        *reason = BAD;
                        return 400;
                }
                size_t ln = (size_t)(nl - (head + pos));
                if (ln == 0 || head[pos + ln - 1] != '\r') {
                        *reason = BAD;
                        return 400;
                }
                ln--; /* without CR */
                const char *line = head + pos;
                if (memchr(line, '\r', ln) || memchr(line, '\0', ln)) {
                        *reason = BAD;
                        return 400;
                }
                if (first) {
                        int st = parse_request_line(line, ln, req, reason);
                        if (st)
                                return st;
                        first = false;
                } else {
                        if (ln == 0)
                                break; /* cannot happen before the end: the first blank line ends the head */
                        if (++fields > GLOVE_MCP_HTTP_FIELDS_MAX) {
                                *reason = "endpoint.http_head_too_large";
                                return 431;
                        }
                        if (line[0] == ' ' || line[0] == '\t' || parse_field(line, ln, req) < 0) {
                                *reason = BAD;
                                return 400;
                        }
                }
                pos += ln + 2;
        }
        if (first || pos != len - 2) {
                *reason = BAD;
                return 400;
        }
        if (req->has_transfer_encoding && req->has_content_length) {
                *reason = BAD;
                return 400;
        }
        return 0;
}

/* Lower-case compare of a[0..n) with the NUL-terminated b. */
static bool ieq(const char *a, size_t n, const char *b) {
        return strlen(b) == n && strncasecmp(a, b, n) == 0;
}

bool glove_mcp_http_list_has(struct glove_mcp_http_span sp, const char *token, bool wildcards) {
        if (!sp.s)
                return false;
        const char *slash = strchr(token, '/');
        size_t i = 0;
        while (i < sp.n) {
                size_t j = i;
                while (j < sp.n && sp.s[j] != ',')
                        j++;
                /* element sp.s[i..j): value, then ;params */
                size_t a = i, b = j;
                const char *semi = memchr(sp.s + a, ';', b - a);
                size_t vend = semi ? (size_t)(semi - sp.s) : b;
                while (a < vend && (sp.s[a] == ' ' || sp.s[a] == '\t'))
                        a++;
                size_t e = vend;
                while (e > a && (sp.s[e - 1] == ' ' || sp.s[e - 1] == '\t'))
                        e--;
                bool q0 = false;
                for (const char *p = semi; p && p < sp.s + b; p = memchr(p + 1, ';', (size_t)(sp.s + b - p - 1))) {
                        const char *q = p + 1;
                        while (q < sp.s + b && (*q == ' ' || *q == '\t'))
                                q++;
                        if (sp.s + b - q >= 3 && (q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
                                const char *d = q + 2;
                                bool nonzero = false;
                                for (; d < sp.s + b && *d != ';'; d++)
                                        if (*d >= '1' && *d <= '9')
                                                nonzero = true;
                                q0 = !nonzero;
                        }
                }
                if (!q0 && e > a) {
                        const char *v = sp.s + a;
                        size_t vn = e - a;
                        if (ieq(v, vn, token))
                                return true;
                        if (wildcards && slash) {
                                if (ieq(v, vn, "*/*"))
                                        return true;
                                size_t tl = (size_t)(slash - token);
                                if (vn == tl + 2 && strncasecmp(v, token, tl) == 0 && v[tl] == '/' && v[tl + 1] == '*')
                                        return true;
                        }
                }
                i = j + 1;
        }
        return false;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The proxy's side of HTTP/1.1 (RFC 9112): finding and parsing a CONNECT
 * request head, checking Basic credentials (RFC 7617), formatting answers.
 * Strict: lines end in CRLF, no obs-fold, no control characters, exactly one
 * SP between the parts of the request line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "glove/base/digest.h"
#include "internal.h"

size_t glove_net_head_end(const char *buf, size_t len) {
        for (size_t i = 0; i + 3 < len; i++)
                if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
                        return i + 4;
        return 0;
}

/* RFC 9110 section 5.6.2 tchar. */
static bool is_tchar(unsigned char c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                return true;
        return c && strchr("!#$%&'*+-.^_`|~", c);
}

/* A field value byte (RFC 9110 section 5.5): VCHAR, SP, HTAB, obs-text. */
static bool is_value_char(unsigned char c) {
        return c == '\t' || (c >= 0x20 && c != 0x7f);
}

struct line {
        const char *s;
        size_t n;
};

static bool token_equal(const struct line *l, const char *word) {
        return l->n == strlen(word) && memcmp(l->s, word, l->n) == 0;
}

/* Splits the request line into method, target and version. */
static bool split_request_line(const struct line *l, struct line *method, struct line *target,
                               struct line *version) {
        const char *s = l->s, *end = l->s + l->n;
        const char *p = s;
        while (p < end && is_tchar((unsigned char)*p))
                p++;
        if (p == s || p == end || *p != ' ')
                return false;
        *method = (struct line){ s, (size_t)(p - s) };
        const char *t = ++p;
        while (p < end && (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f)
                p++;
        if (p == t || p == end || *p != ' ')
                return false;
        *target = (struct line){ t, (size_t)(p - t) };
        const char *v = ++p;
        *version = (struct line){ v, (size_t)(end - v) };
        /* HTTP-version = "HTTP/" DIGIT "." DIGIT */
        return version->n == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
               v[7] >= '0' && v[7] <= '9';
}

/* Checks "Basic <token68>" against the expected credentials in constant time
 * (for credentials of the expected length). */
static bool credentials_match(const struct line *value, const char *credentials) {
        const char *s = value->s, *end = value->s + value->n;
        const char *p = s;
        while (p < end && *p != ' ')
                p++;
        if (p - s != 5 || strncasecmp(s, "Basic", 5) != 0)
                return false;
        while (p < end && *p == ' ')
                p++;
        size_t n = (size_t)(end - p), want = strlen(credentials);
        if (n != want)
                return false;
        return glove_digest_equal(p, credentials, want);
}

enum glove_net_egress_reason glove_net_head_parse(const char *buf, size_t len, const char *credentials,
                                                  struct glove_net_connect_head *out, int *status) {
        *status = 400;
        out->target_ok = false;
        if (len < 4 || memcmp(buf + len - 4, "\r\n\r\n", 4) != 0)
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        /* Lines, without the final empty one. */
        const char *p = buf, *end = buf + len - 2;
        struct line request = { 0 };
        struct line auth = { 0 };
        unsigned n_auth = 0, n_headers = 0;
        bool first = true;
        while (p < end) {
                const char *eol = memchr(p, '\r', (size_t)(end - p));
                if (!eol || eol + 1 >= end || eol[1] != '\n')
                        return GLOVE_NET_EGRESS_BAD_REQUEST;
                struct line l = { p, (size_t)(eol - p) };
                p = eol + 2;
                for (size_t i = 0; i < l.n; i++)
                        if (!is_value_char((unsigned char)l.s[i]))
                                return GLOVE_NET_EGRESS_BAD_REQUEST;
                if (first) {
                        request = l;
                        first = false;
                        continue;
                }
                if (++n_headers > GLOVE_NET_HEADERS_MAX) {
                        *status = 431;
                        return GLOVE_NET_EGRESS_HEAD_TOO_LARGE;
                }
                /* field-name ":" OWS field-value OWS; no obs-fold. */
                size_t k = 0;
                while (k < l.n && is_tchar((unsigned char)l.s[k]))
                        k++;
                if (k == 0 || k == l.n || l.s[k] != ':')
                        return GLOVE_NET_EGRESS_BAD_REQUEST;
                struct line name = { l.s, k };
                const char *v = l.s + k + 1, *vend = l.s + l.n;
                while (v < vend && (*v == ' ' || *v == '\t'))
                        v++;
                while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
                        vend--;
                if (name.n == strlen("Proxy-Authorization") &&
                    strncasecmp(name.s, "Proxy-Authorization", name.n) == 0) {
                        n_auth++;
                        auth = (struct line){ v, (size_t)(vend - v) };
                }
        }
        struct line method, target, version;
        if (!request.s || !split_request_line(&request, &method, &target, &version))
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        if (!token_equal(&method, "CONNECT")) {
                *status = 405;
                return GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED;
        }
        if (!token_equal(&version, "HTTP/1.1")) {
                *status = 505;
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        }
        out->target_ok = glove_net_authority_parse(target.s, target.n, &out->host, &out->port, NULL) == 0;
        if (n_auth != 1 || !credentials_match(&auth, credentials)) {
                *status = 407;
                return GLOVE_NET_EGRESS_BAD_AUTH;
        }
        if (!out->target_ok)
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        *status = 200;
        return GLOVE_NET_EGRESS_OK;
}

static const char *status_text(int status) {
        switch (status) {
        case 200: return "Connection established";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 405: return "Method Not Allowed";
        case 407: return "Proxy Authentication Required";
        case 408: return "Request Timeout";
        case 431: return "Request Header Fields Too Large";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        }
        return "Error";
}

size_t glove_net_response_format(int status, enum glove_net_egress_reason reason, char *buf) {
        int n;
        if (status == 200) {
                n = snprintf(buf, GLOVE_NET_RESPONSE_MAX, "HTTP/1.1 200 %s\r\n\r\n", status_text(200));
        } else {
                char body[96];
                int bn = snprintf(body, sizeof(body), "glove egress proxy: %s\n", glove_net_egress_reason_name(reason));
                const char *extra = status == 405   ? "Allow: CONNECT\r\n"
                                    : status == 407 ? "Proxy-Authenticate: Basic realm=\"glove\"\r\n"
                                                    : "";
                n = snprintf(buf, GLOVE_NET_RESPONSE_MAX,
                             "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain; charset=utf-8\r\n"
                             "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                             status, status_text(status), extra, bn, body);
        }
        return n < 0 ? 0 : (size_t)n;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The proxy's side of HTTP/1.1 (RFC 9112): finding and parsing a request
 * head (CONNECT, or an absolute-form http:// request to forward), checking
 * Basic credentials (RFC 7617), rewriting a forwarded head, formatting
 * answers.
 * Strict: lines end in CRLF, no obs-fold, no control characters, exactly one
 * SP between the parts of the request line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "glove/base/http_chars.h"
#include "glove/base/digest.h"
#include "internal.h"

size_t glove_net_head_end(const char *buf, size_t len) {
        for (size_t i = 0; i + 3 < len; i++)
                if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
                        return i + 4;
        return 0;
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
        while (p < end && glove_http_is_tchar((unsigned char)*p))
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

bool glove_net_head_bare_lf(const char *buf, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
                        return true;
        return false;
}

static bool name_is(const struct line *name, const char *word) {
        return name->n == strlen(word) && strncasecmp(name->s, word, name->n) == 0;
}

static bool prefix_nocase(const struct line *l, const char *word) {
        return l->n >= strlen(word) && strncasecmp(l->s, word, strlen(word)) == 0;
}

/* Splits an absolute-form target after its "scheme://" (skip bytes) into
 * authority and path; returns the authority. */
static struct line url_authority(const struct line *target, size_t skip, struct line *path) {
        const char *a = target->s + skip, *end = target->s + target->n, *p = a;
        while (p < end && *p != '/' && *p != '?' && *p != '#')
                p++;
        *path = (struct line){ p, (size_t)(end - p) };
        return (struct line){ a, (size_t)(p - a) };
}

static bool same_host(const struct glove_net_host *a, const struct glove_net_host *b) {
        return a->kind == b->kind && strcmp(a->text, b->text) == 0;
}

/* One header line of a head that glove_net_head_parse accepted: name and
 * trimmed value. Returns false at the end of the head. */
static bool next_header(const char **p, const char *end, struct line *whole, struct line *name,
                        struct line *value) {
        if (*p >= end)
                return false;
        const char *eol = memchr(*p, '\r', (size_t)(end - *p));
        if (!eol)
                return false;
        *whole = (struct line){ *p, (size_t)(eol - *p) };
        *p = eol + 2;
        const char *colon = memchr(whole->s, ':', whole->n);
        if (!colon)
                return false;
        *name = (struct line){ whole->s, (size_t)(colon - whole->s) };
        const char *v = colon + 1, *vend = whole->s + whole->n;
        while (v < vend && (*v == ' ' || *v == '\t'))
                v++;
        while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
                vend--;
        *value = (struct line){ v, (size_t)(vend - v) };
        return true;
}

enum glove_net_egress_reason glove_net_head_parse(const char *buf, size_t len, const char *credentials,
                                                  struct glove_net_request_head *out, int *status) {
        *status = 400;
        memset(out, 0, sizeof(*out));
        if (len < 4 || memcmp(buf + len - 4, "\r\n\r\n", 4) != 0)
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        /* Lines, without the final empty one. */
        const char *p = buf, *end = buf + len - 2;
        struct line request = { 0 };
        struct line auth = { 0 }, host = { 0 };
        unsigned n_auth = 0, n_host = 0, n_headers = 0;
        bool first = true, syntax_ok = true, too_many = false;
        while (p < end && syntax_ok) {
                const char *eol = memchr(p, '\r', (size_t)(end - p));
                if (!eol || eol + 1 >= end || eol[1] != '\n') {
                        syntax_ok = false;
                        break;
                }
                struct line l = { p, (size_t)(eol - p) };
                p = eol + 2;
                for (size_t i = 0; i < l.n; i++)
                        if (!glove_http_is_value_char((unsigned char)l.s[i]))
                                syntax_ok = false;
                if (!syntax_ok)
                        break;
                if (first) {
                        request = l;
                        out->headers_off = (size_t)(p - buf);
                        first = false;
                        continue;
                }
                if (++n_headers > GLOVE_NET_HEADERS_MAX) {
                        too_many = true;
                        break;
                }
                /* field-name ":" OWS field-value OWS; no obs-fold. */
                size_t k = 0;
                while (k < l.n && glove_http_is_tchar((unsigned char)l.s[k]))
                        k++;
                if (k == 0 || k == l.n || l.s[k] != ':') {
                        syntax_ok = false;
                        break;
                }
                struct line name = { l.s, k };
                const char *v = l.s + k + 1, *vend = l.s + l.n;
                while (v < vend && (*v == ' ' || *v == '\t'))
                        v++;
                while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
                        vend--;
                if (name_is(&name, "Proxy-Authorization")) {
                        n_auth++;
                        auth = (struct line){ v, (size_t)(vend - v) };
                } else if (name_is(&name, "Host")) {
                        n_host++;
                        host = (struct line){ v, (size_t)(vend - v) };
                }
        }
        /* The request line first, so that every refusal after it can name
         * the method and the target asked for. */
        struct line method, target, version;
        if (!request.s || !split_request_line(&request, &method, &target, &version) ||
            method.n > GLOVE_NET_METHOD_MAX)
                return too_many ? (*status = 431, GLOVE_NET_EGRESS_HEAD_TOO_LARGE) : GLOVE_NET_EGRESS_BAD_REQUEST;
        memcpy(out->method, method.s, method.n);
        out->method[method.n] = '\0';
        bool connect = token_equal(&method, "CONNECT");
        struct line path = { 0 };
        if (prefix_nocase(&target, "http://")) {
                out->form = GLOVE_NET_TARGET_HTTP;
                struct line a = url_authority(&target, 7, &path);
                out->authority_off = (size_t)(a.s - buf);
                out->authority_len = a.n;
                out->path_off = (size_t)(path.s - buf);
                out->path_len = path.n;
                out->target_ok = glove_net_authority_parse_default(a.s, a.n, 80, &out->host, &out->port, NULL) == 0;
        } else if (prefix_nocase(&target, "https://")) {
                out->form = GLOVE_NET_TARGET_HTTPS;
                struct line a = url_authority(&target, 8, &path);
                out->target_ok = glove_net_authority_parse_default(a.s, a.n, 443, &out->host, &out->port, NULL) == 0;
        } else if (target.n > 0 && target.s[0] != '/' && target.s[0] != '*' && !memchr(target.s, '/', target.n)) {
                out->form = GLOVE_NET_TARGET_AUTHORITY;
                out->target_ok = glove_net_authority_parse(target.s, target.n, &out->host, &out->port, NULL) == 0;
        } else {
                out->form = GLOVE_NET_TARGET_OTHER;
                /* Not a proxy request: the Host header names what was meant. */
                out->target_ok = n_host == 1 &&
                                 glove_net_authority_parse_default(host.s, host.n, 80, &out->host, &out->port, NULL) == 0;
        }
        if (too_many) {
                *status = 431;
                return GLOVE_NET_EGRESS_HEAD_TOO_LARGE;
        }
        if (!syntax_ok)
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        bool forward = !connect && out->form == GLOVE_NET_TARGET_HTTP;
        if (!connect && out->form != GLOVE_NET_TARGET_HTTP && out->form != GLOVE_NET_TARGET_HTTPS) {
                *status = 405;
                return GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED;
        }
        if (!token_equal(&version, "HTTP/1.1")) {
                *status = 505;
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        }
        if (n_auth != 1 || !credentials_match(&auth, credentials)) {
                *status = 407;
                return GLOVE_NET_EGRESS_BAD_AUTH;
        }
        if (connect && out->form != GLOVE_NET_TARGET_AUTHORITY)
                return GLOVE_NET_EGRESS_BAD_REQUEST; /* CONNECT takes host:port only */
        if (!out->target_ok)
                return GLOVE_NET_EGRESS_BAD_REQUEST;
        if (out->form == GLOVE_NET_TARGET_HTTPS)
                return GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT;
        if (forward) {
                /* RFC 9112 section 3.2: at most one Host; a Host naming another
                 * authority than the URL is how a request would smuggle a second
                 * destination past the rule check. */
                if (n_host > 1)
                        return GLOVE_NET_EGRESS_BAD_REQUEST;
                if (n_host == 1) {
                        struct glove_net_host hh;
                        uint16_t hp;
                        if (glove_net_authority_parse_default(host.s, host.n, 80, &hh, &hp, NULL) < 0 ||
                            !same_host(&hh, &out->host) || hp != out->port)
                                return GLOVE_NET_EGRESS_HOST_MISMATCH;
                }
        }
        *status = 200;
        return GLOVE_NET_EGRESS_OK;
}

/* Hop-by-hop fields (RFC 9110 section 7.6.1) and the proxy's own (every
 * Proxy-* field: Proxy-Authorization, Proxy-Connection, ...). */
static bool hop_by_hop(const struct line *name) {
        static const char *const names[] = { "Connection", "Keep-Alive", "TE", "Upgrade", "Trailer", NULL };
        if (prefix_nocase(name, "Proxy-"))
                return true;
        for (size_t i = 0; names[i]; i++)
                if (name_is(name, names[i]))
                        return true;
        return false;
}

/* True when name is one of the comma-separated tokens of the Connection
 * values in buf[from..to). */
static bool named_by_connection(const char *from, const char *to, const struct line *name) {
        struct line whole, n, v;
        const char *p = from;
        while (next_header(&p, to, &whole, &n, &v)) {
                if (!name_is(&n, "Connection"))
                        continue;
                const char *s = v.s, *e = v.s + v.n;
                while (s < e) {
                        while (s < e && (*s == ' ' || *s == '\t' || *s == ','))
                                s++;
                        const char *t = s;
                        while (t < e && *t != ',' && *t != ' ' && *t != '\t')
                                t++;
                        struct line tok = { s, (size_t)(t - s) };
                        if (tok.n && name->n == tok.n && strncasecmp(name->s, tok.s, tok.n) == 0)
                                return true;
                        s = t;
                }
        }
        return false;
}

static bool put(char *out, size_t cap, size_t *n, const char *s, size_t len) {
        if (*n + len > cap)
                return false;
        memcpy(out + *n, s, len);
        *n += len;
        return true;
}

size_t glove_net_forward_head(const char *buf, size_t len, const struct glove_net_request_head *h, char *out,
                              size_t cap) {
        size_t n = 0;
        const char *hdr = buf + h->headers_off, *end = buf + len - 2;
        bool has_host = false;
        if (!put(out, cap, &n, h->method, strlen(h->method)) || !put(out, cap, &n, " ", 1))
                return 0;
        if (h->path_len == 0 || buf[h->path_off] != '/')
                if (!put(out, cap, &n, "/", 1))
                        return 0;
        if (!put(out, cap, &n, buf + h->path_off, h->path_len) || !put(out, cap, &n, " HTTP/1.1\r\n", 11))
                return 0;
        struct line whole, name, value;
        const char *p = hdr;
        while (next_header(&p, end, &whole, &name, &value)) {
                if (hop_by_hop(&name) || named_by_connection(hdr, end, &name))
                        continue;
                has_host = has_host || name_is(&name, "Host");
                if (!put(out, cap, &n, whole.s, whole.n) || !put(out, cap, &n, "\r\n", 2))
                        return 0;
        }
        if (!has_host && (!put(out, cap, &n, "Host: ", 6) ||
                          !put(out, cap, &n, buf + h->authority_off, h->authority_len) || !put(out, cap, &n, "\r\n", 2)))
                return 0;
        if (!put(out, cap, &n, "Connection: close\r\n\r\n", 21))
                return 0;
        return n;
}

size_t glove_net_response_close(const char *buf, size_t len, char *out, size_t cap) {
        if (len < 16 || memcmp(buf, "HTTP/1.", 7) != 0 || glove_net_head_end(buf, len) != len)
                return 0;
        /* "HTTP/1.x NNN": a final answer only (1xx heads pass unchanged). */
        if (buf[8] != ' ' || buf[9] < '2' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' ||
            buf[11] > '9')
                return 0;
        const char *end = buf + len - 2, *eol = memchr(buf, '\r', (size_t)(end - buf));
        if (!eol || eol[1] != '\n' || glove_net_head_bare_lf(buf, len))
                return 0;
        for (size_t i = 0; i + 1 < len; i++)
                if (buf[i] == '\r' && buf[i + 1] != '\n')
                        return 0; /* a bare CR ("\r\r\n") would misplace the line ends */
        size_t n = 0;
        if (!put(out, cap, &n, buf, (size_t)(eol - buf) + 2))
                return 0;
        struct line whole, name, value;
        const char *p = eol + 2;
        while (p < end) {
                if (!next_header(&p, end, &whole, &name, &value))
                        return 0;
                if (name_is(&name, "Connection") || name_is(&name, "Keep-Alive") || prefix_nocase(&name, "Proxy-Connection"))
                        continue;
                if (!put(out, cap, &n, whole.s, whole.n) || !put(out, cap, &n, "\r\n", 2))
                        return 0;
        }
        if (!put(out, cap, &n, "Connection: close\r\n\r\n", 21))
                return 0;
        return n;
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
                char body[160];
                int bn = snprintf(body, sizeof(body), "glove egress proxy: %s%s\n", glove_net_egress_reason_name(reason),
                                  reason == GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT
                                          ? " (send CONNECT host:443 and TLS inside the tunnel for https:// URLs)"
                                          : "");
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

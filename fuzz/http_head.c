/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/net/*.c
/*
 * libFuzzer target: the egress proxy's request-head parser (src/net/http_head.c,
 * declared in src/net/internal.h), which reads the agent's bytes, the target
 * parsers under it (glove_net_authority_parse[_default], rule.h), and the
 * rewriting of a forwarded plain-HTTP head (glove_net_forward_head). Built
 * and run by scripts/fuzz.sh; seeds in fuzz/corpus/http_head/
 * (fuzz/gen_mcp_http_seeds.py).
 *
 * Input: 2 header bytes, then the bytes the agent sends.
 *   h[0]  seeds the sizes of the reads (1..GLOVE_NET_HEAD_MAX bytes)
 *   h[1]  bit 0: the relay's credentials are those of the token "fuzztoken"
 *         (the seeds carry them), else another token's
 * The stream is read into a GLOVE_NET_HEAD_MAX buffer in chunks, as
 * relay_conn.c does, asking glove_net_head_end after each; a complete head
 * is copied to an allocation of exactly its size (so ASan sees any read past
 * it) and parsed. The whole stream, complete head or not, is parsed too.
 *
 * Invariants besides memory safety:
 *   - glove_net_head_end gives the end of the first "\r\n\r\n" in what was
 *     read, or 0, whatever the read sizes;
 *   - glove_net_head_bare_lf is true exactly when what was read holds a '\n'
 *     not preceded by '\r';
 *   - glove_net_head_parse returns only the documented reasons, each with its
 *     documented status (OK 200, BAD_REQUEST 400/505, METHOD_NOT_ALLOWED 405,
 *     BAD_AUTH 407, HEAD_TOO_LARGE 431 only past GLOVE_NET_HEADERS_MAX lines,
 *     HOST_MISMATCH and HTTPS_NEEDS_CONNECT 400); the method it reports is a
 *     NUL-terminated prefix of the head;
 *   - a parsed target (target_ok) is a host of a valid kind whose text is
 *     NUL-terminated within GLOVE_NET_HOST_MAX bytes, parses back to the same
 *     host, and a port 1..65535;
 *   - OK only for "CONNECT ... HTTP/1.1" (form AUTHORITY) or "METHOD http://..."
 *     with another method (form HTTP), carrying the credentials; the same head
 *     with other credentials is then BAD_AUTH with the same target;
 *   - a forwarded head (form HTTP) is one complete head in origin form
 *     ("METHOD /"), ends with "Connection: close", holds no Proxy-* or
 *     Connection field from the agent, one copy of the credentials fewer
 *     than the head, no bare LF,
 *     and fits in len + GLOVE_NET_FORWARD_EXTRA;
 *   - the same bytes as an answer's head (glove_net_response_close) are
 *     refused or rewritten to one complete head whose only Connection field
 *     is the final "Connection: close";
 *   - the answer for every outcome is one complete head within
 *     GLOVE_NET_RESPONSE_MAX, with the status asked for and a Content-Length
 *     that matches its body.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "glove/base/base64.h"
#include "glove/net/relay.h"
#include "glove/net/rule.h"
#include "../src/net/internal.h"

#define CHECK(c) \
        do { \
                if (!(c)) \
                        abort(); \
        } while (0)

static uint32_t rng_next(uint32_t *x) {
        *x ^= *x << 13;
        *x ^= *x >> 17;
        *x ^= *x << 5;
        return *x;
}

static size_t chunk_size(uint32_t *x) {
        uint32_t v = rng_next(x);
        switch (v & 3) {
        case 0: return 1;
        case 1: return 1 + (v >> 2) % 8;
        case 2: return 1 + (v >> 2) % 256;
        default: return 1 + (v >> 2) % GLOVE_NET_HEAD_MAX;
        }
}

static size_t count_crlf(const char *s, size_t n) {
        size_t k = 0;
        for (size_t i = 0; i + 1 < n; i++)
                k += s[i] == '\r' && s[i + 1] == '\n';
        return k;
}

static void check_host(const struct glove_net_host *h, uint16_t port) {
        CHECK(port >= 1);
        CHECK(h->kind == GLOVE_NET_HOST_NAME || h->kind == GLOVE_NET_HOST_IPV4 || h->kind == GLOVE_NET_HOST_IPV6);
        const char *nul = memchr(h->text, '\0', sizeof(h->text));
        CHECK(nul && nul > h->text);
        size_t n = (size_t)(nul - h->text);
        CHECK(n <= GLOVE_NET_HOST_MAX);
        if (h->kind == GLOVE_NET_HOST_NAME)
                CHECK(strspn(h->text, "abcdefghijklmnopqrstuvwxyz0123456789-_.") == n);
        char again[GLOVE_NET_HOST_MAX + 3];
        int an = snprintf(again, sizeof(again), h->kind == GLOVE_NET_HOST_IPV6 ? "[%s]" : "%s", h->text);
        CHECK(an > 0 && (size_t)an < sizeof(again));
        struct glove_net_host b;
        CHECK(glove_net_host_parse(again, (size_t)an, &b, NULL) == 0);
        CHECK(b.kind == h->kind && strcmp(b.text, h->text) == 0);
        if (h->kind != GLOVE_NET_HOST_NAME)
                CHECK(memcmp(b.addr, h->addr, h->kind == GLOVE_NET_HOST_IPV4 ? 4 : 16) == 0);
        /* And as a CONNECT target with its port. */
        char target[GLOVE_NET_HOST_MAX + 10];
        int tn = snprintf(target, sizeof(target), "%s:%u", again, (unsigned)port);
        CHECK(tn > 0 && (size_t)tn < sizeof(target));
        struct glove_net_host c;
        uint16_t cp = 0;
        CHECK(glove_net_authority_parse(target, (size_t)tn, &c, &cp, NULL) == 0);
        CHECK(cp == port && c.kind == h->kind && strcmp(c.text, h->text) == 0);
}

static void check_answer(int status, enum glove_net_egress_reason reason) {
        char buf[GLOVE_NET_RESPONSE_MAX];
        size_t n = glove_net_response_format(status, reason, buf);
        CHECK(n > 0 && n < sizeof(buf));
        char prefix[32];
        int pn = snprintf(prefix, sizeof(prefix), "HTTP/1.1 %d ", status);
        CHECK(n > (size_t)pn && memcmp(buf, prefix, (size_t)pn) == 0);
        size_t end = glove_net_head_end(buf, n);
        CHECK(end > 0);
        if (status == 200) {
                CHECK(end == n);
                return;
        }
        const char *cl = strstr(buf, "\r\nContent-Length: ");
        CHECK(cl && (size_t)(cl - buf) < end);
        CHECK(strtoul(cl + strlen("\r\nContent-Length: "), NULL, 10) == n - end);
}

static bool has_bare_lf(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
                        return true;
        return false;
}

static size_t occurrences(const char *s, size_t n, const char *needle) {
        size_t k = 0, nl = strlen(needle);
        for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), needle, nl)); p++)
                k++;
        return k;
}

/* The forwarded head of an accepted plain-HTTP request. */
static void check_forward(const char *head, size_t len, const struct glove_net_request_head *h,
                          const char *credentials) {
        size_t cap = len + GLOVE_NET_FORWARD_EXTRA;
        char *out = malloc(cap);
        CHECK(out);
        size_t n = glove_net_forward_head(head, len, h, out, cap);
        CHECK(n > 0 && n <= cap);
        CHECK(glove_net_head_end(out, n) == n && !has_bare_lf(out, n));
        size_t ml = strlen(h->method);
        CHECK(n > ml + 2 && memcmp(out, h->method, ml) == 0 && out[ml] == ' ' && out[ml + 1] == '/');
        CHECK(n >= 21 && memcmp(out + n - 21, "Connection: close\r\n\r\n", 21) == 0);
        /* The Proxy-Authorization's credentials are gone (the agent may still
         * have sent the same text in another field of its own). */
        CHECK(occurrences(out, n, credentials) + 1 <= occurrences(head, len, credentials));
        /* Field names at line starts: none of the proxy's or hop-by-hop ones
         * from the agent (the one Connection line is the proxy's, last). */
        size_t connections = 0;
        for (size_t i = 0; i + 2 < n; i++) {
                if (out[i] != '\n')
                        continue;
                const char *l = out + i + 1;
                size_t left = n - i - 1;
                CHECK(!(left >= 6 && strncasecmp(l, "Proxy-", 6) == 0));
                CHECK(!(left >= 11 && strncasecmp(l, "Keep-Alive:", 11) == 0));
                CHECK(!(left >= 8 && strncasecmp(l, "Upgrade:", 8) == 0));
                connections += left >= 11 && strncasecmp(l, "Connection:", 11) == 0;
        }
        CHECK(connections == 1);
        /* Too small a buffer is refused, never overrun. */
        CHECK(glove_net_forward_head(head, len, h, out, n - 1) == 0);
        free(out);
}

/* glove_net_response_close: 0, or one complete head that keeps the status
 * line and ends with the only Connection field, "Connection: close". */
static void check_response_close(const char *head, size_t len) {
        char *in = malloc(len), *out = malloc(len + 32);
        CHECK(in && out);
        memcpy(in, head, len);
        size_t n = glove_net_response_close(in, len, out, len + 32);
        if (n) {
                const char *eol = memchr(in, '\r', len);
                CHECK(eol && n >= (size_t)(eol - in) + 2 && memcmp(out, in, (size_t)(eol - in) + 2) == 0);
                CHECK(memcmp(in, "HTTP/1.", 7) == 0 && glove_net_head_end(out, n) == n && !has_bare_lf(out, n));
                CHECK(n >= 21 && memcmp(out + n - 21, "Connection: close\r\n\r\n", 21) == 0);
                size_t k = 0;
                for (size_t i = 0; i + 12 < n; i++)
                        k += out[i] == '\n' && strncasecmp(out + i + 1, "Connection:", 11) == 0;
                CHECK(k == 1);
                CHECK(glove_net_response_close(in, len, out, n - 1) == 0);
        }
        free(in);
        free(out);
}

/* Parses head[0..len) from an allocation of exactly len bytes and checks
 * the result. Returns the reason. */
static enum glove_net_egress_reason parse(const char *head, size_t len, const char *credentials,
                                          struct glove_net_request_head *out, int *status) {
        char *copy = malloc(len ? len : 1);
        CHECK(copy);
        if (len)
                memcpy(copy, head, len);
        memset(out, 0xa5, sizeof(*out));
        *status = -1;
        enum glove_net_egress_reason r = glove_net_head_parse(copy, len, credentials, out, status);
        switch (r) {
        case GLOVE_NET_EGRESS_OK: CHECK(*status == 200 && out->target_ok); break;
        case GLOVE_NET_EGRESS_BAD_REQUEST: CHECK(*status == 400 || *status == 505); break;
        case GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED: CHECK(*status == 405); break;
        case GLOVE_NET_EGRESS_BAD_AUTH: CHECK(*status == 407); break;
        case GLOVE_NET_EGRESS_HEAD_TOO_LARGE:
                CHECK(*status == 431 && count_crlf(copy, len) >= GLOVE_NET_HEADERS_MAX + 3);
                break;
        case GLOVE_NET_EGRESS_HOST_MISMATCH: CHECK(*status == 400 && out->form == GLOVE_NET_TARGET_HTTP); break;
        case GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT: CHECK(*status == 400 && out->form == GLOVE_NET_TARGET_HTTPS); break;
        default: abort();
        }
        const char *mnul = memchr(out->method, '\0', sizeof(out->method));
        CHECK(mnul);
        size_t ml = (size_t)(mnul - out->method);
        CHECK(ml <= len && memcmp(out->method, copy, ml) == 0);
        CHECK(out->target_ok == true || out->target_ok == false);
        if (out->target_ok)
                check_host(&out->host, out->port);
        if (r == GLOVE_NET_EGRESS_OK) {
                const char *eol = memchr(copy, '\r', len);
                CHECK(eol && len >= 4 && memcmp(copy + len - 4, "\r\n\r\n", 4) == 0);
                CHECK(eol - copy >= 17 && memcmp(eol - 9, " HTTP/1.1", 9) == 0);
                CHECK(memmem(copy, len, credentials, strlen(credentials)));
                if (strncmp(copy, "CONNECT ", 8) == 0) {
                        CHECK(out->form == GLOVE_NET_TARGET_AUTHORITY);
                } else {
                        CHECK(out->form == GLOVE_NET_TARGET_HTTP && strcmp(out->method, "CONNECT") != 0);
                        check_forward(copy, len, out, credentials);
                }
        }
        check_answer(*status, r);
        free(copy);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char good[GLOVE_NET_CREDENTIALS_MAX], other[GLOVE_NET_CREDENTIALS_MAX];
        if (!good[0]) {
                CHECK(glove_base64_encode_cstr("glove:fuzztoken", 15, good, sizeof(good)) > 0);
                CHECK(glove_base64_encode_cstr("glove:fuzztokeN", 15, other, sizeof(other)) > 0);
        }
        if (size < 2)
                return 0;
        uint32_t x = 0x85ebca6bu ^ ((uint32_t)data[0] << 16) ^ (uint32_t)size;
        const char *credentials = (data[1] & 1) ? good : other;
        const char *alt = (data[1] & 1) ? other : good;
        const char *s = (const char *)data + 2;
        size_t n = size - 2;

        /* The head as the relay reads it. */
        static char head[GLOVE_NET_HEAD_MAX];
        size_t got = 0, hl = 0;
        while (got < n && got < sizeof(head)) {
                size_t c = chunk_size(&x);
                if (c > n - got)
                        c = n - got;
                if (c > sizeof(head) - got)
                        c = sizeof(head) - got;
                memcpy(head + got, s + got, c);
                got += c;
                hl = glove_net_head_end(head, got);
                if (hl)
                        break;
        }
        /* The reference: the first "\r\n\r\n" within what could be read. */
        size_t window = n < sizeof(head) ? n : sizeof(head);
        const char *first = memmem(s, window, "\r\n\r\n", 4);
        CHECK(glove_net_head_bare_lf(head, got) == has_bare_lf(head, got));
        if (hl) {
                CHECK(first && hl == (size_t)(first - s) + 4 && hl <= got);
                CHECK(glove_net_head_end(head, hl - 1) == 0);
        } else {
                CHECK(!first || (size_t)(first - s) + 4 > got);
                CHECK(got == window);
        }

        if (hl) {
                struct glove_net_request_head h1, h2;
                int st1, st2;
                enum glove_net_egress_reason r1 = parse(head, hl, credentials, &h1, &st1);
                enum glove_net_egress_reason r2 = parse(head, hl, alt, &h2, &st2);
                CHECK(r2 == r1 || r1 == GLOVE_NET_EGRESS_BAD_AUTH || r2 == GLOVE_NET_EGRESS_BAD_AUTH);
                if (r1 == GLOVE_NET_EGRESS_OK) {
                        CHECK(r2 == GLOVE_NET_EGRESS_BAD_AUTH && st2 == 407 && h2.target_ok);
                        CHECK(h2.port == h1.port && h2.host.kind == h1.host.kind &&
                              strcmp(h2.host.text, h1.host.text) == 0);
                }
                /* The same bytes as the head of a forwarded request's answer. */
                check_response_close(head, hl);
                /* Deterministic. */
                struct glove_net_request_head h3;
                int st3;
                CHECK(parse(head, hl, credentials, &h3, &st3) == r1 && st3 == st1 && h3.target_ok == h1.target_ok);
        }
        /* Anything at all, terminated or not. */
        struct glove_net_request_head hr;
        int sr;
        enum glove_net_egress_reason rr = parse(s, n, credentials, &hr, &sr);
        if (n < 4 || memcmp(s + n - 4, "\r\n\r\n", 4) != 0)
                CHECK(rr == GLOVE_NET_EGRESS_BAD_REQUEST && sr == 400 && !hr.target_ok);
        return 0;
}

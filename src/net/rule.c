/* SPDX-License-Identifier: Apache-2.0 */
/* Egress allow rules and the policy (include/glove/net/rule.h). */
#include "glove/net/rule.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '_';
}

static char lower(char c) {
        return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* True when the label s[0..n) is numeric in a form some resolver would read
 * as part of an IPv4 address: all decimal digits, or 0x followed by hex. */
static bool label_is_numeric(const char *s, size_t n) {
        if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                for (size_t i = 2; i < n; i++)
                        if (!is_digit(s[i]) && !((lower(s[i]) >= 'a') && lower(s[i]) <= 'f'))
                                return false;
                return true;
        }
        for (size_t i = 0; i < n; i++)
                if (!is_digit(s[i]))
                        return false;
        return true;
}

static int parse_ipv6(const char *text, size_t len, struct glove_net_host *out,
                      struct glove_error *err) {
        /* text is "[...]" */
        size_t inner = len - 2;
        char buf[INET6_ADDRSTRLEN];
        if (inner == 0 || inner >= sizeof(buf))
                return glove_error_set(err, EINVAL, "egress.bad_ipv6", "'%.*s' is not an IPv6 address",
                                       (int)len, text);
        memcpy(buf, text + 1, inner);
        buf[inner] = '\0';
        if (strchr(buf, '%'))
                return glove_error_set(err, EINVAL, "egress.bad_ipv6",
                                       "'%.*s': IPv6 zone identifiers are not supported", (int)len, text);
        struct in6_addr a;
        if (inet_pton(AF_INET6, buf, &a) != 1)
                return glove_error_set(err, EINVAL, "egress.bad_ipv6", "'%.*s' is not an IPv6 address",
                                       (int)len, text);
        memset(out, 0, sizeof(*out));
        out->kind = GLOVE_NET_HOST_IPV6;
        memcpy(out->addr, &a, 16);
        if (!inet_ntop(AF_INET6, &a, out->text, sizeof(out->text)))
                return glove_error_set(err, EINVAL, "egress.bad_ipv6", "'%.*s' is not an IPv6 address",
                                       (int)len, text);
        return 0;
}

static int parse_name(const char *text, size_t len, struct glove_net_host *out,
                      struct glove_error *err) {
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)text[i] >= 0x80)
                        return glove_error_set(err, EINVAL, "egress.non_ascii",
                                               "host '%.*s' is not ASCII (internationalized names are "
                                               "not supported: use the xn-- form)", (int)len, text);
        if (len > GLOVE_NET_HOST_MAX)
                return glove_error_set(err, EINVAL, "egress.bad_host", "host '%.40s...' is longer than %d bytes",
                                       text, GLOVE_NET_HOST_MAX);
        size_t colons = 0;
        for (size_t i = 0; i < len; i++)
                colons += text[i] == ':';
        if (colons > 1)
                return glove_error_set(err, EINVAL, "egress.ipv6_needs_brackets",
                                       "host '%.*s': write IPv6 addresses in brackets, e.g. [::1]:443",
                                       (int)len, text);
        size_t start = 0, last_start = 0;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && text[i] != '.') {
                        if (!is_name_char(text[i]))
                                return glove_error_set(err, EINVAL, "egress.bad_host",
                                                       "host '%.*s' has the character '%c' (names are letters, "
                                                       "digits, '-', '_' and dots)", (int)len, text, text[i]);
                        continue;
                }
                size_t n = i - start;
                if (n == 0)
                        return glove_error_set(err, EINVAL, "egress.bad_host",
                                               "host '%.*s' has an empty label (a leading, trailing or "
                                               "doubled dot)", (int)len, text);
                if (n > GLOVE_NET_LABEL_MAX)
                        return glove_error_set(err, EINVAL, "egress.bad_host",
                                               "host '%.*s' has a label longer than %d bytes", (int)len, text,
                                               GLOVE_NET_LABEL_MAX);
                if (text[start] == '-' || text[i - 1] == '-')
                        return glove_error_set(err, EINVAL, "egress.bad_host",
                                               "host '%.*s' has a label starting or ending with '-'", (int)len,
                                               text);
                last_start = start;
                start = i + 1;
        }
        memset(out, 0, sizeof(*out));
        for (size_t i = 0; i < len; i++)
                out->text[i] = lower(text[i]);
        out->text[len] = '\0';
        if (!label_is_numeric(text + last_start, len - last_start)) {
                out->kind = GLOVE_NET_HOST_NAME;
                return 0;
        }
        struct in_addr a;
        if (inet_pton(AF_INET, out->text, &a) != 1)
                return glove_error_set(err, EINVAL, "egress.bad_host",
                                       "host '%.*s' is neither a name nor a dotted-quad IPv4 address", (int)len,
                                       text);
        out->kind = GLOVE_NET_HOST_IPV4;
        memcpy(out->addr, &a, 4);
        return 0;
}

int glove_net_host_parse(const char *text, size_t len, struct glove_net_host *out,
                         struct glove_error *err) {
        if (!text || len == 0)
                return glove_error_set(err, EINVAL, "egress.empty", "empty host");
        if (text[0] == '[') {
                if (text[len - 1] != ']' || len < 2)
                        return glove_error_set(err, EINVAL, "egress.bad_ipv6",
                                               "'%.*s' has no closing bracket", (int)len, text);
                return parse_ipv6(text, len, out, err);
        }
        if (text[len - 1] == ']')
                return glove_error_set(err, EINVAL, "egress.bad_ipv6", "'%.*s' has no opening bracket",
                                       (int)len, text);
        if (len >= 1 && text[0] == '*')
                return glove_error_set(err, EINVAL, "egress.bad_host",
                                       "host '%.*s': wildcards are not supported; a leading '.' "
                                       "allows every subdomain", (int)len, text);
        return parse_name(text, len, out, err);
}

/* Parses the decimal port s[0..n). */
static int parse_port(const char *s, size_t n, const char *whole, uint16_t *out,
                      struct glove_error *err) {
        if (n == 0 || n > 5 || s[0] == '0')
                goto bad;
        unsigned v = 0;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit(s[i]))
                        goto bad;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        if (v < 1 || v > 65535)
                goto bad;
        *out = (uint16_t)v;
        return 0;
bad:
        return glove_error_set(err, EINVAL, "egress.bad_port", "'%s': the port must be 1..65535", whole);
}

/* Splits text[0..len) into host and optional port. port_len is SIZE_MAX when
 * there is no ":PORT". */
static void split_host_port(const char *text, size_t len, size_t *host_len, const char **port,
                            size_t *port_len) {
        *port = NULL;
        *port_len = SIZE_MAX;
        *host_len = len;
        const char *colon = NULL;
        if (text[0] == '[') {
                const char *close = memchr(text, ']', len);
                if (close && (size_t)(close - text) + 1 < len && close[1] == ':')
                        colon = close + 1;
        } else {
                /* A second colon means an unbracketed IPv6 address: leave it in
                 * the host, where parse_name names the mistake. */
                const char *first = memchr(text, ':', len);
                if (first && !memchr(first + 1, ':', len - (size_t)(first - text) - 1))
                        colon = first;
        }
        if (colon) {
                *host_len = (size_t)(colon - text);
                *port = colon + 1;
                *port_len = len - *host_len - 1;
        }
}

int glove_net_rule_parse(const char *text, struct glove_net_rule *out, struct glove_error *err) {
        if (!text || !*text)
                return glove_error_set(err, EINVAL, "egress.empty", "empty rule");
        size_t len = strnlen(text, GLOVE_NET_RULE_TEXT_MAX + 1);
        if (len > GLOVE_NET_RULE_TEXT_MAX)
                return glove_error_set(err, EINVAL, "egress.bad_host", "rule '%.40s...' is longer than %d bytes",
                                       text, GLOVE_NET_RULE_TEXT_MAX);
        if (strstr(text, "://"))
                return glove_error_set(err, EINVAL, "egress.bad_host",
                                       "rule '%s' is a URL: write HOST[:PORT], e.g. example.com:443", text);
        bool subdomains = text[0] == '.';
        const char *h = text + subdomains;
        size_t hlen = len - subdomains;
        if (hlen == 0)
                return glove_error_set(err, EINVAL, "egress.empty", "rule '%s' names no host", text);
        size_t host_len, port_len;
        const char *port_text;
        split_host_port(h, hlen, &host_len, &port_text, &port_len);
        struct glove_net_rule r = { .subdomains = subdomains, .port = GLOVE_NET_DEFAULT_PORT };
        if (host_len == 0)
                return glove_error_set(err, EINVAL, "egress.empty", "rule '%s' names no host", text);
        int ret = glove_net_host_parse(h, host_len, &r.host, err);
        if (ret < 0)
                return ret;
        if (subdomains && r.host.kind != GLOVE_NET_HOST_NAME)
                return glove_error_set(err, EINVAL, "egress.suffix_on_address",
                                       "rule '%s': a leading '.' applies to names, not addresses", text);
        if (port_len != SIZE_MAX && (ret = parse_port(port_text, port_len, text, &r.port, err)) < 0)
                return ret;
        *out = r;
        return 0;
}

int glove_net_authority_parse(const char *text, size_t len, struct glove_net_host *host,
                              uint16_t *port, struct glove_error *err) {
        return glove_net_authority_parse_default(text, len, 0, host, port, err);
}

int glove_net_authority_parse_default(const char *text, size_t len, uint16_t default_port,
                                      struct glove_net_host *host, uint16_t *port, struct glove_error *err) {
        if (!text || len == 0)
                return glove_error_set(err, EINVAL, "egress.empty", "empty CONNECT target");
        if (len > GLOVE_NET_RULE_TEXT_MAX)
                return glove_error_set(err, EINVAL, "egress.bad_host", "CONNECT target longer than %d bytes",
                                       GLOVE_NET_RULE_TEXT_MAX);
        char whole[GLOVE_NET_RULE_TEXT_MAX + 1];
        memcpy(whole, text, len);
        whole[len] = '\0';
        size_t host_len, port_len;
        const char *port_text;
        split_host_port(whole, len, &host_len, &port_text, &port_len);
        if (port_len == SIZE_MAX) {
                /* Say "missing port" only when the host itself is fine. */
                struct glove_net_host tmp;
                int r = glove_net_host_parse(whole, len, &tmp, err);
                if (r < 0)
                        return r;
                if (default_port == 0)
                        return glove_error_set(err, EINVAL, "egress.missing_port",
                                               "CONNECT target '%s' has no port", whole);
                *host = tmp;
                *port = default_port;
                return 0;
        }
        struct glove_net_host h;
        uint16_t p;
        int r = glove_net_host_parse(whole, host_len, &h, err);
        if (r < 0)
                return r;
        if ((r = parse_port(port_text, port_len, whole, &p, err)) < 0)
                return r;
        *host = h;
        *port = p;
        return 0;
}

/* The IPv4 address of an IPv4 host or IPv4-mapped IPv6 host, for comparing
 * literals; false for anything else. */
static bool as_ipv4(const struct glove_net_host *h, uint8_t out[4]) {
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (h->kind == GLOVE_NET_HOST_IPV4) {
                memcpy(out, h->addr, 4);
                return true;
        }
        if (h->kind == GLOVE_NET_HOST_IPV6 && memcmp(h->addr, mapped, 12) == 0) {
                memcpy(out, h->addr + 12, 4);
                return true;
        }
        return false;
}

bool glove_net_rule_matches(const struct glove_net_rule *rule, const struct glove_net_host *host,
                            uint16_t port) {
        if (!rule || !host || rule->port != port)
                return false;
        const struct glove_net_host *rh = &rule->host;
        if (rh->kind == GLOVE_NET_HOST_NAME) {
                if (host->kind != GLOVE_NET_HOST_NAME)
                        return false;
                if (!rule->subdomains)
                        return strcmp(rh->text, host->text) == 0;
                size_t rl = strlen(rh->text), hl = strlen(host->text);
                return hl > rl + 1 && host->text[hl - rl - 1] == '.' && strcmp(host->text + hl - rl, rh->text) == 0;
        }
        uint8_t a[4], b[4];
        bool a4 = as_ipv4(rh, a), b4 = as_ipv4(host, b);
        if (a4 || b4)
                return a4 && b4 && memcmp(a, b, 4) == 0;
        return rh->kind == GLOVE_NET_HOST_IPV6 && host->kind == GLOVE_NET_HOST_IPV6 &&
               memcmp(rh->addr, host->addr, 16) == 0;
}

void glove_net_policy_init(struct glove_net_policy *p) {
        p->rules = NULL;
        p->n_rules = 0;
}

static bool rule_equal(const struct glove_net_rule *a, const struct glove_net_rule *b) {
        return a->port == b->port && a->subdomains == b->subdomains && a->host.kind == b->host.kind &&
               strcmp(a->host.text, b->host.text) == 0;
}

int glove_net_policy_add(struct glove_net_policy *p, const char *text, struct glove_error *err) {
        struct glove_net_rule r;
        int ret = glove_net_rule_parse(text, &r, err);
        if (ret < 0)
                return ret;
        /* The operator named the address: it may be private. */
        return glove_net_policy_add_rule(p, text, r.host.kind != GLOVE_NET_HOST_NAME, err);
}

int glove_net_policy_add_rule(struct glove_net_policy *p, const char *text, bool allow_private,
                              struct glove_error *err) {
        struct glove_net_rule r;
        int ret = glove_net_rule_parse(text, &r, err);
        if (ret < 0)
                return ret;
        r.allow_private = allow_private;
        for (size_t i = 0; i < p->n_rules; i++)
                if (rule_equal(&p->rules[i], &r)) {
                        p->rules[i].allow_private = p->rules[i].allow_private || allow_private;
                        return 0;
                }
        if (p->n_rules >= GLOVE_NET_RULES_MAX)
                return glove_error_set(err, E2BIG, "egress.too_many_rules",
                                       "more than %d rules", GLOVE_NET_RULES_MAX);
        struct glove_net_rule *n = realloc(p->rules, (p->n_rules + 1) * sizeof(*n));
        if (!n)
                return glove_error_set(err, ENOMEM, "egress.no_memory", "out of memory");
        p->rules = n;
        p->rules[p->n_rules++] = r;
        return 0;
}

int glove_net_policy_copy(struct glove_net_policy *dst, const struct glove_net_policy *src,
                          struct glove_error *err) {
        glove_net_policy_init(dst);
        if (src->n_rules == 0)
                return 0;
        dst->rules = calloc(src->n_rules, sizeof(*dst->rules));
        if (!dst->rules)
                return glove_error_set(err, ENOMEM, "egress.no_memory", "out of memory");
        memcpy(dst->rules, src->rules, src->n_rules * sizeof(*dst->rules));
        dst->n_rules = src->n_rules;
        return 0;
}

bool glove_net_policy_allows(const struct glove_net_policy *p, const struct glove_net_host *host,
                             uint16_t port) {
        for (size_t i = 0; p && i < p->n_rules; i++)
                if (glove_net_rule_matches(&p->rules[i], host, port))
                        return true;
        return false;
}

bool glove_net_policy_allows_private(const struct glove_net_policy *p, const struct glove_net_host *host,
                                     uint16_t port) {
        for (size_t i = 0; p && i < p->n_rules; i++)
                if (p->rules[i].allow_private && glove_net_rule_matches(&p->rules[i], host, port))
                        return true;
        return false;
}

void glove_net_policy_free(struct glove_net_policy *p) {
        if (!p)
                return;
        free(p->rules);
        p->rules = NULL;
        p->n_rules = 0;
}

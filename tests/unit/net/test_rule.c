/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/net/rule.h: --egress-allow parsing, CONNECT
 * authorities, matching and the policy. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "glove/net/rule.h"

struct parse_row {
        const char *text;
        const char *code; /* NULL: accepted */
        const char *host; /* text form when accepted */
        enum glove_net_host_kind kind;
        bool subdomains;
        uint16_t port;
};

#define OK(t, h, k, s, p) { t, NULL, h, GLOVE_NET_HOST_##k, s, p }
#define BAD(t, c) { t, c, NULL, 0, false, 0 }

static const struct parse_row rules[] = {
        OK("example.com", "example.com", NAME, false, 443),
        OK("Example.COM", "example.com", NAME, false, 443),
        OK("example.com:8443", "example.com", NAME, false, 8443),
        OK("example.com:1", "example.com", NAME, false, 1),
        OK("example.com:65535", "example.com", NAME, false, 65535),
        OK(".example.com", "example.com", NAME, true, 443),
        OK(".Example.com:80", "example.com", NAME, true, 80),
        OK("localhost", "localhost", NAME, false, 443),
        OK("a_b.example-1.com", "a_b.example-1.com", NAME, false, 443),
        OK("xn--bcher-kva.example", "xn--bcher-kva.example", NAME, false, 443),
        OK("1password.com", "1password.com", NAME, false, 443),
        OK("127.0.0.1", "127.0.0.1", IPV4, false, 443),
        OK("127.0.0.1:8080", "127.0.0.1", IPV4, false, 8080),
        OK("192.0.2.7:80", "192.0.2.7", IPV4, false, 80),
        OK("[::1]", "::1", IPV6, false, 443),
        OK("[::1]:8443", "::1", IPV6, false, 8443),
        OK("[2001:DB8:0:0::1]:443", "2001:db8::1", IPV6, false, 443),
        OK("[::ffff:127.0.0.1]:80", "::ffff:127.0.0.1", IPV6, false, 80),
        BAD("", "egress.empty"),
        BAD(".", "egress.empty"),
        BAD(":443", "egress.empty"),
        BAD(".:443", "egress.empty"),
        BAD("bücher.example", "egress.non_ascii"),
        BAD("b\xc3\xbc" "cher.example:443", "egress.non_ascii"),
        BAD("example.com.", "egress.bad_host"),
        BAD("..example.com", "egress.bad_host"),
        BAD("a..b", "egress.bad_host"),
        BAD("*.example.com", "egress.bad_host"),
        BAD("exa mple.com", "egress.bad_host"),
        BAD("example.com/path", "egress.bad_host"),
        BAD("user@example.com", "egress.bad_host"),
        BAD("-example.com", "egress.bad_host"),
        BAD("example-.com", "egress.bad_host"),
        BAD("http://example.com", "egress.bad_host"),
        BAD("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "egress.bad_host"), /* 64 */
        OK("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", NAME, false, 443), /* 63 */
        BAD("127.1", "egress.bad_host"),
        BAD("2130706433", "egress.bad_host"),
        BAD("0x7f.0.0.1", "egress.bad_host"),
        BAD("0x7f000001", "egress.bad_host"),
        BAD("127.0.0.01", "egress.bad_host"),
        BAD("256.0.0.1", "egress.bad_host"),
        BAD("1.2.3.4.5", "egress.bad_host"),
        BAD("example.123", "egress.bad_host"),
        BAD("::1", "egress.ipv6_needs_brackets"),
        BAD("2001:db8::1:443", "egress.ipv6_needs_brackets"),
        BAD("[::1", "egress.bad_ipv6"),
        BAD("::1]", "egress.bad_ipv6"),
        BAD("[]", "egress.bad_ipv6"),
        BAD("[example.com]", "egress.bad_ipv6"),
        BAD("[127.0.0.1]", "egress.bad_ipv6"),
        BAD("[fe80::1%eth0]:443", "egress.bad_ipv6"),
        BAD("[::1]x", "egress.bad_ipv6"),
        BAD("example.com:", "egress.bad_port"),
        BAD("example.com:0", "egress.bad_port"),
        BAD("example.com:65536", "egress.bad_port"),
        BAD("example.com:0443", "egress.bad_port"),
        BAD("example.com:+443", "egress.bad_port"),
        BAD("example.com:443a", "egress.bad_port"),
        BAD("example.com:123456", "egress.bad_port"),
        BAD("example.com: 443", "egress.bad_port"),
        BAD("[::1]:", "egress.bad_port"),
        BAD(".127.0.0.1", "egress.suffix_on_address"),
        BAD(".[::1]:443", "egress.suffix_on_address"),
};

static void test_rule_parse_table(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
                const struct parse_row *row = &rules[i];
                struct glove_net_rule r;
                struct glove_error err = { 0 };
                int ret = glove_net_rule_parse(row->text, &r, &err);
                if (!row->code) {
                        if (ret != 0)
                                fail_msg("'%s': refused with %s: %s", row->text, err.code, err.message);
                        assert_string_equal(r.host.text, row->host);
                        assert_int_equal(r.host.kind, row->kind);
                        assert_int_equal(r.subdomains, row->subdomains);
                        assert_int_equal(r.port, row->port);
                } else {
                        if (ret != -EINVAL)
                                fail_msg("'%s': want %s, got %d", row->text, row->code, ret);
                        if (strcmp(err.code, row->code) != 0)
                                fail_msg("'%s': want %s, got %s (%s)", row->text, row->code, err.code, err.message);
                        assert_true(err.message[0] != '\0');
                }
        }
}

static void test_rule_length_bounds(void **state) {
        (void)state;
        /* 253 bytes of name: four labels of 63 and a final one of 1. */
        char name[GLOVE_NET_HOST_MAX + 16];
        memset(name, 'a', sizeof(name));
        name[63] = name[127] = name[191] = name[255 - 4] = '.';
        name[GLOVE_NET_HOST_MAX] = '\0';
        struct glove_net_rule r;
        struct glove_error err = { 0 };
        assert_int_equal(glove_net_rule_parse(name, &r, &err), 0);
        assert_int_equal(strlen(r.host.text), GLOVE_NET_HOST_MAX);
        char longer[GLOVE_NET_HOST_MAX + 2];
        memcpy(longer, name, GLOVE_NET_HOST_MAX);
        longer[GLOVE_NET_HOST_MAX] = 'a';
        longer[GLOVE_NET_HOST_MAX + 1] = '\0';
        glove_error_clear(&err);
        assert_int_equal(glove_net_rule_parse(longer, &r, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_host");
        /* Huge input is refused without reading it all. */
        static char huge[100000];
        memset(huge, 'a', sizeof(huge) - 1);
        glove_error_clear(&err);
        assert_int_equal(glove_net_rule_parse(huge, &r, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_host");
        glove_error_clear(&err);
        assert_int_equal(glove_net_rule_parse(NULL, &r, &err), -EINVAL);
        assert_string_equal(err.code, "egress.empty");
}

struct authority_row {
        const char *text;
        const char *code;
        const char *host;
        uint16_t port;
};

static const struct authority_row authorities[] = {
        { "example.com:443", NULL, "example.com", 443 },
        { "EXAMPLE.com:8443", NULL, "example.com", 8443 },
        { "[::1]:8443", NULL, "::1", 8443 },
        { "127.0.0.1:1", NULL, "127.0.0.1", 1 },
        { "example.com", "egress.missing_port", NULL, 0 },
        { "[::1]", "egress.missing_port", NULL, 0 },
        { "example.com:", "egress.bad_port", NULL, 0 },
        { "::1:443", "egress.ipv6_needs_brackets", NULL, 0 },
        { ".example.com:443", "egress.bad_host", NULL, 0 },
        { "example.com.:443", "egress.bad_host", NULL, 0 },
        { "2130706433:443", "egress.bad_host", NULL, 0 },
        { "b\xc3\xbc" "cher.de:443", "egress.non_ascii", NULL, 0 },
        { "", "egress.empty", NULL, 0 },
        { ":443", "egress.empty", NULL, 0 },
};

static void test_authority_table(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(authorities) / sizeof(authorities[0]); i++) {
                const struct authority_row *row = &authorities[i];
                struct glove_net_host h;
                uint16_t port = 0;
                struct glove_error err = { 0 };
                int ret = glove_net_authority_parse(row->text, strlen(row->text), &h, &port, &err);
                if (!row->code) {
                        if (ret != 0)
                                fail_msg("'%s': refused with %s", row->text, err.code);
                        assert_string_equal(h.text, row->host);
                        assert_int_equal(port, row->port);
                } else if (ret != -EINVAL || strcmp(err.code, row->code) != 0) {
                        fail_msg("'%s': want %s, got %d %s", row->text, row->code, ret, err.code ? err.code : "-");
                }
        }
}

struct match_row {
        const char *rule;
        const char *target;
        bool match;
};

static const struct match_row matches[] = {
        { "example.com", "example.com:443", true },
        { "example.com", "EXAMPLE.COM:443", true },
        { "example.com", "example.com:80", false },
        { "example.com", "www.example.com:443", false },
        { "example.com", "example.com.evil.net:443", false },
        { "example.com", "badexample.com:443", false },
        { "example.com:8443", "example.com:8443", true },
        { "example.com:8443", "example.com:443", false },
        { ".example.com", "example.com:443", false },
        { ".example.com", "a.example.com:443", true },
        { ".example.com", "A.B.Example.com:443", true },
        { ".example.com", "badexample.com:443", false },
        { ".example.com", "a.example.com:80", false },
        { ".example.com", "example.com.evil.net:443", false },
        { ".com", "example.com:443", true },
        { "127.0.0.1:8080", "127.0.0.1:8080", true },
        { "127.0.0.1:8080", "[::ffff:127.0.0.1]:8080", true },
        { "[::ffff:127.0.0.1]:8080", "127.0.0.1:8080", true },
        { "127.0.0.1:8080", "localhost:8080", false },
        { "localhost:8080", "127.0.0.1:8080", false },
        { "127.0.0.1:8080", "127.0.0.2:8080", false },
        { "[::1]:8080", "[::1]:8080", true },
        { "[::1]:8080", "[0:0::1]:8080", true },
        { "[::1]:8080", "127.0.0.1:8080", false },
        { "[::1]:8080", "[::2]:8080", false },
};

static void test_match_table(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(matches) / sizeof(matches[0]); i++) {
                const struct match_row *row = &matches[i];
                struct glove_net_rule r;
                struct glove_net_host h;
                uint16_t port;
                assert_int_equal(glove_net_rule_parse(row->rule, &r, NULL), 0);
                assert_int_equal(glove_net_authority_parse(row->target, strlen(row->target), &h, &port, NULL), 0);
                if (glove_net_rule_matches(&r, &h, port) != row->match)
                        fail_msg("rule '%s' target '%s': want %s", row->rule, row->target,
                                 row->match ? "match" : "no match");
        }
}

/* Per-rule allow_private: only the rule that carries it lets its
 * destinations be private; adding an equal rule ORs the flags. */
static void test_policy_rule_private(void **state) {
        (void)state;
        struct glove_net_policy p;
        glove_net_policy_init(&p);
        struct glove_net_host lo, ex;
        assert_int_equal(glove_net_host_parse("127.0.0.1", 9, &lo, NULL), 0);
        assert_int_equal(glove_net_host_parse("example.com", 11, &ex, NULL), 0);
        struct glove_net_rule r;
        assert_int_equal(glove_net_rule_parse("example.com", &r, NULL), 0);
        assert_false(r.allow_private);
        assert_int_equal(glove_net_policy_add_rule(&p, "127.0.0.1:8787", true, NULL), 0);
        assert_int_equal(glove_net_policy_add_rule(&p, "example.com:443", false, NULL), 0);
        assert_true(glove_net_policy_allows(&p, &lo, 8787));
        assert_true(glove_net_policy_allows(&p, &ex, 443));
        assert_true(glove_net_policy_allows_private(&p, &lo, 8787));
        assert_false(glove_net_policy_allows_private(&p, &ex, 443));
        assert_false(glove_net_policy_allows_private(&p, &lo, 8788)); /* no rule matches */
        assert_int_equal(glove_net_policy_add_rule(&p, "example.com:443", true, NULL), 0);
        assert_int_equal(p.n_rules, 2);
        assert_true(glove_net_policy_allows_private(&p, &ex, 443));
        assert_int_equal(glove_net_policy_add(&p, "example.com:443", NULL), 0); /* does not clear it */
        assert_true(glove_net_policy_allows_private(&p, &ex, 443));
        struct glove_net_policy copy;
        assert_int_equal(glove_net_policy_copy(&copy, &p, NULL), 0);
        assert_true(glove_net_policy_allows_private(&copy, &lo, 8787));
        glove_net_policy_free(&copy);
        glove_net_policy_free(&p);
        /* glove_net_policy_add (--egress-allow): an address literal may be
         * private, a name may not; the literal's flag covers its own address
         * (and its IPv4-mapped form) only, never a name resolving to it. */
        assert_int_equal(glove_net_policy_add(&p, "example.org", NULL), 0);
        assert_int_equal(glove_net_policy_add(&p, "127.0.0.1:8080", NULL), 0);
        assert_int_equal(glove_net_policy_add(&p, "[::1]:8080", NULL), 0);
        assert_int_equal(glove_net_policy_add(&p, "localhost:8080", NULL), 0);
        struct glove_net_host org, local, mapped, v6;
        assert_int_equal(glove_net_host_parse("example.org", 11, &org, NULL), 0);
        assert_int_equal(glove_net_host_parse("localhost", 9, &local, NULL), 0);
        assert_int_equal(glove_net_host_parse("[::ffff:127.0.0.1]", 18, &mapped, NULL), 0);
        assert_int_equal(glove_net_host_parse("[::1]", 5, &v6, NULL), 0);
        assert_false(glove_net_policy_allows_private(&p, &org, 443));
        assert_true(glove_net_policy_allows_private(&p, &lo, 8080));
        assert_true(glove_net_policy_allows_private(&p, &mapped, 8080));
        assert_true(glove_net_policy_allows_private(&p, &v6, 8080));
        assert_false(glove_net_policy_allows_private(&p, &lo, 8081));
        assert_true(glove_net_policy_allows(&p, &local, 8080));
        assert_false(glove_net_policy_allows_private(&p, &local, 8080));
        /* --egress-allow-private localhost:8080 marks that name rule only. */
        assert_int_equal(glove_net_policy_add_rule(&p, "localhost:8080", true, NULL), 0);
        assert_true(glove_net_policy_allows_private(&p, &local, 8080));
        assert_false(glove_net_policy_allows_private(&p, &local, 8081));
        assert_false(glove_net_policy_allows_private(&p, &org, 443));
        /* A subdomain rule with the flag covers its names, not the others. */
        assert_int_equal(glove_net_policy_add_rule(&p, ".corp.example", true, NULL), 0);
        struct glove_net_host sub;
        assert_int_equal(glove_net_host_parse("git.corp.example", 16, &sub, NULL), 0);
        assert_true(glove_net_policy_allows_private(&p, &sub, 443));
        assert_false(glove_net_policy_allows_private(&p, &org, 443));
        glove_net_policy_free(&p);
        assert_false(glove_net_policy_allows_private(NULL, &org, 443));
}

/* A missing port is the default of glove_net_authority_parse_default. */
static void test_authority_default_port(void **state) {
        (void)state;
        struct glove_net_host h;
        uint16_t port = 0;
        assert_int_equal(glove_net_authority_parse_default("example.com", 11, 80, &h, &port, NULL), 0);
        assert_string_equal(h.text, "example.com");
        assert_int_equal(port, 80);
        assert_int_equal(glove_net_authority_parse_default("[::1]", 5, 80, &h, &port, NULL), 0);
        assert_int_equal(port, 80);
        assert_int_equal(glove_net_authority_parse_default("Example.com:8080", 16, 80, &h, &port, NULL), 0);
        assert_string_equal(h.text, "example.com");
        assert_int_equal(port, 8080);
        struct glove_error err = { 0 };
        assert_int_equal(glove_net_authority_parse_default("example.com", 11, 0, &h, &port, &err), -EINVAL);
        assert_string_equal(err.code, "egress.missing_port");
        glove_error_clear(&err);
        assert_int_equal(glove_net_authority_parse_default("user@example.com", 16, 80, &h, &port, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_host");
        glove_error_clear(&err);
        assert_int_equal(glove_net_authority_parse_default("example.com:", 12, 80, &h, &port, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_port");
}

static void test_policy(void **state) {
        (void)state;
        struct glove_net_policy p;
        glove_net_policy_init(&p);
        struct glove_net_host h;
        uint16_t port;
        assert_int_equal(glove_net_authority_parse("api.example.com:443", 19, &h, &port, NULL), 0);
        assert_false(glove_net_policy_allows(&p, &h, port)); /* empty: nothing */
        assert_false(glove_net_policy_allows_private(&p, &h, port));
        assert_int_equal(glove_net_policy_add(&p, "example.org", NULL), 0);
        assert_int_equal(glove_net_policy_add(&p, ".example.com", NULL), 0);
        assert_int_equal(glove_net_policy_add(&p, ".EXAMPLE.com", NULL), 0); /* duplicate: kept once */
        assert_int_equal(p.n_rules, 2);
        assert_true(glove_net_policy_allows(&p, &h, port));
        struct glove_error err = { 0 };
        assert_int_equal(glove_net_policy_add(&p, "bad host", &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_host");
        assert_int_equal(p.n_rules, 2);

        struct glove_net_policy copy;
        assert_int_equal(glove_net_policy_copy(&copy, &p, NULL), 0);
        assert_int_equal(copy.n_rules, 2);
        assert_false(glove_net_policy_allows_private(&copy, &h, port));
        assert_true(glove_net_policy_allows(&copy, &h, port));
        glove_net_policy_free(&copy);

        for (int i = 2; i < GLOVE_NET_RULES_MAX; i++) {
                char rule[32];
                snprintf(rule, sizeof(rule), "h%d.example", i);
                assert_int_equal(glove_net_policy_add(&p, rule, NULL), 0);
        }
        assert_int_equal(p.n_rules, GLOVE_NET_RULES_MAX);
        glove_error_clear(&err);
        assert_int_equal(glove_net_policy_add(&p, "one-more.example", &err), -E2BIG);
        assert_string_equal(err.code, "egress.too_many_rules");
        assert_int_equal(glove_net_policy_add(&p, "example.org", NULL), 0); /* a duplicate still passes */
        glove_net_policy_free(&p);
        assert_int_equal(p.n_rules, 0);
        assert_null(p.rules);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rule_parse_table),
                cmocka_unit_test(test_rule_length_bounds),
                cmocka_unit_test(test_authority_table),
                cmocka_unit_test(test_match_table),
                cmocka_unit_test(test_policy),
                cmocka_unit_test(test_policy_rule_private),
                cmocka_unit_test(test_authority_default_port),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

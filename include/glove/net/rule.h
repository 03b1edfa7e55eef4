/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Egress allow rules and the egress policy (issue 4, "Audited egress";
 * docs/egress.md, "Rules").
 *
 * A rule is the argument of `--egress-allow HOST[:PORT]`:
 *
 *   example.com          the name example.com, port 443
 *   example.com:8443     the name example.com, port 8443
 *   .example.com         every name strictly below example.com
 *                        (a.example.com, b.a.example.com), port 443; not
 *                        example.com itself (add both rules for both)
 *   192.0.2.7:80         the IPv4 literal 192.0.2.7, port 80
 *   [2001:db8::1]:8443   the IPv6 literal, in brackets (RFC 3986 section
 *                        3.2.2); a bare IPv6 address is refused
 *
 * Names are ASCII only (IDNA is not supported: write the A-label,
 * "xn--..."), compared after lowering, made of labels of letters, digits,
 * '-' and '_' (1..63 bytes, not starting or ending with '-'), at most
 * GLOVE_NET_HOST_MAX bytes, without a trailing dot. A name whose last label
 * is numeric ("10.1", "0x7f.1", "2130706433") must be a strict dotted-quad
 * IPv4 address, so the numeric shorthands the C resolver would accept never
 * reach it. Ports are decimal 1..65535 without leading zeros.
 *
 * Name rules match names and address rules match address literals: a rule
 * "127.0.0.1:8080" allows `CONNECT 127.0.0.1:8080` (and the IPv4-mapped
 * literal [::ffff:127.0.0.1]:8080), not a name that resolves to 127.0.0.1.
 * The private-range rule (address.h) applies on top of every rule, except
 * where a rule that matches the target carries allow_private (per rule: one
 * rule's permission never widens another's).
 *
 * Stable error codes (all -EINVAL unless noted), each message names the rule:
 *   egress.empty                the rule or its host is empty
 *   egress.non_ascii            the host has a byte >= 0x80 (IDNA unsupported)
 *   egress.bad_host             not a valid name or IPv4 literal (characters,
 *                               labels, length, trailing dot, numeric last
 *                               label, "*" wildcards)
 *   egress.bad_ipv6             bracketed text that is not an IPv6 address,
 *                               or carries a zone ("%eth0")
 *   egress.ipv6_needs_brackets  an unbracketed IPv6 address
 *   egress.bad_port             a port that is empty, not decimal, has a
 *                               leading zero, or is outside 1..65535
 *   egress.missing_port         (authority only) no ":PORT"
 *   egress.suffix_on_address    a leading '.' before an address literal
 *   egress.too_many_rules       (-E2BIG) more than GLOVE_NET_RULES_MAX rules
 *   egress.no_memory            (-ENOMEM)
 * Every err argument may be NULL.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* Longest host name in bytes (RFC 1035 presentation form, no trailing dot). */
#define GLOVE_NET_HOST_MAX 253
/* Longest label of a host name in bytes. */
#define GLOVE_NET_LABEL_MAX 63
/* Longest rule text in bytes ("." + host + ":65535", or bracketed IPv6). */
#define GLOVE_NET_RULE_TEXT_MAX (1 + GLOVE_NET_HOST_MAX + 6)
/* Most rules in one policy. */
#define GLOVE_NET_RULES_MAX 256
/* Port of a rule written without one. */
#define GLOVE_NET_DEFAULT_PORT 443

enum glove_net_host_kind {
        GLOVE_NET_HOST_NAME = 1,
        GLOVE_NET_HOST_IPV4,
        GLOVE_NET_HOST_IPV6,
};

/* A host as written in a rule or a CONNECT target. */
struct glove_net_host {
        enum glove_net_host_kind kind;
        /* NAME: the lowered name; IPV4: dotted quad; IPV6: the canonical
         * inet_ntop(3) form without brackets. NUL-terminated. */
        char text[GLOVE_NET_HOST_MAX + 1];
        /* IPV4: addr[0..4); IPV6: addr[0..16); network byte order. */
        uint8_t addr[16];
};

struct glove_net_rule {
        struct glove_net_host host;
        bool subdomains; /* written with a leading '.': names strictly below host */
        uint16_t port;   /* 1..65535 */
        bool allow_private; /* this rule's destinations may be private
                             * addresses: an address-literal --egress-allow
                             * rule, --egress-allow-private HOST[:PORT], or a
                             * managed session's egress target with
                             * allow_private; false from glove_net_rule_parse */
};

/* The allow list of one run. Private destinations are allowed per rule only
 * (glove_net_rule.allow_private); there is no policy-wide switch. */
struct glove_net_policy {
        struct glove_net_rule *rules; /* owned; n_rules entries */
        size_t n_rules;
};

/*
 * Parses a host as it appears in a URI authority: a name, an IPv4 literal or
 * a bracketed IPv6 literal, text[0..len) (no NUL needed). Fills *out.
 * Returns 0 or -EINVAL with one of the codes above.
 */
int glove_net_host_parse(const char *text, size_t len, struct glove_net_host *out,
                         struct glove_error *err);

/*
 * Parses one --egress-allow argument (NUL-terminated) into *out. Returns 0 or
 * -EINVAL with one of the codes above.
 */
int glove_net_rule_parse(const char *text, struct glove_net_rule *out, struct glove_error *err);

/*
 * Parses a CONNECT request target in authority form, "HOST:PORT" (RFC 9110
 * section 9.3.6: the port is required), text[0..len). Returns 0 or -EINVAL
 * (egress.missing_port when there is no port, else the codes above).
 */
int glove_net_authority_parse(const char *text, size_t len, struct glove_net_host *host,
                              uint16_t *port, struct glove_error *err);

/*
 * As glove_net_authority_parse, but a missing ":PORT" means default_port
 * (1..65535; 0 makes the port required, as glove_net_authority_parse): the
 * authority of an `http://` URL (default 80) or of a Host header.
 */
int glove_net_authority_parse_default(const char *text, size_t len, uint16_t default_port,
                                      struct glove_net_host *host, uint16_t *port, struct glove_error *err);

/* True when rule matches host:port (see the matching rules above). */
bool glove_net_rule_matches(const struct glove_net_rule *rule, const struct glove_net_host *host,
                            uint16_t port);

/* Makes *p an empty policy (no rules, private destinations refused). */
void glove_net_policy_init(struct glove_net_policy *p);

/*
 * Parses text as a rule and appends it to p (a rule equal to one already
 * present is accepted and not added twice), the way `--egress-allow TEXT`
 * does: an address-literal rule gets allow_private (the operator named that
 * exact address), a name rule does not (add it with
 * glove_net_policy_add_rule(..., true, ...) for that). Returns 0, -EINVAL
 * (parse codes), -E2BIG (egress.too_many_rules) or -ENOMEM
 * (egress.no_memory); p is unchanged on error.
 */
int glove_net_policy_add(struct glove_net_policy *p, const char *text, struct glove_error *err);

/* Deep copy of src into *dst (an uninitialized struct). Returns 0 or -ENOMEM
 * (egress.no_memory; *dst is then empty). */
int glove_net_policy_copy(struct glove_net_policy *dst, const struct glove_net_policy *src,
                          struct glove_error *err);

/* True when some rule of p matches host:port. Does not look at addresses'
 * classes: the relay checks those after resolving. */
bool glove_net_policy_allows(const struct glove_net_policy *p, const struct glove_net_host *host,
                             uint16_t port);

/*
 * As glove_net_policy_add, with the rule's allow_private flag given by the
 * caller (for name and address rules alike): only destinations matched by a
 * rule with the flag may resolve to private addresses, so one target's
 * allow_private does not widen the others. Adding a rule equal to one
 * present ORs the flags. Same returns and codes as glove_net_policy_add.
 */
int glove_net_policy_add_rule(struct glove_net_policy *p, const char *text, bool allow_private,
                              struct glove_error *err);

/* True when host:port may be reached at a private address: some rule of p
 * that matches host:port has allow_private. False for a NULL p. */
bool glove_net_policy_allows_private(const struct glove_net_policy *p, const struct glove_net_host *host,
                                     uint16_t port);

/* Frees the rules; p is an empty policy again. */
void glove_net_policy_free(struct glove_net_policy *p);

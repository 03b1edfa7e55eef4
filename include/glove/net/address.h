/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Classification of destination addresses for audited egress (issue 4,
 * "Audited egress"; docs/egress.md, "Private destinations").
 *
 * The egress proxy connects to an address only when it is "public", or when
 * a rule that matches the request allows private destinations (an address
 * rule, --egress-allow-private HOST[:PORT], a managed session's target with
 * allow_private; rule.h). Every other class below is
 * a destination that is local to the host, to its site, or not a unicast
 * Internet host at all. The ranges are those of the IANA IPv4 and IPv6
 * Special-Purpose Address Registries (RFC 6890 and its updates) that are not
 * globally reachable, plus multicast and the reserved space:
 *
 *   class           IPv4                                  IPv6
 *   this_network    0.0.0.0/8 (except 0.0.0.0)            -
 *   unspecified     0.0.0.0/32                            ::/128
 *   loopback        127.0.0.0/8                           ::1/128
 *   private         10/8, 172.16/12, 192.168/16 (RFC 1918) -
 *   shared          100.64.0.0/10 (CGNAT, RFC 6598)       -
 *   link_local      169.254.0.0/16                        fe80::/10
 *   unique_local    -                                     fc00::/7
 *   site_local      -                                     fec0::/10 (deprecated)
 *   multicast       224.0.0.0/4                           ff00::/8
 *   broadcast       255.255.255.255/32                    -
 *   documentation   192.0.2/24, 198.51.100/24, 203.0.113/24  2001:db8::/32, 3fff::/20
 *   benchmarking    198.18.0.0/15                         2001:2::/48
 *   reserved        192.0.0.0/24, 192.88.99.0/24 (6to4    everything outside 2000::/3 not
 *                   relay), 240.0.0.0/4                   named above (::/96 compatible,
 *                                                         ::ffff:0:0:0/96 translated,
 *                                                         64:ff9b:1::/48, 100::/64,
 *                                                         5f00::/16, ...), 2001::/32
 *                                                         (Teredo), 2001:10::/28,
 *                                                         2001:20::/28
 *
 * IPv6 addresses that embed an IPv4 address are classified by the embedded
 * address, so no private IPv4 destination is reachable through them:
 * IPv4-mapped ::ffff:a.b.c.d (::ffff:0:0/96), the NAT64 well-known prefix
 * 64:ff9b::a.b.c.d (64:ff9b::/96, RFC 6052) and 6to4 2002:AABB:CCDD::/48
 * (RFC 3056, embedded address in bits 16..47).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

enum glove_net_address_class {
        GLOVE_NET_ADDRESS_PUBLIC = 0,
        GLOVE_NET_ADDRESS_THIS_NETWORK,
        GLOVE_NET_ADDRESS_UNSPECIFIED,
        GLOVE_NET_ADDRESS_LOOPBACK,
        GLOVE_NET_ADDRESS_PRIVATE,
        GLOVE_NET_ADDRESS_SHARED,
        GLOVE_NET_ADDRESS_LINK_LOCAL,
        GLOVE_NET_ADDRESS_UNIQUE_LOCAL,
        GLOVE_NET_ADDRESS_SITE_LOCAL,
        GLOVE_NET_ADDRESS_MULTICAST,
        GLOVE_NET_ADDRESS_BROADCAST,
        GLOVE_NET_ADDRESS_DOCUMENTATION,
        GLOVE_NET_ADDRESS_BENCHMARKING,
        GLOVE_NET_ADDRESS_RESERVED,
};

/* Class of the IPv4 address a[0..4) (network byte order). */
enum glove_net_address_class glove_net_address_classify4(const uint8_t a[4]);

/* Class of the IPv6 address a[0..16) (network byte order); embedded IPv4
 * addresses are classified as described above. */
enum glove_net_address_class glove_net_address_classify6(const uint8_t a[16]);

/* Class of an AF_INET or AF_INET6 socket address; any other family (or NULL)
 * is GLOVE_NET_ADDRESS_RESERVED, so it is never treated as public. */
enum glove_net_address_class glove_net_address_classify(const struct sockaddr *sa);

/* The stable lower-case name of a class ("public", "loopback", "private",
 * "shared", "link_local", "unique_local", "site_local", "multicast",
 * "broadcast", "this_network", "unspecified", "documentation",
 * "benchmarking", "reserved"); "reserved" for values out of range. */
const char *glove_net_address_class_name(enum glove_net_address_class c);

/* True when the class needs a rule that allows private destinations (every
 * class but public). */
static inline bool glove_net_address_class_is_private(enum glove_net_address_class c) {
        return c != GLOVE_NET_ADDRESS_PUBLIC;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Destination address classes (include/glove/net/address.h). */
#include "glove/net/address.h"

#include <netinet/in.h>
#include <stddef.h>
#include <string.h>

#include "glove/base/cleanup.h"

/* True when the first bits of a (network order) equal those of prefix. */
static bool in_prefix(const uint8_t *a, const uint8_t *prefix, unsigned bits) {
        unsigned whole = bits / 8, rest = bits % 8;
        if (memcmp(a, prefix, whole) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t)(0xFF << (8 - rest));
        return (a[whole] & mask) == (prefix[whole] & mask);
}

struct range {
        uint8_t prefix[16];
        unsigned bits;
        enum glove_net_address_class cls;
};

/* Most specific first where ranges nest. */
static const struct range ranges4[] = {
        { { 0, 0, 0, 0 }, 32, GLOVE_NET_ADDRESS_UNSPECIFIED },
        { { 0 }, 8, GLOVE_NET_ADDRESS_THIS_NETWORK },
        { { 10 }, 8, GLOVE_NET_ADDRESS_PRIVATE },
        { { 100, 64 }, 10, GLOVE_NET_ADDRESS_SHARED },
        { { 127 }, 8, GLOVE_NET_ADDRESS_LOOPBACK },
        { { 169, 254 }, 16, GLOVE_NET_ADDRESS_LINK_LOCAL },
        { { 172, 16 }, 12, GLOVE_NET_ADDRESS_PRIVATE },
        { { 192, 0, 0 }, 24, GLOVE_NET_ADDRESS_RESERVED },
        { { 192, 0, 2 }, 24, GLOVE_NET_ADDRESS_DOCUMENTATION },
        { { 192, 88, 99 }, 24, GLOVE_NET_ADDRESS_RESERVED },
        { { 192, 168 }, 16, GLOVE_NET_ADDRESS_PRIVATE },
        { { 198, 18 }, 15, GLOVE_NET_ADDRESS_BENCHMARKING },
        { { 198, 51, 100 }, 24, GLOVE_NET_ADDRESS_DOCUMENTATION },
        { { 203, 0, 113 }, 24, GLOVE_NET_ADDRESS_DOCUMENTATION },
        { { 224 }, 4, GLOVE_NET_ADDRESS_MULTICAST },
        { { 255, 255, 255, 255 }, 32, GLOVE_NET_ADDRESS_BROADCAST },
        { { 240 }, 4, GLOVE_NET_ADDRESS_RESERVED },
};

/* IPv6 ranges inside 2000::/3 (global unicast) that are not global, and the
 * named classes outside it. Everything else outside 2000::/3 is reserved. */
static const struct range ranges6[] = {
        { { 0x20, 0x01, 0x0d, 0xb8 }, 32, GLOVE_NET_ADDRESS_DOCUMENTATION },
        { { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, GLOVE_NET_ADDRESS_BENCHMARKING },
        { { 0x20, 0x01, 0x00, 0x10 }, 28, GLOVE_NET_ADDRESS_RESERVED },
        { { 0x20, 0x01, 0x00, 0x20 }, 28, GLOVE_NET_ADDRESS_RESERVED },
        { { 0x20, 0x01, 0x00, 0x00 }, 32, GLOVE_NET_ADDRESS_RESERVED },
        { { 0x3f, 0xff }, 20, GLOVE_NET_ADDRESS_DOCUMENTATION },
        { { 0xfc }, 7, GLOVE_NET_ADDRESS_UNIQUE_LOCAL },
        { { 0xfe, 0x80 }, 10, GLOVE_NET_ADDRESS_LINK_LOCAL },
        { { 0xfe, 0xc0 }, 10, GLOVE_NET_ADDRESS_SITE_LOCAL },
        { { 0xff }, 8, GLOVE_NET_ADDRESS_MULTICAST },
};

enum glove_net_address_class glove_net_address_classify4(const uint8_t a[4]) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(ranges4); i++)
                if (in_prefix(a, ranges4[i].prefix, ranges4[i].bits))
                        return ranges4[i].cls;
        return GLOVE_NET_ADDRESS_PUBLIC;
}

enum glove_net_address_class glove_net_address_classify6(const uint8_t a[16]) {
        static const uint8_t zero[16];
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
        static const uint8_t sixtofour[2] = { 0x20, 0x02 };

        if (memcmp(a, zero, 16) == 0)
                return GLOVE_NET_ADDRESS_UNSPECIFIED;
        if (memcmp(a, zero, 15) == 0 && a[15] == 1)
                return GLOVE_NET_ADDRESS_LOOPBACK;
        /* Embedded IPv4: mapped and NAT64 carry it in the last 32 bits, 6to4
         * in bits 16..47. */
        if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0)
                return glove_net_address_classify4(a + 12);
        if (memcmp(a, sixtofour, 2) == 0)
                return glove_net_address_classify4(a + 2);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(ranges6); i++)
                if (in_prefix(a, ranges6[i].prefix, ranges6[i].bits))
                        return ranges6[i].cls;
        if ((a[0] & 0xE0) != 0x20)
                return GLOVE_NET_ADDRESS_RESERVED;
        return GLOVE_NET_ADDRESS_PUBLIC;
}

enum glove_net_address_class glove_net_address_classify(const struct sockaddr *sa) {
        if (!sa)
                return GLOVE_NET_ADDRESS_RESERVED;
        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
                uint8_t a[4];
                memcpy(a, &in->sin_addr, 4);
                return glove_net_address_classify4(a);
        }
        if (sa->sa_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
                uint8_t a[16];
                memcpy(a, &in6->sin6_addr, 16);
                return glove_net_address_classify6(a);
        }
        return GLOVE_NET_ADDRESS_RESERVED;
}

const char *glove_net_address_class_name(enum glove_net_address_class c) {
        switch (c) {
        case GLOVE_NET_ADDRESS_PUBLIC: return "public";
        case GLOVE_NET_ADDRESS_THIS_NETWORK: return "this_network";
        case GLOVE_NET_ADDRESS_UNSPECIFIED: return "unspecified";
        case GLOVE_NET_ADDRESS_LOOPBACK: return "loopback";
        case GLOVE_NET_ADDRESS_PRIVATE: return "private";
        case GLOVE_NET_ADDRESS_SHARED: return "shared";
        case GLOVE_NET_ADDRESS_LINK_LOCAL: return "link_local";
        case GLOVE_NET_ADDRESS_UNIQUE_LOCAL: return "unique_local";
        case GLOVE_NET_ADDRESS_SITE_LOCAL: return "site_local";
        case GLOVE_NET_ADDRESS_MULTICAST: return "multicast";
        case GLOVE_NET_ADDRESS_BROADCAST: return "broadcast";
        case GLOVE_NET_ADDRESS_DOCUMENTATION: return "documentation";
        case GLOVE_NET_ADDRESS_BENCHMARKING: return "benchmarking";
        case GLOVE_NET_ADDRESS_RESERVED: return "reserved";
        }
        return "reserved";
}

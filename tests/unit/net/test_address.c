/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/net/address.h: the private-range table. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "glove/net/address.h"

struct row {
        const char *address;
        const char *cls;
};

static const struct row v4[] = {
        { "0.0.0.0", "unspecified" },
        { "0.1.2.3", "this_network" },
        { "0.255.255.255", "this_network" },
        { "1.1.1.1", "public" },
        { "8.8.8.8", "public" },
        { "9.255.255.255", "public" },
        { "10.0.0.0", "private" },
        { "10.255.255.255", "private" },
        { "11.0.0.0", "public" },
        { "100.63.255.255", "public" },
        { "100.64.0.0", "shared" },
        { "100.127.255.255", "shared" },
        { "100.128.0.0", "public" },
        { "126.255.255.255", "public" },
        { "127.0.0.1", "loopback" },
        { "127.255.255.254", "loopback" },
        { "128.0.0.0", "public" },
        { "169.253.255.255", "public" },
        { "169.254.0.1", "link_local" },
        { "169.254.169.254", "link_local" }, /* cloud metadata */
        { "169.255.0.0", "public" },
        { "172.15.255.255", "public" },
        { "172.16.0.0", "private" },
        { "172.31.255.255", "private" },
        { "172.32.0.0", "public" },
        { "192.0.0.1", "reserved" },
        { "192.0.1.1", "public" },
        { "192.0.2.1", "documentation" },
        { "192.88.99.1", "reserved" },
        { "192.167.255.255", "public" },
        { "192.168.0.1", "private" },
        { "192.168.255.255", "private" },
        { "192.169.0.0", "public" },
        { "198.17.255.255", "public" },
        { "198.18.0.0", "benchmarking" },
        { "198.19.255.255", "benchmarking" },
        { "198.20.0.0", "public" },
        { "198.51.100.7", "documentation" },
        { "203.0.113.9", "documentation" },
        { "223.255.255.255", "public" },
        { "224.0.0.1", "multicast" },
        { "239.255.255.250", "multicast" },
        { "240.0.0.1", "reserved" },
        { "255.255.255.254", "reserved" },
        { "255.255.255.255", "broadcast" },
};

static const struct row v6[] = {
        { "::", "unspecified" },
        { "::1", "loopback" },
        { "::2", "reserved" },
        { "::127.0.0.1", "reserved" },           /* IPv4-compatible, deprecated */
        { "::ffff:0:8.8.8.8", "reserved" },      /* IPv4-translated */
        /* IPv4-mapped: the embedded address decides. */
        { "::ffff:127.0.0.1", "loopback" },
        { "::ffff:10.1.2.3", "private" },
        { "::ffff:169.254.169.254", "link_local" },
        { "::ffff:100.64.1.1", "shared" },
        { "::ffff:0.0.0.0", "unspecified" },
        { "::ffff:255.255.255.255", "broadcast" },
        { "::ffff:8.8.8.8", "public" },
        /* NAT64 well-known prefix and 6to4. */
        { "64:ff9b::8.8.8.8", "public" },
        { "64:ff9b::192.168.1.1", "private" },
        { "64:ff9b::127.0.0.1", "loopback" },
        { "64:ff9b:1::1", "reserved" },
        { "2002:0808:0808::1", "public" },
        { "2002:c0a8:0101::1", "private" },
        { "2002:7f00:0001::", "loopback" },
        { "100::1", "reserved" },
        { "5f00::1", "reserved" },
        { "1fff:ffff::1", "reserved" },
        { "2000::1", "public" },
        { "2001::1", "reserved" },               /* Teredo */
        { "2001:2::1", "benchmarking" },
        { "2001:2:1::1", "public" },
        { "2001:10::1", "reserved" },
        { "2001:20::1", "reserved" },
        { "2001:db8::1", "documentation" },
        { "2001:db9::1", "public" },
        { "2001:4860:4860::8888", "public" },
        { "2606:4700:4700::1111", "public" },
        { "3fff::1", "documentation" },
        { "3fff:0fff::1", "documentation" },
        { "3fff:1000::1", "public" },
        { "4000::1", "reserved" },
        { "fbff::1", "reserved" },
        { "fc00::1", "unique_local" },
        { "fd12:3456::1", "unique_local" },
        { "fe7f::1", "reserved" },
        { "fe80::1", "link_local" },
        { "febf::1", "link_local" },
        { "fec0::1", "site_local" },
        { "ff02::1", "multicast" },
        { "ff0e::1", "multicast" },
};

static void test_ipv4_table(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
                struct sockaddr_in sin = { .sin_family = AF_INET };
                assert_int_equal(inet_pton(AF_INET, v4[i].address, &sin.sin_addr), 1);
                const char *got = glove_net_address_class_name(glove_net_address_classify((struct sockaddr *)&sin));
                if (strcmp(got, v4[i].cls) != 0)
                        fail_msg("%s: got %s, want %s", v4[i].address, got, v4[i].cls);
                bool want_private = strcmp(v4[i].cls, "public") != 0;
                assert_int_equal(glove_net_address_class_is_private(glove_net_address_classify((struct sockaddr *)&sin)),
                                 want_private);
        }
}

static void test_ipv6_table(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
                struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
                if (inet_pton(AF_INET6, v6[i].address, &sin6.sin6_addr) != 1)
                        fail_msg("bad test address %s", v6[i].address);
                const char *got = glove_net_address_class_name(glove_net_address_classify((struct sockaddr *)&sin6));
                if (strcmp(got, v6[i].cls) != 0)
                        fail_msg("%s: got %s, want %s", v6[i].address, got, v6[i].cls);
        }
}

static void test_other_families_never_public(void **state) {
        (void)state;
        struct sockaddr sa = { .sa_family = AF_UNIX };
        assert_string_equal(glove_net_address_class_name(glove_net_address_classify(&sa)), "reserved");
        assert_string_equal(glove_net_address_class_name(glove_net_address_classify(NULL)), "reserved");
        assert_true(glove_net_address_class_is_private(glove_net_address_classify(NULL)));
        assert_string_equal(glove_net_address_class_name((enum glove_net_address_class)999), "reserved");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ipv4_table),
                cmocka_unit_test(test_ipv6_table),
                cmocka_unit_test(test_other_families_never_public),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* TCP confinement with Landlock (glove/net/confine.h; landlock(7)). */
#include "glove/net/confine.h"

#include <errno.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The first ABI with LANDLOCK_RULE_NET_PORT (Linux 6.7). */
#define NET_ABI 4

/* The ABI 4 structures and values (landlock(7), include/uapi/linux/
 * landlock.h of Linux 6.7), spelled here because the build host's headers
 * may predate them. The kernel reads a shorter ruleset_attr than its own. */
struct confine_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
};
struct confine_net_port_attr {
        uint64_t allowed_access;
        uint64_t port;
} __attribute__((packed));
#define CONFINE_RULE_NET_PORT 2 /* LANDLOCK_RULE_NET_PORT */
#define CONFINE_NET_BIND_TCP (1ULL << 0)
#define CONFINE_NET_CONNECT_TCP (1ULL << 1)

int glove_net_tcp_confine(const uint16_t *ports, size_t n, struct glove_error *err) {
        if (n > GLOVE_NET_CONFINE_PORTS_MAX || (n && !ports))
                return glove_error_set(err, EINVAL, "egress.confine", "at most %d ports may stay connectable",
                                       GLOVE_NET_CONFINE_PORTS_MAX);
        for (size_t i = 0; i < n; i++)
                if (!ports[i])
                        return glove_error_set(err, EINVAL, "egress.confine", "port 0 cannot be a listener's port");
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi < NET_ABI)
                return glove_error_set(err, EOPNOTSUPP, "egress.confine",
                                       "Landlock ABI %ld: TCP ports need ABI %d (Linux 6.7, landlock in the lsm= list)",
                                       abi < 0 ? 0 : abi, NET_ABI);
        /* Only the network rights are handled: files stay as the mount plan
         * made them. */
        struct confine_ruleset_attr attr = {
                .handled_access_net = CONFINE_NET_BIND_TCP | CONFINE_NET_CONNECT_TCP,
        };
        int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
        if (fd < 0)
                return glove_error_set(err, errno, "egress.confine", "landlock_create_ruleset: %s", glove_errno_text(errno));
        int r = 0;
        for (size_t i = 0; r == 0 && i < n; i++) {
                struct confine_net_port_attr rule = {
                        .allowed_access = CONFINE_NET_CONNECT_TCP,
                        .port = ports[i],
                };
                if (syscall(SYS_landlock_add_rule, fd, CONFINE_RULE_NET_PORT, &rule, 0) < 0)
                        r = glove_error_set(err, errno, "egress.confine", "landlock_add_rule (port %u): %s",
                                            (unsigned)ports[i], glove_errno_text(errno));
        }
        if (r == 0 && syscall(SYS_landlock_restrict_self, fd, 0) < 0)
                r = glove_error_set(err, errno, "egress.confine", "landlock_restrict_self: %s", glove_errno_text(errno));
        close(fd);
        return r;
}

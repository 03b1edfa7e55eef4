/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * TCP confinement of a sandbox's network namespace (docs/limits.md,
 * "Host-wide kernel resources bounded per run"; docs/threat-model.md,
 * "Host-wide kernel resources"; issue 31).
 *
 * The kernel admits one packet (up to 64 KiB on the loopback) into an empty
 * TCP receive queue whatever the memory cgroup's socket limit, so the host
 * TCP memory a run can pin grows with the number of connections it holds.
 * Connections the agent makes to itself (a listener of its own, or a socket
 * bound and connected to its own port) are bounded only by its descriptors.
 * This restricts the calling process and every descriptor of it created
 * afterwards with a Landlock domain (ABI 4 and later, Linux 6.7): TCP bind(2)
 * is refused with EACCES on every port, and TCP connect(2) is allowed only to
 * the given ports (Glove's own listeners: the egress helper, the MCP
 * endpoint), so every TCP connection inside the namespace ends at a listener
 * of Glove's, which bounds how many it holds.
 *
 * Landlock's TCP rights do not cover MPTCP or SCTP sockets: the egress
 * seccomp filter refuses them (container/seccomp.c).
 */

#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* Most ports glove_net_tcp_confine() takes. */
#define GLOVE_NET_CONFINE_PORTS_MAX 4

/*
 * Installs the domain above on the calling thread (PID 1 calls it before it
 * forks the agent; a domain is inherited and cannot be lifted). ports: n
 * ports in host byte order, 1..65535, n at most GLOVE_NET_CONFINE_PORTS_MAX.
 * The caller needs no_new_privs or CAP_SYS_ADMIN in its user namespace.
 * Allocates nothing (PID 1 calls it from its pid1_setup hook).
 *
 * Returns 0; -EOPNOTSUPP when the kernel has no Landlock or an ABI below 4
 * (Landlock built out or not in the `lsm=` list: the caller decides; nothing
 * is restricted); -EINVAL for bad arguments; -errno of landlock_add_rule or
 * landlock_restrict_self otherwise. Error code: egress.confine.
 */
int glove_net_tcp_confine(const uint16_t *ports, size_t n, struct glove_error *err);

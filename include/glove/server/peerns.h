/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The user namespace check of gloved's control socket (issue 14): a peer is
 * admitted only when its user namespace is gloved's own or one of its
 * ancestors. A Glove sandbox's user namespace is a descendant of the
 * namespace that created it (gloved's own for a managed session, the
 * operator's for glove exec: then a sibling or a cousin of a gloved that
 * runs in a user namespace of its own), so an agent that read the bootstrap
 * secret through a grant is refused whatever it presents.
 *
 * What gloved can see. The kernel lets a process open the user namespace
 * of another (/proc/PID/ns/user, PIDFD_GET_USER_NAMESPACE) only when that
 * process is in the caller's own user namespace or a descendant of it
 * (cap_ptrace_access_check), and NS_GET_PARENT answers only with a
 * namespace inside the caller's own (ns_get_owner). So a peer's namespace is
 *   - readable and gloved's own (or one NS_GET_PARENT showed above it: none
 *     on today's kernels, but the walk stops only at EPERM or the bound):
 *     admitted;
 *   - readable and another one: a descendant, for example a managed
 *     session's sandbox: refused, auth.foreign_user_namespace;
 *   - unreadable (EACCES): above or beside gloved's, which happens only when
 *     gloved runs in a user namespace of its own (a PrivateUsers=yes unit,
 *     `unshare --user gloved`). An ancestor (the operator's shell) and a
 *     sibling (a glove exec sandbox of the same operator) cannot be told
 *     apart from inside, so the peer must prove it: with its first bytes it
 *     passes (SCM_RIGHTS) a descriptor of gloved's own user namespace, which
 *     it opened as /proc/PID/ns/user with the pid gloved writes in
 *     RUNTIME/gloved.lock. The kernel grants that open only to a process of
 *     gloved's namespace or of an ancestor with authority over it (the
 *     owner's uid, or root there), never to a sandbox beside or below it.
 *     Without that descriptor: auth.foreign_user_namespace.
 *
 * The peer. SO_PEERPIDFD (Linux 6.5) gives a pidfd of the process that
 * connected; PIDFD_GET_USER_NAMESPACE (Linux 6.11) opens its user namespace
 * without a pid. On older kernels /proc/PID/ns/user is opened and the pidfd
 * is then checked to still be alive, so the pid could not have been reused in
 * between. Without SO_PEERPIDFD, pidfd_open(SO_PEERCRED pid) stands in: a
 * peer that exits and whose pid is reused between its connect and gloved's
 * accept would be judged by the new process (documented).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* At most this many namespaces are known (the kernel nests user namespaces
 * 32 deep). */
#define GLOVE_SERVER_PEERNS_MAX 66

struct glove_server_peerns_id {
        dev_t dev;
        ino_t ino;
};

struct glove_server_peerns {
        size_t n;
        struct glove_server_peerns_id ns[GLOVE_SERVER_PEERNS_MAX];
};

/*
 * Fills t with the admitted namespaces: gloved's own first, then what
 * NS_GET_PARENT shows above it. Errors: -errno with err set (code
 * "server.user_namespace") when gloved's own cannot be opened.
 */
int glove_server_peerns_init(struct glove_server_peerns *t, struct glove_error *err);

/* True when id is one of t's namespaces. */
bool glove_server_peerns_admits(const struct glove_server_peerns *t, const struct glove_server_peerns_id *id);

/* True when fd (borrowed) is a descriptor of gloved's own user namespace
 * (t->ns[0], compared by st_dev and st_ino): the proof above. */
bool glove_server_peerns_proof(const struct glove_server_peerns *t, int fd);

/*
 * Judges the peer of the connected AF_UNIX socket sockfd. Returns 0 when
 * admitted; 1 when its namespace is outside what gloved can see (err is set
 * to the auth.foreign_user_namespace refusal to give unless the proof
 * arrives); -EPERM with err code "auth.foreign_user_namespace" when its user
 * namespace is readable and none of t's; another -errno with err code
 * "auth.peer_unverified" when its user namespace cannot be determined (it
 * exited, its pid is not visible to gloved, or /proc refused). *pid is set to
 * the peer's pid as gloved sees it (0 when unknown).
 */
int glove_server_peerns_check(const struct glove_server_peerns *t, int sockfd, pid_t *pid, struct glove_error *err);

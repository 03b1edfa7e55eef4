/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A descriptor-pinned upstream local-service endpoint (spec
 * architecture.md, "Guest specialized-channel admission": "Upstream parents
 * are descriptor-pinned and endpoint identities are drift-checked around
 * connect"; session-policy.md, "Guest observation channels and Sage guest
 * proposals").
 *
 * The endpoint's parent directory is opened once (O_PATH, no symbolic or
 * magic link in any component) and kept open; the socket is always reached
 * through that descriptor, never through its spelled path again. Its
 * identity (device, inode, owner, mode, link count) is recorded and checked
 * before and after every connect. As the spec says, these checks detect
 * drift and mismatched peers; they do not authenticate an application
 * process: the operator and processes under the service UID are trusted
 * endpoint authority (a same-UID process can replace the socket and put the
 * old inode back between checks).
 *
 * Stable error codes:
 *   services.endpoint_path        socket_path not as config.h requires (-EINVAL)
 *   services.endpoint_parent      the parent cannot be opened, is not a
 *                                 directory, or a component is a symbolic
 *                                 link (-errno: -ENOENT, -ELOOP, -ENOTDIR, ...)
 *   services.endpoint_parent_owner the parent is not owned by the service UID (-EPERM)
 *   services.endpoint_parent_mode the parent has group or other permission bits (-EPERM)
 *   services.endpoint_missing     the socket cannot be found or stat'd (-errno, -ENOENT)
 *   services.endpoint_not_socket  the name is not a Unix socket (a symbolic
 *                                 link is not followed, so it lands here) (-EINVAL)
 *   services.endpoint_owner       the socket is not owned by the service UID (-EPERM)
 *   services.endpoint_mode        the socket has group or other permission bits (-EPERM)
 *   services.endpoint_links       the socket has more than one hard link (-EPERM)
 *   services.endpoint_replaced    the socket or its parent changed since the pin
 *                                 (identity, owner, mode, links) or vanished (-ESTALE)
 *   services.upstream_unavailable connect(2) refused (-ECONNREFUSED, ...)
 *   services.timeout              the deadline passed (-ETIMEDOUT)
 *   services.cancelled            the stop descriptor became readable (-ECANCELED)
 *   services.peer_uid             SO_PEERCRED names another UID (-EPERM)
 *   services.grant_exposes_socket a grant would expose a socket (-EPERM)
 *   services.grant_check          a grant or an ancestor could not be stat'd
 *                                 or opened (fail closed) (-errno)
 *   services.no_memory, services.invalid_argument, services.io (-errno)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* The identity of a file as recorded and compared: st_dev, st_ino, st_uid,
 * st_mode (type and permission bits) and st_nlink. */
struct glove_services_identity {
        uint64_t dev, ino;
        uint32_t uid, mode, nlink;
};

/* True when a and b are equal in every field. */
bool glove_services_identity_equal(const struct glove_services_identity *a, const struct glove_services_identity *b);

struct glove_services_endpoint;

/*
 * Pins the endpoint at socket_path (glove_services_socket_path_valid,
 * config.h) for service_uid:
 *   - opens the parent directory O_PATH|O_DIRECTORY|O_CLOEXEC with
 *     RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS (glove_fd_open_nofollow);
 *     it must be owned by service_uid with no group or other bits
 *     (mode & 077 == 0);
 *   - fstatat(parent, name, AT_SYMLINK_NOFOLLOW): a socket (S_ISSOCK) owned
 *     by service_uid, mode & 077 == 0, one hard link.
 * Records both identities. *out (caller frees with
 * glove_services_endpoint_free) owns the parent descriptor. Errors: the
 * endpoint_* codes above; *out is NULL on failure.
 */
int glove_services_endpoint_pin(const char *socket_path, uid_t service_uid, struct glove_services_endpoint **out,
                                struct glove_error *err);

/*
 * Pins socket_path again (another process, e.g. the session keeper, given
 * the identities the first pin recorded) and requires the same identities:
 * the socket's must equal *sock in every field; the parent's must equal
 * *parent in dev, ino, uid and mode (the parent's link count counts its
 * subdirectories, so it is recorded but not compared). Errors: those of
 * glove_services_endpoint_pin, or services.endpoint_replaced (-ESTALE).
 */
int glove_services_endpoint_reopen(const char *socket_path, const struct glove_services_identity *parent,
                                   const struct glove_services_identity *sock, uid_t service_uid,
                                   struct glove_services_endpoint **out, struct glove_error *err);

/* Closes the parent descriptor and frees ep. NULL: nothing. */
void glove_services_endpoint_free(struct glove_services_endpoint *ep);

/* The pinned parent directory's O_PATH descriptor (borrowed: valid until
 * glove_services_endpoint_free; do not close it). */
int glove_services_endpoint_parent_fd(const struct glove_services_endpoint *ep);

/* The recorded identities (borrowed). */
const struct glove_services_identity *glove_services_endpoint_parent_identity(const struct glove_services_endpoint *ep);
const struct glove_services_identity *glove_services_endpoint_socket_identity(const struct glove_services_endpoint *ep);

/* The socket's file name in its parent (one component), and the full
 * socket_path it was pinned by (both borrowed). */
const char *glove_services_endpoint_socket_name(const struct glove_services_endpoint *ep);
const char *glove_services_endpoint_socket_path(const struct glove_services_endpoint *ep);

/* The service UID the endpoint was pinned for. */
uid_t glove_services_endpoint_uid(const struct glove_services_endpoint *ep);

/*
 * Re-stats the socket through the pinned parent (AT_SYMLINK_NOFOLLOW) and
 * the parent itself, and compares them with the recorded identities (the
 * socket in every field; the parent in owner and mode, its dev and inode
 * being held by the descriptor). Errors: services.endpoint_replaced
 * (-ESTALE) when anything changed or the socket vanished.
 */
int glove_services_endpoint_check(const struct glove_services_endpoint *ep, struct glove_error *err);

/*
 * Connects to the endpoint: opens the socket through the pinned parent
 * (openat O_PATH|O_NOFOLLOW), requires its fstat identity to equal the
 * recorded one (services.endpoint_replaced), makes a
 * socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK) and connects it
 * through "/proc/self/fd/N" of that O_PATH descriptor, so the connect
 * reaches exactly the inode just checked and the address always fits
 * sun_path. -EAGAIN (a full backlog) is retried and -EINPROGRESS waited for
 * with poll(2) until deadline_ms (CLOCK_MONOTONIC, absolute milliseconds,
 * glove_time_monotonic_ms; 0 means no deadline); then re-checks the
 * identity through the parent (services.endpoint_replaced) and requires
 * SO_PEERCRED's uid to be the service UID (services.peer_uid).
 *
 * The connected non-blocking, close-on-exec descriptor is stored in
 * *fd_out (caller closes); -1 on failure. Errors: endpoint_replaced,
 * upstream_unavailable, timeout, peer_uid, io.
 */
int glove_services_endpoint_connect(struct glove_services_endpoint *ep, uint64_t deadline_ms, int *fd_out,
                                    struct glove_error *err);

/*
 * As glove_services_endpoint_connect, and stops with services.cancelled
 * (-ECANCELED) when stop_fd (an eventfd or a pipe's read end; -1: none)
 * becomes readable while it waits.
 */
int glove_services_endpoint_connect_stop(struct glove_services_endpoint *ep, int stop_fd, uint64_t deadline_ms,
                                         int *fd_out, struct glove_error *err);

/* The bound on the ancestor walk of glove_services_grant_check (a path of
 * PATH_MAX bytes has at most 2048 components). */
#define GLOVE_SERVICES_ANCESTORS_MAX 2048

/*
 * Refuses a path grant that would expose an endpoint's socket (spec
 * session-policy.md: "Before any path materialization, Glove compares each
 * resolved grant descriptor with the descriptor-pinned endpoint parent and
 * every actual ancestor descriptor"). grant_fd is any descriptor of the
 * resolved grant source (O_PATH is fine); its (st_dev, st_ino) is compared,
 * for each of eps[0..n), with the socket's recorded identity, the pinned
 * parent's, and every ancestor's, walking the parent descriptor upward with
 * openat(fd, "..", O_PATH|O_DIRECTORY) until ".." is the directory itself
 * (the root; at most GLOVE_SERVICES_ANCESTORS_MAX steps). The comparison is
 * by identity, so a bind mount, a hard link or a spelling with ".." of the
 * same directory is refused all the same; a directory below the parent, or
 * beside it, is allowed. A directory grant's mount points are checked the
 * same way: every mount point at or below the grant's path (its
 * /proc/self/fd link) in this process's /proc/self/mountinfo (at most
 * GLOVE_SERVICES_MOUNTINFO_MAX bytes) is opened without following a final
 * link and compared, so that a bind mount of the socket's directory, of an
 * ancestor or of the socket somewhere inside a granted tree is refused too
 * (the message names that mount point).
 *
 * Returns 0 when no endpoint is exposed. Otherwise -EPERM with
 * services.grant_exposes_socket, and *which (may be NULL) holds the index of
 * the first endpoint exposed. Errors: services.grant_check (-errno) when the
 * grant or an ancestor cannot be stat'd or opened (fail closed),
 * services.invalid_argument.
 */
/* At most this many bytes of /proc/self/mountinfo are read by the grant
 * check (more: services.grant_check, fail closed). */
#define GLOVE_SERVICES_MOUNTINFO_MAX (4u * 1024 * 1024)

int glove_services_grant_check(int grant_fd, const struct glove_services_endpoint *const *eps, size_t n,
                               size_t *which, struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Descriptor-pinned upstream endpoints: pin, reopen, check, connect
 * (glove/services/endpoint.h). The grant check is in grant.c.
 */
#include "glove/services/endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/time.h"
#include "glove/services/config.h"
#include "internal.h"

/* How long a connect that met a full backlog (-EAGAIN) waits before it tries
 * again, in milliseconds. */
#define CONNECT_RETRY_MS 10

struct glove_services_endpoint {
        int parent_fd;
        uid_t uid;
        struct glove_services_identity parent, sock;
        char path[GLOVE_SERVICES_SOCKET_PATH_MAX + 1];
        char name[GLOVE_SERVICES_SOCKET_PATH_MAX + 1];
};

void svc_identity_from_stat(const struct stat *st, struct glove_services_identity *id) {
        *id = (struct glove_services_identity){
                .dev = (uint64_t)st->st_dev,
                .ino = (uint64_t)st->st_ino,
                .uid = (uint32_t)st->st_uid,
                .mode = (uint32_t)st->st_mode,
                .nlink = (uint32_t)st->st_nlink,
        };
}

bool glove_services_identity_equal(const struct glove_services_identity *a, const struct glove_services_identity *b) {
        return a->dev == b->dev && a->ino == b->ino && a->uid == b->uid && a->mode == b->mode && a->nlink == b->nlink;
}

void glove_services_endpoint_free(struct glove_services_endpoint *ep) {
        if (!ep)
                return;
        glove_closep(&ep->parent_fd);
        free(ep);
}

static inline void endpoint_freep(struct glove_services_endpoint **ep) {
        glove_services_endpoint_free(*ep);
}

/* Checks the parent's stat: owned by uid, no group or other bits. */
static int parent_check(const struct stat *st, const char *path, uid_t uid, struct glove_error *err) {
        if (st->st_uid != uid)
                return glove_error_set(err, EPERM, "services.endpoint_parent_owner",
                                       "%s: the socket's directory is owned by uid %u, not the service uid %u", path,
                                       (unsigned)st->st_uid, (unsigned)uid);
        if (st->st_mode & 077)
                return glove_error_set(err, EPERM, "services.endpoint_parent_mode",
                                       "%s: the socket's directory has mode %04o; it must be owner-only (chmod 0700)",
                                       path, (unsigned)(st->st_mode & 07777));
        return 0;
}

/* Checks the socket's stat: a socket owned by uid, owner-only, one link. */
static int socket_check(const struct stat *st, const char *path, uid_t uid, struct glove_error *err) {
        if (!S_ISSOCK(st->st_mode))
                return glove_error_set(err, EINVAL, "services.endpoint_not_socket",
                                       "%s: not a Unix socket (symbolic links are not followed)", path);
        if (st->st_uid != uid)
                return glove_error_set(err, EPERM, "services.endpoint_owner",
                                       "%s: the socket is owned by uid %u, not the service uid %u", path,
                                       (unsigned)st->st_uid, (unsigned)uid);
        if (st->st_mode & 077)
                return glove_error_set(err, EPERM, "services.endpoint_mode",
                                       "%s: the socket has mode %04o; it must be owner-only (0600)", path,
                                       (unsigned)(st->st_mode & 07777));
        if (st->st_nlink != 1)
                return glove_error_set(err, EPERM, "services.endpoint_links", "%s: the socket has %lu hard links, not 1",
                                       path, (unsigned long)st->st_nlink);
        return 0;
}

int glove_services_endpoint_pin(const char *socket_path, uid_t service_uid, struct glove_services_endpoint **out,
                                struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no output pointer");
        *out = NULL;
        if (!glove_services_socket_path_valid(socket_path))
                return glove_error_set(err, EINVAL, "services.endpoint_path",
                                       "%s: not an absolute, lexically normal socket path of at most %d bytes",
                                       socket_path ? socket_path : "(null)", GLOVE_SERVICES_SOCKET_PATH_MAX);
        _cleanup_(endpoint_freep) struct glove_services_endpoint *ep = calloc(1, sizeof(*ep));
        if (!ep)
                return glove_error_set(err, ENOMEM, "services.no_memory", "out of memory");
        ep->parent_fd = -1;
        ep->uid = service_uid;
        size_t len = strlen(socket_path);
        memcpy(ep->path, socket_path, len + 1);
        const char *slash = strrchr(socket_path, '/');
        memcpy(ep->name, slash + 1, strlen(slash + 1) + 1);
        char parent[GLOVE_SERVICES_SOCKET_PATH_MAX + 1];
        size_t plen = slash == socket_path ? 1 : (size_t)(slash - socket_path);
        memcpy(parent, socket_path, plen);
        parent[plen] = '\0';

        struct glove_error perr = { 0 };
        int r = glove_fd_open_nofollow(parent, O_PATH | O_DIRECTORY, &ep->parent_fd, &perr);
        if (r < 0)
                return glove_error_set(err, -r, "services.endpoint_parent", "%s: the socket's directory: %s",
                                       socket_path, perr.message);
        struct stat st;
        if (fstat(ep->parent_fd, &st) < 0)
                return glove_error_set(err, errno, "services.endpoint_parent", "%s: fstat: %s", parent,
                                       strerror(errno));
        if (!S_ISDIR(st.st_mode))
                return glove_error_set(err, ENOTDIR, "services.endpoint_parent", "%s: not a directory", parent);
        if ((r = parent_check(&st, parent, service_uid, err)) < 0)
                return r;
        svc_identity_from_stat(&st, &ep->parent);
        if (fstatat(ep->parent_fd, ep->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return glove_error_set(err, errno, "services.endpoint_missing", "%s: %s", socket_path, strerror(errno));
        if ((r = socket_check(&st, socket_path, service_uid, err)) < 0)
                return r;
        svc_identity_from_stat(&st, &ep->sock);
        *out = TAKE_PTR(ep);
        return 0;
}

int glove_services_endpoint_reopen(const char *socket_path, const struct glove_services_identity *parent,
                                   const struct glove_services_identity *sock, uid_t service_uid,
                                   struct glove_services_endpoint **out, struct glove_error *err) {
        if (!out || !parent || !sock)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no identity or output pointer");
        *out = NULL;
        _cleanup_(endpoint_freep) struct glove_services_endpoint *ep = NULL;
        int r = glove_services_endpoint_pin(socket_path, service_uid, &ep, err);
        if (r < 0)
                return r;
        const struct glove_services_identity *p = &ep->parent;
        if (p->dev != parent->dev || p->ino != parent->ino || p->uid != parent->uid || p->mode != parent->mode)
                return glove_error_set(err, ESTALE, "services.endpoint_replaced",
                                       "%s: the socket's directory is not the one recorded (device, inode, owner "
                                       "or mode differ)",
                                       socket_path);
        if (!glove_services_identity_equal(&ep->sock, sock))
                return glove_error_set(err, ESTALE, "services.endpoint_replaced",
                                       "%s: the socket is not the one recorded (device, inode, owner, mode or "
                                       "links differ)",
                                       socket_path);
        *out = TAKE_PTR(ep);
        return 0;
}

int glove_services_endpoint_parent_fd(const struct glove_services_endpoint *ep) {
        return ep->parent_fd;
}

const struct glove_services_identity *glove_services_endpoint_parent_identity(const struct glove_services_endpoint *ep) {
        return &ep->parent;
}

const struct glove_services_identity *glove_services_endpoint_socket_identity(const struct glove_services_endpoint *ep) {
        return &ep->sock;
}

const char *glove_services_endpoint_socket_name(const struct glove_services_endpoint *ep) {
        return ep->name;
}

const char *glove_services_endpoint_socket_path(const struct glove_services_endpoint *ep) {
        return ep->path;
}

uid_t glove_services_endpoint_uid(const struct glove_services_endpoint *ep) {
        return ep->uid;
}

static int replaced(const struct glove_services_endpoint *ep, const char *what, struct glove_error *err) {
        return glove_error_set(err, ESTALE, "services.endpoint_replaced", "%s: %s since it was pinned", ep->path, what);
}

/* The parent's owner and mode are still those recorded. */
static int parent_recheck(const struct glove_services_endpoint *ep, struct glove_error *err) {
        struct stat st;
        if (fstat(ep->parent_fd, &st) < 0)
                return glove_error_set(err, errno, "services.io", "%s: fstat of the socket's directory: %s", ep->path,
                                       strerror(errno));
        if ((uint32_t)st.st_uid != ep->parent.uid || (uint32_t)st.st_mode != ep->parent.mode)
                return replaced(ep, "the socket's directory changed owner or mode", err);
        return 0;
}

int glove_services_endpoint_check(const struct glove_services_endpoint *ep, struct glove_error *err) {
        if (!ep)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no endpoint");
        int r = parent_recheck(ep, err);
        if (r < 0)
                return r;
        struct stat st;
        if (fstatat(ep->parent_fd, ep->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        return replaced(ep, "the socket vanished", err);
                return glove_error_set(err, errno, "services.io", "%s: %s", ep->path, strerror(errno));
        }
        struct glove_services_identity id;
        svc_identity_from_stat(&st, &id);
        if (!glove_services_identity_equal(&id, &ep->sock))
                return replaced(ep, "the socket was replaced or changed (device, inode, owner, mode or links)", err);
        return 0;
}

/* Opens the socket O_PATH through the parent and checks its identity. */
static int open_checked(const struct glove_services_endpoint *ep, int *out, struct glove_error *err) {
        int r = parent_recheck(ep, err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = openat(ep->parent_fd, ep->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return replaced(ep, "the socket vanished", err);
                return glove_error_set(err, errno, "services.io", "%s: %s", ep->path, strerror(errno));
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "services.io", "%s: fstat: %s", ep->path, strerror(errno));
        struct glove_services_identity id;
        svc_identity_from_stat(&st, &id);
        if (!glove_services_identity_equal(&id, &ep->sock))
                return replaced(ep, "the socket was replaced or changed (device, inode, owner, mode or links)", err);
        *out = TAKE_FD(fd);
        return 0;
}

/* connect(2) with -EAGAIN retried and -EINPROGRESS waited for. */
static int connect_wait(const struct glove_services_endpoint *ep, int sock, const struct sockaddr_un *sa,
                        int stop_fd, uint64_t deadline_ms, struct glove_error *err) {
        for (;;) {
                if (connect(sock, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
                        return 0;
                int e = errno;
                if (e == EINTR)
                        continue;
                if (e == EINPROGRESS) {
                        int r = svc_wait(sock, POLLOUT, stop_fd, deadline_ms, "connecting to the upstream", err);
                        if (r < 0)
                                return r;
                        int soerr = 0;
                        socklen_t sl = sizeof(soerr);
                        if (getsockopt(sock, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
                                return glove_error_set(err, errno, "services.io", "%s: SO_ERROR: %s", ep->path,
                                                       strerror(errno));
                        if (soerr == 0)
                                return 0;
                        e = soerr;
                } else if (e == EAGAIN) {
                        uint64_t now = glove_time_monotonic_ms();
                        if (deadline_ms && now >= deadline_ms)
                                return glove_error_set(err, ETIMEDOUT, "services.timeout",
                                                       "%s: the upstream's backlog stayed full until the deadline",
                                                       ep->path);
                        uint64_t until = now + CONNECT_RETRY_MS;
                        if (deadline_ms && until > deadline_ms)
                                until = deadline_ms;
                        int r = svc_wait(-1, 0, stop_fd, until, "connecting to the upstream", NULL);
                        if (r == -ECANCELED)
                                return glove_error_set(err, ECANCELED, "services.cancelled",
                                                       "%s: cancelled while connecting", ep->path);
                        if (r < 0 && r != -ETIMEDOUT)
                                return glove_error_set(err, -r, "services.io", "%s: poll: %s", ep->path,
                                                       strerror(-r));
                        continue;
                }
                return glove_error_set(err, e, "services.upstream_unavailable", "%s: connect: %s", ep->path,
                                       strerror(e));
        }
}

int glove_services_endpoint_connect_stop(struct glove_services_endpoint *ep, int stop_fd, uint64_t deadline_ms,
                                         int *fd_out, struct glove_error *err) {
        if (!fd_out || !ep)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no endpoint or output pointer");
        *fd_out = -1;
        if (deadline_ms && glove_time_monotonic_ms() >= deadline_ms)
                return glove_error_set(err, ETIMEDOUT, "services.timeout", "%s: the deadline passed before connect",
                                       ep->path);
        _cleanup_close_ int opath = -1;
        int r = open_checked(ep, &opath, err);
        if (r < 0)
                return r;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", opath);
        if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
                return glove_error_set(err, ENAMETOOLONG, "services.io", "descriptor path too long");
        _cleanup_close_ int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (sock < 0)
                return glove_error_set(err, errno, "services.io", "socket: %s", strerror(errno));
        if ((r = connect_wait(ep, sock, &sa, stop_fd, deadline_ms, err)) < 0)
                return r;
        if ((r = glove_services_endpoint_check(ep, err)) < 0)
                return r;
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
                return glove_error_set(err, errno, "services.io", "%s: SO_PEERCRED: %s", ep->path, strerror(errno));
        if (cred.uid != ep->uid)
                return glove_error_set(err, EPERM, "services.peer_uid",
                                       "%s: the upstream peer runs as uid %u, not the service uid %u", ep->path,
                                       (unsigned)cred.uid, (unsigned)ep->uid);
        *fd_out = TAKE_FD(sock);
        return 0;
}

int glove_services_endpoint_connect(struct glove_services_endpoint *ep, uint64_t deadline_ms, int *fd_out,
                                    struct glove_error *err) {
        return glove_services_endpoint_connect_stop(ep, -1, deadline_ms, fd_out, err);
}

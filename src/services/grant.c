/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A path grant must not expose an endpoint's socket
 * (glove/services/endpoint.h, glove_services_grant_check; spec
 * session-policy.md, "Guest observation channels and Sage guest
 * proposals"): identity comparison with the socket, its pinned parent and
 * every ancestor of the parent.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/services/endpoint.h"
#include "internal.h"

static bool same_file(const struct stat *a, uint64_t dev, uint64_t ino) {
        return (uint64_t)a->st_dev == dev && (uint64_t)a->st_ino == ino;
}

/* 0 when the grant g is none of ep's socket, parent or ancestors; 1 when it
 * is one (*what says which); -errno on a failed walk. */
static int exposes(const struct stat *g, const struct glove_services_endpoint *ep, const char **what,
                   struct glove_error *err) {
        const struct glove_services_identity *sock = glove_services_endpoint_socket_identity(ep);
        const char *path = glove_services_endpoint_socket_path(ep);
        if (same_file(g, sock->dev, sock->ino)) {
                *what = "the socket itself";
                return 1;
        }
        _cleanup_close_ int cur = fcntl(glove_services_endpoint_parent_fd(ep), F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return glove_error_set(err, errno, "services.grant_check", "%s: dup of the socket's directory: %s",
                                       path, strerror(errno));
        struct stat st;
        if (fstat(cur, &st) < 0)
                return glove_error_set(err, errno, "services.grant_check", "%s: fstat of the socket's directory: %s",
                                       path, strerror(errno));
        for (size_t step = 0; step < GLOVE_SERVICES_ANCESTORS_MAX; step++) {
                if (same_file(g, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
                        *what = step == 0 ? "the socket's directory" : "an ancestor of the socket's directory";
                        return 1;
                }
                _cleanup_close_ int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (up < 0)
                        return glove_error_set(err, errno, "services.grant_check",
                                               "%s: opening the parent of an ancestor (%zu levels up): %s", path,
                                               step, strerror(errno));
                struct stat ust;
                if (fstat(up, &ust) < 0)
                        return glove_error_set(err, errno, "services.grant_check", "%s: fstat of an ancestor: %s",
                                               path, strerror(errno));
                if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
                        return 0; /* ".." of the root is the root */
                glove_closep(&cur);
                cur = TAKE_FD(up);
                st = ust;
        }
        return glove_error_set(err, ELOOP, "services.grant_check", "%s: more than %d ancestors", path,
                               GLOVE_SERVICES_ANCESTORS_MAX);
}

int glove_services_grant_check(int grant_fd, const struct glove_services_endpoint *const *eps, size_t n,
                               size_t *which, struct glove_error *err) {
        if (grant_fd < 0 || (n > 0 && !eps))
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no grant descriptor or endpoints");
        struct stat g;
        if (fstat(grant_fd, &g) < 0)
                return glove_error_set(err, errno, "services.grant_check", "fstat of the grant: %s", strerror(errno));
        for (size_t i = 0; i < n; i++) {
                if (!eps[i])
                        return glove_error_set(err, EINVAL, "services.invalid_argument", "endpoint %zu is NULL", i);
                const char *what = NULL;
                int r = exposes(&g, eps[i], &what, err);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (which)
                                *which = i;
                        return glove_error_set(err, EPERM, "services.grant_exposes_socket",
                                               "the grant is %s of the local service %s (compared by device and "
                                               "inode): it would expose the socket",
                                               what, glove_services_endpoint_socket_path(eps[i]));
                }
        }
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A path grant must not expose an endpoint's socket
 * (glove/services/endpoint.h, glove_services_grant_check; spec
 * session-policy.md, "Guest observation channels and Sage guest
 * proposals"): identity comparison with the socket, its pinned parent and
 * every ancestor of the parent, of the grant and of every mount point
 * inside it.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
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

/* The grant g against every endpoint: 0, or -EPERM with the code. */
static int check_one(const struct stat *g, const char *where, const struct glove_services_endpoint *const *eps,
                     size_t n, size_t *which, struct glove_error *err) {
        for (size_t i = 0; i < n; i++) {
                const char *what = NULL;
                int r = exposes(g, eps[i], &what, err);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (which)
                                *which = i;
                        return glove_error_set(err, EPERM, "services.grant_exposes_socket",
                                               "%s%s is %s of the local service %s (compared by device and "
                                               "inode): it would expose the socket",
                                               where ? "a mount inside the grant, " : "the grant", where ? where : "",
                                               what, glove_services_endpoint_socket_path(eps[i]));
                }
        }
        return 0;
}

/* Unescapes mountinfo's octal escapes (\040 and the like) of s in place. */
static void unescape(char *s) {
        char *w = s;
        for (char *r = s; *r; r++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
                    r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 3;
                } else {
                        *w++ = *r;
                }
        }
        *w = '\0';
}

/*
 * A mount inside a granted tree shows whatever it mounts: every mount point
 * at or below the grant's path (this process's mount table,
 * /proc/self/mountinfo) is checked as the grant itself is, so that a bind
 * mount of the socket's directory (or of an ancestor, or of the socket)
 * somewhere inside a granted directory is refused too.
 */
static int mounts_below(int grant_fd, const struct glove_services_endpoint *const *eps, size_t n, size_t *which,
                        struct glove_error *err) {
        char link[64], gpath[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", grant_fd);
        ssize_t gl = readlink(link, gpath, sizeof(gpath) - 1);
        if (gl <= 0 || gpath[0] != '/')
                return glove_error_set(err, gl < 0 ? errno : EINVAL, "services.grant_check",
                                       "the grant's path cannot be read: %s", gl < 0 ? strerror(errno) : "not absolute");
        gpath[gl] = '\0';
        if (gl > 1 && gpath[gl - 1] == '/')
                gpath[--gl] = '\0';
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = glove_file_read_bounded(AT_FDCWD, "/proc/self/mountinfo", 0, GLOVE_SERVICES_MOUNTINFO_MAX, &buf, &len,
                                        NULL);
        if (r < 0)
                return glove_error_set(err, -r, "services.grant_check", "/proc/self/mountinfo: %s", strerror(-r));
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                /* ID PARENT MAJ:MIN ROOT MOUNT_POINT ... */
                char *f = line;
                for (int k = 0; k < 4 && f; k++) {
                        f = strchr(f, ' ');
                        if (f)
                                f++;
                }
                if (!f)
                        continue;
                char *end = strchr(f, ' ');
                if (end)
                        *end = '\0';
                unescape(f);
                size_t fl = strlen(f);
                bool below = strcmp(gpath, "/") == 0 ||
                             (fl >= (size_t)gl && strncmp(f, gpath, (size_t)gl) == 0 && (f[gl] == '\0' || f[gl] == '/'));
                if (!below)
                        continue;
                _cleanup_close_ int mfd = open(f, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (mfd < 0 || fstat(mfd, &st) < 0)
                        continue; /* gone, or hidden under another mount: not what the grant shows */
                r = check_one(&st, f, eps, n, which, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int glove_services_grant_check(int grant_fd, const struct glove_services_endpoint *const *eps, size_t n,
                               size_t *which, struct glove_error *err) {
        if (grant_fd < 0 || (n > 0 && !eps))
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no grant descriptor or endpoints");
        struct stat g;
        if (fstat(grant_fd, &g) < 0)
                return glove_error_set(err, errno, "services.grant_check", "fstat of the grant: %s", strerror(errno));
        for (size_t i = 0; i < n; i++)
                if (!eps[i])
                        return glove_error_set(err, EINVAL, "services.invalid_argument", "endpoint %zu is NULL", i);
        int r = check_one(&g, NULL, eps, n, which, err);
        if (r == 0 && n > 0 && S_ISDIR(g.st_mode))
                r = mounts_below(grant_fd, eps, n, which, err);
        return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The control socket's peer user namespace check (see peerns.h). */
#include "glove/server/peerns.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/cleanup.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef PIDFD_GET_USER_NAMESPACE
#define PIDFD_GET_USER_NAMESPACE _IO(0xFF, 9)
#endif

static int ns_id(int fd, struct glove_server_peerns_id *id) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        return 0;
}

bool glove_server_peerns_admits(const struct glove_server_peerns *t, const struct glove_server_peerns_id *id) {
        for (size_t i = 0; i < t->n; i++)
                if (t->ns[i].dev == id->dev && t->ns[i].ino == id->ino)
                        return true;
        return false;
}

/* Adds the namespace of fd (borrowed) and every one NS_GET_PARENT shows
 * above it, until EPERM (the top of what gloved may see), a namespace
 * already known, or the bound. */
static void add_chain(struct glove_server_peerns *t, int fd) {
        _cleanup_close_ int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        while (cur >= 0 && t->n < GLOVE_SERVER_PEERNS_MAX) {
                struct glove_server_peerns_id id;
                if (ns_id(cur, &id) < 0 || glove_server_peerns_admits(t, &id))
                        return;
                t->ns[t->n++] = id;
                int parent = ioctl(cur, NS_GET_PARENT);
                close(cur);
                cur = parent; /* -1 (EPERM at the top): the loop ends */
        }
}

int glove_server_peerns_init(struct glove_server_peerns *t, struct glove_error *err) {
        memset(t, 0, sizeof(*t));
        _cleanup_close_ int own = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
        if (own < 0)
                return glove_error_set(err, errno, "server.user_namespace", "/proc/self/ns/user: %s", strerror(errno));
        add_chain(t, own);
        if (t->n == 0)
                return glove_error_set(err, EIO, "server.user_namespace", "/proc/self/ns/user cannot be identified");
        return 0;
}

/* The peer's pid as gloved's /proc sees it, from the pidfd's fdinfo; 0 when
 * it is not visible there, -1 when the process exited. */
static pid_t pidfd_pid(int pidfd) {
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        const char *p = strstr(buf, "\nPid:");
        if (!p)
                return 0;
        long v = strtol(p + 5, NULL, 10);
        return v < 0 ? -1 : (pid_t)v;
}

static int unverified(struct glove_error *err, int r, pid_t pid, const char *why) {
        return glove_error_set(err, r, "auth.peer_unverified",
                               "the user namespace of the peer (pid %d) cannot be determined: %s", (int)pid, why);
}

bool glove_server_peerns_proof(const struct glove_server_peerns *t, int fd) {
        struct glove_server_peerns_id id;
        return t->n > 0 && ns_id(fd, &id) == 0 && id.dev == t->ns[0].dev && id.ino == t->ns[0].ino;
}

int glove_server_peerns_check(const struct glove_server_peerns *t, int sockfd, pid_t *pid, struct glove_error *err) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        *pid = 0;
        if (getsockopt(sockfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
                return unverified(err, EIO, 0, "SO_PEERCRED failed");
        *pid = cred.pid;
        int pfd = -1;
        len = sizeof(pfd);
        if (getsockopt(sockfd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) < 0 || len != sizeof(pfd))
                pfd = -1;
        /* Before Linux 6.5: a pidfd of the pid SO_PEERCRED recorded (see
         * peerns.h for the window this leaves). */
        if (pfd < 0 && cred.pid > 0)
                pfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
        _cleanup_close_ int pidfd = pfd;
        if (pidfd < 0)
                return unverified(err, ESRCH, cred.pid, "no pidfd of the peer (it exited, or its pid is not visible)");
        _cleanup_close_ int nsfd = ioctl(pidfd, PIDFD_GET_USER_NAMESPACE, 0);
        if (nsfd < 0 && (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)) {
                /* Before Linux 6.11: through /proc, then the pidfd says
                 * whether the process still lives (so the pid was never
                 * reused in between). */
                pid_t p = pidfd_pid(pidfd);
                if (p <= 0)
                        p = cred.pid;
                if (p <= 0)
                        return unverified(err, ESRCH, cred.pid, "its pid is not visible to gloved");
                *pid = p;
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)p);
                nsfd = open(path, O_RDONLY | O_CLOEXEC);
                if (nsfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 && errno == ESRCH)
                        return unverified(err, ESRCH, p, "it exited");
        }
        if (nsfd < 0 && (errno == EACCES || errno == EPERM))
                /* The kernel lets gloved open the namespace of a process in
                 * its own user namespace or a descendant: this one is above
                 * or beside it. Only the proof tells which. */
                return glove_error_set(err, EPERM, "auth.foreign_user_namespace",
                                       "the peer (pid %d) is in a user namespace outside gloved's, and presented no "
                                       "descriptor of gloved's user namespace (only an ancestor's process can open one)",
                                       (int)*pid),
                       1;
        if (nsfd < 0)
                return unverified(err, errno, *pid, strerror(errno));
        struct glove_server_peerns_id id;
        int r = ns_id(nsfd, &id);
        if (r < 0)
                return unverified(err, -r, *pid, strerror(-r));
        if (!glove_server_peerns_admits(t, &id))
                return glove_error_set(err, EPERM, "auth.foreign_user_namespace",
                                       "the peer (pid %d) is in user namespace %llu, which is neither gloved's own nor "
                                       "one of its ancestors (a sandbox?)",
                                       (int)*pid, (unsigned long long)id.ino);
        return 0;
}

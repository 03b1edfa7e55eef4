/* SPDX-License-Identifier: Apache-2.0 */
/* The namespace-local egress helper (include/glove/net/helper.h). */
#include "glove/net/helper.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/cleanup.h"

/* Pause after a transient failure, milliseconds. */
#define HELPER_RETRY_MS 10

int glove_net_loopback_up(struct glove_error *err) {
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return glove_error_set(err, errno, "egress.loopback", "socket for the loopback ioctl: %s",
                                       glove_errno_text(errno));
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return glove_error_set(err, errno, "egress.loopback", "reading the flags of lo: %s",
                                       glove_errno_text(errno));
        if (ifr.ifr_flags & IFF_UP)
                return 0;
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                return glove_error_set(err, errno, "egress.loopback", "bringing lo up: %s", glove_errno_text(errno));
        return 0;
}

int glove_net_listener_open(uint16_t port, int *out_fd, uint16_t *out_port,
                            struct glove_error *err) {
        *out_fd = -1;
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return glove_error_set(err, errno, "egress.listen", "socket: %s", glove_errno_text(errno));
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
                return glove_error_set(err, errno, "egress.listen", "SO_REUSEADDR: %s", glove_errno_text(errno));
        struct sockaddr_in sin = {
                .sin_family = AF_INET,
                .sin_port = htons(port),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
                return glove_error_set(err, errno, "egress.listen", "bind 127.0.0.1:%u: %s", port,
                                       glove_errno_text(errno));
        if (listen(fd, GLOVE_NET_LISTENER_BACKLOG) < 0)
                return glove_error_set(err, errno, "egress.listen", "listen: %s", glove_errno_text(errno));
        socklen_t len = sizeof(sin);
        if (getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
                return glove_error_set(err, errno, "egress.listen", "getsockname: %s", glove_errno_text(errno));
        if (out_port)
                *out_port = ntohs(sin.sin_port);
        *out_fd = TAKE_FD(fd);
        return 0;
}

/* Sends fd over unix_fd as one SCM_RIGHTS message. Returns 0 or -errno. */
static int send_fd(int unix_fd, int fd) {
        char byte = 'c';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        memset(&control, 0, sizeof(control));
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
        for (;;) {
                ssize_t n = sendmsg(unix_fd, &msg, MSG_NOSIGNAL);
                if (n == 1)
                        return 0;
                if (n < 0 && errno == EINTR)
                        continue;
                return n < 0 ? -errno : -EIO;
        }
}

static bool transient(int e) {
        return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM || e == ETOOMANYREFS;
}

int glove_net_listener_run(int unix_fd, int listen_fd, struct glove_error *err) {
        int fl = fcntl(listen_fd, F_GETFL);
        if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return glove_error_set(err, errno, "egress.helper", "listening socket: %s", glove_errno_text(errno));
        int pause_ms = -1;
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = unix_fd, .events = 0 },
                        { .fd = listen_fd, .events = POLLIN },
                };
                /* After a transient failure, wait without watching the
                 * listening socket (it may stay readable). */
                int r = poll(p, pause_ms >= 0 ? 1 : 2, pause_ms);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return glove_error_set(err, errno, "egress.helper", "poll: %s", glove_errno_text(errno));
                }
                pause_ms = -1;
                if (p[0].revents & (POLLHUP | POLLERR))
                        return 0; /* the relay is gone: the run is over */
                if (p[0].revents & POLLNVAL)
                        return glove_error_set(err, EBADF, "egress.helper", "the relay channel is not open");
                if (p[1].revents & POLLNVAL)
                        return glove_error_set(err, EBADF, "egress.helper", "the listening socket is not open");
                if (!(p[1].revents & (POLLIN | POLLERR | POLLHUP)))
                        continue;
                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0) {
                        int e = errno;
                        if (e == EINTR || e == EAGAIN || e == ECONNABORTED || e == EPROTO || e == EPERM)
                                continue;
                        if (transient(e)) {
                                pause_ms = HELPER_RETRY_MS;
                                continue;
                        }
                        return glove_error_set(err, e, "egress.helper", "accept: %s", glove_errno_text(e));
                }
                r = send_fd(unix_fd, fd);
                (void)close(fd);
                if (r == -EPIPE || r == -ECONNRESET || r == -ECONNREFUSED || r == -ENOTCONN)
                        return 0;
                if (r < 0 && transient(-r)) {
                        pause_ms = HELPER_RETRY_MS;
                        continue;
                }
                if (r < 0)
                        return glove_error_set(err, -r, "egress.helper", "passing a connection to the relay: %s",
                                               glove_errno_text(-r));
        }
}

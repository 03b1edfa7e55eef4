/* SPDX-License-Identifier: Apache-2.0 */
/* The guest-channel transport: socket checks at adoption and framed I/O
 * through services' frames (see glove/channel/transport.h). */
#include "glove/channel/transport.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/cleanup.h"

struct glove_channel_transport {
        int fd;
        struct ucred peer;
        bool poisoned;
};

static int check_socket(int fd, uid_t peer_uid, struct ucred *peer, struct glove_error *err) {
        int v = 0;
        socklen_t l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0)
                return glove_error_set(err, EAFNOSUPPORT, "channel.transport_family",
                                       "the guest channel is not a socket: %s", glove_errno_text(errno));
        if (v != AF_UNIX)
                return glove_error_set(err, EAFNOSUPPORT, "channel.transport_family",
                                       "the guest channel is not an AF_UNIX socket (family %d)", v);
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0 || v != SOCK_STREAM)
                return glove_error_set(err, EPROTOTYPE, "channel.transport_type",
                                       "the guest channel is not a SOCK_STREAM socket");
        l = sizeof(*peer);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, peer, &l) < 0 || l != sizeof(*peer))
                return glove_error_set(err, EPERM, "channel.transport_peer_uid",
                                       "the guest channel has no peer credentials");
        if (peer->uid != peer_uid)
                return glove_error_set(err, EPERM, "channel.transport_peer_uid",
                                       "the guest channel's peer has uid %u, not %u", (unsigned)peer->uid,
                                       (unsigned)peer_uid);
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return glove_error_set(err, errno, "channel.transport_setup", "fcntl: %s", glove_errno_text(errno));
        return 0;
}

int glove_channel_transport_new(int fd, uid_t peer_uid, struct glove_channel_transport **out,
                                struct glove_error *err) {
        _cleanup_close_ int owned = fd;
        if (fd < 0 || !out)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "no descriptor for the transport");
        *out = NULL;
        struct ucred peer = { 0 };
        int r = check_socket(fd, peer_uid, &peer, err);
        if (r < 0)
                return r;
        struct glove_channel_transport *t = calloc(1, sizeof(*t));
        if (!t)
                return glove_error_set(err, ENOMEM, "channel.no_memory", "out of memory for a transport");
        t->fd = TAKE_FD(owned);
        t->peer = peer;
        *out = t;
        return 0;
}

static int usable(struct glove_channel_transport *t, uint64_t deadline_ms, const void *buf, struct glove_error *err) {
        if (!t || !buf || deadline_ms == 0)
                return glove_error_set(err, EINVAL, "channel.invalid_argument",
                                       "a transport call needs a buffer and a deadline");
        if (t->poisoned)
                return glove_error_set(err, EPIPE, "channel.transport_poisoned",
                                       "an earlier receive or send on this guest channel failed");
        return 0;
}

int glove_channel_transport_recv(struct glove_channel_transport *t, uint64_t deadline_ms, int stop_fd, uint8_t *buf,
                                 size_t *len, struct glove_error *err) {
        int r = usable(t, deadline_ms, buf, err);
        if (r == 0 && !len)
                r = glove_error_set(err, EINVAL, "channel.invalid_argument", "no place for the frame length");
        if (r < 0)
                return r;
        r = glove_services_frame_read(t->fd, stop_fd, deadline_ms, buf, len, err);
        if (r < 0)
                t->poisoned = true;
        return r;
}

int glove_channel_transport_send(struct glove_channel_transport *t, uint64_t deadline_ms, int stop_fd,
                                 const uint8_t *buf, size_t len, struct glove_error *err) {
        int r = usable(t, deadline_ms, buf, err);
        if (r < 0)
                return r;
        r = glove_services_frame_write(t->fd, stop_fd, deadline_ms, buf, len, err);
        if (r < 0)
                t->poisoned = true;
        return r;
}

pid_t glove_channel_transport_peer_pid(const struct glove_channel_transport *t) {
        return t ? t->peer.pid : 0;
}

uid_t glove_channel_transport_peer_uid(const struct glove_channel_transport *t) {
        return t ? t->peer.uid : (uid_t)-1;
}

bool glove_channel_transport_poisoned(const struct glove_channel_transport *t) {
        return !t || t->poisoned;
}

void glove_channel_transport_free(struct glove_channel_transport *t) {
        if (!t)
                return;
        if (t->fd >= 0)
                close(t->fd);
        free(t);
}

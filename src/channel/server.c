/* SPDX-License-Identifier: Apache-2.0 */
/* The observation server: the accept loop with its deadline window and
 * backoff, and the one-exchange connection handling (see
 * glove/channel/server.h). */
#include "glove/channel/server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/channel/transport.h"

struct glove_channel_server {
        struct glove_channel_server_config c;
        int listen_fd;
        int stop_fd;
        pthread_t worker;
        bool started;
        uint8_t *buf; /* GLOVE_CHANNEL_FRAME_MAX bytes, worker only */
        _Atomic uint64_t accepted, answered_ok, answered_err, dropped, accept_errors;
};

static bool stopped(const struct glove_channel_server *s) {
        struct pollfd p = { .fd = s->stop_fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

static int remaining_ms(uint64_t deadline) {
        uint64_t now = glove_time_monotonic_ms();
        if (now >= deadline)
                return 0;
        uint64_t left = deadline - now;
        return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Waits for the stop token for at most ms; true when stopped. */
static bool sleep_stoppable(const struct glove_channel_server *s, int ms) {
        struct pollfd p = { .fd = s->stop_fd, .events = POLLIN };
        return poll(&p, 1, ms) > 0;
}

/* One accept window: 1 and *fd with a connection, 0 when the deadline
 * passed, -ECANCELED on stop. */
static int accept_one(struct glove_channel_server *s, uint64_t deadline, int *fd) {
        unsigned backoff = GLOVE_CHANNEL_SERVER_BACKOFF_MIN_MS;
        for (;;) {
                if (stopped(s))
                        return -ECANCELED;
                int left = remaining_ms(deadline);
                if (left == 0)
                        return 0;
                int c = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c >= 0) {
                        *fd = c;
                        return 1;
                }
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                        struct pollfd p[2] = { { .fd = s->stop_fd, .events = POLLIN },
                                               { .fd = s->listen_fd, .events = POLLIN } };
                        (void)poll(p, 2, left);
                        continue;
                }
                atomic_fetch_add(&s->accept_errors, 1);
                if (errno == EINTR || errno == ECONNABORTED)
                        continue;
                /* EMFILE, ENFILE, ENOBUFS, ENOMEM and anything else: back
                 * off, stop-aware, within the same deadline. */
                int wait = (int)backoff < left ? (int)backoff : left;
                if (sleep_stoppable(s, wait))
                        return -ECANCELED;
                backoff = backoff * 2 > GLOVE_CHANNEL_SERVER_BACKOFF_MAX_MS ? GLOVE_CHANNEL_SERVER_BACKOFF_MAX_MS
                                                                             : backoff * 2;
        }
}

/* True when the exchange may go on: not stopped, deadline not passed. */
static bool may_continue(const struct glove_channel_server *s, uint64_t deadline) {
        return !stopped(s) && glove_time_monotonic_ms() < deadline;
}

static char *response(int rc, const struct glove_channel_admission *a, const char *code, size_t *len) {
        _cleanup_json_ json_t *o = NULL;
        if (rc == 0)
                o = json_pack("{s:s,s:b,s:b,s:I}", "digest", a->digest, "duplicate", a->duplicate, "ok", 1, "seq",
                              (json_int_t)a->seq);
        else
                o = json_pack("{s:s,s:b}", "code", code ? code : "channel.internal", "ok", 0);
        char *s = NULL;
        if (!o || glove_json_encode_canonical(o, &s, len, NULL) < 0)
                return NULL;
        return s;
}

static void serve(struct glove_channel_server *s, int fd) {
        uint64_t deadline = glove_time_monotonic_ms() + s->c.io_timeout_ms;
        struct glove_error err = { 0 };
        _cleanup_channel_transport_ struct glove_channel_transport *t = NULL;
        size_t len = 0;
        if (glove_channel_transport_new(fd, s->c.peer_uid, &t, &err) < 0 ||
            glove_channel_transport_recv(t, deadline, s->stop_fd, s->buf, &len, &err) < 0 ||
            !may_continue(s, deadline)) {
                atomic_fetch_add(&s->dropped, 1);
                return;
        }
        struct glove_channel_admission a = { 0 };
        int rc;
        struct glove_channel_registry *r = s->c.resolve(s->c.ctx, glove_channel_transport_peer_pid(t));
        if (!r) {
                rc = glove_error_set(&err, EPERM, "channel.unknown_peer", "no session for this peer");
        } else {
                int64_t now = s->c.now_ms ? s->c.now_ms() : glove_time_realtime_ms();
                rc = glove_channel_registry_enqueue(r, s->buf, len, now, &a, &err);
                if (s->c.unresolve)
                        s->c.unresolve(s->c.ctx, r);
        }
        size_t rlen = 0;
        _cleanup_free_ char *resp = response(rc, &a, err.code, &rlen);
        if (!resp || !may_continue(s, deadline) ||
            glove_channel_transport_send(t, deadline, s->stop_fd, (const uint8_t *)resp, rlen, NULL) < 0) {
                atomic_fetch_add(&s->dropped, 1);
                return;
        }
        atomic_fetch_add(rc == 0 ? &s->answered_ok : &s->answered_err, 1);
}

static void *worker_main(void *arg) {
        struct glove_channel_server *s = arg;
        for (;;) {
                uint64_t deadline = glove_time_monotonic_ms() + s->c.accept_window_ms;
                int fd = -1;
                int r = accept_one(s, deadline, &fd);
                if (r < 0)
                        break;
                if (r == 0)
                        continue;
                atomic_fetch_add(&s->accepted, 1);
                serve(s, fd);
        }
        return NULL;
}

static int check_listener(int fd, struct glove_error *err) {
        int domain = 0, type = 0, listening = 0;
        socklen_t l1 = sizeof(domain), l2 = sizeof(type), l3 = sizeof(listening);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l1) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l2) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l3) < 0 || domain != AF_UNIX ||
            type != SOCK_STREAM || !listening)
                return glove_error_set(err, EINVAL, "channel.server_listen",
                                       "the observation server needs a listening AF_UNIX stream socket");
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return glove_error_set(err, errno, "channel.server_start", "fcntl: %s", glove_errno_text(errno));
        return 0;
}

static int check_config(const struct glove_channel_server_config *c, struct glove_error *err) {
        if (!c || c->listen_fd < 0 || !c->resolve)
                return glove_error_set(err, EINVAL, "channel.invalid_argument",
                                       "the observation server needs a listening socket and a resolve function");
        if (c->accept_window_ms < 1 || c->accept_window_ms > GLOVE_CHANNEL_SERVER_WINDOW_MAX_MS ||
            c->io_timeout_ms < 1 || c->io_timeout_ms > GLOVE_CHANNEL_SERVER_IO_MAX_MS)
                return glove_error_set(err, EINVAL, "channel.invalid_argument",
                                       "accept_window_ms %u (allowed 1..%u), io_timeout_ms %u (allowed 1..%u)",
                                       c->accept_window_ms, GLOVE_CHANNEL_SERVER_WINDOW_MAX_MS, c->io_timeout_ms,
                                       GLOVE_CHANNEL_SERVER_IO_MAX_MS);
        return check_listener(c->listen_fd, err);
}

static void server_free(struct glove_channel_server *s) {
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->stop_fd >= 0)
                close(s->stop_fd);
        free(s->buf);
        free(s);
}

int glove_channel_server_start(const struct glove_channel_server_config *c, struct glove_channel_server **out,
                               struct glove_error *err) {
        _cleanup_close_ int lfd = c ? c->listen_fd : -1;
        if (!out)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "no place for the server");
        *out = NULL;
        int r = check_config(c, err);
        if (r < 0)
                return r;
        struct glove_channel_server *s = calloc(1, sizeof(*s));
        if (!s)
                return glove_error_set(err, ENOMEM, "channel.no_memory", "out of memory for the server");
        s->c = *c;
        s->listen_fd = TAKE_FD(lfd);
        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->stop_fd < 0) {
                r = glove_error_set(err, errno, "channel.server_start", "eventfd: %s", glove_errno_text(errno));
                goto fail;
        }
        if (!(s->buf = malloc(GLOVE_CHANNEL_FRAME_MAX))) {
                r = glove_error_set(err, ENOMEM, "channel.no_memory", "out of memory for the server");
                goto fail;
        }
        /* The worker takes no signals: the process's handlers stay with its
         * own threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int e = pthread_create(&s->worker, NULL, worker_main, s);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0) {
                r = glove_error_set(err, e, "channel.server_start", "starting the worker: %s", glove_errno_text(e));
                goto fail;
        }
        s->started = true;
        *out = s;
        return 0;
fail:
        server_free(s);
        return r;
}

void glove_channel_server_stats(const struct glove_channel_server *s, struct glove_channel_server_stats *out) {
        memset(out, 0, sizeof(*out));
        if (!s)
                return;
        struct glove_channel_server *m = (struct glove_channel_server *)s;
        out->accepted = atomic_load(&m->accepted);
        out->answered_ok = atomic_load(&m->answered_ok);
        out->answered_err = atomic_load(&m->answered_err);
        out->dropped = atomic_load(&m->dropped);
        out->accept_errors = atomic_load(&m->accept_errors);
}

void glove_channel_server_stop(struct glove_channel_server *s) {
        if (!s)
                return;
        uint64_t one = 1;
        while (write(s->stop_fd, &one, sizeof(one)) < 0 && errno == EINTR)
                ;
        if (s->started)
                (void)pthread_join(s->worker, NULL);
        server_free(s);
}

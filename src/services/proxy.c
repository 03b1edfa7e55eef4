/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The proxy's life cycle: start, stop, status, and the compatibility
 * listener (glove/services/proxy.h). The workers are in exchange.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "internal.h"
#include "proxy_internal.h"

/* Joins every started worker and releases everything p owns. */
static void proxy_destroy(struct glove_services_proxy *p) {
        if (!p)
                return;
        for (size_t i = 0; i < GLOVE_SERVICES_MAX_ROUTES; i++) {
                struct svc_worker *w = &p->w[i];
                if (w->started)
                        (void)pthread_join(w->thread, NULL);
                glove_closep(&w->guest_fd);
                glove_services_endpoint_free(w->upstream);
        }
        glove_closep(&p->audit_fd);
        glove_closep(&p->stop_fd);
        free(p);
}

static void signal_stop(struct glove_services_proxy *p) {
        if (p->stop_fd < 0)
                return;
        uint64_t one = 1;
        ssize_t n;
        do
                n = write(p->stop_fd, &one, sizeof(one));
        while (n < 0 && errno == EINTR);
}

void glove_services_proxy_stop(struct glove_services_proxy *p) {
        if (!p)
                return;
        signal_stop(p);
        proxy_destroy(p);
}

/* Releases what c moves in, for a start that fails before p holds it. */
static void release_config(const struct glove_services_proxy_config *c) {
        if (!c)
                return;
        int fd = c->audit_fd;
        glove_closep(&fd);
        for (size_t i = 0; c->routes && i < c->n_routes; i++) {
                fd = c->routes[i].guest_fd;
                glove_closep(&fd);
                glove_services_endpoint_free(c->routes[i].upstream);
        }
}

static int check_guest_fd(enum glove_services_transport t, int fd, size_t i, struct glove_error *err) {
        int v = 0;
        socklen_t l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0 || v != AF_UNIX)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "route %zu: not an AF_UNIX socket", i);
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0 || v != SOCK_STREAM)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "route %zu: not a SOCK_STREAM socket",
                                       i);
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0)
                return glove_error_set(err, errno, "services.invalid_argument", "route %zu: SO_ACCEPTCONN: %s", i,
                                       strerror(errno));
        if ((t == GLOVE_SERVICES_TRANSPORT_PATHNAME) != (v != 0))
                return glove_error_set(err, EINVAL, "services.invalid_argument",
                                       "route %zu: a %s transport needs %s socket", i,
                                       t == GLOVE_SERVICES_TRANSPORT_PATHNAME ? "pathname" : "inherited",
                                       t == GLOVE_SERVICES_TRANSPORT_PATHNAME ? "a listening" : "a connected");
        /* Non-blocking: an accept or a read never waits outside poll. */
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return glove_error_set(err, errno, "services.io", "route %zu: fcntl: %s", i, strerror(errno));
        return 0;
}

static int check_config(const struct glove_services_proxy *p, const struct glove_services_proxy_config *c,
                        struct glove_error *err) {
        if (!c->session_id || !svc_session_id_valid(c->session_id))
                return glove_error_set(err, EINVAL, "services.invalid_argument",
                                       "the session ID must be 1..%d printable ASCII bytes",
                                       GLOVE_SERVICES_SESSION_ID_MAX);
        if (c->transport != GLOVE_SERVICES_TRANSPORT_PATHNAME && c->transport != GLOVE_SERVICES_TRANSPORT_INHERITED)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "unknown transport %d",
                                       (int)c->transport);
        if (!c->routes || c->n_routes == 0 || c->n_routes > GLOVE_SERVICES_MAX_ROUTES)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "%zu routes (1..%d)", c->n_routes,
                                       GLOVE_SERVICES_MAX_ROUTES);
        if (c->audit_fd < 0)
                return glove_error_set(err, EBADF, "services.invalid_argument", "no audit descriptor");
        if (c->exchange_timeout_ms == 0 || c->exchange_timeout_ms > GLOVE_SERVICES_EXCHANGE_TIMEOUT_MAX_MS)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "exchange timeout %u ms (1..%d)",
                                       (unsigned)c->exchange_timeout_ms, GLOVE_SERVICES_EXCHANGE_TIMEOUT_MAX_MS);
        for (size_t i = 0; i < c->n_routes; i++) {
                const struct glove_services_route *r = &c->routes[i];
                if (!glove_services_identifier_valid(r->alias))
                        return glove_error_set(err, EINVAL, "services.invalid_argument",
                                               "route %zu: the alias is not an identifier", i);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(c->routes[j].alias, r->alias) == 0)
                                return glove_error_set(err, EINVAL, "services.invalid_argument",
                                                       "route %zu: duplicate alias %s", i, r->alias);
                if (!r->upstream || r->guest_fd < 0)
                        return glove_error_set(err, EINVAL, "services.invalid_argument",
                                               "route %s: no upstream or guest descriptor", r->alias);
                if (glove_services_endpoint_uid(r->upstream) != c->service_uid)
                        return glove_error_set(err, EINVAL, "services.invalid_argument",
                                               "route %s: the upstream is pinned for uid %u, not the service uid %u",
                                               r->alias, (unsigned)glove_services_endpoint_uid(r->upstream),
                                               (unsigned)c->service_uid);
                int e = check_guest_fd(c->transport, p->w[i].guest_fd, i, err);
                if (e < 0)
                        return e;
        }
        return 0;
}

/* Starts the workers with every signal blocked in them. */
static int start_workers(struct glove_services_proxy *p, struct glove_error *err) {
        sigset_t all, old;
        sigfillset(&all);
        int r = pthread_sigmask(SIG_SETMASK, &all, &old);
        if (r != 0)
                return glove_error_set(err, r, "services.io", "pthread_sigmask: %s", strerror(r));
        int failed = 0;
        for (size_t i = 0; i < p->n && !failed; i++) {
                r = pthread_create(&p->w[i].thread, NULL, svc_worker_main, &p->w[i]);
                if (r != 0)
                        failed = r;
                else
                        p->w[i].started = true;
        }
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (failed)
                return glove_error_set(err, failed, "services.io", "pthread_create: %s", strerror(failed));
        return 0;
}

int glove_services_proxy_start(const struct glove_services_proxy_config *c, struct glove_services_proxy **out,
                               struct glove_error *err) {
        if (out)
                *out = NULL;
        if (!c || !out) {
                release_config(c);
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no configuration or output");
        }
        struct glove_services_proxy *p = calloc(1, sizeof(*p));
        if (!p) {
                release_config(c);
                return glove_error_set(err, ENOMEM, "services.no_memory", "out of memory");
        }
        /* Take everything c moves in first, so that one destroy releases it. */
        p->audit_fd = c->audit_fd;
        p->audit_max_bytes = c->audit_max_bytes;
        p->stop_fd = -1;
        for (size_t i = 0; i < GLOVE_SERVICES_MAX_ROUTES; i++) {
                p->w[i].proxy = p;
                p->w[i].guest_fd = -1;
        }
        for (size_t i = 0; c->routes && i < c->n_routes; i++) {
                if (i < GLOVE_SERVICES_MAX_ROUTES) {
                        p->w[i].guest_fd = c->routes[i].guest_fd;
                        p->w[i].upstream = c->routes[i].upstream;
                } else {
                        int fd = c->routes[i].guest_fd;
                        glove_closep(&fd);
                        glove_services_endpoint_free(c->routes[i].upstream);
                }
        }
        int r = check_config(p, c, err);
        if (r < 0) {
                proxy_destroy(p);
                return r;
        }
        snprintf(p->session_id, sizeof(p->session_id), "%s", c->session_id);
        p->transport = c->transport;
        p->service_uid = c->service_uid;
        p->timeout_ms = c->exchange_timeout_ms;
        p->n = c->n_routes;
        for (size_t i = 0; i < p->n; i++) {
                snprintf(p->w[i].alias, sizeof(p->w[i].alias), "%s", c->routes[i].alias);
                atomic_init(&p->w[i].state, GLOVE_SERVICES_ROUTE_SERVING);
                atomic_init(&p->w[i].last_code, NULL);
        }
        p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->stop_fd < 0) {
                r = glove_error_set(err, errno, "services.io", "eventfd: %s", strerror(errno));
                proxy_destroy(p);
                return r;
        }
        if ((r = start_workers(p, err)) < 0) {
                glove_services_proxy_stop(p);
                return r;
        }
        *out = p;
        return 0;
}

size_t glove_services_proxy_route_count(const struct glove_services_proxy *p) {
        return p ? p->n : 0;
}

int glove_services_proxy_status(const struct glove_services_proxy *p, size_t i, struct glove_services_route_status *out) {
        if (!p || !out || i >= p->n)
                return -EINVAL;
        /* The casts drop const for the atomic loads, which do not write. */
        struct svc_worker *w = (struct svc_worker *)&p->w[i];
        out->state = (enum glove_services_route_state)atomic_load(&w->state);
        out->delivered = atomic_load(&w->delivered);
        out->failed = atomic_load(&w->failed);
        out->last_code = atomic_load(&w->last_code);
        return 0;
}

int glove_services_pathname_listen(int dir_fd, const char *alias, int *fd_out, struct glove_error *err) {
        if (!fd_out)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no output pointer");
        *fd_out = -1;
        if (dir_fd < 0 || !glove_services_identifier_valid(alias))
                return glove_error_set(err, EINVAL, "services.invalid_argument",
                                       "a listener needs a directory descriptor and an alias identifier");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dir_fd, alias);
        if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
                return glove_error_set(err, ENAMETOOLONG, "services.invalid_argument", "%s: address too long", alias);
        _cleanup_close_ int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (sock < 0)
                return glove_error_set(err, errno, "services.listen", "socket: %s", strerror(errno));
        if (bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return glove_error_set(err, errno, "services.listen", "%s: bind: %s", alias, strerror(errno));
        int r = 0;
        struct stat st;
        if (fchmodat(dir_fd, alias, 0600, 0) < 0)
                r = glove_error_set(err, errno, "services.listen", "%s: chmod 0600: %s", alias, strerror(errno));
        else if (fstatat(dir_fd, alias, &st, AT_SYMLINK_NOFOLLOW) < 0)
                r = glove_error_set(err, errno, "services.listen", "%s: stat: %s", alias, strerror(errno));
        else if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0600)
                r = glove_error_set(err, EPERM, "services.listen",
                                    "%s: not a socket of this uid with mode 0600 after bind", alias);
        else if (listen(sock, GLOVE_SERVICES_LISTEN_BACKLOG) < 0)
                r = glove_error_set(err, errno, "services.listen", "%s: listen: %s", alias, strerror(errno));
        if (r < 0) {
                (void)unlinkat(dir_fd, alias, 0);
                return r;
        }
        *fd_out = TAKE_FD(sock);
        return 0;
}

int glove_services_inherited_pair(int *supervisor_fd, int *guest_fd, struct glove_error *err) {
        if (!supervisor_fd || !guest_fd)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no output pointers");
        *supervisor_fd = *guest_fd = -1;
        _cleanup_fd_pair_ struct glove_fd_pair pair = GLOVE_FD_PAIR_INIT;
        int r = glove_fd_pair_socketpair(&pair, SOCK_STREAM | SOCK_NONBLOCK);
        if (r < 0)
                return glove_error_set(err, -r, "services.io", "socketpair: %s", strerror(-r));
        for (int i = 0; i < 2; i++)
                if (fchmod(pair.fd[i], 0600) < 0)
                        return glove_error_set(err, errno, "services.io", "fchmod 0600 of the socket pair: %s",
                                               strerror(errno));
        *supervisor_fd = glove_fd_take(&pair.fd[0]);
        *guest_fd = glove_fd_take(&pair.fd[1]);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The egress relay's lifecycle and acceptor thread
 * (include/glove/net/relay.h); connections are served in relay_conn.c. */
#include "glove/net/relay.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/time.h"
#include "glove/net/proxy_env.h"
#include "internal.h"

const char *glove_net_egress_reason_name(enum glove_net_egress_reason r) {
        switch (r) {
        case GLOVE_NET_EGRESS_OK: return "ok";
        case GLOVE_NET_EGRESS_CLOSED: return "closed";
        case GLOVE_NET_EGRESS_RESET: return "reset";
        case GLOVE_NET_EGRESS_IDLE_TIMEOUT: return "idle_timeout";
        case GLOVE_NET_EGRESS_ABSOLUTE_TIMEOUT: return "absolute_timeout";
        case GLOVE_NET_EGRESS_RELAY_STOPPED: return "relay_stopped";
        case GLOVE_NET_EGRESS_BAD_REQUEST: return "bad_request";
        case GLOVE_NET_EGRESS_HEAD_TOO_LARGE: return "head_too_large";
        case GLOVE_NET_EGRESS_METHOD_NOT_ALLOWED: return "method_not_allowed";
        case GLOVE_NET_EGRESS_BAD_AUTH: return "bad_auth";
        case GLOVE_NET_EGRESS_NOT_ALLOWED: return "not_allowed";
        case GLOVE_NET_EGRESS_PRIVATE_ADDRESS: return "private_address";
        case GLOVE_NET_EGRESS_RESOLVE_FAILED: return "resolve_failed";
        case GLOVE_NET_EGRESS_CONNECT_FAILED: return "connect_failed";
        case GLOVE_NET_EGRESS_TOO_MANY_CONNECTIONS: return "too_many_connections";
        case GLOVE_NET_EGRESS_TIMEOUT: return "timeout";
        case GLOVE_NET_EGRESS_INCOMPLETE_REQUEST: return "incomplete_request";
        case GLOVE_NET_EGRESS_BAD_DESCRIPTOR: return "bad_descriptor";
        case GLOVE_NET_EGRESS_AUDIT_FAILED: return "audit_failed";
        case GLOVE_NET_EGRESS_INTERNAL: return "internal";
        case GLOVE_NET_EGRESS_HOST_MISMATCH: return "host_mismatch";
        case GLOVE_NET_EGRESS_HTTPS_NEEDS_CONNECT: return "https_needs_connect";
        case GLOVE_NET_EGRESS_HANDED_OVER: return "handed_over";
        }
        return "internal";
}

const char *glove_net_egress_phase_name(enum glove_net_egress_phase p) {
        switch (p) {
        case GLOVE_NET_EGRESS_DENY: return "deny";
        case GLOVE_NET_EGRESS_OPEN: return "open";
        case GLOVE_NET_EGRESS_CLOSE: return "close";
        }
        return "deny";
}

int glove_net_relay_emit(struct glove_net_relay *r, const struct glove_net_egress_event *ev) {
        if (!r->audit)
                return 0;
        pthread_mutex_lock(&r->audit_lock);
        int ret = r->audit(ev, r->audit_userdata);
        pthread_mutex_unlock(&r->audit_lock);
        return ret;
}

/* Joins the threads of finished slots. Called with r->lock held; a finished
 * thread no longer takes the lock, so joining here cannot deadlock. */
static void reap_locked(struct glove_net_relay *r) {
        for (unsigned i = 0; i < r->max_connections; i++) {
                struct glove_net_conn *c = &r->slots[i];
                if (c->used && c->finished) {
                        (void)pthread_join(c->thread, NULL);
                        c->used = false;
                        c->finished = false;
                }
        }
}

/* Refuses fd on the acceptor thread without blocking it. */
static void refuse(struct glove_net_relay *r, int fd, uint64_t id, uint64_t start_ms,
                   enum glove_net_egress_reason reason, int status) {
        glove_net_answer_and_close(fd, r->stop_fd, status, reason, false);
        struct glove_net_egress_event ev = {
                .phase = GLOVE_NET_EGRESS_DENY,
                .reason = reason,
                .connection_id = id,
                .http_status = status,
                .method = "",
                .host = "",
                .address = "",
                .address_class = "",
                .duration_ms = glove_time_monotonic_ms() - start_ms,
        };
        (void)glove_net_relay_emit(r, &ev);
}

/* Hands one received descriptor to a connection thread, or refuses it. */
static void dispatch(struct glove_net_relay *r, int fd, const pthread_attr_t *attr) {
        uint64_t start = glove_time_monotonic_ms();
        pthread_mutex_lock(&r->lock);
        reap_locked(r);
        uint64_t id = ++r->next_id;
        struct glove_net_conn *slot = NULL;
        for (unsigned i = 0; i < r->max_connections && !slot; i++)
                if (!r->slots[i].used)
                        slot = &r->slots[i];
        if (!slot) {
                pthread_mutex_unlock(&r->lock);
                refuse(r, fd, id, start, GLOVE_NET_EGRESS_TOO_MANY_CONNECTIONS, 503);
                return;
        }
        *slot = (struct glove_net_conn){ .relay = r, .used = true, .fd = fd, .id = id, .start_ms = start };
        r->active++;
        int e = pthread_create(&slot->thread, attr, glove_net_conn_main, slot);
        if (e != 0) {
                slot->used = false;
                r->active--;
                pthread_mutex_unlock(&r->lock);
                refuse(r, fd, id, start, GLOVE_NET_EGRESS_INTERNAL, 502);
                return;
        }
        pthread_mutex_unlock(&r->lock);
}

/* Receives one message from the helper channel and dispatches its
 * descriptors. Returns false when the channel is finished. */
static bool receive(struct glove_net_relay *r, const pthread_attr_t *attr) {
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * GLOVE_NET_RECV_FDS_MAX)];
        } control;
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        ssize_t n = recvmsg(r->unix_fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        bool got = false;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        dispatch(r, fd, attr);
                        got = true;
                }
        }
        return n > 0 || got;
}

static void *acceptor_main(void *arg) {
        struct glove_net_relay *r = arg;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        (void)pthread_attr_setstacksize(&attr, GLOVE_NET_THREAD_STACK);
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = r->stop_fd, .events = POLLIN },
                        { .fd = r->unix_fd, .events = POLLIN },
                };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[0].revents)
                        break;
                if (p[1].revents & POLLIN) {
                        if (!receive(r, &attr))
                                break;
                } else if (p[1].revents) {
                        break; /* the helper is gone; open tunnels go on */
                }
        }
        pthread_attr_destroy(&attr);
        return NULL;
}

static int pick(uint32_t value, uint32_t def, uint32_t limit, const char *what, struct glove_error *err) {
        if (value > limit)
                return glove_error_set(err, EINVAL, "egress.bad_config", "%s %u is above %u", what, value, limit);
        return value ? (int)value : (int)def;
}

static void relay_free(struct glove_net_relay *r) {
        if (r->stop_fd >= 0)
                close(r->stop_fd);
        if (r->unix_fd >= 0)
                close(r->unix_fd);
        if (r->endpoint_fd >= 0)
                close(r->endpoint_fd);
        pthread_mutex_destroy(&r->lock);
        pthread_mutex_destroy(&r->audit_lock);
        glove_net_policy_free(&r->policy);
        explicit_bzero(r->credentials, sizeof(r->credentials));
        free(r->slots);
        free(r);
}

static int configure(struct glove_net_relay *r, const struct glove_net_relay_config *c,
                     struct glove_error *err) {
        int v;
        if ((v = pick(c->max_connections, GLOVE_NET_MAX_CONNECTIONS_DEFAULT, GLOVE_NET_MAX_CONNECTIONS_LIMIT,
                      "max_connections", err)) < 0)
                return v;
        r->max_connections = (unsigned)v;
        if ((v = pick(c->head_timeout_ms, GLOVE_NET_HEAD_TIMEOUT_MS_DEFAULT, GLOVE_NET_TIMEOUT_MS_LIMIT,
                      "head_timeout_ms", err)) < 0)
                return v;
        r->head_timeout_ms = (uint32_t)v;
        if ((v = pick(c->connect_timeout_ms, GLOVE_NET_CONNECT_TIMEOUT_MS_DEFAULT, GLOVE_NET_TIMEOUT_MS_LIMIT,
                      "connect_timeout_ms", err)) < 0)
                return v;
        r->connect_timeout_ms = (uint32_t)v;
        if ((v = pick(c->idle_timeout_ms, GLOVE_NET_IDLE_TIMEOUT_MS_DEFAULT, GLOVE_NET_TIMEOUT_MS_LIMIT,
                      "idle_timeout_ms", err)) < 0)
                return v;
        r->idle_timeout_ms = (uint32_t)v;
        if ((v = pick(c->max_duration_ms, GLOVE_NET_MAX_DURATION_MS_DEFAULT, GLOVE_NET_TIMEOUT_MS_LIMIT,
                      "max_duration_ms", err)) < 0)
                return v;
        r->max_duration_ms = (uint32_t)v;
        int ret = glove_net_token_check(c->token, err);
        if (ret < 0)
                return ret;
        char plain[sizeof(GLOVE_NET_PROXY_USER ":") + GLOVE_NET_TOKEN_MAX];
        int n = snprintf(plain, sizeof(plain), GLOVE_NET_PROXY_USER ":%s", c->token);
        ret = glove_base64_encode_cstr(plain, (size_t)n, r->credentials, sizeof(r->credentials));
        explicit_bzero(plain, sizeof(plain));
        if (ret < 0)
                return glove_error_set(err, EINVAL, "egress.bad_token", "the proxy token is too long");
        if (c->policy && glove_net_policy_copy(&r->policy, c->policy, err) < 0)
                return -ENOMEM;
        r->audit = c->audit;
        r->audit_userdata = c->audit_userdata;
        r->endpoint_port = c->endpoint_port;
        return 0;
}

int glove_net_relay_start(const struct glove_net_relay_config *config, int unix_fd,
                          struct glove_net_relay **out, struct glove_error *err) {
        *out = NULL;
        int endpoint_fd = config && config->endpoint_port ? config->endpoint_fd : -1;
        struct glove_net_relay *r = calloc(1, sizeof(*r));
        if (!r) {
                if (unix_fd >= 0)
                        close(unix_fd);
                if (endpoint_fd >= 0)
                        close(endpoint_fd);
                return glove_error_set(err, ENOMEM, "egress.no_memory", "out of memory");
        }
        r->unix_fd = unix_fd;
        r->endpoint_fd = endpoint_fd;
        r->stop_fd = -1;
        glove_net_policy_init(&r->policy);
        pthread_mutex_init(&r->lock, NULL);
        pthread_mutex_init(&r->audit_lock, NULL);
        int ret;
        if (!config || unix_fd < 0) {
                ret = glove_error_set(err, EINVAL, "egress.bad_config", "no configuration or channel");
                goto fail;
        }
        if (config->endpoint_port && endpoint_fd < 0) {
                ret = glove_error_set(err, EINVAL, "egress.bad_config", "an MCP endpoint port without its channel");
                goto fail;
        }
        if ((ret = configure(r, config, err)) < 0)
                goto fail;
        r->slots = calloc(r->max_connections, sizeof(*r->slots));
        if (!r->slots) {
                ret = glove_error_set(err, ENOMEM, "egress.no_memory", "out of memory");
                goto fail;
        }
        r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->stop_fd < 0) {
                ret = glove_error_set(err, errno, "egress.relay", "eventfd: %s", strerror(errno));
                goto fail;
        }
        /* Relay threads take no signals: the process's handlers and
         * signalfds stay with its own threads, and SIGPIPE from splice(2)
         * stays pending on the relay thread that caused it. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        (void)pthread_attr_setstacksize(&attr, GLOVE_NET_THREAD_STACK);
        int e = pthread_create(&r->acceptor, &attr, acceptor_main, r);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0) {
                ret = glove_error_set(err, e, "egress.relay", "starting the relay thread: %s", strerror(e));
                goto fail;
        }
        r->acceptor_started = true;
        *out = r;
        return 0;
fail:
        relay_free(r);
        return ret;
}

void glove_net_relay_stop(struct glove_net_relay *r) {
        if (!r)
                return;
        uint64_t one = 1;
        while (write(r->stop_fd, &one, sizeof(one)) < 0 && errno == EINTR)
                ;
        if (r->acceptor_started)
                (void)pthread_join(r->acceptor, NULL);
        /* The acceptor is gone, so no slot changes hands any more; joining
         * without the lock lets finishing threads take it. */
        for (unsigned i = 0; i < r->max_connections; i++)
                if (r->slots[i].used)
                        (void)pthread_join(r->slots[i].thread, NULL);
        relay_free(r);
}

unsigned glove_net_relay_active(struct glove_net_relay *r) {
        pthread_mutex_lock(&r->lock);
        unsigned n = r->active;
        pthread_mutex_unlock(&r->lock);
        return n;
}

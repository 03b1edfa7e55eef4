/* SPDX-License-Identifier: Apache-2.0 */
/* The keeper's side of its channel to gloved (keeper.h): one connection at a
 * time, SEQPACKET messages, a bounded send queue that holds the agent's
 * output while it is full, and the keeper's diagnostics. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "keeper_internal.h"

/* ---- diagnostics (DIR/SESSION.log on descriptor 2) ----
 *
 * Formatted into a stack buffer and written with one write(2): no stdio
 * (a unit test runs the keeper in a fork of a process that may have used
 * it). */
__attribute__((format(printf, 2, 3))) void glove_keeper_log(struct glove_keeper *k, const char *fmt, ...) {
        if (k->log_lines > LOG_LINES_MAX)
                return;
        if (k->log_lines++ == LOG_LINES_MAX) {
                char last[256];
                int n = snprintf(last, sizeof(last), "glove-keeper: %s: %d lines: further diagnostics are dropped\n", k->id,
                                 LOG_LINES_MAX);
                if (n > 0 && n < (int)sizeof(last))
                        (void)!write(STDERR_FILENO, last, (size_t)n);
                return;
        }
        char line[LOG_LINE_MAX];
        int n = snprintf(line, sizeof(line), "glove-keeper: %s: ", k->id);
        if (n < 0 || n >= (int)sizeof(line) - 1)
                n = 0;
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        va_end(ap);
        if (m < 0)
                m = 0;
        size_t len = (size_t)n + ((size_t)m < sizeof(line) - (size_t)n - 1 ? (size_t)m : sizeof(line) - (size_t)n - 2);
        line[len++] = '\n';
        (void)!write(STDERR_FILENO, line, len);
}

/* ---- the connection and its send queue ---- */

static void conn_close(struct glove_keeper *k);

static void update_conn_events(struct glove_keeper *k) {
        if (k->conn_src)
                (void)sd_event_source_set_io_events(k->conn_src, EPOLLIN | (k->q_head ? EPOLLOUT : 0));
}

/* Output is held while the queue is over its bound and resumes below half
 * of it. */
static void update_hold(struct glove_keeper *k) {
        bool hold = k->conn_fd >= 0 && k->q_bytes > GLOVE_KEEPER_QUEUE_MAX;
        if (k->held && k->q_bytes > GLOVE_KEEPER_QUEUE_MAX / 2 && k->conn_fd >= 0)
                hold = true;
        if (hold != k->held && k->client) {
                glove_terminal_client_hold(k->client, hold);
                k->held = hold;
        }
}

static void queue_drop(struct glove_keeper *k) {
        while (k->q_head) {
                struct glove_keeper_msg_q *m = k->q_head;
                k->q_head = m->next;
                free(m);
        }
        k->q_tail = &k->q_head;
        k->q_bytes = 0;
}

/* The connection is gone (or replaced). After the end nothing is left to
 * do: the status file holds the outcome. */
void glove_keeper_conn_lost(struct glove_keeper *k, const char *why) {
        if (k->conn_fd < 0)
                return;
        glove_keeper_log(k, "connection closed: %s", why);
        conn_close(k);
        if (k->phase == PH_ENDED)
                glove_keeper_exit(k);
}

/* Sends what the queue holds, in order. Returns 0, or -EPIPE when the
 * connection was lost. */
static int queue_flush(struct glove_keeper *k) {
        while (k->q_head) {
                struct glove_keeper_msg_q *m = k->q_head;
                ssize_t n = send(k->conn_fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n < 0) {
                        glove_keeper_conn_lost(k, strerror(errno));
                        return -EPIPE;
                }
                k->q_head = m->next;
                if (!k->q_head)
                        k->q_tail = &k->q_head;
                k->q_bytes -= m->len;
                free(m);
        }
        update_conn_events(k);
        update_hold(k);
        return 0;
}

/*
 * Sends one message of type and the concatenation of the iovecs. Directly
 * when nothing waits before it, else (and on EAGAIN) queued. No connection:
 * nothing happens. Returns 0, or -EPIPE when the connection was lost (then
 * nothing was sent).
 */
int glove_keeper_sendv(struct glove_keeper *k, uint8_t type, const struct iovec *iov, size_t n_iov) {
        if (k->conn_fd < 0)
                return -EPIPE;
        struct iovec all[4] = { { .iov_base = &type, .iov_len = 1 } };
        size_t len = 1;
        for (size_t i = 0; i < n_iov && i < 3; i++) {
                all[i + 1] = iov[i];
                len += iov[i].iov_len;
        }
        if (len > GLOVE_KEEPER_MSG_MAX) {
                glove_keeper_log(k, "message '%c' of %zu bytes not sent: over %d", type, len, GLOVE_KEEPER_MSG_MAX);
                return 0;
        }
        if (!k->q_head) {
                struct msghdr mh = { .msg_iov = all, .msg_iovlen = 1 + (n_iov < 3 ? n_iov : 3) };
                for (;;) {
                        ssize_t r = sendmsg(k->conn_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
                        if (r >= 0)
                                return 0;
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                break;
                        glove_keeper_conn_lost(k, strerror(errno));
                        return -EPIPE;
                }
        }
        if (k->q_bytes + len > QUEUE_HARD_MAX) {
                glove_keeper_conn_lost(k, "gloved does not read (send queue over its bound)");
                return -EPIPE;
        }
        struct glove_keeper_msg_q *m = malloc(sizeof(*m) + len);
        if (!m) {
                glove_keeper_conn_lost(k, "out of memory for the send queue");
                return -EPIPE;
        }
        m->next = NULL;
        m->len = len;
        size_t off = 0;
        for (size_t i = 0; i < 1 + (n_iov < 3 ? n_iov : 3); i++) {
                memcpy(m->data + off, all[i].iov_base, all[i].iov_len);
                off += all[i].iov_len;
        }
        *k->q_tail = m;
        k->q_tail = &m->next;
        k->q_bytes += len;
        update_conn_events(k);
        update_hold(k);
        return 0;
}

static int conn_send(struct glove_keeper *k, uint8_t type, const void *payload, size_t len) {
        struct iovec v = { .iov_base = (void *)payload, .iov_len = len };
        return glove_keeper_sendv(k, type, &v, len ? 1 : 0);
}

/* One JSON object as canonical bytes. v is consumed. */
int glove_keeper_send_json(struct glove_keeper *k, uint8_t type, json_t *v) {
        _cleanup_json_ json_t *own = v;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct glove_error e = { 0 };
        if (!own || glove_json_encode_canonical(own, &text, &len, &e) < 0) {
                glove_keeper_log(k, "message '%c' not sent: %s", type, own ? e.message : "out of memory");
                return 0;
        }
        return conn_send(k, type, text, len);
}

static int on_conn(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        struct glove_keeper *k = userdata;
        unsigned gen = k->conn_gen;
        if ((revents & EPOLLOUT) && queue_flush(k) < 0)
                return 0;
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;
        uint8_t *buf = k->rx;
        for (int i = 0; i < READS_PER_WAKEUP && k->conn_gen == gen; i++) {
                ssize_t n = recv(fd, buf, GLOVE_KEEPER_MSG_MAX, MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n < 0) {
                        glove_keeper_conn_lost(k, strerror(errno));
                        break;
                }
                if (n == 0) {
                        /* Every message has a type byte: 0 is the end. */
                        glove_keeper_conn_lost(k, "end of file");
                        break;
                }
                if ((size_t)n > GLOVE_KEEPER_MSG_MAX) {
                        glove_keeper_log(k, "message of %zd bytes refused: over %d", n, GLOVE_KEEPER_MSG_MAX);
                        continue;
                }
                glove_keeper_on_message(k, buf, (size_t)n);
        }
        return 0;
}

/* ---- connections ---- */

static void conn_close(struct glove_keeper *k) {
        k->conn_src = sd_event_source_disable_unref(k->conn_src);
        if (k->conn_fd >= 0)
                close(k->conn_fd);
        k->conn_fd = -1;
        k->conn_gen++;
        k->greeted = false;
        k->closed_told = false;
        queue_drop(k);
        update_hold(k);
}

int glove_keeper_conn_set(struct glove_keeper *k, int fd) {
        conn_close(k);
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        int r = sd_event_add_io(k->loop, &k->conn_src, fd, EPOLLIN, on_conn, k);
        if (r < 0) {
                close(fd);
                return r;
        }
        k->conn_fd = fd;
        return 0;
}

int glove_keeper_on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)revents;
        struct glove_keeper *k = userdata;
        for (int i = 0; i < READS_PER_WAKEUP; i++) {
                int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0) {
                        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                                glove_keeper_log(k, "accept: %s", strerror(errno));
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        return 0;
                }
                struct ucred cred;
                socklen_t cl = sizeof(cred);
                if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cl != sizeof(cred) ||
                    cred.uid != getuid()) {
                        glove_keeper_log(k, "connection refused: the peer is not of uid %u", (unsigned)getuid());
                        close(c);
                        continue;
                }
                bool had = k->conn_fd >= 0;
                int r = glove_keeper_conn_set(k, c);
                if (r < 0)
                        glove_keeper_log(k, "connection dropped: %s", strerror(-r));
                else if (had)
                        glove_keeper_log(k, "a new connection (pid %d) replaced the old one", (int)cred.pid);
        }
        return 0;
}

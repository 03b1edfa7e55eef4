/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking control-protocol client (see client.h). */
#include "glove/protocol/client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "glove/base/buffer.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/protocol/frame.h"

#define SECRET_FILE_MAX 128
/* Bytes asked of one recv at most. */
#define RECV_CHUNK (256u * 1024)

/* Notifications held back while call() waited for its response. */
#define PENDING_MAX 4096

struct glove_protocol_client {
        int fd;
        uint64_t timeout_ms;
        int64_t next_id;
        struct glove_buffer in;   /* received bytes not yet framed */
        json_t *pending;          /* array of notifications read by call(), oldest first */
        int proof_fd;             /* gloved's user namespace, sent with the first bytes (-1: none) */
};

static int wait_fd(int fd, short events, uint64_t deadline_ms, struct glove_error *err) {
        for (;;) {
                uint64_t now = glove_time_monotonic_ms();
                if (now >= deadline_ms)
                        return glove_error_set(err, ETIMEDOUT, "client.timeout", "gloved did not answer in time");
                struct pollfd p = { .fd = fd, .events = events };
                int n = poll(&p, 1, (int)(deadline_ms - now));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return glove_error_set(err, errno, "client.protocol", "poll: %s", strerror(errno));
                if (n > 0)
                        return 0;
        }
}

static int send_all(struct glove_protocol_client *c, const uint8_t *p, size_t len, uint64_t deadline,
                    struct glove_error *err) {
        while (len) {
                ssize_t n;
                if (c->proof_fd >= 0) {
                        /* The proof that this client may see gloved's user
                         * namespace (docs/control-protocol.md, "Transport and
                         * authentication"), with the first byte sent. */
                        union {
                                char buf[CMSG_SPACE(sizeof(int))];
                                struct cmsghdr align;
                        } u;
                        memset(&u, 0, sizeof(u));
                        struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
                        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                                             .msg_controllen = sizeof(u.buf) };
                        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                        cm->cmsg_level = SOL_SOCKET;
                        cm->cmsg_type = SCM_RIGHTS;
                        cm->cmsg_len = CMSG_LEN(sizeof(int));
                        memcpy(CMSG_DATA(cm), &c->proof_fd, sizeof(int));
                        n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (n > 0) {
                                close(c->proof_fd);
                                c->proof_fd = -1;
                        }
                } else {
                        n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        int r = wait_fd(c->fd, POLLOUT, deadline, err);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n <= 0)
                        return glove_error_set(err, ECONNRESET, "client.closed", "gloved closed the connection: %s",
                                               n < 0 ? strerror(errno) : "end of file");
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Receives what is there into c->in without blocking. Returns 0 (maybe
 * nothing), or -ECONNRESET at end of file or a receive error. */
static int recv_some(struct glove_protocol_client *c, struct glove_error *err) {
        size_t room = c->in.max - c->in.len;
        if (room > RECV_CHUNK)
                room = RECV_CHUNK;
        if (room == 0)
                return glove_error_set(err, EPROTO, "client.protocol", "gloved sent an oversized frame");
        if (glove_buffer_reserve(&c->in, room) < 0)
                return glove_error_set(err, ENOMEM, "client.no_memory", "out of memory");
        ssize_t n = recv(c->fd, c->in.data + c->in.len, room, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0)
                return glove_error_set(err, ECONNRESET, "client.closed", "gloved closed the connection");
        glove_buffer_commit(&c->in, (size_t)n);
        return 1;
}

/* Takes one complete frame off c->in: 1 with *frame (new reference), 0 when
 * incomplete, negative on a framing error. */
static int take_frame(struct glove_protocol_client *c, json_t **frame, struct glove_error *err) {
        const uint8_t *payload;
        size_t plen, flen;
        struct glove_error e = { 0 };
        int r = glove_protocol_frame_next(c->in.data, c->in.len, &payload, &plen, &flen, &e);
        if (r < 0)
                return glove_error_set(err, EPROTO, "client.protocol", "gloved broke the framing: %s", e.message);
        if (r == 0)
                return 0;
        r = glove_json_decode_strict(payload, plen, GLOVE_PROTOCOL_FRAME_MAX, GLOVE_JSON_OBJECT_ONLY, frame, &e);
        glove_buffer_consume(&c->in, flen);
        if (r < 0)
                return glove_error_set(err, EPROTO, "client.protocol", "gloved sent an invalid frame: %s", e.message);
        return 1;
}

/* The next frame off the socket before deadline_ms (monotonic): 1 with
 * *frame, 0 at the deadline, negative on error. */
static int read_frame(struct glove_protocol_client *c, uint64_t deadline_ms, json_t **frame, struct glove_error *err) {
        for (;;) {
                int r = take_frame(c, frame, err);
                if (r != 0)
                        return r;
                r = recv_some(c, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                uint64_t now = glove_time_monotonic_ms();
                if (now >= deadline_ms)
                        return 0;
                struct pollfd p = { .fd = c->fd, .events = POLLIN };
                uint64_t wait = deadline_ms - now;
                int n = poll(&p, 1, wait > INT32_MAX ? INT32_MAX : (int)wait);
                if (n < 0 && errno != EINTR)
                        return glove_error_set(err, errno, "client.protocol", "poll: %s", strerror(errno));
        }
}

static bool is_notification(const json_t *frame) {
        return !json_object_get(frame, "id") && json_is_string(json_object_get(frame, "method"));
}

/* Encodes and sends one message within the per-call timeout. */
static int send_message(struct glove_protocol_client *c, json_t *msg, struct glove_error *err) {
        _cleanup_buffer_ struct glove_buffer out;
        glove_buffer_init(&out, GLOVE_PROTOCOL_FRAME_PREFIX + GLOVE_PROTOCOL_FRAME_MAX);
        int r = glove_protocol_frame_encode(msg, &out, err);
        if (r == 0)
                r = send_all(c, out.data, out.len, glove_time_monotonic_ms() + c->timeout_ms, err);
        return r;
}

/* Sends one request (id) and reads frames until its response (new
 * reference); notifications read meanwhile are kept for
 * glove_protocol_client_next, and the answers to earlier requests sent with
 * glove_protocol_client_send and not read yet are dropped (a response with
 * another integer id is not this request's). */
static int exchange(struct glove_protocol_client *c, json_t *req, json_int_t id, json_t **resp,
                    struct glove_error *err) {
        uint64_t deadline = glove_time_monotonic_ms() + c->timeout_ms;
        int r = send_message(c, req, err);
        if (r < 0)
                return r;
        for (;;) {
                json_t *f = NULL;
                r = read_frame(c, deadline, &f, err);
                if (r < 0)
                        return r;
                if (r == 0)
                        return glove_error_set(err, ETIMEDOUT, "client.timeout", "gloved did not answer in time");
                if (!is_notification(f)) {
                        json_t *fid = json_object_get(f, "id");
                        if (json_is_integer(fid) && json_integer_value(fid) != id) {
                                json_decref(f);
                                continue;
                        }
                        *resp = f;
                        return 0;
                }
                if (json_array_size(c->pending) >= PENDING_MAX) {
                        json_decref(f);
                        return glove_error_set(err, EPROTO, "client.protocol",
                                               "more than %d notifications while waiting for a response", PENDING_MAX);
                }
                if (json_array_append_new(c->pending, f) < 0)
                        return glove_error_set(err, ENOMEM, "client.no_memory", "out of memory");
        }
}

static void fill_remote(const json_t *error, struct glove_protocol_remote_error *remote) {
        const char *code = json_string_value(json_object_get(error, "code"));
        const char *msg = json_string_value(json_object_get(error, "message"));
        json_t *data = json_object_get(error, "data");
        snprintf(remote->code, sizeof(remote->code), "%s", code ? code : "unknown");
        snprintf(remote->message, sizeof(remote->message), "%s", msg ? msg : "");
        remote->data = json_is_object(data) ? json_incref(data) : NULL;
}

int glove_protocol_client_call(struct glove_protocol_client *c, const char *method, json_t *params, json_t **result,
                              struct glove_protocol_remote_error *remote, struct glove_error *err) {
        *result = NULL;
        memset(remote, 0, sizeof(*remote));
        json_int_t id = c->next_id++;
        _cleanup_json_ json_t *req = json_pack("{s:I,s:s,s:o}", "id", id, "method", method, "params",
                                               params ? json_incref(params) : json_object());
        if (!req)
                return glove_error_set(err, ENOMEM, "client.invalid_argument", "cannot build the request");
        _cleanup_json_ json_t *resp = NULL;
        int r = exchange(c, req, id, &resp, err);
        if (r < 0)
                return r;
        json_t *rid = json_object_get(resp, "id");
        json_t *res = json_object_get(resp, "result");
        json_t *error = json_object_get(resp, "error");
        if (json_is_object(error)) {
                fill_remote(error, remote);
                return 1;
        }
        if (!json_is_integer(rid) || json_integer_value(rid) != id || !json_is_object(res))
                return glove_error_set(err, EPROTO, "client.protocol", "gloved sent an unexpected response");
        *result = json_incref(res);
        return 0;
}

int glove_protocol_client_send(struct glove_protocol_client *c, const char *method, json_t *params, int64_t *id,
                              struct glove_error *err) {
        if (!c || !method)
                return glove_error_set(err, EINVAL, "client.invalid_argument", "no client or method");
        json_int_t n = c->next_id++;
        _cleanup_json_ json_t *req = json_pack("{s:I,s:s,s:o}", "id", n, "method", method, "params",
                                               params ? json_incref(params) : json_object());
        if (!req)
                return glove_error_set(err, ENOMEM, "client.invalid_argument", "cannot build the request");
        int r = send_message(c, req, err);
        if (r < 0)
                return r;
        if (id)
                *id = n;
        return 0;
}

int glove_protocol_client_next(struct glove_protocol_client *c, uint64_t timeout_ms, json_t **frame,
                              struct glove_error *err) {
        *frame = NULL;
        if (json_array_size(c->pending) > 0) {
                *frame = json_incref(json_array_get(c->pending, 0));
                json_array_remove(c->pending, 0);
                return 1;
        }
        uint64_t now = glove_time_monotonic_ms();
        uint64_t deadline = timeout_ms > UINT64_MAX - now ? UINT64_MAX : now + timeout_ms;
        return read_frame(c, deadline, frame, err);
}

int glove_protocol_client_fd(const struct glove_protocol_client *c) {
        return c ? c->fd : -1;
}

bool glove_protocol_client_buffered(const struct glove_protocol_client *c) {
        if (!c)
                return false;
        if (json_array_size(c->pending) > 0)
                return true;
        const uint8_t *payload;
        size_t plen, flen;
        struct glove_error e = { 0 };
        return glove_protocol_frame_next(c->in.data, c->in.len, &payload, &plen, &flen, &e) != 0;
}

int glove_protocol_client_receive(struct glove_protocol_client *c, struct glove_error *err) {
        return recv_some(c, err);
}

int glove_protocol_client_peek_raw(const struct glove_protocol_client *c, size_t offset, const uint8_t **payload,
                                  size_t *payload_len, size_t *frame_len, struct glove_error *err) {
        struct glove_error e = { 0 };
        if (json_array_size(c->pending) > 0 || offset > c->in.len)
                return 0;
        int r = glove_protocol_frame_next(c->in.data + offset, c->in.len - offset, payload, payload_len, frame_len, &e);
        if (r < 0)
                return glove_error_set(err, EPROTO, "client.protocol", "gloved broke the framing: %s", e.message);
        return r;
}

void glove_protocol_client_consume_raw(struct glove_protocol_client *c, size_t n) {
        (void)glove_buffer_consume(&c->in, n > c->in.len ? c->in.len : n);
}

static int read_secret(const char *runtime_dir, const char *secret_name, char hex[65], struct glove_error *err) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", runtime_dir, secret_name) >= sizeof(path))
                return glove_error_set(err, ENAMETOOLONG, "client.unreachable", "runtime directory path too long");
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "client.unreachable", "%s: %s (is gloved running?)", path,
                                       strerror(errno));
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        bool ok = glove_fd_read_bounded(fd, SECRET_FILE_MAX, &buf, &n, NULL) == 0 && n == 65 && buf[64] == '\n';
        if (ok) {
                memcpy(hex, buf, 64);
                hex[64] = '\0';
        }
        if (buf)
                explicit_bzero(buf, n);
        if (!ok)
                return glove_error_set(err, EINVAL, "client.unreachable", "%s does not hold a secret", path);
        return 0;
}

static int connect_socket(const char *runtime_dir, int *out, struct glove_error *err) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/gloved.sock", runtime_dir) >= sizeof(sa.sun_path))
                return glove_error_set(err, ENAMETOOLONG, "client.unreachable", "socket path too long");
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return glove_error_set(err, errno, "client.unreachable", "socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return glove_error_set(err, errno, "client.unreachable", "%s: %s (is gloved running?)", sa.sun_path,
                                       strerror(errno));
        /* The secret goes only to a gloved of our own uid: a socket another
         * user put in the runtime directory must not collect it. */
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
                return glove_error_set(err, errno ? errno : EPROTO, "client.unreachable", "%s: cannot check the peer", sa.sun_path);
        if (cred.uid != geteuid())
                return glove_error_set(err, EPERM, "client.wrong_peer",
                                       "%s is served by uid %u, not by you (uid %u); refusing to authenticate", sa.sun_path,
                                       (unsigned)cred.uid, (unsigned)geteuid());
        *out = TAKE_FD(fd);
        return 0;
}

/*
 * A descriptor of gloved's user namespace, opened through the pid gloved
 * wrote in RUNTIME/gloved.lock: the kernel lets only a process of gloved's
 * own user namespace or of an ancestor (with authority over it) open it, so
 * it proves to a gloved that cannot see this client's namespace that the
 * client is no sandbox. -1 when it cannot be opened (gloved may not need it).
 */
static int open_proof(const char *runtime_dir) {
        char path[4200], text[32];
        if ((size_t)snprintf(path, sizeof(path), "%s/gloved.lock", runtime_dir) >= sizeof(path))
                return -1;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, text, sizeof(text) - 1);
        if (n <= 0)
                return -1;
        text[n] = '\0';
        char *end;
        long pid = strtol(text, &end, 10);
        if (pid <= 1 || pid > 4194304 || (*end != '\n' && *end != '\0'))
                return -1;
        snprintf(path, sizeof(path), "/proc/%ld/ns/user", pid);
        return open(path, O_RDONLY | O_CLOEXEC);
}

int glove_protocol_client_open(const char *runtime_dir, uint64_t timeout_ms, struct glove_protocol_client **out,
                              struct glove_error *err) {
        return glove_protocol_client_open_secret(runtime_dir, "bootstrap-secret", timeout_ms, out, err);
}

int glove_protocol_client_open_secret(const char *runtime_dir, const char *secret_name, uint64_t timeout_ms,
                                      struct glove_protocol_client **out, struct glove_error *err) {
        *out = NULL;
        if (!runtime_dir || !secret_name || !*secret_name || strchr(secret_name, '/') || timeout_ms < 1 ||
            timeout_ms > 3600000)
                return glove_error_set(err, EINVAL, "client.invalid_argument", "bad runtime directory or timeout");
        struct glove_protocol_client *c = calloc(1, sizeof(*c));
        if (!c)
                return glove_error_set(err, ENOMEM, "client.no_memory", "out of memory");
        c->fd = -1;
        c->proof_fd = -1;
        c->timeout_ms = timeout_ms;
        c->next_id = 1;
        glove_buffer_init(&c->in, GLOVE_PROTOCOL_FRAME_PREFIX + GLOVE_PROTOCOL_FRAME_MAX);
        c->pending = json_array();
        if (!c->pending) {
                glove_protocol_client_close(c);
                return glove_error_set(err, ENOMEM, "client.no_memory", "out of memory");
        }
        char hex[65];
        int r = read_secret(runtime_dir, secret_name, hex, err);
        if (r == 0)
                r = connect_socket(runtime_dir, &c->fd, err);
        if (r == 0)
                c->proof_fd = open_proof(runtime_dir);
        if (r < 0) {
                glove_protocol_client_close(c);
                return r;
        }
        _cleanup_json_ json_t *params = json_pack("{s:s}", "secret", hex);
        explicit_bzero(hex, sizeof(hex));
        json_t *res = NULL;
        struct glove_protocol_remote_error remote;
        r = glove_protocol_client_call(c, "authenticate", params, &res, &remote, err);
        json_decref(res);
        json_decref(remote.data);
        if (r == 1)
                r = glove_error_set(err, EACCES, "client.auth_failed", "gloved refused authentication: %s: %s",
                                    remote.code, remote.message);
        if (r < 0) {
                glove_protocol_client_close(c);
                return r;
        }
        *out = c;
        return 0;
}

void glove_protocol_client_close(struct glove_protocol_client *c) {
        if (!c)
                return;
        if (c->fd >= 0)
                close(c->fd);
        if (c->proof_fd >= 0)
                close(c->proof_fd);
        glove_buffer_free(&c->in);
        json_decref(c->pending);
        free(c);
}

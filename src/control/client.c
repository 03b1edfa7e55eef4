/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking control-protocol client (see client.h). */
#include "glove/control/client.h"

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
#include "glove/control/frame.h"

#define SECRET_FILE_MAX 128

struct glove_control_client {
        int fd;
        uint64_t timeout_ms;
        int64_t next_id;
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

static int send_all(struct glove_control_client *c, const uint8_t *p, size_t len, uint64_t deadline,
                    struct glove_error *err) {
        while (len) {
                ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
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

static int recv_exact(struct glove_control_client *c, uint8_t *p, size_t len, uint64_t deadline,
                      struct glove_error *err) {
        while (len) {
                ssize_t n = recv(c->fd, p, len, MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        int r = wait_fd(c->fd, POLLIN, deadline, err);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n <= 0)
                        return glove_error_set(err, ECONNRESET, "client.closed", "gloved closed the connection");
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Sends one request and reads one response object (new reference). */
static int exchange(struct glove_control_client *c, json_t *req, json_t **resp, struct glove_error *err) {
        _cleanup_buffer_ struct glove_buffer out;
        glove_buffer_init(&out, GLOVE_CONTROL_FRAME_PREFIX + GLOVE_CONTROL_FRAME_MAX);
        uint64_t deadline = glove_time_monotonic_ms() + c->timeout_ms;
        int r = glove_control_frame_encode(req, &out, err);
        if (r == 0)
                r = send_all(c, out.data, out.len, deadline, err);
        uint8_t prefix[GLOVE_CONTROL_FRAME_PREFIX];
        if (r == 0)
                r = recv_exact(c, prefix, sizeof(prefix), deadline, err);
        if (r < 0)
                return r;
        uint32_t n = ((uint32_t)prefix[0] << 24) | ((uint32_t)prefix[1] << 16) | ((uint32_t)prefix[2] << 8) | prefix[3];
        if (n == 0 || n > GLOVE_CONTROL_FRAME_MAX)
                return glove_error_set(err, EPROTO, "client.protocol", "gloved sent a frame of %u bytes", n);
        _cleanup_free_ uint8_t *payload = malloc(n);
        if (!payload)
                return glove_error_set(err, ENOMEM, "client.no_memory", "out of memory");
        r = recv_exact(c, payload, n, deadline, err);
        if (r < 0)
                return r;
        struct glove_error e = { 0 };
        if (glove_json_decode_strict(payload, n, GLOVE_CONTROL_FRAME_MAX, GLOVE_JSON_OBJECT_ONLY, resp, &e) < 0)
                return glove_error_set(err, EPROTO, "client.protocol", "gloved sent an invalid frame: %s", e.message);
        return 0;
}

static void fill_remote(const json_t *error, struct glove_control_remote_error *remote) {
        const char *code = json_string_value(json_object_get(error, "code"));
        const char *msg = json_string_value(json_object_get(error, "message"));
        json_t *data = json_object_get(error, "data");
        snprintf(remote->code, sizeof(remote->code), "%s", code ? code : "unknown");
        snprintf(remote->message, sizeof(remote->message), "%s", msg ? msg : "");
        remote->data = json_is_object(data) ? json_incref(data) : NULL;
}

int glove_control_client_call(struct glove_control_client *c, const char *method, json_t *params, json_t **result,
                              struct glove_control_remote_error *remote, struct glove_error *err) {
        *result = NULL;
        memset(remote, 0, sizeof(*remote));
        json_int_t id = c->next_id++;
        _cleanup_json_ json_t *req = json_pack("{s:I,s:s,s:o}", "id", id, "method", method, "params",
                                               params ? json_incref(params) : json_object());
        if (!req)
                return glove_error_set(err, ENOMEM, "client.invalid_argument", "cannot build the request");
        _cleanup_json_ json_t *resp = NULL;
        int r = exchange(c, req, &resp, err);
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

static int read_secret(const char *runtime_dir, char hex[65], struct glove_error *err) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/bootstrap-secret", runtime_dir) >= sizeof(path))
                return glove_error_set(err, ENAMETOOLONG, "client.unreachable", "runtime directory path too long");
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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

int glove_control_client_open(const char *runtime_dir, uint64_t timeout_ms, struct glove_control_client **out,
                              struct glove_error *err) {
        *out = NULL;
        if (!runtime_dir || timeout_ms < 1 || timeout_ms > 3600000)
                return glove_error_set(err, EINVAL, "client.invalid_argument", "bad runtime directory or timeout");
        struct glove_control_client *c = calloc(1, sizeof(*c));
        if (!c)
                return glove_error_set(err, ENOMEM, "client.no_memory", "out of memory");
        c->fd = -1;
        c->timeout_ms = timeout_ms;
        c->next_id = 1;
        char hex[65];
        int r = read_secret(runtime_dir, hex, err);
        if (r == 0)
                r = connect_socket(runtime_dir, &c->fd, err);
        if (r < 0) {
                glove_control_client_close(c);
                return r;
        }
        _cleanup_json_ json_t *params = json_pack("{s:s}", "secret", hex);
        explicit_bzero(hex, sizeof(hex));
        json_t *res = NULL;
        struct glove_control_remote_error remote;
        r = glove_control_client_call(c, "authenticate", params, &res, &remote, err);
        json_decref(res);
        json_decref(remote.data);
        if (r == 1)
                r = glove_error_set(err, EACCES, "client.auth_failed", "gloved refused authentication: %s: %s",
                                    remote.code, remote.message);
        if (r < 0) {
                glove_control_client_close(c);
                return r;
        }
        *out = c;
        return 0;
}

void glove_control_client_close(struct glove_control_client *c) {
        if (!c)
                return;
        if (c->fd >= 0)
                close(c->fd);
        free(c);
}

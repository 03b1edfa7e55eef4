/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by the services unit tests: a private temporary directory, real
 * Unix-socket upstreams served by a thread (echo, silent, trailing), and the
 * error assertions. Include after <cmocka.h>.
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "glove/base/time.h"
#include "glove/services/frame.h"

#define FIXTURE_TMP_PREFIX "glove-svc"
#include "../expect.h"
#include "../tmpdir_fixture.h"

/* A listening Unix socket bound at path (removed first), chmod'ed to mode. */
static inline int fixture_listen(const char *path, mode_t mode) {
        (void)unlink(path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        assert_true(strlen(path) < sizeof(sa.sun_path));
        strcpy(sa.sun_path, path);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(chmod(path, mode), 0);
        assert_int_equal(listen(fd, 16), 0);
        return fd;
}

/* A client connected to the socket at path (blocking), or -1. */
static inline int fixture_connect(const char *path) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, path);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

#define SKIP_UNLESS_ROOT(why)                                                                                   \
        do {                                                                                                    \
                if (geteuid() != 0) {                                                                           \
                        fprintf(stderr, "skipped: %s\n", (why));                                                \
                        skip();                                                                                 \
                }                                                                                               \
        } while (0)

/* ---- a test upstream: a thread serving a listening socket ---- */

enum upstream_mode {
        UPSTREAM_ECHO,     /* answers each request frame with "re:" + the request, then closes */
        UPSTREAM_SILENT,   /* reads the request and never answers (holds the connection) */
        UPSTREAM_TRAILING, /* answers, then sends one more byte */
};

#define UPSTREAM_HELD_MAX 8

struct upstream {
        char path[FIXTURE_PATH_MAX];
        enum upstream_mode mode;
        int listen_fd;
        int stop[2];
        pthread_t thread;
        atomic_int connections;
        int held[UPSTREAM_HELD_MAX];
        int n_held;
};

static inline void upstream_serve(struct upstream *u, int c) {
        uint8_t buf[GLOVE_SERVICES_FRAME_MAX];
        size_t len = 0;
        uint64_t deadline = glove_time_monotonic_ms() + 5000;
        if (glove_services_frame_read(c, u->stop[0], deadline, buf, &len, NULL) < 0) {
                close(c);
                return;
        }
        if (u->mode == UPSTREAM_SILENT) {
                if (u->n_held < UPSTREAM_HELD_MAX)
                        u->held[u->n_held++] = c;
                else
                        close(c);
                return;
        }
        /* The answer (and, TRAILING, one more byte) in one send, so the
         * proxy sees all of it at once. */
        uint8_t out[GLOVE_SERVICES_FRAME_HEADER + GLOVE_SERVICES_FRAME_MAX + 1];
        size_t n = len + 3 > GLOVE_SERVICES_FRAME_MAX ? GLOVE_SERVICES_FRAME_MAX : len + 3;
        out[0] = (uint8_t)(n >> 24);
        out[1] = (uint8_t)(n >> 16);
        out[2] = (uint8_t)(n >> 8);
        out[3] = (uint8_t)n;
        memcpy(out + 4, "re:", 3);
        memcpy(out + 7, buf, n - 3);
        size_t total = n + 4;
        if (u->mode == UPSTREAM_TRAILING)
                out[total++] = 'x';
        struct pollfd p = { .fd = c, .events = POLLOUT };
        size_t off = 0;
        while (off < total && poll(&p, 1, 5000) > 0) {
                ssize_t k = send(c, out + off, total - off, MSG_NOSIGNAL);
                if (k <= 0)
                        break;
                off += (size_t)k;
        }
        close(c);
}

static inline void *upstream_main(void *arg) {
        struct upstream *u = arg;
        for (;;) {
                struct pollfd p[2] = { { .fd = u->stop[0], .events = POLLIN }, { .fd = u->listen_fd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[0].revents)
                        break;
                int c = accept4(u->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0)
                        continue;
                atomic_fetch_add(&u->connections, 1);
                upstream_serve(u, c);
        }
        return NULL;
}

/* Starts an upstream at path (a 0600 socket owned by the caller). */
static inline void upstream_start(struct upstream *u, const char *path, enum upstream_mode mode) {
        memset(u, 0, sizeof(*u));
        snprintf(u->path, sizeof(u->path), "%s", path);
        u->mode = mode;
        u->listen_fd = fixture_listen(path, 0600);
        assert_int_equal(pipe2(u->stop, O_CLOEXEC | O_NONBLOCK), 0);
        atomic_init(&u->connections, 0);
        assert_int_equal(pthread_create(&u->thread, NULL, upstream_main, u), 0);
}

/* Stops the thread and closes its descriptors; the socket file stays. */
static inline void upstream_stop(struct upstream *u) {
        if (u->stop[1] < 0)
                return;
        assert_int_equal(write(u->stop[1], "x", 1), 1);
        assert_int_equal(pthread_join(u->thread, NULL), 0);
        for (int i = 0; i < u->n_held; i++)
                close(u->held[i]);
        close(u->listen_fd);
        close(u->stop[0]);
        close(u->stop[1]);
        u->stop[1] = -1;
}

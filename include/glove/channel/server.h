/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The observation server (spec architecture.md, "Historical synthetic
 * status milestone", third paragraph): owns one listening AF_UNIX stream
 * socket and one worker thread that serves connections one at a time.
 *
 * Accept: one absolute accept deadline (now + accept_window_ms) is carried
 * through every retry and stop-aware transient backoff (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM and other accept failures back off from
 * GLOVE_CHANNEL_SERVER_BACKOFF_MIN_MS doubling to
 * GLOVE_CHANNEL_SERVER_BACKOFF_MAX_MS, never past the deadline; EINTR and
 * ECONNABORTED retry at once). When the deadline passes with no
 * connection a new window starts; the loop runs until stop.
 *
 * Per connection, under ONE absolute I/O deadline (accept + io_timeout_ms)
 * shared by the receive and the response send:
 *   1. adopt it as a guest-channel transport (glove/channel/transport.h;
 *      AF_UNIX, SOCK_STREAM, SO_PEERCRED uid == peer_uid),
 *   2. receive one frame (the intent, glove/channel/registry.h),
 *   3. check stop and the deadline,
 *   4. resolve the peer's registry (resolve(ctx, SO_PEERCRED pid)), enqueue
 *      at now_ms(), unresolve,
 *   5. check stop and the deadline,
 *   6. send one response frame, then close.
 * Response (canonical JSON): {"digest":HEX,"duplicate":BOOL,"ok":true,"seq":N}
 * or {"code":CODE,"ok":false} with the registry's stable code (or
 * channel.unknown_peer when resolve gives NULL). A connection that fails
 * adoption, framing, the deadline or stop is closed with no response. The
 * registry append is trusted synchronous local work and is not interrupted
 * once started: a stop or deadline that passes during it suppresses the
 * response, and the guest's idempotent retry finds the admission. The hard
 * bound covers accept, framed I/O and cooperative cancellation, not the
 * handler's execution.
 *
 * Stable error codes of glove_channel_server_start (struct glove_error):
 *   channel.invalid_argument  no config, listen_fd < 0, no resolve, a
 *                             timeout outside its bounds (-EINVAL)
 *   channel.server_listen     listen_fd is not a listening AF_UNIX
 *                             SOCK_STREAM socket (-EINVAL)
 *   channel.server_start      eventfd, fcntl or pthread_create failed (-errno)
 *   channel.no_memory         (-ENOMEM)
 */

#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/channel/registry.h"

/* Bounds of the configuration, in milliseconds. */
#define GLOVE_CHANNEL_SERVER_WINDOW_MAX_MS 3600000u
#define GLOVE_CHANNEL_SERVER_IO_MAX_MS 600000u
/* Transient accept backoff, in milliseconds. */
#define GLOVE_CHANNEL_SERVER_BACKOFF_MIN_MS 10u
#define GLOVE_CHANNEL_SERVER_BACKOFF_MAX_MS 500u

struct glove_channel_server_config {
        /* A listening AF_UNIX SOCK_STREAM socket; moved in (closed by the
         * server, also when start fails). */
        int listen_fd;
        /* The only UID a peer may have (SO_PEERCRED). */
        uid_t peer_uid;
        /* The accept deadline window, 1..GLOVE_CHANNEL_SERVER_WINDOW_MAX_MS. */
        uint32_t accept_window_ms;
        /* The per-connection I/O deadline, 1..GLOVE_CHANNEL_SERVER_IO_MAX_MS. */
        uint32_t io_timeout_ms;
        /* Which registry a connection belongs to: called on the worker thread
         * with the peer's SO_PEERCRED pid; returns a borrowed registry (valid
         * until the matching unresolve) or NULL (the connection is answered
         * {"code":"channel.unknown_peer","ok":false}). Must be thread-safe.
         * Required. */
        struct glove_channel_registry *(*resolve)(void *ctx, pid_t peer_pid);
        /* Releases what resolve returned (called once per non-NULL resolve,
         * on the worker thread). May be NULL. */
        void (*unresolve)(void *ctx, struct glove_channel_registry *r);
        void *ctx;
        /* Realtime milliseconds for skew and expiry; NULL: glove_time_realtime_ms. */
        int64_t (*now_ms)(void);
};

/* Counters since start (read with glove_channel_server_stats). */
struct glove_channel_server_stats {
        uint64_t accepted;      /* connections accepted */
        uint64_t answered_ok;   /* responses {"ok":true} sent */
        uint64_t answered_err;  /* responses {"ok":false} sent */
        uint64_t dropped;       /* connections closed with no response */
        uint64_t accept_errors; /* accept failures that backed off or retried */
};

/* The server. Opaque. */
struct glove_channel_server;

/*
 * Validates c, takes c->listen_fd, and starts the worker thread (with every
 * signal blocked). The registries resolve returns are not owned; everything
 * they need must outlive glove_channel_server_stop. *out is owned by the
 * caller (glove_channel_server_stop). Errors: see the top of this header.
 */
int glove_channel_server_start(const struct glove_channel_server_config *c, struct glove_channel_server **out,
                               struct glove_error *err);

/* A snapshot of the counters (any thread). */
void glove_channel_server_stats(const struct glove_channel_server *s, struct glove_channel_server_stats *out);

/*
 * Signals the stop token, joins the worker (a connection in progress is
 * cancelled at its next wait; a registry append in progress finishes
 * first), then closes the listening socket and frees s (NULL allowed).
 */
void glove_channel_server_stop(struct glove_channel_server *s);

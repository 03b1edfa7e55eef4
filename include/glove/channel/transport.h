/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The guest-channel transport (spec architecture.md, "Historical synthetic
 * status milestone", second paragraph): owns one connected Unix stream
 * descriptor, verifies AF_UNIX, SOCK_STREAM and the required peer UID, and
 * performs only bounded four-byte big-endian framed I/O (services' frames,
 * glove/services/frame.h: 1..GLOVE_SERVICES_FRAME_MAX payload bytes). Each
 * receive or send takes its caller's absolute CLOCK_MONOTONIC deadline and
 * stop token. The transport is harness-neutral: payload semantics,
 * persistence and projection stay outside it.
 *
 * Single-thread confined: one thread at a time uses a transport. It has no
 * handler, no exchange and no close API: its owner stops and joins the
 * worker that uses it before glove_channel_transport_free closes the
 * descriptor, so no descriptor is closed while another thread may still
 * use (or reuse) its number.
 *
 * A failed receive or send poisons the transport (the stream position is
 * unknown): every later receive or send fails with
 * channel.transport_poisoned.
 *
 * Stable error codes (struct glove_error; err may be NULL):
 *   channel.invalid_argument   fd < 0, out NULL, deadline_ms 0, buf or len NULL (-EINVAL)
 *   channel.transport_family   not a socket, or not AF_UNIX (-EAFNOSUPPORT)
 *   channel.transport_type     not SOCK_STREAM (-EPROTOTYPE)
 *   channel.transport_peer_uid no peer credentials, or the peer's UID is
 *                              not peer_uid (-EPERM)
 *   channel.transport_setup    fcntl failed (-errno)
 *   channel.transport_poisoned an earlier receive or send failed (-EPIPE)
 *   channel.no_memory          (-ENOMEM)
 *   services.*                 framing, end of stream, timeout and
 *                              cancellation, from glove/services/frame.h
 *                              (services.frame_empty, services.frame_too_large,
 *                              services.closed, services.timeout,
 *                              services.cancelled, services.io)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/services/frame.h"

/* Largest payload of one frame (GLOVE_SERVICES_FRAME_MAX, 16 KiB). */
#define GLOVE_CHANNEL_FRAME_MAX GLOVE_SERVICES_FRAME_MAX

/* The transport. Opaque. */
struct glove_channel_transport;

/*
 * Takes ownership of fd (moved in: closed on every failure too), checks it
 * is a connected AF_UNIX SOCK_STREAM socket whose peer (SO_PEERCRED) has
 * UID peer_uid, and makes it non-blocking and close-on-exec. *out is owned
 * by the caller (glove_channel_transport_free). Errors:
 * channel.invalid_argument, channel.transport_family,
 * channel.transport_type, channel.transport_peer_uid,
 * channel.transport_setup, channel.no_memory.
 */
int glove_channel_transport_new(int fd, uid_t peer_uid, struct glove_channel_transport **out,
                                struct glove_error *err);

/*
 * Receives one frame into buf (GLOVE_CHANNEL_FRAME_MAX bytes) and its
 * payload length into *len, by deadline_ms (absolute CLOCK_MONOTONIC
 * milliseconds, glove_time_monotonic_ms; non-zero), stopping early with
 * services.cancelled when stop_fd (an eventfd or pipe read end; -1 for
 * none) is readable. Errors: channel.transport_poisoned,
 * channel.invalid_argument, services.*.
 */
int glove_channel_transport_recv(struct glove_channel_transport *t, uint64_t deadline_ms, int stop_fd, uint8_t *buf,
                                 size_t *len, struct glove_error *err);

/*
 * Sends buf[0..len) (1..GLOVE_CHANNEL_FRAME_MAX bytes) as one frame, with
 * the same deadline and stop token rules. Returns once every byte is in the
 * socket's send buffer. Errors: as glove_channel_transport_recv.
 */
int glove_channel_transport_send(struct glove_channel_transport *t, uint64_t deadline_ms, int stop_fd,
                                 const uint8_t *buf, size_t len, struct glove_error *err);

/* The peer's credentials recorded at glove_channel_transport_new
 * (SO_PEERCRED: the pid and uid of the process that connected). */
pid_t glove_channel_transport_peer_pid(const struct glove_channel_transport *t);
uid_t glove_channel_transport_peer_uid(const struct glove_channel_transport *t);

/* True once a receive or send failed. */
bool glove_channel_transport_poisoned(const struct glove_channel_transport *t);

/*
 * Closes the descriptor and frees t (NULL allowed). Only after the owner
 * stopped and joined the worker that uses it: no other thread may hold t.
 */
void glove_channel_transport_free(struct glove_channel_transport *t);

static inline void glove_channel_transport_freep(struct glove_channel_transport **t) {
        if (t)
                glove_channel_transport_free(*t);
}
#define _cleanup_channel_transport_ __attribute__((cleanup(glove_channel_transport_freep)))

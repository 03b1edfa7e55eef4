/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The namespace-local egress helper (spec architecture.md, "Platform
 * isolation: network": "a namespace-local helper passes accepted loopback
 * sockets to a host relay with SCM_RIGHTS"; docs/egress.md).
 *
 * Who calls what, in which process:
 *   1. Glove creates the channel: socketpair(AF_UNIX, SOCK_SEQPACKET |
 *      SOCK_CLOEXEC) (SOCK_STREAM works too). One end goes to the relay
 *      (relay.h, in Glove's process), the other is inherited by the helper.
 *   2. Inside the sandbox's network namespace, in a process forked by the
 *      sandbox's PID 1 while it still holds CAP_NET_ADMIN in the namespace:
 *      glove_net_loopback_up(), then glove_net_listener_open() (which reports
 *      the port, so the agent's environment can name it: proxy_env.h). The
 *      order matters only in that 127.0.0.1 exists once lo is up.
 *   3. The helper process (one PID of the run's pid limit) calls
 *      glove_net_listener_run() with the inherited channel and the listening
 *      socket; it accepts connections and passes each one to the relay. It
 *      never reads a byte of what the agent sends. It needs no privilege
 *      for this: capabilities can be dropped and a seccomp filter applied
 *      before the call. It uses poll, accept4, sendmsg, close and fcntl
 *      (F_GETFL/F_SETFL) only, and is single-threaded.
 *
 * Stable error codes: egress.loopback (bringing lo up failed, e.g. -EPERM
 * without CAP_NET_ADMIN in the namespace), egress.listen (socket, bind,
 * listen or getsockname failed), egress.helper (accept or sendmsg failed in
 * a way that cannot be retried). Every err argument may be NULL.
 */

#include <stdint.h>

#include "glove/base/error.h"

/* Backlog of the helper's listening socket (connections not yet accepted). */
#define GLOVE_NET_LISTENER_BACKLOG 128

/*
 * Sets IFF_UP on the loopback interface "lo" of the calling process's network
 * namespace (ioctl SIOCGIFFLAGS/SIOCSIFFLAGS on an AF_INET datagram socket;
 * needs CAP_NET_ADMIN over the namespace). Idempotent. Returns 0 or -errno
 * (egress.loopback).
 */
int glove_net_loopback_up(struct glove_error *err);

/*
 * Opens a TCP listening socket on 127.0.0.1:port (port 0: an ephemeral port
 * chosen by the kernel), O_CLOEXEC and O_NONBLOCK, with SO_REUSEADDR and a
 * backlog of GLOVE_NET_LISTENER_BACKLOG. Stores the descriptor in *out_fd
 * (caller closes) and the bound port (host byte order) in *out_port (may be
 * NULL). Returns 0 or -errno (egress.listen); *out_fd is -1 on error.
 */
int glove_net_listener_open(uint16_t port, int *out_fd, uint16_t *out_port,
                            struct glove_error *err);

/*
 * Accepts connections on listen_fd forever and sends each accepted descriptor
 * over unix_fd with SCM_RIGHTS (one message: one byte of payload and one
 * descriptor), then closes its own copy. Nothing is read from the accepted
 * connections. Neither descriptor is closed; listen_fd is switched to
 * O_NONBLOCK.
 *
 * Returns 0 when the relay's end of unix_fd is gone (hang-up, EPIPE,
 * ECONNRESET): the run is over and the helper should _exit(0). Transient
 * failures (a connection aborted before accept, EMFILE, ENFILE, ENOBUFS,
 * ENOMEM, ETOOMANYREFS) drop the one connection and continue after a 10 ms
 * pause. Returns -errno (egress.helper) on anything else (EBADF, EINVAL,
 * ENOTSOCK: a programming error).
 */
int glove_net_listener_run(int unix_fd, int listen_fd, struct glove_error *err);

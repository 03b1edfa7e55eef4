/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internals of the net module shared between its source files and its unit
 * tests (tests/unit/net). Not a public interface. */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/net/relay.h"
#include "glove/net/rule.h"

/* base64 of "glove:" + a GLOVE_NET_TOKEN_MAX token, with its NUL. */
#define GLOVE_NET_CREDENTIALS_MAX 192
/* Longest answer the proxy writes (status line, headers, body). */
#define GLOVE_NET_RESPONSE_MAX 512
/* After a denial: read and drop at most this many bytes for at most this
 * long before closing, so the agent reads the answer instead of a reset. */
#define GLOVE_NET_LINGER_BYTES (64 * 1024)
#define GLOVE_NET_LINGER_MS 1000
/* Descriptors taken from one message on the helper channel. */
#define GLOVE_NET_RECV_FDS_MAX 8
/* Stack of each relay thread. */
#define GLOVE_NET_THREAD_STACK (512 * 1024)

/* Length of the request head in buf[0..len) including its terminating blank
 * line ("\r\n\r\n"), or 0 when the head is not complete yet. */
size_t glove_net_head_end(const char *buf, size_t len);

struct glove_net_connect_head {
        struct glove_net_host host;
        uint16_t port;
        bool target_ok; /* host and port hold a valid target (also on BAD_AUTH,
                         * so the refusal can name what was asked for) */
};

/*
 * Parses the complete request head buf[0..len) (ending in "\r\n\r\n") of a
 * proxy request and checks its credentials against credentials (the base64
 * text expected after "Basic "). Returns GLOVE_NET_EGRESS_OK and fills *out,
 * (out->target_ok also tells whether the target parsed when BAD_AUTH is
 * returned),
 * or the reason of the refusal with the HTTP status in *status
 * (BAD_REQUEST 400 or 505, METHOD_NOT_ALLOWED 405, BAD_AUTH 407,
 * HEAD_TOO_LARGE 431 for too many header lines).
 */
enum glove_net_egress_reason glove_net_head_parse(const char *buf, size_t len, const char *credentials,
                                                  struct glove_net_connect_head *out, int *status);

/* Writes the proxy's answer with status (200, 400, 403, ...) for reason into
 * buf (GLOVE_NET_RESPONSE_MAX bytes). Returns its length. */
size_t glove_net_response_format(int status, enum glove_net_egress_reason reason, char *buf);

struct glove_net_relay;

/* One connection slot of a relay. */
struct glove_net_conn {
        struct glove_net_relay *relay;
        pthread_t thread;
        bool used;      /* a thread was started and not yet joined */
        bool finished;  /* the thread is done; join it */
        int fd;         /* the agent's connection (owned by the thread) */
        uint64_t id;
        uint64_t start_ms;
};

struct glove_net_relay {
        struct glove_net_policy policy;
        char credentials[GLOVE_NET_CREDENTIALS_MAX];
        unsigned max_connections;
        uint32_t head_timeout_ms, connect_timeout_ms, idle_timeout_ms, max_duration_ms;
        glove_net_audit_fn audit;
        void *audit_userdata;
        int unix_fd;
        int stop_fd; /* eventfd; readable once the relay stops */
        pthread_t acceptor;
        bool acceptor_started;
        pthread_mutex_t lock;       /* slots, active, next_id */
        pthread_mutex_t audit_lock; /* serializes audit callbacks */
        struct glove_net_conn *slots;
        unsigned active;
        uint64_t next_id;
};

/* Calls the audit callback (serialized); returns its result (0 without one). */
int glove_net_relay_emit(struct glove_net_relay *r, const struct glove_net_egress_event *ev);

/* Thread body serving one connection slot (relay_conn.c). */
void *glove_net_conn_main(void *slot);

/* Waits until fd has one of events, the relay stops, or deadline_ms
 * (CLOCK_MONOTONIC ms) passes. Returns 1 (ready), 0 (deadline), -1 (stop). */
int glove_net_wait(int fd, short events, int stop_fd, uint64_t deadline_ms);

/* Writes an answer to the agent and closes fd after a bounded linger
 * (shutdown, drain, close). status 0 writes nothing. */
void glove_net_answer_and_close(int fd, int stop_fd, int status, enum glove_net_egress_reason reason,
                                bool may_block);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The proxy object, shared by proxy.c (life cycle) and exchange.c (the
 * workers). */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "glove/services/audit.h"
#include "glove/services/config.h"
#include "glove/services/frame.h"
#include "glove/services/proxy.h"

struct glove_services_proxy;

struct svc_worker {
        struct glove_services_proxy *proxy;
        char alias[GLOVE_SERVICES_ALIAS_MAX + 1];
        struct glove_services_endpoint *upstream;
        int guest_fd; /* touched only by the worker while it runs */
        pthread_t thread;
        bool started;
        _Atomic uint64_t delivered, failed;
        _Atomic int state; /* enum glove_services_route_state */
        _Atomic(const char *) last_code;
        uint8_t req[GLOVE_SERVICES_FRAME_MAX];
        uint8_t resp[GLOVE_SERVICES_FRAME_MAX];
};

struct glove_services_proxy {
        char session_id[GLOVE_SERVICES_SESSION_ID_MAX + 1];
        enum glove_services_transport transport;
        uid_t service_uid;
        int audit_fd;
        uint64_t audit_max_bytes; /* 0: none */
        int stop_fd; /* an eventfd, written once by stop; never read */
        uint32_t timeout_ms;
        size_t n;
        struct svc_worker w[GLOVE_SERVICES_MAX_ROUTES];
};

/* The worker thread's body. */
void *svc_worker_main(void *arg);

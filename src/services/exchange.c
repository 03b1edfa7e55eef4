/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The proxy's workers: one exchange, the inherited-stream loop and the
 * pathname listener loop (glove/services/proxy.h describes the sequence).
 */
#include <sys/stat.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/time.h"
#include "internal.h"
#include "proxy_internal.h"

/* How long a worker waits before accepting again after the process or the
 * system ran out of descriptors or memory, in milliseconds. */
#define ACCEPT_BACKOFF_MS 100

static uint64_t since(uint64_t t0) {
        uint64_t now = glove_time_monotonic_ms();
        return now > t0 ? now - t0 : 0;
}

/* Records a failed exchange: best-effort delivery_failed (no deadline) when
 * record, then the counters. */
static void record_failure(struct svc_worker *w, uint64_t t0, const char *code, bool record) {
        struct glove_services_proxy *p = w->proxy;
        if (!code)
                code = "services.io";
        if (record)
                (void)glove_services_audit_append(p->audit_fd, p->session_id, w->alias, GLOVE_SERVICES_PHASE_FAILED,
                                                  code, since(t0), 0, NULL);
        atomic_store(&w->last_code, code);
        atomic_fetch_add(&w->failed, 1);
}

/* The guest side has no queued input (end of stream is not input). */
static int boundary(int guest, const char *when, struct glove_error *err) {
        bool queued = false;
        int r = glove_services_queued(guest, &queued, NULL, err);
        if (r < 0)
                return r;
        if (queued)
                return glove_error_set(err, EPROTO, "services.pipelined", "input queued %s", when);
        return 0;
}

/*
 * Right after the response's release: input queued while the agent has not
 * read all of the response (our end's unread-by-the-peer bytes, SIOCOUTQ,
 * above zero) was written before the agent could know the response was
 * whole: pipelining, poisoned. Input queued once the agent had read it all
 * is its next request (served at the next request boundary): an agent that
 * reads a response and at once writes the next request is not penalized.
 * The queue is looked at first and the count after, so that a refusal is
 * proof (the count only falls once the response is sent). Also run when
 * the next request's first byte is seen: a partly read response is still
 * unread then.
 */
static int after_release(int guest, struct glove_error *err) {
        bool queued = false;
        int r = glove_services_queued(guest, &queued, NULL, err);
        if (r < 0 || !queued)
                return r;
        int unread = 0;
        if (ioctl(guest, SIOCOUTQ, &unread) < 0)
                return glove_error_set(err, errno, "services.io", "SIOCOUTQ: %s", strerror(errno));
        if (unread > 0)
                return glove_error_set(err, EPROTO, "services.pipelined",
                                       "input queued before the agent had read the whole response");
        return 0;
}

/* The audit file is below its bound (proxy.h, audit_max_bytes). */
static int audit_room(const struct glove_services_proxy *p, struct glove_error *err) {
        struct stat st;
        if (!p->audit_max_bytes)
                return 0;
        if (fstat(p->audit_fd, &st) < 0)
                return glove_error_set(err, errno, "services.audit_failed", "fstat of the audit log: %s", strerror(errno));
        if ((uint64_t)st.st_size >= p->audit_max_bytes)
                return glove_error_set(err, ENOSPC, "services.audit_full",
                                       "the audit log holds %lld bytes, the session's bound is %llu",
                                       (long long)st.st_size, (unsigned long long)p->audit_max_bytes);
        return 0;
}

/* Steps 2 and 3: the upstream round trip of req[0..req_len) into w->resp. */
static int upstream_round_trip(struct svc_worker *w, uint64_t deadline, size_t req_len, size_t *resp_len,
                               struct glove_error *err) {
        struct glove_services_proxy *p = w->proxy;
        _cleanup_close_ int up = -1;
        int r = glove_services_endpoint_connect_stop(w->upstream, p->stop_fd, deadline, &up, err);
        if (r < 0)
                return r;
        if ((r = glove_services_frame_write(up, p->stop_fd, deadline, w->req, req_len, err)) < 0)
                return r;
        if ((r = glove_services_frame_read(up, p->stop_fd, deadline, w->resp, resp_len, err)) < 0)
                return r;
        bool queued = false;
        if ((r = glove_services_queued(up, &queued, NULL, err)) < 0)
                return r;
        if (queued)
                return glove_error_set(err, EPROTO, "services.frame_trailing", "the upstream sent bytes after its response");
        return 0;
}

/*
 * One exchange after the request was read (steps 2 to 8 of proxy.h).
 * Returns 0 when delivered was recorded. On failure *record says whether a
 * delivery_failed record belongs to it (false only when the delivered
 * append itself failed).
 */
static int exchange(struct svc_worker *w, int guest, uint64_t t0, uint64_t deadline, size_t req_len, bool *record,
                    struct glove_error *err) {
        struct glove_services_proxy *p = w->proxy;
        *record = true;
        size_t resp_len = 0;
        int r = upstream_round_trip(w, deadline, req_len, &resp_len, err);
        if (r < 0)
                return r;
        if ((r = boundary(guest, "before the audit", err)) < 0)
                return r;
        if ((r = audit_room(p, err)) < 0)
                return r;
        if ((r = glove_services_audit_append(p->audit_fd, p->session_id, w->alias, GLOVE_SERVICES_PHASE_PENDING,
                                             "pending", since(t0), deadline, err)) < 0)
                return r;
        if ((r = boundary(guest, "after the audit, before the response's release", err)) < 0)
                return r;
        if ((r = glove_services_frame_write(guest, p->stop_fd, deadline, w->resp, resp_len, err)) < 0)
                return r;
        if ((r = after_release(guest, err)) < 0)
                return r;
        r = glove_services_audit_append(p->audit_fd, p->session_id, w->alias, GLOVE_SERVICES_PHASE_DELIVERED, "ok",
                                        since(t0), deadline, err);
        if (r < 0)
                *record = false;
        return r;
}

/* Reads the request on guest and runs the exchange. Returns 0 (delivered),
 * 1 (the guest closed at a request boundary: nothing recorded), or -errno
 * (recorded as a failure). */
static int serve_one(struct svc_worker *w, int guest, uint64_t t0) {
        struct glove_services_proxy *p = w->proxy;
        uint64_t deadline = t0 + p->timeout_ms;
        struct glove_error err = { 0 };
        size_t len = 0;
        /* A request that arrives while the agent has still not read all of
         * the previous response was written before it could know that
         * response whole: pipelining, however long it waited after a
         * partial read (after_release's rule, at the next boundary). */
        int r = after_release(guest, &err);
        if (r == 0)
                r = glove_services_frame_read(guest, p->stop_fd, deadline, w->req, &len, &err);
        if (r == -EPIPE && err.code && strcmp(err.code, "services.closed") == 0)
                return 1;
        bool record = true;
        if (r >= 0)
                r = exchange(w, guest, t0, deadline, len, &record, &err);
        if (r < 0) {
                record_failure(w, t0, err.code, record);
                return r;
        }
        atomic_fetch_add(&w->delivered, 1);
        return 0;
}

static void set_state(struct svc_worker *w, enum glove_services_route_state s) {
        glove_closep(&w->guest_fd);
        w->guest_fd = -1;
        atomic_store(&w->state, (int)s);
}

/* Waits, with no deadline, until the route's descriptor is readable
 * (what: the wait's name in an error). Returns true then; false when the
 * proxy stops, or when the wait failed and poisoned the route with its
 * code. */
static bool wait_readable(struct svc_worker *w, const char *what) {
        struct glove_error err = { 0 };
        int r = svc_wait(w->guest_fd, POLLIN, w->proxy->stop_fd, 0, what, &err);
        if (r == -ECANCELED)
                return false;
        if (r < 0) {
                atomic_store(&w->last_code, err.code);
                set_state(w, GLOVE_SERVICES_ROUTE_POISONED);
                return false;
        }
        return true;
}

static void inherited_loop(struct svc_worker *w) {
        while (wait_readable(w, "waiting for a request")) {
                int r = serve_one(w, w->guest_fd, glove_time_monotonic_ms());
                if (r > 0) {
                        set_state(w, GLOVE_SERVICES_ROUTE_CLOSED);
                        return;
                }
                if (r < 0) {
                        set_state(w, GLOVE_SERVICES_ROUTE_POISONED);
                        return;
                }
        }
}

/* One accepted PATHNAME connection: the peer check and one exchange. */
static void serve_connection(struct svc_worker *w, int conn) {
        struct glove_services_proxy *p = w->proxy;
        uint64_t t0 = glove_time_monotonic_ms();
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
                record_failure(w, t0, "services.io", true);
                return;
        }
        if (cred.uid != p->service_uid) {
                record_failure(w, t0, "services.peer_uid", true);
                return;
        }
        (void)serve_one(w, conn, t0);
}

static bool accept_transient(int e) {
        return e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED || e == EPROTO;
}

static bool accept_exhausted(int e) {
        return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

static void pathname_loop(struct svc_worker *w) {
        struct glove_services_proxy *p = w->proxy;
        while (wait_readable(w, "waiting for a connection")) {
                _cleanup_close_ int conn = accept4(w->guest_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (conn < 0) {
                        int e = errno;
                        if (accept_transient(e))
                                continue;
                        if (accept_exhausted(e)) {
                                if (svc_wait(-1, 0, p->stop_fd, glove_time_monotonic_ms() + ACCEPT_BACKOFF_MS,
                                             "waiting after accept", NULL) == -ECANCELED)
                                        return;
                                continue;
                        }
                        atomic_store(&w->last_code, "services.io");
                        set_state(w, GLOVE_SERVICES_ROUTE_POISONED);
                        return;
                }
                serve_connection(w, conn);
        }
}

void *svc_worker_main(void *arg) {
        struct svc_worker *w = arg;
        if (w->proxy->transport == GLOVE_SERVICES_TRANSPORT_INHERITED)
                inherited_loop(w);
        else
                pathname_loop(w);
        return NULL;
}

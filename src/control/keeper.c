/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session keeper (keeper.h): one process per managed session, forked by
 * gloved and never exec'd.
 *
 * Its life: detach from gloved (own session, default signals, descriptors
 * 0..2 on /dev/null and DIR/SESSION.log, the four it is given on 3..6,
 * nothing else open); start the session on its own sd-event loop, attached
 * to its terminal as the one client; serve one gloved connection at a time
 * (the inherited channel first, then whatever connects to DIR/SESSION.sock):
 * STATE and TRANSCRIPT after each HELLO, the agent's output as OUTPUT, READY
 * with the identity, input by credit; write DIR/SESSION.status at ready,
 * while the usage changes and at the end; at the end send ENDED and wait for
 * ACK (bounded), or exit at once when no gloved is connected. gloved going
 * away never stops the session; the keeper going away kills it (PID 1's
 * death signal).
 */
#include "glove/control/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/control/runtime.h"
#include "glove/control/store.h"
#include "keeper_internal.h"

/* Where the descriptors go (keeper.h: "moved to 3..6"). */
enum { FD_CHANNEL = 3, FD_LISTEN = 4, FD_DIR = 5, FD_AUDIT = 6 };
/* Messages read from one connection per wake-up at most. */
#define READS_PER_WAKEUP 64
/* A peer that lets this much pile up unread loses its connection (output
 * is held at GLOVE_KEEPER_QUEUE_MAX; the rest are control messages). */
#define QUEUE_HARD_MAX (2u * GLOVE_KEEPER_QUEUE_MAX)
/* Largest diagnostic line, and the most lines written (a peer sending
 * nonsense without end cannot fill the disk through the log). */
#define LOG_LINE_MAX 1024
#define LOG_LINES_MAX 1000
/* File names in DIR: SESSION + the longest suffix. */
#define NAME_MAX_KEEPER (GLOVE_CONTROL_ID_MAX + 16)

enum phase { PH_STARTING, PH_READY, PH_RUNNING, PH_ENDED };

static const char *const phase_names[] = { "starting", "ready", "running", "ended" };

struct qmsg {
        struct qmsg *next;
        size_t len;
        uint8_t data[];
};

struct keeper {
        const char *id;
        sd_event *loop;
        struct glove_session_desc desc;
        struct glove_audit_log audit;
        const char *cgroup_parent;
        bool cgroup_v2;
        int64_t (*now_ms)(void);
        char boot_id[37];
        pid_t pid;
        uint64_t start_time;

        /* The one connection to gloved (-1: none). */
        int conn_fd;
        unsigned conn_gen;    /* changes whenever the connection does */
        bool greeted;         /* a HELLO came on it */
        sd_event_source *conn_src, *listen_src;
        struct qmsg *q_head, **q_tail;
        size_t q_bytes;

        /* The session. */
        struct glove_session *s;
        struct glove_terminal_client *client;
        bool held;
        enum phase phase;
        bool killed, stopping, aborted;
        const char *fail_code;  /* the keeper's reason for a start that failed */
        uint64_t out_off;       /* bytes of output relayed so far */
        json_t *identity, *outcome;
        int exit_status;

        /* Input: bytes gloved sent that the terminal has not taken yet. */
        uint8_t in_buf[GLOVE_KEEPER_INPUT_MAX];
        size_t in_len;
        bool input_closed, closed_told;
        sd_event_source *input_defer;

        sd_event_source *release_timer, *status_timer, *ack_timer;
        struct glove_session_usage written; /* the usage in the status file */
        unsigned log_lines;
        uint8_t rx[GLOVE_KEEPER_MSG_MAX];   /* one message from gloved */
};

/* ---- diagnostics (DIR/SESSION.log on descriptor 2) ----
 *
 * Formatted into a stack buffer and written with one write(2): no stdio
 * (a FILE lock held by another of gloved's threads at fork time would
 * never be released here). */
__attribute__((format(printf, 2, 3))) static void klog(struct keeper *k, const char *fmt, ...) {
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

static json_t *json_u64(uint64_t v) {
        return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static int64_t now_ms(const struct keeper *k) {
        return k->now_ms ? k->now_ms() : glove_time_realtime_ms();
}

/* ---- the connection and its send queue ---- */

static void conn_close(struct keeper *k);
static _Noreturn void finish_exit(struct keeper *k);

static void update_conn_events(struct keeper *k) {
        if (k->conn_src)
                (void)sd_event_source_set_io_events(k->conn_src, EPOLLIN | (k->q_head ? EPOLLOUT : 0));
}

/* Output is held while the queue is over its bound and resumes below half
 * of it. */
static void update_hold(struct keeper *k) {
        bool hold = k->conn_fd >= 0 && k->q_bytes > GLOVE_KEEPER_QUEUE_MAX;
        if (k->held && k->q_bytes > GLOVE_KEEPER_QUEUE_MAX / 2 && k->conn_fd >= 0)
                hold = true;
        if (hold != k->held && k->client) {
                glove_terminal_client_hold(k->client, hold);
                k->held = hold;
        }
}

static void queue_drop(struct keeper *k) {
        while (k->q_head) {
                struct qmsg *m = k->q_head;
                k->q_head = m->next;
                free(m);
        }
        k->q_tail = &k->q_head;
        k->q_bytes = 0;
}

/* The connection is gone (or replaced). After the end nothing is left to
 * do: the status file holds the outcome. */
static void conn_lost(struct keeper *k, const char *why) {
        if (k->conn_fd < 0)
                return;
        klog(k, "connection closed: %s", why);
        conn_close(k);
        if (k->phase == PH_ENDED)
                finish_exit(k);
}

/* Sends what the queue holds, in order. Returns 0, or -EPIPE when the
 * connection was lost. */
static int queue_flush(struct keeper *k) {
        while (k->q_head) {
                struct qmsg *m = k->q_head;
                ssize_t n = send(k->conn_fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n < 0) {
                        conn_lost(k, strerror(errno));
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
static int conn_sendv(struct keeper *k, uint8_t type, const struct iovec *iov, size_t n_iov) {
        if (k->conn_fd < 0)
                return -EPIPE;
        struct iovec all[4] = { { .iov_base = &type, .iov_len = 1 } };
        size_t len = 1;
        for (size_t i = 0; i < n_iov && i < 3; i++) {
                all[i + 1] = iov[i];
                len += iov[i].iov_len;
        }
        if (len > GLOVE_KEEPER_MSG_MAX) {
                klog(k, "message '%c' of %zu bytes not sent: over %d", type, len, GLOVE_KEEPER_MSG_MAX);
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
                        conn_lost(k, strerror(errno));
                        return -EPIPE;
                }
        }
        if (k->q_bytes + len > QUEUE_HARD_MAX) {
                conn_lost(k, "gloved does not read (send queue over its bound)");
                return -EPIPE;
        }
        struct qmsg *m = malloc(sizeof(*m) + len);
        if (!m) {
                conn_lost(k, "out of memory for the send queue");
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

static int conn_send(struct keeper *k, uint8_t type, const void *payload, size_t len) {
        struct iovec v = { .iov_base = (void *)payload, .iov_len = len };
        return conn_sendv(k, type, &v, len ? 1 : 0);
}

/* One JSON object as canonical bytes. v is consumed. */
static int conn_send_json(struct keeper *k, uint8_t type, json_t *v) {
        _cleanup_json_ json_t *own = v;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct glove_error e = { 0 };
        if (!own || glove_json_encode_canonical(own, &text, &len, &e) < 0) {
                klog(k, "message '%c' not sent: %s", type, own ? e.message : "out of memory");
                return 0;
        }
        return conn_send(k, type, text, len);
}

/* ---- outcome, state, status ---- */

static const char *kind_name(enum glove_session_outcome_kind kind) {
        switch (kind) {
        case GLOVE_SESSION_EXITED:
                return "exited";
        case GLOVE_SESSION_SIGNALED:
                return "signaled";
        case GLOVE_SESSION_EXEC_FAILED:
                return "exec_failed";
        case GLOVE_SESSION_LOST:
                return "lost";
        case GLOVE_SESSION_SETUP_FAILED:
                break;
        }
        return "setup_failed";
}

static json_t *outcome_json(const struct keeper *k, const struct glove_session_outcome *o) {
        const char *limit = glove_control_limit_plan_name(o->limit);
        /* A start that failed in the engine keeps the engine's code; the
         * keeper's own reason comes next; then a teardown problem. */
        const char *code = NULL;
        if (o->kind == GLOVE_SESSION_SETUP_FAILED && glove_error_is_set(&o->error))
                code = o->error.code;
        else if (k->fail_code)
                code = k->fail_code;
        else if (glove_error_is_set(&o->error))
                code = o->error.code;
        json_t *v = json_pack("{s:s,s:i,s:o,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:o}", "kind", kind_name(o->kind), "value",
                              o->value, "limit", limit ? json_string(limit) : json_null(), "disk_full", o->disk_full,
                              "stopped", o->stopped, "audit_failed", o->audit_failed, "audit_full", o->audit_full,
                              "released", o->released, "output_cut", o->output_cut, "killed", k->killed, "stopping",
                              k->stopping, "aborted", k->aborted, "error_code",
                              code ? json_string(code) : json_null());
        if (v) {
                json_object_set_new(v, "cpu_time_ms", json_u64(o->cpu_time_ms));
                json_object_set_new(v, "peak_memory_bytes", json_u64(o->peak_memory_bytes));
                json_object_set_new(v, "output_bytes", json_u64(o->output_bytes));
                json_object_set_new(v, "wall_time_ms", json_u64(o->wall_time_ms));
        }
        return v;
}

static json_t *keeper_json(const struct keeper *k) {
        json_t *v = json_pack("{s:i}", "pid", (int)k->pid);
        if (v)
                json_object_set_new(v, "start_time", json_u64(k->start_time));
        return v;
}

static json_t *usage_json(const struct glove_session_usage *u) {
        json_t *v = json_object();
        if (v) {
                json_object_set_new(v, "cpu_time_ms", json_u64(u->cpu_time_ms));
                json_object_set_new(v, "output_bytes", json_u64(u->output_bytes));
                json_object_set_new(v, "peak_memory_bytes", json_u64(u->peak_memory_bytes));
                json_object_set_new(v, "wall_time_ms", json_u64(u->wall_time_ms));
        }
        return v;
}

static void usage_now(const struct keeper *k, struct glove_session_usage *u) {
        if (k->s) {
                glove_session_usage(k->s, u);
                return;
        }
        *u = (struct glove_session_usage){ 0 };
}

/* Writes DIR/SESSION.status: a new file, fsynced, renamed over the old;
 * with sync_dir the directory is fsynced too. Returns 0 or -errno (logged). */
static int status_write(struct keeper *k, bool sync_dir) {
        struct glove_session_usage u;
        usage_now(k, &u);
        json_t *v = json_pack("{s:s,s:O,s:o,s:O,s:s,s:I,s:o,s:i}", "boot_id", k->boot_id, "identity",
                              k->identity ? k->identity : json_null(), "keeper", keeper_json(k), "outcome",
                              k->outcome ? k->outcome : json_null(), "session_id", k->id, "updated_at_ms",
                              (json_int_t)now_ms(k), "usage", usage_json(&u), "version", GLOVE_KEEPER_VERSION);
        _cleanup_json_ json_t *own = v;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct glove_error e = { 0 };
        if (!own || glove_json_encode_canonical(own, &text, &len, &e) < 0) {
                klog(k, "status not written: %s", own ? e.message : "out of memory");
                return -ENOMEM;
        }
        char tmp[NAME_MAX_KEEPER], name[NAME_MAX_KEEPER];
        snprintf(tmp, sizeof(tmp), "%s.status.tmp", k->id);
        snprintf(name, sizeof(name), "%s.status", k->id);
        int r = 0;
        /* A new file each time (whatever a crash left under the name goes). */
        (void)unlinkat(FD_DIR, tmp, 0);
        _cleanup_close_ int fd = openat(FD_DIR, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                r = -errno;
        if (r == 0)
                r = glove_fd_write_all(fd, text, len);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r == 0 && renameat(FD_DIR, tmp, FD_DIR, name) < 0)
                r = -errno;
        if (r == 0 && sync_dir && fsync(FD_DIR) < 0)
                r = -errno;
        if (r < 0) {
                klog(k, "status not written: %s", strerror(-r));
                if (fd >= 0)
                        (void)unlinkat(FD_DIR, tmp, 0);
                return r;
        }
        k->written = u;
        return 0;
}

static int on_status_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)usec;
        struct keeper *k = userdata;
        if (k->phase == PH_ENDED)
                return sd_event_source_set_enabled(src, SD_EVENT_OFF);
        struct glove_session_usage u;
        usage_now(k, &u);
        if (memcmp(&u, &k->written, sizeof(u)) != 0)
                (void)status_write(k, false);
        (void)sd_event_source_set_time_relative(src, GLOVE_KEEPER_STATUS_MS * 1000ULL);
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static size_t input_credit(const struct keeper *k) {
        return k->input_closed ? 0 : sizeof(k->in_buf) - k->in_len;
}

static void send_state(struct keeper *k) {
        json_t *v = json_pack("{s:i,s:o,s:s,s:O,s:I,s:I,s:b,s:O}", "version", GLOVE_KEEPER_VERSION, "keeper",
                              keeper_json(k), "phase", phase_names[k->phase], "identity",
                              k->identity ? k->identity : json_null(), "output_offset", (json_int_t)k->out_off,
                              "input_credit", (json_int_t)input_credit(k), "input_closed", k->input_closed, "outcome",
                              k->outcome ? k->outcome : json_null());
        (void)conn_send_json(k, GLOVE_KEEPER_STATE, v);
}

static void put_u64le(uint8_t out[8], uint64_t v) {
        for (int i = 0; i < 8; i++)
                out[i] = (uint8_t)(v >> (8 * i));
}

static void send_transcript(struct keeper *k) {
        _cleanup_free_ uint8_t *buf = malloc(GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
        if (!buf) {
                conn_lost(k, "out of memory for the transcript");
                return;
        }
        struct glove_terminal *t = k->s ? glove_session_terminal(k->s) : NULL;
        size_t n = t ? glove_terminal_transcript(t, buf, GLOVE_TERMINAL_TRANSCRIPT_DEFAULT) : 0;
        if (n > k->out_off)
                n = (size_t)k->out_off; /* never: the transcript is the tail of what was relayed */
        uint8_t off[8];
        put_u64le(off, k->out_off - n);
        struct iovec v[2] = { { .iov_base = off, .iov_len = 8 }, { .iov_base = buf + 0, .iov_len = n } };
        (void)conn_sendv(k, GLOVE_KEEPER_TRANSCRIPT, v, n ? 2 : 1);
}

/* ---- the end ---- */

static _Noreturn void finish_exit(struct keeper *k) {
        _exit(k->exit_status);
}

static int on_ack_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        struct keeper *k = userdata;
        klog(k, "no ACK within %d ms: exiting (the status file holds the outcome)", GLOVE_KEEPER_ACK_WAIT_MS);
        finish_exit(k);
}

static void send_closed(struct keeper *k) {
        if (k->closed_told)
                return;
        k->closed_told = true;
        (void)conn_send_json(k, GLOVE_KEEPER_CREDIT, json_pack("{s:b}", "closed", 1));
}

/* The session ended with o (NULL: it never started, e.g. its error). */
static void ended(struct keeper *k, json_t *outcome) {
        k->phase = PH_ENDED;
        k->outcome = outcome;
        k->input_closed = true;
        k->in_len = 0;
        k->release_timer = sd_event_source_disable_unref(k->release_timer);
        k->status_timer = sd_event_source_disable_unref(k->status_timer);
        k->input_defer = sd_event_source_disable_unref(k->input_defer);
        if (!outcome)
                klog(k, "the outcome could not be encoded (out of memory)");
        (void)status_write(k, true);
        if (k->greeted) {
                send_closed(k);
                (void)conn_send_json(k, GLOVE_KEEPER_ENDED, json_incref(k->outcome));
        }
        if (k->conn_fd < 0)
                finish_exit(k);
        if (sd_event_add_time_relative(k->loop, &k->ack_timer, CLOCK_MONOTONIC, GLOVE_KEEPER_ACK_WAIT_MS * 1000ULL, 1000,
                                       on_ack_timer, k) < 0)
                finish_exit(k);
}

static void on_exited(struct glove_session *s, const struct glove_session_outcome *o, void *userdata) {
        (void)s;
        struct keeper *k = userdata;
        ended(k, outcome_json(k, o));
}

static void on_warning(struct glove_session *s, const struct glove_error *w, void *userdata) {
        (void)s;
        struct keeper *k = userdata;
        klog(k, "warning: %s: %s", w->code, w->message);
        if (k->greeted)
                (void)conn_send_json(k, GLOVE_KEEPER_WARNING,
                                     json_pack("{s:s,s:s}", "code", w->code ? w->code : "session.warning", "message",
                                               w->message));
}

/* Ends the start: the agent never runs (killing before release ends in
 * on_exited with released false). */
static void fail_start(struct keeper *k, const char *code) {
        if (!k->fail_code)
                k->fail_code = code;
        if (k->s)
                glove_session_stop(k->s, 0);
}

/* ---- ready and release ---- */

static int on_release_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        struct keeper *k = userdata;
        if (k->phase == PH_READY) {
                klog(k, "not released within %d ms of ready: stopped", GLOVE_KEEPER_RELEASE_WAIT_MS);
                fail_start(k, "start.release_timeout");
        }
        return 0;
}

static json_t *identity_json(struct keeper *k, pid_t pid, struct glove_error *e) {
        uint64_t st = 0;
        int r = glove_keeper_proc_start_time(pid, &st);
        if (r < 0) {
                glove_error_set(e, -r, "start.pid_identity", "the start time of PID 1 (%d) could not be read: %s", (int)pid,
                                strerror(-r));
                return NULL;
        }
        json_t *cg = glove_keeper_cgroup_identity(pid, k->cgroup_parent, k->cgroup_v2);
        if (!cg && k->desc.cgroup_policy == GLOVE_SESSION_CGROUP_REQUIRED) {
                glove_error_set(e, EIO, "start.cgroup_identity", "the run cgroup of the session could not be read");
                return NULL;
        }
        json_t *v = json_pack("{s:s,s:o,s:o,s:i}", "boot_id", k->boot_id, "cgroup", cg ? cg : json_null(), "keeper",
                              keeper_json(k), "pid", (int)pid);
        if (v)
                json_object_set_new(v, "pid_start_time", json_u64(st));
        else
                glove_error_set(e, ENOMEM, "keeper.no_memory", "out of memory");
        return v;
}

static void on_ready(struct glove_session *s, void *userdata) {
        struct keeper *k = userdata;
        struct glove_error e = { 0 };
        k->phase = PH_READY;
        const struct glove_sandbox *sb = glove_session_sandbox(s);
        k->identity = sb ? identity_json(k, sb->pid, &e) : NULL;
        if (!k->identity) {
                klog(k, "not released: %s: %s", e.code ? e.code : "start.identity", e.message);
                fail_start(k, e.code ? e.code : "start.identity");
                return;
        }
        (void)status_write(k, false);
        if (sd_event_add_time_relative(k->loop, &k->status_timer, CLOCK_MONOTONIC, GLOVE_KEEPER_STATUS_MS * 1000ULL,
                                       1000, on_status_timer, k) < 0)
                k->status_timer = NULL; /* the end still writes it */
        if (k->aborted || k->stopping || k->killed)
                return; /* being stopped already: never released, no READY */
        if (sd_event_add_time_relative(k->loop, &k->release_timer, CLOCK_MONOTONIC,
                                       GLOVE_KEEPER_RELEASE_WAIT_MS * 1000ULL, 1000, on_release_timer, k) < 0) {
                klog(k, "no release timer: stopped");
                fail_start(k, "keeper.event_loop");
                return;
        }
        if (k->greeted)
                (void)conn_send_json(k, GLOVE_KEEPER_READY, json_incref(k->identity));
}

static void do_release(struct keeper *k) {
        if (k->phase == PH_RUNNING || k->phase == PH_ENDED)
                return; /* a second one is ignored */
        if (k->phase != PH_READY) {
                klog(k, "RELEASE before READY ignored");
                return;
        }
        if (k->aborted || k->stopping || k->killed || k->fail_code) {
                klog(k, "RELEASE ignored: the session is being stopped");
                return;
        }
        struct glove_error e = { 0 };
        int r = glove_session_release(k->s, &e);
        if (r == -EALREADY)
                return;
        if (r < 0) {
                klog(k, "release failed: %s: %s", e.code ? e.code : "sandbox.release", e.message);
                fail_start(k, e.code ? e.code : "sandbox.release");
                return;
        }
        k->phase = PH_RUNNING;
        k->release_timer = sd_event_source_disable_unref(k->release_timer);
}

/* ---- the terminal ---- */

static void on_output(void *userdata, int stream, const void *buf, size_t n) {
        (void)stream;
        struct keeper *k = userdata;
        uint8_t off[8];
        put_u64le(off, k->out_off);
        k->out_off += n;
        if (!k->greeted)
                return; /* kept in the transcript only */
        struct iovec v[2] = { { .iov_base = off, .iov_len = 8 }, { .iov_base = (void *)buf, .iov_len = n } };
        (void)conn_sendv(k, GLOVE_KEEPER_OUTPUT, v, 2);
}

static void input_closed(struct keeper *k) {
        k->input_closed = true;
        k->in_len = 0;
        if (k->greeted)
                send_closed(k);
}

/* Hands the buffered input to the terminal as far as it takes it; the
 * bytes taken go back to gloved as credit. */
static void input_feed(struct keeper *k) {
        if (k->input_closed || !k->s)
                return;
        size_t taken = 0;
        while (k->in_len > 0) {
                ssize_t n = glove_terminal_input(glove_session_terminal(k->s), k->in_buf, k->in_len);
                if (n < 0) {
                        input_closed(k);
                        break;
                }
                if (n == 0)
                        break; /* input_room comes later */
                memmove(k->in_buf, k->in_buf + n, k->in_len - (size_t)n);
                k->in_len -= (size_t)n;
                taken += (size_t)n;
        }
        if (taken && k->greeted && !k->input_closed)
                (void)conn_send_json(k, GLOVE_KEEPER_CREDIT, json_pack("{s:I}", "bytes", (json_int_t)taken));
}

static int on_input_defer(sd_event_source *src, void *userdata) {
        (void)src;
        input_feed(userdata);
        return 0;
}

/* May run inside glove_terminal_input: the next feed comes from a fresh
 * event. */
static void on_input_room(void *userdata) {
        struct keeper *k = userdata;
        if (k->input_defer)
                (void)sd_event_source_set_enabled(k->input_defer, SD_EVENT_ONESHOT);
}

static const struct glove_terminal_client_ops client_ops = { .output = on_output, .input_room = on_input_room };

/* ---- messages from gloved ---- */

/* The payload as one JSON object, or NULL (logged). A new reference. */
static json_t *payload_object(struct keeper *k, uint8_t type, const uint8_t *p, size_t n) {
        json_t *v = NULL;
        struct glove_error e = { 0 };
        if (glove_json_decode_strict(p, n, GLOVE_KEEPER_MSG_MAX, GLOVE_JSON_OBJECT_ONLY, &v, &e) < 0) {
                klog(k, "message '%c' ignored: %s: %s", type, e.code, e.message);
                return NULL;
        }
        return v;
}

/* An integer member in [min, max], or false (logged). */
static bool payload_int(struct keeper *k, uint8_t type, const json_t *v, const char *key, int64_t min, int64_t max,
                        int64_t *out) {
        struct glove_error e = { 0 };
        if (glove_json_get_int(v, key, "$", min, max, out, &e) < 0) {
                klog(k, "message '%c' ignored: %s: %s", type, e.code, e.message);
                return false;
        }
        return true;
}

static void on_hello(struct keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_HELLO, p, n);
        int64_t version;
        if (!v || !payload_int(k, GLOVE_KEEPER_HELLO, v, "version", 1, INT32_MAX, &version))
                return;
        unsigned gen = k->conn_gen;
        k->greeted = true;
        k->closed_told = k->input_closed; /* STATE says it */
        send_state(k);
        if (k->conn_gen == gen)
                send_transcript(k);
        /* Then what the phase already said on an earlier connection. */
        if (k->conn_gen == gen && k->phase == PH_READY && k->identity && k->release_timer)
                (void)conn_send_json(k, GLOVE_KEEPER_READY, json_incref(k->identity));
        if (k->conn_gen == gen && k->phase == PH_ENDED)
                (void)conn_send_json(k, GLOVE_KEEPER_ENDED, json_incref(k->outcome));
}

static void on_input_msg(struct keeper *k, const uint8_t *p, size_t n) {
        if (n == 0 || n > GLOVE_KEEPER_INPUT_MAX) {
                klog(k, "INPUT of %zu bytes ignored: 1..%d", n, GLOVE_KEEPER_INPUT_MAX);
                return;
        }
        if (k->input_closed)
                return; /* gloved learns it from CREDIT {"closed":true} */
        if (n > sizeof(k->in_buf) - k->in_len) {
                /* More than the credit: refused whole, never cut. */
                klog(k, "INPUT of %zu bytes refused: only %zu of credit", n, sizeof(k->in_buf) - k->in_len);
                if (k->greeted)
                        (void)conn_send_json(k, GLOVE_KEEPER_WARNING,
                                             json_pack("{s:s,s:s}", "code", "keeper.input_over_credit", "message",
                                                       "input past the credit was refused"));
                return;
        }
        memcpy(k->in_buf + k->in_len, p, n);
        k->in_len += n;
        input_feed(k);
}

static void on_resize(struct keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_RESIZE, p, n);
        int64_t rows, cols;
        if (!v || !payload_int(k, GLOVE_KEEPER_RESIZE, v, "rows", 1, 65535, &rows) ||
            !payload_int(k, GLOVE_KEEPER_RESIZE, v, "cols", 1, 65535, &cols))
                return;
        if (!k->s || k->phase == PH_ENDED)
                return;
        int r = glove_terminal_resize(glove_session_terminal(k->s), (unsigned)rows, (unsigned)cols);
        if (r < 0)
                klog(k, "RESIZE %lldx%lld: %s", (long long)rows, (long long)cols, strerror(-r));
}

static void on_signal_msg(struct keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_SIGNAL, p, n);
        int64_t sig;
        if (!v || !payload_int(k, GLOVE_KEEPER_SIGNAL, v, "signal", 1, SIGRTMAX, &sig))
                return;
        if (sig == SIGKILL || sig == SIGSTOP) {
                klog(k, "SIGNAL %lld ignored: not catchable (KILL kills the sandbox)", (long long)sig);
                return;
        }
        if (k->s && k->phase != PH_ENDED)
                (void)glove_session_signal(k->s, (int)sig);
}

static void on_stop_msg(struct keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_STOP, p, n);
        int64_t grace;
        if (!v || !payload_int(k, GLOVE_KEEPER_STOP, v, "grace_ms", 0, GLOVE_CONTROL_RUNTIME_GRACE_MAX_MS, &grace))
                return;
        if (k->phase == PH_ENDED)
                return;
        k->stopping = true;
        if (k->s)
                glove_session_stop(k->s, (uint64_t)grace);
}

static void on_message(struct keeper *k, const uint8_t *m, size_t len) {
        uint8_t type = m[0];
        const uint8_t *p = m + 1;
        size_t n = len - 1;
        bool empty = n == 0;
        switch (type) {
        case GLOVE_KEEPER_HELLO:
                on_hello(k, p, n);
                return;
        case GLOVE_KEEPER_RELEASE:
                if (empty)
                        do_release(k);
                break;
        case GLOVE_KEEPER_INPUT:
                on_input_msg(k, p, n);
                return;
        case GLOVE_KEEPER_RESIZE:
                on_resize(k, p, n);
                return;
        case GLOVE_KEEPER_SIGNAL:
                on_signal_msg(k, p, n);
                return;
        case GLOVE_KEEPER_KILL:
                if (empty && k->phase != PH_ENDED) {
                        k->killed = true;
                        if (k->s)
                                glove_session_stop(k->s, 0);
                }
                break;
        case GLOVE_KEEPER_STOP:
                on_stop_msg(k, p, n);
                return;
        case GLOVE_KEEPER_ABORT:
                if (empty && k->phase != PH_ENDED) {
                        k->aborted = true;
                        k->release_timer = sd_event_source_disable_unref(k->release_timer);
                        if (k->s)
                                glove_session_stop(k->s, 0);
                }
                break;
        case GLOVE_KEEPER_ACK:
                if (empty && k->phase == PH_ENDED)
                        finish_exit(k);
                if (empty)
                        klog(k, "ACK before the end ignored");
                break;
        default:
                klog(k, "unknown message type 0x%02x (%zu bytes) ignored", type, len);
                return;
        }
        if (!empty)
                klog(k, "message '%c' with a payload (%zu bytes) ignored", type, n);
}

static int on_conn(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        struct keeper *k = userdata;
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
                        conn_lost(k, strerror(errno));
                        break;
                }
                if (n == 0) {
                        /* Every message has a type byte: 0 is the end. */
                        conn_lost(k, "end of file");
                        break;
                }
                if ((size_t)n > GLOVE_KEEPER_MSG_MAX) {
                        klog(k, "message of %zd bytes refused: over %d", n, GLOVE_KEEPER_MSG_MAX);
                        continue;
                }
                on_message(k, buf, (size_t)n);
        }
        return 0;
}

/* ---- connections ---- */

static void conn_close(struct keeper *k) {
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

/* fd becomes the connection (the old one, if any, is closed). Returns 0
 * or -errno (fd closed). */
static int conn_set(struct keeper *k, int fd) {
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

static int on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)revents;
        struct keeper *k = userdata;
        for (int i = 0; i < READS_PER_WAKEUP; i++) {
                int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0) {
                        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                                klog(k, "accept: %s", strerror(errno));
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        return 0;
                }
                struct ucred cred;
                socklen_t cl = sizeof(cred);
                if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cl != sizeof(cred) ||
                    cred.uid != getuid()) {
                        klog(k, "connection refused: the peer is not of uid %u", (unsigned)getuid());
                        close(c);
                        continue;
                }
                bool had = k->conn_fd >= 0;
                int r = conn_set(k, c);
                if (r < 0)
                        klog(k, "connection dropped: %s", strerror(-r));
                else if (had)
                        klog(k, "a new connection (pid %d) replaced the old one", (int)cred.pid);
        }
        return 0;
}

/* ---- the process ---- */

/* Closes every descriptor from first on. */
static void close_from(int first) {
        if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
                return;
        struct rlimit rl;
        int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
                          ? (int)rl.rlim_cur
                          : 65536;
        for (int fd = first; fd < max; fd++)
                (void)close(fd);
}

static void reset_signals(void) {
        sigset_t none;
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigemptyset(&dfl.sa_mask);
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)sigaction(sig, &dfl, NULL);
        struct sigaction ign = { .sa_handler = SIG_IGN };
        sigemptyset(&ign.sa_mask);
        (void)sigaction(SIGPIPE, &ign, NULL);
}

/* Moves fd to want (O_CLOEXEC); fd was first copied above every target. */
static int move_to(int tmp, int want) {
        if (tmp < 0)
                return -1;
        return dup3(tmp, want, O_CLOEXEC) < 0 ? -1 : want;
}

/* The descriptor layout of keeper.h. Returns 0, or -1 when a given
 * descriptor could not be kept (nothing can be reported yet). */
static int setup_fds(const struct glove_keeper_args *a, const char *id) {
        int src[4] = { a->channel_fd, a->listen_fd, a->dir_fd, a->desc->audit ? a->desc->audit->fd : -1 };
        int tmp[4];
        /* First above every target and every standard number: no move can
         * land on a descriptor still needed. */
        for (int i = 0; i < 4; i++) {
                tmp[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD_CLOEXEC, 16) : -1;
                if (src[i] >= 0 && tmp[i] < 0 && i < 3)
                        return -1;
        }
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                (void)dup2(null, STDIN_FILENO);
                (void)dup2(null, STDOUT_FILENO);
        }
        char name[NAME_MAX_KEEPER];
        snprintf(name, sizeof(name), "%s.log", id);
        int log = openat(tmp[2], name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        (void)dup2(log >= 0 ? log : null, STDERR_FILENO);
        if (log > STDERR_FILENO)
                close(log);
        if (null > STDERR_FILENO)
                close(null);
        if (move_to(tmp[0], FD_CHANNEL) < 0 || move_to(tmp[1], FD_LISTEN) < 0 || move_to(tmp[2], FD_DIR) < 0)
                return -1;
        int last = FD_DIR;
        if (tmp[3] >= 0 && move_to(tmp[3], FD_AUDIT) == FD_AUDIT)
                last = FD_AUDIT;
        close_from(last + 1);
        return 0;
}

static bool id_ok(const char *id) {
        size_t n = id ? strnlen(id, GLOVE_CONTROL_ID_MAX + 1) : 0;
        return n > 0 && n <= GLOVE_CONTROL_ID_MAX && !memchr(id, '/', n) && strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
}

static const struct glove_session_ops session_ops = { .ready = on_ready, .exited = on_exited, .warning = on_warning };

/* glove_session_start failed: the outcome says so (setup_failed). */
static json_t *start_failed_outcome(struct keeper *k, const struct glove_error *e) {
        struct glove_session_outcome o = { .kind = GLOVE_SESSION_SETUP_FAILED, .limit = GLOVE_CGROUP_LIMIT_NONE };
        if (glove_error_is_set(e))
                o.error = *e;
        else
                glove_error_set(&o.error, EIO, "start.failed", "the session could not start");
        return outcome_json(k, &o);
}

_Noreturn void glove_keeper_run(const struct glove_keeper_args *a) {
        if (!a || !a->desc || !id_ok(a->session_id) || a->channel_fd < 0 || a->listen_fd < 0 || a->dir_fd < 0)
                _exit(1);
        (void)setsid();
        (void)prctl(PR_SET_NAME, "glove-keeper", 0, 0, 0);
        reset_signals();
        bool have_audit = a->desc->audit && a->desc->audit->fd >= 0;
        if (setup_fds(a, a->session_id) < 0)
                _exit(1);

        /* The keeper's own copies (this is fork's copy of gloved's memory). */
        struct keeper *k = calloc(1, sizeof(*k)); /* lives until _exit */
        if (!k)
                _exit(1);
        *k = (struct keeper){
                .id = a->session_id,
                .desc = *a->desc,
                .cgroup_parent = a->cgroup_parent,
                .cgroup_v2 = a->cgroup_v2,
                .now_ms = a->now_ms,
                .pid = getpid(),
                .conn_fd = -1,
                .exit_status = 0,
        };
        k->q_tail = &k->q_head;
        k->audit.fd = -1;
        k->desc.audit = NULL;
        if (have_audit) {
                k->audit = *a->desc->audit;
                k->audit.fd = FD_AUDIT;
                k->desc.audit = &k->audit;
        }
        k->desc.parent_death_kill = true;
        k->input_closed = k->desc.terminal == GLOVE_TERMINAL_STDERR ||
                          (k->desc.terminal == GLOVE_TERMINAL_PIPES && k->desc.input_closed);
        k->closed_told = k->input_closed;
        int r = glove_keeper_boot_id(k->boot_id);
        if (r < 0)
                klog(k, "boot id unreadable: %s", strerror(-r));
        if ((r = glove_keeper_proc_start_time(k->pid, &k->start_time)) < 0)
                klog(k, "own start time unreadable: %s", strerror(-r));

        if ((r = sd_event_new(&k->loop)) < 0) {
                klog(k, "sd_event_new: %s", strerror(-r));
                _exit(1);
        }
        if ((r = fcntl(FD_LISTEN, F_SETFL, fcntl(FD_LISTEN, F_GETFL) | O_NONBLOCK)) < 0 ||
            (r = sd_event_add_io(k->loop, &k->listen_src, FD_LISTEN, EPOLLIN, on_listen, k)) < 0)
                klog(k, "the listening socket is not served: %s", strerror(r < 0 ? -r : errno));
        if ((r = conn_set(k, FD_CHANNEL)) < 0)
                klog(k, "the channel is not served: %s", strerror(-r));
        if ((r = sd_event_add_defer(k->loop, &k->input_defer, on_input_defer, k)) >= 0)
                (void)sd_event_source_set_enabled(k->input_defer, SD_EVENT_OFF);
        else
                k->input_defer = NULL;

        struct glove_error e = { 0 };
        if (k->input_defer)
                r = glove_session_start(k->loop, &k->desc, &session_ops, k, &k->s, &e);
        else
                r = glove_error_set(&e, -r, "keeper.event_loop", "event loop: %s", strerror(-r));
        if (r < 0) {
                k->s = NULL;
                klog(k, "the session could not start: %s: %s", e.code ? e.code : "start.failed", e.message);
                k->exit_status = 1;
                ended(k, start_failed_outcome(k, &e));
        } else if ((r = glove_terminal_attach(glove_session_terminal(k->s), &client_ops, k, false, &k->client)) < 0) {
                k->client = NULL;
                klog(k, "the terminal has no room for the keeper: %s", strerror(-r));
                fail_start(k, "keeper.no_memory");
        }
        r = sd_event_loop(k->loop);
        klog(k, "the event loop failed: %s", strerror(r < 0 ? -r : EIO));
        _exit(1);
}

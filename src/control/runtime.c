/* SPDX-License-Identifier: Apache-2.0 */
/* The managed-session runtime of gloved: registry, lifecycle, attach
 * streams, terminal receipts (see runtime.h). */
#include "glove/control/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/container/grant.h"
#include "glove/container/seccomp.h"
#include "glove/control/keeper.h"
#include "glove/control/server.h"
#include "glove/net/rule.h"
#include "glove/session/session.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/prepare.h"

struct rt_session;

struct attachment {
        struct rt_session *s;
        struct glove_control_conn *conn;
        struct glove_terminal_client *client;
        struct glove_control_output_skip skip; /* output not queued: the queue was full */
        struct attachment *next;
};

struct auth {
        uint8_t nonce[16];
        char session_id[GLOVE_CONTROL_ID_MAX + 1];
        char controller_plan_digest[65], plan_content_digest[65], policy_digest[65];
        int64_t expires_at_ms;
        bool live;
};

/* One glove_supervisor_launch_prepare run on a worker thread. The loop
 * thread fills the inputs and reads the results only after the job came back
 * through the done list (the pool's mutex orders both); the worker touches
 * nothing else. */
struct prepare_job {
        struct prepare_job *next;
        struct rt_session *s; /* loop thread only */
        const struct glove_supervisor_runtime_config *cfg;
        char id[GLOVE_CONTROL_ID_MAX + 1];
        char *plan; /* a copy of the stored plan */
        size_t plan_len;
        /* Results (the worker's). */
        struct glove_supervisor_launch *launch;
        int r;
        struct glove_error err;
};

struct prepare_pool {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct prepare_job *queue, **queue_tail; /* FIFO, not yet taken */
        struct prepare_job *done, **done_tail;   /* FIFO, finished */
        pthread_t threads[GLOVE_CONTROL_RUNTIME_PREPARE_WORKERS];
        unsigned n_threads, idle, queued;
        bool quit;
        int efd; /* eventfd: a job finished */
        sd_event_source *src;
        bool up;
};

/* A message queued towards a keeper. */
struct kmsg {
        struct kmsg *next;
        size_t len;
        uint8_t data[];
};

/* gloved's copy of a keeper's transcript: the last bytes of the output,
 * and the output offset just past them. */
struct mirror {
        uint8_t buf[GLOVE_TERMINAL_TRANSCRIPT_DEFAULT];
        size_t len, head; /* head: index of the oldest byte */
        uint64_t end;
};

struct rt_session {
        struct glove_control_runtime *rt;
        struct rt_session *next;
        char id[GLOVE_CONTROL_ID_MAX + 1];
        struct glove_supervisor_launch *launch; /* NULL for a session adopted after a restart */
        /* The keeper (glove/control/keeper.h): its channel, what is queued
         * towards it, and the copy of its transcript. */
        int kfd;                  /* -1: no keeper (yet, or any more) */
        sd_event_source *ksrc;
        struct kmsg *kq, **kq_tail;
        size_t kq_bytes;
        pid_t keeper_pid;
        uint64_t keeper_start;
        char stem[40];            /* keeper file names: DIR/STEM.{sock,status,log,binding} */
        uint64_t credit;          /* input bytes the keeper takes now */
        bool input_closed;
        bool ready, released, adopted, ended;
        bool released_on_adopt;   /* adopted recorded running, never released: released then */
        struct mirror *mir;
        json_t *binding;
        char binding_digest[65];
        int64_t started_at_ms; /* -1 until released */
        struct auth auth;
        bool live;             /* the engine session has not ended */
        bool reserved;
        bool stopping;
        bool killed;           /* signal SIGKILL: gloved killed the whole sandbox */
        char fail_code[GLOVE_CONTROL_REASON_MAX + 1]; /* why on_ready stopped it */
        struct glove_audit_log audit;                 /* egress records (fd -1: none) */
        struct attachment *att;
        unsigned n_att;
        struct prepare_job *job;  /* while the launch is prepared */
        unsigned short rows, cols; /* a resize before the terminal exists */
        /* After the end. */
        uint8_t *transcript;
        size_t transcript_len;
        uint64_t receipt_seq;
        json_t *termination;
};

struct glove_control_runtime {
        struct glove_control_runtime_options o;
        struct glove_cgroup_probe cgroup;
        sd_event *loop;
        struct rt_session *sessions;
        unsigned live, ended;
        bool operational;
        bool shutting_down;    /* glove_control_runtime_shutdown walks the sessions */
        char why[GLOVE_CGROUP_REASON_MAX * 2 + 64];
        struct prepare_pool pool;
};

/* ---- construction ---- */

int glove_control_runtime_new(const struct glove_control_runtime_options *o, struct glove_control_runtime **out,
                              struct glove_error *err) {
        struct glove_control_runtime *rt = calloc(1, sizeof(*rt));
        *out = NULL;
        if (!rt)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        rt->o = *o;
        /* The probe and its error are the caller's locals: copied, not kept. */
        rt->o.cgroup = NULL;
        rt->o.cgroup_why = NULL;
        if (o->cgroup)
                rt->cgroup = *o->cgroup;
        rt->operational = o->cgroup && o->cgroup_error == 0 && o->cgroup->backend != GLOVE_CGROUP_BACKEND_NONE;
        if (!rt->operational)
                snprintf(rt->why, sizeof(rt->why), "%s: %s",
                         o->cgroup_why && o->cgroup_why->code ? o->cgroup_why->code : "cgroup.unavailable",
                         o->cgroup_why && o->cgroup_why->message[0] ? o->cgroup_why->message
                                                                     : "no delegated cgroup for run cgroups");
        o = NULL;
        *out = rt;
        return 0;
}

bool glove_control_runtime_operational(const struct glove_control_runtime *rt) {
        return rt && rt->operational;
}

const char *glove_control_runtime_why(const struct glove_control_runtime *rt) {
        return rt->operational ? "" : rt->why;
}

static const char *const limit_names[] = { "cpu_time_ms",  "memory_bytes", "pids",
                                           "wall_time_ms", "disk_bytes",   "terminal_output_bytes" };

json_t *glove_control_runtime_mechanisms(const struct glove_control_runtime *rt) {
        json_t *list = json_array();
        const char *cg = rt->cgroup.backend == GLOVE_CGROUP_BACKEND_V2 ? "cgroup_v2" : "cgroup_v1";
        for (size_t i = 0; list && i < 6; i++) {
                const char *m = NULL;
                if (i <= 2 && rt->operational)
                        m = i == 0 ? (rt->cgroup.backend == GLOVE_CGROUP_BACKEND_V2 ? "cgroup_v2.cpu_stat_watch"
                                                                                     : "cgroup_v1.cpuacct_watch")
                                   : cg;
                else if (i == 3)
                        m = "supervisor_timer";
                else if (i == 4)
                        m = "tmpfs_size";
                else if (i == 5)
                        m = "terminal_relay_count";
                if (m)
                        json_array_append_new(list, json_pack("{s:s,s:s}", "limit", limit_names[i], "mechanism", m));
        }
        return list;
}

json_t *glove_control_runtime_mechanisms_missing(const struct glove_control_runtime *rt) {
        json_t *list = json_array();
        for (size_t i = 0; list && !rt->operational && i < 3; i++)
                json_array_append_new(list, json_pack("{s:s,s:s}", "limit", limit_names[i], "reason", rt->why));
        return list;
}

static int link_attach(struct rt_session *s, struct glove_error *err);

void glove_control_runtime_set_loop(struct glove_control_runtime *rt, sd_event *loop) {
        rt->loop = loop;
        /* The keepers the reconciler adopted: on the loop, HELLO. */
        for (struct rt_session *s = rt->sessions; s; s = s->next) {
                struct glove_error e = { 0 };
                if (s->adopted && s->kfd >= 0 && !s->ksrc && link_attach(s, &e) < 0)
                        fprintf(stderr, "gloved: session %s: %s: %s\n", s->id, e.code, e.message);
        }
}

/* ---- registry ---- */

static struct rt_session *find(struct glove_control_runtime *rt, const char *id) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                if (strcmp(s->id, id) == 0)
                        return s;
        return NULL;
}

static void link_close(struct rt_session *s);

static void session_entry_free(struct rt_session *s) {
        link_close(s);
        free(s->mir);
        glove_audit_close(&s->audit);
        glove_supervisor_launch_free(s->launch);
        json_decref(s->binding);
        json_decref(s->termination);
        free(s->transcript);
        free(s);
}

static void unlink_entry(struct glove_control_runtime *rt, struct rt_session *s) {
        for (struct rt_session **p = &rt->sessions; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        return;
                }
}

/* Keeps at most GLOVE_CONTROL_RUNTIME_ENDED_MAX ended entries: the oldest
 * ended one goes (its store record and receipt stay). */
/* Frees the oldest ended entries past GLOVE_CONTROL_RUNTIME_ENDED_MAX, never
 * keep (the entry a caller is still using) and nothing while shutdown walks
 * the list. */
static void trim_ended(struct glove_control_runtime *rt, const struct rt_session *keep) {
        if (rt->shutting_down)
                return;
        while (rt->ended > GLOVE_CONTROL_RUNTIME_ENDED_MAX) {
                struct rt_session *last = NULL;
                for (struct rt_session *s = rt->sessions; s; s = s->next)
                        if (!s->live && !s->n_att && s != keep)
                                last = s;
                if (!last)
                        return;
                unlink_entry(rt, last);
                session_entry_free(last);
                rt->ended--;
        }
}

static const struct glove_control_session *stored(struct glove_control_runtime *rt, const char *id,
                                                  struct glove_error *err) {
        const struct glove_control_session *st = glove_control_store_find(rt->o.store, id);
        if (!st)
                glove_error_set(err, ENOENT, "session.not_found", "no session %s", id);
        return st;
}

static int transition(struct glove_control_runtime *rt, const char *id, enum glove_control_session_state to,
                      const char *reason, struct glove_error *err) {
        bool appended;
        return glove_control_store_transition(rt->o.store, id, to, reason, rt->o.now_ms(), &appended, err);
}

static json_t *state_result(struct glove_control_runtime *rt, const char *id) {
        const struct glove_control_session *st = glove_control_store_find(rt->o.store, id);
        return json_pack("{s:s,s:s}", "session_id", id, "state",
                         st ? glove_control_session_state_name(st->state) : "unknown");
}

/* ---- attach streams ---- */

/* Pushes the session_output_gap of a skipping attachment (last: within the
 * slack of a final notice) and ends the skip. Returns 0 or the push's error
 * (the skip then goes on). */
static int gap_push(struct attachment *a, bool last) {
        if (!a->skip.skipping)
                return 0;
        int r = glove_control_conn_push(a->conn, glove_control_output_gap_message(a->s->id, a->skip.skipped_bytes),
                                        last);
        if (r == 0)
                a->skip = (struct glove_control_output_skip){ 0 };
        return r;
}

static void attachment_drop(struct attachment *a, const char *reason) {
        struct rt_session *s = a->s;
        if (reason)
                (void)gap_push(a, true);
        for (struct attachment **p = &s->att; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        break;
                }
        s->n_att--;
        glove_terminal_detach(a->client);
        if (reason)
                (void)glove_control_conn_push(a->conn,
                                              json_pack("{s:s,s:{s:s,s:s}}", "method", "session_detached", "params",
                                                        "session_id", s->id, "reason", reason),
                                              true);
        glove_control_conn_attachments(a->conn, -1);
        free(a);
}

/* A skipping attachment whose connection drained below half the bound
 * pushes its gap and resumes. Returns false when a was dropped (a push
 * failed otherwise than for room). */
static bool attachment_resume(struct attachment *a) {
        if (!glove_control_output_skip_resumes(&a->skip, glove_control_conn_pushed_pending(a->conn),
                                               GLOVE_CONTROL_PUSH_MAX))
                return true;
        int r = gap_push(a, false);
        if (r == -ENOBUFS) {
                glove_control_conn_want_drain(a->conn);
        } else if (r < 0) {
                attachment_drop(a, NULL);
                return false;
        }
        return true;
}

static void on_client_output(void *userdata, int stream, const void *buf, size_t n) {
        (void)stream;
        struct attachment *a = userdata;
        if (a->skip.skipping && !attachment_resume(a))
                return;
        if (a->skip.skipping) {
                glove_control_output_skip_add(&a->skip, n);
                return;
        }
        /* Encoded straight into the connection's output queue (the bytes
         * jansson would give: glove_control_frame_encode_output). */
        int r = glove_control_conn_push_output(a->conn, a->s->id, buf, n);
        if (r == -EINVAL) {
                /* An id JSON would escape (never one of the store's): the
                 * generic encoder. base64 is ASCII: no UTF-8 check (nocheck). */
                char *text = glove_base64_encode(buf, n);
                json_t *data = text ? json_stringn_nocheck(text, strlen(text)) : NULL;
                json_t *msg = data ? json_pack("{s:s,s:{s:s,s:o}}", "method", "session_output", "params",
                                               "session_id", a->s->id, "data_b64", data)
                                   : NULL;
                free(text);
                r = glove_control_conn_push(a->conn, msg, false);
        }
        if (r == -ENOBUFS) {
                /* The queue is full: skip (never wait, never drop) until it
                 * drains below half (glove_control_runtime_conn_drained). */
                glove_control_output_skip_add(&a->skip, n);
                glove_control_conn_want_drain(a->conn);
        } else if (r < 0) {
                attachment_drop(a, NULL);
        }
}


void glove_control_runtime_conn_closed(struct glove_control_runtime *rt, struct glove_control_conn *conn) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att, *next; a; a = next) {
                        next = a->next;
                        if (a->conn == conn)
                                attachment_drop(a, NULL);
                }
}

void glove_control_runtime_conn_drained(struct glove_control_runtime *rt, struct glove_control_conn *conn) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att, *next; a; a = next) {
                        next = a->next;
                        if (a->conn == conn)
                                (void)attachment_resume(a);
                }
}

static unsigned conn_attachments(struct glove_control_runtime *rt, struct glove_control_conn *conn) {
        unsigned n = 0;
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att; a; a = a->next)
                        n += a->conn == conn;
        return n;
}

/* ---- the keeper's transcript copy ---- */

static void mirror_put(struct mirror *m, const uint8_t *p, size_t n) {
        const size_t cap = sizeof(m->buf);
        if (n >= cap) {
                memcpy(m->buf, p + (n - cap), cap);
                m->head = 0;
                m->len = cap;
                return;
        }
        size_t tail = (m->head + m->len) % cap;
        for (size_t done = 0; done < n;) {
                size_t k = cap - tail < n - done ? cap - tail : n - done;
                memcpy(m->buf + tail, p + done, k);
                done += k;
                tail = (tail + k) % cap;
        }
        if (m->len + n > cap) {
                m->head = (m->head + (m->len + n - cap)) % cap;
                m->len = cap;
        } else {
                m->len += n;
        }
}

static size_t mirror_copy(const struct mirror *m, uint8_t *out, size_t cap) {
        size_t n = m->len < cap ? m->len : cap;
        size_t start = (m->head + (m->len - n)) % sizeof(m->buf);
        for (size_t done = 0; done < n;) {
                size_t k = sizeof(m->buf) - start < n - done ? sizeof(m->buf) - start : n - done;
                memcpy(out + done, m->buf + start, k);
                done += k;
                start = (start + k) % sizeof(m->buf);
        }
        return n;
}

/* ---- the keeper link (gloved's side of keeper.h) ---- */

static void keeper_lost(struct rt_session *s);
static void keeper_ended(struct rt_session *s, const json_t *outcome);
static void keeper_ready(struct rt_session *s, const json_t *identity);

static void link_close(struct rt_session *s) {
        s->ksrc = sd_event_source_disable_unref(s->ksrc);
        if (s->kfd >= 0)
                close(s->kfd);
        s->kfd = -1;
        while (s->kq) {
                struct kmsg *m = s->kq;
                s->kq = m->next;
                free(m);
        }
        s->kq_tail = &s->kq;
        s->kq_bytes = 0;
}

/* Sends what is queued; 0, or -errno when the channel broke. */
static int link_flush(struct rt_session *s) {
        while (s->kq) {
                struct kmsg *m = s->kq;
                ssize_t n = send(s->kfd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n < 0)
                        return -errno;
                s->kq = m->next;
                if (!s->kq)
                        s->kq_tail = &s->kq;
                s->kq_bytes -= m->len;
                free(m);
        }
        if (s->ksrc)
                (void)sd_event_source_set_io_events(s->ksrc, EPOLLIN | (s->kq ? EPOLLOUT : 0));
        return 0;
}

/* Queues one message (type, payload) towards the keeper and sends what it
 * can. Returns 0, -ENOTCONN without a keeper, -ENOBUFS past
 * GLOVE_CONTROL_RUNTIME_KEEPER_QUEUE_MAX, -ENOMEM. */
static int link_send(struct rt_session *s, char type, const void *payload, size_t len) {
        if (s->kfd < 0)
                return -ENOTCONN;
        if (len + 1 > GLOVE_KEEPER_MSG_MAX)
                return -EMSGSIZE;
        if (s->kq_bytes + len + 1 > GLOVE_CONTROL_RUNTIME_KEEPER_QUEUE_MAX)
                return -ENOBUFS;
        struct kmsg *m = malloc(sizeof(*m) + len + 1);
        if (!m)
                return -ENOMEM;
        m->next = NULL;
        m->len = len + 1;
        m->data[0] = (uint8_t)type;
        if (len)
                memcpy(m->data + 1, payload, len);
        *s->kq_tail = m;
        s->kq_tail = &m->next;
        s->kq_bytes += m->len;
        return link_flush(s) < 0 ? -EPIPE : 0;
}

static int link_send_json(struct rt_session *s, char type, json_t *o) {
        _cleanup_json_ json_t *v = o;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        if (!v || glove_json_encode_canonical(v, &text, &n, NULL) < 0)
                return -ENOMEM;
        return link_send(s, type, text, n);
}

/* Output of the agent at offset off: into the copy, and to every attached
 * client; bytes the copy already holds (after a transcript) are skipped, a
 * hole (the keeper skipped them) is a gap for every client. */
static void link_output(struct rt_session *s, uint64_t off, const uint8_t *p, size_t n) {
        struct mirror *m = s->mir;
        if (!m)
                return;
        if (off + n <= m->end)
                return;
        if (off < m->end) {
                size_t k = (size_t)(m->end - off);
                p += k;
                n -= k;
                off = m->end;
        }
        if (off > m->end) {
                for (struct attachment *a = s->att; a; a = a->next)
                        glove_control_output_skip_add(&a->skip, (size_t)(off - m->end));
        }
        mirror_put(m, p, n);
        m->end = off + n;
        for (struct attachment *a = s->att, *next; a; a = next) {
                next = a->next;
                on_client_output(a, 1, p, n);
        }
}

static uint64_t le64(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

static json_t *link_json(const uint8_t *p, size_t n) {
        json_t *v = NULL;
        if (glove_json_decode_strict(p, n, GLOVE_KEEPER_MSG_MAX, 0, &v, NULL) < 0 || !json_is_object(v)) {
                json_decref(v);
                return NULL;
        }
        return v;
}

static uint64_t jint(const json_t *o, const char *k) {
        json_int_t v = json_integer_value(json_object_get(o, k));
        return v > 0 ? (uint64_t)v : 0;
}

/* One message from the keeper. Returns false when s's link ended in it. */
static bool link_message(struct rt_session *s, const uint8_t *msg, size_t n) {
        char type = (char)msg[0];
        const uint8_t *p = msg + 1;
        n--;
        switch (type) {
        case GLOVE_KEEPER_OUTPUT:
                if (n > 8)
                        link_output(s, le64(p), p + 8, n - 8);
                return true;
        case GLOVE_KEEPER_TRANSCRIPT:
                if (n >= 8 && s->mir) {
                        s->mir->len = s->mir->head = 0;
                        mirror_put(s->mir, p + 8, n - 8);
                        s->mir->end = le64(p) + (n - 8);
                }
                return true;
        case GLOVE_KEEPER_CREDIT: {
                _cleanup_json_ json_t *o = link_json(p, n);
                if (o && json_is_true(json_object_get(o, "closed")))
                        s->input_closed = true;
                else if (o)
                        s->credit += jint(o, "bytes");
                if (s->credit > GLOVE_KEEPER_INPUT_MAX)
                        s->credit = GLOVE_KEEPER_INPUT_MAX;
                return true;
        }
        case GLOVE_KEEPER_WARNING: {
                _cleanup_json_ json_t *o = link_json(p, n);
                fprintf(stderr, "gloved: session %s: warning: %s: %s\n", s->id,
                        o ? json_string_value(json_object_get(o, "code")) ?: "?" : "?",
                        o ? json_string_value(json_object_get(o, "message")) ?: "" : "");
                return true;
        }
        case GLOVE_KEEPER_STATE: {
                _cleanup_json_ json_t *o = link_json(p, n);
                if (!o)
                        return true;
                json_t *k = json_object_get(o, "keeper");
                s->keeper_pid = (pid_t)jint(k, "pid");
                s->keeper_start = jint(k, "start_time");
                s->credit = jint(o, "input_credit");
                s->input_closed = json_is_true(json_object_get(o, "input_closed"));
                const json_t *out = json_object_get(o, "outcome");
                if (json_is_object(out)) {
                        keeper_ended(s, out);
                        return false;
                }
                const char *phase = json_string_value(json_object_get(o, "phase"));
                if (s->adopted && phase && strcmp(phase, "ready") == 0 && !s->released) {
                        /* Recorded running, never released (gloved ended
                         * between the durable gate and the release): the
                         * gate passed, the agent starts now. */
                        s->ready = true;
                        s->released_on_adopt = true;
                        if (link_send(s, GLOVE_KEEPER_RELEASE, NULL, 0) == 0)
                                s->released = true;
                        if (s->started_at_ms < 0)
                                s->started_at_ms = s->rt->o.now_ms();
                } else if (phase && strcmp(phase, "running") == 0) {
                        s->ready = s->released = true;
                }
                return true;
        }
        case GLOVE_KEEPER_READY: {
                _cleanup_json_ json_t *o = link_json(p, n);
                keeper_ready(s, o);
                return s->kfd >= 0;
        }
        case GLOVE_KEEPER_ENDED: {
                _cleanup_json_ json_t *o = link_json(p, n);
                keeper_ended(s, o);
                return false;
        }
        default:
                fprintf(stderr, "gloved: session %s: the keeper sent an unknown message (type %d)\n", s->id,
                        (int)(unsigned char)type);
                return true;
        }
}

static uint8_t link_buf[GLOVE_KEEPER_MSG_MAX];

static int on_link(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        struct rt_session *s = userdata;
        if ((revents & EPOLLOUT) && link_flush(s) < 0) {
                keeper_lost(s);
                return 0;
        }
        /* A bounded number per wake-up: other sessions and clients run too. */
        for (int i = 0; i < 64; i++) {
                ssize_t n = recv(fd, link_buf, sizeof(link_buf), MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                if (n <= 0) {
                        keeper_lost(s);
                        return 0;
                }
                if ((size_t)n > sizeof(link_buf)) {
                        fprintf(stderr, "gloved: session %s: a keeper message of %zd bytes was refused\n", s->id, n);
                        continue;
                }
                if (!link_message(s, link_buf, (size_t)n))
                        return 0;
        }
        return 0;
}

/* Puts s's keeper channel fd on the loop and (unless the reconciler did
 * already) says HELLO. */
static int link_attach(struct rt_session *s, struct glove_error *err) {
        int r = sd_event_add_io(s->rt->loop, &s->ksrc, s->kfd, EPOLLIN | (s->kq ? EPOLLOUT : 0), on_link, s);
        if (r < 0)
                return glove_error_set(err, -r, "keeper.event_loop", "sd_event_add_io: %s", strerror(-r));
        if (s->adopted)
                return 0;
        r = link_send_json(s, GLOVE_KEEPER_HELLO, json_pack("{s:i}", "version", GLOVE_KEEPER_VERSION));
        if (r < 0)
                return glove_error_set(err, -r, "keeper.channel", "the keeper's channel: %s", strerror(-r));
        return 0;
}

/* The keeper files' stem of a session id: "k" and 32 hex of its SHA-256
 * (a socket path must fit sun_path whatever the id's length). */
static void keeper_stem(const char *id, char out[40]) {
        uint8_t d[32];
        out[0] = 'k';
        if (glove_digest_sha256(id, strlen(id), d, NULL) < 0 || glove_digest_hex_encode(d, 16, out + 1, 39) < 0)
                snprintf(out, 40, "k0");
}

/* Opens (making it 0700 when missing) ROOT/keepers. */
static int keepers_dir(const struct glove_supervisor_runtime_config *cfg, struct glove_error *err) {
        if (mkdirat(cfg->materialization_root_fd, "keepers", 0700) < 0 && errno != EEXIST)
                return glove_error_set(err, errno, "keeper.dir", "%s/keepers: %s", cfg->materialization_root,
                                       strerror(errno));
        int fd = openat(cfg->materialization_root_fd, "keepers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "keeper.dir", "%s/keepers: %s", cfg->materialization_root,
                                       strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
                close(fd);
                return glove_error_set(err, EPERM, "keeper.dir", "%s/keepers is not a 0700 directory of the service user",
                                       cfg->materialization_root);
        }
        return fd;
}

/* sockaddr of DIR/STEM.sock reached through /proc/self/fd/DIRFD (short
 * whatever the root's length). */
static int keeper_addr(int dirfd, const char *stem, struct sockaddr_un *sa) {
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s.sock", dirfd, stem);
        return n < 0 || (size_t)n >= sizeof(sa->sun_path) ? -ENAMETOOLONG : 0;
}

/* Removes a session's keeper files (after its receipt, or when it never
 * had a keeper that runs). */
static void keeper_files_remove_keep_log(const struct glove_supervisor_runtime_config *cfg, const char *stem,
                                         bool keep_log) {
        int dfd = openat(cfg->materialization_root_fd, "keepers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return;
        static const char *const ext[] = { "sock", "status", "binding", "log" };
        char name[64];
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(ext) - (keep_log ? 1 : 0); i++) {
                snprintf(name, sizeof(name), "%s.%s", stem, ext[i]);
                (void)unlinkat(dfd, name, 0);
        }
        close(dfd);
}

static void keeper_files_remove(const struct glove_supervisor_runtime_config *cfg, const char *stem) {
        keeper_files_remove_keep_log(cfg, stem, false);
}

/* ---- the end of a session ---- */

static void end_notify(struct rt_session *s, const char *state) {
        while (s->att) {
                struct attachment *a = s->att;
                (void)gap_push(a, true);
                (void)glove_control_conn_push(a->conn,
                                              json_pack("{s:s,s:{s:s,s:s,s:I,s:O}}", "method", "session_ended", "params",
                                                        "session_id", s->id, "state", state, "receipt_sequence",
                                                        (json_int_t)s->receipt_seq, "termination",
                                                        s->termination ? s->termination : json_null()),
                                              true);
                attachment_drop(a, NULL);
        }
}

/* Appends the receipt, records the terminal transition, releases the
 * materializations. f's termination decides exited or failed. */
static void finish(struct rt_session *s, struct glove_control_receipt_facts *f) {
        struct glove_control_runtime *rt = s->rt;
        struct glove_error e = { 0 };
        const struct glove_control_session *st = glove_control_store_find(rt->o.store, s->id);
        f->session_id = s->id;
        f->controller_plan_digest = st->controller_plan_digest;
        f->plan_content_digest = st->plan_content_digest;
        f->launch_binding = s->binding;
        f->launch_binding_digest = s->binding_digest[0] ? s->binding_digest : NULL;
        f->ended_at_ms = rt->o.now_ms();
        _cleanup_json_ json_t *receipt = glove_control_receipt_build(f);
        if (s->reserved) {
                glove_control_receipts_unreserve(rt->o.receipts, GLOVE_CONTROL_RUNTIME_RECEIPT_RESERVE);
                s->reserved = false;
        }
        uint64_t seq = 0;
        if (!receipt || glove_control_receipts_append(rt->o.receipts, "session.terminal", s->id, receipt, f->ended_at_ms,
                                                      &seq, &e) < 0)
                fprintf(stderr, "gloved: session %s: the terminal receipt could not be appended: %s: %s\n", s->id,
                        e.code ? e.code : "receipts.io", e.message);
        s->receipt_seq = seq;
        json_decref(s->termination);
        s->termination = receipt ? json_incref(json_object_get(receipt, "termination")) : NULL;
        bool failed = f->termination == GLOVE_CONTROL_TERM_START_FAILED || f->termination == GLOVE_CONTROL_TERM_LOST;
        const char *reason = f->code ? f->code : (failed ? "start_failed" : glove_control_termination_name(f->termination));
        /* No receipt, no terminal state: a receipt-less "exited" would claim
         * what cannot be verified; the session is failed instead. */
        if (!seq)
                failed = true, reason = "receipts.append_failed";
        struct glove_error te = { 0 };
        /* The chain is running → stopping → exited: an agent that ended on
         * its own passes through stopping (reason "session.ended"). */
        if (!failed && st->state == GLOVE_CONTROL_SESSION_RUNNING &&
            transition(rt, s->id, GLOVE_CONTROL_SESSION_STOPPING, "session.ended", &te) < 0)
                failed = true, reason = te.code ? te.code : "store.transition";
        if (transition(rt, s->id, failed ? GLOVE_CONTROL_SESSION_FAILED : GLOVE_CONTROL_SESSION_EXITED, reason, &te) < 0)
                fprintf(stderr, "gloved: session %s: the terminal transition could not be recorded: %s: %s\n", s->id,
                        te.code, te.message);
        struct glove_error le = { 0 };
        if (s->launch ? glove_supervisor_launch_release(s->launch, &le) < 0
                      : glove_supervisor_release_leftovers(rt->o.config, s->id, st->plan, st->plan_len, &le) < 0)
                fprintf(stderr, "gloved: session %s: %s: %s\n", s->id, le.code, le.message);
        if (s->live) {
                s->live = false;
                rt->live--;
                rt->ended++;
        }
        end_notify(s, failed ? "failed" : "exited");
        trim_ended(rt, s);
}

/* The cgroup identity of PID 1: {"path","inode"} from /proc/PID/cgroup and a
 * stat of the run cgroup beside the probe's parent. */
static json_t *cgroup_identity(struct rt_session *s, pid_t pid) {
        char p[64], buf[4096];
        snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        const char *want = s->rt->cgroup.backend == GLOVE_CGROUP_BACKEND_V2 ? "0::" : ":memory:";
        char *line = strstr(buf, want);
        if (!line)
                return NULL;
        line += strlen(want);
        char *end = strchr(line, '\n');
        if (end)
                *end = '\0';
        const char *base = strrchr(line, '/');
        base = base ? base + 1 : line;
        char dir[PATH_MAX + 64];
        struct stat st;
        snprintf(dir, sizeof(dir), "%s/%s", s->rt->cgroup.parent, base);
        if (stat(dir, &st) < 0)
                return json_pack("{s:s,s:n}", "path", line, "inode");
        return json_pack("{s:s,s:I}", "path", line, "inode", (json_int_t)st.st_ino);
}

static void fail_start(struct rt_session *s, const struct glove_error *why) {
        struct glove_control_receipt_facts f = {
                .started_at_ms = -1,
                .exit_code = -1,
                .termination = GLOVE_CONTROL_TERM_START_FAILED,
                .code = why && why->code ? why->code : "start.failed",
        };
        s->auth.live = false;
        finish(s, &f);
}

/* ---- the keeper's life seen from gloved ---- */

static bool jbool(const json_t *o, const char *k) {
        return json_is_true(json_object_get(o, k));
}

/* A stable code of the keeper's: 1..128 bytes of [a-z0-9._-]. */
static bool reason_ok(const char *c) {
        size_t n = strlen(c);
        if (n == 0 || n > GLOVE_CONTROL_REASON_MAX)
                return false;
        return strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* The receipt facts of a keeper's OUTCOME (keeper.h). */
static void outcome_facts(struct rt_session *s, const json_t *o, struct glove_control_receipt_facts *f) {
        *f = (struct glove_control_receipt_facts){
                .started_at_ms = s->started_at_ms,
                .exit_code = -1,
                .cpu_time_ms = jint(o, "cpu_time_ms"),
                .output_bytes = jint(o, "output_bytes"),
                .peak_memory_bytes = jint(o, "peak_memory_bytes"),
                .wall_time_ms = jint(o, "wall_time_ms"),
        };
        const char *kind = json_string_value(json_object_get(o, "kind"));
        int value = (int)json_integer_value(json_object_get(o, "value"));
        const char *limit = json_string_value(json_object_get(o, "limit"));
        const char *error_code = json_string_value(json_object_get(o, "error_code"));
        bool exited = kind && strcmp(kind, "exited") == 0, signaled = kind && strcmp(kind, "signaled") == 0,
             lost = !kind || strcmp(kind, "lost") == 0;
        /* The limit name is one the plan knows, or none. */
        static const char *const known[] = { "cpu_time_ms", "memory_bytes", "pids", "wall_time_ms",
                                             "terminal_output_bytes" };
        const char *lim = NULL;
        for (size_t i = 0; limit && i < GLOVE_ELEMENTSOF(known); i++)
                if (strcmp(limit, known[i]) == 0)
                        lim = known[i];
        if (!kind || strcmp(kind, "setup_failed") == 0 || !jbool(o, "released")) {
                f->termination = GLOVE_CONTROL_TERM_START_FAILED;
                f->code = s->fail_code[0]                                    ? s->fail_code
                          : jbool(o, "aborted")                              ? "start.aborted"
                          : error_code && reason_ok(error_code) ? error_code
                                                                             : "start.failed";
                f->started_at_ms = -1;
        } else if (jbool(o, "audit_full")) {
                f->termination = GLOVE_CONTROL_TERM_LIMIT;
                f->limit = "disk_bytes";
                f->code = "egress.audit_full";
                f->signal = SIGKILL;
        } else if (lim) {
                f->termination = GLOVE_CONTROL_TERM_LIMIT;
                f->limit = lim;
                f->signal = SIGKILL;
        } else if (jbool(o, "disk_full")) {
                f->termination = GLOVE_CONTROL_TERM_LIMIT;
                f->limit = "disk_bytes";
        } else if (kind && strcmp(kind, "exec_failed") == 0) {
                f->termination = GLOVE_CONTROL_TERM_START_FAILED;
                f->code = "launch.exec_failed";
        } else if (jbool(o, "killed") && !exited) {
                /* signal SIGKILL kills PID 1 and the whole sandbox: no
                 * report of the agent comes back, and none is missing. */
                f->termination = GLOVE_CONTROL_TERM_SIGNAL;
                f->signal = SIGKILL;
        } else if (jbool(o, "stopped") || jbool(o, "stopping") || s->stopping) {
                /* Before "lost": a stop whose grace ran out kills PID 1,
                 * which then reports nothing; that is the stop, not a loss. */
                f->termination = GLOVE_CONTROL_TERM_STOPPED;
                f->signal = signaled ? value : lost ? SIGKILL : 0;
                if (exited)
                        f->exit_code = value;
        } else if (lost) {
                f->termination = GLOVE_CONTROL_TERM_LOST;
                f->code = "session.lost";
        } else if (signaled) {
                f->termination = GLOVE_CONTROL_TERM_SIGNAL;
                f->signal = value;
        } else {
                f->termination = GLOVE_CONTROL_TERM_EXIT;
                f->exit_code = value;
        }
        if (f->termination == GLOVE_CONTROL_TERM_LIMIT && exited)
                f->exit_code = value;
        if (f->termination == GLOVE_CONTROL_TERM_LIMIT && signaled)
                f->signal = value;
        /* disk usage: the limit when the private tmpfs filled, else not measured (0) */
        if (jbool(o, "disk_full") && s->binding) {
                json_t *l = json_object_get(s->binding, "limits");
                f->disk_bytes = (uint64_t)json_integer_value(json_object_get(l, "disk_bytes"));
        }
}

static void keep_transcript(struct rt_session *s) {
        if (!s->mir || s->transcript)
                return;
        uint8_t *buf = malloc(GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
        if (!buf)
                return;
        s->transcript_len = mirror_copy(s->mir, buf, GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
        s->transcript = buf;
}

/* The session ended in its keeper (ENDED, or the status file's outcome):
 * the receipt, the terminal transition, then the keeper is let go and its
 * files removed. */
static void keeper_ended(struct rt_session *s, const json_t *outcome) {
        if (s->ended)
                return;
        s->ended = true;
        struct glove_control_receipt_facts f;
        if (outcome) {
                outcome_facts(s, outcome, &f);
        } else {
                f = (struct glove_control_receipt_facts){ .started_at_ms = s->started_at_ms, .exit_code = -1,
                                                          .termination = GLOVE_CONTROL_TERM_LOST,
                                                          .code = "keeper.protocol" };
        }
        keep_transcript(s);
        free(s->mir);
        s->mir = NULL;
        s->auth.live = false;
        finish(s, &f);
        /* ACK, best effort: the keeper also ends when the channel closes
         * after its ENDED. */
        (void)link_send(s, GLOVE_KEEPER_ACK, NULL, 0);
        link_close(s);
        keeper_files_remove(s->rt->o.config, s->stem);
}

/* Reads DIR/STEM.status (new reference, or NULL). */
static json_t *status_read(const struct glove_supervisor_runtime_config *cfg, const char *stem) {
        char rel[96];
        snprintf(rel, sizeof(rel), "keepers/%s.status", stem);
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        if (glove_file_read_bounded(cfg->materialization_root_fd, rel, O_NOFOLLOW | O_NONBLOCK, 65536, &buf, &n, NULL) < 0)
                return NULL;
        return link_json((const uint8_t *)buf, n);
}

/* The keeper's channel ended before its ENDED: the keeper died. Its status
 * file says how the session ended, or what usage it last recorded (the
 * session is then lost: keeper.lost). Its sandbox died with it
 * (PR_SET_PDEATHSIG); the empty run cgroup goes with the sweep. */
static void keeper_lost(struct rt_session *s) {
        link_close(s);
        if (s->ended)
                return;
        _cleanup_json_ json_t *status = status_read(s->rt->o.config, s->stem);
        const json_t *out = json_object_get(status, "outcome");
        if (json_is_object(out)) {
                keeper_ended(s, out);
                return;
        }
        s->ended = true;
        const json_t *u = json_object_get(status, "usage");
        struct glove_control_receipt_facts f = {
                .started_at_ms = s->released ? s->started_at_ms : -1,
                .exit_code = -1,
                .termination = s->released ? GLOVE_CONTROL_TERM_LOST : GLOVE_CONTROL_TERM_START_FAILED,
                .code = "keeper.lost",
                .cpu_time_ms = jint(u, "cpu_time_ms"),
                .output_bytes = jint(u, "output_bytes"),
                .peak_memory_bytes = jint(u, "peak_memory_bytes"),
                .wall_time_ms = jint(u, "wall_time_ms"),
        };
        char rel[96];
        snprintf(rel, sizeof(rel), "keepers/%s.log", s->stem);
        _cleanup_free_ char *log = NULL;
        size_t loglen = 0;
        (void)glove_file_read_bounded(s->rt->o.config->materialization_root_fd, rel, O_NOFOLLOW | O_NONBLOCK, 4096,
                                      &log, &loglen, NULL);
        fprintf(stderr, "gloved: session %s: keeper.lost: its keeper (pid %d) ended without an outcome%s%.*s\n", s->id,
                (int)s->keeper_pid, loglen ? "; its log: " : "", (int)loglen, log ? log : "");
        keep_transcript(s);
        free(s->mir);
        s->mir = NULL;
        s->auth.live = false;
        finish(s, &f);
        /* Its log stays: why it died is worth reading. */
        keeper_files_remove_keep_log(s->rt->o.config, s->stem, true);
        glove_cgroup_sweep();
}

/* Writes DIR/STEM.binding (the launch binding, canonical JSON, 0600,
 * synced): an adopting gloved reads it back for the receipt. */
static int binding_write(struct rt_session *s, struct glove_error *err) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        int r = glove_json_encode_canonical(s->binding, &text, &n, err);
        if (r < 0)
                return r;
        int dfd = keepers_dir(s->rt->o.config, err);
        if (dfd < 0)
                return dfd;
        _cleanup_close_ int dir = dfd;
        char name[64], tmp[72];
        snprintf(name, sizeof(name), "%s.binding", s->stem);
        snprintf(tmp, sizeof(tmp), "%s.binding.new", s->stem);
        (void)unlinkat(dir, tmp, 0);
        _cleanup_close_ int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return glove_error_set(err, errno, "keeper.binding", "%s: %s", tmp, strerror(errno));
        if (glove_fd_write_all(fd, text, n) < 0 || fsync(fd) < 0 || renameat(dir, tmp, dir, name) < 0 || fsync(dir) < 0)
                return glove_error_set(err, errno ? errno : EIO, "keeper.binding", "%s: %s", name, strerror(errno));
        return 0;
}

/* READY: PID 1 is ready and held in its keeper. The same gate as before
 * the keeper: the start authorization, the cgroup identity in the binding,
 * the binding's size; then starting -> running with the runtime identity
 * (synced), and only then RELEASE. */
static void keeper_ready(struct rt_session *s, const json_t *id) {
        struct glove_control_runtime *rt = s->rt;
        struct glove_error e = { 0 };
        const struct glove_control_session *st = glove_control_store_find(rt->o.store, s->id);
        /* A keeper repeats READY after each HELLO until released: the gate
         * runs once, for the gloved that started the session. */
        if (s->released || s->adopted)
                return;
        s->ready = true;
        if (s->fail_code[0]) { /* stop_session came first: never released */
                (void)link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
                return;
        }
        bool ok = s->auth.live && rt->o.now_ms() <= s->auth.expires_at_ms && strcmp(s->auth.session_id, s->id) == 0 &&
                  strcmp(s->auth.controller_plan_digest, st->controller_plan_digest) == 0 &&
                  strcmp(s->auth.plan_content_digest, st->plan_content_digest) == 0 &&
                  strcmp(s->auth.policy_digest, glove_supervisor_policy_digest(rt->o.policy)) == 0;
        s->auth.live = false;
        explicit_bzero(s->auth.nonce, sizeof(s->auth.nonce));
        if (!ok) {
                glove_error_set(&e, EACCES, "start.authorization_expired",
                                "the start authorization expired or does not match the session");
                goto fail;
        }
        pid_t pid = (pid_t)jint(id, "pid");
        uint64_t start = 0;
        if (!id || pid <= 0 || glove_keeper_proc_start_time(pid, &start) < 0 || start != jint(id, "pid_start_time")) {
                glove_error_set(&e, EIO, "start.identity", "the keeper's PID 1 identity could not be confirmed");
                goto fail;
        }
        json_t *cg = cgroup_identity(s, pid);
        if (!cg || jint(cg, "inode") != jint(json_object_get(id, "cgroup"), "inode")) {
                json_decref(cg);
                glove_error_set(&e, EIO, "start.cgroup_identity", "the run cgroup of the session could not be read");
                goto fail;
        }
        json_object_set_new(s->binding, "cgroup", cg);
        if (glove_control_json_digest(s->binding, s->binding_digest, &e) < 0)
                goto fail;
        /* The terminal receipt carries the binding: it must fit in one
         * envelope with room for the rest, or the agent would run and end
         * without a receipt. Checked before release. */
        {
                _cleanup_free_ char *enc = NULL;
                size_t enc_len = 0;
                if (glove_json_encode_canonical(s->binding, &enc, &enc_len, &e) < 0)
                        goto fail;
                if (enc_len > GLOVE_CONTROL_RUNTIME_BINDING_MAX) {
                        glove_error_set(&e, EMSGSIZE, "start.binding_too_large",
                                        "the launch binding is %zu bytes; a terminal receipt holds at most %u",
                                        enc_len, (unsigned)GLOVE_CONTROL_RUNTIME_BINDING_MAX);
                        /* The failed start's receipt must still fit: it names
                         * the size instead of the binding. */
                        json_decref(s->binding);
                        s->binding = json_pack("{s:I}", "omitted_bytes", (json_int_t)enc_len);
                        s->binding_digest[0] = '\0';
                        goto fail;
                }
        }
        if (binding_write(s, &e) < 0)
                goto fail;
        {
                char sock[64];
                snprintf(sock, sizeof(sock), "keepers/%s.sock", s->stem);
                _cleanup_json_ json_t *runtime = json_deep_copy(id);
                json_t *k = json_object_get(runtime, "keeper");
                json_t *mats = json_object_get(s->binding, "materializations");
                _cleanup_free_ char *text = NULL;
                size_t n = 0;
                if (!runtime || !json_is_object(k) || json_object_set_new(k, "socket", json_string(sock)) < 0 ||
                    json_object_set_new(runtime, "binding_digest", json_string(s->binding_digest)) < 0 ||
                    json_object_set_new(runtime, "materializations", mats ? json_deep_copy(mats) : json_array()) < 0 ||
                    glove_json_encode_canonical(runtime, &text, &n, &e) < 0) {
                        if (!glove_error_is_set(&e))
                                glove_error_set(&e, EINVAL, "start.identity", "the keeper's identity is malformed");
                        goto fail;
                }
                bool appended;
                if (glove_control_store_transition_runtime(rt->o.store, s->id, GLOVE_CONTROL_SESSION_RUNNING, "",
                                                           rt->o.now_ms(), text, n, &appended, &e) < 0)
                        goto fail;
        }
        s->started_at_ms = rt->o.now_ms();
        if (link_send(s, GLOVE_KEEPER_RELEASE, NULL, 0) < 0) {
                (void)link_send(s, GLOVE_KEEPER_KILL, NULL, 0);
                return; /* the end comes through ENDED, or the keeper's loss */
        }
        s->released = true;
        return;
fail:
        fprintf(stderr, "gloved: session %s: not released: %s: %s\n", s->id, e.code, e.message);
        snprintf(s->fail_code, sizeof(s->fail_code), "%s", e.code ? e.code : "start.failed");
        /* Aborting before release ends in ENDED with released false:
         * start_failed. Keep the code for the receipt. */
        (void)link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
}

/* Forks the keeper of s (double fork: the keeper is nobody's child here and
 * is never waited for by gloved) with the complete description d, and
 * links it. Returns 0 or -errno (keeper.*). */
static int keeper_spawn(struct rt_session *s, const struct glove_session_desc *d, struct glove_error *err) {
        struct glove_control_runtime *rt = s->rt;
        int dfd = keepers_dir(rt->o.config, err);
        if (dfd < 0)
                return dfd;
        _cleanup_close_ int dir = dfd;
        keeper_stem(s->id, s->stem);
        char name[64];
        snprintf(name, sizeof(name), "%s.sock", s->stem);
        (void)unlinkat(dir, name, 0);
        struct sockaddr_un sa;
        if (keeper_addr(dir, s->stem, &sa) < 0)
                return glove_error_set(err, ENAMETOOLONG, "keeper.socket", "the keeper socket path is too long");
        _cleanup_close_ int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        /* Bound here, listened on by the keeper: a connecting peer's
         * SO_PEERCRED names the process that called listen(2). */
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || fchmodat(dir, name, 0600, 0) < 0)
                return glove_error_set(err, errno, "keeper.socket", "%s/keepers/%s: %s",
                                       rt->o.config->materialization_root, name, strerror(errno));
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return glove_error_set(err, errno, "keeper.socket", "socketpair: %s", strerror(errno));
        s->mir = calloc(1, sizeof(*s->mir));
        if (!s->mir) {
                close(sv[0]);
                close(sv[1]);
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
        struct glove_keeper_args a = {
                .session_id = s->id,
                .stem = s->stem,
                .desc = d,
                .channel_fd = sv[1],
                .listen_fd = lfd,
                .dir_fd = dir,
                .cgroup_parent = rt->cgroup.parent,
                .cgroup_v2 = rt->cgroup.backend == GLOVE_CGROUP_BACKEND_V2,
                .now_ms = rt->o.now_ms,
        };
        pid_t p = fork();
        if (p == 0) {
                pid_t q = fork();
                if (q != 0)
                        _exit(q < 0 ? 1 : 0);
                glove_keeper_run(&a);
        }
        int fe = errno;
        close(sv[1]);
        int status = 0;
        if (p > 0)
                while (waitpid(p, &status, 0) < 0 && errno == EINTR)
                        ;
        if (p < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                close(sv[0]);
                (void)unlinkat(dir, name, 0);
                return glove_error_set(err, p < 0 ? fe : EAGAIN, "keeper.fork", "the session keeper could not be started");
        }
        s->kfd = sv[0];
        return link_attach(s, err);
}

/* ---- methods ---- */

static int revalidate(struct glove_control_runtime *rt, const struct glove_control_session *st,
                      struct glove_error *err) {
        struct glove_plan_verdict v;
        memset(&v, 0, sizeof(v));
        int r = glove_supervisor_plan_validate(rt->o.policy, st->plan, st->plan_len, rt->o.now_ms(), &v, err);
        if (r < 0)
                return r;
        if (v.valid)
                return 0;
        for (size_t i = 0; i < v.n_reasons; i++)
                if (strcmp(v.reasons[i].code, "plan.expired") == 0)
                        return glove_error_set(err, ETIMEDOUT, "plan.expired", "the plan expired; it never starts");
        return glove_error_set(err, EINVAL, "plan.invalid", "the stored plan no longer satisfies the policy: %s",
                               v.n_reasons ? v.reasons[0].code : "?");
}

static int mint(struct glove_control_runtime *rt, struct rt_session *s, const struct glove_control_session *st,
                struct glove_error *err) {
        struct auth *a = &s->auth;
        int r = glove_digest_random(a->nonce, sizeof(a->nonce), err);
        if (r < 0)
                return r;
        snprintf(a->session_id, sizeof(a->session_id), "%s", st->session_id);
        memcpy(a->controller_plan_digest, st->controller_plan_digest, 65);
        memcpy(a->plan_content_digest, st->plan_content_digest, 65);
        snprintf(a->policy_digest, sizeof(a->policy_digest), "%s", glove_supervisor_policy_digest(rt->o.policy));
        a->expires_at_ms = rt->o.now_ms() + GLOVE_CONTROL_RUNTIME_AUTH_TTL_MS;
        a->live = true;
        return 0;
}

/* ---- the prepare workers ----
 *
 * glove_supervisor_launch_prepare blocks (alias resolution, mkfs.ext4 as a
 * child, loop devices, mounts): it runs on at most
 * GLOVE_CONTROL_RUNTIME_PREPARE_WORKERS threads, started on demand and kept
 * until shutdown. A worker calls prepare on its job's own copies (id, plan)
 * with the immutable configuration (policy, materialization root fd) and
 * nothing else of gloved; mkfs is waited for by its pid (gloved never waits
 * for any child), every descriptor is O_CLOEXEC, and the sandbox spawn of the
 * loop thread is safe beside other threads (sandbox.h, "Threads"). A finished
 * job goes to the done list and the eventfd wakes the loop, which carries on
 * with the start. Workers block every signal. */

static void *prepare_worker(void *userdata) {
        struct prepare_pool *p = userdata;
        pthread_mutex_lock(&p->lock);
        for (;;) {
                while (!p->queue && !p->quit) {
                        p->idle++;
                        pthread_cond_wait(&p->cond, &p->lock);
                        p->idle--;
                }
                if (!p->queue)
                        break; /* quit, nothing taken */
                struct prepare_job *j = p->queue;
                p->queue = j->next;
                if (!p->queue)
                        p->queue_tail = &p->queue;
                p->queued--;
                j->next = NULL;
                pthread_mutex_unlock(&p->lock);
                j->r = glove_supervisor_launch_prepare(j->cfg, j->id, j->plan, j->plan_len, &j->launch, &j->err);
                if (j->r >= 0 && !j->launch)
                        j->r = glove_error_set(&j->err, EINVAL, "launch.invalid_argument", "no launch was made");
                pthread_mutex_lock(&p->lock);
                *p->done_tail = j;
                p->done_tail = &j->next;
                uint64_t one = 1;
                (void)!write(p->efd, &one, sizeof(one)); /* a full counter still wakes the loop */
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

static void prepared(struct rt_session *s, struct prepare_job *j);

static int on_prepared(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)revents;
        struct glove_control_runtime *rt = userdata;
        uint64_t n;
        (void)!read(fd, &n, sizeof(n));
        pthread_mutex_lock(&rt->pool.lock);
        struct prepare_job *done = rt->pool.done;
        rt->pool.done = NULL;
        rt->pool.done_tail = &rt->pool.done;
        pthread_mutex_unlock(&rt->pool.lock);
        while (done) {
                struct prepare_job *j = done;
                done = j->next;
                prepared(j->s, j);
        }
        return 0;
}

static int pool_up(struct glove_control_runtime *rt, struct glove_error *err) {
        struct prepare_pool *p = &rt->pool;
        if (p->up)
                return 0;
        p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->efd < 0)
                return glove_error_set(err, errno, "runtime.prepare_worker", "eventfd: %s", strerror(errno));
        int r = sd_event_add_io(rt->loop, &p->src, p->efd, EPOLLIN, on_prepared, rt);
        if (r < 0) {
                close(p->efd);
                p->efd = -1;
                return glove_error_set(err, -r, "runtime.prepare_worker", "sd_event_add_io: %s", strerror(-r));
        }
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->queue = p->done = NULL;
        p->queue_tail = &p->queue;
        p->done_tail = &p->done;
        p->n_threads = p->idle = p->queued = 0;
        p->quit = false;
        p->up = true;
        return 0;
}

/* Queues j; starts a worker when every started one is busy. */
static int pool_submit(struct glove_control_runtime *rt, struct prepare_job *j, struct glove_error *err) {
        int r = pool_up(rt, err);
        if (r < 0)
                return r;
        struct prepare_pool *p = &rt->pool;
        pthread_mutex_lock(&p->lock);
        j->next = NULL;
        *p->queue_tail = j;
        p->queue_tail = &j->next;
        p->queued++;
        if (p->queued > p->idle && p->n_threads < GLOVE_CONTROL_RUNTIME_PREPARE_WORKERS) {
                pthread_attr_t attr;
                sigset_t all, old;
                sigfillset(&all);
                pthread_attr_init(&attr);
                (void)pthread_attr_setstacksize(&attr, GLOVE_CONTROL_RUNTIME_PREPARE_STACK);
                pthread_sigmask(SIG_SETMASK, &all, &old);
                int e = pthread_create(&p->threads[p->n_threads], &attr, prepare_worker, p);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                pthread_attr_destroy(&attr);
                if (e == 0)
                        p->n_threads++;
                else if (p->n_threads == 0) {
                        /* No worker at all: take the job back. */
                        p->queue = NULL;
                        p->queue_tail = &p->queue;
                        p->queued = 0;
                        pthread_mutex_unlock(&p->lock);
                        return glove_error_set(err, e, "runtime.prepare_worker", "pthread_create: %s", strerror(e));
                }
                /* else: the started workers take it in turn */
        }
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
        return 0;
}

static void job_free(struct prepare_job *j) {
        if (!j)
                return;
        glove_supervisor_launch_free(j->launch);
        free(j->plan);
        free(j);
}

/* Stops the workers: a queued job never runs; a running one is waited for
 * (prepare is bounded: mkfs of the plan's images at most). Every session
 * whose job was pending then fails with a receipt (start_failed,
 * service.stopped); a launch a worker finished is freed (its mounts
 * released; its images stay for cleanup_session, like any failed start). */
static void pool_down(struct glove_control_runtime *rt) {
        struct prepare_pool *p = &rt->pool;
        if (!p->up)
                return;
        pthread_mutex_lock(&p->lock);
        struct prepare_job *left = p->queue;
        p->queue = NULL;
        p->queue_tail = &p->queue;
        p->queued = 0;
        p->quit = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < p->n_threads; i++)
                (void)pthread_join(p->threads[i], NULL);
        p->n_threads = 0;
        /* Only this thread now: the done jobs, then the ones never taken. */
        struct prepare_job *lists[2] = { p->done, left };
        p->done = NULL;
        p->done_tail = &p->done;
        for (size_t k = 0; k < 2; k++)
                while (lists[k]) {
                        struct prepare_job *j = lists[k];
                        lists[k] = j->next;
                        struct rt_session *s = j->s;
                        s->job = NULL;
                        job_free(j); /* releases what a finished prepare made */
                        struct glove_error e = { 0 };
                        glove_error_set(&e, ECANCELED, "service.stopped", "gloved stopped while the session was prepared");
                        fail_start(s, &e);
                }
        sd_event_source_disable_unref(p->src);
        p->src = NULL;
        close(p->efd);
        p->efd = -1;
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        p->up = false;
}

/* The egress audit log of s: ROOT/audit/SESSION.jsonl (0600, O_APPEND, a new
 * file: sessions are never restarted). Kept by cleanup_session: it is the
 * record of what the agent reached. Returns 0 or -errno (audit.open). */
static int open_audit(struct rt_session *s, struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = s->rt->o.config;
        if (mkdirat(cfg->materialization_root_fd, "audit", 0700) < 0 && errno != EEXIST)
                return glove_error_set(err, errno, "audit.open", "%s/audit: %s", cfg->materialization_root,
                                       strerror(errno));
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/audit/%s.jsonl", cfg->materialization_root, s->id) >= (int)sizeof(path))
                return glove_error_set(err, ENAMETOOLONG, "audit.open", "the audit log path is too long");
        return glove_audit_open(path, "/", &s->audit, err);
}

/* Back on the loop thread with j's result: preparing -> starting, spawn,
 * attach to the loop, and the attachments made while preparing join the
 * terminal. Any failure: failed with a receipt. Frees j. */
static void prepared(struct rt_session *s, struct prepare_job *j) {
        struct glove_control_runtime *rt = s->rt;
        struct glove_error e = { 0 };
        s->job = NULL;
        int r = j->r;
        if (r < 0)
                e = j->err;
        else
                s->launch = TAKE_PTR(j->launch);
        job_free(j);
        struct glove_net_policy *egress = NULL;
        struct glove_grant_set grants;
        glove_grant_set_init(&grants);
        if (r >= 0 && s->fail_code[0]) /* stop_session while preparing: it never starts */
                r = glove_error_set(&e, ECANCELED, "start.stopped", "stop_session came before the agent was released");
        if (r >= 0 && !(s->binding = glove_supervisor_launch_binding(s->launch)))
                r = glove_error_set(&e, ENOMEM, "runtime.no_memory", "out of memory");
        if (r >= 0)
                r = transition(rt, s->id, GLOVE_CONTROL_SESSION_STARTING, "", &e);
        if (r >= 0) {
                egress = glove_supervisor_launch_take_egress(s->launch);
                if (egress)
                        r = open_audit(s, &e);
        }
        if (r >= 0) {
                struct glove_session_desc d = {
                        .argv = glove_supervisor_launch_argv(s->launch),
                        .envp = glove_supervisor_launch_envp(s->launch),
                        .grants = &grants,
                        .seccomp = &glove_seccomp_prebuilt,
                        .cgroup_policy = GLOVE_SESSION_CGROUP_REQUIRED,
                        .terminal = GLOVE_TERMINAL_PTY,
                        .rows = s->rows ? s->rows : 24,
                        .cols = s->cols ? s->cols : 80,
                        .channel_stdin_fd = -1,
                        .channel_stdout_fd = -1,
                        .egress = egress,
                        .audit = egress ? &s->audit : NULL,
                        /* PID 1 dies with its keeper, never with gloved. */
                        .parent_death_kill = true,
                        .add_mounts = glove_supervisor_launch_add_mounts,
                        .add_mounts_ctx = s->launch,
                        .cwd = glove_supervisor_launch_cwd(s->launch),
                };
                glove_supervisor_launch_limits(s->launch, &d.limits);
                /* The egress audit log lives on the host: it counts against
                 * the session's disk limit (an agent flooding the proxy with
                 * refused requests could otherwise fill the host disk). */
                d.audit_max_bytes = d.limits.disk_bytes;
                r = keeper_spawn(s, &d, &e);
                /* The keeper holds the egress audit descriptor now. */
                glove_audit_close(&s->audit);
        }
        if (egress) {
                glove_net_policy_free(egress);
                free(egress);
        }
        if (r < 0) {
                fprintf(stderr, "gloved: session %s: the start failed: %s: %s\n", s->id, e.code ? e.code : "start.failed",
                        e.message);
                bool linked = s->kfd >= 0;
                if (linked) /* the keeper is told to end what it started */
                        (void)link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
                link_close(s);
                fail_start(s, &e);
                glove_supervisor_launch_free(s->launch);
                s->launch = NULL;
                if (!linked)
                        keeper_files_remove(rt->o.config, s->stem);
                return;
        }
}

int glove_control_runtime_start(struct glove_control_runtime *rt, const char *id, json_t **result,
                                struct glove_error *err) {
        *result = NULL;
        const struct glove_control_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (glove_control_session_state_terminal(st->state))
                return glove_error_set(err, EINVAL, "session.terminal", "session %s is %s", id,
                                       glove_control_session_state_name(st->state));
        if (st->state != GLOVE_CONTROL_SESSION_CREATED || find(rt, id)) {
                *result = state_result(rt, id); /* a retry answers the current state */
                return *result ? 0 : -ENOMEM;
        }
        if (!rt->loop)
                return glove_error_set(err, EAGAIN, "runtime.no_loop", "the service loop is not running");
        if (rt->live >= GLOVE_CONTROL_RUNTIME_SESSIONS_MAX)
                return glove_error_set(err, EBUSY, "runtime.busy", "%d sessions are running already",
                                       GLOVE_CONTROL_RUNTIME_SESSIONS_MAX);
        int r = revalidate(rt, st, err);
        if (r < 0)
                return r;
        struct rt_session *s = calloc(1, sizeof(*s));
        struct prepare_job *j = calloc(1, sizeof(*j));
        char *plan = malloc(st->plan_len + 1);
        if (!s || !j || !plan) {
                free(s);
                free(j);
                free(plan);
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
        memcpy(plan, st->plan, st->plan_len);
        plan[st->plan_len] = '\0';
        j->plan = plan;
        j->plan_len = st->plan_len;
        j->cfg = rt->o.config;
        j->s = s;
        snprintf(j->id, sizeof(j->id), "%s", id);
        s->rt = rt;
        s->audit.fd = -1;
        s->kfd = -1;
        s->kq_tail = &s->kq;
        keeper_stem(id, s->stem);
        s->started_at_ms = -1;
        snprintf(s->id, sizeof(s->id), "%s", id);
        if ((r = mint(rt, s, st, err)) < 0 ||
            (r = glove_control_receipts_reserve(rt->o.receipts, GLOVE_CONTROL_RUNTIME_RECEIPT_RESERVE, err)) < 0) {
                job_free(j);
                free(s);
                return r;
        }
        s->reserved = true;
        r = transition(rt, id, GLOVE_CONTROL_SESSION_PREPARING, "", err);
        if (r < 0) {
                glove_control_receipts_unreserve(rt->o.receipts, GLOVE_CONTROL_RUNTIME_RECEIPT_RESERVE);
                job_free(j);
                free(s);
                return r;
        }
        s->live = true;
        rt->live++;
        s->next = rt->sessions;
        rt->sessions = s;
        /* From here every failure is a failed session with a receipt. The
         * answer is "preparing"; the rest continues in prepared(). */
        s->job = j;
        struct glove_error e = { 0 };
        if ((r = pool_submit(rt, j, &e)) < 0) {
                s->job = NULL;
                job_free(j);
                fail_start(s, &e);
                *err = e;
                return r;
        }
        *result = state_result(rt, id);
        return *result ? 0 : -ENOMEM;
}

static struct rt_session *live_session(struct glove_control_runtime *rt, const char *id, struct glove_error *err) {
        const struct glove_control_session *st = stored(rt, id, err);
        if (!st)
                return NULL;
        struct rt_session *s = find(rt, id);
        if (!s || !s->live || s->kfd < 0 ||
            (st->state != GLOVE_CONTROL_SESSION_RUNNING && st->state != GLOVE_CONTROL_SESSION_STOPPING)) {
                glove_error_set(err, EINVAL, glove_control_session_state_terminal(st->state) ? "session.terminal"
                                                                                              : "session.not_running",
                                "session %s is %s", id, glove_control_session_state_name(st->state));
                return NULL;
        }
        return s;
}

int glove_control_runtime_attach(struct glove_control_runtime *rt, struct glove_control_conn *conn, const char *id,
                                 json_t **result, struct glove_error *err) {
        *result = NULL;
        const struct glove_control_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        struct rt_session *s = find(rt, id);
        const uint8_t *tr = NULL;
        size_t tlen = 0;
        _cleanup_free_ uint8_t *buf = NULL;
        /* While the launch is prepared the attachment waits for the
         * terminal (prepared() joins it, or the failure ends it). */
        bool attach = s && s->live;
        if (attach) {
                for (struct attachment *a = s->att; a; a = a->next)
                        if (a->conn == conn) {
                                attach = false; /* already attached: the transcript again, no second stream */
                                break;
                        }
        }
        if (attach && (conn_attachments(rt, conn) >= GLOVE_CONTROL_RUNTIME_ATTACH_PER_CONN ||
                       s->n_att >= GLOVE_TERMINAL_CLIENTS_MAX))
                return glove_error_set(err, ENOSPC, "attach.too_many", "too many attachments");
        if (s && s->mir) {
                buf = malloc(GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
                if (!buf)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                tlen = mirror_copy(s->mir, buf, GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
                tr = buf;
        } else if (s) {
                tr = s->transcript;
                tlen = s->transcript_len;
        }
        bool attached = false;
        if (attach) {
                struct attachment *a = calloc(1, sizeof(*a));
                if (!a)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                a->s = s;
                a->conn = conn;
                a->next = s->att;
                s->att = a;
                s->n_att++;
                glove_control_conn_attachments(conn, +1);
                attached = true;
        }
        _cleanup_free_ char *text = glove_base64_encode(tr ? tr : (const uint8_t *)"", tlen);
        if (!text)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        *result = json_pack("{s:s,s:s,s:s,s:I,s:b}", "session_id", id, "state",
                            glove_control_session_state_name(st->state), "transcript_b64", text, "transcript_bytes",
                            (json_int_t)tlen, "attached", attached);
        if (*result && s && !s->live && s->termination) {
                json_object_set(*result, "termination", s->termination);
                json_object_set_new(*result, "receipt_sequence", json_integer((json_int_t)s->receipt_seq));
        } else if (*result && !s && glove_control_session_state_terminal(st->state)) {
                /* Ended under an earlier gloved, or no longer kept in
                 * memory: the receipt journal still says how. */
                uint64_t seq = 0;
                _cleanup_json_ json_t *rc = NULL;
                if (glove_control_receipts_find(rt->o.receipts, "session.terminal", id, &seq, &rc) == 1 && rc) {
                        json_object_set(*result, "termination", json_object_get(rc, "termination"));
                        json_object_set_new(*result, "receipt_sequence", json_integer((json_int_t)seq));
                }
        }
        return *result ? 0 : -ENOMEM;
}

int glove_control_runtime_detach(struct glove_control_runtime *rt, struct glove_control_conn *conn, const char *id,
                                 json_t **result, struct glove_error *err) {
        if (!stored(rt, id, err))
                return -ENOENT;
        struct rt_session *s = find(rt, id);
        bool detached = false;
        for (struct attachment *a = s ? s->att : NULL; a; a = a->next)
                if (a->conn == conn) {
                        attachment_drop(a, "detached");
                        detached = true;
                        break;
                }
        *result = json_pack("{s:b}", "detached", detached);
        return *result ? 0 : -ENOMEM;
}

/* A session gloved holds that is preparing or starting (its agent not yet
 * released), else NULL. */
static struct rt_session *early_session(struct glove_control_runtime *rt, const char *id) {
        const struct glove_control_session *st = glove_control_store_find(rt->o.store, id);
        struct rt_session *s = st ? find(rt, id) : NULL;
        if (!s || !s->live ||
            (st->state != GLOVE_CONTROL_SESSION_PREPARING && st->state != GLOVE_CONTROL_SESSION_STARTING))
                return NULL;
        return s;
}

int glove_control_runtime_write_stdin(struct glove_control_runtime *rt, const char *id, const void *data, size_t len,
                                      json_t **result, struct glove_error *err) {
        if (early_session(rt, id))
                return glove_error_set(err, EAGAIN, "stdin.full",
                                       "session %s is not running yet: its input opens when it runs; retry later", id);
        struct rt_session *s = live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        if (len > GLOVE_CONTROL_RUNTIME_STDIN_MAX)
                return glove_error_set(err, EMSGSIZE, "stdin.too_large", "at most %d bytes per write_stdin",
                                       GLOVE_CONTROL_RUNTIME_STDIN_MAX);
        if (s->input_closed)
                return glove_error_set(err, EPIPE, "session.not_running", "the agent's input is closed");
        size_t n = len < s->credit ? len : (size_t)s->credit;
        if (n == 0 && len)
                return glove_error_set(err, EAGAIN, "stdin.full", "the input queue is full; retry later");
        if (n && link_send(s, GLOVE_KEEPER_INPUT, data, n) < 0)
                return glove_error_set(err, EAGAIN, "stdin.full", "the keeper's channel is full; retry later");
        s->credit -= n;
        *result = json_pack("{s:I}", "accepted", (json_int_t)n);
        return *result ? 0 : -ENOMEM;
}

int glove_control_runtime_resize(struct glove_control_runtime *rt, const char *id, unsigned rows, unsigned cols,
                                 json_t **result, struct glove_error *err) {
        struct rt_session *s = early_session(rt, id);
        if (s && s->kfd < 0) {
                /* Preparing: the terminal is made with this size. */
                s->rows = (unsigned short)rows;
                s->cols = (unsigned short)cols;
                *result = json_object();
                return *result ? 0 : -ENOMEM;
        }
        if (!s)
                s = live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        int r = link_send_json(s, GLOVE_KEEPER_RESIZE, json_pack("{s:i,s:i}", "rows", (int)rows, "cols", (int)cols));
        if (r < 0)
                return glove_error_set(err, -r, "resize.failed", "the window size could not be sent to the keeper");
        *result = json_object();
        return *result ? 0 : -ENOMEM;
}

int glove_control_runtime_signal(struct glove_control_runtime *rt, const char *id, const char *name, json_t **result,
                                 struct glove_error *err) {
        int sig = glove_control_signal_parse(name);
        if (sig < 0)
                return glove_error_set(err, EINVAL, "signal.unknown", "unknown signal name");
        struct rt_session *s = live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        if (sig == SIGKILL) {
                /* PID 1 forwards catchable signals to the agent; SIGKILL
                 * cannot be forwarded (it would kill PID 1 alone and leave
                 * the session "lost"): it kills the whole sandbox. */
                s->killed = true;
                (void)link_send(s, GLOVE_KEEPER_KILL, NULL, 0);
        } else {
                (void)link_send_json(s, GLOVE_KEEPER_SIGNAL, json_pack("{s:i}", "signal", sig));
        }
        *result = json_object();
        return *result ? 0 : -ENOMEM;
}

int glove_control_runtime_stop(struct glove_control_runtime *rt, const char *id, uint64_t grace_ms, json_t **result,
                               struct glove_error *err) {
        const struct glove_control_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (glove_control_session_state_terminal(st->state) || st->state == GLOVE_CONTROL_SESSION_STOPPING) {
                *result = state_result(rt, id); /* idempotent */
                return *result ? 0 : -ENOMEM;
        }
        /* Before the agent was released: it never starts. The session ends
         * failed (start_failed, start.stopped) once the sandbox is gone. */
        struct rt_session *pre = find(rt, id);
        if (pre && pre->live &&
            (st->state == GLOVE_CONTROL_SESSION_PREPARING || st->state == GLOVE_CONTROL_SESSION_STARTING)) {
                snprintf(pre->fail_code, sizeof(pre->fail_code), "start.stopped");
                if (pre->ready) /* held in its keeper: never released */
                        (void)link_send(pre, GLOVE_KEEPER_ABORT, NULL, 0);
                *result = state_result(rt, id);
                return *result ? 0 : -ENOMEM;
        }
        struct rt_session *s = live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        int r = transition(rt, id, GLOVE_CONTROL_SESSION_STOPPING, "stop_session", err);
        if (r < 0)
                return r;
        s->stopping = true;
        (void)link_send_json(s, GLOVE_KEEPER_STOP, json_pack("{s:I}", "grace_ms", (json_int_t)grace_ms));
        *result = state_result(rt, id);
        return *result ? 0 : -ENOMEM;
}

int glove_control_runtime_cleanup(struct glove_control_runtime *rt, const char *id, json_t **result,
                                  struct glove_error *err) {
        const struct glove_control_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (!glove_control_session_state_terminal(st->state))
                return glove_error_set(err, EBUSY, "session.not_terminal", "session %s is %s", id,
                                       glove_control_session_state_name(st->state));
        json_t *removed = NULL, *kept = NULL;
        int r = glove_supervisor_cleanup(rt->o.config, id, st->plan, st->plan_len, &removed, &kept, err);
        if (r < 0)
                return r;
        *result = json_pack("{s:o,s:o}", "removed", removed ? removed : json_array(), "kept", kept ? kept : json_array());
        return *result ? 0 : -ENOMEM;
}

json_t *glove_control_runtime_list(const struct glove_control_store *store) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < glove_control_store_sessions(store); i++) {
                const struct glove_control_session *s = glove_control_store_at(store, i);
                int64_t updated = s->n_history ? s->history[s->n_history - 1].at_ms : s->created_at_ms;
                json_array_append_new(list, json_pack("{s:s,s:s,s:I,s:I}", "session_id", s->session_id, "state",
                                                      glove_control_session_state_name(s->state), "created_at_ms",
                                                      (json_int_t)s->created_at_ms, "updated_at_ms",
                                                      (json_int_t)updated));
        }
        return list ? json_pack("{s:o}", "sessions", list) : NULL;
}

/* ---- shutdown ---- */

void glove_control_runtime_shutdown(struct glove_control_runtime *rt) {
        if (!rt)
                return;
        pool_down(rt);
        rt->shutting_down = true;
        for (struct rt_session *s = rt->sessions; s; s = s->next) {
                if (!s->live)
                        continue;
                if (s->released || s->adopted) {
                        /* The agent runs on in its keeper; the next gloved
                         * adopts it (docs/recovery.md). Its materializations
                         * stay mounted. */
                        glove_supervisor_launch_disown(s->launch);
                        link_close(s);
                        s->live = false;
                        rt->live--;
                        continue;
                }
                /* Not released: the start cannot complete without this
                 * gloved's authorization. The keeper is told to end it, and
                 * the session fails now with its receipt. */
                (void)link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
                link_close(s);
                s->ended = true;
                struct glove_control_receipt_facts f = {
                        .started_at_ms = -1,
                        .exit_code = -1,
                        .termination = GLOVE_CONTROL_TERM_START_FAILED,
                        .code = "service.stopped",
                };
                finish(s, &f);
        }
        rt->loop = NULL;
}

void glove_control_runtime_free(struct glove_control_runtime *rt) {
        if (!rt)
                return;
        glove_control_runtime_shutdown(rt);
        while (rt->sessions) {
                struct rt_session *s = rt->sessions;
                rt->sessions = s->next;
                while (s->att)
                        attachment_drop(s->att, NULL);
                session_entry_free(s);
        }
        free(rt);
}

/* ---- reconciliation at start (docs/recovery.md) ---- */

static void reconcile_log(const char *id, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void reconcile_log(const char *id, const char *code, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "gloved: reconcile: %s: %s: %s\n", id, code, msg);
}

/* Where a recorded mount of a retained image still is what was recorded:
 * the mount at ROOT/mounts/SESSION/ALIAS has the recorded mount id, or
 * nothing is mounted there (the directory's mount is the root's). False
 * when something else is mounted there: it is left alone. */
static bool mounts_match(const struct glove_supervisor_runtime_config *cfg, const char *id, const json_t *mats) {
        struct statx root;
        if (statx(cfg->materialization_root_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &root) < 0)
                return false;
        size_t i;
        const json_t *m;
        json_array_foreach(mats, i, m) {
                const char *alias = json_string_value(json_object_get(m, "alias"));
                if (!alias)
                        continue;
                char rel[PATH_MAX];
                snprintf(rel, sizeof(rel), "mounts/%s/%s", id, alias);
                struct statx x;
                if (statx(cfg->materialization_root_fd, rel, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &x) < 0)
                        continue; /* nothing there */
                uint64_t want = jint(json_object_get(m, "mount"), "mnt_id");
                if (x.stx_mnt_id != root.stx_mnt_id && x.stx_mnt_id != want)
                        return false;
        }
        return true;
}

/* Ends a stored session the reconciler does not adopt: its receipt (unless
 * one is there already), the terminal transition, its host mounts released
 * when they are the ones recorded, its keeper files removed. */
static int reconcile_end(struct glove_control_runtime *rt, const struct glove_control_session *st,
                         const json_t *identity, struct glove_control_receipt_facts *f, const char *reason,
                         struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = rt->o.config;
        struct glove_error le = { 0 };
        const json_t *mats = json_object_get(identity, "materializations");
        if (!mats || mounts_match(cfg, st->session_id, mats)) {
                if (cfg && glove_supervisor_release_leftovers(cfg, st->session_id, st->plan, st->plan_len, &le) < 0)
                        fprintf(stderr, "gloved: session %s: leftover mounts: %s: %s\n", st->session_id, le.code,
                                le.message);
        } else {
                reconcile_log(st->session_id, "reconcile.materialization_mismatch",
                              "a mount under the materialization root is not the one recorded: left alone");
        }
        bool appended;
        bool failed = true;
        if (f) {
                f->session_id = st->session_id;
                f->controller_plan_digest = st->controller_plan_digest;
                f->plan_content_digest = st->plan_content_digest;
                f->ended_at_ms = rt->o.now_ms();
                _cleanup_json_ json_t *receipt = glove_control_receipt_build(f);
                if (!receipt)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory building a receipt");
                int r = glove_control_receipts_append(rt->o.receipts, "session.terminal", st->session_id, receipt,
                                                      f->ended_at_ms, NULL, err);
                if (r < 0)
                        return r;
                failed = f->termination == GLOVE_CONTROL_TERM_START_FAILED || f->termination == GLOVE_CONTROL_TERM_LOST;
        } else {
                /* The receipt is there: its state decides. */
                uint64_t seq = 0;
                _cleanup_json_ json_t *rc = NULL;
                if (glove_control_receipts_find(rt->o.receipts, "session.terminal", st->session_id, &seq, &rc) == 1)
                        failed = !json_is_string(json_object_get(rc, "state")) ||
                                 strcmp(json_string_value(json_object_get(rc, "state")), "exited") != 0;
        }
        int r = 0;
        if (!failed && st->state == GLOVE_CONTROL_SESSION_RUNNING)
                r = glove_control_store_transition(rt->o.store, st->session_id, GLOVE_CONTROL_SESSION_STOPPING,
                                                   "session.ended", rt->o.now_ms(), &appended, err);
        if (r == 0)
                r = glove_control_store_transition(rt->o.store, st->session_id,
                                                   failed ? GLOVE_CONTROL_SESSION_FAILED : GLOVE_CONTROL_SESSION_EXITED,
                                                   reason, rt->o.now_ms(), &appended, err);
        char stem[40];
        keeper_stem(st->session_id, stem);
        if (cfg)
                keeper_files_remove(cfg, stem);
        return r;
}

/* When the agent was released: the at_ms of the transition to running. */
static int64_t released_at(const struct glove_control_session *s) {
        for (size_t i = 0; i < s->n_history; i++)
                if (s->history[i].to == GLOVE_CONTROL_SESSION_RUNNING)
                        return s->history[i].at_ms;
        return -1;
}

/* Connects to a keeper's socket; the peer must be of this uid. Returns the
 * descriptor (nonblocking), or -errno (-ENOENT, -ECONNREFUSED: no keeper
 * listens). *peer: the peer's pid. */
static int keeper_connect(const struct glove_supervisor_runtime_config *cfg, const char *stem, pid_t *peer) {
        _cleanup_close_ int dir = openat(cfg->materialization_root_fd, "keepers",
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        struct sockaddr_un sa;
        if (keeper_addr(dir, stem, &sa) < 0)
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        struct ucred uc;
        socklen_t len = sizeof(uc);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return -errno;
        if (uc.uid != geteuid())
                return -EPERM;
        *peer = uc.pid;
        return TAKE_FD(fd);
}

/* Tells the keeper of a session that cannot go on to end what it holds
 * (ABORT: it kills its own PID 1 through its pidfd, never a pid). */
/* Receives one keeper message within timeout_ms; its length, 0 at the
 * end of the channel or the deadline, -errno. */
static ssize_t link_recv_wait(int fd, uint8_t *buf, size_t cap, int timeout_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, timeout_ms);
        if (r <= 0)
                return r < 0 ? -errno : 0;
        ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0)
                return errno == EAGAIN ? 0 : -errno;
        return n > (ssize_t)cap ? -EMSGSIZE : n;
}

/* Tells the keeper of a session that cannot go on to end what it holds
 * (ABORT: it kills its own PID 1 through its pidfd, never a pid), waits
 * for its ENDED (at most GLOVE_CONTROL_RUNTIME_ABORT_WAIT_MS) and lets it
 * go (ACK), so that it leaves no file behind once they are removed. */
static void keeper_abort(const struct glove_supervisor_runtime_config *cfg, const char *stem) {
        pid_t peer = 0;
        _cleanup_close_ int fd = keeper_connect(cfg, stem, &peer);
        if (fd < 0)
                return;
        static const char hello[] = "H{\"version\":1}";
        uint8_t m = GLOVE_KEEPER_ABORT;
        if (send(fd, hello, sizeof(hello) - 1, MSG_NOSIGNAL) < 0 || send(fd, &m, 1, MSG_NOSIGNAL) < 0)
                return;
        int64_t deadline = glove_time_monotonic_us() / 1000 + GLOVE_CONTROL_RUNTIME_ABORT_WAIT_MS;
        for (;;) {
                int64_t left = deadline - (int64_t)(glove_time_monotonic_us() / 1000);
                if (left <= 0)
                        return;
                ssize_t n = link_recv_wait(fd, link_buf, sizeof(link_buf), (int)left);
                if (n <= 0 && n != -EMSGSIZE)
                        return;
                if (n > 0 && link_buf[0] == GLOVE_KEEPER_ENDED)
                        break;
                if (n > 0 && link_buf[0] == GLOVE_KEEPER_STATE) {
                        _cleanup_json_ json_t *o = link_json(link_buf + 1, (size_t)n - 1);
                        if (json_is_object(json_object_get(o, "outcome")))
                                break;
                }
        }
        m = GLOVE_KEEPER_ACK;
        (void)!send(fd, &m, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Whether the recorded identity's processes and cgroup are what the host
 * has now. *why names the first difference. */
static bool identity_live(const json_t *id, const char **why) {
        uint64_t t = 0;
        pid_t pid = (pid_t)jint(id, "pid");
        if (pid <= 0 || glove_keeper_proc_start_time(pid, &t) < 0) {
                *why = "PID 1 is gone";
                return false;
        }
        if (t != jint(id, "pid_start_time")) {
                *why = "PID 1's pid belongs to another process (start time differs)";
                return false;
        }
        const json_t *cg = json_object_get(id, "cgroup");
        const char *dir = json_string_value(json_object_get(cg, "dir"));
        struct stat st;
        if (!dir || stat(dir, &st) < 0 || (uint64_t)st.st_ino != jint(cg, "inode")) {
                *why = "the run cgroup is gone or was replaced (inode differs)";
                return false;
        }
        return true;
}

static int adopt(struct glove_control_runtime *rt, const struct glove_control_session *st, json_t *identity, int fd,
                 struct glove_error *err) {
        struct rt_session *s = calloc(1, sizeof(*s));
        if (!s || !(s->mir = calloc(1, sizeof(*s->mir)))) {
                free(s);
                close(fd);
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
        s->rt = rt;
        s->audit.fd = -1;
        s->kfd = fd;
        s->kq_tail = &s->kq;
        s->adopted = true;
        s->live = true;
        s->stopping = st->state == GLOVE_CONTROL_SESSION_STOPPING;
        s->started_at_ms = released_at(st);
        snprintf(s->id, sizeof(s->id), "%s", st->session_id);
        keeper_stem(st->session_id, s->stem);
        const json_t *k = json_object_get(identity, "keeper");
        s->keeper_pid = (pid_t)jint(k, "pid");
        s->keeper_start = jint(k, "start_time");
        /* The launch binding, as recorded before release (its digest is in
         * the identity). */
        char rel[96];
        snprintf(rel, sizeof(rel), "keepers/%s.binding", s->stem);
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        const char *want = json_string_value(json_object_get(identity, "binding_digest"));
        if (glove_file_read_bounded(rt->o.config->materialization_root_fd, rel, O_NOFOLLOW | O_NONBLOCK, 256 * 1024,
                                    &text, &n, NULL) == 0)
                s->binding = link_json((const uint8_t *)text, n);
        if (s->binding && (glove_control_json_digest(s->binding, s->binding_digest, NULL) < 0 || !want ||
                           strcmp(s->binding_digest, want) != 0)) {
                json_decref(s->binding);
                s->binding = NULL;
        }
        if (!s->binding) {
                reconcile_log(s->id, "reconcile.binding_unavailable",
                              "the launch binding file is missing or does not match its recorded digest");
                s->binding = json_pack("{s:s}", "omitted", "binding.unavailable");
                s->binding_digest[0] = '\0';
        }
        s->reserved = glove_control_receipts_reserve(rt->o.receipts, GLOVE_CONTROL_RUNTIME_RECEIPT_RESERVE, NULL) == 0;
        s->next = rt->sessions;
        rt->sessions = s;
        rt->live++;
        /* HELLO and its STATE now, so that the one line said is the right
         * one; the transcript and the output that follow wait in the
         * channel for the loop. */
        if (link_send_json(s, GLOVE_KEEPER_HELLO, json_pack("{s:i}", "version", GLOVE_KEEPER_VERSION)) < 0) {
                keeper_lost(s);
                return 0;
        }
        int64_t deadline = glove_time_monotonic_us() / 1000 + GLOVE_CONTROL_RUNTIME_ABORT_WAIT_MS;
        for (;;) {
                int64_t left = deadline - (int64_t)(glove_time_monotonic_us() / 1000);
                ssize_t got = left > 0 ? link_recv_wait(fd, link_buf, sizeof(link_buf), (int)left) : 0;
                if (got == -EMSGSIZE)
                        continue;
                if (got <= 0) {
                        /* Silent or gone: as a keeper that died. */
                        keeper_lost(s);
                        return 0;
                }
                bool state = link_buf[0] == GLOVE_KEEPER_STATE;
                if (!link_message(s, link_buf, (size_t)got) || state)
                        break;
        }
        if (!s->ended && s->stopping)
                /* gloved ended after recording stopping, maybe before the
                 * keeper heard of it: again (the first grace is not
                 * recorded; the default one). */
                (void)link_send_json(s, GLOVE_KEEPER_STOP,
                                     json_pack("{s:I}", "grace_ms", (json_int_t)GLOVE_CONTROL_RUNTIME_GRACE_DEFAULT_MS));
        return 0;
}

/* One session an earlier gloved left non-terminal. Returns 0 or -errno
 * (receipts.*, journal.*). */
static int reconcile_one(struct glove_control_runtime *rt, const struct glove_control_session *st, const char *boot,
                         struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = rt->o.config;
        const char *id = st->session_id;
        char stem[40];
        keeper_stem(id, stem);
        _cleanup_json_ json_t *identity = st->runtime ? link_json((const uint8_t *)st->runtime, st->runtime_len) : NULL;
        uint64_t seq = 0;
        if (glove_control_receipts_find(rt->o.receipts, "session.terminal", id, &seq, NULL) == 1) {
                /* gloved ended between the receipt and the terminal
                 * transition: never a second receipt. */
                reconcile_log(id, "reconcile.receipt_present", "receipt %llu is there; the terminal transition is recorded",
                              (unsigned long long)seq);
                if (cfg)
                        keeper_abort(cfg, stem);
                return reconcile_end(rt, st, identity, NULL, "reconcile.receipt_present", err);
        }
        struct glove_control_receipt_facts f = { .started_at_ms = released_at(st), .exit_code = -1,
                                                 .termination = GLOVE_CONTROL_TERM_LOST };
        if (st->state == GLOVE_CONTROL_SESSION_PREPARING || st->state == GLOVE_CONTROL_SESSION_STARTING) {
                if (cfg)
                        keeper_abort(cfg, stem);
                reconcile_log(id, "reconcile.start_interrupted", "gloved ended while the session was %s; it never started",
                              glove_control_session_state_name(st->state));
                f.termination = GLOVE_CONTROL_TERM_START_FAILED;
                f.started_at_ms = -1;
                f.code = "service.restarted";
                return reconcile_end(rt, st, identity, &f, "service.restarted", err);
        }
        if (!identity || !cfg) {
                reconcile_log(id, "reconcile.no_identity", "no runtime identity was recorded: its sandbox is not looked for");
                f.code = "service.restarted";
                return reconcile_end(rt, st, identity, &f, "service.restarted", err);
        }
        const char *rec_boot = json_string_value(json_object_get(identity, "boot_id"));
        if (!rec_boot || strcmp(rec_boot, boot) != 0) {
                reconcile_log(id, "reconcile.host_restarted", "recorded boot %s, this boot %s: nothing of it runs",
                              rec_boot ? rec_boot : "?", boot);
                json_t *frozen = NULL;
                struct glove_error fe = { 0 };
                if (glove_supervisor_freeze_retained(cfg, id, json_object_get(identity, "materializations"), &frozen,
                                                     &fe) < 0)
                        reconcile_log(id, fe.code ? fe.code : "materialize.freeze", "%s", fe.message);
                for (size_t i = 0; i < json_array_size(frozen); i++)
                        reconcile_log(id, "reconcile.frozen", "retained image %s mounted read-only for inspection",
                                      json_string_value(json_array_get(frozen, i)));
                json_decref(frozen);
                f.code = "host_restarted";
                /* The images stay mounted read-only: no release. */
                bool appended;
                f.session_id = id;
                f.controller_plan_digest = st->controller_plan_digest;
                f.plan_content_digest = st->plan_content_digest;
                f.ended_at_ms = rt->o.now_ms();
                _cleanup_json_ json_t *receipt = glove_control_receipt_build(&f);
                int r = receipt ? glove_control_receipts_append(rt->o.receipts, "session.terminal", id, receipt,
                                                                f.ended_at_ms, NULL, err)
                                : glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                if (r == 0)
                        r = glove_control_store_transition(rt->o.store, id, GLOVE_CONTROL_SESSION_FAILED, "host_restarted",
                                                           f.ended_at_ms, &appended, err);
                keeper_files_remove(cfg, stem);
                return r;
        }
        const json_t *k = json_object_get(identity, "keeper");
        pid_t kpid = (pid_t)jint(k, "pid");
        uint64_t kstart = 0;
        bool keeper_alive = kpid > 0 && glove_keeper_proc_start_time(kpid, &kstart) == 0;
        bool keeper_same = keeper_alive && kstart == jint(k, "start_time");
        pid_t peer = 0;
        int fd = keeper_same ? keeper_connect(cfg, stem, &peer) : -ENOENT;
        if (fd >= 0 && peer == kpid) {
                const char *why = NULL;
                if (!identity_live(identity, &why)) {
                        close(fd);
                        reconcile_log(id, "reconcile.identity_mismatch", "%s; nothing was signalled", why);
                        f.code = "identity.mismatch";
                        return reconcile_end(rt, st, identity, &f, "identity.mismatch", err);
                }
                int r = adopt(rt, st, identity, fd, err);
                struct rt_session *s = r == 0 ? find(rt, id) : NULL;
                if (!s)
                        return r;
                const char *code = json_string_value(json_object_get(s->termination, "code"));
                if (s->ended)
                        reconcile_log(id, code && strcmp(code, "keeper.lost") == 0 ? "reconcile.keeper_lost"
                                                                                   : "reconcile.ended_while_down",
                                      "the keeper %d held the end of the session (receipt %llu)", (int)kpid,
                                      (unsigned long long)s->receipt_seq);
                else if (s->released_on_adopt)
                        reconcile_log(id, "reconcile.released", "recorded running but never released: released now");
                else
                        reconcile_log(id, "reconcile.adopted", "keeper %d, PID 1 %d", (int)kpid, (int)jint(identity, "pid"));
                return 0;
        }
        if (fd >= 0)
                close(fd);
        if (keeper_alive && !keeper_same) {
                reconcile_log(id, "reconcile.identity_mismatch",
                              "the keeper's pid %d belongs to another process (start time differs); nothing was signalled",
                              (int)kpid);
                f.code = "identity.mismatch";
                return reconcile_end(rt, st, identity, &f, "identity.mismatch", err);
        }
        if (keeper_same) {
                reconcile_log(id, "reconcile.identity_mismatch",
                              "the keeper %d lives but its socket does not answer as it; nothing was signalled", (int)kpid);
                f.code = "identity.mismatch";
                return reconcile_end(rt, st, identity, &f, "identity.mismatch", err);
        }
        /* The keeper is gone; its sandbox died with it. */
        _cleanup_json_ json_t *status = status_read(cfg, stem);
        const json_t *out = json_object_get(status, "outcome");
        struct rt_session tmp = { .rt = rt, .started_at_ms = released_at(st),
                                  .stopping = st->state == GLOVE_CONTROL_SESSION_STOPPING };
        if (json_is_object(out)) {
                outcome_facts(&tmp, out, &f);
                reconcile_log(id, "reconcile.ended_while_down", "the session ended while gloved was down (%s)",
                              glove_control_termination_name(f.termination));
                return reconcile_end(rt, st, identity, &f, "reconcile.ended_while_down", err);
        }
        const json_t *u = json_object_get(status, "usage");
        f.code = "keeper.lost";
        f.cpu_time_ms = jint(u, "cpu_time_ms");
        f.output_bytes = jint(u, "output_bytes");
        f.peak_memory_bytes = jint(u, "peak_memory_bytes");
        f.wall_time_ms = jint(u, "wall_time_ms");
        reconcile_log(id, "reconcile.keeper_lost", "keeper %d is gone without an outcome", (int)kpid);
        return reconcile_end(rt, st, identity, &f, "keeper.lost", err);
}

int glove_control_runtime_reconcile(struct glove_control_runtime *rt, size_t *acted, struct glove_error *err) {
        *acted = 0;
        char boot[37] = "";
        int r = glove_keeper_boot_id(boot);
        if (r < 0)
                return glove_error_set(err, -r, "reconcile.boot_id", "/proc/sys/kernel/random/boot_id: %s", strerror(-r));
        size_t n = glove_control_store_sessions(rt->o.store);
        for (size_t i = 0; i < n; i++) {
                const struct glove_control_session *st = glove_control_store_at(rt->o.store, i);
                if (!st || st->state == GLOVE_CONTROL_SESSION_CREATED || glove_control_session_state_terminal(st->state))
                        continue;
                r = reconcile_one(rt, st, boot, err);
                if (r < 0) {
                        glove_error_prefix(err, "session %s", st->session_id);
                        return r;
                }
                (*acted)++;
        }
        /* Run cgroups whose keeper is gone (empty: the sandbox died with it). */
        glove_cgroup_sweep();
        return 0;
}

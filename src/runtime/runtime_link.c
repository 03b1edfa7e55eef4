/* SPDX-License-Identifier: Apache-2.0 */
/* gloved's side of the keeper channel (glove/keeper/keeper.h,
 * docs/recovery.md): the copy of the transcript, the queue towards the
 * keeper, each message from it and what it means for the session: READY
 * (the durable running gate), ENDED and the outcome's receipt facts, the
 * channel's loss (linked again, or keeper.lost). The keeper's launch and
 * files are in runtime_keeper.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/keeper/keeper.h"
#include "glove/supervisor/prepare.h"
#include "runtime_internal.h"

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

size_t rt_mirror_copy(const struct mirror *m, uint8_t *out, size_t cap) {
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

static void keeper_ended(struct rt_session *s, const json_t *outcome);
static void keeper_ready(struct rt_session *s, const json_t *identity);

void rt_link_close(struct rt_session *s) {
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
int rt_link_flush(struct rt_session *s) {
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
 * GLOVE_RUNTIME_KEEPER_QUEUE_MAX, -ENOMEM. */
int rt_link_send(struct rt_session *s, char type, const void *payload, size_t len) {
        if (s->kfd < 0)
                return -ENOTCONN;
        if (len + 1 > GLOVE_KEEPER_MSG_MAX)
                return -EMSGSIZE;
        /* The bound holds back what a client may repeat (input, resize,
         * signals); the one-shot commands that end or release a session
         * always go. */
        bool bounded = type == GLOVE_KEEPER_INPUT || type == GLOVE_KEEPER_RESIZE || type == GLOVE_KEEPER_SIGNAL;
        if (bounded && s->kq_bytes + len + 1 > GLOVE_RUNTIME_KEEPER_QUEUE_MAX)
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
        return rt_link_flush(s) < 0 ? -EPIPE : 0;
}

int rt_link_send_json(struct rt_session *s, char type, json_t *o) {
        _cleanup_json_ json_t *v = o;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        if (!v || glove_json_encode_canonical(v, &text, &n, NULL) < 0)
                return -ENOMEM;
        return rt_link_send(s, type, text, n);
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
                        glove_runtime_output_skip_add(&a->skip, (size_t)(off - m->end));
        }
        mirror_put(m, p, n);
        m->end = off + n;
        for (struct attachment *a = s->att, *next; a; a = next) {
                next = a->next;
                rt_client_output(a, 1, p, n);
        }
}

static uint64_t le64(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

json_t *rt_json_object(const uint8_t *p, size_t n) {
        json_t *v = NULL;
        if (glove_json_decode_strict(p, n, GLOVE_KEEPER_MSG_MAX, 0, &v, NULL) < 0 || !json_is_object(v)) {
                json_decref(v);
                return NULL;
        }
        return v;
}

uint64_t rt_jint(const json_t *o, const char *k) {
        json_int_t v = json_integer_value(json_object_get(o, k));
        return v > 0 ? (uint64_t)v : 0;
}

/* One message from the keeper. Returns false when s's link ended in it. */
bool rt_link_message(struct rt_session *s, const uint8_t *msg, size_t n) {
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
                _cleanup_json_ json_t *o = rt_json_object(p, n);
                if (o && json_is_true(json_object_get(o, "closed")))
                        s->input_closed = true;
                else if (o)
                        s->credit += rt_jint(o, "bytes");
                if (s->credit > GLOVE_KEEPER_INPUT_MAX)
                        s->credit = GLOVE_KEEPER_INPUT_MAX;
                return true;
        }
        case GLOVE_KEEPER_WARNING: {
                _cleanup_json_ json_t *o = rt_json_object(p, n);
                RT_LOG(s, GLOVE_LOG_WARNING, "keeper.warning", "session %s: warning: %s: %s", s->id,
                       o ? json_string_value(json_object_get(o, "code")) ?: "?" : "?",
                       o ? json_string_value(json_object_get(o, "message")) ?: "" : "");
                return true;
        }
        case GLOVE_KEEPER_STATE: {
                _cleanup_json_ json_t *o = rt_json_object(p, n);
                if (!o)
                        return true;
                s->stated = true;
                json_t *k = json_object_get(o, "keeper");
                s->keeper_pid = (pid_t)rt_jint(k, "pid");
                s->keeper_start = rt_jint(k, "start_time");
                rt_svc_keeper_known(s);
                s->credit = rt_jint(o, "input_credit");
                s->input_closed = json_is_true(json_object_get(o, "input_closed"));
                const json_t *out = json_object_get(o, "outcome");
                if (json_is_object(out)) {
                        keeper_ended(s, out);
                        return false;
                }
                const char *phase = json_string_value(json_object_get(o, "phase"));
                if (s->adopted && phase && strcmp(phase, "ready") == 0 && !s->released && s->stopping) {
                        /* Recorded stopping before it was ever released:
                         * it never starts. */
                        s->ready = true;
                        (void)rt_link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
                } else if (s->adopted && phase && strcmp(phase, "ready") == 0 && !s->released) {
                        /* Recorded running, never released (gloved ended
                         * between the durable gate and the release): the
                         * gate passed, the agent starts now. */
                        s->ready = true;
                        s->released_on_adopt = true;
                        if (rt_link_send(s, GLOVE_KEEPER_RELEASE, NULL, 0) == 0)
                                s->released = true;
                        if (s->started_at_ms < 0)
                                s->started_at_ms = s->rt->o.now_ms();
                } else if (phase && strcmp(phase, "running") == 0) {
                        s->ready = s->released = true;
                }
                return true;
        }
        case GLOVE_KEEPER_READY: {
                _cleanup_json_ json_t *o = rt_json_object(p, n);
                keeper_ready(s, o);
                return s->kfd >= 0;
        }
        case GLOVE_KEEPER_ENDED: {
                _cleanup_json_ json_t *o = rt_json_object(p, n);
                keeper_ended(s, o);
                return false;
        }
        default:
                RT_LOG(s, GLOVE_LOG_WARNING, "keeper.unknown_message",
                       "session %s: the keeper sent an unknown message (type %d)", s->id, (int)(unsigned char)type);
                return true;
        }
}

uint8_t rt_link_buf[GLOVE_KEEPER_MSG_MAX];

static int on_link(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        struct rt_session *s = userdata;
        if ((revents & EPOLLOUT) && rt_link_flush(s) < 0) {
                rt_keeper_lost(s);
                return 0;
        }
        /* A bounded number per wake-up: other sessions and clients run too. */
        for (int i = 0; i < 64; i++) {
                ssize_t n = recv(fd, rt_link_buf, sizeof(rt_link_buf), MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                if (n < 0 && errno != ECONNRESET && errno != EPIPE && errno != ENOTCONN) {
                        /* ENOBUFS, ENOMEM: not the keeper's end; the next
                         * wake-up tries again. */
                        RT_LOG(s, GLOVE_LOG_WARNING, "keeper.read", "session %s: reading its keeper: %s", s->id,
                               strerror(errno));
                        return 0;
                }
                if (n <= 0) {
                        rt_keeper_lost(s);
                        return 0;
                }
                if ((size_t)n > sizeof(rt_link_buf)) {
                        RT_LOG(s, GLOVE_LOG_WARNING, "keeper.message_too_large",
                               "session %s: a keeper message of %zd bytes was refused", s->id, n);
                        continue;
                }
                if (!rt_link_message(s, rt_link_buf, (size_t)n))
                        return 0;
        }
        return 0;
}

/* Puts s's keeper channel fd on the loop and (unless the reconciler did
 * already) says HELLO. */
int rt_link_attach(struct rt_session *s, struct glove_error *err) {
        int r = sd_event_add_io(s->rt->loop, &s->ksrc, s->kfd, EPOLLIN | (s->kq ? EPOLLOUT : 0), on_link, s);
        if (r < 0)
                return glove_error_set(err, -r, "keeper.event_loop", "sd_event_add_io: %s", strerror(-r));
        if (s->adopted)
                return 0;
        r = rt_link_send_json(s, GLOVE_KEEPER_HELLO, json_pack("{s:i}", "version", GLOVE_KEEPER_VERSION));
        if (r < 0)
                return glove_error_set(err, -r, "keeper.channel", "the keeper's channel: %s", strerror(-r));
        return 0;
}

/* ---- the keeper's life seen from gloved ---- */

static bool jbool(const json_t *o, const char *k) {
        return json_is_true(json_object_get(o, k));
}

/* A stable code of the keeper's: 1..128 bytes of [a-z0-9._-]. */
static bool reason_ok(const char *c) {
        size_t n = strlen(c);
        if (n == 0 || n > GLOVE_STORE_REASON_MAX)
                return false;
        return strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* The receipt facts of a keeper's OUTCOME (keeper.h). */
void rt_outcome_facts(struct rt_session *s, const json_t *o, struct glove_runtime_receipt_facts *f) {
        *f = (struct glove_runtime_receipt_facts){
                .started_at_ms = s->started_at_ms,
                .exit_code = -1,
                .cpu_time_ms = rt_jint(o, "cpu_time_ms"),
                .output_bytes = rt_jint(o, "output_bytes"),
                .peak_memory_bytes = rt_jint(o, "peak_memory_bytes"),
                .wall_time_ms = rt_jint(o, "wall_time_ms"),
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
                f->termination = GLOVE_RUNTIME_TERM_START_FAILED;
                f->code = s->fail_code[0]                                    ? s->fail_code
                          : jbool(o, "aborted")                              ? "start.aborted"
                          : error_code && reason_ok(error_code) ? error_code
                                                                             : "start.failed";
                f->started_at_ms = -1;
        } else if (jbool(o, "audit_full")) {
                f->termination = GLOVE_RUNTIME_TERM_LIMIT;
                f->limit = "disk_bytes";
                f->code = "egress.audit_full";
                f->signal = SIGKILL;
        } else if (lim) {
                f->termination = GLOVE_RUNTIME_TERM_LIMIT;
                f->limit = lim;
                f->signal = SIGKILL;
        } else if (jbool(o, "disk_full")) {
                f->termination = GLOVE_RUNTIME_TERM_LIMIT;
                f->limit = "disk_bytes";
        } else if (kind && strcmp(kind, "exec_failed") == 0) {
                f->termination = GLOVE_RUNTIME_TERM_START_FAILED;
                f->code = "launch.exec_failed";
        } else if (jbool(o, "killed") && !exited) {
                /* signal SIGKILL kills PID 1 and the whole sandbox: no
                 * report of the agent comes back, and none is missing. */
                f->termination = GLOVE_RUNTIME_TERM_SIGNAL;
                f->signal = SIGKILL;
        } else if (jbool(o, "stopped") || jbool(o, "stopping") || s->stopping) {
                /* Before "lost": a stop whose grace ran out kills PID 1,
                 * which then reports nothing; that is the stop, not a loss. */
                f->termination = GLOVE_RUNTIME_TERM_STOPPED;
                f->signal = signaled ? value : lost ? SIGKILL : 0;
                if (exited)
                        f->exit_code = value;
        } else if (lost) {
                f->termination = GLOVE_RUNTIME_TERM_LOST;
                f->code = "session.lost";
        } else if (signaled) {
                f->termination = GLOVE_RUNTIME_TERM_SIGNAL;
                f->signal = value;
        } else {
                f->termination = GLOVE_RUNTIME_TERM_EXIT;
                f->exit_code = value;
        }
        if (f->termination == GLOVE_RUNTIME_TERM_LIMIT && exited)
                f->exit_code = value;
        if (f->termination == GLOVE_RUNTIME_TERM_LIMIT && signaled)
                f->signal = value;
        /* disk usage: the limit when the private tmpfs filled, else not measured (0) */
        if (jbool(o, "disk_full") && s->binding) {
                json_t *l = json_object_get(s->binding, "limits");
                f->disk_bytes = (uint64_t)json_integer_value(json_object_get(l, "disk_bytes"));
        }
}

void rt_keep_transcript(struct rt_session *s) {
        if (!s->mir || s->transcript)
                return;
        uint8_t *buf = malloc(GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
        if (!buf)
                return;
        s->transcript_len = rt_mirror_copy(s->mir, buf, GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
        s->transcript = buf;
}

/* The session ended in its keeper (ENDED, or the status file's outcome):
 * the receipt, the terminal transition, then the keeper is let go and its
 * files removed. */
static void keeper_ended(struct rt_session *s, const json_t *outcome) {
        if (s->ended)
                return;
        s->ended = true;
        struct glove_runtime_receipt_facts f;
        json_decref(s->keeper_outcome);
        s->keeper_outcome = outcome ? json_deep_copy(outcome) : NULL;
        if (outcome) {
                rt_outcome_facts(s, outcome, &f);
        } else {
                f = (struct glove_runtime_receipt_facts){ .started_at_ms = s->started_at_ms, .exit_code = -1,
                                                          .termination = GLOVE_RUNTIME_TERM_LOST,
                                                          .code = "keeper.protocol" };
        }
        rt_keep_transcript(s);
        free(s->mir);
        s->mir = NULL;
        s->auth.live = false;
        rt_finish(s, &f);
        /* ACK, best effort: the keeper also ends when the channel closes
         * after its ENDED. */
        (void)rt_link_send(s, GLOVE_KEEPER_ACK, NULL, 0);
        rt_link_close(s);
        rt_keeper_files_remove(s->rt->o.config, s->stem, false);
}

/* The keeper's channel ended before its ENDED: the keeper died. Its status
 * file says how the session ended, or what usage it last recorded (the
 * session is then lost: keeper.lost). Its sandbox died with it
 * (PR_SET_PDEATHSIG); the empty run cgroup goes with the sweep. */
/* The channel of s ended but its keeper may live (another peer of the
 * service user connected to its socket and took its one connection): a
 * new channel through the socket, when the peer is the keeper. Returns
 * true when s is linked again. */
static bool keeper_relink(struct rt_session *s) {
        uint64_t start = 0;
        if (s->ended || s->keeper_pid <= 0 || s->reconnects >= GLOVE_RUNTIME_RECONNECTS_MAX ||
            glove_keeper_proc_start_time(s->keeper_pid, &start) < 0 || start != s->keeper_start)
                return false;
        s->reconnects++;
        pid_t peer = 0;
        int fd = rt_keeper_connect(s->rt->o.config, s->stem, &peer);
        if (fd < 0 || peer != s->keeper_pid) {
                if (fd >= 0)
                        close(fd);
                return false;
        }
        s->kfd = fd;
        s->stated = false;
        if ((s->rt->loop && !s->ksrc && sd_event_add_io(s->rt->loop, &s->ksrc, fd, EPOLLIN, on_link, s) < 0) ||
            rt_link_send_json(s, GLOVE_KEEPER_HELLO, json_pack("{s:i}", "version", GLOVE_KEEPER_VERSION)) < 0) {
                rt_link_close(s);
                return false;
        }
        RT_LOG(s, GLOVE_LOG_NOTICE, "keeper.relinked",
               "session %s: keeper.relinked: its channel ended, the keeper (pid %d) lives: linked again", s->id,
               (int)s->keeper_pid);
        return true;
}

void rt_keeper_lost(struct rt_session *s) {
        /* A keeper that lives is linked again (keeper_relink); only one
         * that is gone (or cannot be reached as itself) ends the session. */
        rt_link_close(s);
        if (s->ended)
                return;
        if (keeper_relink(s))
                return;
        _cleanup_json_ json_t *status = rt_status_read(s->rt->o.config, s->stem);
        const json_t *out = json_object_get(status, "outcome");
        if (json_is_object(out)) {
                keeper_ended(s, out);
                return;
        }
        s->ended = true;
        const json_t *u = json_object_get(status, "usage");
        bool ran = s->released || s->adopted; /* adopted: recorded running */
        struct glove_runtime_receipt_facts f = {
                .started_at_ms = ran ? s->started_at_ms : -1,
                .exit_code = -1,
                .termination = ran ? GLOVE_RUNTIME_TERM_LOST : GLOVE_RUNTIME_TERM_START_FAILED,
                .code = "keeper.lost",
                .cpu_time_ms = rt_jint(u, "cpu_time_ms"),
                .output_bytes = rt_jint(u, "output_bytes"),
                .peak_memory_bytes = rt_jint(u, "peak_memory_bytes"),
                .wall_time_ms = rt_jint(u, "wall_time_ms"),
        };
        /* The end of its log, printable bytes only. */
        char log[1024];
        size_t loglen = 0;
        char rel[96];
        snprintf(rel, sizeof(rel), "keepers/%s.log", s->stem);
        int lfd = openat(s->rt->o.config->materialization_root_fd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat lst;
        if (lfd >= 0 && fstat(lfd, &lst) == 0 && S_ISREG(lst.st_mode)) {
                off_t from = lst.st_size > (off_t)sizeof(log) - 1 ? lst.st_size - (off_t)sizeof(log) + 1 : 0;
                ssize_t got = pread(lfd, log, sizeof(log) - 1, from);
                loglen = got > 0 ? (size_t)got : 0;
                for (size_t i = 0; i < loglen; i++)
                        if ((unsigned char)log[i] < 0x20 || (unsigned char)log[i] > 0x7e)
                                log[i] = log[i] == '\n' ? '|' : '?';
        }
        if (lfd >= 0)
                close(lfd);
        RT_LOG(s, GLOVE_LOG_WARNING, "keeper.lost", "session %s: keeper.lost: its keeper (pid %d) ended without an outcome%s%.*s",
               s->id, (int)s->keeper_pid, loglen ? "; the end of its log: " : "", (int)loglen, log);
        rt_keep_transcript(s);
        free(s->mir);
        s->mir = NULL;
        s->auth.live = false;
        rt_finish(s, &f);
        /* Its log's end was quoted above; nothing stays. */
        rt_keeper_files_remove(s->rt->o.config, s->stem, false);
        glove_cgroup_sweep();
}

/* READY: PID 1 is ready and held in its keeper. The same gate as before
 * the keeper: the start authorization, the cgroup identity in the binding,
 * the binding's size; then starting -> running with the runtime identity
 * (synced), and only then RELEASE. */
static void keeper_ready(struct rt_session *s, const json_t *id) {
        struct glove_runtime *rt = s->rt;
        struct glove_error e = { 0 };
        const struct glove_store_session *st = glove_store_find(rt->o.store, s->id);
        /* A keeper repeats READY after each HELLO until released: the gate
         * runs once, for the gloved that started the session. */
        if (s->released || s->adopted)
                return;
        s->ready = true;
        if (s->fail_code[0]) { /* stop_session came first: never released */
                (void)rt_link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
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
        char boot[37] = "";
        const char *id_boot = json_string_value(json_object_get(id, "boot_id"));
        if (!id || glove_keeper_boot_id(boot) < 0 || !id_boot || strcmp(id_boot, boot) != 0 ||
            !rt_jint(json_object_get(id, "keeper"), "start_time")) {
                glove_error_set(&e, EIO, "start.identity", "the keeper's identity (boot id, start time) is incomplete");
                goto fail;
        }
        pid_t pid = (pid_t)rt_jint(id, "pid");
        uint64_t start = 0;
        if (!id || pid <= 0 || glove_keeper_proc_start_time(pid, &start) < 0 || start != rt_jint(id, "pid_start_time")) {
                glove_error_set(&e, EIO, "start.identity", "the keeper's PID 1 identity could not be confirmed");
                goto fail;
        }
        json_t *cg = rt_cgroup_identity(s, pid);
        if (!cg || rt_jint(cg, "inode") != rt_jint(json_object_get(id, "cgroup"), "inode")) {
                json_decref(cg);
                glove_error_set(&e, EIO, "start.cgroup_identity", "the run cgroup of the session could not be read");
                goto fail;
        }
        if (json_object_set_new(s->binding, "cgroup", cg) < 0) {
                glove_error_set(&e, ENOMEM, "start.cgroup_identity", "out of memory recording the run cgroup");
                goto fail;
        }
        if (glove_runtime_json_digest(s->binding, s->binding_digest, &e) < 0)
                goto fail;
        /* The terminal receipt carries the binding: it must fit in one
         * envelope with room for the rest, or the agent would run and end
         * without a receipt. Checked before release (the failed start's
         * receipt names the size instead of the binding). */
        if (rt_binding_check(s, &e) < 0)
                goto fail;
        if (rt_binding_write(s, &e) < 0)
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
                if (glove_store_transition_runtime(rt->o.store, s->id, GLOVE_STORE_SESSION_RUNNING, "",
                                                           rt->o.now_ms(), text, n, &appended, &e) < 0)
                        goto fail;
        }
        s->started_at_ms = rt->o.now_ms();
        if (rt_link_send(s, GLOVE_KEEPER_RELEASE, NULL, 0) < 0) {
                (void)rt_link_send(s, GLOVE_KEEPER_KILL, NULL, 0);
                return; /* the end comes through ENDED, or the keeper's loss */
        }
        s->released = true;
        return;
fail:
        RT_LOG(s, GLOVE_LOG_WARNING, e.code ? e.code : "start.failed", "session %s: not released: %s: %s", s->id,
               e.code, e.message);
        snprintf(s->fail_code, sizeof(s->fail_code), "%s", e.code ? e.code : "start.failed");
        /* Aborting before release ends in ENDED with released false:
         * start_failed. Keep the code for the receipt. */
        (void)rt_link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The managed-session runtime of gloved: registry, lifecycle, attach
 * streams, terminal receipts (see runtime.h). */
#include "glove/runtime/runtime.h"

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
#include "glove/keeper/keeper.h"
#include "glove/net/rule.h"
#include "glove/session/session.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/prepare.h"
#include "runtime_internal.h"

/* ---- construction ---- */

int glove_runtime_new(const struct glove_runtime_options *o, struct glove_runtime **out,
                              struct glove_error *err) {
        struct glove_runtime *rt = calloc(1, sizeof(*rt));
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
        rt->keeper_exe.fd = -1;
        rt->o.keeper_path = NULL; /* the caller's: not kept */
        if (rt->operational && glove_keeper_exe_open(o->keeper_path, &rt->keeper_exe, &rt->keeper_why) < 0)
                glove_log(rt->o.log, GLOVE_LOG_ERROR, rt->keeper_why.code, NULL,
                          "%s: %s (managed sessions cannot start)", rt->keeper_why.code, rt->keeper_why.message);
        o = NULL;
        *out = rt;
        return 0;
}

const char *glove_runtime_cgroup_placement(const struct glove_runtime *rt) {
        if (!rt || !rt->operational)
                return "none";
        enum glove_cgroup_placement p = rt->o.cgroup_host ? glove_cgroup_host_placement(rt->o.cgroup_host)
                                                          : rt->cgroup.placement;
        const char *n = glove_cgroup_placement_name(p);
        return n ? n : "none";
}

bool glove_runtime_operational(const struct glove_runtime *rt) {
        return rt && rt->operational;
}

const char *glove_runtime_why(const struct glove_runtime *rt) {
        return rt->operational ? "" : rt->why;
}

static const char *const limit_names[] = { "cpu_time_ms",  "memory_bytes", "pids",
                                           "wall_time_ms", "disk_bytes",   "terminal_output_bytes" };

json_t *glove_runtime_mechanisms(const struct glove_runtime *rt) {
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

json_t *glove_runtime_mechanisms_missing(const struct glove_runtime *rt) {
        json_t *list = json_array();
        for (size_t i = 0; list && !rt->operational && i < 3; i++)
                json_array_append_new(list, json_pack("{s:s,s:s}", "limit", limit_names[i], "reason", rt->why));
        return list;
}


void glove_runtime_set_loop(struct glove_runtime *rt, sd_event *loop) {
        rt->loop = loop;
        /* The keepers the reconciler adopted: on the loop, HELLO. */
        for (struct rt_session *s = rt->sessions; s; s = s->next) {
                struct glove_error e = { 0 };
                if (s->adopted && s->kfd >= 0 && !s->ksrc && rt_link_attach(s, &e) < 0)
                        RT_LOG(s, GLOVE_LOG_WARNING, e.code, "session %s: %s: %s", s->id, e.code, e.message);
        }
}

/* ---- registry ---- */

struct rt_session *rt_find(struct glove_runtime *rt, const char *id) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                if (strcmp(s->id, id) == 0)
                        return s;
        return NULL;
}


static void session_entry_free(struct rt_session *s) {
        rt_link_close(s);
        free(s->mir);
        glove_audit_close(&s->audit);
        glove_supervisor_launch_free(s->launch);
        json_decref(s->binding);
        json_decref(s->termination);
        free(s->transcript);
        free(s);
}

static void unlink_entry(struct glove_runtime *rt, struct rt_session *s) {
        for (struct rt_session **p = &rt->sessions; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        return;
                }
}

/* Keeps at most GLOVE_RUNTIME_ENDED_MAX ended entries: the oldest
 * ended one goes (its store record and receipt stay). */
/* Frees the oldest ended entries past GLOVE_RUNTIME_ENDED_MAX, never
 * keep (the entry a caller is still using) and nothing while shutdown walks
 * the list. */
static void trim_ended(struct glove_runtime *rt, const struct rt_session *keep) {
        if (rt->shutting_down)
                return;
        while (rt->ended > GLOVE_RUNTIME_ENDED_MAX) {
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

static const struct glove_store_session *stored(struct glove_runtime *rt, const char *id,
                                                  struct glove_error *err) {
        const struct glove_store_session *st = glove_store_find(rt->o.store, id);
        if (!st)
                glove_error_set(err, ENOENT, "session.not_found", "no session %s", id);
        return st;
}

static int transition(struct glove_runtime *rt, const char *id, enum glove_store_session_state to,
                      const char *reason, struct glove_error *err) {
        bool appended;
        return glove_store_transition(rt->o.store, id, to, reason, rt->o.now_ms(), &appended, err);
}

static json_t *state_result(struct glove_runtime *rt, const char *id) {
        const struct glove_store_session *st = glove_store_find(rt->o.store, id);
        return json_pack("{s:s,s:s}", "session_id", id, "state",
                         st ? glove_store_session_state_name(st->state) : "unknown");
}

/* ---- attach streams ---- */

/* Pushes the session_output_gap of a skipping attachment (last: within the
 * slack of a final notice) and ends the skip. Returns 0 or the push's error
 * (the skip then goes on). */
static int gap_push(struct attachment *a, bool last) {
        if (!a->skip.skipping)
                return 0;
        int r = a->conn->ops->push(a->conn, glove_runtime_output_gap_message(a->s->id, a->skip.skipped_bytes),
                                        last);
        if (r == 0)
                a->skip = (struct glove_runtime_output_skip){ 0 };
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
                (void)a->conn->ops->push(a->conn,
                                              json_pack("{s:s,s:{s:s,s:s}}", "method", "session_detached", "params",
                                                        "session_id", s->id, "reason", reason),
                                              true);
        a->conn->ops->attachments(a->conn, -1);
        free(a);
}

/* A skipping attachment whose connection drained below half the bound
 * pushes its gap and resumes. Returns false when a was dropped (a push
 * failed otherwise than for room). */
static bool attachment_resume(struct attachment *a) {
        if (!glove_runtime_output_skip_resumes(&a->skip, a->conn->ops->pushed_pending(a->conn),
                                               GLOVE_RUNTIME_PUSH_MAX))
                return true;
        int r = gap_push(a, false);
        if (r == -ENOBUFS) {
                a->conn->ops->want_drain(a->conn);
        } else if (r < 0) {
                attachment_drop(a, NULL);
                return false;
        }
        return true;
}

void rt_client_output(void *userdata, int stream, const void *buf, size_t n) {
        (void)stream;
        struct attachment *a = userdata;
        if (a->skip.skipping && !attachment_resume(a))
                return;
        if (a->skip.skipping) {
                glove_runtime_output_skip_add(&a->skip, n);
                return;
        }
        /* Encoded straight into the connection's output queue (the bytes
         * jansson would give: glove_protocol_frame_encode_output). */
        int r = a->conn->ops->push_output(a->conn, a->s->id, buf, n);
        if (r == -EINVAL) {
                /* An id JSON would escape (never one of the store's): the
                 * generic encoder. base64 is ASCII: no UTF-8 check (nocheck). */
                char *text = glove_base64_encode(buf, n);
                json_t *data = text ? json_stringn_nocheck(text, strlen(text)) : NULL;
                json_t *msg = data ? json_pack("{s:s,s:{s:s,s:o}}", "method", "session_output", "params",
                                               "session_id", a->s->id, "data_b64", data)
                                   : NULL;
                free(text);
                r = a->conn->ops->push(a->conn, msg, false);
        }
        if (r == -ENOBUFS) {
                /* The queue is full: skip (never wait, never drop) until it
                 * drains below half (glove_runtime_conn_drained). */
                glove_runtime_output_skip_add(&a->skip, n);
                a->conn->ops->want_drain(a->conn);
        } else if (r < 0) {
                attachment_drop(a, NULL);
        }
}


void glove_runtime_conn_closed(struct glove_runtime *rt, struct glove_runtime_peer *conn) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att, *next; a; a = next) {
                        next = a->next;
                        if (a->conn == conn)
                                attachment_drop(a, NULL);
                }
}

void glove_runtime_conn_drained(struct glove_runtime *rt, struct glove_runtime_peer *conn) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att, *next; a; a = next) {
                        next = a->next;
                        if (a->conn == conn)
                                (void)attachment_resume(a);
                }
}

static unsigned conn_attachments(struct glove_runtime *rt, struct glove_runtime_peer *conn) {
        unsigned n = 0;
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att; a; a = a->next)
                        n += a->conn == conn;
        return n;
}

/* ---- the end of a session ---- */

static void end_notify(struct rt_session *s, const char *state) {
        while (s->att) {
                struct attachment *a = s->att;
                (void)gap_push(a, true);
                (void)a->conn->ops->push(a->conn,
                                              json_pack("{s:s,s:{s:s,s:s,s:I,s:O}}", "method", "session_ended", "params",
                                                        "session_id", s->id, "state", state, "receipt_sequence",
                                                        (json_int_t)s->receipt_seq, "termination",
                                                        s->termination ? s->termination : json_null()),
                                              true);
                attachment_drop(a, NULL);
        }
}

int rt_binding_check(struct rt_session *s, struct glove_error *err) {
        _cleanup_free_ char *enc = NULL;
        size_t len = 0;
        int r = glove_json_encode_canonical(s->binding, &enc, &len, err);
        if (r < 0)
                return r;
        if (len <= GLOVE_RUNTIME_BINDING_MAX)
                return 0;
        json_t *o = json_pack("{s:I}", "omitted_bytes", (json_int_t)len);
        if (!o)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        json_decref(s->binding);
        s->binding = o;
        s->binding_digest[0] = '\0';
        return glove_error_set(err, EMSGSIZE, "start.binding_too_large",
                               "the launch binding is %zu bytes; a terminal receipt holds at most %u", len,
                               (unsigned)GLOVE_RUNTIME_BINDING_MAX);
}

/* The receipt of f, its binding cut down to {"omitted_bytes":N} when the
 * whole would not fit in one envelope (a last resort: both gates above keep
 * a binding within GLOVE_RUNTIME_BINDING_MAX). */
static json_t *receipt_that_fits(struct rt_session *s, struct glove_runtime_receipt_facts *f) {
        json_t *receipt = glove_runtime_receipt_build(f);
        _cleanup_free_ char *enc = NULL;
        size_t len = 0;
        if (!receipt || glove_json_encode_canonical(receipt, &enc, &len, NULL) < 0 ||
            len + GLOVE_RUNTIME_ENVELOPE_OVERHEAD <= GLOVE_STORE_RECEIPTS_MAX_ENVELOPE)
                return receipt;
        json_decref(receipt);
        size_t blen = 0;
        _cleanup_free_ char *benc = NULL;
        if (f->launch_binding)
                (void)glove_json_encode_canonical(f->launch_binding, &benc, &blen, NULL);
        json_t *o = json_pack("{s:I}", "omitted_bytes", (json_int_t)blen);
        RT_LOG(s, GLOVE_LOG_WARNING, "receipts.binding_omitted",
               "session %s: its receipt would be %zu bytes: its launch binding (%zu bytes) is omitted", s->id, len, blen);
        if (!o)
                return NULL;
        json_decref(s->binding);
        s->binding = o;
        s->binding_digest[0] = '\0';
        f->launch_binding = s->binding;
        f->launch_binding_digest = NULL;
        return glove_runtime_receipt_build(f);
}

/* Appends the receipt, records the terminal transition, releases the
 * materializations. f's termination decides exited or failed. */
void rt_finish(struct rt_session *s, struct glove_runtime_receipt_facts *f) {
        struct glove_runtime *rt = s->rt;
        struct glove_error e = { 0 };
        const struct glove_store_session *st = glove_store_find(rt->o.store, s->id);
        f->session_id = s->id;
        f->controller_plan_digest = st->controller_plan_digest;
        f->plan_content_digest = st->plan_content_digest;
        f->launch_binding = s->binding;
        f->launch_binding_digest = s->binding_digest[0] ? s->binding_digest : NULL;
        f->ended_at_ms = rt->o.now_ms();
        _cleanup_json_ json_t *receipt = receipt_that_fits(s, f);
        if (s->reserved) {
                glove_store_receipts_unreserve(rt->o.receipts, GLOVE_RUNTIME_RECEIPT_RESERVE);
                s->reserved = false;
        }
        uint64_t seq = 0;
        if (!receipt || glove_store_receipts_append(rt->o.receipts, "session.terminal", s->id, receipt, f->ended_at_ms,
                                                      &seq, &e) < 0)
                RT_LOG(s, GLOVE_LOG_ERROR, e.code ? e.code : "receipts.io",
                       "session %s: the terminal receipt could not be appended: %s: %s", s->id,
                       e.code ? e.code : "receipts.io", e.message);
        s->receipt_seq = seq;
        json_decref(s->termination);
        s->termination = receipt ? json_incref(json_object_get(receipt, "termination")) : NULL;
        bool failed = f->termination == GLOVE_RUNTIME_TERM_START_FAILED || f->termination == GLOVE_RUNTIME_TERM_LOST;
        const char *reason = f->code ? f->code : (failed ? "start_failed" : glove_runtime_termination_name(f->termination));
        /* No receipt, no terminal state: a receipt-less "exited" would claim
         * what cannot be verified; the session is failed instead. */
        if (!seq)
                failed = true, reason = "receipts.append_failed";
        struct glove_error te = { 0 };
        /* The chain is running → stopping → exited: an agent that ended on
         * its own passes through stopping (reason "session.ended"). */
        if (!failed && st->state == GLOVE_STORE_SESSION_RUNNING &&
            transition(rt, s->id, GLOVE_STORE_SESSION_STOPPING, "session.ended", &te) < 0)
                failed = true, reason = te.code ? te.code : "store.transition";
        if (transition(rt, s->id, failed ? GLOVE_STORE_SESSION_FAILED : GLOVE_STORE_SESSION_EXITED, reason, &te) < 0)
                RT_LOG(s, GLOVE_LOG_ERROR, te.code ? te.code : "store.transition",
                       "session %s: the terminal transition could not be recorded: %s: %s", s->id, te.code, te.message);
        struct glove_error le = { 0 };
        if (s->launch ? glove_supervisor_launch_release(s->launch, &le) < 0
                      : glove_supervisor_release_leftovers(rt->o.config, s->id, st->plan, st->plan_len, &le) < 0)
                RT_LOG(s, GLOVE_LOG_WARNING, le.code, "session %s: %s: %s", s->id, le.code, le.message);
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
json_t *rt_cgroup_identity(struct rt_session *s, pid_t pid) {
        char p[64], buf[4096];
        snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        /* The keeper's reading of the same file (a v1 hierarchy whose
         * controller list holds "memory", e.g. "4:cpu,memory:/..."). */
        const char *path = NULL;
        size_t path_len = 0;
        if (glove_keeper_parse_cgroup(buf, (size_t)n, s->rt->cgroup.backend == GLOVE_CGROUP_BACKEND_V2, &path,
                                      &path_len) < 0)
                return NULL;
        char line[PATH_MAX];
        if (path_len >= sizeof(line))
                return NULL;
        memcpy(line, path, path_len);
        line[path_len] = '\0';
        const char *base = strrchr(line, '/');
        base = base ? base + 1 : line;
        char dir[2 * PATH_MAX + 2];
        struct stat st;
        snprintf(dir, sizeof(dir), "%s/%s", s->rt->cgroup.parent, base);
        if (stat(dir, &st) < 0)
                return json_pack("{s:s,s:n}", "path", line, "inode");
        return json_pack("{s:s,s:I}", "path", line, "inode", (json_int_t)st.st_ino);
}

void rt_fail_start(struct rt_session *s, const struct glove_error *why) {
        struct glove_runtime_receipt_facts f = {
                .started_at_ms = -1,
                .exit_code = -1,
                .termination = GLOVE_RUNTIME_TERM_START_FAILED,
                .code = why && why->code ? why->code : "start.failed",
        };
        s->auth.live = false;
        rt_finish(s, &f);
}

/* ---- methods ---- */

static int revalidate(struct glove_runtime *rt, const struct glove_store_session *st,
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

static int mint(struct glove_runtime *rt, struct rt_session *s, const struct glove_store_session *st,
                struct glove_error *err) {
        struct auth *a = &s->auth;
        int r = glove_digest_random(a->nonce, sizeof(a->nonce), err);
        if (r < 0)
                return r;
        snprintf(a->session_id, sizeof(a->session_id), "%s", st->session_id);
        memcpy(a->controller_plan_digest, st->controller_plan_digest, 65);
        memcpy(a->plan_content_digest, st->plan_content_digest, 65);
        snprintf(a->policy_digest, sizeof(a->policy_digest), "%s", glove_supervisor_policy_digest(rt->o.policy));
        a->expires_at_ms = rt->o.now_ms() + GLOVE_RUNTIME_AUTH_TTL_MS;
        a->live = true;
        return 0;
}

/* ---- the prepare workers ----
 *
 * glove_supervisor_launch_prepare blocks (alias resolution, mkfs.ext4 as a
 * child, loop devices, mounts): it runs on at most
 * GLOVE_RUNTIME_PREPARE_WORKERS threads, started on demand and kept
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
        struct glove_runtime *rt = userdata;
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

static int pool_up(struct glove_runtime *rt, struct glove_error *err) {
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
static int pool_submit(struct glove_runtime *rt, struct prepare_job *j, struct glove_error *err) {
        int r = pool_up(rt, err);
        if (r < 0)
                return r;
        struct prepare_pool *p = &rt->pool;
        pthread_mutex_lock(&p->lock);
        j->next = NULL;
        *p->queue_tail = j;
        p->queue_tail = &j->next;
        p->queued++;
        if (p->queued > p->idle && p->n_threads < GLOVE_RUNTIME_PREPARE_WORKERS) {
                pthread_attr_t attr;
                sigset_t all, old;
                sigfillset(&all);
                pthread_attr_init(&attr);
                (void)pthread_attr_setstacksize(&attr, GLOVE_RUNTIME_PREPARE_STACK);
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
static void pool_down(struct glove_runtime *rt) {
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
                        rt_fail_start(s, &e);
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
        struct glove_runtime *rt = s->rt;
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
        /* Measured as it will be committed, before anything is spawned: a
         * binding a receipt cannot hold never starts, and the start_failed
         * receipt carries {"omitted_bytes":N} instead (keeper_ready measures
         * it again with the cgroup identity). */
        if (r >= 0)
                r = rt_binding_check(s, &e);
        if (r >= 0)
                r = transition(rt, s->id, GLOVE_STORE_SESSION_STARTING, "", &e);
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
                        /* The spec's managed rule: no Unix socket of the
                         * agent's own; offline no connect or setsockopt. */
                        .seccomp = &glove_seccomp_prebuilt_managed,
                        .seccomp_egress = &glove_seccomp_prebuilt_managed_egress,
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
                struct glove_supervisor_limits pl;
                glove_supervisor_launch_limits(s->launch, &pl);
                d.limits = (struct glove_session_limits){
                        .cpu_time_ms = pl.cpu_time_ms,
                        .memory_bytes = pl.memory_bytes,
                        .pids = pl.pids,
                        .wall_time_ms = pl.wall_time_ms,
                        .disk_bytes = pl.disk_bytes,
                        .terminal_output_bytes = pl.terminal_output_bytes,
                };
                /* The keeper's run cgroup must go to gloved's pinned
                 * delegated parent (checked here too: still the same). */
                glove_cgroup_host_pin(rt->o.cgroup_host, &d.cgroup_pin);
                r = glove_cgroup_host_check(rt->o.cgroup_host, &e);
                /* The egress audit log lives on the host: it counts against
                 * the session's disk limit (an agent flooding the proxy with
                 * refused requests could otherwise fill the host disk). */
                d.audit_max_bytes = d.limits.disk_bytes;
                /* A credential lease is a host file bound writable: no file
                 * the agent writes may outgrow what its own filesystems hold. */
                d.file_size_max = glove_supervisor_launch_file_size_max(s->launch);
                if (r >= 0)
                        r = rt_keeper_spawn(s, &d, &e);
                /* The keeper holds the egress audit descriptor now. */
                glove_audit_close(&s->audit);
        }
        if (egress) {
                glove_net_policy_free(egress);
                free(egress);
        }
        if (r < 0) {
                RT_LOG(s, GLOVE_LOG_WARNING, e.code ? e.code : "start.failed", "session %s: the start failed: %s: %s",
                       s->id, e.code ? e.code : "start.failed", e.message);
                bool linked = s->kfd >= 0;
                if (linked) /* the keeper is told to end what it started */
                        (void)rt_link_send(s, GLOVE_KEEPER_ABORT, NULL, 0);
                rt_link_close(s);
                rt_fail_start(s, &e);
                glove_supervisor_launch_free(s->launch);
                s->launch = NULL;
                if (!linked)
                        rt_keeper_files_remove(rt->o.config, s->stem, false);
                return;
        }
}

int glove_runtime_start(struct glove_runtime *rt, const char *id, json_t **result,
                                struct glove_error *err) {
        *result = NULL;
        const struct glove_store_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (glove_store_session_state_terminal(st->state))
                return glove_error_set(err, EINVAL, "session.terminal", "session %s is %s", id,
                                       glove_store_session_state_name(st->state));
        if (st->state != GLOVE_STORE_SESSION_CREATED || rt_find(rt, id)) {
                *result = state_result(rt, id); /* a retry answers the current state */
                return *result ? 0 : -ENOMEM;
        }
        if (!rt->loop)
                return glove_error_set(err, EAGAIN, "runtime.no_loop", "the service loop is not running");
        if (rt->live >= GLOVE_RUNTIME_SESSIONS_MAX)
                return glove_error_set(err, EBUSY, "runtime.busy", "%d sessions are running already",
                                       GLOVE_RUNTIME_SESSIONS_MAX);
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
        rt_keeper_stem(id, s->stem);
        s->started_at_ms = -1;
        snprintf(s->id, sizeof(s->id), "%s", id);
        if ((r = mint(rt, s, st, err)) < 0 ||
            (r = glove_store_receipts_reserve(rt->o.receipts, GLOVE_RUNTIME_RECEIPT_RESERVE, err)) < 0) {
                job_free(j);
                free(s);
                return r;
        }
        s->reserved = true;
        r = transition(rt, id, GLOVE_STORE_SESSION_PREPARING, "", err);
        if (r < 0) {
                glove_store_receipts_unreserve(rt->o.receipts, GLOVE_RUNTIME_RECEIPT_RESERVE);
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
                rt_fail_start(s, &e);
                *err = e;
                return r;
        }
        *result = state_result(rt, id);
        return *result ? 0 : -ENOMEM;
}

static struct rt_session *live_session(struct glove_runtime *rt, const char *id, struct glove_error *err) {
        const struct glove_store_session *st = stored(rt, id, err);
        if (!st)
                return NULL;
        struct rt_session *s = rt_find(rt, id);
        if (!s || !s->live || s->kfd < 0 ||
            (st->state != GLOVE_STORE_SESSION_RUNNING && st->state != GLOVE_STORE_SESSION_STOPPING)) {
                glove_error_set(err, EINVAL, glove_store_session_state_terminal(st->state) ? "session.terminal"
                                                                                              : "session.not_running",
                                "session %s is %s", id, glove_store_session_state_name(st->state));
                return NULL;
        }
        return s;
}

int glove_runtime_attach(struct glove_runtime *rt, struct glove_runtime_peer *conn, const char *id,
                                 json_t **result, struct glove_error *err) {
        *result = NULL;
        const struct glove_store_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        struct rt_session *s = rt_find(rt, id);
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
        if (attach && (conn_attachments(rt, conn) >= GLOVE_RUNTIME_ATTACH_PER_CONN ||
                       s->n_att >= GLOVE_TERMINAL_CLIENTS_MAX))
                return glove_error_set(err, ENOSPC, "attach.too_many", "too many attachments");
        if (s && s->mir) {
                buf = malloc(GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
                if (!buf)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                tlen = rt_mirror_copy(s->mir, buf, GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
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
                conn->ops->attachments(conn, +1);
                attached = true;
        }
        _cleanup_free_ char *text = glove_base64_encode(tr ? tr : (const uint8_t *)"", tlen);
        if (!text)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        *result = json_pack("{s:s,s:s,s:s,s:I,s:b}", "session_id", id, "state",
                            glove_store_session_state_name(st->state), "transcript_b64", text, "transcript_bytes",
                            (json_int_t)tlen, "attached", attached);
        if (*result && s && !s->live && s->termination) {
                json_object_set(*result, "termination", s->termination);
                json_object_set_new(*result, "receipt_sequence", json_integer((json_int_t)s->receipt_seq));
        } else if (*result && !s && glove_store_session_state_terminal(st->state)) {
                /* Ended under an earlier gloved, or no longer kept in
                 * memory: the receipt journal still says how. */
                uint64_t seq = 0;
                _cleanup_json_ json_t *rc = NULL;
                if (glove_store_receipts_find(rt->o.receipts, "session.terminal", id, &seq, &rc) == 1 && rc) {
                        json_object_set(*result, "termination", json_object_get(rc, "termination"));
                        json_object_set_new(*result, "receipt_sequence", json_integer((json_int_t)seq));
                }
        }
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_detach(struct glove_runtime *rt, struct glove_runtime_peer *conn, const char *id,
                                 json_t **result, struct glove_error *err) {
        if (!stored(rt, id, err))
                return -ENOENT;
        struct rt_session *s = rt_find(rt, id);
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
static struct rt_session *early_session(struct glove_runtime *rt, const char *id) {
        const struct glove_store_session *st = glove_store_find(rt->o.store, id);
        struct rt_session *s = st ? rt_find(rt, id) : NULL;
        if (!s || !s->live ||
            (st->state != GLOVE_STORE_SESSION_PREPARING && st->state != GLOVE_STORE_SESSION_STARTING))
                return NULL;
        return s;
}

int glove_runtime_write_stdin(struct glove_runtime *rt, const char *id, const void *data, size_t len,
                                      json_t **result, struct glove_error *err) {
        if (early_session(rt, id))
                return glove_error_set(err, EAGAIN, "stdin.full",
                                       "session %s is not running yet: its input opens when it runs; retry later", id);
        struct rt_session *s = live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        if (len > GLOVE_RUNTIME_STDIN_MAX)
                return glove_error_set(err, EMSGSIZE, "stdin.too_large", "at most %d bytes per write_stdin",
                                       GLOVE_RUNTIME_STDIN_MAX);
        if (s->input_closed)
                return glove_error_set(err, EPIPE, "session.not_running", "the agent's input is closed");
        size_t n = len < s->credit ? len : (size_t)s->credit;
        if (n == 0 && len)
                return glove_error_set(err, EAGAIN, "stdin.full", "the input queue is full; retry later");
        if (n && rt_link_send(s, GLOVE_KEEPER_INPUT, data, n) < 0)
                return glove_error_set(err, EAGAIN, "stdin.full", "the keeper's channel is full; retry later");
        s->credit -= n;
        *result = json_pack("{s:I}", "accepted", (json_int_t)n);
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_resize(struct glove_runtime *rt, const char *id, unsigned rows, unsigned cols,
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
        int r = rt_link_send_json(s, GLOVE_KEEPER_RESIZE, json_pack("{s:i,s:i}", "rows", (int)rows, "cols", (int)cols));
        if (r < 0)
                return glove_error_set(err, -r, "resize.failed", "the window size could not be sent to the keeper");
        *result = json_object();
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_signal(struct glove_runtime *rt, const char *id, const char *name, json_t **result,
                                 struct glove_error *err) {
        int sig = glove_runtime_signal_parse(name);
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
                (void)rt_link_send(s, GLOVE_KEEPER_KILL, NULL, 0);
        } else {
                (void)rt_link_send_json(s, GLOVE_KEEPER_SIGNAL, json_pack("{s:i}", "signal", sig));
        }
        *result = json_object();
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_stop(struct glove_runtime *rt, const char *id, uint64_t grace_ms, json_t **result,
                               struct glove_error *err) {
        const struct glove_store_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (glove_store_session_state_terminal(st->state) || st->state == GLOVE_STORE_SESSION_STOPPING) {
                /* Idempotent; a stop repeated while stopping is sent to the
                 * keeper again (it may have missed the first). */
                struct rt_session *again = st->state == GLOVE_STORE_SESSION_STOPPING ? rt_find(rt, id) : NULL;
                if (again && again->live && again->kfd >= 0)
                        (void)rt_link_send_json(again, GLOVE_KEEPER_STOP,
                                                json_pack("{s:I}", "grace_ms", (json_int_t)grace_ms));
                *result = state_result(rt, id);
                return *result ? 0 : -ENOMEM;
        }
        /* Before the agent was released: it never starts. The session ends
         * failed (start_failed, start.stopped) once the sandbox is gone. */
        struct rt_session *pre = rt_find(rt, id);
        if (pre && pre->live &&
            (st->state == GLOVE_STORE_SESSION_PREPARING || st->state == GLOVE_STORE_SESSION_STARTING)) {
                snprintf(pre->fail_code, sizeof(pre->fail_code), "start.stopped");
                if (pre->ready) /* held in its keeper: never released */
                        (void)rt_link_send(pre, GLOVE_KEEPER_ABORT, NULL, 0);
                *result = state_result(rt, id);
                return *result ? 0 : -ENOMEM;
        }
        struct rt_session *s = live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        int r = transition(rt, id, GLOVE_STORE_SESSION_STOPPING, "stop_session", err);
        if (r < 0)
                return r;
        s->stopping = true;
        (void)rt_link_send_json(s, GLOVE_KEEPER_STOP, json_pack("{s:I}", "grace_ms", (json_int_t)grace_ms));
        *result = state_result(rt, id);
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_cleanup(struct glove_runtime *rt, const char *id, json_t **result,
                                  struct glove_error *err) {
        const struct glove_store_session *st = stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (!glove_store_session_state_terminal(st->state))
                return glove_error_set(err, EBUSY, "session.not_terminal", "session %s is %s", id,
                                       glove_store_session_state_name(st->state));
        json_t *removed = NULL, *kept = NULL;
        int r = glove_supervisor_cleanup(rt->o.config, id, st->plan, st->plan_len, &removed, &kept, err);
        if (r < 0)
                return r;
        /* Recorded, so that the session can leave the live state once its
         * terminal receipt is acknowledged (store.h, compaction). */
        bool appended;
        r = glove_store_cleanup(rt->o.store, id, rt->o.now_ms(), &appended, err);
        if (r < 0) {
                json_decref(removed);
                json_decref(kept);
                return r;
        }
        *result = json_pack("{s:o,s:o}", "removed", removed ? removed : json_array(), "kept", kept ? kept : json_array());
        return *result ? 0 : -ENOMEM;
}

json_t *glove_runtime_list(const struct glove_store *store) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < glove_store_sessions(store); i++) {
                const struct glove_store_session *s = glove_store_at(store, i);
                int64_t updated = s->n_history ? s->history[s->n_history - 1].at_ms : s->created_at_ms;
                json_array_append_new(list, json_pack("{s:s,s:s,s:I,s:I}", "session_id", s->session_id, "state",
                                                      glove_store_session_state_name(s->state), "created_at_ms",
                                                      (json_int_t)s->created_at_ms, "updated_at_ms",
                                                      (json_int_t)updated));
        }
        return list ? json_pack("{s:o}", "sessions", list) : NULL;
}

/* ---- shutdown ---- */

void glove_runtime_shutdown(struct glove_runtime *rt) {
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
                        rt_link_close(s);
                        s->live = false;
                        rt->live--;
                        continue;
                }
        }
        /* Not released: the start cannot complete without this gloved's
         * authorization. Each keeper is told ABORT on its channel; their
         * ends are awaited together (rt_keeper_abort_wait, which also lets
         * them go), then each session fails with its receipt. */
        int fds[GLOVE_RUNTIME_ABORTS_MAX];
        size_t n = 0;
        for (struct rt_session *s = rt->sessions; s; s = s->next) {
                if (!s->live || s->released || s->adopted || s->kfd < 0 || n >= GLOVE_ELEMENTSOF(fds))
                        continue;
                if (rt_link_send(s, GLOVE_KEEPER_ABORT, NULL, 0) < 0 || rt_link_flush(s) < 0 || s->kq)
                        continue; /* not told: it ends by its release deadline */
                s->ksrc = sd_event_source_disable_unref(s->ksrc);
                fds[n++] = s->kfd;
                s->kfd = -1; /* the wait closes it */
        }
        rt_keeper_abort_wait(fds, n);
        for (struct rt_session *s = rt->sessions; s; s = s->next) {
                if (!s->live || s->released || s->adopted)
                        continue;
                rt_link_close(s);
                s->ended = true;
                struct glove_runtime_receipt_facts f = {
                        .started_at_ms = -1,
                        .exit_code = -1,
                        .termination = GLOVE_RUNTIME_TERM_START_FAILED,
                        .code = "service.stopped",
                };
                rt_finish(s, &f);
                rt_keeper_files_remove(rt->o.config, s->stem, false); /* none is fine */
        }
        rt->loop = NULL;
}

void glove_runtime_free(struct glove_runtime *rt) {
        if (!rt)
                return;
        glove_runtime_shutdown(rt);
        while (rt->sessions) {
                struct rt_session *s = rt->sessions;
                rt->sessions = s->next;
                while (s->att)
                        attachment_drop(s->att, NULL);
                session_entry_free(s);
        }
        glove_keeper_exe_close(&rt->keeper_exe);
        free(rt);
}


/* SPDX-License-Identifier: Apache-2.0 */
/* The managed-session runtime of gloved (see runtime.h): its construction,
 * the registry of sessions, the end of a session (its terminal receipt),
 * the signal, stop, cleanup and list methods, and shutdown. Attach streams
 * are in runtime_attach.c, the prepare workers and start_session in
 * runtime_prepare.c, the keeper channel in runtime_link.c, the keeper's
 * launch in runtime_keeper.c. */
#include "glove/runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/keeper/keeper.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/policy.h"
#include "glove/supervisor/prepare.h"
#include "glove/supervisor/stage.h"
#include "glove/runtime/services.h"
#include "runtime_internal.h"

/* ---- construction ---- */

int glove_runtime_new(const struct glove_runtime_options *o, struct glove_runtime **out,
                              struct glove_error *err) {
        struct glove_runtime *rt = calloc(1, sizeof(*rt));
        *out = NULL;
        if (!rt) {
                glove_runtime_services_free(o->services);
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
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
        rt_svc_free(s);
        rt_link_close(s);
        free(s->mir);
        glove_audit_close(&s->audit);
        glove_supervisor_launch_free(s->launch);
        json_decref(s->binding);
        json_decref(s->keeper_outcome);
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

bool rt_drop_ended(struct glove_runtime *rt, const char *id) {
        struct rt_session *s = rt_find(rt, id);
        if (!s || s->live || s->job || s->n_att)
                return false;
        unlink_entry(rt, s);
        session_entry_free(s);
        rt->ended--;
        return true;
}

const struct glove_store_session *rt_stored(struct glove_runtime *rt, const char *id,
                                            struct glove_error *err) {
        const struct glove_store_session *st = glove_store_find(rt->o.store, id);
        if (!st)
                glove_error_set(err, ENOENT, "session.not_found", "no session %s", id);
        return st;
}

int rt_transition(struct glove_runtime *rt, const char *id, enum glove_store_session_state to,
                  const char *reason, struct glove_error *err) {
        bool appended;
        return glove_store_transition(rt->o.store, id, to, reason, rt->o.now_ms(), &appended, err);
}

json_t *rt_state_result(struct glove_runtime *rt, const char *id) {
        const struct glove_store_session *st = glove_store_find(rt->o.store, id);
        return json_pack("{s:s,s:s}", "session_id", id, "state",
                         st ? glove_store_session_state_name(st->state) : "unknown");
}

struct rt_session *rt_live_session(struct glove_runtime *rt, const char *id, struct glove_error *err) {
        const struct glove_store_session *st = rt_stored(rt, id, err);
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

/* ---- the end of a session ---- */

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
        /* The whole binding stays here; the receipt commits to it. */
        struct glove_error ke = { 0 };
        if (rt_binding_keep(s, &ke) < 0)
                RT_LOG(s, GLOVE_LOG_WARNING, ke.code, "session %s: the launch binding could not be kept: %s: %s", s->id,
                       ke.code, ke.message);
        _cleanup_json_ json_t *receipt = receipt_that_fits(s, f);
        if (s->reserved) {
                glove_store_receipts_unreserve(rt->o.receipts, GLOVE_RUNTIME_RECEIPT_RESERVE);
                s->reserved = false;
        }
        uint64_t seq = 0;
        bool refinement = strcmp(rt_receipt_kind(st), GLOVE_STORE_RECEIPTS_KIND_REFINEMENT) == 0;
        if (rt_receipt_append(rt, st, receipt, s->binding, f, s->keeper_outcome, f->ended_at_ms, &seq, NULL, &e) < 0)
                RT_LOG(s, GLOVE_LOG_ERROR, e.code ? e.code : "receipts.io",
                       "session %s: the terminal receipt could not be appended: %s: %s", s->id,
                       e.code ? e.code : "receipts.io", e.message);
        s->receipt_seq = seq;
        json_decref(s->termination);
        s->termination = receipt ? json_incref(json_object_get(receipt, "termination")) : NULL;
        bool failed = f->termination == GLOVE_RUNTIME_TERM_START_FAILED || f->termination == GLOVE_RUNTIME_TERM_LOST;
        const char *reason = f->code ? f->code : (failed ? "start_failed" : glove_runtime_termination_name(f->termination));
        /* A refinement session's own transition: evaluated, whatever the verdict. */
        if (refinement && !failed)
                reason = "refinement.evaluated";
        /* No receipt, no terminal state: a receipt-less "exited" would claim
         * what cannot be verified; the session is failed instead. */
        if (!seq)
                failed = true, reason = "receipts.append_failed";
        struct glove_error te = { 0 };
        /* The chain is running → stopping → exited: an agent that ended on
         * its own passes through stopping (reason "session.ended"). */
        if (!failed && st->state == GLOVE_STORE_SESSION_RUNNING &&
            rt_transition(rt, s->id, GLOVE_STORE_SESSION_STOPPING, "session.ended", &te) < 0)
                failed = true, reason = te.code ? te.code : "store.transition";
        if (rt_transition(rt, s->id, failed ? GLOVE_STORE_SESSION_FAILED : GLOVE_STORE_SESSION_EXITED, reason, &te) < 0)
                RT_LOG(s, GLOVE_LOG_ERROR, te.code ? te.code : "store.transition",
                       "session %s: the terminal transition could not be recorded: %s: %s", s->id, te.code, te.message);
        struct glove_error le = { 0 };
        rt_svc_release(s);
        if (s->launch ? glove_supervisor_launch_release(s->launch, &le) < 0
                      : glove_supervisor_release_leftovers(rt->o.config, s->id, st->plan, st->plan_len, &le) < 0)
                RT_LOG(s, GLOVE_LOG_WARNING, le.code, "session %s: %s: %s", s->id, le.code, le.message);
        if (s->live) {
                s->live = false;
                rt->live--;
                rt->ended++;
        }
        rt_end_notify(s, failed ? "failed" : "exited");
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

int glove_runtime_signal(struct glove_runtime *rt, const char *id, const char *name, json_t **result,
                                 struct glove_error *err) {
        int sig = glove_runtime_signal_parse(name);
        if (sig < 0)
                return glove_error_set(err, EINVAL, "signal.unknown", "unknown signal name");
        struct rt_session *s = rt_live_session(rt, id, err);
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
        const struct glove_store_session *st = rt_stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (glove_store_session_state_terminal(st->state) || st->state == GLOVE_STORE_SESSION_STOPPING) {
                /* Idempotent; a stop repeated while stopping is sent to the
                 * keeper again (it may have missed the first). */
                struct rt_session *again = st->state == GLOVE_STORE_SESSION_STOPPING ? rt_find(rt, id) : NULL;
                if (again && again->live && again->kfd >= 0)
                        (void)rt_link_send_json(again, GLOVE_KEEPER_STOP,
                                                json_pack("{s:I}", "grace_ms", (json_int_t)grace_ms));
                *result = rt_state_result(rt, id);
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
                *result = rt_state_result(rt, id);
                return *result ? 0 : -ENOMEM;
        }
        struct rt_session *s = rt_live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        int r = rt_transition(rt, id, GLOVE_STORE_SESSION_STOPPING, "stop_session", err);
        if (r < 0)
                return r;
        s->stopping = true;
        (void)rt_link_send_json(s, GLOVE_KEEPER_STOP, json_pack("{s:I}", "grace_ms", (json_int_t)grace_ms));
        *result = rt_state_result(rt, id);
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_cleanup(struct glove_runtime *rt, const char *id, json_t **result,
                                  struct glove_error *err) {
        const struct glove_store_session *st = rt_stored(rt, id, err);
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
        rt_binding_forget(rt, id);
        rt_svc_cleanup(rt, id);
        *result = json_pack("{s:o,s:o}", "removed", removed ? removed : json_array(), "kept", kept ? kept : json_array());
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_retained_changes(struct glove_runtime *rt, const char *id, json_t **result,
                                   struct glove_error *err) {
        const struct glove_store_session *st = rt_stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (!glove_store_session_state_terminal(st->state))
                return glove_error_set(err, EBUSY, "session.not_terminal",
                                       "session %s is %s: its stage is inspected once it has ended", id,
                                       glove_store_session_state_name(st->state));
        return glove_supervisor_retained_changes(rt->o.config, id, st->plan, st->plan_len, result, err);
}

int glove_runtime_guest_queue(struct glove_runtime *rt, const char *id, uint64_t after, uint32_t limit, json_t **result,
                              struct glove_error *err) {
        *result = NULL;
        const struct glove_store_session *st = rt_stored(rt, id, err);
        if (!st)
                return -ENOENT;
        char stem[40];
        rt_keeper_stem(id, stem);
        struct rt_session *s = rt_find(rt, id);
        /* The file's header binds the runtime: the plan's template names it. */
        _cleanup_json_ json_t *plan = NULL;
        const char *runtime_id = NULL;
        if (glove_json_decode_canonical(st->plan, st->plan_len, GLOVE_PLAN_MAX_BYTES, 0, &plan, NULL) == 0)
                runtime_id = glove_supervisor_policy_template_runtime_id(
                        rt->o.policy, json_string_value(json_object_get(plan, "runtime_template_id")));
        return rt_svc_queue_page(rt, s && s->svc ? s : NULL, id, stem, runtime_id, after, limit, result, err);
}

int glove_runtime_guest_channel_version(const struct glove_runtime *rt, const char **why) {
        if (!rt) {
                if (why)
                        *why = "channel.capability_runtime";
                return 0;
        }
        return glove_runtime_services_channel_version(rt->o.services, rt->operational, why);
}

json_t *glove_runtime_local_services(const struct glove_runtime *rt) {
        return rt ? glove_runtime_services_summary(rt->o.services) : NULL;
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
        rt_pool_down(rt);
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
                        rt_attachment_drop(s->att, NULL);
                session_entry_free(s);
        }
        glove_keeper_exe_close(&rt->keeper_exe);
        glove_runtime_services_free(rt->o.services);
        free(rt);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The start of a managed session (see runtime.h): start_session (the plan
 * revalidated, the start authorization minted), the prepare worker pool
 * that runs glove_supervisor_launch_prepare off the loop thread, and what
 * happens once a launch is prepared (starting, the keeper spawned). */
#include "glove/runtime/runtime.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/container/grant.h"
#include "glove/container/seccomp.h"
#include "glove/keeper/keeper.h"
#include "glove/net/rule.h"
#include "glove/session/session.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/prepare.h"
#include "runtime_internal.h"

/* ---- start_session ---- */

static int revalidate(struct glove_runtime *rt, const struct glove_store_session *st,
                      struct glove_error *err) {
        struct glove_plan_verdict v;
        memset(&v, 0, sizeof(v));
        /* Exposure grants again at start, by gloved's clock: a revoked,
         * superseded or expired exposure never starts (the registry is
         * the one prepare opens sources from). */
        const struct glove_exposures *x = rt->o.config ? rt->o.config->exposures : NULL;
        int r = glove_supervisor_plan_validate_ex(rt->o.policy, x, st->plan, st->plan_len, rt->o.now_ms(), &v, err);
        if (r < 0)
                return r;
        if (v.valid)
                return 0;
        for (size_t i = 0; i < v.n_reasons; i++)
                if (strcmp(v.reasons[i].code, "plan.expired") == 0)
                        return glove_error_set(err, ETIMEDOUT, "plan.expired", "the plan expired; it never starts");
        /* An exposure that changed state since create_session is refused
         * with the exposure's own code (exposure.h). */
        static const struct {
                const char *reason, *code;
                int errnum;
        } gone[] = {
                { "plan.exposure_unknown", "exposure.unknown", ENOENT },
                { "plan.exposure_superseded", "exposure.superseded", ESTALE },
                { "plan.exposure_revoked", "exposure.revoked", EKEYREVOKED },
                { "plan.exposure_expired", "exposure.expired", EKEYEXPIRED },
                { "plan.exposure_root_unavailable", "exposure.root_unavailable", ESTALE },
                { "plan.exposures_unavailable", "launch.exposures_unavailable", EOPNOTSUPP },
        };
        for (size_t i = 0; i < v.n_reasons; i++)
                for (size_t k = 0; k < sizeof(gone) / sizeof(gone[0]); k++)
                        if (strcmp(v.reasons[i].code, gone[k].reason) == 0)
                                return glove_error_set(err, gone[k].errnum, gone[k].code,
                                                       "%s: the plan's exposure can no longer be used (%s); it never "
                                                       "starts",
                                                       v.reasons[i].path, gone[k].reason);
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
                j->r = glove_supervisor_launch_prepare_sources(j->cfg, j->id, j->plan, j->plan_len, j->sources,
                                                               &j->launch, &j->err);
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
        glove_supervisor_sources_free(j->sources);
        free(j->plan);
        free(j);
}

/* Stops the workers: a queued job never runs; a running one is waited for
 * (prepare is bounded: mkfs of the plan's images at most). Every session
 * whose job was pending then fails with a receipt (start_failed,
 * service.stopped); a launch a worker finished is freed (its mounts
 * released; its images stay for cleanup_session, like any failed start). */
void rt_pool_down(struct glove_runtime *rt) {
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
                r = rt_svc_prepare(s, &e);
        if (r >= 0)
                r = rt_binding_check(s, &e);
        if (r >= 0)
                r = rt_transition(rt, s->id, GLOVE_STORE_SESSION_STARTING, "", &e);
        if (r >= 0) {
                egress = glove_supervisor_launch_take_egress(s->launch);
                /* The local-service proxy's records go to the same file
                 * (docs/local-services.md, "Audit records"). */
                if (egress || rt_svc_active(s))
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
                        .audit = egress || rt_svc_active(s) ? &s->audit : NULL,
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
                /* #28: the local services' variables, filter, descriptor
                 * and alias directory. */
                rt_svc_desc(s, &d);
                if (r >= 0)
                        r = rt_keeper_spawn(s, &d, &e);
                rt_svc_spawned(s);
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
        const struct glove_store_session *st = rt_stored(rt, id, err);
        if (!st)
                return -ENOENT;
        if (glove_store_session_state_terminal(st->state))
                return glove_error_set(err, EINVAL, "session.terminal", "session %s is %s", id,
                                       glove_store_session_state_name(st->state));
        /* A created session's id may still name the ended entry of an
         * earlier session the store let go of (compacted after cleanup):
         * that entry is not this session's. */
        if (st->state == GLOVE_STORE_SESSION_CREATED)
                (void)rt_drop_ended(rt, id);
        if (st->state != GLOVE_STORE_SESSION_CREATED || rt_find(rt, id)) {
                *result = rt_state_result(rt, id); /* a retry answers the current state */
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
        /* The exposures' sources, here on the loop thread that owns the
         * registry, by gloved's clock: a source that changed since
         * create_session refuses the start now (exposure.changed). */
        if ((r = glove_supervisor_sources_open(j->cfg, plan, st->plan_len, rt->o.now_ms(), &j->sources, err)) < 0) {
                job_free(j);
                free(s);
                return r;
        }
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
        r = rt_transition(rt, id, GLOVE_STORE_SESSION_PREPARING, "", err);
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
        *result = rt_state_result(rt, id);
        return *result ? 0 : -ENOMEM;
}

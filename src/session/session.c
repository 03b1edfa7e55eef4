/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/number.h"
#include "glove/base/time.h"
#include "internal.h"

#include "glove/container/seccomp.h"

/* Pause between two attempts to remove the run cgroup (µs). */
#define TEARDOWN_RETRY_USEC (5 * 1000ULL)

enum phase {
        PHASE_SPAWNING,   /* PID 1 builds the perimeter */
        PHASE_READY,      /* waiting for release */
        PHASE_RUNNING,
        PHASE_DRAINING,   /* PID 1 reaped; output still flowing */
        PHASE_TEARDOWN,   /* cgroup being removed */
        PHASE_DONE,       /* ops.exited called */
};

struct glove_session {
        sd_event *loop;
        struct glove_session_ops ops;
        void *userdata;
        enum phase phase;
        struct glove_session_limits limits;

        struct glove_sandbox_config cfg;       /* kept until spawn_finish answered */
        struct glove_mount_plan *plan;         /* cfg.mounts, owned */
        struct glove_sandbox sb;
        bool reaped;
        struct glove_env env;                  /* the agent's environment, owned */
        struct glove_terminal *term;
        struct glove_session_egress egress;
        struct glove_session_mcp mcp;
        struct glove_session_confine confine;
        struct glove_cgroup *cg;               /* NULL without a delegated cgroup */
        uint64_t nofile;                       /* the agent's RLIMIT_NOFILE */

        sd_event_source *report_src, *child_src, *poll_timer, *drain_timer, *stop_timer, *teardown_timer, *advance_timer;
        uint64_t start_us;                     /* at release */
        uint64_t teardown_deadline_us;
        struct rusage rusage;                  /* PID 1's tree, when reaped here */
        bool have_rusage;
        /* The cgroup's figures read once PID 1 was reaped: with the PID
         * namespace gone nothing charged to the session runs any more, so
         * they are final, and the cgroup may be removed right then. */
        struct glove_cgroup_stats final_stats;
        bool have_final_stats;
        /* The limit watch's last reading (glove_session_usage). */
        struct glove_cgroup_stats last_stats;
        bool have_last_stats;

        struct glove_session_outcome out;
};

static void advance(struct glove_session *s);

/* A whole number from a small /proc file; 0 or -errno. */
static int read_u64_file(const char *path, uint64_t *out) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = glove_file_read_bounded(AT_FDCWD, path, 0, 31, &buf, &n, NULL);
        if (r < 0)
                return r;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return glove_number_parse_u64(buf, 0, 0, UINT64_MAX, out) < 0 ? -EINVAL : 0;
}

static int env_copy(struct glove_env *env, char *const *envp) {
        size_t n = 0;
        while (envp && envp[n])
                n++;
        env->envp = calloc(n + 1, sizeof(char *));
        if (!env->envp)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (!(env->envp[i] = strdup(envp[i])))
                        return -ENOMEM;
                env->count++;
        }
        return 0;
}

/* Records the first breach and kills the whole tree: PID 1's death tears
 * the PID namespace down; the cgroup kill takes anything else charged to
 * the session. */
static void breach(struct glove_session *s, enum glove_cgroup_limit limit) {
        if (s->out.limit != GLOVE_CGROUP_LIMIT_NONE)
                return;
        s->out.limit = limit;
        (void)glove_sandbox_signal(&s->sb, SIGKILL);
        if (s->cg)
                (void)glove_cgroup_kill_once(s->cg, NULL);
}

static void on_output_breach(void *userdata) {
        breach(userdata, GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT);
}

static int on_advance_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        advance(userdata);
        return 0;
}

/* The terminal calls back from inside its own event handlers: the session
 * moves on from a fresh event, so that ops.exited (which may free the
 * session and its terminal) never runs inside the terminal's code. */
static void on_output_ended(void *userdata) {
        struct glove_session *s = userdata;
        if (s->phase != PHASE_DRAINING)
                return;
        if (s->advance_timer) {
                (void)sd_event_source_set_time_relative(s->advance_timer, 0);
                (void)sd_event_source_set_enabled(s->advance_timer, SD_EVENT_ONESHOT);
        } else if (sd_event_add_time_relative(s->loop, &s->advance_timer, CLOCK_MONOTONIC, 0, 1, on_advance_timer, s) < 0) {
                s->advance_timer = NULL; /* the drain timer still moves it on */
        }
}

static int on_poll(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)usec;
        struct glove_session *s = userdata;
        uint64_t next_us = GLOVE_SESSION_POLL_MS * 1000ULL;
        if (s->phase != PHASE_RUNNING)
                return sd_event_source_set_enabled(src, SD_EVENT_OFF);
        if (s->out.limit == GLOVE_CGROUP_LIMIT_NONE && s->limits.wall_time_ms) {
                uint64_t elapsed_ms = (glove_time_monotonic_us() - s->start_us) / 1000;
                if (elapsed_ms >= s->limits.wall_time_ms)
                        breach(s, GLOVE_CGROUP_LIMIT_WALL_TIME);
                else if ((s->limits.wall_time_ms - elapsed_ms) * 1000 < next_us)
                        next_us = (s->limits.wall_time_ms - elapsed_ms) * 1000 + 1000;
        }
        if (s->out.limit == GLOVE_CGROUP_LIMIT_NONE && s->cg) {
                struct glove_cgroup_stats st;
                if (glove_cgroup_stats(s->cg, &st, NULL) == 0) {
                        s->last_stats = st;
                        s->have_last_stats = true;
                        enum glove_cgroup_limit b = glove_cgroup_breach(s->cg, &st);
                        if (b != GLOVE_CGROUP_LIMIT_NONE)
                                breach(s, b);
                }
        }
        if (atomic_load(&s->egress.audit_failed))
                s->out.audit_failed = true;
        if (atomic_load(&s->egress.audit_full))
                s->out.audit_full = true;
        (void)sd_event_source_set_time_relative(src, next_us);
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

/* One removal attempt: rmdir(2) removes an empty cgroup only, so a cgroup
 * that still holds a process is not removed; that one is killed, and the
 * caller tries again later. 0 when removed (or given up with the error
 * recorded), -EAGAIN when still busy. */
static int remove_cgroup_once(struct glove_session *s, struct glove_error *e) {
        int r = glove_cgroup_try_destroy(s->cg, e);
        if (r == -EAGAIN) {
                (void)glove_cgroup_kill_once(s->cg, NULL);
                return -EAGAIN;
        }
        s->cg = NULL; /* freed by try_destroy, removed or not */
        if (r < 0 && !glove_error_is_set(&s->out.error))
                s->out.error = *e;
        return 0;
}

/* Removes the cgroup (its usage was read before); 0 when done, -EAGAIN to
 * retry. */
static int teardown_cgroup(struct glove_session *s) {
        if (!s->cg)
                return 0;
        struct glove_error e = {0};
        int r = glove_cgroup_try_destroy(s->cg, &e);
        if (r == 0) {
                s->cg = NULL;
                return 0;
        }
        if (r == -EAGAIN)
                (void)glove_cgroup_kill_once(s->cg, NULL);
        if (r == -EAGAIN && glove_time_monotonic_us() < s->teardown_deadline_us)
                return -EAGAIN;
        if (r == -EAGAIN)
                glove_error_set(&e, EBUSY, "cgroup.busy", "the run cgroup %s still holds processes after %d ms",
                                glove_cgroup_path(s->cg, 0), GLOVE_SESSION_TEARDOWN_MS);
        if (!glove_error_is_set(&s->out.error))
                s->out.error = e;
        /* Give up on it (the next run's sweep removes an empty leftover);
         * try_destroy freed it already unless it answered -EAGAIN. */
        if (r == -EAGAIN)
                glove_cgroup_abandon(s->cg);
        s->cg = NULL;
        return 0;
}

/* CPU time of PID 1's tree from its rusage (ms). */
static uint64_t rusage_cpu_ms(const struct rusage *ru) {
        return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000 +
               (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000;
}

/* The outcome classifier (docs/limits.md, "Which limit ended a run"): the
 * one rule, for every caller of the engine (glove exec, glove run and its
 * contained upstreams, gloved's managed sessions), that says which limit,
 * if any, ended the run. st: the cgroup's figures read at the reap, or NULL
 * without them; cpu_ms: the run's CPU time from st, else from PID 1's
 * rusage. A run counts as ended by a limit when
 *  - Glove recorded the breach (the limit watch, the wall clock, the
 *    terminal's output count): s->out.limit is already set and is kept;
 *  - the kernel enforced a limit on Glove's behalf: an OOM kill in the run
 *    cgroup ("memory"), a fork refused at pids.max ("pids");
 *  - the agent died of SIGXCPU or SIGKILL, the signals of the per-process
 *    RLIMIT_CPU backstop (soft and hard limit), with the run's CPU time at
 *    its limit (within GLOVE_SESSION_CPU_SLACK_PERCENT), and not while Glove
 *    was stopping it ("cpu_time").
 * An agent that ended on its own (any exit code, any other signal) was not
 * stopped by the CPU-time limit, whatever its usage. */
static enum glove_cgroup_limit classify_limit(const struct glove_session *s, const struct glove_cgroup_stats *st,
                                              uint64_t cpu_ms) {
        const struct glove_session_outcome *o = &s->out;
        if (o->limit != GLOVE_CGROUP_LIMIT_NONE)
                return o->limit;
        if (st && st->oom_kills > 0)
                return GLOVE_CGROUP_LIMIT_MEMORY;
        if (st && st->pids_max_events > 0)
                return GLOVE_CGROUP_LIMIT_PIDS;
        bool backstop_signal = o->kind == GLOVE_SESSION_SIGNALED && (o->value == SIGXCPU || o->value == SIGKILL);
        if (backstop_signal && !o->stopped && s->limits.cpu_time_ms &&
            cpu_ms * 100 >= s->limits.cpu_time_ms * (100 - GLOVE_SESSION_CPU_SLACK_PERCENT))
                return GLOVE_CGROUP_LIMIT_CPU_TIME;
        return GLOVE_CGROUP_LIMIT_NONE;
}

/* Classifies the ended run (classify_limit) from st (NULL: from PID 1's
 * rusage). A run that never started has no limit to report; one whose setup
 * the kernel stopped for memory or pids does (the setup is charged to the
 * run: docs/limits.md). */
static void classify(struct glove_session *s, const struct glove_cgroup_stats *st) {
        uint64_t cpu_ms = st ? st->cpu_usage_ns / 1000000 : s->have_rusage ? rusage_cpu_ms(&s->rusage) : 0;
        if (s->out.released || s->out.kind == GLOVE_SESSION_SETUP_FAILED)
                s->out.limit = classify_limit(s, st, cpu_ms);
}

static void final_usage(struct glove_session *s) {
        struct glove_session_outcome *o = &s->out;
        o->output_bytes = s->term ? glove_terminal_output_bytes(s->term) : 0;
        struct glove_cgroup_stats cs;
        if (s->have_final_stats) {
                /* Read when PID 1 was reaped, and classified then. */
                o->usage_from_cgroup = true;
                o->cpu_time_ms = s->final_stats.cpu_usage_ns / 1000000;
                o->peak_memory_bytes = s->final_stats.memory_peak_bytes;
        } else if (s->cg && glove_cgroup_stats(s->cg, &cs, NULL) == 0) {
                o->usage_from_cgroup = true;
                o->cpu_time_ms = cs.cpu_usage_ns / 1000000;
                o->peak_memory_bytes = cs.memory_peak_bytes;
                classify(s, &cs);
        } else if (s->have_rusage) {
                o->cpu_time_ms = rusage_cpu_ms(&s->rusage);
                o->peak_memory_bytes = (uint64_t)s->rusage.ru_maxrss * 1024;
        }
}

static int on_teardown_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        advance(userdata);
        return 0;
}

static int on_drain_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        struct glove_session *s = userdata;
        if (s->phase == PHASE_DRAINING) {
                s->out.output_cut = !glove_terminal_output_done(s->term);
                glove_terminal_close(s->term);
                if (s->phase == PHASE_DRAINING)
                        advance(s);
        }
        return 0;
}

static void release_sources(struct glove_session *s) {
        s->report_src = sd_event_source_disable_unref(s->report_src);
        s->child_src = sd_event_source_disable_unref(s->child_src);
        s->poll_timer = sd_event_source_disable_unref(s->poll_timer);
        s->drain_timer = sd_event_source_disable_unref(s->drain_timer);
        s->stop_timer = sd_event_source_disable_unref(s->stop_timer);
        s->teardown_timer = sd_event_source_disable_unref(s->teardown_timer);
        s->advance_timer = sd_event_source_disable_unref(s->advance_timer);
}

/* Moves the session on after PID 1 ended: drain, teardown, done. */
static void advance(struct glove_session *s) {
        if (s->phase == PHASE_DRAINING) {
                if (!glove_terminal_output_done(s->term) && !s->drain_timer) {
                        int r = sd_event_add_time_relative(s->loop, &s->drain_timer, CLOCK_MONOTONIC,
                                                           GLOVE_SESSION_DRAIN_MS * 1000ULL, 1000, on_drain_timer, s);
                        if (r >= 0)
                                return;
                        glove_terminal_close(s->term);
                }
                if (!glove_terminal_output_done(s->term))
                        return;
                s->drain_timer = sd_event_source_disable_unref(s->drain_timer);
                s->phase = PHASE_TEARDOWN;
                glove_session_egress_stop(&s->egress);
                if (atomic_load(&s->egress.audit_failed))
                        s->out.audit_failed = true;
                if (atomic_load(&s->egress.audit_full))
                        s->out.audit_full = true;
                final_usage(s);
                s->teardown_deadline_us = glove_time_monotonic_us() + GLOVE_SESSION_TEARDOWN_MS * 1000ULL;
        }
        if (s->phase == PHASE_TEARDOWN) {
                if (teardown_cgroup(s) == -EAGAIN) {
                        s->teardown_timer = sd_event_source_disable_unref(s->teardown_timer);
                        if (sd_event_add_time_relative(s->loop, &s->teardown_timer, CLOCK_MONOTONIC, TEARDOWN_RETRY_USEC, 1000,
                                                       on_teardown_timer, s) >= 0)
                                return;
                        s->teardown_deadline_us = 0; /* no timer: one last try, then give up */
                        (void)teardown_cgroup(s);
                }
                release_sources(s);
                glove_sandbox_destroy(&s->sb); /* PID 1 is reaped: closes descriptors only */
                s->phase = PHASE_DONE;
                s->ops.exited(s, &s->out, s->userdata);
        }
}

static void outcome_from_sandbox(struct glove_session *s, const siginfo_t *si) {
        struct glove_sandbox_outcome so;
        glove_sandbox_collect(&s->sb, si, &so);
        s->out.sandbox = so;
        s->out.disk_full = so.disk_full;
        switch (so.kind) {
        case GLOVE_SANDBOX_EXITED:
                s->out.kind = GLOVE_SESSION_EXITED;
                break;
        case GLOVE_SANDBOX_SIGNALED:
                s->out.kind = GLOVE_SESSION_SIGNALED;
                break;
        case GLOVE_SANDBOX_EXEC_FAILED:
                s->out.kind = GLOVE_SESSION_EXEC_FAILED;
                break;
        default:
                s->out.kind = GLOVE_SESSION_LOST;
                break;
        }
        s->out.value = so.value;
}

/* The setup (perimeter, tree copies into tmpfs, HOME's seed) is charged to
 * the run: when the kernel stopped it at a limit, the error names that
 * limit instead of the step it cut short. */
static void setup_limit_error(struct glove_session *s) {
        const char *name = glove_cgroup_limit_name(s->out.limit);
        uint64_t value = s->out.limit == GLOVE_CGROUP_LIMIT_MEMORY ? s->limits.memory_bytes : s->limits.pids;
        glove_error_clear(&s->out.error); /* the step it cut short is not the cause */
        glove_error_set(&s->out.error, s->out.limit == GLOVE_CGROUP_LIMIT_MEMORY ? ENOMEM : EAGAIN,
                        s->out.limit == GLOVE_CGROUP_LIMIT_MEMORY ? "limits.memory" : "limits.pids",
                        "the sandbox's setup (its perimeter, the trees copied into it, HOME's seed) went past the "
                        "run's %s limit (%llu %s) and was stopped before the agent started; raise the limit or copy less",
                        name, (unsigned long long)value, s->out.limit == GLOVE_CGROUP_LIMIT_MEMORY ? "bytes" : "tasks");
}

/* PID 1's pidfd is readable once it exited: reap it here, with its tree's
 * rusage (RUSAGE_CHILDREN would mix every session of the process). An io
 * source on the pidfd instead of a child source: no SIGCHLD mask needed. */
static int on_child(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)revents;
        struct glove_session *s = userdata;
        siginfo_t reaped = {0};
        if (syscall(SYS_waitid, P_PIDFD, fd, &reaped, WEXITED | WNOHANG, &s->rusage) < 0) {
                if (errno == EINTR || errno == EAGAIN)
                        return 0;
                /* Reaped elsewhere (a caller's waitpid(-1)): the outcome
                 * still comes from the report. */
                memset(&reaped, 0, sizeof(reaped));
                reaped.si_code = CLD_KILLED;
                reaped.si_status = SIGKILL;
        } else if (reaped.si_pid == 0) {
                return 0; /* not yet */
        } else {
                s->have_rusage = true;
        }
        s->reaped = true;
        if (s->start_us)
                s->out.wall_time_ms = (glove_time_monotonic_us() - s->start_us) / 1000;
        s->child_src = sd_event_source_disable_unref(s->child_src);
        s->poll_timer = sd_event_source_disable_unref(s->poll_timer);
        s->stop_timer = sd_event_source_disable_unref(s->stop_timer);
        if (s->phase == PHASE_SPAWNING) {
                /* Died while building the perimeter: its report says why. */
                struct glove_error e = {0};
                int r = glove_sandbox_spawn_finish(&s->sb, &e);
                if (r >= 0 || r == -EAGAIN)
                        glove_error_set(&e, EPIPE, "sandbox.setup", "sandbox child exited during setup without saying why");
                s->out.kind = GLOVE_SESSION_SETUP_FAILED;
                s->out.error = e;
                s->report_src = sd_event_source_disable_unref(s->report_src);
                s->sb.pid = -1;
        } else if (s->out.kind == GLOVE_SESSION_SETUP_FAILED) {
                s->sb.pid = -1; /* failed after the report (terminal, relay): keep that error */
        } else {
                outcome_from_sandbox(s, &reaped);
        }
        if (atomic_load(&s->egress.audit_failed))
                s->out.audit_failed = true;
        if (atomic_load(&s->egress.audit_full))
                s->out.audit_full = true;
        /* The final figures, and the outcome classified at the reap from
         * them (or from the rusage without a cgroup). */
        if (s->cg && glove_cgroup_stats(s->cg, &s->final_stats, NULL) == 0)
                s->have_final_stats = true;
        if (s->have_final_stats || !s->cg)
                classify(s, s->have_final_stats ? &s->final_stats : NULL);
        if (s->out.kind == GLOVE_SESSION_SETUP_FAILED && s->out.limit != GLOVE_CGROUP_LIMIT_NONE)
                setup_limit_error(s);
        if (s->cg) {
                /* Whatever PID 1 left in the cgroup: the cgroup goes now when
                 * it is empty (it normally is: the PID namespace died with
                 * PID 1), else what is left is killed and teardown retries. */
                struct glove_error e = {0};
                (void)remove_cgroup_once(s, &e);
        }
        s->phase = PHASE_DRAINING;
        if (!s->out.released)
                glove_terminal_close(s->term); /* the agent never ran: nothing to drain */
        advance(s);
        return 0;
}

static int on_report(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)fd;
        (void)revents;
        struct glove_session *s = userdata;
        struct glove_error e = {0};
        int r = glove_sandbox_spawn_finish(&s->sb, &e);
        if (r == -EAGAIN)
                return 0;
        s->report_src = sd_event_source_disable_unref(s->report_src);
        (void)src;
        if (r < 0) {
                /* PID 1 was killed by spawn_finish; on_child ends the session. */
                s->out.kind = GLOVE_SESSION_SETUP_FAILED;
                s->out.error = e;
                s->phase = PHASE_READY; /* not SPAWNING: on_child must not read the report again */
                s->out.released = false;
                return 0;
        }
        r = glove_terminal_start(s->term, s->loop, &e);
        if (r >= 0)
                r = glove_session_egress_start(&s->egress, &s->sb, &e);
        if (r < 0) {
                s->out.kind = GLOVE_SESSION_SETUP_FAILED;
                s->out.error = e;
                s->phase = PHASE_READY;
                glove_sandbox_kill(&s->sb);
                return 0;
        }
        s->phase = PHASE_READY;
        s->ops.ready(s, s->userdata);
        return 0;
}

static void session_free_now(struct glove_session *s) {
        release_sources(s);
        glove_sandbox_destroy(&s->sb); /* unreaped PID 1: killed and reaped, the only blocking path */
        glove_session_egress_stop(&s->egress);
        if (s->cg) {
                (void)glove_cgroup_destroy(s->cg, NULL);
                s->cg = NULL;
        }
        glove_terminal_free(s->term);
        glove_env_free(&s->env);
        glove_mount_plan_free(s->plan);
        free(s);
}

static int attach_after_clone(pid_t pid, void *ctx, struct glove_error *err) {
        struct glove_session *s = ctx;
        return glove_cgroup_attach(s->cg, pid, err);
}

/* The agent's RLIMIT_NOFILE: asked (or the default), never above what this
 * process may have itself. */
static uint64_t session_nofile(uint64_t asked) {
        uint64_t n = asked ? asked : GLOVE_SESSION_DEFAULT_NOFILE;
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && n > rl.rlim_max)
                n = rl.rlim_max;
        return n;
}

static int make_cgroup(struct glove_session *s, const struct glove_session_desc *d, struct glove_sandbox_config *cfg,
                       struct glove_error *err) {
        struct glove_cgroup_limits cl = {d->limits.memory_bytes, d->limits.pids, d->limits.cpu_time_ms};
        struct glove_error cerr = {0};
        int r = glove_cgroup_create_pinned(&cl, &d->cgroup_pin, &s->cg, &cerr);
        if (r < 0) {
                s->cg = NULL;
                bool absent = cerr.code && (strcmp(cerr.code, "cgroup.not_delegated") == 0 ||
                                            strcmp(cerr.code, "cgroup.unavailable") == 0);
                if (!absent || d->cgroup_policy == GLOVE_SESSION_CGROUP_REQUIRED) {
                        if (err)
                                *err = cerr;
                        return r;
                }
                if (s->ops.warning) {
                        struct glove_error w = {0};
                        glove_error_set(&w, cerr.errnum, "limits.degraded",
                                        "no delegated cgroup for uid %u: memory and pids not limited, CPU time per process only "
                                        "(docs/limits.md)",
                                        (unsigned)geteuid());
                        s->ops.warning(s, &w, s->userdata);
                }
                /* No pids.max: the sandbox's tasks stop at RLIMIT_NPROC
                 * instead (not for a root invoker, whom the kernel exempts). */
                cfg->nproc = d->limits.pids;
                return 0;
        }
        /* The limit watch enforces CPU time on the whole cgroup: the
         * per-process RLIMIT_CPU backstop sits above it, so that it never
         * races the watch (without a cgroup it stays at the limit and is
         * the enforcement; docs/limits.md). */
        if (cfg->cpu_time_ms)
                cfg->cpu_time_ms += GLOVE_SESSION_CPU_BACKSTOP_MARGIN_MS;
        int fd = glove_cgroup_clone_fd(s->cg);
        if (fd >= 0) {
                cfg->cgroup_fd = fd;
        } else {
                cfg->cgroupns_after_release = true;
                cfg->after_clone = attach_after_clone;
                cfg->after_clone_ctx = s;
        }
        return 0;
}

int glove_session_spawn(const struct glove_session_desc *d, const struct glove_session_ops *ops, void *userdata,
                        struct glove_session **out, struct glove_error *err) {
        *out = NULL;
        struct glove_session *s = calloc(1, sizeof(*s));
        if (!s)
                return glove_error_set(err, ENOMEM, "session.alloc", "out of memory");
        s->ops = *ops;
        s->userdata = userdata;
        s->limits = d->limits;
        s->sb = (struct glove_sandbox)GLOVE_SANDBOX_INIT;
        s->out.limit = GLOVE_CGROUP_LIMIT_NONE;
        glove_session_egress_init(&s->egress);
        if (env_copy(&s->env, d->envp) < 0) {
                session_free_now(s);
                return glove_error_set(err, ENOMEM, "session.alloc", "out of memory");
        }
        if (d->has_inherit_fd && (d->egress || d->mcp_listen)) {
                session_free_now(s);
                return glove_error_set(err, EINVAL, "session.inherit_offline",
                                       "an inherited stream descriptor is offline only (no egress, no MCP listener)");
        }
        s->cfg = (struct glove_sandbox_config){
                .argv = d->argv,
                .envp = s->env.envp,
                .seccomp = d->seccomp,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .pid1_fd = -1,
                .cgroup_fd = -1,
                .cpu_time_ms = d->limits.cpu_time_ms,
                .file_size_max = d->file_size_max,
                .nofile = s->nofile = session_nofile(d->nofile),
                .parent_death_kill = d->parent_death_kill,
                .has_inherit_fd = d->has_inherit_fd,
                .inherit_fd = d->has_inherit_fd ? d->inherit_fd : -1,
        };
        /* Half of the invoker's per-user inotify limits for the sandbox's
         * user namespace (the counters are shared with the invoker's own
         * processes). */
        uint64_t v;
        struct glove_mount_plan_params mp = {
                .uid = glove_mount_plan_inside_id(geteuid()),
                .gid = glove_mount_plan_inside_id(getegid()),
                .disk_bytes = d->limits.disk_bytes,
                .mask_root_only = geteuid() == 0,
                /* Only with egress can the agent make TCP sockets at all. */
                .tcp_buffer_max = d->egress || d->mcp_listen ? GLOVE_SESSION_TCP_BUFFER_MAX : 0,
        };
        if (read_u64_file("/proc/sys/user/max_inotify_instances", &v) == 0 && v >= 2)
                mp.inotify_instances = (uint32_t)(v / 2 > UINT32_MAX ? UINT32_MAX : v / 2);
        if (read_u64_file("/proc/sys/user/max_inotify_watches", &v) == 0 && v >= 2)
                mp.inotify_watches = (uint32_t)(v / 2 > UINT32_MAX ? UINT32_MAX : v / 2);
        int r = glove_mount_plan_new(&mp, &s->plan, err);
        if (r >= 0 && d->grants)
                r = glove_mount_plan_add_grants(s->plan, d->grants, err);
        if (r >= 0 && d->add_mounts)
                r = d->add_mounts(s->plan, d->add_mounts_ctx, err);
        if (r >= 0 && d->cwd)
                r = glove_mount_plan_set_cwd(s->plan, d->cwd, err);
        s->cfg.mounts = s->plan;

        if (r >= 0 && d->egress && d->mcp_listen && d->mcp_listen_http) {
                /* The relay hands the endpoint's requests to it over the
                 * listener's own channel (its own copy of the sending end). */
                s->egress.endpoint_fd = fcntl(d->mcp_listen_fd, F_DUPFD_CLOEXEC, 3);
                if (s->egress.endpoint_fd < 0)
                        r = glove_error_set(err, errno, "egress.channel", "dup: %s", strerror(errno));
                s->egress.endpoint_port = d->mcp_listen_port;
        }
        if (r >= 0)
                r = glove_session_egress_setup(&s->egress, d->egress, d->audit, &s->env, &s->cfg, err);
        if (r >= 0 && (s->egress.enabled || d->mcp_listen))
                s->cfg.seccomp = d->seccomp_egress ? d->seccomp_egress : &glove_seccomp_prebuilt_egress;
        if (r >= 0 && d->mcp_listen)
                glove_session_mcp_setup(&s->mcp, d->mcp_listen_fd, d->mcp_listen_port, &s->cfg);
        if (r >= 0 && (s->egress.enabled || d->mcp_listen)) {
                /* Every TCP connection in the namespace ends at one of Glove's
                 * listeners (docs/limits.md, host-wide resources). */
                uint16_t ports[2];
                size_t n = 0;
                if (s->egress.enabled)
                        ports[n++] = GLOVE_SESSION_EGRESS_PORT;
                if (d->mcp_listen)
                        ports[n++] = d->mcp_listen_port;
                glove_session_confine_setup(&s->confine, ports, n, &s->cfg);
        }
        s->egress.audit_max = d->audit_max_bytes;
        s->egress.upstream = d->egress_upstream;
        s->egress.report = d->egress_report;
        if (r >= 0)
                r = make_cgroup(s, d, &s->cfg, err);
        if (r >= 0) {
                struct glove_terminal_config tc = {
                        .mode = d->terminal,
                        .output_limit = d->limits.terminal_output_bytes,
                        .transcript_bytes = d->transcript_bytes,
                        .input_closed = d->input_closed,
                        .modes = d->tty_modes,
                        .rows = d->rows,
                        .cols = d->cols,
                        .breach = on_output_breach,
                        .output_ended = on_output_ended,
                        .userdata = s,
                };
                r = glove_terminal_new(&tc, &s->term, err);
        }
        if (r >= 0) {
                int fds[3];
                glove_terminal_child_fds(s->term, fds);
                if (d->terminal == GLOVE_TERMINAL_STDERR) {
                        fds[0] = d->channel_stdin_fd;
                        fds[1] = d->channel_stdout_fd;
                }
                s->cfg.stdin_fd = fds[0];
                s->cfg.stdout_fd = fds[1];
                s->cfg.stderr_fd = fds[2];
                s->cfg.controlling_tty = glove_terminal_is_pty(s->term);
                r = glove_sandbox_spawn_start(&s->cfg, &s->sb, err);
        }
        if (r < 0) {
                session_free_now(s);
                return r;
        }
        s->phase = PHASE_SPAWNING;
        *out = s;
        return 0;
}

int glove_session_attach(struct glove_session *s, sd_event *loop, struct glove_error *err) {
        if (s->loop)
                return glove_error_set(err, EALREADY, "session.event_loop", "the session is already on a loop");
        s->loop = loop;
        int r = sd_event_add_io(loop, &s->child_src, s->sb.pidfd, EPOLLIN, on_child, s);
        if (r >= 0)
                r = sd_event_add_io(loop, &s->report_src, s->sb.report_fd, EPOLLIN, on_report, s);
        if (r < 0)
                return glove_error_set(err, -r, "session.event_loop", "event loop: %s", strerror(-r));
        return 0;
}

int glove_session_start(sd_event *loop, const struct glove_session_desc *d, const struct glove_session_ops *ops, void *userdata,
                        struct glove_session **out, struct glove_error *err) {
        int r = glove_session_spawn(d, ops, userdata, out, err);
        if (r >= 0 && (r = glove_session_attach(*out, loop, err)) < 0) {
                glove_session_free(*out);
                *out = NULL;
        }
        return r;
}

int glove_session_release(struct glove_session *s, struct glove_error *err) {
        if (s->out.released)
                return -EALREADY;
        if (s->phase != PHASE_READY || s->out.kind == GLOVE_SESSION_SETUP_FAILED)
                return glove_error_set(err, EAGAIN, "sandbox.release", "the sandbox is not ready to be released");
        s->start_us = glove_time_monotonic_us();
        int r = glove_sandbox_release(&s->sb, err);
        if (r < 0)
                return r;
        s->out.released = true;
        s->phase = PHASE_RUNNING;
        /* The first reading comes at the wall-time limit when that is
         * sooner than the poll interval (a one-shot deadline, not a tick). */
        uint64_t first_us = GLOVE_SESSION_POLL_MS * 1000ULL;
        if (s->limits.wall_time_ms && s->limits.wall_time_ms * 1000ULL < first_us)
                first_us = s->limits.wall_time_ms * 1000ULL;
        r = sd_event_add_time_relative(s->loop, &s->poll_timer, CLOCK_MONOTONIC, first_us, 1000, on_poll, s);
        if (r < 0) {
                glove_sandbox_kill(&s->sb); /* no limit watch: never run unwatched */
                return glove_error_set(err, -r, "session.event_loop", "event loop: %s", strerror(-r));
        }
        return 0;
}

int glove_session_signal(struct glove_session *s, int sig) {
        if (s->reaped || s->phase > PHASE_RUNNING)
                return -ESRCH;
        return glove_sandbox_signal(&s->sb, sig);
}

static int on_stop_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        struct glove_session *s = userdata;
        if (!s->reaped) {
                glove_sandbox_kill(&s->sb);
                if (s->cg)
                        (void)glove_cgroup_kill_once(s->cg, NULL);
        }
        return 0;
}

void glove_session_stop(struct glove_session *s, uint64_t grace_ms) {
        if (s->reaped || s->out.stopped || s->phase > PHASE_RUNNING)
                return;
        s->out.stopped = true;
        if (s->phase != PHASE_RUNNING || grace_ms == 0) {
                glove_sandbox_kill(&s->sb);
                if (s->cg)
                        (void)glove_cgroup_kill_once(s->cg, NULL);
                return;
        }
        (void)glove_sandbox_signal(&s->sb, SIGTERM);
        if (sd_event_add_time_relative(s->loop, &s->stop_timer, CLOCK_MONOTONIC, grace_ms * 1000ULL, 1000, on_stop_timer, s) < 0)
                glove_sandbox_kill(&s->sb);
}

struct glove_terminal *glove_session_terminal(struct glove_session *s) {
        return s->term;
}

const struct glove_sandbox *glove_session_sandbox(const struct glove_session *s) {
        return s->phase >= PHASE_READY && s->phase < PHASE_DONE ? &s->sb : NULL;
}

void glove_session_enforced(const struct glove_session *s, struct glove_session_enforced *out) {
        out->cgroup = s->cg != NULL;
        out->nofile = s->nofile;
}

char *const *glove_session_environment(const struct glove_session *s) {
        return s->env.envp;
}

void glove_session_usage(const struct glove_session *s, struct glove_session_usage *out) {
        *out = (struct glove_session_usage){ 0 };
        if (s->phase >= PHASE_TEARDOWN) {
                /* final_usage() filled the outcome's figures. */
                out->cpu_time_ms = s->out.cpu_time_ms;
                out->peak_memory_bytes = s->out.peak_memory_bytes;
                out->output_bytes = s->out.output_bytes;
                out->wall_time_ms = s->out.wall_time_ms;
                return;
        }
        const struct glove_cgroup_stats *st = s->have_final_stats  ? &s->final_stats
                                              : s->have_last_stats ? &s->last_stats
                                                                   : NULL;
        if (st) {
                out->cpu_time_ms = st->cpu_usage_ns / 1000000;
                out->peak_memory_bytes = st->memory_peak_bytes;
        }
        out->output_bytes = s->term ? glove_terminal_output_bytes(s->term) : 0;
        if (s->reaped)
                out->wall_time_ms = s->out.wall_time_ms;
        else if (s->out.released)
                out->wall_time_ms = (glove_time_monotonic_us() - s->start_us) / 1000;
}

void glove_session_free(struct glove_session *s) {
        if (!s)
                return;
        session_free_now(s);
}

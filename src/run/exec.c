/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/run/exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/audit/log.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/time.h"
#include "glove/container/sandbox.h"
#include "glove/container/seccomp.h"
#include "glove/run/exec_options.h"
#include "exec_records.h"
#include "drain.h"
#include "egress.h"
#include "launch.h"
#include "run_limits.h"

/*
 * Waits until PID 1 of the sandbox has exited, forwarding the signals of
 * glove_launch_forwarded_signals to the agent and checking the limits every
 * GLOVE_LIMITS_POLL_MS meanwhile. Glove's main thread has no I/O to
 * multiplex (the drain threads do blocking copies), so it waits with
 * sigtimedwait(2) on the signals it blocked before clone rather than running
 * an event loop: loading libsystemd alone costs about 0.6 ms per launch on
 * the reference machine, a tenth of the whole start-up (bench/). glove run
 * and gloved, which multiplex I/O, use sd-event.
 *
 * Fills *reaped with PID 1's siginfo. Returns 0 or -errno.
 */
static int wait_for_sandbox(struct glove_sandbox *sb, struct glove_watch *w, struct glove_drain *d, const sigset_t *mask,
                            siginfo_t *reaped, struct glove_error *err) {
        int next_ms = GLOVE_LIMITS_POLL_MS;
        for (;;) {
                siginfo_t si;
                struct timespec timeout = {next_ms / 1000, (long)(next_ms % 1000) * 1000000L};
                int sig = sigtimedwait(mask, &si, &timeout);
                if (sig < 0) {
                        if (errno == EAGAIN) {
                                next_ms = glove_watch_poll(w);
                                continue;
                        }
                        if (errno == EINTR)
                                continue;
                        return glove_error_set(err, errno, "exec.wait", "sigtimedwait: %s", strerror(errno));
                }
                if (sig == SIGWINCH && d->pty) {
                        glove_drain_resize(d); /* the kernel signals the agent */
                        continue;
                }
                if (sig != SIGCHLD) {
                        (void)glove_sandbox_signal(sb, sig);
                        continue;
                }
                memset(reaped, 0, sizeof(*reaped));
                if (waitid(P_PIDFD, (id_t)sb->pidfd, reaped, WEXITED | WNOHANG) < 0)
                        return glove_error_set(err, errno, "exec.wait", "waitid: %s", strerror(errno));
                if (reaped->si_pid != 0)
                        return 0;
        }
}

int glove_exec_main(int argc, char **argv) {
        struct glove_error err = {0};
        if (glove_fd_ensure_std() < 0)
                return GLOVE_EXIT_FAILURE;
        static struct glove_exec_options opts;
        if (glove_exec_parse(argc, argv, &opts, &err) < 0)
                return glove_launch_fail(&err);
        if (opts.help) {
                fputs(glove_exec_help, stdout);
                return 0;
        }
        static struct glove_launch l;
        if (glove_launch_prepare(&opts, &l, &err) < 0) {
                glove_launch_free(&l);
                return glove_launch_fail(&err);
        }
        /* Signals to forward and SIGCHLD are taken by sigwaitinfo; blocking
         * them before clone leaves no window where one is lost. */
        sigset_t mask;
        glove_launch_block_signals(&mask);

        struct glove_sandbox_config cfg = {
                .argv = opts.program,
                .envp = l.env.envp,
                .grants = &l.grants,
                .seccomp = &glove_seccomp_prebuilt,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .pid1_fd = -1,
                .parent_death_kill = true,
        };
        static struct glove_watch watch;
        static struct glove_drain drain;
        static struct glove_egress egress;
        glove_egress_init(&egress);
        struct glove_limits limits;
        glove_limits_resolve(&opts, &limits);
        glove_drain_init(&drain);
        struct glove_sandbox sb = {.pid = -1, .pidfd = -1, .report_fd = -1, .release_fd = -1};
        int status = GLOVE_EXIT_FAILURE;
        if (glove_egress_setup(&egress, &opts, &l.audit, &l.env, &cfg, &err) < 0 ||
            glove_watch_setup(&watch, &limits, &cfg, &err) < 0 ||
            glove_drain_setup(&drain, opts.tty || isatty(0), &watch, &cfg, &err) < 0 ||
            glove_sandbox_spawn(&cfg, &sb, &err) < 0)
                goto fail;
        if (glove_watch_attach(&watch, &sb, &err) < 0 || glove_drain_start(&drain, &err) < 0 ||
            glove_egress_start(&egress, &sb, &err) < 0) {
                glove_sandbox_destroy(&sb);
                goto fail;
        }
        if (l.audit.fd >= 0) {
                _cleanup_json_ json_t *launch = glove_exec_launch_fields(opts.program, &l.grants, &l.env, &sb);
                if (!launch)
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the launch record");
                if (!launch || glove_audit_append(&l.audit, "launch", launch, &err) < 0) {
                        glove_sandbox_destroy(&sb);
                        goto fail;
                }
        }
        watch.start_us = glove_time_monotonic_us();
        siginfo_t reaped;
        if (glove_sandbox_release(&sb, &err) < 0 || wait_for_sandbox(&sb, &watch, &drain, &mask, &reaped, &err) < 0) {
                glove_sandbox_destroy(&sb);
                goto fail;
        }
        struct glove_sandbox_outcome outcome;
        glove_sandbox_collect(&sb, &reaped, &outcome);
        glove_egress_stop(&egress);
        glove_drain_stop(&drain);
        if (atomic_load(&watch.breach) != GLOVE_CGROUP_LIMIT_NONE && glove_drain_mid_line(&drain))
                fputc('\n', stderr); /* the limit message starts on its own line */
        struct glove_run_status st;
        bool glove_failed = atomic_load(&egress.audit_failed);
        glove_watch_finish(&watch, &outcome, opts.program[0], !glove_failed, &st);
        glove_sandbox_destroy(&sb);
        status = st.exit_code;
        if (glove_failed) {
                glove_error_set(&err, EIO, "audit.append", "an egress record could not be appended; the agent was stopped");
                goto fail;
        }
        if (opts.status_json && glove_run_status_write(l.status_dirfd, l.status_name, &st, &err) < 0)
                goto fail;
        if (l.audit.fd >= 0) {
                _cleanup_json_ json_t *exitrec = glove_exec_exit_fields(&outcome, status, st.wall_time_ms);
                _cleanup_json_ json_t *stjson = glove_run_status_json(&st);
                if (!exitrec || !stjson)
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the exit record");
                else
                        json_object_update(exitrec, stjson);
                if (!exitrec || !stjson || glove_audit_append(&l.audit, "exit", exitrec, &err) < 0)
                        goto fail;
        }
        glove_launch_free(&l);
        return status;
fail:
        glove_egress_stop(&egress);
        glove_drain_stop(&drain);
        glove_watch_free(&watch);
        glove_launch_free(&l);
        return glove_launch_fail(&err);
}

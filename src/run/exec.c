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
#include "launch.h"

/*
 * Waits until PID 1 of the sandbox has exited, forwarding the signals of
 * glove_launch_forwarded_signals to the agent meanwhile. glove exec has
 * exactly two kinds of events and no I/O to multiplex, so it waits with
 * sigwaitinfo(2) on the signals it blocked before clone rather than running
 * an event loop: loading libsystemd alone costs about 0.6 ms per launch on
 * the reference machine, a tenth of the whole start-up (bench/). glove run
 * and gloved, which multiplex I/O, use sd-event.
 *
 * Fills *reaped with PID 1's siginfo. Returns 0 or -errno.
 */
static int wait_for_sandbox(struct glove_sandbox *sb, const sigset_t *mask, siginfo_t *reaped, struct glove_error *err) {
        for (;;) {
                siginfo_t si;
                int sig = sigwaitinfo(mask, &si);
                if (sig < 0) {
                        if (errno == EINTR)
                                continue;
                        return glove_error_set(err, errno, "exec.wait", "sigwaitinfo: %s", strerror(errno));
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
        };
        struct glove_sandbox sb;
        int status = GLOVE_EXIT_FAILURE;
        if (glove_sandbox_spawn(&cfg, &sb, &err) < 0)
                goto fail;
        if (l.audit.fd >= 0) {
                _cleanup_json_ json_t *launch = glove_exec_launch_fields(opts.program, &l.grants, &l.env, &sb);
                if (!launch)
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the launch record");
                if (!launch || glove_audit_append(&l.audit, "launch", launch, &err) < 0) {
                        glove_sandbox_destroy(&sb);
                        goto fail;
                }
        }
        uint64_t start_us = glove_time_monotonic_us();
        siginfo_t reaped;
        if (glove_sandbox_release(&sb, &err) < 0 || wait_for_sandbox(&sb, &mask, &reaped, &err) < 0) {
                glove_sandbox_destroy(&sb);
                goto fail;
        }
        struct glove_sandbox_outcome outcome;
        glove_sandbox_collect(&sb, &reaped, &outcome);
        uint64_t wall_ms = (glove_time_monotonic_us() - start_us) / 1000;
        glove_sandbox_destroy(&sb);

        status = glove_launch_outcome_status(&outcome, opts.program[0]);
        if (l.audit.fd >= 0) {
                _cleanup_json_ json_t *exitrec = glove_exec_exit_fields(&outcome, status, wall_ms);
                if (!exitrec)
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the exit record");
                if (!exitrec || glove_audit_append(&l.audit, "exit", exitrec, &err) < 0)
                        goto fail;
        }
        glove_launch_free(&l);
        return status;
fail:
        glove_launch_free(&l);
        return glove_launch_fail(&err);
}

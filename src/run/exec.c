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
#include "glove/container/environment.h"
#include "glove/container/grant.h"
#include "glove/container/sandbox.h"
#include "glove/container/seccomp.h"
#include "glove/run/exec_options.h"
#include "exec_records.h"

extern char **environ;

/* Signals forwarded to the agent (issue "glove exec", Lifecycle). */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static int fail(const struct glove_error *err) {
        fprintf(stderr, "glove: %s: %s\n", err->code ? err->code : "glove.error", err->message);
        return GLOVE_EXIT_FAILURE;
}

/*
 * Waits until PID 1 of the sandbox has exited, forwarding the signals of
 * forwarded_signals to the agent meanwhile. glove exec has exactly two kinds
 * of events and no I/O to multiplex, so it waits with sigwaitinfo(2) on the
 * signals it blocked before clone rather than running an event loop: loading
 * libsystemd alone costs about 0.6 ms per launch on the reference machine,
 * a tenth of the whole start-up (bench/). glove run and gloved, which
 * multiplex I/O, use sd-event.
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

/* Exit status and the line to print for the agent's outcome. */
static int outcome_status(const struct glove_sandbox_outcome *o, const char *program) {
        switch (o->kind) {
        case GLOVE_SANDBOX_EXITED:
                return o->value;
        case GLOVE_SANDBOX_SIGNALED:
                fprintf(stderr, "glove: agent.signal: %s was killed by signal %d (%s)\n", program, o->value, strsignal(o->value));
                return 128 + o->value;
        case GLOVE_SANDBOX_EXEC_FAILED:
                if (o->value == ENOENT) {
                        fprintf(stderr, "glove: exec.not_found: %s (not found in the sandbox's PATH or file system)\n", o->detail);
                        return GLOVE_EXIT_NOT_FOUND;
                }
                fprintf(stderr, "glove: exec.cannot_execute: %s\n", o->detail);
                return GLOVE_EXIT_CANNOT_EXECUTE;
        case GLOVE_SANDBOX_LOST:
        default:
                fprintf(stderr, "glove: sandbox.lost: %s\n", o->detail);
                return GLOVE_EXIT_FAILURE;
        }
}

int glove_exec_main(int argc, char **argv) {
        struct glove_error err = {0};
        if (glove_fd_ensure_std() < 0)
                return GLOVE_EXIT_FAILURE;
        static struct glove_exec_options opts;
        if (glove_exec_parse(argc, argv, &opts, &err) < 0)
                return fail(&err);
        if (opts.help) {
                fputs(glove_exec_help, stdout);
                return 0;
        }
        char cwd[4096];
        if (!getcwd(cwd, sizeof(cwd))) {
                glove_error_set(&err, errno, "exec.cwd", "cannot determine the working directory: %s", strerror(errno));
                return fail(&err);
        }

        static struct glove_grant_set grants;
        glove_grant_set_init(&grants);
        for (size_t i = 0; i < opts.n_grants; i++)
                if (glove_grant_set_add(&grants, opts.grants[i].path, opts.grants[i].mode, opts.grants[i].workspace, cwd, &err) < 0)
                        return fail(&err);

        _cleanup_(glove_env_free) struct glove_env env = {0};
        if (glove_env_build((const char *const *)environ, opts.env_names, opts.n_env, &env, &err) < 0)
                return fail(&err);

        _cleanup_(glove_audit_close) struct glove_audit_log audit = {.fd = -1};
        if (opts.audit_log) {
                if (glove_audit_open(opts.audit_log, cwd, &audit, &err) < 0)
                        return fail(&err);
                if (glove_grant_set_check_hidden(&grants, audit.path, audit.dev, audit.ino, &err) < 0)
                        return fail(&err);
        }

        /* Signals to forward and SIGCHLD are taken by the event loop; blocking
         * them before clone leaves no window where one is lost. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(forwarded_signals); i++)
                sigaddset(&mask, forwarded_signals[i]);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN); /* an over-limit audit append fails with EFBIG instead */

        struct glove_sandbox_config cfg = {
                .argv = opts.program,
                .envp = env.envp,
                .grants = &grants,
                .seccomp = &glove_seccomp_prebuilt,
                .stdin_fd = -1,
                .stdout_fd = -1,
        };
        struct glove_sandbox sb;
        if (glove_sandbox_spawn(&cfg, &sb, &err) < 0)
                return fail(&err);

        if (audit.fd >= 0) {
                _cleanup_json_ json_t *launch = glove_exec_launch_fields(opts.program, &grants, &env, &sb);
                if (!launch || glove_audit_append(&audit, "launch", launch, &err) < 0) {
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the launch record");
                        glove_sandbox_destroy(&sb);
                        return fail(&err);
                }
        }
        uint64_t start_us = glove_time_monotonic_us();
        if (glove_sandbox_release(&sb, &err) < 0) {
                glove_sandbox_destroy(&sb);
                return fail(&err);
        }
        siginfo_t reaped;
        int r = wait_for_sandbox(&sb, &mask, &reaped, &err);
        if (r < 0) {
                glove_sandbox_destroy(&sb);
                return fail(&err);
        }
        struct glove_sandbox_outcome outcome;
        glove_sandbox_collect(&sb, &reaped, &outcome);
        uint64_t wall_ms = (glove_time_monotonic_us() - start_us) / 1000;
        glove_sandbox_destroy(&sb);

        int status = outcome_status(&outcome, opts.program[0]);
        if (audit.fd >= 0) {
                _cleanup_json_ json_t *exitrec = glove_exec_exit_fields(&outcome, status, wall_ms);
                if (!exitrec)
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the exit record");
                if (!exitrec || glove_audit_append(&audit, "exit", exitrec, &err) < 0)
                        return fail(&err);
        }
        glove_grant_set_clear(&grants);
        return status;
}

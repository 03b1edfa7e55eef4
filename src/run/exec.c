/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/run/exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
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

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static int fail(const struct glove_error *err) {
        fprintf(stderr, "glove: %s: %s\n", err->code ? err->code : "glove.error", err->message);
        return GLOVE_EXIT_FAILURE;
}

struct exec_state {
        struct glove_sandbox sb;
        siginfo_t reaped;
        bool have_reaped;
};

static int on_forward(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void)s;
        struct exec_state *st = userdata;
        (void)glove_sandbox_signal(&st->sb, (int)si->ssi_signo);
        return 0;
}

static int on_child(sd_event_source *s, const siginfo_t *si, void *userdata) {
        struct exec_state *st = userdata;
        st->reaped = *si;
        st->have_reaped = true;
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void event_unrefp(sd_event **e) {
        if (*e)
                sd_event_unref(*e);
}

/* Runs the event loop until PID 1 of the sandbox has exited. */
static int wait_for_sandbox(struct exec_state *st, struct glove_error *err) {
        _cleanup_(event_unrefp) sd_event *e = NULL;
        int r = sd_event_new(&e);
        for (size_t i = 0; r >= 0 && i < GLOVE_ELEMENTSOF(forwarded_signals); i++)
                r = sd_event_add_signal(e, NULL, forwarded_signals[i], on_forward, st);
        if (r >= 0)
                r = sd_event_add_child_pidfd(e, NULL, st->sb.pidfd, WEXITED, on_child, st);
        if (r >= 0)
                r = sd_event_loop(e);
        if (r < 0)
                return glove_error_set(err, -r, "exec.event_loop", "event loop: %s", strerror(-r));
        return 0;
}

static void seccomp_freep(struct sock_fprog **p) {
        glove_seccomp_program_free(*p);
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

        _cleanup_(seccomp_freep) struct sock_fprog *filter = NULL;
        if (glove_seccomp_build(&filter, &err) < 0)
                return fail(&err);

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
                .seccomp = filter,
        };
        struct exec_state st;
        if (glove_sandbox_spawn(&cfg, &st.sb, &err) < 0)
                return fail(&err);
        st.have_reaped = false;

        if (audit.fd >= 0) {
                _cleanup_json_ json_t *launch = glove_exec_launch_fields(opts.program, &grants, &env, &st.sb);
                if (!launch || glove_audit_append(&audit, "launch", launch, &err) < 0) {
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the launch record");
                        glove_sandbox_destroy(&st.sb);
                        return fail(&err);
                }
        }
        uint64_t start_us = glove_time_monotonic_us();
        if (glove_sandbox_release(&st.sb, &err) < 0) {
                glove_sandbox_destroy(&st.sb);
                return fail(&err);
        }
        int r = wait_for_sandbox(&st, &err);
        if (r < 0) {
                glove_sandbox_destroy(&st.sb);
                return fail(&err);
        }
        struct glove_sandbox_outcome outcome;
        glove_sandbox_collect(&st.sb, st.have_reaped ? &st.reaped : NULL, &outcome);
        uint64_t wall_ms = (glove_time_monotonic_us() - start_us) / 1000;
        glove_sandbox_destroy(&st.sb);

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

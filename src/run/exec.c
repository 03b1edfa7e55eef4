/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove exec: a thin front end of the session engine. Options become a
 * session description; Glove's own terminal attaches as one client; the
 * outcome becomes Glove's exit status, its one-line reason and the audit
 * records (issue "glove exec"; docs/architecture.md).
 */
#include "glove/run/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "glove/audit/log.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/container/seccomp.h"
#include "glove/run/exec_options.h"
#include "glove/session/session.h"
#include "cli_terminal.h"
#include "exec_records.h"
#include "launch.h"
#include "session_front.h"

/* How long Glove's own stdout/stderr may take to accept what is pending
 * once the session ended (ms). */
#define EXEC_FLUSH_MS 2000

struct exec_run {
        sd_event *loop;
        const struct glove_exec_options *opts;
        struct glove_launch *launch;
        struct glove_session *session;
        struct glove_cli_terminal *term;
        struct glove_launch_signals signals;
        struct glove_session_outcome outcome;
        bool ended;
        struct glove_error err;          /* Glove's own failure while the session ran */
        struct glove_error out_err;      /* Glove's stdout or stderr failed (output.write) */
        int stop_signal;                 /* a stop signal ended the run: Glove exits 128+N */
        unsigned interrupts;             /* SIGINT, SIGTERM, SIGHUP received */
};

/* Glove's stdout or stderr cannot take the agent's output any more. A
 * reader that went away (EPIPE) is what a pipeline's writer meets: the agent
 * gets SIGPIPE, as it would writing to that pipe itself. Anything else (a
 * full disk, an I/O error) would lose output silently: the agent is
 * stopped and Glove fails with output.write. */
static void on_write_error(void *userdata, int fd, int errnum) {
        struct exec_run *x = userdata;
        if (errnum == EPIPE) {
                (void)glove_session_signal(x->session, SIGPIPE);
                return;
        }
        glove_error_set(&x->out_err, errnum, "output.write", "writing the agent's output to %s: %s; the agent was stopped",
                        fd == 1 ? "stdout" : "stderr", strerror(errnum));
        glove_session_stop(x->session, 0);
}

static void on_warning(struct glove_session *s, const struct glove_error *w, void *userdata) {
        (void)s;
        struct exec_run *x = userdata;
        /* A contained upstream of glove run (--direct-stdio) runs as the
         * same user as the run's agent: glove run says once, for all its
         * sandboxes, that the limits are degraded. */
        if (x->opts->direct_stdio && strcmp(w->code, "limits.degraded") == 0)
                return;
        glove_launch_say("glove: warning: %s: %s\n", w->code, w->message);
}

/* The perimeter is built and nothing of the agent ran: the launch record
 * goes to the audit log first (fail closed), then the agent starts. */
static void on_ready(struct glove_session *s, void *userdata) {
        struct exec_run *x = userdata;
        /* --run-audit: glove run records the upstream's start itself. */
        if (x->launch->audit.fd >= 0 && !x->opts->run_audit) {
                char *const *envp = glove_session_environment(s);
                struct glove_env env = {.envp = (char **)envp};
                while (envp[env.count])
                        env.count++;
                _cleanup_json_ json_t *launch =
                        glove_exec_launch_fields(x->opts->program, &x->launch->grants, &env, glove_session_sandbox(s));
                struct glove_session_enforced enf;
                glove_session_enforced(s, &enf);
                if (launch && glove_front_launch_settings(x->opts, x->launch->home_from, &enf, launch) < 0) {
                        json_decref(launch);
                        launch = NULL;
                }
                if (!launch)
                        glove_error_set(&x->err, ENOMEM, "audit.encode", "cannot build the launch record");
                if (!launch || glove_audit_append(&x->launch->audit, "launch", launch, &x->err) < 0) {
                        glove_session_stop(s, 0);
                        return;
                }
        }
        if (glove_session_release(s, &x->err) < 0)
                glove_session_stop(s, 0);
}

static void on_exited(struct glove_session *s, const struct glove_session_outcome *o, void *userdata) {
        (void)s;
        struct exec_run *x = userdata;
        x->outcome = *o;
        x->ended = true;
        (void)sd_event_exit(x->loop, 0);
}

static int on_signal(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata) {
        (void)src;
        struct exec_run *x = userdata;
        int sig = (int)si->ssi_signo;
        if (sig == SIGWINCH && glove_terminal_is_pty(glove_session_terminal(x->session))) {
                glove_cli_terminal_resize(x->term); /* the kernel signals the agent */
                return 0;
        }
        if (glove_launch_is_stop_signal(sig)) {
                if (!x->stop_signal)
                        x->stop_signal = sig;
                glove_session_stop(x->session, 0);
                return 0;
        }
        /* The first interrupt is the agent's to handle; a second one (the
         * operator pressing ^C again, a supervisor's repeated SIGTERM) stops
         * the sandbox whatever the agent does with it. */
        if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && ++x->interrupts >= 2) {
                if (!x->stop_signal)
                        x->stop_signal = sig;
                glove_session_stop(x->session, 0);
                return 0;
        }
        (void)glove_session_signal(x->session, sig);
        return 0;
}

/* Points descriptors 0 and 1 at /dev/null. Returns 0 or -1 (errno set). */
static int null_stdio(void) {
        int n = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (n < 0)
                return -1;
        int r = dup2(n, 0) < 0 || dup2(n, 1) < 0 ? -1 : 0;
        int e = errno;
        close(n);
        errno = e;
        return r;
}

/* --run-audit FD:RUN_ID:NAME (a contained upstream of glove run): FD is
 * glove run's own audit log, open for appending, inherited; egress records
 * go there with its run id and "upstream": NAME (*upstream, borrowed from
 * spec). Errors: "usage.run_audit". */
static int run_audit_attach(const char *spec, struct glove_audit_log *audit, const char **upstream, struct glove_error *err) {
        char *end = NULL;
        errno = 0;
        long fd = strtol(spec, &end, 10);
        const char *id = end && *end == ':' ? end + 1 : NULL;
        const char *name = id ? strchr(id, ':') : NULL;
        struct stat st;
        int fl = -1;
        if (!id || !name || errno || fd <= 2 || fd > 1024 || (size_t)(name - id) != GLOVE_AUDIT_RUN_ID_LEN || !name[1] ||
            fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode) || (fl = fcntl((int)fd, F_GETFL)) < 0 || !(fl & O_APPEND) ||
            (fl & O_ACCMODE) == O_RDONLY)
                return glove_error_set(err, EINVAL, "usage.run_audit",
                                       "--run-audit %s: expected FD:RUN_ID:NAME, FD an audit log open for appending", spec);
        (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        audit->fd = (int)fd;
        audit->dev = st.st_dev;
        audit->ino = st.st_ino;
        audit->path = strdup("the run's audit log");
        memcpy(audit->run_id, id, GLOVE_AUDIT_RUN_ID_LEN);
        audit->run_id[GLOVE_AUDIT_RUN_ID_LEN] = '\0';
        *upstream = name + 1;
        return audit->path ? 0 : glove_error_set(err, ENOMEM, "exec.alloc", "out of memory");
}

/* Runs the session to its end. Returns 0, or -errno with err set when it
 * could not start. */
static int run_session(struct exec_run *x, struct glove_error *err) {
        const struct glove_exec_options *opts = x->opts;
        struct glove_cli_terminal_probe probe;
        glove_cli_terminal_probe(&probe);
        struct glove_net_policy egress;
        bool egress_on = false;
        const char *upstream = NULL;
        int r = glove_front_egress(opts, &egress, &egress_on, err);
        if (r >= 0 && opts->run_audit)
                r = run_audit_attach(opts->run_audit, &x->launch->audit, &upstream, err);
        if (r < 0) {
                glove_net_policy_free(&egress);
                return r;
        }
        /* --direct-stdio hands descriptors 0 and 1 themselves to the
         * program: only pipes (glove run's), never a socket, file, device
         * or terminal, which the program could send through, reopen or
         * change (docs/threat-model.md). */
        struct stat st0, st1;
        if (opts->direct_stdio && (fstat(0, &st0) < 0 || fstat(1, &st1) < 0 || !S_ISFIFO(st0.st_mode) || !S_ISFIFO(st1.st_mode))) {
                glove_net_policy_free(&egress);
                return glove_error_set(err, EINVAL, "exec.direct_stdio",
                                       "--direct-stdio: stdin and stdout must both be pipes (they pass to the program as they are)");
        }
        struct glove_session_desc d = {
                .argv = opts->program,
                .envp = x->launch->env.envp,
                .grants = &x->launch->grants,
                /* Without Unix sockets of its own unless asked for. */
                .seccomp = opts->allow_unix_sockets ? &glove_seccomp_prebuilt : &glove_seccomp_prebuilt_no_unix,
                .seccomp_egress = opts->allow_unix_sockets ? &glove_seccomp_prebuilt_egress
                                                           : &glove_seccomp_prebuilt_no_unix_egress,
                /* A PTY merges stdout and stderr and turns \n into \r\n: only
                 * when both ends are a terminal (or asked for), never for
                 * output redirected to a file. */
                .terminal = opts->direct_stdio                               ? GLOVE_TERMINAL_STDERR
                            : opts->tty || (probe.stdin_tty && probe.stdout_tty) ? GLOVE_TERMINAL_PTY
                                                                                 : GLOVE_TERMINAL_PIPES,
                .tty_modes = probe.have_modes ? &probe.modes : NULL,
                .rows = probe.rows,
                .cols = probe.cols,
                .input_closed = probe.stdin_null,
                /* --direct-stdio: Glove's own stdin and stdout are the
                 * program's (a contained upstream's MCP channel). */
                .channel_stdin_fd = opts->direct_stdio ? 0 : -1,
                .channel_stdout_fd = opts->direct_stdio ? 1 : -1,
                .egress = egress_on ? &egress : NULL,
                .audit = &x->launch->audit,
                .parent_death_kill = true,
                .add_mounts = glove_launch_add_home,
                .add_mounts_ctx = x->launch,
                .nofile = opts->nofile,
                .egress_upstream = upstream,
                .egress_report = true,
        };
        glove_front_limits(opts, &d.limits, &d.cgroup_policy);
        /* Egress records may add at most --disk bytes to the audit log, as in
         * gloved's managed sessions: a flood of refused connections cannot
         * fill the host's disk (docs/egress.md, "Audit"). */
        d.audit_max_bytes = d.limits.disk_bytes;
        static const struct glove_session_ops ops = {.ready = on_ready, .exited = on_exited, .warning = on_warning};
        /* The clone first: PID 1 builds the perimeter on another core while
         * this thread creates the loop (the first sd-event call loads
         * libsystemd). */
        r = glove_session_spawn(&d, &ops, x, &x->session, err);
        glove_net_policy_free(&egress);
        if (r < 0)
                return r;
        /* The sandbox holds its own copies: the channel's end of file must
         * come with the program's, not wait for Glove's. */
        if (opts->direct_stdio && null_stdio() < 0)
                return glove_error_set(err, errno, "exec.direct_stdio", "cannot release stdin and stdout: %s", strerror(errno));
        r = sd_event_new(&x->loop);
        if (r < 0)
                return glove_error_set(err, -r, "exec.event_loop", "sd_event_new: %s", strerror(-r));
        r = glove_launch_signals_add(&x->signals, x->loop, on_signal, x);
        if (r < 0)
                return glove_error_set(err, -r, "exec.event_loop", "signal source: %s", strerror(-r));
        r = glove_session_attach(x->session, x->loop, err);
        if (r < 0)
                return r;
        r = glove_cli_terminal_attach(x->loop, glove_session_terminal(x->session), &probe, !opts->direct_stdio, &x->term, err);
        if (r < 0)
                return r;
        glove_cli_terminal_on_write_error(x->term, on_write_error, x);
        r = sd_event_loop(x->loop);
        if (r < 0)
                return glove_error_set(err, -r, "exec.event_loop", "event loop: %s", strerror(-r));
        return 0;
}

static int finish(struct exec_run *x, bool mid_line) {
        const struct glove_exec_options *opts = x->opts;
        struct glove_session_outcome *o = &x->outcome;
        if (o->kind == GLOVE_SESSION_SETUP_FAILED)
                return glove_launch_fail(glove_error_is_set(&x->err) ? &x->err : &o->error);
        if (glove_error_is_set(&x->err) && !o->released)
                return glove_launch_fail(&x->err); /* the launch record could not be written */
        if (o->limit != GLOVE_CGROUP_LIMIT_NONE && mid_line)
                glove_launch_say("\n"); /* the limit message starts on its own line */
        struct glove_run_status st;
        bool out_failed = glove_error_is_set(&x->out_err);
        /* A contained upstream stopped by glove run (--direct-stdio) is
         * glove run's to report, not this one's. */
        if (x->stop_signal && o->stopped && !out_failed && !opts->direct_stdio) {
                char sigtext[64];
                snprintf(sigtext, sizeof(sigtext), "%s", strsignal(x->stop_signal));
                glove_error_set(&x->out_err, EINTR, "exec.stopped", "Glove received signal %d (%s); the agent was stopped",
                                x->stop_signal, sigtext);
                out_failed = true;
        }
        /* --direct-stdio (a contained upstream): glove run records how its
         * program ended (upstream_exit) and stopped it itself; only a limit
         * or a program that could not run is worth a line here. */
        bool quiet = opts->direct_stdio && o->limit == GLOVE_CGROUP_LIMIT_NONE &&
                     (o->stopped || o->sandbox.kind == GLOVE_SANDBOX_SIGNALED);
        glove_front_status(o, opts->program[0], !o->audit_failed && !out_failed && !quiet, &st);
        if (quiet && !o->audit_failed && !out_failed)
                st.exit_code = o->sandbox.kind == GLOVE_SANDBOX_SIGNALED ? 128 + o->sandbox.value
                             : o->sandbox.kind == GLOVE_SANDBOX_EXITED   ? o->sandbox.value
                                                                         : GLOVE_EXIT_FAILURE;
        if (out_failed && !o->audit_failed) {
                (void)glove_launch_fail(&x->out_err);
                st.exit_code = x->stop_signal && o->stopped ? 128 + x->stop_signal : GLOVE_EXIT_FAILURE;
        }
        if (glove_error_is_set(&o->error))
                glove_launch_say("glove: warning: %s: %s\n", o->error.code, o->error.message);
        int status = st.exit_code;
        struct glove_error err = {0};
        if (o->audit_failed) {
                if (o->audit_full)
                        glove_error_set(&err, ENOSPC, "egress.audit_full",
                                        "the run's egress records passed their budget of %" PRIu64
                                        " bytes (--disk) in the audit log; the agent was stopped",
                                        opts->disk_bytes ? opts->disk_bytes : GLOVE_SESSION_DEFAULT_DISK);
                else
                        glove_error_set(&err, EIO, "audit.append", "an egress record could not be appended; the agent was stopped");
                return glove_launch_fail(&err);
        }
        if (opts->status_json && glove_run_status_write(x->launch->status_dirfd, x->launch->status_name, opts->status_json, &st, &err) < 0)
                return glove_launch_fail(&err);
        if (x->launch->audit.fd >= 0 && !opts->run_audit) {
                _cleanup_json_ json_t *exitrec = glove_exec_exit_fields(&o->sandbox, status, st.wall_time_ms);
                _cleanup_json_ json_t *stjson = glove_run_status_json(&st);
                if (!exitrec || !stjson)
                        glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the exit record");
                else
                        json_object_update(exitrec, stjson);
                if (!exitrec || !stjson || glove_audit_append(&x->launch->audit, "exit", exitrec, &err) < 0)
                        return glove_launch_fail(&err);
        }
        return status;
}

int glove_exec_main(int argc, char **argv) {
        struct glove_error err = {0};
        if (glove_fd_ensure_std() < 0)
                return GLOVE_EXIT_FAILURE;
        _cleanup_free_ struct glove_exec_options *opts = calloc(1, sizeof(*opts));
        _cleanup_free_ struct glove_launch *l = calloc(1, sizeof(*l));
        if (!opts || !l) {
                glove_error_set(&err, ENOMEM, "exec.alloc", "out of memory");
                return glove_launch_fail(&err);
        }
        if (glove_exec_parse(argc, argv, opts, &err) < 0)
                return glove_launch_fail(&err);
        if (opts->help) {
                fputs(glove_exec_help, stdout);
                return 0;
        }
        if (glove_launch_prepare(opts, l, &err) < 0) {
                glove_launch_free(l);
                return glove_launch_fail(&err);
        }
        /* Process-wide, and the front end's to set: forwarded signals are
         * taken by the loop's signalfd; a write to a closed pipe fails with
         * EPIPE; an over-limit audit append fails with EFBIG. */
        sigset_t mask;
        glove_launch_block_signals(&mask);
        struct exec_run x = {.opts = opts, .launch = l, .signals = {.fd = -1}};
        int status;
        if (run_session(&x, &err) < 0) {
                /* The client first: it detaches from the session's terminal. */
                glove_cli_terminal_free(x.term, 0);
                x.term = NULL;
                glove_session_free(x.session);
                status = glove_launch_fail(&err);
        } else {
                bool mid_line = glove_cli_terminal_mid_line(x.term);
                /* Output still pending after the session's own drain was cut
                 * is dropped at once: the drain already waited. */
                if (x.outcome.output_cut)
                        glove_launch_say("glove: warning: drain.timeout: output still open after the agent ended; dropping the rest\n");
                glove_cli_terminal_free(x.term, x.outcome.output_cut ? 0 : EXEC_FLUSH_MS);
                x.term = NULL;
                status = finish(&x, mid_line);
                glove_session_free(x.session);
        }
        glove_cli_terminal_free(x.term, 0);
        glove_launch_signals_free(&x.signals);
        x.loop = sd_event_unref(x.loop);
        glove_launch_free(l);
        return status;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What `glove exec` and `glove run` share before and after the agent runs:
 * resolving grants, the environment and the audit log, and turning the
 * agent's outcome into Glove's exit status. Internal to the run module. */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "glove/audit/log.h"
#include "glove/container/environment.h"
#include "glove/container/grant.h"
#include "glove/container/mount_plan.h"
#include "glove/container/sandbox.h"
#include "glove/run/exec_options.h"

/* Signals forwarded to the agent (issue "glove exec", Lifecycle). */
extern const int glove_launch_forwarded_signals[7];
/* Signals whose default would kill Glove outright (leaving the terminal raw
 * and the run cgroup behind): taken on the loop too, and they stop the
 * agent instead; Glove then exits 128+N. */
extern const int glove_launch_stop_signals[7];

struct glove_launch {
        char cwd[4096];
        struct glove_grant_set grants;
        struct glove_grant_guards guards; /* running gloveds' directories, refused to every grant */
        struct glove_env env;
        struct glove_audit_log audit;     /* fd -1 without --audit-log */
        int status_dirfd;                 /* --status-json's directory, pinned; -1 without */
        char *status_name;                /* its final name, owned */
        char *home_from;                  /* --home-from resolved (absolute, normal), owned; NULL without */
        struct glove_grant_set home_set;  /* its pinned identity (one READ entry) */
        uint64_t home_bytes;              /* the private HOME's size (the --disk limit) */
};

/* Resolves grants, builds the environment, opens the audit log and pins the
 * --status-json directory, checking both lie outside every grant (the agent
 * could otherwise swap a path component and redirect what Glove writes). On error, l holds nothing to free beyond what
 * glove_launch_free releases. */
int glove_launch_prepare(const struct glove_exec_options *opts, struct glove_launch *l, struct glove_error *err);

void glove_launch_free(struct glove_launch *l);

/*
 * The session's add_mounts hook (glove/session/session.h) for --home-from:
 * with one, the private HOME becomes a fresh tmpfs of l->home_bytes filled
 * with a copy of the pinned directory (glove_mount_plan_add_tree), symbolic
 * links skipped; without one, nothing. ctx is the struct glove_launch.
 */
int glove_launch_add_home(struct glove_mount_plan *plan, void *ctx, struct glove_error *err);

/* Blocks SIGCHLD and the forwarded signals (into *mask), ignores SIGPIPE
 * and SIGXFSZ. Call before the sandbox is cloned. */
void glove_launch_block_signals(sigset_t *mask);

/* The forwarded signals as one event source: one signalfd for all of them,
 * added to the loop as one io source (one descriptor and one epoll
 * registration, instead of sd-event's signalfd update and mask read per
 * signal at start and again at the end). The signals must be blocked first
 * (glove_launch_block_signals). handler runs on the loop for each signal
 * received, with its siginfo (src is the io source). */
struct glove_launch_signals {
        int fd;                          /* the signalfd, owned; -1 before add */
        sd_event_source *src;
        sd_event_signal_handler_t handler;
        void *userdata;
};

/* Returns 0 or a negative errno (signalfd or the loop refused). s holds
 * what glove_launch_signals_free releases either way. */
int glove_launch_signals_add(struct glove_launch_signals *s, sd_event *loop, sd_event_signal_handler_t handler,
                             void *userdata);

/* Removes the source and closes the signalfd; idempotent. */
void glove_launch_signals_free(struct glove_launch_signals *s);

/* Glove's exit status for the agent's outcome, printing the one-line reason
 * to stderr where there is one. */
int glove_launch_outcome_status(const struct glove_sandbox_outcome *o, const char *program);

/* True for a signal of glove_launch_stop_signals. */
bool glove_launch_is_stop_signal(int sig);

/* How long, in all, Glove's own lines may wait for room on its stderr (ms). */
#define GLOVE_LAUNCH_SAY_WAIT_MS 2000

/*
 * Writes one of Glove's own lines (printf format) to stderr. A stderr that
 * nobody reads (a full pipe) cannot hold Glove: the lines of the whole
 * process wait GLOVE_LAUNCH_SAY_WAIT_MS at most, then are dropped. Lines
 * are cut at 1023 bytes. The line is shown through glove_shown (control
 * characters, bidirectional controls and the backslash escaped:
 * docs/threat-model.md, "Terminal") except its final newline, since it
 * quotes paths, names and what upstreams and agents said.
 */
void glove_launch_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "glove: CODE: MESSAGE" and returns GLOVE_EXIT_FAILURE. */
int glove_launch_fail(const struct glove_error *err);

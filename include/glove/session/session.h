/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The session engine (issue "One session engine under glove exec, glove run
 * and gloved"; spec architecture.md, Platform isolation; session-policy.md,
 * limits): runs one sandbox, described completely by the caller, on the
 * caller's sd-event loop. glove exec, glove run and gloved all drive it; any
 * number of sessions may run at once on one loop.
 *
 * Life of a session (every step is an event on the loop; nothing blocks the
 * loop thread in a read, waitid or sleep):
 *
 *   glove_session_start()   run cgroup, terminal, egress channel, clone3 of
 *                           PID 1 (glove_sandbox_spawn_start); returns while
 *                           PID 1 builds the perimeter
 *   ops.ready               PID 1 reported ready; nothing of the agent has
 *                           run. The caller records what it must (a launch
 *                           audit record, a durable "running" transition)
 *                           and then calls glove_session_release()
 *   glove_session_release() the agent starts; the limit watch runs every
 *                           GLOVE_SESSION_POLL_MS
 *   ... glove_session_signal(), glove_session_stop(), terminal clients ...
 *   PID 1 exits             the outcome is read from its report; the
 *                           cgroup is read for usage (final: the PID
 *                           namespace died with PID 1) and removed when
 *                           empty, else what is left is killed; the
 *                           terminal drains (at most GLOVE_SESSION_DRAIN_MS);
 *                           the relay stops; a cgroup still busy is killed
 *                           and removed (retried on a timer, at most
 *                           GLOVE_SESSION_TEARDOWN_MS)
 *   ops.exited              exactly once, with the outcome; the session
 *                           holds no descriptor, process or cgroup any more
 *                           except the terminal's transcript, until
 *                           glove_session_free()
 *
 * A failure before ready (cgroup, perimeter, a mount) also ends in
 * ops.exited, with kind GLOVE_SESSION_SETUP_FAILED and the error's code.
 *
 * What the engine never does: print, read the environment or the working
 * directory, use descriptors 0, 1, 2, change signal dispositions or masks,
 * call prctl on the caller, exit, or reap any process but its own PID 1
 * (through its pidfd, so a caller's own child handling is not disturbed,
 * and no SIGCHLD mask is needed). One process-wide requirement on the
 * caller (the kernel's, not the engine's choice): SIGPIPE ignored or blocked.
 * Threads: the loop thread runs everything; egress relays run threads of
 * their own (joined in teardown). Spawning is safe when the caller has other
 * threads: between clone3 and the agent's execve the child touches no
 * allocator and no stdio (see glove/container/sandbox.h).
 */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "glove/audit/log.h"
#include "glove/base/error.h"
#include "glove/container/cgroup.h"
#include "glove/container/grant.h"
#include "glove/container/sandbox.h"
#include "glove/net/rule.h"
#include "glove/session/terminal.h"

/* How often the cgroup and the clock are read while the agent runs (ms). */
#define GLOVE_SESSION_POLL_MS 50
/* With a run cgroup, how far above the CPU-time limit the per-process
 * RLIMIT_CPU backstop sits (ms; rounded up to whole seconds by the kernel's
 * interface): far more than GLOVE_SESSION_POLL_MS, so the limit watch stops
 * the run first. Without a cgroup the backstop is the limit itself
 * (docs/limits.md, "CPU time"). */
#define GLOVE_SESSION_CPU_BACKSTOP_MARGIN_MS 1000
/* How far below its CPU-time limit (percent of it) a run's CPU time may be
 * read when the backstop killed it and still count as the limit: RLIMIT_CPU
 * counts whole scheduler ticks, which run ahead of the precise figures of
 * the cgroup and of getrusage by several percent on a busy host (945 ms
 * read for a 1 s backstop was seen on 2 loaded cores). */
#define GLOVE_SESSION_CPU_SLACK_PERCENT 10
/* How long output may keep flowing after PID 1 is gone (ms). */
#define GLOVE_SESSION_DRAIN_MS 2000
/* How long teardown retries removing the run cgroup (ms). */
#define GLOVE_SESSION_TEARDOWN_MS 3000
/* Defaults of the two limits the cgroup layer does not own (docs/limits.md). */
#define GLOVE_SESSION_DEFAULT_DISK (UINT64_C(1) << 30)
#define GLOVE_SESSION_DEFAULT_OUTPUT (UINT64_C(1) << 30)
/* RLIMIT_NOFILE (soft = hard) of every process of the run when the caller
 * asks for none, lowered to the caller's own hard limit (docs/limits.md). */
#define GLOVE_SESSION_DEFAULT_NOFILE 1024
/* The largest TCP buffer (receive or send) a socket of an egress run's
 * network namespace autotunes to: its net.ipv4.tcp_rmem/tcp_wmem maximum,
 * bytes (docs/limits.md). */
#define GLOVE_SESSION_TCP_BUFFER_MAX (4U << 20)
/* Egress refusals said on stderr per session (desc egress_report). */
#define GLOVE_SESSION_EGRESS_REPORTED 10

/* The egress helper's port on the sandbox's own loopback. */
#define GLOVE_SESSION_EGRESS_PORT 3128

/* The six limits (session plan "limits"); all resolved, none 0 except
 * wall_time_ms (0: none). */
struct glove_session_limits {
        uint64_t cpu_time_ms;          /* CPU time of the whole tree */
        uint64_t memory_bytes;         /* memory of the whole tree, swap 0 */
        uint64_t pids;                 /* processes and threads of the whole tree */
        uint64_t wall_time_ms;         /* from release to end; 0: none */
        uint64_t disk_bytes;           /* each private writable tmpfs */
        uint64_t terminal_output_bytes;/* output relayed at most */
};

/* When no delegated cgroup is available. */
enum glove_session_cgroup_policy {
        GLOVE_SESSION_CGROUP_REQUIRED,  /* fail ("cgroup.not_delegated", ...) */
        GLOVE_SESSION_CGROUP_OPTIONAL,  /* run without: memory and pids not
                                         * enforced, CPU time by RLIMIT_CPU per
                                         * process; ops.warning says so */
};

struct glove_session_desc {
        char *const *argv;                     /* program and arguments (argv[0] looked up in the
                                                * sandbox's PATH when it has no slash); borrowed
                                                * until ops.ready */
        char *const *envp;                     /* the agent's complete environment; borrowed until ready */
        const struct glove_grant_set *grants;  /* the mount perimeter's grants; borrowed until ready */
        /* Called while the engine builds the mount plan (in glove_session_spawn,
         * on the caller's thread), after the grants were added: appends the
         * caller's own entries (gloved's materializations: pinned binds,
         * trees; glove/container/mount_plan.h), which therefore come after
         * and may mount over the standard perimeter and the grants. Returns
         * 0 or -errno with err set; a failure fails the spawn with that
         * error. The plan belongs to the session: the hook must not keep it.
         * NULL for none. */
        int (*add_mounts)(struct glove_mount_plan *plan, void *ctx, struct glove_error *err);
        void *add_mounts_ctx;
        /* The agent's working directory inside the sandbox (absolute,
         * lexically normal; copied). NULL: the workspace grant, else HOME.
         * When it does not exist inside, the spawn fails ("mount.chdir",
         * through ops.exited). */
        const char *cwd;
        const struct sock_fprog *seccomp;      /* the agent's filter offline; borrowed */
        /* The agent's filter with egress; NULL: glove_seccomp_prebuilt_egress.
         * Borrowed. */
        const struct sock_fprog *seccomp_egress;
        struct glove_session_limits limits;
        enum glove_session_cgroup_policy cgroup_policy;
        /* When set, the run cgroup must be made in the directory of this
         * identity (gloved's pinned delegated parent), else the spawn fails
         * with "cgroup.parent_replaced" (glove_cgroup_create_pinned). Zero:
         * no check. */
        struct glove_cgroup_pin cgroup_pin;
        /* The terminal: mode, and for a PTY its initial modes and size. */
        enum glove_terminal_mode terminal;
        const struct termios *tty_modes;       /* NULL: the kernel's defaults */
        unsigned short rows, cols;             /* 0: unset */
        bool input_closed;                     /* pipes: stdin at end of file from the start */
        size_t transcript_bytes;               /* 0: GLOVE_TERMINAL_TRANSCRIPT_DEFAULT */
        /* GLOVE_TERMINAL_STDERR: the agent's stdin and stdout, borrowed
         * during glove_session_start only (the sandbox holds its own copies
         * once it returns: the caller closes its ends then). */
        int channel_stdin_fd, channel_stdout_fd;
        /* Audited egress: NULL for none (no network at all). Moved into the
         * session by glove_session_start (the caller's policy is left empty). */
        struct glove_net_policy *egress;
        /* The in-sandbox MCP endpoint listener (docs/mcp-mediation.md,
         * "Endpoints"): when mcp_listen is true, PID 1 brings lo up and forks
         * one helper (one PID of limits.pids) that listens on
         * 127.0.0.1:mcp_listen_port of the sandbox's own network namespace
         * and passes each accepted connection over mcp_listen_fd (the
         * sandbox's end of an AF_UNIX socketpair; borrowed during
         * glove_session_start only, as channel_stdin_fd) with SCM_RIGHTS
         * (glove/net/helper.h). The agent's filter is then seccomp_egress
         * (it needs AF_INET sockets to reach the port); offline there is
         * still no route out of the namespace. A failure to listen (e.g. the
         * port is taken) is a setup failure "egress.listen". */
        bool mcp_listen;
        int mcp_listen_fd;
        uint16_t mcp_listen_port;
        /* With mcp_listen and egress: the listener serves the MCP HTTP
         * endpoint. NO_PROXY and no_proxy then name it
         * ("127.0.0.1:PORT,localhost:PORT") and the egress relay hands a
         * request for 127.0.0.1:PORT or localhost:PORT to it over a copy of
         * mcp_listen_fd instead of refusing it (glove/net/relay.h;
         * docs/egress.md, "The MCP endpoint through the proxy"). */
        bool mcp_listen_http;
        /* Egress records go here; borrowed for the session's life, may be
         * NULL or have fd -1. An append that fails stops the agent
         * (fail closed; outcome.audit_failed). */
        struct glove_audit_log *audit;
        /* Bytes the egress records may add to audit during the session; past
         * them the agent is stopped as when an append fails
         * (outcome.audit_failed and outcome.audit_full). 0: no bound. */
        uint64_t audit_max_bytes;
        /* When not NULL, every egress record carries "upstream": this name
         * (a contained upstream of glove run writing into its run's log).
         * Borrowed for the session's life. */
        const char *egress_upstream;
        /* True: each egress refusal (a "deny" record) is also said on
         * descriptor 2 in one line, "glove: warning: egress.denied: METHOD
         * HOST:PORT refused with STATUS (REASON...)", host and method shown
         * (glove/base/shown.h), for the first GLOVE_SESSION_EGRESS_REPORTED
         * refusals; the session's end says how many more there were, in one
         * line. A line that cannot be written
         * at once (descriptor 2 full) is dropped: the audit record is the
         * whole account. Lines are written from relay threads. */
        bool egress_report;
        /* RLIMIT_FSIZE of the agent, bytes (container/sandbox.h
         * file_size_max); 0: none. */
        uint64_t file_size_max;
        /* RLIMIT_NOFILE of the agent, soft = hard (descriptors per process;
         * the run holds at most limits.pids times this); 0:
         * GLOVE_SESSION_DEFAULT_NOFILE. Lowered to the caller's own hard
         * limit. */
        uint64_t nofile;
        /* PID 1 dies with the thread that started it (a CLI); false for a
         * service whose sessions may outlive a thread or a restart. */
        bool parent_death_kill;
        /* inherited-stream-v1 (spec architecture.md, "Historical synthetic
         * status milestone"; session-policy.md, "Guest observation
         * channels"): when has_inherit_fd, inherit_fd (the guest end of a
         * connected AF_UNIX stream socketpair, > 2) is the agent's
         * descriptor 3 (container/sandbox.h, has_inherit_fd). Borrowed
         * during glove_session_start only, as channel_stdin_fd (the sandbox
         * holds its own copy once it returns: the caller closes its end
         * then). Offline only: with egress or mcp_listen the spawn fails
         * with "session.inherit_offline" (-EINVAL). seccomp should be
         * glove_seccomp_prebuilt_managed_inherited. false (a zeroed desc):
         * none. */
        bool has_inherit_fd;
        int inherit_fd;
};

enum glove_session_outcome_kind {
        GLOVE_SESSION_EXITED,         /* value: exit status */
        GLOVE_SESSION_SIGNALED,       /* value: signal */
        GLOVE_SESSION_EXEC_FAILED,    /* value: errno of execve */
        GLOVE_SESSION_LOST,           /* PID 1 ended without the agent's outcome */
        GLOVE_SESSION_SETUP_FAILED,   /* before release; error holds why */
};

struct glove_session_outcome {
        enum glove_session_outcome_kind kind;
        int value;
        struct glove_sandbox_outcome sandbox;  /* as read from PID 1 (not for SETUP_FAILED) */
        enum glove_cgroup_limit limit;         /* the limit that ended the run, or NONE: the
                                                * one outcome classifier's answer, the same for
                                                * every caller (docs/limits.md, "Which limit
                                                * ended a run"): the first breach Glove recorded,
                                                * else what the kernel enforced for it (an OOM
                                                * kill, a refused fork, the RLIMIT_CPU backstop's
                                                * SIGXCPU/SIGKILL with the CPU time at the limit).
                                                * With SETUP_FAILED: memory or pids when the
                                                * kernel stopped the setup at that limit */
        bool disk_full;                        /* a private tmpfs was full at the end */
        bool stopped;                          /* glove_session_stop() ended it */
        bool audit_failed;                     /* an egress record could not be appended */
        bool audit_full;                       /* ... because audit_max_bytes were passed */
        bool released;                         /* the agent was started */
        bool output_cut;                       /* output was still open GLOVE_SESSION_DRAIN_MS after
                                                * PID 1 ended (a client held it, or a process
                                                * outside the PID namespace kept a pipe open);
                                                * the rest was dropped */
        struct glove_error error;              /* SETUP_FAILED, or a teardown problem (cgroup.busy) */
        uint64_t cpu_time_ms, peak_memory_bytes, output_bytes;
        uint64_t wall_time_ms;                 /* from release to the reap of PID 1 */
        bool usage_from_cgroup;                /* false: rusage of PID 1's tree (no cgroup) */
};

struct glove_session;

struct glove_session_ops {
        /* PID 1 is ready and waits for glove_session_release() (which may be
         * called from here or later). Required. */
        void (*ready)(struct glove_session *s, void *userdata);
        /* The session ended; called exactly once. Required. The session may
         * be freed from here. */
        void (*exited)(struct glove_session *s, const struct glove_session_outcome *o, void *userdata);
        /* A condition the caller may want to show (code and message), e.g.
         * "limits.degraded". Optional. */
        void (*warning)(struct glove_session *s, const struct glove_error *w, void *userdata);
};

/*
 * Starts a session on loop. ops and userdata are copied/borrowed for the
 * session's life. Returns 0 with *out owned by the caller (even when it will
 * fail later through ops.exited), or -errno with err set and nothing left
 * behind (codes: "cgroup.*", "terminal.*", "tty.open", "egress.*",
 * "sandbox.*", "mount.plan_*", "session.inherit_offline", the add_mounts
 * hook's).
 */
int glove_session_start(sd_event *loop, const struct glove_session_desc *desc, const struct glove_session_ops *ops,
                        void *userdata, struct glove_session **out, struct glove_error *err);

/*
 * glove_session_start in two steps, for a caller that wants the clone as
 * early as possible: glove_session_spawn does everything up to and
 * including the clone of PID 1 (which then builds its perimeter on its own)
 * and touches no loop; glove_session_attach adds the session's event
 * sources to loop, once. Nothing of the session happens until it is
 * attached (the ready report waits in its pipe). glove exec spawns first
 * and creates its loop (loading libsystemd, about 0.7 ms) while PID 1
 * builds the perimeter. Errors as glove_session_start; attach:
 * "session.event_loop". A session that was spawned and never attached is
 * freed with glove_session_free (kills and reaps PID 1).
 */
int glove_session_spawn(const struct glove_session_desc *desc, const struct glove_session_ops *ops, void *userdata,
                        struct glove_session **out, struct glove_error *err);
int glove_session_attach(struct glove_session *s, sd_event *loop, struct glove_error *err);

/* Lets the agent start (after ops.ready). Returns 0 or -errno
 * ("sandbox.release"; -EALREADY when already released, -EAGAIN before ready). */
int glove_session_release(struct glove_session *s, struct glove_error *err);

/* Sends sig to the agent (through PID 1). -ESRCH once it is gone. */
int glove_session_signal(struct glove_session *s, int sig);

/*
 * Stops the session: SIGTERM to the agent, then SIGKILL to the whole sandbox
 * after grace_ms (0: at once). Before release the sandbox is killed at once.
 * Idempotent; the end comes through ops.exited.
 */
void glove_session_stop(struct glove_session *s, uint64_t grace_ms);

/* The session's terminal (attach clients, input, resize, transcript); valid
 * until glove_session_free(). */
struct glove_terminal *glove_session_terminal(struct glove_session *s);

/* PID 1's pid and the sandbox's id maps (for audit records); valid from
 * ops.ready until ops.exited. NULL outside that window. */
const struct glove_sandbox *glove_session_sandbox(const struct glove_session *s);

/* What the session enforces beyond desc->limits, for the launch record
 * (docs/limits.md, "Audit records"): cgroup is false when no delegated
 * cgroup carries the memory, pids and CPU limits (limits.degraded: CPU time
 * per process only); nofile is the agent's RLIMIT_NOFILE (soft = hard) after
 * lowering to Glove's own hard limit. Valid from glove_session_spawn() on. */
struct glove_session_enforced {
        bool cgroup;
        uint64_t nofile;
};
void glove_session_enforced(const struct glove_session *s, struct glove_session_enforced *out);

/* The agent's final environment ("NAME=VALUE", NULL-terminated: the
 * caller's plus the egress proxy variables); valid until glove_session_free().
 * For audit records, which name the variables and never their values. */
char *const *glove_session_environment(const struct glove_session *s);

/* The usage so far: cpu_time_ms and peak_memory_bytes from the limit
 * watch's last cgroup reading (0 before the first or without a cgroup),
 * output_bytes from the terminal, wall_time_ms since release (0 before).
 * After ops.exited: the outcome's figures. */
struct glove_session_usage {
        uint64_t cpu_time_ms, peak_memory_bytes, output_bytes, wall_time_ms;
};
void glove_session_usage(const struct glove_session *s, struct glove_session_usage *out);

/* Frees the session. Before ops.exited it kills the sandbox first and tears
 * down without calling ops (blocking at most until PID 1 is reaped); NULL is
 * fine. */
void glove_session_free(struct glove_session *s);

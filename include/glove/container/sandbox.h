/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Linux sandbox (spec architecture.md, Platform isolation; issue
 * "glove exec"). Life of one sandbox:
 *
 *   glove_sandbox_spawn_start()   clone3 into new user, PID, mount, network,
 *                                 IPC, UTS and cgroup namespaces; run
 *                                 after_clone (the cgroup attach); write the
 *                                 UID/GID maps; only then let the child build
 *                                 the mount perimeter.
 *   glove_sandbox_spawn_finish()  once report_fd is readable: the child is
 *                                 ready and waiting for release, or failed.
 *                                 Nothing of the agent has run yet.
 *   (glove_sandbox_spawn() does both, waiting in poll in between.)
 *   glove_sandbox_release()       the child (PID 1 of the new PID namespace)
 *                                 drops every capability, sets no_new_privs,
 *                                 installs the seccomp filter and starts the
 *                                 agent as PID 2 with only descriptors 0, 1
 *                                 and 2 (and 3 with has_inherit_fd).
 *   glove_sandbox_signal()        forwards a signal to the agent (through
 *                                 PID 1).
 *   glove_sandbox_kill()          SIGKILL to PID 1 (never blocks).
 *   glove_sandbox_reap()          reaps PID 1 if it has exited (never blocks).
 *   glove_sandbox_collect()       after PID 1 has exited: the agent's outcome.
 *   glove_sandbox_destroy()       closes everything (kills and reaps first if
 *                                 nobody did).
 *
 * UID/GID mapping: an unprivileged invoker U keeps its id inside (map
 * "U U 1"); a root invoker runs the agent as 1000 inside mapped to 0
 * outside (map "1000 0 1"), so the agent is never uid 0 inside and holds no
 * capability anywhere. setgroups is denied in the namespace. See
 * docs/threat-model.md.
 *
 * Threads. Spawning is safe when the caller has other threads, because the
 * clone3 child (everything from clone3 to the agent's execve, PID 1's whole
 * life as reaper and forwarder, and helpers forked by pid1_setup) touches no
 * lock another thread of the caller may have held at the moment of the
 * clone: it calls no malloc/free, no stdio stream, no opendir, no
 * strerror/strsignal or other locale function, no fork() (atfork handlers
 * and the allocator's fork locks; _Fork() is used), no qsort. It makes
 * system calls, uses memory precomputed by the parent before the clone
 * (owned by struct glove_sandbox: the copy of argv), stack buffers (about
 * 40 KiB of the calling thread's stack at most), string functions,
 * snprintf with plain %s/%d/%u/%llu conversions into stack buffers, and
 * glove_errno_text() for errno text. A pid1_setup hook must keep to the
 * same rule. Everything on the caller's side (spawn_start, spawn_finish,
 * release, signal, kill, reap, collect, destroy) works on the one struct
 * glove_sandbox given and no process-wide state; distinct sandboxes may be
 * driven from distinct threads. Each descriptor the parent creates is
 * O_CLOEXEC, but a sandbox spawned concurrently from another thread holds
 * copies of the others' pipe ends until its child closes them (before it
 * reports ready); spawn_finish therefore also checks PID 1 itself and never
 * waits for end of file.
 *
 * Glove's own argv is hidden from the agent whatever main() does: the child
 * overwrites the argument area of its copy of the address space (arg_start
 * to arg_end of /proc/self/stat) with "glove-init" before anything else, so
 * /proc/1/cmdline in the sandbox shows only that.
 */

#include <linux/filter.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/container/grant.h"
#include "glove/container/mount_plan.h"

/* The id the agent runs as inside when the invoker is root. */
#define GLOVE_SANDBOX_ROOT_INSIDE_ID 1000
#define GLOVE_SANDBOX_HOSTNAME "glove"
/* RLIMIT_SIGPENDING (soft = hard) of every process in the sandbox: queued
 * real-time signals and POSIX timers, counted per user up to the host's user
 * namespace; a quarter of the invoker's soft limit when that is lower
 * (docs/threat-model.md, "Host-wide and per-user kernel resources"). */
#define GLOVE_SANDBOX_SIGPENDING_MAX 1024

struct glove_sandbox_config {
        char *const *argv;                    /* program and arguments; argv[0] is looked up in
                                               * the sandbox PATH when it has no slash */
        char *const *envp;                    /* the agent's complete environment */
        const struct glove_mount_plan *mounts; /* the perimeter (glove_mount_plan_new, then the
                                               * grants and any other entries); required;
                                               * borrowed until spawn_finish answered */
        const struct sock_fprog *seccomp;     /* from glove_seccomp_build(), borrowed */
        int stdin_fd;                         /* the agent's stdin, stdout and stderr: a */
        int stdout_fd;                        /* descriptor to install as 0 / 1 / 2, or -1 */
        int stderr_fd;                        /* to keep Glove's own */
        bool controlling_tty;                 /* stdin is a PTY slave the agent takes as its
                                               * controlling terminal (new session) */
        uint64_t cpu_time_ms;                 /* RLIMIT_CPU backstop of every agent process, ms
                                               * (rounded up to whole seconds: SIGXCPU there,
                                               * SIGKILL a second later); 0 for none. The
                                               * session engine sets it above the CPU-time
                                               * limit when a cgroup watch enforces that */
        uint64_t file_size_max;               /* RLIMIT_FSIZE of the agent in bytes (soft = hard;
                                               * SIGXFSZ ignored, so a write past it fails
                                               * EFBIG); 0 for none */
        uint64_t nofile;                      /* RLIMIT_NOFILE of the agent (soft = hard: it
                                               * cannot be raised again without
                                               * CAP_SYS_RESOURCE in the host's user
                                               * namespace); 0 to keep Glove's */
        uint64_t nproc;                       /* RLIMIT_NPROC (soft = hard) of every process in
                                               * the sandbox, PID 1 included: its tasks, counted
                                               * per uid in the sandbox's user namespace (the
                                               * kernel exempts uid 0); for a run without a
                                               * cgroup; 0 to keep Glove's */
        int cgroup_fd;                        /* cgroup v2 directory to clone into
                                               * (CLONE_INTO_CGROUP), or -1 */
        bool cgroupns_after_release;          /* PID 1 enters a new cgroup namespace once released
                                               * (after Glove attached it to the run cgroup) */
        /* Called in Glove right after the clone, before the UID/GID maps
         * are written and before the child may start anything (it waits on
         * the release pipe): e.g. to move it into the run cgroup's v1
         * hierarchies, so that its whole setup is charged to the run (spec
         * architecture.md: no child setup executes before cgroup
         * attachment). Returns 0 or -errno with err set. NULL for none. */
        int (*after_clone)(pid_t pid, void *ctx, struct glove_error *err);
        void *after_clone_ctx;
        /* A descriptor PID 1 keeps for pid1_setup (e.g. the egress channel),
         * or -1. Never reaches the agent. */
        int pid1_fd;
        /* A second such descriptor (e.g. the in-sandbox MCP endpoint's
         * channel): used only when above 2 (a zeroed config has none). */
        int pid1_fd2;
        /* Called in PID 1 after the perimeter is built and before privileges
         * are dropped (PID 1 still holds its capabilities in the sandbox's
         * namespaces), with pid1_fd. Returns 0 or -errno with err set; a
         * failure stops the sandbox as a setup failure. NULL for none. A
         * helper process it forks must close every descriptor it does not
         * use itself (inherit_fd included). */
        int (*pid1_setup)(const struct glove_sandbox_config *cfg, struct glove_error *err);
        void *pid1_ctx;
        /* PR_SET_PDEATHSIG SIGKILL in PID 1: the whole sandbox dies with its
         * spawner. The kernel fires it on the exit of the spawning *thread*,
         * not of the process: a daemon that spawns from a worker thread, or
         * whose sessions must outlive a restart, leaves it false (and then
         * owns the teardown through the pidfd). */
        bool parent_death_kill;
        /* inherited-stream-v1 (spec architecture.md, "Historical synthetic
         * status milestone"; session-policy.md, "Guest observation
         * channels"): when has_inherit_fd, inherit_fd (> 2, open; the guest
         * end of a connected AF_UNIX stream socketpair) becomes the agent's
         * descriptor GLOVE_SANDBOX_INHERIT_FD (3), not close-on-exec, after
         * every internal setup descriptor closed: the agent's execve keeps
         * exactly 0, 1, 2 and 3 (the number gaps are closed, every
         * undeclared descriptor too). PID 1 closes its own copy as soon as
         * it forked the agent; pid1_setup's helpers close theirs
         * (pid1_setup above). The descriptor's file status flags are kept as
         * created (a nonblocking socket stays nonblocking: the agent's
         * runtime adopts either). Only needed until
         * glove_sandbox_spawn_start returned: the clone has its own copy
         * from then on, and the caller closes its copy. The filter should be
         * glove_seccomp_prebuilt_managed_inherited (seccomp.h), whose
         * committed range is this descriptor. false (a zeroed config): no
         * inherited descriptor, inherit_fd unused. */
        bool has_inherit_fd;
        int inherit_fd;
};

/* The agent's descriptor for glove_sandbox_config.inherit_fd. */
#define GLOVE_SANDBOX_INHERIT_FD 3

/*
 * What PID 1 does to itself before the agent starts, exposed for processes
 * pid1_setup forks (helpers inside the sandbox): empties every capability
 * set, sets no_new_privs and non-dumpable, and installs prog. Async-signal
 * safe. Returns 0 or -errno.
 */
int glove_sandbox_lockdown(const struct sock_fprog *prog);

struct glove_sandbox_idmap {
        uint32_t inside;
        uint32_t outside;
        uint32_t count;
};

struct glove_sandbox {
        pid_t pid;                       /* PID 1 of the sandbox, in Glove's PID namespace */
        int pidfd;                       /* pidfd of that process, owned */
        int report_fd;                   /* reports from the sandbox, owned */
        int release_fd;                  /* release signal to the sandbox, owned */
        struct glove_sandbox_idmap uid_map, gid_map;
        bool released;
        bool ready;                      /* spawn_finish returned 0 */
        char **argv;                     /* the agent's argv, copied before the clone
                                          * (one allocation), owned; freed by destroy */
};

/* Initial value of a struct glove_sandbox that was never spawned (destroy
 * on it does nothing). */
#define GLOVE_SANDBOX_INIT {.pid = -1, .pidfd = -1, .report_fd = -1, .release_fd = -1}

enum glove_sandbox_outcome_kind {
        GLOVE_SANDBOX_EXITED,        /* value: exit status 0..255 */
        GLOVE_SANDBOX_SIGNALED,      /* value: signal number */
        GLOVE_SANDBOX_EXEC_FAILED,   /* value: errno of execve (ENOENT: not found) */
        GLOVE_SANDBOX_LOST,          /* PID 1 died without a report */
};

struct glove_sandbox_outcome {
        enum glove_sandbox_outcome_kind kind;
        int value;
        bool disk_full;              /* a private writable tmpfs was full when the agent ended */
        char detail[512];            /* for EXEC_FAILED and LOST: what happened */
};

/*
 * Starts creating the sandbox: copies argv, clones the child (into
 * cfg->cgroup_fd when given), runs cfg->after_clone, writes the UID/GID maps
 * and lets the child build its perimeter on its own from here; until then
 * the child only waits. Returns without waiting for the perimeter. Afterwards
 * sb->pid and sb->pidfd name PID 1 and sb->report_fd (O_NONBLOCK,
 * O_CLOEXEC) becomes readable when PID 1 reported ready, reported a setup
 * failure, or died; then call glove_sandbox_spawn_finish(). cfg and what it
 * points to are borrowed until spawn_finish returned something other than
 * -EAGAIN (the hooks and pid1_fd until then too). *sb is initialised here;
 * the caller owns it and must glove_sandbox_destroy() it in every case
 * after a 0 return.
 *
 * The caller must have blocked (sigprocmask) the signals it wants to
 * forward and SIGCHLD if it relies on them; the child handles its own mask.
 *
 * On error nothing is left behind (the child, if any, is killed and
 * reaped: this blocks for as long as the kernel takes to tear it down) and
 * sb holds no resource. Errors: "sandbox.inherit_fd" (-EBADF: has_inherit_fd
 * with inherit_fd not an open descriptor above 2), "sandbox.pipe", "sandbox.clone",
 * "sandbox.idmap", "sandbox.release" (the child died at once), the
 * after_clone hook's; -EPERM/-ENOSPC/-EUSERS from clone3 with code
 * "sandbox.userns" when user namespaces are unavailable to the invoker.
 */
int glove_sandbox_spawn_start(const struct glove_sandbox_config *cfg, struct glove_sandbox *sb, struct glove_error *err);

/*
 * Completes a spawn once sb->report_fd is readable (or at any time: it
 * never blocks). Returns 0 when the child is ready and waits for release;
 * -EAGAIN when it has not reported yet and still runs (err untouched; call
 * again when report_fd is readable); otherwise the setup error, with the
 * stable code of the step that failed in the child ("sandbox.setsid",
 * "mount.*", "grant.changed", "path.*", ...; a code this library does not
 * know arrives as "sandbox.setup" with the child's text in the message), or
 * "sandbox.setup" when PID 1 died without saying why. After an error PID 1
 * has been sent SIGKILL but is NOT reaped here: the caller reaps it (its
 * child source, glove_sandbox_reap) or calls glove_sandbox_destroy, which
 * reaps. Do not call it again after it returned 0 or an error.
 */
int glove_sandbox_spawn_finish(struct glove_sandbox *sb, struct glove_error *err);

/*
 * spawn_start, then poll(report_fd) until spawn_finish answers. Blocks for
 * the perimeter's construction (a few milliseconds). On error the sandbox
 * is destroyed (killed and reaped) and sb holds nothing; on success the
 * child waits for release. Same errors as start and finish.
 */
int glove_sandbox_spawn(const struct glove_sandbox_config *cfg, struct glove_sandbox *sb, struct glove_error *err);

/* Lets the agent start. Returns 0 or -errno ("sandbox.release"). */
int glove_sandbox_release(struct glove_sandbox *sb, struct glove_error *err);

/* Forwards sig to the agent. Returns 0 or -errno (-ESRCH once it is gone). */
int glove_sandbox_signal(struct glove_sandbox *sb, int sig);

/* Kills the whole sandbox: SIGKILL to PID 1 through the pidfd (the kernel
 * then tears down the PID namespace). Never blocks, never reaps; safe to
 * call at any time, idempotent, no effect once PID 1 was reaped. */
void glove_sandbox_kill(struct glove_sandbox *sb);

/*
 * Reaps PID 1 if it has exited: waitid(P_PIDFD, WEXITED | WNOHANG). Never
 * blocks. Returns 1 when it was reaped now (its siginfo in *out when out is
 * not NULL; pass it to glove_sandbox_collect), 0 when it still runs,
 * -ECHILD when it was already reaped (here, by collect, or by someone else
 * through the pidfd or the pid), other -errno from waitid.
 */
int glove_sandbox_reap(struct glove_sandbox *sb, siginfo_t *out);

/*
 * Reads the agent's outcome from PID 1's report. reaped is the siginfo of
 * PID 1 when the caller already reaped it (glove_sandbox_reap, an event
 * loop's child source): then this never blocks. NULL reaps it here,
 * blocking until PID 1 exits. Call once.
 */
void glove_sandbox_collect(struct glove_sandbox *sb, const siginfo_t *reaped, struct glove_sandbox_outcome *out);

/*
 * Closes every descriptor and frees the argv copy. When PID 1 is neither
 * reaped nor known reaped (no reap returned 1, no collect), it is killed
 * and reaped here, blocking until the kernel has torn the PID namespace
 * down (usually well under a millisecond, longer under load): the
 * convenience of a CLI and of error paths. An event loop kills, waits for
 * its child source, reaps, and only then destroys. Idempotent; no effect on
 * GLOVE_SANDBOX_INIT.
 */
void glove_sandbox_destroy(struct glove_sandbox *sb);

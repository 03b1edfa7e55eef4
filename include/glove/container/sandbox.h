/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Linux sandbox (spec architecture.md, Platform isolation; issue
 * "glove exec"). Life of one sandbox:
 *
 *   glove_sandbox_spawn()    clone3 into new user, PID, mount, network, IPC,
 *                            UTS and cgroup namespaces; write the UID/GID
 *                            maps; the child builds the mount perimeter and
 *                            reports ready (or a setup error). Nothing of
 *                            the agent has run yet.
 *   glove_sandbox_release()  the child (PID 1 of the new PID namespace) drops
 *                            every capability, sets no_new_privs, installs
 *                            the seccomp filter and starts the agent as PID 2
 *                            with only descriptors 0, 1 and 2.
 *   glove_sandbox_signal()   forwards a signal to the agent (through PID 1).
 *   glove_sandbox_collect()  after PID 1 has exited: the agent's outcome.
 *
 * UID/GID mapping: an unprivileged invoker U keeps its id inside (map
 * "U U 1"); a root invoker runs the agent as 1000 inside mapped to 0
 * outside (map "1000 0 1"), so the agent is never uid 0 inside and holds no
 * capability anywhere. setgroups is denied in the namespace. See
 * docs/threat-model.md.
 */

#include <linux/filter.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/container/grant.h"

/* The id the agent runs as inside when the invoker is root. */
#define GLOVE_SANDBOX_ROOT_INSIDE_ID 1000
#define GLOVE_SANDBOX_HOSTNAME "glove"

struct glove_sandbox_config {
        char *const *argv;                    /* program and arguments; argv[0] is looked up in
                                               * the sandbox PATH when it has no slash */
        char *const *envp;                    /* the agent's complete environment */
        const struct glove_grant_set *grants; /* borrowed for the duration of spawn */
        const struct sock_fprog *seccomp;     /* from glove_seccomp_build(), borrowed */
        int stdin_fd;                         /* the agent's stdin, stdout and stderr: a */
        int stdout_fd;                        /* descriptor to install as 0 / 1 / 2, or -1 */
        int stderr_fd;                        /* to keep Glove's own */
        bool controlling_tty;                 /* stdin is a PTY slave the agent takes as its
                                               * controlling terminal (new session) */
        uint64_t disk_bytes;                  /* size of each private writable tmpfs (/tmp, HOME,
                                               * /dev/shm); 0 for the kernel default */
        uint64_t cpu_time_ms;                 /* RLIMIT_CPU backstop per process; 0 for none */
        uint32_t inotify_instances;           /* the sandbox user namespace's
                                               * user.max_inotify_instances and */
        uint32_t inotify_watches;             /* _watches (per-user counters shared
                                               * with the invoker's processes); 0: unset */
        int cgroup_fd;                        /* cgroup v2 directory to clone into
                                               * (CLONE_INTO_CGROUP), or -1 */
        bool cgroupns_after_release;          /* PID 1 enters a new cgroup namespace once released
                                               * (after Glove attached it to the run cgroup) */
        /* Called in Glove right after the clone, while the child builds its
         * perimeter (e.g. to move it into a cgroup v1 hierarchy, which waits
         * for an RCU grace period): returns 0 or -errno with err set. NULL
         * for none. */
        int (*after_clone)(pid_t pid, void *ctx, struct glove_error *err);
        void *after_clone_ctx;
        /* A descriptor PID 1 keeps for pid1_setup (e.g. the egress channel),
         * or -1. Never reaches the agent. */
        int pid1_fd;
        /* Called in PID 1 after the perimeter is built and before privileges
         * are dropped (PID 1 still holds its capabilities in the sandbox's
         * namespaces), with pid1_fd. Returns 0 or -errno with err set; a
         * failure stops the sandbox as a setup failure. NULL for none. */
        int (*pid1_setup)(const struct glove_sandbox_config *cfg, struct glove_error *err);
        void *pid1_ctx;
};

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
};

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
 * Creates the sandbox and builds its perimeter; returns once the child is
 * ready and waiting for release, or has failed. The caller must have blocked
 * (sigprocmask) the signals it wants to forward and SIGCHLD; the child
 * handles its own mask.
 *
 * On error nothing is left behind (the child is killed and reaped). Errors
 * carry the stable code of the step that failed ("sandbox.clone",
 * "sandbox.idmap", "mount.*", "grant.changed", ...). -EPERM from clone3 with
 * code "sandbox.userns" means user namespaces are unavailable to the invoker.
 */
int glove_sandbox_spawn(const struct glove_sandbox_config *cfg, struct glove_sandbox *sb, struct glove_error *err);

/* Lets the agent start. Returns 0 or -errno ("sandbox.release"). */
int glove_sandbox_release(struct glove_sandbox *sb, struct glove_error *err);

/* Forwards sig to the agent. Returns 0 or -errno (-ESRCH once it is gone). */
int glove_sandbox_signal(struct glove_sandbox *sb, int sig);

/* Kills the whole sandbox (SIGKILL to PID 1 tears down the PID namespace)
 * and reaps PID 1. Safe to call at any time; idempotent. */
void glove_sandbox_kill(struct glove_sandbox *sb);

/*
 * Reads the agent's outcome from PID 1's report. reaped is the siginfo of
 * PID 1 when the caller already reaped it (an event loop's child source), or
 * NULL to reap it here, blocking until it exits. Call once.
 */
void glove_sandbox_collect(struct glove_sandbox *sb, const siginfo_t *reaped, struct glove_sandbox_outcome *out);

/* Closes descriptors; kills the sandbox first if it still runs. */
void glove_sandbox_destroy(struct glove_sandbox *sb);

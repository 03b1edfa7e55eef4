/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A private cgroup per run: the memory, pids and CPU-time part of the six
 * resource limits (issue 4, "The six limits"; spec architecture.md, Platform
 * isolation: resource limits). docs/limits.md is the user-facing reference.
 *
 * One interface, two backends, chosen by probing (glove_cgroup_probe):
 *
 *   v2  The caller's cgroup C (from /proc/self/cgroup, "0::PATH") lies in a
 *       mounted cgroup2 hierarchy and the run cgroup can be given the memory,
 *       pids and cpu controllers by a node the caller may write (delegation,
 *       e.g. systemd Delegate=yes with DelegateSubgroup=). Placement:
 *         under C   when C's cgroup.subtree_control already hands the
 *                   three controllers down (a root cgroup, or a manager
 *                   that prepared C) and C is writable;
 *         beside C  otherwise: a sibling of C under its parent P, which must
 *                   be writable together with P/cgroup.procs (the common
 *                   ancestor for moving a process in). When P is offered the
 *                   controllers but does not hand them down yet, Glove
 *                   enables them in P/cgroup.subtree_control, and only when
 *                   P is owned by the caller and holds no process of its own
 *                   (spec architecture.md: "enables the three controllers
 *                   only on the empty delegated parent, and creates session
 *                   cgroups as siblings of the supervisor subgroup").
 *       Glove never touches any other cgroup's controllers, and glove exec
 *       never moves itself (gloved may: glove_cgroup_host_setup below).
 *   v1  The memory, pids and cpuacct controllers are mounted as cgroup v1
 *       hierarchies (cpu co-mounted or separate) and the caller may create a
 *       directory under its own cgroup in each. cpu (when it is a separate
 *       hierarchy) and freezer are joined when present; they are optional.
 *
 * v2 is preferred; v1 is used when v2 is not usable. On a hybrid host where
 * the v1 hierarchies hold the controllers, the v2 tree has none, and v1 is
 * chosen.
 *
 * Every directory and file is reached by descriptor: the hierarchy's mount
 * point is opened without following symbolic links and checked to be the
 * cgroup file system (statfs magic and device of the mount in
 * /proc/self/mountinfo); the caller's cgroup is opened beneath it
 * (RESOLVE_BENEATH, no links); the run cgroup is created with mkdirat() on
 * that pinned descriptor and opened with O_NOFOLLOW, and every control file
 * is opened with openat(dirfd, name, O_NOFOLLOW|O_CLOEXEC). Paths are kept
 * only as text for messages and audit.
 *
 * Containment of the agent (done by the sandbox, not here): the agent runs
 * in its own cgroup namespace and has no path to any cgroup file (no cgroup
 * file system and no /sys mounted, mount(2) denied by the seccomp filter, no
 * capabilities, host /proc hidden by the PID namespace), so it can neither
 * leave its cgroup nor change its limits. File permissions alone would not
 * do: a root invoker's agent is checked as host uid 0, and a delegated
 * unprivileged invoker owns the run cgroup's files (docs/limits.md).
 *
 * Thread safety: a struct glove_cgroup is used by one thread at a time.
 */

#include <linux/limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* Bounds of the limits (inclusive); the maxima are those of session plans
 * (docs/session-policy.md). Memory below 1 MiB is refused (the sandbox's own
 * init would not start); the kernel rounds it down to the page size. */
#define GLOVE_CGROUP_MEMORY_MIN (UINT64_C(1) << 20)          /* 1 MiB */
#define GLOVE_CGROUP_MEMORY_MAX (UINT64_C(1) << 44)          /* 16 TiB, as session plans */
#define GLOVE_CGROUP_PIDS_MIN UINT64_C(1)
#define GLOVE_CGROUP_PIDS_MAX UINT64_C(4194304)              /* PID_MAX_LIMIT */
#define GLOVE_CGROUP_CPU_TIME_MS_MIN UINT64_C(1)
#define GLOVE_CGROUP_CPU_TIME_MS_MAX (UINT64_C(24) * 3600 * 1000) /* 24 h, as session plans */

/* Defaults Glove applies when the operator gives no limit option
 * (docs/limits.md). The memory default is computed: see
 * glove_cgroup_limits_default(). */
#define GLOVE_CGROUP_DEFAULT_PIDS UINT64_C(512)
#define GLOVE_CGROUP_DEFAULT_CPU_TIME_MS (UINT64_C(24) * 3600 * 1000) /* 24 h */
#define GLOVE_CGROUP_DEFAULT_MEMORY_CAP (UINT64_C(4) << 30)           /* 4 GiB */
/* TCP socket buffers of a run under cgroup v1, where the kernel counts them
 * apart from memory.limit_in_bytes (memory.kmem.tcp.limit_in_bytes): a
 * quarter of the memory limit, at most this (docs/limits.md). */
#define GLOVE_CGROUP_TCP_MEMORY_CAP (UINT64_C(64) << 20)               /* 64 MiB */

/* How long glove_cgroup_kill() waits for the cgroup to become empty, and how
 * long glove_cgroup_destroy() retries rmdir on a cgroup that is still busy,
 * in milliseconds. */
#define GLOVE_CGROUP_KILL_TIMEOUT_MS 3000
#define GLOVE_CGROUP_RMDIR_TIMEOUT_MS 2000

/* Longest run cgroup name, with the NUL: "glove-<pid>-<16 hex>". */
#define GLOVE_CGROUP_NAME_MAX 48

/* Most directories one run cgroup has (v1: one per hierarchy joined). */
#define GLOVE_CGROUP_DIRS_MAX 5

/* Longest reason text kept by the probe, with the NUL. */
#define GLOVE_CGROUP_REASON_MAX 512

/*
 * The cgroup part of a run's resource limits (session plan "limits": the
 * fields of the same names). None of them may be 0: there is no "unlimited";
 * defaults come from the caller (glove_cgroup_limits_default()).
 */
struct glove_cgroup_limits {
        uint64_t memory_bytes; /* hard limit on RAM; swap is held at 0 */
        uint64_t pids;         /* tasks (processes and threads) in the whole tree */
        uint64_t cpu_time_ms;  /* CPU time of the whole tree; watched by the caller
                                * through glove_cgroup_stats()/glove_cgroup_breach(),
                                * not enforced by the kernel here */
};

enum glove_cgroup_backend {
        GLOVE_CGROUP_BACKEND_NONE = 0,
        GLOVE_CGROUP_BACKEND_V1 = 1,
        GLOVE_CGROUP_BACKEND_V2 = 2,
};

/* Which limit a run breached. glove_cgroup_breach() reports the first three;
 * the run's own watchers report wall time and output (src/run/limits.c). */
enum glove_cgroup_limit {
        GLOVE_CGROUP_LIMIT_NONE = 0,
        GLOVE_CGROUP_LIMIT_MEMORY = 1,
        GLOVE_CGROUP_LIMIT_PIDS = 2,
        GLOVE_CGROUP_LIMIT_CPU_TIME = 3,
        GLOVE_CGROUP_LIMIT_WALL_TIME = 4,
        GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT = 5,
};

/* Where run cgroups go (docs/limits.md, "Which cgroup backend, and where").
 * The probe reports the first four; glove_cgroup_host_setup() the last two. */
enum glove_cgroup_placement {
        GLOVE_CGROUP_PLACEMENT_NONE = 0,       /* no backend */
        GLOVE_CGROUP_PLACEMENT_UNDER = 1,      /* v2: children of the caller's cgroup */
        GLOVE_CGROUP_PLACEMENT_BESIDE = 2,     /* v2: siblings of the caller's cgroup */
        GLOVE_CGROUP_PLACEMENT_V1 = 3,         /* v1: children of the caller's cgroups */
        GLOVE_CGROUP_PLACEMENT_DELEGATED_SUBGROUP = 4, /* v2: gloved found itself in glove-host
                                                        * (systemd DelegateSubgroup=), siblings */
        GLOVE_CGROUP_PLACEMENT_DELEGATED_MOVED = 5,    /* v2: gloved made glove-host in its
                                                        * delegated cgroup and moved itself there
                                                        * (systemd < 254), siblings */
};

/* The name of gloved's own subgroup in its delegated cgroup (the unit's
 * DelegateSubgroup=, docs/daemon.md). */
#define GLOVE_CGROUP_HOST_SUBGROUP "glove-host"

/* What the probe found. */
struct glove_cgroup_probe {
        enum glove_cgroup_backend backend;     /* the backend create would use, or NONE */
        enum glove_cgroup_placement placement; /* UNDER, BESIDE, V1, or NONE */
        char parent[PATH_MAX];                 /* where run cgroups go (v1: the memory
                                                * hierarchy's place; the others are
                                                * alike), "" with NONE */
        char v2_reason[GLOVE_CGROUP_REASON_MAX]; /* why v2 was passed over, "" if chosen */
        char v1_reason[GLOVE_CGROUP_REASON_MAX]; /* why v1 was passed over, "" if chosen
                                                  * or not looked at (v2 chosen) */
};

/* Features of one run cgroup, known after creation. */
struct glove_cgroup_info {
        enum glove_cgroup_backend backend;
        const char *name;     /* "glove-<pid>-<hex>", owned by the cgroup */
        size_t dirs;          /* directories (v2: 1; v1: one per hierarchy) */
        bool swap_limited;    /* the kernel holds swap at 0 (v1: memory.memsw.limit_in_bytes
                               * = limit plus memory.swappiness 0; v2: memory.swap.max 0).
                               * false: swap accounting is off; v1 sets only
                               * memory.swappiness 0, v2 nothing (docs/limits.md) */
        bool kill_file;       /* v2 cgroup.kill is used to kill */
        bool freezer;         /* v1 freezer or v2 cgroup.freeze is used while killing */
        bool memory_peak;     /* the kernel keeps the peak (v1 memory.max_usage_in_bytes,
                               * v2 memory.peak); false: the peak is the highest
                               * memory.current seen by glove_cgroup_stats() */
};

/* Usage and limit events of a run cgroup (glove_cgroup_stats()). */
struct glove_cgroup_stats {
        uint64_t cpu_usage_ns;        /* v1 cpuacct.usage; v2 cpu.stat usage_usec * 1000 */
        uint64_t memory_peak_bytes;   /* see glove_cgroup_info.memory_peak */
        uint64_t memory_current_bytes;
        uint64_t pids_current;        /* tasks charged to the cgroup: pids.current (v2 without the
                                       * pids controller: processes listed). A task that
                                       * exited stays counted until its parent reaps it */
        uint64_t oom_kills;           /* v1 memory.oom_control oom_kill (kernels before 4.13:
                                       * 1 while under_oom, else 0); v2 memory.events oom_kill */
        uint64_t pids_max_events;     /* forks refused at pids.max (pids.events "max") */
        bool memory_oom_killed;       /* oom_kills > 0: the memory limit was hit */
        bool pids_limit_hit;          /* pids_max_events > 0 */
};

struct glove_cgroup;

/*
 * Fills out with the defaults Glove applies without options
 * (docs/limits.md): pids GLOVE_CGROUP_DEFAULT_PIDS, cpu_time_ms
 * GLOVE_CGROUP_DEFAULT_CPU_TIME_MS, memory_bytes the smaller of
 * GLOVE_CGROUP_DEFAULT_MEMORY_CAP and half the physical RAM (sysinfo(2)),
 * never below 256 MiB (nor below GLOVE_CGROUP_MEMORY_MIN).
 */
void glove_cgroup_limits_default(struct glove_cgroup_limits *out);

/* The cgroup v1 TCP socket-buffer limit of a run whose memory limit is
 * memory_bytes: memory_bytes / 4, at most GLOVE_CGROUP_TCP_MEMORY_CAP, in
 * bytes (a multiple of 4096). */
uint64_t glove_cgroup_tcp_memory_bytes(uint64_t memory_bytes);

/*
 * Checks every limit against its bounds above. Returns 0, or -EINVAL with
 * "cgroup.invalid_limit" naming the field (0 is refused: no unlimited).
 */
int glove_cgroup_limits_check(const struct glove_cgroup_limits *limits, struct glove_error *err);

/*
 * Probes the host (reads /proc/self/cgroup and /proc/self/mountinfo, opens
 * the candidate places, checks write access with faccessat(AT_EACCESS))
 * without creating anything. out is filled in every case.
 *
 * Returns 0 with out->backend V1 or V2, or:
 *   -EACCES "cgroup.not_delegated"  a hierarchy with the controllers exists
 *                                   but the caller may not create cgroups in
 *                                   it (e.g. an unprivileged user without
 *                                   delegation); the message gives both
 *                                   backends' reasons;
 *   -EOPNOTSUPP "cgroup.unavailable" neither backend has the controllers
 *                                   mounted for the caller;
 *   -errno "cgroup.proc"            /proc/self/cgroup or mountinfo could not
 *                                   be read or exceeded its bound.
 */
int glove_cgroup_probe(struct glove_cgroup_probe *out, struct glove_error *err);

/*
 * Creates the run's private cgroup, named "glove-<pid>-<16 random hex>", in
 * the place the probe chooses, and applies the limits:
 *   v1  memory.oom_control 0 (the OOM killer is on, whatever the parent
 *       says), memory.limit_in_bytes, memory.memsw.limit_in_bytes = the same
 *       value when present (swap accounting on), memory.swappiness 0;
 *       pids.max.
 *   v2  memory.max, memory.swap.max 0 when present; pids.max.
 * On any failure everything created so far is removed.
 *
 * limits is copied. *out receives the cgroup (free with
 * glove_cgroup_destroy()); it is NULL on error.
 *
 * Errors: those of glove_cgroup_limits_check() and glove_cgroup_probe();
 * -EACCES/-EPERM/-EROFS "cgroup.not_delegated" when mkdir is refused;
 * -errno "cgroup.create" other mkdir/open failures; -errno "cgroup.limit"
 * when a limit cannot be written (the message names the file).
 */
int glove_cgroup_create(const struct glove_cgroup_limits *limits, struct glove_cgroup **out,
                        struct glove_error *err);

/*
 * The identity (st_dev, st_ino) the directory run cgroups are made in must
 * have: glove_cgroup_create_pinned() refuses another one. Plain numbers, so
 * a forked process (gloved's session keeper) carries it in memory.
 */
struct glove_cgroup_pin {
        bool set;      /* false: no check (as glove_cgroup_create) */
        uint64_t dev;
        uint64_t ino;
};

/*
 * As glove_cgroup_create, and when pin->set the place the probe chose must
 * be the v2 directory of that identity (the delegated parent gloved pinned,
 * glove_cgroup_host_pin()); otherwise -ESTALE "cgroup.parent_replaced"
 * naming both identities, and nothing is created. pin may be NULL.
 */
int glove_cgroup_create_pinned(const struct glove_cgroup_limits *limits, const struct glove_cgroup_pin *pin,
                               struct glove_cgroup **out, struct glove_error *err);

/*
 * gloved's own place in a delegated cgroup v2 tree (spec architecture.md,
 * the Linux unit; docs/daemon.md). Only gloved's managed runtime uses it:
 * glove exec and glove run never move themselves.
 *
 * glove_cgroup_host_setup() looks at gloved's cgroup C (the "0::" line of
 * /proc/self/cgroup, in the verified cgroup2 mount) and its parent P:
 *
 *   C is named glove-host (systemd >= 254, DelegateSubgroup=glove-host):
 *       P must be the delegated node: owned by the effective uid, its
 *       cgroup.procs, cgroup.subtree_control and directory writable, offering
 *       memory, pids and cpu in cgroup.controllers, of cgroup.type "domain",
 *       and holding no process. Placement DELEGATED_SUBGROUP.
 *   C itself is delegated (as P above) and does not hand the controllers
 *       down yet (systemd 252: no DelegateSubgroup=, gloved runs in the unit
 *       cgroup): when C's cgroup.procs lists only this process, gloved
 *       creates C/glove-host (an existing one must be a directory owned by
 *       the uid), writes its pid to glove-host/cgroup.procs (the kernel moves
 *       every thread), checks that C lists no process any more, and writes
 *       "+cpu +memory +pids" to C/cgroup.subtree_control. Placement
 *       DELEGATED_MOVED. When C holds other processes and P is not writable
 *       by the uid (run cgroups could go neither under nor beside C), it is
 *       refused; when P is writable the ordinary placement applies.
 *   anything else (v1, a hybrid host's controller-less v2 tree, a cgroup
 *       not owned by the uid): not applicable, *out is NULL, and the probe
 *       alone decides as for any caller.
 *
 * Either way gloved's subgroup and the delegated parent are then pinned:
 * O_RDONLY|O_DIRECTORY descriptors held until glove_cgroup_host_free(), with
 * their (st_dev, st_ino). Session cgroups are made as siblings of the
 * subgroup, in the parent (the probe, run in the keeper, finds them as
 * "beside"; glove_cgroup_create_pinned() checks it is the pinned parent).
 *
 * Returns 0 (*out owned by the caller, or NULL: not applicable), or -errno
 * with *out NULL and one of:
 *   "cgroup.delegated_shared"  the delegated cgroup holds processes other
 *                              than gloved's (252 layout), or the parent of
 *                              glove-host holds processes (254 layout);
 *   "cgroup.parent_not_owned"  gloved is in glove-host but its parent is not
 *                              a node delegated to the uid (owner, writable
 *                              files, the three controllers offered, domain);
 *   "cgroup.host_move"         glove-host could not be made or entered, or
 *                              the controllers not enabled (message names
 *                              the file and the errno);
 *   "cgroup.proc"              /proc/self/cgroup or mountinfo unreadable.
 */
struct glove_cgroup_host;
int glove_cgroup_host_setup(struct glove_cgroup_host **out, struct glove_error *err);

/*
 * Re-opens the pinned parent's and subgroup's paths beneath the pinned mount
 * and compares their identity with the pinned descriptors'. Returns 0, or
 * -ESTALE "cgroup.parent_replaced" (a directory there was removed or
 * replaced) naming the path and both identities. h may be NULL (returns 0).
 */
int glove_cgroup_host_check(const struct glove_cgroup_host *h, struct glove_error *err);

/* The placement h found (DELEGATED_SUBGROUP or DELEGATED_MOVED). */
enum glove_cgroup_placement glove_cgroup_host_placement(const struct glove_cgroup_host *h);

/* The pinned parent's identity, for glove_cgroup_create_pinned(); pin->set
 * is false when h is NULL. */
void glove_cgroup_host_pin(const struct glove_cgroup_host *h, struct glove_cgroup_pin *out);

/* The pinned parent's and subgroup's absolute paths (messages only); owned
 * by h. */
const char *glove_cgroup_host_parent_path(const struct glove_cgroup_host *h);
const char *glove_cgroup_host_self_path(const struct glove_cgroup_host *h);

/* Closes the descriptors and frees h (NULL is fine). Moves nothing back. */
void glove_cgroup_host_free(struct glove_cgroup_host *h);

/* "none", "under", "beside", "v1", "delegated_subgroup", "delegated_moved"
 * (the capabilities' "cgroup_placement"); NULL for unknown values. */
const char *glove_cgroup_placement_name(enum glove_cgroup_placement p);

/* Facts about cg; see struct glove_cgroup_info. */
/*
 * Removes the empty run cgroups of Glove processes that are gone (killed
 * with SIGKILL before they removed their own), in every hierarchy a run
 * cgroup would be made in, as glove_cgroup_create does before it creates
 * one. For a service at start-up (gloved), so that leftovers do not wait for
 * the next session. Best effort: a cgroup still holding a process, or one
 * this user may not remove, stays. No error is reported.
 */
void glove_cgroup_sweep(void);

void glove_cgroup_info(const struct glove_cgroup *cg, struct glove_cgroup_info *out);

/* The absolute path of cg's directory number index (0 <= index < info.dirs),
 * for messages and audit only; NULL past the end. Owned by cg. */
const char *glove_cgroup_path(const struct glove_cgroup *cg, size_t index);

/*
 * v2: the descriptor of the cgroup directory (O_RDONLY|O_DIRECTORY|
 * O_CLOEXEC), for clone3() with CLONE_INTO_CGROUP in clone_args.cgroup
 * (Linux 5.7+), so the child starts inside. Borrowed: it stays owned by cg.
 * v1 returns -EOPNOTSUPP: use glove_cgroup_attach().
 */
int glove_cgroup_clone_fd(const struct glove_cgroup *cg);

/*
 * Moves process pid (all its threads) into the run cgroup: writes it to
 * cgroup.procs of every directory (v1: memory, pids, cpuacct and the
 * optional freezer hierarchy; v2: the one directory). The caller
 * attaches the sandbox's PID 1 before it lets the agent run, so every
 * process the agent starts is inside.
 *
 * A cgroup namespace's root is the cgroup its creator was in: a sandbox
 * cloned with CLONE_NEWCGROUP and attached afterwards sees the run cgroup as
 * "/glove-..." below its namespace root. To make the run cgroup the root,
 * clone into it (v2) or let PID 1 unshare(CLONE_NEWCGROUP) after attaching.
 *
 * Returns 0, or -errno "cgroup.attach" naming the directory (the process
 * may then be in some hierarchies and not others: kill it and destroy cg).
 */
int glove_cgroup_attach(struct glove_cgroup *cg, pid_t pid, struct glove_error *err);

/*
 * Reads usage and limit events. Not const: on v2 without memory.peak the
 * peak is the highest memory.current seen across calls, so call it
 * periodically while the run lasts.
 *
 * Returns 0, or -errno "cgroup.stat" naming the file that could not be read
 * or parsed.
 */
int glove_cgroup_stats(struct glove_cgroup *cg, struct glove_cgroup_stats *out, struct glove_error *err);

/*
 * Which limit stats shows breached, in this order: memory (an OOM kill),
 * pids (a fork refused at pids.max), cpu_time (usage reached cpu_time_ms).
 * GLOVE_CGROUP_LIMIT_NONE when none.
 */
enum glove_cgroup_limit glove_cgroup_breach(const struct glove_cgroup *cg, const struct glove_cgroup_stats *stats);

/* "memory", "pids", "cpu_time" (the status JSON "limit" values), or NULL for
 * GLOVE_CGROUP_LIMIT_NONE and unknown values. */
const char *glove_cgroup_limit_name(enum glove_cgroup_limit limit);

/*
 * Kills every process in the cgroup and waits until it is empty, at most
 * GLOVE_CGROUP_KILL_TIMEOUT_MS (sleeping between glove_cgroup_kill_once
 * passes; cgroup.kill is written once):
 *   v2 with cgroup.kill (Linux 5.14+): writes 1 to it (the kernel also kills
 *       processes forked meanwhile);
 *   otherwise rounds of: freeze (v1 freezer.state FROZEN or v2 cgroup.freeze
 *       1, when available), read cgroup.procs, open a pidfd for each pid,
 *       read cgroup.procs again and signal SIGKILL through the pidfd only to
 *       pids still listed (a recycled pid is never signalled), thaw; until
 *       every directory's cgroup.procs is empty.
 * Processes killed become zombies of their parents, which must reap them.
 * A cgroup that was killed is meant only to be destroyed: the kernel (seen on
 * 6.18) kills at once any process later cloned into it with
 * CLONE_INTO_CGROUP.
 *
 * Returns 0 when empty, -ETIMEDOUT "cgroup.kill" when processes remain,
 * other -errno "cgroup.kill".
 */
int glove_cgroup_kill(struct glove_cgroup *cg, struct glove_error *err);

/*
 * One non-blocking kill pass, for an event loop (no sleep, no wait):
 *   v2 with cgroup.kill: writes 1 to it;
 *   otherwise, when processes remain: one freeze / list / pidfd / list /
 *       SIGKILL / thaw round over every directory (as glove_cgroup_kill).
 * Returns 0 when the cgroup is empty (already, or after the pass); -EAGAIN
 * when processes remain (they are dying: err untouched; call again later,
 * e.g. on a timer or after reaping PID 1); other -errno "cgroup.kill".
 * Killed processes become zombies of their parents, which must reap them.
 * After glove_cgroup_try_destroy() answered -EAGAIN it still works on the
 * directories not yet removed (removed ones are skipped).
 */
int glove_cgroup_kill_once(struct glove_cgroup *cg, struct glove_error *err);

/*
 * One non-blocking attempt to remove every directory not yet removed
 * (rmdir each once, no sleep). Returns 0 when every directory is gone and
 * cg was freed; -EAGAIN when one is still busy (its last tasks are still
 * exiting, or processes remain: kill first): cg stays valid, err untouched,
 * and the caller calls it again later (or glove_cgroup_destroy to give up
 * waiting); other -errno "cgroup.busy" naming the directory left behind,
 * cg freed. cg may be NULL (returns 0).
 */
int glove_cgroup_try_destroy(struct glove_cgroup *cg, struct glove_error *err);

/*
 * Gives up on cg without waiting: closes its descriptors and frees it,
 * leaving whatever directories remain in place (an event loop's teardown
 * that ran out of time; the leftover sweep of a later run removes them once
 * empty). cg may be NULL.
 */
void glove_cgroup_abandon(struct glove_cgroup *cg);

/*
 * Kills what remains (glove_cgroup_kill), removes every directory
 * (rmdir, retried while busy for up to GLOVE_CGROUP_RMDIR_TIMEOUT_MS) and
 * frees cg, in every case. Blocks (sleeps) for up to both timeouts: the
 * CLI's and error paths' convenience; an event loop uses kill_once and
 * try_destroy. Built on the same passes as those. cg may be NULL (returns
 * 0).
 *
 * Returns 0 when the cgroup is gone, or -errno "cgroup.busy" (or the kill
 * error) naming a directory left behind.
 */
int glove_cgroup_destroy(struct glove_cgroup *cg, struct glove_error *err);

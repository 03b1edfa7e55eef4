/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The six resource limits of one run (issue "limits"; docs/limits.md):
 * resolution of options and defaults, the run cgroup, breach detection and
 * the terminal status. Shared by glove exec and glove run; internal to the
 * run module.
 */

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/container/cgroup.h"
#include "glove/container/sandbox.h"
#include "glove/run/exec_options.h"

/* Defaults not owned by the cgroup layer (docs/limits.md). */
#define GLOVE_LIMITS_DEFAULT_DISK (UINT64_C(1) << 30)
#define GLOVE_LIMITS_DEFAULT_OUTPUT (UINT64_C(1) << 30)
/* How often the cgroup is read while the agent runs, in milliseconds. */
#define GLOVE_LIMITS_POLL_MS 50

struct glove_limits {
        uint64_t cpu_time_ms, memory_bytes, pids, wall_time_ms, disk_bytes, output_bytes;
        bool cgroup_explicit;          /* memory, pids or cpu time came from an option */
};

struct glove_watch {
        struct glove_limits limits;
        struct glove_cgroup *cg;       /* NULL when cgroups are unavailable (degraded, warned) */
        bool attach_after_clone;       /* v1: Glove attaches PID 1 after clone */
        uint64_t start_us;             /* set at release */
        _Atomic uint64_t output_bytes; /* counted on the drain path */
        _Atomic int breach;            /* enum glove_cgroup_limit of the first breach, or NONE */
        struct glove_sandbox *sb;      /* to kill on a breach; set once spawned */
        bool killed;
};

/* Options and defaults into limits. */
void glove_limits_resolve(const struct glove_exec_options *opts, struct glove_limits *out);

/*
 * Creates the run cgroup. When cgroups are not delegated to the invoker and
 * no cgroup limit was given explicitly, the run continues without one after a
 * one-line warning (memory and pids are then not enforced; CPU time falls back
 * to RLIMIT_CPU per process); with an explicit --memory, --pids or --cpu-time
 * it is an error ("cgroup.not_delegated"). Fills cfg's cgroup fields.
 */
int glove_watch_setup(struct glove_watch *w, const struct glove_limits *limits, struct glove_sandbox_config *cfg,
                      struct glove_error *err);

/* After spawn: attaches PID 1 (v1) and remembers the sandbox. */
int glove_watch_attach(struct glove_watch *w, struct glove_sandbox *sb, struct glove_error *err);

/* Records a breach (first one wins) and kills the whole tree. Thread-safe. */
void glove_watch_breach(struct glove_watch *w, enum glove_cgroup_limit limit);

/* Adds n output bytes; over the output limit records a breach. Returns how
 * many of the n bytes may still be relayed (all of them below the limit,
 * what is left up to it otherwise). Thread-safe. */
size_t glove_watch_output(struct glove_watch *w, size_t n);

/* Reads the cgroup and the clock; records a breach if one happened. Returns
 * the milliseconds until the next check is due. */
int glove_watch_poll(struct glove_watch *w);

struct glove_run_status {
        int exit_code;
        int signal;                    /* -1 when none */
        const char *limit;             /* NULL when none */
        uint64_t cpu_time_ms, peak_memory_bytes, wall_time_ms, output_bytes;
};

/*
 * After PID 1 is reaped: the final reading, Glove's exit status (137 on a
 * breach, with the one-line reason on stderr when report is true; else the
 * outcome's status), and the status object. Removes the cgroup.
 */
void glove_watch_finish(struct glove_watch *w, const struct glove_sandbox_outcome *o, const char *program, bool report,
                        struct glove_run_status *st);

/* {"exit_code","signal","limit","cpu_time_ms","peak_memory_bytes",
 *  "wall_time_ms","output_bytes"}; new reference or NULL. */
json_t *glove_run_status_json(const struct glove_run_status *st);

/* Writes the status object as name inside the pinned directory dirfd
 * (created 0600, replaced atomically via a temporary file there; the final
 * name must not be a directory). Errors: "status.write". */
int glove_run_status_write(int dirfd, const char *name, const struct glove_run_status *st, struct glove_error *err);

/* Releases the cgroup if finish was not reached. */
void glove_watch_free(struct glove_watch *w);

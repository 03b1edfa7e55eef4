/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the glove exec and glove run front ends share around the session
 * engine: options into a session description (limits, egress rules), and a
 * session outcome into Glove's exit status, its one-line reason on stderr
 * and the run status object. Internal to the run module; command-line words
 * live here, not in the engine.
 */

#include <stdbool.h>

#include "glove/net/rule.h"
#include "glove/run/exec_options.h"
#include "glove/session/session.h"
#include "run_limits.h"

/* Options and defaults into the six limits; *policy REQUIRED when one of
 * --memory, --pids, --cpu-time was given, else OPTIONAL. */
void glove_front_limits(const struct glove_exec_options *opts, struct glove_session_limits *out,
                        enum glove_session_cgroup_policy *policy);

/* --egress-allow and --egress-allow-private rules into *policy (initialised
 * here; the caller frees it): address-literal rules and every
 * --egress-allow-private rule carry allow_private, name rules of
 * --egress-allow do not. *enabled false without rules. Errors: the net
 * module's, prefixed with the option. */
int glove_front_egress(const struct glove_exec_options *opts, struct glove_net_policy *policy, bool *enabled,
                       struct glove_error *err);

/*
 * Adds the run's effective settings to a launch record (docs/limits.md,
 * "Audit records"): "limits" {cpu_time_ms, memory_bytes, pids,
 * wall_time_ms (null: none), disk_bytes, output_bytes, nofile, cgroup}
 * (defaults filled in; cgroup false: memory and pids are not enforced, CPU
 * time per process only), "egress" null when offline, else {"allow": [the
 * --egress-allow rules as given], "allow_private": [the
 * --egress-allow-private rules as given]}, and "home_from" (the --home-from
 * path, or null). enf: what the session enforces (borrowed). Returns 0, or
 * -ENOMEM.
 */
int glove_front_launch_settings(const struct glove_exec_options *opts, const char *home_from,
                                const struct glove_session_enforced *enf, json_t *launch);

/*
 * The terminal status of a session that reached ops.exited: Glove's exit
 * status (137 on a breached limit, with its one-line reason on stderr when
 * report is true; else the agent's status as glove_launch_outcome_status
 * gives it, or GLOVE_EXIT_FAILURE when report is false) and usage. A
 * SETUP_FAILED outcome is not handled here (print its error).
 */
void glove_front_status(const struct glove_session_outcome *o, const char *program, bool report, struct glove_run_status *st);

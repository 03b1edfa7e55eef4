/* SPDX-License-Identifier: Apache-2.0 */
#include "session_front.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "glove/audit/log.h"
#include "glove/base/cleanup.h"
#include "launch.h"

void glove_front_limits(const struct glove_exec_options *opts, struct glove_session_limits *out,
                        enum glove_session_cgroup_policy *policy) {
        struct glove_cgroup_limits d;
        glove_cgroup_limits_default(&d);
        *out = (struct glove_session_limits){
                .cpu_time_ms = opts->cpu_time_ms ? opts->cpu_time_ms : d.cpu_time_ms,
                .memory_bytes = opts->memory_bytes ? opts->memory_bytes : d.memory_bytes,
                .pids = opts->pids ? opts->pids : d.pids,
                .wall_time_ms = opts->wall_time_ms, /* 0: no wall-time limit by default */
                .disk_bytes = opts->disk_bytes ? opts->disk_bytes : GLOVE_SESSION_DEFAULT_DISK,
                .terminal_output_bytes = opts->output_bytes ? opts->output_bytes : GLOVE_SESSION_DEFAULT_OUTPUT,
        };
        *policy = opts->cpu_time_ms || opts->memory_bytes || opts->pids ? GLOVE_SESSION_CGROUP_REQUIRED
                                                                         : GLOVE_SESSION_CGROUP_OPTIONAL;
}

int glove_front_egress(const struct glove_exec_options *opts, struct glove_net_policy *policy, bool *enabled,
                       struct glove_error *err) {
        glove_net_policy_init(policy);
        *enabled = false;
        /* --egress-allow: address literals may be private (glove_net_policy_add);
         * --egress-allow-private: this rule's destinations may be private. */
        for (size_t i = 0; i < opts->n_egress_allow; i++) {
                int r = glove_net_policy_add(policy, opts->egress_allow[i], err);
                if (r < 0) {
                        glove_error_prefix(err, "--egress-allow %s", opts->egress_allow[i]);
                        return r;
                }
        }
        for (size_t i = 0; i < opts->n_egress_allow_private; i++) {
                int r = glove_net_policy_add_rule(policy, opts->egress_allow_private[i], true, err);
                if (r < 0) {
                        glove_error_prefix(err, "--egress-allow-private %s", opts->egress_allow_private[i]);
                        return r;
                }
        }
        *enabled = policy->n_rules > 0;
        return 0;
}

void glove_front_status(const struct glove_session_outcome *o, const char *program, bool report, struct glove_run_status *st) {
        memset(st, 0, sizeof(*st));
        st->signal = -1;
        st->wall_time_ms = o->wall_time_ms;
        st->cpu_time_ms = o->cpu_time_ms;
        st->peak_memory_bytes = o->peak_memory_bytes;
        st->output_bytes = o->output_bytes;
        if (o->limit == GLOVE_CGROUP_LIMIT_NONE && o->disk_full)
                st->limit = "disk"; /* reached by ENOSPC inside; nothing was killed */
        if (o->kind == GLOVE_SESSION_SIGNALED)
                st->signal = o->value;
        else if (o->kind == GLOVE_SESSION_LOST && o->limit != GLOVE_CGROUP_LIMIT_NONE)
                st->signal = SIGKILL; /* Glove killed the tree before PID 1 could report */
        if (o->limit != GLOVE_CGROUP_LIMIT_NONE) {
                st->limit = glove_cgroup_limit_name(o->limit);
                st->exit_code = 137;
                if (report)
                        glove_launch_say("glove: limits.%s: %s exceeded its %s limit; the whole sandbox was killed\n", st->limit,
                                program, st->limit);
                return;
        }
        st->exit_code = report ? glove_launch_outcome_status(&o->sandbox, program) : GLOVE_EXIT_FAILURE;
}

int glove_front_launch_settings(const struct glove_exec_options *opts, const char *home_from,
                                const struct glove_session_enforced *enf, json_t *launch) {
        struct glove_session_limits l;
        enum glove_session_cgroup_policy policy;
        glove_front_limits(opts, &l, &policy);
        _cleanup_json_ json_t *limits =
                json_pack("{s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:b}", "cpu_time_ms", (json_int_t)l.cpu_time_ms, "memory_bytes",
                          (json_int_t)l.memory_bytes, "pids", (json_int_t)l.pids, "wall_time_ms",
                          l.wall_time_ms ? json_integer((json_int_t)l.wall_time_ms) : json_null(), "disk_bytes",
                          (json_int_t)l.disk_bytes, "output_bytes", (json_int_t)l.terminal_output_bytes, "nofile",
                          (json_int_t)enf->nofile, "cgroup", enf->cgroup);
        bool any = opts->n_egress_allow || opts->n_egress_allow_private;
        _cleanup_json_ json_t *rules = any ? json_array() : NULL, *priv = any ? json_array() : NULL;
        for (size_t i = 0; rules && i < opts->n_egress_allow; i++)
                if (json_array_append_new(rules, glove_audit_string(opts->egress_allow[i], strlen(opts->egress_allow[i]))) < 0)
                        return -ENOMEM;
        for (size_t i = 0; priv && i < opts->n_egress_allow_private; i++)
                if (json_array_append_new(priv, glove_audit_string(opts->egress_allow_private[i],
                                                                   strlen(opts->egress_allow_private[i]))) < 0)
                        return -ENOMEM;
        _cleanup_json_ json_t *egress = !any ? json_null()
                                        : rules && priv ? json_pack("{s:O,s:O}", "allow", rules, "allow_private", priv)
                                                        : NULL;
        if (!limits || !egress || json_object_set(launch, "limits", limits) < 0 || json_object_set(launch, "egress", egress) < 0)
                return -ENOMEM;
        json_t *home = home_from ? glove_audit_string(home_from, strlen(home_from)) : json_null();
        if (!home || json_object_set_new(launch, "home_from", home) < 0)
                return -ENOMEM;
        return 0;
}

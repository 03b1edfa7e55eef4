/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Contained upstreams of `glove run` (docs/mcp-mediation.md, Upstreams):
 * each upstream runs inside a `glove exec --direct-stdio` sandbox of its
 * own, Glove itself re-executed (/proc/self/exe), with only the grants given
 * for it on the command line (--upstream-ro, --upstream-rw,
 * --upstream-egress, --upstream-env) and in the policy file ("upstreams":
 * {NAME: {"sandbox": ...}}), plus its command file read-only when that lies
 * outside the sandbox's system view. --upstream-uncontained NAME (or
 * "contained": false) runs it on the host as before. Internal to the run
 * module.
 */

#include <stddef.h>

#include "glove/audit/log.h"
#include "glove/base/error.h"
#include "glove/mcp/upstream.h"
#include "glove/policy/policy.h"
#include "glove/run/exec_options.h"

/*
 * The "NAME:VAR" entries for glove_mcp_upstream_spec_build_env: those of
 * --upstream-env, then one per "env" name of each upstream's policy
 * sandbox. *out is a new NULL-terminated array of owned strings (free with
 * glove_run_upstream_env_free), *n its length. Errors: "upstream.bad_env"
 * (out of memory, more than GLOVE_MCP_UPSTREAM_ENV_MAX entries).
 */
int glove_run_upstream_env(const struct glove_exec_options *o, const struct glove_policy *policy,
                           const struct glove_mcp_upstream_spec *specs, size_t n_specs, char ***out, size_t *n,
                           struct glove_error *err);
void glove_run_upstream_env_free(char **list);

/*
 * Decides, for each of specs[0..n_specs) (parsed, environment built),
 * whether it is contained, checks its grants as glove exec would check
 * them (glove_grant_set_add with runtime_dir; the audit log, when audit->fd
 * >= 0, must be hidden from them: "grant.exposes_audit_log"), checks its
 * egress rules (glove_net_policy_add), and for a contained one fills
 * spec->launch_path ("/proc/self/exe"), spec->launch_argv ("glove exec
 * --direct-stdio --read P... --write P... --env VAR... --egress-allow R...
 * -- PATH ARG..."; its environment stays spec->envp, plus
 * XDG_RUNTIME_DIR for the same refusals) and spec->sandbox (the grants for
 * the upstream_start record). *uncontained[i] is set for each upstream run
 * on the host. cwd resolves relative paths.
 *
 * Errors (the message names the option or the policy path and the grant):
 * "upstream.bad_grant" (not NAME:VALUE, or NAME is no --upstream),
 * "upstream.bad_uncontained" (--upstream-uncontained names no --upstream),
 * "upstream.uncontained_grants" (grants for an uncontained upstream),
 * the grant.* codes of glove exec's grants, the egress.* codes of
 * --egress-allow, "upstream.nomem".
 */
int glove_run_upstream_sandboxes(const struct glove_exec_options *o, const struct glove_policy *policy,
                                 const struct glove_audit_log *audit, const char *cwd, const char *runtime_dir,
                                 struct glove_mcp_upstream_spec *specs, size_t n_specs, bool *uncontained,
                                 struct glove_error *err);

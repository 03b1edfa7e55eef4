/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Fields of the audit records of `glove exec` (issue "glove exec",
 * --audit-log). Internal to the run module; tested in tests/unit/run. */

#include <jansson.h>
#include <stdint.h>

#include "glove/container/environment.h"
#include "glove/container/grant.h"
#include "glove/container/sandbox.h"

/* {"argv":[...],"grants":[{"path","mode","workspace"}],"env":[names],
 *  "uid_map":[{"inside","outside","count"}],"gid_map":[...]}. Environment
 * values are never recorded. Returns a new reference, or NULL on ENOMEM. */
json_t *glove_exec_launch_fields(char *const *argv, const struct glove_grant_set *grants, const struct glove_env *env,
                                 const struct glove_sandbox *sb);

/* {"exit_code": Glove's exit status, "status": the agent's exit status or
 * null, "signal": the signal that killed it or null, "wall_time_ms"}.
 * Returns a new reference, or NULL on ENOMEM. */
json_t *glove_exec_exit_fields(const struct glove_sandbox_outcome *o, int exit_code, uint64_t wall_time_ms);

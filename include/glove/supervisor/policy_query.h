/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Queries of a decoded policy for gloved's capabilities (issue 9,
 * "Construction and capabilities"). */

#include <jansson.h>

#include "glove/supervisor/policy.h"

/*
 * The runtime ids of the policy's templates whose sandbox_backend is
 * linux_production and that have a launch block, sorted by bytes and
 * unique: a new reference to a JSON array of strings (NULL on ENOMEM).
 */
json_t *glove_supervisor_policy_managed_runtime_ids(const struct glove_supervisor_policy *policy);

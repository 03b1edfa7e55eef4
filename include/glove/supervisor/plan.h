/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Identifier-only session plans (DESIGN.md, "Session plan"; spec
 * session-policy.md, "A submitted plan must match"; issue "gloved control
 * plane", Plans).
 *
 * Interface fixed here so the control module can be built against it; the
 * implementation lives in src/supervisor/plan*.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"
#include "glove/supervisor/policy.h"

/* Largest plan accepted, in bytes. */
#define GLOVE_PLAN_MAX_BYTES (64 * 1024)
/* Most reasons reported for one plan; further ones are counted in
 * n_reasons_total but not stored. */
#define GLOVE_PLAN_REASONS_MAX 32
#define GLOVE_PLAN_REASON_PATH_MAX 160

struct glove_plan_reason {
        const char *code;                        /* static stable code, e.g. "plan.revision_mismatch" */
        char path[GLOVE_PLAN_REASON_PATH_MAX];   /* JSON path, e.g. "$.limits.pids" */
};

struct glove_plan_verdict {
        bool valid;
        char plan_content_digest[65];            /* lowercase hex SHA-256 of the plan bytes, NUL-terminated;
                                                  * empty when the bytes are not canonical JSON */
        struct glove_plan_reason reasons[GLOVE_PLAN_REASONS_MAX];
        size_t n_reasons;                        /* stored, <= GLOVE_PLAN_REASONS_MAX */
        size_t n_reasons_total;
};

/*
 * Validates plan bytes against policy at time now_ms (Unix milliseconds).
 * An invalid plan is not an error: the function returns 0 with
 * verdict->valid false and the reasons. Returns -errno only for internal
 * failures (ENOMEM).
 */
int glove_supervisor_plan_validate(const struct glove_supervisor_policy *policy, const void *plan, size_t len,
                                   int64_t now_ms, struct glove_plan_verdict *verdict, struct glove_error *err);

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
/* Most entries per plan array. */
#define GLOVE_PLAN_MAX_PATH_GRANTS 64
#define GLOVE_PLAN_MAX_LIBRARY_PROJECTIONS 128
#define GLOVE_PLAN_MAX_SECRET_HANDLES 32
/* Most reasons reported for one plan; further ones are counted in
 * n_reasons_total but not stored. */
#define GLOVE_PLAN_REASONS_MAX 32
#define GLOVE_PLAN_REASON_PATH_MAX 160

struct glove_exposures; /* glove/supervisor/exposure.h */

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
 * failures (ENOMEM) and misuse (-EINVAL "plan.invalid_argument": policy or
 * verdict NULL, plan NULL with a length). policy and plan are borrowed;
 * verdict is overwritten. Thread-safe for one policy shared by many callers
 * (the policy is immutable).
 *
 * Order of the checks (docs/session-policy.md, "Plans"):
 *  1. The bytes (at most GLOVE_PLAN_MAX_BYTES) must be one JSON object in
 *     Glove's canonical form, i.e. equal to their canonical re-encoding
 *     (base/json.h): no whitespace, members sorted by key bytes, no escapes
 *     beyond the required ones, integers only. Otherwise exactly one reason
 *     at "$": plan.not_canonical, plan.too_large, plan.invalid_json,
 *     plan.invalid_utf8, plan.duplicate_key, plan.embedded_nul,
 *     plan.too_deep, plan.wrong_type (not an object), plan.out_of_range
 *     (integer beyond 64 bits); plan_content_digest stays empty.
 *  2. plan_content_digest = lowercase hex SHA-256 of the plan bytes.
 *  3. Fields exactly those of DESIGN.md's Session plan, every reason
 *     collected: plan.unknown_field, plan.forbidden_field (a member named
 *     like launch/host/secret authority: host_path, executable_path,
 *     environment, secret_value, ...), plan.missing_field, plan.wrong_type,
 *     plan.out_of_range (integers are 1..2^53-1; schema_version, revision
 *     and expires_at_ms 0..2^53-1), plan.too_many_items,
 *     plan.invalid_identifier, plan.host_path (a value containing '/'),
 *     plan.environment_entry (a NAME=VALUE value), plan.secret_value (a
 *     secret_handles entry that is not a handle), plan.invalid_digest,
 *     plan.invalid_value (unknown backend/access/materialization/cleanup),
 *     plan.path_grant_target (a path grant naming both an "alias" and an
 *     exposure, or neither: a grant has exactly one of "alias" and the pair
 *     "exposure_id" + "exposure_generation"; one member of the pair alone is
 *     plan.missing_field for the other), plan.invalid_identifier (an
 *     exposure_id that is not "exp-" and 32 lowercase hex digits),
 *     plan.array_unsorted, plan.array_duplicate (path_grants by alias or
 *     exposure_id, whichever the grant has, compared as bytes;
 *     library_projections by projection_id, secret_handles by bytes).
 *  4. Against the policy: plan.unsupported_schema_version,
 *     plan.revision_mismatch, plan.expired (expires_at_ms <= now_ms),
 *     plan.expiry_too_far (expires_at_ms > now_ms + max_plan_ttl_ms),
 *     plan.unknown_runtime_template, plan.runtime_mismatch,
 *     plan.adapter_digest_mismatch, plan.backend_mismatch,
 *     plan.limits_mismatch (the six limits equal no resource profile),
 *     plan.egress_policy_not_allowed, plan.tool_policy_not_allowed,
 *     plan.secret_handle_not_allowed, plan.path_alias_not_allowed,
 *     plan.path_access_not_allowed (no tuple with that access and
 *     materialization), plan.path_cleanup_mismatch,
 *     plan.path_quota_exceeded (max_bytes above the tuple's),
 *     plan.path_ttl_exceeded (ttl_secs above the alias's max_ttl_secs),
 *     plan.projection_destination_not_allowed.
 *     A grant naming an exposure is judged by the exposure registry instead
 *     of the policy's aliases (glove_supervisor_plan_validate_ex): without
 *     a registry plan.exposures_unavailable at the grant; else the code
 *     glove_exposures_check_grant returns (plan.exposure_unknown,
 *     plan.exposure_superseded, plan.exposure_revoked,
 *     plan.exposure_expired, plan.exposure_mode_not_allowed,
 *     plan.exposure_cleanup_mismatch, plan.exposure_quota_exceeded,
 *     plan.exposure_runtime_not_allowed, plan.exposure_root_unavailable,
 *     plan.exposure_expires_too_soon) at the member it names
 *     ("$.path_grants[i].<member>") or at the grant. It is not judged when
 *     runtime_template_id is itself invalid (that reason stands).
 *     plan.path_target_overlap (at the later grant): two admitted grants
 *     whose sandbox targets (an alias's target_path, an exposure's root
 *     target_path) are equal or nested, or an exposure's target that
 *     overlaps /dev, /proc, /run, /sys, /tmp, /var/tmp, the template's
 *     executable_path or read_only_paths, a target_path of the plan's
 *     projection destinations, or a secret mount target of the plan's
 *     handles for the template's runtime.
 * (plan.not_integer and plan.too_long exist in the mapping but cannot occur
 * for input that passed step 1: reals are never canonical, and no string
 * exceeds GLOVE_PLAN_MAX_BYTES.) An allocation failure returns -ENOMEM
 * with err "plan.no_memory".
 * Reasons are in check order; paths longer than GLOVE_PLAN_REASON_PATH_MAX
 * - 1 bytes are cut and end in "...". Plan values never appear in reasons.
 */
int glove_supervisor_plan_validate(const struct glove_supervisor_policy *policy, const void *plan, size_t len,
                                   int64_t now_ms, struct glove_plan_verdict *verdict, struct glove_error *err);

/*
 * glove_supervisor_plan_validate with an exposure registry (spec
 * session-policy.md, "Dynamic path exposures"): exposures (borrowed; NULL:
 * this gloved constructed none) judges the grants that name an exposure, at
 * now_ms (gloved's clock: validate_plan, create_session and start_session
 * each pass their own now). glove_supervisor_plan_validate is this with
 * exposures NULL. The registry is only read; callers serialize it against
 * its writers (exposure_create, exposure_revoke, expire_due) as they would
 * any other registry call.
 */
int glove_supervisor_plan_validate_ex(const struct glove_supervisor_policy *policy,
                                      const struct glove_exposures *exposures, const void *plan, size_t len,
                                      int64_t now_ms, struct glove_plan_verdict *verdict, struct glove_error *err);

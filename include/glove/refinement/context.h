/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The context digests of refinement-eval-v1 (spec session-policy.md: "Glove
 * derives a plan-context digest from runtime, adapter, backend,
 * network/tool policy IDs, secrets, six resource limits, policy revision,
 * and both skill projection commitments. It excludes expiry and the
 * selected variant/projection. The normalized fixture context excludes only
 * session, variant, and selected skill projection. Their combined
 * matched-context digest therefore permits only the intended
 * variant/session/expiry/skill-projection deltas across a matched pair.";
 * docs/digests.md, "Refinement context digests").
 *
 * Each digest is the SHA-256, in lowercase hex, of the canonical JSON
 * (base/json.h) of one object whose "schema" member is a string naming
 * exactly that object, so that no two of them (nor a fixture) share an
 * encoding:
 *
 *   plan context     {"adapter_command_digest","base_projection":PROJ,"candidate_projection":PROJ,
 *                     "egress_policy_id","limits":{"cpu_time_ms","disk_bytes","memory_bytes","pids",
 *                     "terminal_output_bytes","wall_time_ms"},"policy_revision","runtime_id",
 *                     "runtime_template_id","sandbox_backend",
 *                     "schema":"glove.refinement-plan-context-v1","secret_handles":[...],"tool_policy_id"}
 *   fixture context  the fixture (fixture.h) without "session_id", "variant" and
 *                    "selected_projection", its "schema" replaced by
 *                    "glove.refinement-fixture-context-v1"
 *   matched context  {"fixture_context_digest":HEX64,"plan_context_digest":HEX64,
 *                     "schema":"glove.refinement-matched-context-v1"}
 *
 * PROJ = {"content_digest","destination_alias","projection_id"}.
 * Strings are committed as given (UTF-8); integers as JSON integers.
 */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"
#include "glove/refinement/common.h"

#define GLOVE_REFINEMENT_PLAN_CONTEXT_SCHEMA "glove.refinement-plan-context-v1"
#define GLOVE_REFINEMENT_FIXTURE_CONTEXT_SCHEMA "glove.refinement-fixture-context-v1"
#define GLOVE_REFINEMENT_MATCHED_CONTEXT_SCHEMA "glove.refinement-matched-context-v1"

struct glove_refinement_fixture; /* fixture.h */

/* The six resource limits of a plan (its "limits" object). */
struct glove_refinement_limits {
        int64_t cpu_time_ms, memory_bytes, pids, wall_time_ms, disk_bytes, terminal_output_bytes;
};

/* What a plan contributes to its matched context. Strings borrowed,
 * NUL-terminated, UTF-8. */
struct glove_refinement_plan_context {
        const char *runtime_id, *runtime_template_id;
        const char *adapter_command_digest;
        const char *sandbox_backend;
        const char *egress_policy_id, *tool_policy_id;
        const char *const *secret_handles; /* n_secret_handles, in plan order (the plan requires sorted) */
        size_t n_secret_handles;
        struct glove_refinement_limits limits;
        int64_t policy_revision;
        struct glove_refinement_projection base, candidate;
};

/*
 * The plan-context object (above) as a new jansson object in *out (caller
 * owns the reference). Every string must be non-NULL
 * (refinement.invalid_argument); integers are committed as they are
 * (0..2^53-1, else refinement.invalid_argument). Returns 0 or -errno.
 */
int glove_refinement_plan_context_json(const struct glove_refinement_plan_context *ctx, json_t **out,
                                       struct glove_error *err);

/* SHA-256 of the canonical plan-context object into out (64 lowercase hex
 * and a NUL). Returns 0 or -errno (refinement.invalid_argument, a string
 * that is not UTF-8: json.encode_failed, digest.*). */
int glove_refinement_plan_context_digest(const struct glove_refinement_plan_context *ctx,
                                         char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err);

/*
 * The normalized fixture context of a decoded fixture (above) as a new
 * jansson object, and its digest. Built from the decoded members, so it is
 * the fixture document with three members removed and the schema renamed.
 * Returns 0 or -errno.
 */
int glove_refinement_fixture_context_json(const struct glove_refinement_fixture *f, json_t **out,
                                          struct glove_error *err);
int glove_refinement_fixture_context_digest(const struct glove_refinement_fixture *f,
                                            char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err);

/*
 * The matched-context digest of a plan-context digest and a fixture-context
 * digest (each 64 lowercase hex, else refinement.invalid_argument) into out.
 * Returns 0 or -errno.
 */
int glove_refinement_matched_context_digest(const char *plan_context_digest, const char *fixture_context_digest,
                                            char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err);

/*
 * SHA-256 of the canonical encoding of v into out (lowercase hex): the
 * helper every digest above uses. Returns 0 or -errno (json.*, digest.*).
 */
int glove_refinement_json_digest(const json_t *v, char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1],
                                 struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The refinement binding of a session plan and the plan rules of
 * refinement-eval-v1 (spec session-policy.md, "Capability activation":
 * "refinement-eval-v1 plans require a strict refinement binding and exactly
 * two library projections ..."; docs/refinement.md, "The plan").
 *
 * A plan is a refinement-eval-v1 plan when it carries both of these
 * top-level members (and an ordinary plan when it carries neither):
 *
 *   "evaluation_protocol": "refinement-eval-v1",
 *   "refinement": {"base":PROJ,"candidate":PROJ,"fixture":PROJ,
 *                  "matched_context_digest":HEX64,"variant":"base"|"candidate"}
 *
 *   PROJ = {"content_digest":HEX64,"destination_alias":PID,"projection_id":PID}
 *
 * with the member names of a library_projections entry. The two members
 * are separate so that a missing binding is seen: a plan that names the
 * protocol without a binding (plan.refinement_missing) and a binding
 * without the protocol, which would run as an ordinary session and end
 * with a resource receipt (plan.refinement_without_protocol), are both
 * refused.
 *
 * Codes (reported through glove_refinement_report_fn, with the JSON path):
 *   plan.refinement_missing              evaluation_protocol without refinement ($.refinement)
 *   plan.refinement_without_protocol     refinement without evaluation_protocol ($.evaluation_protocol)
 *   plan.refinement_unknown_protocol     evaluation_protocol is a string other than "refinement-eval-v1"
 *   plan.refinement_wrong_type           a member of another JSON type
 *   plan.refinement_unknown_field        a member not in the binding
 *   plan.refinement_missing_field        a required member of the binding is absent
 *   plan.refinement_invalid_identifier   a projection_id or destination_alias that is not a PID
 *   plan.refinement_invalid_digest       content_digest or matched_context_digest not 64 lowercase hex
 *   plan.refinement_invalid_variant      variant is neither "base" nor "candidate"
 *   plan.refinement_projection_reused    two of fixture, base and candidate share a projection_id,
 *                                        or the fixture's content_digest is a skill's
 * and the plan rules (glove_refinement_plan_check_rules):
 *   plan.refinement_path_grants          path_grants is not empty (at each grant)
 *   plan.refinement_projection_count     library_projections does not hold exactly two entries
 *   plan.refinement_fixture_not_projected  no library projection has the fixture's projection_id
 *   plan.refinement_variant_not_projected  no library projection has the selected skill's projection_id
 *   plan.refinement_unselected_projected   a library projection is the other variant's skill
 *   plan.refinement_unknown_projection   a library projection is none of the three commitments
 *   plan.refinement_projection_mismatch  a library projection with a committed projection_id whose
 *                                        content_digest or destination_alias differs
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/refinement/common.h"
#include "glove/refinement/context.h"

#define GLOVE_REFINEMENT_PROTOCOL "refinement-eval-v1"

/* What the plan's kind members make of it. */
enum glove_refinement_plan_kind {
        GLOVE_REFINEMENT_PLAN_ORDINARY = 0,   /* neither member: an ordinary session, resource receipt */
        GLOVE_REFINEMENT_PLAN_REFINEMENT = 1, /* both: refinement-eval-v1, refinement receipt */
};

/* A decoded binding; strings borrowed from the plan object. */
struct glove_refinement_binding {
        struct glove_refinement_projection fixture, base, candidate;
        enum glove_refinement_variant variant;
        const char *matched_context_digest; /* 64 lowercase hex */
};

/* The selected skill's commitment: &b->base or &b->candidate. */
const struct glove_refinement_projection *glove_refinement_binding_selected(const struct glove_refinement_binding *b);
/* The other skill's commitment. */
const struct glove_refinement_projection *glove_refinement_binding_unselected(const struct glove_refinement_binding *b);

/*
 * Reads the members "evaluation_protocol" and "refinement" of plan (the
 * plan's top-level object, decoded by the plan validator; borrowed) and
 * reports every reason through report(ctx, ...) (codes above, from
 * plan.refinement_missing to plan.refinement_projection_reused).
 *
 * Returns 0 when no reason was reported: *kind says what the plan is and,
 * for a refinement plan, *out holds the binding (strings borrowed from plan;
 * for an ordinary plan *out is zeroed). Returns -EINVAL when at least one
 * reason was reported (*kind and *out are then unspecified), or -EINVAL with
 * refinement.invalid_argument in err for a NULL argument or a plan that is
 * not an object (no reason reported). Pure: reads plan only.
 */
int glove_refinement_plan_decode(const json_t *plan, enum glove_refinement_plan_kind *kind,
                                 struct glove_refinement_binding *out, glove_refinement_report_fn report, void *ctx,
                                 struct glove_error *err);

/*
 * The rules a refinement plan obeys beyond its binding (call it with the
 * binding glove_refinement_plan_decode returned): no path grants, and
 * library_projections holds exactly the fixture's and the selected skill's
 * commitments (codes above, from plan.refinement_path_grants on; paths
 * "$.path_grants[i]", "$.library_projections" and
 * "$.library_projections[i]"). Entries of another shape (not objects,
 * members of other types) are left to the plan validator, which reports
 * them; path_grants or library_projections absent or not arrays likewise.
 * Every reason is reported. Returns 0 when none was, -EINVAL when some
 * was, -EINVAL with refinement.invalid_argument for NULL arguments.
 */
int glove_refinement_plan_check_rules(const json_t *plan, const struct glove_refinement_binding *b,
                                      glove_refinement_report_fn report, void *ctx, struct glove_error *err);

/*
 * Fills ctx with the plan-context fields (context.h) of a validated
 * refinement plan: runtime_id, runtime_template_id, adapter_command_digest,
 * sandbox_backend, egress_policy_id, tool_policy_id, secret_handles, the six
 * limits, policy_revision, and the binding's base and candidate
 * commitments. Strings borrowed from plan and b; *handles receives a new
 * array of the secret handle strings (caller frees with free(); NULL when
 * there are none) that ctx->secret_handles points at.
 * A member that is absent or of another type (a plan that was not
 * validated) is refinement.plan_context_invalid (-EINVAL, the message
 * names the member).
 */
int glove_refinement_plan_context_from_plan(const json_t *plan, const struct glove_refinement_binding *b,
                                            struct glove_refinement_plan_context *ctx, const char ***handles,
                                            struct glove_error *err);

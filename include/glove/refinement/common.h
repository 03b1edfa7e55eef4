/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * refinement-eval-v1: the vocabulary shared by the fixture decoder
 * (fixture.h), the plan binding (binding.h), the context digests
 * (context.h) and the evaluator (evaluator.h). Spec session-policy.md,
 * "Capability activation" (the refinement-eval-v1 paragraphs) and
 * architecture.md, "Sage session flow"; docs/refinement.md.
 *
 * The module is a daemon-safe library on top of base only: no globals, no
 * printing, no environment. Nothing here is wired into gloved yet.
 *
 * Codes that every function of the module may set (struct glove_error):
 *   refinement.invalid_argument  misuse: a NULL pointer, a value outside
 *                                its documented range (-EINVAL)
 *   refinement.no_memory         allocation failed (-ENOMEM)
 *   digest.crypto_failed         libcrypto failed (-EIO)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"

/* Identifiers (IDs of the evaluation run, matched pair, session and
 * fixture; projection IDs and destination aliases): at most this many
 * bytes. */
#define GLOVE_REFINEMENT_ID_MAX 128

/* Largest integer a refinement document carries (2^53 - 1: exact in every
 * JSON reader). */
/* The refinement_evaluation_protocol_schema_version gloved advertises when
 * it can run refinement-eval-v1 (docs/refinement.md). */
#define GLOVE_REFINEMENT_PROTOCOL_SCHEMA_VERSION 1

#define GLOVE_REFINEMENT_INT_MAX 9007199254740991LL

/* The two sides of a matched pair. */
enum glove_refinement_variant {
        GLOVE_REFINEMENT_VARIANT_BASE = 0,
        GLOVE_REFINEMENT_VARIANT_CANDIDATE = 1,
};

/* "base" or "candidate"; NULL for a value outside the enum. */
const char *glove_refinement_variant_name(int variant);

/*
 * One library projection commitment, with the member names of a plan's
 * library_projections entry. Strings are borrowed (from the decoded
 * document that holds them) and NUL-terminated.
 */
struct glove_refinement_projection {
        const char *projection_id;      /* plan identifier: 1..128 bytes of [A-Za-z0-9._:-] */
        const char *content_digest;     /* 64 lowercase hex: SHA-256 of the bundle file's bytes */
        const char *destination_alias;  /* plan identifier */
};

/* True when a and b commit the same projection (all three members equal as
 * bytes). Members that are NULL compare unequal to everything. */
bool glove_refinement_projection_equal(const struct glove_refinement_projection *a,
                                       const struct glove_refinement_projection *b);

/*
 * A reason sink for the decoders that collect every reason, as plan
 * validation does (binding.h): called once per reason with a static stable
 * code ("plan.refinement_missing"), the JSON path of the offending value in
 * the plan ("$.refinement.variant") and a one-line message that names no
 * plan value. All three strings are valid only during the call.
 */
typedef void (*glove_refinement_report_fn)(void *ctx, const char *code, const char *path, const char *message);

/* Character-class checks (pure, bounded by GLOVE_REFINEMENT_ID_MAX):
 *   glove_refinement_plan_identifier_valid: 1..128 bytes of [A-Za-z0-9._:-]
 *     (a plan identifier: projection_id, destination_alias);
 *   glove_refinement_id_valid: the same, the first byte an ASCII letter or
 *     digit (a session id of create_session; the fixture's IDs);
 *   glove_refinement_hex64_valid: exactly 64 of [0-9a-f].
 * NULL is invalid. */
bool glove_refinement_plan_identifier_valid(const char *s);
bool glove_refinement_id_valid(const char *s);
bool glove_refinement_hex64_valid(const char *s);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The refinement-eval-v1 fixture: its strict decoder and its check against
 * what the plan binds (spec session-policy.md, "Capability activation": "The
 * fixture projection is canonical JSON using glove.refinement-eval-fixture-v1
 * ... fail before child release"; docs/refinement.md, "The fixture").
 *
 * The fixture is one document, read by gloved (later) through the pinned
 * descriptor of its library projection; these functions see only its bytes.
 * Its bytes must be exactly the canonical JSON encoding (base/json.h:
 * JSON_COMPACT | JSON_SORT_KEYS, UTF-8 unescaped, integers only) with no
 * trailing newline, of exactly this object (optional members marked ?):
 *
 *   {"base_projection_digest":HEX64,
 *    "candidate_projection_digest":HEX64,
 *    "dataset_digest":HEX64,
 *    "dataset_reference":TEXT,
 *    "evaluation_run_id":ID,
 *    "expected":{"exit_code":0..255,
 *                "forbidden_literals":[LITERAL...],
 *                "max_wall_latency_us"?:1..GLOVE_REFINEMENT_LATENCY_MAX_US,
 *                "required_literals":[LITERAL...],
 *                "termination":"exited"},
 *    "fixture_digest":HEX64,
 *    "fixture_id":ID,
 *    "harness":TEXT,
 *    "matched_pair_id":ID,
 *    "model_identity":TEXT,
 *    "module"?:{"identity":TEXT,"selectors":[TEXT...]},
 *    "proposal_digest":HEX64,
 *    "schema":"glove.refinement-eval-fixture-v1",
 *    "seed":0..2^53-1,
 *    "selected_projection":{"content_digest":HEX64,"destination_alias":PID,"projection_id":PID},
 *    "session_id":ID,
 *    "variant":"base"|"candidate"}
 *
 *   ID      1..128 bytes of [A-Za-z0-9._:-], the first a letter or digit
 *   PID     1..128 bytes of [A-Za-z0-9._:-] (a plan identifier)
 *   HEX64   64 lowercase hex digits
 *   TEXT    1..GLOVE_REFINEMENT_TEXT_MAX bytes of printable ASCII without
 *           space (0x21..0x7e): an opaque label, never used as a path
 *   LITERAL 1..GLOVE_REFINEMENT_LITERAL_MAX bytes of UTF-8 without NUL;
 *           each list holds 0..GLOVE_REFINEMENT_MAX_LITERALS of them in
 *           strictly increasing byte order (sorted, no duplicates), and no
 *           literal is both required and forbidden
 *   selectors 0..GLOVE_REFINEMENT_MAX_SELECTORS TEXT, strictly increasing
 *
 * fixture_digest is the controller's commitment to the fixture case (the
 * task in its dataset, named by fixture_id within dataset_reference and
 * dataset_digest): the same for both runs of a matched pair and not
 * interpreted by Glove. It cannot be the digest of this document (the
 * document contains it); that one is document_digest below, which the
 * plan's fixture projection commits as its content_digest.
 *
 * Stable codes (struct glove_error.code, all -EINVAL unless noted; the
 * message starts with the JSON path, which is also written to path):
 *   refinement.fixture_too_large         more than GLOVE_REFINEMENT_FIXTURE_MAX_BYTES (-EMSGSIZE)
 *   refinement.fixture_embedded_nul      a raw NUL byte or a "\u0000" escape
 *   refinement.fixture_invalid_utf8      bytes that are not UTF-8
 *   refinement.fixture_invalid_json      malformed JSON (syntax, trailing data, nesting beyond 64)
 *   refinement.fixture_duplicate_key     an object with the same key twice
 *   refinement.fixture_not_object        the top level is not an object
 *   refinement.fixture_real_number       a number with a fraction or exponent
 *   refinement.fixture_not_canonical     valid JSON whose bytes are not the canonical encoding
 *                                        (whitespace, order, escapes, a trailing newline)
 *   refinement.fixture_unknown_field     a member not in the format
 *   refinement.fixture_missing_field     a required member is absent
 *   refinement.fixture_wrong_type        a member of another JSON type (null included)
 *   refinement.fixture_unsupported_schema  "schema" is not "glove.refinement-eval-fixture-v1"
 *   refinement.fixture_out_of_range      an integer outside its bounds
 *   refinement.fixture_invalid_identifier  an ID or PID that breaks its rule
 *   refinement.fixture_invalid_digest    a HEX64 that is not 64 lowercase hex
 *   refinement.fixture_invalid_value     variant or termination outside its words
 *   refinement.fixture_invalid_text      a TEXT that is empty, too long or has other bytes
 *   refinement.fixture_item_count        a literal or selector list longer than its bound
 *   refinement.fixture_empty_literal     a literal of zero bytes
 *   refinement.fixture_literal_too_long  a literal longer than GLOVE_REFINEMENT_LITERAL_MAX
 *   refinement.fixture_unsorted          a literal or selector list not in increasing byte order
 *   refinement.fixture_duplicate         a literal or selector list with an entry twice
 *   refinement.fixture_literal_conflict  a literal both required and forbidden
 *   refinement.fixture_selected_mismatch selected_projection.content_digest is not the
 *                                        variant's (base_ or candidate_projection_digest)
 * and refinement.no_memory (-ENOMEM), refinement.invalid_argument.
 * Checks run in a fixed order and the first failure is reported: the
 * bytes (size, NUL, UTF-8, syntax, duplicates, object, reals, canonical),
 * then the members in key order (unknown members first, at each level).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/json.h"
#include "glove/refinement/common.h"

#define GLOVE_REFINEMENT_FIXTURE_SCHEMA "glove.refinement-eval-fixture-v1"

/* Largest fixture document, in bytes. */
#define GLOVE_REFINEMENT_FIXTURE_MAX_BYTES (64 * 1024)
/* Longest TEXT (dataset_reference, model_identity, harness, module identity
 * and selectors), in bytes. */
#define GLOVE_REFINEMENT_TEXT_MAX 256
/* Most literals in each of required_literals and forbidden_literals. */
#define GLOVE_REFINEMENT_MAX_LITERALS 64
/* Longest literal, in bytes. */
#define GLOVE_REFINEMENT_LITERAL_MAX 1024
/* Most module selectors. */
#define GLOVE_REFINEMENT_MAX_SELECTORS 32
/* Largest max_wall_latency_us: 24 hours in microseconds. */
#define GLOVE_REFINEMENT_LATENCY_MAX_US 86400000000LL
/* Largest expected exit code. */
#define GLOVE_REFINEMENT_EXIT_CODE_MAX 255

/* Expected terminations ("expected.termination"). V1 knows one: the agent
 * exits by itself (exit(2) or return from main) with the expected code. */
enum glove_refinement_expected_termination {
        GLOVE_REFINEMENT_EXPECT_EXITED = 0,
};

/* One literal: len bytes (1..GLOVE_REFINEMENT_LITERAL_MAX) of UTF-8 without
 * NUL, NUL-terminated for convenience; borrowed from the fixture. */
struct glove_refinement_literal {
        const char *bytes;
        size_t len;
};

/* A decoded fixture. Every string is borrowed from root, which the fixture
 * owns; release with glove_refinement_fixture_free. */
struct glove_refinement_fixture {
        json_t *root;
        /* SHA-256 of the document's bytes, lowercase hex: what the plan's
         * fixture projection commits as content_digest. */
        char document_digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];

        const char *evaluation_run_id, *matched_pair_id, *session_id; /* ID */
        enum glove_refinement_variant variant;

        const char *proposal_digest, *base_projection_digest, *candidate_projection_digest;
        const char *fixture_digest, *dataset_digest;                    /* HEX64 */

        const char *fixture_id;          /* ID */
        const char *dataset_reference;   /* TEXT */
        int64_t seed;                    /* 0..2^53-1 */
        const char *model_identity;      /* TEXT */
        const char *harness;             /* TEXT */
        bool has_module;
        const char *module_identity;     /* TEXT, or NULL without module */
        const char **module_selectors;   /* n_module_selectors TEXT (owned array, borrowed strings) */
        size_t n_module_selectors;

        struct glove_refinement_projection selected_projection;

        enum glove_refinement_expected_termination expected_termination;
        int64_t expected_exit_code;      /* 0..255 */
        bool has_max_wall_latency;
        int64_t max_wall_latency_us;     /* 1..GLOVE_REFINEMENT_LATENCY_MAX_US when present, else 0 */
        struct glove_refinement_literal *required; /* owned array, n_required, sorted */
        size_t n_required;
        struct glove_refinement_literal *forbidden; /* owned array, n_forbidden, sorted */
        size_t n_forbidden;
};

/* "exited"; NULL outside the enum. */
const char *glove_refinement_expected_termination_name(int termination);

/*
 * Decodes data[0..len) strictly as a fixture (the format and checks at the
 * top of this header). data may be NULL when len is 0 (then
 * refinement.fixture_invalid_json). On success returns 0 and stores a new
 * fixture in *out (caller frees); on failure returns -errno, leaves *out
 * NULL, fills err (code and a message starting with the JSON path) and, when
 * path is not NULL, writes the JSON path of the offence there ("$" for the
 * document as a whole, "$.expected.required_literals[3]" for one literal).
 * path has GLOVE_JSON_PATH_MAX bytes.
 */
int glove_refinement_fixture_decode(const void *data, size_t len, struct glove_refinement_fixture **out,
                                    char path[GLOVE_JSON_PATH_MAX], struct glove_error *err);

/* Frees f and everything it owns. NULL is a no-op. */
void glove_refinement_fixture_free(struct glove_refinement_fixture *f);

static inline void glove_refinement_fixture_freep(struct glove_refinement_fixture **f) {
        if (f)
                glove_refinement_fixture_free(*f);
}
#define _cleanup_refinement_fixture_ __attribute__((cleanup(glove_refinement_fixture_freep)))

/*
 * What the plan and the session bind, to hold a decoded fixture against
 * (the wiring fills it from the validated plan's binding, binding.h, and
 * the session's id). Strings borrowed.
 */
struct glove_refinement_bound {
        const char *session_id;
        enum glove_refinement_variant variant;
        struct glove_refinement_projection fixture;   /* the binding's fixture commitment */
        struct glove_refinement_projection base;      /* the binding's base skill commitment */
        struct glove_refinement_projection candidate; /* the binding's candidate skill commitment */
        const char *matched_context_digest;           /* the binding's, 64 lowercase hex */
        const char *plan_context_digest;              /* computed from the plan (context.h), 64 lowercase hex */
};

/*
 * Checks a decoded fixture against what the plan binds, before the child
 * is released (spec: "a projection/session/variant mismatch fail[s] before
 * child release"). In this order, the first failure reported (-EINVAL,
 * path as for the decoder, the fixture's JSON path of the member that
 * differs, or "$" for the document):
 *   refinement.fixture_mismatch_document   document_digest is not the fixture
 *                                          projection's content_digest ("$")
 *   refinement.fixture_mismatch_session    session_id is not the session's
 *   refinement.fixture_mismatch_variant    variant is not the binding's
 *   refinement.fixture_mismatch_base       base_projection_digest is not the base
 *                                          commitment's content_digest
 *   refinement.fixture_mismatch_candidate  candidate_projection_digest likewise
 *   refinement.fixture_mismatch_selected   selected_projection is not exactly (id,
 *                                          digest, alias) the commitment of the bound
 *                                          variant, e.g. it names the other skill
 *   refinement.fixture_mismatch_matched_context  the matched-context digest of
 *                                          plan_context_digest and this fixture's
 *                                          context (context.h) is not the binding's
 * A NULL argument or member is refinement.invalid_argument; hashing may fail
 * with -EIO/-ENOMEM. Returns 0 when the fixture matches.
 */
int glove_refinement_fixture_check(const struct glove_refinement_fixture *f,
                                   const struct glove_refinement_bound *bound, char path[GLOVE_JSON_PATH_MAX],
                                   struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The refinement-eval-v1 evaluator: a streaming object fed every raw byte
 * of a session's PTY output, online, and a bounded finish step that
 * synthesizes the canonical outcome (spec architecture.md: "The PTY drain
 * worker feeds every raw byte to the evaluator before circular transcript
 * eviction. After clean drain and resource finalization, Glove checks the
 * trusted termination, exit code, wall latency, UTF-8 stream state, and
 * required/forbidden transcript literals, then synthesizes the canonical
 * outcome. PTY JSON is only text and cannot become evidence."; spec
 * session-policy.md, the evaluator's metrics; docs/refinement.md, "The
 * evaluator").
 *
 * Output is never parsed: the evaluator only looks for the fixture's
 * literals as byte strings, checks UTF-8 and hashes. A literal is found
 * wherever it lies in the stream, across any number of chunk boundaries:
 * one Aho-Corasick automaton over all the literals carries its state from
 * chunk to chunk, so the work per byte is amortized constant whatever the
 * chunk sizes (an agent cannot make the drain slow by writing one byte at
 * a time), and memory is fixed at creation (a node per literal byte).
 * Matching is on raw bytes: a PTY turns "\n" into "\r\n" (ONLCR), so a
 * literal meant to span a line break must say "\r\n".
 *
 * The outcome (canonical JSON, at most GLOVE_REFINEMENT_OUTCOME_MAX bytes):
 *
 *   {"evidence":{"defects":[DEFECT...],"status":"valid"|"invalid"},
 *    "fixture_document_digest":HEX64,
 *    "metrics":{"failed_assertions":[ASSERTION...],
 *               "forbidden_literals":{"found":[INDEX...],"total":N},
 *               "latency_us":N,
 *               "passed":BOOL,
 *               "required_literals":{"missing":[INDEX...],"total":N}},
 *    "observed":{"exit_code":N|null,"resource_limit":BOOL,"termination":KIND},
 *    "schema":"glove.refinement-outcome-v1",
 *    "stream":{"bytes":N,"sha256":HEX64}}
 *
 *   DEFECT     "invalid_utf8" (an invalid sequence, or one left incomplete at
 *              the end), "stream_incomplete" (the PTY did not drain completely)
 *   ASSERTION  "exit_code", "forbidden_literals", "required_literals",
 *              "resource_limit", "termination", "wall_latency" (sorted)
 *   INDEX      an index into the fixture's sorted literal list, increasing
 *   KIND       "exit", "signal", "limit", "stopped", "start_failed", "lost"
 *              (the terminal receipt's termination kinds)
 *
 * passed is true exactly when the evidence is valid and no assertion
 * failed; a resource termination fails "resource_limit" whatever the
 * literals matched. The outcome commitment is the SHA-256 of the outcome's
 * bytes.
 *
 * Threading: one evaluator is used by one thread at a time.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"
#include "glove/refinement/fixture.h"

#include <jansson.h>

#define GLOVE_REFINEMENT_OUTCOME_SCHEMA "glove.refinement-outcome-v1"
/* Largest outcome encoding, in bytes (the largest possible is about 1 KiB). */
#define GLOVE_REFINEMENT_OUTCOME_MAX 4096

/* How the session ended, as the runtime observed it (trusted). */
enum glove_refinement_termination {
        GLOVE_REFINEMENT_TERMINATION_EXIT = 0,    /* the agent exited by itself */
        GLOVE_REFINEMENT_TERMINATION_SIGNAL,      /* the agent died of a signal */
        GLOVE_REFINEMENT_TERMINATION_LIMIT,       /* a resource limit ended it */
        GLOVE_REFINEMENT_TERMINATION_STOPPED,     /* stop_session or a signal request */
        GLOVE_REFINEMENT_TERMINATION_START_FAILED,
        GLOVE_REFINEMENT_TERMINATION_LOST,        /* gloved lost it (e.g. recovery) */
};

/* "exit", "signal", "limit", "stopped", "start_failed", "lost"; NULL outside. */
const char *glove_refinement_termination_name(int termination);

/* The trusted facts the finish step takes from the runtime. */
struct glove_refinement_facts {
        enum glove_refinement_termination termination;
        int exit_code;              /* 0..255 with TERMINATION_EXIT; ignored otherwise */
        uint64_t wall_latency_us;   /* 0..2^53-1: from release of the child to its end */
        bool drained;               /* every byte of the PTY was read and fed (clean drain) */
        bool resource_limit;        /* a resource limit ended the session (implied by LIMIT) */
};

struct glove_refinement_outcome {
        bool valid;                 /* evidence status */
        bool passed;
        uint64_t latency_us;
        uint64_t stream_bytes;
        char stream_sha256[GLOVE_DIGEST_SHA256_HEX_LEN + 1];  /* SHA-256 of the complete raw stream */
        char commitment[GLOVE_DIGEST_SHA256_HEX_LEN + 1];     /* SHA-256 of json[0..json_len) */
        char json[GLOVE_REFINEMENT_OUTCOME_MAX];              /* the canonical outcome, NUL-terminated */
        size_t json_len;
};

struct glove_refinement_evaluator;

/*
 * A new evaluator for fixture f (borrowed during the call only: the
 * literal automaton is built from the literals, the expectations and
 * document digest are copied). At most GLOVE_REFINEMENT_MAX_LITERALS
 * literals per list, each 1..GLOVE_REFINEMENT_LITERAL_MAX bytes (else
 * refinement.invalid_argument); memory is 20 bytes per literal byte.
 * *out is owned by the caller (glove_refinement_evaluator_free). Returns 0,
 * -ENOMEM, -EIO, or -EINVAL (refinement.invalid_argument).
 */
int glove_refinement_evaluator_new(const struct glove_refinement_fixture *f,
                                   struct glove_refinement_evaluator **out, struct glove_error *err);

/*
 * Feeds data[0..len) (any len; NULL allowed when len is 0): every byte is
 * hashed, counted, UTF-8-checked and run through the literal automaton.
 * Work is linear in len; no allocation.
 * Returns 0, -EIO (digest.crypto_failed), or -EINVAL
 * (refinement.evaluator_finished after finish, refinement.invalid_argument).
 */
int glove_refinement_evaluator_feed(struct glove_refinement_evaluator *ev, const void *data, size_t len,
                                    struct glove_error *err);

/* Bytes fed so far. */
uint64_t glove_refinement_evaluator_bytes(const struct glove_refinement_evaluator *ev);

/*
 * Ends the stream and synthesizes the outcome (above) into *out from what
 * was fed and the trusted facts. Bounded work (no dependence on the stream's
 * length). After it, feed and finish return -EINVAL
 * (refinement.evaluator_finished). facts outside their ranges (an unknown
 * termination, exit_code outside 0..255 with EXIT, a latency beyond 2^53-1)
 * are refinement.invalid_argument and leave the evaluator unfinished.
 * Returns 0 or -errno.
 */
int glove_refinement_evaluator_finish(struct glove_refinement_evaluator *ev,
                                      const struct glove_refinement_facts *facts,
                                      struct glove_refinement_outcome *out, struct glove_error *err);

/*
 * The evaluator in two halves, for a runtime whose stream and facts live in
 * different processes (the session keeper reads the PTY; gloved knows how
 * the session ended and signs): the keeper ends the stream with
 * glove_refinement_evaluator_observe and sends the observation; gloved
 * synthesizes the outcome from the expectations it took from the fixture
 * at launch, the observation, and its trusted facts. finish is exactly
 * observe followed by synthesize.
 */

/* What the outcome needs of the fixture (copied at launch; small). */
struct glove_refinement_expectations {
        char fixture_document_digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1]; /* SHA-256 of the fixture's bytes */
        int exit_code;                /* 0..255 */
        bool has_max_latency;
        uint64_t max_latency_us;      /* 1..86400000000 when has_max_latency */
        size_t n_required, n_forbidden; /* 0..GLOVE_REFINEMENT_MAX_LITERALS */
};

/* What the stream showed, once it ended. */
struct glove_refinement_observation {
        uint64_t bytes;                                      /* every byte fed */
        char sha256[GLOVE_DIGEST_SHA256_HEX_LEN + 1];        /* of the complete stream */
        bool utf8_valid;                                     /* all of it UTF-8, nothing left open */
        size_t n_required, n_forbidden;                      /* as the expectations' */
        bool required_found[GLOVE_REFINEMENT_MAX_LITERALS];  /* [i]: required literal i occurred */
        bool forbidden_found[GLOVE_REFINEMENT_MAX_LITERALS]; /* [i]: forbidden literal i occurred */
};

/* The expectations of ev's fixture into *out. Returns 0, or -EINVAL for NULL. */
int glove_refinement_evaluator_expectations(const struct glove_refinement_evaluator *ev,
                                            struct glove_refinement_expectations *out);

/*
 * Ends the stream: *out receives its length, digest, UTF-8 state and which
 * literals occurred. Bounded work. After it, feed, observe and finish return
 * -EINVAL (refinement.evaluator_finished). Returns 0 or -errno.
 */
int glove_refinement_evaluator_observe(struct glove_refinement_evaluator *ev,
                                       struct glove_refinement_observation *out, struct glove_error *err);

/*
 * The outcome (above) of expectations x, observation obs and the trusted
 * facts. obs NULL means the stream was lost (its keeper died with it): the
 * outcome's "stream" is null, its evidence invalid with the defects
 * "stream_incomplete" and "stream_lost", and no literal counts as found
 * (every required one is missing). Errors: refinement.invalid_argument
 * (facts out of range as for finish; counts beyond
 * GLOVE_REFINEMENT_MAX_LITERALS; an observation whose counts are not x's;
 * a digest that is not 64 lowercase hex), -ENOMEM.
 */
int glove_refinement_outcome_synthesize(const struct glove_refinement_expectations *x,
                                        const struct glove_refinement_observation *obs,
                                        const struct glove_refinement_facts *facts,
                                        struct glove_refinement_outcome *out, struct glove_error *err);

/*
 * The wire forms (canonical JSON objects, new references in *out):
 *   expectations: {"exit_code":N,"fixture_document_digest":HEX64,
 *                  "forbidden_literals":N,"max_wall_latency_us":N|null,
 *                  "required_literals":N}
 *   observation:  {"bytes":N,"forbidden_found":[I...],"required_found":[I...],
 *                  "sha256":HEX64,"utf8_valid":BOOL}  (indices increasing)
 * The decoders take exactly these members and bounds (the observation's
 * counts come from x) and fail with refinement.wire_invalid (-EINVAL)
 * naming the member. Returns 0 or -errno.
 */
int glove_refinement_expectations_json(const struct glove_refinement_expectations *x, json_t **out,
                                       struct glove_error *err);
int glove_refinement_expectations_from_json(const json_t *v, struct glove_refinement_expectations *out,
                                            struct glove_error *err);
int glove_refinement_observation_json(const struct glove_refinement_observation *obs, json_t **out,
                                      struct glove_error *err);
int glove_refinement_observation_from_json(const json_t *v, const struct glove_refinement_expectations *x,
                                           struct glove_refinement_observation *out, struct glove_error *err);

/* Frees ev. NULL is a no-op. */
void glove_refinement_evaluator_free(struct glove_refinement_evaluator *ev);

static inline void glove_refinement_evaluator_freep(struct glove_refinement_evaluator **ev) {
        if (ev)
                glove_refinement_evaluator_free(*ev);
}
#define _cleanup_refinement_evaluator_ __attribute__((cleanup(glove_refinement_evaluator_freep)))

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Retained-change apply (issue 30; spec session-policy.md, the
 * retained-change and apply paragraphs and "Receipts and recovery";
 * docs/retained-changes.md): swapping a session's frozen stage in for its
 * source, atomically and recoverably, under an Ed25519-signed single-use
 * authorization. Owner-local: gloved advertises apply schema version 0 and
 * refuses apply over its control socket; `glove apply` calls this.
 *
 * One transaction, each step durable in the reservation journal
 * (glove/apply/journal.h) before the next:
 *   1. checks: the stage (opened read-only, glove/supervisor/stage.h)
 *      passes glove_manifest_check_apply with its root's owner; the source
 *      had nothing a stage cannot carry; the authorization verifies with
 *      the trust policy and names this session, grant and both digests; the
 *      source is still the recorded object (parent and entry identity) with
 *      the recorded manifest (apply.stale_baseline); the staged tree plus
 *      64 MiB fits in the source file system's available blocks
 *      (apply.no_space);
 *   2. reserved: grant id, authorization digest and stage manifest digest
 *      consumed for good;
 *   3. prepared: the candidate (glove/apply/candidate.h) made beside the
 *      source as ".glove-apply-" TXID[0..16) after the space check again;
 *   4. the baseline checked again, then renameat2(RENAME_EXCHANGE) of the
 *      source's entry and the candidate's, and the parent fsync'd: the old
 *      source now lives under the candidate's name;
 *   5. committed, then terminal "applied" with its receipt.
 * A failure after the reservation discards the candidate and ends in a
 * terminal "failed" receipt with its code. The old source is kept until
 * glove_apply_cleanup.
 *
 * The receipt (an object in the terminal record):
 *   {"at_ms","authorization_digest","baseline_manifest_digest","code",
 *    "grant","grant_id","outcome","schema":"glove.apply-receipt.v1",
 *    "session_id","stage_manifest_digest","txid","key_id",
 *    "source":{"kind","dev","ino"},"candidate":{"dev","ino"}|null}
 * Everything in it is in the reserved record's bindings, the prepared record
 * or the code, so recovery rebuilds it exactly.
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/apply/journal.h"
#include "glove/apply/trust.h"
#include "glove/base/error.h"
#include "glove/supervisor/exposure.h"

/* Bytes the source's file system must keep free beyond the staged tree. */
#define GLOVE_APPLY_SPACE_RESERVE_BYTES (64LL << 20)
/* Lifetime of an authorization glove apply signs itself. */
#define GLOVE_APPLY_AUTH_DEFAULT_TTL_MS (5LL * 60 * 1000)

struct glove_apply_context {
        int root_fd;                             /* the materialization root (O_PATH|O_DIRECTORY) */
        struct glove_apply_journal *journal;     /* borrowed, open */
        const struct glove_apply_trust *trust;   /* borrowed */
        const struct glove_exposures *exposures; /* borrowed; NULL: exposure grants are apply.exposures_unavailable */
        int64_t (*now_ms)(void);                 /* NULL: CLOCK_REALTIME */
};

/* A signed authorization: canonical bytes and the 64-byte signature. */
struct glove_apply_signed {
        char *canonical; /* owned */
        size_t len;
        uint8_t signature[GLOVE_APPLY_SIGNATURE_LEN];
};

void glove_apply_signed_clear(struct glove_apply_signed *s);

/*
 * Builds and signs with key the authorization for session/grant from its
 * stage as it is now (the stage opened read-only: retained.* codes; its
 * manifest: manifest.* codes), valid for ttl_ms from now (at most
 * GLOVE_APPLY_AUTH_TTL_MAX_MS). The trust policy is not consulted: that is
 * apply's job. Codes: apply.no_source (the stage started empty: there is
 * nothing to apply to), the trust.h key and authorization codes.
 */
int glove_apply_authorize(const struct glove_apply_context *c, const char *session, const char *grant,
                          const struct glove_apply_key *key, int64_t ttl_ms, struct glove_apply_signed *out,
                          struct glove_error *err);

/*
 * The signed-authorization file form (what glove apply authorize writes):
 *   {"authorization":CANONICAL_STRING,"schema":"glove.apply-signed.v1",
 *    "signature":BASE64}
 * to_json: new reference or NULL; from_json: apply.authorization_invalid.
 */
json_t *glove_apply_signed_to_json(const struct glove_apply_signed *s);
int glove_apply_signed_from_json(const json_t *j, struct glove_apply_signed *out, struct glove_error *err);

/*
 * Runs one transaction (above) for auth. *result (owned) is
 *   {"txid","outcome":"applied","receipt":OBJ,"changes":DIFF,
 *    "old_source":NAME}   (NAME: the entry beside the source that holds the
 *                          old contents until glove_apply_cleanup)
 * On a refusal before the reservation nothing is consumed and nothing is
 * written. After it, the error is returned and the transaction ends
 * "failed" (or "ambiguous" when what happened cannot be proven); *result
 * then still names the txid and outcome. Codes: the checks' (above, with
 * apply.authorization_mismatch when auth names another session, grant or
 * digest; apply.source_unsupported when the source, as recorded or as it
 * is now, holds what an exchange would lose (glove_manifest_check_carried:
 * a special file, another owner or group, a special mode bit, an extended
 * attribute or ACL, a second hard link); apply.no_source; apply.source_missing
 * when the source or its parent is gone), the journal's replay codes, the
 * candidate's, apply.exchange (-errno of renameat2).
 */
int glove_apply_run(const struct glove_apply_context *c, const char *session, const char *grant,
                    const struct glove_apply_signed *auth, json_t **result, struct glove_error *err);

/*
 * The startup reconciler: classifies every non-terminal transaction by
 * descriptor (the source's entry and the candidate's entry in the recorded
 * parent, by inode) into reserved, prepared, committed or ambiguous, and
 * ends the first three: reserved and prepared (not exchanged) → the
 * candidate discarded, terminal "failed" apply.interrupted; exchanged
 * (prepared whose entries are swapped, or committed) → committed and
 * terminal "applied"; anything else → an "ambiguous" record (once) and
 * left for the owner. *report (owned): an array of
 *   {"txid","grant_id","state":"failed"|"applied"|"ambiguous","code"}
 * one per transaction touched, codes only (no path). Returns 0 when every
 * transaction could be journaled, else the first journal error.
 */
int glove_apply_recover(const struct glove_apply_context *c, json_t **report, struct glove_error *err);

/*
 * Removes the old source an applied transaction of session/grant kept
 * (glove_apply_tree_remove beside the source, the parent reopened and
 * checked as at apply) and journals "cleaned". Idempotent: an already
 * cleaned transaction is 0. Codes: apply.not_applied (-ENOENT: no applied
 * transaction for that grant), apply.source_missing, apply.remove, the
 * journal's.
 */
int glove_apply_cleanup(const struct glove_apply_context *c, const char *session, const char *grant,
                        json_t **result, struct glove_error *err);

/*
 * Discards a prepared candidate that was never exchanged (the transaction
 * of session/grant that recovery left prepared is ended the same way as
 * by glove_apply_recover). Codes: apply.not_prepared (-ENOENT), the
 * reconciler's.
 */
int glove_apply_discard(const struct glove_apply_context *c, const char *session, const char *grant,
                        json_t **result, struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The apply reservation journal (issue 30; spec session-policy.md: "durable
 * single-use reservation journal", "Grant IDs, authorization digests, and
 * manifest digests are each globally single-use", "Receipts and recovery";
 * docs/retained-changes.md). Built on the chained record journal of
 * glove/store/journal.h: magic "GLVAPLY1", version 1, SHA-256 chain in its
 * own domain ("glove.apply.journal.v1"), a seal file, exclusive lock, file
 * 0600 in a 0700 directory of the caller. Bounds: 16 KiB per record,
 * 100,000 records, 64 MiB.
 *
 * Records are canonical JSON objects, one per step of a transaction TXID
 * (64 lowercase hex, random), each with "type" and "txid":
 *   reserved   {"type":"reserved","txid","at_ms","grant_id",
 *               "authorization_digest","baseline_manifest_digest",
 *               "stage_manifest_digest","bindings":OBJ}
 *              bindings: whatever the executor needs to find and check the
 *              objects again (session, grant, source locator and identity,
 *              image identity, authorization bytes and signature) — opaque
 *              here, stored and returned as is.
 *   prepared   {"type":"prepared","txid","at_ms","candidate":OBJ}
 *   committed  {"type":"committed","txid","at_ms","exchange":OBJ}
 *   terminal   {"type":"terminal","txid","at_ms","outcome":"applied"|"failed",
 *               "code":CODE|null,"receipt":OBJ}
 *   ambiguous  {"type":"ambiguous","txid","at_ms","code":CODE}
 *   cleaned    {"type":"cleaned","txid","at_ms"}
 * Members: TXID and the three digests are 64 lowercase hex; grant_id
 * is 1..GLOVE_APPLY_JOURNAL_GRANT_ID_MAX bytes of [A-Za-z0-9._/-] (the
 * authorization's SESSION "/" NAME); CODE is a stable error code,
 * 1..GLOVE_APPLY_JOURNAL_CODE_MAX bytes of [a-z0-9_.]; at_ms is an integer
 * >= 0 (the caller's clock, milliseconds since the epoch; not checked for
 * order); OBJ is any JSON object (no reals: canonical JSON). A failed
 * terminal's code is a CODE (the failure), an applied terminal's is null.
 * No other member is allowed in any record.
 *
 * Order rules (per transaction; S is its state, GLOVE_APPLY_* below):
 *   reserved            first record of a new TXID; its grant_id,
 *                       authorization_digest and stage_manifest_digest
 *                       were in no earlier reserved record
 *   prepared            S = RESERVED
 *   committed           S = PREPARED (an exchange needs its candidate)
 *   terminal applied    S = COMMITTED
 *   terminal failed     S = RESERVED or PREPARED (a committed exchange can
 *                       only end applied, or ambiguous)
 *   ambiguous           S = RESERVED, PREPARED, COMMITTED or AMBIGUOUS (it
 *                       may repeat; nothing but ambiguous follows it: an
 *                       ambiguous transaction is for the owner, never
 *                       retried or terminalized automatically)
 *   cleaned             S = APPLIED and not yet cleaned; nothing follows it
 * So each of prepared, committed, terminal and cleaned comes at most once;
 * a failed terminal is final. A journal whose records break these rules,
 * or do not decode as above, is refused at open (apply.journal_invalid,
 * naming the record's sequence number and the problem): it was not written
 * by this code.
 *
 * Room: every append (reserve included) is refused with journal.full,
 * nothing written, unless the journal keeps room after it for the records
 * every open transaction may still need at the largest record size
 * (RESERVED 4: prepared, committed, terminal, cleaned; PREPARED 3;
 * COMMITTED 2; APPLIED not cleaned 1; FAILED, cleaned and AMBIGUOUS 0).
 * So a reservation can always be finished; only a new reservation or a
 * repeated ambiguous record can find the journal full.
 *
 * The journal keeps every transaction forever (single use is global): it
 * is never compacted. Library code: no globals, no printing.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"

#define GLOVE_APPLY_JOURNAL_RECORD_MAX (16 * 1024)
#define GLOVE_APPLY_JOURNAL_MAX_RECORDS 100000
#define GLOVE_APPLY_JOURNAL_MAX_BYTES (64ULL * 1024 * 1024)
#define GLOVE_APPLY_JOURNAL_GRANT_ID_MAX 257
#define GLOVE_APPLY_JOURNAL_CODE_MAX 64

enum glove_apply_state {
        GLOVE_APPLY_RESERVED,
        GLOVE_APPLY_PREPARED,
        GLOVE_APPLY_COMMITTED,
        GLOVE_APPLY_APPLIED,   /* terminal, outcome applied */
        GLOVE_APPLY_FAILED,    /* terminal, outcome failed */
        GLOVE_APPLY_AMBIGUOUS, /* consumed, never retried or terminalized automatically */
};

/* A transaction folded from its records (borrowed from the journal; valid
 * until the next append or close). The json_t members are the records' own
 * objects (NULL when that record is absent). */
struct glove_apply_tx {
        char txid[65];
        enum glove_apply_state state;
        bool cleaned;
        const char *grant_id, *authorization_digest, *stage_manifest_digest, *baseline_manifest_digest;
        const json_t *reserved, *prepared, *committed, *terminal;
        const char *ambiguous_code; /* the last ambiguous record's code, or NULL */
};

struct glove_apply_journal;

/*
 * Opens the journal at path (absolute) and folds its records. The parent
 * directory must exist, be owned by the caller (geteuid) and have mode
 * 0700 (it is not created: as for the exposure journal, the service creates
 * its state directory); the journal and its seal (path ".seal") are created
 * when both are absent, mode 0600. Exclusive (flock): journal.locked
 * (-EBUSY) while another open journal, in this process or another, has it.
 * An incomplete last record (a crash inside an append, never acknowledged)
 * is cut off and kept in path ".torn", as the receipt journal does
 * (glove_apply_journal_torn_bytes). Errors: journal.parent_insecure
 * (-EINVAL: path not absolute), dirs.insecure (-EPERM) and path.missing
 * (-ENOENT) for the directory, the store journal's codes (journal.*) for
 * the file (a changed byte is journal.chain_mismatch), and
 * apply.journal_invalid (-EBADMSG) for records
 * that do not decode or break the order above, apply.invalid_argument
 * (out NULL), apply.no_memory. *out owned (glove_apply_journal_close).
 */
int glove_apply_journal_open(const char *path, struct glove_apply_journal **out, struct glove_error *err);

/* Closes (releasing the lock) and frees j; NULL allowed. */
void glove_apply_journal_close(struct glove_apply_journal *j);

/* Bytes of an incomplete last record cut off at open (0: none), for the
 * caller's report. */
uint64_t glove_apply_journal_torn_bytes(const struct glove_apply_journal *j);

/* Transactions in the order of their reserved records. */
size_t glove_apply_journal_count(const struct glove_apply_journal *j);
const struct glove_apply_tx *glove_apply_journal_tx(const struct glove_apply_journal *j, size_t i);
/* The transaction txid, or NULL. */
const struct glove_apply_tx *glove_apply_journal_find(const struct glove_apply_journal *j, const char *txid);
/* The newest transaction of grant_id, or NULL. */
const struct glove_apply_tx *glove_apply_journal_find_grant(const struct glove_apply_journal *j, const char *grant_id);

/*
 * Appends a reserved record for a new transaction (txid generated from 32
 * random bytes, 64 lowercase hex, copied to txid_out) after checking single
 * use against every transaction ever reserved, whatever its state:
 * apply.replayed_authorization, apply.replayed_grant,
 * apply.replayed_manifest (-EEXIST; checked in that order, so that an
 * authorization used again is named as such, the stage
 * manifest digest being the manifest; the baseline digest is not
 * single-use). Arguments (apply.invalid_argument, -EINVAL): grant_id as
 * above, digests 64 lowercase hex, bindings an object (copied; a real in
 * it cannot be encoded), at_ms >= 0. A record over
 * GLOVE_APPLY_JOURNAL_RECORD_MAX bytes is journal.bad_length (-EMSGSIZE)
 * and one that does not fit is journal.full (-ENOSPC; see "Room"); nothing
 * is written then. The append is durable (fdatasync, seal) before return;
 * otherwise the store journal's codes. Earlier glove_apply_tx pointers may
 * be invalid after the call.
 */
int glove_apply_journal_reserve(struct glove_apply_journal *j, const char *grant_id, const char *authorization_digest,
                                const char *baseline_manifest_digest, const char *stage_manifest_digest,
                                const json_t *bindings, int64_t at_ms, char txid_out[65], struct glove_error *err);

/*
 * The single-use checks of glove_apply_journal_reserve alone, appending
 * nothing: 0 when none of the three was ever reserved, else its
 * apply.replayed_* code. So that a caller can name a replay before any
 * other refusal (an applied stage's source no longer matches its baseline).
 */
int glove_apply_journal_check_unused(const struct glove_apply_journal *j, const char *grant_id,
                                     const char *authorization_digest, const char *stage_manifest_digest,
                                     struct glove_error *err);

/*
 * Appends a record of type ("prepared", "committed", "terminal",
 * "ambiguous", "cleaned") to transaction txid, with the members of fields
 * (an object, may be NULL; "type", "txid" and "at_ms" are added and may not
 * be in it): prepared needs "candidate" (object), committed "exchange"
 * (object), terminal "outcome" ("applied"|"failed"), "code" (CODE for
 * failed, null for applied) and "receipt" (object), ambiguous "code"
 * (CODE), cleaned nothing; no other member (apply.invalid_argument,
 * -EINVAL, as for an unknown type, "reserved", or at_ms < 0).
 * The transition must be allowed by the order rules above:
 * apply.invalid_transition (-EINVAL) otherwise, apply.unknown_transaction
 * (-ENOENT) for a txid never reserved. journal.bad_length and journal.full
 * as for reserve. Durable before return; the store journal's codes on
 * failure (the journal is then broken: every later append fails; the
 * folded state follows the file, so a record that reached the file before
 * its seal failed is folded). Earlier glove_apply_tx pointers of this
 * transaction may be invalid after the call.
 */
int glove_apply_journal_append(struct glove_apply_journal *j, const char *txid, const char *type, const json_t *fields,
                               int64_t at_ms, struct glove_error *err);

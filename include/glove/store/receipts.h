/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The receipt journal of gloved and its delivery (spec session-policy.md,
 * "Receipts and recovery"; spec architecture.md, "Persistence").
 *
 * Files in the state directory (mode 0700):
 *   receipt.key            32 random bytes (0600), generated at first start
 *   receipts.journal       a journal.h journal, magic "GLVRCPT1", whose
 *                          header param is the chain anchor
 *   receipts.journal.seal  its seal
 *   receipts.ack           the last acknowledged head, canonical JSON
 *                          {"head_mac":HEX64,"sequence":N} (absent: none)
 *
 * Each record payload is a canonical JSON envelope
 *   {"appended_at_ms":INT,"kind":KIND,"receipt":{...},"sequence":N,
 *    "session_id":ID}
 * and each record's tag is its MAC:
 *   mac_N = HMAC-SHA-256(key, DOMAIN(kind_N) || mac_{N-1} || envelope_N)
 * where DOMAIN(kind) (glove_store_receipts_envelope_domain, with its NUL) is
 *   "glove.receipt.refinement-envelope.v1\0"  for kind "session.refinement"
 *   "glove.receipt.envelope.v1\0"             for every other kind
 * and mac_0 = the anchor (32 bytes, from --receipt-anchor; zero bytes when
 * a journal is created without one). Every kind shares the one chain: one
 * sequence, one head, one anchor. The head is (sequence of the last
 * envelope, its MAC), or (0, anchor) when the journal is empty. Append,
 * replay at open and the compaction rewrite all take the domain from the
 * envelope's own "kind" member.
 *
 * A refinement receipt (kind "session.refinement", docs/control-protocol.md
 * "Refinement receipt") also carries its own MAC, "receipt_mac":
 *   HMAC-SHA-256(key, "glove.receipt.refinement.v1\0" ||
 *                canonical(receipt without "receipt_mac"))
 * in lowercase hex (glove_store_receipts_receipt_mac).
 *
 * Torn-tail recovery: an incomplete last record (a crash during an append;
 * it was never acknowledged nor sealed) is cut off at start and reported
 * (glove_store_receipts_recovery); every earlier record is kept intact.
 * Anything else the journal layer rejects (corrupt, reordered, duplicated,
 * resized; a MAC made with another kind's domain is journal.chain_mismatch)
 * refuses start.
 *
 * Stable error codes: receipts.key_missing (a journal exists but its key
 * does not), receipts.key_insecure (key file not 0600/owner/one link/32
 * bytes), receipts.anchor_mismatch (--receipt-anchor differs from the
 * journal's), receipts.bad_record (an envelope that is not canonical or has
 * other fields), receipts.sequence, receipts.ack_invalid (a receipts.ack file
 * that does not name a record of the chain), receipts.ack_mismatch (an
 * acknowledgement that is not exactly the current head),
 * receipts.invalid_argument, receipts.compacted (a page below the receipts
 * dropped after acknowledgement), receipts.io, journal.* (journal.h),
 * checkpoint.* (checkpoint.h).
 * Not thread-safe.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/store/checkpoint.h"
#include "glove/store/journal.h"

#define GLOVE_STORE_RECEIPTS_KEY_LEN 32
#define GLOVE_STORE_RECEIPTS_MAX_BYTES (64ull * 1024 * 1024)
#define GLOVE_STORE_RECEIPTS_MAX_RECORDS 100000u
/* Largest envelope, bytes. */
#define GLOVE_STORE_RECEIPTS_MAX_ENVELOPE (64u * 1024)
/* receipts_page: at most this many envelopes, and this many envelope bytes,
 * per page (the response frame stays below the 1 MiB frame bound). */
#define GLOVE_STORE_RECEIPTS_PAGE_MAX 256
#define GLOVE_STORE_RECEIPTS_PAGE_BYTES (512u * 1024)
/* Receipt kinds: 1..64 bytes of [a-z0-9._-]. */
#define GLOVE_STORE_RECEIPTS_KIND_MAX 64

/* The receipt kinds gloved appends: a session's terminal (resource)
 * receipt, and the refinement receipt of a refinement-eval-v1 session. */
#define GLOVE_STORE_RECEIPTS_KIND_TERMINAL "session.terminal"
#define GLOVE_STORE_RECEIPTS_KIND_REFINEMENT "session.refinement"

/* An acknowledgement compacts the journal when it holds this many receipts. */
#define GLOVE_STORE_RECEIPTS_COMPACT_RECORDS 1000u

#define GLOVE_STORE_RECEIPTS_KEY_FILE "receipt.key"
#define GLOVE_STORE_RECEIPTS_JOURNAL_FILE "receipts.journal"
#define GLOVE_STORE_RECEIPTS_ACK_FILE "receipts.ack"

struct glove_store_receipts;

struct glove_store_receipts_options {
        const char *state_dir;   /* absolute, mode 0700, owned by owner (already checked) */
        uid_t owner;
        const uint8_t *anchor;   /* 32 bytes, or NULL: keep the journal's (zeros when created) */
        uint64_t compact_records; /* 0: GLOVE_STORE_RECEIPTS_COMPACT_RECORDS */
        /* Test hook: called at each named step of a compaction (journal.h); NULL in gloved. */
        glove_store_compact_hook hook;
        void *hook_ctx;
};

/*
 * Opens the receipt journal in opts->state_dir: creates the key at first
 * start (when neither key nor journal exists), opens or creates the journal
 * with the anchor, replays and verifies the HMAC chain, recovers a torn
 * tail, and reads the acknowledgement. *out is owned by the caller
 * (glove_store_receipts_close). Errors: see top of file.
 */
int glove_store_receipts_open(const struct glove_store_receipts_options *opts,
                                struct glove_store_receipts **out, struct glove_error *err);

/*
 * The receipt key alone, as glove_store_receipts_open reads or creates it
 * (the same code; for `glove setup` and `glove doctor`): state_dirfd is the
 * state directory, opened readable and already checked (dirs.h). When
 * RECEIPT.key exists it must be a regular file owned by owner, mode 0600,
 * one link, exactly GLOVE_STORE_RECEIPTS_KEY_LEN bytes
 * (receipts.key_insecure otherwise). When it is absent and create is true
 * and no receipt journal exists, 32 random bytes are written to it
 * atomically with mode 0600 and *created (may be NULL) is set true. The key
 * bytes are wiped before return. Errors: receipts.key_insecure (-EPERM,
 * -EINVAL), receipts.key_missing (-ENOENT: absent and create is false, or a
 * journal exists without it), dirs.write, digest.*.
 */
int glove_store_receipts_key_ensure(int state_dirfd, uid_t owner, bool create, bool *created,
                                      struct glove_error *err);

/*
 * Appends a receipt (internal API for the managed-session runtime): builds
 * the envelope from kind, session_id, receipt (a JSON object, borrowed) and
 * now_ms, and appends it durably. *seq (may be NULL) receives its sequence.
 * Errors: receipts.invalid_argument, journal.full, journal.*.
 */
int glove_store_receipts_append(struct glove_store_receipts *r, const char *kind, const char *session_id,
                                  const json_t *receipt, int64_t now_ms, uint64_t *seq, struct glove_error *err);

/*
 * The envelope MAC domain of kind (see top of file; spec session-policy.md,
 * "Capability activation": the refinement receipt's own envelope HMAC
 * domain), without its NUL:
 * "glove.receipt.refinement-envelope.v1" for
 * GLOVE_STORE_RECEIPTS_KIND_REFINEMENT, "glove.receipt.envelope.v1" for any
 * other kind (NULL included). A static string; never fails.
 */
const char *glove_store_receipts_envelope_domain(const char *kind);

/*
 * The receipt-level MAC of a refinement receipt (spec session-policy.md,
 * "Capability activation": its own receipt HMAC domain): 64 lowercase hex
 * characters and a NUL into out, HMAC-SHA-256 with the receipt key over
 * "glove.receipt.refinement.v1\0" and the canonical JSON
 * (glove_json_encode_canonical) of receipt (an object, borrowed, not
 * changed) without its member "receipt_mac" when it has one. So the value
 * does not depend on member order, nor on a receipt_mac already present;
 * the runtime stores it in the receipt as "receipt_mac". Errors:
 * receipts.invalid_argument (r NULL, receipt not an object; out is ""),
 * json.* (a real, an embedded NUL, invalid UTF-8, too deep), receipts.io
 * (-ENOMEM), digest.*.
 */
int glove_store_receipts_receipt_mac(const struct glove_store_receipts *r, const json_t *receipt, char out[65],
                                     struct glove_error *err);

/* True when an envelope of bytes bytes (1..GLOVE_STORE_RECEIPTS_MAX_ENVELOPE)
 * still fits beside every reservation made so far. */
bool glove_store_receipts_has_room(const struct glove_store_receipts *r, size_t bytes);

/*
 * Reserves room for one future envelope of at most bytes bytes (a managed
 * session reserves its terminal receipt before it starts): the record count
 * and the byte bound of the journal then keep room for it whatever else is
 * appended. Returns 0, or -ENOSPC "start.receipts_full". Every reservation
 * is given back with glove_store_receipts_unreserve (with the same bytes),
 * normally just before the receipt it was made for is appended.
 */
int glove_store_receipts_reserve(struct glove_store_receipts *r, size_t bytes, struct glove_error *err);
void glove_store_receipts_unreserve(struct glove_store_receipts *r, size_t bytes);

/*
 * Builds the receipts_page result: the envelopes with sequence > after, in
 * order, at most limit (1..GLOVE_STORE_RECEIPTS_PAGE_MAX) and at most
 * GLOVE_STORE_RECEIPTS_PAGE_BYTES of envelopes (at least one when any is
 * left), with the head:
 *   {"acknowledged_sequence":N,"anchor":HEX,"envelopes":[{"envelope":{...},
 *    "mac":HEX,"sequence":N}],"head":{"mac":HEX,"sequence":N},"more":BOOL,
 *    "recovery":{"torn_bytes":N,"torn_offset":N}}
 * *out is a new reference. Errors: receipts.invalid_argument (limit out of
 * range, after beyond the head), -ENOMEM.
 */
int glove_store_receipts_page(const struct glove_store_receipts *r, uint64_t after, uint64_t limit,
                                json_t **out, struct glove_error *err);

/*
 * Acknowledges delivery up to the head: sequence and head_mac (64 hex) must
 * be exactly the current head, else receipts.ack_mismatch. Persists the
 * acknowledgement (receipts.ack, atomically) before returning 0.
 */
int glove_store_receipts_ack(struct glove_store_receipts *r, uint64_t sequence, const char *head_mac,
                               struct glove_error *err);

/*
 * The last receipt of kind kind for session_id (an identifier: no escapes
 * in its JSON form), found by the canonical envelope's last member
 * ("session_id" sorts last): *seq its sequence, *receipt (may be NULL) a new
 * reference to its "receipt" object. Returns 1 when found, 0 when not,
 * -ENOMEM. Linear in the journal's records (a byte comparison each).
 */
int glove_store_receipts_find(const struct glove_store_receipts *r, const char *kind, const char *session_id,
                                uint64_t *seq, json_t **receipt);

/* The head: sequence (0 when empty) and MAC (the anchor when empty). */
uint64_t glove_store_receipts_head(const struct glove_store_receipts *r, uint8_t mac[32]);

/*
 * Drops the acknowledged receipts from the journal (docs/recovery.md,
 * "Compaction"): writes receipts.journal.ckpt (checkpoint.h, no entries;
 * covered sequence and head = the acknowledged head; MAC = HMAC-SHA-256 with
 * the receipt key over "glove.receipt.checkpoint.v1\0" and the file), then
 * rewrites the journal to the unacknowledged receipts, byte for byte and
 * with the same MACs: its header param is the acknowledged head's MAC, which
 * the chain continues from. Sequences, MACs and the head are unchanged;
 * receipts_page refuses an after_sequence below the acknowledged one
 * (receipts.compacted). Nothing acknowledged since the last checkpoint: 0.
 * Runs by itself after an acknowledgement once the journal holds the
 * options' compact_records receipts. Opening refuses a corrupt or foreign
 * checkpoint, or one made with another key, with the checkpoint.* codes,
 * and finishes a compaction stopped after installing its checkpoint.
 * Errors: checkpoint.* (the old state stands), journal.* of the rewrite
 * (appends then fail with journal.broken until a restart finishes it).
 */
int glove_store_receipts_compact(struct glove_store_receipts *r, struct glove_error *err);

/* True when an unacknowledged receipt names session_id (linear in the
 * unacknowledged receipts). */
bool glove_store_receipts_pending(const struct glove_store_receipts *r, const char *session_id);

/* Receipts dropped after acknowledgement (the first kept is base + 1), and
 * the journal's bytes. */
uint64_t glove_store_receipts_base(const struct glove_store_receipts *r);
uint64_t glove_store_receipts_journal_bytes(const struct glove_store_receipts *r);

/* What start-up recovery did: bytes of a torn last record cut off and where
 * (both 0 when none). */
void glove_store_receipts_recovery(const struct glove_store_receipts *r, uint64_t *torn_bytes,
                                     uint64_t *torn_offset);

/* Frees r, releasing the journal lock (NULL allowed). */
void glove_store_receipts_close(struct glove_store_receipts *r);

static inline void glove_store_receipts_closep(struct glove_store_receipts **r) {
        if (r)
                glove_store_receipts_close(*r);
}
#define _cleanup_receipts_ __attribute__((cleanup(glove_store_receipts_closep)))

#define GLOVE_STORE_RECEIPT_SCHEMA_VERSION 1

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The durable per-session guest-channel admission registry (spec
 * architecture.md, "Guest specialized-channel admission"; spec
 * session-policy.md, "Guest observation channels and Sage guest
 * proposals"). Schema-generic: it enforces only structural invariants
 * (identifier charset, digest hex, TTL and skew arithmetic, capacity,
 * idempotency) and hands body semantics to the frozen admission table
 * (glove/channel/host.h). Admitted intents are appended to a chained,
 * sealed journal before they are acknowledged.
 *
 * Intent (what the guest sends; canonical JSON, one object, at most
 * GLOVE_CHANNEL_INTENT_MAX bytes, no other member, no duplicate):
 *   {"body":{...},"idempotency_key":ID,"issued_at_ms":N,"schema_id":ID,"ttl_ms":N}
 *   ID            [A-Za-z0-9][A-Za-z0-9._:-]{0,127}
 *   issued_at_ms  integer 0..GLOVE_CHANNEL_TIME_MAX_MS, realtime milliseconds
 *                 since the epoch on the guest's clock
 *   ttl_ms        integer 1..the schema's ttl_max_ms
 *   body          a JSON object of at most the schema's body_max_bytes in
 *                 canonical form, checked by the schema's validator
 *
 * Intent digest (docs/digests.md, "Guest-channel intent digest"): SHA-256,
 * lowercase hex, of the length-prefixed encoding
 *     str("glove.channel.intent.v1") || str(schema_id) || str(canonical body)
 * where str(s) = u32 big-endian byte length || bytes. It binds the exact
 * schema and body; the idempotency key, times and runtime are not in it.
 *
 * Journal (glove/store/journal.h): DIR/NAME and DIR/NAME.seal, magic
 * "GLVCHAN1", version 1, records of at most GLOVE_CHANNEL_RECORD_MAX bytes,
 * at most GLOVE_CHANNEL_CAPACITY_MAX records, chain
 * glove_store_journal_chain_sha256("glove.channel.journal.v1"), genesis
 * glove_store_journal_genesis_sha256("glove.channel.genesis.v1"), header
 * param SHA-256(str("glove.channel.registry.v1") || str(session_id) ||
 * str(runtime_id)) (the journal belongs to exactly one session and runtime).
 * A torn tail is refused, never cut. One record per admission, canonical JSON:
 *   {"body":{...},"digest":HEX,"idempotency_key":ID,"issued_at_ms":N,
 *    "runtime_id":ID,"schema_id":ID,"seq":N,"session_id":ID,"ttl_ms":N}
 * seq is the record's journal sequence (1-based); runtime_id and session_id
 * are the registry's, never the guest's.
 *
 * Replay (at open): every record is checked again (members, identifiers,
 * seq, session and runtime, digest recomputed, keys unique). A record whose
 * schema is not registered in the table now is kept only as quarantine
 * metadata (seq, schema_id, idempotency_key, digest, issued_at_ms, ttl_ms;
 * reason "schema_retired"; the body is dropped); one whose schema is
 * registered but whose body now exceeds its bound or fails its validator is
 * quarantined likewise (reason "body_rejected"). Quarantined entries are
 * never actionable: their keys cannot be enqueued again.
 *
 * Threads: enqueue, page, count and close may be called from different
 * threads at once (the observation server's worker and the owner's control
 * thread); one mutex inside the registry serializes them, and the schema
 * validator runs under it. open and free are not concurrent with anything.
 *
 * Stable error codes (struct glove_error; err may be NULL):
 *   channel.invalid_argument     bad arguments: NULL pointers, a name with
 *                                '/', session_id or runtime_id not an ID,
 *                                capacity outside 1..GLOVE_CHANNEL_CAPACITY_MAX,
 *                                limit outside 1..GLOVE_CHANNEL_PAGE_MAX (-EINVAL)
 *   channel.host_not_frozen      the table is not frozen (-EINVAL)
 *   channel.journal_dir          the directory descriptor has no absolute
 *                                path, or its path names another directory
 *                                after the journal was opened (-EINVAL)
 *   channel.journal_foreign      the journal, or a record in it, belongs to
 *                                another session_id or runtime_id (-EBADMSG)
 *   channel.journal_invalid      a record that does not decode as above:
 *                                a member missing, unknown or out of range,
 *                                seq not the record's, digest not the
 *                                recomputed one, a key twice (-EBADMSG)
 *   journal.*                    the store's codes: journal.chain_mismatch
 *                                (a changed or reordered record),
 *                                journal.truncated (a torn record),
 *                                journal.bad_length, journal.resized,
 *                                journal.locked, journal.file_insecure, ...
 *   channel.intent_too_large     more than GLOVE_CHANNEL_INTENT_MAX bytes (-EMSGSIZE)
 *   channel.intent_invalid       not one strict JSON object (syntax, UTF-8,
 *                                duplicate key, depth, reals), a member
 *                                missing or of the wrong type (-EINVAL)
 *   channel.intent_not_canonical valid JSON not in canonical form (-EINVAL)
 *   channel.intent_unknown_member a member other than the five (-EINVAL)
 *   channel.schema_id_invalid    schema_id not an ID (-EINVAL)
 *   channel.idempotency_key_invalid  idempotency_key not an ID (-EINVAL)
 *   channel.time_out_of_range    issued_at_ms outside 0..GLOVE_CHANNEL_TIME_MAX_MS (-EINVAL)
 *   channel.quarantined          the key is a quarantined entry's (-EPERM)
 *   channel.schema_unregistered  the schema is not in the table: fails
 *                                closed, nothing written (-EPERM)
 *   channel.ttl_out_of_range     ttl_ms outside 1..the schema's ttl_max_ms (-EINVAL)
 *   channel.clock_skew           |issued_at_ms - now_ms| > GLOVE_CHANNEL_SKEW_MAX_MS (-EINVAL)
 *   channel.expired              issued_at_ms + ttl_ms <= now_ms (-ETIME)
 *   channel.body_too_large       canonical body above the schema's
 *                                body_max_bytes (-EMSGSIZE)
 *   the validator's code         the body is refused by the schema
 *                                (channel.body_rejected when it gave none)
 *   channel.idempotency_conflict the key was admitted with another digest (-EEXIST)
 *   channel.registry_full        capacity records are in the journal (-ENOSPC)
 *   channel.journal_append       the durable append failed; the message
 *                                holds the store's code; the registry then
 *                                refuses every later enqueue (-EIO)
 *   channel.registry_broken      an earlier append failed (-EIO)
 *   channel.registry_closed      enqueue after glove_channel_registry_close (-EBADF)
 *   channel.no_memory            (-ENOMEM)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/channel/host.h"

/* Largest capacity (and journal record count) of one registry. */
#define GLOVE_CHANNEL_CAPACITY_MAX 256
/* Largest intent, in bytes (the framed I/O bound). */
#define GLOVE_CHANNEL_INTENT_MAX 16384
/* Largest journal record payload, in bytes. */
#define GLOVE_CHANNEL_RECORD_MAX 16384
/* Largest accepted |issued_at_ms - now_ms|, in milliseconds. */
#define GLOVE_CHANNEL_SKEW_MAX_MS 30000
/* Largest issued_at_ms (2^53 - 1, exact in every JSON implementation). */
#define GLOVE_CHANNEL_TIME_MAX_MS 9007199254740991LL
/* Longest ID (schema_id, idempotency_key, session_id, runtime_id), bytes. */
#define GLOVE_CHANNEL_ID_MAX 128
/* Most entries one page holds. */
#define GLOVE_CHANNEL_PAGE_MAX 100

/* The registry. Opaque. */
struct glove_channel_registry;

/* What an enqueue admitted. */
struct glove_channel_admission {
        uint64_t seq;                                 /* journal sequence, 1-based */
        char digest[GLOVE_CHANNEL_DIGEST_HEX_SIZE];   /* the intent digest, lowercase hex */
        bool duplicate;                               /* an idempotent retry: nothing was written */
};

/*
 * Opens (creating when missing) the registry journal dir_fd/name (name: a
 * file name, e.g. "STEM.channel"; its seal is name + ".seal") for session
 * session_id whose runtime is runtime_id, and replays it (see the top of
 * this header). dir_fd is borrowed: a directory owned by the effective UID
 * with mode 0700, reached by an absolute path without symbolic links (the
 * journal layer opens by path; the path is read from the descriptor and
 * its identity checked again after the open). host must be frozen and is
 * borrowed for the registry's whole life. capacity: 1..GLOVE_CHANNEL_CAPACITY_MAX
 * records (admitted and quarantined together); a journal holding more is
 * opened and refuses every enqueue (channel.registry_full).
 *
 * *out is owned by the caller (glove_channel_registry_free). Errors:
 * channel.invalid_argument, channel.host_not_frozen, channel.journal_dir,
 * channel.journal_foreign, channel.journal_invalid, journal.*, dirs.*,
 * path.*, channel.no_memory.
 */
int glove_channel_registry_open(int dir_fd, const char *name, const char *session_id, const char *runtime_id,
                                const struct glove_channel_host *host, uint32_t capacity,
                                struct glove_channel_registry **out, struct glove_error *err);

/*
 * Admits intent[0..len) (the wire form above) at realtime now_ms
 * (milliseconds since the epoch). Order of checks: size, strict canonical
 * decode, members, identifiers, integer ranges; the key of a quarantined
 * entry (channel.quarantined); the schema (channel.schema_unregistered);
 * ttl against the schema; skew; expiry; body size; the validator; the
 * digest; idempotency (same key and digest: success with duplicate=true
 * and the first admission's seq, nothing written; same key, other digest:
 * channel.idempotency_conflict); capacity; the durable append. On success
 * *out (may be NULL) holds the seq, digest and duplicate flag; the record
 * is durable (journal and seal synced) before return. Every refusal
 * writes nothing. Errors: see the top of this header.
 */
int glove_channel_registry_enqueue(struct glove_channel_registry *r, const void *intent, size_t len, int64_t now_ms,
                                   struct glove_channel_admission *out, struct glove_error *err);

/*
 * A page of entries with seq > after_seq, in seq order, at most limit
 * (1..GLOVE_CHANNEL_PAGE_MAX) of them, into *out (a new reference owned by
 * the caller):
 *   {"entries":[{"digest","idempotency_key","issued_at_ms","runtime_id",
 *                "schema_id","seq","state":"admitted","ttl_ms","body":{...}}
 *               | {..., "state":"quarantined","reason":"schema_retired"|"body_rejected"}],
 *    "next_after":N|null}
 * A quarantined entry has no body. next_after is the last entry's seq
 * when more entries follow it, null otherwise. Works after close.
 * Errors: channel.invalid_argument, channel.no_memory.
 */
int glove_channel_registry_page(struct glove_channel_registry *r, uint64_t after_seq, uint32_t limit, json_t **out,
                                struct glove_error *err);

/* Entries (admitted and quarantined), and the quarantined ones alone. */
size_t glove_channel_registry_count(struct glove_channel_registry *r);
size_t glove_channel_registry_quarantined(struct glove_channel_registry *r);

/* The registry's bound identifiers (owned by r). */
const char *glove_channel_registry_session_id(const struct glove_channel_registry *r);
const char *glove_channel_registry_runtime_id(const struct glove_channel_registry *r);

/*
 * Closes the journal (releasing its lock) while keeping the entries in
 * memory: later enqueues fail with channel.registry_closed, pages still
 * work. Idempotent; r NULL allowed.
 */
void glove_channel_registry_close(struct glove_channel_registry *r);

/* Closes (if still open) and frees r (NULL allowed). No other thread may
 * use r any more: the owner stops the observation server first. */
void glove_channel_registry_free(struct glove_channel_registry *r);

static inline void glove_channel_registry_freep(struct glove_channel_registry **r) {
        if (r)
                glove_channel_registry_free(*r);
}
#define _cleanup_channel_registry_ __attribute__((cleanup(glove_channel_registry_freep)))

/*
 * The intent digest (above) of schema_id and the canonical body bytes
 * body[0..body_len) into hex (65 bytes with the NUL). Errors: digest.*,
 * channel.invalid_argument.
 */
int glove_channel_intent_digest(const char *schema_id, const void *body, size_t body_len,
                                char hex[GLOVE_CHANNEL_DIGEST_HEX_SIZE], struct glove_error *err);

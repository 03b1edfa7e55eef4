/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The durable session store of gloved (spec session-policy.md, "Durable
 * identity" and "Protected files"; spec architecture.md, "Persistence").
 *
 * An append-only journal (journal.h, magic "GLVSESS1") whose record payloads
 * are canonical JSON objects:
 *
 *   {"controller_plan_digest":HEX64,"created_at_ms":INT,"idempotency_key":ID,
 *    "kind":"create","plan":{...},"plan_content_digest":HEX64,"seq":N,
 *    "session_id":ID}
 *   {"at_ms":INT,"from":STATE,"kind":"transition","reason":CODE,
 *    ("runtime":{...},)"seq":N,"session_id":ID,"to":STATE}
 *   {"at_ms":INT,"kind":"cleanup","seq":N,"session_id":ID}
 *
 * "seq" is the record's sequence: its position in the journal plus the
 * sequence its checkpoint covers (0 without one). A cleanup record is valid
 * once per session, for a terminal one (else store.bad_transition).
 * Compaction (glove_store_compact) folds the journal into the
 * checkpoint PATH.ckpt (checkpoint.h) and leaves an empty tail.
 *
 * "runtime", only on a transition to running and optional there, is the
 * session's runtime identity: a JSON object that is opaque to the store
 * (the managed-session runtime writes and reads it), at most
 * GLOVE_STORE_RUNTIME_MAX bytes of canonical JSON.
 *
 * Each record is chained: tag = SHA-256("glove.session-store.record.v1\0" ||
 * previous tag || u64be seq || u32be length || payload); the chain starts at
 * SHA-256("glove.session-store.genesis.v1\0" || 64-byte header), whose param
 * is a random store id. Bounds: 64 MiB and 10 000 records (creates and
 * transitions together); the bound is an error (journal.full), never a drop.
 * "plan" is the plan object whose canonical encoding is the exact plan bytes
 * that were validated (create decodes them strictly and canonically), and
 * plan_content_digest is their SHA-256.
 *
 * Replay is strict: the store refuses to open (and rewrites nothing) on any
 * journal.* error of journal.h (including journal.truncated for an
 * incomplete last record), or on a record that is not canonical JSON with
 * exactly the fields above (for a create record: apart from the plan's
 * bytes, which are checked as said below) (store.bad_record; so is a
 * "runtime" member on a
 * transition to another state than running, or one that is not an object
 * within its bound), whose seq is not its position
 * (store.sequence), that creates an existing session id or key
 * (store.duplicate_session), or that makes a transition the state machine
 * forbids or from a state the session is not in (store.bad_transition), or
 * whose session is unknown (store.unknown_session), or whose plan does not
 * hash to its plan_content_digest (store.digest_mismatch).
 *
 * How replay reads a record: jansson decodes it strictly and checks that it
 * is canonical by encoding it again and comparing the bytes
 * (glove_json_decode_canonical) -- the whole record for a transition
 * (the runtime identity with it), and for a create record everything but
 * the plan. A create record's members are sorted, and those before "plan"
 * (a digest, an integer, an identifier, "create") cannot contain the text
 * ,"plan": nor those after it (a digest, an integer, an identifier) the
 * text ,"plan_content_digest":" so the plan's bytes are those from just
 * after the first ,"plan": to just before the last ,"plan_content_digest":"
 * and the record without them, with {} in their place (the envelope, a few
 * hundred bytes), is decoded and checked member by member exactly as the
 * whole record would be. Since none of the envelope's strings can hold a
 * quote, its "plan":{} is the plan member, so the record is exactly the
 * checked envelope with the plan bytes as the plan's value. The plan bytes
 * themselves are checked for their bound (store.bad_record above
 * GLOVE_STORE_PLAN_MAX), for starting with '{' and ending with '}',
 * for holding no NUL byte (store.bad_record) and for hashing to
 * plan_content_digest (store.digest_mismatch); they are not decoded or
 * re-encoded at replay. That is as strong as decoding them: the digest is
 * the one create recorded over the canonical plan bytes it had validated,
 * and the chain and the seal cover the whole record, so bytes other than
 * those validated need a writer that recomputes digest, chain and seal,
 * who could as well write any canonical plan (the chain is unkeyed: the
 * state directory's owner and mode protect the store). And the plan is
 * decoded strictly again wherever it is used: start_session validates it
 * against the current policy before anything is launched, and cleanup and
 * the reconciler decode it canonically through the supervisor. A record in which the
 * two texts are not found, or whose envelope would be larger than any
 * create's, is decoded whole. Replay of a full store (10 000 records,
 * about 11 MB of 1 KiB plans) is two SHA-256 passes over the bytes (chain
 * and plan digest) and 10 000 small jansson decodes.
 *
 * Runtime codes: store.invalid_id (a session id or idempotency key outside
 * the identifier charset), store.invalid_digest (not 64 lowercase hex),
 * store.invalid_plan (plan bytes not a canonical JSON object, larger than
 * GLOVE_STORE_PLAN_MAX, or nested GLOVE_JSON_MAX_DEPTH deep, which
 * the record around it would exceed), store.invalid_runtime (a runtime identity
 * on a transition to another state than running, or bytes that are not one
 * canonical JSON object of at most GLOVE_STORE_RUNTIME_MAX bytes),
 * store.digest_mismatch, session.conflict,
 * session.not_found, the session.h codes, and journal.* from appends.
 * Not thread-safe: one event loop owns the store.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/store/checkpoint.h"
#include "glove/store/journal.h"
#include "glove/store/session.h"

#define GLOVE_STORE_MAX_BYTES (64ull * 1024 * 1024)
#define GLOVE_STORE_MAX_RECORDS 10000u
/* Largest record payload, bytes (a plan of GLOVE_STORE_PLAN_MAX plus
 * the other fields). */
#define GLOVE_STORE_MAX_PAYLOAD (96u * 1024)
/* Largest plan, bytes (equals GLOVE_PLAN_MAX_BYTES of the supervisor). */
#define GLOVE_STORE_PLAN_MAX (64u * 1024)
/* Largest runtime identity on a running transition, bytes of canonical JSON. */
#define GLOVE_STORE_RUNTIME_MAX (8u * 1024)
/* Session ids and idempotency keys: 1..128 bytes of [A-Za-z0-9._:-],
 * starting with a letter or digit. */
#define GLOVE_STORE_ID_MAX 128
/* Transition reasons: 0..128 bytes of [a-z0-9._-]. */
#define GLOVE_STORE_REASON_MAX 128
/* A session makes at most this many transitions (the chain has five steps). */
#define GLOVE_STORE_SESSION_HISTORY_MAX 6
/* Automatic compaction: before an append, when the journal (the tail after
 * the checkpoint) holds this many records or bytes. */
#define GLOVE_STORE_COMPACT_RECORDS 4000u
#define GLOVE_STORE_COMPACT_BYTES (32ull * 1024 * 1024)
/* Largest checkpoint file, bytes (the live sessions' records). */
#define GLOVE_STORE_CHECKPOINT_MAX_BYTES (256ull * 1024 * 1024)

struct glove_store_session_transition {
        enum glove_store_session_state from, to;
        int64_t at_ms;                            /* Unix milliseconds */
        uint64_t seq;                             /* journal record */
        char reason[GLOVE_STORE_REASON_MAX + 1];
};

/* A stored session. Owned by the store; read-only for callers and valid
 * until the store is closed. */
struct glove_store_session {
        char session_id[GLOVE_STORE_ID_MAX + 1];
        char idempotency_key[GLOVE_STORE_ID_MAX + 1];
        char controller_plan_digest[65];
        char plan_content_digest[65];
        char *plan;                               /* canonical plan bytes, NUL-terminated */
        size_t plan_len;                          /* bytes, without the NUL */
        int64_t created_at_ms;                    /* Unix milliseconds */
        uint64_t created_seq;                     /* journal record of the create */
        enum glove_store_session_state state;
        /* history[0..n_history): NULL until the first transition, then room
         * for GLOVE_STORE_SESSION_HISTORY_MAX entries. A session that never
         * moved (the only kind a store full of sessions holds: the record
         * bound counts creates and transitions together) costs a third as
         * much memory, which is most of the page faults of a full replay. */
        struct glove_store_session_transition *history;
        size_t n_history;
        /* The runtime identity recorded by the transition to running:
         * canonical JSON object bytes, NUL-terminated; NULL (and 0) when
         * that transition had none or the session never ran. */
        char *runtime;
        size_t runtime_len;                       /* bytes, without the NUL */
        /* cleanup_session ran (a "cleanup" record): only for a terminal session. */
        bool cleaned;
        int64_t cleaned_at_ms;                    /* Unix milliseconds */
        uint64_t cleaned_seq;                     /* journal record of the cleanup */
};

struct glove_store;

/* Journal format of the session store (for tests and tools). */
extern const struct glove_store_journal_format glove_store_format;

/*
 * Opens the store journal at path (absolute; parent 0700 owned by owner),
 * creating it when missing, and replays it strictly (see top of file). The
 * store holds the journal's exclusive lock until closed, so a second gloved
 * on the same store fails with journal.locked. *out is owned by the caller
 * (glove_store_close); report may be NULL.
 */
int glove_store_open(const char *path, uid_t owner, struct glove_store **out,
                             struct glove_store_journal_report *report, struct glove_error *err);

/* Store options (glove_store_open_with). */
struct glove_store_options {
        const char *path;            /* absolute journal path; the checkpoint is path + ".ckpt" */
        uid_t owner;
        uint64_t compact_records;    /* 0: GLOVE_STORE_COMPACT_RECORDS */
        uint64_t compact_bytes;      /* 0: GLOVE_STORE_COMPACT_BYTES */
        /* Test hook: called at each named step of a compaction (journal.h,
         * enum glove_store_compact_step); NULL in gloved. */
        glove_store_compact_hook hook;
        void *hook_ctx;
};

/*
 * As glove_store_open, with options. Opening reads the checkpoint
 * PATH.ckpt when it exists (checkpoint.h: its MAC is verified, then its
 * entries, the live sessions' records, are replayed as journal records are,
 * their sequences increasing and at most its covered sequence), then the
 * journal: either its tail (header flag "continues", param = the
 * checkpoint's covered head; records numbered from covered + 1), or the
 * journal the checkpoint replaced (param = the checkpoint's prev_param;
 * a compaction stopped after installing the checkpoint): that one must end
 * exactly at the checkpoint's old_end_seq and head, and is then switched for
 * an empty tail (the roll-forward; glove_store_last_compaction says
 * so). A leftover .PATH.ckpt.new is removed. Errors, besides those of
 * glove_store_open: checkpoint.* (checkpoint.h), checkpoint.missing
 * (the journal continues a checkpoint that is not there, -ENOENT),
 * checkpoint.mismatch (the journal neither continues the checkpoint nor is
 * the one it replaced, -EBADMSG). Nothing is deleted on a refusal.
 */
int glove_store_open_with(const struct glove_store_options *o, struct glove_store **out,
                                  struct glove_store_journal_report *report, struct glove_error *err);

/* Whether a session that ended and was cleaned up may leave the live state
 * (gloved: its terminal receipt is acknowledged). Borrowed session. */
typedef bool (*glove_store_retire_fn)(void *ctx, const struct glove_store_session *s);

/* Sets the retention rule (NULL: no session ever leaves; compaction then
 * only folds the journal into the checkpoint). ctx must outlive the store. */
void glove_store_set_retention(struct glove_store *store, glove_store_retire_fn fn, void *ctx);

/* What the last compaction did. */
struct glove_store_compaction {
        uint64_t dropped;          /* sessions that left the live state */
        uint64_t kept;             /* live sessions in the checkpoint */
        uint64_t entries;          /* records in the checkpoint */
        uint64_t checkpoint_bytes;
        bool rolled_forward;       /* open finished a compaction stopped after its checkpoint */
        bool failed;               /* an automatic compaction failed (code says why; nothing was lost) */
        const char *code;
};

/*
 * Compacts now (docs/recovery.md, "Compaction"): sessions that are
 * terminal, cleaned up and accepted by the retention rule leave the live
 * state; the others' records (verbatim) make the new checkpoint, which
 * covers every record up to the last one (covered head = the journal's
 * head) and names the journal it replaces (prev_param, old records, end);
 * then the journal is rewritten to an empty tail that continues it
 * (glove_store_journal_rewrite). Steps and crash windows: BEGIN,
 * CHECKPOINT_WRITTEN (old state stands), CHECKPOINT_INSTALLED (the next open
 * rolls forward), JOURNAL_WRITTEN, JOURNAL_SWITCHED, SEAL_SWITCHED (new
 * state). Time and bytes are those of the live state (bounded by
 * GLOVE_STORE_CHECKPOINT_MAX_BYTES). Nothing to do (an empty
 * journal and no session to drop) returns 0. Runs by itself before an
 * append (create, transition,
 * cleanup) once the journal holds the options' compact_records records or
 * compact_bytes bytes. out may be NULL. Errors: checkpoint.too_large,
 * checkpoint.io (the old state stands), journal.* of the rewrite (the store
 * is then broken: appends fail with journal.broken until a restart, which
 * finishes the compaction), store.no_memory, store.read_only.
 */
int glove_store_compact(struct glove_store *store, struct glove_store_compaction *out,
                                struct glove_error *err);

/* Compacts when the journal has reached the thresholds (as before an append). */
int glove_store_compact_if_due(struct glove_store *store, struct glove_error *err);

/* The last compaction's outcome (borrowed, valid until the next). */
const struct glove_store_compaction *glove_store_last_compaction(const struct glove_store *store);

/* The journal's (tail's) bytes and records. */
uint64_t glove_store_tail_bytes(const struct glove_store *store);
uint64_t glove_store_tail_records(const struct glove_store *store);

/*
 * Records that cleanup_session ran for session_id (a terminal session), as
 * a record {"at_ms":INT,"kind":"cleanup","seq":N,"session_id":ID}: the
 * session may then leave the live state at the next compaction. A session
 * already cleaned appends nothing (*appended false). Errors:
 * session.not_found, session.not_terminal, store.invalid_id, journal.*.
 */
int glove_store_cleanup(struct glove_store *store, const char *session_id, int64_t now_ms,
                                bool *appended, struct glove_error *err);

/*
 * Replays journal bytes data[0..len) in memory, without files, seal or lock,
 * into a store that cannot append (for fuzzing and tests). An incomplete last
 * record is journal.truncated, as at start. *out as above.
 */
int glove_store_replay_bytes(const void *data, size_t len, struct glove_store **out,
                                     struct glove_error *err);

/* A create request. All strings are borrowed for the call. */
struct glove_store_create {
        const char *session_id;
        const char *idempotency_key;
        const char *controller_plan_digest;   /* 64 lowercase hex (Sage's BLAKE3) */
        const char *plan_content_digest;      /* 64 lowercase hex, SHA-256 of plan */
        const void *plan;                     /* canonical JSON object bytes */
        size_t plan_len;                      /* bytes */
        int64_t now_ms;                       /* Unix milliseconds, recorded as created_at_ms */
};

/*
 * Creates a session durably (the record is fsynced before return), or
 * returns the original one for a byte-identical retry (same key, session id,
 * controller digest and plan bytes; *replayed set true, nothing appended).
 * Reusing the key or the session id with other content is session.conflict.
 * *out borrows the stored session. Errors: see top of file.
 */
int glove_store_create(struct glove_store *store, const struct glove_store_create *req,
                               const struct glove_store_session **out, bool *replayed, struct glove_error *err);

/*
 * Moves session_id to state to (internal API for the managed-session
 * runtime), appending a transition record durably. A request for the
 * state the session is already in appends nothing and returns 0 (*appended
 * false). reason is a stable code (0..128 bytes of [a-z0-9._-], "" allowed).
 * Errors: session.not_found, session.invalid_transition, session.terminal,
 * store.invalid_id, store.no_memory (the session's history, allocated at its
 * first transition, before anything is appended), journal.*. Same as
 * glove_store_transition_runtime with runtime NULL.
 */
int glove_store_transition(struct glove_store *store, const char *session_id,
                                   enum glove_store_session_state to, const char *reason, int64_t now_ms,
                                   bool *appended, struct glove_error *err);

/*
 * As glove_store_transition, with runtime: NULL, or the canonical
 * JSON bytes runtime[0..runtime_len) of one object (at most
 * GLOVE_STORE_RUNTIME_MAX bytes, nesting at most
 * GLOVE_JSON_MAX_DEPTH - 1) recorded as the record's "runtime" member and
 * then held, copied, in the session's runtime/runtime_len. Only for to ==
 * RUNNING: a runtime with another state, or bytes that are not one
 * canonical object within the bounds, is store.invalid_runtime (state,
 * size and form are checked before the session is looked up, the nesting
 * when the record is encoded; nothing is appended either way). A request for the state the
 * session is already in appends nothing and leaves the recorded runtime as
 * it is. runtime is borrowed for the call.
 */
int glove_store_transition_runtime(struct glove_store *store, const char *session_id,
                                           enum glove_store_session_state to, const char *reason,
                                           int64_t now_ms, const char *runtime, size_t runtime_len,
                                           bool *appended, struct glove_error *err);

/* The session with this id, or NULL. */
const struct glove_store_session *glove_store_find(const struct glove_store *store,
                                                             const char *session_id);

/* The session created with this idempotency key, or NULL. */
const struct glove_store_session *glove_store_find_key(const struct glove_store *store,
                                                                 const char *idempotency_key);

/* The i-th session in creation order (i < glove_store_sessions), or NULL. */
const struct glove_store_session *glove_store_at(const struct glove_store *store, size_t i);

/* Number of live sessions, and the sequence of the last record (the number
 * of records ever written, checkpoint included). */
size_t glove_store_sessions(const struct glove_store *store);
uint64_t glove_store_records(const struct glove_store *store);

/* Frees the store and releases the journal lock (NULL allowed). */
void glove_store_close(struct glove_store *store);

/* True when s is a valid session id or idempotency key. */
bool glove_store_id_valid(const char *s);

/* True when s is exactly 64 lowercase hex characters. */
bool glove_store_hex64_valid(const char *s);

static inline void glove_store_closep(struct glove_store **s) {
        if (s)
                glove_store_close(*s);
}
#define _cleanup_store_ __attribute__((cleanup(glove_store_closep)))

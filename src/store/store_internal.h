/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internal to the session store (store.c, store_records.c, store_compact.c;
 * see glove/store/store.h): the store's state and the helpers its files
 * share. Not part of the public API.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/digest.h"
#include "glove/store/checkpoint.h"
#include "glove/store/journal.h"
#include "glove/store/store.h"
#include "index.h"

/* How the journal being replayed relates to the checkpoint. */
enum replay_mode {
        MODE_UNDECIDED = 0,
        MODE_PLAIN,   /* no checkpoint: a journal from sequence 1 */
        MODE_TAIL,    /* the tail that continues the checkpoint */
        MODE_COVERED, /* the journal the checkpoint replaced (a compaction
                       * stopped after installing it): verified, not applied */
};

struct glove_store {
        /* glove_store_format with ctx = this store, so that the chain
         * uses the store's digest context; outlives the journal. */
        struct glove_store_journal_format fmt;
        /* Reset and reused for every chain tag and plan digest: a context per
         * record costs an allocation and an algorithm lookup each time. */
        struct glove_digest_sha256 *digest;
        struct glove_store_journal *journal; /* NULL for an in-memory replay */
        struct glove_store_session **sessions;
        size_t n, cap;
        struct glove_store_index by_id, by_key;
        uint64_t records;      /* sequence of the last record (checkpoint and journal) */
        uint64_t base;         /* sequence before the journal's first record */
        /* Compaction (checkpoint.h). */
        int dirfd;             /* the journal's directory, or -1 */
        char base_name[256];   /* the journal's file name */
        bool have_ckpt;
        struct glove_store_checkpoint ckpt;
        uint8_t scan_header[GLOVE_STORE_JOURNAL_HEADER_LEN]; /* header of the journal being replayed */
        bool have_scan_header;
        enum replay_mode mode;
        uint64_t compact_records;
        uint64_t compact_bytes;
        glove_store_compact_hook hook;
        void *hook_ctx;
        glove_store_retire_fn retire;
        void *retire_ctx;
        bool broken;           /* a compaction stopped after installing its checkpoint */
        struct glove_store_compaction last;
};

/* ---- store.c: the session table and digests ---- */

/* True when s is a transition reason: at most GLOVE_STORE_REASON_MAX
 * bytes of [a-z0-9._-] (the empty string included). */
bool store_reason_valid(const char *s);

/* hex (65 bytes) = lowercase SHA-256 of plan[0..len), with st's digest
 * context, or a fresh one when st is NULL. Returns 0 or a negative errno. */
int store_plan_digest(struct glove_store *st, const void *plan, size_t len, char hex[65], struct glove_error *err);

/* Adds s (owned by the store from success on) to the table and both
 * indexes. Returns 0, or -ENOMEM (store.no_memory) leaving s to the caller. */
int store_add_session(struct glove_store *st, struct glove_store_session *s, struct glove_error *err);

/* The session under key in ix (st->by_id or st->by_key), or NULL. Borrowed. */
struct glove_store_session *store_lookup(const struct glove_store *st, const struct glove_store_index *ix,
                                         const char *key);

/* Frees s and what it owns; NULL is a no-op. */
void store_session_free(struct glove_store_session *s);

/* A NUL-terminated malloc'd copy of p[0..len), or NULL on ENOMEM. */
char *store_copy_bytes(const char *p, size_t len);

/* Room for s's history, allocated at its first transition. Returns 0 or
 * -ENOMEM (store.no_memory). */
int store_history_room(struct glove_store_session *s, struct glove_error *err);

/* Appends to s's history (store_history_room succeeded) and moves it to to. */
void store_record_transition(struct glove_store_session *s, enum glove_store_session_state to, const char *reason,
                             int64_t at, uint64_t seq);

/* The checkpoint's MAC (glove_store_checkpoint_mac_fn, ctx = the store):
 * SHA-256 with the checkpoint domain, unkeyed like the store's chain. */
int store_ckpt_mac(void *ctx, const void *data, size_t len, uint8_t out[GLOVE_STORE_CHECKPOINT_MAC_LEN],
                   struct glove_error *err);

/* ---- store_records.c: record decoding, replay and encoding ---- */

/* Replays one record payload[0..len) into st. expect is its sequence
 * (journal records), or 0 for a checkpoint entry, whose sequence must be
 * above the last one and at most the checkpoint's covered sequence.
 * Returns 0 or a negative errno with a store.* code in err. */
int store_replay_payload(struct glove_store *st, uint64_t expect, const void *payload, size_t len,
                         struct glove_error *err);

/* The canonical record bytes of s's create (the envelope with its plan
 * bytes spliced in: the exact bytes create wrote). *out is malloc'd (NUL
 * terminated), *len its length. Returns 0 or a negative errno. */
int store_create_bytes(const struct glove_store_session *s, char **out, size_t *len, struct glove_error *err);

/* ---- store_compact.c: compaction ---- */

/* Compacts when the journal reached either threshold; a failure is kept in
 * st->last (failed, code) rather than returned. */
void store_maybe_compact(struct glove_store *st);

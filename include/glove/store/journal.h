/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Append-only, bounded, chained record journals (spec session-policy.md,
 * "Protected files", "Durable identity", "Receipts and recovery"; spec
 * architecture.md, "Persistence"). The session store and the receipt journal
 * are both built on this layer; they differ in their magic, bounds, chain
 * function and record content. docs/control-protocol.md ("Journals")
 * describes the bytes.
 *
 * Journal file (one per journal, mode 0600, one link, parent 0700):
 *
 *   header  64 bytes
 *     0  magic         8 bytes (format specific, e.g. "GLVSESS1")
 *     8  version       u32 big-endian
 *    12  max_payload   u32 big-endian, bytes per record payload
 *    16  max_records   u32 big-endian
 *    20  flags         u32 big-endian: 0, or GLOVE_STORE_JOURNAL_FLAG_CONTINUES
 *                      (bit 0: the journal is the tail of a checkpoint and
 *                      its first record follows the checkpoint's head; the
 *                      journal's owner refuses it without that checkpoint)
 *    24  max_bytes     u64 big-endian, whole file including the header
 *    32  param         32 bytes (store id, or receipt chain anchor)
 *   records, each
 *     u32 big-endian payload length L (1 <= L <= max_payload)
 *     L payload bytes (canonical JSON, checked by the layer above)
 *     32-byte tag = chain(previous tag, sequence, payload); the first
 *     record's previous tag is genesis(header).
 *
 * Seal file (FILE.seal, mode 0600, one link, exactly 1024 bytes): two 64-byte
 * slots at offsets 0 and 512 (separate sectors), written alternately after
 * each durable append. A slot holds
 *     0  "GLVSEAL1"
 *     8  record count  u64 big-endian
 *    16  journal size  u64 big-endian, bytes
 *    24  head tag      32 bytes
 *    56  check         first 8 bytes of SHA-256("glove.journal.seal.v1\0" ||
 *                      header || slot[0..56))
 * The seal is what detects a journal truncated at a record boundary or grown
 * by a record that was never committed: a journal is accepted only when its
 * records match the newest valid slot exactly, or exceed it by exactly one
 * complete, correctly chained record (the window between the journal's
 * fdatasync and the seal's; that record was never acknowledged, and an
 * idempotent retry finds it).
 *
 * An append writes the record with one write(2), fdatasync(2)s the journal,
 * then writes and fdatasync(2)s the seal slot. A journal whose file size
 * changed behind the writer, or whose write or sync failed, is "broken": every
 * later append fails (fail closed) until restart.
 *
 * Stable error codes (struct glove_error):
 *   journal.parent_insecure   the journal path is not absolute or has no file
 *                             name (-EINVAL); a parent that is not a 0700
 *                             directory of the service user is dirs.insecure
 *                             (dirs.h), prefixed with the journal's role
 *   journal.file_insecure     journal or seal not a regular file owned by the
 *                             service user, mode 0600, one link (-EPERM)
 *   journal.locked            another process holds the journal lock (-EBUSY)
 *   journal.missing           the seal records commits but the journal is
 *                             gone (-ENOENT)
 *   journal.seal_missing      the journal exists without its seal (-ENOENT)
 *   journal.seal_corrupt      no seal slot has a valid check, or the seal has
 *                             the wrong size (-EBADMSG)
 *   journal.bad_header        short header, wrong magic, version, bounds or
 *                             unknown flags (-EBADMSG)
 *   journal.too_large         file larger than max_bytes (-EFBIG)
 *   journal.bad_length        a record length of 0 or above max_payload
 *                             (-EBADMSG)
 *   journal.too_many_records  more than max_records records (-EBADMSG)
 *   journal.chain_mismatch    a record's tag differs from the chain: corrupt,
 *                             reordered or duplicated records (-EBADMSG)
 *   journal.truncated         an incomplete record at the end (-EBADMSG)
 *   journal.resized           the journal holds fewer records, or other bytes,
 *                             than its seal committed, or changed size behind
 *                             the writer (-EBADMSG)
 *   journal.full              an append would pass max_records or max_bytes
 *                             (-ENOSPC); nothing is written
 *   journal.broken            an earlier write or sync failed (-EIO)
 *   journal.io                a read, write or sync failed (-errno)
 *   journal.no_memory         (-ENOMEM)
 * Errors of the chain and record callbacks are passed through unchanged.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/bytes.h"
#include "glove/base/error.h"

#define GLOVE_STORE_JOURNAL_HEADER_LEN 64
#define GLOVE_STORE_JOURNAL_TAG_LEN 32
#define GLOVE_STORE_JOURNAL_PARAM_LEN 32
/* Bytes a record adds around its payload: length prefix and tag. */
#define GLOVE_STORE_JOURNAL_RECORD_OVERHEAD (4 + GLOVE_STORE_JOURNAL_TAG_LEN)
#define GLOVE_STORE_JOURNAL_SEAL_LEN 1024
#define GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE 512
#define GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN 64
/* Header flag: this journal continues a checkpoint (checkpoint.h). */
#define GLOVE_STORE_JOURNAL_FLAG_CONTINUES 1u
/* Suffix appended to the journal's file name to name its seal. */
#define GLOVE_STORE_JOURNAL_SEAL_SUFFIX ".seal"

/*
 * Chain step: writes the tag of record seq (1-based) with payload[0..len)
 * following prev into out. Returns 0 or a negative errno with err set.
 */
typedef int (*glove_store_journal_chain_fn)(void *ctx, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN],
                                              uint64_t seq, const void *payload, size_t len,
                                              uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN],
                                              struct glove_error *err);

/*
 * Chain start: writes the tag that precedes record 1 for this header (64
 * bytes) into out. Returns 0 or a negative errno with err set.
 */
typedef int (*glove_store_journal_genesis_fn)(void *ctx, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                                                uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN],
                                                struct glove_error *err);

/*
 * Replay callback: called once per complete record, in order, after its tag
 * was verified. payload is borrowed for the call. A negative return stops the
 * replay and fails it with that value (err set by the callback).
 */
typedef int (*glove_store_journal_record_fn)(void *userdata, uint64_t seq, const void *payload, size_t len,
                                               const uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN],
                                               struct glove_error *err);


/*
 * The usual chain and genesis of a journal format with SHA-256 in its own
 * domains (the exposure and apply journals; the session store's is the same
 * with a reused digest context):
 *   chain   = SHA-256(domain "\0" || prev (32) || seq (u64 BE) || len (u32 BE) || payload)
 *   genesis = SHA-256(domain "\0" || header (64))
 * domain is a NUL-terminated string (its NUL is hashed). Errors: the digest's.
 */
int glove_store_journal_chain_sha256(const char *domain, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], uint64_t seq,
                                     const void *payload, size_t len, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN],
                                     struct glove_error *err);
int glove_store_journal_genesis_sha256(const char *domain, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                                       uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err);

/* What a journal format is. All fields are read-only after setup; the
 * structure must outlive every journal opened with it. */
struct glove_store_journal_format {
        char magic[8];
        uint32_t version;
        uint32_t max_payload;  /* bytes, >= 1 */
        uint32_t max_records;  /* >= 1 */
        uint64_t max_bytes;    /* bytes, whole journal file */
        glove_store_journal_chain_fn chain;
        glove_store_journal_genesis_fn genesis;
        void *ctx;             /* passed to chain and genesis */
};

/* The outcome of a scan. */
struct glove_store_journal_scan {
        uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN];
        uint64_t records;                            /* complete records */
        uint64_t end;                                /* bytes up to the end of the last complete record */
        uint64_t torn_bytes;                         /* bytes of an incomplete record after end (0: none) */
        uint8_t head[GLOVE_STORE_JOURNAL_TAG_LEN]; /* tag of the last record, or the genesis */
        uint8_t prev_head[GLOVE_STORE_JOURNAL_TAG_LEN]; /* head before the last record (== head when none) */
        uint64_t prev_end;                           /* end before the last record */
};

/*
 * Writes the 64-byte header for fmt with param (32 bytes) into out.
 */
void glove_store_journal_header_build(const struct glove_store_journal_format *fmt,
                                        const uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN],
                                        uint8_t out[GLOVE_STORE_JOURNAL_HEADER_LEN]);

/* As glove_store_journal_header_build, with flags at offset 20. */
void glove_store_journal_header_build_flags(const struct glove_store_journal_format *fmt,
                                              const uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN], uint32_t flags,
                                              uint8_t out[GLOVE_STORE_JOURNAL_HEADER_LEN]);

/*
 * Scans journal bytes data[0..len) in memory: checks the header against fmt,
 * verifies every record's bounds and tag, and calls fn (may be NULL) for
 * each complete record. An incomplete last record is not an error here:
 * the scan stops, returns 0 and reports it in out->torn_bytes, and the caller
 * decides (the session store refuses, the receipt journal recovers). Does no
 * I/O; the seal is not consulted (glove_store_journal_seal_verify).
 * Errors: journal.bad_header, journal.too_large, journal.bad_length,
 * journal.too_many_records, journal.chain_mismatch, or fn's error.
 */
int glove_store_journal_scan(const struct glove_store_journal_format *fmt, const void *data, size_t len,
                               glove_store_journal_record_fn fn, void *userdata,
                               struct glove_store_journal_scan *out, struct glove_error *err);

/*
 * Builds the seal slot committing a journal with header, records, size
 * bytes and head tag, into out (GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN bytes).
 */
int glove_store_journal_seal_slot(const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], uint64_t records,
                                    uint64_t size, const uint8_t head[GLOVE_STORE_JOURNAL_TAG_LEN],
                                    uint8_t out[GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN], struct glove_error *err);

/*
 * Checks a scan (without torn bytes) against seal bytes seal[0..seal_len):
 * picks the valid slot with the higher count and accepts when the scan
 * matches it exactly, or holds exactly one more record whose predecessor
 * state matches it (*unsealed is then true). Errors: journal.seal_corrupt,
 * journal.resized.
 */
int glove_store_journal_seal_verify(const struct glove_store_journal_scan *scan, const void *seal,
                                      size_t seal_len, bool *unsealed, struct glove_error *err);

/* An open journal: the file, its seal, the lock, and the head. Opaque. */
struct glove_store_journal;

struct glove_store_journal_open_options {
        const char *path;        /* absolute journal path; the seal is path + ".seal" */
        uid_t owner;             /* required owner of the parent, journal and seal */
        /* Header param for a journal created now (32 bytes); NULL means 32
         * random bytes. An existing journal keeps its own. */
        const uint8_t *create_param;
        bool recover_torn_tail;  /* true: cut an incomplete last record (receipts);
                                  * false: refuse with journal.truncated (sessions) */
};

/* What opening found, for the caller to report. */
struct glove_store_journal_report {
        bool created;            /* the journal did not exist and was created */
        bool seal_replaced;      /* ... over a seal that existed and committed nothing (an interrupted creation) */
        bool unsealed_record;    /* one complete record past the seal was accepted */
        uint64_t torn_bytes;     /* bytes of an incomplete last record cut off (recover mode) */
        uint64_t torn_offset;    /* where they started */
};

/*
 * Opens (or creates) the journal at opts->path for fmt, taking an exclusive
 * lock (flock LOCK_EX|LOCK_NB) held until glove_store_journal_close.
 * The parent must be an existing directory owned by opts->owner with mode
 * 0700; journal and seal regular files owned by opts->owner, mode 0600, one
 * link, no symbolic link in the path. A missing journal is created (seal
 * first, then the journal through a temporary name and rename, then the
 * directory is synced) only when the seal is missing too or commits zero
 * records. A rewrite (glove_store_journal_rewrite) interrupted between
 * its two renames is finished (its seal put in place), and the leftovers of
 * one interrupted earlier are removed, under the lock. Then the whole journal is read (at most fmt->max_bytes), scanned
 * with fn (see glove_store_journal_scan) and checked against the seal.
 * Nothing is rewritten, except that in recover mode an incomplete last
 * record is cut off (ftruncate + fsync) and reported.
 *
 * *out is owned by the caller (glove_store_journal_close); report may be
 * NULL. Errors: every journal.* code above, and fn's.
 */
int glove_store_journal_open(const struct glove_store_journal_format *fmt,
                               const struct glove_store_journal_open_options *opts,
                               glove_store_journal_record_fn fn, void *userdata,
                               struct glove_store_journal **out, struct glove_store_journal_report *report,
                               struct glove_error *err);

/*
 * True when a record of len payload bytes fits the format's bounds now
 * (record count and file size). Use to reserve capacity before acting.
 */
bool glove_store_journal_has_room(const struct glove_store_journal *j, size_t len);

/*
 * Appends payload[0..len) as the next record and makes it durable (journal
 * fdatasync, then the seal slot and its fdatasync) before returning. On
 * success stores the record's sequence (1-based) in *seq and its tag in tag
 * (both may be NULL). Errors: journal.full (nothing written),
 * journal.bad_length, journal.resized and journal.broken (the journal
 * changed behind the writer or an earlier append failed), journal.io (the
 * journal is then broken), chain errors.
 */
int glove_store_journal_append(struct glove_store_journal *j, const void *payload, size_t len, uint64_t *seq,
                                 uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err);

/* The named steps of a compaction (checkpoint.h, and the rewrite below),
 * in order; a test hook is called at each (and may _exit there). */
enum glove_store_compact_step {
        GLOVE_STORE_COMPACT_BEGIN = 1,          /* nothing written yet */
        GLOVE_STORE_COMPACT_CHECKPOINT_WRITTEN, /* .NAME.ckpt.new written and synced */
        GLOVE_STORE_COMPACT_CHECKPOINT_INSTALLED, /* renamed to NAME.ckpt, directory synced */
        GLOVE_STORE_COMPACT_JOURNAL_WRITTEN,    /* .NAME.compact and .NAME.seal.compact synced */
        GLOVE_STORE_COMPACT_JOURNAL_SWITCHED,   /* .NAME.compact renamed over the journal */
        GLOVE_STORE_COMPACT_SEAL_SWITCHED,      /* its seal renamed over the seal: the old journal is gone */
        GLOVE_STORE_COMPACT_STEP_COUNT
};
typedef void (*glove_store_compact_hook)(void *ctx, enum glove_store_compact_step step);

/* One record payload for glove_store_journal_rewrite (borrowed). */
struct glove_store_journal_payload {
        const void *data;
        size_t len; /* 1..max_payload bytes */
};

/*
 * Replaces the journal by a new one with header param and flags (the
 * header must differ from the current one: a rewrite always changes the
 * param) holding recs[0..count), chained from the new header's genesis.
 * Steps: write .NAME.compact and its seal .NAME.seal.compact (locked
 * before it is visible), fsync both (hook JOURNAL_WRITTEN); rename the
 * journal into place, fsync the directory (hook JOURNAL_SWITCHED); rename
 * the seal into place, fsync the directory (hook SEAL_SWITCHED). A crash
 * anywhere leaves the old journal and seal, or the new journal with the
 * new seal next to it, which glove_store_journal_open puts in place (the
 * seal's slot checks cover the header, so the leftover seal tells which
 * journal is current); the lock is held throughout. hook may be NULL.
 * Errors: journal.full (the records do not fit the bounds), journal.bad_length,
 * journal.bad_header, journal.broken, journal.io (after a failed switch
 * the journal is broken until restart), chain errors.
 */
int glove_store_journal_rewrite(struct glove_store_journal *j, const uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN],
                                  uint32_t flags, const struct glove_store_journal_payload *recs, size_t count,
                                  glove_store_compact_hook hook, void *hook_ctx, struct glove_error *err);

/* The header flags (GLOVE_STORE_JOURNAL_FLAG_*). */
uint32_t glove_store_journal_flags(const struct glove_store_journal *j);

/* Committed records, and the journal's size in bytes. */
uint64_t glove_store_journal_records(const struct glove_store_journal *j);
uint64_t glove_store_journal_size(const struct glove_store_journal *j);

/* The head tag (tag of the last record, or the genesis) into out. */
void glove_store_journal_head(const struct glove_store_journal *j, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN]);

/* The 32-byte header param (store id or anchor) into out. */
void glove_store_journal_param(const struct glove_store_journal *j, uint8_t out[GLOVE_STORE_JOURNAL_PARAM_LEN]);

/* Releases the lock, closes the descriptors and frees j (NULL allowed). */
void glove_store_journal_close(struct glove_store_journal *j);

static inline void glove_store_journal_closep(struct glove_store_journal **j) {
        if (j)
                glove_store_journal_close(*j);
}
#define _cleanup_journal_ __attribute__((cleanup(glove_store_journal_closep)))


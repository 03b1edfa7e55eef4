/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Authenticated, chained checkpoints of a journal (journal.h): what
 * compaction of the session store and of the receipt journal writes (spec
 * session-policy.md, "Receipts and recovery"; docs/recovery.md,
 * "Compaction"). A checkpoint replaces a journal's records up to a sequence
 * by a summary (the records that stay live, verbatim), carries the chain
 * head it replaces, and is authenticated with the journal's own chain
 * function family (the session store: SHA-256; receipts: HMAC-SHA-256 with
 * the receipt key). The journal that continues it (its tail) has the flag
 * GLOVE_STORE_JOURNAL_FLAG_CONTINUES and the covered head as its header
 * param, so its first record follows that head; a compaction can neither
 * hide a record (the covered head and sequence pin the chain) nor invent one
 * (the MAC).
 *
 * File NAME.ckpt next to the journal NAME (mode 0600, one link, owner), all
 * integers big-endian:
 *     0  "GLVCKPT1"
 *     8  journal magic        8 bytes (the journal format's)
 *    16  version              u32, 1
 *    20  reserved             u32, 0
 *    24  generation           u64, 1 for the first checkpoint
 *    32  origin               32 bytes: the param of the first journal (store
 *                             id, or receipt anchor), kept across generations
 *    64  prev_param           32 bytes: the header param of the journal this
 *                             checkpoint replaced
 *    96  covered_seq          u64: last sequence the checkpoint covers
 *   104  covered_head         32 bytes: the chain head at covered_seq; the
 *                             tail journal's header param
 *   136  old_records          u64: records of the replaced journal
 *   144  old_end_seq          u64: sequence of its last record
 *   152  old_end_head         32 bytes: its head
 *   184  entries              u64
 *   192  body_len             u64, bytes
 *   200  body                 entries × (u32 length L, 1..max_payload; L bytes)
 *   200+body_len  mac         32 bytes = mac_fn(bytes [0, 200 + body_len))
 *
 * Writing: .NAME.ckpt.new (O_EXCL, 0600), fsync, rename to NAME.ckpt, fsync
 * of the directory. The caller holds the journal's lock.
 *
 * Stable error codes: checkpoint.corrupt (short, wrong magic, version,
 * reserved bytes, body out of its bounds, an entry's length; -EBADMSG),
 * checkpoint.mac_mismatch (the MAC does not verify: the file is corrupt or
 * was made with another key; -EBADMSG), checkpoint.too_large (-EFBIG),
 * checkpoint.insecure (not a regular private file of the owner; -EPERM),
 * checkpoint.io (-errno), checkpoint.no_memory (-ENOMEM). Every message of
 * a refusal says that nothing was deleted and what to do.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/store/journal.h"

#define GLOVE_STORE_CHECKPOINT_HEADER_LEN 200
#define GLOVE_STORE_CHECKPOINT_MAC_LEN 32
#define GLOVE_STORE_CHECKPOINT_SUFFIX ".ckpt"

struct glove_store_checkpoint {
        char journal_magic[8];
        uint64_t generation;
        uint8_t origin[32];
        uint8_t prev_param[32];
        uint64_t covered_seq;
        uint8_t covered_head[32];
        uint64_t old_records;
        uint64_t old_end_seq;
        uint8_t old_end_head[32];
        uint64_t entries;
        uint8_t mac[GLOVE_STORE_CHECKPOINT_MAC_LEN]; /* filled by read and write */
};

/* Authenticates data[0..len) into out (32 bytes). 0 or -errno with err. */
typedef int (*glove_store_checkpoint_mac_fn)(void *ctx, const void *data, size_t len,
                                               uint8_t out[GLOVE_STORE_CHECKPOINT_MAC_LEN], struct glove_error *err);

/* Called for each body entry in order (payload borrowed for the call). */
typedef int (*glove_store_checkpoint_entry_fn)(void *userdata, uint64_t index, const void *payload, size_t len,
                                                 struct glove_error *err);

/* A body being built: entries appended with glove_store_checkpoint_body_add. */
struct glove_store_checkpoint_body {
        uint8_t *data;
        size_t len, cap;
        uint64_t entries;
};

/* Appends one entry (1..UINT32_MAX bytes). 0 or -ENOMEM (checkpoint.no_memory). */
int glove_store_checkpoint_body_add(struct glove_store_checkpoint_body *b, const void *payload, size_t len,
                                      struct glove_error *err);
void glove_store_checkpoint_body_free(struct glove_store_checkpoint_body *b);

/*
 * Reads and verifies dirfd/BASE.ckpt (base: the journal's file name): size
 * at most max_bytes, header, MAC (mac_fn over everything before it), then
 * calls fn for each entry (lengths 1..max_payload). *exists is false (and 0
 * returned, out untouched) when the file does not exist. The magic must be
 * journal_magic. Errors: see top of file, and fn's.
 */
int glove_store_checkpoint_read(int dirfd, const char *base, uid_t owner, const char journal_magic[8],
                                  uint64_t max_bytes, uint32_t max_payload, glove_store_checkpoint_mac_fn mac_fn,
                                  void *mac_ctx, glove_store_checkpoint_entry_fn fn, void *userdata,
                                  struct glove_store_checkpoint *out, bool *exists, struct glove_error *err);

/*
 * Writes c (entries taken from body, may be NULL for none) durably as
 * dirfd/BASE.ckpt (see top of file), calling hook (may be NULL) with
 * CHECKPOINT_WRITTEN after the temporary file is synced and
 * CHECKPOINT_INSTALLED after the rename and directory sync. Stores the MAC
 * in c->mac. Errors: checkpoint.too_large (above max_bytes), checkpoint.io,
 * checkpoint.no_memory, mac_fn's.
 */
int glove_store_checkpoint_write(int dirfd, const char *base, struct glove_store_checkpoint *c,
                                   const struct glove_store_checkpoint_body *body, uint64_t max_bytes,
                                   glove_store_checkpoint_mac_fn mac_fn, void *mac_ctx,
                                   glove_store_compact_hook hook, void *hook_ctx, struct glove_error *err);

/* Removes dirfd/.BASE.ckpt.new, the leftover of a compaction interrupted
 * before its checkpoint was installed (the caller holds the journal lock).
 * 0 or checkpoint.io. */
int glove_store_checkpoint_remove_leftover(int dirfd, const char *base, struct glove_error *err);

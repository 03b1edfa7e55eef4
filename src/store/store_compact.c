/* SPDX-License-Identifier: Apache-2.0 */
/* Session store compaction and retention (see store.h, checkpoint.h): the
 * checkpoint of the live sessions' records, dropping retired sessions, the
 * switch to an empty tail, the thresholds, and the tail's size. */
#include "glove/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/store/checkpoint.h"
#include "store_internal.h"

/* ---- compaction ---- */

/* The live sessions' records, gathered session by session and written to
 * the checkpoint in journal order: replay requires every entry's sequence
 * to be higher than the one before, and the records of sessions that were
 * live at the same time interleave in the journal. */
struct staged_entry {
        uint64_t seq;
        char *bytes; /* malloc'd canonical payload */
        size_t len;
};

struct staged {
        struct staged_entry *v;
        size_t n, cap;
};

static void staged_free(struct staged *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i].bytes);
        free(s->v);
        *s = (struct staged){ 0 };
}

/* Takes bytes (malloc'd) in every case. */
static int stage(struct staged *s, uint64_t seq, char *bytes, size_t len, struct glove_error *err) {
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 64;
                struct staged_entry *v = reallocarray(s->v, cap, sizeof(*v));
                if (!v) {
                        free(bytes);
                        return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory staging a checkpoint");
                }
                s->v = v;
                s->cap = cap;
        }
        s->v[s->n++] = (struct staged_entry){ .seq = seq, .bytes = bytes, .len = len };
        return 0;
}

static int stage_json(struct staged *s, uint64_t seq, json_t *o, struct glove_error *err) {
        char *bytes = NULL;
        size_t len = 0;
        if (!o || glove_json_encode_canonical(o, &bytes, &len, err) < 0)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory encoding a checkpoint entry");
        return stage(s, seq, bytes, len, err);
}

/* Stages s's records (create, transitions, cleanup) as they were written. */
static int add_session_records(struct staged *b, const struct glove_store_session *s, struct glove_error *err) {
        char *create = NULL;
        size_t len = 0;
        int r = store_create_bytes(s, &create, &len, err);
        if (r == 0)
                r = stage(b, s->created_seq, create, len, err);
        for (size_t i = 0; r == 0 && i < s->n_history; i++) {
                const struct glove_store_session_transition *t = &s->history[i];
                _cleanup_json_ json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:I,s:s,s:s}", "at_ms", (json_int_t)t->at_ms,
                                                     "from", glove_store_session_state_name(t->from), "kind",
                                                     "transition", "reason", t->reason, "seq", (json_int_t)t->seq,
                                                     "session_id", s->session_id, "to",
                                                     glove_store_session_state_name(t->to));
                if (o && t->to == GLOVE_STORE_SESSION_RUNNING && s->runtime) {
                        json_t *rt = json_loadb(s->runtime, s->runtime_len, JSON_REJECT_DUPLICATES, NULL);
                        if (!rt || json_object_set_new(o, "runtime", rt) < 0)
                                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
                }
                r = stage_json(b, t->seq, o, err);
        }
        if (r == 0 && s->cleaned) {
                _cleanup_json_ json_t *o = json_pack("{s:I,s:s,s:I,s:s}", "at_ms", (json_int_t)s->cleaned_at_ms,
                                                     "kind", "cleanup", "seq", (json_int_t)s->cleaned_seq,
                                                     "session_id", s->session_id);
                r = stage_json(b, s->cleaned_seq, o, err);
        }
        return r;
}

static int by_seq(const void *a, const void *b) {
        uint64_t x = ((const struct staged_entry *)a)->seq, y = ((const struct staged_entry *)b)->seq;
        return x < y ? -1 : x > y;
}

/* Sorts the staged records by sequence and appends them to body. */
static int stage_flush(struct staged *s, struct glove_store_checkpoint_body *body, struct glove_error *err) {
        if (s->n)
                qsort(s->v, s->n, sizeof(*s->v), by_seq);
        int r = 0;
        for (size_t i = 0; r == 0 && i < s->n; i++)
                r = glove_store_checkpoint_body_add(body, s->v[i].bytes, s->v[i].len, err);
        return r;
}

static void step(struct glove_store *st, enum glove_store_compact_step s) {
        if (st->hook)
                st->hook(st->hook_ctx, s);
}

static bool retired(const struct glove_store *st, const struct glove_store_session *s) {
        return st->retire && s->cleaned && glove_store_session_state_terminal(s->state) &&
               st->retire(st->retire_ctx, s);
}

/* Drops the retired sessions from memory (the checkpoint that left them out
 * is installed) and rebuilds the indexes. */
static int drop_retired(struct glove_store *st, const bool *drop, struct glove_error *err) {
        size_t k = 0;
        glove_store_index_free(&st->by_id);
        glove_store_index_free(&st->by_key);
        memset(&st->by_id, 0, sizeof(st->by_id));
        memset(&st->by_key, 0, sizeof(st->by_key));
        int r = 0;
        for (size_t i = 0; i < st->n; i++) {
                struct glove_store_session *s = st->sessions[i];
                if (drop[i]) {
                        store_session_free(s);
                        continue;
                }
                st->sessions[k] = s;
                if (r == 0 && (glove_store_index_put(&st->by_id, s->session_id, k) < 0 ||
                               glove_store_index_put(&st->by_key, s->idempotency_key, k) < 0))
                        r = glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
                k++;
        }
        st->n = k;
        return r;
}

int glove_store_compact(struct glove_store *st, struct glove_store_compaction *out,
                                struct glove_error *err) {
        struct glove_store_compaction res = { 0 };
        if (out)
                *out = res;
        if (!st->journal)
                return glove_error_set(err, EROFS, "store.read_only", "this store was replayed from memory");
        if (st->broken)
                return glove_error_set(err, EIO, "journal.broken", "an earlier compaction stopped midway; restart gloved");
        uint64_t n = glove_store_journal_records(st->journal);
        bool any = n > 0;
        for (size_t i = 0; !any && i < st->n; i++)
                any = retired(st, st->sessions[i]);
        if (!any)
                return 0; /* a bare tail and nobody to drop: nothing to do */
        /* (With a bare tail the covered head is the tail's genesis, a hash
         * of its header: never its param, so the next open still tells the
         * replaced journal from the new tail.) */
        step(st, GLOVE_STORE_COMPACT_BEGIN);
        _cleanup_free_ bool *drop = calloc(st->n ? st->n : 1, sizeof(*drop));
        struct glove_store_checkpoint_body body = { 0 };
        if (!drop)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        int r = 0;
        struct staged staged = { 0 };
        for (size_t i = 0; r == 0 && i < st->n; i++) {
                drop[i] = retired(st, st->sessions[i]);
                if (drop[i])
                        res.dropped++;
                else
                        r = add_session_records(&staged, st->sessions[i], err);
        }
        if (r == 0)
                r = stage_flush(&staged, &body, err);
        staged_free(&staged);
        struct glove_store_checkpoint c = { 0 };
        uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN], head[GLOVE_STORE_JOURNAL_TAG_LEN];
        glove_store_journal_param(st->journal, param);
        glove_store_journal_head(st->journal, head);
        memcpy(c.journal_magic, glove_store_format.magic, 8);
        c.generation = st->have_ckpt ? st->ckpt.generation + 1 : 1;
        memcpy(c.origin, st->have_ckpt ? st->ckpt.origin : param, 32);
        memcpy(c.prev_param, param, 32);
        c.covered_seq = c.old_end_seq = st->records;
        memcpy(c.covered_head, head, 32);
        memcpy(c.old_end_head, head, 32);
        c.old_records = n;
        if (r == 0)
                r = glove_store_checkpoint_write(st->dirfd, st->base_name, &c, &body,
                                                   GLOVE_STORE_CHECKPOINT_MAX_BYTES, store_ckpt_mac, st,
                                                   st->hook, st->hook_ctx, err);
        res.checkpoint_bytes = GLOVE_STORE_CHECKPOINT_HEADER_LEN + body.len + GLOVE_STORE_CHECKPOINT_MAC_LEN;
        res.kept = st->n - res.dropped;
        res.entries = body.entries;
        glove_store_checkpoint_body_free(&body);
        if (r < 0) {
                (void)glove_store_checkpoint_remove_leftover(st->dirfd, st->base_name, NULL);
                return r; /* the old checkpoint and journal stand */
        }
        /* From here the new checkpoint is the current state: the journal it
         * replaced is switched for an empty tail now, or at the next start. */
        st->ckpt = c;
        st->have_ckpt = true;
        int dr = drop_retired(st, drop, err);
        r = glove_store_journal_rewrite(st->journal, c.covered_head, GLOVE_STORE_JOURNAL_FLAG_CONTINUES, NULL, 0,
                                          st->hook, st->hook_ctx, err);
        if (r < 0) {
                st->broken = true;
                return r;
        }
        st->base = c.covered_seq;
        st->mode = MODE_TAIL;
        if (dr < 0) {
                st->broken = true;
                return dr;
        }
        res.rolled_forward = false;
        st->last = res;
        if (out)
                *out = res;
        return 0;
}

void store_maybe_compact(struct glove_store *st) {
        if (!st->journal || st->broken)
                return;
        uint64_t n = glove_store_journal_records(st->journal);
        uint64_t size = glove_store_journal_size(st->journal);
        if (n < st->compact_records && size < st->compact_bytes)
                return;
        struct glove_error e = { 0 };
        if (glove_store_compact(st, NULL, &e) < 0) {
                st->last.failed = true;
                st->last.code = e.code;
        }
}

int glove_store_compact_if_due(struct glove_store *st, struct glove_error *err) {
        if (!st->journal)
                return 0;
        uint64_t n = glove_store_journal_records(st->journal);
        uint64_t size = glove_store_journal_size(st->journal);
        if (n < st->compact_records && size < st->compact_bytes)
                return 0;
        return glove_store_compact(st, NULL, err);
}

void glove_store_set_retention(struct glove_store *st, glove_store_retire_fn fn, void *ctx) {
        st->retire = fn;
        st->retire_ctx = ctx;
}

const struct glove_store_compaction *glove_store_last_compaction(const struct glove_store *st) {
        return &st->last;
}

uint64_t glove_store_tail_bytes(const struct glove_store *st) {
        return st->journal ? glove_store_journal_size(st->journal) : 0;
}

uint64_t glove_store_tail_records(const struct glove_store *st) {
        return st->journal ? glove_store_journal_records(st->journal) : 0;
}

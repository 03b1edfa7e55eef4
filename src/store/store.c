/* SPDX-License-Identifier: Apache-2.0 */
/* The durable session store (see store.h): its journal format and chain,
 * the session table, open and replay (with the checkpoint), create,
 * transition, cleanup, lookup and close. Record decoding is in
 * store_records.c, compaction in store_compact.c. */
#include "glove/store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/store/checkpoint.h"
#include "glove/store/dirs.h"
#include "store_internal.h"

#define RECORD_DOMAIN "glove.session-store.record.v1"
#define GENESIS_DOMAIN "glove.session-store.genesis.v1"
#define CHECKPOINT_DOMAIN "glove.session-store.checkpoint.v1"

/* The store's digest context, reset; or, without a store (ctx NULL: the
 * public format, used by tools and tests), a new one in *own. */
static int digest_start(struct glove_store *st, struct glove_digest_sha256 **own,
                        struct glove_digest_sha256 **d, struct glove_error *err) {
        if (!st) {
                int r = glove_digest_sha256_init(own, err);
                *d = *own;
                return r;
        }
        *d = st->digest;
        return glove_digest_sha256_reset(st->digest, err);
}

static int store_chain(void *ctx, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], uint64_t seq,
                       const void *payload, size_t len, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN],
                       struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *own = NULL;
        struct glove_digest_sha256 *d = NULL;
        uint8_t num[12];
        glove_put_be64(num, seq);
        glove_put_be32(num + 8, (uint32_t)len);
        int r = digest_start(ctx, &own, &d, err);
        if (r == 0)
                r = glove_digest_sha256_update(d, RECORD_DOMAIN, sizeof(RECORD_DOMAIN), err);
        if (r == 0)
                r = glove_digest_sha256_update(d, prev, GLOVE_STORE_JOURNAL_TAG_LEN, err);
        if (r == 0)
                r = glove_digest_sha256_update(d, num, sizeof(num), err);
        if (r == 0)
                r = glove_digest_sha256_update(d, payload, len, err);
        if (r == 0)
                r = glove_digest_sha256_final(d, out, err);
        return r;
}

static int store_genesis(void *ctx, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                         uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        struct glove_store *st = ctx;
        if (st) { /* the replay decides from it how the journal follows the checkpoint */
                memcpy(st->scan_header, header, GLOVE_STORE_JOURNAL_HEADER_LEN);
                st->have_scan_header = true;
        }
        uint8_t buf[sizeof(GENESIS_DOMAIN) + GLOVE_STORE_JOURNAL_HEADER_LEN];
        memcpy(buf, GENESIS_DOMAIN, sizeof(GENESIS_DOMAIN));
        memcpy(buf + sizeof(GENESIS_DOMAIN), header, GLOVE_STORE_JOURNAL_HEADER_LEN);
        return glove_digest_sha256(buf, sizeof(buf), out, err);
}

const struct glove_store_journal_format glove_store_format = {
        .magic = { 'G', 'L', 'V', 'S', 'E', 'S', 'S', '1' },
        .version = 1,
        .max_payload = GLOVE_STORE_MAX_PAYLOAD,
        .max_records = GLOVE_STORE_MAX_RECORDS,
        .max_bytes = GLOVE_STORE_MAX_BYTES,
        .chain = store_chain,
        .genesis = store_genesis,
};

bool glove_store_id_valid(const char *s) {
        size_t n = 0;
        if (!s)
                return false;
        for (; s[n]; n++) {
                char c = s[n];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                if (!alnum && (n == 0 || (c != '.' && c != '_' && c != ':' && c != '-')))
                        return false;
                if (n >= GLOVE_STORE_ID_MAX)
                        return false;
        }
        return n > 0;
}

bool glove_store_hex64_valid(const char *s) {
        size_t n = 0;
        if (!s)
                return false;
        for (; s[n]; n++)
                if (n >= 64 || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == 64;
}

bool store_reason_valid(const char *s) {
        size_t n = 0;
        for (; s[n]; n++) {
                char c = s[n];
                if (n >= GLOVE_STORE_REASON_MAX ||
                    !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

int store_plan_digest(struct glove_store *st, const void *plan, size_t len, char hex[65],
                      struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *own = NULL;
        struct glove_digest_sha256 *ctx = NULL;
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        int r = digest_start(st, &own, &ctx, err);
        if (r == 0)
                r = glove_digest_sha256_update(ctx, plan, len, err);
        if (r == 0)
                r = glove_digest_sha256_final(ctx, d, err);
        if (r < 0)
                return r;
        return glove_digest_hex_encode(d, sizeof(d), hex, 65);
}

int store_add_session(struct glove_store *st, struct glove_store_session *s, struct glove_error *err) {
        if (st->n == st->cap) {
                size_t cap = st->cap ? st->cap * 2 : 64;
                struct glove_store_session **v = realloc(st->sessions, cap * sizeof(*v));
                if (!v)
                        return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
                st->sessions = v;
                st->cap = cap;
        }
        if (glove_store_index_put(&st->by_id, s->session_id, st->n) < 0 ||
            glove_store_index_put(&st->by_key, s->idempotency_key, st->n) < 0)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        st->sessions[st->n++] = s;
        return 0;
}

struct glove_store_session *store_lookup(const struct glove_store *st, const struct glove_store_index *ix,
                                         const char *key) {
        size_t i;
        return glove_store_index_get(ix, key, &i) == 0 ? st->sessions[i] : NULL;
}

void store_session_free(struct glove_store_session *s) {
        if (s) {
                free(s->plan);
                free(s->runtime);
                free(s->history);
                free(s);
        }
}

char *store_copy_bytes(const char *p, size_t len) {
        char *c = malloc(len + 1);
        if (c) {
                memcpy(c, p, len);
                c[len] = '\0';
        }
        return c;
}

/* Room for s's history, allocated at its first transition. */
int store_history_room(struct glove_store_session *s, struct glove_error *err) {
        if (!s->history && !(s->history = calloc(GLOVE_STORE_SESSION_HISTORY_MAX, sizeof(*s->history))))
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        return 0;
}

/* Appends to s's history (store_history_room succeeded) and moves it to to. */
void store_record_transition(struct glove_store_session *s, enum glove_store_session_state to,
                             const char *reason, int64_t at, uint64_t seq) {
        struct glove_store_session_transition *t = &s->history[s->n_history++];
        t->from = s->state;
        t->to = to;
        t->at_ms = at;
        t->seq = seq;
        snprintf(t->reason, sizeof(t->reason), "%s", reason);
        s->state = to;
}

static int ckpt_mismatch(struct glove_error *err, const char *what) {
        return glove_error_set(err, EBADMSG, "checkpoint.mismatch",
                               "the session journal %s; nothing was deleted: restore the journal and its checkpoint "
                               "from the same backup, or stop gloved and move the journal, its .seal and .ckpt away "
                               "to start empty (docs/recovery.md, \"Compaction\")",
                               what);
}

/* Decides how the journal whose header the scan saw follows the checkpoint
 * (see enum replay_mode). */
static int decide_mode(struct glove_store *st, struct glove_error *err) {
        if (st->mode != MODE_UNDECIDED)
                return 0;
        const uint8_t *param = st->scan_header + 32;
        bool continues = glove_get_be32(st->scan_header + 20) & GLOVE_STORE_JOURNAL_FLAG_CONTINUES;
        if (!st->have_ckpt) {
                if (continues)
                        return glove_error_set(err, ENOENT, "checkpoint.missing",
                                               "the session journal continues a checkpoint %s%s that is missing; "
                                               "nothing was deleted: restore the checkpoint from a backup, or stop "
                                               "gloved and move the journal and its .seal away to start empty "
                                               "(docs/recovery.md, \"Compaction\")",
                                               st->base_name, GLOVE_STORE_CHECKPOINT_SUFFIX);
                st->mode = MODE_PLAIN;
                st->base = 0;
        } else if (continues && memcmp(param, st->ckpt.covered_head, 32) == 0) {
                st->mode = MODE_TAIL;
                st->base = st->ckpt.covered_seq;
        } else if (memcmp(param, st->ckpt.prev_param, 32) == 0) {
                st->mode = MODE_COVERED;
                st->base = st->ckpt.old_end_seq - st->ckpt.old_records;
        } else {
                return ckpt_mismatch(err, "does not continue its checkpoint (another store's, or replaced)");
        }
        return 0;
}

static int replay_record(void *userdata, uint64_t seq, const void *payload, size_t len,
                         const uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)tag;
        struct glove_store *st = userdata;
        int r = decide_mode(st, err);
        if (r < 0)
                return r;
        if (st->mode == MODE_COVERED) {
                /* Already in the checkpoint: the chain is verified by the
                 * journal layer and the end is checked against the
                 * checkpoint after the scan. */
                if (seq > st->ckpt.old_records)
                        return ckpt_mismatch(err, "holds more records than the checkpoint replaced");
                return 0;
        }
        return store_replay_payload(st, st->base + seq, payload, len, err);
}

static int replay_entry(void *userdata, uint64_t index, const void *payload, size_t len, struct glove_error *err) {
        (void)index;
        return store_replay_payload(userdata, 0, payload, len, err);
}

static int store_new(struct glove_store **out, struct glove_error *err) {
        struct glove_store *st = calloc(1, sizeof(*st));
        *out = NULL;
        if (!st)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        st->fmt = glove_store_format;
        st->fmt.ctx = st;
        st->dirfd = -1;
        int r = glove_digest_sha256_init(&st->digest, err);
        if (r < 0) {
                free(st);
                return r;
        }
        *out = st;
        return 0;
}

/* The checkpoint's MAC: SHA-256 with its own domain, unkeyed like the
 * store's chain (the state directory's owner and mode protect the store). */
int store_ckpt_mac(void *ctx, const void *data, size_t len, uint8_t out[GLOVE_STORE_CHECKPOINT_MAC_LEN],
                   struct glove_error *err) {
        struct glove_store *st = ctx;
        int r = glove_digest_sha256_reset(st->digest, err);
        if (r == 0)
                r = glove_digest_sha256_update(st->digest, CHECKPOINT_DOMAIN, sizeof(CHECKPOINT_DOMAIN), err);
        if (r == 0)
                r = glove_digest_sha256_update(st->digest, data, len, err);
        if (r == 0)
                r = glove_digest_sha256_final(st->digest, out, err);
        return r;
}

static int split_path(struct glove_store *st, const char *path, char dir[4096], struct glove_error *err) {
        const char *slash = path ? strrchr(path, '/') : NULL;
        if (!path || path[0] != '/' || !slash || !slash[1] || (size_t)(slash - path) >= 4096 ||
            strlen(slash + 1) >= sizeof(st->base_name) - 16)
                return glove_error_set(err, EINVAL, "journal.parent_insecure", "%s: a journal path must be absolute",
                                       path ? path : "(null)");
        size_t dl = (size_t)(slash - path);
        memcpy(dir, path, dl ? dl : 1);
        dir[dl ? dl : 1] = '\0';
        snprintf(st->base_name, sizeof(st->base_name), "%s", slash + 1);
        return 0;
}

/* After the journal is open: the mode of an empty journal, the end of a
 * covered journal, and the roll-forward of a compaction that stopped after
 * installing its checkpoint. */
static int finish_open(struct glove_store *st, struct glove_error *err) {
        int r = decide_mode(st, err);
        if (r < 0)
                return r;
        r = glove_store_checkpoint_remove_leftover(st->dirfd, st->base_name, err);
        if (r < 0)
                return r;
        uint64_t n = glove_store_journal_records(st->journal);
        if (st->mode == MODE_COVERED) {
                uint8_t head[GLOVE_STORE_JOURNAL_TAG_LEN];
                glove_store_journal_head(st->journal, head);
                if (n != st->ckpt.old_records || memcmp(head, st->ckpt.old_end_head, sizeof(head)) != 0)
                        return ckpt_mismatch(err, "does not end where its checkpoint says the replaced journal ended");
                r = glove_store_journal_rewrite(st->journal, st->ckpt.covered_head, GLOVE_STORE_JOURNAL_FLAG_CONTINUES,
                                                  NULL, 0, NULL, NULL, err);
                if (r < 0)
                        return r;
                st->mode = MODE_TAIL;
                st->base = st->ckpt.covered_seq;
                st->records = st->base;
                st->last.rolled_forward = true;
                return 0;
        }
        st->records = st->base + n;
        return 0;
}

int glove_store_open_with(const struct glove_store_options *o, struct glove_store **out,
                                  struct glove_store_journal_report *report, struct glove_error *err) {
        struct glove_store *st;
        char dir[4096];
        *out = NULL;
        int r = store_new(&st, err);
        if (r < 0)
                return r;
        st->compact_records = o->compact_records ? o->compact_records : GLOVE_STORE_COMPACT_RECORDS;
        st->compact_bytes = o->compact_bytes ? o->compact_bytes : GLOVE_STORE_COMPACT_BYTES;
        st->hook = o->hook;
        st->hook_ctx = o->hook_ctx;
        r = split_path(st, o->path, dir, err);
        if (r == 0) {
                r = glove_store_dir_open_private(dir, o->owner, false, &st->dirfd, err);
                if (r < 0)
                        glove_error_prefix(err, "session or receipt journal parent");
        }
        if (r == 0)
                r = glove_store_checkpoint_read(st->dirfd, st->base_name, o->owner, glove_store_format.magic,
                                                  GLOVE_STORE_CHECKPOINT_MAX_BYTES,
                                                  GLOVE_STORE_MAX_PAYLOAD, store_ckpt_mac, st, replay_entry, st,
                                                  &st->ckpt, &st->have_ckpt, err);
        /* An incomplete last record past the seal was never answered (a
         * crash mid-append): it is kept in FILE.torn and cut, as for
         * receipts; one inside the sealed range refuses (journal.resized). */
        struct glove_store_journal_open_options jo = { .path = o->path, .owner = o->owner, .recover_torn_tail = true };
        if (r == 0)
                r = glove_store_journal_open(&st->fmt, &jo, replay_record, st, &st->journal, report, err);
        if (r == 0)
                r = finish_open(st, err);
        if (r < 0) {
                glove_error_prefix(err, "session store %s", o->path);
                glove_store_close(st);
                return r;
        }
        *out = st;
        return 0;
}

int glove_store_open(const char *path, uid_t owner, struct glove_store **out,
                             struct glove_store_journal_report *report, struct glove_error *err) {
        struct glove_store_options o = { .path = path, .owner = owner };
        return glove_store_open_with(&o, out, report, err);
}

int glove_store_replay_bytes(const void *data, size_t len, struct glove_store **out,
                                     struct glove_error *err) {
        struct glove_store *st;
        struct glove_store_journal_scan scan;
        *out = NULL;
        int r = store_new(&st, err);
        if (r < 0)
                return r;
        r = glove_store_journal_scan(&st->fmt, data, len, replay_record, st, &scan, err);
        if (r == 0)
                r = decide_mode(st, err);
        if (r == 0 && scan.torn_bytes)
                r = glove_error_set(err, EBADMSG, "journal.truncated", "the journal ends in an incomplete record");
        if (r < 0) {
                glove_store_close(st);
                return r;
        }
        *out = st;
        return 0;
}

/* ---- runtime ---- */

/* Appends record o. A record that replay would refuse is never written: one
 * the canonical encoder refuses (a plan or runtime identity nested as deep
 * as the bound, which the record around it exceeds; replay's decoder counts
 * the same nesting) is refused with refuse_code. */
static int append_json(struct glove_store *st, json_t *o, const char *refuse_code, struct glove_error *err) {
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        struct glove_error e = { 0 };
        if (!o)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        if (!st->journal)
                return glove_error_set(err, EROFS, "store.read_only", "this store was replayed from memory");
        if (st->broken)
                return glove_error_set(err, EIO, "journal.broken",
                                       "a compaction stopped after installing its checkpoint; restart gloved, "
                                       "which finishes it");
        int r = glove_json_encode_canonical(o, &bytes, &len, &e);
        if (r == -ENOMEM)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        if (r < 0)
                return glove_error_set(err, EINVAL, refuse_code, "the record would not replay: %s", e.message);
        r = glove_store_journal_append(st->journal, bytes, len, NULL, NULL, err);
        if (r == 0)
                st->records = st->base + glove_store_journal_records(st->journal);
        return r;
}

static bool same_content(const struct glove_store_session *s, const struct glove_store_create *q) {
        return strcmp(s->session_id, q->session_id) == 0 && strcmp(s->idempotency_key, q->idempotency_key) == 0 &&
               strcmp(s->controller_plan_digest, q->controller_plan_digest) == 0 && s->plan_len == q->plan_len &&
               memcmp(s->plan, q->plan, q->plan_len) == 0;
}

static int check_ids(const struct glove_store_create *q, struct glove_error *err) {
        if (!glove_store_id_valid(q->session_id))
                return glove_error_set(err, EINVAL, "store.invalid_id",
                                       "session_id must be 1..128 bytes of [A-Za-z0-9._:-] starting with a letter or digit");
        if (!glove_store_id_valid(q->idempotency_key))
                return glove_error_set(err, EINVAL, "store.invalid_id",
                                       "idempotency_key must be 1..128 bytes of [A-Za-z0-9._:-] starting with a letter or digit");
        if (!glove_store_hex64_valid(q->controller_plan_digest) || !glove_store_hex64_valid(q->plan_content_digest))
                return glove_error_set(err, EINVAL, "store.invalid_digest", "digests must be 64 lowercase hex characters");
        if (q->now_ms < 0)
                return glove_error_set(err, EINVAL, "store.invalid_id", "the creation time is before 1970");
        return 0;
}

static int check_plan(const struct glove_store_create *q, json_t **plan, struct glove_error *err) {
        char hex[65];
        if (q->plan_len > GLOVE_STORE_PLAN_MAX)
                return glove_error_set(err, EINVAL, "store.invalid_plan", "the plan is larger than %u bytes",
                                       GLOVE_STORE_PLAN_MAX);
        struct glove_error e = { 0 };
        if (glove_json_decode_canonical(q->plan, q->plan_len, GLOVE_STORE_PLAN_MAX, GLOVE_JSON_OBJECT_ONLY, plan,
                                        &e) < 0)
                return glove_error_set(err, EINVAL, "store.invalid_plan", "the plan is not a canonical JSON object: %s",
                                       e.message);
        int r = store_plan_digest(NULL, q->plan, q->plan_len, hex, err);
        if (r < 0)
                return r;
        if (strcmp(hex, q->plan_content_digest) != 0)
                return glove_error_set(err, EINVAL, "store.digest_mismatch",
                                       "plan_content_digest is not the SHA-256 of the plan");
        return 0;
}

int glove_store_create(struct glove_store *st, const struct glove_store_create *q,
                               const struct glove_store_session **out, bool *replayed, struct glove_error *err) {
        _cleanup_json_ json_t *plan = NULL;
        *replayed = false;
        store_maybe_compact(st);
        int r = check_ids(q, err);
        if (r < 0)
                return r;
        struct glove_store_session *by_key = store_lookup(st, &st->by_key, q->idempotency_key);
        if (by_key) {
                if (!same_content(by_key, q))
                        return glove_error_set(err, EEXIST, "session.conflict",
                                               "idempotency key %s was used for different content", q->idempotency_key);
                *out = by_key;
                *replayed = true;
                return 0;
        }
        if (store_lookup(st, &st->by_id, q->session_id))
                return glove_error_set(err, EEXIST, "session.conflict",
                                       "session %s already exists with another idempotency key", q->session_id);
        r = check_plan(q, &plan, err);
        if (r < 0)
                return r;
        uint64_t seq = st->records + 1;
        _cleanup_json_ json_t *o = json_pack("{s:s,s:I,s:s,s:s,s:O,s:s,s:I,s:s}", "controller_plan_digest",
                                             q->controller_plan_digest, "created_at_ms", (json_int_t)q->now_ms,
                                             "idempotency_key", q->idempotency_key, "kind", "create", "plan", plan,
                                             "plan_content_digest", q->plan_content_digest, "seq", (json_int_t)seq,
                                             "session_id", q->session_id);
        struct glove_store_session *s = calloc(1, sizeof(*s));
        if (!s || !(s->plan = malloc(q->plan_len + 1))) {
                store_session_free(s);
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        }
        r = append_json(st, o, "store.invalid_plan", err);
        if (r < 0) {
                store_session_free(s);
                return r;
        }
        memcpy(s->plan, q->plan, q->plan_len);
        s->plan[q->plan_len] = '\0';
        s->plan_len = q->plan_len;
        snprintf(s->session_id, sizeof(s->session_id), "%s", q->session_id);
        snprintf(s->idempotency_key, sizeof(s->idempotency_key), "%s", q->idempotency_key);
        memcpy(s->controller_plan_digest, q->controller_plan_digest, 65);
        memcpy(s->plan_content_digest, q->plan_content_digest, 65);
        s->created_at_ms = q->now_ms;
        s->created_seq = seq;
        s->state = GLOVE_STORE_SESSION_CREATED;
        r = store_add_session(st, s, err);
        if (r < 0) {
                store_session_free(s);
                return r;
        }
        *out = s;
        return 0;
}

/* The runtime identity of a transition: NULL, or one canonical object within
 * its bounds, only on a transition to running. *out holds it decoded. */
static int check_runtime(enum glove_store_session_state to, const char *runtime, size_t len, json_t **out,
                         struct glove_error *err) {
        struct glove_error e = { 0 };
        *out = NULL;
        if (!runtime)
                return 0;
        if (to != GLOVE_STORE_SESSION_RUNNING)
                return glove_error_set(err, EINVAL, "store.invalid_runtime",
                                       "a runtime identity is recorded only on the transition to running");
        if (len > GLOVE_STORE_RUNTIME_MAX)
                return glove_error_set(err, EINVAL, "store.invalid_runtime",
                                       "the runtime identity is %zu bytes; the bound is %u", len,
                                       GLOVE_STORE_RUNTIME_MAX);
        if (glove_json_decode_canonical(runtime, len, GLOVE_STORE_RUNTIME_MAX, GLOVE_JSON_OBJECT_ONLY, out,
                                        &e) < 0)
                return glove_error_set(err, EINVAL, "store.invalid_runtime",
                                       "the runtime identity is not a canonical JSON object: %s", e.message);
        return 0;
}

int glove_store_transition(struct glove_store *st, const char *session_id,
                                   enum glove_store_session_state to, const char *reason, int64_t now_ms,
                                   bool *appended, struct glove_error *err) {
        return glove_store_transition_runtime(st, session_id, to, reason, now_ms, NULL, 0, appended, err);
}

int glove_store_transition_runtime(struct glove_store *st, const char *session_id,
                                           enum glove_store_session_state to, const char *reason,
                                           int64_t now_ms, const char *runtime, size_t runtime_len,
                                           bool *appended, struct glove_error *err) {
        _cleanup_json_ json_t *identity = NULL;
        _cleanup_free_ char *copy = NULL;
        *appended = false;
        if (!glove_store_id_valid(session_id))
                return glove_error_set(err, EINVAL, "store.invalid_id", "malformed session id");
        if (!reason || !store_reason_valid(reason))
                return glove_error_set(err, EINVAL, "store.invalid_id",
                                       "a transition reason is 0..128 bytes of [a-z0-9._-]");
        if (now_ms < 0)
                return glove_error_set(err, EINVAL, "store.invalid_id", "the transition time is before 1970");
        int r = check_runtime(to, runtime, runtime_len, &identity, err);
        if (r < 0)
                return r;
        store_maybe_compact(st);
        struct glove_store_session *s = store_lookup(st, &st->by_id, session_id);
        if (!s)
                return glove_error_set(err, ENOENT, "session.not_found", "no session %s", session_id);
        r = glove_store_session_transition_check(s->state, to, err);
        if (r <= 0)
                return r;
        r = store_history_room(s, err); /* before the record is durable */
        if (r < 0)
                return r;
        if (runtime && !(copy = store_copy_bytes(runtime, runtime_len)))
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        uint64_t seq = st->records + 1;
        _cleanup_json_ json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:I,s:s,s:s}", "at_ms", (json_int_t)now_ms, "from",
                                             glove_store_session_state_name(s->state), "kind", "transition",
                                             "reason", reason, "seq", (json_int_t)seq, "session_id", session_id, "to",
                                             glove_store_session_state_name(to));
        if (o && identity && json_object_set(o, "runtime", identity) < 0)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        r = append_json(st, o, "store.invalid_runtime", err);
        if (r < 0)
                return r;
        if (copy) {
                free(s->runtime);
                s->runtime = TAKE_PTR(copy);
                s->runtime_len = runtime_len;
        }
        store_record_transition(s, to, reason, now_ms, seq);
        *appended = true;
        return 0;
}

int glove_store_cleanup(struct glove_store *st, const char *session_id, int64_t now_ms, bool *appended,
                                struct glove_error *err) {
        *appended = false;
        if (!glove_store_id_valid(session_id))
                return glove_error_set(err, EINVAL, "store.invalid_id", "malformed session id");
        if (now_ms < 0)
                return glove_error_set(err, EINVAL, "store.invalid_id", "the cleanup time is before 1970");
        store_maybe_compact(st);
        struct glove_store_session *s = store_lookup(st, &st->by_id, session_id);
        if (!s)
                return glove_error_set(err, ENOENT, "session.not_found", "no session %s", session_id);
        if (!glove_store_session_state_terminal(s->state))
                return glove_error_set(err, EBUSY, "session.not_terminal", "session %s is %s", session_id,
                                       glove_store_session_state_name(s->state));
        if (s->cleaned)
                return 0;
        uint64_t seq = st->records + 1;
        _cleanup_json_ json_t *o = json_pack("{s:I,s:s,s:I,s:s}", "at_ms", (json_int_t)now_ms, "kind", "cleanup", "seq",
                                             (json_int_t)seq, "session_id", session_id);
        int r = append_json(st, o, "store.invalid_id", err);
        if (r < 0)
                return r;
        s->cleaned = true;
        s->cleaned_at_ms = now_ms;
        s->cleaned_seq = seq;
        *appended = true;
        return 0;
}

const struct glove_store_session *glove_store_find(const struct glove_store *st,
                                                             const char *session_id) {
        return session_id ? store_lookup(st, &st->by_id, session_id) : NULL;
}

const struct glove_store_session *glove_store_find_key(const struct glove_store *st,
                                                                 const char *idempotency_key) {
        return idempotency_key ? store_lookup(st, &st->by_key, idempotency_key) : NULL;
}

const struct glove_store_session *glove_store_at(const struct glove_store *st, size_t i) {
        return i < st->n ? st->sessions[i] : NULL;
}

size_t glove_store_sessions(const struct glove_store *st) {
        return st->n;
}

uint64_t glove_store_records(const struct glove_store *st) {
        return st->records;
}

void glove_store_close(struct glove_store *st) {
        if (!st)
                return;
        for (size_t i = 0; i < st->n; i++)
                store_session_free(st->sessions[i]);
        free(st->sessions);
        glove_store_index_free(&st->by_id);
        glove_store_index_free(&st->by_key);
        glove_store_journal_close(st->journal);
        glove_digest_sha256_free(st->digest);
        if (st->dirfd >= 0)
                close(st->dirfd);
        free(st);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The durable session store: replay, create, transition (see store.h). */
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
#include "index.h"

#define RECORD_DOMAIN "glove.session-store.record.v1"
#define GENESIS_DOMAIN "glove.session-store.genesis.v1"
#define CHECKPOINT_DOMAIN "glove.session-store.checkpoint.v1"

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

static bool reason_valid(const char *s) {
        size_t n = 0;
        for (; s[n]; n++) {
                char c = s[n];
                if (n >= GLOVE_STORE_REASON_MAX ||
                    !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

static int plan_digest(struct glove_store *st, const void *plan, size_t len, char hex[65],
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

static int add_session(struct glove_store *st, struct glove_store_session *s, struct glove_error *err) {
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

static struct glove_store_session *lookup(const struct glove_store *st, const struct glove_store_index *ix,
                                            const char *key) {
        size_t i;
        return glove_store_index_get(ix, key, &i) == 0 ? st->sessions[i] : NULL;
}

static void session_free(struct glove_store_session *s) {
        if (s) {
                free(s->plan);
                free(s->runtime);
                free(s->history);
                free(s);
        }
}

/* ---- replay ---- */

/* Replay decodes every record with jansson, strictly and canonically
 * (glove_json_decode_canonical: decode, re-encode, compare), except the plan
 * of a create record, which is almost all of a store's bytes. A create
 * record's members are sorted:
 *
 *   {"controller_plan_digest":HEX,"created_at_ms":INT,"idempotency_key":ID,
 *    "kind":"create","plan":PLAN,"plan_content_digest":HEX,"seq":N,
 *    "session_id":ID}
 *
 * The members before the plan (a hex digest, an integer, an identifier,
 * "create") cannot hold the text ,"plan": and those after it (a hex digest,
 * an integer, an identifier) cannot hold ,"plan_content_digest":" so PLAN is
 * the bytes from just after the first ,"plan": to just before the last
 * ,"plan_content_digest":" (plan_span). The rest of the record, with PLAN
 * replaced by {} (the envelope), is decoded and checked as the whole record
 * would be; the plan bytes are checked by their bound, their first and last
 * byte, the absence of NUL, and their SHA-256 against plan_content_digest.
 * They are not decoded or re-encoded here: whoever uses the plan decodes it
 * strictly again (start_session revalidates it against the policy). */

static const char *const create_keys[] = { "controller_plan_digest", "created_at_ms", "idempotency_key", "kind",
                                           "plan", "plan_content_digest", "seq", "session_id", NULL };
static const char *const transition_keys[] = { "at_ms", "from", "kind", "reason", "runtime", "seq",
                                               "session_id", "to", NULL };

#define CREATE_PREFIX "{\"controller_plan_digest\":\""
#define PLAN_START ",\"plan\":"
#define PLAN_END ",\"plan_content_digest\":\""
#define ENVELOPE_MAX 1024 /* a create record without its plan: 8 keys, 2 digests, 2 ids, 2 integers */

static int bad(struct glove_error *err, uint64_t seq, const char *code, const char *what) {
        return glove_error_set(err, EBADMSG, code, "session store record %llu: %s", (unsigned long long)seq, what);
}

static char *copy_bytes(const char *p, size_t len) {
        char *c = malloc(len + 1);
        if (c) {
                memcpy(c, p, len);
                c[len] = '\0';
        }
        return c;
}

/* The span of PLAN in a record that begins as a create record does (see
 * above): true and *plan, *plan_len when both markers are found in order. */
static bool plan_span(const char *rec, size_t len, const char **plan, size_t *plan_len) {
        if (len < sizeof(CREATE_PREFIX) - 1 || memcmp(rec, CREATE_PREFIX, sizeof(CREATE_PREFIX) - 1) != 0)
                return false;
        const char *a = memmem(rec, len, PLAN_START, sizeof(PLAN_START) - 1);
        if (!a)
                return false;
        a += sizeof(PLAN_START) - 1;
        const char *b = NULL, *end = rec + len;
        for (const char *p = a; p < end && (p = memmem(p, (size_t)(end - p), PLAN_END, sizeof(PLAN_END) - 1)); p++)
                b = p;
        if (!b)
                return false;
        *plan = a;
        *plan_len = (size_t)(b - a);
        return true;
}

/* The fields of a create record matched by fast_create (below). */
struct fast_fields {
        char id[GLOVE_STORE_ID_MAX + 1], key[GLOVE_STORE_ID_MAX + 1], cd[65], pd[65];
        int64_t at;
        uint64_t seq;
};

/* A decoded record: o is the record, or its envelope when plan is set. */
struct record {
        json_t *o;
        const char *plan; /* the plan's bytes inside the payload, or NULL */
        size_t plan_len;
        uint64_t seq;
        bool in_checkpoint; /* an entry of the checkpoint (its MAC covers the bytes) */
        bool fast;          /* a create record matched exactly by fast_create: o is NULL */
        struct fast_fields f;
};

/* Decodes strictly; canonically for a journal record. A checkpoint entry
 * was encoded canonically by the store that wrote the checkpoint and its
 * MAC covers the bytes since: re-encoding it to compare would double
 * replay's cost and protect nothing the MAC does not (the MAC is unkeyed
 * like the chain: a writer that could change the bytes could as well
 * write any canonical record). */
static int decode(const struct record *rec, const char *p, size_t len, size_t max, json_t **o, struct glove_error *e) {
        return rec->in_checkpoint ? glove_json_decode_strict(p, len, max, GLOVE_JSON_OBJECT_ONLY, o, e)
                                  : glove_json_decode_canonical(p, len, max, GLOVE_JSON_OBJECT_ONLY, o, e);
}

/*
 * The fast path of a create record (most of a store's records): accepts
 * only the exact canonical bytes of a create envelope whose strings are
 * identifiers or lowercase hex digests (no escapes possible) and whose
 * integers are canonical, which is exactly what decoding, re-encoding and
 * comparing would accept for such a record with these values; anything
 * else (returns false) takes the jansson path, which gives the precise
 * refusal. env[0..len) is the record with its plan replaced by {}.
 */
static bool lit(const char **p, const char *end, const char *s, size_t n) {
        if ((size_t)(end - *p) < n || memcmp(*p, s, n) != 0)
                return false;
        *p += n;
        return true;
}
#define LIT(p, end, s) lit(p, end, s, sizeof(s) - 1)

static bool fast_hex(const char **p, const char *end, char out[65]) {
        if (end - *p < 64)
                return false;
        for (int i = 0; i < 64; i++) {
                char c = (*p)[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return false;
                out[i] = c;
        }
        out[64] = '\0';
        *p += 64;
        return true;
}

static bool fast_id(const char **p, const char *end, char out[GLOVE_STORE_ID_MAX + 1]) {
        size_t n = 0;
        while (*p + n < end && (*p)[n] != '"') {
                if (n >= GLOVE_STORE_ID_MAX)
                        return false;
                out[n] = (*p)[n];
                n++;
        }
        out[n] = '\0';
        if (*p + n >= end || !glove_store_id_valid(out))
                return false;
        *p += n;
        return true;
}

static bool fast_int(const char **p, const char *end, int64_t min, int64_t *out) {
        const char *q = *p;
        uint64_t v = 0;
        if (q >= end || *q < '0' || *q > '9' || (*q == '0' && q + 1 < end && q[1] >= '0' && q[1] <= '9'))
                return false;
        for (; q < end && *q >= '0' && *q <= '9'; q++) {
                if (v > (uint64_t)INT64_MAX / 10 || (v == (uint64_t)INT64_MAX / 10 && (uint64_t)(*q - '0') > (uint64_t)INT64_MAX % 10))
                        return false;
                v = v * 10 + (uint64_t)(*q - '0');
        }
        if ((int64_t)v < min)
                return false;
        *out = (int64_t)v;
        *p = q;
        return true;
}

static bool fast_create(const char *env, size_t len, struct fast_fields *f) {
        const char *p = env, *end = env + len;
        int64_t seq;
        return LIT(&p, end, "{\"controller_plan_digest\":\"") && fast_hex(&p, end, f->cd) &&
               LIT(&p, end, "\",\"created_at_ms\":") && fast_int(&p, end, 0, &f->at) &&
               LIT(&p, end, ",\"idempotency_key\":\"") && fast_id(&p, end, f->key) &&
               LIT(&p, end, "\",\"kind\":\"create\",\"plan\":{},\"plan_content_digest\":\"") &&
               fast_hex(&p, end, f->pd) && LIT(&p, end, "\",\"seq\":") && fast_int(&p, end, 1, &seq) &&
               LIT(&p, end, ",\"session_id\":\"") && fast_id(&p, end, f->id) && LIT(&p, end, "\"}") && p == end &&
               (f->seq = (uint64_t)seq, true);
}

/* Decodes payload into rec: the envelope and the plan span of a create
 * record, or the whole record. */
static int record_decode(const char *payload, size_t len, struct record *rec, struct glove_error *err) {
        struct glove_error e = { 0 };
        const char *plan;
        size_t plan_len;
        if (!plan_span(payload, len, &plan, &plan_len) || len - plan_len + 2 > ENVELOPE_MAX) {
                if (decode(rec, payload, len, GLOVE_STORE_MAX_PAYLOAD, &rec->o, &e) < 0)
                        return bad(err, rec->seq, "store.bad_record", e.message);
                return 0;
        }
        char env[ENVELOPE_MAX];
        size_t head = (size_t)(plan - payload), tail = len - head - plan_len;
        memcpy(env, payload, head);
        memcpy(env + head, "{}", 2);
        memcpy(env + head + 2, plan + plan_len, tail);
        rec->plan = plan;
        rec->plan_len = plan_len;
        if (fast_create(env, head + 2 + tail, &rec->f)) {
                rec->fast = true;
                return 0;
        }
        if (decode(rec, env, head + 2 + tail, ENVELOPE_MAX, &rec->o, &e) < 0)
                return bad(err, rec->seq, "store.bad_record", e.message);
        rec->plan = plan;
        rec->plan_len = plan_len;
        return 0;
}

static int create_apply(struct glove_store *st, const struct record *rec, const char *id, const char *key,
                        const char *cd, const char *pd, int64_t at, const char *pb, size_t pl, struct glove_error *err);

static int replay_create(struct glove_store *st, const struct record *rec, struct glove_error *err) {
        const char *id, *key, *cd, *pd;
        int64_t at;
        json_t *plan;
        uint64_t seq = rec->seq;
        struct glove_error e = { 0 };
        _cleanup_free_ char *encoded = NULL;
        if (glove_json_check_keys(rec->o, create_keys, NULL, &e) < 0 ||
            glove_json_get_string(rec->o, "session_id", NULL, GLOVE_STORE_ID_MAX, &id, &e) < 0 ||
            glove_json_get_string(rec->o, "idempotency_key", NULL, GLOVE_STORE_ID_MAX, &key, &e) < 0 ||
            glove_json_get_string(rec->o, "controller_plan_digest", NULL, 64, &cd, &e) < 0 ||
            glove_json_get_string(rec->o, "plan_content_digest", NULL, 64, &pd, &e) < 0 ||
            glove_json_get_int(rec->o, "created_at_ms", NULL, 0, INT64_MAX, &at, &e) < 0 ||
            glove_json_get_object(rec->o, "plan", NULL, &plan, &e) < 0)
                return bad(err, seq, "store.bad_record", e.message);
        if (!glove_store_id_valid(id) || !glove_store_id_valid(key) || !glove_store_hex64_valid(cd) ||
            !glove_store_hex64_valid(pd))
                return bad(err, seq, "store.bad_record", "an identifier or digest is malformed");
        const char *pb = rec->plan;
        size_t pl = rec->plan_len;
        if (!pb) {
                /* Decoded whole (plan_span found no plan): the plan is its
                 * canonical encoding, as a substring of canonical JSON is. */
                if (glove_json_encode_canonical(plan, &encoded, &pl, &e) < 0)
                        return bad(err, seq, "store.bad_record", e.message);
                pb = encoded;
        }
        return create_apply(st, rec, id, key, cd, pd, at, pb, pl, err);
}

/* Applies a create whose envelope was checked (by jansson, or exactly by
 * fast_create). */
static int create_apply(struct glove_store *st, const struct record *rec, const char *id, const char *key,
                        const char *cd, const char *pd, int64_t at, const char *pb, size_t pl, struct glove_error *err) {
        uint64_t seq = rec->seq;
        if (pl < 2 || pb[0] != '{' || pb[pl - 1] != '}')
                return bad(err, seq, "store.bad_record", "the plan is not an object");
        if (lookup(st, &st->by_id, id) || lookup(st, &st->by_key, key))
                return bad(err, seq, "store.duplicate_session", "the session id or idempotency key already exists");
        if (pl > GLOVE_STORE_PLAN_MAX)
                return bad(err, seq, "store.bad_record", "the plan is larger than its bound");
        if (memchr(pb, '\0', pl))
                return bad(err, seq, "store.bad_record", "the plan holds a NUL byte");
        char hex[65];
        int r = 0;
        /* A checkpoint entry's plan was checked against its digest when its
         * record was replayed or created, and the checkpoint's MAC covers
         * its bytes since: hashing it again would double replay's cost. */
        if (!rec->in_checkpoint && (r = plan_digest(st, pb, pl, hex, err)) < 0)
                return r;
        if (!rec->in_checkpoint && strcmp(hex, pd) != 0)
                return bad(err, seq, "store.digest_mismatch", "the plan does not hash to its plan_content_digest");
        struct glove_store_session *s = calloc(1, sizeof(*s));
        if (!s || !(s->plan = copy_bytes(pb, pl))) {
                session_free(s);
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        }
        s->plan_len = pl;
        snprintf(s->session_id, sizeof(s->session_id), "%s", id);
        snprintf(s->idempotency_key, sizeof(s->idempotency_key), "%s", key);
        memcpy(s->controller_plan_digest, cd, 65);
        memcpy(s->plan_content_digest, pd, 65);
        s->created_at_ms = at;
        s->created_seq = seq;
        s->state = GLOVE_STORE_SESSION_CREATED;
        r = add_session(st, s, err);
        if (r < 0)
                session_free(s);
        return r;
}

/* Room for s's history, allocated at its first transition. */
static int history_room(struct glove_store_session *s, struct glove_error *err) {
        if (!s->history && !(s->history = calloc(GLOVE_STORE_SESSION_HISTORY_MAX, sizeof(*s->history))))
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        return 0;
}

/* Appends to s's history (history_room succeeded) and moves it to to. */
static void record_transition(struct glove_store_session *s, enum glove_store_session_state to,
                              const char *reason, int64_t at, uint64_t seq) {
        struct glove_store_session_transition *t = &s->history[s->n_history++];
        t->from = s->state;
        t->to = to;
        t->at_ms = at;
        t->seq = seq;
        snprintf(t->reason, sizeof(t->reason), "%s", reason);
        s->state = to;
}

static int replay_transition(struct glove_store *st, const struct record *rec, struct glove_error *err) {
        const char *id, *from, *to, *reason;
        int64_t at;
        uint64_t seq = rec->seq;
        struct glove_error e = { 0 };
        enum glove_store_session_state f, t;
        _cleanup_free_ char *identity = NULL;
        size_t identity_len = 0;
        if (glove_json_check_keys(rec->o, transition_keys, NULL, &e) < 0 ||
            glove_json_get_string(rec->o, "session_id", NULL, GLOVE_STORE_ID_MAX, &id, &e) < 0 ||
            glove_json_get_string(rec->o, "from", NULL, 16, &from, &e) < 0 ||
            glove_json_get_string(rec->o, "to", NULL, 16, &to, &e) < 0 ||
            glove_json_get_string(rec->o, "reason", NULL, GLOVE_STORE_REASON_MAX, &reason, &e) < 0 ||
            glove_json_get_int(rec->o, "at_ms", NULL, 0, INT64_MAX, &at, &e) < 0 ||
            glove_store_session_state_parse(from, &f, &e) < 0 || glove_store_session_state_parse(to, &t, &e) < 0)
                return bad(err, seq, "store.bad_record", e.message);
        if (!reason_valid(reason))
                return bad(err, seq, "store.bad_record", "the reason is not a stable code");
        json_t *runtime = json_object_get(rec->o, "runtime");
        if (runtime && t != GLOVE_STORE_SESSION_RUNNING)
                return bad(err, seq, "store.bad_record", "a runtime identity on a transition to another state than running");
        if (runtime) {
                /* The record is canonical, so the member's canonical
                 * encoding is its bytes in the record. */
                if (!json_is_object(runtime) || glove_json_encode_canonical(runtime, &identity, &identity_len, &e) < 0 ||
                    identity_len > GLOVE_STORE_RUNTIME_MAX)
                        return bad(err, seq, "store.bad_record",
                                   "the runtime identity is not an object within its bound");
        }
        struct glove_store_session *s = lookup(st, &st->by_id, id);
        if (!s)
                return bad(err, seq, "store.unknown_session", "a transition of a session that was never created");
        if (s->state != f || glove_store_session_transition_check(f, t, &e) != 1)
                return bad(err, seq, "store.bad_transition", "a transition the lifecycle does not allow");
        int r = history_room(s, err);
        if (r < 0)
                return r;
        if (identity) {
                free(s->runtime);
                s->runtime = TAKE_PTR(identity);
                s->runtime_len = identity_len;
        }
        record_transition(s, t, reason, at, seq);
        return 0;
}

static const char *const cleanup_keys[] = { "at_ms", "kind", "seq", "session_id", NULL };

static int replay_cleanup(struct glove_store *st, const struct record *rec, struct glove_error *err) {
        const char *id;
        int64_t at;
        struct glove_error e = { 0 };
        if (glove_json_check_keys(rec->o, cleanup_keys, NULL, &e) < 0 ||
            glove_json_get_string(rec->o, "session_id", NULL, GLOVE_STORE_ID_MAX, &id, &e) < 0 ||
            glove_json_get_int(rec->o, "at_ms", NULL, 0, INT64_MAX, &at, &e) < 0)
                return bad(err, rec->seq, "store.bad_record", e.message);
        struct glove_store_session *s = lookup(st, &st->by_id, id);
        if (!s)
                return bad(err, rec->seq, "store.unknown_session", "a cleanup of a session that was never created");
        if (!glove_store_session_state_terminal(s->state) || s->cleaned)
                return bad(err, rec->seq, "store.bad_transition",
                           "a cleanup of a session that is not terminal or was already cleaned up");
        s->cleaned = true;
        s->cleaned_at_ms = at;
        s->cleaned_seq = rec->seq;
        return 0;
}

/* Replays one record. expect is its sequence (journal records), or 0 for a
 * checkpoint entry, whose sequence must be above the last one and at most
 * the checkpoint's covered sequence. */
static int replay_payload(struct glove_store *st, uint64_t expect, const void *payload, size_t len,
                          struct glove_error *err) {
        struct record rec = { .seq = expect ? expect : st->records + 1, .in_checkpoint = !expect };
        struct glove_error e = { 0 };
        const char *kind;
        int64_t n;
        int r = record_decode(payload, len, &rec, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_t *o = rec.o;
        if (rec.fast) {
                if (expect && rec.f.seq != expect)
                        return bad(err, expect, "store.sequence", "the record's seq is not its position in the journal");
                if (!expect && (rec.f.seq <= st->records || rec.f.seq > st->ckpt.covered_seq))
                        return bad(err, rec.f.seq, "store.sequence",
                                   "a checkpoint entry out of order or beyond the sequence the checkpoint covers");
                rec.seq = rec.f.seq;
                r = create_apply(st, &rec, rec.f.id, rec.f.key, rec.f.cd, rec.f.pd, rec.f.at, rec.plan, rec.plan_len,
                                 err);
                if (r == 0)
                        st->records = rec.seq;
                return r;
        }
        if (glove_json_get_string(o, "kind", NULL, 16, &kind, &e) < 0 ||
            glove_json_get_int(o, "seq", NULL, 1, INT64_MAX, &n, &e) < 0)
                return bad(err, rec.seq, "store.bad_record", e.message);
        if (expect && (uint64_t)n != expect)
                return bad(err, expect, "store.sequence", "the record's seq is not its position in the journal");
        if (!expect && ((uint64_t)n <= st->records || (uint64_t)n > st->ckpt.covered_seq))
                return bad(err, (uint64_t)n, "store.sequence",
                           "a checkpoint entry out of order or beyond the sequence the checkpoint covers");
        rec.seq = (uint64_t)n;
        if (strcmp(kind, "create") == 0)
                r = replay_create(st, &rec, err);
        else if (rec.plan)
                r = bad(err, rec.seq, "store.bad_record", "a plan on a record that is not a create");
        else if (strcmp(kind, "transition") == 0)
                r = replay_transition(st, &rec, err);
        else if (strcmp(kind, "cleanup") == 0)
                r = replay_cleanup(st, &rec, err);
        else
                r = bad(err, rec.seq, "store.bad_record", "unknown record kind");
        if (r == 0)
                st->records = rec.seq;
        return r;
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
        return replay_payload(st, st->base + seq, payload, len, err);
}

static int replay_entry(void *userdata, uint64_t index, const void *payload, size_t len, struct glove_error *err) {
        (void)index;
        return replay_payload(userdata, 0, payload, len, err);
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
static int store_ckpt_mac(void *ctx, const void *data, size_t len, uint8_t out[GLOVE_STORE_CHECKPOINT_MAC_LEN],
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

static void maybe_compact(struct glove_store *st);

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
        int r = plan_digest(NULL, q->plan, q->plan_len, hex, err);
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
        maybe_compact(st);
        int r = check_ids(q, err);
        if (r < 0)
                return r;
        struct glove_store_session *by_key = lookup(st, &st->by_key, q->idempotency_key);
        if (by_key) {
                if (!same_content(by_key, q))
                        return glove_error_set(err, EEXIST, "session.conflict",
                                               "idempotency key %s was used for different content", q->idempotency_key);
                *out = by_key;
                *replayed = true;
                return 0;
        }
        if (lookup(st, &st->by_id, q->session_id))
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
                session_free(s);
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        }
        r = append_json(st, o, "store.invalid_plan", err);
        if (r < 0) {
                session_free(s);
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
        r = add_session(st, s, err);
        if (r < 0) {
                session_free(s);
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
        if (!reason || !reason_valid(reason))
                return glove_error_set(err, EINVAL, "store.invalid_id",
                                       "a transition reason is 0..128 bytes of [a-z0-9._-]");
        if (now_ms < 0)
                return glove_error_set(err, EINVAL, "store.invalid_id", "the transition time is before 1970");
        int r = check_runtime(to, runtime, runtime_len, &identity, err);
        if (r < 0)
                return r;
        maybe_compact(st);
        struct glove_store_session *s = lookup(st, &st->by_id, session_id);
        if (!s)
                return glove_error_set(err, ENOENT, "session.not_found", "no session %s", session_id);
        r = glove_store_session_transition_check(s->state, to, err);
        if (r <= 0)
                return r;
        r = history_room(s, err); /* before the record is durable */
        if (r < 0)
                return r;
        if (runtime && !(copy = copy_bytes(runtime, runtime_len)))
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
        record_transition(s, to, reason, now_ms, seq);
        *appended = true;
        return 0;
}

/* ---- compaction ---- */

/* The canonical record bytes of a session's create (the envelope with its
 * plan bytes spliced in: the exact bytes create wrote). */
static int create_bytes(const struct glove_store_session *s, char **out, size_t *len, struct glove_error *err) {
        _cleanup_json_ json_t *o = json_pack("{s:s,s:I,s:s,s:s,s:{},s:s,s:I,s:s}", "controller_plan_digest",
                                             s->controller_plan_digest, "created_at_ms", (json_int_t)s->created_at_ms,
                                             "idempotency_key", s->idempotency_key, "kind", "create", "plan",
                                             "plan_content_digest", s->plan_content_digest, "seq",
                                             (json_int_t)s->created_seq, "session_id", s->session_id);
        _cleanup_free_ char *env = NULL;
        size_t n = 0;
        if (!o || glove_json_encode_canonical(o, &env, &n, err) < 0)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        const char *at = strstr(env, PLAN_START "{}");
        if (!at)
                return glove_error_set(err, EINVAL, "store.bad_record", "no plan member in a create envelope");
        size_t head = (size_t)(at - env) + sizeof(PLAN_START) - 1, tail = n - head - 2;
        char *b = malloc(head + s->plan_len + tail + 1);
        if (!b)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        memcpy(b, env, head);
        memcpy(b + head, s->plan, s->plan_len);
        memcpy(b + head + s->plan_len, env + head + 2, tail);
        b[head + s->plan_len + tail] = '\0';
        *out = b;
        *len = head + s->plan_len + tail;
        return 0;
}

static int add_json(struct glove_store_checkpoint_body *b, json_t *o, struct glove_error *err) {
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        if (!o || glove_json_encode_canonical(o, &bytes, &len, err) < 0)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory encoding a checkpoint entry");
        return glove_store_checkpoint_body_add(b, bytes, len, err);
}

/* Appends s's records (create, transitions, cleanup), as they were written. */
static int add_session_records(struct glove_store_checkpoint_body *b, const struct glove_store_session *s,
                               struct glove_error *err) {
        _cleanup_free_ char *create = NULL;
        size_t len = 0;
        int r = create_bytes(s, &create, &len, err);
        if (r == 0)
                r = glove_store_checkpoint_body_add(b, create, len, err);
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
                r = add_json(b, o, err);
        }
        if (r == 0 && s->cleaned) {
                _cleanup_json_ json_t *o = json_pack("{s:I,s:s,s:I,s:s}", "at_ms", (json_int_t)s->cleaned_at_ms,
                                                     "kind", "cleanup", "seq", (json_int_t)s->cleaned_seq,
                                                     "session_id", s->session_id);
                r = add_json(b, o, err);
        }
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
                        session_free(s);
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
        for (size_t i = 0; r == 0 && i < st->n; i++) {
                drop[i] = retired(st, st->sessions[i]);
                if (drop[i])
                        res.dropped++;
                else
                        r = add_session_records(&body, st->sessions[i], err);
        }
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

static void maybe_compact(struct glove_store *st) {
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

int glove_store_cleanup(struct glove_store *st, const char *session_id, int64_t now_ms, bool *appended,
                                struct glove_error *err) {
        *appended = false;
        if (!glove_store_id_valid(session_id))
                return glove_error_set(err, EINVAL, "store.invalid_id", "malformed session id");
        if (now_ms < 0)
                return glove_error_set(err, EINVAL, "store.invalid_id", "the cleanup time is before 1970");
        maybe_compact(st);
        struct glove_store_session *s = lookup(st, &st->by_id, session_id);
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
        return session_id ? lookup(st, &st->by_id, session_id) : NULL;
}

const struct glove_store_session *glove_store_find_key(const struct glove_store *st,
                                                                 const char *idempotency_key) {
        return idempotency_key ? lookup(st, &st->by_key, idempotency_key) : NULL;
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
                session_free(st->sessions[i]);
        free(st->sessions);
        glove_store_index_free(&st->by_id);
        glove_store_index_free(&st->by_key);
        glove_store_journal_close(st->journal);
        glove_digest_sha256_free(st->digest);
        if (st->dirfd >= 0)
                close(st->dirfd);
        free(st);
}

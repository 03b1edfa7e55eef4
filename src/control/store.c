/* SPDX-License-Identifier: Apache-2.0 */
/* The durable session store: replay, create, transition (see store.h). */
#include "glove/control/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "index.h"

#define RECORD_DOMAIN "glove.session-store.record.v1"
#define GENESIS_DOMAIN "glove.session-store.genesis.v1"

struct glove_control_store {
        struct glove_control_journal *journal; /* NULL for an in-memory replay */
        struct glove_control_session **sessions;
        size_t n, cap;
        struct glove_control_index by_id, by_key;
        uint64_t records;
};

static int store_chain(void *ctx, const uint8_t prev[GLOVE_CONTROL_JOURNAL_TAG_LEN], uint64_t seq,
                       const void *payload, size_t len, uint8_t out[GLOVE_CONTROL_JOURNAL_TAG_LEN],
                       struct glove_error *err) {
        (void)ctx;
        _cleanup_digest_sha256_ struct glove_digest_sha256 *d = NULL;
        uint8_t num[12];
        glove_control_put_be64(num, seq);
        glove_control_put_be32(num + 8, (uint32_t)len);
        int r = glove_digest_sha256_init(&d, err);
        if (r == 0)
                r = glove_digest_sha256_update(d, RECORD_DOMAIN, sizeof(RECORD_DOMAIN), err);
        if (r == 0)
                r = glove_digest_sha256_update(d, prev, GLOVE_CONTROL_JOURNAL_TAG_LEN, err);
        if (r == 0)
                r = glove_digest_sha256_update(d, num, sizeof(num), err);
        if (r == 0)
                r = glove_digest_sha256_update(d, payload, len, err);
        if (r == 0)
                r = glove_digest_sha256_final(d, out, err);
        return r;
}

static int store_genesis(void *ctx, const uint8_t header[GLOVE_CONTROL_JOURNAL_HEADER_LEN],
                         uint8_t out[GLOVE_CONTROL_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)ctx;
        uint8_t buf[sizeof(GENESIS_DOMAIN) + GLOVE_CONTROL_JOURNAL_HEADER_LEN];
        memcpy(buf, GENESIS_DOMAIN, sizeof(GENESIS_DOMAIN));
        memcpy(buf + sizeof(GENESIS_DOMAIN), header, GLOVE_CONTROL_JOURNAL_HEADER_LEN);
        return glove_digest_sha256(buf, sizeof(buf), out, err);
}

const struct glove_control_journal_format glove_control_store_format = {
        .magic = { 'G', 'L', 'V', 'S', 'E', 'S', 'S', '1' },
        .version = 1,
        .max_payload = GLOVE_CONTROL_STORE_MAX_PAYLOAD,
        .max_records = GLOVE_CONTROL_STORE_MAX_RECORDS,
        .max_bytes = GLOVE_CONTROL_STORE_MAX_BYTES,
        .chain = store_chain,
        .genesis = store_genesis,
};

bool glove_control_id_valid(const char *s) {
        size_t n = 0;
        if (!s)
                return false;
        for (; s[n]; n++) {
                char c = s[n];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                if (!alnum && (n == 0 || (c != '.' && c != '_' && c != ':' && c != '-')))
                        return false;
                if (n >= GLOVE_CONTROL_ID_MAX)
                        return false;
        }
        return n > 0;
}

bool glove_control_hex64_valid(const char *s) {
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
                if (n >= GLOVE_CONTROL_REASON_MAX ||
                    !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

static int plan_digest(const void *plan, size_t len, char hex[65], struct glove_error *err) {
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        int r = glove_digest_sha256(plan, len, d, err);
        if (r < 0)
                return r;
        return glove_digest_hex_encode(d, sizeof(d), hex, 65);
}

static int add_session(struct glove_control_store *st, struct glove_control_session *s, struct glove_error *err) {
        if (st->n == st->cap) {
                size_t cap = st->cap ? st->cap * 2 : 64;
                struct glove_control_session **v = realloc(st->sessions, cap * sizeof(*v));
                if (!v)
                        return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
                st->sessions = v;
                st->cap = cap;
        }
        if (glove_control_index_put(&st->by_id, s->session_id, st->n) < 0 ||
            glove_control_index_put(&st->by_key, s->idempotency_key, st->n) < 0)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        st->sessions[st->n++] = s;
        return 0;
}

static struct glove_control_session *lookup(const struct glove_control_store *st, const struct glove_control_index *ix,
                                            const char *key) {
        size_t i;
        return glove_control_index_get(ix, key, &i) == 0 ? st->sessions[i] : NULL;
}

static void session_free(struct glove_control_session *s) {
        if (s) {
                free(s->plan);
                free(s);
        }
}

/* ---- replay ---- */

static const char *const create_keys[] = { "controller_plan_digest", "created_at_ms", "idempotency_key", "kind",
                                           "plan", "plan_content_digest", "seq", "session_id", NULL };
static const char *const transition_keys[] = { "at_ms", "from", "kind", "reason", "seq", "session_id", "to", NULL };

static int bad(struct glove_error *err, uint64_t seq, const char *code, const char *what) {
        return glove_error_set(err, EBADMSG, code, "session store record %llu: %s", (unsigned long long)seq, what);
}

/* The plan's canonical bytes inside a canonical create record: the record's
 * members are sorted, so the plan follows "kind":"create" and is followed by
 * the last ,"plan_content_digest": (the members after it, seq and
 * session_id, cannot contain a quote). A substring of canonical JSON that
 * is a whole member value is that value's canonical encoding, so the plan is
 * neither re-encoded nor copied through jansson. */
static int plan_span(const char *rec, size_t len, const char **plan, size_t *plan_len) {
        static const char start[] = "\"kind\":\"create\",\"plan\":";
        static const char end[] = ",\"plan_content_digest\":\"";
        const char *a = memmem(rec, len, start, sizeof(start) - 1);
        if (!a)
                return -EINVAL;
        a += sizeof(start) - 1;
        const char *b = NULL;
        for (const char *p = a; (p = memmem(p, len - (size_t)(p - rec), end, sizeof(end) - 1)); p++)
                b = p;
        if (!b || b <= a)
                return -EINVAL;
        *plan = a;
        *plan_len = (size_t)(b - a);
        return 0;
}

static int replay_create(struct glove_control_store *st, const json_t *o, const char *rec, size_t len, uint64_t seq,
                         struct glove_error *err) {
        const char *id, *key, *cd, *pd;
        int64_t at;
        json_t *plan;
        struct glove_error e = { 0 };
        if (glove_json_check_keys(o, create_keys, NULL, &e) < 0 ||
            glove_json_get_string(o, "session_id", NULL, GLOVE_CONTROL_ID_MAX, &id, &e) < 0 ||
            glove_json_get_string(o, "idempotency_key", NULL, GLOVE_CONTROL_ID_MAX, &key, &e) < 0 ||
            glove_json_get_string(o, "controller_plan_digest", NULL, 64, &cd, &e) < 0 ||
            glove_json_get_string(o, "plan_content_digest", NULL, 64, &pd, &e) < 0 ||
            glove_json_get_int(o, "created_at_ms", NULL, 0, INT64_MAX, &at, &e) < 0 ||
            glove_json_get_object(o, "plan", NULL, &plan, &e) < 0)
                return bad(err, seq, "store.bad_record", e.message);
        if (!glove_control_id_valid(id) || !glove_control_id_valid(key) || !glove_control_hex64_valid(cd) ||
            !glove_control_hex64_valid(pd))
                return bad(err, seq, "store.bad_record", "an identifier or digest is malformed");
        if (lookup(st, &st->by_id, id) || lookup(st, &st->by_key, key))
                return bad(err, seq, "store.duplicate_session", "the session id or idempotency key already exists");
        struct glove_control_session *s = calloc(1, sizeof(*s));
        if (!s)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        char hex[65];
        const char *pb;
        size_t pl;
        int r = plan_span(rec, len, &pb, &pl);
        if (r == 0 && (pl > GLOVE_CONTROL_STORE_PLAN_MAX || pl < 2 || pb[0] != '{'))
                r = -EINVAL;
        if (r == 0 && !(s->plan = malloc(pl + 1)))
                r = -ENOMEM;
        if (r < 0) {
                session_free(s);
                return bad(err, seq, "store.bad_record", "the plan is not an object within its bound");
        }
        memcpy(s->plan, pb, pl);
        s->plan[pl] = '\0';
        s->plan_len = pl;
        (void)plan;
        r = plan_digest(s->plan, s->plan_len, hex, err);
        if (r == 0 && strcmp(hex, pd) != 0)
                r = bad(err, seq, "store.digest_mismatch", "the plan does not hash to its plan_content_digest");
        if (r < 0) {
                session_free(s);
                return r;
        }
        snprintf(s->session_id, sizeof(s->session_id), "%s", id);
        snprintf(s->idempotency_key, sizeof(s->idempotency_key), "%s", key);
        memcpy(s->controller_plan_digest, cd, 65);
        memcpy(s->plan_content_digest, pd, 65);
        s->created_at_ms = at;
        s->created_seq = seq;
        s->state = GLOVE_CONTROL_SESSION_CREATED;
        r = add_session(st, s, err);
        if (r < 0)
                session_free(s);
        return r;
}

static void record_transition(struct glove_control_session *s, enum glove_control_session_state to,
                              const char *reason, int64_t at, uint64_t seq) {
        struct glove_control_session_transition *t = &s->history[s->n_history++];
        t->from = s->state;
        t->to = to;
        t->at_ms = at;
        t->seq = seq;
        snprintf(t->reason, sizeof(t->reason), "%s", reason);
        s->state = to;
}

static int replay_transition(struct glove_control_store *st, const json_t *o, uint64_t seq, struct glove_error *err) {
        const char *id, *from, *to, *reason;
        int64_t at;
        struct glove_error e = { 0 };
        enum glove_control_session_state f, t;
        if (glove_json_check_keys(o, transition_keys, NULL, &e) < 0 ||
            glove_json_get_string(o, "session_id", NULL, GLOVE_CONTROL_ID_MAX, &id, &e) < 0 ||
            glove_json_get_string(o, "from", NULL, 16, &from, &e) < 0 ||
            glove_json_get_string(o, "to", NULL, 16, &to, &e) < 0 ||
            glove_json_get_string(o, "reason", NULL, GLOVE_CONTROL_REASON_MAX, &reason, &e) < 0 ||
            glove_json_get_int(o, "at_ms", NULL, 0, INT64_MAX, &at, &e) < 0 ||
            glove_control_session_state_parse(from, &f, &e) < 0 || glove_control_session_state_parse(to, &t, &e) < 0)
                return bad(err, seq, "store.bad_record", e.message);
        if (!reason_valid(reason))
                return bad(err, seq, "store.bad_record", "the reason is not a stable code");
        struct glove_control_session *s = lookup(st, &st->by_id, id);
        if (!s)
                return bad(err, seq, "store.unknown_session", "a transition of a session that was never created");
        if (s->state != f || glove_control_session_transition_check(f, t, &e) != 1)
                return bad(err, seq, "store.bad_transition", "a transition the lifecycle does not allow");
        record_transition(s, t, reason, at, seq);
        return 0;
}

static int replay_record(void *userdata, uint64_t seq, const void *payload, size_t len,
                         const uint8_t tag[GLOVE_CONTROL_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)tag;
        struct glove_control_store *st = userdata;
        _cleanup_json_ json_t *o = NULL;
        struct glove_error e = { 0 };
        const char *kind;
        int64_t n;
        if (glove_json_decode_canonical(payload, len, GLOVE_CONTROL_STORE_MAX_PAYLOAD, GLOVE_JSON_OBJECT_ONLY, &o, &e) <
                    0 ||
            glove_json_get_string(o, "kind", NULL, 16, &kind, &e) < 0 ||
            glove_json_get_int(o, "seq", NULL, 1, INT64_MAX, &n, &e) < 0)
                return bad(err, seq, "store.bad_record", e.message);
        if ((uint64_t)n != seq)
                return bad(err, seq, "store.sequence", "the record's seq is not its position in the journal");
        int r;
        if (strcmp(kind, "create") == 0)
                r = replay_create(st, o, payload, len, seq, err);
        else if (strcmp(kind, "transition") == 0)
                r = replay_transition(st, o, seq, err);
        else
                r = bad(err, seq, "store.bad_record", "unknown record kind");
        if (r == 0)
                st->records = seq;
        return r;
}

int glove_control_store_open(const char *path, uid_t owner, struct glove_control_store **out,
                             struct glove_control_journal_report *report, struct glove_error *err) {
        struct glove_control_store *st = calloc(1, sizeof(*st));
        *out = NULL;
        if (!st)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        /* An incomplete last record past the seal was never answered (a
         * crash mid-append): it is kept in FILE.torn and cut, as for
         * receipts; one inside the sealed range refuses (journal.resized). */
        struct glove_control_journal_open_options o = { .path = path, .owner = owner, .recover_torn_tail = true };
        int r = glove_control_journal_open(&glove_control_store_format, &o, replay_record, st, &st->journal, report,
                                           err);
        if (r < 0) {
                glove_error_prefix(err, "session store %s", path);
                glove_control_store_close(st);
                return r;
        }
        *out = st;
        return 0;
}

int glove_control_store_replay_bytes(const void *data, size_t len, struct glove_control_store **out,
                                     struct glove_error *err) {
        struct glove_control_store *st = calloc(1, sizeof(*st));
        struct glove_control_journal_scan scan;
        *out = NULL;
        if (!st)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        int r = glove_control_journal_scan(&glove_control_store_format, data, len, replay_record, st, &scan, err);
        if (r == 0 && scan.torn_bytes)
                r = glove_error_set(err, EBADMSG, "journal.truncated", "the journal ends in an incomplete record");
        if (r < 0) {
                glove_control_store_close(st);
                return r;
        }
        *out = st;
        return 0;
}

/* ---- runtime ---- */

static int append_json(struct glove_control_store *st, json_t *o, struct glove_error *err) {
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        if (!o)
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        if (!st->journal)
                return glove_error_set(err, EROFS, "store.read_only", "this store was replayed from memory");
        int r = glove_json_encode_canonical(o, &bytes, &len, err);
        if (r < 0)
                return r;
        r = glove_control_journal_append(st->journal, bytes, len, NULL, NULL, err);
        if (r == 0)
                st->records = glove_control_journal_records(st->journal);
        return r;
}

static bool same_content(const struct glove_control_session *s, const struct glove_control_store_create *q) {
        return strcmp(s->session_id, q->session_id) == 0 && strcmp(s->idempotency_key, q->idempotency_key) == 0 &&
               strcmp(s->controller_plan_digest, q->controller_plan_digest) == 0 && s->plan_len == q->plan_len &&
               memcmp(s->plan, q->plan, q->plan_len) == 0;
}

static int check_ids(const struct glove_control_store_create *q, struct glove_error *err) {
        if (!glove_control_id_valid(q->session_id))
                return glove_error_set(err, EINVAL, "store.invalid_id",
                                       "session_id must be 1..128 bytes of [A-Za-z0-9._:-] starting with a letter or digit");
        if (!glove_control_id_valid(q->idempotency_key))
                return glove_error_set(err, EINVAL, "store.invalid_id",
                                       "idempotency_key must be 1..128 bytes of [A-Za-z0-9._:-] starting with a letter or digit");
        if (!glove_control_hex64_valid(q->controller_plan_digest) || !glove_control_hex64_valid(q->plan_content_digest))
                return glove_error_set(err, EINVAL, "store.invalid_digest", "digests must be 64 lowercase hex characters");
        if (q->now_ms < 0)
                return glove_error_set(err, EINVAL, "store.invalid_id", "the creation time is before 1970");
        return 0;
}

static int check_plan(const struct glove_control_store_create *q, json_t **plan, struct glove_error *err) {
        char hex[65];
        if (q->plan_len > GLOVE_CONTROL_STORE_PLAN_MAX)
                return glove_error_set(err, EINVAL, "store.invalid_plan", "the plan is larger than %u bytes",
                                       GLOVE_CONTROL_STORE_PLAN_MAX);
        struct glove_error e = { 0 };
        if (glove_json_decode_canonical(q->plan, q->plan_len, GLOVE_CONTROL_STORE_PLAN_MAX, GLOVE_JSON_OBJECT_ONLY, plan,
                                        &e) < 0)
                return glove_error_set(err, EINVAL, "store.invalid_plan", "the plan is not a canonical JSON object: %s",
                                       e.message);
        int r = plan_digest(q->plan, q->plan_len, hex, err);
        if (r < 0)
                return r;
        if (strcmp(hex, q->plan_content_digest) != 0)
                return glove_error_set(err, EINVAL, "store.digest_mismatch",
                                       "plan_content_digest is not the SHA-256 of the plan");
        return 0;
}

int glove_control_store_create(struct glove_control_store *st, const struct glove_control_store_create *q,
                               const struct glove_control_session **out, bool *replayed, struct glove_error *err) {
        _cleanup_json_ json_t *plan = NULL;
        *replayed = false;
        int r = check_ids(q, err);
        if (r < 0)
                return r;
        struct glove_control_session *by_key = lookup(st, &st->by_key, q->idempotency_key);
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
        struct glove_control_session *s = calloc(1, sizeof(*s));
        if (!s || !(s->plan = malloc(q->plan_len + 1))) {
                session_free(s);
                return glove_error_set(err, ENOMEM, "store.no_memory", "out of memory");
        }
        r = append_json(st, o, err);
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
        s->state = GLOVE_CONTROL_SESSION_CREATED;
        r = add_session(st, s, err);
        if (r < 0) {
                session_free(s);
                return r;
        }
        *out = s;
        return 0;
}

int glove_control_store_transition(struct glove_control_store *st, const char *session_id,
                                   enum glove_control_session_state to, const char *reason, int64_t now_ms,
                                   bool *appended, struct glove_error *err) {
        *appended = false;
        if (!glove_control_id_valid(session_id))
                return glove_error_set(err, EINVAL, "store.invalid_id", "malformed session id");
        if (!reason || !reason_valid(reason))
                return glove_error_set(err, EINVAL, "store.invalid_id",
                                       "a transition reason is 0..128 bytes of [a-z0-9._-]");
        if (now_ms < 0)
                return glove_error_set(err, EINVAL, "store.invalid_id", "the transition time is before 1970");
        struct glove_control_session *s = lookup(st, &st->by_id, session_id);
        if (!s)
                return glove_error_set(err, ENOENT, "session.not_found", "no session %s", session_id);
        int r = glove_control_session_transition_check(s->state, to, err);
        if (r <= 0)
                return r;
        uint64_t seq = st->records + 1;
        _cleanup_json_ json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:I,s:s,s:s}", "at_ms", (json_int_t)now_ms, "from",
                                             glove_control_session_state_name(s->state), "kind", "transition",
                                             "reason", reason, "seq", (json_int_t)seq, "session_id", session_id, "to",
                                             glove_control_session_state_name(to));
        r = append_json(st, o, err);
        if (r < 0)
                return r;
        record_transition(s, to, reason, now_ms, seq);
        *appended = true;
        return 0;
}

const struct glove_control_session *glove_control_store_find(const struct glove_control_store *st,
                                                             const char *session_id) {
        return session_id ? lookup(st, &st->by_id, session_id) : NULL;
}

const struct glove_control_session *glove_control_store_find_key(const struct glove_control_store *st,
                                                                 const char *idempotency_key) {
        return idempotency_key ? lookup(st, &st->by_key, idempotency_key) : NULL;
}

const struct glove_control_session *glove_control_store_at(const struct glove_control_store *st, size_t i) {
        return i < st->n ? st->sessions[i] : NULL;
}

size_t glove_control_store_sessions(const struct glove_control_store *st) {
        return st->n;
}

uint64_t glove_control_store_records(const struct glove_control_store *st) {
        return st->records;
}

void glove_control_store_close(struct glove_control_store *st) {
        if (!st)
                return;
        for (size_t i = 0; i < st->n; i++)
                session_free(st->sessions[i]);
        free(st->sessions);
        glove_control_index_free(&st->by_id);
        glove_control_index_free(&st->by_key);
        glove_control_journal_close(st->journal);
        free(st);
}

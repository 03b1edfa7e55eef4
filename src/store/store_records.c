/* SPDX-License-Identifier: Apache-2.0 */
/* Session store records (see store.h): decoding each record strictly and
 * canonically (the fast matcher of a create record's exact bytes), replaying
 * create, transition and cleanup records into the store, and encoding a
 * session's create record for a checkpoint. */
#include "glove/store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "store_internal.h"

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
        if (store_lookup(st, &st->by_id, id) || store_lookup(st, &st->by_key, key))
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
        if (!rec->in_checkpoint && (r = store_plan_digest(st, pb, pl, hex, err)) < 0)
                return r;
        if (!rec->in_checkpoint && strcmp(hex, pd) != 0)
                return bad(err, seq, "store.digest_mismatch", "the plan does not hash to its plan_content_digest");
        struct glove_store_session *s = calloc(1, sizeof(*s));
        if (!s || !(s->plan = store_copy_bytes(pb, pl))) {
                store_session_free(s);
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
        r = store_add_session(st, s, err);
        if (r < 0)
                store_session_free(s);
        return r;
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
        if (!store_reason_valid(reason))
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
        struct glove_store_session *s = store_lookup(st, &st->by_id, id);
        if (!s)
                return bad(err, seq, "store.unknown_session", "a transition of a session that was never created");
        if (s->state != f || glove_store_session_transition_check(f, t, &e) != 1)
                return bad(err, seq, "store.bad_transition", "a transition the lifecycle does not allow");
        int r = store_history_room(s, err);
        if (r < 0)
                return r;
        if (identity) {
                free(s->runtime);
                s->runtime = TAKE_PTR(identity);
                s->runtime_len = identity_len;
        }
        store_record_transition(s, t, reason, at, seq);
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
        struct glove_store_session *s = store_lookup(st, &st->by_id, id);
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
int store_replay_payload(struct glove_store *st, uint64_t expect, const void *payload, size_t len,
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

/* The canonical record bytes of a session's create (the envelope with its
 * plan bytes spliced in: the exact bytes create wrote). */
int store_create_bytes(const struct glove_store_session *s, char **out, size_t *len, struct glove_error *err) {
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

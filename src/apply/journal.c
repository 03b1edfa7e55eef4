/* SPDX-License-Identifier: Apache-2.0 */
/* The apply reservation journal: its format on the generic journal layer,
 * the strict decoding of its records, the per-transaction order rules, and
 * the durable appends (see glove/apply/journal.h). */
#include "glove/apply/journal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/bytes.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/store/journal.h"

#define RECORD_DOMAIN "glove.apply.journal.v1"
#define GENESIS_DOMAIN "glove.apply.genesis.v1"
#define HEX_LEN 64

/* ---- the format ---- */

static int apply_chain(void *ctx, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], uint64_t seq, const void *payload,
                     size_t len, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_chain_sha256(RECORD_DOMAIN, prev, seq, payload, len, out, err);
}

static int apply_genesis(void *ctx, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                       uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_genesis_sha256(GENESIS_DOMAIN, header, out, err);
}

static const struct glove_store_journal_format apply_format = {
        .magic = { 'G', 'L', 'V', 'A', 'P', 'L', 'Y', '1' },
        .version = 1,
        .max_payload = GLOVE_APPLY_JOURNAL_RECORD_MAX,
        .max_records = GLOVE_APPLY_JOURNAL_MAX_RECORDS,
        .max_bytes = GLOVE_APPLY_JOURNAL_MAX_BYTES,
        .chain = apply_chain,
        .genesis = apply_genesis,
};

/* ---- the folded state ---- */

enum rec_type { REC_RESERVED, REC_PREPARED, REC_COMMITTED, REC_TERMINAL, REC_AMBIGUOUS, REC_CLEANED };

static const char *const type_names[] = { "reserved", "prepared", "committed", "terminal", "ambiguous", "cleaned" };

/* One transaction: the public view and the records it points into. */
struct tx {
        struct glove_apply_tx pub;
        json_t *rec[4]; /* reserved, prepared, committed, terminal (REC_* index) */
        json_t *ambiguous;
};

struct glove_apply_journal {
        struct glove_store_journal *journal;
        struct tx *txs;
        size_t n, cap;
        /* Indexes, key -> integer index into txs: single use and lookups
         * stay O(1) per record even at 100,000 records. */
        json_t *by_txid, *by_grant, *by_auth, *by_manifest;
        uint64_t owed; /* records the open transactions may still need */
        uint64_t torn_bytes;
};

/* A record checked against the folded state, not yet folded. */
struct pending {
        json_t *rec; /* owned */
        enum rec_type type;
        size_t tx;
        enum glove_apply_state state; /* the transaction's state after it */
        bool indexed;                 /* reserved: the index keys are in (undo on release) */
};

static const char *state_name(enum glove_apply_state s) {
        static const char *const names[] = { "reserved", "prepared", "committed", "applied", "failed", "ambiguous" };
        return names[s];
}

/* Records transaction state s (cleaned c) may still need (header, "Room"). */
static uint64_t owed_records(enum glove_apply_state s, bool c) {
        switch (s) {
        case GLOVE_APPLY_RESERVED:
                return 4;
        case GLOVE_APPLY_PREPARED:
                return 3;
        case GLOVE_APPLY_COMMITTED:
                return 2;
        case GLOVE_APPLY_APPLIED:
                return c ? 0 : 1;
        default:
                return 0;
        }
}

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory in the apply journal");
}

static int shape(struct glove_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int shape(struct glove_error *err, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = glove_error_setv(err, EINVAL, "apply.invalid_argument", fmt, ap);
        va_end(ap);
        return r;
}

static bool hex64(const char *s) {
        for (size_t i = 0; i < HEX_LEN; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s[HEX_LEN] == '\0';
}

static bool grant_id_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_APPLY_JOURNAL_GRANT_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '.' || s[i] == '_' || s[i] == '/' || s[i] == '-'))
                        return false;
        return true;
}

static bool code_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_APPLY_JOURNAL_CODE_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_'))
                        return false;
        return true;
}

static const char *const reserved_keys[] = {
        "at_ms", "authorization_digest", "baseline_manifest_digest", "bindings", "grant_id",
        "stage_manifest_digest", "txid", "type", NULL,
};
static const char *const prepared_keys[] = { "at_ms", "candidate", "txid", "type", NULL };
static const char *const committed_keys[] = { "at_ms", "exchange", "txid", "type", NULL };
static const char *const terminal_keys[] = { "at_ms", "code", "outcome", "receipt", "txid", "type", NULL };
static const char *const ambiguous_keys[] = { "at_ms", "code", "txid", "type", NULL };
static const char *const cleaned_keys[] = { "at_ms", "txid", "type", NULL };
static const char *const *const keys_of[] = { reserved_keys, prepared_keys, committed_keys,
                                              terminal_keys, ambiguous_keys, cleaned_keys };

static int index_of(const json_t *idx, const char *key, size_t *out) {
        const json_t *v = json_object_get(idx, key);
        if (!v)
                return -ENOENT;
        *out = (size_t)json_integer_value(v);
        return 0;
}

static int get_hex(const json_t *o, const char *key, const char **out, struct glove_error *err) {
        struct glove_error jerr = { 0 };
        if (glove_json_get_string(o, key, NULL, HEX_LEN, out, &jerr) < 0)
                return shape(err, "%s", jerr.message);
        if (!hex64(*out))
                return shape(err, "$.%s is not 64 lowercase hex digits", key);
        return 0;
}

static int get_code(const json_t *o, const char *key, const char **out, struct glove_error *err) {
        struct glove_error jerr = { 0 };
        if (glove_json_get_string(o, key, NULL, GLOVE_APPLY_JOURNAL_CODE_MAX, out, &jerr) < 0)
                return shape(err, "%s", jerr.message);
        if (!code_valid(*out))
                return shape(err, "$.%s is not a stable code (1..%d bytes of [a-z0-9_.])", key,
                             GLOVE_APPLY_JOURNAL_CODE_MAX);
        return 0;
}

static int get_obj(const json_t *o, const char *key, struct glove_error *err) {
        struct glove_error jerr = { 0 };
        json_t *v;
        if (glove_json_get_object(o, key, NULL, &v, &jerr) < 0)
                return shape(err, "%s", jerr.message);
        return 0;
}

static int order(struct glove_error *err, const char *what, const struct tx *t, const char *rule) {
        return glove_error_set(err, EINVAL, "apply.invalid_transition",
                               "a %s record for transaction %s, which is %s%s: %s", what, t->pub.txid,
                               state_name(t->pub.state), t->pub.cleaned ? " and cleaned" : "", rule);
}

/* Undoes what prepare did and frees the record. */
static void pending_release(struct glove_apply_journal *j, struct pending *p) {
        if (p->indexed) {
                const json_t *o = p->rec;
                json_object_del(j->by_txid, json_string_value(json_object_get(o, "txid")));
                json_object_del(j->by_grant, json_string_value(json_object_get(o, "grant_id")));
                json_object_del(j->by_auth, json_string_value(json_object_get(o, "authorization_digest")));
                json_object_del(j->by_manifest, json_string_value(json_object_get(o, "stage_manifest_digest")));
        }
        json_decref(p->rec);
        memset(p, 0, sizeof(*p));
}

/* Single use: the authorization digest, the grant id and the stage
 * manifest digest against every transaction ever reserved. */
static int check_unused(const struct glove_apply_journal *j, const char *grant, const char *auth, const char *stage,
                        struct glove_error *err) {
        size_t at;
        if (index_of(j->by_auth, auth, &at) == 0)
                return glove_error_set(err, EEXIST, "apply.replayed_authorization",
                                       "authorization %s was already used by transaction %s (%s): an authorization "
                                       "is single-use; sign a new one",
                                       auth, j->txs[at].pub.txid, state_name(j->txs[at].pub.state));
        if (index_of(j->by_grant, grant, &at) == 0)
                return glove_error_set(err, EEXIST, "apply.replayed_grant",
                                       "grant %s was already reserved by transaction %s (%s): a grant applies once",
                                       grant, j->txs[at].pub.txid, state_name(j->txs[at].pub.state));
        if (index_of(j->by_manifest, stage, &at) == 0)
                return glove_error_set(err, EEXIST, "apply.replayed_manifest",
                                       "stage manifest %s was already reserved by transaction %s (%s): a manifest "
                                       "applies once",
                                       stage, j->txs[at].pub.txid, state_name(j->txs[at].pub.state));
        return 0;
}

/* A reserved record: shape, single use, and room in txs and the indexes. */
static int prepare_reserved(struct glove_apply_journal *j, const char *txid, struct pending *p,
                            struct glove_error *err) {
        const json_t *o = p->rec;
        const char *grant, *auth, *base, *stage;
        struct glove_error jerr = { 0 };
        int r = glove_json_get_string(o, "grant_id", NULL, GLOVE_APPLY_JOURNAL_GRANT_ID_MAX, &grant, &jerr);
        if (r < 0)
                return shape(err, "%s", jerr.message);
        if (!grant_id_valid(grant))
                return shape(err, "$.grant_id is not 1..%d bytes of [A-Za-z0-9._/-]", GLOVE_APPLY_JOURNAL_GRANT_ID_MAX);
        if ((r = get_hex(o, "authorization_digest", &auth, err)) < 0 ||
            (r = get_hex(o, "baseline_manifest_digest", &base, err)) < 0 ||
            (r = get_hex(o, "stage_manifest_digest", &stage, err)) < 0 || (r = get_obj(o, "bindings", err)) < 0)
                return r;
        size_t at;
        if (index_of(j->by_txid, txid, &at) == 0)
                return glove_error_set(err, EEXIST, "apply.invalid_transition",
                                       "transaction %s is reserved a second time", txid);
        if ((r = check_unused(j, grant, auth, stage, err)) < 0)
                return r;
        if (j->n == j->cap) {
                size_t cap = j->cap ? j->cap * 2 : 16;
                struct tx *v = realloc(j->txs, cap * sizeof(*v));
                if (!v)
                        return no_memory(err);
                j->txs = v;
                j->cap = cap;
        }
        p->tx = j->n;
        p->state = GLOVE_APPLY_RESERVED;
        /* The index keys go in now, so that folding the record after it is
         * durable cannot fail; pending_release takes them out again. */
        p->indexed = true;
        json_int_t n = (json_int_t)j->n;
        if (json_object_set_new(j->by_txid, txid, json_integer(n)) < 0 ||
            json_object_set_new(j->by_grant, grant, json_integer(n)) < 0 ||
            json_object_set_new(j->by_auth, auth, json_integer(n)) < 0 ||
            json_object_set_new(j->by_manifest, stage, json_integer(n)) < 0)
                return no_memory(err);
        return 0;
}

/* A later record of transaction t: its members and the order rules. */
static int prepare_step(struct tx *t, struct pending *p, struct glove_error *err) {
        const json_t *o = p->rec;
        enum glove_apply_state s = t->pub.state;
        bool open = !t->pub.cleaned;
        const char *c;
        int r = 0;
        switch (p->type) {
        case REC_PREPARED:
                if ((r = get_obj(o, "candidate", err)) < 0)
                        return r;
                if (s != GLOVE_APPLY_RESERVED)
                        return order(err, "prepared", t, "prepared follows only reserved");
                p->state = GLOVE_APPLY_PREPARED;
                return 0;
        case REC_COMMITTED:
                if ((r = get_obj(o, "exchange", err)) < 0)
                        return r;
                if (s != GLOVE_APPLY_PREPARED)
                        return order(err, "committed", t, "committed follows only prepared");
                p->state = GLOVE_APPLY_COMMITTED;
                return 0;
        case REC_TERMINAL: {
                const char *outcome;
                struct glove_error jerr = { 0 };
                if (glove_json_get_string(o, "outcome", NULL, 16, &outcome, &jerr) < 0)
                        return shape(err, "%s", jerr.message);
                bool applied = strcmp(outcome, "applied") == 0;
                if (!applied && strcmp(outcome, "failed") != 0)
                        return shape(err, "$.outcome is \"%s\", not \"applied\" or \"failed\"", outcome);
                const json_t *code = json_object_get(o, "code");
                if (!code)
                        return shape(err, "$.code is missing");
                if (applied && !json_is_null(code))
                        return shape(err, "$.code of an applied terminal is not null");
                if (!applied && (r = get_code(o, "code", &c, err)) < 0)
                        return r;
                if ((r = get_obj(o, "receipt", err)) < 0)
                        return r;
                if (applied && s != GLOVE_APPLY_COMMITTED)
                        return order(err, "terminal applied", t, "an applied terminal follows only committed");
                if (!applied && s != GLOVE_APPLY_RESERVED && s != GLOVE_APPLY_PREPARED)
                        return order(err, "terminal failed", t,
                                     "a failed terminal follows only reserved or prepared (a committed exchange "
                                     "ends applied or ambiguous)");
                p->state = applied ? GLOVE_APPLY_APPLIED : GLOVE_APPLY_FAILED;
                return 0;
        }
        case REC_AMBIGUOUS:
                if ((r = get_code(o, "code", &c, err)) < 0)
                        return r;
                if (s == GLOVE_APPLY_APPLIED || s == GLOVE_APPLY_FAILED)
                        return order(err, "ambiguous", t, "ambiguous comes only before a terminal");
                p->state = GLOVE_APPLY_AMBIGUOUS;
                return 0;
        case REC_CLEANED:
                if (s != GLOVE_APPLY_APPLIED || !open)
                        return order(err, "cleaned", t, "cleaned follows only an applied terminal, once");
                p->state = s;
                return 0;
        default:
                return shape(err, "unknown record type");
        }
}

/*
 * Decodes payload strictly and checks it against the folded state, filling
 * p (nothing folded yet). Codes: apply.invalid_argument (the record does
 * not decode as the header says), apply.invalid_transition,
 * apply.unknown_transaction, apply.replayed_*, apply.no_memory.
 */
static int prepare(struct glove_apply_journal *j, const void *payload, size_t len, struct pending *p,
                   struct glove_error *err) {
        memset(p, 0, sizeof(*p));
        struct glove_error jerr = { 0 };
        int r = glove_json_decode_canonical(payload, len, GLOVE_APPLY_JOURNAL_RECORD_MAX, GLOVE_JSON_OBJECT_ONLY,
                                            &p->rec, &jerr);
        if (r == -ENOMEM)
                return no_memory(err);
        if (r < 0)
                return shape(err, "%s", jerr.message);
        const json_t *o = p->rec;
        const char *type, *txid;
        int64_t at;
        if (glove_json_get_string(o, "type", NULL, 16, &type, &jerr) < 0)
                return shape(err, "%s", jerr.message);
        size_t t = 0;
        while (t < sizeof(type_names) / sizeof(type_names[0]) && strcmp(type, type_names[t]) != 0)
                t++;
        if (t == sizeof(type_names) / sizeof(type_names[0]))
                return shape(err, "unknown record type \"%s\"", type);
        p->type = (enum rec_type)t;
        if (glove_json_check_keys(o, keys_of[t], NULL, &jerr) < 0 ||
            glove_json_get_int(o, "at_ms", NULL, 0, INT64_MAX, &at, &jerr) < 0)
                return shape(err, "%s record: %s", type, jerr.message);
        if ((r = get_hex(o, "txid", &txid, err)) < 0)
                return r;
        if (p->type == REC_RESERVED)
                return prepare_reserved(j, txid, p, err);
        if (index_of(j->by_txid, txid, &p->tx) < 0)
                return glove_error_set(err, ENOENT, "apply.unknown_transaction",
                                       "a %s record for transaction %s, which was never reserved", type, txid);
        return prepare_step(&j->txs[p->tx], p, err);
}

/* Folds a prepared record (cannot fail). */
static void commit(struct glove_apply_journal *j, struct pending *p) {
        json_t *o = p->rec;
        struct tx *t;
        if (p->type == REC_RESERVED) {
                t = &j->txs[j->n++];
                memset(t, 0, sizeof(*t));
                snprintf(t->pub.txid, sizeof(t->pub.txid), "%s", json_string_value(json_object_get(o, "txid")));
                t->pub.grant_id = json_string_value(json_object_get(o, "grant_id"));
                t->pub.authorization_digest = json_string_value(json_object_get(o, "authorization_digest"));
                t->pub.baseline_manifest_digest = json_string_value(json_object_get(o, "baseline_manifest_digest"));
                t->pub.stage_manifest_digest = json_string_value(json_object_get(o, "stage_manifest_digest"));
                t->pub.state = GLOVE_APPLY_RESERVED;
        } else {
                t = &j->txs[p->tx];
        }
        if (p->type != REC_RESERVED)
                j->owed -= owed_records(t->pub.state, t->pub.cleaned);
        switch (p->type) {
        case REC_RESERVED:
        case REC_PREPARED:
        case REC_COMMITTED:
        case REC_TERMINAL:
                t->rec[p->type] = TAKE_PTR(p->rec);
                break;
        case REC_AMBIGUOUS:
                json_decref(t->ambiguous);
                t->ambiguous = TAKE_PTR(p->rec);
                t->pub.ambiguous_code = json_string_value(json_object_get(t->ambiguous, "code"));
                break;
        case REC_CLEANED:
                t->pub.cleaned = true;
                break;
        }
        t->pub.state = p->state;
        t->pub.reserved = t->rec[REC_RESERVED];
        t->pub.prepared = t->rec[REC_PREPARED];
        t->pub.committed = t->rec[REC_COMMITTED];
        t->pub.terminal = t->rec[REC_TERMINAL];
        j->owed += owed_records(t->pub.state, t->pub.cleaned);
        p->indexed = false;
        json_decref(p->rec);
        memset(p, 0, sizeof(*p));
}

/* ---- open and close ---- */

static int replay_record(void *userdata, uint64_t seq, const void *payload, size_t len,
                         const uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)tag;
        struct glove_apply_journal *j = userdata;
        struct pending p;
        struct glove_error perr = { 0 };
        int r = prepare(j, payload, len, &p, &perr);
        if (r < 0) {
                pending_release(j, &p);
                if (r == -ENOMEM)
                        return no_memory(err);
                return glove_error_set(err, EBADMSG, "apply.journal_invalid",
                                       "apply journal record %llu: %s (%s); this code never writes such a record: "
                                       "restore the journal from a backup (moving it aside forgets which grants, "
                                       "authorizations and manifests were used)",
                                       (unsigned long long)seq, perr.message, perr.code);
        }
        commit(j, &p);
        return 0;
}

void glove_apply_journal_close(struct glove_apply_journal *j) {
        if (!j)
                return;
        glove_store_journal_close(j->journal);
        for (size_t i = 0; i < j->n; i++) {
                for (size_t k = 0; k < 4; k++)
                        json_decref(j->txs[i].rec[k]);
                json_decref(j->txs[i].ambiguous);
        }
        free(j->txs);
        json_decref(j->by_txid);
        json_decref(j->by_grant);
        json_decref(j->by_auth);
        json_decref(j->by_manifest);
        free(j);
}

int glove_apply_journal_open(const char *path, struct glove_apply_journal **out, struct glove_error *err) {
        if (!out)
                return shape(err, "no place for the opened apply journal");
        *out = NULL;
        if (!path || path[0] != '/')
                return glove_error_set(err, EINVAL, "journal.parent_insecure",
                                       "the apply journal path %s is not absolute", path ? path : "(none)");
        struct glove_apply_journal *j = calloc(1, sizeof(*j));
        if (!j)
                return no_memory(err);
        j->by_txid = json_object();
        j->by_grant = json_object();
        j->by_auth = json_object();
        j->by_manifest = json_object();
        if (!j->by_txid || !j->by_grant || !j->by_auth || !j->by_manifest) {
                glove_apply_journal_close(j);
                return no_memory(err);
        }
        struct glove_store_journal_open_options jo = {
                .path = path,
                .owner = geteuid(),
                .recover_torn_tail = true,
        };
        struct glove_store_journal_report rep;
        int r = glove_store_journal_open(&apply_format, &jo, replay_record, j, &j->journal, &rep, err);
        if (r < 0) {
                glove_apply_journal_close(j);
                return r;
        }
        j->torn_bytes = rep.torn_bytes;
        *out = j;
        return 0;
}

uint64_t glove_apply_journal_torn_bytes(const struct glove_apply_journal *j) {
        return j ? j->torn_bytes : 0;
}

/* ---- lookups ---- */

size_t glove_apply_journal_count(const struct glove_apply_journal *j) {
        return j ? j->n : 0;
}

const struct glove_apply_tx *glove_apply_journal_tx(const struct glove_apply_journal *j, size_t i) {
        return j && i < j->n ? &j->txs[i].pub : NULL;
}

static const struct glove_apply_tx *lookup(const struct glove_apply_journal *j, const json_t *idx, const char *key) {
        size_t i;
        if (!j || !key || index_of(idx, key, &i) < 0)
                return NULL;
        return &j->txs[i].pub;
}

const struct glove_apply_tx *glove_apply_journal_find(const struct glove_apply_journal *j, const char *txid) {
        return lookup(j, j ? j->by_txid : NULL, txid);
}

const struct glove_apply_tx *glove_apply_journal_find_grant(const struct glove_apply_journal *j,
                                                            const char *grant_id) {
        return lookup(j, j ? j->by_grant : NULL, grant_id);
}

/* ---- appends ---- */

/* journal.full unless a record of len bytes taking the transaction of p
 * to its new state leaves room for every open transaction's rest. */
static int check_room(const struct glove_apply_journal *j, const struct pending *p, size_t len,
                      struct glove_error *err) {
        uint64_t owed = j->owed;
        if (p->type == REC_RESERVED) {
                owed += owed_records(GLOVE_APPLY_RESERVED, false);
        } else {
                const struct tx *t = &j->txs[p->tx];
                owed -= owed_records(t->pub.state, t->pub.cleaned);
                owed += owed_records(p->state, t->pub.cleaned || p->type == REC_CLEANED);
        }
        uint64_t records = glove_store_journal_records(j->journal), size = glove_store_journal_size(j->journal);
        uint64_t need_bytes = len + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD +
                              owed * (GLOVE_APPLY_JOURNAL_RECORD_MAX + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD);
        if (records + 1 + owed <= GLOVE_APPLY_JOURNAL_MAX_RECORDS && size + need_bytes <= GLOVE_APPLY_JOURNAL_MAX_BYTES)
                return 0;
        return glove_error_set(err, ENOSPC, "journal.full",
                               "the apply journal holds %llu of %d records and %llu of %llu bytes and keeps room for "
                               "%llu more records of the open transactions, so this %s record does not fit; no "
                               "apply can be reserved until the journal is archived (moving it aside forgets which "
                               "grants, authorizations and manifests were used)",
                               (unsigned long long)records, GLOVE_APPLY_JOURNAL_MAX_RECORDS, (unsigned long long)size,
                               (unsigned long long)GLOVE_APPLY_JOURNAL_MAX_BYTES, (unsigned long long)owed,
                               type_names[p->type]);
}

/* Encodes rec, checks it as replay will, and appends it durably; the folded
 * state follows the file (also when the append failed after the record
 * reached it). */
static int append_record(struct glove_apply_journal *j, const json_t *rec, struct glove_error *err) {
        if (!rec)
                return no_memory(err);
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        struct glove_error jerr = { 0 };
        int r = glove_json_encode_canonical(rec, &bytes, &len, &jerr);
        if (r == -ENOMEM)
                return no_memory(err);
        if (r < 0)
                return shape(err, "the record cannot be encoded as canonical JSON: %s", jerr.message);
        if (len > GLOVE_APPLY_JOURNAL_RECORD_MAX)
                return glove_error_set(err, EMSGSIZE, "journal.bad_length",
                                       "the apply journal record is %zu bytes, more than the %d a record may hold: "
                                       "its objects are too large",
                                       len, GLOVE_APPLY_JOURNAL_RECORD_MAX);
        struct pending p;
        r = prepare(j, bytes, len, &p, err);
        if (r == 0)
                r = check_room(j, &p, len, err);
        if (r < 0) {
                pending_release(j, &p);
                return r;
        }
        uint64_t before = glove_store_journal_records(j->journal);
        r = glove_store_journal_append(j->journal, bytes, len, NULL, NULL, err);
        if (r < 0 && glove_store_journal_records(j->journal) == before) {
                pending_release(j, &p);
                return r;
        }
        commit(j, &p);
        return r;
}

int glove_apply_journal_reserve(struct glove_apply_journal *j, const char *grant_id, const char *authorization_digest,
                                const char *baseline_manifest_digest, const char *stage_manifest_digest,
                                const json_t *bindings, int64_t at_ms, char txid_out[65], struct glove_error *err) {
        if (!j || !txid_out)
                return shape(err, "no journal or no place for the transaction id");
        if (!grant_id || !grant_id_valid(grant_id))
                return shape(err, "the grant id is not 1..%d bytes of [A-Za-z0-9._/-]",
                             GLOVE_APPLY_JOURNAL_GRANT_ID_MAX);
        const char *const digests[] = { authorization_digest, baseline_manifest_digest, stage_manifest_digest };
        static const char *const names[] = { "authorization", "baseline manifest", "stage manifest" };
        for (size_t i = 0; i < 3; i++)
                if (!digests[i] || strnlen(digests[i], HEX_LEN + 1) != HEX_LEN || !hex64(digests[i]))
                        return shape(err, "the %s digest is not 64 lowercase hex digits", names[i]);
        if (!json_is_object(bindings))
                return shape(err, "the bindings are not a JSON object");
        if (at_ms < 0)
                return shape(err, "at_ms %lld is negative", (long long)at_ms);
        uint8_t raw[32];
        char txid[HEX_LEN + 1];
        int r = glove_digest_random(raw, sizeof(raw), err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(raw, sizeof(raw), txid, sizeof(txid));
        _cleanup_json_ json_t *rec = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:O}", "type", "reserved", "txid", txid,
                                               "at_ms", (json_int_t)at_ms, "grant_id", grant_id,
                                               "authorization_digest", authorization_digest,
                                               "baseline_manifest_digest", baseline_manifest_digest,
                                               "stage_manifest_digest", stage_manifest_digest, "bindings",
                                               (json_t *)bindings);
        r = append_record(j, rec, err);
        if (r < 0 && !glove_apply_journal_find(j, txid))
                return r;
        memcpy(txid_out, txid, sizeof(txid));
        return r;
}

int glove_apply_journal_append(struct glove_apply_journal *j, const char *txid, const char *type, const json_t *fields,
                               int64_t at_ms, struct glove_error *err) {
        if (!j || !txid || !type)
                return shape(err, "no journal, transaction id or record type");
        if (fields && !json_is_object(fields))
                return shape(err, "the fields of a %s record are not a JSON object", type);
        if (strcmp(type, "reserved") == 0)
                return shape(err, "a reserved record is written only by a reservation");
        size_t t = 0;
        while (t < sizeof(type_names) / sizeof(type_names[0]) && strcmp(type, type_names[t]) != 0)
                t++;
        if (t == sizeof(type_names) / sizeof(type_names[0]))
                return shape(err, "unknown record type \"%.32s\"", type);
        static const char *const added[] = { "type", "txid", "at_ms" };
        for (size_t i = 0; i < 3; i++)
                if (json_object_get(fields, added[i]))
                        return shape(err, "the fields of a %s record hold \"%s\", which the journal adds", type,
                                     added[i]);
        if (at_ms < 0)
                return shape(err, "at_ms %lld is negative", (long long)at_ms);
        if (!glove_apply_journal_find(j, txid))
                return glove_error_set(err, ENOENT, "apply.unknown_transaction",
                                       "no transaction %.64s was reserved in the apply journal", txid);
        _cleanup_json_ json_t *rec = fields ? json_copy((json_t *)fields) : json_object();
        if (!rec || json_object_set_new(rec, "type", json_string(type)) < 0 ||
            json_object_set_new(rec, "txid", json_string(txid)) < 0 ||
            json_object_set_new(rec, "at_ms", json_integer((json_int_t)at_ms)) < 0)
                return no_memory(err);
        return append_record(j, rec, err);
}

int glove_apply_journal_check_unused(const struct glove_apply_journal *j, const char *grant_id,
                                     const char *authorization_digest, const char *stage_manifest_digest,
                                     struct glove_error *err) {
        if (!j || !grant_id || !authorization_digest || !stage_manifest_digest)
                return glove_error_set(err, EINVAL, "apply.invalid_argument", "a journal and three names are required");
        return check_unused(j, grant_id, authorization_digest, stage_manifest_digest, err);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The durable admission registry: its journal format, the replay at open,
 * enqueue and paging (see glove/channel/registry.h). */
#include "glove/channel/registry.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "channel_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/store/dirs.h"
#include "glove/store/journal.h"

#define CHAIN_DOMAIN "glove.channel.journal.v1"
#define GENESIS_DOMAIN "glove.channel.genesis.v1"
#define PARAM_DOMAIN "glove.channel.registry.v1"
#define REASON_RETIRED "schema_retired"
#define REASON_REJECTED "body_rejected"

static int channel_chain(void *ctx, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], uint64_t seq,
                         const void *payload, size_t len, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN],
                         struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_chain_sha256(CHAIN_DOMAIN, prev, seq, payload, len, out, err);
}

static int channel_genesis(void *ctx, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                           uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_genesis_sha256(GENESIS_DOMAIN, header, out, err);
}

static const struct glove_store_journal_format channel_format = {
        .magic = { 'G', 'L', 'V', 'C', 'H', 'A', 'N', '1' },
        .version = 1,
        .max_payload = GLOVE_CHANNEL_RECORD_MAX,
        .max_records = GLOVE_CHANNEL_CAPACITY_MAX,
        .max_bytes = GLOVE_STORE_JOURNAL_HEADER_LEN +
                     (uint64_t)GLOVE_CHANNEL_CAPACITY_MAX *
                             (GLOVE_CHANNEL_RECORD_MAX + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD),
        .chain = channel_chain,
        .genesis = channel_genesis,
};

struct entry {
        uint64_t seq;
        char schema_id[GLOVE_CHANNEL_ID_MAX + 1];
        char key[GLOVE_CHANNEL_ID_MAX + 1];
        char digest[GLOVE_CHANNEL_DIGEST_HEX_SIZE];
        int64_t issued_at_ms;
        int64_t ttl_ms;
        const char *reason; /* NULL: admitted; REASON_* when quarantined */
        json_t *body;       /* owned; admitted entries only */
};

struct glove_channel_registry {
        pthread_mutex_t lock;
        struct glove_store_journal *journal; /* NULL after close */
        const struct glove_channel_host *host;
        char session_id[GLOVE_CHANNEL_ID_MAX + 1];
        char runtime_id[GLOVE_CHANNEL_ID_MAX + 1];
        uint32_t capacity;
        struct entry *entries; /* GLOVE_CHANNEL_CAPACITY_MAX slots, entries[i].seq == i + 1 */
        size_t n;
        size_t quarantined;
        bool broken;
};

static const char *const record_keys[] = { "body",      "digest", "idempotency_key", "issued_at_ms", "runtime_id",
                                           "schema_id", "seq",    "session_id",      "ttl_ms",       NULL };

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "channel.no_memory", "out of memory in the channel registry");
}

static struct entry *find_key(struct glove_channel_registry *r, const char *key) {
        for (size_t i = 0; i < r->n; i++)
                if (strcmp(r->entries[i].key, key) == 0)
                        return &r->entries[i];
        return NULL;
}

static int session_param(const char *session_id, const char *runtime_id, uint8_t out[GLOVE_STORE_JOURNAL_PARAM_LEN],
                         struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        int r = glove_digest_sha256_init(&ctx, err);
        if (r == 0)
                r = channel_lp_str(ctx, PARAM_DOMAIN, strlen(PARAM_DOMAIN), err);
        if (r == 0)
                r = channel_lp_str(ctx, session_id, strlen(session_id), err);
        if (r == 0)
                r = channel_lp_str(ctx, runtime_id, strlen(runtime_id), err);
        if (r == 0)
                r = glove_digest_sha256_final(ctx, out, err);
        return r;
}

/* ---- replay ---- */

static int invalid(struct glove_error *err, uint64_t seq, const char *what) {
        return glove_error_set(err, EBADMSG, "channel.journal_invalid", "channel journal record %llu: %s",
                               (unsigned long long)seq, what);
}

static const char *get_str(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

static bool get_int(const json_t *o, const char *key, json_int_t min, json_int_t max, json_int_t *out) {
        const json_t *v = json_object_get(o, key);
        if (!json_is_integer(v))
                return false;
        *out = json_integer_value(v);
        return *out >= min && *out <= max;
}

/* The quarantine reason of a replayed body under the current table, or NULL. */
static const char *classify(const struct glove_channel_host *host, const char *schema_id, const json_t *body,
                            size_t body_len) {
        const struct glove_channel_descriptor *d = glove_channel_host_find(host, schema_id);
        if (!d)
                return REASON_RETIRED;
        if (body_len > d->body_max_bytes)
                return REASON_REJECTED;
        struct glove_error verr = { 0 };
        if (d->validate(body, &verr) != 0)
                return REASON_REJECTED;
        return NULL;
}

static int replay_record(void *userdata, uint64_t seq, const void *payload, size_t len,
                         const uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)tag;
        struct glove_channel_registry *r = userdata;
        _cleanup_json_ json_t *rec = NULL;
        struct glove_error jerr = { 0 };
        if (glove_json_decode_canonical(payload, len, GLOVE_CHANNEL_RECORD_MAX,
                                        GLOVE_JSON_OBJECT_ONLY | GLOVE_JSON_BOUND_VALUES, &rec, &jerr) < 0)
                return invalid(err, seq, jerr.message);
        if (glove_json_check_keys(rec, record_keys, NULL, &jerr) < 0)
                return invalid(err, seq, jerr.message);
        const char *session = get_str(rec, "session_id"), *runtime = get_str(rec, "runtime_id");
        if (!session || !runtime)
                return invalid(err, seq, "session_id or runtime_id missing");
        if (strcmp(session, r->session_id) != 0 || strcmp(runtime, r->runtime_id) != 0)
                return glove_error_set(err, EBADMSG, "channel.journal_foreign",
                                       "channel journal record %llu belongs to another session or runtime",
                                       (unsigned long long)seq);
        const char *schema = get_str(rec, "schema_id"), *key = get_str(rec, "idempotency_key");
        const char *digest = get_str(rec, "digest");
        json_int_t rseq, at, ttl;
        const json_t *body = json_object_get(rec, "body");
        if (!channel_identifier_valid(schema) || !channel_identifier_valid(key))
                return invalid(err, seq, "schema_id or idempotency_key is not an identifier");
        if (!channel_hex64(digest))
                return invalid(err, seq, "digest is not 64 lowercase hex digits");
        if (!get_int(rec, "seq", 1, INT64_MAX, &rseq) || (uint64_t)rseq != seq)
                return invalid(err, seq, "seq is not the record's sequence");
        if (!get_int(rec, "issued_at_ms", 0, GLOVE_CHANNEL_TIME_MAX_MS, &at) ||
            !get_int(rec, "ttl_ms", 1, GLOVE_CHANNEL_TTL_LIMIT_MS, &ttl))
                return invalid(err, seq, "issued_at_ms or ttl_ms missing or out of range");
        if (!json_is_object(body))
                return invalid(err, seq, "body is not an object");
        _cleanup_free_ char *bytes = NULL;
        size_t blen = 0;
        if (glove_json_encode_canonical(body, &bytes, &blen, &jerr) < 0)
                return invalid(err, seq, jerr.message);
        if (blen > GLOVE_CHANNEL_BODY_MAX)
                return invalid(err, seq, "body larger than any schema allows");
        char hex[GLOVE_CHANNEL_DIGEST_HEX_SIZE];
        int rc = glove_channel_intent_digest(schema, bytes, blen, hex, err);
        if (rc < 0)
                return rc;
        if (strcmp(hex, digest) != 0)
                return invalid(err, seq, "digest differs from the digest of its schema and body");
        if (find_key(r, key))
                return invalid(err, seq, "idempotency_key admitted twice");
        if (r->n >= GLOVE_CHANNEL_CAPACITY_MAX || seq != r->n + 1)
                return invalid(err, seq, "more records than a registry holds");
        struct entry *e = &r->entries[r->n];
        memset(e, 0, sizeof(*e));
        e->seq = seq;
        snprintf(e->schema_id, sizeof(e->schema_id), "%s", schema);
        snprintf(e->key, sizeof(e->key), "%s", key);
        memcpy(e->digest, hex, sizeof(e->digest));
        e->issued_at_ms = at;
        e->ttl_ms = ttl;
        e->reason = classify(r->host, schema, body, blen);
        if (!e->reason) {
                e->body = json_deep_copy(body);
                if (!e->body)
                        return no_memory(err);
        } else {
                r->quarantined++;
        }
        r->n++;
        return 0;
}

/* ---- open ---- */

static bool name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        return n > 0 && n <= NAME_MAX - strlen(GLOVE_STORE_JOURNAL_SEAL_SUFFIX) - 16 && !strchr(name, '/') &&
               strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* The absolute path of directory descriptor dir_fd into out. */
static int dir_path(int dir_fd, char *out, size_t size, struct glove_error *err) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", dir_fd);
        ssize_t n = readlink(link, out, size - 1);
        if (n < 0)
                return glove_error_set(err, errno, "channel.journal_dir", "the registry directory descriptor: %s",
                                       glove_errno_text(errno));
        if ((size_t)n >= size - 1 || n == 0 || out[0] != '/')
                return glove_error_set(err, EINVAL, "channel.journal_dir",
                                       "the registry directory descriptor has no absolute path");
        out[n] = '\0';
        return 0;
}

/* Checks that path still names the directory dir_fd is. */
static int dir_recheck(int dir_fd, const char *path, struct glove_error *err) {
        _cleanup_close_ int fd = -1;
        int r = glove_store_dir_open_private(path, geteuid(), false, &fd, err);
        if (r < 0)
                return r;
        struct stat a, b;
        if (fstat(dir_fd, &a) < 0 || fstat(fd, &b) < 0)
                return glove_error_set(err, errno, "channel.journal_dir", "fstat: %s", glove_errno_text(errno));
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return glove_error_set(err, EINVAL, "channel.journal_dir",
                                       "the registry directory %s is no longer the directory given", path);
        return 0;
}

static int open_args(int dir_fd, const char *name, const char *session_id, const char *runtime_id,
                     const struct glove_channel_host *host, uint32_t capacity, struct glove_channel_registry **out,
                     struct glove_error *err) {
        if (!out || dir_fd < 0 || !name_valid(name))
                return glove_error_set(err, EINVAL, "channel.invalid_argument",
                                       "the registry needs a directory descriptor and a file name");
        if (!channel_identifier_valid(session_id) || !channel_identifier_valid(runtime_id))
                return glove_error_set(err, EINVAL, "channel.invalid_argument",
                                       "session_id and runtime_id must be 1..%d bytes of [A-Za-z0-9._:-]",
                                       GLOVE_CHANNEL_ID_MAX);
        if (capacity < 1 || capacity > GLOVE_CHANNEL_CAPACITY_MAX)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "capacity %u (allowed 1..%d)",
                                       capacity, GLOVE_CHANNEL_CAPACITY_MAX);
        if (!glove_channel_host_frozen(host))
                return glove_error_set(err, EINVAL, "channel.host_not_frozen",
                                       "the admission table must be frozen before a registry is built on it");
        return 0;
}

int glove_channel_registry_open(int dir_fd, const char *name, const char *session_id, const char *runtime_id,
                                const struct glove_channel_host *host, uint32_t capacity,
                                struct glove_channel_registry **out, struct glove_error *err) {
        if (out)
                *out = NULL;
        int rc = open_args(dir_fd, name, session_id, runtime_id, host, capacity, out, err);
        if (rc < 0)
                return rc;
        char dir[PATH_MAX], path[PATH_MAX];
        if ((rc = dir_path(dir_fd, dir, sizeof(dir), err)) < 0)
                return rc;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name) >= sizeof(path))
                return glove_error_set(err, ENAMETOOLONG, "channel.journal_dir", "the registry path is too long");
        uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN], have[GLOVE_STORE_JOURNAL_PARAM_LEN];
        if ((rc = session_param(session_id, runtime_id, param, err)) < 0)
                return rc;
        _cleanup_channel_registry_ struct glove_channel_registry *r = calloc(1, sizeof(*r));
        if (!r)
                return no_memory(err);
        pthread_mutex_init(&r->lock, NULL);
        if (!(r->entries = calloc(GLOVE_CHANNEL_CAPACITY_MAX, sizeof(*r->entries))))
                return no_memory(err);
        r->host = host;
        r->capacity = capacity;
        snprintf(r->session_id, sizeof(r->session_id), "%s", session_id);
        snprintf(r->runtime_id, sizeof(r->runtime_id), "%s", runtime_id);
        struct glove_store_journal_open_options jo = {
                .path = path,
                .owner = geteuid(),
                .create_param = param,
                .recover_torn_tail = false,
        };
        rc = glove_store_journal_open(&channel_format, &jo, replay_record, r, &r->journal, NULL, err);
        if (rc < 0)
                return rc;
        glove_store_journal_param(r->journal, have);
        if (memcmp(param, have, sizeof(param)) != 0)
                return glove_error_set(err, EBADMSG, "channel.journal_foreign",
                                       "the channel journal %s belongs to another session or runtime", name);
        if ((rc = dir_recheck(dir_fd, dir, err)) < 0)
                return rc;
        *out = TAKE_PTR(r);
        return 0;
}

/* ---- enqueue ---- */

static int check_time(const struct channel_intent *in, int64_t now_ms, struct glove_error *err) {
        if (now_ms < in->issued_at_ms - GLOVE_CHANNEL_SKEW_MAX_MS || now_ms > in->issued_at_ms + GLOVE_CHANNEL_SKEW_MAX_MS)
                return glove_error_set(err, EINVAL, "channel.clock_skew",
                                       "issued_at_ms %lld is more than %d ms from the host's clock (%lld)",
                                       (long long)in->issued_at_ms, GLOVE_CHANNEL_SKEW_MAX_MS, (long long)now_ms);
        if (in->issued_at_ms + in->ttl_ms <= now_ms)
                return glove_error_set(err, ETIME, "channel.expired",
                                       "the intent expired at %lld (host clock %lld)",
                                       (long long)(in->issued_at_ms + in->ttl_ms), (long long)now_ms);
        return 0;
}

static int run_validator(const struct glove_channel_descriptor *d, const json_t *body, struct glove_error *err) {
        struct glove_error verr = { 0 };
        int rc = d->validate(body, &verr);
        if (rc == 0)
                return 0;
        return glove_error_set(err, verr.errnum ? verr.errnum : EINVAL, verr.code ? verr.code : "channel.body_rejected",
                               "%s", verr.code ? verr.message : "the schema refused the body");
}

static int append_record(struct glove_channel_registry *r, const struct channel_intent *in, const char *digest,
                         struct glove_error *err) {
        _cleanup_json_ json_t *rec = json_pack("{s:O,s:s,s:s,s:I,s:s,s:s,s:I,s:s,s:I}", "body", in->body, "digest",
                                               digest, "idempotency_key", in->key, "issued_at_ms",
                                               (json_int_t)in->issued_at_ms, "runtime_id", r->runtime_id, "schema_id",
                                               in->schema_id, "seq", (json_int_t)(r->n + 1), "session_id",
                                               r->session_id, "ttl_ms", (json_int_t)in->ttl_ms);
        if (!rec)
                return no_memory(err);
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        int rc = glove_json_encode_canonical(rec, &bytes, &len, err);
        if (rc < 0)
                return rc;
        if (len > GLOVE_CHANNEL_RECORD_MAX)
                return glove_error_set(err, EMSGSIZE, "channel.intent_too_large",
                                       "the admission record would be %zu bytes (at most %d)", len,
                                       GLOVE_CHANNEL_RECORD_MAX);
        struct glove_error jerr = { 0 };
        uint64_t seq = 0;
        rc = glove_store_journal_append(r->journal, bytes, len, &seq, NULL, &jerr);
        if (rc < 0 || seq != r->n + 1) {
                r->broken = true;
                return glove_error_set(err, rc < 0 ? -rc : EIO, "channel.journal_append",
                                       "the channel journal append failed (%s: %s); the registry refuses every "
                                       "later intent",
                                       jerr.code ? jerr.code : "sequence", jerr.code ? jerr.message : "out of step");
        }
        return 0;
}

static int admit(struct glove_channel_registry *r, const struct channel_intent *in, int64_t now_ms,
                 struct glove_channel_admission *out, struct glove_error *err) {
        struct entry *e = find_key(r, in->key);
        if (e && e->reason)
                return glove_error_set(err, EPERM, "channel.quarantined",
                                       "idempotency_key %s is a quarantined entry's (seq %llu, %s); it cannot be "
                                       "enqueued again",
                                       in->key, (unsigned long long)e->seq, e->reason);
        const struct glove_channel_descriptor *d = glove_channel_host_find(r->host, in->schema_id);
        if (!d)
                return glove_error_set(err, EPERM, "channel.schema_unregistered",
                                       "schema %s is not registered", in->schema_id);
        if (in->ttl_ms > (int64_t)d->ttl_max_ms)
                return glove_error_set(err, EINVAL, "channel.ttl_out_of_range", "ttl_ms %lld is outside 1..%u",
                                       (long long)in->ttl_ms, d->ttl_max_ms);
        int rc = check_time(in, now_ms, err);
        if (rc < 0)
                return rc;
        _cleanup_free_ char *body = NULL;
        size_t blen = 0;
        if ((rc = glove_json_encode_canonical(in->body, &body, &blen, err)) < 0)
                return rc;
        if (blen > d->body_max_bytes)
                return glove_error_set(err, EMSGSIZE, "channel.body_too_large",
                                       "the body is %zu canonical bytes (schema %s allows %zu)", blen, in->schema_id,
                                       d->body_max_bytes);
        if ((rc = run_validator(d, in->body, err)) < 0)
                return rc;
        char digest[GLOVE_CHANNEL_DIGEST_HEX_SIZE];
        if ((rc = glove_channel_intent_digest(in->schema_id, body, blen, digest, err)) < 0)
                return rc;
        if (e) {
                if (strcmp(e->digest, digest) != 0)
                        return glove_error_set(err, EEXIST, "channel.idempotency_conflict",
                                               "idempotency_key %s was admitted (seq %llu) with another digest",
                                               in->key, (unsigned long long)e->seq);
                if (out) {
                        out->seq = e->seq;
                        memcpy(out->digest, e->digest, sizeof(out->digest));
                        out->duplicate = true;
                }
                return 0;
        }
        if (r->n >= r->capacity)
                return glove_error_set(err, ENOSPC, "channel.registry_full", "the registry holds %zu of %u entries",
                                       r->n, r->capacity);
        json_t *copy = json_deep_copy(in->body);
        if (!copy)
                return no_memory(err);
        if ((rc = append_record(r, in, digest, err)) < 0) {
                json_decref(copy);
                return rc;
        }
        e = &r->entries[r->n];
        memset(e, 0, sizeof(*e));
        e->seq = r->n + 1;
        snprintf(e->schema_id, sizeof(e->schema_id), "%s", in->schema_id);
        snprintf(e->key, sizeof(e->key), "%s", in->key);
        memcpy(e->digest, digest, sizeof(e->digest));
        e->issued_at_ms = in->issued_at_ms;
        e->ttl_ms = in->ttl_ms;
        e->body = copy;
        r->n++;
        if (out) {
                out->seq = e->seq;
                memcpy(out->digest, digest, sizeof(out->digest));
                out->duplicate = false;
        }
        return 0;
}

int glove_channel_registry_enqueue(struct glove_channel_registry *r, const void *intent, size_t len, int64_t now_ms,
                                   struct glove_channel_admission *out, struct glove_error *err) {
        if (!r)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "no registry");
        struct channel_intent in;
        int rc = channel_intent_decode(intent, len, &in, err);
        if (rc < 0)
                return rc;
        pthread_mutex_lock(&r->lock);
        if (!r->journal)
                rc = glove_error_set(err, EBADF, "channel.registry_closed", "the registry is closed");
        else if (r->broken)
                rc = glove_error_set(err, EIO, "channel.registry_broken",
                                     "an earlier append to the channel journal failed; no intent is admitted");
        else
                rc = admit(r, &in, now_ms, out, err);
        pthread_mutex_unlock(&r->lock);
        channel_intent_release(&in);
        return rc;
}

/* ---- page ---- */

static json_t *entry_json(const struct entry *e, const char *runtime_id) {
        json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:s,s:I,s:s,s:I}", "digest", e->digest, "idempotency_key", e->key,
                              "issued_at_ms", (json_int_t)e->issued_at_ms, "runtime_id", runtime_id, "schema_id",
                              e->schema_id, "seq", (json_int_t)e->seq, "state", e->reason ? "quarantined" : "admitted",
                              "ttl_ms", (json_int_t)e->ttl_ms);
        if (!o)
                return NULL;
        int rc = e->reason ? json_object_set_new(o, "reason", json_string(e->reason))
                           : json_object_set_new(o, "body", json_deep_copy(e->body));
        if (rc < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static int page_locked(struct glove_channel_registry *r, uint64_t after_seq, uint32_t limit, json_t **out,
                       struct glove_error *err) {
        _cleanup_json_ json_t *entries = json_array();
        if (!entries)
                return no_memory(err);
        size_t i = after_seq < r->n ? (size_t)after_seq : r->n;
        for (; i < r->n && json_array_size(entries) < limit; i++)
                if (json_array_append_new(entries, entry_json(&r->entries[i], r->runtime_id)) < 0)
                        return no_memory(err);
        json_t *next = i < r->n && i > 0 ? json_integer((json_int_t)r->entries[i - 1].seq) : json_null();
        *out = json_pack("{s:O,s:o}", "entries", entries, "next_after", next);
        return *out ? 0 : no_memory(err);
}

int glove_channel_registry_page(struct glove_channel_registry *r, uint64_t after_seq, uint32_t limit, json_t **out,
                                struct glove_error *err) {
        if (!r || !out || limit < 1 || limit > GLOVE_CHANNEL_PAGE_MAX)
                return glove_error_set(err, EINVAL, "channel.invalid_argument", "page limit %u (allowed 1..%d)",
                                       limit, GLOVE_CHANNEL_PAGE_MAX);
        *out = NULL;
        pthread_mutex_lock(&r->lock);
        int rc = page_locked(r, after_seq, limit, out, err);
        pthread_mutex_unlock(&r->lock);
        return rc;
}

/* ---- the rest ---- */

size_t glove_channel_registry_count(struct glove_channel_registry *r) {
        if (!r)
                return 0;
        pthread_mutex_lock(&r->lock);
        size_t n = r->n;
        pthread_mutex_unlock(&r->lock);
        return n;
}

size_t glove_channel_registry_quarantined(struct glove_channel_registry *r) {
        if (!r)
                return 0;
        pthread_mutex_lock(&r->lock);
        size_t n = r->quarantined;
        pthread_mutex_unlock(&r->lock);
        return n;
}

const char *glove_channel_registry_session_id(const struct glove_channel_registry *r) {
        return r ? r->session_id : NULL;
}

const char *glove_channel_registry_runtime_id(const struct glove_channel_registry *r) {
        return r ? r->runtime_id : NULL;
}

void glove_channel_registry_close(struct glove_channel_registry *r) {
        if (!r)
                return;
        pthread_mutex_lock(&r->lock);
        glove_store_journal_close(r->journal);
        r->journal = NULL;
        pthread_mutex_unlock(&r->lock);
}

void glove_channel_registry_free(struct glove_channel_registry *r) {
        if (!r)
                return;
        glove_store_journal_close(r->journal);
        for (size_t i = 0; i < r->n; i++)
                json_decref(r->entries[i].body);
        free(r->entries);
        pthread_mutex_destroy(&r->lock);
        free(r);
}

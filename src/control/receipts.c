/* SPDX-License-Identifier: Apache-2.0 */
/* The HMAC-chained receipt journal and its paged delivery (see receipts.h). */
#include "glove/control/receipts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/control/dirs.h"
#include "glove/control/store.h"

#define ENVELOPE_DOMAIN "glove.receipt.envelope.v1"
#define ACK_MAX 256

struct envelope {
        char *bytes;  /* canonical JSON */
        size_t len;
        uint8_t mac[32];
};

struct glove_control_receipts {
        struct glove_control_journal_format fmt; /* ctx points at key */
        uint8_t key[GLOVE_CONTROL_RECEIPTS_KEY_LEN];
        uint8_t anchor[32];
        struct glove_control_journal *journal;
        struct envelope *env;
        size_t n, cap;
        uint64_t acked;
        uint64_t torn_bytes, torn_offset;
        uint64_t reserved_bytes, reserved_records; /* capacity promised to running sessions */
        int dirfd;
};

static int receipts_chain(void *ctx, const uint8_t prev[GLOVE_CONTROL_JOURNAL_TAG_LEN], uint64_t seq,
                          const void *payload, size_t len, uint8_t out[GLOVE_CONTROL_JOURNAL_TAG_LEN],
                          struct glove_error *err) {
        (void)seq; /* the sequence is inside the envelope */
        const uint8_t *key = ctx;
        size_t n = sizeof(ENVELOPE_DOMAIN) + 32 + len;
        _cleanup_free_ uint8_t *buf = malloc(n);
        if (!buf)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        memcpy(buf, ENVELOPE_DOMAIN, sizeof(ENVELOPE_DOMAIN));
        memcpy(buf + sizeof(ENVELOPE_DOMAIN), prev, 32);
        memcpy(buf + sizeof(ENVELOPE_DOMAIN) + 32, payload, len);
        return glove_digest_hmac_sha256(key, GLOVE_CONTROL_RECEIPTS_KEY_LEN, buf, n, out, err);
}

static int receipts_genesis(void *ctx, const uint8_t header[GLOVE_CONTROL_JOURNAL_HEADER_LEN],
                            uint8_t out[GLOVE_CONTROL_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)ctx;
        (void)err;
        memcpy(out, header + 32, 32); /* the anchor */
        return 0;
}

static bool kind_valid(const char *s) {
        size_t n = 0;
        for (; s[n]; n++)
                if (n >= GLOVE_CONTROL_RECEIPTS_KIND_MAX ||
                    !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '.' || s[n] == '_' ||
                      s[n] == '-'))
                        return false;
        return n > 0;
}

static const char *const envelope_keys[] = { "appended_at_ms", "kind", "receipt", "sequence", "session_id", NULL };

static int keep(struct glove_control_receipts *r, const void *bytes, size_t len, const uint8_t mac[32],
                struct glove_error *err) {
        if (r->n == r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 64;
                struct envelope *v = realloc(r->env, cap * sizeof(*v));
                if (!v)
                        return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
                r->env = v;
                r->cap = cap;
        }
        char *copy = malloc(len + 1);
        if (!copy)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        memcpy(copy, bytes, len);
        copy[len] = '\0';
        r->env[r->n] = (struct envelope){ .bytes = copy, .len = len };
        memcpy(r->env[r->n].mac, mac, 32);
        r->n++;
        return 0;
}

static int replay_envelope(void *userdata, uint64_t seq, const void *payload, size_t len,
                           const uint8_t tag[GLOVE_CONTROL_JOURNAL_TAG_LEN], struct glove_error *err) {
        struct glove_control_receipts *r = userdata;
        _cleanup_json_ json_t *o = NULL;
        struct glove_error e = { 0 };
        const char *kind, *sid;
        int64_t n, at;
        json_t *body;
        if (glove_json_decode_canonical(payload, len, GLOVE_CONTROL_RECEIPTS_MAX_ENVELOPE, GLOVE_JSON_OBJECT_ONLY, &o,
                                        &e) < 0 ||
            glove_json_check_keys(o, envelope_keys, NULL, &e) < 0 ||
            glove_json_get_int(o, "sequence", NULL, 1, INT64_MAX, &n, &e) < 0 ||
            glove_json_get_int(o, "appended_at_ms", NULL, 0, INT64_MAX, &at, &e) < 0 ||
            glove_json_get_string(o, "kind", NULL, GLOVE_CONTROL_RECEIPTS_KIND_MAX, &kind, &e) < 0 ||
            glove_json_get_string(o, "session_id", NULL, GLOVE_CONTROL_ID_MAX, &sid, &e) < 0 ||
            glove_json_get_object(o, "receipt", NULL, &body, &e) < 0)
                return glove_error_set(err, EBADMSG, "receipts.bad_record", "receipt %llu: %s", (unsigned long long)seq,
                                       e.message);
        if (!kind_valid(kind) || !glove_control_id_valid(sid))
                return glove_error_set(err, EBADMSG, "receipts.bad_record", "receipt %llu: malformed kind or session id",
                                       (unsigned long long)seq);
        if ((uint64_t)n != seq)
                return glove_error_set(err, EBADMSG, "receipts.sequence",
                                       "receipt %llu carries sequence %lld", (unsigned long long)seq, (long long)n);
        return keep(r, payload, len, tag, err);
}

/* Reads the 32-byte key of dirfd into key, or creates it when it is absent,
 * create is true and no journal exists (the one place a key is made: gloved's
 * first start and glove setup both come here). */
static int key_load(int dirfd, uid_t owner, bool create, uint8_t key[GLOVE_CONTROL_RECEIPTS_KEY_LEN], bool *created,
                    struct glove_error *err) {
        if (created)
                *created = false;
        _cleanup_close_ int fd = openat(dirfd, GLOVE_CONTROL_RECEIPTS_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                struct stat st;
                if (fstatat(dirfd, GLOVE_CONTROL_RECEIPTS_JOURNAL_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return glove_error_set(err, ENOENT, "receipts.key_missing",
                                               "%s exists but %s does not; refusing to start a new chain over it",
                                               GLOVE_CONTROL_RECEIPTS_JOURNAL_FILE, GLOVE_CONTROL_RECEIPTS_KEY_FILE);
                if (!create)
                        return glove_error_set(err, ENOENT, "receipts.key_missing", "%s does not exist",
                                               GLOVE_CONTROL_RECEIPTS_KEY_FILE);
                int rr = glove_digest_random(key, GLOVE_CONTROL_RECEIPTS_KEY_LEN, err);
                if (rr == 0)
                        rr = glove_control_file_replace(dirfd, GLOVE_CONTROL_RECEIPTS_KEY_FILE, key,
                                                        GLOVE_CONTROL_RECEIPTS_KEY_LEN, err);
                if (rr == 0 && created)
                        *created = true;
                return rr;
        }
        if (fd < 0)
                return glove_error_set(err, errno == ELOOP ? EPERM : errno, "receipts.key_insecure", "%s: %s",
                                       GLOVE_CONTROL_RECEIPTS_KEY_FILE, strerror(errno));
        int rr = glove_control_file_check(fd, owner, GLOVE_CONTROL_RECEIPTS_KEY_FILE, "receipts.key_insecure", err);
        if (rr < 0)
                return rr;
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_size != GLOVE_CONTROL_RECEIPTS_KEY_LEN ||
            glove_fd_read_exact(fd, key, GLOVE_CONTROL_RECEIPTS_KEY_LEN) < 0)
                return glove_error_set(err, EINVAL, "receipts.key_insecure", "%s must hold exactly %d bytes",
                                       GLOVE_CONTROL_RECEIPTS_KEY_FILE, GLOVE_CONTROL_RECEIPTS_KEY_LEN);
        return 0;
}

static int load_key(struct glove_control_receipts *r, uid_t owner, struct glove_error *err) {
        return key_load(r->dirfd, owner, true, r->key, NULL, err);
}

int glove_control_receipts_key_ensure(int state_dirfd, uid_t owner, bool create, bool *created,
                                      struct glove_error *err) {
        uint8_t key[GLOVE_CONTROL_RECEIPTS_KEY_LEN];
        int rr = key_load(state_dirfd, owner, create, key, created, err);
        explicit_bzero(key, sizeof(key));
        return rr;
}

static const char *const ack_keys[] = { "head_mac", "sequence", NULL };

static int load_ack(struct glove_control_receipts *r, struct glove_error *err) {
        _cleanup_close_ int fd = openat(r->dirfd, GLOVE_CONTROL_RECEIPTS_ACK_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0)
                return glove_error_set(err, errno, "receipts.io", "%s: %s", GLOVE_CONTROL_RECEIPTS_ACK_FILE,
                                       strerror(errno));
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int rr = glove_fd_read_bounded(fd, ACK_MAX - 1, &buf, &n, NULL);
        if (rr == -EFBIG) /* the words the JSON decoder gave when the read stopped at ACK_MAX bytes */
                return glove_error_set(err, EBADMSG, "receipts.ack_invalid", "%s: JSON text is %d bytes, the limit is %d",
                                       GLOVE_CONTROL_RECEIPTS_ACK_FILE, ACK_MAX, ACK_MAX - 1);
        if (rr < 0)
                return glove_error_set(err, -rr, "receipts.io", "%s: %s", GLOVE_CONTROL_RECEIPTS_ACK_FILE,
                                       strerror(-rr));
        _cleanup_json_ json_t *o = NULL;
        struct glove_error e = { 0 };
        const char *mac;
        int64_t seq;
        uint8_t m[32];
        if (glove_json_decode_canonical(buf, n, ACK_MAX - 1, GLOVE_JSON_OBJECT_ONLY, &o, &e) < 0 ||
            glove_json_check_keys(o, ack_keys, NULL, &e) < 0 ||
            glove_json_get_int(o, "sequence", NULL, 0, INT64_MAX, &seq, &e) < 0 ||
            glove_json_get_string(o, "head_mac", NULL, 64, &mac, &e) < 0 ||
            glove_digest_hex_decode(mac, strlen(mac), m, 32, &e) < 0)
                return glove_error_set(err, EBADMSG, "receipts.ack_invalid", "%s: %s", GLOVE_CONTROL_RECEIPTS_ACK_FILE,
                                       e.message);
        const uint8_t *want = seq == 0 ? r->anchor : ((uint64_t)seq <= r->n ? r->env[seq - 1].mac : NULL);
        if (!want || !glove_digest_equal(want, m, 32))
                return glove_error_set(err, EBADMSG, "receipts.ack_invalid",
                                       "%s acknowledges receipt %lld, which is not in the chain (journal truncated?)",
                                       GLOVE_CONTROL_RECEIPTS_ACK_FILE, (long long)seq);
        r->acked = (uint64_t)seq;
        return 0;
}

int glove_control_receipts_open(const struct glove_control_receipts_options *o, struct glove_control_receipts **out,
                                struct glove_error *err) {
        *out = NULL;
        struct glove_control_receipts *r = calloc(1, sizeof(*r));
        if (!r)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        r->dirfd = -1;
        r->fmt = (struct glove_control_journal_format){
                .magic = { 'G', 'L', 'V', 'R', 'C', 'P', 'T', '1' },
                .version = 1,
                .max_payload = GLOVE_CONTROL_RECEIPTS_MAX_ENVELOPE,
                .max_records = GLOVE_CONTROL_RECEIPTS_MAX_RECORDS,
                .max_bytes = GLOVE_CONTROL_RECEIPTS_MAX_BYTES,
                .chain = receipts_chain,
                .genesis = receipts_genesis,
                .ctx = r->key,
        };
        char path[4096];
        int rr = glove_control_dir_open_private(o->state_dir, o->owner, false, &r->dirfd, err);
        if (rr == 0 && snprintf(path, sizeof(path), "%s/%s", o->state_dir, GLOVE_CONTROL_RECEIPTS_JOURNAL_FILE) >=
                               (int)sizeof(path))
                rr = glove_error_set(err, ENAMETOOLONG, "receipts.io", "state directory path too long");
        if (rr == 0)
                rr = load_key(r, o->owner, err);
        uint8_t zero[32] = { 0 };
        struct glove_control_journal_open_options jo = {
                .path = path, .owner = o->owner, .create_param = o->anchor ? o->anchor : zero, .recover_torn_tail = true
        };
        struct glove_control_journal_report rep;
        if (rr == 0)
                rr = glove_control_journal_open(&r->fmt, &jo, replay_envelope, r, &r->journal, &rep, err);
        if (rr == 0) {
                glove_control_journal_param(r->journal, r->anchor);
                r->torn_bytes = rep.torn_bytes;
                r->torn_offset = rep.torn_offset;
                if (o->anchor && memcmp(o->anchor, r->anchor, 32) != 0)
                        rr = glove_error_set(err, EINVAL, "receipts.anchor_mismatch",
                                             "--receipt-anchor differs from the anchor of the existing receipt journal");
        }
        if (rr == 0)
                rr = load_ack(r, err);
        if (rr < 0) {
                glove_error_prefix(err, "receipt journal in %s", o->state_dir);
                glove_control_receipts_close(r);
                return rr;
        }
        *out = r;
        return 0;
}

int glove_control_receipts_append(struct glove_control_receipts *r, const char *kind, const char *session_id,
                                  const json_t *receipt, int64_t now_ms, uint64_t *seq, struct glove_error *err) {
        if (!kind || !kind_valid(kind) || !glove_control_id_valid(session_id) || !json_is_object(receipt) ||
            now_ms < 0)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument",
                                       "a receipt needs a kind, a session id and an object body");
        uint64_t n = r->n + 1;
        _cleanup_json_ json_t *o = json_pack("{s:I,s:s,s:O,s:I,s:s}", "appended_at_ms", (json_int_t)now_ms, "kind",
                                             kind, "receipt", (json_t *)receipt, "sequence", (json_int_t)n,
                                             "session_id", session_id);
        if (!o)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        int rr = glove_json_encode_canonical(o, &bytes, &len, err);
        if (rr < 0)
                return rr;
        if (len > GLOVE_CONTROL_RECEIPTS_MAX_ENVELOPE)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument", "envelope of %zu bytes exceeds %u",
                                       len, GLOVE_CONTROL_RECEIPTS_MAX_ENVELOPE);
        uint8_t mac[32];
        rr = glove_control_journal_append(r->journal, bytes, len, NULL, mac, err);
        if (rr < 0)
                return rr;
        rr = keep(r, bytes, len, mac, err);
        if (rr < 0)
                return rr;
        if (seq)
                *seq = n;
        return 0;
}

bool glove_control_receipts_has_room(const struct glove_control_receipts *r, size_t bytes) {
        if (bytes == 0 || bytes > GLOVE_CONTROL_RECEIPTS_MAX_ENVELOPE || !glove_control_journal_has_room(r->journal, bytes))
                return false;
        uint64_t records = glove_control_journal_records(r->journal) + r->reserved_records + 1;
        uint64_t size = glove_control_journal_size(r->journal) + r->reserved_bytes + bytes +
                        (r->reserved_records + 1) * GLOVE_CONTROL_JOURNAL_RECORD_OVERHEAD;
        return records <= r->fmt.max_records && size <= r->fmt.max_bytes;
}

int glove_control_receipts_reserve(struct glove_control_receipts *r, size_t bytes, struct glove_error *err) {
        if (!glove_control_receipts_has_room(r, bytes))
                return glove_error_set(err, ENOSPC, "start.receipts_full",
                                       "the receipt journal has no room for this session's receipt "
                                       "(%llu records and %llu bytes reserved by running sessions)",
                                       (unsigned long long)r->reserved_records, (unsigned long long)r->reserved_bytes);
        r->reserved_records++;
        r->reserved_bytes += bytes;
        return 0;
}

void glove_control_receipts_unreserve(struct glove_control_receipts *r, size_t bytes) {
        if (r->reserved_records)
                r->reserved_records--;
        r->reserved_bytes = r->reserved_bytes >= bytes ? r->reserved_bytes - bytes : 0;
}

uint64_t glove_control_receipts_head(const struct glove_control_receipts *r, uint8_t mac[32]) {
        memcpy(mac, r->n ? r->env[r->n - 1].mac : r->anchor, 32);
        return r->n;
}

static json_t *hex_json(const uint8_t *b) {
        char hex[65];
        glove_digest_hex_encode(b, 32, hex, sizeof(hex));
        return json_string(hex);
}

int glove_control_receipts_page(const struct glove_control_receipts *r, uint64_t after, uint64_t limit, json_t **out,
                                struct glove_error *err) {
        *out = NULL;
        if (limit < 1 || limit > GLOVE_CONTROL_RECEIPTS_PAGE_MAX)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument", "limit must be 1..%d",
                                       GLOVE_CONTROL_RECEIPTS_PAGE_MAX);
        if (after > r->n)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument",
                                       "after_sequence %llu is beyond the head %zu", (unsigned long long)after, r->n);
        _cleanup_json_ json_t *list = json_array();
        if (!list)
                return -ENOMEM;
        size_t bytes = 0;
        uint64_t i = after;
        for (; i < r->n && i - after < limit; i++) {
                const struct envelope *e = &r->env[i];
                if (i > after && bytes + e->len > GLOVE_CONTROL_RECEIPTS_PAGE_BYTES)
                        break;
                json_t *env = json_loadb(e->bytes, e->len, JSON_REJECT_DUPLICATES, NULL);
                json_t *item = env ? json_pack("{s:o,s:o,s:I}", "envelope", env, "mac", hex_json(e->mac), "sequence",
                                               (json_int_t)(i + 1))
                                   : NULL;
                if (!item || json_array_append_new(list, item) < 0)
                        return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
                bytes += e->len;
        }
        uint8_t head[32];
        uint64_t hs = glove_control_receipts_head(r, head);
        *out = json_pack("{s:I,s:o,s:O,s:{s:o,s:I},s:b,s:{s:I,s:I}}", "acknowledged_sequence", (json_int_t)r->acked,
                         "anchor", hex_json(r->anchor), "envelopes", list, "head", "mac", hex_json(head), "sequence",
                         (json_int_t)hs, "more", i < r->n, "recovery", "torn_bytes", (json_int_t)r->torn_bytes,
                         "torn_offset", (json_int_t)r->torn_offset);
        return *out ? 0 : glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
}

int glove_control_receipts_find(const struct glove_control_receipts *r, const char *kind, const char *session_id,
                                uint64_t *seq, json_t **receipt) {
        if (receipt)
                *receipt = NULL;
        char tail[GLOVE_CONTROL_ID_MAX + 32];
        int tn = snprintf(tail, sizeof(tail), ",\"session_id\":\"%s\"}", session_id ? session_id : "");
        if (!session_id || tn < 0 || (size_t)tn >= sizeof(tail))
                return 0;
        for (size_t i = r->n; i-- > 0;) {
                const struct envelope *e = &r->env[i];
                if (e->len < (size_t)tn || memcmp(e->bytes + e->len - tn, tail, (size_t)tn) != 0)
                        continue;
                _cleanup_json_ json_t *env = json_loadb(e->bytes, e->len, JSON_REJECT_DUPLICATES, NULL);
                if (!env)
                        return -ENOMEM;
                const char *k = json_string_value(json_object_get(env, "kind"));
                if (!k || strcmp(k, kind) != 0)
                        continue;
                *seq = i + 1;
                if (receipt)
                        *receipt = json_incref(json_object_get(env, "receipt"));
                return 1;
        }
        return 0;
}

int glove_control_receipts_ack(struct glove_control_receipts *r, uint64_t sequence, const char *head_mac,
                               struct glove_error *err) {
        uint8_t head[32], m[32];
        uint64_t hs = glove_control_receipts_head(r, head);
        struct glove_error e = { 0 };
        if (!head_mac || glove_digest_hex_decode(head_mac, strlen(head_mac), m, 32, &e) < 0)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument", "head_mac must be 64 lowercase hex");
        if (sequence != hs || !glove_digest_equal(m, head, 32))
                return glove_error_set(err, EINVAL, "receipts.ack_mismatch",
                                       "the acknowledgement must name the exact head (sequence %llu and its MAC)",
                                       (unsigned long long)hs);
        char hex[65], buf[ACK_MAX];
        glove_digest_hex_encode(head, 32, hex, sizeof(hex));
        int n = snprintf(buf, sizeof(buf), "{\"head_mac\":\"%s\",\"sequence\":%llu}", hex, (unsigned long long)hs);
        int rr = glove_control_file_replace(r->dirfd, GLOVE_CONTROL_RECEIPTS_ACK_FILE, buf, (size_t)n, err);
        if (rr < 0)
                return rr;
        r->acked = hs;
        return 0;
}

void glove_control_receipts_recovery(const struct glove_control_receipts *r, uint64_t *torn_bytes,
                                     uint64_t *torn_offset) {
        *torn_bytes = r->torn_bytes;
        *torn_offset = r->torn_offset;
}

void glove_control_receipts_close(struct glove_control_receipts *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n; i++)
                free(r->env[i].bytes);
        free(r->env);
        glove_control_journal_close(r->journal);
        if (r->dirfd >= 0)
                close(r->dirfd);
        explicit_bzero(r->key, sizeof(r->key));
        free(r);
}

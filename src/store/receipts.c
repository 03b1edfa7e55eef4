/* SPDX-License-Identifier: Apache-2.0 */
/* The HMAC-chained receipt journal and its paged delivery (see receipts.h). */
#include "glove/store/receipts.h"

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
#include "glove/store/checkpoint.h"
#include "glove/store/dirs.h"
#include "glove/store/store.h"

#define ENVELOPE_DOMAIN "glove.receipt.envelope.v1"
#define REFINEMENT_ENVELOPE_DOMAIN "glove.receipt.refinement-envelope.v1"
#define REFINEMENT_RECEIPT_DOMAIN "glove.receipt.refinement.v1"
#define CHECKPOINT_DOMAIN "glove.receipt.checkpoint.v1"

/* How the journal being replayed relates to the checkpoint (as in store.c). */
enum replay_mode { MODE_UNDECIDED = 0, MODE_PLAIN, MODE_TAIL, MODE_COVERED };
#define ACK_MAX 256

struct envelope {
        char *bytes;  /* canonical JSON */
        size_t len;
        uint8_t mac[32];
};

struct glove_store_receipts {
        struct glove_store_journal_format fmt; /* ctx points at this object */
        uint8_t key[GLOVE_STORE_RECEIPTS_KEY_LEN];
        uint8_t anchor[32];
        struct glove_store_journal *journal;
        struct envelope *env;    /* env[i] is receipt base + i + 1 */
        size_t n, cap;
        uint64_t base;           /* receipts before env[0]: dropped after acknowledgement */
        uint64_t scan_base;      /* sequence before the first record of the journal being replayed */
        uint8_t base_mac[32];    /* the MAC of receipt base (the anchor when 0) */
        bool have_ckpt;
        struct glove_store_checkpoint ckpt;
        uint8_t scan_header[GLOVE_STORE_JOURNAL_HEADER_LEN];
        enum replay_mode mode;
        uint64_t compact_records;
        glove_store_compact_hook hook;
        void *hook_ctx;
        bool broken;             /* a compaction stopped after installing its checkpoint */
        uint64_t acked;
        uint64_t torn_bytes, torn_offset;
        uint64_t reserved_bytes, reserved_records; /* capacity promised to running sessions */
        int dirfd;
};

const char *glove_store_receipts_envelope_domain(const char *kind) {
        return kind && strcmp(kind, GLOVE_STORE_RECEIPTS_KIND_REFINEMENT) == 0 ? REFINEMENT_ENVELOPE_DOMAIN
                                                                                : ENVELOPE_DOMAIN;
}

/* The envelope domain of payload[0..len), by its "kind" member. A canonical
 * envelope begins {"appended_at_ms":DIGITS,"kind":"KIND", (members sorted;
 * a kind is [a-z0-9._-], never escaped), so the kind is read from there
 * without decoding: the chain is checked before the record is decoded, and
 * bytes that are not shaped so get the default domain (replay then refuses
 * them as receipts.bad_record if their MAC matched at all). */
static const char *payload_domain(const void *payload, size_t len) {
        static const char head[] = "{\"appended_at_ms\":", mid[] = ",\"kind\":\"";
        static const char refinement[] = GLOVE_STORE_RECEIPTS_KIND_REFINEMENT "\",";
        const char *p = payload, *end = p + len;
        if (len < sizeof(head) - 1 || memcmp(p, head, sizeof(head) - 1) != 0)
                return ENVELOPE_DOMAIN;
        p += sizeof(head) - 1;
        while (p < end && *p >= '0' && *p <= '9')
                p++;
        if ((size_t)(end - p) < sizeof(mid) - 1 || memcmp(p, mid, sizeof(mid) - 1) != 0)
                return ENVELOPE_DOMAIN;
        p += sizeof(mid) - 1;
        if ((size_t)(end - p) >= sizeof(refinement) - 1 && memcmp(p, refinement, sizeof(refinement) - 1) == 0)
                return REFINEMENT_ENVELOPE_DOMAIN;
        return ENVELOPE_DOMAIN;
}

static int receipts_chain(void *ctx, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], uint64_t seq,
                          const void *payload, size_t len, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN],
                          struct glove_error *err) {
        (void)seq; /* the sequence is inside the envelope */
        const uint8_t *key = ((struct glove_store_receipts *)ctx)->key;
        const char *domain = payload_domain(payload, len);
        size_t dn = strlen(domain) + 1; /* with its NUL */
        size_t n = dn + 32 + len;
        _cleanup_free_ uint8_t *buf = malloc(n);
        if (!buf)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        memcpy(buf, domain, dn);
        memcpy(buf + dn, prev, 32);
        memcpy(buf + dn + 32, payload, len);
        return glove_digest_hmac_sha256(key, GLOVE_STORE_RECEIPTS_KEY_LEN, buf, n, out, err);
}

static int receipts_genesis(void *ctx, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                            uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        struct glove_store_receipts *r = ctx;
        (void)err;
        memcpy(r->scan_header, header, GLOVE_STORE_JOURNAL_HEADER_LEN);
        memcpy(out, header + 32, 32); /* the anchor */
        return 0;
}

static bool kind_valid(const char *s) {
        size_t n = 0;
        for (; s[n]; n++)
                if (n >= GLOVE_STORE_RECEIPTS_KIND_MAX ||
                    !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '.' || s[n] == '_' ||
                      s[n] == '-'))
                        return false;
        return n > 0;
}

static const char *const envelope_keys[] = { "appended_at_ms", "kind", "receipt", "sequence", "session_id", NULL };

static int keep(struct glove_store_receipts *r, const void *bytes, size_t len, const uint8_t mac[32],
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

static int ckpt_mismatch(struct glove_error *err, const char *what) {
        return glove_error_set(err, EBADMSG, "checkpoint.mismatch",
                               "the receipt journal %s; nothing was deleted: restore the journal and its checkpoint "
                               "from the same backup (docs/recovery.md, \"Compaction\")",
                               what);
}

/* Decides how the journal whose header the scan saw follows the checkpoint. */
static int decide_mode(struct glove_store_receipts *r, struct glove_error *err) {
        if (r->mode != MODE_UNDECIDED)
                return 0;
        const uint8_t *param = r->scan_header + 32;
        bool continues = glove_get_be32(r->scan_header + 20) & GLOVE_STORE_JOURNAL_FLAG_CONTINUES;
        if (!r->have_ckpt) {
                if (continues)
                        return glove_error_set(err, ENOENT, "checkpoint.missing",
                                               "the receipt journal continues a checkpoint %s%s that is missing; "
                                               "nothing was deleted: restore it from a backup (docs/recovery.md, "
                                               "\"Compaction\")",
                                               GLOVE_STORE_RECEIPTS_JOURNAL_FILE, GLOVE_STORE_CHECKPOINT_SUFFIX);
                r->mode = MODE_PLAIN;
                r->base = 0;
                memcpy(r->base_mac, param, 32);
        } else if (continues && memcmp(param, r->ckpt.covered_head, 32) == 0) {
                r->mode = MODE_TAIL;
                r->base = r->ckpt.covered_seq;
                memcpy(r->base_mac, r->ckpt.covered_head, 32);
        } else if (memcmp(param, r->ckpt.prev_param, 32) == 0) {
                r->mode = MODE_COVERED;
                r->scan_base = r->ckpt.old_end_seq - r->ckpt.old_records;
                r->base = r->ckpt.covered_seq; /* what is kept follows the checkpoint */
                memcpy(r->base_mac, r->ckpt.covered_head, 32);
                return 0;
        } else {
                return ckpt_mismatch(err, "does not continue its checkpoint (another journal's, or replaced)");
        }
        r->scan_base = r->base;
        return 0;
}

static int replay_envelope(void *userdata, uint64_t pos, const void *payload, size_t len,
                           const uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        struct glove_store_receipts *r = userdata;
        int dr = decide_mode(r, err);
        if (dr < 0)
                return dr;
        uint64_t seq = r->scan_base + pos;
        if (r->mode == MODE_COVERED && pos > r->ckpt.old_records)
                return ckpt_mismatch(err, "holds more records than the checkpoint replaced");
        if (r->mode == MODE_COVERED && seq <= r->ckpt.covered_seq)
                return 0; /* acknowledged and covered: dropped when the compaction is finished */
        _cleanup_json_ json_t *o = NULL;
        struct glove_error e = { 0 };
        const char *kind, *sid;
        int64_t n, at;
        json_t *body;
        if (glove_json_decode_canonical(payload, len, GLOVE_STORE_RECEIPTS_MAX_ENVELOPE, GLOVE_JSON_OBJECT_ONLY, &o,
                                        &e) < 0 ||
            glove_json_check_keys(o, envelope_keys, NULL, &e) < 0 ||
            glove_json_get_int(o, "sequence", NULL, 1, INT64_MAX, &n, &e) < 0 ||
            glove_json_get_int(o, "appended_at_ms", NULL, 0, INT64_MAX, &at, &e) < 0 ||
            glove_json_get_string(o, "kind", NULL, GLOVE_STORE_RECEIPTS_KIND_MAX, &kind, &e) < 0 ||
            glove_json_get_string(o, "session_id", NULL, GLOVE_STORE_ID_MAX, &sid, &e) < 0 ||
            glove_json_get_object(o, "receipt", NULL, &body, &e) < 0)
                return glove_error_set(err, EBADMSG, "receipts.bad_record", "receipt %llu: %s", (unsigned long long)seq,
                                       e.message);
        if (!kind_valid(kind) || !glove_store_id_valid(sid))
                return glove_error_set(err, EBADMSG, "receipts.bad_record", "receipt %llu: malformed kind or session id",
                                       (unsigned long long)seq);
        if (payload_domain(payload, len) != glove_store_receipts_envelope_domain(kind))
                return glove_error_set(err, EBADMSG, "receipts.bad_record",
                                       "receipt %llu: its kind does not select the domain its MAC was checked with",
                                       (unsigned long long)seq); /* unreachable for canonical bytes */
        if ((uint64_t)n != seq)
                return glove_error_set(err, EBADMSG, "receipts.sequence",
                                       "receipt %llu carries sequence %lld", (unsigned long long)seq, (long long)n);
        return keep(r, payload, len, tag, err);
}

/* Reads the 32-byte key of dirfd into key, or creates it when it is absent,
 * create is true and no journal exists (the one place a key is made: gloved's
 * first start and glove setup both come here). */
static int key_load(int dirfd, uid_t owner, bool create, uint8_t key[GLOVE_STORE_RECEIPTS_KEY_LEN], bool *created,
                    struct glove_error *err) {
        if (created)
                *created = false;
        _cleanup_close_ int fd = openat(dirfd, GLOVE_STORE_RECEIPTS_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                struct stat st;
                if (fstatat(dirfd, GLOVE_STORE_RECEIPTS_JOURNAL_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return glove_error_set(err, ENOENT, "receipts.key_missing",
                                               "%s exists but %s does not; refusing to start a new chain over it",
                                               GLOVE_STORE_RECEIPTS_JOURNAL_FILE, GLOVE_STORE_RECEIPTS_KEY_FILE);
                if (!create)
                        return glove_error_set(err, ENOENT, "receipts.key_missing", "%s does not exist",
                                               GLOVE_STORE_RECEIPTS_KEY_FILE);
                int rr = glove_digest_random(key, GLOVE_STORE_RECEIPTS_KEY_LEN, err);
                if (rr == 0)
                        rr = glove_store_file_replace(dirfd, GLOVE_STORE_RECEIPTS_KEY_FILE, key,
                                                        GLOVE_STORE_RECEIPTS_KEY_LEN, err);
                if (rr == 0 && created)
                        *created = true;
                return rr;
        }
        if (fd < 0)
                return glove_error_set(err, errno == ELOOP ? EPERM : errno, "receipts.key_insecure", "%s: %s",
                                       GLOVE_STORE_RECEIPTS_KEY_FILE, strerror(errno));
        int rr = glove_store_file_check(fd, owner, GLOVE_STORE_RECEIPTS_KEY_FILE, "receipts.key_insecure", err);
        if (rr < 0)
                return rr;
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_size != GLOVE_STORE_RECEIPTS_KEY_LEN ||
            glove_fd_read_exact(fd, key, GLOVE_STORE_RECEIPTS_KEY_LEN) < 0)
                return glove_error_set(err, EINVAL, "receipts.key_insecure", "%s must hold exactly %d bytes",
                                       GLOVE_STORE_RECEIPTS_KEY_FILE, GLOVE_STORE_RECEIPTS_KEY_LEN);
        return 0;
}

static int load_key(struct glove_store_receipts *r, uid_t owner, struct glove_error *err) {
        return key_load(r->dirfd, owner, true, r->key, NULL, err);
}

int glove_store_receipts_key_ensure(int state_dirfd, uid_t owner, bool create, bool *created,
                                      struct glove_error *err) {
        uint8_t key[GLOVE_STORE_RECEIPTS_KEY_LEN];
        int rr = key_load(state_dirfd, owner, create, key, created, err);
        explicit_bzero(key, sizeof(key));
        return rr;
}

static const char *const ack_keys[] = { "head_mac", "sequence", NULL };

static int load_ack(struct glove_store_receipts *r, struct glove_error *err) {
        _cleanup_close_ int fd = openat(r->dirfd, GLOVE_STORE_RECEIPTS_ACK_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0)
                return glove_error_set(err, errno, "receipts.io", "%s: %s", GLOVE_STORE_RECEIPTS_ACK_FILE,
                                       strerror(errno));
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int rr = glove_fd_read_bounded(fd, ACK_MAX - 1, &buf, &n, NULL);
        if (rr == -EFBIG) /* the words the JSON decoder gave when the read stopped at ACK_MAX bytes */
                return glove_error_set(err, EBADMSG, "receipts.ack_invalid", "%s: JSON text is %d bytes, the limit is %d",
                                       GLOVE_STORE_RECEIPTS_ACK_FILE, ACK_MAX, ACK_MAX - 1);
        if (rr < 0)
                return glove_error_set(err, -rr, "receipts.io", "%s: %s", GLOVE_STORE_RECEIPTS_ACK_FILE,
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
                return glove_error_set(err, EBADMSG, "receipts.ack_invalid", "%s: %s", GLOVE_STORE_RECEIPTS_ACK_FILE,
                                       e.message);
        const uint8_t *want = (uint64_t)seq == r->base                              ? r->base_mac
                              : (uint64_t)seq > r->base && (uint64_t)seq <= r->base + r->n ? r->env[seq - r->base - 1].mac
                                                                                          : NULL;
        if (!want || !glove_digest_equal(want, m, 32))
                return glove_error_set(err, EBADMSG, "receipts.ack_invalid",
                                       "%s acknowledges receipt %lld, which is not in the chain (journal truncated?)",
                                       GLOVE_STORE_RECEIPTS_ACK_FILE, (long long)seq);
        r->acked = (uint64_t)seq;
        return 0;
}

/* HMAC-SHA-256(key, domain || NUL || data[0..len)) into out (32 bytes). */
static int domain_mac(const struct glove_store_receipts *r, const char *domain, const void *data, size_t len,
                      uint8_t out[32], struct glove_error *err) {
        size_t dn = strlen(domain) + 1, n = dn + len;
        _cleanup_free_ uint8_t *buf = malloc(n);
        if (!buf)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        memcpy(buf, domain, dn);
        memcpy(buf + dn, data, len);
        return glove_digest_hmac_sha256(r->key, sizeof(r->key), buf, n, out, err);
}

static int receipts_ckpt_mac(void *ctx, const void *data, size_t len, uint8_t out[GLOVE_STORE_CHECKPOINT_MAC_LEN],
                             struct glove_error *err) {
        return domain_mac(ctx, CHECKPOINT_DOMAIN, data, len, out, err);
}

/* Rewrites the journal to the receipts kept in memory, continuing the
 * checkpoint's head. */
static int rewrite_tail(struct glove_store_receipts *r, struct glove_error *err) {
        _cleanup_free_ struct glove_store_journal_payload *p = calloc(r->n ? r->n : 1, sizeof(*p));
        if (!p)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        for (size_t i = 0; i < r->n; i++)
                p[i] = (struct glove_store_journal_payload){ .data = r->env[i].bytes, .len = r->env[i].len };
        return glove_store_journal_rewrite(r->journal, r->ckpt.covered_head, GLOVE_STORE_JOURNAL_FLAG_CONTINUES, p,
                                             r->n, r->hook, r->hook_ctx, err);
}

/* After the journal is open: the mode of an empty journal, and the
 * roll-forward of a compaction stopped after installing its checkpoint. */
static int finish_open(struct glove_store_receipts *r, struct glove_error *err) {
        int rr = decide_mode(r, err);
        if (rr == 0)
                rr = glove_store_checkpoint_remove_leftover(r->dirfd, GLOVE_STORE_RECEIPTS_JOURNAL_FILE, err);
        if (rr < 0 || r->mode != MODE_COVERED)
                return rr;
        uint8_t head[32];
        glove_store_journal_head(r->journal, head);
        if (glove_store_journal_records(r->journal) != r->ckpt.old_records ||
            memcmp(head, r->ckpt.old_end_head, 32) != 0)
                return ckpt_mismatch(err, "does not end where its checkpoint says the replaced journal ended");
        rr = rewrite_tail(r, err);
        if (rr == 0)
                r->mode = MODE_TAIL;
        return rr;
}

int glove_store_receipts_open(const struct glove_store_receipts_options *o, struct glove_store_receipts **out,
                                struct glove_error *err) {
        *out = NULL;
        struct glove_store_receipts *r = calloc(1, sizeof(*r));
        if (!r)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        r->dirfd = -1;
        r->fmt = (struct glove_store_journal_format){
                .magic = { 'G', 'L', 'V', 'R', 'C', 'P', 'T', '1' },
                .version = 1,
                .max_payload = GLOVE_STORE_RECEIPTS_MAX_ENVELOPE,
                .max_records = GLOVE_STORE_RECEIPTS_MAX_RECORDS,
                .max_bytes = GLOVE_STORE_RECEIPTS_MAX_BYTES,
                .chain = receipts_chain,
                .genesis = receipts_genesis,
                .ctx = r,
        };
        r->compact_records = o->compact_records ? o->compact_records : GLOVE_STORE_RECEIPTS_COMPACT_RECORDS;
        r->hook = o->hook;
        r->hook_ctx = o->hook_ctx;
        char path[4096];
        int rr = glove_store_dir_open_private(o->state_dir, o->owner, false, &r->dirfd, err);
        if (rr == 0 && snprintf(path, sizeof(path), "%s/%s", o->state_dir, GLOVE_STORE_RECEIPTS_JOURNAL_FILE) >=
                               (int)sizeof(path))
                rr = glove_error_set(err, ENAMETOOLONG, "receipts.io", "state directory path too long");
        if (rr == 0)
                rr = load_key(r, o->owner, err);
        if (rr == 0)
                rr = glove_store_checkpoint_read(r->dirfd, GLOVE_STORE_RECEIPTS_JOURNAL_FILE, o->owner, r->fmt.magic,
                                                   GLOVE_STORE_CHECKPOINT_HEADER_LEN + GLOVE_STORE_CHECKPOINT_MAC_LEN,
                                                   1, receipts_ckpt_mac, r, NULL, NULL, &r->ckpt, &r->have_ckpt, err);
        if (rr == 0 && r->have_ckpt && r->ckpt.entries != 0)
                rr = glove_error_set(err, EBADMSG, "checkpoint.corrupt", "a receipt checkpoint holds entries");
        uint8_t zero[32] = { 0 };
        struct glove_store_journal_open_options jo = {
                .path = path, .owner = o->owner, .create_param = o->anchor ? o->anchor : zero, .recover_torn_tail = true
        };
        struct glove_store_journal_report rep;
        if (rr == 0)
                rr = glove_store_journal_open(&r->fmt, &jo, replay_envelope, r, &r->journal, &rep, err);
        if (rr == 0)
                rr = finish_open(r, err);
        if (rr == 0) {
                if (r->have_ckpt)
                        memcpy(r->anchor, r->ckpt.origin, 32);
                else
                        glove_store_journal_param(r->journal, r->anchor);
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
                glove_store_receipts_close(r);
                return rr;
        }
        *out = r;
        return 0;
}

int glove_store_receipts_append(struct glove_store_receipts *r, const char *kind, const char *session_id,
                                  const json_t *receipt, int64_t now_ms, uint64_t *seq, struct glove_error *err) {
        if (!kind || !kind_valid(kind) || !glove_store_id_valid(session_id) || !json_is_object(receipt) ||
            now_ms < 0)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument",
                                       "a receipt needs a kind, a session id and an object body");
        if (r->broken)
                return glove_error_set(err, EIO, "journal.broken",
                                       "a compaction stopped after installing its checkpoint; restart gloved, which "
                                       "finishes it");
        uint64_t n = r->base + r->n + 1;
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
        if (len > GLOVE_STORE_RECEIPTS_MAX_ENVELOPE)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument", "envelope of %zu bytes exceeds %u",
                                       len, GLOVE_STORE_RECEIPTS_MAX_ENVELOPE);
        uint8_t mac[32];
        rr = glove_store_journal_append(r->journal, bytes, len, NULL, mac, err);
        if (rr < 0)
                return rr;
        rr = keep(r, bytes, len, mac, err);
        if (rr < 0)
                return rr;
        if (seq)
                *seq = n;
        return 0;
}

int glove_store_receipts_receipt_mac(const struct glove_store_receipts *r, const json_t *receipt, char out[65],
                                     struct glove_error *err) {
        out[0] = '\0';
        if (!r || !json_is_object(receipt))
                return glove_error_set(err, EINVAL, "receipts.invalid_argument", "a receipt MAC needs an object");
        _cleanup_json_ json_t *copy = json_copy((json_t *)receipt); /* shallow: the members are shared */
        if (!copy)
                return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
        (void)json_object_del(copy, "receipt_mac");
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        int rr = glove_json_encode_canonical(copy, &bytes, &len, err);
        if (rr < 0)
                return rr;
        uint8_t mac[32];
        rr = domain_mac(r, REFINEMENT_RECEIPT_DOMAIN, bytes, len, mac, err);
        if (rr < 0)
                return rr;
        glove_digest_hex_encode(mac, sizeof(mac), out, 65);
        return 0;
}

bool glove_store_receipts_has_room(const struct glove_store_receipts *r, size_t bytes) {
        if (bytes == 0 || bytes > GLOVE_STORE_RECEIPTS_MAX_ENVELOPE || !glove_store_journal_has_room(r->journal, bytes))
                return false;
        uint64_t records = glove_store_journal_records(r->journal) + r->reserved_records + 1;
        uint64_t size = glove_store_journal_size(r->journal) + r->reserved_bytes + bytes +
                        (r->reserved_records + 1) * GLOVE_STORE_JOURNAL_RECORD_OVERHEAD;
        return records <= r->fmt.max_records && size <= r->fmt.max_bytes;
}

int glove_store_receipts_reserve(struct glove_store_receipts *r, size_t bytes, struct glove_error *err) {
        if (!glove_store_receipts_has_room(r, bytes))
                return glove_error_set(err, ENOSPC, "start.receipts_full",
                                       "the receipt journal has no room for this session's receipt "
                                       "(%llu records and %llu bytes reserved by running sessions)",
                                       (unsigned long long)r->reserved_records, (unsigned long long)r->reserved_bytes);
        r->reserved_records++;
        r->reserved_bytes += bytes;
        return 0;
}

void glove_store_receipts_unreserve(struct glove_store_receipts *r, size_t bytes) {
        if (r->reserved_records)
                r->reserved_records--;
        r->reserved_bytes = r->reserved_bytes >= bytes ? r->reserved_bytes - bytes : 0;
}

uint64_t glove_store_receipts_head(const struct glove_store_receipts *r, uint8_t mac[32]) {
        memcpy(mac, r->n ? r->env[r->n - 1].mac : r->base_mac, 32);
        return r->base + r->n;
}

uint64_t glove_store_receipts_base(const struct glove_store_receipts *r) {
        return r->base;
}

uint64_t glove_store_receipts_journal_bytes(const struct glove_store_receipts *r) {
        return glove_store_journal_size(r->journal);
}

bool glove_store_receipts_pending(const struct glove_store_receipts *r, const char *session_id) {
        char tail[GLOVE_STORE_ID_MAX + 32];
        int tn = snprintf(tail, sizeof(tail), ",\"session_id\":\"%s\"}", session_id ? session_id : "");
        if (!session_id || tn < 0 || (size_t)tn >= sizeof(tail))
                return false;
        uint64_t first = r->acked > r->base ? r->acked - r->base : 0;
        for (size_t i = first; i < r->n; i++) {
                const struct envelope *e = &r->env[i];
                if (e->len >= (size_t)tn && memcmp(e->bytes + e->len - tn, tail, (size_t)tn) == 0)
                        return true;
        }
        return false;
}

int glove_store_receipts_compact(struct glove_store_receipts *r, struct glove_error *err) {
        if (r->broken)
                return glove_error_set(err, EIO, "journal.broken", "an earlier compaction stopped midway; restart gloved");
        if (r->acked <= r->base)
                return 0; /* nothing acknowledged since the last checkpoint */
        if (r->hook)
                r->hook(r->hook_ctx, GLOVE_STORE_COMPACT_BEGIN);
        size_t drop = (size_t)(r->acked - r->base);
        struct glove_store_checkpoint c = { 0 };
        uint8_t param[32];
        glove_store_journal_param(r->journal, param);
        memcpy(c.journal_magic, r->fmt.magic, 8);
        c.generation = r->have_ckpt ? r->ckpt.generation + 1 : 1;
        memcpy(c.origin, r->anchor, 32);
        memcpy(c.prev_param, param, 32);
        c.covered_seq = r->acked;
        memcpy(c.covered_head, r->env[drop - 1].mac, 32);
        c.old_records = glove_store_journal_records(r->journal);
        c.old_end_seq = glove_store_receipts_head(r, c.old_end_head);
        int rr = glove_store_checkpoint_write(r->dirfd, GLOVE_STORE_RECEIPTS_JOURNAL_FILE, &c, NULL,
                                                GLOVE_STORE_CHECKPOINT_HEADER_LEN + GLOVE_STORE_CHECKPOINT_MAC_LEN,
                                                receipts_ckpt_mac, r, r->hook, r->hook_ctx, err);
        if (rr < 0) {
                (void)glove_store_checkpoint_remove_leftover(r->dirfd, GLOVE_STORE_RECEIPTS_JOURNAL_FILE, NULL);
                return rr; /* the old state stands */
        }
        /* The checkpoint is the current state from here. */
        r->ckpt = c;
        r->have_ckpt = true;
        for (size_t i = 0; i < drop; i++)
                free(r->env[i].bytes);
        memmove(r->env, r->env + drop, (r->n - drop) * sizeof(*r->env));
        r->n -= drop;
        r->base = c.covered_seq;
        memcpy(r->base_mac, c.covered_head, 32);
        rr = rewrite_tail(r, err);
        if (rr < 0)
                r->broken = true;
        return rr;
}

static json_t *hex_json(const uint8_t *b) {
        char hex[65];
        glove_digest_hex_encode(b, 32, hex, sizeof(hex));
        return json_string(hex);
}

int glove_store_receipts_page(const struct glove_store_receipts *r, uint64_t after, uint64_t limit, json_t **out,
                                struct glove_error *err) {
        *out = NULL;
        if (limit < 1 || limit > GLOVE_STORE_RECEIPTS_PAGE_MAX)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument", "limit must be 1..%d",
                                       GLOVE_STORE_RECEIPTS_PAGE_MAX);
        if (after > r->base + r->n)
                return glove_error_set(err, EINVAL, "receipts.invalid_argument",
                                       "after_sequence %llu is beyond the head %llu", (unsigned long long)after,
                                       (unsigned long long)(r->base + r->n));
        if (after < r->base)
                return glove_error_set(err, ERANGE, "receipts.compacted",
                                       "receipts up to %llu were acknowledged and dropped from the journal; page from "
                                       "after_sequence %llu or later (the acknowledged ones are in Sage's archive)",
                                       (unsigned long long)r->base, (unsigned long long)r->base);
        after -= r->base;
        _cleanup_json_ json_t *list = json_array();
        if (!list)
                return -ENOMEM;
        size_t bytes = 0;
        uint64_t i = after;
        for (; i < r->n && i - after < limit; i++) {
                const struct envelope *e = &r->env[i];
                if (i > after && bytes + e->len > GLOVE_STORE_RECEIPTS_PAGE_BYTES)
                        break;
                json_t *env = json_loadb(e->bytes, e->len, JSON_REJECT_DUPLICATES, NULL);
                json_t *item = env ? json_pack("{s:o,s:o,s:I}", "envelope", env, "mac", hex_json(e->mac), "sequence",
                                               (json_int_t)(r->base + i + 1))
                                   : NULL;
                if (!item || json_array_append_new(list, item) < 0)
                        return glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
                bytes += e->len;
        }
        uint8_t head[32];
        uint64_t hs = glove_store_receipts_head(r, head);
        *out = json_pack("{s:I,s:o,s:O,s:{s:o,s:I},s:b,s:{s:I,s:I}}", "acknowledged_sequence", (json_int_t)r->acked,
                         "anchor", hex_json(r->anchor), "envelopes", list, "head", "mac", hex_json(head), "sequence",
                         (json_int_t)hs, "more", i < r->n, "recovery", "torn_bytes", (json_int_t)r->torn_bytes,
                         "torn_offset", (json_int_t)r->torn_offset);
        return *out ? 0 : glove_error_set(err, ENOMEM, "receipts.io", "out of memory");
}

int glove_store_receipts_find(const struct glove_store_receipts *r, const char *kind, const char *session_id,
                                uint64_t *seq, json_t **receipt) {
        if (receipt)
                *receipt = NULL;
        char tail[GLOVE_STORE_ID_MAX + 32];
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
                *seq = r->base + i + 1;
                if (receipt)
                        *receipt = json_incref(json_object_get(env, "receipt"));
                return 1;
        }
        return 0;
}

int glove_store_receipts_ack(struct glove_store_receipts *r, uint64_t sequence, const char *head_mac,
                               struct glove_error *err) {
        uint8_t head[32], m[32];
        uint64_t hs = glove_store_receipts_head(r, head);
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
        int rr = glove_store_file_replace(r->dirfd, GLOVE_STORE_RECEIPTS_ACK_FILE, buf, (size_t)n, err);
        if (rr < 0)
                return rr;
        r->acked = hs;
        /* Acknowledged receipts leave the journal once enough gathered
         * (the acknowledgement stands whatever the compaction does). */
        if (r->n >= r->compact_records)
                (void)glove_store_receipts_compact(r, NULL);
        return 0;
}

void glove_store_receipts_recovery(const struct glove_store_receipts *r, uint64_t *torn_bytes,
                                     uint64_t *torn_offset) {
        *torn_bytes = r->torn_bytes;
        *torn_offset = r->torn_offset;
}

void glove_store_receipts_close(struct glove_store_receipts *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n; i++)
                free(r->env[i].bytes);
        free(r->env);
        glove_store_journal_close(r->journal);
        if (r->dirfd >= 0)
                close(r->dirfd);
        explicit_bzero(r->key, sizeof(r->key));
        free(r);
}

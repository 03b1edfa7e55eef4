/* SPDX-License-Identifier: Apache-2.0 */
/* Chained record journals: header, scan, seal, open, append (see
 * journal.h). The crash-safe rewrite is in journal_rewrite.c. */
#include "glove/store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/store/dirs.h"
#include "journal_internal.h"

#define SEAL_MAGIC "GLVSEAL1"
#define SEAL_DOMAIN "glove.journal.seal.v1"

void glove_store_journal_header_build(const struct glove_store_journal_format *fmt,
                                        const uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN],
                                        uint8_t out[GLOVE_STORE_JOURNAL_HEADER_LEN]) {
        memset(out, 0, GLOVE_STORE_JOURNAL_HEADER_LEN);
        memcpy(out, fmt->magic, 8);
        glove_put_be32(out + 8, fmt->version);
        glove_put_be32(out + 12, fmt->max_payload);
        glove_put_be32(out + 16, fmt->max_records);
        glove_put_be64(out + 24, fmt->max_bytes);
        memcpy(out + 32, param, GLOVE_STORE_JOURNAL_PARAM_LEN);
}

void glove_store_journal_header_build_flags(const struct glove_store_journal_format *fmt,
                                              const uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN], uint32_t flags,
                                              uint8_t out[GLOVE_STORE_JOURNAL_HEADER_LEN]) {
        glove_store_journal_header_build(fmt, param, out);
        glove_put_be32(out + 20, flags);
}

static int check_header(const struct glove_store_journal_format *fmt, const uint8_t *h, size_t len,
                        struct glove_error *err) {
        if (len < GLOVE_STORE_JOURNAL_HEADER_LEN)
                return glove_error_set(err, EBADMSG, "journal.bad_header",
                                       "the journal is %zu bytes, shorter than its %d-byte header", len,
                                       GLOVE_STORE_JOURNAL_HEADER_LEN);
        if (memcmp(h, fmt->magic, 8) != 0)
                return glove_error_set(err, EBADMSG, "journal.bad_header", "the journal header has the wrong magic");
        if (glove_get_be32(h + 8) != fmt->version)
                return glove_error_set(err, EBADMSG, "journal.bad_header", "unsupported journal version %u",
                                       glove_get_be32(h + 8));
        if (glove_get_be32(h + 12) != fmt->max_payload || glove_get_be32(h + 16) != fmt->max_records ||
            (glove_get_be32(h + 20) & ~(uint32_t)GLOVE_STORE_JOURNAL_FLAG_CONTINUES) != 0 ||
            glove_get_be64(h + 24) != fmt->max_bytes)
                return glove_error_set(err, EBADMSG, "journal.bad_header",
                                       "the journal header's bounds differ from this format's");
        return 0;
}

int glove_store_journal_scan(const struct glove_store_journal_format *fmt, const void *data, size_t len,
                               glove_store_journal_record_fn fn, void *userdata,
                               struct glove_store_journal_scan *out, struct glove_error *err) {
        const uint8_t *p = data;
        memset(out, 0, sizeof(*out));
        int r = check_header(fmt, p, len, err);
        if (r < 0)
                return r;
        if (len > fmt->max_bytes)
                return glove_error_set(err, EFBIG, "journal.too_large", "the journal is %zu bytes; the bound is %llu",
                                       len, (unsigned long long)fmt->max_bytes);
        memcpy(out->header, p, GLOVE_STORE_JOURNAL_HEADER_LEN);
        r = fmt->genesis(fmt->ctx, out->header, out->head, err);
        if (r < 0)
                return r;
        memcpy(out->prev_head, out->head, GLOVE_STORE_JOURNAL_TAG_LEN);
        size_t off = GLOVE_STORE_JOURNAL_HEADER_LEN;
        out->end = out->prev_end = off;
        while (off < len) {
                size_t rest = len - off;
                if (rest < 4)
                        break;
                uint32_t n = glove_get_be32(p + off);
                if (n == 0 || n > fmt->max_payload)
                        return glove_error_set(err, EBADMSG, "journal.bad_length",
                                               "record %llu at byte %zu has length %u (allowed 1..%u)",
                                               (unsigned long long)out->records + 1, off, n, fmt->max_payload);
                if (rest < (size_t)n + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD)
                        break;
                if (out->records >= fmt->max_records)
                        return glove_error_set(err, EBADMSG, "journal.too_many_records",
                                               "the journal holds more than %u records", fmt->max_records);
                uint64_t seq = out->records + 1;
                uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN];
                r = fmt->chain(fmt->ctx, out->head, seq, p + off + 4, n, tag, err);
                if (r < 0)
                        return r;
                if (!glove_digest_equal(tag, p + off + 4 + n, sizeof(tag)))
                        return glove_error_set(err, EBADMSG, "journal.chain_mismatch",
                                               "record %llu at byte %zu does not follow the chain "
                                               "(corrupt, reordered or duplicated)",
                                               (unsigned long long)seq, off);
                if (fn) {
                        r = fn(userdata, seq, p + off + 4, n, tag, err);
                        if (r < 0)
                                return r;
                }
                memcpy(out->prev_head, out->head, sizeof(tag));
                memcpy(out->head, tag, sizeof(tag));
                out->prev_end = out->end;
                off += (size_t)n + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD;
                out->end = off;
                out->records = seq;
        }
        out->torn_bytes = len - off;
        return 0;
}

static int seal_check(const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], const uint8_t *slot, uint8_t out[8],
                      struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        int r = glove_digest_sha256_init(&ctx, err);
        if (r == 0)
                r = glove_digest_sha256_update(ctx, SEAL_DOMAIN, sizeof(SEAL_DOMAIN), err);
        if (r == 0)
                r = glove_digest_sha256_update(ctx, header, GLOVE_STORE_JOURNAL_HEADER_LEN, err);
        if (r == 0)
                r = glove_digest_sha256_update(ctx, slot, 56, err);
        if (r == 0)
                r = glove_digest_sha256_final(ctx, d, err);
        if (r == 0)
                memcpy(out, d, 8);
        return r;
}

int glove_store_journal_seal_slot(const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], uint64_t records,
                                    uint64_t size, const uint8_t head[GLOVE_STORE_JOURNAL_TAG_LEN],
                                    uint8_t out[GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN], struct glove_error *err) {
        memcpy(out, SEAL_MAGIC, 8);
        glove_put_be64(out + 8, records);
        glove_put_be64(out + 16, size);
        memcpy(out + 24, head, GLOVE_STORE_JOURNAL_TAG_LEN);
        return seal_check(header, out, out + 56, err);
}

int glove_store_journal_seal_verify(const struct glove_store_journal_scan *scan, const void *seal,
                                      size_t seal_len, bool *unsealed, struct glove_error *err) {
        const uint8_t *s = seal;
        const uint8_t *best = NULL;
        bool valid[2] = { false, false };
        *unsealed = false;
        if (seal_len != GLOVE_STORE_JOURNAL_SEAL_LEN)
                return glove_error_set(err, EBADMSG, "journal.seal_corrupt", "the seal is %zu bytes, not %d", seal_len,
                                       GLOVE_STORE_JOURNAL_SEAL_LEN);
        for (int i = 0; i < 2; i++) {
                const uint8_t *slot = s + i * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE;
                uint8_t check[8];
                int r = seal_check(scan->header, slot, check, err);
                if (r < 0)
                        return r;
                if (memcmp(slot, SEAL_MAGIC, 8) != 0 || !glove_digest_equal(check, slot + 56, 8))
                        continue;
                valid[i] = true;
                if (!best || glove_get_be64(slot + 8) > glove_get_be64(best + 8))
                        best = slot;
        }
        if (!best)
                return glove_error_set(err, EBADMSG, "journal.seal_corrupt",
                                       "no seal slot is valid for this journal header");
        uint64_t count = glove_get_be64(best + 8), size = glove_get_be64(best + 16);
        const uint8_t *head = best + 24;
        int bi = best == s ? 0 : 1, oi = 1 - bi;
        const uint8_t *other = s + oi * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE;
        if ((int)(count % 2) != bi)
                return glove_error_set(err, EBADMSG, "journal.seal_corrupt",
                                       "the seal slot at offset %d commits %llu records, which belong in the other slot",
                                       bi * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE, (unsigned long long)count);
        /*
         * The other slot. Appends write the slot for n records only after
         * record n is synced, alternately, so after any crash it holds
         * count - 1 records (the genesis slot for count 1), or it was being
         * written for count + 1 when the crash came, and then record
         * count + 1 is in the journal. A zero or invalid slot where a written
         * one is expected, or an older count, means a newest slot was wiped
         * and the journal cut to match: an answered record was lost.
         */
        bool blank = true;
        for (size_t i = 0; i < GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN; i++)
                blank = blank && other[i] == 0;
        bool other_ok = count == 0 ? blank : valid[oi] && glove_get_be64(other + 8) == count - 1;
        if (!other_ok && scan->records != count + 1)
                return glove_error_set(err, EBADMSG, "journal.record_lost",
                                       "the seal's newest valid slot commits %llu records but its other slot %s: a "
                                       "newer sealed record was wiped (a crash cannot leave this); the journal holds "
                                       "%llu records",
                                       (unsigned long long)count,
                                       blank ? "is zeroed where the slot of the previous record belongs"
                                             : valid[oi] ? "commits a count that is not the previous one"
                                                         : "is neither valid nor zero",
                                       (unsigned long long)scan->records);
        if (scan->records == count && scan->end == size &&
            glove_digest_equal(scan->head, head, GLOVE_STORE_JOURNAL_TAG_LEN))
                return 0;
        if (count < UINT64_MAX && scan->records == count + 1 && scan->prev_end == size &&
            glove_digest_equal(scan->prev_head, head, GLOVE_STORE_JOURNAL_TAG_LEN)) {
                *unsealed = true;
                return 0;
        }
        return glove_error_set(err, EBADMSG, "journal.resized",
                               "the journal holds %llu records in %llu bytes but its seal committed %llu records "
                               "in %llu bytes (truncated, replaced or grown behind gloved)",
                               (unsigned long long)scan->records, (unsigned long long)scan->end,
                               (unsigned long long)count, (unsigned long long)size);
}

/* ---- files ---- */

int journal_read_all_at(int fd, void *buf, size_t len) {
        size_t done = 0;
        while (done < len) {
                ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EPIPE;
                done += (size_t)n;
        }
        return 0;
}

int journal_write_all_at(int fd, const void *buf, size_t len, off_t off) {
        size_t done = 0;
        while (done < len) {
                ssize_t n = pwrite(fd, (const uint8_t *)buf + done, len - done, off + (off_t)done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                done += (size_t)n;
        }
        return 0;
}

int journal_io_error(struct glove_error *err, int r, const char *what, const char *path) {
        return glove_error_set(err, r, "journal.io", "%s: %s: %s", path, what, strerror(r < 0 ? -r : r));
}

/* Reads the whole seal (exactly GLOVE_STORE_JOURNAL_SEAL_LEN bytes). */
static int read_seal(int fd, const char *path, uint8_t seal[GLOVE_STORE_JOURNAL_SEAL_LEN], struct glove_error *err) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return journal_io_error(err, -errno, "fstat", path);
        if (st.st_size != GLOVE_STORE_JOURNAL_SEAL_LEN)
                return glove_error_set(err, EBADMSG, "journal.seal_corrupt", "%s%s is %lld bytes, not %d", path,
                                       GLOVE_STORE_JOURNAL_SEAL_SUFFIX, (long long)st.st_size,
                                       GLOVE_STORE_JOURNAL_SEAL_LEN);
        int r = journal_read_all_at(fd, seal, GLOVE_STORE_JOURNAL_SEAL_LEN);
        return r < 0 ? journal_io_error(err, r, "read seal", path) : 0;
}

/* True when the seal was never written (all zero) or every valid slot
 * commits zero records: nothing was ever committed. */
static bool seal_commits_nothing(const uint8_t *seal, size_t len) {
        if (len != GLOVE_STORE_JOURNAL_SEAL_LEN)
                return len == 0;
        for (int i = 0; i < 2; i++) {
                const uint8_t *slot = seal + i * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE;
                if (memcmp(slot, SEAL_MAGIC, 8) == 0 && glove_get_be64(slot + 8) != 0)
                        return false;
        }
        return true;
}

int journal_split_names(const char *path, struct names *n, struct glove_error *err) {
        n->path = path;
        size_t len = strlen(path);
        const char *slash = strrchr(path, '/');
        if (path[0] != '/' || !slash || slash[1] == '\0' || len >= sizeof(n->dir))
                return glove_error_set(err, EINVAL, "journal.parent_insecure", "%s: a journal path must be absolute",
                                       path);
        const char *b = slash + 1;
        if (strlen(b) >= sizeof(n->base) - 8 || strcmp(b, ".") == 0 || strcmp(b, "..") == 0)
                return glove_error_set(err, EINVAL, "journal.parent_insecure", "%s: bad journal file name", path);
        snprintf(n->base, sizeof(n->base), "%s", b);
        snprintf(n->seal, sizeof(n->seal), "%s%s", b, GLOVE_STORE_JOURNAL_SEAL_SUFFIX);
        snprintf(n->tmp, sizeof(n->tmp), ".%s.new", b);
        snprintf(n->cjournal, sizeof(n->cjournal), ".%s.compact", b);
        snprintf(n->cseal, sizeof(n->cseal), ".%s%s.compact", b, GLOVE_STORE_JOURNAL_SEAL_SUFFIX);
        size_t dl = (size_t)(slash - path);
        memcpy(n->dir, path, dl ? dl : 1);
        n->dir[dl ? dl : 1] = '\0';
        return 0;
}

/* Creates seal (zero records) and journal (header only), durably. */
static int create_journal(const struct glove_store_journal_format *fmt, const struct names *n, int dirfd,
                          int seal_fd, const uint8_t *param, struct glove_error *err) {
        uint8_t p[GLOVE_STORE_JOURNAL_PARAM_LEN];
        uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], genesis[GLOVE_STORE_JOURNAL_TAG_LEN];
        uint8_t seal[GLOVE_STORE_JOURNAL_SEAL_LEN] = { 0 };
        if (param)
                memcpy(p, param, sizeof(p));
        else if (glove_digest_random(p, sizeof(p), err) < 0)
                return -EIO;
        glove_store_journal_header_build(fmt, p, header);
        int r = fmt->genesis(fmt->ctx, header, genesis, err);
        if (r < 0)
                return r;
        r = glove_store_journal_seal_slot(header, 0, GLOVE_STORE_JOURNAL_HEADER_LEN, genesis, seal, err);
        if (r < 0)
                return r;
        r = journal_write_all_at(seal_fd, seal, sizeof(seal), 0);
        if (r == 0 && ftruncate(seal_fd, sizeof(seal)) < 0)
                r = -errno;
        if (r == 0 && fsync(seal_fd) < 0)
                r = -errno;
        if (r < 0)
                return journal_io_error(err, r, "write seal", n->path);
        (void)unlinkat(dirfd, n->tmp, 0); /* a leftover of an interrupted creation; we hold the lock */
        r = glove_file_replace(dirfd, n->base, header, sizeof(header), 0600, GLOVE_FILE_REPLACE_SYNC_DIR, NULL);
        if (r < 0)
                return journal_io_error(err, r, "create", n->path);
        return 0;
}

static int lock_seal(int fd, const char *path, struct glove_error *err) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                return 0;
        if (errno == EWOULDBLOCK)
                return glove_error_set(err, EBUSY, "journal.locked",
                                       "%s is locked by another process (is another gloved using it?)", path);
        return journal_io_error(err, -errno, "flock", path);
}

static int open_at(int dirfd, const char *name, int flags, mode_t mode, const char *path, int *out,
                   struct glove_error *err) {
        /* O_NONBLOCK: a FIFO planted in place of a journal must not block the
         * open (it is then refused as not a regular file). */
        *out = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
        if (*out >= 0 || errno == ENOENT)
                return 0;
        if (errno == ELOOP)
                return glove_error_set(err, EPERM, "journal.file_insecure", "%s/%s is a symbolic link", path, name);
        return journal_io_error(err, -errno, "open", path);
}

/* Opens seal and journal, creating them when nothing was ever committed. */
static int open_files(const struct glove_store_journal_format *fmt, const struct glove_store_journal_open_options *o,
                      const struct names *n, int dirfd, int *jfd, int *sfd, bool *created, bool *replaced,
                      struct glove_error *err) {
        int r = open_at(dirfd, n->seal, O_RDWR, 0, n->path, sfd, err);
        if (r == 0)
                r = open_at(dirfd, n->base, O_RDWR, 0, n->path, jfd, err);
        if (r < 0)
                return r;
        if (*jfd >= 0 && *sfd < 0)
                return glove_error_set(err, ENOENT, "journal.seal_missing",
                                       "%s exists but its seal %s%s is missing", n->path, n->path,
                                       GLOVE_STORE_JOURNAL_SEAL_SUFFIX);
        if (*jfd >= 0)
                return lock_seal(*sfd, n->path, err);
        *replaced = *sfd >= 0;
        if (*sfd < 0) {
                *sfd = openat(dirfd, n->seal, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (*sfd < 0)
                        return errno == EEXIST ? glove_error_set(err, EBUSY, "journal.locked",
                                                                 "%s is being created by another process", n->path)
                                               : journal_io_error(err, -errno, "create seal", n->path);
        }
        r = lock_seal(*sfd, n->path, err);
        if (r < 0)
                return r;
        r = glove_store_file_check(*sfd, o->owner, n->seal, "journal.file_insecure", err);
        if (r < 0)
                return r;
        struct stat st;
        uint8_t seal[GLOVE_STORE_JOURNAL_SEAL_LEN];
        if (fstat(*sfd, &st) < 0)
                return journal_io_error(err, -errno, "fstat", n->path);
        size_t slen = st.st_size == GLOVE_STORE_JOURNAL_SEAL_LEN ? GLOVE_STORE_JOURNAL_SEAL_LEN : 0;
        if (st.st_size != 0 && slen == 0)
                return glove_error_set(err, EBADMSG, "journal.seal_corrupt", "%s%s has the wrong size", n->path,
                                       GLOVE_STORE_JOURNAL_SEAL_SUFFIX);
        if (slen && (r = journal_read_all_at(*sfd, seal, slen)) < 0)
                return journal_io_error(err, r, "read seal", n->path);
        if (!seal_commits_nothing(seal, slen))
                return glove_error_set(err, ENOENT, "journal.missing",
                                       "%s is missing but its seal records committed records", n->path);
        r = create_journal(fmt, n, dirfd, *sfd, o->create_param, err);
        if (r < 0)
                return r;
        *created = true;
        return open_at(dirfd, n->base, O_RDWR, 0, n->path, jfd, err) < 0 || *jfd < 0
                       ? journal_io_error(err, -ENOENT, "reopen", n->path)
                       : 0;
}

/* True when some slot of seal (1024 bytes) is a valid slot for header. */
bool journal_seal_fits_header(const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], const uint8_t *seal) {
        for (int i = 0; i < 2; i++) {
                const uint8_t *slot = seal + i * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE;
                uint8_t check[8];
                if (memcmp(slot, SEAL_MAGIC, 8) == 0 && seal_check(header, slot, check, NULL) == 0 &&
                    glove_digest_equal(check, slot + 56, 8))
                        return true;
        }
        return false;
}

/* Keeps the bytes of a torn tail before they are cut: appends them to
 * NAME.torn next to the journal (mode 0600, created if missing) and syncs
 * it, so the operator keeps the evidence. Returns 0 or a negative errno with
 * err set. */
static int keep_torn(int dirfd, const struct names *n, const uint8_t *bytes, size_t len, struct glove_error *err) {
        char name[sizeof(n->base) + 8];
        snprintf(name, sizeof(name), "%s.torn", n->base);
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return journal_io_error(err, -errno, "keep the incomplete last record in .torn", n->path);
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
                return glove_error_set(err, EPERM, "journal.file_insecure",
                                       "%s.torn is not a private regular file of gloved's user", n->path);
        int r = glove_fd_write_all(fd, bytes, len);
        if (r < 0)
                return journal_io_error(err, r, "keep the incomplete last record in .torn", n->path);
        if (fdatasync(fd) < 0 || fsync(dirfd) < 0)
                return journal_io_error(err, -errno, "sync .torn", n->path);
        return 0;
}

/* The buffer a journal is read into: anonymous memory mapped with
 * MAP_POPULATE, so that a full journal (up to 64 MiB) is faulted in at once
 * rather than one page fault per 4 KiB as read(2) first touches it. */
struct mapping {
        void *data;
        size_t len;
};

static void unmapp(struct mapping *m) {
        if (m->data && m->data != MAP_FAILED)
                munmap(m->data, m->len);
}

static int load(struct glove_store_journal *j, const struct glove_store_journal_open_options *o,
                const struct names *n, int dirfd, glove_store_journal_record_fn fn, void *userdata,
                struct glove_store_journal_report *rep, struct glove_error *err) {
        struct stat st;
        if (fstat(j->fd, &st) < 0)
                return journal_io_error(err, -errno, "fstat", o->path);
        if ((uint64_t)st.st_size > j->fmt->max_bytes)
                return glove_error_set(err, EFBIG, "journal.too_large", "%s is %lld bytes; the bound is %llu", o->path,
                                       (long long)st.st_size, (unsigned long long)j->fmt->max_bytes);
        size_t len = (size_t)st.st_size;
        _cleanup_(unmapp) struct mapping map = { .len = len ? len : 1 };
        map.data = mmap(NULL, map.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (map.data == MAP_FAILED)
                return glove_error_set(err, ENOMEM, "journal.no_memory", "out of memory reading %s", o->path);
        uint8_t *data = map.data;
        int r = journal_read_all_at(j->fd, data, len);
        if (r < 0)
                return r == -EPIPE ? glove_error_set(err, EBADMSG, "journal.resized", "%s shrank while being read",
                                                     o->path)
                                   : journal_io_error(err, r, "read", o->path);
        struct glove_store_journal_scan scan;
        r = glove_store_journal_scan(j->fmt, data, len, fn, userdata, &scan, err);
        if (r < 0)
                return r;
        if (scan.torn_bytes && !o->recover_torn_tail)
                return glove_error_set(err, EBADMSG, "journal.truncated",
                                       "%s ends in an incomplete record: %llu bytes at offset %llu after record %llu",
                                       o->path, (unsigned long long)scan.torn_bytes, (unsigned long long)scan.end,
                                       (unsigned long long)scan.records);
        uint8_t seal[GLOVE_STORE_JOURNAL_SEAL_LEN];
        r = read_seal(j->seal_fd, o->path, seal, err);
        if (r < 0)
                return r;
        bool unsealed = false;
        r = glove_store_journal_seal_verify(&scan, seal, sizeof(seal), &unsealed, err);
        if (r < 0)
                return r;
        if (scan.torn_bytes) {
                r = keep_torn(dirfd, n, data + scan.end, (size_t)scan.torn_bytes, err);
                if (r < 0)
                        return r;
                if (ftruncate(j->fd, (off_t)scan.end) < 0 || fsync(j->fd) < 0)
                        return journal_io_error(err, -errno, "cut the incomplete last record", o->path);
                if (rep) {
                        rep->torn_bytes = scan.torn_bytes;
                        rep->torn_offset = scan.end;
                }
        }
        if (rep)
                rep->unsealed_record = unsealed;
        j->unsealed = unsealed;
        memcpy(j->header, scan.header, sizeof(j->header));
        memcpy(j->head, scan.head, sizeof(j->head));
        j->records = scan.records;
        j->size = scan.end;
        return 0;
}

int glove_store_journal_open(const struct glove_store_journal_format *fmt,
                               const struct glove_store_journal_open_options *opts,
                               glove_store_journal_record_fn fn, void *userdata,
                               struct glove_store_journal **out, struct glove_store_journal_report *report,
                               struct glove_error *err) {
        struct names n;
        *out = NULL;
        if (report)
                memset(report, 0, sizeof(*report));
        int r = journal_split_names(opts->path, &n, err);
        if (r < 0)
                return r;
        _cleanup_close_ int dirfd = -1;
        r = glove_store_dir_open_private(n.dir, opts->owner, false, &dirfd, err);
        if (r < 0) {
                glove_error_prefix(err, "session or receipt journal parent");
                return r;
        }
        struct glove_store_journal *j = calloc(1, sizeof(*j));
        if (!j)
                return glove_error_set(err, ENOMEM, "journal.no_memory", "out of memory");
        j->fmt = fmt;
        j->fd = j->seal_fd = j->dirfd = -1;
        bool created = false, replaced = false;
        r = open_files(fmt, opts, &n, dirfd, &j->fd, &j->seal_fd, &created, &replaced, err);
        if (r == 0)
                r = journal_resolve_rewrite(&n, dirfd, j->fd, &j->seal_fd, opts->owner, err);
        if (r == 0)
                r = glove_store_file_check(j->seal_fd, opts->owner, n.seal, "journal.file_insecure", err);
        if (r == 0)
                r = glove_store_file_check(j->fd, opts->owner, n.base, "journal.file_insecure", err);
        if (r == 0)
                r = load(j, opts, &n, dirfd, fn, userdata, report, err);
        if (r < 0) {
                glove_store_journal_close(j);
                return r;
        }
        if (report) {
                report->created = created;
                report->seal_replaced = created && replaced;
        }
        if (!(j->path = strdup(opts->path))) {
                glove_store_journal_close(j);
                return glove_error_set(err, ENOMEM, "journal.no_memory", "out of memory");
        }
        j->dirfd = TAKE_FD(dirfd);
        *out = j;
        return 0;
}

bool glove_store_journal_has_room(const struct glove_store_journal *j, size_t len) {
        if (len == 0 || len > j->fmt->max_payload || j->records >= j->fmt->max_records)
                return false;
        return j->size + len + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD <= j->fmt->max_bytes;
}

int glove_store_journal_append(struct glove_store_journal *j, const void *payload, size_t len, uint64_t *seq,
                                 uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        if (j->broken)
                return glove_error_set(err, EIO, "journal.broken",
                                       "an earlier write to this journal failed; restart gloved");
        if (len == 0 || len > j->fmt->max_payload)
                return glove_error_set(err, EINVAL, "journal.bad_length", "record of %zu bytes (allowed 1..%u)", len,
                                       j->fmt->max_payload);
        if (!glove_store_journal_has_room(j, len))
                return glove_error_set(err, ENOSPC, "journal.full",
                                       "the journal is full (%llu of %u records, %llu of %llu bytes)",
                                       (unsigned long long)j->records, j->fmt->max_records,
                                       (unsigned long long)j->size, (unsigned long long)j->fmt->max_bytes);
        struct stat st;
        if (fstat(j->fd, &st) < 0)
                return glove_error_set(err, errno, "journal.io", "fstat: %s", strerror(errno));
        if ((uint64_t)st.st_size != j->size) {
                j->broken = true;
                return glove_error_set(err, EBADMSG, "journal.resized",
                                       "the journal changed size behind gloved (%lld bytes, expected %llu)",
                                       (long long)st.st_size, (unsigned long long)j->size);
        }
        if (j->unsealed) {
                uint8_t slot[GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN];
                /* The record accepted unsealed at open gets its slot first,
                 * so the seal keeps holding the slots of the last two
                 * records (what start checks: journal.record_lost). Before the
                 * new record: a crash in between leaves a consistent seal. */
                int r = glove_store_journal_seal_slot(j->header, j->records, j->size, j->head, slot, err);
                if (r == 0)
                        r = journal_write_all_at(j->seal_fd, slot, sizeof(slot),
                                         (off_t)((j->records % 2) * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE));
                if (r == 0 && fdatasync(j->seal_fd) < 0)
                        r = -errno;
                if (r < 0) {
                        j->broken = true;
                        return glove_error_set(err, r < 0 ? -r : EIO, "journal.io", "seal: %s", strerror(-r));
                }
                j->unsealed = false;
        }
        uint8_t t[GLOVE_STORE_JOURNAL_TAG_LEN];
        int r = j->fmt->chain(j->fmt->ctx, j->head, j->records + 1, payload, len, t, err);
        if (r < 0)
                return r;
        size_t total = len + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD;
        _cleanup_free_ uint8_t *rec = malloc(total);
        if (!rec)
                return glove_error_set(err, ENOMEM, "journal.no_memory", "out of memory");
        glove_put_be32(rec, (uint32_t)len);
        memcpy(rec + 4, payload, len);
        memcpy(rec + 4 + len, t, sizeof(t));
        r = journal_write_all_at(j->fd, rec, total, (off_t)j->size);
        if (r == 0 && fdatasync(j->fd) < 0)
                r = -errno;
        if (r < 0) {
                /* Best effort to leave no partial record; either way no
                 * further append is trusted (fail closed). */
                if (ftruncate(j->fd, (off_t)j->size) == 0)
                        (void)fdatasync(j->fd);
                j->broken = true;
                return glove_error_set(err, -r, "journal.io", "append: %s", strerror(-r));
        }
        uint8_t slot[GLOVE_STORE_JOURNAL_SEAL_SLOT_LEN];
        uint64_t n = j->records + 1;
        r = glove_store_journal_seal_slot(j->header, n, j->size + total, t, slot, err);
        if (r < 0) {
                j->broken = true;
                return r;
        }
        r = journal_write_all_at(j->seal_fd, slot, sizeof(slot), (off_t)((n % 2) * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE));
        if (r == 0 && fdatasync(j->seal_fd) < 0)
                r = -errno;
        /* The record is durable either way; a failed seal leaves it as the one
         * unsealed record that restart accepts, but no further appends. */
        j->records = n;
        j->size += total;
        memcpy(j->head, t, sizeof(t));
        if (r < 0) {
                j->broken = true;
                return glove_error_set(err, -r, "journal.io", "seal: %s", strerror(-r));
        }
        if (seq)
                *seq = n;
        if (tag)
                memcpy(tag, t, sizeof(t));
        return 0;
}

uint32_t glove_store_journal_flags(const struct glove_store_journal *j) {
        return glove_get_be32(j->header + 20);
}

uint64_t glove_store_journal_records(const struct glove_store_journal *j) {
        return j->records;
}

uint64_t glove_store_journal_size(const struct glove_store_journal *j) {
        return j->size;
}

void glove_store_journal_head(const struct glove_store_journal *j, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN]) {
        memcpy(out, j->head, GLOVE_STORE_JOURNAL_TAG_LEN);
}

void glove_store_journal_param(const struct glove_store_journal *j, uint8_t out[GLOVE_STORE_JOURNAL_PARAM_LEN]) {
        memcpy(out, j->header + 32, GLOVE_STORE_JOURNAL_PARAM_LEN);
}

void glove_store_journal_close(struct glove_store_journal *j) {
        if (!j)
                return;
        if (j->fd >= 0)
                close(j->fd);
        if (j->seal_fd >= 0)
                close(j->seal_fd); /* releases the flock */
        if (j->dirfd >= 0)
                close(j->dirfd);
        free(j->path);
        free(j);
}

int glove_store_journal_chain_sha256(const char *domain, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], uint64_t seq,
                                     const void *payload, size_t len, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN],
                                     struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *d = NULL;
        uint8_t num[12];
        glove_put_be64(num, seq);
        glove_put_be32(num + 8, (uint32_t)len);
        int r = glove_digest_sha256_init(&d, err);
        if (r == 0)
                r = glove_digest_sha256_update(d, domain, strlen(domain) + 1, err);
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

int glove_store_journal_genesis_sha256(const char *domain, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                                       uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *d = NULL;
        int r = glove_digest_sha256_init(&d, err);
        if (r == 0)
                r = glove_digest_sha256_update(d, domain, strlen(domain) + 1, err);
        if (r == 0)
                r = glove_digest_sha256_update(d, header, GLOVE_STORE_JOURNAL_HEADER_LEN, err);
        if (r == 0)
                r = glove_digest_sha256_final(d, out, err);
        return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Authenticated, chained journal checkpoints (see checkpoint.h). */
#include "glove/store/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/store/dirs.h"

#define MAGIC "GLVCKPT1"
#define VERSION 1u
#define WHAT_TO_DO                                                                                                     \
        "; nothing was deleted: restore the checkpoint and journal from a backup, or stop gloved and move the "     \
        "journal, its .seal and .ckpt away to start empty (docs/recovery.md, \"Compaction\")"

int glove_store_checkpoint_body_add(struct glove_store_checkpoint_body *b, const void *payload, size_t len,
                                      struct glove_error *err) {
        if (len == 0 || len > UINT32_MAX)
                return glove_error_set(err, EINVAL, "checkpoint.corrupt", "a checkpoint entry of %zu bytes", len);
        if (b->len + 4 + len > b->cap) {
                size_t cap = b->cap ? b->cap : 64 * 1024;
                while (cap < b->len + 4 + len)
                        cap *= 2;
                uint8_t *d = realloc(b->data, cap);
                if (!d)
                        return glove_error_set(err, ENOMEM, "checkpoint.no_memory", "out of memory");
                b->data = d;
                b->cap = cap;
        }
        glove_put_be32(b->data + b->len, (uint32_t)len);
        memcpy(b->data + b->len + 4, payload, len);
        b->len += 4 + len;
        b->entries++;
        return 0;
}

void glove_store_checkpoint_body_free(struct glove_store_checkpoint_body *b) {
        free(b->data);
        *b = (struct glove_store_checkpoint_body){ 0 };
}

static void names(const char *base, char name[300], char tmp[310]) {
        snprintf(name, 300, "%s%s", base, GLOVE_STORE_CHECKPOINT_SUFFIX);
        snprintf(tmp, 310, ".%s%s.new", base, GLOVE_STORE_CHECKPOINT_SUFFIX);
}

static void header_build(const struct glove_store_checkpoint *c, uint64_t body_len,
                         uint8_t h[GLOVE_STORE_CHECKPOINT_HEADER_LEN]) {
        memset(h, 0, GLOVE_STORE_CHECKPOINT_HEADER_LEN);
        memcpy(h, MAGIC, 8);
        memcpy(h + 8, c->journal_magic, 8);
        glove_put_be32(h + 16, VERSION);
        glove_put_be64(h + 24, c->generation);
        memcpy(h + 32, c->origin, 32);
        memcpy(h + 64, c->prev_param, 32);
        glove_put_be64(h + 96, c->covered_seq);
        memcpy(h + 104, c->covered_head, 32);
        glove_put_be64(h + 136, c->old_records);
        glove_put_be64(h + 144, c->old_end_seq);
        memcpy(h + 152, c->old_end_head, 32);
        glove_put_be64(h + 184, c->entries);
        glove_put_be64(h + 192, body_len);
}

struct mapping {
        void *data;
        size_t len;
};

static void unmapp(struct mapping *m) {
        if (m->data && m->data != MAP_FAILED)
                munmap(m->data, m->len);
}

static int corrupt(struct glove_error *err, const char *name, const char *what) {
        return glove_error_set(err, EBADMSG, "checkpoint.corrupt", "%s: %s" WHAT_TO_DO, name, what);
}

int glove_store_checkpoint_read(int dirfd, const char *base, uid_t owner, const char journal_magic[8],
                                  uint64_t max_bytes, uint32_t max_payload, glove_store_checkpoint_mac_fn mac_fn,
                                  void *mac_ctx, glove_store_checkpoint_entry_fn fn, void *userdata,
                                  struct glove_store_checkpoint *out, bool *exists, struct glove_error *err) {
        char name[300], tmp[310];
        names(base, name, tmp);
        *exists = false;
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0)
                return glove_error_set(err, errno == ELOOP ? EPERM : errno,
                                       errno == ELOOP ? "checkpoint.insecure" : "checkpoint.io", "%s: %s", name,
                                       strerror(errno));
        *exists = true;
        int r = glove_store_file_check(fd, owner, name, "checkpoint.insecure", err);
        if (r < 0)
                return r;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "checkpoint.io", "%s: %s", name, strerror(errno));
        if ((uint64_t)st.st_size > max_bytes)
                return glove_error_set(err, EFBIG, "checkpoint.too_large", "%s is %lld bytes; the bound is %llu" WHAT_TO_DO,
                                       name, (long long)st.st_size, (unsigned long long)max_bytes);
        size_t len = (size_t)st.st_size;
        if (len < GLOVE_STORE_CHECKPOINT_HEADER_LEN + GLOVE_STORE_CHECKPOINT_MAC_LEN)
                return corrupt(err, name, "shorter than its header and MAC (truncated)");
        /* Mapped privately from the file (no copy; pages come from the
         * page cache at once): the file is private to the owner and only
         * ever replaced by rename, never written in place. */
        _cleanup_(unmapp) struct mapping map = { .len = len };
        map.data = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (map.data == MAP_FAILED)
                return glove_error_set(err, errno == ENOMEM ? ENOMEM : errno, "checkpoint.io", "%s: mmap: %s", name,
                                       strerror(errno));
        const uint8_t *p = map.data;
        if (memcmp(p, MAGIC, 8) != 0 || memcmp(p + 8, journal_magic, 8) != 0)
                return corrupt(err, name, "wrong magic (not a checkpoint of this journal)");
        if (glove_get_be32(p + 16) != VERSION || glove_get_be32(p + 20) != 0)
                return corrupt(err, name, "unsupported version or reserved bytes set");
        uint64_t body_len = glove_get_be64(p + 192);
        if (body_len != len - GLOVE_STORE_CHECKPOINT_HEADER_LEN - GLOVE_STORE_CHECKPOINT_MAC_LEN)
                return corrupt(err, name, "its length does not match its body length (truncated or grown)");
        uint8_t mac[GLOVE_STORE_CHECKPOINT_MAC_LEN];
        size_t signed_len = len - GLOVE_STORE_CHECKPOINT_MAC_LEN;
        r = mac_fn(mac_ctx, p, signed_len, mac, err);
        if (r < 0)
                return r;
        if (!glove_digest_equal(mac, p + signed_len, sizeof(mac)))
                return glove_error_set(err, EBADMSG, "checkpoint.mac_mismatch",
                                       "%s: its MAC does not verify: the checkpoint is corrupt, was reordered or "
                                       "edited, or was made with another key" WHAT_TO_DO,
                                       name);
        struct glove_store_checkpoint c = { 0 };
        memcpy(c.journal_magic, p + 8, 8);
        c.generation = glove_get_be64(p + 24);
        memcpy(c.origin, p + 32, 32);
        memcpy(c.prev_param, p + 64, 32);
        c.covered_seq = glove_get_be64(p + 96);
        memcpy(c.covered_head, p + 104, 32);
        c.old_records = glove_get_be64(p + 136);
        c.old_end_seq = glove_get_be64(p + 144);
        memcpy(c.old_end_head, p + 152, 32);
        c.entries = glove_get_be64(p + 184);
        memcpy(c.mac, mac, sizeof(mac));
        if (c.generation == 0 || c.old_records > c.old_end_seq || c.covered_seq > c.old_end_seq)
                return corrupt(err, name, "inconsistent sequence numbers");
        *out = c; /* before the entries: their callback may read it */
        size_t off = GLOVE_STORE_CHECKPOINT_HEADER_LEN, end = signed_len;
        uint64_t i = 0;
        for (; off < end; i++) {
                if (end - off < 4)
                        return corrupt(err, name, "an incomplete entry length");
                uint32_t n = glove_get_be32(p + off);
                if (n == 0 || n > max_payload || end - off - 4 < n)
                        return corrupt(err, name, "an entry length out of bounds");
                if (i >= c.entries)
                        return corrupt(err, name, "more entries than its header says");
                if (fn && (r = fn(userdata, i, p + off + 4, n, err)) < 0)
                        return r;
                off += 4 + (size_t)n;
        }
        if (i != c.entries)
                return corrupt(err, name, "fewer entries than its header says");
        return 0;
}

static int io(struct glove_error *err, int r, const char *what, const char *name) {
        return glove_error_set(err, r < 0 ? -r : r, "checkpoint.io", "%s: %s: %s", name, what, strerror(r < 0 ? -r : r));
}

int glove_store_checkpoint_write(int dirfd, const char *base, struct glove_store_checkpoint *c,
                                   const struct glove_store_checkpoint_body *body, uint64_t max_bytes,
                                   glove_store_checkpoint_mac_fn mac_fn, void *mac_ctx,
                                   glove_store_compact_hook hook, void *hook_ctx, struct glove_error *err) {
        char name[300], tmp[310];
        names(base, name, tmp);
        size_t body_len = body ? body->len : 0;
        c->entries = body ? body->entries : 0;
        uint64_t total = GLOVE_STORE_CHECKPOINT_HEADER_LEN + (uint64_t)body_len + GLOVE_STORE_CHECKPOINT_MAC_LEN;
        if (total > max_bytes)
                return glove_error_set(err, EFBIG, "checkpoint.too_large",
                                       "the live state needs a checkpoint of %llu bytes; the bound is %llu",
                                       (unsigned long long)total, (unsigned long long)max_bytes);
        _cleanup_free_ uint8_t *buf = malloc(total);
        if (!buf)
                return glove_error_set(err, ENOMEM, "checkpoint.no_memory", "out of memory");
        header_build(c, body_len, buf);
        if (body_len)
                memcpy(buf + GLOVE_STORE_CHECKPOINT_HEADER_LEN, body->data, body_len);
        size_t signed_len = GLOVE_STORE_CHECKPOINT_HEADER_LEN + body_len;
        int r = mac_fn(mac_ctx, buf, signed_len, buf + signed_len, err);
        if (r < 0)
                return r;
        memcpy(c->mac, buf + signed_len, GLOVE_STORE_CHECKPOINT_MAC_LEN);
        (void)unlinkat(dirfd, tmp, 0);
        _cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return io(err, -errno, "create", tmp);
        r = glove_fd_write_all(fd, buf, total);
        if (r == 0 && fchmod(fd, 0600) < 0)
                r = -errno;
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlinkat(dirfd, tmp, 0);
                return io(err, r, "write", tmp);
        }
        if (hook)
                hook(hook_ctx, GLOVE_STORE_COMPACT_CHECKPOINT_WRITTEN);
        if (renameat(dirfd, tmp, dirfd, name) < 0) {
                r = -errno;
                (void)unlinkat(dirfd, tmp, 0);
                return io(err, r, "install", name);
        }
        if (fsync(dirfd) < 0)
                return io(err, -errno, "sync the directory of", name);
        if (hook)
                hook(hook_ctx, GLOVE_STORE_COMPACT_CHECKPOINT_INSTALLED);
        return 0;
}

int glove_store_checkpoint_remove_leftover(int dirfd, const char *base, struct glove_error *err) {
        char name[300], tmp[310];
        names(base, name, tmp);
        if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT)
                return io(err, -errno, "remove the leftover", tmp);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The crash-safe rewrite of a chained record journal (see journal.h,
 * glove_store_journal_rewrite): the new journal and seal written beside the
 * old, switched by two renames, each step reported to the compaction hook;
 * and, at open, finishing or discarding a rewrite a crash interrupted. */
#include "glove/store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/store/dirs.h"
#include "journal_internal.h"

/*
 * Finishes or discards an interrupted rewrite (glove_store_journal_rewrite)
 * under the lock of the current seal: the rewrite renames .NAME.compact over
 * the journal, then .NAME.seal.compact over the seal. A .NAME.seal.compact
 * whose slots are valid for the header of the journal now in place was
 * written for it (a seal slot's check covers the whole header, whose param a
 * rewrite always changes), so the journal was switched and its seal is put
 * in place (and locked) now; otherwise the journal was not switched and the
 * leftovers are removed: the old journal and seal stand.
 */
int journal_resolve_rewrite(const struct names *n, int dirfd, int jfd, int *sfd, uid_t owner, struct glove_error *err) {
        bool changed = false;
        _cleanup_close_ int fd = openat(dirfd, n->cseal, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT)
                return journal_io_error(err, -errno, "open the seal of an interrupted rewrite", n->path);
        if (fd >= 0) {
                uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], seal[GLOVE_STORE_JOURNAL_SEAL_LEN];
                struct stat st;
                bool adopt = jfd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                             st.st_size == GLOVE_STORE_JOURNAL_SEAL_LEN &&
                             journal_read_all_at(fd, seal, sizeof(seal)) == 0 &&
                             journal_read_all_at(jfd, header, sizeof(header)) == 0 &&
                             journal_seal_fits_header(header, seal);
                if (adopt) {
                        int r = glove_store_file_check(fd, owner, n->cseal, "journal.file_insecure", err);
                        if (r < 0)
                                return r;
                        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                                return glove_error_set(err, EBUSY, "journal.locked",
                                                       "%s is being rewritten by another process", n->path);
                        if (renameat(dirfd, n->cseal, dirfd, n->seal) < 0)
                                return journal_io_error(err, -errno, "finish an interrupted rewrite", n->path);
                        close(*sfd);
                        *sfd = TAKE_FD(fd);
                } else if (unlinkat(dirfd, n->cseal, 0) < 0) {
                        return journal_io_error(err, -errno, "remove the seal of an interrupted rewrite", n->path);
                }
                changed = true;
        }
        if (unlinkat(dirfd, n->cjournal, 0) == 0)
                changed = true;
        else if (errno != ENOENT)
                return journal_io_error(err, -errno, "remove the journal of an interrupted rewrite", n->path);
        if (changed && fsync(dirfd) < 0)
                return journal_io_error(err, -errno, "sync the directory", n->path);
        return 0;
}

static void step(glove_store_compact_hook hook, void *ctx, enum glove_store_compact_step s) {
        if (hook)
                hook(ctx, s);
}

/* Writes the new journal (header and records) to .NAME.compact and its seal
 * to .NAME.seal.compact (locked), both synced. *jfd and *sfd receive them. */
static int rewrite_files(struct glove_store_journal *j, const struct names *n, const uint8_t *header,
                         const struct glove_store_journal_payload *recs, size_t count, uint64_t *size,
                         uint8_t head[GLOVE_STORE_JOURNAL_TAG_LEN], int *jfd, int *sfd, struct glove_error *err) {
        uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], seal[GLOVE_STORE_JOURNAL_SEAL_LEN] = { 0 };
        uint64_t off = GLOVE_STORE_JOURNAL_HEADER_LEN, prev_off = off;
        (void)unlinkat(j->dirfd, n->cjournal, 0);
        (void)unlinkat(j->dirfd, n->cseal, 0);
        *jfd = openat(j->dirfd, n->cjournal, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (*jfd < 0)
                return journal_io_error(err, -errno, "create the rewritten journal", n->path);
        int r = j->fmt->genesis(j->fmt->ctx, header, head, err);
        if (r < 0)
                return r;
        memcpy(prev, head, sizeof(prev));
        r = journal_write_all_at(*jfd, header, GLOVE_STORE_JOURNAL_HEADER_LEN, 0);
        for (size_t i = 0; r == 0 && i < count; i++) {
                uint8_t len[4], t[GLOVE_STORE_JOURNAL_TAG_LEN];
                glove_put_be32(len, (uint32_t)recs[i].len);
                r = j->fmt->chain(j->fmt->ctx, head, i + 1, recs[i].data, recs[i].len, t, err);
                if (r < 0)
                        return r;
                r = journal_write_all_at(*jfd, len, 4, (off_t)off);
                if (r == 0)
                        r = journal_write_all_at(*jfd, recs[i].data, recs[i].len, (off_t)off + 4);
                if (r == 0)
                        r = journal_write_all_at(*jfd, t, sizeof(t), (off_t)(off + 4 + recs[i].len));
                memcpy(prev, head, sizeof(prev));
                memcpy(head, t, sizeof(t));
                prev_off = off;
                off += recs[i].len + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD;
        }
        if (r == 0 && fsync(*jfd) < 0)
                r = -errno;
        if (r < 0)
                return journal_io_error(err, r, "write the rewritten journal", n->path);
        r = glove_store_journal_seal_slot(header, count, off, head, seal + (count % 2) * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE,
                                            err);
        if (r == 0 && count > 0)
                r = glove_store_journal_seal_slot(header, count - 1, prev_off, prev,
                                                    seal + ((count - 1) % 2) * GLOVE_STORE_JOURNAL_SEAL_SLOT_STRIDE, err);
        if (r < 0)
                return r;
        *sfd = openat(j->dirfd, n->cseal, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (*sfd < 0)
                return journal_io_error(err, -errno, "create the rewritten seal", n->path);
        if (flock(*sfd, LOCK_EX | LOCK_NB) < 0)
                return journal_io_error(err, -errno, "lock the rewritten seal", n->path);
        r = journal_write_all_at(*sfd, seal, sizeof(seal), 0);
        if (r == 0 && fsync(*sfd) < 0)
                r = -errno;
        if (r < 0)
                return journal_io_error(err, r, "write the rewritten seal", n->path);
        *size = off;
        return 0;
}

int glove_store_journal_rewrite(struct glove_store_journal *j, const uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN],
                                  uint32_t flags, const struct glove_store_journal_payload *recs, size_t count,
                                  glove_store_compact_hook hook, void *hook_ctx, struct glove_error *err) {
        struct names n;
        if (j->broken)
                return glove_error_set(err, EIO, "journal.broken",
                                       "an earlier write to this journal failed; restart gloved");
        if (flags & ~(uint32_t)GLOVE_STORE_JOURNAL_FLAG_CONTINUES)
                return glove_error_set(err, EINVAL, "journal.bad_header", "unknown journal flags %#x", flags);
        uint64_t bytes = GLOVE_STORE_JOURNAL_HEADER_LEN;
        for (size_t i = 0; i < count; i++) {
                if (recs[i].len == 0 || recs[i].len > j->fmt->max_payload)
                        return glove_error_set(err, EINVAL, "journal.bad_length", "record of %zu bytes (allowed 1..%u)",
                                               recs[i].len, j->fmt->max_payload);
                bytes += recs[i].len + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD;
        }
        if (count > j->fmt->max_records || bytes > j->fmt->max_bytes)
                return glove_error_set(err, ENOSPC, "journal.full", "the rewritten journal would not fit its bounds");
        int r = journal_split_names(j->path, &n, err);
        if (r < 0)
                return r;
        uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], head[GLOVE_STORE_JOURNAL_TAG_LEN];
        glove_store_journal_header_build_flags(j->fmt, param, flags, header);
        if (memcmp(header, j->header, sizeof(header)) == 0)
                return glove_error_set(err, EINVAL, "journal.bad_header",
                                       "a rewrite must change the journal's header param");
        _cleanup_close_ int jfd = -1, sfd = -1;
        uint64_t size = 0;
        r = rewrite_files(j, &n, header, recs, count, &size, head, &jfd, &sfd, err);
        if (r < 0) {
                (void)unlinkat(j->dirfd, n.cjournal, 0);
                (void)unlinkat(j->dirfd, n.cseal, 0);
                return r;
        }
        step(hook, hook_ctx, GLOVE_STORE_COMPACT_JOURNAL_WRITTEN);
        if (renameat(j->dirfd, n.cjournal, j->dirfd, n.base) < 0 || fsync(j->dirfd) < 0) {
                r = -errno;
                (void)unlinkat(j->dirfd, n.cjournal, 0);
                (void)unlinkat(j->dirfd, n.cseal, 0);
                j->broken = true; /* the rename may have happened: the next start decides */
                return journal_io_error(err, r, "switch to the rewritten journal", n.path);
        }
        step(hook, hook_ctx, GLOVE_STORE_COMPACT_JOURNAL_SWITCHED);
        if (renameat(j->dirfd, n.cseal, j->dirfd, n.seal) < 0 || fsync(j->dirfd) < 0) {
                j->broken = true; /* the next start puts the seal in place */
                return journal_io_error(err, -errno, "switch to the rewritten seal", n.path);
        }
        step(hook, hook_ctx, GLOVE_STORE_COMPACT_SEAL_SWITCHED);
        close(j->fd);
        close(j->seal_fd); /* the old seal's lock; the new one is locked */
        j->fd = TAKE_FD(jfd);
        j->seal_fd = TAKE_FD(sfd);
        memcpy(j->header, header, sizeof(header));
        memcpy(j->head, head, sizeof(head));
        j->records = count;
        j->size = size;
        j->unsealed = false;
        return 0;
}

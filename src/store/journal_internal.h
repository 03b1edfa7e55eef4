/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internal to the chained record journal (journal.c, journal_rewrite.c; see
 * glove/store/journal.h): the open journal's state, its file names, and the
 * file helpers both files use. Not part of the public API.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/store/journal.h"

struct glove_store_journal {
        const struct glove_store_journal_format *fmt;
        int fd;       /* journal, O_RDWR */
        int seal_fd;  /* seal, O_RDWR, holds the flock */
        uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN];
        uint64_t records;
        uint64_t size;
        uint8_t head[GLOVE_STORE_JOURNAL_TAG_LEN];
        bool broken;
        bool unsealed; /* the last record was accepted unsealed at open: its slot is written before the next */
        int dirfd;     /* the parent directory, for a rewrite */
        char *path;    /* the journal's path, for messages */
};

/* The names of a journal's files, from its absolute path. */
struct names {
        const char *path;
        char base[256];
        char seal[256 + sizeof(GLOVE_STORE_JOURNAL_SEAL_SUFFIX)];
        char tmp[256 + 8];
        char cjournal[256 + 16]; /* .NAME.compact: a rewrite's new journal */
        char cseal[256 + 24];    /* .NAME.seal.compact: its seal */
        char dir[4096];
};

/* ---- journal.c ---- */

/* Reads exactly len bytes of fd from offset 0. Returns 0, -EPIPE at an early
 * end of file, or a negative errno. */
int journal_read_all_at(int fd, void *buf, size_t len);

/* Writes all of buf[0..len) to fd at offset off. Returns 0 or a negative
 * errno (-EIO when a write makes no progress). */
int journal_write_all_at(int fd, const void *buf, size_t len, off_t off);

/* Sets err to journal.io ("PATH: WHAT: strerror(r)"); r is an errno of
 * either sign. Returns the negative errno (glove_error_set). */
int journal_io_error(struct glove_error *err, int r, const char *what, const char *path);

/* Fills n from path (absolute, a file name that is not . or .. and fits).
 * Returns 0 or -EINVAL (journal.parent_insecure). */
int journal_split_names(const char *path, struct names *n, struct glove_error *err);

/* True when some slot of seal (GLOVE_STORE_JOURNAL_SEAL_LEN bytes) is a
 * valid slot for header. */
bool journal_seal_fits_header(const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN], const uint8_t *seal);

/* ---- journal_rewrite.c ---- */

/* At open, under the lock of the current seal *sfd: finishes or discards a
 * rewrite that was interrupted (the comment at its definition says how).
 * jfd is the journal now in place, or -1. *sfd may be replaced by the
 * adopted seal's descriptor (locked). Returns 0 or a negative errno with a
 * journal.* code in err. */
int journal_resolve_rewrite(const struct names *n, int dirfd, int jfd, int *sfd, uid_t owner,
                            struct glove_error *err);

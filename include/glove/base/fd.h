/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Descriptor helpers. Every descriptor Glove opens is O_CLOEXEC.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "glove/base/error.h"

/*
 * Opens an absolute, normalized path without following any symbolic link in
 * any component, and without magic links (/proc/PID/fd/...), via openat2(2)
 * with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS. On kernels without
 * openat2 (ENOSYS) it falls back to a component walk with
 * O_PATH|O_NOFOLLOW|O_DIRECTORY and a final O_NOFOLLOW open.
 *
 * flags are open(2) flags; O_CLOEXEC and O_NOFOLLOW are always added. The
 * descriptor is returned in *out_fd (caller closes).
 *
 * Errors: -ELOOP "path.symlink" (a component is a symbolic link; the message
 * says so), -ENOENT "path.missing", other -errno "path.open".
 */
int glove_fd_open_nofollow(const char *abs_path, int flags, int *out_fd, struct glove_error *err);

/*
 * As glove_fd_open_nofollow, but resolves rel (a relative path) beneath the
 * directory dirfd with RESOLVE_BENEATH added: the walk can neither leave
 * dirfd nor follow links.
 */
int glove_fd_open_beneath(int dirfd, const char *rel, int flags, int *out_fd, struct glove_error *err);

/* Writes all len bytes, retrying on EINTR and short writes. Returns 0 or
 * -errno. */
int glove_fd_write_all(int fd, const void *buf, size_t len);

/* Reads exactly len bytes, retrying on EINTR. Returns 0, -EPIPE on end of
 * file before len bytes, or -errno. */
int glove_fd_read_exact(int fd, void *buf, size_t len);

/* Makes sure descriptors 0, 1 and 2 are open (opening /dev/null on any that is
 * closed), so later descriptors never land on the standard numbers. Returns 0
 * or -errno. */
int glove_fd_ensure_std(void);

/* struct glove_fd_pair is defined in glove/base/cleanup.h. */
struct glove_fd_pair;

/*
 * Makes a pipe into *p: p->fd[0] the read end, p->fd[1] the write end.
 * flags are pipe2(2) flags (O_NONBLOCK, O_DIRECT); O_CLOEXEC is always
 * added. Whatever p held before is overwritten, not closed. Returns 0, or
 * -errno with both ends left at -1 (nothing is opened on failure).
 */
int glove_fd_pair_pipe(struct glove_fd_pair *p, int flags);

/*
 * Makes a connected AF_UNIX socket pair into *p. type is SOCK_STREAM,
 * SOCK_DGRAM or SOCK_SEQPACKET, optionally with SOCK_NONBLOCK; SOCK_CLOEXEC
 * is always added. Whatever p held before is overwritten, not closed.
 * Returns 0, or -errno with both ends left at -1.
 */
int glove_fd_pair_socketpair(struct glove_fd_pair *p, int type);

/* Largest max accepted by the bounded readers (1 GiB). */
#define GLOVE_FD_READ_BOUNDED_MAX ((size_t)1 << 30)

/*
 * Reads fd from its current offset to end of file into a new buffer of at
 * most max bytes (max <= GLOVE_FD_READ_BOUNDED_MAX). Works on any readable
 * descriptor: regular files (fstat's size is only an allocation hint, so
 * /proc and sysfs files are read correctly), pipes, FIFOs and sockets (read
 * until the peer closes). Retries EINTR and short reads. A blocking
 * descriptor blocks until end of file; a non-blocking one that would block
 * fails with -EAGAIN.
 *
 * On success *out holds *len bytes followed by a NUL that is not counted in
 * *len (text users may treat it as a string; the content may itself hold
 * NULs); the caller frees *out. An empty input gives *len 0 and a buffer
 * holding just the NUL. When the buffer grows, the earlier copy is zeroed
 * before it is freed, so no copy of the content is left in freed memory by
 * the reader (callers reading secrets zero *out themselves).
 *
 * On failure *out is NULL and *len 0; bytes already read are consumed.
 * Errors (err may be NULL):
 *   -EFBIG  "file.too_large"        more than max bytes (never truncated)
 *   -ENOMEM "file.no_memory"
 *   -EINVAL "file.invalid_argument" out or len NULL, or max too large
 *   -errno  "file.read"             read(2) failed (-EAGAIN, -EISDIR, ...)
 * Messages carry no path; callers that need one add it.
 */
int glove_fd_read_bounded(int fd, size_t max, char **out, size_t *len, struct glove_error *err);

/*
 * Opens path relative to dirfd (AT_FDCWD or a directory descriptor; an
 * absolute path ignores dirfd) with openat(2) and
 * O_RDONLY|O_CLOEXEC|O_NOCTTY plus open_flags (for example O_NOFOLLOW,
 * O_NONBLOCK so that opening a FIFO does not wait for a writer), reads it
 * as glove_fd_read_bounded does and closes it. open_flags must not ask for
 * write access, O_CREAT, O_TRUNC, O_TMPFILE or O_PATH (-EINVAL).
 *
 * Ownership and results as glove_fd_read_bounded; no descriptor stays open
 * whatever the outcome. Errors carry the path in the message:
 *   -errno  "file.open"             openat(2) failed (-ENOENT, -ELOOP, ...)
 *   and those of glove_fd_read_bounded.
 */
int glove_file_read_bounded(int dirfd, const char *path, int open_flags, size_t max, char **out, size_t *len,
                            struct glove_error *err);

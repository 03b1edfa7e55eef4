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

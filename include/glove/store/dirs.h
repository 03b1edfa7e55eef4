/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Owner-only directories and files of gloved (spec session-policy.md,
 * "Protected files": runtime and state directories are absolute, owned by the
 * service user, mode 0700).
 *
 * Stable error codes:
 *   dirs.relative        the path is not absolute and normalized (-EINVAL)
 *   dirs.create          a missing component could not be created (-errno)
 *   dirs.insecure        not a directory, not owned by the service user, or
 *                        mode other than 0700 (-EPERM)
 *   dirs.file_insecure   not a regular file owned by the service user with
 *                        mode 0600 and one link (-EPERM)
 *   path.symlink, path.missing, path.open  from glove_fd_open_nofollow
 */

#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "glove/base/error.h"

/*
 * The open-file flag that tags a descriptor of one of gloved's own private
 * directories (runtime, state, leases, materialization root and the like),
 * as against a directory it opens in passing (a listing of / in a grant
 * check, a copy walk). glove exec and glove run guard only the directories
 * a live gloved holds with this flag (src/run/gloved_guards.c, read from
 * /proc/PID/fdinfo), so no passing open refuses their grants. Nothing else
 * opens a directory with it; set only by glove_store_dir_open_private.
 */
#define GLOVE_STORE_KEPT_DIR_FLAG O_NOATIME

/*
 * Opens the directory at path (absolute, normalized, no symbolic link in any
 * component) with O_RDONLY|O_DIRECTORY|O_CLOEXEC, checks that it is owned
 * by owner with mode exactly 0700, and tags the descriptor with
 * GLOVE_STORE_KEPT_DIR_FLAG. When create is true, missing components
 * are created first with mode 0700 (existing ones are left alone; only the
 * final directory is checked). The descriptor is stored in *out_fd (caller
 * closes). Errors: dirs.relative, dirs.create, dirs.insecure (also: the tag
 * refused, EPERM, when the caller neither owns the directory nor has
 * CAP_FOWNER), path.*.
 */
int glove_store_dir_open_private(const char *path, uid_t owner, bool create, int *out_fd,
                                   struct glove_error *err);

/*
 * Checks an open descriptor's stat: a directory owned by owner with mode
 * 0700. name is used in the message. Errors: dirs.insecure.
 */
int glove_store_dir_check(const struct stat *st, uid_t owner, const char *name, struct glove_error *err);

/*
 * Checks that fd is a regular file owned by owner, mode 0600, one hard link.
 * name is used in the message; code is the stable code to report (NULL means
 * "dirs.file_insecure"; must be a static string). Errors: that code (-EPERM),
 * or -errno from fstat with the same code.
 */
int glove_store_file_check(int fd, uid_t owner, const char *name, const char *code, struct glove_error *err);

/*
 * Writes data[0..len) durably to dirfd/name with mode 0600:
 * glove_file_replace (glove/base/file.h) with the directory synced.
 * Errors: dirs.write (-errno), with glove_file_replace's message.
 */
int glove_store_file_replace(int dirfd, const char *name, const void *data, size_t len,
                               struct glove_error *err);

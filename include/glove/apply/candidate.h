/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The apply candidate (issue 30; spec session-policy.md: the primitive
 * "copies without following links, recursively syncs the candidate";
 * docs/retained-changes.md): a copy of the frozen stage made beside the
 * source, in the source's parent directory, so that renameat2
 * (RENAME_EXCHANGE) can swap the whole entry. Contents and child modes come
 * from the stage; the root's mode is the source root's; everything is owned
 * by the caller (the service identity); times are new.
 */

#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/supervisor/manifest.h"

/*
 * Copies the stage stage_fd (a directory descriptor, O_PATH allowed, not
 * closed), whose manifest m was built from it and passed
 * glove_manifest_check_apply, into a new directory name (one path
 * component) beneath parent_fd: mkdirat 0700 (an existing name is
 * -EEXIST apply.candidate_exists, and is left alone), then every directory
 * and regular file of m, opened beneath stage_fd without following
 * anything (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) and checked against m's entry
 * (type, size; anything else in the stage is apply.candidate_mismatch).
 * Files: mode & 0777 from m, written with O_EXCL | O_NOFOLLOW, fsync'd;
 * directories: mode & 0777 from m, root_mode & 0777 for the root, each
 * fsync'd after its children; then parent_fd fsync'd. Owner: the caller's
 * effective uid and gid (fchown only when they differ from what was
 * created). The candidate's manifest is then built and must equal m entry
 * by entry (path, type, size, sha256, mode; the root's mode being
 * root_mode): apply.candidate_mismatch otherwise.
 * On any failure the partial candidate is removed (best effort,
 * glove_apply_tree_remove) and the error returned: apply.no_space
 * (-ENOSPC or -EDQUOT), apply.copy (-errno, the relative path in the
 * message), apply.candidate_mismatch (-ESTALE).
 */
int glove_apply_candidate_copy(int stage_fd, const struct glove_manifest *m, int parent_fd, const char *name,
                               mode_t root_mode, struct glove_error *err);

/*
 * Removes the tree name (one path component) beneath parent_fd without
 * following anything: directories are emptied by descriptor (openat with
 * O_NOFOLLOW | O_DIRECTORY, unlinkat), depth at most
 * GLOVE_MANIFEST_DEPTH_MAX + 1, never crossing a mount
 * (apply.remove, -EXDEV). Idempotent: an absent name is 0. Then parent_fd
 * is fsync'd. apply.remove (-errno) otherwise.
 */
int glove_apply_tree_remove(int parent_fd, const char *name, struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Lexical path helpers. They never touch the filesystem: resolution through
 * the kernel (and the refusal of symbolic links) is in fd.h.
 */

#include <stdbool.h>
#include <stddef.h>

#include "glove/base/error.h"

/* Longest path Glove accepts, in bytes including the terminating NUL
 * (Linux PATH_MAX). Longer input is an error, never truncated. */
#define GLOVE_PATH_MAX 4096

/*
 * Makes path absolute and lexically normal: a relative path is joined to cwd
 * (which must be absolute), then repeated slashes, "." components and a
 * trailing slash are removed and ".." removes the previous component ("/.."
 * stays "/"). The result is malloc'd into *out (caller frees).
 *
 * Lexical ".." handling equals the kernel's only when no component is a
 * symbolic link; callers that resolve the result refuse links (fd.h), which
 * makes the two agree.
 *
 * Errors: -EINVAL "path.empty" (empty path), "path.relative_cwd" (relative
 * path without an absolute cwd); -ENAMETOOLONG "path.too_long" (input or
 * result over GLOVE_PATH_MAX); -ENOMEM.
 */
int glove_path_normalize(const char *path, const char *cwd, char **out, struct glove_error *err);

/*
 * True when path equals root or lies beneath it, comparing whole components
 * ("/a/bc" is not beneath "/a/b"). Both must be normalized absolute paths.
 */
bool glove_path_is_beneath(const char *path, const char *root);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * config.json in the configuration directory (dirs.h): the owner-approved
 * path roots recorded by `glove setup --path-root` for later exposures
 * (spec session-policy.md: "glove init ... requests one exposure beneath a
 * root created by glove setup --path-root"). The roots gloved enrolls
 * beneath, with what each allows, are the exposure policy
 * (glove/host/exposures.h, docs/exposures.md), which setup writes beside.
 * docs/host.md documents the format:
 *
 *   {"path_roots": [PATH...], "schema_version": 1}
 *
 * Strict JSON (glove_json_decode_strict: duplicate keys, invalid UTF-8,
 * trailing data refused), both members required, no other member;
 * path_roots 0..GLOVE_HOST_CONFIG_MAX_ROOTS absolute normalized paths (not
 * "/", not under /proc, /sys or /dev, at most GLOVE_HOST_CONFIG_PATH_MAX
 * bytes), sorted by bytes and unique. The file is a regular file owned by
 * the user, mode 0600, one link, at most GLOVE_HOST_CONFIG_MAX_BYTES.
 *
 * Stable codes: config.file_insecure (-EPERM), config.read (-errno),
 * config.invalid (-EINVAL: the message names the JSON path),
 * config.too_many_roots (-E2BIG).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "glove/base/error.h"

#define GLOVE_HOST_CONFIG_SCHEMA_VERSION 1
#define GLOVE_HOST_CONFIG_MAX_BYTES (64 * 1024)
#define GLOVE_HOST_CONFIG_MAX_ROOTS 64
#define GLOVE_HOST_CONFIG_PATH_MAX 4095

struct glove_host_config {
        char *roots[GLOVE_HOST_CONFIG_MAX_ROOTS]; /* malloc'd, sorted, unique */
        size_t n_roots;
};

void glove_host_config_clear(struct glove_host_config *c);

/*
 * Reads dirfd/GLOVE_HOST_CONFIG_FILE (dirfd: the checked configuration
 * directory) into *out (cleared first; caller clears). Returns 0, 1 when
 * the file does not exist (*out empty), or a negative errno with the codes
 * above.
 */
int glove_host_config_read(int dirfd, uid_t owner, struct glove_host_config *out, struct glove_error *err);

/*
 * Checks one path root given by the owner: absolute; normalized lexically
 * into *out (malloc'd); not "/" nor under /proc, /sys, /dev; an existing
 * directory reached without following a symbolic link in any component,
 * owned by owner and not writable by group or others. Errors:
 * config.bad_root (-EINVAL, -EPERM; -ELOOP naming the first component
 * that is a symbolic link, -ENOENT the first missing one, -ENOTDIR the
 * first that is no directory; another errno of the open), path.* from
 * the lexical normalization (path.too_long).
 */
int glove_host_config_check_root(const char *path, uid_t owner, char **out, struct glove_error *err);

/*
 * Adds root (borrowed, already checked) keeping the order; *added tells
 * whether it was new. Errors: config.too_many_roots (-E2BIG), -ENOMEM.
 */
int glove_host_config_add_root(struct glove_host_config *c, const char *root, bool *added, struct glove_error *err);

/*
 * The file text of c: indented JSON with sorted keys and a final newline
 * (*out malloc'd, NUL-terminated; *len without the NUL). -ENOMEM.
 */
int glove_host_config_encode(const struct glove_host_config *c, char **out, size_t *len, struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The owner's side of dynamic path exposures (docs/exposures.md; spec
 * session-policy.md, "Dynamic path exposures"; spec architecture.md, "glove
 * setup", "glove init"):
 *
 *   glove setup --path-root DIR   records DIR as a root of the exposure
 *                                 policy CONFIG/exposure-policy.json
 *                                 (glove_host_exposure_policy_extend)
 *   glove init [PROJECT]          asks gloved to enroll PROJECT, a directory
 *                                 beneath a root (glove_host_init_main)
 *
 * The policy format and its decoder are glove/supervisor/exposure.h. These
 * functions only build, canonicalize and ask; gloved decides.
 *
 * Stable codes:
 *   setup.root_overlap   a new root is, contains or lies beneath a root
 *                        already in the exposure policy (-EEXIST)
 *   setup.no_runtimes    the session policy has no runtime template, so a
 *                        new root would allow no runtime (-ENOENT)
 *   init.symlink         a component of PROJECT is a symbolic link (-ELOOP)
 *   init.missing         a component of PROJECT does not exist (-ENOENT)
 *   init.not_directory   PROJECT or a component is not a directory (-ENOTDIR)
 *   init.outside_roots   PROJECT is beneath no root of the policy (-EPERM)
 *   init.no_policy       CONFIG/exposure-policy.json is absent (-ENOENT)
 *   init.no_owner_secret RUNTIME/owner-secret is absent: gloved runs without
 *                        exposures (-ENOENT)
 *   init.path            PROJECT cannot be made an absolute path (-EINVAL)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

#define GLOVE_HOST_EXPOSURE_POLICY_FILE "exposure-policy.json"
#define GLOVE_HOST_EXPOSURE_JOURNAL_FILE "exposures.journal"
#define GLOVE_HOST_OWNER_SECRET_FILE "owner-secret"

/* Defaults of a new root (docs/exposures.md). */
#define GLOVE_HOST_EXPOSURE_TARGET_PATH "/workspace"
#define GLOVE_HOST_EXPOSURE_MAX_TTL_SECS 604800LL       /* 7 days */
#define GLOVE_HOST_EXPOSURE_MAX_BYTES (1LL << 30)       /* 1 GiB per mode */

/*
 * Makes the exposure policy text with every root of roots[0..n_roots)
 * (absolute, normalized, already checked as glove setup --path-root checks
 * them) present.
 *
 * old (old_len bytes) is the current file, or NULL when there is none; it
 * must decode with glove_exposure_policy_decode (else its policy.* code).
 * Each new root gets the defaults above, every access mode (read/bind/remove,
 * ephemeral_write/copy/remove, retained_write/copy/retain), the runtime
 * template ids runtimes[0..n_runtimes) (any order; at least one, else
 * setup.no_runtimes), and a root_id made of its last component (characters
 * outside [A-Za-z0-9._:-] become "-", cut to 100 bytes, "root" if empty)
 * made unique with "-2", "-3", ... A root whose path equals an existing
 * root's is left exactly as it is (never loosened nor tightened); one that
 * overlaps an existing root or another new one is setup.root_overlap.
 *
 * On success *out (malloc'd, NUL-terminated; *out_len without the NUL) is
 * the whole new text (two-space indentation, sorted keys, final newline)
 * and has passed glove_exposure_policy_decode; *n_added is how many roots
 * were added (0: old is returned unchanged, byte for byte, when present).
 * Errors: policy.* (old or the result refused: the decoder's message),
 * setup.root_overlap, setup.no_runtimes, -ENOMEM setup.no_memory.
 */
int glove_host_exposure_policy_extend(const char *old, size_t old_len, const char *const *roots, size_t n_roots,
                                      const char *const *runtimes, size_t n_runtimes, char **out, size_t *out_len,
                                      size_t *n_added, struct glove_error *err);

/*
 * Canonicalizes PROJECT for glove init without following a symbolic link
 * anywhere: a relative project is joined to cwd (absolute) lexically
 * (glove_path_normalize: "." and ".." are resolved as words), then every
 * component is opened from "/" with O_PATH | O_NOFOLLOW, one at a time; a
 * symbolic link is init.symlink naming that component's path, a missing one
 * init.missing, a non-directory init.not_directory. Nothing inside the
 * project is opened or read. *out (malloc'd) is the absolute, normalized
 * path. Errors: init.path, init.symlink, init.missing, init.not_directory,
 * -errno init.path for other failures.
 */
int glove_host_init_canonicalize(const char *project, const char *cwd, char **out, struct glove_error *err);

/* `glove init ...` (argv[0] is "init"); returns the exit status: 0 done,
 * 1 refused or failed (by glove's checks, by gloved, or gloved unreachable),
 * 125 usage error. */
int glove_host_init_main(int argc, char **argv);

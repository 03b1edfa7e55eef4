/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The protected local session policy of gloved (spec session-policy.md,
 * "Protected files" and "Policy schema"; issue "gloved control plane").
 *
 * Interface fixed here so the control module can be built against it; the
 * decoder lives in src/supervisor/policy*.c.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* Largest policy file accepted, in bytes. */
#define GLOVE_POLICY_MAX_BYTES (1024 * 1024)

/* A decoded, validated and frozen policy. Opaque; immutable once returned. */
struct glove_supervisor_policy;

/*
 * Decodes and validates policy JSON from memory (strict: unknown fields,
 * duplicate keys, wrong types, out-of-range numbers, non-canonical identifier
 * arrays rejected; then the semantic checks of the spec). On error, err->code
 * is a stable "policy.*" code and err->message names the JSON path of the
 * offence (e.g. "$.resource_profiles[0].pids"). *out is owned by the caller
 * (glove_supervisor_policy_free).
 */
int glove_supervisor_policy_decode(const void *data, size_t len, struct glove_supervisor_policy **out,
                                   struct glove_error *err);

/*
 * Loads a protected policy file: a regular file owned by owner_uid, mode
 * 0600, one hard link, no final symlink, at most GLOVE_POLICY_MAX_BYTES, read
 * through one descriptor whose identity (dev, ino, size, mtime) is rechecked
 * after reading; then decodes it as above. Errors "policy.file_*" for the
 * file checks, "policy.*" for the content.
 */
int glove_supervisor_policy_load(const char *path, uid_t owner_uid, struct glove_supervisor_policy **out,
                                 struct glove_error *err);

void glove_supervisor_policy_free(struct glove_supervisor_policy *policy);

/* The policy's revision. */
int64_t glove_supervisor_policy_revision(const struct glove_supervisor_policy *policy);

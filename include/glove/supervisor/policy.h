/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The protected local session policy of gloved (spec session-policy.md,
 * "Protected files" and "Policy schema"; issue "gloved control plane").
 *
 * Interface fixed here so the control module can be built against it; the
 * decoder lives in src/supervisor/policy*.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"
#include "glove/base/json.h"
#include "glove/supervisor/launch.h"

/* Largest policy file accepted, in bytes. */
#define GLOVE_POLICY_MAX_BYTES (1024 * 1024)

/*
 * Bounds of the policy schema (docs/session-policy.md lists them with the
 * fields they apply to). Every bound is inclusive; exceeding one is an error
 * ("policy.too_many_items", "policy.too_long", "policy.out_of_range"),
 * never a truncation.
 *
 * Identifiers (template, runtime, alias, profile, egress/tool policy ids,
 * secret handles) are 1..GLOVE_POLICY_IDENTIFIER_MAX bytes from
 * [A-Za-z0-9._:-] ("policy.invalid_identifier").
 */
#define GLOVE_POLICY_IDENTIFIER_MAX 128
#define GLOVE_POLICY_MAX_RUNTIME_TEMPLATES 64
#define GLOVE_POLICY_MAX_PATH_ALIASES 64
#define GLOVE_POLICY_MAX_ACCESS_TUPLES 16        /* per path alias */
#define GLOVE_POLICY_MAX_DESTINATIONS 128        /* library_projection_destinations */
#define GLOVE_POLICY_MAX_RESOURCE_PROFILES 64
#define GLOVE_POLICY_MAX_IDENTIFIERS 128         /* per identifier array */
#define GLOVE_POLICY_MAX_EGRESS_POLICIES 128
#define GLOVE_POLICY_MAX_EGRESS_TARGETS 128      /* per egress policy */
#define GLOVE_POLICY_MAX_SECRET_MOUNTS 128
#define GLOVE_POLICY_MAX_HOSTNAME 253            /* egress target host, bytes */

#define GLOVE_POLICY_REVISION_MAX 9007199254740991LL   /* 2^53 - 1; minimum 1 */
#define GLOVE_POLICY_PLAN_TTL_MS_MAX 86400000LL        /* max_plan_ttl_ms, 24 h */
#define GLOVE_POLICY_LAUNCH_HEADROOM_MS 1000LL         /* max_plan_ttl_ms - wall_time_ms, at least */
#define GLOVE_POLICY_PATH_TTL_SECS_MAX 604800LL        /* max_ttl_secs, 7 days */
#define GLOVE_POLICY_QUOTA_BYTES_MAX (1LL << 44)       /* access max_bytes, 16 TiB; minimum 1 */

/* Resource profile bounds (each limit's minimum is 1). */
#define GLOVE_POLICY_CPU_TIME_MS_MAX 86400000LL        /* 24 h */
#define GLOVE_POLICY_MEMORY_BYTES_MAX (1LL << 44)      /* 16 TiB */
#define GLOVE_POLICY_PIDS_MAX 4194304LL                /* Linux PID_MAX_LIMIT */
#define GLOVE_POLICY_WALL_TIME_MS_MAX 86400000LL       /* 24 h */
#define GLOVE_POLICY_DISK_BYTES_MAX (1LL << 44)        /* 16 TiB */
#define GLOVE_POLICY_TERMINAL_OUTPUT_BYTES_MAX (1LL << 30) /* 1 GiB */

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
 * As glove_supervisor_policy_decode, and on error also writes the JSON path
 * of the offence (e.g. "$.runtime_templates[0].launch.environment[1]") into
 * path, which has path_size bytes (GLOVE_JSON_PATH_MAX is always enough; a
 * smaller buffer receives a path cut at a character boundary and ending in
 * "..."). path may be NULL. Errors found while parsing the text (syntax,
 * duplicate keys, invalid UTF-8) report "$" and give the byte offset in
 * the message. err->message always starts with the same path and ": ".
 *
 * Stable codes, all -EINVAL unless noted (docs/session-policy.md explains
 * each): policy.too_large (-EMSGSIZE), policy.invalid_json,
 * policy.invalid_utf8, policy.duplicate_key, policy.too_deep,
 * policy.unknown_field, policy.missing_field, policy.wrong_type,
 * policy.not_integer, policy.out_of_range, policy.too_long,
 * policy.too_many_items, policy.too_few_items, policy.embedded_nul,
 * policy.unsupported_schema_version, policy.invalid_identifier,
 * policy.invalid_value, policy.invalid_digest, policy.array_unsorted,
 * policy.array_duplicate, policy.path_not_absolute, policy.path_is_root,
 * policy.path_not_normalized, policy.path_restricted, policy.path_overlap,
 * policy.target_reserved, policy.target_overlap,
 * policy.secret_target_outside_home, policy.empty_string,
 * policy.invalid_environment, policy.invalid_access_combination,
 * policy.plan_ttl_headroom, policy.duplicate_profile_limits,
 * policy.unknown_path_alias, policy.unknown_projection_destination,
 * policy.unknown_egress_policy, policy.unknown_secret_handle,
 * policy.unknown_runtime_id, policy.invalid_host,
 * policy.egress_private_address, policy.discovery_unsupported,
 * policy.discovery_runtime_mismatch, policy.discovery_executable_path,
 * policy.discovery_search_paths, policy.search_paths_without_discovery,
 * policy.executable_overlap, policy.adapter_digest_mismatch,
 * policy.no_memory (-ENOMEM), policy.invalid_argument (NULL out).
 */
int glove_supervisor_policy_decode_ex(const void *data, size_t len, struct glove_supervisor_policy **out,
                                      char *path, size_t path_size, struct glove_error *err);

/*
 * Loads a protected policy file: a regular file owned by owner_uid, mode
 * 0600, one hard link, no final symlink, at most GLOVE_POLICY_MAX_BYTES, read
 * through one descriptor whose identity (dev, ino, size, mtime) is rechecked
 * after reading; then decodes it as above. Errors "policy.file_*" for the
 * file checks, "policy.*" for the content.
 *
 * (spec session-policy.md, "Protected files".) path must be absolute. The
 * file is opened once with O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC
 * (O_NONBLOCK so a FIFO planted at the path cannot block the start), checked
 * with fstat, read to end of file through the same descriptor, and checked
 * again: dev, ino, mode, uid, nlink, size, mtime and ctime must be unchanged
 * and the bytes read must equal the size. Errors (message names the file):
 *   policy.file_path_relative  path is not absolute (-EINVAL)
 *   policy.file_symlink        the final component is a symbolic link (-ELOOP)
 *   policy.file_open           open failed, e.g. missing (-errno)
 *   policy.file_not_regular    not a regular file (-EINVAL)
 *   policy.file_owner          st_uid != owner_uid (-EPERM)
 *   policy.file_mode           permission bits other than exactly 0600,
 *                              including setuid/setgid/sticky (-EPERM)
 *   policy.file_links          st_nlink != 1 (-EPERM)
 *   policy.file_too_large      over GLOVE_POLICY_MAX_BYTES (-EFBIG)
 *   policy.file_read           read(2) failed (-errno)
 *   policy.file_changed        metadata or size changed while reading (-EAGAIN)
 * Content errors are those of glove_supervisor_policy_decode_ex, with the
 * message prefixed by the file path. The decoded policy is frozen: the
 * file is not watched (replace it atomically and restart gloved).
 */
int glove_supervisor_policy_load(const char *path, uid_t owner_uid, struct glove_supervisor_policy **out,
                                 struct glove_error *err);

/* Releases the policy and everything borrowed from it (NULL allowed). */
void glove_supervisor_policy_free(struct glove_supervisor_policy *policy);

static inline void glove_supervisor_policy_freep(struct glove_supervisor_policy **p) {
        if (p)
                glove_supervisor_policy_free(*p);
}
#define _cleanup_policy_ __attribute__((cleanup(glove_supervisor_policy_freep)))

/* The policy's revision (1..GLOVE_POLICY_REVISION_MAX). */
int64_t glove_supervisor_policy_revision(const struct glove_supervisor_policy *policy);

/* The policy's max_plan_ttl_ms (milliseconds). */
int64_t glove_supervisor_policy_max_plan_ttl_ms(const struct glove_supervisor_policy *policy);

/*
 * SHA-256 of the exact policy bytes that were decoded, as 64 lowercase hex
 * characters (NUL-terminated, owned by the policy). For audit records and
 * diagnostics ("which policy was loaded"); not part of any plan.
 */
const char *glove_supervisor_policy_digest(const struct glove_supervisor_policy *policy);

/* The runtime_id of template runtime_template_id (borrowed from the
 * policy), or NULL when the policy has no such template. */
const char *glove_supervisor_policy_template_runtime_id(const struct glove_supervisor_policy *policy,
                                                        const char *runtime_template_id);

/*
 * True when the policy has a runtime template with this id and that
 * template has a launch block (spec: "Absent policies remain eligible for
 * plan-only validation, never launch resolution"). False for an unknown id,
 * or a template without launch: such a template admits plan validation but
 * can never launch.
 */
bool glove_supervisor_policy_template_can_launch(const struct glove_supervisor_policy *policy,
                                                 const char *runtime_template_id);

/*
 * Gives the launch fields of template runtime_template_id in *out, borrowed
 * from the policy (valid until glove_supervisor_policy_free). The policy
 * decoder has already checked them and that their digest equals the
 * template's adapter_command_digest. Returns 0; -ENOENT
 * "policy.unknown_runtime_template" for an unknown id; -ENOEXEC
 * "policy.template_not_launchable" when the template has no launch block.
 */
int glove_supervisor_policy_template_launch(const struct glove_supervisor_policy *policy,
                                            const char *runtime_template_id,
                                            const struct glove_supervisor_launch_template **out,
                                            struct glove_error *err);

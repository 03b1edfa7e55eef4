/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Runtime launch templates and their digest (spec session-policy.md,
 * "Filesystem and launch binding" and "Cloudflare OS development template";
 * docs/digests.md documents the encoding byte by byte, with test vectors).
 *
 * A launch template is the operator-local description of how a runtime is
 * started: either a pinned absolute executable, or a built-in native-adapter
 * discovery name plus explicit search directories; then ordered arguments,
 * a canonical environment, and read-only dependency paths. A session plan
 * never carries any of these fields: it names the template and carries
 * adapter_command_digest, which must equal
 * glove_supervisor_launch_template_digest() of the template.
 */

#include <stddef.h>
#include <stdint.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"

/* Domain string at the start of the encoding (issue 11: the encoding a
 * controller derives independently). */
#define GLOVE_LAUNCH_DIGEST_DOMAIN "glove.runtime-launch-template"
/* The version byte after the domain: a pinned executable, or discovery. */
#define GLOVE_LAUNCH_DIGEST_VERSION_PINNED 1
#define GLOVE_LAUNCH_DIGEST_VERSION_DISCOVERY 2

/* Bounds enforced by the policy decoder (spec: "bounded launch fields"). */
#define GLOVE_LAUNCH_MAX_ITEMS 256           /* entries per list */
#define GLOVE_LAUNCH_MAX_STRING (64 * 1024)  /* bytes per argument or environment entry */
#define GLOVE_LAUNCH_MAX_PATH 4095           /* bytes per path */

/*
 * The launch fields, borrowed (the struct owns nothing). Lists are arrays
 * of n NUL-terminated strings; an array may be NULL when its count is 0.
 *
 *   runtime_discovery        NULL or "" for a pinned executable; otherwise the
 *                            built-in adapter name (codex, claude-code, pi,
 *                            copilot, opencode)
 *   executable_path          absolute executable; "" with discovery
 *   executable_search_paths  ordered directories searched for the adapter's
 *                            executable; empty without discovery
 *   arguments                ordered argv[1..]
 *   environment              NAME=VALUE entries, strictly increasing bytes
 *   read_only_paths          host paths mounted read-only, sorted
 */
struct glove_supervisor_launch_template {
        const char *runtime_discovery;
        const char *executable_path;
        const char *const *executable_search_paths;
        size_t n_executable_search_paths;
        const char *const *arguments;
        size_t n_arguments;
        const char *const *environment;
        size_t n_environment;
        const char *const *read_only_paths;
        size_t n_read_only_paths;
};

/*
 * runtime_launch_template_digest: SHA-256 over (docs/digests.md)
 *   str(GLOVE_LAUNCH_DIGEST_DOMAIN) || u8(version)
 *   || [version 2 only: str(runtime_discovery) || list(executable_search_paths)]
 *   || str(executable_path) || list(arguments) || list(environment)
 *   || list(read_only_paths)
 * where str(s) is a 4-byte big-endian byte length then the bytes and
 * list(l) a 4-byte big-endian count then str of each entry; version is 1
 * (GLOVE_LAUNCH_DIGEST_VERSION_PINNED) when runtime_discovery is NULL or
 * "", else 2 (GLOVE_LAUNCH_DIGEST_VERSION_DISCOVERY). Written as 64
 * lowercase hex characters plus NUL into out_hex.
 *
 * This function only encodes; it does not judge whether the fields are a
 * valid template (the policy decoder does that before calling it). It
 * rejects only what cannot be encoded: t, executable_path or a list entry
 * NULL, a list array NULL with a non-zero count, or executable_search_paths
 * entries without runtime_discovery (-EINVAL, "launch.invalid_argument").
 * Returns 0, -EINVAL, or -EIO/-ENOMEM from libcrypto ("digest.*").
 */
int glove_supervisor_launch_template_digest(const struct glove_supervisor_launch_template *t,
                                            char out_hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1],
                                            struct glove_error *err);

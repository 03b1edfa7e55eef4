/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The operator's local-service configuration (spec session-policy.md,
 * "Guest observation channels and Sage guest proposals": "Configuration
 * contains only a canonical sorted alias list, normalized absolute host
 * Unix-socket paths, canonical sorted runtime IDs, and an optional opaque
 * guest-channel adapter/schema binding"; architecture.md, "Guest
 * specialized-channel admission").
 *
 * The file is strict JSON (RFC 8259), at most GLOVE_SERVICES_CONFIG_MAX_BYTES:
 *
 *   {"schema_version": 1,
 *    "endpoints": [                          0..16, sorted by alias, unique
 *      {"alias": "observe",                  identifier (below), 1..63 bytes
 *       "socket_path": "/run/sage/obs.sock", absolute, lexically normal,
 *                                            1..107 bytes
 *       "runtime_ids": ["pi"],               1..8 identifiers, sorted, unique
 *       "guest_channel": "sage.glove-observation.v1"}]}  optional, opaque
 *
 * Identifiers (aliases and runtime IDs): [a-z0-9][a-z0-9_-]{0,62}.
 * guest_channel: [a-z0-9][a-z0-9._-]{0,127}; Glove core never interprets
 * it (src/adapters resolves it). socket_path: starts with "/", has no empty
 * (//), "." or ".." component and no trailing "/", names a file below "/"
 * (not "/" itself), holds no control byte (below 0x20, or 0x7f), at most
 * 107 bytes (sun_path less its NUL). Sorting is strict byte order (strcmp).
 * Guest targets, TCP, UIDs, tokens and payload semantics are not
 * configurable: any other member is refused. An empty endpoint list is valid
 * (forwarding is then off).
 *
 * Stable error codes (each message starts with the JSON path, "$.endpoints[1].alias"):
 *   services.config_invalid_json   not strict JSON (syntax, invalid UTF-8, NUL,
 *                                  trailing data, nesting, not an object) (-EINVAL)
 *   services.config_too_large      more than GLOVE_SERVICES_CONFIG_MAX_BYTES (-EMSGSIZE)
 *   services.config_duplicate      a duplicate object key, alias or runtime ID (-EINVAL)
 *   services.config_unknown_field  a member not listed above (-EINVAL)
 *   services.config_missing_field  a required member is absent (-EINVAL)
 *   services.config_type           a member of the wrong JSON type (-EINVAL)
 *   services.config_schema_version schema_version is not 1 (-EINVAL)
 *   services.config_unsorted       endpoints or runtime_ids out of order (-EINVAL)
 *   services.config_path           socket_path not as above (-EINVAL)
 *   services.config_identifier     an alias, runtime ID or guest_channel not as above (-EINVAL)
 *   services.config_too_many       more than 16 endpoints or 8 runtime IDs (-E2BIG)
 *   services.config_empty          an empty runtime_ids array (-EINVAL)
 *   services.no_memory             (-ENOMEM)
 *   services.invalid_argument      a NULL argument (-EINVAL)
 * and, from glove_services_config_load, the protected-file codes
 *   services.file_path_relative, services.file_symlink, services.file_open,
 *   services.file_not_regular, services.file_owner, services.file_mode,
 *   services.file_links, services.file_too_large, services.file_read,
 *   services.file_changed (glove/base/file.h, glove_file_load_protected).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "glove/base/error.h"

#define GLOVE_SERVICES_SCHEMA_VERSION 1
/* The largest configuration file or text accepted, in bytes. */
#define GLOVE_SERVICES_CONFIG_MAX_BYTES 65536
/* At most this many endpoints, and runtime IDs per endpoint. */
#define GLOVE_SERVICES_MAX_ENDPOINTS 16
#define GLOVE_SERVICES_MAX_RUNTIME_IDS 8
/* Longest alias and runtime ID, in bytes (without the NUL). */
#define GLOVE_SERVICES_ALIAS_MAX 63
#define GLOVE_SERVICES_RUNTIME_ID_MAX 63
/* Longest guest_channel binding, in bytes (without the NUL). */
#define GLOVE_SERVICES_GUEST_CHANNEL_MAX 128
/* Longest socket_path, in bytes (without the NUL): sizeof(sun_path) - 1. */
#define GLOVE_SERVICES_SOCKET_PATH_MAX 107

struct glove_services_config;

/* One endpoint of a decoded configuration (read-only; owned by the
 * configuration, valid until glove_services_config_free). */
struct glove_services_config_endpoint {
        char alias[GLOVE_SERVICES_ALIAS_MAX + 1];
        char socket_path[GLOVE_SERVICES_SOCKET_PATH_MAX + 1];
        size_t n_runtime_ids; /* 1..GLOVE_SERVICES_MAX_RUNTIME_IDS */
        char runtime_ids[GLOVE_SERVICES_MAX_RUNTIME_IDS][GLOVE_SERVICES_RUNTIME_ID_MAX + 1]; /* sorted */
        bool has_guest_channel;
        char guest_channel[GLOVE_SERVICES_GUEST_CHANNEL_MAX + 1]; /* "" when absent */
};

/*
 * True when s is an alias or runtime identifier: [a-z0-9][a-z0-9_-]{0,62}.
 * NULL is not. The same rule names the alias sockets of the compatibility
 * directory (proxy.h, glove_services_pathname_listen).
 */
bool glove_services_identifier_valid(const char *s);

/*
 * True when path is a socket_path as the configuration requires (see the
 * top of this header). NULL is not.
 */
bool glove_services_socket_path_valid(const char *path);

/*
 * Decodes text[0..len) (need not be NUL-terminated) into a new configuration
 * stored in *out (caller frees with glove_services_config_free). On failure
 * *out is NULL and err holds one of the codes above with the JSON path.
 */
int glove_services_config_decode(const char *text, size_t len, struct glove_services_config **out,
                                 struct glove_error *err);

/*
 * Loads the protected file at path (absolute; not a symbolic link; a regular
 * file owned by owner_uid, mode 0600, one link, at most
 * GLOVE_SERVICES_CONFIG_MAX_BYTES; spec session-policy.md, "Protected
 * files") and decodes it as glove_services_config_decode. Errors: the
 * services.file_* codes above, then the decode codes with the path prefixed
 * to the message.
 */
int glove_services_config_load(const char *path, uid_t owner_uid, struct glove_services_config **out,
                               struct glove_error *err);

/* Number of endpoints (0..GLOVE_SERVICES_MAX_ENDPOINTS); 0 for NULL. */
size_t glove_services_config_count(const struct glove_services_config *c);

/* Endpoint i (sorted by alias), or NULL when i is out of range. Borrowed. */
const struct glove_services_config_endpoint *glove_services_config_endpoint(const struct glove_services_config *c,
                                                                            size_t i);

/* The guest_channel of endpoint i, or NULL when it has none or i is out of
 * range. Borrowed. */
const char *glove_services_config_guest_channel(const struct glove_services_config *c, size_t i);

/* The index of the endpoint named alias in *index; false when there is none. */
bool glove_services_config_find(const struct glove_services_config *c, const char *alias, size_t *index);

/* True when runtime_id is one of endpoint i's runtime IDs (exact bytes);
 * false for an out-of-range i or a NULL argument. */
bool glove_services_config_allows(const struct glove_services_config *c, size_t i, const char *runtime_id);

/* Frees c. NULL: nothing. */
void glove_services_config_free(struct glove_services_config *c);

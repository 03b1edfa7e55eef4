/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internal to src/supervisor: the decoded policy, and the small decoding
 * toolkit shared by the policy decoder (first error wins, "policy.*") and the
 * plan validator (every reason collected, "plan.*").
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/json.h"
#include "glove/supervisor/launch.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/policy.h"

/* ---- closed value sets (sorted; the index is the enum value) ---- */

enum sv_access { SV_ACCESS_DIRECT_WRITE, SV_ACCESS_EPHEMERAL_WRITE, SV_ACCESS_READ, SV_ACCESS_RETAINED_WRITE };
enum sv_materialization { SV_MAT_BIND, SV_MAT_COPY, SV_MAT_GIT_WORKTREE, SV_MAT_SNAPSHOT };
enum sv_create { SV_CREATE_EMPTY_DIRECTORY, SV_CREATE_GIT_WORKTREE, SV_CREATE_NEVER };
enum sv_cleanup { SV_CLEANUP_REMOVE, SV_CLEANUP_RETAIN };
enum sv_backend { SV_BACKEND_APPLE_CONTAINER, SV_BACKEND_LINUX_PRODUCTION, SV_BACKEND_MACOS_EXPERIMENTAL,
                  SV_BACKEND_REMOTE_LINUX_CONTAINER };

struct sv_enum {
        const char *const *names;
        size_t n;
        const char *what; /* for messages: "access", "sandbox_backend", ... */
};

extern const struct sv_enum sv_access_names, sv_materialization_names, sv_create_names, sv_cleanup_names,
        sv_backend_names, sv_discovery_names;

/* Index of s in e, or -1. */
int sv_enum_find(const struct sv_enum *e, const char *s);

/* ---- the decoded policy; every string is borrowed from policy->root ---- */

/* Field order of the six resource limits, as in plans and profiles. */
enum { SV_LIMIT_CPU_TIME_MS, SV_LIMIT_MEMORY_BYTES, SV_LIMIT_PIDS, SV_LIMIT_WALL_TIME_MS, SV_LIMIT_DISK_BYTES,
       SV_LIMIT_TERMINAL_OUTPUT_BYTES, SV_LIMIT_COUNT };
extern const char *const sv_limit_names[SV_LIMIT_COUNT];

struct sv_access_tuple {
        int access, materialization, create_policy, cleanup_policy; /* enum values */
        int64_t max_bytes;
};

struct sv_path_alias {
        const char *alias, *host_path, *target_path;
        int64_t max_ttl_secs;
        struct sv_access_tuple *access;
        size_t n_access;
};

struct sv_strings {
        const char **v;
        size_t n;
};

struct sv_template {
        const char *id, *runtime_id, *adapter_command_digest;
        int backend;
        struct sv_strings allowed_path_aliases, allowed_projection_destinations;
        bool has_launch;
        struct sv_strings search_paths, arguments, environment, read_only_paths; /* owned arrays */
        struct glove_supervisor_launch_template launch;                        /* points into the above */
};

struct sv_destination {
        const char *alias, *target_path;
};

struct sv_profile {
        const char *id;
        int64_t limits[SV_LIMIT_COUNT];
};

struct sv_egress_target {
        const char *host;
        int64_t port;
        bool allow_private;
};

struct sv_egress_policy {
        const char *id;
        struct sv_egress_target *targets;
        size_t n_targets;
};

struct sv_secret_mount {
        const char *handle, *runtime_id, *source_path, *target_path;
};

struct glove_supervisor_policy {
        json_t *root;
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        int64_t revision, max_plan_ttl_ms;
        struct sv_template *templates;
        size_t n_templates;
        struct sv_path_alias *aliases;
        size_t n_aliases;
        struct sv_destination *destinations;
        size_t n_destinations;
        struct sv_profile *profiles;
        size_t n_profiles;
        struct sv_strings egress_policy_ids, tool_policy_ids, secret_handles;
        struct sv_egress_policy *egress;
        size_t n_egress;
        struct sv_secret_mount *secret_mounts;
        size_t n_secret_mounts;
};

/* Lookups by identifier (NULL when absent). */
const struct sv_template *sv_policy_template(const struct glove_supervisor_policy *p, const char *id);
const struct sv_path_alias *sv_policy_alias(const struct glove_supervisor_policy *p, const char *alias);
bool sv_strings_contain(const struct sv_strings *s, const char *v);

/* ---- decoding context ---- */

struct sv_ctx {
        bool plan;                         /* true: collect plan reasons; false: first policy error */
        struct glove_error *err;           /* policy mode; internal failures in both modes */
        char *path_out;                    /* policy mode, may be NULL */
        size_t path_cap;
        struct glove_plan_verdict *verdict; /* plan mode */
        bool failed;                       /* policy mode: an offence is recorded */
        bool oom;                          /* an allocation failed */
};

/* Records an offence at path: in policy mode sets err (first wins) with
 * "<path>: <text>" and copies path to path_out; in plan mode appends the
 * reason. code is a static "policy.*" or "plan.*" literal. Returns -EINVAL. */
int sv_fail(struct sv_ctx *c, const char *code, const char *path, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Records a base "json.*" error (from a glove_json_* call into jerr) as the
 * matching "policy.*" / "plan.*" code at path. Returns -EINVAL (-ENOMEM and
 * c->oom set for json.no_memory). */
int sv_fail_json(struct sv_ctx *c, const struct glove_error *jerr, const char *path);

/* Path builders that always succeed: a path too long for the buffer is cut
 * and ends in "...". */
void sv_path_member(char out[GLOVE_JSON_PATH_MAX], const char *parent, const char *key);
void sv_path_index(char out[GLOVE_JSON_PATH_MAX], const char *parent, size_t index);

/* Getters: as glove_json_get_*, recording failures through sv_fail_json
 * with the member's path. Return 0 or -EINVAL. */
int sv_get_string(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, size_t max,
                  const char **out);
int sv_get_int(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, int64_t min,
               int64_t max, int64_t *out);
int sv_get_bool(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, bool *out);
int sv_get_array(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, size_t max_items,
                 json_t **out);
int sv_get_object(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, json_t **out);
int sv_as_object(struct sv_ctx *c, const json_t *v, const char *path);

/* Rejects members of obj not in allowed (NULL-terminated): one offence per
 * unknown member, code "<prefix>.unknown_field", or "plan.forbidden_field"
 * for a plan member whose name carries launch or host authority. Returns 0
 * or -EINVAL. */
int sv_check_keys(struct sv_ctx *c, const json_t *obj, const char *const allowed[], const char *path);

/* Identifier charset check (docs/session-policy.md, "Identifiers"). */
bool sv_identifier_valid(const char *s);
bool sv_digest_hex_valid(const char *s);

/* Checks s as an identifier at path. In plan mode a bad value is classified:
 * "plan.secret_value" when secret is true, else "plan.host_path" when it
 * contains '/', "plan.environment_entry" when it looks like NAME=VALUE, else
 * "plan.invalid_identifier". Returns 0 or -EINVAL. */
int sv_check_identifier(struct sv_ctx *c, const char *s, const char *path, bool secret);

/* For a plan string that failed its check: "plan.host_path" when it
 * contains '/', "plan.environment_entry" when it looks like NAME=VALUE,
 * else fallback. */
const char *sv_plan_value_code(const char *s, const char *fallback);

/* Gets a required identifier member. */
int sv_get_identifier(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, const char **out);

/* Gets a required member that must be one of e's names; *out the index. */
int sv_get_enum(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, const struct sv_enum *e,
                int *out);

/* Gets a required array of identifiers (at most max) that must be sorted by
 * bytes and unique ("*.array_unsorted", "*.array_duplicate"). out->v is
 * malloc'd (strings borrowed); on error out is empty. In plan mode every bad
 * element is reported. */
int sv_get_identifier_array(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, size_t max,
                            bool secret, struct sv_strings *out);

/* Checks that key(i) for i in [0, n) is strictly increasing; reports the
 * first violation at "<array_path>[i]" (unsorted or duplicate). Returns 0 or
 * -EINVAL. */
int sv_check_sorted(struct sv_ctx *c, const char *array_path, size_t n,
                    const char *(*key)(const void *items, size_t i), const void *items);

/* Lexical path checks for policy paths (absolute, not "/", normalized, no
 * control characters). Returns 0 or -EINVAL with the policy code. */
int sv_check_abs_path(struct sv_ctx *c, const char *p, const char *path);
bool sv_paths_overlap(const char *a, const char *b);

/* sv_check_abs_path, and not beneath /dev, /proc or /sys
 * ("policy.path_restricted"). */
int sv_check_host_path(struct sv_ctx *c, const char *p, const char *path);

/* Gets an array of at most max_items strings of at most max_len bytes each
 * (policy mode). An absent optional member gives an empty list. out->v is
 * malloc'd (strings borrowed). */
int sv_get_string_list(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, bool required,
                       size_t max_items, size_t max_len, struct sv_strings *out);

/* Launch template decoding (launch.c): decodes obj (the "launch" member, at
 * path) into t, checking the fields and the digest against
 * t->adapter_command_digest. */
int sv_decode_launch(struct sv_ctx *c, const json_t *obj, const char *path, struct sv_template *t);
void sv_template_free(struct sv_template *t);

/* Egress policies and secret mounts (policy_extra.c). */
int sv_decode_egress_policies(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p);
int sv_decode_secret_mounts(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p);

/* Cross-field path checks (policy_paths.c): host path overlaps, sandbox
 * target reservations and overlaps, launch paths against aliases. */
int sv_check_policy_paths(struct sv_ctx *c, const struct glove_supervisor_policy *p);

/* The protected-file reader shared by the session policy and the exposure
 * policy loaders (policy_load.c): path absolute; a regular file of
 * owner_uid, mode 0600, one link, no final symlink, at most max_bytes; read
 * through one descriptor whose identity is rechecked after the read. *out
 * (malloc'd, NUL-terminated) and *out_len on success. Codes policy.file_*,
 * policy.no_memory; messages start with the path. */
int sv_load_protected_file(const char *path, uid_t owner_uid, size_t max_bytes, char **out, size_t *out_len,
                           struct glove_error *err);

/* Test hook (policy_load.c): when set, called after the policy file has been
 * read and before its identity is rechecked. Unit tests use it to provoke
 * policy.file_changed; production code never sets it. */
extern void (*glove_supervisor_policy_load_test_hook)(int fd, const char *path);

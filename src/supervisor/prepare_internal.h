/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* A prepared launch's private shape, shared by the files of the launch
 * preparation (prepare.c, its path grants and exposure sources in
 * prepare_grant.c, its binding in prepare_binding.c, and the adapter,
 * bundle and lease parts). */
#include <stdbool.h>
#include <stdint.h>

#include <sys/types.h>

#include <jansson.h>

#include "glove/supervisor/adapter.h"
#include "glove/supervisor/manifest.h"
#include "glove/supervisor/prepare.h"

struct sv_template;

enum sv_mount_kind { MK_READ_BIND, MK_EPHEMERAL, MK_RETAINED, MK_RO_PATH, MK_EXEC, MK_BUNDLE, MK_LEASE };

struct sv_mount {
        int kind;
        char *target;      /* owned; the path inside the sandbox */
        char *source;      /* owned; the host path; NULL for an empty tree */
        const char *alias; /* borrowed from the policy; NULL for launch paths; for an
                            * exposure grant its exposure_id (points to name) */
        /* An exposure grant (exposure.h): exposure_id (owned), generation
         * and scope digest; the binding records these, never the source. */
        bool exposure;
        char *name;
        int64_t exposure_generation;
        char scope_digest[65];
        bool is_dir, read_only;
        uint64_t dev, ino, mnt_id, max_bytes;
        int fd;            /* the pinned descriptor (O_PATH), or -1 */
        struct sv_image *img; /* retained: owned */
        /* retained (prepare_stage.c): the baseline's manifest digests ("" for
         * no source), the stage's entries and file bytes. */
        char stage_digest[65], source_digest[65];
        size_t stage_entries;
        uint64_t stage_bytes;
};

/* C: one credential lease of a launch (lease.c). */
struct sv_lease {
        const char *handle, *target; /* borrowed from the policy */
        char version[65];            /* SHA-256 hex of the content mounted */
        int lock_fd;                 /* holds LOCK_EX on LEASES/HANDLE/lock, or -1 */
};

struct glove_supervisor_launch {
        const struct glove_supervisor_runtime_config *cfg;
        struct glove_supervisor_sources *sources; /* #26: borrowed while prepared; NULL: open here */
        char *session_id;
        const char *template_id;  /* borrowed from the policy */
        const char *runtime_id;   /* the template's, borrowed from the policy */
        char *egress_id;          /* owned */
        const struct sv_egress_policy *egress_policy;
        char **argv, **envp;
        size_t argc, envc;
        struct glove_supervisor_limits limits;
        struct glove_net_policy *egress;
        struct sv_mount *mounts;
        size_t n_mounts, cap_mounts;
        const char *cwd;
        /* B: library projections and skills (projection.c) */
        struct sv_projection *projections; /* plan order */
        size_t n_projections;
        struct sv_skill *skills;           /* sorted by key */
        size_t n_skills;
        const char *skills_dir;            /* the adapter's (static), or NULL: not an adapter runtime */
        char skills_digest[65];
        /* C: credential leases (lease.c) */
        struct sv_lease *leases;
        size_t n_leases;
        /* A: adapter and discovery (discovery.c) */
        const struct glove_supervisor_adapter *adapter; /* NULL: not an adapter runtime */
        char *exe_path;            /* owned; adapter runtimes: the file that runs (argv[0]) */
        uint64_t exe_dev, exe_ino; /* its pinned identity (the MK_EXEC mount's) */
        bool exe_discovered;       /* found by runtime_discovery */
        /* D: refinement-eval-v1 (refinement.c); all zero for an ordinary plan */
        struct sv_refinement {
                char *fixture;               /* the fixture's canonical bytes (owned) */
                size_t fixture_len;
                char *fixture_projection_id; /* never mounted */
                json_t *binding;             /* the binding's "refinement" member (owned) */
        } refinement;
};

/* One projection of the plan, as the binding commits it (all owned). */
struct sv_projection {
        char *projection_id, *destination_alias, *target;
        char content_digest[65];
};

/* One expanded skill: SKILL.md at <skills_dir>/<key>/ (all owned). */
struct sv_skill {
        char *key, *path, *projection_id;
        char *content;
        size_t content_len;
        char content_digest[65];
};

struct sv_template;

/* Resolves the plan's library_projections (root: the decoded plan) for
 * template t into l: each bundle loaded and verified (bundle.h) beneath
 * cfg->library_bundle_root, a read-only pinned MK_BUNDLE mount at
 * <target_path>/<digest>.json, and for an adapter runtime its skill entries
 * (l->skills) and the skills-projection digest (docs/digests.md). Returns 0
 * or -errno with err set (launch.bundles_unavailable, bundle.*,
 * launch.invalid_plan, launch.no_memory). */
int sv_launch_projections(struct glove_supervisor_launch *l, const struct sv_template *t, const json_t *root,
                          struct glove_error *err);

/* refinement-eval-v1 (refinement.c): for a refinement plan (root: the
 * decoded plan), reads the fixture projection through the bundle root
 * descriptor with the bundle file checks, decodes it strictly
 * (refinement.fixture_*), checks it against the binding, the plan context
 * and l->session_id (refinement.fixture_mismatch_*), and keeps its bytes and
 * the binding's "refinement" record in l->refinement. An ordinary plan: 0,
 * nothing kept. Errors: launch.invalid_plan, launch.bundles_unavailable,
 * bundle.*, refinement.*, launch.no_memory. */
int sv_launch_refinement(struct glove_supervisor_launch *l, const json_t *root, struct glove_error *err);
/* True for the refinement fixture's projection, which is not mounted. */
bool sv_launch_refinement_skips(const struct glove_supervisor_launch *l, const char *projection_id);
void sv_launch_refinement_free(struct glove_supervisor_launch *l);

/* Adds the agent-owned skills directory chain (beneath the home) and each
 * skill's KEY directory and SKILL.md to plan (uid/gid: the agent inside). */
int sv_launch_add_skills(struct glove_mount_plan *plan, const struct glove_supervisor_launch *l, uid_t uid, gid_t gid,
                         struct glove_error *err);

/* Sets "projections", "skills" and "skills_projection_digest" on binding b.
 * Returns 0 or -1 (allocation). */
int sv_launch_projection_binding(const struct glove_supervisor_launch *l, json_t *b);

/* Frees what sv_launch_projections made (not the mounts). */
void sv_launch_projections_free(struct glove_supervisor_launch *l);


/* Resolves host path p (what names it in messages: an alias, "read_only_paths")
 * into m by descriptor from "/", never following a link; checks the
 * restricted roots. Fills m->source, is_dir, dev, ino, mnt_id, fd. Returns 0
 * or -errno with err set (materialize.*, launch.no_memory). */
int sv_launch_resolve(const struct glove_supervisor_runtime_config *cfg, const char *what, const char *p,
                      struct sv_mount *m, struct glove_error *err);

/* Refuses host path p (what names it in messages) when it overlaps "/",
 * /dev, /proc, /run, /sys, a directory of cfg->restricted or the
 * materialization root, by path or by region (glove/container/grant.h,
 * guards). Returns 0 or -errno with err set (materialize.restricted; the
 * guards' own errors, e.g. grant.mountinfo). */
int sv_check_restricted(const struct glove_supervisor_runtime_config *cfg, const char *what, const char *p,
                        struct glove_error *err);

/* ---- path grants and exposure sources (prepare_grant.c) ---- */

/* A decoded path grant: alias, or an exposure (exposure_id set, alias
 * NULL). name is the one naming it under the root (images, mounts). */
struct sv_grant {
        const char *alias;
        const char *exposure_id;
        int64_t generation;
        const char *name;
        int access, materialization, cleanup;
        int64_t max_bytes;
};

/* Sets err to launch.invalid_plan naming what did not decode; returns
 * -EINVAL. */
int sv_bad_plan(struct glove_error *err, const char *what);

/* The arguments every prepare.h entry point needs: a configuration with a
 * policy and a materialization root, a valid session id and a plan.
 * launch.invalid_argument. */
int sv_check_args(const struct glove_supervisor_runtime_config *cfg, const char *session_id, const char *plan,
                  struct glove_error *err);

/* ---- the retained stage (prepare_stage.c) ---- */

/* ROOT/images/SESSION/NAME plus this: the baseline file. */
#define SV_STAGE_BASELINE_SUFFIX ".baseline.json"

/* What a retained grant's stage is copied from: the pinned source (fd
 * O_PATH|O_DIRECTORY, borrowed; -1: none, the stage starts empty) and, for
 * an alias, its host path (borrowed). */
struct sv_stage_source {
        int fd;
        const char *host_path;
};

/* The source's manifest (*out owned; NULL when s has no source), bounded by
 * m->max_bytes of file contents: materialize.quota_exceeded beyond; every
 * directory and file readable by the agent's ids through its permission
 * bits (as in the sandbox's ephemeral copy), else materialize.copy. */
int sv_stage_source_manifest(const struct glove_supervisor_runtime_config *cfg, const struct sv_mount *m,
                             const struct sv_stage_source *s, struct glove_manifest **out, struct glove_error *err);

/* The stage (manifest built right after the copy) is exactly the copy of
 * the source manifest taken before it (types, sizes, digests, the copied
 * permission bits; FIFOs, sockets and devices not copied), else
 * materialize.changed naming the first entry that differs. */
int sv_stage_check_copy(const struct sv_mount *m, const struct glove_manifest *src,
                        const struct glove_manifest *stage, struct glove_error *err);

/* Fills m's fresh, mounted image (m->fd) with a copy of s, builds the
 * stage's manifest and writes the baseline file (src_manifest: from
 * sv_stage_source_manifest, borrowed). Sets m's stage fields. Codes
 * materialize.quota_exceeded, materialize.copy, materialize.too_deep,
 * materialize.changed, materialize.stage, materialize.mount. */
int sv_stage_fill(const struct glove_supervisor_runtime_config *cfg, const char *session_id, struct sv_mount *m,
                  const struct sv_stage_source *s, struct glove_manifest *src_manifest, struct glove_error *err);

/* Decodes path grant o of a decoded plan into g (strings borrowed from o).
 * Returns 0 or -EINVAL with err set (launch.invalid_plan). */
int sv_decode_grant(const json_t *o, struct sv_grant *g, struct glove_error *err);

struct glove_exposure_source;

/* Moves the pre-opened source of exposure_id at generation out of s (NULL:
 * none) into out. Returns false when s has none. */
bool sv_sources_take(struct glove_supervisor_sources *s, const char *exposure_id, int64_t generation,
                     struct glove_exposure_source *out);

/* Now in milliseconds since the epoch: cfg->now_ms() when set, else the
 * realtime clock (exposure expiry). */
int64_t sv_cfg_now_ms(const struct glove_supervisor_runtime_config *cfg);

/* Fills exposure mount m from src (descriptor and identity taken over, the
 * host path copied, never named in a message) after sv_check_restricted.
 * Returns 0 or -errno with err set (materialize.restricted,
 * launch.no_memory). */
int sv_exposure_mount(const struct glove_supervisor_runtime_config *cfg, struct sv_mount *m,
                      struct glove_exposure_source *src, struct glove_error *err);

/* Appends a zeroed mount of kind at target (copied; fd -1) to l; NULL with
 * err set (launch.no_memory) on allocation failure. */
struct sv_mount *sv_launch_mount_new(struct glove_supervisor_launch *l, int kind, const char *target,
                                     struct glove_error *err);

/* Releases and removes the last mount appended. */
void sv_launch_mount_drop_last(struct glove_supervisor_launch *l);

/* Appends a copy of s to the NULL-terminated vector *v of *n entries.
 * Returns 0 or -ENOMEM. */
int sv_strv_push(char ***v, size_t *n, const char *s);

/* C: credential leases (lease.c; include/glove/supervisor/lease.h). */
/* Imports the lease of each secret handle of the plan (root: the decoded
 * plan) for template t and appends its MK_LEASE mount (writable pinned bind
 * of the live copy at the secret's target_path). Returns 0 or -errno with
 * err set (lease.*). */
int sv_launch_leases(struct glove_supervisor_launch *l, const json_t *root, const struct sv_template *t,
                     struct glove_error *err);
/* Closes l's lock descriptors (a keeper's copies hold on); idempotent. */
void sv_launch_leases_unlock(struct glove_supervisor_launch *l);
/* Closes the lock descriptors and frees l's leases. */
void sv_launch_leases_free(struct glove_supervisor_launch *l);
/* Adds "leases":[{"handle","target","version"}] (plan order) to binding b.
 * Returns 0 or -1. */
int sv_launch_leases_binding(const struct glove_supervisor_launch *l, json_t *b);

/* ---- A: adapter and discovery (discovery.c) ---- */

/* Sets l->adapter from t's runtime_id. For an adapter runtime, resolves the
 * executable that runs: with runtime_discovery, searches t's
 * executable_search_paths (prepare.h, "Native adapters and discovery");
 * pinned, resolves executable_path. Either way adds its MK_EXEC mount
 * (pinned, read-only, at its own path) and sets l->exe_*. Returns 0 or
 * -errno with err set (launch.discovery_failed, materialize.*,
 * launch.no_memory). */
int sv_adapter_prepare(struct glove_supervisor_launch *l, const struct sv_template *t, struct glove_error *err);

/* Appends HOME=/home/agent and the adapter's managed variable to l->envp
 * for an adapter runtime (the policy refuses a template that sets them);
 * nothing otherwise. Returns 0 or -ENOMEM (launch.no_memory). */
int sv_adapter_environment(struct glove_supervisor_launch *l, struct glove_error *err);

/* The binding's "adapter" object (prepare.h), a new reference; NULL for a
 * non-adapter runtime or on allocation failure. */
json_t *sv_adapter_binding(const struct glove_supervisor_launch *l);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Managed-session launch preparation (issue 9, "Materializations" and "The
 * launch comes only from policy"; spec session-policy.md, "Filesystem and
 * launch binding", the write-mode and materialization paragraphs;
 * docs/session-policy.md, "Materializations").
 *
 * gloved turns a stored, already validated plan into a launch: the argv and
 * environment of the runtime template, the plan's six limits, the egress
 * policy named by the plan, and the materializations of its path grants.
 * Host paths are resolved by descriptor, component by component from "/",
 * never following a symbolic link; what is mounted and what the launch
 * binding records is the identity (dev, ino, mount id) of the resolved
 * descriptor.
 *
 * Materialization root layout (ROOT = cfg->materialization_root):
 *   ROOT/images/SESSION/ALIAS.ext4   retained images (0600, exactly max_bytes)
 *   ROOT/mounts/SESSION/ALIAS        host mount points of attached images (0700)
 *
 * Stable error codes (struct glove_error.code; the message names the alias
 * or path, never a secret):
 *   materialize.symlink        a component of a host path is a symbolic link (-ELOOP)
 *   materialize.missing        a host path (or a component) does not exist (-ENOENT)
 *   materialize.file_type      a host path is neither a directory nor a regular file (-EINVAL)
 *   materialize.restricted     a host path is, or overlaps, /proc, /sys, /dev, /run or
 *                              one of cfg->restricted (-EPERM)
 *   materialize.overlap        two resolved host paths of one launch overlap (-EINVAL)
 *   materialize.resolve        any other failure opening a host path (-errno)
 *   materialize.root_full      the materialization root has no room for an image (-ENOSPC)
 *   materialize.image          creating or sizing an image failed otherwise (-errno)
 *   materialize.mkfs           mkfs.ext4 failed (-EIO; message carries its bounded output)
 *   materialize.loop           attaching a loop device failed (-errno)
 *   materialize.mount          mounting an image on the host failed (-errno)
 *   launch.direct_write        a path grant asks for direct_write (-EPERM)
 *   launch.retained_unavailable  a retained_write grant while the retained mechanism
 *                              was not constructed; the message says why (-EOPNOTSUPP)
 *   launch.template_not_launchable  the template has no launch, or its runtime is
 *                              not an adapter and has no pinned executable_path (-EINVAL)
 *   launch.discovery_failed    runtime_discovery found no trusted executable: the
 *                              message lists every search directory in order with
 *                              why it was refused or that it has no such file
 *                              (-ENOENT); or the file changed between its trust
 *                              walk and its pinning (-EAGAIN); or discovery does
 *                              not name the template's adapter (-EINVAL)
 *   launch.exposures_unavailable  a grant names an exposure and cfg->exposures
 *                              is NULL (-EOPNOTSUPP)
 *   exposure.*                 an exposure grant's source at prepare
 *                              (glove_exposures_open_source, exposure.h)
 *   launch.invalid_plan        the plan bytes do not decode against the policy (the
 *                              caller is expected to have validated them) (-EINVAL)
 *   launch.invalid_argument    NULL or malformed arguments (-EINVAL)
 *   launch.no_memory           (-ENOMEM)
 * Codes of glove_mount_plan_add_* (container/mount_plan.h) pass through from
 * glove_supervisor_launch_add_mounts.
 *
 * Threading: none of these functions is thread-safe for one launch; distinct
 * launches may be prepared concurrently (each session has its own paths),
 * but the exposure registry (cfg->exposures) is used only from the thread
 * that owns it: a prepare off that thread takes its exposure sources from
 * glove_supervisor_sources_open (below).
 * glove_supervisor_launch_prepare and glove_supervisor_cleanup block (file
 * creation, mkfs as a waited-for child, mount(2)).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/supervisor/policy.h"

struct glove_exposures;
struct glove_mount_plan;
struct glove_net_policy;

/* Largest mkfs.ext4 output kept for an error message, in bytes. */
#define GLOVE_SUPERVISOR_MKFS_OUTPUT_MAX 1024
/* Most extra restricted paths in glove_supervisor_runtime_config.restricted. */
#define GLOVE_SUPERVISOR_RESTRICTED_MAX 16
/* The HOME given to the agent unless the template's environment sets one. */
#define GLOVE_SUPERVISOR_AGENT_HOME "/home/agent"
/* Most bytes of `skill` content one launch expands (all its projections
 * together); each SKILL.md is also at most GLOVE_MOUNT_FILE_MAX (1 MiB). The
 * skills are files of the mount plan, whose data is bounded (4 MiB). */
#define GLOVE_SUPERVISOR_SKILLS_MAX_BYTES (2U << 20)
/* Most skills one launch expands (all its projections together): more is
 * bundle.too_many_skills. Each is one `skills[]` entry of the launch
 * binding (about 200 bytes for a short key), so that a plan of the largest
 * size with ordinary names keeps its binding within
 * GLOVE_RUNTIME_BINDING_MAX (runtime/runtime.h). */
#define GLOVE_SUPERVISOR_SKILLS_MAX 64
/* Most bytes of distinct bundle files one launch reads (32 MiB, two bundles
 * of the largest size): each distinct content_digest of the plan is opened,
 * read, hashed and decoded once however many projections name it, and a
 * bundle that would take the launch past this is refused before it is read
 * (bundle.launch_too_large). With GLOVE_PLAN_MAX_LIBRARY_PROJECTIONS this
 * bounds a plan's bundle work at prepare. */
#define GLOVE_SUPERVISOR_BUNDLES_MAX_BYTES ((uint64_t)32 << 20)
/* TERM given to the agent unless the template's environment sets one. */
#define GLOVE_SUPERVISOR_DEFAULT_TERM "xterm-256color"

/*
 * Built once at gloved start; every pointer is borrowed and must outlive each
 * launch prepared with it.
 *   policy                   the frozen policy the plans were validated against
 *   materialization_root     absolute path, verified by the caller to be a
 *                            directory of mode 0700 owned by the service user
 *   materialization_root_fd  an O_DIRECTORY (O_PATH allowed) descriptor of it;
 *                            every file under the root is made relative to it
 *   restricted               NULL-terminated list (at most
 *                            GLOVE_SUPERVISOR_RESTRICTED_MAX) of absolute host
 *                            paths no alias may be, contain or be contained in
 *                            (gloved's runtime dir, state dir, the
 *                            materialization root); may be NULL
 *   retained_available       glove_supervisor_retained_probe() returned true
 *   retained_why             when not available: why (code and message), copied
 *                            into launch.retained_unavailable's message; may be NULL
 *   agent_uid, agent_gid     the agent's ids OUTSIDE the sandbox (the service
 *                            user's uid/gid): owner of a retained image's root
 *                            directory and of the copied trees' files, and the
 *                            owner every bundle file must have
 *   library_bundle_root      absolute path of the library bundle root
 *                            (--library-bundle-root), verified by the caller to
 *                            be a directory of mode 0700 owned by the service
 *                            user; NULL: no bundle root was constructed, and a
 *                            plan with library_projections is refused
 *                            (launch.bundles_unavailable)
 *   library_bundle_root_fd   an O_DIRECTORY descriptor of it (the pinned root;
 *                            bundles are opened relative to it only)
 *   lease_root, lease_root_fd  (C: credential leases, lease.h) the lease
 *                            store, STATE_DIR/leases (0700, the service
 *                            user's), and an O_DIRECTORY descriptor of it;
 *                            lease_root NULL: no store (a plan with secret
 *                            handles is lease.unavailable)
 *   exposures                the path exposure registry (exposure.h), borrowed;
 *                            NULL: none constructed (no --path-exposure-*), and
 *                            a plan with an exposure grant is refused
 *                            (launch.exposures_unavailable)
 *   now_ms                   gloved's clock (Unix ms) for the exposures' expiry
 *                            at prepare; NULL: CLOCK_REALTIME
 */
struct glove_supervisor_runtime_config {
        const struct glove_supervisor_policy *policy;
        const char *materialization_root;
        int materialization_root_fd;
        const char *const *restricted;
        bool retained_available;
        const struct glove_error *retained_why;
        uid_t agent_uid;
        gid_t agent_gid;
        const char *library_bundle_root;
        int library_bundle_root_fd;
        /* C: credential leases */
        const char *lease_root;
        int lease_root_fd;
        /* #26: dynamic path exposures */
        const struct glove_exposures *exposures;
        int64_t (*now_ms)(void);
        /* #28: local services (docs/local-services.md, "Grants never expose
         * the socket"). When set, called for every resolved host source of
         * the launch (alias grants, exposure grants, read-only launch paths)
         * with its descriptor (O_PATH, borrowed for the call) and what names
         * it (the alias, or "launch path"), before anything is materialized;
         * a negative return (-errno with err set, e.g.
         * services.grant_exposes_socket) fails the prepare with that error.
         * Called on the preparing thread: it must be safe to call from any
         * thread. NULL: no check. */
        int (*grant_check)(void *ctx, int fd, const char *what, struct glove_error *err);
        void *grant_check_ctx;
};

/*
 * Probes the retained mechanism (retained_write images): mkfs.ext4 exists at
 * /usr/sbin/mkfs.ext4 or /sbin/mkfs.ext4 (symbolic links resolved), the
 * resolved binary and its directory are owned by root and not writable by
 * group or others; /dev/loop-control opens O_RDWR; the process may mount
 * (effective uid 0 and CAP_SYS_ADMIN effective). Returns true, or false with
 * why in *why (may be NULL): codes retained.no_mkfs, retained.mkfs_unsafe,
 * retained.no_loop_control, retained.no_mount_capability. Cheap; no state.
 */
bool glove_supervisor_retained_probe(struct glove_error *why);

/* One prepared launch; opaque, owned by the caller (glove_supervisor_launch_free). */
struct glove_supervisor_launch;

/*
 * Native adapters and discovery (issue 11; docs/session-policy.md, "Native
 * adapters and discovery"): a template whose runtime_id is in the adapter
 * table (adapter.h) is an adapter runtime. With runtime_discovery its
 * executable is searched for by the adapter's executable name in the
 * template's executable_search_paths only, in order. A search directory and
 * each ancestor from "/" are walked without following links and must be
 * owned by root or cfg->agent_uid (the service user) and writable by
 * neither group nor others (a root-owned sticky directory passes as an
 * ancestor, never as the search directory). The entry is canonicalized
 * (realpath), the canonical path walked again the same way, and the file
 * must be owned by root or the service user, not group/other-writable, a
 * regular file with an execute bit; it is re-opened without following
 * links and its dev/ino must be the walked one. A refused directory is
 * skipped; none left: launch.discovery_failed. Pinned or discovered, an
 * adapter runtime's executable is a read-only pinned bind at its own path
 * (mount kind "executable"), even beneath /usr or a read_only_paths entry.
 *
 * Resolves plan[0..plan_len) (canonical bytes, already validated by
 * glove_supervisor_plan_validate against cfg->policy) for session_id (an
 * identifier, docs/session-policy.md "Identifiers") into *out:
 *   argv   the template's executable_path (an adapter runtime: the pinned,
 *          possibly discovered, canonical executable) then its arguments
 *   envp   the template's environment; then for an adapter runtime
 *          HOME=/home/agent and the adapter's managed_env (the policy
 *          refuses a template setting either, policy.managed_environment),
 *          otherwise HOME=/home/agent unless it sets HOME; then
 *          TERM=xterm-256color unless it sets TERM
 *   limits the plan's six limits
 *   egress the plan's egress_policy_id through the policy's egress_policies:
 *          no targets -> NULL (offline); else one rule per host:port with
 *          that target's allow_private
 *   mounts read_only_paths and the executable (when outside /usr) as
 *          read-only pinned binds at the same path; per path grant:
 *          read -> read-only pinned bind at the alias's target_path;
 *          ephemeral_write+copy -> a tmpfs of exactly max_bytes filled by a
 *          copy of the host directory whenever it exists; create_policy
 *          decides only when it is absent: empty_directory starts empty,
 *          never (and git_worktree) fail with materialize.missing; the
 *          host path is resolved and vetted in every case (session-policy
 *          ruling "create_policy decides only absence");
 *          retained_write -> ROOT/images/SESSION/ALIAS.ext4 created (O_EXCL,
 *          0600, fallocate'd to exactly max_bytes), mkfs.ext4'ed, attached to
 *          a loop device (LO_FLAGS_AUTOCLEAR), mounted nosuid,nodev at
 *          ROOT/mounts/SESSION/ALIAS, bound read-write at target_path. Images
 *          are per session: an image already present for this session is
 *          refused (materialize.image, -EEXIST), never reused or replaced.
 *          direct_write -> launch.direct_write.
 *          A grant naming an exposure (exposure_id, exposure_generation)
 *          is materialized the same way, at its root's target_path, from
 *          the descriptor glove_exposures_open_source checked at cfg's
 *          now (its dev/ino/mnt_id pin the bind or the copy; the path is
 *          never resolved again here); a retained image is named by the
 *          exposure_id where an alias is used above
 *          (ROOT/images/SESSION/EXPOSURE_ID.ext4). Its errors pass through
 *          (exposure.unknown, exposure.superseded, exposure.revoked,
 *          exposure.expired, exposure.changed, exposure.root_unavailable);
 *          without cfg->exposures launch.exposures_unavailable
 *          (-EOPNOTSUPP). An ephemeral copy of an exposure has no
 *          create_policy: the project always exists (else exposure.changed).
 * Every host path is resolved as described above (codes materialize.*).
 * On failure *out is NULL and nothing made is left behind (mounts
 * unmounted, loops detached, fresh images and directories removed).
 * Returns 0 or -errno with err set (codes above).
 */
int glove_supervisor_launch_prepare(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                    const char *plan, size_t plan_len, struct glove_supervisor_launch **out,
                                    struct glove_error *err);

/*
 * #26, exposure sources opened ahead (spec session-policy.md, "Dynamic path
 * exposures"). The exposure registry is not safe to use from two threads,
 * and gloved prepares launches on worker threads: the thread that owns
 * cfg->exposures (gloved's loop, at start_session) opens the source of
 * every exposure grant of plan with glove_exposures_open_source at now_ms
 * (gloved's clock: the start-time expiry and identity check), and the
 * worker prepares from those descriptors only
 * (glove_supervisor_launch_prepare_sources), never touching the registry.
 * *out (owned by the caller, glove_supervisor_sources_free; NULL-safe) is
 * set even for a plan without exposure grants. Errors: the exposure.* codes
 * of open_source, launch.exposures_unavailable (an exposure grant and
 * cfg->exposures NULL), launch.invalid_plan, launch.no_memory; nothing is
 * left open on error.
 */
struct glove_supervisor_sources;
int glove_supervisor_sources_open(const struct glove_supervisor_runtime_config *cfg, const char *plan,
                                  size_t plan_len, int64_t now_ms, struct glove_supervisor_sources **out,
                                  struct glove_error *err);
void glove_supervisor_sources_free(struct glove_supervisor_sources *s);

/*
 * glove_supervisor_launch_prepare with the exposure sources opened ahead:
 * each exposure grant takes its descriptor out of sources (borrowed; what
 * is taken is then owned by the launch), and the registry is not used.
 * sources NULL: as glove_supervisor_launch_prepare, which opens each
 * source itself at cfg->now_ms (single-threaded callers, tests).
 */
int glove_supervisor_launch_prepare_sources(const struct glove_supervisor_runtime_config *cfg,
                                            const char *session_id, const char *plan, size_t plan_len,
                                            struct glove_supervisor_sources *sources,
                                            struct glove_supervisor_launch **out, struct glove_error *err);

/* NULL-terminated argv and envp, borrowed from l (valid until free). */
char *const *glove_supervisor_launch_argv(const struct glove_supervisor_launch *l);
char *const *glove_supervisor_launch_envp(const struct glove_supervisor_launch *l);

/* The runtime_id of the plan's runtime template (borrowed from the policy
 * the launch was prepared against; valid for the launch's life). */
const char *glove_supervisor_launch_runtime_id(const struct glove_supervisor_launch *l);

/*
 * The largest file the agent of l may write, in bytes, for RLIMIT_FSIZE
 * (struct glove_session_desc.file_size_max), or 0 for no bound: with a
 * credential lease (a host file bound writable, lease.h) the largest of
 * the plan's disk_bytes (the size of /tmp, HOME, /dev/shm) and every
 * writable grant's max_bytes, so no legitimate write is refused (no file
 * can outgrow its filesystem) while a lease grows the host disk by at most
 * that much; without a lease 0 (every writable filesystem is already sized).
 */
uint64_t glove_supervisor_launch_file_size_max(const struct glove_supervisor_launch *l);

/* The plan's six limits (spec session-policy.md, the plan's "limits"), as
 * the plan gives them: every one at least 1. The caller (gloved's runtime)
 * hands them to the session engine (struct glove_session_limits has the
 * same fields and units); the supervisor does not depend on the engine. */
struct glove_supervisor_limits {
        uint64_t cpu_time_ms;           /* CPU time of the whole tree, ms */
        uint64_t memory_bytes;          /* memory of the whole tree, bytes */
        uint64_t pids;                  /* processes and threads */
        uint64_t wall_time_ms;          /* from release to end, ms */
        uint64_t disk_bytes;            /* each private writable tmpfs, bytes */
        uint64_t terminal_output_bytes; /* output relayed at most, bytes */
};

/* Copies the plan's six limits of l into *out (all 0 when l is NULL). */
void glove_supervisor_launch_limits(const struct glove_supervisor_launch *l, struct glove_supervisor_limits *out);

/* Moves the egress policy out of l: NULL when offline or already taken; the
 * caller owns the result (glove_net_policy_free, then free). */
struct glove_net_policy *glove_supervisor_launch_take_egress(struct glove_supervisor_launch *l);

/* The agent's working directory inside the sandbox: the target of the
 * first writable grant, else of the alias mount whose target sorts first,
 * else NULL (HOME). Borrowed. */
const char *glove_supervisor_launch_cwd(const struct glove_supervisor_launch *l);

/*
 * The add_mounts hook of struct glove_session_desc (launch = the launch):
 * adds the launch's pinned binds and trees to plan. Returns 0 or the -errno
 * and err of glove_mount_plan_add_*.
 */
int glove_supervisor_launch_add_mounts(struct glove_mount_plan *plan, void *launch, struct glove_error *err);

/*
 * The launch binding so far: a new reference to a JSON object of integers,
 * strings, booleans, arrays and objects only (canonical-encodable; members
 * are sorted when encoded), NULL on allocation failure:
 *   {"argv":[...], "environment_names":[...sorted, unique],
 *    "limits":{"cpu_time_ms","disk_bytes","memory_bytes","pids",
 *              "terminal_output_bytes","wall_time_ms"},
 *    "mounts":[{"target":PATH,"kind":"read_bind|ephemeral_tmpfs|retained_image|
 *               read_only_path|executable|lease","read_only":BOOL,
 *               "source":{"dev":N,"ino":N,"mnt_id":N} (absent for an empty tree),
 *               "alias":ID (alias grants),"max_bytes":N (trees and images);
 *               an exposure grant instead has "exposure_id":ID,
 *               "exposure_generation":N,"scope_digest":HEX64 and neither
 *               "source" nor "alias"}],
 *    "materializations":[{"alias":ID (or for an exposure grant "exposure_id",
 *               "exposure_generation","scope_digest"),"kind":"retained_image","image":{"dev":N,"ino":N,"size":N},
 *               "loop":{"device":"/dev/loopN","rdev":N},"mount":{"mnt_id":N}}],
 *    "egress":{"policy_id":ID,"targets":["host:port",...]} (targets empty: offline),
 *    "leases":[{"handle":ID,"target":PATH,"version":HEX64}] (C: lease.h; plan
 *               order; empty without secret handles; never content or source path),
 *    "runtime_template_id":ID,
 *    "adapter":{"runtime_id":ID,"home":"/home/agent",
 *               "managed_environment":["NAME=VALUE"] (empty: none),
 *               "skills_dir":PATH,
 *               "executable":{"path":PATH (canonical; argv[0]),"dev":N,"ino":N,
 *                             "discovered":BOOL}} (adapter runtimes only)}
 * The caller adds "cgroup" and "pid1".
 */
json_t *glove_supervisor_launch_binding(const struct glove_supervisor_launch *l);

/*
 * refinement-eval-v1 (docs/refinement.md, "At launch"): the canonical bytes
 * of the fixture the launch read, checked and left unmounted (*len, may be
 * NULL, their count; at most GLOVE_REFINEMENT_FIXTURE_MAX_BYTES), borrowed
 * from l; NULL for an ordinary plan. The binding then has a "refinement"
 * member: {"evaluation_protocol","expectations","matched_context_digest",
 * "plan_context_digest","projections":{"base","candidate","fixture",
 * "selected"},"variant"} (expectations: evaluator.h's wire form).
 */
const char *glove_supervisor_launch_refinement_fixture(const struct glove_supervisor_launch *l, size_t *len);

/*
 * The session ended: unmounts the host mounts of retained images
 * (MNT_DETACH; the loop devices go with autoclear) and closes the pinned
 * descriptors. Images stay. Idempotent. Returns 0 or the first -errno
 * (materialize.mount) after trying every mount.
 */
int glove_supervisor_launch_release(struct glove_supervisor_launch *l, struct glove_error *err);

/* Releases (errors ignored) and frees l. NULL is a no-op. */
void glove_supervisor_launch_free(struct glove_supervisor_launch *l);

/*
 * For a session no longer running: removes under the root what the plan's
 * grants' cleanup policies say: retained images with cleanup_policy remove,
 * every mount directory, and the session directories when empty; keeps
 * retained images with retain. Detaches a leftover host mount first.
 * Idempotent (a second call removes nothing more and succeeds). *removed and
 * *kept (each may be NULL) get new JSON arrays of aliases (an exposure
 * grant: its exposure_id, the name of its image), in plan order.
 * Returns 0 or -errno (materialize.cleanup, launch.invalid_plan).
 */
int glove_supervisor_cleanup(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                             const char *plan, size_t plan_len, json_t **removed, json_t **kept,
                             struct glove_error *err);

/* Lets go of l's materializations without releasing them: a freed l no
 * longer detaches its retained images' host mounts (a keeper's sandbox still
 * uses them; the gloved that sees the session end releases them with
 * glove_supervisor_release_leftovers). Closes the pinned descriptors. NULL
 * is fine. */
void glove_supervisor_launch_disown(struct glove_supervisor_launch *l);

/*
 * After a host restart (spec session-policy.md, "Receipts and recovery":
 * retained images are remounted and frozen before cleanup): for each
 * retained image of materializations (the "materializations" array of a
 * launch binding: {"alias","kind":"retained_image","image":{"ino","size"},
 * ...}; an exposure's entry has "exposure_id" in place of "alias", the
 * name of its image), a mount left at ROOT/mounts/SESSION/ALIAS is detached, then the
 * image, when it is the recorded file (inode) within its recorded size, is
 * attached to a read-only loop device and mounted read-only (nosuid, nodev,
 * noexec, noload) there for inspection; cleanup_session removes it later.
 * *frozen: a new array of the aliases mounted. Returns 0 or the first
 * failure's -errno (materialize.freeze, materialize.loop); the other images
 * are still tried.
 */
int glove_supervisor_freeze_retained(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                     const json_t *materializations, json_t **frozen, struct glove_error *err);

/*
 * Recovery at start (issue 9; spec session-policy.md, "Receipts and
 * recovery"): an earlier gloved ended while session_id ran, and its sandbox
 * died with it (PID 1 has PR_SET_PDEATHSIG). Detaches what that gloved had
 * mounted on the host for the plan's retained grants (ROOT/mounts/SESSION/
 * ALIAS, MNT_DETACH | UMOUNT_NOFOLLOW; the loop devices go with autoclear)
 * and removes those empty mount directories. Images and everything the
 * cleanup policies govern stay for cleanup_session. Idempotent: nothing
 * mounted is not an error. Returns 0 or -errno (materialize.cleanup,
 * launch.invalid_plan, launch.invalid_argument).
 */
int glove_supervisor_release_leftovers(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                       const char *plan, size_t plan_len, struct glove_error *err);

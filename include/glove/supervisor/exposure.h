/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Dynamic path exposures (spec session-policy.md, "Dynamic path exposures",
 * "Capability activation", "Receipts and recovery"; spec architecture.md,
 * "Sage session flow": glove setup, glove init, lifecycle step 4;
 * docs/exposures.md describes the files, methods and codes).
 *
 * An owner approves ROOTS once (the exposure policy, written by `glove setup
 * --path-root DIR`); `glove init PROJECT` then enrolls one directory beneath
 * a root as an EXPOSURE: an identifier (exposure_id), a generation, the
 * access tuples ("modes") and runtime templates it allows, a label and an
 * expiry, recorded in the exposure journal. Plans name an exposure by
 * (exposure_id, generation) in a path grant, never by path.
 *
 * ---- The exposure policy (owner-only file, strict decoding) ----
 *
 *   {"schema_version": 1,
 *    "roots": [                                  1..GLOVE_EXPOSURE_MAX_ROOTS, sorted by root_id, unique
 *      {"root_id": "src",                        identifier (policy.h charset), 1..128 bytes
 *       "path": "/home/me/src",                  absolute, normalized, not "/", not beneath /dev /proc /sys /run
 *       "target_path": "/workspace",             absolute normalized sandbox path the exposure is mounted at
 *       "max_ttl_secs": 2592000,                 1..GLOVE_EXPOSURE_TTL_SECS_MAX
 *       "access": [                              1..16 tuples, sorted by (access, materialization), unique pair
 *         {"access": "ephemeral_write",          read | ephemeral_write | retained_write (direct_write refused)
 *          "materialization": "copy",            read: bind; ephemeral_write: copy; retained_write: copy
 *          "cleanup_policy": "remove",           remove | retain
 *          "max_bytes": 1073741824}],            1..GLOVE_POLICY_QUOTA_BYTES_MAX
 *       "runtime_template_ids": ["codex-safe"]}]} 1..128 identifiers, sorted, unique
 *
 *   Roots must not overlap each other (policy.path_overlap). Codes are the
 *   session policy's "policy.*" codes (policy.h) with the JSON path, plus
 *   policy.file_* for the file checks (the same loader rules as
 *   glove_supervisor_policy_load: regular file of owner, 0600, one link, no
 *   final symlink, read through one descriptor, identity rechecked).
 *
 * ---- The exposure journal ----
 *
 * A journal of the generic layer (store/journal.h): magic "GLVEXPO1",
 * version 1, SHA-256 chain, at most GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS
 * records of at most GLOVE_EXPOSURE_JOURNAL_RECORD_MAX bytes, exclusive
 * lock (a second gloved on it: journal.locked), strict replay
 * (recover_torn_tail false: a torn tail is journal.truncated). Each record
 * is canonical JSON, one of:
 *   {"type":"create","exposure_id","generation","root_id",
 *    "root":{"dev","ino"},"path":REL,"source":{"dev","ino"},
 *    "parent":{"dev","ino"},"nonce":HEX64,"label","modes":[tuple...],
 *    "runtime_template_ids":[...],"created_at_ms","expires_at_ms",
 *    "scope_digest":HEX64,"source_identity_digest":HEX64}
 *   {"type":"revoke","exposure_id","generation","at_ms"}
 *   {"type":"expire","exposure_id","generation","at_ms"}
 * REL is the project's path relative to the root ("." never: a project is
 * a strict descendant), normalized, no "..", at most PATH_MAX bytes.
 * Replay checks every record's fields, recomputes both digests, and the
 * sequence rules: a create's generation is 1 for a new exposure_id, else the
 * previous generation + 1 and the previous one is revoked or expired; one
 * exposure_id per (root_id, REL); revoke and expire name the live
 * generation; times never go back. Anything else refuses the open with
 * exposure.journal_invalid (the message names the record's sequence).
 *
 * Digests (lowercase hex SHA-256 of a domain string, a NUL byte, and the
 * canonical JSON of an object; docs/exposures.md gives vectors):
 *   source_identity_digest  "glove.exposure.source.v1":
 *                           {"nonce","parent":{"dev","ino"},"source":{"dev","ino"}}
 *   scope_digest            "glove.exposure.scope.v1":
 *                           {"exposure_id","generation","nonce","root_id",
 *                            "path","modes","runtime_template_ids",
 *                            "expires_at_ms","source_identity_digest"}
 * The 32-byte random nonce makes neither digest a test for a guessed path.
 *
 * Room: a create is refused (journal.full) unless, after its record (and
 * the state record that ends the project's previous generation first, if
 * any), the journal still has room, in records and bytes, for one revoke or
 * expire record of the largest size (generation INT32_MAX, at_ms
 * INT64_MAX) for every live generation, the new one included. So a revoke
 * and the expire records written at open always fit. There is no
 * compaction: the owner moves the journal and its .seal aside (forgetting
 * every exposure) to enroll again.
 *
 * ---- The effective exposure ----
 * The journal records what an enrollment allowed; the policy loaded now may
 * allow less (the owner narrowed the root and restarted gloved). The
 * EFFECTIVE exposure of a generation is
 *   modes          the recorded tuples whose (access, materialization,
 *                  cleanup_policy) the root still allows, each with
 *                  max_bytes = min(recorded, the root's);
 *   runtime_template_ids  the recorded ids the root still allows;
 *   expires_at_ms  min(recorded, created_at_ms + the root's max_ttl_secs * 1000).
 * A root that left the policy, was not pinned at open, or was pinned as
 * another directory than the generation's recorded root gives modes [] and
 * runtime_template_ids []
 * (expiry and state as recorded) and the exposure cannot be used. The
 * catalog, the owner's list, check_grant and open_source use the effective
 * exposure; the state a view shows is "expired" once the effective expiry
 * passed. scope_digest stays the recorded one (it commits the enrollment).
 * Replay and the expire records written at open follow the recorded
 * expiry only.
 *
 * ---- What leaves gloved ----
 * The catalog (glove_exposures_catalog) gives only exposure_id, generation,
 * scope_digest, label, modes, expires_at_ms, runtime_template_ids, state
 * (the effective ones, above).
 * Paths, root ids, devices, inodes and the nonce stay in the journal and in
 * the owner-only list (glove_exposures_list).
 *
 * Stable codes (struct glove_error.code):
 *   exposure.outside_roots     the project is beneath no root of the policy (-EPERM)
 *   exposure.is_root           the project is a root itself (-EINVAL)
 *   exposure.not_absolute      the request's path is not absolute and normalized (-EINVAL)
 *   exposure.path_invalid      the request's path has a C0 control or DEL (-EINVAL)
 *   exposure.clock             the clock reads a time the journal cannot record (-ERANGE)
 *   exposure.record_refused    a record built here failed replay's own checks; nothing
 *                              was appended (a bug guard) (-EINVAL)
 *   exposure.symlink           a component beneath the root is a symbolic link (-ELOOP)
 *   exposure.cross_device      the project is on another mount than its root, or (at
 *                              prepare) a mount point lies beneath it (-EXDEV)
 *   exposure.not_directory     the project is not a directory (-ENOTDIR)
 *   exposure.missing           the project does not exist (-ENOENT)
 *   exposure.root_unavailable  the root could not be pinned at gloved start (the
 *                              create message says why, with the root's path;
 *                              glove_exposures_root_problem), is no longer the
 *                              directory pinned then, or left the policy (-ESTALE)
 *   exposure.restricted        the project overlaps gloved's own directories (-EPERM)
 *   exposure.live              the project already has a live exposure (-EEXIST)
 *   exposure.ttl_exceeded      ttl_secs over the root's max_ttl_secs (-EINVAL)
 *   exposure.mode_not_allowed  a requested mode the root does not allow (-EINVAL)
 *   exposure.runtime_not_allowed  a requested runtime template the root does not allow (-EINVAL)
 *   exposure.invalid_label     label empty, over GLOVE_EXPOSURE_LABEL_MAX bytes, or
 *                              with C0/C1 control characters, a character of
 *                              Unicode's format category Cf or U+2028/U+2029, or
 *                              invalid UTF-8 (-EINVAL); replay accepts the format
 *                              characters in labels recorded before this rule
 *   exposure.too_many          GLOVE_EXPOSURE_MAX exposure ids exist; ids are never
 *                              freed (-ENOSPC)
 *   exposure.unknown           no exposure with this id (-ENOENT)
 *   exposure.superseded        the generation is not the newest (-ESTALE)
 *   exposure.revoked           the generation was revoked (-EKEYREVOKED)
 *   exposure.expired           the generation's expiry has passed (-EKEYEXPIRED)
 *   exposure.changed           at prepare or recovery the root, the project or its
 *                              parent is no longer the recorded object (replaced,
 *                              moved, or now a link) (-ESTALE)
 *   exposure.digest_mismatch   recovery lookup: scope or source-identity digest
 *                              differs from the journal's (-EINVAL)
 *   exposure.journal_invalid   replay found a record that breaks the rules (-EBADMSG)
 *   journal.full               a create would leave no room to revoke or expire
 *                              every live generation ("Room" above) (-ENOSPC)
 *   journal.*                  the journal layer's codes (journal.h), e.g.
 *                              journal.locked, journal.file_insecure,
 *                              journal.chain_mismatch, journal.truncated
 *   exposure.no_memory         (-ENOMEM)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/error.h"

#define GLOVE_EXPOSURE_SCHEMA_VERSION 1
/* Largest exposure policy file, bytes. */
#define GLOVE_EXPOSURE_POLICY_MAX_BYTES (256 * 1024)
#define GLOVE_EXPOSURE_MAX_ROOTS 64
#define GLOVE_EXPOSURE_MAX_MODES 16             /* access tuples per root */
#define GLOVE_EXPOSURE_MAX_RUNTIMES 128         /* runtime_template_ids per root */
#define GLOVE_EXPOSURE_TTL_SECS_MAX 31536000LL  /* max_ttl_secs, 365 days */
#define GLOVE_EXPOSURE_LABEL_MAX 64             /* bytes */
/* Most distinct exposure ids one journal holds. */
#define GLOVE_EXPOSURE_MAX 1024
#define GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS 16384
#define GLOVE_EXPOSURE_JOURNAL_RECORD_MAX 8192  /* bytes of one record's payload */
#define GLOVE_EXPOSURE_JOURNAL_MAX_BYTES ((uint64_t)64 << 20)
/* "exp-" and 32 lowercase hex digits (16 random bytes), NUL included. */
#define GLOVE_EXPOSURE_ID_SIZE 37
#define GLOVE_EXPOSURE_DIGEST_HEX_SIZE 65

/* ---- the exposure policy ---- */

/* One allowed access tuple; strings are the policy's names (static or
 * borrowed from the policy). */
struct glove_exposure_mode {
        const char *access;          /* "read", "ephemeral_write", "retained_write" */
        const char *materialization; /* "bind" or "copy" */
        const char *cleanup_policy;  /* "remove" or "retain" */
        int64_t max_bytes;
};

/* One root; every pointer borrowed from the policy. */
struct glove_exposure_root {
        const char *root_id, *path, *target_path;
        int64_t max_ttl_secs;
        const struct glove_exposure_mode *modes;
        size_t n_modes;
        const char *const *runtime_template_ids;
        size_t n_runtimes;
};

/* A decoded, validated, frozen exposure policy. Opaque. */
struct glove_exposure_policy;

/*
 * Decodes data[0..len) (see top of file). On error err->code is a
 * "policy.*" code, err->message starts with the JSON path and ": ", and
 * path (path_size bytes, may be NULL) receives the JSON path. *out is owned
 * by the caller (glove_exposure_policy_free).
 */
int glove_exposure_policy_decode(const void *data, size_t len, struct glove_exposure_policy **out, char *path,
                                 size_t path_size, struct glove_error *err);

/* Loads and decodes a protected file (rules at the top; codes policy.file_*
 * and the decoder's, message prefixed by the file path). */
int glove_exposure_policy_load(const char *path, uid_t owner_uid, struct glove_exposure_policy **out,
                               struct glove_error *err);
/* The same, also giving the exact bytes that were read and decoded in
 * *text (malloc'd, NUL-terminated, owned by the caller) and *len, so a
 * tool that rewrites the file works on what was checked (one read). */
int glove_exposure_policy_load_text(const char *path, uid_t owner_uid, struct glove_exposure_policy **out,
                                    char **text, size_t *len, struct glove_error *err);

void glove_exposure_policy_free(struct glove_exposure_policy *p);

/* Roots, in root_id order: count, and root i (NULL when i is out of range). */
size_t glove_exposure_policy_root_count(const struct glove_exposure_policy *p);
const struct glove_exposure_root *glove_exposure_policy_root(const struct glove_exposure_policy *p, size_t i);

/* SHA-256 of the decoded bytes, 64 lowercase hex (owned by p). */
const char *glove_exposure_policy_digest(const struct glove_exposure_policy *p);

/* ---- the registry: policy, pinned roots, journal, state ---- */

struct glove_exposures;

struct glove_exposures_options {
        const struct glove_exposure_policy *policy; /* borrowed; outlives the registry */
        const char *journal_path;                   /* absolute; parent 0700 of owner */
        uid_t owner;                                /* owner of the journal, its parent and every root */
        /* NULL-terminated absolute paths no project may be, contain or be
         * inside (gloved's runtime, state, materialization and bundle
         * directories); may be NULL. Borrowed for the registry's life. */
        const char *const *restricted;
};

/*
 * Opens the registry: pins each root (opened from "/" without following a
 * link, O_PATH|O_DIRECTORY; a root that cannot be opened, is not owned by
 * opts->owner or is writable by group or others is left unpinned,
 * glove_exposures_root_problem says why, and every enrollment or use
 * beneath it fails exposure.root_unavailable), opens the journal (created
 * when absent) and replays it strictly, then appends an expire record for
 * each live exposure whose recorded expiry is at or before now_ms (room for
 * them is kept by every create, "Room" above). *out owned by the caller (glove_exposures_close).
 * Errors: journal.*, exposure.journal_invalid, exposure.no_memory.
 */
int glove_exposures_open(const struct glove_exposures_options *opts, int64_t now_ms, struct glove_exposures **out,
                         struct glove_error *err);

void glove_exposures_close(struct glove_exposures *x);

/*
 * Why root i of the policy (glove_exposure_policy_root order) could not be
 * pinned at open, or NULL when it was (or i is out of range). A short
 * phrase owned by x: "missing", "a symbolic link (the root or a directory
 * above it)", "not a directory", "owned by uid N, not by gloved's uid M",
 * "writable by group or others (mode M)...", or the errno text. gloved logs one warning
 * per unpinned root at start; exposure_create's exposure.root_unavailable
 * (owner-only) repeats it with the root's path.
 */
const char *glove_exposures_root_problem(const struct glove_exposures *x, size_t i);

/* One enrollment request (glove init). Pointers borrowed for the call. */
struct glove_exposure_request {
        const char *path;                          /* absolute, normalized host path of the project */
        const char *label;                         /* NULL: the project's last component */
        int64_t ttl_secs;                          /* 0: the root's max_ttl_secs */
        const char *const *modes;                  /* NULL-terminated access names; NULL: all the root's */
        const char *const *runtime_template_ids;   /* NULL-terminated; NULL: all the root's */
};

/*
 * Enrolls req->path: finds the root it is strictly beneath (by path, the
 * longest match), checks the request's ttl_secs, modes, runtime ids and
 * label (before the project's state: a bad mode on a live project is
 * exposure.mode_not_allowed, not exposure.live), opens it from the root's pinned descriptor with openat2
 * and RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV, records the identities, and appends a create record
 * (durable before return). A project with a live generation is
 * exposure.live; one whose last generation was revoked or expired
 * (effectively: a generation past only its effective expiry is ended by a
 * revoke record first, one past its recorded expiry by an expire record)
 * gets the next generation under the same exposure_id. journal.full when
 * the journal would lack the room kept for revocation and expiry. On
 * success *result (new
 * reference) is the owner's view: the catalog entry plus "root_id" and
 * "path". Both records are checked with replay's rules before either is
 * appended; on error nothing was appended and the registry is unchanged,
 * except when the ending record was appended and the create's append then
 * failed (an I/O error: the journal is broken until restart): the journal
 * and the registry then both hold that ending record, of a generation that
 * had already lapsed in effect. Codes: see the top of file.
 */
int glove_exposures_create(struct glove_exposures *x, const struct glove_exposure_request *req, int64_t now_ms,
                           json_t **result, struct glove_error *err);

/*
 * Revokes exposure_id's live generation (generation 0: whichever is live;
 * else it must be the live one: an older one is exposure.superseded, one
 * never created exposure.unknown). Appends a revoke record (its room was
 * kept at create). Live means by the recorded expiry: one past only its
 * effective expiry can still be revoked. *result (may be NULL) is its
 * catalog entry afterwards. Codes: exposure.unknown, exposure.superseded,
 * exposure.revoked, exposure.expired, journal.*.
 */
int glove_exposures_revoke(struct glove_exposures *x, const char *exposure_id, int64_t generation, int64_t now_ms,
                           json_t **result, struct glove_error *err);

/*
 * The redacted catalog at now_ms: {"exposures":[ENTRY...]} sorted by
 * exposure_id, one entry per exposure id (its newest generation, as its
 * effective exposure: modes, runtime ids, expiry and state):
 *   {"exposure_id","generation","scope_digest","label","modes":[tuple...],
 *    "expires_at_ms","runtime_template_ids":[...],
 *    "state":"live"|"revoked"|"expired"}
 * A generation past its (effective) expiry reads "expired" even before its
 * expire record is written. New reference, NULL on ENOMEM.
 */
json_t *glove_exposures_catalog(const struct glove_exposures *x, int64_t now_ms);

/* The owner's list: as the catalog, each entry also with "root_id",
 * "path" (absolute host path), "created_at_ms". New reference. */
json_t *glove_exposures_list(const struct glove_exposures *x, int64_t now_ms);

/* Appends expire records for every live generation whose expiry is at or
 * before now_ms. Returns how many, or -errno (journal.*). */
int glove_exposures_expire_due(struct glove_exposures *x, int64_t now_ms, struct glove_error *err);

/* ---- plans ---- */

/* One plan path grant that names an exposure (plan.c decodes it). */
struct glove_exposure_grant {
        const char *exposure_id;
        int64_t generation;
        const char *access, *materialization, *cleanup_policy; /* the plan's strings */
        int64_t max_bytes, ttl_secs;
        const char *runtime_template_id;                      /* the plan's */
        int64_t plan_expires_at_ms;                           /* the plan's expires_at_ms */
};

/*
 * Checks a grant against the registry at now_ms, on the generation's
 * effective exposure (modes, max_bytes, runtimes, expiry under the policy
 * loaded now). Returns NULL when it is admissible, else a static plan
 * reason code:
 *   plan.exposure_unknown, plan.exposure_superseded, plan.exposure_revoked,
 *   plan.exposure_expired, plan.exposure_mode_not_allowed (no mode with
 *   this access and materialization), plan.exposure_cleanup_mismatch,
 *   plan.exposure_quota_exceeded (max_bytes over the mode's),
 *   plan.exposure_runtime_not_allowed, plan.exposure_root_unavailable
 *   (the root is unpinned, not the generation's, or left the policy),
 *   plan.exposure_expires_too_soon (plan_expires_at_ms + ttl_secs * 1000
 *   is after the exposure's expires_at_ms).
 * *member (may be NULL) names the grant member the reason is about
 * ("exposure_generation", "access", "cleanup_policy", "max_bytes",
 * "ttl_secs", or NULL for the grant as a whole).
 */
const char *glove_exposures_check_grant(const struct glove_exposures *x, const struct glove_exposure_grant *g,
                                        int64_t now_ms, const char **member);

/* The sandbox target path of exposure_id (its root's target_path; borrowed),
 * or NULL when unknown or its root left the policy. */
const char *glove_exposures_target(const struct glove_exposures *x, const char *exposure_id);

/* ---- prepare ---- */

/* An opened exposure source, owned by the caller (glove_exposure_source_close). */
struct glove_exposure_source {
        int fd;                                     /* O_PATH|O_DIRECTORY|O_CLOEXEC of the project */
        dev_t dev;
        ino_t ino;
        uint64_t mnt_id;
        char *path;                                 /* absolute host path (malloc'd; never leaves gloved) */
        const char *target_path;                    /* borrowed from the policy */
        int64_t generation;
        char scope_digest[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
};

/*
 * Opens the live generation `generation` of exposure_id for a launch at
 * now_ms: refuses an unknown, superseded, revoked or expired one (the
 * exposure.* codes; expired by its effective expiry), and one whose root
 * left the policy or was not pinned (exposure.root_unavailable; the
 * message, which a controller may see, names neither the root nor a path); opens the root again from "/" without following links
 * and requires it to be the pinned root (same dev and ino), opens the
 * project beneath the pinned root's descriptor with openat2 (RESOLVE_BENEATH
 * | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) and
 * requires it and its parent to be the recorded objects; any difference,
 * a link where a directory was, or a missing component is exposure.changed.
 * A mount point strictly beneath the project in gloved's /proc/self/mountinfo
 * (or a table that cannot be read) is exposure.cross_device: an exposure
 * never crosses a mount, and the sandbox would bind it with the mounts
 * beneath it (it refuses them too: "grant.submount").
 * out->fd is the descriptor that was checked and out->dev/ino its identity:
 * the caller holds it while it prepares, and the sandbox's setup, which
 * opens out->path again without following a link, refuses the object
 * unless its device and inode are these (grant.changed), so what is
 * materialized is the object checked here or nothing.
 */
int glove_exposures_open_source(const struct glove_exposures *x, const char *exposure_id, int64_t generation,
                                int64_t now_ms, struct glove_exposure_source *out, struct glove_error *err);

void glove_exposure_source_close(struct glove_exposure_source *s);

/* ---- recovery (for the retained-change apply) ---- */

struct glove_exposure_parent {
        int parent_fd;        /* O_PATH|O_DIRECTORY|O_CLOEXEC of the project's parent, owned by the caller */
        char name[256];       /* the project's entry name in it */
        bool source_matches;  /* the entry exists and is still the recorded source object */
};

/*
 * The recovery-only lookup (spec "Receipts and recovery"): for any
 * generation ever created (live, revoked or expired), given its scope
 * digest and source-identity digest (64 lowercase hex each, which must equal
 * the journal's: else exposure.digest_mismatch), reopens the project's
 * parent beneath the pinned root by descriptor (openat2 as above) and
 * requires it to be the recorded parent (dev, ino): a replacement at the
 * same path is exposure.changed. Gives no path and confers no launch
 * authority. Codes: exposure.unknown, exposure.digest_mismatch,
 * exposure.changed, exposure.root_unavailable.
 */
int glove_exposures_recover_parent(const struct glove_exposures *x, const char *exposure_id, int64_t generation,
                                   const char *scope_digest, const char *source_identity_digest,
                                   struct glove_exposure_parent *out, struct glove_error *err);

/* The source-identity digest of a generation (for the apply issue and tests):
 * copies it into out, or returns -ENOENT exposure.unknown. */
int glove_exposures_source_identity_digest(const struct glove_exposures *x, const char *exposure_id,
                                           int64_t generation, char out[GLOVE_EXPOSURE_DIGEST_HEX_SIZE],
                                           struct glove_error *err);

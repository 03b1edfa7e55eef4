/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Credential leases (issue 11, "Credential leases"; spec session-policy.md,
 * the credential-policies paragraph; docs/session-policy.md, "Credential
 * leases"; docs/threat-model.md, "Credential leases").
 *
 * A policy's secret_mounts[] {handle, runtime_id, source_path, target_path}
 * name an operator's owner-protected source file behind an opaque handle.
 * When a plan's secret_handles[] names a handle, the launch (prepare.h)
 * imports the source into a Glove-owned lease under gloved's state
 * directory, holds the lease's exclusive lock for the whole session, and
 * mounts the lease's working copy writable at target_path inside the
 * private home. The operator's source is never mounted.
 *
 * Store layout (LEASES = cfg->lease_root, normally STATE_DIR/leases; every
 * directory 0700 and every file 0600, owned by the service user):
 *   LEASES/HANDLE/lock                 flock(2) target, empty
 *   LEASES/HANDLE/record               canonical JSON {"schema_version":1,
 *                                      "source_digest":HEX64,"version":HEX64}
 *   LEASES/HANDLE/versions/HEX64       a version: content whose SHA-256 is its name
 *   LEASES/HANDLE/live                 the working copy a session mounts
 *
 * Import, under the lock (LOCK_EX|LOCK_NB on LEASES/HANDLE/lock):
 *   1. the live copy a previous session left, when its digest differs from
 *      record.version, becomes a new version and the current one (the vendor
 *      CLI rotated its token); a live copy over GLOVE_LEASE_MAX_BYTES, or
 *      not a single-link regular file, is not taken;
 *   2. the source is opened without following links and must be a regular
 *      file owned by the service user, mode exactly 0600, one link, at most
 *      GLOVE_LEASE_MAX_BYTES; it is read through that descriptor and its
 *      identity (dev, ino, size, mtime) rechecked after the read. When its
 *      digest differs from record.source_digest (first import, or the
 *      operator replaced the source), it becomes the current version: the
 *      operator's file wins over a rotation made inside a sandbox;
 *   3. every version but the current one is removed, the record replaced
 *      (fsync'd), and a fresh live copy of the current version written
 *      (new file renamed over the old) and pinned (dev, ino).
 * The lock descriptor stays open in the launch and, through fork, in the
 * session's keeper (glove_supervisor_launch_lease_fds): the lock is held
 * while the session lives, also across a restart of gloved, and is released
 * only when the keeper and gloved's launch have both let go of it.
 *
 * Stable error codes (struct glove_error.code; messages name the handle and
 * the operator's source path, never content):
 *   lease.unavailable  a plan names a secret handle but this gloved has no
 *                      lease store (cfg->lease_root NULL) (-EOPNOTSUPP)
 *   lease.no_mount     a secret handle of the plan has no secret_mounts entry
 *                      for the template's runtime_id (-EINVAL)
 *   lease.busy         another live session holds the handle's lease (-EBUSY)
 *   lease.missing      the source (or a component) does not exist (-ENOENT)
 *   lease.symlink      a component of the source path is a symbolic link (-ELOOP)
 *   lease.file_type    the source is not a regular file (-EINVAL)
 *   lease.owner        the source is not owned by the service user (-EPERM)
 *   lease.mode         the source's mode is not exactly 0600 (-EPERM)
 *   lease.links        the source has more than one hard link (-EPERM)
 *   lease.too_large    the source is larger than GLOVE_LEASE_MAX_BYTES (-EFBIG)
 *   lease.changed      the source changed while it was read (-EAGAIN)
 *   lease.source       any other failure opening or reading the source (-errno)
 *   lease.store        the lease store is unusable: a directory of the wrong
 *                      owner or mode, a damaged record or version, I/O (-errno)
 *   lease.no_memory    (-ENOMEM)
 */

#include <stddef.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/prepare.h"

/* Largest source file (and live copy) a lease takes, in bytes. */
#define GLOVE_LEASE_MAX_BYTES (1024 * 1024)
/* The lease store's directory name under gloved's state directory. */
#define GLOVE_LEASE_DIR "leases"
/* Most leases of one launch (one per plan secret handle). */
#define GLOVE_LEASE_MAX_PER_LAUNCH GLOVE_PLAN_MAX_SECRET_HANDLES
/* Largest record file read, in bytes. */
#define GLOVE_LEASE_RECORD_MAX 1024

/*
 * The lock descriptors the launch holds, one per lease, in plan order, into
 * fds[0..max); returns how many there are (at most
 * GLOVE_LEASE_MAX_PER_LAUNCH; more than max are not copied). Borrowed: the
 * launch closes them when freed. A keeper keeps its inherited copies
 * (keeper.h) so that the locks outlive gloved.
 */
size_t glove_supervisor_launch_lease_fds(const struct glove_supervisor_launch *l, int *fds, size_t max);

/*
 * At gloved start (after recovery has adopted what still runs): removes
 * each lease directory under cfg->lease_root whose name is no handle of a
 * secret_mounts entry of cfg->policy, unless its lock is held (an adopted
 * session of an older policy still uses it: kept, and tried again at the
 * next start). A name that is not an identifier, or an entry that is not a
 * directory, is left alone. *removed and *kept (each may be NULL) get new
 * arrays of the handles removed and kept. Returns 0 or -errno (lease.store)
 * after trying every entry; a cfg without a lease store does nothing.
 */
int glove_supervisor_lease_sweep(const struct glove_supervisor_runtime_config *cfg, json_t **removed, json_t **kept,
                                 struct glove_error *err);

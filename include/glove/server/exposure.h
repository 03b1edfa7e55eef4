/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * gloved's start-up check that its own directories are out of every
 * sandbox's reach (issue 31; docs/threat-model.md, "gloved"). A grant of a
 * running gloved's directories is refused when a sandbox starts
 * ("grant.gloved_runtime"), but a sandbox already running when gloved starts
 * was never asked: granted /tmp/x, it would read the receipt key of a gloved
 * started later with its state directory in /tmp/x. So gloved looks before
 * it writes or reads a secret.
 *
 * How. Every mount namespace other than gloved's own that gloved may see
 * (/proc/PID/ns/mnt of each process; the kernel shows it to the same uid
 * and to the owner of the process's user namespace, which covers every
 * sandbox of this uid) is read once: its /proc/PID/mountinfo gives, for each
 * mount, the file system (device) and the directory of it the mount shows
 * (root). A directory is reachable from there when one of those regions
 * (glove/container/region.h) overlaps the directory's own region in
 * gloved's namespace: the same device, and one path at or beneath the
 * other, whatever names either is mounted by. A namespace whose root mount
 * shows the same region as gloved's own root (a service's private /tmp, an
 * `unshare -m` shell) sees the host as the host does and is no sandbox: it
 * is not counted. Nor is a mount strictly beneath one of gloved's session
 * areas (STATE/leases, the materialization root): gloved mounts a lease or
 * a materialization there into its own managed sessions, which outlive a
 * gloved restart in their keepers.
 *
 * What it cannot see: namespaces of other uids that gloved may not inspect,
 * namespaces created after the check (for those the grant check at a
 * sandbox's start applies), and a foreign sandbox granted a path strictly
 * inside a session area (one lease's directory, one materialization).
 */

#include <stddef.h>

#include "glove/base/error.h"

/* Most mount namespaces looked at, and processes listed, per check (more
 * fail closed). */
#define GLOVE_SERVER_EXPOSURE_NS_MAX 16384
#define GLOVE_SERVER_EXPOSURE_PROCS_MAX (4 * 1024 * 1024)

struct glove_server_exposure_dir {
        const char *path; /* absolute host path (need not exist yet), borrowed */
        const char *what; /* names it in the refusal ("the state directory"), borrowed */
};

/*
 * Refuses (-EPERM, "service.exposed_directory") when one of dirs (n
 * entries) is reachable from a mount namespace other than this process's
 * own that this process may inspect, not counting mounts strictly beneath
 * one of areas (n_areas absolute paths, borrowed: the session areas); the message names the directory, the
 * process whose namespace reaches it, the mount point there and what to do.
 * An existing directory is taken by its canonical name; one that does not
 * exist yet by its normalized name (its future place). Errors (fail
 * closed): "service.exposure_check" when /proc cannot be listed, a
 * namespace's mountinfo cannot be parsed or exceeds
 * GLOVE_REGION_MOUNTINFO_MAX / GLOVE_REGION_MOUNTS_MAX, or past
 * GLOVE_SERVER_EXPOSURE_NS_MAX or GLOVE_SERVER_EXPOSURE_PROCS_MAX; those of
 * glove_mount_table_read for gloved's own table; -ENOMEM.
 * A finding is believed only when the whole check finds one again after
 * 100, 200 and 400 ms (at most 0.7 s more): a sandbox being built holds a
 * copy of the host's mounts for a few milliseconds before it pivots, and
 * that moment must not refuse gloved's start.
 */
int glove_server_exposure_check(const struct glove_server_exposure_dir *dirs, size_t n, const char *const *areas,
                                size_t n_areas, struct glove_error *err);

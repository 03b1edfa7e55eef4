/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Regions: what a path names on its file system, whatever name it is reached
 * by. A region is a (device, file-system-relative path) pair computed from
 * /proc/self/mountinfo: the mount holding the path gives the device
 * (major:minor) and the root field (the directory of that file system the
 * mount shows), and the rest of the path beneath the mount point is appended
 * to that root. /etc/cron.d and a bind mount of it at /tmp/x are the same
 * region, and so are a directory and the same directory renamed.
 *
 * Grants compare regions (glove_grant_set_add, glove_grant_set_check_outside):
 * a grant reaches its own region and the region of every mount at or beneath
 * it; each is compared with the protected regions (system trees, the
 * directories a caller guards, the audit log and status file).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* Longest /proc/self/mountinfo read (bytes), and most mounts it may list;
 * a longer or larger table fails the check (fail closed, "grant.mountinfo"). */
#define GLOVE_REGION_MOUNTINFO_MAX (16 * 1024 * 1024)
#define GLOVE_REGION_MOUNTS_MAX 65536

struct glove_region {
        dev_t dev;  /* the file system's device (mountinfo major:minor) */
        char *path; /* normalized absolute path within it, owned */
};

struct glove_mount_row {
        dev_t dev;
        const char *root;  /* unescaped, points into the table's text */
        const char *point; /* mount point, unescaped, likewise */
};

struct glove_mount_table {
        char *text; /* the mountinfo text, owned, modified in place */
        struct glove_mount_row *rows; /* in mountinfo order (later mounts on top), owned */
        size_t count;
};

/*
 * Parses text (mountinfo lines, NUL-terminated; ownership moves to t, also on
 * error) into t. Lines without the five leading fields or with a malformed
 * major:minor fail (-EPROTO, "grant.mountinfo"); more than
 * GLOVE_REGION_MOUNTS_MAX rows: -E2BIG, "grant.mountinfo"; -ENOMEM.
 */
int glove_mount_table_parse(struct glove_mount_table *t, char *text, struct glove_error *err);

/* Reads and parses /proc/self/mountinfo (at most GLOVE_REGION_MOUNTINFO_MAX
 * bytes; -EFBIG beyond), errors as glove_mount_table_parse, code
 * "grant.mountinfo". */
int glove_mount_table_read(struct glove_mount_table *t, struct glove_error *err);

/* Frees what t owns; t is empty again (safe on an empty table). */
void glove_mount_table_free(struct glove_mount_table *t);

/*
 * The region of norm (a normalized absolute path): the topmost mount whose
 * mount point is the longest prefix of norm (whole components), its device,
 * and its root joined with the rest of norm. out->path is allocated.
 * -ENOENT ("grant.mountinfo") when no mount holds norm; -ENAMETOOLONG;
 * -ENOMEM.
 */
int glove_mount_table_region(const struct glove_mount_table *t, const char *norm, struct glove_region *out,
                             struct glove_error *err);

/*
 * Every region a grant of norm reaches: its own (glove_mount_table_region)
 * first, then the region of each mount whose mount point lies strictly
 * beneath norm (its device and root). *out (allocated, *n entries, each
 * path owned) is freed with glove_regions_free. Errors as
 * glove_mount_table_region.
 */
int glove_mount_table_grant_regions(const struct glove_mount_table *t, const char *norm, struct glove_region **out,
                                    size_t *n, struct glove_error *err);

/* Frees n regions and the array. */
void glove_regions_free(struct glove_region *r, size_t n);

/* True when a lies at or beneath b: the same device and a's path beneath
 * b's by whole components. */
bool glove_region_beneath(const struct glove_region *a, const struct glove_region *b);

/* True when a and b overlap: the same device and one path at or beneath
 * the other. */
bool glove_region_overlaps(const struct glove_region *a, const struct glove_region *b);

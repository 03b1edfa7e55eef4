/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internal to src/supervisor: retained ext4 images (image.c). Layout under the
 * materialization root ROOT: images/SESSION/ALIAS.ext4, mounts/SESSION/ALIAS.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"

struct sv_image {
        char mount_path[4096];  /* absolute ROOT/mounts/SESSION/ALIAS */
        uint64_t image_dev, image_ino, size;
        char loop_device[32];   /* "/dev/loopN" */
        uint64_t loop_rdev;
        uint64_t root_dev, root_ino, mnt_id; /* the mounted file system's root */
        bool mounted;
};

/* The mkfs.ext4 to run: /usr/sbin/mkfs.ext4 or /sbin/mkfs.ext4, symbolic
 * links resolved, the binary and its directory (and the link's directory)
 * owned by root and not group/other writable. Codes retained.no_mkfs,
 * retained.mkfs_unsafe. */
int sv_mkfs_resolve(char out[4096], struct glove_error *err);

/* Bytes the materialization root's file system keeps free after an image
 * is allocated (materialize.root_full otherwise). */
#define SV_IMAGE_RESERVE_BYTES (64LL << 20)

/*
 * Creates ROOT/images/SESSION/ALIAS.ext4 (O_EXCL, 0600, fallocate'd to size
 * bytes), formats it through its descriptor (/proc/self/fd/3 in mkfs; root
 * directory owned by uid:gid), attaches it to a free loop device
 * (LO_FLAGS_AUTOCLEAR; the node opened must be a loop block device), mounts
 * it by the device's name, checked to be the configured device just before
 * and the mounted root's device just after, nosuid,nodev at
 * ROOT/mounts/SESSION/ALIAS (0700). On failure everything made is undone.
 * Codes materialize.root_full (also when fewer than SV_IMAGE_RESERVE_BYTES
 * would stay free), materialize.image, materialize.mkfs,
 * materialize.loop, materialize.mount.
 */
int sv_image_create(int root_fd, const char *root, const char *session, const char *alias, uint64_t size,
                    uid_t uid, gid_t gid, struct sv_image *img, struct glove_error *err);

/* Detaches img's host mount (MNT_DETACH) through a descriptor of
 * img->mount_path checked to be that mount's root (root_dev, root_ino,
 * mnt_id); anything else there is left alone (materialize.mount). The loop
 * device goes with autoclear. Idempotent. */
int sv_image_release(struct sv_image *img, struct glove_error *err);

/* Cleanup of one alias of a session no longer running: detaches a leftover
 * host mount (resolved beneath root_fd by descriptor, detached through it
 * only when it is an ext4 on a loop device; anything else mounted there:
 * -EPERM materialize.cleanup, left alone), removes the mount directory, and
 * the image when remove_image. Idempotent. */
int sv_image_cleanup(int root_fd, const char *root, const char *session, const char *alias, bool remove_image,
                     struct glove_error *err);

/* After a host restart: re-attaches ROOT/images/SESSION/ALIAS.ext4 to a
 * read-only loop device and mounts it read-only (nosuid, nodev, noexec,
 * noload) at ROOT/mounts/SESSION/ALIAS, after checking that the file is the
 * recorded one (inode ino) within the recorded size. materialize.freeze. */
int sv_image_freeze(int root_fd, const char *session, const char *alias, uint64_t ino, uint64_t size,
                    struct glove_error *err);

/* Attaches image_fd to a free loop device (LO_FLAGS_AUTOCLEAR | flags, e.g.
 * LO_FLAGS_READ_ONLY; lo_file_name name), the node checked to be a loop
 * block device; *loop_fd holds it open, img->loop_device and loop_rdev name
 * it. materialize.loop. */
int sv_loop_attach_flags(int image_fd, const char *name, uint32_t flags, int *loop_fd, struct sv_image *img,
                         struct glove_error *err);

/*
 * Sets *live when a loop device not marked read-only is bound to the file
 * on device dev with inode ino (st_dev, st_ino): a file system of that
 * image is still live somewhere (the session's own, while its last
 * reference goes and it is written back), so what a new mount of the file
 * would read may be stale. Scans /sys/block/loop* and asks each device
 * (LOOP_GET_STATUS64; an unbound or vanished device is skipped).
 * materialize.loop when /sys/block cannot be read.
 */
int sv_loop_bound_writable(uint64_t dev, uint64_t ino, bool *live, struct glove_error *err);

/* Removes images/SESSION and mounts/SESSION when empty. */
void sv_image_cleanup_session(int root_fd, const char *session);

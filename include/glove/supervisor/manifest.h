/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Manifests of a directory tree (issue 30; docs/retained-changes.md; spec
 * session-policy.md, the retained-change and apply paragraphs): what a
 * retained stage started as (its baseline), what it holds after the session,
 * and what a source still holds at apply time. One walker serves all three.
 *
 * The walk follows nothing: every name is opened relative to its parent's
 * descriptor with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) after fstatat(AT_SYMLINK_NOFOLLOW),
 * and what was opened must be what was looked at (dev, ino): else
 * manifest.changed. A mount point beneath the root is manifest.crosses_mount.
 *
 * Entry paths are relative, '/'-separated, without "./"; the root itself is
 * ".". Entries are sorted by glove_manifest_path_cmp: the root first, then
 * the others by strcmp of their path (a name such as "-x" or "#a#" sorts
 * before "." by bytes, and still after the root).
 *
 * The manifest digest is SHA-256 of "glove.manifest.v1\0" followed by the
 * canonical JSON (glove/base/json.h) of the array of the entries' digest
 * forms {"mode","path","sha256","size","type"} in entry order: what counts
 * for "the same tree" is names, kinds, permission bits, sizes and contents,
 * not owners, link counts, times or allocation.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/error.h"

#define GLOVE_MANIFEST_DIGEST_HEX_SIZE 65
/* Entries per manifest (the root included). */
#define GLOVE_MANIFEST_ENTRIES_MAX 100000
/* Directory levels beneath the root. */
#define GLOVE_MANIFEST_DEPTH_MAX 64
/* Bytes of one entry's relative path. */
#define GLOVE_MANIFEST_PATH_MAX 4095

enum glove_manifest_type {
        GLOVE_MANIFEST_DIR,     /* "dir" */
        GLOVE_MANIFEST_FILE,    /* "file" */
        GLOVE_MANIFEST_SYMLINK, /* "symlink" */
        GLOVE_MANIFEST_FIFO,    /* "fifo" */
        GLOVE_MANIFEST_SOCKET,  /* "socket" */
        GLOVE_MANIFEST_CHAR,    /* "char_device" */
        GLOVE_MANIFEST_BLOCK,   /* "block_device" */
};

struct glove_manifest_entry {
        char *path;                   /* owned; "." for the root */
        enum glove_manifest_type type;
        uint32_t mode;                /* st_mode & 07777 */
        uint64_t size;                /* files: st_size; symbolic links: the target's length; else 0 */
        uint32_t nlink;               /* st_nlink */
        uint32_t uid, gid;            /* st_uid, st_gid */
        bool sparse;                  /* files: lseek(SEEK_HOLE) found a hole before st_size */
        bool xattr;                   /* dirs and files: flistxattr lists any name, ACLs included;
                                         symbolic links and special files: false (not listed: they are
                                         opened O_PATH only, and apply refuses them anyway) */
        char sha256[GLOVE_MANIFEST_DIGEST_HEX_SIZE]; /* files: of the contents; symbolic links: of the
                                                        target text; else "" */
        uint32_t flags;               /* dirs and files: inode flags (FS_IOC_GETFLAGS, FS_*_FL) when built
                                         from a tree, 0 where the file system keeps none; not in the
                                         stored form (a manifest read back has 0) */
};

struct glove_manifest {
        struct glove_manifest_entry *v; /* owned, n entries sorted by path */
        size_t n;
        uint64_t file_bytes;            /* sum of the files' sizes */
        char digest[GLOVE_MANIFEST_DIGEST_HEX_SIZE]; /* lowercase hex, see above */
};

/*
 * Walks the directory dir_fd (any descriptor of a directory, O_PATH
 * included; not closed) and returns its manifest in *out (owned,
 * glove_manifest_free). Files are read to hash them; a file whose size or
 * identity changes while it is read is manifest.changed.
 * Bounds: GLOVE_MANIFEST_ENTRIES_MAX entries, GLOVE_MANIFEST_DEPTH_MAX
 * levels, GLOVE_MANIFEST_PATH_MAX bytes per path, and max_file_bytes in
 * the sum of the files' sizes (0: no bound) (manifest.too_large,
 * manifest.too_deep). Other codes: manifest.crosses_mount,
 * manifest.changed, manifest.bad_name (-EILSEQ, a name that is not UTF-8:
 * JSON cannot hold it), manifest.io (-errno), manifest.no_memory.
 */
int glove_manifest_build(int dir_fd, uint64_t max_file_bytes, struct glove_manifest **out, struct glove_error *err);

void glove_manifest_free(struct glove_manifest *m);

/* The order of a manifest's entries: "." (the root) before anything, then
 * strcmp. Returns <0, 0 or >0 like strcmp. */
int glove_manifest_path_cmp(const char *a, const char *b);

static inline void glove_manifest_freep(struct glove_manifest **m) {
        glove_manifest_free(*m);
}

/*
 * The stored form: {"digest","entries":[{"gid","mode","nlink","path",
 * "sha256","size","sparse","type","uid","xattr"}...],"file_bytes",
 * "schema":"glove.manifest.v1"} (new reference, NULL when out of memory).
 */
json_t *glove_manifest_to_json(const struct glove_manifest *m);

/*
 * The inverse of glove_manifest_to_json: every member required and typed,
 * entries sorted and unique, and the digest recomputed and equal to the
 * stored one; anything else is -EINVAL manifest.invalid (nothing in *out).
 */
int glove_manifest_from_json(const json_t *j, struct glove_manifest **out, struct glove_error *err);

/*
 * What apply accepts (spec session-policy.md: "only service-owned,
 * single-link, non-sparse regular files and directories without ACLs,
 * extended attributes, symlinks, special files, or special mode bits"),
 * checked on every entry of m, owner being the uid everything must belong
 * to. Returns 0 or -EPERM with the first offence, its relative path in the
 * message: apply.symlink, apply.special_file (FIFO, socket, device),
 * apply.hard_link (a file with nlink > 1), apply.special_mode (setuid,
 * setgid or sticky bit), apply.xattr (extended attribute or ACL),
 * apply.sparse, apply.foreign_owner.
 */
int glove_manifest_check_apply(const struct glove_manifest *m, uid_t owner, struct glove_error *err);

/*
 * What an exchange would lose of the source m (docs/retained-changes.md,
 * "Applying"): the applied tree is a new copy owned by uid:gid (whoever
 * applies), so every directory and file of the source must be owned by
 * uid:gid, without setuid, setgid or sticky bits, extended attributes or
 * ACLs, immutable or append-only inode flags (FS_IMMUTABLE_FL,
 * FS_APPEND_FL: also an exchange and cleanup could not proceed; a manifest
 * read back from JSON has no flags, so this part holds only for one built
 * from the tree) (the stage carries none of these), and every file
 * single-link (the
 * applied file is a new inode, apart from the source file's other names);
 * FIFOs, sockets and devices are not carried at all. Symbolic links are
 * left to the stage check (the stage holds the copy's link, which apply
 * refuses). Sparseness is not checked: the applied file has the same
 * contents, allocated. Returns 0 or -EPERM apply.source_unsupported with
 * the first offence, its relative path and what would be lost in the
 * message.
 */
int glove_manifest_check_carried(const struct glove_manifest *m, uid_t uid, gid_t gid, struct glove_error *err);

/*
 * What changed from base to cur, as a new JSON object (*out, owned):
 *   {"added":[E...],"removed":[E...],"modified":[{"path","before":E,"after":E}...],
 *    "mode_changed":[{"path","before":MODE,"after":MODE}...],"unchanged":N}
 * where E is {"path","type","mode","size","sha256"} and a path is in
 * "modified" when its type, size or digest differs (a mode change alone is
 * in "mode_changed"; both when both). Lists are sorted by path. The root
 * "." is compared like any entry. Codes: manifest.no_memory.
 */
int glove_manifest_diff(const struct glove_manifest *base, const struct glove_manifest *cur, json_t **out,
                        struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Atomic replacement of a file: the one routine every module uses to write
 * a file that readers must see either whole-old or whole-new (state files,
 * keys, receipts' acknowledgements, unit files, status files).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* Flags of glove_file_replace. */
enum {
        /* fsync(2) the directory after the rename, so that the new name
         * survives a host crash. */
        GLOVE_FILE_REPLACE_SYNC_DIR = 1u << 0,
        /* Do not fsync(2) the file before the rename: for files that must
         * survive the writer's death only (the page cache keeps them) and are
         * rewritten often. Never combine with SYNC_DIR for durable data. */
        GLOVE_FILE_REPLACE_NO_SYNC = 1u << 1,
        /* Fail with -EEXIST ("file.exists") when name exists already,
         * instead of replacing it (the check and the creation are one
         * atomic step). */
        GLOVE_FILE_REPLACE_NOREPLACE = 1u << 2,
        /* Skip O_TMPFILE: write a named temporary from the start (the path
         * taken anyway where O_TMPFILE or the link of an unnamed file is
         * unavailable; lets tests prove that path). */
        GLOVE_FILE_REPLACE_NAMED_TEMP = 1u << 3,
};

/* Longest name accepted (a single path component, as NAME_MAX), leaving
 * room in the temporary name for ".", ".<16 hex>.tmp". */
#define GLOVE_FILE_REPLACE_NAME_MAX 200

/*
 * Replaces dirfd/name (name: one path component, no "/", at most
 * GLOVE_FILE_REPLACE_NAME_MAX bytes) by a regular file holding exactly the
 * len bytes at data, with permission bits mode & 07777 (set with fchmod, so
 * the umask does not apply), owned by the caller.
 *
 * The data goes to an unnamed O_TMPFILE in dirfd where the file system
 * offers it, else to a new file ".NAME.<16 random hex>.tmp" opened with
 * O_CREAT|O_EXCL|O_NOFOLLOW; it is written in full and fsync'd (unless
 * GLOVE_FILE_REPLACE_NO_SYNC), then renamed over name (linked as name with
 * GLOVE_FILE_REPLACE_NOREPLACE); with GLOVE_FILE_REPLACE_SYNC_DIR the
 * directory is fsync'd last. An unnamed file is linked in as the same
 * ".NAME.<hex>.tmp" name just before the rename. A reader of name sees the
 * old file or the new one, never a partial one; several writers may replace
 * the same name at once (the last rename wins). A symbolic link at name is
 * replaced, never followed.
 *
 * On failure name is unchanged (its old content stays) and no temporary is
 * left in dirfd (except after the process dies between the link and the
 * rename: glove_file_replace_temp_target recognises such leftovers).
 *
 * Errors (err may be NULL), with name in the message:
 *   -EINVAL       "file.invalid_argument" name empty, ".", "..", holds "/",
 *                                         or data NULL with len > 0
 *   -ENAMETOOLONG "file.invalid_argument" name too long
 *   -EEXIST       "file.exists"           NOREPLACE and name exists
 *   -errno        "file.replace"          create, write, fsync or rename
 *                                         failed (-ENOSPC, -EACCES, ...)
 */
int glove_file_replace(int dirfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
                       struct glove_error *err);

/*
 * True when entry (a directory entry's name) is a temporary name that
 * glove_file_replace makes, ".NAME.<16 hex>.tmp"; then NAME is copied to
 * target (size bytes, NUL included; false when it does not fit). target may
 * be NULL to test only. For sweeps that remove a dead writer's leftovers.
 */
bool glove_file_replace_temp_target(const char *entry, char *target, size_t size);

/*
 * Removes the temporaries of name (as glove_file_replace_temp_target tells)
 * left in dirfd by writers that died between link and rename. Best effort:
 * returns the number removed, or -errno when dirfd cannot be read.
 */
int glove_file_replace_sweep(int dirfd, const char *name);

/*
 * The codes glove_file_load_protected reports: static strings of the
 * caller's namespace (e.g. "policy.file_mode", "remote.file_mode").
 */
struct glove_protected_file_codes {
        const char *path_relative, *symlink, *open, *not_regular, *owner, *mode, *links, *too_large, *no_memory,
                *read, *changed;
};

/*
 * Loads a protected file (spec session-policy.md, "Protected files"): an
 * absolute path whose final component is not a symbolic link (O_NOFOLLOW),
 * a regular file owned by owner_uid, permission bits exactly 0600, one hard
 * link, at most max_bytes; read through the one descriptor it was checked
 * on, and refused when its device, inode, mode, owner, links, size, mtime or
 * ctime changed during the read (or it grew). after_read (NULL: none) is
 * called with that descriptor between the read and the second fstat, for
 * tests that change the file there.
 * On success *out (malloc'd, caller frees; max_bytes + 1 at most, NUL
 * terminated) holds *out_len bytes. Errors (err may be NULL; the path in
 * the message), returned as -errno with the caller's code: path_relative
 * (-EINVAL), symlink (-ELOOP), open (-errno), not_regular (-EINVAL), owner
 * and mode and links (-EPERM), too_large (-EFBIG), no_memory (-ENOMEM),
 * read (-errno), changed (-EAGAIN).
 */
int glove_file_load_protected(const char *path, uid_t owner_uid, size_t max_bytes,
                              const struct glove_protected_file_codes *codes, void (*after_read)(int fd, const char *path),
                              char **out, size_t *out_len, struct glove_error *err);

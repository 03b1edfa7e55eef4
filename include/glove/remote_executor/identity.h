/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove-remote-executor's identity: the SHA-256 digests it expects of its
 * own executable and of the container image, read from an
 * administrator-owned file, and the measurement of its opened executable
 * (spec/architecture.md, "Construction-only remote backend";
 * docs/remote-executor.md, "The identity file").
 *
 * The file is strict JSON (RFC 8259, decoded with glove_json_decode_strict:
 * duplicate keys, invalid UTF-8, NUL and trailing data refused) holding
 * exactly one object with exactly these members:
 *   {"executable_sha256": "<64 lowercase hex>", "image_sha256": "<64 lowercase hex>"}
 * of at most GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX bytes. Whitespace around the
 * object is allowed; a file of whitespace only counts as empty.
 *
 * Stable error codes (struct glove_error), with their return values:
 *   executor.identity_missing   the file or its directory does not exist
 *                               (-ENOENT)
 *   executor.identity_type      the file or its directory is a symbolic
 *                               link (-ELOOP), the directory is not a
 *                               directory (-ENOTDIR), or the file is any
 *                               other object than a regular file: a socket,
 *                               FIFO, device or directory (-EINVAL; the
 *                               message names the type)
 *   executor.identity_owner     the file or its directory is not owned by
 *                               the required owner (root in the executor)
 *                               (-EPERM)
 *   executor.identity_writable  the file or its directory is writable by
 *                               its group or by others (an ACL granting
 *                               write to anyone else shows as the group
 *                               write bit) (-EPERM)
 *   executor.identity_too_large the file holds more than
 *                               GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX bytes
 *                               (-EFBIG)
 *   executor.identity_empty     the file is empty or whitespace only
 *                               (-ENODATA)
 *   executor.identity_malformed the text is not the object above: bad JSON,
 *                               a missing, extra or mistyped member, a
 *                               digest that is not 64 lowercase hex (the
 *                               JSON path and detail are in the message)
 *                               (-EINVAL)
 *   executor.identity_read      opening or reading failed otherwise (-errno)
 *   executor.identity_mismatch  the measured executable's digest differs
 *                               from executable_sha256 (-EPERM)
 *   executor.self_measure       the executable could not be read or hashed
 *                               (-errno, -EFBIG over
 *                               GLOVE_REMOTE_EXECUTOR_EXE_MAX)
 *   executor.invalid_argument   misuse: NULL pointers, a relative or
 *                               unnormalized directory, a name with '/'
 *                               (-EINVAL)
 * Every err argument may be NULL.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"

/* The identity file of the installed executor: its directory and name. The
 * executor has no way to read another (no option, no environment). */
#define GLOVE_REMOTE_EXECUTOR_IDENTITY_DIR "/etc/glove"
#define GLOVE_REMOTE_EXECUTOR_IDENTITY_NAME "remote-executor.identity"
/* Largest identity file, bytes. */
#define GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX 4096
/* Largest executable measured, bytes (256 MiB). */
#define GLOVE_REMOTE_EXECUTOR_EXE_MAX ((uint64_t)256 << 20)

/* The decoded identity: both digests as 64 lowercase hex characters + NUL. */
struct glove_remote_executor_identity {
        char executable_sha256[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        char image_sha256[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
};

/*
 * Decodes an identity file's text data[0..len) (data may be NULL when len
 * is 0) into *out, which is written only on success. Returns 0,
 * -ENODATA (executor.identity_empty), -EFBIG (executor.identity_too_large,
 * len over GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX), -EINVAL
 * (executor.identity_malformed, or executor.invalid_argument for a NULL out).
 */
int glove_remote_executor_identity_decode(const void *data, size_t len, struct glove_remote_executor_identity *out,
                                          struct glove_error *err);

/*
 * Opens the directory dir (an absolute, normalized path, resolved without
 * following any symbolic link: glove_fd_open_nofollow), checks that it is a
 * directory owned by owner and not group- or other-writable, then
 * classifies name beneath it without following or opening it (fstatat
 * with AT_SYMLINK_NOFOLLOW: anything but a regular file is
 * executor.identity_type and is never opened), opens it with O_NOFOLLOW
 * (and O_NONBLOCK, so a FIFO swapped in meanwhile does not block; an open
 * that fails is classified again, so an object swapped in is still reported
 * by its type), checks on the descriptor that it is a regular file owned by
 * owner and not group- or other-writable, reads at most
 * GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX bytes and decodes them
 * (glove_remote_executor_identity_decode) into *out. The checks that decide
 * are made on the opened descriptors (fstat), so what is checked is what is
 * read. Nothing stays open.
 *
 * The executor passes GLOVE_REMOTE_EXECUTOR_IDENTITY_DIR,
 * GLOVE_REMOTE_EXECUTOR_IDENTITY_NAME and owner 0; the parameters exist for
 * unit tests. Returns 0 or a negative error from the list at the top of
 * this header (every executor.identity_* but _mismatch); messages name the
 * path.
 */
int glove_remote_executor_identity_load(const char *dir, const char *name, uid_t owner,
                                        struct glove_remote_executor_identity *out, struct glove_error *err);

/*
 * SHA-256 of everything readable from fd (from its current offset to end
 * of input; at most GLOVE_REMOTE_EXECUTOR_EXE_MAX bytes), as 64 lowercase
 * hex + NUL into hex. The executor passes its opened /proc/self/exe.
 * Returns 0, -EFBIG or -errno (executor.self_measure).
 */
int glove_remote_executor_measure(int fd, char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err);

/*
 * Compares a measured executable digest (64 lowercase hex) with the
 * identity's executable_sha256, in constant time. Returns 0 when equal,
 * -EPERM (executor.identity_mismatch, the message gives both) otherwise.
 */
int glove_remote_executor_identity_check(const struct glove_remote_executor_identity *id,
                                         const char measured[GLOVE_DIGEST_SHA256_HEX_LEN + 1],
                                         struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/remote_executor/identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"

#define MALFORMED "executor.identity_malformed"

static bool all_whitespace(const char *p, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
                        return false;
        return true;
}

/* One digest member: a string of exactly 64 lowercase hex characters. */
static int get_digest(const json_t *root, const char *key, char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1],
                      struct glove_error *err) {
        struct glove_error e = { 0 };
        const char *s;
        if (glove_json_get_string(root, key, NULL, GLOVE_DIGEST_SHA256_HEX_LEN, &s, &e) < 0)
                return glove_error_set(err, EINVAL, MALFORMED, "%s (%s); each digest is 64 lowercase hex characters",
                                       e.message, e.code);
        uint8_t raw[GLOVE_DIGEST_SHA256_LEN];
        if (glove_digest_hex_decode(s, strlen(s), raw, sizeof(raw), &e) < 0)
                return glove_error_set(err, EINVAL, MALFORMED, "$.%s is not 64 lowercase hex characters: %s", key,
                                       e.message);
        memcpy(out, s, GLOVE_DIGEST_SHA256_HEX_LEN + 1);
        return 0;
}

int glove_remote_executor_identity_decode(const void *data, size_t len, struct glove_remote_executor_identity *out,
                                          struct glove_error *err) {
        if (!out || (!data && len > 0))
                return glove_error_set(err, EINVAL, "executor.invalid_argument", "no identity text or no output");
        if (len > GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX)
                return glove_error_set(err, EFBIG, "executor.identity_too_large",
                                       "the identity holds %zu bytes, more than the bound of %d", len,
                                       GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX);
        if (all_whitespace(data, len))
                return glove_error_set(err, ENODATA, "executor.identity_empty",
                                       "the identity is empty; it must hold {\"executable_sha256\": ..., "
                                       "\"image_sha256\": ...}");
        struct glove_error e = { 0 };
        _cleanup_json_ json_t *root = NULL;
        if (glove_json_decode_strict(data, len, GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX, GLOVE_JSON_OBJECT_ONLY, &root,
                                     &e) < 0)
                return glove_error_set(err, EINVAL, MALFORMED, "the identity is not one strict JSON object: %s (%s)",
                                       e.message, e.code);
        static const char *const keys[] = { "executable_sha256", "image_sha256", NULL };
        if (glove_json_check_keys(root, keys, NULL, &e) < 0)
                return glove_error_set(err, EINVAL, MALFORMED,
                                       "%s; the identity holds only executable_sha256 and image_sha256", e.message);
        struct glove_remote_executor_identity id;
        int r = get_digest(root, "executable_sha256", id.executable_sha256, err);
        if (r < 0)
                return r;
        r = get_digest(root, "image_sha256", id.image_sha256, err);
        if (r < 0)
                return r;
        *out = id;
        return 0;
}

/* Owner and write-bit checks of an opened file or directory. */
static int check_stat(const struct stat *st, uid_t owner, const char *what, const char *path,
                      struct glove_error *err) {
        if (st->st_uid != owner)
                return glove_error_set(err, EPERM, "executor.identity_owner",
                                       "%s %s is owned by uid %u, not uid %u; make it owned by root (chown root)",
                                       what, path, (unsigned)st->st_uid, (unsigned)owner);
        if (st->st_mode & (S_IWGRP | S_IWOTH))
                return glove_error_set(err, EPERM, "executor.identity_writable",
                                       "%s %s is writable by its %s (mode %04o); remove that (chmod go-w)", what, path,
                                       (st->st_mode & S_IWGRP) ? "group" : "others",
                                       (unsigned)(st->st_mode & 07777));
        return 0;
}

static int open_failed(int errnum, const char *what, const char *path, struct glove_error *err) {
        if (errnum == ENOENT)
                return glove_error_set(err, ENOENT, "executor.identity_missing",
                                       "%s %s does not exist; the administrator creates it (docs/remote-executor.md)",
                                       what, path);
        if (errnum == ELOOP)
                return glove_error_set(err, ELOOP, "executor.identity_type",
                                       "%s %s is a symbolic link (or has one in its path); links are not followed",
                                       what, path);
        if (errnum == ENOTDIR)
                return glove_error_set(err, ENOTDIR, "executor.identity_type", "%s %s is not a directory", what,
                                       path);
        return glove_error_set(err, errnum, "executor.identity_read", "cannot open %s %s: %s", what, path,
                               glove_errno_text(errnum));
}

/* The kind of a non-regular object, for messages. */
static const char *kind_of(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFSOCK:
                return "a socket";
        case S_IFIFO:
                return "a FIFO";
        case S_IFCHR:
                return "a character device";
        case S_IFBLK:
                return "a block device";
        case S_IFDIR:
                return "a directory";
        case S_IFLNK:
                return "a symbolic link";
        default:
                return "of an unknown type";
        }
}

static int not_regular(mode_t mode, const char *path, struct glove_error *err) {
        if (S_ISLNK(mode))
                return open_failed(ELOOP, "the identity file", path, err);
        return glove_error_set(err, EINVAL, "executor.identity_type",
                               "the identity file %s is %s, not a regular file; replace it with the regular file "
                               "docs/remote-executor.md describes",
                               path, kind_of(mode));
}

/*
 * Classifies name beneath dfd without following or opening it
 * (fstatat AT_SYMLINK_NOFOLLOW): 0 for a regular file; executor.identity_type
 * for a symbolic link (-ELOOP) or any other object (-EINVAL: a socket, FIFO,
 * device or directory is never opened); otherwise as open_failed.
 */
static int classify(int dfd, const char *name, const char *path, struct glove_error *err) {
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return open_failed(errno, "the identity file", path, err);
        if (!S_ISREG(st.st_mode))
                return not_regular(st.st_mode, path, err);
        return 0;
}

int glove_remote_executor_identity_load(const char *dir, const char *name, uid_t owner,
                                        struct glove_remote_executor_identity *out, struct glove_error *err) {
        if (!dir || dir[0] != '/' || !name || !name[0] || strchr(name, '/') || !out)
                return glove_error_set(err, EINVAL, "executor.invalid_argument",
                                       "the identity needs an absolute directory and a file name");
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return glove_error_set(err, ENAMETOOLONG, "executor.invalid_argument", "the identity path is too long");

        struct glove_error e = { 0 };
        _cleanup_close_ int dfd = -1;
        /* O_PATH without O_DIRECTORY: a final symbolic link is then
         * reported as one (ELOOP), not as "not a directory". */
        if (glove_fd_open_nofollow(dir, O_PATH, &dfd, &e) < 0)
                return open_failed(e.errnum, "the identity directory", dir, err);
        struct stat st;
        if (fstat(dfd, &st) < 0)
                return glove_error_set(err, errno, "executor.identity_read", "cannot stat %s: %s", dir,
                                       glove_errno_text(errno));
        if (!S_ISDIR(st.st_mode))
                return open_failed(ENOTDIR, "the identity directory", dir, err);
        int r = check_stat(&st, owner, "the identity directory", dir, err);
        if (r < 0)
                return r;

        /* The type first, from the name: an object that is not a regular
         * file is reported as such, not by what opening it does (a socket
         * fails with ENXIO, a device on a nodev mount with EACCES, and
         * opening a device may act on it). */
        r = classify(dfd, name, path, err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                int errnum = errno;
                /* Replaced since it was classified: report the new type. */
                r = classify(dfd, name, path, err);
                if (r < 0)
                        return r;
                return open_failed(errnum, "the identity file", path, err);
        }
        /* The descriptor is authoritative: what is read is what is checked. */
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "executor.identity_read", "cannot stat %s: %s", path,
                                       glove_errno_text(errno));
        if (!S_ISREG(st.st_mode))
                return not_regular(st.st_mode, path, err);
        r = check_stat(&st, owner, "the identity file", path, err);
        if (r < 0)
                return r;

        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        r = glove_fd_read_bounded(fd, GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX, &text, &len, &e);
        if (r == -EFBIG)
                return glove_error_set(err, EFBIG, "executor.identity_too_large",
                                       "the identity file %s holds more than %d bytes", path,
                                       GLOVE_REMOTE_EXECUTOR_IDENTITY_MAX);
        if (r < 0)
                return glove_error_set(err, -r, "executor.identity_read", "cannot read %s: %s", path, e.message);
        r = glove_remote_executor_identity_decode(text, len, out, &e);
        if (r < 0) {
                glove_error_set(err, e.errnum, e.code, "%s: %s", path, e.message);
                return r;
        }
        return 0;
}

int glove_remote_executor_measure(int fd, char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err) {
        struct glove_error e = { 0 };
        _cleanup_digest_sha256_ struct glove_digest_sha256 *ctx = NULL;
        if (glove_digest_sha256_init(&ctx, &e) < 0)
                return glove_error_set(err, e.errnum, "executor.self_measure", "cannot hash the executable: %s",
                                       e.message);
        uint8_t buf[64 * 1024];
        uint64_t total = 0;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return glove_error_set(err, errno, "executor.self_measure",
                                               "cannot read the executable: %s", glove_errno_text(errno));
                }
                if (n == 0)
                        break;
                total += (uint64_t)n;
                if (total > GLOVE_REMOTE_EXECUTOR_EXE_MAX)
                        return glove_error_set(err, EFBIG, "executor.self_measure",
                                               "the executable is larger than %llu bytes",
                                               (unsigned long long)GLOVE_REMOTE_EXECUTOR_EXE_MAX);
                if (glove_digest_sha256_update(ctx, buf, (size_t)n, &e) < 0)
                        return glove_error_set(err, e.errnum, "executor.self_measure",
                                               "cannot hash the executable: %s", e.message);
        }
        uint8_t digest[GLOVE_DIGEST_SHA256_LEN];
        if (glove_digest_sha256_final(ctx, digest, &e) < 0)
                return glove_error_set(err, e.errnum, "executor.self_measure", "cannot hash the executable: %s",
                                       e.message);
        glove_digest_hex_encode(digest, sizeof(digest), hex, GLOVE_DIGEST_SHA256_HEX_LEN + 1);
        return 0;
}

int glove_remote_executor_identity_check(const struct glove_remote_executor_identity *id,
                                         const char measured[GLOVE_DIGEST_SHA256_HEX_LEN + 1],
                                         struct glove_error *err) {
        if (!id || !measured)
                return glove_error_set(err, EINVAL, "executor.invalid_argument", "no identity or no measurement");
        if (!glove_digest_equal(id->executable_sha256, measured, GLOVE_DIGEST_SHA256_HEX_LEN))
                return glove_error_set(err, EPERM, "executor.identity_mismatch",
                                       "this executable's SHA-256 is %.64s but the identity expects %.64s; the "
                                       "identity names another build (update executable_sha256, or install the "
                                       "matching executable)",
                                       measured, id->executable_sha256);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The protected policy file loader (spec session-policy.md, "Protected
 * files": regular file, current-user owned, mode 0600, one hard link, no
 * final symlink, 1 MiB; one descriptor; metadata or identity changes during
 * validation are rejected). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/supervisor/policy.h"
#include "internal.h"

void (*glove_supervisor_policy_load_test_hook)(int fd, const char *path) = NULL;

static bool same_identity(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
               a->st_uid == b->st_uid && a->st_nlink == b->st_nlink && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int check_metadata(const struct stat *st, const char *path, uid_t owner_uid, size_t max_bytes,
                          struct glove_error *err) {
        if (!S_ISREG(st->st_mode))
                return glove_error_set(err, EINVAL, "policy.file_not_regular", "%s: not a regular file", path);
        if (st->st_uid != owner_uid)
                return glove_error_set(err, EPERM, "policy.file_owner", "%s: owned by uid %u, expected uid %u",
                                       path, (unsigned)st->st_uid, (unsigned)owner_uid);
        if ((st->st_mode & 07777) != 0600)
                return glove_error_set(err, EPERM, "policy.file_mode", "%s: mode %04o, expected 0600", path,
                                       (unsigned)(st->st_mode & 07777));
        if (st->st_nlink != 1)
                return glove_error_set(err, EPERM, "policy.file_links", "%s: %lu hard links, expected exactly 1",
                                       path, (unsigned long)st->st_nlink);
        if ((uint64_t)st->st_size > max_bytes)
                return glove_error_set(err, EFBIG, "policy.file_too_large", "%s: %lld bytes, the limit is %zu",
                                       path, (long long)st->st_size, max_bytes);
        return 0;
}

int sv_load_protected_file(const char *path, uid_t owner_uid, size_t max_bytes, char **out, size_t *out_len,
                          struct glove_error *err) {
        *out = NULL;
        *out_len = 0;
        if (!path || path[0] != '/')
                return glove_error_set(err, EINVAL, "policy.file_path_relative",
                                       "%s: the policy path must be absolute", path ? path : "(null)");

        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                int e = errno;
                if (e == ELOOP)
                        return glove_error_set(err, ELOOP, "policy.file_symlink",
                                               "%s: is a symbolic link; name the file itself", path);
                return glove_error_set(err, e, "policy.file_open", "%s: cannot open: %s", path, strerror(e));
        }
        struct stat before, after;
        if (fstat(fd, &before) < 0)
                return glove_error_set(err, errno, "policy.file_open", "%s: fstat: %s", path, strerror(errno));
        int r = check_metadata(&before, path, owner_uid, max_bytes, err);
        if (r < 0)
                return r;

        /* Bounded by the size fstat saw: growth after it fails the read
         * (-EFBIG) and is reported as a change below. */
        size_t size = (size_t)before.st_size;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        r = glove_fd_read_bounded(fd, size, &buf, &n, NULL);
        bool grew = r == -EFBIG;
        if (r == -ENOMEM)
                return glove_error_set(err, ENOMEM, "policy.no_memory", "%s: out of memory", path);
        if (r < 0 && !grew)
                return glove_error_set(err, -r, "policy.file_read", "%s: read: %s", path, strerror(-r));
        if (glove_supervisor_policy_load_test_hook)
                glove_supervisor_policy_load_test_hook(fd, path);
        if (fstat(fd, &after) < 0)
                return glove_error_set(err, errno, "policy.file_read", "%s: fstat: %s", path, strerror(errno));
        if (grew || n != size || !same_identity(&before, &after))
                return glove_error_set(err, EAGAIN, "policy.file_changed",
                                       "%s: changed while it was read; replace it atomically and retry", path);
        *out = TAKE_PTR(buf);
        *out_len = n;
        return 0;
}

int glove_supervisor_policy_load(const char *path, uid_t owner_uid, struct glove_supervisor_policy **out,
                                 struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no output pointer");
        *out = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = sv_load_protected_file(path, owner_uid, GLOVE_POLICY_MAX_BYTES, &buf, &n, err);
        if (r < 0)
                return r;
        r = glove_supervisor_policy_decode_ex(buf, n, out, NULL, 0, err);
        if (r < 0)
                glove_error_prefix(err, "%s", path);
        return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/store/dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/base/path.h"

int glove_store_dir_check(const struct stat *st, uid_t owner, const char *name, struct glove_error *err) {
        if (!S_ISDIR(st->st_mode))
                return glove_error_set(err, EPERM, "dirs.insecure", "%s is not a directory", name);
        if (st->st_uid != owner)
                return glove_error_set(err, EPERM, "dirs.insecure", "%s is owned by uid %u, not by the service user (uid %u)",
                                       name, (unsigned)st->st_uid, (unsigned)owner);
        if ((st->st_mode & 07777) != 0700)
                return glove_error_set(err, EPERM, "dirs.insecure", "%s has mode %04o; it must be 0700", name,
                                       (unsigned)(st->st_mode & 07777));
        return 0;
}

int glove_store_file_check(int fd, uid_t owner, const char *name, const char *code, struct glove_error *err) {
        struct stat st;
        if (!code)
                code = "dirs.file_insecure";
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, code, "%s: fstat: %s", name, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return glove_error_set(err, EPERM, code, "%s is not a regular file", name);
        if (st.st_uid != owner)
                return glove_error_set(err, EPERM, code, "%s is owned by uid %u, not by the service user (uid %u)", name,
                                       (unsigned)st.st_uid, (unsigned)owner);
        if ((st.st_mode & 07777) != 0600)
                return glove_error_set(err, EPERM, code, "%s has mode %04o; it must be 0600", name,
                                       (unsigned)(st.st_mode & 07777));
        if (st.st_nlink != 1)
                return glove_error_set(err, EPERM, code, "%s has %lu hard links; it must have exactly one", name,
                                       (unsigned long)st.st_nlink);
        return 0;
}

/* Creates every missing component of the normalized absolute path with mode
 * 0700, walking by descriptor without following links. */
static int create_components(const char *path, struct glove_error *err) {
        _cleanup_close_ int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return glove_error_set(err, errno, "dirs.create", "/: %s", strerror(errno));
        const char *p = path;
        while (*p == '/')
                p++;
        char comp[256];
        while (*p) {
                const char *end = strchrnul(p, '/');
                size_t n = (size_t)(end - p);
                if (n >= sizeof(comp))
                        return glove_error_set(err, ENAMETOOLONG, "dirs.create", "%s: component too long", path);
                memcpy(comp, p, n);
                comp[n] = '\0';
                if (mkdirat(cur, comp, 0700) < 0 && errno != EEXIST)
                        return glove_error_set(err, errno, "dirs.create", "%s: cannot create %s: %s", path, comp,
                                               strerror(errno));
                int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return glove_error_set(err, errno == ENOTDIR ? ELOOP : errno, "dirs.create",
                                               "%s: %s is not a directory (or is a symbolic link)", path, comp);
                close(cur);
                cur = next;
                p = end;
                while (*p == '/')
                        p++;
        }
        return 0;
}

int glove_store_dir_open_private(const char *path, uid_t owner, bool create, int *out_fd,
                                   struct glove_error *err) {
        _cleanup_free_ char *norm = NULL;
        if (!path || path[0] != '/')
                return glove_error_set(err, EINVAL, "dirs.relative", "%s: the directory must be an absolute path",
                                       path ? path : "(null)");
        int r = glove_path_normalize(path, "/", &norm, err);
        if (r < 0)
                return r;
        if (strcmp(norm, path) != 0 && !(strlen(path) == strlen(norm) + 1 && path[strlen(path) - 1] == '/'))
                return glove_error_set(err, EINVAL, "dirs.relative", "%s: the path must be normalized (e.g. %s)", path,
                                       norm);
        if (strcmp(norm, "/") == 0)
                return glove_error_set(err, EINVAL, "dirs.relative", "/ cannot be a private directory");
        if (create) {
                r = create_components(norm, err);
                if (r < 0)
                        return r;
        }
        _cleanup_close_ int fd = -1;
        r = glove_fd_open_nofollow(norm, O_RDONLY | O_DIRECTORY, &fd, err);
        if (r < 0)
                return r;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "dirs.insecure", "%s: fstat: %s", norm, strerror(errno));
        r = glove_store_dir_check(&st, owner, norm, err);
        if (r < 0)
                return r;
        /* The tag glove exec and glove run look for (dirs.h). */
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | GLOVE_STORE_KEPT_DIR_FLAG) < 0)
                return glove_error_set(err, errno, "dirs.insecure", "%s: cannot mark the descriptor as kept: %s", norm,
                                       strerror(errno));
        *out_fd = TAKE_FD(fd);
        return 0;
}

int glove_store_file_replace(int dirfd, const char *name, const void *data, size_t len,
                               struct glove_error *err) {
        struct glove_error e = { 0 };
        int r = glove_file_replace(dirfd, name, data, len, 0600, GLOVE_FILE_REPLACE_SYNC_DIR, &e);
        if (r < 0)
                return glove_error_set(err, -r, "dirs.write", "%s", e.message);
        return 0;
}

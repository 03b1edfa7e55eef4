/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/host/config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/store/dirs.h"
#include "glove/host/dirs.h"

void glove_host_config_clear(struct glove_host_config *c) {
        for (size_t i = 0; i < c->n_roots; i++)
                free(c->roots[i]);
        memset(c, 0, sizeof(*c));
}

/* Lexical rules of a stored root: absolute, normalized, not "/", not a
 * kernel file system. */
static int root_lexical(const char *p, const char *where, struct glove_error *err) {
        if (p[0] != '/')
                return glove_error_set(err, EINVAL, "config.bad_root", "%s: %s is not an absolute path", where, p);
        _cleanup_free_ char *norm = NULL;
        if (glove_path_normalize(p, "/", &norm, err) < 0 || strcmp(norm, p) != 0)
                return glove_error_set(err, EINVAL, "config.bad_root", "%s: %s is not normalized", where, p);
        if (strcmp(p, "/") == 0)
                return glove_error_set(err, EINVAL, "config.bad_root", "%s: / cannot be a path root", where);
        static const char *const kernel[] = { "/proc", "/sys", "/dev" };
        for (size_t i = 0; i < 3; i++)
                if (glove_path_is_beneath(p, kernel[i]))
                        return glove_error_set(err, EINVAL, "config.bad_root", "%s: %s lies under %s", where, p,
                                               kernel[i]);
        return 0;
}

static const char *const config_keys[] = { "path_roots", "schema_version", NULL };

static int decode(const char *buf, size_t n, struct glove_host_config *out, struct glove_error *err) {
        _cleanup_json_ json_t *o = NULL;
        struct glove_error e = { 0 };
        int64_t version;
        json_t *roots;
        if (glove_json_decode_strict(buf, n, GLOVE_HOST_CONFIG_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &o, &e) < 0 ||
            glove_json_check_keys(o, config_keys, NULL, &e) < 0 ||
            glove_json_get_int(o, "schema_version", NULL, GLOVE_HOST_CONFIG_SCHEMA_VERSION,
                               GLOVE_HOST_CONFIG_SCHEMA_VERSION, &version, &e) < 0 ||
            glove_json_get_array(o, "path_roots", NULL, GLOVE_HOST_CONFIG_MAX_ROOTS, &roots, &e) < 0)
                return glove_error_set(err, EINVAL, "config.invalid", "%s: %s", GLOVE_HOST_CONFIG_FILE, e.message);
        for (size_t i = 0; i < json_array_size(roots); i++) {
                char path[GLOVE_JSON_PATH_MAX];
                const char *s;
                snprintf(path, sizeof(path), "$.path_roots[%zu]", i);
                if (glove_json_as_string(json_array_get(roots, i), path, GLOVE_HOST_CONFIG_PATH_MAX, &s, &e) < 0 ||
                    root_lexical(s, path, &e) < 0)
                        return glove_error_set(err, EINVAL, "config.invalid", "%s: %s", GLOVE_HOST_CONFIG_FILE,
                                               e.message);
                if (i > 0 && strcmp(out->roots[i - 1], s) >= 0)
                        return glove_error_set(err, EINVAL, "config.invalid",
                                               "%s: %s: the roots must be sorted by bytes and unique",
                                               GLOVE_HOST_CONFIG_FILE, path);
                out->roots[i] = strdup(s);
                if (!out->roots[i])
                        return glove_error_set(err, ENOMEM, "config.read", "out of memory");
                out->n_roots = i + 1;
        }
        return 0;
}

int glove_host_config_read(int dirfd, uid_t owner, struct glove_host_config *out, struct glove_error *err) {
        memset(out, 0, sizeof(*out));
        _cleanup_close_ int fd = openat(dirfd, GLOVE_HOST_CONFIG_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 1;
        if (fd < 0)
                return glove_error_set(err, errno == ELOOP ? EPERM : errno,
                                       errno == ELOOP ? "config.file_insecure" : "config.read", "%s: %s",
                                       GLOVE_HOST_CONFIG_FILE,
                                       errno == ELOOP ? "is a symbolic link" : strerror(errno));
        int r = glove_store_file_check(fd, owner, GLOVE_HOST_CONFIG_FILE, "config.file_insecure", err);
        if (r < 0)
                return r;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        struct glove_error e = { 0 };
        r = glove_fd_read_bounded(fd, GLOVE_HOST_CONFIG_MAX_BYTES, &buf, &n, &e);
        if (r < 0)
                return glove_error_set(err, -r, "config.read", "%s: %s", GLOVE_HOST_CONFIG_FILE, e.message);
        r = decode(buf, n, out, err);
        if (r < 0)
                glove_host_config_clear(out);
        return r;
}

/* Why norm (absolute, normalized) could not be opened as a directory
 * without following a link: each component is opened from / with
 * O_PATH|O_NOFOLLOW and looked at, so the message names the first
 * symbolic link, missing component or non-directory; anything else is
 * told by e's errno. Always config.bad_root. */
static int root_open_failed(const char *norm, const struct glove_error *e, struct glove_error *err) {
        int code = e->errnum ? e->errnum : EINVAL;
        _cleanup_close_ int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        size_t len = strlen(norm), at = 1;
        while (dir >= 0 && at < len) {
                size_t end = at;
                while (end < len && norm[end] != '/')
                        end++;
                char name[NAME_MAX + 1];
                if (end - at > NAME_MAX)
                        break;
                memcpy(name, norm + at, end - at);
                name[end - at] = '\0';
                int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 && errno == ENOENT)
                        return glove_error_set(err, ENOENT, "config.bad_root", "--path-root %s: %.*s does not exist",
                                               norm, (int)end, norm);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        if (fd >= 0)
                                close(fd);
                        break;
                }
                if (S_ISLNK(st.st_mode)) {
                        close(fd);
                        return glove_error_set(err, ELOOP, "config.bad_root",
                                               "--path-root %s: %.*s is a symbolic link: a root is reached without "
                                               "links",
                                               norm, (int)end, norm);
                }
                if (!S_ISDIR(st.st_mode)) {
                        close(fd);
                        return glove_error_set(err, ENOTDIR, "config.bad_root",
                                               "--path-root %s: %.*s is not a directory", norm, (int)end, norm);
                }
                close(dir);
                dir = fd;
                at = end + 1;
        }
        return glove_error_set(err, code, "config.bad_root", "--path-root %s: %s", norm, strerror(code));
}

int glove_host_config_check_root(const char *path, uid_t owner, char **out, struct glove_error *err) {
        *out = NULL;
        if (!path || path[0] != '/')
                return glove_error_set(err, EINVAL, "config.bad_root", "--path-root %s: not an absolute path",
                                       path ? path : "(null)");
        if (strlen(path) > GLOVE_HOST_CONFIG_PATH_MAX)
                return glove_error_set(err, ENAMETOOLONG, "config.bad_root", "--path-root: path too long");
        _cleanup_free_ char *norm = NULL;
        int r = glove_path_normalize(path, "/", &norm, err);
        if (r < 0)
                return r;
        r = root_lexical(norm, "--path-root", err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = -1;
        struct glove_error e = { 0 };
        r = glove_fd_open_nofollow(norm, O_RDONLY | O_DIRECTORY, &fd, &e);
        if (r < 0)
                return root_open_failed(norm, &e, err);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "config.bad_root", "--path-root %s: %s", norm, strerror(errno));
        if (st.st_uid != owner)
                return glove_error_set(err, EPERM, "config.bad_root",
                                       "--path-root %s is owned by uid %u, not by you (uid %u): a root must be yours",
                                       norm, (unsigned)st.st_uid, (unsigned)owner);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return glove_error_set(err, EPERM, "config.bad_root",
                                       "--path-root %s has mode %04o: a root must not be writable by group or others",
                                       norm, (unsigned)(st.st_mode & 07777));
        *out = TAKE_PTR(norm);
        return 0;
}

int glove_host_config_add_root(struct glove_host_config *c, const char *root, bool *added, struct glove_error *err) {
        *added = false;
        size_t at = 0;
        while (at < c->n_roots && strcmp(c->roots[at], root) < 0)
                at++;
        if (at < c->n_roots && strcmp(c->roots[at], root) == 0)
                return 0;
        if (c->n_roots == GLOVE_HOST_CONFIG_MAX_ROOTS)
                return glove_error_set(err, E2BIG, "config.too_many_roots", "at most %d path roots can be recorded",
                                       GLOVE_HOST_CONFIG_MAX_ROOTS);
        char *dup = strdup(root);
        if (!dup)
                return glove_error_set(err, ENOMEM, "config.read", "out of memory");
        memmove(&c->roots[at + 1], &c->roots[at], (c->n_roots - at) * sizeof(c->roots[0]));
        c->roots[at] = dup;
        c->n_roots++;
        *added = true;
        return 0;
}

int glove_host_config_encode(const struct glove_host_config *c, char **out, size_t *len, struct glove_error *err) {
        *out = NULL;
        _cleanup_json_ json_t *roots = json_array();
        for (size_t i = 0; roots && i < c->n_roots; i++)
                if (json_array_append_new(roots, json_string(c->roots[i])) < 0)
                        return glove_error_set(err, ENOMEM, "config.read", "out of memory");
        _cleanup_json_ json_t *o = roots ? json_pack("{s:O,s:i}", "path_roots", roots, "schema_version",
                                                     GLOVE_HOST_CONFIG_SCHEMA_VERSION)
                                         : NULL;
        _cleanup_free_ char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
        if (!text)
                return glove_error_set(err, ENOMEM, "config.read", "out of memory");
        size_t n = strlen(text);
        char *buf = malloc(n + 2);
        if (!buf)
                return glove_error_set(err, ENOMEM, "config.read", "out of memory");
        memcpy(buf, text, n);
        buf[n] = '\n';
        buf[n + 1] = '\0';
        *out = buf;
        *len = n + 1;
        return 0;
}

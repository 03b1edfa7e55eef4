/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int glove_path_normalize(const char *path, const char *cwd, char **out, struct glove_error *err) {
        *out = NULL;
        if (!path || !*path)
                return glove_error_set(err, EINVAL, "path.empty", "empty path");
        size_t plen = strnlen(path, GLOVE_PATH_MAX);
        if (plen >= GLOVE_PATH_MAX)
                return glove_error_set(err, ENAMETOOLONG, "path.too_long", "path longer than %d bytes", GLOVE_PATH_MAX - 1);
        size_t clen = 0;
        if (path[0] != '/') {
                if (!cwd || cwd[0] != '/')
                        return glove_error_set(err, EINVAL, "path.relative_cwd", "relative path %s without an absolute working directory", path);
                clen = strnlen(cwd, GLOVE_PATH_MAX);
                if (clen >= GLOVE_PATH_MAX)
                        return glove_error_set(err, ENAMETOOLONG, "path.too_long", "working directory longer than %d bytes", GLOVE_PATH_MAX - 1);
        }
        /* Work on "cwd/path" (or path); the result is never longer than that. */
        size_t cap = clen + 1 + plen + 2;
        char *joined = malloc(cap);
        char *res = malloc(cap);
        if (!joined || !res) {
                free(joined);
                free(res);
                return glove_error_set(err, ENOMEM, "path.nomem", "out of memory");
        }
        if (clen)
                memcpy(joined, cwd, clen);
        joined[clen] = '/';
        memcpy(joined + clen + 1, path, plen + 1);

        size_t rlen = 0;
        const char *p = joined;
        while (*p) {
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                const char *end = strchrnul(p, '/');
                size_t n = (size_t)(end - p);
                if (n == 1 && p[0] == '.') {
                        /* skip */
                } else if (n == 2 && p[0] == '.' && p[1] == '.') {
                        while (rlen > 0 && res[rlen - 1] != '/')
                                rlen--;
                        if (rlen > 0)
                                rlen--; /* drop the separating slash */
                } else {
                        res[rlen++] = '/';
                        memcpy(res + rlen, p, n);
                        rlen += n;
                }
                p = end;
        }
        free(joined);
        if (rlen == 0)
                res[rlen++] = '/';
        res[rlen] = '\0';
        if (rlen >= GLOVE_PATH_MAX) {
                free(res);
                return glove_error_set(err, ENAMETOOLONG, "path.too_long", "path longer than %d bytes", GLOVE_PATH_MAX - 1);
        }
        *out = res;
        return 0;
}

bool glove_path_is_beneath(const char *path, const char *root) {
        size_t n = strlen(root);
        if (n == 1 && root[0] == '/')
                return path[0] == '/';
        if (strncmp(path, root, n) != 0)
                return false;
        return path[n] == '\0' || path[n] == '/';
}

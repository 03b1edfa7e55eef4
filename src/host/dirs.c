/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/host/dirs.h"

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

/* dst = normalize(base + "/" + rel + "/glove"), or an error. */
static int join(char dst[PATH_MAX], const char *base, const char *rel, struct glove_error *err) {
        char buf[PATH_MAX];
        int n = snprintf(buf, sizeof(buf), "%s%s%s/glove", base, rel ? "/" : "", rel ? rel : "");
        if (n < 0 || (size_t)n >= sizeof(buf))
                return glove_error_set(err, ENAMETOOLONG, "host.no_default_dir", "%s: path too long", base);
        _cleanup_free_ char *norm = NULL;
        int r = glove_path_normalize(buf, "/", &norm, err);
        if (r < 0)
                return r;
        if (strlen(norm) >= PATH_MAX)
                return glove_error_set(err, ENAMETOOLONG, "host.no_default_dir", "%s: path too long", norm);
        strcpy(dst, norm);
        return 0;
}

static const char *absolute_env(const char *name) {
        const char *v = getenv(name);
        return v && v[0] == '/' ? v : NULL;
}

static int xdg(char dst[PATH_MAX], const char *env, const char *home_rel, struct glove_error *err) {
        const char *base = absolute_env(env);
        if (base)
                return join(dst, base, NULL, err);
        const char *home = absolute_env("HOME");
        if (home && home_rel)
                return join(dst, home, home_rel, err);
        return glove_error_set(err, EINVAL, "host.no_default_dir",
                               "$%s is not set to an absolute path and neither is $HOME", env);
}

static int file_in(char dst[PATH_MAX], const char *dir, const char *name, struct glove_error *err) {
        int n = snprintf(dst, PATH_MAX, "%s/%s", dir, name);
        if (n < 0 || n >= PATH_MAX)
                return glove_error_set(err, ENAMETOOLONG, "host.no_default_dir", "%s: path too long", dir);
        return 0;
}

int glove_host_dirs_from_env(struct glove_host_dirs *out, struct glove_error *err) {
        memset(out, 0, sizeof(*out));
        int r = xdg(out->config, "XDG_CONFIG_HOME", ".config", err);
        if (r == 0)
                r = xdg(out->state, "XDG_STATE_HOME", ".local/state", err);
        if (r == 0 && absolute_env("XDG_RUNTIME_DIR"))
                r = join(out->runtime, getenv("XDG_RUNTIME_DIR"), NULL, err);
        if (r == 0)
                r = file_in(out->policy, out->config, GLOVE_HOST_POLICY_FILE, err);
        if (r == 0)
                r = file_in(out->config_file, out->config, GLOVE_HOST_CONFIG_FILE, err);
        return r;
}

int glove_host_file_write_atomic(int dirfd, const char *name, const void *data, size_t len, bool replace,
                                 struct glove_error *err) {
        return glove_host_file_write_atomic_mode(dirfd, name, data, len, 0600, replace, err);
}

int glove_host_file_write_atomic_mode(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                                      bool replace, struct glove_error *err) {
        struct glove_error e = { 0 };
        int r = glove_file_replace(dirfd, name, data, len, mode & 0777,
                                   GLOVE_FILE_REPLACE_SYNC_DIR | (replace ? 0 : GLOVE_FILE_REPLACE_NOREPLACE), &e);
        if (r < 0)
                return glove_error_set(err, -r, r == -EEXIST ? "host.exists" : "host.write", "%s", e.message);
        return 0;
}

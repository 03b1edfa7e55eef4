/* SPDX-License-Identifier: Apache-2.0 */
/*
 * npm optional dependencies built for this host (policy_internal.h): the
 * platform packages a CLI such as codex loads at run time
 * (@openai/codex-linux-x64), which glove policy stage must copy and glove
 * policy explain checks in a staged closure (docs/host.md, "What stage
 * copies").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "policy_internal.h"

#define NPM_PACKAGE_JSON_MAX (1024 * 1024) /* bytes, as stage reads */
#define NPM_WALK_MAX_DEPTH 64
#define NPM_WALK_MAX_DIRS 100000

const char *policy_npm_host_platform(void) {
        static char plat[80];
        if (plat[0])
                return plat;
        struct utsname u;
        char arch[65] = "unknown";
        if (uname(&u) == 0) {
                static const struct {
                        const char *machine, *npm;
                } archs[] = {
                        {"x86_64", "x64"},   {"aarch64", "arm64"}, {"i686", "ia32"},       {"i386", "ia32"},
                        {"armv7l", "arm"},   {"armv6l", "arm"},    {"ppc64le", "ppc64"},   {"s390x", "s390x"},
                        {"riscv64", "riscv64"}, {"loongarch64", "loong64"},
                };
                snprintf(arch, sizeof(arch), "%s", u.machine);
                for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
                        if (strcmp(u.machine, archs[i].machine) == 0)
                                snprintf(arch, sizeof(arch), "%s", archs[i].npm);
        }
        snprintf(plat, sizeof(plat), "linux-%s", arch);
        return plat;
}

/* Whether text has token tok (a maximal run of letters and digits,
 * compared without case). */
static bool has_token(const char *text, const char *tok) {
        size_t n = strlen(tok);
        for (const char *p = text; *p;) {
                while (*p && !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
                        p++;
                const char *q = p;
                while (*q && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')))
                        q++;
                if ((size_t)(q - p) == n && strncasecmp(p, tok, n) == 0)
                        return true;
                p = q;
        }
        return false;
}

bool policy_npm_dep_for_host(const char *name, const char *spec) {
        const char *plat = policy_npm_host_platform();
        const char *arch = plat + strlen("linux-");
        char text[1024];
        snprintf(text, sizeof(text), "%s %s", name, spec ? spec : "");
        if (!has_token(text, "linux") || has_token(text, "android"))
                return false;
#ifdef __GLIBC__
        if (has_token(text, "musl"))
                return false;
#endif
        return has_token(text, arch) || (strcmp(arch, "x64") == 0 && has_token(text, "amd64"));
}

/* Whether dependency name resolves from package directory pkg as node
 * resolves it, without leaving root (a directory NAME in pkg/node_modules or
 * in that of an ancestor up to root). */
static bool resolves_within(const char *root, const char *pkg, const char *name) {
        char x[PATH_MAX];
        if ((size_t)snprintf(x, sizeof(x), "%s", pkg) >= sizeof(x))
                return false;
        for (;;) {
                const char *base = strrchr(x, '/');
                if (strcmp(base ? base + 1 : x, "node_modules") != 0) {
                        char c[PATH_MAX];
                        struct stat st;
                        if ((size_t)snprintf(c, sizeof(c), "%s/node_modules/%s", x, name) < sizeof(c) &&
                            lstat(c, &st) == 0 && S_ISDIR(st.st_mode))
                                return true;
                }
                if (strcmp(x, root) == 0 || !glove_path_is_beneath(x, root))
                        return false;
                char *slash = strrchr(x, '/');
                if (!slash || slash == x)
                        return false;
                *slash = '\0';
        }
}

/* Whether dir is a package directory of a closure: root itself, or
 * node_modules/NAME, or node_modules/@SCOPE/NAME. */
static bool package_dir(const char *root, const char *dir) {
        if (strcmp(dir, root) == 0)
                return true;
        const char *last = strrchr(dir, '/');
        if (!last || last == dir)
                return false;
        size_t plen = (size_t)(last - dir);
        const char *prev = dir + plen;
        while (prev > dir && prev[-1] != '/')
                prev--;
        size_t n = (size_t)(dir + plen - prev);
        if (n == 12 && strncmp(prev, "node_modules", 12) == 0)
                return true;
        if (prev[0] != '@' || prev == dir + 1)
                return false;
        const char *pp = prev - 1;
        const char *ps = pp;
        while (ps > dir && ps[-1] != '/')
                ps--;
        return (size_t)(pp - ps) == 12 && strncmp(ps, "node_modules", 12) == 0;
}

struct walk {
        const char *root;
        size_t dirs, missing;
        void (*fn)(void *ctx, const char *pkg, const char *dep);
        void *ctx;
};

static void check_package(struct walk *w, const char *dir) {
        char p[PATH_MAX];
        if ((size_t)snprintf(p, sizeof(p), "%s/package.json", dir) >= sizeof(p))
                return;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        if (glove_file_read_bounded(AT_FDCWD, p, O_NOFOLLOW | O_NONBLOCK, NPM_PACKAGE_JSON_MAX, &buf, &len, NULL) < 0)
                return;
        _cleanup_json_ json_t *pj = json_loadb(buf, len, 0, NULL);
        const char *name;
        json_t *v;
        json_object_foreach(json_object_get(pj, "optionalDependencies"), name, v) {
                if (!policy_npm_dep_for_host(name, json_string_value(v)) || resolves_within(w->root, dir, name))
                        continue;
                w->missing++;
                if (w->fn)
                        w->fn(w->ctx, dir, name);
        }
}

static void walk_dir(struct walk *w, const char *dir, int depth) {
        if (depth > NPM_WALK_MAX_DEPTH || ++w->dirs > NPM_WALK_MAX_DIRS)
                return;
        if (package_dir(w->root, dir))
                check_package(w, dir);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                char child[PATH_MAX];
                struct stat st;
                if ((size_t)snprintf(child, sizeof(child), "%s/%s", dir, de->d_name) >= sizeof(child) ||
                    lstat(child, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                walk_dir(w, child, depth + 1);
        }
        closedir(d);
}

size_t policy_npm_closure_missing(const char *root, void (*fn)(void *ctx, const char *pkg, const char *dep),
                                  void *ctx) {
        struct walk w = {.root = root, .fn = fn, .ctx = ctx};
        walk_dir(&w, root, 0);
        return w.missing;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove policy stage (include/glove/host/policy.h; docs/host.md, "The
 * policy workflow" and "What stage copies"; docs/digests.md,
 * "staged_closure_digest"): a single-root npm package closure, or one
 * executable file, copied into DIR/closures/<digest>/ without following any
 * link, with the entry point DIR/<adapter executable> a relative link into
 * it, never over an existing one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/store/dirs.h"
#include "glove/supervisor/adapter.h"
#include "glove/supervisor/trust.h"
#include "policy_internal.h"
#include "shown.h"

/* Bounds (docs/host.md lists them). */
#define STAGE_MAX_ENTRIES 200000             /* files, directories and links */
#define STAGE_MAX_BYTES (8ULL << 30)         /* total file bytes, 8 GiB */
#define STAGE_MAX_DEPTH 64                   /* directory depth below a package */
#define STAGE_MAX_PACKAGES 4096              /* packages in one closure */
#define STAGE_MAX_PACKAGE_JSON (1024 * 1024) /* bytes */
#define STAGE_DIGEST_DOMAIN "glove.staged-closure"
#define STAGE_DIGEST_VERSION 1
#define STAGE_CLOSURES "closures"

static const char stage_help[] =
        "Usage: glove policy stage --runtime ID --source PATH --directory DIR\n"
        "                          [--dry-run | --yes] [--json]\n"
        "\n"
        "Copies a supported closure into the protected directory DIR so that gloved's\n"
        "discovery (or a pinned template) can use it even when the package manager's\n"
        "tree is group-writable:\n"
        "  npm package  PATH is the package directory (with package.json) or a file\n"
        "               in it (e.g. the link npm puts in node_modules/.bin); the\n"
        "               package's bin entry named as the adapter's executable is the\n"
        "               entry point; the closure is the package with every\n"
        "               dependency and optional dependency, transitively, resolved\n"
        "               as node does, all inside one root: the node_modules\n"
        "               directory holding the package (or the package itself);\n"
        "               an optional dependency built for this host (a platform\n"
        "               package such as @openai/codex-linux-x64) that is not\n"
        "               installed there is refused (stage.optional_missing)\n"
        "  file         PATH is one regular executable file outside any package\n"
        "Nothing is read from a harness home (~/.codex, ~/.claude, ~/.claude.json,\n"
        "~/.pi, ~/.copilot, ~/.config/opencode, ~/.local/share/opencode). Links are\n"
        "never followed: a link inside the closure is copied as a link if it stays\n"
        "inside the copied packages, else staging is refused. Files are copied with\n"
        "mode 0755 (any execute bit) or 0644, directories 0755.\n"
        "\n"
        "DIR (absolute) must pass the discovery trust rule; it is created 0700 if\n"
        "missing, else it must be yours with mode 0700. The copy goes to\n"
        "DIR/closures/DIGEST/ and the entry point DIR/EXECUTABLE is a relative link to\n"
        "it; an existing DIR/EXECUTABLE is never replaced. DIGEST is the\n"
        "staged_closure_digest (docs/digests.md). The report gives the digest, the\n"
        "canonical executable and the template flags to use.\n"
        "\n"
        "Options:\n"
        "  --runtime ID      claude-code, codex, copilot, opencode or pi\n"
        "  --source PATH     the package directory, a file in it, or one executable\n"
        "                    (relative to the working directory, or absolute)\n"
        "  --directory DIR   the protected directory\n"
        "  --dry-run         check and hash everything, report what would be copied\n"
        "                    (packages, files, bytes, digest); write nothing\n"
        "  --yes             copy\n"
        "  --json            the report as one JSON object on stdout\n"
        "  -h, --help        show this help\n"
        "\n"
        "Exit status: 0 staged (or would be), 1 refused or failed, 125 usage error\n"
        "(including neither --dry-run nor --yes).\n";

/* ---- the manifest ---- */

enum kind { K_DIR = 'd', K_FILE = 'f', K_LINK = 'l' };

struct entry {
        char *path;   /* relative to the snapshot */
        char kind;
        uint32_t mode;
        uint64_t size;
        uint8_t sha[GLOVE_DIGEST_SHA256_LEN];
        char *target; /* links */
};

struct stage {
        const struct glove_supervisor_adapter *adapter;
        const char *source, *directory;
        bool dry_run, json;
        uid_t uid;
        /* the closure */
        char *src;         /* canonical source */
        char *root;        /* canonical closure root (node_modules dir, package dir, or the file's dir) */
        char *top;         /* basename of root: the snapshot's first component */
        char *package;     /* canonical package dir, NULL for a file */
        char *entry_rel;   /* entry point relative to the snapshot */
        const char *kind;  /* "npm" | "file" */
        char *name, *version;
        char *pkgs[STAGE_MAX_PACKAGES]; /* package dirs relative to root ("" = root) */
        size_t n_pkgs;
        size_t optional_missing;
        char host_missing[1024]; /* "DEP (of PKG), ..." built for this host, not installed */
        size_t n_host_missing;
        /* the copy */
        struct entry *entries;
        size_t n_entries, cap_entries;
        uint64_t bytes;
        size_t files, dirs, links;
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        int dir_fd;        /* DIR, or -1 (dry run, missing) */
        bool dir_missing;
        int tmp_fd;        /* the snapshot being written */
        char tmp_name[64];
};

static void stage_clear(struct stage *s) {
        free(s->src);
        free(s->root);
        free(s->top);
        free(s->package);
        free(s->entry_rel);
        free(s->name);
        free(s->version);
        for (size_t i = 0; i < s->n_pkgs; i++)
                free(s->pkgs[i]);
        for (size_t i = 0; i < s->n_entries; i++) {
                free(s->entries[i].path);
                free(s->entries[i].target);
        }
        free(s->entries);
        if (s->dir_fd >= 0)
                close(s->dir_fd);
        if (s->tmp_fd >= 0)
                close(s->tmp_fd);
}

static int nomem(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "stage.no_memory", "out of memory");
}

static struct entry *add_entry(struct stage *s, const char *path, char kind, struct glove_error *err) {
        if (s->n_entries == STAGE_MAX_ENTRIES) {
                glove_error_set(err, EFBIG, "stage.too_large", "the closure has more than %d entries",
                                STAGE_MAX_ENTRIES);
                return NULL;
        }
        if (s->n_entries == s->cap_entries) {
                size_t cap = s->cap_entries ? s->cap_entries * 2 : 256;
                struct entry *e = realloc(s->entries, cap * sizeof(*e));
                if (!e) {
                        nomem(err);
                        return NULL;
                }
                s->entries = e;
                s->cap_entries = cap;
        }
        struct entry *e = &s->entries[s->n_entries];
        memset(e, 0, sizeof(*e));
        e->path = strdup(path);
        if (!e->path) {
                nomem(err);
                return NULL;
        }
        e->kind = kind;
        s->n_entries++;
        return e;
}

static int by_path(const void *a, const void *b) {
        return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static int put_u32(struct glove_digest_sha256 *h, uint32_t v, struct glove_error *err) {
        uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
        return glove_digest_sha256_update(h, b, 4, err);
}

static int put_str(struct glove_digest_sha256 *h, const char *s, struct glove_error *err) {
        size_t n = strlen(s);
        int r = put_u32(h, (uint32_t)n, err);
        return r < 0 ? r : glove_digest_sha256_update(h, s, n, err);
}

/* staged_closure_digest (docs/digests.md). */
static int manifest_digest(struct stage *s, struct glove_error *err) {
        qsort(s->entries, s->n_entries, sizeof(s->entries[0]), by_path);
        struct glove_digest_sha256 *h _cleanup_digest_sha256_ = NULL;
        int r = glove_digest_sha256_init(&h, err);
        uint8_t version = STAGE_DIGEST_VERSION;
        if (r >= 0)
                r = put_str(h, STAGE_DIGEST_DOMAIN, err);
        if (r >= 0)
                r = glove_digest_sha256_update(h, &version, 1, err);
        if (r >= 0)
                r = put_u32(h, (uint32_t)s->n_entries, err);
        for (size_t i = 0; r >= 0 && i < s->n_entries; i++) {
                const struct entry *e = &s->entries[i];
                uint8_t k = (uint8_t)e->kind;
                r = put_str(h, e->path, err);
                if (r >= 0)
                        r = glove_digest_sha256_update(h, &k, 1, err);
                if (r >= 0)
                        r = put_u32(h, e->mode, err);
                if (r >= 0 && e->kind == K_FILE) {
                        uint8_t b[8];
                        for (int j = 0; j < 8; j++)
                                b[j] = (uint8_t)(e->size >> (56 - 8 * j));
                        r = glove_digest_sha256_update(h, b, 8, err);
                        if (r >= 0)
                                r = glove_digest_sha256_update(h, e->sha, sizeof(e->sha), err);
                }
                if (r >= 0 && e->kind == K_LINK)
                        r = put_str(h, e->target, err);
        }
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        if (r >= 0)
                r = glove_digest_sha256_final(h, md, err);
        if (r >= 0)
                r = glove_digest_hex_encode(md, sizeof(md), s->digest, sizeof(s->digest));
        return r;
}

/* ---- the closure ---- */

static char *join(const char *a, const char *b) {
        char *out = NULL;
        if (!b[0])
                return strdup(a);
        if (!a[0])
                return strdup(b);
        return asprintf(&out, "%s/%s", strcmp(a, "/") == 0 ? "" : a, b) < 0 ? NULL : out;
}

static bool npm_name_ok(const char *n) {
        const char *p = n;
        size_t len = strlen(n);
        if (len == 0 || len > 214)
                return false;
        if (*p == '@') {
                const char *slash = strchr(p, '/');
                if (!slash || slash == p + 1 || strchr(slash + 1, '/') || !slash[1])
                        return false;
        } else if (strchr(p, '/'))
                return false;
        for (; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      strchr("@/._~-", *p)))
                        return false;
        /* no component "." or ".." or starting with "." */
        const char *c = n[0] == '@' ? strchr(n, '/') + 1 : n;
        return c[0] != '.' && n[n[0] == '@'] != '.';
}

/* package.json of directory dir (absolute), parsed; NULL with err set. */
static json_t *read_package_json(const char *dir, struct glove_error *err) {
        _cleanup_free_ char *p = join(dir, "package.json");
        if (!p) {
                nomem(err);
                return NULL;
        }
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = glove_file_read_bounded(AT_FDCWD, p, O_NOFOLLOW | O_NONBLOCK, STAGE_MAX_PACKAGE_JSON, &buf, &len,
                                        err);
        if (r < 0)
                return NULL;
        json_error_t je;
        json_t *j = json_loadb(buf, len, 0, &je);
        if (!j) {
                size_t line, col;
                glove_json_line_column(buf, len, je.position > 0 ? (size_t)je.position - 1 : 0, &line, &col);
                glove_error_set(err, EINVAL, "stage.unsupported", "%s: invalid JSON at line %zu, column %zu: %s",
                                host_shown(p), line, col, host_shown(je.text));
                return NULL;
        }
        if (!json_is_object(j)) {
                json_decref(j);
                glove_error_set(err, EINVAL, "stage.unsupported", "%s: not a JSON object", host_shown(p));
                return NULL;
        }
        return j;
}

static bool exists_dir(const char *p) {
        struct stat st;
        return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists_any(const char *p) {
        struct stat st;
        return lstat(p, &st) == 0;
}

static int add_package(struct stage *s, const char *abs, struct glove_error *err) {
        const char *rel = abs + strlen(s->root);
        while (*rel == '/')
                rel++;
        for (size_t i = 0; i < s->n_pkgs; i++)
                if (strcmp(s->pkgs[i], rel) == 0)
                        return 0;
        if (s->n_pkgs == STAGE_MAX_PACKAGES)
                return glove_error_set(err, EFBIG, "stage.too_large", "more than %d packages in the closure",
                                       STAGE_MAX_PACKAGES);
        const char *which;
        if (policy_harness_home_overlap(abs, &which))
                return glove_error_set(err, EPERM, "stage.harness_home", "%s overlaps the harness home %s", abs,
                                       which);
        s->pkgs[s->n_pkgs] = strdup(rel);
        if (!s->pkgs[s->n_pkgs])
                return nomem(err);
        s->n_pkgs++;
        return 1;
}

/* Resolves dependency name (version spec spec, may be NULL) from package
 * dir q as node does, beneath root. */
static int resolve_dep(struct stage *s, const char *q, const char *name, const char *spec, bool optional,
                       struct glove_error *err) {
        if (!npm_name_ok(name))
                return glove_error_set(err, EINVAL, "stage.unsupported", "%s: dependency name \"%s\" is not an npm "
                                                                         "package name", q, name);
        _cleanup_free_ char *x = strdup(q);
        if (!x)
                return nomem(err);
        for (;;) {
                const char *base = strrchr(x, '/');
                if (strcmp(base ? base + 1 : x, "node_modules") != 0) {
                        _cleanup_free_ char *nm = join(x, "node_modules");
                        _cleanup_free_ char *c = nm ? join(nm, name) : NULL;
                        if (!c)
                                return nomem(err);
                        if (exists_any(c)) {
                                if (!glove_path_is_beneath(c, s->root) || strcmp(c, s->root) == 0)
                                        return glove_error_set(err, EINVAL, "stage.not_single_root",
                                                               "dependency %s of %s resolves to %s, outside the "
                                                               "closure root %s: not a single-root closure",
                                                               name, q, c, s->root);
                                if (!exists_dir(c))
                                        return glove_error_set(err, EINVAL, "stage.unsupported",
                                                               "dependency %s of %s: %s is not a directory (a "
                                                               "linked package is not supported)", name, q, c);
                                return add_package(s, c, err);
                        }
                }
                if (strcmp(x, "/") == 0 || !glove_path_is_beneath(x, s->root))
                        break;
                char *slash = strrchr(x, '/');
                if (slash == x)
                        x[1] = '\0';
                else
                        *slash = '\0';
        }
        if (optional) {
                s->optional_missing++;
                /* A platform package built for this host: the package
                 * loads it at run time (codex its native binary). */
                if (policy_npm_dep_for_host(name, spec)) {
                        size_t used = strlen(s->host_missing);
                        const char *of = q + strlen(s->root);
                        while (*of == '/')
                                of++;
                        if (used + 1 < sizeof(s->host_missing))
                                snprintf(s->host_missing + used, sizeof(s->host_missing) - used, "%s%s (of %s)",
                                         used ? ", " : "", name, of[0] ? of : s->top);
                        s->n_host_missing++;
                }
                return 0;
        }
        return glove_error_set(err, ENOENT, "stage.not_single_root",
                               "dependency %s of %s is not installed beneath %s", name, q, s->root);
}

static int walk_dependencies(struct stage *s, struct glove_error *err) {
        for (size_t i = 0; i < s->n_pkgs; i++) {
                _cleanup_free_ char *q = join(s->root, s->pkgs[i]);
                if (!q)
                        return nomem(err);
                _cleanup_json_ json_t *pj = read_package_json(q, err);
                if (!pj)
                        return -EINVAL;
                static const char *const keys[] = { "dependencies", "optionalDependencies" };
                for (size_t k = 0; k < 2; k++) {
                        json_t *deps = json_object_get(pj, keys[k]);
                        if (deps && !json_is_object(deps))
                                return glove_error_set(err, EINVAL, "stage.unsupported", "%s/package.json: %s is "
                                                                                         "not an object", q, keys[k]);
                        const char *name;
                        json_t *v;
                        json_object_foreach(deps, name, v) {
                                int r = resolve_dep(s, q, name, json_string_value(v), k == 1, err);
                                if (r < 0)
                                        return r;
                        }
                }
        }
        if (s->n_host_missing)
                return glove_error_set(err, ENOENT, "stage.optional_missing",
                                       "optional dependencies built for this host (%s), which the package loads at run "
                                       "time, are not installed beneath %s: %s; the staged closure could not run: "
                                       "install what is missing there (npm installs a package's platform packages "
                                       "with it) or stage from a tree that has them",
                                       policy_npm_host_platform(), host_shown(s->root), host_shown(s->host_missing));
        return 0;
}

/* The package directory holding file f: the nearest ancestor with a
 * package.json, or NULL. */
static char *package_of(const char *f) {
        _cleanup_free_ char *x = strdup(f);
        while (x && strcmp(x, "/") != 0) {
                char *slash = strrchr(x, '/');
                if (slash == x)
                        x[1] = '\0';
                else
                        *slash = '\0';
                _cleanup_free_ char *pj = join(x, "package.json");
                if (pj && exists_any(pj))
                        return TAKE_PTR(x);
        }
        return NULL;
}

static int find_npm(struct stage *s, struct glove_error *err) {
        _cleanup_json_ json_t *pj = read_package_json(s->package, err);
        if (!pj)
                return -EINVAL;
        const char *name = json_string_value(json_object_get(pj, "name"));
        const char *version = json_string_value(json_object_get(pj, "version"));
        s->name = strdup(name ? name : "");
        s->version = strdup(version ? version : "");
        json_t *bin = json_object_get(pj, "bin");
        const char *entry = NULL;
        if (json_is_object(bin))
                entry = json_string_value(json_object_get(bin, s->adapter->executable));
        else if (json_is_string(bin) && name) {
                const char *last = strrchr(name, '/');
                if (strcmp(last ? last + 1 : name, s->adapter->executable) == 0)
                        entry = json_string_value(bin);
        }
        if (!entry || !entry[0])
                return glove_error_set(err, EINVAL, "stage.no_entry_point",
                                       "%s/package.json has no bin entry named %s (the %s adapter's executable)",
                                       s->package, s->adapter->executable, s->adapter->runtime_id);
        _cleanup_free_ char *e = NULL;
        if (glove_path_normalize(entry, s->package, &e, err) < 0)
                return -EINVAL;
        if (!glove_path_is_beneath(e, s->package) || strcmp(e, s->package) == 0)
                return glove_error_set(err, EINVAL, "stage.no_entry_point", "%s: bin entry %s leaves the package",
                                       s->package, entry);
        struct stat st;
        if (lstat(e, &st) < 0 || !S_ISREG(st.st_mode))
                return glove_error_set(err, EINVAL, "stage.no_entry_point", "%s: the entry point %s is not a regular "
                                                                            "file", s->package, e);
        /* The root: the node_modules directory holding the package. */
        _cleanup_free_ char *parent = strdup(s->package);
        if (!parent)
                return nomem(err);
        *strrchr(parent, '/') = '\0';
        const char *pb = strrchr(parent, '/');
        if (pb && pb[1] == '@') {
                _cleanup_free_ char *pp = strndup(parent, (size_t)(pb - parent));
                if (!pp)
                        return nomem(err);
                free(parent);
                parent = TAKE_PTR(pp);
        }
        const char *nb = strrchr(parent, '/');
        s->root = strcmp(nb ? nb + 1 : "", "node_modules") == 0 ? TAKE_PTR(parent) : strdup(s->package);
        if (!s->root || !s->name || !s->version)
                return nomem(err);
        const char *which;
        if (policy_harness_home_overlap(s->root, &which))
                return glove_error_set(err, EPERM, "stage.harness_home", "the closure root %s overlaps the harness "
                                                                         "home %s: glove never reads or copies one",
                                       s->root, which);
        const char *tb = strrchr(s->root, '/');
        s->top = strdup(tb[1] ? tb + 1 : "root");
        if (!s->top)
                return nomem(err);
        /* entry relative to the snapshot: TOP/<e beneath root> */
        const char *er = e + strlen(s->root);
        if (asprintf(&s->entry_rel, "%s%s", s->top, er) < 0)
                return nomem(err);
        int r = add_package(s, s->package, err);
        return r < 0 ? r : walk_dependencies(s, err);
}

static int find_closure(struct stage *s, struct glove_error *err) {
        /* A relative --source is taken from the working directory. */
        s->src = realpath(s->source, NULL);
        if (!s->src)
                return glove_error_set(err, errno, "stage.source", "--source %s: %s", s->source, strerror(errno));
        const char *which;
        if (policy_harness_home_overlap(s->src, &which))
                return glove_error_set(err, EPERM, "stage.harness_home",
                                       "--source %s is in (or holds) the harness home %s: glove never reads or copies "
                                       "a harness home", s->src, which);
        struct stat st;
        if (stat(s->src, &st) < 0)
                return glove_error_set(err, errno, "stage.source", "%s: %s", s->src, strerror(errno));
        if (S_ISDIR(st.st_mode)) {
                _cleanup_free_ char *pj = join(s->src, "package.json");
                if (!pj)
                        return nomem(err);
                if (!exists_any(pj))
                        return glove_error_set(err, EINVAL, "stage.unsupported",
                                               "%s is a directory without package.json: only an npm package "
                                               "directory or one executable file can be staged", s->src);
                s->package = strdup(s->src);
        } else if (S_ISREG(st.st_mode)) {
                s->package = package_of(s->src);
        } else
                return glove_error_set(err, EINVAL, "stage.unsupported", "%s is neither a directory nor a regular "
                                                                         "file", s->src);
        if (s->package) {
                s->kind = "npm";
                return find_npm(s, err);
        }
        /* One executable file. */
        if (!(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
                return glove_error_set(err, EINVAL, "stage.unsupported", "%s is not executable", s->src);
        s->kind = "file";
        s->root = strdup(s->src);
        s->top = strdup(strrchr(s->src, '/') + 1);
        s->entry_rel = strdup(s->top);
        s->name = strdup(s->top);
        s->version = strdup("");
        if (!s->root || !s->top || !s->entry_rel || !s->name || !s->version)
                return nomem(err);
        return 0;
}

/* ---- the copy ---- */

/* Writes or (dry run) only hashes regular file fd into dst/name. */
static int copy_file(struct stage *s, int fd, const struct stat *st, int dst, const char *name, const char *rel,
                     struct entry *e, struct glove_error *err) {
        e->mode = (st->st_mode & 0111) ? 0755 : 0644;
        _cleanup_close_ int out = -1;
        if (dst >= 0) {
                out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, e->mode);
                if (out < 0)
                        return glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
        }
        struct glove_digest_sha256 *h _cleanup_digest_sha256_ = NULL;
        int r = glove_digest_sha256_init(&h, err);
        if (r < 0)
                return r;
        char buf[65536];
        uint64_t total = 0;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
                if (n == 0)
                        break;
                total += (uint64_t)n;
                if (s->bytes + total > STAGE_MAX_BYTES)
                        return glove_error_set(err, EFBIG, "stage.too_large", "the closure is over %llu bytes",
                                               (unsigned long long)STAGE_MAX_BYTES);
                r = glove_digest_sha256_update(h, buf, (size_t)n, err);
                if (r >= 0 && out >= 0 && glove_fd_write_all(out, buf, (size_t)n) < 0)
                        r = glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
                if (r < 0)
                        return r;
        }
        if (out >= 0 && fchmod(out, e->mode) < 0)
                return glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
        e->size = total;
        s->bytes += total;
        s->files++;
        return glove_digest_sha256_final(h, e->sha, err);
}

/* Is link target t (at snapshot path rel) inside a copied package? */
static bool link_stays_inside(const struct stage *s, const char *rel, const char *t) {
        if (t[0] == '/' || !t[0])
                return false;
        /* Resolve lexically against "/" + dirname(rel). */
        char base[PATH_MAX];
        if ((size_t)snprintf(base, sizeof(base), "/%s", rel) >= sizeof(base))
                return false;
        *strrchr(base, '/') = '\0';
        _cleanup_free_ char *n = NULL;
        if (glove_path_normalize(t, base[0] ? base : "/", &n, NULL) < 0)
                return false;
        for (size_t i = 0; i < s->n_pkgs; i++) {
                char pkg[PATH_MAX];
                snprintf(pkg, sizeof(pkg), "/%s%s%s", s->top, s->pkgs[i][0] ? "/" : "", s->pkgs[i]);
                if (glove_path_is_beneath(n, pkg))
                        return true;
        }
        return false;
}

static int copy_tree(struct stage *s, int src, int dst, const char *rel, int depth, struct glove_error *err);

static int copy_child(struct stage *s, int src, int dst, const char *name, const char *rel, int depth,
                      struct glove_error *err) {
        struct stat st;
        if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
        if (S_ISLNK(st.st_mode)) {
                char t[PATH_MAX];
                ssize_t n = readlinkat(src, name, t, sizeof(t) - 1);
                if (n < 0)
                        return glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
                t[n] = '\0';
                if (!link_stays_inside(s, rel, t))
                        return glove_error_set(err, EXDEV, "stage.link_outside",
                                               "%s is a symbolic link to %s, outside the copied packages: refused "
                                               "(links are copied only when they stay inside)", rel, t);
                struct entry *e = add_entry(s, rel, K_LINK, err);
                if (!e || !(e->target = strdup(t)))
                        return e ? nomem(err) : -EFBIG;
                e->mode = 0777;
                s->links++;
                if (dst >= 0 && symlinkat(t, dst, name) < 0)
                        return glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
                return 0;
        }
        if (S_ISDIR(st.st_mode)) {
                if (depth >= STAGE_MAX_DEPTH)
                        return glove_error_set(err, EFBIG, "stage.too_large", "%s: deeper than %d directories", rel,
                                               STAGE_MAX_DEPTH);
                _cleanup_close_ int sfd = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sfd < 0)
                        return glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
                _cleanup_close_ int dfd = -1;
                if (dst >= 0) {
                        if (mkdirat(dst, name, 0755) < 0 && errno != EEXIST)
                                return glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
                        dfd = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (dfd < 0)
                                return glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
                }
                return copy_tree(s, sfd, dfd, rel, depth + 1, err);
        }
        if (!S_ISREG(st.st_mode))
                return glove_error_set(err, EINVAL, "stage.unsupported", "%s is not a regular file, directory or "
                                                                         "link", rel);
        _cleanup_close_ int fd = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat fst;
        if (fd < 0 || fstat(fd, &fst) < 0)
                return glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
        if (!S_ISREG(fst.st_mode) || fst.st_ino != st.st_ino || fst.st_dev != st.st_dev)
                return glove_error_set(err, EAGAIN, "stage.changed", "%s changed while it was copied", rel);
        struct entry *e = add_entry(s, rel, K_FILE, err);
        if (!e)
                return -EFBIG;
        return copy_file(s, fd, &fst, dst, name, rel, e, err);
}

/* Adds the directory entry for rel and copies every child of src. */
static int copy_tree(struct stage *s, int src, int dst, const char *rel, int depth, struct glove_error *err) {
        struct entry *e = add_entry(s, rel, K_DIR, err);
        if (!e)
                return -EFBIG;
        e->mode = 0755;
        s->dirs++;
        int dfd = fcntl(src, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
        }
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                char child[PATH_MAX];
                if ((size_t)snprintf(child, sizeof(child), "%s/%s", rel, de->d_name) >= sizeof(child)) {
                        r = glove_error_set(err, ENAMETOOLONG, "stage.too_large", "%s/%s: path too long", rel,
                                            de->d_name);
                        break;
                }
                r = copy_child(s, src, dst, de->d_name, child, depth, err);
        }
        if (r >= 0 && errno)
                r = glove_error_set(err, errno, "stage.read", "%s: %s", rel, strerror(errno));
        closedir(d);
        return r;
}

/* Opens component path rel (from dirfd) without following links, as a
 * directory. */
static int open_dir_nofollow(int dirfd, const char *rel, struct glove_error *err) {
        int fd = -1;
        int r = glove_fd_open_beneath(dirfd, rel, O_RDONLY | O_DIRECTORY, &fd, err);
        return r < 0 ? r : fd;
}

/* mkdir -p of the intermediate directories of package rel below the
 * snapshot's top, adding each to the manifest once. */
static int make_parents(struct stage *s, int dst_top, const char *pkg, struct glove_error *err) {
        char buf[PATH_MAX];
        snprintf(buf, sizeof(buf), "%s", pkg);
        for (char *p = buf; (p = strchr(p, '/')); p++) {
                *p = '\0';
                char rel[PATH_MAX];
                if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", s->top, buf) >= sizeof(rel))
                        return glove_error_set(err, ENAMETOOLONG, "stage.too_large", "%s: path too long", buf);
                bool seen = false;
                for (size_t i = 0; i < s->n_entries && !seen; i++)
                        seen = s->entries[i].kind == K_DIR && strcmp(s->entries[i].path, rel) == 0;
                if (!seen) {
                        struct entry *e = add_entry(s, rel, K_DIR, err);
                        if (!e)
                                return -EFBIG;
                        e->mode = 0755;
                        s->dirs++;
                        if (dst_top >= 0 && mkdirat(dst_top, buf, 0755) < 0 && errno != EEXIST)
                                return glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
                }
                *p = '/';
        }
        return 0;
}

static int by_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int copy_closure(struct stage *s, struct glove_error *err) {
        int dst = s->tmp_fd;
        if (strcmp(s->kind, "file") == 0) {
                _cleanup_close_ int fd = -1;
                int r = glove_fd_open_nofollow(s->root, O_RDONLY | O_NONBLOCK | O_NOCTTY, &fd, err);
                struct stat st;
                if (r < 0)
                        return r;
                if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                        return glove_error_set(err, EINVAL, "stage.changed", "%s changed", s->root);
                struct entry *e = add_entry(s, s->top, K_FILE, err);
                return e ? copy_file(s, fd, &st, dst, s->top, s->top, e, err) : -EFBIG;
        }
        _cleanup_close_ int root_fd = -1;
        int r = glove_fd_open_nofollow(s->root, O_RDONLY | O_DIRECTORY, &root_fd, err);
        if (r < 0)
                return r;
        /* The snapshot's top directory. */
        struct entry *e = add_entry(s, s->top, K_DIR, err);
        if (!e)
                return -EFBIG;
        e->mode = 0755;
        s->dirs++;
        _cleanup_close_ int top = -1;
        if (dst >= 0) {
                if (mkdirat(dst, s->top, 0755) < 0)
                        return glove_error_set(err, errno, "stage.write", "%s: %s", s->top, strerror(errno));
                top = openat(dst, s->top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (top < 0)
                        return glove_error_set(err, errno, "stage.write", "%s: %s", s->top, strerror(errno));
        }
        /* Packages beneath another copied package are copied with it. */
        qsort(s->pkgs, s->n_pkgs, sizeof(s->pkgs[0]), by_str);
        for (size_t i = 0; i < s->n_pkgs; i++) {
                bool nested = false;
                for (size_t k = 0; k < s->n_pkgs && !nested; k++) {
                        if (k == i)
                                continue;
                        size_t lk = strlen(s->pkgs[k]);
                        nested = lk == 0 || (strncmp(s->pkgs[i], s->pkgs[k], lk) == 0 && s->pkgs[i][lk] == '/');
                }
                if (nested)
                        continue;
                if (s->pkgs[i][0] == '\0') { /* the root is the package */
                        e->kind = K_DIR;
                        s->dirs--;
                        s->n_entries--;
                        free(s->entries[s->n_entries].path);
                        r = copy_tree(s, root_fd, top, s->top, 1, err);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = make_parents(s, top, s->pkgs[i], err);
                if (r < 0)
                        return r;
                _cleanup_close_ int sfd = open_dir_nofollow(root_fd, s->pkgs[i], err);
                if (sfd < 0)
                        return sfd;
                _cleanup_close_ int dfd = -1;
                char rel[PATH_MAX];
                snprintf(rel, sizeof(rel), "%s/%s", s->top, s->pkgs[i]);
                if (top >= 0) {
                        if (mkdirat(top, s->pkgs[i], 0755) < 0)
                                return glove_error_set(err, errno, "stage.write", "%s: %s", rel, strerror(errno));
                        dfd = open_dir_nofollow(top, s->pkgs[i], err);
                        if (dfd < 0)
                                return dfd;
                }
                r = copy_tree(s, sfd, dfd, rel, 1, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the protected directory ---- */

static int check_directory(struct stage *s, struct glove_error *err) {
        const char *d = s->directory;
        _cleanup_free_ char *n = NULL;
        if (d[0] != '/' || glove_path_normalize(d, NULL, &n, err) < 0 || strcmp(n, d) != 0 || strcmp(d, "/") == 0)
                return glove_error_set(err, EINVAL, "stage.directory",
                                       "--directory %s must be an absolute, normalized path other than /", d);
        const char *which;
        if (policy_harness_home_overlap(d, &which))
                return glove_error_set(err, EPERM, "stage.harness_home", "--directory %s overlaps the harness home %s",
                                       d, which);
        if (glove_path_is_beneath(d, s->root) || glove_path_is_beneath(s->root, d))
                return glove_error_set(err, EINVAL, "stage.directory", "--directory %s overlaps the closure root %s",
                                       d, s->root);
        char why[GLOVE_ERROR_MESSAGE_MAX] = "";
        _cleanup_close_ int pfd = -1;
        struct stat st;
        struct stat dst;
        s->dir_missing = lstat(d, &dst) < 0 && errno == ENOENT;
        if (s->dir_missing) {
                /* The parent must pass the rule; DIR is made 0700 below. */
                _cleanup_free_ char *parent = strdup(d);
                if (!parent)
                        return nomem(err);
                char *slash = strrchr(parent, '/');
                slash == parent ? (void)(parent[1] = '\0') : (void)(*slash = '\0');
                if (glove_supervisor_trust_walk(parent, GLOVE_SUPERVISOR_TRUST_SEARCH_DIR, s->uid, &pfd, &st, why,
                                                sizeof(why)) < 0)
                        return glove_error_set(err, EACCES, "stage.directory_untrusted",
                                               "--directory %s: its parent %s fails the discovery trust rule: %s", d,
                                               parent, why);
                if (s->dry_run)
                        return 0;
                int r = glove_store_dir_open_private(d, s->uid, true, &s->dir_fd, err);
                if (r < 0)
                        return r;
        } else {
                int r = glove_store_dir_open_private(d, s->uid, false, &s->dir_fd, err);
                if (r < 0)
                        return r;
        }
        _cleanup_close_ int wfd = -1;
        if (glove_supervisor_trust_walk(d, GLOVE_SUPERVISOR_TRUST_SEARCH_DIR, s->uid, &wfd, &st, why, sizeof(why)) <
            0)
                return glove_error_set(err, EACCES, "stage.directory_untrusted",
                                       "--directory %s fails the discovery trust rule: %s", d, why);
        struct stat ost;
        if (fstat(s->dir_fd, &ost) < 0 || ost.st_dev != st.st_dev || ost.st_ino != st.st_ino)
                return glove_error_set(err, EAGAIN, "stage.changed", "--directory %s changed while it was checked", d);
        return 0;
}

static int entry_point_free(struct stage *s, struct glove_error *err) {
        struct stat st;
        if (s->dir_fd >= 0 && fstatat(s->dir_fd, s->adapter->executable, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return glove_error_set(err, EEXIST, "stage.entry_exists",
                                       "%s/%s exists already: glove policy stage never replaces an entry point (remove "
                                       "it yourself, or stage into another directory)",
                                       s->directory, s->adapter->executable);
        return 0;
}

/* Removes tree name below dirfd (no link followed). */
static void remove_tree(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                unlinkat(dirfd, name, 0);
                return;
        }
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        if (unlinkat(fd, de->d_name, 0) < 0)
                                remove_tree(fd, de->d_name);
        closedir(d);
        unlinkat(dirfd, name, AT_REMOVEDIR);
}

static int commit(struct stage *s, struct glove_error *err) {
        int r;
        if (mkdirat(s->dir_fd, STAGE_CLOSURES, 0755) < 0 && errno != EEXIST)
                return glove_error_set(err, errno, "stage.write", "%s/%s: %s", s->directory, STAGE_CLOSURES,
                                       strerror(errno));
        _cleanup_close_ int cfd = openat(s->dir_fd, STAGE_CLOSURES, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (cfd < 0 || fstat(cfd, &st) < 0 || st.st_uid != s->uid || (st.st_mode & 022))
                return glove_error_set(err, EPERM, "stage.directory_untrusted",
                                       "%s/%s must be a directory of yours writable by neither group nor others",
                                       s->directory, STAGE_CLOSURES);
        if (fchmod(s->tmp_fd, 0755) < 0 || renameat(s->dir_fd, s->tmp_name, cfd, s->digest) < 0) {
                r = errno;
                return glove_error_set(err, r, r == EEXIST || r == ENOTEMPTY ? "stage.exists" : "stage.write",
                                       "%s/%s/%s: %s", s->directory, STAGE_CLOSURES, s->digest,
                                       r == EEXIST || r == ENOTEMPTY ? "this closure is staged already" : strerror(r));
        }
        s->tmp_name[0] = '\0';
        char target[PATH_MAX];
        snprintf(target, sizeof(target), "%s/%s/%s", STAGE_CLOSURES, s->digest, s->entry_rel);
        if (symlinkat(target, s->dir_fd, s->adapter->executable) < 0)
                return glove_error_set(err, errno, errno == EEXIST ? "stage.entry_exists" : "stage.write",
                                       "%s/%s: %s", s->directory, s->adapter->executable, strerror(errno));
        if (syncfs(s->dir_fd) < 0)
                return glove_error_set(err, errno, "stage.write", "%s: syncfs: %s", s->directory, strerror(errno));
        return 0;
}

static int run_stage(struct stage *s, struct glove_error *err) {
        int r = find_closure(s, err);
        if (r >= 0)
                r = check_directory(s, err);
        if (r >= 0)
                r = entry_point_free(s, err);
        if (r < 0)
                return r;
        if (!s->dry_run) {
                uint8_t rnd[8];
                r = glove_digest_random(rnd, sizeof(rnd), err);
                if (r < 0)
                        return r;
                char hex[17];
                glove_digest_hex_encode(rnd, sizeof(rnd), hex, sizeof(hex));
                snprintf(s->tmp_name, sizeof(s->tmp_name), ".stage-%s.tmp", hex);
                if (mkdirat(s->dir_fd, s->tmp_name, 0700) < 0)
                        return glove_error_set(err, errno, "stage.write", "%s/%s: %s", s->directory, s->tmp_name,
                                               strerror(errno));
                s->tmp_fd = openat(s->dir_fd, s->tmp_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (s->tmp_fd < 0)
                        r = glove_error_set(err, errno, "stage.write", "%s: %s", s->tmp_name, strerror(errno));
        }
        if (r >= 0)
                r = copy_closure(s, err);
        if (r >= 0)
                r = manifest_digest(s, err);
        if (r >= 0 && !s->dry_run)
                r = commit(s, err);
        if (s->tmp_name[0] && s->dir_fd >= 0)
                remove_tree(s->dir_fd, s->tmp_name);
        return r;
}

static void report(const struct stage *s) {
        char closure[PATH_MAX], exe[2 * PATH_MAX], entry[PATH_MAX + NAME_MAX + 2];
        if ((size_t)snprintf(closure, sizeof(closure), "%s/%s/%s", s->directory, STAGE_CLOSURES, s->digest) >=
                    sizeof(closure) ||
            (size_t)snprintf(exe, sizeof(exe), "%s/%s", closure, s->entry_rel) >= sizeof(exe) ||
            (size_t)snprintf(entry, sizeof(entry), "%s/%s", s->directory, s->adapter->executable) >= sizeof(entry))
                return;
        if (s->json) {
                json_t *o = json_pack("{s:b,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s,s:s,s:s,s:s}",
                                      "dry_run", s->dry_run, "runtime_id", s->adapter->runtime_id, "kind", s->kind,
                                      "package", s->name, "version", s->version, "source", s->src, "root", s->root,
                                      "packages", (json_int_t)(s->package ? s->n_pkgs : 0), "optional_missing",
                                      (json_int_t)s->optional_missing, "files", (json_int_t)s->files, "directories",
                                      (json_int_t)s->dirs, "links", (json_int_t)s->links, "bytes",
                                      (json_int_t)s->bytes, "digest", s->digest, "closure", closure, "entry_point",
                                      entry, "executable", exe, "directory", s->directory);
                if (o)
                        json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS);
                fputc('\n', stdout);
                json_decref(o);
                return;
        }
        printf("%s %s %s%s%s from %s\n", s->dry_run ? "would stage" : "staged", s->kind, host_shown(s->name),
               s->version[0] ? "@" : "", host_shown(s->version), host_shown(s->root));
        if (s->package)
                printf("packages: %zu (optional dependencies not installed: %zu, none built for this host, %s)\n",
                       s->n_pkgs, s->optional_missing, policy_npm_host_platform());
        printf("files: %zu, directories: %zu, links: %zu, bytes: %llu\n", s->files, s->dirs, s->links,
               (unsigned long long)s->bytes);
        printf("digest: %s\n", s->digest);
        printf("closure: %s\n", host_shown(closure));
        printf("entry point: %s -> %s/%s/%s\n", host_shown(entry), STAGE_CLOSURES, s->digest, host_shown(s->entry_rel));
        printf("executable: %s\n", host_shown(exe));
        printf("template: --runtime %s --search-path %s --read-only %s\n", s->adapter->runtime_id, host_shown(s->directory),
               host_shown(closure));
}

int policy_stage_main(int argc, char **argv) {
        struct stage s = { .dir_fd = -1, .tmp_fd = -1, .uid = geteuid() };
        const char *runtime = NULL;
        bool yes = false;
        static const struct option longopts[] = {
                { "runtime", required_argument, NULL, 'r' }, { "source", required_argument, NULL, 's' },
                { "directory", required_argument, NULL, 'd' }, { "dry-run", no_argument, NULL, 'n' },
                { "yes", no_argument, NULL, 'y' },           { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },          { 0 },
        };
        opterr = 0;
        optind = 1;
        int opt;
        while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                switch (opt) {
                case 'r': runtime = optarg; break;
                case 's': s.source = optarg; break;
                case 'd': s.directory = optarg; break;
                case 'n': s.dry_run = true; break;
                case 'y': yes = true; break;
                case 'j': s.json = true; break;
                case 'h': fputs(stage_help, stdout); return 0;
                case ':': return policy_usage("stage ", "%s needs a value", argv[optind - 1]);
                default: return policy_usage("stage ", "unknown option \"%s\"", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return policy_usage("stage ", "unexpected argument \"%s\"", argv[optind]);
        if (!runtime || !s.source || !s.directory)
                return policy_usage("stage ", "--runtime, --source and --directory are required");
        if (s.dry_run && yes)
                return policy_usage("stage ", "give --dry-run or --yes, not both");
        if (!s.dry_run && !yes)
                return policy_usage("stage ", "stage copies files into %s: run it with --dry-run to see what it "
                                              "would copy, then with --yes to copy",
                                    s.directory);
        s.adapter = glove_supervisor_adapter_find(runtime);
        if (!s.adapter)
                return policy_usage("stage ", "--runtime %s is not a native adapter (claude-code, codex, copilot, "
                                              "opencode, pi)", runtime);
        umask(0022);
        struct glove_error err = { 0 };
        int r = run_stage(&s, &err);
        if (r >= 0)
                report(&s);
        stage_clear(&s);
        return r < 0 ? policy_refuse(&err) : POLICY_EXIT_OK;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The adapter part of launch preparation (issue 11, part A; prepare.h,
 * "Native adapters and discovery"; docs/session-policy.md, "Native adapters
 * and discovery"): which adapter a template's runtime is, runtime discovery
 * over the template's explicit search directories with the trust rule, and
 * the pinned executable every adapter runtime runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/supervisor/adapter.h"
#include "internal.h"
#include "prepare_internal.h"

/* ---- the trust rule ---- */

/* A reason into why[0..n), cut to fit (the listing is bounded anyway). */
static void setwhy(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setwhy(char *why, size_t n, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(why, n, fmt, ap);
        va_end(ap);
}

/* What a path component is checked as. */
enum trust_role { TRUST_ANCESTOR, TRUST_SEARCH_DIR, TRUST_FILE };

/*
 * The trust test for one object st reached at path (for the reason text):
 * owned by root or the service user, and writable by neither group nor
 * others; a root-owned sticky directory passes as an ANCESTOR only (/tmp).
 * Writes why into why[0..n) and returns false when it fails.
 */
static bool trusted(const struct stat *st, const char *path, enum trust_role role, uid_t service_uid, char *why,
                    size_t n) {
        if (st->st_uid != 0 && st->st_uid != service_uid) {
                setwhy(why, n, "%s is owned by uid %u, neither root nor the service user (uid %u)", path,
                         (unsigned)st->st_uid, (unsigned)service_uid);
                return false;
        }
        if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
                return true;
        if (role == TRUST_ANCESTOR && st->st_uid == 0 && (st->st_mode & S_ISVTX))
                return true;
        setwhy(why, n, "%s is writable by %s (mode %04o)%s", path,
                 (st->st_mode & S_IWOTH) ? ((st->st_mode & S_IWGRP) ? "group and others" : "others") : "group",
                 (unsigned)(st->st_mode & 07777),
                 role == TRUST_SEARCH_DIR && (st->st_mode & S_ISVTX) ? "; sticky is enough only for an ancestor" : "");
        return false;
}

/* why = "WHAT: strerror(errno)"; returns -errno. */
static int fail_errno(char *why, size_t n, const char *what) {
        int e = errno;
        setwhy(why, n, "%s: %s", what, strerror(e));
        return -e;
}

/*
 * Walks absolute, normal path p from "/" one component at a time, never
 * following a symbolic link, checking "/" and every directory on the way as
 * an ancestor and the last component as last (a search directory, or the
 * executable file). On success *out_fd is an O_PATH descriptor of the last
 * component and *out_st its stat. Returns 0, or -errno with the reason in
 * why (-EACCES: the trust rule; -ELOOP: a symbolic link; -ENOENT; -ENOTDIR).
 */
static int trust_walk(const char *p, enum trust_role last, uid_t service_uid, int *out_fd, struct stat *out_st,
                      char *why, size_t n) {
        _cleanup_close_ int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        if (cur < 0 || fstat(cur, &st) < 0)
                return fail_errno(why, n, "/");
        if (!trusted(&st, "/", strcmp(p, "/") == 0 ? last : TRUST_ANCESTOR, service_uid, why, n))
                return -EACCES;
        char sofar[PATH_MAX] = "";
        size_t used = 0;
        const char *s = p;
        while (*s == '/')
                s++;
        while (*s) {
                const char *end = strchrnul(s, '/');
                size_t len = (size_t)(end - s);
                if (len >= NAME_MAX + 1 || used + 1 + len >= sizeof(sofar))
                        return setwhy(why, n, "%s: name too long", p), -ENAMETOOLONG;
                sofar[used++] = '/';
                memcpy(sofar + used, s, len);
                used += len;
                sofar[used] = '\0';
                char comp[NAME_MAX + 1];
                memcpy(comp, s, len);
                comp[len] = '\0';
                while (*end == '/')
                        end++;
                bool is_last = *end == '\0';
                int nfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0) {
                        int e = errno;
                        setwhy(why, n, "%s %s", *end ? sofar : "it", e == ENOENT ? "does not exist" : strerror(e));
                        return -e;
                }
                close(cur);
                cur = nfd;
                if (fstat(cur, &st) < 0)
                        return fail_errno(why, n, sofar);
                if (S_ISLNK(st.st_mode))
                        return setwhy(why, n, "%s is a symbolic link (name the directory it resolves to)",
                                        *end ? sofar : "it"),
                               -ELOOP;
                enum trust_role role = is_last ? last : TRUST_ANCESTOR;
                /* The listing names the path already: the last component
                 * is "it". */
                const char *what = is_last ? "it" : sofar;
                if (role != TRUST_FILE && !S_ISDIR(st.st_mode))
                        return setwhy(why, n, "%s is not a directory", what), -ENOTDIR;
                if (!trusted(&st, what, role, service_uid, why, n))
                        return -EACCES;
                s = end;
        }
        *out_st = st;
        *out_fd = TAKE_FD(cur);
        return 0;
}

/* ---- discovery ---- */

/* The listing of refusals, bounded by the error message size. */
struct listing {
        char text[GLOVE_ERROR_MESSAGE_MAX - 8]; /* room for " ..." */
        size_t len;
        bool cut;
};

static void list_add(struct listing *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void list_add(struct listing *l, const char *fmt, ...) {
        if (l->cut)
                return;
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(l->text + l->len, sizeof(l->text) - l->len, fmt, ap);
        va_end(ap);
        if (w < 0 || (size_t)w >= sizeof(l->text) - l->len) {
                l->cut = true;
                l->text[l->len] = '\0';
                return;
        }
        l->len += (size_t)w;
}

/*
 * Looks for name in search directory dir: the directory and its ancestors
 * must pass the trust rule; the entry (a symbolic link is resolved) must
 * canonicalize to a regular executable file whose own directory chain and
 * itself pass it too. On a match fills *canon (malloc'd) and *st and returns
 * 1; returns 0 with the reason in why when dir gives no usable executable;
 * -ENOMEM.
 */
static int look_in(const char *dir, const char *name, uid_t service_uid, char **canon, struct stat *st, char *why,
                   size_t n) {
        _cleanup_close_ int dfd = -1;
        struct stat dst;
        int r = trust_walk(dir, TRUST_SEARCH_DIR, service_uid, &dfd, &dst, why, n);
        if (r < 0)
                return 0;
        struct stat est;
        if (fstatat(dfd, name, &est, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        setwhy(why, n, "no %s there", name);
                else
                        setwhy(why, n, "%s: %s", name, strerror(errno));
                return 0;
        }
        char entry[PATH_MAX];
        if ((size_t)snprintf(entry, sizeof(entry), "%s/%s", dir, name) >= sizeof(entry))
                return setwhy(why, n, "%s: path too long", name), 0;
        /* Canonicalize: resolve every link (npm bin entries are links into
         * their package). What was resolved is then walked again without
         * following anything, and it is that walk's file that is pinned. */
        /* Links are followed, but never a magic link (/proc/self/exe,
         * /proc/PID/fd/N): those resolve in gloved's own context, not to a
         * file of the search directory's tree. openat2 with
         * RESOLVE_NO_MAGICLINKS refuses them (ELOOP); its file must then be
         * the one realpath names. */
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS };
        _cleanup_close_ int nfd = (int)syscall(SYS_openat2, AT_FDCWD, entry, &how, sizeof(how));
        if (nfd < 0 && errno == ELOOP) {
                setwhy(why, n, "%s resolves through a magic link (/proc/...), which is never followed", name);
                return 0;
        }
        if (nfd < 0 && errno != ENOSYS) {
                setwhy(why, n, "%s does not resolve: %s", name, strerror(errno));
                return 0;
        }
        _cleanup_free_ char *c = realpath(entry, NULL);
        if (!c) {
                if (errno == ENOMEM)
                        return -ENOMEM;
                setwhy(why, n, "%s does not resolve: %s", name, strerror(errno));
                return 0;
        }
        static const char *const kernel_roots[] = { "/proc", "/sys", "/dev" };
        for (size_t k = 0; k < sizeof(kernel_roots) / sizeof(kernel_roots[0]); k++)
                if (glove_path_is_beneath(c, kernel_roots[k])) {
                        setwhy(why, n, "%s -> %s is beneath %s, which is never an executable's home", name, c,
                               kernel_roots[k]);
                        return 0;
                }
        _cleanup_close_ int ffd = -1;
        char fwhy[GLOVE_ERROR_MESSAGE_MAX];
        r = trust_walk(c, TRUST_FILE, service_uid, &ffd, st, fwhy, sizeof(fwhy));
        bool linked = strcmp(c, entry) != 0;
        if (r < 0) {
                setwhy(why, n, "%s%s%s: %s", name, linked ? " -> " : "", linked ? c : "", fwhy);
                return 0;
        }
        struct stat nst;
        if (nfd >= 0 && (fstat(nfd, &nst) < 0 || nst.st_dev != st->st_dev || nst.st_ino != st->st_ino)) {
                setwhy(why, n, "%s%s%s changed while it was resolved", name, linked ? " -> " : "", linked ? c : "");
                return 0;
        }
        /* The file: by its name, and where it resolved to when that is
         * elsewhere. */
        char shown[GLOVE_ERROR_MESSAGE_MAX];
        setwhy(shown, sizeof(shown), "%s%s%s", name, linked ? " -> " : "", linked ? c : "");
        if (!S_ISREG(st->st_mode)) {
                setwhy(why, n, "%s is not a regular file", shown);
                return 0;
        }
        if (!(st->st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
                setwhy(why, n, "%s is not executable (mode %04o)", shown, (unsigned)(st->st_mode & 07777));
                return 0;
        }
        *canon = TAKE_PTR(c);
        return 1;
}

/*
 * Runtime discovery for template t of adapter a: the first search directory
 * (in policy order) that gives a trusted executable named a->executable.
 * Adds the MK_EXEC mount of the canonical file (pinned, read-only, at its
 * own path) to l and records it as l's executable.
 */
static int discover(struct glove_supervisor_launch *l, const struct sv_template *t,
                    const struct glove_supervisor_adapter *a, struct glove_error *err) {
        const struct glove_supervisor_launch_template *lt = &t->launch;
        struct listing list = { .len = 0 };
        list_add(&list, "%s: runtime_discovery %s found no trusted executable %s:", t->id, lt->runtime_discovery,
                 a->executable);
        for (size_t i = 0; i < lt->n_executable_search_paths; i++) {
                const char *dir = lt->executable_search_paths[i];
                char why[GLOVE_ERROR_MESSAGE_MAX] = "";
                _cleanup_free_ char *canon = NULL;
                struct stat st;
                int r = look_in(dir, a->executable, l->cfg->agent_uid, &canon, &st, why, sizeof(why));
                if (r < 0)
                        return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
                if (r == 0) {
                        list_add(&list, "%s %s: %s", i ? ";" : "", dir, why);
                        continue;
                }
                struct sv_mount *m = sv_launch_mount_new(l, MK_EXEC, canon, err);
                if (!m)
                        return -ENOMEM;
                m->read_only = true;
                /* Re-opened without following links; the identity must be
                 * the one that passed the trust walk. */
                r = sv_launch_resolve(l->cfg, "runtime_discovery", canon, m, err);
                if (r >= 0 && (m->is_dir || m->dev != (uint64_t)st.st_dev || m->ino != (uint64_t)st.st_ino))
                        r = glove_error_set(err, EAGAIN, "launch.discovery_failed",
                                            "%s: runtime_discovery %s: %s changed while it was checked", t->id,
                                            lt->runtime_discovery, canon);
                if (r < 0) {
                        sv_launch_mount_drop_last(l);
                        return r;
                }
                l->exe_path = TAKE_PTR(canon);
                l->exe_dev = m->dev;
                l->exe_ino = m->ino;
                l->exe_discovered = true;
                return 0;
        }
        if (lt->n_executable_search_paths == 0)
                list_add(&list, " no search directories");
        return glove_error_set(err, ENOENT, "launch.discovery_failed", "%s%s", list.text, list.cut ? " ..." : "");
}

/* A pinned adapter executable: bound pinned at its own path like a
 * discovered one (even beneath /usr or a read-only path), so the binding's
 * identity is the file that runs. */
static int pin_executable(struct glove_supervisor_launch *l, const struct sv_template *t, struct glove_error *err) {
        const char *exe = t->launch.executable_path;
        struct sv_mount *m = sv_launch_mount_new(l, MK_EXEC, exe, err);
        if (!m)
                return -ENOMEM;
        m->read_only = true;
        int r = sv_launch_resolve(l->cfg, "executable_path", exe, m, err);
        if (r >= 0 && m->is_dir)
                r = glove_error_set(err, EINVAL, "materialize.file_type", "executable_path: %s is a directory", exe);
        if (r < 0) {
                sv_launch_mount_drop_last(l);
                return r;
        }
        l->exe_path = strdup(exe);
        if (!l->exe_path)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        l->exe_dev = m->dev;
        l->exe_ino = m->ino;
        return 0;
}

int sv_adapter_prepare(struct glove_supervisor_launch *l, const struct sv_template *t, struct glove_error *err) {
        l->adapter = glove_supervisor_adapter_find(t->runtime_id);
        if (!t->has_launch)
                return 0; /* launch_command refuses it */
        const struct glove_supervisor_launch_template *lt = &t->launch;
        bool discovery = lt->runtime_discovery && lt->runtime_discovery[0];
        if (discovery) {
                /* The policy decoder already requires runtime_discovery ==
                 * runtime_id; a template that got here otherwise is refused. */
                if (!l->adapter || strcmp(l->adapter->runtime_id, lt->runtime_discovery) != 0)
                        return glove_error_set(err, EINVAL, "launch.discovery_failed",
                                               "%s: runtime_discovery %s does not name the template's adapter", t->id,
                                               lt->runtime_discovery);
                return discover(l, t, l->adapter, err);
        }
        if (!l->adapter || !lt->executable_path || lt->executable_path[0] != '/')
                return 0;
        return pin_executable(l, t, err);
}

int sv_adapter_environment(struct glove_supervisor_launch *l, struct glove_error *err) {
        if (!l->adapter)
                return 0;
        int r = sv_strv_push(&l->envp, &l->envc, "HOME=" GLOVE_SUPERVISOR_ADAPTER_HOME);
        if (r >= 0 && l->adapter->managed_env)
                r = sv_strv_push(&l->envp, &l->envc, l->adapter->managed_env);
        return r < 0 ? glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory") : 0;
}

json_t *sv_adapter_binding(const struct glove_supervisor_launch *l) {
        const struct glove_supervisor_adapter *a = l->adapter;
        if (!a)
                return NULL;
        json_t *env = json_array();
        if (env && a->managed_env && json_array_append_new(env, json_string(a->managed_env)) < 0) {
                json_decref(env);
                return NULL;
        }
        json_t *exe = l->exe_path ? json_pack("{s:s,s:I,s:I,s:b}", "path", l->exe_path, "dev", (json_int_t)l->exe_dev,
                                              "ino", (json_int_t)l->exe_ino, "discovered", l->exe_discovered)
                                  : json_null();
        if (!env || !exe) {
                json_decref(env);
                json_decref(exe);
                return NULL;
        }
        return json_pack("{s:s,s:s,s:o,s:s,s:o}", "runtime_id", a->runtime_id, "home", GLOVE_SUPERVISOR_ADAPTER_HOME,
                         "managed_environment", env, "skills_dir", a->skills_dir, "executable", exe);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The discovery trust rule (include/glove/supervisor/trust.h;
 * docs/session-policy.md, "Discovery"), shared by runtime discovery
 * (discovery.c) and the host tooling (glove policy detect, stage).
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
#include "glove/base/error.h"
#include "glove/base/path.h"
#include "glove/supervisor/trust.h"

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
enum trust_role {
        TRUST_ANCESTOR = GLOVE_SUPERVISOR_TRUST_ANCESTOR,
        TRUST_SEARCH_DIR = GLOVE_SUPERVISOR_TRUST_SEARCH_DIR,
        TRUST_FILE = GLOVE_SUPERVISOR_TRUST_FILE,
};

/*
 * The trust test for one object st reached at path (for the reason text):
 * owned by root or the service user, and writable by neither group nor
 * others, whatever its role: a sticky bit does not make a directory
 * trusted, not even as an ancestor (/tmp), because another principal can
 * still create entries in it (spec session-policy.md: no ancestor
 * "writable by another principal"). Writes why into why[0..n) and returns
 * false when it fails.
 */
static bool trusted(const struct stat *st, const char *path, uid_t service_uid, char *why, size_t n) {
        if (st->st_uid != 0 && st->st_uid != service_uid) {
                setwhy(why, n, "%s is owned by uid %u, neither root nor the service user (uid %u)", path,
                         (unsigned)st->st_uid, (unsigned)service_uid);
                return false;
        }
        if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
                return true;
        setwhy(why, n, "%s is writable by %s (mode %04o)%s", path,
                 (st->st_mode & S_IWOTH) ? ((st->st_mode & S_IWGRP) ? "group and others" : "others") : "group",
                 (unsigned)(st->st_mode & 07777),
                 (st->st_mode & S_ISVTX) ? "; a sticky bit is not enough: others can still create entries" : "");
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
        if (!trusted(&st, "/", service_uid, why, n))
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
                if (!trusted(&st, what, service_uid, why, n))
                        return -EACCES;
                s = end;
        }
        *out_st = st;
        *out_fd = TAKE_FD(cur);
        return 0;
}


int glove_supervisor_trust_walk(const char *path, enum glove_supervisor_trust_role last, uid_t service_uid,
                                int *out_fd, struct stat *out_st, char *why, size_t why_size) {
        if (!path || path[0] != '/') {
                setwhy(why, why_size, "%s: not an absolute path", path ? path : "(null)");
                return -EINVAL;
        }
        return trust_walk(path, (enum trust_role)last, service_uid, out_fd, out_st, why, why_size);
}

/* See trust.h. */
int glove_supervisor_trust_find(const char *dir, const char *name, uid_t service_uid, char **canon,
                                struct stat *st, char *why, size_t n) {
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
         * /proc/PID/fd/N): those resolve in the caller's own context (gloved's
         * binary, its descriptors), not to a file of the search directory's
         * tree. openat2 with RESOLVE_NO_MAGICLINKS refuses them (ELOOP); its
         * file must then be the one realpath names. */
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS };
        _cleanup_close_ int nfd = (int)syscall(SYS_openat2, AT_FDCWD, entry, &how, sizeof(how));
        if (nfd < 0 && errno == ELOOP) {
                setwhy(why, n, "%s resolves through a magic link (/proc/...), which is never followed", name);
                return 0;
        }
        if (nfd < 0 && errno == ENOSYS) {
                /* Without openat2 a magic link cannot be told from a link:
                 * discovery fails closed (a pinned executable_path works). */
                setwhy(why, n, "%s: this kernel has no openat2, so discovery cannot refuse magic links", name);
                return 0;
        }
        if (nfd < 0) {
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
        if (fstat(nfd, &nst) < 0 || nst.st_dev != st->st_dev || nst.st_ino != st->st_ino) {
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


/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/container/grant.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "glove/base/shown.h"
#include "glove/container/environment.h"
#include "glove/container/region.h"

/* Pseudo filesystems that only the sandbox itself provides, and the
 * directories that hold host services' Unix sockets: a socket in a grant can
 * be connected to whatever the mount's read-only flag says, and the service
 * sees the invoker's uid (0 for a root invoker). */
static const char *const restricted_roots[] = {"/proc", "/sys", "/dev", "/run", "/var/run"};

/* The host's system trees (first path components): programs, libraries,
 * boot files, configuration, root's home, and system state. A writable grant
 * of one, or of anything beneath one, lets the agent change what the host
 * runs and how (a root invoker's agent as host uid 0). "lib*" stands for
 * every first component starting with "lib" (lib, lib32, lib64, libx32).
 * /tmp and /var/tmp are scratch space and stay grantable, and so do
 * /var/home and /var/srv, where ostree systems (Fedora Silverblue, CoreOS)
 * keep what /home and /srv link to. /root is root's
 * home: /root itself and its hidden entries (/root/.ssh, /root/.bashrc,
 * /root/.config, ...: host root's login files and credentials) are system
 * paths, a project directory such as /root/src is not (it is to a root
 * invoker what ~/src is to anyone). */
static const char *const system_trees[] = {"bin", "boot", "etc", "opt", "sbin", "usr", "var"};
static const char *const system_scratch[] = {"/var/tmp", "/var/home", "/var/srv"};

/* Whether the normalized absolute path norm is a system directory or lies
 * beneath one (and not in the scratch exceptions). */
static bool is_system_path(const char *norm) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(system_scratch); i++)
                if (glove_path_is_beneath(norm, system_scratch[i]))
                        return false;
        const char *first = norm + 1;
        size_t n = strcspn(first, "/");
        if (n >= 3 && strncmp(first, "lib", 3) == 0)
                return true;
        if (n == 4 && strncmp(first, "root", 4) == 0)
                return first[4] == '\0' || first[5] == '.';
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(system_trees); i++)
                if (strlen(system_trees[i]) == n && strncmp(first, system_trees[i], n) == 0)
                        return true;
        return false;
}

/* Whether (dev, ino) is one of the system trees' roots reached under another
 * name (a bind mount of /etc elsewhere shares its identity). */
static bool is_system_identity(dev_t dev, ino_t ino) {
        static const char *const roots[] = {"/bin", "/boot", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
                                            "/root", "/sbin", "/usr", "/var"};
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(roots); i++) {
                struct stat st;
                if (stat(roots[i], &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
                        return true;
        }
        return false;
}

/* Whether the directory dirfd holds one of guards' marker entries. */
static const struct glove_grant_marker *holds_marker(const struct glove_grant_guards *guards, int dirfd) {
        for (size_t i = 0; i < guards->n_markers; i++) {
                struct stat st;
                if (fstatat(dirfd, guards->markers[i].name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    (st.st_mode & S_IFMT) == guards->markers[i].type)
                        return &guards->markers[i];
        }
        return NULL;
}

/* Refuses norm when it, or one of its ancestors, is a directory holding a
 * marker: norm itself (when a directory) and each ancestor is looked at, at
 * most one directory per path component. */
static int check_markers(const struct glove_grant_guards *guards, const char *norm, bool is_dir,
                         struct glove_error *err) {
        if (!guards || guards->n_markers == 0)
                return 0;
        char dir[GLOVE_PATH_MAX];
        if (strlen(norm) >= sizeof(dir))
                return glove_error_set(err, ENAMETOOLONG, guards->code, "%s: path longer than %d bytes", norm,
                                       GLOVE_PATH_MAX - 1);
        strcpy(dir, norm);
        if (!is_dir) {
                char *slash = strrchr(dir, '/');
                slash[slash == dir ? 1 : 0] = '\0';
        }
        for (;;) {
                _cleanup_close_ int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                const struct glove_grant_marker *m = fd >= 0 ? holds_marker(guards, fd) : NULL;
                if (m)
                        return glove_error_set(err, EPERM, guards->code,
                                               "%s: %s holds %s, so it is %s; it cannot be granted", norm, dir, m->name,
                                               guards->marker_what ? guards->marker_what : "protected");
                if (strcmp(dir, "/") == 0)
                        return 0;
                char *slash = strrchr(dir, '/');
                slash[slash == dir ? 1 : 0] = '\0';
        }
}

int glove_grant_guards_add(struct glove_grant_guards *guards, const char *path, const char *what,
                           struct glove_error *err) {
        const char *code = guards->code ? guards->code : "grant.guard";
        if (!path || path[0] != '/')
                return glove_error_set(err, EINVAL, code, "a guarded directory must be an absolute path");
        if (guards->count >= GLOVE_GRANT_GUARDS_MAX)
                return glove_error_set(err, E2BIG, code,
                                       "more than %d guarded directories; cannot tell what a grant reaches",
                                       GLOVE_GRANT_GUARDS_MAX);
        if (guards->count == guards->cap) {
                size_t ncap = guards->cap ? guards->cap * 2 : 16;
                struct glove_grant_guard *n = realloc(guards->items, ncap * sizeof(*n));
                if (!n)
                        return glove_error_set(err, ENOMEM, code, "out of memory");
                guards->items = n;
                guards->cap = ncap;
        }
        struct glove_grant_guard *g = &guards->items[guards->count];
        *g = (struct glove_grant_guard){0};
        int r = glove_path_normalize(path, "/", &g->path, err);
        if (r < 0)
                return r;
        if (!(g->what = strdup(what ? what : "a guarded directory"))) {
                free(g->path);
                return glove_error_set(err, ENOMEM, code, "out of memory");
        }
        guards->count++;
        return 0;
}

void glove_grant_guards_free(struct glove_grant_guards *guards) {
        for (size_t i = 0; i < guards->count; i++) {
                free(guards->items[i].path);
                free(guards->items[i].what);
        }
        free(guards->items);
        guards->items = NULL;
        guards->count = guards->cap = 0;
}

/* ---- protected regions ------------------------------------------------ */

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

enum prot_kind {
        PROT_SYSTEM,  /* a system tree: refused for writable grants */
        PROT_HIDDEN,  /* /root: itself and its hidden entries are system */
        PROT_SCRATCH, /* /var/tmp, /var/home, /var/srv: writable within */
        PROT_GUARD,   /* a directory the caller guards: every grant refused */
};

struct prot {
        struct glove_region r;
        enum prot_kind kind;
        char *label;      /* the host path it was found by, owned */
        const char *what; /* PROT_GUARD: how the caller names it, borrowed */
};

struct glove_grant_protected {
        struct glove_mount_table mounts;
        struct prot *items;
        size_t count, cap;
};

static void protected_free(struct glove_grant_protected *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->count; i++) {
                free(p->items[i].r.path);
                free(p->items[i].label);
        }
        free(p->items);
        glove_mount_table_free(&p->mounts);
        free(p);
}

/* Adds the region of the host path label (kind, what). A path no mount
 * holds is skipped (it names nothing). */
static int prot_add(struct glove_grant_protected *p, const char *label, enum prot_kind kind, const char *what,
                    struct glove_error *err) {
        if (p->count == p->cap) {
                size_t ncap = p->cap ? p->cap * 2 : 32;
                struct prot *n = realloc(p->items, ncap * sizeof(*n));
                if (!n)
                        return glove_error_set(err, ENOMEM, "grant.open", "out of memory");
                p->items = n;
                p->cap = ncap;
        }
        struct prot *it = &p->items[p->count];
        struct glove_error rerr = {0};
        int r = glove_mount_table_region(&p->mounts, label, &it->r, &rerr);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                *err = rerr;
                return r;
        }
        it->kind = kind;
        it->what = what;
        it->label = strdup(label);
        if (!it->label) {
                free(it->r.path);
                return glove_error_set(err, ENOMEM, "grant.open", "out of memory");
        }
        p->count++;
        return 0;
}

/* Whether the first path component name is one of system_trees or lib*. */
static bool is_system_tree_name(const char *name) {
        if (strncmp(name, "lib", 3) == 0)
                return true;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(system_trees); i++)
                if (strcmp(name, system_trees[i]) == 0)
                        return true;
        return false;
}

/* The system trees (the entries of / named like system_trees, lib*, and
 * root), each resolved (a /bin that links to usr/bin is /usr/bin's region),
 * and the scratch exceptions. */
static int prot_add_system(struct glove_grant_protected *p, struct glove_error *err) {
        _cleanup_closedir_ DIR *d = opendir("/");
        if (!d)
                return glove_error_set(err, errno, "grant.open", "cannot list /: %s", strerror(errno));
        struct dirent *e;
        size_t seen = 0;
        while ((e = readdir(d))) {
                if (seen++ >= GLOVE_REGION_MOUNTS_MAX)
                        return glove_error_set(err, E2BIG, "grant.open",
                                               "/ has more than %d entries; cannot tell which are system trees",
                                               GLOVE_REGION_MOUNTS_MAX);
                bool root = strcmp(e->d_name, "root") == 0;
                if (!root && !is_system_tree_name(e->d_name))
                        continue;
                char path[GLOVE_PATH_MAX], real[PATH_MAX];
                snprintf(path, sizeof(path), "/%s", e->d_name);
                if (!realpath(path, real))
                        continue;
                struct stat st;
                if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                int r = prot_add(p, real, root ? PROT_HIDDEN : PROT_SYSTEM, NULL, err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(system_scratch); i++) {
                char real[PATH_MAX];
                if (!realpath(system_scratch[i], real))
                        continue;
                int r = prot_add(p, real, PROT_SCRATCH, NULL, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every guarded directory, by its region. */
static int prot_add_guards(struct glove_grant_protected *p, const struct glove_grant_guards *guards,
                           struct glove_error *err) {
        for (size_t i = 0; guards && i < guards->count; i++) {
                int r = prot_add(p, guards->items[i].path, PROT_GUARD, guards->items[i].what, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The protected regions: the mount table, the system trees (system) and
 * guards' directories. */
static int protected_new(const struct glove_grant_guards *guards, bool system, struct glove_grant_protected **out,
                         struct glove_error *err) {
        struct glove_grant_protected *p = calloc(1, sizeof(*p));
        if (!p)
                return glove_error_set(err, ENOMEM, "grant.open", "out of memory");
        int r = glove_mount_table_read(&p->mounts, err);
        if (r >= 0 && system)
                r = prot_add_system(p, err);
        if (r >= 0)
                r = prot_add_guards(p, guards, err);
        if (r < 0) {
                protected_free(p);
                return r;
        }
        *out = p;
        return 0;
}

/* The set's protected regions, computed once. */
static int protected_get(struct glove_grant_set *set, struct glove_grant_protected **out, struct glove_error *err) {
        if (set->protected_regions) {
                *out = set->protected_regions;
                return 0;
        }
        int r = protected_new(set->guards, true, out, err);
        if (r >= 0)
                set->protected_regions = *out;
        return r;
}

/* Whether the grant region g is a system region (or holds one): it holds a
 * system tree, or lies in one and not in a scratch exception (for /root:
 * /root itself or one of its hidden entries). */
static const struct prot *system_conflict(const struct glove_grant_protected *p, const struct glove_region *g) {
        for (size_t i = 0; i < p->count; i++) {
                const struct prot *s = &p->items[i];
                if (s->kind != PROT_SYSTEM && s->kind != PROT_HIDDEN)
                        continue;
                if (glove_region_beneath(&s->r, g))
                        return s;
                if (!glove_region_beneath(g, &s->r))
                        continue;
                if (s->kind == PROT_HIDDEN) {
                        size_t n = strcmp(s->r.path, "/") == 0 ? 0 : strlen(s->r.path);
                        if (g->path[n] == '\0' || (g->path[n] == '/' && g->path[n + 1] == '.'))
                                return s;
                        continue;
                }
                bool scratch = false;
                for (size_t j = 0; j < p->count && !scratch; j++)
                        scratch = p->items[j].kind == PROT_SCRATCH && glove_region_beneath(g, &p->items[j].r);
                if (!scratch)
                        return s;
        }
        return NULL;
}

/* Refuses norm when it is, holds or lies inside a guarded directory by
 * path (the regions are compared by check_regions). */
static int check_guard_paths(const struct glove_grant_guards *guards, const char *norm, struct glove_error *err) {
        for (size_t i = 0; guards && i < guards->count; i++) {
                const struct glove_grant_guard *q = &guards->items[i];
                if (glove_path_is_beneath(norm, q->path) || glove_path_is_beneath(q->path, norm))
                        return glove_error_set(err, EPERM, guards->code, "%s: %s %s (%s); it cannot be granted", norm,
                                               glove_path_is_beneath(norm, q->path) ? "lies inside" : "holds", q->what,
                                               q->path);
        }
        return 0;
}

/* Refuses the grant norm when one of the regions it reaches (its own and
 * every mount at or beneath it) overlaps a protected region: a system tree
 * for a writable grant (write, unless allow_system_write), a guarded
 * directory for every grant. */
static int check_regions(struct glove_grant_protected *p, const struct glove_grant_guards *guards, const char *norm,
                         bool write, struct glove_error *err) {
        struct glove_region *g = NULL;
        size_t n = 0;
        int r = glove_mount_table_grant_regions(&p->mounts, norm, &g, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                const char *through = i == 0 ? "" : " through a mount beneath it";
                for (size_t j = 0; j < p->count && r >= 0; j++) {
                        const struct prot *q = &p->items[j];
                        if (q->kind == PROT_GUARD && glove_region_overlaps(&g[i], &q->r))
                                r = glove_error_set(err, EPERM, guards->code, "%s: reaches%s %s (%s); it cannot be granted",
                                                    norm, through, q->what, q->label);
                }
                if (r < 0 || !write)
                        continue;
                const struct prot *s = system_conflict(p, &g[i]);
                if (s)
                        r = glove_error_set(err, EPERM, "grant.system_directory",
                                            "%s: reaches%s the host's system directory %s (/bin, /boot, /etc, /lib*, "
                                            "/opt, /root, /sbin, /usr, /var, whatever name it is mounted by); the "
                                            "agent could change what the host runs; grant it read-only",
                                            norm, through, s->label);
        }
        glove_regions_free(g, n);
        return r;
}

/* The checks of guards and regions for the grant norm of set. */
static int check_protected(struct glove_grant_set *set, const char *norm, bool is_dir, enum glove_grant_mode mode,
                           struct glove_error *err) {
        int r = check_markers(set->guards, norm, is_dir, err);
        if (r == 0)
                r = check_guard_paths(set->guards, norm, err);
        if (r < 0)
                return r;
        struct glove_grant_protected *p = NULL;
        r = protected_get(set, &p, err);
        if (r < 0)
                return r;
        return check_regions(p, set->guards, norm, mode == GLOVE_GRANT_WRITE && !set->allow_system_write, err);
}

int glove_grant_guards_check(const struct glove_grant_guards *guards, const char *norm, struct glove_error *err) {
        if (!guards)
                return 0;
        struct stat st;
        bool is_dir = stat(norm, &st) == 0 && S_ISDIR(st.st_mode);
        int r = check_markers(guards, norm, is_dir, err);
        if (r == 0)
                r = check_guard_paths(guards, norm, err);
        if (r < 0 || guards->count == 0)
                return r;
        struct glove_grant_protected *p = NULL;
        r = protected_new(guards, false, &p, err);
        if (r < 0)
                return r;
        r = check_regions(p, guards, norm, false, err);
        protected_free(p);
        return r;
}

void glove_grant_set_init(struct glove_grant_set *set) {
        memset(set, 0, sizeof(*set));
}

void glove_grant_set_clear(struct glove_grant_set *set) {
        for (size_t i = 0; i < set->count; i++) {
                free(set->items[i].path);
                glove_closep(&set->items[i].fd);
        }
        set->count = 0;
        protected_free(set->protected_regions);
        set->protected_regions = NULL;
}

const char *glove_grant_mode_name(enum glove_grant_mode mode) {
        return mode == GLOVE_GRANT_WRITE ? "write" : "read";
}

const struct glove_grant *glove_grant_set_workspace(const struct glove_grant_set *set) {
        for (size_t i = 0; i < set->count; i++)
                if (set->items[i].workspace)
                        return &set->items[i];
        return NULL;
}

/* How a grant is named in messages about another path (the front end
 * names the option of the grant being added). */
static const char *grant_name(enum glove_grant_mode mode, bool workspace) {
        if (workspace)
                return "the workspace";
        return mode == GLOVE_GRANT_WRITE ? "the read-write grant" : "the read-only grant";
}

static int check_overlap(struct glove_grant_set *set, const char *norm, enum glove_grant_mode mode, bool workspace,
                         struct glove_error *err, bool *merged) {
        *merged = false;
        for (size_t i = 0; i < set->count; i++) {
                struct glove_grant *g = &set->items[i];
                bool same = strcmp(g->path, norm) == 0;
                bool nested = glove_path_is_beneath(norm, g->path) || glove_path_is_beneath(g->path, norm);
                if (!nested)
                        continue;
                if (g->mode != mode)
                        return glove_error_set(err, EINVAL, "grant.conflict",
                                               "%s overlaps %s %s with a different mode; grant disjoint paths or one mode",
                                               norm, grant_name(g->mode, g->workspace), g->path);
                if (same) {
                        g->workspace = g->workspace || workspace;
                        *merged = true;
                }
        }
        return 0;
}

/* Kernel file systems that are interfaces to the kernel or to other
 * processes rather than storage: a grant on one (say a proc mounted in a
 * chroot) would hand the agent the host's /proc or /sys under another name. */
static const struct {
        unsigned long magic;
        const char *name;
} kernel_filesystems[] = {
        {PROC_SUPER_MAGIC, "proc"},        {SYSFS_MAGIC, "sysfs"},         {CGROUP_SUPER_MAGIC, "cgroup"},
        {CGROUP2_SUPER_MAGIC, "cgroup2"},  {DEBUGFS_MAGIC, "debugfs"},     {TRACEFS_MAGIC, "tracefs"},
        {SECURITYFS_MAGIC, "securityfs"},  {BPF_FS_MAGIC, "bpf"},          {DEVPTS_SUPER_MAGIC, "devpts"},
        {EFIVARFS_MAGIC, "efivarfs"},      {PSTOREFS_MAGIC, "pstore"},     {BINFMTFS_MAGIC, "binfmt_misc"},
        {NSFS_MAGIC, "nsfs"},              {SELINUX_MAGIC, "selinuxfs"},   {SMACK_MAGIC, "smackfs"},
        {0x62656570UL, "configfs"},        {0x65735543UL, "fusectl"},      {0x19800202UL, "mqueue"},
        {0x07655821UL, "resctrl"},         {0x6c6f6f70UL, "binder"},       {0x0187UL, "autofs"},
        {0x6e667364UL, "nfsd"},            {0x67596969UL, "rpc_pipefs"},
};

/* Kernel interface file systems that share their magic number with a
 * storage one (devtmpfs is a tmpfs): known by name only, in mountinfo. */
static const char *const kernel_filesystems_by_name[] = {"devtmpfs"};

bool glove_grant_kernel_fs(const char *fstype) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(kernel_filesystems); i++)
                if (strcmp(fstype, kernel_filesystems[i].name) == 0)
                        return true;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(kernel_filesystems_by_name); i++)
                if (strcmp(fstype, kernel_filesystems_by_name[i]) == 0)
                        return true;
        return false;
}

/* grant.symlink for norm (absolute, normalized), which the kernel would
 * reach through a symbolic link: names the first component that is one,
 * what it points to, and the path to grant instead (norm resolved), all
 * escaped for the terminal. */
static int symlink_error(const char *norm, struct glove_error *err) {
        char link[PATH_MAX] = "", target[PATH_MAX] = "";
        size_t n = strlen(norm);
        for (size_t i = 1; i <= n && !link[0]; i++) {
                if (i < n && norm[i] != '/')
                        continue;
                if (i >= sizeof(link))
                        break;
                memcpy(link, norm, i);
                link[i] = '\0';
                struct stat st;
                ssize_t t;
                if (lstat(link, &st) == 0 && S_ISLNK(st.st_mode) &&
                    (t = readlink(link, target, sizeof(target) - 1)) >= 0)
                        target[t] = '\0';
                else
                        link[0] = '\0';
        }
        _cleanup_free_ char *resolved = realpath(norm, NULL);
        int e = errno;
        char shown_norm[1024], shown_link[1024], shown_target[1024], shown_resolved[1024];
        glove_shown(norm, shown_norm, sizeof(shown_norm));
        glove_shown(link, shown_link, sizeof(shown_link));
        glove_shown(target, shown_target, sizeof(shown_target));
        if (!resolved && link[0])
                return glove_error_set(err, ELOOP, "grant.symlink",
                                       "%s: %s is a symbolic link to %s (grants never follow one), and the path "
                                       "resolves to nothing (%s): grant the real path",
                                       shown_norm, shown_link, shown_target, strerror(e));
        if (!resolved)
                return glove_error_set(err, ELOOP, "grant.symlink",
                                       "%s: a path component is a symbolic link (grants never follow one), and the "
                                       "path resolves to nothing (%s): grant the real path",
                                       shown_norm, strerror(e));
        glove_shown(resolved, shown_resolved, sizeof(shown_resolved));
        if (!link[0])
                return glove_error_set(err, ELOOP, "grant.symlink",
                                       "%s: a path component is a symbolic link (grants never follow one): use %s "
                                       "instead",
                                       shown_norm, shown_resolved);
        return glove_error_set(err, ELOOP, "grant.symlink",
                               "%s: %s is a symbolic link to %s (grants never follow one): use %s instead", shown_norm,
                               shown_link, shown_target, shown_resolved);
}

int glove_grant_set_add(struct glove_grant_set *set, const char *path, enum glove_grant_mode mode,
                        bool workspace, const char *cwd, struct glove_error *err) {
        if (workspace && glove_grant_set_workspace(set))
                return glove_error_set(err, EINVAL, "grant.workspace_twice", "%s: a second workspace; there is at most one",
                                       path);
        _cleanup_free_ char *norm = NULL;
        int r = glove_path_normalize(path, cwd, &norm, err);
        if (r < 0) {
                glove_error_prefix(err, "%s", path);
                return r;
        }
        if (strcmp(norm, "/") == 0)
                return glove_error_set(err, EPERM, "grant.restricted", "%s: granting / would expose the whole host", path);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(restricted_roots); i++)
                if (glove_path_is_beneath(norm, restricted_roots[i]))
                        return glove_error_set(err, EPERM, "grant.restricted",
                                               i < 3 ? "%s: %s is provided by the sandbox itself and cannot be granted"
                                                     : "%s: %s holds host services' sockets and cannot be granted",
                                               path, restricted_roots[i]);
        /* The agent's private HOME is mounted before the grants: a grant of it
         * or of an ancestor would hide it (and the working directory). */
        if (glove_path_is_beneath(GLOVE_ENV_HOME, norm))
                return glove_error_set(err, EPERM, "grant.shadows_home",
                                       "%s: would hide the agent's private HOME (%s); grant a directory below it instead",
                                       path, GLOVE_ENV_HOME);
        /* The invoker's own runtime directory (ssh-agent, gpg-agent, D-Bus,
         * a service's socket) likewise. */
        const char *xdg = set->runtime_dir;
        if (xdg && xdg[0] == '/' && glove_path_is_beneath(norm, xdg))
                return glove_error_set(err, EPERM, "grant.restricted",
                                       "%s: $XDG_RUNTIME_DIR (%s) holds the invoker's service sockets and cannot be granted",
                                       path, xdg);
        _cleanup_close_ int fd = -1;
        struct glove_error oerr = {0};
        r = glove_fd_open_nofollow(norm, O_PATH, &fd, &oerr);
        if (r == -ENOENT)
                return glove_error_set(err, ENOENT, "grant.missing_path", "%s: no such file or directory", norm);
        if (r == -ELOOP)
                return symlink_error(norm, err);
        if (r < 0)
                return glove_error_set(err, -r, "grant.open", "%s: %s", norm, strerror(-r));
        struct statx stx;
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_INO | STATX_MNT_ID, &stx) < 0)
                return glove_error_set(err, errno, "grant.open", "%s: statx: %s", norm, strerror(errno));
        struct statfs sfs;
        if (fstatfs(fd, &sfs) < 0)
                return glove_error_set(err, errno, "grant.open", "%s: fstatfs: %s", norm, strerror(errno));
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(kernel_filesystems); i++)
                if ((unsigned long)sfs.f_type == kernel_filesystems[i].magic)
                        return glove_error_set(err, EPERM, "grant.kernel_fs",
                                               "%s: lies on a %s file system, an interface to the host's kernel; "
                                               "it cannot be granted",
                                               norm, kernel_filesystems[i].name);
        bool is_dir = S_ISDIR(stx.stx_mode);
        if (!is_dir && !S_ISREG(stx.stx_mode))
                return glove_error_set(err, EINVAL, "grant.file_type", "%s: not a directory or regular file", norm);
        if (mode == GLOVE_GRANT_WRITE && !set->allow_system_write &&
            (is_system_path(norm) || is_system_identity(makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino)))
                return glove_error_set(err, EPERM, "grant.system_directory",
                                       "%s: is or lies beneath a system directory of the host (/bin, /boot, /etc, /lib*, "
                                       "/opt, /root, /sbin, /usr, /var); the agent could change what the host runs; grant "
                                       "it read-only",
                                       norm);
        r = check_protected(set, norm, is_dir, mode, err);
        if (r < 0)
                return r;
        if (workspace && !is_dir)
                return glove_error_set(err, ENOTDIR, "grant.workspace_not_dir", "%s: not a directory (a workspace must be one)", norm);
        bool merged = false;
        r = check_overlap(set, norm, mode, workspace, err, &merged);
        if (r < 0 || merged)
                return r;
        if (set->count >= GLOVE_GRANTS_MAX)
                return glove_error_set(err, E2BIG, "grant.too_many", "more than %d grants", GLOVE_GRANTS_MAX);
        struct glove_grant *g = &set->items[set->count++];
        *g = (struct glove_grant){
                .path = TAKE_PTR(norm),
                .mode = mode,
                .workspace = workspace,
                .is_dir = is_dir,
                .dev = makedev(stx.stx_dev_major, stx.stx_dev_minor),
                .ino = stx.stx_ino,
                .mnt_id = stx.stx_mnt_id,
                .fd = TAKE_FD(fd),
        };
        return 0;
}

int glove_grant_set_check_hidden(const struct glove_grant_set *set, const char *canonical_path,
                                 dev_t dev, ino_t ino, struct glove_error *err) {
        return glove_grant_set_check_outside(set, canonical_path, dev, ino, "the audit log", "grant.exposes_audit_log", err);
}

int glove_grant_set_check_outside(const struct glove_grant_set *set, const char *canonical_path, dev_t dev, ino_t ino,
                                  const char *what, const char *code, struct glove_error *err) {
        for (size_t i = 0; i < set->count; i++) {
                const struct glove_grant *g = &set->items[i];
                bool exposed = g->is_dir ? glove_path_is_beneath(canonical_path, g->path)
                                         : (strcmp(g->path, canonical_path) == 0 || (g->dev == dev && g->ino == ino));
                if (exposed)
                        return glove_error_set(err, EPERM, code, "%s %s would expose %s %s to the agent; keep it outside every grant",
                                               grant_name(g->mode, g->workspace), g->path, what, canonical_path);
        }
        if (set->count == 0)
                return 0;
        /* By what is mounted: the file's region against every region a
         * grant reaches (a bind mount of its directory beneath a grant). */
        struct glove_mount_table t = {0};
        int r = glove_mount_table_read(&t, err);
        if (r < 0)
                return r;
        struct glove_region f = {0};
        r = glove_mount_table_region(&t, canonical_path, &f, err);
        for (size_t i = 0; i < set->count && r >= 0; i++) {
                const struct glove_grant *g = &set->items[i];
                struct glove_region *gr = NULL;
                size_t n = 0;
                r = glove_mount_table_grant_regions(&t, g->path, &gr, &n, err);
                for (size_t k = 0; k < n && r >= 0; k++)
                        if (g->is_dir ? glove_region_beneath(&f, &gr[k]) : (f.dev == gr[k].dev && strcmp(f.path, gr[k].path) == 0))
                                r = glove_error_set(err, EPERM, code,
                                                    "%s %s would expose %s %s to the agent%s; keep it outside every grant",
                                                    grant_name(g->mode, g->workspace), g->path, what, canonical_path,
                                                    k ? " through a mount beneath it" : " under another name");
                glove_regions_free(gr, n);
        }
        free(f.path);
        glove_mount_table_free(&t);
        return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroup probe: which backend, and where run cgroups are created.
 * Reads /proc/self/cgroup and /proc/self/mountinfo, opens each candidate
 * place by descriptor and checks write access; creates nothing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"

/* Most cgroup mounts considered. */
#define CG_MOUNTS_MAX 256

enum verdict {
        V_OK = 0,
        V_UNAVAILABLE = 1,   /* controllers not there for the caller */
        V_NOT_DELEGATED = 2, /* there, but not writable by the caller */
};

struct cg_mount {
        unsigned maj, min;
        bool v2;
        const char *root;      /* point into the mountinfo buffer (unescaped) */
        const char *point;
        const char *superopts;
};

struct proc_view {
        char *cgroup;          /* /proc/self/cgroup, modified in place */
        char *mountinfo;       /* likewise */
        struct cg_mount mounts[CG_MOUNTS_MAX];
        size_t nmounts;
};

static void proc_view_clear(struct proc_view *v) {
        free(v->cgroup);
        free(v->mountinfo);
        memset(v, 0, sizeof(*v));
}

static void reason(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(char *buf, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, GLOVE_CGROUP_REASON_MAX, fmt, ap);
        va_end(ap);
}

/* Splits the next space-separated field off *p (in place). */
static char *next_field(char **p) {
        char *s = *p;
        while (*s == ' ')
                s++;
        if (!*s)
                return NULL;
        char *e = strchrnul(s, ' ');
        if (*e)
                *e++ = '\0';
        *p = e;
        return s;
}

static void parse_mountinfo_line(struct proc_view *v, char *line) {
        char *p = line;
        char *f[5];
        for (int i = 0; i < 5; i++)
                if (!(f[i] = next_field(&p)))
                        return;
        /* Skip the per-mount options and optional fields up to "-". */
        char *t;
        do
                t = next_field(&p);
        while (t && strcmp(t, "-") != 0);
        char *fstype = t ? next_field(&p) : NULL;
        char *source = fstype ? next_field(&p) : NULL;
        char *superopts = source ? next_field(&p) : NULL;
        if (!superopts)
                return;
        bool v2 = strcmp(fstype, "cgroup2") == 0;
        if (!v2 && strcmp(fstype, "cgroup") != 0)
                return;
        unsigned maj, min;
        if (sscanf(f[2], "%u:%u", &maj, &min) != 2 || v->nmounts == CG_MOUNTS_MAX)
                return;
        glove_mountinfo_unescape(f[3]);
        glove_mountinfo_unescape(f[4]);
        v->mounts[v->nmounts++] = (struct cg_mount){
                .maj = maj, .min = min, .v2 = v2, .root = f[3], .point = f[4], .superopts = superopts,
        };
}

static int proc_view_load(struct proc_view *v, struct glove_error *err) {
        memset(v, 0, sizeof(*v));
        int r = cg_proc_read("/proc/self/cgroup", &v->cgroup);
        if (r < 0)
                return glove_error_set(err, -r, "cgroup.proc", "/proc/self/cgroup: %s", strerror(-r));
        r = cg_proc_read("/proc/self/mountinfo", &v->mountinfo);
        if (r < 0)
                return glove_error_set(err, -r, "cgroup.proc", "/proc/self/mountinfo: %s", strerror(-r));
        for (char *line = v->mountinfo; *line;) {
                char *eol = strchrnul(line, '\n');
                bool more = *eol != '\0';
                *eol = '\0';
                parse_mountinfo_line(v, line);
                line = more ? eol + 1 : eol;
        }
        return 0;
}

/* The caller's cgroup path for a v1 controller, or for v2 (controller
 * NULL): the third field of the matching /proc/self/cgroup line. The result
 * is copied into out. */
static bool caller_cgroup(const struct proc_view *v, const char *controller, char *out, size_t size) {
        for (const char *line = v->cgroup; *line;) {
                const char *eol = strchrnul(line, '\n');
                const char *c1 = memchr(line, ':', (size_t)(eol - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
                if (c2) {
                        char ctl[256];
                        size_t n = (size_t)(c2 - c1 - 1);
                        if (n < sizeof(ctl)) {
                                memcpy(ctl, c1 + 1, n);
                                ctl[n] = '\0';
                                bool hit = controller ? cg_words_contain(ctl, controller, ',')
                                                      : (n == 0 && c1 - line == 1 && line[0] == '0');
                                size_t plen = (size_t)(eol - c2 - 1);
                                if (hit && plen > 0 && plen < size) {
                                        memcpy(out, c2 + 1, plen);
                                        out[plen] = '\0';
                                        return true;
                                }
                        }
                }
                line = *eol ? eol + 1 : eol;
        }
        return false;
}

/* path relative to the mount's root, or NULL when path is not beneath it
 * (e.g. "/.." paths of a cgroup outside the caller's cgroup namespace). */
static const char *beneath_root(const char *root, const char *path) {
        if (strstr(path, "/..") || path[0] != '/')
                return NULL;
        if (strcmp(root, "/") == 0)
                return path;
        size_t n = strlen(root);
        if (strncmp(path, root, n) != 0 || (path[n] != '/' && path[n] != '\0'))
                return NULL;
        return path[n] ? path + n : "/";
}

static const struct cg_mount *find_mount(const struct proc_view *v, bool v2, const char *controller,
                                         const char *path, const char **rel) {
        for (size_t i = 0; i < v->nmounts; i++) {
                const struct cg_mount *m = &v->mounts[i];
                if (m->v2 != v2 || (controller && !cg_words_contain(m->superopts, controller, ',')))
                        continue;
                if ((*rel = beneath_root(m->root, path)))
                        return m;
        }
        return NULL;
}

/* Opens the directory rel beneath mount m as O_PATH, after checking that
 * the mount point is m's cgroup file system. display receives the path. */
static int open_in_mount(const struct cg_mount *m, const char *rel, int *out_fd, char display[PATH_MAX]) {
        *out_fd = -1;
        _cleanup_close_ int mfd = -1;
        int r = glove_fd_open_nofollow(m->point, O_PATH | O_DIRECTORY, &mfd, NULL);
        if (r < 0)
                return r;
        struct stat st;
        struct statfs sf;
        if (fstat(mfd, &st) < 0 || fstatfs(mfd, &sf) < 0)
                return -errno;
        if (st.st_dev != makedev(m->maj, m->min) ||
            sf.f_type != (m->v2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC))
                return -EXDEV; /* over-mounted: not the hierarchy mountinfo names */
        while (*rel == '/')
                rel++;
        int n = snprintf(display, PATH_MAX, "%s%s%s", m->point, *rel ? "/" : "", rel);
        if (n < 0 || n >= PATH_MAX)
                return -ENAMETOOLONG;
        if (!*rel) {
                *out_fd = TAKE_FD(mfd);
                return 0;
        }
        _cleanup_close_ int fd = -1;
        r = glove_fd_open_beneath(mfd, rel, O_PATH | O_DIRECTORY, &fd, NULL);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_dev != makedev(m->maj, m->min))
                return -EXDEV;
        *out_fd = TAKE_FD(fd);
        return 0;
}

static bool writable(int dirfd, const char *name) {
        return faccessat(dirfd, name, W_OK, AT_EACCESS) == 0;
}

static const struct {
        const char *name;
        unsigned role;
        bool required;
} v1_controllers[] = {
        {"memory", CG_ROLE_MEMORY, true},
        {"pids", CG_ROLE_PIDS, true},
        {"cpuacct", CG_ROLE_CPUACCT, true},
        /* The cpu controller is not joined on v1: Glove sets no CPU share or
         * quota (CPU time is read from cpuacct), and every hierarchy joined
         * costs a mkdir, an attach and an rmdir per run. */
        {"freezer", CG_ROLE_FREEZER, false},
};

static enum verdict plan_v1(const struct proc_view *v, struct cg_plan *plan, char *why) {
        unsigned site_dev[GLOVE_CGROUP_DIRS_MAX][2];
        for (size_t c = 0; c < GLOVE_ELEMENTSOF(v1_controllers); c++) {
                const char *name = v1_controllers[c].name;
                bool required = v1_controllers[c].required;
                char path[PATH_MAX];
                const char *rel = NULL;
                const struct cg_mount *m = NULL;
                if (caller_cgroup(v, name, path, sizeof(path)))
                        m = find_mount(v, false, name, path, &rel);
                if (!m) {
                        if (!required)
                                continue;
                        reason(why, "v1: the %s controller is not mounted where the caller's cgroup is visible", name);
                        return V_UNAVAILABLE;
                }
                bool merged = false;
                for (size_t s = 0; s < plan->nsites; s++)
                        if (site_dev[s][0] == m->maj && site_dev[s][1] == m->min) {
                                plan->sites[s].roles |= v1_controllers[c].role;
                                merged = true;
                        }
                if (merged)
                        continue;
                struct cg_site *site = &plan->sites[plan->nsites];
                int r = open_in_mount(m, rel, &site->fd, site->path);
                if (r < 0) {
                        if (!required)
                                continue;
                        reason(why, "cannot open the caller's v1 %s cgroup %s%s: %s", name, m->point,
                               strcmp(rel, "/") ? rel : "", strerror(-r));
                        return V_UNAVAILABLE;
                }
                if (!writable(site->fd, ".")) {
                        int e = errno;
                        close(site->fd);
                        site->fd = -1;
                        if (!required)
                                continue;
                        reason(why, "v1: no write access to %s for uid %u (%s)",
                               site->path, (unsigned)geteuid(), strerror(e));
                        return V_NOT_DELEGATED;
                }
                site->roles = v1_controllers[c].role;
                site_dev[plan->nsites][0] = m->maj;
                site_dev[plan->nsites][1] = m->min;
                plan->nsites++;
        }
        plan->backend = GLOVE_CGROUP_BACKEND_V1;
        return V_OK;
}

static void roles_words(unsigned roles, char *buf, size_t size) {
        snprintf(buf, size, "%s%s%s", (roles & CG_ROLE_MEMORY) ? "memory " : "", (roles & CG_ROLE_PIDS) ? "pids " : "",
                 (roles & CG_ROLE_CPU) ? "cpu " : "");
        size_t n = strlen(buf);
        if (n)
                buf[n - 1] = '\0';
}

static bool offers(const char *list, unsigned roles) {
        return (!(roles & CG_ROLE_MEMORY) || cg_words_contain(list, "memory", ' ')) &&
               (!(roles & CG_ROLE_PIDS) || cg_words_contain(list, "pids", ' ')) &&
               (!(roles & CG_ROLE_CPU) || cg_words_contain(list, "cpu", ' '));
}

/* Reads cgroup.controllers and cgroup.subtree_control of dirfd, one line
 * each (newline removed). */
static int read_lists(int dirfd, char avail[1024], char subtree[1024]) {
        if (cg_file_read(dirfd, "cgroup.controllers", avail, 1024) < 0 ||
            cg_file_read(dirfd, "cgroup.subtree_control", subtree, 1024) < 0)
                return -1;
        avail[strcspn(avail, "\n")] = '\0';
        subtree[strcspn(subtree, "\n")] = '\0';
        return 0;
}

/* The parent P of the caller's cgroup C as the place for a sibling of C.
 * P must hand the controllers down already, or be able to: they are offered
 * to P, P is owned by the caller (a delegated node), and it has no process
 * of its own (the kernel's no-internal-process rule); then Glove enables
 * them in P's cgroup.subtree_control at creation (spec architecture.md:
 * "enables the three controllers only on the empty delegated parent, and
 * creates session cgroups as siblings of the supervisor subgroup"). */
static enum verdict plan_v2_beside(const struct cg_mount *m, const char *rel, const char *cpath, unsigned need,
                                   const char *words, struct cg_site *site, char *why) {
        char prel[PATH_MAX];
        snprintf(prel, sizeof(prel), "%s", rel);
        *strrchr(prel, '/') = '\0';
        _cleanup_close_ int pfd = -1;
        char ppath[PATH_MAX];
        int r = open_in_mount(m, prel[0] ? prel : "/", &pfd, ppath);
        if (r < 0) {
                reason(why, "v2: cannot open the parent of %s: %s", cpath, strerror(-r));
                return V_UNAVAILABLE;
        }
        char avail[1024], subtree[1024];
        if (read_lists(pfd, avail, subtree) < 0) {
                reason(why, "v2: cannot read the controller lists of %s", ppath);
                return V_UNAVAILABLE;
        }
        bool enable = false;
        if (!offers(subtree, need)) {
                if (!offers(avail, need)) {
                        reason(why, "v2: neither the caller's cgroup %s nor its parent is given the %s controllers "
                               "(the parent has: %s)", cpath, words, avail[0] ? avail : "none");
                        return V_UNAVAILABLE;
                }
                struct stat st = {0};
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;
                if (fstat(pfd, &st) < 0 || st.st_uid != geteuid() || !writable(pfd, "cgroup.subtree_control")) {
                        reason(why, "v2: %s offers %s but is not delegated to uid %u (owner %u)", ppath, words,
                               (unsigned)geteuid(), (unsigned)st.st_uid);
                        return V_NOT_DELEGATED;
                }
                if (cg_file_read_pids(pfd, &pids, &n) < 0 || n > 0) {
                        reason(why, "v2: %s holds processes of its own, so its children cannot be given %s; put "
                               "Glove in a leaf cgroup below it (e.g. systemd DelegateSubgroup=)", ppath, words);
                        return V_NOT_DELEGATED;
                }
                enable = true;
        }
        if (!writable(pfd, ".") || !writable(pfd, "cgroup.procs")) {
                reason(why, "v2: uid %u may not create cgroups in %s or move processes there: not delegated",
                       (unsigned)geteuid(), ppath);
                return V_NOT_DELEGATED;
        }
        site->fd = TAKE_FD(pfd);
        site->enable_controllers = enable;
        snprintf(site->path, sizeof(site->path), "%s", ppath);
        return V_OK;
}

static enum verdict plan_v2(const struct proc_view *v, unsigned need, bool beside_only, struct cg_plan *plan,
                            char *why) {
        char path[PATH_MAX];
        if (!caller_cgroup(v, NULL, path, sizeof(path))) {
                reason(why, "v2: /proc/self/cgroup has no cgroup v2 entry");
                return V_UNAVAILABLE;
        }
        const char *rel = NULL;
        const struct cg_mount *m = find_mount(v, true, NULL, path, &rel);
        if (!m) {
                reason(why, "v2: no cgroup2 mount shows the caller's cgroup %s", path);
                return V_UNAVAILABLE;
        }
        _cleanup_close_ int cfd = -1;
        char cpath[PATH_MAX];
        int r = open_in_mount(m, rel, &cfd, cpath);
        if (r < 0) {
                reason(why, "v2: cannot open the caller's cgroup under %s: %s", m->point, strerror(-r));
                return V_UNAVAILABLE;
        }
        char words[64];
        roles_words(need, words, sizeof(words));
        char avail[1024], subtree[1024];
        if (read_lists(cfd, avail, subtree) < 0) {
                reason(why, "v2: cannot read the controller lists of %s", cpath);
                return V_UNAVAILABLE;
        }
        struct cg_site *site = &plan->sites[0];
        if (offers(subtree, need) && !beside_only) {
                /* Under the caller's cgroup, which hands the controllers down
                 * already (only possible for a root cgroup, or a caller whose
                 * manager prepared it). */
                if (!writable(cfd, ".")) {
                        reason(why, "v2: no write access to %s for uid %u: not delegated", cpath, (unsigned)geteuid());
                        return V_NOT_DELEGATED;
                }
                site->fd = TAKE_FD(cfd);
                snprintf(site->path, sizeof(site->path), "%s", cpath);
                site->placement = GLOVE_CGROUP_PLACEMENT_UNDER;
        } else if (strcmp(rel, "/") != 0) {
                enum verdict vd = plan_v2_beside(m, rel, cpath, need, words, site, why);
                if (vd != V_OK)
                        return vd;
                site->placement = GLOVE_CGROUP_PLACEMENT_BESIDE;
        } else {
                reason(why, "v2: the caller's cgroup %s does not give its children the %s controllers (it has: %s)",
                       cpath, words, avail[0] ? avail : "none");
                return V_UNAVAILABLE;
        }
        site->roles = need | CG_ROLE_CPUACCT;
        plan->nsites = 1;
        plan->backend = GLOVE_CGROUP_BACKEND_V2;
        return V_OK;
}

void cg_plan_clear(struct cg_plan *plan) {
        for (size_t i = 0; i < plan->nsites; i++)
                if (plan->sites[i].fd >= 0)
                        close(plan->sites[i].fd);
        memset(plan, 0, sizeof(*plan));
}

int cg_plan_make(struct cg_plan *plan, const struct cg_options *opts, struct glove_cgroup_probe *info,
                 struct glove_error *err) {
        memset(plan, 0, sizeof(*plan));
        memset(info, 0, sizeof(*info));
        struct proc_view view;
        int r = proc_view_load(&view, err);
        if (r < 0) {
                proc_view_clear(&view);
                return r;
        }
        enum verdict v2 = V_UNAVAILABLE, v1 = V_UNAVAILABLE;
        if (opts->force != GLOVE_CGROUP_BACKEND_V1) {
                v2 = plan_v2(&view, opts->v2_controllers, opts->v2_beside_only, plan, info->v2_reason);
                if (v2 != V_OK)
                        cg_plan_clear(plan);
        } else {
                reason(info->v2_reason, "v2: not considered (v1 forced)");
        }
        if (v2 != V_OK && opts->force != GLOVE_CGROUP_BACKEND_V2) {
                v1 = plan_v1(&view, plan, info->v1_reason);
                if (v1 != V_OK)
                        cg_plan_clear(plan);
        }
        proc_view_clear(&view);
        if (v2 == V_OK || v1 == V_OK) {
                info->backend = plan->backend;
                info->placement = plan->backend == GLOVE_CGROUP_BACKEND_V1 ? GLOVE_CGROUP_PLACEMENT_V1
                                                                           : plan->sites[0].placement;
                snprintf(info->parent, sizeof(info->parent), "%s", plan->sites[0].path);
                return 0;
        }
        if (v2 == V_NOT_DELEGATED || v1 == V_NOT_DELEGATED)
                return glove_error_set(err, EACCES, "cgroup.not_delegated",
                                       "cgroups are not delegated to uid %u; %s; %s", (unsigned)geteuid(),
                                       info->v2_reason, info->v1_reason[0] ? info->v1_reason : "v1: not considered");
        return glove_error_set(err, EOPNOTSUPP, "cgroup.unavailable",
                               "no usable cgroup hierarchy with the memory, pids and cpu controllers; %s; %s",
                               info->v2_reason, info->v1_reason[0] ? info->v1_reason : "v1: not considered");
}

int glove_cgroup_probe(struct glove_cgroup_probe *out, struct glove_error *err) {
        struct cg_options opts = {.force = GLOVE_CGROUP_BACKEND_NONE,
                                  .v2_controllers = CG_ROLE_MEMORY | CG_ROLE_PIDS | CG_ROLE_CPU};
        struct cg_plan plan;
        int r = cg_plan_make(&plan, &opts, out, err);
        cg_plan_clear(&plan);
        return r;
}

int cg_v2_self(int *root_fd, char rel[PATH_MAX], char mount_point[PATH_MAX], struct glove_error *err) {
        *root_fd = -1;
        struct proc_view view;
        int r = proc_view_load(&view, err);
        if (r < 0) {
                proc_view_clear(&view);
                return r;
        }
        char path[PATH_MAX];
        const char *r_rel = NULL;
        const struct cg_mount *m = NULL;
        if (caller_cgroup(&view, NULL, path, sizeof(path)))
                m = find_mount(&view, true, NULL, path, &r_rel);
        if (!m) {
                proc_view_clear(&view);
                return -ENOENT;
        }
        char display[PATH_MAX];
        r = open_in_mount(m, "/", root_fd, display);
        if (r == 0) {
                snprintf(rel, PATH_MAX, "%s", r_rel);
                snprintf(mount_point, PATH_MAX, "%s", m->point);
        }
        proc_view_clear(&view);
        return r < 0 ? -ENOENT : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* gloved's start-up check that no other mount namespace reaches its
 * directories (see exposure.h). */
#include "glove/server/exposure.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "glove/container/region.h"

#define CODE "service.exposed_directory"
#define CHECK_CODE "service.exposure_check"

struct nsid {
        dev_t dev;
        ino_t ino;
};

struct scan {
        const struct glove_server_exposure_dir *dirs;
        struct glove_region *regions; /* one per dir, in gloved's namespace */
        size_t n;
        struct glove_region *areas;   /* one per session area */
        size_t n_areas;
        struct glove_region root;     /* gloved's own root's region */
        struct nsid self;
        struct nsid *seen;
        size_t n_seen;
};

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* The region of dir in gloved's namespace: canonical when it exists, else
 * its normalized name. */
static int dir_region(const struct glove_mount_table *t, const char *path, struct glove_region *out,
                      struct glove_error *err) {
        char real[PATH_MAX];
        _cleanup_free_ char *norm = NULL;
        int r = 0;
        if (!realpath(path, real)) {
                r = glove_path_normalize(path, "/", &norm, err);
                if (r < 0)
                        return r;
        }
        return glove_mount_table_region(t, norm ? norm : real, out, err);
}

/* Whether the region r lies strictly beneath a session area (what gloved
 * itself mounts into its managed sessions: a lease, a materialization). */
static bool in_session_area(const struct scan *s, const struct glove_region *r) {
        for (size_t i = 0; i < s->n_areas; i++)
                if (glove_region_beneath(r, &s->areas[i]) && strcmp(r->path, s->areas[i].path) != 0)
                        return true;
        return false;
}

/* Checks the mount table ft of the namespace of process pid. */
static int check_table(const struct scan *s, const struct glove_mount_table *ft, pid_t pid, struct glove_error *err) {
        /* The topmost mount at "/": the namespace's root. */
        const struct glove_mount_row *root = NULL;
        for (size_t i = 0; i < ft->count; i++)
                if (strcmp(ft->rows[i].point, "/") == 0)
                        root = &ft->rows[i];
        if (root && root->dev == s->root.dev && strcmp(root->root, s->root.path) == 0)
                return 0; /* the host's own root: no sandbox */
        for (size_t i = 0; i < ft->count; i++) {
                const struct glove_mount_row *m = &ft->rows[i];
                struct glove_region mr = { .dev = m->dev, .path = (char *)m->root };
                if (in_session_area(s, &mr))
                        continue;
                for (size_t k = 0; k < s->n; k++)
                        if (glove_region_overlaps(&mr, &s->regions[k]))
                                return glove_error_set(err, EPERM, CODE,
                                                       "%s %s is reachable from another mount namespace (process %d "
                                                       "sees it through its mount %s): a sandbox could read or change "
                                                       "gloved's secrets there; stop that sandbox, or give gloved "
                                                       "directories that no sandbox was granted",
                                                       s->dirs[k].what, s->dirs[k].path, (int)pid, m->point);
        }
        return 0;
}

/* Looks at process name (a /proc entry) once per mount namespace. */
static int check_process(struct scan *s, int proc, const char *name, struct glove_error *err) {
        _cleanup_close_ int pfd = openat(proc, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        if (pfd < 0 || fstatat(pfd, "ns/mnt", &st, 0) < 0)
                return 0; /* ended, or not ours to inspect */
        struct nsid id = { st.st_dev, st.st_ino };
        if (id.dev == s->self.dev && id.ino == s->self.ino)
                return 0;
        for (size_t i = 0; i < s->n_seen; i++)
                if (s->seen[i].dev == id.dev && s->seen[i].ino == id.ino)
                        return 0;
        if (s->n_seen >= GLOVE_SERVER_EXPOSURE_NS_MAX)
                return glove_error_set(err, E2BIG, CHECK_CODE,
                                       "more than %d mount namespaces; cannot tell whether gloved's directories are "
                                       "reachable from one",
                                       GLOVE_SERVER_EXPOSURE_NS_MAX);
        char *text = NULL;
        size_t len = 0;
        struct glove_error rerr = { 0 };
        int r = glove_file_read_bounded(pfd, "mountinfo", 0, GLOVE_REGION_MOUNTINFO_MAX, &text, &len, &rerr);
        if (r == -EFBIG)
                return glove_error_set(err, EFBIG, CHECK_CODE, "process %s: mountinfo is longer than %d bytes", name,
                                       GLOVE_REGION_MOUNTINFO_MAX);
        if (r < 0)
                return 0; /* ended meanwhile */
        s->seen[s->n_seen++] = id;
        struct glove_mount_table ft = { 0 };
        r = glove_mount_table_parse(&ft, text, &rerr);
        if (r < 0) {
                glove_mount_table_free(&ft);
                return glove_error_set(err, -r, CHECK_CODE, "process %s: its mountinfo: %s", name, rerr.message);
        }
        r = check_table(s, &ft, (pid_t)strtol(name, NULL, 10), err);
        glove_mount_table_free(&ft);
        return r;
}

static int scan_all(struct scan *s, struct glove_error *err) {
        _cleanup_closedir_ DIR *d = opendir("/proc");
        if (!d)
                return glove_error_set(err, errno, CHECK_CODE, "cannot list /proc: %s", strerror(errno));
        size_t seen = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (!isdigit((unsigned char)e->d_name[0]))
                        continue;
                if (++seen > GLOVE_SERVER_EXPOSURE_PROCS_MAX)
                        return glove_error_set(err, E2BIG, CHECK_CODE, "more than %d processes to look at",
                                               GLOVE_SERVER_EXPOSURE_PROCS_MAX);
                int r = check_process(s, dirfd(d), e->d_name, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_once(const struct glove_server_exposure_dir *dirs, size_t n, const char *const *areas, size_t n_areas,
                      struct glove_error *err) {
        struct stat st;
        if (stat("/proc/self/ns/mnt", &st) < 0)
                return glove_error_set(err, errno, CHECK_CODE, "/proc/self/ns/mnt: %s", strerror(errno));
        struct scan s = { .dirs = dirs, .n = n, .n_areas = n_areas, .self = { st.st_dev, st.st_ino } };
        struct glove_mount_table t = { 0 };
        int r = glove_mount_table_read(&t, err);
        if (r < 0)
                return r;
        s.regions = calloc(n ? n : 1, sizeof(*s.regions));
        s.areas = calloc(n_areas ? n_areas : 1, sizeof(*s.areas));
        s.seen = calloc(GLOVE_SERVER_EXPOSURE_NS_MAX, sizeof(*s.seen));
        if (!s.regions || !s.areas || !s.seen)
                r = glove_error_set(err, ENOMEM, CHECK_CODE, "out of memory");
        if (r >= 0)
                r = glove_mount_table_region(&t, "/", &s.root, err);
        for (size_t i = 0; i < n && r >= 0; i++)
                r = dir_region(&t, dirs[i].path, &s.regions[i], err);
        for (size_t i = 0; i < n_areas && r >= 0; i++)
                r = dir_region(&t, areas[i], &s.areas[i], err);
        if (r >= 0)
                r = scan_all(&s, err);
        if (s.areas)
                glove_regions_free(s.areas, n_areas);
        if (s.regions)
                glove_regions_free(s.regions, n);
        free(s.root.path);
        free(s.seen);
        glove_mount_table_free(&t);
        return r;
}

/* A sandbox being built (a glove run, exec or managed session starting on
 * this host) has its own mount namespace holding a copy of the host's
 * mounts for a few milliseconds, until it pivots into its new root: a
 * finding is believed only when it is still there after a short grace
 * (100, 200, then 400 ms), so such a moment never refuses gloved's start,
 * while a namespace that keeps the directories reachable still does. */
int glove_server_exposure_check(const struct glove_server_exposure_dir *dirs, size_t n, const char *const *areas,
                                size_t n_areas, struct glove_error *err) {
        static const unsigned grace_ms[] = { 100, 200, 400 };
        for (size_t attempt = 0;; attempt++) {
                struct glove_error e = { 0 };
                int r = check_once(dirs, n, areas, n_areas, &e);
                bool found = r < 0 && e.code && strcmp(e.code, CODE) == 0;
                if (!found || attempt == sizeof(grace_ms) / sizeof(grace_ms[0])) {
                        if (r < 0 && err && !err->code)
                                *err = e;
                        return r;
                }
                usleep(grace_ms[attempt] * 1000);
        }
}

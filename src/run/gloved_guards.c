/* SPDX-License-Identifier: Apache-2.0 */
/* The directories of running gloveds, found for the grant checks of glove
 * exec and glove run (gloved_guards.h). */
#include "gloved_guards.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "glove/store/dirs.h"

#define CODE "grant.gloved_runtime"

/* gloved's runtime directory holds these two (src/server/service.c). */
#define GLOVED_SOCKET_NAME "gloved.sock"
#define GLOVED_SECRET_NAME "bootstrap-secret"

static const struct glove_grant_marker gloved_markers[] = {
        { GLOVED_SOCKET_NAME, S_IFSOCK },
        { GLOVED_SECRET_NAME, S_IFREG },
};

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* The inodes of every Unix socket bound to a path ending in /gloved.sock
 * (/proc/net/unix, proc(5): Num RefCount Protocol Flags Type St Inode Path);
 * the directory of each that is still a socket at that path is guarded. */
static int scan_unix_table(struct glove_grant_guards *guards, unsigned long *inodes, size_t *n,
                           struct glove_error *err) {
        *n = 0;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct glove_error rerr = { 0 };
        int r = glove_file_read_bounded(AT_FDCWD, "/proc/net/unix", 0, GLOVE_RUN_UNIX_TABLE_MAX, &text, &len, &rerr);
        if (r < 0)
                return glove_error_set(err, -r, CODE, "cannot read /proc/net/unix to look for a running gloved: %s",
                                       rerr.message);
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *f[8] = { 0 }, *s2 = NULL;
                char *tok = strtok_r(line, " ", &s2);
                for (int i = 0; tok && i < 8; i++) {
                        f[i] = tok;
                        if (i < 7)
                                tok = strtok_r(NULL, " ", &s2);
                }
                if (!f[7])
                        continue;
                size_t pl = strlen(f[7]), sl = sizeof("/" GLOVED_SOCKET_NAME) - 1;
                if (f[7][0] != '/' || pl < sl || strcmp(f[7] + pl - sl, "/" GLOVED_SOCKET_NAME) != 0)
                        continue;
                char *end;
                unsigned long ino = strtoul(f[6], &end, 10);
                if (*end)
                        continue;
                if (*n >= GLOVE_RUN_GLOVED_SOCKETS_MAX)
                        return glove_error_set(err, E2BIG, CODE,
                                               "more than %d gloved.sock sockets; cannot tell which gloved holds what",
                                               GLOVE_RUN_GLOVED_SOCKETS_MAX);
                inodes[(*n)++] = ino;
                /* A name the socket no longer has (its directory renamed
                 * since: found by gloved's descriptors instead) guards
                 * nothing. */
                struct stat st;
                if (stat(f[7], &st) < 0 || !S_ISSOCK(st.st_mode))
                        continue;
                f[7][pl - sl] = '\0';
                r = glove_grant_guards_add(guards, f[7][0] ? f[7] : "/",
                                           "the runtime directory of a running gloved (its control socket and "
                                           "bootstrap secret)",
                                           err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Whether descriptor name of /proc/PID/fdinfo (fdinfo) is one of gloved's
 * kept directories: opened with GLOVE_STORE_KEPT_DIR_FLAG, which only its
 * private directories carry (glove/store/dirs.h). Any other directory it
 * holds is held in passing (a grant check's listing of /, a copy walk, an
 * O_PATH lookup) and guards nothing. Unreadable: not kept. */
static bool is_kept_descriptor(int fdinfo, const char *name) {
        if (fdinfo < 0)
                return false;
        _cleanup_close_ int fd = openat(fdinfo, name, O_RDONLY | O_CLOEXEC);
        char buf[256];
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        const char *f = strstr(buf, "flags:");
        unsigned long flags;
        return f && sscanf(f + 6, "%lo", &flags) == 1 && !(flags & O_PATH) && (flags & GLOVE_STORE_KEPT_DIR_FLAG);
}

/* Looks at the descriptors of the process pid (fddir: its /proc/PID/fd,
 * taken): when one is a socket of inodes (a live gloved), guards every
 * directory it holds open. */
static int add_gloved_fds(struct glove_grant_guards *guards, pid_t pid, int fddir, int fdinfo,
                          const unsigned long *inodes, size_t n_inodes, struct glove_error *err) {
        _cleanup_closedir_ DIR *d = fdopendir(fddir);
        if (!d) {
                close(fddir);
                return 0;
        }
        bool live = false, cut = false;
        size_t seen = 0, n_dirs = 0;
        char **dirs = NULL;
        int r = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                if (++seen > GLOVE_RUN_GLOVED_FDS_MAX) {
                        r = glove_error_set(err, E2BIG, CODE,
                                            "gloved (pid %d) holds more than %d descriptors; cannot tell which "
                                            "directories it holds",
                                            (int)pid, GLOVE_RUN_GLOVED_FDS_MAX);
                        break;
                }
                char link[GLOVE_PATH_MAX];
                ssize_t l = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
                if (l <= 0)
                        continue;
                if ((size_t)l >= sizeof(link) - 1) {
                        cut = true; /* possibly cut: refused below if this gloved is live */
                        continue;
                }
                link[l] = '\0';
                unsigned long ino;
                if (sscanf(link, "socket:[%lu]", &ino) == 1) {
                        for (size_t i = 0; i < n_inodes; i++)
                                live = live || inodes[i] == ino;
                        continue;
                }
                struct stat st;
                if (link[0] != '/' || fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISDIR(st.st_mode) ||
                    !is_kept_descriptor(fdinfo, e->d_name))
                        continue;
                char **nd = realloc(dirs, (n_dirs + 1) * sizeof(*dirs));
                if (!nd || !(nd[n_dirs] = strdup(link))) {
                        dirs = nd ? nd : dirs;
                        r = glove_error_set(err, ENOMEM, CODE, "out of memory");
                        break;
                }
                dirs = nd;
                n_dirs++;
        }
        /* A directory a live gloved holds must not go unguarded because its
         * name is too long to read whole. */
        if (r >= 0 && live && cut)
                r = glove_error_set(err, ENAMETOOLONG, CODE, "gloved (pid %d) holds a descriptor whose path is longer than %d bytes",
                                    (int)pid, GLOVE_PATH_MAX - 2);
        char what[128];
        snprintf(what, sizeof(what), "a private directory that a running gloved (pid %d) keeps open (runtime, state and the like)",
                 (int)pid);
        for (size_t i = 0; i < n_dirs; i++) {
                if (r >= 0 && live)
                        r = glove_grant_guards_add(guards, dirs[i], what, err);
                free(dirs[i]);
        }
        free(dirs);
        return r;
}

/* Every live gloved but this process: a process named gloved* holding a
 * socket of inodes. Processes whose descriptors this one may not read are
 * skipped (their runtime directory is still found by its bound path). */
static int scan_processes(struct glove_grant_guards *guards, const unsigned long *inodes, size_t n_inodes,
                          struct glove_error *err) {
        _cleanup_closedir_ DIR *d = opendir("/proc");
        if (!d)
                return glove_error_set(err, errno, CODE, "cannot list /proc: %s", strerror(errno));
        size_t seen = 0;
        struct dirent *e;
        pid_t self = getpid();
        while ((e = readdir(d))) {
                if (!isdigit((unsigned char)e->d_name[0]))
                        continue;
                if (++seen > GLOVE_RUN_GLOVED_PROCS_MAX)
                        return glove_error_set(err, E2BIG, CODE, "more than %d processes; cannot tell which one is gloved",
                                               GLOVE_RUN_GLOVED_PROCS_MAX);
                pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
                if (pid == self)
                        continue;
                char path[sizeof(e->d_name) + 8], comm[32];
                snprintf(path, sizeof(path), "%s/comm", e->d_name);
                _cleanup_close_ int cfd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
                if (cfd < 0)
                        continue;
                ssize_t n = read(cfd, comm, sizeof(comm) - 1);
                if (n < 6 || strncmp(comm, "gloved", 6) != 0)
                        continue;
                snprintf(path, sizeof(path), "%s/fd", e->d_name);
                int fddir = openat(dirfd(d), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fddir < 0)
                        continue;
                snprintf(path, sizeof(path), "%s/fdinfo", e->d_name);
                _cleanup_close_ int fdinfo = openat(dirfd(d), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int r = add_gloved_fds(guards, pid, fddir, fdinfo, inodes, n_inodes, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int glove_run_gloved_guards(struct glove_grant_guards *guards, struct glove_error *err) {
        *guards = (struct glove_grant_guards){
                .code = CODE,
                .markers = gloved_markers,
                .n_markers = GLOVE_ELEMENTSOF(gloved_markers),
                .marker_what = "a gloved runtime directory (its control socket and bootstrap secret)",
        };
        unsigned long inodes[GLOVE_RUN_GLOVED_SOCKETS_MAX];
        size_t n_inodes = 0;
        int r = scan_unix_table(guards, inodes, &n_inodes, err);
        if (r >= 0 && n_inodes > 0)
                r = scan_processes(guards, inodes, n_inodes, err);
        return r;
}

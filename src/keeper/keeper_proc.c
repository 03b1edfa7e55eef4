/* SPDX-License-Identifier: Apache-2.0 */
/* The keeper's readings of the host (keeper.h): process start times, the
 * boot id and the run cgroup's identity, parsed with care. */
#include "glove/keeper/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "keeper_internal.h"

/* Field 22 of /proc/PID/stat, counted from the third (state), which is the
 * first after the comm field's last ')'. */
#define STAT_FIELD_STARTTIME 22

int glove_keeper_parse_stat(const char *text, size_t len, uint64_t *out) {
        if (!text || !out)
                return -EINVAL;
        const char *end = text + len;
        const char *p = NULL;
        for (const char *q = text; q < end; q++)
                if (*q == ')')
                        p = q;
        if (!p)
                return -EINVAL;
        p++; /* after the last ')' */
        for (int field = 3; field <= STAT_FIELD_STARTTIME; field++) {
                if (p >= end || *p != ' ')
                        return -EINVAL;
                p++;
                const char *tok = p;
                while (p < end && *p != ' ' && *p != '\n')
                        p++;
                if (p == tok)
                        return -EINVAL;
                if (field != STAT_FIELD_STARTTIME)
                        continue;
                uint64_t v = 0;
                for (const char *d = tok; d < p; d++) {
                        if (*d < '0' || *d > '9')
                                return -EINVAL;
                        unsigned digit = (unsigned)(*d - '0');
                        if (v > (UINT64_MAX - digit) / 10)
                                return -EINVAL;
                        v = v * 10 + digit;
                }
                *out = v;
                return 0;
        }
        return -EINVAL;
}

int glove_keeper_proc_start_time(pid_t pid, uint64_t *out) {
        if (pid <= 0 || !out)
                return -EINVAL;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = glove_file_read_bounded(AT_FDCWD, path, 0, GLOVE_KEEPER_STAT_MAX, &buf, &n, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        /* A process that exited between the open and the read reads empty. */
        if (n == 0)
                return -ESRCH;
        /* A zombie (or a dead task) is no process any more: it runs nothing
         * and its pid is about to be free. */
        const char *close_paren = memrchr(buf, ')', n);
        if (close_paren && (size_t)(close_paren - buf) + 2 < n && (close_paren[2] == 'Z' || close_paren[2] == 'X'))
                return -ESRCH;
        return glove_keeper_parse_stat(buf, n, out);
}

static bool is_lower_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int glove_keeper_parse_boot_id(const char *text, size_t len, char out[37]) {
        if (!text || !out)
                return -EINVAL;
        if (len == 37 && text[36] == '\n')
                len = 36;
        if (len != 36)
                return -EINVAL;
        for (size_t i = 0; i < 36; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                if (dash ? text[i] != '-' : !is_lower_hex(text[i]))
                        return -EINVAL;
        }
        memcpy(out, text, 36);
        out[36] = '\0';
        return 0;
}

int glove_keeper_boot_id(char out[37]) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = glove_file_read_bounded(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 0, 64, &buf, &n, NULL);
        if (r < 0)
                return r;
        return glove_keeper_parse_boot_id(buf, n, out);
}

/* True when the comma-separated list list[0..n) holds word. */
static bool list_has(const char *list, size_t n, const char *word) {
        size_t wl = strlen(word);
        const char *end = list + n;
        for (const char *p = list; p < end;) {
                const char *c = memchr(p, ',', (size_t)(end - p));
                const char *e = c ? c : end;
                if ((size_t)(e - p) == wl && memcmp(p, word, wl) == 0)
                        return true;
                p = e + 1;
        }
        return false;
}

int glove_keeper_parse_cgroup(const char *text, size_t len, bool v2, const char **path, size_t *path_len) {
        const char *end = text + len;
        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                const char *le = nl ? nl : end;
                /* HIERARCHY:CONTROLLERS:PATH (the path may hold ':'). */
                const char *c1 = memchr(line, ':', (size_t)(le - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
                if (c2 && c2 + 1 < le && c2[1] == '/') {
                        bool match = v2 ? (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1)
                                        : list_has(c1 + 1, (size_t)(c2 - c1 - 1), "memory");
                        if (match) {
                                *path = c2 + 1;
                                *path_len = (size_t)(le - c2 - 1);
                                return 0;
                        }
                }
                line = le + 1;
        }
        return -ENOENT;
}

/* True when the text of a cgroup.procs file lists pid. */
static bool procs_list(const char *text, size_t len, pid_t pid) {
        char want[24];
        int wl = snprintf(want, sizeof(want), "%d", (int)pid);
        const char *end = text + len;
        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                const char *le = nl ? nl : end;
                if (le - line == wl && memcmp(line, want, (size_t)wl) == 0)
                        return true;
                line = le + 1;
        }
        return false;
}

json_t *glove_keeper_cgroup_identity(pid_t pid, const char *parent, bool v2) {
        if (pid <= 0 || !parent || parent[0] != '/')
                return NULL;
        char p[64];
        snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        if (glove_file_read_bounded(AT_FDCWD, p, 0, GLOVE_KEEPER_CGROUP_FILE_MAX, &text, &n, NULL) < 0)
                return NULL;
        const char *path;
        size_t plen;
        if (glove_keeper_parse_cgroup(text, n, v2, &path, &plen) < 0)
                return NULL;
        const char *base = path + plen;
        while (base > path && base[-1] != '/')
                base--;
        size_t blen = (size_t)(path + plen - base);
        if (blen == 0 || (blen == 1 && base[0] == '.') || (blen == 2 && base[0] == '.' && base[1] == '.'))
                return NULL;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof(dir), "%s/%.*s", parent, (int)blen, base) >= (int)sizeof(dir))
                return NULL;
        /* The parent is the probe's (trusted); the run cgroup itself must be
         * a directory, not a link. */
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return NULL;
        struct stat st;
        if (fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode))
                return NULL;
        _cleanup_free_ char *procs = NULL;
        size_t pn = 0;
        if (glove_file_read_bounded(dfd, "cgroup.procs", O_NOFOLLOW, GLOVE_KEEPER_CGROUP_FILE_MAX, &procs, &pn, NULL) < 0 ||
            !procs_list(procs, pn, pid))
                return NULL;
        return json_pack("{s:s,s:I}", "dir", dir, "inode", (json_int_t)st.st_ino);
}

const char *glove_keeper_limit_plan_name(enum glove_cgroup_limit limit) {
        switch (limit) {
        case GLOVE_CGROUP_LIMIT_MEMORY:
                return "memory_bytes";
        case GLOVE_CGROUP_LIMIT_PIDS:
                return "pids";
        case GLOVE_CGROUP_LIMIT_CPU_TIME:
                return "cpu_time_ms";
        case GLOVE_CGROUP_LIMIT_WALL_TIME:
                return "wall_time_ms";
        case GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT:
                return "terminal_output_bytes";
        case GLOVE_CGROUP_LIMIT_NONE:
                break;
        }
        return NULL;
}

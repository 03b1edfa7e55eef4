/* SPDX-License-Identifier: Apache-2.0 */
/* Control files of a cgroup, always reached through the cgroup's directory
 * descriptor, and bounded reads of /proc files. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "glove/base/cleanup.h"

bool cg_file_exists(int dirfd, const char *name) {
        return faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int cg_file_write(int dirfd, const char *name, const char *value) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* cgroup files take one write per value; a short write is an error. */
        size_t len = strlen(value);
        ssize_t n;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t)n == len ? 0 : -EIO;
}

int cg_file_write_u64(int dirfd, const char *name, uint64_t value) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRIu64 "\n", value);
        return cg_file_write(dirfd, name, buf);
}

/* Reads fd to its end into buf (NUL-terminated); more than size - 1 bytes is
 * -EFBIG. With single_record, a read that leaves room in buf ends the file:
 * a cgroup control file holding one value or one key list is one seq_file
 * record, which the kernel hands out whole or, past the room given, not at
 * all (the full-buffer case is still checked for more), so the read that
 * would return 0 is saved. */
static ssize_t read_fd_bounded(int fd, char *buf, size_t size, bool single_record) {
        size_t len = 0;
        for (;;) {
                if (len + 1 >= size) {
                        /* Full: only fine if the file ends exactly here. */
                        char extra;
                        ssize_t n = read(fd, &extra, 1);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return -errno;
                        if (n > 0)
                                return -EFBIG;
                        break;
                }
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (single_record && len + 1 < size)
                        break;
        }
        buf[len] = '\0';
        return (ssize_t)len;
}

static ssize_t file_read(int dirfd, const char *name, char *buf, size_t size, bool single_record) {
        if (size == 0)
                return -EINVAL;
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return read_fd_bounded(fd, buf, size, single_record);
}

ssize_t cg_file_read(int dirfd, const char *name, char *buf, size_t size) {
        return file_read(dirfd, name, buf, size, false);
}

static int parse_u64(const char *s, const char **end, uint64_t *out) {
        if (*s < '0' || *s > '9')
                return -EINVAL;
        uint64_t v = 0;
        while (*s >= '0' && *s <= '9') {
                unsigned d = (unsigned)(*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
                s++;
        }
        *out = v;
        *end = s;
        return 0;
}

int cg_file_read_u64(int dirfd, const char *name, uint64_t *out) {
        char buf[64];
        ssize_t n = file_read(dirfd, name, buf, sizeof(buf), true);
        if (n < 0)
                return (int)n;
        if (strcmp(buf, "max\n") == 0 || strcmp(buf, "max") == 0) {
                *out = UINT64_MAX;
                return 0;
        }
        const char *end;
        int r = parse_u64(buf, &end, out);
        if (r < 0)
                return r;
        return (*end == '\n' || *end == '\0') ? 0 : -EINVAL;
}

int cg_file_read_key(int dirfd, const char *name, const char *key, uint64_t *out) {
        char buf[CG_CONTROL_FILE_MAX];
        ssize_t n = file_read(dirfd, name, buf, sizeof(buf), true);
        if (n < 0)
                return (int)n;
        size_t klen = strlen(key);
        for (const char *line = buf; *line;) {
                const char *eol = strchrnul(line, '\n');
                if ((size_t)(eol - line) > klen && strncmp(line, key, klen) == 0 && line[klen] == ' ') {
                        const char *end;
                        int r = parse_u64(line + klen + 1, &end, out);
                        if (r < 0)
                                return r;
                        return end == eol ? 0 : -EINVAL;
                }
                line = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

static int pids_push(pid_t **pids, size_t *count, size_t *cap, uint64_t v) {
        /* 0 stands for a task outside the reader's pid namespace: kept, so
         * the cgroup does not look empty, but never signalled. */
        if (v > INT32_MAX)
                return -EINVAL;
        if (*count == *cap) {
                if (*cap >= CG_PROCS_MAX)
                        return -E2BIG;
                size_t ncap = *cap ? *cap * 2 : 64;
                if (ncap > CG_PROCS_MAX)
                        ncap = CG_PROCS_MAX;
                pid_t *n = realloc(*pids, ncap * sizeof(**pids));
                if (!n)
                        return -ENOMEM;
                *pids = n;
                *cap = ncap;
        }
        (*pids)[(*count)++] = (pid_t)v;
        return 0;
}

/* cgroup.procs is read in chunks (it may hold up to pids.max lines); a
 * number may straddle two chunks. */
int cg_file_read_pids(int dirfd, pid_t **out, size_t *count) {
        *out = NULL;
        *count = 0;
        _cleanup_close_ int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, cap = 0;
        uint64_t cur = 0;
        bool in_number = false;
        char buf[4096];
        for (;;) {
                ssize_t got = read(fd, buf, sizeof(buf));
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (got == 0)
                        break;
                for (ssize_t i = 0; i < got; i++) {
                        char c = buf[i];
                        if (c >= '0' && c <= '9') {
                                if (cur > INT32_MAX)
                                        return -EINVAL;
                                cur = cur * 10 + (uint64_t)(c - '0');
                                in_number = true;
                        } else if (c == '\n' && in_number) {
                                int r = pids_push(&pids, &n, &cap, cur);
                                if (r < 0)
                                        return r;
                                cur = 0;
                                in_number = false;
                        } else {
                                return -EINVAL;
                        }
                }
        }
        if (in_number)
                return -EINVAL;
        if (n > 1)
                qsort(pids, n, sizeof(*pids), cmp_pid);
        *out = TAKE_PTR(pids);
        *count = n;
        return 0;
}

int cg_proc_read(const char *path, char **out) {
        *out = NULL;
        /* /proc/self is a link by design; the files are the kernel's. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t cap = 16384, len = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 == cap) {
                        if (cap >= CG_PROC_FILE_MAX)
                                return -EFBIG;
                        size_t ncap = cap * 2 > CG_PROC_FILE_MAX ? CG_PROC_FILE_MAX : cap * 2;
                        char *n = realloc(buf, ncap);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                        cap = ncap;
                }
                ssize_t got = read(fd, buf + len, cap - 1 - len);
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (got == 0)
                        break;
                len += (size_t)got;
        }
        buf[len] = '\0';
        *out = TAKE_PTR(buf);
        return 0;
}

bool cg_words_contain(const char *list, const char *word, char sep) {
        size_t wlen = strlen(word);
        for (const char *p = list; *p;) {
                while (*p == sep || *p == '\n')
                        p++;
                const char *e = p;
                while (*e && *e != sep && *e != '\n')
                        e++;
                if ((size_t)(e - p) == wlen && strncmp(p, word, wlen) == 0)
                        return true;
                p = e;
        }
        return false;
}

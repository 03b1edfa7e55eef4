/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the control unit tests: private temporary directories
 * and whole-file reads and writes. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int th_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

/* A fresh mode-0700 directory under $TMPDIR (or /tmp); caller frees. */
static inline char *th_tempdir(void) {
        const char *base = getenv("TMPDIR");
        char *p = NULL;
        if (!base || base[0] != '/')
                base = "/tmp";
        if (asprintf(&p, "%s/glove-control-test.XXXXXX", base) < 0 || !mkdtemp(p))
                abort();
        return p;
}

static inline void th_rmtree(char *dir) {
        if (dir)
                nftw(dir, th_rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(dir);
}

static inline char *th_join(const char *dir, const char *name) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", dir, name) < 0)
                abort();
        return p;
}

/* Reads a whole file into a malloc'd buffer; *len receives its size. */
static inline unsigned char *th_read(const char *path, size_t *len) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                abort();
        unsigned char *b = malloc((size_t)st.st_size + 1);
        size_t got = 0;
        while (got < (size_t)st.st_size) {
                ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
                if (n <= 0)
                        abort();
                got += (size_t)n;
        }
        close(fd);
        *len = got;
        return b;
}

/* Replaces the content of an existing file in place (keeps inode and mode).
 * Writes then sets the size, rather than O_TRUNC: ext4 flushes a file that
 * was truncated to zero on close, which would make the tamper loops slow. */
static inline void th_write(const char *path, const void *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                abort();
        if (len && pwrite(fd, data, len, 0) != (ssize_t)len)
                abort();
        if (ftruncate(fd, (off_t)len) < 0)
                abort();
        close(fd);
}

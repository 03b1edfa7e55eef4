/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crashpoint.c: an LD_PRELOAD shim for the recovery tests
 * (tests/integration/gloved_recovery.bats). It makes the process that loads
 * it kill itself with SIGKILL at an exact point of its output, so that a
 * test can crash gloved between two durable writes without any back door in
 * gloved itself; or stall once before such a write, so that a test can make
 * a race deterministic (limits.bats holds glove's cgroup v1 attach back to
 * prove the sandbox waits for it). Built by meson as build/glove-crashpoint.so (a test
 * artifact, never installed); tests/integration/run.sh copies it next to
 * the binaries under test.
 *
 * Environment (read once, in the constructor):
 *   GLOVE_CRASH_MATCH=SUBSTRING  arm the shim: a write whose buffer contains
 *                                these bytes is a match. Unset or empty: the
 *                                shim is a pure pass-through.
 *   GLOVE_CRASH_WHEN=before|after|synced|stall
 *                                before: SIGKILL instead of the matching
 *                                write (the file never gets the bytes);
 *                                after (the default): SIGKILL as soon as the
 *                                write returned (the bytes are in the file,
 *                                not necessarily synced); synced: SIGKILL
 *                                when the next fsync/fdatasync of the same
 *                                descriptor returns; stall: no crash, but
 *                                the first matching write waits
 *                                GLOVE_CRASH_STALL_MS first.
 *   GLOVE_CRASH_STALL_MS=N       stall: how long, in ms (default 1000).
 *   GLOVE_CRASH_SKIP=N           let the first N matches pass (default 0).
 *   GLOVE_CRASH_PATH=SUBSTRING   only writes to a descriptor whose
 *                                /proc/self/fd link contains SUBSTRING count
 *                                (e.g. "sessions.journal"; default: any).
 *   GLOVE_CRASH_REPORT=FILE      before the SIGKILL, one line is appended to
 *                                FILE: "crashpoint: pid P: WHEN: match M on
 *                                fd F (LINK)", so a test knows the crash was
 *                                this one.
 *
 * Writes wrapped: write, pwrite, pwrite64, writev, pwritev, pwritev64 (the
 * journals use pwrite, which is pwrite64 under _FILE_OFFSET_BITS=64). A
 * vector write matches when one of its buffers contains the substring (a
 * substring split across two buffers is not seen).
 *
 * Only the process that loaded the shim may crash: the constructor records
 * getpid() and every match compares it, so a child forked later never
 * crashes; and the constructor removes GLOVE_CRASH_* and this shim from the
 * environment, so a program exec'd later (mkfs, PID 1 of a sandbox, a
 * session keeper, which gloved execs with an empty environment anyway)
 * does not even load it.
 */
/* pwrite and pwrite64 are both defined here under their own names: the
 * header must not turn pwrite into an alias of pwrite64. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MATCH_MAX 256
#define PATH_MAX_ 256
#define REPORT_MAX 4096

enum when { WHEN_BEFORE, WHEN_AFTER, WHEN_SYNCED, WHEN_STALL };

static struct {
        bool armed;
        pid_t pid;
        enum when when;
        unsigned long skip;
        unsigned long matches;
        unsigned long stall_ms;
        char match[MATCH_MAX];
        size_t match_len;
        char path[PATH_MAX_];
        char report[REPORT_MAX];
        int synced_fd; /* WHEN_SYNCED: the descriptor that matched, else -1 */
} cp = { .synced_fd = -1 };

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off64_t);
typedef ssize_t (*pwritev64_fn)(int, const struct iovec *, int, off64_t);
typedef int (*sync_fn)(int);

static void *next(const char *name) {
        void *f = dlsym(RTLD_NEXT, name);
        if (!f)
                abort(); /* a libc without the symbol: nothing sensible to do */
        return f;
}

/* Removes NAME=... from the environment when present. */
static void drop_env(const char *name) {
        if (getenv(name))
                (void)unsetenv(name);
}

/* Removes every LD_PRELOAD entry naming this shim (the others stay). */
static void drop_preload(void) {
        const char *v = getenv("LD_PRELOAD");
        if (!v)
                return;
        char keep[4096];
        size_t k = 0;
        const char *p = v;
        while (*p) {
                size_t n = strcspn(p, ": ");
                bool ours = memmem(p, n, "glove-crashpoint", 16) != NULL;
                if (n > 0 && !ours && k + n + 2 < sizeof(keep)) {
                        if (k)
                                keep[k++] = ':';
                        memcpy(keep + k, p, n);
                        k += n;
                }
                p += n;
                while (*p == ':' || *p == ' ')
                        p++;
        }
        keep[k] = '\0';
        if (k)
                (void)setenv("LD_PRELOAD", keep, 1);
        else
                (void)unsetenv("LD_PRELOAD");
}

static void copy_env(const char *name, char *dst, size_t cap) {
        const char *v = getenv(name);
        if (v && strlen(v) < cap)
                strcpy(dst, v);
}

__attribute__((constructor)) static void crashpoint_init(void) {
        const char *m = getenv("GLOVE_CRASH_MATCH");
        if (m && *m && strlen(m) < sizeof(cp.match)) {
                strcpy(cp.match, m);
                cp.match_len = strlen(m);
                cp.armed = true;
                cp.pid = getpid();
                const char *w = getenv("GLOVE_CRASH_WHEN");
                cp.when = !w || !strcmp(w, "after") ? WHEN_AFTER
                        : !strcmp(w, "before")      ? WHEN_BEFORE
                        : !strcmp(w, "synced")      ? WHEN_SYNCED
                        : !strcmp(w, "stall")       ? WHEN_STALL
                                                    : WHEN_AFTER;
                if (w && strcmp(w, "after") && strcmp(w, "before") && strcmp(w, "synced") && strcmp(w, "stall"))
                        cp.armed = false; /* a typo must not crash somewhere unintended */
                const char *s = getenv("GLOVE_CRASH_SKIP");
                cp.skip = s ? strtoul(s, NULL, 10) : 0;
                const char *ms = getenv("GLOVE_CRASH_STALL_MS");
                cp.stall_ms = ms ? strtoul(ms, NULL, 10) : 1000;
                copy_env("GLOVE_CRASH_PATH", cp.path, sizeof(cp.path));
                copy_env("GLOVE_CRASH_REPORT", cp.report, sizeof(cp.report));
        }
        drop_env("GLOVE_CRASH_MATCH");
        drop_env("GLOVE_CRASH_WHEN");
        drop_env("GLOVE_CRASH_SKIP");
        drop_env("GLOVE_CRASH_STALL_MS");
        drop_env("GLOVE_CRASH_PATH");
        drop_env("GLOVE_CRASH_REPORT");
        drop_preload();
}

static void fd_link(int fd, char *out, size_t cap) {
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, out, cap - 1);
        out[n > 0 ? (size_t)n : 0] = '\0';
}

/* Dies now, after appending the report line. */
_Noreturn static void crash(int fd, const char *when) {
        int saved = errno;
        if (cp.report[0]) {
                char link[512], line[1024];
                fd_link(fd, link, sizeof(link));
                int n = snprintf(line, sizeof(line), "crashpoint: pid %d: %s: match %lu on fd %d (%s)\n",
                                 (int)getpid(), when, cp.matches, fd, link);
                int rfd = open(cp.report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
                if (rfd >= 0 && n > 0) {
                        write_fn w = (write_fn)next("write");
                        (void)!w(rfd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
                        close(rfd);
                }
        }
        errno = saved;
        for (;;) {
                kill(getpid(), SIGKILL);
                raise(SIGKILL);
        }
}

/* Whether this write (buffers BUFS) is the armed crash point: the process
 * that loaded the shim, the right descriptor, the substring, past the skip. */
static bool hit(int fd, const struct iovec *bufs, int n) {
        if (!cp.armed || getpid() != cp.pid)
                return false;
        bool found = false;
        for (int i = 0; i < n && !found; i++)
                found = bufs[i].iov_base && bufs[i].iov_len >= cp.match_len &&
                        memmem(bufs[i].iov_base, bufs[i].iov_len, cp.match, cp.match_len) != NULL;
        if (!found)
                return false;
        if (cp.path[0]) {
                char link[512];
                fd_link(fd, link, sizeof(link));
                if (!strstr(link, cp.path))
                        return false;
        }
        cp.matches++;
        return cp.matches > cp.skip;
}

/* STALL: waits cp.stall_ms once, then disarms. */
static void stall(void) {
        struct timespec ts = { .tv_sec = (time_t)(cp.stall_ms / 1000), .tv_nsec = (long)(cp.stall_ms % 1000) * 1000000L };
        cp.armed = false;
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* Around one write: BEFORE dies instead of it; AFTER dies once it returned;
 * SYNCED remembers the descriptor; STALL waits before it. */
#define AROUND(fd, bufs, n, call)                                                       \
        do {                                                                            \
                bool h_ = hit((fd), (bufs), (n));                                       \
                if (h_ && cp.when == WHEN_BEFORE)                                       \
                        crash((fd), "before");                                          \
                if (h_ && cp.when == WHEN_STALL)                                        \
                        stall();                                                        \
                ssize_t r_ = (call);                                                    \
                if (h_ && cp.when == WHEN_AFTER)                                        \
                        crash((fd), "after");                                           \
                if (h_ && cp.when == WHEN_SYNCED) {                                     \
                        cp.synced_fd = (fd);                                            \
                        cp.armed = false; /* the next sync of fd is the point */        \
                }                                                                       \
                return r_;                                                              \
        } while (0)

ssize_t write(int fd, const void *buf, size_t len) {
        static write_fn real;
        if (!real)
                real = (write_fn)next("write");
        struct iovec v = { .iov_base = (void *)buf, .iov_len = len };
        AROUND(fd, &v, 1, real(fd, buf, len));
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
        static pwrite_fn real;
        if (!real)
                real = (pwrite_fn)next("pwrite");
        struct iovec v = { .iov_base = (void *)buf, .iov_len = len };
        AROUND(fd, &v, 1, real(fd, buf, len, off));
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off) {
        static pwrite64_fn real;
        if (!real)
                real = (pwrite64_fn)next("pwrite64");
        struct iovec v = { .iov_base = (void *)buf, .iov_len = len };
        AROUND(fd, &v, 1, real(fd, buf, len, off));
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
        static writev_fn real;
        if (!real)
                real = (writev_fn)next("writev");
        AROUND(fd, iov, n, real(fd, iov, n));
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
        static pwritev_fn real;
        if (!real)
                real = (pwritev_fn)next("pwritev");
        AROUND(fd, iov, n, real(fd, iov, n, off));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off) {
        static pwritev64_fn real;
        if (!real)
                real = (pwritev64_fn)next("pwritev64");
        AROUND(fd, iov, n, real(fd, iov, n, off));
}

/* WHEN_SYNCED: the sync of the matched descriptor is the point. */
static int after_sync(int fd, int r) {
        if (cp.synced_fd >= 0 && fd == cp.synced_fd && getpid() == cp.pid)
                crash(fd, "synced");
        return r;
}

int fsync(int fd) {
        static sync_fn real;
        if (!real)
                real = (sync_fn)next("fsync");
        return after_sync(fd, real(fd));
}

int fdatasync(int fd) {
        static sync_fn real;
        if (!real)
                real = (sync_fn)next("fdatasync");
        return after_sync(fd, real(fd));
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "run_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/number.h"
#include "glove/base/time.h"
#include "launch.h"

void glove_limits_resolve(const struct glove_exec_options *opts, struct glove_limits *out) {
        struct glove_cgroup_limits d;
        glove_cgroup_limits_default(&d);
        *out = (struct glove_limits){
                .cpu_time_ms = opts->cpu_time_ms ? opts->cpu_time_ms : d.cpu_time_ms,
                .memory_bytes = opts->memory_bytes ? opts->memory_bytes : d.memory_bytes,
                .pids = opts->pids ? opts->pids : d.pids,
                .wall_time_ms = opts->wall_time_ms, /* 0: no wall-time limit by default */
                .disk_bytes = opts->disk_bytes ? opts->disk_bytes : GLOVE_LIMITS_DEFAULT_DISK,
                .output_bytes = opts->output_bytes ? opts->output_bytes : GLOVE_LIMITS_DEFAULT_OUTPUT,
                .cgroup_explicit = opts->cpu_time_ms || opts->memory_bytes || opts->pids,
        };
}

static int attach_after_clone(pid_t pid, void *ctx, struct glove_error *err) {
        struct glove_watch *w = ctx;
        return glove_cgroup_attach(w->cg, pid, err);
}

/* A whole number from a small /proc file; 0 or -errno. */
static int read_u64_file(const char *path, uint64_t *out) {
        char buf[32];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -EIO;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                n--;
        buf[n] = '\0';
        return glove_number_parse_u64(buf, 0, 0, UINT64_MAX, out) < 0 ? -EINVAL : 0;
}

int glove_watch_setup(struct glove_watch *w, const struct glove_limits *limits, struct glove_sandbox_config *cfg,
                      struct glove_error *err) {
        memset(w, 0, sizeof(*w));
        w->limits = *limits;
        atomic_store(&w->breach, GLOVE_CGROUP_LIMIT_NONE);
        cfg->disk_bytes = limits->disk_bytes;
        cfg->cpu_time_ms = limits->cpu_time_ms;
        /* Half of the invoker's per-user inotify limits for the sandbox. */
        uint64_t v;
        if (read_u64_file("/proc/sys/user/max_inotify_instances", &v) == 0 && v >= 2)
                cfg->inotify_instances = (uint32_t)(v / 2 > UINT32_MAX ? UINT32_MAX : v / 2);
        if (read_u64_file("/proc/sys/user/max_inotify_watches", &v) == 0 && v >= 2)
                cfg->inotify_watches = (uint32_t)(v / 2 > UINT32_MAX ? UINT32_MAX : v / 2);
        cfg->cgroup_fd = -1;
        struct glove_cgroup_limits cl = {limits->memory_bytes, limits->pids, limits->cpu_time_ms};
        struct glove_error cerr = {0};
        int r = glove_cgroup_create(&cl, &w->cg, &cerr);
        if (r < 0) {
                bool absent = cerr.code && (strcmp(cerr.code, "cgroup.not_delegated") == 0 ||
                                            strcmp(cerr.code, "cgroup.unavailable") == 0);
                if (!absent || limits->cgroup_explicit)
                        return glove_error_set(err, cerr.errnum, cerr.code, "%s%s", cerr.message,
                                               absent ? "; --memory, --pids and --cpu-time need a delegated cgroup" : "");
                fprintf(stderr, "glove: warning: limits.degraded: no delegated cgroup for uid %u: memory and pids not limited, "
                                "CPU time per process only (docs/limits.md)\n", (unsigned)geteuid());
                w->cg = NULL;
                return 0;
        }
        int fd = glove_cgroup_clone_fd(w->cg);
        if (fd >= 0) {
                cfg->cgroup_fd = fd;
        } else {
                w->attach_after_clone = true;
                cfg->cgroupns_after_release = true;
                cfg->after_clone = attach_after_clone;
                cfg->after_clone_ctx = w;
        }
        return 0;
}

int glove_watch_attach(struct glove_watch *w, struct glove_sandbox *sb, struct glove_error *err) {
        (void)err;
        w->sb = sb; /* PID 1 was attached by attach_after_clone during the spawn */
        return 0;
}

void glove_watch_breach(struct glove_watch *w, enum glove_cgroup_limit limit) {
        int none = GLOVE_CGROUP_LIMIT_NONE;
        if (!atomic_compare_exchange_strong(&w->breach, &none, (int)limit))
                return;
        /* PID 1's death tears the PID namespace down; the cgroup kill takes
         * anything else charged to the run. */
        if (w->sb)
                (void)glove_sandbox_signal(w->sb, SIGKILL);
        if (w->cg)
                (void)glove_cgroup_kill(w->cg, NULL);
}

size_t glove_watch_output(struct glove_watch *w, size_t n) {
        uint64_t before = atomic_fetch_add(&w->output_bytes, n);
        uint64_t limit = w->limits.output_bytes;
        if (before + n <= limit)
                return n;
        glove_watch_breach(w, GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT);
        return before >= limit ? 0 : (size_t)(limit - before);
}

int glove_watch_poll(struct glove_watch *w) {
        int next = GLOVE_LIMITS_POLL_MS;
        if (atomic_load(&w->breach) != GLOVE_CGROUP_LIMIT_NONE)
                return next;
        if (w->limits.wall_time_ms && w->start_us) {
                uint64_t elapsed_ms = (glove_time_monotonic_us() - w->start_us) / 1000;
                if (elapsed_ms >= w->limits.wall_time_ms) {
                        glove_watch_breach(w, GLOVE_CGROUP_LIMIT_WALL_TIME);
                        return next;
                }
                if (w->limits.wall_time_ms - elapsed_ms < (uint64_t)next)
                        next = (int)(w->limits.wall_time_ms - elapsed_ms) + 1;
        }
        if (w->cg) {
                struct glove_cgroup_stats st;
                if (glove_cgroup_stats(w->cg, &st, NULL) == 0) {
                        enum glove_cgroup_limit b = glove_cgroup_breach(w->cg, &st);
                        if (b != GLOVE_CGROUP_LIMIT_NONE)
                                glove_watch_breach(w, b);
                }
        }
        return next;
}

void glove_watch_finish(struct glove_watch *w, const struct glove_sandbox_outcome *o, const char *program, bool report,
                        struct glove_run_status *st) {
        memset(st, 0, sizeof(*st));
        st->signal = -1;
        st->wall_time_ms = w->start_us ? (glove_time_monotonic_us() - w->start_us) / 1000 : 0;
        if (w->cg) {
                struct glove_cgroup_stats cs;
                if (glove_cgroup_stats(w->cg, &cs, NULL) == 0) {
                        st->cpu_time_ms = cs.cpu_usage_ns / 1000000;
                        st->peak_memory_bytes = cs.memory_peak_bytes;
                        enum glove_cgroup_limit b = glove_cgroup_breach(w->cg, &cs);
                        if (b != GLOVE_CGROUP_LIMIT_NONE) {
                                int none = GLOVE_CGROUP_LIMIT_NONE;
                                atomic_compare_exchange_strong(&w->breach, &none, (int)b);
                        }
                }
                struct glove_error derr = {0};
                if (glove_cgroup_destroy(w->cg, &derr) < 0)
                        fprintf(stderr, "glove: warning: %s: %s\n", derr.code, derr.message);
                w->cg = NULL;
        } else {
                /* Without a cgroup: PID 1 and everything it reaped. */
                struct rusage ru;
                if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
                        st->cpu_time_ms = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                                          (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
                        st->peak_memory_bytes = (uint64_t)ru.ru_maxrss * 1024;
                }
                /* The per-process RLIMIT_CPU backstop kills with SIGXCPU/SIGKILL. */
                if (o->kind == GLOVE_SANDBOX_SIGNALED && (o->value == SIGXCPU) && w->limits.cpu_time_ms) {
                        int none = GLOVE_CGROUP_LIMIT_NONE;
                        atomic_compare_exchange_strong(&w->breach, &none, (int)GLOVE_CGROUP_LIMIT_CPU_TIME);
                }
        }
        st->output_bytes = atomic_load(&w->output_bytes);
        int breach = atomic_load(&w->breach);
        if (breach == GLOVE_CGROUP_LIMIT_NONE && o->disk_full)
                st->limit = "disk"; /* reached by ENOSPC inside; nothing was killed */
        if (o->kind == GLOVE_SANDBOX_SIGNALED)
                st->signal = o->value;
        else if (o->kind == GLOVE_SANDBOX_LOST && breach != GLOVE_CGROUP_LIMIT_NONE)
                st->signal = SIGKILL; /* Glove killed the tree before PID 1 could report */
        if (breach != GLOVE_CGROUP_LIMIT_NONE) {
                st->limit = glove_cgroup_limit_name((enum glove_cgroup_limit)breach);
                st->exit_code = 137;
                if (report)
                        fprintf(stderr, "glove: limits.%s: %s exceeded its %s limit; the whole sandbox was killed\n", st->limit, program,
                        st->limit);
                return;
        }
        if (report)
                st->exit_code = glove_launch_outcome_status(o, program);
        else
                st->exit_code = GLOVE_EXIT_FAILURE;
}

json_t *glove_run_status_json(const struct glove_run_status *st) {
        return json_pack("{s:i,s:o,s:o,s:I,s:I,s:I,s:I}", "exit_code", st->exit_code, "signal",
                         st->signal >= 0 ? json_integer(st->signal) : json_null(), "limit",
                         st->limit ? json_string(st->limit) : json_null(), "cpu_time_ms", (json_int_t)st->cpu_time_ms,
                         "peak_memory_bytes", (json_int_t)st->peak_memory_bytes, "wall_time_ms", (json_int_t)st->wall_time_ms,
                         "output_bytes", (json_int_t)st->output_bytes);
}

int glove_run_status_write(int dirfd, const char *path, const struct glove_run_status *st, struct glove_error *err) {
        _cleanup_json_ json_t *j = glove_run_status_json(st);
        _cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (!text)
                return glove_error_set(err, ENOMEM, "status.write", "cannot encode the status");
        struct stat existing;
        if (fstatat(dirfd, path, &existing, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(existing.st_mode))
                return glove_error_set(err, EINVAL, "status.file_type", "--status-json %s: exists and is not a regular file", path);
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
                return glove_error_set(err, ENOMEM, "status.write", "out of memory");
        _cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return glove_error_set(err, errno, "status.write", "--status-json %s: %s", path, strerror(errno));
        int r = glove_fd_write_all(fd, text, strlen(text));
        if (r == 0)
                r = glove_fd_write_all(fd, "\n", 1);
        if (r == 0 && renameat(dirfd, tmp, dirfd, path) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(dirfd, tmp, 0);
                return glove_error_set(err, -r, "status.write", "--status-json %s: %s", path, strerror(-r));
        }
        return 0;
}

void glove_watch_free(struct glove_watch *w) {
        if (w->cg) {
                (void)glove_cgroup_destroy(w->cg, NULL);
                w->cg = NULL;
        }
}

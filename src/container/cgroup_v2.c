/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v2 backend: one directory in the unified hierarchy. See
 * include/glove/container/cgroup.h and docs/limits.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/time.h"

/* How long freezing may take before the kill goes on without it. */
#define FREEZE_WAIT_MS 200

static int limit_error(struct glove_error *err, const struct cg_dir *d, const char *file, int r) {
        return glove_error_set(err, -r, "cgroup.limit", "cannot write %s/%s: %s", d->path, file, strerror(-r));
}

/* The controllers the new cgroup actually has, as roles. */
static int present_roles(const struct cg_dir *d, unsigned *roles) {
        char list[1024];
        ssize_t n = cg_file_read(d->fd, "cgroup.controllers", list, sizeof(list));
        if (n < 0)
                return (int)n;
        *roles = CG_ROLE_CPUACCT; /* cpu.stat usage_usec exists without the cpu controller */
        if (cg_words_contain(list, "memory", ' '))
                *roles |= CG_ROLE_MEMORY;
        if (cg_words_contain(list, "pids", ' '))
                *roles |= CG_ROLE_PIDS;
        if (cg_words_contain(list, "cpu", ' '))
                *roles |= CG_ROLE_CPU;
        return 0;
}

int cg_v2_enable_controllers(int site_fd, unsigned roles, const char *site_path, struct glove_error *err) {
        char words[64];
        snprintf(words, sizeof(words), "%s%s%s", (roles & CG_ROLE_MEMORY) ? "+memory " : "",
                 (roles & CG_ROLE_PIDS) ? "+pids " : "", (roles & CG_ROLE_CPU) ? "+cpu " : "");
        if (!words[0])
                return 0;
        /* site_fd is O_PATH: open the file beneath it for writing. */
        int r = cg_file_write(site_fd, "cgroup.subtree_control", words);
        if (r < 0)
                return glove_error_set(err, -r, "cgroup.create", "cannot enable %sin %s/cgroup.subtree_control: %s",
                                       words, site_path, strerror(-r));
        return 0;
}

int cg_v2_configure(struct glove_cgroup *cg, struct glove_error *err) {
        struct cg_dir *d = &cg->dirs[0];
        unsigned have = 0;
        int r = present_roles(d, &have);
        if (r < 0)
                return glove_error_set(err, -r, "cgroup.create", "cannot read %s/cgroup.controllers: %s", d->path,
                                       strerror(-r));
        if ((d->roles & have) != d->roles)
                return glove_error_set(err, EOPNOTSUPP, "cgroup.create",
                                       "%s lacks a controller the probe found (memory, pids, cpu)", d->path);
        d->roles = have;
        if (have & CG_ROLE_MEMORY) {
                r = cg_file_write_u64(d->fd, "memory.max", cg->limits.memory_bytes);
                if (r < 0)
                        return limit_error(err, d, "memory.max", r);
                /* Absent when swap accounting is off (no swap controller). */
                if (cg_file_exists(d->fd, "memory.swap.max")) {
                        r = cg_file_write(d->fd, "memory.swap.max", "0");
                        if (r < 0)
                                return limit_error(err, d, "memory.swap.max", r);
                        cg->swap_limited = true;
                }
                cg->memory_peak = cg_file_exists(d->fd, "memory.peak"); /* Linux 5.19+ */
        }
        if (have & CG_ROLE_PIDS) {
                r = cg_file_write_u64(d->fd, "pids.max", cg->limits.pids);
                if (r < 0)
                        return limit_error(err, d, "pids.max", r);
        }
        cg->kill_file = cg_file_exists(d->fd, "cgroup.kill");   /* Linux 5.14+ */
        cg->freezer = cg_file_exists(d->fd, "cgroup.freeze");   /* Linux 5.2+ */
        return 0;
}

static int stat_error(struct glove_error *err, const struct cg_dir *d, const char *file, int r) {
        return glove_error_set(err, -r, "cgroup.stat", "cannot read %s/%s: %s", d->path, file, strerror(-r));
}

int cg_v2_stats(struct glove_cgroup *cg, struct glove_cgroup_stats *out, struct glove_error *err) {
        struct cg_dir *d = &cg->dirs[0];
        uint64_t usec = 0;
        int r = cg_file_read_key(d->fd, "cpu.stat", "usage_usec", &usec);
        if (r < 0)
                return stat_error(err, d, "cpu.stat", r);
        out->cpu_usage_ns = usec > UINT64_MAX / 1000 ? UINT64_MAX : usec * 1000;
        if (d->roles & CG_ROLE_MEMORY) {
                r = cg_file_read_u64(d->fd, "memory.current", &out->memory_current_bytes);
                if (r < 0)
                        return stat_error(err, d, "memory.current", r);
                if (cg->memory_peak) {
                        r = cg_file_read_u64(d->fd, "memory.peak", &out->memory_peak_bytes);
                        if (r < 0)
                                return stat_error(err, d, "memory.peak", r);
                }
                if (out->memory_current_bytes > cg->peak_seen)
                        cg->peak_seen = out->memory_current_bytes;
                if (cg->peak_seen > out->memory_peak_bytes)
                        out->memory_peak_bytes = cg->peak_seen;
                r = cg_file_read_key(d->fd, "memory.events", "oom_kill", &out->oom_kills);
                if (r < 0)
                        return stat_error(err, d, "memory.events", r);
        }
        if (d->roles & CG_ROLE_PIDS) {
                r = cg_file_read_u64(d->fd, "pids.current", &out->pids_current);
                if (r < 0)
                        return stat_error(err, d, "pids.current", r);
                r = cg_file_read_key(d->fd, "pids.events", "max", &out->pids_max_events);
                if (r < 0)
                        return stat_error(err, d, "pids.events", r);
        } else {
                /* Without the pids controller (tests only): processes listed. */
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;
                r = cg_file_read_pids(d->fd, &pids, &n);
                if (r < 0)
                        return stat_error(err, d, "cgroup.procs", r);
                out->pids_current = n;
        }
        return 0;
}

int cg_v2_freeze(struct glove_cgroup *cg, bool frozen) {
        struct cg_dir *d = &cg->dirs[0];
        int r = cg_file_write(d->fd, "cgroup.freeze", frozen ? "1" : "0");
        if (r < 0 || !frozen)
                return r;
        uint64_t deadline = glove_time_monotonic_ms() + FREEZE_WAIT_MS;
        for (;;) {
                uint64_t f = 0;
                r = cg_file_read_key(d->fd, "cgroup.events", "frozen", &f);
                if (r < 0)
                        return r;
                if (f == 1)
                        return 0;
                if (glove_time_monotonic_ms() >= deadline)
                        return -ETIMEDOUT;
                struct timespec ts = {.tv_nsec = 1000000L};
                nanosleep(&ts, NULL);
        }
}

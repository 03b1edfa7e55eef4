/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v1 backend: one directory per hierarchy (memory, pids, cpuacct,
 * and the optional cpu and freezer). See include/glove/container/cgroup.h
 * and docs/limits.md. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cgroup_internal.h"
#include "glove/base/time.h"

/* How long freezing may take before the kill goes on without it. */
#define FREEZE_WAIT_MS 200

static int limit_error(struct glove_error *err, const struct cg_dir *d, const char *file, int r) {
        return glove_error_set(err, -r, "cgroup.limit", "cannot write %s/%s: %s", d->path, file, strerror(-r));
}

int cg_v1_configure(struct glove_cgroup *cg, struct glove_error *err) {
        struct cg_dir *mem = cg_dir_with(cg, CG_ROLE_MEMORY);
        struct cg_dir *pids = cg_dir_with(cg, CG_ROLE_PIDS);
        if (!mem || !pids || !cg_dir_with(cg, CG_ROLE_CPUACCT))
                return glove_error_set(err, EINVAL, "cgroup.create", "v1: a required hierarchy is missing");
        /* A child inherits oom_kill_disable from its parent: with it set, a
         * task at the limit would hang instead of being killed. */
        int r = cg_file_write(mem->fd, "memory.oom_control", "0");
        if (r < 0)
                return limit_error(err, mem, "memory.oom_control", r);
        r = cg_file_write_u64(mem->fd, "memory.limit_in_bytes", cg->limits.memory_bytes);
        if (r < 0)
                return limit_error(err, mem, "memory.limit_in_bytes", r);
        /* RAM plus swap together never exceed the limit (the file exists
         * only with swap accounting), and the cgroup does not swap. */
        if (cg_file_exists(mem->fd, "memory.memsw.limit_in_bytes")) {
                r = cg_file_write_u64(mem->fd, "memory.memsw.limit_in_bytes", cg->limits.memory_bytes);
                if (r < 0)
                        return limit_error(err, mem, "memory.memsw.limit_in_bytes", r);
                cg->swap_limited = true;
        }
        /* Socket buffers are not in memory.limit_in_bytes on v1: a run could
         * queue hundreds of megabytes in loopback TCP connections of its own
         * network namespace, charged to nobody but the host-wide TCP memory
         * (net.ipv4.tcp_mem) every host socket shares. Writing the TCP limit
         * turns on TCP accounting for this cgroup; past it, sends block or
         * fail with EAGAIN and receive queues stop growing. */
        if (cg_file_exists(mem->fd, "memory.kmem.tcp.limit_in_bytes")) {
                r = cg_file_write_u64(mem->fd, "memory.kmem.tcp.limit_in_bytes",
                                      glove_cgroup_tcp_memory_bytes(cg->limits.memory_bytes));
                if (r < 0)
                        return limit_error(err, mem, "memory.kmem.tcp.limit_in_bytes", r);
        }
        r = cg_file_write(mem->fd, "memory.swappiness", "0");
        if (r < 0)
                return limit_error(err, mem, "memory.swappiness", r);
        r = cg_file_write_u64(pids->fd, "pids.max", cg->limits.pids);
        if (r < 0)
                return limit_error(err, pids, "pids.max", r);
        cg->memory_peak = cg_file_exists(mem->fd, "memory.max_usage_in_bytes");
        cg->freezer = cg_dir_with(cg, CG_ROLE_FREEZER) != NULL;
        cg->kill_file = false;
        return 0;
}

static int stat_error(struct glove_error *err, const struct cg_dir *d, const char *file, int r) {
        return glove_error_set(err, -r, "cgroup.stat", "cannot read %s/%s: %s", d->path, file, strerror(-r));
}

int cg_v1_stats(struct glove_cgroup *cg, struct glove_cgroup_stats *out, struct glove_error *err) {
        struct cg_dir *mem = cg_dir_with(cg, CG_ROLE_MEMORY);
        struct cg_dir *pids = cg_dir_with(cg, CG_ROLE_PIDS);
        struct cg_dir *cpu = cg_dir_with(cg, CG_ROLE_CPUACCT);
        int r = cg_file_read_u64(cpu->fd, "cpuacct.usage", &out->cpu_usage_ns);
        if (r < 0)
                return stat_error(err, cpu, "cpuacct.usage", r);
        r = cg_file_read_u64(mem->fd, "memory.usage_in_bytes", &out->memory_current_bytes);
        if (r < 0)
                return stat_error(err, mem, "memory.usage_in_bytes", r);
        if (cg->memory_peak) {
                r = cg_file_read_u64(mem->fd, "memory.max_usage_in_bytes", &out->memory_peak_bytes);
                if (r < 0)
                        return stat_error(err, mem, "memory.max_usage_in_bytes", r);
        }
        if (out->memory_current_bytes > cg->peak_seen)
                cg->peak_seen = out->memory_current_bytes;
        if (cg->peak_seen > out->memory_peak_bytes)
                out->memory_peak_bytes = cg->peak_seen;
        r = cg_file_read_key(mem->fd, "memory.oom_control", "oom_kill", &out->oom_kills);
        if (r == -ENOENT) {
                /* Before Linux 4.13 there is no count: under_oom is the sign. */
                uint64_t under = 0;
                r = cg_file_read_key(mem->fd, "memory.oom_control", "under_oom", &under);
                out->oom_kills = under ? 1 : 0;
        }
        if (r < 0)
                return stat_error(err, mem, "memory.oom_control", r);
        r = cg_file_read_u64(pids->fd, "pids.current", &out->pids_current);
        if (r < 0)
                return stat_error(err, pids, "pids.current", r);
        r = cg_file_read_key(pids->fd, "pids.events", "max", &out->pids_max_events);
        if (r < 0)
                return stat_error(err, pids, "pids.events", r);
        return 0;
}

int cg_v1_freeze(struct glove_cgroup *cg, bool frozen) {
        struct cg_dir *fz = cg_dir_with(cg, CG_ROLE_FREEZER);
        if (!fz)
                return 0;
        int r = cg_file_write(fz->fd, "freezer.state", frozen ? "FROZEN\n" : "THAWED\n");
        if (r < 0 || !frozen)
                return r;
        /* Reads FREEZING until every task stopped; a task in an
         * uninterruptible sleep may hold it there, so the wait is bounded. */
        uint64_t deadline = glove_time_monotonic_ms() + FREEZE_WAIT_MS;
        for (;;) {
                char state[32];
                ssize_t n = cg_file_read(fz->fd, "freezer.state", state, sizeof(state));
                if (n < 0)
                        return (int)n;
                if (strncmp(state, "FROZEN", 6) == 0)
                        return 0;
                if (glove_time_monotonic_ms() >= deadline)
                        return -ETIMEDOUT;
                struct timespec ts = {.tv_nsec = 1000000L};
                nanosleep(&ts, NULL);
        }
}

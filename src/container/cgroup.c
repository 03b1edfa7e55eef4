/* SPDX-License-Identifier: Apache-2.0 */
/* The run cgroup: creation, attaching, stats dispatch, kill and removal.
 * Backend specifics live in cgroup_v1.c and cgroup_v2.c, the probe in
 * cgroup_probe.c (include/glove/container/cgroup.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/time.h"
#include "glove/base/random.h"

#define DEFAULT_MEMORY_FLOOR (UINT64_C(256) << 20)

void glove_cgroup_limits_default(struct glove_cgroup_limits *out) {
        uint64_t mem = GLOVE_CGROUP_DEFAULT_MEMORY_CAP;
        struct sysinfo si;
        if (sysinfo(&si) == 0 && si.mem_unit > 0) {
                uint64_t half = (uint64_t)si.totalram / 2;
                if (half <= UINT64_MAX / si.mem_unit && half * si.mem_unit < mem)
                        mem = half * si.mem_unit;
        }
        if (mem < DEFAULT_MEMORY_FLOOR)
                mem = DEFAULT_MEMORY_FLOOR;
        *out = (struct glove_cgroup_limits){
                .memory_bytes = mem,
                .pids = GLOVE_CGROUP_DEFAULT_PIDS,
                .cpu_time_ms = GLOVE_CGROUP_DEFAULT_CPU_TIME_MS,
        };
}

uint64_t glove_cgroup_tcp_memory_bytes(uint64_t memory_bytes) {
        uint64_t tcp = memory_bytes / 4;
        if (tcp > GLOVE_CGROUP_TCP_MEMORY_CAP)
                tcp = GLOVE_CGROUP_TCP_MEMORY_CAP;
        return tcp & ~UINT64_C(4095);
}

static int check_one(const char *field, uint64_t v, uint64_t lo, uint64_t hi, struct glove_error *err) {
        if (v >= lo && v <= hi)
                return 0;
        return glove_error_set(err, EINVAL, "cgroup.invalid_limit",
                               "%s %" PRIu64 " is outside %" PRIu64 "..%" PRIu64 "%s", field, v, lo, hi,
                               v == 0 ? " (there is no unlimited)" : "");
}

int glove_cgroup_limits_check(const struct glove_cgroup_limits *l, struct glove_error *err) {
        if (!l)
                return glove_error_set(err, EINVAL, "cgroup.invalid_limit", "no limits given");
        int r = check_one("memory_bytes", l->memory_bytes, GLOVE_CGROUP_MEMORY_MIN, GLOVE_CGROUP_MEMORY_MAX, err);
        if (r == 0)
                r = check_one("pids", l->pids, GLOVE_CGROUP_PIDS_MIN, GLOVE_CGROUP_PIDS_MAX, err);
        if (r == 0)
                r = check_one("cpu_time_ms", l->cpu_time_ms, GLOVE_CGROUP_CPU_TIME_MS_MIN,
                              GLOVE_CGROUP_CPU_TIME_MS_MAX, err);
        return r;
}

struct cg_dir *cg_dir_with(struct glove_cgroup *cg, unsigned role) {
        for (size_t i = 0; i < cg->ndirs; i++)
                if (cg->dirs[i].roles & role)
                        return &cg->dirs[i];
        return NULL;
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
}

/* Closes what remains open and frees cg. */
static void cg_free(struct glove_cgroup *cg) {
        for (size_t i = 0; i < cg->ndirs; i++) {
                glove_closep(&cg->dirs[i].fd);
                glove_closep(&cg->dirs[i].parent_fd);
        }
        free(cg);
}

/* One rmdir attempt on every directory not yet removed (children of the
 * hierarchy last made first). A removed one has both descriptors closed
 * (-1). Returns 0 when all are gone, -EAGAIN when one is still busy
 * (*busy names the first, err untouched), or the first other -errno with
 * its path in err. */
static int rmdir_pass(struct glove_cgroup *cg, const char **busy, struct glove_error *err) {
        int ret = 0;
        *busy = NULL;
        for (size_t i = cg->ndirs; i-- > 0;) {
                struct cg_dir *d = &cg->dirs[i];
                if (d->parent_fd < 0)
                        continue;
                if (unlinkat(d->parent_fd, cg->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
                        int e = errno;
                        /* A cgroup whose last tasks are still exiting is briefly busy. */
                        if (e == EBUSY) {
                                if (!*busy)
                                        *busy = d->path;
                                continue;
                        }
                        if (ret == 0)
                                ret = glove_error_set(err, e, "cgroup.busy", "cannot remove cgroup %s: %s", d->path,
                                                      strerror(e));
                        continue;
                }
                glove_closep(&d->fd);
                glove_closep(&d->parent_fd);
                d->fd = d->parent_fd = -1;
        }
        if (ret < 0)
                return ret;
        return *busy ? -EAGAIN : 0;
}

/* Removes the directories, retrying busy ones for up to
 * GLOVE_CGROUP_RMDIR_TIMEOUT_MS, and frees cg. Returns 0 or the first
 * -errno, with the path in err. */
static int remove_dirs(struct glove_cgroup *cg, struct glove_error *err) {
        uint64_t deadline = glove_time_monotonic_ms() + GLOVE_CGROUP_RMDIR_TIMEOUT_MS; /* for all of them */
        unsigned pause = 1;
        const char *busy = NULL;
        int r;
        while ((r = rmdir_pass(cg, &busy, err)) == -EAGAIN) {
                if (glove_time_monotonic_ms() >= deadline) {
                        r = glove_error_set(err, EBUSY, "cgroup.busy", "cannot remove cgroup %s: %s", busy,
                                            strerror(EBUSY));
                        break;
                }
                sleep_ms(pause);
                pause = pause < 16 ? pause * 2 : 16;
        }
        cg_free(cg);
        return r;
}

static int make_name(char name[GLOVE_CGROUP_NAME_MAX]) {
        uint8_t rnd[8];
        int r = glove_random_bytes(rnd, sizeof(rnd));
        if (r < 0)
                return r;
        int n = snprintf(name, GLOVE_CGROUP_NAME_MAX, "glove-%d-", (int)getpid());
        for (size_t i = 0; i < sizeof(rnd); i++)
                n += snprintf(name + n, (size_t)(GLOVE_CGROUP_NAME_MAX - n), "%02x", rnd[i]);
        return 0;
}

static bool refusal(int e) {
        return e == EACCES || e == EPERM || e == EROFS;
}

/* Whether NAME is a run cgroup name (glove-<pid>-<16 hex>, make_name) and,
 * if so, its pid. */
static bool run_cgroup_name(const char *name, pid_t *pid) {
        if (strncmp(name, "glove-", 6) != 0)
                return false;
        const char *p = name + 6;
        long v = 0;
        size_t digits = 0;
        for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
                v = v * 10 + (*p - '0');
        if (digits == 0 || *p != '-' || v <= 0 || v > INT32_MAX)
                return false;
        p++;
        size_t hex = 0;
        for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
                hex++;
        if (hex != 16 || *p != '\0')
                return false;
        *pid = (pid_t)v;
        return true;
}

/* When this process started, as CLOCK_REALTIME seconds (0 when unknown):
 * /proc/self/stat field 22 (clock ticks after boot) plus the boot time. */
static int64_t self_start_realtime(void) {
        char buf[1024];
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        unsigned long long ticks = 0;
        /* After ")": field 3 (state) is the first; starttime is field 22. */
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                         &ticks) != 1)
                return 0;
        struct timespec rt, bt;
        long hz = sysconf(_SC_CLK_TCK);
        if (hz <= 0 || clock_gettime(CLOCK_REALTIME, &rt) < 0 || clock_gettime(CLOCK_BOOTTIME, &bt) < 0)
                return 0;
        return (int64_t)rt.tv_sec - (int64_t)bt.tv_sec + (int64_t)(ticks / (unsigned long long)hz);
}

/* Leftover run cgroups found by sweep_scan (at most this many per run). */
#define SWEEP_MAX 32

struct sweep {
        /* SWEEP_MAX leftovers of other pids, and room for those of this
         * process's own (reused) pid, which are found even past the bound. */
        char names[SWEEP_MAX + 4][GLOVE_CGROUP_NAME_MAX];
        size_t n;
};

/* Finds the run cgroups of Glove processes that are gone (killed with
 * SIGKILL before they could remove their own) in one site: entries named
 * like make_name's whose pid does not exist. Reads the directory with
 * getdents64 (bounded to 64 KiB of entries). Best effort: nothing here
 * fails the run. */
static void sweep_scan(int site_fd, struct sweep *sw) {
        sw->n = 0;
        int fd = openat(site_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        _Alignas(8) char buf[16384];
        int64_t start = 0;
        for (int rounds = 0; rounds < 4 && sw->n < SWEEP_MAX + 4; rounds++) {
                long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (long off = 0; off < n && sw->n < SWEEP_MAX + 4;) {
                        struct dirent64 *e = (struct dirent64 *)(buf + off);
                        off += e->d_reclen;
                        pid_t pid;
                        if (e->d_type != DT_DIR || !run_cgroup_name(e->d_name, &pid))
                                continue;
                        if (pid == getpid()) {
                                /* A leftover of an earlier process that had
                                 * this pid: made before this one started
                                 * (with a second of margin; this process's
                                 * own run cgroups are never older). */
                                struct stat st;
                                if (start == 0 && (start = self_start_realtime()) == 0)
                                        continue;
                                if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                                    (int64_t)st.st_mtime >= start - 1)
                                        continue;
                        } else if (sw->n >= SWEEP_MAX || kill(pid, 0) == 0 || errno != ESRCH) {
                                continue; /* alive (or not ours to judge), or the bound */
                        }
                        size_t len = strlen(e->d_name);
                        if (len < GLOVE_CGROUP_NAME_MAX)
                                memcpy(sw->names[sw->n++], e->d_name, len + 1);
                }
        }
        close(fd);
}

/* Removes the leftovers sw names from one site. rmdir(2) removes only an
 * empty cgroup (no process, no child), so one still in use stays. */
static void sweep_remove(int site_fd, const struct sweep *sw) {
        for (size_t i = 0; i < sw->n; i++)
                (void)unlinkat(site_fd, sw->names[i], AT_REMOVEDIR);
}

/* Creates cg->name in site, taking over the site's descriptor. */
static int make_dir(struct glove_cgroup *cg, struct cg_site *site, struct glove_error *err) {
        struct cg_dir *d = &cg->dirs[cg->ndirs];
        char path[sizeof(d->path)];
        int n = snprintf(path, sizeof(path), "%s/%s", site->path, cg->name);
        if (n < 0 || (size_t)n >= sizeof(path))
                return glove_error_set(err, ENAMETOOLONG, "cgroup.create", "the cgroup path under %s is too long",
                                       site->path);
        if (mkdirat(site->fd, cg->name, 0755) < 0) {
                int e = errno;
                if (refusal(e))
                        return glove_error_set(err, e, "cgroup.not_delegated",
                                               "cannot create a cgroup in %s: %s (cgroups are not delegated to uid %u)",
                                               site->path, strerror(e), (unsigned)geteuid());
                return glove_error_set(err, e, "cgroup.create", "cannot create a cgroup in %s: %s", site->path,
                                       strerror(e));
        }
        d->parent_fd = TAKE_FD(site->fd);
        d->fd = -1;
        d->roles = site->roles;
        memcpy(d->path, path, sizeof(d->path));
        cg->ndirs++;
        d->fd = openat(d->parent_fd, cg->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d->fd < 0)
                return glove_error_set(err, errno, "cgroup.create", "cannot open %s: %s", d->path, strerror(errno));
        return 0;
}

/* The plan's site must be the pinned v2 directory (gloved's delegated
 * parent): a directory removed and made again at the same path, or a
 * process moved elsewhere, would otherwise put run cgroups in a place
 * gloved did not check. */
static int check_pin(const struct cg_plan *plan, const struct glove_cgroup_pin *pin, struct glove_error *err) {
        struct stat st;
        if (plan->backend != GLOVE_CGROUP_BACKEND_V2 || plan->nsites != 1)
                return glove_error_set(err, ESTALE, "cgroup.parent_replaced",
                                       "run cgroups would go to %s (%s), not to the pinned delegated parent",
                                       plan->nsites ? plan->sites[0].path : "nowhere",
                                       plan->backend == GLOVE_CGROUP_BACKEND_V1 ? "cgroup v1" : "cgroup v2");
        if (fstat(plan->sites[0].fd, &st) < 0)
                return glove_error_set(err, errno, "cgroup.create", "cannot stat %s: %s", plan->sites[0].path,
                                       strerror(errno));
        if ((uint64_t)st.st_dev != pin->dev || (uint64_t)st.st_ino != pin->ino)
                return glove_error_set(err, ESTALE, "cgroup.parent_replaced",
                                       "%s is not the delegated parent gloved pinned (device %" PRIu64 " inode %" PRIu64
                                       ", pinned device %" PRIu64 " inode %" PRIu64 ")",
                                       plan->sites[0].path, (uint64_t)st.st_dev, (uint64_t)st.st_ino, pin->dev,
                                       pin->ino);
        return 0;
}

int cg_create(const struct glove_cgroup_limits *limits, const struct cg_options *opts, struct glove_cgroup **out,
              struct glove_error *err) {
        *out = NULL;
        int r = glove_cgroup_limits_check(limits, err);
        if (r < 0)
                return r;
        struct cg_plan plan;
        struct glove_cgroup_probe probe;
        r = cg_plan_make(&plan, opts, &probe, err);
        if (r == 0 && opts->pin && opts->pin->set)
                r = check_pin(&plan, opts->pin, err);
        if (r < 0) {
                cg_plan_clear(&plan);
                return r;
        }
        struct glove_cgroup *cg = calloc(1, sizeof(*cg));
        if (!cg) {
                cg_plan_clear(&plan);
                return glove_error_set(err, ENOMEM, "cgroup.create", "out of memory");
        }
        cg->backend = plan.backend;
        cg->limits = *limits;
        r = make_name(cg->name);
        if (r < 0)
                glove_error_set(err, -r, "cgroup.create", "getrandom: %s", strerror(-r));
        /* Leftovers of a Glove killed with SIGKILL, in every site: a
         * leftover can be gone from one hierarchy and still be in another
         * (its processes left one before the other, or an earlier sweep
         * removed it from the first only), so each site is read. */
        struct sweep sw = {.n = 0};
        for (size_t i = 0; r == 0 && i < plan.nsites; i++) {
                sweep_scan(plan.sites[i].fd, &sw);
                sweep_remove(plan.sites[i].fd, &sw);
                if (plan.sites[i].enable_controllers)
                        r = cg_v2_enable_controllers(plan.sites[i].fd, plan.sites[i].roles, plan.sites[i].path, err);
                if (r == 0)
                        r = make_dir(cg, &plan.sites[i], err);
        }
        cg_plan_clear(&plan);
        if (r == 0)
                r = cg->backend == GLOVE_CGROUP_BACKEND_V2 ? cg_v2_configure(cg, err) : cg_v1_configure(cg, err);
        if (r < 0) {
                (void)remove_dirs(cg, NULL);
                return r;
        }
        *out = cg;
        return 0;
}

int glove_cgroup_create(const struct glove_cgroup_limits *limits, struct glove_cgroup **out,
                        struct glove_error *err) {
        struct cg_options opts = {.force = GLOVE_CGROUP_BACKEND_NONE,
                                  .v2_controllers = CG_ROLE_MEMORY | CG_ROLE_PIDS | CG_ROLE_CPU};
        return cg_create(limits, &opts, out, err);
}

int glove_cgroup_create_pinned(const struct glove_cgroup_limits *limits, const struct glove_cgroup_pin *pin,
                               struct glove_cgroup **out, struct glove_error *err) {
        struct cg_options opts = {.force = GLOVE_CGROUP_BACKEND_NONE,
                                  .v2_controllers = CG_ROLE_MEMORY | CG_ROLE_PIDS | CG_ROLE_CPU,
                                  .pin = pin};
        return cg_create(limits, &opts, out, err);
}

void glove_cgroup_sweep(void) {
        struct cg_options opts = {.force = GLOVE_CGROUP_BACKEND_NONE,
                                  .v2_controllers = CG_ROLE_MEMORY | CG_ROLE_PIDS | CG_ROLE_CPU};
        struct cg_plan plan;
        struct glove_cgroup_probe probe;
        struct glove_error err = {0};
        if (cg_plan_make(&plan, &opts, &probe, &err) == 0) {
                struct sweep sw = {.n = 0};
                for (size_t i = 0; i < plan.nsites; i++) {
                        sweep_scan(plan.sites[i].fd, &sw);
                        sweep_remove(plan.sites[i].fd, &sw);
                }
        }
        cg_plan_clear(&plan);
}

void glove_cgroup_info(const struct glove_cgroup *cg, struct glove_cgroup_info *out) {
        *out = (struct glove_cgroup_info){
                .backend = cg->backend,
                .name = cg->name,
                .dirs = cg->ndirs,
                .swap_limited = cg->swap_limited,
                .kill_file = cg->kill_file,
                .freezer = cg->freezer,
                .memory_peak = cg->memory_peak,
        };
}

const char *glove_cgroup_path(const struct glove_cgroup *cg, size_t index) {
        return index < cg->ndirs ? cg->dirs[index].path : NULL;
}

int glove_cgroup_clone_fd(const struct glove_cgroup *cg) {
        if (cg->backend != GLOVE_CGROUP_BACKEND_V2)
                return -EOPNOTSUPP;
        return cg->dirs[0].fd;
}

int glove_cgroup_attach(struct glove_cgroup *cg, pid_t pid, struct glove_error *err) {
        if (pid <= 0)
                return glove_error_set(err, EINVAL, "cgroup.attach", "invalid pid %d", (int)pid);
        for (size_t i = 0; i < cg->ndirs; i++) {
                int r = cg_file_write_u64(cg->dirs[i].fd, "cgroup.procs", (uint64_t)pid);
                if (r < 0)
                        return glove_error_set(err, -r, "cgroup.attach", "cannot move pid %d into %s: %s", (int)pid,
                                               cg->dirs[i].path, strerror(-r));
        }
        return 0;
}

int glove_cgroup_stats(struct glove_cgroup *cg, struct glove_cgroup_stats *out, struct glove_error *err) {
        memset(out, 0, sizeof(*out));
        int r = cg->backend == GLOVE_CGROUP_BACKEND_V2 ? cg_v2_stats(cg, out, err) : cg_v1_stats(cg, out, err);
        out->memory_oom_killed = out->oom_kills > 0;
        out->pids_limit_hit = out->pids_max_events > 0;
        return r;
}

enum glove_cgroup_limit glove_cgroup_breach(const struct glove_cgroup *cg, const struct glove_cgroup_stats *st) {
        if (st->oom_kills > 0)
                return GLOVE_CGROUP_LIMIT_MEMORY;
        if (st->pids_max_events > 0)
                return GLOVE_CGROUP_LIMIT_PIDS;
        if (st->cpu_usage_ns / 1000000 >= cg->limits.cpu_time_ms)
                return GLOVE_CGROUP_LIMIT_CPU_TIME;
        return GLOVE_CGROUP_LIMIT_NONE;
}

const char *glove_cgroup_limit_name(enum glove_cgroup_limit limit) {
        switch (limit) {
        case GLOVE_CGROUP_LIMIT_MEMORY:
                return "memory";
        case GLOVE_CGROUP_LIMIT_PIDS:
                return "pids";
        case GLOVE_CGROUP_LIMIT_CPU_TIME:
                return "cpu_time";
        case GLOVE_CGROUP_LIMIT_WALL_TIME:
                return "wall_time";
        case GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT:
                return "terminal_output";
        default:
                return NULL;
        }
}

/* ---- kill ---------------------------------------------------------------- */

static int sys_pidfd_open(pid_t pid) {
        return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int sys_pidfd_send_signal(int pidfd, int sig) {
        return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

/*
 * One SIGKILL round over d: list, pin each pid with a pidfd, list again,
 * and signal through the pidfd only what is still listed. A pid recycled
 * between the reads belongs to a new process the pidfd does not refer to
 * (pidfd_send_signal then fails with ESRCH), so nothing outside the cgroup
 * is ever signalled. *empty tells whether the first list was empty.
 */
static int kill_round(struct cg_dir *d, bool *empty) {
        _cleanup_free_ pid_t *first = NULL;
        _cleanup_free_ pid_t *second = NULL;
        _cleanup_free_ int *fds = NULL;
        size_t n1 = 0, n2 = 0;
        int r = cg_file_read_pids(d->fd, &first, &n1);
        if (r < 0)
                return r;
        *empty = n1 == 0;
        if (n1 == 0)
                return 0;
        fds = malloc(n1 * sizeof(*fds));
        if (!fds)
                return -ENOMEM;
        bool no_pidfd = false;
        for (size_t i = 0; i < n1; i++) {
                fds[i] = first[i] > 0 && !no_pidfd ? sys_pidfd_open(first[i]) : -1;
                if (fds[i] < 0 && errno == ENOSYS)
                        no_pidfd = true;
        }
        r = cg_file_read_pids(d->fd, &second, &n2);
        for (size_t i = 0; i < n1; i++) {
                if (r == 0 && n2 > 0 && first[i] > 0 && bsearch(&first[i], second, n2, sizeof(*second), cmp_pid)) {
                        if (fds[i] >= 0)
                                (void)sys_pidfd_send_signal(fds[i], SIGKILL);
                        else if (no_pidfd)
                                (void)kill(first[i], SIGKILL); /* Linux < 5.3 */
                }
                if (fds[i] >= 0)
                        close(fds[i]);
        }
        return r;
}

static int cg_freeze(struct glove_cgroup *cg, bool frozen) {
        if (!cg->freezer)
                return 0;
        return cg->backend == GLOVE_CGROUP_BACKEND_V2 ? cg_v2_freeze(cg, frozen) : cg_v1_freeze(cg, frozen);
}

/* True when no directory lists a process; -errno when one cannot be read.
 * Directories already removed are skipped. */
static int cg_empty(struct glove_cgroup *cg) {
        for (size_t i = 0; i < cg->ndirs; i++) {
                if (cg->dirs[i].fd < 0)
                        continue;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;
                int r = cg_file_read_pids(cg->dirs[i].fd, &pids, &n);
                if (r < 0)
                        return r;
                if (n > 0)
                        return 0;
        }
        return 1;
}

/*
 * One kill pass: cgroup.kill once (when the kernel has it and *used_kill_file
 * is still false), else when processes remain a freeze + SIGKILL round over
 * every directory. Returns 0 when the cgroup is empty afterwards, -EAGAIN
 * when processes remain (err untouched), other -errno "cgroup.kill".
 */
static int kill_pass(struct glove_cgroup *cg, bool *used_kill_file, struct glove_error *err) {
        if (cg->kill_file && !*used_kill_file && cg->dirs[0].fd >= 0) {
                int r = cg_file_write(cg->dirs[0].fd, "cgroup.kill", "1");
                if (r == 0)
                        *used_kill_file = true;
                else if (r != -ENOENT)
                        return glove_error_set(err, -r, "cgroup.kill", "%s/cgroup.kill: %s", cg->dirs[0].path,
                                               strerror(-r));
        }
        int e = cg_empty(cg);
        if (e < 0)
                return glove_error_set(err, -e, "cgroup.kill", "cannot list the processes of %s: %s", cg->dirs[0].path,
                                       strerror(-e));
        if (e > 0)
                return 0;
        if (!*used_kill_file) {
                (void)cg_freeze(cg, true);
                int r = 0;
                for (size_t i = 0; i < cg->ndirs && r == 0; i++) {
                        bool empty;
                        if (cg->dirs[i].fd >= 0)
                                r = kill_round(&cg->dirs[i], &empty);
                }
                (void)cg_freeze(cg, false);
                if (r < 0)
                        return glove_error_set(err, -r, "cgroup.kill", "cannot kill the processes of %s: %s",
                                               cg->dirs[0].path, strerror(-r));
        }
        return -EAGAIN;
}

int glove_cgroup_kill_once(struct glove_cgroup *cg, struct glove_error *err) {
        bool used_kill_file = false;
        return kill_pass(cg, &used_kill_file, err);
}

int glove_cgroup_kill(struct glove_cgroup *cg, struct glove_error *err) {
        uint64_t deadline = glove_time_monotonic_ms() + GLOVE_CGROUP_KILL_TIMEOUT_MS;
        bool used_kill_file = false;
        unsigned pause = 1;
        for (;;) {
                int r = kill_pass(cg, &used_kill_file, err);
                if (r != -EAGAIN)
                        return r;
                if (glove_time_monotonic_ms() >= deadline)
                        return glove_error_set(err, ETIMEDOUT, "cgroup.kill",
                                               "processes remain in %s after %d ms of killing", cg->dirs[0].path,
                                               GLOVE_CGROUP_KILL_TIMEOUT_MS);
                sleep_ms(pause);
                pause = pause < 16 ? pause * 2 : 16;
        }
}

int glove_cgroup_try_destroy(struct glove_cgroup *cg, struct glove_error *err) {
        if (!cg)
                return 0;
        const char *busy = NULL;
        int r = rmdir_pass(cg, &busy, err);
        if (r == -EAGAIN)
                return r;
        cg_free(cg);
        return r;
}

void glove_cgroup_abandon(struct glove_cgroup *cg) {
        if (cg)
                cg_free(cg);
}

int glove_cgroup_destroy(struct glove_cgroup *cg, struct glove_error *err) {
        if (!cg)
                return 0;
        int k = glove_cgroup_kill(cg, err);
        int r = remove_dirs(cg, err);
        return k < 0 ? k : r;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the cgroup files (cgroup.c, cgroup_probe.c, cgroup_file.c,
 * cgroup_v1.c, cgroup_v2.c) and the unit test. Not a public interface. */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/container/cgroup.h"

/* Roles one directory plays (v1: per hierarchy; v2: the single directory). */
#define CG_ROLE_MEMORY 0x01u
#define CG_ROLE_PIDS 0x02u
#define CG_ROLE_CPUACCT 0x04u /* usage in ns (v1 cpuacct; v2 cpu.stat) */
#define CG_ROLE_CPU 0x08u
#define CG_ROLE_FREEZER 0x10u
#define CG_ROLES_REQUIRED (CG_ROLE_MEMORY | CG_ROLE_PIDS | CG_ROLE_CPUACCT)

/* Largest /proc/self/cgroup or /proc/self/mountinfo read. */
#define CG_PROC_FILE_MAX (4u << 20)
/* Largest control file read whole (stat files, single values). */
#define CG_CONTROL_FILE_MAX 8192u
/* Most pids one cgroup.procs read collects. */
#define CG_PROCS_MAX ((size_t)GLOVE_CGROUP_PIDS_MAX)

/* A place a run cgroup can be created: one per hierarchy. */
struct cg_site {
        int fd;                 /* O_PATH|O_DIRECTORY, owned */
        unsigned roles;
        bool enable_controllers; /* v2: write them to the site's cgroup.subtree_control first */
        enum glove_cgroup_placement placement; /* v2: UNDER or BESIDE */
        char path[PATH_MAX];    /* display only */
};

/* The probe's outcome: where to create. */
struct cg_plan {
        enum glove_cgroup_backend backend;
        struct cg_site sites[GLOVE_CGROUP_DIRS_MAX];
        size_t nsites;
};

/* Options for tests (glove_cgroup_create passes the defaults). */
struct cg_options {
        enum glove_cgroup_backend force;   /* NONE: probe both */
        unsigned v2_controllers;           /* CG_ROLE_* v2 must offer; default
                                            * MEMORY|PIDS|CPU */
        bool v2_beside_only;               /* never under the caller's cgroup */
        const struct glove_cgroup_pin *pin; /* NULL or the site's required identity */
};

/* gloved's pinned place (glove_cgroup_host_setup). */
struct glove_cgroup_host {
        enum glove_cgroup_placement placement;
        int root_fd;                 /* O_PATH|O_DIRECTORY of the cgroup2 mount (or a test's tree) */
        int self_fd;                 /* O_RDONLY|O_DIRECTORY of gloved's subgroup */
        int parent_fd;               /* O_RDONLY|O_DIRECTORY of the delegated parent */
        uint64_t self_dev, self_ino;
        uint64_t parent_dev, parent_ino;
        char self_rel[PATH_MAX];     /* beneath root_fd, no leading '/' */
        char parent_rel[PATH_MAX];   /* likewise; "" is the root itself */
        char self_path[PATH_MAX];    /* display only */
        char parent_path[PATH_MAX];
};

/* Test seams of cg_host_setup_at: a fake tree of plain files has no kernel
 * to create a new cgroup's files or move a process, so a test's hook plays
 * that part. NULL hooks for the real thing. */
struct cg_host_env {
        uid_t uid;                   /* the owner delegation is checked against */
        pid_t pid;                   /* the process to move (its tgid) */
        /* The controllers required and enabled, "+cpu +memory +pids" when
         * NULL; "" (tests on a real hierarchy without them) requires and
         * enables none. */
        const char *controllers;
        /* After mkdirat(C, "glove-host"): sub_fd is the new directory. */
        void (*after_mkdir)(int sub_fd, void *ctx);
        /* After the pid was written to glove-host/cgroup.procs. */
        void (*after_move)(int cur_fd, int sub_fd, void *ctx);
        void *ctx;
};

/* cgroup_host.c: the decision and its steps on gloved's cgroup rel (no
 * leading '/' needed; "" or "/" is the root) beneath root_fd (taken over:
 * closed on error, kept in *out otherwise; display_root names it in
 * messages). As glove_cgroup_host_setup. */
int cg_host_setup_at(int root_fd, const char *rel, const char *display_root, const struct cg_host_env *env,
                     struct glove_cgroup_host **out, struct glove_error *err);

/* cgroup_probe.c: the caller's v2 cgroup: *root_fd an O_PATH descriptor of
 * the verified cgroup2 mount that shows it, rel its path beneath it,
 * mount_point the mount's path. Returns 0, -ENOENT when there is no v2
 * cgroup/mount (not an error: err untouched), or -errno "cgroup.proc". */
int cg_v2_self(int *root_fd, char rel[PATH_MAX], char mount_point[PATH_MAX], struct glove_error *err);

struct cg_dir {
        int parent_fd;          /* O_PATH directory the cgroup was made in, owned */
        int fd;                 /* O_RDONLY|O_DIRECTORY of the cgroup, owned */
        unsigned roles;
        char path[PATH_MAX];    /* display only */
};

struct glove_cgroup {
        enum glove_cgroup_backend backend;
        char name[GLOVE_CGROUP_NAME_MAX];
        struct glove_cgroup_limits limits;
        struct cg_dir dirs[GLOVE_CGROUP_DIRS_MAX];
        size_t ndirs;
        bool swap_limited;
        bool kill_file;         /* tests may clear it to exercise the fallback */
        bool freezer;           /* likewise */
        bool memory_peak;
        uint64_t peak_seen;     /* highest memory.current seen (v2 without memory.peak) */
};

/* cgroup_probe.c */
int cg_plan_make(struct cg_plan *plan, const struct cg_options *opts, struct glove_cgroup_probe *info,
                 struct glove_error *err);
void cg_plan_clear(struct cg_plan *plan);

/* cgroup.c: glove_cgroup_create with test options. */
int cg_create(const struct glove_cgroup_limits *limits, const struct cg_options *opts, struct glove_cgroup **out,
              struct glove_error *err);

/* cgroup_file.c: control files, each opened with openat(dirfd, name,
 * O_NOFOLLOW|O_CLOEXEC). All return 0 or -errno. */
bool cg_file_exists(int dirfd, const char *name);
int cg_file_write(int dirfd, const char *name, const char *value);
int cg_file_write_u64(int dirfd, const char *name, uint64_t value);
/* Reads the whole file (at most size-1 bytes, NUL-terminated; -EFBIG when
 * larger). Returns the length or -errno. */
ssize_t cg_file_read(int dirfd, const char *name, char *buf, size_t size);
/* A single number ("max" reads as UINT64_MAX). */
int cg_file_read_u64(int dirfd, const char *name, uint64_t *out);
/* The value of "key N" in a flat keyed file; -ENOENT when the key is absent,
 * -ENOENT also when the file is. */
int cg_file_read_key(int dirfd, const char *name, const char *key, uint64_t *out);
/* Every pid in cgroup.procs of dirfd, sorted ascending; *pids malloc'd
 * (NULL when none). -E2BIG beyond CG_PROCS_MAX. */
int cg_file_read_pids(int dirfd, pid_t **pids, size_t *count);
/* Reads a whole /proc file into a malloc'd NUL-terminated buffer, at most
 * CG_PROC_FILE_MAX bytes (-EFBIG beyond). */
int cg_proc_read(const char *path, char **out);
/* True when the space-separated word list contains word. */
bool cg_words_contain(const char *list, const char *word, char sep);

/* cgroup_v1.c and cgroup_v2.c: limits, stats, freezing. */
int cg_v1_configure(struct glove_cgroup *cg, struct glove_error *err);
int cg_v1_stats(struct glove_cgroup *cg, struct glove_cgroup_stats *out, struct glove_error *err);
int cg_v1_freeze(struct glove_cgroup *cg, bool frozen);
int cg_v2_configure(struct glove_cgroup *cg, struct glove_error *err);
int cg_v2_stats(struct glove_cgroup *cg, struct glove_cgroup_stats *out, struct glove_error *err);
int cg_v2_freeze(struct glove_cgroup *cg, bool frozen);
/* Enables the controllers of roles (memory, pids, cpu) in the
 * cgroup.subtree_control of the directory site_fd (an O_PATH descriptor). */
int cg_v2_enable_controllers(int site_fd, unsigned roles, const char *site_path, struct glove_error *err);

/* The directory with role, or NULL. */
struct cg_dir *cg_dir_with(struct glove_cgroup *cg, unsigned role);

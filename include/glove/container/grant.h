/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * File grants: host paths the operator exposes to the agent (issue "glove
 * exec", Grants). A grant appears inside the sandbox at the same absolute
 * path as on the host.
 *
 * Resolution: the path is made absolute and lexically normal, then opened
 * with O_PATH through openat2(RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS), so
 * no component may be a symbolic link. The descriptor and its identity
 * (st_dev, st_ino, mount id) are kept. The sandbox child re-opens the path
 * the same way inside its own mount namespace and refuses to mount unless
 * the identity is unchanged, then mounts from that descriptor with
 * open_tree/move_mount: a component replaced by a symlink between check and
 * mount can neither redirect the mount nor pass unnoticed.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* Most grants one sandbox takes. */
#define GLOVE_GRANTS_MAX 128

enum glove_grant_mode {
        GLOVE_GRANT_READ = 0,  /* read-only bind: ro, nosuid, nodev */
        GLOVE_GRANT_WRITE = 1, /* read-write bind: nosuid, nodev */
};

struct glove_grant {
        char *path;                 /* normalized absolute path, owned */
        enum glove_grant_mode mode;
        bool workspace;             /* the --workspace grant (also the cwd) */
        bool is_dir;
        dev_t dev;                  /* identity pinned at resolution */
        ino_t ino;
        uint64_t mnt_id;
        int fd;                     /* O_PATH descriptor, owned, O_CLOEXEC */
};

/* Most guarded directories one set takes (glove_grant_guards). */
#define GLOVE_GRANT_GUARDS_MAX 4096

/* A directory the caller protects from every grant, in either mode. */
struct glove_grant_guard {
        char *path; /* normalized absolute host path of a directory, owned */
        char *what; /* how a refusal names it ("the runtime directory of a
                     * running gloved (pid 42)"), owned */
};

/* An entry whose presence marks the directory holding it (and everything
 * beneath) as guarded: its name and file type (S_IFSOCK, S_IFREG, ...). */
struct glove_grant_marker {
        const char *name;
        mode_t type;
};

/*
 * What a caller protects from grants, beyond the system trees the
 * container knows itself: the container module knows no service's files, so
 * the caller (glove exec/run front ends: live gloveds' directories; gloved:
 * its own) says what must stay out of every sandbox. A grant is refused with
 * code when it is, holds or lies inside a guarded directory, by path or by
 * region (glove/container/region.h: the grant's region or that of a mount
 * beneath it overlaps the directory's), or when the path or one of its
 * ancestors holds a marker entry. Fill with glove_grant_guards_add; free
 * with glove_grant_guards_free. The markers, code and what strings are
 * borrowed (static in practice).
 */
struct glove_grant_guards {
        const char *code;                         /* stable refusal code, e.g. "grant.gloved_runtime" */
        struct glove_grant_guard *items;          /* owned, count entries */
        size_t count, cap;
        const struct glove_grant_marker *markers; /* borrowed, n_markers entries */
        size_t n_markers;
        const char *marker_what;                  /* names a marked directory in messages */
};

/*
 * Appends a copy of path (absolute; normalized here) and what to guards.
 * -E2BIG beyond GLOVE_GRANT_GUARDS_MAX (code guards->code: fail closed);
 * -EINVAL for a relative path; -ENOMEM.
 */
int glove_grant_guards_add(struct glove_grant_guards *guards, const char *path, const char *what,
                           struct glove_error *err);

/* Frees the guarded directories; code and markers stay. */
void glove_grant_guards_free(struct glove_grant_guards *guards);

/*
 * Refuses (-EPERM, guards->code) the normalized absolute path norm when it
 * is, holds or lies inside a guarded directory, by path or by region (norm's
 * own region and that of every mount beneath it, against each guard's
 * region, read from /proc/self/mountinfo; "grant.mountinfo" when it cannot
 * be read), or when norm or an ancestor holds a marker. For callers that
 * expose host paths other than through glove_grant_set_add (gloved's
 * materializations). NULL guards: nothing is guarded.
 */
int glove_grant_guards_check(const struct glove_grant_guards *guards, const char *norm, struct glove_error *err);

struct glove_grant_set {
        struct glove_grant items[GLOVE_GRANTS_MAX];
        size_t count;
        /* The invoker's runtime directory ($XDG_RUNTIME_DIR: its service
         * sockets), refused as a grant like /run; set by the front end, which
         * reads the environment (NULL: none). Borrowed. */
        const char *runtime_dir;
        /* Writable grants of the host's system directories are allowed
         * (refused by default: "grant.system_directory"); set by the front
         * end from an explicitly unsafe option. */
        bool allow_system_write;
        /* What the caller protects from every grant (NULL: nothing beyond
         * the system trees); set before the first glove_grant_set_add.
         * Borrowed: it must outlive the adds. */
        const struct glove_grant_guards *guards;
        /* The protected regions (system trees, the guards) and the mount
         * table, computed by the first glove_grant_set_add and kept for the
         * next ones; owned, freed by glove_grant_set_clear. */
        struct glove_grant_protected *protected_regions;
};

/* Initializes an empty set. */
void glove_grant_set_init(struct glove_grant_set *set);

/* Closes every descriptor and frees every path; the set is empty again. */
void glove_grant_set_clear(struct glove_grant_set *set);

/*
 * Resolves path (absolute, or relative to cwd) and adds it with mode.
 * A workspace grant must be a directory, and there is at most one.
 *
 * Refused, each with -errno and a stable code:
 *   "grant.missing_path"   the path (or a component) does not exist;
 *   "grant.symlink"        a component is a symbolic link;
 *   "grant.restricted"     "/", or anything under /proc, /sys, /dev, /run,
 *                          /var/run or $XDG_RUNTIME_DIR (service sockets);
 *   "grant.shadows_home"   /home or /home/agent (it would hide the agent's
 *                          private HOME);
 *   "grant.file_type"      neither a directory nor a regular file;
 *   "grant.system_directory"  a writable grant (write mode, the workspace
 *                          too) of /bin, /boot, /etc, /lib*, /opt, /root,
 *                          /sbin, /usr, /var or anything beneath them (not
 *                          /var/tmp, /var/home, /var/srv), /root and its
 *                          hidden entries, by path, or by region
 *                          (glove/container/region.h: the grant's own region
 *                          or that of a mount beneath it overlaps a system
 *                          tree's, so a bind mount of /etc elsewhere counts),
 *                          unless set->allow_system_write;
 *   set->guards->code  (e.g. "grant.gloved_runtime") the path is, holds or
 *                          lies inside a directory set->guards names, by
 *                          path or by region, or it or an ancestor holds one
 *                          of set->guards' markers (glove_grant_guards_check);
 *                          also past GLOVE_GRANT_GUARDS_MAX;
 *   "grant.mountinfo"      /proc/self/mountinfo cannot be read or parsed, or
 *                          exceeds GLOVE_REGION_MOUNTINFO_MAX or
 *                          GLOVE_REGION_MOUNTS_MAX (fail closed);
 *   "grant.conflict"       the same path, or one nested in another, with a
 *                          different mode (a path granted twice with the same
 *                          mode is merged);
 *   "grant.workspace_twice", "grant.workspace_not_dir";
 *   "grant.too_many"       more than GLOVE_GRANTS_MAX grants.
 */
int glove_grant_set_add(struct glove_grant_set *set, const char *path, enum glove_grant_mode mode,
                        bool workspace, const char *cwd, struct glove_error *err);

/*
 * Refuses (-EPERM, "grant.exposes_audit_log") when the file whose canonical
 * absolute path is canonical_path, with identity (dev, ino), would be visible
 * through any grant: it lies beneath a granted directory, or is a granted
 * file (also when the grant reaches it through another hard link), by path,
 * or by region: the file's region lies beneath a region a directory grant
 * reaches (its own or a mount's beneath it), or is a file grant's region.
 * Reads /proc/self/mountinfo once per call (errors "grant.mountinfo").
 * Hard links elsewhere are the caller's to refuse (a link count above 1).
 */
int glove_grant_set_check_hidden(const struct glove_grant_set *set, const char *canonical_path,
                                 dev_t dev, ino_t ino, struct glove_error *err);

/* As glove_grant_set_check_hidden for another file Glove writes (what names
 * it in the message, e.g. "the status file"; code is the stable code). */
int glove_grant_set_check_outside(const struct glove_grant_set *set, const char *canonical_path, dev_t dev, ino_t ino,
                                  const char *what, const char *code, struct glove_error *err);

/* Returns the workspace grant, or NULL. */
const struct glove_grant *glove_grant_set_workspace(const struct glove_grant_set *set);

/* Mode as used in audit records and messages: "read" or "write". */
const char *glove_grant_mode_name(enum glove_grant_mode mode);

/*
 * True when fstype (a file system type as /proc/self/mountinfo names it) is
 * one of the kernel's interface file systems that a grant may neither be on
 * (glove_grant_set_add: "grant.kernel_fs") nor carry beneath it (the
 * perimeter checks the mounts under each grant: proc, sysfs, cgroup,
 * cgroup2, debugfs, tracefs, securityfs, bpf, devpts, efivarfs, pstore,
 * binfmt_misc, nsfs, selinuxfs, smackfs, configfs, fusectl, mqueue,
 * resctrl, binder, autofs, nfsd, rpc_pipefs, devtmpfs).
 */
bool glove_grant_kernel_fs(const char *fstype);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The mount perimeter as data (spec architecture.md, Platform isolation;
 * issue "glove exec", Mount perimeter; issue 8, "The mount perimeter as
 * data"). A plan is a list of mount operations, built by Glove before the
 * clone and executed in order by the sandbox child inside its new mount
 * namespace, on a fresh tmpfs that becomes the root:
 *
 *   phase 1  every BIND source (host path, opened without following links;
 *            a grant is re-opened and checked against the identity Glove
 *            pinned), every COPY source and the tree behind every MASK is
 *            opened or cloned (open_tree OPEN_TREE_CLONE) while the host
 *            view is still reachable, in plan order;
 *   phase 2  a 1 MiB tmpfs is mounted as the staging root and the entries
 *            run in plan order: each destination is created beneath the
 *            root without crossing a symbolic link, then the entry is
 *            attached, mounted or written there;
 *   fixed    pivot_root, the old root detached, "/" and "/dev" made
 *            read-only, the mounts beneath each grant checked for kernel
 *            interface file systems, chdir to the plan's cwd. These steps
 *            are not entries: no plan can leave them out.
 *
 * Every plan starts with the standard perimeter (glove_mount_plan_new):
 * read-only /usr and the merged-/usr links, the curated /etc (generated
 * passwd, group, hostname, hosts; small host files copied, links recreated,
 * directories and large files bound read-only), a fresh proc with the
 * sandbox's inotify limits written, its host-wide knobs made read-only and
 * (for a root invoker) its root-only files masked, a minimal /dev (tmpfs,
 * read-only binds of null zero full random urandom tty, devpts, /dev/shm,
 * the standard links, the PTY at /dev/console), tmpfs /tmp and the private
 * HOME. Entries added afterwards (grants, then anything else) come after
 * those, in the order added, so an entry may mount on top of an earlier
 * one: grants are added parents first, which is what makes a nested grant
 * of the same mode appear inside its parent's bind.
 *
 * Kinds (destination: absolute, lexically normal, not "/"; stored and shown
 * without the leading slash):
 *   BIND      a recursive clone of the host tree at source, attached with
 *             attrs (MOUNT_ATTR_*); OPTIONAL: skipped when the source is
 *             absent; GRANT: the identity (dev, ino) is re-checked in the
 *             child's namespace ("grant.changed") and the mounts beneath its
 *             destination are vetted after pivot_root ("grant.kernel_fs");
 *             a grant's destination is its source, a pinned bind's may
 *             differ
 *   COPY      the host regular file at source copied into a new file (mode):
 *             size bytes at most (its size when the plan was built; a file
 *             that grew since is cut there)
 *   TMPFS     a fresh tmpfs: size (bytes, 0: the kernel's default), mode,
 *             uid, gid (ids inside the sandbox), nr_inodes (0: default)
 *   PROC      a fresh proc (nosuid, nodev, noexec)
 *   DEVPTS    a fresh devpts instance (newinstance, ptmx 0666)
 *   FILE      a new file holding the given bytes (mode)
 *   SYMLINK   a symbolic link whose target is the given text
 *   WRITE     the given bytes written to an existing file (a sysctl of the
 *             fresh proc)
 *   READONLY  an existing subtree cloned and re-attached read-only, nosuid,
 *             nodev, noexec over itself; skipped when absent
 *   MASK      the host's /dev/null bound read-only, nodev, noexec over an
 *             existing file (opening it then fails); skipped when absent
 *   TTY       when the agent's stdin is a PTY, that PTY's inode bound
 *             read-only at the destination (so ttyname() finds it)
 *   DIR       a new directory (mode, owner uid/gid inside); refused when
 *             something is already there
 *   TREE      a fresh tmpfs of size bytes (root directory mode 0755, owner
 *             uid/gid inside; nosuid, nodev), then, with a source, filled
 *             by a copy of the host directory source (opened in phase 1
 *             without following links and identity-checked like a grant,
 *             "grant.changed") that never follows a link and allocates
 *             nothing (glove_mount_plan_add_tree says what it copies)
 *
 * Bounds: at most GLOVE_MOUNT_PLAN_MAX entries and GLOVE_MOUNT_PLAN_DATA_MAX
 * bytes of paths, link targets, mount options and file contents together
 * ("mount.plan_too_large", -E2BIG); a FILE or WRITE holds at most
 * GLOVE_MOUNT_FILE_MAX bytes.
 *
 * Ownership and threads: a plan is one heap object owned by whoever built
 * it, freed with glove_mount_plan_free. The builder functions allocate;
 * the sandbox child only reads the plan (no allocation between clone3 and
 * execve). glove_sandbox_config.mounts borrows it until spawn_finish
 * answered. A plan is not shared between threads while it is modified.
 */

#include <linux/mount.h> /* MOUNT_ATTR_* */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/container/grant.h"

/* Most entries of one plan: the standard perimeter takes about 60, each
 * grant one. */
#define GLOVE_MOUNT_PLAN_MAX 512
/* Most bytes of strings and file contents of one plan. */
#define GLOVE_MOUNT_PLAN_DATA_MAX (4U << 20)
/* Most bytes of one FILE or WRITE entry. */
#define GLOVE_MOUNT_FILE_MAX (1U << 20)
/* Most directories a TREE copy descends beneath its source
 * ("materialize.too_deep" beyond). */
#define GLOVE_MOUNT_TREE_DEPTH_MAX 64

enum glove_mount_kind {
        GLOVE_MOUNT_BIND = 1,
        GLOVE_MOUNT_COPY,
        GLOVE_MOUNT_TMPFS,
        GLOVE_MOUNT_PROC,
        GLOVE_MOUNT_DEVPTS,
        GLOVE_MOUNT_FILE,
        GLOVE_MOUNT_SYMLINK,
        GLOVE_MOUNT_WRITE,
        GLOVE_MOUNT_READONLY,
        GLOVE_MOUNT_MASK,
        GLOVE_MOUNT_TTY,
        GLOVE_MOUNT_TREE,
        GLOVE_MOUNT_DIR,
};

/* Entry flags. */
#define GLOVE_MOUNT_F_OPTIONAL (1U << 0) /* BIND, COPY: skip when the source is absent */
#define GLOVE_MOUNT_F_DIR (1U << 1)      /* BIND: the destination is a directory (else a file) */
#define GLOVE_MOUNT_F_GRANT (1U << 2)    /* BIND: a grant (identity check, submount check) */
#define GLOVE_MOUNT_F_OWNED (1U << 3)    /* FILE: owned by uid/gid (else the sandbox's root) */
#define GLOVE_MOUNT_F_SKIP_LINKS (1U << 4) /* TREE: symbolic links in the source are skipped, not
                                            * recreated (a seeded HOME: glove exec --home-from);
                                            * set it on the entry glove_mount_plan_add_tree added */
#define GLOVE_MOUNT_F_PRIVATE (1U << 5)  /* BIND, TREE: messages name the entry by its name (label),
                                          * never by its host path (a path exposure, whose path must
                                          * not reach a controller); set it on the entry just added.
                                          * No mount may lie strictly beneath its destination once
                                          * attached (a path exposure never crosses a mount; vetted
                                          * after pivot_root: "grant.submount", -EXDEV) */

struct glove_mount_entry {
        enum glove_mount_kind kind;
        uint32_t flags;           /* GLOVE_MOUNT_F_* */
        uint64_t attrs;           /* MOUNT_ATTR_* of the attached or fresh mount */
        uint64_t size;            /* TMPFS: bytes, 0 for the default; COPY: bytes copied at most;
                                   * TREE: bytes of the tmpfs */
        uint32_t mode;            /* TMPFS, FILE, COPY: permission bits */
        uid_t uid;                /* TREE: owner inside of the root and of every copied entry;
                                   * DIR, owned FILE: owner inside */
        gid_t gid;
        uint32_t dest;            /* offset in data: destination without its leading slash */
        uint32_t source;          /* offset in data: BIND/COPY/TREE host path, SYMLINK target, or 0
                                   * (a TREE without a source) */
        uint32_t options;         /* offset in data: the mount options of TMPFS/PROC/DEVPTS, or 0 */
        uint32_t bytes;           /* offset in data: FILE/WRITE contents */
        uint32_t bytes_len;
        const char *code;         /* stable code of a failure (a static string) */
        const char *label;        /* GRANT: the word naming it in messages (static), or NULL */
        uint32_t name;            /* offset in data: the label of a pinned BIND or a TREE
                                   * (copied), or 0 */
        dev_t dev;                /* GRANT, TREE with a source: identity pinned when it was resolved */
        ino_t ino;
};

struct glove_mount_plan {
        size_t count;
        struct glove_mount_entry entries[GLOVE_MOUNT_PLAN_MAX];
        uint32_t cwd;             /* offset in data: the agent's working directory (absolute) */
        size_t data_len, data_cap;
        char *data;               /* owned; offset 0 holds "" */
};

/* Inputs of the standard perimeter. */
struct glove_mount_plan_params {
        uid_t uid, gid;                 /* the agent's ids inside the sandbox */
        uint64_t disk_bytes;            /* size of /tmp, HOME and /dev/shm; 0: kernel default
                                         * (/dev/shm: 64 MiB) */
        uint32_t inotify_instances;     /* user.max_inotify_instances and _watches of the */
        uint32_t inotify_watches;       /* sandbox's user namespace; 0: leave the kernel's */
        bool mask_root_only;            /* the agent is host uid 0 for owner checks (a root
                                         * invoker): mask /proc's root-only files */
        uint32_t tcp_buffer_max;        /* largest TCP receive and send buffer a socket of
                                         * the sandbox's network namespace autotunes to
                                         * (its own net.ipv4.tcp_rmem and tcp_wmem maximum),
                                         * bytes, at least 65536; 0: leave the kernel's */
};

/* The agent's id inside the sandbox for an invoker's id (GLOVE_SANDBOX_ROOT_INSIDE_ID
 * for 0, else the same id), as glove_sandbox_spawn_start maps it. */
uid_t glove_mount_plan_inside_id(uid_t outside);

/*
 * Builds a new plan holding the standard perimeter for p: reads the host's
 * /bin, /lib... and /etc entries (lstat, readlink) to choose each one's
 * kind. *out is owned by the caller. Returns 0 or -errno: -ENOMEM
 * ("mount.plan_alloc"), an lstat or readlink error ("mount.clone").
 */
int glove_mount_plan_new(const struct glove_mount_plan_params *p, struct glove_mount_plan **out, struct glove_error *err);

/*
 * The host paths every sandbox's standard perimeter shows (bound read-only
 * or copied): i = 0 is "/usr", then each /etc entry the perimeter takes
 * from the host. Writes path i into out (size bytes) and returns 0, or
 * -ENOENT past the last one (-ENAMETOOLONG when out is too small). For
 * checks of what a sandbox can reach whatever its grants (e.g. the local
 * services' socket check, docs/local-services.md).
 */
int glove_mount_plan_host_view(size_t i, char *out, size_t size);

/* Frees plan (NULL: nothing). */
void glove_mount_plan_free(struct glove_mount_plan *plan);

/*
 * Appends one BIND entry per grant of set, parents before what they hold
 * (sorted by path), read-only for READ grants, nosuid and nodev always; the
 * workspace grant becomes the cwd (HOME without one). Returns 0 or -errno
 * (the bounds: "mount.plan_too_large").
 */
int glove_mount_plan_add_grants(struct glove_mount_plan *plan, const struct glove_grant_set *set, struct glove_error *err);

/*
 * Generic entries. dest is absolute and lexically normal, never "/"
 * ("mount.plan_dest", -EINVAL, otherwise); the bounds as above. Each
 * returns 0 or -errno.
 *   tmpfs:   size bytes (0: default), mode, owner uid/gid inside, attrs
 *            MOUNT_ATTR_* (nosuid and nodev always added)
 *   file:    len bytes of data (copied), mode
 *   symlink: target (copied; not resolved)
 *   bind:    the host path source (absolute) read-only, nosuid, nodev;
 *            optional: skipped when absent
 */
int glove_mount_plan_add_tmpfs(struct glove_mount_plan *plan, const char *dest, uint64_t size, uint32_t mode, uid_t uid,
                               gid_t gid, uint64_t attrs, struct glove_error *err);
int glove_mount_plan_add_file(struct glove_mount_plan *plan, const char *dest, const void *data, size_t len, uint32_t mode,
                              struct glove_error *err);
int glove_mount_plan_add_symlink(struct glove_mount_plan *plan, const char *dest, const char *target, struct glove_error *err);

/*
 * Entries the agent owns (ids inside the sandbox), for content Glove puts
 * in the private home (the adapters' skills, docs/session-policy.md
 * "Library bundles and skills"):
 *   dir:        a new directory at dest with permission bits mode, owned by
 *               uid/gid; missing parents are created as for any destination
 *               (mode 0755, the sandbox's root); dest already existing is
 *               "mount.dir" (-EEXIST) in the child
 *   owned_file: as glove_mount_plan_add_file, the new file owned by uid/gid
 * Bounds and errors as the generic entries.
 */
int glove_mount_plan_add_dir(struct glove_mount_plan *plan, const char *dest, uint32_t mode, uid_t uid, gid_t gid,
                             struct glove_error *err);
int glove_mount_plan_add_owned_file(struct glove_mount_plan *plan, const char *dest, const void *data, size_t len,
                                    uint32_t mode, uid_t uid, gid_t gid, struct glove_error *err);
int glove_mount_plan_add_bind(struct glove_mount_plan *plan, const char *dest, const char *source, bool optional,
                              struct glove_error *err);

/*
 * A BIND of a host path the caller already resolved and pinned (its
 * identity dev/ino), attached at dest, which may differ from source: a
 * GRANT-flagged entry. In the child's namespace source (absolute) is
 * re-opened without following any link (openat2 RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS) and refused unless it still has that identity
 * ("grant.changed"); the mounts beneath dest are vetted after pivot_root
 * like a grant's ("grant.kernel_fs"). is_dir: source is a directory (else
 * a regular file). read_only: ro, nosuid, nodev; else nosuid, nodev. label
 * (copied; NULL: "pinned bind") names it in messages. Returns 0 or -errno:
 * "mount.plan_dest" (-EINVAL: dest not absolute and normal, source not
 * absolute), "mount.plan_too_large".
 */
int glove_mount_plan_add_pinned_bind(struct glove_mount_plan *plan, const char *dest, const char *source, dev_t dev,
                                     ino_t ino, bool is_dir, bool read_only, const char *label, struct glove_error *err);

/*
 * A TREE: a fresh tmpfs at dest of size bytes (1 ..
 * GLOVE_MOUNT_TREE_SIZE_MAX; the kernel rounds it up to whole pages),
 * nosuid and nodev, its root directory mode 0755 owned by uid/gid (ids
 * inside the sandbox: the agent's). With source (absolute; NULL for an
 * empty tree) the host directory with identity dev/ino is copied into it
 * in the sandbox child before the agent starts:
 *   regular files   content copied, mode & 0777 (setuid, setgid, sticky
 *                   dropped); hard links become independent copies
 *   directories     recreated, mode & 0777 | 0700
 *   symbolic links  recreated with the same target text, never followed
 *                   (skipped, not created, with GLOVE_MOUNT_F_SKIP_LINKS)
 *   FIFOs, sockets, devices   skipped (not created)
 *   mount points    beneath source: refused ("materialize.copy"), a copy
 *                   never crosses into another mount
 *   owner           uid/gid; mtime (and atime) kept
 *   depth           at most GLOVE_MOUNT_TREE_DEPTH_MAX directories beneath
 *                   source ("materialize.too_deep")
 * The tmpfs filling up (ENOSPC, EDQUOT) is "materialize.quota_exceeded";
 * any other failure (an unreadable entry, a name the tmpfs refuses) is
 * "materialize.copy"; messages name the entry by its path relative to
 * source, prefixed with label (copied; NULL: "tree"). Source not a
 * directory, or replaced since it was pinned: "grant.changed". Returns 0
 * or -errno: "mount.plan_dest" (-EINVAL: dest, source not absolute, size
 * out of range), "mount.plan_too_large".
 */
#define GLOVE_MOUNT_TREE_SIZE_MAX (UINT64_C(1) << 40)
/* A TREE's tmpfs holds at most max(size / 4096, this) inodes. */
#define GLOVE_MOUNT_TREE_INODES_MIN 1024
int glove_mount_plan_add_tree(struct glove_mount_plan *plan, const char *dest, uint64_t size, uid_t uid, gid_t gid,
                              const char *source, dev_t dev, ino_t ino, const char *label, struct glove_error *err);

/*
 * The copy a TREE entry gets, for a caller outside the sandbox child (a
 * retained image's stage, issue 30; docs/session-policy.md, "Resolution and
 * retained images"): fills the directory dst_root (O_RDONLY|O_DIRECTORY)
 * with a copy of the directory src_root (O_RDONLY|O_DIRECTORY) by the rules
 * of glove_mount_plan_add_tree (nothing followed, no mount crossed, regular
 * files, directories and (unless skip_links) symbolic links recreated,
 * everything owned by uid:gid, setuid/setgid/sticky bits dropped, other
 * objects skipped, at most GLOVE_MOUNT_TREE_DEPTH_MAX levels). size is the
 * destination's byte budget, named in the quota message only. Neither
 * descriptor is closed; what was copied before a failure stays. Returns 0
 * or -errno: "materialize.copy", "materialize.quota_exceeded" (ENOSPC or
 * EDQUOT), "materialize.too_deep"; label (borrowed) prefixes messages.
 */
int glove_tree_copy_dir(int src_root, int dst_root, const char *label, uint64_t size, uid_t uid, gid_t gid,
                        bool skip_links, struct glove_error *err);

/*
 * Sets the agent's working directory (absolute, lexically normal; "/"
 * allowed), replacing the one the standard perimeter or the workspace grant
 * chose. The child changes into it after pivot_root ("mount.chdir" when it
 * does not exist there). Returns 0 or -errno ("mount.plan_dest",
 * "mount.plan_too_large").
 */
int glove_mount_plan_set_cwd(struct glove_mount_plan *plan, const char *cwd, struct glove_error *err);

/* The label of entry e for messages: a grant's word, a pinned bind's or
 * tree's copied label, or NULL. */
static inline const char *glove_mount_entry_label(const struct glove_mount_plan *plan, const struct glove_mount_entry *e) {
        return e->label ? e->label : e->name ? plan->data + e->name : NULL;
}

/* The NUL-terminated string at offset off of plan's data (dest, source,
 * options; FILE bytes are NUL-terminated too). */
static inline const char *glove_mount_plan_str(const struct glove_mount_plan *plan, uint32_t off) {
        return plan->data + off;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building a mount plan (include/glove/container/mount_plan.h). Runs in
 * Glove before the clone: it may allocate and read the host. The child
 * executes the plan in perimeter.c.
 */
#include "glove/container/mount_plan.h"

#include <errno.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "glove/container/environment.h"
#include "glove/container/sandbox.h"

/* Host /etc entries the agent may see, read-only. Anything not listed is
 * absent: shadow, gshadow, sudoers, ssh keys, machine-id, ssl/private, npm
 * and git configuration, credentials of any kind. Symbolic links are
 * recreated as links (their target text resolves inside the sandbox). */
static const char *const etc_entries[] = {
        "alternatives", "bash.bashrc", "debian_version", "host.conf", "ld.so.cache", "localtime", "mime.types",
        "nsswitch.conf", "os-release", "profile", "protocols", "services", "ssl/certs", "ssl/openssl.cnf", "timezone",
};

int glove_mount_plan_host_view(size_t i, char *out, size_t size) {
        int n;
        if (i == 0)
                n = snprintf(out, size, "/usr");
        else if (i - 1 < GLOVE_ELEMENTSOF(etc_entries))
                n = snprintf(out, size, "/etc/%s", etc_entries[i - 1]);
        else
                return -ENOENT;
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Regular /etc files up to this size are copied into the sandbox's /etc
 * rather than bound: a copy costs a few system calls, a bind a mount. */
#define ETC_COPY_MAX (256 * 1024)

/* Device nodes bound from the host /dev. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

/* The merged-/usr links (or directories on hosts that are not merged). */
static const char *const usr_links[] = {"bin", "lib", "lib32", "lib64", "libx32", "sbin"};

/* Host-wide knobs under the fresh /proc, made read-only: a root invoker's
 * agent is host uid 0 for permission checks, and sysctl files (core_pattern,
 * ...) check only the owner. */
static const char *const proc_readonly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "asound", "scsi", "driver"};

/* Host-wide files of /proc that only root may read (mode 0400). A root
 * invoker's agent is host uid 0 for the owner check, so they are covered
 * with the host's /dev/null on a nodev mount: opening one fails (EACCES). */
static const char *const proc_root_only[] = {"slabinfo",    "vmallocinfo",  "kpageflags", "kpagecount",
                                             "kpagecgroup", "pagetypeinfo", "timer_list", "kcore",
                                             "kmsg",        "sched_debug",  "mtrr"};

/* Files of /proc that show another namespace's objects to every reader:
 * /proc/keys and /proc/key-users list the kernel keys (description, size,
 * owner) and per-user key quotas of every uid mapped into the reader's user
 * namespace, and the invoker's uid is mapped into the sandbox's. Keyrings are
 * not namespaced (keyctl and add_key are refused by the seccomp filter), so
 * these are masked for every invoker like the root-only ones above. */
static const char *const proc_always_masked[] = {"keys", "key-users"};

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

uid_t glove_mount_plan_inside_id(uid_t outside) {
        return outside == 0 ? GLOVE_SANDBOX_ROOT_INSIDE_ID : outside;
}

static int too_large(struct glove_error *err) {
        return glove_error_set(err, E2BIG, "mount.plan_too_large",
                               "the mount plan would exceed %d entries or %u bytes", GLOVE_MOUNT_PLAN_MAX,
                               GLOVE_MOUNT_PLAN_DATA_MAX);
}

/* Appends len bytes and a NUL to the plan's data; *off is where. */
static int put(struct glove_mount_plan *plan, const void *s, size_t len, uint32_t *off, struct glove_error *err) {
        if (len >= GLOVE_MOUNT_PLAN_DATA_MAX || plan->data_len + len + 1 > GLOVE_MOUNT_PLAN_DATA_MAX)
                return too_large(err);
        if (plan->data_len + len + 1 > plan->data_cap) {
                size_t cap = plan->data_cap ? plan->data_cap : 4096;
                while (cap < plan->data_len + len + 1)
                        cap *= 2;
                if (cap > GLOVE_MOUNT_PLAN_DATA_MAX)
                        cap = GLOVE_MOUNT_PLAN_DATA_MAX;
                char *d = realloc(plan->data, cap);
                if (!d)
                        return glove_error_set(err, ENOMEM, "mount.plan_alloc", "out of memory building the mount plan");
                plan->data = d;
                plan->data_cap = cap;
        }
        *off = (uint32_t)plan->data_len;
        memcpy(plan->data + plan->data_len, s, len);
        plan->data[plan->data_len + len] = '\0';
        plan->data_len += len + 1;
        return 0;
}

static int put_str(struct glove_mount_plan *plan, const char *s, uint32_t *off, struct glove_error *err) {
        return put(plan, s, strlen(s), off, err);
}

/* Whether dest is absolute, lexically normal (no "//", ".", "..", trailing
 * slash) and not "/". */
static bool dest_ok(const char *dest) {
        if (!dest || dest[0] != '/' || dest[1] == '\0' || strlen(dest) >= GLOVE_PATH_MAX)
                return false;
        for (const char *p = dest; *p;) {
                p++; /* past '/' */
                const char *e = strchrnul(p, '/');
                size_t n = (size_t)(e - p);
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p = e;
        }
        return true;
}

/* Appends an entry with destination dest (absolute; checked) and returns it
 * in *out, zeroed but for kind, dest and code. */
static int add(struct glove_mount_plan *plan, enum glove_mount_kind kind, const char *dest, const char *code,
               struct glove_mount_entry **out, struct glove_error *err) {
        if (!dest_ok(dest))
                return glove_error_set(err, EINVAL, "mount.plan_dest",
                                       "mount destination %s is not an absolute, normal path below /", dest ? dest : "(null)");
        if (plan->count >= GLOVE_MOUNT_PLAN_MAX)
                return too_large(err);
        uint32_t off;
        int r = put_str(plan, dest + 1, &off, err);
        if (r < 0)
                return r;
        struct glove_mount_entry *e = &plan->entries[plan->count++];
        *e = (struct glove_mount_entry){.kind = kind, .dest = off, .code = code};
        *out = e;
        return 0;
}

static int add_bytes(struct glove_mount_plan *plan, enum glove_mount_kind kind, const char *dest, const void *data, size_t len,
                     uint32_t mode, const char *code, struct glove_error *err) {
        if (len > GLOVE_MOUNT_FILE_MAX)
                return too_large(err);
        struct glove_mount_entry *e;
        int r = add(plan, kind, dest, code, &e, err);
        if (r < 0)
                return r;
        e->mode = mode;
        e->bytes_len = (uint32_t)len;
        r = put(plan, data, len, &e->bytes, err);
        if (r < 0)
                plan->count--;
        return r;
}

static int add_link(struct glove_mount_plan *plan, const char *dest, const char *target, const char *code,
                    struct glove_error *err) {
        struct glove_mount_entry *e;
        int r = add(plan, GLOVE_MOUNT_SYMLINK, dest, code, &e, err);
        if (r == 0 && (r = put_str(plan, target, &e->source, err)) < 0)
                plan->count--;
        return r;
}

static int add_tree(struct glove_mount_plan *plan, enum glove_mount_kind kind, const char *dest, const char *source,
                    uint32_t flags, uint64_t attrs, const char *code, struct glove_error *err) {
        struct glove_mount_entry *e;
        int r = add(plan, kind, dest, code, &e, err);
        if (r < 0)
                return r;
        e->flags = flags;
        e->attrs = attrs;
        e->mode = 0644;
        if (source && (r = put_str(plan, source, &e->source, err)) < 0)
                plan->count--;
        return r;
}

static int add_fresh(struct glove_mount_plan *plan, enum glove_mount_kind kind, const char *dest, uint64_t attrs,
                     const char *options, struct glove_error *err) {
        struct glove_mount_entry *e;
        int r = add(plan, kind, dest, "mount.fresh", &e, err);
        if (r < 0)
                return r;
        e->attrs = attrs;
        if ((r = put_str(plan, options, &e->options, err)) < 0)
                plan->count--;
        return r;
}

int glove_mount_plan_add_tmpfs(struct glove_mount_plan *plan, const char *dest, uint64_t size, uint32_t mode, uid_t uid,
                               gid_t gid, uint64_t attrs, struct glove_error *err) {
        char opts[160];
        int n = snprintf(opts, sizeof(opts), "mode=%04o,uid=%u,gid=%u", (unsigned)(mode & 07777), (unsigned)uid, (unsigned)gid);
        if (size)
                snprintf(opts + n, sizeof(opts) - (size_t)n, ",size=%llu", (unsigned long long)size);
        int r = add_fresh(plan, GLOVE_MOUNT_TMPFS, dest, attrs | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, opts, err);
        if (r == 0) {
                plan->entries[plan->count - 1].size = size;
                plan->entries[plan->count - 1].mode = mode & 07777;
        }
        return r;
}

int glove_mount_plan_add_file(struct glove_mount_plan *plan, const char *dest, const void *data, size_t len, uint32_t mode,
                              struct glove_error *err) {
        return add_bytes(plan, GLOVE_MOUNT_FILE, dest, data, len, mode & 07777, "mount.file", err);
}

int glove_mount_plan_add_owned_file(struct glove_mount_plan *plan, const char *dest, const void *data, size_t len,
                                    uint32_t mode, uid_t uid, gid_t gid, struct glove_error *err) {
        int r = add_bytes(plan, GLOVE_MOUNT_FILE, dest, data, len, mode & 07777, "mount.file", err);
        if (r == 0) {
                struct glove_mount_entry *e = &plan->entries[plan->count - 1];
                e->flags |= GLOVE_MOUNT_F_OWNED;
                e->uid = uid;
                e->gid = gid;
        }
        return r;
}

int glove_mount_plan_add_dir(struct glove_mount_plan *plan, const char *dest, uint32_t mode, uid_t uid, gid_t gid,
                             struct glove_error *err) {
        struct glove_mount_entry *e;
        int r = add(plan, GLOVE_MOUNT_DIR, dest, "mount.dir", &e, err);
        if (r == 0) {
                e->mode = mode & 07777;
                e->uid = uid;
                e->gid = gid;
        }
        return r;
}

int glove_mount_plan_add_symlink(struct glove_mount_plan *plan, const char *dest, const char *target, struct glove_error *err) {
        return add_link(plan, dest, target, "mount.file", err);
}

int glove_mount_plan_add_bind(struct glove_mount_plan *plan, const char *dest, const char *source, bool optional,
                              struct glove_error *err) {
        if (!source || source[0] != '/')
                return glove_error_set(err, EINVAL, "mount.plan_dest", "bind source %s is not absolute", source ? source : "(null)");
        struct stat st;
        bool dir = stat(source, &st) == 0 ? S_ISDIR(st.st_mode) : true;
        return add_tree(plan, GLOVE_MOUNT_BIND, dest, source, (optional ? GLOVE_MOUNT_F_OPTIONAL : 0) | (dir ? GLOVE_MOUNT_F_DIR : 0),
                        RO_ATTRS, "mount.attach", err);
}

/* A host path that may be a link (recreated with its target text), a
 * directory or a large regular file (bound read-only), a small regular
 * file (copied when copy is set, else bound), something else or absent
 * (skipped). */
static int add_host(struct glove_mount_plan *plan, const char *host, const char *dest, bool copy, const char *code,
                    struct glove_error *err) {
        struct stat st;
        if (lstat(host, &st) < 0)
                return errno == ENOENT ? 0 : glove_error_set(err, errno, "mount.clone", "%s: %s", host, strerror(errno));
        if (S_ISLNK(st.st_mode)) {
                char target[GLOVE_PATH_MAX];
                ssize_t n = readlink(host, target, sizeof(target) - 1);
                if (n < 0)
                        return glove_error_set(err, errno, "mount.clone", "readlink %s: %s", host, strerror(errno));
                if ((size_t)n >= sizeof(target) - 1)
                        return glove_error_set(err, ENAMETOOLONG, "mount.clone", "readlink %s: the target is longer than %zu bytes",
                                               host, sizeof(target) - 2);
                target[n] = '\0';
                return add_link(plan, dest, target, code, err);
        }
        if (S_ISREG(st.st_mode) && copy && st.st_size <= ETC_COPY_MAX) {
                int r = add_tree(plan, GLOVE_MOUNT_COPY, dest, host, GLOVE_MOUNT_F_OPTIONAL, 0, code, err);
                if (r == 0)
                        plan->entries[plan->count - 1].size = (uint64_t)st.st_size;
                return r;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return 0;
        return add_tree(plan, GLOVE_MOUNT_BIND, dest, host, GLOVE_MOUNT_F_OPTIONAL | (S_ISDIR(st.st_mode) ? GLOVE_MOUNT_F_DIR : 0),
                        RO_ATTRS, code, err);
}

static int add_standard(struct glove_mount_plan *plan, const struct glove_mount_plan_params *p, struct glove_error *err) {
        char path[GLOVE_PATH_MAX], dest[GLOVE_PATH_MAX], buf[1024];
        int r = add_tree(plan, GLOVE_MOUNT_BIND, "/usr", "/usr", GLOVE_MOUNT_F_DIR, RO_ATTRS, "mount.usr", err);
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(usr_links); i++) {
                snprintf(path, sizeof(path), "/%s", usr_links[i]);
                r = add_host(plan, path, path, false, "mount.usr", err);
        }
        /* The agent's entry first, so a lookup of its ids finds it even when
         * they coincide with nobody's (an invoker running as 65534). */
        int n = snprintf(buf, sizeof(buf),
                         "agent:x:%u:%u:Glove agent:" GLOVE_ENV_HOME ":/bin/sh\n"
                         "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                         (unsigned)p->uid, (unsigned)p->gid);
        r = r ?: add_bytes(plan, GLOVE_MOUNT_FILE, "/etc/passwd", buf, (size_t)n, 0644, "mount.etc", err);
        n = snprintf(buf, sizeof(buf), "agent:x:%u:\nroot:x:0:\nnogroup:x:65534:\n", (unsigned)p->gid);
        r = r ?: add_bytes(plan, GLOVE_MOUNT_FILE, "/etc/group", buf, (size_t)n, 0644, "mount.etc", err);
        static const char hostname[] = GLOVE_SANDBOX_HOSTNAME "\n";
        static const char hosts[] = "127.0.0.1\tlocalhost " GLOVE_SANDBOX_HOSTNAME "\n::1\tlocalhost ip6-localhost ip6-loopback\n";
        r = r ?: add_bytes(plan, GLOVE_MOUNT_FILE, "/etc/hostname", hostname, sizeof(hostname) - 1, 0644, "mount.etc", err);
        r = r ?: add_bytes(plan, GLOVE_MOUNT_FILE, "/etc/hosts", hosts, sizeof(hosts) - 1, 0644, "mount.etc", err);
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(etc_entries); i++) {
                snprintf(path, sizeof(path), "/etc/%s", etc_entries[i]);
                r = add_host(plan, path, path, true, "mount.etc", err);
        }

        r = r ?: add_fresh(plan, GLOVE_MOUNT_PROC, "/proc", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "", err);
        /* Inotify instances and watches are counted per user in every user
         * namespace up to the host's, where the invoker's own limit applies:
         * the sandbox's namespace gets its own, lower limits (written through
         * the fresh /proc, whose user/ sysctls are those of the sandbox's
         * user namespace, before /proc/sys is made read-only). */
        const struct {
                const char *dest;
                uint32_t value;
        } knobs[] = {
                {"/proc/sys/user/max_inotify_instances", p->inotify_instances},
                {"/proc/sys/user/max_inotify_watches", p->inotify_watches},
        };
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(knobs); i++) {
                if (!knobs[i].value)
                        continue;
                n = snprintf(buf, sizeof(buf), "%u\n", (unsigned)knobs[i].value);
                r = add_bytes(plan, GLOVE_MOUNT_WRITE, knobs[i].dest, buf, (size_t)n, 0, "mount.proc", err);
        }
        /* TCP buffers of the sandbox's own network namespace (per namespace
         * since Linux 4.15; the namespace's owner, PID 1 before it drops its
         * capabilities, may write them). "min default max", the kernel's
         * min and default kept. */
        if (r == 0 && p->tcp_buffer_max) {
                uint32_t max = p->tcp_buffer_max < 65536 ? 65536 : p->tcp_buffer_max;
                n = snprintf(buf, sizeof(buf), "4096 131072 %u\n", (unsigned)max);
                r = add_bytes(plan, GLOVE_MOUNT_WRITE, "/proc/sys/net/ipv4/tcp_rmem", buf, (size_t)n, 0, "mount.proc", err);
                n = snprintf(buf, sizeof(buf), "4096 16384 %u\n", (unsigned)max);
                r = r ?: add_bytes(plan, GLOVE_MOUNT_WRITE, "/proc/sys/net/ipv4/tcp_wmem", buf, (size_t)n, 0, "mount.proc", err);
        }
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(proc_always_masked); i++) {
                snprintf(dest, sizeof(dest), "/proc/%s", proc_always_masked[i]);
                r = add_tree(plan, GLOVE_MOUNT_MASK, dest, "/dev/null", 0,
                             MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "mount.proc", err);
        }
        for (size_t i = 0; r == 0 && p->mask_root_only && i < GLOVE_ELEMENTSOF(proc_root_only); i++) {
                snprintf(dest, sizeof(dest), "/proc/%s", proc_root_only[i]);
                r = add_tree(plan, GLOVE_MOUNT_MASK, dest, "/dev/null", 0,
                             MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "mount.proc", err);
        }
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(proc_readonly); i++) {
                snprintf(dest, sizeof(dest), "/proc/%s", proc_readonly[i]);
                r = add_tree(plan, GLOVE_MOUNT_READONLY, dest, NULL, GLOVE_MOUNT_F_DIR,
                             MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "mount.proc", err);
        }

        r = r ?: add_fresh(plan, GLOVE_MOUNT_TMPFS, "/dev", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, "mode=0755,size=64k,nr_inodes=64",
                           err);
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(dev_nodes); i++) {
                /* Read-only: with a root invoker the agent owns the host's
                 * device inodes and could otherwise chmod them. Reading and
                 * writing the devices needs no writable mount. */
                snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
                r = add_tree(plan, GLOVE_MOUNT_BIND, path, path, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                             "mount.dev", err);
        }
        r = r ?: add_fresh(plan, GLOVE_MOUNT_DEVPTS, "/dev/pts", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                           "newinstance,ptmxmode=0666,mode=0620,max=256", err);
        snprintf(buf, sizeof(buf), "mode=1777,size=%llu", (unsigned long long)(p->disk_bytes ? p->disk_bytes : 64ULL << 20));
        r = r ?: add_fresh(plan, GLOVE_MOUNT_TMPFS, "/dev/shm", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, buf, err);
        static const char *const links[][2] = {
                {"pts/ptmx", "/dev/ptmx"},        {"/proc/self/fd", "/dev/fd"},
                {"/proc/self/fd/0", "/dev/stdin"}, {"/proc/self/fd/1", "/dev/stdout"},
                {"/proc/self/fd/2", "/dev/stderr"},
        };
        for (size_t i = 0; r == 0 && i < GLOVE_ELEMENTSOF(links); i++)
                r = add_link(plan, links[i][1], links[i][0], "mount.dev", err);
        r = r ?: add_tree(plan, GLOVE_MOUNT_TTY, "/dev/console", NULL, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                          "mount.attach", err);

        /* Each private writable tmpfs is sized to the disk limit: the agent
         * fills its own quota (ENOSPC), never the host's disk or memory. */
        char size[48] = "";
        if (p->disk_bytes)
                snprintf(size, sizeof(size), ",size=%llu", (unsigned long long)p->disk_bytes);
        snprintf(buf, sizeof(buf), "mode=1777%s", size);
        r = r ?: add_fresh(plan, GLOVE_MOUNT_TMPFS, "/tmp", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, buf, err);
        snprintf(buf, sizeof(buf), "mode=0700,uid=%u,gid=%u%s", (unsigned)p->uid, (unsigned)p->gid, size);
        r = r ?: add_fresh(plan, GLOVE_MOUNT_TMPFS, GLOVE_ENV_HOME, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, buf, err);
        r = r ?: put_str(plan, GLOVE_ENV_HOME, &plan->cwd, err);
        return r;
}

int glove_mount_plan_new(const struct glove_mount_plan_params *p, struct glove_mount_plan **out, struct glove_error *err) {
        *out = NULL;
        struct glove_mount_plan *plan = calloc(1, sizeof(*plan));
        if (!plan)
                return glove_error_set(err, ENOMEM, "mount.plan_alloc", "out of memory building the mount plan");
        uint32_t empty;
        int r = put(plan, "", 0, &empty, err);
        r = r ?: add_standard(plan, p, err);
        if (r < 0) {
                glove_mount_plan_free(plan);
                return r;
        }
        *out = plan;
        return 0;
}

void glove_mount_plan_free(struct glove_mount_plan *plan) {
        if (!plan)
                return;
        free(plan->data);
        free(plan);
}

static const char *grant_label(const struct glove_grant *g) {
        return g->workspace ? "workspace" : g->mode == GLOVE_GRANT_WRITE ? "read-write grant" : "read-only grant";
}

int glove_mount_plan_add_grants(struct glove_mount_plan *plan, const struct glove_grant_set *set, struct glove_error *err) {
        /* Parents first: a nested grant of the same mode is mounted on top
         * of its parent's bind (insertion sort; at most GLOVE_GRANTS_MAX). */
        size_t order[GLOVE_GRANTS_MAX];
        size_t n = set->count;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        for (size_t i = 1; i < n; i++) {
                size_t v = order[i], j = i;
                for (; j > 0 && strcmp(set->items[order[j - 1]].path, set->items[v].path) > 0; j--)
                        order[j] = order[j - 1];
                order[j] = v;
        }
        size_t count0 = plan->count, data0 = plan->data_len;
        uint32_t cwd0 = plan->cwd;
        int r = 0;
        for (size_t k = 0; r == 0 && k < n; k++) {
                const struct glove_grant *g = &set->items[order[k]];
                uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                if (g->mode == GLOVE_GRANT_READ)
                        attrs |= MOUNT_ATTR_RDONLY;
                r = add_tree(plan, GLOVE_MOUNT_BIND, g->path, g->path, GLOVE_MOUNT_F_GRANT | (g->is_dir ? GLOVE_MOUNT_F_DIR : 0),
                             attrs, "grant.changed", err);
                if (r == 0) {
                        struct glove_mount_entry *e = &plan->entries[plan->count - 1];
                        e->dev = g->dev;
                        e->ino = g->ino;
                        e->label = grant_label(g);
                        if (g->workspace)
                                r = put_str(plan, g->path, &plan->cwd, err);
                }
        }
        if (r < 0) {
                plan->count = count0;
                plan->data_len = data0;
                plan->cwd = cwd0;
        }
        return r;
}

/* Whether source is an absolute, lexically normal host path ("/" too). */
static bool source_ok(const char *source) {
        return source && (strcmp(source, "/") == 0 || dest_ok(source));
}

int glove_mount_plan_add_pinned_bind(struct glove_mount_plan *plan, const char *dest, const char *source, dev_t dev,
                                     ino_t ino, bool is_dir, bool read_only, const char *label, struct glove_error *err) {
        if (!source_ok(source))
                return glove_error_set(err, EINVAL, "mount.plan_dest", "pinned bind source %s is not an absolute, normal path",
                                       source ? source : "(null)");
        size_t count0 = plan->count, data0 = plan->data_len;
        uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0);
        int r = add_tree(plan, GLOVE_MOUNT_BIND, dest, source, GLOVE_MOUNT_F_GRANT | (is_dir ? GLOVE_MOUNT_F_DIR : 0), attrs,
                         "grant.changed", err);
        if (r == 0) {
                struct glove_mount_entry *e = &plan->entries[plan->count - 1];
                e->dev = dev;
                e->ino = ino;
                r = put_str(plan, label ? label : "pinned bind", &e->name, err);
        }
        if (r < 0) {
                plan->count = count0;
                plan->data_len = data0;
        }
        return r;
}

int glove_mount_plan_add_tree(struct glove_mount_plan *plan, const char *dest, uint64_t size, uid_t uid, gid_t gid,
                              const char *source, dev_t dev, ino_t ino, const char *label, struct glove_error *err) {
        if (source && !source_ok(source))
                return glove_error_set(err, EINVAL, "mount.plan_dest", "tree source %s is not an absolute, normal path", source);
        if (size == 0 || size > GLOVE_MOUNT_TREE_SIZE_MAX)
                return glove_error_set(err, EINVAL, "mount.plan_dest", "tree size %llu is not within 1..%llu bytes",
                                       (unsigned long long)size, (unsigned long long)GLOVE_MOUNT_TREE_SIZE_MAX);
        size_t count0 = plan->count, data0 = plan->data_len;
        char opts[192];
        /* Inodes bounded too (kernel memory the size does not count): one
         * per 4 KiB of the size, at least GLOVE_MOUNT_TREE_INODES_MIN. */
        uint64_t inodes = size / 4096 > GLOVE_MOUNT_TREE_INODES_MIN ? size / 4096 : GLOVE_MOUNT_TREE_INODES_MIN;
        snprintf(opts, sizeof(opts), "mode=0755,uid=%u,gid=%u,size=%llu,nr_inodes=%llu", (unsigned)uid, (unsigned)gid,
                 (unsigned long long)size, (unsigned long long)inodes);
        /* The copy's failures carry their own codes; "mount.fresh" is the
         * tmpfs mount's. */
        int r = add_tree(plan, GLOVE_MOUNT_TREE, dest, source, GLOVE_MOUNT_F_DIR, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                         "mount.fresh", err);
        if (r == 0) {
                struct glove_mount_entry *e = &plan->entries[plan->count - 1];
                e->size = size;
                e->mode = 0755;
                e->uid = uid;
                e->gid = gid;
                e->dev = dev;
                e->ino = ino;
                r = put_str(plan, opts, &e->options, err);
                if (r == 0)
                        r = put_str(plan, label ? label : "tree", &e->name, err);
        }
        if (r < 0) {
                plan->count = count0;
                plan->data_len = data0;
        }
        return r;
}

int glove_mount_plan_set_cwd(struct glove_mount_plan *plan, const char *cwd, struct glove_error *err) {
        if (!source_ok(cwd))
                return glove_error_set(err, EINVAL, "mount.plan_dest", "working directory %s is not an absolute, normal path",
                                       cwd ? cwd : "(null)");
        return put_str(plan, cwd, &plan->cwd, err);
}

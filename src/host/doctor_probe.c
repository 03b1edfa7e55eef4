/* SPDX-License-Identifier: Apache-2.0 */
/* glove doctor: the kernel and host probes (doctor_internal.h). */
#include "doctor_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/container/cgroup.h"
#include "glove/supervisor/prepare.h"

void doctor_item_set(struct glove_host_doctor_item *it, enum glove_host_doctor_status st, const char *fix,
                     const char *detail_fmt, ...) {
        it->status = st;
        snprintf(it->fix, sizeof(it->fix), "%s", fix ? fix : "");
        va_list ap;
        va_start(ap, detail_fmt);
        vsnprintf(it->detail, sizeof(it->detail), detail_fmt, ap);
        va_end(ap);
}

void doctor_text(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

/* Runs fn in a forked child; returns 0 when it exited 0, else the errno
 * it exited with (or EIO when it died otherwise / fork failed). */
static int in_child(int (*fn)(void)) {
        pid_t pid = fork();
        if (pid < 0)
                return errno;
        if (pid == 0)
                _exit(fn());
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return EIO;
        return WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
}

/* One small sysctl value, "" when unreadable. */
static void sysctl_text(const char *path, char *buf, size_t size) {
        _cleanup_free_ char *v = NULL;
        size_t n = 0;
        buf[0] = '\0';
        if (glove_file_read_bounded(AT_FDCWD, path, O_NOFOLLOW, 64, &v, &n, NULL) == 0) {
                snprintf(buf, size, "%.*s", (int)n, v);
                buf[strcspn(buf, "\n")] = '\0';
        }
}

static int write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = glove_fd_write_all(fd, text, strlen(text));
        close(fd);
        return r;
}

/* The namespaces glove exec creates (src/container/sandbox.c), and the
 * identity map a sandbox writes. */
static int try_userns(void) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                    CLONE_NEWCGROUP) < 0)
                return errno;
        char map[64];
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
        if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", map) < 0)
                return EPERM;
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
        return write_file("/proc/self/gid_map", map) < 0 ? EPERM : 0;
}

void doctor_probe_userns(struct glove_host_doctor_item *it) {
        it->name = "user_namespaces";
        it->required = true;
        char max[32], clone[32], apparmor[32];
        sysctl_text("/proc/sys/user/max_user_namespaces", max, sizeof(max));
        sysctl_text("/proc/sys/kernel/unprivileged_userns_clone", clone, sizeof(clone));
        sysctl_text("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", apparmor, sizeof(apparmor));
        char facts[256];
        doctor_text(facts, sizeof(facts), "user.max_user_namespaces=%s%s%s%s%s", max[0] ? max : "?",
                 clone[0] ? ", kernel.unprivileged_userns_clone=" : "", clone,
                 apparmor[0] ? ", kernel.apparmor_restrict_unprivileged_userns=" : "", apparmor);
        int e = in_child(try_userns);
        if (e == 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "uid %u can create the user, PID, mount, network, IPC, UTS and cgroup namespaces of a "
                                "sandbox and map itself (%s)", (unsigned)geteuid(), facts);
                return;
        }
        doctor_item_set(it, e == EPERM || e == ENOSPC || e == EACCES ? GLOVE_HOST_DOCTOR_WRONG : GLOVE_HOST_DOCTOR_MISSING,
                        "allow unprivileged user namespaces: sysctl user.max_user_namespaces to a positive number, "
                        "kernel.unprivileged_userns_clone=1 where it exists, and "
                        "kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for glove)",
                        "uid %u cannot create the sandbox namespaces: %s (%s)", (unsigned)geteuid(), strerror(e),
                        facts);
}

static int try_seccomp(void) {
        struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        struct sock_fprog prog = { .len = 1, .filter = allow };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return errno;
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return errno;
        uint32_t action = SECCOMP_RET_ERRNO;
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
                return errno == EOPNOTSUPP ? EOPNOTSUPP : errno;
        return 0;
}

void doctor_probe_seccomp(struct glove_host_doctor_item *it) {
        it->name = "seccomp";
        it->required = true;
        int e = in_child(try_seccomp);
        if (e == 0)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "seccomp filters (SECCOMP_SET_MODE_FILTER) install and SECCOMP_RET_ERRNO is available");
        else
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                                "use a kernel built with CONFIG_SECCOMP_FILTER; glove exec refuses to run an agent "
                                "without its filter",
                                "a seccomp filter could not be installed: %s", strerror(e));
}

void doctor_probe_openat2(struct glove_host_doctor_item *it) {
        it->name = "openat2";
        it->required = false;
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
        long fd = root < 0 ? -1 : syscall(SYS_openat2, root, ".", &how, sizeof(how));
        if (fd >= 0) {
                close((int)fd);
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS works");
                return;
        }
        int e = errno;
        doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                        "a kernel >= 5.6 gives openat2; until then Glove walks paths component by component "
                        "with O_NOFOLLOW, which is slower but equally strict",
                        "openat2 is not available: %s", strerror(e));
}

void doctor_probe_landlock(struct glove_host_doctor_item *it) {
        it->name = "landlock";
        it->required = false;
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi >= 4) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "Landlock ABI %ld: runs with egress or an MCP endpoint may make TCP connections "
                                "only to Glove's listeners (docs/limits.md)", abi);
                return;
        }
        int e = errno;
        if (abi >= 1) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                                "a kernel >= 6.7 gives ABI 4; until then a run with egress can hold as many TCP "
                                "connections as its descriptors allow (docs/limits.md)",
                                "Landlock ABI %ld has no TCP rights", abi);
                return;
        }
        doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                        "boot with lsm=...,landlock (kernel >= 6.7): without it a run with egress can hold as many "
                        "TCP connections as its descriptors allow (docs/limits.md)",
                        "Landlock is %s",
                        e == EOPNOTSUPP ? "built in but disabled at boot" : "not built into this kernel");
}

/* --------------------------------------------------------------- cgroups */

/* Appends "NAME at POINT" for each v1 controller glove uses that a mount
 * carries, and tells which of the needed ones were seen. */
struct cg_seen {
        char v2[256];           /* first cgroup2 mount point, "" none */
        char v1[768];           /* "memory at /sys/fs/cgroup/memory, ..." */
        unsigned v1_roles;      /* 1 memory, 2 pids, 4 cpuacct, 8 cpu */
        bool any_v1;
};

static bool opt_has(const char *opts, const char *word) {
        size_t n = strlen(word);
        for (const char *p = opts; (p = strstr(p, word)); p += n)
                if ((p == opts || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
                        return true;
        return false;
}

static void mountinfo_line(struct cg_seen *s, char *line) {
        /* id parent maj:min root point options [optional...] - fstype source superopts */
        char *sep = strstr(line, " - ");
        if (!sep)
                return;
        *sep = '\0';
        char fstype[32], superopts[512];
        if (sscanf(sep + 3, "%31s %*s %511s", fstype, superopts) != 2)
                return;
        char point[256];
        if (sscanf(line, "%*s %*s %*s %*s %255s", point) != 1)
                return;
        if (strcmp(fstype, "cgroup2") == 0 && !s->v2[0])
                snprintf(s->v2, sizeof(s->v2), "%s", point);
        if (strcmp(fstype, "cgroup") != 0)
                return;
        s->any_v1 = true;
        static const char *const names[] = { "memory", "pids", "cpuacct", "cpu" };
        for (unsigned i = 0; i < 4; i++)
                if (opt_has(superopts, names[i]) && !(s->v1_roles & (1u << i))) {
                        s->v1_roles |= 1u << i;
                        size_t used = strlen(s->v1);
                        snprintf(s->v1 + used, sizeof(s->v1) - used, "%s%s at %s", used ? ", " : "", names[i], point);
                }
}

void doctor_probe_cgroup_version(struct glove_host_doctor_item *it) {
        it->name = "cgroup_version";
        it->required = false;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        if (glove_file_read_bounded(AT_FDCWD, "/proc/self/mountinfo", 0, 1 << 20, &buf, &n, NULL) < 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "mount /proc", "/proc/self/mountinfo cannot be read");
                return;
        }
        struct cg_seen s = { 0 };
        for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                mountinfo_line(&s, line);
        char v2ctl[256] = "";
        if (s.v2[0]) {
                char path[300];
                snprintf(path, sizeof(path), "%s/cgroup.controllers", s.v2);
                sysctl_text(path, v2ctl, sizeof(v2ctl));
        }
        const char *layout = s.v2[0] && s.any_v1 ? "hybrid" : s.v2[0] ? "unified (v2 only)" : s.any_v1 ? "legacy (v1 only)" : "none";
        bool v2_full = s.v2[0] && strstr(v2ctl, "memory") && strstr(v2ctl, "pids") && strstr(v2ctl, "cpu");
        bool v1_full = (s.v1_roles & 7u) == 7u;
        char v2words[600]; /* both parts are at most 255 bytes */
        if (s.v2[0])
                snprintf(v2words, sizeof(v2words), "cgroup2 at %s with controllers: %s", s.v2, v2ctl[0] ? v2ctl : "none");
        else
                snprintf(v2words, sizeof(v2words), "no cgroup2 mount");
        if (v2_full || v1_full)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL, "%s: %s; v1: %s; the limits use %s", layout, v2words,
                                s.v1[0] ? s.v1 : "none", v2_full ? "cgroup v2" : "the v1 memory, pids and cpuacct hierarchies");
        else
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                                "mount cgroup2 with the memory, pids and cpu controllers (systemd does on a unified "
                                "host), or the v1 memory, pids and cpuacct hierarchies",
                                "%s: %s; v1: %s; no hierarchy carries memory, pids and cpu together", layout, v2words,
                                s.v1[0] ? s.v1 : "none");
}

void doctor_probe_cgroup_delegation(struct glove_host_doctor_item *it) {
        it->name = "cgroup_delegation";
        it->required = true;
        struct glove_cgroup_probe p;
        struct glove_error err = { 0 };
        int r = glove_cgroup_probe(&p, &err);
        if (r == 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "uid %u may create run cgroups with the memory, pids and cpu limits (cgroup %s) under %s",
                                (unsigned)geteuid(), p.backend == GLOVE_CGROUP_BACKEND_V2 ? "v2" : "v1", p.parent);
                return;
        }
        const char *why_default = "; without it glove exec runs degraded: memory and pids are not limited, CPU "
                                  "time only per process (RLIMIT_CPU), and --memory, --pids and --cpu-time are refused";
        /* What glove exec degrades on (session.c: make_cgroup). */
        it->degrades = err.code && (strcmp(err.code, "cgroup.not_delegated") == 0 ||
                                    strcmp(err.code, "cgroup.unavailable") == 0);
        if (r == -EACCES)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG,
                                "run Glove as root, or under a systemd unit with Delegate=memory pids cpu (as "
                                "glove daemon install writes for gloved), or have the administrator delegate a "
                                "cgroup subtree with those controllers to this user",
                                "%s: %s%s", err.code, err.message, why_default);
        else
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                                "mount a cgroup hierarchy with the memory, pids and cpu controllers where this "
                                "process's cgroup is visible (see cgroup_version)",
                                "%s: %s%s", err.code ? err.code : "cgroup.unavailable", err.message, why_default);
}

void doctor_probe_retained(struct glove_host_doctor_item *it) {
        it->name = "retained_images";
        it->required = false;
        struct glove_error why = { 0 };
        if (glove_supervisor_retained_probe(&why)) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "mkfs.ext4 is root-owned and not writable by others, /dev/loop-control opens "
                                "read-write and this process may mount: gloved can make retained_write images");
                return;
        }
        const char *c = why.code ? why.code : "";
        const char *fix = strcmp(c, "retained.no_mkfs") == 0 ? "install e2fsprogs (mkfs.ext4 in /usr/sbin or /sbin)"
                          : strcmp(c, "retained.mkfs_unsafe") == 0
                                  ? "make mkfs.ext4 and its directory owned by root and writable by root only"
                          : strcmp(c, "retained.no_loop_control") == 0
                                  ? "load the loop module (modprobe loop) and run gloved where /dev/loop-control "
                                    "can be opened read-write"
                                  : "retained_write images need gloved to run as root (CAP_SYS_ADMIN); other access "
                                    "modes do not";
        doctor_item_set(it, strcmp(c, "retained.mkfs_unsafe") == 0 ? GLOVE_HOST_DOCTOR_WRONG : GLOVE_HOST_DOCTOR_MISSING,
                        fix, "%s: %s (only gloved's retained_write sessions need this)", c[0] ? c : "retained.unavailable",
                        why.message);
}

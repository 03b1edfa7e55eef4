/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/container/seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/cleanup.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define DENY(name, why) {name, EPERM, 0, {{0}}, why, 0}
#define DENY_ARG(name, cmp, why) {name, EPERM, 1, {cmp}, why, 0}
/* ioctl's request and socket's family are 32-bit in the kernel: compare the
 * low 32 bits so upper garbage in the register cannot slip past. */
#define LOW32 0xffffffffULL
#define IOCTL_CMD(req) SCMP_A1(SCMP_CMP_MASKED_EQ, LOW32, (req))
#define CLONE_FLAG(f) SCMP_A0(SCMP_CMP_MASKED_EQ, (f), (f))
#define BIT(i) (1ULL << (i))
#define EGRESS_DENY_FAMILY(f)                                                                          \
        {"socket", EPERM, 1, {SCMP_A0(SCMP_CMP_EQ, (f))}, "only AF_UNIX, AF_INET, AF_INET6 with egress", \
         GLOVE_SECCOMP_EGRESS}
#define PERSONALITY_BIT(i)                                                                               \
        DENY_ARG("personality", SCMP_A0(SCMP_CMP_MASKED_EQ, BIT(i) | BIT(((i) + 1) % 32), BIT(i)),     \
                 "other personalities change address-space layout and ABI")
/* No setuid or setgid file can be made (what systemd calls RestrictSUIDSGID):
 * a file the agent creates in a write grant lives on the host, where the
 * bits would take effect. pos is the argument holding the mode. */
#define SUID_WHY "the agent must not leave setuid or setgid files on the host"
#define NO_SUID_MODE(name, pos)                                                                 \
        {name, EPERM, 1, {SCMP_CMP(pos, SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID)}, SUID_WHY, 0},      \
        {name, EPERM, 1, {SCMP_CMP(pos, SCMP_CMP_MASKED_EQ, S_ISGID, S_ISGID)}, SUID_WHY, 0}
/* open-like calls: only when creating (O_CREAT or O_TMPFILE in the flags at
 * fpos) with those bits in the mode at mpos. */
#define NO_SUID_CREATE(name, fpos, mpos)                                                                  \
        {name, EPERM, 2, {SCMP_CMP(fpos, SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT),                          \
                          SCMP_CMP(mpos, SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID)}, SUID_WHY, 0},              \
        {name, EPERM, 2, {SCMP_CMP(fpos, SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT),                          \
                          SCMP_CMP(mpos, SCMP_CMP_MASKED_EQ, S_ISGID, S_ISGID)}, SUID_WHY, 0},              \
        {name, EPERM, 2, {SCMP_CMP(fpos, SCMP_CMP_MASKED_EQ, __O_TMPFILE, __O_TMPFILE),                  \
                          SCMP_CMP(mpos, SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID)}, SUID_WHY, 0},              \
        {name, EPERM, 2, {SCMP_CMP(fpos, SCMP_CMP_MASKED_EQ, __O_TMPFILE, __O_TMPFILE),                  \
                          SCMP_CMP(mpos, SCMP_CMP_MASKED_EQ, S_ISGID, S_ISGID)}, SUID_WHY, 0}

/* A rule of the inherited-stream mode only (GLOVE_SECCOMP_INHERITED, which
 * comes with the offline managed bits). */
#define INHERITED_MODES (GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_MANAGED | GLOVE_SECCOMP_INHERITED)
#define INHERITED_DENY(name, n, cmps, why) {name, EPERM, n, cmps, why, INHERITED_MODES}
#define INHERITED_FD_WHY "only the committed inherited descriptors may be inspected"

const struct glove_seccomp_rule glove_seccomp_rules[] = {
        /* Terminal injection into the invoker's shell. */
        DENY_ARG("ioctl", IOCTL_CMD(TIOCSTI), "TIOCSTI pushes input into a terminal"),
        DENY_ARG("ioctl", IOCTL_CMD(TIOCLINUX), "TIOCLINUX reads and injects on virtual consoles"),
        /* A line discipline change runs kernel code chosen by the agent, and
         * with dev.tty.ldisc_autoload=1 loads its module. */
        DENY_ARG("ioctl", IOCTL_CMD(TIOCSETD), "TIOCSETD changes the line discipline (and may load its module)"),
        /* Kernel keyrings are not namespaced. */
        DENY("keyctl", "kernel keyrings are shared with the host"),
        DENY("add_key", "kernel keyrings are shared with the host"),
        DENY("request_key", "kernel keyrings are shared with the host"),
        /* Kernel attack surface with no use for an agent. */
        DENY("bpf", "eBPF programs and maps"),
        DENY("perf_event_open", "performance counters leak host activity"),
        DENY("userfaultfd", "widens kernel race windows"),
        DENY("kexec_load", "loads a new kernel"),
        DENY("kexec_file_load", "loads a new kernel"),
        DENY("init_module", "loads a kernel module"),
        DENY("finit_module", "loads a kernel module"),
        DENY("delete_module", "unloads a kernel module"),
        DENY("lookup_dcookie", "kernel profiling interface"),
        DENY("iopl", "raw port I/O"),
        DENY("ioperm", "raw port I/O"),
        /* The mount perimeter is fixed once the agent runs. */
        DENY("mount", "changes the mount perimeter"),
        DENY("umount2", "changes the mount perimeter"),
        DENY("pivot_root", "changes the root"),
        DENY("chroot", "changes the root"),
        DENY("fsopen", "new mount API"),
        DENY("fsconfig", "new mount API"),
        DENY("fsmount", "new mount API"),
        DENY("fspick", "new mount API"),
        DENY("move_mount", "new mount API"),
        DENY("open_tree", "new mount API"),
        DENY("mount_setattr", "new mount API"),
        /* No new namespaces and no joining others. */
        DENY("unshare", "creates namespaces"),
        DENY("setns", "joins namespaces"),
        DENY_ARG("clone", CLONE_FLAG(CLONE_NEWUSER), "clone into a new user namespace"),
        DENY_ARG("clone", CLONE_FLAG(CLONE_NEWNS), "clone into a new mount namespace"),
        DENY_ARG("clone", CLONE_FLAG(CLONE_NEWPID), "clone into a new PID namespace"),
        DENY_ARG("clone", CLONE_FLAG(CLONE_NEWNET), "clone into a new network namespace"),
        DENY_ARG("clone", CLONE_FLAG(CLONE_NEWIPC), "clone into a new IPC namespace"),
        DENY_ARG("clone", CLONE_FLAG(CLONE_NEWUTS), "clone into a new UTS namespace"),
        DENY_ARG("clone", CLONE_FLAG(CLONE_NEWCGROUP), "clone into a new cgroup namespace"),
        {"clone3", ENOSYS, 0, {{0}}, "flags live in memory a filter cannot read; libc falls back to clone", 0},
        /* Other processes' memory and descriptors. */
        DENY("ptrace", "debugging other processes"),
        DENY("process_vm_readv", "reads another process's memory"),
        DENY("process_vm_writev", "writes another process's memory"),
        DENY("pidfd_getfd", "copies another process's descriptors"),
        /* Execution domain: only PER_LINUX (0) and the query 0xffffffff. The
         * kernel reads the low 32 bits. A value other than all-zero and
         * all-one bits has some bit i set whose cyclic neighbour i+1 is clear:
         * one rule per i catches exactly those values. */
        PERSONALITY_BIT(0),
        PERSONALITY_BIT(1),
        PERSONALITY_BIT(2),
        PERSONALITY_BIT(3),
        PERSONALITY_BIT(4),
        PERSONALITY_BIT(5),
        PERSONALITY_BIT(6),
        PERSONALITY_BIT(7),
        PERSONALITY_BIT(8),
        PERSONALITY_BIT(9),
        PERSONALITY_BIT(10),
        PERSONALITY_BIT(11),
        PERSONALITY_BIT(12),
        PERSONALITY_BIT(13),
        PERSONALITY_BIT(14),
        PERSONALITY_BIT(15),
        PERSONALITY_BIT(16),
        PERSONALITY_BIT(17),
        PERSONALITY_BIT(18),
        PERSONALITY_BIT(19),
        PERSONALITY_BIT(20),
        PERSONALITY_BIT(21),
        PERSONALITY_BIT(22),
        PERSONALITY_BIT(23),
        PERSONALITY_BIT(24),
        PERSONALITY_BIT(25),
        PERSONALITY_BIT(26),
        PERSONALITY_BIT(27),
        PERSONALITY_BIT(28),
        PERSONALITY_BIT(29),
        PERSONALITY_BIT(30),
        PERSONALITY_BIT(31),
        /* setuid and setgid bits. openat2 carries its mode in memory the
         * filter cannot read: ENOSYS, and libc and runtimes fall back to openat. */
        NO_SUID_MODE("chmod", 1),
        NO_SUID_MODE("fchmod", 1),
        NO_SUID_MODE("fchmodat", 2),
        NO_SUID_MODE("fchmodat2", 2),
        NO_SUID_MODE("creat", 1),
        NO_SUID_MODE("mknod", 1),
        NO_SUID_MODE("mknodat", 2),
        NO_SUID_CREATE("open", 1, 2),
        NO_SUID_CREATE("openat", 2, 3),
        {"openat2", ENOSYS, 0, {{0}}, "its mode lives in memory a filter cannot read; libc falls back to openat", 0},
        /* Host administration. */
        DENY("acct", "process accounting"),
        DENY("swapon", "swap management"),
        DENY("swapoff", "swap management"),
        DENY("reboot", "reboot"),
        DENY("syslog", "kernel log"),
        DENY("quotactl", "disk quotas"),
        DENY("quotactl_fd", "disk quotas"),
        DENY("vhangup", "hangs up the terminal"),
        /* File handles bypass path-based confinement. */
        DENY("open_by_handle_at", "opens files by handle, bypassing the mount perimeter"),
        DENY("name_to_handle_at", "exposes file handles"),
        /* Linux AIO contexts count against fs.aio-max-nr, one limit for the
         * whole host: an agent could take them all. ENOSYS: libraries fall
         * back to threads. */
        {"io_setup", ENOSYS, 0, {{0}}, "AIO contexts are a host-wide resource", 0},
        /* A lease lets its holder stall every other opener of the file, also
         * on the host, for fs.lease-break-time, even on a read-only grant. */
        DENY_ARG("fcntl", SCMP_A1(SCMP_CMP_MASKED_EQ, LOW32, F_SETLEASE), "file leases stall host openers"),
        /* Pipe buffers are charged to the real uid's user_struct, one count
         * for the whole host (fs.pipe-user-pages-soft): past it every
         * unprivileged process of the invoker's uid fails F_SETPIPE_SZ and
         * gets two-page pipes. No pipe grows past the default 64 KiB (16
         * pages); shrinking stays. The kernel reads the size as 32 bits: any
         * register value above 64 KiB is refused, so upper garbage cannot
         * slip past. */
        {"fcntl", EPERM, 2, {SCMP_A1(SCMP_CMP_MASKED_EQ, LOW32, F_SETPIPE_SZ), SCMP_A2(SCMP_CMP_GT, GLOVE_SECCOMP_PIPE_SIZE_MAX)},
         "pipe buffers count against the invoker's host-wide per-user limit", 0},
        /* fanotify groups are counted per user up to the host's user
         * namespace (user.max_fanotify_groups, 128): an agent took them all.
         * Refused, not halved like inotify: a share per sandbox bounds no
         * number of concurrent sandboxes, and an unprivileged group offers
         * nothing inotify does not. */
        DENY("fanotify_init", "fanotify groups count against the invoker's per-user limit"),
        /* io_uring performs system calls the filter never sees. */
        DENY("io_uring_setup", "io_uring bypasses the filter"),
        DENY("io_uring_enter", "io_uring bypasses the filter"),
        DENY("io_uring_register", "io_uring bypasses the filter"),
        /* Network: offline; only Unix sockets. NE on the full register denies
         * any value whose low 32 bits are not AF_UNIX, and more. */
        {"socket", EPERM, 1, {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}, "only AF_UNIX sockets offline", GLOVE_SECCOMP_OFFLINE},
        DENY_ARG("socketpair", SCMP_A0(SCMP_CMP_NE, AF_UNIX), "only AF_UNIX sockets offline"),
        /* No Unix socket of the agent's own (the default, and managed
         * sessions: spec architecture.md, Platform isolation: network), so no
         * pathname socket in a grant or a materialization can be connected
         * to. Managed and offline, nothing can be connected or configured at
         * all; socketpair pairs are connected already. */
        {"socket", EPERM, 1, {SCMP_A0(SCMP_CMP_EQ, AF_UNIX)}, "no Unix socket of the agent's own reaches a grant",
         GLOVE_SECCOMP_NO_UNIX},
        {"connect", EPERM, 0, {{0}}, "offline managed sessions connect nothing",
         GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_MANAGED | GLOVE_SECCOMP_NO_UNIX},
        {"setsockopt", EPERM, 0, {{0}}, "offline managed sessions configure no socket",
         GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_MANAGED},
        /* inherited-stream-v1 (spec architecture.md, "Historical synthetic
         * status milestone"): the agent adopts the already connected stream
         * at the committed descriptors; peer inspection is refused, and only
         * getsockname and getsockopt(SOL_SOCKET, SO_TYPE) on exactly those
         * descriptors are allowed (Node/libuv classify the stream with
         * them). The rules are alternatives: each refuses one way out of the
         * committed combination. The descriptor is compared on the full
         * register (unsigned): a negative number or upper garbage is refused
         * too. */
        INHERITED_DENY("getpeername", 0, {{0}}, "peer inspection stays denied"),
        INHERITED_DENY("getsockname", 1, {SCMP_A0(SCMP_CMP_LT, GLOVE_SECCOMP_INHERITED_FD_FIRST)}, INHERITED_FD_WHY),
        INHERITED_DENY("getsockname", 1, {SCMP_A0(SCMP_CMP_GT, GLOVE_SECCOMP_INHERITED_FD_LAST)}, INHERITED_FD_WHY),
        INHERITED_DENY("getsockopt", 1, {SCMP_A0(SCMP_CMP_LT, GLOVE_SECCOMP_INHERITED_FD_FIRST)}, INHERITED_FD_WHY),
        INHERITED_DENY("getsockopt", 1, {SCMP_A0(SCMP_CMP_GT, GLOVE_SECCOMP_INHERITED_FD_LAST)}, INHERITED_FD_WHY),
        INHERITED_DENY("getsockopt", 1, {SCMP_A1(SCMP_CMP_NE, SOL_SOCKET)}, "only SOL_SOCKET, SO_TYPE is read"),
        INHERITED_DENY("getsockopt", 1, {SCMP_A2(SCMP_CMP_NE, SO_TYPE)}, "only SOL_SOCKET, SO_TYPE is read"),
        /* No socket of the agent's own becomes a listener or takes a name
         * (a pathname in a writable grant would be a host file). shutdown
         * stays: it only half-closes a stream the agent already holds,
         * which closing it does too, and runtimes end their children's
         * socketpair stdin with it. */
        INHERITED_DENY("bind", 0, {{0}}, "no socket is named in an inherited-stream session"),
        INHERITED_DENY("listen", 0, {{0}}, "no socket listens in an inherited-stream session"),
        INHERITED_DENY("accept", 0, {{0}}, "no socket listens in an inherited-stream session"),
        INHERITED_DENY("accept4", 0, {{0}}, "no socket listens in an inherited-stream session"),
        /* Egress mode: AF_UNIX, AF_INET and AF_INET6 only; every other family
         * by value (libseccomp compares an argument once per rule), and
         * anything past the last family the kernel knows. */
        {"socket", EPERM, 1, {SCMP_A0(SCMP_CMP_GE, 46)}, "only AF_UNIX, AF_INET, AF_INET6 with egress", GLOVE_SECCOMP_EGRESS},
        /* Protocols past UDP (MPTCP 262, SCTP 132, UDP-Lite 136): Landlock's
         * TCP port rights, which keep every TCP connection at Glove's
         * listeners, do not cover them (net/confine.h). The full register:
         * upper garbage is refused too. */
        {"socket", EPERM, 1, {SCMP_A2(SCMP_CMP_GT, IPPROTO_UDP)}, "only TCP and UDP with egress", GLOVE_SECCOMP_EGRESS},
        EGRESS_DENY_FAMILY(0),
        EGRESS_DENY_FAMILY(3),
        EGRESS_DENY_FAMILY(4),
        EGRESS_DENY_FAMILY(5),
        EGRESS_DENY_FAMILY(6),
        EGRESS_DENY_FAMILY(7),
        EGRESS_DENY_FAMILY(8),
        EGRESS_DENY_FAMILY(9),
        EGRESS_DENY_FAMILY(11),
        EGRESS_DENY_FAMILY(12),
        EGRESS_DENY_FAMILY(13),
        EGRESS_DENY_FAMILY(14),
        EGRESS_DENY_FAMILY(15),
        EGRESS_DENY_FAMILY(16),
        EGRESS_DENY_FAMILY(17),
        EGRESS_DENY_FAMILY(18),
        EGRESS_DENY_FAMILY(19),
        EGRESS_DENY_FAMILY(20),
        EGRESS_DENY_FAMILY(21),
        EGRESS_DENY_FAMILY(22),
        EGRESS_DENY_FAMILY(23),
        EGRESS_DENY_FAMILY(24),
        EGRESS_DENY_FAMILY(25),
        EGRESS_DENY_FAMILY(26),
        EGRESS_DENY_FAMILY(27),
        EGRESS_DENY_FAMILY(28),
        EGRESS_DENY_FAMILY(29),
        EGRESS_DENY_FAMILY(30),
        EGRESS_DENY_FAMILY(31),
        EGRESS_DENY_FAMILY(32),
        EGRESS_DENY_FAMILY(33),
        EGRESS_DENY_FAMILY(34),
        EGRESS_DENY_FAMILY(35),
        EGRESS_DENY_FAMILY(36),
        EGRESS_DENY_FAMILY(37),
        EGRESS_DENY_FAMILY(38),
        EGRESS_DENY_FAMILY(39),
        EGRESS_DENY_FAMILY(40),
        EGRESS_DENY_FAMILY(41),
        EGRESS_DENY_FAMILY(42),
        EGRESS_DENY_FAMILY(43),
        EGRESS_DENY_FAMILY(44),
        EGRESS_DENY_FAMILY(45),

};

const size_t glove_seccomp_rules_count = GLOVE_ELEMENTSOF(glove_seccomp_rules);

static void release_ctx(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

int glove_seccomp_build(struct sock_fprog **out, struct glove_error *err) {
        return glove_seccomp_build_mode(GLOVE_SECCOMP_OFFLINE, out, err);
}

int glove_seccomp_build_mode(unsigned mode, struct sock_fprog **out, struct glove_error *err) {
        *out = NULL;
        /* The inherited-stream rules exist offline and managed only: any
         * other combination would silently lack them. */
        const unsigned inherited_needs = GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED;
        if ((mode & GLOVE_SECCOMP_INHERITED) && ((mode & inherited_needs) != inherited_needs || (mode & GLOVE_SECCOMP_EGRESS)))
                return glove_error_set(err, EINVAL, "seccomp.build",
                                       "the inherited-stream filter exists only offline, managed and without Unix sockets");
        _cleanup_(release_ctx) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return glove_error_set(err, ENOMEM, "seccomp.build", "seccomp_init failed");
        /* Any architecture other than the native one: EPERM for everything. */
        int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM));
        if (r < 0)
                return glove_error_set(err, -r, "seccomp.build", "cannot set the foreign-architecture action: %s", strerror(-r));
        for (size_t i = 0; i < glove_seccomp_rules_count; i++) {
                const struct glove_seccomp_rule *rule = &glove_seccomp_rules[i];
                if ((rule->modes & mode) != rule->modes)
                        continue;
                int nr = seccomp_syscall_resolve_name(rule->syscall);
                if (nr == __NR_SCMP_ERROR)
                        return glove_error_set(err, ENOENT, "seccomp.unknown_syscall",
                                               "libseccomp does not know the system call %s; refusing to build an incomplete filter",
                                               rule->syscall);
                r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((uint32_t)rule->errno_value), nr, rule->arg_count,
                                           rule->arg_count ? rule->args : NULL);
                if (r < 0)
                        return glove_error_set(err, -r, "seccomp.build", "rule %zu (%s): %s", i, rule->syscall, strerror(-r));
        }
        /* libseccomp 2.5 exports only to a descriptor: use a memfd. */
        _cleanup_close_ int mfd = memfd_create("glove-seccomp", MFD_CLOEXEC);
        if (mfd < 0)
                return glove_error_set(err, errno, "seccomp.build", "memfd_create: %s", strerror(errno));
        r = seccomp_export_bpf(ctx, mfd);
        if (r < 0)
                return glove_error_set(err, -r, "seccomp.build", "cannot export the BPF program: %s", strerror(-r));
        off_t end = lseek(mfd, 0, SEEK_END);
        if (end <= 0 || end % (off_t)sizeof(struct sock_filter) || end > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
                return glove_error_set(err, EINVAL, "seccomp.build", "exported BPF program has a bad size (%lld bytes)", (long long)end);
        size_t len = (size_t)end;
        _cleanup_free_ struct sock_filter *insns = malloc(len);
        _cleanup_free_ struct sock_fprog *prog = calloc(1, sizeof(*prog));
        if (!insns || !prog)
                return glove_error_set(err, ENOMEM, "seccomp.build", "out of memory");
        if (pread(mfd, insns, len, 0) != (ssize_t)len)
                return glove_error_set(err, EIO, "seccomp.build", "cannot read back the BPF program");
        prog->len = (unsigned short)(len / sizeof(struct sock_filter));
        prog->filter = TAKE_PTR(insns);
        *out = TAKE_PTR(prog);
        return 0;
}

void glove_seccomp_program_free(struct sock_fprog *prog) {
        if (!prog)
                return;
        free(prog->filter);
        free(prog);
}

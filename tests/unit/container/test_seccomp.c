/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/seccomp.h: the deny table against
 * the issue's own list, the build, and the installed filter in a real child
 * process attempting each denied call. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/container/seccomp.h"
#include "seccomp_probe.h"

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* ---- The table, judged against the issue's list ----------------------- */

/* Evaluates one libseccomp comparison on a 64-bit argument value. */
static bool cmp_holds(const struct scmp_arg_cmp *c, const uint64_t args[6]) {
        assert_true(c->arg < 6);
        uint64_t v = args[c->arg];
        switch (c->op) {
        case SCMP_CMP_NE:
                return v != c->datum_a;
        case SCMP_CMP_LT:
                return v < c->datum_a;
        case SCMP_CMP_LE:
                return v <= c->datum_a;
        case SCMP_CMP_EQ:
                return v == c->datum_a;
        case SCMP_CMP_GE:
                return v >= c->datum_a;
        case SCMP_CMP_GT:
                return v > c->datum_a;
        case SCMP_CMP_MASKED_EQ:
                return (v & c->datum_a) == c->datum_b;
        default:
                fail_msg("unknown comparison op %d", (int)c->op);
        }
        return false;
}

/* The errno the table gives name(args), or 0 when no rule matches. */
/* The errno of the first rule for name that applies in mode (every rule
 * whose mode bits mode has; all unmanaged rules for mode 0) and holds. */
static int table_denies_mode3(const char *name, unsigned mode, uint64_t a0, uint64_t a1, uint64_t a2) {
        const uint64_t args[6] = {a0, a1, a2, 0, 0, 0};
        for (size_t i = 0; i < glove_seccomp_rules_count; i++) {
                const struct glove_seccomp_rule *r = &glove_seccomp_rules[i];
                if (strcmp(r->syscall, name) != 0)
                        continue;
                if (mode ? (r->modes & mode) != r->modes : (r->modes & (GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED)) != 0)
                        continue;
                bool all = true;
                for (unsigned k = 0; k < r->arg_count; k++)
                        all = all && cmp_holds(&r->args[k], args);
                if (all)
                        return r->errno_value;
        }
        return 0;
}

static int table_denies_mode(const char *name, unsigned mode, uint64_t a0, uint64_t a1) {
        return table_denies_mode3(name, mode, a0, a1, 0);
}

/* The same for glove exec and glove run (every unmanaged rule). */
static int table_denies(const char *name, uint64_t a0, uint64_t a1) {
        return table_denies_mode(name, 0, a0, a1);
}

/* Denied for every use outside managed sessions: a rule without argument
 * comparisons. */
static bool table_denies_always(const char *name) {
        for (size_t i = 0; i < glove_seccomp_rules_count; i++)
                if (strcmp(glove_seccomp_rules[i].syscall, name) == 0 && glove_seccomp_rules[i].arg_count == 0 &&
                    !(glove_seccomp_rules[i].modes & (GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED)))
                        return true;
        return false;
}

/* The issue's list of system calls denied outright. */
static const char *const issue_denied_always[] = {
        "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
        "init_module", "finit_module", "delete_module", "mount", "umount2", "pivot_root", "chroot", "fsopen",
        "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr", "unshare", "setns", "clone3",
        "ptrace", "process_vm_readv", "process_vm_writev", "acct", "swapon", "swapoff", "reboot", "syslog",
        "quotactl", "open_by_handle_at", "name_to_handle_at", "io_uring_setup", "io_uring_enter",
        "io_uring_register",
};

static void test_table_denies_issue_list(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(issue_denied_always) / sizeof(issue_denied_always[0]); i++) {
                const char *name = issue_denied_always[i];
                if (!table_denies_always(name))
                        fail_msg("%s is not denied unconditionally", name);
                int want = strcmp(name, "clone3") == 0 ? ENOSYS : EPERM;
                assert_int_equal(table_denies(name, 0, 0), want);
                assert_int_equal(table_denies(name, UINT64_MAX, 12345), want);
        }
}

static void test_table_ioctl(void **state) {
        (void)state;
        assert_int_equal(table_denies("ioctl", 0, TIOCSTI), EPERM);
        assert_int_equal(table_denies("ioctl", 7, TIOCLINUX), EPERM);
        /* The kernel reads the request as 32 bits: garbage above them must
         * not get past. */
        assert_int_equal(table_denies("ioctl", 0, 0xffffffff00000000ULL | TIOCSTI), EPERM);
        assert_int_equal(table_denies("ioctl", 0, 0x100000000ULL | TIOCLINUX), EPERM);
        /* Other requests stay allowed. */
        assert_int_equal(table_denies("ioctl", 0, TCGETS), 0);
        assert_int_equal(table_denies("ioctl", 0, TIOCGWINSZ), 0);
        assert_int_equal(table_denies("ioctl", 0, FIONREAD), 0);
        assert_false(table_denies_always("ioctl"));
}

static void test_table_clone_namespace_flags(void **state) {
        (void)state;
        const uint64_t ns_flags[] = {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET,
                                     CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP};
        for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++) {
                /* Alone, with a signal, and hidden among the thread flags. */
                assert_int_equal(table_denies("clone", ns_flags[i], 0), EPERM);
                assert_int_equal(table_denies("clone", ns_flags[i] | SIGCHLD, 0), EPERM);
                assert_int_equal(table_denies("clone",
                                              ns_flags[i] | CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                                                      CLONE_THREAD | CLONE_SYSVSEM,
                                              0),
                                 EPERM);
        }
        /* fork() and pthread_create() keep working. */
        assert_int_equal(table_denies("clone", SIGCHLD, 0), 0);
        assert_int_equal(table_denies("clone", CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD, 0), 0);
        assert_int_equal(table_denies("clone",
                                      CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                                              CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
                                      0),
                         0);
        assert_false(table_denies_always("clone"));
}

static void test_table_personality(void **state) {
        (void)state;
        assert_int_equal(table_denies("personality", 1, 0), EPERM);           /* execution domain 1 */
        assert_int_equal(table_denies("personality", 0x0040000, 0), EPERM);   /* ADDR_NO_RANDOMIZE */
        assert_int_equal(table_denies("personality", 0x0008, 0), EPERM);      /* PER_LINUX32 */
        assert_int_equal(table_denies("personality", 0, 0), 0);               /* PER_LINUX */
}

static void test_table_sockets(void **state) {
        (void)state;
        const char *calls[] = {"socket", "socketpair"};
        const uint64_t families[] = {AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK, AF_BLUETOOTH, AF_ALG,
                                     0x100000000ULL | AF_INET};
        for (size_t c = 0; c < 2; c++) {
                for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
                        assert_int_equal(table_denies(calls[c], families[i], SOCK_STREAM), EPERM);
                assert_int_equal(table_denies(calls[c], AF_UNIX, SOCK_STREAM), 0);
                assert_int_equal(table_denies(calls[c], AF_UNIX, SOCK_DGRAM), 0);
                assert_false(table_denies_always(calls[c]));
        }
}

/* Managed sessions: no socket(AF_UNIX) in either mode, socketpair kept;
 * offline no connect or setsockopt at all, with egress both stay. */
static void test_table_managed_sockets(void **state) {
        (void)state;
        const unsigned m = GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED;
        const unsigned off = GLOVE_SECCOMP_OFFLINE | m, eg = GLOVE_SECCOMP_EGRESS | m;
        assert_int_equal(table_denies_mode("socket", off, AF_UNIX, SOCK_STREAM), EPERM);
        assert_int_equal(table_denies_mode("socket", eg, AF_UNIX, SOCK_STREAM), EPERM);
        assert_int_equal(table_denies_mode("socket", off, AF_INET, SOCK_STREAM), EPERM);
        assert_int_equal(table_denies_mode("socket", eg, AF_INET, SOCK_STREAM), 0);
        assert_int_equal(table_denies_mode("socketpair", off, AF_UNIX, SOCK_STREAM), 0);
        assert_int_equal(table_denies_mode("socketpair", eg, AF_UNIX, SOCK_STREAM), 0);
        assert_int_equal(table_denies_mode("connect", off, 3, 0), EPERM);
        assert_int_equal(table_denies_mode("setsockopt", off, 3, 1), EPERM);
        assert_int_equal(table_denies_mode("connect", eg, 3, 0), 0);
        assert_int_equal(table_denies_mode("setsockopt", eg, 3, 1), 0);
        /* glove exec and glove run: no socket(AF_UNIX) by default, connect
         * kept; with --allow-unix-sockets both. */
        const unsigned ex = GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_NO_UNIX;
        assert_int_equal(table_denies_mode("socket", ex, AF_UNIX, SOCK_STREAM), EPERM);
        assert_int_equal(table_denies_mode("socketpair", ex, AF_UNIX, SOCK_STREAM), 0);
        assert_int_equal(table_denies_mode("connect", ex, 3, 0), 0);
        assert_int_equal(table_denies_mode("setsockopt", ex, 3, 1), 0);
        assert_int_equal(table_denies_mode("socket", GLOVE_SECCOMP_OFFLINE, AF_UNIX, SOCK_STREAM), 0);
}

#define MODE_MANAGED (GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED)
#define MODE_INHERITED (MODE_MANAGED | GLOVE_SECCOMP_INHERITED)
#define MODE_MANAGED_UNIX (GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_MANAGED)

/* inherited-stream-v1: only getsockname and getsockopt(SOL_SOCKET, SO_TYPE)
 * on exactly descriptor 3; no peer inspection, nothing named or listening;
 * the managed offline rules stay. */
static void test_table_inherited(void **state) {
        (void)state;
        const unsigned m = MODE_INHERITED;
        const uint64_t fd = GLOVE_SECCOMP_INHERITED_FD_FIRST;
        assert_int_equal(GLOVE_SECCOMP_INHERITED_FD_FIRST, 3);
        assert_int_equal(GLOVE_SECCOMP_INHERITED_FD_LAST, 3);
        assert_int_equal(table_denies_mode("getsockname", m, fd, 0), 0);
        assert_int_equal(table_denies_mode3("getsockopt", m, fd, SOL_SOCKET, SO_TYPE), 0);
        const uint64_t other_fds[] = {0, 1, 2, 4, 5, 1023, UINT64_MAX /* -1 */, 0xffffffffULL,
                                      0x100000000ULL | 3 /* upper garbage */};
        for (size_t i = 0; i < sizeof(other_fds) / sizeof(other_fds[0]); i++) {
                assert_int_equal(table_denies_mode("getsockname", m, other_fds[i], 0), EPERM);
                assert_int_equal(table_denies_mode3("getsockopt", m, other_fds[i], SOL_SOCKET, SO_TYPE), EPERM);
        }
        const uint64_t other_opts[] = {SO_PEERCRED, SO_RCVBUF, SO_SNDBUF, SO_DOMAIN, SO_ERROR, SO_PEERSEC,
                                       0x100000000ULL | SO_TYPE};
        for (size_t i = 0; i < sizeof(other_opts) / sizeof(other_opts[0]); i++)
                assert_int_equal(table_denies_mode3("getsockopt", m, fd, SOL_SOCKET, other_opts[i]), EPERM);
        assert_int_equal(table_denies_mode3("getsockopt", m, fd, 6 /* SOL_TCP */, SO_TYPE), EPERM);
        assert_int_equal(table_denies_mode3("getsockopt", m, fd, 0x100000000ULL | SOL_SOCKET, SO_TYPE), EPERM);
        assert_int_equal(table_denies_mode("getpeername", m, fd, 0), EPERM);
        const char *const refused[] = {"bind", "listen", "accept", "accept4", "connect", "setsockopt"};
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                assert_int_equal(table_denies_mode(refused[i], m, fd, 0), EPERM);
                assert_int_equal(table_denies_mode(refused[i], m, 4, 0), EPERM);
        }
        assert_int_equal(table_denies_mode("socket", m, AF_UNIX, SOCK_STREAM), EPERM);
        assert_int_equal(table_denies_mode("socketpair", m, AF_UNIX, SOCK_STREAM), 0);
        assert_int_equal(table_denies_mode("shutdown", m, fd, SHUT_WR), 0);
        assert_int_equal(table_denies_mode("shutdown", m, 4, SHUT_WR), 0);
        /* None of it applies to the other managed sessions, nor to glove
         * exec and glove run. */
        const unsigned others[] = {MODE_MANAGED, GLOVE_SECCOMP_EGRESS | GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED,
                                   MODE_MANAGED_UNIX, GLOVE_SECCOMP_OFFLINE, GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_NO_UNIX};
        for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
                assert_int_equal(table_denies_mode("getsockname", others[i], 4, 0), 0);
                assert_int_equal(table_denies_mode3("getsockopt", others[i], 4, SOL_SOCKET, SO_PEERCRED), 0);
                assert_int_equal(table_denies_mode("getpeername", others[i], 4, 0), 0);
                assert_int_equal(table_denies_mode("bind", others[i], 4, 0), 0);
                assert_int_equal(table_denies_mode("accept4", others[i], 4, 0), 0);
        }
}

/* The pathname transport: Unix sockets of the agent's own and connect, no
 * other family and no setsockopt. */
static void test_table_managed_unix(void **state) {
        (void)state;
        const unsigned m = MODE_MANAGED_UNIX;
        assert_int_equal(table_denies_mode("socket", m, AF_UNIX, SOCK_STREAM), 0);
        assert_int_equal(table_denies_mode("socket", m, AF_UNIX, SOCK_DGRAM), 0);
        assert_int_equal(table_denies_mode("connect", m, 3, 0), 0);
        assert_int_equal(table_denies_mode("setsockopt", m, 3, SOL_SOCKET), EPERM);
        const uint64_t families[] = {AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK, 0x100000000ULL | AF_UNIX};
        for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
                assert_int_equal(table_denies_mode("socket", m, families[i], SOCK_STREAM), EPERM);
                assert_int_equal(table_denies_mode("socketpair", m, families[i], SOCK_STREAM), EPERM);
        }
        /* Plain managed keeps refusing both. */
        assert_int_equal(table_denies_mode("socket", MODE_MANAGED, AF_UNIX, SOCK_STREAM), EPERM);
        assert_int_equal(table_denies_mode("connect", MODE_MANAGED, 3, 0), EPERM);
}

/* The inherited rules exist offline and managed only. */
static void test_build_inherited_modes(void **state) {
        (void)state;
        const unsigned bad[] = {
                GLOVE_SECCOMP_INHERITED,
                GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_INHERITED,
                GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_MANAGED | GLOVE_SECCOMP_INHERITED,
                GLOVE_SECCOMP_EGRESS | GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED | GLOVE_SECCOMP_INHERITED,
                MODE_INHERITED | GLOVE_SECCOMP_EGRESS,
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct sock_fprog *prog = NULL;
                struct glove_error err = {0};
                assert_int_equal(glove_seccomp_build_mode(bad[i], &prog, &err), -EINVAL);
                assert_string_equal(err.code, "seccomp.build");
                assert_null(prog);
        }
}

static void test_table_entries_well_formed(void **state) {
        (void)state;
        assert_true(glove_seccomp_rules_count > 0);
        for (size_t i = 0; i < glove_seccomp_rules_count; i++) {
                const struct glove_seccomp_rule *r = &glove_seccomp_rules[i];
                assert_non_null(r->syscall);
                if (seccomp_syscall_resolve_name(r->syscall) == __NR_SCMP_ERROR)
                        fail_msg("rule %zu: libseccomp does not know \"%s\"", i, r->syscall);
                /* clone3 and openat2 carry their flags in memory the filter cannot
                 * read: ENOSYS makes libc fall back to clone and openat; without
                 * io_setup, AIO libraries fall back to threads. */
                int want = strcmp(r->syscall, "clone3") == 0 || strcmp(r->syscall, "openat2") == 0 ||
                                           strcmp(r->syscall, "io_setup") == 0
                                   ? ENOSYS
                                   : EPERM;
                if (r->errno_value != want)
                        fail_msg("rule %zu (%s): errno %d, expected %d", i, r->syscall, r->errno_value, want);
                if (!r->why || !r->why[0])
                        fail_msg("rule %zu (%s): no why", i, r->syscall);
                assert_in_range(r->arg_count, 0, GLOVE_SECCOMP_MAX_ARGS);
                for (unsigned k = 0; k < r->arg_count; k++) {
                        assert_in_range(r->args[k].arg, 0, 5);
                        assert_in_range(r->args[k].op, SCMP_CMP_NE, SCMP_CMP_MASKED_EQ);
                }
        }
}

static void test_build(void **state) {
        (void)state;
        struct sock_fprog *prog = (struct sock_fprog *)0x1;
        struct glove_error err = {0};
        int r = glove_seccomp_build(&prog, &err);
        if (r != 0)
                fail_msg("build: %d %s: %s", r, err.code ? err.code : "", err.message);
        assert_false(glove_error_is_set(&err));
        assert_non_null(prog);
        assert_non_null(prog->filter);
        assert_true(prog->len > 0);
        assert_true(prog->len <= BPF_MAXINSNS);
        /* The program starts by loading the architecture (seccomp_data.arch at offset 4). */
        assert_int_equal(prog->filter[0].code, BPF_LD | BPF_W | BPF_ABS);
        assert_int_equal(prog->filter[0].k, 4);
        /* Every path ends in a return. */
        assert_int_equal(BPF_CLASS(prog->filter[prog->len - 1].code), BPF_RET);
        glove_seccomp_program_free(prog);
        glove_seccomp_program_free(NULL);
}

/* ---- The installed filter, in a child --------------------------------- */

enum probe {
        P_SOCKET_INET,
        P_SOCKET_INET6,
        P_SOCKET_NETLINK,
        P_SOCKET_INET_HIGHBITS,
        P_SOCKETPAIR_INET,
        P_UNSHARE_NEWUSER,
        P_UNSHARE_NEWNS,
        P_CLONE_NEWUSER,
        P_CLONE_NEWNET,
        P_KEYCTL,
        P_ADD_KEY,
        P_PERSONALITY_1,
        P_CLONE3,
        P_IOCTL_TIOCSTI,
        P_IOCTL_TIOCSTI_HIGHBITS,
        P_IOCTL_TIOCLINUX,
        P_BPF,
        P_IO_URING_SETUP,
        P_MOUNT,
        P_X32_GETPID,
        /* positive controls */
        P_OK_SOCKET_UNIX,
        P_OK_SOCKETPAIR_UNIX,
        P_OK_GETPID,
        P_OK_IOCTL_FIONREAD,
        P_OK_PERSONALITY_0,
        P_OK_FORK,
        P_COUNT,
};

static const char *const probe_names[P_COUNT] = {
        [P_SOCKET_INET] = "socket(AF_INET)",
        [P_SOCKET_INET6] = "socket(AF_INET6)",
        [P_SOCKET_NETLINK] = "socket(AF_NETLINK)",
        [P_SOCKET_INET_HIGHBITS] = "socket(1<<32|AF_INET)",
        [P_SOCKETPAIR_INET] = "socketpair(AF_INET)",
        [P_UNSHARE_NEWUSER] = "unshare(CLONE_NEWUSER)",
        [P_UNSHARE_NEWNS] = "unshare(CLONE_NEWNS)",
        [P_CLONE_NEWUSER] = "clone(CLONE_NEWUSER|CLONE_THREAD)",
        [P_CLONE_NEWNET] = "clone(CLONE_NEWNET|CLONE_THREAD)",
        [P_KEYCTL] = "keyctl(KEYCTL_GET_KEYRING_ID)",
        [P_ADD_KEY] = "add_key",
        [P_PERSONALITY_1] = "personality(1)",
        [P_CLONE3] = "clone3",
        [P_IOCTL_TIOCSTI] = "ioctl(TIOCSTI)",
        [P_IOCTL_TIOCSTI_HIGHBITS] = "ioctl(0xffffffff00005412)",
        [P_IOCTL_TIOCLINUX] = "ioctl(TIOCLINUX)",
        [P_BPF] = "bpf",
        [P_IO_URING_SETUP] = "io_uring_setup",
        [P_MOUNT] = "mount",
        [P_X32_GETPID] = "x32 getpid",
        [P_OK_SOCKET_UNIX] = "socket(AF_UNIX)",
        [P_OK_SOCKETPAIR_UNIX] = "socketpair(AF_UNIX)",
        [P_OK_GETPID] = "getpid",
        [P_OK_IOCTL_FIONREAD] = "ioctl(FIONREAD)",
        [P_OK_PERSONALITY_0] = "personality(0)",
        [P_OK_FORK] = "fork",
};

static void record(struct probe_result *res, enum probe p, long ret) {
        probe_record(&res[p], ret);
}

/* Runs every probe. Each is made so that without the filter it fails in a
 * different way or succeeds harmlessly (no process, thread or key is made). */
static void run_probes(struct probe_result *res) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
                _exit(90);
        errno = 0;
        record(res, P_SOCKET_INET, syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        record(res, P_SOCKET_INET6, syscall(SYS_socket, AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        record(res, P_SOCKET_NETLINK, syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0));
        record(res, P_SOCKET_INET_HIGHBITS, syscall(SYS_socket, 0x100000000UL | AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        int sv[2];
        record(res, P_SOCKETPAIR_INET, syscall(SYS_socketpair, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
        record(res, P_UNSHARE_NEWUSER, syscall(SYS_unshare, CLONE_NEWUSER));
        record(res, P_UNSHARE_NEWNS, syscall(SYS_unshare, CLONE_NEWNS));
        /* CLONE_THREAD without CLONE_SIGHAND: EINVAL from the kernel, so no
         * process is ever made, whatever the filter does. */
        record(res, P_CLONE_NEWUSER, syscall(SYS_clone, CLONE_NEWUSER | CLONE_THREAD, 0, NULL, NULL, 0));
        record(res, P_CLONE_NEWNET, syscall(SYS_clone, CLONE_NEWNET | CLONE_THREAD, 0, NULL, NULL, 0));
        record(res, P_KEYCTL, syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0));
        /* Into a keyring that does not exist (ENOKEY without the filter). */
        record(res, P_ADD_KEY, syscall(SYS_add_key, "user", "glove-test", "x", 1, 0x7ffffff0));
        record(res, P_PERSONALITY_1, syscall(SYS_personality, 1));
        /* size 0 is EINVAL without the filter: never a new process. */
        struct clone_args ca = {0};
        record(res, P_CLONE3, syscall(SYS_clone3, &ca, 0));
        char c = 'x';
        record(res, P_IOCTL_TIOCSTI, syscall(SYS_ioctl, pfd[0], (unsigned long)TIOCSTI, &c));
        record(res, P_IOCTL_TIOCSTI_HIGHBITS, syscall(SYS_ioctl, pfd[0], 0xffffffff00005412UL, &c));
        char buf[64] = {0};
        record(res, P_IOCTL_TIOCLINUX, syscall(SYS_ioctl, pfd[0], (unsigned long)TIOCLINUX, buf));
        record(res, P_BPF, syscall(SYS_bpf, 0, NULL, 0));
        record(res, P_IO_URING_SETUP, syscall(SYS_io_uring_setup, 1, NULL));
        record(res, P_MOUNT, syscall(SYS_mount, "none", "/nonexistent-glove", "tmpfs", 0, NULL));
#if defined(__x86_64__)
        record(res, P_X32_GETPID, syscall(0x40000000L | SYS_getpid));
#else
        res[P_X32_GETPID] = (struct probe_result){-1, EPERM};
#endif
        long fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        record(res, P_OK_SOCKET_UNIX, fd);
        if (fd >= 0)
                close((int)fd);
        long r = syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
        record(res, P_OK_SOCKETPAIR_UNIX, r);
        if (r == 0) {
                close(sv[0]);
                close(sv[1]);
        }
        record(res, P_OK_GETPID, syscall(SYS_getpid));
        int avail = -1;
        record(res, P_OK_IOCTL_FIONREAD, syscall(SYS_ioctl, pfd[0], (unsigned long)FIONREAD, &avail));
        record(res, P_OK_PERSONALITY_0, syscall(SYS_personality, 0));
        pid_t pid = fork();
        if (pid == 0)
                _exit(42);
        int st = 0;
        if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 42)
                record(res, P_OK_FORK, 0);
        else
                record(res, P_OK_FORK, -1);
        close(pfd[0]);
        close(pfd[1]);
}

static void run_probes_in_child(void *out, void *arg) {
        (void)arg;
        run_probes(out);
}

/* Runs the probes in a child under prog (NULL: no filter). Returns the
 * child's install result (0 or -errno). */
static int probe_in_child(const struct sock_fprog *prog, struct probe_result *res) {
        return probe_fork(prog, NULL, run_probes_in_child, NULL, res, sizeof(struct probe_result) * P_COUNT);
}

static void expect_errno(const struct probe_result *res, enum probe p, int want) {
        probe_expect(&res[p], probe_names[p], want);
}

static void expect_ok(const struct probe_result *res, enum probe p) {
        probe_expect(&res[p], probe_names[p], 0);
}

static void check_filter_in_child(const struct sock_fprog *prog) {
        struct probe_result res[P_COUNT];
        int install = probe_in_child(prog, res);
        if (install != 0)
                fail_msg("glove_seccomp_install: %d (%s)", install, strerror(-install));
        for (int p = 0; p < P_X32_GETPID; p++)
                expect_errno(res, (enum probe)p, p == P_CLONE3 ? ENOSYS : EPERM);
        /* x32 system calls are a foreign ABI: EPERM for all of them. */
        expect_errno(res, P_X32_GETPID, EPERM);
        for (int p = P_OK_SOCKET_UNIX; p < P_COUNT; p++)
                expect_ok(res, (enum probe)p);
        assert_true(res[P_OK_GETPID].ret > 0);
        assert_int_equal(res[P_OK_IOCTL_FIONREAD].ret, 0);
}

/* The program glove_seccomp_build() makes, installed in a child. */
static void test_filter_denies_in_child(void **state) {
        (void)state;
        struct sock_fprog *prog = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_seccomp_build(&prog, &err), 0);
        check_filter_in_child(prog);
        glove_seccomp_program_free(prog);
}

/* The prebuilt program is the one the launch path installs: the same
 * instructions as a fresh build, and the same denials in a child. */
static void test_prebuilt_matches_build(void **state) {
        (void)state;
        struct sock_fprog *prog = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_seccomp_build(&prog, &err), 0);
        assert_int_equal(glove_seccomp_prebuilt.len, prog->len);
        assert_non_null(glove_seccomp_prebuilt.filter);
        for (unsigned i = 0; i < prog->len; i++) {
                const struct sock_filter *a = &glove_seccomp_prebuilt.filter[i], *b = &prog->filter[i];
                if (a->code != b->code || a->jt != b->jt || a->jf != b->jf || a->k != b->k)
                        fail_msg("instruction %u differs: prebuilt {%#x,%u,%u,%#x}, built {%#x,%u,%u,%#x}", i, a->code,
                                 a->jt, a->jf, a->k, b->code, b->jt, b->jf, b->k);
        }
        glove_seccomp_program_free(prog);
}

/* Each prebuilt program is the fresh build of its mode. */
static void expect_prebuilt_is(const struct sock_fprog *pre, unsigned mode, const char *name) {
        struct sock_fprog *prog = NULL;
        struct glove_error err = {0};
        if (glove_seccomp_build_mode(mode, &prog, &err) < 0)
                fail_msg("%s: build: %s: %s", name, err.code, err.message);
        if (pre->len != prog->len)
                fail_msg("%s: %u instructions prebuilt, %u built", name, pre->len, prog->len);
        for (unsigned i = 0; i < prog->len; i++) {
                const struct sock_filter *a = &pre->filter[i], *b = &prog->filter[i];
                if (a->code != b->code || a->jt != b->jt || a->jf != b->jf || a->k != b->k)
                        fail_msg("%s: instruction %u differs", name, i);
        }
        glove_seccomp_program_free(prog);
}

static void test_prebuilt_transports_match_build(void **state) {
        (void)state;
        expect_prebuilt_is(&glove_seccomp_prebuilt_managed, MODE_MANAGED, "managed");
        expect_prebuilt_is(&glove_seccomp_prebuilt_managed_inherited, MODE_INHERITED, "managed_inherited");
        expect_prebuilt_is(&glove_seccomp_prebuilt_managed_unix, MODE_MANAGED_UNIX, "managed_unix");
        /* Three different programs. */
        assert_true(glove_seccomp_prebuilt_managed_inherited.len != glove_seccomp_prebuilt_managed.len ||
                    memcmp(glove_seccomp_prebuilt_managed_inherited.filter, glove_seccomp_prebuilt_managed.filter,
                           glove_seccomp_prebuilt_managed.len * sizeof(struct sock_filter)) != 0);
        assert_true(glove_seccomp_prebuilt_managed_unix.len != glove_seccomp_prebuilt_managed.len ||
                    memcmp(glove_seccomp_prebuilt_managed_unix.filter, glove_seccomp_prebuilt_managed.filter,
                           glove_seccomp_prebuilt_managed.len * sizeof(struct sock_filter)) != 0);
}

static void test_prebuilt_denies_in_child(void **state) {
        (void)state;
        check_filter_in_child(&glove_seccomp_prebuilt);
}

/* The same probes without the filter give other answers: the denials above
 * come from Glove's filter, not from the host. */
static void test_probes_differ_without_filter(void **state) {
        (void)state;
        int outer = outer_seccomp_mode();
        if (outer != 0) {
                print_message("skipped: this test process already runs under a seccomp filter (Seccomp: %d), so the "
                              "unfiltered answers cannot be observed; the filtered test still ran\n", outer);
                skip();
        }
        struct probe_result res[P_COUNT];
        assert_int_equal(probe_in_child(NULL, res), 0);
        expect_errno(res, P_CLONE3, EINVAL);
        expect_errno(res, P_IOCTL_TIOCSTI, ENOTTY);
        expect_errno(res, P_IOCTL_TIOCSTI_HIGHBITS, ENOTTY);
        expect_errno(res, P_CLONE_NEWUSER, EINVAL);
        expect_errno(res, P_CLONE_NEWNET, EINVAL);
        for (int p = P_OK_SOCKET_UNIX; p < P_COUNT; p++)
                expect_ok(res, (enum probe)p);
}

#if defined(__x86_64__)
/* getpid through the i386 entry (int 0x80; __NR_getpid is 20 there). */
static long int80_getpid(void) {
        long ret;
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "cc", "r8", "r9", "r10", "r11");
        return (long)(int)ret;
}

/* Exit status of a child that makes the i386 call, optionally under prog:
 * 0 when it returned a pid, 1 when it returned -EPERM, 2 otherwise; or
 * 128+signal when it died (no IA32 emulation). */
static int int80_child(const struct sock_fprog *prog) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (prog && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || glove_seccomp_install(prog) < 0))
                        _exit(3);
                long r = int80_getpid();
                _exit(r > 0 ? 0 : r == -EPERM ? 1 : 2);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
#endif

static void test_foreign_abi_i386(void **state) {
        (void)state;
#if defined(__x86_64__)
        int base = int80_child(NULL);
        if (base != 0) {
                print_message("skipped: the i386 entry (int 0x80) does not work on this kernel without a filter "
                              "(status %d; no IA32 emulation), so there is nothing to deny\n", base);
                skip();
        }
        struct sock_fprog *prog = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_seccomp_build(&prog, &err), 0);
        int filtered = int80_child(prog);
        glove_seccomp_program_free(prog);
        if (filtered != 1)
                fail_msg("i386 getpid under the filter: status %d, expected the call to fail with EPERM", filtered);
#else
        print_message("skipped: the i386 ABI test applies to x86_64 only\n");
        skip();
#endif
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table_denies_issue_list),
                cmocka_unit_test(test_table_ioctl),
                cmocka_unit_test(test_table_clone_namespace_flags),
                cmocka_unit_test(test_table_personality),
                cmocka_unit_test(test_table_sockets),
                cmocka_unit_test(test_table_managed_sockets),
                cmocka_unit_test(test_table_inherited),
                cmocka_unit_test(test_table_managed_unix),
                cmocka_unit_test(test_build_inherited_modes),
                cmocka_unit_test(test_table_entries_well_formed),
                cmocka_unit_test(test_build),
                cmocka_unit_test(test_filter_denies_in_child),
                cmocka_unit_test(test_prebuilt_matches_build),
                cmocka_unit_test(test_prebuilt_denies_in_child),
                cmocka_unit_test(test_probes_differ_without_filter),
                cmocka_unit_test(test_prebuilt_transports_match_build),
                cmocka_unit_test(test_foreign_abi_i386),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The seccomp filter of the sandbox (issue "glove exec", Seccomp; spec
 * architecture.md, Platform isolation).
 *
 * Default allow with a deny list. Every denial returns an errno (EPERM, or
 * ENOSYS for clone3 so that libc falls back to clone, whose flags can be
 * inspected); nothing is killed silently. The deny list is one table,
 * glove_seccomp_rules, readable top to bottom.
 *
 * Foreign ABIs: the filter contains only the native architecture, and the
 * action for any other architecture (i386 via int 0x80, and x32 syscalls
 * with __X32_SYSCALL_BIT) is EPERM for every system call.
 */

#include <linux/filter.h>
#include <seccomp.h>
#include <stddef.h>

#include "glove/base/error.h"

/* Most argument comparisons one rule carries. */
#define GLOVE_SECCOMP_MAX_ARGS 2

/* The largest pipe buffer, in bytes, F_SETPIPE_SZ may ask for inside the
 * sandbox: the kernel's default (16 pages). Larger requests fail with EPERM,
 * as the kernel itself answers past fs.pipe-user-pages-soft. */
#define GLOVE_SECCOMP_PIPE_SIZE_MAX 65536

/* One deny rule: when the named system call is made and every argument
 * comparison holds (all of them, AND), the call fails with errno_value. A rule
 * with no comparisons denies every use of the call. Several rules for one call
 * are alternatives (OR). */
struct glove_seccomp_rule {
        const char *syscall;      /* libseccomp name, e.g. "ioctl" */
        int errno_value;          /* EPERM, or ENOSYS for clone3 */
        unsigned arg_count;       /* 0..GLOVE_SECCOMP_MAX_ARGS */
        struct scmp_arg_cmp args[GLOVE_SECCOMP_MAX_ARGS];
        const char *why;          /* one line for humans and the docs */
        unsigned modes;           /* GLOVE_SECCOMP_* bits the filter's mode must all have
                                   * for the rule to apply; 0 means every mode */
};

/* The two network modes: offline (only AF_UNIX sockets) and egress (also AF_INET
 * and AF_INET6, which reach nothing but the sandbox's own loopback helper
 * because the network namespace has no route). */
#define GLOVE_SECCOMP_OFFLINE 1u
#define GLOVE_SECCOMP_EGRESS 2u
/* Added to either: socket(AF_UNIX) is refused too, so the agent has no Unix
 * socket of its own and cannot connect to a pathname socket inside a grant
 * (socketpair stays: runtimes make their child stdio with it). The default
 * of glove exec and glove run, and of managed sessions. */
#define GLOVE_SECCOMP_NO_UNIX 4u
/* Added with GLOVE_SECCOMP_NO_UNIX for a gloved managed session (spec
 * architecture.md: the offline rule denies socket, connect and setsockopt,
 * Unix sockets included): offline, connect and setsockopt are refused on
 * anything. */
#define GLOVE_SECCOMP_MANAGED 8u
/* Added to GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_NO_UNIX |
 * GLOVE_SECCOMP_MANAGED for an inherited-stream-v1 session (spec
 * architecture.md, "Historical synthetic status milestone"; session-policy.md,
 * "Guest observation channels and Sage guest proposals"): the agent holds one
 * already connected AF_UNIX stream at the committed descriptor range
 * GLOVE_SECCOMP_INHERITED_FD_FIRST..GLOVE_SECCOMP_INHERITED_FD_LAST (the
 * sandbox installs it there: container/sandbox.h, has_inherit_fd). On top of
 * the offline managed rules (no socket of its own, no connect, no
 * setsockopt on anything):
 *   getpeername                  refused on every descriptor
 *   getsockname                  refused unless fd is in the committed range
 *   getsockopt                   refused unless fd is in the committed range
 *                                and level == SOL_SOCKET and optname ==
 *                                SO_TYPE (so SO_PEERCRED, SO_RCVBUF, ... are
 *                                refused even there)
 *   bind, listen, accept, accept4  refused on every descriptor
 * The descriptor, level and optname are compared on the full 64-bit register:
 * upper garbage (which the kernel would ignore) is refused too.
 * shutdown stays allowed everywhere: it only half-closes a stream the agent
 * holds (which close does as well), and runtimes end the socketpair stdin of
 * their children with it. read, write, send and recv on the stream are
 * allowed; the supervisor's end must read without ancillary data (a plain
 * read or recv), so that descriptors the agent might attach with SCM_RIGHTS
 * are discarded by the kernel.
 * Because getsockopt and getsockname are refused on every other descriptor,
 * a runtime inside the sandbox that classifies a socket stdio it was given
 * (Node/libuv's uv_guess_handle on a child started with socketpair pipes)
 * sees an unknown handle there; the spec commits exactly this.
 * Offline only: building it with GLOVE_SECCOMP_EGRESS, or without the three
 * offline managed bits, fails ("seccomp.build"); an inherited session with
 * egress is refused by the session engine (session.h, has_inherit_fd). */
#define GLOVE_SECCOMP_INHERITED 16u
/* The committed contiguous child-descriptor range of the inherited stream:
 * exactly descriptor 3, as the sandbox installs it. */
#define GLOVE_SECCOMP_INHERITED_FD_FIRST 3
#define GLOVE_SECCOMP_INHERITED_FD_LAST 3

/* The deny table, in the order the rules are added. */
extern const struct glove_seccomp_rule glove_seccomp_rules[];
extern const size_t glove_seccomp_rules_count;

/*
 * Builds the filter from glove_seccomp_rules into a classic BPF program.
 * *prog receives a malloc'd sock_fprog whose filter array is also malloc'd;
 * free both with glove_seccomp_program_free(). Building is done once in the
 * parent before any namespace exists, so the child only installs the program.
 *
 * Errors: -ENOENT "seccomp.unknown_syscall" when libseccomp does not know a
 * syscall in the table (fail closed: an incomplete filter is never built);
 * other -errno "seccomp.build".
 */
int glove_seccomp_build(struct sock_fprog **prog, struct glove_error *err);

/* As glove_seccomp_build, for mode GLOVE_SECCOMP_OFFLINE or
 * GLOVE_SECCOMP_EGRESS, either with GLOVE_SECCOMP_NO_UNIX (and then
 * optionally GLOVE_SECCOMP_MANAGED, and offline then optionally
 * GLOVE_SECCOMP_INHERITED) or not (glove_seccomp_build is the offline one
 * without either; GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_MANAGED without
 * GLOVE_SECCOMP_NO_UNIX is the pathname-transport filter,
 * glove_seccomp_prebuilt_managed_unix). Errors as glove_seccomp_build, and
 * -EINVAL "seccomp.build" for GLOVE_SECCOMP_INHERITED in any other
 * combination. */
int glove_seccomp_build_mode(unsigned mode, struct sock_fprog **prog, struct glove_error *err);

void glove_seccomp_program_free(struct sock_fprog *prog);

/*
 * The program glove_seccomp_build() returns, compiled at build time by
 * glove-seccomp-gen (src/container/seccomp_gen.c) and linked in through
 * glove_seccomp_prebuilt_dep: offline, Unix sockets allowed (glove exec
 * --unix-sockets). Eight programs are prebuilt: this one, the egress one, the
 * two GLOVE_SECCOMP_NO_UNIX ones (glove exec's default), the two managed
 * ones (gloved) and the two local-service transport ones (managed_inherited,
 * managed_unix).
 */
extern const struct sock_fprog glove_seccomp_prebuilt;
/* The egress-mode program, prebuilt the same way. */
extern const struct sock_fprog glove_seccomp_prebuilt_egress;
/* Offline and egress with GLOVE_SECCOMP_NO_UNIX (glove exec and glove run
 * without --unix-sockets), prebuilt the same way. */
extern const struct sock_fprog glove_seccomp_prebuilt_no_unix;
extern const struct sock_fprog glove_seccomp_prebuilt_no_unix_egress;
/* The managed-session programs (GLOVE_SECCOMP_NO_UNIX | GLOVE_SECCOMP_MANAGED
 * added to offline and to egress), prebuilt the same way. */
extern const struct sock_fprog glove_seccomp_prebuilt_managed;
extern const struct sock_fprog glove_seccomp_prebuilt_managed_egress;
/* inherited-stream-v1 (GLOVE_SECCOMP_OFFLINE | GLOVE_SECCOMP_NO_UNIX |
 * GLOVE_SECCOMP_MANAGED | GLOVE_SECCOMP_INHERITED): the managed offline
 * program plus the inherited-stream rules above. There is no egress variant:
 * an inherited-stream session is offline only. */
extern const struct sock_fprog glove_seccomp_prebuilt_managed_inherited;
/* The compatibility pathname transport of local services (spec
 * architecture.md, "Historical synthetic status milestone": the alias
 * sockets of /run/glove-services/local): GLOVE_SECCOMP_OFFLINE |
 * GLOVE_SECCOMP_MANAGED without GLOVE_SECCOMP_NO_UNIX. socket(AF_UNIX, ...)
 * and connect are allowed; every other socket family and setsockopt stay
 * refused. This WIDENS the managed boundary: the agent can connect to any
 * Unix socket reachable by path in its mount perimeter (every pathname
 * socket inside a grant or a materialization, not only the alias sockets),
 * and bind one in a writable grant. That is why the pathname transport
 * advertises guest-channel capability 0 and only inherited-stream-v1 (with
 * glove_seccomp_prebuilt_managed_inherited) may advertise 1. */
extern const struct sock_fprog glove_seccomp_prebuilt_managed_unix;
/* The first native system call number the build's libseccomp does not know
 * (every lower one it knows), found by glove-seccomp-gen. */
extern const unsigned glove_seccomp_first_unknown;

/*
 * Installs prog on the calling thread with seccomp(SECCOMP_SET_MODE_FILTER),
 * then, on x86_64, a second small filter that makes every native system
 * call numbered glove_seccomp_first_unknown or above fail with ENOSYS: a
 * call newer than the deny table (a new mount or namespace interface, say)
 * is refused rather than allowed by default. The kernel runs both filters
 * and takes the stricter answer. The caller must have set no_new_privs
 * first. Returns 0 or -errno. Async-signal-safe (used between clone and
 * execve).
 */
int glove_seccomp_install(const struct sock_fprog *prog);

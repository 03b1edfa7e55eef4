/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/container/sandbox.h"
#include "glove/container/mount_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "internal.h"

#define NAMESPACE_FLAGS                                                                                 \
        (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |      \
         CLONE_NEWCGROUP)

int glove_report_send(int fd, enum report_kind kind, int value, const char *code, const char *message) {
        struct report r = {.kind = kind, .value = value};
        if (code)
                snprintf(r.code, sizeof(r.code), "%s", code);
        if (message)
                snprintf(r.message, sizeof(r.message), "%s", message);
        return glove_fd_write_all(fd, &r, sizeof(r));
}

/* Every code the sandbox child can report (its steps in sandbox.c,
 * perimeter.c, init.c, the base helpers they call, and Glove's pid1_setup
 * hooks). A received code is matched against this immutable table so that
 * struct glove_error gets a static string without a buffer shared between
 * sandboxes; tests/unit/container/test_sandbox.c checks the sources against
 * it. */
static const char *const child_codes[] = {
        "file.invalid_argument", "file.no_memory", "file.open", "file.read", "file.too_large",
        "egress.channel",   "egress.helper",  "egress.listen",       "egress.loopback", "egress.no_rule",
        "glove.unknown",    "grant.changed",  "grant.kernel_fs",     "grant.submount",  "mount.attach",    "mount.chdir",
        "mount.check",      "mount.clone",    "mount.dev",           "mount.etc",       "mount.file",      "mount.fresh",
        "mount.mountpoint", "mount.pivot",    "mount.private",       "mount.proc",      "mount.readonly",
        "mount.root",       "mount.setattr",  "mount.usr",           "path.escape",     "path.missing",
        "materialize.copy", "materialize.quota_exceeded",            "materialize.too_deep",
        "path.open",        "path.relative",  "path.symlink",        "sandbox.argv",    "sandbox.cgroupns",
        "sandbox.clone",    "sandbox.close_range", "sandbox.fork",   "sandbox.inherit_fd",   "sandbox.hostname", "sandbox.idmap",
        "sandbox.pipe",     "sandbox.privileges", "sandbox.release", "sandbox.rlimit", "sandbox.setsid",  "sandbox.setup",
        "sandbox.stdio",    "sandbox.tty",    "sandbox.userns",
};

const char *glove_report_code_lookup(const char *code) {
        for (size_t i = 0; code && i < GLOVE_ELEMENTSOF(child_codes); i++)
                if (strcmp(code, child_codes[i]) == 0)
                        return child_codes[i];
        return NULL;
}

/* Reads one whole report; returns 1 on a report, 0 on end of file, -errno. */
static int report_read(int fd, struct report *r) {
        int n = glove_fd_read_exact(fd, r, sizeof(*r));
        if (n == -EPIPE)
                return 0;
        if (n < 0)
                return n;
        r->code[sizeof(r->code) - 1] = '\0';
        r->message[sizeof(r->message) - 1] = '\0';
        return 1;
}

static int write_file_at(int dirfd, const char *name, const char *content) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, content, strlen(content));
        if (n < 0)
                return -errno;
        return (size_t)n == strlen(content) ? 0 : -EIO;
}

static int write_idmaps(struct glove_sandbox *sb, struct glove_error *err) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d", (int)sb->pid);
        _cleanup_close_ int dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return glove_error_set(err, errno, "sandbox.idmap", "cannot open %s: %s", path, strerror(errno));
        /* The PID cannot be reused while it is our unreaped child; the pidfd
         * check makes sure the directory is the child's. */
        if (syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0)
                return glove_error_set(err, errno, "sandbox.idmap", "sandbox child vanished before its maps were written");
        char line[96];
        int r = write_file_at(dir, "setgroups", "deny");
        if (r < 0)
                return glove_error_set(err, -r, "sandbox.idmap", "cannot deny setgroups: %s", strerror(-r));
        snprintf(line, sizeof(line), "%u %u %u\n", sb->uid_map.inside, sb->uid_map.outside, sb->uid_map.count);
        r = write_file_at(dir, "uid_map", line);
        if (r < 0)
                return glove_error_set(err, -r, "sandbox.idmap", "cannot write uid_map \"%u %u 1\": %s",
                                       sb->uid_map.inside, sb->uid_map.outside, strerror(-r));
        snprintf(line, sizeof(line), "%u %u %u\n", sb->gid_map.inside, sb->gid_map.outside, sb->gid_map.count);
        r = write_file_at(dir, "gid_map", line);
        if (r < 0)
                return glove_error_set(err, -r, "sandbox.idmap", "cannot write gid_map \"%u %u 1\": %s",
                                       sb->gid_map.inside, sb->gid_map.outside, strerror(-r));
        return 0;
}

/* Closes every descriptor above 2 except the (up to five) given ones. */
static int close_all_but(int a, int b, int c, int d, int e) {
        enum { N = 5 };
        int keep[N] = {a, b, c, d, e};
        /* sort ascending; -1 entries sort first and are skipped */
        for (int i = 0; i < N; i++)
                for (int j = i + 1; j < N; j++)
                        if (keep[j] < keep[i]) {
                                int t = keep[i];
                                keep[i] = keep[j];
                                keep[j] = t;
                        }
        unsigned next = 3;
        for (int i = 0; i < N; i++) {
                if (keep[i] < 3 || (unsigned)keep[i] < next)
                        continue;
                if ((unsigned)keep[i] > next && syscall(SYS_close_range, next, (unsigned)keep[i] - 1, 0) < 0)
                        return -1;
                next = (unsigned)keep[i] + 1;
        }
        return (int)syscall(SYS_close_range, next, ~0U, 0);
}

/* Parses the unsigned decimal at *p, moving *p past it. */
static unsigned long long parse_ull(const char **p) {
        unsigned long long v = 0;
        while (**p >= '0' && **p <= '9')
                v = v * 10 + (unsigned long long)(*(*p)++ - '0');
        return v;
}

/* Overwrites this process's argument area (what /proc/PID/cmdline shows)
 * with "glove-init" and NULs: PID 1's command line is readable by the
 * agent, and Glove's argv (upstream arguments, policy paths) must not be
 * in it. The bounds come from fields 48 and 49 (arg_start, arg_end) of
 * /proc/self/stat (proc(5)), counted after the last ')' since the command
 * name may hold anything. No allocation: safe after a clone from a
 * multi-threaded process. Returns 0 or -errno. */
static int hide_argv(void) {
        char buf[2048];
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t got = 0;
        for (;;) {
                ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
                if (got == sizeof(buf) - 1)
                        break;
        }
        close(fd);
        buf[got] = '\0';
        const char *p = strrchr(buf, ')');
        if (!p)
                return -EPROTO;
        p++;
        unsigned long long arg_start = 0, arg_end = 0;
        /* After ')' come field 3 (state) onwards, each preceded by a space. */
        for (int field = 3; field <= 49; field++) {
                if (*p != ' ')
                        return -EPROTO;
                p++;
                if (field == 3) {
                        if (!*p)
                                return -EPROTO;
                        p++;
                        continue;
                }
                if (*p == '-')
                        p++;
                if (*p < '0' || *p > '9')
                        return -EPROTO;
                unsigned long long v = parse_ull(&p);
                if (field == 48)
                        arg_start = v;
                else if (field == 49)
                        arg_end = v;
        }
        if (arg_start == 0 || arg_end <= arg_start)
                return -EPROTO;
        char *area = (char *)(uintptr_t)arg_start;
        size_t len = (size_t)(arg_end - arg_start);
        static const char title[] = "glove-init";
        memset(area, 0, len);
        memcpy(area, title, len > sizeof(title) ? sizeof(title) - 1 : len - 1);
        return 0;
}

/* The child between clone3 and release. Never returns. argv is the copy
 * the parent made before the clone (nothing in it points into the area
 * hide_argv overwrites). */
__attribute__((noreturn)) static void child_main(const struct glove_sandbox_config *cfg, char **argv, int report_fd,
                                                 int release_fd) {
        /* If Glove dies from here on, so does PID 1, and with it the whole PID
         * namespace. A Glove that died before this line is seen below as end
         * of file on the release pipe. */
        if (cfg->parent_death_kill && prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(1);
        /* Nothing else before "M": by then Glove has attached this process
         * to the run cgroup in every hierarchy (unless it was cloned into
         * it) and written its UID/GID maps. */
        char go;
        if (glove_fd_read_exact(release_fd, &go, 1) < 0 || go != 'M')
                _exit(1);
        int r = hide_argv();
        if (r < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, -r, "sandbox.argv",
                                  "cannot overwrite Glove's command line in the sandbox");
                _exit(1);
        }
        struct glove_sandbox_config local = *cfg;
        local.argv = argv;
        cfg = &local;

        struct glove_error err = {0};
        if (setsid() < 0)
                r = glove_error_set(&err, errno, "sandbox.setsid", "setsid: %s", glove_errno_text(errno));
        if (r == 0 && sethostname(GLOVE_SANDBOX_HOSTNAME, strlen(GLOVE_SANDBOX_HOSTNAME)) < 0)
                r = glove_error_set(&err, errno, "sandbox.hostname", "sethostname: %s", glove_errno_text(errno));
        if (r == 0)
                r = glove_perimeter_build(cfg, &err);
        if (r < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, err.errnum, err.code, err.message);
                _exit(1);
        }
        if ((cfg->stdin_fd >= 0 && dup2(cfg->stdin_fd, 0) < 0) || (cfg->stdout_fd >= 0 && dup2(cfg->stdout_fd, 1) < 0) ||
            (cfg->stderr_fd >= 0 && dup2(cfg->stderr_fd, 2) < 0)) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.stdio", glove_errno_text(errno));
                _exit(1);
        }
        /* Nothing Glove inherited reaches the sandbox: keep only stdio, the
         * two pipes, pid1_fd, pid1_fd2 and the inherited stream. */
        if (close_all_but(report_fd, release_fd, cfg->pid1_fd, cfg->pid1_fd2 > 2 ? cfg->pid1_fd2 : -1,
                          cfg->has_inherit_fd ? cfg->inherit_fd : -1) < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.close_range", glove_errno_text(errno));
                _exit(1);
        }
        if (glove_report_send(report_fd, REPORT_READY, 0, NULL, NULL) < 0)
                _exit(1);
        if (glove_fd_read_exact(release_fd, &go, 1) < 0 || go != 'G')
                _exit(1);
        close(release_fd);
        /* Glove attached PID 1 to the run cgroup before releasing it: from a
         * new cgroup namespace the agent sees that cgroup as its root. */
        if (cfg->cgroupns_after_release && unshare(CLONE_NEWCGROUP) < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.cgroupns", glove_errno_text(errno));
                _exit(1);
        }
        glove_init_main(cfg, report_fd);
}

/* Copies argv into one allocation (pointer array, then the strings). */
static char **argv_dup(char *const *argv) {
        size_t argc = 0, bytes = 0;
        for (; argv[argc]; argc++)
                bytes += strlen(argv[argc]) + 1;
        char **copy = malloc((argc + 1) * sizeof(char *) + bytes);
        if (!copy)
                return NULL;
        char *p = (char *)(copy + argc + 1);
        for (size_t i = 0; i < argc; i++) {
                size_t n = strlen(argv[i]) + 1;
                memcpy(p, argv[i], n);
                copy[i] = p;
                p += n;
        }
        copy[argc] = NULL;
        return copy;
}

int glove_sandbox_spawn_start(const struct glove_sandbox_config *cfg, struct glove_sandbox *sb, struct glove_error *err) {
        *sb = (struct glove_sandbox)GLOVE_SANDBOX_INIT;
        if (!cfg->argv || !cfg->argv[0])
                return glove_error_set(err, EINVAL, "sandbox.clone", "no program to run");
        if (!cfg->mounts)
                return glove_error_set(err, EINVAL, "sandbox.clone", "no mount plan");
        /* Above stdio, which the child replaces, and open now: the clone
         * copies it. */
        if (cfg->has_inherit_fd && (cfg->inherit_fd <= 2 || fcntl(cfg->inherit_fd, F_GETFD) < 0))
                return glove_error_set(err, EBADF, "sandbox.inherit_fd",
                                       "the inherited descriptor %d is not an open descriptor above 2", cfg->inherit_fd);
        uid_t ouid = geteuid();
        gid_t ogid = getegid();
        /* The same mapping the plan's passwd entry and HOME were built for. */
        sb->uid_map = (struct glove_sandbox_idmap){glove_mount_plan_inside_id(ouid), ouid, 1};
        sb->gid_map = (struct glove_sandbox_idmap){glove_mount_plan_inside_id(ogid), ogid, 1};
        sb->argv = argv_dup(cfg->argv);
        if (!sb->argv)
                return glove_error_set(err, ENOMEM, "sandbox.clone", "out of memory copying the agent's argv");

        int report[2], release[2];
        if (pipe2(report, O_CLOEXEC) < 0) {
                int e = errno;
                glove_sandbox_destroy(sb);
                return glove_error_set(err, e, "sandbox.pipe", "pipe: %s", strerror(e));
        }
        sb->report_fd = report[0];
        if (pipe2(release, O_CLOEXEC) < 0) {
                int e = errno;
                close(report[1]);
                glove_sandbox_destroy(sb);
                return glove_error_set(err, e, "sandbox.pipe", "pipe: %s", strerror(e));
        }
        sb->release_fd = release[1];
        if (fcntl(sb->report_fd, F_SETFL, O_NONBLOCK) < 0) {
                int e = errno;
                close(report[1]);
                close(release[0]);
                glove_sandbox_destroy(sb);
                return glove_error_set(err, e, "sandbox.pipe", "O_NONBLOCK on the report pipe: %s", strerror(e));
        }
        int pidfd = -1;
        struct clone_args args = {
                .flags = NAMESPACE_FLAGS | CLONE_PIDFD,
                .pidfd = (uint64_t)(uintptr_t)&pidfd,
                .exit_signal = SIGCHLD,
        };
        if (cfg->cgroup_fd >= 0) {
                args.flags |= CLONE_INTO_CGROUP;
                args.cgroup = (uint64_t)cfg->cgroup_fd;
        }
        long pid = syscall(SYS_clone3, &args, sizeof(args));
        if (pid == 0) {
                close(report[0]);
                close(release[1]);
                child_main(cfg, sb->argv, report[1], release[0]);
        }
        int clone_errno = errno;
        close(report[1]);
        close(release[0]);
        if (pid < 0) {
                glove_sandbox_destroy(sb);
                if (clone_errno == EPERM || clone_errno == ENOSPC || clone_errno == EUSERS)
                        return glove_error_set(err, clone_errno, "sandbox.userns",
                                               "cannot create the sandbox namespaces (%s); unprivileged user namespaces may be disabled on this host (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone)",
                                               strerror(clone_errno));
                return glove_error_set(err, clone_errno, "sandbox.clone", "clone3: %s", strerror(clone_errno));
        }
        sb->pid = (pid_t)pid;
        sb->pidfd = pidfd;

        /* The child waits for "M" before anything else (spec
         * architecture.md: no child setup executes before cgroup
         * attachment): the hook (the cgroup v1 attach) runs first, so the
         * perimeter, the tree copies and HOME's seed are charged to the
         * run. */
        int r = cfg->after_clone ? cfg->after_clone(sb->pid, cfg->after_clone_ctx, err) : 0;
        if (r == 0)
                r = write_idmaps(sb, err);
        if (r == 0 && glove_fd_write_all(sb->release_fd, "M", 1) < 0)
                r = glove_error_set(err, EPIPE, "sandbox.release", "sandbox child exited during setup");
        if (r < 0) {
                glove_sandbox_destroy(sb);
                return r;
        }
        return 0;
}

/* Turns one report read during setup into the spawn's answer. */
static int setup_answer(const struct report *rep, struct glove_error *err) {
        if (rep->kind == REPORT_READY)
                return 0;
        if (rep->kind == REPORT_SETUP_FAILED) {
                const char *code = glove_report_code_lookup(rep->code);
                if (code)
                        return glove_error_set(err, rep->value, code, "%s", rep->message);
                return glove_error_set(err, rep->value, "sandbox.setup", "%s%s%s", rep->code[0] ? rep->code : "",
                                       rep->code[0] ? ": " : "", rep->message);
        }
        return glove_error_set(err, EPROTO, "sandbox.setup", "unexpected report %d during setup", rep->kind);
}

/* One non-blocking read of a report: 1 with a whole report, 0 at end of
 * file, -EAGAIN when none is there, other -errno. */
static int report_try_read(int fd, struct report *rep) {
        ssize_t n;
        while ((n = read(fd, rep, sizeof(*rep))) < 0 && errno == EINTR)
                ;
        if (n < 0)
                return -errno;
        if (n == 0)
                return 0;
        if ((size_t)n != sizeof(*rep))
                return -EPROTO; /* reports are written whole, below PIPE_BUF */
        rep->code[sizeof(rep->code) - 1] = '\0';
        rep->message[sizeof(rep->message) - 1] = '\0';
        return 1;
}

/* Whether PID 1 has exited (without reaping it). */
static bool pid1_exited(struct glove_sandbox *sb) {
        siginfo_t si = {0};
        int r;
        while ((r = waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG | WNOWAIT)) < 0 && errno == EINTR)
                ;
        return r < 0 || si.si_pid != 0; /* ECHILD: someone reaped it */
}

int glove_sandbox_spawn_finish(struct glove_sandbox *sb, struct glove_error *err) {
        if (sb->ready)
                return 0;
        if (sb->pid <= 0 || sb->report_fd < 0)
                return glove_error_set(err, ESRCH, "sandbox.setup", "the sandbox child is gone");
        struct report rep;
        int n = report_try_read(sb->report_fd, &rep);
        /* End of file may be late when a sandbox spawned at the same time
         * by another thread holds a copy of the write end: PID 1 itself
         * says whether it is gone; a report it wrote before exiting is in
         * the pipe by then. */
        if (n == -EAGAIN) {
                if (!pid1_exited(sb))
                        return -EAGAIN;
                n = report_try_read(sb->report_fd, &rep);
                if (n == -EAGAIN)
                        n = 0;
        }
        int r;
        if (n <= 0)
                r = glove_error_set(err, n < 0 ? -n : EPIPE, "sandbox.setup",
                                    "sandbox child exited during setup without saying why");
        else
                r = setup_answer(&rep, err);
        if (r < 0) {
                glove_sandbox_kill(sb);
                return r;
        }
        sb->ready = true;
        return 0;
}

int glove_sandbox_spawn(const struct glove_sandbox_config *cfg, struct glove_sandbox *sb, struct glove_error *err) {
        int r = glove_sandbox_spawn_start(cfg, sb, err);
        if (r < 0)
                return r;
        while ((r = glove_sandbox_spawn_finish(sb, err)) == -EAGAIN) {
                struct pollfd p[2] = {{.fd = sb->report_fd, .events = POLLIN}, {.fd = sb->pidfd, .events = POLLIN}};
                if (poll(p, 2, -1) < 0 && errno != EINTR) {
                        r = glove_error_set(err, errno, "sandbox.setup", "poll: %s", strerror(errno));
                        break;
                }
        }
        if (r < 0)
                glove_sandbox_destroy(sb);
        return r;
}

int glove_sandbox_release(struct glove_sandbox *sb, struct glove_error *err) {
        if (glove_fd_write_all(sb->release_fd, "G", 1) < 0)
                return glove_error_set(err, EPIPE, "sandbox.release", "sandbox child is gone");
        glove_closep(&sb->release_fd);
        sb->release_fd = -1;
        sb->released = true;
        return 0;
}

int glove_sandbox_signal(struct glove_sandbox *sb, int sig) {
        if (sb->pidfd < 0)
                return -ESRCH;
        if (syscall(SYS_pidfd_send_signal, sb->pidfd, sig, NULL, 0) < 0)
                return -errno;
        return 0;
}

void glove_sandbox_kill(struct glove_sandbox *sb) {
        if (sb->pid <= 0 || sb->pidfd < 0)
                return;
        (void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
}

int glove_sandbox_reap(struct glove_sandbox *sb, siginfo_t *out) {
        if (sb->pid <= 0 || sb->pidfd < 0)
                return -ECHILD;
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        int r;
        while ((r = waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG)) < 0 && errno == EINTR)
                ;
        if (r < 0) {
                int e = errno;
                if (e == ECHILD)
                        sb->pid = -1; /* reaped by someone else */
                return -e;
        }
        if (si.si_pid == 0)
                return 0;
        sb->pid = -1;
        if (out)
                *out = si;
        return 1;
}

/* Blocks until PID 1 has exited and reaps it (no effect once reaped). */
static void reap_blocking(struct glove_sandbox *sb, siginfo_t *si) {
        if (sb->pid > 0 && sb->pidfd >= 0)
                while (waitid(P_PIDFD, (id_t)sb->pidfd, si, WEXITED) < 0 && errno == EINTR)
                        ;
        sb->pid = -1;
}

void glove_sandbox_collect(struct glove_sandbox *sb, const siginfo_t *reaped, struct glove_sandbox_outcome *out) {
        *out = (struct glove_sandbox_outcome){.kind = GLOVE_SANDBOX_LOST};
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        if (reaped) {
                si = *reaped;
                sb->pid = -1;
        } else {
                reap_blocking(sb, &si);
        }
        struct report rep;
        int n;
        bool have = false;
        while ((n = report_read(sb->report_fd, &rep)) > 0) {
                bool disk_full = out->disk_full;
                if (rep.kind == REPORT_EXITED) {
                        *out = (struct glove_sandbox_outcome){.kind = GLOVE_SANDBOX_EXITED, .value = rep.value, .disk_full = disk_full};
                        have = true;
                } else if (rep.kind == REPORT_SIGNALED) {
                        *out = (struct glove_sandbox_outcome){.kind = GLOVE_SANDBOX_SIGNALED, .value = rep.value, .disk_full = disk_full};
                        have = true;
                } else if (rep.kind == REPORT_SETUP_FAILED) {
                        /* A step after release failed (privilege drop, filter,
                         * egress helper): the agent never ran. */
                        *out = (struct glove_sandbox_outcome){.kind = GLOVE_SANDBOX_LOST, .value = rep.value};
                        snprintf(out->detail, sizeof(out->detail), "%s: %s", rep.code[0] ? rep.code : "sandbox.setup", rep.message);
                        have = true;
                } else if (rep.kind == REPORT_DISK_FULL) {
                        out->disk_full = true;
                        continue;
                } else if (rep.kind == REPORT_EXEC_FAILED) {
                        *out = (struct glove_sandbox_outcome){.kind = GLOVE_SANDBOX_EXEC_FAILED, .value = rep.value};
                        snprintf(out->detail, sizeof(out->detail), "%s", rep.message);
                        have = true;
                }
        }
        if (!have) {
                if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
                        snprintf(out->detail, sizeof(out->detail), "sandbox PID 1 was killed by signal %d", si.si_status);
                else
                        snprintf(out->detail, sizeof(out->detail), "sandbox PID 1 exited with status %d without reporting the agent's outcome",
                                 si.si_status);
        }
}

void glove_sandbox_destroy(struct glove_sandbox *sb) {
        if (sb->pid > 0) {
                glove_sandbox_kill(sb);
                siginfo_t si;
                reap_blocking(sb, &si);
        }
        glove_closep(&sb->pidfd);
        glove_closep(&sb->report_fd);
        glove_closep(&sb->release_fd);
        sb->pidfd = sb->report_fd = sb->release_fd = -1;
        free(sb->argv);
        sb->argv = NULL;
}

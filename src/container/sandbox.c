/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/container/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
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
#include "glove/base/proctitle.h"
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

/* Codes of setup failures arrive as text; struct glove_error wants a string
 * that outlives it. One sandbox is set up at a time per process. */
static const char *glove_report_code_intern(const char *code) {
        static char buf[sizeof(((struct report *)0)->code)];
        snprintf(buf, sizeof(buf), "%s", code);
        return buf;
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

/* Closes every descriptor above 2 except the (up to three) given ones. */
static int close_all_but(int a, int b, int c) {
        int keep[3] = {a, b, c};
        /* sort ascending; -1 entries sort first and are skipped */
        for (int i = 0; i < 3; i++)
                for (int j = i + 1; j < 3; j++)
                        if (keep[j] < keep[i]) {
                                int t = keep[i];
                                keep[i] = keep[j];
                                keep[j] = t;
                        }
        unsigned next = 3;
        for (int i = 0; i < 3; i++) {
                if (keep[i] < 3)
                        continue;
                if ((unsigned)keep[i] > next && syscall(SYS_close_range, next, (unsigned)keep[i] - 1, 0) < 0)
                        return -1;
                next = (unsigned)keep[i] + 1;
        }
        return (int)syscall(SYS_close_range, next, ~0U, 0);
}

/* The child between clone3 and release. Never returns. */
__attribute__((noreturn)) static void child_main(const struct glove_sandbox_config *cfg, int report_fd, int release_fd,
                                                 uid_t uid, gid_t gid) {
        /* If Glove dies from here on, so does PID 1, and with it the whole PID
         * namespace. A Glove that died before this line is seen below as end
         * of file on the release pipe. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(1);
        /* PID 1's /proc/1/cmdline is readable by the agent: Glove's argv
         * (upstream arguments, policy paths) must not be in it. The agent's
         * own argv may point into that memory: copy it first. */
        size_t argc = 0;
        while (cfg->argv[argc])
                argc++;
        char **argv_copy = calloc(argc + 1, sizeof(char *));
        for (size_t i = 0; argv_copy && i < argc; i++)
                if (!(argv_copy[i] = strdup(cfg->argv[i])))
                        _exit(1);
        if (!argv_copy)
                _exit(1);
        static struct glove_sandbox_config local;
        local = *cfg;
        local.argv = argv_copy;
        cfg = &local;
        glove_proctitle_set("glove-init");
        char go;
        if (glove_fd_read_exact(release_fd, &go, 1) < 0 || go != 'M')
                _exit(1);

        struct glove_error err = {0};
        int r = 0;
        if (setsid() < 0)
                r = glove_error_set(&err, errno, "sandbox.setsid", "setsid: %s", strerror(errno));
        if (r == 0 && sethostname(GLOVE_SANDBOX_HOSTNAME, strlen(GLOVE_SANDBOX_HOSTNAME)) < 0)
                r = glove_error_set(&err, errno, "sandbox.hostname", "sethostname: %s", strerror(errno));
        if (r == 0)
                r = glove_perimeter_build(cfg, uid, gid, &err);
        if (r < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, err.errnum, err.code, err.message);
                _exit(1);
        }
        if ((cfg->stdin_fd >= 0 && dup2(cfg->stdin_fd, 0) < 0) || (cfg->stdout_fd >= 0 && dup2(cfg->stdout_fd, 1) < 0) ||
            (cfg->stderr_fd >= 0 && dup2(cfg->stderr_fd, 2) < 0)) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.stdio", strerror(errno));
                _exit(1);
        }
        /* Nothing Glove inherited reaches the sandbox: keep only stdio, the
         * two pipes and pid1_fd. */
        if (close_all_but(report_fd, release_fd, cfg->pid1_fd) < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.close_range", strerror(errno));
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
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.cgroupns", strerror(errno));
                _exit(1);
        }
        glove_init_main(cfg, report_fd);
}

int glove_sandbox_spawn(const struct glove_sandbox_config *cfg, struct glove_sandbox *sb, struct glove_error *err) {
        *sb = (struct glove_sandbox){.pid = -1, .pidfd = -1, .report_fd = -1, .release_fd = -1};
        uid_t ouid = geteuid();
        gid_t ogid = getegid();
        sb->uid_map = (struct glove_sandbox_idmap){ouid == 0 ? GLOVE_SANDBOX_ROOT_INSIDE_ID : ouid, ouid, 1};
        sb->gid_map = (struct glove_sandbox_idmap){ogid == 0 ? GLOVE_SANDBOX_ROOT_INSIDE_ID : ogid, ogid, 1};

        int report[2], release[2];
        if (pipe2(report, O_CLOEXEC) < 0)
                return glove_error_set(err, errno, "sandbox.pipe", "pipe: %s", strerror(errno));
        if (pipe2(release, O_CLOEXEC) < 0) {
                int e = errno;
                close(report[0]);
                close(report[1]);
                return glove_error_set(err, e, "sandbox.pipe", "pipe: %s", strerror(e));
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
                child_main(cfg, report[1], release[0], sb->uid_map.inside, sb->gid_map.inside);
        }
        int clone_errno = errno;
        close(report[1]);
        close(release[0]);
        sb->report_fd = report[0];
        sb->release_fd = release[1];
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

        int r = write_idmaps(sb, err);
        if (r == 0 && glove_fd_write_all(sb->release_fd, "M", 1) < 0)
                r = glove_error_set(err, EPIPE, "sandbox.release", "sandbox child exited during setup");
        if (r == 0 && cfg->after_clone)
                r = cfg->after_clone(sb->pid, cfg->after_clone_ctx, err);
        if (r == 0) {
                struct report rep;
                int n = report_read(sb->report_fd, &rep);
                if (n <= 0)
                        r = glove_error_set(err, n < 0 ? -n : EPIPE, "sandbox.setup",
                                            "sandbox child exited during setup without saying why");
                else if (rep.kind == REPORT_SETUP_FAILED)
                        r = glove_error_set(err, rep.value, rep.code[0] ? glove_report_code_intern(rep.code) : "sandbox.setup",
                                            "%s", rep.message);
                else if (rep.kind != REPORT_READY)
                        r = glove_error_set(err, EPROTO, "sandbox.setup", "unexpected report %d during setup", rep.kind);
        }
        if (r < 0) {
                glove_sandbox_destroy(sb);
                return r;
        }
        return 0;
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
        if (sb->pid <= 0)
                return;
        (void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
        siginfo_t si;
        while (waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED) < 0 && errno == EINTR)
                ;
        sb->pid = -1;
}

void glove_sandbox_collect(struct glove_sandbox *sb, const siginfo_t *reaped, struct glove_sandbox_outcome *out) {
        *out = (struct glove_sandbox_outcome){.kind = GLOVE_SANDBOX_LOST};
        siginfo_t si = {0};
        if (reaped) {
                si = *reaped;
                sb->pid = -1;
        } else if (sb->pid > 0) {
                while (waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED) < 0 && errno == EINTR)
                        ;
                sb->pid = -1;
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
        glove_sandbox_kill(sb);
        glove_closep(&sb->pidfd);
        glove_closep(&sb->report_fd);
        glove_closep(&sb->release_fd);
        sb->pidfd = sb->report_fd = sb->release_fd = -1;
}

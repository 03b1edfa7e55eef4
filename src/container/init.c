/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID 1 of the sandbox once released, and the agent's last steps before
 * execve. PID 1 exists because the kernel shields a PID namespace's init
 * from signals it has no handler for: with the agent as PID 1, a forwarded
 * SIGTERM would be ignored. PID 1 forwards signals to the agent, reaps
 * orphans, and reports the agent's outcome to Glove; when it exits the kernel
 * kills everything left in the namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/error.h"
#include "glove/base/fd.h"
#include "glove/container/environment.h"
#include "glove/container/seccomp.h"
#include "internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Signals Glove forwards (issue "glove exec", Lifecycle). */
/* SIGPIPE too: Glove sends it when its own stdout lost its reader. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGPIPE};

static void on_signal(int sig) {
        (void)sig; /* a handler must exist for PID 1 to receive the signal */
}

/* Empties every capability set: bounding, ambient, and then effective,
 * permitted and inheritable. Sets no_new_privs. */
static int drop_privileges(void) {
        /* The last capability this kernel knows: PR_CAPBSET_READ fails
         * (EINVAL) past it. A binary search over 0..63 asks six times where
         * asking every number would take one call per capability. */
        int lo = 0, hi = 63; /* lo is known, hi + 1 is not */
        if (prctl(PR_CAPBSET_READ, 0, 0, 0, 0) < 0)
                return -errno;
        while (lo < hi) {
                int mid = (lo + hi + 1) / 2;
                if (prctl(PR_CAPBSET_READ, mid, 0, 0, 0) >= 0)
                        lo = mid;
                else
                        hi = mid - 1;
        }
        /* Dropping a capability that is not in the set succeeds too. */
        for (int cap = 0; cap <= lo; cap++)
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
                        return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return -errno;
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct data[2] = {{0}};
        if (syscall(SYS_capset, &hdr, data) < 0)
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        /* No other process in the sandbox may read this one's memory. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

/* execve with a PATH search in the sandbox's PATH (not Glove's). Returns the
 * errno to report: ENOENT when found nowhere, EACCES when found but not
 * executable anywhere, else the first other error. */
static int exec_program(char *const *argv, char *const *envp) {
        const char *prog = argv[0];
        if (strchr(prog, '/')) {
                execve(prog, argv, envp);
                return errno;
        }
        const char *path = glove_env_lookup((const char *const *)envp, "PATH");
        if (!path)
                path = GLOVE_ENV_PATH;
        int result = ENOENT;
        char buf[4096];
        while (*path) {
                const char *end = strchrnul(path, ':');
                size_t n = (size_t)(end - path);
                if (n > 0 && n + 1 + strlen(prog) < sizeof(buf)) {
                        memcpy(buf, path, n);
                        buf[n] = '/';
                        strcpy(buf + n + 1, prog);
                        execve(buf, argv, envp);
                        if (errno == EACCES)
                                result = EACCES;
                        else if (errno != ENOENT && errno != ENOTDIR)
                                return errno;
                }
                path = *end ? end + 1 : end;
        }
        return result;
}

/* True when one of the private writable tmpfs mounts has no block left:
 * the agent ran into its --disk quota. */
static bool disk_full(void) {
        static const char *const scratch[] = {"/tmp", GLOVE_ENV_HOME, "/dev/shm"};
        for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++) {
                struct statfs st;
                if (statfs(scratch[i], &st) == 0 && st.f_blocks > 0 && st.f_bavail == 0)
                        return true;
        }
        return false;
}

_Static_assert(GLOVE_SANDBOX_INHERIT_FD == GLOVE_SECCOMP_INHERITED_FD_FIRST &&
                       GLOVE_SANDBOX_INHERIT_FD == GLOVE_SECCOMP_INHERITED_FD_LAST,
               "the inherited descriptor is the filter's committed range");

/* Puts the inherited stream fd at GLOVE_SANDBOX_INHERIT_FD, not
 * close-on-exec, moving *errpipe out of the way first when it is there.
 * Returns 0 or an errno. */
static int install_inherited(int fd, int *errpipe) {
        const int want = GLOVE_SANDBOX_INHERIT_FD;
        if (*errpipe == want) {
                int moved = fcntl(*errpipe, F_DUPFD_CLOEXEC, want + 1);
                if (moved < 0)
                        return errno;
                *errpipe = moved; /* the old number is replaced below */
        }
        if (fd == want)
                return fcntl(want, F_SETFD, 0) < 0 ? errno : 0;
        /* dup2's new descriptor is never close-on-exec. */
        if (dup2(fd, want) < 0)
                return errno;
        close(fd);
        return 0;
}

__attribute__((noreturn)) static void agent_main(const struct glove_sandbox_config *cfg, int errpipe) {
        sigset_t none;
        sigemptyset(&none);
        for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
                signal(forwarded[i], SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int e = 0;
        /* With a PTY, the agent leads a new session whose controlling
         * terminal is that PTY (never the invoker's terminal). */
        if (cfg->controlling_tty && (setsid() < 0 || ioctl(0, TIOCSCTTY, 0) < 0))
                e = errno;
        /* A per-process backstop for the CPU-time limit Glove watches on the
         * whole cgroup: SIGXCPU at the limit, SIGKILL a second later. */
        if (!e && cfg->cpu_time_ms > 0) {
                rlim_t secs = (rlim_t)((cfg->cpu_time_ms + 999) / 1000);
                struct rlimit rl = {.rlim_cur = secs, .rlim_max = secs + 1};
                if (setrlimit(RLIMIT_CPU, &rl) < 0)
                        e = errno;
        }
        /* The largest file the agent may write (a host file bound writable,
         * such as a credential lease, cannot grow the host disk past it):
         * the hard limit cannot be raised again without CAP_SYS_RESOURCE in
         * the initial user namespace; SIGXFSZ ignored makes such a write fail
         * with EFBIG instead of killing the writer. */
        if (!e && cfg->file_size_max > 0) {
                struct rlimit fl = {.rlim_cur = cfg->file_size_max, .rlim_max = cfg->file_size_max};
                if (setrlimit(RLIMIT_FSIZE, &fl) < 0)
                        e = errno;
                else
                        signal(SIGXFSZ, SIG_IGN);
        }
        /* Open descriptors take entries of the host-wide file table
         * (fs.file-max), charged to no cgroup: every process of the run gets
         * at most nofile, so the run holds at most pids x nofile. */
        if (!e && cfg->nofile > 0) {
                struct rlimit nl = {.rlim_cur = cfg->nofile, .rlim_max = cfg->nofile};
                if (setrlimit(RLIMIT_NOFILE, &nl) < 0)
                        e = errno;
        }
        /* POSIX message queue bytes and System V shared memory locked with
         * SHM_LOCK are counted per user up to the host's user namespace,
         * checked against the caller's limit in its own namespace: the
         * agent gets a quarter
         * of what Glove had, soft = hard, so the invoker's other processes
         * keep the rest. */
        static const int per_user[] = {RLIMIT_MSGQUEUE, RLIMIT_MEMLOCK};
        for (size_t i = 0; !e && i < sizeof(per_user) / sizeof(per_user[0]); i++) {
                struct rlimit q;
                if (getrlimit(per_user[i], &q) < 0 || q.rlim_cur == RLIM_INFINITY)
                        continue;
                q.rlim_cur /= 4;
                q.rlim_max = q.rlim_cur;
                if (setrlimit(per_user[i], &q) < 0)
                        e = errno;
        }
        /* The inherited stream, after everything else: at 3 and kept
         * across execve. */
        if (!e && cfg->has_inherit_fd)
                e = install_inherited(cfg->inherit_fd, &errpipe);
        /* Every other descriptor above stdio closes at execve; the error
         * pipe is already close-on-exec. */
        unsigned first = cfg->has_inherit_fd ? GLOVE_SANDBOX_INHERIT_FD + 1 : 3;
        if (!e && syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                e = errno;
        /* The seccomp filter PID 1 installed after setup is inherited. */
        if (!e)
                e = exec_program(cfg->argv, cfg->envp);
        (void)glove_fd_write_all(errpipe, &e, sizeof(e));
        _exit(127);
}

int glove_sandbox_lockdown(const struct sock_fprog *prog) {
        int r = drop_privileges();
        if (r == 0 && glove_seccomp_install(prog) < 0)
                r = -errno;
        return r;
}

/* The PTY slave Glove opened belongs to the host's devpts mount: whoever
 * holds a descriptor opened there can fchmod or fchown the host's
 * /dev/pts/N (a root invoker's agent passes the owner check), opening the
 * agent's terminal to every local user. The same terminal reopened through
 * the read-only bind at /dev/console refuses every metadata change (EROFS),
 * also through /proc/self/fd. PID 1 swaps its 0, 1 and 2 for that before the
 * agent exists, so no descriptor of the host mount reaches it. */
static int reopen_tty(void) {
        int fd = open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat was, now;
        if (fstat(0, &was) < 0 || fstat(fd, &now) < 0 || !S_ISCHR(now.st_mode) || was.st_rdev != now.st_rdev) {
                close(fd);
                return -EXDEV;
        }
        for (int i = 0; i < 3; i++)
                if (dup2(fd, i) < 0) {
                        int e = errno;
                        close(fd);
                        return -e;
                }
        close(fd);
        return 0;
}

/* Queued real-time signals (sigqueue, rt_sigqueueinfo) and POSIX timers
 * (timer_create preallocates its signal) are counted per user in every user
 * namespace up to the host's, checked against the receiving task's
 * RLIMIT_SIGPENDING in its own namespace (and against the limit the
 * namespace's creator had at each level above): unbounded, an agent holds
 * the invoker's whole limit and sigqueue and timer_create fail with EAGAIN
 * in every host process of the uid, root's included. Every process of the sandbox descends from
 * PID 1 and all share one count (one uid in one user namespace), so soft =
 * hard = GLOVE_SANDBOX_SIGPENDING_MAX (a quarter of the invoker's soft limit
 * when that is lower) bounds the sandbox's share; raising the hard limit
 * needs CAP_SYS_RESOURCE in the host's user namespace. Returns 0 or -errno. */
static int bound_sigpending(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_SIGPENDING, &rl) < 0)
                return -errno;
        rlim_t bound = GLOVE_SANDBOX_SIGPENDING_MAX;
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < bound)
                bound = rl.rlim_cur / 4;
        rl.rlim_cur = rl.rlim_max = bound;
        return setrlimit(RLIMIT_SIGPENDING, &rl) < 0 ? -errno : 0;
}

__attribute__((noreturn)) void glove_init_main(const struct glove_sandbox_config *cfg, int report_fd) {
        /* Before anything else runs in the sandbox (the egress helper, the
         * agent), so all of them inherit it. */
        int sr = bound_sigpending();
        if (sr < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, -sr, "sandbox.rlimit",
                                  "cannot lower RLIMIT_SIGPENDING for the sandbox");
                _exit(1);
        }
        /* Without a run cgroup nothing else bounds the sandbox's tasks, and
         * they count against the invoker's RLIMIT_NPROC on the host. */
        struct rlimit np = {.rlim_cur = cfg->nproc, .rlim_max = cfg->nproc};
        if (cfg->nproc > 0 && setrlimit(RLIMIT_NPROC, &np) < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.rlimit",
                                  "cannot lower RLIMIT_NPROC for the sandbox");
                _exit(1);
        }
        if (cfg->controlling_tty) {
                int t = reopen_tty();
                if (t < 0) {
                        glove_report_send(report_fd, REPORT_SETUP_FAILED, -t, "sandbox.tty",
                                          "cannot reopen the terminal through /dev/console");
                        _exit(1);
                }
        }
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        struct sigaction sa = {.sa_handler = on_signal};
        for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
                sigaddset(&set, forwarded[i]);
                sigaction(forwarded[i], &sa, NULL);
        }
        sigaction(SIGCHLD, &sa, NULL);
        sigprocmask(SIG_BLOCK, &set, NULL);

        if (cfg->pid1_setup) {
                struct glove_error err = {0};
                if (cfg->pid1_setup(cfg, &err) < 0) {
                        glove_report_send(report_fd, REPORT_SETUP_FAILED, err.errnum, err.code, err.message);
                        _exit(1);
                }
        }
        if (cfg->pid1_fd >= 0)
                close(cfg->pid1_fd);
        if (cfg->pid1_fd2 > 2)
                close(cfg->pid1_fd2);
        int r = glove_sandbox_lockdown(cfg->seccomp);
        if (r < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, -r, "sandbox.privileges", glove_errno_text(-r));
                _exit(1);
        }
        int errpipe[2];
        if (pipe2(errpipe, O_CLOEXEC) < 0) {
                glove_report_send(report_fd, REPORT_SETUP_FAILED, errno, "sandbox.pipe", glove_errno_text(errno));
                _exit(1);
        }
        /* _Fork, not fork: no atfork handlers and none of the allocator's or
         * stdio's locks, which another thread of Glove may have held when
         * this process was cloned. */
        pid_t agent = _Fork();
        if (agent < 0) {
                int e = errno;
                close(errpipe[0]);
                close(errpipe[1]);
                glove_report_send(report_fd, REPORT_SETUP_FAILED, e, "sandbox.fork", glove_errno_text(e));
                _exit(1);
        }
        if (agent == 0) {
                close(errpipe[0]);
                close(report_fd);
                agent_main(cfg, errpipe[1]);
        }
        close(errpipe[1]);
        /* The agent has its own copy: PID 1 keeps none. */
        if (cfg->has_inherit_fd)
                close(cfg->inherit_fd);
        int exec_errno = 0;
        if (glove_fd_read_exact(errpipe[0], &exec_errno, sizeof(exec_errno)) == 0) {
                char msg[300];
                snprintf(msg, sizeof(msg), "%s: %s", cfg->argv[0], glove_errno_text(exec_errno));
                glove_report_send(report_fd, REPORT_EXEC_FAILED, exec_errno, NULL, msg);
                _exit(0);
        }
        close(errpipe[0]);

        for (;;) {
                siginfo_t si;
                int sig = sigwaitinfo(&set, &si);
                if (sig < 0)
                        continue;
                if (sig != SIGCHLD) {
                        kill(agent, sig);
                        continue;
                }
                int status;
                pid_t p;
                while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
                        if (p != agent)
                                continue;
                        if (disk_full())
                                glove_report_send(report_fd, REPORT_DISK_FULL, 0, NULL, NULL);
                        if (WIFSIGNALED(status))
                                glove_report_send(report_fd, REPORT_SIGNALED, WTERMSIG(status), NULL, NULL);
                        else
                                glove_report_send(report_fd, REPORT_EXITED, WEXITSTATUS(status), NULL, NULL);
                        _exit(0);
                }
        }
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Seccomp filter probes run in a forked child (test_seccomp.c,
 * test_seccomp_transport.c): each probe is one system call whose return
 * value and errno the child records and sends back through a pipe. Include
 * after <cmocka.h>.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/container/seccomp.h"

struct probe_result {
        long ret;
        int err; /* errno when ret == -1, else 0 */
};

/* Records one probe's return value (and errno when it is -1). */
static inline void probe_record(struct probe_result *r, long ret) {
        r->ret = ret;
        r->err = ret == -1 ? errno : 0;
}

/* Fails the test unless the probe named name succeeded (want_errno 0) or
 * failed with exactly -1 and want_errno. */
static inline void probe_expect(const struct probe_result *r, const char *name, int want_errno) {
        if (want_errno == 0 && r->ret < 0)
                fail_msg("%s: expected success, got %ld errno %d (%s)", name, r->ret, r->err, strerror(r->err));
        if (want_errno != 0 && (r->ret != -1 || r->err != want_errno))
                fail_msg("%s: expected -1 errno %d (%s), got %ld errno %d (%s)", name, want_errno, strerror(want_errno),
                         r->ret, r->err, strerror(r->err));
}

/* The Seccomp: line of /proc/self/status (0: no filter on this process;
 * -1: unreadable). */
static inline int outer_seccomp_mode(void) {
        FILE *f = fopen("/proc/self/status", "re");
        if (!f)
                return -1;
        char line[256];
        int mode = -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "Seccomp: %d", &mode) == 1)
                        break;
        fclose(f);
        return mode;
}

/* Forks a child that runs setup(arg) (NULL: none; it arranges the
 * descriptors to probe), sets no_new_privs and installs prog (NULL: no
 * filter), and when that worked runs run(out, arg), which fills out's size
 * bytes. The child sends back its install result and out, through a pipe
 * whose write end is at 100 or above, away from the probed numbers.
 * Returns the install result (0 or -errno; out is zeroed when it failed).
 * Fails the test when the child dies of a signal (a denial must be an
 * errno, never a kill) or exits otherwise than 0. */
static inline int probe_fork(const struct sock_fprog *prog, void (*setup)(void *), void (*run)(void *out, void *arg),
                             void *arg, void *out, size_t size) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        int w = fcntl(p[1], F_DUPFD_CLOEXEC, 100);
        assert_true(w >= 100);
        close(p[1]);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                memset(out, 0, size);
                if (setup)
                        setup(arg);
                int install = 0;
                if (prog) {
                        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                                _exit(91);
                        install = glove_seccomp_install(prog);
                }
                if (install == 0)
                        run(out, arg);
                if (write(w, &install, sizeof(install)) != (ssize_t)sizeof(install) ||
                    write(w, out, size) != (ssize_t)size)
                        _exit(92);
                _exit(0);
        }
        close(w);
        int install = 0;
        ssize_t n = read(p[0], &install, sizeof(install));
        size_t got = 0;
        while (n == (ssize_t)sizeof(install) && got < size) {
                ssize_t m = read(p[0], (char *)out + got, size - got);
                if (m <= 0)
                        break;
                got += (size_t)m;
        }
        close(p[0]);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st))
                fail_msg("probe child died of signal %d (a denial must be an errno, never a kill)",
                         WIFSIGNALED(st) ? WTERMSIG(st) : -1);
        assert_int_equal(WEXITSTATUS(st), 0);
        assert_int_equal(n, (ssize_t)sizeof(install));
        assert_int_equal(got, size);
        return install;
}

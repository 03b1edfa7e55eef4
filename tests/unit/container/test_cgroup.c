/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/cgroup.h, on the host's real
 * cgroups: each test creates a run cgroup with small limits, moves a real
 * forked child into it and checks what the kernel did (fork refused at
 * pids.max, OOM kill, CPU usage, kill, removal, no stray process).
 *
 * When the probe finds that cgroups are not delegated to the user running
 * the tests (e.g. uid 65534), every test that needs a cgroup prints the
 * probe's reason and is skipped. The test process is a child subreaper, so
 * orphans of the children come back to it and every process a test starts
 * is reaped and accounted for. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup_internal.h"
#include "glove/base/time.h"
#include "glove/container/cgroup.h"

#define MiB (UINT64_C(1) << 20)

static struct glove_cgroup_probe g_probe;
static struct glove_error g_probe_err;
static int g_probe_rc;

/* The cgroup of the running test, destroyed by the teardown when the test
 * failed half-way (and so did not destroy it itself). */
static struct glove_cgroup *g_cg;

/* Skips (saying why) when the probe found no usable cgroups. */
#define REQUIRE_CGROUPS()                                                                                   \
        do {                                                                                                \
                if (g_probe_rc < 0) {                                                                       \
                        if (strcmp(g_probe_err.code, "cgroup.not_delegated") != 0 &&                        \
                            strcmp(g_probe_err.code, "cgroup.unavailable") != 0)                            \
                                fail_msg("probe failed: %s: %s", g_probe_err.code, g_probe_err.message);    \
                        print_message("skipped: no run cgroup can be created here (%s): %s\n",              \
                                      g_probe_err.code, g_probe_err.message);                               \
                        skip();                                                                             \
                }                                                                                           \
        } while (0)

static int group_setup(void **state) {
        (void)state;
        g_probe_rc = glove_cgroup_probe(&g_probe, &g_probe_err);
        if (g_probe_rc == 0)
                print_message("probe: backend v%d, run cgroups under %s%s%s\n", (int)g_probe.backend, g_probe.parent,
                              g_probe.v2_reason[0] ? "; " : "", g_probe.v2_reason);
        return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : -1;
}

static struct glove_cgroup_limits small_limits(uint64_t memory, uint64_t pids, uint64_t cpu_ms) {
        return (struct glove_cgroup_limits){.memory_bytes = memory, .pids = pids, .cpu_time_ms = cpu_ms};
}

static struct glove_cgroup *create_or_fail(const struct glove_cgroup_limits *l) {
        struct glove_cgroup *cg = NULL;
        struct glove_error err = {0};
        int r = glove_cgroup_create(l, &cg, &err);
        if (r < 0)
                fail_msg("glove_cgroup_create: %d %s: %s", r, err.code, err.message);
        g_cg = cg;
        return cg;
}

static void destroy_or_fail(struct glove_cgroup *cg) {
        struct glove_error err = {0};
        g_cg = NULL;
        int r = glove_cgroup_destroy(cg, &err);
        if (r < 0)
                fail_msg("glove_cgroup_destroy: %d %s: %s", r, err.code, err.message);
}

static struct glove_cgroup_stats stats_or_fail(struct glove_cgroup *cg) {
        struct glove_cgroup_stats st;
        struct glove_error err = {0};
        int r = glove_cgroup_stats(cg, &st, &err);
        if (r < 0)
                fail_msg("glove_cgroup_stats: %d %s: %s", r, err.code, err.message);
        return st;
}

/* ---- children ----------------------------------------------------------- */

/* A forked child that waits for "go" on a pipe before running its body, so
 * it can be attached first (as the sandbox's PID 1 is). Results come back
 * on out. */
struct kid {
        pid_t pid;
        int go;   /* write end */
        int out;  /* read end */
};

typedef void (*kid_body)(int out);

static void kid_start(struct kid *k, kid_body body) {
        int go[2], out[2];
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(go[1]);
                close(out[0]);
                char c;
                if (read(go[0], &c, 1) != 1)
                        _exit(90);
                close(go[0]);
                body(out[1]);
                _exit(0);
        }
        close(go[0]);
        close(out[1]);
        *k = (struct kid){.pid = pid, .go = go[1], .out = out[0]};
}

static void kid_release(struct kid *k) {
        assert_int_equal(write(k->go, "g", 1), 1);
        close(k->go);
        k->go = -1;
}

static void kid_close(struct kid *k) {
        if (k->go >= 0)
                close(k->go);
        close(k->out);
}

static void attach_or_fail(struct glove_cgroup *cg, pid_t pid) {
        struct glove_error err = {0};
        int r = glove_cgroup_attach(cg, pid, &err);
        if (r < 0)
                fail_msg("glove_cgroup_attach: %d %s: %s", r, err.code, err.message);
}

static void read_exact_or_fail(int fd, void *buf, size_t len) {
        size_t got = 0;
        while (got < len) {
                ssize_t n = read(fd, (char *)buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        fail_msg("the child ended before reporting (read %zd of %zu bytes)", got, len);
                got += (size_t)n;
        }
}

/*
 * Reaps every child of this process (a subreaper, so orphans included)
 * until none is left, waiting at most 3 s. Counts those killed by SIGKILL
 * and the others. Fails when a process is still alive at the deadline: a
 * stray survived.
 */
static void reap_all(int *killed, int *other) {
        *killed = *other = 0;
        uint64_t deadline = glove_time_monotonic_ms() + 3000;
        for (;;) {
                int st;
                pid_t p = waitpid(-1, &st, WNOHANG);
                if (p > 0) {
                        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
                                (*killed)++;
                        else
                                (*other)++;
                        continue;
                }
                if (p < 0 && errno == ECHILD)
                        return;
                if (glove_time_monotonic_ms() > deadline)
                        fail_msg("a child process is still alive 3 s after the cgroup was killed");
                struct timespec ts = {.tv_nsec = 2000000L};
                nanosleep(&ts, NULL);
        }
}

static int pidfd_open_or_fail(pid_t pid) {
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                fail_msg("pidfd_open(%d): %s", (int)pid, strerror(errno));
        return fd;
}

/* True when the process behind pidfd has exited (zombie or reaped). */
static bool exited(int pidfd, int timeout_ms) {
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        return poll(&p, 1, timeout_ms) == 1;
}

/* After each test: whatever a failed test left is killed, removed and
 * reaped, so the next test starts clean. */
static int teardown(void **state) {
        (void)state;
        if (g_cg) {
                struct glove_error err = {0};
                if (glove_cgroup_destroy(g_cg, &err) < 0)
                        print_message("teardown: %s: %s\n", err.code, err.message);
                g_cg = NULL;
        }
        uint64_t deadline = glove_time_monotonic_ms() + 3000;
        while (glove_time_monotonic_ms() < deadline) {
                pid_t p = waitpid(-1, NULL, WNOHANG);
                if (p < 0 && errno == ECHILD)
                        return 0;
                if (p == 0) {
                        struct timespec ts = {.tv_nsec = 2000000L};
                        nanosleep(&ts, NULL);
                }
        }
        print_message("teardown: children remain after 3 s\n");
        return -1;
}

static void pause_forever(void) {
        for (;;)
                pause();
}

/* ---- limits and probe --------------------------------------------------- */

static void expect_invalid(struct glove_cgroup_limits l, const char *field) {
        struct glove_error err = {0};
        assert_int_equal(glove_cgroup_limits_check(&l, &err), -EINVAL);
        assert_string_equal(err.code, "cgroup.invalid_limit");
        if (!strstr(err.message, field))
                fail_msg("message \"%s\" does not name %s", err.message, field);
        /* create refuses before touching the host */
        struct glove_cgroup *cg = (struct glove_cgroup *)(uintptr_t)1; /* must become NULL */
        glove_error_clear(&err);
        assert_int_equal(glove_cgroup_create(&l, &cg, &err), -EINVAL);
        assert_null(cg);
        assert_string_equal(err.code, "cgroup.invalid_limit");
}

static void test_limits_check(void **state) {
        (void)state;
        struct glove_cgroup_limits d;
        glove_cgroup_limits_default(&d);
        assert_int_equal(d.pids, 512);
        assert_int_equal(d.cpu_time_ms, UINT64_C(24) * 3600 * 1000);
        assert_true(d.memory_bytes >= (UINT64_C(256) << 20) && d.memory_bytes <= (UINT64_C(4) << 30));
        assert_int_equal(glove_cgroup_limits_check(&d, NULL), 0);

        expect_invalid(small_limits(0, 10, 10), "memory_bytes");
        expect_invalid(small_limits(MiB - 1, 10, 10), "memory_bytes");
        expect_invalid(small_limits(GLOVE_CGROUP_MEMORY_MAX + 1, 10, 10), "memory_bytes");
        expect_invalid(small_limits(MiB, 0, 10), "pids");
        expect_invalid(small_limits(MiB, GLOVE_CGROUP_PIDS_MAX + 1, 10), "pids");
        expect_invalid(small_limits(MiB, 1, 0), "cpu_time_ms");
        expect_invalid(small_limits(MiB, 1, GLOVE_CGROUP_CPU_TIME_MS_MAX + 1), "cpu_time_ms");
        struct glove_cgroup_limits edge = small_limits(GLOVE_CGROUP_MEMORY_MIN, 1, 1);
        assert_int_equal(glove_cgroup_limits_check(&edge, NULL), 0);

        assert_string_equal(glove_cgroup_limit_name(GLOVE_CGROUP_LIMIT_MEMORY), "memory");
        assert_string_equal(glove_cgroup_limit_name(GLOVE_CGROUP_LIMIT_PIDS), "pids");
        assert_string_equal(glove_cgroup_limit_name(GLOVE_CGROUP_LIMIT_CPU_TIME), "cpu_time");
        assert_null(glove_cgroup_limit_name(GLOVE_CGROUP_LIMIT_NONE));
        assert_int_equal(glove_cgroup_destroy(NULL, NULL), 0);
}

/* The probe either finds a backend or says, with a stable code, why not. */
static void test_probe_answers(void **state) {
        (void)state;
        if (g_probe_rc == 0) {
                assert_true(g_probe.backend == GLOVE_CGROUP_BACKEND_V1 || g_probe.backend == GLOVE_CGROUP_BACKEND_V2);
                assert_true(g_probe.parent[0] == '/');
                return;
        }
        assert_int_equal(g_probe.backend, GLOVE_CGROUP_BACKEND_NONE);
        if (strcmp(g_probe_err.code, "cgroup.not_delegated") != 0 && strcmp(g_probe_err.code, "cgroup.unavailable") != 0)
                fail_msg("unexpected probe code %s: %s", g_probe_err.code, g_probe_err.message);
        assert_true(strlen(g_probe_err.message) > 20);
        print_message("probe (uid %u): %s: %s\n", (unsigned)geteuid(), g_probe_err.code, g_probe_err.message);
}

/* Run as root, a child that becomes uid 65534 gets "cgroup.not_delegated"
 * wherever root found a hierarchy that 65534 may not write. */
static void test_probe_unprivileged_not_delegated(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        if (geteuid() != 0) {
                print_message("skipped: needs root to switch to uid 65534 (test_probe_answers covers this user)\n");
                skip();
        }
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                char line[800] = "setuid failed";
                if (setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
                    setresuid(65534, 65534, 65534) == 0) {
                        struct glove_cgroup_probe pr;
                        struct glove_error e = {0};
                        int r = glove_cgroup_probe(&pr, &e);
                        int w = snprintf(line, sizeof(line), "%d %s %.600s", r, r < 0 ? e.code : "ok",
                                         r < 0 ? e.message : pr.parent);
                        (void)w;
                }
                ssize_t n = write(p[1], line, strlen(line));
                _exit(n > 0 ? 0 : 1);
        }
        close(p[1]);
        char line[800] = {0};
        ssize_t n = read(p[0], line, sizeof(line) - 1);
        close(p[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(n > 0);
        if (strncmp(line, "0 ok", 4) == 0) {
                print_message("uid 65534 may create cgroups here (delegated): %s\n", line);
                return;
        }
        if (!strstr(line, " cgroup.not_delegated ") || !strstr(line, "not delegated"))
                fail_msg("uid 65534 probe: %s", line);
        print_message("uid 65534: %s\n", line);
}

/* ---- pids --------------------------------------------------------------- */

struct bomb_result {
        int forked;
        int err;
};

static void body_fork_bomb(int out) {
        struct bomb_result res = {0, 0};
        for (int i = 0; i < 1000; i++) {
                pid_t p = fork();
                if (p == 0)
                        pause_forever();
                if (p < 0) {
                        res.err = errno;
                        break;
                }
                res.forked++;
        }
        if (write(out, &res, sizeof(res)) != (ssize_t)sizeof(res))
                _exit(91);
        pause_forever();
}

static void test_fork_bomb_stops_at_pids_max(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        struct glove_cgroup_limits l = small_limits(64 * MiB, 8, 60000);
        struct glove_cgroup *cg = create_or_fail(&l);
        struct kid k;
        kid_start(&k, body_fork_bomb);
        attach_or_fail(cg, k.pid);
        kid_release(&k);
        struct bomb_result res;
        read_exact_or_fail(k.out, &res, sizeof(res));
        kid_close(&k);
        assert_int_equal(res.err, EAGAIN);
        assert_int_equal(res.forked, 7); /* the bomb itself is the 8th task */
        struct glove_cgroup_stats st = stats_or_fail(cg);
        assert_int_equal(st.pids_current, 8);
        assert_true(st.pids_limit_hit);
        assert_true(st.pids_max_events >= 1);
        assert_false(st.memory_oom_killed);
        assert_int_equal(glove_cgroup_breach(cg, &st), GLOVE_CGROUP_LIMIT_PIDS);

        struct glove_error err = {0};
        assert_int_equal(glove_cgroup_kill(cg, &err), 0);
        int killed, other;
        reap_all(&killed, &other);
        assert_int_equal(killed, 8);
        assert_int_equal(other, 0);
        /* pids.current counts tasks until they are reaped */
        assert_int_equal(stats_or_fail(cg).pids_current, 0);
        destroy_or_fail(cg);
}

/* ---- memory ------------------------------------------------------------- */

static void body_memory_hog(int out) {
        size_t len = 256 * MiB;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
                _exit(92);
        for (size_t off = 0; off < len; off += 4096)
                p[off] = 1;
        (void)!write(out, "survived", 8);
        _exit(0);
}

static void test_memory_hog_is_oom_killed(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        struct glove_cgroup_limits l = small_limits(32 * MiB, 16, 60000);
        struct glove_cgroup *cg = create_or_fail(&l);
        struct glove_cgroup_info info;
        glove_cgroup_info(cg, &info);
        if (!info.swap_limited)
                print_message("note: swap accounting is off here; only swappiness 0 keeps the cgroup from swapping\n");
        struct kid k;
        kid_start(&k, body_memory_hog);
        attach_or_fail(cg, k.pid);
        struct glove_cgroup_stats before = stats_or_fail(cg);
        assert_false(before.memory_oom_killed);
        kid_release(&k);
        int st;
        assert_int_equal(waitpid(k.pid, &st, 0), k.pid);
        char buf[16] = {0};
        ssize_t n = read(k.out, buf, sizeof(buf) - 1);
        kid_close(&k);
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
                fail_msg("the hog was not OOM-killed: status %#x, said \"%s\" (%zd)", st, buf, n);
        struct glove_cgroup_stats s = stats_or_fail(cg);
        assert_true(s.memory_oom_killed);
        assert_true(s.oom_kills >= 1);
        assert_int_equal(glove_cgroup_breach(cg, &s), GLOVE_CGROUP_LIMIT_MEMORY);
        if (s.memory_peak_bytes < 16 * MiB || s.memory_peak_bytes > l.memory_bytes)
                fail_msg("peak %llu bytes, expected between 16 MiB and the 32 MiB limit",
                         (unsigned long long)s.memory_peak_bytes);
        destroy_or_fail(cg);
}

/* ---- cpu ---------------------------------------------------------------- */

static uint64_t cpu_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void body_busy_150ms(int out) {
        (void)out;
        uint64_t start = cpu_ns();
        volatile uint64_t x = 0;
        while (cpu_ns() - start < 150000000u)
                x++;
        _exit(0);
}

static void test_cpu_usage_grows(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        struct glove_cgroup_limits l = small_limits(64 * MiB, 16, 100);
        struct glove_cgroup *cg = create_or_fail(&l);
        struct kid k;
        kid_start(&k, body_busy_150ms);
        attach_or_fail(cg, k.pid);
        struct glove_cgroup_stats before = stats_or_fail(cg);
        assert_true(before.cpu_usage_ns < 50000000u);
        assert_int_equal(glove_cgroup_breach(cg, &before), GLOVE_CGROUP_LIMIT_NONE);
        kid_release(&k);
        int st;
        assert_int_equal(waitpid(k.pid, &st, 0), k.pid);
        kid_close(&k);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        struct glove_cgroup_stats after = stats_or_fail(cg);
        if (after.cpu_usage_ns < 150000000u)
                fail_msg("cgroup CPU usage %llu ns after a 150 ms busy child", (unsigned long long)after.cpu_usage_ns);
        assert_true(after.cpu_usage_ns > before.cpu_usage_ns);
        assert_int_equal(after.pids_current, 0);
        assert_int_equal(glove_cgroup_breach(cg, &after), GLOVE_CGROUP_LIMIT_CPU_TIME);
        destroy_or_fail(cg);
}

/* ---- kill --------------------------------------------------------------- */

static void body_family(int out) {
        pid_t kids[5];
        for (int i = 0; i < 5; i++) {
                kids[i] = fork();
                if (kids[i] == 0)
                        pause_forever();
                if (kids[i] < 0)
                        _exit(93);
        }
        if (write(out, kids, sizeof(kids)) != (ssize_t)sizeof(kids))
                _exit(94);
        pause_forever();
}

enum kill_mode { KILL_DEFAULT, KILL_ROUNDS, KILL_ROUNDS_FROZEN };

static void check_kill_empties(enum kill_mode mode) {
        struct glove_cgroup_limits l = small_limits(64 * MiB, 32, 60000);
        struct glove_cgroup *cg = create_or_fail(&l);
        struct glove_cgroup_info info;
        glove_cgroup_info(cg, &info);
        if (mode == KILL_ROUNDS_FROZEN && !info.freezer) {
                destroy_or_fail(cg);
                print_message("skipped: neither the v1 freezer nor cgroup.freeze is available to the run cgroup\n");
                skip();
        }
        if (mode != KILL_DEFAULT) {
                cg->kill_file = false;                       /* as before Linux 5.14 */
                cg->freezer = mode == KILL_ROUNDS_FROZEN;
        }
        struct kid k;
        kid_start(&k, body_family);
        attach_or_fail(cg, k.pid);
        kid_release(&k);
        pid_t gk[5];
        read_exact_or_fail(k.out, gk, sizeof(gk));
        kid_close(&k);
        int fds[5];
        for (int i = 0; i < 5; i++)
                fds[i] = pidfd_open_or_fail(gk[i]);
        assert_int_equal(stats_or_fail(cg).pids_current, 6);

        struct glove_error err = {0};
        int r = glove_cgroup_kill(cg, &err);
        if (r < 0)
                fail_msg("glove_cgroup_kill: %d %s: %s", r, err.code, err.message);
        for (int i = 0; i < 5; i++) {
                assert_true(exited(fds[i], 1000));
                close(fds[i]);
        }
        int killed, other;
        reap_all(&killed, &other);
        assert_int_equal(killed, 6);
        assert_int_equal(other, 0);
        assert_int_equal(stats_or_fail(cg).pids_current, 0);
        destroy_or_fail(cg);
}

static void test_kill_empties(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        check_kill_empties(KILL_DEFAULT);
}

static void test_kill_empties_by_signal_rounds(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        check_kill_empties(KILL_ROUNDS);
}

static void test_kill_empties_frozen_rounds(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        check_kill_empties(KILL_ROUNDS_FROZEN);
}

/* ---- non-blocking kill and destroy ------------------------------------- */

/* A pass count that only guards against a kill or destroy that never ends
 * (each pass is one non-blocking call, with 1 ms between passes). */
#define PASSES_MAX 10000

static void pause_1ms(void) {
        struct timespec ts = {.tv_nsec = 1000000L};
        nanosleep(&ts, NULL);
}

/* The event-loop way: kill_once until empty, try_destroy until gone, with
 * a family of six processes in the cgroup. try_destroy refuses (-EAGAIN,
 * cg still usable) while the cgroup holds processes. */
static void check_kill_once_try_destroy(enum kill_mode mode) {
        struct glove_cgroup_limits l = small_limits(64 * MiB, 32, 60000);
        struct glove_cgroup *cg = create_or_fail(&l);
        struct glove_cgroup_info info;
        glove_cgroup_info(cg, &info);
        if (mode != KILL_DEFAULT) {
                cg->kill_file = false;
                cg->freezer = false;
        }
        char paths[GLOVE_CGROUP_DIRS_MAX][PATH_MAX];
        for (size_t i = 0; i < info.dirs; i++)
                snprintf(paths[i], PATH_MAX, "%s", glove_cgroup_path(cg, i));
        struct kid k;
        kid_start(&k, body_family);
        attach_or_fail(cg, k.pid);
        kid_release(&k);
        pid_t gk[5];
        read_exact_or_fail(k.out, gk, sizeof(gk));
        kid_close(&k);

        struct glove_error err = {0};
        assert_int_equal(glove_cgroup_try_destroy(cg, &err), -EAGAIN);
        assert_false(glove_error_is_set(&err));
        assert_int_equal(stats_or_fail(cg).pids_current, 6); /* cg still valid, nothing killed */

        int r, passes = 0;
        while ((r = glove_cgroup_kill_once(cg, &err)) == -EAGAIN && ++passes < PASSES_MAX)
                pause_1ms();
        if (r < 0)
                fail_msg("glove_cgroup_kill_once: %d %s: %s", r, err.code ? err.code : "", err.message);
        assert_false(glove_error_is_set(&err));
        assert_int_equal(glove_cgroup_kill_once(cg, &err), 0); /* empty: at once */
        int killed, other;
        reap_all(&killed, &other);
        assert_int_equal(killed, 6);
        assert_int_equal(other, 0);

        g_cg = NULL;
        passes = 0;
        while ((r = glove_cgroup_try_destroy(cg, &err)) == -EAGAIN && ++passes < PASSES_MAX)
                pause_1ms();
        if (r < 0) {
                g_cg = r == -EAGAIN ? cg : NULL;
                fail_msg("glove_cgroup_try_destroy: %d %s: %s", r, err.code ? err.code : "", err.message);
        }
        for (size_t i = 0; i < info.dirs; i++) {
                struct stat st;
                if (stat(paths[i], &st) == 0 || errno != ENOENT)
                        fail_msg("%s still exists after try_destroy returned 0", paths[i]);
        }
}

static void test_kill_once_try_destroy(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        check_kill_once_try_destroy(KILL_DEFAULT);
}

static void test_kill_once_try_destroy_by_signal_rounds(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        check_kill_once_try_destroy(KILL_ROUNDS);
}

/* An empty cgroup: kill_once answers 0 and try_destroy removes it at once. */
static void test_kill_once_empty_and_try_destroy_null(void **state) {
        (void)state;
        assert_int_equal(glove_cgroup_try_destroy(NULL, NULL), 0);
        REQUIRE_CGROUPS();
        struct glove_cgroup_limits l = small_limits(64 * MiB, 16, 60000);
        struct glove_cgroup *cg = create_or_fail(&l);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s", glove_cgroup_path(cg, 0));
        struct glove_error err = {0};
        assert_int_equal(glove_cgroup_kill_once(cg, &err), 0);
        g_cg = NULL;
        int r = glove_cgroup_try_destroy(cg, &err);
        if (r < 0) {
                g_cg = r == -EAGAIN ? cg : NULL;
                fail_msg("glove_cgroup_try_destroy: %d %s: %s", r, err.code ? err.code : "", err.message);
        }
        struct stat st;
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);
}

/* ---- destroy ------------------------------------------------------------ */

static void body_sleep(int out) {
        (void)out;
        pause_forever();
}

/* No entry named "glove-<our pid>-..." is left in dir. */
static void expect_no_run_cgroups_in(const char *dir) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "glove-%d-", (int)getpid());
        DIR *d = opendir(dir);
        if (!d)
                fail_msg("opendir %s: %s", dir, strerror(errno));
        struct dirent *e;
        while ((e = readdir(d)))
                if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
                        fail_msg("%s/%s is left behind", dir, e->d_name);
        closedir(d);
}

static void test_destroy_removes_directories(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        struct glove_cgroup_limits l = small_limits(64 * MiB, 16, 60000);
        struct glove_cgroup *cg = create_or_fail(&l);
        struct glove_cgroup_info info;
        glove_cgroup_info(cg, &info);
        assert_int_equal(info.backend, g_probe.backend);
        assert_true(strncmp(info.name, "glove-", 6) == 0);
        assert_true(info.dirs >= 1 && info.dirs <= GLOVE_CGROUP_DIRS_MAX);
        if (info.backend == GLOVE_CGROUP_BACKEND_V1)
                assert_int_equal(glove_cgroup_clone_fd(cg), -EOPNOTSUPP);
        else
                assert_true(glove_cgroup_clone_fd(cg) >= 0);
        char paths[GLOVE_CGROUP_DIRS_MAX][PATH_MAX];
        for (size_t i = 0; i < info.dirs; i++) {
                const char *p = glove_cgroup_path(cg, i);
                assert_non_null(p);
                snprintf(paths[i], PATH_MAX, "%s", p);
                struct stat st;
                if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                        fail_msg("%s does not exist while the cgroup does", p);
        }
        assert_null(glove_cgroup_path(cg, info.dirs));
        struct kid k;
        kid_start(&k, body_sleep);
        attach_or_fail(cg, k.pid);
        kid_release(&k);
        kid_close(&k);

        destroy_or_fail(cg);
        for (size_t i = 0; i < info.dirs; i++) {
                struct stat st;
                if (stat(paths[i], &st) == 0 || errno != ENOENT)
                        fail_msg("%s still exists after destroy", paths[i]);
                *strrchr(paths[i], '/') = '\0';
                expect_no_run_cgroups_in(paths[i]);
        }
        int killed, other;
        reap_all(&killed, &other);
        assert_int_equal(killed, 1);
        assert_int_equal(other, 0);
}

/* ---- attach, exit, nothing left ------------------------------------------ */

/* Leaves a daemon behind: a grandchild forks, reports its child, exits. */
static void body_leave_daemon(int out) {
        pid_t g = fork();
        if (g < 0)
                _exit(95);
        if (g == 0) {
                (void)setsid();
                pid_t gg = fork();
                if (gg == 0)
                        pause_forever();
                if (gg < 0 || write(out, &gg, sizeof(gg)) != (ssize_t)sizeof(gg))
                        _exit(96);
                _exit(0);
        }
        int st;
        if (waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                _exit(97);
        _exit(0);
}

static void test_attach_exit_leaves_no_stray(void **state) {
        (void)state;
        REQUIRE_CGROUPS();
        struct glove_cgroup_limits l = small_limits(64 * MiB, 16, 60000);
        struct glove_cgroup *cg = create_or_fail(&l);
        struct kid k;
        kid_start(&k, body_leave_daemon);
        attach_or_fail(cg, k.pid);
        kid_release(&k);
        pid_t daemon_pid;
        read_exact_or_fail(k.out, &daemon_pid, sizeof(daemon_pid));
        kid_close(&k);
        int dfd = pidfd_open_or_fail(daemon_pid);
        int st;
        assert_int_equal(waitpid(k.pid, &st, 0), k.pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        /* The agent is gone; its daemon is not, and it is still inside. */
        assert_false(exited(dfd, 0));
        assert_int_equal(stats_or_fail(cg).pids_current, 1);

        destroy_or_fail(cg);
        assert_true(exited(dfd, 1000));
        close(dfd);
        int killed, other;
        reap_all(&killed, &other);
        assert_int_equal(killed, 1); /* the daemon */
        assert_int_equal(other, 0);  /* its parent was reaped by the child already */
}

/* ---- v2 mechanics ------------------------------------------------------- */

static pid_t clone_into(int cgroup_fd) {
        struct clone_args args = {
                .flags = CLONE_INTO_CGROUP,
                .exit_signal = SIGCHLD,
                .cgroup = (uint64_t)cgroup_fd,
        };
        return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

static bool in_v2_cgroup(pid_t pid, const char *name) {
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        bool found = false;
        while (fgets(buf, sizeof(buf), f))
                if (strncmp(buf, "0::/", 4) == 0 && strstr(buf, name))
                        found = true;
        fclose(f);
        return found;
}

/*
 * Where the host gives no v2 hierarchy with controllers (as on hybrid
 * hosts), the v2 backend's mechanics are still tested on the controller-less
 * v2 tree: creation by descriptor, clone3 with CLONE_INTO_CGROUP, attach,
 * cpu.stat usage, cgroup.kill and the freeze-and-signal fallback, removal.
 * The memory and pids limits of v2 need the controllers and are covered by
 * the tests above only on hosts where the probe picks v2.
 */
/* One v2 run: a process cloned in with CLONE_INTO_CGROUP and one attached
 * by pid, CPU usage seen, killed (with cgroup.kill, or by freeze-and-signal
 * rounds when use_kill_file is false), removed. A fresh cgroup per run: the
 * kernel kills a process cloned into a cgroup that cgroup.kill was once
 * written to (seen on 6.18), and a run cgroup is never reused anyway. */
static void v2_run(bool use_kill_file) {
        struct cg_options opts = {.force = GLOVE_CGROUP_BACKEND_V2, .v2_controllers = 0};
        struct glove_cgroup *cg = NULL;
        struct glove_error err = {0};
        struct glove_cgroup_limits l = small_limits(64 * MiB, 16, 60000);
        if (cg_create(&l, &opts, &cg, &err) < 0) {
                print_message("skipped: no writable cgroup v2 tree here (%s): %s\n", err.code, err.message);
                skip();
        }
        g_cg = cg;
        struct glove_cgroup_info info;
        glove_cgroup_info(cg, &info);
        assert_int_equal(info.backend, GLOVE_CGROUP_BACKEND_V2);
        assert_int_equal(info.dirs, 1);
        if (!use_kill_file) {
                cg->kill_file = false; /* as before Linux 5.14 */
                if (!info.freezer)
                        print_message("note: no cgroup.freeze; signal rounds without freezing\n");
        } else if (!info.kill_file) {
                print_message("note: no cgroup.kill on this kernel; the signal rounds are used\n");
        }
        int cfd = glove_cgroup_clone_fd(cg);
        assert_true(cfd >= 0);

        int busy[2];
        assert_int_equal(pipe2(busy, O_CLOEXEC), 0);
        pid_t a = clone_into(cfd);
        if (a == 0) {
                uint64_t start = cpu_ns();
                volatile uint64_t x = 0;
                while (cpu_ns() - start < 30000000u)
                        x++;
                (void)!write(busy[1], "d", 1);
                pause_forever();
        }
        close(busy[1]);
        if (a < 0) {
                int e = errno;
                close(busy[0]);
                print_message("skipped: clone3 with CLONE_INTO_CGROUP: %s\n", strerror(e));
                skip();
        }
        assert_true(in_v2_cgroup(a, info.name));
        struct kid k;
        kid_start(&k, body_sleep);
        attach_or_fail(cg, k.pid);
        kid_release(&k);
        kid_close(&k);
        assert_true(in_v2_cgroup(k.pid, info.name));
        char done;
        read_exact_or_fail(busy[0], &done, 1);
        close(busy[0]);
        struct glove_cgroup_stats s = stats_or_fail(cg);
        assert_int_equal(s.pids_current, 2);
        if (s.cpu_usage_ns < 30000000u)
                fail_msg("cpu.stat usage %llu ns after a 30 ms busy child", (unsigned long long)s.cpu_usage_ns);
        int r = glove_cgroup_kill(cg, &err);
        if (r < 0)
                fail_msg("glove_cgroup_kill: %d %s: %s", r, err.code, err.message);
        int killed, other;
        reap_all(&killed, &other);
        assert_int_equal(killed, 2);
        assert_int_equal(other, 0);
        assert_int_equal(stats_or_fail(cg).pids_current, 0);

        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s", glove_cgroup_path(cg, 0));
        destroy_or_fail(cg);
        struct stat st;
        if (stat(path, &st) == 0 || errno != ENOENT)
                fail_msg("%s still exists after destroy", path);
}

static void test_v2_mechanics(void **state) {
        (void)state;
        v2_run(true);
}

static void test_v2_mechanics_kill_fallback(void **state) {
        (void)state;
        v2_run(false);
}

/*
 * The delegated layout of the spec (architecture.md: session cgroups are
 * siblings of the supervisor's leaf cgroup): a parent P with the caller in
 * its leaf P/leaf. Built on the controller-less v2 tree; a child moves
 * itself into P/leaf, creates a run cgroup beside its own, clones a process
 * into it, and destroys it.
 */
static int child_beside(const char *leaf, const char *parent, int report) {
        char msg[600] = "ok";
        struct glove_error err = {0};
        struct glove_cgroup *cg = NULL;
        char pid[32];
        int n = snprintf(pid, sizeof(pid), "%d", (int)getpid());
        char procs[PATH_MAX];
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", leaf);
        int fd = open(procs, O_WRONLY | O_CLOEXEC);
        struct cg_options opts = {.force = GLOVE_CGROUP_BACKEND_V2, .v2_controllers = 0, .v2_beside_only = true};
        struct glove_cgroup_limits l = small_limits(64 * MiB, 16, 60000);
        if (fd < 0 || write(fd, pid, (size_t)n) != n) {
                snprintf(msg, sizeof(msg), "cannot move into %s: %s", leaf, strerror(errno));
        } else if (cg_create(&l, &opts, &cg, &err) < 0) {
                snprintf(msg, sizeof(msg), "cg_create: %s: %.500s", err.code, err.message);
        } else {
                const char *path = glove_cgroup_path(cg, 0);
                struct glove_cgroup_info info;
                glove_cgroup_info(cg, &info);
                char want[PATH_MAX];
                snprintf(want, sizeof(want), "%s/%s", parent, info.name);
                pid_t a = clone_into(glove_cgroup_clone_fd(cg));
                if (a == 0)
                        pause_forever();
                if (strcmp(path, want) != 0)
                        snprintf(msg, sizeof(msg), "created %.250s, expected %.250s", path, want);
                else if (a < 0 || !in_v2_cgroup(a, info.name))
                        snprintf(msg, sizeof(msg), "clone into the sibling failed");
                if (glove_cgroup_destroy(cg, &err) < 0)
                        snprintf(msg, sizeof(msg), "destroy: %s: %.500s", err.code, err.message);
                int st;
                if (a > 0 && (waitpid(a, &st, 0) != a || !WIFSIGNALED(st)))
                        snprintf(msg, sizeof(msg), "the cloned process was not killed");
                struct stat sb;
                if (stat(want, &sb) == 0)
                        snprintf(msg, sizeof(msg), "%.500s is left behind", want);
        }
        if (fd >= 0)
                close(fd);
        return write(report, msg, strlen(msg)) > 0 ? 0 : 1;
}

static void test_v2_beside_delegated_leaf(void **state) {
        (void)state;
        const char *unified = "/sys/fs/cgroup/unified";
        struct stat sb;
        if (geteuid() != 0 || stat(unified, &sb) < 0) {
                print_message("skipped: needs root and a cgroup v2 tree at %s to build a delegated layout\n", unified);
                skip();
        }
        char parent[256], leaf[300];
        snprintf(parent, sizeof(parent), "%s/glove-test-%d", unified, (int)getpid());
        snprintf(leaf, sizeof(leaf), "%s/leaf", parent);
        if (mkdir(parent, 0755) < 0) {
                print_message("skipped: cannot create %s: %s\n", parent, strerror(errno));
                skip();
        }
        assert_int_equal(mkdir(leaf, 0755), 0);
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                _exit(child_beside(leaf, parent, p[1]));
        }
        close(p[1]);
        char msg[600] = {0};
        ssize_t n = read(p[0], msg, sizeof(msg) - 1);
        close(p[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        int r1 = rmdir(leaf), r2 = rmdir(parent);
        if (n <= 0 || strcmp(msg, "ok") != 0)
                fail_msg("beside a delegated leaf: %s", n > 0 ? msg : "no report");
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(r1, 0);
        assert_int_equal(r2, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_limits_check, teardown),
                cmocka_unit_test_teardown(test_probe_answers, teardown),
                cmocka_unit_test_teardown(test_probe_unprivileged_not_delegated, teardown),
                cmocka_unit_test_teardown(test_fork_bomb_stops_at_pids_max, teardown),
                cmocka_unit_test_teardown(test_memory_hog_is_oom_killed, teardown),
                cmocka_unit_test_teardown(test_cpu_usage_grows, teardown),
                cmocka_unit_test_teardown(test_kill_empties, teardown),
                cmocka_unit_test_teardown(test_kill_empties_by_signal_rounds, teardown),
                cmocka_unit_test_teardown(test_kill_empties_frozen_rounds, teardown),
                cmocka_unit_test_teardown(test_kill_once_try_destroy, teardown),
                cmocka_unit_test_teardown(test_kill_once_try_destroy_by_signal_rounds, teardown),
                cmocka_unit_test_teardown(test_kill_once_empty_and_try_destroy_null, teardown),
                cmocka_unit_test_teardown(test_destroy_removes_directories, teardown),
                cmocka_unit_test_teardown(test_attach_exit_leaves_no_stray, teardown),
                cmocka_unit_test_teardown(test_v2_mechanics, teardown),
                cmocka_unit_test_teardown(test_v2_mechanics_kill_fallback, teardown),
                cmocka_unit_test_teardown(test_v2_beside_delegated_leaf, teardown),
        };
        return cmocka_run_group_tests(tests, group_setup, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/sandbox.h, with real sandboxes:
 * the asynchronous spawn (start / finish / reap / collect) driven by poll
 * from one thread while two other threads allocate, print and translate
 * errors in a tight loop (a clone3 child that touched a lock one of them
 * held would hang: alarm() turns that into a failure); Glove's argv hidden
 * from /proc/1/cmdline without glove_proctitle_init; the table of codes the
 * child can report checked against the sources.
 *
 * When user namespaces are unavailable to the user running the tests,
 * every test that spawns prints why and is skipped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/container/grant.h"
#include "glove/container/mount_plan.h"
#include "glove/container/sandbox.h"
#include "glove/container/seccomp.h"
#include "internal.h"

/* Hang guard for a whole test, seconds: SIGALRM's default action ends the
 * test binary, which meson reports as a failure. */
#define HANG_GUARD_S 60

#define SPAWNS 40

static char *const g_envp[] = {"PATH=/usr/bin:/bin", "HOME=/home/agent", NULL};
static const char *g_argv0;     /* this binary's argv[0] */
static char **g_sources;        /* sources whose codes the table must hold */
static int g_nsources;
static struct glove_grant_set g_no_grants;
static struct glove_mount_plan *g_plan; /* the standard perimeter, no grant */
static int g_userns = -1;       /* 1 available, 0 not (g_userns_why says why) */
static char g_userns_why[600];

static struct glove_sandbox_config base_config(char *const *argv) {
        return (struct glove_sandbox_config){
                .argv = argv,
                .envp = g_envp,
                .mounts = g_plan,
                .seccomp = &glove_seccomp_prebuilt,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .cgroup_fd = -1,
                .pid1_fd = -1,
        };
}

/* Skips (saying why) when no sandbox can be created here. */
#define REQUIRE_USERNS()                                                           \
        do {                                                                       \
                if (!g_userns) {                                                   \
                        print_message("skipped: %s\n", g_userns_why);             \
                        skip();                                                    \
                }                                                                  \
        } while (0)

static int group_setup(void **state) {
        (void)state;
        /* One arena for every thread: the busy threads then hold the very
         * lock a child's malloc would take (with per-thread arenas they
         * would not), so a child that allocates hangs here. */
        mallopt(M_ARENA_MAX, 1);
        glove_grant_set_init(&g_no_grants);
        struct glove_mount_plan_params mp = {
                .uid = glove_mount_plan_inside_id(geteuid()),
                .gid = glove_mount_plan_inside_id(getegid()),
                .mask_root_only = geteuid() == 0,
        };
        struct glove_error perr = {0};
        if (glove_mount_plan_new(&mp, &g_plan, &perr) < 0 || glove_mount_plan_add_grants(g_plan, &g_no_grants, &perr) < 0) {
                print_message("mount plan: %s: %s\n", perr.code, perr.message);
                return -1;
        }
        char *argv[] = {"/bin/true", NULL};
        struct glove_sandbox_config cfg = base_config(argv);
        struct glove_sandbox sb;
        struct glove_error err = {0};
        int r = glove_sandbox_spawn(&cfg, &sb, &err);
        if (r == 0) {
                g_userns = 1;
                glove_sandbox_destroy(&sb);
        } else if (strcmp(err.code, "sandbox.userns") == 0) {
                g_userns = 0;
                snprintf(g_userns_why, sizeof(g_userns_why), "user namespaces are unavailable: %s", err.message);
        } else {
                print_message("a first sandbox failed: %s: %s\n", err.code, err.message);
                return -1;
        }
        return 0;
}

/* ---- busy threads ---------------------------------------------------------- */

static atomic_bool g_stop;

/* Holds the allocator's lock as much of the time as it can (odd seeds),
 * or stdio's, the locale's and the directory streams' (even seeds). */
static void *busy_thread(void *arg) {
        unsigned seed = (unsigned)(uintptr_t)arg;
        bool allocator = seed % 2 == 1;
        void *keep[64] = {0};
        while (!atomic_load(&g_stop)) {
                seed = seed * 1103515245u + 12345u;
                if (allocator) {
                        /* above the tcache, below the mmap threshold: the
                         * arena's lock every time */
                        size_t slot = (seed >> 8) % 64;
                        free(keep[slot]);
                        keep[slot] = malloc(2048 + seed % 65536);
                        continue;
                }
                FILE *f = fopen("/dev/null", "we");
                if (f) {
                        fprintf(f, "%u %s %.3f\n", seed, strerror((int)(seed % 140)), (double)seed / 7.0);
                        fclose(f);
                }
                if (seed % 64 == 0) {
                        DIR *d = opendir("/proc/self/fd");
                        if (d) {
                                while (readdir(d))
                                        ;
                                closedir(d);
                        }
                }
        }
        for (size_t i = 0; i < 64; i++)
                free(keep[i]);
        return NULL;
}

/* ---- many spawns ------------------------------------------------------------ */

enum expect { EXPECT_TRUE, EXPECT_FALSE, EXPECT_NOT_FOUND, EXPECT_GRANT_CHANGED };

struct one {
        enum expect expect;
        struct glove_sandbox sb;
        int stage;              /* 0 starting, 1 ready/failed, 2 reaped */
        int finish;             /* what spawn_finish answered */
        const char *code;
        siginfo_t si;
};

static void wait_readable(int fd) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
                ;
}

static void test_spawn_many_while_threads_allocate(void **state) {
        (void)state;
        REQUIRE_USERNS();
        alarm(HANG_GUARD_S);
        /* A grant whose directory is replaced after it was checked: the
         * child refuses it ("grant.changed") while building its perimeter. */
        char dir[] = "/tmp/glove-test-sandbox-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char granted[sizeof(dir) + 8], moved[sizeof(dir) + 8];
        snprintf(granted, sizeof(granted), "%s/g", dir);
        snprintf(moved, sizeof(moved), "%s/m", dir);
        assert_int_equal(mkdir(granted, 0755), 0);
        static struct glove_grant_set changed;
        glove_grant_set_init(&changed);
        struct glove_error err = {0};
        if (glove_grant_set_add(&changed, granted, GLOVE_GRANT_READ, false, "/", &err) < 0)
                fail_msg("grant: %s: %s", err.code, err.message);
        assert_int_equal(rename(granted, moved), 0);
        assert_int_equal(mkdir(granted, 0755), 0);
        struct glove_mount_plan_params mp = {.uid = glove_mount_plan_inside_id(geteuid()),
                                             .gid = glove_mount_plan_inside_id(getegid())};
        struct glove_mount_plan *changed_plan = NULL;
        if (glove_mount_plan_new(&mp, &changed_plan, &err) < 0 || glove_mount_plan_add_grants(changed_plan, &changed, &err) < 0)
                fail_msg("plan: %s: %s", err.code, err.message);

        atomic_store(&g_stop, false);
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&th[i], NULL, busy_thread, (void *)(uintptr_t)(i + 1)), 0);

        char *argv_true[] = {"/bin/true", NULL};
        char *argv_false[] = {"false", NULL};
        char *argv_missing[] = {"/nonexistent/program", NULL};
        static struct one all[SPAWNS];
        for (int i = 0; i < SPAWNS; i++) {
                struct one *o = &all[i];
                *o = (struct one){.expect = (enum expect)(i % 4)};
                char *const *argv = o->expect == EXPECT_TRUE    ? argv_true
                                    : o->expect == EXPECT_FALSE ? argv_false
                                                                : argv_missing;
                struct glove_sandbox_config cfg = base_config(argv);
                if (o->expect == EXPECT_GRANT_CHANGED)
                        cfg.mounts = changed_plan;
                cfg.parent_death_kill = i % 2 == 0;
                glove_error_clear(&err);
                if (glove_sandbox_spawn_start(&cfg, &o->sb, &err) < 0)
                        fail_msg("spawn %d: start: %s: %s", i, err.code, err.message);
        }
        /* Finish each as its report arrives. */
        int pending = SPAWNS;
        while (pending > 0) {
                struct pollfd p[SPAWNS];
                int map[SPAWNS], n = 0;
                for (int i = 0; i < SPAWNS; i++)
                        if (all[i].stage == 0) {
                                p[n] = (struct pollfd){.fd = all[i].sb.report_fd, .events = POLLIN};
                                map[n++] = i;
                        }
                assert_true(poll(p, (nfds_t)n, -1) > 0);
                for (int k = 0; k < n; k++) {
                        if (!p[k].revents)
                                continue;
                        struct one *o = &all[map[k]];
                        struct glove_error e = {0};
                        int r = glove_sandbox_spawn_finish(&o->sb, &e);
                        if (r == -EAGAIN)
                                continue;
                        o->finish = r;
                        o->code = e.code;
                        o->stage = 1;
                        pending--;
                }
        }
        /* Release the ready ones; reap them all without blocking. */
        for (int i = 0; i < SPAWNS; i++) {
                struct one *o = &all[i];
                if (o->expect == EXPECT_GRANT_CHANGED) {
                        if (o->finish >= 0)
                                fail_msg("spawn %d with a replaced grant became ready", i);
                        assert_string_equal(o->code, "grant.changed");
                        continue;
                }
                if (o->finish < 0)
                        fail_msg("spawn %d failed: %d %s", i, o->finish, o->code);
                glove_error_clear(&err);
                if (glove_sandbox_release(&o->sb, &err) < 0)
                        fail_msg("release %d: %s: %s", i, err.code, err.message);
        }
        for (int i = 0; i < SPAWNS; i++) {
                struct one *o = &all[i];
                int r;
                while ((r = glove_sandbox_reap(&o->sb, &o->si)) == 0)
                        wait_readable(o->sb.pidfd);
                assert_int_equal(r, 1);
                assert_int_equal(glove_sandbox_reap(&o->sb, NULL), -ECHILD);
                struct glove_sandbox_outcome out;
                glove_sandbox_collect(&o->sb, &o->si, &out);
                switch (o->expect) {
                case EXPECT_TRUE:
                        assert_int_equal(out.kind, GLOVE_SANDBOX_EXITED);
                        assert_int_equal(out.value, 0);
                        break;
                case EXPECT_FALSE:
                        assert_int_equal(out.kind, GLOVE_SANDBOX_EXITED);
                        assert_int_equal(out.value, 1);
                        break;
                case EXPECT_NOT_FOUND:
                        assert_int_equal(out.kind, GLOVE_SANDBOX_EXEC_FAILED);
                        assert_int_equal(out.value, ENOENT);
                        assert_non_null(strstr(out.detail, "No such file or directory"));
                        break;
                case EXPECT_GRANT_CHANGED:
                        /* PID 1 exited after its report, or finish's SIGKILL came first */
                        assert_int_equal(out.kind, GLOVE_SANDBOX_LOST);
                        break;
                }
                glove_sandbox_destroy(&o->sb);
        }
        atomic_store(&g_stop, true);
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        alarm(0);
        glove_grant_set_clear(&changed);
        glove_mount_plan_free(changed_plan);
        rmdir(granted);
        rmdir(moved);
        rmdir(dir);
}

/* The blocking wrapper, spawned from a thread while another one is busy. */
static void *spawn_thread(void *arg) {
        int *result = arg;
        char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
        struct glove_sandbox_config cfg = base_config(argv);
        struct glove_sandbox sb;
        struct glove_error err = {0};
        *result = -1;
        for (int i = 0; i < 10; i++) {
                if (glove_sandbox_spawn(&cfg, &sb, &err) < 0 || glove_sandbox_release(&sb, &err) < 0) {
                        print_message("spawn: %s: %s\n", err.code, err.message);
                        glove_sandbox_destroy(&sb);
                        return NULL;
                }
                struct glove_sandbox_outcome out;
                glove_sandbox_collect(&sb, NULL, &out);
                glove_sandbox_destroy(&sb);
                if (out.kind != GLOVE_SANDBOX_EXITED || out.value != 7)
                        return NULL;
        }
        *result = 0;
        return NULL;
}

static void test_blocking_spawn_from_a_thread(void **state) {
        (void)state;
        REQUIRE_USERNS();
        alarm(HANG_GUARD_S);
        atomic_store(&g_stop, false);
        pthread_t busy, spawner;
        assert_int_equal(pthread_create(&busy, NULL, busy_thread, (void *)(uintptr_t)7), 0);
        int result = -1;
        assert_int_equal(pthread_create(&spawner, NULL, spawn_thread, &result), 0);
        pthread_join(spawner, NULL);
        atomic_store(&g_stop, true);
        pthread_join(busy, NULL);
        alarm(0);
        assert_int_equal(result, 0);
}

/* ---- kill and reap never block ---------------------------------------------- */

static void test_kill_reap_collect(void **state) {
        (void)state;
        REQUIRE_USERNS();
        alarm(HANG_GUARD_S);
        char *argv[] = {"/bin/true", NULL};
        struct glove_sandbox_config cfg = base_config(argv);
        struct glove_sandbox sb;
        struct glove_error err = {0};
        if (glove_sandbox_spawn(&cfg, &sb, &err) < 0)
                fail_msg("spawn: %s: %s", err.code, err.message);
        /* Ready and waiting for release: it cannot have exited. */
        assert_int_equal(glove_sandbox_reap(&sb, NULL), 0);
        assert_int_equal(glove_sandbox_spawn_finish(&sb, &err), 0); /* already ready */
        glove_sandbox_kill(&sb);
        glove_sandbox_kill(&sb); /* idempotent */
        siginfo_t si;
        int r;
        while ((r = glove_sandbox_reap(&sb, &si)) == 0)
                wait_readable(sb.pidfd);
        assert_int_equal(r, 1);
        assert_int_equal(si.si_code, CLD_KILLED);
        assert_int_equal(si.si_status, SIGKILL);
        glove_sandbox_kill(&sb); /* reaped: no effect */
        struct glove_sandbox_outcome out;
        glove_sandbox_collect(&sb, &si, &out);
        assert_int_equal(out.kind, GLOVE_SANDBOX_LOST);
        assert_non_null(strstr(out.detail, "killed by signal 9"));
        glove_sandbox_destroy(&sb);
        glove_sandbox_destroy(&sb); /* idempotent */
        struct glove_sandbox never = GLOVE_SANDBOX_INIT;
        glove_sandbox_destroy(&never);
        alarm(0);
}

/* ---- argv hidden -------------------------------------------------------------- */

static void test_argv_hidden_without_proctitle_init(void **state) {
        (void)state;
        REQUIRE_USERNS();
        alarm(HANG_GUARD_S);
        /* This binary never called glove_proctitle_init. */
        const char *base = strrchr(g_argv0, '/') ? strrchr(g_argv0, '/') + 1 : g_argv0;
        int out[2];
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        char *argv[] = {"/bin/cat", "/proc/1/cmdline", NULL};
        struct glove_sandbox_config cfg = base_config(argv);
        cfg.stdout_fd = out[1];
        struct glove_sandbox sb;
        struct glove_error err = {0};
        if (glove_sandbox_spawn(&cfg, &sb, &err) < 0)
                fail_msg("spawn: %s: %s", err.code, err.message);
        close(out[1]);
        assert_int_equal(glove_sandbox_release(&sb, &err), 0);
        char buf[8192];
        size_t got = 0;
        for (;;) {
                ssize_t n = read(out[0], buf + got, sizeof(buf) - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        close(out[0]);
        struct glove_sandbox_outcome o;
        glove_sandbox_collect(&sb, NULL, &o);
        glove_sandbox_destroy(&sb);
        assert_int_equal(o.kind, GLOVE_SANDBOX_EXITED);
        assert_int_equal(o.value, 0);
        assert_true(got >= sizeof("glove-init"));
        assert_memory_equal(buf, "glove-init", sizeof("glove-init")); /* with its NUL */
        for (size_t i = sizeof("glove-init"); i < got; i++)
                if (buf[i] != '\0')
                        fail_msg("/proc/1/cmdline holds more than the title: byte %zu is 0x%02x", i, (unsigned char)buf[i]);
        assert_null(memmem(buf, got, base, strlen(base)));
        /* Glove's own command line is untouched. */
        int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        assert_true(n > 0);
        assert_non_null(memmem(buf, (size_t)n, base, strlen(base)));
        alarm(0);
}

/* ---- mount plan entries inside a real sandbox --------------------------------- */

/* A plan with an extra tmpfs and an extra written file: both show up in
 * the sandbox with the mode and contents the plan gave them, and the file
 * placed inside the extra tmpfs lands in it (entries run in order). */
static void test_plan_extra_entries_inside(void **state) {
        (void)state;
        REQUIRE_USERNS();
        alarm(HANG_GUARD_S);
        struct glove_mount_plan_params mp = {
                .uid = glove_mount_plan_inside_id(geteuid()),
                .gid = glove_mount_plan_inside_id(getegid()),
                .mask_root_only = geteuid() == 0,
        };
        struct glove_mount_plan *plan = NULL;
        struct glove_error err = {0};
        static const char hello[] = "hello from the plan\n";
        if (glove_mount_plan_new(&mp, &plan, &err) < 0 ||
            glove_mount_plan_add_tmpfs(plan, "/scratch", 1 << 20, 0750, mp.uid, mp.gid, 0, &err) < 0 ||
            glove_mount_plan_add_file(plan, "/scratch/note", hello, sizeof(hello) - 1, 0640, &err) < 0 ||
            glove_mount_plan_add_file(plan, "/etc/glove-extra", "x=1\n", 4, 0604, &err) < 0)
                fail_msg("plan: %s: %s", err.code, err.message);
        int out[2];
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        char *argv[] = {"/bin/sh", "-c",
                        "stat -c '%a %u %F' /scratch /scratch/note /etc/glove-extra && cat /scratch/note /etc/glove-extra && "
                        "stat -f -c %T /scratch && echo x > /scratch/w && cat /scratch/w",
                        NULL};
        struct glove_sandbox_config cfg = base_config(argv);
        cfg.mounts = plan;
        cfg.stdout_fd = out[1];
        struct glove_sandbox sb;
        if (glove_sandbox_spawn(&cfg, &sb, &err) < 0)
                fail_msg("spawn: %s: %s", err.code, err.message);
        close(out[1]);
        assert_int_equal(glove_sandbox_release(&sb, &err), 0);
        char buf[1024];
        size_t got = 0;
        ssize_t n;
        while ((n = read(out[0], buf + got, sizeof(buf) - 1 - got)) > 0)
                got += (size_t)n;
        buf[got] = '\0';
        close(out[0]);
        struct glove_sandbox_outcome oc;
        glove_sandbox_collect(&sb, NULL, &oc);
        glove_sandbox_destroy(&sb);
        glove_mount_plan_free(plan);
        char want[512];
        snprintf(want, sizeof(want),
                 "750 %u directory\n640 %u regular file\n604 %u regular file\n%sx=1\ntmpfs\nx\n",
                 (unsigned)mp.uid, (unsigned)mp.uid, (unsigned)mp.uid, hello);
        if (oc.kind != GLOVE_SANDBOX_EXITED || oc.value != 0 || strcmp(buf, want) != 0)
                fail_msg("outcome %d/%d, output:\n%s\nwanted:\n%s", oc.kind, oc.value, buf, want);
        alarm(0);
}

/* ---- the inherited stream (inherited-stream-v1) ---------------------------- */

/* The first child of parent found in /proc (the agent, PID 1's only one),
 * waited for up to 10 s until its command name is comm. -1: none. */
static pid_t child_named(pid_t parent, const char *comm) {
        for (int tries = 0; tries < 1000; tries++) {
                DIR *d = opendir("/proc");
                assert_non_null(d);
                struct dirent *e;
                pid_t found = -1;
                while (found < 0 && (e = readdir(d))) {
                        char path[300], buf[512];
                        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
                        int fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd < 0)
                                continue;
                        ssize_t n = read(fd, buf, sizeof(buf) - 1);
                        close(fd);
                        if (n <= 0)
                                continue;
                        buf[n] = '\0';
                        const char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
                        int ppid = 0;
                        if (!open_paren || !close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1 || ppid != parent)
                                continue;
                        size_t len = (size_t)(close_paren - open_paren - 1);
                        if (len == strlen(comm) && memcmp(open_paren + 1, comm, len) == 0)
                                found = (pid_t)atoi(e->d_name);
                }
                closedir(d);
                if (found > 0)
                        return found;
                usleep(10000);
        }
        return -1;
}

/* The descriptor numbers open in pid (sorted), into fds; returns how many,
 * or -errno when its fd directory cannot be read. */
static int open_fds(pid_t pid, int *fds, int cap) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return -errno;
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.' && n < cap)
                        fds[n++] = atoi(e->d_name);
        closedir(d);
        for (int i = 0; i < n; i++)
                for (int j = i + 1; j < n; j++)
                        if (fds[j] < fds[i]) {
                                int t = fds[i];
                                fds[i] = fds[j];
                                fds[j] = t;
                        }
        return n;
}

/* Lists the agent's descriptors once it holds exactly 0, 1, 2 and 3, or
 * after 5 s with what it holds then (a generous bound, not a timing claim).
 * Right after execve the dynamic loader of the agent's program briefly
 * holds the files it maps (ld.so.cache, libc) at the lowest free number,
 * 4: a descriptor the sandbox leaked stays, one of those goes. Returns the
 * count as open_fds does. */
static int agent_fds_settled(pid_t agent, int *fds, int cap) {
        int n = -1;
        for (int tries = 0; tries < 500; tries++) {
                n = open_fds(agent, fds, cap);
                if (n < 0 || (n == 4 && fds[0] == 0 && fds[1] == 1 && fds[2] == 2 && fds[3] == 3))
                        return n;
                usleep(10 * 1000);
        }
        return n;
}

/* Reads from the nonblocking fd until want bytes or end of file, waiting at
 * most 10 s in all (a generous bound, not a timing claim). Returns the count. */
static size_t read_some(int fd, char *buf, size_t want, bool *eof) {
        size_t got = 0;
        *eof = false;
        for (int i = 0; i < 1000 && got < want && !*eof; i++) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (poll(&p, 1, 10) <= 0)
                        continue;
                ssize_t n = read(fd, buf + got, want - got);
                if (n == 0)
                        *eof = true;
                else if (n > 0)
                        got += (size_t)n;
        }
        return got;
}

/* One sandbox whose agent gets the guest end of a stream socketpair at 3.
 * guest_at: the number the guest end has in the test when spawning (0: the
 * lowest free one; 3: exactly 3, whatever the test had there is set aside
 * and put back after the spawn). The supervisor's end is returned in *peer
 * (nonblocking) and the socket's inode in *ino. */
static void spawn_inherited(char **argv, int guest_at, struct glove_sandbox *sb, int *peer, ino_t *ino) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        int saved3 = -1, guest;
        if (guest_at == 3) {
                if (fcntl(3, F_GETFD) >= 0)
                        assert_true((saved3 = fcntl(3, F_DUPFD_CLOEXEC, 100)) >= 100);
                assert_int_equal(dup3(sv[1], 3, O_CLOEXEC), 3);
                guest = 3;
        } else {
                guest = fcntl(sv[1], F_DUPFD_CLOEXEC, guest_at ? guest_at : 3);
        }
        assert_true(guest >= 3);
        close(sv[1]);
        struct stat st;
        assert_int_equal(fstat(guest, &st), 0);
        *ino = st.st_ino;
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        assert_true(null >= 0);
        struct glove_sandbox_config cfg = base_config(argv);
        cfg.seccomp = &glove_seccomp_prebuilt_managed_inherited;
        cfg.stdin_fd = cfg.stdout_fd = null;
        cfg.has_inherit_fd = true;
        cfg.inherit_fd = guest;
        struct glove_error err = {0};
        if (glove_sandbox_spawn(&cfg, sb, &err) < 0)
                fail_msg("spawn: %s: %s", err.code, err.message);
        /* The sandbox holds its own copy from the clone on. */
        close(guest);
        if (saved3 >= 0) {
                assert_int_equal(dup3(saved3, 3, O_CLOEXEC), 3);
                close(saved3);
        }
        close(null);
        assert_int_equal(glove_sandbox_release(sb, &err), 0);
        *peer = sv[0];
}

static void end_sandbox(struct glove_sandbox *sb) {
        glove_sandbox_kill(sb);
        struct glove_sandbox_outcome o;
        glove_sandbox_collect(sb, NULL, &o);
        glove_sandbox_destroy(sb);
}

/* The agent holds exactly 0, 1, 2 and 3, and 3 is the guest end: what it
 * writes there reaches the supervisor's end; PID 1 holds no copy. */
static void test_inherited_stream_at_3(void **state) {
        (void)state;
        REQUIRE_USERNS();
        alarm(HANG_GUARD_S);
        /* The guest end already at its place, at the lowest free number
         * and at a high one. */
        const int guest_at[] = {3, 0, 57};
        for (size_t k = 0; k < 3; k++) {
                char *argv[] = {"/bin/sh", "-c", "echo hi >&3 && exec /bin/sleep 60", NULL};
                struct glove_sandbox sb;
                int peer = -1;
                ino_t ino = 0;
                spawn_inherited(argv, guest_at[k], &sb, &peer, &ino);
                char buf[16] = {0};
                bool eof = false;
                size_t got = read_some(peer, buf, 3, &eof);
                if (got != 3 || memcmp(buf, "hi\n", 3) != 0)
                        fail_msg("the agent's write to descriptor 3 did not arrive (%zu bytes, eof %d)", got, eof);
                pid_t agent = child_named(sb.pid, "sleep");
                assert_true(agent > 0);
                int fds[64];
                int n = agent_fds_settled(agent, fds, 64);
                if (n < 0)
                        fail_msg("/proc/%d/fd: %s", (int)agent, strerror(-n));
                if (n != 4 || fds[0] != 0 || fds[1] != 1 || fds[2] != 2 || fds[3] != 3) {
                        char list[256] = "";
                        for (int i = 0; i < n; i++)
                                snprintf(list + strlen(list), sizeof(list) - strlen(list), " %d", fds[i]);
                        end_sandbox(&sb);
                        fail_msg("the agent holds descriptors%s, not exactly 0 1 2 3", list);
                }
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/fd/3", (int)agent);
                struct stat st;
                assert_int_equal(stat(path, &st), 0);
                assert_true(S_ISSOCK(st.st_mode));
                assert_true(st.st_ino == ino);
                /* PID 1 closed its copy once the agent was forked. */
                n = open_fds(sb.pid, fds, 64);
                if (n == -EACCES || n == -EPERM) {
                        print_message("PID 1's descriptors are not readable here (%s): its copy is checked by the "
                                      "end-of-file test\n", strerror(-n));
                } else {
                        assert_true(n >= 0);
                        for (int i = 0; i < n; i++) {
                                snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)sb.pid, fds[i]);
                                if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino)
                                        fail_msg("PID 1 still holds the guest end as %d", fds[i]);
                        }
                }
                end_sandbox(&sb);
                close(peer);
        }
        alarm(0);
}

/* When the agent closes descriptor 3, the supervisor's end reads end of
 * file while the sandbox still runs: nobody else in it holds the stream. */
static void test_inherited_stream_only_the_agent_holds_it(void **state) {
        (void)state;
        REQUIRE_USERNS();
        alarm(HANG_GUARD_S);
        char *argv[] = {"/bin/sh", "-c", "exec 3>&- && exec /bin/sleep 60", NULL};
        struct glove_sandbox sb;
        int peer = -1;
        ino_t ino = 0;
        spawn_inherited(argv, 0, &sb, &peer, &ino);
        char buf[16];
        bool eof = false;
        size_t got = read_some(peer, buf, sizeof(buf), &eof);
        if (got != 0 || !eof)
                fail_msg("the supervisor's end did not see end of file (%zu bytes read): a copy of the guest end "
                         "is still open in the sandbox", got);
        assert_int_equal(glove_sandbox_reap(&sb, NULL), 0); /* still running */
        assert_true(child_named(sb.pid, "sleep") > 0);
        end_sandbox(&sb);
        close(peer);
        alarm(0);
}

/* A descriptor that is not open (or is stdio) is refused before any clone. */
static void test_inherited_stream_refused(void **state) {
        (void)state;
        char *argv[] = {"/bin/true", NULL};
        const int bad[] = {-1, 0, 2, 1000};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_sandbox_config cfg = base_config(argv);
                cfg.has_inherit_fd = true;
                cfg.inherit_fd = bad[i];
                struct glove_sandbox sb;
                struct glove_error err = {0};
                assert_int_equal(glove_sandbox_spawn_start(&cfg, &sb, &err), -EBADF);
                assert_string_equal(err.code, "sandbox.inherit_fd");
                assert_int_equal(sb.pid, -1);
                glove_sandbox_destroy(&sb);
        }
}

/* ---- codes ------------------------------------------------------------------ */

static void test_code_table(void **state) {
        (void)state;
        const char *c = glove_report_code_lookup("mount.pivot");
        assert_non_null(c);
        assert_string_equal(c, "mount.pivot");
        assert_ptr_equal(glove_report_code_lookup("mount.pivot"), c); /* static, the same each time */
        assert_non_null(glove_report_code_lookup("grant.changed"));
        assert_non_null(glove_report_code_lookup("sandbox.setsid"));
        assert_non_null(glove_report_code_lookup("path.missing"));
        assert_null(glove_report_code_lookup("mount.nonexistent_step"));
        assert_null(glove_report_code_lookup(""));
        assert_null(glove_report_code_lookup(NULL));
}

/* Reads a whole source file (test code: stdio and malloc are fine here). */
static char *slurp(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f)
                fail_msg("%s: %s", path, strerror(errno));
        size_t cap = 1 << 16, len = 0;
        char *s = malloc(cap);
        size_t n;
        while (s && (n = fread(s + len, 1, cap - len - 1, f)) > 0) {
                len += n;
                if (len + 1 == cap)
                        s = realloc(s, cap *= 2);
        }
        fclose(f);
        assert_non_null(s);
        s[len] = '\0';
        return s;
}

/* Every code literal the child paths pass to glove_error_set or
 * glove_report_send (the first string literal of the call) is in the
 * table, so none arrives as "sandbox.setup". */
static void test_code_table_covers_the_sources(void **state) {
        (void)state;
        if (g_nsources == 0) {
                print_message("skipped: no source paths were given on the command line\n");
                skip();
        }
        int checked = 0;
        for (int f = 0; f < g_nsources; f++) {
                char *src = slurp(g_sources[f]);
                static const char *const calls[] = {"glove_error_set(", "glove_report_send("};
                for (size_t k = 0; k < 2; k++) {
                        for (char *p = strstr(src, calls[k]); p; p = strstr(p + 1, calls[k])) {
                                char *end = strpbrk(p, ";");
                                char *q = strchr(p, '"');
                                if (!q || (end && q > end))
                                        continue; /* code passed through a variable */
                                char *close = strchr(q + 1, '"');
                                if (!close)
                                        continue;
                                char code[64];
                                size_t n = (size_t)(close - q - 1);
                                if (n == 0 || n >= sizeof(code))
                                        continue;
                                memcpy(code, q + 1, n);
                                code[n] = '\0';
                                if (strchr(code, ' ') || strchr(code, '%') || !strchr(code, '.'))
                                        continue; /* a format, not a code (NULL code, literal message) */
                                if (!glove_report_code_lookup(code))
                                        fail_msg("%s: code \"%s\" is not in the sandbox's table of child codes",
                                                 g_sources[f], code);
                                checked++;
                        }
                }
                free(src);
        }
        print_message("%d code literals checked\n", checked);
        assert_true(checked > 40);
}

int main(int argc, char **argv) {
        g_argv0 = argv[0];
        g_sources = argv + 1;
        g_nsources = argc - 1;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_code_table),
                cmocka_unit_test(test_code_table_covers_the_sources),
                cmocka_unit_test(test_kill_reap_collect),
                cmocka_unit_test(test_argv_hidden_without_proctitle_init),
                cmocka_unit_test(test_spawn_many_while_threads_allocate),
                cmocka_unit_test(test_blocking_spawn_from_a_thread),
                cmocka_unit_test(test_plan_extra_entries_inside),
                cmocka_unit_test(test_inherited_stream_at_3),
                cmocka_unit_test(test_inherited_stream_only_the_agent_holds_it),
                cmocka_unit_test(test_inherited_stream_refused),
        };
        return cmocka_run_group_tests(tests, group_setup, NULL);
}

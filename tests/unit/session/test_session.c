/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session engine driving 64 real sandboxes at once from one process on
 * one sd-event loop (issue "One session engine", Tests): PTYs and pipes;
 * ends by exit, by signal, by each limit this host can enforce, and by
 * glove_session_stop. Every outcome is checked, and afterwards the process
 * holds exactly the descriptors and threads it had before, no child and no
 * run cgroup. The second test repeats it with a thread allocating and
 * printing all the while (spawning must be safe with other threads).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-event.h>

#include "glove/container/cgroup.h"
#include "glove/container/grant.h"
#include "glove/container/seccomp.h"
#include "glove/session/session.h"

#define SESSIONS 64

enum kind {
        K_EXIT,        /* exit 3 */
        K_SIGNAL,      /* killed by SIGTERM (its own) */
        K_PTY,         /* a PTY: stdin is a terminal */
        K_OUTPUT,      /* the output limit */
        K_WALL,        /* the wall-time limit */
        K_STOP,        /* glove_session_stop mid-run */
        K_CPU,         /* the CPU-time limit */
        K_PIDS,        /* the pids limit (cgroup only; else K_ECHO) */
        K_MEMORY,      /* the memory limit (cgroup only; else K_NOTFOUND) */
        K_ECHO,        /* stdin copied back */
        K_NOTFOUND,    /* a program that does not exist */
        K_KINDS
};

struct slot {
        enum kind kind;
        struct glove_session *s;
        struct glove_terminal_client *client;
        char out[256];
        size_t out_len;
        bool ready, exited;
        struct glove_session_outcome o;
        sd_event_source *stop_timer;
};

static sd_event *loop;
static struct slot slots[SESSIONS];
static int exited_count;
static bool have_cgroup;
static struct glove_grant_set grants;

static void on_output(void *ud, int stream, const void *buf, size_t n) {
        (void)stream;
        struct slot *sl = ud;
        size_t room = sizeof(sl->out) - 1 - sl->out_len;
        if (n > room)
                n = room;
        memcpy(sl->out + sl->out_len, buf, n);
        sl->out_len += n;
}

static const struct glove_terminal_client_ops client_ops = {.output = on_output};

static int on_stop_timer(sd_event_source *src, uint64_t usec, void *ud) {
        (void)src;
        (void)usec;
        struct slot *sl = ud;
        glove_session_stop(sl->s, 200);
        return 0;
}

static void on_ready(struct glove_session *s, void *ud) {
        struct slot *sl = ud;
        sl->ready = true;
        assert_non_null(glove_session_sandbox(s));
        struct glove_error err = {0};
        assert_int_equal(glove_session_release(s, &err), 0);
        assert_int_equal(glove_session_release(s, &err), -EALREADY);
        if (sl->kind == K_ECHO) {
                assert_int_equal(glove_terminal_input(glove_session_terminal(s), "ping\n", 5), 5);
                glove_terminal_input_close(glove_session_terminal(s));
        }
        if (sl->kind == K_STOP)
                assert_true(sd_event_add_time_relative(loop, &sl->stop_timer, CLOCK_MONOTONIC, 300 * 1000, 1000, on_stop_timer,
                                                       sl) >= 0);
}

static void on_exited(struct glove_session *s, const struct glove_session_outcome *o, void *ud) {
        struct slot *sl = ud;
        assert_false(sl->exited);
        sl->exited = true;
        sl->o = *o;
        sl->stop_timer = sd_event_source_disable_unref(sl->stop_timer);
        glove_terminal_detach(sl->client);
        sl->client = NULL;
        /* Half the sessions are freed from inside their own exited callback
         * (the header allows it). */
        if ((sl - slots) % 2) {
                glove_session_free(s);
                sl->s = NULL;
        }
        if (++exited_count == SESSIONS)
                sd_event_exit(loop, 0);
}

static enum kind effective(enum kind k) {
        if (!have_cgroup && k == K_PIDS)
                return K_ECHO;
        if (!have_cgroup && k == K_MEMORY)
                return K_NOTFOUND;
        return k;
}

static void start_one(struct slot *sl, enum kind k) {
        static char *argv_exit[] = {"/bin/sh", "-c", "exit 3", NULL};
        static char *argv_signal[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
        static char *argv_pty[] = {"/bin/sh", "-c", "test -t 0 && test -t 1 && echo is-a-tty", NULL};
        static char *argv_yes[] = {"/usr/bin/yes", NULL};
        static char *argv_sleep[] = {"/bin/sleep", "30", NULL};
        static char *argv_spin[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
        static char *argv_fork[] = {"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 20 & done; wait", NULL};
        static char *argv_mem[] = {"/usr/bin/python3", "-c", "b = bytearray(256 << 20); print(len(b))", NULL};
        static char *argv_cat[] = {"/bin/cat", NULL};
        static char *argv_none[] = {"/nonexistent/program", NULL};
        static char *envp[] = {"PATH=/usr/bin:/bin", "HOME=/home/agent", NULL};
        sl->kind = k;
        struct glove_session_desc d = {
                .envp = envp,
                .grants = &grants,
                .seccomp = &glove_seccomp_prebuilt,
                .terminal = GLOVE_TERMINAL_PIPES,
                .input_closed = true,
                .channel_stdin_fd = -1,
                .channel_stdout_fd = -1,
                .cgroup_policy = GLOVE_SESSION_CGROUP_OPTIONAL,
                .limits = {.cpu_time_ms = 60000, .memory_bytes = 512ULL << 20, .pids = 64, .disk_bytes = 16 << 20,
                           .terminal_output_bytes = 1 << 20},
        };
        switch (k) {
        case K_EXIT: d.argv = argv_exit; break;
        case K_SIGNAL: d.argv = argv_signal; break;
        case K_PTY: d.argv = argv_pty; d.terminal = GLOVE_TERMINAL_PTY; break;
        case K_OUTPUT: d.argv = argv_yes; d.limits.terminal_output_bytes = 5000; break;
        case K_WALL: d.argv = argv_sleep; d.limits.wall_time_ms = 300; break;
        case K_STOP: d.argv = argv_sleep; break;
        case K_CPU: d.argv = argv_spin; d.limits.cpu_time_ms = 300; break;
        case K_PIDS: d.argv = argv_fork; d.limits.pids = 6; break;
        case K_MEMORY: d.argv = argv_mem; d.limits.memory_bytes = 64ULL << 20; break;
        case K_ECHO: d.argv = argv_cat; d.input_closed = false; break;
        case K_NOTFOUND: d.argv = argv_none; break;
        default: fail();
        }
        static const struct glove_session_ops ops = {.ready = on_ready, .exited = on_exited};
        struct glove_error err = {0};
        int r = glove_session_start(loop, &d, &ops, sl, &sl->s, &err);
        if (r < 0)
                fail_msg("session %d: %s: %s", (int)(sl - slots), err.code, err.message);
        assert_int_equal(glove_terminal_attach(glove_session_terminal(sl->s), &client_ops, sl, false, &sl->client), 0);
}

static void check_one(const struct slot *sl) {
        const struct glove_session_outcome *o = &sl->o;
        int i = (int)(sl - slots);
        assert_true(sl->exited);
        if (o->kind == GLOVE_SESSION_SETUP_FAILED)
                fail_msg("session %d (kind %d): setup failed: %s: %s", i, sl->kind, o->error.code, o->error.message);
        assert_true(sl->ready);
        assert_true(o->released);
        switch (sl->kind) {
        case K_EXIT:
                assert_int_equal(o->kind, GLOVE_SESSION_EXITED);
                assert_int_equal(o->value, 3);
                assert_int_equal(o->limit, GLOVE_CGROUP_LIMIT_NONE);
                break;
        case K_SIGNAL:
                assert_int_equal(o->kind, GLOVE_SESSION_SIGNALED);
                assert_int_equal(o->value, SIGTERM);
                break;
        case K_PTY:
                assert_int_equal(o->kind, GLOVE_SESSION_EXITED);
                assert_int_equal(o->value, 0);
                assert_non_null(strstr(sl->out, "is-a-tty"));
                break;
        case K_OUTPUT:
                assert_int_equal(o->limit, GLOVE_CGROUP_LIMIT_TERMINAL_OUTPUT);
                assert_true(o->output_bytes >= 5000);
                break;
        case K_WALL:
                assert_int_equal(o->limit, GLOVE_CGROUP_LIMIT_WALL_TIME);
                assert_true(o->wall_time_ms >= 300);
                break;
        case K_STOP:
                assert_true(o->stopped);
                assert_int_equal(o->limit, GLOVE_CGROUP_LIMIT_NONE);
                assert_int_equal(o->kind, GLOVE_SESSION_SIGNALED);
                assert_int_equal(o->value, SIGTERM);
                break;
        case K_CPU:
                assert_int_equal(o->limit, GLOVE_CGROUP_LIMIT_CPU_TIME);
                break;
        case K_PIDS:
                assert_int_equal(o->limit, GLOVE_CGROUP_LIMIT_PIDS);
                break;
        case K_MEMORY:
                assert_int_equal(o->limit, GLOVE_CGROUP_LIMIT_MEMORY);
                break;
        case K_ECHO:
                assert_int_equal(o->kind, GLOVE_SESSION_EXITED);
                assert_int_equal(o->value, 0);
                assert_string_equal(sl->out, "ping\n");
                break;
        case K_NOTFOUND:
                assert_int_equal(o->kind, GLOVE_SESSION_EXEC_FAILED);
                assert_int_equal(o->value, ENOENT);
                break;
        default:
                fail();
        }
}

static int count_dir(const char *path, const char *prefix) {
        DIR *d = opendir(path);
        if (!d)
                return -1;
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.' && (!prefix || strncmp(e->d_name, prefix, strlen(prefix)) == 0))
                        n++;
        closedir(d);
        return n;
}

static void run_all(void) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "glove-%d-", (int)getpid());
        struct glove_cgroup_probe probe;
        have_cgroup = glove_cgroup_probe(&probe, NULL) == 0 && probe.backend != GLOVE_CGROUP_BACKEND_NONE;
        if (have_cgroup) {
                /* Probing is not creating: a delegation may still be refused. */
                struct glove_cgroup_limits l;
                glove_cgroup_limits_default(&l);
                struct glove_cgroup *cg = NULL;
                have_cgroup = glove_cgroup_create(&l, &cg, NULL) == 0;
                if (cg)
                        assert_int_equal(glove_cgroup_destroy(cg, NULL), 0);
        }
        if (!have_cgroup)
                print_message("no delegated cgroup here: the pids and memory cases become echo and not-found cases\n");
        int fds_before = count_dir("/proc/self/fd", NULL);
        int tasks_before = count_dir("/proc/self/task", NULL);
        glove_grant_set_init(&grants);
        assert_int_equal(sd_event_new(&loop), 0);
        exited_count = 0;
        memset(slots, 0, sizeof(slots));
        for (int i = 0; i < SESSIONS; i++)
                start_one(&slots[i], effective((enum kind)(i % K_KINDS)));
        assert_int_equal(sd_event_loop(loop), 0);
        for (int i = 0; i < SESSIONS; i++) {
                check_one(&slots[i]);
                glove_session_free(slots[i].s);
        }
        loop = sd_event_unref(loop);
        glove_grant_set_clear(&grants);
        assert_int_equal(count_dir("/proc/self/fd", NULL), fds_before);
        assert_int_equal(count_dir("/proc/self/task", NULL), tasks_before);
        siginfo_t si;
        assert_int_equal(waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT), -1);
        assert_int_equal(errno, ECHILD);
        if (have_cgroup && probe.parent[0])
                assert_int_equal(count_dir(probe.parent, prefix), 0);
}

static bool userns_available(void) {
        pid_t pid = fork();
        if (pid == 0)
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
        int st = 0;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The file is built twice (tests/unit/session/meson.build): with
 * ENGINE_CASE 1 it runs the 64 sessions alone, with 2 beside a busy thread,
 * so that each binary stays within the unit tests' 5 s per binary. */
#ifndef ENGINE_CASE
#error "build with -DENGINE_CASE=1 or 2"
#endif

#if ENGINE_CASE == 1
/* An inherited stream is offline only: with egress or an MCP listener the
 * spawn is refused before anything is made. */
static void test_inherit_offline_only(void **state) {
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        static char *argv[] = {"/bin/true", NULL};
        static char *envp[] = {"PATH=/usr/bin:/bin", NULL};
        struct glove_net_policy eg;
        glove_net_policy_init(&eg);
        for (int k = 0; k < 2; k++) {
                struct glove_session_desc d = {
                        .argv = argv,
                        .envp = envp,
                        .grants = &grants,
                        .seccomp = &glove_seccomp_prebuilt_managed_inherited,
                        .terminal = GLOVE_TERMINAL_PIPES,
                        .channel_stdin_fd = -1,
                        .channel_stdout_fd = -1,
                        .mcp_listen_fd = -1,
                        .has_inherit_fd = true,
                        .inherit_fd = sv[1],
                };
                if (k == 0)
                        d.egress = &eg;
                else
                        d.mcp_listen = true;
                const struct glove_session_ops ops = {.ready = on_ready, .exited = on_exited};
                struct glove_session *s = (struct glove_session *)0x1;
                struct glove_error err = {0};
                assert_int_equal(glove_session_spawn(&d, &ops, NULL, &s, &err), -EINVAL);
                assert_string_equal(err.code, "session.inherit_offline");
                assert_null(s);
        }
        glove_net_policy_free(&eg);
        close(sv[0]);
        close(sv[1]);
}

static void test_64_sessions_one_loop(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        run_all();
}

#else
static atomic_bool busy_stop;
static FILE *busy_out;
/* Takes the allocator's and a stdio stream's locks as often as it can (the
 * stream is opened before the descriptor count is taken). */
static void *busy_main(void *arg) {
        (void)arg;
        unsigned long n = 0;
        while (!atomic_load(&busy_stop)) {
                void *p = malloc(1 + (n++ % 4096));
                fprintf(busy_out, "%lu %p %s\n", n, p, strerror((int)(n % 130)));
                free(p);
        }
        return NULL;
}

static void test_64_sessions_with_a_busy_thread(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        atomic_store(&busy_stop, false);
        busy_out = fopen("/dev/null", "w");
        assert_non_null(busy_out);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, busy_main, NULL), 0);
        /* run_all compares threads before and after: both include this one. */
        run_all();
        atomic_store(&busy_stop, true);
        assert_int_equal(pthread_join(t, NULL), 0);
        fclose(busy_out);
}

#endif

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        alarm(200); /* a hang is a failure, not a stuck CI */
        const struct CMUnitTest tests[] = {
#if ENGINE_CASE == 1
                cmocka_unit_test(test_inherit_offline_only),
                cmocka_unit_test(test_64_sessions_one_loop),
#else
                cmocka_unit_test(test_64_sessions_with_a_busy_thread),
#endif
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

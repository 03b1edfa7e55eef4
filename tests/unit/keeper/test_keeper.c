/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session keeper (keeper.h): the /proc parsers on fixtures, and real
 * keepers forked from this process running real sandboxes (/bin/echo,
 * /bin/cat), driven over their channel and their listening socket exactly
 * as gloved drives them: HELLO, STATE, TRANSCRIPT, READY, RELEASE, OUTPUT,
 * INPUT and CREDIT, KILL, ABORT, ENDED, ACK; the status file; a
 * reconnection; malformed and oversized messages; the end without a
 * connection. Then glove-keeper's launch: a description encoded and decoded
 * again field by field (the mount entries through the keeper's hook), what
 * cannot travel, and the executable's checks (missing, unsafe, replaced).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/container/cgroup.h"
#include "glove/container/grant.h"
#include "glove/container/mount_plan.h"
#include "glove/container/seccomp.h"
#include "glove/keeper/keeper.h"
#include "glove/net/rule.h"
#include "keeper_internal.h"

/* How long a test waits for one message at most: a bound against a hang,
 * not a timing assertion. */
#define WAIT_MS 60000

/* ---- the parsers ---- */

static void test_parse_stat(void **state) {
        (void)state;
        uint64_t v = 0;
        /* A real line, comm without anything odd; field 22 is 4242. */
        static const char plain[] =
                "1234 (bash) S 1 1234 1234 34816 1234 4194304 1000 0 0 0 5 3 0 0 20 0 1 0 4242 10000000 500 "
                "18446744073709551615 1 1 0 0 0 0 65536 3686404 1266761467 0 0 0 17 3 0 0 0 0 0\n";
        assert_int_equal(glove_keeper_parse_stat(plain, strlen(plain), &v), 0);
        assert_true(v == 4242);
        /* comm holds spaces and ')' and digits: fields count after the last ')'. */
        static const char odd[] = "77 (a) 1 2 3) S 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 123456789012 1 2\n";
        v = 0;
        assert_int_equal(glove_keeper_parse_stat(odd, strlen(odd), &v), 0);
        assert_true(v == 123456789012ULL);
        static const char paren_only[] = "77 ()) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 99";
        assert_int_equal(glove_keeper_parse_stat(paren_only, strlen(paren_only), &v), 0);
        assert_true(v == 99);
        /* The largest value, and one past it. */
        static const char max[] = "1 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 18446744073709551615 0";
        assert_int_equal(glove_keeper_parse_stat(max, strlen(max), &v), 0);
        assert_true(v == UINT64_MAX);
        static const char *const bad[] = {
                "",
                "1 (x S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 5",            /* no ')' */
                "1 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",              /* too few fields */
                "1 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 ",             /* empty field 22 */
                "1 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1  1 5",           /* two spaces */
                "1 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -5 0",         /* a sign */
                "1 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 12a 0",        /* not digits */
                "1 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 18446744073709551616 0", /* overflow */
                "1 (x)S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 5",             /* no space after ')' */
                "1 (x) 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 (y)",   /* ')' late: too few after it */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                v = 7;
                if (glove_keeper_parse_stat(bad[i], strlen(bad[i]), &v) != -EINVAL)
                        fail_msg("accepted: \"%s\"", bad[i]);
                assert_true(v == 7);
        }
        /* Bytes after len are not read. */
        assert_int_equal(glove_keeper_parse_stat(plain, 10, &v), -EINVAL);
}

static void test_proc_start_time(void **state) {
        (void)state;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        assert_int_equal(glove_file_read_bounded(AT_FDCWD, "/proc/self/stat", 0, 4096, &text, &n, NULL), 0);
        uint64_t want = 0, got = 0;
        assert_int_equal(glove_keeper_parse_stat(text, n, &want), 0);
        assert_int_equal(glove_keeper_proc_start_time(getpid(), &got), 0);
        assert_true(got == want);
        /* pid_max is one past the largest pid: never a process. */
        _cleanup_free_ char *pm = NULL;
        assert_int_equal(glove_file_read_bounded(AT_FDCWD, "/proc/sys/kernel/pid_max", 0, 64, &pm, &n, NULL), 0);
        assert_int_equal(glove_keeper_proc_start_time((pid_t)atoi(pm), &got), -ESRCH);
        assert_int_equal(glove_keeper_proc_start_time(0, &got), -EINVAL);
        assert_int_equal(glove_keeper_proc_start_time(-1, &got), -EINVAL);
}

static void test_boot_id(void **state) {
        (void)state;
        char out[37];
        static const char good[] = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n";
        assert_int_equal(glove_keeper_parse_boot_id(good, strlen(good), out), 0);
        assert_string_equal(out, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
        assert_int_equal(glove_keeper_parse_boot_id(good, 36, out), 0);
        static const char *const bad[] = {
                "",
                "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f",       /* short */
                "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f00",     /* long */
                "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0",      /* upper case */
                "0f1e2d3c4b5a-6978-8796-a5b4c3d2e1f0-",      /* dashes misplaced */
                "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg",      /* not hex */
                "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n\n",  /* two newlines */
                "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 ",     /* a space */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (glove_keeper_parse_boot_id(bad[i], strlen(bad[i]), out) != -EINVAL)
                        fail_msg("accepted: \"%s\"", bad[i]);
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        assert_int_equal(glove_file_read_bounded(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 0, 64, &text, &n, NULL), 0);
        assert_int_equal(glove_keeper_boot_id(out), 0);
        assert_int_equal(strlen(out), 36);
        assert_memory_equal(out, text, 36);
}

static void test_parse_cgroup(void **state) {
        (void)state;
        const char *p;
        size_t n;
        static const char v2[] = "0::/user.slice/glove-1-ab\n";
        assert_int_equal(glove_keeper_parse_cgroup(v2, strlen(v2), true, &p, &n), 0);
        assert_int_equal(n, strlen("/user.slice/glove-1-ab"));
        assert_memory_equal(p, "/user.slice/glove-1-ab", n);
        static const char v1[] = "12:pids:/a\n11:cpu,cpuacct:/b\n4:memory:/c/glove-9-ff\n3:name=systemd:/d\n0::/e";
        assert_int_equal(glove_keeper_parse_cgroup(v1, strlen(v1), false, &p, &n), 0);
        assert_memory_equal(p, "/c/glove-9-ff", n);
        assert_int_equal(n, strlen("/c/glove-9-ff"));
        assert_int_equal(glove_keeper_parse_cgroup(v1, strlen(v1), true, &p, &n), 0);
        assert_memory_equal(p, "/e", n);
        assert_int_equal(n, 2);
        /* memory among other controllers; a path with ':'. */
        static const char both[] = "5:cpu,memory:/x:y/glove-2-cd\n";
        assert_int_equal(glove_keeper_parse_cgroup(both, strlen(both), false, &p, &n), 0);
        assert_memory_equal(p, "/x:y/glove-2-cd", n);
        static const char none[] = "4:memoryx:/c\n1:xmemory:/d\n10::/f\n";
        assert_int_equal(glove_keeper_parse_cgroup(none, strlen(none), false, &p, &n), -ENOENT);
        assert_int_equal(glove_keeper_parse_cgroup(none, strlen(none), true, &p, &n), -ENOENT);
}

/* ---- real keepers ---- */

struct msg {
        uint8_t type;
        uint8_t data[GLOVE_KEEPER_MSG_MAX];
        size_t len; /* of data */
        json_t *json;
};

struct rig {
        int marker;    /* a descriptor of the test's, inheritable: the keeper must not hold it */
        char dir[64];
        int dir_fd;
        int chan;      /* the test's end of the channel */
        pid_t keeper;
        char sock[100];
        struct glove_grant_set grants;
};

static bool userns_available(void) {
        pid_t pid = fork();
        if (pid == 0)
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
        int st = 0;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The desc's transcript size in the next keeper (a bound passed makes the
 * start fail). */
static size_t rig_transcript_bytes;
/* The next keeper's inherited stream (its session gets
 * glove_seccomp_prebuilt_managed_inherited) and service sockets: -1 and 0
 * for none. */
static int rig_inherit_fd = -1;
static const int *rig_service_fds;
static size_t rig_n_service_fds;

static int64_t fixed_now(void) {
        return 1700000000000;
}

/* Forks a keeper running argv (pipes; input open unless input_closed;
 * output_limit 0: 1 MiB). */
static void rig_start_limit(struct rig *g, char **argv, bool input_closed, uint64_t output_limit) {
        memset(g, 0, sizeof(*g));
        snprintf(g->dir, sizeof(g->dir), "/tmp/glove-keeper-test-XXXXXX");
        assert_non_null(mkdtemp(g->dir));
        g->dir_fd = open(g->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(g->dir_fd >= 0);
        struct glove_fd_pair ch = GLOVE_FD_PAIR_INIT;
        assert_int_equal(glove_fd_pair_socketpair(&ch, SOCK_SEQPACKET), 0);
        int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        assert_true(lfd >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(g->sock, sizeof(g->sock), "%s/s-1.sock", g->dir);
        memcpy(sa.sun_path, g->sock, sizeof(g->sock));
        assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(lfd, 4), 0);
        struct glove_cgroup_probe probe;
        bool cg = glove_cgroup_probe(&probe, NULL) == 0 && probe.backend != GLOVE_CGROUP_BACKEND_NONE;
        glove_grant_set_init(&g->grants);
        g->marker = openat(g->dir_fd, "marker", O_WRONLY | O_CREAT, 0600);
        assert_true(g->marker >= 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                static char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/home/agent", NULL };
                struct glove_session_desc d = {
                        .argv = argv,
                        .envp = envp,
                        .grants = &g->grants,
                        .seccomp = &glove_seccomp_prebuilt,
                        .terminal = GLOVE_TERMINAL_PIPES,
                        .input_closed = input_closed,
                        .transcript_bytes = rig_transcript_bytes,
                        .channel_stdin_fd = -1,
                        .channel_stdout_fd = -1,
                        .cgroup_policy = GLOVE_SESSION_CGROUP_OPTIONAL,
                        .limits = { .cpu_time_ms = 60000, .memory_bytes = 512ULL << 20, .pids = 64,
                                    .disk_bytes = 16 << 20,
                                    .terminal_output_bytes = output_limit ? output_limit : 1 << 20 },
                };
                struct glove_keeper_args a = {
                        .session_id = "s-1",
                        .stem = "s-1",
                        .desc = &d,
                        .channel_fd = ch.fd[1],
                        .listen_fd = lfd,
                        .dir_fd = g->dir_fd,
                        .cgroup_parent = cg ? probe.parent : NULL,
                        .cgroup_v2 = cg && probe.backend == GLOVE_CGROUP_BACKEND_V2,
                        .now_ms = fixed_now,
                        .services_json = rig_n_service_fds ? "{\"services\":[]}" : NULL,
                        .service_fds = rig_service_fds,
                        .n_service_fds = rig_n_service_fds,
                };
                if (rig_inherit_fd >= 0) {
                        d.has_inherit_fd = true;
                        d.inherit_fd = rig_inherit_fd;
                        d.seccomp = &glove_seccomp_prebuilt_managed_inherited;
                }
                glove_keeper_run(&a);
        }
        g->keeper = pid;
        close(ch.fd[1]);
        close(lfd);
        g->chan = ch.fd[0];
}

static void rig_start(struct rig *g, char **argv, bool input_closed) {
        rig_start_limit(g, argv, input_closed, 0);
}

/* Waits for the keeper's exit; returns its status (exit code, or 1000+sig). */
static int rig_wait(struct rig *g) {
        int st = 0;
        assert_int_equal(waitpid(g->keeper, &st, 0), g->keeper);
        g->keeper = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

static void rig_free(struct rig *g) {
        if (g->keeper > 0) {
                kill(g->keeper, SIGKILL);
                (void)waitpid(g->keeper, NULL, 0);
        }
        if (g->chan >= 0)
                close(g->chan);
        static const char *const names[] = { "s-1.sock", "s-1.status", "s-1.log", "s-1.status.tmp" };
        for (size_t i = 0; i < 4; i++)
                (void)unlinkat(g->dir_fd, names[i], 0);
        close(g->marker);
        (void)unlinkat(g->dir_fd, "marker", 0);
        close(g->dir_fd);
        rmdir(g->dir);
        glove_grant_set_clear(&g->grants);
}

static void send_msg(int fd, char type, const void *p, size_t n) {
        uint8_t buf[GLOVE_KEEPER_MSG_MAX + 16];
        assert_true(n + 1 <= sizeof(buf));
        buf[0] = (uint8_t)type;
        if (n)
                memcpy(buf + 1, p, n);
        assert_int_equal(send(fd, buf, n + 1, MSG_NOSIGNAL), (ssize_t)(n + 1));
}

static void send_str(int fd, char type, const char *s) {
        send_msg(fd, type, s, strlen(s));
}

/* The next message; false at the end of the connection. JSON payloads
 * (every type but 't' and 'o') are decoded and must be canonical objects. */
static bool recv_msg(int fd, struct msg *m) {
        json_decref(m->json);
        m->json = NULL;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, WAIT_MS);
        if (r != 1)
                fail_msg("no message from the keeper within %d ms", WAIT_MS);
        uint8_t buf[GLOVE_KEEPER_MSG_MAX + 1];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0)
                return false;
        assert_true((size_t)n <= GLOVE_KEEPER_MSG_MAX);
        m->type = buf[0];
        m->len = (size_t)n - 1;
        memcpy(m->data, buf + 1, m->len);
        if (m->type != GLOVE_KEEPER_TRANSCRIPT && m->type != GLOVE_KEEPER_OUTPUT) {
                struct glove_error e = { 0 };
                if (glove_json_decode_canonical(m->data, m->len, GLOVE_KEEPER_MSG_MAX, GLOVE_JSON_OBJECT_ONLY, &m->json,
                                                &e) < 0)
                        fail_msg("message '%c': %s: %s", m->type, e.code, e.message);
        }
        return true;
}

static void expect(int fd, struct msg *m, char type) {
        if (!recv_msg(fd, m))
                fail_msg("the connection ended while '%c' was expected", type);
        if (m->type != (uint8_t)type)
                fail_msg("got '%c' (%zu bytes) where '%c' was expected", m->type, m->len, type);
}

static uint64_t u64le(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

static int64_t jint(const json_t *o, const char *path) {
        /* path: "a" or "a.b" */
        char key[64];
        snprintf(key, sizeof(key), "%s", path);
        char *dot = strchr(key, '.');
        if (dot)
                *dot = '\0';
        const json_t *v = json_object_get(o, key);
        if (dot)
                v = json_object_get(v, dot + 1);
        if (!json_is_integer(v))
                fail_msg("%s is not an integer", path);
        return (int64_t)json_integer_value(v);
}

static const char *jstr(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        if (!json_is_string(v))
                fail_msg("%s is not a string", key);
        return json_string_value(v);
}

static bool jbool(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        if (!json_is_boolean(v))
                fail_msg("%s is not a boolean", key);
        return json_is_true(v);
}

/* The status file, decoded (canonical, one object). The keeper writes its
 * first one just after READY (gloved's gate does not wait for it), so a
 * missing file is waited for, up to 10 s. */
static json_t *read_status(struct rig *g) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        int r;
        for (int i = 0; (r = glove_file_read_bounded(g->dir_fd, "s-1.status", 0, 1 << 20, &text, &n, NULL)) == -ENOENT &&
                        i < 1000;
             i++)
                usleep(10000);
        assert_int_equal(r, 0);
        json_t *v = NULL;
        struct glove_error e = { 0 };
        if (glove_json_decode_canonical(text, n, 1 << 20, GLOVE_JSON_OBJECT_ONLY, &v, &e) < 0)
                fail_msg("status: %s: %s", e.code, e.message);
        struct stat st;
        assert_int_equal(fstatat(g->dir_fd, "s-1.status", &st, 0), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        return v;
}

/* HELLO; STATE and TRANSCRIPT; returns STATE's output_offset. */
static uint64_t hello(int fd, struct msg *m, pid_t keeper, const char *phase_a, const char *phase_b) {
        send_str(fd, 'H', "{\"version\":1}");
        expect(fd, m, 's');
        assert_int_equal(jint(m->json, "version"), 1);
        assert_int_equal(jint(m->json, "keeper.pid"), keeper);
        uint64_t st = 0;
        assert_int_equal(glove_keeper_proc_start_time(keeper, &st), 0);
        assert_true((uint64_t)jint(m->json, "keeper.start_time") == st);
        const char *ph = jstr(m->json, "phase");
        if (strcmp(ph, phase_a) != 0 && strcmp(ph, phase_b) != 0)
                fail_msg("phase %s, not %s or %s", ph, phase_a, phase_b);
        uint64_t off = (uint64_t)jint(m->json, "output_offset");
        expect(fd, m, 't');
        assert_true(m->len >= 8);
        assert_true(u64le(m->data) + (m->len - 8) == off);
        return off;
}

static void check_identity(const json_t *id, pid_t keeper) {
        char boot[37];
        assert_int_equal(glove_keeper_boot_id(boot), 0);
        assert_string_equal(jstr(id, "boot_id"), boot);
        assert_int_equal(jint(id, "keeper.pid"), keeper);
        pid_t pid1 = (pid_t)jint(id, "pid");
        uint64_t st = 0;
        assert_int_equal(glove_keeper_proc_start_time(pid1, &st), 0);
        assert_true((uint64_t)jint(id, "pid_start_time") == st);
        const json_t *cg = json_object_get(id, "cgroup");
        assert_non_null(cg);
        if (json_is_null(cg)) {
                print_message("no run cgroup here (optional): the identity's cgroup is null\n");
                return;
        }
        struct stat s;
        assert_int_equal(stat(jstr(cg, "dir"), &s), 0);
        assert_true(S_ISDIR(s.st_mode));
        assert_true((uint64_t)jint(cg, "inode") == (uint64_t)s.st_ino);
}

/* The keeper's process: its own session, its name, 0 and 1 on /dev/null,
 * 2 on the log, nothing of the test's (the marker). */
static void check_process(struct rig *g) {
        assert_int_equal(getsid(g->keeper), g->keeper);
        char p[64], link[4096];
        snprintf(p, sizeof(p), "/proc/%d/comm", (int)g->keeper);
        _cleanup_free_ char *comm = NULL;
        size_t n = 0;
        assert_int_equal(glove_file_read_bounded(AT_FDCWD, p, 0, 64, &comm, &n, NULL), 0);
        assert_string_equal(comm, "glove-keeper\n");
        char log[128];
        snprintf(log, sizeof(log), "%s/s-1.log", g->dir);
        for (int fd = 0; fd < 3; fd++) {
                snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)g->keeper, fd);
                ssize_t l = readlink(p, link, sizeof(link) - 1);
                assert_true(l > 0);
                link[l] = '\0';
                assert_string_equal(link, fd < 2 ? "/dev/null" : log);
        }
        struct stat mk;
        assert_int_equal(fstat(g->marker, &mk), 0);
        for (int fd = 3; fd < 1024; fd++) {
                snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)g->keeper, fd);
                struct stat st;
                if (stat(p, &st) == 0 && st.st_dev == mk.st_dev && st.st_ino == mk.st_ino)
                        fail_msg("the keeper holds the test's descriptor (as %d)", fd);
        }
}

/* echo: HELLO, READY, status at ready, RELEASE, the output in order, ENDED,
 * the status at the end, ACK, exit 0. */
static void test_keeper_echo(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        static char *argv[] = { "/bin/echo", "hello", "keeper", NULL };
        struct rig g;
        rig_start(&g, argv, true);
        struct msg m = { 0 };
        assert_true(hello(g.chan, &m, g.keeper, "starting", "ready") == 0);
        /* STATE said input_closed (pipes, closed from the start). */
        expect(g.chan, &m, 'r');
        check_identity(m.json, g.keeper);
        check_process(&g);
        json_t *st = read_status(&g);
        assert_true(json_equal(json_object_get(st, "identity"), m.json));
        assert_true(json_is_null(json_object_get(st, "outcome")));
        assert_string_equal(jstr(st, "session_id"), "s-1");
        assert_int_equal(jint(st, "version"), 1);
        assert_int_equal(jint(st, "updated_at_ms"), fixed_now());
        json_decref(st);
        send_msg(g.chan, 'R', NULL, 0);
        send_msg(g.chan, 'R', NULL, 0); /* a second one is ignored */
        char out[256] = "";
        uint64_t off = 0;
        for (;;) {
                if (!recv_msg(g.chan, &m))
                        fail_msg("the connection ended before ENDED");
                if (m.type == 'e')
                        break;
                if (m.type != 'o')
                        fail_msg("unexpected '%c'", m.type);
                assert_true(u64le(m.data) == off);
                assert_true(off + m.len - 8 < sizeof(out));
                memcpy(out + off, m.data + 8, m.len - 8);
                off += m.len - 8;
        }
        assert_string_equal(out, "hello keeper\n");
        assert_string_equal(jstr(m.json, "kind"), "exited");
        assert_int_equal(jint(m.json, "value"), 0);
        assert_true(jbool(m.json, "released"));
        assert_false(jbool(m.json, "killed"));
        assert_false(jbool(m.json, "aborted"));
        assert_int_equal(jint(m.json, "output_bytes"), 13);
        assert_true(json_is_null(json_object_get(m.json, "limit")));
        st = read_status(&g);
        assert_true(json_equal(json_object_get(st, "outcome"), m.json));
        assert_int_equal(jint(st, "usage.output_bytes"), 13);
        json_decref(st);
        send_msg(g.chan, 'E', NULL, 0);
        assert_false(recv_msg(g.chan, &m));
        assert_int_equal(rig_wait(&g), 0);
        json_decref(m.json);
        rig_free(&g);
}

/* cat: input by credit, malformed messages ignored, a new connection
 * through the listening socket replaces the channel and gets the
 * transcript, KILL ends it. */
static void test_keeper_reconnect(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        static char *argv[] = { "/bin/cat", NULL };
        struct rig g;
        rig_start(&g, argv, false);
        struct msg m = { 0 };
        /* Nonsense first: none of it is answered, none of it stops the keeper. */
        send_str(g.chan, 'X', "what");
        send_str(g.chan, 'H', "{not json");
        send_str(g.chan, 'H', "{\"version\":0}");
        send_str(g.chan, 'S', "{\"signal\":9}");
        send_str(g.chan, 'Z', "{\"rows\":0,\"cols\":80}");
        send_str(g.chan, 'E', "");
        static uint8_t big[GLOVE_KEEPER_MSG_MAX + 8];
        memset(big, 'I', sizeof(big));
        assert_int_equal(send(g.chan, big, sizeof(big), MSG_NOSIGNAL), (ssize_t)sizeof(big));
        send_str(g.chan, 'H', "{\"version\":1,\"later\":true}");
        expect(g.chan, &m, 's');
        assert_int_equal(jint(m.json, "input_credit"), GLOVE_KEEPER_INPUT_MAX);
        assert_false(jbool(m.json, "input_closed"));
        assert_true(json_is_null(json_object_get(m.json, "outcome")));
        expect(g.chan, &m, 't');
        assert_int_equal(m.len, 8);
        expect(g.chan, &m, 'r');
        send_msg(g.chan, 'R', NULL, 0);
        send_str(g.chan, 'I', "ping\n");
        /* CREDIT for the 5 bytes and the echo, in either order. */
        bool credit = false, echoed = false;
        while (!credit || !echoed) {
                assert_true(recv_msg(g.chan, &m));
                if (m.type == 'c') {
                        assert_int_equal(jint(m.json, "bytes"), 5);
                        credit = true;
                } else if (m.type == 'o') {
                        assert_true(u64le(m.data) == 0);
                        assert_int_equal(m.len, 8 + 5);
                        assert_memory_equal(m.data + 8, "ping\n", 5);
                        echoed = true;
                } else {
                        fail_msg("unexpected '%c'", m.type);
                }
        }
        /* A second gloved: through the listening socket. */
        int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        memcpy(sa.sun_path, g.sock, sizeof(g.sock));
        assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
        send_str(c, 'H', "{\"version\":1}");
        expect(c, &m, 's');
        assert_string_equal(jstr(m.json, "phase"), "running");
        assert_int_equal(jint(m.json, "output_offset"), 5);
        expect(c, &m, 't');
        assert_true(u64le(m.data) == 0);
        assert_int_equal(m.len, 8 + 5);
        assert_memory_equal(m.data + 8, "ping\n", 5);
        /* The old connection was closed by the keeper. */
        assert_false(recv_msg(g.chan, &m));
        close(g.chan);
        g.chan = -1;
        send_str(c, 'I', "pong\n");
        credit = echoed = false;
        while (!credit || !echoed) {
                assert_true(recv_msg(c, &m));
                if (m.type == 'c') {
                        credit = true;
                } else if (m.type == 'o') {
                        assert_true(u64le(m.data) == 5);
                        assert_memory_equal(m.data + 8, "pong\n", 5);
                        echoed = true;
                }
        }
        send_msg(c, 'K', NULL, 0);
        do
                assert_true(recv_msg(c, &m));
        while (m.type != 'e');
        assert_true(jbool(m.json, "killed"));
        assert_true(jbool(m.json, "released"));
        assert_int_equal(jint(m.json, "output_bytes"), 10);
        send_msg(c, 'E', NULL, 0);
        assert_int_equal(rig_wait(&g), 0);
        close(c);
        json_decref(m.json);
        /* The malformed messages left lines in the log. */
        _cleanup_free_ char *log = NULL;
        size_t n = 0;
        assert_int_equal(glove_file_read_bounded(g.dir_fd, "s-1.log", 0, 1 << 20, &log, &n, NULL), 0);
        assert_non_null(strstr(log, "unknown message type 0x58"));
        assert_non_null(strstr(log, "refused: over"));
        assert_non_null(strstr(log, "json.syntax"));
        rig_free(&g);
}

/* ABORT after READY: never released; ENDED says aborted; without ACK the
 * connection's end lets the keeper go. */
static void test_keeper_abort(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        static char *argv[] = { "/bin/echo", "never", NULL };
        struct rig g;
        rig_start(&g, argv, true);
        struct msg m = { 0 };
        (void)hello(g.chan, &m, g.keeper, "starting", "ready");
        expect(g.chan, &m, 'r');
        send_msg(g.chan, 'A', NULL, 0);
        send_msg(g.chan, 'R', NULL, 0); /* too late: never released */
        do
                assert_true(recv_msg(g.chan, &m));
        while (m.type != 'e');
        assert_true(jbool(m.json, "aborted"));
        assert_false(jbool(m.json, "released"));
        assert_int_equal(jint(m.json, "output_bytes"), 0);
        close(g.chan);
        g.chan = -1;
        assert_int_equal(rig_wait(&g), 0);
        json_t *st = read_status(&g);
        assert_true(jbool(json_object_get(st, "outcome"), "aborted"));
        json_decref(st);
        json_decref(m.json);
        rig_free(&g);
}

/* No gloved at the end: the keeper exits by itself and the status file
 * holds the outcome. */
static void test_keeper_end_unconnected(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        static char *argv[] = { "/bin/echo", "alone", NULL };
        struct rig g;
        rig_start(&g, argv, true);
        struct msg m = { 0 };
        (void)hello(g.chan, &m, g.keeper, "starting", "ready");
        expect(g.chan, &m, 'r');
        send_msg(g.chan, 'R', NULL, 0);
        close(g.chan);
        g.chan = -1;
        assert_int_equal(rig_wait(&g), 0);
        json_t *st = read_status(&g);
        const json_t *o = json_object_get(st, "outcome");
        assert_string_equal(jstr(o, "kind"), "exited");
        assert_true(jbool(o, "released"));
        assert_int_equal(jint(o, "output_bytes"), 6);
        json_decref(st);
        json_decref(m.json);
        rig_free(&g);
}

/* A gloved that does not read for a while loses nothing: the keeper holds
 * the agent's output while its queue is full (instead of dropping the
 * connection or the bytes), and every byte up to the output limit arrives
 * in order. */
static void test_keeper_slow_reader(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        static char *argv[] = { "/usr/bin/yes", "0123456789abcdef", NULL };
        const uint64_t limit = 8u << 20; /* well past GLOVE_KEEPER_QUEUE_MAX */
        struct rig g;
        rig_start_limit(&g, argv, true, limit);
        struct msg m = { 0 };
        (void)hello(g.chan, &m, g.keeper, "starting", "ready");
        expect(g.chan, &m, 'r');
        send_msg(g.chan, 'R', NULL, 0);
        /* Not reading for a moment lets the queue fill up (the checks
         * below hold however long it is). */
        usleep(500 * 1000);
        uint64_t off = 0;
        static const char line[] = "0123456789abcdef\n";
        for (;;) {
                if (!recv_msg(g.chan, &m))
                        fail_msg("the connection ended at offset %llu", (unsigned long long)off);
                if (m.type == 'e')
                        break;
                if (m.type != 'o')
                        continue;
                if (u64le(m.data) != off)
                        fail_msg("output at %llu where %llu was expected", (unsigned long long)u64le(m.data),
                                 (unsigned long long)off);
                for (size_t i = 8; i < m.len; i++)
                        if (m.data[i] != (uint8_t)line[(off + i - 8) % (sizeof(line) - 1)])
                                fail_msg("byte %llu differs", (unsigned long long)(off + i - 8));
                off += m.len - 8;
        }
        assert_true(off == limit);
        assert_string_equal(jstr(m.json, "limit"), "terminal_output_bytes");
        send_msg(g.chan, 'E', NULL, 0);
        assert_int_equal(rig_wait(&g), 0);
        json_decref(m.json);
        rig_free(&g);
}

/* While the agent runs, the status file follows its usage (refreshed while
 * it changes); KILL ends it. */
static void test_keeper_status_while_running(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        static char *argv[] = { "/bin/sh", "-c", "echo x; exec sleep 60", NULL };
        struct rig g;
        rig_start(&g, argv, true);
        struct msg m = { 0 };
        (void)hello(g.chan, &m, g.keeper, "starting", "ready");
        expect(g.chan, &m, 'r');
        /* With a run cgroup the limit watch's readings show too. */
        bool cgroup = !json_is_null(json_object_get(m.json, "cgroup"));
        send_msg(g.chan, 'R', NULL, 0);
        expect(g.chan, &m, 'o');
        assert_int_equal(m.len, 8 + 2);
        bool seen = false;
        for (int i = 0; i < WAIT_MS / 50 && !seen; i++) {
                json_t *st = read_status(&g);
                const json_t *u = json_object_get(st, "usage");
                seen = jint(u, "output_bytes") == 2 && jint(u, "wall_time_ms") > 0 &&
                       (!cgroup || jint(u, "peak_memory_bytes") > 0);
                if (seen)
                        assert_true(json_is_null(json_object_get(st, "outcome")));
                json_decref(st);
                if (!seen)
                        usleep(50 * 1000);
        }
        assert_true(seen);
        send_msg(g.chan, 'K', NULL, 0);
        do
                assert_true(recv_msg(g.chan, &m));
        while (m.type != 'e');
        assert_true(jbool(m.json, "killed"));
        assert_true(jint(m.json, "wall_time_ms") > 0);
        send_msg(g.chan, 'E', NULL, 0);
        assert_int_equal(rig_wait(&g), 0);
        json_decref(m.json);
        rig_free(&g);
}

/* A session that cannot even start: ENDED says setup_failed with the
 * engine's code, the status file too, and the keeper exits 1 after ACK. */
static void test_keeper_start_failed(void **state) {
        (void)state;
        static char *argv[] = { "/bin/echo", "never", NULL };
        struct rig g;
        rig_transcript_bytes = GLOVE_TERMINAL_TRANSCRIPT_MAX + 1;
        rig_start(&g, argv, true);
        rig_transcript_bytes = 0;
        struct msg m = { 0 };
        assert_true(hello(g.chan, &m, g.keeper, "ended", "ended") == 0);
        expect(g.chan, &m, 'e');
        assert_string_equal(jstr(m.json, "kind"), "setup_failed");
        assert_string_equal(jstr(m.json, "error_code"), "terminal.config");
        assert_false(jbool(m.json, "released"));
        json_t *st = read_status(&g);
        assert_true(json_equal(json_object_get(st, "outcome"), m.json));
        assert_true(json_is_null(json_object_get(st, "identity")));
        json_decref(st);
        send_msg(g.chan, 'E', NULL, 0);
        assert_int_equal(rig_wait(&g), 1);
        json_decref(m.json);
        rig_free(&g);
}

/* ---- the launch (keeper_launch.c) ---- */

static int launch_hook(struct glove_mount_plan *plan, void *ctx, struct glove_error *err) {
        (void)ctx;
        static const uint8_t bin[] = { 0, 1, 2, 0xff, 'S', 'K', 'I', 'L', 'L', '\n' };
        int r = glove_mount_plan_add_pinned_bind(plan, "/work", "/tmp", 7, 42, true, false, "src", err);
        r = r ?: glove_mount_plan_add_pinned_bind(plan, "/exp", "/var", 10, 45, true, true, "exp-1", err);
        if (r == 0) /* a path exposure's: named by its label only */
                plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_PRIVATE;
        r = r ?: glove_mount_plan_add_pinned_bind(plan, "/opt/tool", "/usr/bin/true", 8, 43, false, true, NULL, err);
        r = r ?: glove_mount_plan_add_tree(plan, "/copy", 1 << 20, 1000, 1000, "/usr/share", 9, 44, "copy", err);
        if (r == 0)
                plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_SKIP_LINKS;
        r = r ?: glove_mount_plan_add_tree(plan, "/excopy", 1 << 20, 1000, 1000, "/usr/lib", 11, 46, "exp-2", err);
        if (r == 0)
                plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_PRIVATE;
        r = r ?: glove_mount_plan_add_tree(plan, "/empty", 4096, 1000, 1000, NULL, 0, 0, NULL, err);
        r = r ?: glove_mount_plan_add_dir(plan, "/home/agent/.skills", 0700, 1000, 1000, err);
        r = r ?: glove_mount_plan_add_owned_file(plan, "/home/agent/.skills/SKILL.md", bin, sizeof(bin), 0600, 1000,
                                                 1000, err);
        r = r ?: glove_mount_plan_add_file(plan, "/etc/motd", "", 0, 0644, err);
        r = r ?: glove_mount_plan_add_symlink(plan, "/home/agent/link", "../x", err);
        return r;
}

static int tmpfs_hook(struct glove_mount_plan *plan, void *ctx, struct glove_error *err) {
        (void)ctx;
        return glove_mount_plan_add_tmpfs(plan, "/scratch", 4096, 0700, 0, 0, 0, err);
}

static void plan_entries_equal(const struct glove_mount_plan *a, const struct glove_mount_plan *b, size_t from) {
        assert_int_equal(a->count, b->count);
        for (size_t i = from; i < a->count; i++) {
                const struct glove_mount_entry *x = &a->entries[i], *y = &b->entries[i];
                assert_int_equal(x->kind, y->kind);
                assert_int_equal(x->flags, y->flags);
                assert_true(x->attrs == y->attrs && x->size == y->size && x->mode == y->mode);
                assert_true(x->uid == y->uid && x->gid == y->gid && x->dev == y->dev && x->ino == y->ino);
                assert_string_equal(a->data + x->dest, b->data + y->dest);
                assert_string_equal(a->data + x->source, b->data + y->source);
                assert_string_equal(a->data + x->name, b->data + y->name);
                assert_int_equal(x->bytes_len, y->bytes_len);
                assert_memory_equal(a->data + x->bytes, b->data + y->bytes, x->bytes_len);
        }
}

static void test_launch_round_trip(void **state) {
        (void)state;
        char dir[] = "/tmp/glove-launch-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int sv[2], lv[2], hold[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lv), 0);
        assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
        char apath[128];
        snprintf(apath, sizeof(apath), "%s/audit.jsonl", dir);
        struct glove_audit_log au = { .fd = open(apath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600),
                                      .path = apath, .dev = 3, .ino = 5, .run_id = "r-1" };
        assert_true(au.fd >= 0);
        struct glove_net_policy eg;
        glove_net_policy_init(&eg);
        struct glove_error e = { 0 };
        assert_int_equal(glove_net_policy_add_rule(&eg, "api.example.com:443", false, &e), 0);
        assert_int_equal(glove_net_policy_add_rule(&eg, ".example.org:8443", false, &e), 0);
        assert_int_equal(glove_net_policy_add_rule(&eg, "[fd00::1]:8080", true, &e), 0);
        assert_int_equal(glove_net_policy_add_rule(&eg, "10.0.0.1:80", true, &e), 0);
        struct termios tm = { .c_iflag = ICRNL, .c_oflag = OPOST, .c_cflag = CS8, .c_lflag = ECHO | ICANON };
        tm.c_cc[VINTR] = 3;
        cfsetispeed(&tm, B38400);
        cfsetospeed(&tm, B38400);
        static char *argv[] = { "/usr/bin/agent", "--flag", "caf\xc3\xa9", NULL };
        static char *envp[] = { "HOME=/home/agent", "TERM=xterm-256color", "EMPTY=", NULL };
        struct glove_grant_set grants;
        glove_grant_set_init(&grants);
        struct glove_session_desc d = {
                .argv = argv, .envp = envp, .grants = &grants, .add_mounts = launch_hook, .cwd = "/work",
                .seccomp = &glove_seccomp_prebuilt_managed, .seccomp_egress = &glove_seccomp_prebuilt_managed_egress,
                .limits = { 1, 2, 3, 4, 5, UINT64_C(1) << 40 }, .cgroup_policy = GLOVE_SESSION_CGROUP_REQUIRED,
                .cgroup_pin = { .set = true, .dev = 12, .ino = UINT64_MAX }, .terminal = GLOVE_TERMINAL_PTY,
                .tty_modes = &tm, .rows = 50, .cols = 132, .transcript_bytes = 4096, .channel_stdin_fd = -1,
                .channel_stdout_fd = -1, .egress = &eg, .audit = &au, .audit_max_bytes = 65536,
                .egress_upstream = "up", .file_size_max = 1 << 20, .nofile = 512, .parent_death_kill = true,
        };
        struct glove_keeper_args a = { .session_id = "s-1", .stem = "k0123", .desc = &d, .channel_fd = sv[1],
                                       .listen_fd = lv[0], .dir_fd = dfd, .cgroup_parent = "/sys/fs/cgroup/x",
                                       .cgroup_v2 = true, .hold_fds = hold, .n_hold_fds = 2 };
        int svc[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, svc), 0);
        static const char services[] = "{\"aliases\":[\"a\",\"b\"],\"caf\u00e9\":\"\xc3\xa9\"}";
        a.services_json = services;
        a.service_fds = svc;
        a.n_service_fds = 2;
        int memfd = -1, fds[GLOVE_KEEPER_LAUNCH_FDS_MAX];
        size_t n = 0;
        assert_int_equal(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e), 0);
        assert_int_equal(n, 8);
        int want[] = { sv[1], lv[0], dfd, au.fd, hold[0], hold[1], svc[0], svc[1] };
        assert_memory_equal(fds, want, sizeof(want));
        /* Sealed: nobody writes to it any more. */
        int seals = fcntl(memfd, F_GET_SEALS);
        assert_true(seals & F_SEAL_WRITE && seals & F_SEAL_GROW && seals & F_SEAL_SHRINK && seals & F_SEAL_SEAL);
        assert_true(write(memfd, "x", 1) < 0);
        struct stat st;
        assert_int_equal(fstat(memfd, &st), 0);
        char *text = malloc((size_t)st.st_size);
        assert_int_equal(pread(memfd, text, (size_t)st.st_size, 0), st.st_size);
        /* Too few descriptors for what it names: refused. */
        struct glove_keeper_launch *l = NULL;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_decode(text, (size_t)st.st_size, fds, 5, &l, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_invalid");
        assert_null(l);
        assert_int_equal(glove_keeper_launch_decode(text, (size_t)st.st_size, fds, n, &l, &e), 0);
        const struct glove_keeper_args *b = glove_keeper_launch_args(l);
        assert_string_equal(b->session_id, "s-1");
        assert_string_equal(b->stem, "k0123");
        assert_string_equal(b->cgroup_parent, "/sys/fs/cgroup/x");
        assert_true(b->cgroup_v2);
        assert_true(b->channel_fd == sv[1] && b->listen_fd == lv[0] && b->dir_fd == dfd);
        assert_int_equal(b->n_hold_fds, 2);
        assert_memory_equal(b->hold_fds, hold, sizeof(hold));
        assert_null(b->now_ms);
        assert_string_equal(b->services_json, services);
        assert_int_equal(b->n_service_fds, 2);
        assert_memory_equal(b->service_fds, svc, sizeof(svc));
        assert_false(b->desc->has_inherit_fd);
        const struct glove_session_desc *c = b->desc;
        for (size_t i = 0; i < 4; i++) {
                assert_true((argv[i] == NULL) == (c->argv[i] == NULL));
                if (argv[i])
                        assert_string_equal(argv[i], c->argv[i]);
        }
        for (size_t i = 0; i < 4; i++) {
                assert_true((envp[i] == NULL) == (c->envp[i] == NULL));
                if (envp[i])
                        assert_string_equal(envp[i], c->envp[i]);
        }
        assert_string_equal(c->cwd, "/work");
        assert_ptr_equal(c->seccomp, &glove_seccomp_prebuilt_managed);
        assert_ptr_equal(c->seccomp_egress, &glove_seccomp_prebuilt_managed_egress);
        assert_memory_equal(&c->limits, &d.limits, sizeof(d.limits));
        assert_int_equal(c->cgroup_policy, GLOVE_SESSION_CGROUP_REQUIRED);
        assert_true(c->cgroup_pin.set && c->cgroup_pin.dev == 12 && c->cgroup_pin.ino == UINT64_MAX);
        assert_int_equal(c->terminal, GLOVE_TERMINAL_PTY);
        assert_non_null(c->tty_modes);
        assert_true(c->tty_modes->c_iflag == tm.c_iflag && c->tty_modes->c_oflag == tm.c_oflag &&
                    c->tty_modes->c_cflag == tm.c_cflag && c->tty_modes->c_lflag == tm.c_lflag);
        assert_memory_equal(c->tty_modes->c_cc, tm.c_cc, sizeof(tm.c_cc));
        assert_true(cfgetospeed(c->tty_modes) == B38400 && cfgetispeed(c->tty_modes) == B38400);
        assert_true(c->rows == 50 && c->cols == 132 && c->transcript_bytes == 4096 && !c->input_closed);
        assert_true(c->channel_stdin_fd == -1 && c->channel_stdout_fd == -1 && !c->mcp_listen);
        assert_int_equal(c->egress->n_rules, eg.n_rules);
        for (size_t i = 0; i < eg.n_rules; i++) {
                assert_int_equal(c->egress->rules[i].host.kind, eg.rules[i].host.kind);
                assert_string_equal(c->egress->rules[i].host.text, eg.rules[i].host.text);
                assert_memory_equal(c->egress->rules[i].host.addr, eg.rules[i].host.addr, 16);
                assert_true(c->egress->rules[i].port == eg.rules[i].port &&
                            c->egress->rules[i].subdomains == eg.rules[i].subdomains &&
                            c->egress->rules[i].allow_private == eg.rules[i].allow_private);
        }
        assert_true(c->audit && c->audit->fd == au.fd && c->audit->dev == 3 && c->audit->ino == 5);
        assert_string_equal(c->audit->path, apath);
        assert_string_equal(c->audit->run_id, "r-1");
        assert_true(c->audit_max_bytes == 65536 && c->file_size_max == (1 << 20) && c->nofile == 512);
        assert_string_equal(c->egress_upstream, "up");
        assert_int_equal(c->grants->count, 0);
        /* The mounts come back equal through the keeper's hook. */
        struct glove_mount_plan_params pp = { .uid = 1000, .gid = 1000 };
        struct glove_mount_plan *p1 = NULL, *p2 = NULL;
        assert_int_equal(glove_mount_plan_new(&pp, &p1, &e), 0);
        assert_int_equal(glove_mount_plan_new(&pp, &p2, &e), 0);
        size_t base = p1->count;
        assert_int_equal(launch_hook(p1, NULL, &e), 0);
        assert_non_null(c->add_mounts);
        assert_int_equal(c->add_mounts(p2, c->add_mounts_ctx, &e), 0);
        assert_int_equal(p1->count, base + 10);
        plan_entries_equal(p1, p2, base);
        glove_mount_plan_free(p1);
        glove_mount_plan_free(p2);
        glove_keeper_launch_free(l);
        /* A malformed launch is refused with its code. */
        text[0] = '[';
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_decode(text, (size_t)st.st_size, fds, n, &l, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_invalid");
        free(text);
        close(memfd);
        /* What a launch cannot carry is refused before any process. */
        d.add_mounts = tmpfs_hook;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_unsupported");
        d.add_mounts = NULL;
        static const struct sock_fprog own = { 0 };
        d.seccomp = &own;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_unsupported");
        d.seccomp = &glove_seccomp_prebuilt;
        d.terminal = GLOVE_TERMINAL_STDERR;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_unsupported");
        glove_net_policy_free(&eg);
        close(au.fd);
        unlink(apath);
        close(sv[0]);
        close(sv[1]);
        close(lv[0]);
        close(lv[1]);
        close(hold[0]);
        close(hold[1]);
        close(svc[0]);
        close(svc[1]);
        close(dfd);
        rmdir(dir);
}

/* Whether process pid holds a descriptor on the socket of inode ino; -1
 * when its descriptors cannot be read. */
static int holds_inode(pid_t pid, ino_t ino, int *at) {
        char p[64];
        snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
        DIR *d = opendir(p);
        if (!d)
                return -1;
        struct dirent *de;
        int found = 0;
        while (!found && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char q[300];
                snprintf(q, sizeof(q), "/proc/%d/fd/%s", (int)pid, de->d_name);
                struct stat st;
                if (stat(q, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino) {
                        found = 1;
                        if (at)
                                *at = atoi(de->d_name);
                }
        }
        closedir(d);
        return found;
}

/* A real keeper with an inherited stream: the agent writes to its
 * descriptor 3 and the supervisor's end reads it; the keeper keeps no copy
 * of the stream once the session started (end of file comes with the
 * agent's end). (The service sockets' numbering is the launch's test,
 * test_keeper_launch.c; with services the keeper's proxy serves them:
 * local_services.bats.) */
static void test_keeper_inherited_stream(void **state) {
        (void)state;
        if (!userns_available()) {
                print_message("skipped: user namespaces are not available to this user\n");
                skip();
        }
        int guest[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, guest), 0);
        struct stat gs;
        assert_int_equal(fstat(guest[1], &gs), 0);
        static char *argv[] = { "/bin/sh", "-c", "echo via3 >&3 && echo out", NULL };
        struct rig g;
        rig_inherit_fd = guest[1];
        rig_start(&g, argv, true);
        rig_inherit_fd = -1;
        close(guest[1]);
        struct msg m = { 0 };
        (void)hello(g.chan, &m, g.keeper, "starting", "ready");
        expect(g.chan, &m, 'r');
        /* Ready and not released: the sandbox holds the stream, the keeper
         * not any more. */
        assert_int_equal(holds_inode(g.keeper, gs.st_ino, NULL), 0);
        send_msg(g.chan, 'R', NULL, 0);
        do
                assert_true(recv_msg(g.chan, &m));
        while (m.type != 'e');
        assert_string_equal(jstr(m.json, "kind"), "exited");
        assert_int_equal(jint(m.json, "value"), 0);
        char buf[32] = { 0 };
        size_t got = 0;
        bool eof = false;
        for (int i = 0; i < 1000 && !eof; i++) {
                struct pollfd p = { .fd = guest[0], .events = POLLIN };
                if (poll(&p, 1, 10) <= 0)
                        continue;
                ssize_t r = read(guest[0], buf + got, sizeof(buf) - 1 - got);
                if (r == 0)
                        eof = true;
                else if (r > 0)
                        got += (size_t)r;
        }
        assert_string_equal(buf, "via3\n");
        assert_true(eof);
        send_msg(g.chan, 'E', NULL, 0);
        assert_int_equal(rig_wait(&g), 0);
        json_decref(m.json);
        close(guest[0]);
        rig_free(&g);
}

static void write_file(const char *path, const char *text, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        assert_int_equal(chmod(path, mode), 0);
}

static void test_keeper_exe(void **state) {
        (void)state;
        char dir[] = "/tmp/glove-exe-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[96], other[96];
        snprintf(path, sizeof(path), "%s/glove-keeper", dir);
        snprintf(other, sizeof(other), "%s/new", dir);
        struct glove_keeper_exe x;
        struct glove_error e = { 0 };
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_open(path, &x, &e) < 0);
        assert_string_equal(e.code, "keeper.missing");
        assert_int_equal(x.fd, -1);
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_check(&x, &e) < 0);
        assert_string_equal(e.code, "keeper.missing");
        write_file(path, "#!keeper\n", 0757);
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_open(path, &x, &e) < 0);
        assert_string_equal(e.code, "keeper.unsafe");
        write_file(path, "#!keeper\n", 0644);
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_open(path, &x, &e) < 0);
        assert_string_equal(e.code, "keeper.unsafe");
        write_file(path, "#!keeper\n", 0755);
        assert_int_equal(glove_keeper_exe_open(path, &x, &e), 0);
        assert_true(x.fd >= 0);
        /* SHA-256("#!keeper\n") */
        assert_int_equal(strlen(x.sha256), 64);
        assert_int_equal(glove_keeper_exe_check(&x, &e), 0);
        assert_int_equal(chmod(path, 0775), 0);
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_check(&x, &e) < 0);
        assert_string_equal(e.code, "keeper.unsafe");
        assert_int_equal(chmod(path, 0755), 0);
        assert_int_equal(glove_keeper_exe_check(&x, &e), 0);
        /* Another file at the path: replaced. */
        write_file(other, "#!keeper\n", 0755);
        assert_int_equal(rename(other, path), 0);
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_check(&x, &e) < 0);
        assert_string_equal(e.code, "keeper.replaced");
        glove_keeper_exe_close(&x);
        assert_int_equal(glove_keeper_exe_open(path, &x, &e), 0);
        /* Rewritten in place (another size): replaced. */
        write_file(path, "#!keeper, longer\n", 0755);
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_check(&x, &e) < 0);
        assert_string_equal(e.code, "keeper.replaced");
        /* Removed: missing. */
        assert_int_equal(unlink(path), 0);
        glove_error_clear(&e);
        assert_true(glove_keeper_exe_check(&x, &e) < 0);
        assert_string_equal(e.code, "keeper.missing");
        glove_keeper_exe_close(&x);
        glove_keeper_exe_close(&x);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_stat),       cmocka_unit_test(test_proc_start_time),
                cmocka_unit_test(test_boot_id),          cmocka_unit_test(test_parse_cgroup),
                cmocka_unit_test(test_keeper_echo),      cmocka_unit_test(test_keeper_reconnect),
                cmocka_unit_test(test_keeper_abort),     cmocka_unit_test(test_keeper_end_unconnected),
                cmocka_unit_test(test_keeper_slow_reader),
                cmocka_unit_test(test_keeper_start_failed),
                cmocka_unit_test(test_keeper_status_while_running),
                cmocka_unit_test(test_launch_round_trip), cmocka_unit_test(test_keeper_exe),
                cmocka_unit_test(test_keeper_inherited_stream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for glove_cgroup_host_setup (include/glove/container/cgroup.h):
 * gloved's place in a delegated cgroup v2 tree. The decision and its steps
 * run over directory descriptors (cg_host_setup_at), so most tests build a
 * fake tree of plain files in a temporary directory (cgroup.controllers,
 * cgroup.subtree_control, cgroup.procs, cgroup.type) and play the kernel's
 * part through the hooks: a new cgroup's files appear after mkdir, a moved
 * pid leaves the old cgroup.procs. One test moves a real process on the
 * host's cgroup2 mount (root only; skipped with the reason otherwise). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup_internal.h"
#include "glove/container/cgroup.h"

static char g_root[64];

static void put(int dirfd, const char *name, const char *text) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        size_t n = strlen(text);
        assert_int_equal(write(fd, text, n), (ssize_t)n);
        close(fd);
}

static void get(int dirfd, const char *name, char *buf, size_t size) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        ssize_t n = read(fd, buf, size - 1);
        assert_true(n >= 0);
        buf[n] = '\0';
        close(fd);
}

/* A fake cgroup directory rel beneath the tree, with its four files. */
static int node(const char *rel, const char *controllers, const char *subtree, const char *type, const char *procs) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", g_root, rel);
        assert_int_equal(mkdir(path, 0755), 0);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        put(fd, "cgroup.controllers", controllers);
        put(fd, "cgroup.subtree_control", subtree);
        if (type)
                put(fd, "cgroup.type", type);
        put(fd, "cgroup.procs", procs);
        return fd;
}

static int tree_fd(void) {
        int fd = open(g_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static void rm_tree(const char *path) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", path, path);
        assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
        (void)state;
        snprintf(g_root, sizeof(g_root), "/tmp/glove-cghost-XXXXXX");
        assert_non_null(mkdtemp(g_root));
        return 0;
}

static int teardown(void **state) {
        (void)state;
        rm_tree(g_root);
        return 0;
}

/* The kernel's part: a new cgroup's files, and the move. */
static void fake_mkdir(int sub_fd, void *ctx) {
        (void)ctx;
        put(sub_fd, "cgroup.controllers", "");
        put(sub_fd, "cgroup.subtree_control", "");
        put(sub_fd, "cgroup.type", "domain\n");
        put(sub_fd, "cgroup.procs", "");
}

static int g_moves;
static void fake_move(int cur_fd, int sub_fd, void *ctx) {
        (void)sub_fd;
        (void)ctx;
        g_moves++;
        put(cur_fd, "cgroup.procs", "");
}

static void no_move(int cur_fd, int sub_fd, void *ctx) {
        (void)cur_fd;
        (void)sub_fd;
        (void)ctx;
        g_moves++;
}

static struct cg_host_env env_self(void) {
        return (struct cg_host_env){.uid = geteuid(), .pid = 4242, .after_mkdir = fake_mkdir, .after_move = fake_move};
}

static uint64_t ino_of(int fd) {
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        return (uint64_t)st.st_ino;
}

/* The parent of the delegated cgroup made not delegated to the tests' uid:
 * another owner when the tests run as root, else not writable. */
static void undelegate(const char *rel) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", g_root, rel);
        if (geteuid() == 0) {
                assert_int_equal(chown(path, 65534, 65534), 0);
                return;
        }
        char f[300];
        snprintf(f, sizeof(f), "%s/cgroup.procs", path);
        assert_int_equal(chmod(f, 0444), 0);
        assert_int_equal(chmod(path, 0555), 0);
}

#define OFFERED "cpuset cpu io memory hugetlb pids rdma misc\n"

/* systemd >= 254: gloved already in glove-host, the delegated parent empty. */
static void test_subgroup_layout(void **state) {
        (void)state;
        int p = node("svc", OFFERED, "", "domain\n", "");
        int c = node("svc/glove-host", "", "", "domain\n", "4242\n");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        assert_int_equal(cg_host_setup_at(tree_fd(), "/svc/glove-host", "/fake", &env, &h, &e), 0);
        assert_non_null(h);
        assert_int_equal(glove_cgroup_host_placement(h), GLOVE_CGROUP_PLACEMENT_DELEGATED_SUBGROUP);
        assert_string_equal(glove_cgroup_placement_name(glove_cgroup_host_placement(h)), "delegated_subgroup");
        assert_string_equal(glove_cgroup_host_parent_path(h), "/fake/svc");
        assert_string_equal(glove_cgroup_host_self_path(h), "/fake/svc/glove-host");
        char buf[256];
        get(p, "cgroup.subtree_control", buf, sizeof(buf));
        assert_string_equal(buf, "+cpu +memory +pids");
        /* Pinned: both descriptors, with the identities of the two directories. */
        struct glove_cgroup_pin pin;
        glove_cgroup_host_pin(h, &pin);
        assert_true(pin.set);
        assert_int_equal(pin.ino, ino_of(p));
        assert_int_equal(ino_of(h->parent_fd), ino_of(p));
        assert_int_equal(ino_of(h->self_fd), ino_of(c));
        assert_int_equal(h->self_ino, ino_of(c));
        assert_int_equal(glove_cgroup_host_check(h, &e), 0);
        assert_int_equal(g_moves, 0);
        glove_cgroup_host_free(h);
        close(p);
        close(c);
}

/* Already handing the controllers down: nothing is written. */
static void test_subgroup_layout_enabled(void **state) {
        (void)state;
        int p = node("svc", OFFERED, "cpu memory pids\n", "domain\n", "");
        int c = node("svc/glove-host", "cpu memory pids\n", "", "domain\n", "4242\n");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        assert_int_equal(cg_host_setup_at(tree_fd(), "svc/glove-host", "/fake", &env, &h, &e), 0);
        assert_non_null(h);
        char buf[256];
        get(p, "cgroup.subtree_control", buf, sizeof(buf));
        assert_string_equal(buf, "cpu memory pids\n");
        glove_cgroup_host_free(h);
        close(p);
        close(c);
}

/* systemd 252: gloved alone in the delegated cgroup, whose parent is the
 * manager's: glove-host is made, gloved moved there, the controllers
 * enabled on the now empty delegated cgroup. */
static void test_252_layout_moves(void **state) {
        (void)state;
        int a = node("app", OFFERED, "cpu memory pids\n", "domain\n", "");
        int c = node("app/gloved.service", OFFERED, "", "domain\n", "4242\n");
        undelegate("app");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        g_moves = 0;
        assert_int_equal(cg_host_setup_at(tree_fd(), "/app/gloved.service", "/fake", &env, &h, &e), 0);
        assert_non_null(h);
        assert_int_equal(g_moves, 1);
        assert_int_equal(glove_cgroup_host_placement(h), GLOVE_CGROUP_PLACEMENT_DELEGATED_MOVED);
        assert_string_equal(glove_cgroup_placement_name(GLOVE_CGROUP_PLACEMENT_DELEGATED_MOVED), "delegated_moved");
        assert_string_equal(glove_cgroup_host_parent_path(h), "/fake/app/gloved.service");
        assert_string_equal(glove_cgroup_host_self_path(h), "/fake/app/gloved.service/glove-host");
        int sub = openat(c, "glove-host", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(sub >= 0);
        char buf[256];
        get(sub, "cgroup.procs", buf, sizeof(buf));
        assert_string_equal(buf, "4242\n");
        get(c, "cgroup.subtree_control", buf, sizeof(buf));
        assert_string_equal(buf, "+cpu +memory +pids");
        /* The delegated cgroup is the pinned parent, glove-host the subgroup. */
        assert_int_equal(ino_of(h->parent_fd), ino_of(c));
        assert_int_equal(ino_of(h->self_fd), ino_of(sub));
        struct glove_cgroup_pin pin;
        glove_cgroup_host_pin(h, &pin);
        assert_int_equal(pin.ino, ino_of(c));
        assert_int_equal(glove_cgroup_host_check(h, &e), 0);
        glove_cgroup_host_free(h);
        close(sub);
        close(c);
        close(a);
}

/* The move that leaves gloved listed in the delegated cgroup is an error. */
static void test_252_move_not_done(void **state) {
        (void)state;
        int a = node("app", OFFERED, "", "domain\n", "");
        int c = node("app/gloved.service", OFFERED, "", "domain\n", "4242\n");
        undelegate("app");
        struct cg_host_env env = env_self();
        env.after_move = no_move;
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        int r = cg_host_setup_at(tree_fd(), "app/gloved.service", "/fake", &env, &h, &e);
        assert_true(r < 0);
        assert_null(h);
        assert_string_equal(e.code, "cgroup.host_move");
        assert_non_null(strstr(e.message, "still lists 1 process"));
        char buf[256];
        get(c, "cgroup.subtree_control", buf, sizeof(buf));
        assert_string_equal(buf, ""); /* never enabled over a process */
        close(c);
        close(a);
}

/* A delegated cgroup holding a foreign process, its parent not delegated. */
static void test_252_foreign_pid_refused(void **state) {
        (void)state;
        int a = node("app", OFFERED, "cpu memory pids\n", "domain\n", "");
        int c = node("app/gloved.service", OFFERED, "", "domain\n", "4242\n777\n");
        undelegate("app");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        g_moves = 0;
        int r = cg_host_setup_at(tree_fd(), "app/gloved.service", "/fake", &env, &h, &e);
        assert_int_equal(r, -EBUSY);
        assert_null(h);
        assert_string_equal(e.code, "cgroup.delegated_shared");
        assert_non_null(strstr(e.message, "1 other process (first 777)"));
        assert_int_equal(g_moves, 0);
        struct stat st;
        assert_int_equal(fstatat(c, "glove-host", &st, 0), -1); /* nothing made */
        char buf[256];
        get(c, "cgroup.subtree_control", buf, sizeof(buf));
        assert_string_equal(buf, "");
        close(c);
        close(a);
}

/* The same with a writable parent: the ordinary "beside" placement applies
 * (not this code's to decide: NULL, nothing touched). */
static void test_252_foreign_pid_parent_writable(void **state) {
        (void)state;
        int a = node("app", OFFERED, "cpu memory pids\n", "domain\n", "");
        int c = node("app/shell.scope", OFFERED, "", "domain\n", "4242\n777\n");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = (struct glove_cgroup_host *)1;
        struct glove_error e = {0};
        assert_int_equal(cg_host_setup_at(tree_fd(), "app/shell.scope", "/fake", &env, &h, &e), 0);
        assert_null(h);
        struct stat st;
        assert_int_equal(fstatat(c, "glove-host", &st, 0), -1);
        close(c);
        close(a);
}

/* glove-host whose parent is not owned by the uid. */
static void test_subgroup_parent_not_owned(void **state) {
        (void)state;
        int p = node("svc", OFFERED, "", "domain\n", "");
        int c = node("svc/glove-host", "", "", "domain\n", "4242\n");
        struct cg_host_env env = env_self();
        env.uid = geteuid() + 1;
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        int r = cg_host_setup_at(tree_fd(), "svc/glove-host", "/fake", &env, &h, &e);
        assert_int_equal(r, -EACCES);
        assert_null(h);
        assert_string_equal(e.code, "cgroup.parent_not_owned");
        assert_non_null(strstr(e.message, "not owned by the uid"));
        char buf[256];
        get(p, "cgroup.subtree_control", buf, sizeof(buf));
        assert_string_equal(buf, "");
        close(p);
        close(c);
}

/* glove-host whose parent lacks a controller, or is not a domain. */
static void test_subgroup_parent_not_delegated(void **state) {
        (void)state;
        int p = node("svc", "cpu memory\n", "", "domain threaded\n", "");
        int c = node("svc/glove-host", "", "", "domain\n", "4242\n");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        assert_int_equal(cg_host_setup_at(tree_fd(), "svc/glove-host", "/fake", &env, &h, &e), -EACCES);
        assert_string_equal(e.code, "cgroup.parent_not_owned");
        assert_non_null(strstr(e.message, "cgroup.controllers"));
        assert_non_null(strstr(e.message, "not domain"));
        close(p);
        close(c);
}

/* glove-host whose parent holds processes of its own. */
static void test_subgroup_parent_busy(void **state) {
        (void)state;
        int p = node("svc", OFFERED, "", "domain\n", "555\n");
        int c = node("svc/glove-host", "", "", "domain\n", "4242\n");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        assert_int_equal(cg_host_setup_at(tree_fd(), "svc/glove-host", "/fake", &env, &h, &e), -EBUSY);
        assert_string_equal(e.code, "cgroup.delegated_shared");
        assert_non_null(strstr(e.message, "first 555"));
        char buf[256];
        get(p, "cgroup.subtree_control", buf, sizeof(buf));
        assert_string_equal(buf, "");
        close(p);
        close(c);
}

/* The pinned parent replaced at its path (removed and made again). */
static void test_replaced_parent_refused(void **state) {
        (void)state;
        int p = node("svc", OFFERED, "", "domain\n", "");
        int c = node("svc/glove-host", "", "", "domain\n", "4242\n");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        assert_int_equal(cg_host_setup_at(tree_fd(), "svc/glove-host", "/fake", &env, &h, &e), 0);
        assert_int_equal(glove_cgroup_host_check(h, &e), 0);
        char from[256], to[256];
        snprintf(from, sizeof(from), "%s/svc", g_root);
        snprintf(to, sizeof(to), "%s/svc.old", g_root);
        assert_int_equal(rename(from, to), 0);
        int p2 = node("svc", OFFERED, "cpu memory pids\n", "domain\n", "");
        int c2 = node("svc/glove-host", "", "", "domain\n", "4242\n");
        assert_int_equal(glove_cgroup_host_check(h, &e), -ESTALE);
        assert_string_equal(e.code, "cgroup.parent_replaced");
        assert_non_null(strstr(e.message, "/fake/svc was replaced"));
        /* Only the parent gone: also refused. */
        close(c2);
        close(p2);
        rm_tree(from);
        e = (struct glove_error){0};
        assert_int_equal(glove_cgroup_host_check(h, &e), -ESTALE);
        assert_string_equal(e.code, "cgroup.parent_replaced");
        assert_non_null(strstr(e.message, "is gone"));
        /* The pinned descriptor still names the original directory. */
        assert_int_equal(ino_of(h->parent_fd), ino_of(p));
        glove_cgroup_host_free(h);
        close(p);
        close(c);
}

/* Not ours to decide: no controllers (a hybrid host's v2 tree), a cgroup
 * not owned by the uid, the root cgroup. */
static void test_not_applicable(void **state) {
        (void)state;
        int a = node("hy", "hugetlb\n", "", "domain\n", "");
        int c = node("hy/gloved.service", "", "", "domain\n", "4242\n");
        struct cg_host_env env = env_self();
        struct glove_cgroup_host *h = (struct glove_cgroup_host *)1;
        struct glove_error e = {0};
        assert_int_equal(cg_host_setup_at(tree_fd(), "hy/gloved.service", "/fake", &env, &h, &e), 0);
        assert_null(h);
        int b = node("other", OFFERED, "", "domain\n", "4242\n");
        env.uid = geteuid() + 1;
        h = (struct glove_cgroup_host *)1;
        assert_int_equal(cg_host_setup_at(tree_fd(), "other", "/fake", &env, &h, &e), 0);
        assert_null(h);
        h = (struct glove_cgroup_host *)1;
        assert_int_equal(cg_host_setup_at(tree_fd(), "/", "/fake", &env, &h, &e), 0);
        assert_null(h);
        struct stat st;
        assert_int_equal(fstatat(b, "glove-host", &st, 0), -1);
        close(a);
        close(b);
        close(c);
}

/* glove_cgroup_create_pinned refuses a place of another identity and
 * creates nothing (on this host's real probe: v1 on a hybrid host, or a v2
 * directory that is not inode 1 of device 0). */
static void test_create_pinned_mismatch(void **state) {
        (void)state;
        struct glove_cgroup_probe probe;
        struct glove_error e = {0};
        if (glove_cgroup_probe(&probe, &e) < 0) {
                print_message("skipped: no run cgroup can be created here (%s): %s\n", e.code, e.message);
                skip();
        }
        struct glove_cgroup_limits l = {64u << 20, 64, 60000};
        struct glove_cgroup_pin pin = {.set = true, .dev = 0, .ino = 1};
        struct glove_cgroup *cg = NULL;
        assert_int_equal(glove_cgroup_create_pinned(&l, &pin, &cg, &e), -ESTALE);
        assert_null(cg);
        assert_string_equal(e.code, "cgroup.parent_replaced");
        /* Without a pin it is glove_cgroup_create. */
        pin.set = false;
        e = (struct glove_error){0};
        assert_int_equal(glove_cgroup_create_pinned(&l, &pin, &cg, &e), 0);
        assert_non_null(cg);
        assert_int_equal(glove_cgroup_destroy(cg, &e), 0);
}

/* The move for real: a test cgroup under the host's cgroup2 mount holding
 * one waiting child; the code makes glove-host and moves the child there.
 * The three controllers are not required ("": this host's cgroup2 tree may
 * have none of them). Everything made is removed. */
static void test_real_move(void **state) {
        (void)state;
        static const char *const mounts[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
        const char *mp = NULL;
        for (size_t i = 0; i < 2 && !mp; i++) {
                struct statfs sf;
                if (statfs(mounts[i], &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
                        mp = mounts[i];
        }
        if (geteuid() != 0) {
                print_message("skipped: moving a process between real cgroups needs root (uid %u)\n",
                              (unsigned)geteuid());
                skip();
        }
        if (!mp) {
                print_message("skipped: no cgroup2 mount at /sys/fs/cgroup/unified or /sys/fs/cgroup\n");
                skip();
        }
        char name[64], dir[128], sub[160];
        snprintf(name, sizeof(name), "glove-hosttest-%d", (int)getpid());
        snprintf(dir, sizeof(dir), "%s/%s", mp, name);
        snprintf(sub, sizeof(sub), "%s/glove-host", dir);
        if (mkdir(dir, 0755) < 0) {
                print_message("skipped: cannot create %s: %s\n", dir, strerror(errno));
                skip();
        }
        int pfd[2];
        assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                char b;
                close(pfd[1]);
                (void)!read(pfd[0], &b, 1);
                _exit(0);
        }
        close(pfd[0]);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char pid[24];
        snprintf(pid, sizeof(pid), "%d\n", (int)child);
        int w = dfd >= 0 ? cg_file_write(dfd, "cgroup.procs", pid) : -errno;
        int root = open(mp, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct cg_host_env env = {.uid = 0, .pid = child, .controllers = ""};
        struct glove_cgroup_host *h = NULL;
        struct glove_error e = {0};
        int r = w == 0 && root >= 0 ? cg_host_setup_at(root, name, mp, &env, &h, &e) : -1;
        /* Where the child is now, from the kernel. */
        char cg[512] = "";
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)child);
        FILE *f = fopen(path, "re");
        char line[512];
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0)
                        snprintf(cg, sizeof(cg), "%s", line + 3);
        if (f)
                fclose(f);
        char left[64] = "x";
        if (dfd >= 0)
                (void)cg_file_read(dfd, "cgroup.procs", left, sizeof(left));
        /* Clean up before asserting: the child goes, then both cgroups. */
        close(pfd[1]);
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        glove_cgroup_host_free(h);
        bool sub_removed = rmdir(sub) == 0 || errno == ENOENT;
        assert_int_equal(rmdir(dir), 0);
        if (dfd >= 0)
                close(dfd);
        assert_int_equal(w, 0);
        if (r < 0)
                fail_msg("cg_host_setup_at: %s: %s", e.code ? e.code : "?", e.message);
        assert_non_null(h);
        char want[128];
        snprintf(want, sizeof(want), "/%s/glove-host\n", name);
        size_t cl = strlen(cg), wl = strlen(want);
        if (cl < wl || strcmp(cg + cl - wl, want) != 0)
                fail_msg("the child is in %s, not in .../%s/glove-host", cg, name);
        assert_string_equal(left, ""); /* the delegated cgroup is empty */
        assert_true(sub_removed);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_subgroup_layout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_subgroup_layout_enabled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_252_layout_moves, setup, teardown),
                cmocka_unit_test_setup_teardown(test_252_move_not_done, setup, teardown),
                cmocka_unit_test_setup_teardown(test_252_foreign_pid_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_252_foreign_pid_parent_writable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_subgroup_parent_not_owned, setup, teardown),
                cmocka_unit_test_setup_teardown(test_subgroup_parent_not_delegated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_subgroup_parent_busy, setup, teardown),
                cmocka_unit_test_setup_teardown(test_replaced_parent_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_not_applicable, setup, teardown),
                cmocka_unit_test(test_create_pinned_mismatch),
                cmocka_unit_test(test_real_move),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

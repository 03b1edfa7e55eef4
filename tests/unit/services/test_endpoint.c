/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove/services/endpoint.h on real directories and sockets: the pin and
 * each refusal, identity drift between pin and connect, reopen with the
 * recorded identities, the upstream peer's uid, and the grant check by
 * identity (the parent, the grandparent, "/", the socket, a ".." spelling,
 * a bind mount of the parent, an unrelated sibling). Cases that need
 * another uid's files run as root and are skipped with a printed reason
 * otherwise; the bind mount is made in a private mount namespace (inside
 * a new user namespace when not root).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "glove/services/endpoint.h"
#include "helpers.h"

#define NOBODY 65534

struct env {
        char dir[FIXTURE_PATH_MAX];  /* 0700, the test's own */
        char svc[FIXTURE_PATH_MAX];  /* dir/svc: the socket's parent, 0700 */
        char sock[FIXTURE_PATH_MAX]; /* dir/svc/up.sock */
        int listen_fd;
};

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        assert_non_null(e);
        fixture_tmpdir(e->dir, "endpoint");
        fixture_join(e->svc, e->dir, "svc");
        assert_int_equal(mkdir(e->svc, 0700), 0);
        fixture_join(e->sock, e->svc, "up.sock");
        e->listen_fd = fixture_listen(e->sock, 0600);
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        if (e->listen_fd >= 0)
                close(e->listen_fd);
        fixture_rm_rf(e->dir);
        free(e);
        return 0;
}

static struct glove_services_endpoint *pin_ok(const char *path, uid_t uid) {
        struct glove_error err = { 0 };
        struct glove_services_endpoint *ep = NULL;
        expect_ok(glove_services_endpoint_pin(path, uid, &ep, &err), err);
        assert_non_null(ep);
        return ep;
}

static void expect_pin(const char *path, uid_t uid, int want_r, const char *want_code) {
        struct glove_error err = { 0 };
        struct glove_services_endpoint *ep = (void *)0x1;
        expect_error(glove_services_endpoint_pin(path, uid, &ep, &err), err, want_r, want_code);
        assert_null(ep);
}

static void test_pin(void **state) {
        struct env *e = *state;
        struct glove_services_endpoint *ep = pin_ok(e->sock, geteuid());
        struct stat st, pst;
        assert_int_equal(lstat(e->sock, &st), 0);
        assert_int_equal(stat(e->svc, &pst), 0);
        const struct glove_services_identity *s = glove_services_endpoint_socket_identity(ep);
        assert_int_equal(s->dev, st.st_dev);
        assert_int_equal(s->ino, st.st_ino);
        assert_int_equal(s->uid, st.st_uid);
        assert_int_equal(s->mode, st.st_mode);
        assert_int_equal(s->nlink, 1);
        const struct glove_services_identity *p = glove_services_endpoint_parent_identity(ep);
        assert_int_equal(p->ino, pst.st_ino);
        assert_int_equal(p->mode & 07777, 0700);
        assert_string_equal(glove_services_endpoint_socket_name(ep), "up.sock");
        assert_string_equal(glove_services_endpoint_socket_path(ep), e->sock);
        assert_int_equal(glove_services_endpoint_uid(ep), geteuid());
        struct stat fst;
        assert_int_equal(fstat(glove_services_endpoint_parent_fd(ep), &fst), 0);
        assert_int_equal(fst.st_ino, pst.st_ino);
        assert_true(fcntl(glove_services_endpoint_parent_fd(ep), F_GETFD) & FD_CLOEXEC);
        struct glove_error err = { 0 };
        expect_ok(glove_services_endpoint_check(ep, &err), err);
        glove_services_endpoint_free(ep);
        glove_services_endpoint_free(NULL);
}

static void test_pin_refusals(void **state) {
        struct env *e = *state;
        char path[FIXTURE_PATH_MAX];
        expect_pin("relative/up.sock", geteuid(), -EINVAL, "services.endpoint_path");
        fixture_join(path, e->svc, "../svc/up.sock");
        expect_pin(path, geteuid(), -EINVAL, "services.endpoint_path");
        fixture_join(path, e->svc, "missing.sock");
        expect_pin(path, geteuid(), -ENOENT, "services.endpoint_missing");
        fixture_join(path, e->dir, "nodir/up.sock");
        expect_pin(path, geteuid(), -ENOENT, "services.endpoint_parent");

        /* A symbolic link as the parent, and as the socket. */
        char lnk[FIXTURE_PATH_MAX];
        fixture_join(lnk, e->dir, "link");
        assert_int_equal(symlink("svc", lnk), 0);
        fixture_join(path, lnk, "up.sock");
        expect_pin(path, geteuid(), -ENOTDIR, "services.endpoint_parent"); /* final component */
        char inner[FIXTURE_PATH_MAX];
        fixture_join(inner, e->dir, "link/up.sock/x");
        expect_pin(inner, geteuid(), -ELOOP, "services.endpoint_parent"); /* inner component */
        fixture_join(lnk, e->svc, "alias.sock");
        assert_int_equal(symlink("up.sock", lnk), 0);
        expect_pin(lnk, geteuid(), -EINVAL, "services.endpoint_not_socket");

        /* A regular file. */
        fixture_join(path, e->svc, "file.sock");
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        expect_pin(path, geteuid(), -EINVAL, "services.endpoint_not_socket");

        /* The socket's mode and links. */
        assert_int_equal(chmod(e->sock, 0660), 0);
        expect_pin(e->sock, geteuid(), -EPERM, "services.endpoint_mode");
        assert_int_equal(chmod(e->sock, 0600), 0);
        fixture_join(path, e->svc, "hard.sock");
        assert_int_equal(link(e->sock, path), 0);
        expect_pin(e->sock, geteuid(), -EPERM, "services.endpoint_links");
        assert_int_equal(unlink(path), 0);

        /* The parent's mode: group-writable, then only group-readable. */
        assert_int_equal(chmod(e->svc, 0770), 0);
        expect_pin(e->sock, geteuid(), -EPERM, "services.endpoint_parent_mode");
        assert_int_equal(chmod(e->svc, 0750), 0);
        expect_pin(e->sock, geteuid(), -EPERM, "services.endpoint_parent_mode");
        assert_int_equal(chmod(e->svc, 0700), 0);

        /* Another service uid owns neither. */
        expect_pin(e->sock, geteuid() + 1, -EPERM, "services.endpoint_parent_owner");
}

static void test_pin_owner(void **state) {
        struct env *e = *state;
        SKIP_UNLESS_ROOT("a socket of another owner needs chown (root)");
        assert_int_equal(chown(e->sock, NOBODY, NOBODY), 0);
        expect_pin(e->sock, geteuid(), -EPERM, "services.endpoint_owner");
}

/* Replaces the socket at path by a new one (a new inode); returns its
 * listening descriptor. */
static int replace_socket(const char *path) {
        assert_int_equal(unlink(path), 0);
        return fixture_listen(path, 0600);
}

static void test_connect(void **state) {
        struct env *e = *state;
        struct glove_services_endpoint *ep = pin_ok(e->sock, geteuid());
        struct glove_error err = { 0 };
        int fd = -1;
        expect_ok(glove_services_endpoint_connect(ep, glove_time_monotonic_ms() + 5000, &fd, &err), err);
        assert_true(fd >= 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
        /* The connection reaches the listener: bytes go through. */
        int c = accept4(e->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(c >= 0);
        assert_int_equal(send(fd, "ping", 4, MSG_NOSIGNAL), 4);
        char buf[8];
        assert_int_equal(recv(c, buf, sizeof(buf), 0), 4);
        assert_memory_equal(buf, "ping", 4);
        close(c);
        close(fd);

        /* A deadline already passed. */
        glove_error_clear(&err);
        expect_error(glove_services_endpoint_connect(ep, glove_time_monotonic_ms() - 1, &fd, &err), err, -ETIMEDOUT,
                     "services.timeout");
        assert_int_equal(fd, -1);

        /* The socket file stays but nobody listens. */
        close(e->listen_fd);
        e->listen_fd = -1;
        glove_error_clear(&err);
        expect_error(glove_services_endpoint_connect(ep, 0, &fd, &err), err, -ECONNREFUSED,
                     "services.upstream_unavailable");
        glove_services_endpoint_free(ep);
}

static void test_replaced(void **state) {
        struct env *e = *state;
        struct glove_services_endpoint *ep = pin_ok(e->sock, geteuid());
        struct glove_services_identity parent = *glove_services_endpoint_parent_identity(ep);
        struct glove_services_identity sock = *glove_services_endpoint_socket_identity(ep);

        /* Reopen with the recorded identities works. */
        struct glove_error err = { 0 };
        struct glove_services_endpoint *again = NULL;
        expect_ok(glove_services_endpoint_reopen(e->sock, &parent, &sock, geteuid(), &again, &err), err);
        glove_services_endpoint_free(again);

        /* The old listener stays open until the new socket exists, so the
         * file system cannot hand the new socket the old inode number. */
        int old = e->listen_fd;
        e->listen_fd = replace_socket(e->sock);
        close(old);
        expect_error(glove_services_endpoint_check(ep, &err), err, -ESTALE, "services.endpoint_replaced");
        glove_error_clear(&err);
        int fd = -1;
        expect_error(glove_services_endpoint_connect(ep, glove_time_monotonic_ms() + 5000, &fd, &err), err, -ESTALE,
                     "services.endpoint_replaced");
        assert_int_equal(fd, -1);
        /* The new socket was never connected to. */
        struct pollfd p = { .fd = e->listen_fd, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);

        glove_error_clear(&err);
        again = (void *)0x1;
        expect_error(glove_services_endpoint_reopen(e->sock, &parent, &sock, geteuid(), &again, &err), err, -ESTALE,
                     "services.endpoint_replaced");
        assert_null(again);

        /* A parent mode change is drift too. */
        glove_services_endpoint_free(ep);
        ep = pin_ok(e->sock, geteuid());
        assert_int_equal(chmod(e->svc, 0500), 0);
        glove_error_clear(&err);
        expect_error(glove_services_endpoint_check(ep, &err), err, -ESTALE, "services.endpoint_replaced");
        assert_int_equal(chmod(e->svc, 0700), 0);
        /* A vanished socket. */
        assert_int_equal(unlink(e->sock), 0);
        glove_error_clear(&err);
        expect_error(glove_services_endpoint_connect(ep, 0, &fd, &err), err, -ESTALE, "services.endpoint_replaced");
        glove_services_endpoint_free(ep);
}

static void test_peer_uid(void **state) {
        struct env *e = *state;
        SKIP_UNLESS_ROOT("a socket file of another uid than its listener needs chown (root)");
        /* The files belong to nobody, the listener is this (root) process. */
        assert_int_equal(chown(e->svc, NOBODY, NOBODY), 0);
        assert_int_equal(chown(e->sock, NOBODY, NOBODY), 0);
        struct glove_services_endpoint *ep = pin_ok(e->sock, NOBODY);
        struct glove_error err = { 0 };
        int fd = -1;
        expect_error(glove_services_endpoint_connect(ep, glove_time_monotonic_ms() + 5000, &fd, &err), err, -EPERM,
                     "services.peer_uid");
        assert_int_equal(fd, -1);
        glove_services_endpoint_free(ep);
}

/* ---- the grant check ---- */

static int opath(const char *path) {
        int fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0)
                fail_msg("open %s: %s", path, strerror(errno));
        return fd;
}

static void expect_grant(const struct glove_services_endpoint *const *eps, size_t n, const char *path,
                         bool refused, size_t want_which) {
        int fd = opath(path);
        struct glove_error err = { 0 };
        size_t which = 99;
        int r = glove_services_grant_check(fd, eps, n, &which, &err);
        close(fd);
        if (!refused) {
                if (r != 0)
                        fail_msg("%s: refused: %s (%s)", path, err.code, err.message);
                return;
        }
        if (r != -EPERM || !err.code || strcmp(err.code, "services.grant_exposes_socket") != 0)
                fail_msg("%s: want services.grant_exposes_socket, got %d %s", path, r, err.code ? err.code : "(none)");
        assert_int_equal(which, want_which);
}

static void test_grant(void **state) {
        struct env *e = *state;
        char sib[FIXTURE_PATH_MAX], sub[FIXTURE_PATH_MAX], dotdot[FIXTURE_PATH_MAX + 16];
        fixture_join(sib, e->dir, "sibling");
        assert_int_equal(mkdir(sib, 0700), 0);
        fixture_join(sub, e->svc, "below");
        assert_int_equal(mkdir(sub, 0700), 0);
        struct glove_services_endpoint *ep = pin_ok(e->sock, geteuid());
        const struct glove_services_endpoint *eps[] = { ep };

        expect_grant(eps, 1, e->svc, true, 0);   /* the parent */
        expect_grant(eps, 1, e->dir, true, 0);   /* the grandparent */
        char up[FIXTURE_PATH_MAX];
        snprintf(up, sizeof(up), "%s", e->dir);
        *strrchr(up, '/') = '\0';
        expect_grant(eps, 1, up[0] ? up : "/", true, 0); /* an ancestor further up */
        expect_grant(eps, 1, "/", true, 0);      /* the root */
        expect_grant(eps, 1, e->sock, true, 0);  /* the socket itself */
        snprintf(dotdot, sizeof(dotdot), "%s/../svc", sib);
        expect_grant(eps, 1, dotdot, true, 0);   /* the parent spelled with ".." */
        snprintf(dotdot, sizeof(dotdot), "%s/..", sub);
        expect_grant(eps, 1, dotdot, true, 0);
        expect_grant(eps, 1, sib, false, 0);     /* beside: allowed */
        expect_grant(eps, 1, sub, false, 0);     /* below the parent: allowed */

        /* A second endpoint elsewhere: which names the exposed one. */
        char other_dir[FIXTURE_PATH_MAX], other_sock[FIXTURE_PATH_MAX];
        fixture_join(other_dir, sib, "svc2");
        assert_int_equal(mkdir(other_dir, 0700), 0);
        fixture_join(other_sock, other_dir, "b.sock");
        int l2 = fixture_listen(other_sock, 0600);
        struct glove_services_endpoint *ep2 = pin_ok(other_sock, geteuid());
        const struct glove_services_endpoint *two[] = { ep, ep2 };
        expect_grant(two, 2, sib, true, 1);
        expect_grant(two, 2, e->svc, true, 0);
        expect_grant(two, 2, sub, false, 0);
        glove_services_endpoint_free(ep2);
        close(l2);

        /* No endpoint: nothing to expose. */
        expect_grant(NULL, 0, "/", false, 0);
        glove_services_endpoint_free(ep);
}

/* In a child with a private mount namespace (in a new user namespace when
 * not root): bind-mounts the parent at another place and checks that a
 * grant of it is refused, then that a grant of an unrelated directory with
 * a bind mount of the parent inside is refused too. Exit status 0 when both
 * are refused, 2 or 4 when one is allowed, 3 on setup failure. */
static int bind_child(struct env *e, const struct glove_services_endpoint *ep) {
        int flags = CLONE_NEWNS | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
        if (unshare(flags) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 3;
        char target[FIXTURE_PATH_MAX];
        fixture_join(target, e->dir, "bound");
        if (mkdir(target, 0700) < 0 || mount(e->svc, target, NULL, MS_BIND, NULL) < 0)
                return 3;
        int fd = open(target, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return 3;
        const struct glove_services_endpoint *eps[] = { ep };
        struct glove_error err = { 0 };
        int r = glove_services_grant_check(fd, eps, 1, NULL, &err);
        close(fd);
        if (r != -EPERM || strcmp(err.code, "services.grant_exposes_socket") != 0)
                return 2;
        /* A directory unrelated to the socket, but with a bind mount of the
         * socket's directory inside it: refused by its mount point. */
        char outer[FIXTURE_PATH_MAX], inner[FIXTURE_PATH_MAX];
        fixture_tmpdir(outer, "outer");
        fixture_join(inner, outer, "inner");
        if (mkdir(inner, 0700) < 0 || mount(e->svc, inner, NULL, MS_BIND, NULL) < 0)
                return 3;
        fd = open(outer, O_PATH | O_CLOEXEC);
        struct glove_error err2 = { 0 };
        r = fd < 0 ? -EBADF : glove_services_grant_check(fd, eps, 1, NULL, &err2);
        (void)umount2(inner, MNT_DETACH);
        fixture_rm_rf(outer);
        if (r != -EPERM || strcmp(err2.code, "services.grant_exposes_socket") != 0 ||
            !strstr(err2.message, "a mount inside the grant"))
                return 4;
        return 0;
}

static void test_grant_bind_mount(void **state) {
        struct env *e = *state;
        struct glove_services_endpoint *ep = pin_ok(e->sock, geteuid());
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(bind_child(e, ep));
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        glove_services_endpoint_free(ep);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 3) {
                fprintf(stderr, "skipped: no private mount namespace here (unshare%s or mount --bind failed)\n",
                        geteuid() == 0 ? "" : " of a user namespace");
                skip();
        }
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_pin, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pin_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pin_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(test_connect, setup, teardown),
                cmocka_unit_test_setup_teardown(test_replaced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_peer_uid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_grant, setup, teardown),
                cmocka_unit_test_setup_teardown(test_grant_bind_mount, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/keeper/keeper.h, the launch's inherited
 * stream and local-service descriptors (glove_keeper_launch_encode and
 * _decode): their place in the launch's descriptors, what each side checks
 * and refuses. test_keeper.c holds the round trip of everything else and a
 * real keeper handing the stream to its agent. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/container/seccomp.h"
#include "glove/keeper/keeper.h"
#include "glove/net/rule.h"

/* Encodes a into a launch and decodes it back with fds (NULL: the encoded
 * ones); returns the decode's result, *l the launch. */
static int launch_cycle(const struct glove_keeper_args *a, const int *fds_override, struct glove_keeper_launch **l,
                        int *fds, size_t *n, struct glove_error *e) {
        int memfd = -1;
        int r = glove_keeper_launch_encode(a, &memfd, fds, n, e);
        if (r < 0)
                return r;
        struct stat st;
        assert_int_equal(fstat(memfd, &st), 0);
        char *text = malloc((size_t)st.st_size);
        assert_int_equal(pread(memfd, text, (size_t)st.st_size, 0), st.st_size);
        close(memfd);
        r = glove_keeper_launch_decode(text, (size_t)st.st_size, fds_override ? fds_override : fds, *n, l, e);
        free(text);
        return r;
}

/* The inherited stream travels after the held descriptors and before the
 * services; what it cannot be is refused on both sides. */
static void test_launch_inherited_stream(void **state) {
        (void)state;
        char dir[] = "/tmp/glove-launch-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int sv[2], lv[2], hold[2], guest[2], svc[2], seq[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lv), 0);
        assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, guest), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, svc), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, seq), 0);
        static char *argv[] = { "/usr/bin/agent", NULL };
        static char *envp[] = { "HOME=/home/agent", NULL };
        struct glove_session_desc d = {
                .argv = argv, .envp = envp, .seccomp = &glove_seccomp_prebuilt_managed_inherited,
                .terminal = GLOVE_TERMINAL_PIPES, .channel_stdin_fd = -1, .channel_stdout_fd = -1,
                .has_inherit_fd = true, .inherit_fd = guest[1],
        };
        struct glove_keeper_args a = { .session_id = "s-1", .stem = "k0123", .desc = &d, .channel_fd = sv[1],
                                       .listen_fd = lv[0], .dir_fd = dfd, .hold_fds = hold, .n_hold_fds = 2,
                                       .service_fds = &svc[0], .n_service_fds = 1 };
        int fds[GLOVE_KEEPER_LAUNCH_FDS_MAX];
        size_t n = 0;
        struct glove_keeper_launch *l = NULL;
        struct glove_error e = { 0 };
        assert_int_equal(launch_cycle(&a, NULL, &l, fds, &n, &e), 0);
        int want[] = { sv[1], lv[0], dfd, hold[0], hold[1], guest[1], svc[0] };
        assert_int_equal(n, 7);
        assert_memory_equal(fds, want, sizeof(want));
        const struct glove_keeper_args *b = glove_keeper_launch_args(l);
        assert_true(b->desc->has_inherit_fd);
        assert_int_equal(b->desc->inherit_fd, guest[1]);
        assert_ptr_equal(b->desc->seccomp, &glove_seccomp_prebuilt_managed_inherited);
        assert_null(b->desc->egress);
        assert_null(b->services_json);
        assert_int_equal(b->n_service_fds, 1);
        assert_int_equal(b->service_fds[0], svc[0]);
        assert_int_equal(b->n_hold_fds, 2);
        glove_keeper_launch_free(l);
        l = NULL;
        /* managed_unix travels by name too. */
        d.has_inherit_fd = false;
        d.seccomp = &glove_seccomp_prebuilt_managed_unix;
        assert_int_equal(launch_cycle(&a, NULL, &l, fds, &n, &e), 0);
        assert_ptr_equal(glove_keeper_launch_args(l)->desc->seccomp, &glove_seccomp_prebuilt_managed_unix);
        assert_false(glove_keeper_launch_args(l)->desc->has_inherit_fd);
        assert_int_equal(n, 6);
        glove_keeper_launch_free(l);
        l = NULL;
        d.has_inherit_fd = true;
        d.seccomp = &glove_seccomp_prebuilt_managed_inherited;
        /* At decode, the descriptor at the stream's place must be an AF_UNIX
         * stream socket, and the services' sockets. */
        int bad[GLOVE_KEEPER_LAUNCH_FDS_MAX];
        assert_int_equal(launch_cycle(&a, NULL, &l, fds, &n, &e), 0);
        glove_keeper_launch_free(l);
        l = NULL;
        memcpy(bad, fds, sizeof(fds));
        bad[5] = seq[0];
        int memfd = -1;
        glove_error_clear(&e);
        assert_true(launch_cycle(&a, bad, &l, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_invalid");
        assert_null(l);
        memcpy(bad, fds, sizeof(fds));
        bad[5] = hold[0];
        glove_error_clear(&e);
        assert_true(launch_cycle(&a, bad, &l, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_invalid");
        memcpy(bad, fds, sizeof(fds));
        bad[6] = hold[1];
        glove_error_clear(&e);
        assert_true(launch_cycle(&a, bad, &l, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_invalid");
        /* Too few descriptors for the stream and the services. */
        glove_error_clear(&e);
        assert_int_equal(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e), 0);
        struct stat st;
        assert_int_equal(fstat(memfd, &st), 0);
        char *text = malloc((size_t)st.st_size);
        assert_int_equal(pread(memfd, text, (size_t)st.st_size, 0), st.st_size);
        close(memfd);
        assert_true(glove_keeper_launch_decode(text, (size_t)st.st_size, fds, 6, &l, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_invalid");
        free(text);
        /* At encode: not an AF_UNIX stream, not a socket, too many, too long. */
        d.inherit_fd = seq[0];
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch");
        d.inherit_fd = hold[0];
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch");
        d.inherit_fd = guest[1];
        a.service_fds = hold;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch");
        int many[GLOVE_KEEPER_SERVICE_FDS_MAX + 1];
        for (size_t i = 0; i < GLOVE_KEEPER_SERVICE_FDS_MAX + 1; i++)
                many[i] = svc[0];
        a.service_fds = many;
        a.n_service_fds = GLOVE_KEEPER_SERVICE_FDS_MAX + 1;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch");
        a.n_service_fds = GLOVE_KEEPER_SERVICE_FDS_MAX;
        assert_int_equal(launch_cycle(&a, NULL, &l, fds, &n, &e), 0);
        assert_int_equal(n, 3 + 2 + 1 + GLOVE_KEEPER_SERVICE_FDS_MAX); /* no audit log here */
        glove_keeper_launch_free(l);
        l = NULL;
        a.service_fds = &svc[0];
        a.n_service_fds = 1;
        char *longer = malloc(GLOVE_KEEPER_SERVICES_JSON_MAX + 2);
        memset(longer, ' ', GLOVE_KEEPER_SERVICES_JSON_MAX + 1);
        longer[GLOVE_KEEPER_SERVICES_JSON_MAX + 1] = '\0';
        a.services_json = longer;
        glove_error_clear(&e);
        assert_int_equal(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e), -E2BIG);
        assert_string_equal(e.code, "keeper.launch");
        longer[GLOVE_KEEPER_SERVICES_JSON_MAX] = '\0'; /* exactly the bound */
        assert_int_equal(launch_cycle(&a, NULL, &l, fds, &n, &e), 0);
        assert_int_equal(strlen(glove_keeper_launch_args(l)->services_json), GLOVE_KEEPER_SERVICES_JSON_MAX);
        glove_keeper_launch_free(l);
        l = NULL;
        free(longer);
        a.services_json = NULL;
        /* The stream goes only with its filter, offline. */
        d.seccomp = &glove_seccomp_prebuilt_managed;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_unsupported");
        d.seccomp = &glove_seccomp_prebuilt_managed_inherited;
        struct glove_net_policy eg;
        glove_net_policy_init(&eg);
        assert_int_equal(glove_net_policy_add_rule(&eg, "api.example.com:443", false, &e), 0);
        d.egress = &eg;
        glove_error_clear(&e);
        assert_true(glove_keeper_launch_encode(&a, &memfd, fds, &n, &e) < 0);
        assert_string_equal(e.code, "keeper.launch_unsupported");
        glove_net_policy_free(&eg);
        int *const all[] = { sv, lv, hold, guest, svc, seq };
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
                close(all[i][0]);
                close(all[i][1]);
        }
        close(dfd);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_launch_inherited_stream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

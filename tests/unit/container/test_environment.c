/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/environment.h (glove_env_build). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/container/environment.h"

/* A host environment full of things that must not reach the agent. */
static const char *const host_full[] = {
        "PATH=/home/user/evil/bin:/usr/bin",
        "HOME=/home/user",
        "TMPDIR=/home/user/tmp",
        "LANG=de_DE.UTF-8",
        "TERM=xterm-256color",
        "USER=user",
        "SSH_AUTH_SOCK=/run/user/1000/ssh-agent",
        "AWS_SECRET_ACCESS_KEY=s3cr3t-aws",
        "ANTHROPIC_API_KEY=sk-secret-anthropic",
        "LD_PRELOAD=/home/user/evil.so",
        "GLOVE_SANDBOXED=0",
        "GLOVE_CONFIG=/home/user/.config/glove",
        "FOO=foo value with = and spaces",
        "BAR=",
        "FOOBAR=not-foo",
        "_UNDER9=u",
        NULL,
};

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Asserts env holds exactly the entries of expected (any order), no more,
 * NULL-terminated, and count matches. */
static void assert_env_exactly(const struct glove_env *env, const char *const *expected) {
        size_t n = 0;
        while (expected[n])
                n++;
        assert_non_null(env->envp);
        assert_int_equal(env->count, n);
        assert_null(env->envp[n]);
        const char **got = calloc(n + 1, sizeof(char *));
        const char **want = calloc(n + 1, sizeof(char *));
        assert_non_null(got);
        assert_non_null(want);
        for (size_t i = 0; i < n; i++) {
                assert_non_null(env->envp[i]);
                got[i] = env->envp[i];
                want[i] = expected[i];
        }
        qsort(got, n, sizeof(char *), cmp_str);
        qsort(want, n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(got[i], want[i]);
        free(got);
        free(want);
}

static void test_defaults_only(void **state) {
        (void)state;
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host_full, NULL, 0, &env, &err), 0);
        assert_false(glove_error_is_set(&err));
        assert_env_exactly(&env, (const char *const[]){
                                         "PATH=/usr/local/bin:/usr/bin:/bin",
                                         "HOME=/home/agent",
                                         "TMPDIR=/tmp",
                                         "LANG=de_DE.UTF-8",
                                         "TERM=xterm-256color",
                                         "GLOVE_SANDBOXED=1",
                                         NULL,
                                 });
        glove_env_free(&env);
        assert_null(env.envp);
        assert_int_equal(env.count, 0);
        /* Freeing twice is harmless (empty again). */
        glove_env_free(&env);
}

static void test_named_variables_pass(void **state) {
        (void)state;
        const char *names[] = {"FOO", "BAR", "_UNDER9", "SSH_AUTH_SOCK"};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host_full, names, 4, &env, &err), 0);
        assert_env_exactly(&env, (const char *const[]){
                                         "PATH=/usr/local/bin:/usr/bin:/bin",
                                         "HOME=/home/agent",
                                         "TMPDIR=/tmp",
                                         "LANG=de_DE.UTF-8",
                                         "TERM=xterm-256color",
                                         "GLOVE_SANDBOXED=1",
                                         "FOO=foo value with = and spaces",
                                         "BAR=",
                                         "_UNDER9=u",
                                         "SSH_AUTH_SOCK=/run/user/1000/ssh-agent",
                                         NULL,
                                 });
        assert_string_equal(glove_env_lookup((const char *const *)env.envp, "FOO"), "foo value with = and spaces");
        assert_string_equal(glove_env_lookup((const char *const *)env.envp, "BAR"), "");
        glove_env_free(&env);
}

static void test_nothing_else_leaks(void **state) {
        (void)state;
        const char *names[] = {"FOO"};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host_full, names, 1, &env, &err), 0);
        const char *secrets[] = {"s3cr3t", "sk-secret", "evil", "/home/user", "ssh-agent", "not-foo", "USER=",
                                 "LD_PRELOAD", "AWS_", "ANTHROPIC", "GLOVE_CONFIG", "GLOVE_SANDBOXED=0"};
        for (size_t i = 0; i < env.count; i++)
                for (size_t k = 0; k < sizeof(secrets) / sizeof(secrets[0]); k++)
                        if (strstr(env.envp[i], secrets[k]))
                                fail_msg("entry \"%s\" leaks \"%s\" from the host", env.envp[i], secrets[k]);
        glove_env_free(&env);
}

static void test_lang_default_and_term_absent(void **state) {
        (void)state;
        const char *const host[] = {"PATH=/x", "SECRET=1", NULL};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host, NULL, 0, &env, &err), 0);
        assert_env_exactly(&env, (const char *const[]){
                                         "PATH=/usr/local/bin:/usr/bin:/bin",
                                         "HOME=/home/agent",
                                         "TMPDIR=/tmp",
                                         "LANG=C.UTF-8",
                                         "GLOVE_SANDBOXED=1",
                                         NULL,
                                 });
        assert_null(glove_env_lookup((const char *const *)env.envp, "TERM"));
        glove_env_free(&env);
}

static void test_empty_host_env(void **state) {
        (void)state;
        const char *const host[] = {NULL};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host, NULL, 0, &env, &err), 0);
        assert_env_exactly(&env, (const char *const[]){
                                         "PATH=/usr/local/bin:/usr/bin:/bin",
                                         "HOME=/home/agent",
                                         "TMPDIR=/tmp",
                                         "LANG=C.UTF-8",
                                         "GLOVE_SANDBOXED=1",
                                         NULL,
                                 });
        glove_env_free(&env);
}

static void test_term_copied_lang_default(void **state) {
        (void)state;
        const char *const host[] = {"TERM=dumb", NULL};
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host, NULL, 0, &env, &err), 0);
        assert_env_exactly(&env, (const char *const[]){
                                         "PATH=/usr/local/bin:/usr/bin:/bin",
                                         "HOME=/home/agent",
                                         "TMPDIR=/tmp",
                                         "LANG=C.UTF-8",
                                         "TERM=dumb",
                                         "GLOVE_SANDBOXED=1",
                                         NULL,
                                 });
        glove_env_free(&env);
}

/* Expects glove_env_build to fail with code/errnum, name the offending entry
 * in its message, and leave out empty. */
static void expect_error(const char *const *host, const char *const *names, size_t n, int errnum, const char *code,
                         const char *offender) {
        struct glove_env env = {.envp = (char **)0x1, .count = 99};
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host, names, n, &env, &err), -errnum);
        assert_non_null(err.code);
        assert_string_equal(err.code, code);
        assert_int_equal(err.errnum, errnum);
        if (offender && !strstr(err.message, offender))
                fail_msg("message \"%s\" does not name \"%s\"", err.message, offender);
        assert_null(env.envp);
        assert_int_equal(env.count, 0);
}

static void test_assignment(void **state) {
        (void)state;
        const char *n1[] = {"FOO=bar"};
        expect_error(host_full, n1, 1, EINVAL, "env.assignment", "FOO=bar");
        const char *n2[] = {"FOO", "=x"};
        expect_error(host_full, n2, 2, EINVAL, "env.assignment", "=x");
        /* Even when the name part is reserved: the assignment is what is wrong. */
        const char *n3[] = {"PATH=/evil"};
        expect_error(host_full, n3, 1, EINVAL, "env.assignment", "PATH=/evil");
}

static void test_bad_name(void **state) {
        (void)state;
        const char *bad[] = {"", "1FOO", "FOO-BAR", "FOO BAR", "FOO.BAR", "F\xc3\xa9", "$FOO", "FOO\n"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *names[] = {"FOO", bad[i]};
                expect_error(host_full, names, 2, EINVAL, "env.bad_name", i ? bad[i] : NULL);
        }
}

static void test_name_length(void **state) {
        (void)state;
        char name[GLOVE_ENV_NAME_MAX + 2];
        memset(name, 'N', GLOVE_ENV_NAME_MAX);
        name[GLOVE_ENV_NAME_MAX] = '\0';
        char entry[GLOVE_ENV_NAME_MAX + 8];
        snprintf(entry, sizeof(entry), "%s=v", name);
        const char *const host[] = {entry, NULL};
        const char *names[] = {name};
        struct glove_env env;
        struct glove_error err = {0};
        /* Exactly GLOVE_ENV_NAME_MAX bytes: accepted. */
        assert_int_equal(glove_env_build(host, names, 1, &env, &err), 0);
        assert_string_equal(glove_env_lookup((const char *const *)env.envp, name), "v");
        glove_env_free(&env);
        /* One more: refused as a bad name. */
        name[GLOVE_ENV_NAME_MAX] = 'N';
        name[GLOVE_ENV_NAME_MAX + 1] = '\0';
        char entry2[GLOVE_ENV_NAME_MAX + 8];
        snprintf(entry2, sizeof(entry2), "%s=v", name);
        const char *const host2[] = {entry2, NULL};
        expect_error(host2, names, 1, EINVAL, "env.bad_name", NULL);
}

static void test_reserved(void **state) {
        (void)state;
        const char *reserved[] = {"PATH", "HOME", "TMPDIR", "TERM", "LANG", "GLOVE_SANDBOXED", "GLOVE_CONFIG", "GLOVE_",
                                  "GLOVE_ANYTHING_AT_ALL"};
        for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
                const char *names[] = {reserved[i]};
                /* Reserved whether or not the host sets it. */
                expect_error(host_full, names, 1, EINVAL, "env.reserved", reserved[i]);
                const char *const empty[] = {NULL};
                expect_error(empty, names, 1, EINVAL, "env.reserved", reserved[i]);
        }
}

static void test_unset(void **state) {
        (void)state;
        const char *n1[] = {"NOT_SET_ANYWHERE"};
        expect_error(host_full, n1, 1, EINVAL, "env.unset", "NOT_SET_ANYWHERE");
        /* FOOBAR is set and FOO is set, but FOOB is not: no prefix matching. */
        const char *n2[] = {"FOOB"};
        expect_error(host_full, n2, 1, EINVAL, "env.unset", "FOOB");
        /* An entry without '=' does not set a variable. */
        const char *const host[] = {"NOVALUE", "OTHER=1", NULL};
        const char *n3[] = {"NOVALUE"};
        expect_error(host, n3, 1, EINVAL, "env.unset", "NOVALUE");
}

static void test_duplicate(void **state) {
        (void)state;
        const char *names[] = {"FOO", "BAR", "FOO"};
        expect_error(host_full, names, 3, EINVAL, "env.duplicate", "FOO");
}

static void test_value_too_long(void **state) {
        (void)state;
        size_t vmax = GLOVE_ENV_VALUE_MAX;
        char *entry = malloc(4 + vmax + 2);
        assert_non_null(entry);
        memcpy(entry, "BIG=", 4);
        memset(entry + 4, 'v', vmax);
        entry[4 + vmax] = '\0';
        const char *const host[] = {entry, NULL};
        const char *names[] = {"BIG"};
        struct glove_env env;
        struct glove_error err = {0};
        /* Exactly GLOVE_ENV_VALUE_MAX bytes: accepted whole. */
        assert_int_equal(glove_env_build(host, names, 1, &env, &err), 0);
        const char *v = glove_env_lookup((const char *const *)env.envp, "BIG");
        assert_non_null(v);
        assert_int_equal(strlen(v), vmax);
        glove_env_free(&env);
        /* One byte more: refused, never truncated. */
        entry[4 + vmax] = 'v';
        entry[4 + vmax + 1] = '\0';
        expect_error(host, names, 1, E2BIG, "env.too_long", "BIG");
        free(entry);
}

static void test_too_many_names(void **state) {
        (void)state;
        enum { N = GLOVE_ENV_NAMES_MAX + 1 };
        static char entries[N][16];
        static char namebuf[N][16];
        const char *host[N + 1];
        const char *names[N];
        for (int i = 0; i < N; i++) {
                snprintf(namebuf[i], sizeof(namebuf[i]), "V%d", i);
                snprintf(entries[i], sizeof(entries[i]), "V%d=%d", i, i);
                host[i] = entries[i];
                names[i] = namebuf[i];
        }
        host[N] = NULL;
        struct glove_env env;
        struct glove_error err = {0};
        assert_int_equal(glove_env_build(host, names, GLOVE_ENV_NAMES_MAX, &env, &err), 0);
        assert_int_equal(env.count, 5 + GLOVE_ENV_NAMES_MAX); /* 5 defaults (no TERM in host) */
        assert_string_equal(glove_env_lookup((const char *const *)env.envp, "V63"), "63");
        assert_null(env.envp[env.count]);
        glove_env_free(&env);
        expect_error(host, names, N, E2BIG, "env.too_long", NULL);
}

static void test_lookup(void **state) {
        (void)state;
        const char *const envp[] = {"A=1", "AB=2", "B", "C==3", "A=shadowed", NULL};
        assert_string_equal(glove_env_lookup(envp, "A"), "1");
        assert_string_equal(glove_env_lookup(envp, "AB"), "2");
        assert_null(glove_env_lookup(envp, "B"));
        assert_string_equal(glove_env_lookup(envp, "C"), "=3");
        assert_null(glove_env_lookup(envp, "ABC"));
        assert_null(glove_env_lookup(envp, "Z"));
        assert_null(glove_env_lookup(NULL, "A"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults_only),
                cmocka_unit_test(test_named_variables_pass),
                cmocka_unit_test(test_nothing_else_leaks),
                cmocka_unit_test(test_lang_default_and_term_absent),
                cmocka_unit_test(test_empty_host_env),
                cmocka_unit_test(test_term_copied_lang_default),
                cmocka_unit_test(test_assignment),
                cmocka_unit_test(test_bad_name),
                cmocka_unit_test(test_name_length),
                cmocka_unit_test(test_reserved),
                cmocka_unit_test(test_unset),
                cmocka_unit_test(test_duplicate),
                cmocka_unit_test(test_value_too_long),
                cmocka_unit_test(test_too_many_names),
                cmocka_unit_test(test_lookup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/net/proxy_env.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "glove/net/proxy_env.h"

static void test_token_generate(void **state) {
        (void)state;
        char a[GLOVE_NET_TOKEN_LEN + 1], b[GLOVE_NET_TOKEN_LEN + 1];
        assert_int_equal(glove_net_token_generate(a, NULL), 0);
        assert_int_equal(glove_net_token_generate(b, NULL), 0);
        assert_int_equal(strlen(a), GLOVE_NET_TOKEN_LEN);
        assert_string_not_equal(a, b);
        for (size_t i = 0; i < GLOVE_NET_TOKEN_LEN; i++)
                assert_non_null(strchr("0123456789abcdef", a[i]));
        assert_int_equal(glove_net_token_check(a, NULL), 0);
}

static void test_env_entries(void **state) {
        (void)state;
        struct glove_net_proxy_env env;
        const char *token = "0123456789abcdef";
        assert_int_equal(glove_net_proxy_env_build(token, 40123, 0, &env, NULL), 0);
        static const char *const want[] = {
                "HTTPS_PROXY=http://glove:0123456789abcdef@127.0.0.1:40123",
                "https_proxy=http://glove:0123456789abcdef@127.0.0.1:40123",
                "HTTP_PROXY=http://glove:0123456789abcdef@127.0.0.1:40123",
                "http_proxy=http://glove:0123456789abcdef@127.0.0.1:40123",
                "ALL_PROXY=http://glove:0123456789abcdef@127.0.0.1:40123",
                "all_proxy=http://glove:0123456789abcdef@127.0.0.1:40123",
                "NO_PROXY=",
                "no_proxy=",
        };
        for (size_t i = 0; i < GLOVE_NET_PROXY_ENV_COUNT; i++)
                assert_string_equal(env.envp[i], want[i]);
        assert_null(env.envp[GLOVE_NET_PROXY_ENV_COUNT]);

        char longest[GLOVE_NET_TOKEN_MAX + 1];
        memset(longest, 'Z', GLOVE_NET_TOKEN_MAX);
        longest[GLOVE_NET_TOKEN_MAX] = '\0';
        assert_int_equal(glove_net_proxy_env_build(longest, 65535, 0, &env, NULL), 0);
        assert_int_equal(strlen(env.envp[0]), strlen("HTTPS_PROXY=http://glove:@127.0.0.1:65535") + GLOVE_NET_TOKEN_MAX);
}

/* With the MCP HTTP endpoint: NO_PROXY names its two spellings with its port,
 * never a bare loopback host; the proxy variables are unchanged. */
static void test_env_endpoint(void **state) {
        (void)state;
        struct glove_net_proxy_env env;
        assert_int_equal(glove_net_proxy_env_build("abc", 3128, 8931, &env, NULL), 0);
        assert_string_equal(env.envp[2], "HTTP_PROXY=http://glove:abc@127.0.0.1:3128");
        assert_string_equal(env.envp[6], "NO_PROXY=127.0.0.1:8931,localhost:8931");
        assert_string_equal(env.envp[7], "no_proxy=127.0.0.1:8931,localhost:8931");
        char longest[GLOVE_NET_TOKEN_MAX + 1];
        memset(longest, 'Z', GLOVE_NET_TOKEN_MAX);
        longest[GLOVE_NET_TOKEN_MAX] = '\0';
        assert_int_equal(glove_net_proxy_env_build(longest, 65535, 65535, &env, NULL), 0);
        assert_string_equal(env.envp[7], "no_proxy=127.0.0.1:65535,localhost:65535");
}

static void test_env_refusals(void **state) {
        (void)state;
        struct glove_net_proxy_env env;
        static const char *const bad[] = { "", "a b", "a@b", "a:b", "a/b", "a%40", "tok\n", "\xc3\xa9" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_error err = { 0 };
                assert_int_equal(glove_net_proxy_env_build(bad[i], 1, 0, &env, &err), -EINVAL);
                assert_string_equal(err.code, "egress.bad_token");
        }
        struct glove_error err = { 0 };
        assert_int_equal(glove_net_proxy_env_build(NULL, 1, 0, &env, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_token");
        char too_long[GLOVE_NET_TOKEN_MAX + 2];
        memset(too_long, 'a', sizeof(too_long) - 1);
        too_long[sizeof(too_long) - 1] = '\0';
        glove_error_clear(&err);
        assert_int_equal(glove_net_proxy_env_build(too_long, 1, 0, &env, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_token");
        glove_error_clear(&err);
        assert_int_equal(glove_net_proxy_env_build("abc", 0, 0, &env, &err), -EINVAL);
        assert_string_equal(err.code, "egress.bad_port");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_token_generate),
                cmocka_unit_test(test_env_entries),
                cmocka_unit_test(test_env_endpoint),
                cmocka_unit_test(test_env_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

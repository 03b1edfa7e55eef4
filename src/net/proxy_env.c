/* SPDX-License-Identifier: Apache-2.0 */
/* Proxy credentials and the agent's proxy environment
 * (include/glove/net/proxy_env.h). */
#include "glove/net/proxy_env.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "glove/base/digest.h"

int glove_net_token_generate(char out[GLOVE_NET_TOKEN_LEN + 1], struct glove_error *err) {
        uint8_t raw[GLOVE_NET_TOKEN_BYTES];
        int r = glove_digest_random(raw, sizeof(raw), err);
        if (r < 0)
                return r;
        r = glove_digest_hex_encode(raw, sizeof(raw), out, GLOVE_NET_TOKEN_LEN + 1);
        memset(raw, 0, sizeof(raw));
        return r;
}

static bool token_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '.' || c == '_' || c == '~';
}

int glove_net_token_check(const char *token, struct glove_error *err) {
        if (!token || !*token)
                return glove_error_set(err, EINVAL, "egress.bad_token", "the proxy token is empty");
        size_t n = strnlen(token, GLOVE_NET_TOKEN_MAX + 1);
        if (n > GLOVE_NET_TOKEN_MAX)
                return glove_error_set(err, EINVAL, "egress.bad_token", "the proxy token is longer than %d characters",
                                       GLOVE_NET_TOKEN_MAX);
        for (size_t i = 0; i < n; i++)
                if (!token_char(token[i]))
                        return glove_error_set(err, EINVAL, "egress.bad_token",
                                               "the proxy token has a character outside [A-Za-z0-9._~-]");
        return 0;
}

int glove_net_proxy_env_build(const char *token, uint16_t port, uint16_t endpoint_port, struct glove_net_proxy_env *out,
                              struct glove_error *err) {
        static const char *const names[GLOVE_NET_PROXY_ENV_COUNT] = {
                "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                "ALL_PROXY",   "all_proxy",   "NO_PROXY",   "no_proxy",
        };
        int r = glove_net_token_check(token, err);
        if (r < 0)
                return r;
        if (port == 0)
                return glove_error_set(err, EINVAL, "egress.bad_port", "the listener port is 0");
        memset(out, 0, sizeof(*out));
        for (size_t i = 0; i < GLOVE_NET_PROXY_ENV_COUNT; i++) {
                bool no_proxy = strcasecmp(names[i], "NO_PROXY") == 0;
                /* The endpoint's two spellings with its port, never a bare
                 * loopback host: with "127.0.0.1" alone a client would skip
                 * the proxy for every port of it, and so never reach a
                 * service on the host's loopback that a rule grants
                 * (--egress-allow-private): the sandbox's loopback has
                 * nothing but Glove's listeners. */
                int n = no_proxy && endpoint_port
                                ? snprintf(out->entries[i], sizeof(out->entries[i]), "%s=127.0.0.1:%u,localhost:%u", names[i],
                                           (unsigned)endpoint_port, (unsigned)endpoint_port)
                        : no_proxy ? snprintf(out->entries[i], sizeof(out->entries[i]), "%s=", names[i])
                                 : snprintf(out->entries[i], sizeof(out->entries[i]),
                                            "%s=http://" GLOVE_NET_PROXY_USER ":%s@127.0.0.1:%u", names[i], token,
                                            (unsigned)port);
                if (n < 0 || (size_t)n >= sizeof(out->entries[i]))
                        return glove_error_set(err, EINVAL, "egress.bad_token", "the proxy token is too long");
                out->envp[i] = out->entries[i];
        }
        out->envp[GLOVE_NET_PROXY_ENV_COUNT] = NULL;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The per-run proxy credentials and the agent's proxy environment (issue 4,
 * "Audited egress"; docs/egress.md, "What the agent sees").
 *
 * The proxy demands `Proxy-Authorization: Basic base64("glove:" TOKEN)`
 * (RFC 7617) with a token that is random per run. The agent learns it only
 * through its environment:
 *
 *   HTTPS_PROXY https_proxy HTTP_PROXY http_proxy ALL_PROXY all_proxy
 *       = http://glove:TOKEN@127.0.0.1:PORT
 *   NO_PROXY no_proxy = ""   (nothing bypasses the proxy), or, when the run
 *       serves its MCP HTTP endpoint on the sandbox's loopback,
 *       "127.0.0.1:EPORT,localhost:EPORT" (that endpoint only: clients that
 *       honour a port in NO_PROXY go to it directly; the others reach it
 *       through the proxy, which routes it, relay.h)
 *
 * Stable error codes: egress.bad_token (-EINVAL: a token that is empty,
 * longer than GLOVE_NET_TOKEN_MAX, or has a byte outside [A-Za-z0-9._~-], so
 * it could not stand in a URL unescaped), egress.bad_port (-EINVAL, port 0),
 * digest.crypto_failed (-EIO, from glove_digest_random). Every err argument
 * may be NULL.
 */

#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* User name of the proxy credentials. */
#define GLOVE_NET_PROXY_USER "glove"
/* Random bytes in a generated token, and the token's length in characters
 * (lowercase hex, no NUL). */
#define GLOVE_NET_TOKEN_BYTES 32
#define GLOVE_NET_TOKEN_LEN (2 * GLOVE_NET_TOKEN_BYTES)
/* Longest token the relay and the environment accept, in characters. */
#define GLOVE_NET_TOKEN_MAX 128
/* Number of variables, and the longest "NAME=VALUE" entry with its NUL. */
#define GLOVE_NET_PROXY_ENV_COUNT 8
#define GLOVE_NET_PROXY_ENV_ENTRY_MAX (sizeof("HTTPS_PROXY=http://" GLOVE_NET_PROXY_USER ":@127.0.0.1:65535") + GLOVE_NET_TOKEN_MAX)
_Static_assert(GLOVE_NET_PROXY_ENV_ENTRY_MAX >= sizeof("no_proxy=127.0.0.1:65535,localhost:65535"), "NO_PROXY fits");

/*
 * Writes a fresh token of GLOVE_NET_TOKEN_LEN lowercase hex characters and a
 * NUL into out (GLOVE_NET_TOKEN_BYTES from glove_digest_random). Returns 0 or
 * -EIO (digest.crypto_failed).
 */
int glove_net_token_generate(char out[GLOVE_NET_TOKEN_LEN + 1], struct glove_error *err);

/* Returns 0 when token is acceptable (see egress.bad_token), else -EINVAL. */
int glove_net_token_check(const char *token, struct glove_error *err);

struct glove_net_proxy_env {
        char entries[GLOVE_NET_PROXY_ENV_COUNT][GLOVE_NET_PROXY_ENV_ENTRY_MAX];
        /* NULL-terminated; points into entries (valid as long as the struct). */
        const char *envp[GLOVE_NET_PROXY_ENV_COUNT + 1];
};

/*
 * Fills *out with the eight "NAME=VALUE" entries above for the listener port
 * (host byte order, 1..65535) reported by glove_net_listener_open and the
 * run's token; endpoint_port is the MCP HTTP endpoint's port (host byte
 * order; 0: none, NO_PROXY empty). No allocation. Returns 0 or -EINVAL (egress.bad_token,
 * egress.bad_port).
 */
int glove_net_proxy_env_build(const char *token, uint16_t port, uint16_t endpoint_port, struct glove_net_proxy_env *out,
                              struct glove_error *err);

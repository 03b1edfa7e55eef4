/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TCP confinement of a session with a network namespace (egress, the MCP
 * endpoint): PID 1's last setup step, after the listener helpers exist,
 * confines itself, and so the agent it forks, to connecting to those
 * listeners only (glove/net/confine.h; docs/limits.md, "Host-wide kernel
 * resources bounded per run").
 */
#include "internal.h"

#include <errno.h>

#include "glove/base/cleanup.h"
#include "glove/net/confine.h"

static int pid1_confine(const struct glove_sandbox_config *cfg, struct glove_error *err) {
        const struct glove_session_confine *c = cfg->pid1_ctx;
        if (c->chain) {
                /* The hook before ours finds its own context. */
                struct glove_sandbox_config prev = *cfg;
                prev.pid1_ctx = c->chain_ctx;
                int r = c->chain(&prev, err);
                if (r < 0)
                        return r;
        }
        int r = glove_net_tcp_confine(c->ports, c->n_ports, err);
        /* A kernel without Landlock's TCP rights: the run keeps the memory
         * cgroup's bound only (documented; glove doctor reports the ABI). */
        return r == -EOPNOTSUPP ? 0 : r;
}

void glove_session_confine_setup(struct glove_session_confine *c, const uint16_t *ports, size_t n,
                                 struct glove_sandbox_config *cfg) {
        c->n_ports = 0;
        for (size_t i = 0; i < n && c->n_ports < GLOVE_ELEMENTSOF(c->ports); i++)
                c->ports[c->n_ports++] = ports[i];
        c->chain = cfg->pid1_setup;
        c->chain_ctx = cfg->pid1_ctx;
        cfg->pid1_setup = pid1_confine;
        cfg->pid1_ctx = c;
}

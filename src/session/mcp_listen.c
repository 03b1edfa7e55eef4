/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-sandbox MCP endpoint's listener (session.h mcp_listen;
 * docs/mcp-mediation.md, "Endpoints"): the egress helper's mechanism
 * (glove/net/helper.h) on another port and channel.
 *
 *   Glove (host): glove run's endpoint     sandbox network namespace
 *   (HTTP server, stdio relays) <--- SCM_RIGHTS --- helper: 127.0.0.1:PORT
 *                                                   ^ agent's HTTP client,
 *                                                     the in-sandbox command
 */
#include "internal.h"

#include <errno.h>
#include <unistd.h>

#include "glove/net/helper.h"

/* In PID 1 (pid1_setup), after egress's own helper when there is one. */
static int pid1_mcp(const struct glove_sandbox_config *cfg, struct glove_error *err) {
        const struct glove_session_mcp *m = cfg->pid1_ctx;
        if (m->chain) {
                int r = m->chain(cfg, err);
                if (r < 0)
                        return r;
        }
        int r = glove_net_loopback_up(err);
        if (r < 0)
                return r;
        int listen_fd = -1;
        r = glove_net_listener_open(m->port, &listen_fd, NULL, err);
        if (r < 0)
                return r;
        pid_t pid = _Fork();
        if (pid < 0) {
                int e = errno;
                close(listen_fd);
                return glove_error_set(err, e, "egress.helper", "fork: %s", glove_errno_text(e));
        }
        if (pid == 0)
                glove_session_listener_helper("glove-mcp-listen", cfg->pid1_fd2, listen_fd);
        close(listen_fd);
        return 0;
}

void glove_session_mcp_setup(struct glove_session_mcp *m, int fd, uint16_t port, struct glove_sandbox_config *cfg) {
        m->enabled = true;
        m->port = port;
        m->chain = cfg->pid1_setup;
        cfg->pid1_setup = pid1_mcp;
        cfg->pid1_ctx = m;
        cfg->pid1_fd2 = fd;
}

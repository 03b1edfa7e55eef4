/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to the session module. */

#include <stdatomic.h>
#include <stdbool.h>

#include "glove/audit/log.h"
#include "glove/container/environment.h"
#include "glove/container/sandbox.h"
#include "glove/net/proxy_env.h"
#include "glove/net/relay.h"
#include "glove/net/rule.h"
#include "glove/session/session.h"

struct glove_session_egress {
        bool enabled;
        struct glove_net_policy policy;
        char token[GLOVE_NET_TOKEN_LEN + 1];
        int host_fd, sandbox_fd;               /* the SCM_RIGHTS channel's two ends */
        struct glove_net_relay *relay;
        struct glove_audit_log *audit;         /* borrowed; may be NULL or fd -1 */
        struct glove_sandbox *sb;              /* to stop the agent when an audit append fails */
        atomic_bool audit_failed;
        atomic_bool audit_full;                /* the audit budget was passed (audit_failed too) */
        uint64_t audit_max;                    /* bytes the audit log may grow by; 0: no bound */
        uint64_t audit_base;                   /* its size when the session started */
        const char *upstream;                  /* "upstream" of each record, or NULL; borrowed */
        bool report;                           /* each refusal also said on stderr (desc egress_report) */
        atomic_uint_fast64_t refused;          /* refusals so far (counted when report) */
        /* The run's MCP HTTP endpoint, set before setup (desc
         * mcp_listen_http): its port (0: none), named in NO_PROXY and routed
         * by the relay, and a sending end of its listener channel (owned;
         * given to the relay by start). */
        uint16_t endpoint_port;
        int endpoint_fd;
};

/* Empties e (no egress). */
void glove_session_egress_init(struct glove_session_egress *e);

/* With a policy (moved into e): the token, the channel, the proxy variables
 * appended to env, the egress seccomp program and PID 1's helper hook in
 * cfg. Without: cfg stays offline. Errors: "egress.*". */
int glove_session_egress_setup(struct glove_session_egress *e, struct glove_net_policy *policy, struct glove_audit_log *audit,
                               struct glove_env *env, struct glove_sandbox_config *cfg, struct glove_error *err);

/* After the perimeter is ready: starts the relay on Glove's end. */
int glove_session_egress_start(struct glove_session_egress *e, struct glove_sandbox *sb, struct glove_error *err);

/* Stops the relay (cuts open tunnels, joins its threads), closes everything. */
void glove_session_egress_stop(struct glove_session_egress *e);

/* The in-sandbox MCP endpoint listener (session.h mcp_listen). */
struct glove_session_mcp {
        bool enabled;
        uint16_t port;
        /* The hook that was in cfg before (egress's), run first. */
        int (*chain)(const struct glove_sandbox_config *cfg, struct glove_error *err);
};

/* Adds the listener's helper to cfg (pid1_setup chained after egress's,
 * pid1_fd2 = fd, pid1_ctx = m). m must outlive the spawn. */
void glove_session_mcp_setup(struct glove_session_mcp *m, int fd, uint16_t port, struct glove_sandbox_config *cfg);

/* TCP confinement (confine.c; glove/net/confine.h): PID 1's last setup
 * step. */
struct glove_session_confine {
        uint16_t ports[2];                     /* the listeners the agent may connect to */
        size_t n_ports;
        /* The hook and context that were in cfg before (egress's, the MCP
         * endpoint's), run first. */
        int (*chain)(const struct glove_sandbox_config *cfg, struct glove_error *err);
        void *chain_ctx;
};

/* Makes cfg's PID 1 confine itself after the hooks already there: TCP
 * connect only to ports (n of them, at most 2 kept), TCP bind nowhere.
 * Without Landlock's TCP rights (ABI < 4) nothing is confined. c must
 * outlive the spawn. */
void glove_session_confine_setup(struct glove_session_confine *c, const uint16_t *ports, size_t n,
                                 struct glove_sandbox_config *cfg);

/* egress.c: the body of a listener helper forked by the sandbox's PID 1
 * (the egress proxy's, the MCP endpoint's): keeps only channel (as fd 3)
 * and listen_fd (as fd 4), takes title as its process title, installs the
 * agent's egress lockdown and passes every accepted connection over the
 * channel (glove_net_listener_run) until it fails. Never returns: exit 0
 * when the channel closes, 1 on any failure. */
__attribute__((noreturn)) void glove_session_listener_helper(const char *title, int channel, int listen_fd);

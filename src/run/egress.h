/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Audited egress for glove exec and glove run (issue "limits", Audited
 * egress; spec architecture.md, Platform isolation: network): wires the net
 * module's pieces into one run. Internal to the run module.
 *
 *   Glove (host)                         sandbox network namespace
 *   relay (threads) <--- SCM_RIGHTS ---  helper: 127.0.0.1:GLOVE_EGRESS_PORT
 *     | CONNECT checked, resolved,          ^ accepts the agent's connections
 *     v connected, audited                  agent (HTTPS_PROXY=...)
 *   destination
 */

#include <stdatomic.h>
#include <stdbool.h>

#include "glove/audit/log.h"
#include "glove/container/environment.h"
#include "glove/container/sandbox.h"
#include "glove/net/proxy_env.h"
#include "glove/net/relay.h"
#include "glove/net/rule.h"
#include "glove/run/exec_options.h"

/* The helper's port on the sandbox's own loopback (the namespace is
 * private, so nothing else can hold it). */
#define GLOVE_EGRESS_PORT 3128

struct glove_egress {
        bool enabled;
        struct glove_net_policy policy;
        char token[GLOVE_NET_TOKEN_LEN + 1];
        int host_fd, sandbox_fd;               /* the SCM_RIGHTS channel's two ends */
        struct glove_net_relay *relay;
        struct glove_audit_log *audit;         /* borrowed; fd -1 without --audit-log */
        struct glove_sandbox *sb;              /* to stop the agent when an audit append fails */
        atomic_bool audit_failed;
};

/* Empties e (no egress). */
void glove_egress_init(struct glove_egress *e);

/*
 * With --egress-allow: parses the rules, makes the token and the channel,
 * adds the proxy variables to env, selects the egress seccomp program and
 * installs the helper hook in cfg. Without: leaves cfg offline. Errors: the
 * net module's "egress.*" codes.
 */
int glove_egress_setup(struct glove_egress *e, const struct glove_exec_options *opts, struct glove_audit_log *audit,
                       struct glove_env *env, struct glove_sandbox_config *cfg, struct glove_error *err);

/* After spawn: starts the relay on Glove's end. */
int glove_egress_start(struct glove_egress *e, struct glove_sandbox *sb, struct glove_error *err);

/* Stops the relay (cuts open tunnels, joins threads) and closes everything. */
void glove_egress_stop(struct glove_egress *e);

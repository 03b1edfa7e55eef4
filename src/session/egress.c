/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Audited egress of one session (issue "limits", Audited egress; spec
 * architecture.md, Platform isolation: network): wires the net module's
 * pieces into a sandbox.
 *
 *   Glove (host)                         sandbox network namespace
 *   relay (threads) <--- SCM_RIGHTS ---  helper: 127.0.0.1:GLOVE_SESSION_EGRESS_PORT
 *     | CONNECT checked, resolved,          ^ accepts the agent's connections
 *     v connected, audited                  agent (HTTPS_PROXY=...)
 *   destination
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/proctitle.h"
#include "glove/base/shown.h"
#include "glove/container/seccomp.h"
#include "glove/net/helper.h"
#include "glove/net/proxy_env.h"

void glove_session_egress_init(struct glove_session_egress *e) {
        memset(e, 0, sizeof(*e));
        e->host_fd = e->sandbox_fd = e->endpoint_fd = -1;
        glove_net_policy_init(&e->policy);
        atomic_store(&e->audit_failed, false);
        atomic_store(&e->audit_full, false);
        atomic_store(&e->refused, 0);
}

/* In the helper process, forked by PID 1: nothing but the channel and the
 * listening socket, the agent's own lockdown, then accept-and-pass forever.
 * Shared by the egress proxy's helper and the MCP endpoint's (internal.h). */
__attribute__((noreturn)) void glove_session_listener_helper(const char *title, int channel, int listen_fd) {
        glove_proctitle_set(title);
        /* Move both above the target numbers first: either may be 3 or 4. */
        int c = fcntl(channel, F_DUPFD, 10), l = fcntl(listen_fd, F_DUPFD, 10);
        if (c < 0 || l < 0 || dup2(c, 3) < 0 || dup2(l, 4) < 0)
                _exit(1);
        syscall(SYS_close_range, 5, ~0U, 0);
        if (glove_sandbox_lockdown(&glove_seccomp_prebuilt_egress) < 0)
                _exit(1);
        struct glove_error err = {0};
        _exit(glove_net_listener_run(3, 4, &err) < 0 ? 1 : 0);
}

/* pid1_setup: runs in PID 1 with its capabilities in the sandbox's
 * namespaces. The helper is one PID inside the run's pid limit. */
static int pid1_egress(const struct glove_sandbox_config *cfg, struct glove_error *err) {
        int r = glove_net_loopback_up(err);
        if (r < 0)
                return r;
        int listen_fd = -1;
        uint16_t port = 0;
        r = glove_net_listener_open(GLOVE_SESSION_EGRESS_PORT, &listen_fd, &port, err);
        if (r < 0)
                return r;
        pid_t pid = _Fork(); /* in PID 1: no atfork handlers or allocator locks */
        if (pid < 0) {
                int e = errno;
                close(listen_fd);
                return glove_error_set(err, e, "egress.helper", "fork: %s", glove_errno_text(e));
        }
        if (pid == 0)
                glove_session_listener_helper("glove-egress", cfg->pid1_fd, listen_fd);
        close(listen_fd);
        return 0;
}

/* Writes line (len bytes, under PIPE_BUF) to descriptor 2 when it can take
 * it now; never blocks (a relay thread must not wait on a terminal). */
static void say_now(const char *line, size_t len) {
        struct pollfd p = {.fd = 2, .events = POLLOUT};
        if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT))
                (void)!write(2, line, len);
}

/* What an operator reads of a refusal: the reason's name, and for the
 * common ones what to change. */
static void say_refused(const struct glove_session_egress *e, const struct glove_net_egress_event *ev) {
        /* Shown, and cut ("...") to keep the line short. */
        char method[40], host[300], addr[80], why[200];
        glove_shown(ev->method && *ev->method ? ev->method : "(unread request)", method, sizeof(method));
        glove_shown(ev->host && *ev->host ? ev->host : "?", host, sizeof(host));
        glove_shown(ev->address ? ev->address : "", addr, sizeof(addr));
        const char *reason = glove_net_egress_reason_name(ev->reason);
        if (ev->reason == GLOVE_NET_EGRESS_NOT_ALLOWED && e->upstream)
                snprintf(why, sizeof(why), "%s: no --upstream-egress %s:HOST[:PORT] names it", reason, e->upstream);
        else if (ev->reason == GLOVE_NET_EGRESS_NOT_ALLOWED)
                snprintf(why, sizeof(why), "%s: no --egress-allow HOST[:PORT] names it", reason);
        else if (ev->reason == GLOVE_NET_EGRESS_PRIVATE_ADDRESS)
                snprintf(why, sizeof(why), "%s: it resolves to %s, which egress never reaches", reason, *addr ? addr : "?");
        else
                snprintf(why, sizeof(why), "%s", reason);
        char line[1024];
        int n = snprintf(line, sizeof(line), "glove: warning: egress.denied: %s %s:%u refused with %d (%s)\n", method, host,
                         (unsigned)ev->port, ev->http_status, why);
        if (n > 0)
                say_now(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Called on a relay thread for every egress event (one at a time: the relay
 * serializes them). */
static int on_event(const struct glove_net_egress_event *ev, void *userdata) {
        struct glove_session_egress *e = userdata;
        if (e->report && ev->phase == GLOVE_NET_EGRESS_DENY &&
            atomic_fetch_add(&e->refused, 1) < GLOVE_SESSION_EGRESS_REPORTED)
                say_refused(e, ev);
        if (!e->audit || e->audit->fd < 0)
                return 0;
        _cleanup_json_ json_t *f = json_pack("{s:s,s:s,s:I,s:s,s:s,s:i,s:s,s:I,s:s,s:s,s:I,s:I,s:I}", "phase",
                                             glove_net_egress_phase_name(ev->phase), "decision", ev->allowed ? "allow" : "deny",
                                             "connection", (json_int_t)ev->connection_id,
                                             "method", ev->method ? ev->method : "", "host", ev->host, "port", (int)ev->port,
                                             "reason", glove_net_egress_reason_name(ev->reason), "http_status",
                                             (json_int_t)ev->http_status, "address", ev->address, "address_class",
                                             ev->address_class, "bytes_up", (json_int_t)ev->bytes_up, "bytes_down",
                                             (json_int_t)ev->bytes_down, "duration_ms", (json_int_t)ev->duration_ms);
        if (f && e->upstream && json_object_set_new(f, "upstream", json_string(e->upstream)) < 0)
                f = (json_decref(f), NULL);
        /* Not egress: the run's own MCP endpoint (docs/egress.md, "The MCP
         * endpoint through the proxy"). */
        if (f && ev->mcp_endpoint && json_object_set_new(f, "route", json_string("mcp_endpoint")) < 0)
                f = (json_decref(f), NULL);
        struct glove_error err = {0};
        struct stat st;
        bool full = false;
        int r = f ? glove_audit_append(e->audit, "egress", f, &err) : -ENOMEM;
        if (r == 0 && e->audit_max && fstat(e->audit->fd, &st) == 0 &&
            (uint64_t)st.st_size > e->audit_base + e->audit_max) {
                /* The record that passed the budget is kept; the session stops. */
                full = true;
                atomic_store(&e->audit_full, true);
        }
        if (r < 0 || full) {
                /* Fail closed: the connection is refused and the session stops
                 * (pidfd_send_signal is safe from any thread). */
                if (!atomic_exchange(&e->audit_failed, true) && e->sb)
                        (void)glove_sandbox_signal(e->sb, SIGKILL);
                return -1;
        }
        return 0;
}

int glove_session_egress_setup(struct glove_session_egress *e, struct glove_net_policy *policy, struct glove_audit_log *audit,
                               struct glove_env *env, struct glove_sandbox_config *cfg, struct glove_error *err) {
        e->audit = audit;
        cfg->pid1_fd = -1;
        if (!policy)
                return 0;
        struct stat st;
        if (audit && audit->fd >= 0 && fstat(audit->fd, &st) == 0)
                e->audit_base = (uint64_t)st.st_size;
        e->policy = *policy; /* moved */
        glove_net_policy_init(policy);
        int r = glove_net_token_generate(e->token, err);
        if (r < 0)
                return r;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return glove_error_set(err, errno, "egress.channel", "socketpair: %s", strerror(errno));
        e->host_fd = sv[0];
        e->sandbox_fd = sv[1];
        struct glove_net_proxy_env penv;
        r = glove_net_proxy_env_build(e->token, GLOVE_SESSION_EGRESS_PORT, e->endpoint_port, &penv, err);
        for (size_t i = 0; r == 0 && penv.envp[i]; i++)
                r = glove_env_append(env, penv.envp[i], err);
        explicit_bzero(&penv, sizeof(penv));
        if (r < 0)
                return r;
        cfg->envp = env->envp;
        cfg->seccomp = &glove_seccomp_prebuilt_egress;
        cfg->pid1_fd = e->sandbox_fd;
        cfg->pid1_setup = pid1_egress;
        e->enabled = true;
        return 0;
}

int glove_session_egress_start(struct glove_session_egress *e, struct glove_sandbox *sb, struct glove_error *err) {
        e->sb = sb;
        if (!e->enabled)
                return 0;
        glove_closep(&e->sandbox_fd); /* PID 1 has its copy */
        e->sandbox_fd = -1;
        struct glove_net_relay_config cfg = {
                .policy = &e->policy,
                .token = e->token,
                .audit = on_event,
                .audit_userdata = e,
                .endpoint_port = e->endpoint_port,
                .endpoint_fd = e->endpoint_fd,
        };
        if (e->endpoint_port)
                e->endpoint_fd = -1; /* the relay owns it in every case */
        int fd = e->host_fd;
        e->host_fd = -1; /* the relay owns it in every case */
        return glove_net_relay_start(&cfg, fd, &e->relay, err);
}

void glove_session_egress_stop(struct glove_session_egress *e) {
        glove_net_relay_stop(e->relay);
        e->relay = NULL;
        /* The relay's threads are gone: the count is final. Said once. */
        uint64_t refused = atomic_exchange(&e->refused, 0);
        if (e->report && refused > GLOVE_SESSION_EGRESS_REPORTED) {
                char line[256];
                int n = snprintf(line, sizeof(line), "glove: warning: egress.denied: %" PRIu64 " more connection%s refused, not shown (%s)\n",
                                 refused - GLOVE_SESSION_EGRESS_REPORTED, refused - GLOVE_SESSION_EGRESS_REPORTED == 1 ? "" : "s",
                                 e->audit && e->audit->fd >= 0 ? "the audit log has each as an egress record"
                                                                : "--audit-log records each");
                if (n > 0)
                        say_now(line, (size_t)n);
        }
        glove_closep(&e->host_fd);
        glove_closep(&e->sandbox_fd);
        glove_closep(&e->endpoint_fd);
        e->host_fd = e->sandbox_fd = e->endpoint_fd = -1;
        glove_net_policy_free(&e->policy);
        explicit_bzero(e->token, sizeof(e->token));
}

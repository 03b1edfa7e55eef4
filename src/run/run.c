/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `glove run`: the front end of the MCP gateway between a contained agent and
 * host-side upstream MCP servers (issue "glove run"; spec architecture.md,
 * MCP request flow). It parses the options, builds the policy and the
 * upstream specs, sets up the sandbox, creates the gateway
 * (glove/kernel/gateway.h) on one sd-event loop with the agent's pipes, and
 * maps the outcome to Glove's exit status and messages. The loop multiplexes
 * the agent's channel, every upstream's channel, call timeouts, forwarded
 * signals and process exits, so a slow upstream never stalls another.
 */
#include "glove/run/run.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "glove/audit/log.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/shown.h"
#include "glove/base/time.h"
#include "glove/container/seccomp.h"
#include "glove/kernel/calls.h"
#include "glove/kernel/gateway.h"
#include "glove/mcp/upstream.h"
#include "glove/policy/policy.h"
#include "glove/session/session.h"
#include "cli_terminal.h"
#include "exec_records.h"
#include "launch.h"
#include "mcp_endpoint.h"
#include "session_front.h"
#include "upstream_sandbox.h"

extern char **environ;

struct run {
        sd_event *event;
        struct glove_launch_signals signals; /* the forwarded signals */
        struct glove_exec_options opts;
        struct glove_launch launch;
        struct glove_policy *policy;
        struct glove_mcp_upstream_spec specs[GLOVE_RUN_UPSTREAMS_MAX];
        bool optional[GLOVE_RUN_UPSTREAMS_MAX];   /* --upstream-optional, by spec */
        bool own_names[GLOVE_RUN_UPSTREAMS_MAX];  /* --upstream-own-names, by spec */
        bool uncontained[GLOVE_RUN_UPSTREAMS_MAX]; /* --upstream-uncontained, by spec */
        size_t n_specs;
        struct glove_kernel_gateway *gw;
        char call_timeout_rule[64];
        /* --mcp-endpoint command/http: the endpoint serving the sandbox's
         * listener, and the host path of the in-sandbox command. */
        struct glove_mcp_endpoint *endpoint;
        char *mcp_command_path;

        /* The sandbox: one session of the engine; the agent's stderr goes to
         * Glove's through the CLI terminal client. */
        struct glove_session *session;
        struct glove_cli_terminal *term;
        bool session_ready, gateway_ready, released, sandbox_gone, gateway_finished;
        struct glove_session_outcome outcome;

        int status;                /* Glove's exit status once decided by a failure; -1 otherwise */
        struct glove_error err;    /* why Glove failed, when it did */
};

/* Stops everything after a failure of Glove (r->err says why): the agent is
 * killed, upstreams are asked to end, and Glove exits 125 once all are gone. */
static void run_fail(struct run *r) {
        if (r->status < 0)
                r->status = GLOVE_EXIT_FAILURE;
        if (r->session && !r->sandbox_gone)
                glove_session_stop(r->session, 0);
        if (r->gw)
                glove_kernel_gateway_stop(r->gw);
}

/* Appends a record (fields stolen). A failed append stops the run (fail
 * closed). Without --audit-log nothing happens. Returns 0 or -errno. */
static int run_audit(struct run *r, const char *event, json_t *fields) {
        _cleanup_json_ json_t *f = fields;
        if (r->launch.audit.fd < 0)
                return 0;
        struct glove_error e = {0};
        int rr = f ? glove_audit_append(&r->launch.audit, event, f, &e)
                   : glove_error_set(&e, ENOMEM, "audit.encode", "cannot build the %s record", event);
        if (rr < 0) {
                glove_error_set(&r->err, e.errnum, e.code, "%s", e.message);
                run_fail(r);
        }
        return rr;
}

/* ------------------------------------------------------------------ options to specs */

static int setup_policy(struct run *r, struct glove_error *err) {
        const struct glove_exec_options *o = &r->opts;
        int rr = glove_policy_new(&r->policy);
        if (rr < 0)
                return glove_error_set(err, -rr, "policy.nomem", "out of memory");
        /* The policy module names the rule; the option is the CLI's word. */
        for (size_t i = 0; i < o->n_allow; i++)
                if ((rr = glove_policy_allow(r->policy, o->allow[i], err)) < 0) {
                        glove_error_prepend_word(err, "--allow");
                        return rr;
                }
        for (size_t i = 0; i < o->n_deny; i++)
                if ((rr = glove_policy_deny(r->policy, o->deny[i], err)) < 0) {
                        glove_error_prepend_word(err, "--deny");
                        return rr;
                }
        for (size_t i = 0; i < o->n_allow_arg; i++)
                if ((rr = glove_policy_allow_arg(r->policy, o->allow_arg[i], err)) < 0) {
                        glove_error_prefix(err, "--allow-arg");
                        return rr;
                }
        static const char *const words[] = {"--allow-prompt", "--deny-prompt", "--allow-prompt-arg", "--allow-resource",
                                            "--deny-resource"};
        for (size_t i = 0; i < o->n_feature_rules; i++) {
                const char *t = o->feature_rules[i].text;
                switch (o->feature_rules[i].kind) {
                case GLOVE_RUN_ALLOW_PROMPT: rr = glove_policy_allow_prompt(r->policy, t, err); break;
                case GLOVE_RUN_DENY_PROMPT: rr = glove_policy_deny_prompt(r->policy, t, err); break;
                case GLOVE_RUN_ALLOW_PROMPT_ARG: rr = glove_policy_allow_prompt_arg(r->policy, t, err); break;
                case GLOVE_RUN_ALLOW_RESOURCE: rr = glove_policy_allow_resource(r->policy, t, err); break;
                case GLOVE_RUN_DENY_RESOURCE: rr = glove_policy_deny_resource(r->policy, t, err); break;
                }
                if (rr < 0) {
                        glove_error_prepend_word(err, words[o->feature_rules[i].kind]);
                        return rr;
                }
        }
        for (size_t i = 0; i < o->n_upstream_allow; i++)
                if ((rr = glove_policy_allow_client(r->policy, o->upstream_allow[i], err)) < 0) {
                        glove_error_prefix(err, "--upstream-allow");
                        return rr;
                }
        if (o->policy_file && (rr = glove_policy_load_file(r->policy, o->policy_file, err)) < 0)
                return rr;
        return 0;
}

/* Each upstream in a sandbox of its own, unless uncontained (audited in
 * upstream_start, and said on stderr). */
static int setup_containment(struct run *r, struct glove_error *err) {
        const char *names[GLOVE_RUN_UPSTREAMS_MAX];
        for (size_t i = 0; i < r->n_specs; i++)
                names[i] = r->specs[i].name;
        int rr = glove_policy_check_sandbox_upstreams(r->policy, names, r->n_specs, err);
        if (rr >= 0)
                rr = glove_run_upstream_sandboxes(&r->opts, r->policy, &r->launch.audit, r->launch.cwd, r->launch.grants.runtime_dir,
                                                  r->specs, r->n_specs, r->uncontained, err);
        for (size_t i = 0; rr >= 0 && i < r->n_specs; i++)
                if (r->uncontained[i])
                        glove_launch_say("glove: warning: upstream.uncontained: upstream %s runs uncontained, on the host with "
                                         "the invoker's full authority\n",
                                         r->specs[i].name);
        return rr;
}

/* --upstream and --upstream-env to upstream specs, looked up in Glove's
 * environment. */
static int setup_specs(struct run *r, struct glove_error *err) {
        const struct glove_exec_options *o = &r->opts;
        const char *const *env = (const char *const *)environ;
        if (o->n_upstreams == 0)
                return glove_error_set(err, EINVAL, "usage.no_upstream", "glove run needs at least one --upstream NAME=CMD[,ARG...]");
        for (size_t i = 0; i < o->n_upstreams; i++) {
                struct glove_mcp_upstream_spec *s = &r->specs[r->n_specs];
                int rr = glove_mcp_upstream_spec_parse(o->upstreams[i], env, s, err);
                r->n_specs++;
                if (rr < 0) {
                        if (strcmp(err->code, "upstream.bad_spec") == 0)
                                glove_error_prepend_word(err, "--upstream");
                        return rr;
                }
                for (size_t k = 0; k + 1 < r->n_specs; k++)
                        if (strcmp(r->specs[k].name, s->name) == 0)
                                return glove_error_set(err, EINVAL, "upstream.duplicate", "upstream name %s given twice", s->name);
        }
        /* --upstream-env and the policy's "env" names of each sandbox. */
        char **envs = NULL;
        size_t n_envs = 0;
        int er = glove_run_upstream_env(o, r->policy, r->specs, r->n_specs, &envs, &n_envs, err);
        for (size_t i = 0; er >= 0 && i < r->n_specs; i++) {
                er = glove_mcp_upstream_spec_build_env(&r->specs[i], env, (const char *const *)envs, n_envs, err);
                if (er < 0)
                        glove_error_prepend_word(err, "--upstream-env");
        }
        glove_run_upstream_env_free(envs);
        if (er < 0)
                return er;
        for (size_t i = 0; i < o->n_upstream_optional; i++) {
                bool known = false;
                for (size_t k = 0; k < r->n_specs; k++)
                        if (strcmp(o->upstream_optional[i], r->specs[k].name) == 0)
                                known = r->optional[k] = true;
                if (!known)
                        return glove_error_set(err, EINVAL, "upstream.bad_optional", "--upstream-optional %s names no --upstream",
                                               o->upstream_optional[i]);
        }
        for (size_t i = 0; i < o->n_upstream_own_names; i++) {
                bool known = false;
                for (size_t k = 0; k < r->n_specs; k++)
                        if (strcmp(o->upstream_own_names[i], r->specs[k].name) == 0)
                                known = r->own_names[k] = true;
                if (!known)
                        return glove_error_set(err, EINVAL, "upstream.bad_own_names", "--upstream-own-names %s names no --upstream",
                                               o->upstream_own_names[i]);
        }
        for (size_t i = 0; i < o->n_upstream_env; i++) {
                const char *colon = strchr(o->upstream_env[i], ':');
                bool known = false;
                for (size_t k = 0; colon && k < r->n_specs; k++)
                        known = known || ((size_t)(colon - o->upstream_env[i]) == strlen(r->specs[k].name) &&
                                          strncmp(o->upstream_env[i], r->specs[k].name, strlen(r->specs[k].name)) == 0);
                if (!known)
                        return glove_error_set(err, EINVAL, "upstream.bad_env", "--upstream-env %s names no --upstream",
                                               o->upstream_env[i]);
        }
        return setup_containment(r, err);
}

/* Every rule (--allow, --deny, --allow-arg, --policy) must name one of the
 * --upstream names: a rule for an upstream that does not exist could never
 * apply ("policy.unknown_upstream"). */
static int check_rule_upstreams(struct run *r, struct glove_error *err) {
        const char *names[GLOVE_RUN_UPSTREAMS_MAX];
        for (size_t i = 0; i < r->n_specs; i++)
                names[i] = r->specs[i].name;
        return glove_policy_check_upstreams(r->policy, names, r->n_specs, err);
}

/* No allow rule at all (none of --allow, nor a policy file's "allow"): the
 * policy is default deny, so the agent will see no tool of any upstream.
 * Said once on stderr, as a warning: a run of prompts or resources only may
 * mean it. */
static void warn_no_tools(const struct run *r) {
        struct glove_policy_rule_ref ref;
        for (size_t i = 0; glove_policy_rule_at(r->policy, i, &ref); i++)
                if (strcmp(ref.kind, "allow") == 0)
                        return;
        glove_launch_say("glove: warning: run.no_tools: no --allow%s allows a tool: the agent will see no tools of the "
                         "%zu upstream%s (default deny); add --allow NAME.TOOL or --allow 'NAME.*'\n",
                         r->opts.policy_file ? " and no \"allow\" of the --policy file" : "", r->n_specs, r->n_specs == 1 ? "" : "s");
}

/* Once every upstream has listed its tools: a rule that matches none of
 * them is most likely a typo. It is a warning (stderr and a
 * "policy_warning" record), not an error: an upstream may add the tool
 * later (notifications/tools/list_changed). Returns 0 or -EIO (the record
 * could not be appended; the run then stops). */
static int warn_unmatched_rules(struct run *r) {
        struct glove_policy_rule_ref ref;
        for (size_t i = 0; glove_policy_rule_at(r->policy, i, &ref); i++) {
                const struct glove_mcp_upstream *u = NULL;
                for (size_t k = 0; k < glove_kernel_gateway_upstreams(r->gw) && !u; k++) {
                        const struct glove_mcp_upstream *c = glove_kernel_gateway_upstream(r->gw, k);
                        const char *n = glove_mcp_upstream_name(c);
                        if (strlen(n) == ref.name_len && strncmp(n, ref.qualified, ref.name_len) == 0)
                                u = c;
                }
                if (!u)
                        continue; /* refused at start (check_rule_upstreams) */
                const json_t *tools = glove_mcp_upstream_tools(u);
                bool matched = ref.wildcard ? tools && json_array_size(tools) > 0
                                            : glove_mcp_upstream_has_tool(u, ref.qualified + ref.name_len + 1);
                if (matched)
                        continue;
                const char *name = glove_mcp_upstream_name(u);
                glove_launch_say("glove: warning: policy.rule_unmatched: %s %s matches no tool that upstream %s lists\n",
                                 ref.kind, ref.qualified, name);
                if (run_audit(r, "policy_warning",
                              json_pack("{s:s,s:s,s:o,s:s}", "code", "policy.rule_unmatched", "kind", ref.kind, "rule",
                                        glove_audit_string(ref.qualified, strlen(ref.qualified)), "upstream", name)) < 0)
                        return -EIO;
        }
        return 0;
}

/* ------------------------------------------------------------------ the gateway's outcomes */

static json_t *launch_fields(struct run *r) {
        char *const *envp = glove_session_environment(r->session);
        struct glove_env env = {.envp = (char **)envp};
        while (envp[env.count])
                env.count++;
        json_t *f = glove_exec_launch_fields(r->opts.program, &r->launch.grants, &env, glove_session_sandbox(r->session));
        if (!f)
                return NULL;
        json_t *ups = json_array();
        for (size_t i = 0; i < r->n_specs; i++) {
                const struct glove_mcp_upstream_spec *s = &r->specs[i];
                json_t *argv = json_array();
                for (size_t k = 0; s->argv[k]; k++)
                        json_array_append_new(argv, glove_audit_string(s->argv[k], strlen(s->argv[k])));
                json_t *e = json_pack("{s:s,s:o,s:o,s:b}", "name", s->name, "path", glove_audit_string(s->path, strlen(s->path)), "argv",
                                      argv, "contained", s->launch_path != NULL);
                if (e && r->own_names[i]) /* --upstream-own-names */
                        json_object_set_new(e, "own_names", json_true());
                json_array_append_new(ups, e);
        }
        json_object_set_new(f, "upstreams", ups);
        /* The whole policy the run is decided by, and its bounds. */
        json_t *tp = glove_policy_to_json(r->policy);
        bool ok = tp && json_object_set_new(tp, "call_timeout_ms", json_integer(r->opts.call_timeout_ms)) == 0 &&
                  json_object_set_new(tp, "max_frame", json_integer((json_int_t)r->opts.max_frame)) == 0 &&
                  json_object_set_new(tp, "audit_arguments", json_boolean(r->opts.audit_arguments)) == 0;
        if (!ok)
                json_decref(tp);
        ok = ok && json_object_set_new(f, "tool_policy", tp) == 0; /* tp is f's from here, also on failure */
        struct glove_session_enforced enf;
        glove_session_enforced(r->session, &enf);
        ok = ok && glove_front_launch_settings(&r->opts, r->launch.home_from, &enf, f) == 0;
        if (!ok) {
                json_decref(f);
                return NULL;
        }
        return f;
}

/* Every upstream is ready and the perimeter is built: the launch is on
 * record, then the agent starts. */
static int maybe_release(struct run *r) {
        if (!r->session_ready || !r->gateway_ready || r->released || r->status >= 0)
                return 0;
        if (run_audit(r, "launch", launch_fields(r)) < 0)
                return -EIO;
        struct glove_error e = {0};
        if (glove_session_release(r->session, &e) < 0) {
                glove_error_set(&r->err, e.errnum, e.code, "%s", e.message);
                run_fail(r);
                return -e.errnum;
        }
        r->released = true;
        return 0;
}

static int on_gateway_ready(struct run *r) {
        if (warn_unmatched_rules(r) < 0)
                return -EIO;
        r->gateway_ready = true;
        return maybe_release(r);
}

/* Appends to what err says of contained upstream spec, which ended before
 * it was ready, what it could see and how to grant it more: the most
 * likely reason is a file outside its grants (its stderr lines, shown
 * above, usually name it). */
static void explain_contained_failure(struct glove_error *err, const struct glove_mcp_upstream_spec *spec) {
        char seen[GLOVE_ERROR_MESSAGE_MAX] = "";
        size_t n = 0;
        static const char *const keys[] = {"ro", "rw"};
        static const char *const words[] = {"read-only ", "read-write "};
        for (size_t k = 0; k < 2; k++) {
                size_t i;
                const json_t *p;
                json_array_foreach(json_object_get(spec->sandbox, keys[k]), i, p) {
                        if (!json_is_string(p) || n >= sizeof(seen))
                                continue;
                        int w = snprintf(seen + n, sizeof(seen) - n, "%s%s%s", n == 0 ? "" : i == 0 ? "; " : ", ",
                                         i == 0 ? words[k] : "", json_string_value(p));
                        n += w > 0 ? (size_t)w : 0;
                }
        }
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof(err->message) - len,
                 "; it runs contained and sees only the system view (/usr, a curated /etc) and its grants: if it needs a file elsewhere, "
                 "add --upstream-ro %s:PATH (--upstream-rw to write; its stderr above may name the file); granted now: %s",
                 spec->name, n ? seen : "nothing besides the system");
        /* Cut at a character boundary, as glove_error_set would. */
        len = strlen(err->message);
        if (len == sizeof(err->message) - 1) {
                size_t cut = sizeof(err->message) - 4;
                while (cut > 0 && ((unsigned char)err->message[cut] & 0xc0) == 0x80)
                        cut--;
                memcpy(err->message + cut, "...", 4);
        }
}

static int on_gateway(struct glove_kernel_gateway *gw, enum glove_kernel_gateway_event event, const struct glove_error *err,
                      void *userdata) {
        struct run *r = userdata;
        switch (event) {
        case GLOVE_KERNEL_GATEWAY_READY:
                return on_gateway_ready(r);
        case GLOVE_KERNEL_GATEWAY_FAILED:
                /* The first reason stands (as with glove_error_set). */
                if (!glove_error_is_set(&r->err)) {
                        r->err = *err;
                        const char *failed = glove_kernel_gateway_failed_upstream(gw);
                        for (size_t i = 0; failed && i < r->n_specs; i++)
                                if (strcmp(r->specs[i].name, failed) == 0 && r->specs[i].launch_path)
                                        explain_contained_failure(&r->err, &r->specs[i]);
                }
                if (r->status < 0)
                        r->status = GLOVE_EXIT_FAILURE;
                if (r->session && !r->sandbox_gone)
                        glove_session_stop(r->session, 0);
                return 0;
        case GLOVE_KERNEL_GATEWAY_LEFT_OUT:
                /* --upstream-optional: the run starts without it (audited). */
                glove_launch_say("glove: warning: %s: %s\n", err->code, err->message);
                return 0;
        case GLOVE_KERNEL_GATEWAY_FINISHED:
                r->gateway_finished = true;
                if (r->sandbox_gone)
                        sd_event_exit(r->event, 0);
                return 0;
        }
        return 0;
}

/* An upstream's stderr line on Glove's, "[upstream NAME] LINE", shown
 * (glove/base/shown.h: no terminal control passes), NUL bytes as \x00, a
 * line cut (at the upstream's bound or at about 900 bytes shown) ending in
 * "...". One write per line, only when stderr can take it now: a chatty
 * upstream neither stalls the loop nor spends the time Glove's own lines
 * may wait (glove_launch_say); a line stderr cannot take is dropped. */
static void on_upstream_stderr(void *userdata, const char *upstream, const char *line, size_t len, bool cut) {
        (void)userdata;
        char text[GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX + 1];
        char shown[900]; /* with the prefix, under glove_launch_say's line */
        size_t o = 0;
        for (size_t start = 0; start <= len;) {
                size_t end = start;
                while (end < len && line[end] != '\0')
                        end++;
                memcpy(text, line + start, end - start);
                text[end - start] = '\0';
                glove_shown(text, shown + o, sizeof(shown) - o);
                o += strlen(shown + o);
                if (end == len || o + 4 + 8 > sizeof(shown)) {
                        cut = cut || end < len;
                        break;
                }
                memcpy(shown + o, "\\x00", 5);
                o += 4;
                start = end + 1;
        }
        bool dots = o >= 3 && strcmp(shown + o - 3, "...") == 0;
        char out[1024];
        int n = snprintf(out, sizeof(out), "[upstream %s]%s%s%s\n", upstream, o || cut ? " " : "", shown, cut && !dots ? "..." : "");
        struct pollfd p = {.fd = 2, .events = POLLOUT};
        if (n > 0 && (size_t)n < sizeof(out) && poll(&p, 1, 0) == 1 && (p.revents & POLLOUT))
                (void)!write(2, out, (size_t)n);
}

/* The MCP channel counts towards the output limit like stderr. */
static bool on_agent_bytes(void *userdata, size_t n) {
        struct run *r = userdata;
        return !r->session || glove_terminal_count(glove_session_terminal(r->session), n) >= n;
}

static int setup_gateway(struct run *r, struct glove_error *err) {
        snprintf(r->call_timeout_rule, sizeof(r->call_timeout_rule), "--call-timeout %lld", (long long)r->opts.call_timeout_ms);
        struct glove_kernel_gateway_config cfg = {
                .policy = r->policy,
                .upstreams = r->specs,
                .n_upstreams = r->n_specs,
                .upstream_optional = r->optional,
                .upstream_own_names = r->own_names,
                .call_timeout_ms = r->opts.call_timeout_ms,
                .max_frame = r->opts.max_frame,
                .audit = &r->launch.audit,
                .audit_arguments = r->opts.audit_arguments,
                .call_timeout_rule = r->call_timeout_rule,
                .max_frame_name = "--max-frame",
                .agent_bytes = on_agent_bytes,
                .upstream_stderr = on_upstream_stderr,
                .shared_channel = r->opts.mcp_endpoints != 0, /* the endpoints' sessions, merged (mcp_mux.c) */
                .notify = on_gateway,
                .userdata = r,
        };
        return glove_kernel_gateway_new(r->event, &cfg, &r->gw, err);
}

/* ------------------------------------------------------------------ the sandbox */

/* A warning of the agent's sandbox. limits.degraded is said once per run,
 * for whom: the contained upstreams' sandboxes (glove exec --direct-stdio,
 * the same user) do not repeat it. */
static void on_session_warning(struct glove_session *s, const struct glove_error *w, void *userdata) {
        (void)s;
        struct run *r = userdata;
        size_t contained = 0;
        for (size_t i = 0; i < r->n_specs; i++)
                contained += r->specs[i].launch_path != NULL;
        if (strcmp(w->code, "limits.degraded") == 0 && contained)
                glove_launch_say("glove: warning: %s: %s; for the agent and its %zu contained upstream%s alike\n", w->code,
                                 w->message, contained, contained == 1 ? "" : "s");
        else if (strcmp(w->code, "limits.degraded") == 0)
                glove_launch_say("glove: warning: %s: %s; for the agent\n", w->code, w->message);
        else
                glove_launch_say("glove: warning: %s: %s\n", w->code, w->message);
}

static void on_session_ready(struct glove_session *s, void *userdata) {
        (void)s;
        struct run *r = userdata;
        r->session_ready = true;
        (void)maybe_release(r);
}

/* The session ended (and is torn down): the gateway ends the agent's calls
 * and the upstreams; the loop ends once it reports FINISHED. */
static void on_session_exited(struct glove_session *s, const struct glove_session_outcome *o, void *userdata) {
        (void)s;
        struct run *r = userdata;
        r->outcome = *o;
        r->sandbox_gone = true;
        /* The client sessions end (audited) before the gateway's calls. */
        glove_mcp_endpoint_free(r->endpoint);
        r->endpoint = NULL;
        if (o->kind == GLOVE_SESSION_SETUP_FAILED) {
                if (!glove_error_is_set(&r->err))
                        r->err = o->error;
                if (r->status < 0)
                        r->status = GLOVE_EXIT_FAILURE;
        }
        if (r->gateway_finished)
                sd_event_exit(r->event, 0);
        else
                glove_kernel_gateway_agent_exited(r->gw);
}

static int on_forward_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void)s;
        struct run *r = userdata;
        if (r->released && si->ssi_signo == SIGWINCH && r->term && glove_terminal_is_pty(glove_session_terminal(r->session)))
                glove_cli_terminal_resize(r->term); /* the kernel signals the agent */
        else if (r->released)
                (void)glove_session_signal(r->session, (int)si->ssi_signo);
        else {
                glove_error_set(&r->err, EINTR, "run.interrupted", "interrupted by signal %u before the agent started", si->ssi_signo);
                run_fail(r);
        }
        return 0;
}

/* The inputSchema of upstream u's tool named tool (borrowed), or NULL. */
static const json_t *tool_input_schema(const struct glove_mcp_upstream *u, const char *tool) {
        size_t i;
        json_t *t;
        json_array_foreach(glove_mcp_upstream_tools(u), i, t) {
                const char *n = json_string_value(json_object_get(t, "name"));
                if (n && strcmp(n, tool) == 0)
                        return json_object_get(t, "inputSchema");
        }
        return NULL;
}

/* The inputSchema of the tool an agent's tools/call names, as the gateway
 * routes the name (docs/mcp-mediation.md, "Own names"): NAME.TOOL of an
 * upstream under qualified names, else the tool of the first
 * --upstream-own-names upstream that lists the name. For the endpoint's
 * Mcp-Param-* check (mcp_endpoint.h). */
static const json_t *on_endpoint_tool_schema(void *userdata, const char *name) {
        struct run *r = userdata;
        size_t n = r->gw ? glove_kernel_gateway_upstreams(r->gw) : 0, ulen;
        const char *tool;
        if (glove_kernel_split_name(name, &ulen, &tool) == 0)
                for (size_t i = 0; i < n; i++) {
                        const struct glove_mcp_upstream *u = glove_kernel_gateway_upstream(r->gw, i);
                        const char *un = glove_mcp_upstream_name(u);
                        if (!r->own_names[i] && strlen(un) == ulen && memcmp(un, name, ulen) == 0)
                                return tool_input_schema(u, tool);
                }
        for (size_t i = 0; i < n; i++) {
                const json_t *s = r->own_names[i] ? tool_input_schema(glove_kernel_gateway_upstream(r->gw, i), name) : NULL;
                if (s)
                        return s;
        }
        return NULL;
}

/* The endpoint failed (audit, the gateway's channel): the run stops. */
static void on_endpoint_failed(void *userdata, const struct glove_error *e) {
        struct run *r = userdata;
        glove_error_set(&r->err, e->errnum, e->code, "%s", e->message);
        run_fail(r);
}

/* The in-sandbox command: next to glove (the build tree, a package's bin),
 * else LIBEXECDIR/glove beside its bin. Never looked up in PATH. */
static int find_mcp_command(struct run *r, struct glove_error *err) {
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return glove_error_set(err, errno ? errno : EINVAL, "run.mcp_command", "cannot read /proc/self/exe: %s",
                                       strerror(errno));
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash)
                return glove_error_set(err, EINVAL, "run.mcp_command", "cannot locate glove's directory");
        *slash = '\0';
        static const char *const rel[] = {"/glove-mcp-stdio", "/../libexec/glove/glove-mcp-stdio"};
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
                char path[4200];
                snprintf(path, sizeof(path), "%s%s", exe, rel[i]);
                char *real = realpath(path, NULL);
                if (real && access(real, X_OK) == 0) {
                        r->mcp_command_path = real;
                        return 0;
                }
                free(real);
        }
        return glove_error_set(err, ENOENT, "run.mcp_command",
                               "glove-mcp-stdio (the in-sandbox command of --mcp-endpoint command) is not installed next to glove "
                               "or in its libexec/glove");
}

/* The perimeter's additions: the home (as glove exec), the endpoint file
 * and the in-sandbox command. */
static int add_mounts(struct glove_mount_plan *plan, void *ctx, struct glove_error *err) {
        struct run *r = ctx;
        int rr = glove_launch_add_home(plan, &r->launch, err);
        if (rr < 0 || !r->opts.mcp_endpoints)
                return rr;
        char text[16];
        int n = snprintf(text, sizeof(text), "%u\n", (unsigned)r->opts.mcp_port);
        rr = glove_mount_plan_add_file(plan, "/run/glove/mcp-endpoint", text, (size_t)n, 0444, err);
        if (rr >= 0 && r->mcp_command_path)
                rr = glove_mount_plan_add_bind(plan, GLOVE_RUN_MCP_COMMAND, r->mcp_command_path, false, err);
        return rr;
}

/* GLOVE_MCP_URL and GLOVE_MCP_COMMAND in the agent's environment. */
static int endpoint_env(struct run *r, struct glove_error *err) {
        char entry[128];
        int rr = 0;
        if (r->opts.mcp_endpoints & GLOVE_RUN_ENDPOINT_HTTP) {
                snprintf(entry, sizeof(entry), "GLOVE_MCP_URL=http://127.0.0.1:%u/mcp", (unsigned)r->opts.mcp_port);
                rr = glove_env_append(&r->launch.env, entry, err);
        }
        if (rr >= 0 && (r->opts.mcp_endpoints & GLOVE_RUN_ENDPOINT_COMMAND))
                rr = glove_env_append(&r->launch.env, "GLOVE_MCP_COMMAND=" GLOVE_RUN_MCP_COMMAND, err);
        return rr;
}

/* Starts the session, held before the agent's execve until the gateway is
 * ready. stdio: the gateway gets the agent's stdin and stdout. command/http:
 * the agent keeps its terminal (as glove exec), the gateway's channel goes
 * to the endpoint, which serves the sandbox's listener. */
static int setup_sandbox(struct run *r, struct glove_error *err) {
        _cleanup_fd_pair_ struct glove_fd_pair to_agent = GLOVE_FD_PAIR_INIT, from_agent = GLOVE_FD_PAIR_INIT;
        bool ep = r->opts.mcp_endpoints != 0;
        int gw_sv[2] = {-1, -1}, listen_sv[2] = {-1, -1};
        if (!ep && (glove_fd_pair_pipe(&to_agent, 0) < 0 || glove_fd_pair_pipe(&from_agent, 0) < 0))
                return glove_error_set(err, errno, "run.pipe", "pipe: %s", strerror(errno));
        if (ep && (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gw_sv) < 0 ||
                   socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, listen_sv) < 0)) {
                int e = errno;
                glove_closep(&gw_sv[0]);
                glove_closep(&gw_sv[1]);
                return glove_error_set(err, e, "run.pipe", "socketpair: %s", strerror(e));
        }
        if (ep) {
                to_agent.fd[1] = gw_sv[0];                 /* the gateway writes here */
                from_agent.fd[0] = fcntl(gw_sv[0], F_DUPFD_CLOEXEC, 3); /* and reads here */
        }
        struct glove_cli_terminal_probe probe;
        glove_cli_terminal_probe(&probe);
        struct glove_net_policy egress;
        bool egress_on = false;
        int rr = glove_front_egress(&r->opts, &egress, &egress_on, err);
        if (rr >= 0 && ep && (r->opts.mcp_endpoints & GLOVE_RUN_ENDPOINT_COMMAND))
                rr = find_mcp_command(r, err);
        if (rr >= 0 && ep)
                rr = endpoint_env(r, err);
        struct glove_session_desc d = {
                .argv = r->opts.program,
                .envp = r->launch.env.envp,
                .grants = &r->launch.grants,
                .seccomp = r->opts.allow_unix_sockets ? &glove_seccomp_prebuilt : &glove_seccomp_prebuilt_no_unix,
                .seccomp_egress = r->opts.allow_unix_sockets ? &glove_seccomp_prebuilt_egress
                                                             : &glove_seccomp_prebuilt_no_unix_egress,
                .terminal = GLOVE_TERMINAL_STDERR,
                .channel_stdin_fd = to_agent.fd[0],
                .channel_stdout_fd = from_agent.fd[1],
                .egress = egress_on ? &egress : NULL,
                .egress_report = true,
                .audit = &r->launch.audit,
                .parent_death_kill = true,
                .add_mounts = add_mounts,
                .add_mounts_ctx = r,
                .nofile = r->opts.nofile,
                .mcp_listen = ep,
                .mcp_listen_fd = listen_sv[1],
                .mcp_listen_port = r->opts.mcp_port,
                .mcp_listen_http = (r->opts.mcp_endpoints & GLOVE_RUN_ENDPOINT_HTTP) != 0,
        };
        if (ep) {
                /* As glove exec: a PTY when both ends are a terminal (or --tty). */
                d.terminal = r->opts.tty || (probe.stdin_tty && probe.stdout_tty) ? GLOVE_TERMINAL_PTY : GLOVE_TERMINAL_PIPES;
                d.tty_modes = probe.have_modes ? &probe.modes : NULL;
                d.rows = probe.rows;
                d.cols = probe.cols;
                d.input_closed = probe.stdin_null;
                d.envp = r->launch.env.envp; /* after endpoint_env */
        }
        glove_front_limits(&r->opts, &d.limits, &d.cgroup_policy);
        d.audit_max_bytes = d.limits.disk_bytes; /* as glove exec */
        static const struct glove_session_ops ops = {
                .ready = on_session_ready, .exited = on_session_exited, .warning = on_session_warning};
        if (rr >= 0)
                rr = glove_session_start(r->event, &d, &ops, r, &r->session, err);
        glove_net_policy_free(&egress);
        glove_closep(&to_agent.fd[0]);
        glove_closep(&from_agent.fd[1]);
        glove_closep(&listen_sv[1]);
        to_agent.fd[0] = from_agent.fd[1] = -1;
        if (ep) {
                struct glove_error eerr = {0};
                struct glove_mcp_endpoint_config ec = {
                        .event = r->event,
                        .gateway_fd = gw_sv[1],
                        .accept_fd = listen_sv[0],
                        .port = r->opts.mcp_port,
                        .http = (r->opts.mcp_endpoints & GLOVE_RUN_ENDPOINT_HTTP) != 0,
                        .command = (r->opts.mcp_endpoints & GLOVE_RUN_ENDPOINT_COMMAND) != 0,
                        .max_frame = r->opts.max_frame,
                        .audit = &r->launch.audit,
                        .agent_bytes = on_agent_bytes,
                        .failed = on_endpoint_failed,
                        .tool_schema = on_endpoint_tool_schema,
                        .userdata = r,
                };
                int er = glove_mcp_endpoint_new(&ec, &r->endpoint, &eerr);
                if (rr >= 0 && er < 0)
                        rr = glove_error_set(err, eerr.errnum, eerr.code, "%s", eerr.message);
        }
        /* The gateway owns the agent's channel from here, also on failure. */
        struct glove_error aerr = {0};
        int ar = glove_kernel_gateway_attach_agent(r->gw, glove_fd_take(&from_agent.fd[0]), glove_fd_take(&to_agent.fd[1]), &aerr);
        if (rr < 0)
                return rr;
        if (ar < 0)
                return glove_error_set(err, aerr.errnum, aerr.code, "%s", aerr.message);
        return glove_cli_terminal_attach(r->event, glove_session_terminal(r->session), &probe, ep, &r->term, err);
}

/* ------------------------------------------------------------------ the end */

/* Glove is a child subreaper during glove run: a process an upstream left
 * behind (a grandchild whose parent exited) becomes Glove's child. At the
 * end every such process is killed and reaped, so nothing outlives the run. */
static void reap_orphans(void) {
        for (int round = 0; round < 64; round++) {
                char path[64];
                snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                if (!f)
                        return;
                int pid, found = 0;
                while (fscanf(f, "%d", &pid) == 1) {
                        found++;
                        kill(pid, SIGKILL);
                        (void)waitpid(pid, NULL, 0);
                }
                if (!found)
                        return;
        }
}

static void run_free(struct run *r) {
        glove_mcp_endpoint_free(r->endpoint);
        r->endpoint = NULL;
        free(r->mcp_command_path);
        r->mcp_command_path = NULL;
        glove_kernel_gateway_free(r->gw);
        r->gw = NULL;
        glove_cli_terminal_free(r->term, 0);
        r->term = NULL;
        glove_session_free(r->session);
        r->session = NULL;
        glove_policy_free(r->policy);
        for (size_t i = 0; i < r->n_specs; i++)
                glove_mcp_upstream_spec_free(&r->specs[i]);
        glove_launch_signals_free(&r->signals);
        r->event = sd_event_unref(r->event);
}

/* After the loop: the agent's outcome, its last stderr, the status file and
 * the exit record. Returns Glove's exit status. */
static int run_finish(struct run *r) {
        struct glove_error err = {0};
        int status = GLOVE_EXIT_FAILURE;
        const struct glove_session_outcome *o = &r->outcome;
        if (o->audit_failed && r->status < 0) {
                r->status = GLOVE_EXIT_FAILURE;
                if (o->audit_full)
                        glove_error_set(&r->err, ENOSPC, "egress.audit_full",
                                        "the run's egress records passed their budget of %" PRIu64
                                        " bytes (--disk) in the audit log; the agent was stopped",
                                        r->opts.disk_bytes ? r->opts.disk_bytes : GLOVE_SESSION_DEFAULT_DISK);
                else
                        glove_error_set(&r->err, EIO, "audit.append", "an egress record could not be appended; the agent was stopped");
        }
        /* What the agent wrote to stderr before it ended. */
        glove_cli_terminal_free(r->term, o->output_cut ? 0 : 2000);
        r->term = NULL;
        struct glove_run_status st;
        /* When Glove itself failed, its own reason is the one line printed. */
        glove_front_status(o, r->opts.program[0], r->status < 0, &st);
        if (r->status < 0 && glove_error_is_set(&o->error))
                glove_launch_say("glove: warning: %s: %s\n", o->error.code, o->error.message);
        if (r->status >= 0)
                status = st.exit_code = glove_launch_fail(&r->err);
        else
                status = st.exit_code;
        if (r->opts.status_json && glove_run_status_write(r->launch.status_dirfd, r->launch.status_name, r->opts.status_json, &st, &err) < 0)
                status = glove_launch_fail(&err);
        if (r->launch.audit.fd >= 0 && !(r->err.code && strncmp(r->err.code, "audit.", 6) == 0)) {
                _cleanup_json_ json_t *exitrec = glove_exec_exit_fields(&o->sandbox, status, st.wall_time_ms);
                _cleanup_json_ json_t *stjson = glove_run_status_json(&st);
                if (exitrec && stjson)
                        json_object_update(exitrec, stjson);
                if (!exitrec || !stjson || glove_audit_append(&r->launch.audit, "exit", exitrec, &err) < 0) {
                        if (!exitrec || !stjson)
                                glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the exit record");
                        status = glove_launch_fail(&err);
                }
        }
        return status;
}

static int run_setup(struct run *r, struct glove_error *err) {
        sigset_t mask;
        int rr = glove_launch_prepare(&r->opts, &r->launch, err);
        if (rr >= 0)
                rr = setup_policy(r, err);
        if (rr >= 0)
                rr = setup_specs(r, err);
        if (rr >= 0)
                rr = check_rule_upstreams(r, err);
        if (rr < 0)
                return rr;
        warn_no_tools(r);
        glove_launch_block_signals(&mask);
        rr = sd_event_new(&r->event);
        if (rr < 0)
                return glove_error_set(err, -rr, "run.event_loop", "sd_event_new: %s", strerror(-rr));
        rr = glove_launch_signals_add(&r->signals, r->event, on_forward_signal, r);
        if (rr < 0)
                return glove_error_set(err, -rr, "run.event_loop", "signals: %s", strerror(-rr));
        rr = setup_gateway(r, err);
        if (rr >= 0)
                rr = setup_sandbox(r, err);
        return rr;
}

int glove_run_main(int argc, char **argv) {
        if (glove_fd_ensure_std() < 0)
                return GLOVE_EXIT_FAILURE;
        _cleanup_free_ struct run *r = calloc(1, sizeof(*r));
        if (!r) {
                glove_launch_say("glove: out of memory\n");
                return GLOVE_EXIT_FAILURE;
        }
        struct glove_error err = {0};
        if (glove_run_parse(argc, argv, &r->opts, &err) < 0)
                return glove_launch_fail(&err);
        if (r->opts.help) {
                fputs(glove_run_help, stdout);
                return 0;
        }
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        r->status = -1;
        r->signals.fd = -1;

        int rr = run_setup(r, &err);
        if (rr >= 0) {
                rr = sd_event_loop(r->event);
                if (rr < 0)
                        glove_error_set(&err, -rr, "run.event_loop", "event loop: %s", strerror(-rr));
        }
        int status;
        if (rr < 0) {
                run_free(r);
                reap_orphans();
                glove_launch_free(&r->launch);
                return glove_launch_fail(&err);
        }
        status = run_finish(r);
        run_free(r);
        reap_orphans();
        glove_launch_free(&r->launch);
        return status;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Command line of `glove exec [OPTIONS] -- PROGRAM [ARG...]` (issue "glove
 * exec"). Parsing only collects what was asked; resolution (grants, the
 * environment, the audit log) happens afterwards and reports its own errors.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"
#include "glove/container/grant.h"
#include "glove/mcp/frame.h"

/* Exit status of Glove itself failing (DESIGN.md, Interfaces: CLI). */
#define GLOVE_EXIT_FAILURE 125
#define GLOVE_EXIT_CANNOT_EXECUTE 126
#define GLOVE_EXIT_NOT_FOUND 127

struct glove_exec_grant_spec {
        const char *path;               /* as given, borrowed from argv */
        enum glove_grant_mode mode;
        bool workspace;
};

/* Bounds of `glove run`'s options. */
#define GLOVE_RUN_UPSTREAMS_MAX 32
/* --mcp-endpoint bits (none: stdio, the agent's own stdin and stdout). */
#define GLOVE_RUN_ENDPOINT_COMMAND 0x1u
#define GLOVE_RUN_ENDPOINT_HTTP 0x2u
/* --mcp-port's default, and the egress proxy's port it must not take. */
#define GLOVE_RUN_MCP_PORT_DEFAULT 8931
#define GLOVE_RUN_EGRESS_PORT 3128
/* Where the in-sandbox command is mounted (GLOVE_MCP_COMMAND). */
#define GLOVE_RUN_MCP_COMMAND "/run/glove/mcp-stdio"
#define GLOVE_RUN_RULES_MAX 256
#define GLOVE_RUN_CALL_TIMEOUT_DEFAULT_MS 60000
/* Bounds of --nofile (descriptors per process; also at most the invoker's
 * own hard RLIMIT_NOFILE, "limits.nofile_above_hard"). */
#define GLOVE_RUN_NOFILE_MIN 16
#define GLOVE_RUN_NOFILE_MAX 1048576
#define GLOVE_RUN_CALL_TIMEOUT_MAX_MS (24LL * 3600 * 1000)

/* --pids bounds: the sandbox's PID 1 (its init) and the agent; with egress
 * also the egress helper (docs/limits.md). */
#define GLOVE_EXEC_PIDS_MIN 2
#define GLOVE_EXEC_PIDS_MIN_EGRESS 3
#define GLOVE_EXEC_PIDS_MAX 4194304

struct glove_exec_options {
        struct glove_exec_grant_spec grants[GLOVE_GRANTS_MAX];
        size_t n_grants;                /* in command-line order */
        const char *env_names[64];
        size_t n_env;
        const char *audit_log;          /* NULL when not given */
        char **program;                 /* PROGRAM [ARG...], NULL-terminated, borrowed */
        bool help;

        /* Resource limits (issue "limits"; docs/limits.md); 0 when not given,
         * then the defaults apply. */
        uint64_t cpu_time_ms, memory_bytes, pids, wall_time_ms, disk_bytes, output_bytes;
        bool pids_given;                /* --pids was given (pids may then be 0 or 1: refused) */
        const char *status_json;        /* --status-json FILE, or NULL */
        const char *home_from;          /* --home-from DIR, or NULL */
        const char *egress_allow[GLOVE_RUN_RULES_MAX];  /* --egress-allow HOST[:PORT] */
        size_t n_egress_allow;
        /* --egress-allow-private HOST[:PORT]: rules whose destinations may be private */
        const char *egress_allow_private[GLOVE_RUN_RULES_MAX];
        size_t n_egress_allow_private;
        bool tty;                       /* --tty: a PTY even when stdin is not a terminal */
        uint64_t nofile;                /* --nofile N: RLIMIT_NOFILE of the agent; 0: default */
        bool unsafe_write_system_dir;   /* --unsafe-write-system-dir: writable grants of
                                         * the host's system directories allowed */
        bool allow_unix_sockets;        /* --unix-sockets: socket(AF_UNIX) allowed */
        bool direct_stdio;              /* glove exec --direct-stdio: the program gets
                                         * Glove's own stdin and stdout */
        const char *run_audit;          /* --run-audit FD:RUN_ID:NAME, or NULL */

        /* glove run only; all strings borrowed from argv. */
        const char *upstreams[GLOVE_RUN_UPSTREAMS_MAX];     /* "NAME=CMD[,ARG...]" */
        size_t n_upstreams;
        const char *upstream_env[GLOVE_RUN_RULES_MAX];      /* "NAME:VAR" */
        size_t n_upstream_env;
        const char *upstream_optional[GLOVE_RUN_UPSTREAMS_MAX];   /* --upstream-optional NAME */
        size_t n_upstream_optional;
        /* Contained upstreams' grants: "NAME:PATH", "NAME:HOST[:PORT]", NAME. */
        const char *upstream_ro[GLOVE_RUN_RULES_MAX];
        size_t n_upstream_ro;
        const char *upstream_rw[GLOVE_RUN_RULES_MAX];
        size_t n_upstream_rw;
        const char *upstream_egress[GLOVE_RUN_RULES_MAX];
        size_t n_upstream_egress;
        const char *upstream_uncontained[GLOVE_RUN_RULES_MAX];
        size_t n_upstream_uncontained;
        const char *upstream_limit[GLOVE_RUN_RULES_MAX];   /* "NAME:LIMIT=VALUE" */
        size_t n_upstream_limit;
        const char *allow[GLOVE_RUN_RULES_MAX];
        size_t n_allow;
        const char *deny[GLOVE_RUN_RULES_MAX];
        size_t n_deny;
        const char *allow_arg[GLOVE_RUN_RULES_MAX];
        size_t n_allow_arg;
        /* --allow-prompt, --deny-prompt, --allow-prompt-arg,
         * --allow-resource, --deny-resource, in the order given */
        struct {
                enum glove_run_feature_rule {
                        GLOVE_RUN_ALLOW_PROMPT,
                        GLOVE_RUN_DENY_PROMPT,
                        GLOVE_RUN_ALLOW_PROMPT_ARG,
                        GLOVE_RUN_ALLOW_RESOURCE,
                        GLOVE_RUN_DENY_RESOURCE,
                } kind;
                const char *text;
        } feature_rules[GLOVE_RUN_RULES_MAX];
        size_t n_feature_rules;
        const char *upstream_own_names[GLOVE_RUN_UPSTREAMS_MAX];  /* --upstream-own-names NAME */
        size_t n_upstream_own_names;
        const char *upstream_allow[GLOVE_RUN_RULES_MAX];   /* --upstream-allow NAME:FEATURE[,...] */
        size_t n_upstream_allow;
        const char *policy_file;
        int64_t call_timeout_ms;        /* GLOVE_RUN_CALL_TIMEOUT_DEFAULT_MS unless given; 1..MAX */
        size_t max_frame;               /* GLOVE_MCP_FRAME_DEFAULT unless given */
        bool audit_arguments;
        unsigned mcp_endpoints;         /* --mcp-endpoint: GLOVE_RUN_ENDPOINT_* bits; 0: stdio */
        uint16_t mcp_port;              /* --mcp-port; GLOVE_RUN_MCP_PORT_DEFAULT unless given */
};

/*
 * Parses argv (argv[0] is "exec"; options stop at "--" or at the first
 * non-option). Strings are borrowed from argv.
 *
 * Errors (-EINVAL unless noted): "usage.unknown_option",
 * "usage.missing_argument", "usage.missing_program", "usage.too_many"
 * (-E2BIG: more grants than GLOVE_GRANTS_MAX or --env names than 64),
 * "usage.audit_log_twice", "usage.option_twice" (a single-valued option
 * such as --wall-time or --home-from given twice; the message names it),
 * "usage.bad_mcp_endpoint", "usage.mcp_port_without_endpoint",
 * "usage.mcp_port_taken" (--mcp-port 3128 with egress), "usage.tty_run"
 * (--tty with the stdio endpoint),
 * "usage.pids_too_low" (--pids under GLOVE_EXEC_PIDS_MIN, or under
 * GLOVE_EXEC_PIDS_MIN_EGRESS with --egress-allow: it could never run),
 * "usage.bad_path" (an empty --home-from),
 * "usage.tty_direct_stdio" (--tty with --direct-stdio), "usage.run_audit"
 * (--run-audit without --direct-stdio, or with --audit-log),
 * "egress.private_needs_rule" (--egress-allow-private
 * without its HOST[:PORT], or with an argument starting with '-').
 */
int glove_exec_parse(int argc, char **argv, struct glove_exec_options *opts, struct glove_error *err);

/*
 * Parses `glove run` (argv[0] is "run"): the options of glove exec plus
 * --upstream, --upstream-env, --upstream-optional, --upstream-ro,
 * --upstream-rw, --upstream-egress, --upstream-uncontained, --upstream-limit,
 * --allow, --deny,
 * --allow-arg, --policy,
 * --call-timeout MS, --max-frame BYTES (K, M, G suffixes, powers of 1024),
 * --audit-arguments. Values are checked for form here ("usage.bad_number",
 * "usage.policy_twice"); their meaning is checked where they are used.
 */
int glove_run_parse(int argc, char **argv, struct glove_exec_options *opts, struct glove_error *err);

/* The text printed by `glove exec --help` and `glove run --help`. */
extern const char glove_exec_help[];
extern const char glove_run_help[];

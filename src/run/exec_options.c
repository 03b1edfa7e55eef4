/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/run/exec_options.h"

#include "glove/base/number.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

const char glove_exec_help[] =
        "Usage: glove exec [OPTIONS] -- PROGRAM [ARG...]\n"
        "\n"
        "Runs PROGRAM contained: new user, PID, mount, network, IPC, UTS and cgroup\n"
        "namespaces; a read-only system view (/usr, a curated /etc); a private /tmp\n"
        "and empty HOME; no network; no capabilities; a seccomp filter. Nothing of\n"
        "the host is visible unless granted below.\n"
        "\n"
        "Options:\n"
        "  --workspace DIR   grant DIR read-write and start the program in it\n"
        "  --read PATH       grant PATH read-only (repeatable)\n"
        "  --write PATH      grant PATH read-write (repeatable)\n"
        "                    Grants appear at the same absolute path inside. Refused:\n"
        "                    a path with a symbolic link in it; /, /proc, /sys, /dev,\n"
        "                    /run, /var/run, $XDG_RUNTIME_DIR (service sockets), /home\n"
        "                    and /home/agent (the private HOME); nested grants of\n"
        "                    different modes; writable grants (--write, --workspace) of\n"
        "                    system directories: /bin, /boot, /etc, /lib*, /opt, /root,\n"
        "                    /sbin, /usr, /var and what lies beneath them (not\n"
        "                    /var/tmp, /var/home, /var/srv; /root only itself and its\n"
        "                    dot-files), also through a bind mount or a mount beneath\n"
        "                    the grant; and any grant reaching a directory a live\n"
        "                    gloved holds open (its runtime and state directories).\n"
        "  --unsafe-write-system-dir  allow writable grants of system directories:\n"
        "                    the agent can then change the host's programs and\n"
        "                    configuration (a root invoker's agent as host root)\n"
        "  --env NAME        pass Glove's value of the variable NAME (repeatable);\n"
        "                    the agent otherwise sees only PATH, HOME, TMPDIR, TERM,\n"
        "                    LANG and GLOVE_SANDBOXED=1\n"
        "  --audit-log PATH  append JSON lines (launch and exit records) to PATH;\n"
        "                    PATH must lie outside every grant\n"
        "  --home-from DIR   copy DIR into the private HOME at start (bounded by\n"
        "                    --disk; never written back; symbolic links, FIFOs,\n"
        "                    sockets and devices in it are skipped)\n"
        "\n"
        "Limits (enforced; defaults in docs/limits.md; each given at most once):\n"
        "  --cpu-time TIME     CPU time of the whole process tree; TIME is a number\n"
        "                      with a unit ms, s, m or h (90s, 5m); a bare number\n"
        "                      is milliseconds\n"
        "  --memory BYTES      memory of the whole tree (swap 0); BYTES is a number\n"
        "                      with an optional suffix K, M, G or T (powers of 1024;\n"
        "                      1G, 1GB and 1GiB are the same), e.g. 512M; at least 1M\n"
        "  --pids N            processes and threads of the whole tree; at least 2\n"
        "                      (the sandbox's init and the agent), 3 with egress\n"
        "                      (and its helper)\n"
        "  --nofile N          open files per process (soft = hard; default 1024,\n"
        "                      at most the invoker's own hard limit)\n"
        "  --wall-time TIME    time from start to end (units as --cpu-time)\n"
        "  --disk BYTES        size of each private writable tmpfs (/tmp, HOME, /dev/shm;\n"
        "                      suffixes as --memory)\n"
        "  --output-limit BYTES  bytes the program may write to stdout/stderr\n"
        "  --status-json FILE  write the terminal status (exit code, limit, usage);\n"
        "                      FILE must lie outside every grant\n"
        "  --tty               give the program a terminal (default when stdin and\n"
        "                      stdout are both terminals)\n"
        "\n"
        "Audited egress (offline without these; docs/egress.md):\n"
        "  --egress-allow HOST[:PORT]  allow HOST:PORT (port 443 by default; write\n"
        "                    :80 for plain http://; .example.com matches subdomains\n"
        "                    only) through a per-run authenticated proxy (CONNECT, and\n"
        "                    plain-HTTP forwarding) that audits every connection; an\n"
        "                    address rule (127.0.0.1:8080) may be a private address\n"
        "  --egress-allow-private HOST[:PORT]  as --egress-allow, and the name may\n"
        "                    resolve to loopback and private addresses (this rule only)\n"
        "\n"
        "Unix sockets: socketpair(2) works; socket(AF_UNIX) fails with EPERM, so\n"
        "the program cannot connect to a socket file inside a grant.\n"
        "  --unix-sockets    let it make Unix sockets (tmux, a local database,\n"
        "                    Python's forkserver): it can then also connect to any\n"
        "                    socket file in a grant, whose service sees your uid\n"
        "  -h, --help        show this help\n"
        "\n"
        "Exit status: the program's own; 128+N if it died of signal N; 125 if Glove\n"
        "failed; 126 if PROGRAM could not be executed; 127 if it was not found;\n"
        "137 when a limit was breached (the whole tree is killed; stderr names the\n"
        "limit).\n";

const char glove_run_help[] =
        "Usage: glove run [OPTIONS] -- AGENT [ARG...]\n"
        "\n"
        "Runs AGENT contained exactly as glove exec does, with its stdin and stdout\n"
        "as an MCP channel: Glove is the MCP server the agent talks to, and it\n"
        "forwards only policy-approved tool calls to upstream MCP servers that it\n"
        "starts, each in a sandbox of its own. AGENT's stderr passes through.\n"
        "\n"
        "Upstreams and policy (default deny):\n"
        "  --upstream NAME=CMD[,ARG...]  start an MCP server (stdio); its tools\n"
        "                                appear as NAME.TOOL; NAME is [a-z0-9_-]{1,32}\n"
        "  --upstream-env NAME:VAR       copy Glove's VAR to upstream NAME (repeatable)\n"
        "  Each upstream runs in its own sandbox (as glove exec: offline, nothing of\n"
        "  the host but the system view and its command file) unless uncontained:\n"
        "  --upstream-ro NAME:PATH       grant PATH read-only to upstream NAME\n"
        "  --upstream-rw NAME:PATH       grant PATH read-write to upstream NAME\n"
        "                                (both repeatable; checked as --read, --write)\n"
        "  --upstream-egress NAME:HOST[:PORT]  let upstream NAME reach HOST:PORT\n"
        "                                through its own egress proxy (as --egress-allow)\n"
        "  --upstream-limit NAME:LIMIT=VALUE  one of upstream NAME's limits (cpu-time,\n"
        "                                memory, pids, wall-time, disk, nofile,\n"
        "                                output-limit; as glove exec's options; the\n"
        "                                defaults otherwise)\n"
        "  --upstream-uncontained NAME   run upstream NAME on the host with your full\n"
        "                                authority (audited; a warning on stderr)\n"
        "  --upstream-optional NAME      start without upstream NAME if it fails or is\n"
        "                                not ready within --call-timeout (audited;\n"
        "                                otherwise Glove exits 125) (repeatable)\n"
        "  --allow NAME.TOOL             allow a tool; NAME.* allows all of NAME's\n"
        "  --deny NAME.TOOL              deny a tool (deny wins)\n"
        "  --allow-arg NAME.TOOL:POINTER=PREFIX\n"
        "                                the string at JSON Pointer POINTER in the\n"
        "                                call's arguments must start with PREFIX\n"
        "  --allow-prompt NAME.PROMPT    allow a prompt (and completing its arguments);\n"
        "                                NAME.* allows all of NAME's\n"
        "  --deny-prompt NAME.PROMPT     deny a prompt (deny wins)\n"
        "  --allow-prompt-arg NAME.PROMPT:POINTER=PREFIX\n"
        "                                the prompt argument at POINTER (/ARG) must\n"
        "                                start with PREFIX\n"
        "  --allow-resource NAME:PATTERN allow reading and subscribing to NAME's\n"
        "                                resources whose URI is PATTERN, or starts with\n"
        "                                it when it ends with * (NAME:* allows all)\n"
        "  --deny-resource NAME:PATTERN  deny resources (deny wins)\n"
        "  --upstream-own-names NAME     offer NAME's tools and prompts under their own\n"
        "                                names and its resource URIs unchanged; rules\n"
        "                                still say NAME.TOOL (repeatable)\n"
        "  --upstream-allow NAME:FEATURE[,FEATURE...]\n"
        "                                let upstream NAME use client features:\n"
        "                                sampling, elicitation, roots (its requests\n"
        "                                reach the agent), logging (setLevel and its\n"
        "                                log messages), instructions (relayed in the\n"
        "                                agent's initialize); none by default\n"
        "  --policy FILE                 rules from a JSON policy file (docs/policy.md)\n"
        "  --call-timeout TIME           answer upstream_timeout after TIME (60s; a\n"
        "                                bare number is milliseconds)\n"
        "  --max-frame BYTES             longest JSON-RPC line accepted (4M); a longer\n"
        "                                upstream answer fails only its call\n"
        "  --audit-arguments             put raw call arguments in audit records\n"
        "                                (otherwise only their SHA-256)\n"
        "\n"
        "How the agent reaches Glove (docs/mcp-mediation.md, Endpoints):\n"
        "  --mcp-endpoint stdio|command|http|command,http\n"
        "                                stdio (default): the agent's stdin and stdout\n"
        "                                are the MCP channel; command: a stdio MCP\n"
        "                                server command at $GLOVE_MCP_COMMAND\n"
        "                                (/run/glove/mcp-stdio); http: Streamable HTTP\n"
        "                                at $GLOVE_MCP_URL (http://127.0.0.1:PORT/mcp on\n"
        "                                the sandbox's own loopback). Not stdio: the\n"
        "                                agent keeps its terminal as under glove exec\n"
        "  --mcp-port PORT               the endpoint's port in the sandbox (8931)\n"
        "\n"
        "Sandbox options (as glove exec):\n"
        "  --workspace DIR, --read PATH, --write PATH, --env NAME, --audit-log PATH,\n"
        "  --home-from DIR,\n"
        "  --cpu-time TIME, --memory BYTES, --pids N, --nofile N, --wall-time TIME,\n"
        "  --disk BYTES, --unsafe-write-system-dir, --unix-sockets,\n"
        "  --output-limit BYTES, --status-json FILE, --egress-allow HOST[:PORT],\n"
        "  --egress-allow-private HOST[:PORT]\n"
        "  --tty                         only with --mcp-endpoint command or http\n"
        "  -h, --help                    show this help\n"
        "\n"
        "Exit status: as glove exec; 125 also when an upstream (not optional) fails\n"
        "to start or initialize, or the agent sends a line longer than --max-frame.\n";

enum {
        OPT_WORKSPACE = 0x100,
        OPT_READ,
        OPT_WRITE,
        OPT_ENV,
        OPT_AUDIT_LOG,
        OPT_UPSTREAM,
        OPT_UPSTREAM_ENV,
        OPT_UPSTREAM_OPTIONAL,
        OPT_ALLOW,
        OPT_DENY,
        OPT_ALLOW_ARG,
        OPT_POLICY,
        OPT_CALL_TIMEOUT,
        OPT_MAX_FRAME,
        OPT_AUDIT_ARGUMENTS,
        OPT_CPU_TIME,
        OPT_MEMORY,
        OPT_PIDS,
        OPT_WALL_TIME,
        OPT_DISK,
        OPT_OUTPUT_LIMIT,
        OPT_STATUS_JSON,
        OPT_TTY,
        OPT_EGRESS_ALLOW,
        OPT_EGRESS_ALLOW_PRIVATE,
        OPT_HOME_FROM,
        OPT_NOFILE,
        OPT_UNSAFE_WRITE_SYSTEM_DIR,
        OPT_UNIX_SOCKETS,
        OPT_ALLOW_PROMPT,
        OPT_DENY_PROMPT,
        OPT_ALLOW_PROMPT_ARG,
        OPT_ALLOW_RESOURCE,
        OPT_DENY_RESOURCE,
        OPT_UPSTREAM_OWN_NAMES,
        OPT_UPSTREAM_ALLOW,
        OPT_DIRECT_STDIO,
        OPT_UPSTREAM_RO,
        OPT_UPSTREAM_RW,
        OPT_UPSTREAM_EGRESS,
        OPT_UPSTREAM_UNCONTAINED,
        OPT_UPSTREAM_LIMIT,
        OPT_RUN_AUDIT,
        OPT_MCP_ENDPOINT,
        OPT_MCP_PORT,
        OPT_END_,
};

#define SANDBOX_OPTIONS                                                   \
        {"workspace", required_argument, NULL, OPT_WORKSPACE},           \
        {"read", required_argument, NULL, OPT_READ},                     \
        {"write", required_argument, NULL, OPT_WRITE},                   \
        {"env", required_argument, NULL, OPT_ENV},                       \
        {"audit-log", required_argument, NULL, OPT_AUDIT_LOG},           \
        {"cpu-time", required_argument, NULL, OPT_CPU_TIME},             \
        {"memory", required_argument, NULL, OPT_MEMORY},                 \
        {"pids", required_argument, NULL, OPT_PIDS},                     \
        {"wall-time", required_argument, NULL, OPT_WALL_TIME},           \
        {"disk", required_argument, NULL, OPT_DISK},                     \
        {"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},     \
        {"status-json", required_argument, NULL, OPT_STATUS_JSON},       \
        {"tty", no_argument, NULL, OPT_TTY},                             \
        {"egress-allow", required_argument, NULL, OPT_EGRESS_ALLOW},     \
        {"egress-allow-private", required_argument, NULL, OPT_EGRESS_ALLOW_PRIVATE}, \
        {"home-from", required_argument, NULL, OPT_HOME_FROM},           \
        {"nofile", required_argument, NULL, OPT_NOFILE},                 \
        {"unsafe-write-system-dir", no_argument, NULL, OPT_UNSAFE_WRITE_SYSTEM_DIR}, \
        {"unix-sockets", no_argument, NULL, OPT_UNIX_SOCKETS}, \
        {"help", no_argument, NULL, 'h'}

/* --direct-stdio and --run-audit are glove run's, for the nested glove exec
 * of each contained upstream (upstream_sandbox.c): accepted, but left out of
 * --help, the man page and the completions (docs/mcp-mediation.md,
 * "Contained upstreams", describes them). */
static const struct option exec_options[] = {
        SANDBOX_OPTIONS,
        {"direct-stdio", no_argument, NULL, OPT_DIRECT_STDIO},
        {"run-audit", required_argument, NULL, OPT_RUN_AUDIT},
        {NULL, 0, NULL, 0},
};

static const struct option run_options[] = {
        SANDBOX_OPTIONS,
        {"upstream", required_argument, NULL, OPT_UPSTREAM},
        {"upstream-env", required_argument, NULL, OPT_UPSTREAM_ENV},
        {"upstream-optional", required_argument, NULL, OPT_UPSTREAM_OPTIONAL},
        {"upstream-ro", required_argument, NULL, OPT_UPSTREAM_RO},
        {"upstream-rw", required_argument, NULL, OPT_UPSTREAM_RW},
        {"upstream-egress", required_argument, NULL, OPT_UPSTREAM_EGRESS},
        {"upstream-uncontained", required_argument, NULL, OPT_UPSTREAM_UNCONTAINED},
        {"upstream-limit", required_argument, NULL, OPT_UPSTREAM_LIMIT},
        {"allow", required_argument, NULL, OPT_ALLOW},
        {"deny", required_argument, NULL, OPT_DENY},
        {"allow-arg", required_argument, NULL, OPT_ALLOW_ARG},
        {"allow-prompt", required_argument, NULL, OPT_ALLOW_PROMPT},
        {"deny-prompt", required_argument, NULL, OPT_DENY_PROMPT},
        {"allow-prompt-arg", required_argument, NULL, OPT_ALLOW_PROMPT_ARG},
        {"allow-resource", required_argument, NULL, OPT_ALLOW_RESOURCE},
        {"deny-resource", required_argument, NULL, OPT_DENY_RESOURCE},
        {"upstream-own-names", required_argument, NULL, OPT_UPSTREAM_OWN_NAMES},
        {"upstream-allow", required_argument, NULL, OPT_UPSTREAM_ALLOW},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"call-timeout", required_argument, NULL, OPT_CALL_TIMEOUT},
        {"max-frame", required_argument, NULL, OPT_MAX_FRAME},
        {"audit-arguments", no_argument, NULL, OPT_AUDIT_ARGUMENTS},
        {"mcp-endpoint", required_argument, NULL, OPT_MCP_ENDPOINT},
        {"mcp-port", required_argument, NULL, OPT_MCP_PORT},
        {NULL, 0, NULL, 0},
};

/* A number option into [min, max] (glove_number_parse_u64); with suffixes,
 * a size: K, M, G and T (powers of 1024, with or without B or iB) are
 * accepted, and the error names them. */
static int parse_number(const char *opt, const char *s, bool suffixes, uint64_t min, uint64_t max, uint64_t *out,
                        struct glove_error *err) {
        if (glove_number_parse_u64(s, suffixes ? GLOVE_NUMBER_SUFFIXES : 0, min, max, out) == 0)
                return 0;
        if (suffixes) {
                char lo[24], hi[24];
                return glove_error_set(err, EINVAL, "usage.bad_number", "%s %s: expected a size from %s to %s; %s", opt,
                                       s, glove_number_format_size(min, lo, sizeof(lo)),
                                       glove_number_format_size(max, hi, sizeof(hi)), GLOVE_NUMBER_SIZE_FORMS);
        }
        return glove_error_set(err, EINVAL, "usage.bad_number", "%s %s: expected a number from %llu to %llu", opt, s,
                               (unsigned long long)min, (unsigned long long)max);
}

/* A duration option into [min_ms, max_ms] (glove_duration_parse_ms): a
 * bare number is milliseconds, as these options always took. */
static int parse_duration(const char *opt, const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out,
                          struct glove_error *err) {
        if (glove_duration_parse_ms(s, 1, min_ms, max_ms, out) == 0)
                return 0;
        char lo[24], hi[24];
        return glove_error_set(err, EINVAL, "usage.bad_number",
                               "%s %s: expected a duration from %s to %s; %s, or a bare number of milliseconds", opt,
                               s, glove_duration_format_ms(min_ms, lo, sizeof(lo)),
                               glove_duration_format_ms(max_ms, hi, sizeof(hi)), GLOVE_DURATION_FORMS);
}

/* --nofile N may not exceed the invoker's own hard RLIMIT_NOFILE: the agent
 * cannot be given more than Glove may have. */
static int check_nofile(uint64_t n, struct glove_error *err) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && n > rl.rlim_max)
                return glove_error_set(err, EINVAL, "limits.nofile_above_hard",
                                       "--nofile %llu: above the invoker's own hard limit of %llu open files",
                                       (unsigned long long)n, (unsigned long long)rl.rlim_max);
        return 0;
}

static int push(const char **arr, size_t *n, const char *v, const char *opt, struct glove_error *err) {
        if (*n >= GLOVE_RUN_RULES_MAX)
                return glove_error_set(err, E2BIG, "usage.too_many", "more than %d %s options", GLOVE_RUN_RULES_MAX, opt);
        arr[(*n)++] = v;
        return 0;
}

static int private_needs_rule(struct glove_error *err) {
        return glove_error_set(err, EINVAL, "egress.private_needs_rule",
                               "--egress-allow-private needs the rule it applies to: write --egress-allow-private "
                               "HOST[:PORT] (a name that may resolve to private addresses); an address rule "
                               "such as --egress-allow 127.0.0.1:8080 needs no flag");
}

static int add_grant(struct glove_exec_options *o, const char *path, enum glove_grant_mode mode, bool ws,
                     struct glove_error *err) {
        if (o->n_grants >= GLOVE_GRANTS_MAX)
                return glove_error_set(err, E2BIG, "usage.too_many", "more than %d grants", GLOVE_GRANTS_MAX);
        o->grants[o->n_grants++] = (struct glove_exec_grant_spec){path, mode, ws};
        return 0;
}

/* The options that take one value and may be given once: a second one is
 * an error naming the option ("usage.option_twice"), never a silent win.
 * --audit-log, --policy and --status-json keep their own older codes. */
static const char *single_valued(int c) {
        switch (c) {
        case OPT_CPU_TIME: return "--cpu-time";
        case OPT_MEMORY: return "--memory";
        case OPT_PIDS: return "--pids";
        case OPT_WALL_TIME: return "--wall-time";
        case OPT_DISK: return "--disk";
        case OPT_OUTPUT_LIMIT: return "--output-limit";
        case OPT_CALL_TIMEOUT: return "--call-timeout";
        case OPT_MAX_FRAME: return "--max-frame";
        case OPT_HOME_FROM: return "--home-from";
        case OPT_NOFILE: return "--nofile";
        case OPT_MCP_ENDPOINT: return "--mcp-endpoint";
        case OPT_MCP_PORT: return "--mcp-port";
        default: return NULL;
        }
}

/* The smallest --pids that can run anything: the sandbox's PID 1 (its init)
 * and the agent, plus the egress helper when egress is on (docs/limits.md). */
static int check_pids(const struct glove_exec_options *opts, struct glove_error *err) {
        bool egress = opts->n_egress_allow > 0 || opts->n_egress_allow_private > 0;
        uint64_t need = (egress ? GLOVE_EXEC_PIDS_MIN_EGRESS : GLOVE_EXEC_PIDS_MIN) + (opts->mcp_endpoints ? 1 : 0);
        if (!opts->pids_given || opts->pids >= need)
                return 0;
        return glove_error_set(err, EINVAL, "usage.pids_too_low",
                               "--pids %llu can never run: the sandbox needs %llu processes at least (its PID 1 init%s and "
                               "the agent)",
                               (unsigned long long)opts->pids, (unsigned long long)need,
                               egress && opts->mcp_endpoints ? ", the egress helper, the MCP endpoint's listener"
                               : egress                      ? ", the egress helper"
                               : opts->mcp_endpoints         ? ", the MCP endpoint's listener"
                                                             : "");
}

/* --mcp-endpoint stdio | command | http | command,http (either order). */
static int parse_endpoints(const char *arg, unsigned *out, struct glove_error *err) {
        unsigned bits = 0;
        const char *p = arg;
        for (;;) {
                const char *comma = strchr(p, ',');
                size_t n = comma ? (size_t)(comma - p) : strlen(p);
                unsigned bit = 0;
                if (n == 5 && strncmp(p, "stdio", 5) == 0)
                        bit = 0x80;
                else if (n == 7 && strncmp(p, "command", 7) == 0)
                        bit = GLOVE_RUN_ENDPOINT_COMMAND;
                else if (n == 4 && strncmp(p, "http", 4) == 0)
                        bit = GLOVE_RUN_ENDPOINT_HTTP;
                if (!bit || (bits & bit))
                        return glove_error_set(err, EINVAL, "usage.bad_mcp_endpoint",
                                               "--mcp-endpoint %s: give stdio, command, http or command,http", arg);
                bits |= bit;
                if (!comma)
                        break;
                p = comma + 1;
        }
        if ((bits & 0x80) && bits != 0x80)
                return glove_error_set(err, EINVAL, "usage.bad_mcp_endpoint",
                                       "--mcp-endpoint %s: stdio (the agent's own stdin and stdout) combines with nothing", arg);
        *out = bits & ~0x80u;
        return 0;
}

static int parse(int argc, char **argv, bool run, struct glove_exec_options *opts, struct glove_error *err) {
        const char *cmd = run ? "run" : "exec";
        bool seen[OPT_END_ - OPT_WORKSPACE] = {false};
        memset(opts, 0, sizeof(*opts));
        opts->call_timeout_ms = GLOVE_RUN_CALL_TIMEOUT_DEFAULT_MS;
        opts->max_frame = GLOVE_MCP_FRAME_DEFAULT;
        uint64_t v;
        /* '+': stop at the first non-option; ':': report a missing argument
         * distinctly. optind = 0 re-initializes glibc's getopt. */
        optind = 0;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, "+:h", run ? run_options : exec_options, NULL)) != -1) {
                int r = 0;
                const char *once = single_valued(c);
                if (once) {
                        if (seen[c - OPT_WORKSPACE])
                                return glove_error_set(err, EINVAL, "usage.option_twice", "%s given more than once", once);
                        seen[c - OPT_WORKSPACE] = true;
                }
                switch (c) {
                case OPT_WORKSPACE:
                        r = add_grant(opts, optarg, GLOVE_GRANT_WRITE, true, err);
                        break;
                case OPT_READ:
                        r = add_grant(opts, optarg, GLOVE_GRANT_READ, false, err);
                        break;
                case OPT_WRITE:
                        r = add_grant(opts, optarg, GLOVE_GRANT_WRITE, false, err);
                        break;
                case OPT_ENV:
                        if (opts->n_env >= sizeof(opts->env_names) / sizeof(opts->env_names[0]))
                                return glove_error_set(err, E2BIG, "usage.too_many", "more than 64 --env names");
                        opts->env_names[opts->n_env++] = optarg;
                        break;
                case OPT_AUDIT_LOG:
                        if (opts->audit_log)
                                return glove_error_set(err, EINVAL, "usage.audit_log_twice", "--audit-log given more than once");
                        opts->audit_log = optarg;
                        break;
                case OPT_UPSTREAM:
                        if (opts->n_upstreams >= GLOVE_RUN_UPSTREAMS_MAX)
                                return glove_error_set(err, E2BIG, "usage.too_many", "more than %d upstreams", GLOVE_RUN_UPSTREAMS_MAX);
                        opts->upstreams[opts->n_upstreams++] = optarg;
                        break;
                case OPT_UPSTREAM_OPTIONAL:
                        if (opts->n_upstream_optional >= GLOVE_RUN_UPSTREAMS_MAX)
                                return glove_error_set(err, E2BIG, "usage.too_many", "more than %d --upstream-optional",
                                                       GLOVE_RUN_UPSTREAMS_MAX);
                        opts->upstream_optional[opts->n_upstream_optional++] = optarg;
                        break;
                case OPT_UPSTREAM_ENV:
                        r = push(opts->upstream_env, &opts->n_upstream_env, optarg, "--upstream-env", err);
                        break;
                case OPT_UPSTREAM_RO:
                        r = push(opts->upstream_ro, &opts->n_upstream_ro, optarg, "--upstream-ro", err);
                        break;
                case OPT_UPSTREAM_RW:
                        r = push(opts->upstream_rw, &opts->n_upstream_rw, optarg, "--upstream-rw", err);
                        break;
                case OPT_UPSTREAM_EGRESS:
                        r = push(opts->upstream_egress, &opts->n_upstream_egress, optarg, "--upstream-egress", err);
                        break;
                case OPT_UPSTREAM_UNCONTAINED:
                        r = push(opts->upstream_uncontained, &opts->n_upstream_uncontained, optarg, "--upstream-uncontained",
                                 err);
                        break;
                case OPT_UPSTREAM_LIMIT:
                        r = push(opts->upstream_limit, &opts->n_upstream_limit, optarg, "--upstream-limit", err);
                        break;
                case OPT_DIRECT_STDIO:
                        opts->direct_stdio = true;
                        break;
                case OPT_RUN_AUDIT:
                        if (opts->run_audit)
                                return glove_error_set(err, EINVAL, "usage.option_twice", "--run-audit given more than once");
                        opts->run_audit = optarg;
                        break;
                case OPT_ALLOW:
                        r = push(opts->allow, &opts->n_allow, optarg, "--allow", err);
                        break;
                case OPT_DENY:
                        r = push(opts->deny, &opts->n_deny, optarg, "--deny", err);
                        break;
                case OPT_ALLOW_ARG:
                        r = push(opts->allow_arg, &opts->n_allow_arg, optarg, "--allow-arg", err);
                        break;
                case OPT_ALLOW_PROMPT:
                case OPT_DENY_PROMPT:
                case OPT_ALLOW_PROMPT_ARG:
                case OPT_ALLOW_RESOURCE:
                case OPT_DENY_RESOURCE:
                        if (opts->n_feature_rules >= GLOVE_RUN_RULES_MAX)
                                return glove_error_set(err, E2BIG, "usage.too_many", "more than %d prompt and resource rules",
                                                       GLOVE_RUN_RULES_MAX);
                        opts->feature_rules[opts->n_feature_rules].kind = (enum glove_run_feature_rule)(c - OPT_ALLOW_PROMPT);
                        opts->feature_rules[opts->n_feature_rules++].text = optarg;
                        break;
                case OPT_UPSTREAM_OWN_NAMES:
                        if (opts->n_upstream_own_names >= GLOVE_RUN_UPSTREAMS_MAX)
                                return glove_error_set(err, E2BIG, "usage.too_many", "more than %d --upstream-own-names",
                                                       GLOVE_RUN_UPSTREAMS_MAX);
                        opts->upstream_own_names[opts->n_upstream_own_names++] = optarg;
                        break;
                case OPT_UPSTREAM_ALLOW:
                        r = push(opts->upstream_allow, &opts->n_upstream_allow, optarg, "--upstream-allow", err);
                        break;
                case OPT_POLICY:
                        if (opts->policy_file)
                                return glove_error_set(err, EINVAL, "usage.policy_twice", "--policy given more than once");
                        opts->policy_file = optarg;
                        break;
                case OPT_CALL_TIMEOUT:
                        r = parse_duration("--call-timeout", optarg, 1, GLOVE_RUN_CALL_TIMEOUT_MAX_MS, &v, err);
                        opts->call_timeout_ms = (int64_t)v;
                        break;
                case OPT_MAX_FRAME:
                        r = parse_number("--max-frame", optarg, true, GLOVE_MCP_FRAME_MIN, GLOVE_MCP_FRAME_MAX, &v, err);
                        opts->max_frame = (size_t)v;
                        break;
                case OPT_CPU_TIME:
                        r = parse_duration("--cpu-time", optarg, 1, 24ULL * 3600 * 1000, &opts->cpu_time_ms, err);
                        break;
                case OPT_MEMORY:
                        r = parse_number("--memory", optarg, true, 1ULL << 20, 1ULL << 44, &opts->memory_bytes, err);
                        break;
                case OPT_PIDS:
                        /* 0 and 1 parse, to be refused with their reason
                         * once egress is known (check_pids). */
                        r = parse_number("--pids", optarg, false, 0, GLOVE_EXEC_PIDS_MAX, &opts->pids, err);
                        opts->pids_given = true;
                        break;
                case OPT_WALL_TIME:
                        r = parse_duration("--wall-time", optarg, 1, 7ULL * 24 * 3600 * 1000, &opts->wall_time_ms, err);
                        break;
                case OPT_DISK:
                        r = parse_number("--disk", optarg, true, 64ULL << 10, 1ULL << 44, &opts->disk_bytes, err);
                        break;
                case OPT_OUTPUT_LIMIT:
                        r = parse_number("--output-limit", optarg, true, 1, 1ULL << 50, &opts->output_bytes, err);
                        break;
                case OPT_STATUS_JSON:
                        if (opts->status_json)
                                return glove_error_set(err, EINVAL, "usage.status_json_twice", "--status-json given more than once");
                        opts->status_json = optarg;
                        break;
                case OPT_TTY:
                        opts->tty = true; /* glove run: only with a non-stdio --mcp-endpoint (below) */
                        break;
                case OPT_MCP_ENDPOINT:
                        r = parse_endpoints(optarg, &opts->mcp_endpoints, err);
                        break;
                case OPT_MCP_PORT:
                        r = parse_number("--mcp-port", optarg, false, 1, 65535, &v, err);
                        opts->mcp_port = (uint16_t)v;
                        break;
                case OPT_EGRESS_ALLOW:
                        r = push(opts->egress_allow, &opts->n_egress_allow, optarg, "--egress-allow", err);
                        break;
                case OPT_EGRESS_ALLOW_PRIVATE:
                        /* The old bare switch took no argument: "--egress-allow-private
                         * -- prog" must not silently make "--" a rule. */
                        if (optarg[0] == '-' || optarg[0] == '\0')
                                return private_needs_rule(err);
                        r = push(opts->egress_allow_private, &opts->n_egress_allow_private, optarg,
                                 "--egress-allow-private", err);
                        break;
                case OPT_NOFILE:
                        r = parse_number("--nofile", optarg, false, GLOVE_RUN_NOFILE_MIN, GLOVE_RUN_NOFILE_MAX, &opts->nofile,
                                         err);
                        if (r == 0)
                                r = check_nofile(opts->nofile, err);
                        break;
                case OPT_UNSAFE_WRITE_SYSTEM_DIR:
                        opts->unsafe_write_system_dir = true;
                        break;
                case OPT_UNIX_SOCKETS:
                        opts->allow_unix_sockets = true;
                        break;
                case OPT_AUDIT_ARGUMENTS:
                        opts->audit_arguments = true;
                        break;
                case OPT_HOME_FROM:
                        if (!*optarg)
                                return glove_error_set(err, EINVAL, "usage.bad_path", "--home-from: the path is empty");
                        opts->home_from = optarg;
                        break;
                case 'h':
                        opts->help = true;
                        return 0;
                case ':':
                        if (optopt == OPT_EGRESS_ALLOW_PRIVATE)
                                return private_needs_rule(err);
                        return glove_error_set(err, EINVAL, "usage.missing_argument", "%s needs an argument; see glove %s --help",
                                               argv[optind - 1], cmd);
                default:
                        if (optopt)
                                return glove_error_set(err, EINVAL, "usage.unknown_option", "unknown option -%c; see glove %s --help",
                                                       optopt, cmd);
                        return glove_error_set(err, EINVAL, "usage.unknown_option", "unknown option %s; see glove %s --help",
                                               argv[optind - 1], cmd);
                }
                if (r < 0)
                        return r;
        }
        if (optind >= argc)
                return glove_error_set(err, EINVAL, "usage.missing_program",
                                       "no program given; usage: glove %s [OPTIONS] -- PROGRAM [ARG...]", cmd);
        if (argv[optind][0] == '\0')
                return glove_error_set(err, EINVAL, "usage.missing_program", "the program name is empty");
        opts->program = &argv[optind];
        if (opts->run_audit && (!opts->direct_stdio || opts->audit_log))
                return glove_error_set(err, EINVAL, "usage.run_audit",
                                       "--run-audit is glove run's, for a contained upstream: with --direct-stdio and "
                                       "without --audit-log");
        if (opts->direct_stdio && opts->tty)
                return glove_error_set(err, EINVAL, "usage.tty_direct_stdio",
                                       "--tty and --direct-stdio exclude each other: the program's stdin and stdout are Glove's own");
        if (run && opts->tty && !opts->mcp_endpoints)
                return glove_error_set(err, EINVAL, "usage.tty_run",
                                       "--tty: glove run's agent talks MCP on its stdin and stdout, which cannot be a terminal "
                                       "(--mcp-endpoint command or http keeps the agent's terminal)");
        if (run && opts->mcp_port && !opts->mcp_endpoints)
                return glove_error_set(err, EINVAL, "usage.mcp_port_without_endpoint",
                                       "--mcp-port needs --mcp-endpoint command or http");
        if (!opts->mcp_port)
                opts->mcp_port = GLOVE_RUN_MCP_PORT_DEFAULT;
        if (opts->mcp_endpoints && opts->mcp_port == GLOVE_RUN_EGRESS_PORT &&
            (opts->n_egress_allow || opts->n_egress_allow_private))
                return glove_error_set(err, EINVAL, "usage.mcp_port_taken",
                                       "--mcp-port %u is the egress proxy's port in the sandbox", (unsigned)opts->mcp_port);
        return check_pids(opts, err);
}

int glove_exec_parse(int argc, char **argv, struct glove_exec_options *opts, struct glove_error *err) {
        return parse(argc, argv, false, opts, err);
}

int glove_run_parse(int argc, char **argv, struct glove_exec_options *opts, struct glove_error *err) {
        return parse(argc, argv, true, opts, err);
}

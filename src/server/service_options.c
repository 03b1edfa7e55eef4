/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gloved's options (see service.h): the usage text, the command line parsed
 * into struct glove_server_service_options (each value checked, paths
 * normalized, durations and counts bounded), the checks between options, and
 * the runtime and state directories' defaults. Start-up and shutdown are in
 * service.c.
 */
#include "glove/server/service.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/log.h"
#include "glove/base/number.h"
#include "glove/base/path.h"
#include "glove/server/server.h"

#include "service_internal.h"

const char glove_server_service_usage[] =
        "Usage: gloved [OPTIONS]\n"
        "\n"
        "The owner-local Glove control service: validates identifier-only session\n"
        "plans against a protected local policy, stores sessions durably, runs\n"
        "managed sessions (with --materialization-root) and delivers HMAC-chained\n"
        "receipts over an owner-only Unix socket.\n"
        "\n"
        "Options:\n"
        "  --runtime-dir DIR        socket and bootstrap secret (default $XDG_RUNTIME_DIR/glove)\n"
        "  --state-dir DIR          receipt journal and key (default $XDG_STATE_HOME/glove)\n"
        "  --session-policy FILE    protected policy: enables validate_plan\n"
        "  --session-store FILE     session journal: enables create_session, session_status\n"
        "                           (needs --session-policy)\n"
        "  --materialization-root DIR  managed sessions: enables start_session, attach, ...\n"
        "                           (needs --session-policy and --session-store, and a\n"
        "                           delegated cgroup to be operational)\n"
        "  --library-bundle-root DIR  library bundles (DIR/<sha256>.json) plans may project\n"
        "                           (needs --materialization-root; DIR must exist, mode 0700)\n"
        "  --remote-backend FILE    the construction-only remote backend (protected, 0600):\n"
        "                           validated, its OpenSSH config and pinned known_hosts\n"
        "                           written to the runtime directory, reported in\n"
        "                           capabilities; enables no lifecycle method (not with\n"
        "                           --materialization-root; docs/remote-backend.md)\n"
        "  --path-exposure-policy FILE   owner-approved roots (protected, 0600): with\n"
        "  --path-exposure-journal FILE  the exposure journal, enables exposure_catalog and\n"
        "                           the owner methods (glove init) and writes\n"
        "                           RUNTIME/owner-secret; give both or neither\n"
        "  --local-services FILE    host services a managed agent may reach through one\n"
        "                           bounded, audited channel (protected, 0600; needs\n"
        "                           --materialization-root; docs/local-services.md)\n"
        "  --receipt-anchor HEX     64-hex anchor the receipt chain starts from\n"
        "  --client-timeout-ms TIME authentication, frame and send deadline (default 5s)\n"
        "  --idle-timeout-ms TIME   idle authenticated connection deadline (default 10m)\n"
        "                           (TIME: milliseconds, or a number with a unit ms, s,\n"
        "                           m or h: 500ms, 30s, 5m, 2h)\n"
        "  --max-connections N      concurrent connections (default 256)\n"
        "  --compact-records N      compact the session journal past N records and the\n"
        "                           receipt journal past N acknowledged receipts\n"
        "                           (8..1000000; default 4000 and 1000)\n"
        "  --log-level LEVEL        debug, info, notice, warning or error (default info);\n"
        "                           logs go to the journal under systemd, else JSON lines\n"
        "                           on stderr (docs/daemon.md, \"Logs\")\n"
        "  -h, --help               show this help\n"
        "  -V, --version            show the version\n"
        "\n"
        "Directories must be absolute, owned by you, mode 0700 (created so when missing).\n"
        "Protocol: docs/control-protocol.md.\n";

/* Stores the lexically normalized form of an absolute path (duplicate
 * slashes, "." and a trailing slash removed). */
static int set_path(char **dst, const char *v, const char *opt, struct glove_error *err) {
        if (!v || v[0] != '/')
                return glove_error_set(err, EINVAL, "usage.bad_value", "%s needs an absolute path", opt);
        /* A FILE option's value names a file: "FILE/" is not normalized
         * away (open(2) would refuse it with ENOTDIR). */
        size_t len = strlen(v);
        if (len > 1 && v[len - 1] == '/' && strstr(opt, "-dir") == NULL && strstr(opt, "-root") == NULL)
                return glove_error_set(err, EINVAL, "usage.bad_value",
                                       "%s %s ends in '/': it names a file; give it without the slash", opt, v);
        char *norm = NULL;
        struct glove_error e = { 0 };
        if (glove_path_normalize(v, "/", &norm, &e) < 0)
                return glove_error_set(err, EINVAL, "usage.bad_value", "%s: %s", opt, e.message);
        size_t vl = strlen(v), nl = strlen(norm);
        if (strcmp(norm, v) != 0 && !(vl == nl + 1 && v[vl - 1] == '/' && strncmp(v, norm, nl) == 0)) {
                /* "." and ".." are resolved lexically, which is not what the
                 * kernel does when a component is a symbolic link: say so
                 * rather than guess. */
                int r = glove_error_set(err, EINVAL, "usage.bad_value",
                                        "%s %s is not normalized (no '.', '..' or '//' components); did you mean %s?",
                                        opt, v, norm);
                free(norm);
                return r;
        }
        free(*dst);
        *dst = norm;
        return 0;
}

/* A duration option: a bare number is milliseconds (the options say -ms),
 * or a number with a unit (glove_duration_parse_ms). */
static int parse_ms(const char *v, uint64_t min, uint64_t max, const char *opt, uint64_t *out,
                    struct glove_error *err) {
        char lo[24], hi[24];
        if (glove_duration_parse_ms(v, 1, min, max, out) < 0)
                return glove_error_set(err, EINVAL, "usage.bad_value",
                                       "%s %s: expected a duration from %s to %s; %s, or a bare number of "
                                       "milliseconds",
                                       opt, v, glove_duration_format_ms(min, lo, sizeof(lo)),
                                       glove_duration_format_ms(max, hi, sizeof(hi)), GLOVE_DURATION_FORMS);
        return 0;
}

static int parse_u64(const char *v, uint64_t min, uint64_t max, const char *opt, uint64_t *out,
                     struct glove_error *err) {
        if (glove_number_parse_u64(v, 0, min, max, out) < 0)
                return glove_error_set(err, EINVAL, "usage.bad_value", "%s must be an integer %llu..%llu", opt,
                                       (unsigned long long)min, (unsigned long long)max);
        return 0;
}

static int default_dir(char **dst, const char *env, const char *fallback_rel, struct glove_error *err) {
        const char *base = getenv(env);
        _cleanup_free_ char *joined = NULL;
        int n;
        if (base && base[0] == '/')
                n = asprintf(&joined, "%s/glove", base);
        else if (fallback_rel && getenv("HOME") && getenv("HOME")[0] == '/')
                n = asprintf(&joined, "%s/%s/glove", getenv("HOME"), fallback_rel);
        else
                return glove_error_set(err, EINVAL, "service.no_default_dir",
                                       "$%s is not set to an absolute path; pass the directory explicitly", env);
        if (n < 0) {
                joined = NULL;
                return glove_error_set(err, ENOMEM, "service.no_default_dir", "out of memory");
        }
        return set_path(dst, joined, env, err);
}

enum { OPT_RUNTIME = 256, OPT_STATE, OPT_POLICY, OPT_STORE, OPT_ANCHOR, OPT_CLIENT_TO, OPT_IDLE_TO, OPT_MAXCONN,
       OPT_MROOT, OPT_BROOT, OPT_LOG_LEVEL, OPT_COMPACT, OPT_XPOLICY, OPT_XJOURNAL, OPT_LOCAL_SERVICES, OPT_REMOTE };

static int parse_one(int opt, const char *v, struct glove_server_service_options *o, struct glove_error *err) {
        uint64_t n;
        int r = 0;
        switch (opt) {
        case OPT_RUNTIME:
                return set_path(&o->runtime_dir, v, "--runtime-dir", err);
        case OPT_STATE:
                return set_path(&o->state_dir, v, "--state-dir", err);
        case OPT_POLICY:
                return set_path(&o->session_policy, v, "--session-policy", err);
        case OPT_STORE:
                return set_path(&o->session_store, v, "--session-store", err);
        case OPT_MROOT:
                return set_path(&o->materialization_root, v, "--materialization-root", err);
        case OPT_BROOT:
                return set_path(&o->library_bundle_root, v, "--library-bundle-root", err);
        case OPT_XPOLICY:
                return set_path(&o->path_exposure_policy, v, "--path-exposure-policy", err);
        case OPT_XJOURNAL:
                return set_path(&o->path_exposure_journal, v, "--path-exposure-journal", err);
        case OPT_LOCAL_SERVICES:
                return set_path(&o->local_services, v, "--local-services", err);
        case OPT_REMOTE:
                return set_path(&o->remote_backend, v, "--remote-backend", err);
        case OPT_ANCHOR:
                if (!v || glove_digest_hex_decode(v, strlen(v), o->anchor, sizeof(o->anchor), NULL) < 0)
                        return glove_error_set(err, EINVAL, "usage.bad_value",
                                               "--receipt-anchor needs 64 lowercase hex characters");
                o->have_anchor = true;
                return 0;
        case OPT_CLIENT_TO:
                return parse_ms(v, 1, 3600000, "--client-timeout-ms", &o->client_timeout_ms, err);
        case OPT_IDLE_TO:
                return parse_ms(v, 1, 86400000, "--idle-timeout-ms", &o->idle_timeout_ms, err);
        case OPT_LOG_LEVEL:
                if (glove_log_level_parse(v, &o->log_level) < 0)
                        return glove_error_set(err, EINVAL, "usage.bad_value",
                                               "--log-level %s: expected debug, info, notice, warning or error", v);
                return 0;
        case OPT_COMPACT:
                return parse_u64(v, 8, 1000000, "--compact-records", &o->compact_records, err);
        case OPT_MAXCONN:
                r = parse_u64(v, 1, 4096, "--max-connections", &n, err);
                o->max_connections = (unsigned)n;
                return r;
        }
        return glove_error_set(err, EINVAL, "usage.unknown_option", "unknown option; see gloved --help");
}

int glove_server_service_parse_args(int argc, char **argv, struct glove_server_service_options *o,
                                     struct glove_error *err) {
        static const struct option longopts[] = {
                { "runtime-dir", required_argument, NULL, OPT_RUNTIME },
                { "state-dir", required_argument, NULL, OPT_STATE },
                { "session-policy", required_argument, NULL, OPT_POLICY },
                { "session-store", required_argument, NULL, OPT_STORE },
                { "receipt-anchor", required_argument, NULL, OPT_ANCHOR },
                { "client-timeout-ms", required_argument, NULL, OPT_CLIENT_TO },
                { "idle-timeout-ms", required_argument, NULL, OPT_IDLE_TO },
                { "max-connections", required_argument, NULL, OPT_MAXCONN },
                { "materialization-root", required_argument, NULL, OPT_MROOT },
                { "library-bundle-root", required_argument, NULL, OPT_BROOT },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "compact-records", required_argument, NULL, OPT_COMPACT },
                { "path-exposure-policy", required_argument, NULL, OPT_XPOLICY },
                { "path-exposure-journal", required_argument, NULL, OPT_XJOURNAL },
                { "remote-backend", required_argument, NULL, OPT_REMOTE },
                { "local-services", required_argument, NULL, OPT_LOCAL_SERVICES },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { 0 },
        };
        *o = (struct glove_server_service_options){
                .client_timeout_ms = GLOVE_SERVER_CLIENT_TIMEOUT_MS_DEFAULT,
                .idle_timeout_ms = GLOVE_SERVER_IDLE_TIMEOUT_MS_DEFAULT,
                .max_connections = GLOVE_SERVER_MAX_CONNECTIONS_DEFAULT,
                .log_level = GLOVE_LOG_INFO,
        };
        optind = 1;
        opterr = 0;
        int c, r, li = -1;
        /* Every valued option names one thing (a file, a directory, a
         * bound): given twice, the first would be dropped unchecked, so it
         * is a usage error (usage.repeated_option), not "the last wins". */
        uint32_t seen = 0;
        while ((c = getopt_long(argc, argv, "+hV", longopts, &li)) != -1) {
                if (c >= OPT_RUNTIME && c <= OPT_REMOTE) {
                        uint32_t bit = UINT32_C(1) << (c - OPT_RUNTIME);
                        if (seen & bit)
                                return glove_error_set(err, EINVAL, "usage.repeated_option",
                                                       "--%s is given more than once; give it once (a second value "
                                                       "would silently replace the first)",
                                                       li >= 0 ? longopts[li].name : "option");
                        seen |= bit;
                }
                li = -1;
                if (c == 'h' || c == 'V') {
                        o->help |= c == 'h';
                        o->version |= c == 'V';
                        continue;
                }
                if (c == '?' || c == ':')
                        return glove_error_set(err, EINVAL, optopt ? "usage.missing_value" : "usage.unknown_option",
                                               "bad option %s; see gloved --help", argv[optind - 1]);
                r = parse_one(c, optarg, o, err);
                if (r < 0)
                        return r;
        }
        if (optind < argc)
                return glove_error_set(err, EINVAL, "usage.unknown_option", "unexpected argument \"%s\"", argv[optind]);
        if (o->help || o->version)
                return 0;
        if (o->session_store && !o->session_policy)
                return glove_error_set(err, EINVAL, "usage.store_needs_policy",
                                       "--session-store needs --session-policy (sessions are validated plans)");
        if (o->remote_backend && o->materialization_root)
                return glove_error_set(err, EINVAL, "usage.backend_conflict",
                                       "--remote-backend and --materialization-root are mutually exclusive (the "
                                       "construction-only remote backend and local managed sessions): give one");
        if (o->materialization_root && (!o->session_policy || !o->session_store))
                return glove_error_set(err, EINVAL, "usage.root_needs_store",
                                       "--materialization-root needs --session-policy and --session-store");
        if (o->local_services && !o->materialization_root)
                return glove_error_set(err, EINVAL, "usage.local_services_without_runtime",
                                       "--local-services needs --materialization-root (local services belong to "
                                       "managed sessions)");
        if (o->library_bundle_root && !o->materialization_root)
                return glove_error_set(err, EINVAL, "usage.bundle_root_needs_runtime",
                                       "--library-bundle-root needs --materialization-root (bundles are projected "
                                       "into managed sessions)");
        if (!o->path_exposure_policy != !o->path_exposure_journal)
                return glove_error_set(err, EINVAL, "usage.exposure_options_pair",
                                       "%s needs %s too (path exposures are the policy's roots and the journal of "
                                       "what was enrolled beneath them: give both or neither)",
                                       o->path_exposure_policy ? "--path-exposure-policy" : "--path-exposure-journal",
                                       o->path_exposure_policy ? "--path-exposure-journal FILE"
                                                               : "--path-exposure-policy FILE");
        if (!o->runtime_dir && (r = default_dir(&o->runtime_dir, "XDG_RUNTIME_DIR", NULL, err)) < 0)
                return r;
        if (!o->state_dir && (r = default_dir(&o->state_dir, "XDG_STATE_HOME", ".local/state", err)) < 0)
                return r;
        return 0;
}

void glove_server_service_options_free(struct glove_server_service_options *o) {
        free(o->runtime_dir);
        free(o->state_dir);
        free(o->session_policy);
        free(o->session_store);
        free(o->materialization_root);
        free(o->library_bundle_root);
        free(o->path_exposure_policy);
        free(o->path_exposure_journal);
        free(o->remote_backend);
        free(o->local_services);
        *o = (struct glove_server_service_options){ 0 };
}

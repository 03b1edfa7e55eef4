/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * gloved start-up (issue "gloved control plane", The service; spec
 * session-policy.md, "Capability activation" and "Protected files").
 *
 *   gloved [--runtime-dir DIR] [--state-dir DIR] [--session-policy FILE]
 *          [--session-store FILE] [--receipt-anchor HEX64]
 *          [--client-timeout-ms MS] [--idle-timeout-ms MS]
 *          [--max-connections N]
 *          [--path-exposure-policy FILE --path-exposure-journal FILE]
 *          [--remote-backend FILE]
 *
 * Start-up order, each step fatal on failure (exit 1, one line on stderr
 * "gloved: <code>: <message>"):
 *   1. runtime dir (default $XDG_RUNTIME_DIR/glove) and state dir (default
 *      $XDG_STATE_HOME/glove, else $HOME/.local/state/glove): absolute,
 *      created 0700 when missing, refused unless owned by the service user
 *      with mode 0700; an exclusive lock on DIR/gloved.lock in each
 *      (service.already_running);
 *   2. the session policy, loaded once and frozen (glove_supervisor_policy_load);
 *   2b. with --remote-backend: the protected remote backend file, loaded and
 *      validated (glove_remote_backend_load, owner the service uid); without
 *      it, remote artifacts an earlier gloved left in RUNTIME are removed;
 *   3. the session store, replayed strictly (store.h);
 *   4. the receipt journal and key (receipts.h); the managed runtime, or
 *      with --remote-backend the construction-only remote runtime: its
 *      OpenSSH client configuration and pinned known_hosts written
 *      atomically to RUNTIME/remote-ssh_config and RUNTIME/remote-known_hosts
 *      (0600; on a failure neither is left; glove/remote/artifacts.h), then
 *      the runtime object (glove/remote/runtime.h), which resolves no name,
 *      opens no socket and runs no program;
 *   4b. with --path-exposure-policy and --path-exposure-journal: the exposure
 *      policy (glove_exposure_policy_load, owner the service uid) and the
 *      registry (glove_exposures_open: its journal locked and replayed
 *      strictly; a second gloved on it is journal.locked), no exposure
 *      allowed to be, contain or be inside the runtime, state,
 *      materialization, bundle or lease directory nor to contain a file
 *      given to gloved (glove/supervisor/exposure.h);
 *   5. a fresh 256-bit secret written to RUNTIME/bootstrap-secret (0600,
 *      64 lowercase hex and a newline, atomically), and with exposures
 *      another to RUNTIME/owner-secret the same way (without them a stale
 *      RUNTIME/owner-secret is removed);
 *   6. the socket: one inherited through sd_listen_fds (socket activation),
 *      else RUNTIME/gloved.sock bound with mode 0600 (a stale socket is
 *      replaced: the lock proves no other gloved owns it);
 *   7. the loop (server.h), READY=1.
 * On SIGTERM/SIGINT: connections closed, the socket (when gloved bound it),
 * the bootstrap and owner secrets and the remote artifacts removed, exit 0.
 * A start-up failure removes the secrets and remote artifacts it wrote.
 *
 * Option errors are usage.* codes (exit 2): usage.unknown_option,
 * usage.missing_value, usage.bad_value, usage.store_needs_policy,
 * usage.not_built (--session-policy in a build without the supervisor),
 * usage.exposure_options_pair (one of the two --path-exposure-* options),
 * usage.backend_conflict (--remote-backend with --materialization-root),
 * usage.repeated_option (a valued option given twice: the first value is
 * never dropped unchecked). A FILE option's value ending in '/' is
 * usage.bad_value.
 * Start-up codes: service.no_default_dir, service.already_running,
 * service.socket, service.listen_fds, service.secret, and the codes of
 * dirs.h, policy.h, store.h/journal.h, receipts.h, exposure.h and
 * remote/backend.h, remote/artifacts.h (policy.*, journal.*,
 * exposure.journal_invalid, remote.*).
 */

#include <stdbool.h>
#include <stdint.h>

#include "glove/base/error.h"
#include "glove/base/log.h"

struct glove_server_service_options {
        char *runtime_dir;            /* malloc'd, absolute */
        char *state_dir;              /* malloc'd, absolute */
        char *session_policy;         /* malloc'd or NULL */
        char *session_store;          /* malloc'd or NULL */
        char *materialization_root;   /* malloc'd or NULL: the managed runtime */
        char *library_bundle_root;    /* malloc'd or NULL: library projections */
        char *path_exposure_policy;   /* malloc'd or NULL (both or neither): path exposures */
        char *path_exposure_journal;  /* malloc'd or NULL */
        char *remote_backend;         /* malloc'd or NULL: the construction-only remote backend */
        char *local_services;         /* malloc'd or NULL: the local-services file (#28) */
        bool have_anchor;
        uint8_t anchor[32];
        uint64_t client_timeout_ms;
        uint64_t idle_timeout_ms;
        unsigned max_connections;
        /* --compact-records: the session journal is compacted past this many
         * records and the receipt journal past this many acknowledged
         * receipts (8..1000000); 0: GLOVE_STORE_COMPACT_RECORDS and
         * GLOVE_STORE_RECEIPTS_COMPACT_RECORDS. */
        uint64_t compact_records;
        bool help, version;           /* --help / --version seen */
        enum glove_log_level log_level; /* --log-level (default GLOVE_LOG_INFO) */
};

/*
 * Parses gloved's arguments (argv[0] is the program) into o, filling
 * defaults from the environment (XDG_RUNTIME_DIR, XDG_STATE_HOME, HOME).
 * Returns 0, or -EINVAL with a usage.* or service.no_default_dir code.
 * Release with glove_server_service_options_free.
 */
int glove_server_service_parse_args(int argc, char **argv, struct glove_server_service_options *o,
                                     struct glove_error *err);

void glove_server_service_options_free(struct glove_server_service_options *o);

/*
 * Runs gloved with parsed options until stopped, logging to log (borrowed;
 * NULL: nowhere). Returns 0 after a clean stop, or a negative errno with err
 * set when start-up or the loop failed (the caller logs it).
 */
int glove_server_service_run(const struct glove_server_service_options *o, struct glove_log *log,
                              struct glove_error *err);

/* The whole program: parse, run, report. Usage errors go to stderr as
 * "gloved: CODE: message"; once the options are parsed every message goes
 * to gloved's log (the journal when $JOURNAL_STREAM names stderr, else JSON
 * lines on stderr), the start-up failure included. Returns the exit status
 * (0, 1 on a start-up failure, 2 on a usage error). */
int glove_server_service_main(int argc, char **argv);

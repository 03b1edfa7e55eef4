/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The managed-session runtime of gloved (issue 9; spec session-policy.md,
 * "Durable identity", "Filesystem and launch binding", "Receipts and
 * recovery"; docs/control-protocol.md, "Managed sessions").
 *
 * A registry of the sessions gloved runs, on the server's sd-event loop
 * (one thread; nothing here is thread-safe, except that the launch of a
 * starting session is prepared on a worker thread, see "start"). Lifecycle
 * of one session, every transition durable in the session store before its
 * effect:
 *
 *   start   the stored plan is validated again against the frozen policy
 *           and the clock (plan.expired, plan.invalid); a start authorization
 *           is minted (128-bit random nonce bound to the session id, both
 *           plan digests and the policy digest, valid 60 s, single use); room
 *           for the terminal receipt is reserved (start.receipts_full);
 *           created -> preparing, and the answer is "preparing" at once;
 *           glove_supervisor_launch_prepare (blocking: mkfs, loop, mount)
 *           runs on one of GLOVE_RUNTIME_PREPARE_WORKERS worker
 *           threads (started on demand, signals blocked) with copies of the
 *           id and plan and the immutable configuration; its completion
 *           comes back to the loop through an eventfd, where
 *           preparing -> starting is appended and the session's keeper is
 *           forked (glove/keeper/keeper.h, docs/recovery.md): it runs the
 *           session engine (PTY terminal, cgroup required, PID 1 held) and
 *           gloved talks to it over its channel. While preparing: attach
 *           waits for output, resize sets the size the terminal is made
 *           with, write_stdin answers stdin.full (retry). Shutdown joins
 *           the workers (a running prepare is waited for; a queued one
 *           never runs) and fails those sessions with a receipt
 *           (start_failed, service.stopped).
 *   ready   (the keeper's READY) the authorization is checked and
 *           consumed; PID 1's start time and the cgroup identity are checked
 *           and the latter joins the launch binding, whose digest is
 *           computed; the binding is written to the keeper's directory;
 *           starting -> running is appended and synced with the runtime
 *           identity (boot id, keeper and PID 1 pids and start times, cgroup
 *           directory and inode, materializations); then RELEASE. No
 *           instruction of the agent runs before that.
 *   end     (the keeper's ENDED, or its loss: keeper.lost) the terminal
 *           receipt is built and appended (synced), then running/stopping
 *           -> exited (or -> failed), then the materializations are
 *           released and the keeper is let go (ACK) and its files removed. Any failure before running ends
 *           in failed with a receipt whose termination is start_failed and
 *           the code, and nothing made is left behind.
 *
 * Bounds: GLOVE_RUNTIME_SESSIONS_MAX live sessions (runtime.busy);
 * GLOVE_RUNTIME_ATTACH_PER_CONN attachments per connection and
 * GLOVE_TERMINAL_CLIENTS_MAX per session (attach.too_many); write_stdin
 * GLOVE_RUNTIME_STDIN_MAX decoded bytes per call (stdin.too_large).
 * An attachment whose connection has GLOVE_RUNTIME_PUSH_MAX bytes of pushed
 * frames pending skips output (nothing more is queued for it; the bytes are
 * counted): the session and the other clients never wait for it. Once the
 * connection's pending pushed frames fall below GLOVE_RUNTIME_PUSH_MAX / 2
 * (or before the attachment's session_ended or session_detached), one
 * session_output_gap notice with the count is pushed and the output from
 * then on is queued again. A client that takes nothing at all is closed by
 * the server's send deadline (server.h), which drops its attachments.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <systemd/sd-event.h>

#include "glove/base/error.h"
#include "glove/container/cgroup.h"
#include "glove/keeper/keeper.h"
#include "glove/store/receipts.h"
#include "glove/store/store.h"

#define GLOVE_RUNTIME_SESSIONS_MAX 64
#define GLOVE_RUNTIME_ATTACH_PER_CONN 8
/* Threads that prepare launches (at most; started on demand), and the stack
 * of each, bytes. */
#define GLOVE_RUNTIME_PREPARE_WORKERS 4
#define GLOVE_RUNTIME_PREPARE_STACK (512 * 1024)
#define GLOVE_RUNTIME_STDIN_MAX 65536
/* Ended sessions whose transcript and final state are kept for attach. */
#define GLOVE_RUNTIME_ENDED_MAX 256
/* Receipt room reserved per session, bytes (the largest envelope). */
#define GLOVE_RUNTIME_RECEIPT_RESERVE GLOVE_STORE_RECEIPTS_MAX_ENVELOPE
/* Largest launch binding, bytes of canonical JSON: the terminal receipt
 * holds it within GLOVE_STORE_RECEIPTS_MAX_ENVELOPE (64 KiB), with room
 * for the other fields. It is measured whole (argv, mounts, projections,
 * skills, leases, adapter, and then the cgroup identity) when the launch is
 * prepared, before anything is spawned, and again before release; a larger
 * one (very long arguments, many long projection ids) never starts:
 * start.binding_too_large, and its start_failed receipt carries
 * {"omitted_bytes":N} in place of the binding. */
#define GLOVE_RUNTIME_BINDING_MAX (56u * 1024)
/* Bytes an envelope adds around a receipt at most (appended_at_ms, kind,
 * sequence, session_id): a receipt larger than
 * GLOVE_STORE_RECEIPTS_MAX_ENVELOPE less this has its launch binding
 * replaced by {"omitted_bytes":N}, so a terminal receipt can always be
 * appended. */
#define GLOVE_RUNTIME_ENVELOPE_OVERHEAD 1024u
/* Lifetime of a start authorization, milliseconds. */
#define GLOVE_RUNTIME_AUTH_TTL_MS 60000
/* stop_session grace: default and bound, milliseconds. */
#define GLOVE_RUNTIME_GRACE_DEFAULT_MS 5000
/* Bytes queued towards one keeper at most (input is bounded by its credit,
 * GLOVE_KEEPER_INPUT_MAX; the rest are small control messages). */
#define GLOVE_RUNTIME_KEEPER_QUEUE_MAX (256u * 1024)
/* How long the reconciler waits for one keeper's answer (STATE, or ENDED
 * after ABORT), milliseconds. */
#define GLOVE_RUNTIME_ABORT_WAIT_MS 3000
/* Keepers told ABORT by one reconciliation pass and awaited together, at
 * most (a pass that finds more lets the rest end by their own release
 * deadline: GLOVE_KEEPER_RELEASE_WAIT_MS). */
#define GLOVE_RUNTIME_ABORTS_MAX 64
/* Channels re-opened at most to a keeper that lives after its channel
 * ended (keeper.relinked). */
#define GLOVE_RUNTIME_RECONNECTS_MAX 3
/* resize: rows and cols bounds. */
#define GLOVE_RUNTIME_WINSIZE_MAX 10000


/*
 * A client connection of the server as the runtime sees it: the server
 * embeds one in each connection (server.h) and the runtime pushes through
 * its operations. Every operation is called on the loop's thread.
 *   push            queues one notification (msg: a new reference, consumed)
 *                   as a pushed frame; last: the connection closes after it.
 *                   0, -ENOBUFS past GLOVE_RUNTIME_PUSH_MAX pending, or the
 *                   frame encoder's -errno.
 *   push_output     queues one session_output notification for session_id
 *                   carrying data[0..n) (borrowed), with push's bound.
 *   pushed_pending  bytes of pushed frames pending.
 *   want_drain      asks for one glove_runtime_conn_drained(rt, peer) once
 *                   the pending bytes fall below GLOVE_RUNTIME_PUSH_MAX / 2
 *                   (from the loop, never inline; none after the peer closed).
 *   attachments     counts attachments held on the peer (delta +1 or -1).
 */
struct glove_runtime_peer;
struct glove_runtime_peer_ops {
        int (*push)(struct glove_runtime_peer *p, json_t *msg, bool last);
        int (*push_output)(struct glove_runtime_peer *p, const char *session_id, const void *data, size_t n);
        size_t (*pushed_pending)(const struct glove_runtime_peer *p);
        void (*want_drain)(struct glove_runtime_peer *p);
        void (*attachments)(struct glove_runtime_peer *p, int delta);
};
struct glove_runtime_peer {
        const struct glove_runtime_peer_ops *ops;
};

struct glove_runtime;
struct glove_supervisor_runtime_config;
struct glove_supervisor_policy;

struct glove_log;

struct glove_runtime_options {
        const struct glove_supervisor_runtime_config *config; /* borrowed */
        const struct glove_supervisor_policy *policy;         /* borrowed */
        struct glove_store *store;                    /* borrowed */
        struct glove_store_receipts *receipts;              /* borrowed */
        int64_t (*now_ms)(void);                              /* Unix milliseconds */
        /* The cgroup probe's result: only with a usable backend is the
         * runtime operational. */
        const struct glove_cgroup_probe *cgroup;
        int cgroup_error;                                     /* 0 or the probe's -errno */
        const struct glove_error *cgroup_why;                 /* the probe's error when not usable */
        /* gloved's pinned place in a delegated v2 tree (glove_cgroup_host_setup),
         * or NULL when not applicable; borrowed for the runtime's life. When
         * set, it is re-checked before each keeper starts and the keeper's
         * run cgroup must go to its pinned parent (cgroup.parent_replaced). */
        const struct glove_cgroup_host *cgroup_host;
        /* Audit records of the egress proxy: a per-session file under the
         * materialization root when true, none when false. */
        bool audit_files;
        /* gloved's log (borrowed for the runtime's life; NULL: none). */
        struct glove_log *log;
        /* glove-keeper (keeper.h), absolute; NULL: beside gloved's own
         * executable, else in its ../libexec/glove. Opened and verified
         * once, when the runtime is operational; a start then fails with
         * keeper.missing, keeper.unsafe or keeper.replaced when it is not
         * (or no longer) the verified file. */
        const char *keeper_path;
        /* Where the whole launch binding of every session that had one is
         * kept, host paths included (the receipt carries only its view and
         * its digest; docs/control-protocol.md, "Terminal receipt"): when
         * keep_bindings, STATE/bindings/SESSION.json under state_fd
         * (borrowed, gloved's state directory): canonical JSON, 0600, its
         * SHA-256 the receipt's launch_binding_digest; written before the
         * receipt is appended, removed by cleanup_session. */
        bool keep_bindings;
        int state_fd;
        /* #28: local services and guest channels (glove/runtime/services.h),
         * or NULL: none. Moved in by glove_runtime_new (also on failure);
         * freed by glove_runtime_free. */
        struct glove_runtime_services *services;
};

/*
 * Start-up reconciliation (issue 10; spec session-policy.md, "Receipts and
 * recovery"; docs/recovery.md), after glove_runtime_new and before
 * the loop runs: every stored session an earlier gloved left in preparing,
 * starting, running or stopping is compared with the host, and either
 * adopted (running or stopping, same boot, its keeper answers on its
 * socket as the recorded pid and start time, PID 1's pid and start time and
 * the run cgroup's inode as recorded: the session goes on, its keeper joins
 * the loop in glove_runtime_set_loop) or ended with exactly one
 * terminal receipt (none when the journal holds it already) and its
 * terminal transition. A mismatch signals nothing. One stderr line per
 * session ("gloved: reconcile: ID: CODE: ..."; codes in docs/recovery.md).
 * Bounded: one pass over the store; per session a few /proc reads and one
 * connect; the keepers' answers are awaited together, at most
 * GLOVE_RUNTIME_ABORT_WAIT_MS for the adopted ones' STATEs and as
 * much for the aborted ones' ENDEDs. *acted counts the sessions. Returns 0, or the first
 * -errno with err set (reconcile.boot_id, receipts.*, journal.*: that
 * session and the later ones stay as they were and are tried again at the
 * next start).
 */
int glove_runtime_reconcile(struct glove_runtime *rt, size_t *acted, struct glove_error *err);

/* Constructs the runtime. *out owned by the caller (glove_runtime_free).
 * Errors: runtime.no_memory. */
int glove_runtime_new(const struct glove_runtime_options *o, struct glove_runtime **out,
                              struct glove_error *err);

/* Where run cgroups go: "delegated_subgroup", "delegated_moved", "beside",
 * "under", "v1", or "none" (not operational); the capabilities'
 * "cgroup_placement" (docs/limits.md). */
const char *glove_runtime_cgroup_placement(const struct glove_runtime *rt);

/* True when lifecycle methods may be advertised (a delegated cgroup). */
bool glove_runtime_operational(const struct glove_runtime *rt);

/* Why not operational (static or owned by rt), "" when operational. */
const char *glove_runtime_why(const struct glove_runtime *rt);

/* capabilities: {"limit","mechanism"} for the limits enforced and
 * {"limit","reason"} for those that are not (new references). */
json_t *glove_runtime_mechanisms(const struct glove_runtime *rt);
json_t *glove_runtime_mechanisms_missing(const struct glove_runtime *rt);

/* The server's loop (set once, before any session starts). */
void glove_runtime_set_loop(struct glove_runtime *rt, sd_event *loop);

/* The pushed frames on conn drained below half the bound after
 * want_drain (struct glove_runtime_peer): its skipping attachments push their
 * session_output_gap and resume. */
void glove_runtime_conn_drained(struct glove_runtime *rt, struct glove_runtime_peer *conn);

/* Connection conn is closing: its attachments are dropped (no frame pushed). */
void glove_runtime_conn_closed(struct glove_runtime *rt, struct glove_runtime_peer *conn);

/* The loop ends: a released session goes on in its keeper (its channel is
 * closed, its materializations stay; the next gloved adopts it); a session
 * not yet released is told ABORT and fails with its receipt (start_failed,
 * service.stopped), its materializations released. Idempotent. */
void glove_runtime_shutdown(struct glove_runtime *rt);

/* Shuts down (glove_runtime_shutdown) and frees rt and every entry,
 * transcripts included; NULL is a no-op. */
void glove_runtime_free(struct glove_runtime *rt);

/*
 * The methods (docs/control-protocol.md). Each returns 0 with *result a new
 * reference to the result object, or -errno with err's code one of:
 * session.not_found, session.terminal, session.not_running,
 * session.not_terminal, plan.expired, plan.invalid, start.receipts_full,
 * runtime.busy, runtime.no_loop, runtime.prepare_worker, launch.*, materialize.*, cgroup.*,
 * sandbox.*, attach.too_many, stdin.too_large, stdin.full,
 * signal.unknown, journal.*, receipts.*, internal.
 *
 * Shapes and bounds: session_id is a store identifier (at most
 * GLOVE_STORE_ID_MAX bytes); start answers at once with the state
 * ("preparing" for a new start) and the launch continues on the prepare
 * pool and the loop; conn is borrowed until glove_runtime_conn_closed
 * for it; write_stdin takes len <= GLOVE_RUNTIME_STDIN_MAX bytes (data
 * borrowed for the call); resize takes rows and cols in
 * 1..GLOVE_RUNTIME_WINSIZE_MAX; stop takes grace_ms in
 * 0..GLOVE_KEEPER_GRACE_MAX_MS (milliseconds).
 */
int glove_runtime_start(struct glove_runtime *rt, const char *session_id, json_t **result,
                                struct glove_error *err);
int glove_runtime_attach(struct glove_runtime *rt, struct glove_runtime_peer *conn,
                                 const char *session_id, json_t **result, struct glove_error *err);
int glove_runtime_detach(struct glove_runtime *rt, struct glove_runtime_peer *conn,
                                 const char *session_id, json_t **result, struct glove_error *err);
int glove_runtime_write_stdin(struct glove_runtime *rt, const char *session_id, const void *data,
                                      size_t len, json_t **result, struct glove_error *err);
int glove_runtime_resize(struct glove_runtime *rt, const char *session_id, unsigned rows,
                                 unsigned cols, json_t **result, struct glove_error *err);
int glove_runtime_signal(struct glove_runtime *rt, const char *session_id, const char *signame,
                                 json_t **result, struct glove_error *err);
int glove_runtime_stop(struct glove_runtime *rt, const char *session_id, uint64_t grace_ms,
                               json_t **result, struct glove_error *err);
/* Retained-change inspection (issue 30; docs/retained-changes.md): what the
 * agent changed in each retained stage of an ended session, read from the
 * image mounted read-only and detached (glove_supervisor_retained_changes's
 * result). session.not_found, session.not_terminal (-EBUSY). */
int glove_runtime_retained_changes(struct glove_runtime *rt, const char *session_id, json_t **result,
                                   struct glove_error *err);
int glove_runtime_cleanup(struct glove_runtime *rt, const char *session_id, json_t **result,
                                  struct glove_error *err);
/*
 * guest_queue (#28; docs/guest-channels.md, "Paging the queue"): entries
 * after seq `after` (0: from the start), at most limit (1..100), of session
 * id's guest-channel admission queue, as glove_channel_registry_page gives
 * them: {"entries":[...],"next_after":N|null}. Errors: session.not_found;
 * channel.unavailable (no adapter-bound local service); channel.no_queue
 * (the session has no guest channel, or it was cleaned up); the registry's
 * channel.* codes.
 */
int glove_runtime_guest_queue(struct glove_runtime *rt, const char *id, uint64_t after, uint32_t limit, json_t **result,
                              struct glove_error *err);

/* The capabilities' guest_channel_schema_version (glove/runtime/services.h:
 * glove_runtime_services_channel_version with this runtime's operational
 * state); *why (may be NULL) the reason of a 0. */
int glove_runtime_guest_channel_version(const struct glove_runtime *rt, const char **why);

/* The capabilities' "local_services" (new reference), NULL when none. */
json_t *glove_runtime_local_services(const struct glove_runtime *rt);

/* list_sessions (needs only the store). */
json_t *glove_runtime_list(const struct glove_store *store);

/* ---- pure parts (runtime_wire.c), for unit tests ---- */

/* The signal of one of the ten names "SIGHUP", "SIGINT", "SIGQUIT",
 * "SIGTERM", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGCONT", "SIGTSTP",
 * "SIGWINCH"; -1 for anything else. */
int glove_runtime_signal_parse(const char *name);

/*
 * The skip state of one attachment whose output did not fit the bounded
 * queue of its connection. skipped_bytes counts the output bytes not queued
 * since the last gap notice (saturating at INT64_MAX, the largest JSON
 * integer written).
 */
struct glove_runtime_output_skip {
        bool skipping;
        uint64_t skipped_bytes;
};

/* n bytes of output were not queued: k is skipping and counts them. */
void glove_runtime_output_skip_add(struct glove_runtime_output_skip *k, size_t n);

/* Whether k, skipping, resumes now that pending bytes of pushed frames are
 * queued on its connection out of a bound of bound bytes: pending below
 * bound / 2. False when k is not skipping. */
bool glove_runtime_output_skip_resumes(const struct glove_runtime_output_skip *k, size_t pending, size_t bound);

/* The notice {"method":"session_output_gap","params":{"session_id":ID,
 * "skipped_bytes":N}} (a new reference; NULL on ENOMEM). */
json_t *glove_runtime_output_gap_message(const char *session_id, uint64_t skipped_bytes);

enum glove_runtime_termination {
        GLOVE_RUNTIME_TERM_EXIT,
        GLOVE_RUNTIME_TERM_SIGNAL,
        GLOVE_RUNTIME_TERM_LIMIT,
        GLOVE_RUNTIME_TERM_STOPPED,
        GLOVE_RUNTIME_TERM_START_FAILED,
        GLOVE_RUNTIME_TERM_LOST,
};

/* What a terminal receipt says (see docs/control-protocol.md). */
struct glove_runtime_receipt_facts {
        const char *session_id;
        const char *controller_plan_digest, *plan_content_digest; /* 64 hex */
        const json_t *launch_binding;          /* borrowed; NULL: {} */
        const char *launch_binding_digest;     /* 64 hex; NULL: computed from launch_binding */
        int64_t started_at_ms;                 /* -1: null (never released) */
        int64_t ended_at_ms;
        enum glove_runtime_termination termination;
        int signal;                            /* SIGNAL, STOPPED (0: none) */
        const char *limit;                     /* LIMIT: the plan's limit name */
        const char *code;                      /* START_FAILED, LOST: a stable code (NULL: none) */
        int exit_code;                         /* -1: null */
        uint64_t cpu_time_ms, disk_bytes, output_bytes, peak_memory_bytes, wall_time_ms;
};

/* "exit", "signal", "limit", "stopped", "start_failed", "lost". */
const char *glove_runtime_termination_name(enum glove_runtime_termination t);

/* "exited" for exit/signal/limit/stopped, "failed" for start_failed/lost. */
const char *glove_runtime_termination_state(enum glove_runtime_termination t);

/* SHA-256 of the canonical encoding of v as 64 hex + NUL. Returns 0 or -errno. */
int glove_runtime_json_digest(const json_t *v, char out[65], struct glove_error *err);

/*
 * The receipt's view of launch binding full (new reference; NULL on ENOMEM
 * or an encoding failure): what may leave the host (spec architecture.md:
 * "raw paths never cross P2P"; docs/control-protocol.md, "Terminal
 * receipt"). It carries no host path, loop device or cgroup:
 *   runtime_template_id, environment_names, limits, egress, leases,
 *   projections, skills, skills_projection_digest: copied (sandbox paths
 *   and identifiers only);
 *   executable_digest: SHA-256 hex of canonical {"argv": full.argv,
 *   "mounts": full's mounts of kind executable};
 *   read_only_paths_digest: SHA-256 hex of the canonical array of full's
 *   mounts of kind read_only_path;
 *   mounts: the others as {alias?, kind, max_bytes?, read_only, target}
 *   (targets inside the sandbox; no source identity);
 *   materializations: {alias, kind, size};
 *   adapter (when full has one): without its executable's path and
 *   identity ({"discovered"} only).
 * A stand-in ({"omitted_bytes":N} or {"omitted":CODE}, nothing else) is
 * copied as it is; NULL gives {}. full is borrowed.
 */
json_t *glove_runtime_receipt_binding(const json_t *full);

/* The receipt object (new reference; NULL on ENOMEM or a canonical-encoding
 * failure). "launch_binding" is glove_runtime_receipt_binding() of
 * f->launch_binding; "launch_binding_digest" is f->launch_binding_digest,
 * else the digest of the whole f->launch_binding (host paths included:
 * gloved keeps that binding locally, the receipt commits to it):
 *   {"controller_plan_digest","ended_at_ms","exit_code":INT|null,
 *    "launch_binding":{...},"launch_binding_digest","plan_content_digest",
 *    "receipt_schema_version":1,"session_id","started_at_ms":INT|null,
 *    "state":"exited|failed","termination":{"kind",("signal"),("limit"),("code")},
 *    "usage":{"cpu_time_ms","disk_bytes","output_bytes","peak_memory_bytes","wall_time_ms"}} */
json_t *glove_runtime_receipt_build(const struct glove_runtime_receipt_facts *f);

/*
 * Whether a new session may take id (create_session of an id the store does
 * not hold): not while a receipt in the receipt journal names an earlier
 * session with it, nor while gloved keeps that session's launch binding
 * (STATE/bindings/ID.json, which its receipt commits to and a verifier
 * looks up by id). Returns 0, or -EEXIST with session.id_in_use.
 */
int glove_runtime_id_reusable(struct glove_runtime *rt, const char *id, struct glove_error *err);

/*
 * The session registry's gate on terminal receipts (spec session-policy.md,
 * "Capability activation": a refinement plan never falls back to the
 * resource receipt): kind must be "session.refinement" for a
 * refinement-eval-v1 plan (plan[0..plan_len), canonical, as stored) and
 * "session.terminal" for any other. Returns 0, or -EINVAL with
 * receipts.kind_mismatch (also for a plan that does not decode).
 */
int glove_runtime_receipt_kind_check(const char *plan, size_t plan_len, const char *kind, struct glove_error *err);

/* Pushed frames pending per connection at most, bytes. */
#define GLOVE_RUNTIME_PUSH_MAX (1024u * 1024)

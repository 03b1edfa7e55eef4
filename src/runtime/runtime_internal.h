/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The managed-session runtime's shared state (runtime.h): the registry and
 * lifecycle (runtime.c), attach streams (runtime_attach.c), start_session
 * and the prepare workers (runtime_prepare.c), the keeper channel
 * (runtime_link.c), the keeper's launch and files (runtime_keeper.c) and the
 * start-up reconciler (runtime_reconcile.c). Everything runs on the server's
 * loop thread, except the prepare workers (runtime_prepare.c). Internal:
 * nothing here is an interface of the control library. */

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "glove/audit/log.h"
#include "glove/base/log.h"
#include "glove/keeper/keeper.h"
#include "glove/runtime/runtime.h"
#include "glove/session/session.h"
#include "glove/supervisor/prepare.h"

/* Logs a line about session s (struct rt_session *) on gloved's log, with
 * its session_id field. */
#define RT_LOG(s, level, code, ...) \
        glove_log((s)->rt->o.log, level, code, GLOVE_LOG_FIELDS({ "session_id", (s)->id }), __VA_ARGS__)

struct rt_session;

struct attachment {
        struct rt_session *s;
        struct glove_runtime_peer *conn;
        struct glove_terminal_client *client;
        struct glove_runtime_output_skip skip; /* output not queued: the queue was full */
        struct attachment *next;
};

struct auth {
        uint8_t nonce[16];
        char session_id[GLOVE_STORE_ID_MAX + 1];
        char controller_plan_digest[65], plan_content_digest[65], policy_digest[65];
        int64_t expires_at_ms;
        bool live;
};

/* One glove_supervisor_launch_prepare run on a worker thread. The loop
 * thread fills the inputs and reads the results only after the job came back
 * through the done list (the pool's mutex orders both); the worker touches
 * nothing else. */
struct prepare_job {
        struct prepare_job *next;
        struct rt_session *s; /* loop thread only */
        const struct glove_supervisor_runtime_config *cfg;
        char id[GLOVE_STORE_ID_MAX + 1];
        char *plan; /* a copy of the stored plan */
        size_t plan_len;
        /* #26: exposure sources opened on the loop thread (the registry is
         * the loop's); the worker prepares from them. */
        struct glove_supervisor_sources *sources;
        /* Results (the worker's). */
        struct glove_supervisor_launch *launch;
        int r;
        struct glove_error err;
};

struct prepare_pool {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct prepare_job *queue, **queue_tail; /* FIFO, not yet taken */
        struct prepare_job *done, **done_tail;   /* FIFO, finished */
        pthread_t threads[GLOVE_RUNTIME_PREPARE_WORKERS];
        unsigned n_threads, idle, queued;
        bool quit;
        int efd; /* eventfd: a job finished */
        sd_event_source *src;
        bool up;
};

/* A message queued towards a keeper. */
struct kmsg {
        struct kmsg *next;
        size_t len;
        uint8_t data[];
};

/* gloved's copy of a keeper's transcript: the last bytes of the output,
 * and the output offset just past them. */
struct mirror {
        uint8_t buf[GLOVE_TERMINAL_TRANSCRIPT_DEFAULT];
        size_t len, head; /* head: index of the oldest byte */
        uint64_t end;
};

struct rt_session {
        struct glove_runtime *rt;
        struct rt_session *next;
        char id[GLOVE_STORE_ID_MAX + 1];
        struct glove_supervisor_launch *launch; /* NULL for a session adopted after a restart */
        /* The keeper (glove/keeper/keeper.h): its channel, what is queued
         * towards it, and the copy of its transcript. */
        int kfd;                  /* -1: no keeper (yet, or any more) */
        sd_event_source *ksrc;
        struct kmsg *kq, **kq_tail;
        size_t kq_bytes;
        pid_t keeper_pid;
        uint64_t keeper_start;
        char stem[40];            /* keeper file names: DIR/STEM.{sock,status,log,binding} */
        uint64_t credit;          /* input bytes the keeper takes now */
        bool input_closed;
        bool ready, released, adopted, ended;
        bool released_on_adopt;
        bool stated;              /* a STATE came on the current channel */
        bool adopt_told;          /* the reconciler said its line */
        unsigned reconnects;      /* channels re-opened to a keeper that lives */   /* adopted recorded running, never released: released then */
        struct mirror *mir;
        json_t *binding;
        char binding_digest[65];
        json_t *keeper_outcome;   /* the keeper's OUTCOME at the end (owned), for the refinement receipt */
        int64_t started_at_ms; /* -1 until released */
        struct auth auth;
        bool live;             /* the engine session has not ended */
        bool reserved;
        bool stopping;
        bool killed;           /* signal SIGKILL: gloved killed the whole sandbox */
        char fail_code[GLOVE_STORE_REASON_MAX + 1]; /* why on_ready stopped it */
        struct glove_audit_log audit;                 /* egress records (fd -1: none) */
        struct attachment *att;
        unsigned n_att;
        struct prepare_job *job;  /* while the launch is prepared */
        unsigned short rows, cols; /* a resize before the terminal exists */
        /* After the end. */
        uint8_t *transcript;
        size_t transcript_len;
        uint64_t receipt_seq;
        json_t *termination;
        /* #28: local services and the guest channel (runtime_services.c);
         * NULL: none for this session. */
        struct rt_svc *svc;
};

struct rt_aborts;

struct glove_runtime {
        struct glove_runtime_options o;
        struct glove_cgroup_probe cgroup;
        sd_event *loop;
        struct rt_session *sessions;
        unsigned live, ended;
        bool operational;
        bool shutting_down;    /* glove_runtime_shutdown walks the sessions */
        char why[GLOVE_CGROUP_REASON_MAX * 2 + 64];
        struct prepare_pool pool;
        struct rt_aborts *aborts;  /* during glove_runtime_reconcile only */
        /* glove-keeper, opened and verified once (keeper.h); when
         * keeper_exe.fd is -1, keeper_why says why every start fails. */
        struct glove_keeper_exe keeper_exe;
        struct glove_error keeper_why;
};


/* ---- runtime_services.c (#28; glove/runtime/services.h) ---- */

struct rt_svc;
/* At prepared(), before the binding is checked: refuses operator-set
 * GLOVE_LOCAL_SERVICE_* variables (services.reserved_environment); for a
 * runtime allowed local services: the transport (services.mixed_transport),
 * the endpoints rechecked, the socketpair or the alias directory, the
 * variables, the registry, the keeper's part and the binding's
 * "local_services". 0 or -errno with err set. */
int rt_svc_prepare(struct rt_session *s, struct glove_error *err);
/* True when the session has local services (its audit file is opened). */
bool rt_svc_active(const struct rt_session *s);
/* The session description's envp, filter, inherited descriptor and mounts. */
void rt_svc_desc(struct rt_session *s, struct glove_session_desc *d);
/* The keeper's services_json and service descriptors. */
void rt_svc_keeper_args(struct rt_session *s, struct glove_keeper_args *a);
/* After the keeper was spawned (or not): gloved's copies closed. */
void rt_svc_spawned(struct rt_session *s);
/* The keeper's pid is known: the observation server may admit for it. */
void rt_svc_keeper_known(struct rt_session *s);
/* At the end: the alias directory removed. */
void rt_svc_release(struct rt_session *s);
/* With the entry: everything. */
void rt_svc_free(struct rt_session *s);
/* cleanup_session: session id's registry file removed. */
void rt_svc_cleanup(struct glove_runtime *rt, const char *id);
/* guest_queue: a page of session id's admission queue (s may be NULL). */
int rt_svc_queue_page(struct glove_runtime *rt, struct rt_session *s, const char *id, const char *stem,
                      const char *runtime_id, uint64_t after, uint32_t limit, json_t **out, struct glove_error *err);

/* ---- runtime.c ---- */

/* The entry of session id, or NULL. */
struct rt_session *rt_find(struct glove_runtime *rt, const char *id);
/* The store's record of session id, or NULL with session.not_found. */
const struct glove_store_session *rt_stored(struct glove_runtime *rt, const char *id,
                                            struct glove_error *err);
/* Records session id's transition to `to` with reason: 0 or -errno. */
int rt_transition(struct glove_runtime *rt, const char *id, enum glove_store_session_state to,
                  const char *reason, struct glove_error *err);
/* Frees the in-memory entry of id when it is one that ended, no longer
 * live and unattached (an earlier session of an id the store let go of and
 * took again): true when one was dropped. */
bool rt_drop_ended(struct glove_runtime *rt, const char *id);
/* {"session_id","state"} of session id (new reference), or NULL. */
json_t *rt_state_result(struct glove_runtime *rt, const char *id);
/* The entry of session id when it runs or stops with a keeper channel;
 * else NULL with session.not_found, session.terminal or
 * session.not_running. */
struct rt_session *rt_live_session(struct glove_runtime *rt, const char *id, struct glove_error *err);
/* Appends the receipt of f (completed with the stored digests and the
 * binding), records the terminal transition, releases the
 * materializations, tells the attachments. */
void rt_finish(struct rt_session *s, struct glove_runtime_receipt_facts *f);
/* finish() for a start that failed with why. */
void rt_fail_start(struct rt_session *s, const struct glove_error *why);
/* The whole of s->binding, canonical, within GLOVE_RUNTIME_BINDING_MAX:
 * 0; larger: s->binding is replaced by {"omitted_bytes":N} (its digest
 * cleared) and -EMSGSIZE with start.binding_too_large; or -errno. */
int rt_binding_check(struct rt_session *s, struct glove_error *err);
/* {"path","inode"} of PID 1's run cgroup (new reference), or NULL. */
json_t *rt_cgroup_identity(struct rt_session *s, pid_t pid);

/* ---- runtime_refinement.c ---- */

/* The receipt kind of st: GLOVE_STORE_RECEIPTS_KIND_REFINEMENT for a
 * refinement-eval-v1 plan, else GLOVE_STORE_RECEIPTS_KIND_TERMINAL. */
const char *rt_receipt_kind(const struct glove_store_session *st);
/* The resource receipt of a receipt of either kind (rc itself, or the
 * refinement receipt's "resource_receipt"); borrowed. */
const json_t *rt_resource_receipt(const json_t *rc);
/* Appends the terminal receipt of st: resource (borrowed) as it is for an
 * ordinary plan; for a refinement plan, the refinement receipt around it,
 * its outcome synthesized from keeper_outcome's observation (may be NULL:
 * the stream is lost), binding's expectations (may be NULL) and f. The
 * kind is checked against the plan (receipts.kind_mismatch). *seq and
 * *appended (each may be NULL) receive the sequence and a new reference to
 * the receipt appended. Returns 0 or -errno (receipts.*, journal.*,
 * refinement.*, runtime.no_memory). */
int rt_receipt_append(struct glove_runtime *rt, const struct glove_store_session *st, const json_t *resource,
                      const json_t *binding, const struct glove_runtime_receipt_facts *f,
                      const json_t *keeper_outcome, int64_t now_ms, uint64_t *seq, json_t **appended,
                      struct glove_error *err);

/* ---- runtime_attach.c ---- */

/* n bytes of output for attachment userdata (a struct attachment *). */
void rt_client_output(void *userdata, int stream, const void *buf, size_t n);
/* Unlinks and frees attachment a; with a reason, its gap and a
 * session_detached notice are pushed first. */
void rt_attachment_drop(struct attachment *a, const char *reason);
/* session_ended (state "exited" or "failed") to every attachment of s,
 * each then dropped. */
void rt_end_notify(struct rt_session *s, const char *state);

/* ---- runtime_prepare.c ---- */

/* Stops the prepare workers; every session whose job was pending fails
 * with a receipt (service.stopped). */
void rt_pool_down(struct glove_runtime *rt);

/* ---- runtime_link.c ---- */

/* The last min(cap, kept) transcript bytes of m into out; how many. */
size_t rt_mirror_copy(const struct mirror *m, uint8_t *out, size_t cap);
/* Closes s's channel and drops what was queued on it. */
void rt_link_close(struct rt_session *s);
/* Queues one message towards s's keeper and sends what it can: 0,
 * -ENOTCONN, -ENOBUFS (GLOVE_RUNTIME_KEEPER_QUEUE_MAX), -EMSGSIZE,
 * -EPIPE, -ENOMEM. rt_link_send_json takes o (canonical encoding). */
int rt_link_send(struct rt_session *s, char type, const void *payload, size_t len);
int rt_link_send_json(struct rt_session *s, char type, json_t *o);
/* Sends what is queued towards s's keeper: 0, or -errno when the channel
 * broke. */
int rt_link_flush(struct rt_session *s);
/* One message from s's keeper; false when s's channel ended in it. */
bool rt_link_message(struct rt_session *s, const uint8_t *msg, size_t n);
/* s's channel on the loop (HELLO unless adopted, which said it already). */
int rt_link_attach(struct rt_session *s, struct glove_error *err);
/* The receive buffer of the loop thread (one message). */
extern uint8_t rt_link_buf[GLOVE_KEEPER_MSG_MAX];
/* A JSON object of n bytes (new reference), or NULL. */
json_t *rt_json_object(const uint8_t *p, size_t n);
/* Member k of o as a non-negative integer (0 when absent or negative). */
uint64_t rt_jint(const json_t *o, const char *k);
/* The receipt facts of a keeper's OUTCOME (keeper.h). */
void rt_outcome_facts(struct rt_session *s, const json_t *o, struct glove_runtime_receipt_facts *f);
/* Keeps the copy of the transcript for attach after the end. */
void rt_keep_transcript(struct rt_session *s);
/* s's keeper channel ended before ENDED: the status file's outcome, else
 * keeper.lost. */
void rt_keeper_lost(struct rt_session *s);

/* ---- runtime_keeper.c ---- */

/* The keeper files' stem of a session id ("k" + 32 hex of its SHA-256). */
void rt_keeper_stem(const char *id, char out[40]);
/* Removes DIR/STEM.{sock,status,binding} and, unless keep_log, .log. */
void rt_keeper_files_remove(const struct glove_supervisor_runtime_config *cfg, const char *stem, bool keep_log);
/* DIR/STEM.status (new reference), or NULL. */
json_t *rt_status_read(const struct glove_supervisor_runtime_config *cfg, const char *stem);
/* Writes s->binding to DIR/STEM.binding (canonical JSON, 0600): 0 or
 * -errno (keeper.dir, keeper.binding). */
int rt_binding_write(struct rt_session *s, struct glove_error *err);
/* rt_binding_keep for a binding without a live entry (the reconciler):
 * id's binding kept in STATE/bindings/ID.json; a stand-in or NULL: 0. */
int rt_binding_keep_json(struct glove_runtime *rt, const char *id, const json_t *binding, struct glove_error *err);
int rt_binding_keep(struct rt_session *s, struct glove_error *err);
void rt_binding_forget(struct glove_runtime *rt, const char *id);
/* Forks and links s's keeper with the complete description d. */
int rt_keeper_spawn(struct rt_session *s, const struct glove_session_desc *d, struct glove_error *err);
/* Connects to DIR/STEM.sock; the peer must be of this uid: the descriptor
 * (nonblocking) and *peer, or -errno. */
int rt_keeper_connect(const struct glove_supervisor_runtime_config *cfg, const char *stem, pid_t *peer);
/* HELLO and ABORT to the keeper of stem through its socket: the channel,
 * or -1 when no keeper of this uid answers. */
int rt_keeper_abort_start(const struct glove_supervisor_runtime_config *cfg, const char *stem);
/* The ENDED of each channel in fds[0..n) (told ABORT) awaited together, at
 * most GLOVE_RUNTIME_ABORT_WAIT_MS in all (n at most
 * GLOVE_RUNTIME_ABORTS_MAX), then ACK and close; fds become -1. */
void rt_keeper_abort_wait(int *fds, size_t n);

/* ---- runtime_reconcile.c ---- */

/* The at_ms of the transition to running, -1 without one. */
int64_t rt_released_at(const struct glove_store_session *s);
/* The aborts one reconciliation pass collects (stems whose files go once
 * their keepers ended). */
struct rt_aborts {
        int fd[GLOVE_RUNTIME_ABORTS_MAX];
        char stem[GLOVE_RUNTIME_ABORTS_MAX][40];
        size_t n;
};

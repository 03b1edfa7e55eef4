/* SPDX-License-Identifier: Apache-2.0 */
/* gloved: start-up and shutdown (see service.h); the options are in
 * service_options.c. */
#include "glove/server/service.h"
#include "glove/server/exposure.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/log.h"
#include "glove/base/shown.h"
#include "glove/base/time.h"
#include "glove/store/dirs.h"
#include "glove/store/receipts.h"
#include "glove/server/server.h"
#include "glove/store/store.h"

#include "glove/container/cgroup.h"
#include "glove/remote/artifacts.h"
#include "glove/remote/backend.h"
#include "glove/remote/runtime.h"
#include "glove/runtime/runtime.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/policy.h"
#include "glove/supervisor/lease.h"
#include "glove/supervisor/prepare.h"
#include "glove/runtime/services.h"

#include "service_internal.h"

#define SOCKET_NAME "gloved.sock"
#define SECRET_NAME "bootstrap-secret"
#define OWNER_SECRET_NAME "owner-secret"
#define LOCK_NAME "gloved.lock"

/* ---- start-up ---- */

struct service {
        int runtime_fd, state_fd, runtime_lock, state_lock, listen_fd;
        bool bound, secret_written, owner_secret_written;
        char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
        struct glove_supervisor_policy *policy;
        struct glove_store *store;
        struct glove_store_receipts *receipts;
        uint8_t secret[GLOVE_SERVER_SECRET_LEN];
        uint8_t owner_secret[GLOVE_SERVER_SECRET_LEN]; /* meaningful while exposures is not NULL */
        struct glove_exposure_policy *xpolicy;
        struct glove_exposures *exposures;
        /* What no exposure may be, contain or be inside (NULL-terminated). */
        const char *x_restricted[11];
        int mroot_fd, broot_fd;
        struct glove_log *log; /* borrowed */
        uint64_t compact_records; /* --compact-records, 0: the defaults */
        struct glove_runtime *runtime;
        struct glove_cgroup_host *cghost;  /* gloved's pinned cgroups, NULL: not applicable */
        struct glove_supervisor_runtime_config cfg;
        struct glove_error retained_why;
        /* --remote-backend: the validated file, whether its artifacts are in
         * RUNTIME, and the construction-only runtime. */
        struct glove_remote_backend remote_cfg;
        bool remote_written;
        struct glove_remote_runtime *remote;
        const char *restricted[5];
        char lease_root[PATH_MAX]; /* C: credential leases */
        int lease_fd;
};

static int take_lock(int dirfd, const char *dir, int *out, struct glove_error *err) {
        *out = openat(dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (*out < 0)
                return glove_error_set(err, errno, "service.already_running", "%s/%s: %s", dir, LOCK_NAME,
                                       strerror(errno));
        if (flock(*out, LOCK_EX | LOCK_NB) < 0)
                return glove_error_set(err, EBUSY, "service.already_running",
                                       "another gloved holds %s/%s", dir, LOCK_NAME);
        /* The holder's pid, for clients (docs/control-protocol.md,
         * "Transport and authentication"): they open its user namespace. */
        char pid[24];
        int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
        if (ftruncate(*out, 0) < 0 || pwrite(*out, pid, (size_t)n, 0) != n)
                return glove_error_set(err, errno ? errno : EIO, "service.already_running", "%s/%s: write: %s", dir,
                                       LOCK_NAME, strerror(errno ? errno : EIO));
        return 0;
}

/* A fresh random secret into key (GLOVE_SERVER_SECRET_LEN bytes) and
 * RUNTIME/name (0600, 64 lowercase hex and a newline, atomically). */
static int write_one_secret(struct service *s, const char *dir, const char *name, uint8_t *key, bool *written,
                            struct glove_error *err) {
        char text[2 * GLOVE_SERVER_SECRET_LEN + 2];
        int r = glove_digest_random(key, GLOVE_SERVER_SECRET_LEN, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(key, GLOVE_SERVER_SECRET_LEN, text, sizeof(text));
        text[2 * GLOVE_SERVER_SECRET_LEN] = '\n';
        r = glove_store_file_replace(s->runtime_fd, name, text, sizeof(text) - 1, err);
        explicit_bzero(text, sizeof(text));
        if (r < 0)
                glove_error_prefix(err, "%s/%s", dir, name);
        else
                *written = true;
        return r;
}

/* The bootstrap secret, and the owner secret exactly when the exposure
 * registry was constructed (else an owner secret an earlier gloved left is
 * removed: it names no role now). */
static int write_secret(struct service *s, const char *dir, struct glove_error *err) {
        int r = write_one_secret(s, dir, SECRET_NAME, s->secret, &s->secret_written, err);
        if (r == 0 && s->exposures)
                r = write_one_secret(s, dir, OWNER_SECRET_NAME, s->owner_secret, &s->owner_secret_written, err);
        else if (r == 0 && unlinkat(s->runtime_fd, OWNER_SECRET_NAME, 0) < 0 && errno != ENOENT)
                r = glove_error_set(err, errno, "service.secret", "%s/%s: %s", dir, OWNER_SECRET_NAME, strerror(errno));
        return r;
}

static int open_socket(struct service *s, const char *dir, struct glove_error *err) {
        int n = sd_listen_fds(1);
        if (n > 1)
                return glove_error_set(err, EINVAL, "service.listen_fds", "socket activation passed %d sockets; one expected", n);
        if (n == 1) {
                s->listen_fd = SD_LISTEN_FDS_START;
                if (sd_is_socket_unix(s->listen_fd, SOCK_STREAM, 1, NULL, 0) <= 0)
                        return glove_error_set(err, EINVAL, "service.listen_fds",
                                               "the activated socket is not a listening Unix stream socket");
                int fl = fcntl(s->listen_fd, F_GETFL);
                if (fl < 0 || fcntl(s->listen_fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
                    fcntl(s->listen_fd, F_SETFD, FD_CLOEXEC) < 0)
                        return glove_error_set(err, errno, "service.listen_fds", "fcntl: %s", strerror(errno));
                return 0;
        }
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, SOCKET_NAME) >= sizeof(sa.sun_path))
                return glove_error_set(err, ENAMETOOLONG, "service.socket",
                                       "%s/%s is longer than a Unix socket path may be", dir, SOCKET_NAME);
        memcpy(s->socket_path, sa.sun_path, sizeof(s->socket_path));
        s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s->listen_fd < 0)
                return glove_error_set(err, errno, "service.socket", "socket: %s", strerror(errno));
        if (unlinkat(s->runtime_fd, SOCKET_NAME, 0) < 0 && errno != ENOENT)
                return glove_error_set(err, errno, "service.socket", "%s: %s", sa.sun_path, strerror(errno));
        mode_t old = umask(0177);
        int r = bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0)
                return glove_error_set(err, errno, "service.socket", "bind %s: %s", sa.sun_path, strerror(errno));
        s->bound = true;
        if (fchmodat(s->runtime_fd, SOCKET_NAME, 0600, 0) < 0 || listen(s->listen_fd, 128) < 0)
                return glove_error_set(err, errno, "service.socket", "%s: %s", sa.sun_path, strerror(errno));
        return 0;
}

static int64_t realtime_ms(void) {
        return glove_time_realtime_ms();
}

/* The library bundle root: an existing directory (never created: bundles are
 * the operator's), mode 0700, owned by the service user, no link in its
 * path; the descriptor pins it for the process lifetime and every bundle is
 * opened beneath it. */
static int open_bundle_root(struct service *s, const struct glove_server_service_options *o, uid_t uid,
                            struct glove_error *err) {
        int r = glove_store_dir_open_private(o->library_bundle_root, uid, false, &s->broot_fd, err);
        if (r < 0) {
                glove_error_prefix(err, "--library-bundle-root");
                return r;
        }
        s->cfg.library_bundle_root = o->library_bundle_root;
        s->cfg.library_bundle_root_fd = s->broot_fd;
        return 0;
}

/* Leases whose handle left the policy go (one line each; a failure is only
 * reported: the store stays as it was). */
static void sweep_leases(const struct glove_supervisor_runtime_config *cfg, struct glove_log *log) {
        _cleanup_json_ json_t *removed = NULL, *kept = NULL;
        struct glove_error e = { 0 };
        if (glove_supervisor_lease_sweep(cfg, &removed, &kept, &e) < 0)
                glove_log(log, GLOVE_LOG_ERROR, e.code, NULL, "lease sweep: %s: %s", e.code, e.message);
        size_t i;
        json_t *h;
        json_array_foreach(removed, i, h)
                glove_log(log, GLOVE_LOG_NOTICE, "lease.removed", GLOVE_LOG_FIELDS({ "handle", json_string_value(h) }),
                          "lease.removed: %s: its handle is no longer in the policy", json_string_value(h));
        json_array_foreach(kept, i, h)
                glove_log(log, GLOVE_LOG_NOTICE, "lease.kept", GLOVE_LOG_FIELDS({ "handle", json_string_value(h) }),
                          "lease.kept: %s: no longer in the policy, but a live session holds it", json_string_value(h));
}

/* The managed runtime: the materialization root (0700, the service user's),
 * the retained mechanism's probe and the cgroup probe. Without a delegated
 * cgroup the runtime is constructed but not operational (one line says why). */
static int make_runtime(struct service *s, const struct glove_server_service_options *o, uid_t uid,
                        struct glove_error *err) {
        int r = glove_store_dir_open_private(o->materialization_root, uid, true, &s->mroot_fd, err);
        if (r < 0)
                return r;
        s->cfg.retained_available = glove_supervisor_retained_probe(&s->retained_why);
        if (!s->cfg.retained_available)
                glove_log(s->log, GLOVE_LOG_WARNING, s->retained_why.code, NULL, "retained_write is unavailable: %s: %s",
                          s->retained_why.code, s->retained_why.message);
        s->restricted[0] = o->runtime_dir;
        s->restricted[1] = o->state_dir;
        s->restricted[2] = o->materialization_root;
        s->restricted[3] = o->library_bundle_root; /* may be NULL: the end */
        s->restricted[4] = NULL;
        s->cfg.policy = s->policy;
        s->cfg.materialization_root = o->materialization_root;
        s->cfg.materialization_root_fd = s->mroot_fd;
        s->cfg.restricted = s->restricted;
        s->cfg.retained_why = s->cfg.retained_available ? NULL : &s->retained_why;
        s->cfg.agent_uid = uid;
        s->cfg.agent_gid = getegid();
        s->cfg.library_bundle_root_fd = -1;
        if (o->library_bundle_root && (r = open_bundle_root(s, o, uid, err)) < 0)
                return r;
        /* C: the credential lease store, STATE_DIR/leases (supervisor/lease.h). */
        if ((size_t)snprintf(s->lease_root, sizeof(s->lease_root), "%s/" GLOVE_LEASE_DIR, o->state_dir) >=
            sizeof(s->lease_root))
                return glove_error_set(err, ENAMETOOLONG, "service.state_dir", "%s/" GLOVE_LEASE_DIR " is too long",
                                       o->state_dir);
        r = glove_store_dir_open_private(s->lease_root, uid, true, &s->lease_fd, err);
        if (r < 0)
                return r;
        s->cfg.lease_root = s->lease_root;
        s->cfg.lease_root_fd = s->lease_fd;
        /* gloved's own place first: in a delegated v2 cgroup it pins its
         * subgroup and the delegated parent, moving itself into glove-host
         * when the manager could not (systemd 252); then the probe sees
         * run cgroups go beside glove-host. A refusal leaves the runtime
         * not operational, with the refusal as the reason. */
        struct glove_cgroup_probe probe = { 0 };
        struct glove_error cgerr = { 0 };
        int cr = glove_cgroup_host_setup(&s->cghost, &cgerr);
        if (cr == 0)
                cr = glove_cgroup_probe(&probe, &cgerr);
        if (cr == 0 && s->cghost &&
            (probe.backend != GLOVE_CGROUP_BACKEND_V2 || probe.placement != GLOVE_CGROUP_PLACEMENT_BESIDE ||
             strcmp(probe.parent, glove_cgroup_host_parent_path(s->cghost)) != 0))
                cr = glove_error_set(&cgerr, ESTALE, "cgroup.parent_replaced",
                                     "run cgroups would go to %s, not beside gloved's %s in the delegated %s",
                                     probe.parent[0] ? probe.parent : "nowhere", glove_cgroup_host_self_path(s->cghost),
                                     glove_cgroup_host_parent_path(s->cghost));
        if (cr == 0 && s->cghost)
                glove_log(s->log, GLOVE_LOG_INFO, "cgroup.placement", NULL,
                          "cgroup: %s: gloved in %s, session cgroups beside it in %s",
                          glove_cgroup_placement_name(glove_cgroup_host_placement(s->cghost)),
                          glove_cgroup_host_self_path(s->cghost), glove_cgroup_host_parent_path(s->cghost));
        if (cr < 0)
                probe.backend = GLOVE_CGROUP_BACKEND_NONE;
        /* #28: local services (docs/local-services.md), pinned before any
         * session is prepared or adopted; the runtime owns them. */
        struct glove_runtime_services *svc = NULL;
        if (o->local_services) {
                r = glove_runtime_services_new(o->local_services, uid, s->mroot_fd, o->materialization_root, &svc, err);
                if (r < 0)
                        return r;
                s->cfg.grant_check = glove_runtime_services_grant_check;
                s->cfg.grant_check_ctx = svc;
        }
        struct glove_runtime_options ro = {
                .services = svc,
                .config = &s->cfg,
                .policy = s->policy,
                .store = s->store,
                .receipts = s->receipts,
                .now_ms = realtime_ms,
                .cgroup = &probe,
                .cgroup_error = cr < 0 ? cr : 0,
                .cgroup_why = &cgerr,
                .cgroup_host = s->cghost,
                .log = s->log,
                .keep_bindings = true,
                .state_fd = s->state_fd,
        };
        r = glove_runtime_new(&ro, &s->runtime, err);
        /* Sessions an earlier gloved left: adopted when their keeper and
         * every identity match, else ended with their receipt (one line
         * each on stderr); then the run cgroups of keepers that are gone. */
        size_t acted = 0;
        if (r == 0)
                r = glove_runtime_reconcile(s->runtime, &acted, err);
        if (acted)
                glove_log(s->log, GLOVE_LOG_NOTICE, "reconcile.done", NULL, "reconciled %zu session%s of an earlier gloved",
                          acted, acted == 1 ? "" : "s");
        if (r == 0)
                sweep_leases(&s->cfg, s->log);
        if (r == 0 && !glove_runtime_operational(s->runtime))
                glove_log(s->log, GLOVE_LOG_WARNING, "runtime.not_operational", NULL,
                          "managed sessions are not operational: %s", glove_runtime_why(s->runtime));
        return r;
}

/* The construction-only remote runtime (glove/remote/runtime.h): the OpenSSH
 * artifacts written beneath the verified runtime directory, then the
 * object. No name is resolved, no socket opened, no program run. */
static int make_remote(struct service *s, const struct glove_server_service_options *o, struct glove_error *err) {
        int r = glove_remote_artifacts_write(s->runtime_fd, o->runtime_dir, &s->remote_cfg, err);
        if (r < 0)
                return r;
        s->remote_written = true;
        r = glove_remote_runtime_new(&s->remote_cfg, &s->remote, err);
        if (r < 0)
                return r;
        glove_log(s->log, GLOVE_LOG_INFO, "remote.constructed", NULL,
                  "remote backend constructed, construction only (no lifecycle): container %s; "
                  "%s/" GLOVE_REMOTE_SSH_CONFIG_NAME " and %s/" GLOVE_REMOTE_KNOWN_HOSTS_NAME " written",
                  glove_remote_runtime_container_identity(s->remote), o->runtime_dir, o->runtime_dir);
        return 0;
}

/* The remote backend file (before anything is written), or without it the
 * artifacts an earlier gloved with one left: they name no backend now. */
static int load_remote(struct service *s, const struct glove_server_service_options *o, uid_t uid,
                       struct glove_error *err) {
        if (o->remote_backend) {
                int r = glove_remote_backend_load(o->remote_backend, uid, &s->remote_cfg, err);
                if (r < 0)
                        glove_error_prefix(err, "--remote-backend");
                return r;
        }
        if (glove_remote_artifacts_remove(s->runtime_fd) > 0)
                glove_log(s->log, GLOVE_LOG_NOTICE, "remote.stale_artifacts", NULL,
                          "removed the remote backend artifacts an earlier gloved left in %s (started without "
                          "--remote-backend now)", o->runtime_dir);
        return 0;
}

/* The retention rule of the store: a session that ended and was cleaned
 * up leaves the live state once no unacknowledged receipt names it. */
static bool retire_acknowledged(void *ctx, const struct glove_store_session *st) {
        return !glove_store_receipts_pending(ctx, st->session_id);
}

/* Startup compaction (after the reconciler: a receipt it looks for is never
 * dropped before it looked), of whatever passed its threshold. A failure
 * leaves the old state, which is consistent: gloved starts and says so. */
static void compact_at_start(struct service *s) {
        struct glove_error e = { 0 };
        uint8_t mac[32];
        if (s->store) {
                glove_store_set_retention(s->store, retire_acknowledged, s->receipts);
                if (glove_store_compact_if_due(s->store, &e) < 0)
                        glove_log(s->log, GLOVE_LOG_WARNING, "store.compaction_failed", NULL,
                                  "store.compaction_failed: %s: %s", e.code, e.message);
        }
        e = (struct glove_error){ 0 };
        if (s->receipts &&
            glove_store_receipts_head(s->receipts, mac) - glove_store_receipts_base(s->receipts) >=
                    (s->compact_records ? s->compact_records : GLOVE_STORE_RECEIPTS_COMPACT_RECORDS) &&
            glove_store_receipts_compact(s->receipts, &e) < 0)
                glove_log(s->log, GLOVE_LOG_WARNING, "receipts.compaction_failed", NULL,
                          "receipts.compaction_failed: %s: %s", e.code, e.message);
}

/* A session store was just created empty: says so on stderr where a store
 * was expected (store.created_empty): its seal was there without the journal
 * (an interrupted creation, or the journal deleted when it held nothing
 * sealed), the torn-tail evidence of an earlier store lies next to it, or the
 * receipt journal already holds receipts of earlier sessions. */
static void created_empty(const char *store, const struct glove_store_journal_report *rep,
                          const struct glove_store_receipts *receipts, struct glove_log *log) {
        uint8_t mac[32];
        uint64_t n = receipts ? glove_store_receipts_head(receipts, mac) : 0;
        char torn[PATH_MAX];
        struct stat st;
        bool has_torn = (size_t)snprintf(torn, sizeof(torn), "%s.torn", store) < sizeof(torn) && lstat(torn, &st) == 0;
        if (rep->seal_replaced)
                glove_log(log, GLOVE_LOG_WARNING, "store.created_empty", NULL,
                          "store.created_empty: %s.seal was there without its journal and committed no "
                          "record; created an empty session store", store);
        if (n > 0)
                glove_log(log, GLOVE_LOG_WARNING, "store.created_empty", NULL,
                          "store.created_empty: created an empty session store %s, but the receipt "
                          "journal holds %llu receipt%s of earlier sessions (was the store moved or deleted?)",
                          store, (unsigned long long)n, n == 1 ? "" : "s");
        if (has_torn)
                glove_log(log, GLOVE_LOG_WARNING, "store.created_empty", NULL,
                          "store.created_empty: created an empty session store %s next to %s of an "
                          "earlier one (was the store moved or deleted?)", store, torn);
}

/* Refuses to start when a running sandbox reaches the runtime, state or
 * materialization directory (glove/server/exposure.h). */
static int check_exposure(const struct glove_server_service_options *o, struct glove_error *err) {
        struct glove_server_exposure_dir dirs[3];
        size_t n = 0;
        dirs[n++] = (struct glove_server_exposure_dir){ o->runtime_dir, "the runtime directory" };
        dirs[n++] = (struct glove_server_exposure_dir){ o->state_dir, "the state directory" };
        if (o->materialization_root)
                dirs[n++] = (struct glove_server_exposure_dir){ o->materialization_root, "the materialization root" };
        /* What gloved mounts into its own sessions (which may outlive an
         * earlier gloved in their keepers): leases and materializations. */
        char leases[PATH_MAX];
        const char *areas[2];
        size_t n_areas = 0;
        if (o->materialization_root) {
                if ((size_t)snprintf(leases, sizeof(leases), "%s/" GLOVE_LEASE_DIR, o->state_dir) >= sizeof(leases))
                        return glove_error_set(err, ENAMETOOLONG, "service.state_dir", "%s/" GLOVE_LEASE_DIR " is too long",
                                               o->state_dir);
                areas[n_areas++] = leases;
                areas[n_areas++] = o->materialization_root;
        }
        return glove_server_exposure_check(dirs, n, areas, n_areas, err);
}

/* The exposure policy and registry (glove/supervisor/exposure.h): no
 * exposure may be, contain or be inside gloved's own directories (runtime,
 * state, materialization, bundles, leases), nor contain its protected files
 * (the policies and journals given to it). */
static int open_exposures(struct service *s, const struct glove_server_service_options *o, uid_t uid,
                          struct glove_error *err) {
        int r = glove_exposure_policy_load(o->path_exposure_policy, uid, &s->xpolicy, err);
        if (r < 0)
                return r;
        size_t n = 0;
        const char *paths[] = { o->runtime_dir,          o->state_dir,
                                o->materialization_root, o->library_bundle_root,
                                s->lease_root[0] ? s->lease_root : NULL,
                                o->path_exposure_policy, o->path_exposure_journal,
                                o->session_policy,       o->session_store,
                                o->remote_backend };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(paths); i++)
                if (paths[i])
                        s->x_restricted[n++] = paths[i];
        s->x_restricted[n] = NULL;
        struct glove_exposures_options xo = {
                .policy = s->xpolicy,
                .journal_path = o->path_exposure_journal,
                .owner = uid,
                .restricted = s->x_restricted,
        };
        r = glove_exposures_open(&xo, realtime_ms(), &s->exposures, err);
        if (r < 0) {
                glove_error_prefix(err, "--path-exposure-journal %s", o->path_exposure_journal);
                return r;
        }
        /* One warning per root that could not be pinned: enrollment and use
         * beneath it fail exposure.root_unavailable until a restart. */
        for (size_t i = 0; i < glove_exposure_policy_root_count(s->xpolicy); i++) {
                const char *why = glove_exposures_root_problem(s->exposures, i);
                const struct glove_exposure_root *root = glove_exposure_policy_root(s->xpolicy, i);
                if (why)
                        glove_log(s->log, GLOVE_LOG_WARNING, "exposure.root_unavailable",
                                  GLOVE_LOG_FIELDS({ "root_id", root->root_id }),
                                  "exposure policy root %s (%s) could not be pinned (%s); nothing beneath it "
                                  "can be enrolled or used until it is a real directory of gloved's user, not "
                                  "writable by group or others, with no symbolic link on its path, and gloved "
                                  "restarts",
                                  root->root_id, root->path, why);
        }
        return 0;
}

static int start(struct service *s, const struct glove_server_service_options *o, struct glove_error *err) {
        uid_t uid = geteuid();
        int r = glove_store_dir_open_private(o->runtime_dir, uid, true, &s->runtime_fd, err);
        if (r == 0)
                r = glove_store_dir_open_private(o->state_dir, uid, true, &s->state_fd, err);
        if (r == 0)
                r = take_lock(s->runtime_fd, o->runtime_dir, &s->runtime_lock, err);
        if (r == 0)
                r = take_lock(s->state_fd, o->state_dir, &s->state_lock, err);
        /* Before any secret is written or read (the bootstrap secret, the
         * receipt key): no sandbox that already runs may reach them. */
        if (r == 0)
                r = check_exposure(o, err);
        if (r == 0 && o->session_policy)
                r = glove_supervisor_policy_load(o->session_policy, uid, &s->policy, err);
        if (r == 0)
                r = load_remote(s, o, uid, err);
        struct glove_store_journal_report rep = { 0 };
        if (r == 0 && o->session_store) {
                struct glove_store_options so = { .path = o->session_store, .owner = uid,
                                                   .compact_records = o->compact_records };
                r = glove_store_open_with(&so, &s->store, &rep, err);
                if (r == 0 && rep.unsealed_record)
                        glove_log(s->log, GLOVE_LOG_NOTICE, "store.unsealed_record", NULL,
                                  "session store: accepted one complete record written just before "
                                  "a crash (its seal was not updated)");
                if (r == 0 && glove_store_last_compaction(s->store)->rolled_forward)
                        glove_log(s->log, GLOVE_LOG_NOTICE, "store.compaction_finished", NULL,
                                  "store.compaction_finished: an earlier gloved stopped during a "
                                  "compaction after installing its checkpoint; the journal was switched now");
                if (r == 0 && rep.torn_bytes)
                        glove_log(s->log, GLOVE_LOG_WARNING, "store.torn_tail", NULL,
                                  "store.torn_tail: cut an incomplete last session record that was "
                                  "never answered (%llu bytes at offset %llu, kept in %s.torn); earlier "
                                  "sessions are intact",
                                  (unsigned long long)rep.torn_bytes, (unsigned long long)rep.torn_offset,
                                  o->session_store);
        }
        struct glove_store_receipts_options ro = { .state_dir = o->state_dir, .owner = uid,
                                                     .anchor = o->have_anchor ? o->anchor : NULL,
                                                     .compact_records = o->compact_records };
        if (r == 0)
                r = glove_store_receipts_open(&ro, &s->receipts, err);
        if (r == 0 && rep.created)
                created_empty(o->session_store, &rep, s->receipts, s->log);
        if (r == 0) {
                uint64_t torn, off;
                glove_store_receipts_recovery(s->receipts, &torn, &off);
                if (torn)
                        glove_log(s->log, GLOVE_LOG_WARNING, "receipts.torn_tail", NULL,
                                  "receipts.torn_tail: cut an incomplete last receipt record "
                                  "(%llu bytes at offset %llu); earlier receipts are intact",
                                  (unsigned long long)torn, (unsigned long long)off);
        }
        if (r == 0 && o->materialization_root)
                r = make_runtime(s, o, uid, err);
        if (r == 0 && o->remote_backend)
                r = make_remote(s, o, err);
        if (r == 0 && o->path_exposure_policy)
                r = open_exposures(s, o, uid, err);
        if (r == 0 && s->exposures) { /* the runtime holds &s->cfg: start_session opens sources from it */
                s->cfg.exposures = s->exposures;
                s->cfg.now_ms = realtime_ms;
        }
        s->compact_records = o->compact_records;
        if (r == 0)
                compact_at_start(s);
        if (r == 0)
                r = write_secret(s, o->runtime_dir, err);
        if (r == 0)
                r = open_socket(s, o->runtime_dir, err);
        return r;
}

static void stop(struct service *s) {
        if (s->bound)
                (void)unlinkat(s->runtime_fd, SOCKET_NAME, 0);
        if (s->secret_written)
                (void)unlinkat(s->runtime_fd, SECRET_NAME, 0);
        if (s->owner_secret_written)
                (void)unlinkat(s->runtime_fd, OWNER_SECRET_NAME, 0);
        if (s->remote_written)
                (void)glove_remote_artifacts_remove(s->runtime_fd);
        int fds[] = { s->listen_fd, s->runtime_lock, s->state_lock, s->runtime_fd, s->state_fd };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        glove_runtime_free(s->runtime);
        glove_remote_runtime_free(s->remote);
        glove_cgroup_host_free(s->cghost);
        if (s->mroot_fd >= 0)
                close(s->mroot_fd);
        if (s->broot_fd >= 0)
                close(s->broot_fd);
        if (s->lease_fd >= 0)
                close(s->lease_fd);
        glove_store_receipts_close(s->receipts);
        glove_store_close(s->store);
        glove_supervisor_policy_free(s->policy);
        glove_exposures_close(s->exposures);
        glove_exposure_policy_free(s->xpolicy);
        explicit_bzero(s->secret, sizeof(s->secret));
        explicit_bzero(s->owner_secret, sizeof(s->owner_secret));
}

int glove_server_service_run(const struct glove_server_service_options *o, struct glove_log *log,
                              struct glove_error *err) {
        struct service s = { .runtime_fd = -1, .state_fd = -1, .runtime_lock = -1, .state_lock = -1, .listen_fd = -1,
                             .mroot_fd = -1, .broot_fd = -1, .log = log
                             , .lease_fd = -1
        };
        int r = start(&s, o, err);
        if (r == 0) {
                struct glove_server_components comp = {
                        .policy = s.policy, .store = s.store, .receipts = s.receipts, .now_ms = realtime_ms
                };
                comp.runtime = s.runtime;
                comp.library_bundle_root = s.cfg.library_bundle_root != NULL;
                comp.exposures = s.exposures;
                comp.remote = s.remote;
                struct glove_server_options so = {
                        .listen_fd = s.listen_fd,
                        .uid = geteuid(),
                        .secret = s.secret,
                        .owner_secret = s.exposures ? s.owner_secret : NULL,
                        .client_timeout_ms = o->client_timeout_ms,
                        .idle_timeout_ms = o->idle_timeout_ms,
                        .max_connections = o->max_connections,
                        .components = &comp,
                        .log = log,
                };
                size_t n_sessions = s.store ? glove_store_sessions(s.store) : 0;
                glove_log(log, GLOVE_LOG_INFO, "service.listening", NULL,
                          "listening on %s (policy %s, session store %s, %zu session%s, path exposures %s%s)",
                          s.bound ? s.socket_path : "an activated socket", s.policy ? "loaded" : "none",
                          s.store ? "open" : "none", n_sessions, n_sessions == 1 ? "" : "s",
                          s.exposures ? "open" : "none", s.remote ? ", remote backend construction-only" : "");
                r = glove_server_run(&so, err);
        }
        stop(&s);
        return r;
}

int glove_server_service_main(int argc, char **argv) {
        struct glove_server_service_options o;
        struct glove_error err = { 0 };
        umask(0077);
        /* A write to a pipe whose reader left fails with EPIPE (the session
         * engine's requirement; sockets use MSG_NOSIGNAL anyway). */
        signal(SIGPIPE, SIG_IGN);
        if (glove_fd_ensure_std() < 0)
                return 1;
        int r = glove_server_service_parse_args(argc, argv, &o, &err);
        if (r < 0) {
                char shown[GLOVE_SHOWN_SIZE(GLOVE_ERROR_MESSAGE_MAX)];
                fprintf(stderr, "gloved: %s: %s\n", err.code, glove_shown(err.message, shown, sizeof(shown)));
                glove_server_service_options_free(&o);
                return 2;
        }
        if (o.help || o.version) {
                if (o.help)
                        fputs(glove_server_service_usage, stdout);
                else
                        printf("gloved %s\n", GLOVE_VERSION);
                glove_server_service_options_free(&o);
                return 0;
        }
        /* Under systemd (JOURNAL_STREAM names stderr) to the journal, else
         * JSON lines on stderr (docs/daemon.md, "Logs"). */
        struct glove_log_options lo = {
                .level = o.log_level,
                .sink = glove_log_sink_choose(getenv("JOURNAL_STREAM"), STDERR_FILENO),
                .fd = STDERR_FILENO,
                .identifier = "gloved",
                .journal_sendv = sd_journal_sendv,
        };
        struct glove_log *log = NULL;
        if (glove_log_new(&lo, &log) < 0) {
                fprintf(stderr, "gloved: service.no_memory: the log could not be made\n");
                glove_server_service_options_free(&o);
                return 1;
        }
        /* SIGTERM and SIGINT stay blocked from here to the exit: the event
         * loop reads them through a signalfd, one that arrives during
         * start-up stops gloved as soon as it listens, and a second one
         * during the stop (SIGINT then SIGTERM) stays pending instead of
         * killing gloved before it removed its secrets, socket and remote
         * artifacts (docs/control-protocol.md, the start-up
         * section). Children reset their
         * masks (glove-keeper, the image tools). */
        sigset_t stop_signals;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGTERM);
        sigaddset(&stop_signals, SIGINT);
        (void)sigprocmask(SIG_BLOCK, &stop_signals, NULL);
        r = glove_server_service_run(&o, log, &err);
        glove_server_service_options_free(&o);
        if (r < 0)
                glove_log(log, GLOVE_LOG_ERROR, err.code ? err.code : "service.failed", NULL, "%s: %s",
                          err.code ? err.code : "service.failed", err.message);
        glove_log_free(log);
        return r < 0 ? 1 : 0;
}

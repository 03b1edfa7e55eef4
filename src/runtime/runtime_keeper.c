/* SPDX-License-Identifier: Apache-2.0 */
/* The keeper's launch seen from gloved (glove/keeper/keeper.h,
 * docs/recovery.md): its files (DIR/STEM.{sock,status,log,binding}), its
 * spawn, a connection to its socket (relink, adoption) and the ABORT of
 * keepers whose start cannot complete. The channel is in runtime_link.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/keeper/keeper.h"
#include "glove/supervisor/lease.h"
#include "glove/supervisor/prepare.h"
#include "runtime_internal.h"

/* ---- the keeper's files ---- */

/* The keeper files' stem of a session id: "k" and 32 hex of its SHA-256
 * (a socket path must fit sun_path whatever the id's length). */
void rt_keeper_stem(const char *id, char out[40]) {
        uint8_t d[32];
        out[0] = 'k';
        if (glove_digest_sha256(id, strlen(id), d, NULL) < 0 || glove_digest_hex_encode(d, 16, out + 1, 39) < 0)
                snprintf(out, 40, "k0");
}

/* Opens (making it 0700 when missing) ROOT/keepers. */
static int keepers_dir(const struct glove_supervisor_runtime_config *cfg, struct glove_error *err) {
        if (mkdirat(cfg->materialization_root_fd, "keepers", 0700) < 0 && errno != EEXIST)
                return glove_error_set(err, errno, "keeper.dir", "%s/keepers: %s", cfg->materialization_root,
                                       strerror(errno));
        int fd = openat(cfg->materialization_root_fd, "keepers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "keeper.dir", "%s/keepers: %s", cfg->materialization_root,
                                       strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
                close(fd);
                return glove_error_set(err, EPERM, "keeper.dir", "%s/keepers is not a 0700 directory of the service user",
                                       cfg->materialization_root);
        }
        return fd;
}

/* sockaddr of DIR/STEM.sock reached through /proc/self/fd/DIRFD (short
 * whatever the root's length). */
static int keeper_addr(int dirfd, const char *stem, struct sockaddr_un *sa) {
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s.sock", dirfd, stem);
        return n < 0 || (size_t)n >= sizeof(sa->sun_path) ? -ENAMETOOLONG : 0;
}

/* Removes a session's keeper files (after its receipt, or when it never
 * had a keeper that runs). */
void rt_keeper_files_remove(const struct glove_supervisor_runtime_config *cfg, const char *stem, bool keep_log) {
        int dfd = openat(cfg->materialization_root_fd, "keepers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return;
        static const char *const ext[] = { "sock", "status", "binding", "log" };
        char name[64];
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(ext) - (keep_log ? 1 : 0); i++) {
                snprintf(name, sizeof(name), "%s.%s", stem, ext[i]);
                if (strcmp(ext[i], "status") == 0 || strcmp(ext[i], "binding") == 0)
                        (void)glove_file_replace_sweep(dfd, name); /* a writer's leftover temporary */
                (void)unlinkat(dfd, name, 0);
        }
        close(dfd);
}

/* Reads DIR/STEM.status (new reference, or NULL). */
json_t *rt_status_read(const struct glove_supervisor_runtime_config *cfg, const char *stem) {
        char rel[96];
        snprintf(rel, sizeof(rel), "keepers/%s.status", stem);
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        if (glove_file_read_bounded(cfg->materialization_root_fd, rel, O_NOFOLLOW | O_NONBLOCK, 65536, &buf, &n, NULL) < 0)
                return NULL;
        return rt_json_object((const uint8_t *)buf, n);
}

/* Writes DIR/STEM.binding (the launch binding, canonical JSON, 0600, a new
 * file renamed over the old): an adopting gloved reads it back for the
 * receipt. */
int rt_binding_write(struct rt_session *s, struct glove_error *err) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        int r = glove_json_encode_canonical(s->binding, &text, &n, err);
        if (r < 0)
                return r;
        int dfd = keepers_dir(s->rt->o.config, err);
        if (dfd < 0)
                return dfd;
        _cleanup_close_ int dir = dfd;
        char name[64];
        snprintf(name, sizeof(name), "%s.binding", s->stem);
        /* Not synced: an adopting gloved needs it after gloved's death (the
         * page cache keeps it); after a host crash the session is
         * host_restarted and its receipt carries no binding. */
        struct glove_error e = { 0 };
        r = glove_file_replace(dir, name, text, n, 0600, GLOVE_FILE_REPLACE_NO_SYNC, &e);
        if (r < 0)
                return glove_error_set(err, -r, "keeper.binding", "%s", e.message);
        return 0;
}

/* The local copy of a session's whole launch binding (runtime.h,
 * keep_bindings): STATE/bindings/ID.json, canonical, 0600, synced. Not
 * for a stand-in (omitted binding): there is nothing more to keep. */
int rt_binding_keep(struct rt_session *s, struct glove_error *err) {
        return rt_binding_keep_json(s->rt, s->id, s->binding, err);
}

int rt_binding_keep_json(struct glove_runtime *rt, const char *id, const json_t *binding, struct glove_error *err) {
        const struct glove_runtime_options *o = &rt->o;
        if (!o->keep_bindings || !binding || json_object_get(binding, "omitted_bytes") ||
            json_object_get(binding, "omitted"))
                return 0;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        int r = glove_json_encode_canonical(binding, &text, &n, err);
        if (r < 0)
                return r;
        if (mkdirat(o->state_fd, "bindings", 0700) < 0 && errno != EEXIST)
                return glove_error_set(err, errno, "state.binding", "bindings: %s", strerror(errno));
        _cleanup_close_ int dir = openat(o->state_fd, "bindings", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return glove_error_set(err, errno, "state.binding", "bindings: %s", strerror(errno));
        char name[GLOVE_STORE_ID_MAX + 8];
        snprintf(name, sizeof(name), "%s.json", id);
        struct glove_error e = { 0 };
        r = glove_file_replace(dir, name, text, n, 0600, 0, &e);
        return r < 0 ? glove_error_set(err, -r, "state.binding", "bindings/%s: %s", name, e.message) : 0;
}

/* Removes STATE/bindings/ID.json (cleanup_session); absent is fine. */
void rt_binding_forget(struct glove_runtime *rt, const char *id) {
        if (!rt->o.keep_bindings)
                return;
        int dir = openat(rt->o.state_fd, "bindings", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return;
        char name[GLOVE_STORE_ID_MAX + 8];
        snprintf(name, sizeof(name), "%s.json", id);
        (void)unlinkat(dir, name, 0);
        close(dir);
}

/* ---- the keeper's launch and its socket ---- */

/* Starts the keeper of s: glove-keeper exec'd by a double fork
 * (glove_keeper_spawn: the keeper is nobody's child here and is never
 * waited for by gloved) with its launch encoded from the complete
 * description d, and links it. Returns 0 or -errno (keeper.*). */
int rt_keeper_spawn(struct rt_session *s, const struct glove_session_desc *d, struct glove_error *err) {
        struct glove_runtime *rt = s->rt;
        int dfd = keepers_dir(rt->o.config, err);
        if (dfd < 0)
                return dfd;
        _cleanup_close_ int dir = dfd;
        rt_keeper_stem(s->id, s->stem);
        char name[64];
        snprintf(name, sizeof(name), "%s.sock", s->stem);
        (void)unlinkat(dir, name, 0);
        struct sockaddr_un sa;
        if (keeper_addr(dir, s->stem, &sa) < 0)
                return glove_error_set(err, ENAMETOOLONG, "keeper.socket", "the keeper socket path is too long");
        _cleanup_close_ int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        /* Bound here, listened on by the keeper: a connecting peer's
         * SO_PEERCRED names the process that called listen(2). */
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || fchmodat(dir, name, 0600, 0) < 0)
                return glove_error_set(err, errno, "keeper.socket", "%s/keepers/%s: %s",
                                       rt->o.config->materialization_root, name, strerror(errno));
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return glove_error_set(err, errno, "keeper.socket", "socketpair: %s", strerror(errno));
        s->mir = calloc(1, sizeof(*s->mir));
        if (!s->mir) {
                close(sv[0]);
                close(sv[1]);
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
        struct glove_keeper_args a = {
                .session_id = s->id,
                .stem = s->stem,
                .desc = d,
                .channel_fd = sv[1],
                .listen_fd = lfd,
                .dir_fd = dir,
                .cgroup_parent = rt->cgroup.parent,
                .cgroup_v2 = rt->cgroup.backend == GLOVE_CGROUP_BACKEND_V2,
                .now_ms = rt->o.now_ms,
        };
        /* C: the credential leases' locks go with the keeper (lease.h). */
        _Static_assert(GLOVE_LEASE_MAX_PER_LAUNCH <= GLOVE_KEEPER_HOLD_FDS_MAX, "a keeper holds every lease lock");
        int hold[GLOVE_KEEPER_HOLD_FDS_MAX];
        a.n_hold_fds = glove_supervisor_launch_lease_fds(s->launch, hold, GLOVE_KEEPER_HOLD_FDS_MAX);
        a.hold_fds = hold;
        a.refinement_fixture = glove_supervisor_launch_refinement_fixture(s->launch, &a.refinement_fixture_len);
        rt_svc_keeper_args(s, &a); /* #28 */
        /* Its standard error from the exec on (the loader's and the
         * launch decoding's words too). */
        char logname[64];
        snprintf(logname, sizeof(logname), "%s.log", s->stem);
        _cleanup_close_ int log = openat(dir, logname, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r;
        if (rt->keeper_exe.fd < 0)
                r = glove_error_set(err, rt->keeper_why.errnum ? rt->keeper_why.errnum : ENOENT,
                                    rt->keeper_why.code ? rt->keeper_why.code : "keeper.missing", "%s",
                                    rt->keeper_why.message);
        else if (log < 0)
                r = glove_error_set(err, errno, "keeper.fork", "keepers/%s: %s", logname, strerror(errno));
        else
                r = glove_keeper_spawn(&rt->keeper_exe, &a, log, err);
        close(sv[1]);
        if (r < 0) {
                close(sv[0]);
                (void)unlinkat(dir, name, 0);
                return r;
        }
        s->kfd = sv[0];
        return rt_link_attach(s, err);
}


/* Connects to a keeper's socket; the peer must be of this uid. Returns the
 * descriptor (nonblocking), or -errno (-ENOENT, -ECONNREFUSED: no keeper
 * listens). *peer: the peer's pid. */
int rt_keeper_connect(const struct glove_supervisor_runtime_config *cfg, const char *stem, pid_t *peer) {
        _cleanup_close_ int dir = openat(cfg->materialization_root_fd, "keepers",
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        struct sockaddr_un sa;
        if (keeper_addr(dir, stem, &sa) < 0)
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        struct ucred uc;
        socklen_t len = sizeof(uc);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return -errno;
        if (uc.uid != geteuid())
                return -EPERM;
        *peer = uc.pid;
        return TAKE_FD(fd);
}

/* Tells the keeper of a session that cannot go on to end what it holds
 * (ABORT: it kills its own PID 1 through its pidfd, never a pid). */
/* Tells the keeper of stem (through its socket) to end what it holds:
 * HELLO and ABORT (it kills its own PID 1 through its pidfd, never a pid).
 * Returns the channel, or -1 when no keeper of this uid answers. */
int rt_keeper_abort_start(const struct glove_supervisor_runtime_config *cfg, const char *stem) {
        pid_t peer = 0;
        int fd = rt_keeper_connect(cfg, stem, &peer);
        if (fd < 0)
                return -1;
        static const char hello[] = "H{\"version\":1}";
        uint8_t m = GLOVE_KEEPER_ABORT;
        if (send(fd, hello, sizeof(hello) - 1, MSG_NOSIGNAL) < 0 || send(fd, &m, 1, MSG_NOSIGNAL) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

void rt_keeper_abort_wait(int *fds, size_t n) {
        struct pollfd p[GLOVE_RUNTIME_ABORTS_MAX];
        bool done[GLOVE_RUNTIME_ABORTS_MAX] = { false };
        if (n > GLOVE_RUNTIME_ABORTS_MAX)
                n = GLOVE_RUNTIME_ABORTS_MAX;
        int64_t deadline = (int64_t)(glove_time_monotonic_us() / 1000) + GLOVE_RUNTIME_ABORT_WAIT_MS;
        for (;;) {
                nfds_t k = 0;
                size_t idx[GLOVE_RUNTIME_ABORTS_MAX];
                for (size_t i = 0; i < n; i++)
                        if (fds[i] >= 0 && !done[i]) {
                                p[k] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
                                idx[k++] = i;
                        }
                int64_t left = deadline - (int64_t)(glove_time_monotonic_us() / 1000);
                if (k == 0 || left <= 0)
                        break;
                int pr = poll(p, k, (int)left);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr <= 0)
                        break;
                for (nfds_t j = 0; j < k; j++) {
                        if (!(p[j].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        size_t i = idx[j];
                        ssize_t got = recv(fds[i], rt_link_buf, sizeof(rt_link_buf), MSG_DONTWAIT | MSG_TRUNC);
                        if (got < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (got <= 0 || (size_t)got > sizeof(rt_link_buf)) {
                                done[i] = got <= 0;
                                continue;
                        }
                        if (rt_link_buf[0] == GLOVE_KEEPER_ENDED)
                                done[i] = true;
                        else if (rt_link_buf[0] == GLOVE_KEEPER_STATE) {
                                _cleanup_json_ json_t *o = rt_json_object(rt_link_buf + 1, (size_t)got - 1);
                                done[i] = json_is_object(json_object_get(o, "outcome"));
                        }
                }
        }
        for (size_t i = 0; i < n; i++) {
                if (fds[i] < 0)
                        continue;
                uint8_t m = GLOVE_KEEPER_ACK;
                (void)!send(fds[i], &m, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
                close(fds[i]);
                fds[i] = -1;
        }
}

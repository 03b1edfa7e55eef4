/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gloved's local services and guest channels (services.h; issue 28;
 * docs/local-services.md, docs/guest-channels.md): the object built at
 * start, and what one session gets from it (runtime_internal.h, "rt_svc_*"):
 * the transport chosen for its runtime, the socketpair or the alias
 * sockets, the variables, the binding member, the keeper's part, and its
 * admission registry.
 */
#include "glove/runtime/services.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "glove/adapters/sage.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/channel/capability.h"
#include "glove/channel/host.h"
#include "glove/channel/registry.h"
#include "glove/channel/server.h"
#include "glove/container/mount_plan.h"
#include "glove/container/seccomp.h"
#include "glove/services/config.h"
#include "glove/services/binding.h"
#include "glove/services/endpoint.h"
#include "glove/services/proxy.h"
#include "runtime_internal.h"

#define MAX_ENDPOINTS 16

/* A session's keeper, and its registry, as the observation server's
 * worker looks them up (by the connecting keeper's pid). */
struct peer {
        pid_t pid;
        struct glove_channel_registry *reg; /* borrowed: the session's rt_svc owns it */
        unsigned refs;                      /* the worker holds it */
        bool gone;                          /* unbound: freed when refs drop to 0 */
};

struct glove_runtime_services {
        uid_t uid;
        int mroot_fd; /* borrowed */
        char *mroot;
        struct glove_services_config *cfg;
        size_t n;
        struct glove_services_endpoint *eps[MAX_ENDPOINTS];
        bool bound[MAX_ENDPOINTS];       /* adapter-bound (the Sage binding) */
        struct glove_channel_host *host; /* frozen; NULL: no endpoint is bound */
        char catalog_digest[65];
        struct glove_channel_server *servers[MAX_ENDPOINTS];
        uint64_t generation;
        char manifest_digest[65]; /* SHA-256 of the file's bytes */
        pthread_mutex_t lock;     /* peers */
        pthread_cond_t idle;
        struct peer peers[GLOVE_RUNTIME_SESSIONS_MAX];
};

/* ---- the object ---- */

static int registry_dir(struct glove_runtime_services *sv, const char *name, int *out, struct glove_error *err) {
        if (mkdirat(sv->mroot_fd, name, 0700) < 0 && errno != EEXIST)
                return glove_error_set(err, errno, "services.state_dir", "%s/%s: %s", sv->mroot, name, strerror(errno));
        int fd = openat(sv->mroot_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != sv->uid || (st.st_mode & 077)) {
                int e = fd < 0 ? errno : EPERM;
                if (fd >= 0)
                        close(fd);
                return glove_error_set(err, e, "services.state_dir", "%s/%s: not an owner-only directory of uid %u",
                                       sv->mroot, name, (unsigned)sv->uid);
        }
        *out = fd;
        return 0;
}

static struct glove_channel_registry *resolve_peer(void *ctx, pid_t pid) {
        struct glove_runtime_services *sv = ctx;
        struct glove_channel_registry *r = NULL;
        pthread_mutex_lock(&sv->lock);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(sv->peers); i++)
                if (sv->peers[i].reg && !sv->peers[i].gone && sv->peers[i].pid == pid) {
                        sv->peers[i].refs++;
                        r = sv->peers[i].reg;
                        break;
                }
        pthread_mutex_unlock(&sv->lock);
        return r;
}

static void unresolve_peer(void *ctx, struct glove_channel_registry *r) {
        struct glove_runtime_services *sv = ctx;
        pthread_mutex_lock(&sv->lock);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(sv->peers); i++)
                if (sv->peers[i].reg == r && sv->peers[i].refs) {
                        sv->peers[i].refs--;
                        break;
                }
        pthread_cond_broadcast(&sv->idle);
        pthread_mutex_unlock(&sv->lock);
}

/* The observation server's listening socket at the endpoint's path. The
 * directory is checked first (opened without following links, gloved's
 * user's, owner-only: nothing is made in one that pinning would refuse);
 * what is already there must be a socket of ours that nobody serves (a
 * stale one, replaced): a socket that accepts a connection is another
 * gloved's, services.endpoint_in_use. */
static int listen_at(const char *path, uid_t uid, int *out, struct glove_error *err) {
        const char *slash = strrchr(path, '/');
        char dir[GLOVE_SERVICES_SOCKET_PATH_MAX + 1];
        if (!slash || (size_t)(slash - path) >= sizeof(dir) || !slash[1])
                return glove_error_set(err, EINVAL, "services.config_path", "%s: no directory and name", path);
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        const char *name = slash + 1;
        _cleanup_close_ int pfd = -1;
        struct stat st;
        if (glove_fd_open_nofollow(dir[0] ? dir : "/", O_PATH | O_DIRECTORY, &pfd, NULL) < 0 || fstat(pfd, &st) < 0)
                return glove_error_set(err, errno ? errno : ENOENT, "services.endpoint_parent",
                                       "%s: cannot open it as a directory without following links", dir);
        if (st.st_uid != uid)
                return glove_error_set(err, EPERM, "services.endpoint_parent_owner", "%s is not uid %u's", dir,
                                       (unsigned)uid);
        if (st.st_mode & 077)
                return glove_error_set(err, EPERM, "services.endpoint_parent_mode",
                                       "%s is mode %04o: it must be owner-only (0700)", dir, (unsigned)(st.st_mode & 07777));
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", pfd, name) >= sizeof(sa.sun_path))
                return glove_error_set(err, ENAMETOOLONG, "services.config_path", "%s: too long for a socket", path);
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISSOCK(st.st_mode) || st.st_uid != uid)
                        return glove_error_set(err, EEXIST, "services.endpoint_not_socket",
                                               "%s exists and is not a socket of uid %u", path, (unsigned)uid);
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        return glove_error_set(err, EADDRINUSE, "services.endpoint_in_use",
                                               "%s is served by another process (another gloved?): not replaced",
                                               path);
                if (unlinkat(pfd, name, 0) < 0)
                        return glove_error_set(err, errno, "services.endpoint_parent", "%s: unlink: %s", path,
                                               strerror(errno));
        }
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return glove_error_set(err, errno, "services.listen", "%s: cannot bind: %s", path, strerror(errno));
        if (fchmodat(pfd, name, 0600, 0) < 0 || listen(fd, 16) < 0) {
                int e = errno;
                (void)unlinkat(pfd, name, 0);
                return glove_error_set(err, e, "services.listen", "%s: cannot listen: %s", path, strerror(e));
        }
        *out = TAKE_FD(fd);
        return 0;
}

/* Every sandbox sees /usr and some of /etc (the standard perimeter,
 * glove_mount_plan_host_view), grants or not: an endpoint there, or a
 * mount of one there, would be exposed to every session. Checked at start
 * and again before each session that may connect (a mount made later). */
static int host_view_check(const struct glove_runtime_services *sv, struct glove_error *err) {
        char p[PATH_MAX];
        for (size_t i = 0; sv->n && glove_mount_plan_host_view(i, p, sizeof(p)) == 0; i++) {
                /* A symbolic link is recreated inside as a link into the
                 * sandbox's own view: only what is bound or copied counts. */
                _cleanup_close_ int fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))
                        continue;
                int r = glove_services_grant_check(fd, (const struct glove_services_endpoint *const *)sv->eps, sv->n,
                                                   NULL, err);
                if (r < 0) {
                        glove_error_prefix(err, "%s, which every sandbox sees", p);
                        return r;
                }
        }
        return 0;
}

static int file_digest(const char *path, char out[65], struct glove_error *err) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "services.file_open", "%s: %s", path, strerror(errno));
        uint8_t buf[65536], md[GLOVE_DIGEST_SHA256_LEN];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0)
                return glove_error_set(err, errno, "services.file_read", "%s: %s", path, strerror(errno));
        int r = glove_digest_sha256(buf, (size_t)n, md, err);
        if (r == 0)
                glove_digest_hex_encode(md, sizeof(md), out, 65);
        return r;
}

int glove_runtime_services_new(const char *path, uid_t uid, int mroot_fd, const char *mroot,
                               struct glove_runtime_services **out, struct glove_error *err) {
        *out = NULL;
        struct glove_runtime_services *sv = calloc(1, sizeof(*sv));
        if (!sv || !(sv->mroot = strdup(mroot))) {
                free(sv);
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
        sv->uid = uid;
        sv->mroot_fd = mroot_fd;
        sv->generation = 1;
        pthread_mutex_init(&sv->lock, NULL);
        pthread_cond_init(&sv->idle, NULL);
        int r = glove_services_config_load(path, uid, &sv->cfg, err);
        if (r == 0)
                r = file_digest(path, sv->manifest_digest, err);
        sv->n = r == 0 ? glove_services_config_count(sv->cfg) : 0;
        bool any_bound = false;
        for (size_t i = 0; r == 0 && i < sv->n; i++) {
                r = glove_sage_resolve(glove_services_config_guest_channel(sv->cfg, i), &sv->bound[i], err);
                any_bound |= sv->bound[i];
        }
        if (r == 0 && any_bound) {
                r = glove_channel_host_new(&sv->host, err);
                if (r == 0)
                        r = glove_sage_register(sv->host, err);
                if (r == 0)
                        r = glove_channel_host_freeze(sv->host, err);
                if (r == 0)
                        snprintf(sv->catalog_digest, sizeof(sv->catalog_digest), "%s",
                                 glove_channel_host_catalog_digest(sv->host));
        }
        for (size_t i = 0; r == 0 && i < sv->n; i++) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, i);
                int lfd = -1;
                if (sv->bound[i])
                        r = listen_at(e->socket_path, uid, &lfd, err);
                if (r == 0)
                        r = glove_services_endpoint_pin(e->socket_path, uid, &sv->eps[i], err);
                if (r == 0 && sv->bound[i]) {
                        struct glove_channel_server_config c = {
                                .listen_fd = lfd,
                                .peer_uid = uid,
                                .accept_window_ms = GLOVE_RUNTIME_SERVICES_ACCEPT_WINDOW_MS,
                                .io_timeout_ms = GLOVE_RUNTIME_SERVICES_IO_MS,
                                .resolve = resolve_peer,
                                .unresolve = unresolve_peer,
                                .ctx = sv,
                        };
                        lfd = -1;
                        r = glove_channel_server_start(&c, &sv->servers[i], err);
                }
                if (lfd >= 0)
                        close(lfd);
                if (r < 0)
                        glove_error_prefix(err, "local service %s", e->alias);
        }
        if (r == 0)
                r = host_view_check(sv, err);
        if (r < 0) {
                glove_runtime_services_free(sv);
                return r;
        }
        *out = sv;
        return 0;
}

void glove_runtime_services_free(struct glove_runtime_services *sv) {
        if (!sv)
                return;
        for (size_t i = 0; i < MAX_ENDPOINTS; i++)
                glove_channel_server_stop(sv->servers[i]);
        for (size_t i = 0; i < MAX_ENDPOINTS; i++)
                glove_services_endpoint_free(sv->eps[i]);
        glove_channel_host_free(sv->host);
        glove_services_config_free(sv->cfg);
        pthread_cond_destroy(&sv->idle);
        pthread_mutex_destroy(&sv->lock);
        free(sv->mroot);
        free(sv);
}

int glove_runtime_services_grant_check(void *ctx, int fd, const char *what, struct glove_error *err) {
        struct glove_runtime_services *sv = ctx;
        if (!sv || !sv->n)
                return 0;
        size_t which = 0;
        int r = glove_services_grant_check(fd, (const struct glove_services_endpoint *const *)sv->eps, sv->n, &which,
                                           err);
        if (r < 0)
                glove_error_prefix(err, "%s", what);
        return r;
}

/* Endpoint i's runtime ids as pointers into the configuration (ids must
 * hold GLOVE_SERVICES_MAX_RUNTIME_IDS). */
static size_t endpoint_runtimes(const struct glove_runtime_services *sv, size_t i, const char **ids) {
        const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, i);
        for (size_t j = 0; j < e->n_runtime_ids; j++)
                ids[j] = e->runtime_ids[j];
        return e->n_runtime_ids;
}

int glove_runtime_services_channel_version(const struct glove_runtime_services *sv, bool operational,
                                           const char **why) {
        const char *reason = "channel.capability_unconfigured";
        int best = 0;
        for (size_t i = 0; sv && i < sv->n && !best; i++) {
                bool rechecked = true;
                for (size_t j = 0; j < sv->n; j++) {
                        struct glove_error ig = { 0 };
                        if (glove_services_endpoint_check(sv->eps[j], &ig) < 0)
                                rechecked = false;
                }
                size_t n_ad = 0;
                const char *const *ad = glove_sage_runtime_ids(&n_ad);
                const char *ep[GLOVE_SERVICES_MAX_RUNTIME_IDS];
                size_t n_ep = endpoint_runtimes(sv, i, ep);
                struct glove_channel_composition c = {
                        .transport_id = sv->bound[i] ? GLOVE_SAGE_TRANSPORT_ID : NULL,
                        .binding_id = glove_services_config_guest_channel(sv->cfg, i),
                        .adapter_binding_id = GLOVE_SAGE_BINDING_ID,
                        .catalog = sv->host,
                        .expected_catalog_digest = sv->host ? sv->catalog_digest : NULL,
                        .factory_constructed = sv->servers[i] != NULL,
                        .runtime_linux = operational,
                        .endpoint_runtime_ids = ep,
                        .n_endpoint_runtime_ids = n_ep,
                        .adapter_runtime_ids = ad,
                        .n_adapter_runtime_ids = n_ad,
                        .endpoints_rechecked = rechecked,
                };
                best = glove_channel_capability(&c, &reason);
        }
        if (why)
                *why = best ? "" : reason;
        return best;
}

json_t *glove_runtime_services_summary(const struct glove_runtime_services *sv) {
        if (!sv)
                return NULL;
        json_t *o = json_object(), *a = json_array();
        for (size_t i = 0; o && a && i < sv->n; i++) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, i);
                json_t *x = json_object();
                const char *ids[GLOVE_SERVICES_MAX_RUNTIME_IDS];
                size_t n = endpoint_runtimes(sv, i, ids);
                json_t *rids = json_array();
                for (size_t j = 0; rids && j < n; j++)
                        json_array_append_new(rids, json_string(ids[j]));
                json_object_set_new(x, "alias", json_string(e->alias));
                json_object_set_new(x, "runtime_ids", rids);
                json_object_set_new(x, "transport", json_string(sv->bound[i] ? GLOVE_SAGE_TRANSPORT_ID : "pathname"));
                json_object_set_new(x, "guest_channel", e->has_guest_channel ? json_string(e->guest_channel) : json_null());
                json_array_append_new(a, x);
        }
        json_object_set_new(o, "endpoints", a);
        return o;
}

/* ---- one session ---- */

struct rt_svc {
        bool inherited;
        size_t n;
        size_t idx[MAX_ENDPOINTS];
        int guest_fd;             /* inherited: the sandbox's end, until the keeper has it */
        int fds[MAX_ENDPOINTS];   /* the keeper's: the supervisor end, or the alias listeners */
        char dir[PATH_MAX];       /* pathname: the alias directory (absolute), "" when none */
        char dir_name[64];        /* its name under services/ */
        dev_t dir_dev;
        ino_t dir_ino;
        char **envp;              /* the launch's and ours, NULL-terminated */
        char *keeper_json;
        struct glove_channel_registry *reg; /* adapter-bound: the session's registry */
        struct glove_supervisor_launch *launch; /* borrowed, for add_mounts */
};

static void strv_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static void svc_unbind(struct glove_runtime_services *sv, struct glove_channel_registry *reg) {
        pthread_mutex_lock(&sv->lock);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(sv->peers); i++)
                if (sv->peers[i].reg == reg) {
                        sv->peers[i].gone = true;
                        while (sv->peers[i].refs)
                                pthread_cond_wait(&sv->idle, &sv->lock);
                        sv->peers[i] = (struct peer){ 0 };
                }
        pthread_mutex_unlock(&sv->lock);
}

void rt_svc_free(struct rt_session *s) {
        struct rt_svc *v = s->svc;
        if (!v)
                return;
        if (v->guest_fd >= 0)
                close(v->guest_fd);
        for (size_t i = 0; i < v->n; i++)
                if (v->fds[i] >= 0)
                        close(v->fds[i]);
        if (v->reg) {
                svc_unbind(s->rt->o.services, v->reg);
                glove_channel_registry_free(v->reg);
        }
        rt_svc_release(s);
        strv_free(v->envp);
        free(v->keeper_json);
        free(v);
        s->svc = NULL;
}

void rt_svc_release(struct rt_session *s) {
        struct rt_svc *v = s->svc;
        struct glove_runtime_services *sv = s->rt->o.services;
        if (!v || !sv)
                return;
        /* The keeper is gone: its pid may be another process's soon, never
         * this session's peer again (the registry stays open for paging). */
        if (v->reg)
                svc_unbind(sv, v->reg);
        if (!v->dir[0])
                return;
        _cleanup_close_ int d = openat(sv->mroot_fd, "services", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int sub = d >= 0 ? openat(d, v->dir_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        struct stat st;
        if (sub >= 0 && fstat(sub, &st) == 0 && st.st_dev == v->dir_dev && st.st_ino == v->dir_ino) {
                for (size_t i = 0; i < v->n; i++) {
                        const struct glove_services_config_endpoint *e =
                                glove_services_config_endpoint(sv->cfg, v->idx[i]);
                        (void)unlinkat(sub, e->alias, 0);
                }
                (void)unlinkat(d, v->dir_name, AT_REMOVEDIR);
        }
        v->dir[0] = '\0';
}

static int env_add(char ***envp, size_t *n, const char *name, const char *value) {
        char **grown = realloc(*envp, (*n + 2) * sizeof(**envp));
        if (!grown)
                return -ENOMEM;
        *envp = grown;
        if (asprintf(&grown[*n], "%s=%s", name, value) < 0)
                return -ENOMEM;
        grown[++*n] = NULL;
        return 0;
}

static json_t *identity_json(const struct glove_services_identity *id) {
        json_t *o = NULL;
        return glove_services_identity_json(id, &o, NULL) < 0 ? NULL : o;
}

static json_t *socket_identity(int fd) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return NULL;
        return json_pack("{s:I,s:I}", "dev", (json_int_t)st.st_dev, "ino", (json_int_t)st.st_ino);
}

/* The pathname transport: services/STEM (0700) with one 0600 listening
 * socket per alias. */
static int make_dir(struct rt_session *s, struct rt_svc *v, struct glove_error *err) {
        struct glove_runtime_services *sv = s->rt->o.services;
        _cleanup_close_ int d = -1;
        int r = registry_dir(sv, "services", &d, err);
        if (r < 0)
                return r;
        snprintf(v->dir_name, sizeof(v->dir_name), "%s", s->stem);
        (void)unlinkat(d, v->dir_name, AT_REMOVEDIR); /* an earlier start's, empty */
        if (mkdirat(d, v->dir_name, 0700) < 0)
                return glove_error_set(err, errno, "services.state_dir", "%s/services/%s: %s", sv->mroot, v->dir_name,
                                       strerror(errno));
        _cleanup_close_ int sub = openat(d, v->dir_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (sub < 0 || fstat(sub, &st) < 0)
                return glove_error_set(err, errno, "services.state_dir", "%s/services/%s: %s", sv->mroot, v->dir_name,
                                       strerror(errno));
        v->dir_dev = st.st_dev;
        v->dir_ino = st.st_ino;
        snprintf(v->dir, sizeof(v->dir), "%s/services/%s", sv->mroot, v->dir_name);
        for (size_t i = 0; i < v->n; i++) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, v->idx[i]);
                r = glove_services_pathname_listen(sub, e->alias, &v->fds[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_mounts(struct glove_mount_plan *plan, void *ctx, struct glove_error *err) {
        struct rt_svc *v = ctx;
        int r = glove_supervisor_launch_add_mounts(plan, v->launch, err);
        if (r == 0 && v->dir[0])
                r = glove_mount_plan_add_pinned_bind(plan, GLOVE_RUNTIME_SERVICES_GUEST_DIR, v->dir, v->dir_dev,
                                                     v->dir_ino, true, true, "local services", err);
        return r;
}

static int keeper_json(struct rt_session *s, struct rt_svc *v, struct glove_error *err) {
        struct glove_runtime_services *sv = s->rt->o.services;
        _cleanup_json_ json_t *routes = json_array();
        for (size_t i = 0; routes && i < v->n; i++) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, v->idx[i]);
                json_t *o = json_object();
                json_object_set_new(o, "alias", json_string(e->alias));
                json_object_set_new(o, "socket_path", json_string(e->socket_path));
                json_object_set_new(o, "parent", identity_json(glove_services_endpoint_parent_identity(sv->eps[v->idx[i]])));
                json_object_set_new(o, "socket", identity_json(glove_services_endpoint_socket_identity(sv->eps[v->idx[i]])));
                json_array_append_new(routes, o);
        }
        _cleanup_json_ json_t *k = json_pack("{s:s,s:s,s:I,s:I,s:O}", "session_id", s->id, "transport",
                                             v->inherited ? GLOVE_SAGE_TRANSPORT_ID : "pathname", "service_uid",
                                             (json_int_t)sv->uid, "exchange_timeout_ms",
                                             (json_int_t)GLOVE_RUNTIME_SERVICES_EXCHANGE_MS, "routes", routes);
        struct glove_supervisor_limits pl;
        glove_supervisor_launch_limits(s->launch, &pl);
        if (k && json_object_set_new(k, "audit_max_bytes", json_integer((json_int_t)pl.disk_bytes)) < 0)
                k = (json_decref(k), NULL);
        if (!k || !(v->keeper_json = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS)))
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        return 0;
}

/* The binding's "local_services" member (docs/local-services.md, "What the
 * binding commits"). */
static int binding_member(struct rt_session *s, struct rt_svc *v, struct glove_error *err) {
        struct glove_runtime_services *sv = s->rt->o.services;
        _cleanup_json_ json_t *ups = json_array();
        for (size_t i = 0; ups && i < v->n; i++) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, v->idx[i]);
                json_t *o = json_object();
                json_object_set_new(o, "alias", json_string(e->alias));
                json_object_set_new(o, "parent", identity_json(glove_services_endpoint_parent_identity(sv->eps[v->idx[i]])));
                json_object_set_new(o, "socket", identity_json(glove_services_endpoint_socket_identity(sv->eps[v->idx[i]])));
                json_object_set_new(o, "guest_channel", e->has_guest_channel ? json_string(e->guest_channel) : json_null());
                json_array_append_new(ups, o);
        }
        _cleanup_json_ json_t *m = json_pack("{s:s,s:O,s:s,s:I}", "transport",
                                             v->inherited ? GLOVE_SAGE_TRANSPORT_ID : "pathname", "upstreams", ups,
                                             "manifest_digest", sv->manifest_digest, "factory_generation",
                                             (json_int_t)sv->generation);
        if (!m)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        if (v->inherited) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, v->idx[0]);
                json_object_set_new(m, "descriptors", json_pack("{s:i}", e->alias, 3));
                json_object_set_new(m, "guest_socket", socket_identity(v->guest_fd));
                json_object_set_new(m, "supervisor_socket", socket_identity(v->fds[0]));
                json_object_set_new(m, "registry_catalog", json_string(sv->catalog_digest));
        } else {
                json_object_set_new(m, "directory", json_pack("{s:I,s:I}", "dev", (json_int_t)v->dir_dev, "ino",
                                                              (json_int_t)v->dir_ino));
        }
        if (json_object_set(s->binding, "local_services", m) < 0)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        return 0;
}

int rt_svc_prepare(struct rt_session *s, struct glove_error *err) {
        struct glove_runtime_services *sv = s->rt->o.services;
        char *const *envp = glove_supervisor_launch_envp(s->launch);
        /* Operator-set reserved variables fail closed, services or not. */
        for (size_t i = 0; envp && envp[i]; i++)
                if (strncmp(envp[i], GLOVE_RUNTIME_SERVICES_ENV_PREFIX, strlen(GLOVE_RUNTIME_SERVICES_ENV_PREFIX)) == 0)
                        return glove_error_set(err, EPERM, "services.reserved_environment",
                                               "the template sets %.*s: GLOVE_LOCAL_SERVICE_* variables are Glove's",
                                               (int)strcspn(envp[i], "="), envp[i]);
        const char *runtime_id = glove_supervisor_launch_runtime_id(s->launch);
        if (!sv || !runtime_id)
                return 0;
        struct rt_svc *v = calloc(1, sizeof(*v));
        if (!v)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        v->guest_fd = -1;
        for (size_t i = 0; i < MAX_ENDPOINTS; i++)
                v->fds[i] = -1;
        v->launch = s->launch;
        s->svc = v;
        size_t n_bound = 0;
        for (size_t i = 0; i < sv->n; i++)
                if (glove_services_config_allows(sv->cfg, i, runtime_id)) {
                        v->idx[v->n++] = i;
                        n_bound += sv->bound[i];
                }
        if (!v->n)
                return 0;
        if (n_bound && (n_bound != 1 || v->n != 1))
                return glove_error_set(err, EPERM, "services.mixed_transport",
                                       "runtime %s is allowed %zu local services of which %zu are adapter-bound: an "
                                       "inherited stream is one adapter-bound alias and nothing else",
                                       runtime_id, v->n, n_bound);
        v->inherited = n_bound == 1;
        /* Every endpoint as pinned at start (drift refuses the start). */
        for (size_t i = 0; i < v->n; i++) {
                int r = glove_services_endpoint_check(sv->eps[v->idx[i]], err);
                if (r < 0)
                        return r;
        }
        int r = 0;
        size_t n = 0;
        for (size_t i = 0; envp && envp[i]; i++)
                n++;
        v->envp = calloc(n + 1, sizeof(*v->envp));
        for (size_t i = 0; v->envp && i < n; i++)
                if (!(v->envp[i] = strdup(envp[i])))
                        r = -ENOMEM;
        if (!v->envp || r < 0)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        if (v->inherited) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(sv->cfg, v->idx[0]);
                r = glove_services_inherited_pair(&v->fds[0], &v->guest_fd, err);
                if (r < 0)
                        return r;
                char map[96];
                snprintf(map, sizeof(map), "{\"%s\":3}", e->alias);
                if (env_add(&v->envp, &n, GLOVE_RUNTIME_SERVICES_ENV_FDS, map) < 0 ||
                    env_add(&v->envp, &n, GLOVE_SAGE_SELECTOR_ENV, e->alias) < 0)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                _cleanup_close_ int d = -1;
                r = registry_dir(sv, "channels", &d, err);
                char name[64];
                snprintf(name, sizeof(name), "%s.channel", s->stem);
                if (r == 0)
                        r = glove_channel_registry_open(d, name, s->id, runtime_id, sv->host,
                                                        GLOVE_RUNTIME_SERVICES_REGISTRY_CAPACITY, &v->reg, err);
        } else {
                /* The pathname transport lets the agent connect: nothing
                 * mounted into the host view since start may show an
                 * endpoint. */
                r = host_view_check(sv, err);
                if (r == 0)
                        r = make_dir(s, v, err);
                if (r == 0 && env_add(&v->envp, &n, GLOVE_RUNTIME_SERVICES_ENV_DIR, GLOVE_RUNTIME_SERVICES_GUEST_DIR) < 0)
                        r = glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
        if (r == 0)
                r = keeper_json(s, v, err);
        if (r == 0)
                r = binding_member(s, v, err);
        return r;
}

bool rt_svc_active(const struct rt_session *s) {
        return s->svc && s->svc->n;
}

void rt_svc_desc(struct rt_session *s, struct glove_session_desc *d) {
        struct rt_svc *v = s->svc;
        if (!v || !v->n)
                return;
        d->envp = v->envp;
        d->add_mounts = add_mounts;
        d->add_mounts_ctx = v;
        if (v->inherited) {
                d->seccomp = &glove_seccomp_prebuilt_managed_inherited;
                d->seccomp_egress = &glove_seccomp_prebuilt_managed_inherited;
                d->has_inherit_fd = true;
                d->inherit_fd = v->guest_fd;
        } else {
                d->seccomp = &glove_seccomp_prebuilt_managed_unix;
        }
}

void rt_svc_keeper_args(struct rt_session *s, struct glove_keeper_args *a) {
        struct rt_svc *v = s->svc;
        if (!v || !v->n)
                return;
        a->services_json = v->keeper_json;
        a->service_fds = v->fds;
        a->n_service_fds = v->inherited ? 1 : v->n;
}

void rt_svc_spawned(struct rt_session *s) {
        struct rt_svc *v = s->svc;
        if (!v)
                return;
        if (v->guest_fd >= 0)
                close(v->guest_fd);
        v->guest_fd = -1;
        for (size_t i = 0; i < MAX_ENDPOINTS; i++)
                if (v->fds[i] >= 0) {
                        close(v->fds[i]);
                        v->fds[i] = -1;
                }
}

void rt_svc_keeper_known(struct rt_session *s) {
        struct rt_svc *v = s->svc;
        struct glove_runtime_services *sv = s->rt->o.services;
        if (!v || !v->reg || !sv || s->keeper_pid <= 0)
                return;
        pthread_mutex_lock(&sv->lock);
        bool have = false;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(sv->peers) && !have; i++)
                have = sv->peers[i].reg == v->reg;
        /* A pid is one live keeper's: an entry of an ended session with the
         * same pid (reused) never answers for this one. */
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(sv->peers) && !have; i++)
                if (sv->peers[i].reg && sv->peers[i].pid == s->keeper_pid)
                        sv->peers[i].gone = true;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(sv->peers) && !have; i++)
                if (!sv->peers[i].reg) {
                        sv->peers[i] = (struct peer){ .pid = s->keeper_pid, .reg = v->reg };
                        have = true;
                }
        pthread_mutex_unlock(&sv->lock);
}

/* The owner's page of a session's admission queue (guest_queue): the live
 * registry, or the session's file opened for this call. */
int rt_svc_queue_page(struct glove_runtime *rt, struct rt_session *s, const char *id, const char *stem,
                      const char *runtime_id, uint64_t after, uint32_t limit, json_t **out, struct glove_error *err) {
        struct glove_runtime_services *sv = rt->o.services;
        if (!sv || !sv->host)
                return glove_error_set(err, ENOENT, "channel.unavailable",
                                       "gloved has no adapter-bound local service: no guest channel");
        if (s && s->svc && s->svc->reg)
                return glove_channel_registry_page(s->svc->reg, after, limit, out, err);
        _cleanup_close_ int d = openat(sv->mroot_fd, "channels", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char name[64];
        snprintf(name, sizeof(name), "%s.channel", stem);
        if (d < 0 || faccessat(d, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return glove_error_set(err, ENOENT, "channel.no_queue", "session %s has no guest channel queue", id);
        struct glove_channel_registry *reg = NULL;
        int r = glove_channel_registry_open(d, name, id, runtime_id ? runtime_id : "", sv->host,
                                            GLOVE_RUNTIME_SERVICES_REGISTRY_CAPACITY, &reg, err);
        if (r == 0)
                r = glove_channel_registry_page(reg, after, limit, out, err);
        glove_channel_registry_free(reg);
        return r;
}

void rt_svc_cleanup(struct glove_runtime *rt, const char *id) {
        struct glove_runtime_services *sv = rt->o.services;
        if (!sv)
                return;
        struct rt_session *s = rt_find(rt, id);
        if (s && s->svc && s->svc->reg) {
                svc_unbind(sv, s->svc->reg);
                glove_channel_registry_free(s->svc->reg);
                s->svc->reg = NULL;
        }
        char stem[40], name[64];
        rt_keeper_stem(id, stem);
        snprintf(name, sizeof(name), "%s.channel", stem);
        _cleanup_close_ int d = openat(sv->mroot_fd, "channels", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d >= 0) {
                (void)unlinkat(d, name, 0);
                snprintf(name, sizeof(name), "%s.channel.seal", stem);
                (void)unlinkat(d, name, 0);
        }
}

/* SPDX-License-Identifier: Apache-2.0 */
/* gloved's own place in a delegated cgroup v2 tree: the decision between the
 * systemd >= 254 layout (gloved already in glove-host), the systemd 252
 * fallback (gloved makes glove-host in its delegated cgroup and moves
 * itself) and "not applicable", its steps, and the pinned descriptors
 * (include/glove/container/cgroup.h, glove_cgroup_host_setup). Everything is
 * reached through directory descriptors, so the unit test runs it on a fake
 * tree of plain files. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"

/* The controllers gloved enables on the empty delegated parent, in the
 * order the spec names them. */
#define HOST_CONTROLLERS "+cpu +memory +pids"

/* What one cgroup directory looks like to the uid. */
struct node {
        bool owned;        /* st_uid is the uid */
        bool writable;     /* the directory, cgroup.procs and cgroup.subtree_control */
        bool offers;       /* memory, pids and cpu in cgroup.controllers */
        bool hands_down;   /* ... and in cgroup.subtree_control */
        bool domain;       /* cgroup.type is "domain" */
        size_t nprocs;     /* lines of cgroup.procs */
        pid_t first_other; /* the first pid listed that is not env->pid, 0 none */
        bool self_listed;  /* env->pid is listed */
        uid_t uid;         /* its owner */
};

static bool can_write(int dirfd, const char *name) {
        return faccessat(dirfd, name, W_OK, AT_EACCESS) == 0;
}

static const char *wanted(const struct cg_host_env *env) {
        return env->controllers ? env->controllers : HOST_CONTROLLERS;
}

/* True when list holds every controller of want ("+cpu +memory +pids"). */
static bool has_all(const char *list, const char *want) {
        for (const char *p = want; *p;) {
                while (*p == ' ' || *p == '+')
                        p++;
                const char *e = strchrnul(p, ' ');
                char word[32];
                size_t n = (size_t)(e - p);
                if (n == 0)
                        break;
                if (n >= sizeof(word))
                        return false;
                memcpy(word, p, n);
                word[n] = '\0';
                if (!cg_words_contain(list, word, ' '))
                        return false;
                p = e;
        }
        return true;
}

/* Reads what struct node holds. Returns 0, or -errno when the directory or
 * one of its lists cannot be read. */
static int inspect(int fd, const struct cg_host_env *env, struct node *n) {
        memset(n, 0, sizeof(*n));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        n->uid = st.st_uid;
        n->owned = st.st_uid == env->uid;
        n->writable = can_write(fd, ".") && can_write(fd, "cgroup.procs") && can_write(fd, "cgroup.subtree_control");
        char avail[1024], subtree[1024], type[64];
        ssize_t r = cg_file_read(fd, "cgroup.controllers", avail, sizeof(avail));
        if (r < 0)
                return (int)r;
        r = cg_file_read(fd, "cgroup.subtree_control", subtree, sizeof(subtree));
        if (r < 0)
                return (int)r;
        n->offers = has_all(avail, wanted(env));
        /* Nothing wanted (tests): nothing is handed down yet either. */
        n->hands_down = wanted(env)[0] && has_all(subtree, wanted(env));
        /* The root cgroup has no cgroup.type: never a delegated node. */
        n->domain = cg_file_read(fd, "cgroup.type", type, sizeof(type)) >= 0 && strcmp(type, "domain\n") == 0;
        _cleanup_free_ pid_t *pids = NULL;
        int pr = cg_file_read_pids(fd, &pids, &n->nprocs);
        if (pr < 0)
                return pr;
        for (size_t i = 0; i < n->nprocs; i++) {
                if (pids[i] == env->pid)
                        n->self_listed = true;
                else if (!n->first_other)
                        n->first_other = pids[i] > 0 ? pids[i] : -1;
        }
        return 0;
}

static bool delegated(const struct node *n) {
        return n->owned && n->writable && n->offers && n->domain;
}

/* Why a node is not delegated, for messages. */
static void not_delegated_why(const struct node *n, char *buf, size_t size) {
        snprintf(buf, size, "%s%s%s%s", n->owned ? "" : "not owned by the uid; ",
                 n->writable ? "" : "its directory, cgroup.procs or cgroup.subtree_control is not writable; ",
                 n->offers ? "" : "memory, pids and cpu are not all in its cgroup.controllers; ",
                 n->domain ? "" : "its cgroup.type is not domain; ");
        size_t len = strlen(buf);
        if (len >= 2)
                buf[len - 2] = '\0';
}

static void host_free_fds(struct glove_cgroup_host *h) {
        glove_closep(&h->root_fd);
        glove_closep(&h->self_fd);
        glove_closep(&h->parent_fd);
}

void glove_cgroup_host_free(struct glove_cgroup_host *h) {
        if (!h)
                return;
        host_free_fds(h);
        free(h);
}

static int identity(int fd, uint64_t *dev, uint64_t *ino) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        *dev = (uint64_t)st.st_dev;
        *ino = (uint64_t)st.st_ino;
        return 0;
}

/* Display only: a path too long is cut. */
static void display(char out[PATH_MAX], const char *root, const char *rel) {
        size_t n = (size_t)snprintf(out, PATH_MAX, "%s", root);
        if (rel[0] && n + 1 < PATH_MAX)
                (void)snprintf(out + n, PATH_MAX - n, "/%s", rel);
}

/* Creates C/glove-host (or takes the one there, which must be a directory
 * owned by the uid), moves env->pid into it and checks that C is empty.
 * *sub_fd: the subgroup, O_RDONLY|O_DIRECTORY. */
static int move_into_subgroup(int cfd, const char *cpath, const struct cg_host_env *env, int *sub_fd,
                              struct glove_error *err) {
        bool made = mkdirat(cfd, GLOVE_CGROUP_HOST_SUBGROUP, 0755) == 0;
        if (!made && errno != EEXIST)
                return glove_error_set(err, errno, "cgroup.host_move", "cannot create %s/" GLOVE_CGROUP_HOST_SUBGROUP ": %s",
                                       cpath, strerror(errno));
        _cleanup_close_ int sfd = openat(cfd, GLOVE_CGROUP_HOST_SUBGROUP, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (sfd < 0 || fstat(sfd, &st) < 0)
                return glove_error_set(err, errno, "cgroup.host_move", "cannot open %s/" GLOVE_CGROUP_HOST_SUBGROUP ": %s",
                                       cpath, strerror(errno));
        if (st.st_uid != env->uid)
                return glove_error_set(err, EPERM, "cgroup.host_move",
                                       "%s/" GLOVE_CGROUP_HOST_SUBGROUP " is owned by uid %u, not %u", cpath,
                                       (unsigned)st.st_uid, (unsigned)env->uid);
        if (made && env->after_mkdir)
                env->after_mkdir(sfd, env->ctx);
        char pid[24];
        snprintf(pid, sizeof(pid), "%d\n", (int)env->pid);
        int r = cg_file_write(sfd, "cgroup.procs", pid);
        if (r < 0)
                return glove_error_set(err, -r, "cgroup.host_move",
                                       "cannot move process %d into %s/" GLOVE_CGROUP_HOST_SUBGROUP "/cgroup.procs: %s",
                                       (int)env->pid, cpath, strerror(-r));
        if (env->after_move)
                env->after_move(cfd, sfd, env->ctx);
        _cleanup_free_ pid_t *left = NULL;
        size_t n = 0;
        r = cg_file_read_pids(cfd, &left, &n);
        if (r < 0)
                return glove_error_set(err, -r, "cgroup.host_move", "cannot read %s/cgroup.procs: %s", cpath,
                                       strerror(-r));
        if (n > 0)
                return glove_error_set(err, EBUSY, "cgroup.host_move",
                                       "%s still lists %zu process%s (first %d) after gloved moved into "
                                       GLOVE_CGROUP_HOST_SUBGROUP,
                                       cpath, n, n == 1 ? "" : "es", (int)left[0]);
        *sub_fd = TAKE_FD(sfd);
        return 0;
}

static int enable(int pfd, const char *ppath, const struct cg_host_env *env, struct glove_error *err) {
        const char *words = wanted(env);
        if (!words[0])
                return 0;
        int r = cg_file_write(pfd, "cgroup.subtree_control", words);
        if (r < 0)
                return glove_error_set(err, -r, "cgroup.host_move", "cannot write \"%s\" to %s/cgroup.subtree_control: %s",
                                       words, ppath, strerror(-r));
        return 0;
}

int cg_host_setup_at(int root_fd_in, const char *rel_in, const char *display_root, const struct cg_host_env *env,
                     struct glove_cgroup_host **out, struct glove_error *err) {
        *out = NULL;
        _cleanup_close_ int root_fd = root_fd_in;
        char rel[PATH_MAX];
        while (*rel_in == '/')
                rel_in++;
        if (snprintf(rel, sizeof(rel), "%s", rel_in) >= (int)sizeof(rel))
                return 0;
        size_t len = strlen(rel);
        while (len > 0 && rel[len - 1] == '/')
                rel[--len] = '\0';
        if (!rel[0])
                return 0; /* the root cgroup: the probe's "under" */
        if (len + sizeof("/" GLOVE_CGROUP_HOST_SUBGROUP) > sizeof(rel))
                return 0; /* no room for glove-host below: the probe reports what it finds */
        char prel[PATH_MAX];
        memcpy(prel, rel, len + 1);
        char *slash = strrchr(prel, '/');
        const char *base = slash ? slash + 1 : rel;
        if (slash)
                *slash = '\0';
        else
                prel[0] = '\0';
        _cleanup_close_ int cfd = -1, pfd = -1;
        if (glove_fd_open_beneath(root_fd, rel, O_RDONLY | O_DIRECTORY, &cfd, NULL) < 0)
                return 0; /* the probe reports it */
        if (prel[0] ? glove_fd_open_beneath(root_fd, prel, O_RDONLY | O_DIRECTORY, &pfd, NULL) < 0
                    : (pfd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return 0;
        char cpath[PATH_MAX], ppath[PATH_MAX];
        display(cpath, display_root, rel);
        display(ppath, display_root, prel);
        struct node c, p;
        if (inspect(cfd, env, &c) < 0 || inspect(pfd, env, &p) < 0)
                return 0; /* not a cgroup v2 node with the lists: not ours to judge */

        struct glove_cgroup_host *h = calloc(1, sizeof(*h));
        if (!h)
                return glove_error_set(err, ENOMEM, "cgroup.host_move", "out of memory");
        h->root_fd = h->self_fd = h->parent_fd = -1;
        char why[512];
        int r = 0;
        if (strcmp(base, GLOVE_CGROUP_HOST_SUBGROUP) == 0) {
                /* systemd >= 254: DelegateSubgroup=glove-host put gloved here. */
                if (!delegated(&p)) {
                        not_delegated_why(&p, why, sizeof(why));
                        r = glove_error_set(err, EACCES, "cgroup.parent_not_owned",
                                            "gloved runs in %s, but its parent %s is not a cgroup delegated to uid %u "
                                            "(owner %u): %s",
                                            cpath, ppath, (unsigned)env->uid, (unsigned)p.uid, why);
                } else if (p.nprocs > 0) {
                        r = glove_error_set(err, EBUSY, "cgroup.delegated_shared",
                                            "the delegated cgroup %s holds %zu process%s of its own (first %d): the "
                                            "controllers can be enabled only on an empty delegated parent",
                                            ppath, p.nprocs, p.nprocs == 1 ? "" : "es", (int)p.first_other);
                } else if (!p.hands_down) {
                        r = enable(pfd, ppath, env, err);
                }
                if (r == 0) {
                        h->placement = GLOVE_CGROUP_PLACEMENT_DELEGATED_SUBGROUP;
                        h->self_fd = TAKE_FD(cfd);
                        snprintf(h->self_rel, sizeof(h->self_rel), "%s", rel);
                }
        } else if (delegated(&c) && !c.hands_down) {
                /* systemd 252: gloved runs in the delegated unit cgroup itself. */
                if (c.nprocs == 1 && c.self_listed) {
                        int sfd = -1;
                        r = move_into_subgroup(cfd, cpath, env, &sfd, err);
                        if (r == 0)
                                h->self_fd = sfd;
                        if (r == 0)
                                r = enable(cfd, cpath, env, err);
                        if (r == 0) {
                                h->placement = GLOVE_CGROUP_PLACEMENT_DELEGATED_MOVED;
                                memcpy(h->self_rel, rel, len);
                                memcpy(h->self_rel + len, "/" GLOVE_CGROUP_HOST_SUBGROUP,
                                       sizeof("/" GLOVE_CGROUP_HOST_SUBGROUP));
                                /* The delegated cgroup is now the parent. */
                                glove_closep(&pfd);
                                pfd = TAKE_FD(cfd);
                                snprintf(prel, sizeof(prel), "%s", rel);
                                snprintf(ppath, sizeof(ppath), "%s", cpath);
                        }
                } else if (p.owned && can_write(pfd, ".") && can_write(pfd, "cgroup.procs")) {
                        /* The parent is writable: run cgroups go beside C as
                         * for any caller (the probe decides). */
                        glove_cgroup_host_free(h);
                        return 0;
                } else {
                        r = glove_error_set(err, EBUSY, "cgroup.delegated_shared",
                                            "gloved runs in the delegated cgroup %s, which also holds %zu other "
                                            "process%s (first %d), and its parent %s is not delegated: gloved can "
                                            "neither put run cgroups beside it nor move itself into %s/"
                                            GLOVE_CGROUP_HOST_SUBGROUP " and leave an empty parent",
                                            cpath, c.nprocs - (c.self_listed ? 1 : 0),
                                            c.nprocs - (c.self_listed ? 1 : 0) == 1 ? "" : "es", (int)c.first_other,
                                            ppath, cpath);
                }
        } else {
                glove_cgroup_host_free(h);
                return 0;
        }
        if (r == 0 && ((r = identity(h->self_fd, &h->self_dev, &h->self_ino)) < 0 ||
                       (r = identity(pfd, &h->parent_dev, &h->parent_ino)) < 0))
                glove_error_set(err, -r, "cgroup.host_move", "cannot stat the pinned cgroups: %s", strerror(-r));
        if (r < 0) {
                glove_cgroup_host_free(h);
                return r;
        }
        h->parent_fd = TAKE_FD(pfd);
        h->root_fd = TAKE_FD(root_fd);
        snprintf(h->parent_rel, sizeof(h->parent_rel), "%s", prel);
        display(h->self_path, display_root, h->self_rel);
        snprintf(h->parent_path, sizeof(h->parent_path), "%s", ppath);
        *out = h;
        return 0;
}

int glove_cgroup_host_setup(struct glove_cgroup_host **out, struct glove_error *err) {
        *out = NULL;
        int root_fd = -1;
        char rel[PATH_MAX], mount_point[PATH_MAX];
        int r = cg_v2_self(&root_fd, rel, mount_point, err);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        struct cg_host_env env = {.uid = geteuid(), .pid = getpid()};
        return cg_host_setup_at(root_fd, rel, mount_point, &env, out, err);
}

/* Whether rel beneath h's root is still the directory of identity dev/ino. */
static int same(const struct glove_cgroup_host *h, const char *rel, uint64_t dev, uint64_t ino, const char *path,
                struct glove_error *err) {
        _cleanup_close_ int fd = -1;
        int r = rel[0] ? glove_fd_open_beneath(h->root_fd, rel, O_PATH | O_DIRECTORY, &fd, NULL)
                       : ((fd = openat(h->root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ? -errno : 0);
        uint64_t d = 0, i = 0;
        if (r == 0)
                r = identity(fd, &d, &i);
        if (r < 0)
                return glove_error_set(err, ESTALE, "cgroup.parent_replaced",
                                       "the pinned cgroup %s is gone (%s): it was removed or replaced", path,
                                       strerror(-r));
        if (d != dev || i != ino)
                return glove_error_set(err, ESTALE, "cgroup.parent_replaced",
                                       "%s was replaced (device %" PRIu64 " inode %" PRIu64 ", pinned device %" PRIu64
                                       " inode %" PRIu64 ")",
                                       path, d, i, dev, ino);
        return 0;
}

int glove_cgroup_host_check(const struct glove_cgroup_host *h, struct glove_error *err) {
        if (!h)
                return 0;
        int r = same(h, h->parent_rel, h->parent_dev, h->parent_ino, h->parent_path, err);
        if (r == 0)
                r = same(h, h->self_rel, h->self_dev, h->self_ino, h->self_path, err);
        return r;
}

enum glove_cgroup_placement glove_cgroup_host_placement(const struct glove_cgroup_host *h) {
        return h ? h->placement : GLOVE_CGROUP_PLACEMENT_NONE;
}

void glove_cgroup_host_pin(const struct glove_cgroup_host *h, struct glove_cgroup_pin *out) {
        *out = h ? (struct glove_cgroup_pin){.set = true, .dev = h->parent_dev, .ino = h->parent_ino}
                 : (struct glove_cgroup_pin){.set = false};
}

const char *glove_cgroup_host_parent_path(const struct glove_cgroup_host *h) {
        return h ? h->parent_path : "";
}

const char *glove_cgroup_host_self_path(const struct glove_cgroup_host *h) {
        return h ? h->self_path : "";
}

const char *glove_cgroup_placement_name(enum glove_cgroup_placement p) {
        switch (p) {
        case GLOVE_CGROUP_PLACEMENT_NONE:
                return "none";
        case GLOVE_CGROUP_PLACEMENT_UNDER:
                return "under";
        case GLOVE_CGROUP_PLACEMENT_BESIDE:
                return "beside";
        case GLOVE_CGROUP_PLACEMENT_V1:
                return "v1";
        case GLOVE_CGROUP_PLACEMENT_DELEGATED_SUBGROUP:
                return "delegated_subgroup";
        case GLOVE_CGROUP_PLACEMENT_DELEGATED_MOVED:
                return "delegated_moved";
        }
        return NULL;
}

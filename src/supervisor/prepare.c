/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Managed-session launch preparation (include/glove/supervisor/prepare.h;
 * docs/session-policy.md, "Resolution and retained images"). The decoded
 * path grant and the exposure sources are in prepare_grant.c, the launch
 * binding in prepare_binding.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/container/grant.h"
#include "glove/container/mount_plan.h"
#include "glove/net/rule.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/lease.h"
#include "glove/supervisor/prepare.h"
#include "image.h"
#include "internal.h"
#include "prepare_internal.h"

/* ---- resolution ---- */

static const char *const restricted_roots[] = { "/dev", "/proc", "/run", "/sys" };

/* The same directories by region (glove/container/grant.h, guards): p, or
 * a mount beneath it, reaching one of them under another name (a bind
 * mount of the state directory elsewhere) is refused too. */
static int check_restricted_regions(const struct glove_supervisor_runtime_config *cfg, const char *what,
                                    const char *p, struct glove_error *err) {
        _cleanup_(glove_grant_guards_free) struct glove_grant_guards guards = { .code = "materialize.restricted" };
        int r = 0;
        for (size_t i = 0; r >= 0 && cfg->restricted && i < GLOVE_SUPERVISOR_RESTRICTED_MAX && cfg->restricted[i]; i++)
                r = glove_grant_guards_add(&guards, cfg->restricted[i], "a directory holding gloved's own state", err);
        if (r >= 0 && cfg->materialization_root)
                r = glove_grant_guards_add(&guards, cfg->materialization_root, "the materialization root", err);
        if (r >= 0)
                r = glove_grant_guards_check(&guards, p, err);
        if (r < 0)
                glove_error_prefix(err, "%s", what);
        return r;
}

int sv_check_restricted(const struct glove_supervisor_runtime_config *cfg, const char *what, const char *p,
                        struct glove_error *err) {
        if (strcmp(p, "/") == 0)
                return glove_error_set(err, EPERM, "materialize.restricted", "%s: / would expose the whole host", what);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(restricted_roots); i++)
                if (sv_paths_overlap(p, restricted_roots[i]))
                        return glove_error_set(err, EPERM, "materialize.restricted", "%s: %s overlaps %s", what, p,
                                               restricted_roots[i]);
        for (size_t i = 0; cfg->restricted && i < GLOVE_SUPERVISOR_RESTRICTED_MAX && cfg->restricted[i]; i++)
                if (sv_paths_overlap(p, cfg->restricted[i]))
                        return glove_error_set(err, EPERM, "materialize.restricted",
                                               "%s: %s overlaps %s, which holds gloved's own state", what, p,
                                               cfg->restricted[i]);
        if (cfg->materialization_root && sv_paths_overlap(p, cfg->materialization_root))
                return glove_error_set(err, EPERM, "materialize.restricted",
                                       "%s: %s overlaps the materialization root", what, p);
        return check_restricted_regions(cfg, what, p, err);
}

/* Resolves host path p for what (an alias or "launch path") into m. */
int sv_launch_resolve(const struct glove_supervisor_runtime_config *cfg, const char *what, const char *p,
                   struct sv_mount *m, struct glove_error *err) {
        int r = sv_check_restricted(cfg, what, p, err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = -1;
        r = glove_fd_open_nofollow(p, O_PATH, &fd, NULL);
        if (r == -ELOOP)
                return glove_error_set(err, ELOOP, "materialize.symlink",
                                       "%s: a component of %s is a symbolic link (links are never followed)", what, p);
        if (r == -ENOENT || r == -ENOTDIR)
                return glove_error_set(err, ENOENT, "materialize.missing", "%s: %s does not exist", what, p);
        if (r < 0)
                return glove_error_set(err, -r, "materialize.resolve", "%s: %s: %s", what, p, strerror(-r));
        struct statx stx;
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_INO | STATX_MNT_ID, &stx) < 0)
                return glove_error_set(err, errno, "materialize.resolve", "%s: %s: statx: %s", what, p, strerror(errno));
        if (!S_ISDIR(stx.stx_mode) && !S_ISREG(stx.stx_mode))
                return glove_error_set(err, EINVAL, "materialize.file_type",
                                       "%s: %s is neither a directory nor a regular file", what, p);
        m->source = strdup(p);
        if (!m->source)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        m->is_dir = S_ISDIR(stx.stx_mode);
        m->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        m->ino = stx.stx_ino;
        m->mnt_id = stx.stx_mnt_id;
        if (cfg->grant_check && (r = cfg->grant_check(cfg->grant_check_ctx, fd, what, err)) < 0)
                return r;
        m->fd = TAKE_FD(fd);
        return 0;
}

/* ---- the launch ---- */

static void mount_release(struct sv_mount *m) {
        if (m->img)
                (void)sv_image_release(m->img, NULL);
        if (m->fd >= 0) {
                close(m->fd);
                m->fd = -1;
        }
}

static void strv_free(char **v, size_t n) {
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
}

void glove_supervisor_launch_free(struct glove_supervisor_launch *l) {
        if (!l)
                return;
        (void)glove_supervisor_launch_release(l, NULL);
        for (size_t i = 0; i < l->n_mounts; i++) {
                free(l->mounts[i].target);
                free(l->mounts[i].source);
                free(l->mounts[i].name);
                free(l->mounts[i].img);
        }
        free(l->mounts);
        sv_launch_projections_free(l);
        sv_launch_leases_free(l);
        strv_free(l->argv, l->argc);
        strv_free(l->envp, l->envc);
        if (l->egress) {
                glove_net_policy_free(l->egress);
                free(l->egress);
        }
        free(l->session_id);
        free(l->egress_id);
        free(l->exe_path);
        free(l);
}

struct sv_mount *sv_launch_mount_new(struct glove_supervisor_launch *l, int kind, const char *target,
                                  struct glove_error *err) {
        if (l->n_mounts == l->cap_mounts) {
                size_t cap = l->cap_mounts ? l->cap_mounts * 2 : 8;
                struct sv_mount *n = realloc(l->mounts, cap * sizeof(*n));
                if (!n)
                        return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory"), NULL;
                l->mounts = n;
                l->cap_mounts = cap;
        }
        struct sv_mount *m = &l->mounts[l->n_mounts];
        *m = (struct sv_mount){ .kind = kind, .fd = -1, .target = strdup(target) };
        if (!m->target)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory"), NULL;
        l->n_mounts++;
        return m;
}

/* Undoes the last mount entry (a failed resolution). */
void sv_launch_mount_drop_last(struct glove_supervisor_launch *l) {
        struct sv_mount *m = &l->mounts[--l->n_mounts];
        mount_release(m);
        free(m->target);
        free(m->source);
        free(m->name);
        free(m->img);
}

int sv_strv_push(char ***v, size_t *n, const char *s) {
        char **nv = realloc(*v, (*n + 2) * sizeof(**v));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        nv[*n] = strdup(s);
        if (!nv[*n])
                return -ENOMEM;
        nv[++*n] = NULL;
        return 0;
}

static bool env_has(const struct glove_supervisor_launch_template *t, const char *name) {
        size_t n = strlen(name);
        for (size_t i = 0; i < t->n_environment; i++)
                if (strncmp(t->environment[i], name, n) == 0 && t->environment[i][n] == '=')
                        return true;
        return false;
}

static int launch_command(struct glove_supervisor_launch *l, const struct sv_template *t, struct glove_error *err) {
        const struct glove_supervisor_launch_template *lt = &t->launch;
        /* An adapter runtime's executable was resolved by sv_adapter_prepare
         * (discovered or pinned); any other runtime needs a pinned one. */
        const char *exe = l->exe_path ? l->exe_path : lt->executable_path;
        if (!t->has_launch || !exe || exe[0] != '/')
                return glove_error_set(err, EINVAL, "launch.template_not_launchable",
                                       "runtime template %s has no pinned executable (a launch with executable_path)",
                                       t->id);
        int r = sv_strv_push(&l->argv, &l->argc, exe);
        for (size_t i = 0; r >= 0 && i < lt->n_arguments; i++)
                r = sv_strv_push(&l->argv, &l->argc, lt->arguments[i]);
        for (size_t i = 0; r >= 0 && i < lt->n_environment; i++)
                r = sv_strv_push(&l->envp, &l->envc, lt->environment[i]);
        if (r >= 0 && l->adapter)
                r = sv_adapter_environment(l, err) < 0 ? -ENOMEM : 0;
        else if (r >= 0 && !env_has(lt, "HOME"))
                r = sv_strv_push(&l->envp, &l->envc, "HOME=" GLOVE_SUPERVISOR_AGENT_HOME);
        if (r >= 0 && !env_has(lt, "TERM"))
                r = sv_strv_push(&l->envp, &l->envc, "TERM=" GLOVE_SUPERVISOR_DEFAULT_TERM);
        if (r < 0)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        return 0;
}

static int launch_paths(struct glove_supervisor_launch *l, const struct sv_template *t, struct glove_error *err) {
        const struct glove_supervisor_launch_template *lt = &t->launch;
        for (size_t i = 0; i < lt->n_read_only_paths; i++) {
                struct sv_mount *m = sv_launch_mount_new(l, MK_RO_PATH, lt->read_only_paths[i], err);
                if (!m)
                        return -ENOMEM;
                m->read_only = true;
                int r = sv_launch_resolve(l->cfg, "read_only_paths", lt->read_only_paths[i], m, err);
                if (r < 0) {
                        sv_launch_mount_drop_last(l);
                        return r;
                }
        }
        const char *exe = lt->executable_path;
        if (l->adapter || glove_path_is_beneath(exe, "/usr"))
                return 0; /* an adapter's executable is bound by sv_adapter_prepare */
        for (size_t i = 0; i < lt->n_read_only_paths; i++)
                if (glove_path_is_beneath(exe, lt->read_only_paths[i]))
                        return 0;
        struct sv_mount *m = sv_launch_mount_new(l, MK_EXEC, exe, err);
        if (!m)
                return -ENOMEM;
        m->read_only = true;
        int r = sv_launch_resolve(l->cfg, "executable_path", exe, m, err);
        if (r < 0) {
                sv_launch_mount_drop_last(l);
                return r;
        }
        if (m->is_dir) {
                sv_launch_mount_drop_last(l);
                return glove_error_set(err, EINVAL, "materialize.file_type", "executable_path: %s is a directory", exe);
        }
        return 0;
}

static int launch_egress(struct glove_supervisor_launch *l, const char *id, struct glove_error *err) {
        const struct glove_supervisor_policy *p = l->cfg->policy;
        l->egress_id = strdup(id);
        if (!l->egress_id)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        for (size_t i = 0; i < p->n_egress; i++)
                if (strcmp(p->egress[i].id, id) == 0)
                        l->egress_policy = &p->egress[i];
        if (!l->egress_policy || l->egress_policy->n_targets == 0)
                return 0; /* offline */
        l->egress = calloc(1, sizeof(*l->egress));
        if (!l->egress)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        glove_net_policy_init(l->egress);
        for (size_t i = 0; i < l->egress_policy->n_targets; i++) {
                const struct sv_egress_target *tg = &l->egress_policy->targets[i];
                char text[GLOVE_NET_RULE_TEXT_MAX + 8];
                bool v6 = strchr(tg->host, ':') != NULL;
                snprintf(text, sizeof(text), v6 ? "[%s]:%lld" : "%s:%lld", tg->host, (long long)tg->port);
                struct glove_error e = { 0 };
                int r = glove_net_policy_add_rule(l->egress, text, tg->allow_private, &e);
                if (r < 0)
                        return glove_error_set(err, -r, "launch.invalid_plan", "egress policy %s: target %s: %s", id, text,
                                               e.message);
        }
        return 0;
}

static const struct sv_access_tuple *find_tuple(const struct sv_path_alias *al, int access, int materialization) {
        for (size_t i = 0; i < al->n_access; i++)
                if (al->access[i].access == access && al->access[i].materialization == materialization)
                        return &al->access[i];
        return NULL;
}

static int launch_grant(struct glove_supervisor_launch *l, const struct sv_grant *g, struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = l->cfg;
        const struct sv_path_alias *al = NULL;
        const struct sv_access_tuple *tu = NULL;
        if (g->alias) {
                al = sv_policy_alias(cfg->policy, g->alias);
                tu = al ? find_tuple(al, g->access, g->materialization) : NULL;
                if (!tu)
                        return sv_bad_plan(err, "a path grant names no access tuple of its alias");
        } else if (!cfg->exposures) {
                return glove_error_set(err, EOPNOTSUPP, "launch.exposures_unavailable",
                                       "%s: the plan names a path exposure and this gloved has no exposure registry "
                                       "(start it with --path-exposure-policy and --path-exposure-journal)",
                                       g->name);
        }
        int kind;
        switch (g->access) {
        case SV_ACCESS_READ: kind = MK_READ_BIND; break;
        case SV_ACCESS_EPHEMERAL_WRITE:
                if (g->materialization != SV_MAT_COPY)
                        return glove_error_set(err, EOPNOTSUPP, "launch.unsupported_materialization",
                                               "%s: ephemeral_write is materialized by copy only", g->name);
                kind = MK_EPHEMERAL;
                break;
        case SV_ACCESS_RETAINED_WRITE:
                if (!cfg->retained_available)
                        return glove_error_set(err, EOPNOTSUPP, "launch.retained_unavailable",
                                               "%s: retained_write needs the retained mechanism, which this gloved did "
                                               "not construct: %s",
                                               g->name,
                                               cfg->retained_why && cfg->retained_why->message[0]
                                                       ? cfg->retained_why->message
                                                       : "no retained_available");
                kind = MK_RETAINED;
                break;
        case SV_ACCESS_DIRECT_WRITE:
        default:
                return glove_error_set(err, EPERM, "launch.direct_write",
                                       "%s: direct_write is not supported by managed sessions", g->name);
        }
        /* An exposure: the live generation, opened and checked now (expiry
         * by gloved's clock); its descriptor is what is materialized. */
        struct glove_exposure_source src = { .fd = -1 };
        if (!al && !sv_sources_take(l->sources, g->exposure_id, g->generation, &src)) {
                if (l->sources)
                        return sv_bad_plan(err, "an exposure grant whose source was not opened ahead");
                int r = glove_exposures_open_source(cfg->exposures, g->exposure_id, g->generation, sv_cfg_now_ms(cfg),
                                                    &src, err);
                if (r < 0)
                        return r;
        }
        struct sv_mount *m = sv_launch_mount_new(l, kind, al ? al->target_path : src.target_path, err);
        if (!m) {
                glove_exposure_source_close(&src);
                return -ENOMEM;
        }
        if (al) {
                m->alias = al->alias;
        } else {
                m->exposure = true;
                m->name = strdup(g->exposure_id);
                m->alias = m->name;
                m->exposure_generation = src.generation;
                snprintf(m->scope_digest, sizeof(m->scope_digest), "%s", src.scope_digest);
                if (!m->name) {
                        glove_exposure_source_close(&src);
                        sv_launch_mount_drop_last(l);
                        return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
                }
        }
        m->read_only = kind == MK_READ_BIND;
        m->max_bytes = (uint64_t)g->max_bytes;
        int r = 0;
        _cleanup_close_ int stage_fd = -1; /* the retained stage's source, pinned */
        struct sv_stage_source stage_src = { .fd = -1 };
        if (!al && kind != MK_RETAINED) {
                r = sv_exposure_mount(cfg, m, &src, err);
        } else if (!al) {
                /* A retained image is a copy of the project (checked by
                 * open_source above, and vetted): its descriptor becomes
                 * the stage's source. */
                r = sv_exposure_mount(cfg, m, &src, err);
                if (r >= 0) {
                        stage_src.fd = TAKE_FD(m->fd);
                        free(m->source);
                        m->source = NULL;
                }
        } else if (kind == MK_RETAINED) {
                /* The stage's source: resolved, vetted and pinned as an
                 * ephemeral copy's; absent is an empty stage with
                 * empty_directory, materialize.missing otherwise. */
                struct glove_error why = { 0 };
                r = sv_launch_resolve(cfg, al->alias, al->host_path, m, &why);
                bool absent = r == -ENOENT && why.code && strcmp(why.code, "materialize.missing") == 0;
                if (absent && tu->create_policy == SV_CREATE_EMPTY_DIRECTORY)
                        r = 0;
                else if (r < 0 && err)
                        *err = why;
                if (r >= 0 && m->source && !m->is_dir)
                        r = glove_error_set(err, EINVAL, "materialize.file_type",
                                            "%s: %s is not a directory (a retained copy materializes a directory)",
                                            al->alias, al->host_path);
                if (r >= 0 && m->source) {
                        stage_src.fd = TAKE_FD(m->fd);
                        stage_src.host_path = al->host_path;
                        free(m->source);
                        m->source = NULL;
                }
        } else {
                /* The host path is always resolved and vetted. create_policy
                 * decides only what happens when it does not exist: an
                 * ephemeral copy with empty_directory then starts empty;
                 * otherwise the grant fails with materialize.missing. An
                 * existing source is always copied. */
                struct glove_error why = { 0 };
                r = sv_launch_resolve(cfg, al->alias, al->host_path, m, &why);
                bool absent = r == -ENOENT && why.code && strcmp(why.code, "materialize.missing") == 0;
                if (absent && kind == MK_EPHEMERAL && tu->create_policy == SV_CREATE_EMPTY_DIRECTORY)
                        r = 0;
                else if (r < 0 && err)
                        *err = why;
                if (r >= 0 && m->source && kind == MK_EPHEMERAL && !m->is_dir)
                        r = glove_error_set(err, EINVAL, "materialize.file_type",
                                            "%s: %s is not a directory (a copy materializes a directory)", al->alias,
                                            al->host_path);
        }
        glove_exposure_source_close(&src);
        stage_fd = stage_src.fd;
        if (r < 0) {
                sv_launch_mount_drop_last(l);
                return r;
        }
        /* Overlaps between the resolved grants of this launch, by path and
         * by identity (one directory reached by two paths). An exposure's
         * host path is never named. */
        for (size_t i = 0; i + 1 < l->n_mounts; i++) {
                const struct sv_mount *o = &l->mounts[i];
                if (!o->alias || !o->source || !m->source)
                        continue;
                if (sv_paths_overlap(o->source, m->source) || (o->dev == m->dev && o->ino == m->ino)) {
                        if (m->exposure || o->exposure)
                                r = glove_error_set(err, EINVAL, "materialize.overlap",
                                                    "%s: its host directory overlaps that of %s", m->alias, o->alias);
                        else
                                r = glove_error_set(err, EINVAL, "materialize.overlap", "%s: %s overlaps alias %s (%s)",
                                                    m->alias, m->source, o->alias, o->source);
                        sv_launch_mount_drop_last(l);
                        return r;
                }
        }
        if (kind == MK_RETAINED) {
                /* The source's manifest first: a source larger than the
                 * image is refused before any image is made, and a change
                 * after this walk makes the baseline stale (apply refuses
                 * it), never silently part of it. */
                _cleanup_(glove_manifest_freep) struct glove_manifest *src_manifest = NULL;
                r = sv_stage_source_manifest(cfg, m, &stage_src, &src_manifest, err);
                if (r < 0) {
                        sv_launch_mount_drop_last(l);
                        return r;
                }
                m->img = calloc(1, sizeof(*m->img));
                if (!m->img) {
                        sv_launch_mount_drop_last(l);
                        return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
                }
                r = sv_image_create(cfg->materialization_root_fd, cfg->materialization_root, l->session_id, m->alias,
                                    m->max_bytes, cfg->agent_uid, cfg->agent_gid, m->img, err);
                if (r < 0) {
                        sv_launch_mount_drop_last(l);
                        return r;
                }
                m->source = strdup(m->img->mount_path);
                r = m->source ? glove_fd_open_nofollow(m->source, O_PATH | O_DIRECTORY, &m->fd, err) : -ENOMEM;
                if (r < 0) {
                        (void)sv_image_release(m->img, NULL);
                        (void)sv_image_cleanup(cfg->materialization_root_fd, cfg->materialization_root, l->session_id,
                                               m->alias, true, NULL);
                        r = glove_error_set(err, -r, "materialize.mount", "%s: the mounted image cannot be opened",
                                            m->alias);
                        sv_launch_mount_drop_last(l);
                        return r;
                }
                m->is_dir = true;
                m->dev = m->img->root_dev;
                m->ino = m->img->root_ino;
                m->mnt_id = m->img->mnt_id;
                r = sv_stage_fill(cfg, l->session_id, m, &stage_src, src_manifest, err);
                if (r < 0) {
                        (void)sv_image_release(m->img, NULL);
                        (void)sv_image_cleanup(cfg->materialization_root_fd, cfg->materialization_root, l->session_id,
                                               m->alias, true, NULL);
                        sv_launch_mount_drop_last(l);
                        return r;
                }
        }
        if (!l->cwd && kind != MK_READ_BIND)
                l->cwd = m->target;
        return 0;
}

static int cmp_mount(const void *a, const void *b) {
        return strcmp(((const struct sv_mount *)a)->target, ((const struct sv_mount *)b)->target);
}

static int get_limits(const json_t *root, struct glove_supervisor_limits *out, struct glove_error *err) {
        const json_t *lim = json_object_get(root, "limits");
        uint64_t v[SV_LIMIT_COUNT];
        for (size_t i = 0; i < SV_LIMIT_COUNT; i++) {
                json_t *x = json_object_get(lim, sv_limit_names[i]);
                if (!json_is_integer(x) || json_integer_value(x) < 1)
                        return sv_bad_plan(err, "limits");
                v[i] = (uint64_t)json_integer_value(x);
        }
        *out = (struct glove_supervisor_limits){
                .cpu_time_ms = v[SV_LIMIT_CPU_TIME_MS],
                .memory_bytes = v[SV_LIMIT_MEMORY_BYTES],
                .pids = v[SV_LIMIT_PIDS],
                .wall_time_ms = v[SV_LIMIT_WALL_TIME_MS],
                .disk_bytes = v[SV_LIMIT_DISK_BYTES],
                .terminal_output_bytes = v[SV_LIMIT_TERMINAL_OUTPUT_BYTES],
        };
        return 0;
}

int sv_check_args(const struct glove_supervisor_runtime_config *cfg, const char *session_id, const char *plan,
                  struct glove_error *err) {
        if (!cfg || !cfg->policy || !session_id || !sv_identifier_valid(session_id) || !plan ||
            !cfg->materialization_root || cfg->materialization_root[0] != '/' || cfg->materialization_root_fd < 0)
                return glove_error_set(err, EINVAL, "launch.invalid_argument",
                                       "a configuration, a session identifier and a plan are required");
        return 0;
}

int glove_supervisor_launch_prepare(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                    const char *plan, size_t plan_len, struct glove_supervisor_launch **out,
                                    struct glove_error *err) {
        return glove_supervisor_launch_prepare_sources(cfg, session_id, plan, plan_len, NULL, out, err);
}

int glove_supervisor_launch_prepare_sources(const struct glove_supervisor_runtime_config *cfg,
                                            const char *session_id, const char *plan, size_t plan_len,
                                            struct glove_supervisor_sources *sources,
                                            struct glove_supervisor_launch **out, struct glove_error *err) {
        if (out)
                *out = NULL;
        int r = sv_check_args(cfg, session_id, plan, err);
        if (r < 0 || !out)
                return r < 0 ? r : glove_error_set(err, EINVAL, "launch.invalid_argument", "out is NULL");
        _cleanup_json_ json_t *root = NULL;
        struct glove_error jerr = { 0 };
        if (glove_json_decode_canonical(plan, plan_len, GLOVE_PLAN_MAX_BYTES, 0, &root, &jerr) < 0 || !json_is_object(root))
                return sv_bad_plan(err, "not a canonical JSON object");
        const char *tid = json_string_value(json_object_get(root, "runtime_template_id"));
        const char *eid = json_string_value(json_object_get(root, "egress_policy_id"));
        const json_t *grants = json_object_get(root, "path_grants");
        const struct sv_template *t = tid ? sv_policy_template(cfg->policy, tid) : NULL;
        if (!t || !eid || !json_is_array(grants))
                return sv_bad_plan(err, "runtime_template_id, egress_policy_id or path_grants");
        struct glove_supervisor_launch *l = calloc(1, sizeof(*l));
        if (!l || !(l->session_id = strdup(session_id))) {
                free(l);
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        }
        l->cfg = cfg;
        l->sources = sources;
        l->template_id = t->id;
        l->runtime_id = t->runtime_id;
        r = get_limits(root, &l->limits, err);
        if (r >= 0)
                r = sv_adapter_prepare(l, t, err); /* A: adapter runtime, discovery */
        if (r >= 0)
                r = launch_command(l, t, err);
        if (r >= 0)
                r = launch_egress(l, eid, err);
        /* Every grant's refusals that need no side effect come first, so a
         * direct_write or unavailable retained grant makes no image. */
        size_t n = json_array_size(grants);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                struct sv_grant g;
                r = sv_decode_grant(json_array_get(grants, i), &g, err);
                if (r >= 0 && g.access == SV_ACCESS_DIRECT_WRITE)
                        r = glove_error_set(err, EPERM, "launch.direct_write",
                                            "%s: direct_write is not supported by managed sessions", g.name);
                if (r >= 0 && g.access == SV_ACCESS_RETAINED_WRITE && !cfg->retained_available)
                        r = launch_grant(l, &g, err); /* reports launch.retained_unavailable */
                if (r >= 0 && g.exposure_id && !cfg->exposures)
                        r = launch_grant(l, &g, err); /* reports launch.exposures_unavailable */
        }
        if (r >= 0)
                r = launch_paths(l, t, err);
        if (r >= 0)
                r = sv_launch_projections(l, t, root, err);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                struct sv_grant g;
                r = sv_decode_grant(json_array_get(grants, i), &g, err);
                if (r >= 0)
                        r = launch_grant(l, &g, err);
        }
        if (r >= 0) /* C: last, so that no other refusal touches the lease store */
                r = sv_launch_leases(l, root, t, err);
        if (r < 0) {
                /* Undo: detach the fresh images' mounts and remove them. */
                for (size_t i = 0; i < l->n_mounts; i++)
                        if (l->mounts[i].img) {
                                (void)sv_image_release(l->mounts[i].img, NULL);
                                (void)sv_image_cleanup(cfg->materialization_root_fd, cfg->materialization_root,
                                                       l->session_id, l->mounts[i].alias, true, NULL);
                        }
                sv_image_cleanup_session(cfg->materialization_root_fd, l->session_id);
                glove_supervisor_launch_free(l);
                return r;
        }
        l->sources = NULL; /* borrowed for the prepare only */
        if (l->n_mounts) /* qsort's base may not be NULL */
                qsort(l->mounts, l->n_mounts, sizeof(*l->mounts), cmp_mount);
        *out = l;
        return 0;
}

char *const *glove_supervisor_launch_argv(const struct glove_supervisor_launch *l) {
        return l ? l->argv : NULL;
}

char *const *glove_supervisor_launch_envp(const struct glove_supervisor_launch *l) {
        return l ? l->envp : NULL;
}

const char *glove_supervisor_launch_runtime_id(const struct glove_supervisor_launch *l) {
        return l ? l->runtime_id : NULL;
}

void glove_supervisor_launch_limits(const struct glove_supervisor_launch *l, struct glove_supervisor_limits *out) {
        *out = l ? l->limits : (struct glove_supervisor_limits){ 0 };
}

uint64_t glove_supervisor_launch_file_size_max(const struct glove_supervisor_launch *l) {
        if (!l || l->n_leases == 0)
                return 0;
        uint64_t max = l->limits.disk_bytes;
        for (size_t i = 0; i < l->n_mounts; i++)
                if (!l->mounts[i].read_only && l->mounts[i].max_bytes > max)
                        max = l->mounts[i].max_bytes;
        return max > 0 ? max : GLOVE_LEASE_MAX_BYTES;
}

struct glove_net_policy *glove_supervisor_launch_take_egress(struct glove_supervisor_launch *l) {
        return l ? TAKE_PTR(l->egress) : NULL;
}

const char *glove_supervisor_launch_cwd(const struct glove_supervisor_launch *l) {
        if (!l)
                return NULL;
        if (l->cwd)
                return l->cwd;
        for (size_t i = 0; i < l->n_mounts; i++)
                if (l->mounts[i].alias)
                        return l->mounts[i].target;
        return NULL;
}

int glove_supervisor_launch_add_mounts(struct glove_mount_plan *plan, void *launch, struct glove_error *err) {
        const struct glove_supervisor_launch *l = launch;
        if (!plan || !l)
                return glove_error_set(err, EINVAL, "launch.invalid_argument", "a plan and a launch are required");
        uid_t uid = glove_mount_plan_inside_id(l->cfg->agent_uid);
        gid_t gid = glove_mount_plan_inside_id(l->cfg->agent_gid);
        int r = sv_launch_add_skills(plan, l, uid, gid, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l->n_mounts; i++) {
                const struct sv_mount *m = &l->mounts[i];
                if (m->kind == MK_EPHEMERAL)
                        r = glove_mount_plan_add_tree(plan, m->target, m->max_bytes, uid, gid, m->source, m->dev, m->ino,
                                                      m->alias, err);
                else
                        r = glove_mount_plan_add_pinned_bind(plan, m->target, m->source, m->dev, m->ino, m->is_dir,
                                                             m->read_only,
                                                             m->alias ? m->alias
                                                             : m->kind == MK_EXEC   ? "executable_path"
                                                             : m->kind == MK_BUNDLE ? "library_projections"
                                                             : m->kind == MK_LEASE  ? "secret_mounts"
                                                                                    : "read_only_paths",
                                                             err);
                if (r < 0)
                        return r;
                /* An exposure's host path never reaches a message a
                 * controller can read: the sandbox names it by its id. */
                if (m->exposure && m->kind != MK_RETAINED)
                        plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_PRIVATE;
        }
        return 0;
}

int glove_supervisor_launch_release(struct glove_supervisor_launch *l, struct glove_error *err) {
        if (!l)
                return 0;
        int ret = 0;
        for (size_t i = 0; i < l->n_mounts; i++) {
                struct sv_mount *m = &l->mounts[i];
                if (m->img) {
                        int r = sv_image_release(m->img, ret < 0 ? NULL : err);
                        if (r < 0 && ret == 0)
                                ret = r;
                }
                if (m->fd >= 0) {
                        close(m->fd);
                        m->fd = -1;
                }
        }
        sv_launch_leases_unlock(l);
        return ret;
}

void glove_supervisor_launch_disown(struct glove_supervisor_launch *l) {
        for (size_t i = 0; l && i < l->n_mounts; i++) {
                struct sv_mount *m = &l->mounts[i];
                if (m->img)
                        m->img->mounted = false; /* stays mounted for the keeper and the next gloved */
                if (m->fd >= 0) {
                        close(m->fd);
                        m->fd = -1;
                }
        }
        sv_launch_leases_unlock(l); /* the keeper holds the locks */
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Cross-field path checks of the policy (spec session-policy.md, "Filesystem
 * and launch binding": restricted roots and overlapping aliases are
 * rejected; "Runtime paths cannot be /, relative, duplicate, or overlap a
 * pinned executable"). All checks are lexical on normalized absolute paths;
 * the filesystem is never touched here. */
#include <stdio.h>
#include <string.h>

#include "glove/base/path.h"
#include "internal.h"

#define P(x) "policy." x

/* Sandbox locations Glove itself owns or the kernel provides: a target may
 * be neither at, beneath, nor above one of them. */
static const char *const reserved_targets[] = { "/dev", "/proc", "/run", "/sys", "/tmp", "/var/tmp" };

/* One path with where it came from. */
struct located {
        const char *p;
        char path[GLOVE_JSON_PATH_MAX];
};

static int check_reserved(struct sv_ctx *c, const char *p, const char *path) {
        for (size_t i = 0; i < sizeof(reserved_targets) / sizeof(reserved_targets[0]); i++)
                if (sv_paths_overlap(p, reserved_targets[i]))
                        return sv_fail(c, P("target_reserved"), path, "sandbox target overlaps reserved %s",
                                       reserved_targets[i]);
        return 0;
}

/* Alias host paths: pairwise disjoint. */
static int check_host_paths(struct sv_ctx *c, const struct glove_supervisor_policy *p) {
        for (size_t i = 0; i < p->n_aliases; i++)
                for (size_t k = 0; k < i; k++) {
                        if (!sv_paths_overlap(p->aliases[k].host_path, p->aliases[i].host_path))
                                continue;
                        char ep[GLOVE_JSON_PATH_MAX];
                        snprintf(ep, sizeof(ep), "$.path_aliases[%zu].host_path", i);
                        return sv_fail(c, P("path_overlap"), ep, "overlaps the host_path of path_aliases[%zu]", k);
                }
        return 0;
}

/* Alias and destination targets: not reserved, pairwise disjoint. */
static int check_targets(struct sv_ctx *c, const struct glove_supervisor_policy *p) {
        size_t n = p->n_aliases + p->n_destinations;
        for (size_t i = 0; i < n; i++) {
                char ip[GLOVE_JSON_PATH_MAX];
                const char *a;
                if (i < p->n_aliases) {
                        a = p->aliases[i].target_path;
                        snprintf(ip, sizeof(ip), "$.path_aliases[%zu].target_path", i);
                } else {
                        a = p->destinations[i - p->n_aliases].target_path;
                        snprintf(ip, sizeof(ip), "$.library_projection_destinations[%zu].target_path",
                                 i - p->n_aliases);
                }
                int r = check_reserved(c, a, ip);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < i; k++) {
                        const char *b = k < p->n_aliases ? p->aliases[k].target_path
                                                         : p->destinations[k - p->n_aliases].target_path;
                        if (sv_paths_overlap(a, b))
                                return sv_fail(c, P("target_overlap"), ip, "overlaps the sandbox target %s", b);
                }
        }
        return 0;
}

/* A launch or secret host path against every alias: it must not overlap an
 * alias host path (a session could then change what later sessions run or
 * read the secret), and when it is mounted at the same place in the
 * sandbox (executable, read-only paths) it must not overlap any sandbox
 * target (a workspace could shadow it). */
static int check_local_path(struct sv_ctx *c, const struct glove_supervisor_policy *p, const char *v,
                            const char *path, bool mounted) {
        for (size_t i = 0; i < p->n_aliases; i++)
                if (sv_paths_overlap(v, p->aliases[i].host_path))
                        return sv_fail(c, P("path_overlap"), path, "overlaps the host_path of path_aliases[%zu]", i);
        if (!mounted)
                return 0;
        for (size_t i = 0; i < p->n_aliases; i++)
                if (sv_paths_overlap(v, p->aliases[i].target_path))
                        return sv_fail(c, P("target_overlap"), path, "overlaps the target_path of path_aliases[%zu]",
                                       i);
        for (size_t i = 0; i < p->n_destinations; i++)
                if (sv_paths_overlap(v, p->destinations[i].target_path))
                        return sv_fail(c, P("target_overlap"), path,
                                       "overlaps the target_path of library_projection_destinations[%zu]", i);
        return 0;
}

static int check_launch_paths(struct sv_ctx *c, const struct glove_supervisor_policy *p, size_t ti) {
        const struct sv_template *t = &p->templates[ti];
        char ep[GLOVE_JSON_PATH_MAX];
        int r = 0;
        if (!t->has_launch)
                return 0;
        if (t->launch.executable_path[0]) {
                snprintf(ep, sizeof(ep), "$.runtime_templates[%zu].launch.executable_path", ti);
                r = check_local_path(c, p, t->launch.executable_path, ep, true);
        }
        for (size_t i = 0; r >= 0 && i < t->read_only_paths.n; i++) {
                snprintf(ep, sizeof(ep), "$.runtime_templates[%zu].launch.read_only_paths[%zu]", ti, i);
                r = check_local_path(c, p, t->read_only_paths.v[i], ep, true);
        }
        for (size_t i = 0; r >= 0 && i < t->search_paths.n; i++) {
                snprintf(ep, sizeof(ep), "$.runtime_templates[%zu].launch.executable_search_paths[%zu]", ti, i);
                r = check_local_path(c, p, t->search_paths.v[i], ep, false);
        }
        return r;
}

/* A secret source must not lie inside, or contain, anything a session can
 * read or write through another route. */
static int check_secret_sources(struct sv_ctx *c, const struct glove_supervisor_policy *p) {
        for (size_t i = 0; i < p->n_secret_mounts; i++) {
                const char *src = p->secret_mounts[i].source_path;
                char ep[GLOVE_JSON_PATH_MAX];
                snprintf(ep, sizeof(ep), "$.secret_mounts[%zu].source_path", i);
                int r = check_local_path(c, p, src, ep, false);
                for (size_t ti = 0; r >= 0 && ti < p->n_templates; ti++) {
                        const struct sv_template *t = &p->templates[ti];
                        bool hit = t->has_launch && t->launch.executable_path[0] &&
                                   sv_paths_overlap(src, t->launch.executable_path);
                        for (size_t k = 0; !hit && k < t->read_only_paths.n; k++)
                                hit = sv_paths_overlap(src, t->read_only_paths.v[k]);
                        for (size_t k = 0; !hit && k < t->search_paths.n; k++)
                                hit = sv_paths_overlap(src, t->search_paths.v[k]);
                        if (hit)
                                r = sv_fail(c, P("path_overlap"), ep,
                                            "overlaps a launch path of runtime_templates[%zu]", ti);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int sv_check_policy_paths(struct sv_ctx *c, const struct glove_supervisor_policy *p) {
        int r = check_host_paths(c, p);
        if (r >= 0)
                r = check_targets(c, p);
        for (size_t i = 0; r >= 0 && i < p->n_templates; i++)
                r = check_launch_paths(c, p, i);
        if (r >= 0)
                r = check_secret_sources(c, p);
        return r;
}

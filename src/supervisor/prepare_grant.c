/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The path grants of launch preparation (prepare.c; issue 26,
 * include/glove/supervisor/exposure.h; docs/session-policy.md, "Dynamic path
 * exposures"): a plan's path grant decoded (an alias or an exposure), and
 * the exposure sources a launch materializes: opened and checked ahead of
 * the prepare (glove_supervisor_sources_open), taken over by it, and turned
 * into a pinned mount that never names the host path.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/prepare.h"
#include "internal.h"
#include "prepare_internal.h"

/* ---- the decoded path grant ---- */

int sv_bad_plan(struct glove_error *err, const char *what) {
        return glove_error_set(err, EINVAL, "launch.invalid_plan", "the plan does not decode against the policy: %s",
                               what);
}

int sv_decode_grant(const json_t *o, struct sv_grant *g, struct glove_error *err) {
        const char *acc = json_string_value(json_object_get(o, "access"));
        const char *mat = json_string_value(json_object_get(o, "materialization"));
        const char *cl = json_string_value(json_object_get(o, "cleanup_policy"));
        g->alias = json_string_value(json_object_get(o, "alias"));
        g->exposure_id = json_string_value(json_object_get(o, "exposure_id"));
        json_t *gen = json_object_get(o, "exposure_generation");
        g->generation = json_is_integer(gen) ? json_integer_value(gen) : 0;
        /* Exactly one of an alias and an exposure (plan.h). */
        if (!g->alias == !g->exposure_id || (g->exposure_id && g->generation < 1))
                return sv_bad_plan(err, "a path grant names neither an alias nor an exposure, or both");
        g->name = g->alias ? g->alias : g->exposure_id;
        json_t *mb = json_object_get(o, "max_bytes");
        g->access = acc ? sv_enum_find(&sv_access_names, acc) : -1;
        g->materialization = mat ? sv_enum_find(&sv_materialization_names, mat) : -1;
        g->cleanup = cl ? sv_enum_find(&sv_cleanup_names, cl) : -1;
        if (g->access < 0 || g->materialization < 0 || g->cleanup < 0 || !json_is_integer(mb) ||
            json_integer_value(mb) < 1)
                return sv_bad_plan(err, "a path grant");
        g->max_bytes = json_integer_value(mb);
        return 0;
}

/* ---- exposure sources ---- */

struct glove_supervisor_sources {
        struct {
                char *exposure_id;
                struct glove_exposure_source src; /* fd -1 once taken */
        } *v;
        size_t n;
};

void glove_supervisor_sources_free(struct glove_supervisor_sources *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++) {
                free(s->v[i].exposure_id);
                glove_exposure_source_close(&s->v[i].src);
        }
        free(s->v);
        free(s);
}

int glove_supervisor_sources_open(const struct glove_supervisor_runtime_config *cfg, const char *plan,
                                  size_t plan_len, int64_t now_ms, struct glove_supervisor_sources **out,
                                  struct glove_error *err) {
        if (!out || !cfg || !plan)
                return glove_error_set(err, EINVAL, "launch.invalid_argument",
                                       "a configuration and a plan are required");
        *out = NULL;
        _cleanup_json_ json_t *root = NULL;
        if (glove_json_decode_canonical(plan, plan_len, GLOVE_PLAN_MAX_BYTES, 0, &root, NULL) < 0 ||
            !json_is_array(json_object_get(root, "path_grants")))
                return sv_bad_plan(err, "not a canonical JSON object with path_grants");
        const json_t *grants = json_object_get(root, "path_grants");
        struct glove_supervisor_sources *s = calloc(1, sizeof(*s));
        if (!s || !(s->v = calloc(json_array_size(grants) + 1, sizeof(*s->v)))) {
                free(s);
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        }
        for (size_t i = 0; i < json_array_size(grants); i++) {
                struct sv_grant g;
                int r = sv_decode_grant(json_array_get(grants, i), &g, err);
                if (r >= 0 && g.exposure_id && !cfg->exposures)
                        r = glove_error_set(err, EOPNOTSUPP, "launch.exposures_unavailable",
                                            "%s: the plan names a path exposure and this gloved has no exposure "
                                            "registry (start it with --path-exposure-policy and "
                                            "--path-exposure-journal)",
                                            g.name);
                if (r >= 0 && g.exposure_id) {
                        s->v[s->n].src = (struct glove_exposure_source){ .fd = -1 };
                        s->v[s->n].exposure_id = strdup(g.exposure_id);
                        if (!s->v[s->n].exposure_id)
                                r = glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
                        else
                                r = glove_exposures_open_source(cfg->exposures, g.exposure_id, g.generation, now_ms,
                                                                &s->v[s->n].src, err);
                        s->n++; /* freed (and its source closed) with s either way */
                }
                if (r < 0) {
                        glove_supervisor_sources_free(s);
                        return r;
                }
        }
        *out = s;
        return 0;
}

/* Takes the pre-opened source of exposure_id out of s (the entry keeps fd
 * -1 and no path). Returns false when s has none. */
bool sv_sources_take(struct glove_supervisor_sources *s, const char *exposure_id, int64_t generation,
                     struct glove_exposure_source *out) {
        for (size_t i = 0; s && i < s->n; i++)
                if (strcmp(s->v[i].exposure_id, exposure_id) == 0 && s->v[i].src.fd >= 0 &&
                    s->v[i].src.generation == generation) {
                        *out = s->v[i].src;
                        s->v[i].src.fd = -1;
                        s->v[i].src.path = NULL;
                        return true;
                }
        return false;
}

int64_t sv_cfg_now_ms(const struct glove_supervisor_runtime_config *cfg) {
        if (cfg->now_ms)
                return cfg->now_ms();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An exposure grant's mount m from the source glove_exposures_open_source
 * checked: its descriptor and identity are taken over (src->fd becomes -1),
 * exactly as sv_launch_resolve fills an alias's. The host path stays in m
 * (the mount plan reopens it and requires this identity) and never
 * appears in a message. */
int sv_exposure_mount(const struct glove_supervisor_runtime_config *cfg, struct sv_mount *m,
                      struct glove_exposure_source *src, struct glove_error *err) {
        struct glove_error why = { 0 };
        if (sv_check_restricted(cfg, m->alias, src->path, &why) < 0)
                return glove_error_set(err, EPERM, "materialize.restricted",
                                       "%s: the exposure's project overlaps a directory gloved keeps for itself "
                                       "(revoke it and enroll another project)",
                                       m->alias);
        if (cfg->grant_check) {
                int r = cfg->grant_check(cfg->grant_check_ctx, src->fd, m->alias, err);
                if (r < 0)
                        return r;
        }
        m->source = strdup(src->path);
        if (!m->source)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        m->is_dir = true;
        m->dev = (uint64_t)src->dev;
        m->ino = (uint64_t)src->ino;
        m->mnt_id = src->mnt_id;
        m->fd = src->fd;
        src->fd = -1;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Library projections of a launch: each bundle of the plan verified and
 * mounted read-only, an adapter runtime's `skill` entries expanded into its
 * native skills directory, and what the binding commits
 * (prepare_internal.h; docs/session-policy.md, "Library bundles and
 * skills"; docs/digests.md, "skills_projection_digest").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/container/mount_plan.h"
#include "glove/supervisor/adapter.h"
#include "glove/supervisor/bundle.h"
#include "glove/supervisor/prepare.h"
#include "internal.h"
#include "prepare_internal.h"

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
}

void sv_launch_projections_free(struct glove_supervisor_launch *l) {
        for (size_t i = 0; i < l->n_projections; i++) {
                free(l->projections[i].projection_id);
                free(l->projections[i].destination_alias);
                free(l->projections[i].target);
        }
        free(l->projections);
        for (size_t i = 0; i < l->n_skills; i++) {
                free(l->skills[i].key);
                free(l->skills[i].path);
                free(l->skills[i].projection_id);
                free(l->skills[i].content);
        }
        free(l->skills);
        l->projections = NULL;
        l->skills = NULL;
        sv_launch_refinement_free(l);
        l->n_projections = l->n_skills = 0;
}

static const char *destination_target(const struct glove_supervisor_policy *p, const char *alias) {
        for (size_t i = 0; i < p->n_destinations; i++)
                if (strcmp(p->destinations[i].alias, alias) == 0)
                        return p->destinations[i].target_path;
        return NULL;
}

/* The skill entries of b (projection id) appended to l->skills; *total
 * counts their bytes. */
static int add_skills(struct glove_supervisor_launch *l, const struct glove_bundle *b, const char *id, size_t *total,
                      struct glove_error *err) {
        for (size_t i = 0; i < b->n_entries; i++) {
                const struct glove_bundle_entry *e = &b->entries[i];
                if (e->kind != GLOVE_BUNDLE_SKILL)
                        continue;
                for (size_t k = 0; k < l->n_skills; k++)
                        if (strcmp(l->skills[k].key, e->key) == 0)
                                return glove_error_set(err, EINVAL, "bundle.duplicate_skill",
                                                       "projection %s: skill %s is also given by projection %s", id,
                                                       e->key, l->skills[k].projection_id);
                if (l->n_skills >= GLOVE_SUPERVISOR_SKILLS_MAX)
                        return glove_error_set(err, E2BIG, "bundle.too_many_skills",
                                               "projection %s: skill %s: one launch expands at most %u skills", id,
                                               e->key, (unsigned)GLOVE_SUPERVISOR_SKILLS_MAX);
                *total += e->content_len;
                if (e->content_len > GLOVE_MOUNT_FILE_MAX || *total > GLOVE_SUPERVISOR_SKILLS_MAX_BYTES)
                        return glove_error_set(err, E2BIG, "bundle.skills_too_large",
                                               "projection %s: skill %s: skills are at most %u bytes each and %u "
                                               "bytes together",
                                               id, e->key, (unsigned)GLOVE_MOUNT_FILE_MAX,
                                               (unsigned)GLOVE_SUPERVISOR_SKILLS_MAX_BYTES);
                struct sv_skill *n = realloc(l->skills, (l->n_skills + 1) * sizeof(*n));
                if (!n)
                        return no_memory(err);
                l->skills = n;
                struct sv_skill *s = &l->skills[l->n_skills];
                *s = (struct sv_skill){ 0 };
                l->n_skills++;
                s->key = strdup(e->key);
                s->projection_id = strdup(id);
                s->content = malloc(e->content_len + 1);
                if (asprintf(&s->path, "%s/%s/SKILL.md", l->skills_dir, e->key) < 0)
                        s->path = NULL;
                if (!s->key || !s->projection_id || !s->content || !s->path)
                        return no_memory(err);
                memcpy(s->content, e->content, e->content_len + 1);
                s->content_len = e->content_len;
                memcpy(s->content_digest, e->content_digest, sizeof(s->content_digest));
        }
        return 0;
}

/* A bundle already loaded by this launch: its projections after the first
 * are not read again (bundle.h, GLOVE_SUPERVISOR_BUNDLES_MAX_BYTES). */
struct seen {
        const char *digest;   /* borrowed from the plan */
        const char *first_id; /* the first projection naming it */
        size_t mount;         /* index of its first MK_BUNDLE mount */
        bool has_skill;       /* expanded a skill: the first at l->skills[skill] */
        size_t skill;
};

/* What one launch's projections have read: distinct bundles (at most the
 * plan's projections) and their bytes. */
struct reading {
        struct seen *seen;
        size_t n_seen;
        uint64_t bytes;
        size_t skill_bytes;
};

static struct seen *seen_find(struct reading *rd, const char *digest) {
        for (size_t i = 0; i < rd->n_seen; i++)
                if (strcmp(rd->seen[i].digest, digest) == 0)
                        return &rd->seen[i];
        return NULL;
}

/* The MK_BUNDLE mount at target, unless one is there: the same bundle
 * projected twice to one destination is one file. src: the verified bundle
 * (its descriptor is taken) or an earlier mount of it (duplicated). */
static int bundle_mount(struct glove_supervisor_launch *l, const char *target, const char *digest,
                        struct glove_bundle *b, size_t src, struct glove_error *err) {
        for (size_t i = 0; i < l->n_mounts; i++)
                if (l->mounts[i].kind == MK_BUNDLE && strcmp(l->mounts[i].target, target) == 0)
                        return 0;
        int fd = b ? b->fd : fcntl(l->mounts[src].fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return glove_error_set(err, errno, "bundle.open", "bundle %s: %s", digest, strerror(errno));
        if (b)
                b->fd = -1;
        uint64_t dev = b ? b->dev : l->mounts[src].dev, ino = b ? b->ino : l->mounts[src].ino,
                 mnt_id = b ? b->mnt_id : l->mounts[src].mnt_id;
        struct sv_mount *m = sv_launch_mount_new(l, MK_BUNDLE, target, err);
        if (!m) {
                close(fd);
                return -ENOMEM;
        }
        m->read_only = true;
        m->is_dir = false;
        m->dev = dev;
        m->ino = ino;
        m->mnt_id = mnt_id;
        m->fd = fd; /* the verified descriptor stays pinned */
        if (asprintf(&m->source, "%s/%s.json", l->cfg->library_bundle_root, digest) < 0) {
                m->source = NULL;
                return no_memory(err);
        }
        return 0;
}

/* One projection: the bundle verified (once per distinct digest), its
 * mount, its skills. */
static int project(struct glove_supervisor_launch *l, const json_t *o, struct reading *rd, struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = l->cfg;
        const char *id = json_string_value(json_object_get(o, "projection_id"));
        const char *digest = json_string_value(json_object_get(o, "content_digest"));
        const char *alias = json_string_value(json_object_get(o, "destination_alias"));
        const char *tp = alias ? destination_target(cfg->policy, alias) : NULL;
        if (!id || !digest || !tp)
                return glove_error_set(err, EINVAL, "launch.invalid_plan",
                                       "the plan does not decode against the policy: a library projection");
        struct sv_projection *np = realloc(l->projections, (l->n_projections + 1) * sizeof(*np));
        if (!np)
                return no_memory(err);
        l->projections = np;
        struct sv_projection *p = &l->projections[l->n_projections++];
        *p = (struct sv_projection){ 0 };
        p->projection_id = strdup(id);
        p->destination_alias = strdup(alias);
        if (asprintf(&p->target, "%s/%s.json", tp, digest) < 0)
                p->target = NULL;
        if (!p->projection_id || !p->destination_alias || !p->target)
                return no_memory(err);
        struct seen *sn = seen_find(rd, digest);
        if (sn) {
                /* Read and verified already: its skills would all repeat. */
                snprintf(p->content_digest, sizeof(p->content_digest), "%s", digest);
                if (sn->has_skill)
                        return glove_error_set(err, EINVAL, "bundle.duplicate_skill",
                                               "projection %s: skill %s is also given by projection %s", id,
                                               l->skills[sn->skill].key, sn->first_id);
                return bundle_mount(l, p->target, digest, NULL, sn->mount, err);
        }
        struct glove_bundle *b = NULL;
        int r = glove_bundle_load_within(cfg->library_bundle_root_fd, digest, cfg->agent_uid,
                                         GLOVE_SUPERVISOR_BUNDLES_MAX_BYTES - rd->bytes, &b, err);
        if (r < 0) {
                if (err && err->code && strcmp(err->code, "bundle.launch_too_large") == 0)
                        glove_error_prefix(err, "projection %s: the distinct bundles of one launch are at most %ju "
                                                "bytes together (%ju read)",
                                           id, (uintmax_t)GLOVE_SUPERVISOR_BUNDLES_MAX_BYTES, (uintmax_t)rd->bytes);
                else
                        glove_error_prefix(err, "projection %s", id);
                return r;
        }
        rd->bytes += b->size;
        memcpy(p->content_digest, b->digest, sizeof(p->content_digest));
        struct seen *ns = realloc(rd->seen, (rd->n_seen + 1) * sizeof(*ns));
        if (!ns) {
                glove_bundle_free(b);
                return no_memory(err);
        }
        rd->seen = ns;
        sn = &rd->seen[rd->n_seen++];
        *sn = (struct seen){ .digest = digest, .first_id = id, .mount = l->n_mounts, .skill = l->n_skills };
        r = bundle_mount(l, p->target, digest, b, 0, err);
        for (size_t i = 0; i < l->n_mounts; i++)
                if (l->mounts[i].kind == MK_BUNDLE && strcmp(l->mounts[i].target, p->target) == 0)
                        sn->mount = i;
        size_t before = l->n_skills;
        if (r >= 0 && l->skills_dir)
                r = add_skills(l, b, id, &rd->skill_bytes, err);
        sn->has_skill = l->n_skills > before;
        glove_bundle_free(b);
        return r;
}

static int cmp_skill(const void *a, const void *b) {
        return strcmp(((const struct sv_skill *)a)->key, ((const struct sv_skill *)b)->key);
}

/* docs/digests.md, "skills_projection_digest". */
static int skills_digest(struct glove_supervisor_launch *l, struct glove_error *err) {
        struct glove_bundle_skill_ref *refs = calloc(l->n_skills ? l->n_skills : 1, sizeof(*refs));
        if (!refs)
                return no_memory(err);
        for (size_t i = 0; i < l->n_skills; i++)
                refs[i] = (struct glove_bundle_skill_ref){ l->skills[i].key, l->skills[i].path,
                                                           l->skills[i].content_digest };
        int r = glove_bundle_skills_digest(l->skills_dir ? l->skills_dir : "", refs, l->n_skills, l->skills_digest, err);
        free(refs);
        return r;
}

int sv_launch_projections(struct glove_supervisor_launch *l, const struct sv_template *t, const json_t *root,
                          struct glove_error *err) {
        const struct glove_supervisor_adapter *ad = glove_supervisor_adapter_find(t->runtime_id);
        l->skills_dir = ad ? ad->skills_dir : NULL;
        const json_t *list = json_object_get(root, "library_projections");
        size_t n = json_array_size(list);
        if (n && !l->cfg->library_bundle_root)
                return glove_error_set(err, EOPNOTSUPP, "launch.bundles_unavailable",
                                       "the plan has %zu library projection%s but this gloved has no "
                                       "library bundle root",
                                       n, n == 1 ? "" : "s");
        int r = sv_launch_refinement(l, root, err);
        if (r < 0)
                return r;
        struct reading rd = { 0 };
        for (size_t i = 0; i < n; i++) {
                const json_t *o = json_array_get(list, i);
                if (sv_launch_refinement_skips(l, json_string_value(json_object_get(o, "projection_id"))))
                        continue; /* read above, for the evaluator only */
                r = project(l, o, &rd, err);
                if (r < 0) {
                        free(rd.seen);
                        return r;
                }
        }
        free(rd.seen);
        if (l->n_skills) /* qsort's base may not be NULL */
                qsort(l->skills, l->n_skills, sizeof(*l->skills), cmp_skill);
        return skills_digest(l, err);
}

int sv_launch_add_skills(struct glove_mount_plan *plan, const struct glove_supervisor_launch *l, uid_t uid, gid_t gid,
                         struct glove_error *err) {
        if (!l->skills_dir)
                return 0;
        /* The chain beneath the home, each directory the agent's (a vendor
         * CLI writes its own files next to the skills, and in them). */
        const char *home = GLOVE_SUPERVISOR_ADAPTER_HOME;
        size_t hl = strlen(home);
        char buf[PATH_MAX];
        size_t n = strlen(l->skills_dir);
        for (size_t i = hl + 1; i <= n && n < sizeof(buf); i++) {
                if (l->skills_dir[i] != '/' && l->skills_dir[i] != '\0')
                        continue;
                memcpy(buf, l->skills_dir, i);
                buf[i] = '\0';
                int r = glove_mount_plan_add_dir(plan, buf, 0755, uid, gid, err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < l->n_skills; i++) {
                const struct sv_skill *s = &l->skills[i];
                snprintf(buf, sizeof(buf), "%s/%s", l->skills_dir, s->key);
                int r = glove_mount_plan_add_dir(plan, buf, 0755, uid, gid, err);
                if (r >= 0)
                        r = glove_mount_plan_add_owned_file(plan, s->path, s->content, s->content_len, 0644, uid, gid,
                                                            err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add(json_t *o, const char *k, json_t *v) {
        return v ? json_object_set_new(o, k, v) : -1;
}

int sv_launch_projection_binding(const struct glove_supervisor_launch *l, json_t *b) {
        json_t *ps = json_array(), *ss = json_array();
        int r = add(b, "projections", ps) | add(b, "skills", ss) |
                add(b, "skills_projection_digest", json_string(l->skills_digest));
        if (r < 0)
                return -1;
        for (size_t i = 0; i < l->n_projections; i++) {
                const struct sv_projection *p = &l->projections[i];
                json_t *o = json_object();
                r |= json_array_append_new(ps, o);
                r |= add(o, "projection_id", json_string(p->projection_id)) |
                     add(o, "destination_alias", json_string(p->destination_alias)) |
                     add(o, "target", json_string(p->target)) | add(o, "content_digest", json_string(p->content_digest));
        }
        for (size_t i = 0; i < l->n_skills; i++) {
                const struct sv_skill *s = &l->skills[i];
                json_t *o = json_object();
                r |= json_array_append_new(ss, o);
                r |= add(o, "key", json_string(s->key)) | add(o, "path", json_string(s->path)) |
                     add(o, "projection_id", json_string(s->projection_id)) |
                     add(o, "content_digest", json_string(s->content_digest));
        }
        return r ? -1 : 0;
}

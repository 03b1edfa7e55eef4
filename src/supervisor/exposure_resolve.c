/* SPDX-License-Identifier: Apache-2.0 */
/* Resolving exposures: descriptor-relative opening beneath pinned roots,
 * plan grant checks, the prepare-time source and the recovery lookup (see
 * glove/supervisor/exposure.h, "plans", "prepare", "recovery"). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exposure_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "glove/container/region.h"
#include "internal.h"

#define BENEATH_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

static int openat2_dir(int dirfd, const char *rel, uint64_t resolve) {
        struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = resolve };
        for (int tries = 0;; tries++) {
                int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                /* EAGAIN: a rename raced the lookup; the kernel asks to retry. */
                if (errno != EAGAIN || tries >= 8)
                        return -errno;
        }
}

int exp_open_beneath(int dirfd, const char *rel) {
        return openat2_dir(dirfd, rel, BENEATH_RESOLVE);
}

int exp_open_root(const char *path) {
        if (!path || path[0] != '/')
                return -EINVAL;
        _cleanup_close_ int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (slash < 0)
                return -errno;
        return openat2_dir(slash, path[1] ? path + 1 : ".", RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

int exp_fd_ident(int fd, struct exp_ident *out) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t)st.st_dev > INT64_MAX || (uint64_t)st.st_ino > INT64_MAX)
                return -EOVERFLOW;
        out->dev = (int64_t)st.st_dev;
        out->ino = (int64_t)st.st_ino;
        return 0;
}

bool exp_ident_equal(const struct exp_ident *a, const struct exp_ident *b) {
        return a->dev == b->dev && a->ino == b->ino;
}

/* The generation gen of id, or NULL. */
static struct exp_gen *find_gen(const struct exp_entry *e, int64_t gen) {
        for (size_t i = 0; e && i < e->n_gens; i++)
                if (e->gens[i].generation == gen)
                        return &e->gens[i];
        return NULL;
}

/* ---- plans ---- */

static const json_t *find_mode(const json_t *modes, const char *access, const char *mat) {
        size_t i;
        const json_t *m;
        json_array_foreach(modes, i, m) {
                if (strcmp(json_string_value(json_object_get(m, "access")), access) == 0 &&
                    strcmp(json_string_value(json_object_get(m, "materialization")), mat) == 0)
                        return m;
        }
        return NULL;
}

static bool json_strings_contain(const json_t *arr, const char *s) {
        size_t i;
        const json_t *v;
        json_array_foreach(arr, i, v) {
                if (strcmp(json_string_value(v), s) == 0)
                        return true;
        }
        return false;
}

/* The pin of e's root when it is still in the policy, pinned, and the
 * directory the generation was created beneath; else NULL. */
static const struct exp_pin *usable_pin(const struct glove_exposures *x, const struct exp_entry *e,
                                        const struct exp_gen *g, const struct glove_exposure_root **root) {
        size_t idx;
        *root = exp_policy_root(x, e->root_id, &idx);
        if (!*root || x->pins[idx].fd < 0 || !exp_ident_equal(&x->pins[idx].ident, &g->root))
                return NULL;
        return &x->pins[idx];
}

/* The grant check on the effective exposure f of gen (see check_grant). */
static const char *check_effective(const struct exp_gen *gen, const struct exp_effective *f,
                                   const struct glove_exposure_grant *g, int64_t now_ms, const char **member) {
        *member = "exposure_generation";
        enum exp_state st = exp_effective_state(gen, f, now_ms);
        if (st == EXP_REVOKED)
                return "plan.exposure_revoked";
        if (st == EXP_EXPIRED)
                return "plan.exposure_expired";
        *member = "access";
        if (!g->access || !g->materialization)
                return "plan.exposure_mode_not_allowed";
        const json_t *m = find_mode(f->modes, g->access, g->materialization);
        if (!m)
                return "plan.exposure_mode_not_allowed";
        *member = "cleanup_policy";
        if (!g->cleanup_policy || strcmp(g->cleanup_policy, json_string_value(json_object_get(m, "cleanup_policy"))) != 0)
                return "plan.exposure_cleanup_mismatch";
        *member = "max_bytes";
        if (g->max_bytes > json_integer_value(json_object_get(m, "max_bytes")))
                return "plan.exposure_quota_exceeded";
        *member = NULL;
        if (!g->runtime_template_id || !json_strings_contain(f->runtimes, g->runtime_template_id))
                return "plan.exposure_runtime_not_allowed";
        *member = "ttl_secs";
        if (g->ttl_secs < 0 || g->ttl_secs > INT64_MAX / 1000 ||
            g->plan_expires_at_ms > INT64_MAX - g->ttl_secs * 1000 ||
            g->plan_expires_at_ms + g->ttl_secs * 1000 > f->expires_at_ms)
                return "plan.exposure_expires_too_soon";
        *member = NULL;
        return NULL;
}

const char *glove_exposures_check_grant(const struct glove_exposures *x, const struct glove_exposure_grant *g,
                                        int64_t now_ms, const char **member) {
        const char *unused;
        if (!member)
                member = &unused;
        *member = NULL;
        const struct exp_entry *e = x && g && g->exposure_id ? exp_find(x, g->exposure_id) : NULL;
        if (!e)
                return "plan.exposure_unknown";
        *member = "exposure_generation";
        const struct exp_gen *gen = find_gen(e, g->generation);
        if (!gen)
                return "plan.exposure_unknown";
        if (gen != &e->gens[e->n_gens - 1])
                return "plan.exposure_superseded";
        enum exp_state st = exp_state_at(gen, now_ms);
        if (st == EXP_REVOKED)
                return "plan.exposure_revoked";
        if (st == EXP_EXPIRED)
                return "plan.exposure_expired";
        *member = NULL;
        const struct glove_exposure_root *root;
        if (!usable_pin(x, e, gen, &root))
                return "plan.exposure_root_unavailable";
        /* Everything else on the effective exposure under the policy now. */
        struct exp_effective f;
        if (exp_effective_get(x, e, gen, &f) < 0)
                return "plan.exposure_root_unavailable";
        const char *why = check_effective(gen, &f, g, now_ms, member);
        exp_effective_clear(&f);
        return why;
}

const char *glove_exposures_target(const struct glove_exposures *x, const char *exposure_id) {
        const struct exp_entry *e = x && exposure_id ? exp_find(x, exposure_id) : NULL;
        if (!e)
                return NULL;
        const struct glove_exposure_root *root = exp_policy_root(x, e->root_id, NULL);
        return root ? root->target_path : NULL;
}

/* ---- prepare ---- */

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "exposure.no_memory", "out of memory");
}

/* The exposure.* refusal for generation gen of id at now_ms (gens ever
 * created), or 0 with *out the live one. */
static int live_gen(const struct glove_exposures *x, const char *id, int64_t gen, int64_t now_ms,
                    const struct exp_entry **eout, const struct exp_gen **out, struct glove_error *err) {
        const struct exp_entry *e = x && id ? exp_find(x, id) : NULL;
        const struct exp_gen *g = find_gen(e, gen);
        if (!g)
                return glove_error_set(err, ENOENT, "exposure.unknown", "no exposure %s generation %lld",
                                       id ? id : "(null)", (long long)gen);
        if (g != &e->gens[e->n_gens - 1])
                return glove_error_set(err, ESTALE, "exposure.superseded",
                                       "%s generation %lld was superseded by generation %lld", id, (long long)gen,
                                       (long long)e->gens[e->n_gens - 1].generation);
        enum exp_state st = exp_state_at(g, now_ms);
        if (st == EXP_REVOKED)
                return glove_error_set(err, EKEYREVOKED, "exposure.revoked", "%s generation %lld was revoked", id,
                                       (long long)gen);
        if (st == EXP_EXPIRED)
                return glove_error_set(err, EKEYEXPIRED, "exposure.expired", "%s generation %lld has expired", id,
                                       (long long)gen);
        struct exp_effective f;
        if (exp_effective_get(x, e, g, &f) < 0)
                return no_memory(err);
        st = exp_effective_state(g, &f, now_ms);
        int64_t eff_ms = f.expires_at_ms;
        exp_effective_clear(&f);
        if (st == EXP_EXPIRED)
                return glove_error_set(err, EKEYEXPIRED, "exposure.expired",
                                       "%s generation %lld has expired (at %lld ms: the root's max_ttl_secs now "
                                       "ends it sooner than recorded)",
                                       id, (long long)gen, (long long)eff_ms);
        *eout = e;
        *out = g;
        return 0;
}

static int changed(struct glove_error *err, const char *id, const char *what) {
        return glove_error_set(err, ESTALE, "exposure.changed",
                               "exposure %s: %s is no longer the directory recorded at enrollment (replaced, moved "
                               "or now a link); revoke it and enroll the project again",
                               id, what);
}

/* Reopens the root from "/" and requires it to be the pinned directory. */
static int recheck_root(const struct glove_exposure_root *root, const struct exp_pin *pin, const char *id,
                        struct glove_error *err) {
        _cleanup_close_ int fd = exp_open_root(root->path);
        struct exp_ident now;
        if (fd < 0 || exp_fd_ident(fd, &now) < 0 || !exp_ident_equal(&now, &pin->ident))
                return changed(err, id, "the root");
        return 0;
}

/* The parent of rel: "." or rel without its last component. */
static char *parent_rel(const char *rel, const char **name) {
        const char *slash = strrchr(rel, '/');
        *name = slash ? slash + 1 : rel;
        return slash ? strndup(rel, (size_t)(slash - rel)) : strdup(".");
}

/* Refuses a project (path: its normalized absolute path in gloved's mount
 * namespace) with a mount point strictly beneath it in gloved's
 * /proc/self/mountinfo (read whole, at most GLOVE_REGION_MOUNTINFO_MAX
 * bytes; an unreadable table fails closed). The sandbox binds the project
 * with the mounts beneath it, so such a mount (another disk, a bind of a
 * directory outside the root) would reach the agent; the sandbox refuses it
 * too ("grant.submount"), this check says so before a session is made. The
 * message names the exposure, never the path. */
static int no_mount_beneath(const char *path, const char *id, struct glove_error *err) {
        struct glove_mount_table t = { 0 };
        struct glove_error why = { 0 };
        if (glove_mount_table_read(&t, &why) < 0)
                return glove_error_set(err, EXDEV, "exposure.cross_device",
                                       "exposure %s: cannot tell whether a mount lies beneath the project (%s); "
                                       "refusing it",
                                       id, why.message);
        bool found = false;
        for (size_t i = 0; !found && i < t.count; i++)
                found = strcmp(t.rows[i].point, path) != 0 && glove_path_is_beneath(t.rows[i].point, path);
        glove_mount_table_free(&t);
        if (found)
                return glove_error_set(err, EXDEV, "exposure.cross_device",
                                       "exposure %s: a mount lies beneath the project, and an exposure never "
                                       "crosses a mount; unmount it on the host, or enroll a project with no mount "
                                       "beneath it",
                                       id);
        return 0;
}

int glove_exposures_open_source(const struct glove_exposures *x, const char *exposure_id, int64_t generation,
                                int64_t now_ms, struct glove_exposure_source *out, struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "exposure.unknown", "no output");
        memset(out, 0, sizeof(*out));
        out->fd = -1;
        const struct exp_entry *e = NULL;
        const struct exp_gen *g = NULL;
        int r = live_gen(x, exposure_id, generation, now_ms, &e, &g, err);
        if (r < 0)
                return r;
        const struct glove_exposure_root *root;
        size_t idx;
        root = exp_policy_root(x, e->root_id, &idx);
        /* Controller-visible: names neither the root nor a path. */
        if (!root)
                return glove_error_set(err, ESTALE, "exposure.root_unavailable",
                                       "exposure %s: its root is no longer in the exposure policy (glove init "
                                       "--list names it)",
                                       exposure_id);
        if (x->pins[idx].fd < 0)
                return glove_error_set(err, ESTALE, "exposure.root_unavailable",
                                       "exposure %s: its root could not be pinned at gloved start (%s; gloved's "
                                       "log names it)",
                                       exposure_id, x->pins[idx].problem);
        const struct exp_pin *pin = &x->pins[idx];
        if (!exp_ident_equal(&pin->ident, &g->root))
                return changed(err, exposure_id, "the root");
        r = recheck_root(root, pin, exposure_id, err);
        if (r < 0)
                return r;
        const char *name;
        _cleanup_free_ char *prel = parent_rel(e->rel, &name);
        if (!prel)
                return no_memory(err);
        _cleanup_close_ int pfd = exp_open_beneath(pin->fd, prel);
        struct exp_ident id;
        if (pfd < 0 || exp_fd_ident(pfd, &id) < 0 || !exp_ident_equal(&id, &g->parent))
                return changed(err, exposure_id, "the project's parent");
        _cleanup_close_ int fd = exp_open_beneath(pin->fd, e->rel);
        if (fd < 0 || exp_fd_ident(fd, &id) < 0 || !exp_ident_equal(&id, &g->source))
                return changed(err, exposure_id, "the project");
        struct statx stx;
        uint64_t mnt_id = 0;
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 &&
            (stx.stx_mask & STATX_MNT_ID))
                mnt_id = stx.stx_mnt_id;
        size_t n = strlen(root->path) + 1 + strlen(e->rel) + 1;
        out->path = malloc(n);
        if (!out->path)
                return no_memory(err);
        snprintf(out->path, n, "%s/%s", root->path, e->rel);
        r = no_mount_beneath(out->path, exposure_id, err);
        if (r < 0) {
                free(out->path);
                out->path = NULL;
                return r;
        }
        out->fd = TAKE_FD(fd);
        out->dev = (dev_t)g->source.dev;
        out->ino = (ino_t)g->source.ino;
        out->mnt_id = mnt_id;
        out->target_path = root->target_path;
        out->generation = g->generation;
        memcpy(out->scope_digest, g->scope_digest, sizeof(out->scope_digest));
        return 0;
}

void glove_exposure_source_close(struct glove_exposure_source *s) {
        if (!s)
                return;
        if (s->fd >= 0)
                close(s->fd);
        s->fd = -1;
        free(s->path);
        s->path = NULL;
}

/* ---- recovery ---- */

int glove_exposures_recover_parent(const struct glove_exposures *x, const char *exposure_id, int64_t generation,
                                   const char *scope_digest, const char *source_identity_digest,
                                   struct glove_exposure_parent *out, struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "exposure.unknown", "no output");
        memset(out, 0, sizeof(*out));
        out->parent_fd = -1;
        const struct exp_entry *e = x && exposure_id ? exp_find(x, exposure_id) : NULL;
        const struct exp_gen *g = find_gen(e, generation);
        if (!g)
                return glove_error_set(err, ENOENT, "exposure.unknown", "no exposure %s generation %lld",
                                       exposure_id ? exposure_id : "(null)", (long long)generation);
        if (!scope_digest || !source_identity_digest || strcmp(scope_digest, g->scope_digest) != 0 ||
            strcmp(source_identity_digest, g->source_digest) != 0)
                return glove_error_set(err, EINVAL, "exposure.digest_mismatch",
                                       "exposure %s generation %lld: the scope or source-identity digest differs "
                                       "from the journal's",
                                       exposure_id, (long long)generation);
        size_t idx;
        const struct glove_exposure_root *root = exp_policy_root(x, e->root_id, &idx);
        if (!root || x->pins[idx].fd < 0)
                return glove_error_set(err, ESTALE, "exposure.root_unavailable",
                                       "exposure %s: its root is not in the exposure policy or could not be "
                                       "opened at gloved start (glove init --list names it; gloved's log says why)",
                                       exposure_id);
        const struct exp_pin *pin = &x->pins[idx];
        if (!exp_ident_equal(&pin->ident, &g->root))
                return changed(err, exposure_id, "the root");
        int r = recheck_root(root, pin, exposure_id, err);
        if (r < 0)
                return r;
        const char *name;
        _cleanup_free_ char *prel = parent_rel(e->rel, &name);
        if (!prel)
                return no_memory(err);
        if (strlen(name) >= sizeof(out->name))
                return changed(err, exposure_id, "the project's name");
        _cleanup_close_ int pfd = exp_open_beneath(pin->fd, prel);
        struct exp_ident id;
        if (pfd < 0 || exp_fd_ident(pfd, &id) < 0 || !exp_ident_equal(&id, &g->parent))
                return changed(err, exposure_id, "the project's parent");
        struct stat st;
        out->source_matches = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
                              (int64_t)st.st_dev == g->source.dev && (int64_t)st.st_ino == g->source.ino;
        snprintf(out->name, sizeof(out->name), "%s", name);
        out->parent_fd = TAKE_FD(pfd);
        return 0;
}

int glove_exposures_source_identity_digest(const struct glove_exposures *x, const char *exposure_id,
                                           int64_t generation, char out[GLOVE_EXPOSURE_DIGEST_HEX_SIZE],
                                           struct glove_error *err) {
        const struct exp_entry *e = x && exposure_id ? exp_find(x, exposure_id) : NULL;
        const struct exp_gen *g = find_gen(e, generation);
        if (!g)
                return glove_error_set(err, ENOENT, "exposure.unknown", "no exposure %s generation %lld",
                                       exposure_id ? exposure_id : "(null)", (long long)generation);
        memcpy(out, g->source_digest, GLOVE_EXPOSURE_DIGEST_HEX_SIZE);
        return 0;
}

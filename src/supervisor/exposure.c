/* SPDX-License-Identifier: Apache-2.0 */
/* The exposure registry: pinned roots, the journal, enrollment, revocation,
 * expiry and the catalog (see glove/supervisor/exposure.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exposure_internal.h"
#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "internal.h"

/* ---- small helpers shared by the exposure files ---- */

struct exp_entry *exp_find(const struct glove_exposures *x, const char *id) {
        size_t lo = 0, hi = x->n_entries;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int cmp = strcmp(x->entries[mid].id, id);
                if (cmp == 0)
                        return &x->entries[mid];
                if (cmp < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

const struct glove_exposure_root *exp_policy_root(const struct glove_exposures *x, const char *root_id,
                                                  size_t *index) {
        for (size_t i = 0; i < x->policy->n_roots; i++)
                if (strcmp(x->policy->roots[i].root_id, root_id) == 0) {
                        if (index)
                                *index = i;
                        return &x->policy->roots[i];
                }
        return NULL;
}

enum exp_state exp_state_at(const struct exp_gen *g, int64_t now_ms) {
        if (g->state == EXP_LIVE && g->expires_at_ms <= now_ms)
                return EXP_EXPIRED;
        return g->state;
}

bool exp_label_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_EXPOSURE_LABEL_MAX || !glove_json_utf8_valid(s, n, NULL))
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)s[i];
                if (ch < 0x20 || ch == 0x7f)
                        return false;
                /* C1 controls U+0080..U+009F are 0xC2 0x80..0x9F. */
                if (ch == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] <= 0x9f)
                        return false;
        }
        return true;
}

bool exp_rel_valid(const char *rel) {
        size_t n = strlen(rel);
        if (n == 0 || n > PATH_MAX || rel[0] == '/')
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)rel[i] < 0x20 || rel[i] == 0x7f)
                        return false;
        for (const char *c = rel;;) {
                const char *end = strchr(c, '/');
                size_t len = end ? (size_t)(end - c) : strlen(c);
                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!end)
                        return true;
                c = end + 1;
        }
}

static const char *state_name(enum exp_state s) {
        return s == EXP_LIVE ? "live" : s == EXP_REVOKED ? "revoked" : "expired";
}

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "exposure.no_memory", "out of memory");
}

/* ---- views ---- */

static json_t *catalog_entry(const struct exp_entry *e, const struct exp_gen *g, int64_t now_ms) {
        return json_pack("{s:s,s:I,s:s,s:s,s:O,s:I,s:O,s:s}", "exposure_id", e->id, "generation",
                         (json_int_t)g->generation, "scope_digest", g->scope_digest, "label", g->label, "modes",
                         g->modes, "expires_at_ms", (json_int_t)g->expires_at_ms, "runtime_template_ids",
                         g->runtimes, "state", state_name(exp_state_at(g, now_ms)));
}

static json_t *owner_entry(const struct glove_exposures *x, const struct exp_entry *e, const struct exp_gen *g,
                           int64_t now_ms) {
        json_t *o = catalog_entry(e, g, now_ms);
        if (!o)
                return NULL;
        const struct glove_exposure_root *root = exp_policy_root(x, e->root_id, NULL);
        json_t *path = json_null();
        if (root) {
                size_t n = strlen(root->path) + 1 + strlen(e->rel) + 1;
                _cleanup_free_ char *abs = malloc(n);
                if (abs) {
                        snprintf(abs, n, "%s/%s", root->path, e->rel);
                        path = json_string(abs);
                } else {
                        path = NULL;
                }
        }
        if (!path || json_object_set_new(o, "path", path) < 0 ||
            json_object_set_new(o, "root_id", json_string(e->root_id)) < 0 ||
            json_object_set_new(o, "created_at_ms", json_integer(g->created_at_ms)) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static json_t *view(const struct glove_exposures *x, int64_t now_ms, bool owner) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < x->n_entries; i++) {
                const struct exp_entry *e = &x->entries[i];
                const struct exp_gen *g = &e->gens[e->n_gens - 1];
                json_t *o = owner ? owner_entry(x, e, g, now_ms) : catalog_entry(e, g, now_ms);
                if (!o || json_array_append_new(arr, o) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr ? json_pack("{s:o}", "exposures", arr) : NULL;
}

json_t *glove_exposures_catalog(const struct glove_exposures *x, int64_t now_ms) {
        return x ? view(x, now_ms, false) : NULL;
}

json_t *glove_exposures_list(const struct glove_exposures *x, int64_t now_ms) {
        return x ? view(x, now_ms, true) : NULL;
}

/* ---- open and close ---- */

static int replay_record(void *userdata, uint64_t seq, const void *payload, size_t len,
                         const uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)tag;
        return exp_apply_record(userdata, seq, payload, len, err);
}

void glove_exposures_close(struct glove_exposures *x) {
        if (!x)
                return;
        for (size_t i = 0; x->pins && i < x->policy->n_roots; i++)
                if (x->pins[i].fd >= 0)
                        close(x->pins[i].fd);
        free(x->pins);
        glove_store_journal_close(x->journal);
        exp_entries_free(x);
        free(x);
}

int glove_exposures_open(const struct glove_exposures_options *opts, int64_t now_ms, struct glove_exposures **out,
                         struct glove_error *err) {
        if (!out || !opts || !opts->policy || !opts->journal_path)
                return glove_error_set(err, EINVAL, "journal.parent_insecure",
                                       "the exposure registry needs a policy and an absolute journal path");
        *out = NULL;
        struct glove_exposures *x = calloc(1, sizeof(*x));
        if (!x)
                return no_memory(err);
        x->policy = opts->policy;
        x->restricted = opts->restricted;
        x->pins = calloc(opts->policy->n_roots ? opts->policy->n_roots : 1, sizeof(*x->pins));
        if (!x->pins) {
                free(x);
                return no_memory(err);
        }
        for (size_t i = 0; i < opts->policy->n_roots; i++) {
                int fd = exp_open_root(opts->policy->roots[i].path);
                if (fd >= 0 && exp_fd_ident(fd, &x->pins[i].ident) < 0) {
                        close(fd);
                        fd = -1;
                }
                x->pins[i].fd = fd;
        }
        struct glove_store_journal_open_options jo = {
                .path = opts->journal_path,
                .owner = opts->owner,
                .recover_torn_tail = false,
        };
        int r = glove_store_journal_open(&exp_journal_format, &jo, replay_record, x, &x->journal, NULL, err);
        if (r >= 0)
                r = glove_exposures_expire_due(x, now_ms, err);
        if (r < 0) {
                glove_exposures_close(x);
                return r;
        }
        *out = x;
        return 0;
}

/* ---- expiry and revocation ---- */

static int64_t record_time(const struct glove_exposures *x, int64_t now_ms) {
        return now_ms > x->last_ms ? now_ms : x->last_ms;
}

int glove_exposures_expire_due(struct glove_exposures *x, int64_t now_ms, struct glove_error *err) {
        if (!x)
                return glove_error_set(err, EINVAL, "exposure.unknown", "no registry");
        int n = 0;
        for (size_t i = 0; i < x->n_entries; i++) {
                struct exp_entry *e = &x->entries[i];
                struct exp_gen *g = &e->gens[e->n_gens - 1];
                if (g->state != EXP_LIVE || g->expires_at_ms > now_ms)
                        continue;
                _cleanup_json_ json_t *rec = exp_state_record("expire", e->id, g->generation, record_time(x, now_ms));
                int r = exp_append(x, rec, err);
                if (r < 0)
                        return r;
                n++;
        }
        return n;
}

int glove_exposures_revoke(struct glove_exposures *x, const char *exposure_id, int64_t generation, int64_t now_ms,
                           json_t **result, struct glove_error *err) {
        if (result)
                *result = NULL;
        struct exp_entry *e = x && exposure_id ? exp_find(x, exposure_id) : NULL;
        if (!e)
                return glove_error_set(err, ENOENT, "exposure.unknown", "no exposure %s; glove init --list shows them",
                                       exposure_id ? exposure_id : "(null)");
        struct exp_gen *g = &e->gens[e->n_gens - 1];
        if (generation != 0 && generation != g->generation) {
                if (generation > 0 && generation < g->generation)
                        return glove_error_set(err, ESTALE, "exposure.superseded",
                                               "%s generation %lld was superseded by generation %lld", exposure_id,
                                               (long long)generation, (long long)g->generation);
                return glove_error_set(err, ENOENT, "exposure.unknown", "no exposure %s generation %lld",
                                       exposure_id, (long long)generation);
        }
        enum exp_state st = exp_state_at(g, now_ms);
        if (st == EXP_REVOKED)
                return glove_error_set(err, EKEYREVOKED, "exposure.revoked", "%s generation %lld is already revoked",
                                       exposure_id, (long long)g->generation);
        if (st == EXP_EXPIRED)
                return glove_error_set(err, EKEYEXPIRED, "exposure.expired", "%s generation %lld has already expired",
                                       exposure_id, (long long)g->generation);
        _cleanup_json_ json_t *rec = exp_state_record("revoke", e->id, g->generation, record_time(x, now_ms));
        int r = exp_append(x, rec, err);
        if (r < 0)
                return r;
        e = exp_find(x, exposure_id);
        if (result) {
                *result = catalog_entry(e, &e->gens[e->n_gens - 1], now_ms);
                if (!*result)
                        return no_memory(err);
        }
        return 0;
}

/* ---- enrollment ---- */

/* The request's label, or the project's last component cut to the bound
 * at a character boundary, into buf. */
static int pick_label(const struct glove_exposure_request *req, char buf[GLOVE_EXPOSURE_LABEL_MAX + 1],
                      struct glove_error *err) {
        if (req->label) {
                if (!exp_label_valid(req->label))
                        return glove_error_set(err, EINVAL, "exposure.invalid_label",
                                               "the label must be 1..%d bytes of UTF-8 without control characters",
                                               GLOVE_EXPOSURE_LABEL_MAX);
                snprintf(buf, GLOVE_EXPOSURE_LABEL_MAX + 1, "%s", req->label);
                return 0;
        }
        const char *last = strrchr(req->path, '/') + 1;
        size_t n = strlen(last);
        if (n > GLOVE_EXPOSURE_LABEL_MAX) {
                n = GLOVE_EXPOSURE_LABEL_MAX;
                while (n > 0 && ((unsigned char)last[n] & 0xc0) == 0x80)
                        n--;
        }
        memcpy(buf, last, n);
        buf[n] = '\0';
        if (!exp_label_valid(buf))
                return glove_error_set(err, EINVAL, "exposure.invalid_label",
                                       "the project's name is not a valid label (control characters or invalid "
                                       "UTF-8); give one with --label");
        return 0;
}

static int check_restricted(const struct glove_exposures *x, const char *path, const char *root_path,
                            struct glove_error *err) {
        for (size_t i = 0; x->restricted && x->restricted[i]; i++) {
                const char *r = x->restricted[i];
                if (sv_paths_overlap(path, r) || glove_path_is_beneath(root_path, r))
                        return glove_error_set(err, EPERM, "exposure.restricted",
                                               "%s overlaps a directory of gloved itself (%s); choose a project "
                                               "outside gloved's runtime, state and working directories",
                                               path, r);
        }
        return 0;
}

static int open_error(int e, const char *path, struct glove_error *err) {
        switch (e) {
        case ELOOP:
                return glove_error_set(err, ELOOP, "exposure.symlink",
                                       "%s: a component beneath the root is a symbolic link; name the real directory",
                                       path);
        case EXDEV:
                return glove_error_set(err, EXDEV, "exposure.cross_device",
                                       "%s: the project is on another mount than its root", path);
        case ENOENT:
                return glove_error_set(err, ENOENT, "exposure.missing", "%s: does not exist", path);
        case ENOTDIR:
                return glove_error_set(err, ENOTDIR, "exposure.not_directory", "%s: is not a directory", path);
        default:
                return glove_error_set(err, e, "exposure.root_unavailable", "%s: cannot be opened beneath its root: %s",
                                       path, glove_errno_text(e));
        }
}

/* The modes and runtime ids the request selects from the root, as JSON
 * arrays in the root's order. */
static int select_scope(const struct glove_exposure_root *root, const struct glove_exposure_request *req,
                        json_t **modes, json_t **runtimes, struct glove_error *err) {
        bool pick[GLOVE_EXPOSURE_MAX_MODES] = { 0 }, rpick[GLOVE_EXPOSURE_MAX_RUNTIMES] = { 0 };
        for (size_t k = 0; req->modes && req->modes[k]; k++) {
                bool found = false;
                for (size_t i = 0; i < root->n_modes; i++)
                        if (strcmp(root->modes[i].access, req->modes[k]) == 0)
                                pick[i] = found = true;
                if (!found)
                        return glove_error_set(err, EINVAL, "exposure.mode_not_allowed",
                                               "root %s does not allow access %s", root->root_id, req->modes[k]);
        }
        for (size_t k = 0; req->runtime_template_ids && req->runtime_template_ids[k]; k++) {
                bool found = false;
                for (size_t i = 0; i < root->n_runtimes; i++)
                        if (strcmp(root->runtime_template_ids[i], req->runtime_template_ids[k]) == 0)
                                rpick[i] = found = true;
                if (!found)
                        return glove_error_set(err, EINVAL, "exposure.runtime_not_allowed",
                                               "root %s does not allow runtime template %s", root->root_id,
                                               req->runtime_template_ids[k]);
        }
        if (req->modes && !req->modes[0])
                return glove_error_set(err, EINVAL, "exposure.mode_not_allowed", "at least one mode is required");
        if (req->runtime_template_ids && !req->runtime_template_ids[0])
                return glove_error_set(err, EINVAL, "exposure.runtime_not_allowed",
                                       "at least one runtime template is required");
        *modes = json_array();
        *runtimes = json_array();
        if (!*modes || !*runtimes)
                return no_memory(err);
        for (size_t i = 0; i < root->n_modes; i++) {
                const struct glove_exposure_mode *m = &root->modes[i];
                if ((req->modes && !pick[i]) ||
                    json_array_append_new(*modes, json_pack("{s:s,s:s,s:s,s:I}", "access", m->access,
                                                            "cleanup_policy", m->cleanup_policy, "materialization",
                                                            m->materialization, "max_bytes",
                                                            (json_int_t)m->max_bytes)) == 0)
                        continue;
                return no_memory(err);
        }
        for (size_t i = 0; i < root->n_runtimes; i++)
                if ((!req->runtime_template_ids || rpick[i]) &&
                    json_array_append_new(*runtimes, json_string(root->runtime_template_ids[i])) < 0)
                        return no_memory(err);
        return 0;
}

static int random_hex(char *out, size_t bytes, struct glove_error *err) {
        uint8_t buf[32];
        int r = glove_digest_random(buf, bytes, err);
        if (r < 0)
                return r;
        return glove_digest_hex_encode(buf, bytes, out, bytes * 2 + 1);
}

static void gen_clear(struct exp_gen *g) {
        json_decref(g->modes);
        json_decref(g->runtimes);
        g->modes = g->runtimes = NULL;
}

int glove_exposures_create(struct glove_exposures *x, const struct glove_exposure_request *req, int64_t now_ms,
                           json_t **result, struct glove_error *err) {
        if (result)
                *result = NULL;
        if (!x || !req || !req->path)
                return glove_error_set(err, EINVAL, "exposure.not_absolute", "no project path");
        const char *path = req->path;
        _cleanup_free_ char *norm = NULL;
        struct glove_error perr = { 0 };
        int r = path[0] == '/' ? glove_path_normalize(path, "/", &norm, &perr) : -EINVAL;
        if (r == -ENOMEM)
                return no_memory(err);
        if (r < 0 || strcmp(norm, path) != 0 || strcmp(path, "/") == 0 || strlen(path) > PATH_MAX)
                return glove_error_set(err, EINVAL, "exposure.not_absolute",
                                       "%s: the project must be an absolute, normalized path (no \"//\", \".\", "
                                       "\"..\" or trailing \"/\")",
                                       path);
        /* The root the project is strictly beneath, longest match. */
        const struct glove_exposure_root *root = NULL;
        size_t idx = 0;
        for (size_t i = 0; i < x->policy->n_roots; i++) {
                const struct glove_exposure_root *c = &x->policy->roots[i];
                if (strcmp(c->path, path) == 0)
                        return glove_error_set(err, EINVAL, "exposure.is_root",
                                               "%s is root %s itself; enroll a directory beneath it", path,
                                               c->root_id);
                if (glove_path_is_beneath(path, c->path) && (!root || strlen(c->path) > strlen(root->path))) {
                        root = c;
                        idx = i;
                }
        }
        if (!root)
                return glove_error_set(err, EPERM, "exposure.outside_roots",
                                       "%s is beneath no root of the exposure policy; glove setup --path-root adds "
                                       "one",
                                       path);
        r = check_restricted(x, path, root->path, err);
        if (r < 0)
                return r;
        const struct exp_pin *pin = &x->pins[idx];
        if (pin->fd < 0)
                return glove_error_set(err, ESTALE, "exposure.root_unavailable",
                                       "root %s (%s) could not be opened when gloved started; restart gloved once "
                                       "it exists",
                                       root->root_id, root->path);
        {
                _cleanup_close_ int again = exp_open_root(root->path);
                struct exp_ident now;
                if (again < 0 || exp_fd_ident(again, &now) < 0 || !exp_ident_equal(&now, &pin->ident))
                        return glove_error_set(err, ESTALE, "exposure.root_unavailable",
                                               "root %s (%s) is no longer the directory pinned at gloved start; "
                                               "restart gloved",
                                               root->root_id, root->path);
        }
        const char *rel = path + strlen(root->path) + 1;

        /* The exposure id this project has, and whether it is live. */
        struct exp_entry *prev = NULL;
        for (size_t i = 0; i < x->n_entries && !prev; i++)
                if (strcmp(x->entries[i].root_id, root->root_id) == 0 && strcmp(x->entries[i].rel, rel) == 0)
                        prev = &x->entries[i];
        bool expire_first = false;
        if (prev) {
                const struct exp_gen *last = &prev->gens[prev->n_gens - 1];
                if (exp_state_at(last, now_ms) == EXP_LIVE)
                        return glove_error_set(err, EEXIST, "exposure.live",
                                               "%s already has a live exposure %s (generation %lld); revoke it first",
                                               path, prev->id, (long long)last->generation);
                expire_first = last->state == EXP_LIVE;
        } else if (x->n_entries >= GLOVE_EXPOSURE_MAX) {
                return glove_error_set(err, ENOSPC, "exposure.too_many", "the journal already holds %d exposure ids",
                                       GLOVE_EXPOSURE_MAX);
        }
        int64_t ttl = req->ttl_secs ? req->ttl_secs : root->max_ttl_secs;
        if (ttl < 1 || ttl > root->max_ttl_secs)
                return glove_error_set(err, EINVAL, "exposure.ttl_exceeded",
                                       "ttl %lld s is not within 1..%lld s, root %s's max_ttl_secs",
                                       (long long)req->ttl_secs, (long long)root->max_ttl_secs, root->root_id);
        struct exp_gen g = { 0 };
        char label[GLOVE_EXPOSURE_LABEL_MAX + 1];
        r = pick_label(req, label, err);
        if (r >= 0)
                r = select_scope(root, req, &g.modes, &g.runtimes, err);
        if (r < 0) {
                gen_clear(&g);
                return r;
        }

        /* Open the project and its parent beneath the pinned root. */
        const char *slash = strrchr(rel, '/');
        _cleanup_free_ char *prel = slash ? strndup(rel, (size_t)(slash - rel)) : strdup(".");
        if (!prel) {
                gen_clear(&g);
                return no_memory(err);
        }
        _cleanup_close_ int pfd = exp_open_beneath(pin->fd, prel);
        _cleanup_close_ int sfd = pfd < 0 ? pfd : exp_open_beneath(pin->fd, rel);
        if (sfd < 0) {
                gen_clear(&g);
                return open_error(-sfd, path, err);
        }
        r = exp_fd_ident(pfd, &g.parent);
        if (r >= 0)
                r = exp_fd_ident(sfd, &g.source);
        if (r < 0) {
                gen_clear(&g);
                return glove_error_set(err, -r, "exposure.root_unavailable", "%s: fstat: %s", path, glove_errno_text(-r));
        }
        g.root = pin->ident;
        /* The restricted directories by identity too (a link elsewhere may name them). */
        for (size_t i = 0; x->restricted && x->restricted[i]; i++) {
                struct stat st;
                if (stat(x->restricted[i], &st) == 0 && (int64_t)st.st_dev == g.source.dev &&
                    (int64_t)st.st_ino == g.source.ino) {
                        gen_clear(&g);
                        return glove_error_set(err, EPERM, "exposure.restricted",
                                               "%s is a directory of gloved itself (%s)", path, x->restricted[i]);
                }
        }

        /* Identity of the new generation. */
        struct exp_entry tmp = { .root_id = (char *)root->root_id, .rel = (char *)rel };
        g.generation = prev ? prev->gens[prev->n_gens - 1].generation + 1 : 1;
        r = random_hex(g.nonce, 32, err);
        if (r >= 0 && prev) {
                snprintf(tmp.id, sizeof(tmp.id), "%s", prev->id);
        } else {
                char hex[33];
                do {
                        r = random_hex(hex, 16, err);
                        snprintf(tmp.id, sizeof(tmp.id), "exp-%s", hex);
                } while (r >= 0 && exp_find(x, tmp.id));
        }
        int64_t t = record_time(x, now_ms);
        g.created_at_ms = t;
        g.expires_at_ms = t + ttl * 1000;
        g.label = label;
        if (r >= 0)
                r = exp_source_digest(g.nonce, &g.parent, &g.source, g.source_digest, err);
        if (r >= 0)
                r = exp_scope_digest(tmp.id, g.generation, g.nonce, root->root_id, rel, g.modes, g.runtimes,
                                     g.expires_at_ms, g.source_digest, g.scope_digest, err);
        _cleanup_json_ json_t *rec = r >= 0 ? exp_create_record(&tmp, &g) : NULL;
        gen_clear(&g);
        if (r < 0)
                return r;
        if (!rec)
                return no_memory(err);
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        r = glove_json_encode_canonical(rec, &bytes, &len, err);
        if (r < 0)
                return r;
        if (len > GLOVE_EXPOSURE_JOURNAL_RECORD_MAX)
                return glove_error_set(err, EMSGSIZE, "journal.bad_length",
                                       "the enrollment record would be %zu bytes, over the %d-byte bound; use a "
                                       "shorter path or fewer runtime templates",
                                       len, GLOVE_EXPOSURE_JOURNAL_RECORD_MAX);
        if (!glove_store_journal_has_room(x->journal, len) ||
            (expire_first && !glove_store_journal_has_room(x->journal, 2 * len)))
                return glove_error_set(err, ENOSPC, "journal.full",
                                       "the exposure journal is full; move it aside to start again");
        if (expire_first) {
                const struct exp_gen *last = &prev->gens[prev->n_gens - 1];
                _cleanup_json_ json_t *ex = exp_state_record("expire", prev->id, last->generation, t);
                r = exp_append(x, ex, err);
                if (r < 0)
                        return r;
        }
        r = exp_append(x, rec, err);
        if (r < 0)
                return r;
        if (result) {
                const struct exp_entry *e = exp_find(x, tmp.id);
                *result = owner_entry(x, e, &e->gens[e->n_gens - 1], now_ms);
                if (!*result)
                        return no_memory(err);
        }
        return 0;
}

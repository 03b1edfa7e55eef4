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

/* The code points of Unicode's format category (Cf, Unicode 15.1) and the
 * line and paragraph separators (Zl, Zp), as inclusive ranges: invisible
 * or reordering characters a label may not carry at enrollment, so what
 * the owner reads in a catalog is what a controller reads. */
static const uint32_t format_chars[][2] = {
        { 0x00ad, 0x00ad },   { 0x0600, 0x0605 },   { 0x061c, 0x061c },   { 0x06dd, 0x06dd },
        { 0x070f, 0x070f },   { 0x0890, 0x0891 },   { 0x08e2, 0x08e2 },   { 0x180e, 0x180e },
        { 0x200b, 0x200f },   { 0x2028, 0x202e },   { 0x2060, 0x2064 },   { 0x2066, 0x206f },
        { 0xfeff, 0xfeff },   { 0xfff9, 0xfffb },   { 0x110bd, 0x110bd }, { 0x110cd, 0x110cd },
        { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 }, { 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 },
        { 0xe0020, 0xe007f },
};

/* s is valid UTF-8 (checked first by exp_label_valid). */
static bool has_format_char(const char *s) {
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                uint32_t c;
                if (p[0] < 0x80) {
                        c = p[0];
                        p += 1;
                } else if (p[0] < 0xe0) {
                        c = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
                        p += 2;
                } else if (p[0] < 0xf0) {
                        c = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
                        p += 3;
                } else {
                        c = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
                            (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
                        p += 4;
                }
                for (size_t i = 0; i < sizeof(format_chars) / sizeof(format_chars[0]); i++)
                        if (c >= format_chars[i][0] && c <= format_chars[i][1])
                                return true;
        }
        return false;
}

bool exp_label_acceptable(const char *s) {
        return exp_label_valid(s) && !has_format_char(s);
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

/* ---- the effective exposure ---- */

void exp_effective_clear(struct exp_effective *f) {
        json_decref(f->modes);
        json_decref(f->runtimes);
        f->modes = f->runtimes = NULL;
}

int exp_effective_get(const struct glove_exposures *x, const struct exp_entry *e, const struct exp_gen *g,
                      struct exp_effective *f) {
        memset(f, 0, sizeof(*f));
        size_t idx = 0;
        f->root = exp_policy_root(x, e->root_id, &idx);
        f->expires_at_ms = g->expires_at_ms;
        f->modes = json_array();
        f->runtimes = json_array();
        if (!f->modes || !f->runtimes) {
                exp_effective_clear(f);
                return -ENOMEM;
        }
        if (!f->root)
                return 0;
        const struct glove_exposure_root *root = f->root;
        if (g->created_at_ms <= INT64_MAX - root->max_ttl_secs * 1000 &&
            g->created_at_ms + root->max_ttl_secs * 1000 < f->expires_at_ms)
                f->expires_at_ms = g->created_at_ms + root->max_ttl_secs * 1000;
        /* A root not pinned at start, or pinned as another directory than
         * the one this generation was enrolled under, allows nothing (as a
         * root that left the policy): every use is refused, and the
         * catalog shows no modes. */
        if (x->pins[idx].fd < 0 || !exp_ident_equal(&x->pins[idx].ident, &g->root))
                return 0;
        size_t i;
        const json_t *m, *v;
        json_array_foreach(g->modes, i, m) {
                const char *a = json_string_value(json_object_get(m, "access"));
                const char *mat = json_string_value(json_object_get(m, "materialization"));
                const char *cl = json_string_value(json_object_get(m, "cleanup_policy"));
                int64_t max = json_integer_value(json_object_get(m, "max_bytes"));
                for (size_t k = 0; k < root->n_modes; k++) {
                        const struct glove_exposure_mode *pm = &root->modes[k];
                        if (strcmp(pm->access, a) != 0 || strcmp(pm->materialization, mat) != 0 ||
                            strcmp(pm->cleanup_policy, cl) != 0)
                                continue;
                        if (json_array_append_new(f->modes,
                                                  json_pack("{s:s,s:s,s:s,s:I}", "access", a, "cleanup_policy", cl,
                                                            "materialization", mat, "max_bytes",
                                                            (json_int_t)(pm->max_bytes < max ? pm->max_bytes : max))) <
                            0) {
                                exp_effective_clear(f);
                                return -ENOMEM;
                        }
                }
        }
        json_array_foreach(g->runtimes, i, v) {
                for (size_t k = 0; k < root->n_runtimes; k++)
                        if (strcmp(root->runtime_template_ids[k], json_string_value(v)) == 0 &&
                            json_array_append_new(f->runtimes, json_string(root->runtime_template_ids[k])) < 0) {
                                exp_effective_clear(f);
                                return -ENOMEM;
                        }
        }
        return 0;
}

enum exp_state exp_effective_state(const struct exp_gen *g, const struct exp_effective *f, int64_t now_ms) {
        if (g->state == EXP_LIVE && f->expires_at_ms <= now_ms)
                return EXP_EXPIRED;
        return g->state;
}

/* ---- views ---- */

/* The catalog entry of generation g of e: its effective exposure. */
static json_t *catalog_entry(const struct glove_exposures *x, const struct exp_entry *e, const struct exp_gen *g,
                             int64_t now_ms) {
        struct exp_effective f;
        if (exp_effective_get(x, e, g, &f) < 0)
                return NULL;
        json_t *o = json_pack("{s:s,s:I,s:s,s:s,s:O,s:I,s:O,s:s}", "exposure_id", e->id, "generation",
                              (json_int_t)g->generation, "scope_digest", g->scope_digest, "label", g->label, "modes",
                              f.modes, "expires_at_ms", (json_int_t)f.expires_at_ms, "runtime_template_ids",
                              f.runtimes, "state", state_name(exp_effective_state(g, &f, now_ms)));
        exp_effective_clear(&f);
        return o;
}

static json_t *owner_entry(const struct glove_exposures *x, const struct exp_entry *e, const struct exp_gen *g,
                           int64_t now_ms) {
        json_t *o = catalog_entry(x, e, g, now_ms);
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
                json_t *o = owner ? owner_entry(x, e, g, now_ms) : catalog_entry(x, e, g, now_ms);
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

/* Why a root could not be pinned, from exp_open_root's errno. ELOOP: with
 * RESOLVE_NO_SYMLINKS the root or a directory above it is a link. */
static const char *pin_problem(int e) {
        switch (e) {
        case ENOENT:
                return "missing";
        case ELOOP:
                return "a symbolic link (the root or a directory above it)";
        case ENOTDIR:
                return "not a directory";
        default:
                return glove_errno_text(e);
        }
}

const char *glove_exposures_root_problem(const struct glove_exposures *x, size_t i) {
        if (!x || i >= x->policy->n_roots || x->pins[i].fd >= 0)
                return NULL;
        return x->pins[i].problem;
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
                struct exp_pin *pin = &x->pins[i];
                int fd = exp_open_root(opts->policy->roots[i].path);
                int r = fd;
                if (fd >= 0 && (r = exp_fd_ident(fd, &pin->ident)) < 0) {
                        close(fd);
                        fd = -1;
                }
                /* The rule glove setup --path-root applies: the owner's
                 * directory, not writable by group or others (who could
                 * otherwise arrange what lies beneath it). */
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) == 0 && (st.st_uid != opts->owner || (st.st_mode & 022))) {
                        close(fd);
                        fd = -1;
                        if (st.st_uid != opts->owner)
                                snprintf(pin->problem, sizeof(pin->problem), "owned by uid %u, not by gloved's uid %u",
                                         (unsigned)st.st_uid, (unsigned)opts->owner);
                        else
                                snprintf(pin->problem, sizeof(pin->problem),
                                         "writable by group or others (mode %04o); chmod go-w it",
                                         (unsigned)(st.st_mode & 07777));
                }
                pin->fd = fd;
                if (fd < 0 && !pin->problem[0])
                        snprintf(pin->problem, sizeof(pin->problem), "%s", pin_problem(-r));
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
        /* By the recorded expiry: one past only its effective expiry (a
         * narrowed root) can still be revoked for good. */
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
                *result = catalog_entry(x, e, &e->gens[e->n_gens - 1], now_ms);
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
                if (!exp_label_acceptable(req->label))
                        return glove_error_set(err, EINVAL, "exposure.invalid_label",
                                               "the label must be 1..%d bytes of UTF-8 without control characters "
                                               "or Unicode bidirectional and format controls",
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
        if (!exp_label_acceptable(buf))
                return glove_error_set(err, EINVAL, "exposure.invalid_label",
                                       "the project's name is not a valid label (control characters, Unicode "
                                       "bidirectional or format controls, or invalid UTF-8); give one with --label");
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

/* journal.full for a create: what the journal holds and what to do. */
static int journal_full(const struct glove_exposures *x, size_t live, struct glove_error *err) {
        return glove_error_set(err, ENOSPC, "journal.full",
                               "the exposure journal holds %llu of %d records and %llu of %llu bytes; it keeps room "
                               "to revoke or expire each of its %zu live exposures, so it takes no new enrollment "
                               "(revoke and expiry still work). There is no compaction: to enroll again, stop "
                               "gloved and move the journal and its .seal aside, which forgets every exposure",
                               (unsigned long long)glove_store_journal_records(x->journal),
                               GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS,
                               (unsigned long long)glove_store_journal_size(x->journal),
                               (unsigned long long)GLOVE_EXPOSURE_JOURNAL_MAX_BYTES, live);
}

/* Whether the journal has room for the create record (create_len bytes),
 * the state record that ends prev's live generation first (prev_len bytes,
 * 0: none), and after them one revoke-or-expire record of the largest size
 * for every live generation, the new one included: so revocation and
 * expiry always fit. *live receives that count. */
static bool room_after_create(const struct glove_exposures *x, const struct exp_entry *prev, size_t prev_len,
                              size_t create_len, size_t state_max, size_t *live) {
        size_t n = 1;
        for (size_t i = 0; i < x->n_entries; i++) {
                const struct exp_entry *e = &x->entries[i];
                if (e->gens[e->n_gens - 1].state == EXP_LIVE && !(prev_len && e == prev))
                        n++;
        }
        *live = n - 1;
        uint64_t records = glove_store_journal_records(x->journal) + (prev_len ? 1 : 0) + 1 + n;
        uint64_t bytes = glove_store_journal_size(x->journal) + create_len + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD +
                         (prev_len ? prev_len + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD : 0) +
                         (uint64_t)n * (state_max + GLOVE_STORE_JOURNAL_RECORD_OVERHEAD);
        return glove_store_journal_has_room(x->journal, create_len) && records <= GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS &&
               bytes <= GLOVE_EXPOSURE_JOURNAL_MAX_BYTES;
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
        for (const char *c = path; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                        return glove_error_set(err, EINVAL, "exposure.path_invalid",
                                               "the project path has a control character (byte 0x%02x at offset "
                                               "%zu); rename the directory to enroll it",
                                               (unsigned char)*c, (size_t)(c - path));
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
        /* The request's own choices come before the project's state, so a
         * bad mode on a live project reports the mode. */
        int64_t ttl = req->ttl_secs ? req->ttl_secs : root->max_ttl_secs;
        if (ttl < 1 || ttl > root->max_ttl_secs)
                return glove_error_set(err, EINVAL, "exposure.ttl_exceeded",
                                       "ttl %lld s is not within 1..%lld s, root %s's max_ttl_secs",
                                       (long long)req->ttl_secs, (long long)root->max_ttl_secs, root->root_id);
        struct exp_gen g = { 0 };
        char label[GLOVE_EXPOSURE_LABEL_MAX + 1];
        r = select_scope(root, req, &g.modes, &g.runtimes, err);
        if (r >= 0)
                r = pick_label(req, label, err);
        if (r < 0) {
                gen_clear(&g);
                return r;
        }
        const struct exp_pin *pin = &x->pins[idx];
        if (pin->fd < 0) {
                gen_clear(&g);
                return glove_error_set(err, ESTALE, "exposure.root_unavailable",
                                       "root %s (%s) could not be pinned when gloved started (%s); make it a "
                                       "real directory of gloved's user, not writable by group or others, with "
                                       "no symbolic link on its path, or change the exposure "
                                       "policy, then restart gloved",
                                       root->root_id, root->path, pin->problem);
        }
        {
                _cleanup_close_ int again = exp_open_root(root->path);
                struct exp_ident now;
                if (again < 0 || exp_fd_ident(again, &now) < 0 || !exp_ident_equal(&now, &pin->ident)) {
                        gen_clear(&g);
                        return glove_error_set(err, ESTALE, "exposure.root_unavailable",
                                               "root %s (%s) is no longer the directory pinned at gloved start; "
                                               "restart gloved",
                                               root->root_id, root->path);
                }
        }
        const char *rel = path + strlen(root->path) + 1;

        /* The exposure id this project has, and whether it is live. */
        struct exp_entry *prev = NULL;
        for (size_t i = 0; i < x->n_entries && !prev; i++)
                if (strcmp(x->entries[i].root_id, root->root_id) == 0 && strcmp(x->entries[i].rel, rel) == 0)
                        prev = &x->entries[i];
        /* The record that ends prev's generation first when the journal
         * still has it live: "expire" once its recorded expiry passed, else
         * "revoke" (only its effective expiry, under a narrowed root, has). */
        const char *end_type = NULL;
        if (prev) {
                const struct exp_gen *last = &prev->gens[prev->n_gens - 1];
                struct exp_effective f;
                if (exp_effective_get(x, prev, last, &f) < 0) {
                        gen_clear(&g);
                        return no_memory(err);
                }
                enum exp_state st = exp_effective_state(last, &f, now_ms);
                exp_effective_clear(&f);
                if (st == EXP_LIVE) {
                        gen_clear(&g);
                        return glove_error_set(err, EEXIST, "exposure.live",
                                               "%s already has a live exposure %s (generation %lld); revoke it first",
                                               path, prev->id, (long long)last->generation);
                }
                if (last->state == EXP_LIVE)
                        end_type = last->expires_at_ms <= record_time(x, now_ms) ? "expire" : "revoke";
        } else if (x->n_entries >= GLOVE_EXPOSURE_MAX) {
                gen_clear(&g);
                return glove_error_set(err, ENOSPC, "exposure.too_many",
                                       "the journal already holds %d exposure ids, the most it takes; an id belongs "
                                       "to its project for good (revoking frees none), so only projects enrolled "
                                       "before can be enrolled again. To start over, stop gloved and move the "
                                       "journal and its .seal aside, which forgets every exposure",
                                       GLOVE_EXPOSURE_MAX);
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
        if (t < 0 || t > EXP_TIME_MAX_MS) {
                gen_clear(&g);
                return glove_error_set(err, ERANGE, "exposure.clock",
                                       "the clock reads %lld ms since the epoch, outside what the journal records; "
                                       "fix the system clock",
                                       (long long)t);
        }
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
        size_t state_max = exp_state_record_max(), live = 0;
        if (state_max == 0)
                return no_memory(err);
        if (!room_after_create(x, prev, end_type ? state_max : 0, len, state_max, &live))
                return journal_full(x, live, err);
        _cleanup_json_ json_t *ex = NULL;
        if (end_type) {
                const struct exp_gen *last = &prev->gens[prev->n_gens - 1];
                if (!(ex = exp_state_record(end_type, prev->id, last->generation, t)))
                        return no_memory(err);
        }
        r = exp_append_pair(x, ex, rec, err);
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

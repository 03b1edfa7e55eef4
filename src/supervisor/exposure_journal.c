/* SPDX-License-Identifier: Apache-2.0 */
/* The exposure journal: its format on the generic journal layer, the two
 * digests, the records and their strict replay (see
 * glove/supervisor/exposure.h, "The exposure journal"). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exposure_internal.h"
#include "glove/base/bytes.h"
#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "internal.h"

#define RECORD_DOMAIN "glove.exposure.record.v1"
#define GENESIS_DOMAIN "glove.exposure.genesis.v1"

/* ---- the format ---- */

static int exp_chain(void *ctx, const uint8_t prev[GLOVE_STORE_JOURNAL_TAG_LEN], uint64_t seq, const void *payload,
                     size_t len, uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_chain_sha256(RECORD_DOMAIN, prev, seq, payload, len, out, err);
}

static int exp_genesis(void *ctx, const uint8_t header[GLOVE_STORE_JOURNAL_HEADER_LEN],
                       uint8_t out[GLOVE_STORE_JOURNAL_TAG_LEN], struct glove_error *err) {
        (void)ctx;
        return glove_store_journal_genesis_sha256(GENESIS_DOMAIN, header, out, err);
}

const struct glove_store_journal_format exp_journal_format = {
        .magic = { 'G', 'L', 'V', 'E', 'X', 'P', 'O', '1' },
        .version = 1,
        .max_payload = GLOVE_EXPOSURE_JOURNAL_RECORD_MAX,
        .max_records = GLOVE_EXPOSURE_JOURNAL_MAX_RECORDS,
        .max_bytes = GLOVE_EXPOSURE_JOURNAL_MAX_BYTES,
        .chain = exp_chain,
        .genesis = exp_genesis,
};

/* ---- digests ---- */

static json_t *ident_json(const struct exp_ident *id) {
        return json_pack("{s:I,s:I}", "dev", (json_int_t)id->dev, "ino", (json_int_t)id->ino);
}

static int domain_digest(const char *domain, const json_t *obj, char out[GLOVE_EXPOSURE_DIGEST_HEX_SIZE],
                         struct glove_error *err) {
        if (!obj)
                return glove_error_set(err, ENOMEM, "exposure.no_memory", "out of memory computing a digest");
        _cleanup_free_ char *json = NULL;
        size_t len = 0;
        int r = glove_json_encode_canonical(obj, &json, &len, err);
        if (r < 0)
                return r;
        size_t dl = strlen(domain) + 1;
        _cleanup_free_ uint8_t *buf = malloc(dl + len);
        if (!buf)
                return glove_error_set(err, ENOMEM, "exposure.no_memory", "out of memory computing a digest");
        memcpy(buf, domain, dl);
        memcpy(buf + dl, json, len);
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        r = glove_digest_sha256(buf, dl + len, md, err);
        if (r < 0)
                return r;
        return glove_digest_hex_encode(md, sizeof(md), out, GLOVE_EXPOSURE_DIGEST_HEX_SIZE);
}

int exp_source_digest(const char *nonce, const struct exp_ident *parent, const struct exp_ident *source,
                      char out[GLOVE_EXPOSURE_DIGEST_HEX_SIZE], struct glove_error *err) {
        _cleanup_json_ json_t *o = json_pack("{s:s,s:o,s:o}", "nonce", nonce, "parent", ident_json(parent),
                                             "source", ident_json(source));
        return domain_digest(EXP_SOURCE_DOMAIN, o, out, err);
}

int exp_scope_digest(const char *id, int64_t generation, const char *nonce, const char *root_id, const char *rel,
                     const json_t *modes, const json_t *runtimes, int64_t expires_at_ms, const char *source_digest,
                     char out[GLOVE_EXPOSURE_DIGEST_HEX_SIZE], struct glove_error *err) {
        _cleanup_json_ json_t *o = json_pack(
                "{s:s,s:I,s:s,s:s,s:s,s:O,s:O,s:I,s:s}", "exposure_id", id, "generation", (json_int_t)generation,
                "nonce", nonce, "root_id", root_id, "path", rel, "modes", modes, "runtime_template_ids", runtimes,
                "expires_at_ms", (json_int_t)expires_at_ms, "source_identity_digest", source_digest);
        return domain_digest(EXP_SCOPE_DOMAIN, o, out, err);
}

/* ---- records ---- */

json_t *exp_create_record(const struct exp_entry *e, const struct exp_gen *g) {
        return json_pack("{s:s,s:s,s:I,s:s,s:o,s:s,s:o,s:o,s:s,s:s,s:O,s:O,s:I,s:I,s:s,s:s}", "type", "create",
                         "exposure_id", e->id, "generation", (json_int_t)g->generation, "root_id", e->root_id,
                         "root", ident_json(&g->root), "path", e->rel, "source", ident_json(&g->source), "parent",
                         ident_json(&g->parent), "nonce", g->nonce, "label", g->label, "modes", g->modes,
                         "runtime_template_ids", g->runtimes, "created_at_ms", (json_int_t)g->created_at_ms,
                         "expires_at_ms", (json_int_t)g->expires_at_ms, "scope_digest", g->scope_digest,
                         "source_identity_digest", g->source_digest);
}

json_t *exp_state_record(const char *type, const char *id, int64_t generation, int64_t at_ms) {
        return json_pack("{s:s,s:s,s:I,s:I}", "type", type, "exposure_id", id, "generation", (json_int_t)generation,
                         "at_ms", (json_int_t)at_ms);
}

size_t exp_state_record_max(void) {
        char id[GLOVE_EXPOSURE_ID_SIZE];
        snprintf(id, sizeof(id), "exp-%032d", 0);
        _cleanup_json_ json_t *rec = exp_state_record("expire", id, INT32_MAX, INT64_MAX);
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        struct glove_error err = { 0 };
        if (!rec || glove_json_encode_canonical(rec, &bytes, &len, &err) < 0)
                return 0;
        return len;
}

static int bad(struct glove_error *err, uint64_t seq, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(struct glove_error *err, uint64_t seq, const char *fmt, ...) {
        char text[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        return glove_error_set(err, EBADMSG, "exposure.journal_invalid",
                               "exposure journal record %llu: %s; the journal was not changed: restore it from a "
                               "backup or move it aside to start with no exposures",
                               (unsigned long long)seq, text);
}

static int oom(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "exposure.no_memory", "out of memory replaying the exposure journal");
}

static bool hex_valid(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s[n] == '\0';
}

bool exp_id_valid(const char *s) {
        return strncmp(s, "exp-", 4) == 0 && hex_valid(s + 4, GLOVE_EXPOSURE_ID_SIZE - 5);
}

static const char *const create_keys[] = {
        "created_at_ms", "expires_at_ms", "exposure_id", "generation", "label", "modes", "nonce", "parent",
        "path", "root", "root_id", "runtime_template_ids", "scope_digest", "source", "source_identity_digest",
        "type", NULL,
};
static const char *const state_keys[] = { "at_ms", "exposure_id", "generation", "type", NULL };
static const char *const ident_keys[] = { "dev", "ino", NULL };
static const char *const mode_keys[] = { "access", "cleanup_policy", "materialization", "max_bytes", NULL };

/* Getters failing with the json message in jerr. */
static int get_ident(const json_t *o, const char *key, struct exp_ident *out, struct glove_error *jerr) {
        json_t *v;
        int r = glove_json_get_object(o, key, NULL, &v, jerr);
        if (r == 0)
                r = glove_json_check_keys(v, ident_keys, key, jerr);
        if (r == 0)
                r = glove_json_get_int(v, "dev", key, 0, INT64_MAX, &out->dev, jerr);
        if (r == 0)
                r = glove_json_get_int(v, "ino", key, 0, INT64_MAX, &out->ino, jerr);
        return r;
}

static int check_modes(const json_t *arr, struct glove_error *jerr) {
        size_t n = json_array_size(arr);
        if (n == 0 || n > GLOVE_EXPOSURE_MAX_MODES)
                return glove_error_set(jerr, EINVAL, "x", "modes: 1..%d tuples", GLOVE_EXPOSURE_MAX_MODES);
        const char *pa = NULL, *pm = NULL;
        for (size_t i = 0; i < n; i++) {
                const json_t *m = json_array_get(arr, i);
                const char *a, *mat, *cl;
                int64_t mb;
                int r = glove_json_check_keys(m, mode_keys, "modes[]", jerr);
                if (r == 0)
                        r = glove_json_get_string(m, "access", "modes[]", 64, &a, jerr);
                if (r == 0)
                        r = glove_json_get_string(m, "materialization", "modes[]", 64, &mat, jerr);
                if (r == 0)
                        r = glove_json_get_string(m, "cleanup_policy", "modes[]", 64, &cl, jerr);
                if (r == 0)
                        r = glove_json_get_int(m, "max_bytes", "modes[]", 1, GLOVE_POLICY_QUOTA_BYTES_MAX, &mb, jerr);
                if (r < 0)
                        return r;
                int ai = sv_enum_find(&sv_access_names, a), mi = sv_enum_find(&sv_materialization_names, mat),
                    ci = sv_enum_find(&sv_cleanup_names, cl);
                if (ai < 0 || mi < 0 || ci < 0 || exp_mode_problem(ai, mi, ci))
                        return glove_error_set(jerr, EINVAL, "x", "modes[%zu]: not an allowed access tuple", i);
                if (pa) {
                        int cmp = strcmp(pa, a);
                        if (cmp == 0)
                                cmp = strcmp(pm, mat);
                        if (cmp >= 0)
                                return glove_error_set(jerr, EINVAL, "x", "modes[%zu]: unsorted or duplicate", i);
                }
                pa = a;
                pm = mat;
        }
        return 0;
}

static int check_runtimes(const json_t *arr, struct glove_error *jerr) {
        size_t n = json_array_size(arr);
        if (n == 0 || n > GLOVE_EXPOSURE_MAX_RUNTIMES)
                return glove_error_set(jerr, EINVAL, "x", "runtime_template_ids: 1..%d ids",
                                       GLOVE_EXPOSURE_MAX_RUNTIMES);
        const char *prev = NULL;
        for (size_t i = 0; i < n; i++) {
                const char *s = json_string_value(json_array_get(arr, i));
                if (!s || !sv_identifier_valid(s) || (prev && strcmp(prev, s) >= 0))
                        return glove_error_set(jerr, EINVAL, "x",
                                               "runtime_template_ids[%zu]: not a sorted, unique identifier", i);
                prev = s;
        }
        return 0;
}

/* Room for one more entry (x->entries) and one more generation of e (NULL:
 * none), grown by doubling so a long history costs amortized O(1) per
 * record; the arrays may move, the counts do not change. */
static int reserve(struct glove_exposures *x, struct exp_entry *e) {
        if (!e && x->n_entries == x->cap_entries) {
                size_t cap = x->cap_entries ? x->cap_entries * 2 : 8;
                struct exp_entry *v = realloc(x->entries, cap * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                x->entries = v;
                x->cap_entries = cap;
        }
        if (e && e->n_gens == e->cap_gens) {
                size_t cap = e->cap_gens ? e->cap_gens * 2 : EXP_FIRST_GENS;
                struct exp_gen *v = realloc(e->gens, cap * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                e->gens = v;
                e->cap_gens = cap;
        }
        return 0;
}

static void gen_free(struct exp_gen *g) {
        free(g->label);
        json_decref(g->modes);
        json_decref(g->runtimes);
}

void exp_entries_free(struct glove_exposures *x) {
        for (size_t i = 0; i < x->n_entries; i++) {
                for (size_t k = 0; k < x->entries[i].n_gens; k++)
                        gen_free(&x->entries[i].gens[k]);
                free(x->entries[i].gens);
                free(x->entries[i].root_id);
                free(x->entries[i].rel);
        }
        free(x->entries);
        x->entries = NULL;
        x->n_entries = 0;
        x->cap_entries = 0;
}

void exp_pending_release(struct exp_pending *p) {
        if (p->kind == EXP_PENDING_CREATE) {
                gen_free(&p->g);
                free(p->root_id);
                free(p->rel);
                free(p->gens);
        }
        memset(p, 0, sizeof(*p));
}

/* Checks a decoded create record against x and fills p (every allocation
 * the commit needs is made here). ended: the journal's live generation of
 * this id is taken as ended by a state record checked just before. */
static int prepare_create(struct glove_exposures *x, uint64_t seq, const json_t *o, bool ended,
                          struct exp_pending *p, struct glove_error *err) {
        struct glove_error jerr = { 0 };
        const char *id, *root_id, *rel, *nonce, *label, *scope, *source;
        struct exp_gen g = { 0 };
        json_t *modes, *runtimes;
        int r = glove_json_check_keys(o, create_keys, NULL, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "exposure_id", NULL, 64, &id, &jerr);
        if (r == 0)
                r = glove_json_get_int(o, "generation", NULL, 1, INT32_MAX, &g.generation, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "root_id", NULL, GLOVE_POLICY_IDENTIFIER_MAX, &root_id, &jerr);
        if (r == 0)
                r = get_ident(o, "root", &g.root, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "path", NULL, PATH_MAX, &rel, &jerr);
        if (r == 0)
                r = get_ident(o, "source", &g.source, &jerr);
        if (r == 0)
                r = get_ident(o, "parent", &g.parent, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "nonce", NULL, EXP_NONCE_HEX, &nonce, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "label", NULL, GLOVE_EXPOSURE_LABEL_MAX, &label, &jerr);
        if (r == 0)
                r = glove_json_get_array(o, "modes", NULL, GLOVE_EXPOSURE_MAX_MODES, &modes, &jerr);
        if (r == 0)
                r = check_modes(modes, &jerr);
        if (r == 0)
                r = glove_json_get_array(o, "runtime_template_ids", NULL, GLOVE_EXPOSURE_MAX_RUNTIMES, &runtimes,
                                         &jerr);
        if (r == 0)
                r = check_runtimes(runtimes, &jerr);
        if (r == 0)
                r = glove_json_get_int(o, "created_at_ms", NULL, 0, EXP_TIME_MAX_MS, &g.created_at_ms, &jerr);
        if (r == 0)
                r = glove_json_get_int(o, "expires_at_ms", NULL, 0, INT64_MAX, &g.expires_at_ms, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "scope_digest", NULL, 64, &scope, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "source_identity_digest", NULL, 64, &source, &jerr);
        if (r < 0)
                return bad(err, seq, "%s", jerr.message);
        if (!exp_id_valid(id))
                return bad(err, seq, "exposure_id is not \"exp-\" and 32 lowercase hex digits");
        if (!sv_identifier_valid(root_id))
                return bad(err, seq, "root_id is not an identifier");
        if (!exp_rel_valid(rel))
                return bad(err, seq, "path is not a normalized relative path beneath the root");
        if (!hex_valid(nonce, EXP_NONCE_HEX))
                return bad(err, seq, "nonce is not 64 lowercase hex digits");
        if (!exp_label_valid(label))
                return bad(err, seq, "label is not a valid label");
        if (g.expires_at_ms <= g.created_at_ms || g.expires_at_ms - g.created_at_ms > GLOVE_EXPOSURE_TTL_SECS_MAX * 1000)
                return bad(err, seq, "expires_at_ms is not within the longest ttl after created_at_ms");
        if (g.created_at_ms < x->last_ms)
                return bad(err, seq, "created_at_ms %lld is before the previous record's time %lld",
                           (long long)g.created_at_ms, (long long)x->last_ms);
        snprintf(g.nonce, sizeof(g.nonce), "%s", nonce);
        r = exp_source_digest(nonce, &g.parent, &g.source, g.source_digest, err);
        if (r == 0)
                r = exp_scope_digest(id, g.generation, nonce, root_id, rel, modes, runtimes, g.expires_at_ms,
                                     g.source_digest, g.scope_digest, err);
        if (r < 0)
                return r;
        if (strcmp(source, g.source_digest) != 0)
                return bad(err, seq, "source_identity_digest differs from the recomputed digest");
        if (strcmp(scope, g.scope_digest) != 0)
                return bad(err, seq, "scope_digest differs from the recomputed digest");

        struct exp_entry *e = exp_find(x, id);
        if (e) {
                const struct exp_gen *last = &e->gens[e->n_gens - 1];
                if (strcmp(e->root_id, root_id) != 0 || strcmp(e->rel, rel) != 0)
                        return bad(err, seq, "%s names another root or path than its earlier generations", id);
                if (g.generation != last->generation + 1)
                        return bad(err, seq, "generation %lld of %s does not follow generation %lld",
                                   (long long)g.generation, id, (long long)last->generation);
                if (last->state == EXP_LIVE && !ended)
                        return bad(err, seq, "generation %lld of %s is created while generation %lld is live",
                                   (long long)g.generation, id, (long long)last->generation);
        } else {
                if (g.generation != 1)
                        return bad(err, seq, "the first generation of %s is %lld, not 1", id, (long long)g.generation);
                for (size_t i = 0; i < x->n_entries; i++)
                        if (strcmp(x->entries[i].root_id, root_id) == 0 && strcmp(x->entries[i].rel, rel) == 0)
                                return bad(err, seq, "%s names the project of %s", id, x->entries[i].id);
                if (x->n_entries >= GLOVE_EXPOSURE_MAX)
                        return bad(err, seq, "more than %d exposure ids", GLOVE_EXPOSURE_MAX);
        }
        if (reserve(x, e) < 0)
                return oom(err);
        *p = (struct exp_pending){ .kind = EXP_PENDING_CREATE, .fresh = !e, .at_ms = g.created_at_ms };
        snprintf(p->id, sizeof(p->id), "%s", id);
        g.state = EXP_LIVE;
        g.label = strdup(label);
        g.modes = json_deep_copy(modes);
        g.runtimes = json_deep_copy(runtimes);
        p->g = g;
        if (!e) {
                p->root_id = strdup(root_id);
                p->rel = strdup(rel);
                p->gens = calloc(EXP_FIRST_GENS, sizeof(*p->gens));
        }
        if (!g.label || !g.modes || !g.runtimes || (!e && (!p->root_id || !p->rel || !p->gens))) {
                exp_pending_release(p);
                return oom(err);
        }
        return 0;
}

static int prepare_state(struct glove_exposures *x, uint64_t seq, const json_t *o, const char *type,
                         struct exp_pending *p, struct glove_error *err) {
        struct glove_error jerr = { 0 };
        const char *id;
        int64_t gen, at;
        int r = glove_json_check_keys(o, state_keys, NULL, &jerr);
        if (r == 0)
                r = glove_json_get_string(o, "exposure_id", NULL, 64, &id, &jerr);
        if (r == 0)
                r = glove_json_get_int(o, "generation", NULL, 1, INT32_MAX, &gen, &jerr);
        if (r == 0)
                r = glove_json_get_int(o, "at_ms", NULL, 0, EXP_TIME_MAX_MS, &at, &jerr);
        if (r < 0)
                return bad(err, seq, "%s", jerr.message);
        struct exp_entry *e = exp_find(x, id);
        if (!e)
                return bad(err, seq, "%s names %s, which was never created", type, id);
        struct exp_gen *g = &e->gens[e->n_gens - 1];
        if (g->generation != gen || g->state != EXP_LIVE)
                return bad(err, seq, "%s names generation %lld of %s, which is not the live generation", type,
                           (long long)gen, id);
        if (at < x->last_ms)
                return bad(err, seq, "at_ms %lld is before the previous record's time %lld", (long long)at,
                           (long long)x->last_ms);
        bool expire = strcmp(type, "expire") == 0;
        if (expire && at < g->expires_at_ms)
                return bad(err, seq, "expire of %s at %lld is before its expiry %lld", id, (long long)at,
                           (long long)g->expires_at_ms);
        *p = (struct exp_pending){ .kind = EXP_PENDING_STATE, .state = expire ? EXP_EXPIRED : EXP_REVOKED,
                                   .at_ms = at };
        snprintf(p->id, sizeof(p->id), "%s", id);
        return 0;
}

int exp_prepare_record(struct glove_exposures *x, uint64_t seq, const void *payload, size_t len, bool ended,
                       struct exp_pending *p, struct glove_error *err) {
        memset(p, 0, sizeof(*p));
        struct glove_error jerr = { 0 };
        _cleanup_json_ json_t *o = NULL;
        int r = glove_json_decode_canonical(payload, len, GLOVE_EXPOSURE_JOURNAL_RECORD_MAX, GLOVE_JSON_OBJECT_ONLY,
                                            &o, &jerr);
        if (r == -ENOMEM)
                return oom(err);
        if (r < 0)
                return bad(err, seq, "%s", jerr.message);
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!type)
                return bad(err, seq, "no string member \"type\"");
        if (strcmp(type, "create") == 0)
                return prepare_create(x, seq, o, ended, p, err);
        if (strcmp(type, "revoke") == 0 || strcmp(type, "expire") == 0)
                return prepare_state(x, seq, o, type, p, err);
        return bad(err, seq, "unknown type \"%.32s\"", type);
}

void exp_commit_record(struct glove_exposures *x, struct exp_pending *p) {
        struct exp_entry *e = exp_find(x, p->id);
        if (p->kind == EXP_PENDING_STATE) {
                e->gens[e->n_gens - 1].state = p->state;
        } else if (p->kind == EXP_PENDING_CREATE) {
                if (!e) {
                        /* Room was reserved by prepare_create. */
                        size_t at = 0;
                        while (at < x->n_entries && strcmp(x->entries[at].id, p->id) < 0)
                                at++;
                        memmove(&x->entries[at + 1], &x->entries[at], (x->n_entries - at) * sizeof(*e));
                        e = &x->entries[at];
                        *e = (struct exp_entry){ .root_id = TAKE_PTR(p->root_id), .rel = TAKE_PTR(p->rel) };
                        snprintf(e->id, sizeof(e->id), "%s", p->id);
                        e->gens = TAKE_PTR(p->gens);
                        e->cap_gens = EXP_FIRST_GENS;
                        x->n_entries++;
                }
                e->gens[e->n_gens++] = p->g;
                p->g = (struct exp_gen){ 0 };
        }
        x->last_ms = p->at_ms;
        exp_pending_release(p);
}

int exp_apply_record(struct glove_exposures *x, uint64_t seq, const void *payload, size_t len,
                     struct glove_error *err) {
        struct exp_pending p;
        int r = exp_prepare_record(x, seq, payload, len, false, &p, err);
        if (r < 0)
                return r;
        exp_commit_record(x, &p);
        return 0;
}

/* A record gloved built that its own replay checks refuse: nothing was
 * appended (a bug guard; requests are checked before they get here). */
static int refused(int r, struct glove_error *err) {
        if (r != -EBADMSG)
                return r;
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err ? err->message : "");
        glove_error_clear(err);
        return glove_error_set(err, EINVAL, "exposure.record_refused",
                               "the record was refused by the journal's replay checks, so nothing was appended "
                               "(%s)",
                               why);
}

static int encode(const json_t *rec, char **bytes, size_t *len, struct glove_error *err) {
        if (!rec)
                return glove_error_set(err, ENOMEM, "exposure.no_memory", "out of memory building a record");
        return glove_json_encode_canonical(rec, bytes, len, err);
}

/* Appends a prepared record and commits it: the registry follows the
 * journal, also when the append failed after the record became durable
 * (its seal failed; the journal is broken then and says so). */
static int append_prepared(struct glove_exposures *x, const char *bytes, size_t len, struct exp_pending *p,
                           struct glove_error *err) {
        uint64_t before = glove_store_journal_records(x->journal);
        int r = glove_store_journal_append(x->journal, bytes, len, NULL, NULL, err);
        if (r < 0 && glove_store_journal_records(x->journal) == before) {
                exp_pending_release(p);
                return r;
        }
        exp_commit_record(x, p);
        return r;
}

int exp_append(struct glove_exposures *x, const json_t *rec, struct glove_error *err) {
        return exp_append_pair(x, NULL, rec, err);
}

int exp_append_pair(struct glove_exposures *x, const json_t *first, const json_t *rec, struct glove_error *err) {
        _cleanup_free_ char *b1 = NULL, *b2 = NULL;
        size_t l1 = 0, l2 = 0;
        int r = first ? encode(first, &b1, &l1, err) : 0;
        if (r == 0)
                r = encode(rec, &b2, &l2, err);
        if (r < 0)
                return r;
        uint64_t next = glove_store_journal_records(x->journal) + 1;
        struct exp_pending p1 = { 0 }, p2 = { 0 };
        if (first) {
                r = exp_prepare_record(x, next, b1, l1, false, &p1, err);
                if (r < 0)
                        return refused(r, err);
        }
        /* rec is checked as if first were applied: first may only end the
         * live generation rec follows, at a time no later than rec's. */
        r = exp_prepare_record(x, next + !!first, b2, l2, first != NULL, &p2, err);
        if (r == 0 && first && (p1.kind != EXP_PENDING_STATE || p2.kind != EXP_PENDING_CREATE ||
                                strcmp(p1.id, p2.id) != 0 || p1.at_ms > p2.at_ms))
                r = glove_error_set(err, EINVAL, "exposure.record_refused",
                                    "a pair of records is a revoke or expire and the next generation's create");
        if (r < 0) {
                exp_pending_release(&p1);
                exp_pending_release(&p2);
                return refused(r, err);
        }
        if (first) {
                r = append_prepared(x, b1, l1, &p1, err);
                if (r < 0) {
                        exp_pending_release(&p2);
                        return r;
                }
        }
        return append_prepared(x, b2, l2, &p2, err);
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internal to the exposure registry (exposure_policy.c, exposure_journal.c,
 * exposure.c, exposure_resolve.c): the decoded exposure policy, the replayed
 * state and the helpers the files share. See glove/supervisor/exposure.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/digest.h"
#include "glove/store/journal.h"
#include "glove/supervisor/exposure.h"

#define EXP_SOURCE_DOMAIN "glove.exposure.source.v1"
#define EXP_SCOPE_DOMAIN "glove.exposure.scope.v1"
#define EXP_NONCE_HEX 64 /* 32 bytes */

struct glove_exposure_policy {
        json_t *root;
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        struct glove_exposure_root *roots;
        size_t n_roots;
};

/* A (dev, ino) pair as recorded: JSON integers 0..INT64_MAX. */
struct exp_ident {
        int64_t dev, ino;
};

enum exp_state { EXP_LIVE, EXP_REVOKED, EXP_EXPIRED };

/* One generation of an exposure, as its create record says. */
struct exp_gen {
        int64_t generation;
        char nonce[EXP_NONCE_HEX + 1];
        struct exp_ident root, source, parent;
        char *label;
        json_t *modes;    /* array of tuple objects, sorted */
        json_t *runtimes; /* array of identifiers, sorted */
        int64_t created_at_ms, expires_at_ms;
        char scope_digest[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
        char source_digest[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
        enum exp_state state;
};

/* One exposure id: its (root_id, REL) and every generation, oldest first. */
struct exp_entry {
        char id[GLOVE_EXPOSURE_ID_SIZE];
        char *root_id, *rel;
        struct exp_gen *gens;
        size_t n_gens, cap_gens;
};

/* A root of the policy as pinned at open (fd -1: unavailable, and problem
 * says why: "missing", "a symbolic link", "not a directory" or the errno
 * text). */
struct exp_pin {
        int fd;
        struct exp_ident ident;
        char problem[96];
};

struct glove_exposures {
        const struct glove_exposure_policy *policy;
        const char *const *restricted;
        struct exp_pin *pins; /* one per policy root, same order */
        struct glove_store_journal *journal;
        struct exp_entry *entries; /* sorted by id */
        size_t n_entries, cap_entries;
        int64_t last_ms; /* newest time any record carries */
};

/* ---- exposure_policy.c ---- */

/* Why (access, materialization, cleanup) enum values are no exposure mode,
 * or NULL when they are one. */
const char *exp_mode_problem(int access, int mat, int cleanup);

/* ---- exposure_journal.c ---- */

/* "exp-" and 32 lowercase hex digits. */
bool exp_id_valid(const char *s);

extern const struct glove_store_journal_format exp_journal_format;

/* The two digests of the header, as lowercase hex. rel is the REL path. */
int exp_source_digest(const char *nonce, const struct exp_ident *parent, const struct exp_ident *source,
                      char out[GLOVE_EXPOSURE_DIGEST_HEX_SIZE], struct glove_error *err);
int exp_scope_digest(const char *id, int64_t generation, const char *nonce, const char *root_id, const char *rel,
                     const json_t *modes, const json_t *runtimes, int64_t expires_at_ms,
                     const char *source_digest, char out[GLOVE_EXPOSURE_DIGEST_HEX_SIZE],
                     struct glove_error *err);

/* Builds a create record's JSON for gen g of e (new reference, NULL on ENOMEM). */
json_t *exp_create_record(const struct exp_entry *e, const struct exp_gen *g);
/* Builds a revoke or expire record (type "revoke"/"expire"). */
json_t *exp_state_record(const char *type, const char *id, int64_t generation, int64_t at_ms);
/* The largest canonical revoke or expire record, bytes (generation
 * INT32_MAX, at_ms INT64_MAX); 0 when out of memory. */
size_t exp_state_record_max(void);

/* The latest time a record may carry, ms since the epoch: far enough
 * below INT64_MAX that a time plus the longest TTL cannot overflow. */
#define EXP_TIME_MAX_MS (INT64_MAX - GLOVE_EXPOSURE_TTL_SECS_MAX * 1000 - 1)
/* The generations array a fresh entry starts with. */
#define EXP_FIRST_GENS 4

/* One record checked against the registry but not yet applied: all the
 * memory its application needs is held here, so exp_commit_record cannot
 * fail. Release an uncommitted one with exp_pending_release. */
enum exp_pending_kind { EXP_PENDING_NONE, EXP_PENDING_CREATE, EXP_PENDING_STATE };
struct exp_pending {
        enum exp_pending_kind kind;
        char id[GLOVE_EXPOSURE_ID_SIZE];
        bool fresh;          /* create: a new exposure id */
        char *root_id, *rel; /* create of a fresh id: owned */
        struct exp_gen *gens; /* create of a fresh id: its first EXP_FIRST_GENS slots, owned */
        struct exp_gen g;    /* create: the new generation, owned */
        enum exp_state state; /* state record: EXP_REVOKED or EXP_EXPIRED */
        int64_t at_ms;       /* the record's time */
};

/* Decodes one record payload and checks it against x (replay's checks, in
 * full), reserving what applying it needs; x is not changed. seq names the
 * record in messages. ended: the live generation a create follows is taken
 * as ended by a state record checked just before it (exp_append_pair).
 * Errors: exposure.journal_invalid (-EBADMSG), exposure.no_memory. */
int exp_prepare_record(struct glove_exposures *x, uint64_t seq, const void *payload, size_t len, bool ended,
                       struct exp_pending *p, struct glove_error *err);
/* Applies a prepared record to x; cannot fail; p is released. */
void exp_commit_record(struct glove_exposures *x, struct exp_pending *p);
void exp_pending_release(struct exp_pending *p);
/* exp_prepare_record then exp_commit_record (replay). */
int exp_apply_record(struct glove_exposures *x, uint64_t seq, const void *payload, size_t len,
                     struct glove_error *err);

/* Encodes rec canonically, checks it with replay's checks, appends it and
 * applies it. On error nothing was appended and x is unchanged, except
 * when the record became durable and only its seal failed: x then holds
 * it too (the journal is broken until restart). exposure.record_refused:
 * replay's checks refused the record (nothing appended). */
int exp_append(struct glove_exposures *x, const json_t *rec, struct glove_error *err);
/* Appends first (a revoke or expire of the live generation) then rec (the
 * next generation's create), both checked before either is appended. When
 * first was appended and rec's append then failed, both the journal and x
 * hold first only: a generation ended that had already lapsed in effect. */
int exp_append_pair(struct glove_exposures *x, const json_t *first, const json_t *rec, struct glove_error *err);

/* Frees every entry. */
void exp_entries_free(struct glove_exposures *x);

/* ---- exposure.c ---- */

struct exp_entry *exp_find(const struct glove_exposures *x, const char *id);
/* The policy root with root_id (NULL when it left the policy), and its index. */
const struct glove_exposure_root *exp_policy_root(const struct glove_exposures *x, const char *root_id,
                                                  size_t *index);
/* The state of g at now_ms by its recorded expiry (a live one past it
 * reads expired): the journal's view. */
enum exp_state exp_state_at(const struct exp_gen *g, int64_t now_ms);

/* The EFFECTIVE exposure: generation g of e under the policy loaded now
 * (exposure.h, "The effective exposure"). */
struct exp_effective {
        const struct glove_exposure_root *root; /* NULL: the root left the policy */
        json_t *modes;                          /* new reference: recorded tuples the root still allows */
        json_t *runtimes;                       /* new reference: recorded ids the root still allows */
        int64_t expires_at_ms;                  /* min(recorded, created_at_ms + root max_ttl_secs * 1000) */
};
/* Fills f (clear it with exp_effective_clear). -ENOMEM on failure. */
int exp_effective_get(const struct glove_exposures *x, const struct exp_entry *e, const struct exp_gen *g,
                      struct exp_effective *f);
void exp_effective_clear(struct exp_effective *f);
/* The state of g at now_ms by its effective expiry. */
enum exp_state exp_effective_state(const struct exp_gen *g, const struct exp_effective *f, int64_t now_ms);

/* Labels: exp_label_valid is the replay rule (1..GLOVE_EXPOSURE_LABEL_MAX
 * bytes of UTF-8 without C0/C1 controls); exp_label_acceptable, for a new
 * enrollment, also refuses Unicode format characters (Cf) and U+2028/9. */
bool exp_label_valid(const char *s);
bool exp_label_acceptable(const char *s);
bool exp_rel_valid(const char *rel);

/* ---- exposure_resolve.c ---- */

/* Opens rel beneath dirfd as O_PATH|O_DIRECTORY with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV. Returns the
 * fd or -errno. */
int exp_open_beneath(int dirfd, const char *rel);
/* Opens the absolute directory path from "/" without following any link
 * (O_PATH|O_DIRECTORY). Returns the fd or -errno. */
int exp_open_root(const char *path);
int exp_fd_ident(int fd, struct exp_ident *out);
bool exp_ident_equal(const struct exp_ident *a, const struct exp_ident *b);

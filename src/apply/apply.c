/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One apply transaction (include/glove/apply/apply.h; issue 30;
 * docs/retained-changes.md): checks, reservation, candidate, exchange,
 * receipt. Recovery, cleanup and discard are in recover.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apply_internal.h"
#include "glove/apply/candidate.h"
#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/supervisor/stage.h"

#define _cleanup_stage_ __attribute__((cleanup(stage_closep)))
static void stage_closep(struct glove_supervisor_stage **s) {
        glove_supervisor_stage_close(*s);
}

int64_t ap_now(const struct glove_apply_context *c) {
        if (c->now_ms)
                return c->now_ms();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ap_candidate_name(const char *txid, char out[64]) {
        snprintf(out, 64, ".glove-apply-%.16s", txid);
}

void glove_apply_signed_clear(struct glove_apply_signed *s) {
        if (!s)
                return;
        free(s->canonical);
        *s = (struct glove_apply_signed){ 0 };
}

json_t *glove_apply_signed_to_json(const struct glove_apply_signed *s) {
        _cleanup_free_ char *sig = glove_base64_encode(s->signature, sizeof(s->signature));
        if (!sig || !s->canonical)
                return NULL;
        return json_pack("{s:s%,s:s,s:s}", "authorization", s->canonical, s->len, "schema", "glove.apply-signed.v1",
                         "signature", sig);
}

int glove_apply_signed_from_json(const json_t *j, struct glove_apply_signed *out, struct glove_error *err) {
        *out = (struct glove_apply_signed){ 0 };
        const char *schema = json_string_value(json_object_get(j, "schema"));
        const json_t *a = json_object_get(j, "authorization");
        const char *sig = json_string_value(json_object_get(j, "signature"));
        if (!json_is_object(j) || json_object_size(j) != 3 || !schema ||
            strcmp(schema, "glove.apply-signed.v1") != 0 || !json_is_string(a) || !sig)
                return glove_error_set(err, EINVAL, "apply.authorization_invalid",
                                       "a signed authorization is {\"authorization\",\"schema\":"
                                       "\"glove.apply-signed.v1\",\"signature\"}");
        uint8_t *raw = NULL;
        size_t n = 0;
        if (glove_base64_decode(sig, strlen(sig), GLOVE_APPLY_SIGNATURE_LEN, &raw, &n) < 0 ||
            n != GLOVE_APPLY_SIGNATURE_LEN) {
                free(raw);
                return glove_error_set(err, EINVAL, "apply.authorization_invalid",
                                       "the signature is not the base64 of 64 bytes");
        }
        memcpy(out->signature, raw, n);
        free(raw);
        out->len = json_string_length(a);
        out->canonical = malloc(out->len + 1);
        if (!out->canonical)
                return glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
        memcpy(out->canonical, json_string_value(a), out->len + 1);
        return 0;
}

int glove_apply_authorize(const struct glove_apply_context *c, const char *session, const char *grant,
                          const struct glove_apply_key *key, int64_t ttl_ms, struct glove_apply_signed *out,
                          struct glove_error *err) {
        *out = (struct glove_apply_signed){ 0 };
        if (ttl_ms < 1 || ttl_ms > GLOVE_APPLY_AUTH_TTL_MAX_MS)
                return glove_error_set(err, EINVAL, "apply.authorization_invalid",
                                       "the lifetime must be 1 ms to one hour");
        _cleanup_stage_ struct glove_supervisor_stage *s = NULL;
        int r = glove_supervisor_stage_open(c->root_fd, session, grant, true, &s, err);
        if (r < 0)
                return r;
        if (!s->source)
                return glove_error_set(err, EINVAL, "apply.no_source",
                                       "%s: the stage started empty: there is no source to apply to", grant);
        _cleanup_(glove_manifest_freep) struct glove_manifest *now = NULL;
        if ((r = glove_manifest_build(s->fd, s->image_size, &now, err)) < 0)
                return r;
        struct glove_apply_authorization a = { 0 };
        snprintf(a.schema, sizeof(a.schema), "glove.apply-authorization.v1");
        snprintf(a.session_id, sizeof(a.session_id), "%s", session);
        snprintf(a.grant, sizeof(a.grant), "%s", grant);
        snprintf(a.grant_id, sizeof(a.grant_id), "%s/%s", session, grant);
        snprintf(a.baseline_manifest_digest, sizeof(a.baseline_manifest_digest), "%s", s->source->digest);
        snprintf(a.stage_manifest_digest, sizeof(a.stage_manifest_digest), "%s", now->digest);
        snprintf(a.key_id, sizeof(a.key_id), "%s", glove_apply_key_id(key));
        uint8_t nonce[32];
        if ((r = glove_digest_random(nonce, sizeof(nonce), err)) < 0)
                return r;
        glove_digest_hex_encode(nonce, sizeof(nonce), a.nonce, sizeof(a.nonce));
        a.issued_at_ms = ap_now(c);
        a.expires_at_ms = a.issued_at_ms + ttl_ms;
        if ((r = glove_apply_authorization_encode(&a, &out->canonical, &out->len, err)) < 0)
                return r;
        _cleanup_free_ uint8_t *msg = NULL;
        size_t msg_len = 0;
        r = glove_apply_authorization_message(out->canonical, out->len, &msg, &msg_len, err);
        if (r >= 0)
                r = glove_apply_key_sign(key, msg, msg_len, out->signature, err);
        if (r < 0)
                glove_apply_signed_clear(out);
        return r;
}

/* ---- receipts ---- */

static json_t *identity(const json_t *o) {
        if (!json_is_object(o))
                return json_null();
        return json_pack("{s:O,s:O}", "dev", json_object_get(o, "dev"), "ino", json_object_get(o, "ino"));
}

json_t *ap_receipt(const struct glove_apply_tx *tx, const char *outcome, const char *code, int64_t at_ms) {
        const json_t *b = json_object_get(tx->reserved, "bindings");
        const json_t *src = json_object_get(b, "source");
        json_t *cand = tx->prepared ? identity(json_object_get(tx->prepared, "candidate")) : json_null();
        json_t *s = json_pack("{s:s,s:I,s:I}", "kind", json_string_value(json_object_get(src, "kind")), "dev",
                              json_integer_value(json_object_get(src, "dev")), "ino",
                              json_integer_value(json_object_get(src, "ino")));
        return json_pack("{s:I,s:s,s:s,s:s?,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "at_ms", (json_int_t)at_ms,
                         "authorization_digest", tx->authorization_digest, "baseline_manifest_digest",
                         tx->baseline_manifest_digest, "code", code, "grant",
                         json_string_value(json_object_get(b, "grant")), "grant_id", tx->grant_id, "key_id",
                         json_string_value(json_object_get(b, "key_id")), "outcome", outcome, "schema",
                         "glove.apply-receipt.v1", "session_id", json_string_value(json_object_get(b, "session_id")),
                         "stage_manifest_digest", tx->stage_manifest_digest, "txid", tx->txid, "source", s,
                         "candidate", cand);
}

int ap_terminal(const struct glove_apply_context *c, const struct glove_apply_tx *tx, const char *outcome,
                const char *code, json_t **receipt_out, struct glove_error *err) {
        int64_t at = ap_now(c);
        _cleanup_json_ json_t *receipt = ap_receipt(tx, outcome, code, at);
        _cleanup_json_ json_t *f = receipt ? json_pack("{s:s,s:s?,s:O}", "outcome", outcome, "code", code, "receipt",
                                                       receipt)
                                           : NULL;
        if (!f)
                return glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
        char txid[65];
        snprintf(txid, sizeof(txid), "%s", tx->txid);
        int r = glove_apply_journal_append(c->journal, txid, "terminal", f, at, err);
        if (r >= 0 && receipt_out)
                *receipt_out = json_incref(receipt);
        return r;
}

/* ---- the transaction ---- */

/* Checks auth against what is being applied. */
static int check_auth(const struct glove_apply_context *c, const struct glove_apply_signed *auth, const char *session,
                      const char *grant, const struct glove_supervisor_stage *s, const struct glove_manifest *now,
                      struct glove_apply_authorization *a, char digest[65], struct glove_error *err) {
        int r = glove_apply_authorization_verify(c->trust, auth->canonical, auth->len, auth->signature, ap_now(c), a, err);
        if (r < 0)
                return r;
        if (strcmp(a->session_id, session) != 0 || strcmp(a->grant, grant) != 0)
                return glove_error_set(err, EPERM, "apply.authorization_mismatch",
                                       "the authorization is for %s of session %s, not %s of session %s", a->grant,
                                       a->session_id, grant, session);
        if (strcmp(a->baseline_manifest_digest, s->source->digest) != 0)
                return glove_error_set(err, EPERM, "apply.authorization_mismatch",
                                       "the authorization names another baseline than this stage's");
        if (strcmp(a->stage_manifest_digest, now->digest) != 0)
                return glove_error_set(err, EPERM, "apply.authorization_mismatch",
                                       "the stage is not what the authorization names (it changed since, or the "
                                       "authorization is for another stage)");
        return glove_apply_authorization_digest(auth->canonical, auth->len, digest, err);
}

static json_t *bindings(const char *session, const char *grant, const struct glove_apply_authorization *a,
                        const struct glove_apply_signed *auth, const struct glove_supervisor_stage *s,
                        const struct glove_manifest *now) {
        _cleanup_free_ char *sig = glove_base64_encode(auth->signature, sizeof(auth->signature));
        if (!sig)
                return NULL;
        return json_pack("{s:s,s:s,s:s,s:O,s:s%,s:s,s:I,s:I,s:{s:I,s:I}}", "session_id", session, "grant", grant,
                         "key_id", a->key_id, "source", json_object_get(s->baseline, "source"), "authorization",
                         auth->canonical, auth->len, "signature", sig, "stage_file_bytes", (json_int_t)now->file_bytes,
                         "stage_entries", (json_int_t)now->n, "image", "ino", (json_int_t)s->image_ino, "size",
                         (json_int_t)s->image_size);
}

/* After the reservation: a failure ends the transaction "failed" with the
 * candidate (if any) discarded; err keeps the cause. */
static int fail_tx(const struct glove_apply_context *c, const char *txid, const struct ap_parent *p, int r,
                   struct glove_error *err) {
        const char *code = err && err->code ? err->code : "apply.failed";
        char cand[64];
        ap_candidate_name(txid, cand);
        struct glove_error e2 = { 0 };
        if (p && p->fd >= 0 && glove_apply_tree_remove(p->fd, cand, &e2) < 0) {
                /* The candidate could not be removed: not provably discarded. */
                _cleanup_json_ json_t *f = json_pack("{s:s}", "code", "apply.discard_failed");
                (void)glove_apply_journal_append(c->journal, txid, "ambiguous", f, ap_now(c), NULL);
                return r;
        }
        const struct glove_apply_tx *tx = glove_apply_journal_find(c->journal, txid);
        if (tx)
                (void)ap_terminal(c, tx, "failed", code, NULL, &e2);
        return r;
}

int glove_apply_run(const struct glove_apply_context *c, const char *session, const char *grant,
                    const struct glove_apply_signed *auth, json_t **result, struct glove_error *err) {
        *result = NULL;
        _cleanup_stage_ struct glove_supervisor_stage *s = NULL;
        int r = glove_supervisor_stage_open(c->root_fd, session, grant, true, &s, err);
        if (r < 0)
                return r;
        if (!s->source)
                return glove_error_set(err, EINVAL, "apply.no_source",
                                       "%s: the stage started empty: there is no source to apply to", grant);
        /* The source as recorded; ap_check_baseline checks it as it is now. */
        if ((r = glove_manifest_check_carried(s->source, geteuid(), getegid(), err)) < 0)
                return r;
        _cleanup_(glove_manifest_freep) struct glove_manifest *now = NULL;
        _cleanup_json_ json_t *changes = NULL;
        if ((r = glove_supervisor_stage_changes(s, &now, &changes, err)) < 0)
                return r;
        if ((r = glove_manifest_check_apply(now, now->v[0].uid, err)) < 0)
                return r;
        struct glove_apply_authorization a;
        char adigest[65];
        if ((r = check_auth(c, auth, session, grant, s, now, &a, adigest, err)) < 0)
                return r;
        /* A replay is named as such before anything else (the source of
         * an applied stage no longer matches its baseline, for one). */
        if ((r = glove_apply_journal_check_unused(c->journal, a.grant_id, adigest, a.stage_manifest_digest, err)) < 0)
                return r;
        const json_t *source = json_object_get(s->baseline, "source");
        _cleanup_(ap_parent_close) struct ap_parent p = { .fd = -1 };
        if ((r = ap_open_parent(c, source, &p, err)) < 0 || (r = ap_check_baseline(&p, source, s->source, err)) < 0 ||
            (r = ap_check_space(p.fd, now, err)) < 0)
                return r;
        /* 2. reserved */
        _cleanup_json_ json_t *b = bindings(session, grant, &a, auth, s, now);
        if (!b)
                return glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
        char txid[65];
        if ((r = glove_apply_journal_reserve(c->journal, a.grant_id, adigest, a.baseline_manifest_digest,
                                             a.stage_manifest_digest, b, ap_now(c), txid, err)) < 0)
                return r;
        char cand[64];
        ap_candidate_name(txid, cand);
        /* 3. prepared */
        struct stat sst;
        if ((r = ap_check_space(p.fd, now, err)) < 0)
                return fail_tx(c, txid, &p, r, err);
        if (fstatat(p.fd, p.name, &sst, AT_SYMLINK_NOFOLLOW) < 0)
                return fail_tx(c, txid, &p,
                               glove_error_set(err, errno, "apply.source_missing", "the source directory is gone"), err);
        if ((r = glove_apply_candidate_copy(s->fd, now, p.fd, cand, sst.st_mode & 0777, err)) < 0)
                return fail_tx(c, txid, &p, r, err);
        uint64_t cdev, cino;
        if (!ap_entry(p.fd, cand, &cdev, &cino))
                return fail_tx(c, txid, &p,
                               glove_error_set(err, EIO, "apply.copy", "the candidate vanished after it was made"), err);
        _cleanup_json_ json_t *pf = json_pack("{s:{s:s,s:I,s:I,s:s}}", "candidate", "name", cand, "dev", (json_int_t)cdev,
                                              "ino", (json_int_t)cino, "manifest_digest", now->digest);
        if (!pf || (r = glove_apply_journal_append(c->journal, txid, "prepared", pf, ap_now(c), err)) < 0)
                return fail_tx(c, txid, &p, pf ? r : glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory"),
                               err);
        /* 4. the baseline again, then the exchange */
        if ((r = ap_check_baseline(&p, source, s->source, err)) < 0)
                return fail_tx(c, txid, &p, r, err);
        if (renameat2(p.fd, p.name, p.fd, cand, RENAME_EXCHANGE) < 0)
                return fail_tx(c, txid, &p,
                               glove_error_set(err, errno, "apply.exchange", "renameat2(RENAME_EXCHANGE): %s",
                                               strerror(errno)),
                               err);
        /* The exchange is durable with the parent directory's sync. */
        _cleanup_close_ int pd = openat(p.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pd < 0 || fsync(pd) < 0) {
                /* Exchanged but not provably durable: left to recovery. */
                _cleanup_json_ json_t *f = json_pack("{s:s}", "code", "apply.sync_failed");
                (void)glove_apply_journal_append(c->journal, txid, "ambiguous", f, ap_now(c), NULL);
                return glove_error_set(err, errno, "apply.sync_failed",
                                       "the exchange was made but the directory could not be synced: %s; the "
                                       "transaction is ambiguous (glove apply --recover reports it)",
                                       strerror(errno));
        }
        /* 5. committed, applied */
        _cleanup_json_ json_t *cf = json_pack("{s:{s:s}}", "exchange", "old_source", cand);
        if (!cf || (r = glove_apply_journal_append(c->journal, txid, "committed", cf, ap_now(c), err)) < 0)
                return r < 0 ? r : glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
        json_t *receipt = NULL;
        const struct glove_apply_tx *tx = glove_apply_journal_find(c->journal, txid);
        if ((r = ap_terminal(c, tx, "applied", NULL, &receipt, err)) < 0)
                return r;
        *result = json_pack("{s:s,s:s,s:o,s:O,s:s}", "txid", txid, "outcome", "applied", "receipt", receipt, "changes",
                            changes, "old_source", cand);
        return *result ? 0 : glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Apply recovery, cleanup and discard (include/glove/apply/apply.h; spec
 * session-policy.md, "Receipts and recovery"): every state is proven by
 * descriptor (the recorded parent, the source's and the candidate's
 * entries by inode), never by the journal's word alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "apply_internal.h"
#include "glove/apply/candidate.h"
#include "glove/base/cleanup.h"

enum proof { P_UNTOUCHED, P_EXCHANGED, P_UNKNOWN };

static int64_t jint(const json_t *o, const char *k) {
        return json_integer_value(json_object_get(o, k));
}

/* Where a prepared or committed transaction stands on disk. */
static enum proof prove(const struct ap_parent *p, const struct glove_apply_tx *tx) {
        const json_t *src = json_object_get(json_object_get(tx->reserved, "bindings"), "source");
        const json_t *cand = json_object_get(tx->prepared, "candidate");
        const char *cname = json_string_value(json_object_get(cand, "name"));
        uint64_t sdev, sino, cdev, cino;
        if (!cname || !ap_entry(p->fd, p->name, &sdev, &sino) || !ap_entry(p->fd, cname, &cdev, &cino))
                return P_UNKNOWN;
        bool src_at_src = (int64_t)sdev == jint(src, "dev") && (int64_t)sino == jint(src, "ino");
        bool cand_at_cand = (int64_t)cdev == jint(cand, "dev") && (int64_t)cino == jint(cand, "ino");
        bool cand_at_src = (int64_t)sdev == jint(cand, "dev") && (int64_t)sino == jint(cand, "ino");
        bool src_at_cand = (int64_t)cdev == jint(src, "dev") && (int64_t)cino == jint(src, "ino");
        if (src_at_src && cand_at_cand)
                return P_UNTOUCHED;
        if (cand_at_src && src_at_cand)
                return P_EXCHANGED;
        return P_UNKNOWN;
}

static int report_add(json_t *report, const char *txid, const char *grant_id, const char *state, const char *code) {
        return json_array_append_new(report, json_pack("{s:s,s:s,s:s,s:s?}", "txid", txid, "grant_id", grant_id, "state",
                                                       state, "code", code));
}

static int mark_ambiguous(const struct glove_apply_context *c, const char *txid, const char *already, const char *code,
                          struct glove_error *err) {
        if (already && strcmp(already, code) == 0)
                return 0; /* recorded once */
        _cleanup_json_ json_t *f = json_pack("{s:s}", "code", code);
        return f ? glove_apply_journal_append(c->journal, txid, "ambiguous", f, ap_now(c), err)
                 : glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
}

/* Reconciles transaction index i; appends to report. */
static int reconcile(const struct glove_apply_context *c, size_t i, json_t *report, struct glove_error *err) {
        const struct glove_apply_tx *tx = glove_apply_journal_tx(c->journal, i);
        char txid[65], grant_id[300];
        snprintf(txid, sizeof(txid), "%s", tx->txid);
        snprintf(grant_id, sizeof(grant_id), "%s", tx->grant_id);
        if (tx->state == GLOVE_APPLY_APPLIED || tx->state == GLOVE_APPLY_FAILED)
                return 0;
        if (tx->state == GLOVE_APPLY_AMBIGUOUS)
                return report_add(report, txid, grant_id, "ambiguous", tx->ambiguous_code);
        const json_t *src = json_object_get(json_object_get(tx->reserved, "bindings"), "source");
        struct ap_parent p = { .fd = -1 };
        struct glove_error why = { 0 };
        int r = ap_open_parent(c, src, &p, &why);
        char cand[64];
        ap_candidate_name(txid, cand);
        const char *code = NULL, *state = NULL;
        if (tx->state == GLOVE_APPLY_RESERVED) {
                /* Nothing was exchanged (that needs a prepared record);
                 * a partial candidate may be there. A failed receipt needs
                 * no surviving locator. */
                if (r >= 0)
                        (void)glove_apply_tree_remove(p.fd, cand, NULL);
                state = "failed";
                code = "apply.interrupted";
        } else if (r < 0) {
                state = "ambiguous";
                code = "apply.source_unavailable";
        } else {
                enum proof pr = prove(&p, tx);
                if (pr == P_EXCHANGED) {
                        state = "applied";
                } else if (pr == P_UNTOUCHED && tx->state == GLOVE_APPLY_PREPARED) {
                        if (glove_apply_tree_remove(p.fd, cand, &why) < 0) {
                                state = "ambiguous";
                                code = "apply.discard_failed";
                        } else {
                                state = "failed";
                                code = "apply.interrupted";
                        }
                } else {
                        state = "ambiguous";
                        code = tx->state == GLOVE_APPLY_COMMITTED ? "apply.commit_unproven" : "apply.state_unproven";
                }
        }
        ap_parent_close(&p);
        if (strcmp(state, "ambiguous") == 0)
                r = mark_ambiguous(c, txid, tx->ambiguous_code, code, err);
        else if (strcmp(state, "failed") == 0)
                r = ap_terminal(c, tx, "failed", code, NULL, err);
        else {
                r = 0;
                if (tx->state != GLOVE_APPLY_COMMITTED) {
                        _cleanup_json_ json_t *f = json_pack("{s:{s:s}}", "exchange", "old_source", cand);
                        r = glove_apply_journal_append(c->journal, txid, "committed", f, ap_now(c), err);
                }
                if (r >= 0)
                        r = ap_terminal(c, glove_apply_journal_find(c->journal, txid), "applied", NULL, NULL, err);
        }
        if (r < 0)
                return r;
        return report_add(report, txid, grant_id, state, code);
}

int glove_apply_recover(const struct glove_apply_context *c, json_t **report, struct glove_error *err) {
        *report = json_array();
        if (!*report)
                return glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
        for (size_t i = 0; i < glove_apply_journal_count(c->journal); i++) {
                int r = reconcile(c, i, *report, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const struct glove_apply_tx *find(const struct glove_apply_context *c, const char *session, const char *grant) {
        char gid[300];
        snprintf(gid, sizeof(gid), "%s/%s", session, grant);
        return glove_apply_journal_find_grant(c->journal, gid);
}

int glove_apply_cleanup(const struct glove_apply_context *c, const char *session, const char *grant, json_t **result,
                        struct glove_error *err) {
        *result = NULL;
        const struct glove_apply_tx *tx = find(c, session, grant);
        if (!tx || tx->state != GLOVE_APPLY_APPLIED)
                return glove_error_set(err, ENOENT, "apply.not_applied", "%s of session %s has no applied change to clean up",
                                       grant, session);
        char txid[65];
        snprintf(txid, sizeof(txid), "%s", tx->txid);
        char cand[64];
        ap_candidate_name(txid, cand);
        if (!tx->cleaned) {
                const json_t *src = json_object_get(json_object_get(tx->reserved, "bindings"), "source");
                _cleanup_(ap_parent_close) struct ap_parent p = { .fd = -1 };
                int r = ap_open_parent(c, src, &p, err);
                if (r < 0)
                        return r;
                /* Only the recorded old source: the entry under the
                 * candidate's name must be the source's old inode. */
                /* Absent: already removed (idempotent). Anything else
                 * there (a file, a link, another directory) is not the old
                 * source: left alone, and nothing is recorded. */
                struct stat st;
                if (fstatat(p.fd, cand, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        if (!S_ISDIR(st.st_mode) || (int64_t)st.st_dev != jint(src, "dev") ||
                            (int64_t)st.st_ino != jint(src, "ino"))
                                return glove_error_set(err, ESTALE, "apply.remove",
                                                       "%s beside the source is not the old source any more; left alone",
                                                       cand);
                        if ((r = glove_apply_tree_remove(p.fd, cand, err)) < 0)
                                return r;
                } else if (errno != ENOENT) {
                        return glove_error_set(err, errno, "apply.remove", "%s beside the source: %s", cand,
                                               strerror(errno));
                }
                if ((r = glove_apply_journal_append(c->journal, txid, "cleaned", NULL, ap_now(c), err)) < 0)
                        return r;
        }
        *result = json_pack("{s:s,s:s,s:s}", "txid", txid, "state", "cleaned", "old_source", cand);
        return *result ? 0 : glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
}

int glove_apply_discard(const struct glove_apply_context *c, const char *session, const char *grant, json_t **result,
                        struct glove_error *err) {
        *result = NULL;
        const struct glove_apply_tx *tx = find(c, session, grant);
        if (!tx || (tx->state != GLOVE_APPLY_PREPARED && tx->state != GLOVE_APPLY_RESERVED))
                return glove_error_set(err, ENOENT, "apply.not_prepared",
                                       "%s of session %s has no prepared candidate to discard", grant, session);
        for (size_t i = 0; i < glove_apply_journal_count(c->journal); i++)
                if (glove_apply_journal_tx(c->journal, i) == tx) {
                        _cleanup_json_ json_t *report = json_array();
                        int r = report ? reconcile(c, i, report, err)
                                       : glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
                        if (r < 0)
                                return r;
                        *result = json_incref(json_array_get(report, 0));
                        return 0;
                }
        return glove_error_set(err, ENOENT, "apply.not_prepared", "no such transaction");
}

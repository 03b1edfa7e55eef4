/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The refinement receipt of a refinement-eval-v1 session (runtime.h,
 * glove_runtime_receipt_kind_check; docs/refinement.md, "The refinement
 * receipt"; spec session-policy.md, "Capability activation"): the outcome
 * synthesized from the keeper's observation, the launch's expectations and
 * the runtime's trusted facts, around the session's resource receipt, with
 * its own receipt MAC and envelope domain (receipts.h). Every terminal
 * receipt gloved appends goes through rt_receipt_append, which picks the
 * kind from the stored plan and refuses the other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/refinement/binding.h"
#include "glove/refinement/evaluator.h"
#include "glove/runtime/runtime.h"
#include "glove/store/receipts.h"
#include "runtime_internal.h"

#define REFINEMENT_RECEIPT_SCHEMA "glove.refinement-receipt-v1"

static void no_report(void *ctx, const char *code, const char *path, const char *message) {
        (void)code, (void)path, (void)message;
        *(bool *)ctx = true;
}

/* The plan's kind, decoded from its canonical bytes: 1 refinement, 0
 * ordinary, -EINVAL when the plan does not decode as either. */
static int plan_kind(const char *plan, size_t len, json_t **root, struct glove_refinement_binding *b) {
        json_t *v = NULL;
        if (!plan || glove_json_decode_canonical(plan, len, len + 1, GLOVE_JSON_OBJECT_ONLY, &v, NULL) < 0)
                return -EINVAL;
        enum glove_refinement_plan_kind kind;
        bool reported = false;
        struct glove_refinement_binding tmp;
        if (glove_refinement_plan_decode(v, &kind, b ? b : &tmp, no_report, &reported, NULL) < 0 || reported) {
                json_decref(v);
                return -EINVAL;
        }
        if (root)
                *root = v;
        else
                json_decref(v);
        return kind == GLOVE_REFINEMENT_PLAN_REFINEMENT ? 1 : 0;
}

int glove_runtime_receipt_kind_check(const char *plan, size_t plan_len, const char *kind, struct glove_error *err) {
        int k = plan_kind(plan, plan_len, NULL, NULL);
        if (k < 0 || !kind)
                return glove_error_set(err, EINVAL, "receipts.kind_mismatch",
                                       "the stored plan does not decode: no receipt kind can be chosen for it");
        const char *want = k ? GLOVE_STORE_RECEIPTS_KIND_REFINEMENT : GLOVE_STORE_RECEIPTS_KIND_TERMINAL;
        if (strcmp(kind, want) != 0)
                return glove_error_set(err, EINVAL, "receipts.kind_mismatch",
                                       "a %s receipt for a %s plan: its sessions end with %s receipts only", kind,
                                       k ? "refinement-eval-v1" : "resource", want);
        return 0;
}

const char *rt_receipt_kind(const struct glove_store_session *st) {
        return plan_kind(st->plan, st->plan_len, NULL, NULL) == 1 ? GLOVE_STORE_RECEIPTS_KIND_REFINEMENT
                                                                  : GLOVE_STORE_RECEIPTS_KIND_TERMINAL;
}

const json_t *rt_resource_receipt(const json_t *rc) {
        const json_t *inner = json_object_get(rc, "resource_receipt");
        return json_is_object(inner) ? inner : rc;
}

static enum glove_refinement_termination refinement_termination(enum glove_runtime_termination t) {
        switch (t) {
        case GLOVE_RUNTIME_TERM_EXIT:
                return GLOVE_REFINEMENT_TERMINATION_EXIT;
        case GLOVE_RUNTIME_TERM_SIGNAL:
                return GLOVE_REFINEMENT_TERMINATION_SIGNAL;
        case GLOVE_RUNTIME_TERM_LIMIT:
                return GLOVE_REFINEMENT_TERMINATION_LIMIT;
        case GLOVE_RUNTIME_TERM_STOPPED:
                return GLOVE_REFINEMENT_TERMINATION_STOPPED;
        case GLOVE_RUNTIME_TERM_START_FAILED:
                return GLOVE_REFINEMENT_TERMINATION_START_FAILED;
        case GLOVE_RUNTIME_TERM_LOST:
                break;
        }
        return GLOVE_REFINEMENT_TERMINATION_LOST;
}

static json_t *commitment(const struct glove_refinement_projection *p) {
        return json_pack("{s:s,s:s,s:s}", "content_digest", p->content_digest, "destination_alias",
                         p->destination_alias, "projection_id", p->projection_id);
}

/* The refinement receipt around resource (borrowed). */
static json_t *refinement_receipt(struct glove_runtime *rt, const struct glove_store_session *st,
                                  const json_t *plan_root, const struct glove_refinement_binding *b,
                                  const json_t *resource, const json_t *binding,
                                  const struct glove_runtime_receipt_facts *f, const json_t *keeper_outcome,
                                  struct glove_error *err) {
        (void)plan_root;
        /* What the launch took from the fixture; a binding without it (an
         * omitted binding, a start that failed before the launch read the
         * fixture) leaves only the fixture's digest known. */
        struct glove_refinement_expectations x;
        const json_t *xj = json_object_get(json_object_get(binding, "refinement"), "expectations");
        bool have_x = xj && glove_refinement_expectations_from_json(xj, &x, NULL) == 0 &&
                      strcmp(x.fixture_document_digest, b->fixture.content_digest) == 0;
        if (!have_x) {
                memset(&x, 0, sizeof(x));
                snprintf(x.fixture_document_digest, sizeof(x.fixture_document_digest), "%s",
                         b->fixture.content_digest);
        }
        struct glove_refinement_observation obs;
        const json_t *oj = json_object_get(keeper_outcome, "refinement");
        struct glove_error oe = { 0 };
        bool have_obs = have_x && json_is_object(oj) && glove_refinement_observation_from_json(oj, &x, &obs, &oe) == 0;
        if (have_x && json_is_object(oj) && !have_obs)
                glove_log(rt->o.log, GLOVE_LOG_WARNING, oe.code, GLOVE_LOG_FIELDS({ "session_id", st->session_id }),
                          "session %s: the keeper's observation does not decode: %s: the stream counts as lost",
                          st->session_id, oe.message);
        bool exited = f->termination == GLOVE_RUNTIME_TERM_EXIT;
        struct glove_refinement_facts facts = {
                .termination = refinement_termination(f->termination),
                .exit_code = exited && f->exit_code >= 0 && f->exit_code <= 255 ? f->exit_code : 0,
                .wall_latency_us = f->wall_time_ms > (uint64_t)GLOVE_REFINEMENT_INT_MAX / 1000
                                           ? (uint64_t)GLOVE_REFINEMENT_INT_MAX
                                           : f->wall_time_ms * 1000,
                /* Clean drain: the keeper read the terminal to its end
                 * (output_cut: still open when the drain bound ran out). */
                .drained = have_obs && json_is_true(json_object_get(keeper_outcome, "released")) &&
                           !json_is_true(json_object_get(keeper_outcome, "output_cut")),
                .resource_limit = f->termination == GLOVE_RUNTIME_TERM_LIMIT,
        };
        if (exited && (f->exit_code < 0 || f->exit_code > 255))
                facts.termination = GLOVE_REFINEMENT_TERMINATION_LOST;
        struct glove_refinement_outcome out;
        int r = glove_refinement_outcome_synthesize(&x, have_obs ? &obs : NULL, &facts, &out, err);
        if (r < 0)
                return NULL;
        _cleanup_json_ json_t *outcome = NULL;
        if (glove_json_decode_canonical(out.json, out.json_len, GLOVE_REFINEMENT_OUTCOME_MAX, GLOVE_JSON_OBJECT_ONLY,
                                        &outcome, err) < 0)
                return NULL;
        const json_t *evidence = json_object_get(outcome, "evidence");
        json_t *rc = json_pack(
                "{s:s,s:s,s:{s:b,s:O},s:s,s:O,s:s,s:s,s:{s:o,s:o,s:o,s:o},s:s,s:O,s:s,s:s,s:O,s:s}",
                "controller_plan_digest", st->controller_plan_digest, "evaluation_protocol", GLOVE_REFINEMENT_PROTOCOL,
                "evaluator", "complete", out.valid, "defects", json_object_get(evidence, "defects"),
                "matched_context_digest", b->matched_context_digest, "outcome", outcome, "outcome_commitment",
                out.commitment, "plan_content_digest", st->plan_content_digest, "projections", "base",
                commitment(&b->base), "candidate", commitment(&b->candidate), "fixture", commitment(&b->fixture),
                "selected", commitment(glove_refinement_binding_selected(b)), "receipt_mac", "", "resource_receipt",
                resource, "schema", REFINEMENT_RECEIPT_SCHEMA, "session_id", st->session_id, "stream",
                json_object_get(outcome, "stream"), "variant", glove_refinement_variant_name(b->variant));
        if (!rc) {
                glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory building the refinement receipt");
                return NULL;
        }
        char mac[65];
        if (glove_store_receipts_receipt_mac(rt->o.receipts, rc, mac, err) < 0 ||
            json_object_set_new(rc, "receipt_mac", json_string(mac)) < 0) {
                json_decref(rc);
                return NULL;
        }
        return rc;
}

int rt_receipt_append(struct glove_runtime *rt, const struct glove_store_session *st, const json_t *resource,
                      const json_t *binding, const struct glove_runtime_receipt_facts *f,
                      const json_t *keeper_outcome, int64_t now_ms, uint64_t *seq, json_t **appended,
                      struct glove_error *err) {
        if (appended)
                *appended = NULL;
        if (!resource)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory building a receipt");
        json_t *root = NULL;
        struct glove_refinement_binding b;
        int k = plan_kind(st->plan, st->plan_len, &root, &b);
        _cleanup_json_ json_t *plan_root = root;
        _cleanup_json_ json_t *receipt = NULL;
        const char *kind = GLOVE_STORE_RECEIPTS_KIND_TERMINAL;
        if (k == 1) {
                receipt = refinement_receipt(rt, st, plan_root, &b, resource, binding, f, keeper_outcome, err);
                if (!receipt)
                        return -(err && err->errnum ? err->errnum : ENOMEM);
                kind = GLOVE_STORE_RECEIPTS_KIND_REFINEMENT;
        } else {
                receipt = json_incref((json_t *)resource);
        }
        /* The registry's gate: a receipt of the plan's kind, never the other. */
        int r = glove_runtime_receipt_kind_check(st->plan, st->plan_len, kind, err);
        if (r >= 0)
                r = glove_store_receipts_append(rt->o.receipts, kind, st->session_id, receipt, now_ms, seq, err);
        if (r >= 0 && appended)
                *appended = json_incref(receipt);
        return r;
}

int glove_runtime_id_reusable(struct glove_runtime *rt, const char *id, struct glove_error *err) {
        uint64_t seq = 0;
        static const char *const kinds[] = { GLOVE_STORE_RECEIPTS_KIND_TERMINAL, GLOVE_STORE_RECEIPTS_KIND_REFINEMENT };
        for (size_t i = 0; rt->o.receipts && i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (glove_store_receipts_find(rt->o.receipts, kinds[i], id, &seq, NULL) == 1)
                        return glove_error_set(err, EEXIST, "session.id_in_use",
                                               "session id %s names receipt %llu, still in the receipt journal: an "
                                               "id is used again only once its receipt was acknowledged and "
                                               "compacted away",
                                               id, (unsigned long long)seq);
        char name[GLOVE_STORE_ID_MAX + 16];
        snprintf(name, sizeof(name), "bindings/%s.json", id);
        struct stat st;
        if (rt->o.keep_bindings && fstatat(rt->o.state_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return glove_error_set(err, EEXIST, "session.id_in_use",
                                       "session id %s: gloved keeps the launch binding of an earlier session with this "
                                       "id (its receipt commits to it; cleanup_session removes it)",
                                       id);
        return 0;
}

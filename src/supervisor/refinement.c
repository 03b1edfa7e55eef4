/* SPDX-License-Identifier: Apache-2.0 */
/*
 * refinement-eval-v1 at launch (prepare_internal.h, sv_launch_refinement;
 * docs/refinement.md, "At launch"; spec architecture.md, "Sage session
 * flow"): the fixture projection is read through its pinned bundle-root
 * descriptor (the bundle file checks: owner, mode, one link, no link
 * followed, identity unchanged, SHA-256 of the bytes its name), strictly
 * decoded, held against the plan and the session, and never mounted; the
 * launch keeps its bytes for the keeper's evaluator and records the
 * refinement binding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/refinement/binding.h"
#include "glove/refinement/context.h"
#include "glove/refinement/evaluator.h"
#include "glove/refinement/fixture.h"
#include "glove/supervisor/bundle.h"
#include "glove/supervisor/prepare.h"
#include "internal.h"
#include "prepare_internal.h"

static void no_report(void *ctx, const char *code, const char *path, const char *message) {
        (void)code, (void)path, (void)message;
        *(bool *)ctx = true;
}

void sv_launch_refinement_free(struct glove_supervisor_launch *l) {
        free(l->refinement.fixture);
        free(l->refinement.fixture_projection_id);
        json_decref(l->refinement.binding);
        l->refinement = (struct sv_refinement){ 0 };
}

static json_t *commitment(const struct glove_refinement_projection *p) {
        return json_pack("{s:s,s:s,s:s}", "content_digest", p->content_digest, "destination_alias",
                         p->destination_alias, "projection_id", p->projection_id);
}

int sv_launch_refinement(struct glove_supervisor_launch *l, const json_t *root, struct glove_error *err) {
        enum glove_refinement_plan_kind kind;
        struct glove_refinement_binding b;
        bool reported = false;
        struct glove_error e = { 0 };
        if (glove_refinement_plan_decode(root, &kind, &b, no_report, &reported, &e) < 0 || reported)
                return glove_error_set(err, EINVAL, "launch.invalid_plan",
                                       "the plan does not decode: its refinement binding");
        if (kind != GLOVE_REFINEMENT_PLAN_REFINEMENT)
                return 0;
        const struct glove_supervisor_runtime_config *cfg = l->cfg;
        if (!cfg->library_bundle_root)
                return glove_error_set(err, EOPNOTSUPP, "launch.bundles_unavailable",
                                       "a refinement-eval-v1 plan needs the library bundle root (its fixture is a "
                                       "file there) and this gloved has none");
        /* The fixture: the bundle file checks, then the fixture's own. */
        int fd = -1;
        struct stat st;
        int r = glove_bundle_file_open(cfg->library_bundle_root_fd, b.fixture.content_digest, cfg->agent_uid, &fd,
                                       &st, err);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        if (r >= 0) {
                r = glove_bundle_file_verify(cfg->library_bundle_root_fd, b.fixture.content_digest, fd, &st, &data,
                                             &len, err);
                close(fd);
        }
        if (r < 0) {
                glove_error_prefix(err, "refinement fixture (projection %s)", b.fixture.projection_id);
                return r;
        }
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = NULL;
        r = glove_refinement_fixture_decode(data, len, &f, NULL, err);
        if (r < 0) {
                glove_error_prefix(err, "refinement fixture (projection %s)", b.fixture.projection_id);
                return r;
        }
        struct glove_refinement_plan_context pc;
        const char **handles = NULL;
        char pcd[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        r = glove_refinement_plan_context_from_plan(root, &b, &pc, &handles, err);
        if (r >= 0)
                r = glove_refinement_plan_context_digest(&pc, pcd, err);
        free(handles);
        if (r < 0)
                return r;
        struct glove_refinement_bound bound = {
                .session_id = l->session_id,
                .variant = b.variant,
                .fixture = b.fixture,
                .base = b.base,
                .candidate = b.candidate,
                .matched_context_digest = b.matched_context_digest,
                .plan_context_digest = pcd,
        };
        char path[GLOVE_JSON_PATH_MAX];
        r = glove_refinement_fixture_check(f, &bound, path, err);
        if (r < 0) {
                glove_error_prefix(err, "refinement fixture (projection %s)", b.fixture.projection_id);
                return r;
        }
        /* What the keeper's evaluator and gloved's outcome need. */
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev = NULL;
        r = glove_refinement_evaluator_new(f, &ev, err);
        struct glove_refinement_expectations x;
        json_t *xj = NULL;
        if (r >= 0)
                r = glove_refinement_evaluator_expectations(ev, &x);
        if (r >= 0)
                r = glove_refinement_expectations_json(&x, &xj, err);
        if (r < 0)
                return r;
        json_t *projections = json_pack("{s:o,s:o,s:o,s:o}", "base", commitment(&b.base), "candidate",
                                        commitment(&b.candidate), "fixture", commitment(&b.fixture), "selected",
                                        commitment(glove_refinement_binding_selected(&b)));
        json_t *rb = json_pack("{s:s,s:o,s:s,s:s,s:o,s:s}", "evaluation_protocol", GLOVE_REFINEMENT_PROTOCOL,
                               "expectations", xj, "matched_context_digest", b.matched_context_digest,
                               "plan_context_digest", pcd, "projections", projections, "variant",
                               glove_refinement_variant_name(b.variant));
        l->refinement.fixture_projection_id = strdup(b.fixture.projection_id);
        if (!rb || !l->refinement.fixture_projection_id) {
                json_decref(rb);
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        }
        l->refinement.binding = rb;
        l->refinement.fixture = data;
        l->refinement.fixture_len = len;
        data = NULL;
        return 0;
}

bool sv_launch_refinement_skips(const struct glove_supervisor_launch *l, const char *projection_id) {
        return l->refinement.binding && projection_id &&
               strcmp(projection_id, l->refinement.fixture_projection_id) == 0;
}

const char *glove_supervisor_launch_refinement_fixture(const struct glove_supervisor_launch *l, size_t *len) {
        if (!l || !l->refinement.binding)
                return NULL;
        if (len)
                *len = l->refinement.fixture_len;
        return l->refinement.fixture;
}

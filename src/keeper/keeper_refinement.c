/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper's part of refinement-eval-v1 (keeper.h, glove_keeper_args
 * refinement_fixture; docs/refinement.md, "The stream and the outcome"):
 * the evaluator made from the fixture of the launch, fed every byte of the
 * terminal's output, and its observation in the keeper's outcome.
 */
#include <errno.h>

#include "glove/refinement/evaluator.h"
#include "glove/refinement/fixture.h"
#include "keeper_internal.h"

int glove_keeper_refinement_start(struct glove_keeper *k, const struct glove_keeper_args *a, struct glove_error *err) {
        if (!a->refinement_fixture)
                return 0;
        /* Checked by gloved at launch; decoded again here, from the
         * launch's own bytes, for the evaluator. */
        struct glove_refinement_fixture *f = NULL;
        int r = glove_refinement_fixture_decode(a->refinement_fixture, a->refinement_fixture_len, &f, NULL, err);
        if (r >= 0)
                r = glove_refinement_evaluator_new(f, &k->ev, err);
        glove_refinement_fixture_free(f);
        return r;
}

void glove_keeper_refinement_feed(struct glove_keeper *k, const void *buf, size_t n) {
        if (!k->ev || k->ev_failed)
                return;
        struct glove_error e = { 0 };
        if (glove_refinement_evaluator_feed(k->ev, buf, n, &e) < 0) {
                k->ev_failed = true;
                glove_keeper_log(k, "the refinement evaluator failed: %s: %s", e.code, e.message);
        }
}

json_t *glove_keeper_refinement_observation(const struct glove_keeper *k) {
        struct glove_refinement_observation obs;
        json_t *v = NULL;
        struct glove_error e = { 0 };
        if (k->ev_failed || glove_refinement_evaluator_observe(k->ev, &obs, &e) < 0 ||
            glove_refinement_observation_json(&obs, &v, &e) < 0)
                return json_null();
        return v;
}

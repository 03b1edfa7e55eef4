/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/refinement/*.c
/*
 * libFuzzer target: the refinement-eval-v1 fixture decoder and the evaluator
 * (docs/refinement.md). The input is decoded as a fixture; when it decodes,
 * an evaluator is made from it and fed the input itself as the terminal
 * stream, cut into chunks at byte values, then ended both ways: finish, and
 * observe + the wire forms + synthesize (what the keeper and gloved do).
 * Built and run by scripts/fuzz.sh; seeds in fuzz/corpus/refinement_fixture/.
 *
 * Invariants besides memory safety: a refused fixture names a refinement.*
 * code; the two routes give the same outcome bytes and commitment; the
 * outcome is canonical JSON within GLOVE_REFINEMENT_OUTCOME_MAX.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/json.h"
#include "glove/refinement/evaluator.h"
#include "glove/refinement/fixture.h"

static void feed_all(struct glove_refinement_evaluator *ev, const uint8_t *data, size_t size) {
        size_t at = 0;
        for (size_t i = 0; i < size; i++)
                if (data[i] == '\n' || i + 1 == size) {
                        if (glove_refinement_evaluator_feed(ev, data + at, i + 1 - at, NULL) < 0)
                                abort();
                        at = i + 1;
                }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct glove_refinement_fixture *f = NULL;
        struct glove_error err = { 0 };
        if (glove_refinement_fixture_decode(data, size, &f, NULL, &err) < 0) {
                if (!err.code || strncmp(err.code, "refinement.", 11) != 0)
                        abort();
                return 0;
        }
        struct glove_refinement_facts facts = {
                .termination = (enum glove_refinement_termination)(size % 6),
                .exit_code = (int)(size % 256),
                .wall_latency_us = size * 1000,
                .drained = size % 2 == 0,
                .resource_limit = size % 7 == 0,
        };
        struct glove_refinement_evaluator *a = NULL, *b = NULL;
        if (glove_refinement_evaluator_new(f, &a, NULL) < 0 || glove_refinement_evaluator_new(f, &b, NULL) < 0)
                abort();
        feed_all(a, data, size);
        feed_all(b, data, size);
        static struct glove_refinement_outcome o1, o2;
        if (glove_refinement_evaluator_finish(a, &facts, &o1, NULL) < 0)
                abort();
        struct glove_refinement_expectations x, x2;
        struct glove_refinement_observation obs, obs2;
        json_t *xj = NULL, *oj = NULL;
        if (glove_refinement_evaluator_expectations(b, &x) < 0 || glove_refinement_evaluator_observe(b, &obs, NULL) < 0 ||
            glove_refinement_expectations_json(&x, &xj, NULL) < 0 || glove_refinement_observation_json(&obs, &oj, NULL) < 0 ||
            glove_refinement_expectations_from_json(xj, &x2, NULL) < 0 ||
            glove_refinement_observation_from_json(oj, &x2, &obs2, NULL) < 0 ||
            glove_refinement_outcome_synthesize(&x2, &obs2, &facts, &o2, NULL) < 0)
                abort();
        if (o1.json_len != o2.json_len || memcmp(o1.json, o2.json, o1.json_len) != 0 ||
            strcmp(o1.commitment, o2.commitment) != 0)
                abort();
        if (o1.json_len == 0 || o1.json_len >= GLOVE_REFINEMENT_OUTCOME_MAX ||
            glove_json_is_canonical(o1.json, o1.json_len, GLOVE_REFINEMENT_OUTCOME_MAX, 0, NULL) != 1)
                abort();
        json_decref(xj);
        json_decref(oj);
        glove_refinement_evaluator_free(a);
        glove_refinement_evaluator_free(b);
        glove_refinement_fixture_free(f);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/supervisor/adapter.c src/supervisor/decode.c src/supervisor/launch.c src/supervisor/plan.c src/supervisor/policy.c src/supervisor/policy_extra.c src/supervisor/policy_load.c src/supervisor/policy_paths.c src/supervisor/policy_query.c src/supervisor/exposure*.c src/store/journal.c src/store/journal_rewrite.c src/store/dirs.c src/container/region.c src/refinement/*.c
/*
 * libFuzzer target: the session policy decoder
 * (glove_supervisor_policy_decode_ex). Built and run by scripts/fuzz.sh.
 *
 * Invariants checked besides memory safety (ASan/UBSan): a rejection always
 * carries a "policy." code, a JSON path starting with "$", and a message
 * that starts with that path; an accepted policy answers every query and
 * re-decodes to the same digest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/supervisor/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = NULL;
        char path[GLOVE_JSON_PATH_MAX];
        int r = glove_supervisor_policy_decode_ex(data, size, &p, path, sizeof(path), &err);
        if (r < 0) {
                if (p || !err.code || strncmp(err.code, "policy.", 7) != 0 || path[0] != '$' ||
                    strncmp(err.message, path, strlen(path)) != 0)
                        abort();
                return 0;
        }
        if (!p || glove_supervisor_policy_revision(p) < 1 || glove_supervisor_policy_max_plan_ttl_ms(p) < 1 ||
            strlen(glove_supervisor_policy_digest(p)) != 64)
                abort();
        (void)glove_supervisor_policy_template_can_launch(p, "codex-safe");
        const struct glove_supervisor_launch_template *l;
        if (glove_supervisor_policy_template_launch(p, "codex-safe", &l, NULL) == 0) {
                char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
                if (glove_supervisor_launch_template_digest(l, hex, NULL) < 0)
                        abort();
        }
        glove_supervisor_policy_free(p);
        return 0;
}

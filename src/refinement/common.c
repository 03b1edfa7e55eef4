/* SPDX-License-Identifier: Apache-2.0 */
/* refinement-eval-v1: shared vocabulary (see common.h). */
#include "glove/refinement/common.h"

#include <string.h>

const char *glove_refinement_variant_name(int variant) {
        switch (variant) {
        case GLOVE_REFINEMENT_VARIANT_BASE:
                return "base";
        case GLOVE_REFINEMENT_VARIANT_CANDIDATE:
                return "candidate";
        default:
                return NULL;
        }
}

static bool str_equal(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

bool glove_refinement_projection_equal(const struct glove_refinement_projection *a,
                                       const struct glove_refinement_projection *b) {
        return a && b && str_equal(a->projection_id, b->projection_id) &&
               str_equal(a->content_digest, b->content_digest) &&
               str_equal(a->destination_alias, b->destination_alias);
}

static bool id_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == ':' || c == '-';
}

static bool alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool glove_refinement_plan_identifier_valid(const char *s) {
        if (!s)
                return false;
        size_t n = 0;
        for (; s[n]; n++)
                if (n >= GLOVE_REFINEMENT_ID_MAX || !id_char(s[n]))
                        return false;
        return n > 0;
}

bool glove_refinement_id_valid(const char *s) {
        return glove_refinement_plan_identifier_valid(s) && alnum(s[0]);
}

bool glove_refinement_hex64_valid(const char *s) {
        if (!s)
                return false;
        size_t n = 0;
        for (; s[n]; n++)
                if (n >= GLOVE_DIGEST_SHA256_HEX_LEN || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == GLOVE_DIGEST_SHA256_HEX_LEN;
}

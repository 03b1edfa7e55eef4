/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the refinement unit tests: files of tests/fixtures/refinement,
 * fixtures made from the worked example, and a reason collector. */
#pragma once

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/refinement/binding.h"
#include "glove/refinement/context.h"
#include "glove/refinement/fixture.h"

/* The whole file FIXTURE_DIR/name (malloc'd, NUL-terminated); *len its size. */
static inline char *read_fixture(const char *name, size_t *len) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, name);
        FILE *f = fopen(path, "rb");
        if (!f)
                fail_msg("cannot open %s", path);
        size_t cap = 4096, n = 0;
        char *buf = malloc(cap);
        assert_non_null(buf);
        size_t got;
        while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
                n += got;
                if (cap - n - 1 == 0) {
                        cap *= 2;
                        buf = realloc(buf, cap);
                        assert_non_null(buf);
                }
        }
        fclose(f);
        buf[n] = '\0';
        if (len)
                *len = n;
        return buf;
}

/* A JSON file of FIXTURE_DIR, decoded strictly (any layout). */
static inline json_t *read_json(const char *name) {
        size_t len;
        _cleanup_free_ char *text = read_fixture(name, &len);
        json_t *v = NULL;
        struct glove_error err = { 0 };
        if (glove_json_decode_strict(text, len, 1 << 20, GLOVE_JSON_OBJECT_ONLY, &v, &err) < 0)
                fail_msg("%s: %s", name, err.message);
        return v;
}

/* Canonical bytes of v (malloc'd). */
static inline char *canonical(const json_t *v, size_t *len) {
        char *out = NULL;
        struct glove_error err = { 0 };
        if (glove_json_encode_canonical(v, &out, len, &err) < 0)
                fail_msg("encode: %s", err.message);
        return out;
}

/* Decodes the canonical encoding of v as a fixture; fails the test when
 * it is refused. */
static inline struct glove_refinement_fixture *fixture_of(const json_t *v) {
        size_t len;
        _cleanup_free_ char *text = canonical(v, &len);
        struct glove_refinement_fixture *f = NULL;
        struct glove_error err = { 0 };
        char path[GLOVE_JSON_PATH_MAX];
        if (glove_refinement_fixture_decode(text, len, &f, path, &err) < 0)
                fail_msg("fixture refused: %s %s", err.code, err.message);
        return f;
}

/* Sets (or with v NULL deletes) the member at a dotted path of objects,
 * "expected.required_literals"; v is stolen. */
static inline void jset(json_t *root, const char *dotted, json_t *v) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", dotted);
        json_t *o = root;
        char *save = NULL, *k = strtok_r(buf, ".", &save);
        for (char *next = strtok_r(NULL, ".", &save); next; k = next, next = strtok_r(NULL, ".", &save)) {
                o = json_object_get(o, k);
                assert_non_null(o);
        }
        if (v)
                assert_int_equal(json_object_set_new(o, k, v), 0);
        else
                assert_int_equal(json_object_del(o, k), 0);
}

/* The reasons a binding function reported. */
#define MAX_REASONS 16
struct reasons {
        size_t n;
        const char *code[MAX_REASONS];
        char path[MAX_REASONS][GLOVE_JSON_PATH_MAX];
        char message[MAX_REASONS][GLOVE_ERROR_MESSAGE_MAX];
};

static inline void collect(void *ctx, const char *code, const char *path, const char *message) {
        struct reasons *r = ctx;
        assert_true(r->n < MAX_REASONS);
        r->code[r->n] = code;
        snprintf(r->path[r->n], GLOVE_JSON_PATH_MAX, "%s", path);
        snprintf(r->message[r->n], GLOVE_ERROR_MESSAGE_MAX, "%s", message);
        r->n++;
}

/* What example-plan.json (or plan) binds, for fixture checks: b and the
 * plan-context digest pc must outlive bound. */
static inline void bound_of(const json_t *plan, const char *session_id, struct glove_refinement_binding *b,
                            char pc[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_refinement_bound *bound) {
        enum glove_refinement_plan_kind kind;
        struct reasons rs = { 0 };
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_plan_decode(plan, &kind, b, collect, &rs, &err), 0);
        assert_int_equal(kind, GLOVE_REFINEMENT_PLAN_REFINEMENT);
        struct glove_refinement_plan_context ctx;
        const char **handles = NULL;
        assert_int_equal(glove_refinement_plan_context_from_plan(plan, b, &ctx, &handles, &err), 0);
        assert_int_equal(glove_refinement_plan_context_digest(&ctx, pc, &err), 0);
        free(handles);
        *bound = (struct glove_refinement_bound){
                .session_id = session_id,
                .variant = b->variant,
                .fixture = b->fixture,
                .base = b->base,
                .candidate = b->candidate,
                .matched_context_digest = b->matched_context_digest,
                .plan_context_digest = pc,
        };
}

/* SPDX-License-Identifier: Apache-2.0 */
/* glove/refinement/evaluator.h: the outcome of a stream is the same however
 * it is cut into chunks (every test stream is also fed one byte at a time,
 * short ones at every split point); literals are found across chunk
 * boundaries; UTF-8 is judged across them; the trusted facts decide
 * termination, exit code, latency and resource limits; printed JSON changes
 * nothing. */
#include "glove/refinement/evaluator.h"

#include "helpers.h"

/* A fixture from the worked example with these literals (NULL-terminated
 * lists, given sorted), exit code and maximum latency (0: none). */
static struct glove_refinement_fixture *make(const char *const *required, const char *const *forbidden, int exit_code,
                                             int64_t max_latency_us) {
        _cleanup_json_ json_t *v = read_json("example-fixture.json");
        json_t *req = json_array(), *forb = json_array();
        for (size_t i = 0; required && required[i]; i++)
                json_array_append_new(req, json_string(required[i]));
        for (size_t i = 0; forbidden && forbidden[i]; i++)
                json_array_append_new(forb, json_string(forbidden[i]));
        jset(v, "expected.required_literals", req);
        jset(v, "expected.forbidden_literals", forb);
        jset(v, "expected.exit_code", json_integer(exit_code));
        jset(v, "expected.max_wall_latency_us", max_latency_us ? json_integer(max_latency_us) : NULL);
        return fixture_of(v);
}

#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static const struct glove_refinement_facts CLEAN = {
        .termination = GLOVE_REFINEMENT_TERMINATION_EXIT,
        .exit_code = 0,
        .wall_latency_us = 1500000,
        .drained = true,
        .resource_limit = false,
};

/* Feeds data cut at the given offsets (sorted, within len) and finishes. */
static void run_cuts(const struct glove_refinement_fixture *f, const char *data, size_t len, const size_t *cuts,
                     size_t n_cuts, const struct glove_refinement_facts *facts, struct glove_refinement_outcome *out) {
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_evaluator_new(f, &ev, &err), 0);
        size_t at = 0;
        for (size_t i = 0; i <= n_cuts; i++) {
                size_t end = i < n_cuts ? cuts[i] : len;
                assert_int_equal(glove_refinement_evaluator_feed(ev, data + at, end - at, &err), 0);
                at = end;
        }
        assert_int_equal(glove_refinement_evaluator_bytes(ev), len);
        if (glove_refinement_evaluator_finish(ev, facts, out, &err) < 0)
                fail_msg("finish: %s", err.message);
}

static void run_bytes(const struct glove_refinement_fixture *f, const char *data, size_t len,
                      const struct glove_refinement_facts *facts, struct glove_refinement_outcome *out) {
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev = NULL;
        assert_int_equal(glove_refinement_evaluator_new(f, &ev, NULL), 0);
        for (size_t i = 0; i < len; i++)
                assert_int_equal(glove_refinement_evaluator_feed(ev, data + i, 1, NULL), 0);
        assert_int_equal(glove_refinement_evaluator_feed(ev, NULL, 0, NULL), 0);
        assert_int_equal(glove_refinement_evaluator_finish(ev, facts, out, NULL), 0);
}

static void same_outcome(const struct glove_refinement_outcome *a, const struct glove_refinement_outcome *b,
                         const char *how) {
        if (a->json_len != b->json_len || memcmp(a->json, b->json, a->json_len) != 0)
                fail_msg("%s gives another outcome:\n %s\n %s", how, b->json, a->json);
        assert_string_equal(a->commitment, b->commitment);
}

/* The two halves through their wire forms (the keeper's observation and the
 * launch's expectations, each encoded and decoded again). */
static void run_halves(const struct glove_refinement_fixture *f, const char *data, size_t len,
                       const struct glove_refinement_facts *facts, struct glove_refinement_outcome *out) {
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_evaluator_new(f, &ev, &err), 0);
        assert_int_equal(glove_refinement_evaluator_feed(ev, data, len, &err), 0);
        struct glove_refinement_expectations x, x2;
        struct glove_refinement_observation obs, obs2;
        assert_int_equal(glove_refinement_evaluator_expectations(ev, &x), 0);
        assert_int_equal(glove_refinement_evaluator_observe(ev, &obs, &err), 0);
        assert_int_equal(glove_refinement_evaluator_observe(ev, &obs2, &err), -EINVAL);
        _cleanup_json_ json_t *xj = NULL, *oj = NULL;
        assert_int_equal(glove_refinement_expectations_json(&x, &xj, &err), 0);
        assert_int_equal(glove_refinement_observation_json(&obs, &oj, &err), 0);
        assert_int_equal(glove_refinement_expectations_from_json(xj, &x2, &err), 0);
        assert_int_equal(glove_refinement_observation_from_json(oj, &x2, &obs2, &err), 0);
        if (glove_refinement_outcome_synthesize(&x2, &obs2, facts, out, &err) < 0)
                fail_msg("synthesize: %s", err.message);
}

/* The outcome of data fed whole, after checking that byte-at-a-time
 * feeding, pseudo-random chunks and (for short streams) every split into
 * two and three chunks give the same bytes. */
static void evaluate(const struct glove_refinement_fixture *f, const char *data, size_t len,
                     const struct glove_refinement_facts *facts, struct glove_refinement_outcome *out) {
        run_cuts(f, data, len, NULL, 0, facts, out);
        struct glove_refinement_outcome o;
        run_halves(f, data, len, facts, &o);
        same_outcome(out, &o, "observe, wire forms, synthesize");
        run_bytes(f, data, len, facts, &o);
        same_outcome(out, &o, "byte-at-a-time");
        uint32_t x = 2463534242u;
        for (int round = 0; round < 4; round++) {
                size_t cuts[64], n = 0, at = 0;
                while (n < 64) {
                        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                        at += 1 + x % 7;
                        if (at >= len)
                                break;
                        cuts[n++] = at;
                }
                run_cuts(f, data, len, cuts, n, facts, &o);
                same_outcome(out, &o, "random chunks");
        }
        if (len <= 200)
                for (size_t i = 0; i <= len; i++) {
                        size_t cut[1] = { i };
                        run_cuts(f, data, len, cut, 1, facts, &o);
                        same_outcome(out, &o, "a split in two");
                }
        if (len <= 48)
                for (size_t i = 0; i <= len; i++)
                        for (size_t k = i; k <= len; k++) {
                                size_t cut[2] = { i, k };
                                run_cuts(f, data, len, cut, 2, facts, &o);
                                same_outcome(out, &o, "a split in three");
                        }
}

static json_t *outcome_json(const struct glove_refinement_outcome *o) {
        json_t *v = NULL;
        assert_int_equal(glove_json_decode_canonical(o->json, o->json_len, GLOVE_REFINEMENT_OUTCOME_MAX, 0, &v, NULL),
                         0);
        return v;
}

static char *metric_text(const struct glove_refinement_outcome *o, const char *key) {
        _cleanup_json_ json_t *v = outcome_json(o);
        json_t *m = json_object_get(json_object_get(v, "metrics"), key);
        assert_non_null(m);
        size_t len;
        return canonical(m, &len);
}

static void assert_metric(const struct glove_refinement_outcome *o, const char *key, const char *want) {
        _cleanup_free_ char *got = metric_text(o, key);
        if (strcmp(got, want) != 0)
                fail_msg("metrics.%s is %s, want %s (%s)", key, got, want, o->json);
}

static const char *const EX_REQUIRED[] = { "PASS lint", "done: 3 files", "\xe2\x9c\x93 all checks passed", NULL };
static const char *const EX_FORBIDDEN[] = { "Traceback (most recent call last)", NULL };
#define EX_STREAM "\x1b[1mPASS lint\x1b[0m\r\ndone: 3 files\r\n\xe2\x9c\x93 all checks passed\r\n"

/* The whole outcome of the worked example, byte for byte. */
static void test_golden(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(EX_REQUIRED, EX_FORBIDDEN, 0, 120000000);
        struct glove_refinement_outcome o;
        evaluate(f, EX_STREAM, strlen(EX_STREAM), &CLEAN, &o);
        uint8_t md[32];
        char sha[65], want[2048];
        assert_int_equal(glove_digest_sha256(EX_STREAM, strlen(EX_STREAM), md, NULL), 0);
        glove_digest_hex_encode(md, 32, sha, sizeof(sha));
        snprintf(want, sizeof(want),
                 "{\"evidence\":{\"defects\":[],\"status\":\"valid\"},\"fixture_document_digest\":\"%s\","
                 "\"metrics\":{\"failed_assertions\":[],\"forbidden_literals\":{\"found\":[],\"total\":1},"
                 "\"latency_us\":1500000,\"passed\":true,\"required_literals\":{\"missing\":[],\"total\":3}},"
                 "\"observed\":{\"exit_code\":0,\"resource_limit\":false,\"termination\":\"exit\"},"
                 "\"schema\":\"glove.refinement-outcome-v1\",\"stream\":{\"bytes\":%zu,\"sha256\":\"%s\"}}",
                 f->document_digest, strlen(EX_STREAM), sha);
        assert_string_equal(o.json, want);
        assert_int_equal(o.json_len, strlen(want));
        assert_true(o.valid);
        assert_true(o.passed);
        assert_int_equal(o.latency_us, 1500000);
        assert_int_equal(o.stream_bytes, strlen(EX_STREAM));
        assert_string_equal(o.stream_sha256, sha);
        assert_int_equal(glove_digest_sha256(want, strlen(want), md, NULL), 0);
        glove_digest_hex_encode(md, 32, sha, sizeof(sha));
        assert_string_equal(o.commitment, sha);
        /* Exactly the five metrics. */
        _cleanup_json_ json_t *v = outcome_json(&o);
        assert_int_equal(json_object_size(json_object_get(v, "metrics")), 5);
}

static enum glove_refinement_termination termination_of(const char *name) {
        for (int k = 0; glove_refinement_termination_name(k); k++)
                if (strcmp(glove_refinement_termination_name(k), name) == 0)
                        return (enum glove_refinement_termination)k;
        fail_msg("unknown termination %s", name);
        return GLOVE_REFINEMENT_TERMINATION_LOST;
}

/* The worked example's outcomes as the Python reference computes them
 * (tests/fixtures/refinement/outcomes.json), byte for byte. */
static void test_reference_outcomes(void **state) {
        (void)state;
        _cleanup_json_ json_t *all = read_json("outcomes.json");
        size_t flen;
        _cleanup_free_ char *ftext = read_fixture("example-fixture.json", &flen);
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = NULL;
        assert_int_equal(glove_refinement_fixture_decode(ftext, flen, &f, NULL, NULL), 0);
        json_t *cases = json_object_get(all, "cases");
        assert_int_equal(json_array_size(cases), 4);
        size_t i;
        json_t *c;
        json_array_foreach(cases, i, c) {
                const char *hex = json_string_value(json_object_get(c, "stream_hex"));
                size_t len = strlen(hex) / 2;
                _cleanup_free_ char *stream = malloc(len + 1);
                assert_int_equal(glove_digest_hex_decode(hex, strlen(hex), (uint8_t *)stream, len, NULL), 0);
                json_t *fj = json_object_get(c, "facts");
                struct glove_refinement_facts facts = {
                        .termination = termination_of(json_string_value(json_object_get(fj, "termination"))),
                        .exit_code = (int)json_integer_value(json_object_get(fj, "exit_code")),
                        .wall_latency_us = (uint64_t)json_integer_value(json_object_get(fj, "wall_latency_us")),
                        .drained = json_is_true(json_object_get(fj, "drained")),
                        .resource_limit = json_is_true(json_object_get(fj, "resource_limit")),
                };
                struct glove_refinement_outcome o;
                evaluate(f, stream, len, &facts, &o);
                const char *want = json_string_value(json_object_get(c, "outcome"));
                if (strcmp(o.json, want) != 0)
                        fail_msg("case %s:\n C      %s\n Python %s", json_string_value(json_object_get(c, "name")),
                                 o.json, want);
        }
}

/* Literals found wherever they lie, whatever the chunks. */
static void test_literals_across_chunks(void **state) {
        (void)state;
        const char *const req[] = { "a", "aab", "abcdef", "abcdefgh", "zz\r\nzz", NULL };
        const char *const forb[] = { "abcdeg", "fgh!", NULL };
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(req, forb, 0, 0);
        struct glove_refinement_outcome o;
        const char *s = "xxaaab--abcdefgh--zz\r\nzz-abcde";
        evaluate(f, s, strlen(s), &CLEAN, &o);
        assert_true(o.passed);
        assert_metric(&o, "required_literals", "{\"missing\":[],\"total\":5}");
        assert_metric(&o, "forbidden_literals", "{\"found\":[],\"total\":2}");
        /* A near miss at the end, and a forbidden literal found. */
        s = "aab abcdefg abcdefgh! zz\r\nz";
        evaluate(f, s, strlen(s), &CLEAN, &o);
        assert_false(o.passed);
        assert_metric(&o, "required_literals", "{\"missing\":[4],\"total\":5}");
        assert_metric(&o, "forbidden_literals", "{\"found\":[1],\"total\":2}");
        assert_metric(&o, "failed_assertions", "[\"forbidden_literals\",\"required_literals\"]");
        /* Literals inside literals, and sharing prefixes and suffixes (the
         * automaton's failure and dictionary links). */
        const char *const req2[] = { "bc", "bcd", "c", "he", "hers", "his", "she", "xabcdy", NULL };
        const char *const forb2[] = { "abce", "cdx", NULL };
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *g = make(req2, forb2, 0, 0);
        s = "ushers xabcdy";
        evaluate(g, s, strlen(s), &CLEAN, &o);
        assert_metric(&o, "required_literals", "{\"missing\":[5],\"total\":8}");
        assert_metric(&o, "forbidden_literals", "{\"found\":[],\"total\":2}");
        s = "abcdx";
        evaluate(g, s, strlen(s), &CLEAN, &o);
        assert_metric(&o, "required_literals", "{\"missing\":[3,4,5,6,7],\"total\":8}");
        assert_metric(&o, "forbidden_literals", "{\"found\":[1],\"total\":2}");
        /* Nothing found in an empty stream. */
        evaluate(f, "", 0, &CLEAN, &o);
        assert_metric(&o, "required_literals", "{\"missing\":[0,1,2,3,4],\"total\":5}");
}

/* A literal of the largest length, fed one byte at a time amid other
 * bytes; the same with its last byte changed is not found. */
static void test_long_literal(void **state) {
        (void)state;
        char lit[GLOVE_REFINEMENT_LITERAL_MAX + 1];
        for (size_t i = 0; i < GLOVE_REFINEMENT_LITERAL_MAX; i++)
                lit[i] = (char)('a' + i % 26);
        lit[GLOVE_REFINEMENT_LITERAL_MAX] = '\0';
        const char *const req[] = { lit, NULL };
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(req, NULL, 0, 0);
        size_t len = 3000;
        _cleanup_free_ char *s = malloc(len);
        memset(s, '.', len);
        memcpy(s + 1500, lit, GLOVE_REFINEMENT_LITERAL_MAX);
        struct glove_refinement_outcome o;
        evaluate(f, s, len, &CLEAN, &o);
        assert_true(o.passed);
        s[1500 + GLOVE_REFINEMENT_LITERAL_MAX - 1] = '!';
        evaluate(f, s, len, &CLEAN, &o);
        assert_false(o.passed);
        assert_metric(&o, "required_literals", "{\"missing\":[0],\"total\":1}");
        /* At the very start and at the very end. */
        memset(s, '.', len);
        memcpy(s, lit, GLOVE_REFINEMENT_LITERAL_MAX);
        evaluate(f, s, len, &CLEAN, &o);
        assert_true(o.passed);
        memset(s, '.', len);
        memcpy(s + len - GLOVE_REFINEMENT_LITERAL_MAX, lit, GLOVE_REFINEMENT_LITERAL_MAX);
        evaluate(f, s, len, &CLEAN, &o);
        assert_true(o.passed);
}

#define S(x) x, sizeof(x) - 1

/* UTF-8 is judged on the whole stream, across chunks (RFC 3629). */
static void test_utf8(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(NULL, NULL, 0, 0);
        struct {
                const char *bytes;
                size_t len;
                bool valid;
        } cases[] = {
                { S("plain ascii\r\n\x1b[0m\x00\x7f"), true },
                { S("\xc2\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \xed\x9f\xbf \xee\x80\x80"), true },
                { S("ok \xc0\x80"), false },             /* overlong NUL */
                { S("ok \xc1\xbf"), false },             /* overlong, 2 bytes */
                { S("ok \xe0\x80\xaf"), false },         /* overlong, 3 bytes */
                { S("ok \xf0\x8f\xbf\xbf"), false },     /* overlong, 4 bytes */
                { S("ok \xed\xa0\x80"), false },         /* a surrogate */
                { S("ok \xf4\x90\x80\x80"), false },     /* above U+10FFFF */
                { S("ok \xf5\x80\x80\x80"), false },     /* no such lead byte */
                { S("ok \xff"), false },
                { S("ok \x80 alone"), false },          /* a lone continuation */
                { S("ok \xe2\x82 x"), false },           /* cut short by ASCII */
                { S("ok \xe2\x82"), false },             /* incomplete at the end */
                { S("ok \xf0\x9f\x98"), false },
                { S("\xc2"), false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_refinement_outcome o;
                evaluate(f, cases[i].bytes, cases[i].len, &CLEAN, &o);
                if (o.valid != cases[i].valid)
                        fail_msg("case %zu: evidence %s", i, o.json);
                _cleanup_json_ json_t *v = outcome_json(&o);
                size_t n;
                _cleanup_free_ char *ev = canonical(json_object_get(v, "evidence"), &n);
                assert_string_equal(ev, cases[i].valid ? "{\"defects\":[],\"status\":\"valid\"}"
                                                        : "{\"defects\":[\"invalid_utf8\"],\"status\":\"invalid\"}");
                /* Invalid evidence never passes. */
                assert_int_equal(o.passed, cases[i].valid);
        }
}

/* A stream that did not drain is invalid evidence, whatever it held. */
static void test_incomplete_stream(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(EX_REQUIRED, EX_FORBIDDEN, 0, 0);
        struct glove_refinement_facts facts = CLEAN;
        facts.drained = false;
        struct glove_refinement_outcome o;
        evaluate(f, EX_STREAM, strlen(EX_STREAM), &facts, &o);
        assert_false(o.valid);
        assert_false(o.passed);
        assert_non_null(strstr(o.json, "\"evidence\":{\"defects\":[\"stream_incomplete\"],\"status\":\"invalid\"}"));
        assert_metric(&o, "failed_assertions", "[]");
        /* Both defects. */
        const char *bad = EX_STREAM "\xe2";
        evaluate(f, bad, strlen(bad), &facts, &o);
        assert_non_null(strstr(o.json, "\"defects\":[\"invalid_utf8\",\"stream_incomplete\"]"));
}

/* A resource termination fails the run although every literal matched. */
static void test_resource_override(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(EX_REQUIRED, EX_FORBIDDEN, 0, 0);
        struct glove_refinement_facts facts = CLEAN;
        facts.resource_limit = true;
        struct glove_refinement_outcome o;
        evaluate(f, EX_STREAM, strlen(EX_STREAM), &facts, &o);
        assert_true(o.valid);
        assert_false(o.passed);
        assert_metric(&o, "failed_assertions", "[\"resource_limit\"]");
        assert_metric(&o, "required_literals", "{\"missing\":[],\"total\":3}");
        facts = CLEAN;
        facts.termination = GLOVE_REFINEMENT_TERMINATION_LIMIT;
        facts.exit_code = 0;
        evaluate(f, EX_STREAM, strlen(EX_STREAM), &facts, &o);
        assert_false(o.passed);
        assert_metric(&o, "failed_assertions", "[\"resource_limit\",\"termination\"]");
        assert_non_null(strstr(o.json, "\"observed\":{\"exit_code\":null,\"resource_limit\":true,\"termination\":\"limit\"}"));
}

static void test_assertions(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(EX_REQUIRED, EX_FORBIDDEN, 3, 1000000);
        const char *s = EX_STREAM;
        struct {
                enum glove_refinement_termination termination;
                int exit_code;
                uint64_t latency;
                const char *failed, *kind;
        } cases[] = {
                { GLOVE_REFINEMENT_TERMINATION_EXIT, 3, 1000000, "[]", "exit" },
                { GLOVE_REFINEMENT_TERMINATION_EXIT, 0, 0, "[\"exit_code\"]", "exit" },
                { GLOVE_REFINEMENT_TERMINATION_EXIT, 3, 1000001, "[\"wall_latency\"]", "exit" },
                { GLOVE_REFINEMENT_TERMINATION_SIGNAL, 3, 5, "[\"termination\"]", "signal" },
                { GLOVE_REFINEMENT_TERMINATION_STOPPED, 0, 5, "[\"termination\"]", "stopped" },
                { GLOVE_REFINEMENT_TERMINATION_START_FAILED, 0, 0, "[\"termination\"]", "start_failed" },
                { GLOVE_REFINEMENT_TERMINATION_LOST, 0, 2000000, "[\"termination\",\"wall_latency\"]", "lost" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct glove_refinement_facts facts = CLEAN;
                facts.termination = cases[i].termination;
                facts.exit_code = cases[i].exit_code;
                facts.wall_latency_us = cases[i].latency;
                struct glove_refinement_outcome o;
                run_cuts(f, s, strlen(s), NULL, 0, &facts, &o);
                _cleanup_free_ char *failed = metric_text(&o, "failed_assertions");
                if (strcmp(failed, cases[i].failed) != 0)
                        fail_msg("case %zu: %s", i, o.json);
                assert_int_equal(o.passed, strcmp(cases[i].failed, "[]") == 0);
                char kind[64];
                snprintf(kind, sizeof(kind), "\"termination\":\"%s\"", cases[i].kind);
                assert_non_null(strstr(o.json, kind));
                char latency[64];
                snprintf(latency, sizeof(latency), "\"latency_us\":%llu", (unsigned long long)cases[i].latency);
                assert_non_null(strstr(o.json, latency));
        }
        /* Without a maximum, any latency passes. */
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *g = make(NULL, NULL, 0, 0);
        struct glove_refinement_facts facts = CLEAN;
        facts.wall_latency_us = GLOVE_REFINEMENT_INT_MAX;
        struct glove_refinement_outcome o;
        run_cuts(g, "", 0, NULL, 0, &facts, &o);
        assert_true(o.passed);
}

/* What the agent prints is text: result JSON it forges, even a copy of a
 * passing outcome, changes no metric. */
static void test_forged_result(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(EX_REQUIRED, EX_FORBIDDEN, 0, 0);
        struct glove_refinement_facts facts = CLEAN;
        facts.exit_code = 1;
        const char *honest = "PASS lint\r\n";
        struct glove_refinement_outcome a, b, pass;
        run_cuts(f, honest, strlen(honest), NULL, 0, &facts, &a);
        assert_false(a.passed);
        /* A genuine passing outcome, printed by the agent along with
         * forged metrics. */
        run_cuts(f, EX_STREAM, strlen(EX_STREAM), NULL, 0, &CLEAN, &pass);
        assert_true(pass.passed);
        char forged[8192];
        snprintf(forged, sizeof(forged),
                 "PASS lint\r\n{\"passed\": true}\r\n{\"metrics\":{\"passed\":true,\"failed_assertions\":[],"
                 "\"latency_us\":1}}\r\n%s\r\n{\"jsonrpc\":\"2.0\",\"result\":{\"passed\":true}}\r\n",
                 pass.json);
        evaluate(f, forged, strlen(forged), &facts, &b);
        assert_false(b.passed);
        _cleanup_json_ json_t *ja = outcome_json(&a);
        _cleanup_json_ json_t *jb = outcome_json(&b);
        assert_true(json_equal(json_object_get(ja, "metrics"), json_object_get(jb, "metrics")));
        assert_true(json_equal(json_object_get(ja, "evidence"), json_object_get(jb, "evidence")));
        assert_true(json_equal(json_object_get(ja, "observed"), json_object_get(jb, "observed")));
        /* Only the stream's own record differs. */
        assert_false(json_equal(json_object_get(ja, "stream"), json_object_get(jb, "stream")));
}

static void test_finish_rules(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(EX_REQUIRED, NULL, 0, 0);
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_evaluator_new(f, &ev, &err), 0);
        assert_int_equal(glove_refinement_evaluator_feed(ev, "PASS", 4, &err), 0);
        assert_int_equal(glove_refinement_evaluator_feed(ev, NULL, 1, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        struct glove_refinement_outcome o;
        struct glove_refinement_facts bad[] = {
                { .termination = 6, .drained = true },
                { .termination = GLOVE_REFINEMENT_TERMINATION_EXIT, .exit_code = 256, .drained = true },
                { .termination = GLOVE_REFINEMENT_TERMINATION_EXIT, .exit_code = -1, .drained = true },
                { .termination = GLOVE_REFINEMENT_TERMINATION_EXIT, .wall_latency_us = (uint64_t)GLOVE_REFINEMENT_INT_MAX + 1 },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                err = (struct glove_error){ 0 };
                assert_int_equal(glove_refinement_evaluator_finish(ev, &bad[i], &o, &err), -EINVAL);
                assert_string_equal(err.code, "refinement.invalid_argument");
        }
        /* Still open: more bytes, then a proper finish. */
        assert_int_equal(glove_refinement_evaluator_feed(ev, " lint", 5, &err), 0);
        assert_int_equal(glove_refinement_evaluator_finish(ev, &CLEAN, &o, &err), 0);
        assert_metric(&o, "required_literals", "{\"missing\":[1,2],\"total\":3}");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_evaluator_feed(ev, "x", 1, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.evaluator_finished");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_evaluator_finish(ev, &CLEAN, &o, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.evaluator_finished");
        err = (struct glove_error){ 0 };
        assert_int_equal(glove_refinement_evaluator_new(NULL, &ev, &err), -EINVAL);
        assert_string_equal(err.code, "refinement.invalid_argument");
        glove_refinement_evaluator_free(NULL);
        assert_string_equal(glove_refinement_termination_name(GLOVE_REFINEMENT_TERMINATION_START_FAILED),
                            "start_failed");
        assert_null(glove_refinement_termination_name(-1));
        assert_null(glove_refinement_termination_name(6));
}

/* A long stream in odd-sized chunks: byte count and SHA-256 of every byte;
 * literals at chunk boundaries; the most literals (of a length that lets
 * them all fit in one fixture). */
static void test_long_stream(void **state) {
        (void)state;
        static const char *req[GLOVE_REFINEMENT_MAX_LITERALS + 1], *forb[GLOVE_REFINEMENT_MAX_LITERALS + 1];
        enum { L = 470 };
        static char lits[2 * GLOVE_REFINEMENT_MAX_LITERALS][L + 1];
        for (size_t i = 0; i < 2 * GLOVE_REFINEMENT_MAX_LITERALS; i++) {
                memset(lits[i], 'q', L);
                snprintf(lits[i], 5, "%c%03zu", i < GLOVE_REFINEMENT_MAX_LITERALS ? 'R' : 'F', i);
                lits[i][4] = 'q';
                lits[i][L] = '\0';
                if (i < GLOVE_REFINEMENT_MAX_LITERALS)
                        req[i] = lits[i];
                else
                        forb[i - GLOVE_REFINEMENT_MAX_LITERALS] = lits[i];
        }
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(req, forb, 0, 0);
        size_t len = 1 << 20, chunk = 4093;
        _cleanup_free_ char *s = malloc(len);
        for (size_t i = 0; i < len; i++)
                s[i] = (char)('a' + (i * 7) % 23);
        /* Every required literal straddles a chunk boundary; the forbidden
         * ones are absent. */
        for (size_t i = 0; i < GLOVE_REFINEMENT_MAX_LITERALS; i++)
                memcpy(s + (i * 3 + 5) * chunk - 7 * i - 1, lits[i], L);
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev = NULL;
        assert_int_equal(glove_refinement_evaluator_new(f, &ev, NULL), 0);
        for (size_t at = 0; at < len; at += chunk)
                assert_int_equal(glove_refinement_evaluator_feed(ev, s + at, at + chunk > len ? len - at : chunk, NULL),
                                 0);
        struct glove_refinement_outcome o;
        assert_int_equal(glove_refinement_evaluator_finish(ev, &CLEAN, &o, NULL), 0);
        assert_true(o.passed);
        assert_int_equal(o.stream_bytes, len);
        uint8_t md[32];
        char sha[65];
        assert_int_equal(glove_digest_sha256(s, len, md, NULL), 0);
        glove_digest_hex_encode(md, 32, sha, sizeof(sha));
        assert_string_equal(o.stream_sha256, sha);
        assert_true(o.json_len < 2048);
        /* The same stream in chunks of 1 to 13 bytes: the same outcome. */
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev1 = NULL;
        assert_int_equal(glove_refinement_evaluator_new(f, &ev1, NULL), 0);
        for (size_t at = 0, k = 0; at < len; k++) {
                size_t n = 1 + k % 13;
                if (n > len - at)
                        n = len - at;
                assert_int_equal(glove_refinement_evaluator_feed(ev1, s + at, n, NULL), 0);
                at += n;
        }
        struct glove_refinement_outcome o1;
        assert_int_equal(glove_refinement_evaluator_finish(ev1, &CLEAN, &o1, NULL), 0);
        same_outcome(&o, &o1, "small chunks");
        /* The largest outcome: every literal listed. */
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev2 = NULL;
        assert_int_equal(glove_refinement_evaluator_new(f, &ev2, NULL), 0);
        assert_int_equal(glove_refinement_evaluator_feed(ev2, "\xff", 1, NULL), 0);
        struct glove_refinement_facts facts = { .termination = GLOVE_REFINEMENT_TERMINATION_LOST,
                                                .wall_latency_us = GLOVE_REFINEMENT_INT_MAX,
                                                .resource_limit = true };
        assert_int_equal(glove_refinement_evaluator_finish(ev2, &facts, &o, NULL), 0);
        assert_true(o.json_len < GLOVE_REFINEMENT_OUTCOME_MAX / 2);
        assert_false(o.passed);
}

/* The wire decoders take exactly their members and bounds; a lost stream
 * gives invalid evidence with "stream" null and every required literal
 * missing. */
static void test_wire_and_lost(void **state) {
        (void)state;
        _cleanup_refinement_fixture_ struct glove_refinement_fixture *f = make(EX_REQUIRED, EX_FORBIDDEN, 0, 0);
        _cleanup_refinement_evaluator_ struct glove_refinement_evaluator *ev = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_refinement_evaluator_new(f, &ev, &err), 0);
        struct glove_refinement_expectations x, y;
        assert_int_equal(glove_refinement_evaluator_expectations(ev, &x), 0);
        assert_int_equal(x.n_required, 3);
        assert_false(x.has_max_latency);
        static const char *const bad_x[] = {
                "{}",
                "{\"exit_code\":256,\"fixture_document_digest\":\"" HEX_A "\",\"forbidden_literals\":1,\"max_wall_latency_us\":null,\"required_literals\":3}",
                "{\"exit_code\":0,\"fixture_document_digest\":\"" HEX_A "\",\"forbidden_literals\":65,\"max_wall_latency_us\":null,\"required_literals\":3}",
                "{\"exit_code\":0,\"fixture_document_digest\":\"" HEX_A "\",\"forbidden_literals\":1,\"max_wall_latency_us\":0,\"required_literals\":3}",
                "{\"exit_code\":0,\"fixture_document_digest\":\"ABC\",\"forbidden_literals\":1,\"max_wall_latency_us\":null,\"required_literals\":3}",
                "{\"exit_code\":0,\"extra\":1,\"fixture_document_digest\":\"" HEX_A "\",\"forbidden_literals\":1,\"max_wall_latency_us\":null,\"required_literals\":3}",
        };
        for (size_t i = 0; i < sizeof(bad_x) / sizeof(bad_x[0]); i++) {
                _cleanup_json_ json_t *v = json_loads(bad_x[i], 0, NULL);
                assert_non_null(v);
                struct glove_error e = { 0 };
                assert_int_equal(glove_refinement_expectations_from_json(v, &y, &e), -EINVAL);
                assert_string_equal(e.code, "refinement.wire_invalid");
        }
        static const char *const bad_obs[] = {
                "{\"bytes\":-1,\"forbidden_found\":[],\"required_found\":[],\"sha256\":\"" HEX_A "\",\"utf8_valid\":true}",
                "{\"bytes\":1,\"forbidden_found\":[1],\"required_found\":[],\"sha256\":\"" HEX_A "\",\"utf8_valid\":true}",
                "{\"bytes\":1,\"forbidden_found\":[],\"required_found\":[1,0],\"sha256\":\"" HEX_A "\",\"utf8_valid\":true}",
                "{\"bytes\":1,\"forbidden_found\":[],\"required_found\":[2,2],\"sha256\":\"" HEX_A "\",\"utf8_valid\":true}",
                "{\"bytes\":1,\"forbidden_found\":[],\"required_found\":[3],\"sha256\":\"" HEX_A "\",\"utf8_valid\":true}",
                "{\"bytes\":1,\"forbidden_found\":[],\"required_found\":[],\"sha256\":\"" HEX_A "\",\"utf8_valid\":1}",
                "{\"bytes\":1,\"forbidden_found\":[],\"required_found\":[],\"sha256\":\"" HEX_A "\"}",
        };
        struct glove_refinement_observation obs;
        for (size_t i = 0; i < sizeof(bad_obs) / sizeof(bad_obs[0]); i++) {
                _cleanup_json_ json_t *v = json_loads(bad_obs[i], 0, NULL);
                assert_non_null(v);
                struct glove_error e = { 0 };
                assert_int_equal(glove_refinement_observation_from_json(v, &x, &obs, &e), -EINVAL);
                assert_string_equal(e.code, "refinement.wire_invalid");
        }
        /* Lost: whatever the facts, invalid and not passed. */
        struct glove_refinement_outcome out;
        assert_int_equal(glove_refinement_outcome_synthesize(&x, NULL, &CLEAN, &out, &err), 0);
        assert_false(out.valid);
        assert_false(out.passed);
        _cleanup_json_ json_t *v = outcome_json(&out);
        assert_true(json_is_null(json_object_get(v, "stream")));
        assert_metric(&out, "required_literals", "{\"missing\":[0,1,2],\"total\":3}");
        assert_metric(&out, "forbidden_literals", "{\"found\":[],\"total\":1}");
        char *d = json_dumps(json_object_get(v, "evidence"), JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(d, "{\"defects\":[\"stream_incomplete\",\"stream_lost\"],\"status\":\"invalid\"}");
        free(d);
        /* An observation whose counts are not the expectations' is refused. */
        assert_int_equal(glove_refinement_evaluator_observe(ev, &obs, &err), 0);
        obs.n_required = 2;
        struct glove_error e = { 0 };
        assert_int_equal(glove_refinement_outcome_synthesize(&x, &obs, &CLEAN, &out, &e), -EINVAL);
        assert_string_equal(e.code, "refinement.invalid_argument");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_golden),
                cmocka_unit_test(test_reference_outcomes),
                cmocka_unit_test(test_literals_across_chunks),
                cmocka_unit_test(test_long_literal),
                cmocka_unit_test(test_utf8),
                cmocka_unit_test(test_incomplete_stream),
                cmocka_unit_test(test_resource_override),
                cmocka_unit_test(test_assertions),
                cmocka_unit_test(test_forged_result),
                cmocka_unit_test(test_finish_rules),
                cmocka_unit_test(test_long_stream),
                cmocka_unit_test(test_wire_and_lost),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

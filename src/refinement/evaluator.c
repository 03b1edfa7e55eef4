/* SPDX-License-Identifier: Apache-2.0 */
/* The refinement-eval-v1 evaluator (see evaluator.h; docs/refinement.md,
 * "The evaluator"): online over raw PTY bytes, bounded memory. */
#include "glove/refinement/evaluator.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/refinement/common.h"

/* Literals are found with an Aho-Corasick automaton over all of them
 * (required and forbidden): one state carried across chunks, amortized
 * constant work per byte whatever the chunk sizes, memory bounded by the
 * total literal length. Node 0 is the root; a node's children are a
 * singly linked list (the root's are also in root_next). */
struct ac_node {
        int32_t child, sibling; /* first child, next sibling: -1 for none */
        int32_t fail;           /* longest proper suffix that is a node */
        int32_t dict;           /* nearest terminal node on the fail chain, 0 for none */
        uint8_t byte;           /* the edge from the parent */
        bool terminal;          /* some literal ends here */
        bool hit;               /* that literal occurred */
        bool done;              /* this node and every terminal on its dict chain hit */
};

struct literal {
        int32_t node; /* where it ends in the automaton */
};

/* RFC 3629 section 4, one byte at a time: need continuation bytes remain in
 * the current sequence, the next of which must lie in [lo, hi]. */
struct utf8_state {
        uint8_t need, lo, hi;
        bool invalid;
};

struct glove_refinement_evaluator {
        struct glove_digest_sha256 *sha;
        uint64_t bytes;
        struct utf8_state utf8;
        struct literal *required, *forbidden;
        size_t n_required, n_forbidden;
        struct ac_node *nodes;
        size_t n_nodes;
        int32_t root_next[256];
        int32_t state;          /* the automaton's state after the last byte */
        size_t n_open;          /* terminal nodes not hit yet */
        int64_t exit_code;
        bool has_max_latency;
        int64_t max_latency_us;
        char fixture_digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        bool finished;
};

const char *glove_refinement_termination_name(int termination) {
        static const char *const names[] = { "exit", "signal", "limit", "stopped", "start_failed", "lost" };
        if (termination < 0 || (size_t)termination >= sizeof(names) / sizeof(names[0]))
                return NULL;
        return names[termination];
}

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "refinement.no_memory", "out of memory in the evaluator");
}

static int32_t ac_child(const struct glove_refinement_evaluator *ev, int32_t node, uint8_t b) {
        if (node == 0)
                return ev->root_next[b];
        for (int32_t c = ev->nodes[node].child; c >= 0; c = ev->nodes[c].sibling)
                if (ev->nodes[c].byte == b)
                        return c;
        return -1;
}

/* Adds a literal to the trie; returns its end node. */
static int32_t ac_insert(struct glove_refinement_evaluator *ev, const uint8_t *p, size_t len) {
        int32_t node = 0;
        for (size_t i = 0; i < len; i++) {
                int32_t next = -1;
                for (int32_t c = ev->nodes[node].child; c >= 0 && next < 0; c = ev->nodes[c].sibling)
                        if (ev->nodes[c].byte == p[i])
                                next = c;
                if (next < 0) {
                        next = (int32_t)ev->n_nodes++;
                        ev->nodes[next] = (struct ac_node){ .child = -1, .sibling = ev->nodes[node].child, .byte = p[i] };
                        ev->nodes[node].child = next;
                }
                node = next;
        }
        if (!ev->nodes[node].terminal)
                ev->n_open++;
        ev->nodes[node].terminal = true;
        return node;
}

/* Failure and dictionary links, breadth first. */
static int ac_build(struct glove_refinement_evaluator *ev) {
        int32_t *queue = malloc(ev->n_nodes * sizeof(*queue));
        if (!queue)
                return -ENOMEM;
        for (int b = 0; b < 256; b++)
                ev->root_next[b] = 0;
        size_t head = 0, tail = 0;
        for (int32_t c = ev->nodes[0].child; c >= 0; c = ev->nodes[c].sibling) {
                ev->root_next[ev->nodes[c].byte] = c;
                ev->nodes[c].fail = 0;
                ev->nodes[c].dict = 0;
                queue[tail++] = c;
        }
        while (head < tail) {
                int32_t u = queue[head++];
                for (int32_t v = ev->nodes[u].child; v >= 0; v = ev->nodes[v].sibling) {
                        uint8_t b = ev->nodes[v].byte;
                        int32_t f = ev->nodes[u].fail, to;
                        while ((to = ac_child(ev, f, b)) < 0)
                                f = ev->nodes[f].fail;
                        ev->nodes[v].fail = to;
                        ev->nodes[v].dict = ev->nodes[to].terminal ? to : ev->nodes[to].dict;
                        queue[tail++] = v;
                }
        }
        free(queue);
        return 0;
}

static int add_literals(struct glove_refinement_evaluator *ev, const struct glove_refinement_literal *src, size_t n,
                        struct literal **out) {
        *out = n ? calloc(n, sizeof(**out)) : NULL;
        if (n && !*out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                (*out)[i].node = ac_insert(ev, (const uint8_t *)src[i].bytes, src[i].len);
        return 0;
}

static bool literals_valid(const struct glove_refinement_literal *l, size_t n, size_t *total) {
        for (size_t i = 0; i < n; i++) {
                if (!l[i].bytes || l[i].len == 0 || l[i].len > GLOVE_REFINEMENT_LITERAL_MAX)
                        return false;
                *total += l[i].len;
        }
        return true;
}

int glove_refinement_evaluator_new(const struct glove_refinement_fixture *f,
                                   struct glove_refinement_evaluator **out, struct glove_error *err) {
        size_t total = 0;
        if (!f || !out || f->n_required > GLOVE_REFINEMENT_MAX_LITERALS ||
            f->n_forbidden > GLOVE_REFINEMENT_MAX_LITERALS || (f->n_required && !f->required) ||
            (f->n_forbidden && !f->forbidden) || !literals_valid(f->required, f->n_required, &total) ||
            !literals_valid(f->forbidden, f->n_forbidden, &total))
                return glove_error_set(err, EINVAL, "refinement.invalid_argument",
                                       "missing fixture, or a literal list beyond its bounds");
        *out = NULL;
        struct glove_refinement_evaluator *ev = calloc(1, sizeof(*ev));
        if (!ev)
                return no_memory(err);
        /* At most 2 * 64 * 1024 literal bytes: one node each, and the root. */
        ev->nodes = calloc(total + 1, sizeof(*ev->nodes));
        int r = ev->nodes ? 0 : -ENOMEM;
        if (r == 0) {
                ev->nodes[0] = (struct ac_node){ .child = -1, .sibling = -1 };
                ev->n_nodes = 1;
                r = add_literals(ev, f->required, f->n_required, &ev->required);
        }
        ev->n_required = f->n_required;
        if (r == 0)
                r = add_literals(ev, f->forbidden, f->n_forbidden, &ev->forbidden);
        ev->n_forbidden = f->n_forbidden;
        if (r == 0)
                r = ac_build(ev);
        if (r < 0) {
                glove_refinement_evaluator_free(ev);
                return no_memory(err);
        }
        r = glove_digest_sha256_init(&ev->sha, err);
        if (r < 0) {
                glove_refinement_evaluator_free(ev);
                return r;
        }
        ev->exit_code = f->expected_exit_code;
        ev->has_max_latency = f->has_max_wall_latency;
        ev->max_latency_us = f->max_wall_latency_us;
        memcpy(ev->fixture_digest, f->document_digest, sizeof(ev->fixture_digest));
        *out = ev;
        return 0;
}

void glove_refinement_evaluator_free(struct glove_refinement_evaluator *ev) {
        if (!ev)
                return;
        free(ev->required);
        free(ev->forbidden);
        free(ev->nodes);
        glove_digest_sha256_free(ev->sha);
        free(ev);
}

uint64_t glove_refinement_evaluator_bytes(const struct glove_refinement_evaluator *ev) {
        return ev ? ev->bytes : 0;
}

/* ---- UTF-8 (RFC 3629, section 4 table) ---- */

static void utf8_feed(struct utf8_state *u, const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n && !u->invalid; i++) {
                uint8_t c = p[i];
                if (u->need) {
                        if (c < u->lo || c > u->hi) {
                                u->invalid = true;
                                break;
                        }
                        u->need--;
                        u->lo = 0x80;
                        u->hi = 0xbf;
                        continue;
                }
                if (c < 0x80)
                        continue;
                u->lo = 0x80;
                u->hi = 0xbf;
                if (c >= 0xc2 && c <= 0xdf) {
                        u->need = 1;
                } else if (c >= 0xe0 && c <= 0xef) {
                        u->need = 2;
                        if (c == 0xe0)
                                u->lo = 0xa0; /* no overlong forms */
                        else if (c == 0xed)
                                u->hi = 0x9f; /* no surrogates */
                } else if (c >= 0xf0 && c <= 0xf4) {
                        u->need = 3;
                        if (c == 0xf0)
                                u->lo = 0x90;
                        else if (c == 0xf4)
                                u->hi = 0x8f; /* nothing above U+10FFFF */
                } else {
                        u->invalid = true; /* 0x80..0xc1 as a lead byte, 0xf5..0xff */
                }
        }
}

/* ---- literals across chunk boundaries ---- */

/* Runs the automaton over p[0..n) from the state left by the previous
 * chunk; a terminal reached marks its literal, and those on its dict
 * chain, as hit (each node once). */
static void literals_feed(struct glove_refinement_evaluator *ev, const uint8_t *p, size_t n) {
        int32_t s = ev->state;
        for (size_t i = 0; i < n && ev->n_open > 0; i++) {
                int32_t to;
                while ((to = ac_child(ev, s, p[i])) < 0)
                        s = ev->nodes[s].fail;
                s = to;
                for (int32_t t = ev->nodes[s].terminal ? s : ev->nodes[s].dict; t > 0 && !ev->nodes[t].done;
                     t = ev->nodes[t].dict) {
                        ev->nodes[t].done = true;
                        if (!ev->nodes[t].hit) {
                                ev->nodes[t].hit = true;
                                ev->n_open--;
                        }
                }
        }
        ev->state = s;
}

int glove_refinement_evaluator_feed(struct glove_refinement_evaluator *ev, const void *data, size_t len,
                                    struct glove_error *err) {
        if (!ev || (!data && len > 0))
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing evaluator or data");
        if (ev->finished)
                return glove_error_set(err, EINVAL, "refinement.evaluator_finished",
                                       "the evaluator has finished; no more bytes are taken");
        if (len == 0)
                return 0;
        int r = glove_digest_sha256_update(ev->sha, data, len, err);
        if (r < 0)
                return r;
        ev->bytes += len;
        utf8_feed(&ev->utf8, data, len);
        literals_feed(ev, data, len);
        return 0;
}

/* ---- the outcome ---- */

struct out_builder {
        bool oom;
};

static json_t *add(struct out_builder *b, json_t *obj, const char *key, json_t *v) {
        if (!v || !obj || json_object_set_new(obj, key, v) < 0)
                b->oom = true;
        return v;
}

static void push(struct out_builder *b, json_t *arr, json_t *v) {
        if (!v || !arr || json_array_append_new(arr, v) < 0)
                b->oom = true;
}

static bool found(const struct glove_refinement_evaluator *ev, const struct literal *l) {
        return ev->nodes[l->node].hit;
}

int glove_refinement_evaluator_expectations(const struct glove_refinement_evaluator *ev,
                                            struct glove_refinement_expectations *out) {
        if (!ev || !out)
                return -EINVAL;
        memset(out, 0, sizeof(*out));
        memcpy(out->fixture_document_digest, ev->fixture_digest, sizeof(out->fixture_document_digest));
        out->exit_code = (int)ev->exit_code;
        out->has_max_latency = ev->has_max_latency;
        out->max_latency_us = (uint64_t)ev->max_latency_us;
        out->n_required = ev->n_required;
        out->n_forbidden = ev->n_forbidden;
        return 0;
}

int glove_refinement_evaluator_observe(struct glove_refinement_evaluator *ev,
                                       struct glove_refinement_observation *out, struct glove_error *err) {
        if (!ev || !out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing evaluator or out");
        if (ev->finished)
                return glove_error_set(err, EINVAL, "refinement.evaluator_finished", "the evaluator has finished");
        memset(out, 0, sizeof(*out));
        ev->finished = true;
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        int r = glove_digest_sha256_final(ev->sha, md, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(md, sizeof(md), out->sha256, sizeof(out->sha256));
        out->bytes = ev->bytes;
        /* Every byte UTF-8; a sequence left open at the end is invalid. */
        out->utf8_valid = !ev->utf8.invalid && ev->utf8.need == 0;
        out->n_required = ev->n_required;
        out->n_forbidden = ev->n_forbidden;
        for (size_t i = 0; i < ev->n_required; i++)
                out->required_found[i] = found(ev, &ev->required[i]);
        for (size_t i = 0; i < ev->n_forbidden; i++)
                out->forbidden_found[i] = found(ev, &ev->forbidden[i]);
        return 0;
}

/* {"missing"|"found":[indices whose flag is want],"total":n} */
static json_t *flag_metric(struct out_builder *b, const char *key, const bool *flags, size_t n, bool want) {
        json_t *o = json_object();
        json_t *a = add(b, o, key, json_array());
        for (size_t i = 0; i < n; i++)
                if (flags[i] == want)
                        push(b, a, json_integer((json_int_t)i));
        add(b, o, "total", json_integer((json_int_t)n));
        return o;
}

int glove_refinement_outcome_synthesize(const struct glove_refinement_expectations *x,
                                        const struct glove_refinement_observation *obs,
                                        const struct glove_refinement_facts *facts,
                                        struct glove_refinement_outcome *out, struct glove_error *err) {
        if (!x || !facts || !out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing expectations, facts or out");
        const char *kind = glove_refinement_termination_name(facts->termination);
        bool exited = facts->termination == GLOVE_REFINEMENT_TERMINATION_EXIT;
        if (!kind || (exited && (facts->exit_code < 0 || facts->exit_code > 255)) ||
            facts->wall_latency_us > (uint64_t)GLOVE_REFINEMENT_INT_MAX ||
            x->n_required > GLOVE_REFINEMENT_MAX_LITERALS || x->n_forbidden > GLOVE_REFINEMENT_MAX_LITERALS ||
            !glove_refinement_hex64_valid(x->fixture_document_digest) ||
            (obs && (obs->n_required != x->n_required || obs->n_forbidden != x->n_forbidden ||
                     !glove_refinement_hex64_valid(obs->sha256) || obs->bytes > (uint64_t)GLOVE_REFINEMENT_INT_MAX)))
                return glove_error_set(err, EINVAL, "refinement.invalid_argument",
                                       "facts out of range (termination, exit code 0..255, latency 0..2^53-1 us), "
                                       "or an observation that does not fit the expectations");
        memset(out, 0, sizeof(*out));
        /* No observation (the stream was lost with its keeper): nothing
         * was found, every required literal is missing. */
        bool req_found[GLOVE_REFINEMENT_MAX_LITERALS] = { false }, forb_found[GLOVE_REFINEMENT_MAX_LITERALS] = { false };
        if (obs) {
                memcpy(req_found, obs->required_found, sizeof(req_found));
                memcpy(forb_found, obs->forbidden_found, sizeof(forb_found));
                memcpy(out->stream_sha256, obs->sha256, sizeof(out->stream_sha256));
                out->stream_bytes = obs->bytes;
        }
        bool utf8_ok = obs && obs->utf8_valid;
        bool drained = obs && facts->drained;
        out->valid = utf8_ok && drained;

        /* Assertions, in sorted order of their words. */
        bool limit = facts->resource_limit || facts->termination == GLOVE_REFINEMENT_TERMINATION_LIMIT;
        bool missing = false, forbidden = false;
        for (size_t i = 0; i < x->n_required; i++)
                missing |= !req_found[i];
        for (size_t i = 0; i < x->n_forbidden; i++)
                forbidden |= forb_found[i];
        struct {
                const char *word;
                bool failed;
        } assertions[] = {
                { "exit_code", exited && facts->exit_code != x->exit_code },
                { "forbidden_literals", forbidden },
                { "required_literals", missing },
                { "resource_limit", limit },
                { "termination", !exited },
                { "wall_latency", x->has_max_latency && facts->wall_latency_us > x->max_latency_us },
        };
        bool any_failed = false;
        for (size_t i = 0; i < sizeof(assertions) / sizeof(assertions[0]); i++)
                any_failed |= assertions[i].failed;
        out->passed = out->valid && !any_failed;
        out->latency_us = facts->wall_latency_us;

        struct out_builder b = { 0 };
        _cleanup_json_ json_t *root = json_object();
        json_t *evidence = add(&b, root, "evidence", json_object());
        json_t *defects = add(&b, evidence, "defects", json_array());
        /* Sorted words. */
        if (obs && !utf8_ok)
                push(&b, defects, json_string("invalid_utf8"));
        if (!drained)
                push(&b, defects, json_string("stream_incomplete"));
        if (!obs)
                push(&b, defects, json_string("stream_lost"));
        add(&b, evidence, "status", json_string(out->valid ? "valid" : "invalid"));
        add(&b, root, "fixture_document_digest", json_string(x->fixture_document_digest));
        json_t *metrics = add(&b, root, "metrics", json_object());
        json_t *failed = add(&b, metrics, "failed_assertions", json_array());
        for (size_t i = 0; i < sizeof(assertions) / sizeof(assertions[0]); i++)
                if (assertions[i].failed)
                        push(&b, failed, json_string(assertions[i].word));
        add(&b, metrics, "forbidden_literals", flag_metric(&b, "found", forb_found, x->n_forbidden, true));
        add(&b, metrics, "latency_us", json_integer((json_int_t)facts->wall_latency_us));
        add(&b, metrics, "passed", json_boolean(out->passed));
        add(&b, metrics, "required_literals", flag_metric(&b, "missing", req_found, x->n_required, false));
        json_t *observed = add(&b, root, "observed", json_object());
        add(&b, observed, "exit_code", exited ? json_integer(facts->exit_code) : json_null());
        add(&b, observed, "resource_limit", json_boolean(limit));
        add(&b, observed, "termination", json_string(kind));
        add(&b, root, "schema", json_string(GLOVE_REFINEMENT_OUTCOME_SCHEMA));
        if (obs) {
                json_t *stream = add(&b, root, "stream", json_object());
                add(&b, stream, "bytes", json_integer((json_int_t)obs->bytes));
                add(&b, stream, "sha256", json_string(obs->sha256));
        } else {
                add(&b, root, "stream", json_null());
        }
        if (b.oom || !root)
                return no_memory(err);

        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        int r = glove_json_encode_canonical(root, &bytes, &len, err);
        if (r < 0)
                return r;
        if (len >= sizeof(out->json))
                return glove_error_set(err, EOVERFLOW, "refinement.invalid_argument",
                                       "the outcome is %zu bytes, more than %d", len, GLOVE_REFINEMENT_OUTCOME_MAX);
        memcpy(out->json, bytes, len);
        out->json[len] = '\0';
        out->json_len = len;
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        r = glove_digest_sha256(out->json, len, md, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(md, sizeof(md), out->commitment, sizeof(out->commitment));
        return 0;
}

int glove_refinement_evaluator_finish(struct glove_refinement_evaluator *ev,
                                      const struct glove_refinement_facts *facts,
                                      struct glove_refinement_outcome *out, struct glove_error *err) {
        if (!ev || !facts || !out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing evaluator, facts or out");
        if (ev->finished)
                return glove_error_set(err, EINVAL, "refinement.evaluator_finished", "the evaluator has finished");
        const char *kind = glove_refinement_termination_name(facts->termination);
        bool exited = facts->termination == GLOVE_REFINEMENT_TERMINATION_EXIT;
        if (!kind || (exited && (facts->exit_code < 0 || facts->exit_code > 255)) ||
            facts->wall_latency_us > (uint64_t)GLOVE_REFINEMENT_INT_MAX)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument",
                                       "facts out of range (termination, exit code 0..255, latency 0..2^53-1 us)");
        struct glove_refinement_expectations x;
        (void)glove_refinement_evaluator_expectations(ev, &x);
        struct glove_refinement_observation obs;
        int r = glove_refinement_evaluator_observe(ev, &obs, err);
        if (r < 0)
                return r;
        return glove_refinement_outcome_synthesize(&x, &obs, facts, out, err);
}

/* ---- wire forms ---- */

static int wire_bad(struct glove_error *err, const char *what, const char *member) {
        return glove_error_set(err, EINVAL, "refinement.wire_invalid", "the %s's member %s is missing or invalid", what,
                               member);
}

/* v's members are exactly keys[0..n). */
static bool members_exactly(const json_t *v, const char *const *keys, size_t n) {
        if (!json_is_object(v) || json_object_size(v) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!json_object_get(v, keys[i]))
                        return false;
        return true;
}

static bool wire_uint(const json_t *v, uint64_t max, uint64_t *out) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
                return false;
        *out = (uint64_t)json_integer_value(v);
        return true;
}

int glove_refinement_expectations_json(const struct glove_refinement_expectations *x, json_t **out,
                                       struct glove_error *err) {
        if (!x || !out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing expectations or out");
        *out = json_pack("{s:i,s:s,s:I,s:o,s:I}", "exit_code", x->exit_code, "fixture_document_digest",
                         x->fixture_document_digest, "forbidden_literals", (json_int_t)x->n_forbidden,
                         "max_wall_latency_us",
                         x->has_max_latency ? json_integer((json_int_t)x->max_latency_us) : json_null(),
                         "required_literals", (json_int_t)x->n_required);
        return *out ? 0 : no_memory(err);
}

int glove_refinement_expectations_from_json(const json_t *v, struct glove_refinement_expectations *out,
                                            struct glove_error *err) {
        static const char *const keys[] = { "exit_code", "fixture_document_digest", "forbidden_literals",
                                            "max_wall_latency_us", "required_literals" };
        const char *what = "expectations";
        if (!out)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing out");
        memset(out, 0, sizeof(*out));
        if (!members_exactly(v, keys, sizeof(keys) / sizeof(keys[0])))
                return wire_bad(err, what, "set");
        uint64_t u;
        if (!wire_uint(json_object_get(v, "exit_code"), 255, &u))
                return wire_bad(err, what, "exit_code");
        out->exit_code = (int)u;
        const char *d = json_string_value(json_object_get(v, "fixture_document_digest"));
        if (!d || !glove_refinement_hex64_valid(d))
                return wire_bad(err, what, "fixture_document_digest");
        memcpy(out->fixture_document_digest, d, GLOVE_DIGEST_SHA256_HEX_LEN + 1);
        if (!wire_uint(json_object_get(v, "forbidden_literals"), GLOVE_REFINEMENT_MAX_LITERALS, &u))
                return wire_bad(err, what, "forbidden_literals");
        out->n_forbidden = (size_t)u;
        if (!wire_uint(json_object_get(v, "required_literals"), GLOVE_REFINEMENT_MAX_LITERALS, &u))
                return wire_bad(err, what, "required_literals");
        out->n_required = (size_t)u;
        const json_t *m = json_object_get(v, "max_wall_latency_us");
        if (!json_is_null(m)) {
                if (!wire_uint(m, GLOVE_REFINEMENT_LATENCY_MAX_US, &u) || u == 0)
                        return wire_bad(err, what, "max_wall_latency_us");
                out->has_max_latency = true;
                out->max_latency_us = u;
        }
        return 0;
}

static json_t *indices(struct out_builder *b, const bool *flags, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
                if (flags[i])
                        push(b, a, json_integer((json_int_t)i));
        if (!a)
                b->oom = true;
        return a;
}

int glove_refinement_observation_json(const struct glove_refinement_observation *obs, json_t **out,
                                      struct glove_error *err) {
        if (!obs || !out || obs->n_required > GLOVE_REFINEMENT_MAX_LITERALS ||
            obs->n_forbidden > GLOVE_REFINEMENT_MAX_LITERALS)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing or invalid observation");
        struct out_builder b = { 0 };
        json_t *o = json_object();
        add(&b, o, "bytes", json_integer((json_int_t)obs->bytes));
        add(&b, o, "forbidden_found", indices(&b, obs->forbidden_found, obs->n_forbidden));
        add(&b, o, "required_found", indices(&b, obs->required_found, obs->n_required));
        add(&b, o, "sha256", json_string(obs->sha256));
        add(&b, o, "utf8_valid", json_boolean(obs->utf8_valid));
        if (b.oom || !o) {
                json_decref(o);
                return no_memory(err);
        }
        *out = o;
        return 0;
}

/* Strictly increasing indices below n into flags. */
static bool wire_indices(const json_t *a, size_t n, bool *flags) {
        if (!json_is_array(a) || json_array_size(a) > n)
                return false;
        int64_t last = -1;
        for (size_t i = 0; i < json_array_size(a); i++) {
                uint64_t u;
                if (!wire_uint(json_array_get(a, i), n ? n - 1 : 0, &u) || n == 0 || (int64_t)u <= last)
                        return false;
                flags[u] = true;
                last = (int64_t)u;
        }
        return true;
}

int glove_refinement_observation_from_json(const json_t *v, const struct glove_refinement_expectations *x,
                                           struct glove_refinement_observation *out, struct glove_error *err) {
        static const char *const keys[] = { "bytes", "forbidden_found", "required_found", "sha256", "utf8_valid" };
        const char *what = "observation";
        if (!x || !out || x->n_required > GLOVE_REFINEMENT_MAX_LITERALS ||
            x->n_forbidden > GLOVE_REFINEMENT_MAX_LITERALS)
                return glove_error_set(err, EINVAL, "refinement.invalid_argument", "missing expectations or out");
        memset(out, 0, sizeof(*out));
        out->n_required = x->n_required;
        out->n_forbidden = x->n_forbidden;
        if (!members_exactly(v, keys, sizeof(keys) / sizeof(keys[0])))
                return wire_bad(err, what, "set");
        if (!wire_uint(json_object_get(v, "bytes"), (uint64_t)GLOVE_REFINEMENT_INT_MAX, &out->bytes))
                return wire_bad(err, what, "bytes");
        if (!wire_indices(json_object_get(v, "forbidden_found"), x->n_forbidden, out->forbidden_found))
                return wire_bad(err, what, "forbidden_found");
        if (!wire_indices(json_object_get(v, "required_found"), x->n_required, out->required_found))
                return wire_bad(err, what, "required_found");
        const char *d = json_string_value(json_object_get(v, "sha256"));
        if (!d || !glove_refinement_hex64_valid(d))
                return wire_bad(err, what, "sha256");
        memcpy(out->sha256, d, GLOVE_DIGEST_SHA256_HEX_LEN + 1);
        const json_t *u8 = json_object_get(v, "utf8_valid");
        if (!json_is_boolean(u8))
                return wire_bad(err, what, "utf8_valid");
        out->utf8_valid = json_is_true(u8);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A recognizer of Glove's canonical JSON (json.h, "Canonical form") that
 * builds no value: it checks, in one pass over the bytes and without
 * allocating, that a text is exactly the canonical encoding of one JSON
 * object, and reports where the object's top-level members are.
 *
 * It exists for the start-up replay of the session store (store.h), whose
 * 10 000 records were all written by glove_json_encode_canonical: decoding
 * each one with jansson and encoding it again to compare cost about 70 ns a
 * byte, which is most of the start-up time of a full store. It accepts
 * exactly the texts that glove_json_decode_canonical(data, len, max_bytes,
 * GLOVE_JSON_OBJECT_ONLY) accepts (tests/unit/base/test_json_scan.c and the
 * json_scan fuzz target check the two against each other); values are still
 * read with jansson everywhere else.
 *
 * Canonical text, as jansson's JSON_COMPACT | JSON_SORT_KEYS encoder writes
 * it: no whitespace; object members in strictly increasing order of their
 * decoded key bytes (memcmp, a prefix first; equal keys are a duplicate);
 * strings raw UTF-8 except '"' -> \", '\\' -> \\, U+0008/0009/000A/000C/000D
 * -> \b \t \n \f \r and the other control characters U+0001..U+001F ->
 * \u00XX with uppercase hex (no U+0000, raw or escaped); integers
 * -?(0|[1-9][0-9]*) within int64, no "-0"; true, false, null; nesting at
 * most GLOVE_JSON_MAX_DEPTH.
 *
 * Error codes (struct glove_error, -EINVAL unless noted): json.too_large
 * (-EMSGSIZE), json.embedded_nul, json.invalid_utf8, json.too_deep,
 * json.not_object (the text does not start with '{'), and json.not_canonical
 * for everything else (syntax, reals, duplicate or unsorted keys,
 * out-of-range integers, escapes the encoder would not write, trailing
 * bytes). The set of accepted texts is that of glove_json_decode_canonical;
 * the codes for refused texts are coarser.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* One top-level member of a scanned object: spans into the scanned text. */
struct glove_json_member_span {
        const char *key;    /* key bytes between its quotes, as written (escapes not decoded) */
        size_t key_len;     /* bytes */
        const char *value;  /* the member's value text, itself canonical JSON */
        size_t value_len;   /* bytes */
};

/*
 * Checks that data[0..len) (len <= max_bytes) is the canonical encoding of
 * one JSON object (see top of file). Stores the number of top-level members
 * in *n_members and the first min(count, max_members) of them, in order,
 * into members (may be NULL when max_members is 0); a caller that expects at
 * most max_members treats a larger count as an error of its own. The spans
 * borrow data. Nothing is allocated; recursion is bounded by
 * GLOVE_JSON_MAX_DEPTH. Returns 0 or a negative errno with err set.
 */
int glove_json_scan_canonical_object(const void *data, size_t len, size_t max_bytes,
                                     struct glove_json_member_span *members, size_t max_members,
                                     size_t *n_members, struct glove_error *err);

/* Reading members of a scanned object (spans it reported). */

/* The member whose key is exactly key (a key written without escapes), in
 * members[0..n), or NULL. */
const struct glove_json_member_span *glove_json_span_find(const struct glove_json_member_span *members, size_t n,
                                                          const char *key);

/*
 * True when the members are exactly the keys listed in keys (NULL-ended)
 * plus, when optional is not NULL, possibly optional. Otherwise false with
 * *what set to the first key missing, or to NULL for a member not listed.
 */
bool glove_json_span_exact(const struct glove_json_member_span *members, size_t n, const char *const keys[],
                           const char *optional, const char **what);

/*
 * Copies the value of m (may be NULL) into buf[0..cap) with a NUL when it is
 * a string of at most cap - 1 bytes written without escapes (the strings
 * Glove records hold, identifiers, digests, codes, are of that charset).
 * False otherwise (absent, another type, an escape, too long).
 */
bool glove_json_span_plain_string(const struct glove_json_member_span *m, char *buf, size_t cap);

/* The value of m (may be NULL) when it is an integer >= min (min >= 0):
 * true with *out set, else false (absent, another type, negative, below
 * min). */
bool glove_json_span_int(const struct glove_json_member_span *m, int64_t min, int64_t *out);

/* True when m (may be NULL) holds an object. */
bool glove_json_span_is_object(const struct glove_json_member_span *m);

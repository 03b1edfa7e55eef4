/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Strict JSON helpers over jansson (DESIGN.md, "Libraries" and "Strict input").
 *
 * JSON text follows RFC 8259; text must be UTF-8 (RFC 3629). Decoding is
 * strict: oversized input, invalid UTF-8, NUL characters, duplicate object
 * keys, excessive nesting, trailing data and malformed syntax are all
 * rejected with a stable error code. Integers stay integers (json_int_t,
 * 64-bit); numbers written with a fraction or an exponent decode as reals,
 * which the canonical encoder and the integer getters reject.
 *
 * Canonical form (Glove's, used for plans, receipts and digests over JSON):
 * jansson's JSON_COMPACT | JSON_SORT_KEYS output, i.e. no insignificant
 * whitespace, object members sorted by key bytes, strings UTF-8 unescaped
 * (only '"', '\\' and control characters below U+0020 are escaped), integers
 * only, no reals anywhere, no trailing newline.
 *
 * Stable error codes set in struct glove_error (all with -EINVAL unless noted):
 *   json.too_large          input longer than the caller's bound (-EMSGSIZE)
 *   json.invalid_utf8       bytes that are not well-formed UTF-8
 *   json.embedded_nul       a raw NUL byte, or a "\u0000" escape
 *   json.too_deep           nesting deeper than GLOVE_JSON_MAX_DEPTH
 *   json.duplicate_key      an object with the same key twice
 *   json.number_out_of_range an integer outside int64, or a real overflow
 *   json.trailing_data      non-whitespace after the top-level value
 *   json.syntax             any other malformed JSON
 *   json.not_object         the top level (GLOVE_JSON_OBJECT_ONLY), or the
 *                           object handed to a getter, is not an object
 *   json.real_not_allowed   a real number where only integers are allowed
 *   json.not_canonical      valid JSON whose bytes are not the canonical form
 *   json.missing_field      a required member is absent
 *   json.wrong_type         a member has another JSON type than required
 *   json.not_integer        a number is a real where an integer is required
 *   json.out_of_range       an integer outside the caller's [min, max]
 *   json.too_long           a string longer than the caller's bound
 *   json.too_many_items     an array longer than the caller's bound
 *   json.unknown_field      an object member not in the allowed list
 *   json.encode_failed      jansson could not encode the value (-EINVAL)
 *   json.no_memory          allocation failed (-ENOMEM)
 *   json.invalid_argument   a NULL value or an unknown flag bit
 *
 * Messages name the offending location as a JSON path: "$" is the top-level
 * value, "$.limits.pids" a member, "$.path_grants[2]" an array element.
 * Bytes from the input that appear in messages are escaped (control
 * characters and non-ASCII shown as \xNN) and cut to a short length.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"

/* Deepest nesting of arrays/objects accepted: a top-level "{}" is depth 1,
 * "[[]]" depth 2. 64 accepted, 65 rejected. */
#define GLOVE_JSON_MAX_DEPTH 64

/* Largest JSON path built by glove_json_path_member/_index, including NUL. */
#define GLOVE_JSON_PATH_MAX 256

/* Flags for glove_json_decode_strict and friends. */
enum {
        /* Reject any top-level value other than an object (json.not_object).
         * Without this flag every JSON value is accepted at top level
         * (RFC 8259 section 2). */
        GLOVE_JSON_OBJECT_ONLY = 1u << 0,
        /* Accept the escape "\u0000" inside strings (valid JSON, RFC 8259
         * section 7); raw NUL bytes stay refused. Callers must then use
         * json_string_length(), never strlen(), on decoded strings. */
        GLOVE_JSON_ALLOW_NUL_ESCAPE = 1u << 1,
        /* Refuse text that may hold more than GLOVE_JSON_MAX_VALUES values
         * (json.too_many_values, -E2BIG), counted before any is built: one
         * plus every '[', '{' and ',' outside strings. Bounds the memory a
         * frame from an untrusted peer can cost (a jansson value is about
         * 100 to 300 bytes, so "{}," repeated is 80 times its size). */
        GLOVE_JSON_BOUND_VALUES = 1u << 2,
};

/* The bound of GLOVE_JSON_BOUND_VALUES. */
#define GLOVE_JSON_MAX_VALUES 100000

/*
 * Checks that data[0..len) is well-formed UTF-8 (RFC 3629 section 4): no
 * overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF,
 * no truncated sequences. A NUL byte is valid UTF-8 and is accepted here.
 * data may be NULL when len is 0.
 *
 * Returns true when valid. When invalid and bad_offset is non-NULL, stores
 * the byte offset of the first byte of the first invalid sequence.
 */
bool glove_json_utf8_valid(const void *data, size_t len, size_t *bad_offset);

/*
 * The 1-based line and column of byte offset (clamped to len) in
 * data[0..len): lines are counted by LF, columns in characters (UTF-8
 * continuation bytes do not count), so the first byte is line 1, column 1.
 * Every decode error below names its place this way ("line 3, column 17").
 */
void glove_json_line_column(const void *data, size_t len, size_t offset, size_t *line, size_t *column);

/*
 * Decodes JSON text data[0..len) strictly (RFC 8259), in this order:
 *   len > max_bytes                         -> json.too_large (-EMSGSIZE)
 *   a raw NUL byte                          -> json.embedded_nul
 *   invalid UTF-8                           -> json.invalid_utf8
 *   nesting deeper than GLOVE_JSON_MAX_DEPTH -> json.too_deep (brackets
 *                                              inside strings do not count)
 *   flags & GLOVE_JSON_BOUND_VALUES and more than GLOVE_JSON_MAX_VALUES
 *   values                                  -> json.too_many_values (-E2BIG)
 *   then jansson with JSON_REJECT_DUPLICATES: json.duplicate_key,
 *   json.embedded_nul ("\u0000"), json.number_out_of_range,
 *   json.trailing_data, json.syntax
 *   flags & GLOVE_JSON_OBJECT_ONLY and the top level is not an object
 *                                           -> json.not_object
 * Whitespace (space, tab, CR, LF) around the value is allowed; a byte order
 * mark is not. Empty input is json.syntax; a trailing comma before ']' or
 * '}' is json.syntax worded as such, at the comma's line and column. data may be NULL when len is 0.
 * Integers decode as JSON_INTEGER, numbers with '.', 'e' or 'E' as JSON_REAL.
 * Unknown bits in flags are json.invalid_argument. out must not be NULL.
 *
 * On success returns 0 and stores a new reference in *out (caller owns it,
 * release with json_decref or _cleanup_json_). On failure returns a negative
 * errno (-EINVAL, -EMSGSIZE, -E2BIG, -ENOMEM), leaves *out NULL, and fills err.
 */
int glove_json_decode_strict(const void *data, size_t len, size_t max_bytes,
                             unsigned flags, json_t **out, struct glove_error *err);

/*
 * Encodes v in Glove's canonical form (see top of this header):
 * JSON_COMPACT | JSON_SORT_KEYS, UTF-8 unescaped, any JSON value at top level.
 * Before encoding, the whole tree is checked: a real anywhere is
 * json.real_not_allowed, a string or key containing NUL is
 * json.embedded_nul, nesting deeper than GLOVE_JSON_MAX_DEPTH is
 * json.too_deep (each message names the path). A string that is not valid
 * UTF-8 is json.encode_failed.
 *
 * On success returns 0, stores a malloc'd NUL-terminated string in *out
 * (caller frees with free()) and its length in bytes, excluding the NUL, in
 * *out_len (out_len may be NULL). On failure returns a negative errno, leaves
 * *out NULL and fills err.
 */
int glove_json_encode_canonical(const json_t *v, char **out, size_t *out_len,
                                struct glove_error *err);

/*
 * Decodes data strictly (glove_json_decode_strict with max_bytes and flags)
 * and compares the input bytes with the canonical re-encoding.
 *
 * Returns 1 when data is exactly the canonical form, 0 when it is valid JSON
 * that encodes canonically but differs from its canonical bytes (err is not
 * touched), and a negative errno with err filled when decoding or canonical
 * encoding fails (e.g. json.real_not_allowed for any real).
 */
int glove_json_is_canonical(const void *data, size_t len, size_t max_bytes,
                            unsigned flags, struct glove_error *err);

/*
 * As glove_json_decode_strict, and additionally requires the input to be in
 * canonical form: otherwise returns -EINVAL with json.not_canonical (the
 * message gives the first differing byte offset). On success *out holds a new
 * reference owned by the caller.
 */
int glove_json_decode_canonical(const void *data, size_t len, size_t max_bytes,
                                unsigned flags, json_t **out, struct glove_error *err);

/*
 * Walks v and rejects the first real number found (arrays in index order,
 * objects in their iteration order) with json.real_not_allowed; the
 * message names its path relative to path (NULL means "$"). Also rejects
 * nesting deeper than GLOVE_JSON_MAX_DEPTH (json.too_deep). Returns 0 or
 * -EINVAL.
 */
int glove_json_reject_reals(const json_t *v, const char *path, struct glove_error *err);

/*
 * JSON path builders. Write "<parent>.<key>" or "<parent>[<index>]" into
 * buf (capacity cap bytes, at most GLOVE_JSON_PATH_MAX is useful); parent NULL
 * means "$". Non-printable or non-ASCII bytes in key are written as \xNN.
 * Return 0, or -ENAMETOOLONG when the result with its NUL does not fit in
 * cap (buf then holds an empty string); never truncates.
 */
int glove_json_path_member(char *buf, size_t cap, const char *parent, const char *key);
int glove_json_path_index(char *buf, size_t cap, const char *parent, size_t index);

/*
 * Value checks, for array elements or values already in hand. path names v
 * in messages (NULL means "$").
 *
 * glove_json_as_string: v must be a string (json.wrong_type) of at most
 *   max_bytes bytes (json.too_long) without NUL (json.embedded_nul).
 *   *out borrows v's storage: valid while v is alive and unmodified.
 * glove_json_as_int: v must be an integer (a real is json.not_integer, any
 *   other type json.wrong_type) with min <= value <= max (json.out_of_range).
 * glove_json_as_bool: v must be true or false (json.wrong_type).
 *
 * Return 0 or -EINVAL; *out is written only on success.
 */
int glove_json_as_string(const json_t *v, const char *path, size_t max_bytes,
                         const char **out, struct glove_error *err);
int glove_json_as_int(const json_t *v, const char *path, int64_t min, int64_t max,
                      int64_t *out, struct glove_error *err);
int glove_json_as_bool(const json_t *v, const char *path, bool *out,
                       struct glove_error *err);

/*
 * Required-member getters for strict decoders. obj must be an object
 * (json.not_object); key names the member; path names obj in messages (NULL
 * means "$"), so a missing "pids" in obj at "$.limits" reports
 * "$.limits.pids". A missing member is json.missing_field; a JSON null is a
 * present member of the wrong type (json.wrong_type), as is a member that
 * is not an array/object where one is required. The remaining checks
 * are those of the glove_json_as_* functions.
 *
 * glove_json_get_array: the array may hold at most max_items elements
 *   (json.too_many_items).
 * glove_json_get_array / glove_json_get_object: *out is a borrowed reference
 *   (valid while obj is alive; do not json_decref it).
 *
 * Return 0 or -EINVAL; *out is written only on success.
 */
int glove_json_get_string(const json_t *obj, const char *key, const char *path,
                          size_t max_bytes, const char **out, struct glove_error *err);
int glove_json_get_int(const json_t *obj, const char *key, const char *path,
                       int64_t min, int64_t max, int64_t *out, struct glove_error *err);
int glove_json_get_bool(const json_t *obj, const char *key, const char *path,
                        bool *out, struct glove_error *err);
int glove_json_get_array(const json_t *obj, const char *key, const char *path,
                         size_t max_items, json_t **out, struct glove_error *err);
int glove_json_get_object(const json_t *obj, const char *key, const char *path,
                          json_t **out, struct glove_error *err);

/*
 * Rejects members of obj whose key is not in allowed_keys, a NULL-terminated
 * array of static strings. obj must be an object (json.not_object). The first
 * unknown key in the object's order is reported as json.unknown_field with
 * its path, e.g. "$.limits.cpu". Returns 0 or -EINVAL.
 */
int glove_json_check_keys(const json_t *obj, const char *const allowed_keys[],
                          const char *path, struct glove_error *err);

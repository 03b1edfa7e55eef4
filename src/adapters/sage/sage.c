/* SPDX-License-Identifier: Apache-2.0 */
/* The Sage guest-channel adapter: its binding, runtime set and the one
 * observation schema it registers (see glove/adapters/sage.h). */
#include "glove/adapters/sage.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

static const char *const sage_runtimes[] = { "claude-code", "pi" };

static const char *const signature_members[] = { "signature", "signatures", "sig", "signer", "public_key", "key_id" };

static int body_error(struct glove_error *err, const char *code, const char *what) {
        return glove_error_set(err, EINVAL, code, "Sage observation body: %s", what);
}

static bool control_free(const unsigned char *s, size_t len) {
        for (size_t i = 0; i < len; i++) {
                if (s[i] < 0x20 || s[i] == 0x7f)
                        return false;
                /* U+0080..U+009F are C2 80..C2 9F in UTF-8. */
                if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
                        return false;
        }
        return true;
}

static bool tag_valid(const char *s) {
        size_t n = strlen(s);
        if (n < 1 || n > GLOVE_SAGE_TAG_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                          (i > 0 && (c == '.' || c == '_' || c == '-'));
                if (!ok)
                        return false;
        }
        return true;
}

static int check_members(const json_t *body, struct glove_error *err) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)body, key, v) {
                for (size_t i = 0; i < sizeof(signature_members) / sizeof(signature_members[0]); i++)
                        if (strcmp(key, signature_members[i]) == 0)
                                return body_error(err, "adapters.sage_body_signature",
                                                  "observations are non-signing; no signature member is allowed");
                if (strcmp(key, "kind") && strcmp(key, "seq") && strcmp(key, "summary") && strcmp(key, "tags"))
                        return body_error(err, "adapters.sage_body_unknown_member",
                                          "only kind, seq, summary and tags are allowed");
        }
        return 0;
}

static int check_tags(const json_t *tags, struct glove_error *err) {
        if (!json_is_array(tags))
                return body_error(err, "adapters.sage_body_tags", "tags is not an array");
        if (json_array_size(tags) > GLOVE_SAGE_TAGS_MAX)
                return body_error(err, "adapters.sage_body_tags", "more than 8 tags");
        const char *prev = NULL;
        size_t i;
        const json_t *t;
        json_array_foreach(tags, i, t) {
                const char *s = json_string_value(t);
                if (!s || !tag_valid(s))
                        return body_error(err, "adapters.sage_body_tags",
                                          "a tag is not 1..64 bytes of [a-z0-9._-] starting with [a-z0-9]");
                if (prev && strcmp(prev, s) >= 0)
                        return body_error(err, "adapters.sage_body_tags", "tags are not sorted and unique");
                prev = s;
        }
        return 0;
}

int glove_sage_observation_validate(const json_t *body, struct glove_error *err) {
        if (!json_is_object(body))
                return body_error(err, "adapters.sage_body_not_object", "not a JSON object");
        int r = check_members(body, err);
        if (r < 0)
                return r;
        const char *kind = json_string_value(json_object_get(body, "kind"));
        if (!kind || (strcmp(kind, "progress") && strcmp(kind, "status") && strcmp(kind, "note")))
                return body_error(err, "adapters.sage_body_kind", "kind is not progress, status or note");
        const json_t *seq = json_object_get(body, "seq");
        if (!json_is_integer(seq) || json_integer_value(seq) < 0 || json_integer_value(seq) > GLOVE_SAGE_SEQ_MAX)
                return body_error(err, "adapters.sage_body_seq", "seq is not an integer in 0..2147483647");
        const json_t *summary = json_object_get(body, "summary");
        if (!json_is_string(summary))
                return body_error(err, "adapters.sage_body_summary", "summary is not a string");
        size_t len = json_string_length(summary);
        if (len < 1 || len > GLOVE_SAGE_SUMMARY_MAX)
                return body_error(err, "adapters.sage_body_summary", "summary is not 1..512 bytes");
        if (!control_free((const unsigned char *)json_string_value(summary), len))
                return body_error(err, "adapters.sage_body_summary", "summary holds a control character");
        const json_t *tags = json_object_get(body, "tags");
        if (tags && (r = check_tags(tags, err)) < 0)
                return r;
        return 0;
}

int glove_sage_register(struct glove_channel_host *h, struct glove_error *err) {
        const struct glove_channel_descriptor d = {
                .schema_id = GLOVE_SAGE_OBSERVATION_SCHEMA,
                .validate = glove_sage_observation_validate,
                .body_max_bytes = GLOVE_SAGE_BODY_MAX,
                .ttl_max_ms = GLOVE_SAGE_TTL_MAX_MS,
        };
        return glove_channel_host_register(h, &d, err);
}

int glove_sage_resolve(const char *binding, bool *bound, struct glove_error *err) {
        if (bound)
                *bound = false;
        if (!binding)
                return 0;
        if (strcmp(binding, GLOVE_SAGE_BINDING_ID) != 0)
                return glove_error_set(err, EINVAL, "adapters.binding_unsupported",
                                       "guest_channel binding is not supported by the Sage adapter (only %s)",
                                       GLOVE_SAGE_BINDING_ID);
        if (bound)
                *bound = true;
        return 0;
}

const char *const *glove_sage_runtime_ids(size_t *n) {
        if (n)
                *n = sizeof(sage_runtimes) / sizeof(sage_runtimes[0]);
        return sage_runtimes;
}

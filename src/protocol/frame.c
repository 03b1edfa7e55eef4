/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/protocol/frame.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/bytes.h"

int glove_protocol_frame_next(const void *data, size_t len, const uint8_t **payload, size_t *payload_len,
                             size_t *frame_len, struct glove_error *err) {
        const uint8_t *p = data;
        if (len < GLOVE_PROTOCOL_FRAME_PREFIX)
                return 0;
        uint32_t n = glove_get_be32(p);
        if (n == 0)
                return glove_error_set(err, EINVAL, "frame.empty", "a frame of zero bytes");
        if (n > GLOVE_PROTOCOL_FRAME_MAX)
                return glove_error_set(err, EMSGSIZE, "frame.too_large", "a frame of %u bytes exceeds the bound of %u",
                                       n, GLOVE_PROTOCOL_FRAME_MAX);
        if (len - GLOVE_PROTOCOL_FRAME_PREFIX < n)
                return 0;
        *payload = p + GLOVE_PROTOCOL_FRAME_PREFIX;
        *payload_len = n;
        *frame_len = GLOVE_PROTOCOL_FRAME_PREFIX + (size_t)n;
        return 1;
}

int glove_protocol_frame_encode(const json_t *msg, struct glove_buffer *out, struct glove_error *err) {
        _cleanup_free_ char *s = json_dumps(msg, JSON_COMPACT | JSON_SORT_KEYS);
        if (!s)
                return glove_error_set(err, EINVAL, "frame.encode", "the response could not be encoded");
        size_t n = strlen(s);
        if (n > GLOVE_PROTOCOL_FRAME_MAX)
                return glove_error_set(err, EMSGSIZE, "frame.too_large", "a response of %zu bytes exceeds the bound",
                                       n);
        uint8_t prefix[GLOVE_PROTOCOL_FRAME_PREFIX];
        glove_put_be32(prefix, (uint32_t)n);
        int r = glove_buffer_reserve(out, sizeof(prefix) + n);
        if (r < 0)
                return glove_error_set(err, -r, r == -EMSGSIZE ? "frame.too_large" : "frame.encode",
                                       "no room for a %zu-byte response", n);
        glove_buffer_append(out, prefix, sizeof(prefix));
        glove_buffer_append(out, s, n);
        return 0;
}

int glove_protocol_frame_encode_output(struct glove_buffer *out, const char *session_id, const void *data, size_t n,
                                      struct glove_error *err) {
        static const char head[] = "{\"method\":\"session_output\",\"params\":{\"data_b64\":\"";
        static const char mid[] = "\",\"session_id\":\"";
        static const char tail[] = "\"}}";
        size_t idlen = 0;
        for (; session_id[idlen]; idlen++) {
                unsigned char ch = (unsigned char)session_id[idlen];
                if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\' || idlen >= GLOVE_PROTOCOL_REQUEST_ID_MAX)
                        return glove_error_set(err, EINVAL, "frame.encode", "a session id JSON would escape");
        }
        if (idlen == 0)
                return glove_error_set(err, EINVAL, "frame.encode", "an empty session id");
        if (n > GLOVE_PROTOCOL_FRAME_MAX)
                return glove_error_set(err, EMSGSIZE, "frame.too_large", "%zu bytes of output exceed the frame bound", n);
        size_t plen = sizeof(head) - 1 + GLOVE_BASE64_LEN(n) + sizeof(mid) - 1 + idlen + sizeof(tail) - 1;
        if (plen > GLOVE_PROTOCOL_FRAME_MAX)
                return glove_error_set(err, EMSGSIZE, "frame.too_large", "a notification of %zu bytes exceeds the bound",
                                       plen);
        int r = glove_buffer_reserve(out, GLOVE_PROTOCOL_FRAME_PREFIX + plen);
        if (r < 0)
                return glove_error_set(err, -r, r == -EMSGSIZE ? "frame.too_large" : "frame.encode",
                                       "no room for a %zu-byte notification", plen);
        uint8_t *p = out->data + out->len;
        glove_put_be32(p, (uint32_t)plen);
        p += GLOVE_PROTOCOL_FRAME_PREFIX;
        memcpy(p, head, sizeof(head) - 1);
        p += sizeof(head) - 1;
        p += glove_base64_encode_into(data, n, (char *)p);
        memcpy(p, mid, sizeof(mid) - 1);
        p += sizeof(mid) - 1;
        memcpy(p, session_id, idlen);
        p += idlen;
        memcpy(p, tail, sizeof(tail) - 1);
        (void)glove_buffer_commit(out, GLOVE_PROTOCOL_FRAME_PREFIX + plen);
        return 0;
}

static bool id_ok(const json_t *id) {
        if (json_is_string(id)) {
                size_t n = json_string_length(id);
                return n >= 1 && n <= GLOVE_PROTOCOL_REQUEST_ID_MAX && !memchr(json_string_value(id), 0, n);
        }
        return json_is_integer(id) && json_integer_value(id) >= 0 &&
               json_integer_value(id) <= GLOVE_PROTOCOL_REQUEST_INT_ID_MAX;
}

static bool method_ok(const char *m, size_t n) {
        if (n < 1 || n > GLOVE_PROTOCOL_METHOD_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((m[i] >= 'a' && m[i] <= 'z') || m[i] == '_'))
                        return false;
        return true;
}

json_t *glove_protocol_request_id(const json_t *root) {
        json_t *id = json_is_object(root) ? json_object_get(root, "id") : NULL;
        return id && id_ok(id) ? id : NULL;
}

static const char *const request_keys[] = { "id", "method", "params", NULL };

int glove_protocol_request_parse(const void *payload, size_t len, json_t **root, struct glove_protocol_request *req,
                                struct glove_error *err) {
        struct glove_error e = { 0 };
        json_t *o = NULL;
        *root = NULL;
        if (glove_json_decode_strict(payload, len, GLOVE_PROTOCOL_FRAME_MAX, GLOVE_JSON_OBJECT_ONLY, &o, &e) < 0)
                return glove_error_set(err, EINVAL, "frame.malformed", "%s: %s", e.code, e.message);
        *root = o;
        if (glove_json_check_keys(o, request_keys, NULL, &e) < 0)
                return glove_error_set(err, EINVAL, "request.invalid", "%s", e.message);
        json_t *id = json_object_get(o, "id");
        if (!id || !id_ok(id))
                return glove_error_set(err, EINVAL, "request.invalid",
                                       "$.id must be a string of 1..%d bytes or an integer 0..2^53",
                                       GLOVE_PROTOCOL_REQUEST_ID_MAX);
        json_t *m = json_object_get(o, "method");
        if (!json_is_string(m) || !method_ok(json_string_value(m), json_string_length(m)))
                return glove_error_set(err, EINVAL, "request.invalid", "$.method must be 1..%d bytes of [a-z_]",
                                       GLOVE_PROTOCOL_METHOD_MAX);
        json_t *params = json_object_get(o, "params");
        if (!params) {
                params = json_object();
                if (!params || json_object_set_new(o, "params", params) < 0)
                        return glove_error_set(err, ENOMEM, "frame.encode", "out of memory");
        } else if (!json_is_object(params)) {
                return glove_error_set(err, EINVAL, "request.invalid", "$.params must be an object");
        }
        req->id = id;
        req->method = json_string_value(m);
        req->params = params;
        return 0;
}

json_t *glove_protocol_response_result(json_t *id, json_t *result) {
        if (!result)
                return NULL;
        return json_pack("{s:O,s:o}", "id", id ? id : json_null(), "result", result);
}

json_t *glove_protocol_response_error(json_t *id, const char *code, const char *message, json_t *data) {
        if (!data)
                data = json_object();
        if (!data)
                return NULL;
        return json_pack("{s:O,s:{s:s,s:s,s:o}}", "id", id ? id : json_null(), "error", "code", code, "message",
                         message && *message ? message : code, "data", data);
}

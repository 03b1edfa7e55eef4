/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Control protocol frames and messages (DESIGN.md, "Control protocol";
 * docs/control-protocol.md).
 *
 * A frame is a 4-byte big-endian payload length N followed by N bytes: one
 * JSON object (RFC 8259, UTF-8), 1 <= N <= GLOVE_PROTOCOL_FRAME_MAX. Payloads
 * are decoded strictly (glove_json_decode_strict: duplicate keys, invalid
 * UTF-8, NUL, nesting over 64, trailing data rejected).
 *
 * Requests:  {"id":ID,"method":NAME,"params":{...}}   ("params" may be absent:
 *            it then means {}); ID is a string of 1..128 bytes or an integer
 *            0..2^53; NAME is 1..64 bytes of [a-z_]; no other members.
 * Responses: {"id":ID,"result":{...}}
 *            {"id":ID,"error":{"code":CODE,"message":TEXT,"data":{...}}}
 *            (ID is null when the request's id could not be read.)
 *
 * Stable error codes:
 *   frame.too_large   the length prefix exceeds GLOVE_PROTOCOL_FRAME_MAX (-EMSGSIZE)
 *   frame.empty       a zero length prefix (-EINVAL)
 *   frame.malformed   the payload is not one strictly valid JSON object
 *                     (the json.* detail is in the message) (-EINVAL)
 *   request.invalid   the object is not a request: unknown member, missing
 *                     or mistyped id, method or params (-EINVAL)
 *   frame.encode      a response could not be encoded (-EINVAL/-ENOMEM)
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/buffer.h"
#include "glove/base/error.h"

/* Largest frame payload, bytes (1 MiB). */
#define GLOVE_PROTOCOL_FRAME_MAX (1024u * 1024)
/* Length prefix, bytes. */
#define GLOVE_PROTOCOL_FRAME_PREFIX 4
#define GLOVE_PROTOCOL_REQUEST_ID_MAX 128
#define GLOVE_PROTOCOL_METHOD_MAX 64
/* Largest integer request id (JSON numbers stay exact below 2^53). */
#define GLOVE_PROTOCOL_REQUEST_INT_ID_MAX ((int64_t)1 << 53)

/*
 * Looks for one complete frame at the start of data[0..len).
 * Returns 1 and sets *payload / *payload_len (pointing into data) and
 * *frame_len (prefix + payload, the bytes to consume) when a whole frame is
 * there; 0 when more bytes are needed; -EMSGSIZE (frame.too_large) or
 * -EINVAL (frame.empty) as soon as the prefix is known to be bad, so an
 * oversized frame is refused without waiting for its bytes.
 */
int glove_protocol_frame_next(const void *data, size_t len, const uint8_t **payload, size_t *payload_len,
                             size_t *frame_len, struct glove_error *err);

/*
 * Appends msg as one frame (prefix + compact JSON with sorted keys) to out.
 * Errors: frame.too_large (payload over GLOVE_PROTOCOL_FRAME_MAX, or the
 * buffer's own bound), frame.encode.
 */
int glove_protocol_frame_encode(const json_t *msg, struct glove_buffer *out, struct glove_error *err);

/*
 * Appends one session_output notification as a frame to out, byte for byte
 * what glove_protocol_frame_encode gives for
 *   {"method":"session_output","params":{"data_b64":B64,"session_id":ID}}
 * (sorted keys, no whitespace), without building JSON: B64 is the base64 of
 * data[0..n), written straight into out. session_id must be 1..128 bytes
 * that JSON writes verbatim (0x20..0x7e other than '"' and '\\'; the store's
 * identifier charset is within it).
 * Errors (out unchanged): frame.encode (-EINVAL: an id outside that set),
 * frame.too_large (-EMSGSIZE: payload over GLOVE_PROTOCOL_FRAME_MAX or no
 * room under out's bound), frame.encode (-ENOMEM).
 */
int glove_protocol_frame_encode_output(struct glove_buffer *out, const char *session_id, const void *data, size_t n,
                                      struct glove_error *err);

/* A parsed request; every pointer borrows from the decoded root. */
struct glove_protocol_request {
        json_t *id;          /* string or integer */
        const char *method;
        json_t *params;      /* object */
};

/*
 * Decodes payload[0..len) strictly and checks that it is a request. On
 * success *root holds the decoded object (caller owns it; req borrows from
 * it). On failure *root is NULL unless the object decoded but is not a
 * request (then *root is set so the caller can still echo a readable id;
 * see glove_protocol_request_id). Errors: frame.malformed, request.invalid.
 */
int glove_protocol_request_parse(const void *payload, size_t len, json_t **root, struct glove_protocol_request *req,
                                struct glove_error *err);

/* The request id of a decoded but invalid request, when it is a valid id;
 * else NULL. Borrowed. */
json_t *glove_protocol_request_id(const json_t *root);

/* {"id":id,"result":result}; id borrowed (NULL means null), result stolen.
 * Returns a new reference or NULL on allocation failure. */
json_t *glove_protocol_response_result(json_t *id, json_t *result);

/* {"id":id,"error":{"code","message","data"}}; id borrowed (NULL means
 * null), code and message copied, data stolen (NULL means {}). */
json_t *glove_protocol_response_error(json_t *id, const char *code, const char *message, json_t *data);

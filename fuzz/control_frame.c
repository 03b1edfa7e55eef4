/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/protocol/frame.c
/*
 * libFuzzer target: the gloved control frame decoder. The input is a byte
 * stream as a client would send it; it is split into frames
 * (glove_protocol_frame_next), each payload is decoded as a request
 * (glove_protocol_request_parse), and an error or result response is built
 * and encoded back into a frame, as the server does. Built and run by
 * scripts/fuzz.sh; seeds in fuzz/corpus/control_frame/.
 *
 * Invariants besides memory safety: a complete frame lies inside the input
 * and its length is the prefix plus the payload; a frame bound violation is
 * reported from the prefix alone; a parsed request has a method of [a-z_]
 * and an object params; every response encodes and decodes back as the
 * same frame.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/buffer.h"
#include "glove/base/json.h"
#include "glove/protocol/frame.h"

static void respond(json_t *id, const struct glove_protocol_request *req) {
        struct glove_buffer out;
        glove_buffer_init(&out, GLOVE_PROTOCOL_FRAME_PREFIX + GLOVE_PROTOCOL_FRAME_MAX);
        json_t *msg = req ? glove_protocol_response_result(id, json_pack("{s:s,s:O}", "method", req->method, "params",
                                                                        req->params))
                          : glove_protocol_response_error(id, "frame.malformed", "fuzz", NULL);
        if (msg && glove_protocol_frame_encode(msg, &out, NULL) == 0) {
                const uint8_t *p;
                size_t pl, fl;
                if (glove_protocol_frame_next(out.data, out.len, &p, &pl, &fl, NULL) != 1 || fl != out.len)
                        abort();
                json_t *back = NULL;
                if (glove_json_decode_strict(p, pl, GLOVE_PROTOCOL_FRAME_MAX, GLOVE_JSON_OBJECT_ONLY, &back, NULL) < 0)
                        abort();
                json_decref(back);
        }
        json_decref(msg);
        glove_buffer_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t off = 0;
        while (off < size) {
                const uint8_t *payload;
                size_t plen, flen;
                struct glove_error e = { 0 };
                int r = glove_protocol_frame_next(data + off, size - off, &payload, &plen, &flen, &e);
                if (r <= 0) {
                        if (r < 0 && (size - off < 4 || !e.code))
                                abort();
                        break;
                }
                if (flen != plen + 4 || flen > size - off || payload != data + off + 4)
                        abort();
                json_t *root = NULL;
                struct glove_protocol_request req;
                if (glove_protocol_request_parse(payload, plen, &root, &req, NULL) == 0) {
                        if (!json_is_object(req.params) || !req.method[0] ||
                            strspn(req.method, "abcdefghijklmnopqrstuvwxyz_") != strlen(req.method))
                                abort();
                        respond(req.id, &req);
                } else {
                        respond(glove_protocol_request_id(root), NULL);
                }
                json_decref(root);
                off += flen;
        }
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/mcp/frame.c src/mcp/response_scan.c
/*
 * libFuzzer target: the fast path of upstream responses
 * (include/glove/mcp/response_scan.h). Built and run by scripts/fuzz.sh;
 * seeds in fuzz/corpus/mcp_response_scan/ (tests/unit/mcp/test_response_scan.c
 * reads them too).
 *
 * Input: one line as an upstream writes it (without its newline).
 *
 * Invariants besides memory safety:
 *   - the scanner answers 0 or 1, and 1 only for a line that
 *     glove_mcp_message_parse (flags 0) accepts as a response whose id is
 *     that integer, with "error" exactly when the scanner says so;
 *   - the value bytes it locates lie inside the line, and the message the
 *     gateway forwards from them ({"jsonrpc":"2.0","id":ID,"result"|"error":
 *     BYTES}) is accepted by the tree parser and equals the message built
 *     from the tree (json_equal), up to the id.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/json.h"
#include "glove/mcp/frame.h"
#include "glove/mcp/response_scan.h"

#define CHECK(c) \
        do { \
                if (!(c)) \
                        abort(); \
        } while (0)

#define MAX_FRAME (1024 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > MAX_FRAME)
                return 0;
        const char *line = (const char *)data;
        struct glove_mcp_raw_response r;
        int fast = glove_mcp_response_scan(line, size, MAX_FRAME, &r);
        CHECK(fast == 0 || fast == 1);
        if (!fast)
                return 0;
        struct glove_mcp_message m;
        CHECK(glove_mcp_message_parse(line, size, MAX_FRAME, 0, &m, NULL, NULL) == 0);
        CHECK(m.kind == GLOVE_MCP_RESPONSE && json_is_integer(m.id) && json_integer_value(m.id) == r.id);
        json_t *error = json_object_get(m.root, "error");
        CHECK(r.is_error == (error != NULL));
        CHECK(r.value_off <= size && r.value_len <= size - r.value_off && r.value_len > 0);

        const char *head = r.is_error ? "{\"jsonrpc\":\"2.0\",\"id\":\"agent\",\"error\":"
                                      : "{\"jsonrpc\":\"2.0\",\"id\":\"agent\",\"result\":";
        size_t hl = strlen(head), n = hl + r.value_len + 1;
        char *buf = malloc(n);
        CHECK(buf);
        memcpy(buf, head, hl);
        memcpy(buf + hl, line + r.value_off, r.value_len);
        buf[n - 1] = '}';
        struct glove_mcp_message f;
        CHECK(glove_mcp_message_parse(buf, n, SIZE_MAX, 0, &f, NULL, NULL) == 0 && f.kind == GLOVE_MCP_RESPONSE);
        json_t *want = json_pack("{s:s,s:s,s:O}", "jsonrpc", "2.0", "id", "agent", r.is_error ? "error" : "result",
                                 r.is_error ? error : json_object_get(m.root, "result"));
        CHECK(want && json_equal(want, f.root));
        json_decref(want);
        glove_mcp_message_free(&f);
        glove_mcp_message_free(&m);
        free(buf);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/mcp/http_request.c
/*
 * libFuzzer target: the in-sandbox MCP endpoint's HTTP request head parser
 * (include/glove/mcp/http_request.h), which reads the agent's bytes. Built
 * and run by scripts/fuzz.sh; seeds in fuzz/corpus/mcp_http_request/.
 *
 * Input: the bytes the agent sends. The head end is searched in the whole
 * input; a complete head is copied to an allocation of exactly its size (so
 * ASan sees any read past it) and parsed; the whole input is parsed too.
 *
 * Invariants besides memory safety:
 *   - glove_mcp_http_head_end gives the end of the first "\r\n\r\n", or 0; it
 *     reports a bare LF exactly when a '\n' not after '\r' comes first;
 *   - glove_mcp_http_request_parse returns 0 or one of the documented
 *     statuses with its reason (400 endpoint.http_bad_head, 431
 *     endpoint.http_head_too_large, 505 endpoint.http_version);
 *   - on 0 every span lies inside the head, the target starts with '/', the
 *     minor version is 0 or 1, a Content-Length is at most 2^53 and never
 *     comes with Transfer-Encoding;
 *   - glove_mcp_http_list_has never reads outside its span.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/mcp/http_request.h"

static void check_span(struct glove_mcp_http_span sp, const char *head, size_t len) {
        if (!sp.s)
                return;
        if (sp.s < head || sp.s + sp.n > head + len)
                abort();
        char *copy = malloc(sp.n ? sp.n : 1);
        memcpy(copy, sp.s, sp.n);
        struct glove_mcp_http_span c = {copy, sp.n};
        (void)glove_mcp_http_list_has(c, "application/json", true);
        (void)glove_mcp_http_list_has(c, "close", false);
        (void)glove_mcp_http_span_eq(c, "127.0.0.1:8931");
        free(copy);
}

static void parse_one(const char *head, size_t len) {
        struct glove_mcp_http_request q;
        const char *reason = NULL;
        int st = glove_mcp_http_request_parse(head, len, &q, &reason);
        if (st == 0) {
                if (reason || !q.target.s || q.target.n == 0 || q.target.s[0] != '/' || (q.minor != 0 && q.minor != 1))
                        abort();
                if (q.has_content_length && (q.content_length > (UINT64_C(1) << 53) || q.has_transfer_encoding))
                        abort();
                struct glove_mcp_http_span all[] = {q.target, q.host, q.origin, q.accept, q.content_type,
                                                    q.connection, q.session_id, q.protocol_version};
                for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
                        check_span(all[i], head, len);
                return;
        }
        if (!reason)
                abort();
        if (!((st == 400 && strcmp(reason, "endpoint.http_bad_head") == 0) ||
              (st == 431 && strcmp(reason, "endpoint.http_head_too_large") == 0) ||
              (st == 505 && strcmp(reason, "endpoint.http_version") == 0)))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *buf = (const char *)data;
        bool bare = false;
        size_t end = glove_mcp_http_head_end(buf, size, &bare);
        /* Reference: the first "\r\n\r\n" and the first bare LF. */
        size_t ref = 0;
        bool ref_bare = false;
        for (size_t i = 0; i < size; i++) {
                if (buf[i] != '\n')
                        continue;
                if (i == 0 || buf[i - 1] != '\r') {
                        ref_bare = true;
                        break;
                }
                if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
                        ref = i + 1;
                        break;
                }
        }
        if (end != ref || bare != ref_bare)
                abort();
        if (end) {
                char *head = malloc(end);
                memcpy(head, buf, end);
                parse_one(head, end);
                free(head);
        }
        char *all = malloc(size ? size : 1);
        memcpy(all, buf, size);
        parse_one(all, size);
        free(all);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/mcp/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"

void glove_mcp_reader_init(struct glove_mcp_reader *r, size_t max_frame) {
        memset(r, 0, sizeof(*r));
        r->max_frame = max_frame;
        /* Room for one maximal line, its "\r\n", and one more read. */
        glove_buffer_init(&r->buf, max_frame + 2 + GLOVE_MCP_READ_CHUNK);
}

void glove_mcp_reader_free(struct glove_mcp_reader *r) {
        glove_buffer_free(&r->buf);
}

/* Drops the lines already handed out, so their space can be reused. */
static void compact(struct glove_mcp_reader *r) {
        if (r->off == 0)
                return;
        glove_buffer_consume(&r->buf, r->off);
        r->scanned = r->scanned > r->off ? r->scanned - r->off : 0;
        r->off = 0;
}

ssize_t glove_mcp_reader_fill(struct glove_mcp_reader *r, int fd) {
        compact(r);
        int rr = glove_buffer_reserve(&r->buf, GLOVE_MCP_READ_CHUNK);
        if (rr < 0)
                return rr;
        ssize_t n;
        do
                n = read(fd, r->buf.data + r->buf.len, GLOVE_MCP_READ_CHUNK);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        if (n == 0) {
                r->eof = true;
                return 0;
        }
        glove_buffer_commit(&r->buf, (size_t)n);
        return n;
}

int glove_mcp_reader_feed(struct glove_mcp_reader *r, const void *data, size_t len) {
        compact(r);
        return glove_buffer_append(&r->buf, data, len);
}

int glove_mcp_reader_next(struct glove_mcp_reader *r, const char **line, size_t *len) {
        for (;;) {
                size_t from = r->scanned > r->off ? r->scanned : r->off;
                ssize_t nl = glove_buffer_find(&r->buf, '\n', from);
                if (nl < 0) {
                        r->scanned = r->buf.len;
                        /* A pending line may end in "\r" awaiting its "\n". */
                        size_t pending = r->buf.len - r->off;
                        if (pending > 0 && r->buf.data[r->buf.len - 1] == '\r')
                                pending--;
                        return pending > r->max_frame ? -EMSGSIZE : 0;
                }
                size_t end = (size_t)nl;
                char *start = (char *)r->buf.data + r->off;
                size_t content = end - r->off;
                if (content > 0 && start[content - 1] == '\r')
                        content--;
                if (content > r->max_frame)
                        return -EMSGSIZE;
                r->off = end + 1;
                r->scanned = r->off;
                if (content == 0)
                        continue;
                start[content] = '\0';
                *line = start;
                *len = content;
                return 1;
        }
}

static const char *const top_level_keys[] = {"jsonrpc", "id", "method", "params", "result", "error", NULL};

int glove_mcp_message_parse(const char *line, size_t len, size_t max_frame, unsigned flags,
                            struct glove_mcp_message *msg, json_t **id_out, struct glove_error *err) {
        memset(msg, 0, sizeof(*msg));
        if (id_out)
                *id_out = NULL;
        json_t *root = NULL;
        struct glove_error jerr = {0};
        /* "\u0000" inside a string is valid JSON: an argument carrying one is
         * answered by policy (with the request's id), not as a parse error. */
        unsigned jflags = GLOVE_JSON_ALLOW_NUL_ESCAPE |
                          ((flags & GLOVE_MCP_PARSE_BOUND_VALUES) ? (unsigned)GLOVE_JSON_BOUND_VALUES : 0u);
        if (glove_json_decode_strict(line, len, max_frame, jflags, &root, &jerr) < 0)
                return glove_error_set(err, EBADMSG, "mcp.parse", "%s", jerr.message);
        _cleanup_json_ json_t *owned = root;
        if (json_is_array(root))
                return glove_error_set(err, EINVAL, "mcp.batch", "JSON-RPC batches are not accepted");
        if (!json_is_object(root))
                return glove_error_set(err, EINVAL, "mcp.invalid", "a JSON-RPC message must be an object");
        json_t *id = json_object_get(root, "id");
        if (id && (json_is_string(id) || json_is_integer(id)) && id_out)
                *id_out = json_incref(id);
        const char *bad = NULL;
        for (void *it = json_object_iter(root); it && !bad; it = json_object_iter_next(root, it)) {
                const char *k = json_object_iter_key(it);
                bool known = false;
                for (size_t i = 0; top_level_keys[i]; i++)
                        known = known || strcmp(k, top_level_keys[i]) == 0;
                if (!known)
                        bad = k;
        }
        if (bad)
                return glove_error_set(err, EINVAL, "mcp.invalid", "unknown member in a JSON-RPC message");
        json_t *v = json_object_get(root, "jsonrpc");
        /* Counted: "2.0\u0000x" is not "2.0". */
        if (!json_is_string(v) || json_string_length(v) != 3 || memcmp(json_string_value(v), "2.0", 3) != 0)
                return glove_error_set(err, EINVAL, "mcp.invalid", "\"jsonrpc\" must be \"2.0\"");
        if (id && !json_is_string(id) && !json_is_integer(id))
                return glove_error_set(err, EINVAL, "mcp.invalid", "\"id\" must be a string or an integer");
        if (id && json_is_string(id) && strlen(json_string_value(id)) != json_string_length(id))
                return glove_error_set(err, EINVAL, "mcp.invalid", "\"id\" contains NUL");
        json_t *method = json_object_get(root, "method");
        json_t *params = json_object_get(root, "params");
        json_t *result = json_object_get(root, "result");
        json_t *error = json_object_get(root, "error");
        if (method) {
                if (!json_is_string(method) || strlen(json_string_value(method)) != json_string_length(method))
                        return glove_error_set(err, EINVAL, "mcp.invalid", "\"method\" must be a string without NUL");
                if (result || error)
                        return glove_error_set(err, EINVAL, "mcp.invalid", "a request carries no result or error");
                if (params && !json_is_object(params))
                        return glove_error_set(err, EINVAL, "mcp.invalid", "\"params\" must be an object");
                msg->kind = id ? GLOVE_MCP_REQUEST : GLOVE_MCP_NOTIFICATION;
                msg->method = json_string_value(method);
        } else {
                if (!id || params || (!result == !error))
                        return glove_error_set(err, EINVAL, "mcp.invalid",
                                               "a response has an id and exactly one of result and error");
                if (error && !json_is_object(error))
                        return glove_error_set(err, EINVAL, "mcp.invalid", "\"error\" must be an object");
                msg->kind = GLOVE_MCP_RESPONSE;
        }
        msg->root = TAKE_PTR(owned);
        msg->id = id;
        msg->params = params;
        return 0;
}

void glove_mcp_message_free(struct glove_mcp_message *msg) {
        if (msg->root)
                json_decref(msg->root);
        memset(msg, 0, sizeof(*msg));
}

int glove_mcp_encode(const json_t *msg, size_t max_frame, char **out, size_t *len) {
        *out = NULL;
        *len = 0;
        size_t need = json_dumpb(msg, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (need == 0)
                return -EINVAL;
        if (need > max_frame)
                return -EMSGSIZE;
        char *buf = malloc(need + 1);
        if (!buf)
                return -ENOMEM;
        if (json_dumpb(msg, buf, need, JSON_COMPACT | JSON_PRESERVE_ORDER) != need) {
                free(buf);
                return -EINVAL;
        }
        buf[need] = '\n';
        *out = buf;
        *len = need + 1;
        return 0;
}

void glove_mcp_writer_init(struct glove_mcp_writer *w, size_t max_pending) {
        glove_buffer_init(&w->buf, max_pending);
}

void glove_mcp_writer_free(struct glove_mcp_writer *w) {
        glove_buffer_free(&w->buf);
}

int glove_mcp_writer_queue(struct glove_mcp_writer *w, const void *data, size_t len) {
        return glove_buffer_append(&w->buf, data, len);
}

int glove_mcp_writer_flush(struct glove_mcp_writer *w, int fd) {
        while (w->buf.len > 0) {
                ssize_t n = write(fd, w->buf.data, w->buf.len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
                }
                glove_buffer_consume(&w->buf, (size_t)n);
        }
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Bounded line framing of the MCP stdio transport (MCP specification,
 * Transports: stdio — one JSON-RPC message per line, UTF-8, no embedded
 * newlines) and strict message decoding (issue "glove run", Framing).
 *
 * A reader accumulates bytes from a non-blocking descriptor and yields whole
 * lines. A line longer than max_frame bytes (without its newline) is an
 * error, detected as soon as max_frame bytes without a newline are buffered:
 * the reader never holds more than max_frame + one read of input.
 *
 * A writer queues encoded messages for a non-blocking descriptor, bounded by
 * a byte limit; exceeding it is an error, never a silent drop.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glove/base/buffer.h"
#include "glove/base/error.h"

/* Default and bounds of --max-frame, in bytes. */
#define GLOVE_MCP_FRAME_DEFAULT (4 * 1024 * 1024)
#define GLOVE_MCP_FRAME_MIN 1024
#define GLOVE_MCP_FRAME_MAX (256 * 1024 * 1024)
/* Bytes read from a descriptor per read(2). */
#define GLOVE_MCP_READ_CHUNK 65536

/* What a reader kept of a line longer than max_frame that it skipped
 * (glove_mcp_reader_skip_oversized): its length and the top-level members
 * that route it, found by a bounded scan as its bytes went by (never
 * decoded, never held whole). */
struct glove_mcp_skipped {
        uint64_t bytes;          /* the line's length without its newline (and a "\r" before it) */
        bool has_method;         /* a top-level "method" member: a request or a notification
                                  * (also set, with has_int_id false, when a top-level key is
                                  * written with an escape: such a line is never routed) */
        bool has_int_id;         /* exactly one top-level "id", an integer within int64 */
        int64_t id;              /* that id when has_int_id */
};

/* The scan of a skipped line (internal to the reader): nesting, string and
 * number state, and the little text it captures (a top-level key, an id's
 * digits). */
struct glove_mcp_line_scan {
        uint32_t depth;
        uint8_t expect;          /* at depth 1: what comes next (key, colon, value, after a value) */
        uint8_t key;             /* the top-level key whose value comes */
        bool in_string, escape, capture, in_number, id_bad, last_cr, key_escaped;
        uint8_t text_len;
        bool text_over;
        char text[24];
        unsigned ids;            /* top-level "id" members seen */
        bool method;             /* a top-level "method" member seen */
        bool id_ok;
        int64_t id;
};

struct glove_mcp_reader {
        struct glove_buffer buf;
        size_t max_frame;   /* longest line accepted, bytes, without the newline */
        size_t off;         /* start of the unconsumed bytes in buf */
        size_t scanned;     /* offset in buf up to which no newline was found */
        bool eof;
        bool skip_oversized;             /* glove_mcp_reader_skip_oversized was called */
        bool skipping;                   /* inside an oversized line: its bytes are discarded */
        struct glove_mcp_line_scan scan;
        struct glove_mcp_skipped skipped;
};

void glove_mcp_reader_init(struct glove_mcp_reader *r, size_t max_frame);
void glove_mcp_reader_free(struct glove_mcp_reader *r);

/*
 * Reads what fd has (one read(2) of at most GLOVE_MCP_READ_CHUNK bytes).
 * Returns the number of bytes read, 0 at end of file (r->eof is set),
 * -EAGAIN when nothing is available, or -errno.
 */
ssize_t glove_mcp_reader_fill(struct glove_mcp_reader *r, int fd);

/* Feeds bytes directly (tests, fuzzing). Returns 0 or -EMSGSIZE when the
 * buffer bound would be exceeded. */
int glove_mcp_reader_feed(struct glove_mcp_reader *r, const void *data, size_t len);

/*
 * Takes the next complete line. On 1, *line points into the reader (valid
 * until the next call on r) and *len is its length without "\n" (a "\r"
 * before it is also removed). Returns 0 when no complete line is buffered,
 * -EMSGSIZE when the pending line exceeds max_frame. Empty lines are skipped.
 */
int glove_mcp_reader_next(struct glove_mcp_reader *r, const char **line, size_t *len);

/*
 * From now on, a line longer than max_frame is skipped instead of stopping
 * the reader: once it is detected, its bytes are discarded as they come
 * (scanned on the way for its top-level "method" and integer "id", in
 * O(1) memory), and when its newline has been read glove_mcp_reader_next
 * returns -EMSGSIZE once, with glove_mcp_reader_skipped describing the line;
 * the next call goes on with the line after it. The reader's memory stays
 * bounded by max_frame + one read whatever the line's length.
 */
void glove_mcp_reader_skip_oversized(struct glove_mcp_reader *r);

/* The line skipped last (valid after glove_mcp_reader_next returned
 * -EMSGSIZE on a reader that skips; borrowed from r). */
const struct glove_mcp_skipped *glove_mcp_reader_skipped(const struct glove_mcp_reader *r);

enum glove_mcp_kind {
        GLOVE_MCP_REQUEST,       /* "method" and "id" */
        GLOVE_MCP_NOTIFICATION,  /* "method", no "id" */
        GLOVE_MCP_RESPONSE,      /* "id" and exactly one of "result", "error" */
};

struct glove_mcp_message {
        json_t *root;            /* owned; the whole object */
        enum glove_mcp_kind kind;
        const char *method;      /* borrowed from root, without NUL; NULL for responses */
        json_t *id;              /* borrowed; string or integer; NULL for notifications */
        json_t *params;          /* borrowed; object, or NULL when absent */
};

/*
 * Decodes one line strictly: valid UTF-8, no duplicate keys, nesting at most
 * GLOVE_JSON_MAX_DEPTH, one object (arrays, i.e. batches, are rejected),
 * "jsonrpc": exactly "2.0", id a string or an integer (not null, not
 * fractional), method a string, params an object when present (MCP uses
 * named params), no unknown top-level members. "\u0000" is accepted inside
 * strings (valid JSON) except in a string id and in method, which are
 * refused, so msg->method is a C string that says all the method says;
 * every other string in msg->root may hold NUL (use json_string_length).
 *
 * Errors, with the JSON-RPC code to answer in err->errnum's place:
 *   "mcp.parse"   (-EBADMSG)  not JSON, invalid UTF-8, duplicate keys: -32700
 *   "mcp.batch"   (-EINVAL)   a JSON array: -32600
 *   "mcp.invalid" (-EINVAL)   not a valid JSON-RPC 2.0 message: -32600
 * On error *id_out (when not NULL) receives a new reference to the message's
 * id if one could be recovered, so the error response can carry it.
 *
 * flags: 0, or GLOVE_MCP_PARSE_BOUND_VALUES for a line from an untrusted
 * peer (the agent): text that may hold more than GLOVE_JSON_MAX_VALUES JSON
 * values is "mcp.parse" before anything is built, so a frame cannot cost
 * Glove much more memory than its size (base/json.h).
 */
enum { GLOVE_MCP_PARSE_BOUND_VALUES = 1u << 0 };

int glove_mcp_message_parse(const char *line, size_t len, size_t max_frame, unsigned flags,
                            struct glove_mcp_message *msg, json_t **id_out, struct glove_error *err);

void glove_mcp_message_free(struct glove_mcp_message *msg);

/*
 * Encodes msg (compact, order preserved, UTF-8 unescaped) followed by "\n".
 * *out is malloc'd (caller frees). Errors: -EINVAL when msg cannot be
 * encoded, -EMSGSIZE when it exceeds max_frame.
 */
int glove_mcp_encode(const json_t *msg, size_t max_frame, char **out, size_t *len);

struct glove_mcp_writer {
        struct glove_buffer buf;  /* pending bytes, bounded by buf.max */
};

void glove_mcp_writer_init(struct glove_mcp_writer *w, size_t max_pending);
void glove_mcp_writer_free(struct glove_mcp_writer *w);

/* Queues an encoded message. Returns 0 or -EMSGSIZE when the pending bound
 * would be exceeded (the peer is not reading). */
int glove_mcp_writer_queue(struct glove_mcp_writer *w, const void *data, size_t len);

/*
 * Encodes msg as glove_mcp_encode does (compact, order preserved, then
 * "\n") straight into the writer's queue, in one pass and without an
 * intermediate copy (issue 13). All or nothing: on error the queue is as it
 * was. Errors: -EINVAL when msg cannot be encoded, -EMSGSIZE when it
 * exceeds max_frame (without its newline) or the pending bound, -ENOMEM.
 */
int glove_mcp_writer_queue_json(struct glove_mcp_writer *w, const json_t *msg, size_t max_frame);

/*
 * Queues n pieces (base/len pairs, borrowed) that together are one
 * encoded message with its newline, all or nothing. Returns 0 or -EMSGSIZE
 * (the pending bound), -ENOMEM.
 */
struct glove_mcp_piece {
        const void *base;
        size_t len;
};
int glove_mcp_writer_queue_pieces(struct glove_mcp_writer *w, const struct glove_mcp_piece *pieces, size_t n);

/* Writes as much as fd takes. Returns 0 when everything was written,
 * -EAGAIN when bytes remain, or -errno (e.g. -EPIPE). */
int glove_mcp_writer_flush(struct glove_mcp_writer *w, int fd);

static inline bool glove_mcp_writer_pending(const struct glove_mcp_writer *w) {
        return w->buf.len > 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Structured logs of a long-running service (gloved): one object, made and
 * configured by its caller, that writes each message with a level, a stable
 * code and optional key/value fields to one of two sinks:
 *
 *   GLOVE_LOG_SINK_JSON     one JSON object per line on the descriptor the
 *                           caller gives, written with one write(2):
 *       {"ts":"2026-12-02T11:24:22.123456Z","level":"info",
 *        "code":"service.listening","msg":"listening on ...","session_id":"s1"}
 *                           keys in this order: ts (RFC 3339 UTC, µs), level,
 *                           code, msg, then the fields sorted by key; strings
 *                           escaped as JSON requires (", \, control
 *                           characters as \uXXXX, invalid UTF-8 as U+FFFD).
 *   GLOVE_LOG_SINK_JOURNAL  one journal entry through the sendv function the
 *                           caller gives (sd_journal_sendv): MESSAGE, PRIORITY
 *                           (syslog 3..7), SYSLOG_IDENTIFIER, GLOVE_CODE and
 *                           each field with its key in upper case
 *                           (session_id -> SESSION_ID).
 *
 * Messages below the object's level are dropped. Rate limit: per code, at
 * most burst messages in each interval (counted from the first message of
 * the interval); further ones are counted, not written, and once the
 * interval has passed, the next message logged (of any code),
 * glove_log_tick (a service's timer) or glove_log_flush first writes one
 * warning of code "log.suppressed" naming
 * the code and the number suppressed (fields suppressed_code,
 * suppressed_count). Codes beyond GLOVE_LOG_RATE_CODES distinct ones at a
 * time share the limit of the oldest slot, which they take over.
 *
 * Daemon-safe: no environment, no globals; the object has its own lock, so
 * threads may share it. The caller reads JOURNAL_STREAM and passes it to
 * glove_log_sink_choose.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* syslog(3) priorities. */
enum glove_log_level {
        GLOVE_LOG_ERROR = 3,
        GLOVE_LOG_WARNING = 4,
        GLOVE_LOG_NOTICE = 5,
        GLOVE_LOG_INFO = 6,
        GLOVE_LOG_DEBUG = 7,
};

enum glove_log_sink {
        GLOVE_LOG_SINK_JSON = 0,
        GLOVE_LOG_SINK_JOURNAL = 1,
};

/* Longest formatted message (bytes, NUL included); a longer one is cut at a
 * UTF-8 boundary and ends in "...". */
#define GLOVE_LOG_MESSAGE_MAX 4096
/* Most fields per message; further ones are dropped. */
#define GLOVE_LOG_FIELDS_MAX 8
/* Longest field value and code kept (bytes); longer ones are cut. */
#define GLOVE_LOG_VALUE_MAX 1024
/* Distinct codes the rate limit tracks at once. */
#define GLOVE_LOG_RATE_CODES 64
/* Defaults of the rate limit. */
#define GLOVE_LOG_RATE_BURST_DEFAULT 50
#define GLOVE_LOG_RATE_INTERVAL_US_DEFAULT (10ULL * 1000000ULL)

/* One field: key is [a-z][a-z0-9_]* of at most 64 bytes and none of ts,
 * level, code, msg (other keys are dropped); value a string (NULL: the
 * field is dropped). Both borrowed for the call. */
struct glove_log_field {
        const char *key;
        const char *value;
};

/* A NULL-terminated field list for glove_log:
 * GLOVE_LOG_FIELDS({ "session_id", id }, { "pid", pidtext }). */
#define GLOVE_LOG_FIELDS(...) ((const struct glove_log_field[]){ __VA_ARGS__, { NULL, NULL } })

struct glove_log_options {
        enum glove_log_level level;        /* lowest level written (GLOVE_LOG_INFO if 0) */
        enum glove_log_sink sink;
        int fd;                            /* the JSON sink's descriptor (borrowed; e.g. 2) */
        const char *identifier;            /* SYSLOG_IDENTIFIER (copied; "glove" if NULL) */
        /* The journal sink's writer, with sd_journal_sendv's contract
         * (0 or -errno). NULL, or a failure, falls back to JSON on fd. */
        int (*journal_sendv)(const struct iovec *iov, int n);
        unsigned rate_burst;               /* 0: GLOVE_LOG_RATE_BURST_DEFAULT */
        uint64_t rate_interval_us;         /* 0: GLOVE_LOG_RATE_INTERVAL_US_DEFAULT */
        /* Clocks, for tests: monotonic µs for the rate limit and realtime
         * for ts. NULL: CLOCK_MONOTONIC / CLOCK_REALTIME. */
        uint64_t (*monotonic_us)(void *ctx);
        int64_t (*realtime_us)(void *ctx);
        void *clock_ctx;
};

struct glove_log;

/* Makes a log (caller frees with glove_log_free). Returns 0, -ENOMEM or
 * -EINVAL (an unknown level or sink). */
int glove_log_new(const struct glove_log_options *o, struct glove_log **out);

/* Flushes the pending suppressed counts (glove_log_flush) and frees log.
 * NULL is a no-op. */
void glove_log_free(struct glove_log *log);

/*
 * Logs one message: level, code (a stable code such as "conn.refused";
 * non-empty), fields (NULL or a list ending in { NULL, NULL }; see
 * GLOVE_LOG_FIELDS) and a printf format. log may be NULL (nothing is
 * written). Never fails: a message the sink refuses is lost.
 */
void glove_log(struct glove_log *log, enum glove_log_level level, const char *code,
               const struct glove_log_field *fields, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Writes the "log.suppressed" lines of every code with messages suppressed
 * (whatever is left of its interval) and resets their counts. */
void glove_log_flush(struct glove_log *log);

/* Writes the "log.suppressed" lines of the codes whose interval has passed
 * (what the next message would write first): for a service's timer, so the
 * count appears when a flood stops. NULL is a no-op. */
void glove_log_tick(struct glove_log *log);

/* The rate limit's interval in µs (0 for NULL): a period for the timer. */
uint64_t glove_log_rate_interval_us(const struct glove_log *log);

/* True when a message of level would be written (for costly messages). */
bool glove_log_enabled(const struct glove_log *log, enum glove_log_level level);

/* "error", "warning", "notice", "info", "debug"; "?" otherwise. */
const char *glove_log_level_name(enum glove_log_level level);

/* Parses one of those names into *out. Returns 0 or -EINVAL. */
int glove_log_level_parse(const char *name, enum glove_log_level *out);

/*
 * The sink a service should use: GLOVE_LOG_SINK_JOURNAL when
 * journal_stream (the value of $JOURNAL_STREAM, "DEVICE:INODE" in decimal,
 * as systemd sets it; NULL when unset) names the file fd refers to
 * (fstat(2) st_dev and st_ino), i.e. fd is systemd's stream to the
 * journal; GLOVE_LOG_SINK_JSON otherwise (unset, malformed, another file,
 * or fd not open: a service whose stderr was redirected writes JSON).
 */
enum glove_log_sink glove_log_sink_choose(const char *journal_stream, int fd);

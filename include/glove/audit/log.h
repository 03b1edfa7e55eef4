/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The JSONL activity log (DESIGN.md, "Interfaces": Audit; spec
 * architecture.md, Persistence).
 *
 * One JSON object per line: "ts" (RFC 3339 UTC with microseconds), "event",
 * then the event's fields in the order given. Each record is one write(2) to
 * a descriptor opened with O_APPEND, so records from several writers never
 * interleave and nothing sits in a user-space buffer. A record that cannot be
 * written whole is an error: callers fail closed.
 *
 * The log is not protected against a process of the same user that rewrites
 * it; see docs/threat-model.md.
 */

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* Longest record, in bytes including the newline. */
#define GLOVE_AUDIT_RECORD_MAX (1024 * 1024)

/* Bytes of a run id: GLOVE_AUDIT_RUN_ID_BYTES random bytes in lowercase hex. */
#define GLOVE_AUDIT_RUN_ID_BYTES 16
#define GLOVE_AUDIT_RUN_ID_LEN (2 * GLOVE_AUDIT_RUN_ID_BYTES)

struct glove_audit_log {
        int fd;              /* O_WRONLY|O_APPEND|O_CLOEXEC, owned; -1 when closed */
        char *path;          /* canonical absolute path as the kernel resolved it, owned */
        dev_t dev;           /* identity of the opened file */
        ino_t ino;
        /* When not empty, every record appended through this log carries
         * it as "run_id" right after "event" (glove_audit_new_run_id), so
         * every writer of one run (launch, exit, egress, tool calls) stamps
         * the same id. "" for none. */
        char run_id[GLOVE_AUDIT_RUN_ID_LEN + 1];
};

/*
 * Opens (creating with mode 0600 if needed) the log at path, relative paths
 * against cwd. The final component must not be a symbolic link; the target
 * must be a regular file or a character device (/dev/null, /dev/full).
 *
 * Errors: "audit.open" (-errno from open), "audit.file_type" (-EISDIR for a
 * directory, -ENXIO for a FIFO without reader, -EINVAL for other types).
 */
int glove_audit_open(const char *path, const char *cwd, struct glove_audit_log *log, struct glove_error *err);

/*
 * The canonical absolute path the log at path (relative to cwd) would have,
 * without creating or opening it: its parent directory is resolved by the
 * kernel (links in it followed) and the final name appended. Used to refuse
 * a log inside a grant before anything is created. *out is malloc'd.
 * Errors: "audit.open" (-errno: the parent does not exist, ...).
 */
int glove_audit_canonical_path(const char *path, const char *cwd, char **out, struct glove_error *err);

/* Closes the log; idempotent. */
void glove_audit_close(struct glove_audit_log *log);

/*
 * Encodes one record: {"ts": ts, "event": event, ...fields} followed by a
 * newline, into *line (malloc'd, caller frees) of *len bytes. fields is an
 * object whose members are appended in their insertion order; it is
 * borrowed. Reals are encoded with 17 significant digits.
 *
 * Errors: "audit.encode" (-EINVAL), "audit.too_large" (-EMSGSIZE over
 * GLOVE_AUDIT_RECORD_MAX).
 */
int glove_audit_encode(const char *ts, const char *event, const json_t *fields, char **line, size_t *len,
                       struct glove_error *err);

/*
 * A JSON string for len bytes of host data that may not be UTF-8 (argv,
 * paths). Valid UTF-8 without NUL bytes and without backslashes is kept as
 * is. Otherwise the text is escaped: a backslash becomes "\\", a NUL byte
 * and each byte of an invalid UTF-8 sequence become "\xNN", everything else
 * is kept; distinct inputs always give distinct text. Returns a new
 * reference, or NULL on ENOMEM (or input over GLOVE_AUDIT_RECORD_MAX).
 */
json_t *glove_audit_string(const char *bytes, size_t len);

/*
 * Gives log a new run id: GLOVE_AUDIT_RUN_ID_BYTES bytes from getrandom(2)
 * as lowercase hex (an identifier that tells runs sharing a log apart, not
 * a secret). Errors: "audit.run_id" (-errno of getrandom).
 */
int glove_audit_new_run_id(struct glove_audit_log *log, struct glove_error *err);

/*
 * Stamps the current time (and the log's run id, when it has one), encodes
 * and appends one record with a single write(2). fields is borrowed and
 * must not hold "run_id" when the log has one ("audit.encode": reserved).
 * Errors: those of glove_audit_encode, and
 * "audit.append" (-errno; a short write is -EIO) when the record could not
 * be written whole.
 */
int glove_audit_append(struct glove_audit_log *log, const char *event, const json_t *fields, struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The local-service proxy's audit records (spec session-policy.md, "Guest
 * observation channels and Sage guest proposals": "Records contain only the
 * session ID, alias, phase, status, and latency. Audit appends check the
 * same deadline before and after synchronous durability work";
 * architecture.md, "Guest specialized-channel admission": the three-phase
 * sequence delivery_pending, delivered, delivery_failed).
 *
 * One record is one JSON line in Glove's canonical form (JSON_COMPACT |
 * JSON_SORT_KEYS, glove/base/json.h) followed by "\n":
 *
 *   {"alias":"observe","event":"local_service","latency_ms":3,
 *    "phase":"delivery_pending","session_id":"s-1","status":"pending",
 *    "ts":"2026-11-29T13:28:17.123456Z"}
 *
 * ts is RFC 3339 UTC with microseconds (glove/base/time.h).
 *
 * Stable error codes:
 *   services.audit_late       the deadline had passed before the append
 *                             (nothing written) or passed during it (the
 *                             record is written but late) (-ETIMEDOUT)
 *   services.audit_failed     write(2) failed or was short, or fdatasync(2)
 *                             failed (-errno, -EIO for a short write)
 *   services.invalid_argument an argument outside the bounds below (-EINVAL)
 */

#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

/* The phases. */
#define GLOVE_SERVICES_PHASE_PENDING "delivery_pending"
#define GLOVE_SERVICES_PHASE_DELIVERED "delivered"
#define GLOVE_SERVICES_PHASE_FAILED "delivery_failed"

/* Longest session ID and status, in bytes (without the NUL). */
#define GLOVE_SERVICES_SESSION_ID_MAX 128
#define GLOVE_SERVICES_STATUS_MAX 64

/* The largest record line, in bytes (its bounded fields fit well within). */
#define GLOVE_SERVICES_AUDIT_LINE_MAX 1024

/*
 * Appends one record to audit_fd (opened O_WRONLY|O_APPEND by the caller) as
 * a single write(2) of the whole line, then fdatasync(2).
 *   session_id  1..GLOVE_SERVICES_SESSION_ID_MAX printable ASCII bytes
 *               (0x21..0x7e)
 *   alias       an identifier (glove_services_identifier_valid, config.h)
 *   phase       one of the three GLOVE_SERVICES_PHASE_* strings
 *   status      "pending" (with delivery_pending), "ok" (with delivered), or
 *               the failure's stable code (with delivery_failed):
 *               1..GLOVE_SERVICES_STATUS_MAX bytes of [a-z0-9._-]
 *   latency_ms  milliseconds since the request's first byte
 *   deadline_ms absolute CLOCK_MONOTONIC milliseconds; 0 means none. When
 *               the clock is at or past it before the write, nothing is
 *               written; when it is past it after the fdatasync, the record
 *               stands but the call fails: either way services.audit_late,
 *               and the caller must not release the response it guards.
 * A kernel-blocked fdatasync cannot be cut short: the deadline is checked,
 * not enforced, around it (as the spec says).
 */
int glove_services_audit_append(int audit_fd, const char *session_id, const char *alias, const char *phase,
                                const char *status, uint64_t latency_ms, uint64_t deadline_ms,
                                struct glove_error *err);

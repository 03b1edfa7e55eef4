/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local-service proxy's audit records (glove/services/audit.h).
 */
#include "glove/services/audit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/services/config.h"
#include "internal.h"

bool svc_session_id_valid(const char *s) {
        if (!s)
                return false;
        size_t n = strnlen(s, GLOVE_SERVICES_SESSION_ID_MAX + 1);
        if (n == 0 || n > GLOVE_SERVICES_SESSION_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
                        return false;
        return true;
}

static bool status_valid(const char *s) {
        if (!s)
                return false;
        size_t n = strnlen(s, GLOVE_SERVICES_STATUS_MAX + 1);
        if (n == 0 || n > GLOVE_SERVICES_STATUS_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

static bool phase_valid(const char *p) {
        return p && (strcmp(p, GLOVE_SERVICES_PHASE_PENDING) == 0 || strcmp(p, GLOVE_SERVICES_PHASE_DELIVERED) == 0 ||
                     strcmp(p, GLOVE_SERVICES_PHASE_FAILED) == 0);
}

/* The record line, "\n" included, into *line (caller frees). */
static int encode(const char *session_id, const char *alias, const char *phase, const char *status,
                  uint64_t latency_ms, char **line, size_t *len, struct glove_error *err) {
        char ts[GLOVE_TIME_RFC3339_MAX];
        if (glove_time_now_rfc3339(ts) < 0)
                return glove_error_set(err, EINVAL, "services.audit_failed", "the clock cannot be formatted");
        if (latency_ms > INT64_MAX)
                latency_ms = INT64_MAX;
        _cleanup_json_ json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "ts", ts, "event", "local_service",
                                             "session_id", session_id, "alias", alias, "phase", phase, "status",
                                             status, "latency_ms", (json_int_t)latency_ms);
        if (!o)
                return glove_error_set(err, ENOMEM, "services.audit_failed", "cannot build the record");
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        struct glove_error jerr = { 0 };
        int r = glove_json_encode_canonical(o, &text, &n, &jerr);
        if (r < 0)
                return glove_error_set(err, -r, "services.audit_failed", "encoding the record: %s", jerr.message);
        if (n + 1 > GLOVE_SERVICES_AUDIT_LINE_MAX)
                return glove_error_set(err, EMSGSIZE, "services.audit_failed", "the record is too long");
        /* The NUL after the text becomes the newline. */
        text[n] = '\n';
        *line = TAKE_PTR(text);
        *len = n + 1;
        return 0;
}

static bool late(uint64_t deadline_ms) {
        return deadline_ms && glove_time_monotonic_ms() >= deadline_ms;
}

int glove_services_audit_append(int audit_fd, const char *session_id, const char *alias, const char *phase,
                                const char *status, uint64_t latency_ms, uint64_t deadline_ms,
                                struct glove_error *err) {
        if (audit_fd < 0 || !svc_session_id_valid(session_id) || !glove_services_identifier_valid(alias) ||
            !phase_valid(phase) || !status_valid(status))
                return glove_error_set(err, EINVAL, "services.invalid_argument",
                                       "an audit record needs a descriptor, a session ID, an alias identifier, a "
                                       "known phase and a status code");
        if (late(deadline_ms))
                return glove_error_set(err, ETIMEDOUT, "services.audit_late",
                                       "the %s record of %s: the exchange deadline passed before the append", phase,
                                       alias);
        _cleanup_free_ char *line = NULL;
        size_t len = 0;
        int r = encode(session_id, alias, phase, status, latency_ms, &line, &len, err);
        if (r < 0)
                return r;
        ssize_t n;
        do
                n = write(audit_fd, line, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return glove_error_set(err, errno, "services.audit_failed", "appending the %s record of %s: %s", phase,
                                       alias, strerror(errno));
        if ((size_t)n != len)
                return glove_error_set(err, EIO, "services.audit_failed",
                                       "short write of the %s record of %s (%zd of %zu bytes)", phase, alias, n, len);
        if (fdatasync(audit_fd) < 0)
                return glove_error_set(err, errno, "services.audit_failed", "fdatasync of the %s record of %s: %s",
                                       phase, alias, strerror(errno));
        if (late(deadline_ms))
                return glove_error_set(err, ETIMEDOUT, "services.audit_late",
                                       "the %s record of %s became durable after the exchange deadline", phase,
                                       alias);
        return 0;
}

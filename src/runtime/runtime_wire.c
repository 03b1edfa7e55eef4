/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of the managed runtime: signal names, the output skip
 * state, terminal
 * receipts (see runtime.h). */
#include "glove/runtime/runtime.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/protocol/frame.h"

static const struct {
        const char *name;
        int sig;
} signals[] = {
        { "SIGHUP", SIGHUP },   { "SIGINT", SIGINT },   { "SIGQUIT", SIGQUIT }, { "SIGTERM", SIGTERM },
        { "SIGKILL", SIGKILL }, { "SIGUSR1", SIGUSR1 }, { "SIGUSR2", SIGUSR2 }, { "SIGCONT", SIGCONT },
        { "SIGTSTP", SIGTSTP }, { "SIGWINCH", SIGWINCH },
};

int glove_runtime_signal_parse(const char *name) {
        for (size_t i = 0; name && i < sizeof(signals) / sizeof(signals[0]); i++)
                if (strcmp(signals[i].name, name) == 0)
                        return signals[i].sig;
        return -1;
}

void glove_runtime_output_skip_add(struct glove_runtime_output_skip *k, size_t n) {
        k->skipping = true;
        k->skipped_bytes = (uint64_t)n > (uint64_t)INT64_MAX - k->skipped_bytes ? (uint64_t)INT64_MAX
                                                                                 : k->skipped_bytes + n;
}

bool glove_runtime_output_skip_resumes(const struct glove_runtime_output_skip *k, size_t pending, size_t bound) {
        return k->skipping && pending < bound / 2;
}

json_t *glove_runtime_output_gap_message(const char *session_id, uint64_t skipped_bytes) {
        return json_pack("{s:s,s:{s:s,s:I}}", "method", "session_output_gap", "params", "session_id", session_id,
                         "skipped_bytes",
                         (json_int_t)(skipped_bytes > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : skipped_bytes));
}

const char *glove_runtime_termination_name(enum glove_runtime_termination t) {
        static const char *const names[] = { "exit", "signal", "limit", "stopped", "start_failed", "lost" };
        return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "lost";
}

const char *glove_runtime_termination_state(enum glove_runtime_termination t) {
        return t == GLOVE_RUNTIME_TERM_START_FAILED || t == GLOVE_RUNTIME_TERM_LOST ? "failed" : "exited";
}

int glove_runtime_json_digest(const json_t *v, char out[65], struct glove_error *err) {
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        int r = glove_json_encode_canonical(v, &bytes, &len, err);
        if (r == 0)
                r = glove_digest_sha256(bytes, len, d, err);
        if (r == 0)
                glove_digest_hex_encode(d, sizeof(d), out, 65);
        return r;
}

json_t *glove_runtime_receipt_build(const struct glove_runtime_receipt_facts *f) {
        struct glove_error e = { 0 };
        _cleanup_json_ json_t *binding = f->launch_binding ? json_deep_copy(f->launch_binding) : json_object();
        char digest[65];
        if (!binding)
                return NULL;
        if (f->launch_binding_digest)
                snprintf(digest, sizeof(digest), "%s", f->launch_binding_digest);
        else if (glove_runtime_json_digest(binding, digest, &e) < 0)
                return NULL;
        json_t *term = json_pack("{s:s}", "kind", glove_runtime_termination_name(f->termination));
        if (!term)
                return NULL;
        if ((f->termination == GLOVE_RUNTIME_TERM_SIGNAL || f->termination == GLOVE_RUNTIME_TERM_STOPPED ||
             f->termination == GLOVE_RUNTIME_TERM_LIMIT) &&
            f->signal > 0)
                json_object_set_new(term, "signal", json_integer(f->signal));
        if (f->termination == GLOVE_RUNTIME_TERM_LIMIT && f->limit)
                json_object_set_new(term, "limit", json_string(f->limit));
        if (f->code && f->code[0])
                json_object_set_new(term, "code", json_string(f->code));
        return json_pack("{s:s,s:I,s:o,s:O,s:s,s:s,s:i,s:s,s:o,s:s,s:o,s:{s:I,s:I,s:I,s:I,s:I}}",
                         "controller_plan_digest", f->controller_plan_digest, "ended_at_ms", (json_int_t)f->ended_at_ms,
                         "exit_code", f->exit_code >= 0 ? json_integer(f->exit_code) : json_null(), "launch_binding",
                         binding, "launch_binding_digest", digest, "plan_content_digest", f->plan_content_digest,
                         "receipt_schema_version", GLOVE_STORE_RECEIPT_SCHEMA_VERSION, "session_id", f->session_id,
                         "started_at_ms", f->started_at_ms >= 0 ? json_integer(f->started_at_ms) : json_null(),
                         "state", glove_runtime_termination_state(f->termination), "termination", term, "usage",
                         "cpu_time_ms", (json_int_t)f->cpu_time_ms, "disk_bytes", (json_int_t)f->disk_bytes,
                         "output_bytes", (json_int_t)f->output_bytes, "peak_memory_bytes",
                         (json_int_t)f->peak_memory_bytes, "wall_time_ms", (json_int_t)f->wall_time_ms);
}

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

/* ---- the receipt's view of a launch binding ---- */

/* The mounts of full of kind (new array; NULL on ENOMEM). */
static json_t *mounts_of_kind(const json_t *full, const char *kind) {
        json_t *a = json_array();
        const json_t *mounts = json_object_get(full, "mounts");
        for (size_t i = 0; a && i < json_array_size(mounts); i++) {
                const json_t *m = json_array_get(mounts, i);
                const char *k = json_string_value(json_object_get(m, "kind"));
                if (k && strcmp(k, kind) == 0 && json_array_append(a, (json_t *)m) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

/* o[key] = the hex digest of v (v is stolen). Returns 0 or -1. */
static int set_digest(json_t *o, const char *key, json_t *v) {
        char d[65];
        int r = v && glove_runtime_json_digest(v, d, NULL) == 0 ? json_object_set_new(o, key, json_string(d)) : -1;
        json_decref(v);
        return r;
}

/* o[key] = a copy of full[key] when full has it. */
static int copy_member(json_t *o, const json_t *full, const char *key) {
        json_t *v = json_object_get(full, key);
        return v ? json_object_set_new(o, key, json_deep_copy(v)) : 0;
}

json_t *glove_runtime_receipt_binding(const json_t *full) {
        if (!full)
                return json_object();
        /* A stand-in ({"omitted_bytes":N}, {"omitted":CODE}) names no path. */
        if (json_object_size(full) == 1 && (json_is_integer(json_object_get(full, "omitted_bytes")) ||
                                            json_is_string(json_object_get(full, "omitted"))))
                return json_deep_copy(full);
        _cleanup_json_ json_t *o = json_object();
        static const char *const copied[] = { "egress", "environment_names", "leases", "limits", "projections",
                                              "runtime_template_id", "skills", "skills_projection_digest" };
        int r = o ? 0 : -1;
        for (size_t i = 0; r == 0 && i < sizeof(copied) / sizeof(copied[0]); i++)
                r = copy_member(o, full, copied[i]);
        /* The executable (argv[0] and its arguments, and its pinned bind)
         * and the read-only paths name host paths: only their digests. */
        json_t *exe = json_object();
        if (exe && (json_object_set_new(exe, "argv", json_deep_copy(json_object_get(full, "argv"))) < 0 ||
                    json_object_set_new(exe, "mounts", mounts_of_kind(full, "executable")) < 0)) {
                json_decref(exe);
                exe = NULL;
        }
        r |= set_digest(o, "executable_digest", exe);
        r |= set_digest(o, "read_only_paths_digest", mounts_of_kind(full, "read_only_path"));
        /* Mounts at sandbox targets: kind, alias, target, size; no host
         * identity (device, inode, mount id). */
        json_t *mounts = json_array();
        r |= json_object_set_new(o, "mounts", mounts);
        const json_t *fm = json_object_get(full, "mounts");
        for (size_t i = 0; r == 0 && i < json_array_size(fm); i++) {
                const json_t *m = json_array_get(fm, i);
                const char *k = json_string_value(json_object_get(m, "kind"));
                if (!k || strcmp(k, "executable") == 0 || strcmp(k, "read_only_path") == 0)
                        continue;
                json_t *x = json_object();
                r |= json_array_append_new(mounts, x);
                /* An exposure's mount: its id, generation and scope digest
                 * (never a path or identity: spec "Receipts and recovery"). */
                static const char *const keep[] = { "alias", "exposure_generation", "exposure_id", "kind", "max_bytes",
                                                    "read_only", "scope_digest", "target" };
                for (size_t j = 0; r == 0 && j < sizeof(keep) / sizeof(keep[0]); j++)
                        r = copy_member(x, m, keep[j]);
        }
        /* Materializations: alias, kind and size; the loop device, the
         * image's identity and the mount stay local. */
        json_t *mats = json_array();
        r |= json_object_set_new(o, "materializations", mats);
        const json_t *fmat = json_object_get(full, "materializations");
        for (size_t i = 0; r == 0 && i < json_array_size(fmat); i++) {
                const json_t *m = json_array_get(fmat, i);
                json_t *size = json_object_get(json_object_get(m, "image"), "size");
                json_t *x = json_object();
                r |= json_array_append_new(mats, x) | copy_member(x, m, "alias") | copy_member(x, m, "kind") |
                     copy_member(x, m, "exposure_id") | copy_member(x, m, "exposure_generation") |
                     copy_member(x, m, "scope_digest");
                if (r == 0 && size)
                        r = json_object_set_new(x, "size", json_deep_copy(size));
        }
        /* The adapter, without its executable's host path and identity. */
        const json_t *ad = json_object_get(full, "adapter");
        if (r == 0 && json_is_object(ad)) {
                json_t *x = json_object();
                r = json_object_set_new(o, "adapter", x);
                static const char *const keep[] = { "home", "managed_environment", "runtime_id", "skills_dir" };
                for (size_t j = 0; r == 0 && j < sizeof(keep) / sizeof(keep[0]); j++)
                        r = copy_member(x, ad, keep[j]);
                const json_t *ex = json_object_get(ad, "executable");
                if (r == 0)
                        r = json_object_set_new(x, "executable",
                                                json_is_object(ex) ? json_pack("{s:O}", "discovered",
                                                                               json_object_get(ex, "discovered"))
                                                                   : json_null());
        }
        return r == 0 ? TAKE_PTR(o) : NULL;
}

json_t *glove_runtime_receipt_build(const struct glove_runtime_receipt_facts *f) {
        struct glove_error e = { 0 };
        char digest[65];
        /* The digest commits to the whole binding, host paths included,
         * which gloved keeps locally; the receipt carries its view. */
        if (f->launch_binding_digest)
                snprintf(digest, sizeof(digest), "%s", f->launch_binding_digest);
        /* No binding was made (the start failed before the launch was
         * prepared): the stand-in says so. */
        _cleanup_json_ json_t *none = f->launch_binding ? NULL : json_pack("{s:s}", "omitted", "binding.none");
        const json_t *full = f->launch_binding ? f->launch_binding : none;
        if (!full)
                return NULL;
        _cleanup_json_ json_t *binding = glove_runtime_receipt_binding(full);
        if (!binding)
                return NULL;
        if (!f->launch_binding_digest &&
            glove_runtime_json_digest(full, digest, &e) < 0)
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

/* SPDX-License-Identifier: Apache-2.0 */
#include "exec_records.h"

#include <string.h>

#include "glove/audit/log.h"
#include "glove/base/cleanup.h"

static json_t *idmap(const struct glove_sandbox_idmap *m) {
        return json_pack("[{s:I,s:I,s:I}]", "inside", (json_int_t)m->inside, "outside", (json_int_t)m->outside, "count",
                         (json_int_t)m->count);
}

json_t *glove_exec_launch_fields(char *const *argv, const struct glove_grant_set *grants, const struct glove_env *env,
                                 const struct glove_sandbox *sb) {
        _cleanup_json_ json_t *jargv = json_array();
        _cleanup_json_ json_t *jgrants = json_array();
        _cleanup_json_ json_t *jenv = json_array();
        if (!jargv || !jgrants || !jenv)
                return NULL;
        for (char *const *a = argv; *a; a++)
                if (json_array_append_new(jargv, glove_audit_string(*a, strlen(*a))) < 0)
                        return NULL;
        for (size_t i = 0; i < grants->count; i++) {
                const struct glove_grant *g = &grants->items[i];
                if (json_array_append_new(jgrants, json_pack("{s:o,s:s,s:b}", "path", glove_audit_string(g->path, strlen(g->path)), "mode",
                                                             glove_grant_mode_name(g->mode), "workspace", g->workspace)) < 0)
                        return NULL;
        }
        for (size_t i = 0; i < env->count; i++) {
                const char *eq = strchr(env->envp[i], '=');
                size_t n = eq ? (size_t)(eq - env->envp[i]) : strlen(env->envp[i]);
                if (json_array_append_new(jenv, json_stringn(env->envp[i], n)) < 0)
                        return NULL;
        }
        return json_pack("{s:O,s:O,s:O,s:o,s:o}", "argv", jargv, "grants", jgrants, "env", jenv, "uid_map",
                         idmap(&sb->uid_map), "gid_map", idmap(&sb->gid_map));
}

json_t *glove_exec_exit_fields(const struct glove_sandbox_outcome *o, int exit_code, uint64_t wall_time_ms) {
        json_t *status = o->kind == GLOVE_SANDBOX_EXITED ? json_integer(o->value) : json_null();
        json_t *signal = o->kind == GLOVE_SANDBOX_SIGNALED ? json_integer(o->value) : json_null();
        return json_pack("{s:i,s:o,s:o,s:I}", "exit_code", exit_code, "status", status, "signal", signal, "wall_time_ms",
                         (json_int_t)wall_time_ms);
}

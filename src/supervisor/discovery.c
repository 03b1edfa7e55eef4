/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The adapter part of launch preparation (issue 11, part A; prepare.h,
 * "Native adapters and discovery"; docs/session-policy.md, "Native adapters
 * and discovery"): which adapter a template's runtime is, runtime discovery
 * over the template's explicit search directories with the trust rule, and
 * the pinned executable every adapter runtime runs. The trust rule itself is
 * in trust.c (include/glove/supervisor/trust.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/supervisor/adapter.h"
#include "glove/supervisor/trust.h"
#include "internal.h"
#include "prepare_internal.h"

/* ---- discovery ---- */

/* The listing of refusals, bounded by the error message size. */
struct listing {
        char text[GLOVE_ERROR_MESSAGE_MAX - 8]; /* room for " ..." */
        size_t len;
        bool cut;
};

static void list_add(struct listing *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void list_add(struct listing *l, const char *fmt, ...) {
        if (l->cut)
                return;
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(l->text + l->len, sizeof(l->text) - l->len, fmt, ap);
        va_end(ap);
        if (w < 0 || (size_t)w >= sizeof(l->text) - l->len) {
                l->cut = true;
                l->text[l->len] = '\0';
                return;
        }
        l->len += (size_t)w;
}

/*
 * Runtime discovery for template t of adapter a: the first search directory
 * (in policy order) that gives a trusted executable named a->executable.
 * Adds the MK_EXEC mount of the canonical file (pinned, read-only, at its
 * own path) to l and records it as l's executable.
 */
static int discover(struct glove_supervisor_launch *l, const struct sv_template *t,
                    const struct glove_supervisor_adapter *a, struct glove_error *err) {
        const struct glove_supervisor_launch_template *lt = &t->launch;
        struct listing list = { .len = 0 };
        list_add(&list, "%s: runtime_discovery %s found no trusted executable %s:", t->id, lt->runtime_discovery,
                 a->executable);
        for (size_t i = 0; i < lt->n_executable_search_paths; i++) {
                const char *dir = lt->executable_search_paths[i];
                char why[GLOVE_ERROR_MESSAGE_MAX] = "";
                _cleanup_free_ char *canon = NULL;
                struct stat st;
                int r = glove_supervisor_trust_find(dir, a->executable, l->cfg->agent_uid, &canon, &st, why, sizeof(why));
                if (r < 0)
                        return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
                if (r == 0) {
                        list_add(&list, "%s %s: %s", i ? ";" : "", dir, why);
                        continue;
                }
                struct sv_mount *m = sv_launch_mount_new(l, MK_EXEC, canon, err);
                if (!m)
                        return -ENOMEM;
                m->read_only = true;
                /* Re-opened without following links; the identity must be
                 * the one that passed the trust walk. */
                r = sv_launch_resolve(l->cfg, "runtime_discovery", canon, m, err);
                if (r >= 0 && (m->is_dir || m->dev != (uint64_t)st.st_dev || m->ino != (uint64_t)st.st_ino))
                        r = glove_error_set(err, EAGAIN, "launch.discovery_failed",
                                            "%s: runtime_discovery %s: %s changed while it was checked", t->id,
                                            lt->runtime_discovery, canon);
                if (r < 0) {
                        sv_launch_mount_drop_last(l);
                        return r;
                }
                l->exe_path = TAKE_PTR(canon);
                l->exe_dev = m->dev;
                l->exe_ino = m->ino;
                l->exe_discovered = true;
                return 0;
        }
        if (lt->n_executable_search_paths == 0)
                list_add(&list, " no search directories");
        return glove_error_set(err, ENOENT, "launch.discovery_failed", "%s%s", list.text, list.cut ? " ..." : "");
}

/* A pinned adapter executable: bound pinned at its own path like a
 * discovered one (even beneath /usr or a read-only path), so the binding's
 * identity is the file that runs. */
static int pin_executable(struct glove_supervisor_launch *l, const struct sv_template *t, struct glove_error *err) {
        const char *exe = t->launch.executable_path;
        struct sv_mount *m = sv_launch_mount_new(l, MK_EXEC, exe, err);
        if (!m)
                return -ENOMEM;
        m->read_only = true;
        int r = sv_launch_resolve(l->cfg, "executable_path", exe, m, err);
        if (r >= 0 && m->is_dir)
                r = glove_error_set(err, EINVAL, "materialize.file_type", "executable_path: %s is a directory", exe);
        if (r < 0) {
                sv_launch_mount_drop_last(l);
                return r;
        }
        l->exe_path = strdup(exe);
        if (!l->exe_path)
                return glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory");
        l->exe_dev = m->dev;
        l->exe_ino = m->ino;
        return 0;
}

int sv_adapter_prepare(struct glove_supervisor_launch *l, const struct sv_template *t, struct glove_error *err) {
        l->adapter = glove_supervisor_adapter_find(t->runtime_id);
        if (!t->has_launch)
                return 0; /* launch_command refuses it */
        const struct glove_supervisor_launch_template *lt = &t->launch;
        bool discovery = lt->runtime_discovery && lt->runtime_discovery[0];
        if (discovery) {
                /* The policy decoder already requires runtime_discovery ==
                 * runtime_id; a template that got here otherwise is refused. */
                if (!l->adapter || strcmp(l->adapter->runtime_id, lt->runtime_discovery) != 0)
                        return glove_error_set(err, EINVAL, "launch.discovery_failed",
                                               "%s: runtime_discovery %s does not name the template's adapter", t->id,
                                               lt->runtime_discovery);
                return discover(l, t, l->adapter, err);
        }
        if (!l->adapter || !lt->executable_path || lt->executable_path[0] != '/')
                return 0;
        return pin_executable(l, t, err);
}

int sv_adapter_environment(struct glove_supervisor_launch *l, struct glove_error *err) {
        if (!l->adapter)
                return 0;
        int r = sv_strv_push(&l->envp, &l->envc, "HOME=" GLOVE_SUPERVISOR_ADAPTER_HOME);
        if (r >= 0 && l->adapter->managed_env)
                r = sv_strv_push(&l->envp, &l->envc, l->adapter->managed_env);
        return r < 0 ? glove_error_set(err, ENOMEM, "launch.no_memory", "out of memory") : 0;
}

json_t *sv_adapter_binding(const struct glove_supervisor_launch *l) {
        const struct glove_supervisor_adapter *a = l->adapter;
        if (!a)
                return NULL;
        json_t *env = json_array();
        if (env && a->managed_env && json_array_append_new(env, json_string(a->managed_env)) < 0) {
                json_decref(env);
                return NULL;
        }
        json_t *exe = l->exe_path ? json_pack("{s:s,s:I,s:I,s:b}", "path", l->exe_path, "dev", (json_int_t)l->exe_dev,
                                              "ino", (json_int_t)l->exe_ino, "discovered", l->exe_discovered)
                                  : json_null();
        if (!env || !exe) {
                json_decref(env);
                json_decref(exe);
                return NULL;
        }
        return json_pack("{s:s,s:s,s:o,s:s,s:o}", "runtime_id", a->runtime_id, "home", GLOVE_SUPERVISOR_ADAPTER_HOME,
                         "managed_environment", env, "skills_dir", a->skills_dir, "executable", exe);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Managed-session launch preparation (include/glove/supervisor/prepare.h). Skeleton. */
#include <errno.h>
#include <stdlib.h>

#include "glove/supervisor/prepare.h"
#include "glove/container/mount_plan.h"
#include "glove/net/rule.h"
#include "glove/session/session.h"

struct glove_supervisor_launch {
        int unused;
};

bool glove_supervisor_retained_probe(struct glove_error *why) {
        glove_error_set(why, EOPNOTSUPP, "retained.no_mount_capability", "not implemented yet");
        return false;
}

int glove_supervisor_launch_prepare(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                    const char *plan, size_t plan_len, struct glove_supervisor_launch **out,
                                    struct glove_error *err) {
        (void)cfg, (void)session_id, (void)plan, (void)plan_len;
        if (out)
                *out = NULL;
        return glove_error_set(err, EOPNOTSUPP, "launch.invalid_argument", "not implemented yet");
}

char *const *glove_supervisor_launch_argv(const struct glove_supervisor_launch *l) {
        (void)l;
        return NULL;
}
char *const *glove_supervisor_launch_envp(const struct glove_supervisor_launch *l) {
        (void)l;
        return NULL;
}
void glove_supervisor_launch_limits(const struct glove_supervisor_launch *l, struct glove_session_limits *out) {
        (void)l;
        *out = (struct glove_session_limits){ 0 };
}
struct glove_net_policy *glove_supervisor_launch_take_egress(struct glove_supervisor_launch *l) {
        (void)l;
        return NULL;
}
const char *glove_supervisor_launch_cwd(const struct glove_supervisor_launch *l) {
        (void)l;
        return NULL;
}
int glove_supervisor_launch_add_mounts(struct glove_mount_plan *plan, void *launch, struct glove_error *err) {
        (void)plan, (void)launch, (void)err;
        return 0;
}
json_t *glove_supervisor_launch_binding(const struct glove_supervisor_launch *l) {
        (void)l;
        return json_object();
}
int glove_supervisor_launch_release(struct glove_supervisor_launch *l, struct glove_error *err) {
        (void)l, (void)err;
        return 0;
}
void glove_supervisor_launch_free(struct glove_supervisor_launch *l) {
        free(l);
}
int glove_supervisor_cleanup(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                             const char *plan, size_t plan_len, json_t **removed, json_t **kept,
                             struct glove_error *err) {
        (void)cfg, (void)session_id, (void)plan, (void)plan_len, (void)err;
        if (removed)
                *removed = json_array();
        if (kept)
                *kept = json_array();
        return 0;
}

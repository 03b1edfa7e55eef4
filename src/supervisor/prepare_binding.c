/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launch binding of a prepared launch (prepare.c;
 * include/glove/supervisor/prepare.h, glove_supervisor_launch_binding): the
 * JSON object that records what the launch runs: its argv, environment
 * names, limits, mounts, materializations, egress, adapter, leases and
 * projections (the caller adds "cgroup" and "pid1"). An exposure's mount is
 * recorded by its exposure_id, generation and scope digest, never by its
 * source.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/supervisor/prepare.h"
#include "image.h"
#include "internal.h"
#include "prepare_internal.h"

/* ---- the launch binding ---- */

static const char *const mount_kind_names[] = { "read_bind", "ephemeral_tmpfs", "retained_image", "read_only_path",
                                                "executable", "library_bundle", "lease" };

static int add(json_t *o, const char *k, json_t *v) {
        return v ? json_object_set_new(o, k, v) : -1;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *glove_supervisor_launch_binding(const struct glove_supervisor_launch *l) {
        if (!l)
                return NULL;
        _cleanup_json_ json_t *b = json_object();
        json_t *argv = json_array(), *names = json_array(), *limits = json_object(), *mounts = json_array(),
               *mats = json_array(), *egress = json_object(), *targets = json_array();
        int r = add(b, "argv", argv) | add(b, "environment_names", names) | add(b, "limits", limits) |
                add(b, "mounts", mounts) | add(b, "materializations", mats) | add(b, "egress", egress) |
                add(egress, "targets", targets) | add(egress, "policy_id", json_string(l->egress_id)) |
                add(b, "runtime_template_id", json_string(l->template_id));
        if (r >= 0 && l->adapter)
                r = add(b, "adapter", sv_adapter_binding(l));
        if (r >= 0 && l->refinement.binding)
                r = add(b, "refinement", json_deep_copy(l->refinement.binding));
        if (r < 0 || !b || sv_launch_leases_binding(l, b) < 0)
                return NULL;
        for (size_t i = 0; i < l->argc; i++)
                r |= json_array_append_new(argv, json_string(l->argv[i]));
        const char **nv = calloc(l->envc + 1, sizeof(*nv));
        if (!nv)
                return NULL;
        /* host (GLOVE_POLICY_MAX_HOSTNAME), brackets, ":" and a port. */
        char buf[GLOVE_POLICY_MAX_HOSTNAME + 16];
        for (size_t i = 0; i < l->envc; i++)
                nv[i] = l->envp[i];
        qsort(nv, l->envc, sizeof(*nv), cmp_str);
        for (size_t i = 0; i < l->envc; i++) {
                size_t n = strcspn(nv[i], "=");
                json_t *s = json_stringn(nv[i], n);
                r |= json_array_append_new(names, s);
        }
        free(nv);
        const uint64_t lv[SV_LIMIT_COUNT] = {
                [SV_LIMIT_CPU_TIME_MS] = l->limits.cpu_time_ms, [SV_LIMIT_MEMORY_BYTES] = l->limits.memory_bytes,
                [SV_LIMIT_PIDS] = l->limits.pids, [SV_LIMIT_WALL_TIME_MS] = l->limits.wall_time_ms,
                [SV_LIMIT_DISK_BYTES] = l->limits.disk_bytes,
                [SV_LIMIT_TERMINAL_OUTPUT_BYTES] = l->limits.terminal_output_bytes,
        };
        for (size_t i = 0; i < SV_LIMIT_COUNT; i++)
                r |= add(limits, sv_limit_names[i], json_integer((json_int_t)lv[i]));
        for (size_t i = 0; i < l->n_mounts; i++) {
                const struct sv_mount *m = &l->mounts[i];
                json_t *o = json_object();
                r |= json_array_append_new(mounts, o);
                r |= add(o, "target", json_string(m->target)) | add(o, "kind", json_string(mount_kind_names[m->kind])) |
                     add(o, "read_only", json_boolean(m->read_only));
                if (m->exposure) {
                        /* Which exposure generation and scope, never where. */
                        r |= add(o, "exposure_id", json_string(m->name)) |
                             add(o, "exposure_generation", json_integer((json_int_t)m->exposure_generation)) |
                             add(o, "scope_digest", json_string(m->scope_digest));
                } else if (m->source) {
                        json_t *src = json_object();
                        r |= add(o, "source", src) | add(src, "dev", json_integer((json_int_t)m->dev)) |
                             add(src, "ino", json_integer((json_int_t)m->ino)) |
                             add(src, "mnt_id", json_integer((json_int_t)m->mnt_id));
                }
                if (m->alias && !m->exposure)
                        r |= add(o, "alias", json_string(m->alias));
                if (m->kind == MK_EPHEMERAL || m->kind == MK_RETAINED)
                        r |= add(o, "max_bytes", json_integer((json_int_t)m->max_bytes));
                if (m->img) {
                        json_t *x = json_object(), *img = json_object(), *loop = json_object(), *mnt = json_object();
                        r |= json_array_append_new(mats, x);
                        if (m->exposure)
                                r |= add(x, "exposure_id", json_string(m->name)) |
                                     add(x, "exposure_generation", json_integer((json_int_t)m->exposure_generation)) |
                                     add(x, "scope_digest", json_string(m->scope_digest));
                        else
                                r |= add(x, "alias", json_string(m->alias));
                        r |= add(x, "kind", json_string("retained_image")) |
                             add(x, "image", img) | add(x, "loop", loop) | add(x, "mount", mnt) |
                             add(img, "dev", json_integer((json_int_t)m->img->image_dev)) |
                             add(img, "ino", json_integer((json_int_t)m->img->image_ino)) |
                             add(img, "size", json_integer((json_int_t)m->img->size)) |
                             add(loop, "device", json_string(m->img->loop_device)) |
                             add(loop, "rdev", json_integer((json_int_t)m->img->loop_rdev)) |
                             add(mnt, "mnt_id", json_integer((json_int_t)m->img->mnt_id));
                        /* Issue 30: what the stage started as (prepare_stage.c). */
                        json_t *bl = json_object();
                        r |= add(x, "baseline", bl) |
                             add(bl, "source_manifest_digest",
                                 m->source_digest[0] ? json_string(m->source_digest) : json_null()) |
                             add(bl, "stage_manifest_digest", json_string(m->stage_digest)) |
                             add(bl, "stage_entries", json_integer((json_int_t)m->stage_entries)) |
                             add(bl, "stage_file_bytes", json_integer((json_int_t)m->stage_bytes));
                }
        }
        for (size_t i = 0; l->egress_policy && i < l->egress_policy->n_targets; i++) {
                const struct sv_egress_target *tg = &l->egress_policy->targets[i];
                bool v6 = strchr(tg->host, ':') != NULL;
                snprintf(buf, sizeof(buf), v6 ? "[%s]:%lld" : "%s:%lld", tg->host, (long long)tg->port);
                r |= json_array_append_new(targets, json_string(buf));
        }
        r |= sv_launch_projection_binding(l, b);
        if (r != 0)
                return NULL;
        return TAKE_PTR(b);
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by keeper_launch.c and keeper_launch_mounts.c (internal). */
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/container/mount_plan.h"
#include "glove/session/session.h"

static inline int jget_u64(const json_t *o, const char *k, uint64_t *out) {
        const json_t *v = json_object_get(o, k);
        if (!json_is_integer(v))
                return -EINVAL;
        *out = (uint64_t)json_integer_value(v);
        return 0;
}

static inline const char *jget_str(const json_t *o, const char *k) {
        return json_string_value(json_object_get(o, k));
}

/* uint64 as a JSON integer (two's complement beyond INT64_MAX; decoded back
 * the same way). */
static inline json_t *ju(uint64_t v) {
        return json_integer((json_int_t)v);
}

static inline void put(json_t *o, const char *k, json_t *v, int *bad) {
        if (!v || json_object_set_new(o, k, v) < 0)
                *bad = 1;
}

/* The entries desc->add_mounts adds, as a JSON array (new reference), and
 * the working directory it sets in *cwd (new reference or NULL). NULL with
 * err on failure. */
json_t *glove_keeper_launch_mounts_json(const struct glove_session_desc *d, json_t **cwd, struct glove_error *err);
/* Replays one recorded entry o on plan. 0 or -errno with err. */
int glove_keeper_launch_entry_replay(struct glove_mount_plan *plan, const json_t *o, struct glove_error *err);

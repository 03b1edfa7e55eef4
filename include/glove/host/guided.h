/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The guided session-policy generator (spec session-policy.md, around
 * "max_plan_ttl_ms": "The guided generator uses a ten-minute plan lifetime.
 * It emits a two-minute small profile for probes and short turns plus an
 * explicit five-minute interactive profile"). Used by `glove setup` for its
 * starter policy and by `glove policy generate` (docs/host.md gives the
 * defaults and why).
 *
 * The generator emits a complete, strict policy (docs/session-policy.md):
 *   schema_version 1, revision (default 1), max_plan_ttl_ms 600000;
 *   runtime_templates: one entry per given template, sorted, each with
 *     sandbox_backend linux_production, no path aliases nor projection
 *     destinations, its launch, and adapter_command_digest computed by
 *     glove_supervisor_launch_template_digest() (so it follows that
 *     encoding whatever it is);
 *   path_aliases [], library_projection_destinations [];
 *   resource_profiles "interactive" and "small" (the GLOVE_HOST_GUIDED_*
 *     values below), whose wall times keep the loader's launch headroom
 *     (max_plan_ttl_ms - wall_time_ms >= GLOVE_POLICY_LAUNCH_HEADROOM_MS);
 *   egress_policy_ids ["no-network"] with egress_policies
 *     [{"policy_id":"no-network","targets":[]}] (offline);
 *   tool_policy_ids ["no-tools"]; secret_handles [], secret_mounts [].
 * Every text it returns has passed glove_supervisor_policy_decode_ex, the
 * decoder gloved's loader uses; a template the decoder refuses is reported
 * with the decoder's code and JSON path.
 */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/supervisor/launch.h"

#define GLOVE_HOST_GUIDED_PLAN_TTL_MS 600000LL          /* ten minutes */
#define GLOVE_HOST_GUIDED_EGRESS_POLICY "no-network"
#define GLOVE_HOST_GUIDED_TOOL_POLICY "no-tools"
#define GLOVE_HOST_GUIDED_BACKEND "linux_production"

/* "small": probes and short turns. */
#define GLOVE_HOST_GUIDED_SMALL_CPU_TIME_MS 60000LL     /* 1 min */
#define GLOVE_HOST_GUIDED_SMALL_MEMORY_BYTES (512LL << 20)
#define GLOVE_HOST_GUIDED_SMALL_PIDS 128LL
#define GLOVE_HOST_GUIDED_SMALL_WALL_TIME_MS 120000LL   /* 2 min */
#define GLOVE_HOST_GUIDED_SMALL_DISK_BYTES (256LL << 20)
#define GLOVE_HOST_GUIDED_SMALL_OUTPUT_BYTES (4LL << 20)

/* "interactive": model-backed turns that mostly wait on audited egress. */
#define GLOVE_HOST_GUIDED_INTERACTIVE_CPU_TIME_MS 300000LL   /* 5 min */
#define GLOVE_HOST_GUIDED_INTERACTIVE_MEMORY_BYTES (2LL << 30)
#define GLOVE_HOST_GUIDED_INTERACTIVE_PIDS 512LL
#define GLOVE_HOST_GUIDED_INTERACTIVE_WALL_TIME_MS 300000LL  /* 5 min */
#define GLOVE_HOST_GUIDED_INTERACTIVE_DISK_BYTES (1LL << 30)
#define GLOVE_HOST_GUIDED_INTERACTIVE_OUTPUT_BYTES (16LL << 20)

/* The starter template of `glove setup`: /usr/bin/echo printing one line,
 * PATH=/usr/bin:/bin, no read-only paths (docs/host.md says why). */
#define GLOVE_HOST_GUIDED_STARTER_TEMPLATE_ID "starter-echo"
#define GLOVE_HOST_GUIDED_STARTER_RUNTIME_ID "starter"
#define GLOVE_HOST_GUIDED_STARTER_EXECUTABLE "/usr/bin/echo"
#define GLOVE_HOST_GUIDED_STARTER_MESSAGE "glove starter session: this ran inside the sandbox"

/* One runtime template to emit (all borrowed). */
struct glove_host_guided_template {
        const char *runtime_template_id; /* identifier (docs/session-policy.md) */
        const char *runtime_id;          /* identifier */
        struct glove_supervisor_launch_template launch;
};

struct glove_host_guided_options {
        int64_t revision;                                 /* 1..2^53-1; 0 means 1 */
        const struct glove_host_guided_template *templates; /* 1..GLOVE_POLICY_MAX_RUNTIME_TEMPLATES */
        size_t n_templates;
};

/* Fills *out with the starter template (static strings). */
void glove_host_guided_starter(struct glove_host_guided_template *out);

/*
 * One runtime_templates[] entry for t, with its adapter_command_digest:
 * {"adapter_command_digest","allowed_path_aliases":[],
 *  "allowed_projection_destinations":[],"launch":{...},"runtime_id",
 *  "runtime_template_id","sandbox_backend":"linux_production"}; the launch
 * object has executable_path, arguments, environment, read_only_paths, and
 * runtime_discovery/executable_search_paths only when discovery is set.
 * *out is a new reference. Errors: launch.invalid_argument, digest.*,
 * guided.invalid_argument (NULL ids), -ENOMEM guided.no_memory. The entry is
 * not validated here; glove_host_guided_policy_text validates the whole.
 */
int glove_host_guided_template_entry(const struct glove_host_guided_template *t, json_t **out,
                                     struct glove_error *err);

/*
 * The whole policy as a JSON object (*out a new reference), not yet
 * validated. Errors: those of glove_host_guided_template_entry,
 * guided.invalid_argument (no template, too many, revision out of range).
 */
int glove_host_guided_policy(const struct glove_host_guided_options *o, json_t **out, struct glove_error *err);

/*
 * The policy file text: glove_host_guided_policy encoded with two-space
 * indentation and sorted keys, plus a final newline, then decoded with
 * glove_supervisor_policy_decode_ex; *out malloc'd, NUL-terminated, *len
 * without the NUL. Errors: the above, and the decoder's policy.* codes
 * (message starting with the JSON path) when the result is refused.
 */
int glove_host_guided_policy_text(const struct glove_host_guided_options *o, char **out, size_t *len,
                                  struct glove_error *err);

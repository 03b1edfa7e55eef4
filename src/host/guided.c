/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/host/guided.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/supervisor/policy.h"

/* The headroom rule, checked at build time for the two profiles. */
_Static_assert(GLOVE_HOST_GUIDED_PLAN_TTL_MS - GLOVE_HOST_GUIDED_SMALL_WALL_TIME_MS >= GLOVE_POLICY_LAUNCH_HEADROOM_MS,
               "small profile leaves no launch headroom");
_Static_assert(GLOVE_HOST_GUIDED_PLAN_TTL_MS - GLOVE_HOST_GUIDED_INTERACTIVE_WALL_TIME_MS >=
                       GLOVE_POLICY_LAUNCH_HEADROOM_MS,
               "interactive profile leaves no launch headroom");
_Static_assert(GLOVE_HOST_GUIDED_PLAN_TTL_MS <= GLOVE_POLICY_PLAN_TTL_MS_MAX, "plan lifetime out of range");

static const char *const starter_args[] = { GLOVE_HOST_GUIDED_STARTER_MESSAGE };
static const char *const starter_env[] = { "PATH=/usr/bin:/bin" };

void glove_host_guided_starter(struct glove_host_guided_template *out) {
        memset(out, 0, sizeof(*out));
        out->runtime_template_id = GLOVE_HOST_GUIDED_STARTER_TEMPLATE_ID;
        out->runtime_id = GLOVE_HOST_GUIDED_STARTER_RUNTIME_ID;
        out->launch.executable_path = GLOVE_HOST_GUIDED_STARTER_EXECUTABLE;
        out->launch.arguments = starter_args;
        out->launch.n_arguments = 1;
        out->launch.environment = starter_env;
        out->launch.n_environment = 1;
}

static json_t *strings(const char *const *v, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if (!v[i] || json_array_append_new(a, json_string(v[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "guided.no_memory", "out of memory");
}

static json_t *launch_object(const struct glove_supervisor_launch_template *l) {
        _cleanup_json_ json_t *o = json_pack("{s:s,s:o,s:o,s:o}", "executable_path", l->executable_path,
                                             "arguments", strings(l->arguments, l->n_arguments), "environment",
                                             strings(l->environment, l->n_environment), "read_only_paths",
                                             strings(l->read_only_paths, l->n_read_only_paths));
        if (!o)
                return NULL;
        if (l->runtime_discovery && l->runtime_discovery[0] &&
            (json_object_set_new(o, "runtime_discovery", json_string(l->runtime_discovery)) < 0 ||
             json_object_set_new(o, "executable_search_paths",
                                 strings(l->executable_search_paths, l->n_executable_search_paths)) < 0))
                return NULL;
        return json_incref(o);
}

int glove_host_guided_template_entry(const struct glove_host_guided_template *t, json_t **out,
                                     struct glove_error *err) {
        *out = NULL;
        if (!t || !t->runtime_template_id || !t->runtime_id || !t->launch.executable_path)
                return glove_error_set(err, EINVAL, "guided.invalid_argument",
                                       "a template needs an id, a runtime id and an executable path");
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        int r = glove_supervisor_launch_template_digest(&t->launch, digest, err);
        if (r < 0)
                return r;
        json_t *launch = launch_object(&t->launch);
        if (!launch)
                return no_memory(err);
        *out = json_pack("{s:s,s:[],s:[],s:o,s:s,s:s,s:s}", "adapter_command_digest", digest,
                         "allowed_path_aliases", "allowed_projection_destinations", "launch", launch, "runtime_id",
                         t->runtime_id, "runtime_template_id", t->runtime_template_id, "sandbox_backend",
                         GLOVE_HOST_GUIDED_BACKEND);
        return *out ? 0 : no_memory(err);
}

static json_t *profile(const char *id, long long cpu, long long mem, long long pids, long long wall, long long disk,
                       long long output) {
        return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "profile_id", id, "cpu_time_ms", (json_int_t)cpu,
                         "memory_bytes", (json_int_t)mem, "pids", (json_int_t)pids, "wall_time_ms", (json_int_t)wall,
                         "disk_bytes", (json_int_t)disk, "terminal_output_bytes", (json_int_t)output);
}

static int by_template_id(const void *a, const void *b) {
        const char *x = json_string_value(json_object_get(*(json_t *const *)a, "runtime_template_id"));
        const char *y = json_string_value(json_object_get(*(json_t *const *)b, "runtime_template_id"));
        return strcmp(x, y);
}

int glove_host_guided_policy(const struct glove_host_guided_options *o, json_t **out, struct glove_error *err) {
        *out = NULL;
        if (!o || !o->templates || o->n_templates == 0 || o->n_templates > GLOVE_POLICY_MAX_RUNTIME_TEMPLATES)
                return glove_error_set(err, EINVAL, "guided.invalid_argument", "a policy needs 1 to %d templates",
                                       GLOVE_POLICY_MAX_RUNTIME_TEMPLATES);
        int64_t revision = o->revision ? o->revision : 1;
        if (revision < 1 || revision > GLOVE_POLICY_REVISION_MAX)
                return glove_error_set(err, EINVAL, "guided.invalid_argument", "revision must be 1..%lld",
                                       (long long)GLOVE_POLICY_REVISION_MAX);
        json_t *entries[GLOVE_POLICY_MAX_RUNTIME_TEMPLATES] = { 0 };
        int r = 0;
        for (size_t i = 0; i < o->n_templates && r == 0; i++)
                r = glove_host_guided_template_entry(&o->templates[i], &entries[i], err);
        _cleanup_json_ json_t *templates = json_array();
        if (r == 0) {
                qsort(entries, o->n_templates, sizeof(entries[0]), by_template_id);
                for (size_t i = 0; i < o->n_templates; i++) {
                        if (templates && json_array_append(templates, entries[i]) < 0)
                                r = no_memory(err);
                }
        }
        for (size_t i = 0; i < o->n_templates; i++)
                json_decref(entries[i]);
        if (r < 0)
                return r;
        if (!templates)
                return no_memory(err);
        /* Profiles sorted by profile_id: "interactive" < "small". */
        json_t *profiles = json_pack(
                "[o,o]",
                profile("interactive", GLOVE_HOST_GUIDED_INTERACTIVE_CPU_TIME_MS,
                        GLOVE_HOST_GUIDED_INTERACTIVE_MEMORY_BYTES, GLOVE_HOST_GUIDED_INTERACTIVE_PIDS,
                        GLOVE_HOST_GUIDED_INTERACTIVE_WALL_TIME_MS, GLOVE_HOST_GUIDED_INTERACTIVE_DISK_BYTES,
                        GLOVE_HOST_GUIDED_INTERACTIVE_OUTPUT_BYTES),
                profile("small", GLOVE_HOST_GUIDED_SMALL_CPU_TIME_MS, GLOVE_HOST_GUIDED_SMALL_MEMORY_BYTES,
                        GLOVE_HOST_GUIDED_SMALL_PIDS, GLOVE_HOST_GUIDED_SMALL_WALL_TIME_MS,
                        GLOVE_HOST_GUIDED_SMALL_DISK_BYTES, GLOVE_HOST_GUIDED_SMALL_OUTPUT_BYTES));
        if (!profiles)
                return no_memory(err);
        *out = json_pack("{s:i,s:I,s:I,s:O,s:[],s:[],s:o,s:[s],s:[{s:s,s:[]}],s:[s],s:[],s:[]}", "schema_version", 1,
                         "revision", (json_int_t)revision, "max_plan_ttl_ms", (json_int_t)GLOVE_HOST_GUIDED_PLAN_TTL_MS,
                         "runtime_templates", templates, "path_aliases", "library_projection_destinations",
                         "resource_profiles", profiles, "egress_policy_ids", GLOVE_HOST_GUIDED_EGRESS_POLICY,
                         "egress_policies", "policy_id", GLOVE_HOST_GUIDED_EGRESS_POLICY, "targets",
                         "tool_policy_ids", GLOVE_HOST_GUIDED_TOOL_POLICY, "secret_handles", "secret_mounts");
        return *out ? 0 : no_memory(err);
}

int glove_host_guided_policy_text(const struct glove_host_guided_options *o, char **out, size_t *len,
                                  struct glove_error *err) {
        *out = NULL;
        _cleanup_json_ json_t *p = NULL;
        int r = glove_host_guided_policy(o, &p, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = json_dumps(p, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!text)
                return no_memory(err);
        size_t n = strlen(text);
        char *withnl = realloc(text, n + 2);
        if (!withnl)
                return no_memory(err);
        text = NULL;
        withnl[n] = '\n';
        withnl[n + 1] = '\0';
        struct glove_supervisor_policy *check = NULL;
        r = glove_supervisor_policy_decode_ex(withnl, n + 1, &check, NULL, 0, err);
        glove_supervisor_policy_free(check);
        if (r < 0) {
                free(withnl);
                return r;
        }
        *out = withnl;
        *len = n + 1;
        return 0;
}

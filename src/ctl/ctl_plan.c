/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove ctl plan: a canonical session plan made from the owner's session
 * policy file (docs/control-protocol.md, "glove ctl plan"). It reads the
 * policy file only (checked and decoded by gloved's own loader), talks to no
 * gloved and needs no secret; the plan it prints names identifiers only,
 * carries no secret handle, no path grant and no library projection.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/number.h"
#include "ctl_internal.h"

#include "glove/supervisor/policy.h"

/* The policy file's bound (the loader's own is the same order). */
#define PLAN_POLICY_MAX (4u * 1024 * 1024)

static int plan_error(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int plan_error(const char *code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "glove: %s: ", code);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
        return 125;
}

/* The entry of array a whose member key is id, or NULL. */
static json_t *find_by(const json_t *a, const char *key, const char *id) {
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) {
                const char *s = json_string_value(json_object_get(v, key));
                if (s && strcmp(s, id) == 0)
                        return v;
        }
        return NULL;
}

/* The ids of array a (member key, or the strings themselves when key is
 * NULL), space separated, for a message. */
static void list_ids(const json_t *a, const char *key, char *out, size_t size) {
        size_t i, o = 0;
        json_t *v;
        out[0] = '\0';
        json_array_foreach(a, i, v) {
                const char *s = json_string_value(key ? json_object_get(v, key) : v);
                if (s && o + strlen(s) + 2 < size)
                        o += (size_t)snprintf(out + o, size - o, "%s%s", o ? " " : "", s);
        }
        if (!o)
                snprintf(out, size, "none");
}

/* Picks want (or the only entry when want is NULL) among a's ids. */
static int choose(const json_t *a, const char *key, const char *want, const char *option, const char **out) {
        char ids[1024];
        list_ids(a, key, ids, sizeof(ids));
        if (want) {
                const json_t *e = key ? find_by(a, key, want) : NULL;
                if (!key) {
                        size_t i;
                        json_t *v;
                        json_array_foreach(a, i, v)
                                if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
                                        e = v;
                }
                if (!e)
                        return plan_error("ctl.plan_choice", "%s %s is not in the policy (it has: %s)", option, want,
                                          ids);
                *out = want;
                return 0;
        }
        if (json_array_size(a) != 1)
                return plan_error("ctl.plan_choice", "the policy has %zu choices for %s; pick one (%s)",
                                  json_array_size(a), option, ids);
        const json_t *only = json_array_get(a, 0);
        *out = json_string_value(key ? json_object_get(only, key) : only);
        return *out ? 0 : plan_error("ctl.plan_choice", "no id for %s", option);
}

/* The offline egress choice: the one id of egress_policy_ids that has no
 * targets (no entry in egress_policies, or an empty targets list). */
static const char *offline_egress(const json_t *pol) {
        const json_t *ids = json_object_get(pol, "egress_policy_ids"), *defs = json_object_get(pol, "egress_policies");
        const char *found = NULL;
        size_t i, n = 0;
        json_t *v;
        json_array_foreach(ids, i, v) {
                const json_t *d = find_by(defs, "policy_id", json_string_value(v));
                if (!d || json_array_size(json_object_get(d, "targets")) == 0) {
                        found = json_string_value(v);
                        n++;
                }
        }
        return n == 1 ? found : NULL;
}

static int default_policy(char *out, size_t size) {
        const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
        int n = -1;
        if (x && x[0] == '/')
                n = snprintf(out, size, "%s/glove/session-policy.json", x);
        else if (h && h[0] == '/')
                n = snprintf(out, size, "%s/.config/glove/session-policy.json", h);
        return n > 0 && (size_t)n < size ? 0 : -ENOENT;
}

int ctl_plan_run(const struct ctl *c) {
        if (strcmp(c->cmd, "plan") != 0)
                return -1;
        const char *tmpl = NULL, *profile = NULL, *egress = NULL, *tool = NULL, *policy = NULL, *expires = "60s";
        static const char *const names[] = { "--template", "--profile", "--egress", "--tool-policy", "--policy",
                                             "--expires-in" };
        const char **vals[] = { &tmpl, &profile, &egress, &tool, &policy, &expires };
        for (int i = 0; i < c->nargs; i++) {
                size_t k = 0;
                while (k < 6 && strcmp(c->args[i], names[k]) != 0)
                        k++;
                if (k == 6)
                        return ctl_usage_error("unexpected argument \"%s\"", c->args[i]);
                if (i + 1 >= c->nargs)
                        return ctl_usage_error("%s needs a value", names[k]);
                *vals[k] = c->args[++i];
        }
        if (!tmpl)
                return ctl_usage_error("plan needs --template ID");
        uint64_t ttl;
        /* A bare number is seconds here (1 ms .. 24 h). */
        if (glove_duration_parse_ms(expires, 1000, 1, 86400000, &ttl) < 0)
                return ctl_usage_error("--expires-in %s: expected a duration from 1ms to 24h; %s, or a bare number of "
                                       "seconds",
                                       expires, GLOVE_DURATION_FORMS);
        char path[4096];
        if (!policy) {
                if (default_policy(path, sizeof(path)) < 0)
                        return plan_error("ctl.plan_policy", "no default policy path (set XDG_CONFIG_HOME or HOME, "
                                                             "or give --policy FILE)");
                policy = path;
        }
        /* The checks gloved makes (owner, mode 0600, one link, content). */
        struct glove_error e = { 0 };
        struct glove_supervisor_policy *loaded = NULL;
        if (glove_supervisor_policy_load(policy, geteuid(), &loaded, &e) < 0)
                return plan_error(e.code, "%s", e.message); /* it names the file */
        int64_t max_ttl = glove_supervisor_policy_max_plan_ttl_ms(loaded);
        int64_t revision = glove_supervisor_policy_revision(loaded);
        glove_supervisor_policy_free(loaded);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = glove_file_read_bounded(AT_FDCWD, policy, 0, PLAN_POLICY_MAX, &buf, &len, NULL);
        if (r < 0)
                return plan_error("ctl.plan_policy", "%s: %s", policy, strerror(-r));
        _cleanup_json_ json_t *pol = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(pol))
                return plan_error("ctl.plan_policy", "%s changed while it was read", policy);
        if ((int64_t)ttl > max_ttl)
                return plan_error("ctl.plan_choice", "--expires-in %s is beyond the policy's max_plan_ttl_ms (%lld)",
                                  expires, (long long)max_ttl);
        const json_t *t = find_by(json_object_get(pol, "runtime_templates"), "runtime_template_id", tmpl);
        if (!t) {
                char ids[1024];
                list_ids(json_object_get(pol, "runtime_templates"), "runtime_template_id", ids, sizeof(ids));
                return plan_error("ctl.plan_choice", "--template %s is not in the policy (it has: %s)", tmpl, ids);
        }
        const char *pid = NULL;
        if (choose(json_object_get(pol, "resource_profiles"), "profile_id", profile, "--profile", &pid))
                return 125;
        if (!egress)
                egress = offline_egress(pol);
        const char *eid = NULL, *tid = NULL;
        if (choose(json_object_get(pol, "egress_policy_ids"), NULL, egress, "--egress", &eid) ||
            choose(json_object_get(pol, "tool_policy_ids"), NULL, tool, "--tool-policy", &tid))
                return 125;
        const json_t *prof = find_by(json_object_get(pol, "resource_profiles"), "profile_id", pid);
        json_t *limits = json_object();
        static const char *const lim[] = { "cpu_time_ms", "disk_bytes", "memory_bytes", "pids", "terminal_output_bytes",
                                           "wall_time_ms" };
        for (size_t i = 0; limits && i < 6; i++)
                json_object_set(limits, lim[i], json_object_get(prof, lim[i]));
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        json_int_t at = (json_int_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + (json_int_t)ttl;
        _cleanup_json_ json_t *plan = json_pack(
                "{s:O,s:s,s:I,s:[],s:o,s:[],s:I,s:O,s:s,s:O,s:i,s:[],s:s}", "adapter_command_digest",
                json_object_get(t, "adapter_command_digest"), "egress_policy_id", eid, "expires_at_ms", at,
                "library_projections", "limits", limits, "path_grants", "policy_revision", (json_int_t)revision,
                "runtime_id", json_object_get(t, "runtime_id"), "runtime_template_id", tmpl, "sandbox_backend",
                json_object_get(t, "sandbox_backend"), "schema_version", 1, "secret_handles", "tool_policy_id", tid);
        if (!plan)
                return plan_error("ctl.plan_policy", "the template %s lacks a member a plan needs", tmpl);
        _cleanup_free_ char *text = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return plan_error("ctl.plan_policy", "out of memory");
        printf("%s\n", text);
        return fflush(stdout) == 0 ? 0 : 125;
}

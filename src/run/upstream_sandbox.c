/* SPDX-License-Identifier: Apache-2.0 */
/* Contained upstreams: their grants, checked as glove exec checks them, and
 * the `glove exec` command line each one runs under (upstream_sandbox.h). */
#include "upstream_sandbox.h"
#include "gloved_guards.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "glove/container/environment.h"
#include "glove/container/grant.h"
#include "glove/net/rule.h"

/* Most arguments of one launcher command line: glove exec's options and
 * the upstream's own command. */
#define LAUNCH_ARGS_MAX (8 + 2 * (2 * GLOVE_GRANTS_MAX + 64 + GLOVE_RUN_RULES_MAX) + GLOVE_MCP_UPSTREAM_ARGS_MAX)

/* True when "NAME:..." names upstream name; *value is what follows. */
static bool names(const char *entry, const char *name, const char **value) {
        size_t n = strlen(name);
        if (strncmp(entry, name, n) != 0 || entry[n] != ':')
                return false;
        *value = entry + n + 1;
        return true;
}

static bool known_name(const struct glove_mcp_upstream_spec *specs, size_t n, const char *entry, bool whole) {
        const char *v;
        for (size_t k = 0; k < n; k++)
                if (whole ? strcmp(entry, specs[k].name) == 0 : names(entry, specs[k].name, &v) && *v)
                        return true;
        return false;
}

void glove_run_upstream_env_free(char **list) {
        for (size_t i = 0; list && list[i]; i++)
                free(list[i]);
        free(list);
}

int glove_run_upstream_env(const struct glove_exec_options *o, const struct glove_policy *policy,
                           const struct glove_mcp_upstream_spec *specs, size_t n_specs, char ***out, size_t *n,
                           struct glove_error *err) {
        *out = NULL;
        *n = 0;
        size_t total = o->n_upstream_env;
        for (size_t i = 0; i < n_specs; i++) {
                const json_t *sb = glove_policy_upstream_sandbox(policy, specs[i].name);
                total += sb ? json_array_size(json_object_get(sb, "env")) : 0;
        }
        if (total > GLOVE_MCP_UPSTREAM_ENV_MAX)
                return glove_error_set(err, E2BIG, "upstream.bad_env", "more than %d environment entries for upstreams",
                                       GLOVE_MCP_UPSTREAM_ENV_MAX);
        char **list = calloc(total + 1, sizeof(char *));
        if (!list)
                return glove_error_set(err, ENOMEM, "upstream.bad_env", "out of memory");
        size_t k = 0;
        for (size_t i = 0; i < o->n_upstream_env; i++)
                if (!(list[k++] = strdup(o->upstream_env[i])))
                        goto nomem;
        for (size_t i = 0; i < n_specs; i++) {
                const json_t *sb = glove_policy_upstream_sandbox(policy, specs[i].name);
                size_t j;
                json_t *v;
                json_array_foreach(sb ? json_object_get(sb, "env") : NULL, j, v) {
                        if (asprintf(&list[k], "%s:%s", specs[i].name, json_string_value(v)) < 0) {
                                list[k] = NULL;
                                goto nomem;
                        }
                        k++;
                }
        }
        *out = list;
        *n = k;
        return 0;
nomem:
        glove_run_upstream_env_free(list);
        return glove_error_set(err, ENOMEM, "upstream.bad_env", "out of memory");
}

/* What one upstream is given, gathered from the options and the policy. */
struct grants {
        struct glove_grant_set set;
        json_t *record;         /* {"ro","rw","env","egress"} for upstream_start */
        const char *egress[GLOVE_RUN_RULES_MAX + GLOVE_POLICY_SANDBOX_EGRESS_MAX];
        size_t n_egress;
};

/* Adds one path grant (what names it in messages: the option or the policy
 * path). */
static int add_path(struct grants *g, const char *path, enum glove_grant_mode mode, const char *what, const char *cwd,
                    struct glove_error *err) {
        int r = glove_grant_set_add(&g->set, path, mode, false, cwd, err);
        if (r < 0)
                glove_error_prefix(err, "%s", what);
        return r;
}

/* The sandbox's system view shows /usr and its links (/bin, /lib*, /sbin):
 * a command there needs no grant. */
static bool in_system_view(const char *path) {
        static const char *const roots[] = {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/"};
        for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
                if (strncmp(path, roots[i], strlen(roots[i])) == 0)
                        return true;
        return false;
}

/* True when path lies inside (or is) a grant of set. */
static bool in_grants(const struct glove_grant_set *set, const char *path) {
        for (size_t i = 0; i < set->count; i++) {
                const char *g = set->items[i].path;
                size_t n = strlen(g);
                if (strncmp(path, g, n) == 0 && (path[n] == '\0' || path[n] == '/' || (n == 1 && g[0] == '/')))
                        return true;
        }
        return false;
}

static int append_paths(json_t *rec, const struct glove_grant_set *set) {
        json_t *ro = json_object_get(rec, "ro"), *rw = json_object_get(rec, "rw");
        for (size_t i = 0; i < set->count; i++)
                if (json_array_append_new(set->items[i].mode == GLOVE_GRANT_WRITE ? rw : ro,
                                          glove_audit_string(set->items[i].path, strlen(set->items[i].path))) < 0)
                        return -ENOMEM;
        return 0;
}

/* Gathers and checks the grants of spec from o and its policy sandbox sb
 * (may be NULL). */
static int gather(const struct glove_exec_options *o, const json_t *sb, const struct glove_mcp_upstream_spec *spec,
                  const char *cwd, struct grants *g, struct glove_error *err) {
        char what[GLOVE_PATH_MAX + 128];
        const char *v;
        for (size_t i = 0; i < o->n_upstream_ro + o->n_upstream_rw; i++) {
                bool rw = i >= o->n_upstream_ro;
                const char *e = rw ? o->upstream_rw[i - o->n_upstream_ro] : o->upstream_ro[i];
                if (!names(e, spec->name, &v))
                        continue;
                snprintf(what, sizeof(what), "%s %s", rw ? "--upstream-rw" : "--upstream-ro", e);
                int r = add_path(g, v, rw ? GLOVE_GRANT_WRITE : GLOVE_GRANT_READ, what, cwd, err);
                if (r < 0)
                        return r;
        }
        static const char *const keys[] = {"ro", "rw"};
        for (size_t k = 0; sb && k < 2; k++) {
                size_t i;
                json_t *p;
                json_array_foreach(json_object_get(sb, keys[k]), i, p) {
                        snprintf(what, sizeof(what), "$.upstreams.%s.sandbox.%s[%zu] %s", spec->name, keys[k], i,
                                 json_string_value(p));
                        int r = add_path(g, json_string_value(p), k ? GLOVE_GRANT_WRITE : GLOVE_GRANT_READ, what, cwd, err);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < o->n_upstream_egress; i++)
                if (names(o->upstream_egress[i], spec->name, &v))
                        g->egress[g->n_egress++] = v;
        size_t i;
        json_t *p;
        json_array_foreach(sb ? json_object_get(sb, "egress") : NULL, i, p)
                g->egress[g->n_egress++] = json_string_value(p);
        /* Each rule parsed as glove exec's --egress-allow parses it. */
        struct glove_net_policy np;
        glove_net_policy_init(&np);
        for (size_t k = 0; k < g->n_egress; k++) {
                int r = glove_net_policy_add(&np, g->egress[k], err);
                if (r < 0) {
                        glove_net_policy_free(&np);
                        glove_error_prefix(err, "upstream %s: egress rule %s", spec->name, g->egress[k]);
                        return r;
                }
        }
        glove_net_policy_free(&np);
        return 0;
}

/* The command file, read-only, unless the system view or a grant already
 * shows it. */
static int grant_command(struct grants *g, const struct glove_mcp_upstream_spec *spec, const char *cwd, char **abs,
                         struct glove_error *err) {
        if (spec->path[0] == '/')
                *abs = strdup(spec->path);
        else if (asprintf(abs, "%s/%s", cwd, spec->path) < 0)
                *abs = NULL;
        if (!*abs)
                return glove_error_set(err, ENOMEM, "upstream.nomem", "out of memory");
        if (in_system_view(*abs) || in_grants(&g->set, *abs))
                return 0;
        char what[GLOVE_PATH_MAX + 64];
        snprintf(what, sizeof(what), "upstream %s: its command %s", spec->name, spec->path);
        return add_path(g, *abs, GLOVE_GRANT_READ, what, cwd, err);
}

static int push_arg(char **argv, size_t *n, const char *a) {
        if (*n + 1 >= LAUNCH_ARGS_MAX)
                return -E2BIG;
        argv[*n] = strdup(a);
        if (!argv[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* spec->launch_argv: glove exec around the upstream's command. */
/* The limits of --upstream-limit NAME:LIMIT=VALUE that glove exec takes as
 * --LIMIT VALUE. */
static const char *const limit_names[] = {"cpu-time", "memory", "pids", "wall-time", "disk", "nofile", "output-limit"};

/* Appends --LIMIT VALUE for each --upstream-limit of spec (and to rec's
 * "limits" as given). */
static int push_limits(const struct glove_exec_options *o, const struct glove_mcp_upstream_spec *spec, char **argv, size_t *n,
                       json_t *rec, struct glove_error *err) {
        const char *v;
        for (size_t i = 0; i < o->n_upstream_limit; i++) {
                if (!names(o->upstream_limit[i], spec->name, &v))
                        continue;
                const char *eq = strchr(v, '=');
                bool known = false;
                for (size_t k = 0; eq && k < sizeof(limit_names) / sizeof(limit_names[0]) && !known; k++)
                        known = strlen(limit_names[k]) == (size_t)(eq - v) && strncmp(v, limit_names[k], (size_t)(eq - v)) == 0;
                if (!known)
                        return glove_error_set(err, EINVAL, "upstream.bad_limit",
                                               "--upstream-limit %s: expected NAME:LIMIT=VALUE with LIMIT one of cpu-time, "
                                               "memory, pids, wall-time, disk, nofile, output-limit",
                                               o->upstream_limit[i]);
                char opt[32];
                snprintf(opt, sizeof(opt), "--%.*s", (int)(eq - v), v);
                int r = push_arg(argv, n, opt);
                r = r ?: push_arg(argv, n, eq + 1);
                if (r == 0 && json_object_set_new(json_object_get(rec, "limits"), opt + 2, json_string(eq + 1)) < 0)
                        r = -ENOMEM;
                if (r < 0)
                        return glove_error_set(err, -r, "upstream.nomem", "upstream %s: out of memory", spec->name);
        }
        return 0;
}

/* The launcher's options are parsed here as the launcher will parse them,
 * so a bad value (a limit out of bounds, a second --memory) is refused at
 * start, naming the upstream. */
static int check_launcher(const struct glove_mcp_upstream_spec *spec, struct glove_error *err) {
        int argc = 0;
        while (spec->launch_argv[argc])
                argc++;
        _cleanup_free_ struct glove_exec_options *x = calloc(1, sizeof(*x));
        if (!x)
                return glove_error_set(err, ENOMEM, "upstream.nomem", "out of memory");
        int r = glove_exec_parse(argc - 1, spec->launch_argv + 1, x, err);
        if (r < 0)
                glove_error_prefix(err, "upstream %s", spec->name);
        return r;
}

static int build_launcher(const struct glove_exec_options *o, struct glove_mcp_upstream_spec *spec, const struct grants *g,
                          const char *command, const char *runtime_dir, const struct glove_audit_log *audit,
                          struct glove_error *err) {
        char **argv = calloc(LAUNCH_ARGS_MAX, sizeof(char *));
        if (!argv)
                return glove_error_set(err, ENOMEM, "upstream.nomem", "out of memory");
        spec->launch_argv = argv;
        size_t n = 0;
        int r = push_arg(argv, &n, "glove");
        r = r ?: push_arg(argv, &n, "exec");
        r = r ?: push_arg(argv, &n, "--direct-stdio");
        for (size_t i = 0; r == 0 && i < g->set.count; i++) {
                r = push_arg(argv, &n, g->set.items[i].mode == GLOVE_GRANT_WRITE ? "--write" : "--read");
                r = r ?: push_arg(argv, &n, g->set.items[i].path);
        }
        /* The upstream's own variables (spec->envp, built already) beyond
         * PATH, HOME and LANG, which glove exec sets itself; checked here
         * as glove exec checks --env names (reserved names, bounds), so a
         * refusal comes at start, naming the upstream. */
        const char *vars[GLOVE_MCP_UPSTREAM_ENV_MAX];
        size_t n_vars = 0;
        for (size_t i = 0; r == 0 && spec->envp && spec->envp[i]; i++) {
                const char *e = spec->envp[i];
                if (strncmp(e, "PATH=", 5) == 0 || strncmp(e, "HOME=", 5) == 0 || strncmp(e, "LANG=", 5) == 0)
                        continue;
                _cleanup_free_ char *var = strndup(e, strcspn(e, "="));
                r = var ? push_arg(argv, &n, "--env") : -ENOMEM;
                r = r ?: push_arg(argv, &n, var);
                if (r == 0 && n_vars < GLOVE_MCP_UPSTREAM_ENV_MAX)
                        vars[n_vars++] = argv[n - 1];
        }
        if (r == 0) {
                struct glove_env env = {0};
                r = glove_env_build((const char *const *)spec->envp, vars, n_vars, &env, err);
                glove_env_free(&env);
                if (r < 0) {
                        glove_error_prefix(err, "upstream %s: --upstream-env", spec->name);
                        return r;
                }
        }
        for (size_t i = 0; r == 0 && i < g->n_egress; i++) {
                r = push_arg(argv, &n, "--egress-allow");
                r = r ?: push_arg(argv, &n, g->egress[i]);
        }
        if (r == 0 && push_limits(o, spec, argv, &n, spec->sandbox, err) < 0)
                return -EINVAL;
        /* Its egress records go to the run's audit log, with the run's id
         * and its name (the launcher gets the log as descriptor 4). */
        if (r == 0 && audit && audit->fd > 2) {
                char ra[16 + GLOVE_AUDIT_RUN_ID_LEN + GLOVE_MCP_UPSTREAM_NAME_MAX];
                snprintf(ra, sizeof(ra), "%d:%s:%s", GLOVE_MCP_UPSTREAM_PASS_FD, audit->run_id, spec->name);
                spec->pass_fd = audit->fd;
                r = push_arg(argv, &n, "--run-audit");
                r = r ?: push_arg(argv, &n, ra);
        }
        r = r ?: push_arg(argv, &n, "--");
        r = r ?: push_arg(argv, &n, command);
        for (size_t i = 1; r == 0 && spec->argv[i]; i++)
                r = push_arg(argv, &n, spec->argv[i]);
        spec->launch_path = r == 0 ? strdup("/proc/self/exe") : NULL;
        /* One of glove exec's stop signals: it ends the sandbox at once and
         * removes its cgroup, where SIGKILL would leave that behind. */
        spec->stop_signal = SIGPWR;
        if (r == 0 && !spec->launch_path)
                r = -ENOMEM;
        /* glove exec refuses the invoker's runtime directory as a grant too. */
        if (r == 0 && runtime_dir && spec->envp) {
                size_t k = 0;
                while (spec->envp[k])
                        k++;
                char **envp = realloc(spec->envp, (k + 2) * sizeof(char *));
                if (!envp)
                        r = -ENOMEM;
                else {
                        spec->envp = envp;
                        envp[k + 1] = NULL;
                        if (asprintf(&envp[k], "XDG_RUNTIME_DIR=%s", runtime_dir) < 0) {
                                envp[k] = NULL;
                                r = -ENOMEM;
                        }
                }
        }
        if (r < 0)
                return glove_error_set(err, -r, r == -E2BIG ? "upstream.bad_spec" : "upstream.nomem",
                                       "upstream %s: %s", spec->name,
                                       r == -E2BIG ? "too many arguments for its sandbox" : "out of memory");
        return check_launcher(spec, err);
}

/* The grants record of upstream_start: paths as resolved, variable names,
 * egress rules as given. */
static json_t *grants_record(const struct grants *g, const struct glove_mcp_upstream_spec *spec) {
        json_t *rec = json_pack("{s:[],s:[],s:[],s:[],s:{}}", "ro", "rw", "env", "egress", "limits");
        if (!rec || append_paths(rec, &g->set) < 0)
                goto fail;
        for (size_t i = 0; spec->envp && spec->envp[i]; i++) {
                const char *e = spec->envp[i];
                if (strncmp(e, "PATH=", 5) == 0 || strncmp(e, "HOME=", 5) == 0 || strncmp(e, "LANG=", 5) == 0 ||
                    strncmp(e, "XDG_RUNTIME_DIR=", 16) == 0)
                        continue;
                if (json_array_append_new(json_object_get(rec, "env"), json_stringn(e, strcspn(e, "="))) < 0)
                        goto fail;
        }
        for (size_t i = 0; i < g->n_egress; i++)
                if (json_array_append_new(json_object_get(rec, "egress"), glove_audit_string(g->egress[i], strlen(g->egress[i]))) < 0)
                        goto fail;
        return rec;
fail:
        json_decref(rec);
        return NULL;
}

/* The entries of --upstream-ro/-rw/-egress/-uncontained must each name an
 * --upstream. */
static int check_names(const struct glove_exec_options *o, const struct glove_mcp_upstream_spec *specs, size_t n,
                       struct glove_error *err) {
        const struct {
                const char *const *list;
                size_t n;
                const char *opt, *form;
        } lists[] = {
                {o->upstream_ro, o->n_upstream_ro, "--upstream-ro", "NAME:PATH"},
                {o->upstream_rw, o->n_upstream_rw, "--upstream-rw", "NAME:PATH"},
                {o->upstream_egress, o->n_upstream_egress, "--upstream-egress", "NAME:HOST[:PORT]"},
                {o->upstream_limit, o->n_upstream_limit, "--upstream-limit", "NAME:LIMIT=VALUE"},
        };
        for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
                for (size_t i = 0; i < lists[l].n; i++)
                        if (!known_name(specs, n, lists[l].list[i], false))
                                return glove_error_set(err, EINVAL, "upstream.bad_grant",
                                                       "%s %s: expected %s with NAME an --upstream", lists[l].opt,
                                                       lists[l].list[i], lists[l].form);
        for (size_t i = 0; i < o->n_upstream_uncontained; i++)
                if (!known_name(specs, n, o->upstream_uncontained[i], true))
                        return glove_error_set(err, EINVAL, "upstream.bad_uncontained", "--upstream-uncontained %s names no --upstream",
                                               o->upstream_uncontained[i]);
        return 0;
}

static bool is_uncontained(const struct glove_exec_options *o, const json_t *sb, const char *name) {
        for (size_t i = 0; i < o->n_upstream_uncontained; i++)
                if (strcmp(o->upstream_uncontained[i], name) == 0)
                        return true;
        return sb && json_is_false(json_object_get(sb, "contained"));
}

int glove_run_upstream_sandboxes(const struct glove_exec_options *o, const struct glove_policy *policy,
                                 const struct glove_audit_log *audit, const char *cwd, const char *runtime_dir,
                                 struct glove_mcp_upstream_spec *specs, size_t n_specs, bool *uncontained,
                                 struct glove_error *err) {
        int r = check_names(o, specs, n_specs, err);
        if (r < 0 || n_specs == 0)
                return r;
        /* The upstreams' grants, like the agent's, never reach a running
         * gloved's directories. */
        _cleanup_(glove_grant_guards_free) struct glove_grant_guards guards = { 0 };
        r = glove_run_gloved_guards(&guards, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_specs; i++) {
                struct glove_mcp_upstream_spec *spec = &specs[i];
                const json_t *sb = glove_policy_upstream_sandbox(policy, spec->name);
                _cleanup_free_ struct grants *g = calloc(1, sizeof(*g));
                if (!g)
                        return glove_error_set(err, ENOMEM, "upstream.nomem", "out of memory");
                glove_grant_set_init(&g->set);
                g->set.runtime_dir = runtime_dir;
                g->set.guards = &guards;
                r = gather(o, sb, spec, cwd, g, err);
                uncontained[i] = is_uncontained(o, sb, spec->name);
                bool limits = false;
                const char *lv;
                for (size_t k = 0; k < o->n_upstream_limit; k++)
                        limits = limits || names(o->upstream_limit[k], spec->name, &lv);
                if (r >= 0 && uncontained[i] && (g->set.count || g->n_egress || limits))
                        r = glove_error_set(err, EINVAL, "upstream.uncontained_grants",
                                            "upstream %s runs uncontained (on the host, with the invoker's authority): its "
                                            "--upstream-ro, --upstream-rw, --upstream-egress and --upstream-limit would mean nothing",
                                            spec->name);
                _cleanup_free_ char *command = NULL;
                if (r >= 0 && !uncontained[i])
                        r = grant_command(g, spec, cwd, &command, err);
                /* The upstream must not reach the run's audit log either. */
                if (r >= 0 && !uncontained[i] && audit && audit->fd >= 0) {
                        r = glove_grant_set_check_hidden(&g->set, audit->path, audit->dev, audit->ino, err);
                        if (r < 0)
                                glove_error_prefix(err, "upstream %s", spec->name);
                }
                if (r >= 0 && !uncontained[i]) {
                        spec->sandbox = grants_record(g, spec);
                        r = spec->sandbox ? build_launcher(o, spec, g, command, runtime_dir, audit, err)
                                          : glove_error_set(err, ENOMEM, "upstream.nomem", "out of memory");
                }
                glove_grant_set_clear(&g->set);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing an upstream spec and building its environment (upstream.h). */
#include "glove/mcp/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool valid_name(const char *s, size_t n) {
        if (n == 0 || n > GLOVE_MCP_UPSTREAM_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

/* The value of name in env (NULL-terminated "NAME=VALUE" array), or NULL. */
static const char *env_get(const char *const *env, const char *name) {
        size_t n = strlen(name);
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
                        return env[i] + n + 1;
        return NULL;
}

/* Looks cmd up in PATH, as a shell would. */
static char *resolve(const char *cmd, const char *const *env) {
        if (strchr(cmd, '/'))
                return strdup(cmd);
        const char *path = env_get(env, "PATH");
        if (!path || !*path)
                path = GLOVE_MCP_UPSTREAM_DEFAULT_PATH;
        while (*path) {
                const char *end = strchrnul(path, ':');
                size_t n = (size_t)(end - path);
                char *cand = NULL;
                if (n > 0 && asprintf(&cand, "%.*s/%s", (int)n, path, cmd) >= 0) {
                        struct stat st;
                        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
                                return cand;
                        free(cand);
                }
                path = *end ? end + 1 : end;
        }
        return NULL;
}

int glove_mcp_upstream_spec_parse(const char *text, const char *const *env, struct glove_mcp_upstream_spec *spec,
                                  struct glove_error *err) {
        memset(spec, 0, sizeof(*spec));
        const char *eq = strchr(text, '=');
        if (!eq || !valid_name(text, (size_t)(eq - text)))
                return glove_error_set(err, EINVAL, "upstream.bad_spec",
                                       "%s: expected NAME=CMD[,ARG...] with NAME of 1 to 32 characters from [a-z0-9_-]", text);
        memcpy(spec->name, text, (size_t)(eq - text));
        const char *p = eq + 1;
        size_t argc = 0;
        for (;;) {
                const char *comma = strchrnul(p, ',');
                if (argc >= GLOVE_MCP_UPSTREAM_ARGS_MAX)
                        return glove_error_set(err, E2BIG, "upstream.bad_spec", "%s: more than %d arguments", spec->name,
                                               GLOVE_MCP_UPSTREAM_ARGS_MAX);
                spec->argv[argc] = strndup(p, (size_t)(comma - p));
                if (!spec->argv[argc])
                        return glove_error_set(err, ENOMEM, "upstream.bad_spec", "out of memory");
                argc++;
                if (!*comma)
                        break;
                p = comma + 1;
        }
        if (!spec->argv[0][0])
                return glove_error_set(err, EINVAL, "upstream.bad_spec", "%s: the command is empty", spec->name);
        spec->path = resolve(spec->argv[0], env);
        if (!spec->path)
                return glove_error_set(err, ENOENT, "upstream.not_found", "upstream %s: command %s not found in PATH", spec->name,
                                       spec->argv[0]);
        return 0;
}

int glove_mcp_upstream_spec_build_env(struct glove_mcp_upstream_spec *spec, const char *const *env, const char *const *specs,
                                      size_t n_specs, struct glove_error *err) {
        if (n_specs > GLOVE_MCP_UPSTREAM_ENV_MAX)
                return glove_error_set(err, E2BIG, "upstream.bad_env", "more than %d environment entries",
                                       GLOVE_MCP_UPSTREAM_ENV_MAX);
        if (spec->envp)
                return glove_error_set(err, EEXIST, "upstream.bad_env", "%s: the environment is already built", spec->name);
        spec->envp = calloc(4 + n_specs, sizeof(char *));
        if (!spec->envp)
                return glove_error_set(err, ENOMEM, "upstream.bad_env", "out of memory");
        size_t n = 0;
        const char *base[] = {"PATH", "HOME", "LANG"};
        for (size_t i = 0; i < 3; i++) {
                const char *v = env_get(env, base[i]);
                if (!v && i == 0)
                        v = GLOVE_MCP_UPSTREAM_DEFAULT_PATH;
                if (v && asprintf(&spec->envp[n], "%s=%s", base[i], v) >= 0)
                        n++;
                else
                        spec->envp[n] = NULL;
        }
        size_t nlen = strlen(spec->name);
        for (size_t i = 0; i < n_specs; i++) {
                const char *colon = strchr(specs[i], ':');
                if (!colon || colon == specs[i] || !colon[1])
                        return glove_error_set(err, EINVAL, "upstream.bad_env", "%s: expected NAME:VAR", specs[i]);
                if ((size_t)(colon - specs[i]) != nlen || strncmp(specs[i], spec->name, nlen) != 0)
                        continue;
                const char *var = colon + 1;
                const char *v = env_get(env, var);
                if (!v)
                        return glove_error_set(err, EINVAL, "upstream.env_unset", "%s: %s is not set in Glove's environment", specs[i],
                                               var);
                if (asprintf(&spec->envp[n], "%s=%s", var, v) < 0) {
                        spec->envp[n] = NULL;
                        return glove_error_set(err, ENOMEM, "upstream.bad_env", "out of memory");
                }
                n++;
        }
        return 0;
}

void glove_mcp_upstream_spec_free(struct glove_mcp_upstream_spec *spec) {
        for (size_t i = 0; i < GLOVE_MCP_UPSTREAM_ARGS_MAX && spec->argv[i]; i++) {
                free(spec->argv[i]);
                spec->argv[i] = NULL;
        }
        free(spec->path);
        spec->path = NULL;
        free(spec->launch_path);
        spec->launch_path = NULL;
        for (size_t i = 0; spec->launch_argv && spec->launch_argv[i]; i++)
                free(spec->launch_argv[i]);
        free(spec->launch_argv);
        spec->launch_argv = NULL;
        json_decref(spec->sandbox);
        spec->sandbox = NULL;
        if (spec->envp) {
                for (size_t i = 0; spec->envp[i]; i++)
                        free(spec->envp[i]);
                free(spec->envp);
                spec->envp = NULL;
        }
}

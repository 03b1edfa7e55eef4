/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/container/environment.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reserved[] = {"PATH", "HOME", "TMPDIR", "TERM", "LANG",
                                       /* set by Glove for audited egress */
                                       "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                                       "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"};

const char *glove_env_lookup(const char *const *envp, const char *name) {
        size_t n = strlen(name);
        for (; envp && *envp; envp++)
                if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
                        return *envp + n + 1;
        return NULL;
}

static bool valid_name(const char *s) {
        size_t n = strnlen(s, GLOVE_ENV_NAME_MAX + 1);
        if (n == 0 || n > GLOVE_ENV_NAME_MAX)
                return false;
        if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
                return false;
        for (size_t i = 1; i < n; i++) {
                char c = s[i];
                if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
                        return false;
        }
        return true;
}

static int push(struct glove_env *env, const char *name, const char *value, struct glove_error *err) {
        char *entry = NULL;
        if (asprintf(&entry, "%s=%s", name, value) < 0)
                return glove_error_set(err, ENOMEM, "env.nomem", "out of memory");
        env->envp[env->count++] = entry;
        env->envp[env->count] = NULL;
        return 0;
}

static int check_name(const char *const *host_env, const char *const *names, size_t i, struct glove_error *err) {
        const char *name = names[i];
        if (strchr(name, '='))
                return glove_error_set(err, EINVAL, "env.assignment",
                                       "%s: values are never taken from the command line; export the variable and pass only its name",
                                       name);
        if (!valid_name(name))
                return glove_error_set(err, EINVAL, "env.bad_name", "%s: not a valid variable name", name);
        for (size_t k = 0; k < sizeof(reserved) / sizeof(reserved[0]); k++)
                if (strcmp(name, reserved[k]) == 0)
                        return glove_error_set(err, EINVAL, "env.reserved", "%s: reserved, Glove sets it itself", name);
        if (strncmp(name, "GLOVE_", 6) == 0)
                return glove_error_set(err, EINVAL, "env.reserved", "%s: GLOVE_* names are reserved", name);
        for (size_t k = 0; k < i; k++)
                if (strcmp(names[k], name) == 0)
                        return glove_error_set(err, EINVAL, "env.duplicate", "%s given twice", name);
        const char *value = glove_env_lookup(host_env, name);
        if (!value)
                return glove_error_set(err, EINVAL, "env.unset", "%s: not set in Glove's environment", name);
        if (strnlen(value, GLOVE_ENV_VALUE_MAX + 1) > GLOVE_ENV_VALUE_MAX)
                return glove_error_set(err, E2BIG, "env.too_long", "%s: value longer than %d bytes", name, GLOVE_ENV_VALUE_MAX);
        return 0;
}

int glove_env_build(const char *const *host_env, const char *const *names, size_t n_names,
                    struct glove_env *out, struct glove_error *err) {
        out->envp = NULL;
        out->count = 0;
        if (n_names > GLOVE_ENV_NAMES_MAX)
                return glove_error_set(err, E2BIG, "env.too_long", "more than %d names", GLOVE_ENV_NAMES_MAX);
        for (size_t i = 0; i < n_names; i++) {
                int r = check_name(host_env, names, i, err);
                if (r < 0)
                        return r;
        }
        struct glove_env env = {.envp = calloc(7 + n_names, sizeof(char *))};
        if (!env.envp)
                return glove_error_set(err, ENOMEM, "env.nomem", "out of memory");
        const char *lang = glove_env_lookup(host_env, "LANG");
        const char *term = glove_env_lookup(host_env, "TERM");
        int r = 0;
        r = r ?: push(&env, "PATH", GLOVE_ENV_PATH, err);
        r = r ?: push(&env, "HOME", GLOVE_ENV_HOME, err);
        r = r ?: push(&env, "TMPDIR", "/tmp", err);
        r = r ?: push(&env, "LANG", lang && *lang && strlen(lang) < 256 ? lang : "C.UTF-8", err);
        if (term && *term && strlen(term) < 256)
                r = r ?: push(&env, "TERM", term, err);
        r = r ?: push(&env, "GLOVE_SANDBOXED", "1", err);
        for (size_t i = 0; r == 0 && i < n_names; i++)
                r = push(&env, names[i], glove_env_lookup(host_env, names[i]), err);
        if (r < 0) {
                glove_env_free(&env);
                return r;
        }
        *out = env;
        return 0;
}

void glove_env_free(struct glove_env *env) {
        if (env->envp) {
                for (size_t i = 0; i < env->count; i++)
                        free(env->envp[i]);
                free(env->envp);
        }
        env->envp = NULL;
        env->count = 0;
}

int glove_env_append(struct glove_env *env, const char *entry, struct glove_error *err) {
        if (!strchr(entry, '='))
                return glove_error_set(err, EINVAL, "env.bad_name", "environment entry %s has no '='", entry);
        char **n = realloc(env->envp, (env->count + 2) * sizeof(char *));
        if (!n)
                return glove_error_set(err, ENOMEM, "env.nomem", "out of memory");
        env->envp = n;
        env->envp[env->count] = strdup(entry);
        if (!env->envp[env->count])
                return glove_error_set(err, ENOMEM, "env.nomem", "out of memory");
        env->count++;
        env->envp[env->count] = NULL;
        return 0;
}

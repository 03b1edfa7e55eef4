/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's environment (issue "glove exec", Environment): nothing of the
 * invoker's environment passes unless named.
 *
 * Always set: PATH=GLOVE_ENV_PATH, HOME=GLOVE_ENV_HOME, TMPDIR=/tmp,
 * GLOVE_SANDBOXED=1, LANG (the invoker's, else C.UTF-8) and TERM (the
 * invoker's, when set). Each --env NAME adds NAME=<the invoker's value>.
 */

#include <stddef.h>

#include "glove/base/error.h"

#define GLOVE_ENV_PATH "/usr/local/bin:/usr/bin:/bin"
#define GLOVE_ENV_HOME "/home/agent"
/* Most --env names; longest name and value accepted. */
#define GLOVE_ENV_NAMES_MAX 64
#define GLOVE_ENV_NAME_MAX 128
#define GLOVE_ENV_VALUE_MAX (128 * 1024)

struct glove_env {
        char **envp;   /* NULL-terminated "NAME=VALUE" array, owned */
        size_t count;  /* entries before the NULL */
};

/*
 * Builds the agent's environment from host_env (NULL-terminated, e.g.
 * environ; not retained) and the names passed with --env.
 *
 * Errors (-EINVAL unless noted), each naming the offending entry:
 *   "env.assignment"  a name contains '=' (values never come from the
 *                     command line: export the variable and pass its name);
 *   "env.bad_name"    not [A-Za-z_][A-Za-z0-9_]*, or longer than
 *                     GLOVE_ENV_NAME_MAX;
 *   "env.reserved"    PATH, HOME, TMPDIR, TERM, LANG, the proxy variables
 *                     (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY, also in
 *                     lower case) or any GLOVE_* name;
 *   "env.unset"       the name is not set in host_env;
 *   "env.duplicate"   a name given twice;
 *   "env.too_long"    (-E2BIG) a value over GLOVE_ENV_VALUE_MAX, or more
 *                     than GLOVE_ENV_NAMES_MAX names.
 */
int glove_env_build(const char *const *host_env, const char *const *names, size_t n_names,
                    struct glove_env *out, struct glove_error *err);

/* Appends one "NAME=VALUE" entry (copied) to an environment glove_env_build
 * made, for variables Glove itself sets later (the egress proxy). Errors:
 * "env.bad_name" (no '='), "env.nomem". */
int glove_env_append(struct glove_env *env, const char *entry, struct glove_error *err);

/* Frees what glove_env_build made; out is empty again. */
void glove_env_free(struct glove_env *env);

/* The value of name in a NULL-terminated environment array, or NULL. */
const char *glove_env_lookup(const char *const *envp, const char *name);

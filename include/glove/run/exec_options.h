/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Command line of `glove exec [OPTIONS] -- PROGRAM [ARG...]` (issue "glove
 * exec"). Parsing only collects what was asked; resolution (grants, the
 * environment, the audit log) happens afterwards and reports its own errors.
 */

#include <stdbool.h>
#include <stddef.h>

#include "glove/base/error.h"
#include "glove/container/grant.h"

/* Exit status of Glove itself failing (DESIGN.md, Interfaces: CLI). */
#define GLOVE_EXIT_FAILURE 125
#define GLOVE_EXIT_CANNOT_EXECUTE 126
#define GLOVE_EXIT_NOT_FOUND 127

struct glove_exec_grant_spec {
        const char *path;               /* as given, borrowed from argv */
        enum glove_grant_mode mode;
        bool workspace;
};

struct glove_exec_options {
        struct glove_exec_grant_spec grants[GLOVE_GRANTS_MAX];
        size_t n_grants;                /* in command-line order */
        const char *env_names[64];
        size_t n_env;
        const char *audit_log;          /* NULL when not given */
        char **program;                 /* PROGRAM [ARG...], NULL-terminated, borrowed */
        bool help;
};

/*
 * Parses argv (argv[0] is "exec"; options stop at "--" or at the first
 * non-option). Strings are borrowed from argv.
 *
 * Errors (-EINVAL unless noted): "usage.unknown_option",
 * "usage.missing_argument", "usage.missing_program", "usage.too_many"
 * (-E2BIG: more grants than GLOVE_GRANTS_MAX or --env names than 64),
 * "usage.audit_log_twice".
 */
int glove_exec_parse(int argc, char **argv, struct glove_exec_options *opts, struct glove_error *err);

/* The text printed by `glove exec --help`. */
extern const char glove_exec_help[];

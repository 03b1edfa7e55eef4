/* SPDX-License-Identifier: Apache-2.0 */
#include "launch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"

extern char **environ;

const int glove_launch_forwarded_signals[7] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

int glove_launch_fail(const struct glove_error *err) {
        fprintf(stderr, "glove: %s: %s\n", err->code ? err->code : "glove.error", err->message);
        return GLOVE_EXIT_FAILURE;
}

int glove_launch_prepare(const struct glove_exec_options *opts, struct glove_launch *l, struct glove_error *err) {
        memset(l, 0, sizeof(*l));
        l->audit.fd = -1;
        glove_grant_set_init(&l->grants);
        if (!getcwd(l->cwd, sizeof(l->cwd)))
                return glove_error_set(err, errno, "exec.cwd", "cannot determine the working directory: %s", strerror(errno));
        for (size_t i = 0; i < opts->n_grants; i++) {
                int r = glove_grant_set_add(&l->grants, opts->grants[i].path, opts->grants[i].mode, opts->grants[i].workspace,
                                            l->cwd, err);
                if (r < 0)
                        return r;
        }
        int r = glove_env_build((const char *const *)environ, opts->env_names, opts->n_env, &l->env, err);
        if (r < 0)
                return r;
        if (opts->audit_log) {
                /* Refuse a log inside a grant before anything is created. */
                _cleanup_free_ char *canonical = NULL;
                r = glove_audit_canonical_path(opts->audit_log, l->cwd, &canonical, err);
                if (r < 0)
                        return r;
                r = glove_grant_set_check_hidden(&l->grants, canonical, (dev_t)-1, (ino_t)-1, err);
                if (r < 0)
                        return r;
                r = glove_audit_open(opts->audit_log, l->cwd, &l->audit, err);
                if (r < 0)
                        return r;
                r = glove_grant_set_check_hidden(&l->grants, l->audit.path, l->audit.dev, l->audit.ino, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

void glove_launch_free(struct glove_launch *l) {
        glove_grant_set_clear(&l->grants);
        glove_env_free(&l->env);
        glove_audit_close(&l->audit);
}

void glove_launch_block_signals(sigset_t *mask) {
        sigemptyset(mask);
        sigaddset(mask, SIGCHLD);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(glove_launch_forwarded_signals); i++)
                sigaddset(mask, glove_launch_forwarded_signals[i]);
        sigprocmask(SIG_BLOCK, mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN); /* an over-limit audit append fails with EFBIG instead */
}

int glove_launch_outcome_status(const struct glove_sandbox_outcome *o, const char *program) {
        switch (o->kind) {
        case GLOVE_SANDBOX_EXITED:
                return o->value;
        case GLOVE_SANDBOX_SIGNALED:
                fprintf(stderr, "glove: agent.signal: %s was killed by signal %d (%s)\n", program, o->value, strsignal(o->value));
                return 128 + o->value;
        case GLOVE_SANDBOX_EXEC_FAILED:
                if (o->value == ENOENT) {
                        fprintf(stderr, "glove: exec.not_found: %s (not found in the sandbox's PATH or file system)\n", o->detail);
                        return GLOVE_EXIT_NOT_FOUND;
                }
                fprintf(stderr, "glove: exec.cannot_execute: %s\n", o->detail);
                return GLOVE_EXIT_CANNOT_EXECUTE;
        case GLOVE_SANDBOX_LOST:
        default:
                fprintf(stderr, "glove: sandbox.lost: %s\n", o->detail);
                return GLOVE_EXIT_FAILURE;
        }
}

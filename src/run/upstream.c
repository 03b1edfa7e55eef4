/* SPDX-License-Identifier: Apache-2.0 */
#include "upstream.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/container/environment.h"

extern char **environ;

static bool valid_name(const char *s, size_t n) {
        if (n == 0 || n > GLOVE_UPSTREAM_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

/* Looks cmd up in Glove's PATH, as a shell would. */
static char *resolve(const char *cmd) {
        if (strchr(cmd, '/'))
                return strdup(cmd);
        const char *path = getenv("PATH");
        if (!path || !*path)
                path = GLOVE_ENV_PATH;
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

int glove_upstream_parse(const char *spec, struct glove_upstream *u, struct glove_error *err) {
        memset(u, 0, sizeof(*u));
        u->pidfd = u->in_fd = u->out_fd = -1;
        u->pid = -1;
        u->exit_code = u->exit_signal = -1;
        u->next_id = 1;
        const char *eq = strchr(spec, '=');
        if (!eq || !valid_name(spec, (size_t)(eq - spec)))
                return glove_error_set(err, EINVAL, "upstream.bad_spec",
                                       "--upstream %s: expected NAME=CMD[,ARG...] with NAME of 1 to 32 characters from [a-z0-9_-]",
                                       spec);
        memcpy(u->name, spec, (size_t)(eq - spec));
        const char *p = eq + 1;
        size_t argc = 0;
        for (;;) {
                const char *comma = strchrnul(p, ',');
                if (argc >= GLOVE_UPSTREAM_ARGS_MAX)
                        return glove_error_set(err, E2BIG, "upstream.bad_spec", "--upstream %s: more than %d arguments", u->name,
                                               GLOVE_UPSTREAM_ARGS_MAX);
                u->argv[argc] = strndup(p, (size_t)(comma - p));
                if (!u->argv[argc])
                        return glove_error_set(err, ENOMEM, "upstream.bad_spec", "out of memory");
                argc++;
                if (!*comma)
                        break;
                p = comma + 1;
        }
        if (!u->argv[0][0])
                return glove_error_set(err, EINVAL, "upstream.bad_spec", "--upstream %s: the command is empty", u->name);
        u->path = resolve(u->argv[0]);
        if (!u->path)
                return glove_error_set(err, ENOENT, "upstream.not_found", "upstream %s: command %s not found in PATH", u->name,
                                       u->argv[0]);
        return 0;
}

int glove_upstream_build_env(struct glove_upstream *u, const char *const *specs, size_t n_specs, struct glove_error *err) {
        u->envp = calloc(4 + n_specs, sizeof(char *));
        if (!u->envp)
                return glove_error_set(err, ENOMEM, "upstream.bad_env", "out of memory");
        size_t n = 0;
        const char *base[] = {"PATH", "HOME", "LANG"};
        for (size_t i = 0; i < 3; i++) {
                const char *v = getenv(base[i]);
                if (!v && i == 0)
                        v = GLOVE_ENV_PATH;
                if (v && asprintf(&u->envp[n], "%s=%s", base[i], v) >= 0)
                        n++;
        }
        for (size_t i = 0; i < n_specs; i++) {
                const char *colon = strchr(specs[i], ':');
                if (!colon || colon == specs[i] || !colon[1])
                        return glove_error_set(err, EINVAL, "upstream.bad_env", "--upstream-env %s: expected NAME:VAR", specs[i]);
                if ((size_t)(colon - specs[i]) != strlen(u->name) || strncmp(specs[i], u->name, strlen(u->name)) != 0)
                        continue;
                const char *var = colon + 1;
                const char *v = getenv(var);
                if (!v)
                        return glove_error_set(err, EINVAL, "upstream.env_unset", "--upstream-env %s: %s is not set in Glove's environment",
                                               specs[i], var);
                if (asprintf(&u->envp[n], "%s=%s", var, v) < 0)
                        return glove_error_set(err, ENOMEM, "upstream.bad_env", "out of memory");
                n++;
        }
        return 0;
}

int glove_upstream_start(struct glove_upstream *u, size_t max_frame, struct glove_error *err) {
        int in[2], out[2], ep[2];
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0)
                return glove_error_set(err, errno, "upstream.start", "upstream %s: pipe: %s", u->name, strerror(errno));
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return glove_error_set(err, errno, "upstream.start", "upstream %s: fork: %s", u->name, strerror(errno));
        if (pid == 0) {
                int e = 0;
                sigset_t none;
                sigemptyset(&none);
                for (int s = 1; s < NSIG; s++)
                        signal(s, SIG_DFL);
                sigprocmask(SIG_SETMASK, &none, NULL);
                if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        e = errno;
                else if (getppid() != parent)
                        e = ESRCH;
                if (!e && (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0))
                        e = errno;
                if (!e && ep[1] != 3 && dup2(ep[1], 3) < 0)
                        e = errno;
                if (!e) {
                        fcntl(3, F_SETFD, FD_CLOEXEC);
                        syscall(SYS_close_range, 4, ~0U, 0);
                        execve(u->path, u->argv, u->envp);
                        e = errno;
                }
                (void)!write(3, &e, sizeof(e));
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        close(ep[1]);
        u->pid = pid;
        u->in_fd = in[1];
        u->out_fd = out[0];
        int e = 0;
        int n = glove_fd_read_exact(ep[0], &e, sizeof(e));
        close(ep[0]);
        u->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (n == 0)
                return glove_error_set(err, e, "upstream.start", "upstream %s: cannot execute %s: %s", u->name, u->path, strerror(e));
        if (u->pidfd < 0)
                return glove_error_set(err, errno, "upstream.start", "upstream %s: pidfd_open: %s", u->name, strerror(errno));
        if (fcntl(u->in_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(u->out_fd, F_SETFL, O_NONBLOCK) < 0)
                return glove_error_set(err, errno, "upstream.start", "upstream %s: fcntl: %s", u->name, strerror(errno));
        glove_mcp_reader_init(&u->reader, max_frame);
        glove_mcp_writer_init(&u->writer, GLOVE_UPSTREAM_PENDING_MAX);
        return 0;
}

void glove_upstream_kill(struct glove_upstream *u, int sig) {
        if (u->pid > 0)
                (void)kill(-u->pid, sig);
        if (u->pidfd >= 0)
                (void)syscall(SYS_pidfd_send_signal, u->pidfd, sig, NULL, 0);
}

void glove_upstream_free(struct glove_upstream *u) {
        u->out_src = sd_event_source_disable_unref(u->out_src);
        u->in_src = sd_event_source_disable_unref(u->in_src);
        u->child_src = sd_event_source_disable_unref(u->child_src);
        glove_closep(&u->pidfd);
        glove_closep(&u->in_fd);
        glove_closep(&u->out_fd);
        u->pidfd = u->in_fd = u->out_fd = -1;
        for (size_t i = 0; i < GLOVE_UPSTREAM_ARGS_MAX && u->argv[i]; i++) {
                free(u->argv[i]);
                u->argv[i] = NULL;
        }
        free(u->path);
        u->path = NULL;
        if (u->envp) {
                for (size_t i = 0; u->envp[i]; i++)
                        free(u->envp[i]);
                free(u->envp);
                u->envp = NULL;
        }
        if (u->tools)
                json_decref(u->tools);
        if (u->listing)
                json_decref(u->listing);
        u->tools = u->listing = NULL;
        glove_mcp_reader_free(&u->reader);
        glove_mcp_writer_free(&u->writer);
}

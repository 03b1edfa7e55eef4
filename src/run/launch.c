/* SPDX-License-Identifier: Apache-2.0 */
#include "launch.h"
#include "gloved_guards.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/shown.h"
#include "glove/base/time.h"
#include "glove/session/session.h"

extern char **environ;

const int glove_launch_forwarded_signals[7] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
const int glove_launch_stop_signals[7] = {SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGIO, SIGPWR, SIGSYS};

/* What is left of the time Glove's own lines may wait for room on stderr,
 * in ms, for the whole process. */
static int say_budget_ms = GLOVE_LAUNCH_SAY_WAIT_MS;

void glove_launch_say(const char *fmt, ...) {
        char raw[1024], line[1024]; /* under PIPE_BUF: one write after POLLOUT never blocks */
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(raw, sizeof(raw), fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        /* Messages quote paths, names and peers' words: shown escaped
         * (docs/threat-model.md, "Terminal"), the line's own end kept. */
        size_t rlen = strlen(raw);
        bool nl = rlen > 0 && raw[rlen - 1] == '\n';
        if (nl)
                raw[rlen - 1] = '\0';
        glove_shown(raw, line, sizeof(line) - 1);
        size_t len = strlen(line);
        if (nl)
                line[len++] = '\n';
        size_t off = 0;
        while (off < len) {
                struct pollfd pfd = {.fd = 2, .events = POLLOUT};
                uint64_t t0 = glove_time_monotonic_ms();
                int p = poll(&pfd, 1, say_budget_ms);
                uint64_t spent = glove_time_monotonic_ms() - t0;
                say_budget_ms = spent >= (uint64_t)say_budget_ms ? 0 : say_budget_ms - (int)spent;
                if (p < 0 && errno == EINTR)
                        continue;
                if (p <= 0 || (pfd.revents & (POLLERR | POLLNVAL)))
                        return; /* nobody takes it: dropped rather than hang */
                ssize_t w = write(2, line + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return;
                off += (size_t)w;
        }
}

int glove_launch_fail(const struct glove_error *err) {
        glove_launch_say("glove: %s: %s\n", err->code ? err->code : "glove.error", err->message);
        return GLOVE_EXIT_FAILURE;
}

/* Pins the directory of --status-json by descriptor and refuses a path inside
 * any grant: Glove writes the file after the agent ran, into that directory
 * only (openat/renameat), whatever the agent did to the path meanwhile. */
static int pin_status(const char *path, struct glove_launch *l, struct glove_error *err) {
        _cleanup_free_ char *canonical = NULL;
        int r = glove_audit_canonical_path(path, l->cwd, &canonical, err);
        if (r < 0) {
                /* The audit module's resolver, the status file's codes. */
                if (err->code && strcmp(err->code, "audit.open") == 0)
                        err->code = "status.open";
                else if (err->code && strcmp(err->code, "audit.file_type") == 0)
                        err->code = "status.file_type";
                glove_error_prefix(err, "--status-json");
                return r;
        }
        r = glove_grant_set_check_outside(&l->grants, canonical, (dev_t)-1, (ino_t)-1, "the status file",
                                          "grant.exposes_status_file", err);
        if (r < 0)
                return r;
        bool same_name = l->audit.fd >= 0 && l->audit.path && strcmp(canonical, l->audit.path) == 0;
        char *slash = strrchr(canonical, '/');
        l->status_name = strdup(slash + 1);
        *slash = '\0';
        l->status_dirfd = open(*canonical ? canonical : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!l->status_name || l->status_dirfd < 0)
                return glove_error_set(err, errno ? errno : ENOMEM, "status.write", "--status-json %s: %s", path, strerror(errno));
        /* The file is replaced by rename: only a regular file (or nothing)
         * may be there, never a device, a directory or a link. */
        struct stat st;
        bool exists = fstatat(l->status_dirfd, l->status_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (exists && !S_ISREG(st.st_mode))
                return glove_error_set(err, EINVAL, "status.file_type", "--status-json %s: exists and is not a regular file", path);
        if (exists && st.st_nlink != 1)
                return glove_error_set(err, EMLINK, "status.hard_link",
                                       "--status-json %s has %ju names (hard links); another name of it could be inside "
                                       "a grant; give it one name",
                                       path, (uintmax_t)st.st_nlink);
        /* The status file replaces what is there: never the audit log (by
         * name or through a hard link), whose history would be lost. */
        if (l->audit.fd >= 0 && (same_name || (exists && st.st_dev == l->audit.dev && st.st_ino == l->audit.ino)))
                return glove_error_set(err, EINVAL, "status.is_audit_log",
                                       "--status-json %s is the audit log; the status would replace its records", path);
        return 0;
}

int glove_launch_prepare(const struct glove_exec_options *opts, struct glove_launch *l, struct glove_error *err) {
        memset(l, 0, sizeof(*l));
        l->audit.fd = -1;
        l->status_dirfd = -1;
        glove_grant_set_init(&l->grants);
        glove_grant_set_init(&l->home_set);
        l->home_bytes = opts->disk_bytes ? opts->disk_bytes : GLOVE_SESSION_DEFAULT_DISK;
        if (!getcwd(l->cwd, sizeof(l->cwd)))
                return glove_error_set(err, errno, "exec.cwd", "cannot determine the working directory: %s", strerror(errno));
        l->grants.runtime_dir = getenv("XDG_RUNTIME_DIR");
        l->grants.allow_system_write = opts->unsafe_write_system_dir;
        /* What no grant may reach beyond the system trees: the directories
         * of every gloved this invoker can see (looked for only when
         * something is granted). */
        if (opts->n_grants > 0 || opts->home_from) {
                int r = glove_run_gloved_guards(&l->guards, err);
                if (r < 0)
                        return r;
                l->grants.guards = &l->guards;
                l->home_set.guards = &l->guards;
        }
        for (size_t i = 0; i < opts->n_grants; i++) {
                int r = glove_grant_set_add(&l->grants, opts->grants[i].path, opts->grants[i].mode, opts->grants[i].workspace,
                                            l->cwd, err);
                if (r < 0) {
                        /* The container names the path; the option is the CLI's word. */
                        glove_error_prepend_word(err, opts->grants[i].workspace ? "--workspace"
                                                      : opts->grants[i].mode == GLOVE_GRANT_WRITE ? "--write"
                                                                                                 : "--read");
                        if (err && err->code && strcmp(err->code, "grant.system_directory") == 0) {
                                size_t len = strlen(err->message);
                                snprintf(err->message + len, sizeof(err->message) - len,
                                         ", or accept that risk with --unsafe-write-system-dir");
                        }
                        return r;
                }
        }
        if (opts->home_from) {
                /* Resolved and pinned like a read grant (no link in the
                 * path, the same refusals), but copied, never mounted. */
                l->home_set.runtime_dir = l->grants.runtime_dir;
                int r = glove_grant_set_add(&l->home_set, opts->home_from, GLOVE_GRANT_READ, false, l->cwd, err);
                if (r < 0) {
                        glove_error_prepend_word(err, "--home-from");
                        return r;
                }
                if (!l->home_set.items[0].is_dir)
                        return glove_error_set(err, ENOTDIR, "home.not_dir", "--home-from %s: not a directory", opts->home_from);
                l->home_from = strdup(l->home_set.items[0].path);
                if (!l->home_from)
                        return glove_error_set(err, ENOMEM, "exec.alloc", "out of memory");
        }
        if (opts->n_env > GLOVE_ENV_NAMES_MAX)
                return glove_error_set(err, E2BIG, "env.too_long", "more than %d --env names", GLOVE_ENV_NAMES_MAX);
        int r = glove_env_build((const char *const *)environ, opts->env_names, opts->n_env, &l->env, err);
        if (r < 0) {
                glove_error_prepend_word(err, "--env");
                return r;
        }
        if (opts->audit_log) {
                /* Refuse a log inside a grant before anything is created. */
                _cleanup_free_ char *canonical = NULL;
                r = glove_audit_canonical_path(opts->audit_log, l->cwd, &canonical, err);
                if (r < 0) {
                        glove_error_prepend_word(err, "--audit-log");
                        return r;
                }
                r = glove_grant_set_check_hidden(&l->grants, canonical, (dev_t)-1, (ino_t)-1, err);
                if (r < 0)
                        return r;
                r = glove_audit_open(opts->audit_log, l->cwd, &l->audit, err);
                if (r < 0) {
                        glove_error_prepend_word(err, "--audit-log");
                        return r;
                }
                /* Another name of the log (a hard link, perhaps inside a
                 * grant) would let the agent append records of its own. */
                struct stat ast;
                if (fstat(l->audit.fd, &ast) < 0)
                        return glove_error_set(err, errno, "audit.open", "--audit-log %s: fstat: %s", opts->audit_log,
                                               strerror(errno));
                if (ast.st_nlink != 1)
                        return glove_error_set(err, EMLINK, "audit.hard_link",
                                               "--audit-log %s has %ju names (hard links); another name of the log could "
                                               "be inside a grant; give it one name",
                                               opts->audit_log, (uintmax_t)ast.st_nlink);
                /* One id on every record of this run, whoever writes it. */
                r = glove_audit_new_run_id(&l->audit, err);
                if (r < 0)
                        return r;
                r = glove_grant_set_check_hidden(&l->grants, l->audit.path, l->audit.dev, l->audit.ino, err);
                /* A copy of the log in HOME would show the agent the
                 * records of earlier runs. */
                if (r >= 0)
                        r = glove_grant_set_check_hidden(&l->home_set, l->audit.path, l->audit.dev, l->audit.ino, err);
                if (r < 0)
                        return r;
        }
        if (opts->status_json)
                return pin_status(opts->status_json, l, err);
        return 0;
}

int glove_launch_add_home(struct glove_mount_plan *plan, void *ctx, struct glove_error *err) {
        const struct glove_launch *l = ctx;
        if (!l->home_from)
                return 0;
        const struct glove_grant *g = &l->home_set.items[0];
        int r = glove_mount_plan_add_tree(plan, GLOVE_ENV_HOME, l->home_bytes, glove_mount_plan_inside_id(geteuid()),
                                          glove_mount_plan_inside_id(getegid()), g->path, g->dev, g->ino, "--home-from", err);
        if (r < 0)
                return r;
        plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_SKIP_LINKS;
        return 0;
}

void glove_launch_free(struct glove_launch *l) {
        glove_grant_set_clear(&l->grants);
        glove_grant_set_clear(&l->home_set);
        glove_grant_guards_free(&l->guards);
        free(l->home_from);
        l->home_from = NULL;
        glove_env_free(&l->env);
        glove_audit_close(&l->audit);
        glove_closep(&l->status_dirfd);
        l->status_dirfd = -1;
        free(l->status_name);
        l->status_name = NULL;
}

void glove_launch_block_signals(sigset_t *mask) {
        sigemptyset(mask);
        sigaddset(mask, SIGCHLD);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(glove_launch_forwarded_signals); i++)
                sigaddset(mask, glove_launch_forwarded_signals[i]);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(glove_launch_stop_signals); i++)
                sigaddset(mask, glove_launch_stop_signals[i]);
        sigprocmask(SIG_BLOCK, mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN); /* an over-limit audit append fails with EFBIG instead */
}

static int on_signalfd(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)revents;
        struct glove_launch_signals *s = userdata;
        /* A bounded batch per wake-up: whatever is left wakes the loop again. */
        for (int i = 0; i < 16; i++) {
                struct signalfd_siginfo si;
                ssize_t n = read(fd, &si, sizeof(si));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != (ssize_t)sizeof(si))
                        break;
                (void)s->handler(src, &si, s->userdata);
        }
        return 0;
}

int glove_launch_signals_add(struct glove_launch_signals *s, sd_event *loop, sd_event_signal_handler_t handler,
                             void *userdata) {
        *s = (struct glove_launch_signals){.fd = -1, .handler = handler, .userdata = userdata};
        sigset_t set;
        sigemptyset(&set);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(glove_launch_forwarded_signals); i++)
                sigaddset(&set, glove_launch_forwarded_signals[i]);
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(glove_launch_stop_signals); i++)
                sigaddset(&set, glove_launch_stop_signals[i]);
        s->fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (s->fd < 0)
                return -errno;
        return sd_event_add_io(loop, &s->src, s->fd, EPOLLIN, on_signalfd, s);
}

void glove_launch_signals_free(struct glove_launch_signals *s) {
        s->src = sd_event_source_disable_unref(s->src);
        glove_closep(&s->fd);
        s->fd = -1;
}

int glove_launch_outcome_status(const struct glove_sandbox_outcome *o, const char *program) {
        switch (o->kind) {
        case GLOVE_SANDBOX_EXITED:
                return o->value;
        case GLOVE_SANDBOX_SIGNALED:
                glove_launch_say("glove: agent.signal: %s was killed by signal %d (%s)\n", program, o->value, strsignal(o->value));
                return 128 + o->value;
        case GLOVE_SANDBOX_EXEC_FAILED:
                if (o->value == ENOENT) {
                        glove_launch_say("glove: exec.not_found: %s (not found in the sandbox's PATH or file system)\n", o->detail);
                        return GLOVE_EXIT_NOT_FOUND;
                }
                glove_launch_say("glove: exec.cannot_execute: %s\n", o->detail);
                return GLOVE_EXIT_CANNOT_EXECUTE;
        case GLOVE_SANDBOX_LOST:
        default:
                glove_launch_say("glove: sandbox.lost: %s\n", o->detail);
                return GLOVE_EXIT_FAILURE;
        }
}

bool glove_launch_is_stop_signal(int sig) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(glove_launch_stop_signals); i++)
                if (glove_launch_stop_signals[i] == sig)
                        return true;
        return false;
}

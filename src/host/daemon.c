/* SPDX-License-Identifier: Apache-2.0 */
/* glove daemon (see glove/host/daemon.h, docs/daemon.md). */
#include "glove/host/daemon.h"
#include "glove/host/exposures.h"
#include "glove/host/dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "shown.h"
#include "units.h"

extern char **environ;

#define EXIT_NOT_ACTIVE 3
#define EXIT_FAILED 1
#define EXIT_USAGE 125

static const char usage_text[] =
        "Usage: glove daemon COMMAND [OPTIONS]\n"
        "\n"
        "Installs and controls gloved as a systemd user service (gloved.service,\n"
        "optionally socket-activated by gloved.socket). gloved is the one next to\n"
        "this glove (for a glove in a build tree, an installed gloved in PATH when\n"
        "there is one); the unit binds it to the XDG directories and the session\n"
        "policy.\n"
        "\n"
        "Commands:\n"
        "  install [--socket] [--write-only]\n"
        "                     write the unit(s) atomically, then have your systemd\n"
        "                     user manager reload and enable them (gloved.socket\n"
        "                     with --socket)\n"
        "  uninstall          disable and stop the units, remove them, daemon-reload\n"
        "  start              start gloved.socket when installed, else gloved.service\n"
        "  stop               stop gloved.service and gloved.socket (managed sessions\n"
        "                     keep running and are adopted by the next gloved)\n"
        "  status [--json]    installed, up to date, enabled and active states\n"
        "\n"
        "Without a systemd user manager, start and stop say so (daemon.no_user_manager)\n"
        "and start prints the command that runs gloved directly.\n"
        "\n"
        "Options:\n"
        "  --socket           also install gloved.socket (socket activation)\n"
        "  --write-only       write the unit files only; reload or enable nothing\n"
        "  --json             print the status as one line of JSON\n"
        "  -h, --help         show this help\n"
        "\n"
        "Exit status: 0 done (status: gloved is active), 3 status: not active,\n"
        "1 systemctl or a file operation failed, or no user manager runs, 125 usage or\n"
        "layout error.\n";

/* ---- layout ---- */

static int xdg_dir(const char *env, const char *home_rel, const char *leaf, char **out, struct glove_error *err) {
        const char *base = getenv(env);
        const char *home = getenv("HOME");
        _cleanup_free_ char *joined = NULL;
        int n;
        if (base && base[0] == '/')
                n = asprintf(&joined, "%s/%s", base, leaf);
        else if (home_rel && home && home[0] == '/')
                n = asprintf(&joined, "%s/%s/%s", home, home_rel, leaf);
        else if (!home_rel)
                /* As glove setup says it (host.no_runtime_dir). */
                return glove_error_set(err, EINVAL, "daemon.no_default_dir",
                                       "$%s is not set to an absolute path; gloved keeps its socket there: log in "
                                       "through a session that sets it (pam_systemd: /run/user/%u), or set %s to an "
                                       "owner-only directory of yours",
                                       env, (unsigned)geteuid(), env);
        else
                return glove_error_set(err, EINVAL, "daemon.no_default_dir",
                                       "$%s is not set to an absolute path and $HOME is not absolute either", env);
        if (n < 0) {
                joined = NULL;
                return glove_error_set(err, ENOMEM, "daemon.no_default_dir", "out of memory");
        }
        return glove_path_normalize(joined, "/", out, err);
}

static int join(char **out, const char *dir, const char *name) {
        if (asprintf(out, "%s/%s", dir, name) < 0) {
                *out = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* check_gloved: 0 when path is a regular executable file, owned by root or
 * the caller, not writable by group or others; else -errno with err set
 * ("daemon.no_gloved"). */
static int check_gloved(const char *path, struct glove_error *err) {
        _cleanup_close_ int fd = -1;
        struct glove_error oe = { 0 };
        int r = glove_fd_open_nofollow(path, O_PATH, &fd, &oe);
        if (r < 0)
                return glove_error_set(err, -r, "daemon.no_gloved",
                                       "%s: gloved must be installed next to glove: %s", path, strerror(-r));
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
                return glove_error_set(err, EPERM, "daemon.no_gloved", "%s is not an executable regular file", path);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return glove_error_set(err, EPERM, "daemon.no_gloved",
                                       "%s is writable by group or others (mode %04o); fix: chmod go-w %s", path,
                                       (unsigned)(st.st_mode & 07777), path);
        if (st.st_uid != 0 && st.st_uid != geteuid())
                return glove_error_set(err, EPERM, "daemon.no_gloved", "%s is owned by uid %u, neither root nor you",
                                       path, (unsigned)st.st_uid);
        return 0;
}

/* is_build_tree: dir (absolute, with a trailing slash) is the top of a meson
 * build directory (it holds build.ninja and meson-private/). */
static bool is_build_tree(const char *dir) {
        char p[PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(p, sizeof(p), "%sbuild.ninja", dir) >= sizeof(p) || lstat(p, &st) < 0 ||
            !S_ISREG(st.st_mode))
                return false;
        return (size_t)snprintf(p, sizeof(p), "%smeson-private", dir) < sizeof(p) && lstat(p, &st) == 0 &&
               S_ISDIR(st.st_mode);
}

/* installed_gloved: the first DIR/gloved of $PATH (absolute entries only)
 * that passes check_gloved, whose DIR is no build tree and is owned by root
 * or the caller and not writable by group or others; NULL when none (or out
 * of memory). Owned by the caller. */
static char *installed_gloved(void) {
        const char *path = getenv("PATH");
        if (!path)
                return NULL;
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return NULL;
        char *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                if (d[0] != '/')
                        continue;
                char dir[PATH_MAX];
                size_t n = strlen(d);
                if ((size_t)snprintf(dir, sizeof(dir), "%s%s", d, d[n - 1] == '/' ? "" : "/") >= sizeof(dir) ||
                    is_build_tree(dir))
                        continue;
                struct stat st;
                if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
                    (st.st_uid != 0 && st.st_uid != geteuid()))
                        continue;
                char *cand = NULL;
                if (asprintf(&cand, "%sgloved", dir) < 0)
                        return NULL;
                struct glove_error ignored = { 0 };
                if (check_gloved(cand, &ignored) == 0)
                        return cand;
                free(cand);
        }
        return NULL;
}

static int resolve_gloved(const char *self_exe, char **out, char **build_tree, struct glove_error *err) {
        char self[PATH_MAX];
        if (!self_exe) {
                ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
                if (n < 0 || (size_t)n >= sizeof(self) - 1)
                        return glove_error_set(err, n < 0 ? errno : ENAMETOOLONG, "daemon.no_gloved",
                                               "cannot read /proc/self/exe");
                self[n] = '\0';
        } else if ((size_t)snprintf(self, sizeof(self), "%s", self_exe) >= sizeof(self)) {
                return glove_error_set(err, ENAMETOOLONG, "daemon.no_gloved", "%s: path too long", self_exe);
        }
        char *slash = strrchr(self, '/');
        if (self[0] != '/' || !slash)
                return glove_error_set(err, EINVAL, "daemon.no_gloved", "%s is not an absolute path", self);
        slash[1] = '\0';
        if (is_build_tree(self)) {
                /* make clean removes a build tree's gloved: prefer an
                 * installed one. */
                slash[0] = '\0';
                *build_tree = strdup(self);
                slash[0] = '/';
                if (!*build_tree)
                        return glove_error_set(err, ENOMEM, "daemon.no_gloved", "out of memory");
                char *inst = installed_gloved();
                if (inst) {
                        *out = inst;
                        return 0;
                }
        }
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%sgloved", self) < 0) {
                path = NULL;
                return glove_error_set(err, ENOMEM, "daemon.no_gloved", "out of memory");
        }
        int r = check_gloved(path, err);
        if (r < 0)
                return r;
        *out = TAKE_PTR(path);
        return 0;
}

void glove_host_daemon_layout_free(struct glove_host_daemon_layout *l) {
        char **all[] = { &l->gloved, &l->build_tree, &l->unit_dir, &l->runtime_dir, &l->state_dir, &l->config_dir,
                         &l->policy, &l->store, &l->mroot, &l->listen, &l->exposure_policy, &l->exposure_journal };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(all); i++) {
                free(*all[i]);
                *all[i] = NULL;
        }
}

int glove_host_daemon_layout_resolve(const char *self_exe, struct glove_host_daemon_layout *l,
                                     struct glove_error *err) {
        *l = (struct glove_host_daemon_layout){ 0 };
        int r = resolve_gloved(self_exe, &l->gloved, &l->build_tree, err);
        if (r == 0)
                r = xdg_dir("XDG_CONFIG_HOME", ".config", "systemd/user", &l->unit_dir, err);
        if (r == 0)
                r = xdg_dir("XDG_CONFIG_HOME", ".config", "glove", &l->config_dir, err);
        if (r == 0)
                r = xdg_dir("XDG_STATE_HOME", ".local/state", "glove", &l->state_dir, err);
        if (r == 0)
                r = xdg_dir("XDG_RUNTIME_DIR", NULL, "glove", &l->runtime_dir, err);
        if (r == 0 && (join(&l->policy, l->config_dir, GLOVE_HOST_POLICY_NAME) < 0 ||
                       join(&l->store, l->state_dir, GLOVE_HOST_STORE_NAME) < 0 ||
                       join(&l->mroot, l->state_dir, GLOVE_HOST_MROOT_NAME) < 0 ||
                       join(&l->listen, l->runtime_dir, GLOVE_HOST_SOCKET_NAME) < 0))
                r = glove_error_set(err, ENOMEM, "daemon.no_default_dir", "out of memory");
        /* Exposures only when the owner approved roots (glove setup
         * --path-root wrote the policy): gloved then also needs a journal. */
        if (r == 0) {
                _cleanup_free_ char *xp = NULL;
                struct stat st;
                if (join(&xp, l->config_dir, GLOVE_HOST_EXPOSURE_POLICY_FILE) < 0)
                        r = glove_error_set(err, ENOMEM, "daemon.no_default_dir", "out of memory");
                else if (lstat(xp, &st) == 0) {
                        if (join(&l->exposure_journal, l->state_dir, GLOVE_HOST_EXPOSURE_JOURNAL_FILE) < 0)
                                r = glove_error_set(err, ENOMEM, "daemon.no_default_dir", "out of memory");
                        else
                                l->exposure_policy = TAKE_PTR(xp);
                }
        }
        if (r < 0)
                glove_host_daemon_layout_free(l);
        return r;
}

/* ---- rendering ---- */

int glove_host_systemd_quote(const char *word, char **out, struct glove_error *err) {
        size_t n = strlen(word);
        bool plain = n > 0;
        if (n == 0 || n > PATH_MAX)
                return glove_error_set(err, EINVAL, "daemon.bad_path", "an empty or overlong command-line word");
        for (const unsigned char *p = (const unsigned char *)word; *p; p++) {
                if (*p < 0x20 || *p == 0x7f)
                        return glove_error_set(err, EINVAL, "daemon.bad_path",
                                               "%s: control characters cannot be written to a unit", word);
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      strchr("/._:,+=@-", *p)))
                        plain = false;
        }
        char *buf = malloc(2 * n + 3);
        if (!buf)
                return glove_error_set(err, ENOMEM, "daemon.bad_path", "out of memory");
        char *w = buf;
        if (!plain)
                *w++ = '"';
        for (const char *p = word; *p; p++) {
                if (*p == '%' || *p == '$')
                        *w++ = *p;
                else if (*p == '\\' || *p == '"')
                        *w++ = '\\';
                *w++ = *p;
        }
        if (!plain)
                *w++ = '"';
        *w = '\0';
        *out = buf;
        return 0;
}

/* Replaces each @KEY@ of tmpl by its value; every key must be known. */
static int substitute(const char *tmpl, const char *const kv[][2], size_t nkv, char **out, struct glove_error *err) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        _cleanup_fclose_ FILE *f = open_memstream(&buf, &len);
        if (!f)
                return glove_error_set(err, ENOMEM, "daemon.render", "out of memory");
        for (const char *p = tmpl; *p;) {
                const char *at = strchr(p, '@');
                const char *end = at ? strchr(at + 1, '@') : NULL;
                if (!at || !end) {
                        fputs(p, f);
                        break;
                }
                fwrite(p, 1, (size_t)(at - p), f);
                size_t kl = (size_t)(end - at - 1);
                size_t i;
                for (i = 0; i < nkv; i++)
                        if (strlen(kv[i][0]) == kl && strncmp(kv[i][0], at + 1, kl) == 0)
                                break;
                if (i == nkv)
                        return glove_error_set(err, EINVAL, "daemon.render", "unknown template key %.*s", (int)kl,
                                               at + 1);
                fputs(kv[i][1], f);
                p = end + 1;
        }
        if (fclose(f) != 0) {
                f = NULL;
                return glove_error_set(err, ENOMEM, "daemon.render", "out of memory");
        }
        f = NULL;
        if (len > GLOVE_HOST_UNIT_MAX)
                return glove_error_set(err, E2BIG, "daemon.render", "the unit would be %zu bytes (at most %u)", len,
                                       GLOVE_HOST_UNIT_MAX);
        *out = TAKE_PTR(buf);
        return 0;
}

/* One word quoted for a POSIX shell: plain as for systemd, else in single
 * quotes (a ' written '\''). Control characters are refused as for a unit. */
static int shell_quote(const char *word, char **out, struct glove_error *err) {
        _cleanup_free_ char *plain = NULL;
        int r = glove_host_systemd_quote(word, &plain, err);
        if (r < 0)
                return r;
        if (plain[0] != '"') {
                *out = TAKE_PTR(plain);
                return 0;
        }
        char *buf = malloc(4 * strlen(word) + 3);
        if (!buf)
                return glove_error_set(err, ENOMEM, "daemon.render", "out of memory");
        char *w = buf;
        *w++ = '\'';
        for (const char *p = word; *p; p++) {
                if (*p == '\'') {
                        memcpy(w, "'\\''", 4);
                        w += 4;
                } else
                        *w++ = *p;
        }
        *w++ = '\'';
        *w = '\0';
        *out = buf;
        return 0;
}

int glove_host_daemon_command_line(const struct glove_host_daemon_layout *l, enum glove_host_quoting quoting,
                                   char **out, struct glove_error *err) {
        const char *words[] = { l->gloved,
                                "--runtime-dir", l->runtime_dir,
                                "--state-dir", l->state_dir,
                                "--session-policy", l->policy,
                                "--session-store", l->store,
                                "--materialization-root", l->mroot,
                                "--path-exposure-policy", l->exposure_policy,
                                "--path-exposure-journal", l->exposure_journal };
        const size_t n_words = l->exposure_policy && l->exposure_journal ? GLOVE_ELEMENTSOF(words)
                                                                         : GLOVE_ELEMENTSOF(words) - 4;
        /* systemd reads "$$" and backslash escapes back in arguments but not
         * in the executable's name: such a name would make the unit run
         * another file than the one install checked. */
        const char *bad = quoting == GLOVE_HOST_QUOTE_SYSTEMD ? strpbrk(l->gloved, "$\"'\\") : NULL;
        if (bad)
                return glove_error_set(err, EINVAL, "daemon.bad_path",
                                       "%s: a unit cannot name an executable whose path holds '%c' (systemd would run "
                                       "another path); install glove and gloved in a directory without $, quotes or "
                                       "backslashes",
                                       l->gloved, *bad);
        _cleanup_free_ char *exec = NULL;
        size_t len = 0;
        _cleanup_fclose_ FILE *f = open_memstream(&exec, &len);
        if (!f)
                return glove_error_set(err, ENOMEM, "daemon.render", "out of memory");
        for (size_t i = 0; i < n_words; i++) {
                _cleanup_free_ char *q = NULL;
                int r = quoting == GLOVE_HOST_QUOTE_SYSTEMD ? glove_host_systemd_quote(words[i], &q, err)
                                                            : shell_quote(words[i], &q, err);
                if (r < 0)
                        return r;
                fprintf(f, "%s%s", i ? " " : "", q);
        }
        if (fclose(f) != 0) {
                f = NULL;
                return glove_error_set(err, ENOMEM, "daemon.render", "out of memory");
        }
        f = NULL;
        *out = TAKE_PTR(exec);
        return 0;
}

int glove_host_daemon_render_service(const struct glove_host_daemon_layout *l, unsigned systemd_version,
                                     char **out, struct glove_error *err) {
        _cleanup_free_ char *exec = NULL;
        int r = glove_host_daemon_command_line(l, GLOVE_HOST_QUOTE_SYSTEMD, &exec, err);
        if (r < 0)
                return r;
        char subgroup[256];
        if (systemd_version >= GLOVE_HOST_SYSTEMD_SUBGROUP_MIN)
                snprintf(subgroup, sizeof(subgroup), "DelegateSubgroup=%s", GLOVE_HOST_DELEGATE_SUBGROUP);
        else
                snprintf(subgroup, sizeof(subgroup),
                         "# No DelegateSubgroup=%s: it needs systemd >= %u and this manager is %s%u;\n"
                         "# gloved runs in the delegated unit cgroup itself.",
                         GLOVE_HOST_DELEGATE_SUBGROUP, GLOVE_HOST_SYSTEMD_SUBGROUP_MIN,
                         systemd_version ? "" : "unknown, taken as ", systemd_version);
        const char *const kv[][2] = { { "VERSION", GLOVE_VERSION }, { "EXEC_START", exec },
                                      { "DELEGATE_SUBGROUP", subgroup } };
        return substitute(glove_text_gloved_service_in, kv, GLOVE_ELEMENTSOF(kv), out, err);
}

int glove_host_daemon_render_socket(const struct glove_host_daemon_layout *l, char **out, struct glove_error *err) {
        if (strlen(l->listen) >= sizeof(((struct sockaddr_un *)0)->sun_path))
                return glove_error_set(err, ENAMETOOLONG, "daemon.bad_path",
                                       "%s is longer than a Unix socket path may be", l->listen);
        _cleanup_free_ char *listen = malloc(2 * strlen(l->listen) + 1);
        if (!listen)
                return glove_error_set(err, ENOMEM, "daemon.render", "out of memory");
        char *w = listen;
        for (const unsigned char *p = (const unsigned char *)l->listen; *p; p++) {
                if (*p <= 0x20 || *p == 0x7f || *p == '\\')
                        return glove_error_set(err, EINVAL, "daemon.bad_path",
                                               "%s: a socket path with whitespace, control characters or a "
                                               "backslash cannot be written to ListenStream=", l->listen);
                if (*p == '%')
                        *w++ = '%';
                *w++ = (char)*p;
        }
        *w = '\0';
        const char *const kv[][2] = { { "VERSION", GLOVE_VERSION }, { "LISTEN_STREAM", listen } };
        return substitute(glove_text_gloved_socket_in, kv, GLOVE_ELEMENTSOF(kv), out, err);
}

/* ---- systemctl ---- */

static const char *systemctl_path(void) {
        static const char *const cands[] = { "/usr/bin/systemctl", "/bin/systemctl" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(cands); i++) {
                struct stat st;
                if (stat(cands[i], &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR))
                        return cands[i];
        }
        return NULL;
}

static void read_memfd(int fd, char *out, size_t cap) {
        out[0] = '\0';
        if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0)
                return;
        ssize_t n = pread(fd, out, cap - 1, 0);
        out[n > 0 ? n : 0] = '\0';
        /* Trim the trailing newlines. */
        for (size_t l = strlen(out); l && (out[l - 1] == '\n' || out[l - 1] == ' '); l--)
                out[l - 1] = '\0';
}

/*
 * Runs systemctl with args (NULL-terminated, after "systemctl"), stdin
 * /dev/null. With out (and errout), its stdout (stderr) is captured, at
 * most GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX bytes; without, they pass through.
 * Returns its exit status (0..255), or -errno when it could not be run.
 */
static int systemctl(const char *const *args, char *out, char *errout) {
        const char *path = systemctl_path();
        if (!path)
                return -ENOENT;
        const char *argv[16] = { "systemctl" };
        size_t n = 1;
        for (; args[n - 1] && n < GLOVE_ELEMENTSOF(argv) - 1; n++)
                argv[n] = args[n - 1];
        argv[n] = NULL;
        _cleanup_close_ int ofd = out ? memfd_create("systemctl-out", MFD_CLOEXEC) : -1;
        _cleanup_close_ int efd = errout ? memfd_create("systemctl-err", MFD_CLOEXEC) : -1;
        if ((out && ofd < 0) || (errout && efd < 0))
                return -errno;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        if (ofd >= 0)
                posix_spawn_file_actions_adddup2(&fa, ofd, 1);
        if (efd >= 0)
                posix_spawn_file_actions_adddup2(&fa, efd, 2);
        pid_t pid;
        int r = posix_spawn(&pid, path, &fa, NULL, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                return -r;
        int ws;
        while (waitpid(pid, &ws, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (out)
                read_memfd(ofd, out, GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX);
        if (errout)
                read_memfd(efd, errout, GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX);
        return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* The manager's version from `systemctl --version` ("systemd 252 (...)"); 0
 * when it cannot be told. */
static unsigned systemd_version(void) {
        char out[GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX], errout[GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX];
        const char *args[] = { "--version", NULL };
        if (systemctl(args, out, errout) != 0 || strncmp(out, "systemd ", 8) != 0)
                return 0;
        char *end;
        unsigned long v = strtoul(out + 8, &end, 10);
        return end != out + 8 && v < 100000 ? (unsigned)v : 0;
}

/* Runs systemctl --user ARGS, passing its output through; prints the
 * command and why when it fails. Returns 0 or -1. */
static int user_systemctl(const char *a1, const char *a2, const char *a3, const char *a4) {
        const char *args[] = { "--user", a1, a2, a3, a4, NULL };
        int r = systemctl(args, NULL, NULL);
        if (r == 0)
                return 0;
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "systemctl --user %s%s%s%s%s%s", a1, a2 ? " " : "", a2 ? a2 : "", a3 ? " " : "",
                 a3 ? a3 : "", a4 ? " ..." : "");
        if (r < 0)
                fprintf(stderr, "glove: daemon.systemctl_failed: %s: cannot run systemctl: %s\n", cmd, strerror(-r));
        else
                fprintf(stderr, "glove: daemon.systemctl_failed: %s exited with status %d\n", cmd, r);
        return -1;
}

/* 0 when a Unix socket at dir/name accepts a connection, else -errno. */
static int socket_answers(const char *dir, const char *name) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        return connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
}

/*
 * True when `systemctl --user` certainly has no manager to talk to, with
 * why (at most cap bytes): it connects to $XDG_RUNTIME_DIR/systemd/private,
 * else to the session bus ($DBUS_SESSION_BUS_ADDRESS, else
 * $XDG_RUNTIME_DIR/bus). False when one of them answers, or when
 * $DBUS_SESSION_BUS_ADDRESS names a bus this cannot judge (systemctl then
 * says itself). Connects only: nothing is sent.
 */
static bool no_user_manager(char *why, size_t cap) {
        const char *rt = getenv("XDG_RUNTIME_DIR");
        const char *bus = getenv("DBUS_SESSION_BUS_ADDRESS");
        bool no_bus_var = !bus || !bus[0];
        if (!rt || rt[0] != '/') {
                if (!no_bus_var)
                        return false;
                snprintf(why, cap, "neither $XDG_RUNTIME_DIR nor $DBUS_SESSION_BUS_ADDRESS is set");
                return true;
        }
        int priv = socket_answers(rt, "systemd/private");
        if (priv == 0 || !no_bus_var)
                return false;
        int sess = socket_answers(rt, "bus");
        if (sess == 0)
                return false;
        snprintf(why, cap, "%s/systemd/private: %s; %s/bus: %s; $DBUS_SESSION_BUS_ADDRESS is not set", rt,
                 strerror(-priv), rt, strerror(-sess));
        return true;
}

/* ---- files ---- */

/* Opens dir (creating missing components 0700), walking without following
 * links; refuses a final directory that is not yours or is writable by
 * group or others (anyone who can write there can replace the unit). */
static int open_unit_dir(const char *dir, bool create, int *out, struct glove_error *err) {
        _cleanup_close_ int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return glove_error_set(err, errno, "daemon.unit_dir", "/: %s", strerror(errno));
        const char *p = dir + 1;
        char comp[256];
        while (*p) {
                const char *end = strchrnul(p, '/');
                size_t n = (size_t)(end - p);
                if (n >= sizeof(comp))
                        return glove_error_set(err, ENAMETOOLONG, "daemon.unit_dir", "%s: component too long", dir);
                memcpy(comp, p, n);
                comp[n] = '\0';
                if (create && mkdirat(cur, comp, 0700) < 0 && errno != EEXIST)
                        return glove_error_set(err, errno, "daemon.unit_dir", "%s: cannot create %s: %s", dir, comp,
                                               strerror(errno));
                int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return glove_error_set(err, errno == ENOTDIR ? ELOOP : errno, "daemon.unit_dir",
                                               "%s: %s: %s", dir, comp,
                                               errno == ENOENT ? "missing" : "not a directory or a symbolic link");
                close(cur);
                cur = next;
                p = *end ? end + 1 : end;
        }
        struct stat st;
        if (fstat(cur, &st) < 0)
                return glove_error_set(err, errno, "daemon.unit_dir", "%s: %s", dir, strerror(errno));
        if (st.st_uid != geteuid())
                return glove_error_set(err, EPERM, "daemon.unit_dir", "%s is owned by uid %u, not by you (uid %u)", dir,
                                       (unsigned)st.st_uid, (unsigned)geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return glove_error_set(err, EPERM, "daemon.unit_dir",
                                       "%s is writable by group or others (mode %04o); fix: chmod go-w %s", dir,
                                       (unsigned)(st.st_mode & 07777), dir);
        int fd = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "daemon.unit_dir", "%s: %s", dir, strerror(errno));
        *out = fd;
        return 0;
}

/* Reads name in dirfd (at most GLOVE_HOST_UNIT_MAX bytes): 0 and *out, or
 * -ENOENT when absent. */
static int read_unit(int dirfd, const char *name, char **out) {
        size_t len;
        struct glove_error e = { 0 };
        return glove_file_read_bounded(dirfd, name, O_NOFOLLOW | O_NONBLOCK, GLOVE_HOST_UNIT_MAX, out, &len, &e);
}

/* Writes text as dirfd/name: a temporary file, fsync, rename, fsync of the
 * directory. Returns 0, 1 when the file already held exactly text, or <0. */
static int write_unit(int dirfd, const char *dir, const char *name, const char *text, struct glove_error *err) {
        _cleanup_free_ char *old = NULL;
        if (read_unit(dirfd, name, &old) == 0 && strcmp(old, text) == 0)
                return 1;
        int r = glove_host_file_write_atomic_mode(dirfd, name, text, strlen(text), 0644, true, err);
        if (r < 0)
                glove_error_prefix(err, "%s", dir);
        return r;
}

static bool unit_exists(int dirfd, const char *name) {
        struct stat st;
        return dirfd >= 0 && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* ---- commands ---- */

static int fail(const struct glove_error *e, int code) {
        fprintf(stderr, "glove: %s: %s\n", e->code, host_shown(e->message));
        return code;
}

static int cmd_install(const struct glove_host_daemon_layout *l, bool socket, bool write_only) {
        struct glove_error err = { 0 };
        struct stat st;
        if (stat(l->policy, &st) < 0) {
                fprintf(stderr,
                        "glove: daemon.no_policy: %s: %s; the unit binds gloved to it: run glove setup first\n",
                        l->policy, strerror(errno));
                return EXIT_USAGE;
        }
        /* `systemctl --version` talks to no manager: --write-only asks it
         * too, so what it writes is what status compares with. */
        unsigned version = systemd_version();
        _cleanup_free_ char *service = NULL, *sock = NULL;
        if (glove_host_daemon_render_service(l, version, &service, &err) < 0 ||
            (socket && glove_host_daemon_render_socket(l, &sock, &err) < 0))
                return fail(&err, EXIT_USAGE);
        _cleanup_close_ int dfd = -1;
        if (open_unit_dir(l->unit_dir, true, &dfd, &err) < 0)
                return fail(&err, EXIT_FAILED);
        if (!socket && unit_exists(dfd, GLOVE_HOST_DAEMON_SOCKET)) {
                /* An earlier install --socket: this install drops activation. */
                if (!write_only)
                        (void)user_systemctl("disable", "--now", GLOVE_HOST_DAEMON_SOCKET, NULL);
                if (unlinkat(dfd, GLOVE_HOST_DAEMON_SOCKET, 0) < 0 && errno != ENOENT) {
                        fprintf(stderr, "glove: daemon.write: %s/%s: %s\n", l->unit_dir, GLOVE_HOST_DAEMON_SOCKET,
                                strerror(errno));
                        return EXIT_FAILED;
                }
                printf("removed %s/%s\n", l->unit_dir, GLOVE_HOST_DAEMON_SOCKET);
        }
        int r = write_unit(dfd, l->unit_dir, GLOVE_HOST_DAEMON_SERVICE, service, &err);
        if (r < 0)
                return fail(&err, EXIT_FAILED);
        printf("%s %s/%s (gloved %s)\n", r ? "unchanged" : "wrote", l->unit_dir, GLOVE_HOST_DAEMON_SERVICE, l->gloved);
        if (l->build_tree) {
                size_t n = strlen(l->build_tree);
                if (strncmp(l->gloved, l->build_tree, n) == 0 && l->gloved[n] == '/')
                        fprintf(stderr,
                                "glove: warning: daemon.build_tree_gloved: the unit runs %s, inside the build tree "
                                "%s, which make clean removes (the service then fails to start); to avoid it: make "
                                "install (PREFIX/bin in PATH), then glove daemon install again\n",
                                l->gloved, l->build_tree);
                else
                        printf("gloved: the installed %s, found in PATH, not the build tree's %s/gloved\n", l->gloved,
                               l->build_tree);
        }
        if (socket) {
                r = write_unit(dfd, l->unit_dir, GLOVE_HOST_DAEMON_SOCKET, sock, &err);
                if (r < 0)
                        return fail(&err, EXIT_FAILED);
                printf("%s %s/%s (listening on %s)\n", r ? "unchanged" : "wrote", l->unit_dir,
                       GLOVE_HOST_DAEMON_SOCKET, l->listen);
        }
        if (version && version < GLOVE_HOST_SYSTEMD_SUBGROUP_MIN)
                printf("systemd %u: no DelegateSubgroup= (needs %u); gloved runs in the delegated unit cgroup\n",
                       version, GLOVE_HOST_SYSTEMD_SUBGROUP_MIN);
        if (write_only)
                return 0;
        if (user_systemctl("daemon-reload", NULL, NULL, NULL) < 0 ||
            user_systemctl("enable", socket ? GLOVE_HOST_DAEMON_SOCKET : GLOVE_HOST_DAEMON_SERVICE, NULL, NULL) < 0) {
                fprintf(stderr, "glove: the unit files are in place; once a user manager runs, "
                                "run glove daemon install again\n");
                return EXIT_FAILED;
        }
        printf("enabled %s; start it with: glove daemon start\n",
               socket ? GLOVE_HOST_DAEMON_SOCKET : GLOVE_HOST_DAEMON_SERVICE);
        return 0;
}

static int cmd_uninstall(const struct glove_host_daemon_layout *l) {
        struct glove_error err = { 0 };
        _cleanup_close_ int dfd = -1;
        if (open_unit_dir(l->unit_dir, false, &dfd, &err) < 0 && err.errnum != ENOENT)
                return fail(&err, EXIT_FAILED);
        bool had_socket = unit_exists(dfd, GLOVE_HOST_DAEMON_SOCKET);
        bool had_service = unit_exists(dfd, GLOVE_HOST_DAEMON_SERVICE);
        int rc = 0;
        if ((had_socket || had_service) &&
            user_systemctl("disable", "--now", had_socket ? GLOVE_HOST_DAEMON_SOCKET : GLOVE_HOST_DAEMON_SERVICE,
                           had_socket && had_service ? GLOVE_HOST_DAEMON_SERVICE : NULL) < 0)
                rc = EXIT_FAILED;
        const char *names[] = { GLOVE_HOST_DAEMON_SOCKET, GLOVE_HOST_DAEMON_SERVICE };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(names); i++) {
                if (!unit_exists(dfd, names[i]))
                        continue;
                if (unlinkat(dfd, names[i], 0) < 0) {
                        fprintf(stderr, "glove: daemon.write: %s/%s: %s\n", l->unit_dir, names[i], strerror(errno));
                        return EXIT_FAILED;
                }
                printf("removed %s/%s\n", l->unit_dir, names[i]);
        }
        if (!had_socket && !had_service) {
                printf("not installed: no %s in %s\n", GLOVE_HOST_DAEMON_SERVICE, l->unit_dir);
                return 0;
        }
        if (dfd >= 0)
                (void)fsync(dfd);
        if (user_systemctl("daemon-reload", NULL, NULL, NULL) < 0)
                rc = EXIT_FAILED;
        return rc;
}

/* Prints daemon.no_user_manager for start (with the command that runs
 * gloved without one) or stop; returns EXIT_FAILED. */
static int no_manager_error(const struct glove_host_daemon_layout *l, bool start, const char *why) {
        if (!start) {
                fprintf(stderr,
                        "glove: daemon.no_user_manager: no systemd user manager runs for uid %u (%s), so no %s runs "
                        "to stop; a gloved you ran yourself stops on SIGTERM (kill its pid)\n",
                        (unsigned)geteuid(), why, GLOVE_HOST_DAEMON_SERVICE);
                return EXIT_FAILED;
        }
        struct glove_error err = { 0 };
        _cleanup_free_ char *cmd = NULL;
        if (glove_host_daemon_command_line(l, GLOVE_HOST_QUOTE_SHELL, &cmd, &err) < 0)
                return fail(&err, EXIT_FAILED);
        fprintf(stderr,
                "glove: daemon.no_user_manager: no systemd user manager runs for uid %u (%s), so %s cannot be "
                "started; log in through a session that starts one (pam_systemd; loginctl enable-linger for one "
                "that outlives the login), or run gloved directly (glove setup first): %s\n",
                (unsigned)geteuid(), why, GLOVE_HOST_DAEMON_SERVICE, cmd);
        return EXIT_FAILED;
}

static int cmd_start_stop(const struct glove_host_daemon_layout *l, bool start) {
        struct glove_error err = { 0 };
        char why[PATH_MAX * 2 + 256];
        if (no_user_manager(why, sizeof(why)))
                return no_manager_error(l, start, why);
        _cleanup_close_ int dfd = -1;
        if (open_unit_dir(l->unit_dir, false, &dfd, &err) < 0 && err.errnum != ENOENT)
                return fail(&err, EXIT_FAILED);
        bool socket = unit_exists(dfd, GLOVE_HOST_DAEMON_SOCKET);
        if (start && !unit_exists(dfd, GLOVE_HOST_DAEMON_SERVICE)) {
                fprintf(stderr, "glove: daemon.not_installed: no %s/%s; run glove daemon install first\n",
                        l->unit_dir, GLOVE_HOST_DAEMON_SERVICE);
                return EXIT_FAILED;
        }
        int r = start ? user_systemctl("start", socket ? GLOVE_HOST_DAEMON_SOCKET : GLOVE_HOST_DAEMON_SERVICE, NULL,
                                       NULL)
                      : user_systemctl("stop", GLOVE_HOST_DAEMON_SERVICE, socket ? GLOVE_HOST_DAEMON_SOCKET : NULL,
                                       NULL);
        return r < 0 ? EXIT_FAILED : 0;
}

/* One unit's status into obj: installed, up_to_date, enabled, active. */
static void unit_status(int dfd, const char *name, const char *expected, json_t *obj, char *why, size_t whycap,
                        bool *active) {
        _cleanup_free_ char *text = NULL;
        bool installed = dfd >= 0 && read_unit(dfd, name, &text) == 0;
        json_object_set_new(obj, "installed", json_boolean(installed));
        json_object_set_new(obj, "up_to_date", installed && expected ? json_boolean(strcmp(text, expected) == 0)
                                                                     : json_null());
        /* is-active answers for any unit name, so its silence means the
         * manager could not be asked; is-enabled is silent for a unit the
         * manager does not know. */
        const char *verbs[] = { "is-active", "is-enabled" };
        const char *keys[] = { "active", "enabled" };
        for (size_t i = 0; i < 2; i++) {
                char out[GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX], errout[GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX];
                const char *args[] = { "--user", verbs[i], name, NULL };
                int r = systemctl(args, out, errout);
                bool known = r >= 0 && out[0] && !strchr(out, '\n') && strlen(out) < 64;
                json_object_set_new(obj, keys[i], json_string(known ? out : "unknown"));
                if (i == 0 && !known && !why[0])
                        snprintf(why, whycap, "%s", r < 0 ? strerror(-r) : errout[0] ? errout : "no answer");
                if (i == 0 && known && strcmp(out, "active") == 0)
                        *active = true;
        }
}

static int cmd_status(const struct glove_host_daemon_layout *l, bool as_json) {
        struct glove_error err = { 0 };
        _cleanup_close_ int dfd = -1;
        if (open_unit_dir(l->unit_dir, false, &dfd, &err) < 0 && err.errnum != ENOENT)
                return fail(&err, EXIT_FAILED);
        unsigned version = systemd_version();
        _cleanup_free_ char *service = NULL, *sock = NULL;
        (void)glove_host_daemon_render_service(l, version, &service, &err);
        (void)glove_host_daemon_render_socket(l, &sock, &err);
        _cleanup_json_ json_t *root = json_object(), *jsvc = json_object(), *jsock = json_object();
        char why[GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX] = "";
        bool svc_active = false, sock_active = false;
        unit_status(dfd, GLOVE_HOST_DAEMON_SERVICE, service, jsvc, why, sizeof(why), &svc_active);
        unit_status(dfd, GLOVE_HOST_DAEMON_SOCKET, sock, jsock, why, sizeof(why), &sock_active);
        json_object_set_new(root, "unit_dir", json_string(l->unit_dir));
        json_object_set_new(root, "gloved", json_string(l->gloved));
        json_object_set_new(root, "listen", json_string(l->listen));
        json_object_set_new(root, "systemd_version", version ? json_integer(version) : json_null());
        json_object_set_new(root, "manager", json_string(why[0] ? "unreachable" : "reachable"));
        if (why[0])
                json_object_set_new(root, "manager_error", json_string(why));
        json_object_set(root, "service", jsvc);
        json_object_set(root, "socket", jsock);
        if (as_json) {
                _cleanup_free_ char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
                if (!s)
                        return EXIT_FAILED;
                puts(s);
        } else {
                json_t *u[] = { jsvc, jsock };
                const char *names[] = { GLOVE_HOST_DAEMON_SERVICE, GLOVE_HOST_DAEMON_SOCKET };
                for (size_t i = 0; i < 2; i++) {
                        bool inst = json_is_true(json_object_get(u[i], "installed"));
                        json_t *utd = json_object_get(u[i], "up_to_date");
                        printf("%s: %s%s, %s, %s\n", names[i], inst ? "installed" : "not installed",
                               !inst ? "" : json_is_true(utd) ? " (up to date)" : " (differs from what install writes now)",
                               json_string_value(json_object_get(u[i], "enabled")),
                               json_string_value(json_object_get(u[i], "active")));
                }
                printf("unit directory: %s\ngloved: %s\n", l->unit_dir, l->gloved);
                if (why[0]) {
                        printf("user manager unreachable: %s\n", why);
                        _cleanup_free_ char *cmd = NULL;
                        if (glove_host_daemon_command_line(l, GLOVE_HOST_QUOTE_SHELL, &cmd, &err) == 0)
                                printf("without one, run gloved directly: %s\n", cmd);
                }
        }
        return svc_active ? 0 : EXIT_NOT_ACTIVE;
}

int glove_host_daemon_main(int argc, char **argv) {
        enum { OPT_SOCKET = 256, OPT_WRITE_ONLY, OPT_JSON };
        static const struct option longopts[] = {
                { "socket", no_argument, NULL, OPT_SOCKET },
                { "write-only", no_argument, NULL, OPT_WRITE_ONLY },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        bool socket = false, write_only = false, as_json = false, help = false;
        const char *cmd = NULL;
        optind = 1;
        opterr = 0;
        for (;;) {
                int c = getopt_long(argc, argv, "+h", longopts, NULL);
                if (c == -1) {
                        if (optind >= argc)
                                break;
                        if (cmd) {
                                fprintf(stderr, "glove: usage.unknown_option: unexpected argument \"%s\"; see glove "
                                                "daemon --help\n", argv[optind]);
                                return EXIT_USAGE;
                        }
                        cmd = argv[optind++];
                        continue;
                }
                switch (c) {
                case OPT_SOCKET: socket = true; break;
                case OPT_WRITE_ONLY: write_only = true; break;
                case OPT_JSON: as_json = true; break;
                case 'h': help = true; break;
                default:
                        fprintf(stderr, "glove: usage.unknown_option: bad option %s; see glove daemon --help\n",
                                argv[optind - 1]);
                        return EXIT_USAGE;
                }
        }
        if (help) {
                fputs(usage_text, stdout);
                return 0;
        }
        if (!cmd) {
                fputs("glove: usage.missing_command: no daemon command given; see glove daemon --help\n", stderr);
                return EXIT_USAGE;
        }
        bool is_install = strcmp(cmd, "install") == 0, is_status = strcmp(cmd, "status") == 0;
        if (!is_install && !is_status && strcmp(cmd, "uninstall") && strcmp(cmd, "start") && strcmp(cmd, "stop")) {
                fprintf(stderr, "glove: usage.unknown_command: unknown daemon command \"%s\"; see glove daemon --help\n",
                        cmd);
                return EXIT_USAGE;
        }
        if (((socket || write_only) && !is_install) || (as_json && !is_status)) {
                fprintf(stderr, "glove: usage.unknown_option: %s does not apply to glove daemon %s\n",
                        socket ? "--socket" : write_only ? "--write-only" : "--json", cmd);
                return EXIT_USAGE;
        }
        struct glove_host_daemon_layout l;
        struct glove_error err = { 0 };
        if (glove_host_daemon_layout_resolve(NULL, &l, &err) < 0)
                return fail(&err, EXIT_USAGE);
        int rc;
        if (is_install)
                rc = cmd_install(&l, socket, write_only);
        else if (is_status)
                rc = cmd_status(&l, as_json);
        else if (strcmp(cmd, "uninstall") == 0)
                rc = cmd_uninstall(&l);
        else
                rc = cmd_start_stop(&l, strcmp(cmd, "start") == 0);
        glove_host_daemon_layout_free(&l);
        return rc;
}

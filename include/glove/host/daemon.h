/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove daemon: the per-user systemd unit of gloved (spec architecture.md,
 * "glove daemon ... the Linux unit"; docs/daemon.md).
 *
 * The unit is fixed: its name, gloved's path and every argument come from
 * this host's layout (the directory of the running glove, or an installed
 * gloved in PATH when that glove runs from a build tree; the XDG
 * directories), never from a request. Units are written atomically
 * (temporary file, fsync, rename, fsync of the directory) and systemctl is
 * run by absolute path with an argument vector, never through a shell or
 * PATH.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "glove/base/error.h"

#define GLOVE_HOST_DAEMON_SERVICE "gloved.service"
#define GLOVE_HOST_DAEMON_SOCKET "gloved.socket"
/* Files gloved is bound to, relative to the glove config and state
 * directories ($XDG_CONFIG_HOME/glove, $XDG_STATE_HOME/glove). */
#define GLOVE_HOST_POLICY_NAME "session-policy.json"
#define GLOVE_HOST_STORE_NAME "sessions.journal"
#define GLOVE_HOST_MROOT_NAME "sessions"
#define GLOVE_HOST_SOCKET_NAME "gloved.sock"
/* The first systemd that knows DelegateSubgroup=. */
#define GLOVE_HOST_SYSTEMD_SUBGROUP_MIN 254u
#define GLOVE_HOST_DELEGATE_SUBGROUP "glove-host"
/* Longest unit text written or read back, bytes. */
#define GLOVE_HOST_UNIT_MAX 16384u
/* Longest systemctl output read, bytes (the rest is ignored). */
#define GLOVE_HOST_SYSTEMCTL_OUTPUT_MAX 4096u

/* Where everything is; every member is an owned, absolute, normalized path. */
struct glove_host_daemon_layout {
        char *gloved;      /* gloved next to the running glove, or the installed one (below) */
        char *build_tree;  /* the meson build directory the running glove is in, or NULL */
        char *unit_dir;    /* $XDG_CONFIG_HOME/systemd/user (default ~/.config/systemd/user) */
        char *runtime_dir; /* $XDG_RUNTIME_DIR/glove (required) */
        char *state_dir;   /* $XDG_STATE_HOME/glove (default ~/.local/state/glove) */
        char *config_dir;  /* $XDG_CONFIG_HOME/glove (default ~/.config/glove) */
        char *policy;      /* config_dir/session-policy.json */
        char *store;       /* state_dir/sessions.journal */
        char *mroot;       /* state_dir/sessions (materialization root) */
        char *listen;      /* runtime_dir/gloved.sock (the socket unit's ListenStream=) */
        /* config_dir/exposure-policy.json and state_dir/exposures.journal
         * when that policy exists at resolve time (docs/exposures.md), else
         * both NULL. */
        char *exposure_policy;
        char *exposure_journal;
};

/*
 * Fills *l from the environment of this process. self_exe is the running
 * glove (NULL: /proc/self/exe); gloved is its sibling and must be a regular
 * executable file owned by root or the caller and not writable by group or
 * others. When self_exe's directory is the top of a meson build directory
 * (build.ninja and meson-private/ in it; l->build_tree is then that
 * directory), an installed gloved is preferred, since make clean removes
 * the build tree's: the first DIR/gloved of $PATH passing the same checks
 * whose DIR is absolute, no build tree, owned by root or the caller and not
 * writable by group or others; the sibling only when there is none.
 * Errors (l is left
 * empty): -EINVAL "daemon.no_default_dir" (an XDG variable or HOME missing
 * or relative), -ENOENT/-EPERM "daemon.no_gloved". Free with
 * glove_host_daemon_layout_free.
 */
int glove_host_daemon_layout_resolve(const char *self_exe, struct glove_host_daemon_layout *l,
                                     struct glove_error *err);
void glove_host_daemon_layout_free(struct glove_host_daemon_layout *l);

/*
 * Quotes one word for an ExecStart= line (systemd.service(5) "Command
 * lines"): plain when it is made of [A-Za-z0-9/._:,+=@-] only, else in
 * double quotes with \ and " escaped; % is written %% and $ is written $$
 * so neither specifiers nor variables expand. *out is owned by the caller.
 * -EINVAL "daemon.bad_path" for control characters or an empty word.
 */
int glove_host_systemd_quote(const char *word, char **out, struct glove_error *err);

/* How glove_host_daemon_command_line quotes its words. */
enum glove_host_quoting {
        GLOVE_HOST_QUOTE_SYSTEMD, /* as glove_host_systemd_quote: the unit's ExecStart= */
        GLOVE_HOST_QUOTE_SHELL,   /* for a POSIX shell: plain words bare, others in single quotes */
};

/*
 * The command line gloved runs with for l, one string (*out owned by the
 * caller): l->gloved with --runtime-dir, --state-dir, --session-policy,
 * --session-store and --materialization-root (and, when l->exposure_policy
 * is set, --path-exposure-policy and --path-exposure-journal), the words of gloved.service's
 * ExecStart= (GLOVE_HOST_QUOTE_SYSTEMD, what install writes) or the same
 * words for a shell (GLOVE_HOST_QUOTE_SHELL: what to run by hand without a
 * user manager). Errors: -EINVAL "daemon.bad_path" (a control character in
 * a path; with SYSTEMD also $, quotes or a backslash in gloved's path),
 * -ENOMEM "daemon.render".
 */
int glove_host_daemon_command_line(const struct glove_host_daemon_layout *l, enum glove_host_quoting quoting,
                                   char **out, struct glove_error *err);

/*
 * Renders gloved.service for l. systemd_version is the manager's (0 when
 * unknown): DelegateSubgroup=glove-host is written from 254 on, and a
 * comment saying why not below. *out (NUL-terminated, at most
 * GLOVE_HOST_UNIT_MAX bytes) is owned by the caller.
 */
int glove_host_daemon_render_service(const struct glove_host_daemon_layout *l, unsigned systemd_version,
                                     char **out, struct glove_error *err);

/* Renders gloved.socket (ListenStream=l->listen); -EINVAL "daemon.bad_path"
 * when the path has whitespace or is too long for a Unix socket. */
int glove_host_daemon_render_socket(const struct glove_host_daemon_layout *l, char **out, struct glove_error *err);

/* `glove daemon ...` (argv[0] is "daemon"); returns the exit status:
 * 0 done (status: active), 3 status: not active, 1 systemctl or a file
 * operation failed or no user manager runs (start, stop:
 * daemon.no_user_manager), 125 usage or layout error. */
int glove_host_daemon_main(int argc, char **argv);

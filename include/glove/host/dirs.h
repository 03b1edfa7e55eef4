/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The per-user directories and files of the host tooling (docs/host.md;
 * spec architecture.md, "glove setup"). The defaults are those gloved and
 * `glove ctl` already use (src/server/service_options.c):
 *
 *   config   $XDG_CONFIG_HOME/glove, else $HOME/.config/glove
 *            session-policy.json   the session policy (gloved --session-policy)
 *            config.json           owner-approved path roots (config.h)
 *            exposure-policy.json  the roots of path exposures (exposures.h;
 *                                  gloved --path-exposure-policy)
 *   runtime  $XDG_RUNTIME_DIR/glove (no fallback: gloved has none)
 *            gloved.sock, bootstrap-secret, owner-secret   (gloved)
 *   state    $XDG_STATE_HOME/glove, else $HOME/.local/state/glove
 *            receipt.key, receipts.journal  (receipts.h)
 *            exposures.journal     (gloved --path-exposure-journal)
 *
 * Every directory is owner-only (0700, owned by the user) and every file
 * 0600; glove_store_dir_open_private (store/dirs.h) checks them.
 */

#include <linux/limits.h>

#include "glove/base/error.h"

#define GLOVE_HOST_POLICY_FILE "session-policy.json"
#define GLOVE_HOST_CONFIG_FILE "config.json"
/* The session store gloved keeps when it runs managed sessions (suggested
 * name in the state directory; gloved --session-store). */
#define GLOVE_HOST_SESSION_STORE_FILE "sessions.journal"

struct glove_host_dirs {
        char config[PATH_MAX];   /* absolute, normalized; never empty on success */
        char runtime[PATH_MAX];  /* absolute, normalized; "" when $XDG_RUNTIME_DIR is unset */
        char state[PATH_MAX];    /* absolute, normalized; never empty on success */
        char policy[PATH_MAX];   /* config/session-policy.json */
        char config_file[PATH_MAX]; /* config/config.json */
};

/*
 * Fills out from the environment (XDG_CONFIG_HOME, XDG_RUNTIME_DIR,
 * XDG_STATE_HOME, HOME). A variable that is set but not absolute is ignored,
 * as gloved does. Returns 0, or -EINVAL "host.no_default_dir" when the
 * config or state directory has no default (neither its variable nor HOME
 * is an absolute path), -ENAMETOOLONG "host.no_default_dir" when a path
 * does not fit in PATH_MAX.
 */
int glove_host_dirs_from_env(struct glove_host_dirs *out, struct glove_error *err);

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Writes data[0..len) to dirfd/name with mode 0600, atomically and durably:
 * glove_file_replace (glove/base/file.h) with the directory synced. With
 * replace false an existing name is never overwritten (-EEXIST). On failure
 * no temporary file is left. Errors: host.write (-errno), -EEXIST
 * host.exists, with glove_file_replace's message.
 * glove_host_file_write_atomic_mode is the same with the final mode given
 * (permission bits only, e.g. 0644 for a systemd unit).
 */
int glove_host_file_write_atomic_mode(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                                      bool replace, struct glove_error *err);
int glove_host_file_write_atomic(int dirfd, const char *name, const void *data, size_t len, bool replace,
                                 struct glove_error *err);

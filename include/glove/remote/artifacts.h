/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The OpenSSH client artifacts of the remote backend (spec architecture.md,
 * "Construction-only remote backend"; docs/remote-backend.md, "The
 * artifacts"): an isolated client configuration and a pinned known_hosts,
 * written beneath gloved's already verified owner-only runtime directory.
 * Nothing here runs ssh, resolves a name or opens a socket; the files are
 * what a future operational lifecycle would hand to `ssh -F`.
 *
 * RUNTIME/remote-known_hosts (0600), one line:
 *   glove-remote ssh-ed25519 BASE64
 * RUNTIME/remote-ssh_config (0600): a comment, then for every host
 *   GlobalKnownHostsFile none
 *   UserKnownHostsFile RUNTIME/remote-known_hosts
 *   StrictHostKeyChecking yes
 *   HostKeyAlgorithms ssh-ed25519
 *   UpdateHostKeys no
 *   ControlMaster no
 *   ControlPath none
 *   ControlPersist no
 * then the one destination:
 *   Host glove-remote
 *           HostName HOST
 *           Port PORT
 *           User USER
 *           HostKeyAlias glove-remote
 * HostKeyAlias makes ssh look the key up under "glove-remote", whatever
 * HOST resolves to and whatever the port: the pin does not depend on DNS.
 * ssh_config(5) keeps the first value obtained for an option, and `ssh -F
 * FILE` reads no other configuration, so nothing overrides these.
 *
 * Stable codes:
 *   remote.runtime_dir_unsafe  the runtime directory's path holds a
 *                              character ssh_config would read as a token,
 *                              a quote or a separator (anything outside
 *                              [A-Za-z0-9/._+@-]) (-EINVAL)
 *   remote.artifact_write      a file could not be written (-errno: ENOSPC,
 *                              EACCES, EROFS, ...)
 *   remote.no_memory           out of memory (-ENOMEM)
 */

#include <stddef.h>

#include "glove/base/error.h"
#include "glove/remote/backend.h"

/* The files' names in the runtime directory. */
#define GLOVE_REMOTE_SSH_CONFIG_NAME "remote-ssh_config"
#define GLOVE_REMOTE_KNOWN_HOSTS_NAME "remote-known_hosts"
/* The Host of the configuration and the name the key is pinned under. */
#define GLOVE_REMOTE_HOST_ALIAS "glove-remote"

/*
 * The two files' text for backend b (validated by backend.h) and the
 * runtime directory dir (absolute, normalized): *config and *known_hosts
 * are malloc'd, NUL-terminated (free() them), their lengths without the NUL
 * in *config_len and *known_hosts_len. Pure: touches no file.
 * Errors: remote.runtime_dir_unsafe, remote.no_memory; the outputs are then
 * NULL.
 */
int glove_remote_artifacts_render(const struct glove_remote_backend *b, const char *dir, char **config,
                                  size_t *config_len, char **known_hosts, size_t *known_hosts_len,
                                  struct glove_error *err);

/*
 * Renders and writes both files into dirfd (the open runtime directory dir,
 * borrowed): known_hosts first, then the configuration that names it, each
 * atomically (glove_file_replace, glove/base/file.h: a temporary file of
 * mode 0600 created exclusively, written in full, fsync'd, renamed over the
 * name, the directory fsync'd), replacing files an earlier gloved left.
 * On any failure both names are removed (a file written earlier in the
 * call, or left by an earlier gloved, included) and no temporary remains:
 * nothing is left behind. Errors: those of render, remote.artifact_write
 * with the file's path and the system's reason.
 */
int glove_remote_artifacts_write(int dirfd, const char *dir, const struct glove_remote_backend *b,
                                 struct glove_error *err);

/*
 * Removes both files from dirfd (best effort: a name that is absent or
 * cannot be removed is skipped), then fsyncs the directory when it removed
 * one. Returns the
 * number removed. For gloved's clean stop, and for a start without the
 * remote backend (files an earlier gloved left name no backend now).
 */
int glove_remote_artifacts_remove(int dirfd);

/* SPDX-License-Identifier: Apache-2.0 */
/* The remote backend's OpenSSH client configuration and pinned known_hosts
 * (see glove/remote/artifacts.h). */
#include "glove/remote/artifacts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/file.h"

/* What may appear in a path written into ssh_config unquoted: no
 * whitespace, quote, '#', '=', '%' or '$' (tokens and variables that ssh
 * expands in UserKnownHostsFile), '~', ',' or control character. */
static const char safe_path_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+@-";

int glove_remote_artifacts_render(const struct glove_remote_backend *b, const char *dir, char **config,
                                  size_t *config_len, char **known_hosts, size_t *known_hosts_len,
                                  struct glove_error *err) {
        *config = *known_hosts = NULL;
        if (!dir || dir[0] != '/' || strspn(dir, safe_path_chars) != strlen(dir))
                return glove_error_set(err, EINVAL, "remote.runtime_dir_unsafe",
                                       "the runtime directory's path holds a character outside [A-Za-z0-9/._+@-]: "
                                       "it would be read as a token, quote or separator in the OpenSSH client "
                                       "configuration; choose a plainer path");
        _cleanup_free_ char *c = NULL, *k = NULL;
        int cn = asprintf(&c,
                          "# The OpenSSH client configuration of gloved's remote backend (construction only:\n"
                          "# gloved runs no ssh). Written at every start, removed at stop; docs/remote-backend.md.\n"
                          "GlobalKnownHostsFile none\n"
                          "UserKnownHostsFile %s/" GLOVE_REMOTE_KNOWN_HOSTS_NAME "\n"
                          "StrictHostKeyChecking yes\n"
                          "HostKeyAlgorithms " GLOVE_REMOTE_HOST_KEY_ALGORITHM "\n"
                          "UpdateHostKeys no\n"
                          "ControlMaster no\n"
                          "ControlPath none\n"
                          "ControlPersist no\n"
                          "IdentitiesOnly yes\n"
                          "IdentityFile none\n"
                          "IdentityAgent none\n"
                          "BatchMode yes\n"
                          "\n"
                          "Host " GLOVE_REMOTE_HOST_ALIAS "\n"
                          "\tHostName %s\n"
                          "\tPort %u\n"
                          "\tUser %s\n"
                          "\tHostKeyAlias " GLOVE_REMOTE_HOST_ALIAS "\n",
                          dir, b->host, (unsigned)b->port, b->user);
        if (cn < 0) {
                c = NULL;
                return glove_error_set(err, ENOMEM, "remote.no_memory", "out of memory");
        }
        int kn = asprintf(&k, GLOVE_REMOTE_HOST_ALIAS " %s\n", b->host_key_text);
        if (kn < 0) {
                k = NULL;
                return glove_error_set(err, ENOMEM, "remote.no_memory", "out of memory");
        }
        *config = TAKE_PTR(c);
        *config_len = (size_t)cn;
        *known_hosts = TAKE_PTR(k);
        *known_hosts_len = (size_t)kn;
        return 0;
}

static void remove_names(int dirfd) {
        (void)unlinkat(dirfd, GLOVE_REMOTE_SSH_CONFIG_NAME, 0);
        (void)unlinkat(dirfd, GLOVE_REMOTE_KNOWN_HOSTS_NAME, 0);
        (void)fsync(dirfd);
}

int glove_remote_artifacts_write(int dirfd, const char *dir, const struct glove_remote_backend *b,
                                 struct glove_error *err) {
        _cleanup_free_ char *config = NULL, *known_hosts = NULL;
        size_t cl = 0, kl = 0;
        int r = glove_remote_artifacts_render(b, dir, &config, &cl, &known_hosts, &kl, err);
        if (r < 0)
                return r;
        struct glove_error fe = { 0 }; /* its message starts with the file's name */
        r = glove_file_replace(dirfd, GLOVE_REMOTE_KNOWN_HOSTS_NAME, known_hosts, kl, 0600,
                               GLOVE_FILE_REPLACE_SYNC_DIR, &fe);
        if (r == 0)
                r = glove_file_replace(dirfd, GLOVE_REMOTE_SSH_CONFIG_NAME, config, cl, 0600,
                                       GLOVE_FILE_REPLACE_SYNC_DIR, &fe);
        if (r < 0) {
                remove_names(dirfd);
                return glove_error_set(err, -r, "remote.artifact_write",
                                       "%s: %s; neither remote artifact was left in the runtime directory", dir,
                                       fe.message);
        }
        return 0;
}

int glove_remote_artifacts_remove(int dirfd) {
        int n = 0;
        if (unlinkat(dirfd, GLOVE_REMOTE_SSH_CONFIG_NAME, 0) == 0)
                n++;
        if (unlinkat(dirfd, GLOVE_REMOTE_KNOWN_HOSTS_NAME, 0) == 0)
                n++;
        if (n)
                (void)fsync(dirfd);
        return n;
}

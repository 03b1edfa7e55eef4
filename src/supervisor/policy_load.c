/* SPDX-License-Identifier: Apache-2.0 */
/* The protected policy file loader (spec session-policy.md, "Protected
 * files": regular file, current-user owned, mode 0600, one hard link, no
 * final symlink, 1 MiB; one descriptor; metadata or identity changes during
 * validation are rejected). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/supervisor/policy.h"
#include "internal.h"

void (*glove_supervisor_policy_load_test_hook)(int fd, const char *path) = NULL;

static const struct glove_protected_file_codes policy_codes = {
        .path_relative = "policy.file_path_relative", .symlink = "policy.file_symlink", .open = "policy.file_open",
        .not_regular = "policy.file_not_regular", .owner = "policy.file_owner", .mode = "policy.file_mode",
        .links = "policy.file_links", .too_large = "policy.file_too_large", .no_memory = "policy.no_memory",
        .read = "policy.file_read", .changed = "policy.file_changed",
};

int sv_load_protected_file(const char *path, uid_t owner_uid, size_t max_bytes, char **out, size_t *out_len,
                          struct glove_error *err) {
        return glove_file_load_protected(path, owner_uid, max_bytes, &policy_codes,
                                         glove_supervisor_policy_load_test_hook, out, out_len, err);
}

int glove_supervisor_policy_load(const char *path, uid_t owner_uid, struct glove_supervisor_policy **out,
                                 struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no output pointer");
        *out = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = sv_load_protected_file(path, owner_uid, GLOVE_POLICY_MAX_BYTES, &buf, &n, err);
        if (r < 0)
                return r;
        r = glove_supervisor_policy_decode_ex(buf, n, out, NULL, 0, err);
        if (r < 0)
                glove_error_prefix(err, "%s", path);
        return r;
}

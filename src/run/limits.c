/* SPDX-License-Identifier: Apache-2.0 */
#include "run_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/number.h"
#include "glove/base/time.h"

json_t *glove_run_status_json(const struct glove_run_status *st) {
        return json_pack("{s:i,s:o,s:o,s:I,s:I,s:I,s:I}", "exit_code", st->exit_code, "signal",
                         st->signal >= 0 ? json_integer(st->signal) : json_null(), "limit",
                         st->limit ? json_string(st->limit) : json_null(), "cpu_time_ms", (json_int_t)st->cpu_time_ms,
                         "peak_memory_bytes", (json_int_t)st->peak_memory_bytes, "wall_time_ms", (json_int_t)st->wall_time_ms,
                         "output_bytes", (json_int_t)st->output_bytes);
}

int glove_run_status_write(int dirfd, const char *path, const char *shown, const struct glove_run_status *st, struct glove_error *err) {
        _cleanup_json_ json_t *j = glove_run_status_json(st);
        _cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (!text)
                return glove_error_set(err, ENOMEM, "status.write", "cannot encode the status");
        struct stat existing;
        if (fstatat(dirfd, path, &existing, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(existing.st_mode))
                return glove_error_set(err, EINVAL, "status.file_type", "--status-json %s: exists and is not a regular file", shown);
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
                return glove_error_set(err, ENOMEM, "status.write", "out of memory");
        _cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return glove_error_set(err, errno, "status.write", "--status-json %s: %s", shown, strerror(errno));
        int r = glove_fd_write_all(fd, text, strlen(text));
        if (r == 0)
                r = glove_fd_write_all(fd, "\n", 1);
        if (r == 0 && renameat(dirfd, tmp, dirfd, path) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(dirfd, tmp, 0);
                return glove_error_set(err, -r, "status.write", "--status-json %s: %s", shown, strerror(-r));
        }
        return 0;
}

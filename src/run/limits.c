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
#include "glove/base/file.h"
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
        size_t n = strlen(text);
        text[n] = '\n'; /* json_dumps's NUL becomes the line's end */
        struct glove_error e = { 0 };
        int r = glove_file_replace(dirfd, path, text, n + 1, 0600, 0, &e);
        text[n] = '\0';
        if (r < 0)
                return glove_error_set(err, -r, "status.write", "--status-json %s: %s", shown, glove_errno_text(-r));
        return 0;
}

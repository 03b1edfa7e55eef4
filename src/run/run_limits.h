/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The terminal status of one run (issue "limits"; docs/limits.md): what
 * --status-json writes and the exit record carries. The limits themselves
 * are the session engine's (glove/session/session.h). Shared by glove exec
 * and glove run; internal to the run module.
 */

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/container/cgroup.h"
#include "glove/container/sandbox.h"
#include "glove/run/exec_options.h"

struct glove_run_status {
        int exit_code;
        int signal;                    /* -1 when none */
        const char *limit;             /* NULL when none */
        uint64_t cpu_time_ms, peak_memory_bytes, wall_time_ms, output_bytes;
};

/* {"exit_code","signal","limit","cpu_time_ms","peak_memory_bytes",
 *  "wall_time_ms","output_bytes"}; new reference or NULL. */
json_t *glove_run_status_json(const struct glove_run_status *st);

/* Writes the status object as name inside the pinned directory dirfd
 * (created 0600, replaced atomically via a temporary file there; the final
 * name must not be a directory). shown is the path as the user gave it, for
 * messages. Errors: "status.write", "status.file_type". */
int glove_run_status_write(int dirfd, const char *name, const char *shown, const struct glove_run_status *st,
                           struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the parent side (sandbox.c) and the child side (perimeter.c,
 * init.c) of the sandbox. Not a public interface. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/container/sandbox.h"

/* One report from the sandbox child to Glove. Fixed size, below PIPE_BUF, so
 * each write is atomic. */
enum report_kind {
        REPORT_READY = 1,
        REPORT_SETUP_FAILED = 2,
        REPORT_EXEC_FAILED = 3,
        REPORT_EXITED = 4,
        REPORT_SIGNALED = 5,
        REPORT_DISK_FULL = 6,
};

struct report {
        int32_t kind;
        int32_t value;
        char code[48];
        char message[400];
};

/* Builds the mount perimeter in the child by executing cfg->mounts in
 * order (fresh tmpfs root, pivot_root, old root detached, root and /dev
 * read-only, grants' submounts checked) and changes into the plan's working
 * directory. Allocation-free; reads the plan only. */
int glove_perimeter_build(const struct glove_sandbox_config *cfg, struct glove_error *err);

/* Copies len bytes (fewer at end of file; SIZE_MAX: to the end) of the
 * regular file in to out, through the kernel (sendfile) or a stack buffer:
 * no allocation in the sandbox child. Returns 0 or -errno. */
int glove_copy_fd(int in, int out, size_t len);

/* Fills the fresh tmpfs of TREE entry e (root directory dst_root) with a
 * copy of the directory src_root (tree_copy.c; the rules in mount_plan.h).
 * Allocation-free, for the sandbox child. Neither descriptor is closed.
 * Returns 0 or -errno: "materialize.copy", "materialize.quota_exceeded",
 * "materialize.too_deep". */
int glove_tree_copy(int src_root, int dst_root, const struct glove_mount_plan *plan, const struct glove_mount_entry *e,
                    struct glove_error *err);

/* PID 1 of the sandbox after release: drops privileges, installs the filter,
 * starts the agent and reports its outcome on report_fd. Never returns. */
__attribute__((noreturn)) void glove_init_main(const struct glove_sandbox_config *cfg, int report_fd);

/* The static string equal to code when it is one the sandbox child can
 * report (an immutable table in sandbox.c), else NULL. */
const char *glove_report_code_lookup(const char *code);

/* Writes one report; returns 0 or -errno. No allocation, no lock (usable
 * in the sandbox child). */
int glove_report_send(int fd, enum report_kind kind, int value, const char *code, const char *message);

/* Undoes /proc/self/mountinfo's octal escapes (\040 space, \011 tab, \012
 * newline, \134 backslash) in place in the NUL-terminated field s
 * (proc(5), /proc/pid/mountinfo). Used by the perimeter and the cgroup
 * probe. */
void glove_mountinfo_unescape(char *s);

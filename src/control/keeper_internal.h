/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to the keeper (keeper.c, keeper_proc.c) and its unit tests. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* Largest /proc/PID/stat read, bytes (the line is a few hundred). */
#define GLOVE_KEEPER_STAT_MAX 4096
/* Largest /proc/PID/cgroup and cgroup.procs read, bytes. */
#define GLOVE_KEEPER_CGROUP_FILE_MAX (1024 * 1024)

/*
 * Field 22 (starttime) of the text of a /proc/PID/stat file, text[0..len).
 * The second field (comm) is in parentheses and may itself hold spaces and
 * ')': the fields are counted after the LAST ')'. Every field after it must
 * be separated by exactly one space; field 22 must be decimal digits only and
 * fit in 64 bits. Returns 0, or -EINVAL for anything else.
 */
int glove_keeper_parse_stat(const char *text, size_t len, uint64_t *out);

/*
 * The boot id from the text of /proc/sys/kernel/random/boot_id: exactly 36
 * characters of the form 8-4-4-4-12 lowercase hexadecimal digits, then an
 * optional single newline and nothing else. out[37] gets it NUL-terminated.
 * Returns 0, or -EINVAL.
 */
int glove_keeper_parse_boot_id(const char *text, size_t len, char out[37]);

/*
 * The run cgroup's path in the text of /proc/PID/cgroup (text NUL-terminated
 * at len): v2 the "0::PATH" line; v1 the line whose controller list names
 * "memory". *path points into text at the path, *path_len its length.
 * Returns 0, or -ENOENT when there is no such line.
 */
int glove_keeper_parse_cgroup(const char *text, size_t len, bool v2, const char **path, size_t *path_len);

/*
 * The cgroup identity of pid: {"dir":PARENT/BASE,"inode":N} where BASE is the
 * last component of pid's cgroup path (/proc/PID/cgroup) and the directory
 * PARENT/BASE exists and lists pid in its cgroup.procs. NULL when any of it
 * cannot be established (no run cgroup, parent NULL, a read failing). A new
 * reference.
 */
json_t *glove_keeper_cgroup_identity(pid_t pid, const char *parent, bool v2);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The directories of running gloveds, which no grant of glove exec or glove
 * run may reach (docs/threat-model.md, "gloved"): the container module's
 * grant checks know no service, so the front ends find them here and pass
 * them as guards (glove/container/grant.h). Internal to the run module.
 */

#include "glove/base/error.h"
#include "glove/container/grant.h"

/* Most processes looked at, and descriptors of one gloved read, when
 * looking for the directories a live gloved holds open (more fail closed,
 * "grant.gloved_runtime"). */
#define GLOVE_RUN_GLOVED_PROCS_MAX (4 * 1024 * 1024)
#define GLOVE_RUN_GLOVED_FDS_MAX 65536
/* Most sockets bound at .../gloved.sock looked at. */
#define GLOVE_RUN_GLOVED_SOCKETS_MAX 256
/* Longest /proc/net/unix read (bytes). */
#define GLOVE_RUN_UNIX_TABLE_MAX (64 * 1024 * 1024)

/*
 * Fills guards (initialized by this call; free with glove_grant_guards_free)
 * with code "grant.gloved_runtime", gloved's runtime directory entries as
 * markers (a socket named gloved.sock, a regular file named
 * bootstrap-secret: a directory holding one, and everything beneath, is
 * refused), and the directories of every gloved this process can see:
 *  - each of its own private directories a live gloved other than this
 *    process holds open (a process named gloved* holding a socket bound at
 *    .../gloved.sock; its /proc/PID/fd, so a directory renamed since is
 *    found where it is now). Only descriptors tagged with
 *    GLOVE_STORE_KEPT_DIR_FLAG count (glove/store/dirs.h): a directory it
 *    opens in passing (a listing of /, a copy walk, an O_PATH lookup) would
 *    otherwise refuse whatever grant lay beneath it while it was open;
 *  - each directory RUNTIME whose RUNTIME/gloved.sock is a listening socket
 *    in /proc/net/unix and still a socket at that path (a gloved of another
 *    uid, whose descriptors cannot be read).
 * Errors ("grant.gloved_runtime", fail closed): /proc/net/unix unreadable
 * or longer than GLOVE_RUN_UNIX_TABLE_MAX; more than
 * GLOVE_RUN_GLOVED_PROCS_MAX processes, GLOVE_RUN_GLOVED_FDS_MAX descriptors
 * of one gloved, GLOVE_RUN_GLOVED_SOCKETS_MAX gloved sockets, or
 * GLOVE_GRANT_GUARDS_MAX directories; a descriptor path longer than
 * GLOVE_PATH_MAX; -ENOMEM.
 */
int glove_run_gloved_guards(struct glove_grant_guards *guards, struct glove_error *err);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The discovery trust rule (spec session-policy.md, "Discovery requires a
 * non-empty ordered executable_search_paths list ..."; docs/session-policy.md,
 * "Discovery"). One implementation, used by runtime discovery when a session
 * is prepared (src/supervisor/discovery.c) and by the host tooling that
 * reports on it or stages into it (`glove policy detect`, `glove policy
 * stage`), so what the tooling says is what gloved does.
 *
 * The rule, for "/" and every directory on the way to an object, and the
 * object itself: reached without following a symbolic link; owned by root
 * or the service user; writable by neither group nor others. A sticky bit
 * changes nothing: a sticky world-writable ancestor such as /tmp is refused
 * like any other (issue 31 ruling; docs/session-policy.md, "Discovery").
 *
 * Reasons are written into why[0..why_size), cut to fit; they name the
 * offending component, its owner or mode (for example "/opt/a is writable by
 * group (mode 0775)"); the last component is called "it".
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What the last component of a walked path is checked as. */
enum glove_supervisor_trust_role {
        GLOVE_SUPERVISOR_TRUST_ANCESTOR,   /* a directory on the way */
        GLOVE_SUPERVISOR_TRUST_SEARCH_DIR, /* the search directory itself */
        GLOVE_SUPERVISOR_TRUST_FILE,       /* any type (the caller checks it) */
};

/*
 * Walks absolute, normal path from "/" one component at a time with
 * openat(O_PATH|O_NOFOLLOW), checking "/" and every directory on the way
 * as an ancestor and the last component as last. On success *out_fd is an
 * O_PATH|O_CLOEXEC descriptor of the last component (caller closes) and
 * *out_st its stat. Returns 0, or -errno with the reason in why: -EACCES
 * the trust rule, -ELOOP a symbolic link, -ENOENT, -ENOTDIR (a non-directory
 * on the way, or as a directory role), -ENAMETOOLONG.
 */
int glove_supervisor_trust_walk(const char *path, enum glove_supervisor_trust_role last, uid_t service_uid,
                                int *out_fd, struct stat *out_st, char *why, size_t why_size);

/*
 * Looks for the executable called name (no '/') in search directory dir,
 * as discovery does: dir and its ancestors must pass the rule
 * (SEARCH_DIR); the entry dir/name (a symbolic link is resolved with
 * realpath(3)) must canonicalize to a regular, executable file whose own
 * chain and itself pass the rule when walked again from "/" without
 * following anything (FILE). On a match *canon gets the canonical path
 * (malloc'd, caller frees) and *st the file's stat, and 1 is returned;
 * 0 with the reason in why when dir gives no usable executable; -ENOMEM.
 */
int glove_supervisor_trust_find(const char *dir, const char *name, uid_t service_uid, char **canon,
                                struct stat *st, char *why, size_t why_size);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to glove ctl (ctl.c, ctl_session.c, ctl_attach.c); see ctl.h. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/protocol/client.h"

/* Largest write_stdin payload, decoded bytes (the protocol's bound). */
#define CTL_STDIN_MAX 65536

struct ctl {
        const char *runtime_dir;
        bool json;
        uint64_t timeout_ms;
        const char *cmd;
        char **args; /* command arguments */
        int nargs;
};

/* "glove: usage.ctl: ...; see glove ctl --help" on stderr; returns 125. */
__attribute__((format(printf, 1, 2))) int ctl_usage_error(const char *fmt, ...);
/* A string from gloved made safe for a terminal (see ctl.c). */
const char *ctl_shown(const char *s);
/* "glove: CODE: MESSAGE" on stderr; return 125 / 1. */
int ctl_failure(const struct glove_error *e);
/* A refusal: "glove: CODE: MESSAGE" on stderr, and for a method_not_found
 * whose data.reason is option_missing or runtime_not_operational, what to
 * do; r->data is read, not released. Returns 1. */
int ctl_refused(const struct glove_protocol_remote_error *r);
/* Prints v as one line of compact JSON with sorted keys; 0 or 125. */
int ctl_print_json(const json_t *v);

/* Runs the session commands (start, attach, write-stdin, resize, signal,
 * stop, cleanup, sessions). Returns -1 when c->cmd is none of them, else
 * the exit status. */
int ctl_session_run(const struct ctl *c);

/* glove ctl plan (ctl_plan.c): -1 when c->cmd is not "plan", else the exit
 * status. Talks to no gloved. */
int ctl_plan_run(const struct ctl *c);

/* glove ctl attach (ctl_attach.c). */
int ctl_attach_run(const struct ctl *c, const char *session_id, bool no_stdin);


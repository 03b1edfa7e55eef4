/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Upstream MCP servers of `glove run` (issue "glove run", --upstream): host
 * processes started by Glove outside the sandbox, talking MCP over their
 * stdin/stdout (MCP specification, Transports: stdio). Internal to the run
 * module.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "glove/base/error.h"
#include "glove/mcp/frame.h"

#define GLOVE_UPSTREAM_NAME_MAX 32
#define GLOVE_UPSTREAM_ARGS_MAX 64
/* Most entries one upstream's tools/list may hold (offered or dropped, all
 * pages together), and pages followed while listing. */
#define GLOVE_UPSTREAM_TOOLS_MAX 4096
#define GLOVE_UPSTREAM_PAGES_MAX 256
/* Bytes queued towards an upstream that is not reading. */
#define GLOVE_UPSTREAM_PENDING_MAX (64 * 1024 * 1024)

enum glove_upstream_state {
        GLOVE_UPSTREAM_INITIALIZING,   /* initialize sent, waiting for its result */
        GLOVE_UPSTREAM_LISTING,        /* tools/list pages being fetched */
        GLOVE_UPSTREAM_READY,
        GLOVE_UPSTREAM_DEAD,           /* exited, or its channel failed */
};

struct glove_upstream {
        char name[GLOVE_UPSTREAM_NAME_MAX + 1];
        char *argv[GLOVE_UPSTREAM_ARGS_MAX + 1];   /* owned strings; argv[0] as given */
        char *path;                                /* resolved executable, owned */
        char **envp;                               /* owned */
        pid_t pid;
        int pidfd, in_fd, out_fd;                  /* owned; -1 when closed */
        struct glove_mcp_reader reader;
        struct glove_mcp_writer writer;
        sd_event_source *out_src, *in_src, *child_src;
        enum glove_upstream_state state;
        bool ever_ready;
        int64_t next_id;                           /* ids of requests Glove sends */
        int64_t control_id;                        /* id of the pending initialize or tools/list */
        json_t *tools;                             /* array of tool objects, owned; each has a "name" that
                                                    * glove_policy_tool_name_valid accepts (so no NUL), and no
                                                    * name twice */
        json_t *listing;                           /* tools gathered while LISTING, owned */
        size_t pages;
        size_t listed;                             /* entries received while LISTING, dropped ones included */
        bool relist;                               /* list_changed arrived while listing */
        bool has_tools;                            /* the upstream advertised the tools capability */
        char protocol_version[32];
        int exit_code, exit_signal;                /* once DEAD by exit; -1 when unknown */
        void *owner;                               /* the run this upstream belongs to */
};

/*
 * Parses "NAME=CMD[,ARG...]" (NAME is [a-z0-9_-]{1,32}; arguments are split
 * at every comma, so an argument cannot contain one). CMD without a slash is
 * looked up in Glove's PATH once, here; the resolved path is what runs and
 * what is audited. Errors: "upstream.bad_spec", "upstream.not_found".
 */
int glove_upstream_parse(const char *spec, struct glove_upstream *u, struct glove_error *err);

/*
 * Builds the upstream's environment: PATH, HOME and LANG from Glove's
 * environment when set (PATH defaults to /usr/local/bin:/usr/bin:/bin),
 * plus each "NAME:VAR" of specs whose NAME is this upstream: VAR copied
 * from Glove's environment. Errors: "upstream.env_unset", "upstream.bad_env".
 */
int glove_upstream_build_env(struct glove_upstream *u, const char *const *specs, size_t n_specs, struct glove_error *err);

/*
 * Starts the process: new session (so the whole process group can be
 * signalled), PR_SET_PDEATHSIG(SIGKILL), stdin/stdout pipes (Glove's ends
 * non-blocking), stderr shared with Glove, nothing else inherited, default
 * signal dispositions and an empty mask. Returns once execve succeeded, or
 * fails with "upstream.start" naming the upstream.
 */
int glove_upstream_start(struct glove_upstream *u, size_t max_frame, struct glove_error *err);

/* Signals the upstream's process group. */
void glove_upstream_kill(struct glove_upstream *u, int sig);

/* Frees everything; the process must have been reaped or killed. */
void glove_upstream_free(struct glove_upstream *u);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * An upstream MCP server as a client sees it (MCP specification: Transports,
 * stdio; Lifecycle; Tools): a host process started from a parsed spec, whose
 * stdin/stdout carry one JSON-RPC message per line. The client runs on a
 * caller-supplied sd-event loop: it sends initialize (an error answer:
 * server/discover, the 2026-07-28 probe; see "Eras" below), then fetches tools/list
 * page by page (again after notifications/tools/list_changed), drops entries
 * no client may be offered (each reported as a "tool_dropped" record), and
 * answers the upstream's ping itself; its other requests go to ops->request
 * (or are answered method not found without one). The client capabilities
 * declared in initialize are the caller's (cfg->capabilities). Everything
 * else it reads is handed to the caller.
 *
 * Eras (MCP 2026-07-28, basic/versioning.mdx; docs/mcp-mediation.md,
 * "Protocol revisions of upstreams"): initialize goes first, as to every
 * server before 2026-07-28 ("legacy"). When it is answered with any JSON-RPC
 * error, server/discover follows (with the envelope below); a DiscoverResult
 * whose supportedVersions name 2026-07-28 (or, once, a -32022 whose
 * data.supported does: discover is asked again) makes the upstream
 * "modern"; any other answer makes it DEAD (protocol), the why naming both
 * answers. To a modern upstream: every request glove_mcp_upstream_send
 * queues gets params._meta protocolVersion "2026-07-28", clientCapabilities
 * (the request's own when its _meta has them, else cfg->capabilities, as
 * initialize would declare them) and clientInfo over
 * the keys it had; notifications other than notifications/cancelled are
 * dropped (initialized, roots/list_changed have no 2026-07-28 form);
 * subscriptions/listen is opened for the list_changed kinds its
 * capabilities announce (tools, prompts, resources), and their tagged
 * notifications are handled as a legacy upstream's (tools: listed again;
 * others: to ops->message); the acknowledgement is consumed and the
 * listen's end is an "upstream_listen_ended" record. A result whose
 * resultType is absent or "complete" goes to the caller as ever (the fast
 * path included); "input_required" (a multi round-trip request) goes to
 * ops->message as it is, for the caller to decide; another value
 * is an "upstream_invalid_message" record (reason "unknown_result_type") and
 * an error -32603 "upstream_invalid_result". A request from a modern
 * upstream is answered -32601 (a 2026-07-28 server sends none). The caller
 * must not send it ping, logging/setLevel or resources/(un)subscribe.
 *
 * Daemon-safe: no statics, no environment lookups (the caller passes the
 * environment explicitly), no printing, nothing process-wide on the caller
 * (the child resets its own signal dispositions and mask and sets its own
 * PR_SET_PDEATHSIG). Spawning uses fork(); the child touches no allocator
 * between fork and execve.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "glove/base/error.h"
#include "glove/mcp/frame.h"
#include "glove/mcp/response_scan.h"

#define GLOVE_MCP_UPSTREAM_NAME_MAX 32
#define GLOVE_MCP_UPSTREAM_ARGS_MAX 64
/* Most "NAME:VAR" entries given to glove_mcp_upstream_spec_build_env. */
#define GLOVE_MCP_UPSTREAM_ENV_MAX 256
/* Most entries one upstream's tools/list may hold (offered or dropped, all
 * pages together), and pages followed while listing. */
#define GLOVE_MCP_UPSTREAM_TOOLS_MAX 4096
#define GLOVE_MCP_UPSTREAM_PAGES_MAX 256
/* Bytes queued towards an upstream that is not reading. */
#define GLOVE_MCP_UPSTREAM_PENDING_MAX (64 * 1024 * 1024)
/* Longest "instructions" of an initialize result kept, bytes; longer ones
 * are not kept (an "instructions_dropped" record). */
#define GLOVE_MCP_UPSTREAM_INSTRUCTIONS_MAX (16 * 1024)
/* Longest part of a dropped tool's name written to its tool_dropped
 * record, in bytes (the record also gives the whole length). */
#define GLOVE_MCP_UPSTREAM_DROPPED_NAME_MAX 256
/* Longest stderr line handed to ops->stderr_line, in bytes (without its
 * newline); the rest of a longer line is dropped (cut is true). */
#define GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX 1024

/* MCP 2026-07-28 ("modern"; docs/mcp-mediation.md, "Protocol revisions of
 * upstreams"): the revision, the _meta keys of its request envelope
 * (basic/index.mdx "_meta") and UnsupportedProtocolVersionError's code. */
#define GLOVE_MCP_UPSTREAM_MODERN_VERSION "2026-07-28"
#define GLOVE_MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define GLOVE_MCP_META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define GLOVE_MCP_META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define GLOVE_MCP_UPSTREAM_UNSUPPORTED_VERSION (-32022)

/* The descriptor number spec->pass_fd is given as in the process. */
#define GLOVE_MCP_UPSTREAM_PASS_FD 4

/* Default PATH when the given environment has none. */
#define GLOVE_MCP_UPSTREAM_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* What to start: filled by glove_mcp_upstream_spec_parse and
 * glove_mcp_upstream_spec_build_env, released by glove_mcp_upstream_spec_free. */
struct glove_mcp_upstream_spec {
        char name[GLOVE_MCP_UPSTREAM_NAME_MAX + 1];
        char *argv[GLOVE_MCP_UPSTREAM_ARGS_MAX + 1];   /* owned strings, NULL-terminated; argv[0] as given */
        char *path;                                    /* resolved executable, owned */
        char **envp;                                   /* owned, NULL-terminated; NULL until built */
        /* A contained upstream (docs/mcp-mediation.md, Upstreams): what
         * actually runs is launch_path with launch_argv (a `glove exec`
         * sandbox around path and argv), with envp. NULL: path and argv run
         * directly (uncontained). Both owned. */
        char *launch_path;
        char **launch_argv;                            /* NULL-terminated */
        /* The signal sent to it when it is given up or its channel fails
         * (0: SIGKILL). A launcher that ends its sandbox cleanly on a signal
         * takes that one; the end of a run still escalates to SIGKILL.
         * With a launcher, an exit status 128+N (N 1..64) is reported as
         * signal N in upstream_exit, as `glove exec` reports its program's. */
        int stop_signal;
        /* A descriptor of the caller's (above 2; 0: none) the process gets
         * as descriptor GLOVE_MCP_UPSTREAM_PASS_FD, without FD_CLOEXEC: the
         * launcher's copy of the run's audit log. Borrowed. */
        int pass_fd;
        /* For the upstream_start record: the sandbox's grants ({"ro","rw",
         * "env","egress"}, owned reference), NULL when uncontained. */
        json_t *sandbox;
};

/*
 * Parses "NAME=CMD[,ARG...]" (NAME is [a-z0-9_-]{1,32}; arguments are split
 * at every comma, so an argument cannot contain one) into *spec (zeroed
 * first; free it with glove_mcp_upstream_spec_free whatever the result). CMD
 * without a slash is looked up once, here, in the PATH of env (a
 * NULL-terminated "NAME=VALUE" array, borrowed; NULL or no PATH means
 * GLOVE_MCP_UPSTREAM_DEFAULT_PATH); the resolved path is what runs.
 * Errors: "upstream.bad_spec" (message starts with the spec text, or the
 * name once it is known, then ": "), "upstream.not_found".
 */
int glove_mcp_upstream_spec_parse(const char *text, const char *const *env, struct glove_mcp_upstream_spec *spec,
                                  struct glove_error *err);

/*
 * Builds spec->envp: PATH, HOME and LANG from env when set there (PATH
 * defaults to GLOVE_MCP_UPSTREAM_DEFAULT_PATH), plus, for each "NAME:VAR" of
 * specs (at most GLOVE_MCP_UPSTREAM_ENV_MAX) whose NAME is spec->name, VAR
 * copied from env. env and specs are borrowed. Errors (the message starts
 * with the offending "NAME:VAR" and ": "): "upstream.bad_env" (not
 * NAME:VAR, too many, out of memory), "upstream.env_unset" (VAR is not in
 * env).
 */
int glove_mcp_upstream_spec_build_env(struct glove_mcp_upstream_spec *spec, const char *const *env, const char *const *specs,
                                      size_t n_specs, struct glove_error *err);

/* Releases everything spec owns (launch_argv and sandbox included). */
void glove_mcp_upstream_spec_free(struct glove_mcp_upstream_spec *spec);

enum glove_mcp_upstream_state {
        GLOVE_MCP_UPSTREAM_INITIALIZING,   /* initialize sent, waiting for its result */
        GLOVE_MCP_UPSTREAM_LISTING,        /* tools/list pages being fetched */
        GLOVE_MCP_UPSTREAM_READY,
        GLOVE_MCP_UPSTREAM_DEAD,           /* exited, or its channel failed */
};

struct glove_mcp_upstream;

/* What the client tells its caller. Every callback may call back into the
 * client (send, kill) but must not free it. */
struct glove_mcp_upstream_ops {
        /* An event worth a record: "frame_oversized" {from, max_frame,
         * bytes, [id]} (a line longer than max_frame, skipped; id when it
         * is a response with an integer id),
         * "upstream_invalid_message" {from, [id], [reason]}, "tool_dropped"
         * {upstream, tool, [tool_bytes], reason}, "upstream_ready" {name,
         * protocol_version, era ("legacy"|"modern"), tools},
         * "upstream_listen_ended"
         * {name, how ("result"|"error"|"cancelled")}, "upstream_exit" {name,
         * status, signal}. fields is stolen
         * (NULL when it could not be built). A negative return stops what the
         * client was doing with the listing (fail closed). Optional. */
        int (*record)(void *userdata, struct glove_mcp_upstream *u, const char *event, json_t *fields);
        /* initialize finished, or a listing of its tools did; changed is
         * true for a listing after the first one. */
        void (*ready)(void *userdata, struct glove_mcp_upstream *u, bool changed);
        /* A message the client does not handle itself: a response to a
         * request sent with glove_mcp_upstream_send, or a notification other
         * than notifications/tools/list_changed. m is borrowed. */
        void (*message)(void *userdata, struct glove_mcp_upstream *u, struct glove_mcp_message *m);
        /* The upstream is gone (why: a short text) and has been sent SIGKILL;
         * its state is DEAD from now on. protocol is true when it broke the
         * protocol (initialize or tools/list failed or answered wrongly, or
         * its listing is over a bound). Called once. */
        void (*dead)(void *userdata, struct glove_mcp_upstream *u, const char *why, bool protocol);
        /* Its process has been reaped (after dead). */
        void (*exited)(void *userdata, struct glove_mcp_upstream *u);
        /* A line longer than max_frame was skipped (never held whole; the
         * client goes on with the next line): id points to its id when it
         * is a response with an integer id, else NULL (a request, a
         * notification, or no usable id); bytes is its length. Not called
         * for the answer to initialize or tools/list, which makes the
         * upstream DEAD (protocol). Optional. */
        void (*oversized)(void *userdata, struct glove_mcp_upstream *u, const int64_t *id, uint64_t bytes);
        /* A request of the upstream other than ping (sampling/createMessage,
         * roots/list, ...): the caller answers it (glove_mcp_upstream_send
         * with m->id). m is borrowed. Optional: without it the client
         * answers method not found. */
        void (*request)(void *userdata, struct glove_mcp_upstream *u, struct glove_mcp_message *m);
        /* Asked after each message read: true stops handling the rest of
         * what was read in this round (it is handled on the next). Optional. */
        bool (*halted)(void *userdata);
        /* The fast path of responses (issue 13; glove/mcp/response_scan.h).
         * Optional. A line read while the client is READY that
         * glove_mcp_response_scan accepts is offered here before anything
         * is decoded: line (len bytes) and r are borrowed for the call.
         * Return true when it was handled; false hands the line to the tree
         * parser and to message like any other line, so a caller may take
         * only the cases it knows (a call in flight) and leave the rest. */
        bool (*raw_response)(void *userdata, struct glove_mcp_upstream *u, const char *line, size_t len,
                             const struct glove_mcp_raw_response *r);
        /* Called when the lines of one read have all been handled (and
         * before the client waits for more): a caller that queued output
         * while handling them may write it now, once. Optional. */
        void (*drained)(void *userdata, struct glove_mcp_upstream *u);
        /* Optional. When set, the process's stderr is a pipe the client
         * reads (instead of the caller's stderr, shared): each line it
         * writes is handed here without its newline (nor a CR before it),
         * line[0..len) borrowed for the call, len at most
         * GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX, cut true when the line was
         * longer and its rest dropped. The bytes are as written (any byte,
         * NUL included): showing them safely is the caller's. A last line
         * without a newline is handed over at end of file. What the process
         * wrote before its stdout closed or it exited is handed over before
         * ops->dead and ops->exited report it. */
        void (*stderr_line)(void *userdata, struct glove_mcp_upstream *u, const char *line, size_t len, bool cut);
};

struct glove_mcp_upstream_config {
        size_t max_frame;                       /* longest line accepted, bytes */
        const char *max_frame_name;             /* how the caller names max_frame in the why of dead
                                                 * (e.g. its option); NULL: "the frame bound" */
        /* Whether a listed tool's name (len bytes, may hold NUL) may be
         * offered: a name no rule could name is dropped. Required (Glove
         * passes glove_policy_tool_name_valid). */
        bool (*tool_name_valid)(const char *name, size_t len);
        const char *client_name, *client_version;   /* clientInfo of initialize; NULL: "glove", GLOVE_VERSION */
        /* The "capabilities" of initialize (an object, borrowed, copied
         * when sent); NULL: {} (none). */
        const json_t *capabilities;
        const struct glove_mcp_upstream_ops *ops;   /* borrowed, outlives the client */
        void *userdata;
};

/*
 * Starts spec's process (spec->launch_path with spec->launch_argv when set,
 * after checking that spec->path is an executable regular file, else
 * spec->path with spec->argv; new session, PR_SET_PDEATHSIG(SIGKILL), stdin and
 * stdout pipes with the client's ends non-blocking, stderr shared with the
 * caller (a pipe the client reads with ops->stderr_line), no other
 * descriptor inherited, default signal dispositions and an empty mask,
 * environment spec->envp or an empty one), adds its event
 * sources to event and sends initialize. Returns once execve succeeded.
 * spec and cfg are borrowed and must outlive *out. On failure nothing is
 * left behind (no descriptor, no child). Errors: "upstream.start" (the
 * message names the upstream), "upstream.event_loop".
 */
int glove_mcp_upstream_new(sd_event *event, const struct glove_mcp_upstream_spec *spec,
                           const struct glove_mcp_upstream_config *cfg, struct glove_mcp_upstream **out,
                           struct glove_error *err);

/* Kills the process group with SIGKILL if it is still running, reaps it,
 * and releases every descriptor, event source and reference. NULL is fine. */
void glove_mcp_upstream_free(struct glove_mcp_upstream *u);

const char *glove_mcp_upstream_name(const struct glove_mcp_upstream *u);
const struct glove_mcp_upstream_spec *glove_mcp_upstream_spec(const struct glove_mcp_upstream *u);
enum glove_mcp_upstream_state glove_mcp_upstream_state(const struct glove_mcp_upstream *u);

/* True once a tools/list listing of it has finished (false for an upstream
 * without the tools capability). */
bool glove_mcp_upstream_listed(const struct glove_mcp_upstream *u);

/* The process id while the process has not been reaped, else -1. */
pid_t glove_mcp_upstream_pid(const struct glove_mcp_upstream *u);

/* The offered tools (borrowed; each has a "name" that
 * cfg->tool_name_valid accepts, no name twice), or NULL before the
 * first listing finished. */
const json_t *glove_mcp_upstream_tools(const struct glove_mcp_upstream *u);

/* True when the offered tools include tool (NUL-terminated; compared with
 * the name's own length). */
bool glove_mcp_upstream_has_tool(const struct glove_mcp_upstream *u, const char *tool);

/* The "capabilities" of its initialize result (borrowed; an object, {} when
 * it gave none), or NULL before initialize was answered. */
const json_t *glove_mcp_upstream_capabilities(const struct glove_mcp_upstream *u);

/* True when its capabilities hold key (e.g. "logging") as an object; when
 * sub is not NULL, also that object's member sub is true (e.g.
 * "listChanged"). */
bool glove_mcp_upstream_offers(const struct glove_mcp_upstream *u, const char *key, const char *sub);

/* The "instructions" string of its initialize result (borrowed, at most
 * GLOVE_MCP_UPSTREAM_INSTRUCTIONS_MAX bytes, no NUL), or NULL when it gave
 * none (or too long ones). */
const char *glove_mcp_upstream_instructions(const struct glove_mcp_upstream *u);

/* True once discovery found it speaks 2026-07-28 only (see "Eras"). */
bool glove_mcp_upstream_modern(const struct glove_mcp_upstream *u);

/* The revision it speaks ("2026-07-28" when modern, the initialize
 * result's protocolVersion when legacy; borrowed), or NULL before that is
 * known. */
const char *glove_mcp_upstream_protocol_version(const struct glove_mcp_upstream *u);

/*
 * Whether value (len bytes: the "result" of a response the response scanner
 * vouched for, so valid JSON) is an object whose top-level "resultType" is
 * absent or exactly "complete" (written without escapes). False for
 * anything else, including text it does not decide (an escaped key): the
 * caller then decides on the decoded tree. O(len), no allocation.
 */
bool glove_mcp_upstream_result_complete(const char *value, size_t len);

/* Reserves the next request id for a request the caller sends. */
int64_t glove_mcp_upstream_next_id(struct glove_mcp_upstream *u);

/* Queues msg (stolen) towards the upstream and writes what it takes.
 * Returns 0, or -EPIPE when it is DEAD (or msg is NULL); a backlog over
 * GLOVE_MCP_UPSTREAM_PENDING_MAX makes it DEAD (ops->dead). */
int glove_mcp_upstream_send(struct glove_mcp_upstream *u, json_t *msg);

/* Holds (hold true) or releases the writes towards the upstream: while
 * held, glove_mcp_upstream_send only queues (bounds and failures as
 * always), and releasing writes what was queued, so that the requests of
 * one read of the agent reach the upstream in one write (issue 13). Not
 * nested: the last call wins. */
void glove_mcp_upstream_hold(struct glove_mcp_upstream *u, bool hold);

/* Signals the process group and the process; a launcher
 * (spec->launch_path) only the process, once, through its pidfd. */
void glove_mcp_upstream_kill(struct glove_mcp_upstream *u, int sig);

/* Gives the upstream up: it becomes DEAD at once (ops->dead with why, not a
 * protocol failure), its process is sent SIGKILL and reaped as usual
 * (ops->exited). No-op when it is DEAD already. why is borrowed. */
void glove_mcp_upstream_abandon(struct glove_mcp_upstream *u, const char *why);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `glove run`: the MCP kernel between a contained agent and host-side
 * upstream MCP servers (issue "glove run"; spec architecture.md, MCP request
 * flow). One sd-event loop multiplexes the agent's channel, every upstream's
 * channel, call timeouts, forwarded signals and process exits, so a slow
 * upstream never stalls another.
 */
#include "glove/run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "glove/audit/log.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/number.h"
#include "glove/base/time.h"
#include "glove/container/seccomp.h"
#include "glove/kernel/calls.h"
#include "glove/policy/policy.h"
#include "egress.h"
#include "exec_records.h"
#include "launch.h"
#include "run_limits.h"
#include "run_protocol.h"
#include "upstream.h"

/* Grace between SIGTERM and SIGKILL for upstreams at the end. */
#define UPSTREAM_GRACE_USEC (2 * 1000 * 1000ULL)
/* Bytes queued towards an agent that is not reading. */
#define AGENT_PENDING_MAX (64 * 1024 * 1024)
/* Largest tools/list cursor (an offset into the combined list). */
#define GLOVE_UPSTREAMS_TOOLS_TOTAL_MAX ((unsigned long long)GLOVE_RUN_UPSTREAMS_MAX * GLOVE_UPSTREAM_TOOLS_MAX)

struct run {
        sd_event *event;
        struct glove_exec_options *opts;
        struct glove_launch *launch;
        struct glove_policy *policy;
        struct glove_upstream ups[GLOVE_RUN_UPSTREAMS_MAX];
        size_t n_ups;
        struct glove_kernel_calls calls;

        struct glove_sandbox sb;
        bool released, sandbox_gone;
        siginfo_t sandbox_si;
        int agent_in, agent_out;   /* Glove's ends: the agent's stdin (write) and stdout (read) */
        int agent_err;             /* read end of the agent's stderr, relayed to Glove's and counted */
        sd_event_source *agent_err_src, *limits_timer;
        struct glove_watch watch;
        struct glove_egress egress;
        /* One timer for every call's timeout: armed at the earliest deadline
         * (calls all get the same timeout, so a new call rarely moves it), and
         * rescanned when it fires. No timer syscall per call. */
        sd_event_source *call_timer;
        uint64_t call_timer_at;   /* armed deadline (monotonic µs), 0 when off */
        struct glove_mcp_reader agent_reader;
        struct glove_mcp_writer agent_writer;
        sd_event_source *agent_out_src, *agent_in_src, *sandbox_src, *startup_timer, *grace_timer;

        uint64_t start_us;
        bool stopping;
        int status;                /* Glove's exit status once decided by a failure; -1 otherwise */
        struct glove_error err;    /* why Glove failed, when it did */
};

static void run_fail(struct run *r);
static void maybe_finish(struct run *r);

/* ------------------------------------------------------------------ audit */

/* Appends a record (fields stolen). A failed append stops the run (fail
 * closed). Without --audit-log nothing happens. Returns 0 or -errno. */
static int audit(struct run *r, const char *event, json_t *fields) {
        _cleanup_json_ json_t *f = fields;
        if (r->launch->audit.fd < 0)
                return 0;
        struct glove_error e = {0};
        int rr = f ? glove_audit_append(&r->launch->audit, event, f, &e)
                   : glove_error_set(&e, ENOMEM, "audit.encode", "cannot build the %s record", event);
        if (rr < 0) {
                glove_error_set(&r->err, e.errnum, e.code, "%s", e.message);
                run_fail(r);
        }
        return rr;
}

/* ------------------------------------------------------------------ writing */

static void agent_flush(struct run *r) {
        if (r->agent_in < 0)
                return;
        int rr = glove_mcp_writer_flush(&r->agent_writer, r->agent_in);
        if (rr == -EAGAIN) {
                sd_event_source_set_enabled(r->agent_in_src, SD_EVENT_ON);
                return;
        }
        sd_event_source_set_enabled(r->agent_in_src, SD_EVENT_OFF);
        if (rr < 0) {
                /* The agent closed its stdin; nothing more can reach it. */
                glove_mcp_writer_free(&r->agent_writer);
                glove_mcp_writer_init(&r->agent_writer, AGENT_PENDING_MAX);
                r->agent_in_src = sd_event_source_disable_unref(r->agent_in_src);
                glove_closep(&r->agent_in);
                r->agent_in = -1;
        }
}

static int send_agent(struct run *r, json_t *msg) {
        _cleanup_json_ json_t *m = msg;
        if (!m || r->agent_in < 0)
                return -EPIPE;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int rr = glove_mcp_encode(m, SIZE_MAX, &buf, &len);
        if (rr == 0)
                rr = glove_mcp_writer_queue(&r->agent_writer, buf, len);
        if (rr < 0) {
                glove_error_set(&r->err, -rr, "mcp.agent_backlog", "the agent does not read its stdin (%zu bytes pending)",
                                r->agent_writer.buf.len);
                run_fail(r);
                return rr;
        }
        agent_flush(r);
        return 0;
}

static void agent_error(struct run *r, const json_t *id, int code, const char *message, const char *reason, const char *rule) {
        send_agent(r, glove_run_error_response(id, code, message, reason, rule));
}

static void upstream_dead(struct run *r, struct glove_upstream *u, const char *why);

static void upstream_flush(struct run *r, struct glove_upstream *u) {
        if (u->in_fd < 0)
                return;
        int rr = glove_mcp_writer_flush(&u->writer, u->in_fd);
        if (rr == -EAGAIN) {
                sd_event_source_set_enabled(u->in_src, SD_EVENT_ON);
                return;
        }
        sd_event_source_set_enabled(u->in_src, SD_EVENT_OFF);
        if (rr < 0)
                upstream_dead(r, u, "its stdin closed");
}

static int send_upstream(struct run *r, struct glove_upstream *u, json_t *msg) {
        _cleanup_json_ json_t *m = msg;
        if (!m || u->state == GLOVE_UPSTREAM_DEAD || u->in_fd < 0)
                return -EPIPE;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int rr = glove_mcp_encode(m, SIZE_MAX, &buf, &len);
        if (rr == 0)
                rr = glove_mcp_writer_queue(&u->writer, buf, len);
        if (rr < 0) {
                upstream_dead(r, u, "it does not read its stdin");
                return rr;
        }
        upstream_flush(r, u);
        return 0;
}

/* ------------------------------------------------------------------ calls */

static json_t *call_result_fields(struct glove_kernel_call *c, const char *status) {
        return json_pack("{s:O,s:s,s:s,s:I}", "id", c->agent_id, "tool", c->tool, "upstream_status", status, "latency_us",
                         (json_int_t)(glove_time_monotonic_us() - c->start_us));
}

static void call_finish(struct run *r, struct glove_kernel_call *c, const char *status) {
        /* The shared timer is left as it is: if it fires for a call that is
         * gone, the scan finds nothing due and re-arms. */
        if (r->launch->audit.fd >= 0)
                audit(r, "call_result", call_result_fields(c, status));
        glove_kernel_calls_remove(&r->calls, c);
}

static void call_timeout(struct run *r, struct glove_kernel_call *c);

/* Arms the shared call timer at deadline when it is off or set later. */
static void call_timer_arm(struct run *r, uint64_t deadline) {
        if (!r->call_timer || (r->call_timer_at && r->call_timer_at <= deadline))
                return;
        sd_event_source_set_time(r->call_timer, deadline);
        sd_event_source_set_enabled(r->call_timer, SD_EVENT_ONESHOT);
        r->call_timer_at = deadline;
}

static int on_call_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        struct run *r = userdata;
        r->call_timer_at = 0;
        uint64_t now = glove_time_monotonic_us(), next = 0;
        for (size_t i = 0, seen = 0; i < GLOVE_KERNEL_CALLS_MAX && seen < r->calls.count; i++) {
                struct glove_kernel_call *c = &r->calls.slots[i];
                if (!c->used)
                        continue;
                uint64_t deadline = c->start_us + (uint64_t)r->opts->call_timeout_ms * 1000;
                if (deadline <= now) {
                        call_timeout(r, c); /* removes c; count drops, so do not count it */
                        continue;
                }
                seen++;
                if (!next || deadline < next)
                        next = deadline;
        }
        if (next)
                call_timer_arm(r, next);
        return 0;
}

static void call_timeout(struct run *r, struct glove_kernel_call *c) {
        struct glove_upstream *u = &r->ups[c->upstream];
        if (!c->cancelled) {
                char rule[64];
                snprintf(rule, sizeof(rule), "--call-timeout %lld", (long long)r->opts->call_timeout_ms);
                agent_error(r, c->agent_id, GLOVE_RPC_UPSTREAM_TIMEOUT, "the upstream did not answer in time", "upstream_timeout", rule);
        }
        json_t *params = json_pack("{s:I,s:s}", "requestId", (json_int_t)c->upstream_id, "reason", "timeout");
        send_upstream(r, u, glove_run_request(NULL, "notifications/cancelled", params));
        call_finish(r, c, c->cancelled ? "cancelled" : "timeout");
}

/* Fails every in-flight call of upstream u (it is gone). */
static void fail_calls_of(struct run *r, size_t upstream) {
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && r->calls.count > 0; i++) {
                struct glove_kernel_call *c = &r->calls.slots[i];
                if (!c->used || c->upstream != upstream)
                        continue;
                if (!c->cancelled)
                        agent_error(r, c->agent_id, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running",
                                    "upstream_unavailable", r->ups[upstream].name);
                call_finish(r, c, "unavailable");
        }
}

/* SHA-256 of the call's arguments as given, whatever their JSON type (a
 * string or null that is refused is digested too), encoded compactly with
 * sorted keys (reals with 17 significant digits); of "{}" when absent.
 * out receives 64 lowercase hex digits and a NUL. Returns 0, or a negative
 * errno (out of memory, digest failure) with out empty. */
static int hash_arguments(const json_t *args, char out[65]) {
        out[0] = '\0';
        /* JSON_ENCODE_ANY: without it jansson encodes only objects and arrays.
         * The encoding holds no raw NUL ("\u0000" stays escaped), so strlen
         * is its length. */
        _cleanup_free_ char *enc =
                args ? json_dumps(args, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17)) : strdup("{}");
        uint8_t d[32];
        if (!enc)
                return -ENOMEM;
        int rr = glove_digest_sha256(enc, strlen(enc), d, NULL);
        if (rr < 0)
                return rr;
        glove_digest_hex_encode(d, sizeof(d), out, 65);
        return 0;
}

/* The fields of a call record, or NULL when they cannot be built (out of
 * memory, or sha empty because the digest failed): audit() then fails the
 * run, so a decision is never recorded without its digest. */
static json_t *decision_fields(struct run *r, const json_t *id, const char *tool, const char *decision, const char *reason,
                               const char *rule, const json_t *args, const char *sha) {
        if (!sha[0])
                return NULL;
        json_t *f = json_pack("{s:O,s:s,s:s,s:s}", "id", id, "tool", tool, "decision", decision, "rule", rule);
        if (!f)
                return NULL;
        if ((reason && json_object_set_new(f, "reason", json_string(reason)) < 0) ||
            json_object_set_new(f, "arguments_sha256", json_string(sha)) < 0 ||
            (r->opts->audit_arguments && json_object_set_new(f, "arguments", args ? json_deep_copy(args) : json_object()) < 0)) {
                json_decref(f);
                return NULL;
        }
        return f;
}

/* Refuses a tools/call: audit first (the refusal stands either way), then
 * answer the agent. */
static void refuse_call(struct run *r, const json_t *id, const char *tool, int code, const char *message, const char *reason,
                        const char *rule, const json_t *args) {
        if (r->launch->audit.fd >= 0) {
                char sha[65];
                (void)hash_arguments(args, sha); /* on failure sha is empty and the record fails closed */
                audit(r, "call", decision_fields(r, id, tool, "deny", reason, rule, args, sha));
        }
        agent_error(r, id, code, message, reason, rule);
}

/* True when u lists tool (NUL-terminated). Compared with the name's own
 * length: "bad\u0000hidden" is not "bad" (such names are dropped when the
 * listing is taken anyway, see handle_list_result). */
static bool upstream_has_tool(const struct glove_upstream *u, const char *tool) {
        size_t i, n = strlen(tool);
        json_t *t;
        json_array_foreach(u->tools, i, t) {
                json_t *name = json_object_get(t, "name");
                if (json_is_string(name) && json_string_length(name) == n && memcmp(json_string_value(name), tool, n) == 0)
                        return true;
        }
        return false;
}

static void handle_tools_call(struct run *r, const json_t *id, json_t *params) {
        json_t *jname = params ? json_object_get(params, "name") : NULL;
        json_t *args = params ? json_object_get(params, "arguments") : NULL;
        const char *name = glove_run_string(jname);
        if (json_is_string(jname) && !name) {
                refuse_call(r, id, "(contains NUL)", GLOVE_RPC_INVALID_PARAMS, "the tool name contains NUL", "invalid_params",
                            "params.name", args);
                return;
        }
        if (!name || strlen(name) >= GLOVE_KERNEL_TOOL_MAX) {
                refuse_call(r, id, name ? "(too long)" : "(none)", GLOVE_RPC_INVALID_PARAMS,
                            "tools/call needs params.name, a tool name string", "invalid_params", "params.name", args);
                return;
        }
        size_t ulen;
        const char *tool;
        struct glove_upstream *u = NULL;
        if (glove_kernel_split_name(name, &ulen, &tool) == 0)
                for (size_t i = 0; i < r->n_ups && !u; i++)
                        if (strlen(r->ups[i].name) == ulen && memcmp(r->ups[i].name, name, ulen) == 0)
                                u = &r->ups[i];
        if (!u || (u->state != GLOVE_UPSTREAM_DEAD && !upstream_has_tool(u, tool))) {
                refuse_call(r, id, name, GLOVE_RPC_INVALID_PARAMS, "unknown tool", "unknown_tool", "no such upstream tool", args);
                return;
        }
        struct glove_policy_verdict v;
        glove_policy_check_call(r->policy, u->name, tool, args, &v);
        if (!v.allowed) {
                bool bad_args = strcmp(v.reason, "invalid_params") == 0;
                refuse_call(r, id, name, bad_args ? GLOVE_RPC_INVALID_PARAMS : GLOVE_RPC_POLICY_DENIED,
                            bad_args ? "tools/call arguments must be an object" : "the call is not allowed by policy", v.reason,
                            v.rule, args);
                return;
        }
        if (u->state == GLOVE_UPSTREAM_DEAD) {
                refuse_call(r, id, name, GLOVE_RPC_UPSTREAM_UNAVAILABLE, "the upstream is not running", "upstream_unavailable",
                            u->name, args);
                return;
        }
        int e;
        size_t ui = (size_t)(u - r->ups);
        struct glove_kernel_call *c = glove_kernel_calls_add(&r->calls, id, ui, u->next_id, &e);
        if (!c) {
                if (e == -EEXIST)
                        refuse_call(r, id, name, GLOVE_RPC_INVALID_REQUEST, "a request with this id is already in flight",
                                    "invalid_params", "request id in flight", args);
                else
                        refuse_call(r, id, name, GLOVE_RPC_INVALID_REQUEST, "too many calls in flight", "invalid_params",
                                    "in-flight bound", args);
                return;
        }
        u->next_id++;
        c->owner = r;
        snprintf(c->tool, sizeof(c->tool), "%s", name);
        if (r->launch->audit.fd >= 0)
                (void)hash_arguments(args, c->arguments_sha256); /* only audit records use it; empty fails them closed */
        json_t *meta = json_object_get(params, "_meta");
        json_t *token = json_is_object(meta) ? json_object_get(meta, "progressToken") : NULL;
        if (token)
                c->progress_token = json_incref(token);
        /* Fail closed: the decision is on record before the call leaves. */
        if (r->launch->audit.fd >= 0 &&
            audit(r, "call", decision_fields(r, id, name, "allow", NULL, v.rule, args, c->arguments_sha256)) < 0) {
                agent_error(r, id, GLOVE_RPC_INTERNAL_ERROR, "audit append failed; the call was not forwarded", NULL, NULL);
                glove_kernel_calls_remove(&r->calls, c);
                return;
        }
        /* The agent's params are forwarded as they are (the message is ours
         * and not used after this), with the tool's own name; json_string
         * copies tool before the old name is released. */
        json_t *fwd = json_incref(params);
        json_object_set_new(fwd, "name", json_string(tool));
        json_t *uid = json_integer(c->upstream_id);
        c->start_us = glove_time_monotonic_us();
        call_timer_arm(r, c->start_us + (uint64_t)r->opts->call_timeout_ms * 1000);
        send_upstream(r, u, glove_run_request(uid, "tools/call", fwd));
        json_decref(uid);
}

static void handle_tools_list(struct run *r, const json_t *id, json_t *params) {
        size_t start = 0;
        json_t *cursor = params ? json_object_get(params, "cursor") : NULL;
        if (cursor) {
                uint64_t v = 0;
                /* Our cursors are decimal offsets; "100\u0000x" is none. */
                const char *text = glove_run_string(cursor);
                if (!text || glove_number_parse_u64(text, 0, 0, GLOVE_UPSTREAMS_TOOLS_TOTAL_MAX, &v) < 0) {
                        agent_error(r, id, GLOVE_RPC_INVALID_PARAMS, "invalid cursor", "invalid_params", "params.cursor");
                        return;
                }
                start = (size_t)v;
        }
        json_t *tools = json_array();
        size_t index = 0;
        bool more = false;
        for (size_t i = 0; i < r->n_ups && !more; i++) {
                struct glove_upstream *u = &r->ups[i];
                if (u->state == GLOVE_UPSTREAM_DEAD || !u->tools)
                        continue;
                size_t k;
                json_t *t;
                json_array_foreach(u->tools, k, t) {
                        /* A C string that is the whole name: u->tools holds
                         * only valid, distinct names (handle_list_result). */
                        const char *tname = json_string_value(json_object_get(t, "name"));
                        if (!glove_policy_tool_visible(r->policy, u->name, tname))
                                continue;
                        if (index++ < start)
                                continue;
                        if (json_array_size(tools) == GLOVE_RUN_TOOLS_PAGE) {
                                more = true;
                                break;
                        }
                        json_t *copy = json_deep_copy(t);
                        char qualified[GLOVE_KERNEL_TOOL_MAX + 64];
                        snprintf(qualified, sizeof(qualified), "%s.%s", u->name, tname);
                        json_object_set_new(copy, "name", json_string(qualified));
                        json_array_append_new(tools, copy);
                }
        }
        json_t *result = json_pack("{s:o}", "tools", tools);
        if (more) {
                char next[32];
                snprintf(next, sizeof(next), "%zu", start + GLOVE_RUN_TOOLS_PAGE);
                json_object_set_new(result, "nextCursor", json_string(next));
        }
        send_agent(r, glove_run_result(id, result));
}

static void handle_agent_cancel(struct run *r, json_t *params) {
        json_t *rid = params ? json_object_get(params, "requestId") : NULL;
        struct glove_kernel_call *c = rid ? glove_kernel_calls_by_agent(&r->calls, rid) : NULL;
        if (!c || c->cancelled)
                return;
        c->cancelled = true;
        json_t *fwd = json_pack("{s:I}", "requestId", (json_int_t)c->upstream_id);
        json_t *reason = json_object_get(params, "reason");
        if (json_is_string(reason))
                json_object_set(fwd, "reason", reason);
        send_upstream(r, &r->ups[c->upstream], glove_run_request(NULL, "notifications/cancelled", fwd));
}

static void handle_agent_message(struct run *r, struct glove_mcp_message *m) {
        if (m->kind == GLOVE_MCP_RESPONSE) {
                /* Glove never sends the agent requests: nothing to answer. */
                audit(r, "response_dropped", json_pack("{s:s,s:O}", "from", "agent", "id", m->id));
                return;
        }
        const char *method = m->method;
        if (m->kind == GLOVE_MCP_NOTIFICATION) {
                if (strcmp(method, "notifications/cancelled") == 0)
                        handle_agent_cancel(r, m->params);
                return; /* notifications/initialized and others need no action */
        }
        if (strcmp(method, "initialize") == 0)
                send_agent(r, glove_run_result(m->id, glove_run_initialize_result(m->params)));
        else if (strcmp(method, "ping") == 0)
                send_agent(r, glove_run_result(m->id, json_object()));
        else if (strcmp(method, "tools/list") == 0)
                handle_tools_list(r, m->id, m->params);
        else if (strcmp(method, "tools/call") == 0)
                handle_tools_call(r, m->id, m->params);
        else
                agent_error(r, m->id, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", NULL, NULL);
}

static int on_agent_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)revents;
        struct run *r = userdata;
        ssize_t n = glove_mcp_reader_fill(&r->agent_reader, fd);
        if (n == -EAGAIN)
                return 0;
        /* The MCP channel counts towards the output limit like stderr. */
        if (n > 0 && glove_watch_output(&r->watch, (size_t)n) < (size_t)n)
                return 0;
        for (;;) {
                const char *line;
                size_t len;
                int rr = glove_mcp_reader_next(&r->agent_reader, &line, &len);
                if (rr == -EMSGSIZE) {
                        audit(r, "frame_oversized", json_pack("{s:s,s:I}", "from", "agent", "max_frame", (json_int_t)r->opts->max_frame));
                        glove_error_set(&r->err, EMSGSIZE, "mcp.frame_too_large",
                                        "the agent sent a line longer than --max-frame %zu bytes; the channel is closed", r->opts->max_frame);
                        run_fail(r);
                        return 0;
                }
                if (rr <= 0)
                        break;
                struct glove_mcp_message m;
                json_t *rid = NULL;
                struct glove_error e = {0};
                if (glove_mcp_message_parse(line, len, r->opts->max_frame, GLOVE_MCP_PARSE_BOUND_VALUES, &m, &rid, &e) < 0) {
                        bool parse = strcmp(e.code, "mcp.parse") == 0;
                        agent_error(r, parse ? NULL : rid, parse ? GLOVE_RPC_PARSE_ERROR : GLOVE_RPC_INVALID_REQUEST, e.message,
                                    NULL, NULL);
                        if (rid)
                                json_decref(rid);
                        continue;
                }
                if (rid)
                        json_decref(rid);
                handle_agent_message(r, &m);
                glove_mcp_message_free(&m);
                if (r->stopping)
                        return 0;
        }
        if (n <= 0) {
                /* End of the agent's output (or a read error): nothing more will
                 * come; the sandbox's exit ends the run. */
                r->agent_out_src = sd_event_source_disable_unref(r->agent_out_src);
                glove_closep(&r->agent_out);
                r->agent_out = -1;
        }
        return 0;
}

static int on_agent_stderr(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)revents;
        struct run *r = userdata;
        char buf[65536];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                sd_event_source_set_enabled(s, SD_EVENT_OFF);
                return 0;
        }
        size_t relay = glove_watch_output(&r->watch, (size_t)n);
        if (relay > 0)
                (void)glove_fd_write_all(2, buf, relay);
        return 0;
}

static int on_limits_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct run *r = userdata;
        int next_ms = glove_watch_poll(&r->watch);
        if (!r->sandbox_gone) {
                sd_event_source_set_time(s, usec + (uint64_t)next_ms * 1000);
                sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

static int on_agent_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        (void)revents;
        agent_flush(userdata);
        return 0;
}

/* ------------------------------------------------------------------ upstreams */

/* Asks u for a page of tools; cursor (borrowed, NULL for the first page) is
 * the upstream's nextCursor, sent back as the same JSON string: opaque, NUL
 * and all. */
static void upstream_send_list(struct run *r, struct glove_upstream *u, json_t *cursor) {
        u->control_id = u->next_id++;
        json_t *id = json_integer(u->control_id);
        json_t *params = cursor ? json_pack("{s:O}", "cursor", cursor) : json_object();
        send_upstream(r, u, glove_run_request(id, "tools/list", params));
        json_decref(id);
}

static void upstream_start_listing(struct run *r, struct glove_upstream *u) {
        if (!u->has_tools) {
                if (!u->tools)
                        u->tools = json_array();
                u->state = GLOVE_UPSTREAM_READY;
                return;
        }
        if (u->listing)
                json_decref(u->listing);
        u->listing = json_array();
        u->pages = 0;
        u->listed = 0;
        u->state = GLOVE_UPSTREAM_LISTING;
        upstream_send_list(r, u, NULL);
}

static void check_startup(struct run *r);

static void upstream_protocol_error(struct run *r, struct glove_upstream *u, const char *what) {
        glove_error_set(&r->err, EPROTO, "upstream.protocol", "upstream %s: %s", u->name, what);
        upstream_dead(r, u, what);
}

static void handle_initialize_result(struct run *r, struct glove_upstream *u, json_t *result) {
        const char *v = glove_run_string(json_object_get(result, "protocolVersion"));
        if (!glove_run_version_supported(v)) {
                upstream_protocol_error(r, u, "initialize answered with an unsupported protocolVersion");
                return;
        }
        snprintf(u->protocol_version, sizeof(u->protocol_version), "%s", v);
        json_t *caps = json_object_get(result, "capabilities");
        u->has_tools = json_is_object(caps) && json_is_object(json_object_get(caps, "tools"));
        send_upstream(r, u, glove_run_request(NULL, "notifications/initialized", NULL));
        upstream_start_listing(r, u);
        check_startup(r);
}

/* Why an entry of an upstream's tools/list is not offered (a reason of the
 * tool_dropped record), or NULL when it is: an object whose "name" is a TOOL
 * a rule could name, judged with its JSON length so that a NUL inside
 * refuses the name instead of cutting it (docs/policy.md). */
static const char *tool_entry_problem(const json_t *t) {
        if (!json_is_object(t))
                return "not_an_object";
        json_t *name = json_object_get(t, "name");
        if (!json_is_string(name) || !glove_policy_tool_name_valid(json_string_value(name), json_string_length(name)))
                return "invalid_name";
        return NULL;
}

/* Longest part of a dropped tool's name written to its tool_dropped
 * record, in bytes (the record also gives the whole length). */
#define TOOL_DROPPED_NAME_MAX 256

/* Audits an entry t of u's listing that is dropped for reason: "tool" is the
 * name as a JSON string (a NUL shows as \u0000), cut at a character boundary
 * to TOOL_DROPPED_NAME_MAX bytes, and "tool_bytes" its whole length; "tool"
 * is null when the entry has no string name. Returns audit()'s result. */
static int audit_tool_dropped(struct run *r, struct glove_upstream *u, const json_t *t, const char *reason) {
        if (r->launch->audit.fd < 0)
                return 0;
        json_t *name = json_is_object(t) ? json_object_get(t, "name") : NULL;
        json_t *f = json_pack("{s:s}", "upstream", u->name);
        if (f && json_is_string(name)) {
                const char *s = json_string_value(name);
                size_t len = json_string_length(name), n = len;
                if (n > TOOL_DROPPED_NAME_MAX) {
                        n = TOOL_DROPPED_NAME_MAX; /* the text is valid UTF-8: back up over continuation bytes */
                        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
                                n--;
                }
                if (json_object_set_new(f, "tool", json_stringn(s, n)) < 0 ||
                    json_object_set_new(f, "tool_bytes", json_integer((json_int_t)len)) < 0)
                        f = (json_decref(f), NULL);
        } else if (f && json_object_set_new(f, "tool", json_null()) < 0) {
                f = (json_decref(f), NULL);
        }
        if (f && json_object_set_new(f, "reason", json_string(reason)) < 0)
                f = (json_decref(f), NULL);
        return audit(r, "tool_dropped", f);
}

struct name_ref {
        const char *s;
        size_t len;
        size_t index;   /* position in the listing */
};

/* Orders names bytewise, a name before the longer names it is a prefix of. */
static int name_ref_cmp(const void *a, const void *b) {
        const struct name_ref *x = a, *y = b;
        int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
        if (c)
                return c;
        return x->len < y->len ? -1 : x->len > y->len;
}

/* Removes from u->listing (valid entries only) every entry whose name is
 * listed more than once, each copy audited as tool_dropped "duplicate_name":
 * which of two definitions the upstream honours is unknown, so neither is
 * offered (fail closed). O(n log n) in the listing's size, at most
 * GLOVE_UPSTREAM_TOOLS_MAX. Returns 0, or a negative errno: out of memory
 * (u->listing unchanged), or an audit append that failed (the run is then
 * failing, r->status set). */
static int drop_duplicates(struct run *r, struct glove_upstream *u) {
        size_t n = json_array_size(u->listing);
        if (n < 2)
                return 0;
        _cleanup_free_ struct name_ref *refs = calloc(n, sizeof(*refs));
        _cleanup_free_ bool *dup = calloc(n, sizeof(*dup));
        if (!refs || !dup)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *name = json_object_get(json_array_get(u->listing, i), "name");
                refs[i] = (struct name_ref){json_string_value(name), json_string_length(name), i};
        }
        qsort(refs, n, sizeof(*refs), name_ref_cmp);
        bool any = false;
        for (size_t i = 1; i < n; i++) {
                if (name_ref_cmp(&refs[i - 1], &refs[i]) != 0)
                        continue;
                dup[refs[i - 1].index] = true;
                dup[refs[i].index] = true;
                any = true;
        }
        if (!any)
                return 0;
        json_t *kept = json_array();
        if (!kept)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *t = json_array_get(u->listing, i);
                int rr = dup[i] ? audit_tool_dropped(r, u, t, "duplicate_name") : json_array_append(kept, t);
                if (rr < 0) {
                        json_decref(kept);
                        return dup[i] ? rr : -ENOMEM;
                }
        }
        json_decref(u->listing);
        u->listing = kept;
        return 0;
}

static void handle_list_result(struct run *r, struct glove_upstream *u, json_t *result) {
        json_t *tools = json_object_get(result, "tools");
        if (!json_is_array(tools)) {
                upstream_protocol_error(r, u, "tools/list answered without a tools array");
                return;
        }
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
                /* Every entry counts, offered or not: the records of dropped
                 * ones are bounded too. */
                if (u->listed++ >= GLOVE_UPSTREAM_TOOLS_MAX) {
                        upstream_protocol_error(r, u, "more tools/list entries than Glove accepts from one upstream");
                        return;
                }
                const char *problem = tool_entry_problem(t);
                if (problem) {
                        /* Never visible, never callable, on record. */
                        if (audit_tool_dropped(r, u, t, problem) < 0)
                                return;
                        continue;
                }
                if (json_array_append(u->listing, t) < 0) {
                        upstream_protocol_error(r, u, "out of memory while listing its tools");
                        return;
                }
        }
        json_t *cursor = json_object_get(result, "nextCursor");
        if (json_is_string(cursor) && json_string_length(cursor) > 0) {
                if (++u->pages >= GLOVE_UPSTREAM_PAGES_MAX) {
                        upstream_protocol_error(r, u, "too many tools/list pages");
                        return;
                }
                upstream_send_list(r, u, cursor);
                return;
        }
        if (drop_duplicates(r, u) < 0) {
                if (r->status < 0) /* not an audit failure, which stops the run itself */
                        upstream_protocol_error(r, u, "out of memory while listing its tools");
                return;
        }
        bool changed = u->ever_ready;
        if (u->tools)
                json_decref(u->tools);
        u->tools = u->listing;
        u->listing = NULL;
        u->state = GLOVE_UPSTREAM_READY;
        if (!u->ever_ready)
                audit(r, "upstream_ready", json_pack("{s:s,s:s,s:I}", "name", u->name, "protocol_version", u->protocol_version,
                                                     "tools", (json_int_t)json_array_size(u->tools)));
        u->ever_ready = true;
        if (u->relist) {
                u->relist = false;
                upstream_start_listing(r, u);
                return;
        }
        if (changed && r->released)
                send_agent(r, glove_run_request(NULL, "notifications/tools/list_changed", NULL));
        check_startup(r);
}

static void handle_upstream_response(struct run *r, struct glove_upstream *u, struct glove_mcp_message *m) {
        size_t ui = (size_t)(u - r->ups);
        if (json_is_integer(m->id) && json_integer_value(m->id) == u->control_id && u->state != GLOVE_UPSTREAM_READY) {
                u->control_id = 0;
                json_t *result = json_object_get(m->root, "result");
                if (!result) {
                        upstream_protocol_error(r, u, u->state == GLOVE_UPSTREAM_INITIALIZING ? "initialize failed"
                                                                                            : "tools/list failed");
                        return;
                }
                if (u->state == GLOVE_UPSTREAM_INITIALIZING)
                        handle_initialize_result(r, u, result);
                else
                        handle_list_result(r, u, result);
                return;
        }
        struct glove_kernel_call *c = glove_kernel_calls_by_upstream(&r->calls, ui, m->id);
        if (!c) {
                audit(r, "response_dropped", json_pack("{s:s,s:O}", "from", u->name, "id", m->id));
                return;
        }
        bool is_error = json_object_get(m->root, "error") != NULL;
        if (!c->cancelled) {
                json_t *out = json_pack("{s:s,s:O}", "jsonrpc", "2.0", "id", c->agent_id);
                json_object_set(out, is_error ? "error" : "result", json_object_get(m->root, is_error ? "error" : "result"));
                send_agent(r, out);
        }
        call_finish(r, c, c->cancelled ? "cancelled" : is_error ? "error" : "ok");
}

static void handle_upstream_message(struct run *r, struct glove_upstream *u, struct glove_mcp_message *m) {
        if (m->kind == GLOVE_MCP_RESPONSE) {
                handle_upstream_response(r, u, m);
                return;
        }
        if (m->kind == GLOVE_MCP_REQUEST) {
                /* Glove offers upstreams no client capabilities (roots,
                 * sampling, elicitation); only ping is answered. */
                if (strcmp(m->method, "ping") == 0)
                        send_upstream(r, u, glove_run_result(m->id, json_object()));
                else
                        send_upstream(r, u, glove_run_error_response(m->id, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", NULL, NULL));
                return;
        }
        if (strcmp(m->method, "notifications/tools/list_changed") == 0) {
                if (u->state == GLOVE_UPSTREAM_LISTING)
                        u->relist = true;
                else if (u->state == GLOVE_UPSTREAM_READY)
                        upstream_start_listing(r, u);
        } else if (strcmp(m->method, "notifications/progress") == 0 && r->released) {
                /* Relayed only for a call of this upstream that carries the token. */
                json_t *token = m->params ? json_object_get(m->params, "progressToken") : NULL;
                for (size_t i = 0, seen = 0; token && i < GLOVE_KERNEL_CALLS_MAX && seen < r->calls.count; i++) {
                        struct glove_kernel_call *c = &r->calls.slots[i];
                        if (!c->used)
                                continue;
                        seen++;
                        if (c->upstream == (size_t)(u - r->ups) && !c->cancelled && c->progress_token &&
                            json_equal(c->progress_token, token)) {
                                send_agent(r, json_incref(m->root));
                                break;
                        }
                }
        }
        /* Other notifications (logging, resources) are not relayed. */
}

static int on_upstream_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)revents;
        struct glove_upstream *u = userdata;
        struct run *r = u->owner;
        ssize_t n = glove_mcp_reader_fill(&u->reader, fd);
        if (n == -EAGAIN)
                return 0;
        for (;;) {
                const char *line;
                size_t len;
                int rr = glove_mcp_reader_next(&u->reader, &line, &len);
                if (rr == -EMSGSIZE) {
                        audit(r, "frame_oversized", json_pack("{s:s,s:I}", "from", u->name, "max_frame", (json_int_t)r->opts->max_frame));
                        upstream_dead(r, u, "it sent a line longer than --max-frame");
                        return 0;
                }
                if (rr <= 0)
                        break;
                struct glove_mcp_message m;
                if (glove_mcp_message_parse(line, len, r->opts->max_frame, 0, &m, NULL, NULL) < 0) {
                        audit(r, "upstream_invalid_message", json_pack("{s:s}", "from", u->name));
                        continue;
                }
                handle_upstream_message(r, u, &m);
                glove_mcp_message_free(&m);
                if (u->state == GLOVE_UPSTREAM_DEAD || r->stopping)
                        return 0;
        }
        if (n <= 0)
                upstream_dead(r, u, "its stdout closed");
        return 0;
}

static int on_upstream_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        (void)revents;
        struct glove_upstream *u = userdata;
        upstream_flush(u->owner, u);
        return 0;
}

/* Marks an upstream gone: its tools answer upstream_unavailable from now on.
 * The process is killed; its exit is reaped by on_upstream_exit. */
static void upstream_dead(struct run *r, struct glove_upstream *u, const char *why) {
        if (u->state == GLOVE_UPSTREAM_DEAD)
                return;
        bool during_startup = !u->ever_ready;
        u->state = GLOVE_UPSTREAM_DEAD;
        u->out_src = sd_event_source_disable_unref(u->out_src);
        u->in_src = sd_event_source_disable_unref(u->in_src);
        glove_closep(&u->in_fd);
        glove_closep(&u->out_fd);
        u->in_fd = u->out_fd = -1;
        glove_upstream_kill(u, SIGKILL);
        if (!r->stopping)
                audit(r, "upstream_failed", json_pack("{s:s,s:s}", "name", u->name, "reason", why));
        fail_calls_of(r, (size_t)(u - r->ups));
        if (during_startup && !r->released) {
                glove_error_set(&r->err, EPROTO, "upstream.start", "upstream %s failed during initialization: %s", u->name, why);
                run_fail(r);
        }
}

static int on_upstream_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        (void)s;
        struct glove_upstream *u = userdata;
        struct run *r = u->owner;
        u->exit_code = si->si_code == CLD_EXITED ? si->si_status : -1;
        u->exit_signal = si->si_code == CLD_EXITED ? -1 : si->si_status;
        u->pid = -1;
        u->child_src = sd_event_source_disable_unref(u->child_src);
        /* Drain what it wrote before exiting, then mark it gone. */
        if (u->out_fd >= 0 && u->state != GLOVE_UPSTREAM_DEAD)
                on_upstream_readable(NULL, u->out_fd, 0, u);
        upstream_dead(r, u, "it exited");
        json_t *f = json_pack("{s:s}", "name", u->name);
        json_object_set_new(f, "status", u->exit_code >= 0 ? json_integer(u->exit_code) : json_null());
        json_object_set_new(f, "signal", u->exit_signal >= 0 ? json_integer(u->exit_signal) : json_null());
        audit(r, "upstream_exit", f);
        maybe_finish(r);
        return 0;
}

/* ------------------------------------------------------------------ lifecycle */

static json_t *launch_fields(struct run *r) {
        json_t *f = glove_exec_launch_fields(r->opts->program, &r->launch->grants, &r->launch->env, &r->sb);
        if (!f)
                return NULL;
        json_t *ups = json_array();
        for (size_t i = 0; i < r->n_ups; i++) {
                json_t *argv = json_array();
                for (size_t k = 0; r->ups[i].argv[k]; k++)
                        json_array_append_new(argv, glove_audit_string(r->ups[i].argv[k], strlen(r->ups[i].argv[k])));
                json_array_append_new(ups, json_pack("{s:s,s:o,s:o}", "name", r->ups[i].name, "path",
                                                     glove_audit_string(r->ups[i].path, strlen(r->ups[i].path)), "argv", argv));
        }
        json_object_set_new(f, "upstreams", ups);
        return f;
}

static void check_startup(struct run *r) {
        if (r->released || r->stopping)
                return;
        for (size_t i = 0; i < r->n_ups; i++)
                if (r->ups[i].state != GLOVE_UPSTREAM_READY)
                        return;
        r->startup_timer = sd_event_source_disable_unref(r->startup_timer);
        if (audit(r, "launch", launch_fields(r)) < 0)
                return;
        struct glove_error e = {0};
        if (glove_sandbox_release(&r->sb, &e) < 0) {
                glove_error_set(&r->err, e.errnum, e.code, "%s", e.message);
                run_fail(r);
                return;
        }
        r->released = true;
        r->start_us = glove_time_monotonic_us();
        r->watch.start_us = r->start_us;
}

static int on_startup_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        struct run *r = userdata;
        for (size_t i = 0; i < r->n_ups; i++)
                if (r->ups[i].state != GLOVE_UPSTREAM_READY) {
                        glove_error_set(&r->err, ETIMEDOUT, "upstream.start", "upstream %s did not finish initializing within %lld ms",
                                        r->ups[i].name, (long long)r->opts->call_timeout_ms);
                        break;
                }
        run_fail(r);
        return 0;
}

static int on_sandbox_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        (void)s;
        struct run *r = userdata;
        r->sandbox_si = *si;
        r->sandbox_gone = true;
        r->sandbox_src = sd_event_source_disable_unref(r->sandbox_src);
        /* Answers already queued still go out if the agent reads them; the
         * agent is gone, so drop them. */
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && r->calls.count > 0; i++)
                if (r->calls.slots[i].used)
                        call_finish(r, &r->calls.slots[i], "agent_exited");
        if (!r->stopping) {
                r->stopping = true;
                for (size_t i = 0; i < r->n_ups; i++)
                        glove_upstream_kill(&r->ups[i], SIGTERM);
        }
        maybe_finish(r);
        return 0;
}

static int on_grace_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        struct run *r = userdata;
        for (size_t i = 0; i < r->n_ups; i++)
                glove_upstream_kill(&r->ups[i], SIGKILL);
        return 0;
}

/* Exits the loop once the sandbox and every upstream process are gone. */
static void maybe_finish(struct run *r) {
        if (!r->sandbox_gone)
                return;
        for (size_t i = 0; i < r->n_ups; i++)
                if (r->ups[i].pid > 0) {
                        if (!r->grace_timer)
                                sd_event_add_time_relative(r->event, &r->grace_timer, CLOCK_MONOTONIC, UPSTREAM_GRACE_USEC, 1000,
                                                           on_grace_timeout, r);
                        return;
                }
        sd_event_exit(r->event, 0);
}

/* Stops everything after a failure of Glove: the agent is killed, upstreams
 * are asked to end, and Glove exits 125 once all are gone. */
static void run_fail(struct run *r) {
        if (r->status < 0)
                r->status = GLOVE_EXIT_FAILURE;
        if (r->stopping && r->sandbox_gone)
                return;
        r->stopping = true;
        if (r->agent_out_src)
                r->agent_out_src = sd_event_source_disable_unref(r->agent_out_src);
        glove_sandbox_signal(&r->sb, SIGKILL);
        for (size_t i = 0; i < r->n_ups; i++)
                glove_upstream_kill(&r->ups[i], SIGTERM);
}

static int on_forward_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void)s;
        struct run *r = userdata;
        if (r->released)
                glove_sandbox_signal(&r->sb, (int)si->ssi_signo);
        else {
                glove_error_set(&r->err, EINTR, "run.interrupted", "interrupted by signal %u before the agent started", si->ssi_signo);
                run_fail(r);
        }
        return 0;
}

static int setup_policy(struct run *r, struct glove_error *err) {
        int rr = glove_policy_new(&r->policy);
        if (rr < 0)
                return glove_error_set(err, -rr, "policy.nomem", "out of memory");
        for (size_t i = 0; i < r->opts->n_allow; i++)
                if ((rr = glove_policy_allow(r->policy, r->opts->allow[i], err)) < 0)
                        return rr;
        for (size_t i = 0; i < r->opts->n_deny; i++)
                if ((rr = glove_policy_deny(r->policy, r->opts->deny[i], err)) < 0)
                        return rr;
        for (size_t i = 0; i < r->opts->n_allow_arg; i++)
                if ((rr = glove_policy_allow_arg(r->policy, r->opts->allow_arg[i], err)) < 0)
                        return rr;
        if (r->opts->policy_file && (rr = glove_policy_load_file(r->policy, r->opts->policy_file, err)) < 0)
                return rr;
        return 0;
}

static int setup_upstreams(struct run *r, struct glove_error *err) {
        if (r->opts->n_upstreams == 0)
                return glove_error_set(err, EINVAL, "usage.no_upstream", "glove run needs at least one --upstream NAME=CMD[,ARG...]");
        for (size_t i = 0; i < r->opts->n_upstreams; i++) {
                struct glove_upstream *u = &r->ups[r->n_ups];
                int rr = glove_upstream_parse(r->opts->upstreams[i], u, err);
                r->n_ups++;
                if (rr < 0)
                        return rr;
                u->owner = r;
                for (size_t k = 0; k + 1 < r->n_ups; k++)
                        if (strcmp(r->ups[k].name, u->name) == 0)
                                return glove_error_set(err, EINVAL, "upstream.duplicate", "upstream name %s given twice", u->name);
                rr = glove_upstream_build_env(u, r->opts->upstream_env, r->opts->n_upstream_env, err);
                if (rr < 0)
                        return rr;
        }
        for (size_t i = 0; i < r->opts->n_upstream_env; i++) {
                const char *colon = strchr(r->opts->upstream_env[i], ':');
                bool known = false;
                for (size_t k = 0; colon && k < r->n_ups; k++)
                        known = known || ((size_t)(colon - r->opts->upstream_env[i]) == strlen(r->ups[k].name) &&
                                          strncmp(r->opts->upstream_env[i], r->ups[k].name, strlen(r->ups[k].name)) == 0);
                if (!known)
                        return glove_error_set(err, EINVAL, "upstream.bad_env", "--upstream-env %s names no --upstream",
                                               r->opts->upstream_env[i]);
        }
        for (size_t i = 0; i < r->n_ups; i++) {
                struct glove_upstream *u = &r->ups[i];
                int rr = glove_upstream_start(u, r->opts->max_frame, err);
                if (rr < 0)
                        return rr;
                audit(r, "upstream_start", json_pack("{s:s,s:o,s:i}", "name", u->name, "path",
                                                     glove_audit_string(u->path, strlen(u->path)), "pid", (int)u->pid));
                if (r->status >= 0)
                        return glove_error_set(err, r->err.errnum, r->err.code, "%s", r->err.message);
                rr = sd_event_add_io(r->event, &u->out_src, u->out_fd, EPOLLIN, on_upstream_readable, u);
                if (rr >= 0)
                        rr = sd_event_add_io(r->event, &u->in_src, u->in_fd, EPOLLOUT, on_upstream_writable, u);
                if (rr >= 0)
                        rr = sd_event_source_set_enabled(u->in_src, SD_EVENT_OFF);
                if (rr >= 0)
                        rr = sd_event_add_child_pidfd(r->event, &u->child_src, u->pidfd, WEXITED, on_upstream_exit, u);
                if (rr < 0)
                        return glove_error_set(err, -rr, "run.event_loop", "event loop: %s", strerror(-rr));
                u->state = GLOVE_UPSTREAM_INITIALIZING;
                u->control_id = u->next_id++;
                json_t *id = json_integer(u->control_id);
                json_t *params = json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion", glove_run_protocol_versions[0],
                                           "capabilities", "clientInfo", "name", "glove", "version", GLOVE_VERSION);
                send_upstream(r, u, glove_run_request(id, "initialize", params));
                json_decref(id);
        }
        return 0;
}

static int setup_sandbox(struct run *r, struct glove_error *err) {
        int to_agent[2], from_agent[2], agent_err[2];
        if (pipe2(to_agent, O_CLOEXEC) < 0 || pipe2(from_agent, O_CLOEXEC) < 0 || pipe2(agent_err, O_CLOEXEC) < 0)
                return glove_error_set(err, errno, "run.pipe", "pipe: %s", strerror(errno));
        struct glove_sandbox_config cfg = {
                .argv = r->opts->program,
                .envp = r->launch->env.envp,
                .grants = &r->launch->grants,
                .seccomp = &glove_seccomp_prebuilt,
                .stdin_fd = to_agent[0],
                .stdout_fd = from_agent[1],
                .stderr_fd = agent_err[1],
                .pid1_fd = -1,
                .parent_death_kill = true,
        };
        struct glove_limits limits;
        glove_limits_resolve(r->opts, &limits);
        int rr = glove_egress_setup(&r->egress, r->opts, &r->launch->audit, &r->launch->env, &cfg, err);
        if (rr >= 0)
                rr = glove_watch_setup(&r->watch, &limits, &cfg, err);
        if (rr >= 0)
                rr = glove_sandbox_spawn(&cfg, &r->sb, err);
        close(to_agent[0]);
        close(from_agent[1]);
        close(agent_err[1]);
        r->agent_in = to_agent[1];
        r->agent_out = from_agent[0];
        r->agent_err = agent_err[0];
        if (rr < 0)
                return rr;
        rr = glove_watch_attach(&r->watch, &r->sb, err);
        if (rr >= 0)
                rr = glove_egress_start(&r->egress, &r->sb, err);
        if (rr < 0)
                return rr;
        if (fcntl(r->agent_err, F_SETFL, O_NONBLOCK) < 0)
                return glove_error_set(err, errno, "run.pipe", "fcntl: %s", strerror(errno));
        rr = sd_event_add_io(r->event, &r->agent_err_src, r->agent_err, EPOLLIN, on_agent_stderr, r);
        if (rr >= 0)
                rr = sd_event_add_time_relative(r->event, &r->limits_timer, CLOCK_MONOTONIC, GLOVE_LIMITS_POLL_MS * 1000, 1000,
                                                on_limits_timer, r);
        if (rr >= 0)
                rr = sd_event_add_time(r->event, &r->call_timer, CLOCK_MONOTONIC, 0, 1000, on_call_timer, r);
        if (rr >= 0)
                rr = sd_event_source_set_enabled(r->call_timer, SD_EVENT_OFF);
        if (rr < 0)
                return glove_error_set(err, -rr, "run.event_loop", "event loop: %s", strerror(-rr));
        if (fcntl(r->agent_in, F_SETFL, O_NONBLOCK) < 0 || fcntl(r->agent_out, F_SETFL, O_NONBLOCK) < 0)
                return glove_error_set(err, errno, "run.pipe", "fcntl: %s", strerror(errno));
        rr = sd_event_add_io(r->event, &r->agent_out_src, r->agent_out, EPOLLIN, on_agent_readable, r);
        if (rr >= 0)
                rr = sd_event_add_io(r->event, &r->agent_in_src, r->agent_in, EPOLLOUT, on_agent_writable, r);
        if (rr >= 0)
                rr = sd_event_source_set_enabled(r->agent_in_src, SD_EVENT_OFF);
        if (rr >= 0)
                rr = sd_event_add_child_pidfd(r->event, &r->sandbox_src, r->sb.pidfd, WEXITED, on_sandbox_exit, r);
        if (rr < 0)
                return glove_error_set(err, -rr, "run.event_loop", "event loop: %s", strerror(-rr));
        return 0;
}

/* Glove is a child subreaper during glove run: a process an upstream left
 * behind (a grandchild whose parent exited) becomes Glove's child. At the
 * end every such process is killed and reaped, so nothing outlives the run. */
static void reap_orphans(void) {
        for (int round = 0; round < 64; round++) {
                char path[64];
                snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                if (!f)
                        return;
                int pid, found = 0;
                while (fscanf(f, "%d", &pid) == 1) {
                        found++;
                        kill(pid, SIGKILL);
                        (void)waitpid(pid, NULL, 0);
                }
                if (!found)
                        return;
        }
}

static void run_free(struct run *r) {
        for (size_t i = 0; i < GLOVE_KERNEL_CALLS_MAX && r->calls.count > 0; i++)
                if (r->calls.slots[i].used) {
                        glove_kernel_calls_remove(&r->calls, &r->calls.slots[i]);
                }
        for (size_t i = 0; i < r->n_ups; i++) {
                if (r->ups[i].pid > 0) {
                        glove_upstream_kill(&r->ups[i], SIGKILL);
                        siginfo_t si;
                        waitid(P_PIDFD, (id_t)r->ups[i].pidfd, &si, WEXITED);
                }
                glove_upstream_free(&r->ups[i]);
        }
        r->agent_out_src = sd_event_source_disable_unref(r->agent_out_src);
        r->agent_in_src = sd_event_source_disable_unref(r->agent_in_src);
        r->sandbox_src = sd_event_source_disable_unref(r->sandbox_src);
        r->startup_timer = sd_event_source_disable_unref(r->startup_timer);
        r->grace_timer = sd_event_source_disable_unref(r->grace_timer);
        r->agent_err_src = sd_event_source_disable_unref(r->agent_err_src);
        r->limits_timer = sd_event_source_disable_unref(r->limits_timer);
        r->call_timer = sd_event_source_disable_unref(r->call_timer);
        glove_closep(&r->agent_err);
        glove_watch_free(&r->watch);
        glove_egress_stop(&r->egress);
        glove_closep(&r->agent_in);
        glove_closep(&r->agent_out);
        glove_mcp_reader_free(&r->agent_reader);
        glove_mcp_writer_free(&r->agent_writer);
        glove_policy_free(r->policy);
        r->event = sd_event_unref(r->event);
}

int glove_run_main(int argc, char **argv) {
        if (glove_fd_ensure_std() < 0)
                return GLOVE_EXIT_FAILURE;
        static struct glove_exec_options opts;
        static struct glove_launch launch;
        static struct run r;
        struct glove_error err = {0};
        if (glove_run_parse(argc, argv, &opts, &err) < 0)
                return glove_launch_fail(&err);
        if (opts.help) {
                fputs(glove_run_help, stdout);
                return 0;
        }
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        memset(&r, 0, sizeof(r));
        r.opts = &opts;
        r.launch = &launch;
        r.status = -1;
        r.agent_in = r.agent_out = r.agent_err = -1;
        r.sb.pid = r.sb.pidfd = r.sb.report_fd = r.sb.release_fd = -1;
        glove_kernel_calls_init(&r.calls);
        glove_egress_init(&r.egress);
        glove_mcp_reader_init(&r.agent_reader, opts.max_frame);
        glove_mcp_writer_init(&r.agent_writer, AGENT_PENDING_MAX);

        int status = GLOVE_EXIT_FAILURE;
        sigset_t mask;
        int rr = glove_launch_prepare(&opts, &launch, &err);
        if (rr >= 0)
                rr = setup_policy(&r, &err);
        if (rr >= 0) {
                glove_launch_block_signals(&mask);
                rr = sd_event_new(&r.event);
                if (rr < 0)
                        glove_error_set(&err, -rr, "run.event_loop", "sd_event_new: %s", strerror(-rr));
        }
        for (size_t i = 0; rr >= 0 && i < GLOVE_ELEMENTSOF(glove_launch_forwarded_signals); i++) {
                rr = sd_event_add_signal(r.event, NULL, glove_launch_forwarded_signals[i], on_forward_signal, &r);
                if (rr < 0)
                        glove_error_set(&err, -rr, "run.event_loop", "sd_event_add_signal: %s", strerror(-rr));
        }
        if (rr >= 0)
                rr = setup_upstreams(&r, &err);
        if (rr >= 0)
                rr = setup_sandbox(&r, &err);
        if (rr >= 0) {
                rr = sd_event_add_time_relative(r.event, &r.startup_timer, CLOCK_MONOTONIC,
                                                (uint64_t)opts.call_timeout_ms * 1000, 1000, on_startup_timeout, &r);
                if (rr < 0)
                        glove_error_set(&err, -rr, "run.event_loop", "timer: %s", strerror(-rr));
        }
        if (rr >= 0) {
                check_startup(&r);
                rr = sd_event_loop(r.event);
                if (rr < 0)
                        glove_error_set(&err, -rr, "run.event_loop", "event loop: %s", strerror(-rr));
        }
        if (rr < 0) {
                if (r.sb.pidfd >= 0)
                        glove_sandbox_destroy(&r.sb);
                run_free(&r);
                reap_orphans();
                glove_launch_free(&launch);
                return glove_launch_fail(&err);
        }
        struct glove_sandbox_outcome outcome;
        glove_sandbox_collect(&r.sb, &r.sandbox_si, &outcome);
        glove_egress_stop(&r.egress);
        if (atomic_load(&r.egress.audit_failed) && r.status < 0) {
                r.status = GLOVE_EXIT_FAILURE;
                glove_error_set(&r.err, EIO, "audit.append", "an egress record could not be appended; the agent was stopped");
        }
        /* What the agent wrote to stderr before it ended. */
        for (int i = 0; r.agent_err >= 0 && r.agent_err_src && i < 1024; i++) {
                int enabled = 0;
                on_agent_stderr(r.agent_err_src, r.agent_err, 0, &r);
                if (sd_event_source_get_enabled(r.agent_err_src, &enabled) < 0 || !enabled)
                        break;
        }
        glove_sandbox_destroy(&r.sb);
        struct glove_run_status st;
        /* When Glove itself failed, its own reason is the one line printed. */
        glove_watch_finish(&r.watch, &outcome, opts.program[0], r.status < 0, &st);
        if (r.status >= 0)
                status = st.exit_code = glove_launch_fail(&r.err);
        else
                status = st.exit_code;
        if (opts.status_json && glove_run_status_write(launch.status_dirfd, launch.status_name, &st, &err) < 0)
                status = glove_launch_fail(&err);
        if (launch.audit.fd >= 0 && !(r.err.code && strncmp(r.err.code, "audit.", 6) == 0)) {
                _cleanup_json_ json_t *exitrec = glove_exec_exit_fields(&outcome, status, st.wall_time_ms);
                _cleanup_json_ json_t *stjson = glove_run_status_json(&st);
                if (exitrec && stjson)
                        json_object_update(exitrec, stjson);
                if (!exitrec || !stjson || glove_audit_append(&launch.audit, "exit", exitrec, &err) < 0) {
                        if (!exitrec || !stjson)
                                glove_error_set(&err, ENOMEM, "audit.encode", "cannot build the exit record");
                        status = glove_launch_fail(&err);
                }
        }
        run_free(&r);
        reap_orphans();
        glove_launch_free(&launch);
        return status;
}

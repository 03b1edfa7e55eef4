/* SPDX-License-Identifier: Apache-2.0 */
/* An upstream MCP server's process, channel, and the initialize and
 * tools/list exchanges (upstream.h). */
#include "glove/mcp/upstream.h"
#include "glove/mcp/json_text.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/mcp/jsonrpc.h"

struct glove_mcp_upstream {
        const struct glove_mcp_upstream_spec *spec;
        const struct glove_mcp_upstream_config *cfg;
        pid_t pid;
        int pidfd, in_fd, out_fd;                  /* owned; -1 when closed */
        int err_fd;                                /* its stderr (ops->stderr_line), owned; -1 when none or closed */
        sd_event_source *err_src;
        char err_line[GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX + 1]; /* the stderr line being gathered (+1: a CR held back) */
        size_t err_len;
        bool err_cut;                              /* the line being gathered was longer: its rest is dropped */
        struct glove_mcp_reader reader;
        struct glove_mcp_writer writer;
        sd_event_source *out_src, *in_src, *child_src;
        enum glove_mcp_upstream_state state;
        bool ever_ready;
        int64_t next_id;                           /* ids of requests sent */
        int64_t control_id;                        /* id of the pending initialize or tools/list */
        json_t *tools;                             /* offered tools, owned */
        json_t *listing;                           /* tools gathered while LISTING, owned */
        size_t pages;
        size_t listed;                             /* entries received while LISTING, dropped ones included */
        bool relist;                               /* list_changed arrived while listing */
        bool has_tools;                            /* the upstream advertised the tools capability */
        bool held;                                 /* glove_mcp_upstream_hold: queue, write on release */
        char protocol_version[32];
        /* Era (docs/mcp-mediation.md, "Protocol revisions of upstreams"):
         * modern once server/discover named 2026-07-28 after initialize
         * was answered with an error. */
        bool modern;
        bool probing;                              /* initialize failed: server/discover sent (control_id) */
        int discover_tries;                        /* discover requests sent (a -32022 naming 2026-07-28: one more) */
        char init_answer[192];                     /* what initialize was answered, for the why of a failed probe */
        int64_t listen_id;                         /* id of the open subscriptions/listen; 0: none */
        json_t *server_caps;                       /* initialize result's capabilities, owned */
        json_t *info;                              /* the clientInfo Glove gives (client_info), owned; NULL until first used */
        char *instructions;                        /* initialize result's instructions, owned, or NULL */
        int exit_code, exit_signal;                /* once reaped; -1 when unknown */
};

/* ------------------------------------------------------------------ process */

static void close_pair(int p[2]) {
        glove_closep(&p[0]);
        glove_closep(&p[1]);
        p[0] = p[1] = -1;
}

/* Starts the process; on failure every pipe end is closed and a child that
 * was forked is reaped. */
static int spawn(struct glove_mcp_upstream *u, struct glove_error *err) {
        const struct glove_mcp_upstream_spec *spec = u->spec;
        int in[2] = {-1, -1}, out[2] = {-1, -1}, ep[2] = {-1, -1}, er[2] = {-1, -1};
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0 ||
            (u->cfg->ops->stderr_line && pipe2(er, O_CLOEXEC) < 0)) {
                int e = errno;
                close_pair(in);
                close_pair(out);
                close_pair(ep);
                close_pair(er);
                return glove_error_set(err, e, "upstream.start", "upstream %s: pipe: %s", spec->name, strerror(e));
        }
        static char *const empty_env[] = {NULL};
        char *const *envp = spec->envp ? spec->envp : empty_env;
        const char *exe = spec->launch_path ? spec->launch_path : spec->path;
        char *const *argv = spec->launch_path ? spec->launch_argv : spec->argv;
        /* Contained: the launcher execs the command inside its sandbox, so
         * a command that cannot be executed is reported here, as execve
         * would for an uncontained one. */
        struct stat cst;
        int ce = 0;
        if (spec->launch_path)
                ce = stat(spec->path, &cst) < 0 ? errno : !S_ISREG(cst.st_mode) ? EACCES : access(spec->path, X_OK) < 0 ? errno : 0;
        if (ce) {
                int e = ce;
                close_pair(in);
                close_pair(out);
                close_pair(ep);
                close_pair(er);
                return glove_error_set(err, e, "upstream.start", "upstream %s: cannot execute %s: %s", spec->name, spec->path,
                                       strerror(e));
        }
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                close_pair(in);
                close_pair(out);
                close_pair(ep);
                close_pair(er);
                return glove_error_set(err, e, "upstream.start", "upstream %s: fork: %s", spec->name, strerror(e));
        }
        if (pid == 0) {
                int e = 0;
                sigset_t none;
                sigemptyset(&none);
                for (int s = 1; s < NSIG; s++)
                        signal(s, SIG_DFL);
                sigprocmask(SIG_SETMASK, &none, NULL);
                /* Out of the way of the dup2s below first. */
                int pass = spec->pass_fd > 2 ? fcntl(spec->pass_fd, F_DUPFD, 16) : -1;
                if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || (spec->pass_fd > 2 && pass < 0))
                        e = errno;
                else if (getppid() != parent)
                        e = ESRCH;
                if (!e && (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || (er[1] >= 0 && dup2(er[1], 2) < 0)))
                        e = errno;
                if (!e && ep[1] != 3 && dup2(ep[1], 3) < 0)
                        e = errno;
                if (!e && pass >= 0 && dup2(pass, GLOVE_MCP_UPSTREAM_PASS_FD) < 0)
                        e = errno;
                if (!e) {
                        fcntl(3, F_SETFD, FD_CLOEXEC);
                        syscall(SYS_close_range, pass >= 0 ? GLOVE_MCP_UPSTREAM_PASS_FD + 1 : 4, ~0U, 0);
                        execve(exe, argv, envp);
                        e = errno;
                }
                (void)!write(3, &e, sizeof(e));
                _exit(127);
        }
        glove_closep(&in[0]);
        glove_closep(&out[1]);
        glove_closep(&ep[1]);
        glove_closep(&er[1]);
        u->pid = pid;
        u->in_fd = in[1];
        u->out_fd = out[0];
        u->err_fd = er[0];
        int e = 0;
        int n = glove_fd_read_exact(ep[0], &e, sizeof(e));
        glove_closep(&ep[0]);
        if (n == 0)
                return glove_error_set(err, e, "upstream.start", "upstream %s: cannot execute %s: %s", spec->name, exe,
                                       strerror(e));
        u->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (u->pidfd < 0)
                return glove_error_set(err, errno, "upstream.start", "upstream %s: pidfd_open: %s", spec->name, strerror(errno));
        if (fcntl(u->in_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(u->out_fd, F_SETFL, O_NONBLOCK) < 0 ||
            (u->err_fd >= 0 && fcntl(u->err_fd, F_SETFL, O_NONBLOCK) < 0))
                return glove_error_set(err, errno, "upstream.start", "upstream %s: fcntl: %s", spec->name, strerror(errno));
        return 0;
}

void glove_mcp_upstream_kill(struct glove_mcp_upstream *u, int sig) {
        /* A launcher (glove exec) counts signals: a second SIGTERM stops its
         * sandbox at once. It gets each signal once, through its pidfd; its
         * process group holds nothing else (its sandbox has a session of its
         * own). */
        if (u->spec->launch_path && u->pidfd >= 0) {
                (void)syscall(SYS_pidfd_send_signal, u->pidfd, sig, NULL, 0);
                return;
        }
        if (u->pid > 0)
                (void)kill(-u->pid, sig);
        if (u->pidfd >= 0)
                (void)syscall(SYS_pidfd_send_signal, u->pidfd, sig, NULL, 0);
}

/* ------------------------------------------------------------------ stderr */

/* Hands the gathered line over (its trailing CR dropped) and starts the
 * next. */
static void err_emit(struct glove_mcp_upstream *u) {
        size_t n = u->err_len;
        if (n > 0 && u->err_line[n - 1] == '\r')
                n--;
        if (n > GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX) {
                n = GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX;
                u->err_cut = true;
        }
        u->cfg->ops->stderr_line(u->cfg->userdata, u, u->err_line, n, u->err_cut);
        u->err_len = 0;
        u->err_cut = false;
}

/* Reads what its stderr holds now, at most reads times 4 KiB (never blocks;
 * a process that writes without end cannot hold the loop): every complete
 * line is handed over; at end of file (or an error) the last one too, and
 * the pipe is closed. */
static void err_read(struct glove_mcp_upstream *u, int reads) {
        char buf[4096];
        while (u->err_fd >= 0 && reads-- > 0) {
                ssize_t n = read(u->err_fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        if (u->err_len > 0 || u->err_cut)
                                err_emit(u);
                        u->err_src = sd_event_source_disable_unref(u->err_src);
                        glove_closep(&u->err_fd);
                        u->err_fd = -1;
                        return;
                }
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] == '\n') {
                                err_emit(u);
                        } else if (u->err_len < sizeof(u->err_line)) {
                                u->err_line[u->err_len++] = buf[i];
                        } else {
                                u->err_cut = true; /* beyond the bound (and its CR slot): dropped */
                        }
                }
        }
}

/* What the pipe holds (64 KiB by default) when the process is gone or
 * going. */
static void err_drain(struct glove_mcp_upstream *u) {
        err_read(u, 64);
}

static int on_stderr(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        (void)revents;
        err_read(userdata, 16);
        return 0;
}

/* ------------------------------------------------------------------ channel */

static int record(struct glove_mcp_upstream *u, const char *event, json_t *fields) {
        if (!u->cfg->ops->record) {
                json_decref(fields);
                return 0;
        }
        return u->cfg->ops->record(u->cfg->userdata, u, event, fields);
}

/* Marks the upstream gone: the process is killed; its exit is reaped by
 * on_child_exit. */
static void dead_how(struct glove_mcp_upstream *u, const char *why, bool protocol, bool eof) {
        if (u->state == GLOVE_MCP_UPSTREAM_DEAD)
                return;
        u->state = GLOVE_MCP_UPSTREAM_DEAD;
        u->out_src = sd_event_source_disable_unref(u->out_src);
        u->in_src = sd_event_source_disable_unref(u->in_src);
        glove_closep(&u->in_fd);
        glove_closep(&u->out_fd);
        u->in_fd = u->out_fd = -1;
        /* A launcher whose program closed its stdout is most likely ending
         * its sandbox: it is left to exit on its own (a program still
         * running there has lost its channel; the end of the run signals
         * it as any upstream). */
        if (!(eof && u->spec->launch_path))
                glove_mcp_upstream_kill(u, u->spec->stop_signal ? u->spec->stop_signal : SIGKILL);
        /* What it said on its way out comes before the news of its end. */
        err_drain(u);
        u->cfg->ops->dead(u->cfg->userdata, u, why, protocol);
}

static void dead_as(struct glove_mcp_upstream *u, const char *why, bool protocol) {
        dead_how(u, why, protocol, false);
}

static void dead(struct glove_mcp_upstream *u, const char *why) {
        dead_as(u, why, false);
}

/* The upstream broke the protocol (or listing it failed). */
static void protocol_error(struct glove_mcp_upstream *u, const char *what) {
        dead_as(u, what, true);
}

void glove_mcp_upstream_abandon(struct glove_mcp_upstream *u, const char *why) {
        dead(u, why);
}

static void flush(struct glove_mcp_upstream *u) {
        if (u->in_fd < 0)
                return;
        int rr = glove_mcp_writer_flush(&u->writer, u->in_fd);
        if (rr == -EAGAIN) {
                sd_event_source_set_enabled(u->in_src, SD_EVENT_ON);
                return;
        }
        sd_event_source_set_enabled(u->in_src, SD_EVENT_OFF);
        if (rr < 0)
                dead(u, "its stdin closed");
}

/* The clientInfo Glove gives (initialize, and every 2026-07-28 request):
 * a new reference to one object built at first use (never changed after:
 * messages share it until they are encoded), or NULL on ENOMEM. */
static json_t *client_info(struct glove_mcp_upstream *u) {
        if (!u->info)
                u->info = json_pack("{s:s,s:s}", "name", u->cfg->client_name ? u->cfg->client_name : "glove", "version",
                                    u->cfg->client_version ? u->cfg->client_version : GLOVE_VERSION);
        return json_incref(u->info);
}

/* The request m (owned) gains the 2026-07-28 envelope in params._meta
 * (MCP 2026-07-28, basic/index.mdx "_meta"): protocolVersion,
 * clientCapabilities (the request's own when it has them, else those of
 * initialize: cfg->capabilities) and
 * clientInfo, over what its _meta held (progressToken, ...). params and
 * _meta are copied before they change (a caller may hold them). Returns 0
 * or -ENOMEM. */
static int stamp(struct glove_mcp_upstream *u, json_t *m) {
        json_t *old = json_object_get(m, "params");
        json_t *params = json_is_object(old) ? json_copy(old) : json_object();
        json_t *oldmeta = params ? json_object_get(params, "_meta") : NULL;
        json_t *meta = json_is_object(oldmeta) ? json_copy(oldmeta) : json_object();
        /* The caller's own clientCapabilities (the gateway's: what the
         * agent declared in the request, cut to the policy's grant) stay;
         * else those of initialize, shared, not copied: m is encoded and
         * released within glove_mcp_upstream_send, and nothing changes a
         * message there. */
        json_t *given = json_object_get(meta, GLOVE_MCP_META_CAPABILITIES);
        json_t *caps = json_is_object(given)      ? json_incref(given)
                       : u->cfg->capabilities ? json_incref((json_t *)u->cfg->capabilities)
                                              : json_object();
        if (!params || !meta || !caps || json_object_set_new(meta, GLOVE_MCP_META_VERSION, json_string(GLOVE_MCP_UPSTREAM_MODERN_VERSION)) < 0 ||
            json_object_set_new(meta, GLOVE_MCP_META_CAPABILITIES, TAKE_PTR(caps)) < 0 ||
            json_object_set_new(meta, GLOVE_MCP_META_CLIENT_INFO, client_info(u)) < 0 ||
            json_object_set_new(params, "_meta", TAKE_PTR(meta)) < 0 || json_object_set_new(m, "params", TAKE_PTR(params)) < 0) {
                json_decref(caps);
                json_decref(meta);
                json_decref(params);
                return -ENOMEM;
        }
        return 0;
}

int glove_mcp_upstream_send(struct glove_mcp_upstream *u, json_t *msg) {
        _cleanup_json_ json_t *m = msg;
        if (!m || u->state == GLOVE_MCP_UPSTREAM_DEAD || u->in_fd < 0)
                return -EPIPE;
        const char *method = u->modern ? glove_mcp_string(json_object_get(m, "method")) : NULL;
        if (method && !json_object_get(m, "id") && strcmp(method, "notifications/cancelled") != 0)
                return 0; /* no such notification on the 2026-07-28 wire (initialized, roots/list_changed): dropped */
        if (method && json_object_get(m, "id") && stamp(u, m) < 0) {
                dead(u, "out of memory");
                return -ENOMEM;
        }
        int rr = glove_mcp_writer_queue_json(&u->writer, m, SIZE_MAX);
        if (rr < 0) {
                dead(u, "it does not read its stdin");
                return rr;
        }
        if (!u->held)
                flush(u);
        return 0;
}

void glove_mcp_upstream_hold(struct glove_mcp_upstream *u, bool hold) {
        u->held = hold;
        if (!hold && u->state != GLOVE_MCP_UPSTREAM_DEAD && glove_mcp_writer_pending(&u->writer))
                flush(u);
}

int64_t glove_mcp_upstream_next_id(struct glove_mcp_upstream *u) {
        return u->next_id++;
}

/* ------------------------------------------------------------------ tools/list */

static void send_list(struct glove_mcp_upstream *u, json_t *cursor) {
        u->control_id = u->next_id++;
        json_t *id = json_integer(u->control_id);
        json_t *params = cursor ? json_pack("{s:O}", "cursor", cursor) : json_object();
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(id, "tools/list", params));
        json_decref(id);
}

static void start_listing(struct glove_mcp_upstream *u) {
        if (!u->has_tools) {
                if (!u->tools)
                        u->tools = json_array();
                u->state = GLOVE_MCP_UPSTREAM_READY;
                return;
        }
        if (u->listing)
                json_decref(u->listing);
        u->listing = json_array();
        u->pages = 0;
        u->listed = 0;
        u->state = GLOVE_MCP_UPSTREAM_LISTING;
        send_list(u, NULL);
}

/* Why an entry of a tools/list is not offered (a reason of the tool_dropped
 * record), or NULL when it is: an object whose "name" is a TOOL a rule could
 * name, judged with its JSON length so that a NUL inside refuses the name
 * instead of cutting it (docs/policy.md; the caller's predicate). */
static const char *tool_entry_problem(const struct glove_mcp_upstream *u, const json_t *t) {
        if (!json_is_object(t))
                return "not_an_object";
        json_t *name = json_object_get(t, "name");
        if (!json_is_string(name) || !u->cfg->tool_name_valid(json_string_value(name), json_string_length(name)))
                return "invalid_name";
        return NULL;
}

/* Reports entry t dropped for reason: "tool" is the name as a JSON string
 * (a NUL shows as \u0000), cut at a character boundary to
 * GLOVE_MCP_UPSTREAM_DROPPED_NAME_MAX bytes, and "tool_bytes" its whole
 * length; "tool" is null when the entry has no string name. */
static int tool_dropped(struct glove_mcp_upstream *u, const json_t *t, const char *reason) {
        if (!u->cfg->ops->record)
                return 0;
        json_t *name = json_is_object(t) ? json_object_get(t, "name") : NULL;
        json_t *f = json_pack("{s:s}", "upstream", u->spec->name);
        if (f && json_is_string(name)) {
                const char *s = json_string_value(name);
                size_t len = json_string_length(name), n = len;
                if (n > GLOVE_MCP_UPSTREAM_DROPPED_NAME_MAX) {
                        n = GLOVE_MCP_UPSTREAM_DROPPED_NAME_MAX; /* valid UTF-8: back up over continuation bytes */
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
        return record(u, "tool_dropped", f);
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
 * listed more than once, each copy reported as tool_dropped
 * "duplicate_name": which of two definitions the upstream honours is
 * unknown, so neither is offered (fail closed). O(n log n) in the listing's
 * size. Returns 0, -ENOMEM (u->listing unchanged), or -ECANCELED when a
 * record was refused. */
static int drop_duplicates(struct glove_mcp_upstream *u) {
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
                int rr = dup[i] ? tool_dropped(u, t, "duplicate_name") : json_array_append(kept, t);
                if (rr < 0) {
                        json_decref(kept);
                        return dup[i] ? -ECANCELED : -ENOMEM;
                }
        }
        json_decref(u->listing);
        u->listing = kept;
        return 0;
}

static void handle_list_result(struct glove_mcp_upstream *u, json_t *result) {
        json_t *tools = json_object_get(result, "tools");
        if (!json_is_array(tools)) {
                protocol_error(u, "tools/list answered without a tools array");
                return;
        }
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
                /* Every entry counts, offered or not: the records of dropped
                 * ones are bounded too. */
                if (u->listed++ >= GLOVE_MCP_UPSTREAM_TOOLS_MAX) {
                        protocol_error(u, "more tools/list entries than Glove accepts from one upstream");
                        return;
                }
                const char *problem = tool_entry_problem(u, t);
                if (problem) {
                        /* Never visible, never callable, on record. */
                        if (tool_dropped(u, t, problem) < 0)
                                return;
                        continue;
                }
                if (json_array_append(u->listing, t) < 0) {
                        protocol_error(u, "out of memory while listing its tools");
                        return;
                }
        }
        json_t *cursor = json_object_get(result, "nextCursor");
        if (json_is_string(cursor) && json_string_length(cursor) > 0) {
                if (++u->pages >= GLOVE_MCP_UPSTREAM_PAGES_MAX) {
                        protocol_error(u, "too many tools/list pages");
                        return;
                }
                send_list(u, cursor);
                return;
        }
        int rr = drop_duplicates(u);
        if (rr < 0) {
                if (rr == -ENOMEM)
                        protocol_error(u, "out of memory while listing its tools");
                return;
        }
        bool changed = u->ever_ready;
        if (u->tools)
                json_decref(u->tools);
        u->tools = u->listing;
        u->listing = NULL;
        u->state = GLOVE_MCP_UPSTREAM_READY;
        if (!u->ever_ready)
                record(u, "upstream_ready", json_pack("{s:s,s:s,s:s,s:I}", "name", u->spec->name, "protocol_version",
                                                      u->protocol_version, "era", u->modern ? "modern" : "legacy", "tools",
                                                      (json_int_t)json_array_size(u->tools)));
        u->ever_ready = true;
        if (u->relist) {
                u->relist = false;
                start_listing(u);
                return;
        }
        u->cfg->ops->ready(u->cfg->userdata, u, changed);
}

/* Takes what the server says of itself (an initialize result, or a
 * DiscoverResult): its capabilities and instructions. */
static void take_server(struct glove_mcp_upstream *u, json_t *result) {
        json_t *caps = json_object_get(result, "capabilities");
        u->has_tools = json_is_object(caps) && json_is_object(json_object_get(caps, "tools"));
        json_decref(u->server_caps);
        u->server_caps = json_is_object(caps) ? json_deep_copy(caps) : json_object();
        json_t *instr = json_object_get(result, "instructions");
        if (json_is_string(instr) && json_string_length(instr) > 0) {
                size_t len = json_string_length(instr);
                if (len > GLOVE_MCP_UPSTREAM_INSTRUCTIONS_MAX || strlen(json_string_value(instr)) != len)
                        record(u, "instructions_dropped",
                               json_pack("{s:s,s:I,s:s}", "upstream", u->spec->name, "bytes", (json_int_t)len, "reason",
                                         len > GLOVE_MCP_UPSTREAM_INSTRUCTIONS_MAX ? "too_long" : "contains_nul"));
                else
                        u->instructions = strdup(json_string_value(instr));
        }
}

static void handle_initialize_result(struct glove_mcp_upstream *u, json_t *result) {
        const char *v = glove_mcp_string(json_object_get(result, "protocolVersion"));
        if (!glove_mcp_version_supported(v)) {
                protocol_error(u, "initialize answered with an unsupported protocolVersion");
                return;
        }
        snprintf(u->protocol_version, sizeof(u->protocol_version), "%s", v);
        take_server(u, result);
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(NULL, "notifications/initialized", NULL));
        if (u->state == GLOVE_MCP_UPSTREAM_DEAD)
                return;
        start_listing(u);
        if (u->state != GLOVE_MCP_UPSTREAM_DEAD)
                u->cfg->ops->ready(u->cfg->userdata, u, false);
}

/* ------------------------------------------------------------------ era */

/* Writes a short account of an answer (a result or an error) to out:
 * "an error (code N: MESSAGE)" or "a result", the message cut and its
 * bytes outside printable ASCII shown as '?'. */
static void describe_answer(const json_t *root, char *out, size_t size) {
        json_t *error = json_object_get(root, "error");
        if (!error) {
                snprintf(out, size, "a result");
                return;
        }
        json_t *code = json_object_get(error, "code");
        json_t *msg = json_object_get(error, "message");
        char text[96] = "";
        if (json_is_string(msg)) {
                const char *s = json_string_value(msg);
                size_t n = json_string_length(msg), k = 0;
                for (size_t i = 0; i < n && k + 1 < sizeof(text); i++)
                        text[k++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
                text[k] = '\0';
        }
        snprintf(out, size, "an error (code %lld: %s)", json_is_integer(code) ? (long long)json_integer_value(code) : 0LL, text);
}

/* Whether a (an array) holds the string v (a string holding a NUL is
 * never v: glove_mcp_string). */
static bool names_version(const json_t *a, const char *v) {
        size_t i;
        json_t *e;
        json_array_foreach(a, i, e) {
                const char *s = glove_mcp_string(e);
                if (s && strcmp(s, v) == 0)
                        return true;
        }
        return false;
}

/* Sends server/discover (MCP 2026-07-28, server/discover.mdx) as the era
 * probe, with the envelope every 2026-07-28 request carries. */
static void send_discover(struct glove_mcp_upstream *u) {
        u->probing = true;
        u->discover_tries++;
        u->control_id = u->next_id++;
        json_t *id = json_integer(u->control_id);
        json_t *m = glove_mcp_rpc_request(id, "server/discover", json_object());
        json_decref(id);
        if (!m || stamp(u, m) < 0) {
                json_decref(m);
                protocol_error(u, "out of memory while sending server/discover");
                return;
        }
        glove_mcp_upstream_send(u, m);
}

/* Opens subscriptions/listen (MCP 2026-07-28, basic/patterns/subscriptions.mdx)
 * for the list_changed notifications its capabilities announce; none: no
 * listen. */
static void open_listen(struct glove_mcp_upstream *u) {
        static const struct {
                const char *cap, *filter;
        } kinds[] = {{"tools", "toolsListChanged"}, {"prompts", "promptsListChanged"}, {"resources", "resourcesListChanged"}};
        json_t *n = json_object();
        if (!n)
                return;
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (glove_mcp_upstream_offers(u, kinds[i].cap, "listChanged"))
                        json_object_set_new(n, kinds[i].filter, json_true());
        if (json_object_size(n) == 0) {
                json_decref(n);
                return;
        }
        u->listen_id = u->next_id++;
        json_t *id = json_integer(u->listen_id);
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(id, "subscriptions/listen", json_pack("{s:o}", "notifications", n)));
        json_decref(id);
}

/* The answer to server/discover (root: the whole response): a DiscoverResult
 * naming 2026-07-28 makes the upstream modern; a -32022 whose data.supported
 * names it is asked once more; anything else fails its start with both
 * answers named. */
static void handle_discover_answer(struct glove_mcp_upstream *u, json_t *root) {
        json_t *result = json_object_get(root, "result");
        json_t *error = json_object_get(root, "error");
        const char *rt = result ? glove_mcp_string(json_object_get(result, "resultType")) : NULL;
        if (json_is_object(result) && names_version(json_object_get(result, "supportedVersions"), GLOVE_MCP_UPSTREAM_MODERN_VERSION) &&
            (!json_object_get(result, "resultType") || (rt && strcmp(rt, "complete") == 0))) {
                u->modern = true;
                u->probing = false;
                snprintf(u->protocol_version, sizeof(u->protocol_version), "%s", GLOVE_MCP_UPSTREAM_MODERN_VERSION);
                take_server(u, result);
                open_listen(u);
                if (u->state == GLOVE_MCP_UPSTREAM_DEAD)
                        return;
                start_listing(u);
                if (u->state != GLOVE_MCP_UPSTREAM_DEAD)
                        u->cfg->ops->ready(u->cfg->userdata, u, false);
                return;
        }
        json_t *data = json_is_object(error) ? json_object_get(error, "data") : NULL;
        json_t *code = json_is_object(error) ? json_object_get(error, "code") : NULL;
        if (json_is_integer(code) && json_integer_value(code) == GLOVE_MCP_UPSTREAM_UNSUPPORTED_VERSION && json_is_object(data) &&
            names_version(json_object_get(data, "supported"), GLOVE_MCP_UPSTREAM_MODERN_VERSION) && u->discover_tries < 2) {
                send_discover(u);
                return;
        }
        char d[160], why[512];
        if (json_is_object(result))
                snprintf(d, sizeof(d), "a result whose supportedVersions do not name %s", GLOVE_MCP_UPSTREAM_MODERN_VERSION);
        else
                describe_answer(root, d, sizeof(d));
        snprintf(why, sizeof(why),
                 "it speaks neither a legacy revision nor %s: initialize was answered with %s, server/discover with %s",
                 GLOVE_MCP_UPSTREAM_MODERN_VERSION, u->init_answer, d);
        protocol_error(u, why);
}

/* ------------------------------------------------------------------ results of a modern upstream */

bool glove_mcp_upstream_result_complete(const char *value, size_t len) {
        size_t i = glove_mcp_text_skip_ws(value, len, 0);
        if (i >= len || value[i] != '{')
                return false;
        i = glove_mcp_text_skip_ws(value, len, i + 1);
        if (i < len && value[i] == '}')
                return true;
        for (;;) {
                if (i >= len || value[i] != '"')
                        return false;
                size_t k = i + 1, e = k;
                while (e < len && value[e] != '"' && value[e] != '\\')
                        e++;
                if (e >= len || value[e] != '"')
                        return false; /* an escaped key: the tree decides */
                bool rt = e - k == 10 && memcmp(value + k, "resultType", 10) == 0;
                i = glove_mcp_text_skip_ws(value, len, e + 1);
                if (i >= len || value[i] != ':')
                        return false;
                i = glove_mcp_text_skip_ws(value, len, i + 1);
                size_t j = glove_mcp_text_skip_value(value, len, i);
                if (j == i || j >= len)
                        return false;
                if (rt && !(j - i == 10 && memcmp(value + i, "\"complete\"", 10) == 0))
                        return false;
                i = glove_mcp_text_skip_ws(value, len, j);
                if (i < len && value[i] == '}')
                        return true;
                if (i >= len || value[i] != ',')
                        return false;
                i = glove_mcp_text_skip_ws(value, len, i + 1);
        }
}

/* A response of a modern upstream to a request of the caller, by its
 * resultType (MCP 2026-07-28, basic/index.mdx "ResultType"): absent,
 * "complete" and "input_required" (multi round-trip requests, decided by
 * the caller) go to the caller as they are; any other value is answered to
 * the caller as an error response of the upstream with data.reason
 * "upstream_invalid_result", on record.
 * Returns true when m was handled here. */
static bool modern_result(struct glove_mcp_upstream *u, struct glove_mcp_message *m) {
        json_t *result = json_object_get(m->root, "result");
        json_t *jrt = json_is_object(result) ? json_object_get(result, "resultType") : NULL;
        if (!result || !jrt)
                return false;
        const char *rt = glove_mcp_string(jrt);
        if (rt && strcmp(rt, "complete") == 0)
                return false;
        if (rt && strcmp(rt, "input_required") == 0)
                return false; /* the caller decides (the gateway: mrtr.c) */
        json_t *f = json_pack("{s:s,s:O,s:s}", "from", u->spec->name, "id", m->id, "reason", "unknown_result_type");
        if (record(u, "upstream_invalid_message", f) < 0 || u->state == GLOVE_MCP_UPSTREAM_DEAD)
                return true;
        struct glove_mcp_message e = {
                .root = glove_mcp_rpc_error(m->id, GLOVE_RPC_INTERNAL_ERROR,
                                            "the upstream answered with a resultType MCP 2026-07-28 does not define",
                                            "upstream_invalid_result", u->spec->name),
                .kind = GLOVE_MCP_RESPONSE,
        };
        if (!e.root)
                return true;
        e.id = json_object_get(e.root, "id");
        u->cfg->ops->message(u->cfg->userdata, u, &e);
        json_decref(e.root);
        return true;
}

/* The end of its subscriptions/listen (a response to it, or the server's
 * notifications/cancelled naming it): on record; not opened again. */
static void listen_ended(struct glove_mcp_upstream *u, const char *how) {
        u->listen_id = 0;
        record(u, "upstream_listen_ended", json_pack("{s:s,s:s}", "name", u->spec->name, "how", how));
}

static void handle_message(struct glove_mcp_upstream *u, struct glove_mcp_message *m) {
        if (m->kind == GLOVE_MCP_RESPONSE) {
                if (json_is_integer(m->id) && json_integer_value(m->id) == u->control_id && u->state != GLOVE_MCP_UPSTREAM_READY) {
                        u->control_id = 0;
                        json_t *result = json_object_get(m->root, "result");
                        bool init = u->state == GLOVE_MCP_UPSTREAM_INITIALIZING;
                        if (init && u->probing) {
                                handle_discover_answer(u, m->root);
                        } else if (init && !result) {
                                /* Not a legacy server, or a failing one: a
                                 * 2026-07-28 one is asked next. */
                                describe_answer(m->root, u->init_answer, sizeof(u->init_answer));
                                send_discover(u);
                        } else if (!result) {
                                protocol_error(u, "tools/list failed");
                        } else if (init) {
                                handle_initialize_result(u, result);
                        } else if (u->modern && json_is_object(result) && json_object_get(result, "resultType") &&
                                   !(glove_mcp_string(json_object_get(result, "resultType")) &&
                                     strcmp(glove_mcp_string(json_object_get(result, "resultType")), "complete") == 0)) {
                                protocol_error(u, "tools/list answered with a resultType other than \"complete\"");
                        } else {
                                handle_list_result(u, result);
                        }
                        return;
                }
                if (u->modern && u->listen_id && json_is_integer(m->id) && json_integer_value(m->id) == u->listen_id) {
                        listen_ended(u, json_object_get(m->root, "error") ? "error" : "result");
                        return;
                }
                if (u->modern && modern_result(u, m))
                        return;
                u->cfg->ops->message(u->cfg->userdata, u, m);
                return;
        }
        if (m->kind == GLOVE_MCP_REQUEST && u->modern) {
                /* A 2026-07-28 server sends no request (stdio.mdx): refused,
                 * on record. */
                record(u, "upstream_invalid_message", json_pack("{s:s,s:s}", "from", u->spec->name, "reason", "request_from_modern_server"));
                if (u->state != GLOVE_MCP_UPSTREAM_DEAD)
                        glove_mcp_upstream_send(u, glove_mcp_rpc_error(m->id, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", NULL, NULL));
                return;
        }
        if (m->kind == GLOVE_MCP_REQUEST) {
                /* ping is answered here; the rest is the caller's (client
                 * capabilities follow its policy). */
                if (strcmp(m->method, "ping") == 0)
                        glove_mcp_upstream_send(u, glove_mcp_rpc_result(m->id, json_object()));
                else if (u->cfg->ops->request)
                        u->cfg->ops->request(u->cfg->userdata, u, m);
                else
                        glove_mcp_upstream_send(u, glove_mcp_rpc_error(m->id, GLOVE_RPC_METHOD_NOT_FOUND, "method not found", NULL, NULL));
                return;
        }
        if (u->modern && strcmp(m->method, "notifications/subscriptions/acknowledged") == 0)
                return; /* what it honours of the listen: the list_changed that come are handled as they come */
        if (u->modern && u->listen_id && strcmp(m->method, "notifications/cancelled") == 0 && json_is_object(m->params) &&
            json_is_integer(json_object_get(m->params, "requestId")) &&
            json_integer_value(json_object_get(m->params, "requestId")) == u->listen_id) {
                listen_ended(u, "cancelled");
                return;
        }
        if (strcmp(m->method, "notifications/tools/list_changed") == 0) {
                if (u->state == GLOVE_MCP_UPSTREAM_LISTING)
                        u->relist = true;
                else if (u->state == GLOVE_MCP_UPSTREAM_READY)
                        start_listing(u);
                return;
        }
        u->cfg->ops->message(u->cfg->userdata, u, m);
}

/* A line longer than max_frame was skipped (the reader never held it
 * whole): on record; an answer to initialize or tools/list is a protocol
 * failure as before, any other response goes to the caller by its id, and
 * the upstream goes on. */
static void oversized_line(struct glove_mcp_upstream *u) {
        const struct glove_mcp_upstream_config *cfg = u->cfg;
        const struct glove_mcp_skipped *sk = glove_mcp_reader_skipped(&u->reader);
        bool response = !sk->has_method && sk->has_int_id;
        json_t *f = json_pack("{s:s,s:I,s:I}", "from", u->spec->name, "max_frame", (json_int_t)cfg->max_frame, "bytes",
                              (json_int_t)(sk->bytes > INT64_MAX ? INT64_MAX : sk->bytes));
        if (f && response)
                json_object_set_new(f, "id", json_integer(sk->id));
        record(u, "frame_oversized", f);
        if (u->state == GLOVE_MCP_UPSTREAM_DEAD)
                return;
        const char *bound = cfg->max_frame_name ? cfg->max_frame_name : "the frame bound";
        if (response && sk->id == u->control_id && u->state != GLOVE_MCP_UPSTREAM_READY) {
                char why[128];
                snprintf(why, sizeof(why), "its %s answer is longer than %s",
                         u->state == GLOVE_MCP_UPSTREAM_INITIALIZING ? (u->probing ? "server/discover" : "initialize") : "tools/list",
                         bound);
                protocol_error(u, why);
                return;
        }
        if (cfg->ops->oversized)
                cfg->ops->oversized(cfg->userdata, u, response ? &sk->id : NULL, sk->bytes);
}

/* Handles the complete lines buffered. Returns false when it stopped early
 * (the upstream is DEAD, or the caller halted), true when it ran out of
 * lines. */
static bool handle_lines(struct glove_mcp_upstream *u) {
        const struct glove_mcp_upstream_config *cfg = u->cfg;
        for (;;) {
                const char *line;
                size_t len;
                int rr = glove_mcp_reader_next(&u->reader, &line, &len);
                if (rr == -EMSGSIZE) {
                        oversized_line(u);
                        if (u->state == GLOVE_MCP_UPSTREAM_DEAD || (cfg->ops->halted && cfg->ops->halted(cfg->userdata)))
                                return false;
                        continue;
                }
                if (rr <= 0)
                        return true;
                /* Fast path (issue 13): a response to a call, routed by its
                 * id and forwarded without a tree; the scanner takes only
                 * what the tree parser would accept, and initialize and
                 * tools/list answers (not READY) always go the tree's way. */
                struct glove_mcp_raw_response raw;
                /* A modern upstream's result takes it only when it is
                 * complete (else modern_result decides on the tree). */
                if (cfg->ops->raw_response && u->state == GLOVE_MCP_UPSTREAM_READY &&
                    glove_mcp_response_scan(line, len, cfg->max_frame, &raw) == 1 &&
                    (!u->modern || (raw.id != u->listen_id &&
                                    (raw.is_error || glove_mcp_upstream_result_complete(line + raw.value_off, raw.value_len)))) &&
                    cfg->ops->raw_response(cfg->userdata, u, line, len, &raw)) {
                        if (u->state == GLOVE_MCP_UPSTREAM_DEAD || (cfg->ops->halted && cfg->ops->halted(cfg->userdata)))
                                return false;
                        continue;
                }
                struct glove_mcp_message m;
                if (glove_mcp_message_parse(line, len, cfg->max_frame, 0, &m, NULL, NULL) < 0) {
                        record(u, "upstream_invalid_message", json_pack("{s:s}", "from", u->spec->name));
                        continue;
                }
                handle_message(u, &m);
                glove_mcp_message_free(&m);
                if (u->state == GLOVE_MCP_UPSTREAM_DEAD || (cfg->ops->halted && cfg->ops->halted(cfg->userdata)))
                        return false;
        }
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)revents;
        struct glove_mcp_upstream *u = userdata;
        const struct glove_mcp_upstream_config *cfg = u->cfg;
        ssize_t n = glove_mcp_reader_fill(&u->reader, fd);
        if (n == -EAGAIN)
                return 0;
        bool all = handle_lines(u);
        /* What the lines of this read made the caller queue goes out now,
         * in one write where it can. */
        if (cfg->ops->drained)
                cfg->ops->drained(cfg->userdata, u);
        if (all && n <= 0)
                dead_how(u, "its stdout closed", false, true);
        return 0;
}

static int on_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void)s;
        (void)fd;
        (void)revents;
        flush(userdata);
        return 0;
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        (void)s;
        struct glove_mcp_upstream *u = userdata;
        u->exit_code = si->si_code == CLD_EXITED ? si->si_status : -1;
        u->exit_signal = si->si_code == CLD_EXITED ? -1 : si->si_status;
        /* A launcher (glove exec) exits 128+N when its program died of N. */
        if (u->spec->launch_path && u->exit_code > 128 && u->exit_code <= 128 + 64) {
                u->exit_signal = u->exit_code - 128;
                u->exit_code = -1;
        }
        u->pid = -1;
        u->child_src = sd_event_source_disable_unref(u->child_src);
        err_drain(u);
        /* Drain what it wrote before exiting, then mark it gone. */
        if (u->out_fd >= 0 && u->state != GLOVE_MCP_UPSTREAM_DEAD)
                on_readable(NULL, u->out_fd, 0, u);
        dead(u, "it exited");
        json_t *f = json_pack("{s:s}", "name", u->spec->name);
        if (f) {
                json_object_set_new(f, "status", u->exit_code >= 0 ? json_integer(u->exit_code) : json_null());
                json_object_set_new(f, "signal", u->exit_signal >= 0 ? json_integer(u->exit_signal) : json_null());
        }
        record(u, "upstream_exit", f);
        u->cfg->ops->exited(u->cfg->userdata, u);
        return 0;
}

/* ------------------------------------------------------------------ object */

int glove_mcp_upstream_new(sd_event *event, const struct glove_mcp_upstream_spec *spec,
                           const struct glove_mcp_upstream_config *cfg, struct glove_mcp_upstream **out,
                           struct glove_error *err) {
        *out = NULL;
        if (!spec->path || !spec->argv[0] || !cfg->ops || !cfg->ops->ready || !cfg->ops->message || !cfg->ops->dead ||
            !cfg->ops->exited || !cfg->tool_name_valid)
                return glove_error_set(err, EINVAL, "upstream.start", "upstream %s: incomplete spec or configuration", spec->name);
        struct glove_mcp_upstream *u = calloc(1, sizeof(*u));
        if (!u)
                return glove_error_set(err, ENOMEM, "upstream.start", "out of memory");
        u->spec = spec;
        u->cfg = cfg;
        u->pid = -1;
        u->pidfd = u->in_fd = u->out_fd = u->err_fd = -1;
        u->exit_code = u->exit_signal = -1;
        u->next_id = 1;
        u->state = GLOVE_MCP_UPSTREAM_INITIALIZING;
        glove_mcp_reader_init(&u->reader, cfg->max_frame);
        glove_mcp_reader_skip_oversized(&u->reader);
        glove_mcp_writer_init(&u->writer, GLOVE_MCP_UPSTREAM_PENDING_MAX);
        int rr = spawn(u, err);
        if (rr >= 0) {
                rr = sd_event_add_io(event, &u->out_src, u->out_fd, EPOLLIN, on_readable, u);
                if (rr >= 0)
                        rr = sd_event_add_io(event, &u->in_src, u->in_fd, EPOLLOUT, on_writable, u);
                if (rr >= 0)
                        rr = sd_event_source_set_enabled(u->in_src, SD_EVENT_OFF);
                if (rr >= 0 && u->err_fd >= 0)
                        rr = sd_event_add_io(event, &u->err_src, u->err_fd, EPOLLIN, on_stderr, u);
                if (rr >= 0)
                        rr = sd_event_add_child_pidfd(event, &u->child_src, u->pidfd, WEXITED, on_child_exit, u);
                if (rr < 0)
                        glove_error_set(err, -rr, "upstream.event_loop", "upstream %s: event loop: %s", spec->name, strerror(-rr));
        }
        if (rr < 0) {
                glove_mcp_upstream_free(u);
                return rr;
        }
        u->control_id = u->next_id++;
        json_t *id = json_integer(u->control_id);
        json_t *params = json_pack("{s:s,s:o,s:o}", "protocolVersion", glove_mcp_protocol_versions[0], "capabilities",
                                   cfg->capabilities ? json_deep_copy(cfg->capabilities) : json_object(), "clientInfo", client_info(u));
        /* A failure here makes it DEAD (ops->dead), like any later one. */
        u->state = GLOVE_MCP_UPSTREAM_INITIALIZING;
        *out = u;
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(id, "initialize", params));
        json_decref(id);
        return 0;
}

void glove_mcp_upstream_free(struct glove_mcp_upstream *u) {
        if (!u)
                return;
        u->out_src = sd_event_source_disable_unref(u->out_src);
        u->in_src = sd_event_source_disable_unref(u->in_src);
        u->child_src = sd_event_source_disable_unref(u->child_src);
        u->err_src = sd_event_source_disable_unref(u->err_src);
        if (u->pid > 0) {
                glove_mcp_upstream_kill(u, SIGKILL);
                siginfo_t si;
                if (u->pidfd >= 0)
                        (void)waitid(P_PIDFD, (id_t)u->pidfd, &si, WEXITED);
                else
                        (void)waitid(P_PID, (id_t)u->pid, &si, WEXITED);
                u->pid = -1;
        }
        glove_closep(&u->pidfd);
        glove_closep(&u->in_fd);
        glove_closep(&u->out_fd);
        glove_closep(&u->err_fd);
        json_decref(u->tools);
        json_decref(u->listing);
        json_decref(u->server_caps);
        json_decref(u->info);
        free(u->instructions);
        glove_mcp_reader_free(&u->reader);
        glove_mcp_writer_free(&u->writer);
        free(u);
}

const char *glove_mcp_upstream_name(const struct glove_mcp_upstream *u) {
        return u->spec->name;
}

const struct glove_mcp_upstream_spec *glove_mcp_upstream_spec(const struct glove_mcp_upstream *u) {
        return u->spec;
}

enum glove_mcp_upstream_state glove_mcp_upstream_state(const struct glove_mcp_upstream *u) {
        return u->state;
}

pid_t glove_mcp_upstream_pid(const struct glove_mcp_upstream *u) {
        return u->pid;
}

const json_t *glove_mcp_upstream_tools(const struct glove_mcp_upstream *u) {
        return u->tools;
}

bool glove_mcp_upstream_has_tool(const struct glove_mcp_upstream *u, const char *tool) {
        size_t i, n = strlen(tool);
        json_t *t;
        json_array_foreach(u->tools, i, t) {
                json_t *name = json_object_get(t, "name");
                if (json_is_string(name) && json_string_length(name) == n && memcmp(json_string_value(name), tool, n) == 0)
                        return true;
        }
        return false;
}

bool glove_mcp_upstream_listed(const struct glove_mcp_upstream *u) {
        return u->ever_ready;
}

const json_t *glove_mcp_upstream_capabilities(const struct glove_mcp_upstream *u) {
        return u->server_caps;
}

bool glove_mcp_upstream_offers(const struct glove_mcp_upstream *u, const char *key, const char *sub) {
        json_t *v = u->server_caps ? json_object_get(u->server_caps, key) : NULL;
        if (!json_is_object(v))
                return false;
        return !sub || json_is_true(json_object_get(v, sub));
}

bool glove_mcp_upstream_modern(const struct glove_mcp_upstream *u) {
        return u->modern;
}

const char *glove_mcp_upstream_protocol_version(const struct glove_mcp_upstream *u) {
        return u->protocol_version[0] ? u->protocol_version : NULL;
}

const char *glove_mcp_upstream_instructions(const struct glove_mcp_upstream *u) {
        return u->instructions;
}

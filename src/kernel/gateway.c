/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's life: creation with its upstreams, the agent's channel,
 * startup readiness, upstream events, failure and the end (gateway.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_internal.h"
#include "glove/base/cleanup.h"

/* ------------------------------------------------------------------ audit, failure */

bool gw_auditing(const struct glove_kernel_gateway *gw) {
        return gw->cfg.audit && gw->cfg.audit->fd >= 0;
}

/* Appends a record (fields stolen; NULL means they could not be built). A
 * failed append fails the gateway (fail closed). Returns 0 or -errno. */
int gw_audit(struct glove_kernel_gateway *gw, const char *event, json_t *fields) {
        _cleanup_json_ json_t *f = fields;
        if (!gw_auditing(gw))
                return 0;
        struct glove_error e = {0};
        int rr = f ? glove_audit_append(gw->cfg.audit, event, f, &e)
                   : glove_error_set(&e, ENOMEM, "audit.encode", "cannot build the %s record", event);
        if (rr < 0) {
                glove_error_set(&gw->err, e.errnum, e.code, "%s", e.message);
                gw_fail(gw);
        }
        return rr;
}

static void signal_upstreams(struct glove_kernel_gateway *gw, int sig) {
        for (size_t i = 0; i < gw->n_ups; i++)
                glove_mcp_upstream_kill(gw->ups[i].u, sig);
}

/* Reports gw->err and stops: the agent's messages are no longer read and
 * the upstreams are asked to end. */
void gw_fail(struct glove_kernel_gateway *gw) {
        if (gw->constructing) {
                gw->stopping = true; /* glove_kernel_gateway_new returns gw->err */
                return;
        }
        gw->cfg.notify(gw, GLOVE_KERNEL_GATEWAY_FAILED, &gw->err, gw->cfg.userdata);
        if (gw->stopping && gw->agent_gone)
                return;
        glove_kernel_gateway_stop(gw);
}

void glove_kernel_gateway_stop(struct glove_kernel_gateway *gw) {
        gw->stopping = true;
        gw->agent_out_src = sd_event_source_disable_unref(gw->agent_out_src);
        signal_upstreams(gw, SIGTERM);
}

/* ------------------------------------------------------------------ startup and end */

void gw_check_startup(struct glove_kernel_gateway *gw) {
        if (!gw->attached || gw->released || gw->stopping || gw->constructing)
                return;
        for (size_t i = 0; i < gw->n_ups; i++)
                if (!gw->ups[i].left_out && glove_mcp_upstream_state(gw->ups[i].u) != GLOVE_MCP_UPSTREAM_READY)
                        return;
        if (!gw_own_names_ready(gw))
                return; /* the prompts of own-names upstreams are being listed; this is called again */
        gw->startup_timer = sd_event_source_disable_unref(gw->startup_timer);
        int rr = gw->cfg.notify(gw, GLOVE_KERNEL_GATEWAY_READY, NULL, gw->cfg.userdata);
        if (rr >= 0 && !gw->stopping)
                gw->released = true;
}

static int on_startup_check(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)usec;
        struct glove_kernel_gateway *gw = userdata;
        (void)s;
        gw->startup_check = sd_event_source_disable_unref(gw->startup_check);
        gw_check_startup(gw);
        return 0;
}

/* Starts without the optional upstream gu (why: a short text): on record,
 * the caller told, the process given up. */
static void leave_out(struct glove_kernel_gateway *gw, struct gw_upstream *gu, const char *why) {
        if (gu->left_out)
                return;
        gu->left_out = true;
        const char *name = glove_mcp_upstream_name(gu->u);
        snprintf(gu->left_out_why, sizeof(gu->left_out_why), "%s", why);
        gw_audit(gw, "upstream_left_out", json_pack("{s:s,s:s}", "name", name, "reason", why));
        if (gw->stopping)
                return;
        struct glove_error e = {0};
        glove_error_set(&e, EHOSTDOWN, "upstream.left_out", "upstream %s %s; starting without it (optional)", name, why);
        gw->cfg.notify(gw, GLOVE_KERNEL_GATEWAY_LEFT_OUT, &e, gw->cfg.userdata);
        glove_mcp_upstream_abandon(gu->u, why); /* up_dead sees it left out */
}

static int on_startup_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        struct glove_kernel_gateway *gw = userdata;
        char why[96];
        snprintf(why, sizeof(why), "did not finish initializing within %lld ms", (long long)gw->cfg.call_timeout_ms);
        /* Optional ones first: the others decide whether the start fails. */
        for (size_t i = 0; i < gw->n_ups && !gw->stopping; i++)
                if (gw->ups[i].optional && glove_mcp_upstream_state(gw->ups[i].u) != GLOVE_MCP_UPSTREAM_READY)
                        leave_out(gw, &gw->ups[i], why);
        if (gw->stopping)
                return 0;
        for (size_t i = 0; i < gw->n_ups; i++)
                if (!gw->ups[i].left_out && glove_mcp_upstream_state(gw->ups[i].u) != GLOVE_MCP_UPSTREAM_READY) {
                        glove_error_set(&gw->err, ETIMEDOUT, "upstream.start", "upstream %s %s",
                                        glove_mcp_upstream_name(gw->ups[i].u), why);
                        glove_error_set(&gw->err, ETIMEDOUT, "upstream.start", "the upstreams did not finish initializing within %lld ms",
                                        (long long)gw->cfg.call_timeout_ms);
                        gw_fail(gw);
                        return 0;
                }
        gw_check_startup(gw);
        return 0;
}

static int on_grace_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)s;
        (void)usec;
        signal_upstreams(userdata, SIGKILL);
        return 0;
}

/* Reports FINISHED once the agent and every upstream process are gone. */
static void maybe_finish(struct glove_kernel_gateway *gw) {
        if (!gw->agent_gone || gw->finished)
                return;
        for (size_t i = 0; i < gw->n_ups; i++)
                if (glove_mcp_upstream_pid(gw->ups[i].u) > 0) {
                        if (!gw->grace_timer &&
                            sd_event_add_time_relative(gw->event, &gw->grace_timer, CLOCK_MONOTONIC,
                                                       GLOVE_KERNEL_GATEWAY_GRACE_USEC, 1000, on_grace_timeout, gw) < 0) {
                                gw->grace_timer = NULL;
                                signal_upstreams(gw, SIGKILL); /* no grace without a timer: never wait forever */
                        }
                        return;
                }
        gw->finished = true;
        gw->cfg.notify(gw, GLOVE_KERNEL_GATEWAY_FINISHED, NULL, gw->cfg.userdata);
}

void glove_kernel_gateway_agent_exited(struct glove_kernel_gateway *gw) {
        if (gw->agent_gone)
                return;
        gw->agent_gone = true;
        /* Answers still to come have no one to reach. */
        gw_finish_all_calls(gw, "agent_exited");
        gw_client_agent_gone(gw);
        gw_listen_clear(gw);
        if (!gw->stopping) {
                gw->stopping = true;
                signal_upstreams(gw, SIGTERM);
        }
        maybe_finish(gw);
}

/* ------------------------------------------------------------------ upstream events */

static int up_record(void *userdata, struct glove_mcp_upstream *u, const char *event, json_t *fields) {
        (void)u;
        struct gw_upstream *gu = userdata;
        return gw_audit(gu->gw, event, fields);
}

static void up_ready(void *userdata, struct glove_mcp_upstream *u, bool changed) {
        (void)u;
        struct gw_upstream *gu = userdata;
        struct glove_kernel_gateway *gw = gu->gw;
        if (changed && gw->released) {
                /* Untagged: for legacy sessions (an agent that spoke only
                 * 2026-07-28 gets list-changed on its listens alone). */
                if (!gw->agent_sent_modern || gw->agent_sent_initialize)
                        gw_send_agent(gw, glove_mcp_rpc_request(NULL, "notifications/tools/list_changed", NULL));
                gw_listen_notify(gw, "notifications/tools/list_changed");
        }
        gw_check_startup(gw);
}

static void up_message(void *userdata, struct glove_mcp_upstream *u, struct glove_mcp_message *m) {
        (void)u;
        struct gw_upstream *gu = userdata;
        if (m->kind == GLOVE_MCP_RESPONSE) {
                if (!gw_client_upstream_response(gu->gw, gu, m))
                        gw_upstream_response(gu->gw, gu, m);
        } else if (m->kind == GLOVE_MCP_NOTIFICATION && strcmp(m->method, "notifications/progress") == 0) {
                if (gu->gw->released)
                        gw_upstream_progress(gu->gw, gu, m);
        } else if (m->kind == GLOVE_MCP_NOTIFICATION && strcmp(m->method, "notifications/resources/updated") == 0) {
                if (gu->gw->released)
                        gw_feature_updated(gu->gw, gu, m);
        } else if (m->kind == GLOVE_MCP_NOTIFICATION) {
                gw_client_upstream_notification(gu->gw, gu, m); /* logging, list_changed: gateway_client.c */
        }
}

static void up_request(void *userdata, struct glove_mcp_upstream *u, struct glove_mcp_message *m) {
        (void)u;
        struct gw_upstream *gu = userdata;
        gw_client_upstream_request(gu->gw, gu, m);
}

static void up_oversized(void *userdata, struct glove_mcp_upstream *u, const int64_t *id, uint64_t bytes) {
        (void)u;
        (void)bytes;
        struct gw_upstream *gu = userdata;
        if (id)
                gw_upstream_oversized(gu->gw, gu, *id);
}

static bool up_raw_response(void *userdata, struct glove_mcp_upstream *u, const char *line, size_t len,
                            const struct glove_mcp_raw_response *r) {
        (void)u;
        (void)len;
        struct gw_upstream *gu = userdata;
        return gw_upstream_raw_response(gu->gw, gu, line, r);
}

static void up_drained(void *userdata, struct glove_mcp_upstream *u) {
        (void)u;
        struct gw_upstream *gu = userdata;
        gw_agent_drained(gu->gw);
}

/* Its tools answer upstream_unavailable from now on. */
static void up_dead(void *userdata, struct glove_mcp_upstream *u, const char *why, bool protocol) {
        struct gw_upstream *gu = userdata;
        struct glove_kernel_gateway *gw = gu->gw;
        const char *name = glove_mcp_upstream_spec(u)->name;
        bool starting = !glove_mcp_upstream_listed(u) && !gw->released;
        if (!gw->released && gu->optional && !gw->stopping) {
                /* Before the agent starts an optional one may go (also once
                 * listed, while others are not ready yet): without it. */
                char w[128];
                snprintf(w, sizeof(w), "failed during initialization: %s", why);
                leave_out(gw, gu, gu->left_out ? why : w);
                gw_fail_calls_of(gw, gu->index);
                gw_client_upstream_gone(gw, gu);
                gw_check_startup(gw);
                return;
        }
        if (!gw->stopping)
                gw_audit(gw, "upstream_failed", json_pack("{s:s,s:s}", "name", name, "reason", why));
        gw_fail_calls_of(gw, gu->index);
        gw_client_upstream_gone(gw, gu);
        if (starting) {
                /* The first error set is the one reported (glove_error_set). */
                if (protocol)
                        glove_error_set(&gw->err, EPROTO, "upstream.protocol", "upstream %s: %s", name, why);
                else if (!glove_error_is_set(&gw->err))
                        gw->failed_upstream = name;
                glove_error_set(&gw->err, EPROTO, "upstream.start", "upstream %s failed during initialization: %s", name, why);
                gw_fail(gw);
        }
}

static void up_stderr(void *userdata, struct glove_mcp_upstream *u, const char *line, size_t len, bool cut) {
        struct gw_upstream *gu = userdata;
        gu->gw->cfg.upstream_stderr(gu->gw->cfg.userdata, glove_mcp_upstream_name(u), line, len, cut);
}

static void up_exited(void *userdata, struct glove_mcp_upstream *u) {
        (void)u;
        struct gw_upstream *gu = userdata;
        maybe_finish(gu->gw);
}

static bool up_halted(void *userdata) {
        struct gw_upstream *gu = userdata;
        return gu->gw->stopping;
}

static const struct glove_mcp_upstream_ops upstream_ops = {
        .record = up_record,
        .ready = up_ready,
        .message = up_message,
        .request = up_request,
        .oversized = up_oversized,
        .dead = up_dead,
        .exited = up_exited,
        .halted = up_halted,
        .raw_response = up_raw_response,
        .drained = up_drained,
};

/* The same, the upstreams' stderr read (cfg.upstream_stderr). */
static const struct glove_mcp_upstream_ops upstream_ops_stderr = {
        .record = up_record,
        .ready = up_ready,
        .message = up_message,
        .request = up_request,
        .oversized = up_oversized,
        .dead = up_dead,
        .exited = up_exited,
        .halted = up_halted,
        .raw_response = up_raw_response,
        .drained = up_drained,
        .stderr_line = up_stderr,
};

/* ------------------------------------------------------------------ object */

static int check_config(const struct glove_kernel_gateway_config *cfg, struct glove_error *err) {
        if (!cfg->policy || !cfg->notify || !cfg->upstreams || cfg->n_upstreams == 0 ||
            cfg->n_upstreams > GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX || cfg->call_timeout_ms < 1 || cfg->max_frame == 0)
                return glove_error_set(err, EINVAL, "gateway.config", "the gateway needs a policy, a notify callback, 1 to %d upstreams, "
                                       "a call timeout and a frame bound", GLOVE_KERNEL_GATEWAY_UPSTREAMS_MAX);
        for (size_t i = 0; i < cfg->n_upstreams; i++)
                for (size_t k = 0; k < i; k++)
                        if (strcmp(cfg->upstreams[k].name, cfg->upstreams[i].name) == 0)
                                return glove_error_set(err, EINVAL, "gateway.config", "upstream name %s given twice",
                                                       cfg->upstreams[i].name);
        return 0;
}

static int start_upstreams(struct glove_kernel_gateway *gw, struct glove_error *err) {
        for (size_t i = 0; i < gw->cfg.n_upstreams; i++) {
                struct gw_upstream *gu = &gw->ups[i];
                const struct glove_mcp_upstream_spec *spec = &gw->cfg.upstreams[i];
                gu->gw = gw;
                gu->index = i;
                gu->optional = gw->cfg.upstream_optional && gw->cfg.upstream_optional[i];
                gu->own_names = gw->cfg.upstream_own_names && gw->cfg.upstream_own_names[i];
                /* The client capabilities it is told of follow policy. */
                gu->features = glove_policy_client_features(gw->cfg.policy, spec->name);
                gu->client_caps = gw_client_declared(gu->features);
                if (!gu->client_caps)
                        return glove_error_set(err, ENOMEM, "gateway.nomem", "out of memory");
                gu->cfg = (struct glove_mcp_upstream_config){
                        .capabilities = gu->client_caps,
                        .max_frame = gw->cfg.max_frame,
                        .max_frame_name = gw->cfg.max_frame_name,
                        .tool_name_valid = glove_policy_tool_name_valid,
                        .ops = gw->cfg.upstream_stderr ? &upstream_ops_stderr : &upstream_ops,
                        .userdata = gu,
                };
                int rr = glove_mcp_upstream_new(gw->event, spec, &gu->cfg, &gu->u, err);
                if (rr < 0)
                        return rr;
                gw->n_ups++;
                /* contained, and a contained one's grants (docs/mcp-mediation.md, Upstreams). */
                gw_audit(gw, "upstream_start", json_pack("{s:s,s:o,s:i,s:b,s:O*}", "name", spec->name, "path",
                                                         glove_audit_string(spec->path, strlen(spec->path)), "pid",
                                                         (int)glove_mcp_upstream_pid(gu->u), "contained",
                                                         spec->launch_path != NULL, "sandbox", spec->sandbox));
                if (gw->stopping)
                        return glove_error_set(err, gw->err.errnum, gw->err.code, "%s", gw->err.message);
        }
        return 0;
}

int glove_kernel_gateway_new(sd_event *event, const struct glove_kernel_gateway_config *cfg,
                             struct glove_kernel_gateway **out, struct glove_error *err) {
        *out = NULL;
        int rr = check_config(cfg, err);
        if (rr < 0)
                return rr;
        struct glove_kernel_gateway *gw = calloc(1, sizeof(*gw));
        if (gw)
                gw->calls = malloc(sizeof(*gw->calls));
        if (!gw || !gw->calls) {
                free(gw);
                return glove_error_set(err, ENOMEM, "gateway.nomem", "out of memory");
        }
        glove_kernel_calls_init(gw->calls);
        gw->event = event;
        gw->cfg = *cfg;
        gw->agent_in = gw->agent_out = -1;
        glove_mcp_reader_init(&gw->agent_reader, cfg->max_frame);
        glove_mcp_writer_init(&gw->agent_writer, GLOVE_KERNEL_GATEWAY_AGENT_PENDING_MAX);
        gw->constructing = true;
        rr = start_upstreams(gw, err);
        if (rr >= 0) {
                rr = sd_event_add_time(event, &gw->call_timer, CLOCK_MONOTONIC, 0, 1000, gw_on_call_timer, gw);
                if (rr >= 0)
                        rr = sd_event_source_set_enabled(gw->call_timer, SD_EVENT_OFF);
                if (rr < 0)
                        glove_error_set(err, -rr, "gateway.event_loop", "event loop: %s", strerror(-rr));
                if (rr >= 0)
                        rr = gw_client_init(gw, err);
                if (rr >= 0)
                        rr = gw_mrtr_init(gw, err);
        }
        gw->constructing = false;
        if (rr < 0) {
                glove_kernel_gateway_free(gw);
                return rr;
        }
        *out = gw;
        return 0;
}

int glove_kernel_gateway_attach_agent(struct glove_kernel_gateway *gw, int read_fd, int write_fd, struct glove_error *err) {
        _cleanup_close_ int rfd = read_fd, wfd = write_fd;
        if (gw->attached)
                return glove_error_set(err, EALREADY, "gateway.attached", "the agent's channel is already attached");
        if (fcntl(rfd, F_SETFL, O_NONBLOCK) < 0 || fcntl(wfd, F_SETFL, O_NONBLOCK) < 0)
                return glove_error_set(err, errno, "gateway.event_loop", "fcntl: %s", strerror(errno));
        gw->agent_out = TAKE_FD(rfd);
        gw->agent_in = TAKE_FD(wfd);
        gw->attached = true;
        int rr = sd_event_add_io(gw->event, &gw->agent_out_src, gw->agent_out, EPOLLIN, gw_on_agent_readable, gw);
        if (rr >= 0)
                rr = sd_event_add_io(gw->event, &gw->agent_in_src, gw->agent_in, EPOLLOUT, gw_on_agent_writable, gw);
        if (rr >= 0)
                rr = sd_event_source_set_enabled(gw->agent_in_src, SD_EVENT_OFF);
        if (rr >= 0)
                rr = sd_event_add_time_relative(gw->event, &gw->startup_timer, CLOCK_MONOTONIC,
                                                (uint64_t)gw->cfg.call_timeout_ms * 1000, 1000, on_startup_timeout, gw);
        /* READY is reported from the loop: a time already past. */
        if (rr >= 0)
                rr = sd_event_add_time(gw->event, &gw->startup_check, CLOCK_MONOTONIC, 1, 0, on_startup_check, gw);
        if (rr < 0)
                return glove_error_set(err, -rr, "gateway.event_loop", "event loop: %s", strerror(-rr));
        return 0;
}

const char *glove_kernel_gateway_failed_upstream(const struct glove_kernel_gateway *gw) {
        return gw->failed_upstream;
}

size_t glove_kernel_gateway_upstreams(const struct glove_kernel_gateway *gw) {
        return gw->n_ups;
}

const struct glove_mcp_upstream *glove_kernel_gateway_upstream(const struct glove_kernel_gateway *gw, size_t i) {
        return i < gw->n_ups ? gw->ups[i].u : NULL;
}

void glove_kernel_gateway_free(struct glove_kernel_gateway *gw) {
        if (!gw)
                return;
        if (gw->calls) {
                glove_kernel_calls_clear(gw->calls);
                free(gw->calls);
        }
        for (size_t i = 0; i < gw->n_ups; i++) {
                glove_mcp_upstream_free(gw->ups[i].u);
                gw->ups[i].u = NULL;
                json_decref(gw->ups[i].subscribed);
                json_decref(gw->ups[i].prompt_names);
        }
        gw_client_free(gw);
        gw_listen_clear(gw);
        json_decref(gw->cur_seal);
        explicit_bzero(gw->mrtr_key, sizeof(gw->mrtr_key));
        gw->agent_out_src = sd_event_source_disable_unref(gw->agent_out_src);
        gw->agent_in_src = sd_event_source_disable_unref(gw->agent_in_src);
        gw->startup_timer = sd_event_source_disable_unref(gw->startup_timer);
        gw->startup_check = sd_event_source_disable_unref(gw->startup_check);
        gw->grace_timer = sd_event_source_disable_unref(gw->grace_timer);
        gw->call_timer = sd_event_source_disable_unref(gw->call_timer);
        glove_closep(&gw->agent_in);
        glove_closep(&gw->agent_out);
        glove_mcp_reader_free(&gw->agent_reader);
        glove_mcp_writer_free(&gw->agent_writer);
        free(gw);
}

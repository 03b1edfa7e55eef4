/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session keeper (keeper.h): one process per managed session, the
 * executable glove-keeper that gloved execs with its launch
 * (keeper_launch.c); a unit test may run it in a fork of its own.
 *
 * Its life: detach from gloved (own session, default signals, descriptors
 * 0..2 on /dev/null and DIR/SESSION.log, the four it is given on 3..6,
 * nothing else open); start the session on its own sd-event loop, attached
 * to its terminal as the one client; serve one gloved connection at a time
 * (the inherited channel first, then whatever connects to DIR/SESSION.sock):
 * STATE and TRANSCRIPT after each HELLO, the agent's output as OUTPUT, READY
 * with the identity, input by credit; write DIR/SESSION.status at ready,
 * while the usage changes and at the end; at the end send ENDED and wait for
 * ACK (bounded), or exit at once when no gloved is connected. gloved going
 * away never stops the session; the keeper going away kills it (PID 1's
 * death signal).
 *
 * This file: the process, the session and its files; keeper_conn.c: the
 * channel; keeper_proc.c: the readings of /proc.
 */
#include "glove/keeper/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/store/store.h"
#include "keeper_internal.h"

static const char *const phase_names[] = { "starting", "ready", "running", "ended" };

static json_t *json_u64(uint64_t v) {
        return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static int64_t now_ms(const struct glove_keeper *k) {
        return k->now_ms ? k->now_ms() : glove_time_realtime_ms();
}

/* ---- outcome, state, status ---- */

static const char *kind_name(enum glove_session_outcome_kind kind) {
        switch (kind) {
        case GLOVE_SESSION_EXITED:
                return "exited";
        case GLOVE_SESSION_SIGNALED:
                return "signaled";
        case GLOVE_SESSION_EXEC_FAILED:
                return "exec_failed";
        case GLOVE_SESSION_LOST:
                return "lost";
        case GLOVE_SESSION_SETUP_FAILED:
                break;
        }
        return "setup_failed";
}

static json_t *outcome_json(const struct glove_keeper *k, const struct glove_session_outcome *o) {
        const char *limit = glove_keeper_limit_plan_name(o->limit);
        /* A start that failed in the engine keeps the engine's code; the
         * keeper's own reason comes next; then a teardown problem. */
        const char *code = NULL;
        if (o->kind == GLOVE_SESSION_SETUP_FAILED && glove_error_is_set(&o->error))
                code = o->error.code;
        else if (k->fail_code)
                code = k->fail_code;
        else if (glove_error_is_set(&o->error))
                code = o->error.code;
        json_t *v = json_pack("{s:s,s:i,s:o,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:o}", "kind", kind_name(o->kind), "value",
                              o->value, "limit", limit ? json_string(limit) : json_null(), "disk_full", o->disk_full,
                              "stopped", o->stopped, "audit_failed", o->audit_failed, "audit_full", o->audit_full,
                              "released", o->released, "output_cut", o->output_cut, "killed", k->killed, "stopping",
                              k->stopping, "aborted", k->aborted, "error_code",
                              code ? json_string(code) : json_null());
        if (v) {
                json_object_set_new(v, "cpu_time_ms", json_u64(o->cpu_time_ms));
                json_object_set_new(v, "peak_memory_bytes", json_u64(o->peak_memory_bytes));
                json_object_set_new(v, "output_bytes", json_u64(o->output_bytes));
                json_object_set_new(v, "wall_time_ms", json_u64(o->wall_time_ms));
        }
        if (v && k->ev)
                json_object_set_new(v, "refinement", glove_keeper_refinement_observation(k));
        return v;
}

static json_t *keeper_json(const struct glove_keeper *k) {
        json_t *v = json_pack("{s:i}", "pid", (int)k->pid);
        if (v)
                json_object_set_new(v, "start_time", json_u64(k->start_time));
        return v;
}

static json_t *usage_json(const struct glove_session_usage *u) {
        json_t *v = json_object();
        if (v) {
                json_object_set_new(v, "cpu_time_ms", json_u64(u->cpu_time_ms));
                json_object_set_new(v, "output_bytes", json_u64(u->output_bytes));
                json_object_set_new(v, "peak_memory_bytes", json_u64(u->peak_memory_bytes));
                json_object_set_new(v, "wall_time_ms", json_u64(u->wall_time_ms));
        }
        return v;
}

static void usage_now(const struct glove_keeper *k, struct glove_session_usage *u) {
        if (k->s) {
                glove_session_usage(k->s, u);
                return;
        }
        *u = (struct glove_session_usage){ 0 };
}

/* Writes DIR/SESSION.status: a new file, fsynced, renamed over the old;
 * with sync_dir the directory is fsynced too. Returns 0 or -errno (logged). */
static int status_write(struct glove_keeper *k, bool sync_dir) {
        struct glove_session_usage u;
        usage_now(k, &u);
        json_t *v = json_pack("{s:s,s:O,s:o,s:O,s:s,s:I,s:o,s:i}", "boot_id", k->boot_id, "identity",
                              k->identity ? k->identity : json_null(), "keeper", keeper_json(k), "outcome",
                              k->outcome ? k->outcome : json_null(), "session_id", k->id, "updated_at_ms",
                              (json_int_t)now_ms(k), "usage", usage_json(&u), "version", GLOVE_KEEPER_VERSION);
        _cleanup_json_ json_t *own = v;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct glove_error e = { 0 };
        if (!own || glove_json_encode_canonical(own, &text, &len, &e) < 0) {
                glove_keeper_log(k, "status not written: %s", own ? e.message : "out of memory");
                return -ENOMEM;
        }
        char name[NAME_MAX_KEEPER];
        snprintf(name, sizeof(name), "%s.status", k->stem);
        /* Synced only at the end (sync_dir): the file must survive the
         * keeper's and gloved's deaths, which the page cache does; after a
         * host crash the boot id decides (host_restarted) and no status is
         * read. The end's outcome is synced all the same, off the agent's
         * path. */
        int r = glove_file_replace(FD_DIR, name, text, len, 0600,
                                   sync_dir ? GLOVE_FILE_REPLACE_SYNC_DIR : GLOVE_FILE_REPLACE_NO_SYNC, NULL);
        if (r < 0) {
                glove_keeper_log(k, "status not written: %s", strerror(-r));
                return r;
        }
        k->written = u;
        return 0;
}

static int on_status_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)usec;
        struct glove_keeper *k = userdata;
        if (k->phase == PH_ENDED)
                return sd_event_source_set_enabled(src, SD_EVENT_OFF);
        struct glove_session_usage u;
        usage_now(k, &u);
        if (memcmp(&u, &k->written, sizeof(u)) != 0)
                (void)status_write(k, false);
        (void)sd_event_source_set_time_relative(src, GLOVE_KEEPER_STATUS_MS * 1000ULL);
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static size_t input_credit(const struct glove_keeper *k) {
        return k->input_closed ? 0 : sizeof(k->in_buf) - k->in_len;
}

static void send_state(struct glove_keeper *k) {
        json_t *v = json_pack("{s:i,s:o,s:s,s:O,s:I,s:I,s:b,s:O}", "version", GLOVE_KEEPER_VERSION, "keeper",
                              keeper_json(k), "phase", phase_names[k->phase], "identity",
                              k->identity ? k->identity : json_null(), "output_offset", (json_int_t)k->out_off,
                              "input_credit", (json_int_t)input_credit(k), "input_closed", k->input_closed, "outcome",
                              k->outcome ? k->outcome : json_null());
        (void)glove_keeper_send_json(k, GLOVE_KEEPER_STATE, v);
}

static void put_u64le(uint8_t out[8], uint64_t v) {
        for (int i = 0; i < 8; i++)
                out[i] = (uint8_t)(v >> (8 * i));
}

static void send_transcript(struct glove_keeper *k) {
        _cleanup_free_ uint8_t *buf = malloc(GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
        if (!buf) {
                glove_keeper_conn_lost(k, "out of memory for the transcript");
                return;
        }
        struct glove_terminal *t = k->s ? glove_session_terminal(k->s) : NULL;
        size_t n = t ? glove_terminal_transcript(t, buf, GLOVE_TERMINAL_TRANSCRIPT_DEFAULT) : 0;
        if (n > k->out_off)
                n = (size_t)k->out_off; /* never: the transcript is the tail of what was relayed */
        uint8_t off[8];
        put_u64le(off, k->out_off - n);
        struct iovec v[2] = { { .iov_base = off, .iov_len = 8 }, { .iov_base = buf + 0, .iov_len = n } };
        (void)glove_keeper_sendv(k, GLOVE_KEEPER_TRANSCRIPT, v, n ? 2 : 1);
}

/* ---- the end ---- */

_Noreturn void glove_keeper_exit(struct glove_keeper *k) {
        _exit(k->exit_status);
}

static int on_ack_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        struct glove_keeper *k = userdata;
        glove_keeper_log(k, "no ACK within %d ms: exiting (the status file holds the outcome)", GLOVE_KEEPER_ACK_WAIT_MS);
        glove_keeper_exit(k);
}

static void send_closed(struct glove_keeper *k) {
        if (k->closed_told)
                return;
        k->closed_told = true;
        (void)glove_keeper_send_json(k, GLOVE_KEEPER_CREDIT, json_pack("{s:b}", "closed", 1));
}

/* The session ended with o (NULL: it never started, e.g. its error). */
static void ended(struct glove_keeper *k, json_t *outcome) {
        glove_keeper_services_stop(k); /* nothing more is relayed or audited */
        k->phase = PH_ENDED;
        k->outcome = outcome;
        /* Nothing runs in the sandbox any more: the lease locks go now, so
         * that the handle is free by the time gloved records the end. */
        for (size_t i = 0; i < k->n_hold; i++)
                (void)close(FD_HOLD_FIRST + (int)i);
        k->n_hold = 0;
        k->input_closed = true;
        k->in_len = 0;
        k->release_timer = sd_event_source_disable_unref(k->release_timer);
        k->status_timer = sd_event_source_disable_unref(k->status_timer);
        k->input_defer = sd_event_source_disable_unref(k->input_defer);
        if (!outcome)
                glove_keeper_log(k, "the outcome could not be encoded (out of memory)");
        (void)status_write(k, true);
        if (k->greeted) {
                send_closed(k);
                (void)glove_keeper_send_json(k, GLOVE_KEEPER_ENDED, json_incref(k->outcome));
        }
        if (k->conn_fd < 0)
                glove_keeper_exit(k);
        if (sd_event_add_time_relative(k->loop, &k->ack_timer, CLOCK_MONOTONIC, GLOVE_KEEPER_ACK_WAIT_MS * 1000ULL, 1000,
                                       on_ack_timer, k) < 0)
                glove_keeper_exit(k);
}

static void on_exited(struct glove_session *s, const struct glove_session_outcome *o, void *userdata) {
        (void)s;
        struct glove_keeper *k = userdata;
        ended(k, outcome_json(k, o));
}

static void on_warning(struct glove_session *s, const struct glove_error *w, void *userdata) {
        (void)s;
        struct glove_keeper *k = userdata;
        glove_keeper_log(k, "warning: %s: %s", w->code, w->message);
        if (k->greeted)
                (void)glove_keeper_send_json(k, GLOVE_KEEPER_WARNING,
                                     json_pack("{s:s,s:s}", "code", w->code ? w->code : "session.warning", "message",
                                               w->message));
}

/* Ends the start: the agent never runs (killing before release ends in
 * on_exited with released false). */
static void fail_start(struct glove_keeper *k, const char *code) {
        if (!k->fail_code)
                k->fail_code = code;
        if (k->s)
                glove_session_stop(k->s, 0);
}

/* ---- ready and release ---- */

static int on_release_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        struct glove_keeper *k = userdata;
        if (k->phase == PH_READY) {
                glove_keeper_log(k, "not released within %d ms of ready: stopped", GLOVE_KEEPER_RELEASE_WAIT_MS);
                fail_start(k, "start.release_timeout");
        }
        return 0;
}

static json_t *identity_json(struct glove_keeper *k, pid_t pid, struct glove_error *e) {
        uint64_t st = 0;
        int r = glove_keeper_proc_start_time(pid, &st);
        if (r < 0) {
                glove_error_set(e, -r, "start.pid_identity", "the start time of PID 1 (%d) could not be read: %s", (int)pid,
                                strerror(-r));
                return NULL;
        }
        json_t *cg = glove_keeper_cgroup_identity(pid, k->cgroup_parent, k->cgroup_v2);
        if (!cg && k->desc.cgroup_policy == GLOVE_SESSION_CGROUP_REQUIRED) {
                glove_error_set(e, EIO, "start.cgroup_identity", "the run cgroup of the session could not be read");
                return NULL;
        }
        json_t *v = json_pack("{s:s,s:o,s:o,s:i}", "boot_id", k->boot_id, "cgroup", cg ? cg : json_null(), "keeper",
                              keeper_json(k), "pid", (int)pid);
        if (v)
                json_object_set_new(v, "pid_start_time", json_u64(st));
        else
                glove_error_set(e, ENOMEM, "keeper.no_memory", "out of memory");
        return v;
}

static void on_ready(struct glove_session *s, void *userdata) {
        struct glove_keeper *k = userdata;
        struct glove_error e = { 0 };
        k->phase = PH_READY;
        const struct glove_sandbox *sb = glove_session_sandbox(s);
        k->identity = sb && !k->identity_unknown ? identity_json(k, sb->pid, &e) : NULL;
        if (!k->identity) {
                glove_keeper_log(k, "not released: %s: %s", e.code ? e.code : "start.identity", e.message);
                fail_start(k, e.code ? e.code : "start.identity");
                return;
        }
        if (sd_event_add_time_relative(k->loop, &k->status_timer, CLOCK_MONOTONIC, GLOVE_KEEPER_STATUS_MS * 1000ULL,
                                       1000, on_status_timer, k) < 0)
                k->status_timer = NULL; /* the end still writes it */
        if (k->aborted || k->stopping || k->killed) {
                (void)status_write(k, false);
                return; /* being stopped already: never released, no READY */
        }
        if (sd_event_add_time_relative(k->loop, &k->release_timer, CLOCK_MONOTONIC,
                                       GLOVE_KEEPER_RELEASE_WAIT_MS * 1000ULL, 1000, on_release_timer, k) < 0) {
                glove_keeper_log(k, "no release timer: stopped");
                fail_start(k, "keeper.event_loop");
                return;
        }
        if (k->greeted)
                (void)glove_keeper_send_json(k, GLOVE_KEEPER_READY, json_incref(k->identity));
        /* After READY: gloved's gate does not wait for this file. */
        (void)status_write(k, false);
}

static void do_release(struct glove_keeper *k) {
        if (k->phase == PH_RUNNING || k->phase == PH_ENDED)
                return; /* a second one is ignored */
        if (k->phase != PH_READY) {
                glove_keeper_log(k, "RELEASE before READY ignored");
                return;
        }
        if (k->aborted || k->stopping || k->killed || k->fail_code) {
                glove_keeper_log(k, "RELEASE ignored: the session is being stopped");
                return;
        }
        struct glove_error e = { 0 };
        int r = glove_session_release(k->s, &e);
        if (r == -EALREADY)
                return;
        if (r < 0) {
                glove_keeper_log(k, "release failed: %s: %s", e.code ? e.code : "sandbox.release", e.message);
                fail_start(k, e.code ? e.code : "sandbox.release");
                return;
        }
        k->phase = PH_RUNNING;
        k->release_timer = sd_event_source_disable_unref(k->release_timer);
}

/* ---- the terminal ---- */

static void on_output(void *userdata, int stream, const void *buf, size_t n) {
        (void)stream;
        struct glove_keeper *k = userdata;
        uint8_t off[8];
        put_u64le(off, k->out_off);
        k->out_off += n;
        glove_keeper_refinement_feed(k, buf, n); /* every byte, before anything can evict it */
        if (!k->greeted)
                return; /* kept in the transcript only */
        struct iovec v[2] = { { .iov_base = off, .iov_len = 8 }, { .iov_base = (void *)buf, .iov_len = n } };
        (void)glove_keeper_sendv(k, GLOVE_KEEPER_OUTPUT, v, 2);
}

static void input_closed(struct glove_keeper *k) {
        k->input_closed = true;
        k->in_len = 0;
        if (k->greeted)
                send_closed(k);
}

/* Hands the buffered input to the terminal as far as it takes it; the
 * bytes taken go back to gloved as credit. */
static void input_feed(struct glove_keeper *k) {
        if (k->input_closed || !k->s)
                return;
        size_t taken = 0;
        while (k->in_len > 0) {
                ssize_t n = glove_terminal_input(glove_session_terminal(k->s), k->in_buf, k->in_len);
                if (n < 0) {
                        input_closed(k);
                        break;
                }
                if (n == 0)
                        break; /* input_room comes later */
                memmove(k->in_buf, k->in_buf + n, k->in_len - (size_t)n);
                k->in_len -= (size_t)n;
                taken += (size_t)n;
        }
        if (taken && k->greeted && !k->input_closed)
                (void)glove_keeper_send_json(k, GLOVE_KEEPER_CREDIT, json_pack("{s:I}", "bytes", (json_int_t)taken));
}

static int on_input_defer(sd_event_source *src, void *userdata) {
        (void)src;
        input_feed(userdata);
        return 0;
}

/* May run inside glove_terminal_input: the next feed comes from a fresh
 * event. */
static void on_input_room(void *userdata) {
        struct glove_keeper *k = userdata;
        if (k->input_defer)
                (void)sd_event_source_set_enabled(k->input_defer, SD_EVENT_ONESHOT);
}

static const struct glove_terminal_client_ops client_ops = { .output = on_output, .input_room = on_input_room };

/* ---- messages from gloved ---- */

/* The payload as one JSON object, or NULL (logged). A new reference. */
static json_t *payload_object(struct glove_keeper *k, uint8_t type, const uint8_t *p, size_t n) {
        json_t *v = NULL;
        struct glove_error e = { 0 };
        if (glove_json_decode_strict(p, n, GLOVE_KEEPER_MSG_MAX, GLOVE_JSON_OBJECT_ONLY, &v, &e) < 0) {
                glove_keeper_log(k, "message '%c' ignored: %s: %s", type, e.code, e.message);
                return NULL;
        }
        return v;
}

/* An integer member in [min, max], or false (logged). */
static bool payload_int(struct glove_keeper *k, uint8_t type, const json_t *v, const char *key, int64_t min, int64_t max,
                        int64_t *out) {
        struct glove_error e = { 0 };
        if (glove_json_get_int(v, key, "$", min, max, out, &e) < 0) {
                glove_keeper_log(k, "message '%c' ignored: %s: %s", type, e.code, e.message);
                return false;
        }
        return true;
}

static void on_hello(struct glove_keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_HELLO, p, n);
        int64_t version;
        if (!v || !payload_int(k, GLOVE_KEEPER_HELLO, v, "version", 1, INT32_MAX, &version))
                return;
        unsigned gen = k->conn_gen;
        k->greeted = true;
        k->closed_told = k->input_closed; /* STATE says it */
        send_state(k);
        if (k->conn_gen == gen)
                send_transcript(k);
        /* Then what the phase already said on an earlier connection. */
        if (k->conn_gen == gen && k->phase == PH_READY && k->identity && k->release_timer)
                (void)glove_keeper_send_json(k, GLOVE_KEEPER_READY, json_incref(k->identity));
        if (k->conn_gen == gen && k->phase == PH_ENDED)
                (void)glove_keeper_send_json(k, GLOVE_KEEPER_ENDED, json_incref(k->outcome));
}

static void on_input_msg(struct glove_keeper *k, const uint8_t *p, size_t n) {
        if (n == 0 || n > GLOVE_KEEPER_INPUT_MAX) {
                glove_keeper_log(k, "INPUT of %zu bytes ignored: 1..%d", n, GLOVE_KEEPER_INPUT_MAX);
                return;
        }
        if (k->input_closed)
                return; /* gloved learns it from CREDIT {"closed":true} */
        if (n > sizeof(k->in_buf) - k->in_len) {
                /* More than the credit: refused whole, never cut. */
                glove_keeper_log(k, "INPUT of %zu bytes refused: only %zu of credit", n, sizeof(k->in_buf) - k->in_len);
                if (k->greeted)
                        (void)glove_keeper_send_json(k, GLOVE_KEEPER_WARNING,
                                             json_pack("{s:s,s:s}", "code", "keeper.input_over_credit", "message",
                                                       "input past the credit was refused"));
                return;
        }
        memcpy(k->in_buf + k->in_len, p, n);
        k->in_len += n;
        input_feed(k);
}

static void on_resize(struct glove_keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_RESIZE, p, n);
        int64_t rows, cols;
        if (!v || !payload_int(k, GLOVE_KEEPER_RESIZE, v, "rows", 1, 65535, &rows) ||
            !payload_int(k, GLOVE_KEEPER_RESIZE, v, "cols", 1, 65535, &cols))
                return;
        if (!k->s || k->phase == PH_ENDED)
                return;
        int r = glove_terminal_resize(glove_session_terminal(k->s), (unsigned)rows, (unsigned)cols);
        if (r < 0)
                glove_keeper_log(k, "RESIZE %lldx%lld: %s", (long long)rows, (long long)cols, strerror(-r));
}

static void on_signal_msg(struct glove_keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_SIGNAL, p, n);
        int64_t sig;
        if (!v || !payload_int(k, GLOVE_KEEPER_SIGNAL, v, "signal", 1, SIGRTMAX, &sig))
                return;
        if (sig == SIGKILL || sig == SIGSTOP) {
                glove_keeper_log(k, "SIGNAL %lld ignored: not catchable (KILL kills the sandbox)", (long long)sig);
                return;
        }
        if (k->s && k->phase != PH_ENDED)
                (void)glove_session_signal(k->s, (int)sig);
}

static void on_stop_msg(struct glove_keeper *k, const uint8_t *p, size_t n) {
        _cleanup_json_ json_t *v = payload_object(k, GLOVE_KEEPER_STOP, p, n);
        int64_t grace;
        if (!v || !payload_int(k, GLOVE_KEEPER_STOP, v, "grace_ms", 0, GLOVE_KEEPER_GRACE_MAX_MS, &grace))
                return;
        if (k->phase == PH_ENDED)
                return;
        k->stopping = true;
        if (k->s)
                glove_session_stop(k->s, (uint64_t)grace);
}

void glove_keeper_on_message(struct glove_keeper *k, const uint8_t *m, size_t len) {
        uint8_t type = m[0];
        const uint8_t *p = m + 1;
        size_t n = len - 1;
        bool empty = n == 0;
        switch (type) {
        case GLOVE_KEEPER_HELLO:
                on_hello(k, p, n);
                return;
        case GLOVE_KEEPER_RELEASE:
                if (empty)
                        do_release(k);
                break;
        case GLOVE_KEEPER_INPUT:
                on_input_msg(k, p, n);
                return;
        case GLOVE_KEEPER_RESIZE:
                on_resize(k, p, n);
                return;
        case GLOVE_KEEPER_SIGNAL:
                on_signal_msg(k, p, n);
                return;
        case GLOVE_KEEPER_KILL:
                if (empty && k->phase != PH_ENDED) {
                        k->killed = true;
                        if (k->s)
                                glove_session_stop(k->s, 0);
                }
                break;
        case GLOVE_KEEPER_STOP:
                on_stop_msg(k, p, n);
                return;
        case GLOVE_KEEPER_ABORT:
                if (empty && k->phase != PH_ENDED) {
                        k->aborted = true;
                        k->release_timer = sd_event_source_disable_unref(k->release_timer);
                        if (k->s)
                                glove_session_stop(k->s, 0);
                }
                break;
        case GLOVE_KEEPER_ACK:
                if (empty && k->phase == PH_ENDED)
                        glove_keeper_exit(k);
                if (empty)
                        glove_keeper_log(k, "ACK before the end ignored");
                break;
        default:
                glove_keeper_log(k, "unknown message type 0x%02x (%zu bytes) ignored", type, len);
                return;
        }
        if (!empty)
                glove_keeper_log(k, "message '%c' with a payload (%zu bytes) ignored", type, n);
}

/* ---- the process (descriptors and signals: keeper_setup.c) ---- */

static bool id_ok(const char *id) {
        size_t n = id ? strnlen(id, GLOVE_STORE_ID_MAX + 1) : 0;
        return n > 0 && n <= GLOVE_STORE_ID_MAX && !memchr(id, '/', n) && strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
}

static const struct glove_session_ops session_ops = { .ready = on_ready, .exited = on_exited, .warning = on_warning };

/* glove_session_start failed: the outcome says so (setup_failed). */
static json_t *start_failed_outcome(struct glove_keeper *k, const struct glove_error *e) {
        struct glove_session_outcome o = { .kind = GLOVE_SESSION_SETUP_FAILED, .limit = GLOVE_CGROUP_LIMIT_NONE };
        if (glove_error_is_set(e))
                o.error = *e;
        else
                glove_error_set(&o.error, EIO, "start.failed", "the session could not start");
        return outcome_json(k, &o);
}

_Noreturn void glove_keeper_run(const struct glove_keeper_args *a) {
        if (!a || !a->desc || !id_ok(a->session_id) || !a->stem || !id_ok(a->stem) || a->channel_fd < 0 || a->listen_fd < 0 || a->dir_fd < 0)
                _exit(1);
        (void)setsid();
        (void)prctl(PR_SET_NAME, "glove-keeper", 0, 0, 0);
        (void)!chdir("/"); /* pins no directory of gloved's */
        glove_keeper_reset_signals();
        bool have_audit = a->desc->audit && a->desc->audit->fd >= 0;
        struct glove_keeper_fd_layout fl;
        if (glove_keeper_setup_fds(a, a->stem, &fl) < 0)
                _exit(1);

        /* The keeper's own copies (of its decoded launch, or of a test's
         * memory). */
        struct glove_keeper *k = calloc(1, sizeof(*k)); /* lives until _exit */
        if (!k)
                _exit(1);
        *k = (struct glove_keeper){
                .id = a->session_id,
                .stem = a->stem,
                .desc = *a->desc,
                .cgroup_parent = a->cgroup_parent,
                .cgroup_v2 = a->cgroup_v2,
                .now_ms = a->now_ms,
                .n_hold = a->hold_fds ? a->n_hold_fds : 0,
                .inherit_fd = fl.inherit,
                .services_json = a->services_json,
                .service_fd_first = fl.service_first,
                .n_service_fds = a->service_fds ? a->n_service_fds : 0,
                .pid = getpid(),
                .conn_fd = -1,
                .exit_status = 0,
        };
        k->q_tail = &k->q_head;
        k->audit.fd = -1;
        k->desc.audit = NULL;
        if (have_audit) {
                k->audit = *a->desc->audit;
                k->audit.fd = FD_AUDIT;
                k->desc.audit = &k->audit;
        }
        k->desc.parent_death_kill = true;
        k->desc.inherit_fd = k->inherit_fd; /* has_inherit_fd as given */
        k->input_closed = k->desc.terminal == GLOVE_TERMINAL_STDERR ||
                          (k->desc.terminal == GLOVE_TERMINAL_PIPES && k->desc.input_closed);
        k->closed_told = k->input_closed;
        /* Both are part of the identity a later gloved checks: without
         * them the session never starts (an identity that cannot be
         * verified would make a running session look like another boot's
         * or another process's). */
        int r = glove_keeper_boot_id(k->boot_id);
        if (r < 0)
                glove_keeper_log(k, "boot id unreadable: %s", strerror(-r));
        int r2 = glove_keeper_proc_start_time(k->pid, &k->start_time);
        if (r2 < 0)
                glove_keeper_log(k, "own start time unreadable: %s", strerror(-r2));
        k->identity_unknown = r < 0 || r2 < 0;

        if ((r = sd_event_new(&k->loop)) < 0) {
                glove_keeper_log(k, "sd_event_new: %s", strerror(-r));
                _exit(1);
        }
        /* listen(2) here, not in gloved: a peer's SO_PEERCRED names the
         * process that called it, and gloved checks that it is the keeper. */
        if ((r = listen(FD_LISTEN, 4) < 0 ? -errno : 0) < 0 ||
            (r = fcntl(FD_LISTEN, F_SETFL, fcntl(FD_LISTEN, F_GETFL) | O_NONBLOCK) < 0 ? -errno : 0) < 0 ||
            (r = sd_event_add_io(k->loop, &k->listen_src, FD_LISTEN, EPOLLIN, glove_keeper_on_listen, k)) < 0)
                glove_keeper_log(k, "the listening socket is not served: %s", strerror(-r));
        if ((r = glove_keeper_conn_set(k, FD_CHANNEL)) < 0)
                glove_keeper_log(k, "the channel is not served: %s", strerror(-r));
        if ((r = sd_event_add_defer(k->loop, &k->input_defer, on_input_defer, k)) >= 0)
                (void)sd_event_source_set_enabled(k->input_defer, SD_EVENT_OFF);
        else
                k->input_defer = NULL;

        struct glove_error e = { 0 };
        r = glove_keeper_refinement_start(k, a, &e);
        if (r >= 0)
                r = glove_keeper_services_start(k, &e);
        if (r < 0)
                ; /* e says why */
        else if (k->input_defer)
                r = glove_session_start(k->loop, &k->desc, &session_ops, k, &k->s, &e);
        else
                r = glove_error_set(&e, -r, "keeper.event_loop", "event loop: %s", strerror(-r));
        /* The sandbox holds its own copy of the inherited stream once the
         * session started (or none, when it did not): the keeper keeps
         * none, so the supervisor's end sees the stream end with the agent. */
        if (k->inherit_fd >= 0) {
                (void)close(k->inherit_fd);
                k->inherit_fd = -1;
        }
        if (r < 0) {
                k->s = NULL;
                glove_keeper_log(k, "the session could not start: %s: %s", e.code ? e.code : "start.failed", e.message);
                k->exit_status = 1;
                ended(k, start_failed_outcome(k, &e));
        } else if ((r = glove_terminal_attach(glove_session_terminal(k->s), &client_ops, k, false, &k->client)) < 0) {
                k->client = NULL;
                glove_keeper_log(k, "the terminal has no room for the keeper: %s", strerror(-r));
                fail_start(k, "keeper.no_memory");
        }
        r = sd_event_loop(k->loop);
        glove_keeper_log(k, "the event loop failed: %s", strerror(r < 0 ? -r : EIO));
        _exit(1);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Attach streams of managed sessions (see runtime.h): the attachments of
 * a session and the output pushed to them (skips and gaps when a
 * connection's queue is full), the session_ended notice, and the
 * attach_session, detach_session, write_stdin and resize methods. */
#include "glove/runtime/runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/keeper/keeper.h"
#include "runtime_internal.h"

/* ---- attach streams ---- */

/* Pushes the session_output_gap of a skipping attachment (last: within the
 * slack of a final notice) and ends the skip. Returns 0 or the push's error
 * (the skip then goes on). */
static int gap_push(struct attachment *a, bool last) {
        if (!a->skip.skipping)
                return 0;
        int r = a->conn->ops->push(a->conn, glove_runtime_output_gap_message(a->s->id, a->skip.skipped_bytes),
                                        last);
        if (r == 0)
                a->skip = (struct glove_runtime_output_skip){ 0 };
        return r;
}

void rt_attachment_drop(struct attachment *a, const char *reason) {
        struct rt_session *s = a->s;
        if (reason)
                (void)gap_push(a, true);
        for (struct attachment **p = &s->att; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        break;
                }
        s->n_att--;
        glove_terminal_detach(a->client);
        if (reason)
                (void)a->conn->ops->push(a->conn,
                                              json_pack("{s:s,s:{s:s,s:s}}", "method", "session_detached", "params",
                                                        "session_id", s->id, "reason", reason),
                                              true);
        a->conn->ops->attachments(a->conn, -1);
        free(a);
}

/* A skipping attachment whose connection drained below half the bound
 * pushes its gap and resumes. Returns false when a was dropped (a push
 * failed otherwise than for room). */
static bool attachment_resume(struct attachment *a) {
        if (!glove_runtime_output_skip_resumes(&a->skip, a->conn->ops->pushed_pending(a->conn),
                                               GLOVE_RUNTIME_PUSH_MAX))
                return true;
        int r = gap_push(a, false);
        if (r == -ENOBUFS) {
                a->conn->ops->want_drain(a->conn);
        } else if (r < 0) {
                rt_attachment_drop(a, NULL);
                return false;
        }
        return true;
}

void rt_client_output(void *userdata, int stream, const void *buf, size_t n) {
        (void)stream;
        struct attachment *a = userdata;
        if (a->skip.skipping && !attachment_resume(a))
                return;
        if (a->skip.skipping) {
                glove_runtime_output_skip_add(&a->skip, n);
                return;
        }
        /* Encoded straight into the connection's output queue (the bytes
         * jansson would give: glove_protocol_frame_encode_output). */
        int r = a->conn->ops->push_output(a->conn, a->s->id, buf, n);
        if (r == -EINVAL) {
                /* An id JSON would escape (never one of the store's): the
                 * generic encoder. base64 is ASCII: no UTF-8 check (nocheck). */
                char *text = glove_base64_encode(buf, n);
                json_t *data = text ? json_stringn_nocheck(text, strlen(text)) : NULL;
                json_t *msg = data ? json_pack("{s:s,s:{s:s,s:o}}", "method", "session_output", "params",
                                               "session_id", a->s->id, "data_b64", data)
                                   : NULL;
                free(text);
                r = a->conn->ops->push(a->conn, msg, false);
        }
        if (r == -ENOBUFS) {
                /* The queue is full: skip (never wait, never drop) until it
                 * drains below half (glove_runtime_conn_drained). */
                glove_runtime_output_skip_add(&a->skip, n);
                a->conn->ops->want_drain(a->conn);
        } else if (r < 0) {
                rt_attachment_drop(a, NULL);
        }
}


void glove_runtime_conn_closed(struct glove_runtime *rt, struct glove_runtime_peer *conn) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att, *next; a; a = next) {
                        next = a->next;
                        if (a->conn == conn)
                                rt_attachment_drop(a, NULL);
                }
}

void glove_runtime_conn_drained(struct glove_runtime *rt, struct glove_runtime_peer *conn) {
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att, *next; a; a = next) {
                        next = a->next;
                        if (a->conn == conn)
                                (void)attachment_resume(a);
                }
}

static unsigned conn_attachments(struct glove_runtime *rt, struct glove_runtime_peer *conn) {
        unsigned n = 0;
        for (struct rt_session *s = rt->sessions; s; s = s->next)
                for (struct attachment *a = s->att; a; a = a->next)
                        n += a->conn == conn;
        return n;
}

/* ---- the end of a session, told to its attachments ---- */

void rt_end_notify(struct rt_session *s, const char *state) {
        while (s->att) {
                struct attachment *a = s->att;
                (void)gap_push(a, true);
                (void)a->conn->ops->push(a->conn,
                                              json_pack("{s:s,s:{s:s,s:s,s:I,s:O}}", "method", "session_ended", "params",
                                                        "session_id", s->id, "state", state, "receipt_sequence",
                                                        (json_int_t)s->receipt_seq, "termination",
                                                        s->termination ? s->termination : json_null()),
                                              true);
                rt_attachment_drop(a, NULL);
        }
}

/* ---- methods ---- */

int glove_runtime_attach(struct glove_runtime *rt, struct glove_runtime_peer *conn, const char *id,
                                 json_t **result, struct glove_error *err) {
        *result = NULL;
        const struct glove_store_session *st = rt_stored(rt, id, err);
        if (!st)
                return -ENOENT;
        struct rt_session *s = rt_find(rt, id);
        const uint8_t *tr = NULL;
        size_t tlen = 0;
        _cleanup_free_ uint8_t *buf = NULL;
        /* While the launch is prepared the attachment waits for the
         * terminal (prepared() joins it, or the failure ends it). */
        bool attach = s && s->live;
        if (attach) {
                for (struct attachment *a = s->att; a; a = a->next)
                        if (a->conn == conn) {
                                attach = false; /* already attached: the transcript again, no second stream */
                                break;
                        }
        }
        if (attach && (conn_attachments(rt, conn) >= GLOVE_RUNTIME_ATTACH_PER_CONN ||
                       s->n_att >= GLOVE_TERMINAL_CLIENTS_MAX))
                return glove_error_set(err, ENOSPC, "attach.too_many", "too many attachments");
        if (s && s->mir) {
                buf = malloc(GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
                if (!buf)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                tlen = rt_mirror_copy(s->mir, buf, GLOVE_TERMINAL_TRANSCRIPT_DEFAULT);
                tr = buf;
        } else if (s) {
                tr = s->transcript;
                tlen = s->transcript_len;
        }
        bool attached = false;
        if (attach) {
                struct attachment *a = calloc(1, sizeof(*a));
                if (!a)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                a->s = s;
                a->conn = conn;
                a->next = s->att;
                s->att = a;
                s->n_att++;
                conn->ops->attachments(conn, +1);
                attached = true;
        }
        _cleanup_free_ char *text = glove_base64_encode(tr ? tr : (const uint8_t *)"", tlen);
        if (!text)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        *result = json_pack("{s:s,s:s,s:s,s:I,s:b}", "session_id", id, "state",
                            glove_store_session_state_name(st->state), "transcript_b64", text, "transcript_bytes",
                            (json_int_t)tlen, "attached", attached);
        if (*result && s && !s->live && s->termination) {
                json_object_set(*result, "termination", s->termination);
                json_object_set_new(*result, "receipt_sequence", json_integer((json_int_t)s->receipt_seq));
        } else if (*result && !s && glove_store_session_state_terminal(st->state)) {
                /* Ended under an earlier gloved, or no longer kept in
                 * memory: the receipt journal still says how. */
                uint64_t seq = 0;
                _cleanup_json_ json_t *rc = NULL;
                if (glove_store_receipts_find(rt->o.receipts, rt_receipt_kind(st), id, &seq, &rc) == 1 && rc) {
                        json_object_set(*result, "termination", json_object_get(rt_resource_receipt(rc), "termination"));
                        json_object_set_new(*result, "receipt_sequence", json_integer((json_int_t)seq));
                }
        }
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_detach(struct glove_runtime *rt, struct glove_runtime_peer *conn, const char *id,
                                 json_t **result, struct glove_error *err) {
        if (!rt_stored(rt, id, err))
                return -ENOENT;
        struct rt_session *s = rt_find(rt, id);
        bool detached = false;
        for (struct attachment *a = s ? s->att : NULL; a; a = a->next)
                if (a->conn == conn) {
                        rt_attachment_drop(a, "detached");
                        detached = true;
                        break;
                }
        *result = json_pack("{s:b}", "detached", detached);
        return *result ? 0 : -ENOMEM;
}

/* A session gloved holds that is preparing or starting (its agent not yet
 * released), else NULL. */
static struct rt_session *early_session(struct glove_runtime *rt, const char *id) {
        const struct glove_store_session *st = glove_store_find(rt->o.store, id);
        struct rt_session *s = st ? rt_find(rt, id) : NULL;
        if (!s || !s->live ||
            (st->state != GLOVE_STORE_SESSION_PREPARING && st->state != GLOVE_STORE_SESSION_STARTING))
                return NULL;
        return s;
}

int glove_runtime_write_stdin(struct glove_runtime *rt, const char *id, const void *data, size_t len,
                                      json_t **result, struct glove_error *err) {
        if (early_session(rt, id))
                return glove_error_set(err, EAGAIN, "stdin.full",
                                       "session %s is not running yet: its input opens when it runs; retry later", id);
        struct rt_session *s = rt_live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        if (len > GLOVE_RUNTIME_STDIN_MAX)
                return glove_error_set(err, EMSGSIZE, "stdin.too_large", "at most %d bytes per write_stdin",
                                       GLOVE_RUNTIME_STDIN_MAX);
        if (s->input_closed)
                return glove_error_set(err, EPIPE, "session.not_running", "the agent's input is closed");
        size_t n = len < s->credit ? len : (size_t)s->credit;
        if (n == 0 && len)
                return glove_error_set(err, EAGAIN, "stdin.full", "the input queue is full; retry later");
        if (n && rt_link_send(s, GLOVE_KEEPER_INPUT, data, n) < 0)
                return glove_error_set(err, EAGAIN, "stdin.full", "the keeper's channel is full; retry later");
        s->credit -= n;
        *result = json_pack("{s:I}", "accepted", (json_int_t)n);
        return *result ? 0 : -ENOMEM;
}

int glove_runtime_resize(struct glove_runtime *rt, const char *id, unsigned rows, unsigned cols,
                                 json_t **result, struct glove_error *err) {
        struct rt_session *s = early_session(rt, id);
        if (s && s->kfd < 0) {
                /* Preparing: the terminal is made with this size. */
                s->rows = (unsigned short)rows;
                s->cols = (unsigned short)cols;
                *result = json_object();
                return *result ? 0 : -ENOMEM;
        }
        if (!s)
                s = rt_live_session(rt, id, err);
        if (!s)
                return -EINVAL;
        int r = rt_link_send_json(s, GLOVE_KEEPER_RESIZE, json_pack("{s:i,s:i}", "rows", (int)rows, "cols", (int)cols));
        if (r < 0)
                return glove_error_set(err, -r, "resize.failed", "the window size could not be sent to the keeper");
        *result = json_object();
        return *result ? 0 : -ENOMEM;
}

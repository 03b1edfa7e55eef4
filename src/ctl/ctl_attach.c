/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove ctl attach (see ctl.h, docs/control-protocol.md "glove ctl attach").
 *
 * One poll loop over standard input, the gloved connection and a signalfd
 * (SIGINT, SIGTERM, SIGHUP, SIGWINCH; SIGPIPE is blocked so a closed stdout
 * is an EPIPE). Standard input goes to write_stdin, one request in flight at
 * a time, at most CTL_STDIN_MAX bytes each; pushed session_output frames go
 * to standard output. On a terminal, standard input is put in raw mode and
 * restored on every way out of ctl_attach_run (the signals above included).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/time.h"
#include "glove/protocol/client.h"
#include "glove/protocol/frame.h"
#include "glove/ctl/ctl.h"
#include "ctl_internal.h"

/* The detach sequence on a terminal: Ctrl-] then 'd'. Ctrl-] Ctrl-] sends
 * one Ctrl-]; Ctrl-] followed by anything else sends both bytes. */
#define DETACH_PREFIX 0x1d
#define DETACH_KEY 'd'
/* How long to wait before offering stdin again after stdin.full, ms. */
#define STDIN_RETRY_MS 20
/* Decoded output held at once: the largest frame's base64, decoded. */
#define CTL_OUT_MAX (GLOVE_PROTOCOL_FRAME_MAX / 4 * 3)

struct attach {
        const struct ctl *ctl;
        const char *id;
        struct glove_protocol_client *cl;
        bool tty;           /* standard input is a terminal in raw mode */
        bool stdin_open;    /* still reading standard input */
        bool escape;        /* a Ctrl-] was typed, the next key decides */
        bool detaching;     /* detach sent; waiting for its answer */
        int64_t detach_id;
        uint8_t *pend;      /* standard input not yet accepted, CTL_STDIN_MAX bytes */
        size_t pend_len;
        int64_t inflight_id; /* write_stdin in flight (0: none); covers pend[0..inflight_len) */
        size_t inflight_len;
        uint64_t retry_at_ms;
        char *b64;          /* scratch for encoding */
        uint8_t *out;       /* scratch for decoding, CTL_OUT_MAX bytes */
};

static struct termios saved_termios;
static bool termios_saved;

static void restore_terminal(void) {
        if (termios_saved) {
                tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
                termios_saved = false;
        }
}

static int raw_terminal(void) {
        struct termios t;
        if (tcgetattr(STDIN_FILENO, &t) < 0)
                return -errno;
        saved_termios = t;
        termios_saved = true;
        cfmakeraw(&t);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &t) < 0) {
                int e = errno;
                restore_terminal();
                return -e;
        }
        return 0;
}

static int write_out(const uint8_t *p, size_t n) {
        while (n) {
                ssize_t w = write(STDOUT_FILENO, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN) {
                        struct pollfd pf = { .fd = STDOUT_FILENO, .events = POLLOUT };
                        poll(&pf, 1, -1);
                        continue;
                }
                if (w <= 0)
                        return -errno;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Writes a base64 string from gloved to standard output. */
static int write_b64(struct attach *a, const char *b64) {
        if (!b64)
                return 0;
        size_t len = strlen(b64);
        /* Decode in pieces of 64 KiB of text. */
        while (len) {
                size_t n = len > 65536 ? 65536 : len;
                ssize_t d = glove_base64_decode_into(b64, n, a->out);
                if (d < 0) {
                        fprintf(stderr, "glove: client.protocol: gloved sent output that is not base64\n");
                        return -EPROTO;
                }
                int r = write_out(a->out, (size_t)d);
                if (r < 0) {
                        fprintf(stderr, "glove: ctl.stdout: cannot write the output: %s\n", strerror(-r));
                        return r;
                }
                b64 += n;
                len -= n;
        }
        return 0;
}

static void send_resize(struct attach *a) {
        struct winsize ws;
        if (!a->tty || ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
                return;
        _cleanup_json_ json_t *p = json_pack("{s:s,s:i,s:i}", "session_id", a->id, "rows", ws.ws_row > 10000 ? 10000 : ws.ws_row,
                                             "cols", ws.ws_col > 10000 ? 10000 : ws.ws_col);
        struct glove_error err = { 0 };
        /* The answer is ignored: a refused resize changes nothing here. */
        if (p)
                glove_protocol_client_send(a->cl, "resize", p, NULL, &err);
}

static int send_detach(struct attach *a, struct glove_error *err) {
        _cleanup_json_ json_t *p = json_pack("{s:s}", "session_id", a->id);
        a->detaching = true;
        a->stdin_open = false;
        return glove_protocol_client_send(a->cl, "detach", p, &a->detach_id, err);
}

/* Appends typed bytes to pend, handling the detach sequence on a terminal.
 * Returns 1 when the detach sequence was typed. */
static int take_input(struct attach *a, const uint8_t *buf, size_t n) {
        for (size_t i = 0; i < n; i++) {
                uint8_t ch = buf[i];
                if (a->tty && a->escape) {
                        a->escape = false;
                        if (ch == DETACH_KEY)
                                return 1;
                        a->pend[a->pend_len++] = DETACH_PREFIX;
                        if (ch == DETACH_PREFIX)
                                continue;
                } else if (a->tty && ch == DETACH_PREFIX) {
                        a->escape = true;
                        continue;
                }
                a->pend[a->pend_len++] = ch;
        }
        return 0;
}

static int read_input(struct attach *a, struct glove_error *err) {
        /* Leave room for a held Ctrl-] that turns into a byte. */
        size_t room = CTL_STDIN_MAX - a->pend_len;
        if (room < 2)
                return 0;
        uint8_t buf[4096];
        size_t want = room - 1 < sizeof(buf) ? room - 1 : sizeof(buf);
        ssize_t n = read(STDIN_FILENO, buf, want);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        if (n <= 0) {
                /* End of input (or an unreadable one): stop reading, keep watching. */
                a->stdin_open = false;
                return 0;
        }
        if (take_input(a, buf, (size_t)n) == 1)
                return send_detach(a, err);
        return 0;
}

static int flush_input(struct attach *a, struct glove_error *err) {
        if (a->inflight_id || a->pend_len == 0 || a->detaching || glove_time_monotonic_ms() < a->retry_at_ms)
                return 0;
        a->b64[glove_base64_encode_into(a->pend, a->pend_len, a->b64)] = '\0';
        _cleanup_json_ json_t *p = json_pack("{s:s,s:s}", "session_id", a->id, "data_b64", a->b64);
        if (!p)
                return glove_error_set(err, ENOMEM, "client.no_memory", "out of memory");
        int r = glove_protocol_client_send(a->cl, "write_stdin", p, &a->inflight_id, err);
        if (r == 0)
                a->inflight_len = a->pend_len;
        return r;
}

/* The session's terminal receipt (receipts_page at receipt_sequence; of a
 * refinement receipt, the resource receipt in it), a new reference, or
 * NULL when it cannot be had. */
static json_t *fetch_receipt(const struct attach *a, const json_t *info) {
        json_t *seq = json_object_get(info, "receipt_sequence");
        if (!a->cl || !json_is_integer(seq) || json_integer_value(seq) < 1)
                return NULL;
        _cleanup_json_ json_t *p = json_pack("{s:I,s:I}", "after_sequence", json_integer_value(seq) - 1, "limit", 1);
        _cleanup_json_ json_t *res = NULL;
        struct glove_protocol_remote_error remote;
        struct glove_error err = { 0 };
        if (!p || glove_protocol_client_call(a->cl, "receipts_page", p, &res, &remote, &err) != 0) {
                json_decref(remote.data);
                return NULL;
        }
        json_t *e = json_object_get(json_array_get(json_object_get(res, "envelopes"), 0), "envelope");
        const char *sid = json_string_value(json_object_get(e, "session_id"));
        if (!sid || strcmp(sid, a->id) != 0)
                return NULL;
        json_t *r = json_object_get(e, "receipt");
        /* A refinement receipt (docs/refinement.md) holds the session's
         * resource receipt, with the exit code. */
        json_t *inner = json_object_get(r, "resource_receipt");
        if (json_is_object(inner))
                r = inner;
        return json_is_object(r) ? json_incref(r) : NULL;
}

/* The exit status for a session that ended, from its termination (and the
 * exit code of its terminal receipt when the notification has none); prints
 * the final status on stderr. */
static int ended_status(const struct attach *a, const json_t *info) {
        const json_t *t = json_object_get(info, "termination");
        const char *kind = json_string_value(json_object_get(t, "kind"));
        const json_t *sig = json_object_get(t, "signal");
        const json_t *code = json_object_get(info, "exit_code");
        if (!json_is_integer(code))
                code = json_object_get(t, "exit_code");
        _cleanup_json_ json_t *receipt = NULL;
        if (!json_is_integer(code) && !json_is_integer(sig) && (receipt = fetch_receipt(a, info)) != NULL)
                code = json_object_get(receipt, "exit_code");
        const char *state = json_string_value(json_object_get(info, "state"));
        int status;
        if (json_is_integer(sig) && json_integer_value(sig) > 0 && json_integer_value(sig) < 128)
                status = 128 + (int)json_integer_value(sig);
        else if (json_is_integer(code) && json_integer_value(code) >= 0 && json_integer_value(code) <= 255)
                status = (int)json_integer_value(code);
        else
                status = GLOVE_CTL_EXIT_FAILURE;
        char what[160] = "";
        const char *limit = json_string_value(json_object_get(t, "limit"));
        const char *tcode = json_string_value(json_object_get(t, "code"));
        if (limit)
                snprintf(what, sizeof(what), " (limit %s)", ctl_shown(limit));
        else if (tcode)
                snprintf(what, sizeof(what), " (%s)", ctl_shown(tcode));
        fprintf(stderr, "glove: session %s %s: %s%s, status %d\n", ctl_shown(a->id), ctl_shown(state ? state : "ended"),
                ctl_shown(kind ? kind : "unknown"), what, status);
        return status;
}

/* Handles one frame. Returns -1 to go on, else the exit status. */
static int handle_frame(struct attach *a, json_t *f) {
        if (a->ctl->json)
                ctl_print_json(f), fflush(stdout);
        json_t *id = json_object_get(f, "id");
        if (id) {
                int64_t n = json_integer_value(id);
                json_t *error = json_object_get(f, "error");
                if (a->inflight_id && n == a->inflight_id) {
                        const char *code = json_string_value(json_object_get(error, "code"));
                        size_t sent = a->inflight_len;
                        a->inflight_id = 0;
                        a->inflight_len = 0;
                        if (!error) {
                                json_int_t acc = json_integer_value(json_object_get(json_object_get(f, "result"), "accepted"));
                                size_t drop = acc < 0 ? 0 : (size_t)acc > sent ? sent : (size_t)acc;
                                memmove(a->pend, a->pend + drop, a->pend_len - drop);
                                a->pend_len -= drop;
                        } else if (code && strcmp(code, "stdin.full") == 0) {
                                a->retry_at_ms = glove_time_monotonic_ms() + STDIN_RETRY_MS;
                        } else {
                                /* session.not_running and the like: input has nowhere to go. */
                                a->pend_len = 0;
                                a->stdin_open = false;
                        }
                } else if (a->detaching && n == a->detach_id) {
                        fprintf(stderr, "glove: detached from session %s; it keeps running\n", ctl_shown(a->id));
                        return 0;
                }
                return -1;
        }
        const char *method = json_string_value(json_object_get(f, "method"));
        json_t *params = json_object_get(f, "params");
        const char *sid = json_string_value(json_object_get(params, "session_id"));
        if (!method || !sid || strcmp(sid, a->id) != 0)
                return -1;
        if (strcmp(method, "session_output") == 0) {
                if (!a->ctl->json && write_b64(a, json_string_value(json_object_get(params, "data_b64"))) < 0)
                        return GLOVE_CTL_EXIT_FAILURE;
                return -1;
        }
        if (strcmp(method, "session_output_gap") == 0) {
                /* gloved skipped output this client did not take in time;
                 * the session and the attachment go on. */
                json_int_t skipped = json_integer_value(json_object_get(params, "skipped_bytes"));
                if (!a->ctl->json)
                        fprintf(stderr,
                                "glove: %" JSON_INTEGER_FORMAT " bytes of output skipped: this client was too slow; "
                                "the session continues%s",
                                skipped, a->tty ? "\r\n" : "\n");
                return -1;
        }
        if (strcmp(method, "session_ended") == 0) {
                restore_terminal();
                return ended_status(a, params);
        }
        if (strcmp(method, "session_detached") == 0) {
                const char *reason = json_string_value(json_object_get(params, "reason"));
                restore_terminal();
                if (reason && strcmp(reason, "client_too_slow") == 0) {
                        fprintf(stderr, "glove: attach.client_too_slow: gloved dropped this attachment to %s "
                                        "(output was not read fast enough); attach again\n",
                                ctl_shown(a->id));
                        return GLOVE_CTL_EXIT_FAILURE;
                }
                fprintf(stderr, "glove: detached from session %s; it keeps running\n", ctl_shown(a->id));
                return 0;
        }
        return -1;
}

/*
 * The fast path for output: the session_output frames at the front of the
 * receive buffer whose bytes are exactly what gloved writes for this session
 * ({"method":"session_output","params":{"data_b64":"B64","session_id":"ID"}},
 * glove_protocol_frame_encode_output) are decoded from their bytes, without
 * JSON decoding, and written out; they are consumed together. Anything else
 * (another frame, another form, text that is not base64) stops it and goes
 * the general way. Returns -1 to go on, else the exit status.
 */
static int fast_output(struct attach *a) {
        static const char head[] = "{\"method\":\"session_output\",\"params\":{\"data_b64\":\"";
        static const char mid[] = "\",\"session_id\":\"";
        if (a->ctl->json)
                return -1;
        size_t idlen = strlen(a->id), off = 0;
        int status = -1;
        for (;;) {
                const uint8_t *p;
                size_t plen, flen;
                struct glove_error e = { 0 };
                if (glove_protocol_client_peek_raw(a->cl, off, &p, &plen, &flen, &e) != 1)
                        break;
                size_t fixed = sizeof(head) - 1 + sizeof(mid) - 1 + idlen + 3;
                if (plen < fixed || memcmp(p, head, sizeof(head) - 1) != 0)
                        break;
                const uint8_t *end = p + plen - (sizeof(mid) - 1 + idlen + 3);
                if (memcmp(end, mid, sizeof(mid) - 1) != 0 || memcmp(end + sizeof(mid) - 1, a->id, idlen) != 0 ||
                    memcmp(end + sizeof(mid) - 1 + idlen, "\"}}", 3) != 0)
                        break;
                const char *b64 = (const char *)p + sizeof(head) - 1;
                size_t len = (size_t)(end - (const uint8_t *)b64);
                if (len / 4 * 3 > CTL_OUT_MAX)
                        break;
                ssize_t d = glove_base64_decode_into(b64, len, a->out);
                if (d < 0)
                        break; /* the general way says what is wrong */
                off += flen;
                int r = write_out(a->out, (size_t)d);
                if (r < 0) {
                        fprintf(stderr, "glove: ctl.stdout: cannot write the output: %s\n", strerror(-r));
                        status = GLOVE_CTL_EXIT_FAILURE;
                        break;
                }
        }
        glove_protocol_client_consume_raw(a->cl, off);
        return status;
}

static int on_signal(struct attach *a, int sfd) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
                return -1;
        if (si.ssi_signo == SIGWINCH) {
                send_resize(a);
                return -1;
        }
        struct glove_error err = { 0 };
        send_detach(a, &err);
        restore_terminal();
        fprintf(stderr, "glove: %s received; detached from session %s\n", strsignal((int)si.ssi_signo),
                ctl_shown(a->id));
        return 128 + (int)si.ssi_signo;
}

/* The loop after a successful attach. Returns the exit status. */
static int loop(struct attach *a, int sfd) {
        struct glove_error err = { 0 };
        for (;;) {
                if (flush_input(a, &err) < 0)
                        break;
                json_t *f = NULL;
                for (;;) {
                        int fst = fast_output(a);
                        if (fst >= 0)
                                return fst;
                        if (!glove_protocol_client_buffered(a->cl))
                                break;
                        int r = glove_protocol_client_next(a->cl, 0, &f, &err);
                        if (r < 0)
                                goto fail;
                        int st = handle_frame(a, f);
                        json_decref(f);
                        if (st >= 0)
                                return st;
                }
                struct pollfd p[3] = {
                        { .fd = glove_protocol_client_fd(a->cl), .events = POLLIN },
                        { .fd = sfd, .events = POLLIN },
                        { .fd = a->stdin_open && !a->detaching && a->pend_len + 2 <= CTL_STDIN_MAX ? STDIN_FILENO : -1,
                          .events = POLLIN },
                };
                int timeout = -1;
                if (a->pend_len && !a->inflight_id) {
                        uint64_t now = glove_time_monotonic_ms();
                        timeout = a->retry_at_ms > now ? (int)(a->retry_at_ms - now) : 0;
                }
                if (poll(p, 3, timeout) < 0 && errno != EINTR) {
                        glove_error_set(&err, errno, "client.protocol", "poll: %s", strerror(errno));
                        break;
                }
                if (p[1].revents & POLLIN) {
                        int st = on_signal(a, sfd);
                        if (st >= 0)
                                return st;
                }
                if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
                        if (read_input(a, &err) < 0)
                                break;
                }
                /* What arrives is handled at the top of the loop (the
                 * output fast path first). */
                if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && glove_protocol_client_receive(a->cl, &err) < 0)
                        break;
        }
fail:
        restore_terminal();
        return ctl_failure(&err);
}

/* Prints the attach result's transcript; returns the exit status when the
 * session is not live (attached false), else -1. */
static int attached(struct attach *a, const json_t *res) {
        if (a->ctl->json) {
                ctl_print_json(res);
                fflush(stdout);
        } else if (write_b64(a, json_string_value(json_object_get(res, "transcript_b64"))) < 0) {
                return GLOVE_CTL_EXIT_FAILURE;
        }
        if (json_is_true(json_object_get(res, "attached")))
                return -1;
        restore_terminal();
        return ended_status(a, res);
}

static int run_attached(struct attach *a, int sfd) {
        struct glove_error err = { 0 };
        if (glove_protocol_client_open(a->ctl->runtime_dir, a->ctl->timeout_ms, &a->cl, &err) < 0)
                return ctl_failure(&err);
        _cleanup_json_ json_t *params = json_pack("{s:s}", "session_id", a->id);
        _cleanup_json_ json_t *res = NULL;
        struct glove_protocol_remote_error remote;
        int r = glove_protocol_client_call(a->cl, "attach", params, &res, &remote, &err);
        if (r < 0)
                return ctl_failure(&err);
        if (r == 1) {
                r = ctl_refused(&remote);
                json_decref(remote.data);
                return r;
        }
        if (a->tty) {
                if (raw_terminal() < 0)
                        a->tty = false;
                else
                        fprintf(stderr, "glove: attached to %s; Ctrl-] d detaches\r\n", ctl_shown(a->id));
        }
        r = attached(a, res);
        if (r >= 0)
                return r;
        send_resize(a);
        return loop(a, sfd);
}

int ctl_attach_run(const struct ctl *c, const char *session_id, bool no_stdin) {
        struct attach a = {
                .ctl = c,
                .id = session_id,
                .tty = !no_stdin && isatty(STDIN_FILENO),
                .stdin_open = !no_stdin,
        };
        _cleanup_free_ uint8_t *pend = a.pend = malloc(CTL_STDIN_MAX);
        _cleanup_free_ char *b64 = a.b64 = malloc(CTL_STDIN_MAX / 3 * 4 + 8);
        _cleanup_free_ uint8_t *out = a.out = malloc(CTL_OUT_MAX);
        if (!pend || !b64 || !out)
                return GLOVE_CTL_EXIT_FAILURE;
        sigset_t set, old;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigaddset(&set, SIGWINCH);
        sigset_t blocked = set;
        sigaddset(&blocked, SIGPIPE);
        if (sigprocmask(SIG_BLOCK, &blocked, &old) < 0) {
                fprintf(stderr, "glove: ctl.signals: cannot set up signal handling: %s\n", strerror(errno));
                return GLOVE_CTL_EXIT_FAILURE;
        }
        int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        int status;
        if (sfd < 0) {
                fprintf(stderr, "glove: ctl.signals: cannot set up signal handling: %s\n", strerror(errno));
                status = GLOVE_CTL_EXIT_FAILURE;
        } else {
                status = run_attached(&a, sfd);
                close(sfd);
        }
        restore_terminal();
        glove_protocol_client_close(a.cl);
        fflush(stdout);
        /* A SIGPIPE left pending by a closed standard output must not kill
         * the process once unblocked: take it first. */
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        struct timespec zero = { 0 };
        while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE) {
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        return status;
}

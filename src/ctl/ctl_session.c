/* SPDX-License-Identifier: Apache-2.0 */
/* glove ctl: the managed-session commands (see ctl.h, docs/control-protocol.md "glove ctl"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/number.h"
#include "glove/base/time.h"
#include "glove/protocol/changes.h"
#include "glove/protocol/client.h"
#include "glove/ctl/ctl.h"
#include "ctl_internal.h"

/* A command line "ID [POSITIONAL...] [--opt VALUE | --flag]..." split into
 * positionals and the values of the options allowed (NULL when absent;
 * flags get "1"). */
struct cmdline {
        const char *pos[4];
        int npos;
};

static int parse_cmdline(const struct ctl *c, int want_pos, const char *const *names, const bool *is_flag,
                         const char **values, size_t nnames, struct cmdline *out) {
        const char *what = c->cmd;
        for (int i = 0; i < c->nargs; i++) {
                const char *a = c->args[i];
                if (a[0] == '-' && a[1] == '-') {
                        size_t k = 0;
                        while (k < nnames && strcmp(a, names[k]) != 0)
                                k++;
                        if (k == nnames)
                                return ctl_usage_error("%s: unknown option \"%s\"", what, a);
                        if (values[k])
                                return ctl_usage_error("%s: %s given twice", what, a);
                        if (is_flag[k]) {
                                values[k] = "1";
                                continue;
                        }
                        if (i + 1 >= c->nargs)
                                return ctl_usage_error("%s: %s needs a value", what, a);
                        values[k] = c->args[++i];
                        continue;
                }
                if (out->npos >= want_pos)
                        return ctl_usage_error("%s: unexpected argument \"%s\"", what, a);
                out->pos[out->npos++] = a;
        }
        if (out->npos < want_pos)
                return ctl_usage_error("%s needs %d argument%s", what, want_pos, want_pos == 1 ? "" : "s");
        if (want_pos > 0 && out->pos[0][0] == '\0')
                return ctl_usage_error("%s: the session id is empty", what);
        return 0;
}

static int parse_range(const char *v, const char *name, uint64_t lo, uint64_t hi, json_int_t *out) {
        uint64_t n;
        if (glove_number_parse_u64(v, 0, lo, hi, &n) < 0)
                return ctl_usage_error("%s needs an integer in %llu..%llu (got \"%s\")", name, (unsigned long long)lo,
                                       (unsigned long long)hi, v);
        *out = (json_int_t)n;
        return 0;
}

/* Reads standard input to its end, at most CTL_STDIN_MAX bytes. */
static int read_stdin(uint8_t *buf, size_t *len) {
        size_t n = 0;
        for (;;) {
                uint8_t extra;
                uint8_t *dst = n < CTL_STDIN_MAX ? buf + n : &extra;
                size_t room = n < CTL_STDIN_MAX ? CTL_STDIN_MAX - n : 1;
                ssize_t r = read(STDIN_FILENO, dst, room);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        fprintf(stderr, "glove: ctl.stdin: cannot read standard input: %s\n", strerror(errno));
                        return GLOVE_CTL_EXIT_FAILURE;
                }
                if (r == 0)
                        break;
                if (dst == &extra) {
                        fprintf(stderr,
                                "glove: ctl.stdin_too_large: standard input holds more than %d bytes; "
                                "send it in parts\n",
                                CTL_STDIN_MAX);
                        return GLOVE_CTL_EXIT_FAILURE;
                }
                n += (size_t)r;
        }
        *len = n;
        return 0;
}

static const char *const signal_names[] = { "HUP", "INT", "QUIT", "TERM", "KILL", "USR1", "USR2", "CONT", "TSTP",
                                            "WINCH" };

/* Builds method and params of a session command other than attach. */
static int build(const struct ctl *c, const char **method, json_t **params) {
        struct cmdline cl = { 0 };
        const char *v[2] = { 0 };
        int r;
        if (strcmp(c->cmd, "sessions") == 0) {
                if ((r = parse_cmdline(c, 0, NULL, NULL, v, 0, &cl)))
                        return r;
                *method = "list_sessions";
                return 0;
        }
        if (strcmp(c->cmd, "start") == 0 || strcmp(c->cmd, "cleanup") == 0 || strcmp(c->cmd, "changes") == 0) {
                if ((r = parse_cmdline(c, 1, NULL, NULL, v, 0, &cl)))
                        return r;
                *method = c->cmd[0] == 's'   ? "start_session"
                          : c->cmd[1] == 'l' ? "cleanup_session"
                                             : "retained_changes";
                *params = json_pack("{s:s}", "session_id", cl.pos[0]);
                return 0;
        }
        if (strcmp(c->cmd, "guest-queue") == 0) {
                static const char *const names[] = { "--after", "--limit" };
                static const bool flags[] = { false, false };
                if ((r = parse_cmdline(c, 1, names, flags, v, 2, &cl)))
                        return r;
                char *end = NULL;
                unsigned long long after = 0, limit = 50;
                if (v[0] && ((errno = 0, after = strtoull(v[0], &end, 10)), errno || !end || *end || v[0][0] == '-'))
                        return ctl_usage_error("--after %s: expected a sequence number (0 or more)", v[0]);
                if (v[1] && ((errno = 0, limit = strtoull(v[1], &end, 10)), errno || !end || *end || limit < 1 ||
                             limit > 100))
                        return ctl_usage_error("--limit %s: expected a number from 1 to 100", v[1]);
                *method = "guest_queue";
                *params = json_pack("{s:s,s:I,s:I}", "session_id", cl.pos[0], "after_seq", (json_int_t)after, "limit",
                                    (json_int_t)limit);
                return 0;
        }
        if (strcmp(c->cmd, "stop") == 0) {
                static const char *const names[] = { "--grace" };
                static const bool flags[] = { false };
                json_int_t grace = 5000;
                if ((r = parse_cmdline(c, 1, names, flags, v, 1, &cl)))
                        return r;
                uint64_t g;
                if (v[0] && glove_duration_parse_ms(v[0], 1, 0, 600000, &g) < 0)
                        return ctl_usage_error("--grace %s: expected a duration from 0 to 10m; %s, or a bare number "
                                               "of milliseconds",
                                               v[0], GLOVE_DURATION_FORMS);
                if (v[0])
                        grace = (json_int_t)g;
                *method = "stop_session";
                *params = json_pack("{s:s,s:I}", "session_id", cl.pos[0], "grace_ms", grace);
                return 0;
        }
        if (strcmp(c->cmd, "resize") == 0) {
                json_int_t rows = 0, cols = 0;
                if ((r = parse_cmdline(c, 3, NULL, NULL, v, 0, &cl)))
                        return r;
                if ((r = parse_range(cl.pos[1], "ROWS", 1, 10000, &rows)) ||
                    (r = parse_range(cl.pos[2], "COLS", 1, 10000, &cols)))
                        return r;
                *method = "resize";
                *params = json_pack("{s:s,s:I,s:I}", "session_id", cl.pos[0], "rows", rows, "cols", cols);
                return 0;
        }
        if (strcmp(c->cmd, "signal") == 0) {
                if ((r = parse_cmdline(c, 2, NULL, NULL, v, 0, &cl)))
                        return r;
                const char *name = cl.pos[1];
                if (strncmp(name, "SIG", 3) == 0)
                        name += 3;
                size_t k = 0, n = sizeof(signal_names) / sizeof(signal_names[0]);
                while (k < n && strcmp(name, signal_names[k]) != 0)
                        k++;
                if (k == n)
                        return ctl_usage_error("signal: unknown signal \"%s\" (one of HUP INT QUIT TERM KILL USR1 "
                                               "USR2 CONT TSTP WINCH)",
                                               cl.pos[1]);
                char full[16];
                snprintf(full, sizeof(full), "SIG%s", name);
                *method = "signal";
                *params = json_pack("{s:s,s:s}", "session_id", cl.pos[0], "signal", full);
                return 0;
        }
        if (strcmp(c->cmd, "write-stdin") == 0) {
                static const char *const names[] = { "--data" };
                static const bool flags[] = { false };
                if ((r = parse_cmdline(c, 1, names, flags, v, 1, &cl)))
                        return r;
                _cleanup_free_ uint8_t *buf = malloc(CTL_STDIN_MAX);
                _cleanup_free_ char *b64 = malloc(CTL_STDIN_MAX / 3 * 4 + 8);
                if (!buf || !b64)
                        return GLOVE_CTL_EXIT_FAILURE;
                size_t len = 0;
                if (v[0]) {
                        len = strlen(v[0]);
                        if (len > CTL_STDIN_MAX) {
                                fprintf(stderr, "glove: ctl.stdin_too_large: --data holds %zu bytes, more than %d\n", len,
                                        CTL_STDIN_MAX);
                                return GLOVE_CTL_EXIT_FAILURE;
                        }
                        memcpy(buf, v[0], len);
                } else if ((r = read_stdin(buf, &len))) {
                        return r;
                }
                b64[glove_base64_encode_into(buf, len, b64)] = '\0';
                *method = "write_stdin";
                *params = json_pack("{s:s,s:s}", "session_id", cl.pos[0], "data_b64", b64);
                return 0;
        }
        return -1;
}

static void format_age(int64_t ms, char *buf, size_t size) {
        int64_t s = ms < 0 ? 0 : ms / 1000;
        if (s < 120)
                snprintf(buf, size, "%llds", (long long)s);
        else if (s < 7200)
                snprintf(buf, size, "%lldm", (long long)(s / 60));
        else if (s < 2 * 86400)
                snprintf(buf, size, "%lldh", (long long)(s / 3600));
        else
                snprintf(buf, size, "%lldd", (long long)(s / 86400));
}

static const char *str(const json_t *o, const char *k) {
        return ctl_shown(json_string_value(json_object_get(o, k)));
}

static void print_sessions(const json_t *r) {
        const json_t *list = json_object_get(r, "sessions");
        if (json_array_size(list) == 0) {
                printf("no sessions\n");
                return;
        }
        int64_t now = glove_time_realtime_ms();
        int w = 7;
        size_t i;
        json_t *s;
        json_array_foreach(list, i, s) {
                int n = (int)strlen(str(s, "session_id"));
                if (n > w)
                        w = n;
        }
        printf("%-*s  %-9s  %s\n", w, "SESSION", "STATE", "AGE");
        json_array_foreach(list, i, s) {
                char age[32];
                format_age(now - (int64_t)json_integer_value(json_object_get(s, "created_at_ms")), age, sizeof(age));
                printf("%-*s  %-9s  %s\n", w, str(s, "session_id"), str(s, "state"), age);
        }
}

static void print_list(const char *label, const json_t *a) {
        size_t i;
        json_t *v;
        printf("%s:", label);
        if (json_array_size(a) == 0)
                printf(" none");
        json_array_foreach(a, i, v) printf(" %s", ctl_shown(json_string_value(v)));
        printf("\n");
}

/* True when any grant of a retained_changes result is an error entry
 * (the result itself was a success): glove ctl changes then exits
 * GLOVE_CTL_EXIT_REFUSED, with or without --json, after printing it all. */
static bool changes_have_error(const json_t *r) {
        size_t gi;
        json_t *g;
        json_array_foreach(json_object_get(r, "grants"), gi, g) {
                if (json_object_get(g, "error"))
                        return true;
        }
        return false;
}

/* retained_changes: per grant, the baseline, how many of each kind, and
 * each changed path listed, changes to the source's own entries first
 * (gloved lists at most a bounded number in all: "truncated" says so, and
 * what was left out is counted by kind). */
static void print_changes(const json_t *r) {
        size_t gi, k;
        json_t *g;
        const char *const *lists = glove_changes_kinds;
        if (json_array_size(json_object_get(r, "grants")) == 0)
                printf("no retained grants\n");
        json_array_foreach(json_object_get(r, "grants"), gi, g) {
                const json_t *e = json_object_get(g, "error");
                if (e) {
                        printf("%s: %s: %s\n", str(g, "grant"), str(e, "code"), str(e, "message"));
                        continue;
                }
                const json_t *ch = json_object_get(g, "changes");
                const json_t *counts = json_object_get(ch, "counts");
                long long total = 0, listed = 0, count[4], shown_n[4];
                for (k = 0; k < 4; k++) {
                        count[k] = (long long)json_integer_value(json_object_get(counts, lists[k]));
                        shown_n[k] = (long long)json_array_size(json_object_get(ch, lists[k]));
                        total += count[k];
                        listed += shown_n[k];
                }
                printf("%s: %lld change%s, %lld unchanged: %lld removed, %lld modified, %lld mode_changed, %lld added "
                       "(stage %.16s, baseline %.16s)\n",
                       str(g, "grant"), total, total == 1 ? "" : "s",
                       (long long)json_integer_value(json_object_get(ch, "unchanged")), count[0], count[1], count[2],
                       count[3], str(g, "stage_manifest_digest"),
                       str(json_object_get(g, "baseline"), "stage_manifest_digest"));
                glove_changes_print_entries(stdout, ch);
                const json_t *refusal = json_object_get(g, "apply_refusal");
                if (json_is_object(refusal))
                        printf("  glove apply would refuse this: %s: %s\n", str(refusal, "code"),
                               str(refusal, "message"));
                if (listed < total) {
                        printf("  ... and %lld more not listed:", total - listed);
                        const char *sep = "";
                        for (k = 0; k < 4; k++)
                                if (count[k] > shown_n[k]) {
                                        printf("%s %lld %s", sep, count[k] - shown_n[k], lists[k]);
                                        sep = ",";
                                }
                        printf(" (glove apply --changes %s lists every one)\n", str(r, "session_id"));
                }
        }
}

/* guest_queue: one line per entry, then where the next page starts. */
static void print_queue(const json_t *r) {
        const json_t *entries = json_object_get(r, "entries");
        size_t i;
        const json_t *e;
        if (!json_array_size(entries))
                printf("no entries\n");
        json_array_foreach(entries, i, e) {
                printf("%lld %s %s %s key %s digest %.16s\n", (long long)json_integer_value(json_object_get(e, "seq")),
                       str(e, "state"), str(e, "schema_id"), str(e, "runtime_id"), str(e, "idempotency_key"),
                       str(e, "digest"));
        }
        const json_t *next = json_object_get(r, "next_after");
        if (json_is_integer(next))
                printf("more: --after %lld\n", (long long)json_integer_value(next));
}

static void print_human(const char *method, const json_t *params, const json_t *r) {
        const char *id = str(params, "session_id");
        if (strcmp(method, "list_sessions") == 0) {
                print_sessions(r);
        } else if (strcmp(method, "start_session") == 0 || strcmp(method, "stop_session") == 0) {
                printf("session %s: %s\n", json_object_get(r, "session_id") ? str(r, "session_id") : id, str(r, "state"));
        } else if (strcmp(method, "retained_changes") == 0) {
                print_changes(r);
        } else if (strcmp(method, "guest_queue") == 0) {
                print_queue(r);
        } else if (strcmp(method, "cleanup_session") == 0) {
                print_list("removed", json_object_get(r, "removed"));
                print_list("kept", json_object_get(r, "kept"));
        } else if (strcmp(method, "write_stdin") == 0) {
                printf("accepted %lld bytes\n", (long long)json_integer_value(json_object_get(r, "accepted")));
        } else if (strcmp(method, "resize") == 0) {
                long long rows = (long long)json_integer_value(json_object_get(params, "rows"));
                long long cols = (long long)json_integer_value(json_object_get(params, "cols"));
                printf("session %s: resized to %lld row%s, %lld column%s\n", id, rows, rows == 1 ? "" : "s", cols,
                       cols == 1 ? "" : "s");
        } else if (strcmp(method, "signal") == 0) {
                printf("session %s: sent %s\n", id, str(params, "signal"));
        }
}

int ctl_session_run(const struct ctl *c) {
        if (strcmp(c->cmd, "attach") == 0) {
                static const char *const names[] = { "--no-stdin" };
                static const bool flags[] = { true };
                const char *v[1] = { 0 };
                struct cmdline cl = { 0 };
                int r = parse_cmdline(c, 1, names, flags, v, 1, &cl);
                if (r)
                        return r;
                return ctl_attach_run(c, cl.pos[0], v[0] != NULL);
        }
        const char *method = NULL;
        _cleanup_json_ json_t *params = NULL;
        int r = build(c, &method, &params);
        if (r)
                return r;
        if (!params && (params = json_object()) == NULL)
                return GLOVE_CTL_EXIT_FAILURE;
        struct glove_error err = { 0 };
        _cleanup_client_ struct glove_protocol_client *cl = NULL;
        if (glove_protocol_client_open(c->runtime_dir, c->timeout_ms, &cl, &err) < 0)
                return ctl_failure(&err);
        _cleanup_json_ json_t *result = NULL;
        struct glove_protocol_remote_error remote;
        /* write_stdin: a session still preparing or starting, or a full
         * input queue, answers stdin.full with nothing taken; offer the
         * bytes again every 20 ms until the timeout. */
        uint64_t until = glove_time_monotonic_ms() + c->timeout_ms;
        for (;;) {
                r = glove_protocol_client_call(cl, method, params, &result, &remote, &err);
                if (r != 1 || strcmp(method, "write_stdin") != 0 || strcmp(remote.code, "stdin.full") != 0 ||
                    glove_time_monotonic_ms() + 20 >= until)
                        break;
                json_decref(remote.data);
                (void)nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
        }
        if (r < 0)
                return ctl_failure(&err);
        if (r == 1) {
                r = ctl_refused(&remote);
                json_decref(remote.data);
                return r;
        }
        if (c->json)
                r = ctl_print_json(result);
        else
                print_human(method, params, result);
        if (r == 0 && strcmp(method, "retained_changes") == 0 && changes_have_error(result))
                r = GLOVE_CTL_EXIT_REFUSED;
        return fflush(stdout) == 0 ? r : GLOVE_CTL_EXIT_FAILURE;
}

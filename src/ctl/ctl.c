/* SPDX-License-Identifier: Apache-2.0 */
/* glove ctl (see ctl.h). */
#include "glove/ctl/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/number.h"
#include "glove/base/cleanup.h"
#include "glove/base/shown.h"
#include "glove/base/fd.h"
#include "glove/protocol/client.h"
#include "glove/store/store.h"
#include "ctl_internal.h"

#define usage_error ctl_usage_error
#define shown ctl_shown

static const char usage_text[] =
        "Usage: glove ctl [--runtime-dir DIR] [--json] [--timeout-ms TIME] COMMAND\n"
        "\n"
        "Talk to the local gloved control service.\n"
        "\n"
        "Commands:\n"
        "  capabilities                       advertised methods and schema versions, and why\n"
        "                                     lifecycle methods are not advertised when they are not\n"
        "  plan --template ID [--profile ID] [--egress ID] [--tool-policy ID]\n"
        "       [--expires-in DURATION] [--policy FILE]\n"
        "                                     print a canonical plan made from the session policy file\n"
        "                                     (default $XDG_CONFIG_HOME/glove/session-policy.json; expiry\n"
        "                                     60s; no gloved, no secret, no grants)\n"
        "\n"
        "TIME and DURATION are a whole number with a unit ms, s, m or h (500ms, 30s, 5m, 2h);\n"
        "a bare number is milliseconds for TIME, seconds for DURATION.\n"
        "  validate-plan FILE                 check a canonical plan against the session policy\n"
        "  create-session --session-id ID --idempotency-key KEY\n"
        "                 --controller-digest HEX --plan FILE\n"
        "                                     validate and durably store a session\n"
        "  session-status ID                  state, digests and transition history\n"
        "  receipts [--after N] [--limit N]   page through the receipt journal\n"
        "  receipts-ack --sequence N --head-mac HEX\n"
        "                                     acknowledge delivery up to the exact head\n"
        "  start ID                           start a created session (answers its state if started)\n"
        "  attach ID [--no-stdin]             show the transcript and live output; type into the session\n"
        "                                     (on a terminal: raw mode, Ctrl-] d detaches, Ctrl-] Ctrl-]\n"
        "                                     sends Ctrl-]); exits with the session's status\n"
        "  write-stdin ID [--data TEXT]       send TEXT, or standard input (at most 65536 bytes)\n"
        "  resize ID ROWS COLS                set the session's terminal size (1..10000 each)\n"
        "  signal ID NAME                     send a signal: HUP INT QUIT TERM KILL USR1 USR2 CONT\n"
        "                                     TSTP WINCH (with or without SIG)\n"
        "  stop ID [--grace TIME]             SIGTERM, then SIGKILL after TIME (0..10m, default 5s)\n"
        "  cleanup ID                         remove what an ended session's cleanup policies say\n"
        "  changes ID                         what the agent changed in each retained stage of an\n"
        "                                     ended session (read-only; apply with glove apply)\n"
        "  guest-queue ID [--after N] [--limit N]  a page of the session's guest-channel\n"
        "                                     admission queue (docs/guest-channels.md)\n"
        "  sessions                           every session with its state and age\n"
        "  exposures                          the redacted catalog of path exposures (glove init):\n"
        "                                     id, generation, state, expiry, modes, runtimes, label\n"
        "\n"
        "Options:\n"
        "  --runtime-dir DIR   where gloved.sock and bootstrap-secret are (default $XDG_RUNTIME_DIR/glove)\n"
        "  --json              print the raw result as one line of JSON (attach: the attach result,\n"
        "                      then every notification gloved pushes, one line each)\n"
        "  --timeout-ms TIME   give up after TIME per call (default 30s)\n"
        "  -h, --help          show this help\n"
        "\n"
        "Exit status: 0 success, 1 refused by gloved, 125 gloved unreachable or usage error;\n"
        "attach: the session's exit status (128+N for signal N) when it ended, 0 on detach.\n";

int ctl_usage_error(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "glove: usage.ctl: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "; see glove ctl --help\n");
        va_end(ap);
        return GLOVE_CTL_EXIT_FAILURE;
}

/* A string from gloved as it may reach a terminal, escaped by glove_shown
 * (glove/base/shown.h: C0, DEL, C1 and bidirectional controls), so a peer
 * cannot send escape sequences to the operator's terminal. Returns one of 8
 * rotating static buffers (so up to 8 may appear in one printf); a string
 * longer than fits is cut and ends in "...". */
const char *ctl_shown(const char *s) {
        static char bufs[8][1024];
        static unsigned next;
        return glove_shown(s, bufs[next++ % 8], sizeof(bufs[0]));
}

int ctl_failure(const struct glove_error *e) {
        fprintf(stderr, "glove: %s: %s\n", e->code, shown(e->message));
        return GLOVE_CTL_EXIT_FAILURE;
}

int ctl_refused(const struct glove_protocol_remote_error *r) {
        /* A method gloved has but was started without: what to do. */
        const char *reason = json_string_value(json_object_get(r->data, "reason"));
        const char *hint = "";
        if (strcmp(r->code, "method_not_found") == 0 && reason) {
                if (strcmp(reason, "option_missing") == 0)
                        hint = "; what to do: restart gloved with every option (glove doctor prints the "
                               "command line; glove daemon install writes it into the user unit)";
                else if (strcmp(reason, "runtime_not_operational") == 0)
                        hint = "; what to do: run gloved with delegated cgroups (glove daemon install: its "
                               "unit delegates them; glove doctor's cgroup_delegation item says more)";
                else if (strcmp(reason, "remote_construction_only") == 0)
                        hint = "; what to do: nothing launches through the remote backend (it is construction "
                               "evidence only, docs/remote-backend.md); run local managed sessions with a gloved "
                               "started with --materialization-root instead of --remote-backend";
        }
        fprintf(stderr, "glove: %s: %s%s\n", shown(r->code), shown(r->message), hint);
        return GLOVE_CTL_EXIT_REFUSED;
}

int ctl_print_json(const json_t *v) {
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        printf("%s\n", s ? s : "{}");
        return s ? 0 : GLOVE_CTL_EXIT_FAILURE;
}

/* Reads a plan file (at most GLOVE_STORE_PLAN_MAX bytes after one
 * trailing newline is dropped) into a JSON string. */
static int read_plan(const char *path, json_t **out) {
        /* One byte over the limit may be the trailing newline. */
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = glove_file_read_bounded(AT_FDCWD, path, 0, GLOVE_STORE_PLAN_MAX + 1, &buf, &len, NULL);
        if (r == -EFBIG) {
                fprintf(stderr, "glove: ctl.plan_file: %s is larger than %u bytes\n", path, GLOVE_STORE_PLAN_MAX);
                return GLOVE_CTL_EXIT_FAILURE;
        }
        if (r < 0) {
                fprintf(stderr, "glove: ctl.plan_file: %s: %s\n", path, strerror(-r));
                return GLOVE_CTL_EXIT_FAILURE;
        }
        if (len && buf[len - 1] == '\n')
                len--;
        if (len > GLOVE_STORE_PLAN_MAX) {
                fprintf(stderr, "glove: ctl.plan_file: %s is larger than %u bytes\n", path, GLOVE_STORE_PLAN_MAX);
                return GLOVE_CTL_EXIT_FAILURE;
        }
        *out = json_stringn(buf, len);
        if (!*out) {
                fprintf(stderr, "glove: ctl.plan_file: %s is not UTF-8 text\n", path);
                return GLOVE_CTL_EXIT_FAILURE;
        }
        return 0;
}

static const char *str(const json_t *o, const char *k) {
        return shown(json_string_value(json_object_get(o, k)));
}

static long long num(const json_t *o, const char *k) {
        return (long long)json_integer_value(json_object_get(o, k));
}

static void print_list(const char *label, const json_t *a) {
        size_t i;
        json_t *v;
        printf("%s:", label);
        if (json_array_size(a) == 0)
                printf(" none");
        json_array_foreach(a, i, v) {
                if (json_is_string(v))
                        printf(" %s", shown(json_string_value(v)));
                else
                        printf(" %lld", (long long)json_integer_value(v));
        }
        printf("\n");
}

static void print_capabilities(const json_t *r) {
        printf("service: %s %s (protocol %lld)\n", str(r, "service"), str(r, "version"), num(r, "protocol_version"));
        print_list("methods", json_object_get(r, "methods"));
        print_list("plan schema versions", json_object_get(r, "plan_schema_versions"));
        printf("session store schema version: %lld\n", num(r, "session_store_schema_version"));
        printf("receipt schema version: %lld\n", num(r, "receipt_schema_version"));
        json_t *rev = json_object_get(r, "policy_revision");
        if (json_is_integer(rev))
                printf("policy revision: %lld\n", (long long)json_integer_value(rev));
        else
                printf("policy revision: none\n");
        const char *why = json_string_value(json_object_get(r, "lifecycle_reason"));
        if (json_is_true(json_object_get(r, "lifecycle_operational")))
                printf("lifecycle operational: yes\n");
        else if (why)
                printf("lifecycle operational: no (%s)\n", shown(why));
        else
                printf("lifecycle operational: no\n");
        print_list("managed runtime ids", json_object_get(r, "managed_runtime_ids"));
        printf("path exposure schema version: %lld\n", num(r, "path_exposure_schema_version"));
        print_list("owner methods", json_object_get(r, "owner_methods"));
        /* A construction diagnostic, never launch readiness
         * (docs/remote-backend.md, "The capabilities row"). */
        const json_t *rb = json_object_get(r, "remote_backend");
        if (json_is_object(rb)) {
                printf("remote backend: %s, construction only (lifecycle operational: %s)\n", str(rb, "construction"),
                       json_is_true(json_object_get(rb, "lifecycle_operational")) ? "yes" : "no");
                printf("  container identity: %s\n", str(rb, "container_identity"));
                printf("  container image digest: %s\n", str(rb, "container_image_digest"));
                printf("  host key algorithm: %s\n", str(rb, "host_key_algorithm"));
        } else {
                printf("remote backend: none\n");
        }
}

/* The members named key of the objects in a (or the strings of a when
 * key is NULL) joined by commas into buf, "-" when there are none. */
static const char *joined(const json_t *a, const char *key, char *buf, size_t size) {
        size_t used = 0, i;
        json_t *v;
        buf[0] = '\0';
        json_array_foreach(a, i, v) {
                const char *t = json_string_value(key ? json_object_get(v, key) : v);
                int n = snprintf(buf + used, size - used, "%s%s", used ? "," : "", t ? t : "?");
                if (n < 0 || (size_t)n >= size - used)
                        break;
                used += (size_t)n;
        }
        return used ? buf : "-";
}

/* exposure_catalog as a table; times in UTC. */
static void print_exposures(const json_t *r) {
        const json_t *list = json_object_get(r, "exposures");
        if (json_array_size(list) == 0) {
                printf("no exposures\n");
                return;
        }
        printf("%-36s  %-4s  %-7s  %-20s  %-32s  %-20s  %s\n", "ID", "GEN", "STATE", "EXPIRES", "MODES", "RUNTIMES",
               "LABEL");
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
                char when[32] = "?", modes[512], runtimes[512];
                time_t t = (time_t)(json_integer_value(json_object_get(e, "expires_at_ms")) / 1000);
                struct tm tm;
                if (gmtime_r(&t, &tm))
                        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
                /* Each through shown(): gloved's strings reach a terminal. */
                printf("%-36s  %-4lld  %-7s  %-20s  %-32s  %-20s  %s\n", str(e, "exposure_id"), num(e, "generation"),
                       str(e, "state"), when, shown(joined(json_object_get(e, "modes"), "access", modes, sizeof(modes))),
                       shown(joined(json_object_get(e, "runtime_template_ids"), NULL, runtimes, sizeof(runtimes))),
                       str(e, "label"));
        }
}

static void print_session(const json_t *r) {
        printf("session %s: %s\n", str(r, "session_id"), str(r, "state"));
        printf("  plan_content_digest: %s\n", str(r, "plan_content_digest"));
        printf("  controller_plan_digest: %s\n", str(r, "controller_plan_digest"));
        printf("  created_at_ms: %lld\n", num(r, "created_at_ms"));
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(r, "history"), i, t) {
                const char *reason = str(t, "reason");
                printf("  %s -> %s at %lld%s%s%s\n", str(t, "from"), str(t, "to"), num(t, "at_ms"),
                       *reason ? " (" : "", reason, *reason ? ")" : "");
        }
}

static int print_verdict(const json_t *r) {
        if (json_is_true(json_object_get(r, "valid"))) {
                printf("valid plan: plan_content_digest %s (policy revision %lld)\n", str(r, "plan_content_digest"),
                       num(r, "policy_revision"));
                return 0;
        }
        size_t i;
        json_t *reason;
        json_array_foreach(json_object_get(r, "reasons"), i, reason)
                printf("reason %s at %s\n", str(reason, "code"), str(reason, "path"));
        long long total = num(r, "reasons_total");
        fprintf(stderr, "glove: plan.invalid: the plan does not satisfy the session policy (%lld reason%s)\n", total,
                total == 1 ? "" : "s");
        return GLOVE_CTL_EXIT_REFUSED;
}

static void print_receipts(const json_t *r) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(r, "envelopes"), i, e) {
                json_t *env = json_object_get(e, "envelope");
                printf("%lld %s %s %s\n", num(e, "sequence"), str(env, "kind"), str(env, "session_id"), str(e, "mac"));
        }
        json_t *head = json_object_get(r, "head");
        printf("head: %lld %s\n", num(head, "sequence"), str(head, "mac"));
        printf("acknowledged: %lld\n", num(r, "acknowledged_sequence"));
        if (json_is_true(json_object_get(r, "more")))
                printf("more: yes\n");
        json_t *rec = json_object_get(r, "recovery");
        if (num(rec, "torn_bytes"))
                printf("recovered: cut %lld bytes of an incomplete record at offset %lld\n", num(rec, "torn_bytes"),
                       num(rec, "torn_offset"));
}

/* Parses "--name VALUE" pairs of a command into values (same order as names). */
static int command_options(const struct ctl *c, const char *const names[], const char *values[], size_t n) {
        for (int i = 0; i < c->nargs; i++) {
                size_t k = 0;
                while (k < n && strcmp(c->args[i], names[k]) != 0)
                        k++;
                if (k == n)
                        return usage_error("unexpected argument \"%s\"", c->args[i]);
                if (i + 1 >= c->nargs)
                        return usage_error("%s needs a value", names[k]);
                values[k] = c->args[++i];
        }
        return 0;
}

static int parse_count(const char *v, const char *name, json_int_t max, json_int_t *out) {
        uint64_t n;
        if (max < 0 || glove_number_parse_u64(v, 0, 0, (uint64_t)max, &n) < 0)
                return usage_error("%s needs an integer from 0 to %lld", name, (long long)max);
        *out = (json_int_t)n;
        return 0;
}

/* Builds method and params for the command; returns an exit status on a
 * usage error, else 0. */
static int build(const struct ctl *c, const char **method, json_t **params) {
        if (strcmp(c->cmd, "capabilities") == 0) {
                if (c->nargs)
                        return usage_error("capabilities takes no arguments (got \"%s\")", c->args[0]);
                *method = "capabilities";
                return 0;
        }
        if (strcmp(c->cmd, "validate-plan") == 0 || strcmp(c->cmd, "session-status") == 0) {
                if (c->nargs != 1)
                        return usage_error("%s takes exactly one argument", c->cmd);
                if (c->cmd[0] == 's') {
                        *method = "session_status";
                        *params = json_pack("{s:s}", "session_id", c->args[0]);
                        return 0;
                }
                json_t *plan = NULL;
                int r = read_plan(c->args[0], &plan);
                *method = "validate_plan";
                *params = r ? NULL : json_pack("{s:o}", "plan", plan);
                return r;
        }
        if (strcmp(c->cmd, "create-session") == 0) {
                static const char *const names[] = { "--session-id", "--idempotency-key", "--controller-digest",
                                                     "--plan" };
                const char *v[4] = { 0 };
                int r = command_options(c, names, v, 4);
                for (size_t k = 0; r == 0 && k < 4; k++)
                        if (!v[k])
                                r = usage_error("create-session needs %s", names[k]);
                json_t *plan = NULL;
                if (r == 0)
                        r = read_plan(v[3], &plan);
                *method = "create_session";
                *params = r ? NULL : json_pack("{s:s,s:s,s:s,s:o}", "session_id", v[0], "idempotency_key", v[1],
                                               "controller_plan_digest", v[2], "plan", plan);
                return r;
        }
        if (strcmp(c->cmd, "exposures") == 0) {
                if (c->nargs)
                        return usage_error("exposures takes no arguments (got \"%s\")", c->args[0]);
                *method = "exposure_catalog";
                return 0;
        }
        if (strcmp(c->cmd, "receipts") == 0) {
                static const char *const names[] = { "--after", "--limit" };
                const char *v[2] = { "0", "64" };
                json_int_t after = 0, limit = 0;
                int r = command_options(c, names, v, 2);
                if (r == 0)
                        r = parse_count(v[0], "--after", INT64_MAX, &after);
                if (r == 0)
                        r = parse_count(v[1], "--limit", 256, &limit);
                *method = "receipts_page";
                *params = r ? NULL : json_pack("{s:I,s:I}", "after_sequence", after, "limit", limit);
                return r;
        }
        if (strcmp(c->cmd, "receipts-ack") == 0) {
                static const char *const names[] = { "--sequence", "--head-mac" };
                const char *v[2] = { 0 };
                json_int_t seq = 0;
                int r = command_options(c, names, v, 2);
                if (r == 0 && (!v[0] || !v[1]))
                        r = usage_error("receipts-ack needs --sequence and --head-mac");
                if (r == 0)
                        r = parse_count(v[0], "--sequence", INT64_MAX, &seq);
                *method = "receipts_ack";
                *params = r ? NULL : json_pack("{s:I,s:s}", "sequence", seq, "head_mac", v[1]);
                return r;
        }
        return usage_error("unknown command \"%s\"", c->cmd);
}

static int run(const struct ctl *c) {
        int handled = ctl_plan_run(c);
        if (handled >= 0)
                return handled;
        handled = ctl_session_run(c);
        if (handled >= 0)
                return handled;
        const char *method = NULL;
        _cleanup_json_ json_t *params = NULL;
        int r = build(c, &method, &params);
        if (r)
                return r;
        struct glove_error err = { 0 };
        _cleanup_client_ struct glove_protocol_client *cl = NULL;
        if (glove_protocol_client_open(c->runtime_dir, c->timeout_ms, &cl, &err) < 0)
                return ctl_failure(&err);
        _cleanup_json_ json_t *result = NULL;
        struct glove_protocol_remote_error remote;
        r = glove_protocol_client_call(cl, method, params, &result, &remote, &err);
        if (r < 0)
                return ctl_failure(&err);
        if (r == 1) {
                r = ctl_refused(&remote);
                if (remote.data && strcmp(remote.code, "plan.invalid") == 0) {
                        size_t i;
                        json_t *reason;
                        json_array_foreach(json_object_get(remote.data, "reasons"), i, reason)
                                printf("reason %s at %s\n", str(reason, "code"), str(reason, "path"));
                }
                json_decref(remote.data);
                return r;
        }
        int status = 0;
        if (strcmp(method, "validate_plan") == 0 && !json_is_true(json_object_get(result, "valid")))
                status = GLOVE_CTL_EXIT_REFUSED;
        if (c->json) {
                _cleanup_free_ char *s = json_dumps(result, JSON_COMPACT | JSON_SORT_KEYS);
                printf("%s\n", s ? s : "{}");
                if (status)
                        fprintf(stderr, "glove: plan.invalid: the plan does not satisfy the session policy\n");
        } else if (strcmp(method, "capabilities") == 0) {
                print_capabilities(result);
        } else if (strcmp(method, "validate_plan") == 0) {
                status = print_verdict(result);
        } else if (strcmp(method, "create_session") == 0 || strcmp(method, "session_status") == 0) {
                print_session(result);
        } else if (strcmp(method, "receipts_page") == 0) {
                print_receipts(result);
        } else if (strcmp(method, "exposure_catalog") == 0) {
                print_exposures(result);
        } else {
                printf("acknowledged up to %lld\n", num(result, "acknowledged_sequence"));
        }
        return fflush(stdout) == 0 ? status : GLOVE_CTL_EXIT_FAILURE;
}

int glove_ctl_main(int argc, char **argv) {
        struct ctl c = { .timeout_ms = GLOVE_CTL_TIMEOUT_MS };
        _cleanup_free_ char *default_dir = NULL;
        int i = 1;
        /* --json is accepted anywhere; other global options before COMMAND. */
        char **rest = calloc((size_t)argc + 1, sizeof(char *));
        _cleanup_free_ char **rest_owner = rest;
        if (!rest)
                return GLOVE_CTL_EXIT_FAILURE;
        for (; i < argc && argv[i][0] == '-'; i++) {
                const char *a = argv[i];
                if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                        fputs(usage_text, stdout);
                        return 0;
                } else if (strcmp(a, "--json") == 0) {
                        c.json = true;
                } else if (strcmp(a, "--runtime-dir") == 0 && i + 1 < argc) {
                        c.runtime_dir = argv[++i];
                } else if (strcmp(a, "--timeout-ms") == 0 && i + 1 < argc) {
                        const char *t = argv[++i];
                        if (glove_duration_parse_ms(t, 1, 1, 3600000, &c.timeout_ms) < 0)
                                return usage_error("--timeout-ms %s: expected a duration from 1ms to 1h; %s, or a bare "
                                                   "number of milliseconds",
                                                   t, GLOVE_DURATION_FORMS);
                } else {
                        return usage_error("unknown option \"%s\"", a);
                }
        }
        if (i >= argc)
                return usage_error("missing COMMAND");
        c.cmd = argv[i++];
        for (; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        c.json = true;
                else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                        fputs(usage_text, stdout);
                        return 0;
                } else
                        rest[c.nargs++] = argv[i];
        }
        c.args = rest;
        if (!c.runtime_dir && strcmp(c.cmd, "plan") != 0) { /* plan talks to no gloved */
                const char *x = getenv("XDG_RUNTIME_DIR");
                if (!x || x[0] != '/' || asprintf(&default_dir, "%s/glove", x) < 0) {
                        default_dir = NULL;
                        return usage_error("$XDG_RUNTIME_DIR is not set; pass --runtime-dir");
                }
                c.runtime_dir = default_dir;
        }
        return run(&c);
}

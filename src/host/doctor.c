/* SPDX-License-Identifier: Apache-2.0 */
/* glove doctor (include/glove/host/doctor.h, docs/host.md). */
#include "glove/host/doctor.h"
#include "glove/host/exposures.h"
#include "glove/supervisor/exposure.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "doctor_internal.h"
#include "shown.h"
#include "glove/base/cleanup.h"
#include "glove/protocol/client.h"
#include "glove/store/dirs.h"
#include "glove/store/receipts.h"
#include "glove/host/config.h"
#include "glove/host/daemon.h"
#include "glove/host/dirs.h"
#include "glove/supervisor/policy.h"

#define EXIT_NOT_READY 1
#define EXIT_USAGE 125
#define MAX_ITEMS 16
/* How long doctor waits for gloved, per call. */
#define GLOVED_TIMEOUT_MS 3000

static const char usage_text[] =
        "Usage: glove doctor [--json]\n"
        "\n"
        "Checks this host for this user and says, item by item, ok / missing / wrong,\n"
        "and what to do. Nothing is changed. Items (docs/host.md explains each):\n"
        "  user_namespaces    the sandbox's namespaces can be created and mapped  (needed)\n"
        "  seccomp            a seccomp filter can be installed                   (needed)\n"
        "  cgroup_delegation  run cgroups with memory/pids/cpu limits can be made (needed)\n"
        "  cgroup_version     which cgroup hierarchies are mounted and carry the controllers\n"
        "  openat2            descriptor-relative path resolution (else a slower walk)\n"
        "  landlock           the Landlock ABI (4+: TCP confinement of networked runs)\n"
        "  retained_images    mkfs.ext4 ownership, /dev/loop-control, mount capability\n"
        "  config_dir, runtime_dir, state_dir   owner-only 0700 directories (glove setup)\n"
        "  receipt_key        STATE/receipt.key: 0600, 32 bytes\n"
        "  session_policy     CONFIG/session-policy.json loads with gloved's loader,\n"
        "                     adapter_command_digest of every launch template verified\n"
        "  path_roots         CONFIG/config.json is valid\n"
        "  exposure_policy    CONFIG/exposure-policy.json (glove setup, path roots) loads\n"
        "                     with gloved's loader; missing when no root was approved\n"
        "  gloved             reachable at RUNTIME/gloved.sock, what it advertises, and\n"
        "                     whether it can run managed sessions (else the command\n"
        "                     line it should run with, the user unit's ExecStart=)\n"
        "\n"
        "Options:\n"
        "  --json      print {\"items\":[{\"detail\",\"fix\",\"item\",\"required\",\"status\"}],\n"
        "              \"ready\":BOOL,\"uid\":N,\"verdict\":\"ready\"|\"degraded\"|\"not_ready\"}\n"
        "              on stdout (fix null when ok; ready: every needed item ok)\n"
        "  -h, --help  show this help\n"
        "\n"
        "The last line is the verdict for a default glove exec: ready (every needed\n"
        "item ok), degraded (it runs, with a limits.degraded warning: cgroups are not\n"
        "delegated to you, so memory and pids are not limited and CPU time only per\n"
        "process) or not ready (it fails).\n"
        "\n"
        "Exit status: 0 ready or degraded, 1 not ready, 125 usage error.\n";

static const char *const status_words[] = { "ok", "missing", "wrong" };

struct doctor {
        struct glove_host_doctor_item items[MAX_ITEMS];
        size_t n;
        uid_t uid;
        struct glove_host_dirs dirs;
        bool have_dirs;
        int config_fd, state_fd;
        bool runtime_ok;
        int64_t policy_revision; /* -1 when the policy did not load */
};

static struct glove_host_doctor_item *next_item(struct doctor *d, const char *name, bool required) {
        struct glove_host_doctor_item *it = &d->items[d->n++];
        memset(it, 0, sizeof(*it));
        it->name = name;
        it->required = required;
        return it;
}

static void check_dir(struct doctor *d, const char *name, const char *path, int *fd_out) {
        struct glove_host_doctor_item *it = next_item(d, name, false);
        if (!d->have_dirs || !path[0]) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                                strcmp(name, "runtime_dir") == 0
                                        ? "log in through a session that sets XDG_RUNTIME_DIR (pam_systemd), or set it "
                                          "to an owner-only directory of yours, then run glove setup"
                                        : "set HOME (or the XDG variable) to an absolute path, then run glove setup",
                                "%s has no default: %s", name,
                                strcmp(name, "runtime_dir") == 0 ? "$XDG_RUNTIME_DIR is not set" : "$HOME is not set");
                return;
        }
        struct glove_error err = { 0 };
        int fd = -1;
        int r = glove_store_dir_open_private(path, d->uid, false, &fd, &err);
        if (r == 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL, "%s: a directory of uid %u, mode 0700", path,
                                (unsigned)d->uid);
                if (fd_out)
                        *fd_out = fd;
                else
                        close(fd);
                return;
        }
        if (r == -ENOENT)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "run glove setup", "%s does not exist", path);
        else {
                char fix[GLOVE_HOST_DOCTOR_TEXT_MAX];
                doctor_text(fix, sizeof(fix),
                         "find out why it differs, then fix it yourself (chown %u %s; chmod 0700 %s) or move it "
                         "away and run glove setup; Glove never changes it", (unsigned)d->uid, path, path);
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG, fix, "%s: %s", err.code, err.message);
        }
}

static void check_key(struct doctor *d) {
        struct glove_host_doctor_item *it = next_item(d, "receipt_key", false);
        if (d->state_fd < 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "fix state_dir first, then run glove setup",
                                "the state directory is not usable");
                return;
        }
        struct glove_error err = { 0 };
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", d->dirs.state, GLOVE_STORE_RECEIPTS_KEY_FILE);
        struct stat st;
        bool absent = fstatat(d->state_fd, GLOVE_STORE_RECEIPTS_KEY_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
                      errno == ENOENT;
        int r = glove_store_receipts_key_ensure(d->state_fd, d->uid, false, NULL, &err);
        if (r == 0)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL, "%s: 32 bytes, mode 0600, one link", path);
        else if (absent && fstatat(d->state_fd, GLOVE_STORE_RECEIPTS_JOURNAL_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "run glove setup (or start gloved once)",
                                "%s does not exist", path);
        else
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG,
                                "gloved refuses to start with this key: fix it yourself (chmod 0600), or restore it; "
                                "Glove never changes it",
                                "%s: %s: %s", path, err.code, err.message);
}

static void check_policy(struct doctor *d) {
        struct glove_host_doctor_item *it = next_item(d, "session_policy", false);
        d->policy_revision = -1;
        if (d->config_fd < 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "fix config_dir first, then run glove setup",
                                "the configuration directory is not usable");
                return;
        }
        struct glove_supervisor_policy *p = NULL;
        struct glove_error err = { 0 };
        int r = glove_supervisor_policy_load(d->dirs.policy, d->uid, &p, &err);
        if (r == 0) {
                d->policy_revision = glove_supervisor_policy_revision(p);
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "%s loads with gloved's loader: revision %lld, max_plan_ttl_ms %lld, sha256 %s; "
                                "every launch template's adapter_command_digest matches its launch fields",
                                d->dirs.policy, (long long)d->policy_revision,
                                (long long)glove_supervisor_policy_max_plan_ttl_ms(p), glove_supervisor_policy_digest(p));
                glove_supervisor_policy_free(p);
                return;
        }
        if (r == -ENOENT && err.code && strcmp(err.code, "policy.file_open") == 0)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "run glove setup for the guided starter policy",
                                "%s does not exist", d->dirs.policy);
        else
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG,
                                "gloved would refuse to start with it: correct what the message names "
                                "(docs/session-policy.md), or move it away and run glove setup for a new one",
                                "%s: %s", err.code ? err.code : "policy.invalid", err.message);
}

static void check_config(struct doctor *d) {
        struct glove_host_doctor_item *it = next_item(d, "path_roots", false);
        if (d->config_fd < 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "fix config_dir first, then run glove setup",
                                "the configuration directory is not usable");
                return;
        }
        struct glove_host_config c;
        struct glove_error err = { 0 };
        int r = glove_host_config_read(d->config_fd, d->uid, &c, &err);
        if (r == 1)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "run glove setup (add roots with --path-root DIR)",
                                "%s does not exist", d->dirs.config_file);
        else if (r < 0)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG,
                                "correct it (docs/host.md gives the format) or move it away and run glove setup",
                                "%s: %s", err.code, err.message);
        else {
                char list[GLOVE_HOST_DOCTOR_TEXT_MAX / 2] = "";
                for (size_t i = 0; i < c.n_roots; i++) {
                        size_t used = strlen(list);
                        snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", c.roots[i]);
                }
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL, "%s: %zu path root%s%s%s", d->dirs.config_file,
                                c.n_roots, c.n_roots == 1 ? "" : "s", c.n_roots ? ": " : "", list);
                glove_host_config_clear(&c);
        }
}

static void check_exposure_policy(struct doctor *d) {
        struct glove_host_doctor_item *it = next_item(d, "exposure_policy", false);
        if (d->config_fd < 0) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "fix config_dir first, then run glove setup",
                                "the configuration directory is not usable");
                return;
        }
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", d->dirs.config, GLOVE_HOST_EXPOSURE_POLICY_FILE);
        struct glove_exposure_policy *p = NULL;
        struct glove_error err = { 0 };
        int r = glove_exposure_policy_load(path, d->uid, &p, &err);
        if (r == 0) {
                size_t n = glove_exposure_policy_root_count(p);
                doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL,
                                "%s loads with gloved's loader: %zu root%s; glove daemon install starts gloved with "
                                "--path-exposure-policy and --path-exposure-journal",
                                path, n, n == 1 ? "" : "s");
                glove_exposure_policy_free(p);
                return;
        }
        if (r == -ENOENT && err.code && strcmp(err.code, "policy.file_open") == 0)
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING,
                                "to expose project directories to sessions: glove setup --path-root DIR, then glove "
                                "daemon install (docs/exposures.md)",
                                "%s does not exist: gloved runs without exposures", path);
        else
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG,
                                "gloved would refuse to start with it: correct what the message names "
                                "(docs/exposures.md), or move it away and run glove setup --path-root DIR",
                                "%s: %s", err.code ? err.code : "policy.invalid", err.message);
}

/* "a, b, c" of a JSON array of strings, or of objects' key member. */
static void join_list(const json_t *a, const char *key, char *buf, size_t size) {
        buf[0] = '\0';
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) {
                const char *s = json_string_value(key ? json_object_get(v, key) : v);
                size_t used = strlen(buf);
                snprintf(buf + used, size - used, "%s%s", used ? ", " : "", s ? s : "?");
        }
        if (!buf[0])
                snprintf(buf, size, "none");
}

/* What to run for gloved, into buf: the user unit, or the command line
 * of its ExecStart= to run directly (glove_host_daemon_command_line). */
static void gloved_command(char *buf, size_t size, const char *lead) {
        struct glove_host_daemon_layout l;
        struct glove_error err = { 0 };
        _cleanup_free_ char *cmd = NULL;
        if (glove_host_daemon_layout_resolve(NULL, &l, &err) == 0) {
                (void)glove_host_daemon_command_line(&l, GLOVE_HOST_QUOTE_SHELL, &cmd, &err);
                glove_host_daemon_layout_free(&l);
        }
        if (cmd)
                doctor_text(buf, size,
                            "%s: glove daemon install, then glove daemon start (a systemd user service), or run it "
                            "directly: %s",
                            lead, cmd);
        else
                doctor_text(buf, size, "%s: glove daemon install, then glove daemon start (gloved's command line "
                            "cannot be given here: %s: %s)", lead, err.code ? err.code : "daemon.layout", err.message);
}

static void check_gloved(struct doctor *d) {
        struct glove_host_doctor_item *it = next_item(d, "gloved", false);
        if (!d->runtime_ok) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_MISSING, "fix runtime_dir first, then start gloved",
                                "the runtime directory is not usable, so gloved cannot be there");
                return;
        }
        _cleanup_client_ struct glove_protocol_client *c = NULL;
        struct glove_error err = { 0 };
        int r = glove_protocol_client_open(d->dirs.runtime, GLOVED_TIMEOUT_MS, &c, &err);
        if (r < 0) {
                char fix[GLOVE_HOST_DOCTOR_TEXT_MAX];
                gloved_command(fix, sizeof(fix), "start it");
                doctor_item_set(it, strcmp(err.code ? err.code : "", "client.unreachable") == 0 ? GLOVE_HOST_DOCTOR_MISSING
                                                                                           : GLOVE_HOST_DOCTOR_WRONG,
                                fix, "not reachable at %s/gloved.sock: %s: %s", d->dirs.runtime, err.code, err.message);
                return;
        }
        _cleanup_json_ json_t *caps = NULL;
        struct glove_protocol_remote_error remote = { 0 };
        r = glove_protocol_client_call(c, "capabilities", NULL, &caps, &remote, &err);
        if (r != 0) {
                json_decref(remote.data);
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG, "restart gloved and look at its stderr",
                                "gloved answered capabilities with %s: %s", r == 1 ? remote.code : err.code,
                                r == 1 ? remote.message : err.message);
                return;
        }
        const char *version = json_string_value(json_object_get(caps, "version"));
        json_t *rev = json_object_get(caps, "policy_revision");
        bool operational = json_is_true(json_object_get(caps, "lifecycle_operational"));
        const char *why = json_string_value(json_object_get(caps, "lifecycle_reason"));
        char methods[512], runtimes[256], missing[512];
        join_list(json_object_get(caps, "methods"), NULL, methods, sizeof(methods));
        join_list(json_object_get(caps, "managed_runtime_ids"), NULL, runtimes, sizeof(runtimes));
        join_list(json_object_get(caps, "resource_mechanisms_missing"), "limit", missing, sizeof(missing));
        char revword[32];
        if (json_is_integer(rev))
                snprintf(revword, sizeof(revword), "%lld", (long long)json_integer_value(rev));
        else
                snprintf(revword, sizeof(revword), "none");
        char detail[GLOVE_HOST_DOCTOR_TEXT_MAX];
        doctor_text(detail, sizeof(detail),
                 "gloved %s at %s/gloved.sock: policy revision %s, lifecycle_operational %s%s%s%s, managed "
                 "runtimes: %s, limits without a mechanism: %s; methods: %s",
                 version ? version : "?", d->dirs.runtime, revword, operational ? "true" : "false",
                 why ? " (" : "", why ? why : "", why ? ")" : "", runtimes, missing, methods);
        if (d->policy_revision >= 0 && json_is_integer(rev) && json_integer_value(rev) != d->policy_revision) {
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG,
                                "gloved reads its policy only at start: restart it to load the file's revision",
                                "%s; but %s has revision %lld", detail, d->dirs.policy, (long long)d->policy_revision);
                return;
        }
        if (!operational) {
                /* It answers, but create-session or start would be refused. */
                char fix[GLOVE_HOST_DOCTOR_TEXT_MAX];
                /* Limits without a mechanism: a runtime was built, but has no
                 * delegated cgroup (capabilities, resource_mechanisms_missing). */
                if (json_array_size(json_object_get(caps, "resource_mechanisms_missing")) > 0)
                        doctor_text(fix, sizeof(fix),
                                    "it cannot run managed sessions without delegated cgroups: run it as the user "
                                    "unit (glove daemon install, then glove daemon start: its Delegate= gives "
                                    "them), or have a cgroup delegated to uid %u (see cgroup_delegation)",
                                    (unsigned)d->uid);
                else
                        gloved_command(fix, sizeof(fix),
                                       "it cannot run managed sessions: stop it and start it with every option");
                doctor_item_set(it, GLOVE_HOST_DOCTOR_WRONG, fix, "%s", detail);
                return;
        }
        doctor_item_set(it, GLOVE_HOST_DOCTOR_OK, NULL, "%s", detail);
}

static int usage_error(const char *fmt, const char *arg) {
        fputs("glove: usage.doctor: ", stderr);
        fprintf(stderr, fmt, arg);
        fputs("; see glove doctor --help\n", stderr);
        return EXIT_USAGE;
}

static bool ready(const struct doctor *d) {
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].required && d->items[i].status != GLOVE_HOST_DOCTOR_OK)
                        return false;
        return true;
}

/* Not ready, but only for needed items a default glove exec runs without
 * (degraded, with a limits.degraded warning). */
static bool degraded(const struct doctor *d) {
        if (ready(d))
                return false;
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].required && d->items[i].status != GLOVE_HOST_DOCTOR_OK && !d->items[i].degrades)
                        return false;
        return true;
}

static void print_json(const struct doctor *d) {
        json_t *items = json_array();
        for (size_t i = 0; items && i < d->n; i++) {
                const struct glove_host_doctor_item *it = &d->items[i];
                json_array_append_new(items, json_pack("{s:s,s:s?,s:s,s:b,s:s}", "detail", it->detail, "fix",
                                                       it->fix[0] ? it->fix : NULL, "item", it->name, "required",
                                                       it->required, "status", status_words[it->status]));
        }
        json_t *o = json_pack("{s:o,s:b,s:I,s:s}", "items", items, "ready", ready(d), "uid", (json_int_t)d->uid,
                              "verdict", ready(d) ? "ready" : degraded(d) ? "degraded" : "not_ready");
        if (o)
                json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS);
        fputc('\n', stdout);
        json_decref(o);
}

static void print_text(const struct doctor *d) {
        for (size_t i = 0; i < d->n; i++) {
                const struct glove_host_doctor_item *it = &d->items[i];
                /* A detail may quote the host (a path, a file's line):
                 * shown escaped. */
                printf("%-7s  %-17s  %s%s\n", status_words[it->status], it->name, it->required ? "(needed) " : "",
                       host_shown(it->detail));
                if (it->fix[0])
                        printf("%-7s  %-17s  what to do: %s\n", "", "", host_shown(it->fix));
        }
        if (ready(d)) {
                puts("glove doctor: ready: everything a default glove exec needs is present");
                return;
        }
        if (degraded(d)) {
                fputs("glove doctor: degraded: a default glove exec runs, with a limits.degraded warning, without",
                      stdout);
                const char *sep = " ";
                for (size_t i = 0; i < d->n; i++)
                        if (d->items[i].required && d->items[i].status != GLOVE_HOST_DOCTOR_OK) {
                                printf("%s%s (%s)", sep, d->items[i].name, status_words[d->items[i].status]);
                                sep = ", ";
                        }
                puts(": memory and pids are not limited and CPU time only per process; delegated cgroups would "
                     "add hard memory, pids and CPU-time limits on the whole sandbox (and allow --memory, --pids "
                     "and --cpu-time)");
                return;
        }
        fputs("glove doctor: not ready: a default glove exec needs", stdout);
        const char *sep = " ";
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].required && d->items[i].status != GLOVE_HOST_DOCTOR_OK) {
                        printf("%s%s (%s)", sep, d->items[i].name, status_words[d->items[i].status]);
                        sep = ", ";
                }
        putchar('\n');
}

int glove_host_doctor_main(int argc, char **argv) {
        static const struct option longopts[] = {
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        bool json = false;
        opterr = 0;
        optind = 1;
        int opt;
        while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                if (opt == 'j')
                        json = true;
                else if (opt == 'h') {
                        fputs(usage_text, stdout);
                        return 0;
                } else
                        return usage_error("unknown option \"%s\"", argv[optind - 1]);
        }
        if (optind < argc)
                return usage_error("unexpected argument \"%s\"", argv[optind]);
        struct doctor d = { .uid = geteuid(), .config_fd = -1, .state_fd = -1 };
        struct glove_error err = { 0 };
        d.have_dirs = glove_host_dirs_from_env(&d.dirs, &err) == 0;
        doctor_probe_userns(next_item(&d, "user_namespaces", true));
        doctor_probe_seccomp(next_item(&d, "seccomp", true));
        doctor_probe_cgroup_delegation(next_item(&d, "cgroup_delegation", true));
        doctor_probe_cgroup_version(next_item(&d, "cgroup_version", false));
        doctor_probe_openat2(next_item(&d, "openat2", false));
        doctor_probe_landlock(next_item(&d, "landlock", false));
        doctor_probe_retained(next_item(&d, "retained_images", false));
        check_dir(&d, "config_dir", d.dirs.config, &d.config_fd);
        check_dir(&d, "runtime_dir", d.dirs.runtime, NULL);
        d.runtime_ok = d.items[d.n - 1].status == GLOVE_HOST_DOCTOR_OK;
        check_dir(&d, "state_dir", d.dirs.state, &d.state_fd);
        check_key(&d);
        check_policy(&d);
        check_config(&d);
        check_exposure_policy(&d);
        check_gloved(&d);
        if (d.config_fd >= 0)
                close(d.config_fd);
        if (d.state_fd >= 0)
                close(d.state_fd);
        if (json)
                print_json(&d);
        else
                print_text(&d);
        return ready(&d) || degraded(&d) ? 0 : EXIT_NOT_READY;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* glove init (include/glove/host/exposures.h, docs/exposures.md): asks
 * gloved, as the owner, to enroll a project directory as an exposure, to
 * list the exposures, or to revoke one. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/number.h"
#include "glove/base/path.h"
#include "glove/host/dirs.h"
#include "glove/host/exposures.h"
#include "glove/protocol/client.h"
#include "glove/supervisor/exposure.h"
#include "shown.h"

#define EXIT_REFUSED 1
#define EXIT_USAGE 125
#define INIT_TIMEOUT_MS 30000
#define MAX_LIST 64 /* --mode and --runtime values */

static const char usage_text[] =
        "Usage: glove init [PROJECT] [--label LABEL] [--ttl DURATION] [--mode ACCESS]...\n"
        "                  [--runtime ID]... [--runtime-dir DIR] [--json]\n"
        "       glove init --list [--runtime-dir DIR] [--json]\n"
        "       glove init --revoke ID [--runtime-dir DIR] [--json]\n"
        "\n"
        "Asks gloved to expose PROJECT (default: the current directory), a directory\n"
        "beneath a root of the exposure policy (approved with glove setup), to the\n"
        "sessions of this user: gloved records it in its exposure journal under an\n"
        "identifier (exp-...) and a generation, and plans then name it by that\n"
        "identifier, never by path (docs/exposures.md). PROJECT is made absolute\n"
        "lexically and walked from / without following any symbolic link; nothing in\n"
        "it is read. glove init authenticates with RUNTIME/owner-secret, which gloved\n"
        "writes only when started with its two path exposure options (glove daemon\n"
        "install adds them once the exposure policy exists).\n"
        "\n"
        "Options:\n"
        "  --label LABEL      a name shown in the catalog (default: PROJECT's last\n"
        "                     component); at most 64 bytes, no control characters\n"
        "  --ttl DURATION     how long the exposure lives, whole seconds (30s, 90m, 24h;\n"
        "                     a bare number is seconds); default and most: the root's\n"
        "                     max_ttl_secs\n"
        "  --mode ACCESS      allow only these accesses (read, ephemeral_write,\n"
        "                     retained_write); repeatable; default: all the root's\n"
        "  --runtime ID       allow only these runtime templates; repeatable; default:\n"
        "                     all the root's\n"
        "  --list             list every exposure with its state, path and expiry\n"
        "  --revoke ID        revoke the live generation of exposure ID\n"
        "  --runtime-dir DIR  gloved's runtime directory: gloved.sock and owner-secret\n"
        "                     (default $XDG_RUNTIME_DIR/glove)\n"
        "  --json             print gloved's answer as one line of JSON\n"
        "  -h, --help         show this help\n"
        "\n"
        "Exit status: 0 done, 1 refused or failed (\"glove: CODE: MESSAGE; what to do:\n"
        "...\" on stderr), 125 usage error.\n";

struct init {
        const char *project, *label, *ttl, *revoke;
        const char *modes[MAX_LIST + 1], *runtimes[MAX_LIST + 1];
        size_t n_modes, n_runtimes;
        bool list, json;
        int64_t ttl_secs; /* 0: the root's */
        struct glove_host_dirs dirs;
};

static int usage_error(const char *fmt, const char *arg) {
        fputs("glove: usage.init: ", stderr);
        fprintf(stderr, fmt, arg);
        fputs("; see glove init --help\n", stderr);
        return EXIT_USAGE;
}

/* Whether v (n strings) holds s. */
static bool listed(const char *const *v, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i], s) == 0)
                        return true;
        return false;
}

static int fail(const char *code, const char *message, const char *fix) {
        fprintf(stderr, "glove: %s: %s; what to do: %s\n", code, host_shown(message), fix);
        return EXIT_REFUSED;
}

/* What to do about a local error of glove init. */
static const char *local_fix(const char *code) {
        if (strcmp(code, "init.symlink") == 0)
                return "glove init follows no symbolic link: run it on the real directory (the link's target, "
                       "itself reached without links)";
        if (strcmp(code, "init.missing") == 0 || strcmp(code, "init.not_directory") == 0)
                return "name an existing directory beneath a root (glove init --help)";
        if (strncmp(code, "policy.", 7) == 0)
                return "fix CONFIG/exposure-policy.json as the message says (docs/exposures.md), or move it away "
                       "and run glove setup --path-root DIR";
        return "see the message (docs/exposures.md)";
}

/* What to do about a refusal of gloved. */
static const char *remote_fix(const char *code) {
        static const struct {
                const char *code, *fix;
        } fixes[] = {
                { "exposure.outside_roots", "add a root holding it with glove setup --path-root DIR, then restart "
                                            "gloved (glove daemon restart) so it reads the policy again" },
                { "exposure.is_root", "expose a directory beneath the root, not the root itself" },
                { "exposure.live", "it is exposed already: glove init --list shows it; revoke it first "
                                   "(glove init --revoke ID) to enroll it again" },
                { "exposure.symlink", "replace the symbolic link beneath the root by a real directory, or run "
                                      "glove init on the target" },
                { "exposure.cross_device", "a project must be on the same file system as its root" },
                { "exposure.restricted", "a project may not be, contain or lie inside Glove's own directories" },
                { "exposure.ttl_exceeded", "ask for a shorter --ttl, at most the root's max_ttl_secs (glove "
                                           "policy explain --file CONFIG/exposure-policy.json)" },
                { "exposure.mode_not_allowed", "ask only for modes the root allows (glove policy explain --file "
                                               "CONFIG/exposure-policy.json)" },
                { "exposure.runtime_not_allowed", "ask only for runtime templates the root allows (glove policy "
                                                  "explain --file CONFIG/exposure-policy.json)" },
                { "exposure.invalid_label", "give a --label of 1 to 64 bytes of UTF-8 without control characters "
                                            "or invisible format characters (such as U+200B or U+202E)" },
                { "exposure.path_invalid", "rename the directory so its path has no control character, then "
                                           "run glove init on it" },
                { "exposure.clock", "the system clock is far off: set it right, then try again" },
                { "exposure.root_unavailable", "the root is missing or was replaced since gloved started: restore "
                                               "it, then restart gloved" },
                { "exposure.too_many", "an id belongs to its project for good, so only projects enrolled before "
                                       "can be enrolled again; to start over, stop gloved and move the exposure "
                                       "journal and its .seal aside (this forgets every exposure)" },
                { "exposure.unknown", "glove init --list shows the exposure ids" },
                { "exposure.revoked", "it is revoked already; glove init PROJECT enrolls it again (next "
                                      "generation)" },
                { "exposure.expired", "it has expired already; glove init PROJECT enrolls it again (next "
                                      "generation)" },
                { "auth.owner_required", "gloved did not take RUNTIME/owner-secret as the owner's: restart gloved "
                                         "and try again" },
                { "method_not_found", "gloved runs without exposures: restart it with --path-exposure-policy and "
                                      "--path-exposure-journal (glove daemon install adds them when "
                                      "CONFIG/exposure-policy.json exists; then glove daemon restart)" },
        };
        for (size_t i = 0; i < sizeof(fixes) / sizeof(fixes[0]); i++)
                if (strcmp(code, fixes[i].code) == 0)
                        return fixes[i].fix;
        if (strcmp(code, "journal.full") == 0)
                return "the exposure journal is full: revoking and expiry still work, enrolling does not; to "
                       "start over, stop gloved and move the exposure journal and its .seal aside (this forgets "
                       "every exposure)";
        if (strncmp(code, "journal.", 8) == 0)
                return "gloved cannot use its exposure journal: see gloved's log (journalctl --user -u gloved) "
                       "and docs/exposures.md";
        return "see the message (docs/exposures.md)";
}

static void format_time(int64_t ms, char *buf, size_t size) {
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        if (!gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                snprintf(buf, size, "%lld ms", (long long)ms);
}

static const char *str(const json_t *o, const char *k) {
        const char *s = json_string_value(json_object_get(o, k));
        return host_shown(s ? s : "");
}

static void print_modes(const json_t *e) {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(e, "modes"), i, m) printf("%s%s", i ? ", " : "", str(m, "access"));
}

static void print_entry_line(const json_t *e) {
        char when[64];
        format_time(json_integer_value(json_object_get(e, "expires_at_ms")), when, sizeof(when));
        printf("%s generation %lld %s %s label %s (modes ", str(e, "exposure_id"),
               (long long)json_integer_value(json_object_get(e, "generation")), str(e, "state"), str(e, "path"),
               str(e, "label"));
        print_modes(e);
        printf(", expires %s)\n", when);
}

static int print_json(const json_t *v) {
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        printf("%s\n", s ? s : "{}");
        return s ? 0 : EXIT_REFUSED;
}

/* Connects as the owner; on failure prints the error and returns 1. */
static int connect_owner(const struct init *in, struct glove_protocol_client **cl) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", in->dirs.runtime, GLOVE_HOST_OWNER_SECRET_FILE);
        struct stat st;
        if (lstat(path, &st) < 0 && errno == ENOENT) {
                char msg[PATH_MAX + 256];
                snprintf(path, sizeof(path), "%s/gloved.sock", in->dirs.runtime);
                bool running = lstat(path, &st) == 0;
                snprintf(msg, sizeof(msg), "%s/%s does not exist: %s", in->dirs.runtime, GLOVE_HOST_OWNER_SECRET_FILE,
                         running ? "gloved was not started with --path-exposure-policy and --path-exposure-journal"
                                 : "gloved is not running");
                return fail("init.no_owner_secret", msg,
                            "run glove setup --path-root DIR (it writes CONFIG/exposure-policy.json), then glove "
                            "daemon install and glove daemon restart: the unit then starts gloved with "
                            "--path-exposure-policy CONFIG/exposure-policy.json --path-exposure-journal "
                            "STATE/exposures.journal (or start gloved by hand with those options)");
        }
        struct glove_error err = { 0 };
        if (glove_protocol_client_open_secret(in->dirs.runtime, GLOVE_HOST_OWNER_SECRET_FILE, INIT_TIMEOUT_MS, cl,
                                              &err) < 0)
                return fail(err.code, err.message,
                            "start gloved (glove daemon start) with the exposure options; glove doctor says what "
                            "is missing");
        return 0;
}

/* Calls method; prints a refusal or failure and returns 1, else 0 with
 * *result. */
static int call(struct glove_protocol_client *cl, const char *method, json_t *params, json_t **result) {
        struct glove_error err = { 0 };
        struct glove_protocol_remote_error remote = { 0 };
        int r = glove_protocol_client_call(cl, method, params, result, &remote, &err);
        if (r < 0)
                return fail(err.code, err.message, "check that gloved is running (glove daemon status)");
        if (r == 1) {
                json_decref(remote.data);
                char code[GLOVE_PROTOCOL_CLIENT_CODE_MAX];
                snprintf(code, sizeof(code), "%s", host_shown(remote.code));
                /* gloved's answer is one frame of at most 1 MiB; a longer
                 * owner list comes back as this fixed error. */
                if (strcmp(method, "exposure_list") == 0 && strcmp(remote.code, "internal") == 0)
                        return fail(code, remote.message,
                                    "the list of every exposure, with its path, is probably larger than one answer "
                                    "of gloved may be (1 MiB, docs/exposures.md): glove ctl exposures --json lists "
                                    "the identifiers without paths; enrolling, revoking and sessions still work");
                return fail(code, remote.message, remote_fix(remote.code));
        }
        return 0;
}

/* PROJECT must lie strictly beneath a root of the owner's policy; a root
 * itself is left to gloved (exposure.is_root). */
static int check_roots(const struct init *in, const char *project) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", in->dirs.config, GLOVE_HOST_EXPOSURE_POLICY_FILE);
        struct stat st;
        if (lstat(path, &st) < 0 && errno == ENOENT) {
                char msg[PATH_MAX + 128];
                snprintf(msg, sizeof(msg), "%s does not exist: no directory may be exposed yet", path);
                return fail("init.no_policy", msg,
                            "approve a root first: glove setup --path-root DIR (DIR holds your projects), then "
                            "restart gloved");
        }
        struct glove_error err = { 0 };
        struct glove_exposure_policy *p = NULL;
        if (glove_exposure_policy_load(path, geteuid(), &p, &err) < 0)
                return fail(err.code, err.message, local_fix(err.code));
        bool inside = false;
        char roots[2048] = "";
        size_t used = 0;
        for (size_t i = 0; i < glove_exposure_policy_root_count(p); i++) {
                const struct glove_exposure_root *r = glove_exposure_policy_root(p, i);
                if (glove_path_is_beneath(project, r->path))
                        inside = true;
                int n = snprintf(roots + used, sizeof(roots) - used, "%s%s", i ? ", " : "", r->path);
                if (n > 0 && (size_t)n < sizeof(roots) - used)
                        used += (size_t)n;
        }
        glove_exposure_policy_free(p);
        if (inside)
                return 0;
        char msg[PATH_MAX + 2200];
        snprintf(msg, sizeof(msg), "%s is beneath no root of %s (roots: %s)", project, path, roots);
        return fail("init.outside_roots", msg,
                    "run glove init on a directory beneath a root, or approve a root holding it with glove setup "
                    "--path-root DIR and restart gloved");
}

static json_t *string_array(const char *const *v, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_string(v[i]));
        return a;
}

static int do_create(struct init *in) {
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (!cwd && !(in->project && in->project[0] == '/'))
                return fail("init.path", "cannot read the current directory", "give PROJECT as an absolute path");
        _cleanup_free_ char *project = NULL;
        struct glove_error err = { 0 };
        if (glove_host_init_canonicalize(in->project ? in->project : ".", cwd ? cwd : "/", &project, &err) < 0)
                return fail(err.code, err.message, local_fix(err.code));
        int rc = check_roots(in, project);
        if (rc)
                return rc;
        /* JSON carries UTF-8 only: a name that is not is refused here, not
         * dropped from the request. */
        if (!glove_json_utf8_valid(project, strlen(project), NULL))
                return fail("init.path", "the project path is not valid UTF-8",
                            "rename the directory to a UTF-8 name, then run glove init on it");
        _cleanup_json_ json_t *params = json_pack("{s:s}", "path", project);
        if (!params)
                return fail("init.no_memory", "out of memory", "try again");
        if (in->label)
                json_object_set_new(params, "label", json_string(in->label));
        if (in->ttl_secs)
                json_object_set_new(params, "ttl_secs", json_integer((json_int_t)in->ttl_secs));
        if (in->n_modes)
                json_object_set_new(params, "modes", string_array(in->modes, in->n_modes));
        if (in->n_runtimes)
                json_object_set_new(params, "runtime_template_ids", string_array(in->runtimes, in->n_runtimes));
        _cleanup_client_ struct glove_protocol_client *cl = NULL;
        rc = connect_owner(in, &cl);
        if (rc)
                return rc;
        _cleanup_json_ json_t *result = NULL;
        rc = call(cl, "exposure_create", params, &result);
        if (rc)
                return rc;
        if (in->json)
                return print_json(result);
        char when[64];
        format_time(json_integer_value(json_object_get(result, "expires_at_ms")), when, sizeof(when));
        printf("exposed %s as %s generation %lld (modes ", host_shown(project), str(result, "exposure_id"),
               (long long)json_integer_value(json_object_get(result, "generation")));
        print_modes(result);
        printf(", expires %s)\n", when);
        return fflush(stdout) == 0 ? 0 : EXIT_REFUSED;
}

static int do_list(struct init *in) {
        _cleanup_client_ struct glove_protocol_client *cl = NULL;
        int rc = connect_owner(in, &cl);
        if (rc)
                return rc;
        _cleanup_json_ json_t *result = NULL;
        rc = call(cl, "exposure_list", NULL, &result);
        if (rc)
                return rc;
        if (in->json)
                return print_json(result);
        json_t *list = json_object_get(result, "exposures");
        if (json_array_size(list) == 0)
                puts("no exposures");
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) print_entry_line(e);
        return fflush(stdout) == 0 ? 0 : EXIT_REFUSED;
}

static int do_revoke(struct init *in) {
        _cleanup_client_ struct glove_protocol_client *cl = NULL;
        int rc = connect_owner(in, &cl);
        if (rc)
                return rc;
        _cleanup_json_ json_t *params = json_pack("{s:s}", "exposure_id", in->revoke);
        _cleanup_json_ json_t *result = NULL;
        rc = call(cl, "exposure_revoke", params, &result);
        if (rc)
                return rc;
        if (in->json)
                return print_json(result);
        printf("revoked %s generation %lld\n", str(result, "exposure_id"),
               (long long)json_integer_value(json_object_get(result, "generation")));
        return fflush(stdout) == 0 ? 0 : EXIT_REFUSED;
}

int glove_host_init_main(int argc, char **argv) {
        struct init in = { 0 };
        const char *runtime_dir = NULL;
        static const struct option longopts[] = {
                { "label", required_argument, NULL, 'l' },  { "ttl", required_argument, NULL, 't' },
                { "mode", required_argument, NULL, 'm' },   { "runtime", required_argument, NULL, 'r' },
                { "list", no_argument, NULL, 'L' },         { "revoke", required_argument, NULL, 'R' },
                { "json", no_argument, NULL, 'j' },         { "help", no_argument, NULL, 'h' },
                { "runtime-dir", required_argument, NULL, 'd' },
                { 0 },
        };
        opterr = 0;
        optind = 1;
        int opt, li = 0;
        /* Options may follow PROJECT (GNU argument permutation). */
        while ((opt = getopt_long(argc, argv, ":h", longopts, &li)) != -1) {
                /* Values travel as JSON strings: UTF-8 only (all of these
                 * options are long ones, so li names the option). */
                if (optarg && strchr("ltmrR", opt) && !glove_json_utf8_valid(optarg, strlen(optarg), NULL))
                        return usage_error("--%s takes UTF-8 text (its value is not)", longopts[li].name);
                switch (opt) {
                case 'l':
                        if (in.label)
                                return usage_error("--label is given twice (again as \"%s\")", optarg);
                        in.label = optarg;
                        break;
                case 't':
                        if (in.ttl)
                                return usage_error("--ttl is given twice (again as \"%s\")", optarg);
                        in.ttl = optarg;
                        break;
                case 'm':
                        if (in.n_modes == MAX_LIST)
                                return usage_error("at most %s --mode options", "64");
                        if (listed(in.modes, in.n_modes, optarg))
                                return usage_error("--mode %s is given twice", optarg);
                        in.modes[in.n_modes++] = optarg;
                        break;
                case 'r':
                        if (in.n_runtimes == MAX_LIST)
                                return usage_error("at most %s --runtime options", "64");
                        if (listed(in.runtimes, in.n_runtimes, optarg))
                                return usage_error("--runtime %s is given twice", optarg);
                        in.runtimes[in.n_runtimes++] = optarg;
                        break;
                case 'L':
                        if (in.list)
                                return usage_error("%s is given twice", "--list");
                        in.list = true;
                        break;
                case 'R':
                        if (in.revoke)
                                return usage_error("--revoke is given twice (again as \"%s\")", optarg);
                        in.revoke = optarg;
                        break;
                case 'j':
                        in.json = true;
                        break;
                case 'd':
                        if (runtime_dir)
                                return usage_error("--runtime-dir is given twice (again as \"%s\")", optarg);
                        runtime_dir = optarg;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return 0;
                case ':':
                        return usage_error("%s needs a value", argv[optind - 1]);
                default:
                        return usage_error("unknown option \"%s\"", argv[optind - 1]);
                }
        }
        if (optind < argc)
                in.project = argv[optind++];
        if (optind < argc)
                return usage_error("unexpected argument \"%s\"", argv[optind]);
        /* Which enrollment option is given, for --list and --revoke. */
        const char *enrolling = in.label        ? "--label"
                                : in.ttl        ? "--ttl"
                                : in.n_modes    ? "--mode"
                                : in.n_runtimes ? "--runtime"
                                                : NULL;
        if (in.list && in.revoke)
                return usage_error("--list and %s exclude each other", "--revoke");
        if ((in.list || in.revoke) && in.project)
                return usage_error(in.list ? "--list takes no PROJECT (got \"%s\")" : "--revoke takes no PROJECT "
                                                                                      "(got \"%s\"): it names the "
                                                                                      "exposure by its ID alone",
                                   in.project);
        if ((in.list || in.revoke) && enrolling)
                return usage_error(in.list ? "--list takes no %s: only --runtime-dir and --json"
                                           : "--revoke takes no %s: only --runtime-dir and --json",
                                   enrolling);
        if (in.ttl) {
                uint64_t ms = 0;
                if (glove_duration_parse_ms(in.ttl, 1000, 1000, (uint64_t)GLOVE_EXPOSURE_TTL_SECS_MAX * 1000, &ms) <
                            0 ||
                    ms % 1000 != 0)
                        return usage_error("--ttl %s: expected whole seconds from 1s to 8760h: a whole number with "
                                           "a unit s, m or h (30s, 90m, 24h; 7 days is 168h), or a bare number of "
                                           "seconds (3600)",
                                           in.ttl);
                in.ttl_secs = (int64_t)(ms / 1000);
        }
        static const char *const accesses[] = { "read", "ephemeral_write", "retained_write" };
        for (size_t i = 0; i < in.n_modes; i++) {
                size_t k = 0;
                while (k < 3 && strcmp(in.modes[i], accesses[k]) != 0)
                        k++;
                if (k == 3)
                        return usage_error("--mode %s: expected read, ephemeral_write or retained_write", in.modes[i]);
        }
        struct glove_error err = { 0 };
        if (glove_host_dirs_from_env(&in.dirs, &err) < 0)
                return fail(err.code, err.message,
                            "set HOME (or XDG_CONFIG_HOME and XDG_STATE_HOME) to an absolute path");
        if (runtime_dir) {
                if (runtime_dir[0] != '/' || strlen(runtime_dir) >= sizeof(in.dirs.runtime))
                        return usage_error("--runtime-dir %s: expected an absolute path", runtime_dir);
                snprintf(in.dirs.runtime, sizeof(in.dirs.runtime), "%s", runtime_dir);
        }
        if (!in.dirs.runtime[0])
                return fail("host.no_runtime_dir", "$XDG_RUNTIME_DIR is not set to an absolute path",
                            "log in through a session that sets it, or set XDG_RUNTIME_DIR to gloved's");
        if (in.list)
                return do_list(&in);
        if (in.revoke)
                return do_revoke(&in);
        return do_create(&in);
}

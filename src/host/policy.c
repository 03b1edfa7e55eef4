/* SPDX-License-Identifier: Apache-2.0 */
/* glove policy: the dispatcher, detect and validate (include/glove/host/policy.h,
 * docs/host.md "The policy workflow"). */
#include "glove/host/policy.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "glove/supervisor/adapter.h"
#include "glove/supervisor/policy.h"
#include "glove/supervisor/trust.h"
#include "policy_internal.h"
#include "shown.h"

static const char usage_text[] =
        "Usage: glove policy COMMAND [OPTIONS]\n"
        "\n"
        "The owner-local session-policy workflow (docs/host.md, \"The policy workflow\"):\n"
        "  detect --search-path DIR... [--json]\n"
        "        where the five adapters' executables are in DIR..., and whether\n"
        "        gloved's discovery trusts each directory chain (and why not)\n"
        "  stage --runtime ID --source PATH --directory DIR [--dry-run | --yes] [--json]\n"
        "        copy a single-root npm package closure (or one executable file)\n"
        "        into the protected directory DIR, content-addressed\n"
        "  generate --runtime ID (--executable PATH | --search-path DIR...)\n"
        "           --template-id ID [--arg A]... [--env K=V]... [--read-only PATH]...\n"
        "           [--alias A]... [--destination D]... [--policy]\n"
        "        one runtime_templates[] entry with its adapter_command_digest, or\n"
        "        with --policy a complete guided policy\n"
        "  explain --file F [--json]\n"
        "        what the policy allows, in words, with warnings for risky choices\n"
        "  validate --file F\n"
        "        load F with the loader gloved uses (same codes, same JSON paths)\n"
        "\n"
        "glove policy COMMAND --help describes each command's options.\n"
        "\n"
        "Exit status: 0 done, 1 refused or failed (stderr \"glove: CODE: MESSAGE\"),\n"
        "125 usage error.\n";

int policy_usage(const char *cmd, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("glove: usage.policy: ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "; see glove policy %s--help\n", cmd ? cmd : "");
        return POLICY_EXIT_USAGE;
}

int policy_refuse(const struct glove_error *err) {
        /* The message may quote the file (a key, a value): shown escaped. */
        fprintf(stderr, "glove: %s: %s\n", err->code ? err->code : "policy.failed", host_shown(err->message));
        return POLICY_EXIT_REFUSED;
}

/* ---- harness homes ---- */

static const char *const harness_dirs[] = {
        ".codex", ".claude", ".claude.json", ".pi", ".copilot", ".config/opencode", ".local/share/opencode",
};

static bool overlap_in(const char *path, const char *home, const char **which) {
        static char buf[PATH_MAX];
        if (!home || home[0] != '/')
                return false;
        _cleanup_free_ char *h = NULL;
        if (glove_path_normalize(home, NULL, &h, NULL) < 0)
                return false;
        for (size_t i = 0; i < sizeof(harness_dirs) / sizeof(harness_dirs[0]); i++) {
                if ((size_t)snprintf(buf, sizeof(buf), "%s/%s", strcmp(h, "/") == 0 ? "" : h, harness_dirs[i]) >=
                    sizeof(buf))
                        continue;
                if (glove_path_is_beneath(path, buf) || glove_path_is_beneath(buf, path)) {
                        *which = buf;
                        return true;
                }
        }
        return false;
}

bool policy_harness_home_overlap(const char *path, const char **which) {
        if (overlap_in(path, getenv("HOME"), which))
                return true;
        struct passwd *pw = getpwuid(geteuid());
        return pw && overlap_in(path, pw->pw_dir, which);
}

/* ---- detect ---- */

static const char detect_help[] =
        "Usage: glove policy detect --search-path DIR... [--json]\n"
        "\n"
        "For each of the five native adapters (claude-code: claude, codex: codex,\n"
        "copilot: copilot, opencode: opencode, pi: pi), and each DIR in order: whether\n"
        "DIR has an entry of that name (and what it resolves to), and whether the\n"
        "discovery trust rule gloved applies passes for DIR, every ancestor, the\n"
        "resolved file and its directories: owned by root or you, writable by neither\n"
        "group nor others (a sticky ancestor such as /tmp is refused too), no\n"
        "symbolic link on the way (the entry itself may be one). When it fails, the\n"
        "reason names the directory, its owner or its mode. Nothing is written.\n"
        "\n"
        "Options:\n"
        "  --search-path DIR  an absolute directory to look in (repeatable, in order)\n"
        "  --json             one JSON object on stdout: {\"service_uid\",\"adapters\":[{\n"
        "                     \"runtime_id\",\"executable\",\"usable\",\"selected\":\n"
        "                     {\"directory\",\"executable\"}|null,\"directories\":[{\n"
        "                     \"directory\",\"found\",\"entry\",\"resolves_to\",\"trusted\",\n"
        "                     \"reason\"}]}]}\n"
        "  -h, --help         show this help\n"
        "\n"
        "Exit status: 0 when at least one adapter is usable for discovery (found in a\n"
        "trusted directory), 1 when none is, 125 usage error.\n";

#define DETECT_MAX_DIRS GLOVE_LAUNCH_MAX_ITEMS

static json_t *detect_dir(const char *dir, const char *name, uid_t uid, bool *usable, char **exe) {
        char entry[PATH_MAX];
        bool found = false;
        _cleanup_free_ char *resolved = NULL;
        struct stat est;
        if ((size_t)snprintf(entry, sizeof(entry), "%s/%s", dir, name) < sizeof(entry) &&
            lstat(entry, &est) == 0) {
                found = true;
                resolved = realpath(entry, NULL);
        }
        char why[GLOVE_ERROR_MESSAGE_MAX] = "";
        _cleanup_free_ char *canon = NULL;
        struct stat st;
        int r = glove_supervisor_trust_find(dir, name, uid, &canon, &st, why, sizeof(why));
        *usable = r == 1;
        if (r == 1)
                *exe = TAKE_PTR(canon);
        return json_pack("{s:s,s:b,s:s?,s:s?,s:b,s:s?}", "directory", dir, "found", found, "entry",
                         found ? entry : NULL, "resolves_to", resolved, "trusted", r == 1, "reason",
                         r == 1 ? NULL : why);
}

int policy_detect_main(int argc, char **argv) {
        const char *dirs[DETECT_MAX_DIRS];
        size_t n = 0;
        bool json = false;
        static const struct option longopts[] = {
                { "search-path", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        opterr = 0;
        optind = 1;
        int opt;
        while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                switch (opt) {
                case 's':
                        if (n == DETECT_MAX_DIRS)
                                return policy_usage("detect ", "at most %d --search-path options", DETECT_MAX_DIRS);
                        if (optarg[0] != '/')
                                return policy_usage("detect ", "--search-path %s is not an absolute path", optarg);
                        dirs[n++] = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        fputs(detect_help, stdout);
                        return 0;
                case ':':
                        return policy_usage("detect ", "%s needs a value", argv[optind - 1]);
                default:
                        return policy_usage("detect ", "unknown option \"%s\"", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return policy_usage("detect ", "unexpected argument \"%s\"", argv[optind]);
        if (n == 0)
                return policy_usage("detect ", "give at least one --search-path DIR");
        uid_t uid = geteuid();
        size_t na = 0;
        const struct glove_supervisor_adapter *table = glove_supervisor_adapters(&na);
        _cleanup_json_ json_t *adapters = json_array();
        size_t usable_count = 0;
        for (size_t a = 0; adapters && a < na; a++) {
                json_t *list = json_array();
                _cleanup_free_ char *sel_exe = NULL;
                const char *sel_dir = NULL;
                for (size_t i = 0; list && i < n; i++) {
                        bool usable = false;
                        _cleanup_free_ char *exe = NULL;
                        json_array_append_new(list, detect_dir(dirs[i], table[a].executable, uid, &usable, &exe));
                        if (usable && !sel_dir) {
                                sel_dir = dirs[i];
                                sel_exe = TAKE_PTR(exe);
                        }
                }
                usable_count += sel_dir != NULL;
                json_t *sel = sel_dir ? json_pack("{s:s,s:s}", "directory", sel_dir, "executable", sel_exe) : json_null();
                json_array_append_new(adapters, json_pack("{s:s,s:s,s:b,s:o,s:o}", "runtime_id", table[a].runtime_id,
                                                          "executable", table[a].executable, "usable", sel_dir != NULL,
                                                          "selected", sel, "directories", list));
        }
        _cleanup_json_ json_t *report = json_pack("{s:I,s:O}", "service_uid", (json_int_t)uid, "adapters", adapters);
        if (!report) {
                fputs("glove: policy.no_memory: out of memory\n", stderr);
                return POLICY_EXIT_REFUSED;
        }
        if (json) {
                json_dumpf(report, stdout, JSON_COMPACT | JSON_SORT_KEYS);
                fputc('\n', stdout);
        } else {
                size_t i;
                json_t *ad;
                json_array_foreach(adapters, i, ad) {
                        const char *rid = json_string_value(json_object_get(ad, "runtime_id"));
                        json_t *sel = json_object_get(ad, "selected");
                        if (json_is_object(sel))
                                printf("%s: usable: %s (in %s)\n", host_shown(rid),
                                       host_shown(json_string_value(json_object_get(sel, "executable"))),
                                       host_shown(json_string_value(json_object_get(sel, "directory"))));
                        else
                                printf("%s: not usable for discovery\n", host_shown(rid));
                        size_t k;
                        json_t *d;
                        json_array_foreach(json_object_get(ad, "directories"), k, d) {
                                const char *dir = json_string_value(json_object_get(d, "directory"));
                                const char *res = json_string_value(json_object_get(d, "resolves_to"));
                                const char *entry = json_string_value(json_object_get(d, "entry"));
                                bool found = json_is_true(json_object_get(d, "found"));
                                if (json_is_true(json_object_get(d, "trusted")))
                                        printf("  %s: found, trusted\n", host_shown(dir));
                                else if (found)
                                        printf("  %s: found %s%s%s; untrusted: %s\n", host_shown(dir), host_shown(entry),
                                               res && strcmp(res, entry) ? " -> " : "",
                                               res && strcmp(res, entry) ? host_shown(res) : "",
                                               host_shown(json_string_value(json_object_get(d, "reason"))));
                                else
                                        printf("  %s: not found (%s)\n", host_shown(dir),
                                               host_shown(json_string_value(json_object_get(d, "reason"))));
                        }
                }
        }
        return usable_count ? POLICY_EXIT_OK : POLICY_EXIT_REFUSED;
}

/* ---- validate ---- */

static const char validate_help[] =
        "Usage: glove policy validate --file F\n"
        "\n"
        "Loads F exactly as gloved loads its session policy, as this user: the file\n"
        "checks (absolute path, regular file, owned by you, mode 0600, one hard link,\n"
        "no symbolic link, at most 1 MiB, unchanged while read) and then the strict\n"
        "decoder with every semantic check, including each adapter_command_digest.\n"
        "Prints one line \"F: ok: revision N, max_plan_ttl_ms T, sha256 HEX\", or on\n"
        "stderr the stable code and message gloved would give (the message names the\n"
        "file and the JSON path, e.g. $.runtime_templates[0].adapter_command_digest).\n"
        "A file whose top-level object has a \"roots\" member is an exposure policy\n"
        "(CONFIG/exposure-policy.json, docs/exposures.md): it is loaded with gloved's\n"
        "exposure policy loader instead, and the line is \"F: ok: exposure policy, N\n"
        "roots, sha256 HEX\".\n"
        "\n"
        "Options:\n"
        "  --file F    the policy file (absolute)\n"
        "  -h, --help  show this help\n"
        "\n"
        "Exit status: 0 accepted, 1 refused (the code is gloved's), 125 usage error.\n";

int policy_file_options(const char *cmd, const char *help, int argc, char **argv, bool allow_json, const char **file,
                        bool *json) {
        static const struct option longopts[] = {
                { "file", required_argument, NULL, 'f' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        opterr = 0;
        optind = 1;
        int opt;
        *file = NULL;
        while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                switch (opt) {
                case 'f':
                        *file = optarg;
                        break;
                case 'j':
                        if (!allow_json)
                                return policy_usage(cmd, "unknown option \"--json\"");
                        *json = true;
                        break;
                case 'h':
                        fputs(help, stdout);
                        return 0;
                case ':':
                        return policy_usage(cmd, "%s needs a value", argv[optind - 1]);
                default:
                        return policy_usage(cmd, "unknown option \"%s\"", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return policy_usage(cmd, "unexpected argument \"%s\"", argv[optind]);
        if (!*file)
                return policy_usage(cmd, "--file F is required");
        return -1;
}

int policy_validate_main(int argc, char **argv) {
        const char *file;
        bool json = false;
        int rc = policy_file_options("validate ", validate_help, argc, argv, false, &file, &json);
        if (rc >= 0)
                return rc;
        if (policy_is_exposure_file(file))
                return policy_exposure_validate(file);
        struct glove_error err = { 0 };
        _cleanup_policy_ struct glove_supervisor_policy *p = NULL;
        if (glove_supervisor_policy_load(file, geteuid(), &p, &err) < 0)
                return policy_refuse(&err);
        printf("%s: ok: revision %lld, max_plan_ttl_ms %lld, sha256 %s\n", file,
               (long long)glove_supervisor_policy_revision(p), (long long)glove_supervisor_policy_max_plan_ttl_ms(p),
               glove_supervisor_policy_digest(p));
        return POLICY_EXIT_OK;
}

/* ---- dispatch ---- */

int glove_host_policy_main(int argc, char **argv) {
        if (argc < 2)
                return policy_usage(NULL, "no command given (detect, stage, generate, explain, validate)");
        const char *cmd = argv[1];
        if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
                fputs(usage_text, stdout);
                return 0;
        }
        static const struct {
                const char *name;
                int (*main)(int, char **);
        } cmds[] = {
                { "detect", policy_detect_main },     { "stage", policy_stage_main },
                { "generate", policy_generate_main }, { "explain", policy_explain_main },
                { "validate", policy_validate_main },
        };
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
                if (strcmp(cmd, cmds[i].name) == 0)
                        return cmds[i].main(argc - 1, argv + 1);
        return policy_usage(NULL, "unknown command \"%s\" (detect, stage, generate, explain, validate)", cmd);
}

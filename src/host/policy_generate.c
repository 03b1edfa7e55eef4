/* SPDX-License-Identifier: Apache-2.0 */
/* glove policy generate (include/glove/host/policy.h, docs/host.md "The
 * policy workflow"): one strict runtime_templates[] entry, or a complete
 * guided policy, with adapter_command_digest computed by
 * glove_supervisor_launch_template_digest and the result decoded by the
 * decoder gloved's loader uses. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/host/guided.h"
#include "glove/supervisor/adapter.h"
#include "glove/supervisor/policy.h"
#include "glove/supervisor/trust.h"
#include "policy_internal.h"

static const char generate_help[] =
        "Usage: glove policy generate --runtime ID (--executable PATH | --search-path DIR...)\n"
        "                             --template-id ID [--arg A]... [--env K=V]...\n"
        "                             [--read-only PATH]... [--alias A]... [--destination D]...\n"
        "                             [--policy]\n"
        "\n"
        "Prints one strict runtime_templates[] entry (JSON, sorted keys) whose\n"
        "adapter_command_digest is computed over its launch block (docs/digests.md),\n"
        "after checking it with the decoder gloved uses; with --policy, a complete\n"
        "session policy with the guided defaults (docs/host.md) holding this template.\n"
        "\n"
        "Options:\n"
        "  --runtime ID        the template's runtime_id; with --search-path one of the\n"
        "                      native adapters (claude-code, codex, copilot, opencode, pi)\n"
        "  --executable PATH   pin this executable: canonicalized (every link resolved);\n"
        "                      it must be a regular executable file\n"
        "  --search-path DIR   runtime discovery (runtime_discovery = --runtime) in DIR,\n"
        "                      canonicalized; repeatable, searched in order; at least one\n"
        "                      must give a trusted executable now (as gloved checks it)\n"
        "  --template-id ID    the runtime_template_id plans name\n"
        "  --arg A             an argument, in argv order (repeatable)\n"
        "  --env K=V           an environment entry (repeatable; sorted canonically)\n"
        "  --read-only PATH    a host path mounted read-only, canonicalized (repeatable;\n"
        "                      sorted)\n"
        "  --alias A           a path alias the template allows (repeatable; sorted)\n"
        "  --destination D     a library projection destination the template allows\n"
        "                      (repeatable; sorted)\n"
        "  --policy            print a complete policy instead (the guided one defines no\n"
        "                      path aliases or destinations, so not with --alias or\n"
        "                      --destination)\n"
        "  -h, --help          show this help\n"
        "\n"
        "Exit status: 0 printed, 1 refused (gloved's decoder code and JSON path, or\n"
        "why no executable was found), 125 usage error.\n";

#define MAXN GLOVE_LAUNCH_MAX_ITEMS

struct strv {
        const char *v[MAXN];
        size_t n;
};

struct gen {
        const char *runtime, *template_id, *executable;
        struct strv search, args, env, ro, aliases, dests;
        bool policy;
        /* owned: canonical paths */
        char *canon_exe;
        char *canon_search[MAXN];
        char *canon_ro[MAXN];
};

static void gen_clear(struct gen *g) {
        free(g->canon_exe);
        for (size_t i = 0; i < MAXN; i++) {
                free(g->canon_search[i]);
                free(g->canon_ro[i]);
        }
}

static int by_bytes(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool identifier_ok(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_POLICY_IDENTIFIER_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                      strchr("._:-", *p)))
                        return false;
        return true;
}

/* Canonical form of an existing path, with the type wanted ('d', 'f', 0
 * for any); NULL with err set. */
static char *canonical(const char *opt, const char *path, char want, struct glove_error *err) {
        if (path[0] != '/') {
                glove_error_set(err, EINVAL, "generate.path_relative", "%s %s: not an absolute path", opt, path);
                return NULL;
        }
        char *c = realpath(path, NULL);
        if (!c) {
                glove_error_set(err, errno, "generate.path", "%s %s: %s", opt, path, strerror(errno));
                return NULL;
        }
        struct stat st;
        const char *bad = NULL;
        if (stat(c, &st) < 0)
                bad = strerror(errno);
        else if (want == 'd' && !S_ISDIR(st.st_mode))
                bad = "not a directory";
        else if (want == 'f' && !S_ISREG(st.st_mode))
                bad = "not a regular file";
        else if (want == 'f' && !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
                bad = "not executable";
        if (bad) {
                glove_error_set(err, EINVAL, "generate.path", "%s %s: %s%s%s", opt, path,
                                strcmp(c, path) ? c : "", strcmp(c, path) ? ": " : "", bad);
                free(c);
                return NULL;
        }
        return c;
}

/* Discovery must find a trusted executable now, as gloved will. */
static int check_discovery(const struct gen *g, const struct glove_supervisor_adapter *a, struct glove_error *err) {
        char list[GLOVE_ERROR_MESSAGE_MAX] = "";
        size_t used = 0;
        for (size_t i = 0; i < g->search.n; i++) {
                char why[GLOVE_ERROR_MESSAGE_MAX] = "";
                _cleanup_free_ char *exe = NULL;
                struct stat st;
                int r = glove_supervisor_trust_find(g->canon_search[i], a->executable, geteuid(), &exe, &st, why,
                                                    sizeof(why));
                if (r < 0)
                        return glove_error_set(err, ENOMEM, "generate.no_memory", "out of memory");
                if (r == 1) {
                        fprintf(stderr, "glove policy generate: %s: discovery finds %s in %s\n", a->runtime_id, exe,
                                g->canon_search[i]);
                        return 0;
                }
                int w = snprintf(list + used, sizeof(list) - used, "%s %s: %s", i ? ";" : "", g->canon_search[i], why);
                if (w > 0 && (size_t)w < sizeof(list) - used)
                        used += (size_t)w;
        }
        return glove_error_set(err, ENOENT, "launch.discovery_failed",
                               "runtime_discovery %s would find no trusted executable %s:%s (glove policy detect "
                               "says why; glove policy stage copies it to a protected directory)",
                               a->runtime_id, a->executable, list);
}

/* The entry's aliases and destinations, sorted identifier arrays. */
static int set_ids(json_t *entry, const char *key, struct strv *v, struct glove_error *err) {
        qsort(v->v, v->n, sizeof(v->v[0]), by_bytes);
        json_t *a = json_array();
        for (size_t i = 0; a && i < v->n; i++) {
                if (!identifier_ok(v->v[i]) || (i && strcmp(v->v[i - 1], v->v[i]) == 0)) {
                        json_decref(a);
                        return glove_error_set(err, EINVAL,
                                               identifier_ok(v->v[i]) ? "policy.array_duplicate"
                                                                      : "policy.invalid_identifier",
                                               "$.runtime_templates[0].%s: %s: %s", key, v->v[i],
                                               identifier_ok(v->v[i]) ? "given twice"
                                                                      : "1 to 128 bytes of [A-Za-z0-9._:-]");
                }
                json_array_append_new(a, json_string(v->v[i]));
        }
        if (!a || json_object_set_new(entry, key, a) < 0)
                return glove_error_set(err, ENOMEM, "generate.no_memory", "out of memory");
        return 0;
}

/* Decodes policy p with the loader's decoder; the error carries the path. */
static int decode_check(json_t *p, struct glove_error *err) {
        _cleanup_free_ char *text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return glove_error_set(err, ENOMEM, "generate.no_memory", "out of memory");
        _cleanup_policy_ struct glove_supervisor_policy *check = NULL;
        return glove_supervisor_policy_decode_ex(text, strlen(text), &check, NULL, 0, err);
}

static int generate(struct gen *g, struct glove_error *err) {
        const struct glove_supervisor_adapter *a = glove_supervisor_adapter_find(g->runtime);
        if (g->executable) {
                g->canon_exe = canonical("--executable", g->executable, 'f', err);
                if (!g->canon_exe)
                        return -EINVAL;
        } else {
                if (!a)
                        return glove_error_set(err, EINVAL, "policy.discovery_unsupported",
                                               "--search-path: runtime %s is not a native adapter (claude-code, codex, "
                                               "copilot, opencode, pi); pin it with --executable",
                                               g->runtime);
                for (size_t i = 0; i < g->search.n; i++)
                        if (!(g->canon_search[i] = canonical("--search-path", g->search.v[i], 'd', err)))
                                return -EINVAL;
                int r = check_discovery(g, a, err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < g->ro.n; i++)
                if (!(g->canon_ro[i] = canonical("--read-only", g->ro.v[i], 0, err)))
                        return -EINVAL;
        qsort(g->canon_ro, g->ro.n, sizeof(g->canon_ro[0]), by_bytes);
        qsort(g->env.v, g->env.n, sizeof(g->env.v[0]), by_bytes);

        struct glove_host_guided_template t = {
                .runtime_template_id = g->template_id,
                .runtime_id = g->runtime,
                .launch = {
                        .runtime_discovery = g->executable ? NULL : g->runtime,
                        .executable_path = g->executable ? g->canon_exe : "",
                        .executable_search_paths = (const char *const *)g->canon_search,
                        .n_executable_search_paths = g->executable ? 0 : g->search.n,
                        .arguments = g->args.v,
                        .n_arguments = g->args.n,
                        .environment = g->env.v,
                        .n_environment = g->env.n,
                        .read_only_paths = (const char *const *)g->canon_ro,
                        .n_read_only_paths = g->ro.n,
                },
        };
        struct glove_host_guided_options o = { .revision = 1, .templates = &t, .n_templates = 1 };
        _cleanup_json_ json_t *policy = NULL;
        int r = glove_host_guided_policy(&o, &policy, err);
        if (r < 0)
                return r;
        /* gloved's decoder judges the whole policy: the entry alone cannot
         * name aliases or destinations the guided policy does not define,
         * so those (checked above as sorted identifiers) stay out of the
         * copy it sees. */
        r = decode_check(policy, err);
        if (r < 0)
                return r;
        json_t *entry = json_array_get(json_object_get(policy, "runtime_templates"), 0);
        if (!entry)
                return glove_error_set(err, EINVAL, "generate.failed", "the guided policy has no template");
        if (set_ids(entry, "allowed_path_aliases", &g->aliases, err) < 0 ||
            set_ids(entry, "allowed_projection_destinations", &g->dests, err) < 0)
                return -EINVAL;
        json_t *out = g->policy ? policy : entry;
        if (json_dumpf(out, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
                return glove_error_set(err, EIO, "generate.write", "writing stdout failed");
        fputc('\n', stdout);
        return fflush(stdout) == 0 ? 0 : glove_error_set(err, EIO, "generate.write", "writing stdout failed");
}

static int push(struct strv *v, const char *opt, const char *s) {
        if (v->n == MAXN)
                return policy_usage("generate ", "at most %d %s options", MAXN, opt);
        v->v[v->n++] = s;
        return -1;
}

int policy_generate_main(int argc, char **argv) {
        struct gen g = { 0 };
        static const struct option longopts[] = {
                { "runtime", required_argument, NULL, 'r' },  { "executable", required_argument, NULL, 'x' },
                { "search-path", required_argument, NULL, 's' }, { "template-id", required_argument, NULL, 't' },
                { "arg", required_argument, NULL, 'a' },      { "env", required_argument, NULL, 'e' },
                { "read-only", required_argument, NULL, 'o' }, { "alias", required_argument, NULL, 'A' },
                { "destination", required_argument, NULL, 'D' }, { "policy", no_argument, NULL, 'p' },
                { "help", no_argument, NULL, 'h' },           { 0 },
        };
        opterr = 0;
        optind = 1;
        int opt, rc = -1;
        while (rc < 0 && (opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                switch (opt) {
                case 'r': g.runtime = optarg; break;
                case 'x':
                        if (g.executable)
                                rc = policy_usage("generate ", "--executable given twice");
                        g.executable = optarg;
                        break;
                case 't': g.template_id = optarg; break;
                case 's': rc = push(&g.search, "--search-path", optarg); break;
                case 'a': rc = push(&g.args, "--arg", optarg); break;
                case 'e': rc = push(&g.env, "--env", optarg); break;
                case 'o': rc = push(&g.ro, "--read-only", optarg); break;
                case 'A': rc = push(&g.aliases, "--alias", optarg); break;
                case 'D': rc = push(&g.dests, "--destination", optarg); break;
                case 'p': g.policy = true; break;
                case 'h': fputs(generate_help, stdout); return 0;
                case ':': return policy_usage("generate ", "%s needs a value", argv[optind - 1]);
                default: return policy_usage("generate ", "unknown option \"%s\"", argv[optind - 1]);
                }
        }
        if (rc >= 0)
                return rc;
        if (optind < argc)
                return policy_usage("generate ", "unexpected argument \"%s\"", argv[optind]);
        if (!g.runtime || !g.template_id)
                return policy_usage("generate ", "--runtime ID and --template-id ID are required");
        if (!!g.executable == (g.search.n > 0))
                return policy_usage("generate ", "give either --executable PATH or --search-path DIR..., not %s",
                                    g.executable ? "both" : "neither");
        if (g.policy && (g.aliases.n || g.dests.n))
                return policy_usage("generate ", "--policy emits the guided policy, which defines no path aliases "
                                                 "or destinations: drop --alias/--destination, or generate the entry "
                                                 "and add them to your own policy");
        struct glove_error err = { 0 };
        int r = generate(&g, &err);
        gen_clear(&g);
        return r < 0 ? policy_refuse(&err) : POLICY_EXIT_OK;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* glove policy explain (include/glove/host/policy.h; docs/host.md, "glove
 * policy explain" lists every warning and its threshold). The policy is
 * first loaded with gloved's loader; what is explained is the text whose
 * SHA-256 equals the digest of the policy that loader accepted. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "glove/supervisor/adapter.h"
#include "glove/supervisor/policy.h"
#include "policy_internal.h"
#include "shown.h"

/* Warning thresholds (docs/host.md). */
#define LARGE_QUOTA_BYTES (8LL << 30)     /* an access max_bytes above 8 GiB */
#define LARGE_MEMORY_BYTES (16LL << 30)   /* a profile's memory_bytes above 16 GiB */
#define LARGE_DISK_BYTES (16LL << 30)     /* a profile's disk_bytes above 16 GiB */
#define LONG_WALL_TIME_MS (3600000LL)     /* a profile's wall_time_ms above 1 h */

static const char explain_help[] =
        "Usage: glove policy explain --file F [--json]\n"
        "\n"
        "Loads F with the loader gloved uses (as glove policy validate; a refused file\n"
        "is reported with gloved's code) and says what it allows: each runtime\n"
        "template (what it runs or where discovery looks, its arguments, environment\n"
        "names, read-only paths, allowed aliases and destinations), each path alias\n"
        "with its access tuples and quotas, the library destinations, the resource\n"
        "profiles, each egress policy's targets (private ones flagged), the tool\n"
        "policies, and the secret handles and where they are mounted. Then warnings\n"
        "for risky choices (docs/host.md lists them): writable aliases, retained_write,\n"
        "legacy direct_write, private egress targets, wide read-only or alias paths,\n"
        "paths that hold a harness home, credential-looking environment entries, large\n"
        "quotas and limits, secret handles without a mount, a staged closure (a\n"
        "read-only DIR/closures/DIGEST of glove policy stage) that lacks an optional\n"
        "dependency built for this host. Environment values are never printed.\n"
        "An exposure policy (a top-level \"roots\" member, docs/exposures.md) is\n"
        "loaded with gloved's exposure policy loader and explained root by root: its\n"
        "path, target, longest lifetime, modes with quotas and runtime templates\n"
        "(--json: {\"file\",\"kind\":\"exposure_policy\",\"roots\",\"sha256\"}).\n"
        "\n"
        "Options:\n"
        "  --file F     the policy file (absolute)\n"
        "  --json       one JSON object on stdout: {\"file\",\"revision\",\"max_plan_ttl_ms\",\n"
        "               \"sha256\",\"runtime_templates\",\"path_aliases\",\n"
        "               \"library_projection_destinations\",\"resource_profiles\",\n"
        "               \"egress_policies\",\"tool_policy_ids\",\"secrets\",\n"
        "               \"warnings\":[{\"code\",\"path\",\"message\"}]}\n"
        "  -h, --help   show this help\n"
        "\n"
        "Exit status: 0 explained (warnings do not change it), 1 the policy is refused\n"
        "or unreadable, 125 usage error.\n";

struct ex {
        json_t *warnings;
        bool json;
};

static void warn(struct ex *x, const char *code, const char *path, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void warn(struct ex *x, const char *code, const char *path, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_array_append_new(x->warnings, json_pack("{s:s,s:s,s:s}", "code", code, "path", path, "message", msg));
}

/* A path is wide when it is a top-level directory other than the system
 * software ones, a home directory or one above it; /usr, /bin, /sbin, /lib*,
 * /opt's subdirectories and deeper paths are not. (docs/host.md) */
static const char *wide_reason(const char *p) {
        static const char *const system_dirs[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32" };
        for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
                if (strcmp(p, system_dirs[i]) == 0)
                        return NULL;
        const char *which;
        if (policy_harness_home_overlap(p, &which))
                return "it is or holds a harness home";
        const char *home = getenv("HOME");
        if (home && home[0] == '/' && strcmp(home, "/") && glove_path_is_beneath(home, p))
                return "it is or holds your home directory";
        if (strcmp(p, "/home") == 0 || strcmp(p, "/root") == 0 ||
            (strncmp(p, "/home/", 6) == 0 && !strchr(p + 6, '/')))
                return "it is or holds home directories";
        if (!strchr(p + 1, '/'))
                return "it is a whole top-level directory";
        return NULL;
}

static bool credential_name(const char *entry) {
        static const char *const words[] = { "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL" };
        size_t n = strcspn(entry, "=");
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
                size_t w = strlen(words[i]);
                for (size_t k = 0; k + w <= n; k++)
                        if (strncasecmp(entry + k, words[i], w) == 0)
                                return true;
        }
        return false;
}

/* A string from the policy file as it reaches the operator's terminal
 * (shown.h). */
#define S(s) host_shown(s)

static json_t *names_of(json_t *env) {
        json_t *a = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(env, i, v) {
                const char *s = json_string_value(v);
                json_array_append_new(a, json_stringn(s, strcspn(s, "=")));
        }
        return a;
}

static void print_list(const char *label, json_t *a) {
        if (!json_array_size(a))
                return;
        printf("    %s:", label);
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) printf(" %s", S(json_string_value(v)));
        putchar('\n');
}

/* Whether p names a closure glove policy stage wrote: .../closures/<64 hex>. */
static bool staged_closure(const char *p) {
        const char *b = strrchr(p, '/');
        if (!b || strlen(b + 1) != GLOVE_DIGEST_SHA256_HEX_LEN || strspn(b + 1, "0123456789abcdef") != strlen(b + 1))
                return false;
        const char *c = b;
        while (c > p && c[-1] != '/')
                c--;
        return (size_t)(b - c) == 8 && strncmp(c, "closures", 8) == 0;
}

struct missing_ctx {
        struct ex *x;
        const char *id, *closure, *jp;
};

static void optional_missing(void *ctx, const char *pkg, const char *dep) {
        const struct missing_ctx *m = ctx;
        const char *rel = pkg + strlen(m->closure);
        while (*rel == '/')
                rel++;
        warn(m->x, "explain.optional_missing", m->jp,
             "template %s: the staged closure %s lacks %s, an optional dependency of %s built for this host (%s) that "
             "the package loads at run time: the runtime will fail to start; stage it again from a tree that has it "
             "installed",
             m->id, m->closure, dep, rel[0] ? rel : ".", policy_npm_host_platform());
}

static json_t *templates(struct ex *x, json_t *p) {
        json_t *out = json_array();
        size_t i;
        json_t *t;
        if (!x->json)
                puts("runtime templates:");
        json_array_foreach(json_object_get(p, "runtime_templates"), i, t) {
                const char *id = json_string_value(json_object_get(t, "runtime_template_id"));
                const char *rid = json_string_value(json_object_get(t, "runtime_id"));
                json_t *l = json_object_get(t, "launch");
                const char *disc = json_string_value(json_object_get(l, "runtime_discovery"));
                const struct glove_supervisor_adapter *a = glove_supervisor_adapter_find(rid);
                char how[4096];
                if (!l)
                        snprintf(how, sizeof(how), "plan validation only: no launch block, never launched");
                else if (disc)
                        snprintf(how, sizeof(how), "discovers %s in its search directories (the first trusted one)",
                                 a ? a->executable : disc);
                else
                        snprintf(how, sizeof(how), "runs %s",
                                 json_string_value(json_object_get(l, "executable_path")));
                json_t *env = names_of(json_object_get(l, "environment"));
                json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:s,s:O?,s:O?,s:o,s:O?,s:O,s:O,s:s}", "runtime_template_id", id,
                                      "runtime_id", rid, "sandbox_backend",
                                      json_string_value(json_object_get(t, "sandbox_backend")), "adapter", a != NULL,
                                      "launches", how, "arguments", json_object_get(l, "arguments"),
                                      "executable_search_paths", json_object_get(l, "executable_search_paths"),
                                      "environment_names", env, "read_only_paths", json_object_get(l, "read_only_paths"),
                                      "allowed_path_aliases", json_object_get(t, "allowed_path_aliases"),
                                      "allowed_projection_destinations",
                                      json_object_get(t, "allowed_projection_destinations"), "adapter_command_digest",
                                      json_string_value(json_object_get(t, "adapter_command_digest")));
                json_array_append_new(out, o);
                if (!x->json) {
                        printf("  %s (runtime %s%s, %s): %s\n", S(id), S(rid), a ? ", native adapter" : "",
                               S(json_string_value(json_object_get(t, "sandbox_backend"))), S(how));
                        print_list("search directories", json_object_get(l, "executable_search_paths"));
                        print_list("arguments", json_object_get(l, "arguments"));
                        print_list("environment (names)", json_object_get(o, "environment_names"));
                        print_list("read-only paths", json_object_get(l, "read_only_paths"));
                        print_list("allowed path aliases", json_object_get(t, "allowed_path_aliases"));
                        print_list("allowed destinations", json_object_get(t, "allowed_projection_destinations"));
                        if (a)
                                printf("    private home /home/agent%s%s\n", a->managed_env ? ", " : "",
                                       a->managed_env ? a->managed_env : "");
                }
                char jp[256];
                size_t k;
                json_t *v;
                json_array_foreach(json_object_get(l, "read_only_paths"), k, v) {
                        const char *why = wide_reason(json_string_value(v));
                        snprintf(jp, sizeof(jp), "$.runtime_templates[%zu].launch.read_only_paths[%zu]", i, k);
                        if (why)
                                warn(x, "explain.wide_read_only_path", jp,
                                     "template %s mounts %s read-only into every session: %s", id,
                                     json_string_value(v), why);
                        if (staged_closure(json_string_value(v))) {
                                struct missing_ctx m = { x, id, json_string_value(v), jp };
                                policy_npm_closure_missing(json_string_value(v), optional_missing, &m);
                        }
                }
                json_array_foreach(json_object_get(l, "environment"), k, v) {
                        snprintf(jp, sizeof(jp), "$.runtime_templates[%zu].launch.environment[%zu]", i, k);
                        const char *s = json_string_value(v);
                        if (credential_name(s))
                                warn(x, "explain.credential_in_environment", jp,
                                     "template %s sets %.*s, which looks like a credential: its value is in the policy "
                                     "file in clear and visible to the agent; prefer a secret handle",
                                     id, (int)strcspn(s, "="), s);
                }
        }
        return out;
}

static json_t *aliases(struct ex *x, json_t *p) {
        json_t *out = json_array();
        size_t i;
        json_t *al;
        if (!x->json && json_array_size(json_object_get(p, "path_aliases")))
                puts("path aliases:");
        json_array_foreach(json_object_get(p, "path_aliases"), i, al) {
                const char *name = json_string_value(json_object_get(al, "alias"));
                const char *host = json_string_value(json_object_get(al, "host_path"));
                const char *target = json_string_value(json_object_get(al, "target_path"));
                json_int_t ttl = json_integer_value(json_object_get(al, "max_ttl_secs"));
                json_array_append(out, al);
                if (!x->json)
                        printf("  %s: %s at %s in the sandbox, grants for at most %lld s\n", S(name), S(host), S(target),
                               (long long)ttl);
                char jp[256];
                const char *why = wide_reason(host);
                if (why) {
                        snprintf(jp, sizeof(jp), "$.path_aliases[%zu].host_path", i);
                        warn(x, "explain.wide_alias_path", jp, "alias %s exposes %s: %s", name, host, why);
                }
                size_t k;
                json_t *t;
                json_array_foreach(json_object_get(al, "access"), k, t) {
                        const char *acc = json_string_value(json_object_get(t, "access"));
                        const char *mat = json_string_value(json_object_get(t, "materialization"));
                        json_int_t max = json_integer_value(json_object_get(t, "max_bytes"));
                        if (!x->json)
                                printf("    %s by %s (create %s, cleanup %s), quota up to %lld bytes\n", S(acc), S(mat),
                                       S(json_string_value(json_object_get(t, "create_policy"))),
                                       S(json_string_value(json_object_get(t, "cleanup_policy"))), (long long)max);
                        snprintf(jp, sizeof(jp), "$.path_aliases[%zu].access[%zu]", i, k);
                        if (strcmp(acc, "read") != 0)
                                warn(x, "explain.writable_alias", jp, "alias %s is writable (%s by %s)", name, acc,
                                     mat);
                        if (strcmp(acc, "retained_write") == 0)
                                warn(x, "explain.retained_write", jp,
                                     "alias %s: retained_write keeps what the agent writes in a retained image after "
                                     "the session, to be reviewed before it is applied",
                                     name);
                        if (strcmp(acc, "direct_write") == 0)
                                warn(x, "explain.direct_write", jp,
                                     "alias %s: direct_write is legacy: parsed, and refused at launch", name);
                        if (max > LARGE_QUOTA_BYTES) {
                                snprintf(jp, sizeof(jp), "$.path_aliases[%zu].access[%zu].max_bytes", i, k);
                                warn(x, "explain.large_quota", jp, "alias %s allows %s quotas up to %lld bytes (over "
                                                                   "8 GiB)", name, acc, (long long)max);
                        }
                }
        }
        return out;
}

static json_t *profiles(struct ex *x, json_t *p) {
        size_t i;
        json_t *pr;
        if (!x->json)
                puts("resource profiles:");
        json_array_foreach(json_object_get(p, "resource_profiles"), i, pr) {
                const char *id = json_string_value(json_object_get(pr, "profile_id"));
#define V(k) ((long long)json_integer_value(json_object_get(pr, k)))
                if (!x->json)
                        printf("  %s: cpu %lld ms, memory %lld bytes, %lld pids, wall %lld ms, disk %lld bytes, "
                               "terminal output %lld bytes\n",
                               S(id), V("cpu_time_ms"), V("memory_bytes"), V("pids"), V("wall_time_ms"), V("disk_bytes"),
                               V("terminal_output_bytes"));
                char jp[256];
                if (V("memory_bytes") > LARGE_MEMORY_BYTES) {
                        snprintf(jp, sizeof(jp), "$.resource_profiles[%zu].memory_bytes", i);
                        warn(x, "explain.large_limit", jp, "profile %s allows %lld bytes of memory (over 16 GiB)", id,
                             V("memory_bytes"));
                }
                if (V("disk_bytes") > LARGE_DISK_BYTES) {
                        snprintf(jp, sizeof(jp), "$.resource_profiles[%zu].disk_bytes", i);
                        warn(x, "explain.large_limit", jp, "profile %s allows %lld bytes of disk (over 16 GiB)", id,
                             V("disk_bytes"));
                }
                if (V("wall_time_ms") > LONG_WALL_TIME_MS) {
                        snprintf(jp, sizeof(jp), "$.resource_profiles[%zu].wall_time_ms", i);
                        warn(x, "explain.large_limit", jp, "profile %s runs up to %lld ms (over an hour)", id,
                             V("wall_time_ms"));
                }
#undef V
        }
        return json_incref(json_object_get(p, "resource_profiles"));
}

static json_t *egress(struct ex *x, json_t *p) {
        json_t *out = json_array();
        json_t *defined = json_object_get(p, "egress_policies");
        size_t i;
        json_t *id;
        if (!x->json)
                puts("egress policies:");
        json_array_foreach(json_object_get(p, "egress_policy_ids"), i, id) {
                const char *name = json_string_value(id);
                json_t *targets = NULL;
                size_t k, pi = 0;
                json_t *e;
                json_array_foreach(defined, k, e) if (strcmp(json_string_value(json_object_get(e, "policy_id")), name) ==
                                                      0) {
                        targets = json_object_get(e, "targets");
                        pi = k;
                }
                json_t *list = json_array();
                if (!x->json)
                        printf("  %s: %s\n", S(name), json_array_size(targets) ? "may connect to" : "no network at all");
                json_t *t;
                json_array_foreach(targets, k, t) {
                        const char *host = json_string_value(json_object_get(t, "host"));
                        json_int_t port = json_integer_value(json_object_get(t, "port"));
                        bool priv = json_is_true(json_object_get(t, "allow_private"));
                        json_array_append_new(list, json_pack("{s:s,s:I,s:b}", "host", host, "port", port, "private",
                                                              priv));
                        if (!x->json)
                                printf("    %s port %lld%s\n", S(host), (long long)port,
                                       priv ? " (PRIVATE address allowed)" : "");
                        if (priv) {
                                char jp[256];
                                snprintf(jp, sizeof(jp), "$.egress_policies[%zu].targets[%zu]", pi, k);
                                warn(x, "explain.private_egress", jp,
                                     "egress policy %s reaches %s:%lld, a loopback, private or local address: "
                                     "the agent can talk to services on this host or network",
                                     name, host, (long long)port);
                        }
                }
                json_array_append_new(out, json_pack("{s:s,s:o}", "policy_id", name, "targets", list));
        }
        return out;
}

static json_t *secrets(struct ex *x, json_t *p) {
        json_t *out = json_array();
        json_t *mounts = json_object_get(p, "secret_mounts");
        size_t i;
        json_t *h;
        if (!x->json && json_array_size(json_object_get(p, "secret_handles")))
                puts("secret handles:");
        json_array_foreach(json_object_get(p, "secret_handles"), i, h) {
                const char *name = json_string_value(h);
                json_t *m = NULL;
                size_t k;
                json_t *e;
                json_array_foreach(mounts, k, e) if (strcmp(json_string_value(json_object_get(e, "handle")), name) == 0)
                        m = e;
                if (m) {
                        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s}", "handle", name, "runtime_id",
                                                             json_string_value(json_object_get(m, "runtime_id")),
                                                             "source_path",
                                                             json_string_value(json_object_get(m, "source_path")),
                                                             "target_path",
                                                             json_string_value(json_object_get(m, "target_path"))));
                        if (!x->json)
                                printf("  %s: %s, leased and mounted writable at %s for runtime %s\n", S(name),
                                       S(json_string_value(json_object_get(m, "source_path"))),
                                       S(json_string_value(json_object_get(m, "target_path"))),
                                       S(json_string_value(json_object_get(m, "runtime_id"))));
                } else {
                        json_array_append_new(out, json_pack("{s:s,s:n}", "handle", name, "target_path"));
                        if (!x->json)
                                printf("  %s: not mounted (no secret_mounts entry)\n", S(name));
                        char jp[64];
                        snprintf(jp, sizeof(jp), "$.secret_handles[%zu]", i);
                        warn(x, "explain.secret_unmounted", jp,
                             "secret handle %s has no secret_mounts entry: a plan may name it, but nothing is mounted",
                             name);
                }
        }
        return out;
}

/* Reads the file again; its SHA-256 must be the loaded policy's. */
static int reread(const char *file, const char *digest, json_t **out, struct glove_error *err) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = glove_file_read_bounded(AT_FDCWD, file, O_NOFOLLOW | O_NONBLOCK, GLOVE_POLICY_MAX_BYTES, &buf, &len,
                                        err);
        if (r < 0)
                return r;
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        r = glove_digest_sha256(buf, len, md, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(md, sizeof(md), hex, sizeof(hex));
        if (strcmp(hex, digest) != 0)
                return glove_error_set(err, EAGAIN, "policy.file_changed", "%s: changed while it was explained", file);
        *out = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        return *out ? 0 : glove_error_set(err, EINVAL, "policy.invalid_json", "%s: not JSON", file);
}

int policy_explain_main(int argc, char **argv) {
        const char *file;
        struct ex x = { .json = false };
        int rc = policy_file_options("explain ", explain_help, argc, argv, true, &file, &x.json);
        if (rc >= 0)
                return rc;
        if (policy_is_exposure_file(file))
                return policy_exposure_explain(file, x.json);
        struct glove_error err = { 0 };
        _cleanup_policy_ struct glove_supervisor_policy *pol = NULL;
        if (glove_supervisor_policy_load(file, geteuid(), &pol, &err) < 0)
                return policy_refuse(&err);
        _cleanup_json_ json_t *p = NULL;
        if (reread(file, glove_supervisor_policy_digest(pol), &p, &err) < 0)
                return policy_refuse(&err);
        _cleanup_json_ json_t *warnings = json_array();
        x.warnings = warnings;
        if (!x.json)
                printf("%s: revision %lld; plans live at most %lld ms; sha256 %s\n", S(file),
                       (long long)glove_supervisor_policy_revision(pol),
                       (long long)glove_supervisor_policy_max_plan_ttl_ms(pol), glove_supervisor_policy_digest(pol));
        json_t *t = templates(&x, p);
        json_t *a = aliases(&x, p);
        if (!x.json && json_array_size(json_object_get(p, "library_projection_destinations"))) {
                puts("library projection destinations:");
                size_t i;
                json_t *d;
                json_array_foreach(json_object_get(p, "library_projection_destinations"), i, d)
                        printf("  %s: bundles mounted read-only under %s\n",
                               S(json_string_value(json_object_get(d, "alias"))),
                               S(json_string_value(json_object_get(d, "target_path"))));
        }
        json_t *pr = profiles(&x, p);
        json_t *eg = egress(&x, p);
        if (!x.json) {
                printf("tool policies:");
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(p, "tool_policy_ids"), i, v) printf(" %s", S(json_string_value(v)));
                putchar('\n');
        }
        json_t *se = secrets(&x, p);
        if (x.json) {
                json_t *o = json_pack("{s:s,s:I,s:I,s:s,s:o,s:o,s:O,s:o,s:o,s:O,s:o,s:O}", "file", file, "revision",
                                      (json_int_t)glove_supervisor_policy_revision(pol), "max_plan_ttl_ms",
                                      (json_int_t)glove_supervisor_policy_max_plan_ttl_ms(pol), "sha256",
                                      glove_supervisor_policy_digest(pol), "runtime_templates", t, "path_aliases", a,
                                      "library_projection_destinations",
                                      json_object_get(p, "library_projection_destinations"), "resource_profiles", pr,
                                      "egress_policies", eg, "tool_policy_ids", json_object_get(p, "tool_policy_ids"),
                                      "secrets", se, "warnings", warnings);
                if (o)
                        json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS);
                fputc('\n', stdout);
                json_decref(o);
        } else {
                json_decref(t);
                json_decref(a);
                json_decref(pr);
                json_decref(eg);
                json_decref(se);
                size_t i;
                json_t *w;
                if (json_array_size(warnings) == 0)
                        puts("warnings: none");
                json_array_foreach(warnings, i, w) printf("warning: %s: %s: %s\n",
                                                          S(json_string_value(json_object_get(w, "code"))),
                                                          S(json_string_value(json_object_get(w, "path"))),
                                                          S(json_string_value(json_object_get(w, "message"))));
        }
        return POLICY_EXIT_OK;
}

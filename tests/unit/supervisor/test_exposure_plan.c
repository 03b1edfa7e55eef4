/* SPDX-License-Identifier: Apache-2.0 */
/* Plans naming path exposures (plan.h, glove_supervisor_plan_validate_ex)
 * and their preparation (prepare.h), against a real exposure registry
 * (exposure.h) in a fresh directory below the working directory (the build
 * directory; /tmp is a reserved sandbox target). Needs no privilege: read
 * binds and ephemeral copies are prepared, not mounted. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/container/mount_plan.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/launch.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/prepare.h"
#include "helpers.h"

#define NOW FIXTURE_NOW_MS

static char base[PATH_MAX];

static void rm_rf(const char *p) {
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", p);
        assert_int_equal(system(cmd), 0);
}

static void mkdirf(mode_t mode, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mkdirf(mode_t mode, const char *fmt, ...) {
        char p[PATH_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p, sizeof(p), fmt, ap);
        va_end(ap);
        assert_true(mkdir(p, mode) == 0 || errno == EEXIST);
}

/* ---- the registry ---- */

struct reg {
        struct glove_exposure_policy *policy;
        struct glove_exposures *x;
        char journal[PATH_MAX];
};

/* Roots: "a" (BASE/src-a at /project; read+bind and ephemeral copy, both
 * 1 MiB; templates codex-plan-only, codex-safe, t), "b" (BASE/src-b at
 * /workspace/inner, inside the fixture policy's workspace alias target),
 * "c" (BASE/src-c at /opt, above the libraries destination). */
static void reg_open(struct reg *g, int64_t now) {
        *g = (struct reg){ 0 };
        static const char *const roots[][2] = { { "a", "/project" }, { "b", "/workspace/inner" }, { "c", "/opt" } };
        char text[8192];
        size_t n = (size_t)snprintf(text, sizeof(text), "{\"schema_version\":1,\"roots\":[");
        for (size_t i = 0; i < 3; i++)
                n += (size_t)snprintf(
                        text + n, sizeof(text) - n,
                        "%s{\"root_id\":\"%s\",\"path\":\"%s/src-%s\",\"target_path\":\"%s\",\"max_ttl_secs\":3600,"
                        "\"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\","
                        "\"cleanup_policy\":\"remove\",\"max_bytes\":1048576},"
                        "{\"access\":\"read\",\"materialization\":\"bind\",\"cleanup_policy\":\"retain\","
                        "\"max_bytes\":1048576}],"
                        "\"runtime_template_ids\":[\"codex-plan-only\",\"codex-safe\",\"t\"]}",
                        i ? "," : "", roots[i][0], base, roots[i][0], roots[i][1]);
        snprintf(text + n, sizeof(text) - n, "]}");
        struct glove_error err = { 0 };
        char path[256] = "";
        if (glove_exposure_policy_decode(text, strlen(text), &g->policy, path, sizeof(path), &err) < 0)
                fail_msg("exposure policy: %s: %s", err.code, err.message);
        snprintf(g->journal, sizeof(g->journal), "%s/state/exposures.journal", base);
        struct glove_exposures_options o = { .policy = g->policy, .journal_path = g->journal, .owner = getuid() };
        if (glove_exposures_open(&o, now, &g->x, &err) < 0)
                fail_msg("exposures: %s: %s", err.code, err.message);
}

static void reg_close(struct reg *g) {
        glove_exposures_close(g->x);
        glove_exposure_policy_free(g->policy);
        g->x = NULL;
        g->policy = NULL;
}

/* Enrolls BASE/src-ROOT/NAME (made here) for ttl_secs (0: the root's),
 * runtimes (NULL: the root's); copies its id into id. */
static void enroll(struct reg *g, const char *root, const char *name, int64_t ttl, const char *const *runtimes,
                   int64_t now, char id[GLOVE_EXPOSURE_ID_SIZE]) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/src-%s/%s", base, root, name);
        assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
        struct glove_exposure_request req = { .path = p, .ttl_secs = ttl, .runtime_template_ids = runtimes };
        struct glove_error err = { 0 };
        json_t *res = NULL;
        if (glove_exposures_create(g->x, &req, now, &res, &err) < 0)
                fail_msg("create %s: %s: %s", p, err.code, err.message);
        snprintf(id, GLOVE_EXPOSURE_ID_SIZE, "%s", json_string_value(json_object_get(res, "exposure_id")));
        assert_int_equal(strlen(id), GLOVE_EXPOSURE_ID_SIZE - 1);
        json_decref(res);
}

static void revoke_exp(struct reg *g, const char *id, int64_t now) {
        struct glove_error err = { 0 };
        if (glove_exposures_revoke(g->x, id, 0, now, NULL, &err) < 0)
                fail_msg("revoke: %s: %s", err.code, err.message);
}

/* ---- plans: the fixture plan with other grants ---- */

static json_t *exp_grant(const char *id, int64_t gen, const char *access, const char *mat, const char *cleanup,
                         int64_t max, int64_t ttl) {
        return json_pack("{s:s,s:s,s:I,s:s,s:s,s:I,s:I}", "access", access, "cleanup_policy", cleanup,
                         "exposure_generation", (json_int_t)gen, "exposure_id", id, "materialization", mat,
                         "max_bytes", (json_int_t)max, "ttl_secs", (json_int_t)ttl);
}

static json_t *ws_grant(void) {
        return json_pack("{s:s,s:s,s:s,s:s,s:i,s:i}", "access", "ephemeral_write", "alias", "workspace",
                         "cleanup_policy", "remove", "materialization", "copy", "max_bytes", 1048576, "ttl_secs", 60);
}

/* The fixture plan with grants (reference stolen) and expiry expires. */
static char *plan_with(json_t *grants, int64_t expires, size_t *len) {
        size_t n;
        _cleanup_free_ char *text = fixture_read("plan/valid.json", &n);
        json_t *p = json_loads(text, 0, NULL);
        assert_non_null(p);
        assert_int_equal(json_object_set_new(p, "path_grants", grants), 0);
        assert_int_equal(json_object_set_new(p, "expires_at_ms", json_integer(expires)), 0);
        char *out = NULL;
        assert_int_equal(glove_json_encode_canonical(p, &out, len, NULL), 0);
        json_decref(p);
        return out;
}

static struct glove_supervisor_policy *fixture_policy(void) {
        size_t len;
        _cleanup_free_ char *text = fixture_read("policy/valid.json", &len);
        struct glove_supervisor_policy *p = NULL;
        struct glove_error err = { 0 };
        if (glove_supervisor_policy_decode(text, len, &p, &err) < 0)
                fail_msg("policy: %s: %s", err.code, err.message);
        return p;
}

static void verdict_of(const struct glove_supervisor_policy *p, const struct glove_exposures *x, json_t *grants,
                       int64_t expires, int64_t now, struct glove_plan_verdict *v) {
        size_t len;
        _cleanup_free_ char *plan = plan_with(grants, expires, &len);
        struct glove_error err = { 0 };
        if (glove_supervisor_plan_validate_ex(p, x, plan, len, now, v, &err) < 0)
                fail_msg("validate: %s: %s", err.code, err.message);
}

static void dump(const struct glove_plan_verdict *v) {
        for (size_t i = 0; i < v->n_reasons; i++)
                print_error("  reason %s@%s\n", v->reasons[i].code, v->reasons[i].path);
}

/* The verdict has exactly one reason, code at path. */
static void expect_one(const struct glove_plan_verdict *v, const char *code, const char *path) {
        if (v->valid || v->n_reasons_total != 1 || strcmp(v->reasons[0].code, code) != 0 ||
            strcmp(v->reasons[0].path, path) != 0) {
                dump(v);
                fail_msg("expected exactly %s@%s", code, path);
        }
}

/* A single exposure grant (with the workspace alias after it) whose one
 * reason is code, at the member glove_exposures_check_grant names. */
static void expect_grant_reason(const struct glove_supervisor_policy *p, const struct glove_exposures *x,
                                const char *id, int64_t gen, const char *access, const char *mat,
                                const char *cleanup, int64_t max, int64_t ttl, int64_t expires, int64_t now,
                                const char *code) {
        const struct glove_exposure_grant eg = {
                .exposure_id = id, .generation = gen, .access = access, .materialization = mat,
                .cleanup_policy = cleanup, .max_bytes = max, .ttl_secs = ttl,
                .runtime_template_id = "codex-safe", .plan_expires_at_ms = expires,
        };
        const char *member = NULL;
        const char *direct = glove_exposures_check_grant(x, &eg, now, &member);
        if (!direct || strcmp(direct, code) != 0)
                fail_msg("check_grant gives %s, the test expects %s", direct ? direct : "(admissible)", code);
        char want[128];
        snprintf(want, sizeof(want), "$.path_grants[0]%s%s", member ? "." : "", member ? member : "");
        struct glove_plan_verdict v;
        verdict_of(p, x, json_pack("[o,o]", exp_grant(id, gen, access, mat, cleanup, max, ttl), ws_grant()), expires,
                   now, &v);
        expect_one(&v, code, want);
}

static void test_validate(void **state) {
        (void)state;
        struct glove_supervisor_policy *p = fixture_policy();
        struct reg g;
        reg_open(&g, NOW);
        char e1[GLOVE_EXPOSURE_ID_SIZE], e2[GLOVE_EXPOSURE_ID_SIZE], e3[GLOVE_EXPOSURE_ID_SIZE],
                e4[GLOVE_EXPOSURE_ID_SIZE], e5[GLOVE_EXPOSURE_ID_SIZE], e6[GLOVE_EXPOSURE_ID_SIZE],
                eb[GLOVE_EXPOSURE_ID_SIZE], ec[GLOVE_EXPOSURE_ID_SIZE];
        static const char *const plan_only[] = { "codex-plan-only", NULL };
        enroll(&g, "a", "p1", 0, NULL, NOW, e1);
        enroll(&g, "a", "p2", 0, NULL, NOW, e2);
        revoke_exp(&g, e2, NOW);
        char e2b[GLOVE_EXPOSURE_ID_SIZE];
        enroll(&g, "a", "p2", 0, NULL, NOW, e2b); /* generation 2, same id */
        assert_string_equal(e2, e2b);
        enroll(&g, "a", "p3", 0, NULL, NOW, e3);
        revoke_exp(&g, e3, NOW);
        enroll(&g, "a", "p4", 120, NULL, NOW, e4); /* expires at NOW + 120 s */
        enroll(&g, "a", "p5", 0, plan_only, NOW, e5);
        enroll(&g, "a", "p6", 0, NULL, NOW, e6);
        enroll(&g, "b", "q1", 0, NULL, NOW, eb);
        enroll(&g, "c", "r1", 0, NULL, NOW, ec);
        const int64_t exp = NOW + 60000;
        struct glove_plan_verdict v;

        /* Admitted: an exposure grant before the workspace alias. */
        verdict_of(p, g.x, json_pack("[o,o]", exp_grant(e1, 1, "ephemeral_write", "copy", "remove", 1048576, 60),
                                     ws_grant()),
                   exp, NOW, &v);
        if (!v.valid) {
                dump(&v);
                fail_msg("the exposure grant should be admitted");
        }
        verdict_of(p, g.x, json_pack("[o]", exp_grant(e1, 1, "read", "bind", "retain", 1048576, 60)), exp, NOW, &v);
        assert_true(v.valid);
        /* The same plan without a registry. */
        verdict_of(p, NULL, json_pack("[o,o]", exp_grant(e1, 1, "ephemeral_write", "copy", "remove", 1048576, 60),
                                      ws_grant()),
                   exp, NOW, &v);
        expect_one(&v, "plan.exposures_unavailable", "$.path_grants[0]");

        /* Each code of glove_exposures_check_grant, at its member. */
        expect_grant_reason(p, g.x, "exp-00000000000000000000000000000000", 1, "ephemeral_write", "copy", "remove",
                            1048576, 60, exp, NOW, "plan.exposure_unknown");
        expect_grant_reason(p, g.x, e2, 1, "ephemeral_write", "copy", "remove", 1048576, 60, exp, NOW,
                            "plan.exposure_superseded");
        expect_grant_reason(p, g.x, e3, 1, "ephemeral_write", "copy", "remove", 1048576, 60, exp, NOW,
                            "plan.exposure_revoked");
        expect_grant_reason(p, g.x, e4, 1, "ephemeral_write", "copy", "remove", 1048576, 60, NOW + 200000 + 60000,
                            NOW + 200000, "plan.exposure_expired");
        expect_grant_reason(p, g.x, e1, 1, "retained_write", "copy", "retain", 1048576, 60, exp, NOW,
                            "plan.exposure_mode_not_allowed");
        expect_grant_reason(p, g.x, e1, 1, "ephemeral_write", "copy", "retain", 1048576, 60, exp, NOW,
                            "plan.exposure_cleanup_mismatch");
        expect_grant_reason(p, g.x, e1, 1, "ephemeral_write", "copy", "remove", 1048577, 60, exp, NOW,
                            "plan.exposure_quota_exceeded");
        expect_grant_reason(p, g.x, e5, 1, "ephemeral_write", "copy", "remove", 1048576, 60, exp, NOW,
                            "plan.exposure_runtime_not_allowed");
        expect_grant_reason(p, g.x, e4, 1, "ephemeral_write", "copy", "remove", 1048576, 61, exp, NOW,
                            "plan.exposure_expires_too_soon");
        /* ... and 60 s more ends exactly at the exposure's expiry. */
        verdict_of(p, g.x, json_pack("[o]", exp_grant(e4, 1, "ephemeral_write", "copy", "remove", 1048576, 60)), exp,
                   NOW, &v);
        assert_true(v.valid);

        /* Ordered by exposure_id or alias, as bytes; unique. */
        const char *lo = strcmp(e1, e6) < 0 ? e1 : e6, *hi = lo == e1 ? e6 : e1;
        verdict_of(p, g.x, json_pack("[o,o]", exp_grant(hi, 1, "read", "bind", "retain", 1, 60),
                                     exp_grant(lo, 1, "read", "bind", "retain", 1, 60)),
                   exp, NOW, &v);
        assert_false(v.valid);
        assert_string_equal(v.reasons[0].code, "plan.array_unsorted");
        assert_string_equal(v.reasons[0].path, "$.path_grants[1]");
        verdict_of(p, g.x, json_pack("[o,o]", exp_grant(e1, 1, "read", "bind", "retain", 1, 60),
                                     exp_grant(e1, 1, "read", "bind", "retain", 1, 60)),
                   exp, NOW, &v);
        assert_false(v.valid);
        assert_string_equal(v.reasons[0].code, "plan.array_duplicate");
        assert_string_equal(v.reasons[0].path, "$.path_grants[1]");
        /* Both an alias and an exposure in one grant. */
        json_t *both = ws_grant();
        json_object_set_new(both, "exposure_id", json_string(e1));
        json_object_set_new(both, "exposure_generation", json_integer(1));
        verdict_of(p, g.x, json_pack("[o]", both), exp, NOW, &v);
        expect_one(&v, "plan.path_grant_target", "$.path_grants[0]");

        /* Sandbox targets: two exposures of root a (both /project), an
         * exposure inside the workspace alias's target, one above the
         * plan's projection destination. */
        verdict_of(p, g.x, json_pack("[o,o]", exp_grant(lo, 1, "read", "bind", "retain", 1, 60),
                                     exp_grant(hi, 1, "read", "bind", "retain", 1, 60)),
                   exp, NOW, &v);
        expect_one(&v, "plan.path_target_overlap", "$.path_grants[1]");
        verdict_of(p, g.x, json_pack("[o,o]", exp_grant(eb, 1, "read", "bind", "retain", 1, 60), ws_grant()), exp, NOW,
                   &v);
        expect_one(&v, "plan.path_target_overlap", "$.path_grants[1]");
        verdict_of(p, g.x, json_pack("[o]", exp_grant(ec, 1, "read", "bind", "retain", 1, 60)), exp, NOW, &v);
        expect_one(&v, "plan.path_target_overlap", "$.path_grants[0]");

        /* A root that cannot be pinned at the registry's open. */
        reg_close(&g);
        char a[PATH_MAX], moved[PATH_MAX];
        snprintf(a, sizeof(a), "%s/src-a", base);
        snprintf(moved, sizeof(moved), "%s/src-a.moved", base);
        assert_int_equal(rename(a, moved), 0);
        reg_open(&g, NOW);
        expect_grant_reason(p, g.x, e1, 1, "ephemeral_write", "copy", "remove", 1048576, 60, exp, NOW,
                            "plan.exposure_root_unavailable");
        reg_close(&g);
        assert_int_equal(rename(moved, a), 0);
        glove_supervisor_policy_free(p);
}

/* ---- prepare ---- */

static int64_t fake_now = NOW;
static int64_t clock_fake(void) {
        return fake_now;
}

/* A launchable policy: template "t" (runtime pyrt, /usr/bin/true, one
 * read-only path BASE/ro), no aliases. */
static struct glove_supervisor_policy *launch_policy(void) {
        char ro[PATH_MAX];
        snprintf(ro, sizeof(ro), "%s/ro", base);
        const char *ro_list[] = { ro };
        const char *args[] = { "--version" };
        const char *env[] = { "PATH=/usr/bin:/bin" };
        struct glove_supervisor_launch_template t = {
                .executable_path = "/usr/bin/true",
                .arguments = args, .n_arguments = 1,
                .environment = env, .n_environment = 1,
                .read_only_paths = ro_list, .n_read_only_paths = 1,
        };
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_supervisor_launch_template_digest(&t, digest, NULL), 0);
        char text[8192];
        snprintf(text, sizeof(text),
                 "{\"schema_version\":1,\"revision\":1,\"max_plan_ttl_ms\":120000,"
                 "\"runtime_templates\":[{\"runtime_template_id\":\"t\",\"runtime_id\":\"pyrt\","
                 "\"adapter_command_digest\":\"%s\",\"sandbox_backend\":\"linux_production\","
                 "\"allowed_path_aliases\":[],\"allowed_projection_destinations\":[],"
                 "\"launch\":{\"executable_path\":\"/usr/bin/true\",\"arguments\":[\"--version\"],"
                 "\"environment\":[\"PATH=/usr/bin:/bin\"],\"read_only_paths\":[\"%s\"]}}],"
                 "\"path_aliases\":[],\"library_projection_destinations\":[],"
                 "\"resource_profiles\":[{\"profile_id\":\"small\",\"cpu_time_ms\":1000,\"memory_bytes\":67108864,"
                 "\"pids\":16,\"wall_time_ms\":2000,\"disk_bytes\":2097152,\"terminal_output_bytes\":1048576}],"
                 "\"egress_policy_ids\":[\"no-network\"],\"tool_policy_ids\":[\"x\"],\"secret_handles\":[],"
                 "\"egress_policies\":[],\"secret_mounts\":[]}",
                 digest, ro);
        struct glove_supervisor_policy *p = NULL;
        struct glove_error err = { 0 };
        if (glove_supervisor_policy_decode(text, strlen(text), &p, &err) < 0)
                fail_msg("policy: %s: %s", err.code, err.message);
        return p;
}

static char *launch_plan(json_t *grants, size_t *len) {
        json_t *p = json_pack("{s:s,s:s,s:I,s:[],s:{s:i,s:i,s:i,s:i,s:i,s:i},s:o,s:i,s:s,s:s,s:s,s:i,s:[],s:s}",
                              "adapter_command_digest", "x", "egress_policy_id", "no-network", "expires_at_ms",
                              (json_int_t)(NOW + 60000), "library_projections", "limits", "cpu_time_ms", 1000,
                              "disk_bytes", 2097152, "memory_bytes", 67108864, "pids", 16, "terminal_output_bytes",
                              1048576, "wall_time_ms", 2000, "path_grants", grants, "policy_revision", 1, "runtime_id",
                              "pyrt", "runtime_template_id", "t", "sandbox_backend", "linux_production",
                              "schema_version", 1, "secret_handles", "tool_policy_id", "x");
        assert_non_null(p);
        char *out = NULL;
        assert_int_equal(glove_json_encode_canonical(p, &out, len, NULL), 0);
        json_decref(p);
        return out;
}

struct pfix {
        struct glove_supervisor_policy *policy;
        struct glove_supervisor_runtime_config cfg;
        char root[PATH_MAX], state[PATH_MAX];
        const char *restricted[2];
};

static void pfix_init(struct pfix *f, const struct glove_exposures *x) {
        *f = (struct pfix){ .policy = launch_policy() };
        snprintf(f->root, sizeof(f->root), "%s/mroot", base);
        snprintf(f->state, sizeof(f->state), "%s/state", base);
        rm_rf(f->root);
        assert_int_equal(mkdir(f->root, 0700), 0);
        int fd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        f->restricted[0] = f->state;
        f->cfg = (struct glove_supervisor_runtime_config){
                .policy = f->policy, .materialization_root = f->root, .materialization_root_fd = fd,
                .restricted = f->restricted, .agent_uid = getuid(), .agent_gid = getgid(),
                .exposures = x, .now_ms = clock_fake,
        };
}

static void pfix_fini(struct pfix *f) {
        close(f->cfg.materialization_root_fd);
        glove_supervisor_policy_free(f->policy);
        rm_rf(f->root);
}

static void expect_prepare_error(struct pfix *f, json_t *grants, const char *code) {
        size_t len;
        _cleanup_free_ char *plan = launch_plan(grants, &len);
        struct glove_supervisor_launch *l = (void *)1;
        struct glove_error err = { 0 };
        int r = glove_supervisor_launch_prepare(&f->cfg, "s1", plan, len, &l, &err);
        assert_true(r < 0);
        assert_null(l);
        if (strcmp(err.code, code) != 0)
                fail_msg("expected %s, got %s: %s", code, err.code, err.message);
        assert_null(strstr(err.message, base)); /* never the project's host path */
}

static void test_prepare(void **state) {
        (void)state;
        fake_now = NOW;
        struct reg g;
        reg_open(&g, NOW);
        char e1[GLOVE_EXPOSURE_ID_SIZE], e2[GLOVE_EXPOSURE_ID_SIZE], e3[GLOVE_EXPOSURE_ID_SIZE];
        enroll(&g, "a", "p1", 0, NULL, NOW, e1);
        enroll(&g, "b", "q1", 0, NULL, NOW, e2);
        enroll(&g, "c", "r1", 120, NULL, NOW, e3);
        char p1[PATH_MAX];
        snprintf(p1, sizeof(p1), "%s/src-a/p1", base);
        struct pfix f;
        pfix_init(&f, g.x);

        /* A read bind and an ephemeral copy (sorted by exposure_id). */
        const char *first = strcmp(e1, e2) < 0 ? e1 : e2;
        bool e1_first = first == e1;
        json_t *ga = exp_grant(e1, 1, "read", "bind", "retain", 1048576, 60);
        json_t *gb = exp_grant(e2, 1, "ephemeral_write", "copy", "remove", 1048576, 60);
        size_t len;
        json_t *grants = e1_first ? json_pack("[o,o]", ga, gb) : json_pack("[o,o]", gb, ga);
        _cleanup_free_ char *plan = launch_plan(grants, &len);
        struct glove_supervisor_launch *l = NULL;
        struct glove_error err = { 0 };
        if (glove_supervisor_launch_prepare(&f.cfg, "s1", plan, len, &l, &err) < 0)
                fail_msg("prepare: %s: %s", err.code, err.message);
        _cleanup_json_ json_t *b = glove_supervisor_launch_binding(l);
        assert_non_null(b);
        _cleanup_free_ char *enc = NULL;
        assert_int_equal(glove_json_encode_canonical(b, &enc, NULL, NULL), 0);
        assert_null(strstr(enc, "/src-")); /* no project path in the binding */
        _cleanup_json_ json_t *cat = glove_exposures_catalog(g.x, NOW);
        json_t *mounts = json_object_get(b, "mounts");
        int seen = 0;
        for (size_t i = 0; i < json_array_size(mounts); i++) {
                json_t *m = json_array_get(mounts, i);
                const char *t = json_string_value(json_object_get(m, "target"));
                bool read = strcmp(t, "/project") == 0, copy = strcmp(t, "/workspace/inner") == 0;
                if (!read && !copy)
                        continue;
                seen++;
                const char *id = read ? e1 : e2;
                assert_string_equal(json_string_value(json_object_get(m, "kind")),
                                    read ? "read_bind" : "ephemeral_tmpfs");
                assert_int_equal(json_is_true(json_object_get(m, "read_only")), read);
                assert_string_equal(json_string_value(json_object_get(m, "exposure_id")), id);
                assert_int_equal(json_integer_value(json_object_get(m, "exposure_generation")), 1);
                assert_null(json_object_get(m, "source"));
                assert_null(json_object_get(m, "alias"));
                const char *want = NULL;
                json_t *ents = json_object_get(cat, "exposures");
                for (size_t k = 0; k < json_array_size(ents); k++)
                        if (strcmp(json_string_value(json_object_get(json_array_get(ents, k), "exposure_id")), id) == 0)
                                want = json_string_value(json_object_get(json_array_get(ents, k), "scope_digest"));
                assert_non_null(want);
                assert_string_equal(json_string_value(json_object_get(m, "scope_digest")), want);
        }
        assert_int_equal(seen, 2);
        assert_string_equal(glove_supervisor_launch_cwd(l), "/workspace/inner");
        /* The mount plan binds the checked directory by its identity. */
        struct glove_mount_plan_params pp = { .uid = getuid(), .gid = getgid() };
        struct glove_mount_plan *mp = NULL;
        assert_int_equal(glove_mount_plan_new(&pp, &mp, &err), 0);
        size_t before = mp->count;
        assert_int_equal(glove_supervisor_launch_add_mounts(mp, l, &err), 0);
        struct stat st;
        assert_int_equal(stat(p1, &st), 0);
        bool bound = false;
        for (size_t i = before; i < mp->count; i++) {
                const struct glove_mount_entry *e = &mp->entries[i];
                if (strcmp(glove_mount_plan_str(mp, e->dest), "project") == 0) {
                        bound = true;
                        assert_int_equal(e->dev, st.st_dev);
                        assert_int_equal(e->ino, st.st_ino);
                }
        }
        assert_true(bound);
        glove_mount_plan_free(mp);
        glove_supervisor_launch_free(l);
        json_t *removed = NULL, *kept = NULL;
        assert_int_equal(glove_supervisor_cleanup(&f.cfg, "s1", plan, len, &removed, &kept, &err), 0);
        assert_int_equal(json_array_size(removed), 1); /* the copy, by its exposure_id */
        assert_string_equal(json_string_value(json_array_get(removed, 0)), e2);
        json_decref(removed);
        json_decref(kept);
        assert_int_equal(glove_supervisor_release_leftovers(&f.cfg, "s1", plan, len, &err), 0);

        /* Sources opened ahead survive a later revoke (the worker never
         * touches the registry); prepare without them sees it. */
        struct glove_supervisor_sources *src = NULL;
        _cleanup_free_ char *plan1 = launch_plan(json_pack("[o]", exp_grant(e1, 1, "read", "bind", "retain", 1, 60)),
                                                 &len);
        assert_int_equal(glove_supervisor_sources_open(&f.cfg, plan1, len, NOW, &src, &err), 0);
        revoke_exp(&g, e1, NOW);
        l = NULL;
        if (glove_supervisor_launch_prepare_sources(&f.cfg, "s2", plan1, len, src, &l, &err) < 0)
                fail_msg("prepare with sources: %s: %s", err.code, err.message);
        glove_supervisor_launch_free(l);
        glove_supervisor_sources_free(src);
        expect_prepare_error(&f, json_pack("[o]", exp_grant(e1, 1, "read", "bind", "retain", 1, 60)),
                             "exposure.revoked");
        assert_int_equal(glove_supervisor_sources_open(&f.cfg, plan1, len, NOW, &src, &err), -EKEYREVOKED);
        assert_string_equal(err.code, "exposure.revoked");
        assert_null(src);

        /* Expiry by the configuration's clock. */
        fake_now = NOW + 121000;
        expect_prepare_error(&f, json_pack("[o]", exp_grant(e3, 1, "read", "bind", "retain", 1, 60)),
                             "exposure.expired");
        fake_now = NOW;

        /* The project replaced at its path. */
        char q1[PATH_MAX], q1old[PATH_MAX];
        snprintf(q1, sizeof(q1), "%s/src-b/q1", base);
        snprintf(q1old, sizeof(q1old), "%s/src-b/q1.old", base);
        assert_int_equal(rename(q1, q1old), 0);
        assert_int_equal(mkdir(q1, 0755), 0);
        expect_prepare_error(&f, json_pack("[o]", exp_grant(e2, 1, "ephemeral_write", "copy", "remove", 1, 60)),
                             "exposure.changed");

        /* No registry. */
        f.cfg.exposures = NULL;
        expect_prepare_error(&f, json_pack("[o]", exp_grant(e2, 1, "ephemeral_write", "copy", "remove", 1, 60)),
                             "launch.exposures_unavailable");
        pfix_fini(&f);
        reg_close(&g);
}

/* freeze_retained names an exposure's image by its exposure_id: with no
 * image there it reports the failure for that name (no root needed). */
static void test_freeze_names(void **state) {
        (void)state;
        struct pfix f;
        pfix_init(&f, NULL);
        _cleanup_json_ json_t *mats = json_pack("[{s:s,s:I,s:s,s:s,s:{s:i,s:i}}]", "exposure_id",
                                                "exp-0123456789abcdef0123456789abcdef", "exposure_generation",
                                                (json_int_t)1, "scope_digest", "00", "kind", "retained_image", "image",
                                                "ino", 1, "size", 1);
        json_t *frozen = NULL;
        struct glove_error err = { 0 };
        assert_true(glove_supervisor_freeze_retained(&f.cfg, "s1", mats, &frozen, &err) < 0);
        assert_int_equal(json_array_size(frozen), 0);
        assert_non_null(strstr(err.message, "exp-0123456789abcdef0123456789abcdef"));
        json_decref(frozen);
        pfix_fini(&f);
}

static int setup(void **state) {
        (void)state;
        char cwd[PATH_MAX];
        assert_non_null(getcwd(cwd, sizeof(cwd)));
        snprintf(base, sizeof(base), "%s/sv-exposure-XXXXXX", cwd);
        assert_non_null(mkdtemp(base));
        mkdirf(0755, "%s/ro", base);
        mkdirf(0700, "%s/state", base);
        mkdirf(0755, "%s/src-a", base);
        mkdirf(0755, "%s/src-b", base);
        mkdirf(0755, "%s/src-c", base);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        rm_rf(base);
        return 0;
}

/* Each test starts with an empty journal. */
static int fresh(void **state) {
        (void)state;
        char j[PATH_MAX];
        snprintf(j, sizeof(j), "%s/state", base);
        rm_rf(j);
        mkdirf(0700, "%s/state", base);
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_validate, fresh),
                cmocka_unit_test_setup(test_prepare, fresh),
                cmocka_unit_test_setup(test_freeze_names, fresh),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

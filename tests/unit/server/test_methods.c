/* SPDX-License-Identifier: Apache-2.0 */
/* Capability derivation and method dispatch (glove/server/methods.h), in
 * process, with the supervisor's policy and plan fixtures. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/server/methods.h"
#include "helpers.h"

#include <sys/stat.h>

#include "glove/remote/runtime.h"
#include "glove/runtime/runtime.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/policy.h"

/* generate.py's NOW_MS: the fixture plans are in their window then. */
#define FIXTURE_NOW_MS 1767225600000LL

static int64_t fixture_now(void) {
        return FIXTURE_NOW_MS;
}

/* A day later: every fixture plan has expired. */
static int64_t day_later(void) {
        return FIXTURE_NOW_MS + 86400000;
}

struct fixture {
        char *dir;
        struct glove_store_receipts *receipts;
        struct glove_store *store;
        struct glove_supervisor_policy *policy;
        struct glove_exposure_policy *xpolicy;
        struct glove_exposures *exposures;
        struct glove_server_components c;
};

static char *fixture_text(const char *rel) {
        char *path = NULL;
        size_t len;
        if (asprintf(&path, "%s/%s", FIXTURE_DIR, rel) < 0)
                abort();
        char *t = (char *)th_read(path, &len);
        t[len] = '\0';
        free(path);
        return t;
}

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        f->dir = th_tempdir();
        struct glove_store_receipts_options ro = { .state_dir = f->dir, .owner = geteuid() };
        assert_int_equal(glove_store_receipts_open(&ro, &f->receipts, NULL), 0);
        f->c = (struct glove_server_components){ .receipts = f->receipts, .now_ms = fixture_now };
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        glove_exposures_close(f->exposures);
        glove_exposure_policy_free(f->xpolicy);
        glove_store_receipts_close(f->receipts);
        glove_store_close(f->store);
        glove_supervisor_policy_free(f->policy);
        th_rmtree(f->dir);
        free(f);
        return 0;
}

/* Dispatches {"id":7,"method":method,"params":params} from a peer of role. */
static json_t *call_as(struct fixture *f, enum glove_server_role role, const char *method, json_t *params) {
        struct glove_protocol_request req = { .id = json_integer(7), .method = method,
                                             .params = params ? params : json_object() };
        json_t *resp = glove_server_dispatch_role(&f->c, NULL, role, &req);
        json_decref(req.id);
        json_decref(req.params);
        assert_non_null(resp);
        assert_int_equal(json_integer_value(json_object_get(resp, "id")), 7);
        return resp;
}

/* Dispatches {"id":7,"method":method,"params":params} from a controller. */
static json_t *call(struct fixture *f, const char *method, json_t *params) {
        return call_as(f, GLOVE_SERVER_ROLE_CONTROLLER, method, params);
}

static const char *error_code(const json_t *resp) {
        return json_string_value(json_object_get(json_object_get(resp, "error"), "code"));
}

static const char *error_message(const json_t *resp) {
        return json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
}

static const char *error_data(const json_t *resp, const char *key) {
        return json_string_value(json_object_get(json_object_get(json_object_get(resp, "error"), "data"), key));
}

static void expect_methods(const json_t *caps, const char *const want[]) {
        json_t *m = json_object_get(caps, "methods");
        size_t n = 0;
        while (want[n])
                n++;
        assert_int_equal(json_array_size(m), n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(json_string_value(json_array_get(m, i)), want[i]);
}

static void test_base_service(void **state) {
        struct fixture *f = *state;
        _cleanup_json_ json_t *caps = glove_server_capabilities(&f->c);
        static const char *const base[] = { "authenticate", "capabilities", "receipts_page", "receipts_ack", NULL };
        expect_methods(caps, base);
        assert_int_equal(json_array_size(json_object_get(caps, "plan_schema_versions")), 0);
        assert_int_equal(json_integer_value(json_object_get(caps, "session_store_schema_version")), 0);
        assert_true(json_is_false(json_object_get(caps, "lifecycle_operational")));
        assert_int_equal(json_array_size(json_object_get(caps, "managed_runtime_ids")), 0);
        assert_int_equal(json_array_size(json_object_get(caps, "resource_mechanisms")), 0);
        assert_int_equal(json_integer_value(json_object_get(caps, "agent_runtime_adapter_schema_version")), 0);
        assert_int_equal(json_integer_value(json_object_get(caps, "refinement_evaluation_protocol_schema_version")), 0);
        assert_true(json_is_null(json_object_get(caps, "policy_revision")));
        /* No managed runtime: no placement. */
        assert_true(json_is_null(json_object_get(caps, "cgroup_placement")));

        /* Not advertised is not found, exactly as unknown. */
        const char *absent[] = { "validate_plan", "create_session", "session_status", "start_session", "attach",
                                 "no_such_method" };
        for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
                _cleanup_json_ json_t *r = call(f, absent[i], NULL);
                assert_string_equal(error_code(r), "method_not_found");
                assert_string_equal(error_data(r, "method"), absent[i]);
        }
        /* A method of this service says which gloved options it lacks; an
         * unknown one only that it is not advertised. */
        _cleanup_json_ json_t *cs = call(f, "create_session", NULL);
        assert_string_equal(error_message(cs), "create_session is not advertised by this service: gloved was started "
                                               "without --session-policy FILE and --session-store FILE");
        assert_string_equal(error_data(cs, "reason"), "option_missing");
        _cleanup_json_ json_t *un = call(f, "no_such_method", NULL);
        assert_string_equal(error_message(un), "the method is not advertised by this service");
        assert_null(error_data(un, "reason"));
        assert_string_equal(json_string_value(json_object_get(caps, "lifecycle_reason")),
                            "gloved was started without --session-policy FILE, --session-store FILE and "
                            "--materialization-root DIR");
        _cleanup_json_ json_t *r = call(f, "capabilities", json_pack("{s:i}", "x", 1));
        assert_string_equal(error_code(r), "invalid_params");
        _cleanup_json_ json_t *again = call(f, "authenticate", NULL);
        assert_string_equal(error_code(again), "auth.already_authenticated");

        /* No path exposures: no rows, and their methods say which options
         * are missing, to the owner role too. */
        assert_int_equal(json_integer_value(json_object_get(caps, "path_exposure_schema_version")), 0);
        assert_true(json_is_array(json_object_get(caps, "owner_methods")));
        assert_int_equal(json_array_size(json_object_get(caps, "owner_methods")), 0);
        const char *xm[] = { "exposure_catalog", "exposure_create", "exposure_revoke", "exposure_list" };
        for (size_t i = 0; i < sizeof(xm) / sizeof(xm[0]); i++) {
                _cleanup_json_ json_t *x = call_as(f, GLOVE_SERVER_ROLE_OWNER, xm[i], NULL);
                assert_string_equal(error_code(x), "method_not_found");
                assert_string_equal(error_data(x, "reason"), "option_missing");
                assert_string_equal(error_data(x, "detail"), "gloved was started without --path-exposure-policy FILE "
                                                             "and --path-exposure-journal FILE");
        }
}

static void test_receipts_methods(void **state) {
        struct fixture *f = *state;
        _cleanup_json_ json_t *body = json_object();
        assert_int_equal(glove_store_receipts_append(f->receipts, "resource.v1", "s1", body, 5, NULL, NULL), 0);
        _cleanup_json_ json_t *p = call(f, "receipts_page", json_pack("{s:i,s:i}", "after_sequence", 0, "limit", 10));
        json_t *res = json_object_get(p, "result");
        assert_int_equal(json_array_size(json_object_get(res, "envelopes")), 1);
        const char *mac = json_string_value(json_object_get(json_object_get(res, "head"), "mac"));
        _cleanup_json_ json_t *bad = call(f, "receipts_ack", json_pack("{s:i,s:s}", "sequence", 0, "head_mac", mac));
        assert_string_equal(error_code(bad), "receipts.ack_mismatch");
        _cleanup_json_ json_t *ok = call(f, "receipts_ack", json_pack("{s:i,s:s}", "sequence", 1, "head_mac", mac));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(ok, "result"), "acknowledged_sequence")), 1);
        _cleanup_json_ json_t *missing = call(f, "receipts_page", json_pack("{s:i}", "limit", 10));
        assert_string_equal(error_code(missing), "invalid_params");
        _cleanup_json_ json_t *range = call(f, "receipts_page", json_pack("{s:i,s:i}", "after_sequence", 0, "limit", 0));
        assert_string_equal(error_code(range), "invalid_params");
}

static void load_policy_and_store(struct fixture *f) {
        size_t len;
        char *text = fixture_text("policy/valid.json");
        len = strlen(text);
        assert_int_equal(glove_supervisor_policy_decode(text, len, &f->policy, NULL), 0);
        free(text);
        char *path = th_join(f->dir, "sessions.journal");
        assert_int_equal(glove_store_open(path, geteuid(), &f->store, NULL, NULL), 0);
        free(path);
        f->c.policy = f->policy;
        f->c.store = f->store;
}

static json_t *create_params(const char *id, const char *key, const char *plan) {
        return json_pack("{s:s,s:s,s:s,s:s}", "session_id", id, "idempotency_key", key, "controller_plan_digest",
                         "1111111111111111111111111111111111111111111111111111111111111111", "plan", plan);
}

static void test_policy_and_store(void **state) {
        struct fixture *f = *state;
        load_policy_and_store(f);
        _cleanup_json_ json_t *caps = glove_server_capabilities(&f->c);
        static const char *const all[] = { "authenticate",  "capabilities",   "receipts_page", "receipts_ack",
                                           "validate_plan", "create_session", "session_status", "list_sessions", NULL };
        expect_methods(caps, all);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(caps, "plan_schema_versions"), 0)), 1);
        assert_int_equal(json_integer_value(json_object_get(caps, "session_store_schema_version")), 1);
        assert_int_equal(json_integer_value(json_object_get(caps, "policy_revision")), 7);

        char *plan = fixture_text("plan/valid.json");
        char *bad_plan = fixture_text("plan/revision_mismatch.json");
        _cleanup_json_ json_t *v = call(f, "validate_plan", json_pack("{s:s}", "plan", plan));
        json_t *vr = json_object_get(v, "result");
        assert_true(json_is_true(json_object_get(vr, "valid")));
        assert_int_equal(strlen(json_string_value(json_object_get(vr, "plan_content_digest"))), 64);
        _cleanup_json_ json_t *vb = call(f, "validate_plan", json_pack("{s:s}", "plan", bad_plan));
        json_t *vbr = json_object_get(vb, "result");
        assert_true(json_is_false(json_object_get(vbr, "valid")));
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(vbr, "reasons"), 0), "code")),
                            "plan.revision_mismatch");
        _cleanup_json_ json_t *vo = call(f, "validate_plan", json_pack("{s:{}}", "plan"));
        assert_string_equal(error_code(vo), "invalid_params");

        _cleanup_json_ json_t *c1 = call(f, "create_session", create_params("s-1", "key-1", plan));
        json_t *c1r = json_object_get(c1, "result");
        assert_string_equal(json_string_value(json_object_get(c1r, "state")), "created");
        assert_string_equal(json_string_value(json_object_get(c1r, "plan_content_digest")),
                            json_string_value(json_object_get(vr, "plan_content_digest")));
        /* A byte-identical retry answers the original record, even after the
         * plan's window has passed. */
        f->c.now_ms = day_later;
        _cleanup_json_ json_t *c2 = call(f, "create_session", create_params("s-1", "key-1", plan));
        assert_true(json_equal(c1, c2));
        _cleanup_json_ json_t *c3 = call(f, "create_session", create_params("s-1", "key-1", bad_plan));
        assert_string_equal(error_code(c3), "session.conflict");
        _cleanup_json_ json_t *c4 = call(f, "create_session", create_params("s-1", "key-2", plan));
        assert_string_equal(error_code(c4), "session.conflict");
        f->c.now_ms = fixture_now;
        _cleanup_json_ json_t *c5 = call(f, "create_session", create_params("s-2", "key-2", bad_plan));
        assert_string_equal(error_code(c5), "plan.invalid");
        assert_non_null(json_object_get(json_object_get(json_object_get(c5, "error"), "data"), "reasons"));
        _cleanup_json_ json_t *c6 = call(f, "create_session", create_params("bad id", "key-3", plan));
        assert_string_equal(error_code(c6), "store.invalid_id");
        assert_int_equal(glove_store_records(f->store), 1);

        bool appended;
        assert_int_equal(glove_store_transition(f->store, "s-1", GLOVE_STORE_SESSION_PREPARING, "", 9,
                                                        &appended, NULL),
                         0);
        _cleanup_json_ json_t *st = call(f, "session_status", json_pack("{s:s}", "session_id", "s-1"));
        json_t *str = json_object_get(st, "result");
        assert_string_equal(json_string_value(json_object_get(str, "state")), "preparing");
        assert_string_equal(json_string_value(json_object_get(str, "idempotency_key")), "key-1");
        json_t *h = json_array_get(json_object_get(str, "history"), 0);
        assert_string_equal(json_string_value(json_object_get(h, "from")), "created");
        assert_string_equal(json_string_value(json_object_get(h, "to")), "preparing");
        _cleanup_json_ json_t *nf = call(f, "session_status", json_pack("{s:s}", "session_id", "s-9"));
        assert_string_equal(error_code(nf), "session.not_found");
        free(plan);
        free(bad_plan);
}

/* validate_plan and create_session judge a grant naming an exposure with
 * the components' registry at gloved's clock; without one it is
 * plan.exposures_unavailable. */
static void test_exposure_plans(void **state) {
        struct fixture *f = *state;
        load_policy_and_store(f);
        char *root = th_join(f->dir, "src"), *proj = th_join(root, "p1"), *jdir = th_join(f->dir, "x");
        assert_int_equal(mkdir(root, 0755), 0);
        assert_int_equal(mkdir(proj, 0755), 0);
        assert_int_equal(mkdir(jdir, 0700), 0);
        char *journal = th_join(jdir, "exposures.journal");
        char *ptext = NULL;
        assert_true(asprintf(&ptext,
                             "{\"schema_version\":1,\"roots\":[{\"root_id\":\"src\",\"path\":\"%s\","
                             "\"target_path\":\"/project\",\"max_ttl_secs\":3600,\"access\":[{\"access\":"
                             "\"ephemeral_write\",\"materialization\":\"copy\",\"cleanup_policy\":\"remove\","
                             "\"max_bytes\":1048576}],\"runtime_template_ids\":[\"codex-safe\"]}]}",
                             root) > 0);
        struct glove_exposure_policy *xp = NULL;
        struct glove_error e = { 0 };
        if (glove_exposure_policy_decode(ptext, strlen(ptext), &xp, NULL, 0, &e) < 0)
                fail_msg("%s: %s", e.code, e.message);
        struct glove_exposures_options o = { .policy = xp, .journal_path = journal, .owner = geteuid() };
        struct glove_exposures *x = NULL;
        assert_int_equal(glove_exposures_open(&o, FIXTURE_NOW_MS, &x, &e), 0);
        struct glove_exposure_request req = { .path = proj };
        json_t *res = NULL;
        assert_int_equal(glove_exposures_create(x, &req, FIXTURE_NOW_MS, &res, &e), 0);
        const char *id = json_string_value(json_object_get(res, "exposure_id"));

        /* The fixture plan with the exposure before the workspace alias. */
        char *text = fixture_text("plan/valid.json");
        json_t *pj = json_loads(text, 0, NULL);
        free(text);
        json_object_set_new(pj, "path_grants",
                            json_pack("[{s:s,s:s,s:i,s:s,s:s,s:i,s:i},O]", "access", "ephemeral_write",
                                      "cleanup_policy", "remove", "exposure_generation", 1, "exposure_id", id,
                                      "materialization", "copy", "max_bytes", 1048576, "ttl_secs", 60,
                                      json_array_get(json_object_get(pj, "path_grants"), 0)));
        char *plan = json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(pj);

        _cleanup_json_ json_t *v0 = call(f, "validate_plan", json_pack("{s:s}", "plan", plan));
        json_t *r0 = json_object_get(json_array_get(json_object_get(json_object_get(v0, "result"), "reasons"), 0),
                                     "code");
        assert_string_equal(json_string_value(r0), "plan.exposures_unavailable");
        f->c.exposures = x;
        _cleanup_json_ json_t *v1 = call(f, "validate_plan", json_pack("{s:s}", "plan", plan));
        assert_true(json_is_true(json_object_get(json_object_get(v1, "result"), "valid")));
        /* Revoked: create_session refuses it with the registry's reason. */
        assert_int_equal(glove_exposures_revoke(x, id, 0, FIXTURE_NOW_MS, NULL, &e), 0);
        _cleanup_json_ json_t *c1 = call(f, "create_session", create_params("s-x", "key-x", plan));
        assert_string_equal(error_code(c1), "plan.invalid");
        json_t *reasons = json_object_get(json_object_get(json_object_get(c1, "error"), "data"), "reasons");
        assert_string_equal(json_string_value(json_object_get(json_array_get(reasons, 0), "code")),
                            "plan.exposure_revoked");
        assert_string_equal(json_string_value(json_object_get(json_array_get(reasons, 0), "path")),
                            "$.path_grants[0].exposure_generation");
        f->c.exposures = NULL;
        free(plan);
        json_decref(res);
        glove_exposures_close(x);
        glove_exposure_policy_free(xp);
        free(ptext);
        free(journal);
        free(jdir);
        free(proj);
        free(root);
}

/* A policy without a store advertises validate_plan only. */
static void test_policy_only(void **state) {
        struct fixture *f = *state;
        load_policy_and_store(f);
        f->c.store = NULL;
        _cleanup_json_ json_t *caps = glove_server_capabilities(&f->c);
        static const char *const some[] = { "authenticate", "capabilities", "receipts_page", "receipts_ack",
                                            "validate_plan", NULL };
        expect_methods(caps, some);
        assert_int_equal(json_integer_value(json_object_get(caps, "session_store_schema_version")), 0);
        _cleanup_json_ json_t *r = call(f, "create_session", create_params("s-1", "key-1", "{}"));
        assert_string_equal(error_code(r), "method_not_found");
        assert_string_equal(error_data(r, "detail"), "gloved was started without --session-store FILE");
        assert_string_equal(json_string_value(json_object_get(caps, "lifecycle_reason")),
                            "gloved was started without --session-store FILE and --materialization-root DIR");
}

/* A managed runtime without a delegated cgroup: the lifecycle methods say
 * the runtime's reason. */
static void test_runtime_not_operational(void **state) {
        struct fixture *f = *state;
        load_policy_and_store(f);
        struct glove_error why = { 0 };
        glove_error_set(&why, EACCES, "cgroup.not_delegated", "cgroups are not delegated to uid 65534");
        struct glove_runtime_options o = { .cgroup_error = -EACCES, .cgroup_why = &why };
        struct glove_runtime *rt = NULL;
        assert_int_equal(glove_runtime_new(&o, &rt, NULL), 0);
        f->c.runtime = rt;
        static const char *const lifecycle[] = { "start_session", "attach", "stop_session" };
        for (size_t i = 0; i < sizeof(lifecycle) / sizeof(lifecycle[0]); i++) {
                _cleanup_json_ json_t *r = call(f, lifecycle[i], NULL);
                assert_string_equal(error_code(r), "method_not_found");
                assert_string_equal(error_data(r, "reason"), "runtime_not_operational");
                assert_string_equal(error_data(r, "detail"), "managed sessions are not operational: "
                                                             "cgroup.not_delegated: cgroups are not delegated to uid 65534");
        }
        _cleanup_json_ json_t *caps = glove_server_capabilities(&f->c);
        assert_true(json_is_false(json_object_get(caps, "lifecycle_operational")));
        assert_string_equal(json_string_value(json_object_get(caps, "lifecycle_reason")),
                            "managed sessions are not operational: cgroup.not_delegated: cgroups are not delegated to "
                            "uid 65534");
        f->c.runtime = NULL;
        glove_runtime_free(rt);
}

/* The construction-only remote runtime (spec session-policy.md, "Capability
 * activation"): the object exists and shows in its row, yet every
 * lifecycle method stays unadvertised and answers method_not_found, and the
 * top level is as without any runtime. */
static void test_remote_construction_only(void **state) {
        struct fixture *f = *state;
        load_policy_and_store(f);
        static const char hex[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        struct glove_remote_backend b = { .host = "builder.example.net", .port = 22, .user = "glove" };
        snprintf(b.container_identity, sizeof(b.container_identity), "registry.example.net/glove/runtime@sha256:%s",
                 hex);
        snprintf(b.container_image_digest, sizeof(b.container_image_digest), "sha256:%s", hex);
        struct glove_remote_runtime *rt = NULL;
        assert_int_equal(glove_remote_runtime_new(&b, &rt, NULL), 0);
        {
                _cleanup_json_ json_t *caps = glove_server_capabilities(&f->c);
                assert_true(json_is_null(json_object_get(caps, "remote_backend")));
        }
        f->c.remote = rt;
        _cleanup_json_ json_t *caps = glove_server_capabilities(&f->c);
        static const char *const all[] = { "authenticate",  "capabilities",   "receipts_page", "receipts_ack",
                                           "validate_plan", "create_session", "session_status", "list_sessions", NULL };
        expect_methods(caps, all);
        assert_true(json_is_false(json_object_get(caps, "lifecycle_operational")));
        assert_int_equal(json_integer_value(json_object_get(caps, "agent_runtime_adapter_schema_version")), 0);
        assert_int_equal(json_array_size(json_object_get(caps, "managed_runtime_ids")), 0);
        assert_int_equal(json_array_size(json_object_get(caps, "resource_mechanisms")), 0);
        assert_int_equal(json_integer_value(json_object_get(caps, "refinement_evaluation_protocol_schema_version")), 0);
        /* Apply is owner-local only: schema 0, whatever is constructed. */
        assert_true(json_is_integer(json_object_get(caps, "apply_schema_version")));
        assert_int_equal(json_integer_value(json_object_get(caps, "apply_schema_version")), 0);
        assert_string_equal(json_string_value(json_object_get(caps, "lifecycle_reason")), GLOVE_REMOTE_NOT_OPERATIONAL_WHY);
        _cleanup_json_ json_t *want = glove_remote_runtime_capabilities(rt);
        assert_true(json_equal(json_object_get(caps, "remote_backend"), want));
        static const char *const lifecycle[] = { "start_session", "attach",       "write_stdin",  "resize",
                                                 "signal",        "detach",       "stop_session", "cleanup_session",
                                                 "retained_changes" };
        for (size_t i = 0; i < sizeof(lifecycle) / sizeof(lifecycle[0]); i++) {
                assert_false(glove_server_method_advertised(&f->c, lifecycle[i]));
                _cleanup_json_ json_t *r = call(f, lifecycle[i], json_pack("{s:s}", "session_id", "s1"));
                assert_string_equal(error_code(r), "method_not_found");
                assert_string_equal(error_data(r, "method"), lifecycle[i]);
                assert_string_equal(error_data(r, "reason"), GLOVE_REMOTE_NOT_OPERATIONAL_REASON);
                assert_string_equal(error_data(r, "detail"), GLOVE_REMOTE_NOT_OPERATIONAL_WHY);
        }
        f->c.remote = NULL;
        glove_remote_runtime_free(rt);
}

/* ---- path exposures ---- */

/* A registry with one root DIR/root (policy built here) and its journal in
 * DIR/x; the project DIR/root/proj exists. */
static void open_exposures(struct fixture *f) {
        char *root = th_join(f->dir, "root"), *proj = th_join(root, "proj"), *xdir = th_join(f->dir, "x");
        assert_int_equal(mkdir(root, 0700), 0);
        assert_int_equal(mkdir(proj, 0700), 0);
        assert_int_equal(mkdir(xdir, 0700), 0);
        _cleanup_json_ json_t *pol = json_pack(
                "{s:i,s:[{s:s,s:s,s:s,s:i,s:[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i}],s:[s,s]}]}", "schema_version", 1,
                "roots", "root_id", "src", "path", root, "target_path", "/workspace", "max_ttl_secs", 86400, "access",
                "access", "ephemeral_write", "materialization", "copy", "cleanup_policy", "remove", "max_bytes",
                1048576, "access", "read", "materialization", "bind", "cleanup_policy", "remove", "max_bytes", 1048576,
                "runtime_template_ids", "codex-safe", "pyrt");
        _cleanup_free_ char *text = json_dumps(pol, JSON_COMPACT | JSON_SORT_KEYS);
        struct glove_error e = { 0 };
        if (glove_exposure_policy_decode(text, strlen(text), &f->xpolicy, NULL, 0, &e) < 0)
                fail_msg("policy: %s: %s", e.code, e.message);
        char *journal = th_join(xdir, "exposures.journal");
        struct glove_exposures_options o = { .policy = f->xpolicy, .journal_path = journal, .owner = geteuid() };
        if (glove_exposures_open(&o, FIXTURE_NOW_MS, &f->exposures, &e) < 0)
                fail_msg("open: %s: %s", e.code, e.message);
        f->c.exposures = f->exposures;
        free(journal);
        free(root);
        free(proj);
        free(xdir);
}

static void test_exposures(void **state) {
        struct fixture *f = *state;
        open_exposures(f);
        _cleanup_json_ json_t *caps = glove_server_capabilities(&f->c);
        static const char *const base[] = { "authenticate", "capabilities", "receipts_page", "receipts_ack",
                                            "exposure_catalog", NULL };
        expect_methods(caps, base);
        _cleanup_json_ json_t *owner = json_pack("[s,s,s]", "exposure_create", "exposure_list", "exposure_revoke");
        assert_true(json_equal(json_object_get(caps, "owner_methods"), owner));
        assert_int_equal(json_integer_value(json_object_get(caps, "path_exposure_schema_version")), 1);
        assert_true(glove_server_method_advertised(&f->c, "exposure_catalog"));

        char *proj = NULL;
        assert_true(asprintf(&proj, "%s/root/proj", f->dir) > 0);
        /* A controller reads the catalog, and nothing else of exposures. */
        const char *om[] = { "exposure_create", "exposure_revoke", "exposure_list" };
        for (size_t i = 0; i < sizeof(om) / sizeof(om[0]); i++) {
                _cleanup_json_ json_t *x = call(f, om[i], json_pack("{s:s}", "path", proj));
                assert_string_equal(error_code(x), "auth.owner_required");
                assert_non_null(strstr(error_message(x), "RUNTIME/owner-secret"));
                assert_string_equal(error_data(x, "method"), om[i]);
        }
        _cleanup_json_ json_t *empty = call(f, "exposure_catalog", NULL);
        assert_int_equal(json_array_size(json_object_get(json_object_get(empty, "result"), "exposures")), 0);
        _cleanup_json_ json_t *cx = call(f, "exposure_catalog", json_pack("{s:i}", "x", 1));
        assert_string_equal(error_code(cx), "invalid_params");

        /* Strict params. */
        json_t *bad[] = {
                json_pack("{s:s,s:i}", "path", proj, "x", 1),
                json_pack("{s:i}", "path", 1),
                json_pack("{}"),
                json_pack("{s:s,s:s}", "path", proj, "ttl_secs", "1"),
                json_pack("{s:s,s:i}", "path", proj, "ttl_secs", 0),
                json_pack("{s:s,s:[]}", "path", proj, "modes"),
                json_pack("{s:s,s:[i]}", "path", proj, "modes", 1),
                json_pack("{s:s,s:s}", "path", proj, "runtime_template_ids", "pyrt"),
                json_pack("{s:s,s:i}", "path", proj, "label", 3),
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_json_ json_t *x = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_create", bad[i]);
                assert_string_equal(error_code(x), "invalid_params");
        }
        /* The registry's refusals pass through. */
        _cleanup_json_ json_t *out = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_create",
                                             json_pack("{s:s}", "path", f->dir));
        assert_string_equal(error_code(out), "exposure.outside_roots");
        _cleanup_json_ json_t *ttl = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_create",
                                             json_pack("{s:s,s:i}", "path", proj, "ttl_secs", 86401));
        assert_string_equal(error_code(ttl), "exposure.ttl_exceeded");

        _cleanup_json_ json_t *cr = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_create",
                                            json_pack("{s:s,s:s,s:i,s:[s],s:[s]}", "path", proj, "label", "demo",
                                                      "ttl_secs", 3600, "modes", "read", "runtime_template_ids",
                                                      "pyrt"));
        json_t *entry = json_object_get(cr, "result");
        assert_non_null(entry);
        assert_string_equal(json_string_value(json_object_get(entry, "path")), proj);
        assert_int_equal(json_integer_value(json_object_get(entry, "generation")), 1);
        const char *id = json_string_value(json_object_get(entry, "exposure_id"));
        assert_non_null(id);
        _cleanup_json_ json_t *again = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_create",
                                               json_pack("{s:s}", "path", proj));
        assert_string_equal(error_code(again), "exposure.live");
        /* On the live project the request's own mistake is reported, not exposure.live. */
        _cleanup_json_ json_t *badmode = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_create",
                                                 json_pack("{s:s,s:[s]}", "path", proj, "modes", "write"));
        assert_string_equal(error_code(badmode), "exposure.mode_not_allowed");
        /* Repeated modes or runtime ids are invalid_params naming the repeat. */
        json_t *dups[] = {
                json_pack("{s:s,s:[s,s]}", "path", proj, "modes", "read", "read"),
                json_pack("{s:s,s:[s,s,s]}", "path", proj, "runtime_template_ids", "pyrt", "x", "pyrt"),
        };
        for (size_t i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
                _cleanup_json_ json_t *x = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_create", dups[i]);
                assert_string_equal(error_code(x), "invalid_params");
                json_t *err = json_object_get(x, "error");
                assert_string_equal(json_string_value(json_object_get(json_object_get(err, "data"), "reason")),
                                    "json.duplicate_item");
                assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "repeats"));
        }

        /* The controller's catalog has the entry, and no path. */
        _cleanup_json_ json_t *cat = call(f, "exposure_catalog", NULL);
        json_t *list = json_object_get(json_object_get(cat, "result"), "exposures");
        assert_int_equal(json_array_size(list), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "exposure_id")), id);
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "label")), "demo");
        _cleanup_free_ char *dump = json_dumps(cat, JSON_COMPACT);
        assert_null(strstr(dump, f->dir));
        assert_null(strstr(dump, "\"root_id\""));
        assert_null(strstr(dump, "\"path\""));
        _cleanup_json_ json_t *ls = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_list", NULL);
        json_t *owned = json_array_get(json_object_get(json_object_get(ls, "result"), "exposures"), 0);
        assert_string_equal(json_string_value(json_object_get(owned, "path")), proj);
        assert_string_equal(json_string_value(json_object_get(owned, "root_id")), "src");

        /* Revoke: strict params, then the live generation. */
        _cleanup_json_ json_t *rb = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_revoke",
                                            json_pack("{s:s,s:i}", "exposure_id", id, "generation", 0));
        assert_string_equal(error_code(rb), "invalid_params");
        _cleanup_json_ json_t *ru = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_revoke",
                                            json_pack("{s:s}", "exposure_id", "exp-00000000000000000000000000000000"));
        assert_string_equal(error_code(ru), "exposure.unknown");
        /* The id with a NUL and more after it is not the id. */
        char nul_id[64];
        size_t nl = (size_t)snprintf(nul_id, sizeof(nul_id), "%s", id);
        memcpy(nul_id + nl, "\0x", 3);
        _cleanup_json_ json_t *rn = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_revoke",
                                            json_pack("{s:s#}", "exposure_id", nul_id, (int)(nl + 2)));
        assert_string_equal(error_code(rn), "invalid_params");
        _cleanup_json_ json_t *rv = call_as(f, GLOVE_SERVER_ROLE_OWNER, "exposure_revoke",
                                            json_pack("{s:s,s:i}", "exposure_id", id, "generation", 1));
        assert_string_equal(json_string_value(json_object_get(json_object_get(rv, "result"), "state")), "revoked");
        _cleanup_json_ json_t *cat2 = call(f, "exposure_catalog", NULL);
        assert_string_equal(json_string_value(json_object_get(
                                    json_array_get(json_object_get(json_object_get(cat2, "result"), "exposures"), 0),
                                    "state")),
                            "revoked");
        free(proj);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_base_service, setup, teardown),
                cmocka_unit_test_setup_teardown(test_receipts_methods, setup, teardown),
                cmocka_unit_test_setup_teardown(test_policy_and_store, setup, teardown),
                cmocka_unit_test_setup_teardown(test_policy_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exposure_plans, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_not_operational, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remote_construction_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exposures, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

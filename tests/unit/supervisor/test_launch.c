/* SPDX-License-Identifier: Apache-2.0 */
/* glove/supervisor/launch.h: runtime_launch_template_digest against the
 * vectors computed independently by tests/vectors/digest_vectors.py (the
 * same values are in docs/digests.md); pinned-spec-example and
 * pinned-no-read-only are the vectors (e66c0652..., 0129a3a9...). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/supervisor/launch.h"
#include "glove/supervisor/policy.h"

/* The checked-in Cloudflare OS template (spec session-policy.md,
 * "Cloudflare OS development template"). */
#define CLOUDFLARE_FIXTURE FIXTURE_DIR "/../cloudflare-os-session-policy.json"

#define LIST(...) ((const char *const[]){ __VA_ARGS__ })
#define N(...) (sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))

static const struct {
        const char *name;
        struct glove_supervisor_launch_template t;
        const char *digest;
} vectors[] = {
        { "pinned-minimal",
          { .executable_path = "/bin/true" },
          "d7c8a14f466bc08a11fbd65b6684eaaf0f33b295e5aee1fa187da2d5988b9241" },
        { "pinned-spec-example",
          { .executable_path = "/usr/bin/true",
            .arguments = LIST("--version"), .n_arguments = 1,
            .environment = LIST("PATH=/usr/bin:/bin", "TERM=xterm-256color"), .n_environment = 2,
            .read_only_paths = LIST("/opt/operator-harness/codex-runtime"), .n_read_only_paths = 1 },
          "e66c0652fedc80fcdfe875761036053f973708ad72207e388c07de41553c4e33" },
        { "pinned-no-read-only",
          { .executable_path = "/usr/bin/true",
            .arguments = LIST("--version"), .n_arguments = 1,
            .environment = LIST("PATH=/usr/bin:/bin", "TERM=xterm-256color"), .n_environment = 2 },
          "0129a3a97cacbef9bd8a2df44ea3b1e01ae8dad706cbe0c27c2237881b5107e7" },
        { "cloudflare-os-dev",
          { .executable_path = "/opt/glove/runtime/cloudflare-os/node-v25/bin/node",
            .arguments = LIST("/opt/glove/runtime/cloudflare-os/closure/scripts/run-local.mjs"), .n_arguments = 1,
            .read_only_paths = LIST("/opt/glove/runtime/cloudflare-os/closure"), .n_read_only_paths = 1 },
          "2c3af3985743cc37adbc120a49290f48ac04ddc1e3bde1aa16fee8301a259cee" },
        { "discovery-codex",
          { .runtime_discovery = "codex", .executable_path = "",
            .executable_search_paths = LIST("/opt/codex/bin", "/usr/local/bin"), .n_executable_search_paths = 2,
            .arguments = LIST("--sandbox", "danger-full-access"), .n_arguments = 2,
            .environment = LIST("TERM=xterm-256color"), .n_environment = 1,
            .read_only_paths = LIST("/opt/codex/lib"), .n_read_only_paths = 1 },
          "63fd57292c3a9526f7a675dd29b6ac1bab272fcfeb4e6a7b6b3be104a946e7e8" },
        { "utf8-argument",
          { .executable_path = "/usr/bin/env",
            .arguments = LIST("--name=caf\xc3\xa9 \xe2\x82\xac"), .n_arguments = 1,
            .environment = LIST("LANG=C.UTF-8"), .n_environment = 1 },
          "a92fac2f46f09cb375f958423a9f521a76d2dc8046a912eb1925bf685b201737" },
};

static void test_vectors(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
                char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
                struct glove_error err = { 0 };
                assert_int_equal(glove_supervisor_launch_template_digest(&vectors[i].t, hex, &err), 0);
                if (strcmp(hex, vectors[i].digest) != 0)
                        fail_msg("%s: got %s, want %s", vectors[i].name, hex, vectors[i].digest);
        }
}

/* Every field is committed: changing any one changes the digest, and
 * moving a string between fields does too (field names, value tags, length
 * prefixes and counts). */
static void test_every_field_committed(void **state) {
        (void)state;
        const struct glove_supervisor_launch_template base = vectors[4].t;
        char want[GLOVE_DIGEST_SHA256_HEX_LEN + 1], got[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_supervisor_launch_template_digest(&base, want, NULL), 0);

        struct glove_supervisor_launch_template t = base;
        t.runtime_discovery = "pi";
        assert_int_equal(glove_supervisor_launch_template_digest(&t, got, NULL), 0);
        assert_string_not_equal(got, want);
        t = base;
        t.n_executable_search_paths = 1;
        assert_int_equal(glove_supervisor_launch_template_digest(&t, got, NULL), 0);
        assert_string_not_equal(got, want);
        t = base;
        t.arguments = LIST("--sandbox", "danger-full-accesS");
        assert_int_equal(glove_supervisor_launch_template_digest(&t, got, NULL), 0);
        assert_string_not_equal(got, want);
        t = base;
        t.n_environment = 0;
        assert_int_equal(glove_supervisor_launch_template_digest(&t, got, NULL), 0);
        assert_string_not_equal(got, want);
        t = base;
        t.n_read_only_paths = 0;
        assert_int_equal(glove_supervisor_launch_template_digest(&t, got, NULL), 0);
        assert_string_not_equal(got, want);

        /* ["ab"] versus ["a","b"]: the length prefixes keep them apart. */
        struct glove_supervisor_launch_template a = { .executable_path = "/x", .arguments = LIST("ab"),
                                                      .n_arguments = 1 };
        struct glove_supervisor_launch_template b = { .executable_path = "/x", .arguments = LIST("a", "b"),
                                                      .n_arguments = 2 };
        assert_int_equal(glove_supervisor_launch_template_digest(&a, want, NULL), 0);
        assert_int_equal(glove_supervisor_launch_template_digest(&b, got, NULL), 0);
        assert_string_not_equal(got, want);
        /* An argument moved into the environment list changes the digest. */
        struct glove_supervisor_launch_template e = { .executable_path = "/x", .environment = LIST("ab"),
                                                      .n_environment = 1 };
        assert_int_equal(glove_supervisor_launch_template_digest(&e, got, NULL), 0);
        assert_string_not_equal(got, want);
        /* An executable path moved into the arguments changes the digest. */
        struct glove_supervisor_launch_template x = { .executable_path = "/x" };
        struct glove_supervisor_launch_template y = { .executable_path = "", .arguments = LIST("/x"),
                                                      .n_arguments = 1 };
        assert_int_equal(glove_supervisor_launch_template_digest(&x, want, NULL), 0);
        assert_int_equal(glove_supervisor_launch_template_digest(&y, got, NULL), 0);
        assert_string_not_equal(got, want);
        /* Discovery with no search paths (a present, empty list) differs
         * from no discovery (both optional fields absent). */
        struct glove_supervisor_launch_template d = { .runtime_discovery = "codex", .executable_path = "" };
        struct glove_supervisor_launch_template nd = { .executable_path = "" };
        assert_int_equal(glove_supervisor_launch_template_digest(&d, want, NULL), 0);
        assert_int_equal(glove_supervisor_launch_template_digest(&nd, got, NULL), 0);
        assert_string_not_equal(got, want);
        /* An empty discovery string is absent, as NULL is. */
        struct glove_supervisor_launch_template pinned = vectors[0].t;
        pinned.runtime_discovery = "";
        assert_int_equal(glove_supervisor_launch_template_digest(&pinned, got, NULL), 0);
        assert_string_equal(got, vectors[0].digest);
}

/* Version 1 and version 2 differ even when the discovery fields would
 * encode as nothing: the version byte and the two extra fields are
 * committed, and a pinned template's search paths have no place. */
static void test_versions_differ(void **state) {
        (void)state;
        char v1[GLOVE_DIGEST_SHA256_HEX_LEN + 1], v2[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        struct glove_supervisor_launch_template p = { .executable_path = "" };
        struct glove_supervisor_launch_template d = { .runtime_discovery = "codex", .executable_path = "" };
        assert_int_equal(glove_supervisor_launch_template_digest(&p, v1, NULL), 0);
        assert_int_equal(glove_supervisor_launch_template_digest(&d, v2, NULL), 0);
        assert_string_not_equal(v1, v2);
        /* The discovery name and the search-path order are committed. */
        struct glove_supervisor_launch_template a = vectors[4].t, b = vectors[4].t;
        b.executable_search_paths = LIST("/usr/local/bin", "/opt/codex/bin");
        assert_int_equal(glove_supervisor_launch_template_digest(&a, v1, NULL), 0);
        assert_int_equal(glove_supervisor_launch_template_digest(&b, v2, NULL), 0);
        assert_string_not_equal(v1, v2);
        /* A search path moved into read_only_paths changes the digest. */
        struct glove_supervisor_launch_template c = { .runtime_discovery = "codex", .executable_path = "",
                                                      .executable_search_paths = LIST("/opt/a"),
                                                      .n_executable_search_paths = 1 };
        struct glove_supervisor_launch_template e = { .runtime_discovery = "codex", .executable_path = "",
                                                      .read_only_paths = LIST("/opt/a"), .n_read_only_paths = 1 };
        assert_int_equal(glove_supervisor_launch_template_digest(&c, v1, NULL), 0);
        assert_int_equal(glove_supervisor_launch_template_digest(&e, v2, NULL), 0);
        assert_string_not_equal(v1, v2);
}

static void test_invalid_arguments(void **state) {
        (void)state;
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        struct glove_error err = { 0 };
        assert_int_equal(glove_supervisor_launch_template_digest(NULL, hex, &err), -EINVAL);
        assert_string_equal(err.code, "launch.invalid_argument");

        struct glove_supervisor_launch_template t = { 0 };
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_launch_template_digest(&t, hex, &err), -EINVAL); /* no executable_path */
        assert_string_equal(err.code, "launch.invalid_argument");

        t.executable_path = "/bin/true";
        t.n_arguments = 2; /* NULL array with a count */
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_launch_template_digest(&t, hex, &err), -EINVAL);

        t.arguments = LIST("a", NULL);
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_launch_template_digest(&t, hex, &err), -EINVAL);

        /* Search paths without discovery have no place in the encoding. */
        struct glove_supervisor_launch_template s = { .executable_path = "/bin/true",
                                                      .executable_search_paths = LIST("/usr/bin"),
                                                      .n_executable_search_paths = 1 };
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_launch_template_digest(&s, hex, &err), -EINVAL);
        assert_string_equal(err.code, "launch.invalid_argument");
        s.runtime_discovery = "";
        glove_error_clear(&err);
        assert_int_equal(glove_supervisor_launch_template_digest(&s, hex, &err), -EINVAL);
}

static const char *const *strings_of(const json_t *a, size_t *n) {
        *n = json_array_size(a);
        const char **v = calloc(*n + 1, sizeof(*v));
        for (size_t i = 0; i < *n; i++)
                v[i] = json_string_value(json_array_get(a, i));
        return v;
}

static int64_t num(const json_t *o, const char *k) {
        assert_true(json_is_integer(json_object_get(o, k)));
        return json_integer_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k) {
        assert_true(json_is_string(json_object_get(o, k)));
        return json_string_value(json_object_get(o, k));
}

/* The fixture's adapter_command_digest is what the canonical code computes
 * from its own launch fields, and those fields are the vector's (whose
 * digest tests/vectors/digest_vectors.py computes independently): an edited
 * path, argument, environment or closure, or a stale digest, fails here.
 * The rest of the template is checked against the spec's words, and the
 * policy decoder accepts the file as it is. */
static void test_cloudflare_fixture(void **state) {
        (void)state;
        json_error_t je;
        _cleanup_json_ json_t *doc = json_load_file(CLOUDFLARE_FIXTURE, JSON_REJECT_DUPLICATES, &je);
        if (!doc)
                fail_msg("%s: %s", CLOUDFLARE_FIXTURE, je.text);
        json_t *templates = json_object_get(doc, "runtime_templates");
        assert_int_equal(json_array_size(templates), 1);
        json_t *t = json_array_get(templates, 0), *launch = json_object_get(t, "launch");
        assert_string_equal(str(t, "runtime_id"), "cloudflare-os");
        assert_string_equal(str(t, "runtime_template_id"), "cloudflare-os-dev");
        assert_string_equal(str(t, "sandbox_backend"), "remote_linux_container");
        assert_null(json_object_get(launch, "runtime_discovery")); /* not a native adapter */
        assert_null(json_object_get(launch, "executable_search_paths"));
        struct glove_supervisor_launch_template lt = { .executable_path = str(launch, "executable_path") };
        _cleanup_free_ const char *const *args = strings_of(json_object_get(launch, "arguments"), &lt.n_arguments);
        _cleanup_free_ const char *const *env = strings_of(json_object_get(launch, "environment"), &lt.n_environment);
        _cleanup_free_ const char *const *ro =
                strings_of(json_object_get(launch, "read_only_paths"), &lt.n_read_only_paths);
        lt.arguments = args;
        lt.environment = env;
        lt.read_only_paths = ro;
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_supervisor_launch_template_digest(&lt, hex, NULL), 0);
        assert_string_equal(str(t, "adapter_command_digest"), hex);
        assert_string_equal(hex, vectors[3].digest);
        assert_string_equal(vectors[3].name, "cloudflare-os-dev");
        assert_string_equal(lt.executable_path, "/opt/glove/runtime/cloudflare-os/node-v25/bin/node");
        assert_int_equal(lt.n_arguments, 1);
        assert_string_equal(args[0], "/opt/glove/runtime/cloudflare-os/closure/scripts/run-local.mjs");
        assert_int_equal(lt.n_environment, 0);
        assert_int_equal(lt.n_read_only_paths, 1);
        assert_string_equal(ro[0], "/opt/glove/runtime/cloudflare-os/closure");

        /* The only workspace: a 4 GiB ephemeral_write copy at /workspace,
         * removed after the session. */
        json_t *aliases = json_object_get(doc, "path_aliases");
        assert_int_equal(json_array_size(aliases), 1);
        json_t *w = json_array_get(aliases, 0), *acc = json_object_get(w, "access");
        assert_string_equal(str(w, "target_path"), "/workspace");
        assert_int_equal(json_array_size(acc), 1);
        json_t *tuple = json_array_get(acc, 0);
        assert_string_equal(str(tuple, "access"), "ephemeral_write");
        assert_string_equal(str(tuple, "materialization"), "copy");
        assert_string_equal(str(tuple, "cleanup_policy"), "remove");
        assert_int_equal(num(tuple, "max_bytes"), 4LL << 30);
        /* cfos-small, and exactly one second of plan-TTL headroom. */
        json_t *profiles = json_object_get(doc, "resource_profiles");
        assert_int_equal(json_array_size(profiles), 1);
        json_t *p = json_array_get(profiles, 0);
        assert_string_equal(str(p, "profile_id"), "cfos-small");
        assert_int_equal(num(p, "cpu_time_ms"), 120000);
        assert_int_equal(num(p, "memory_bytes"), 2LL << 30);
        assert_int_equal(num(p, "pids"), 256);
        assert_int_equal(num(p, "wall_time_ms"), 300000);
        assert_int_equal(num(p, "disk_bytes"), 6LL << 30);
        assert_int_equal(num(p, "terminal_output_bytes"), 16LL << 20);
        assert_int_equal(num(doc, "max_plan_ttl_ms"), num(p, "wall_time_ms") + 1000);
        /* Egress: exactly 127.0.0.1:8787, allow_private. */
        json_t *eg = json_object_get(doc, "egress_policies");
        assert_int_equal(json_array_size(eg), 1);
        assert_string_equal(str(json_array_get(eg, 0), "policy_id"), "cloudflare-os-loopback");
        json_t *targets = json_object_get(json_array_get(eg, 0), "targets");
        assert_int_equal(json_array_size(targets), 1);
        assert_string_equal(str(json_array_get(targets, 0), "host"), "127.0.0.1");
        assert_int_equal(num(json_array_get(targets, 0), "port"), 8787);
        assert_true(json_is_true(json_object_get(json_array_get(targets, 0), "allow_private")));
        /* No projections, no secrets. */
        assert_int_equal(json_array_size(json_object_get(t, "allowed_projection_destinations")), 0);
        assert_int_equal(json_array_size(json_object_get(doc, "library_projection_destinations")), 0);
        assert_int_equal(json_array_size(json_object_get(doc, "secret_handles")), 0);
        assert_int_equal(json_array_size(json_object_get(doc, "secret_mounts")), 0);

        /* The decoder accepts the file as it is (it also recomputes the
         * digest: policy.adapter_digest_mismatch otherwise). */
        char *text = json_dumps(doc, JSON_COMPACT);
        struct glove_supervisor_policy *pol = NULL;
        struct glove_error e = { 0 };
        if (glove_supervisor_policy_decode(text, strlen(text), &pol, &e) < 0)
                fail_msg("the policy decoder refuses the fixture: %s: %s", e.code, e.message);
        glove_supervisor_policy_free(pol);
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),
                cmocka_unit_test(test_every_field_committed),
                cmocka_unit_test(test_versions_differ),
                cmocka_unit_test(test_invalid_arguments),
                cmocka_unit_test(test_cloudflare_fixture),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

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

#include "glove/base/cleanup.h"
#include "glove/supervisor/launch.h"

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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),
                cmocka_unit_test(test_every_field_committed),
                cmocka_unit_test(test_versions_differ),
                cmocka_unit_test(test_invalid_arguments),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The Sage guest-channel adapter (glove/adapters/sage.h): it registers
 * exactly the observation schema, resolves only its exact binding, has the
 * runtime set {"claude-code","pi"}, and its body validator admits a good
 * observation and refuses each bad one with its code; end to end through a
 * real registry, observations are admitted and proposal schemas refused. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "glove/adapters/sage.h"
#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/channel/capability.h"
#include "glove/channel/registry.h"

#define NOW 1700000000000LL

static void test_register(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        assert_int_equal(glove_sage_register(h, &err), 0);
        assert_int_equal(glove_channel_host_count(h), 1);
        const struct glove_channel_descriptor *d = glove_channel_host_at(h, 0);
        assert_string_equal(d->schema_id, "sage.glove-observation.v1");
        assert_int_equal(d->body_max_bytes, 2048);
        assert_int_equal(d->ttl_max_ms, 600000);
        /* a second registration is the table's error, propagated */
        assert_int_equal(glove_sage_register(h, &err), -EEXIST);
        assert_string_equal(err.code, "channel.register_duplicate");
        assert_int_equal(glove_channel_host_freeze(h, NULL), 0);
        /* docs/digests.md, "Guest-channel catalog digest" */
        assert_string_equal(glove_channel_host_catalog_digest(h),
                            "0687dc7d9d6ecffbadedfb7197b39694a592337b0d1ee0540f589586d146f978");
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_sage_register(h, &err), -EPERM);
        assert_string_equal(err.code, "channel.host_frozen");
}

static void test_resolve(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        bool bound = true;
        assert_int_equal(glove_sage_resolve(NULL, &bound, &err), 0);
        assert_false(bound);
        assert_int_equal(glove_sage_resolve("sage.glove-observation.v1", &bound, &err), 0);
        assert_true(bound);
        const char *others[] = { "sage.glove-proposal.v1", "", "SAGE.glove-observation.v1",
                                 "sage.glove-observation.v1 " };
        for (size_t i = 0; i < 4; i++) {
                memset(&err, 0, sizeof(err));
                bound = true;
                assert_int_equal(glove_sage_resolve(others[i], &bound, &err), -EINVAL);
                assert_string_equal(err.code, "adapters.binding_unsupported");
                assert_false(bound);
        }
        assert_string_equal(GLOVE_SAGE_TRANSPORT_ID, GLOVE_CHANNEL_TRANSPORT_INHERITED);
}

static void test_runtimes(void **state) {
        (void)state;
        size_t n = 0;
        const char *const *ids = glove_sage_runtime_ids(&n);
        assert_int_equal(n, 2);
        assert_string_equal(ids[0], "claude-code");
        assert_string_equal(ids[1], "pi");
}

static void expect_body(const char *text, const char *code) {
        json_t *b = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
        assert_non_null(b);
        struct glove_error err = { 0 };
        int r = glove_sage_observation_validate(b, &err);
        json_decref(b);
        if (!code) {
                if (r != 0)
                        fail_msg("%s: refused with %s (%s)", text, err.code, err.message);
                return;
        }
        assert_int_equal(r, -EINVAL);
        if (!err.code || strcmp(err.code, code) != 0)
                fail_msg("%s: got %s, want %s", text, err.code, code);
}

static void test_body(void **state) {
        (void)state;
        expect_body("{\"kind\":\"progress\",\"seq\":0,\"summary\":\"built 3 of 5 packages\"}", NULL);
        expect_body("{\"kind\":\"status\",\"seq\":2147483647,\"summary\":\"caf\u00e9 \u20ac\",\"tags\":[\"a\",\"b-2\"]}",
                    NULL);
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":[]}", NULL);
        expect_body("[]", "adapters.sage_body_not_object");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"extra\":1}", "adapters.sage_body_unknown_member");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"signature\":\"abc\"}", "adapters.sage_body_signature");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"public_key\":\"abc\"}", "adapters.sage_body_signature");
        expect_body("{\"seq\":1,\"summary\":\"x\"}", "adapters.sage_body_kind");
        expect_body("{\"kind\":\"proposal\",\"seq\":1,\"summary\":\"x\"}", "adapters.sage_body_kind");
        expect_body("{\"kind\":\"note\",\"summary\":\"x\"}", "adapters.sage_body_seq");
        expect_body("{\"kind\":\"note\",\"seq\":-1,\"summary\":\"x\"}", "adapters.sage_body_seq");
        expect_body("{\"kind\":\"note\",\"seq\":2147483648,\"summary\":\"x\"}", "adapters.sage_body_seq");
        expect_body("{\"kind\":\"note\",\"seq\":\"1\",\"summary\":\"x\"}", "adapters.sage_body_seq");
        expect_body("{\"kind\":\"note\",\"seq\":1}", "adapters.sage_body_summary");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"\"}", "adapters.sage_body_summary");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"line\\nbreak\"}", "adapters.sage_body_summary");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"esc\\u001b[0m\"}", "adapters.sage_body_summary");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"c1\\u0085\"}", "adapters.sage_body_summary");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"del\\u007f\"}", "adapters.sage_body_summary");
        char longer[700];
        snprintf(longer, sizeof(longer), "{\"kind\":\"note\",\"seq\":1,\"summary\":\"%0513d\"}", 0);
        expect_body(longer, "adapters.sage_body_summary");
        snprintf(longer, sizeof(longer), "{\"kind\":\"note\",\"seq\":1,\"summary\":\"%0512d\"}", 0);
        expect_body(longer, NULL);
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":[\"b\",\"a\"]}", "adapters.sage_body_tags");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":[\"a\",\"a\"]}", "adapters.sage_body_tags");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":[\"A\"]}", "adapters.sage_body_tags");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":\"a\"}", "adapters.sage_body_tags");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":[1]}", "adapters.sage_body_tags");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\","
                    "\"g\",\"h\",\"i\"]}",
                    "adapters.sage_body_tags");
        expect_body("{\"kind\":\"note\",\"seq\":1,\"summary\":\"x\",\"tags\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\","
                    "\"g\",\"h\"]}",
                    NULL);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p);
}

/* Observations are admitted through a real registry; a proposal schema
 * (not registered) is refused and writes nothing; the digest is the
 * documented vector (docs/digests.md, "Guest-channel intent digest"). */
static void test_registry(void **state) {
        (void)state;
        const char *base = getenv("TMPDIR");
        char dir[128];
        snprintf(dir, sizeof(dir), "%s/glove-sage.XXXXXX", base && base[0] == '/' ? base : "/tmp");
        assert_non_null(mkdtemp(dir));
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        assert_int_equal(glove_sage_register(h, &err), 0);
        assert_int_equal(glove_channel_host_freeze(h, &err), 0);
        struct glove_channel_registry *r = NULL;
        assert_int_equal(glove_channel_registry_open(dfd, "s.channel", "sess-1", "pi", h, 8, &r, &err), 0);
        char intent[512];
        snprintf(intent, sizeof(intent),
                 "{\"body\":{\"kind\":\"progress\",\"seq\":1,\"summary\":\"hello\"},\"idempotency_key\":\"obs-1\","
                 "\"issued_at_ms\":%lld,\"schema_id\":\"sage.glove-observation.v1\",\"ttl_ms\":600000}",
                 NOW);
        struct glove_channel_admission a;
        assert_int_equal(glove_channel_registry_enqueue(r, intent, strlen(intent), NOW, &a, &err), 0);
        assert_int_equal(a.seq, 1);
        assert_string_equal(a.digest, "4366dbc39110dc27070dafc4731ae32122b99d9da9f927eced01335dc77a3623");
        snprintf(intent, sizeof(intent),
                 "{\"body\":{\"kind\":\"progress\",\"seq\":1,\"summary\":\"hello\"},\"idempotency_key\":\"p-1\","
                 "\"issued_at_ms\":%lld,\"schema_id\":\"sage.glove-proposal.v1\",\"ttl_ms\":1000}",
                 NOW);
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_registry_enqueue(r, intent, strlen(intent), NOW, &a, &err), -EPERM);
        assert_string_equal(err.code, "channel.schema_unregistered");
        snprintf(intent, sizeof(intent),
                 "{\"body\":{\"kind\":\"progress\",\"seq\":1,\"signature\":\"x\",\"summary\":\"hello\"},"
                 "\"idempotency_key\":\"obs-2\",\"issued_at_ms\":%lld,\"schema_id\":\"sage.glove-observation.v1\","
                 "\"ttl_ms\":1000}",
                 NOW);
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_registry_enqueue(r, intent, strlen(intent), NOW, &a, &err), -EINVAL);
        assert_string_equal(err.code, "adapters.sage_body_signature");
        assert_int_equal(glove_channel_registry_count(r), 1);
        glove_channel_registry_free(r);
        close(dfd);
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_register), cmocka_unit_test(test_resolve), cmocka_unit_test(test_runtimes),
                cmocka_unit_test(test_body),     cmocka_unit_test(test_registry),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

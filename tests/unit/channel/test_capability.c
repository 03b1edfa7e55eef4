/* SPDX-License-Identifier: Apache-2.0 */
/* The sealed capability (glove/channel/capability.h): the exact inherited
 * composition gives 1; every other composition of the matrix gives 0 with
 * its stable reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/channel/capability.h"

#define BINDING "sage.glove-observation.v1"

static const char *const adapter_runtimes[] = { "claude-code", "pi" };
static const char *const endpoint_all[] = { "claude-code", "codex", "pi" };
static const char *const endpoint_codex[] = { "codex" };
static const char *const endpoint_opencode[] = { "opencode" };
static const char *const endpoint_pi[] = { "pi" };

static int accept_all(const json_t *body, struct glove_error *err) {
        (void)body;
        (void)err;
        return 0;
}

struct env {
        struct glove_channel_host *frozen, *open;
        char digest[65];
};

static int setup(void **state) {
        struct env *e = calloc(1, sizeof(*e));
        struct glove_channel_descriptor d = {
                .schema_id = "obs.v1", .validate = accept_all, .body_max_bytes = 64, .ttl_max_ms = 10 };
        if (glove_channel_host_new(&e->frozen, NULL) < 0 || glove_channel_host_register(e->frozen, &d, NULL) < 0 ||
            glove_channel_host_freeze(e->frozen, NULL) < 0 || glove_channel_host_new(&e->open, NULL) < 0 ||
            glove_channel_host_register(e->open, &d, NULL) < 0)
                return -1;
        memcpy(e->digest, glove_channel_host_catalog_digest(e->frozen), 65);
        *state = e;
        return 0;
}

static int teardown(void **state) {
        struct env *e = *state;
        glove_channel_host_free(e->frozen);
        glove_channel_host_free(e->open);
        free(e);
        return 0;
}

static struct glove_channel_composition exact(const struct env *e) {
        return (struct glove_channel_composition){
                .transport_id = "inherited-stream-v1",
                .binding_id = BINDING,
                .adapter_binding_id = BINDING,
                .catalog = e->frozen,
                .expected_catalog_digest = e->digest,
                .factory_constructed = true,
                .runtime_linux = true,
                .endpoint_runtime_ids = endpoint_all,
                .n_endpoint_runtime_ids = 3,
                .adapter_runtime_ids = adapter_runtimes,
                .n_adapter_runtime_ids = 2,
                .endpoints_rechecked = true,
        };
}

static void expect(const struct glove_channel_composition *c, int want, const char *code) {
        const char *why = "unset";
        assert_int_equal(glove_channel_capability(c, &why), want);
        if (code)
                assert_string_equal(why, code);
        else
                assert_null(why);
        assert_int_equal(glove_channel_capability(c, NULL), want);
}

static void test_exact(void **state) {
        struct glove_channel_composition c = exact(*state);
        expect(&c, 1, NULL);
        c.endpoint_runtime_ids = endpoint_pi;
        c.n_endpoint_runtime_ids = 1;
        expect(&c, 1, NULL);
}

static void test_matrix(void **state) {
        struct env *e = *state;
        struct glove_channel_composition c = exact(e);
        c.transport_id = NULL;
        expect(&c, 0, "channel.capability_pathname");
        c = exact(e);
        c.transport_id = "pathname-v1";
        expect(&c, 0, "channel.capability_transport");
        c = exact(e);
        c.binding_id = NULL;
        expect(&c, 0, "channel.capability_unbound");
        c = exact(e);
        c.binding_id = "other.binding.v1";
        expect(&c, 0, "channel.capability_binding_mismatch");
        c = exact(e);
        c.adapter_binding_id = NULL;
        expect(&c, 0, "channel.capability_binding_mismatch");
        c = exact(e);
        c.endpoint_runtime_ids = endpoint_codex;
        c.n_endpoint_runtime_ids = 1;
        expect(&c, 0, "channel.capability_no_intersection");
        c.endpoint_runtime_ids = endpoint_opencode;
        expect(&c, 0, "channel.capability_no_intersection");
        c.n_endpoint_runtime_ids = 0;
        c.endpoint_runtime_ids = NULL;
        expect(&c, 0, "channel.capability_no_intersection");
        c = exact(e);
        char drifted[65];
        memcpy(drifted, e->digest, 65);
        drifted[0] = drifted[0] == '0' ? '1' : '0';
        c.expected_catalog_digest = drifted;
        expect(&c, 0, "channel.capability_catalog_drifted");
        c.expected_catalog_digest = NULL;
        expect(&c, 0, "channel.capability_catalog_drifted");
        c = exact(e);
        c.catalog = e->open;
        expect(&c, 0, "channel.capability_catalog_unfrozen");
        c.catalog = NULL;
        expect(&c, 0, "channel.capability_catalog_unfrozen");
        c = exact(e);
        c.endpoints_rechecked = false;
        expect(&c, 0, "channel.capability_drifted");
        c = exact(e);
        c.factory_constructed = false;
        expect(&c, 0, "channel.capability_no_factory");
        c = exact(e);
        c.runtime_linux = false;
        expect(&c, 0, "channel.capability_runtime");
        c = exact(e);
        c.adapter_runtime_ids = NULL;
        expect(&c, 0, "channel.capability_invalid");
        expect(NULL, 0, "channel.capability_invalid");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_exact, setup, teardown),
                cmocka_unit_test_setup_teardown(test_matrix, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

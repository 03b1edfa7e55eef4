/* SPDX-License-Identifier: Apache-2.0 */
/* The admission table (glove/channel/host.h): registration copies, sorted
 * lookup, freezing, the empty and frozen refusals, duplicates and invalid
 * descriptors, and the catalog digest against an independent encoding. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/bytes.h"
#include "glove/base/digest.h"
#include "glove/channel/host.h"

static int accept_all(const json_t *body, struct glove_error *err) {
        (void)body;
        (void)err;
        return 0;
}

static struct glove_channel_descriptor desc(const char *id) {
        return (struct glove_channel_descriptor){
                .schema_id = id, .validate = accept_all, .body_max_bytes = 100, .ttl_max_ms = 1000 };
}

static void test_register_freeze_find(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        char id[32];
        snprintf(id, sizeof(id), "zeta.v1");
        struct glove_channel_descriptor d = desc(id);
        assert_int_equal(glove_channel_host_register(h, &d, &err), 0);
        d = desc("alpha.v1");
        d.body_max_bytes = 8192;
        assert_int_equal(glove_channel_host_register(h, &d, &err), 0);
        /* the id is copied: changing the caller's buffer changes nothing */
        id[0] = 'y';
        assert_null(glove_channel_host_catalog_digest(h));
        assert_false(glove_channel_host_frozen(h));
        assert_int_equal(glove_channel_host_freeze(h, &err), 0);
        assert_true(glove_channel_host_frozen(h));
        assert_int_equal(glove_channel_host_count(h), 2);
        assert_string_equal(glove_channel_host_at(h, 0)->schema_id, "alpha.v1");
        assert_string_equal(glove_channel_host_at(h, 1)->schema_id, "zeta.v1");
        assert_null(glove_channel_host_at(h, 2));
        const struct glove_channel_descriptor *f = glove_channel_host_find(h, "zeta.v1");
        assert_non_null(f);
        assert_int_equal(f->body_max_bytes, 100);
        assert_null(glove_channel_host_find(h, "yeta.v1"));
        assert_null(glove_channel_host_find(h, "ZETA.v1"));
        assert_null(glove_channel_host_find(h, NULL));
        assert_non_null(glove_channel_host_find(h, "alpha.v1"));
}

static void test_empty(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        assert_int_equal(glove_channel_host_freeze(h, &err), -ENOENT);
        assert_string_equal(err.code, "channel.host_empty");
        assert_false(glove_channel_host_frozen(h));
}

static void test_duplicate(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        struct glove_channel_descriptor d = desc("a.v1");
        assert_int_equal(glove_channel_host_register(h, &d, &err), 0);
        d.body_max_bytes = 7;
        assert_int_equal(glove_channel_host_register(h, &d, &err), -EEXIST);
        assert_string_equal(err.code, "channel.register_duplicate");
        assert_int_equal(glove_channel_host_count(h), 1);
}

static void test_after_freeze(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        struct glove_channel_descriptor d = desc("a.v1");
        assert_int_equal(glove_channel_host_register(h, &d, &err), 0);
        assert_int_equal(glove_channel_host_freeze(h, &err), 0);
        d = desc("b.v1");
        assert_int_equal(glove_channel_host_register(h, &d, &err), -EPERM);
        assert_string_equal(err.code, "channel.host_frozen");
        memset(&err, 0, sizeof(err));
        assert_int_equal(glove_channel_host_freeze(h, &err), -EPERM);
        assert_string_equal(err.code, "channel.host_frozen");
        assert_null(glove_channel_host_find(h, "b.v1"));
}

static void expect_invalid(struct glove_channel_host *h, struct glove_channel_descriptor d, const char *code) {
        struct glove_error err = { 0 };
        assert_int_equal(glove_channel_host_register(h, &d, &err), -EINVAL);
        assert_string_equal(err.code, code);
}

static void test_invalid(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        expect_invalid(h, desc(NULL), "channel.register_schema_id");
        expect_invalid(h, desc(""), "channel.register_schema_id");
        expect_invalid(h, desc("Upper.v1"), "channel.register_schema_id");
        expect_invalid(h, desc(".dot"), "channel.register_schema_id");
        expect_invalid(h, desc("a b"), "channel.register_schema_id");
        expect_invalid(h, desc("a:b"), "channel.register_schema_id");
        char long_id[130];
        memset(long_id, 'a', 128);
        long_id[128] = '\0';
        assert_int_equal(glove_channel_host_register(h, &(struct glove_channel_descriptor){ .schema_id = long_id,
                                                             .validate = accept_all, .body_max_bytes = 1,
                                                             .ttl_max_ms = 1 }, &err), 0);
        long_id[128] = 'a';
        long_id[129] = '\0';
        expect_invalid(h, desc(long_id), "channel.register_schema_id");
        struct glove_channel_descriptor d = desc("ok.v1");
        d.validate = NULL;
        expect_invalid(h, d, "channel.register_validator");
        d = desc("ok.v1");
        d.body_max_bytes = 0;
        expect_invalid(h, d, "channel.register_bounds");
        d.body_max_bytes = GLOVE_CHANNEL_BODY_MAX + 1;
        expect_invalid(h, d, "channel.register_bounds");
        d = desc("ok.v1");
        d.ttl_max_ms = 0;
        expect_invalid(h, d, "channel.register_bounds");
        d.ttl_max_ms = GLOVE_CHANNEL_TTL_LIMIT_MS + 1;
        expect_invalid(h, d, "channel.register_bounds");
        assert_int_equal(glove_channel_host_count(h), 1);
}

static void test_full(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *h = NULL;
        assert_int_equal(glove_channel_host_new(&h, &err), 0);
        char id[16];
        for (int i = 0; i < GLOVE_CHANNEL_HOST_SCHEMAS_MAX; i++) {
                snprintf(id, sizeof(id), "s%02d", i);
                struct glove_channel_descriptor d = desc(id);
                assert_int_equal(glove_channel_host_register(h, &d, &err), 0);
        }
        struct glove_channel_descriptor d = desc("one-more");
        assert_int_equal(glove_channel_host_register(h, &d, &err), -ENOSPC);
        assert_string_equal(err.code, "channel.register_full");
}

static void put_str(uint8_t *buf, size_t *n, const char *s) {
        glove_put_be32(buf + *n, (uint32_t)strlen(s));
        memcpy(buf + *n + 4, s, strlen(s));
        *n += 4 + strlen(s);
}

static void put_u32(uint8_t *buf, size_t *n, uint32_t v) {
        glove_put_be32(buf + *n, v);
        *n += 4;
}

/* The catalog digest is the documented encoding, over sorted ids and bounds,
 * independent of registration order; a bound change changes it. */
static void test_catalog_digest(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        _cleanup_channel_host_ struct glove_channel_host *a = NULL, *b = NULL, *c = NULL;
        assert_int_equal(glove_channel_host_new(&a, &err), 0);
        assert_int_equal(glove_channel_host_new(&b, &err), 0);
        assert_int_equal(glove_channel_host_new(&c, &err), 0);
        struct glove_channel_descriptor x = desc("x.v1"), y = desc("y.v1");
        y.body_max_bytes = 2048;
        y.ttl_max_ms = 600000;
        assert_int_equal(glove_channel_host_register(a, &x, &err), 0);
        assert_int_equal(glove_channel_host_register(a, &y, &err), 0);
        assert_int_equal(glove_channel_host_register(b, &y, &err), 0);
        assert_int_equal(glove_channel_host_register(b, &x, &err), 0);
        x.ttl_max_ms = 1001;
        assert_int_equal(glove_channel_host_register(c, &x, &err), 0);
        assert_int_equal(glove_channel_host_register(c, &y, &err), 0);
        assert_int_equal(glove_channel_host_freeze(a, &err), 0);
        assert_int_equal(glove_channel_host_freeze(b, &err), 0);
        assert_int_equal(glove_channel_host_freeze(c, &err), 0);
        uint8_t buf[256];
        size_t n = 0;
        put_str(buf, &n, "glove.channel.catalog.v1");
        put_u32(buf, &n, 2);
        put_str(buf, &n, "x.v1");
        put_u32(buf, &n, 100);
        put_u32(buf, &n, 1000);
        put_str(buf, &n, "y.v1");
        put_u32(buf, &n, 2048);
        put_u32(buf, &n, 600000);
        uint8_t md[32];
        char hex[65];
        assert_int_equal(glove_digest_sha256(buf, n, md, &err), 0);
        assert_int_equal(glove_digest_hex_encode(md, 32, hex, sizeof(hex)), 0);
        assert_string_equal(glove_channel_host_catalog_digest(a), hex);
        assert_string_equal(glove_channel_host_catalog_digest(b), hex);
        assert_string_not_equal(glove_channel_host_catalog_digest(c), hex);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_register_freeze_find),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_duplicate),
                cmocka_unit_test(test_after_freeze),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_full),
                cmocka_unit_test(test_catalog_digest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

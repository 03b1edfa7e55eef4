/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/region.h: mount tables given as
 * text, the region of a path, what a grant reaches, overlap. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "glove/container/region.h"

/* A host with / on 254:0, /tmp a tmpfs (0:40), /etc/cron.d bound at
 * /tmp/x/bcron, /etc bound at /tmp/x/w/sub, and a second tmpfs stacked on
 * /mnt over a first one. A mount point with a space is escaped (\040). */
static const char TABLE[] =
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "30 27 0:40 / /tmp rw - tmpfs tmpfs rw\n"
        "31 30 254:0 /etc/cron.d /tmp/x/bcron rw - ext4 /dev/vda rw\n"
        "32 30 254:0 /etc /tmp/x/w/sub rw - ext4 /dev/vda rw\n"
        "33 27 0:41 / /mnt rw - tmpfs tmpfs rw\n"
        "34 27 0:42 / /mnt rw - tmpfs tmpfs rw\n"
        "35 30 0:40 /a\\040b /tmp/sp\\040ace rw - tmpfs tmpfs rw\n";

static void load(struct glove_mount_table *t) {
        char *text = strdup(TABLE);
        assert_non_null(text);
        struct glove_error err = {0};
        assert_int_equal(glove_mount_table_parse(t, text, &err), 0);
        assert_int_equal(t->count, 7);
}

static void expect_region(const struct glove_mount_table *t, const char *path, dev_t dev, const char *want) {
        struct glove_region r = {0};
        struct glove_error err = {0};
        assert_int_equal(glove_mount_table_region(t, path, &r, &err), 0);
        assert_true(r.dev == dev);
        assert_string_equal(r.path, want);
        free(r.path);
}

static void test_region_of(void **state) {
        (void)state;
        struct glove_mount_table t;
        load(&t);
        dev_t root = makedev(254, 0), tmp = makedev(0, 40);
        expect_region(&t, "/", root, "/");
        expect_region(&t, "/etc/cron.d", root, "/etc/cron.d");
        expect_region(&t, "/tmp", tmp, "/");
        expect_region(&t, "/tmp/x", tmp, "/x");
        /* A bind mount is the region it shows, whatever its name. */
        expect_region(&t, "/tmp/x/bcron", root, "/etc/cron.d");
        expect_region(&t, "/tmp/x/bcron/p", root, "/etc/cron.d/p");
        expect_region(&t, "/tmp/x/w/sub/passwd", root, "/etc/passwd");
        /* Whole components: /tmp/x/bcronx is not beneath /tmp/x/bcron. */
        expect_region(&t, "/tmp/x/bcronx", tmp, "/x/bcronx");
        /* The later of two mounts on one point is the one on top. */
        expect_region(&t, "/mnt/f", makedev(0, 42), "/f");
        /* Escapes are undone in the root and the mount point. */
        expect_region(&t, "/tmp/sp ace/f", tmp, "/a b/f");
        glove_mount_table_free(&t);
}

static void test_grant_regions(void **state) {
        (void)state;
        struct glove_mount_table t;
        load(&t);
        struct glove_region *r = NULL;
        size_t n = 0;
        struct glove_error err = {0};
        assert_int_equal(glove_mount_table_grant_regions(&t, "/tmp/x/w", &r, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_string_equal(r[0].path, "/x/w");
        assert_true(r[1].dev == makedev(254, 0));
        assert_string_equal(r[1].path, "/etc");
        glove_regions_free(r, n);
        /* /tmp/x reaches both binds; the mount on the grant itself is its own region only. */
        assert_int_equal(glove_mount_table_grant_regions(&t, "/tmp/x", &r, &n, &err), 0);
        assert_int_equal(n, 3);
        glove_regions_free(r, n);
        assert_int_equal(glove_mount_table_grant_regions(&t, "/tmp/x/bcron", &r, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(r[0].path, "/etc/cron.d");
        glove_regions_free(r, n);
        glove_mount_table_free(&t);
}

static void test_overlap(void **state) {
        (void)state;
        dev_t d = makedev(254, 0), e = makedev(0, 40);
        struct glove_region etc = {d, "/etc"}, cron = {d, "/etc/cron.d"}, etcx = {d, "/etcx"}, root = {d, "/"},
                            other = {e, "/etc"};
        assert_true(glove_region_beneath(&cron, &etc));
        assert_false(glove_region_beneath(&etc, &cron));
        assert_true(glove_region_overlaps(&etc, &cron));
        assert_true(glove_region_overlaps(&cron, &etc));
        assert_true(glove_region_overlaps(&etc, &etc));
        assert_false(glove_region_overlaps(&etc, &etcx));
        assert_true(glove_region_overlaps(&root, &etcx));
        /* Another device is another file system. */
        assert_false(glove_region_overlaps(&etc, &other));
}

static void test_malformed(void **state) {
        (void)state;
        struct glove_mount_table t;
        struct glove_error err = {0};
        assert_int_equal(glove_mount_table_parse(&t, strdup("27 1 254x0 / / rw - ext4 x rw\n"), &err), -EPROTO);
        assert_string_equal(err.code, "grant.mountinfo");
        assert_int_equal(glove_mount_table_parse(&t, strdup("27 1 254:0 /\n"), &err), -EPROTO);
        /* No mount holds a relative path. */
        load(&t);
        struct glove_region r = {0};
        assert_int_equal(glove_mount_table_region(&t, "rel", &r, &err), -ENOENT);
        glove_mount_table_free(&t);
        /* More than GLOVE_REGION_MOUNTS_MAX rows. */
        const char line[] = "27 1 254:0 / / rw - ext4 x rw\n";
        size_t n = GLOVE_REGION_MOUNTS_MAX + 1, l = sizeof(line) - 1;
        char *big = malloc(n * l + 1);
        assert_non_null(big);
        for (size_t i = 0; i < n; i++)
                memcpy(big + i * l, line, l);
        big[n * l] = '\0';
        assert_int_equal(glove_mount_table_parse(&t, big, &err), -E2BIG);
        assert_null(t.rows);
}

static void test_read_self(void **state) {
        (void)state;
        struct glove_mount_table t;
        struct glove_error err = {0};
        assert_int_equal(glove_mount_table_read(&t, &err), 0);
        assert_true(t.count > 0);
        struct glove_region r = {0};
        assert_int_equal(glove_mount_table_region(&t, "/", &r, &err), 0);
        free(r.path);
        glove_mount_table_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_region_of),   cmocka_unit_test(test_grant_regions), cmocka_unit_test(test_overlap),
                cmocka_unit_test(test_malformed),   cmocka_unit_test(test_read_self),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

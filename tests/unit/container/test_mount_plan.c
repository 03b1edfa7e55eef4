/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for include/glove/container/mount_plan.h: the standard
 * perimeter's entries and their order, grants parents first after it,
 * the bounds, the refusal of destinations that are not absolute and
 * normal, and every entry's failure code known to the child's table. What
 * the entries do inside a sandbox is tested in test_sandbox.c. */
#include <errno.h>
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

#include "glove/container/environment.h"
#include "glove/container/mount_plan.h"
#include "internal.h"

static struct glove_mount_plan *new_plan(void) {
        struct glove_mount_plan_params p = {.uid = 1000, .gid = 1000, .disk_bytes = 1 << 20, .inotify_instances = 8,
                                            .inotify_watches = 100, .mask_root_only = true};
        struct glove_mount_plan *plan = NULL;
        struct glove_error err = {0};
        if (glove_mount_plan_new(&p, &plan, &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
        return plan;
}

/* Index of the first entry with destination dest (no leading slash), or -1. */
static int find(const struct glove_mount_plan *plan, const char *dest) {
        for (size_t i = 0; i < plan->count; i++)
                if (strcmp(glove_mount_plan_str(plan, plan->entries[i].dest), dest) == 0)
                        return (int)i;
        return -1;
}

static void test_standard_perimeter(void **state) {
        (void)state;
        struct glove_mount_plan *plan = new_plan();
        int usr = find(plan, "usr"), passwd = find(plan, "etc/passwd"), proc = find(plan, "proc");
        int sys = find(plan, "proc/sys"), knob = find(plan, "proc/sys/user/max_inotify_watches");
        int dev = find(plan, "dev"), null = find(plan, "dev/null"), shm = find(plan, "dev/shm");
        int tmp = find(plan, "tmp"), home = find(plan, &GLOVE_ENV_HOME[1]), kmsg = find(plan, "proc/kmsg");
        assert_int_equal(usr, 0);
        assert_true(passwd > usr && proc > passwd);
        /* the sysctl is written before /proc/sys is made read-only */
        assert_true(knob > proc && sys > knob && kmsg > proc);
        assert_true(dev > sys && null > dev && shm > null && tmp > shm && home > tmp);
        assert_int_equal(home, (int)plan->count - 1);
        assert_int_equal(plan->entries[usr].kind, GLOVE_MOUNT_BIND);
        assert_true(plan->entries[usr].flags & GLOVE_MOUNT_F_DIR);
        assert_int_equal(plan->entries[passwd].kind, GLOVE_MOUNT_FILE);
        assert_non_null(strstr(glove_mount_plan_str(plan, plan->entries[passwd].bytes), "agent:x:1000:1000:"));
        assert_int_equal(plan->entries[knob].kind, GLOVE_MOUNT_WRITE);
        assert_string_equal(glove_mount_plan_str(plan, plan->entries[knob].bytes), "100\n");
        assert_int_equal(plan->entries[kmsg].kind, GLOVE_MOUNT_MASK);
        assert_int_equal(plan->entries[home].kind, GLOVE_MOUNT_TMPFS);
        assert_string_equal(glove_mount_plan_str(plan, plan->entries[home].options), "mode=0700,uid=1000,gid=1000,size=1048576");
        assert_string_equal(glove_mount_plan_str(plan, plan->cwd), GLOVE_ENV_HOME);
        /* no /etc file outside the curated list */
        assert_int_equal(find(plan, "etc/shadow"), -1);
        assert_int_equal(find(plan, "etc/machine-id"), -1);
        glove_mount_plan_free(plan);

        /* Unprivileged: no mask, no sysctl when unset. */
        struct glove_mount_plan_params p = {.uid = 1234, .gid = 1234};
        assert_int_equal(glove_mount_plan_new(&p, &plan, NULL), 0);
        assert_int_equal(find(plan, "proc/kmsg"), -1);
        assert_int_equal(find(plan, "proc/sys/user/max_inotify_watches"), -1);
        glove_mount_plan_free(plan);
}

/* Every code an entry can fail with arrives in Glove as itself. */
static void test_entry_codes_are_child_codes(void **state) {
        (void)state;
        struct glove_mount_plan *plan = new_plan();
        struct glove_error err = {0};
        assert_int_equal(glove_mount_plan_add_tmpfs(plan, "/x", 0, 0755, 1, 1, 0, &err), 0);
        assert_int_equal(glove_mount_plan_add_file(plan, "/x/f", "a", 1, 0644, &err), 0);
        assert_int_equal(glove_mount_plan_add_symlink(plan, "/x/l", "f", &err), 0);
        assert_int_equal(glove_mount_plan_add_bind(plan, "/x/b", "/usr", false, &err), 0);
        assert_int_equal(glove_mount_plan_add_pinned_bind(plan, "/x/p", "/usr", 1, 2, true, true, "alias", &err), 0);
        assert_int_equal(glove_mount_plan_add_tree(plan, "/x/t", 1 << 20, 1, 1, "/usr", 1, 2, "alias", &err), 0);
        assert_int_equal(glove_mount_plan_add_tree(plan, "/x/e", 1 << 20, 1, 1, NULL, 0, 0, NULL, &err), 0);
        for (size_t i = 0; i < plan->count; i++) {
                const char *code = plan->entries[i].code;
                assert_non_null(code);
                if (!glove_report_code_lookup(code))
                        fail_msg("entry %zu (/%s): code %s is not a child code", i,
                                 glove_mount_plan_str(plan, plan->entries[i].dest), code);
        }
        glove_mount_plan_free(plan);
}

static void test_destination_refused(void **state) {
        (void)state;
        struct glove_mount_plan *plan = new_plan();
        size_t n = plan->count;
        static const char *const bad[] = {"etc/x", "", "/", "/a/../b", "/a//b", "/a/", "/./a", "/a/.", "/..", "x/../y"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_error err = {0};
                assert_int_equal(glove_mount_plan_add_tmpfs(plan, bad[i], 0, 0755, 0, 0, 0, &err), -EINVAL);
                assert_string_equal(err.code, "mount.plan_dest");
                glove_error_clear(&err);
                assert_int_equal(glove_mount_plan_add_file(plan, bad[i], "x", 1, 0644, &err), -EINVAL);
                assert_string_equal(err.code, "mount.plan_dest");
        }
        struct glove_error err = {0};
        assert_int_equal(glove_mount_plan_add_tmpfs(plan, NULL, 0, 0755, 0, 0, 0, &err), -EINVAL);
        glove_error_clear(&err);
        assert_int_equal(glove_mount_plan_add_bind(plan, "/b", "usr", false, &err), -EINVAL);
        assert_int_equal(plan->count, n);
        assert_int_equal(glove_mount_plan_add_tmpfs(plan, "/a/b.c/..d", 0, 0755, 0, 0, 0, NULL), 0);
        glove_mount_plan_free(plan);
}

static void test_bounds(void **state) {
        (void)state;
        struct glove_mount_plan *plan = new_plan();
        struct glove_error err = {0};
        /* one file over the per-file bound */
        char *big = calloc(1, GLOVE_MOUNT_FILE_MAX + 1);
        assert_non_null(big);
        size_t n = plan->count;
        assert_int_equal(glove_mount_plan_add_file(plan, "/big", big, GLOVE_MOUNT_FILE_MAX + 1, 0644, &err), -E2BIG);
        assert_string_equal(err.code, "mount.plan_too_large");
        assert_int_equal(plan->count, n);
        /* the data bound: files of the largest size until it is reached */
        int r = 0, added = 0;
        while ((r = glove_mount_plan_add_file(plan, "/f", big, GLOVE_MOUNT_FILE_MAX, 0644, NULL)) == 0)
                added++;
        assert_int_equal(r, -E2BIG);
        assert_true(added >= 1 && added < (int)(GLOVE_MOUNT_PLAN_DATA_MAX / GLOVE_MOUNT_FILE_MAX));
        assert_true(plan->data_len <= GLOVE_MOUNT_PLAN_DATA_MAX);
        free(big);
        glove_mount_plan_free(plan);
        /* the entry bound */
        plan = new_plan();
        while ((r = glove_mount_plan_add_symlink(plan, "/l", "t", NULL)) == 0)
                ;
        assert_int_equal(r, -E2BIG);
        assert_int_equal(plan->count, GLOVE_MOUNT_PLAN_MAX);
        glove_error_clear(&err);
        assert_int_equal(glove_mount_plan_add_tmpfs(plan, "/t", 0, 0755, 0, 0, 0, &err), -E2BIG);
        assert_string_equal(err.code, "mount.plan_too_large");
        glove_mount_plan_free(plan);
}

/* Grants come after the standard perimeter, parents before what they
 * hold whatever the order given; the workspace is the cwd. */
static void test_grant_order(void **state) {
        (void)state;
        char dir[] = "/tmp/glove-test-plan-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char a[64], ab[64], abc[64], z[64];
        snprintf(a, sizeof(a), "%s/a", dir);
        snprintf(ab, sizeof(ab), "%s/a/b", dir);
        snprintf(abc, sizeof(abc), "%s/a/b/c", dir);
        snprintf(z, sizeof(z), "%s/z", dir);
        assert_int_equal(mkdir(a, 0755), 0);
        assert_int_equal(mkdir(ab, 0755), 0);
        assert_int_equal(mkdir(abc, 0755), 0);
        assert_int_equal(mkdir(z, 0755), 0);
        struct glove_grant_set set;
        glove_grant_set_init(&set);
        struct glove_error err = {0};
        assert_int_equal(glove_grant_set_add(&set, abc, GLOVE_GRANT_READ, false, "/", &err), 0);
        assert_int_equal(glove_grant_set_add(&set, z, GLOVE_GRANT_WRITE, true, "/", &err), 0);
        assert_int_equal(glove_grant_set_add(&set, a, GLOVE_GRANT_READ, false, "/", &err), 0);
        assert_int_equal(glove_grant_set_add(&set, ab, GLOVE_GRANT_READ, false, "/", &err), 0);
        struct glove_mount_plan *plan = new_plan();
        size_t n = plan->count;
        assert_int_equal(glove_mount_plan_add_grants(plan, &set, &err), 0);
        assert_int_equal(plan->count, n + 4);
        const char *want[] = {a, ab, abc, z};
        for (size_t i = 0; i < 4; i++) {
                const struct glove_mount_entry *e = &plan->entries[n + i];
                assert_int_equal(e->kind, GLOVE_MOUNT_BIND);
                assert_true(e->flags & GLOVE_MOUNT_F_GRANT);
                assert_string_equal(glove_mount_plan_str(plan, e->source), want[i]);
                assert_string_equal(glove_mount_plan_str(plan, e->dest), want[i] + 1);
                assert_true(e->attrs & MOUNT_ATTR_NOSUID);
                assert_int_equal(!!(e->attrs & MOUNT_ATTR_RDONLY), i < 3);
        }
        assert_string_equal(plan->entries[n + 3].label, "workspace");
        assert_string_equal(plan->entries[n].label, "read-only grant");
        assert_string_equal(glove_mount_plan_str(plan, plan->cwd), z);
        glove_mount_plan_free(plan);
        glove_grant_set_clear(&set);
        rmdir(abc);
        rmdir(ab);
        rmdir(a);
        rmdir(z);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_standard_perimeter),     cmocka_unit_test(test_entry_codes_are_child_codes),
                cmocka_unit_test(test_destination_refused),    cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_grant_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* config.json (glove/host/config.h): round trip, strict decoding (unknown
 * member, unsorted or relative roots, duplicate keys), file checks, and the
 * rules of a new path root. */
#include <errno.h>
#include <fcntl.h>
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
#include "glove/host/config.h"
#include "glove/host/dirs.h"

static char dir[] = "/tmp/glove-host-config-XXXXXX";

static int dirfd_open(void) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static void put(const char *text, mode_t mode) {
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", dir, GLOVE_HOST_CONFIG_FILE);
        unlink(p);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        fchmod(fd, mode);
        close(fd);
}

static const char *read_code(void) {
        _cleanup_close_ int fd = dirfd_open();
        struct glove_host_config c;
        static struct glove_error err;
        memset(&err, 0, sizeof(err));
        int r = glove_host_config_read(fd, geteuid(), &c, &err);
        glove_host_config_clear(&c);
        return r < 0 ? err.code : r == 1 ? "absent" : "ok";
}

static void test_round_trip(void **state) {
        (void)state;
        _cleanup_close_ int fd = dirfd_open();
        struct glove_host_config c = { 0 };
        struct glove_error err = { 0 };
        assert_string_equal(read_code(), "absent");
        bool added;
        assert_int_equal(glove_host_config_add_root(&c, "/srv/b", &added, &err), 0);
        assert_true(added);
        assert_int_equal(glove_host_config_add_root(&c, "/srv/a", &added, &err), 0);
        assert_int_equal(glove_host_config_add_root(&c, "/srv/b", &added, &err), 0);
        assert_false(added);
        _cleanup_free_ char *text = NULL;
        size_t len;
        assert_int_equal(glove_host_config_encode(&c, &text, &len, &err), 0);
        glove_host_config_clear(&c);
        assert_int_equal(glove_host_file_write_atomic(fd, GLOVE_HOST_CONFIG_FILE, text, len, false, &err), 0);
        assert_int_equal(glove_host_file_write_atomic(fd, GLOVE_HOST_CONFIG_FILE, text, len, false, &err), -EEXIST);
        assert_int_equal(glove_host_config_read(fd, geteuid(), &c, &err), 0);
        assert_int_equal(c.n_roots, 2);
        assert_string_equal(c.roots[0], "/srv/a");
        assert_string_equal(c.roots[1], "/srv/b");
        glove_host_config_clear(&c);
}

static void test_strict(void **state) {
        (void)state;
        put("{\"path_roots\":[],\"schema_version\":1}", 0600);
        assert_string_equal(read_code(), "ok");
        put("{\"path_roots\":[],\"schema_version\":1,\"x\":1}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[],\"schema_version\":2}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[\"/b\",\"/a\"],\"schema_version\":1}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[\"/a\",\"/a\"],\"schema_version\":1}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[\"a\"],\"schema_version\":1}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[\"/a/../b\"],\"schema_version\":1}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[\"/proc/x\"],\"schema_version\":1}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[],\"path_roots\":[],\"schema_version\":1}", 0600);
        assert_string_equal(read_code(), "config.invalid");
        put("{\"path_roots\":[],\"schema_version\":1}", 0644);
        assert_string_equal(read_code(), "config.file_insecure");
}

static void test_check_root(void **state) {
        (void)state;
        char sub[256], *out = NULL;
        struct glove_error err = { 0 };
        snprintf(sub, sizeof(sub), "%s/root", dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        char messy[300];
        snprintf(messy, sizeof(messy), "%s//root/", dir);
        assert_int_equal(glove_host_config_check_root(messy, geteuid(), &out, &err), 0);
        assert_string_equal(out, sub);
        free(out);
        chmod(sub, 0775);
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root(sub, geteuid(), &out, &err) < 0);
        assert_string_equal(err.code, "config.bad_root");
        chmod(sub, 0755);
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root(sub, geteuid() + 1, &out, &err) < 0);
        assert_string_equal(err.code, "config.bad_root");
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root("relative", geteuid(), &out, &err) < 0);
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root("/", geteuid(), &out, &err) < 0);
        char link[300];
        snprintf(link, sizeof(link), "%s/link", dir);
        assert_int_equal(symlink(sub, link), 0);
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root(link, geteuid(), &out, &err) < 0);
        /* A link as the root itself or on the way: config.bad_root naming
         * the link, never the opener's path.open "Not a directory". */
        char want[400];
        assert_string_equal(err.code, "config.bad_root");
        snprintf(want, sizeof(want), "%s is a symbolic link", link);
        assert_non_null(strstr(err.message, want));
        char below[320];
        snprintf(below, sizeof(below), "%s/inner", link);
        assert_int_equal(mkdir(below, 0755), 0); /* through the link: sub/inner */
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root(below, geteuid(), &out, &err) < 0);
        assert_string_equal(err.code, "config.bad_root");
        assert_non_null(strstr(err.message, want));
        char file[300];
        snprintf(file, sizeof(file), "%s/file", dir);
        FILE *f = fopen(file, "w");
        assert_non_null(f);
        fclose(f);
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root(file, geteuid(), &out, &err) < 0);
        assert_string_equal(err.code, "config.bad_root");
        assert_non_null(strstr(err.message, "is not a directory"));
        snprintf(link, sizeof(link), "%s/missing", dir);
        glove_error_clear(&err);
        assert_true(glove_host_config_check_root(link, geteuid(), &out, &err) < 0);
        assert_string_equal(err.code, "config.bad_root");
        assert_non_null(strstr(err.message, "does not exist"));
}

static int cleanup(void **state) {
        (void)state;
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        assert_non_null(mkdtemp(dir));
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_strict),
                cmocka_unit_test(test_check_root),
        };
        return cmocka_run_group_tests(tests, NULL, cleanup);
}

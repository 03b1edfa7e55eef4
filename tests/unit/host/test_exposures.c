/* SPDX-License-Identifier: Apache-2.0 */
/* The owner's side of exposures (glove/host/exposures.h): the exposure
 * policy glove setup writes (defaults, root ids, extension, an existing root
 * never changed, overlap refused, an undecodable file refused) and the
 * canonicalizer of glove init (a link anywhere, relative paths, ".."). */
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
#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/host/exposures.h"
#include "glove/supervisor/exposure.h"

static const char *const runtimes[] = { "zeta", "alpha" };

/* extend with roots onto old (may be NULL); returns the code or "ok" and
 * the text in *out (caller frees). */
static const char *extend(const char *old, const char *const *roots, size_t n, size_t n_runtimes, char **out,
                          size_t *added) {
        static struct glove_error err;
        memset(&err, 0, sizeof(err));
        size_t len = 0;
        int r = glove_host_exposure_policy_extend(old, old ? strlen(old) : 0, roots, n, runtimes, n_runtimes, out,
                                                  &len, added, &err);
        if (r < 0) {
                assert_null(*out);
                return err.code;
        }
        assert_int_equal(len, strlen(*out));
        return "ok";
}

static json_t *load(const char *text) {
        json_t *o = json_loads(text, 0, NULL);
        assert_non_null(o);
        return o;
}

static void test_new_root_defaults(void **state) {
        (void)state;
        const char *roots[] = { "/srv/my projects" };
        _cleanup_free_ char *text = NULL;
        size_t added = 0;
        assert_string_equal(extend(NULL, roots, 1, 2, &text, &added), "ok");
        assert_int_equal(added, 1);
        assert_true(text[strlen(text) - 1] == '\n');
        struct glove_exposure_policy *p = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_exposure_policy_decode(text, strlen(text), &p, NULL, 0, &err), 0);
        assert_int_equal(glove_exposure_policy_root_count(p), 1);
        const struct glove_exposure_root *r = glove_exposure_policy_root(p, 0);
        assert_string_equal(r->root_id, "my-projects");
        assert_string_equal(r->path, "/srv/my projects");
        assert_string_equal(r->target_path, "/workspace");
        assert_int_equal(r->max_ttl_secs, 604800);
        assert_int_equal(r->n_modes, 3);
        assert_string_equal(r->modes[0].access, "ephemeral_write");
        assert_string_equal(r->modes[0].materialization, "copy");
        assert_string_equal(r->modes[0].cleanup_policy, "remove");
        assert_string_equal(r->modes[1].access, "read");
        assert_string_equal(r->modes[1].materialization, "bind");
        assert_string_equal(r->modes[2].access, "retained_write");
        assert_string_equal(r->modes[2].cleanup_policy, "retain");
        for (size_t i = 0; i < 3; i++)
                assert_int_equal(r->modes[i].max_bytes, 1LL << 30);
        assert_int_equal(r->n_runtimes, 2);
        assert_string_equal(r->runtime_template_ids[0], "alpha");
        assert_string_equal(r->runtime_template_ids[1], "zeta");
        glove_exposure_policy_free(p);
}

/* docs/exposures.md: the root_id is made per byte: each byte of a
 * multi-byte UTF-8 character becomes its own '-'. */
static void test_root_id_per_byte(void **state) {
        (void)state;
        const char *roots[] = { "/srv/my proj\xe2\x82\xac" }; /* "my proj" and the euro sign */
        _cleanup_free_ char *text = NULL;
        size_t added = 0;
        assert_string_equal(extend(NULL, roots, 1, 1, &text, &added), "ok");
        json_t *doc = load(text);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "roots"), 0),
                                                              "root_id")),
                            "my-proj---");
        json_decref(doc);
}

static void test_extend_keeps_and_orders(void **state) {
        (void)state;
        const char *first[] = { "/srv/b/src" };
        _cleanup_free_ char *one = NULL;
        size_t added = 0;
        assert_string_equal(extend(NULL, first, 1, 2, &one, &added), "ok");
        /* Loosen the existing entry by hand: extension must keep it as is. */
        json_t *doc = load(one);
        json_object_set_new(json_array_get(json_object_get(doc, "roots"), 0), "max_ttl_secs", json_integer(60));
        _cleanup_free_ char *edited = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(doc);
        /* The same root again and a second one with the same last name. */
        const char *more[] = { "/srv/b/src", "/srv/a/src" };
        _cleanup_free_ char *two = NULL;
        assert_string_equal(extend(edited, more, 2, 1, &two, &added), "ok");
        assert_int_equal(added, 1);
        doc = load(two);
        json_t *roots = json_object_get(doc, "roots");
        assert_int_equal(json_array_size(roots), 2);
        /* Sorted by root_id: "src" before "src-2"; the old one unchanged. */
        json_t *a = json_array_get(roots, 0), *b = json_array_get(roots, 1);
        assert_string_equal(json_string_value(json_object_get(a, "root_id")), "src");
        assert_string_equal(json_string_value(json_object_get(a, "path")), "/srv/b/src");
        assert_int_equal(json_integer_value(json_object_get(a, "max_ttl_secs")), 60);
        assert_int_equal(json_array_size(json_object_get(a, "runtime_template_ids")), 2);
        assert_string_equal(json_string_value(json_object_get(b, "root_id")), "src-2");
        assert_string_equal(json_string_value(json_object_get(b, "path")), "/srv/a/src");
        assert_int_equal(json_array_size(json_object_get(b, "runtime_template_ids")), 1);
        json_decref(doc);
        /* Nothing new: the old text comes back byte for byte. */
        _cleanup_free_ char *same = NULL;
        assert_string_equal(extend(two, more, 2, 2, &same, &added), "ok");
        assert_int_equal(added, 0);
        assert_string_equal(same, two);
}

static void test_overlap_and_refusals(void **state) {
        (void)state;
        const char *first[] = { "/srv/code" };
        _cleanup_free_ char *one = NULL;
        size_t added = 0;
        assert_string_equal(extend(NULL, first, 1, 2, &one, &added), "ok");
        char *out = NULL;
        const char *inside[] = { "/srv/code/sub" };
        assert_string_equal(extend(one, inside, 1, 2, &out, &added), "setup.root_overlap");
        const char *above[] = { "/srv" };
        assert_string_equal(extend(one, above, 1, 2, &out, &added), "setup.root_overlap");
        /* Two new roots overlapping each other. */
        const char *pair[] = { "/opt/x", "/opt/x/y" };
        assert_string_equal(extend(NULL, pair, 2, 2, &out, &added), "setup.root_overlap");
        /* "/srv/codes" is beside, not beneath, "/srv/code". */
        const char *beside[] = { "/srv/codes" };
        assert_string_equal(extend(one, beside, 1, 2, &out, &added), "ok");
        free(out);
        out = NULL;
        /* No runtime template: nothing to allow. */
        assert_string_equal(extend(NULL, first, 1, 0, &out, &added), "setup.no_runtimes");
        /* An existing file that does not decode is refused. */
        const char *code = extend("{\"roots\":[],\"schema_version\":1}", beside, 1, 2, &out, &added);
        assert_true(strncmp(code, "policy.", 7) == 0);
        code = extend("{\"schema_version\":1,\"roots\":[{\"root_id\":\"x\"}]}", beside, 1, 2, &out, &added);
        assert_true(strncmp(code, "policy.", 7) == 0);
        code = extend("not json", beside, 1, 2, &out, &added);
        assert_true(strncmp(code, "policy.", 7) == 0);
}

/* ---- the canonicalizer ---- */

static char dir[] = "/tmp/glove-host-exposures-XXXXXX";

static const char *canon(const char *project, const char *cwd, char **out) {
        static struct glove_error err;
        memset(&err, 0, sizeof(err));
        *out = NULL;
        int r = glove_host_init_canonicalize(project, cwd, out, &err);
        return r < 0 ? err.code : "ok";
}

static void test_canonicalize(void **state) {
        (void)state;
        assert_non_null(mkdtemp(dir));
        char p[512], q[512];
        snprintf(p, sizeof(p), "%s/root/proj/deep", dir);
        snprintf(q, sizeof(q), "%s/root", dir);
        assert_int_equal(mkdir(q, 0700), 0);
        snprintf(q, sizeof(q), "%s/root/proj", dir);
        assert_int_equal(mkdir(q, 0700), 0);
        assert_int_equal(mkdir(p, 0700), 0);
        snprintf(q, sizeof(q), "%s/root/link", dir);
        assert_int_equal(symlink("proj", q), 0);
        snprintf(q, sizeof(q), "%s/root/file", dir);
        int fd = open(q, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);

        char *out = NULL;
        /* Absolute, with "." and "..", and a trailing slash. */
        snprintf(q, sizeof(q), "%s/root/./proj/deep/../deep/", dir);
        assert_string_equal(canon(q, "/", &out), "ok");
        assert_string_equal(out, p);
        free(out);
        /* Relative to cwd, lexically. */
        snprintf(q, sizeof(q), "%s/root", dir);
        assert_string_equal(canon("proj/deep", q, &out), "ok");
        assert_string_equal(out, p);
        free(out);
        assert_string_equal(canon("../root/proj", q, &out), "ok");
        snprintf(p, sizeof(p), "%s/root/proj", dir);
        assert_string_equal(out, p);
        free(out);
        /* A link as the last component, and in the middle. */
        assert_string_equal(canon("link", q, &out), "init.symlink");
        assert_string_equal(canon("link/deep", q, &out), "init.symlink");
        assert_null(out);
        /* ".." after a link is lexical: the link is never visited. */
        assert_string_equal(canon("link/../proj", q, &out), "ok");
        free(out);
        assert_string_equal(canon("missing/x", q, &out), "init.missing");
        assert_string_equal(canon("file", q, &out), "init.not_directory");
        assert_string_equal(canon("file/x", q, &out), "init.not_directory");
        assert_string_equal(canon("", q, &out), "init.path");
        /* The message names the linked component. */
        struct glove_error err = { 0 };
        assert_int_equal(glove_host_init_canonicalize("link/deep", q, &out, &err), -ELOOP);
        snprintf(p, sizeof(p), "%s/root/link is a symbolic link", dir);
        assert_non_null(strstr(err.message, p));

        snprintf(q, sizeof(q), "rm -rf -- '%s'", dir);
        assert_int_equal(system(q), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_new_root_defaults),
                cmocka_unit_test(test_root_id_per_byte),
                cmocka_unit_test(test_extend_keeps_and_orders),
                cmocka_unit_test(test_overlap_and_refusals),
                cmocka_unit_test(test_canonicalize),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

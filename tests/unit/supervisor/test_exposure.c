/* SPDX-License-Identifier: Apache-2.0 */
/* Dynamic path exposures (glove/supervisor/exposure.h): the policy decoder
 * and loader, enrollment, revocation, the catalog, plan grant checks and the
 * prepare-time source, on real directories in a private temporary tree. */
#include "exposure_helpers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>

#include <cmocka.h>

#include "exposure_internal.h"
#include "glove/base/json.h"

static int setup(void **state) {
        struct xenv *e = xenv_new();
        struct glove_error err = { 0 };
        if (xopen(e, T0, fresh(&err)) < 0) {
                fprintf(stderr, "open: %s: %s\n", err.code, err.message);
                return -1;
        }
        *state = e;
        return 0;
}

static int teardown(void **state) {
        xenv_free(*state);
        return 0;
}

/* ---- policy ---- */

static void test_policy_good(void **state) {
        struct xenv *e = *state;
        const struct glove_exposure_policy *p = e->policy;
        assert_int_equal(glove_exposure_policy_root_count(p), 1);
        const struct glove_exposure_root *r = glove_exposure_policy_root(p, 0);
        assert_non_null(r);
        assert_null(glove_exposure_policy_root(p, 1));
        assert_string_equal(r->root_id, "src");
        assert_string_equal(r->path, e->root);
        assert_string_equal(r->target_path, "/workspace");
        assert_int_equal(r->max_ttl_secs, TTL_MAX);
        assert_int_equal(r->n_modes, 3);
        assert_string_equal(r->modes[1].access, "read");
        assert_string_equal(r->modes[1].materialization, "bind");
        assert_int_equal(r->modes[2].max_bytes, 3000);
        assert_int_equal(r->n_runtimes, 2);
        assert_string_equal(r->runtime_template_ids[1], "pi-safe");
        assert_int_equal(strlen(glove_exposure_policy_digest(p)), 64);
}

/* Replaces the first occurrence of from by to in the good policy text. */
static void expect_policy_error(struct xenv *e, const char *from, const char *to, const char *code,
                                const char *jpath) {
        char text[8192];
        const char *at = strstr(e->policy_text, from);
        assert_non_null(at);
        snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - e->policy_text), e->policy_text, to, at + strlen(from));
        struct glove_exposure_policy *p = NULL;
        struct glove_error err = { 0 };
        char path[256];
        int r = glove_exposure_policy_decode(text, strlen(text), &p, path, sizeof(path), fresh(&err));
        if (r >= 0 || strcmp(err.code, code) != 0)
                fprintf(stderr, "replacing %s by %s: r=%d code=%s msg=%s\n", from, to, r, err.code, err.message);
        assert_true(r < 0);
        assert_null(p);
        assert_string_equal(err.code, code);
        if (jpath)
                assert_string_equal(path, jpath);
}

static void test_policy_bad(void **state) {
        struct xenv *e = *state;
        expect_policy_error(e, "\"schema_version\":1", "\"schema_version\":1,\"extra\":1", "policy.unknown_field",
                            "$.extra");
        expect_policy_error(e, "\"root_id\":\"src\"", "\"root_id\":\"src\",\"alias\":\"x\"", "policy.unknown_field",
                            "$.roots[0].alias");
        expect_policy_error(e, "\"schema_version\":1", "\"schema_version\":2", "policy.unsupported_schema_version",
                            NULL);
        expect_policy_error(e, "\"access\":\"read\",\"cleanup_policy\":\"remove\",\"materialization\":\"bind\"",
                            "\"access\":\"direct_write\",\"cleanup_policy\":\"remove\",\"materialization\":\"bind\"",
                            "policy.invalid_access_combination", NULL);
        expect_policy_error(e, "\"materialization\":\"bind\"", "\"materialization\":\"copy\"",
                            "policy.invalid_access_combination", NULL);
        expect_policy_error(e, "\"max_ttl_secs\":3600", "\"max_ttl_secs\":0", "policy.out_of_range",
                            "$.roots[0].max_ttl_secs");
        expect_policy_error(e, "\"max_ttl_secs\":3600", "\"max_ttl_secs\":31536001", "policy.out_of_range", NULL);
        expect_policy_error(e, "\"max_bytes\":1000", "\"max_bytes\":0", "policy.out_of_range", NULL);
        expect_policy_error(e, "[\"codex-safe\",\"pi-safe\"]", "[\"pi-safe\",\"codex-safe\"]", "policy.array_unsorted",
                            NULL);
        expect_policy_error(e, "[\"codex-safe\",\"pi-safe\"]", "[]", "policy.too_few_items", NULL);
        expect_policy_error(e, "\"target_path\":\"/workspace\"", "\"target_path\":\"workspace\"",
                            "policy.path_not_absolute", NULL);
        expect_policy_error(e, "\"path\":\"", "\"path\":\"/proc", "policy.path_restricted", NULL);
        expect_policy_error(e, "\"path\":\"", "\"path\":\"/run", "policy.path_restricted", NULL);
        expect_policy_error(e, "\"path\":\"", "\"path\":\"/a/..", "policy.path_not_normalized", NULL);
        expect_policy_error(e, "\"roots\":[", "\"roots\":[1,", "policy.wrong_type", NULL);
        expect_policy_error(e, "\"roots\":[{", "\"roots\":[]", "policy.invalid_json", NULL); /* unbalanced: not JSON */

        /* Two roots: unsorted, then overlapping. */
        char two[16384], one[4096];
        const char *start = strchr(e->policy_text, '{') + 1;
        start = strchr(start, '{');
        const char *end = strstr(e->policy_text, "],\"schema_version\"");
        snprintf(one, sizeof(one), "%.*s", (int)(end - start), start);
        char b[4096];
        snprintf(b, sizeof(b), "%s", one);
        char *id = strstr(b, "\"root_id\":\"src\"");
        memcpy(id + 11, "aaa", 3); /* root_id "aaa" sorts before "src" */
        char *pp = strstr(b, "/src\"");
        memcpy(pp, "/xyz", 4);
        snprintf(two, sizeof(two), "{\"roots\":[%s,%s],\"schema_version\":1}", one, b);
        struct glove_exposure_policy *p = NULL;
        struct glove_error err = { 0 };
        assert_true(glove_exposure_policy_decode(two, strlen(two), &p, NULL, 0, fresh(&err)) < 0);
        assert_string_equal(err.code, "policy.array_unsorted");
        snprintf(two, sizeof(two), "{\"roots\":[%s,%s],\"schema_version\":1}", b, one);
        assert_int_equal(glove_exposure_policy_decode(two, strlen(two), &p, NULL, 0, fresh(&err)), 0);
        glove_exposure_policy_free(p);
        p = NULL;
        /* aaa's path beneath src's. */
        char c[4096];
        snprintf(c, sizeof(c), "%s", b);
        char *q = strstr(c, "/xyz\"");
        char inner[4096];
        snprintf(inner, sizeof(inner), "%.*s/src/inner%s", (int)(q - c), c, q + 4);
        snprintf(two, sizeof(two), "{\"roots\":[%s,%s],\"schema_version\":1}", inner, one);
        memset(&err, 0, sizeof(err));
        assert_true(glove_exposure_policy_decode(two, strlen(two), &p, NULL, 0, fresh(&err)) < 0);
        assert_string_equal(err.code, "policy.path_overlap");
}

static void test_policy_load(void **state) {
        struct xenv *e = *state;
        char file[700];
        snprintf(file, sizeof(file), "%s/exposure-policy.json", e->outside);
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, e->policy_text, strlen(e->policy_text)), (ssize_t)strlen(e->policy_text));
        close(fd);
        struct glove_exposure_policy *p = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_exposure_policy_load(file, getuid(), &p, fresh(&err)), 0);
        assert_string_equal(glove_exposure_policy_digest(p), glove_exposure_policy_digest(e->policy));
        glove_exposure_policy_free(p);
        p = NULL;
        assert_int_equal(chmod(file, 0644), 0);
        assert_true(glove_exposure_policy_load(file, getuid(), &p, fresh(&err)) < 0);
        assert_string_equal(err.code, "policy.file_mode");
        assert_null(p);
}

/* ---- enrollment, catalog, revocation ---- */

static void test_create_catalog_list(void **state) {
        struct xenv *e = *state;
        json_t *res = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(xcreate(e, "proj1", T0, &res, fresh(&err)), 0);
        const char *id = xid(res);
        assert_non_null(id);
        assert_true(exp_id_valid(id));
        assert_int_equal(json_integer_value(json_object_get(res, "generation")), 1);
        assert_string_equal(json_string_value(json_object_get(res, "label")), "proj1");
        assert_string_equal(json_string_value(json_object_get(res, "state")), "live");
        assert_string_equal(json_string_value(json_object_get(res, "root_id")), "src");
        char p[1024];
        xsub(e, "proj1", p, sizeof(p));
        assert_string_equal(json_string_value(json_object_get(res, "path")), p);
        assert_int_equal(json_integer_value(json_object_get(res, "expires_at_ms")), T0 + TTL_MAX * 1000LL);
        assert_int_equal(json_array_size(json_object_get(res, "modes")), 3);
        assert_int_equal(json_array_size(json_object_get(res, "runtime_template_ids")), 2);

        json_t *cat = glove_exposures_catalog(e->x, T0);
        json_t *arr = json_object_get(cat, "exposures");
        assert_int_equal(json_array_size(arr), 1);
        json_t *entry = json_array_get(arr, 0);
        assert_int_equal(json_object_size(entry), 8);
        assert_string_equal(xid(entry), id);
        assert_string_equal(json_string_value(json_object_get(entry, "scope_digest")),
                            json_string_value(json_object_get(res, "scope_digest")));
        /* Nothing that names the host leaves in the catalog. */
        char *text = json_dumps(cat, JSON_COMPACT);
        assert_null(strstr(text, e->base));
        assert_null(strstr(text, "proj1\"}")); /* only as the label value */
        assert_null(strstr(text, "\"path\""));
        assert_null(strstr(text, "root_id"));
        assert_null(strstr(text, "\"dev\""));
        assert_null(strstr(text, "\"ino\""));
        assert_null(strstr(text, "nonce"));
        free(text);
        json_decref(cat);

        json_t *list = glove_exposures_list(e->x, T0);
        entry = json_array_get(json_object_get(list, "exposures"), 0);
        assert_string_equal(json_string_value(json_object_get(entry, "path")), p);
        assert_int_equal(json_integer_value(json_object_get(entry, "created_at_ms")), T0);
        json_decref(list);

        assert_string_equal(glove_exposures_target(e->x, id), "/workspace");
        assert_null(glove_exposures_target(e->x, "exp-00000000000000000000000000000000"));
        json_decref(res);
}

static void test_revoke_reenroll(void **state) {
        struct xenv *e = *state;
        json_t *res = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(xcreate(e, "proj", T0, &res, fresh(&err)), 0);
        char id[GLOVE_EXPOSURE_ID_SIZE];
        snprintf(id, sizeof(id), "%s", xid(res));
        json_decref(res);

        assert_int_equal(xcreate(e, "proj", T0 + 1, NULL, fresh(&err)), -EEXIST);
        assert_string_equal(err.code, "exposure.live");

        assert_int_equal(glove_exposures_revoke(e->x, "exp-00000000000000000000000000000000", 0, T0, NULL, fresh(&err)),
                         -ENOENT);
        assert_string_equal(err.code, "exposure.unknown");
        assert_int_equal(glove_exposures_revoke(e->x, id, 2, T0, NULL, fresh(&err)), -ENOENT);
        assert_string_equal(err.code, "exposure.unknown");
        assert_int_equal(glove_exposures_revoke(e->x, id, 1, T0 + 5, &res, fresh(&err)), 0);
        assert_string_equal(json_string_value(json_object_get(res, "state")), "revoked");
        json_decref(res);
        assert_int_equal(glove_exposures_revoke(e->x, id, 0, T0 + 6, NULL, fresh(&err)), -EKEYREVOKED);
        assert_string_equal(err.code, "exposure.revoked");

        assert_int_equal(xcreate(e, "proj", T0 + 10, &res, fresh(&err)), 0);
        assert_string_equal(xid(res), id);
        assert_int_equal(json_integer_value(json_object_get(res, "generation")), 2);
        json_decref(res);
        assert_int_equal(glove_exposures_revoke(e->x, id, 1, T0 + 11, NULL, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.superseded");

        /* The catalog shows the newest generation only. */
        json_t *cat = glove_exposures_catalog(e->x, T0 + 12);
        json_t *arr = json_object_get(cat, "exposures");
        assert_int_equal(json_array_size(arr), 1);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, 0), "generation")), 2);
        json_decref(cat);

        struct glove_exposure_source src;
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0 + 12, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.superseded");
        assert_int_equal(glove_exposures_open_source(e->x, id, 2, T0 + 12, &src, fresh(&err)), 0);
        glove_exposure_source_close(&src);
}

static void test_expired(void **state) {
        struct xenv *e = *state;
        char p[1024];
        xsub(e, "short", p, sizeof(p));
        xmkdir(p);
        struct glove_exposure_request req = { .path = p, .ttl_secs = 10 };
        json_t *res = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_exposures_create(e->x, &req, T0, &res, fresh(&err)), 0);
        char id[GLOVE_EXPOSURE_ID_SIZE];
        snprintf(id, sizeof(id), "%s", xid(res));
        json_decref(res);
        json_t *cat = glove_exposures_catalog(e->x, T0 + 10000);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(cat, "exposures"), 0),
                                                              "state")),
                            "expired");
        json_decref(cat);
        struct glove_exposure_source src;
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0 + 10000, &src, fresh(&err)), -EKEYEXPIRED);
        assert_string_equal(err.code, "exposure.expired");
        assert_int_equal(glove_exposures_revoke(e->x, id, 0, T0 + 10000, NULL, fresh(&err)), -EKEYEXPIRED);
        /* Enrolling again writes the expire record, then generation 2. */
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 20000, &res, fresh(&err)), 0);
        assert_int_equal(json_integer_value(json_object_get(res, "generation")), 2);
        json_decref(res);
        req.ttl_secs = TTL_MAX + 1;
        xsub(e, "long", p, sizeof(p));
        xmkdir(p);
        req.path = p;
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.ttl_exceeded");
        /* expire_due writes one record for the live, due generation. */
        assert_int_equal(glove_exposures_expire_due(e->x, T0 + 20000 + 9999, fresh(&err)), 0);
        assert_int_equal(glove_exposures_expire_due(e->x, T0 + 30000, fresh(&err)), 1);
        assert_int_equal(glove_exposures_expire_due(e->x, T0 + 30001, fresh(&err)), 0);
}

static void expect_create_error(struct xenv *e, const char *path, const char *code) {
        struct glove_exposure_request req = { .path = path };
        struct glove_error err = { 0 };
        json_t *res = NULL;
        int r = glove_exposures_create(e->x, &req, T0, &res, fresh(&err));
        if (r >= 0 || strcmp(err.code, code) != 0)
                fprintf(stderr, "%s: r=%d %s: %s\n", path, r, err.code ? err.code : "-", err.message);
        assert_true(r < 0);
        assert_null(res);
        assert_string_equal(err.code, code);
}

static void test_create_errors(void **state) {
        struct xenv *e = *state;
        char p[1024], q[1024];
        expect_create_error(e, "relative/path", "exposure.not_absolute");
        snprintf(p, sizeof(p), "%s/a/../b", e->root);
        expect_create_error(e, p, "exposure.not_absolute");
        snprintf(p, sizeof(p), "%s/a/", e->root);
        expect_create_error(e, p, "exposure.not_absolute");
        expect_create_error(e, e->outside, "exposure.outside_roots");
        expect_create_error(e, e->root, "exposure.is_root");
        xsub(e, "nothing-here", p, sizeof(p));
        expect_create_error(e, p, "exposure.missing");
        xsub(e, "file", p, sizeof(p));
        close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
        expect_create_error(e, p, "exposure.not_directory");
        /* A link as the project, and as a component above it. */
        xsub(e, "real", p, sizeof(p));
        xmkdir(p);
        xsub(e, "real/sub", q, sizeof(q));
        xmkdir(q);
        xsub(e, "link", q, sizeof(q));
        assert_int_equal(symlink(p, q), 0);
        expect_create_error(e, q, "exposure.symlink");
        xsub(e, "link/sub", q, sizeof(q));
        expect_create_error(e, q, "exposure.symlink");

        xsub(e, "ok", p, sizeof(p));
        xmkdir(p);
        const char *bad_mode[] = { "direct_write", NULL };
        struct glove_exposure_request req = { .path = p, .modes = bad_mode };
        struct glove_error err = { 0 };
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.mode_not_allowed");
        const char *bad_rt[] = { "codex-safe", "other", NULL };
        req = (struct glove_exposure_request){ .path = p, .runtime_template_ids = bad_rt };
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.runtime_not_allowed");
        req = (struct glove_exposure_request){ .path = p, .label = "bad\nlabel" };
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.invalid_label");
        req.label = "0123456789012345678901234567890123456789012345678901234567890123456789";
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.invalid_label");
        req.label = "\xc3\x28";
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.invalid_label");

        /* A subset of modes and runtimes, and a label. */
        const char *modes[] = { "read", NULL }, *rts[] = { "pi-safe", NULL };
        req = (struct glove_exposure_request){ .path = p, .label = "Web app", .modes = modes,
                                               .runtime_template_ids = rts };
        json_t *res = NULL;
        assert_int_equal(glove_exposures_create(e->x, &req, T0, &res, fresh(&err)), 0);
        assert_string_equal(json_string_value(json_object_get(res, "label")), "Web app");
        json_t *m = json_object_get(res, "modes");
        assert_int_equal(json_array_size(m), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "access")), "read");
        assert_string_equal(json_string_value(json_array_get(json_object_get(res, "runtime_template_ids"), 0)),
                            "pi-safe");
        json_decref(res);
        /* Nothing was appended by the refusals: one record in the journal. */
        json_t *cat = glove_exposures_catalog(e->x, T0);
        assert_int_equal(json_array_size(json_object_get(cat, "exposures")), 1);
        json_decref(cat);
}

static void test_restricted(void **state) {
        struct xenv *e = *state;
        /* The policy root contains a restricted directory: the project inside it is refused. */
        char p[1024];
        xsub(e, "gloved-state", p, sizeof(p));
        xmkdir(p);
        char q[1100];
        snprintf(q, sizeof(q), "%s/inner", p);
        xmkdir(q);
        glove_exposures_close(e->x);
        e->x = NULL;
        const char *restricted[] = { q, NULL };
        struct glove_exposures_options o = {
                .policy = e->policy, .journal_path = e->journal, .owner = getuid(), .restricted = restricted,
        };
        struct glove_error err = { 0 };
        assert_int_equal(glove_exposures_open(&o, T0, &e->x, fresh(&err)), 0);
        expect_create_error(e, p, "exposure.restricted"); /* contains it */
        expect_create_error(e, q, "exposure.restricted"); /* is it */
        char r[1200];
        snprintf(r, sizeof(r), "%s/deeper", q);
        xmkdir(r);
        expect_create_error(e, r, "exposure.restricted"); /* inside it */
}

static void test_root_unavailable(void **state) {
        struct xenv *e = *state;
        char p[1024];
        xsub(e, "proj", p, sizeof(p));
        xmkdir(p);
        /* The root is replaced after gloved pinned it. */
        char moved[700];
        snprintf(moved, sizeof(moved), "%s/src-old", e->base);
        assert_int_equal(rename(e->root, moved), 0);
        xmkdir(e->root);
        xmkdir(p);
        expect_create_error(e, p, "exposure.root_unavailable");
}

/* ---- prepare: the source and its identity ---- */

static void test_open_source_changed(void **state) {
        struct xenv *e = *state;
        json_t *res = NULL;
        struct glove_error err = { 0 };
        char p[1024];
        xsub(e, "a", p, sizeof(p));
        xmkdir(p);
        assert_int_equal(xcreate(e, "a/proj", T0, &res, fresh(&err)), 0);
        char id[GLOVE_EXPOSURE_ID_SIZE];
        snprintf(id, sizeof(id), "%s", xid(res));

        struct glove_exposure_source src;
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), 0);
        xsub(e, "a/proj", p, sizeof(p));
        assert_string_equal(src.path, p);
        assert_string_equal(src.target_path, "/workspace");
        assert_int_equal(src.generation, 1);
        assert_string_equal(src.scope_digest, json_string_value(json_object_get(res, "scope_digest")));
        struct stat st;
        assert_int_equal(fstat(src.fd, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_true(st.st_ino == src.ino && st.st_dev == src.dev);
        glove_exposure_source_close(&src);
        assert_int_equal(src.fd, -1);
        json_decref(res);

        /* Replaced by another directory. */
        char old[1100];
        snprintf(old, sizeof(old), "%s.old", p);
        assert_int_equal(rename(p, old), 0);
        xmkdir(p);
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.changed");
        assert_null(strstr(err.message, e->base)); /* messages name no path */
        /* By a link to the original. */
        assert_int_equal(rmdir(p), 0);
        assert_int_equal(symlink(old, p), 0);
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.changed");
        /* Back in place: accepted again. */
        assert_int_equal(unlink(p), 0);
        assert_int_equal(rename(old, p), 0);
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), 0);
        glove_exposure_source_close(&src);
        /* The parent replaced (the project moved with it to a new parent). */
        char a[1024], a2[1024];
        xsub(e, "a", a, sizeof(a));
        xsub(e, "a2", a2, sizeof(a2));
        assert_int_equal(rename(a, a2), 0);
        xmkdir(a);
        snprintf(old, sizeof(old), "%s/proj", a2);
        assert_int_equal(rename(old, p), 0);
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.changed");
        /* The root replaced. */
        assert_int_equal(rename(p, old), 0);
        assert_int_equal(rmdir(a), 0);
        assert_int_equal(rename(a2, a), 0);
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), 0);
        glove_exposure_source_close(&src);
        char moved[700];
        snprintf(moved, sizeof(moved), "%s/src-old", e->base);
        assert_int_equal(rename(e->root, moved), 0);
        assert_int_equal(symlink(moved, e->root), 0);
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.changed");
        assert_int_equal(unlink(e->root), 0);
        xmkdir(e->root);
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.changed");
        assert_int_equal(glove_exposures_open_source(e->x, "exp-00000000000000000000000000000000", 1, T0, &src, fresh(&err)),
                         -ENOENT);
        assert_string_equal(err.code, "exposure.unknown");
}

static void test_cross_device(void **state) {
        struct xenv *e = *state;
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: mounting a tmpfs beneath the root needs root\n");
                skip();
        }
        char p[1024], q[1100];
        xsub(e, "mnt", p, sizeof(p));
        xmkdir(p);
        if (mount("exposure-test", p, "tmpfs", 0, "size=64k") < 0) {
                fprintf(stderr, "skipped: cannot mount a tmpfs: %s\n", strerror(errno));
                skip();
        }
        snprintf(q, sizeof(q), "%s/proj", p);
        xmkdir(q);
        expect_create_error(e, p, "exposure.cross_device");
        expect_create_error(e, q, "exposure.cross_device");
        umount2(p, MNT_DETACH);
}

/* ---- plans ---- */

static void test_check_grant(void **state) {
        struct xenv *e = *state;
        json_t *res = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(xcreate(e, "proj", T0, &res, fresh(&err)), 0);
        char id[GLOVE_EXPOSURE_ID_SIZE];
        snprintf(id, sizeof(id), "%s", xid(res));
        json_decref(res);
        const struct glove_exposure_grant ok = {
                .exposure_id = id, .generation = 1, .access = "retained_write", .materialization = "copy",
                .cleanup_policy = "retain", .max_bytes = 3000, .ttl_secs = 600,
                .runtime_template_id = "codex-safe", .plan_expires_at_ms = T0 + 60000,
        };
        const char *member = "x";
        assert_null(glove_exposures_check_grant(e->x, &ok, T0, &member));
        assert_null(member);
        struct glove_exposure_grant g = ok;
        g.exposure_id = "exp-00000000000000000000000000000000";
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0, &member), "plan.exposure_unknown");
        g = ok;
        g.generation = 2;
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0, &member), "plan.exposure_unknown");
        assert_string_equal(member, "exposure_generation");
        g = ok;
        g.access = "direct_write";
        g.materialization = "bind";
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0, &member), "plan.exposure_mode_not_allowed");
        assert_string_equal(member, "access");
        g = ok;
        g.cleanup_policy = "remove";
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0, &member), "plan.exposure_cleanup_mismatch");
        assert_string_equal(member, "cleanup_policy");
        g = ok;
        g.max_bytes = 3001;
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0, &member), "plan.exposure_quota_exceeded");
        assert_string_equal(member, "max_bytes");
        g = ok;
        g.runtime_template_id = "other";
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0, &member), "plan.exposure_runtime_not_allowed");
        assert_null(member);
        g = ok;
        g.ttl_secs = TTL_MAX;
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0, &member), "plan.exposure_expires_too_soon");
        assert_string_equal(member, "ttl_secs");
        g.plan_expires_at_ms = T0;
        assert_null(glove_exposures_check_grant(e->x, &g, T0, &member));
        assert_string_equal(glove_exposures_check_grant(e->x, &ok, T0 + TTL_MAX * 1000LL, &member),
                            "plan.exposure_expired");
        assert_int_equal(glove_exposures_revoke(e->x, id, 1, T0 + 1, NULL, fresh(&err)), 0);
        assert_string_equal(glove_exposures_check_grant(e->x, &ok, T0 + 1, &member), "plan.exposure_revoked");
        assert_int_equal(xcreate(e, "proj", T0 + 2, NULL, fresh(&err)), 0);
        assert_string_equal(glove_exposures_check_grant(e->x, &ok, T0 + 2, &member), "plan.exposure_superseded");
        g = ok;
        g.generation = 2;
        assert_null(glove_exposures_check_grant(e->x, &g, T0 + 2, NULL));

        /* gloved restarts after the root was replaced: the pinned root is
         * another directory than the exposure's. */
        glove_exposures_close(e->x);
        e->x = NULL;
        char moved[700];
        snprintf(moved, sizeof(moved), "%s/src-old", e->base);
        assert_int_equal(rename(e->root, moved), 0);
        xmkdir(e->root);
        assert_int_equal(xopen(e, T0 + 3, fresh(&err)), 0);
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0 + 3, &member), "plan.exposure_root_unavailable");
        /* And with the root gone entirely. */
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(rmdir(e->root), 0);
        assert_int_equal(xopen(e, T0 + 3, fresh(&err)), 0);
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0 + 3, &member), "plan.exposure_root_unavailable");
        struct glove_exposure_source src;
        assert_int_equal(glove_exposures_open_source(e->x, id, 2, T0 + 3, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.root_unavailable");
        char p[1024];
        xsub(e, "proj", p, sizeof(p));
        expect_create_error(e, p, "exposure.root_unavailable");
}

/* ---- a narrowed policy, roots that cannot be pinned, request order ---- */

/* Replaces the policy with text (one root "src" at e->root unless the text
 * says otherwise; %s is e->root) and reopens the registry at now. */
static void repolicy(struct xenv *e, const char *fmt, const char *path, int64_t now) {
        glove_exposures_close(e->x);
        e->x = NULL;
        glove_exposure_policy_free(e->policy);
        e->policy = NULL;
        snprintf(e->policy_text, sizeof(e->policy_text), fmt, path);
        struct glove_error err = { 0 };
        assert_int_equal(glove_exposure_policy_decode(e->policy_text, strlen(e->policy_text), &e->policy, NULL, 0,
                                                      &err),
                         0);
        assert_int_equal(xopen(e, now, fresh(&err)), 0);
}

static const char narrowed_policy[] =
        "{\"roots\":[{\"access\":["
        "{\"access\":\"read\",\"cleanup_policy\":\"remove\",\"materialization\":\"bind\",\"max_bytes\":500},"
        "{\"access\":\"retained_write\",\"cleanup_policy\":\"retain\",\"materialization\":\"copy\","
        "\"max_bytes\":5000}],"
        "\"max_ttl_secs\":600,\"path\":\"%s\",\"root_id\":\"src\","
        "\"runtime_template_ids\":[\"pi-safe\",\"zz-new\"],\"target_path\":\"/workspace\"}],"
        "\"schema_version\":1}";

static const char other_root_policy[] =
        "{\"roots\":[{\"access\":["
        "{\"access\":\"read\",\"cleanup_policy\":\"remove\",\"materialization\":\"bind\",\"max_bytes\":500}],"
        "\"max_ttl_secs\":600,\"path\":\"%s\",\"root_id\":\"other\","
        "\"runtime_template_ids\":[\"pi-safe\"],\"target_path\":\"/workspace\"}],"
        "\"schema_version\":1}";

static json_t *only_entry(json_t *view) {
        assert_int_equal(json_array_size(json_object_get(view, "exposures")), 1);
        return json_array_get(json_object_get(view, "exposures"), 0);
}

static void test_narrowed_policy(void **state) {
        struct xenv *e = *state;
        json_t *res = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(xcreate(e, "proj", T0, &res, fresh(&err)), 0);
        char id[GLOVE_EXPOSURE_ID_SIZE], scope[GLOVE_EXPOSURE_DIGEST_HEX_SIZE];
        snprintf(id, sizeof(id), "%s", xid(res));
        snprintf(scope, sizeof(scope), "%s", json_string_value(json_object_get(res, "scope_digest")));
        int64_t created = json_integer_value(json_object_get(res, "created_at_ms"));
        json_decref(res);

        /* The owner narrows the root and restarts gloved. */
        repolicy(e, narrowed_policy, e->root, T0 + 1);
        json_t *want_modes = json_loads(
                "[{\"access\":\"read\",\"cleanup_policy\":\"remove\",\"materialization\":\"bind\",\"max_bytes\":500},"
                "{\"access\":\"retained_write\",\"cleanup_policy\":\"retain\",\"materialization\":\"copy\","
                "\"max_bytes\":3000}]",
                0, NULL);
        json_t *want_rts = json_loads("[\"pi-safe\"]", 0, NULL);
        json_t *views[2] = { glove_exposures_catalog(e->x, T0 + 1), glove_exposures_list(e->x, T0 + 1) };
        for (int k = 0; k < 2; k++) {
                json_t *o = only_entry(views[k]);
                assert_true(json_equal(json_object_get(o, "modes"), want_modes));
                assert_true(json_equal(json_object_get(o, "runtime_template_ids"), want_rts));
                assert_int_equal(json_integer_value(json_object_get(o, "expires_at_ms")), created + 600000);
                assert_string_equal(json_string_value(json_object_get(o, "state")), "live");
                assert_string_equal(json_string_value(json_object_get(o, "scope_digest")), scope);
                json_decref(views[k]);
        }
        json_decref(want_modes);
        json_decref(want_rts);

        const struct glove_exposure_grant ok = {
                .exposure_id = id, .generation = 1, .access = "read", .materialization = "bind",
                .cleanup_policy = "remove", .max_bytes = 500, .ttl_secs = 60,
                .runtime_template_id = "pi-safe", .plan_expires_at_ms = T0 + 60000,
        };
        const char *member = NULL;
        assert_null(glove_exposures_check_grant(e->x, &ok, T0 + 1, &member));
        struct glove_exposure_grant g = ok;
        g.max_bytes = 501;
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0 + 1, &member), "plan.exposure_quota_exceeded");
        g = ok;
        g.access = "ephemeral_write";
        g.materialization = "copy";
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0 + 1, &member), "plan.exposure_mode_not_allowed");
        g = ok;
        g.runtime_template_id = "codex-safe";
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0 + 1, &member),
                            "plan.exposure_runtime_not_allowed");
        g = ok;
        g.runtime_template_id = "zz-new"; /* the root allows it now, the exposure never did */
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0 + 1, &member),
                            "plan.exposure_runtime_not_allowed");
        g = ok;
        g.ttl_secs = 600; /* past created + 600 s, within the recorded hour */
        assert_string_equal(glove_exposures_check_grant(e->x, &g, T0 + 1, &member), "plan.exposure_expires_too_soon");
        struct glove_exposure_source src;
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, T0 + 1, &src, fresh(&err)), 0);
        glove_exposure_source_close(&src);

        /* Past the effective expiry (the recorded one is still ahead). */
        int64_t late = created + 600000;
        assert_string_equal(glove_exposures_check_grant(e->x, &ok, late, &member), "plan.exposure_expired");
        assert_int_equal(glove_exposures_open_source(e->x, id, 1, late, &src, fresh(&err)), -EKEYEXPIRED);
        assert_string_equal(err.code, "exposure.expired");
        json_t *cat = glove_exposures_catalog(e->x, late);
        assert_string_equal(json_string_value(json_object_get(only_entry(cat), "state")), "expired");
        json_decref(cat);
        /* The project can be enrolled again (its old generation ends by a
         * revoke record: its recorded expiry has not passed), and replays. */
        char p[1024];
        xsub(e, "proj", p, sizeof(p));
        const char *rd[] = { "read", NULL };
        struct glove_exposure_request req = { .path = p, .modes = rd };
        assert_int_equal(glove_exposures_create(e->x, &req, late, &res, fresh(&err)), 0);
        assert_int_equal(json_integer_value(json_object_get(res, "generation")), 2);
        json_decref(res);
        json_t *before = glove_exposures_list(e->x, late);
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(xopen(e, late, fresh(&err)), 0);
        json_t *after = glove_exposures_list(e->x, late);
        assert_true(json_equal(before, after));
        json_decref(before);
        json_decref(after);

        /* The root leaves the policy: the entry stays, with no modes, and
         * cannot be used. */
        repolicy(e, other_root_policy, e->outside, late + 1);
        cat = glove_exposures_catalog(e->x, late + 1);
        json_t *o = only_entry(cat);
        assert_int_equal(json_array_size(json_object_get(o, "modes")), 0);
        assert_int_equal(json_array_size(json_object_get(o, "runtime_template_ids")), 0);
        assert_string_equal(json_string_value(json_object_get(o, "state")), "live");
        json_decref(cat);
        g = ok;
        g.generation = 2;
        g.plan_expires_at_ms = late + 1;
        assert_string_equal(glove_exposures_check_grant(e->x, &g, late + 1, &member), "plan.exposure_root_unavailable");
        assert_int_equal(glove_exposures_open_source(e->x, id, 2, late + 1, &src, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.root_unavailable");
        assert_null(strstr(err.message, e->root));
        assert_null(strstr(err.message, "src"));
}

/* Past only its effective expiry, a generation can still be revoked, and
 * its project enrolled again; both replay. */
static void test_narrowed_revoke(void **state) {
        struct xenv *e = *state;
        json_t *a = NULL, *b = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(xcreate(e, "one", T0, &a, fresh(&err)), 0);
        assert_int_equal(xcreate(e, "two", T0, &b, fresh(&err)), 0);
        repolicy(e, narrowed_policy, e->root, T0 + 1);
        int64_t late = T0 + 600000;
        json_t *r = NULL;
        assert_int_equal(glove_exposures_revoke(e->x, xid(a), 1, late, &r, fresh(&err)), 0);
        assert_string_equal(json_string_value(json_object_get(r, "state")), "revoked");
        json_decref(r);
        assert_int_equal(glove_exposures_revoke(e->x, xid(a), 1, late, NULL, fresh(&err)), -EKEYREVOKED);
        assert_int_equal(glove_exposures_revoke(e->x, xid(a), 2, late, NULL, fresh(&err)), -ENOENT);
        assert_string_equal(err.code, "exposure.unknown");
        assert_int_equal(xcreate(e, "two", late, &r, fresh(&err)), 0);
        assert_string_equal(xid(r), xid(b));
        assert_int_equal(json_integer_value(json_object_get(r, "generation")), 2);
        json_decref(r);
        json_t *before = glove_exposures_list(e->x, late);
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(xopen(e, late, fresh(&err)), 0);
        json_t *after = glove_exposures_list(e->x, late);
        assert_true(json_equal(before, after));
        json_decref(before);
        json_decref(after);
        json_decref(a);
        json_decref(b);
}

static void test_root_problem(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        assert_null(glove_exposures_root_problem(e->x, 0));
        assert_null(glove_exposures_root_problem(e->x, 1));
        json_t *early = NULL;
        assert_int_equal(xcreate(e, "early", T0, &early, fresh(&err)), 0);
        assert_true(json_array_size(json_object_get(early, "modes")) > 0);
        char real[700], p[1024];
        snprintf(real, sizeof(real), "%s/src-real", e->base);
        assert_int_equal(rename(e->root, real), 0);
        assert_int_equal(symlink(real, e->root), 0);
        xsub(e, "proj", p, sizeof(p));
        xmkdir(p);
        /* A symbolic link: named as such, at start and in the refusal. */
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(xopen(e, T0, fresh(&err)), 0);
        assert_non_null(glove_exposures_root_problem(e->x, 0));
        assert_non_null(strstr(glove_exposures_root_problem(e->x, 0), "symbolic link"));
        struct glove_exposure_request req = { .path = p };
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.root_unavailable");
        assert_non_null(strstr(err.message, "symbolic link"));
        assert_null(strstr(err.message, "once it exists"));
        /* Missing. */
        assert_int_equal(unlink(e->root), 0);
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(xopen(e, T0, fresh(&err)), 0);
        assert_string_equal(glove_exposures_root_problem(e->x, 0), "missing");
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -ESTALE);
        assert_non_null(strstr(err.message, "missing"));
        /* Not a directory. */
        close(open(e->root, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(xopen(e, T0, fresh(&err)), 0);
        assert_string_equal(glove_exposures_root_problem(e->x, 0), "not a directory");
        assert_int_equal(unlink(e->root), 0);
        assert_int_equal(rename(real, e->root), 0);
        /* Writable by group or others: what setup --path-root refuses is
         * not pinned at start either. */
        struct stat st;
        assert_int_equal(stat(e->root, &st), 0);
        assert_int_equal(chmod(e->root, 0775), 0);
        glove_exposures_close(e->x);
        e->x = NULL;
        assert_int_equal(xopen(e, T0, fresh(&err)), 0);
        assert_non_null(strstr(glove_exposures_root_problem(e->x, 0), "writable by group or others (mode 0775)"));
        assert_int_equal(glove_exposures_create(e->x, &req, T0, NULL, fresh(&err)), -ESTALE);
        assert_string_equal(err.code, "exposure.root_unavailable");
        assert_non_null(strstr(err.message, "writable by group or others"));
        /* Its exposures allow nothing while it is unpinned: no modes in
         * the catalog, state as recorded. */
        json_t *cat = glove_exposures_catalog(e->x, T0 + 1);
        json_t *ce = json_array_get(json_object_get(cat, "exposures"), 0);
        assert_string_equal(json_string_value(json_object_get(ce, "exposure_id")), xid(early));
        assert_int_equal(json_array_size(json_object_get(ce, "modes")), 0);
        assert_int_equal(json_array_size(json_object_get(ce, "runtime_template_ids")), 0);
        assert_string_equal(json_string_value(json_object_get(ce, "state")), "live");
        json_decref(cat);
        assert_int_equal(chmod(e->root, st.st_mode & 07777), 0);
        /* Owned by another user than gloved's. */
        struct glove_exposures_options o = {
                .policy = e->policy, .journal_path = e->journal, .owner = getuid(), .restricted = e->restricted,
        };
        glove_exposures_close(e->x);
        e->x = NULL;
        if (getuid() == 0) {
                assert_int_equal(chown(e->root, 65534, (gid_t)-1), 0);
                assert_int_equal(glove_exposures_open(&o, T0, &e->x, fresh(&err)), 0);
                assert_non_null(strstr(glove_exposures_root_problem(e->x, 0), "owned by uid 65534, not by gloved's uid 0"));
                assert_int_equal(chown(e->root, 0, (gid_t)-1), 0);
                glove_exposures_close(e->x);
                e->x = NULL;
        }
        assert_int_equal(glove_exposures_open(&o, T0, &e->x, fresh(&err)), 0);
        assert_null(glove_exposures_root_problem(e->x, 0));
        cat = glove_exposures_catalog(e->x, T0 + 1);
        assert_true(json_equal(json_object_get(json_array_get(json_object_get(cat, "exposures"), 0), "modes"),
                               json_object_get(early, "modes")));
        json_decref(cat);
        json_decref(early);
}

/* The request's own mistakes come before exposure.live; labels with
 * bidirectional or format controls are refused. */
static void test_create_order_and_labels(void **state) {
        struct xenv *e = *state;
        struct glove_error err = { 0 };
        assert_int_equal(xcreate(e, "proj", T0, NULL, fresh(&err)), 0);
        char p[1024];
        xsub(e, "proj", p, sizeof(p));
        const char *bad_mode[] = { "write", NULL }, *bad_rt[] = { "other", NULL };
        struct glove_exposure_request req = { .path = p, .modes = bad_mode };
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.mode_not_allowed");
        req = (struct glove_exposure_request){ .path = p, .runtime_template_ids = bad_rt };
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.runtime_not_allowed");
        req = (struct glove_exposure_request){ .path = p, .ttl_secs = TTL_MAX + 1 };
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.ttl_exceeded");
        req = (struct glove_exposure_request){ .path = p, .label = "a\x7f" };
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.invalid_label");
        req = (struct glove_exposure_request){ .path = p };
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EEXIST);
        assert_string_equal(err.code, "exposure.live");

        static const char *const bidi[] = {
                "a\xe2\x80\x8e", "a\xe2\x80\x8f", "a\xe2\x80\xaa", "a\xe2\x80\xab", "a\xe2\x80\xac",
                "a\xe2\x80\xad", "a\xe2\x80\xae", "a\xe2\x81\xa6", "a\xe2\x81\xa7", "a\xe2\x81\xa8",
                "a\xe2\x81\xa9", "a\xd8\x9c",     "\xef\xbb\xbf" "a",
                /* The rest of format category Cf and the separators:
                 * U+200B, U+200C, U+200D, U+2060, U+00AD, U+180E, U+2028,
                 * U+2029, U+FFF9, U+E0041 (a tag), U+0600. */
                "a\xe2\x80\x8b", "a\xe2\x80\x8c", "a\xe2\x80\x8d", "a\xe2\x81\xa0", "a\xc2\xad",
                "a\xe1\xa0\x8e", "a\xe2\x80\xa8", "a\xe2\x80\xa9", "a\xef\xbf\xb9", "a\xf3\xa0\x81\x81",
                "a\xd8\x80",
        };
        char q[1024];
        xsub(e, "other", q, sizeof(q));
        xmkdir(q);
        for (size_t i = 0; i < sizeof(bidi) / sizeof(bidi[0]); i++) {
                req = (struct glove_exposure_request){ .path = q, .label = bidi[i] };
                assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EINVAL);
                assert_string_equal(err.code, "exposure.invalid_label");
        }
        /* Neighbours of those code points are fine: U+200A, U+2010,
         * U+202F, U+061B, U+00AC, U+FFFC, U+E0100 (a variation selector,
         * Mn), and letters. */
        static const char *const fine[] = { "a\xe2\x80\x8a", "a\xe2\x80\x90", "a\xe2\x80\xaf", "a\xd8\x9b",
                                            "a\xc2\xac",      "a\xef\xbf\xbc", "a\xf3\xa0\x84\x80",
                                            "\xc3\xa9t\xc3\xa9", "\xf0\x9f\x98\x80" };
        for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
                assert_true(exp_label_acceptable(fine[i]));
        /* A directory named with one needs --label. */
        xsub(e, "x\xe2\x80\xae" "y", q, sizeof(q));
        xmkdir(q);
        req = (struct glove_exposure_request){ .path = q };
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), -EINVAL);
        assert_string_equal(err.code, "exposure.invalid_label");
        req.label = "ok";
        assert_int_equal(glove_exposures_create(e->x, &req, T0 + 1, NULL, fresh(&err)), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_policy_good, setup, teardown),
                cmocka_unit_test_setup_teardown(test_policy_bad, setup, teardown),
                cmocka_unit_test_setup_teardown(test_policy_load, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_catalog_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_revoke_reenroll, setup, teardown),
                cmocka_unit_test_setup_teardown(test_expired, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restricted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_root_unavailable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_source_changed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cross_device, setup, teardown),
                cmocka_unit_test_setup_teardown(test_check_grant, setup, teardown),
                cmocka_unit_test_setup_teardown(test_narrowed_policy, setup, teardown),
                cmocka_unit_test_setup_teardown(test_narrowed_revoke, setup, teardown),
                cmocka_unit_test_setup_teardown(test_root_problem, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_order_and_labels, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

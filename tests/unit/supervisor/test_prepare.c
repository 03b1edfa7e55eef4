/* SPDX-License-Identifier: Apache-2.0 */
/* glove/supervisor/prepare.h: alias resolution, launch resolution, the launch
 * binding, egress resolution, and (as root) retained ext4 images. Host paths
 * live in a fresh directory below the test's working directory (the build
 * directory), as /tmp is a reserved sandbox target. */
/* Test paths are far below PATH_MAX. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/container/mount_plan.h"
#include "glove/net/rule.h"
#include "glove/session/session.h"
#include "glove/supervisor/launch.h"
#include "glove/supervisor/prepare.h"

static char base[PATH_MAX];

static void mkdirs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mkdirs(const char *fmt, ...) {
        char p[PATH_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p, sizeof(p), fmt, ap);
        va_end(ap);
        assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
}

static void rm_rf(const char *p) {
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", p);
        assert_int_equal(system(cmd), 0);
}

/* The launch: /usr/bin/true --version, PATH only, one read-only path. */
static const char *const env_list[] = { "PATH=/usr/bin:/bin" };

static struct glove_supervisor_policy *make_policy(const char *aliases, const char *allowed) {
        char ro[PATH_MAX];
        snprintf(ro, sizeof(ro), "%s/ro", base);
        const char *ro_list[] = { ro };
        const char *args[] = { "--version" };
        struct glove_supervisor_launch_template t = {
                .executable_path = "/usr/bin/true",
                .arguments = args, .n_arguments = 1,
                .environment = env_list, .n_environment = 1,
                .read_only_paths = ro_list, .n_read_only_paths = 1,
        };
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_supervisor_launch_template_digest(&t, digest, NULL), 0);
        static char text[16384];
        snprintf(text, sizeof(text),
                 "{\"schema_version\":1,\"revision\":1,\"max_plan_ttl_ms\":120000,"
                 "\"runtime_templates\":[{\"runtime_template_id\":\"t\",\"runtime_id\":\"pyrt\","
                 "\"adapter_command_digest\":\"%s\",\"sandbox_backend\":\"linux_production\","
                 "\"allowed_path_aliases\":[%s],\"allowed_projection_destinations\":[],"
                 "\"launch\":{\"executable_path\":\"/usr/bin/true\",\"arguments\":[\"--version\"],"
                 "\"environment\":[\"PATH=/usr/bin:/bin\"],\"read_only_paths\":[\"%s\"]}}],"
                 "\"path_aliases\":[%s],\"library_projection_destinations\":[],"
                 "\"resource_profiles\":[{\"profile_id\":\"small\",\"cpu_time_ms\":1000,\"memory_bytes\":67108864,"
                 "\"pids\":16,\"wall_time_ms\":2000,\"disk_bytes\":2097152,\"terminal_output_bytes\":1048576}],"
                 "\"egress_policy_ids\":[\"mixed\",\"no-network\"],\"tool_policy_ids\":[],\"secret_handles\":[],"
                 "\"egress_policies\":[{\"policy_id\":\"mixed\",\"targets\":["
                 "{\"host\":\"127.0.0.1\",\"port\":8787,\"allow_private\":true},"
                 "{\"host\":\"example.com\",\"port\":443,\"allow_private\":false}]}],"
                 "\"secret_mounts\":[]}",
                 digest, allowed, ro, aliases);
        struct glove_supervisor_policy *p = NULL;
        struct glove_error err = { 0 };
        int r = glove_supervisor_policy_decode(text, strlen(text), &p, &err);
        if (r < 0)
                fail_msg("policy: %s: %s", err.code, err.message);
        return p;
}

/* One alias JSON with one access tuple. */
static char *alias_json(const char *alias, const char *host, const char *target, const char *access,
                        const char *mat, const char *create, const char *cleanup, long long max) {
        char *s = NULL;
        assert_true(asprintf(&s,
                             "{\"alias\":\"%s\",\"host_path\":\"%s\",\"target_path\":\"%s\",\"max_ttl_secs\":600,"
                             "\"access\":[{\"access\":\"%s\",\"materialization\":\"%s\",\"create_policy\":\"%s\","
                             "\"cleanup_policy\":\"%s\",\"max_bytes\":%lld}]}",
                             alias, host, target, access, mat, create, cleanup, max) > 0);
        return s;
}

/* A plan with the given grants JSON (sorted by alias) and egress policy. */
static char *make_plan(const char *grants, const char *egress, size_t *len) {
        char *text = NULL;
        assert_true(asprintf(&text,
                             "{\"adapter_command_digest\":\"x\",\"egress_policy_id\":\"%s\",\"expires_at_ms\":1,"
                             "\"library_projections\":[],\"limits\":{\"cpu_time_ms\":1000,\"disk_bytes\":2097152,"
                             "\"memory_bytes\":67108864,\"pids\":16,\"terminal_output_bytes\":1048576,"
                             "\"wall_time_ms\":2000},\"path_grants\":[%s],\"policy_revision\":1,\"runtime_id\":\"pyrt\","
                             "\"runtime_template_id\":\"t\",\"sandbox_backend\":\"linux_production\","
                             "\"schema_version\":1,\"secret_handles\":[],\"tool_policy_id\":\"x\"}",
                             egress, grants) > 0);
        json_t *v = json_loads(text, 0, NULL);
        assert_non_null(v);
        char *out = NULL;
        assert_int_equal(glove_json_encode_canonical(v, &out, len, NULL), 0);
        json_decref(v);
        free(text);
        return out;
}

static char *grant_json(const char *alias, const char *access, const char *mat, const char *cleanup, long long max) {
        char *s = NULL;
        assert_true(asprintf(&s,
                             "{\"access\":\"%s\",\"alias\":\"%s\",\"cleanup_policy\":\"%s\",\"materialization\":\"%s\","
                             "\"max_bytes\":%lld,\"ttl_secs\":60}",
                             access, alias, cleanup, mat, max) > 0);
        return s;
}

struct fixture {
        struct glove_supervisor_policy *policy;
        struct glove_supervisor_runtime_config cfg;
        char root[PATH_MAX], state[PATH_MAX];
        const char *restricted[2];
        int root_fd;
};

static void fixture_init(struct fixture *f, struct glove_supervisor_policy *p) {
        *f = (struct fixture){ .policy = p, .root_fd = -1 };
        snprintf(f->root, sizeof(f->root), "%s/root", base);
        snprintf(f->state, sizeof(f->state), "%s/state", base);
        char left[PATH_MAX];
        snprintf(left, sizeof(left), "%s/mounts/s1/data", f->root);
        (void)umount2(left, MNT_DETACH); /* left by a failed test */
        (void)umount2(f->root, MNT_DETACH);
        rm_rf(f->root);
        assert_int_equal(mkdir(f->root, 0700), 0);
        f->root_fd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->root_fd >= 0);
        f->restricted[0] = f->state;
        f->cfg = (struct glove_supervisor_runtime_config){
                .policy = p,
                .materialization_root = f->root,
                .materialization_root_fd = f->root_fd,
                .restricted = f->restricted,
                .agent_uid = getuid(),
                .agent_gid = getgid(),
        };
}

static void fixture_fini(struct fixture *f) {
        close(f->root_fd);
        glove_supervisor_policy_free(f->policy);
}

static int setup(void **state) {
        (void)state;
        char cwd[PATH_MAX];
        assert_non_null(getcwd(cwd, sizeof(cwd)));
        snprintf(base, sizeof(base), "%s/sv-prepare-XXXXXX", cwd);
        assert_non_null(mkdtemp(base));
        mkdirs("%s/ro", base);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        rm_rf(base);
        return 0;
}

/* Prepares and expects failure with code. */
static void expect_refusal(struct fixture *f, const char *grants, const char *code) {
        size_t len;
        _cleanup_free_ char *plan = make_plan(grants, "no-network", &len);
        struct glove_supervisor_launch *l = (void *)1;
        struct glove_error err = { 0 };
        int r = glove_supervisor_launch_prepare(&f->cfg, "s1", plan, len, &l, &err);
        assert_true(r < 0);
        assert_null(l);
        if (strcmp(err.code, code) != 0)
                fail_msg("expected %s, got %s: %s", code, err.code, err.message);
        /* Nothing under the root for the session. */
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/images/s1", f->root);
        assert_int_equal(access(p, F_OK), -1);
        snprintf(p, sizeof(p), "%s/mounts/s1", f->root);
        assert_int_equal(access(p, F_OK), -1);
}

/* The binding's mount with that target (NULL: none). */
static json_t *mount_at(json_t *b, const char *target) {
        json_t *mounts = json_object_get(b, "mounts");
        for (size_t i = 0; i < json_array_size(mounts); i++) {
                json_t *m = json_array_get(mounts, i);
                if (strcmp(json_string_value(json_object_get(m, "target")), target) == 0)
                        return m;
        }
        return NULL;
}

static void test_binding(void **state) {
        (void)state;
        mkdirs("%s/ref", base);
        mkdirs("%s/work", base);
        char ref[PATH_MAX], work[PATH_MAX], scratch[PATH_MAX];
        snprintf(ref, sizeof(ref), "%s/ref", base);
        snprintf(work, sizeof(work), "%s/work", base);
        snprintf(scratch, sizeof(scratch), "%s/scratch-unused", base);
        _cleanup_free_ char *a1 = alias_json("ref", ref, "/reference", "read", "bind", "never", "retain", 1 << 20);
        _cleanup_free_ char *a2 = alias_json("scratch", scratch, "/scratch", "ephemeral_write", "copy", "empty_directory",
                                             "remove", 1 << 20);
        _cleanup_free_ char *a3 = alias_json("work", work, "/workspace", "ephemeral_write", "copy", "never", "remove",
                                             4 << 20);
        char aliases[8192];
        snprintf(aliases, sizeof(aliases), "%s,%s,%s", a1, a2, a3);
        struct fixture f;
        fixture_init(&f, make_policy(aliases, "\"ref\",\"scratch\",\"work\""));
        _cleanup_free_ char *g1 = grant_json("ref", "read", "bind", "retain", 1 << 20);
        _cleanup_free_ char *g2 = grant_json("scratch", "ephemeral_write", "copy", "remove", 1 << 20);
        _cleanup_free_ char *g3 = grant_json("work", "ephemeral_write", "copy", "remove", 3 << 20);
        char grants[4096];
        snprintf(grants, sizeof(grants), "%s,%s,%s", g1, g2, g3);
        size_t len;
        _cleanup_free_ char *plan = make_plan(grants, "no-network", &len);
        struct glove_supervisor_launch *l = NULL;
        struct glove_error err = { 0 };
        int r = glove_supervisor_launch_prepare(&f.cfg, "s1", plan, len, &l, &err);
        if (r < 0)
                fail_msg("%s: %s", err.code, err.message);
        char *const *argv = glove_supervisor_launch_argv(l);
        assert_string_equal(argv[0], "/usr/bin/true");
        assert_string_equal(argv[1], "--version");
        assert_null(argv[2]);
        char *const *envp = glove_supervisor_launch_envp(l);
        assert_string_equal(envp[0], "PATH=/usr/bin:/bin");
        assert_string_equal(envp[1], "HOME=/home/agent");
        assert_string_equal(envp[2], "TERM=xterm-256color");
        assert_null(envp[3]);
        struct glove_supervisor_limits lim;
        glove_supervisor_launch_limits(l, &lim);
        assert_int_equal(lim.cpu_time_ms, 1000);
        assert_int_equal(lim.memory_bytes, 67108864);
        assert_int_equal(lim.pids, 16);
        assert_int_equal(lim.wall_time_ms, 2000);
        assert_int_equal(lim.disk_bytes, 2097152);
        assert_int_equal(lim.terminal_output_bytes, 1048576);
        assert_null(glove_supervisor_launch_take_egress(l)); /* no-network names no targets: offline */
        assert_string_equal(glove_supervisor_launch_cwd(l), "/scratch");

        _cleanup_json_ json_t *b = glove_supervisor_launch_binding(l);
        assert_non_null(b);
        _cleanup_free_ char *enc = NULL;
        assert_int_equal(glove_json_encode_canonical(b, &enc, NULL, NULL), 0); /* canonical-encodable */
        json_t *names = json_object_get(b, "environment_names");
        assert_int_equal(json_array_size(names), 3);
        assert_string_equal(json_string_value(json_array_get(names, 0)), "HOME");
        assert_string_equal(json_string_value(json_array_get(names, 1)), "PATH");
        assert_string_equal(json_string_value(json_array_get(names, 2)), "TERM");
        assert_string_equal(json_string_value(json_object_get(b, "runtime_template_id")), "t");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "limits"), "pids")), 16);
        json_t *eg = json_object_get(b, "egress");
        assert_string_equal(json_string_value(json_object_get(eg, "policy_id")), "no-network");
        assert_int_equal(json_array_size(json_object_get(eg, "targets")), 0);
        /* Mounts sorted by target: the read-only path (same path), /reference,
         * /scratch, /workspace; identities are the host directories'. */
        json_t *mounts = json_object_get(b, "mounts");
        assert_int_equal(json_array_size(mounts), 4);
        for (size_t i = 1; i < 4; i++)
                assert_true(strcmp(json_string_value(json_object_get(json_array_get(mounts, i - 1), "target")),
                                   json_string_value(json_object_get(json_array_get(mounts, i), "target"))) < 0);
        struct {
                const char *target, *kind, *host;
                bool ro;
        } want[] = {
                { "/reference", "read_bind", ref, true },
                { "/scratch", "ephemeral_tmpfs", NULL, false },
                { "/workspace", "ephemeral_tmpfs", work, false },
        };
        char ro[PATH_MAX];
        snprintf(ro, sizeof(ro), "%s/ro", base);
        json_t *m0 = mount_at(b, ro);
        assert_non_null(m0);
        assert_true(json_is_true(json_object_get(m0, "read_only")));
        assert_string_equal(json_string_value(json_object_get(m0, "kind")), "read_only_path");
        for (size_t i = 0; i < 3; i++) {
                json_t *m = mount_at(b, want[i].target);
                assert_non_null(m);
                assert_string_equal(json_string_value(json_object_get(m, "kind")), want[i].kind);
                assert_int_equal(json_is_true(json_object_get(m, "read_only")), want[i].ro);
                json_t *src = json_object_get(m, "source");
                if (!want[i].host) {
                        assert_null(src); /* an empty tree has no host source */
                        continue;
                }
                struct stat st;
                assert_int_equal(stat(want[i].host, &st), 0);
                assert_int_equal(json_integer_value(json_object_get(src, "dev")), st.st_dev);
                assert_int_equal(json_integer_value(json_object_get(src, "ino")), st.st_ino);
                assert_true(json_integer_value(json_object_get(src, "mnt_id")) > 0);
        }
        assert_int_equal(json_integer_value(json_object_get(mount_at(b, "/workspace"), "max_bytes")), 3 << 20);
        assert_string_equal(json_string_value(json_object_get(mount_at(b, "/workspace"), "alias")), "work");
        assert_int_equal(json_array_size(json_object_get(b, "materializations")), 0);
        /* The add_mounts hook adds one entry per mount, at the targets. */
        struct glove_mount_plan_params pp = { .uid = getuid(), .gid = getgid() };
        struct glove_mount_plan *mp = NULL;
        assert_int_equal(glove_mount_plan_new(&pp, &mp, &err), 0);
        size_t before = mp->count;
        assert_int_equal(glove_supervisor_launch_add_mounts(mp, l, &err), 0);
        /* runtime pyrt is no adapter runtime: no skills directory chain
         * (test_discovery.c covers the adapters' entries). */
        assert_int_equal(mp->count, before + 4);
        const char *dests[] = { ro + 1, "reference", "scratch", "workspace" };
        for (size_t k = 0; k < 4; k++) {
                const struct glove_mount_entry *e = NULL;
                for (size_t i = before; i < mp->count; i++)
                        if (strcmp(glove_mount_plan_str(mp, mp->entries[i].dest), dests[k]) == 0)
                                e = &mp->entries[i];
                assert_non_null(e);
                assert_int_equal(e->kind == GLOVE_MOUNT_TREE, k >= 2);
                if (k == 3)
                        assert_int_equal(e->size, 3 << 20);
        }
        glove_mount_plan_free(mp);
        assert_int_equal(glove_supervisor_launch_release(l, &err), 0);
        assert_int_equal(glove_supervisor_launch_release(l, &err), 0); /* idempotent */
        glove_supervisor_launch_free(l);
        json_t *removed = NULL, *kept = NULL;
        assert_int_equal(glove_supervisor_cleanup(&f.cfg, "s1", plan, len, &removed, &kept, &err), 0);
        assert_int_equal(json_array_size(removed), 2); /* the two ephemeral copies */
        assert_int_equal(json_array_size(kept), 0);
        json_decref(removed);
        json_decref(kept);
        fixture_fini(&f);
        rm_rf(f.root);
        rm_rf(ref);
        rm_rf(work);
}

static void test_egress(void **state) {
        (void)state;
        mkdirs("%s/ref", base);
        char ref[PATH_MAX];
        snprintf(ref, sizeof(ref), "%s/ref", base);
        _cleanup_free_ char *a1 = alias_json("ref", ref, "/reference", "read", "bind", "never", "retain", 1 << 20);
        struct fixture f;
        fixture_init(&f, make_policy(a1, "\"ref\""));
        size_t len;
        _cleanup_free_ char *plan = make_plan("", "mixed", &len);
        struct glove_supervisor_launch *l = NULL;
        struct glove_error err = { 0 };
        assert_int_equal(glove_supervisor_launch_prepare(&f.cfg, "s1", plan, len, &l, &err), 0);
        _cleanup_json_ json_t *b = glove_supervisor_launch_binding(l);
        json_t *targets = json_object_get(json_object_get(b, "egress"), "targets");
        assert_int_equal(json_array_size(targets), 2);
        assert_string_equal(json_string_value(json_array_get(targets, 0)), "127.0.0.1:8787");
        assert_string_equal(json_string_value(json_array_get(targets, 1)), "example.com:443");
        struct glove_net_policy *p = glove_supervisor_launch_take_egress(l);
        assert_non_null(p);
        assert_null(glove_supervisor_launch_take_egress(l)); /* moved out */
        assert_int_equal(p->n_rules, 2);
        assert_true(p->rules[0].allow_private);  /* the per-rule flag, set by gloved from its target */
        assert_false(p->rules[1].allow_private);
        struct glove_net_host lo, ex;
        assert_int_equal(glove_net_host_parse("127.0.0.1", 9, &lo, NULL), 0);
        assert_int_equal(glove_net_host_parse("example.com", 11, &ex, NULL), 0);
        assert_true(glove_net_policy_allows(p, &lo, 8787));
        assert_true(glove_net_policy_allows(p, &ex, 443));
        assert_false(glove_net_policy_allows(p, &ex, 80));
        /* Only the target with allow_private may reach private addresses. */
        assert_true(glove_net_policy_allows_private(p, &lo, 8787));
        assert_false(glove_net_policy_allows_private(p, &ex, 443));
        assert_false(glove_net_policy_allows_private(p, &lo, 8788));
        glove_net_policy_free(p);
        free(p);
        glove_supervisor_launch_free(l);
        fixture_fini(&f);
        rm_rf(f.root);
        rm_rf(ref);
}

/* One read alias at host path host, refused with code. */
static void refusal_case(const char *host, const char *code, const char *const *extra_restricted) {
        _cleanup_free_ char *a1 = alias_json("ref", host, "/reference", "read", "bind", "never", "retain", 1 << 20);
        struct fixture f;
        fixture_init(&f, make_policy(a1, "\"ref\""));
        if (extra_restricted)
                f.restricted[0] = extra_restricted[0];
        _cleanup_free_ char *g1 = grant_json("ref", "read", "bind", "retain", 1 << 20);
        expect_refusal(&f, g1, code);
        fixture_fini(&f);
        rm_rf(f.root);
}

static void test_refuse_symlink(void **state) {
        (void)state;
        mkdirs("%s/real", base);
        mkdirs("%s/real/dir", base);
        char link[PATH_MAX], host[PATH_MAX];
        snprintf(link, sizeof(link), "%s/link", base);
        assert_int_equal(symlink("real", link), 0);
        snprintf(host, sizeof(host), "%s/link/dir", base);
        refusal_case(host, "materialize.symlink", NULL);
        /* A final component that is a link, too. */
        snprintf(host, sizeof(host), "%s/link", base);
        refusal_case(host, "materialize.symlink", NULL);
        unlink(link);
        snprintf(host, sizeof(host), "%s/real", base);
        rm_rf(host);
}

/* An ephemeral copy with create_policy of; its source host. */
static void ephemeral_case(const char *host, const char *create, const char *code, const struct stat *want) {
        _cleanup_free_ char *a1 =
                alias_json("scratch", host, "/scratch", "ephemeral_write", "copy", create, "remove", 1 << 20);
        struct fixture f;
        fixture_init(&f, make_policy(a1, "\"scratch\""));
        _cleanup_free_ char *g1 = grant_json("scratch", "ephemeral_write", "copy", "remove", 1 << 20);
        if (code) {
                expect_refusal(&f, g1, code);
        } else {
                size_t len;
                _cleanup_free_ char *plan = make_plan(g1, "no-network", &len);
                struct glove_supervisor_launch *l = NULL;
                struct glove_error err = { 0 };
                if (glove_supervisor_launch_prepare(&f.cfg, "s1", plan, len, &l, &err) < 0)
                        fail_msg("%s: %s", err.code, err.message);
                _cleanup_json_ json_t *b = glove_supervisor_launch_binding(l);
                json_t *src = json_object_get(mount_at(b, "/scratch"), "source");
                if (want) {
                        assert_non_null(src);
                        assert_int_equal(json_integer_value(json_object_get(src, "dev")), want->st_dev);
                        assert_int_equal(json_integer_value(json_object_get(src, "ino")), want->st_ino);
                } else {
                        assert_null(src);
                }
                glove_supervisor_launch_free(l);
        }
        fixture_fini(&f);
        rm_rf(f.root);
}

/* create_policy decides only what happens when the source is absent: an
 * existing source is copied whatever the policy, empty_directory starts
 * empty only when the source does not exist, never fails then; the host
 * path is resolved and vetted in every case (docs/session-policy.md,
 * "What the copy does"). */
static void test_create_policy(void **state) {
        (void)state;
        char host[PATH_MAX], link[PATH_MAX], file[PATH_MAX];
        snprintf(host, sizeof(host), "%s/seeded", base);
        mkdirs("%s/seeded", base);
        struct stat st;
        assert_int_equal(stat(host, &st), 0);
        ephemeral_case(host, "empty_directory", NULL, &st);
        ephemeral_case(host, "never", NULL, &st);
        snprintf(link, sizeof(link), "%s/seeded-link", base);
        assert_int_equal(symlink("seeded", link), 0);
        ephemeral_case(link, "empty_directory", "materialize.symlink", NULL);
        snprintf(file, sizeof(file), "%s/seeded-file", base);
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        ephemeral_case(file, "empty_directory", "materialize.file_type", NULL);
        snprintf(host, sizeof(host), "%s/absent", base);
        ephemeral_case(host, "empty_directory", NULL, NULL);
        ephemeral_case(host, "never", "materialize.missing", NULL);
        unlink(link);
        unlink(file);
        snprintf(host, sizeof(host), "%s/seeded", base);
        rm_rf(host);
}

static void test_refuse_vanished(void **state) {
        (void)state;
        char host[PATH_MAX];
        snprintf(host, sizeof(host), "%s/gone", base);
        assert_int_equal(mkdir(host, 0755), 0);
        _cleanup_free_ char *a1 = alias_json("ref", host, "/reference", "read", "bind", "never", "retain", 1 << 20);
        struct fixture f;
        fixture_init(&f, make_policy(a1, "\"ref\""));
        assert_int_equal(rmdir(host), 0); /* vanished after the policy was loaded */
        _cleanup_free_ char *g1 = grant_json("ref", "read", "bind", "retain", 1 << 20);
        expect_refusal(&f, g1, "materialize.missing");
        fixture_fini(&f);
        rm_rf(f.root);
}

static void test_refuse_fifo(void **state) {
        (void)state;
        char host[PATH_MAX];
        snprintf(host, sizeof(host), "%s/fifo", base);
        assert_int_equal(mkfifo(host, 0600), 0);
        refusal_case(host, "materialize.file_type", NULL);
        unlink(host);
}

static void test_refuse_restricted(void **state) {
        (void)state;
        /* gloved's state directory inside an alias. */
        char host[PATH_MAX], st[PATH_MAX];
        snprintf(host, sizeof(host), "%s/outer", base);
        assert_int_equal(mkdir(host, 0755), 0);
        snprintf(st, sizeof(st), "%s/outer/state", base);
        assert_int_equal(mkdir(st, 0700), 0);
        const char *r[] = { st };
        refusal_case(host, "materialize.restricted", r);
        /* An alias inside it. */
        refusal_case(st, "materialize.restricted", r);
        rm_rf(host);
        /* A restricted root of the host. */
        refusal_case("/run/glove-test-never", "materialize.restricted", NULL);
}

static void test_refuse_direct_write_and_retained_unavailable(void **state) {
        (void)state;
        char host[PATH_MAX];
        snprintf(host, sizeof(host), "%s/dw", base);
        assert_int_equal(mkdir(host, 0755), 0);
        char aliases[4096];
        _cleanup_free_ char *a1 = alias_json("dw", host, "/dw", "direct_write", "bind", "never", "retain", 1 << 20);
        snprintf(aliases, sizeof(aliases), "%s", a1);
        struct fixture f;
        fixture_init(&f, make_policy(aliases, "\"dw\""));
        _cleanup_free_ char *g1 = grant_json("dw", "direct_write", "bind", "retain", 1 << 20);
        expect_refusal(&f, g1, "launch.direct_write");
        fixture_fini(&f);
        rm_rf(f.root);

        _cleanup_free_ char *a2 = alias_json("dw", host, "/dw", "retained_write", "snapshot", "never", "retain", 1 << 20);
        fixture_init(&f, make_policy(a2, "\"dw\""));
        struct glove_error why = { 0 };
        glove_error_set(&why, EPERM, "retained.no_loop_control", "/dev/loop-control cannot be opened");
        f.cfg.retained_why = &why;
        _cleanup_free_ char *g2 = grant_json("dw", "retained_write", "snapshot", "retain", 1 << 20);
        size_t len;
        _cleanup_free_ char *plan = make_plan(g2, "no-network", &len);
        struct glove_supervisor_launch *l = NULL;
        struct glove_error err = { 0 };
        assert_true(glove_supervisor_launch_prepare(&f.cfg, "s1", plan, len, &l, &err) < 0);
        assert_string_equal(err.code, "launch.retained_unavailable");
        assert_non_null(strstr(err.message, "loop-control"));
        fixture_fini(&f);
        rm_rf(f.root);
        rm_rf(host);
}

/* ---- retained images (root) ---- */

static bool retained_skip(void) {
        struct glove_error why = { 0 };
        if (!glove_supervisor_retained_probe(&why)) {
                printf("SKIP: retained images need the retained mechanism: %s: %s\n", why.code, why.message);
                return true;
        }
        return false;
}

static void retained_fixture(struct fixture *f, char *host, const char *cleanup) {
        snprintf(host, PATH_MAX, "%s/data", base);
        if (access(host, F_OK) != 0)
                assert_int_equal(mkdir(host, 0755), 0);
        _cleanup_free_ char *a = alias_json("data", host, "/data", "retained_write", "snapshot", "never", cleanup,
                                            64 << 20);
        fixture_init(f, make_policy(a, "\"data\""));
        f->cfg.retained_available = true;
}

/* Reads file rel of image (attached read-only at a fresh mount point). */
static void read_back(const char *image, const char *rel, const char *want) {
        int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        assert_true(ctl >= 0);
        int img = open(image, O_RDONLY | O_CLOEXEC);
        assert_true(img >= 0);
        int lfd = -1;
        char dev[32];
        for (int i = 0; i < 32 && lfd < 0; i++) {
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                assert_true(n >= 0);
                snprintf(dev, sizeof(dev), "/dev/loop%d", n);
                lfd = open(dev, O_RDONLY | O_CLOEXEC);
                struct loop_config c = { .fd = (unsigned)img, .info = { .lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_READ_ONLY } };
                if (lfd >= 0 && ioctl(lfd, LOOP_CONFIGURE, &c) < 0) {
                        close(lfd);
                        lfd = -1;
                }
        }
        assert_true(lfd >= 0);
        char mnt[PATH_MAX];
        snprintf(mnt, sizeof(mnt), "%s/readback", base);
        assert_int_equal(mkdir(mnt, 0700), 0);
        assert_int_equal(mount(dev, mnt, "ext4", MS_RDONLY | MS_NOSUID | MS_NODEV, NULL), 0);
        char p[PATH_MAX], buf[64] = "";
        snprintf(p, sizeof(p), "%s/%s", mnt, rel);
        FILE *fp = fopen(p, "r");
        assert_non_null(fp);
        assert_non_null(fgets(buf, sizeof(buf), fp));
        fclose(fp);
        assert_string_equal(buf, want);
        assert_int_equal(umount2(mnt, 0), 0);
        rmdir(mnt);
        close(lfd);
        close(img);
        close(ctl);
}

static void retained_run(const char *cleanup) {
        if (retained_skip())
                return;
        char host[PATH_MAX];
        struct fixture f;
        retained_fixture(&f, host, cleanup);
        _cleanup_free_ char *g = grant_json("data", "retained_write", "snapshot", cleanup, 16 << 20);
        size_t len;
        _cleanup_free_ char *plan = make_plan(g, "no-network", &len);
        struct glove_supervisor_launch *l = NULL;
        struct glove_error err = { 0 };
        int r = glove_supervisor_launch_prepare(&f.cfg, "s1", plan, len, &l, &err);
        if (r < 0)
                fail_msg("%s: %s", err.code, err.message);
        char image[PATH_MAX], mnt[PATH_MAX];
        snprintf(image, sizeof(image), "%s/images/s1/data.ext4", f.root);
        snprintf(mnt, sizeof(mnt), "%s/mounts/s1/data", f.root);
        struct stat st, ms;
        assert_int_equal(stat(image, &st), 0);
        assert_int_equal(st.st_size, 16 << 20);                   /* exactly max_bytes */
        assert_true((uint64_t)st.st_blocks * 512 >= (16u << 20)); /* allocated, not sparse */
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(stat(mnt, &ms), 0);
        _cleanup_json_ json_t *b = glove_supervisor_launch_binding(l);
        json_t *mat = json_array_get(json_object_get(b, "materializations"), 0);
        assert_non_null(mat);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(mat, "image"), "ino")), st.st_ino);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(mat, "image"), "size")), 16 << 20);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(mat, "loop"), "rdev")), ms.st_dev);
        assert_int_equal(ms.st_uid, getuid()); /* root_owner: the agent's outside ids */
        json_t *m = mount_at(b, "/data");
        assert_non_null(m);
        assert_string_equal(json_string_value(json_object_get(m, "kind")), "retained_image");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "source"), "ino")), ms.st_ino);
        /* Writable through the host mount. */
        char file[PATH_MAX];
        snprintf(file, sizeof(file), "%s/kept.txt", mnt);
        FILE *fp = fopen(file, "w");
        assert_non_null(fp);
        fputs("retained\n", fp);
        assert_int_equal(fclose(fp), 0);
        sync();
        /* A second start of the same session never reuses the image. */
        struct glove_supervisor_launch *l2 = NULL;
        assert_true(glove_supervisor_launch_prepare(&f.cfg, "s1", plan, len, &l2, &err) < 0);
        assert_string_equal(err.code, "materialize.image");
        assert_int_equal(glove_supervisor_launch_release(l, &err), 0);
        assert_int_equal(glove_supervisor_launch_release(l, &err), 0);
        glove_supervisor_launch_free(l);
        struct stat after;
        assert_int_equal(stat(mnt, &after), 0);
        assert_true(after.st_dev != ms.st_dev); /* unmounted */
        read_back(image, "kept.txt", "retained\n");
        json_t *removed = NULL, *kept = NULL;
        for (int pass = 0; pass < 2; pass++) { /* idempotent */
                assert_int_equal(glove_supervisor_cleanup(&f.cfg, "s1", plan, len, &removed, &kept, &err), 0);
                bool rm = strcmp(cleanup, "remove") == 0;
                assert_int_equal(json_array_size(rm ? removed : kept), 1);
                assert_int_equal(json_array_size(rm ? kept : removed), 0);
                assert_int_equal(access(image, F_OK) == 0, !rm);
                assert_int_equal(access(mnt, F_OK), -1);
                json_decref(removed);
                json_decref(kept);
        }
        if (strcmp(cleanup, "retain") == 0)
                read_back(image, "kept.txt", "retained\n");
        fixture_fini(&f);
        rm_rf(f.root);
        rm_rf(host);
}

static void test_retained_remove(void **state) {
        (void)state;
        retained_run("remove");
}

static void test_retained_retain(void **state) {
        (void)state;
        retained_run("retain");
}

static void test_retained_root_full(void **state) {
        (void)state;
        if (retained_skip())
                return;
        char host[PATH_MAX];
        struct fixture f;
        retained_fixture(&f, host, "remove");
        /* The root becomes a 4 MiB tmpfs: no room for a 16 MiB image. */
        assert_int_equal(mount("tmpfs", f.root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0700"), 0);
        close(f.root_fd);
        f.root_fd = open(f.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        f.cfg.materialization_root_fd = f.root_fd;
        _cleanup_free_ char *g = grant_json("data", "retained_write", "snapshot", "remove", 16 << 20);
        expect_refusal(&f, g, "materialize.root_full");
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/images/s1/data.ext4", f.root);
        assert_int_equal(access(p, F_OK), -1);
        fixture_fini(&f);
        assert_int_equal(umount2(f.root, 0), 0); /* busy if anything were still mounted in it */
        rm_rf(f.root);
        rm_rf(host);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_binding),
                cmocka_unit_test(test_egress),
                cmocka_unit_test(test_refuse_symlink),
                cmocka_unit_test(test_create_policy),
                cmocka_unit_test(test_refuse_vanished),
                cmocka_unit_test(test_refuse_fifo),
                cmocka_unit_test(test_refuse_restricted),
                cmocka_unit_test(test_refuse_direct_write_and_retained_unavailable),
                cmocka_unit_test(test_retained_remove),
                cmocka_unit_test(test_retained_retain),
                cmocka_unit_test(test_retained_root_full),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

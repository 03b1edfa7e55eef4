/* SPDX-License-Identifier: Apache-2.0 */
/* glove/supervisor/prepare.h, "Native adapters and discovery": runtime
 * discovery with the trust rule, the pinned executable of an adapter
 * runtime, its managed environment and the binding's "adapter" object; the
 * policy refusing a template that sets a managed variable. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "glove/base/json.h"
#include "glove/supervisor/launch.h"
#include "glove/supervisor/policy.h"
#include "glove/supervisor/prepare.h"

static char base[PATH_MAX / 2];
static bool chain_trusted; /* base and its ancestors pass the trust rule for getuid() */

static void path_of(char out[PATH_MAX], const char *rel) {
        assert_true(snprintf(out, PATH_MAX, "%s/%s", base, rel) < PATH_MAX);
}

static void mkdir_mode(const char *rel, mode_t mode) {
        char p[PATH_MAX];
        path_of(p, rel);
        assert_true(mkdir(p, 0700) == 0 || errno == EEXIST);
        assert_int_equal(chmod(p, mode), 0);
}

static void write_file(const char *rel, mode_t mode) {
        char p[PATH_MAX];
        path_of(p, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
        close(fd);
        assert_int_equal(chmod(p, mode), 0);
}

/* A policy of one linux_production template "t" for runtime_id, with the
 * launch fields given (JSON fragments); its digest is computed here. */
static struct glove_supervisor_policy *make_policy(const char *runtime_id, const char *discovery,
                                                   const char *const *search, size_t n_search, const char *exe,
                                                   const char *env_json, const char *const *env, size_t n_env,
                                                   struct glove_error *err) {
        struct glove_supervisor_launch_template t = {
                .runtime_discovery = discovery,
                .executable_path = exe,
                .executable_search_paths = search, .n_executable_search_paths = n_search,
                .environment = env, .n_environment = n_env,
        };
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        assert_int_equal(glove_supervisor_launch_template_digest(&t, digest, NULL), 0);
        char sp[4096] = "";
        for (size_t i = 0; i < n_search; i++)
                snprintf(sp + strlen(sp), sizeof(sp) - strlen(sp), "%s\"%s\"", i ? "," : "", search[i]);
        char disc[256] = "";
        if (discovery)
                snprintf(disc, sizeof(disc), "\"runtime_discovery\":\"%s\",", discovery);
        static char text[16384];
        snprintf(text, sizeof(text),
                 "{\"schema_version\":1,\"revision\":1,\"max_plan_ttl_ms\":120000,"
                 "\"runtime_templates\":[{\"runtime_template_id\":\"t\",\"runtime_id\":\"%s\","
                 "\"adapter_command_digest\":\"%s\",\"sandbox_backend\":\"linux_production\","
                 "\"allowed_path_aliases\":[],\"allowed_projection_destinations\":[],"
                 "\"launch\":{%s\"executable_path\":\"%s\",\"executable_search_paths\":[%s],\"arguments\":[],"
                 "\"environment\":[%s],\"read_only_paths\":[]}}],"
                 "\"path_aliases\":[],\"library_projection_destinations\":[],"
                 "\"resource_profiles\":[{\"profile_id\":\"small\",\"cpu_time_ms\":1000,\"memory_bytes\":67108864,"
                 "\"pids\":16,\"wall_time_ms\":2000,\"disk_bytes\":2097152,\"terminal_output_bytes\":1048576}],"
                 "\"egress_policy_ids\":[\"no-network\"],\"tool_policy_ids\":[],\"secret_handles\":[],"
                 "\"egress_policies\":[],\"secret_mounts\":[]}",
                 runtime_id, digest, disc, exe, sp, env_json);
        struct glove_supervisor_policy *p = NULL;
        int r = glove_supervisor_policy_decode(text, strlen(text), &p, err);
        return r < 0 ? NULL : p;
}

static char *make_plan(const char *runtime_id, size_t *len) {
        char *text = NULL;
        assert_true(asprintf(&text,
                             "{\"adapter_command_digest\":\"x\",\"egress_policy_id\":\"no-network\",\"expires_at_ms\":1,"
                             "\"library_projections\":[],\"limits\":{\"cpu_time_ms\":1000,\"disk_bytes\":2097152,"
                             "\"memory_bytes\":67108864,\"pids\":16,\"terminal_output_bytes\":1048576,"
                             "\"wall_time_ms\":2000},\"path_grants\":[],\"policy_revision\":1,\"runtime_id\":\"%s\","
                             "\"runtime_template_id\":\"t\",\"sandbox_backend\":\"linux_production\","
                             "\"schema_version\":1,\"secret_handles\":[],\"tool_policy_id\":\"x\"}",
                             runtime_id) > 0);
        json_t *v = json_loads(text, 0, NULL);
        assert_non_null(v);
        char *out = NULL;
        assert_int_equal(glove_json_encode_canonical(v, &out, len, NULL), 0);
        json_decref(v);
        free(text);
        return out;
}

/* Prepares the plan of runtime_id against p; *l gets the launch or NULL. */
static int prepare(struct glove_supervisor_policy *p, const char *runtime_id, struct glove_supervisor_launch **l,
                   struct glove_error *err) {
        char root[PATH_MAX];
        path_of(root, "mat");
        (void)mkdir(root, 0700);
        int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(root_fd >= 0);
        struct glove_supervisor_runtime_config cfg = {
                .policy = p, .materialization_root = root, .materialization_root_fd = root_fd,
                .agent_uid = getuid(), .agent_gid = getgid(),
        };
        size_t len;
        _cleanup_free_ char *plan = make_plan(runtime_id, &len);
        int r = glove_supervisor_launch_prepare(&cfg, "s1", plan, len, l, err);
        close(root_fd);
        return r;
}

static bool env_has(char *const *envp, const char *entry) {
        for (size_t i = 0; envp && envp[i]; i++)
                if (strcmp(envp[i], entry) == 0)
                        return true;
        return false;
}

static bool env_names(char *const *envp, const char *name) {
        size_t n = strlen(name);
        for (size_t i = 0; envp && envp[i]; i++)
                if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
                        return true;
        return false;
}

static json_t *mount_at(json_t *b, const char *target) {
        json_t *mounts = json_object_get(b, "mounts");
        for (size_t i = 0; i < json_array_size(mounts); i++) {
                json_t *m = json_array_get(mounts, i);
                if (strcmp(json_string_value(json_object_get(m, "target")), target) == 0)
                        return m;
        }
        return NULL;
}

/* A search directory whose entry is a symbolic link into a package (as npm
 * makes .bin/codex): the launch runs the canonical file, pinned. */
static void test_symlinked_entry(void **state) {
        (void)state;
        if (!chain_trusted)
                skip();
        mkdir_mode("pkg", 0755);
        mkdir_mode("pkg/bin", 0755);
        write_file("pkg/bin/codex.js", 0755);
        mkdir_mode("bin", 0755);
        mkdir_mode("empty", 0755);
        char link[PATH_MAX], canon[PATH_MAX], bin[PATH_MAX], empty[PATH_MAX];
        path_of(link, "bin/codex");
        (void)unlink(link);
        assert_int_equal(symlink("../pkg/bin/codex.js", link), 0);
        path_of(canon, "pkg/bin/codex.js");
        path_of(bin, "bin");
        path_of(empty, "empty");
        const char *search[] = { empty, bin };
        const char *env[] = { "TERM=dumb" };
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = make_policy("codex", "codex", search, 2, "", "\"TERM=dumb\"", env, 1, &err);
        if (!p)
                fail_msg("policy: %s: %s", err.code, err.message);
        struct glove_supervisor_launch *l = NULL;
        if (prepare(p, "codex", &l, &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
        char *const *argv = glove_supervisor_launch_argv(l);
        assert_string_equal(argv[0], canon);
        char *const *envp = glove_supervisor_launch_envp(l);
        assert_true(env_has(envp, "HOME=/home/agent"));
        assert_true(env_has(envp, "CODEX_HOME=/home/agent/.codex"));
        assert_true(env_has(envp, "TERM=dumb"));
        _cleanup_json_ json_t *b = glove_supervisor_launch_binding(l);
        assert_non_null(b);
        json_t *m = mount_at(b, canon);
        assert_non_null(m);
        assert_string_equal(json_string_value(json_object_get(m, "kind")), "executable");
        assert_true(json_is_true(json_object_get(m, "read_only")));
        struct stat st;
        assert_int_equal(stat(canon, &st), 0);
        json_t *a = json_object_get(b, "adapter");
        assert_string_equal(json_string_value(json_object_get(a, "runtime_id")), "codex");
        assert_string_equal(json_string_value(json_object_get(a, "home")), "/home/agent");
        assert_string_equal(json_string_value(json_object_get(a, "skills_dir")), "/home/agent/.codex/skills");
        json_t *me = json_object_get(a, "managed_environment");
        assert_int_equal(json_array_size(me), 1);
        assert_string_equal(json_string_value(json_array_get(me, 0)), "CODEX_HOME=/home/agent/.codex");
        json_t *x = json_object_get(a, "executable");
        assert_string_equal(json_string_value(json_object_get(x, "path")), canon);
        assert_int_equal(json_integer_value(json_object_get(x, "dev")), st.st_dev);
        assert_int_equal(json_integer_value(json_object_get(x, "ino")), st.st_ino);
        assert_true(json_is_true(json_object_get(x, "discovered")));
        _cleanup_free_ char *enc = NULL;
        assert_int_equal(glove_json_encode_canonical(b, &enc, NULL, NULL), 0);
        glove_supervisor_launch_free(l);
        glove_supervisor_policy_free(p);
}

/* Every refused directory is skipped and listed with its reason; when none
 * gives a trusted executable, launch.discovery_failed lists them all. */
static void test_refusals_listed(void **state) {
        (void)state;
        if (!chain_trusted)
                skip();
        mkdir_mode("gw", 0775);
        write_file("gw/pi", 0755);
        mkdir_mode("ow", 0777);
        mkdir_mode("ow/bin", 0755);
        write_file("ow/bin/pi", 0755);
        mkdir_mode("sticky", 01777);
        write_file("sticky/pi", 0755);
        /* A trusted directory beneath a sticky world-writable one (as
         * beneath /tmp): the sticky ancestor is refused too. */
        mkdir_mode("sticky/bin", 0755);
        write_file("sticky/bin/pi", 0755);
        mkdir_mode("noexec", 0755);
        write_file("noexec/pi", 0644);
        mkdir_mode("none", 0755);
        mkdir_mode("real", 0755);
        char dlink[PATH_MAX];
        path_of(dlink, "dirlink");
        (void)unlink(dlink);
        assert_int_equal(symlink("real", dlink), 0);
        write_file("real/pi", 0755);
        char gw[PATH_MAX], ow[PATH_MAX], sticky[PATH_MAX], stickybin[PATH_MAX], noexec[PATH_MAX], none[PATH_MAX],
                missing[PATH_MAX];
        path_of(stickybin, "sticky/bin");
        path_of(gw, "gw");
        path_of(ow, "ow/bin");
        path_of(sticky, "sticky");
        path_of(noexec, "noexec");
        path_of(none, "none");
        path_of(missing, "missing");
        /* One search per refusal, so that each listing fits the bounded
         * message whatever the length of this test's directory; the last
         * search has two directories, both listed. */
        const char *dirs[] = { gw, ow, sticky, stickybin, noexec, none, dlink, missing, gw };
        const char *wants[] = { "it is writable by group (mode 0775)", "/ow is writable by group and others (mode 0777)",
                                "a sticky bit is not enough",
                                "/sticky is writable by group and others (mode 1777); a sticky bit is not enough",
                                "is not executable (mode 0644)", "no pi there", "it is a symbolic link",
                                "it does not exist", "it is writable by group (mode 0775)" };
        for (int k = 0; k < 8; k++) {
                const char *const *search = &dirs[k];
                const char *const *want = &wants[k];
                size_t n = k == 7 ? 2 : 1;
                struct glove_error err = { 0 };
                struct glove_supervisor_policy *p = make_policy("pi", "pi", search, n, "", "", NULL, 0, &err);
                if (!p)
                        fail_msg("policy: %s: %s", err.code, err.message);
                struct glove_supervisor_launch *l = (void *)1;
                assert_int_equal(prepare(p, "pi", &l, &err), -ENOENT);
                assert_null(l);
                assert_string_equal(err.code, "launch.discovery_failed");
                for (size_t i = 0; i < n; i++) {
                        if (!strstr(err.message, search[i]))
                                fail_msg("%s not listed: %s", search[i], err.message);
                        if (!strstr(err.message, want[i]))
                                fail_msg("\"%s\" not said: %s", want[i], err.message);
                }
                glove_supervisor_policy_free(p);
        }
}

/* An entry whose link chain goes through a magic link (/proc/self/exe:
 * gloved's own binary, in gloved's context) or into /proc, /sys or /dev is
 * refused, never run. */
static void test_magic_link_refused(void **state) {
        (void)state;
        if (!chain_trusted)
                skip();
        mkdir_mode("magic", 0755);
        mkdir_mode("kern", 0755);
        char e1[PATH_MAX], e2[PATH_MAX], d1[PATH_MAX], d2[PATH_MAX];
        path_of(e1, "magic/codex");
        path_of(e2, "kern/codex");
        (void)unlink(e1);
        (void)unlink(e2);
        assert_int_equal(symlink("/proc/self/exe", e1), 0);
        assert_int_equal(symlink("/proc/self/root/usr/bin/true", e2), 0);
        path_of(d1, "magic");
        path_of(d2, "kern");
        const char *search[] = { d1, d2 };
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = make_policy("codex", "codex", search, 2, "", "", NULL, 0, &err);
        if (!p)
                fail_msg("policy: %s: %s", err.code, err.message);
        struct glove_supervisor_launch *l = (void *)1;
        assert_int_equal(prepare(p, "codex", &l, &err), -ENOENT);
        assert_null(l);
        assert_string_equal(err.code, "launch.discovery_failed");
        if (!strstr(err.message, "magic link"))
                fail_msg("the magic link is not named: %s", err.message);
        glove_supervisor_policy_free(p);
}

/* A search directory owned by another user is refused (needs root to make). */
static void test_other_owner(void **state) {
        (void)state;
        if (!chain_trusted || getuid() != 0)
                skip();
        mkdir_mode("other", 0755);
        write_file("other/claude", 0755);
        char other[PATH_MAX];
        path_of(other, "other");
        assert_int_equal(chown(other, 4242, 4242), 0);
        const char *search[] = { other };
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = make_policy("claude-code", "claude-code", search, 1, "", "", NULL, 0, &err);
        assert_non_null(p);
        struct glove_supervisor_launch *l = NULL;
        assert_true(prepare(p, "claude-code", &l, &err) < 0);
        assert_string_equal(err.code, "launch.discovery_failed");
        assert_non_null(strstr(err.message, "it is owned by uid 4242"));
        glove_supervisor_policy_free(p);
}

/* A pinned adapter template: its executable is bound pinned at its own path
 * even beneath /usr, and the binding says so (discovered false); a
 * non-adapter runtime keeps today's launch (no "adapter", HOME only). */
static void test_pinned_and_plain(void **state) {
        (void)state;
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p = make_policy("opencode", NULL, NULL, 0, "/usr/bin/true", "", NULL, 0, &err);
        if (!p)
                fail_msg("policy: %s: %s", err.code, err.message);
        struct glove_supervisor_launch *l = NULL;
        if (prepare(p, "opencode", &l, &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
        assert_string_equal(glove_supervisor_launch_argv(l)[0], "/usr/bin/true");
        assert_true(env_has(glove_supervisor_launch_envp(l), "XDG_CONFIG_HOME=/home/agent/.config"));
        assert_true(env_has(glove_supervisor_launch_envp(l), "HOME=/home/agent"));
        _cleanup_json_ json_t *b = glove_supervisor_launch_binding(l);
        json_t *x = json_object_get(json_object_get(b, "adapter"), "executable");
        assert_false(json_is_true(json_object_get(x, "discovered")));
        struct stat st;
        assert_int_equal(lstat("/usr/bin/true", &st), 0);
        assert_int_equal(json_integer_value(json_object_get(x, "ino")), st.st_ino);
        assert_non_null(mount_at(b, "/usr/bin/true"));
        glove_supervisor_launch_free(l);
        glove_supervisor_policy_free(p);

        const char *env[] = { "HOME=/elsewhere" };
        p = make_policy("pyrt", NULL, NULL, 0, "/usr/bin/true", "\"HOME=/elsewhere\"", env, 1, &err);
        if (!p)
                fail_msg("policy: %s: %s", err.code, err.message);
        l = NULL;
        if (prepare(p, "pyrt", &l, &err) < 0)
                fail_msg("%s: %s", err.code, err.message);
        assert_true(env_has(glove_supervisor_launch_envp(l), "HOME=/elsewhere"));
        assert_false(env_names(glove_supervisor_launch_envp(l), "CODEX_HOME"));
        _cleanup_json_ json_t *b2 = glove_supervisor_launch_binding(l);
        assert_null(json_object_get(b2, "adapter"));
        assert_null(mount_at(b2, "/usr/bin/true")); /* beneath /usr: not bound, as before */
        glove_supervisor_launch_free(l);
        glove_supervisor_policy_free(p);
}

/* The policy refuses an adapter template that sets HOME or the managed
 * variable, naming the entry. */
static void test_policy_managed_environment(void **state) {
        (void)state;
        struct {
                const char *runtime, *entry;
        } cases[] = {
                { "codex", "HOME=/root" },
                { "codex", "CODEX_HOME=/x" },
                { "copilot", "COPILOT_HOME=/x" },
                { "opencode", "XDG_CONFIG_HOME=/x" },
                { "claude-code", "HOME=/x" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *env[] = { "A=1", cases[i].entry };
                char ej[256];
                snprintf(ej, sizeof(ej), "\"A=1\",\"%s\"", cases[i].entry);
                struct glove_error err = { 0 };
                struct glove_supervisor_policy *p =
                        make_policy(cases[i].runtime, NULL, NULL, 0, "/usr/bin/true", ej, env, 2, &err);
                assert_null(p);
                assert_string_equal(err.code, "policy.managed_environment");
                if (!strstr(err.message, "$.runtime_templates[0].launch.environment[1]"))
                        fail_msg("path not named: %s", err.message);
        }
        /* Another adapter's managed name is an ordinary variable. */
        const char *env[] = { "CODEX_HOME=/x" };
        struct glove_error err = { 0 };
        struct glove_supervisor_policy *p =
                make_policy("pi", NULL, NULL, 0, "/usr/bin/true", "\"CODEX_HOME=/x\"", env, 1, &err);
        if (!p)
                fail_msg("policy: %s: %s", err.code, err.message);
        glove_supervisor_policy_free(p);
}

/* Is every directory from / to base owned by root or us and not writable
 * by group or others (sticky or not)? */
static bool check_chain(void) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s", base);
        for (;;) {
                struct stat st;
                if (lstat(p[0] ? p : "/", &st) < 0 || S_ISLNK(st.st_mode))
                        return false;
                if (st.st_uid != 0 && st.st_uid != getuid())
                        return false;
                if (st.st_mode & (S_IWGRP | S_IWOTH))
                        return false;
                if (!p[0])
                        return true;
                *strrchr(p, '/') = '\0';
        }
}

static int setup(void **state) {
        (void)state;
        char cwd[PATH_MAX / 4];
        assert_non_null(getcwd(cwd, sizeof(cwd)));
        snprintf(base, sizeof(base), "%s/sv-discovery-XXXXXX", cwd);
        assert_non_null(mkdtemp(base));
        assert_int_equal(chmod(base, 0755), 0);
        chain_trusted = check_chain();
        if (!chain_trusted)
                fprintf(stderr, "# %s or an ancestor fails the trust rule for uid %u: discovery cases skipped\n",
                        base, (unsigned)getuid());
        return 0;
}

static int teardown(void **state) {
        (void)state;
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", base);
        assert_int_equal(system(cmd), 0);
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_symlinked_entry),
                cmocka_unit_test(test_refusals_listed),
                cmocka_unit_test(test_magic_link_refused),
                cmocka_unit_test(test_other_owner),
                cmocka_unit_test(test_pinned_and_plain),
                cmocka_unit_test(test_policy_managed_environment),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

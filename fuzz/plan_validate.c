/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/supervisor/adapter.c src/supervisor/decode.c src/supervisor/launch.c src/supervisor/plan.c src/supervisor/policy.c src/supervisor/policy_extra.c src/supervisor/policy_load.c src/supervisor/policy_paths.c src/supervisor/policy_query.c src/supervisor/exposure*.c src/store/journal.c src/store/journal_rewrite.c src/store/dirs.c src/container/region.c src/refinement/*.c
/*
 * libFuzzer target: identifier-only plan validation
 * (glove_supervisor_plan_validate) against a fixed policy, a copy of
 * tests/fixtures/supervisor/policy/valid.json. Built and run by
 * scripts/fuzz.sh; seeds in fuzz/corpus/plan_validate/.
 *
 * Invariants besides memory safety: valid exactly when no reason was
 * counted; every reason has a "plan." code and a path starting with "$";
 * at most GLOVE_PLAN_REASONS_MAX stored; the content digest is present
 * exactly when the bytes passed the canonical gate.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/supervisor/plan.h"

/* 2026-01-01T00:00:00Z, as the plan fixtures. */
#define NOW_MS 1767225600000LL

static const char policy_text[] =
        "{\"schema_version\":1,\"revision\":7,\"max_plan_ttl_ms\":120000,\"runtime_templates\":[{\"runtime_t"
        "emplate_id\":\"claude-discovery\",\"runtime_id\":\"claude-code\",\"adapter_command_digest\":\"e4763c"
        "fd4c7b1293bbc2d89f8017c8a2b40902d260b9580718cf918d197291f2\",\"sandbox_backend\":\"linux_produ"
        "ction\",\"allowed_path_aliases\":[\"workspace\"],\"allowed_projection_destinations\":[],\"launch\":"
        "{\"runtime_discovery\":\"claude-code\",\"executable_path\":\"\",\"executable_search_paths\":[\"/opt/c"
        "laude/bin\"],\"arguments\":[],\"environment\":[\"TERM=xterm-256color\"],\"read_only_paths\":[\"/opt/"
        "claude/lib\"]}},{\"runtime_template_id\":\"codex-plan-only\",\"runtime_id\":\"codex\",\"adapter_comm"
        "and_digest\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"sandbox_ba"
        "ckend\":\"remote_linux_container\",\"allowed_path_aliases\":[\"workspace\"],\"allowed_projection_d"
        "estinations\":[]},{\"runtime_template_id\":\"codex-safe\",\"runtime_id\":\"codex\",\"adapter_command"
        "_digest\":\"e66c0652fedc80fcdfe875761036053f973708ad72207e388c07de41553c4e33\",\"sandbox_backe"
        "nd\":\"linux_production\",\"allowed_path_aliases\":[\"reference\",\"workspace\"],\"allowed_projectio"
        "n_destinations\":[\"libraries\"],\"launch\":{\"executable_path\":\"/usr/bin/true\",\"arguments\":[\"--"
        "version\"],\"environment\":[\"PATH=/usr/bin:/bin\",\"TERM=xterm-256color\"],\"read_only_paths\":[\"/"
        "opt/operator-harness/codex-runtime\"]}}],\"path_aliases\":[{\"alias\":\"reference\",\"host_path\":\""
        "/srv/reference\",\"target_path\":\"/reference\",\"max_ttl_secs\":600,\"access\":[{\"access\":\"read\",\""
        "materialization\":\"bind\",\"create_policy\":\"never\",\"cleanup_policy\":\"retain\",\"max_bytes\":1048"
        "576}]},{\"alias\":\"workspace\",\"host_path\":\"/srv/work/sage-protocol\",\"target_path\":\"/workspac"
        "e\",\"max_ttl_secs\":120,\"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"crea"
        "te_policy\":\"empty_directory\",\"cleanup_policy\":\"remove\",\"max_bytes\":2097152},{\"access\":\"rea"
        "d\",\"materialization\":\"bind\",\"create_policy\":\"never\",\"cleanup_policy\":\"retain\",\"max_bytes\":"
        "2097152}]}],\"library_projection_destinations\":[{\"alias\":\"libraries\",\"target_path\":\"/opt/sa"
        "ge/library-bundles\"}],\"resource_profiles\":[{\"profile_id\":\"interactive\",\"cpu_time_ms\":12000"
        "0,\"memory_bytes\":2147483648,\"pids\":256,\"wall_time_ms\":119000,\"disk_bytes\":6442450944,\"term"
        "inal_output_bytes\":16777216},{\"profile_id\":\"small\",\"cpu_time_ms\":1000,\"memory_bytes\":67108"
        "864,\"pids\":16,\"wall_time_ms\":2000,\"disk_bytes\":2097152,\"terminal_output_bytes\":1048576}],\""
        "egress_policy_ids\":[\"loopback-dev\",\"no-network\"],\"tool_policy_ids\":[\"sage-readonly\"],\"secr"
        "et_handles\":[\"codex-token\"],\"egress_policies\":[{\"policy_id\":\"loopback-dev\",\"targets\":[{\"ho"
        "st\":\"127.0.0.1\",\"port\":8787,\"allow_private\":true}]}],\"secret_mounts\":[{\"handle\":\"codex-tok"
        "en\",\"runtime_id\":\"codex\",\"source_path\":\"/etc/glove/secrets/codex-token\",\"target_path\":\"/ho"
        "me/agent/.codex/auth.json\"}]}";

static struct glove_supervisor_policy *policy;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void)argc;
        (void)argv;
        if (glove_supervisor_policy_decode(policy_text, sizeof(policy_text) - 1, &policy, NULL) < 0)
                abort();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct glove_plan_verdict v;
        if (glove_supervisor_plan_validate(policy, data, size, NOW_MS, &v, NULL) < 0)
                abort();
        if (v.valid != (v.n_reasons_total == 0) || v.n_reasons > GLOVE_PLAN_REASONS_MAX ||
            v.n_reasons > v.n_reasons_total || (v.n_reasons_total > 0 && v.n_reasons == 0))
                abort();
        bool gate_failed = v.n_reasons > 0 && strcmp(v.reasons[0].path, "$") == 0;
        if (gate_failed != (v.plan_content_digest[0] == '\0'))
                abort();
        for (size_t i = 0; i < v.n_reasons; i++)
                if (!v.reasons[i].code || strncmp(v.reasons[i].code, "plan.", 5) != 0 || v.reasons[i].path[0] != '$' ||
                    strlen(v.reasons[i].path) >= GLOVE_PLAN_REASON_PATH_MAX)
                        abort();
        return 0;
}

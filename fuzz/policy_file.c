// fuzz-sources: src/policy/client.c src/policy/features.c src/policy/file.c src/policy/file_features.c src/policy/file_upstreams.c src/policy/name.c src/policy/pointer.c src/policy/policy.c src/policy/rule.c src/policy/upstreams.c src/base/error.c src/base/json.c src/base/path.c
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the policy file decoder (glove_policy_load_json,
 * docs/policy.md). Checks the contract on every input: a failure returns a
 * negative errno with a "policy.*" code and leaves the policy unchanged; a
 * success leaves no error, and the loaded policy then decides calls without
 * crashing. Seed corpus: fuzz/corpus/policy_file/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "glove/policy/policy.h"

static json_t *arguments;

static void decide(const struct glove_policy *p, const char *upstream, const char *tool) {
        struct glove_policy_verdict v;
        glove_policy_check_call(p, upstream, tool, arguments, &v);
        if (v.allowed != (v.reason == NULL) || strlen(v.rule) >= GLOVE_POLICY_RULE_MAX)
                abort();
        /* A visible tool is allowed or refused only by its argument rules. */
        if (!glove_policy_tool_visible(p, upstream, tool) && v.allowed)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!arguments) {
                json_error_t je;
                arguments = json_loads("{\"path\":\"/data/x\",\"paths\":[\"/data/a\",\"/etc\"],"
                                       "\"mode\":\"read\",\"message\":\"hello\",\"a/b\":{\"~\":\"\"}}",
                                       0, &je);
                if (!arguments)
                        abort();
        }
        struct glove_policy *p = NULL;
        if (glove_policy_new(&p) < 0)
                return 0;
        /* A command-line rule that a failed load must leave alone. */
        if (glove_policy_allow(p, "keep.me", NULL) < 0)
                abort();
        struct glove_error err = {0};
        int r = glove_policy_load_json(p, data, size, &err);
        if (r < 0) {
                if (!err.code || strncmp(err.code, "policy.", 7) != 0 || err.errnum != -r)
                        abort();
                if (!glove_policy_tool_visible(p, "keep", "me"))
                        abort();
        } else if (r != 0 || err.code) {
                abort();
        }
        static const char *const tools[][2] = {
                {"fs", "read_file"}, {"fs", "write_file"}, {"everything", "echo"}, {"db", "query"},
                {"git", "add"},     {"keep", "me"},        {"u", "t"},              {"a", "b"},
        };
        for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
                decide(p, tools[i][0], tools[i][1]);
        glove_policy_free(p);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The policy file's "prompts" and "resources" members (docs/policy.md,
 * "Prompts and resources"), decoded as strictly as the rest of the file. */
#include <errno.h>
#include <string.h>

#include "glove/base/json.h"
#include "internal.h"

static const char *const feature_keys[] = {"allow", "deny", "arguments", NULL};

static int add_prompt(struct glove_policy *p, bool deny, const char *text, const char *what, struct glove_error *err) {
        struct glove_policy *c = glove_policy_child(&p->prompts, err);
        return c ? glove_policy_add_name_rule(c, deny, text, what, err) : -ENOMEM;
}

static int add_resource(struct glove_policy *p, bool deny, const char *text, const char *what, struct glove_error *err) {
        size_t name_len;
        bool prefix;
        const char *why;
        if (!glove_policy_resource_rule_parse(text, &name_len, &prefix, &why))
                return glove_error_set(err, EINVAL, "policy.bad_resource_rule", "%s: %s", what, why);
        struct glove_policy *c = glove_policy_child(&p->resources, err);
        return c ? glove_policy_add_rule_parsed(c, deny, text, name_len, prefix, what, err) : -ENOMEM;
}

static int decode_feature(struct glove_policy *p, const json_t *root, const char *key, struct glove_error *err) {
        json_t *obj = json_object_get(root, key);
        if (!obj)
                return 0;
        char path[GLOVE_JSON_PATH_MAX];
        snprintf(path, sizeof(path), "$.%s", key);
        if (!json_is_object(obj))
                return glove_error_set(err, EINVAL, "policy.wrong_type", "%s: expected an object", path);
        struct glove_error j = {0};
        if (glove_json_check_keys(obj, feature_keys, path, &j) < 0)
                return glove_error_set(err, EINVAL, "policy.unknown_field", "%s", j.message);
        if (json_object_size(obj) == 0)
                return glove_error_set(err, EINVAL, "policy.empty_list", "%s: no rules; leave the field out", path);
        bool prompts = strcmp(key, "prompts") == 0;
        int (*add)(struct glove_policy *, bool, const char *, const char *, struct glove_error *) = prompts ? add_prompt
                                                                                                          : add_resource;
        int r = glove_policy_file_names(p, obj, path, "allow", false, add, err);
        if (r >= 0)
                r = glove_policy_file_names(p, obj, path, "deny", true, add, err);
        if (r >= 0 && json_object_get(obj, "arguments")) {
                struct glove_policy *c = glove_policy_child(prompts ? &p->prompts : &p->resources, err);
                r = c ? glove_policy_file_arguments(c, obj, path, !prompts, err) : -ENOMEM;
        }
        return r;
}

int glove_policy_file_features(struct glove_policy *p, const json_t *root, struct glove_error *err) {
        int r = decode_feature(p, root, "prompts", err);
        return r < 0 ? r : decode_feature(p, root, "resources", err);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The policy file's "upstreams" object and each upstream's "sandbox"
 * (docs/policy.md, "Upstreams"): decoded strictly, kept as checked data for
 * the run front end, which resolves the grants (glove/policy/policy.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "glove/base/json.h"
#include "internal.h"

/* json.* codes of the base helpers as policy.* codes (stable static
 * strings: an error keeps a pointer to its code); a list over its bound is
 * policy.too_many_grants. Returns the negative errno. */
static int translate(struct glove_error *err, const struct glove_error *j) {
        static const struct {
                const char *json, *policy;
        } map[] = {
                {"json.too_many_items", "policy.too_many_grants"}, {"json.not_integer", "policy.wrong_type"},
                {"json.wrong_type", "policy.wrong_type"},          {"json.too_long", "policy.too_long"},
                {"json.embedded_nul", "policy.embedded_nul"},      {"json.unknown_field", "policy.unknown_field"},
                {"json.not_object", "policy.not_object"},          {"json.missing_field", "policy.missing_field"},
                {"json.no_memory", "policy.no_memory"},            {"json.invalid_utf8", "policy.invalid_utf8"},
        };
        const char *code = "policy.invalid";
        for (size_t i = 0; j->code && i < sizeof(map) / sizeof(map[0]); i++)
                if (strcmp(j->code, map[i].json) == 0)
                        code = map[i].policy;
        return glove_error_set(err, j->errnum ? j->errnum : EINVAL, code, "%s", j->message);
}

#define TRY_JSON(expr)                                   \
        do {                                             \
                struct glove_error j_ = {0};             \
                struct glove_error *jerr = &j_;          \
                if ((expr) < 0)                          \
                        return translate(err, &j_);      \
                (void)jerr;                              \
        } while (0)

static void member(char buf[GLOVE_JSON_PATH_MAX], const char *parent, const char *key) {
        if (glove_json_path_member(buf, GLOVE_JSON_PATH_MAX, parent, key) < 0)
                snprintf(buf, GLOVE_JSON_PATH_MAX, "%.200s...", parent);
}

static void item(char buf[GLOVE_JSON_PATH_MAX], const char *parent, size_t index) {
        if (glove_json_path_index(buf, GLOVE_JSON_PATH_MAX, parent, index) < 0)
                snprintf(buf, GLOVE_JSON_PATH_MAX, "%.200s...[%zu]", parent, index);
}

static bool env_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_POLICY_SANDBOX_ENV_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '_'))
                        return false;
        return true;
}

enum list_kind { LIST_PATH, LIST_ENV, LIST_EGRESS };

/* One list of the sandbox object: non-empty strings, each at most once;
 * paths absolute, variable names [A-Za-z_][A-Za-z0-9_]*. Appended to out
 * (an empty list when the member is absent). */
static int decode_list(const json_t *sb, const char *key, const char *path, size_t max, enum list_kind kind, json_t *out,
                       struct glove_error *err) {
        json_t *list = json_array();
        if (!list || json_object_set_new(out, key, list) < 0)
                return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        if (!json_object_get(sb, key))
                return 0;
        char lpath[GLOVE_JSON_PATH_MAX];
        member(lpath, path, key);
        json_t *arr;
        TRY_JSON(glove_json_get_array(sb, key, path, max, &arr, jerr));
        if (json_array_size(arr) == 0)
                return glove_error_set(err, EINVAL, "policy.empty_list", "%s: an empty list means nothing; leave the field out",
                                       lpath);
        size_t limit = kind == LIST_PATH ? GLOVE_POLICY_VALUE_MAX : GLOVE_POLICY_SANDBOX_RULE_MAX;
        for (size_t i = 0; i < json_array_size(arr); i++) {
                char epath[GLOVE_JSON_PATH_MAX];
                item(epath, lpath, i);
                const char *s;
                TRY_JSON(glove_json_as_string(json_array_get(arr, i), epath, limit, &s, jerr));
                if (kind == LIST_PATH && s[0] != '/')
                        return glove_error_set(err, EINVAL, "policy.bad_grant", "%s: %s is not an absolute path", epath, s);
                if (kind == LIST_ENV && !env_name_valid(s))
                        return glove_error_set(err, EINVAL, "policy.bad_env_name",
                                               "%s: %s is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", epath,
                                               s, GLOVE_POLICY_SANDBOX_ENV_NAME_MAX);
                if (kind == LIST_EGRESS && !s[0])
                        return glove_error_set(err, EINVAL, "policy.bad_grant", "%s: the egress rule is empty", epath);
                for (size_t k = 0; k < i; k++)
                        if (json_equal(json_array_get(arr, k), json_array_get(arr, i)))
                                return glove_error_set(err, EINVAL, "policy.duplicate_rule", "%s: listed twice", epath);
                if (json_array_append(list, json_array_get(arr, i)) < 0)
                        return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        }
        return 0;
}

static const char *const sandbox_keys[] = {"ro", "rw", "env", "egress", "contained", NULL};

int glove_policy_decode_sandbox(const json_t *sb, const char *path, json_t **out, struct glove_error *err) {
        *out = NULL;
        TRY_JSON(glove_json_check_keys(sb, sandbox_keys, path, jerr));
        json_t *o = json_object();
        if (!o)
                return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        bool contained = true;
        int r = decode_list(sb, "ro", path, GLOVE_POLICY_SANDBOX_GRANTS_MAX, LIST_PATH, o, err);
        if (r >= 0)
                r = decode_list(sb, "rw", path, GLOVE_POLICY_SANDBOX_GRANTS_MAX, LIST_PATH, o, err);
        if (r >= 0)
                r = decode_list(sb, "env", path, GLOVE_POLICY_SANDBOX_ENV_MAX, LIST_ENV, o, err);
        if (r >= 0)
                r = decode_list(sb, "egress", path, GLOVE_POLICY_SANDBOX_EGRESS_MAX, LIST_EGRESS, o, err);
        if (r >= 0 && json_object_get(sb, "contained")) {
                struct glove_error j = {0};
                r = glove_json_get_bool(sb, "contained", path, &contained, &j);
                if (r < 0)
                        r = translate(err, &j);
        }
        /* Grants of an upstream that runs on the host would mean nothing:
         * refused rather than ignored (its "env" still applies). */
        if (r >= 0 && !contained &&
            (json_array_size(json_object_get(o, "ro")) || json_array_size(json_object_get(o, "rw")) ||
             json_array_size(json_object_get(o, "egress"))))
                r = glove_error_set(err, EINVAL, "policy.uncontained_grants",
                                    "%s: \"contained\": false runs the upstream on the host, where \"ro\", \"rw\" and \"egress\" "
                                    "grant nothing; leave them out",
                                    path);
        if (r >= 0 && json_object_set_new(o, "contained", json_boolean(contained)) < 0)
                r = glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        if (r < 0) {
                json_decref(o);
                return r;
        }
        *out = o;
        return 0;
}

const json_t *glove_policy_upstream_sandbox(const struct glove_policy *policy, const char *name) {
        return policy && policy->sandboxes ? json_object_get(policy->sandboxes, name) : NULL;
}

int glove_policy_check_sandbox_upstreams(const struct glove_policy *policy, const char *const *names, size_t n,
                                         struct glove_error *err) {
        if (!policy->sandboxes)
                return 0;
        const char *name;
        json_t *v;
        json_object_foreach(policy->sandboxes, name, v) {
                bool known = false;
                for (size_t k = 0; k < n && !known; k++)
                        known = strcmp(names[k], name) == 0;
                if (!known)
                        return glove_error_set(err, EINVAL, "policy.unknown_upstream",
                                               "$.upstreams.%s.sandbox: no upstream is named %s", name, name);
        }
        return 0;
}

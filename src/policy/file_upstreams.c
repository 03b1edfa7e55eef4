/* SPDX-License-Identifier: Apache-2.0 */
/* The policy file's "upstreams" object (docs/policy.md, "Per-upstream
 * settings"): {"NAME": {"client": {...}, "sandbox": {...}}}. This file
 * dispatches the sub-keys and decodes "client"; "sandbox" (contained
 * upstreams' grants) is refused until that feature is built in. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "glove/base/json.h"
#include "glove/base/cleanup.h"
#include "internal.h"

static int fail(struct glove_error *err, const char *code, const char *path, const char *why) {
        return glove_error_set(err, EINVAL, code, "%s: %s", path, why);
}

static void member_path(char buf[GLOVE_JSON_PATH_MAX], const char *parent, const char *key) {
        if (glove_json_path_member(buf, GLOVE_JSON_PATH_MAX, parent, key) < 0)
                snprintf(buf, GLOVE_JSON_PATH_MAX, "%.200s...", parent);
}

/* [a-z0-9_-]{1,32}, as --upstream NAME is. */
static bool upstream_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 32)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
                        return false;
        return true;
}

static const char *const client_keys[] = {"sampling", "elicitation", "roots", "logging", "instructions", NULL};

int glove_policy_decode_client(struct glove_policy *policy, const char *name, const json_t *obj, const char *path,
                               struct glove_error *err) {
        struct glove_error j = {0};
        if (!json_is_object(obj))
                return fail(err, "policy.wrong_type", path, "expected an object of feature: true/false");
        if (glove_json_check_keys(obj, client_keys, path, &j) < 0)
                return glove_error_set(err, EINVAL, "policy.unknown_field", "%s", j.message);
        if (json_object_size(obj) == 0)
                return fail(err, "policy.empty_list", path, "no features; leave the field out");
        unsigned feats = 0;
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)obj, key, v) {
                char kpath[GLOVE_JSON_PATH_MAX];
                member_path(kpath, path, key);
                if (!json_is_boolean(v))
                        return fail(err, "policy.wrong_type", kpath, "expected true or false");
                if (json_is_true(v))
                        feats |= glove_policy_client_feature_from_name(key, strlen(key));
        }
        return glove_policy_add_client(policy, name, feats, path, err);
}

/* ---- sub-keys of one upstream's entry ---- */

static int decode_sandbox(struct glove_policy *policy, const char *name, const json_t *obj, const char *path,
                          struct glove_error *err) {
        /* Contained upstreams' grants (upstreams.c). */
        json_t *decoded = NULL;
        int r = glove_policy_decode_sandbox(obj, path, &decoded, err);
        if (r < 0)
                return r;
        if (!policy->sandboxes)
                policy->sandboxes = json_object();
        if (!policy->sandboxes || json_object_set_new(policy->sandboxes, name, decoded) < 0)
                return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        return 0;
}

static const struct {
        const char *key;
        int (*decode)(struct glove_policy *, const char *, const json_t *, const char *, struct glove_error *);
} upstream_keys[] = {
        {"client", glove_policy_decode_client},
        {"sandbox", decode_sandbox},
};

static int decode_upstream(struct glove_policy *policy, const char *name, const json_t *obj, const char *path,
                           struct glove_error *err) {
        if (!json_is_object(obj))
                return fail(err, "policy.wrong_type", path, "expected an object with \"client\" and/or \"sandbox\"");
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)obj, key, v) {
                char kpath[GLOVE_JSON_PATH_MAX];
                member_path(kpath, path, key);
                size_t i = 0;
                while (i < GLOVE_ELEMENTSOF(upstream_keys) && strcmp(upstream_keys[i].key, key) != 0)
                        i++;
                if (i == GLOVE_ELEMENTSOF(upstream_keys))
                        return fail(err, "policy.unknown_field", kpath, "unknown field (an upstream has \"client\" and \"sandbox\")");
                int r = upstream_keys[i].decode(policy, name, v, kpath, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int glove_policy_decode_upstreams(struct glove_policy *policy, const json_t *root, struct glove_error *err) {
        json_t *obj = json_object_get(root, "upstreams");
        if (!obj)
                return 0;
        if (!json_is_object(obj))
                return fail(err, "policy.wrong_type", "$.upstreams", "expected an object of upstream names");
        if (json_object_size(obj) == 0)
                return fail(err, "policy.empty_list", "$.upstreams", "no upstreams; leave the field out");
        if (json_object_size(obj) > GLOVE_POLICY_UPSTREAMS_MAX)
                return glove_error_set(err, E2BIG, "policy.too_many_upstreams", "$.upstreams: more than %d upstreams",
                                       GLOVE_POLICY_UPSTREAMS_MAX);
        const char *name;
        json_t *v;
        json_object_foreach(obj, name, v) {
                char path[GLOVE_JSON_PATH_MAX];
                member_path(path, "$.upstreams", name);
                if (!upstream_name_valid(name))
                        return glove_error_set(err, EINVAL, "policy.bad_upstream_name",
                                               "%s: an upstream name is 1 to 32 characters from [a-z0-9_-]", path);
                int r = decode_upstream(policy, name, v, path, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

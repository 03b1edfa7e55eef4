/* SPDX-License-Identifier: Apache-2.0 */
/* Client features per upstream: which server-to-client requests and relays
 * an upstream gets (policy.h, docs/policy.md "Client features"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "internal.h"

static const struct {
        unsigned feature;
        const char *name;
} features[] = {
        {GLOVE_POLICY_CLIENT_SAMPLING, "sampling"},
        {GLOVE_POLICY_CLIENT_ELICITATION, "elicitation"},
        {GLOVE_POLICY_CLIENT_ROOTS, "roots"},
        {GLOVE_POLICY_CLIENT_LOGGING, "logging"},
        {GLOVE_POLICY_CLIENT_INSTRUCTIONS, "instructions"},
};

const char *glove_policy_client_feature_name(unsigned feature) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(features); i++)
                if (features[i].feature == feature)
                        return features[i].name;
        return NULL;
}

unsigned glove_policy_client_feature_from_name(const char *name, size_t len) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(features); i++)
                if (strlen(features[i].name) == len && memcmp(features[i].name, name, len) == 0)
                        return features[i].feature;
        return 0;
}

static bool upstream_name_valid(const char *s, size_t len) {
        if (len == 0 || len > GLOVE_POLICY_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
                        return false;
        return true;
}

static struct glove_policy_client *find_client(const struct glove_policy *policy, const char *name) {
        for (size_t i = 0; i < policy->n_clients; i++)
                if (strcmp(policy->clients[i].name, name) == 0)
                        return (struct glove_policy_client *)&policy->clients[i];
        return NULL;
}

int glove_policy_add_client(struct glove_policy *policy, const char *name, unsigned feats, const char *what,
                            struct glove_error *err) {
        if (!upstream_name_valid(name, strlen(name)))
                return glove_error_set(err, EINVAL, "policy.bad_client_rule", "%s: the upstream name must be [a-z0-9_-]{1,32}",
                                       what);
        struct glove_policy_client *c = find_client(policy, name);
        if (!c) {
                if (policy->n_clients >= GLOVE_POLICY_CLIENTS_MAX)
                        return glove_error_set(err, ENOSPC, "policy.too_many_rules",
                                               "%s: client features for at most %d upstreams", what, GLOVE_POLICY_CLIENTS_MAX);
                c = &policy->clients[policy->n_clients++];
                snprintf(c->name, sizeof(c->name), "%s", name);
                c->features = 0;
        }
        c->features |= feats;
        return 0;
}

int glove_policy_allow_client(struct glove_policy *policy, const char *spec, struct glove_error *err) {
        if (!policy || !spec)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy or no rule");
        const char *colon = strchr(spec, ':');
        if (!colon || colon[1] == '\0')
                return glove_error_set(err, EINVAL, "policy.bad_client_rule",
                                       "%s: expected NAME:FEATURE[,FEATURE...] (sampling, elicitation, roots, logging, instructions)",
                                       spec);
        char name[GLOVE_POLICY_NAME_MAX + 1];
        size_t nlen = (size_t)(colon - spec);
        if (!upstream_name_valid(spec, nlen))
                return glove_error_set(err, EINVAL, "policy.bad_client_rule", "%s: the upstream name must be [a-z0-9_-]{1,32}",
                                       spec);
        memcpy(name, spec, nlen);
        name[nlen] = '\0';
        unsigned feats = 0;
        for (const char *p = colon + 1;;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);
                unsigned f = glove_policy_client_feature_from_name(p, len);
                if (!f)
                        return glove_error_set(err, EINVAL, "policy.bad_client_rule",
                                               "%s: unknown feature \"%.*s\" (sampling, elicitation, roots, logging, instructions)",
                                               spec, (int)(len > 64 ? 64 : len), p);
                feats |= f;
                if (!comma)
                        break;
                p = comma + 1;
        }
        return glove_policy_add_client(policy, name, feats, spec, err);
}

unsigned glove_policy_client_features(const struct glove_policy *policy, const char *upstream) {
        const struct glove_policy_client *c = policy && upstream ? find_client(policy, upstream) : NULL;
        return c ? c->features : 0;
}

int glove_policy_merge_clients(struct glove_policy *policy, const struct glove_policy *from, bool check_only,
                               struct glove_error *err) {
        size_t fresh = 0;
        for (size_t i = 0; i < from->n_clients; i++)
                fresh += !find_client(policy, from->clients[i].name);
        if (policy->n_clients + fresh > GLOVE_POLICY_CLIENTS_MAX)
                return glove_error_set(err, ENOSPC, "policy.too_many_rules", "policy file: client features for at most %d upstreams",
                                       GLOVE_POLICY_CLIENTS_MAX);
        for (size_t i = 0; !check_only && i < from->n_clients; i++)
                (void)glove_policy_add_client(policy, from->clients[i].name, from->clients[i].features, "policy file", err);
        return 0;
}

json_t *glove_policy_clients_json(const struct glove_policy *policy) {
        json_t *o = json_object();
        for (size_t i = 0; o && i < policy->n_clients; i++) {
                json_t *a = json_array();
                for (size_t k = 0; a && k < GLOVE_ELEMENTSOF(features); k++)
                        if ((policy->clients[i].features & features[k].feature) &&
                            json_array_append_new(a, json_string(features[k].name)) < 0)
                                a = (json_decref(a), NULL);
                if (!a || json_object_set_new(o, policy->clients[i].name, a) < 0)
                        o = (json_decref(o), NULL);
        }
        return o;
}

int glove_policy_check_client_upstreams(const struct glove_policy *policy, const char *const *names, size_t n,
                                        struct glove_error *err) {
        for (size_t i = 0; i < policy->n_clients; i++) {
                bool known = false;
                for (size_t k = 0; k < n && !known; k++)
                        known = strcmp(names[k], policy->clients[i].name) == 0;
                if (known)
                        continue;
                char list[256] = "";
                size_t off = 0;
                for (size_t k = 0; k < n && off < sizeof(list); k++) {
                        int w = snprintf(list + off, sizeof(list) - off, "%s%s", k ? ", " : "", names[k]);
                        if (w < 0)
                                break;
                        off += (size_t)w;
                }
                return glove_error_set(err, EINVAL, "policy.unknown_upstream",
                                       "client %s: no upstream is named %s (the upstreams are: %s)", policy->clients[i].name,
                                       policy->clients[i].name, n ? list : "none");
        }
        return 0;
}

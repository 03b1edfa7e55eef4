/* SPDX-License-Identifier: Apache-2.0 */
/* The policy object: command-line rules, merging, and decisions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/json.h"
#include "internal.h"

int glove_policy_new(struct glove_policy **out) {
        if (!out)
                return -EINVAL;
        *out = calloc(1, sizeof(**out));
        return *out ? 0 : -ENOMEM;
}

static void tool_clear(struct glove_policy_tool *t) {
        for (size_t i = 0; i < t->n_rules; i++)
                glove_policy_arg_rule_clear(&t->rules[i]);
        free(t->rules);
        free(t->qualified);
}

void glove_policy_free(struct glove_policy *policy) {
        if (!policy)
                return;
        for (size_t i = 0; i < policy->n_allow; i++)
                free(policy->allow[i].qualified);
        for (size_t i = 0; i < policy->n_deny; i++)
                free(policy->deny[i].qualified);
        for (size_t i = 0; i < policy->n_tools; i++)
                tool_clear(&policy->tools[i]);
        free(policy->allow);
        free(policy->deny);
        free(policy->tools);
        glove_policy_free(policy->prompts);
        glove_policy_free(policy->resources);
        json_decref(policy->sandboxes);
        free(policy);
}

/* Makes room for want elements of size elem in *arr (capacity *cap). */
static int reserve(void **arr, size_t *cap, size_t want, size_t elem) {
        if (want <= *cap)
                return 0;
        size_t n = *cap ? *cap : 8;
        while (n < want)
                n *= 2;
        void *p = reallocarray(*arr, n, elem);
        if (!p)
                return -ENOMEM;
        *arr = p;
        *cap = n;
        return 0;
}

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
}

static int too_many_rules(struct glove_error *err, const char *what) {
        return glove_error_set(err, ENOSPC, "policy.too_many_rules", "%s: a policy holds at most %d rules", what,
                               GLOVE_POLICY_RULES_MAX);
}

static bool name_rules_contain(const struct glove_policy_name_rule *rules, size_t n, const char *qualified) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(rules[i].qualified, qualified) == 0)
                        return true;
        return false;
}

int glove_policy_add_name_rule(struct glove_policy *policy, bool deny, const char *qualified, const char *what,
                               struct glove_error *err) {
        size_t name_len;
        bool wildcard;
        const char *why;
        if (!policy)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy");
        if (!glove_policy_name_parse(qualified, true, &name_len, &wildcard, &why))
                return glove_error_set(err, EINVAL, "policy.bad_tool_name", "%s: %s", what, why);
        return glove_policy_add_rule_parsed(policy, deny, qualified, name_len, wildcard, what, err);
}

int glove_policy_add_rule_parsed(struct glove_policy *policy, bool deny, const char *qualified, size_t name_len,
                                 bool wildcard, const char *what, struct glove_error *err) {
        struct glove_policy_name_rule **arr = deny ? &policy->deny : &policy->allow;
        size_t *n = deny ? &policy->n_deny : &policy->n_allow;
        size_t *cap = deny ? &policy->cap_deny : &policy->cap_allow;
        if (name_rules_contain(*arr, *n, qualified))
                return 0;
        if (policy->n_rules >= GLOVE_POLICY_RULES_MAX)
                return too_many_rules(err, what);
        if (reserve((void **)arr, cap, *n + 1, sizeof(**arr)) < 0)
                return no_memory(err);
        char *copy = strdup(qualified);
        if (!copy)
                return no_memory(err);
        (*arr)[(*n)++] = (struct glove_policy_name_rule){copy, name_len, wildcard};
        policy->n_rules++;
        return 0;
}

int glove_policy_allow(struct glove_policy *policy, const char *qualified, struct glove_error *err) {
        return glove_policy_add_name_rule(policy, false, qualified, qualified, err);
}

int glove_policy_deny(struct glove_policy *policy, const char *qualified, struct glove_error *err) {
        return glove_policy_add_name_rule(policy, true, qualified, qualified, err);
}

static struct glove_policy_tool *find_tool(const struct glove_policy *policy, const char *qualified) {
        for (size_t i = 0; i < policy->n_tools; i++)
                if (strcmp(policy->tools[i].qualified, qualified) == 0)
                        return &policy->tools[i];
        return NULL;
}

int glove_policy_add_arg_rule(struct glove_policy *policy, const char *qualified, size_t name_len,
                              struct glove_policy_arg_rule *rule, const char *what, struct glove_error *err) {
        int r = 0;
        struct glove_policy_tool *t = find_tool(policy, qualified);
        if (policy->n_rules >= GLOVE_POLICY_RULES_MAX) {
                r = too_many_rules(err, what);
                goto out;
        }
        if (t && t->n_rules >= GLOVE_POLICY_TOOL_RULES_MAX) {
                r = glove_error_set(err, ENOSPC, "policy.too_many_rules",
                                    "%s: a tool has at most %d argument rules", what, GLOVE_POLICY_TOOL_RULES_MAX);
                goto out;
        }
        if (glove_policy_arg_rule_render(rule, qualified) < 0) {
                r = no_memory(err);
                goto out;
        }
        if (!t) {
                char *copy = strdup(qualified);
                if (!copy || reserve((void **)&policy->tools, &policy->cap_tools, policy->n_tools + 1,
                                     sizeof(*policy->tools)) < 0) {
                        free(copy);
                        r = no_memory(err);
                        goto out;
                }
                t = &policy->tools[policy->n_tools++];
                *t = (struct glove_policy_tool){.qualified = copy, .name_len = name_len};
        }
        if (reserve((void **)&t->rules, &t->cap_rules, t->n_rules + 1, sizeof(*t->rules)) < 0) {
                r = no_memory(err);
                goto out;
        }
        t->rules[t->n_rules++] = *rule;
        memset(rule, 0, sizeof(*rule));
        policy->n_rules++;
out:
        glove_policy_arg_rule_clear(rule);
        return r;
}

/* Splits "NAME.TOOL:POINTER=PREFIX" at the first ':' and the first '='
 * after it (a TOOL holding ':' or a POINTER holding '=' needs a policy file). */
int glove_policy_allow_arg(struct glove_policy *policy, const char *spec, struct glove_error *err) {
        if (!policy)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy");
        if (!spec || !*spec)
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule",
                                       "empty; expected NAME.TOOL:POINTER=PREFIX");
        const char *colon = strchr(spec, ':');
        if (!colon)
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule",
                                       "no ':' after the tool; expected NAME.TOOL:POINTER=PREFIX");
        const char *eq = strchr(colon, '=');
        if (!eq)
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule",
                                       "no '=' after the pointer; expected NAME.TOOL:POINTER=PREFIX");
        size_t tool_len = (size_t)(colon - spec);
        size_t ptr_len = (size_t)(eq - colon - 1);
        const char *prefix = eq + 1;
        size_t prefix_len = strnlen(prefix, GLOVE_POLICY_VALUE_MAX + 1);
        if (tool_len > GLOVE_POLICY_QUALIFIED_MAX)
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule",
                                       "tool: longer than NAME.TOOL allows (32 + 1 + 128 bytes)");
        if (ptr_len > GLOVE_POLICY_POINTER_MAX)
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule",
                                       "the JSON Pointer is longer than %d bytes",
                                       GLOVE_POLICY_POINTER_MAX);
        if (prefix_len == 0)
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule",
                                       "the PREFIX after '=' is empty (it would match every string)");
        if (prefix_len > GLOVE_POLICY_VALUE_MAX)
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule",
                                       "the PREFIX is longer than %d bytes", GLOVE_POLICY_VALUE_MAX);
        if (!glove_json_utf8_valid(prefix, prefix_len, NULL))
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule", "the PREFIX is not valid UTF-8");

        char qualified[GLOVE_POLICY_QUALIFIED_MAX + 1];
        char pointer[GLOVE_POLICY_POINTER_MAX + 1];
        memcpy(qualified, spec, tool_len);
        qualified[tool_len] = '\0';
        memcpy(pointer, colon + 1, ptr_len);
        pointer[ptr_len] = '\0';
        size_t name_len;
        bool wildcard;
        const char *why;
        if (!glove_policy_name_parse(qualified, false, &name_len, &wildcard, &why))
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule", "tool: %s", why);
        if (!glove_policy_pointer_valid(pointer, &why))
                return glove_error_set(err, EINVAL, "policy.bad_arg_rule", "%s", why);

        struct glove_policy_arg_rule rule = {.kind = GLOVE_POLICY_KIND_PREFIX, .value_len = prefix_len};
        rule.pointer = strdup(pointer);
        rule.value = strndup(prefix, prefix_len);
        if (!rule.pointer || !rule.value) {
                glove_policy_arg_rule_clear(&rule);
                return no_memory(err);
        }
        return glove_policy_add_arg_rule(policy, qualified, name_len, &rule, spec, err);
}

/* ---- merging ---- */

static size_t name_rules_new(const struct glove_policy_name_rule *have, size_t n_have,
                             const struct glove_policy_name_rule *add, size_t n_add) {
        size_t k = 0;
        for (size_t i = 0; i < n_add; i++)
                k += !name_rules_contain(have, n_have, add[i].qualified);
        return k;
}

/* Moves the rules of add[0..n_add) not yet in *arr; capacity reserved. */
static size_t name_rules_move(struct glove_policy_name_rule *arr, size_t n, struct glove_policy_name_rule *add,
                              size_t n_add) {
        for (size_t i = 0; i < n_add; i++) {
                if (name_rules_contain(arr, n, add[i].qualified))
                        continue;
                arr[n++] = add[i];
                add[i].qualified = NULL;
        }
        return n;
}

/* Merges from->prompts and from->resources into policy's own (created
 * when missing). */
static int merge_children(struct glove_policy *policy, struct glove_policy *from, struct glove_error *err) {
        struct glove_policy **mine[] = {&policy->prompts, &policy->resources};
        struct glove_policy *theirs[] = {from->prompts, from->resources};
        for (size_t i = 0; i < 2; i++) {
                if (!theirs[i])
                        continue;
                if (!*mine[i] && glove_policy_new(mine[i]) < 0)
                        return no_memory(err);
                int r = glove_policy_merge(*mine[i], theirs[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int glove_policy_merge(struct glove_policy *policy, struct glove_policy *from, struct glove_error *err) {
        int cr = merge_children(policy, from, err);
        if (cr < 0)
                return cr;
        size_t new_allow = name_rules_new(policy->allow, policy->n_allow, from->allow, from->n_allow);
        size_t new_deny = name_rules_new(policy->deny, policy->n_deny, from->deny, from->n_deny);
        size_t new_args = 0, new_tools = 0;
        for (size_t i = 0; i < from->n_tools; i++) {
                const struct glove_policy_tool *ft = &from->tools[i];
                const struct glove_policy_tool *t = find_tool(policy, ft->qualified);
                new_args += ft->n_rules;
                new_tools += !t;
                if (t && t->n_rules + ft->n_rules > GLOVE_POLICY_TOOL_RULES_MAX)
                        return glove_error_set(err, ENOSPC, "policy.too_many_rules",
                                               "%s: more than %d argument rules with those already given",
                                               ft->qualified, GLOVE_POLICY_TOOL_RULES_MAX);
        }
        if (policy->n_rules + new_allow + new_deny + new_args > GLOVE_POLICY_RULES_MAX)
                return too_many_rules(err, "policy file");
        if (glove_policy_merge_clients(policy, from, true, err) < 0)
                return -ENOSPC;

        /* The "upstreams" sandboxes of a policy file (upstreams.c). */
        if (from->sandboxes && policy->sandboxes && json_object_update(policy->sandboxes, from->sandboxes) < 0)
                return no_memory(err);
        /* Reserve everything first; nothing below can fail. */
        if (reserve((void **)&policy->allow, &policy->cap_allow, policy->n_allow + new_allow,
                    sizeof(*policy->allow)) < 0 ||
            reserve((void **)&policy->deny, &policy->cap_deny, policy->n_deny + new_deny, sizeof(*policy->deny)) < 0 ||
            reserve((void **)&policy->tools, &policy->cap_tools, policy->n_tools + new_tools,
                    sizeof(*policy->tools)) < 0)
                return no_memory(err);
        for (size_t i = 0; i < from->n_tools; i++) {
                struct glove_policy_tool *t = find_tool(policy, from->tools[i].qualified);
                if (t && reserve((void **)&t->rules, &t->cap_rules, t->n_rules + from->tools[i].n_rules,
                                 sizeof(*t->rules)) < 0)
                        return no_memory(err);
        }

        policy->n_allow = name_rules_move(policy->allow, policy->n_allow, from->allow, from->n_allow);
        policy->n_deny = name_rules_move(policy->deny, policy->n_deny, from->deny, from->n_deny);
        for (size_t i = 0; i < from->n_tools; i++) {
                struct glove_policy_tool *ft = &from->tools[i];
                struct glove_policy_tool *t = find_tool(policy, ft->qualified);
                if (!t) {
                        policy->tools[policy->n_tools++] = *ft;
                } else {
                        memcpy(t->rules + t->n_rules, ft->rules, ft->n_rules * sizeof(*ft->rules));
                        t->n_rules += ft->n_rules;
                        free(ft->rules);
                        free(ft->qualified);
                }
                memset(ft, 0, sizeof(*ft));
        }
        policy->n_rules += new_allow + new_deny + new_args;
        /* from keeps only duplicates of rules policy already had. */
        for (size_t i = 0; i < from->n_allow; i++)
                free(from->allow[i].qualified);
        for (size_t i = 0; i < from->n_deny; i++)
                free(from->deny[i].qualified);
        from->n_allow = from->n_deny = from->n_tools = from->n_rules = 0;
        (void)glove_policy_merge_clients(policy, from, false, err); /* checked above: cannot fail */
        from->n_clients = 0;
        if (from->sandboxes && !policy->sandboxes) {
                policy->sandboxes = from->sandboxes;
                from->sandboxes = NULL;
        }
        return 0;
}

/* ---- decisions ---- */

/* The rule of rules[0..n) matching upstream.tool: an exact rule first, then
 * the upstream's wildcard; NULL when none matches. */
static const struct glove_policy_name_rule *match(const struct glove_policy_name_rule *rules, size_t n,
                                                  const char *upstream, size_t up_len, const char *tool) {
        const struct glove_policy_name_rule *wild = NULL;
        for (size_t i = 0; i < n; i++) {
                const struct glove_policy_name_rule *r = &rules[i];
                if (r->name_len != up_len || memcmp(r->qualified, upstream, up_len) != 0)
                        continue;
                if (r->wildcard) {
                        if (!wild)
                                wild = r;
                } else if (strcmp(r->qualified + up_len + 1, tool) == 0) {
                        return r;
                }
        }
        return wild;
}

/* The upstream name's length when upstream and tool can be named by rules at
 * all, else 0. */
static size_t callable_name_len(const char *upstream, const char *tool) {
        if (!upstream || !tool || !glove_policy_tool_valid(tool))
                return 0;
        size_t n = strnlen(upstream, GLOVE_POLICY_NAME_MAX + 1);
        return n <= GLOVE_POLICY_NAME_MAX ? n : 0;
}

bool glove_policy_tool_visible(const struct glove_policy *policy, const char *upstream, const char *tool) {
        size_t up_len = callable_name_len(upstream, tool);
        if (!policy || up_len == 0)
                return false;
        return !match(policy->deny, policy->n_deny, upstream, up_len, tool) &&
               match(policy->allow, policy->n_allow, upstream, up_len, tool);
}

static void verdict_set(struct glove_policy_verdict *v, bool allowed, const char *reason, const char *prefix,
                        const char *rule) {
        v->allowed = allowed;
        v->reason = reason;
        size_t p = strlen(prefix);
        size_t n = strnlen(rule, GLOVE_POLICY_RULE_MAX - 1 - p);
        memcpy(v->rule, prefix, p);
        memcpy(v->rule + p, rule, n);
        v->rule[p + n] = '\0';
}

static const struct glove_policy_tool *find_tool_split(const struct glove_policy *policy, const char *upstream,
                                                       size_t up_len, const char *tool) {
        for (size_t i = 0; i < policy->n_tools; i++) {
                const struct glove_policy_tool *t = &policy->tools[i];
                if (t->name_len == up_len && memcmp(t->qualified, upstream, up_len) == 0 &&
                    strcmp(t->qualified + up_len + 1, tool) == 0)
                        return t;
        }
        return NULL;
}

void glove_policy_check_call(const struct glove_policy *policy, const char *upstream, const char *tool,
                             const json_t *arguments, struct glove_policy_verdict *verdict) {
        const char *denied = "policy_denied";
        size_t up_len = callable_name_len(upstream, tool);
        if (!policy || up_len == 0) {
                verdict_set(verdict, false, denied, "", "default deny");
                return;
        }
        const struct glove_policy_name_rule *r = match(policy->deny, policy->n_deny, upstream, up_len, tool);
        if (r) {
                verdict_set(verdict, false, denied, "deny ", r->qualified);
                return;
        }
        const struct glove_policy_name_rule *a = match(policy->allow, policy->n_allow, upstream, up_len, tool);
        if (!a) {
                verdict_set(verdict, false, denied, "", "default deny");
                return;
        }
        if (arguments && !json_is_object(arguments)) {
                verdict_set(verdict, false, "invalid_params", "", "arguments must be an object");
                return;
        }
        const struct glove_policy_tool *t = find_tool_split(policy, upstream, up_len, tool);
        for (size_t i = 0; t && i < t->n_rules; i++) {
                const json_t *value = NULL;
                if (arguments && glove_json_pointer_get(arguments, t->rules[i].pointer, &value) < 0)
                        value = NULL; /* -ENOMEM: treated as absent, so the rule fails closed */
                if (!glove_policy_arg_rule_passes(&t->rules[i], value)) {
                        verdict_set(verdict, false, denied, "", t->rules[i].text);
                        return;
                }
        }
        verdict_set(verdict, true, NULL, "allow ", a->qualified);
}

/* ---- rules as data ---- */

bool glove_policy_rule_at(const struct glove_policy *policy, size_t i, struct glove_policy_rule_ref *out) {
        if (!policy)
                return false;
        if (i < policy->n_allow) {
                const struct glove_policy_name_rule *r = &policy->allow[i];
                *out = (struct glove_policy_rule_ref){"allow", r->qualified, r->name_len, r->wildcard};
                return true;
        }
        i -= policy->n_allow;
        if (i < policy->n_deny) {
                const struct glove_policy_name_rule *r = &policy->deny[i];
                *out = (struct glove_policy_rule_ref){"deny", r->qualified, r->name_len, r->wildcard};
                return true;
        }
        i -= policy->n_deny;
        if (i < policy->n_tools) {
                const struct glove_policy_tool *t = &policy->tools[i];
                *out = (struct glove_policy_rule_ref){"arguments", t->qualified, t->name_len, false};
                return true;
        }
        return false;
}

int glove_policy_check_upstreams(const struct glove_policy *policy, const char *const *names, size_t n,
                                 struct glove_error *err) {
        const struct glove_policy *children[] = {policy ? policy->prompts : NULL, policy ? policy->resources : NULL};
        static const char *const child_names[] = {"prompt rule", "resource rule"};
        for (size_t c = 0; c < 2; c++) {
                int r = children[c] ? glove_policy_check_upstreams(children[c], names, n, err) : 0;
                if (r < 0) {
                        glove_error_prefix(err, "%s", child_names[c]);
                        return r;
                }
        }
        struct glove_policy_rule_ref ref;
        for (size_t i = 0; glove_policy_rule_at(policy, i, &ref); i++) {
                bool known = false;
                for (size_t k = 0; k < n && !known; k++)
                        known = strlen(names[k]) == ref.name_len && strncmp(names[k], ref.qualified, ref.name_len) == 0;
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
                                       "%s %s: no upstream is named %.*s (the upstreams are: %s)", ref.kind, ref.qualified,
                                       (int)ref.name_len, ref.qualified, n ? list : "none");
        }
        return glove_policy_check_client_upstreams(policy, names, n, err);
}

static json_t *name_rules_json(const struct glove_policy_name_rule *rules, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, json_string(rules[i].qualified)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

json_t *glove_policy_to_json(const struct glove_policy *policy) {
        if (!policy)
                return NULL;
        json_t *args = json_object();
        for (size_t i = 0; args && i < policy->n_tools; i++) {
                const struct glove_policy_tool *t = &policy->tools[i];
                json_t *texts = json_array();
                for (size_t k = 0; texts && k < t->n_rules; k++)
                        if (json_array_append_new(texts, json_string(t->rules[k].text)) < 0) {
                                json_decref(texts);
                                texts = NULL;
                        }
                if (!texts || json_object_set_new(args, t->qualified, texts) < 0) {
                        json_decref(args);
                        args = NULL;
                }
        }
        json_t *allow = name_rules_json(policy->allow, policy->n_allow);
        json_t *deny = name_rules_json(policy->deny, policy->n_deny);
        if (!args || !allow || !deny) {
                json_decref(args);
                json_decref(allow);
                json_decref(deny);
                return NULL;
        }
        json_t *out = json_pack("{s:o,s:o,s:o}", "allow", allow, "deny", deny, "arguments", args);
        /* Prompt and resource rules (docs/policy.md), only when there are any. */
        const struct glove_policy *children[] = {policy->prompts, policy->resources};
        static const char *const keys[] = {"prompts", "resources"};
        for (size_t c = 0; out && c < 2; c++) {
                if (!children[c] || children[c]->n_rules == 0)
                        continue;
                if (json_object_set_new(out, keys[c], glove_policy_to_json(children[c])) < 0) {
                        json_decref(out);
                        out = NULL;
                }
        }
        if (out && policy->n_clients > 0 && json_object_set_new(out, "client", glove_policy_clients_json(policy)) < 0) {
                json_decref(out);
                out = NULL;
        }
        return out;
}

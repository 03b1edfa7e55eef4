/* SPDX-License-Identifier: Apache-2.0 */
/* Prompt and resource rules (docs/policy.md, "Prompts and resources"):
 * prompts are named NAME.PROMPT and decided exactly as tools, in a policy of
 * their own; resources are decided by "NAME:PATTERN" rules on the
 * upstream's own URI, then by argument rules on {"uri", "path"}. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/json.h"
#include "internal.h"

struct glove_policy *glove_policy_child(struct glove_policy **slot, struct glove_error *err) {
        if (!*slot && glove_policy_new(slot) < 0) {
                glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
                return NULL;
        }
        return *slot;
}

/* ---- prompts ---- */

static int add_prompt_rule(struct glove_policy *p, bool deny, const char *text, const char *what, struct glove_error *err) {
        struct glove_policy *c = glove_policy_child(&p->prompts, err);
        return c ? glove_policy_add_name_rule(c, deny, text, what, err) : -ENOMEM;
}

int glove_policy_allow_prompt(struct glove_policy *policy, const char *qualified, struct glove_error *err) {
        if (!policy)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy");
        return add_prompt_rule(policy, false, qualified, qualified, err);
}

int glove_policy_deny_prompt(struct glove_policy *policy, const char *qualified, struct glove_error *err) {
        if (!policy)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy");
        return add_prompt_rule(policy, true, qualified, qualified, err);
}

int glove_policy_allow_prompt_arg(struct glove_policy *policy, const char *spec, struct glove_error *err) {
        if (!policy)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy");
        struct glove_policy *c = glove_policy_child(&policy->prompts, err);
        return c ? glove_policy_allow_arg(c, spec, err) : -ENOMEM;
}

bool glove_policy_prompt_visible(const struct glove_policy *policy, const char *upstream, const char *prompt) {
        return policy && policy->prompts && glove_policy_tool_visible(policy->prompts, upstream, prompt);
}

void glove_policy_check_prompt(const struct glove_policy *policy, const char *upstream, const char *prompt,
                               const json_t *arguments, struct glove_policy_verdict *verdict) {
        glove_policy_check_call(policy ? policy->prompts : NULL, upstream, prompt, arguments, verdict);
}

/* ---- resources ---- */

/* Bytes s[0..n): UTF-8 without control characters (C0, DEL, C1). */
static bool clean_text(const char *s, size_t n) {
        if (!glove_json_utf8_valid(s, n, NULL))
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < 0x20 || c == 0x7f || (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
                                               (unsigned char)s[i + 1] <= 0x9f))
                        return false;
        }
        return true;
}

bool glove_policy_resource_uri_valid(const char *uri, size_t len) {
        return uri && len > 0 && len <= GLOVE_POLICY_URI_MAX && clean_text(uri, len);
}

bool glove_policy_resource_rule_parse(const char *spec, size_t *name_len, bool *prefix, const char **why) {
        if (!spec) {
                *why = "no rule given";
                return false;
        }
        size_t total = strnlen(spec, GLOVE_POLICY_NAME_MAX + 1 + GLOVE_POLICY_URI_MAX + 1);
        const char *colon = memchr(spec, ':', total < GLOVE_POLICY_NAME_MAX + 1 ? total : GLOVE_POLICY_NAME_MAX + 1);
        if (!colon) {
                *why = "expected NAME:PATTERN (no ':' after an upstream NAME of 1 to 32 characters)";
                return false;
        }
        size_t n = (size_t)(colon - spec);
        if (n == 0) {
                *why = "the upstream NAME must be 1 to 32 characters";
                return false;
        }
        for (size_t i = 0; i < n; i++)
                if (!((spec[i] >= 'a' && spec[i] <= 'z') || (spec[i] >= '0' && spec[i] <= '9') || spec[i] == '_' ||
                      spec[i] == '-')) {
                        *why = "the upstream NAME may only hold a-z, 0-9, '_' and '-'";
                        return false;
                }
        const char *pat = colon + 1;
        size_t plen = total - n - 1;
        if (plen == 0) {
                *why = "the PATTERN after ':' is empty (write * for every URI of the upstream)";
                return false;
        }
        if (plen > GLOVE_POLICY_URI_MAX) {
                *why = "the PATTERN is longer than 4096 bytes";
                return false;
        }
        if (!clean_text(pat, plen)) {
                *why = "the PATTERN is not valid UTF-8 or contains a control character";
                return false;
        }
        const char *star = memchr(pat, '*', plen);
        if (star && star != pat + plen - 1) {
                *why = "\"*\" is a wildcard only as the last character of the PATTERN (a prefix)";
                return false;
        }
        *name_len = n;
        *prefix = star != NULL;
        return true;
}

static int add_resource_rule(struct glove_policy *p, bool deny, const char *text, const char *what,
                             struct glove_error *err) {
        size_t name_len;
        bool prefix;
        const char *why;
        if (!glove_policy_resource_rule_parse(text, &name_len, &prefix, &why))
                return glove_error_set(err, EINVAL, "policy.bad_resource_rule", "%s: %s", what, why);
        struct glove_policy *c = glove_policy_child(&p->resources, err);
        return c ? glove_policy_add_rule_parsed(c, deny, text, name_len, prefix, what, err) : -ENOMEM;
}

int glove_policy_allow_resource(struct glove_policy *policy, const char *spec, struct glove_error *err) {
        if (!policy)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy");
        return add_resource_rule(policy, false, spec, spec, err);
}

int glove_policy_deny_resource(struct glove_policy *policy, const char *spec, struct glove_error *err) {
        if (!policy)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy");
        return add_resource_rule(policy, true, spec, spec, err);
}

/* Whether rule r ("NAME:PATTERN") matches uri[0..len) of upstream. */
static bool resource_match(const struct glove_policy_name_rule *r, const char *upstream, size_t up_len, const char *uri,
                           size_t len) {
        if (r->name_len != up_len || memcmp(r->qualified, upstream, up_len) != 0)
                return false;
        const char *pat = r->qualified + up_len + 1;
        size_t plen = strlen(pat);
        if (r->wildcard) /* a prefix: PATTERN less its "*" */
                return len >= plen - 1 && memcmp(uri, pat, plen - 1) == 0;
        return len == plen && memcmp(uri, pat, plen) == 0;
}

static const struct glove_policy_name_rule *resource_find(const struct glove_policy_name_rule *rules, size_t n,
                                                          const char *upstream, size_t up_len, const char *uri,
                                                          size_t len) {
        for (size_t i = 0; i < n; i++)
                if (resource_match(&rules[i], upstream, up_len, uri, len))
                        return &rules[i];
        return NULL;
}

static void verdict(struct glove_policy_verdict *v, bool allowed, const char *prefix, const char *rule) {
        v->allowed = allowed;
        v->reason = allowed ? NULL : "policy_denied";
        snprintf(v->rule, sizeof(v->rule), "%s%s", prefix, rule);
}

static int hex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

char *glove_policy_file_uri_path(const char *uri, size_t len) {
        static const char scheme[] = "file://";
        size_t sl = sizeof(scheme) - 1, off;
        if (len < sl || strncasecmp(uri, scheme, sl) != 0)
                return NULL;
        if (len > sl && uri[sl] == '/')
                off = sl; /* file:///path */
        else if (len >= sl + 10 && strncasecmp(uri + sl, "localhost/", 10) == 0)
                off = sl + 9; /* file://localhost/path */
        else
                return NULL; /* another host, or none */
        char *out = malloc(len - off + 1);
        size_t k = 0;
        for (size_t i = off; out && i < len; i++) {
                char c = uri[i];
                if (c == '?' || c == '#')
                        break; /* no query or fragment in a path */
                if (c == '%') {
                        int h = i + 2 < len ? hex(uri[i + 1]) : -1, l = i + 2 < len ? hex(uri[i + 2]) : -1;
                        if (h < 0 || l < 0 || (h == 0 && l == 0)) {
                                free(out); /* malformed, or a NUL: no path */
                                return NULL;
                        }
                        out[k++] = (char)(h * 16 + l);
                        i += 2;
                        continue;
                }
                out[k++] = c;
        }
        if (out)
                out[k] = '\0';
        return out;
}

/* The argument rules of upstream's resources (keyed by NAME), or NULL. */
static const struct glove_policy_tool *resource_args(const struct glove_policy *res, const char *upstream, size_t up_len) {
        for (size_t i = 0; i < res->n_tools; i++)
                if (res->tools[i].name_len == up_len && strlen(res->tools[i].qualified) == up_len &&
                    memcmp(res->tools[i].qualified, upstream, up_len) == 0)
                        return &res->tools[i];
        return NULL;
}

/* A file: URI is decided only in its one canonical spelling, or another
 * spelling of a denied file would pass a byte-for-byte deny pattern and
 * reach a server that decodes and resolves it (red-team finding:
 * file:///srv/data/%70rivate/key, .../data//private/key,
 * .../data/./private/key). Canonical: "file:///" exactly (lower case, no
 * authority such as localhost), a path without "." or ".." segments or
 * empty segments (a trailing "/" is fine), and percent-escapes only with
 * upper-case hex and only for bytes that need one (never an unreserved
 * character of RFC 3986 or "/"). Any other URI: true (its patterns match
 * byte for byte, docs/policy.md). */
static bool file_uri_canonical(const char *uri, size_t len) {
        if (len < 5 || strncasecmp(uri, "file:", 5) != 0)
                return true;
        if (len < 8 || memcmp(uri, "file:///", 8) != 0)
                return false;
        size_t seg = 7; /* index of the "/" that starts the current segment */
        for (size_t i = 8; i <= len; i++) {
                char c = i < len ? uri[i] : '\0';
                if (i == len || c == '/' || c == '?' || c == '#') {
                        size_t n = i - seg - 1;
                        bool last = i == len || c != '/';
                        if ((n == 0 && !last) || (n == 1 && uri[seg + 1] == '.') ||
                            (n == 2 && uri[seg + 1] == '.' && uri[seg + 2] == '.'))
                                return false;
                        if (c != '/')
                                return true; /* the query and fragment are not the path */
                        seg = i;
                        continue;
                }
                if (c == '%') {
                        if (i + 2 >= len)
                                return false;
                        char h = uri[i + 1], l = uri[i + 2];
                        bool hh = (h >= '0' && h <= '9') || (h >= 'A' && h <= 'F');
                        bool ll = (l >= '0' && l <= '9') || (l >= 'A' && l <= 'F');
                        if (!hh || !ll)
                                return false;
                        int b = hex(h) * 16 + hex(l);
                        if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '-' || b == '.' ||
                            b == '_' || b == '~' || b == '/')
                                return false;
                        i += 2;
                }
        }
        return true;
}

static void check_resource(const struct glove_policy *policy, const char *upstream, const char *uri, size_t len,
                           bool args, struct glove_policy_verdict *v) {
        const struct glove_policy *res = policy ? policy->resources : NULL;
        size_t up_len = upstream ? strnlen(upstream, GLOVE_POLICY_NAME_MAX + 1) : 0;
        if (!res || up_len == 0 || up_len > GLOVE_POLICY_NAME_MAX || !glove_policy_resource_uri_valid(uri, len)) {
                verdict(v, false, "", "default deny");
                return;
        }
        if (!file_uri_canonical(uri, len)) {
                verdict(v, false, "", "non-canonical file URI");
                return;
        }
        const struct glove_policy_name_rule *r = resource_find(res->deny, res->n_deny, upstream, up_len, uri, len);
        if (r) {
                verdict(v, false, "deny resource ", r->qualified);
                return;
        }
        const struct glove_policy_name_rule *a = resource_find(res->allow, res->n_allow, upstream, up_len, uri, len);
        if (!a) {
                verdict(v, false, "", "default deny");
                return;
        }
        const struct glove_policy_tool *t = args ? resource_args(res, upstream, up_len) : NULL;
        if (t) {
                /* The value the rules look at: {"uri": URI, "path": the
                 * percent-decoded path of a local file: URI (absent for
                 * any other URI, so a /path rule fails closed)}. */
                char *path = glove_policy_file_uri_path(uri, len);
                json_t *value = json_pack("{s:s%}", "uri", uri, len);
                if (value && path)
                        json_object_set_new(value, "path", json_string(path));
                free(path);
                for (size_t i = 0; i < t->n_rules; i++) {
                        const json_t *at = NULL;
                        if (!value || glove_json_pointer_get(value, t->rules[i].pointer, &at) < 0)
                                at = NULL; /* fails closed */
                        if (!glove_policy_arg_rule_passes(&t->rules[i], at)) {
                                json_decref(value);
                                verdict(v, false, "resource ", t->rules[i].text);
                                return;
                        }
                }
                json_decref(value);
        }
        verdict(v, true, "allow resource ", a->qualified);
}

void glove_policy_check_resource(const struct glove_policy *policy, const char *upstream, const char *uri, size_t len,
                                 struct glove_policy_verdict *v) {
        check_resource(policy, upstream, uri, len, true, v);
}

bool glove_policy_resource_template_visible(const struct glove_policy *policy, const char *upstream, const char *uri_template,
                                            size_t len) {
        struct glove_policy_verdict v;
        check_resource(policy, upstream, uri_template, len, false, &v);
        return v.allowed;
}

bool glove_policy_allows_any(const struct glove_policy *policy, enum glove_policy_feature feature, const char *upstream) {
        const struct glove_policy *c = !policy                               ? NULL
                                       : feature == GLOVE_POLICY_FEATURE_PROMPTS ? policy->prompts
                                                                                 : policy->resources;
        if (!c || !upstream)
                return false;
        size_t up_len = strlen(upstream);
        for (size_t i = 0; i < c->n_allow; i++)
                if (c->allow[i].name_len == up_len && memcmp(c->allow[i].qualified, upstream, up_len) == 0)
                        return true;
        return false;
}

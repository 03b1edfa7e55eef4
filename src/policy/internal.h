/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by the files of the policy module (policy.c, name.c, pointer.c,
 * rule.c, file.c) and its unit tests. Not a public interface: callers use
 * include/glove/policy/policy.h. The limits below are documented in
 * docs/policy.md.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/base/path.h"
#include "glove/policy/policy.h"

#include <jansson.h>

/* Rules in one policy, counted over allow, deny and argument rules together
 * (command line and files merged). */
#define GLOVE_POLICY_RULES_MAX 1024
/* Argument rules for one qualified tool. */
#define GLOVE_POLICY_TOOL_RULES_MAX 32
/* Upstream NAME, bytes: [a-z0-9_-]{1,32}. */
#define GLOVE_POLICY_NAME_MAX 32
/* TOOL part of a qualified name, bytes. */
#define GLOVE_POLICY_TOOL_MAX 128
/* "NAME.TOOL", bytes, without the NUL. */
#define GLOVE_POLICY_QUALIFIED_MAX (GLOVE_POLICY_NAME_MAX + 1 + GLOVE_POLICY_TOOL_MAX)
/* JSON Pointer in a rule, bytes, without the NUL. */
#define GLOVE_POLICY_POINTER_MAX 256
/* A prefix, exact or one_of value, or a path_within root, bytes, without
 * the NUL. */
#define GLOVE_POLICY_VALUE_MAX (GLOVE_PATH_MAX - 1)
/* Values in one one_of rule. */
#define GLOVE_POLICY_ONE_OF_MAX 64
/* Largest "max" of a max_length rule, bytes. */
#define GLOVE_POLICY_LENGTH_LIMIT ((int64_t)1 << 30)
/* Supported policy file "version". */
#define GLOVE_POLICY_FILE_VERSION 1

enum glove_policy_kind {
        GLOVE_POLICY_KIND_PREFIX,
        GLOVE_POLICY_KIND_EXACT,
        GLOVE_POLICY_KIND_ONE_OF,
        GLOVE_POLICY_KIND_PATH_WITHIN,
        GLOVE_POLICY_KIND_MAX_LENGTH,
};

/* An allow or deny rule: "NAME.TOOL" or "NAME.*". */
struct glove_policy_name_rule {
        char *qualified; /* malloc'd "NAME.TOOL" */
        size_t name_len; /* bytes of NAME */
        bool wildcard;   /* TOOL is "*" */
};

/* One argument rule. Strings are malloc'd; value/values/max by kind. */
struct glove_policy_arg_rule {
        enum glove_policy_kind kind;
        char *pointer;       /* RFC 6901, starts with "/" */
        char *value;         /* prefix, exact: the value; path_within: the root */
        size_t value_len;    /* bytes of value */
        char **values;       /* one_of */
        size_t n_values;
        int64_t max;         /* max_length, bytes */
        char *text;          /* the rule as a verdict names it, < GLOVE_POLICY_RULE_MAX */
};

/* The argument rules of one qualified tool, in the order they were added. */
struct glove_policy_tool {
        char *qualified;
        size_t name_len;
        struct glove_policy_arg_rule *rules;
        size_t n_rules;
        size_t cap_rules;
};

/* The client features granted to one upstream (client.c). */
struct glove_policy_client {
        char name[GLOVE_POLICY_NAME_MAX + 1];
        unsigned features; /* enum glove_policy_client_feature */
};

struct glove_policy {
        struct glove_policy_name_rule *allow;
        size_t n_allow, cap_allow;
        struct glove_policy_name_rule *deny;
        size_t n_deny, cap_deny;
        struct glove_policy_tool *tools;
        size_t n_tools, cap_tools;
        size_t n_rules; /* n_allow + n_deny + every tool's n_rules */
        /* Owned, NULL until a rule of the kind is added (features.c): the
         * prompt rules, a policy of their own over "NAME.PROMPT" names; and
         * the resource rules, whose allow/deny entries are "NAME:PATTERN"
         * (wildcard: PATTERN ends with "*", a prefix) and whose argument
         * rules are keyed by the upstream NAME alone. Each holds at most
         * GLOVE_POLICY_RULES_MAX rules of its own. */
        struct glove_policy *prompts;
        struct glove_policy *resources;
        struct glove_policy_client clients[GLOVE_POLICY_CLIENTS_MAX]; /* client.c; not counted in n_rules */
        size_t n_clients;
        json_t *sandboxes; /* "upstreams" NAME -> decoded "sandbox" (upstreams.c); NULL: none */
};

/* ---- upstreams.c: the "upstreams" object, each upstream's "sandbox" ---- */

/* The bounds of one "sandbox" object are in glove/policy/policy.h. */

/*
 * Decodes one "sandbox" object at path (for messages): "ro", "rw" (absolute
 * paths, "policy.bad_grant"), "env" (variable names, "policy.bad_env_name"),
 * "egress" (HOST[:PORT] rules, checked for form by the run front end),
 * each a non-empty list without repeats ("policy.empty_list",
 * "policy.duplicate_rule", "policy.too_many_grants"), and "contained" (a
 * boolean, true unless given); unknown keys "policy.unknown_field";
 * "contained": false with "ro", "rw" or "egress" is
 * "policy.uncontained_grants". *out: a new object with all five members.
 */
int glove_policy_decode_sandbox(const json_t *sb, const char *path, json_t **out, struct glove_error *err);

/* ---- name.c ---- */

/*
 * Checks a qualified tool name "NAME.TOOL" (split at the first dot). NAME is
 * [a-z0-9_-]{1,32}; TOOL is 1..128 bytes of valid UTF-8 without control
 * characters (C0, DEL, C1); "*" as the whole TOOL is the wildcard (accepted
 * only when wildcard_ok) and "*" anywhere else in TOOL is refused, so that
 * "fs.read_*" is never mistaken for a pattern. On success stores NAME's length
 * and whether TOOL is the wildcard; on failure stores a static explanation in
 * *why and returns false.
 */
bool glove_policy_name_parse(const char *qualified, bool wildcard_ok, size_t *name_len, bool *wildcard,
                             const char **why);

/* True when tool (NUL-terminated) is a valid TOOL part (see above; "*" is
 * not a tool). */
bool glove_policy_tool_valid(const char *tool);

/* ---- pointer.c ---- */

/*
 * Checks the syntax of an RFC 6901 pointer held in a rule: starts with "/",
 * every "~" is followed by "0" or "1", at most GLOVE_POLICY_POINTER_MAX bytes,
 * valid UTF-8. Returns true when valid, else false with *why set.
 */
bool glove_policy_pointer_valid(const char *pointer, const char **why);

/* ---- rule.c ---- */

/* The kind's name in files and verdicts ("prefix", ...), and back. Returns
 * NULL / -1 for unknown input. */
const char *glove_policy_kind_name(enum glove_policy_kind kind);
int glove_policy_kind_from_name(const char *name);

/* Frees what rule owns (not rule itself). */
void glove_policy_arg_rule_clear(struct glove_policy_arg_rule *rule);

/* Renders rule->text from the other fields ("fs.read_file:/path path_within
 * /data"), cut with "..." to fit GLOVE_POLICY_RULE_MAX. Returns 0 or
 * -ENOMEM. */
int glove_policy_arg_rule_render(struct glove_policy_arg_rule *rule, const char *qualified);

/* True when the two rules say the same (kind, pointer and argument). */
bool glove_policy_arg_rule_equal(const struct glove_policy_arg_rule *a, const struct glove_policy_arg_rule *b);

/* True when value (the value at the rule's pointer, NULL when absent)
 * satisfies rule. Only strings without NUL can satisfy any rule. */
bool glove_policy_arg_rule_passes(const struct glove_policy_arg_rule *rule, const json_t *value);

/*
 * The path_within test on s[0..len): an absolute path with no ".."
 * component, of at most GLOVE_PATH_MAX - 1 bytes and without NUL, whose
 * lexical normal form (repeated slashes, "." components and a trailing slash
 * removed) is root or lies beneath it, by whole components. root must be
 * normalized and absolute.
 */
bool glove_policy_path_within(const char *s, size_t len, const char *root);

/* ---- policy.c ---- */

/*
 * Adds an allow (deny == false) or deny rule to policy; a rule already
 * present is not added twice. Errors: policy.bad_tool_name (-EINVAL),
 * policy.too_many_rules (-ENOSPC), policy.no_memory (-ENOMEM). what names the
 * input in messages (e.g. "$.allow[2]" or "--allow").
 */
int glove_policy_add_name_rule(struct glove_policy *policy, bool deny, const char *qualified, const char *what,
                               struct glove_error *err);

/* As glove_policy_add_name_rule, for a qualified text already checked by
 * the caller (name_len bytes of NAME; wildcard as it decided). */
int glove_policy_add_rule_parsed(struct glove_policy *policy, bool deny, const char *qualified, size_t name_len,
                                 bool wildcard, const char *what, struct glove_error *err);

/*
 * Appends *rule (its strings are taken over on success and on failure: the
 * rule is cleared either way) to the argument rules of qualified (a
 * validated non-wildcard name), rendering its text. Errors:
 * policy.too_many_rules (-ENOSPC), policy.no_memory (-ENOMEM).
 */
int glove_policy_add_arg_rule(struct glove_policy *policy, const char *qualified, size_t name_len,
                              struct glove_policy_arg_rule *rule, const char *what, struct glove_error *err);

/*
 * Moves every rule of from into policy, all or nothing: on error policy is
 * unchanged. from is left empty. Errors: policy.too_many_rules (-ENOSPC),
 * policy.no_memory (-ENOMEM).
 */
int glove_policy_merge(struct glove_policy *policy, struct glove_policy *from, struct glove_error *err);

/* ---- features.c ---- */

/* Longest resource URI (or pattern) a rule or a check handles, bytes. */
#define GLOVE_POLICY_URI_MAX 4096

/*
 * Checks a resource rule "NAME:PATTERN": NAME as for tools; PATTERN 1 to
 * GLOVE_POLICY_URI_MAX bytes of UTF-8 without control characters, with "*"
 * only as its last byte (a prefix pattern). Stores NAME's length and whether
 * it is a prefix pattern; else false with a static *why.
 */
bool glove_policy_resource_rule_parse(const char *spec, size_t *name_len, bool *prefix, const char **why);

/* The child policy *slot (policy->prompts or ->resources), created when
 * missing. Returns it or NULL (ENOMEM, err set). */
struct glove_policy *glove_policy_child(struct glove_policy **slot, struct glove_error *err);

/* ---- file.c, used by file_features.c ---- */

/* Decodes the optional array member key of obj (at JSON path parent) as
 * allow (deny false) or deny rules added with add. */
int glove_policy_file_names(struct glove_policy *p, const json_t *obj, const char *parent, const char *key, bool deny,
                            int (*add)(struct glove_policy *p, bool deny, const char *text, const char *what,
                                       struct glove_error *err),
                            struct glove_error *err);

/* Decodes the optional object member "arguments" of obj (at parent): keys
 * are qualified names (by_upstream false) or upstream names (true), values
 * arrays of argument rules. */
int glove_policy_file_arguments(struct glove_policy *p, const json_t *obj, const char *parent, bool by_upstream,
                                struct glove_error *err);

/* file_features.c: the optional "prompts" and "resources" members of the
 * document root. */
int glove_policy_file_features(struct glove_policy *p, const json_t *root, struct glove_error *err);
/* ---- client.c ---- */

/* Adds features to upstream name (validated here: [a-z0-9_-]{1,32}); what
 * names the input in messages. Errors: policy.bad_client_rule (-EINVAL),
 * policy.too_many_rules (-ENOSPC). */
int glove_policy_add_client(struct glove_policy *policy, const char *name, unsigned features, const char *what,
                            struct glove_error *err);

/* Adds from's client grants to policy; with check_only, only checks that
 * they fit (then a merge cannot fail). Errors: policy.too_many_rules. */
int glove_policy_merge_clients(struct glove_policy *policy, const struct glove_policy *from, bool check_only,
                               struct glove_error *err);

/* The client grants as {NAME: [FEATURE...]}, or NULL (ENOMEM). */
json_t *glove_policy_clients_json(const struct glove_policy *policy);

/* Refuses a client grant for an upstream not in names[0..n):
 * policy.unknown_upstream. */
int glove_policy_check_client_upstreams(const struct glove_policy *policy, const char *const *names, size_t n,
                                        struct glove_error *err);

/* ---- file_upstreams.c ---- */

/* Decodes the policy file's optional top-level "upstreams" object:
 * {"NAME": {"client": {...}, "sandbox": {...}}}; "client" is decoded by
 * glove_policy_decode_client, "sandbox" belongs to contained upstreams and
 * is refused by this build (policy.unknown_field). */
int glove_policy_decode_upstreams(struct glove_policy *policy, const json_t *root, struct glove_error *err);

/* Decodes one upstream's "client" object {"sampling": BOOL, "elicitation":
 * BOOL, "roots": BOOL, "logging": BOOL, "instructions": BOOL} at path (each
 * key optional; true grants, false does not). */
int glove_policy_decode_client(struct glove_policy *policy, const char *name, const json_t *obj, const char *path,
                               struct glove_error *err);

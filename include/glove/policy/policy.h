/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Tool and argument authorization for `glove run` (issue "glove run",
 * Policy; spec architecture.md, MCP request flow step 4). Default deny.
 *
 * Rules:
 *   allow NAME.TOOL      the tool may be listed and called; NAME.* allows
 *                        every tool of upstream NAME
 *   deny NAME.TOOL       never, whatever allows it (deny wins); NAME.* too
 *   argument rules       for one qualified tool: the value at a JSON Pointer
 *                        (RFC 6901) inside the call's "arguments" object must
 *                        satisfy the rule: prefix, exact, one_of,
 *                        path_within, max_length. Every argument rule of a
 *                        tool must pass.
 *
 * A policy is built from command-line rules and/or a policy file
 * (docs/policy.md), then frozen by use: checks never modify it.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "glove/base/error.h"

/* Longest rule name reported in a verdict, including the NUL. */
#define GLOVE_POLICY_RULE_MAX 512
/* Largest policy file, in bytes. */
#define GLOVE_POLICY_FILE_MAX (1024 * 1024)

/* Bounds of the policy file's "upstreams" and of one "sandbox" object
 * (docs/policy.md, Upstreams). */
#define GLOVE_POLICY_UPSTREAMS_MAX 32
#define GLOVE_POLICY_SANDBOX_GRANTS_MAX 128     /* "ro" and "rw", each */
#define GLOVE_POLICY_SANDBOX_ENV_MAX 64
#define GLOVE_POLICY_SANDBOX_ENV_NAME_MAX 128
#define GLOVE_POLICY_SANDBOX_EGRESS_MAX 256
#define GLOVE_POLICY_SANDBOX_RULE_MAX 512       /* one egress rule, bytes */

struct glove_policy;

/* A new empty policy (denies everything). Returns 0 or -ENOMEM. */
int glove_policy_new(struct glove_policy **out);
void glove_policy_free(struct glove_policy *policy);

/*
 * Adds an allow or deny rule for "NAME.TOOL" or "NAME.*" (NAME is
 * [a-z0-9_-]{1,32}; TOOL is any non-empty string of at most 128 bytes without
 * control characters). Errors: "policy.bad_tool_name" (-EINVAL).
 */
int glove_policy_allow(struct glove_policy *policy, const char *qualified, struct glove_error *err);
int glove_policy_deny(struct glove_policy *policy, const char *qualified, struct glove_error *err);

/*
 * Adds the command-line argument rule "NAME.TOOL:POINTER=PREFIX": the string
 * at POINTER (RFC 6901, starting with "/", no "=" in it) must start with
 * PREFIX. Errors: "policy.bad_arg_rule" (-EINVAL) naming what is malformed.
 */
int glove_policy_allow_arg(struct glove_policy *policy, const char *spec, struct glove_error *err);

/*
 * Merges the rules of a policy file (docs/policy.md), decoded strictly:
 * unknown fields, duplicate keys, wrong types and malformed rules are
 * rejected with a stable "policy.*" code and the JSON path of the offence.
 * At most GLOVE_POLICY_FILE_MAX bytes. On error nothing is merged.
 */
int glove_policy_load_file(struct glove_policy *policy, const char *path, struct glove_error *err);

/* As glove_policy_load_file, from memory (for tests and fuzzing). */
int glove_policy_load_json(struct glove_policy *policy, const void *data, size_t len, struct glove_error *err);

/*
 * True when tool[0..len) is a TOOL part that a rule could name: 1 to 128
 * bytes of valid UTF-8, no control character (C0 including NUL, DEL, C1), no
 * "*". The length is the caller's, so a counted string (a JSON string may
 * hold "\u0000") is judged whole: "bad\0hidden" is invalid, never "bad".
 * tool may be NULL when len is 0 (invalid). docs/policy.md, Command-line
 * rules.
 */
bool glove_policy_tool_name_valid(const char *tool, size_t len);

/* True when tools/list may show upstream's tool: allowed and not denied
 * (argument rules do not hide a tool). upstream and tool are NUL-terminated
 * and judged up to their NUL: a caller holding a counted name (a JSON
 * string) checks it with glove_policy_tool_name_valid first. */
bool glove_policy_tool_visible(const struct glove_policy *policy, const char *upstream, const char *tool);

struct glove_policy_verdict {
        bool allowed;
        const char *reason;                 /* NULL when allowed; else "policy_denied" or
                                             * "invalid_params" (static strings) */
        char rule[GLOVE_POLICY_RULE_MAX];   /* the rule that decided, e.g. "deny fs.write_file",
                                             * "default deny", "allow fs.*",
                                             * "fs.read_file:/path path_within /data" */
};

/*
 * Decides a tools/call of upstream's tool with the call's arguments (the
 * "arguments" member, NULL when absent; borrowed). Denied when no allow rule
 * matches, a deny rule matches, or an argument rule fails (a missing value or
 * a non-string where a string rule applies fails with reason
 * "policy_denied"; arguments that are present but not an object give
 * "invalid_params"). Never fails otherwise. upstream and tool are
 * NUL-terminated, as for glove_policy_tool_visible.
 */
void glove_policy_check_call(const struct glove_policy *policy, const char *upstream, const char *tool,
                             const json_t *arguments, struct glove_policy_verdict *verdict);

/* One rule of a policy as glove_policy_rule_at reports it. */
struct glove_policy_rule_ref {
        const char *kind;       /* "allow", "deny" or "arguments" (static) */
        const char *qualified;  /* "NAME.TOOL" or "NAME.*"; borrowed from the policy */
        size_t name_len;        /* bytes of NAME */
        bool wildcard;          /* TOOL is "*" (never for "arguments") */
};

/*
 * The i-th rule of policy, from 0: the allow rules, then the deny rules,
 * then one entry per tool that has argument rules (kind "arguments"), each
 * in the order added. Returns false (out untouched) past the last one.
 */
bool glove_policy_rule_at(const struct glove_policy *policy, size_t i, struct glove_policy_rule_ref *out);

/*
 * Refuses a policy with a rule naming an upstream that is not one of
 * names[0..n) (NUL-terminated upstream names): "policy.unknown_upstream"
 * (-EINVAL), naming the first such rule ("allow other.read") and the
 * upstreams there are. Such a rule could never apply: it is a typo or a
 * missing --upstream. Client feature grants (glove_policy_allow_client, a
 * file's "upstreams") are checked the same way ("client NAME: ...").
 */
int glove_policy_check_upstreams(const struct glove_policy *policy, const char *const *names, size_t n,
                                 struct glove_error *err);

/*
 * Server-to-client features and relays per upstream (docs/policy.md,
 * "Client features"; docs/mcp-mediation.md). Default deny: an upstream gets
 * none unless granted with glove_policy_allow_client or a policy file's
 * "upstreams": {"NAME": {"client": {...}}}.
 *   SAMPLING      its sampling/createMessage requests reach the agent
 *   ELICITATION   its elicitation/create requests reach the agent
 *   ROOTS         its roots/list requests reach the agent, and the agent's
 *                 notifications/roots/list_changed reach it
 *   LOGGING       logging/setLevel reaches it; its notifications/message
 *                 reach the agent
 *   INSTRUCTIONS  its initialize "instructions" are relayed to the agent
 */
enum glove_policy_client_feature {
        GLOVE_POLICY_CLIENT_SAMPLING = 1u << 0,
        GLOVE_POLICY_CLIENT_ELICITATION = 1u << 1,
        GLOVE_POLICY_CLIENT_ROOTS = 1u << 2,
        GLOVE_POLICY_CLIENT_LOGGING = 1u << 3,
        GLOVE_POLICY_CLIENT_INSTRUCTIONS = 1u << 4,
};
/* Upstreams with client features in one policy. */
#define GLOVE_POLICY_CLIENTS_MAX 32

/* The feature's word ("sampling", ...) and back (0 for an unknown word). */
const char *glove_policy_client_feature_name(unsigned feature);
unsigned glove_policy_client_feature_from_name(const char *name, size_t len);

/*
 * Grants upstream NAME the features of "NAME:FEATURE[,FEATURE...]" (FEATURE
 * one of sampling, elicitation, roots, logging, instructions; NAME is
 * [a-z0-9_-]{1,32}); grants add up. Errors: "policy.bad_client_rule"
 * (-EINVAL) naming what is malformed, "policy.too_many_rules" (-ENOSPC: more
 * than GLOVE_POLICY_CLIENTS_MAX upstreams).
 */
int glove_policy_allow_client(struct glove_policy *policy, const char *spec, struct glove_error *err);

/* The features (a mask of enum glove_policy_client_feature) granted to
 * upstream (NUL-terminated); 0 when none. */
unsigned glove_policy_client_features(const struct glove_policy *policy, const char *upstream);

/*
 * The "sandbox" of upstream name from the policy file's "upstreams"
 * (docs/policy.md, Upstreams), checked for form: an object with "ro", "rw"
 * (absolute paths), "env" (variable names), "egress" (HOST[:PORT] rules,
 * unparsed) arrays and "contained" (boolean), every member present. NULL
 * when the file gives none for name. Borrowed from policy.
 */
const json_t *glove_policy_upstream_sandbox(const struct glove_policy *policy, const char *name);

/* As glove_policy_check_upstreams, for the "upstreams" entries of the
 * policy file: one naming no upstream is "policy.unknown_upstream". */
int glove_policy_check_sandbox_upstreams(const struct glove_policy *policy, const char *const *names, size_t n,
                                         struct glove_error *err);

/*
 * The policy as data, for the launch record (docs/mcp-mediation.md):
 * {"allow":[NAME.TOOL...], "deny":[...], "arguments":{NAME.TOOL:[rule text...]}}
 * plus, when any upstream has client features, "client":{NAME:[FEATURE...]},
 * in the order the rules were added (rule texts as verdicts name them). A
 * new reference, or NULL on ENOMEM.
 */
json_t *glove_policy_to_json(const struct glove_policy *policy);

/*
 * Prompts and resources (docs/policy.md, "Prompts and resources"). Default
 * deny, deny wins, as for tools; each kind keeps its own rules (at most
 * 1024 each) apart from the tool rules, so "--allow ev.*" allows no prompt.
 *
 * Prompts are named NAME.PROMPT exactly as tools are NAME.TOOL (same
 * syntax, same wildcard NAME.*, same argument rules, whose pointers look
 * into the prompts/get "arguments" object: "/city"). Errors as for
 * glove_policy_allow / glove_policy_allow_arg.
 */
int glove_policy_allow_prompt(struct glove_policy *policy, const char *qualified, struct glove_error *err);
int glove_policy_deny_prompt(struct glove_policy *policy, const char *qualified, struct glove_error *err);
int glove_policy_allow_prompt_arg(struct glove_policy *policy, const char *spec, struct glove_error *err);

/* As glove_policy_tool_visible, for upstream's prompt. */
bool glove_policy_prompt_visible(const struct glove_policy *policy, const char *upstream, const char *prompt);

/* As glove_policy_check_call, for a prompts/get (arguments: its
 * "arguments" member, NULL when absent). */
void glove_policy_check_prompt(const struct glove_policy *policy, const char *upstream, const char *prompt,
                               const json_t *arguments, struct glove_policy_verdict *verdict);

/*
 * Resource rules "NAME:PATTERN" name the upstream's own URIs (never the
 * glove:// form the agent sees): PATTERN is a literal URI, or a prefix when
 * it ends with "*" (the only place "*" may be; "NAME:*" is every URI of
 * NAME). 1 to 4096 bytes of UTF-8 without control characters. Errors:
 * "policy.bad_resource_rule" (-EINVAL), "policy.too_many_rules",
 * "policy.no_memory".
 */
int glove_policy_allow_resource(struct glove_policy *policy, const char *spec, struct glove_error *err);
int glove_policy_deny_resource(struct glove_policy *policy, const char *spec, struct glove_error *err);

/* True when uri[0..len) is a URI a resource rule could match: 1 to 4096
 * bytes of UTF-8 without control characters (C0 including NUL, DEL, C1). */
bool glove_policy_resource_uri_valid(const char *uri, size_t len);

/*
 * Decides a resources/read (or subscribe, or a listed resource) of
 * upstream's uri[0..len) (the upstream's own URI): denied when the URI is
 * not valid (above), a deny rule matches, no allow rule matches, or an
 * argument rule of the upstream's resources fails. Argument rules look at
 * {"uri": URI, "path": P}, where P is the percent-decoded path of a local
 * file: URI (file:///P or file://localhost/P; absent for any other URI or
 * one that decodes to a NUL, so a rule on /path then fails). Rules read
 * "allow resource NAME:PATTERN", "deny resource NAME:PATTERN",
 * "resource NAME:/path path_within /data", "default deny".
 */
void glove_policy_check_resource(const struct glove_policy *policy, const char *upstream, const char *uri, size_t len,
                                 struct glove_policy_verdict *verdict);

/* True when a resource template of upstream may be listed and completed:
 * its uriTemplate text, taken as a URI, is allowed by the allow and deny
 * patterns (argument rules apply to the URIs read, not to templates). */
bool glove_policy_resource_template_visible(const struct glove_policy *policy, const char *upstream,
                                            const char *uri_template, size_t len);

/* The percent-decoded path of a local file: URI uri[0..len), a new string
 * (free it), or NULL (not such a URI, malformed escape, a NUL, ENOMEM). */
char *glove_policy_file_uri_path(const char *uri, size_t len);

enum glove_policy_feature {
        GLOVE_POLICY_FEATURE_PROMPTS,
        GLOVE_POLICY_FEATURE_RESOURCES,
};

/* True when some allow rule of the kind names upstream (NUL-terminated):
 * whether announcing the feature for it could ever serve the agent. */
bool glove_policy_allows_any(const struct glove_policy *policy, enum glove_policy_feature feature, const char *upstream);

/*
 * RFC 6901 JSON Pointer: the value at pointer inside root (borrowed), or
 * NULL when absent. "" is root itself. Errors: -EINVAL for a malformed pointer
 * (not starting with "/", or a "~" not followed by 0 or 1).
 */
int glove_json_pointer_get(const json_t *root, const char *pointer, const json_t **out);

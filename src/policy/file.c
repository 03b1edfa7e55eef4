/* SPDX-License-Identifier: Apache-2.0 */
/* The policy file (docs/policy.md), decoded strictly with the base JSON
 * helpers. Every rejection carries a stable "policy.*" code and the JSON path
 * of the offence. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "internal.h"

/* ---- error translation: json.* from the base helpers -> policy.* ---- */

static const struct {
        const char *json;
        const char *policy;
} code_map[] = {
        {"json.too_large", "policy.too_large"},
        {"json.invalid_utf8", "policy.invalid_utf8"},
        {"json.embedded_nul", "policy.embedded_nul"},
        {"json.too_deep", "policy.too_deep"},
        {"json.duplicate_key", "policy.duplicate_key"},
        {"json.number_out_of_range", "policy.out_of_range"},
        {"json.trailing_data", "policy.syntax"},
        {"json.syntax", "policy.syntax"},
        {"json.not_object", "policy.not_object"},
        {"json.missing_field", "policy.missing_field"},
        {"json.wrong_type", "policy.wrong_type"},
        {"json.not_integer", "policy.wrong_type"},
        {"json.out_of_range", "policy.out_of_range"},
        {"json.too_long", "policy.too_long"},
        {"json.unknown_field", "policy.unknown_field"},
        {"json.no_memory", "policy.no_memory"},
};

/*
 * Copies the error in j (from a base helper) into err under its policy.*
 * code; json.too_many_items becomes too_many (the caller knows what the
 * array holds). Returns the negative errno.
 */
static int translate(struct glove_error *err, const struct glove_error *j, const char *too_many) {
        const char *code = "policy.invalid";
        if (j->code && strcmp(j->code, "json.too_many_items") == 0)
                code = too_many ? too_many : "policy.too_many_rules";
        for (size_t i = 0; j->code && i < GLOVE_ELEMENTSOF(code_map); i++)
                if (strcmp(j->code, code_map[i].json) == 0)
                        code = code_map[i].policy;
        int errnum = j->errnum ? j->errnum : EINVAL;
        if (strcmp(code, "policy.too_many_rules") == 0)
                errnum = ENOSPC; /* the policy's capacity, as when rules are added */
        return glove_error_set(err, errnum, code, "%s", j->message);
}

/* Runs a base helper call expr with a scratch error, translating failures. */
#define TRY_JSON(expr, too_many)                                 \
        do {                                                     \
                struct glove_error j_ = {0};                     \
                struct glove_error *jerr = &j_;                  \
                if ((expr) < 0)                                  \
                        return translate(err, &j_, (too_many));  \
                (void)jerr;                                      \
        } while (0)

static int fail(struct glove_error *err, const char *code, const char *path, const char *why) {
        return glove_error_set(err, EINVAL, code, "%s: %s", path, why);
}

/* Builds "<parent>.<key>" or "<parent>[<index>]". Paths are for messages
 * only: one too long for the buffer (a long key with escaped bytes) keeps its
 * start and is marked "..." instead. */
static void path_member(char buf[GLOVE_JSON_PATH_MAX], const char *parent, const char *key) {
        if (glove_json_path_member(buf, GLOVE_JSON_PATH_MAX, parent, key) < 0)
                snprintf(buf, GLOVE_JSON_PATH_MAX, "%.200s...", parent);
}

static void path_index(char buf[GLOVE_JSON_PATH_MAX], const char *parent, size_t index) {
        if (glove_json_path_index(buf, GLOVE_JSON_PATH_MAX, parent, index) < 0)
                snprintf(buf, GLOVE_JSON_PATH_MAX, "%.200s...[%zu]", parent, index);
}

/* ---- "allow" and "deny" ---- */

static int decode_names(struct glove_policy *p, const json_t *root, const char *key, struct glove_error *err) {
        if (!json_object_get(root, key))
                return 0;
        json_t *arr;
        char path[GLOVE_JSON_PATH_MAX];
        path_member(path, "$", key);
        TRY_JSON(glove_json_get_array(root, key, NULL, GLOVE_POLICY_RULES_MAX, &arr, jerr), "policy.too_many_rules");
        if (json_array_size(arr) == 0)
                return fail(err, "policy.empty_list", path, "an empty list means nothing; leave the field out");
        for (size_t i = 0; i < json_array_size(arr); i++) {
                char epath[GLOVE_JSON_PATH_MAX];
                const char *name;
                path_index(epath, path, i);
                TRY_JSON(glove_json_as_string(json_array_get(arr, i), epath, GLOVE_POLICY_VALUE_MAX, &name, jerr),
                         NULL);
                for (size_t k = 0; k < i; k++)
                        if (json_equal(json_array_get(arr, k), json_array_get(arr, i)))
                                return fail(err, "policy.duplicate_rule", epath, "the same rule is listed twice");
                int r = glove_policy_add_name_rule(p, strcmp(key, "deny") == 0, name, epath, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- "arguments" ---- */

static const char *const keys_value[] = {"kind", "pointer", "value", NULL};
static const char *const keys_values[] = {"kind", "pointer", "values", NULL};
static const char *const keys_root[] = {"kind", "pointer", "root", NULL};
static const char *const keys_max[] = {"kind", "pointer", "max", NULL};

static const char *const *kind_keys(enum glove_policy_kind kind) {
        switch (kind) {
        case GLOVE_POLICY_KIND_PREFIX:
        case GLOVE_POLICY_KIND_EXACT: return keys_value;
        case GLOVE_POLICY_KIND_ONE_OF: return keys_values;
        case GLOVE_POLICY_KIND_PATH_WITHIN: return keys_root;
        case GLOVE_POLICY_KIND_MAX_LENGTH: return keys_max;
        }
        return keys_value;
}

static int dup_string(char **out, const char *s, struct glove_error *err) {
        *out = strdup(s);
        return *out ? 0 : glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
}

static int decode_one_of(struct glove_policy_arg_rule *rule, const json_t *obj, const char *path,
                         struct glove_error *err) {
        json_t *arr;
        char vpath[GLOVE_JSON_PATH_MAX];
        path_member(vpath, path, "values");
        TRY_JSON(glove_json_get_array(obj, "values", path, GLOVE_POLICY_ONE_OF_MAX, &arr, jerr),
                 "policy.too_many_values");
        size_t n = json_array_size(arr);
        if (n == 0)
                return fail(err, "policy.empty_list", vpath, "one_of needs at least one value");
        rule->values = calloc(n, sizeof(*rule->values));
        if (!rule->values)
                return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        for (size_t i = 0; i < n; i++) {
                char epath[GLOVE_JSON_PATH_MAX];
                const char *s;
                path_index(epath, vpath, i);
                TRY_JSON(glove_json_as_string(json_array_get(arr, i), epath, GLOVE_POLICY_VALUE_MAX, &s, jerr), NULL);
                for (size_t k = 0; k < i; k++)
                        if (strcmp(rule->values[k], s) == 0)
                                return fail(err, "policy.duplicate_value", epath, "the same value is listed twice");
                if (dup_string(&rule->values[i], s, err) < 0)
                        return -ENOMEM;
                rule->n_values = i + 1;
        }
        return 0;
}

static int decode_root(struct glove_policy_arg_rule *rule, const json_t *obj, const char *path,
                       struct glove_error *err) {
        const char *root;
        char rpath[GLOVE_JSON_PATH_MAX];
        path_member(rpath, path, "root");
        TRY_JSON(glove_json_get_string(obj, "root", path, GLOVE_POLICY_VALUE_MAX, &root, jerr), NULL);
        if (root[0] != '/')
                return fail(err, "policy.bad_root", rpath, "the root must be an absolute path");
        _cleanup_free_ char *norm = NULL;
        struct glove_error perr = {0};
        if (glove_path_normalize(root, NULL, &norm, &perr) < 0) {
                if (perr.errnum == ENOMEM)
                        return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
                return fail(err, "policy.bad_root", rpath, perr.message);
        }
        size_t root_len = strlen(root);
        if (strstr(root, "/../") || (root_len >= 3 && strcmp(root + root_len - 3, "/..") == 0))
                return fail(err, "policy.bad_root", rpath, "the root must not contain a \"..\" component");
        if (strcmp(norm, root) != 0)
                return glove_error_set(err, EINVAL, "policy.bad_root",
                                       "%s: the root must be in normal form (no \"//\", \".\" or trailing \"/\"), "
                                       "write it as %s",
                                       rpath, norm);
        rule->value_len = root_len;
        return dup_string(&rule->value, root, err);
}

/* Decodes the rule object obj at path into *rule (cleared by the caller). */
static int decode_rule(struct glove_policy_arg_rule *rule, const json_t *obj, const char *path,
                       struct glove_error *err) {
        const char *kind_name, *pointer, *why;
        char kpath[GLOVE_JSON_PATH_MAX], ppath[GLOVE_JSON_PATH_MAX];
        path_member(kpath, path, "kind");
        path_member(ppath, path, "pointer");
        if (!json_is_object(obj))
                return fail(err, "policy.wrong_type", path, "an argument rule must be an object");
        TRY_JSON(glove_json_get_string(obj, "kind", path, GLOVE_POLICY_VALUE_MAX, &kind_name, jerr), NULL);
        int kind = glove_policy_kind_from_name(kind_name);
        if (kind < 0)
                return fail(err, "policy.unknown_kind", kpath,
                            "kind must be prefix, exact, one_of, path_within or max_length");
        rule->kind = (enum glove_policy_kind)kind;
        TRY_JSON(glove_json_check_keys(obj, kind_keys(rule->kind), path, jerr), NULL);
        TRY_JSON(glove_json_get_string(obj, "pointer", path, GLOVE_POLICY_POINTER_MAX, &pointer, jerr), NULL);
        if (!glove_policy_pointer_valid(pointer, &why))
                return fail(err, "policy.bad_pointer", ppath, why);
        if (dup_string(&rule->pointer, pointer, err) < 0)
                return -ENOMEM;

        switch (rule->kind) {
        case GLOVE_POLICY_KIND_PREFIX:
        case GLOVE_POLICY_KIND_EXACT: {
                const char *value;
                char vpath[GLOVE_JSON_PATH_MAX];
                path_member(vpath, path, "value");
                TRY_JSON(glove_json_get_string(obj, "value", path, GLOVE_POLICY_VALUE_MAX, &value, jerr), NULL);
                if (rule->kind == GLOVE_POLICY_KIND_PREFIX && value[0] == '\0')
                        return fail(err, "policy.empty_value", vpath,
                                    "an empty prefix would match every string");
                rule->value_len = strlen(value);
                return dup_string(&rule->value, value, err);
        }
        case GLOVE_POLICY_KIND_ONE_OF:
                return decode_one_of(rule, obj, path, err);
        case GLOVE_POLICY_KIND_PATH_WITHIN:
                return decode_root(rule, obj, path, err);
        case GLOVE_POLICY_KIND_MAX_LENGTH:
                TRY_JSON(glove_json_get_int(obj, "max", path, 0, GLOVE_POLICY_LENGTH_LIMIT, &rule->max, jerr), NULL);
                return 0;
        }
        return 0;
}

static int decode_tool_rules(struct glove_policy *p, const char *qualified, const json_t *arr, const char *path,
                             struct glove_error *err) {
        size_t name_len;
        bool wildcard;
        const char *why;
        if (!glove_policy_name_parse(qualified, false, &name_len, &wildcard, &why))
                return fail(err, "policy.bad_tool_name", path, why);
        if (!json_is_array(arr))
                return fail(err, "policy.wrong_type", path, "expected an array of argument rules");
        if (json_array_size(arr) == 0)
                return fail(err, "policy.empty_list", path, "an empty list means nothing; leave the tool out");
        if (json_array_size(arr) > GLOVE_POLICY_TOOL_RULES_MAX)
                return glove_error_set(err, ENOSPC, "policy.too_many_rules",
                                       "%s: a tool has at most %d argument rules", path,
                                       GLOVE_POLICY_TOOL_RULES_MAX);
        for (size_t i = 0; i < json_array_size(arr); i++) {
                char rpath[GLOVE_JSON_PATH_MAX];
                struct glove_policy_arg_rule rule = {0};
                path_index(rpath, path, i);
                int r = decode_rule(&rule, json_array_get(arr, i), rpath, err);
                if (r < 0) {
                        glove_policy_arg_rule_clear(&rule);
                        return r;
                }
                /* The tool's rules so far all came from this file. */
                for (size_t t = 0; t < p->n_tools; t++) {
                        if (strcmp(p->tools[t].qualified, qualified) != 0)
                                continue;
                        for (size_t k = 0; k < p->tools[t].n_rules; k++) {
                                if (glove_policy_arg_rule_equal(&p->tools[t].rules[k], &rule)) {
                                        glove_policy_arg_rule_clear(&rule);
                                        return fail(err, "policy.duplicate_rule", rpath,
                                                    "the same argument rule is listed twice");
                                }
                        }
                }
                r = glove_policy_add_arg_rule(p, qualified, name_len, &rule, rpath, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int decode_arguments(struct glove_policy *p, const json_t *root, struct glove_error *err) {
        json_t *obj;
        if (!json_object_get(root, "arguments"))
                return 0;
        TRY_JSON(glove_json_get_object(root, "arguments", NULL, &obj, jerr), NULL);
        if (json_object_size(obj) == 0)
                return fail(err, "policy.empty_list", "$.arguments", "no tools; leave the field out");
        if (json_object_size(obj) > GLOVE_POLICY_RULES_MAX)
                return glove_error_set(err, ENOSPC, "policy.too_many_rules",
                                       "$.arguments: a policy holds at most %d rules", GLOVE_POLICY_RULES_MAX);
        const char *key;
        json_t *value;
        json_object_foreach(obj, key, value) {
                char path[GLOVE_JSON_PATH_MAX];
                path_member(path, "$.arguments", key);
                int r = decode_tool_rules(p, key, value, path, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the document ---- */

static const char *const top_keys[] = {"version", "allow", "deny", "arguments", "upstreams", NULL};

static int decode_document(struct glove_policy *p, const json_t *root, struct glove_error *err) {
        int64_t version;
        TRY_JSON(glove_json_check_keys(root, top_keys, NULL, jerr), NULL);
        TRY_JSON(glove_json_get_int(root, "version", NULL, INT64_MIN, INT64_MAX, &version, jerr), NULL);
        if (version != GLOVE_POLICY_FILE_VERSION)
                return glove_error_set(err, EINVAL, "policy.unsupported_version",
                                       "$.version: %lld is not supported; this Glove reads version %d",
                                       (long long)version, GLOVE_POLICY_FILE_VERSION);
        int r = decode_names(p, root, "allow", err);
        if (r >= 0)
                r = decode_names(p, root, "deny", err);
        if (r >= 0)
                r = decode_arguments(p, root, err);
        if (r >= 0)
                r = glove_policy_decode_upstreams(p, root, err);
        return r;
}

int glove_policy_load_json(struct glove_policy *policy, const void *data, size_t len, struct glove_error *err) {
        if (!policy || (!data && len > 0))
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy or no data");
        _cleanup_json_ json_t *root = NULL;
        TRY_JSON(glove_json_decode_strict(data, len, GLOVE_POLICY_FILE_MAX, GLOVE_JSON_OBJECT_ONLY, &root, jerr),
                 NULL);
        struct glove_policy *tmp;
        if (glove_policy_new(&tmp) < 0)
                return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        int r = decode_document(tmp, root, err);
        if (r >= 0)
                r = glove_policy_merge(policy, tmp, err);
        glove_policy_free(tmp);
        return r;
}

/* Whether st may be trusted as part of a policy file's path: owned by the
 * invoker or root and writable by neither group nor others; a root-owned
 * sticky directory (/tmp) passes as a directory, since others can then
 * neither rename nor remove what they do not own in it. */
static bool trusted(const struct stat *st, bool is_file) {
        if (st->st_uid != geteuid() && st->st_uid != 0)
                return false;
        if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
                return true;
        return !is_file && st->st_uid == 0 && (st->st_mode & S_ISVTX);
}

/* what: "the file" or "the directory /x". */
static int untrusted(struct glove_error *err, const char *path, const char *what, const struct stat *st) {
        const char *who = st->st_uid != geteuid() && st->st_uid != 0 ? "owned by another user"
                          : (st->st_mode & S_IWOTH)                 ? "writable by others"
                                                                    : "writable by its group";
        return glove_error_set(err, EPERM, "policy.file_unsafe",
                               "%s: %s is %s (uid %u, mode %04o); a policy file and every directory above it must be "
                               "owned by you or root and writable by nobody else",
                               path, what, who, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
}

/*
 * Refuses a policy file that anyone but the invoker (or root) could change
 * or replace: the file itself, and every directory on its canonical path
 * from "/" (a writable directory lets another user swap the file). The
 * canonical path is the kernel's name for the opened descriptor; the walk
 * opens each component beneath the previous one without following links
 * and must arrive at the same file, so nothing can be swapped between the
 * check and the read.
 */
static int check_trusted(int fd, const char *path, const struct stat *st, struct glove_error *err) {
        if (!trusted(st, true))
                return untrusted(err, path, "the file", st);
        char proc[64], canon[GLOVE_PATH_MAX];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, canon, sizeof(canon) - 1);
        if (n <= 0 || canon[0] != '/')
                return glove_error_set(err, n < 0 ? errno : EINVAL, "policy.io", "%s: cannot resolve its path", path);
        canon[n] = '\0';
        _cleanup_close_ int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return glove_error_set(err, errno, "policy.io", "/: %s", strerror(errno));
        char *p = canon + 1;
        for (;;) {
                struct stat dst;
                if (fstat(dir, &dst) < 0)
                        return glove_error_set(err, errno, "policy.io", "%s: %s", path, strerror(errno));
                char *slash = strchr(p, '/');
                if (slash)
                        *slash = '\0';
                if (!trusted(&dst, false)) {
                        char shown[GLOVE_PATH_MAX + 16];
                        snprintf(shown, sizeof(shown), "the directory %.*s", (int)(p - canon > 1 ? p - canon - 1 : 1), canon);
                        return untrusted(err, path, shown, &dst);
                }
                int next = openat(dir, p, O_PATH | O_NOFOLLOW | O_CLOEXEC | (slash ? O_DIRECTORY : 0));
                if (next < 0)
                        return glove_error_set(err, errno, "policy.io", "%s: its path changed while it was checked: %s", path,
                                               strerror(errno));
                glove_closep(&dir);
                dir = next;
                if (!slash)
                        break;
                *slash = '/';
                p = slash + 1;
        }
        struct stat last;
        if (fstat(dir, &last) < 0 || last.st_dev != st->st_dev || last.st_ino != st->st_ino)
                return glove_error_set(err, ESTALE, "policy.io", "%s: its path changed while it was checked", path);
        return 0;
}

int glove_policy_load_file(struct glove_policy *policy, const char *path, struct glove_error *err) {
        if (!policy || !path)
                return glove_error_set(err, EINVAL, "policy.invalid_argument", "no policy or no path");
        /* O_NONBLOCK: opening a FIFO must not hang; it is refused below. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return glove_error_set(err, errno, "policy.io", "%s: cannot open: %s", path, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "policy.io", "%s: cannot stat: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return glove_error_set(err, EINVAL, "policy.not_regular_file", "%s: not a regular file", path);
        int tr = check_trusted(fd, path, &st, err);
        if (tr < 0)
                return tr;
        if (st.st_size > GLOVE_POLICY_FILE_MAX)
                return glove_error_set(err, EMSGSIZE, "policy.too_large", "%s: %lld bytes, the limit is %d", path,
                                       (long long)st.st_size, GLOVE_POLICY_FILE_MAX);
        /* The bound also catches growth after fstat. */
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int rr = glove_fd_read_bounded(fd, GLOVE_POLICY_FILE_MAX, &buf, &len, NULL);
        if (rr == -EFBIG)
                return glove_error_set(err, EMSGSIZE, "policy.too_large", "%s: larger than %d bytes", path,
                                       GLOVE_POLICY_FILE_MAX);
        if (rr == -ENOMEM)
                return glove_error_set(err, ENOMEM, "policy.no_memory", "out of memory");
        if (rr < 0)
                return glove_error_set(err, -rr, "policy.io", "%s: cannot read: %s", path, strerror(-rr));
        int r = glove_policy_load_json(policy, buf, len, err);
        if (r < 0)
                glove_error_prefix(err, "%s", path);
        return r;
}

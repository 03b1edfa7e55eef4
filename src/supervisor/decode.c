/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding toolkit shared by the policy decoder and the plan validator. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "internal.h"

/* A code for the context's mode: SV_CODE(c, "unknown_field"). */
#define SV_CODE(c, x) ((c)->plan ? "plan." x : "policy." x)

/* ---- closed value sets ---- */

static const char *const access_names[] = { "direct_write", "ephemeral_write", "read", "retained_write" };
static const char *const materialization_names[] = { "bind", "copy", "git_worktree", "snapshot" };
static const char *const create_names[] = { "empty_directory", "git_worktree", "never" };
static const char *const cleanup_names[] = { "remove", "retain" };
static const char *const backend_names[] = { "apple_container", "linux_production", "macos_experimental",
                                             "remote_linux_container" };
static const char *const discovery_names[] = { "claude-code", "codex", "copilot", "opencode", "pi" };

#define SV_ENUM(arr, w) { .names = (arr), .n = GLOVE_ELEMENTSOF(arr), .what = (w) }
const struct sv_enum sv_access_names = SV_ENUM(access_names, "access");
const struct sv_enum sv_materialization_names = SV_ENUM(materialization_names, "materialization");
const struct sv_enum sv_create_names = SV_ENUM(create_names, "create_policy");
const struct sv_enum sv_cleanup_names = SV_ENUM(cleanup_names, "cleanup_policy");
const struct sv_enum sv_backend_names = SV_ENUM(backend_names, "sandbox_backend");
const struct sv_enum sv_discovery_names = SV_ENUM(discovery_names, "runtime_discovery");

const char *const sv_limit_names[SV_LIMIT_COUNT] = {
        "cpu_time_ms", "memory_bytes", "pids", "wall_time_ms", "disk_bytes", "terminal_output_bytes",
};

int sv_enum_find(const struct sv_enum *e, const char *s) {
        for (size_t i = 0; i < e->n; i++)
                if (strcmp(e->names[i], s) == 0)
                        return (int)i;
        return -1;
}

bool sv_strings_contain(const struct sv_strings *s, const char *v) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i], v) == 0)
                        return true;
        return false;
}

/* ---- paths for messages and reasons ---- */

struct pbuf {
        char *buf;
        size_t cap, len;
        bool cut;
};

/* Appends ch while room for a final "..." and NUL remains; otherwise ends
 * the text with "..." (within cap) and ignores further characters. */
static void pbuf_putc(struct pbuf *b, char ch) {
        if (b->cut)
                return;
        if (b->len + 1 + 4 > b->cap) {
                size_t at = b->len < b->cap - 4 ? b->len : b->cap - 4;
                memcpy(b->buf + at, "...", 4);
                b->len = at + 3;
                b->cut = true;
                return;
        }
        b->buf[b->len++] = ch;
        b->buf[b->len] = '\0';
}

static void pbuf_puts_escaped(struct pbuf *b, const char *s) {
        static const char hex[] = "0123456789abcdef";
        for (; *s && !b->cut; s++) {
                unsigned char ch = (unsigned char)*s;
                if (ch >= 0x20 && ch < 0x7f) {
                        pbuf_putc(b, (char)ch);
                } else {
                        pbuf_putc(b, '\\');
                        pbuf_putc(b, 'x');
                        pbuf_putc(b, hex[ch >> 4]);
                        pbuf_putc(b, hex[ch & 0xf]);
                }
        }
}

/* Copies src into dst (capacity cap >= 4), cutting with "..." if needed. */
static void copy_cut(char *dst, size_t cap, const char *src) {
        size_t n = strlen(src);
        if (n < cap) {
                memcpy(dst, src, n + 1);
                return;
        }
        memcpy(dst, src, cap - 4);
        memcpy(dst + cap - 4, "...", 4);
}

void sv_path_member(char out[GLOVE_JSON_PATH_MAX], const char *parent, const char *key) {
        struct pbuf b = { .buf = out, .cap = GLOVE_JSON_PATH_MAX };
        copy_cut(out, GLOVE_JSON_PATH_MAX, parent ? parent : "$");
        b.len = strlen(out);
        pbuf_putc(&b, '.');
        pbuf_puts_escaped(&b, key);
}

void sv_path_index(char out[GLOVE_JSON_PATH_MAX], const char *parent, size_t index) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "[%zu]", index);
        struct pbuf b = { .buf = out, .cap = GLOVE_JSON_PATH_MAX };
        copy_cut(out, GLOVE_JSON_PATH_MAX, parent ? parent : "$");
        b.len = strlen(out);
        pbuf_puts_escaped(&b, tmp);
}

/* ---- recording offences ---- */

int sv_fail(struct sv_ctx *c, const char *code, const char *path, const char *fmt, ...) {
        if (c->plan) {
                struct glove_plan_verdict *v = c->verdict;
                if (v->n_reasons < GLOVE_PLAN_REASONS_MAX) {
                        struct glove_plan_reason *r = &v->reasons[v->n_reasons++];
                        r->code = code;
                        copy_cut(r->path, sizeof(r->path), path);
                }
                v->n_reasons_total++;
                return -EINVAL;
        }
        if (c->failed)
                return -EINVAL;
        c->failed = true;
        char text[GLOVE_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (c->path_out && c->path_cap >= 4)
                copy_cut(c->path_out, c->path_cap, path);
        return glove_error_set(c->err, EINVAL, code, "%s: %s", path, text);
}

/* json.* code -> { policy code, plan code } */
static const struct {
        const char *json, *policy, *plan;
} json_codes[] = {
        { "json.missing_field", "policy.missing_field", "plan.missing_field" },
        { "json.wrong_type", "policy.wrong_type", "plan.wrong_type" },
        { "json.not_object", "policy.wrong_type", "plan.wrong_type" },
        { "json.not_integer", "policy.not_integer", "plan.not_integer" },
        { "json.out_of_range", "policy.out_of_range", "plan.out_of_range" },
        { "json.number_out_of_range", "policy.out_of_range", "plan.out_of_range" },
        { "json.too_long", "policy.too_long", "plan.too_long" },
        { "json.too_many_items", "policy.too_many_items", "plan.too_many_items" },
        { "json.unknown_field", "policy.unknown_field", "plan.unknown_field" },
        { "json.embedded_nul", "policy.embedded_nul", "plan.embedded_nul" },
        { "json.too_large", "policy.too_large", "plan.too_large" },
        { "json.invalid_utf8", "policy.invalid_utf8", "plan.invalid_utf8" },
        { "json.duplicate_key", "policy.duplicate_key", "plan.duplicate_key" },
        { "json.too_deep", "policy.too_deep", "plan.too_deep" },
        { "json.not_canonical", "policy.invalid_json", "plan.not_canonical" },
        { "json.real_not_allowed", "policy.not_integer", "plan.not_canonical" },
        { "json.no_memory", "policy.no_memory", "plan.no_memory" },
};

int sv_fail_json(struct sv_ctx *c, const struct glove_error *jerr, const char *path) {
        const char *code = c->plan ? "plan.invalid_json" : "policy.invalid_json";
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(json_codes); i++)
                if (jerr->code && strcmp(jerr->code, json_codes[i].json) == 0)
                        code = c->plan ? json_codes[i].plan : json_codes[i].policy;
        if (jerr->errnum == ENOMEM) {
                c->oom = true;
                glove_error_set(c->err, ENOMEM, code, "%s", jerr->message);
                return -ENOMEM;
        }
        /* Getter messages already start with "<path>: "; keep just the text. */
        const char *text = jerr->message;
        size_t n = strlen(path);
        if (strncmp(text, path, n) == 0 && text[n] == ':' && text[n + 1] == ' ')
                text += n + 2;
        return sv_fail(c, code, path, "%s", text);
}

/* ---- getters ---- */

int sv_get_string(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, size_t max,
                  const char **out) {
        struct glove_error jerr = { 0 };
        char mp[GLOVE_JSON_PATH_MAX];
        sv_path_member(mp, path, key);
        if (glove_json_get_string(obj, key, path, max, out, &jerr) < 0)
                return sv_fail_json(c, &jerr, mp);
        return 0;
}

int sv_get_int(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, int64_t min,
               int64_t max, int64_t *out) {
        struct glove_error jerr = { 0 };
        char mp[GLOVE_JSON_PATH_MAX];
        sv_path_member(mp, path, key);
        if (glove_json_get_int(obj, key, path, min, max, out, &jerr) < 0)
                return sv_fail_json(c, &jerr, mp);
        return 0;
}

int sv_get_bool(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, bool *out) {
        struct glove_error jerr = { 0 };
        char mp[GLOVE_JSON_PATH_MAX];
        sv_path_member(mp, path, key);
        if (glove_json_get_bool(obj, key, path, out, &jerr) < 0)
                return sv_fail_json(c, &jerr, mp);
        return 0;
}

int sv_get_array(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, size_t max_items,
                 json_t **out) {
        struct glove_error jerr = { 0 };
        char mp[GLOVE_JSON_PATH_MAX];
        sv_path_member(mp, path, key);
        if (glove_json_get_array(obj, key, path, max_items, out, &jerr) < 0)
                return sv_fail_json(c, &jerr, mp);
        return 0;
}

int sv_get_object(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, json_t **out) {
        struct glove_error jerr = { 0 };
        char mp[GLOVE_JSON_PATH_MAX];
        sv_path_member(mp, path, key);
        if (glove_json_get_object(obj, key, path, out, &jerr) < 0)
                return sv_fail_json(c, &jerr, mp);
        return 0;
}

int sv_as_object(struct sv_ctx *c, const json_t *v, const char *path) {
        if (json_is_object(v))
                return 0;
        return sv_fail(c, SV_CODE(c, "wrong_type"), path, "expected an object");
}

/* Member names that would carry launch, host or secret authority: a plan
 * that uses one is reported as plan.forbidden_field, not merely unknown. */
static const char *const forbidden_plan_fields[] = {
        "args", "argv", "arguments", "command", "cwd", "env", "environment", "executable", "executable_path",
        "executable_search_paths", "host_path", "launch", "password", "path", "read_only_paths",
        "runtime_discovery", "secret", "secret_value", "secret_values", "secrets", "source_path",
        "target_path", "token", "value", "working_directory",
};

static bool forbidden_plan_field(const char *key) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(forbidden_plan_fields); i++)
                if (strcmp(forbidden_plan_fields[i], key) == 0)
                        return true;
        return false;
}

int sv_check_keys(struct sv_ctx *c, const json_t *obj, const char *const allowed[], const char *path) {
        int r = 0;
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)obj, key, value) {
                (void)value;
                bool ok = false;
                for (size_t i = 0; allowed[i] && !ok; i++)
                        ok = strcmp(allowed[i], key) == 0;
                if (ok)
                        continue;
                char mp[GLOVE_JSON_PATH_MAX];
                sv_path_member(mp, path, key);
                if (c->plan && forbidden_plan_field(key))
                        r = sv_fail(c, "plan.forbidden_field", mp,
                                    "a plan cannot carry launch, host path or secret fields");
                else
                        r = sv_fail(c, SV_CODE(c, "unknown_field"), mp, "unknown field");
                if (!c->plan)
                        return r;
        }
        return r;
}

/* ---- identifiers, digests, value classification ---- */

bool sv_identifier_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_POLICY_IDENTIFIER_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)s[i];
                bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                          ch == '.' || ch == '_' || ch == ':' || ch == '-';
                if (!ok)
                        return false;
        }
        return true;
}

bool sv_digest_hex_valid(const char *s) {
        size_t n = strlen(s);
        if (n != GLOVE_DIGEST_SHA256_HEX_LEN)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* NAME=... with NAME from [A-Za-z_][A-Za-z0-9_]*. */
static bool looks_like_environment(const char *s) {
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
                return false;
        for (s++; *s && *s != '='; s++)
                if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
                      *s == '_'))
                        return false;
        return *s == '=';
}

/* For a plan value that failed its check: a host path or environment entry
 * is reported as such (never echoing the value), else fallback. */
const char *sv_plan_value_code(const char *s, const char *fallback) {
        if (strchr(s, '/'))
                return "plan.host_path";
        if (looks_like_environment(s))
                return "plan.environment_entry";
        return fallback;
}

int sv_check_identifier(struct sv_ctx *c, const char *s, const char *path, bool secret) {
        if (sv_identifier_valid(s))
                return 0;
        if (!c->plan)
                return sv_fail(c, "policy.invalid_identifier", path,
                               "identifier must be 1..%d bytes of [A-Za-z0-9._:-]", GLOVE_POLICY_IDENTIFIER_MAX);
        const char *code = secret ? "plan.secret_value" : sv_plan_value_code(s, "plan.invalid_identifier");
        return sv_fail(c, code, path, "not an identifier");
}

int sv_get_identifier(struct sv_ctx *c, const json_t *obj, const char *key, const char *path,
                      const char **out) {
        const char *s;
        char mp[GLOVE_JSON_PATH_MAX];
        /* The length bound is part of the identifier check, so a long value
         * is classified (host path, secret, ...) rather than just too long. */
        int r = sv_get_string(c, obj, key, path, GLOVE_PLAN_MAX_BYTES, &s);
        if (r < 0)
                return r;
        sv_path_member(mp, path, key);
        r = sv_check_identifier(c, s, mp, false);
        if (r < 0)
                return r;
        *out = s;
        return 0;
}

int sv_get_enum(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, const struct sv_enum *e,
                int *out) {
        const char *s;
        int r = sv_get_string(c, obj, key, path, GLOVE_PLAN_MAX_BYTES, &s);
        if (r < 0)
                return r;
        int i = sv_enum_find(e, s);
        if (i >= 0) {
                *out = i;
                return 0;
        }
        char mp[GLOVE_JSON_PATH_MAX];
        sv_path_member(mp, path, key);
        const char *code = c->plan ? sv_plan_value_code(s, "plan.invalid_value") : "policy.invalid_value";
        return sv_fail(c, code, mp, "not a known %s", e->what);
}

int sv_get_identifier_array(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, size_t max,
                            bool secret, struct sv_strings *out) {
        out->v = NULL;
        out->n = 0;
        json_t *arr;
        char ap[GLOVE_JSON_PATH_MAX];
        sv_path_member(ap, path, key);
        int r = sv_get_array(c, obj, key, path, max, &arr);
        if (r < 0)
                return r;
        size_t n = json_array_size(arr);
        _cleanup_free_ const char **v = calloc(n ? n : 1, sizeof(*v));
        if (!v) {
                c->oom = true;
                return glove_error_set(c->err, ENOMEM, SV_CODE(c, "no_memory"), "out of memory");
        }
        const char *prev = NULL;
        int bad = 0;
        for (size_t i = 0; i < n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, ap, i);
                struct glove_error jerr = { 0 };
                const char *s;
                if (glove_json_as_string(json_array_get(arr, i), ep, GLOVE_PLAN_MAX_BYTES, &s, &jerr) < 0 ||
                    sv_check_identifier(c, s, ep, secret) < 0) {
                        if (jerr.code)
                                sv_fail_json(c, &jerr, ep);
                        bad = -EINVAL;
                        prev = NULL;
                        if (!c->plan)
                                return bad;
                        continue;
                }
                if (prev && strcmp(prev, s) >= 0) {
                        bool dup = strcmp(prev, s) == 0;
                        bad = sv_fail(c, dup ? SV_CODE(c, "array_duplicate") : SV_CODE(c, "array_unsorted"), ep,
                                      dup ? "duplicate entry" : "entries must be sorted by bytes");
                        if (!c->plan)
                                return bad;
                }
                prev = s;
                v[i] = s;
        }
        if (bad < 0)
                return bad;
        out->v = TAKE_PTR(v);
        out->n = n;
        return 0;
}

int sv_check_sorted(struct sv_ctx *c, const char *array_path, size_t n,
                    const char *(*key)(const void *items, size_t i), const void *items) {
        int r = 0;
        for (size_t i = 1; i < n; i++) {
                const char *a = key(items, i - 1), *b = key(items, i);
                if (!a || !b)
                        continue;
                int cmp = strcmp(a, b);
                if (cmp < 0)
                        continue;
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, array_path, i);
                if (cmp == 0)
                        r = sv_fail(c, SV_CODE(c, "array_duplicate"), ep, "duplicate identifier");
                else
                        r = sv_fail(c, SV_CODE(c, "array_unsorted"), ep, "entries must be sorted by identifier");
                if (!c->plan)
                        return r;
        }
        return r;
}

/* ---- lexical path checks ---- */

int sv_check_abs_path(struct sv_ctx *c, const char *p, const char *path) {
        if (p[0] != '/')
                return sv_fail(c, "policy.path_not_absolute", path, "path must be absolute");
        for (const char *s = p; *s; s++)
                if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        return sv_fail(c, "policy.path_not_normalized", path,
                                       "path contains a control character");
        if (strcmp(p, "/") == 0)
                return sv_fail(c, "policy.path_is_root", path, "path must not be the root directory");
        _cleanup_free_ char *norm = NULL;
        struct glove_error perr = { 0 };
        int r = glove_path_normalize(p, "/", &norm, &perr);
        if (r == -ENOMEM) {
                c->oom = true;
                return glove_error_set(c->err, ENOMEM, "policy.no_memory", "out of memory");
        }
        if (r < 0 || strcmp(norm, p) != 0)
                return sv_fail(c, "policy.path_not_normalized", path,
                               "path must be normalized (no \"//\", \".\", \"..\" or trailing \"/\")");
        return 0;
}

bool sv_paths_overlap(const char *a, const char *b) {
        return glove_path_is_beneath(a, b) || glove_path_is_beneath(b, a);
}

/* Host paths the policy may never name (kernel interfaces). */
static const char *const restricted_host_roots[] = { "/dev", "/proc", "/sys" };

int sv_check_host_path(struct sv_ctx *c, const char *p, const char *path) {
        int r = sv_check_abs_path(c, p, path);
        if (r < 0)
                return r;
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(restricted_host_roots); i++)
                if (glove_path_is_beneath(p, restricted_host_roots[i]))
                        return sv_fail(c, "policy.path_restricted", path, "host path lies beneath %s",
                                       restricted_host_roots[i]);
        return 0;
}

int sv_get_string_list(struct sv_ctx *c, const json_t *obj, const char *key, const char *path, bool required,
                       size_t max_items, size_t max_len, struct sv_strings *out) {
        out->v = NULL;
        out->n = 0;
        if (!required && !json_object_get(obj, key))
                return 0;
        json_t *arr;
        int r = sv_get_array(c, obj, key, path, max_items, &arr);
        if (r < 0)
                return r;
        char ap[GLOVE_JSON_PATH_MAX];
        sv_path_member(ap, path, key);
        size_t n = json_array_size(arr);
        _cleanup_free_ const char **v = calloc(n ? n : 1, sizeof(*v));
        if (!v) {
                c->oom = true;
                return glove_error_set(c->err, ENOMEM, SV_CODE(c, "no_memory"), "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, ap, i);
                struct glove_error jerr = { 0 };
                if (glove_json_as_string(json_array_get(arr, i), ep, max_len, &v[i], &jerr) < 0)
                        return sv_fail_json(c, &jerr, ep);
        }
        out->v = TAKE_PTR(v);
        out->n = n;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Argument rules: their names, their text in verdicts, and their tests. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const kind_names[] = {
        [GLOVE_POLICY_KIND_PREFIX] = "prefix",
        [GLOVE_POLICY_KIND_EXACT] = "exact",
        [GLOVE_POLICY_KIND_ONE_OF] = "one_of",
        [GLOVE_POLICY_KIND_PATH_WITHIN] = "path_within",
        [GLOVE_POLICY_KIND_MAX_LENGTH] = "max_length",
};

const char *glove_policy_kind_name(enum glove_policy_kind kind) {
        if ((size_t)kind >= sizeof(kind_names) / sizeof(kind_names[0]))
                return NULL;
        return kind_names[kind];
}

int glove_policy_kind_from_name(const char *name) {
        for (size_t i = 0; name && i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
                if (strcmp(name, kind_names[i]) == 0)
                        return (int)i;
        return -1;
}

void glove_policy_arg_rule_clear(struct glove_policy_arg_rule *rule) {
        if (!rule)
                return;
        free(rule->pointer);
        free(rule->value);
        for (size_t i = 0; i < rule->n_values; i++)
                free(rule->values[i]);
        free(rule->values);
        free(rule->text);
        memset(rule, 0, sizeof(*rule));
}

/* ---- rule text: bounded, cut at a UTF-8 boundary with "..." ---- */

struct text {
        char buf[GLOVE_POLICY_RULE_MAX];
        size_t len;
        bool cut;
};

/* Room kept for the "..." marker and the NUL. */
#define TEXT_LIMIT (GLOVE_POLICY_RULE_MAX - 4)

static void text_put(struct text *t, const char *s, size_t n) {
        if (t->cut)
                return;
        if (t->len + n > TEXT_LIMIT) {
                t->cut = true;
                return;
        }
        memcpy(t->buf + t->len, s, n);
        t->len += n;
}

static void text_puts(struct text *t, const char *s) {
        text_put(t, s, strlen(s));
}

/* Length of the UTF-8 sequence starting with byte c (1 for stray bytes). */
static size_t utf8_seq_len(unsigned char c) {
        if (c >= 0xf0)
                return 4;
        if (c >= 0xe0)
                return 3;
        if (c >= 0xc0)
                return 2;
        return 1;
}

/* Copies s[0..n) with control characters written as \u00XX (and, when
 * quoted, '"' and '\\' escaped as in JSON), whole UTF-8 sequences only. */
static void text_put_escaped(struct text *t, const char *s, size_t n, bool quoted) {
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < n && !t->cut;) {
                unsigned char c = (unsigned char)s[i];
                if (c < 0x20 || c == 0x7f) {
                        char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
                        text_put(t, e, sizeof(e));
                        i++;
                } else if (quoted && (c == '"' || c == '\\')) {
                        char e[2] = {'\\', (char)c};
                        text_put(t, e, sizeof(e));
                        i++;
                } else {
                        size_t k = utf8_seq_len(c);
                        if (k > n - i)
                                k = n - i;
                        text_put(t, s + i, k);
                        i += k;
                }
        }
}

static void text_put_quoted(struct text *t, const char *s, size_t n) {
        text_put(t, "\"", 1);
        text_put_escaped(t, s, n, true);
        text_put(t, "\"", 1);
}

int glove_policy_arg_rule_render(struct glove_policy_arg_rule *rule, const char *qualified) {
        struct text t = {.len = 0, .cut = false};
        text_puts(&t, qualified);
        text_put(&t, ":", 1);
        text_put_escaped(&t, rule->pointer, strlen(rule->pointer), false);
        text_put(&t, " ", 1);
        text_puts(&t, glove_policy_kind_name(rule->kind));
        text_put(&t, " ", 1);
        switch (rule->kind) {
        case GLOVE_POLICY_KIND_PREFIX:
        case GLOVE_POLICY_KIND_EXACT:
                text_put_quoted(&t, rule->value, rule->value_len);
                break;
        case GLOVE_POLICY_KIND_ONE_OF:
                text_put(&t, "[", 1);
                for (size_t i = 0; i < rule->n_values; i++) {
                        if (i > 0)
                                text_put(&t, ",", 1);
                        text_put_quoted(&t, rule->values[i], strlen(rule->values[i]));
                }
                text_put(&t, "]", 1);
                break;
        case GLOVE_POLICY_KIND_PATH_WITHIN:
                text_put_escaped(&t, rule->value, rule->value_len, false);
                break;
        case GLOVE_POLICY_KIND_MAX_LENGTH: {
                char num[32];
                int n = snprintf(num, sizeof(num), "%" PRId64, rule->max);
                text_put(&t, num, (size_t)n);
                break;
        }
        }
        if (t.cut) {
                memcpy(t.buf + t.len, "...", 3);
                t.len += 3;
        }
        t.buf[t.len] = '\0';
        char *s = strdup(t.buf);
        if (!s)
                return -ENOMEM;
        free(rule->text);
        rule->text = s;
        return 0;
}

bool glove_policy_arg_rule_equal(const struct glove_policy_arg_rule *a, const struct glove_policy_arg_rule *b) {
        if (a->kind != b->kind || strcmp(a->pointer, b->pointer) != 0)
                return false;
        switch (a->kind) {
        case GLOVE_POLICY_KIND_PREFIX:
        case GLOVE_POLICY_KIND_EXACT:
        case GLOVE_POLICY_KIND_PATH_WITHIN:
                return a->value_len == b->value_len && memcmp(a->value, b->value, a->value_len) == 0;
        case GLOVE_POLICY_KIND_ONE_OF:
                if (a->n_values != b->n_values)
                        return false;
                for (size_t i = 0; i < a->n_values; i++)
                        if (strcmp(a->values[i], b->values[i]) != 0)
                                return false;
                return true;
        case GLOVE_POLICY_KIND_MAX_LENGTH:
                return a->max == b->max;
        }
        return false;
}

/* ---- evaluation ---- */

/* Length of the component of the normalized root starting at r. */
static size_t root_component_len(const char *r) {
        return strcspn(r, "/");
}

bool glove_policy_path_within(const char *s, size_t len, const char *root) {
        if (len == 0 || len > GLOVE_PATH_MAX - 1 || s[0] != '/' || memchr(s, '\0', len))
                return false;
        /* Walk s's components, skipping empty and "." ones (the lexical
         * normal form), matching them against root's components first. */
        const char *r = root + 1;      /* root is "/" or "/a/b" */
        bool root_done = *r == '\0';
        const char *end = s + len;
        const char *p = s;
        while (p < end) {
                while (p < end && *p == '/')
                        p++;
                if (p == end)
                        break;
                const char *q = memchr(p, '/', (size_t)(end - p));
                if (!q)
                        q = end;
                size_t n = (size_t)(q - p);
                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return false; /* any ".." is refused, even one that stays beneath */
                if (!(n == 1 && p[0] == '.') && !root_done) {
                        size_t rn = root_component_len(r);
                        if (rn != n || memcmp(r, p, n) != 0)
                                return false;
                        r += rn;
                        if (*r == '/')
                                r++;
                        else
                                root_done = true;
                }
                p = q;
        }
        return root_done;
}

bool glove_policy_arg_rule_passes(const struct glove_policy_arg_rule *rule, const json_t *value) {
        if (!json_is_string(value))
                return false;
        const char *s = json_string_value(value);
        size_t n = json_string_length(value);
        if (memchr(s, '\0', n))
                return false;
        switch (rule->kind) {
        case GLOVE_POLICY_KIND_PREFIX:
                return n >= rule->value_len && memcmp(s, rule->value, rule->value_len) == 0;
        case GLOVE_POLICY_KIND_EXACT:
                return n == rule->value_len && memcmp(s, rule->value, n) == 0;
        case GLOVE_POLICY_KIND_ONE_OF:
                for (size_t i = 0; i < rule->n_values; i++)
                        if (strlen(rule->values[i]) == n && memcmp(s, rule->values[i], n) == 0)
                                return true;
                return false;
        case GLOVE_POLICY_KIND_PATH_WITHIN:
                return glove_policy_path_within(s, n, rule->value);
        case GLOVE_POLICY_KIND_MAX_LENGTH:
                return (uint64_t)n <= (uint64_t)rule->max;
        }
        return false;
}

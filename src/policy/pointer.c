/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 6901 JSON Pointer evaluation over jansson values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/json.h"
#include "internal.h"

/* Largest reference token unescaped on the stack; longer ones use the heap. */
#define TOKEN_STACK_MAX 256

/* RFC 6901 section 3: "" or a sequence of "/" reference-token, where "~"
 * appears only as "~0" or "~1". */
static bool pointer_syntax_ok(const char *pointer) {
        if (pointer[0] == '\0')
                return true;
        if (pointer[0] != '/')
                return false;
        for (const char *p = pointer; *p; p++)
                if (*p == '~' && p[1] != '0' && p[1] != '1')
                        return false;
        return true;
}

/* Unescapes token t[0..n) into out (n + 1 bytes): "~1" -> "/", then
 * "~0" -> "~", in one left-to-right pass so "~01" becomes "~1" (section 4). */
static void token_unescape(const char *t, size_t n, char *out) {
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                if (t[i] == '~') {
                        out[o++] = t[i + 1] == '1' ? '/' : '~';
                        i++;
                } else {
                        out[o++] = t[i];
                }
        }
        out[o] = '\0';
}

/* Array index token (section 4): "0" or a decimal without leading zeros.
 * "-" and anything else name no element. Returns true with *index set. */
static bool token_index(const char *t, size_t n, size_t *index) {
        if (n == 0 || n > 19 || (n > 1 && t[0] == '0'))
                return false;
        size_t v = 0;
        for (size_t i = 0; i < n; i++) {
                if (t[i] < '0' || t[i] > '9')
                        return false;
                v = v * 10 + (size_t)(t[i] - '0');
        }
        *index = v;
        return true;
}

/* The child of v named by the escaped token t[0..n), or NULL. Sets
 * *nomem on allocation failure. */
static const json_t *step(const json_t *v, const char *t, size_t n, bool *nomem) {
        if (json_is_array(v)) {
                size_t index;
                if (!token_index(t, n, &index) || index >= json_array_size(v))
                        return NULL;
                return json_array_get(v, index);
        }
        if (!json_is_object(v))
                return NULL;
        char stack[TOKEN_STACK_MAX + 1];
        char *key = stack;
        if (n > TOKEN_STACK_MAX) {
                key = malloc(n + 1);
                if (!key) {
                        *nomem = true;
                        return NULL;
                }
        }
        token_unescape(t, n, key);
        const json_t *child = json_object_get(v, key);
        if (key != stack)
                free(key);
        return child;
}

int glove_json_pointer_get(const json_t *root, const char *pointer, const json_t **out) {
        if (!pointer || !out)
                return -EINVAL;
        *out = NULL;
        if (!pointer_syntax_ok(pointer))
                return -EINVAL;
        const json_t *cur = root;
        const char *p = pointer;
        bool nomem = false;
        while (cur && *p) {
                p++; /* the "/" before each token */
                const char *end = strchrnul(p, '/');
                cur = step(cur, p, (size_t)(end - p), &nomem);
                p = end;
        }
        if (nomem)
                return -ENOMEM;
        *out = cur;
        return 0;
}

bool glove_policy_pointer_valid(const char *pointer, const char **why) {
        if (!pointer || pointer[0] != '/') {
                *why = "a JSON Pointer in a rule must start with \"/\"";
                return false;
        }
        size_t n = strnlen(pointer, GLOVE_POLICY_POINTER_MAX + 1);
        if (n > GLOVE_POLICY_POINTER_MAX) {
                *why = "the JSON Pointer is longer than 256 bytes";
                return false;
        }
        if (!glove_json_utf8_valid(pointer, n, NULL)) {
                *why = "the JSON Pointer is not valid UTF-8";
                return false;
        }
        if (!pointer_syntax_ok(pointer)) {
                *why = "\"~\" in a JSON Pointer must be followed by 0 or 1 (RFC 6901)";
                return false;
        }
        return true;
}

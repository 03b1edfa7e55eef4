/* SPDX-License-Identifier: Apache-2.0 */
/* MCP protocol eras: the classification of a request by its _meta, the
 * errors of malformed modern requests, and the members a modern result
 * carries (glove/kernel/era.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/kernel/era.h"
#include "glove/mcp/json_text.h"
#include "glove/mcp/jsonrpc.h"

enum glove_kernel_era glove_kernel_era_of(const json_t *params) {
        const json_t *meta = json_is_object(params) ? json_object_get(params, "_meta") : NULL;
        const json_t *version = json_is_object(meta) ? json_object_get(meta, GLOVE_KERNEL_ERA_META_VERSION) : NULL;
        if (!version)
                return GLOVE_KERNEL_ERA_LEGACY;
        /* glove_mcp_string: "2026-07-28\u0000x" is not the revision. */
        const char *v = glove_mcp_string(version);
        if (!v || strcmp(v, GLOVE_KERNEL_ERA_MODERN_VERSION) != 0)
                return GLOVE_KERNEL_ERA_BAD_VERSION;
        if (!json_is_object(json_object_get(meta, GLOVE_KERNEL_ERA_META_CAPS)))
                return GLOVE_KERNEL_ERA_BAD_CAPS;
        return GLOVE_KERNEL_ERA_MODERN;
}

json_t *glove_kernel_era_supported(void) {
        json_t *a = json_array();
        if (!a || json_array_append_new(a, json_string(GLOVE_KERNEL_ERA_MODERN_VERSION)) < 0) {
                json_decref(a);
                return NULL;
        }
        for (size_t i = 0; i < GLOVE_MCP_PROTOCOL_VERSIONS_COUNT; i++)
                if (json_array_append_new(a, json_string(glove_mcp_protocol_versions[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

json_t *glove_kernel_era_error(const json_t *id, const json_t *params, enum glove_kernel_era era) {
        if (era == GLOVE_KERNEL_ERA_BAD_CAPS)
                return glove_mcp_rpc_error(id, GLOVE_RPC_INVALID_PARAMS,
                                           "a 2026-07-28 request needs params._meta[\"" GLOVE_KERNEL_ERA_META_CAPS "\"], an object",
                                           "invalid_params", "params._meta." GLOVE_KERNEL_ERA_META_CAPS);
        if (era != GLOVE_KERNEL_ERA_BAD_VERSION)
                return NULL;
        const json_t *v = json_object_get(json_object_get(params, "_meta"), GLOVE_KERNEL_ERA_META_VERSION);
        json_t *requested = NULL;
        if (json_is_string(v))
                requested = json_stringn_nocheck(json_string_value(v), json_string_length(v));
        else {
                char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                requested = text ? json_string(text) : NULL;
                free(text);
        }
        json_t *supported = glove_kernel_era_supported();
        json_t *msg = glove_mcp_rpc_error(id, GLOVE_RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
                                          "unsupported_protocol_version", "params._meta." GLOVE_KERNEL_ERA_META_VERSION);
        json_t *data = msg ? json_object_get(json_object_get(msg, "error"), "data") : NULL;
        /* json_object_set_new takes its value even when it fails. */
        if (!data || !requested || !supported) {
                json_decref(supported);
                json_decref(requested);
                json_decref(msg);
                return NULL;
        }
        int r1 = json_object_set_new(data, "supported", supported);
        int r2 = json_object_set_new(data, "requested", requested);
        if (r1 < 0 || r2 < 0) {
                json_decref(msg);
                return NULL;
        }
        return msg;
}

void glove_kernel_era_strip(json_t *params) {
        json_t *meta = json_is_object(params) ? json_object_get(params, "_meta") : NULL;
        if (!json_is_object(meta))
                return;
        const size_t plen = strlen(GLOVE_KERNEL_ERA_META_PREFIX);
        const char *key;
        json_t *value;
        void *tmp;
        json_object_foreach_safe(meta, tmp, key, value) {
                (void)value;
                if (strncmp(key, GLOVE_KERNEL_ERA_META_PREFIX, plen) == 0)
                        json_object_del(meta, key);
        }
        if (json_object_size(meta) == 0)
                json_object_del(params, "_meta");
}

int glove_kernel_era_complete(json_t *result, bool cacheable) {
        if (!json_is_object(result))
                return 0;
        if (!json_object_get(result, "resultType") && json_object_set_new(result, "resultType", json_string("complete")) < 0)
                return -ENOMEM;
        if (!cacheable)
                return 0;
        if (!json_object_get(result, "ttlMs") && json_object_set_new(result, "ttlMs", json_integer(0)) < 0)
                return -ENOMEM;
        if (!json_object_get(result, "cacheScope") && json_object_set_new(result, "cacheScope", json_string("private")) < 0)
                return -ENOMEM;
        return 0;
}

/* ------------------------------------------------------------------ the text of a result */

static bool key_is(const char *s, size_t n, const char *key) {
        return n == strlen(key) && memcmp(s, key, n) == 0;
}

int glove_kernel_era_insert(const char *value, size_t len, bool cacheable, char *out, size_t size, size_t *at) {
        size_t i = glove_mcp_text_skip_ws(value, len, 0);
        *at = 0;
        if (i >= len || value[i] != '{')
                return 0; /* not an object: nothing to mark */
        *at = i + 1;
        bool rt = false, ttl = !cacheable, scope = !cacheable, empty = false;
        i = glove_mcp_text_skip_ws(value, len, i + 1);
        if (i < len && value[i] == '}')
                empty = true;
        while (!empty) {
                if (i >= len || value[i] != '"')
                        return -EINVAL;
                size_t k = i + 1, e = k;
                while (e < len && value[e] != '"' && value[e] != '\\')
                        e++;
                if (e >= len || value[e] != '"')
                        return -EINVAL; /* an escaped key: the scanner never vouches for one */
                rt = rt || key_is(value + k, e - k, "resultType");
                ttl = ttl || key_is(value + k, e - k, "ttlMs");
                scope = scope || key_is(value + k, e - k, "cacheScope");
                i = glove_mcp_text_skip_ws(value, len, e + 1);
                if (i >= len || value[i] != ':')
                        return -EINVAL;
                i = glove_mcp_text_skip_ws(value, len, i + 1);
                size_t j = glove_mcp_text_skip_value(value, len, i);
                if (j == i || j >= len)
                        return -EINVAL;
                i = glove_mcp_text_skip_ws(value, len, j);
                if (i < len && value[i] == '}')
                        break;
                if (i >= len || value[i] != ',')
                        return -EINVAL;
                i = glove_mcp_text_skip_ws(value, len, i + 1);
        }
        char text[96];
        int n = snprintf(text, sizeof(text), "%s%s%s", rt ? "" : ",\"resultType\":\"complete\"", ttl ? "" : ",\"ttlMs\":0",
                         scope ? "" : ",\"cacheScope\":\"private\"");
        if (n <= 0)
                return 0; /* every member is there */
        /* The list above begins with a comma; inserted after the brace the
         * comma goes after the members instead, unless the object is empty. */
        size_t m = (size_t)n - 1 + !empty;
        if (m > size)
                return -ENOSPC;
        memcpy(out, text + 1, (size_t)n - 1);
        if (!empty)
                out[n - 1] = ',';
        return (int)m;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/mcp/jsonrpc.h"

#include <string.h>

const char *const glove_mcp_protocol_versions[GLOVE_MCP_PROTOCOL_VERSIONS_COUNT] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                                                    "2024-11-05"};

bool glove_mcp_version_supported(const char *version) {
        for (size_t i = 0; i < GLOVE_MCP_PROTOCOL_VERSIONS_COUNT; i++)
                if (version && strcmp(version, glove_mcp_protocol_versions[i]) == 0)
                        return true;
        return false;
}

const char *glove_mcp_string(const json_t *v) {
        if (!json_is_string(v))
                return NULL;
        const char *s = json_string_value(v);
        return memchr(s, '\0', json_string_length(v)) ? NULL : s;
}

static json_t *id_or_null(const json_t *id) {
        return id ? json_incref((json_t *)id) : json_null();
}

json_t *glove_mcp_rpc_result(const json_t *id, json_t *result) {
        if (!result)
                return NULL;
        return json_pack("{s:s,s:o,s:o}", "jsonrpc", "2.0", "id", id_or_null(id), "result", result);
}

json_t *glove_mcp_rpc_error(const json_t *id, int code, const char *message, const char *reason, const char *rule) {
        json_t *error = json_pack("{s:i,s:s}", "code", code, "message", message);
        if (!error)
                return NULL;
        if (reason) {
                json_t *data = json_pack("{s:s}", "reason", reason);
                if (data && rule)
                        json_object_set_new(data, "rule", json_string(rule));
                json_object_set_new(error, "data", data);
        }
        return json_pack("{s:s,s:o,s:o}", "jsonrpc", "2.0", "id", id_or_null(id), "error", error);
}

json_t *glove_mcp_rpc_request(const json_t *id, const char *method, json_t *params) {
        json_t *m = json_pack("{s:s}", "jsonrpc", "2.0");
        if (!m) {
                json_decref(params);
                return NULL;
        }
        if (id)
                json_object_set(m, "id", (json_t *)id);
        json_object_set_new(m, "method", json_string(method));
        if (params)
                json_object_set_new(m, "params", params);
        return m;
}

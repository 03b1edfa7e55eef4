/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The names `glove run` used for its JSON-RPC and MCP message helpers,
 * which now live in the mcp module (glove/mcp/jsonrpc.h) and the kernel's
 * gateway (glove/kernel/gateway.h). Internal to the run module. */

#include <jansson.h>
#include <stddef.h>

#include "glove/kernel/gateway.h"
#include "glove/mcp/jsonrpc.h"

#define glove_run_protocol_versions glove_mcp_protocol_versions
#define GLOVE_RUN_TOOLS_PAGE GLOVE_KERNEL_GATEWAY_TOOLS_PAGE

static inline json_t *glove_run_result(const json_t *id, json_t *result) {
        return glove_mcp_rpc_result(id, result);
}

static inline json_t *glove_run_error_response(const json_t *id, int code, const char *message, const char *reason,
                                               const char *rule) {
        return glove_mcp_rpc_error(id, code, message, reason, rule);
}

static inline json_t *glove_run_request(const json_t *id, const char *method, json_t *params) {
        return glove_mcp_rpc_request(id, method, params);
}

static inline json_t *glove_run_initialize_result(const json_t *params) {
        return glove_kernel_gateway_initialize_result(params);
}

static inline int glove_run_version_supported(const char *version) {
        return glove_mcp_version_supported(version) ? 1 : 0;
}

static inline const char *glove_run_string(const json_t *v) {
        return glove_mcp_string(v);
}

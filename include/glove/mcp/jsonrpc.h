/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * JSON-RPC 2.0 and MCP message construction (JSON-RPC 2.0 specification;
 * MCP specification: lifecycle). Every constructor returns a new reference,
 * or NULL on ENOMEM.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* JSON-RPC error codes Glove answers with (docs/mcp-mediation.md). */
#define GLOVE_RPC_PARSE_ERROR -32700
#define GLOVE_RPC_INVALID_REQUEST -32600
#define GLOVE_RPC_METHOD_NOT_FOUND -32601
#define GLOVE_RPC_INVALID_PARAMS -32602
#define GLOVE_RPC_INTERNAL_ERROR -32603
#define GLOVE_RPC_POLICY_DENIED -32001
#define GLOVE_RPC_UPSTREAM_UNAVAILABLE -32002
#define GLOVE_RPC_UPSTREAM_TIMEOUT -32003
#define GLOVE_RPC_RESPONSE_TOO_LARGE -32004

/* MCP protocol versions Glove speaks, newest first. */
#define GLOVE_MCP_PROTOCOL_VERSIONS_COUNT 4
extern const char *const glove_mcp_protocol_versions[GLOVE_MCP_PROTOCOL_VERSIONS_COUNT];

/* {"jsonrpc":"2.0","id":id,"result":result}; result is stolen. id borrowed
 * (NULL gives "id": null). */
json_t *glove_mcp_rpc_result(const json_t *id, json_t *result);

/* {"jsonrpc":"2.0","id":id,"error":{"code","message"[,"data":{"reason","rule"}]}};
 * reason and rule may be NULL (rule is only written with a reason). */
json_t *glove_mcp_rpc_error(const json_t *id, int code, const char *message, const char *reason, const char *rule);

/* {"jsonrpc":"2.0","id":id,"method":method,"params":params}; params stolen
 * (NULL for none). id borrowed; NULL makes a notification. */
json_t *glove_mcp_rpc_request(const json_t *id, const char *method, json_t *params);

/* True when version (NUL-terminated, may be NULL) is one of
 * glove_mcp_protocol_versions. A version from a JSON string goes through
 * glove_mcp_string first, so "2025-06-18\u0000x" is not "2025-06-18". */
bool glove_mcp_version_supported(const char *version);

/*
 * The text of v (borrowed from v) when v is a JSON string without NUL, so
 * that the C string says everything v says; NULL when v is NULL, not a
 * string, or a string holding "\u0000" (JSON allows it; MCP frames are
 * decoded with GLOVE_JSON_ALLOW_NUL_ESCAPE). Every JSON string from an agent
 * or an upstream that is compared, parsed or copied as a C string goes
 * through this; strings only passed on as JSON values do not need to.
 */
const char *glove_mcp_string(const json_t *v);

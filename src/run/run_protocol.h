/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* JSON-RPC and MCP message construction for `glove run` (MCP specification:
 * lifecycle, tools; JSON-RPC 2.0). Internal to the run module. Every
 * function returns a new reference, or NULL on ENOMEM. */

#include <jansson.h>
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

/* Protocol versions Glove speaks, newest first. */
extern const char *const glove_run_protocol_versions[4];

/* Tools per tools/list page sent to the agent. */
#define GLOVE_RUN_TOOLS_PAGE 100

/* {"jsonrpc":"2.0","id":id,"result":result}; result is stolen. id borrowed
 * (NULL gives "id": null). */
json_t *glove_run_result(const json_t *id, json_t *result);

/* {"jsonrpc":"2.0","id":id,"error":{"code","message"[,"data":{"reason","rule"}]}};
 * reason and rule may be NULL. */
json_t *glove_run_error_response(const json_t *id, int code, const char *message, const char *reason, const char *rule);

/* {"jsonrpc":"2.0","id":id,"method":method,"params":params}; params stolen
 * (NULL for none). id NULL makes a notification. */
json_t *glove_run_request(const json_t *id, const char *method, json_t *params);

/* The result of the agent's initialize: the version the agent asked for
 * when Glove speaks it, else Glove's newest; capabilities only
 * {"tools":{"listChanged":true}}; serverInfo Glove. */
json_t *glove_run_initialize_result(const json_t *params);

/* True when version (NUL-terminated, may be NULL) is one of
 * glove_run_protocol_versions. A version from a JSON string goes through
 * glove_run_string first, so "2025-06-18\u0000x" is not "2025-06-18". */
int glove_run_version_supported(const char *version);

/*
 * The text of v (borrowed from v) when v is a JSON string without NUL, so
 * that the C string says everything v says; NULL when v is NULL, not a
 * string, or a string holding "\u0000" (JSON allows it; MCP frames are
 * decoded with GLOVE_JSON_ALLOW_NUL_ESCAPE). Every JSON string from the agent
 * or an upstream that Glove compares, parses or copies as a C string goes
 * through this; strings only passed on as JSON values do not need to.
 */
const char *glove_run_string(const json_t *v);

/* SPDX-License-Identifier: Apache-2.0 */
/* The result of an agent's initialize (gateway.h); apart from the gateway so
 * that it links without sd-event. */
#include "glove/kernel/gateway.h"
#include "glove/mcp/jsonrpc.h"

json_t *glove_kernel_gateway_initialize_result(const json_t *params) {
        const char *asked = glove_mcp_string(params ? json_object_get(params, "protocolVersion") : NULL);
        const char *version = glove_mcp_version_supported(asked) ? asked : glove_mcp_protocol_versions[0];
        return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s}}", "protocolVersion", version, "capabilities", "tools", "listChanged",
                         1, "serverInfo", "name", "glove", "version", GLOVE_VERSION);
}

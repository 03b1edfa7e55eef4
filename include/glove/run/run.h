/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `glove run`: contain an MCP-client agent exactly as `glove exec` does and
 * mediate every tool call it makes to host-side upstream MCP servers through
 * the policy engine, with an audit trail (issue "glove run"; spec
 * architecture.md, MCP request flow). docs/mcp-mediation.md describes the
 * behaviour on the wire.
 */

/* argv[0] is "run". Returns Glove's exit status (as glove exec; 125 also
 * when an upstream fails to start or initialize, on an oversized agent
 * frame, and when an audit append fails). */
int glove_run_main(int argc, char **argv);

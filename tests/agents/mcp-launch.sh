#!/bin/bash
# mcp-launch.sh PROGRAM [ARG...]: runs PROGRAM inside `glove run` with
# @GLOVE_MCP_COMMAND@ and @GLOVE_MCP_URL@ in its arguments and in
# OPENCODE_CONFIG_CONTENT replaced by the values of $GLOVE_MCP_COMMAND and
# $GLOVE_MCP_URL that Glove gives the agent (docs/mcp-mediation.md,
# "Endpoints"): tests/agents/clis.py spec --mcp=ENDPOINT writes the
# placeholders, since only the sandbox knows the values.
set -eu
for v in GLOVE_MCP_COMMAND GLOVE_MCP_URL; do
        if [ -z "${!v:-}" ] && [[ "$* ${OPENCODE_CONFIG_CONTENT:-}" == *"@$v@"* ]]; then
                echo "mcp-launch.sh: \$$v is not set (glove run --mcp-endpoint sets it), yet the arguments use @$v@" >&2
                exit 2
        fi
done
args=()
for a in "$@"; do
        a=${a//@GLOVE_MCP_URL@/${GLOVE_MCP_URL-}}
        a=${a//@GLOVE_MCP_COMMAND@/${GLOVE_MCP_COMMAND-}}
        args+=("$a")
done
if [ -n "${OPENCODE_CONFIG_CONTENT:-}" ]; then
        c=${OPENCODE_CONFIG_CONTENT//@GLOVE_MCP_URL@/${GLOVE_MCP_URL-}}
        export OPENCODE_CONFIG_CONTENT=${c//@GLOVE_MCP_COMMAND@/${GLOVE_MCP_COMMAND-}}
fi
exec "${args[@]}"

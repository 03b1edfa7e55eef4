#!/usr/bin/env bats
# glove run: the fast path of upstream responses (issue 13, Performance). A
# response to a call in flight is routed by its id and its result (or
# error) forwarded as the upstream wrote it, without a JSON tree; whatever
# the strict decoder refuses is still refused. The agent is the SDK client,
# run under tests/agents/mcp-tap.py so the test sees the exact bytes it
# received; the upstream is tests/agents/mcp-upstream.py --raw, which writes
# lines no JSON encoder would.

load helpers
load lib/mcp

setup() {
        mcp_setup
        AGENT_TAP=$OUT/agent.tap
        # The SDK client behind a tap: "> LINE" is what it received from Glove.
        TAPPED=(--read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" -- "$PY" "$TAP" "$AGENT_TAP"
                "$NODE" "$AGENTS/mcp-client.mjs" --modules "$NODE_MODULES" --out "$CLIENT_OUT")
}

# received JQ-FILTER: the lines the agent received that match, raw.
received() { sed -n 's/^> //p' "$AGENT_TAP" | while IFS= read -r l; do
        if printf '%s' "$l" | jq -e "$1" >/dev/null 2>&1; then printf '%s\n' "$l"; fi
done; }

@test "run: an upstream's result and error reach the agent byte for byte as the upstream wrote them, under the agent's own id" {
        # Escapes, a real, a large integer and blanks that a decoder and an
        # encoder would each rewrite ("é", 0.10000000000000001, no blanks).
        local value='{ "content" : [{"type":"text","text":"caf\u00e9 \/ \"q\" fast"}],"_meta":{"n":0.1,"e":1.5e300,"big":123456789012345678,"t":[true,false,null]} }'
        local err='{"code":-32000,"message":"caf\u00e9 error","data":{"x":0.1}}'
        local scenario
        scenario=$(jq -cn --arg v "$value" --arg e "$err" '[
 {"op":"call","tool":"py.raw","args":{"lines":["{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":\($v)}"]},"expect":"ok","text":"café / \"q\" fast"},
 {"op":"call","tool":"py.raw","args":{"lines":["{\"error\":\($e),\"id\":@ID@,\"jsonrpc\":\"2.0\"}"]},"expect":"rpc_error","code":-32000},
 {"op":"wire_check"}]')
        gr --upstream "py=$PY,$UPY,--raw" --allow 'py.*' --audit-log "$AUDIT" "${TAPPED[@]}" "$scenario"
        expect_client_pass
        local got
        got=$(received '.result._meta.big?')
        [ "$(printf '%s\n' "$got" | wc -l)" -eq 1 ] || { cat "$AGENT_TAP"; fail "expected one result line: $got"; }
        local id
        id=$(printf '%s' "$got" | jq -c .id)
        [ "$got" = "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":$value}" ] ||
                fail "the result was not forwarded verbatim: $got"
        got=$(received '.error.code? == -32000')
        id=$(printf '%s' "$got" | jq -c .id)
        [ "$got" = "{\"jsonrpc\":\"2.0\",\"id\":$id,\"error\":$err}" ] ||
                fail "the error was not forwarded verbatim: $got"
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "py.raw")] | map(.upstream_status)' "$AUDIT" | jq -c .)" = '["ok","error"]' ] ||
                { show_records "$AUDIT"; fail "expected call_result records ok, error"; }
}

@test "run: an upstream answer the strict decoder refuses never reaches the agent, however it is written; the next answer does" {
        # Each call's upstream first writes a bad answer with the call's id,
        # then a good one: the agent must get "good" (and only it).
        local bad=(
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad","type":"x"}]}}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad"}],"k":1,"\u006b":2}}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad \ud800"}]}}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad	tab"}]}}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad @BADUTF8@"}]}}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad"}],"n":18446744073709551616}}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad"}],"n":1e400}}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad"}]}} x'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad"}]},"result":{}}'
                '{"jsonrpc":"2.0","id":@ID@,"error":"bad"}'
                '{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"bad"}],"d":'"$(printf '[%.0s' $(seq 64))$(printf ']%.0s' $(seq 64))"'}}'
        )
        local good='{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"good"}]}}'
        local scenario
        scenario=$(printf '%s\n' "${bad[@]}" | jq -R . | jq -cs --arg g "$good" \
                '[.[] | {"op":"call","tool":"py.raw","args":{"lines":[., $g]},"expect":"ok","text":"good","text_excludes":"bad"}] + [{"op":"wire_check"}]')
        gr --upstream "py=$PY,$UPY,--raw" --allow 'py.*' --audit-log "$AUDIT" "${TAPPED[@]}" "$scenario"
        expect_client_pass
        [ "$(jq -s '[.[] | select(.event == "upstream_invalid_message" and .from == "py")] | length' "$AUDIT")" -eq ${#bad[@]} ] ||
                { show_records "$AUDIT"; fail "expected ${#bad[@]} upstream_invalid_message records"; }
        [ -z "$(received 'tostring | contains("bad")')" ] || fail "a refused answer reached the agent: $(received 'tostring | contains("bad")')"
}

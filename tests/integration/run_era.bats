#!/usr/bin/env bats
# Dual era on the agent's stdio (issue 23; docs/mcp-mediation.md, "Protocol
# revisions"): a 2026-07-28 client (@modelcontextprotocol/client 2.4.0,
# tests/fixtures/interop/modern-client.mjs) as the agent of `glove run`
# discovers, lists, calls an allowed and a refused tool of a legacy
# upstream (server-everything), with the same decisions and records a
# legacy client (the v1 SDK, tests/agents/mcp-client.mjs) gets; the
# reserved _meta keys never reach the upstream; malformed modern requests
# and era mixing are refused (tests/fixtures/interop/era-raw.py).

load helpers
load lib/mcp

setup() {
        mcp_setup
        FIX=${GLOVE_FIXTURES:?run the suite through tests/integration/run.sh (GLOVE_FIXTURES unset)}
        MODERN=$FIX/interop/modern-client.mjs
        RAW=$FIX/interop/era-raw.py
        [ -r "$NODE_MODULES/@modelcontextprotocol/client/package.json" ] ||
                { echo "@modelcontextprotocol/client is missing from tests/node_modules: run scripts/deps.sh" >&2; return 1; }
}

# A record of the client's FILE for STEP, or a failure naming it.
step_passed() {
        jq -e -s --arg s "$2" 'any(.[]; .step == $s and .pass)' "$1" >/dev/null || { show_records "$1" "$AUDIT"; fail "step $2 did not pass"; }
}

@test "era: a 2026-07-28 client discovers, lists, calls and is refused as a legacy one, with the same records" {
        local log out=$OUT/modern.jsonl
        log=$(upstream_dir)/ev.tap
        gr --upstream "ev=$PY,$TAP,$log,$NODE,$EVERYTHING,stdio" --allow 'ev.*' --deny ev.get-sum --audit-log "$AUDIT" \
                --read "$NODE_MODULES" --read "$FIX" --write "$OUT" -- \
                "$NODE" "$MODERN" --modules "$NODE_MODULES" --out "$out" --allowed ev.echo --refused ev.get-sum
        [ "$status" -eq 0 ] || { echo "$stderr" >&2; show_records "$out" "$AUDIT"; fail "the 2026-07-28 client failed through glove run"; }
        local s
        for s in connect discover list allowed refused wire end; do step_passed "$out" "$s"; done
        # What it discovered: every revision, modern first; Glove's identity.
        jq -e -s 'any(.[]; .step == "discover" and .supportedVersions == ["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]
                and .serverInfo.name == "glove" and (.capabilities.tools | type) == "object")' "$out" >/dev/null ||
                { show_records "$out"; fail "the discover result is not Glove's"; }
        jq -e -s 'any(.[]; .step == "refused" and .data.reason == "policy_denied")' "$out" >/dev/null ||
                { show_records "$out"; fail "the refusal is not policy_denied"; }
        jq -e -s 'any(.[]; .step == "wire" and (.methods | index("server/discover")) != null and (.methods | index("initialize")) == null)' \
                "$out" >/dev/null || { show_records "$out"; fail "the client did not discover, or sent initialize"; }
        # The upstream got the call without the reserved keys; never the refused one.
        upstream_saw "$log" '.method == "tools/call" and .params.name == "echo" and .params.arguments.message == "modern"'
        upstream_never_saw "$log" '(tostring | contains("io.modelcontextprotocol/"))'
        upstream_never_saw "$log" '.method == "tools/call" and .params.name == "get-sum"'
        audit_has '.event == "call" and .tool == "ev.echo" and .decision == "allow"'
        audit_has '.event == "call_result" and .tool == "ev.echo" and .upstream_status == "ok"'
        audit_has '.event == "call" and .tool == "ev.get-sum" and .decision == "deny" and .reason == "policy_denied"'
        audit_lacks '.event == "era_refused"'
        local modern_deny
        modern_deny=$(jq -c 'select(.event == "call" and .decision == "deny") | del(.ts, .run_id, .id)' "$AUDIT")

        # The legacy client (v1 SDK): the same listing, call and refusal,
        # results without resultType, and the same deny record.
        : >"$AUDIT"
        local scenario='[
 {"op":"list","includes":["ev.echo"],"excludes":["ev.get-sum"]},
 {"op":"call","tool":"ev.echo","args":{"message":"legacy"},"expect":"ok","text":"legacy"},
 {"op":"call","tool":"ev.get-sum","args":{"a":1,"b":2},"expect":"policy_denied","code":-32001}
]'
        gr --upstream "ev=$NODE,$EVERYTHING,stdio" --allow 'ev.*' --deny ev.get-sum --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        [ "$(jq -c 'select(.event == "call" and .decision == "deny") | del(.ts, .run_id, .id)' "$AUDIT")" = "$modern_deny" ] ||
                { show_records "$AUDIT"; fail "the legacy refusal's record differs from the modern one's ($modern_deny)"; }
}

@test "era: malformed 2026-07-28 requests are answered -32022 or -32602; initialize after them is refused" {
        local log out=$OUT/raw.jsonl
        log=$(upstream_dir)/ev.tap
        gr --upstream "ev=$PY,$TAP,$log,$NODE,$EVERYTHING,stdio" --allow 'ev.*' --audit-log "$AUDIT" \
                --read "$FIX" --write "$OUT" -- "$PY" "$RAW" --out "$out" modern-first
        [ "$status" -eq 0 ] || { echo "$stderr" >&2; show_records "$out"; fail "glove run failed"; }
        c() { jq -c --arg c "$1" "select(.case == \$c) | .answer | $2" "$out"; }
        [ "$(c unsupported_version '.error.code')" = -32022 ] || { show_records "$out"; fail "no -32022 for 1900-01-01"; }
        [ "$(c unsupported_version '.error.message')" = '"Unsupported protocol version"' ] || fail "-32022's message"
        [ "$(c unsupported_version '.error.data | {supported, requested}')" = \
                '{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"1900-01-01"}' ] ||
                { show_records "$out"; fail "-32022's data"; }
        [ "$(c version_not_string '[.error.code, .error.data.requested]')" = '[-32022,"20260728"]' ] ||
                { show_records "$out"; fail "a version that is not a string"; }
        [ "$(c no_capabilities '.error.code')" = -32602 ] || { show_records "$out"; fail "no -32602 without clientCapabilities"; }
        c no_capabilities '.error.message' | grep -q 'io.modelcontextprotocol/clientCapabilities' || fail "-32602 does not name the key"
        [ "$(c removed_ping '.error.code')" = -32601 ] || { show_records "$out"; fail "a modern ping is not -32601"; }
        [ "$(c listen '.error.code')" = -32602 ] || { show_records "$out"; fail "subscriptions/listen without its filter is not -32602"; }
        c listen '.error.message' | grep -q 'params.notifications' || fail "subscriptions/listen's message does not name params.notifications"
        [ "$(c modern_call '.result.resultType')" = '"complete"' ] || { show_records "$out"; fail "the modern call's result"; }
        [ "$(c initialize_after_modern '.error.code')" = -32600 ] || { show_records "$out"; fail "initialize after modern requests"; }
        # Only the good call reached the upstream, without the reserved
        # keys but with its progress token; the refusals are on record.
        [ "$(tap_in "$log" | jq -s '[.[] | select(.method == "tools/call")] | length')" -eq 1 ] ||
                { show_records "$log"; fail "a refused request reached the upstream"; }
        upstream_saw "$log" '.method == "tools/call" and .params._meta.progressToken == "p1" and (.params._meta | keys) == ["progressToken"]'
        audit_has '.event == "era_refused" and .reason == "unsupported_protocol_version" and .method == "tools/list"'
        audit_has '.event == "era_refused" and .reason == "invalid_params" and .method == "tools/call"'
        audit_has '.event == "era_refused" and .reason == "method_removed" and .method == "ping"'
        audit_has '.event == "era_refused" and .reason == "era_mixed" and .method == "initialize"'
}

@test "era: after initialize a 2026-07-28 request is refused -32600 and reaches no upstream; legacy requests go on" {
        local log out=$OUT/raw.jsonl
        log=$(upstream_dir)/ev.tap
        gr --upstream "ev=$PY,$TAP,$log,$NODE,$EVERYTHING,stdio" --allow 'ev.*' --audit-log "$AUDIT" \
                --read "$FIX" --write "$OUT" -- "$PY" "$RAW" --out "$out" legacy-first
        [ "$status" -eq 0 ] || { echo "$stderr" >&2; show_records "$out"; fail "glove run failed"; }
        jq -e -s 'any(.[]; .case == "modern_after_initialize" and .answer.error.code == -32600 and
                .answer.error.message == "modern request on a legacy session")' "$out" >/dev/null ||
                { show_records "$out"; fail "a modern request on a legacy session was not refused"; }
        jq -e -s 'any(.[]; .case == "legacy_call" and .answer.result.content[0].text == "Echo: raw" and (.answer.result | has("resultType") | not))' \
                "$out" >/dev/null || { show_records "$out"; fail "the legacy call after it"; }
        [ "$(tap_in "$log" | jq -s '[.[] | select(.method == "tools/call")] | length')" -eq 1 ] ||
                { show_records "$log"; fail "the refused modern request reached the upstream"; }
        audit_has '.event == "era_refused" and .reason == "era_mixed" and .method == "tools/call"'
        audit_lacks '.event == "call" and .decision == "deny"'
}

#!/usr/bin/env bats
# glove run: strings from the agent and from upstreams. JSON allows "\u0000"
# inside a string; wherever Glove reads such a string as text (a tool name,
# a cursor, a protocol version, "jsonrpc") the whole string counts, never the
# part before the NUL. Also: which entries of an upstream's tools/list are
# offered at all (docs/mcp-mediation.md, Upstreams), and the digest of
# arguments that are not an object. What reached the upstream is proven from
# its side (mcp-upstream.py --log).

load helpers
load lib/mcp

setup() { mcp_setup; }

# sha256_json JSON: SHA-256 of the compact, key-sorted encoding of JSON.
sha256_json() {
        "$PY" -c 'import hashlib, json, sys
print(hashlib.sha256(json.dumps(json.loads(sys.argv[1]), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest())' "$1"
}

@test "run: upstream tool names with NUL, control characters or '*', non-tool entries and names listed twice are never offered nor forwarded, and are audited" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/py.log
        # --page 4: the two "twin" entries arrive in different pages.
        local scenario
        scenario=$(cat <<'EOF'
[
 {"op":"list","count":10,"includes":["py.echo","py.sleep"],"excludes":["py.bad","py.twin","py.ctl","py.star","py.star*","py.echo\u0000x","py.bad\u0000hidden"]},
 {"op":"call","tool":"py.bad","args":{},"expect":"unknown_tool","code":-32602},
 {"op":"call","tool":"py.twin","args":{},"expect":"unknown_tool","code":-32602},
 {"op":"call","tool":"py.ctl","args":{},"expect":"unknown_tool"},
 {"op":"call","tool":"py.star*","args":{},"expect":"unknown_tool"},
 {"op":"call","tool":"py.bad\u0000hidden","args":{},"expect":"invalid_params","code":-32602},
 {"op":"call","tool":"py.echo","args":{"text":"still here"},"expect":"ok","text":"still here"}
]
EOF
)
        gr --upstream "py=$PY,$UPY,--log,$log,--odd-names,--page,4" --allow 'py.*' --audit-log "$AUDIT" \
                "${CLIENT[@]}" "$scenario"
        expect_client_pass
        # The names no rule could name, the entries that are no tool and both
        # twins are dropped (the list step counted 10 offered, none twice).
        audit_has '.event == "upstream_ready" and .name == "py" and .tools == 10'
        audit_has '.event == "tool_dropped" and .upstream == "py" and .tool == "bad\u0000hidden" and .tool_bytes == 10 and .reason == "invalid_name"'
        audit_has '.event == "tool_dropped" and .tool == "echo\u0000x" and .reason == "invalid_name"'
        audit_has '.event == "tool_dropped" and .tool == "ctl\u0001x" and .reason == "invalid_name"'
        audit_has '.event == "tool_dropped" and .tool == "star*" and .reason == "invalid_name"'
        audit_has '.event == "tool_dropped" and .tool_bytes == 129 and .reason == "invalid_name"'
        audit_has '.event == "tool_dropped" and .tool == null and .reason == "not_an_object"'
        audit_has '.event == "tool_dropped" and .tool == null and .reason == "invalid_name"' "the entry without a name"
        [ "$(jq -s '[.[] | select(.event == "tool_dropped" and .tool == "twin" and .reason == "duplicate_name")] | length' "$AUDIT")" = 2 ] ||
                { show_records "$AUDIT"; fail "expected one duplicate_name record for each copy of twin"; }
        [ "$(jq -s '[.[] | select(.event == "tool_dropped")] | length' "$AUDIT")" = 9 ] ||
                { show_records "$AUDIT"; fail "expected 9 tool_dropped records"; }
        audit_has '.event == "call" and .tool == "py.bad" and .decision == "deny" and .reason == "unknown_tool"'
        # Only echo reached the upstream.
        [ "$(tap_in "$log" | jq -c -s '[.[] | select(.method == "tools/call")] | map(.params.name)')" = '["echo"]' ] ||
                { show_records "$log"; fail "the upstream received other calls than echo"; }
}

@test "run: an upstream whose protocolVersion holds a NUL after a supported version is refused at start" {
        local d=$BATS_TEST_TMPDIR m
        m=$(mcp_marker)
        mkdir "$d/w"
        gr --upstream "bad=$PY,$UPY,--init,nul-version,$m" --write "$d/w" -- /bin/sh -c "touch $d/w/ran"
        expect_run_error 125
        [[ "$RUN_ERROR" == *"upstream bad"* ]] || fail "the error does not name the upstream"
        [ ! -e "$d/w/ran" ] || fail "the agent ran although the upstream's version is not one Glove speaks"
        no_leftovers "$m"
}

@test "run: an upstream's tools/list cursors go back to it exactly as given, NUL and all" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/py.log
        # 10 + 20 tools in pages of 7: four cursors "N\u0000mcp-upstream"; the
        # upstream refuses any other cursor.
        local scenario='[
 {"op":"list","count":30,"includes":["py.echo","py.pad0","py.pad19"]}
]'
        gr --upstream "py=$PY,$UPY,--log,$log,--tools,20,--page,7,--nul-cursor" --allow 'py.*' "${CLIENT[@]}" "$scenario"
        expect_client_pass
        [ "$(tap_in "$log" | jq -c -s '[.[] | select(.method == "tools/list") | .params.cursor]')" = \
                '[null,"7\u0000mcp-upstream","14\u0000mcp-upstream","21\u0000mcp-upstream","28\u0000mcp-upstream"]' ] ||
                { show_records "$log"; fail "the cursors Glove sent back are not the upstream's"; }
}

@test "run: NUL in jsonrpc, a cursor, a protocol version, a tool name or a cancelled id never passes for the text before it; arguments that are not an object are refused and digested" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/py.log
        gr --upstream "py=$PY,$UPY,--log,$log" --allow 'py.*' --audit-log "$AUDIT" --audit-arguments "${ADVERSARIAL[@]}" \
                bad-params nul-strings
        expect_adversarial_pass
        # Arguments present but not an object: refused with invalid_params
        # before the upstream, and the record digests them as given.
        local id args
        for id in p3 p4 p5; do
                args=$(jq -c -s --arg id "$id" '.[] | select(.event == "call" and .id == $id) | .arguments' "$AUDIT")
                [ -n "$args" ] || { show_records "$AUDIT"; fail "no call record for $id"; }
                audit_has '.event == "call" and .id == "'"$id"'" and .decision == "deny" and .reason == "invalid_params"
                        and .rule == "arguments must be an object" and .arguments_sha256 == "'"$(sha256_json "$args")"'"'
        done
        audit_has '.event == "call" and .id == "p4" and .arguments == "x"'
        audit_has '.event == "call" and .id == "p5" and has("arguments") and .arguments == null'
        audit_lacks '.event == "call" and (.arguments_sha256 | test("^[0-9a-f]{64}$") | not)' "a call record without a digest"
        audit_has '.event == "call" and .id == "n4" and .decision == "deny" and .reason == "invalid_params"'
        # Nothing but the one py.sleep of nul-strings reached the upstream.
        [ "$(tap_in "$log" | jq -c -s '[.[] | select(.method == "tools/call")] | map(.params.name)')" = '["sleep"]' ] ||
                { show_records "$log"; fail "the upstream received other calls than the sleep"; }
        upstream_never_saw "$log" '.method == "notifications/cancelled"'
}

@test "run: an agent line that may hold more than 100000 JSON values is refused before it is decoded; Glove keeps serving" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/py.log
        gr --upstream "py=$PY,$UPY,--log,$log" --allow 'py.*' --audit-log "$AUDIT" "${ADVERSARIAL[@]}" many-values
        expect_adversarial_pass
        upstream_never_saw "$log" '.method == "tools/call"'
}

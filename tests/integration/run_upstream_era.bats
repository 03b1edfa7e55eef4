#!/usr/bin/env bats
# Dual era on the upstream side (issue 23; docs/mcp-mediation.md, "Protocol
# revisions of upstreams"): in one `glove run`, a 2026-07-28-only upstream
# (tests/fixtures/interop/modern-server.mjs: @modelcontextprotocol/server
# 2.4.0, serveStdio with legacy: 'reject') beside a legacy one
# (server-everything), for a legacy agent (the v1 SDK,
# tests/agents/mcp-client.mjs) and a 2026-07-28 one (the v2 SDK,
# tests/fixtures/interop/modern-agent.mjs): both list the tools of both,
# call an allowed and a refused tool of each, and see a list_changed of the
# modern upstream; a multi round-trip request of the modern upstream is
# answered upstream_input_required (not relayed yet); the modern upstream
# gets the envelope (the capabilities initialize declared) on every request
# and never initialized, ping or logging/setLevel.

load helpers
load lib/mcp

setup() {
        mcp_setup
        FIX=${GLOVE_FIXTURES:?run the suite through tests/integration/run.sh (GLOVE_FIXTURES unset)}
        [ -r "$NODE_MODULES/@modelcontextprotocol/server/package.json" ] ||
                { echo "@modelcontextprotocol/server is missing from tests/node_modules: run scripts/deps.sh" >&2; return 1; }
        MLOG=$(upstream_dir)/mo.jsonl
        UPS=(--upstream "mo=$NODE,$FIX/interop/modern-server.mjs,--modules,$NODE_MODULES,--log,$MLOG" --upstream-ro "mo:$FIX"
             --upstream "ev=$NODE,$EVERYTHING,stdio"
             --allow 'mo.*' --allow-arg 'mo.read:/path=/data/' --allow 'ev.*' --deny ev.get-sum
             --upstream-allow mo:logging,elicitation --upstream-allow ev:logging --audit-log "$AUDIT")
}

# The checks on the audit and the modern upstream's wire common to both agents.
common_checks() {
        audit_has '.event == "upstream_ready" and .name == "mo" and .era == "modern" and .protocol_version == "2026-07-28"'
        audit_has '.event == "upstream_ready" and .name == "ev" and .era == "legacy"'
        audit_has '.event == "call" and .tool == "mo.echo" and .decision == "allow"'
        audit_has '.event == "call_result" and .tool == "mo.echo" and .upstream_status == "ok"'
        audit_has '.event == "call" and .tool == "mo.read" and .decision == "deny" and .reason == "policy_denied"'
        # input_required (not relayed yet): an error for the agent, on record.
        audit_has '.event == "upstream_input_required" and .upstream == "mo"'
        audit_has '.event == "call_result" and .tool == "mo.confirm" and .upstream_status == "error"'
        audit_has '.event == "call" and .tool == "ev.echo" and .decision == "allow"'
        audit_has '.event == "call" and .tool == "ev.get-sum" and .decision == "deny"'
        # initialize first, then the probe; every later request carries the
        # envelope with Glove's identity; nothing a 2026-07-28 server lacks.
        [ "$(jq -r -s '.[0].method + " " + .[1].method' "$MLOG")" = "initialize server/discover" ] ||
                { show_records "$MLOG"; fail "the modern upstream was not asked initialize, then server/discover"; }
        # clientCapabilities: exactly what initialize declared (the grant:
        # elicitation).
        jq -e -s '.[0].capabilities.elicitation != null and (.[0].capabilities as $c | [.[1:][]
                | select(.meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28"
                or .meta["io.modelcontextprotocol/clientCapabilities"] != $c
                or .meta["io.modelcontextprotocol/clientInfo"].name != "glove")] == [])' "$MLOG" >/dev/null ||
                { show_records "$MLOG"; fail "a request reached the modern upstream without the 2026-07-28 envelope"; }
        jq -e -s 'any(.[]; .method == "subscriptions/listen")' "$MLOG" >/dev/null || { show_records "$MLOG"; fail "no subscriptions/listen"; }
        jq -e -s 'any(.[]; .method == "tools/call" and .id != null)' "$MLOG" >/dev/null || fail "no tools/call reached the modern upstream"
        ! jq -e -s 'any(.[]; .method == "ping" or .method == "logging/setLevel" or .method == "notifications/initialized")' "$MLOG" \
                >/dev/null || { show_records "$MLOG"; fail "the modern upstream got a method 2026-07-28 does not have"; }
}

@test "upstream era: a legacy agent uses a 2026-07-28 upstream and a legacy one in one run" {
        local scenario='[
 {"op":"list","includes":["mo.echo","mo.read","mo.grow","ev.echo"],"excludes":["ev.get-sum","mo.grown"]},
 {"op":"call","tool":"mo.echo","args":{"message":"legacy"},"expect":"ok","text":"modern echo: legacy"},
 {"op":"call","tool":"mo.read","args":{"path":"/etc/passwd"},"expect":"policy_denied","code":-32001},
 {"op":"call","tool":"mo.read","args":{"path":"/data/x"},"expect":"ok","text":"read /data/x"},
 {"op":"call","tool":"ev.echo","args":{"message":"old"},"expect":"ok","text":"old"},
 {"op":"call","tool":"ev.get-sum","args":{"a":1,"b":2},"expect":"policy_denied","code":-32001},
 {"op":"call","tool":"mo.confirm","args":{},"expect":"upstream_input_required","code":-32603,"rule":"mo"},
 {"op":"call","tool":"mo.grow","args":{},"expect":"ok","text":"grew"},
 {"op":"wait_list_changed","timeout_ms":10000},
 {"op":"list","includes":["mo.grown","mo.echo","ev.echo"]},
 {"op":"call","tool":"mo.grown","args":{},"expect":"ok","text":"grown"},
 {"op":"set_level","level":"debug"}
]'
        gr "${UPS[@]}" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        common_checks
        # logging/setLevel went to the legacy upstream only (both are granted
        # logging and announce it).
        audit_has '.event == "logging_set_level" and .upstreams == ["ev"]'
}

@test "upstream era: a 2026-07-28 agent uses a 2026-07-28 upstream and a legacy one in one run" {
        local out=$OUT/modern.jsonl scenario='[
 {"op":"list","includes":["mo.echo","mo.read","mo.grow","ev.echo"],"excludes":["ev.get-sum","mo.grown"]},
 {"op":"call","tool":"mo.echo","args":{"message":"new"},"expect":"ok","text":"modern echo: new"},
 {"op":"call","tool":"mo.read","args":{"path":"/etc/passwd"},"expect":"policy_denied","code":-32001},
 {"op":"call","tool":"ev.echo","args":{"message":"old"},"expect":"ok","text":"old"},
 {"op":"call","tool":"ev.get-sum","args":{"a":1,"b":2},"expect":"policy_denied","code":-32001},
 {"op":"call","tool":"mo.confirm","args":{},"expect":"upstream_input_required","code":-32603},
 {"op":"call","tool":"mo.grow","args":{},"expect":"ok","text":"grew"},
 {"op":"wait_list_changed","timeout_ms":10000},
 {"op":"list","includes":["mo.grown"]}
]'
        gr "${UPS[@]}" --read "$NODE_MODULES" --read "$FIX" --write "$OUT" -- \
                "$NODE" "$FIX/interop/modern-agent.mjs" --modules "$NODE_MODULES" --out "$out" "$scenario"
        [ "$status" -eq 0 ] && ! grep -q '"pass":false' "$out" && grep -q '"step":"end".*"pass":true' "$out" ||
                { echo "$stderr" >&2; show_records "$out" "$AUDIT"; fail "the 2026-07-28 agent reported failed steps"; }
        common_checks
}

@test "upstream era: a 2026-07-28 upstream's resources are read; resources/subscribe of one is refused, its subscribe not announced" {
        local out=$OUT/features.jsonl
        gr "${UPS[@]}" --allow-resource 'mo:note://*' --read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" -- \
                "$NODE" "$AGENTS/features-client.mjs" "$NODE_MODULES" "$out" '[
 {"op":"capabilities","label":"caps"},
 {"op":"request","method":"resources/list","params":{},"label":"list"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://mo/note://a"},"label":"read"},
 {"op":"request","method":"resources/subscribe","params":{"uri":"glove://mo/note://a"},"label":"sub"}]'
        [ "$status" -eq 0 ] || { echo "$stderr" >&2; show_records "$out" "$AUDIT"; fail "glove run failed"; }
        [ "$(record "$out" caps '.result.resources | (type == "object" and (has("subscribe") | not))')" = true ] || { show_records "$out"; fail "resources.subscribe announced for a modern upstream"; }
        [ "$(record "$out" list '[.result.resources[].uri]')" = '["glove://mo/note://a"]' ] || { show_records "$out"; fail "resources/list"; }
        [ "$(record "$out" read '.result.contents[0].text')" = '"a modern note"' ] || { show_records "$out"; fail "resources/read"; }
        [ "$(record "$out" sub '[.error.code, .error.data.reason, .error.data.rule]')" = '[-32601,"upstream_not_supported","mo"]' ] ||
                { show_records "$out"; fail "resources/subscribe of a modern upstream's resource was not refused upstream_not_supported"; }
        audit_has '.event == "request" and .method == "resources/subscribe" and .decision == "deny" and .reason == "upstream_not_supported"'
        jq -e -s 'any(.[]; .method == "resources/read" and .meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28")' "$MLOG" >/dev/null ||
                { show_records "$MLOG"; fail "resources/read did not reach the modern upstream with the envelope"; }
        ! jq -e -s 'any(.[]; .method == "resources/subscribe")' "$MLOG" >/dev/null || fail "resources/subscribe reached the modern upstream"
}

#!/usr/bin/env bats
# Dual era on the upstream side (issue 23; docs/mcp-mediation.md, "Protocol
# revisions of upstreams"): in one `glove run`, a 2026-07-28-only upstream
# (tests/fixtures/interop/modern-server.mjs: @modelcontextprotocol/server
# 2.4.0, serveStdio with legacy: 'reject') beside a legacy one
# (server-everything), for a legacy agent (the v1 SDK,
# tests/agents/mcp-client.mjs) and a 2026-07-28 one (the v2 SDK,
# tests/fixtures/interop/modern-agent.mjs): both list the tools of both,
# call an allowed and a refused tool of each, and see a list_changed of the
# modern upstream; a multi round-trip request (input_required) of the
# modern upstream reaches the modern agent under policy and its retry comes
# back with the upstream's own requestState (docs/mcp-mediation.md, "Input
# requests"), while the legacy agent gets upstream_input_required; the
# modern upstream gets the envelope on every request (a call's
# clientCapabilities: what its agent declared, cut to the grant) and never
# initialized, ping or logging/setLevel.

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
        audit_has '.event == "call" and .tool == "ev.echo" and .decision == "allow"'
        audit_has '.event == "call" and .tool == "ev.get-sum" and .decision == "deny"'
        # initialize first, then the probe; every later request carries the
        # envelope with Glove's identity; nothing a 2026-07-28 server lacks.
        [ "$(jq -r -s '.[0].method + " " + .[1].method' "$MLOG")" = "initialize server/discover" ] ||
                { show_records "$MLOG"; fail "the modern upstream was not asked initialize, then server/discover"; }
        # clientCapabilities: Glove's own requests (listing, listen) carry
        # what initialize declared (the grant: elicitation); the agent's
        # calls carry CALL_CAPS, what the agent declared cut to the grant.
        jq -e -s --argjson cc "$CALL_CAPS" '.[0].capabilities.elicitation != null and (.[0].capabilities as $c | [.[1:][]
                | select(.meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28"
                or .meta["io.modelcontextprotocol/clientCapabilities"] != (if .method == "tools/call" then $cc else $c end)
                or .meta["io.modelcontextprotocol/clientInfo"].name != "glove")] == [])' "$MLOG" >/dev/null ||
                { show_records "$MLOG"; fail "a request reached the modern upstream without the 2026-07-28 envelope it should have"; }
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
 {"op":"call","tool":"pm.mrtr","args":{},"expect":"upstream_input_required","code":-32603,"rule":"pm"},
 {"op":"call","tool":"mo.grow","args":{},"expect":"ok","text":"grew"},
 {"op":"wait_list_changed","timeout_ms":10000},
 {"op":"list","includes":["mo.grown","mo.echo","ev.echo"]},
 {"op":"call","tool":"mo.grown","args":{},"expect":"ok","text":"grown"},
 {"op":"set_level","level":"debug"}
]'
        # pm (tests/agents/mcp-upstream.py, 2026-07-28) asks roots/list in
        # its mrtr tool's input_required whatever the client declared.
        gr "${UPS[@]}" --upstream "pm=$PY,$UPY,--era,modern" --allow 'pm.*' --upstream-allow pm:roots "${CLIENT[@]}" "$scenario"
        expect_client_pass
        # A legacy agent's calls declare nothing to a modern upstream: an
        # input_required result could not be answered (not translated), so
        # one that comes anyway is an error for the agent, on record.
        CALL_CAPS='{}' common_checks
        audit_has '.event == "client_request" and .upstream == "pm" and .decision == "deny" and .reason == "agent_legacy"'
        audit_has '.event == "call_result" and .tool == "pm.mrtr" and .upstream_status == "error"'
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
 {"op":"call","tool":"mo.confirm","args":{},"expect":"ok","text":"confirmed: {\"ok\":true}"},
 {"op":"call","tool":"pm.mrtr","args":{},"expect":"policy_denied","code":-32001},
 {"op":"call","tool":"mo.grow","args":{},"expect":"ok","text":"grew"},
 {"op":"wait_list_changed","timeout_ms":10000},
 {"op":"list","includes":["mo.grown"]}
]'
        # The agent declares elicitation (and answers it in the SDK's own
        # input_required round); the grant is logging and elicitation. pm
        # (tests/agents/mcp-upstream.py, 2026-07-28) asks roots/list in
        # its mrtr tool's input_required whatever the client declared.
        gr "${UPS[@]}" --upstream "pm=$PY,$UPY,--era,modern" --allow 'pm.*' --read "$NODE_MODULES" --read "$FIX" --write "$OUT" -- \
                "$NODE" "$FIX/interop/modern-agent.mjs" --modules "$NODE_MODULES" --out "$out" --elicit '{"ok":true}' "$scenario"
        [ "$status" -eq 0 ] && ! grep -q '"pass":false' "$out" && grep -q '"step":"end".*"pass":true' "$out" ||
                { echo "$stderr" >&2; show_records "$out" "$AUDIT"; fail "the 2026-07-28 agent reported failed steps"; }
        CALL_CAPS='{"elicitation":{"form":{}}}' common_checks
        # The elicitation was allowed, on record; the retry reached the
        # upstream with its own requestState and the answer asked for.
        audit_has '.event == "client_request" and .upstream == "mo" and .method == "elicitation/create" and .key == "ok"
                and .decision == "allow" and .era == "2026-07-28"'
        audit_has '.event == "input_responses" and .upstream == "mo" and .keys == ["ok"] and .dropped == []'
        jq -e -s 'any(.[]; .method == "tools/call" and .requestState == "round-1" and .inputResponses.ok.content.ok == true)' \
                "$MLOG" >/dev/null || { show_records "$MLOG"; fail "the retry did not reach the upstream with its own requestState"; }
        # A roots request the policy does not grant pm: refused, the same
        # client_request record a legacy upstream's request gets.
        audit_has '.event == "client_request" and .upstream == "pm" and .method == "roots/list"
                and .decision == "deny" and .reason == "policy_denied"'
}

@test "upstream era: a retry's requestState is Glove's seal: altered, moved to another tool or left out, it is refused; undeclared input is refused" {
        local out=$OUT/raw.jsonl
        gr "${UPS[@]}" --upstream "pm=$PY,$UPY,--era,modern" --allow 'pm.*' --upstream-allow pm:roots \
                --read "$FIX" --write "$OUT" -- "$PY" "$FIX/interop/era-raw.py" --out "$out" mrtr
        [ "$status" -eq 0 ] || { echo "$stderr" >&2; show_records "$out"; fail "glove run failed"; }
        c() { jq -c --arg c "$1" "select(.case == \$c) | .answer | $2" "$out"; }
        [ "$(c first '.result.resultType')" = '"input_required"' ] || { show_records "$out" "$AUDIT"; fail "no input_required"; }
        [ "$(c first '.result.inputRequests.ok.method')" = '"elicitation/create"' ] || fail "the input request is not relayed as it is"
        # The upstream's "round-1" never reaches the agent: Glove's seal does.
        c first '.result.requestState' | grep -q '^"glove1\.' || { show_records "$out"; fail "the requestState is not Glove's seal"; }
        local k
        for k in tampered other_tool no_state not_object; do
                [ "$(c "$k" '.error.code')" = -32602 ] || { show_records "$out"; fail "$k: not refused -32602"; }
        done
        [ "$(c good '.result.content[0].text')" = '"confirmed: {\"ok\":true}"' ] || { show_records "$out" "$MLOG"; fail "the good retry"; }
        # Only the first call and the good retry reached the upstream; the
        # retry with the upstream's own state, without the key it never asked.
        [ "$(jq -s '[.[] | select(.method == "tools/call")] | length' "$MLOG")" -eq 2 ] ||
                { show_records "$MLOG"; fail "a refused retry reached the upstream"; }
        jq -e -s 'any(.[]; .method == "tools/call" and .requestState == "round-1" and (.inputResponses | keys) == ["ok"])' "$MLOG" \
                >/dev/null || { show_records "$MLOG"; fail "the upstream got a state or an answer it never asked for"; }
        audit_has '.event == "input_responses" and .keys == ["ok"] and .dropped == ["evil"]'
        audit_has '.event == "call" and .tool == "mo.echo" and .decision == "deny" and .rule == "params.requestState"'
        audit_has '.event == "era_refused" and .rule == "params.requestState"'
        # roots/list granted to pm but not declared by the agent's request.
        [ "$(c undeclared '[.error.code, .error.data.reason, .error.data.rule]')" = '[-32603,"agent_unsupported","agent capability roots"]' ] ||
                { show_records "$out"; fail "an input request the agent did not declare was not refused"; }
        audit_has '.event == "client_request" and .upstream == "pm" and .method == "roots/list" and .decision == "deny"
                and .reason == "agent_unsupported"'
        # A requestState holding U+0000 is sealed and comes back whole.
        [ "$(c nul_retry '.result.content[0].text')" = '"mrtr done: \"\\u0000x\" file:///nul"' ] ||
                { show_records "$out"; fail "a requestState holding U+0000 did not survive its seal"; }
}

@test "upstream era: a legacy agent's input requests are translated; cancelling its call cancels them; one too large to keep is not" {
        local out=$OUT/raw.jsonl
        gr --upstream "pm=$PY,$UPY,--era,modern" --allow 'pm.*' --upstream-allow pm:roots --audit-log "$AUDIT" --max-frame 8MiB \
                --read "$FIX" --write "$OUT" -- "$PY" "$FIX/interop/era-raw.py" --out "$out" translate
        [ "$status" -eq 0 ] || { echo "$stderr" >&2; show_records "$out"; fail "glove run failed"; }
        c() { jq -c --arg c "$1" "select(.case == \$c) | .answer | $2" "$out"; }
        # Glove asked roots/list itself and retried with the agent's answer
        # and the upstream's own state.
        [ "$(c asked '.method')" = '"roots/list"' ] || { show_records "$out" "$AUDIT"; fail "the agent was not asked roots/list"; }
        [ "$(c translated '.result.content[0].text')" = '"mrtr done: \"s\" file:///answered"' ] ||
                { show_records "$out" "$AUDIT"; fail "the translated call did not complete with the agent's answer"; }
        audit_has '.event == "input_responses" and .upstream == "pm" and .translated == true and .keys == ["q"]'
        # Cancelled: Glove's own request is cancelled too, on record.
        [ "$(c cancelled_input '[.method, .params.requestId]')" = "[\"notifications/cancelled\",$(c asked_again '.id')]" ] ||
                { show_records "$out" "$AUDIT"; fail "the open roots/list was not cancelled with the call"; }
        audit_has '.event == "client_result" and .method == "roots/list" and .status == "cancelled"'
        # Too large to keep for translation (over 1 MiB): declared nothing,
        # so the upstream's input_required is an error, on record why.
        [ "$(c too_large '.error.data.reason')" = '"upstream_input_required"' ] || { show_records "$out"; fail "the large call"; }
        audit_has '.event == "client_request" and .upstream == "pm" and .decision == "deny" and .reason == "translation_budget"'
        # 64 relay slots: the 65th round finds no room and is denied on
        # record, never recorded as allowed (red-team finding).
        [ "$(c no_room '.error.data.reason')" = '"too_many_requests"' ] || { show_records "$out"; fail "no too_many_requests"; }
        [ "$(c asked_at_once '.')" -eq 64 ] || { show_records "$out"; fail "not 64 roots/list at once"; }
        audit_has '.event == "client_request" and .decision == "deny" and .reason == "too_many_requests" and .rule == "in-flight bound 64"'
        [ "$(jq -s '[.[] | select(.event == "client_request" and .decision == "allow" and .method == "roots/list")] | length' "$AUDIT")" -eq 66 ] ||
                fail "allow records for input requests never relayed (want 66: 2 before, 64 at once)"
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

@test "upstream era: over the endpoints, agents of both eras use a 2026-07-28 upstream and a legacy one in one run" {
        # One glove run, one contained agent process that opens four
        # sessions in turn: legacy and 2026-07-28, over HTTP and through the
        # in-sandbox command, each calling both upstreams' echo tools.
        gr --mcp-endpoint http,command "${UPS[@]}" --read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" -- \
                "$NODE" "$AGENTS/mcp-modern-client.mjs" --modules "$NODE_MODULES" --out "$CLIENT_OUT" \
                'call:http,pin,mo.echo,h-new,modern echo: h-new' 'call:http,legacy,mo.echo,h-old,modern echo: h-old' \
                'call:http,pin,ev.echo,h-new2,h-new2' 'call:http,legacy,ev.echo,h-old2,h-old2' \
                'call:command,pin,mo.echo,c-new,modern echo: c-new' 'call:command,legacy,mo.echo,c-old,modern echo: c-old' \
                'call:command,pin,ev.echo,c-new2,c-new2' 'call:command,legacy,ev.echo,c-old2,c-old2' \
                'call:http,legacy+elicit,mo.confirm,-,confirmed: {"ok":true}' 'call:command,legacy+elicit,mo.confirm,-,confirmed: {"ok":true}' \
                'call:http,pin+elicit,mo.confirm,-,confirmed: {"ok":true}' \
                'changes:http,pin,mo.grow' 'changes:command,pin,mo.grow' 'changes:http,legacy,mo.grow'
        expect_client_pass
        [ "$(grep -c '"era":"modern","version":"2026-07-28"' "$CLIENT_OUT")" -eq 5 ] || { show_records "$CLIENT_OUT"; fail "not five modern sessions"; }
        [ "$(grep -c '"era":"legacy","version"' "$CLIENT_OUT")" -eq 6 ] || { show_records "$CLIENT_OUT"; fail "not six legacy sessions"; }
        # The tools list change reached each kind of session: the modern
        # ones on their subscriptions/listen (over HTTP, an SSE answer).
        [ "$(grep -c '"step":"changes:.*"pass":true,"era":"modern"' "$CLIENT_OUT")" -eq 2 ] || { show_records "$CLIENT_OUT"; fail "a modern session heard of no change"; }
        [ "$(grep -c '"step":"changes:.*"pass":true,"era":"legacy"' "$CLIENT_OUT")" -eq 1 ] || { show_records "$CLIENT_OUT"; fail "the legacy session heard of no change"; }
        audit_has '.event == "listen" and .phase == "open" and .honoured == {"toolsListChanged":true}'
        audit_has '.event == "listen" and .phase == "close" and .how == "cancelled"'
        # mo.confirm's elicitation: relayed to the modern session, and
        # translated for the legacy ones (Glove asked them elicitation/create
        # and retried with their answer and the upstream's requestState).
        [ "$(jq -s '[.[] | select(.method == "tools/call" and .requestState == "round-1" and .inputResponses.ok.content.ok == true)] | length' \
                "$MLOG")" -eq 3 ] || { show_records "$MLOG" "$AUDIT"; fail "not three retries of mo.confirm with the answer and the state"; }
        [ "$(jq -s '[.[] | select(.event == "input_responses" and .translated == true and .keys == ["ok"])] | length' "$AUDIT")" -eq 2 ] ||
                fail "not two translated retries on record"
        audit_has '.event == "client_request" and .upstream == "mo" and .method == "elicitation/create" and .decision == "allow" and .era == "legacy"'
        audit_has '.event == "client_result" and .upstream == "mo" and .method == "elicitation/create" and .status == "ok"'
        [ "$(jq -s '[.[] | select(.event == "call" and .decision == "allow" and .tool == "mo.echo")] | length' "$AUDIT")" -eq 4 ] ||
                fail "mo.echo was not called four times"
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "ev.echo" and .upstream_status == "ok")] | length' "$AUDIT")" -eq 4 ] ||
                fail "ev.echo did not answer four times"
        # The modern upstream got every call with the 2026-07-28 envelope
        # (the four echoes, mo.confirm twice for each of three sessions, and
        # the three mo.grow).
        [ "$(jq -s '[.[] | select(.method == "tools/call" and .meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28")] | length' \
                "$MLOG")" -eq 13 ] || { show_records "$MLOG"; fail "the modern upstream did not get thirteen enveloped calls"; }
}

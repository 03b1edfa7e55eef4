#!/usr/bin/env bats
# glove run: server-to-client features under policy (docs/mcp-mediation.md,
# "Client features"). The agent is an SDK client
# (tests/agents/features-agent.mjs) that logs every message Glove sends it;
# the upstreams are server-everything and tests/agents/features-upstream.py,
# which log what they receive.

load helpers
load lib/mcp

setup() {
        mcp_setup
        AGENT_OUT=$OUT/agent.jsonl
        FUP=$AGENTS/features-upstream.py
        LOG=$(upstream_dir)/fx.log
}

# fagent [AGENT-OPTION...] SCENARIO: the agent's part of a glove run line.
fagent() {
        FAGENT=(--read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" -- "$NODE" "$AGENTS/features-agent.mjs"
                --modules "$NODE_MODULES" --out "$AGENT_OUT" "$@")
}

# agent_is JQ: the agent's records (an array) satisfy JQ.
agent_is() {
        jq -e -s "$1" "$AGENT_OUT" >/dev/null || { show_records "$AGENT_OUT" "$AUDIT"; fail "the agent's records do not satisfy: $1"; }
}

# step N JQ: JQ of the agent's record of step N.
step() { jq -c -s ".[] | select(.rec == \"step\" and .step == $1) | $2" "$AGENT_OUT"; }

expect_agent_end() {
        [ "$status" -eq 0 ] && grep -q '"rec":"end"' "$AGENT_OUT" 2>/dev/null ||
                { echo "$stderr" >&2; show_records "$AGENT_OUT" "$AUDIT"; fail "glove run or the agent did not finish (status $status)"; }
}

# The initialize the upstream received.
upstream_init() { tap_in "$LOG" | jq -c 'select(.method == "initialize") | .params.capabilities'; }

ASK_SAMPLING='{"op":"call","tool":"fx.ask","args":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}}'

@test "run client: sampling without a grant is answered by Glove (policy_denied), never reaches the agent, and is not declared upstream" {
        fagent --caps '{"sampling":{}}' "[$ASK_SAMPLING]"
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --allow 'fx.*' --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        # The upstream got Glove's error, with the upstream's own id.
        [ "$(step 1 '.text | fromjson | .error.data.reason')" = '"policy_denied"' ] || fail "not denied: $(step 1 .text)"
        [ "$(step 1 '.text | fromjson | .error.code')" = -32601 ] || fail "not -32601"
        agent_is 'all(.[]; .rec != "request")'
        [ "$(upstream_init)" = '{}' ] || fail "Glove declared capabilities without a grant: $(upstream_init)"
        audit_has '.event == "client_request" and .upstream == "fx" and .method == "sampling/createMessage" and .decision == "deny" and .reason == "policy_denied" and .id == 1000'
}

@test "run client: allowed sampling round-trips: the agent sees a glove- id, the upstream its own id back; both directions audited" {
        fagent --caps '{"sampling":{}}' "[$ASK_SAMPLING]"
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --allow 'fx.*' --upstream-allow fx:sampling --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        [ "$(step 1 '.text | fromjson | .result.content.text')" = '"sampled by the agent"' ] || fail "no sampling result: $(step 1 .text)"
        agent_is '[.[] | select(.rec == "request")] | length == 1 and (.[0].method == "sampling/createMessage") and (.[0].id | test("^glove-[0-9]+$"))'
        local gid
        gid=$(jq -r -s '.[] | select(.rec == "request") | .id' "$AGENT_OUT")
        upstream_saw "$LOG" '.id == 1000 and .result.model == "agent-model"'
        [ "$(upstream_init)" = '{"sampling":{}}' ] || fail "declared: $(upstream_init)"
        audit_has '.event == "client_request" and .decision == "allow" and .id == 1000 and .glove_id == "'"$gid"'"'
        audit_has '.event == "client_result" and .status == "ok" and .id == 1000 and .glove_id == "'"$gid"'" and (.latency_us | type == "number")'
}

@test "run client: an allowed request the agent did not declare is answered agent_unsupported and never reaches it" {
        fagent --caps '{}' "[$ASK_SAMPLING]"
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --allow 'fx.*' --upstream-allow fx:sampling --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        [ "$(step 1 '.text | fromjson | .error.data.reason')" = '"agent_unsupported"' ] || fail "$(step 1 .text)"
        agent_is 'all(.[]; .rec != "request")'
        audit_has '.event == "client_request" and .decision == "deny" and .reason == "agent_unsupported"'
        audit_lacks '.event == "client_request" and .decision == "allow"'
}

@test "run client: requests the agent never answers time out (agent_timeout, cancelled to the agent) and free their slots; the bound holds" {
        # 65 at once: the 65th is over the bound of 64. Then (once the
        # requests' own timeouts, just after their tools/calls', are past)
        # 64 more: every slot of the first batch was freed by its timeout.
        local ask='{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}'
        fagent --caps '{"sampling":{}}' --no-answer '[
 {"op":"parallel","n":65,"tool":"fx.ask","args":'"$ask"',"timeout_ms":30000},
 {"op":"sleep","ms":700},
 {"op":"parallel","n":64,"tool":"fx.ask","args":'"$ask"',"timeout_ms":30000},
 {"op":"sleep","ms":700}]'
        gr --call-timeout 1500 --upstream "fx=$PY,$FUP,--log,$LOG" --allow 'fx.*' --upstream-allow fx:sampling --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        [ "$(jq -s '[.[] | select(.event == "client_request" and .decision == "deny" and .reason == "too_many_requests")] | length' "$AUDIT")" -eq 1 ] ||
                fail "expected exactly one request over the bound"
        [ "$(jq -s '[.[] | select(.event == "client_result" and .status == "timeout")] | length' "$AUDIT")" -eq 128 ] ||
                { show_records "$AUDIT"; fail "expected 128 timed out requests"; }
        # The upstream was answered agent_timeout; the agent was told each
        # of its requests is cancelled, by Glove's id.
        [ "$(tap_in "$LOG" | jq -s '[.[] | select(.error.data.reason == "agent_timeout" and .error.code == -32003)] | length')" -eq 128 ] ||
                fail "the upstream did not get 128 agent_timeout errors"
        agent_is '([.[] | select(.rec == "request") | .id] | sort) == ([.[] | select(.rec == "notification" and .method == "notifications/cancelled") | .params.requestId] | sort)'
        agent_is '[.[] | select(.rec == "request")] | length == 128'
}

@test "run client: server-everything: the client capabilities Glove declares follow the grant (its sampling, elicitation and roots tools appear); roots round-trip and list_changed is relayed" {
        local tap=$(upstream_dir)/ev.tap
        fagent --caps '{"sampling":{},"roots":{"listChanged":true}}' '[
 {"op":"list"},
 {"op":"call","tool":"ev.trigger-sampling-request","args":{"prompt":"hello"}},
 {"op":"call","tool":"ev.get-roots-list"},
 {"op":"roots_changed"},
 {"op":"sleep","ms":600}]'
        gr --upstream "ev=$PY,$TAP,$tap,$NODE,$EVERYTHING,stdio" --allow 'ev.*' --upstream-allow ev:sampling,roots,elicitation \
                --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        [ "$(tap_in "$tap" | jq -c 'select(.method == "initialize") | .params.capabilities')" = \
          '{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}' ] || { show_records "$tap"; fail "declared capabilities"; }
        step 1 '.tools' | jq -e 'index("ev.trigger-sampling-request") and index("ev.get-roots-list") and index("ev.trigger-elicitation-request")' >/dev/null ||
                fail "the conditional tools are missing: $(step 1 .tools)"
        step 2 '.text' | grep -q 'sampled by the agent' || fail "sampling: $(step 2 .text)"
        step 3 '.text' | grep -q 'file:///agent-root' || fail "roots: $(step 3 .text)"
        # roots/list once at start, once more after the agent's list_changed.
        agent_is '[.[] | select(.rec == "request" and .method == "roots/list")] | length == 2'
        upstream_saw "$tap" '.method == "notifications/roots/list_changed"'
        audit_has '.event == "client_notification" and .method == "notifications/roots/list_changed" and .to == ["ev"]'

        # Without the grant: nothing declared, the three tools hidden.
        rm -f "$AGENT_OUT" "$tap"
        fagent --caps '{"sampling":{},"roots":{}}' '[{"op":"list"}]'
        gr --upstream "ev=$PY,$TAP,$tap,$NODE,$EVERYTHING,stdio" --allow 'ev.*' "${FAGENT[@]}"
        expect_agent_end
        [ "$(tap_in "$tap" | jq -c 'select(.method == "initialize") | .params.capabilities')" = '{}' ] || fail "declared without a grant"
        step 1 '.tools' | jq -e 'index("ev.trigger-sampling-request") == null and index("ev.get-roots-list") == null' >/dev/null ||
                fail "conditional tools without a grant"
        agent_is 'all(.[]; .rec != "request")'
}

@test "run client: logging: setLevel reaches every upstream that offers it and is granted, and their messages reach the agent named by upstream" {
        local log2=$(upstream_dir)/fy.log
        fagent '[
 {"op":"set_level","level":"debug"},
 {"op":"call","tool":"fx.log","args":{"data":"from fx"}},
 {"op":"call","tool":"fy.log","args":{"data":"from fy"}},
 {"op":"call","tool":"fz.log","args":{"data":"from fz"}},
 {"op":"wait","method":"notifications/message","timeout_ms":2000},
 {"op":"sleep","ms":300}]'
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --upstream "fy=$PY,$FUP,--log,$log2" --upstream "fz=$PY,$FUP" \
                --allow 'fx.*' --allow 'fy.*' --allow 'fz.*' --upstream-allow fx:logging --upstream-allow fy:logging --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result.capabilities.logging == {}'
        [ "$(step 1 .result)" = '{}' ] || fail "setLevel: $(step 1 .)"
        upstream_saw "$LOG" '.method == "logging/setLevel" and .params.level == "debug"'
        upstream_saw "$log2" '.method == "logging/setLevel" and .params.level == "debug"'
        agent_is '[.[] | select(.rec == "notification" and .method == "notifications/message") | .params] | (map(.logger) | sort) == ["fx.fx", "fy.fx"] and (map(.data) | sort) == ["from fx", "from fy"]'
        audit_has '.event == "logging_set_level" and .level == "debug" and .upstreams == ["fx", "fy"]'
}

@test "run client: logging without a grant: not announced, setLevel is method not found, messages never reach the agent" {
        fagent '[
 {"op":"set_level","level":"debug"},
 {"op":"call","tool":"fx.log","args":{"data":"from fx"}},
 {"op":"sleep","ms":400}]'
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --allow 'fx.*' --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result.capabilities | has("logging") | not'
        [ "$(step 1 .error.code)" = -32601 ] || fail "setLevel: $(step 1 .)"
        upstream_never_saw "$LOG" '.method == "logging/setLevel"'
        agent_is 'all(.[]; .method != "notifications/message")'
}

@test "run client: setLevel answers the first upstream error" {
        fagent '[{"op":"set_level","level":"fail"}]'
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --allow 'fx.*' --upstream-allow fx:logging --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        [ "$(step 1 .error.code)" = -32602 ] || fail "setLevel: $(step 1 .)"
}

@test "run client: a log flood while the agent does not read is dropped past the notification bound; the run goes on" {
        # About 72 MB of notifications/message (over the 64 MiB agent
        # backlog that fails a run) while the agent reads nothing until the
        # upstream has written them all.
        local done=$(upstream_dir)/flood.done
        fagent '[{"op":"quiet"},
 {"op":"call","tool":"fx.log","args":{"n":18,"pad":4000000,"done":"'"$done"'"},"stall_until":"'"$done"'","timeout_ms":120000},
 {"op":"call","tool":"fx.echo","args":{"text":"still here"}},
 {"op":"count"}]'
        gr --upstream "fx=$PY,$FUP" --allow 'fx.*' --upstream-allow fx:logging --audit-log "$AUDIT" --read "$(upstream_dir)" "${FAGENT[@]}"
        expect_agent_end
        [ "$(step 2 .text)" = '"logged"' ] || fail "the flooding call: $(step 2 .)"
        [ "$(step 3 .text)" = '"still here"' ] || fail "after the flood: $(step 3 .)"
        local n
        n=$(step 4 .log_messages)
        [ "$n" -gt 0 ] && [ "$n" -lt 18 ] || fail "expected some but not all of the 18 messages, got $n"
        audit_has '.event == "notification_dropped" and .from == "fx" and .method == "notifications/message" and .reason == "agent_backlog"'
}

@test "run client: instructions are relayed, with the upstream's name, only when granted" {
        fagent '[]'
        gr --upstream "fx=$PY,$FUP,--instructions,Call fx.echo first" --upstream "fy=$PY,$FUP,--instructions,Secret fy text" \
                --upstream-allow fx:instructions "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result.instructions | (contains("upstream fx") and contains("Call fx.echo first") and (contains("Secret fy text") | not))'
        rm -f "$AGENT_OUT"
        gr --upstream "fx=$PY,$FUP,--instructions,Call fx.echo first" "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result | has("instructions") | not'
}

@test "run client: initialize: the version asked for when Glove speaks it, else its latest" {
        fagent --version 2025-03-26 '[]'
        gr --upstream "fx=$PY,$FUP" "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result.protocolVersion == "2025-03-26"'
        rm -f "$AGENT_OUT"
        fagent --version 2031-01-01 '[]'
        gr --upstream "fx=$PY,$FUP" "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result.protocolVersion == "2025-11-25"'
}

@test "run client: initialize announces tools.listChanged only when an upstream has it, logging only when offered and granted" {
        fagent '[]'
        gr --upstream "fx=$PY,$FUP,--bare" --upstream-allow fx:logging "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result.capabilities == {"tools":{}}'
        rm -f "$AGENT_OUT"
        gr --upstream "fx=$PY,$FUP,--bare" --upstream "fy=$PY,$FUP" --upstream-allow fy:logging "${FAGENT[@]}"
        expect_agent_end
        agent_is '.[] | select(.rec == "init") | .result.capabilities == {"tools":{"listChanged":true},"logging":{}}'
}

@test "run client: tools/list_changed of an upstream re-lists it (a new tool appears, a bad one is dropped) and tells the agent" {
        fagent '[
 {"op":"list"},
 {"op":"call","tool":"fx.grow"},
 {"op":"wait","method":"notifications/tools/list_changed"},
 {"op":"list"},
 {"op":"call","tool":"fx.extra"}]'
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --allow 'fx.*' --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        step 1 .tools | jq -e 'index("fx.extra") == null' >/dev/null || fail "extra before grow"
        step 4 .tools | jq -e 'index("fx.extra") != null and (map(test("bad")) | any | not)' >/dev/null || fail "after grow: $(step 4 .tools)"
        [ "$(step 5 .text)" = '"extra"' ] || fail "fx.extra: $(step 5 .)"
        [ "$(tap_in "$LOG" | jq -s '[.[] | select(.method == "tools/list")] | length')" -eq 2 ] || fail "not re-listed"
        audit_has '.event == "tool_dropped" and .upstream == "fx" and .tool == "bad\u0001name" and .reason == "invalid_name"'
}

@test "run client: resources and prompts list_changed are relayed from an upstream that announced them, not from one that did not" {
        fagent '[
 {"op":"call","tool":"fx.notify","args":{"method":"notifications/resources/list_changed"}},
 {"op":"call","tool":"fx.notify","args":{"method":"notifications/prompts/list_changed"}},
 {"op":"call","tool":"fy.notify","args":{"method":"notifications/resources/list_changed"}},
 {"op":"sleep","ms":300}]'
        gr --upstream "fx=$PY,$FUP" --upstream "fy=$PY,$FUP,--bare" --allow 'fx.*' --allow 'fy.*' "${FAGENT[@]}"
        expect_agent_end
        agent_is '[.[] | select(.rec == "notification") | .method] == ["notifications/resources/list_changed", "notifications/prompts/list_changed"]'
}

@test "run client: the policy file grants client features per upstream; bad grants are refused with stable codes" {
        local pf=$BATS_TEST_TMPDIR/policy.json
        echo '{"version":1,"allow":["fx.*"],"upstreams":{"fx":{"client":{"sampling":true,"logging":false}}}}' >"$pf"
        fagent --caps '{"sampling":{}}' "[$ASK_SAMPLING]"
        gr --upstream "fx=$PY,$FUP,--log,$LOG" --policy "$pf" --audit-log "$AUDIT" "${FAGENT[@]}"
        expect_agent_end
        [ "$(step 1 '.text | fromjson | .result.content.text')" = '"sampled by the agent"' ] || fail "$(step 1 .text)"
        [ "$(upstream_init)" = '{"sampling":{}}' ] || fail "declared: $(upstream_init)"
        audit_has '.event == "launch" and .tool_policy.client == {"fx":["sampling"]}'

        local doc code
        for doc in '{"version":1,"upstreams":{"fx":{"client":{"sampling":1}}}}=policy.wrong_type' \
                   '{"version":1,"upstreams":{"fx":{"client":{"smell":true}}}}=policy.unknown_field' \
                   '{"version":1,"upstreams":{"fx":{"other":{}}}}=policy.unknown_field' \
                   '{"version":1,"upstreams":{"fx":{"sandbox":{"read":[]}}}}=policy.unknown_field' \
                   '{"version":1,"upstreams":{"nope":{"client":{"roots":true}}}}=policy.unknown_upstream'; do
                code=${doc##*=}
                echo "${doc%=*}" >"$pf"
                gr --upstream "fx=$PY,$FUP" --policy "$pf" -- /bin/true
                expect_run_error 125
                [ "$(run_error_code)" = "$code" ] || fail "${doc%=*}: expected $code, got: $RUN_ERROR"
        done
        gr --upstream "fx=$PY,$FUP" --upstream-allow fx:smell -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = policy.bad_client_rule ] || fail "$RUN_ERROR"
        gr --upstream "fx=$PY,$FUP" --upstream-allow nope:sampling -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = policy.unknown_upstream ] || fail "$RUN_ERROR"
}

#!/usr/bin/env bats
# glove run: calls over time. Progress, cancellation, timeouts, an upstream
# that crashes, and two upstreams where one is slow. The agent is the SDK
# client (tests/agents/mcp-client.mjs); what each upstream received is logged
# on its side (tests/agents/mcp-tap.py, or mcp-upstream.py --log).

load helpers
load lib/mcp

setup() { mcp_setup; }

# tap_id LOG JQ-FILTER: the id of the tools/call the upstream received that
# matches the filter.
tap_id() { tap_in "$1" | jq -c "select(.method == \"tools/call\" and ($2)) | .id"; }

@test "run: progress is relayed with the agent's token; cancellation reaches the upstream with the upstream's request id" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/ev.tap
        # server-everything's trigger-long-running-operation sends one
        # progress notification per step when the call carries a progressToken.
        local scenario='[
 {"op":"call","tool":"ev.trigger-long-running-operation","args":{"duration":0.3,"steps":3},"progress":3,"expect":"ok","text":"Long running operation completed"},
 {"op":"call","tool":"ev.trigger-long-running-operation","args":{"duration":4,"steps":2},"cancel_after_ms":250,"expect":"cancelled","quiet_ms":250},
 {"op":"call","tool":"ev.echo","args":{"message":"after the cancel"},"expect":"ok","text":"after the cancel"}
]'
        gr --upstream "ev=$PY,$TAP,$log,$NODE,$EVERYTHING,stdio" --allow 'ev.*' --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass

        # Progress: the upstream got the agent's token and its notifications
        # came back to the agent (the client checked every one carried it).
        local token
        token=$(record "$CLIENT_OUT" 1 .progress_token)
        upstream_saw "$log" '.method == "tools/call" and .params._meta.progressToken == '"$token"
        [ "$(sed -n 's/^< //p' "$log" | jq -s '[.[] | select(.method == "notifications/progress")] | length')" -ge 3 ] ||
                { show_records "$log"; fail "the upstream did not send 3 progress notifications"; }

        # Cancellation: notifications/cancelled reached the upstream with the
        # id Glove gave that call upstream (which need not be the agent's).
        local uid
        uid=$(tap_id "$log" '.params.arguments.duration == 4')
        [ -n "$uid" ] || { show_records "$log"; fail "the cancelled call never reached the upstream"; }
        upstream_saw "$log" '.method == "notifications/cancelled" and .params.requestId == '"$uid"
        upstream_never_saw "$log" '.method == "notifications/cancelled" and .params.requestId != '"$uid"
        # Its slot was freed at the cancel (call_result cancelled); no result
        # was returned for it.
        audit_has '.event == "call_result" and .upstream_status == "cancelled" and .id == '"$(record "$CLIENT_OUT" 2 .request_id)"
        audit_lacks '.event == "call_result" and .tool == "ev.trigger-long-running-operation" and .upstream_status == "ok" and .id == '"$(record "$CLIENT_OUT" 2 .request_id)"
}

@test "run: a cancelled call frees its slot at once: after 1024 cancellations the next call is answered; a late answer is dropped" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/ev.tap
        # server-everything never answers a cancelled request. With a
        # --call-timeout far longer than the test, a cancelled call that
        # kept its slot until its timeout would leave all 1024 slots taken
        # and the next call refused (in-flight bound).
        gr --call-timeout 120000 --upstream "ev=$PY,$TAP,$log,$NODE,$EVERYTHING,stdio" --upstream "py=$PY,$UPY" \
                --allow 'ev.*' --allow 'py.*' --audit-log "$AUDIT" "${ADVERSARIAL[@]}" cancel-all 1024 cancel-late
        expect_adversarial_pass
        # Every cancellation reached the upstream, with the upstream's id of
        # its call.
        local calls cancels
        calls=$(tap_in "$log" | jq -c -s '[.[] | select(.method == "tools/call" and .params.name == "trigger-long-running-operation") | .id] | sort')
        cancels=$(tap_in "$log" | jq -c -s '[.[] | select(.method == "notifications/cancelled") | .params.requestId] | sort')
        [ "$(jq -n "$calls | length")" -eq 1024 ] || { show_records "$log"; fail "expected 1024 forwarded calls"; }
        [ "$calls" = "$cancels" ] || fail "the cancellations do not name the forwarded calls' upstream ids"
        [ "$(jq -s '[.[] | select(.event == "call_result" and .upstream_status == "cancelled")] | length' "$AUDIT")" -eq 1025 ] ||
                { show_records "$AUDIT"; fail "expected 1025 cancelled call_result records"; }
        audit_has '.event == "call_result" and .tool == "ev.echo" and .upstream_status == "ok"'
        # py.late answered its cancelled call: dropped, on record as late.
        audit_has '.event == "response_dropped" and .from == "py" and .reason == "cancelled"'
}

@test "run: --call-timeout answers upstream_timeout, cancels the call upstream, and the upstream stays usable" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/py.log
        local scenario='[
 {"op":"call","tool":"py.sleep","args":{"ms":5000},"expect":"upstream_timeout","code":-32003,"rule":"--call-timeout 700"},
 {"op":"call","tool":"py.sleep","args":{"ms":50},"expect":"ok","text":"slept 50"},
 {"op":"call","tool":"py.echo","args":{"text":"still here"},"expect":"ok","text":"still here"}
]'
        gr --call-timeout 700 --upstream "py=$PY,$UPY,--log,$log" --allow 'py.*' --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        local ms
        ms=$(record "$CLIENT_OUT" 1 .ms)
        # The timeout answered the call, not the upstream: it would take 5 s.
        jq -e -n "$ms < 4500" >/dev/null || fail "the timed out call took $ms ms"
        local uid
        uid=$(tap_id "$log" '.params.arguments.ms == 5000')
        upstream_saw "$log" '.method == "notifications/cancelled" and .params.requestId == '"$uid"' and .params.reason == "timeout"'
        audit_has '.event == "call_result" and .tool == "py.sleep" and .upstream_status == "timeout" and (.latency_us | type == "number")'
        audit_has '.event == "call_result" and .tool == "py.echo" and .upstream_status == "ok"'
}

@test "run: an upstream that crashes answers upstream_unavailable for calls in flight and after; other upstreams go on" {
        local d=$BATS_TEST_TMPDIR log m
        log=$(upstream_dir)/py.log
        m=$(mcp_marker)
        local scenario='[
 {"op":"call","tool":"py.echo","args":{"text":"before"},"expect":"ok","text":"before"},
 {"op":"parallel","steps":[
   {"op":"call","label":"in-flight","tool":"py.sleep","args":{"ms":8000},"expect":"upstream_unavailable","code":-32002},
   {"op":"call","label":"crash","tool":"py.crash","delay_ms":200,"expect":"upstream_unavailable","code":-32002,"rule":"py"}
 ]},
 {"op":"call","tool":"py.echo","args":{"text":"after"},"expect":"upstream_unavailable","code":-32002,"rule":"py"},
 {"op":"call","tool":"other.echo","args":{"text":"unaffected"},"expect":"ok","text":"unaffected"},
 {"op":"list","expect":["other.echo"]}
]'
        gr --upstream "py=$PY,$UPY,--log,$log,$m" --upstream "other=$PY,$UPY,$m" --allow 'py.*' --allow other.echo \
                --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        # The in-flight call did not wait for its 8 s.
        jq -e -n "$(record "$CLIENT_OUT" in-flight .ms) < 6000" >/dev/null || fail "the in-flight call was not failed at the crash"
        audit_has '.event == "upstream_failed" and .name == "py"'
        audit_has '.event == "upstream_exit" and .name == "py" and .status == 3'
        audit_has '.event == "call_result" and .tool == "py.sleep" and .upstream_status == "unavailable"'
        # The call after the crash was refused by Glove: never written anywhere.
        upstream_never_saw "$log" '.params.arguments.text == "after"'
        audit_lacks '.event == "call" and has("arguments")' "raw arguments are recorded without --audit-arguments"
        no_leftovers "$m"
}

@test "run: two upstreams, one slow: calls to the other (and to the slow one's other tools) complete while the slow call runs" {
        local d=$BATS_TEST_TMPDIR
        local scenario='[
 {"op":"parallel","steps":[
   {"op":"call","label":"slow","tool":"slow.trigger-long-running-operation","args":{"duration":1.5,"steps":1},"expect":"ok"},
   {"op":"call","label":"fast","tool":"fast.echo","args":{"message":"fast"},"delay_ms":200,"expect":"ok","text":"fast"},
   {"op":"call","label":"same","tool":"slow.echo","args":{"message":"same upstream"},"delay_ms":200,"expect":"ok","text":"same upstream"}
 ],"order":[["fast","same"],"slow"]}
]'
        gr --upstream "slow=$NODE,$EVERYTHING,stdio" --upstream "fast=$NODE,$EVERYTHING,stdio" \
                --allow 'slow.*' --allow fast.echo "${CLIENT[@]}" "$scenario"
        expect_client_pass
        local fast slow
        fast=$(record "$CLIENT_OUT" fast .at_ms)
        slow=$(record "$CLIENT_OUT" slow .at_ms)
        # The fast call finished well before the slow one ended, not at its end.
        jq -e -n "$slow - $fast > 700" >/dev/null || { show_records "$CLIENT_OUT"; fail "fast done at $fast ms, slow at $slow ms"; }
}

@test "run: an upstream's late answers, stray responses, invalid lines and requests never reach the agent" {
        local scenario='[
 {"op":"call","tool":"py.late","args":{"ms":1200},"expect":"upstream_timeout"},
 {"op":"sleep","ms":900},
 {"op":"call","tool":"py.echo","args":{"text":"after the late answer"},"expect":"ok","text":"after the late answer"},
 {"op":"call","label":"roots","tool":"py.ask","args":{"method":"roots/list"},"expect":"ok","text":"-32601"},
 {"op":"call","label":"sampling","tool":"py.ask","args":{"method":"sampling/createMessage"},"expect":"ok","text":"-32601"},
 {"op":"call","label":"ping","tool":"py.ask","args":{"method":"ping"},"expect":"ok","text":"\"result\": {}"},
 {"op":"call","tool":"py.stray","expect":"ok","text":"stray"},
 {"op":"ping"},
 {"op":"wire_check"}
]'
        gr --call-timeout 700 --upstream "py=$PY,$UPY" --allow 'py.*' --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        audit_has '.event == "call_result" and .tool == "py.late" and .upstream_status == "timeout"'
        audit_has '.event == "response_dropped" and .from == "py" and .id == 987654' "the stray response was not audited as dropped"
        [ "$(jq -s '[.[] | select(.event == "response_dropped" and .from == "py")] | length' "$AUDIT")" -eq 2 ] ||
                { show_records "$AUDIT"; fail "expected two dropped upstream responses: the late answer and the stray one"; }
        audit_has '.event == "upstream_invalid_message" and .from == "py"'
}

@test "run: an upstream answer over --max-frame fails that call (response_too_large) and the upstream goes on" {
        local m
        m=$(mcp_marker)
        # Each long line is far longer than --max-frame, so Glove can only
        # get past it by skipping it (its buffer holds --max-frame plus one
        # read); the id is found before the long text and after it.
        local scenario='[
 {"op":"call","tool":"py.flood","args":{"bytes":70000},"expect":"response_too_large","code":-32004,"rule":"--max-frame 65536"},
 {"op":"call","tool":"py.flood","args":{"bytes":1000000,"id_last":true},"expect":"response_too_large","code":-32004},
 {"op":"call","tool":"py.flood","args":{"bytes":300000,"notify":true},"expect":"ok","text":"flooded"},
 {"op":"call","tool":"py.echo","args":{"text":"still here"},"expect":"ok","text":"still here"},
 {"op":"call","tool":"py.flood","args":{"bytes":60000},"expect":"ok"},
 {"op":"call","tool":"other.echo","args":{"text":"still fine"},"expect":"ok","text":"still fine"},
 {"op":"wire_check"}
]'
        gr --max-frame 65536 --upstream "py=$PY,$UPY,$m" --upstream "other=$PY,$UPY,$m" --allow 'py.*' --allow 'other.*' \
                --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        audit_has '.event == "frame_oversized" and .from == "py" and .max_frame == 65536 and .bytes > 70000 and (.id | type == "number")'
        audit_has '.event == "frame_oversized" and .from == "py" and .bytes > 1000000'
        audit_has '.event == "frame_oversized" and .from == "py" and .bytes > 300000 and (has("id") | not)' "the oversized notification"
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "py.flood" and .upstream_status == "too_large")] | length' "$AUDIT")" -eq 2 ] ||
                { show_records "$AUDIT"; fail "expected two too_large call results"; }
        audit_lacks '.event == "upstream_failed"'
        no_leftovers "$m"
}

#!/usr/bin/env bats
# glove run: the audit trail, start-up failures, strict framing towards a
# misbehaving agent (tests/agents/adversarial.py), and the end of a run:
# nothing an upstream started outlives Glove.

load helpers
load lib/mcp

setup() { mcp_setup; }

sha256_canonical() { # JSON: SHA-256 of the compact, key-sorted encoding
        "$PY" -c 'import hashlib, json, sys
print(hashlib.sha256(json.dumps(json.loads(sys.argv[1]), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest())' "$1"
}

@test "run: the audit log records upstreams, the launch, every decision with its rule and argument digest, results, and the exit" {
        local args='{"text":"audit me","b":[1,2],"a":{"z":1,"y":"é"}}'
        local scenario='[
 {"op":"call","tool":"py.echo","args":'"$args"',"expect":"ok","text":"audit me"},
 {"op":"call","tool":"py.sleep","args":{"ms":1},"expect":"policy_denied","rule":"deny py.sleep"},
 {"op":"call","tool":"py.nothing","args":{},"expect":"unknown_tool"}
]'
        gr --upstream "py=$PY,$UPY" --allow 'py.*' --deny py.sleep --audit-log "$AUDIT" --audit-arguments \
                "${CLIENT[@]}" "$scenario"
        expect_client_pass
        local id sha
        id=$(record "$CLIENT_OUT" 1 .request_id)
        sha=$(sha256_canonical "$args")
        audit_has '.event == "upstream_start" and .name == "py" and .path == "'"$PY"'" and (.pid | type == "number")'
        audit_has '.event == "upstream_ready" and .name == "py" and .protocol_version == "2025-11-25" and .tools == 10'
        audit_has '.event == "launch" and .upstreams == [{"name": "py", "path": "'"$PY"'", "argv": ["'"$PY"'", "'"$UPY"'"], "contained": true}]'
        audit_has '.event == "call" and .id == '"$id"' and .tool == "py.echo" and .decision == "allow" and .rule == "allow py.*"
                and .arguments_sha256 == "'"$sha"'" and .arguments == '"$args"
        audit_has '.event == "call_result" and .id == '"$id"' and .tool == "py.echo" and .upstream_status == "ok"
                and (.latency_us | type == "number" and . >= 0)'
        audit_has '.event == "call" and .tool == "py.sleep" and .decision == "deny" and .reason == "policy_denied"
                and .rule == "deny py.sleep" and .arguments_sha256 == "'"$(sha256_canonical '{"ms":1}')"'"'
        audit_has '.event == "call" and .tool == "py.nothing" and .decision == "deny" and .reason == "unknown_tool"'
        audit_has '.event == "upstream_exit" and .name == "py"'
        audit_lacks '.event == "call_result" and .tool != "py.echo"' "a refused call has a call_result"
        # Order: upstreams ready before the launch; each decision before its
        # result; the exit last. Every record is timestamped.
        jq -e -s '
                (map(.event) | index("upstream_ready")) < (map(.event) | index("launch")) and
                (map(.event) | index("launch")) < (map(.event) | index("call")) and
                (map(.event) | index("call")) < (map(.event) | index("call_result")) and
                (.[-1].event == "exit" and .[-1].exit_code == 0) and
                all(.[]; .ts | type == "string")' "$AUDIT" >/dev/null ||
                { show_records "$AUDIT"; fail "audit records out of order"; }
}

@test "run: an upstream that fails to start or to initialize stops Glove with exit 125 naming it, before the agent runs" {
        local d=$BATS_TEST_TMPDIR m
        m=$(mcp_marker)
        mkdir "$d/w"
        printf '#!/bin/sh\n' >"$d/not-executable"
        local agent=(--write "$d/w" -- /bin/sh -c "touch $d/w/ran")
        check() { # WHAT-TO-FIND-ON-STDERR
                expect_run_error 125
                [[ "$RUN_ERROR" == *"$1"* ]] || fail "the error does not name $1"
                [ ! -e "$d/w/ran" ] || fail "the agent ran although an upstream failed"
        }

        gr --upstream "bad=/nonexistent/mcp-server" "${agent[@]}"
        check "bad"
        gr --upstream "bad=$d/not-executable" "${agent[@]}"
        check "bad"
        gr --upstream "good=$PY,$UPY,$m" --upstream "bad=$PY,$UPY,--init,exit,$m" --audit-log "$AUDIT" "${agent[@]}"
        check "upstream bad"
        audit_has '.event == "upstream_start" and .name == "good"'
        audit_has '.event == "upstream_failed" and .name == "bad"'
        audit_lacks '.event == "launch"' "a launch record although the agent never started"
        no_leftovers "$m"
        gr --upstream "bad=$PY,$UPY,--init,error,$m" "${agent[@]}"
        check "upstream bad"
        # Refused initialize, then server/discover (docs/mcp-mediation.md,
        # "Protocol revisions of upstreams"): both answers are named.
        [[ "$RUN_ERROR" == *"initialize was answered with an error (code -32603: "*"server/discover with an error (code -32601: method not found)"* ]] ||
                fail "the error does not name both answers: $RUN_ERROR"
        gr --upstream "bad=$PY,$UPY,--init,bad-version,$m" "${agent[@]}"
        check "upstream bad"
        gr --call-timeout 500 --upstream "good=$PY,$UPY,$m" --upstream "bad=$PY,$UPY,--init,silent,$m" "${agent[@]}"
        check "upstream bad"
        no_leftovers "$m"
}

@test "run: --upstream-optional starts without an upstream that never initializes (audited, told to the agent); without it Glove exits 125 naming it" {
        local d=$BATS_TEST_TMPDIR m
        m=$(mcp_marker)
        mkdir "$d/w"
        local ups=(--upstream "good=$PY,$UPY,$m" --upstream "slow=$PY,$UPY,--init,silent,$m")
        # Without the flag the start fails, naming the upstream.
        gr --call-timeout 500 "${ups[@]}" --write "$d/w" -- /bin/sh -c "touch $d/w/ran"
        expect_run_error 125
        [[ "$RUN_ERROR" == *"upstream slow did not finish initializing within 500 ms"* ]] || fail "the error does not name slow"
        [ ! -e "$d/w/ran" ] || fail "the agent ran although an upstream did not initialize"
        # With it the run starts without slow: its tools are absent, a call
        # of one answers upstream_unavailable, and initialize says why.
        local scenario='[
 {"op":"instructions","text":"Glove started without the upstream slow (did not finish initializing within 500 ms)"},
 {"op":"list","includes":["good.echo","good.sleep"],"excludes":["slow.echo"]},
 {"op":"call","tool":"good.echo","args":{"text":"degraded"},"expect":"ok","text":"degraded"},
 {"op":"call","tool":"slow.echo","args":{"text":"x"},"expect":"upstream_unavailable","code":-32002,"rule":"slow"}
]'
        gr --call-timeout 500 --upstream-optional slow "${ups[@]}" --allow 'good.*' --allow 'slow.*' --audit-log "$AUDIT" \
                "${CLIENT[@]}" "$scenario"
        expect_client_pass
        [[ "$stderr" == *"glove: warning: upstream.left_out: upstream slow did not finish initializing within 500 ms"* ]] ||
                fail "no warning names the upstream left out: $stderr"
        audit_has '.event == "upstream_left_out" and .name == "slow" and .reason == "did not finish initializing within 500 ms"'
        audit_lacks '.event == "upstream_failed"'
        jq -e -s '(map(.event) | index("upstream_left_out")) < (map(.event) | index("launch"))' "$AUDIT" >/dev/null ||
                { show_records "$AUDIT"; fail "the upstream was left out after the launch"; }
        no_leftovers "$m"
        # An optional upstream that fails during initialization is left out
        # at once; an upstream that is not optional still stops the run; no
        # instructions when every upstream started.
        gr --upstream-optional bad --upstream "good=$PY,$UPY,$m" --upstream "bad=$PY,$UPY,--init,exit,$m" --allow 'good.*' \
                --audit-log "$d/a2.jsonl" "${CLIENT[@]}" '[{"op":"call","tool":"good.echo","args":{"text":"y"},"expect":"ok","text":"y"}]'
        expect_client_pass
        AUDIT=$d/a2.jsonl audit_has '.event == "upstream_left_out" and .name == "bad" and (.reason | startswith("failed during initialization"))'
        gr --upstream-optional good --upstream "good=$PY,$UPY,$m" --upstream "bad=$PY,$UPY,--init,exit,$m" --write "$d/w" -- /bin/sh -c "touch $d/w/ran"
        expect_run_error 125
        [[ "$RUN_ERROR" == *"upstream bad"* ]] || fail "the error does not name bad"
        gr --upstream-optional good --upstream "good=$PY,$UPY,$m" --allow 'good.*' "${CLIENT[@]}" '[{"op":"instructions","absent":true}]'
        expect_client_pass
        gr --upstream-optional nope --upstream "good=$PY,$UPY,$m" -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = upstream.bad_optional ] || fail "error code $(run_error_code)"
        no_leftovers "$m"
}

@test "run: malformed, invalid UTF-8, batch, duplicate-key, duplicate-id and unknown-id frames get strict answers; the upstream never sees them" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/py.log
        gr --upstream "py=$PY,$UPY,--log,$log" --allow 'py.*' --audit-log "$AUDIT" "${ADVERSARIAL[@]}" \
                --protocol 2024-11-05 --expect-protocol 2024-11-05 \
                malformed utf8 batch dupkey invalid dup-inflight unknown-id unknown-method resources prompts notification \
                cancel-unknown bad-params
        expect_adversarial_pass
        audit_has '.event == "response_dropped" and .from == "agent" and .id == 999'
        audit_has '.event == "call" and .id == "dup" and .tool == "py.echo" and .decision == "deny" and .rule == "request id in flight"'
        audit_has '.event == "call_result" and .id == "dup" and .tool == "py.sleep" and .upstream_status == "ok"'
        # Only the first "dup" call reached the upstream; nothing else did.
        [ "$(tap_in "$log" | jq -c -s '[.[] | select(.method == "tools/call")] | map(.params.name)')" = '["sleep"]' ] ||
                { show_records "$log"; fail "the upstream received other calls than the first dup"; }
        upstream_never_saw "$log" '.method == "notifications/cancelled"'
        audit_has '.event == "call" and .id == "p3" and .decision == "deny" and .reason == "invalid_params"'
        upstream_never_saw "$log" '.method | IN("foo/bar", "resources/list", "prompts/list", "notifications/whatever")'
}

@test "run: a line over --max-frame closes the channel: the agent is stopped, frame_oversized is audited, exit 125" {
        local m
        m=$(mcp_marker)
        gr --max-frame 4096 --upstream "py=$PY,$UPY,$m" --allow 'py.*' --audit-log "$AUDIT" "${ADVERSARIAL[@]}" \
                exact 4096 oversized 8192
        expect_run_error 125
        [ "$(run_error_code)" = mcp.frame_too_large ] || fail "error code $(run_error_code)"
        grep -q '"case": "exact", "pass": true' "$ADV_OUT" || { show_records "$ADV_OUT"; fail "a line of exactly --max-frame bytes was refused"; }
        grep -q '"sending": 8192' "$ADV_OUT" || { show_records "$ADV_OUT"; fail "the agent never sent the long line"; }
        ! grep -q '"case": "oversized", "pass"' "$ADV_OUT" || { show_records "$ADV_OUT"; fail "the agent kept running after the long line"; }
        audit_has '.event == "frame_oversized" and .from == "agent" and .max_frame == 4096'
        audit_has '.event == "exit" and .exit_code == 125'
        no_leftovers "$m"
}

@test "run: when the agent exits, upstreams are ended (SIGKILL after the grace for one that ignores SIGTERM) and nothing they started survives" {
        local d=$BATS_TEST_TMPDIR m
        m=$(mcp_marker)
        # An upstream that ignores SIGTERM and leaves a process in a session
        # of its own, which the process-group signal cannot reach.
        local stubborn="trap '' TERM; setsid /bin/sh -c 'echo \$\$ >$d/orphan.pid; exec $PY -c \"import time; time.sleep(600)\" $m-orphan' </dev/null >/dev/null 2>&1 & exec $PY $UPY $m"
        local scenario='[
 {"op":"call","tool":"ev.echo","args":{"message":"hi"},"expect":"ok"},
 {"op":"call","tool":"py.echo","args":{"text":"hi"},"expect":"ok"},
 {"op":"call","tool":"ev.trigger-long-running-operation","args":{"duration":60,"steps":1},"detach":true},
 {"op":"call","tool":"py.sleep","args":{"ms":60000},"detach":true},
 {"op":"sleep","ms":300}
]'
        # py runs on the host (a contained one: run_contained.bats), where
        # only Glove's subreaper catches what it detaches.
        gr --upstream "ev=$NODE,$EVERYTHING,stdio,$m" --upstream "py=/bin/sh,-c,$stubborn" --upstream-uncontained py \
                --allow 'ev.*' --allow 'py.*' \
                --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        [ -s "$d/orphan.pid" ] || fail "positive control: the upstream's orphan never started"
        ! running "$(cat "$d/orphan.pid")" || fail "the orphan $(cat "$d/orphan.pid") survived the run"
        no_leftovers "$m"
        audit_has '.event == "call_result" and .tool == "ev.trigger-long-running-operation" and .upstream_status == "agent_exited"'
        audit_has '.event == "call_result" and .tool == "py.sleep" and .upstream_status == "agent_exited"'
        audit_has '.event == "upstream_exit" and .name == "py" and .signal == 9' "the stubborn upstream was killed with SIGKILL"
        audit_has '.event == "upstream_exit" and .name == "ev" and .signal == 15'
}

@test "run: ids 1 and \"1\" are different calls; past 1024 calls in flight the rest are refused; an unknown protocol version gets Glove's newest" {
        gr --upstream "py=$PY,$UPY" --allow 'py.*' "${ADVERSARIAL[@]}" \
                --protocol 1999-01-01 --expect-protocol 2025-11-25 id-types inflight-bound 1100
        expect_adversarial_pass
}

@test "run: what the agent writes on its MCP channel counts towards --output-limit (137, terminal_output)" {
        gr --upstream "py=$PY,$UPY" --output-limit 20000 --status-json "$BATS_TEST_TMPDIR/s.json" -- "$PY" -c '
import sys, time
line = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"x\":\"%s\"}}\n" % ("y" * 200)
for _ in range(1000):
    sys.stdout.write(line)
sys.stdout.flush()
time.sleep(30)'
        [ "$status" -eq 137 ] || { show_run; fail "expected 137"; }
        [[ "$stderr" == *"limits.terminal_output"* ]] || fail "the limit was not named: $stderr"
        "$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["limit"] == "terminal_output", s' "$BATS_TEST_TMPDIR/s.json"
}

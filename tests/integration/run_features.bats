#!/usr/bin/env bats
# glove run: resources, resource templates, prompts and completion under
# policy (docs/mcp-mediation.md, "Resources, prompts and completion";
# docs/policy.md, "Prompts and resources"). The agent is an SDK client
# (tests/agents/features-client.mjs) that records what it is answered; the
# upstreams are server-everything and a small SDK server
# (tests/agents/features-upstream.mjs) with file: resources, a resource that
# reports progress and one that answers only after 30 s.

load helpers
load lib/mcp

setup() {
        mcp_setup
        FCLIENT=(--read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" --
                 "$NODE" "$AGENTS/features-client.mjs" "$NODE_MODULES" "$CLIENT_OUT")
        FU="fu=$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES"
}

# expect_features_pass: glove exited 0 and the client got to its end.
expect_features_pass() {
        if [ "$status" -ne 0 ] || ! grep -q '"step":"end"' "$CLIENT_OUT" 2>/dev/null; then
                show_records "$CLIENT_OUT" ${AUDIT:+"$AUDIT"}
                echo "stderr: ${stderr-}" >&2
                fail "glove run failed (status $status) or the client did not finish"
        fi
}

# expect_refused LABEL CODE REASON [RULE]: the step was answered that error.
expect_refused() {
        local got want
        got=$(record "$CLIENT_OUT" "$1" '[.ok, .error.code, .error.data.reason, .error.data.rule]')
        want=$(jq -c -n --argjson c "$2" --arg r "$3" '[false, $c, $r]')
        [ "$(jq -c '.[0:3]' <<<"$got")" = "$want" ] || { show_records "$CLIENT_OUT"; fail "step $1: expected $want, got $got"; }
        [ -z "${4-}" ] || [ "$(jq -r '.[3]' <<<"$got")" = "$4" ] || fail "step $1: expected rule $4, got $got"
}

@test "run: server-everything's resources, templates, prompts and completion: allowed ones match the direct answers; denied ones are refused, audited and not listed" {
        local scenario
        # Written for the agent inside Glove; the direct run gets the same
        # steps with the names and URIs of server-everything itself.
        scenario='[
 {"op":"capabilities","label":"caps"},
 {"op":"all_pages","method":"resources/list","key":"resources","label":"resources"},
 {"op":"all_pages","method":"resources/templates/list","key":"resourceTemplates","label":"templates"},
 {"op":"all_pages","method":"prompts/list","key":"prompts","label":"prompts"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://ev/demo://resource/static/document/architecture.md"},"label":"read-allowed"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://ev/demo://resource/dynamic/text/7"},"label":"read-template"},
 {"op":"request","method":"prompts/get","params":{"name":"ev.args-prompt","arguments":{"city":"Paris","state":"TX"}},"label":"get-allowed"},
 {"op":"request","method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"ev.completable-prompt"},"argument":{"name":"department","value":"E"}},"label":"complete-prompt"},
 {"op":"request","method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"glove://ev/demo://resource/dynamic/text/{resourceId}"},"argument":{"name":"resourceId","value":"3"}},"label":"complete-template"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://ev/demo://resource/static/document/extension.md"},"label":"read-denied"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://ev/demo://resource/dynamic/blob/1"},"label":"read-unlisted-template"},
 {"op":"request","method":"prompts/get","params":{"name":"ev.simple-prompt"},"label":"get-denied"},
 {"op":"request","method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"ev.resource-prompt"},"argument":{"name":"resourceType","value":"T"}},"label":"complete-denied"}
]'
        gr --upstream "ev=$NODE,$EVERYTHING,stdio" \
                --allow-resource 'ev:demo://resource/static/document/a*' --allow-resource 'ev:demo://resource/dynamic/text/*' \
                --allow-prompt 'ev.*' --deny-prompt ev.simple-prompt --deny-prompt ev.resource-prompt \
                --audit-log "$AUDIT" "${FCLIENT[@]}" "$scenario"
        expect_features_pass

        # The same steps straight to server-everything, outside Glove.
        local direct=$OUT/direct.jsonl
        local dscenario
        dscenario=$(sed -e 's#glove://ev/##g' -e 's#"ev\.#"#g' <<<"$scenario")
        run timeout 60 "$NODE" "$AGENTS/features-client.mjs" "$NODE_MODULES" "$direct" "$dscenario" -- "$NODE" "$EVERYTHING" stdio
        [ "$status" -eq 0 ] || fail "the direct run failed"

        # Allowed answers are the upstream's, with names and URIs in the
        # agent's form.
        local label g d
        # (A dynamic text resource names the time it was made: compared
        # without its text, which must still name the resource.)
        for label in read-allowed read-template get-allowed complete-prompt complete-template; do
                local f='.result'
                [ "$label" != read-template ] || f='.result.contents[] |= (.text |= (startswith("Resource 7:") | tostring))'
                g=$(record "$CLIENT_OUT" "$label" "$f" | sed -e 's#glove://ev/##g')
                d=$(record "$direct" "$label" "$f")
                [ -n "$d" ] && [ "$d" != null ] || { show_records "$direct"; fail "$label: no direct answer"; }
                [ "$g" = "$d" ] || { show_records "$CLIENT_OUT" "$direct"; fail "$label: the answer through Glove differs from the direct one"; }
        done
        record "$CLIENT_OUT" read-allowed '.result.contents[0].uri' | grep -qx '"glove://ev/demo://resource/static/document/architecture.md"' ||
                fail "a read's contents do not name the URI in the agent's form"

        # Lists: exactly the allowed part of the direct lists.
        g=$(record "$CLIENT_OUT" resources '[.result.items[].uri] | sort')
        [ "$g" = '["glove://ev/demo://resource/static/document/architecture.md"]' ] || fail "resources/list shows $g"
        g=$(record "$CLIENT_OUT" templates '[.result.items[].uriTemplate] | sort')
        [ "$g" = '["glove://ev/demo://resource/dynamic/text/{resourceId}"]' ] || fail "resources/templates/list shows $g"
        g=$(record "$CLIENT_OUT" prompts '[.result.items[].name] | sort')
        d=$(record "$direct" prompts '[.result.items[].name | select(. != "simple-prompt" and . != "resource-prompt") | "ev." + .] | sort')
        [ "$g" = "$d" ] && [ "$g" != '[]' ] || fail "prompts/list shows $g, expected $d"
        g=$(record "$CLIENT_OUT" resources '.result.items[0] | del(.uri)')
        d=$(record "$direct" resources '.result.items[] | select(.uri == "demo://resource/static/document/architecture.md") | del(.uri)')
        [ "$g" = "$d" ] || fail "a listed resource differs from the upstream's entry"

        # Denied: refused by Glove, on record, never answered by the upstream.
        expect_refused read-denied -32001 policy_denied "default deny"
        expect_refused read-unlisted-template -32001 policy_denied "default deny"
        expect_refused get-denied -32001 policy_denied "deny ev.simple-prompt"
        expect_refused complete-denied -32001 policy_denied
        audit_has '.event == "request" and .method == "resources/read" and .decision == "deny" and .subject == "glove://ev/demo://resource/static/document/extension.md" and .rule == "default deny" and .reason == "policy_denied"'
        audit_has '.event == "request" and .method == "prompts/get" and .decision == "deny" and .subject == "ev.simple-prompt" and .rule == "deny ev.simple-prompt" and (.arguments_sha256 | length == 64)'
        audit_has '.event == "request" and .method == "resources/read" and .decision == "allow" and .rule == "allow resource ev:demo://resource/static/document/a*" and .upstream == "ev"'
        audit_has '.event == "request_result" and .method == "prompts/get" and .subject == "ev.args-prompt" and .upstream_status == "ok"'
        audit_has '.event == "launch" and .tool_policy.resources.allow == ["ev:demo://resource/static/document/a*", "ev:demo://resource/dynamic/text/*"] and .tool_policy.prompts.deny == ["ev.simple-prompt", "ev.resource-prompt"]'

        # initialize: what server-everything offers and the policy allows.
        record "$CLIENT_OUT" caps '.result' | jq -e '.resources == {"subscribe":true,"listChanged":true} and (.prompts | type == "object") and .completions == {}' >/dev/null ||
                fail "initialize announces $(record "$CLIENT_OUT" caps .result)"
}

@test "run: initialize announces no resources, prompts or completions when the policy allows none" {
        gr --upstream "ev=$NODE,$EVERYTHING,stdio" --allow 'ev.echo' "${FCLIENT[@]}" '[{"op":"capabilities","label":"caps"},
 {"op":"all_pages","method":"prompts/list","key":"prompts","label":"prompts"},
 {"op":"request","method":"prompts/get","params":{"name":"ev.simple-prompt"},"label":"get"}]'
        expect_features_pass
        record "$CLIENT_OUT" caps '.result' | jq -e 'has("resources") or has("prompts") or has("completions") | not' >/dev/null ||
                fail "initialize announces $(record "$CLIENT_OUT" caps .result)"
        [ "$(record "$CLIENT_OUT" prompts '.result.items')" = '[]' ] || fail "prompts are listed without a prompt rule"
        expect_refused get -32001 policy_denied "default deny"
}

@test "run: argument rules refuse a bad prompt argument and a file: URI outside the path_within root" {
        local pol=$BATS_TEST_TMPDIR/policy.json
        cat >"$pol" <<'EOF'
{"version": 1,
 "prompts": {"allow": ["fu.*"], "arguments": {"fu.greet": [{"kind": "max_length", "pointer": "/who", "max": 5}]}},
 "resources": {"allow": ["fu:file:///*"], "arguments": {"fu": [{"kind": "path_within", "pointer": "/path", "root": "/data"}]}}}
EOF
        chmod 600 "$pol"
        local log=$(upstream_dir)/fu.tap
        gr --upstream "fu=$PY,$TAP,$log,$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES" --policy "$pol" --audit-log "$AUDIT" "${FCLIENT[@]}" '[
 {"op":"request","method":"prompts/get","params":{"name":"fu.greet","arguments":{"who":"ann"}},"label":"short"},
 {"op":"request","method":"prompts/get","params":{"name":"fu.greet","arguments":{"who":"annabelle"}},"label":"long"},
 {"op":"all_pages","method":"resources/list","key":"resources","label":"list"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///data/a.txt"},"label":"inside"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///etc/passwd"},"label":"outside"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///data/../etc/passwd"},"label":"dotdot"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///data/%2e%2e/etc/passwd"},"label":"encoded"}]'
        expect_features_pass
        [ "$(record "$CLIENT_OUT" short '.result.messages[0].content.text')" = '"hello ann"' ] || fail "the allowed prompt was not answered"
        expect_refused long -32001 policy_denied "fu.greet:/who max_length 5"
        [ "$(record "$CLIENT_OUT" inside '.result.contents[0].text')" = '"contents of a"' ] || fail "the file inside the root was not read"
        local l
        expect_refused outside -32001 policy_denied "resource fu:/path path_within /data"
        # Another spelling of a path is refused before any rule looks at it.
        for l in dotdot encoded; do
                expect_refused "$l" -32001 policy_denied "non-canonical file URI"
        done
        [ "$(record "$CLIENT_OUT" list '[.result.items[].uri]')" = '["glove://fu/file:///data/a.txt","glove://fu/file:///data/b.txt"]' ] ||
                fail "resources/list shows a resource the rules refuse: $(record "$CLIENT_OUT" list '[.result.items[].uri]')"
        upstream_never_saw "$log" '.method == "resources/read" and (.params.uri | test("etc"))'
        upstream_never_saw "$log" '.method == "prompts/get" and .params.arguments.who == "annabelle"'
        audit_has '.event == "request" and .method == "resources/read" and .decision == "deny" and .rule == "resource fu:/path path_within /data" and .subject == "glove://fu/file:///etc/passwd"'
}

@test "run: forged, malformed and oversized resource URIs are refused and never forwarded" {
        local log=$(upstream_dir)/fu.tap long
        long=$(printf 'file:///data/%05000d' 0)
        gr --upstream "fu=$PY,$TAP,$log,$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES" --upstream "fv=$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES" \
                --allow-resource 'fu:*' --audit-log "$AUDIT" "${FCLIENT[@]}" '[
 {"op":"request","method":"resources/read","params":{"uri":"glove://fv/file:///data/a.txt"},"label":"other-upstream"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://nosuch/file:///data/a.txt"},"label":"no-upstream"},
 {"op":"request","method":"resources/read","params":{"uri":"file:///data/a.txt"},"label":"bare"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu"},"label":"no-slash"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://FU/file:///data/a.txt"},"label":"bad-name"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///data/a.txt\nfile:///etc/passwd"},"label":"newline"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///data/a\u0000.txt"},"label":"nul"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/'"$long"'"},"label":"long"},
 {"op":"request","method":"resources/read","params":{"uri":7},"label":"number"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///data/a.txt"},"label":"good"}]'
        expect_features_pass
        expect_refused other-upstream -32001 policy_denied "default deny"
        expect_refused no-upstream -32602 unknown_resource
        expect_refused bare -32602 unknown_resource
        local l
        for l in no-slash bad-name newline nul long number; do
                expect_refused "$l" -32602 invalid_params params.uri
        done
        [ "$(record "$CLIENT_OUT" good '.result.contents[0].uri')" = '"glove://fu/file:///data/a.txt"' ] || fail "the good URI was not read"
        # Only the good one reached fu, with its own URI exactly.
        [ "$(tap_in "$log" | jq -c -s '[.[] | select(.method == "resources/read") | .params.uri]')" = '["file:///data/a.txt"]' ] ||
                { show_records "$log"; fail "fu received other reads"; }
        audit_has '.event == "request" and .decision == "deny" and .reason == "invalid_params" and .subject == "glove://fu/file:///data/a.txt\nfile:///etc/passwd"'
}

@test "run: resources/subscribe: an update is relayed in the agent's form only for a URI the agent subscribed; unsubscribe stops them" {
        gr --upstream "$FU" --allow-resource 'fu:file:///data/*' --allow-resource 'fu:file:///etc/*' --audit-log "$AUDIT" "${FCLIENT[@]}" '[
 {"op":"request","method":"resources/subscribe","params":{"uri":"glove://fu/file:///data/a.txt"},"label":"sub"},
 {"op":"request","method":"resources/unsubscribe","params":{"uri":"glove://fu/file:///data/a.txt"},"label":"unsub"},
 {"op":"request","method":"resources/subscribe","params":{"uri":"glove://fu/file:///data/b.txt"},"label":"sub-b"},
 {"op":"request","method":"resources/subscribe","params":{"uri":"glove://fu/file:///private/x"},"label":"sub-denied"},
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/file:///data/a.txt"},"label":"barrier"},
 {"op":"updates","label":"updates"}]'
        expect_features_pass
        # fu sends updates for the URI subscribed and for file:///etc/passwd
        # (allowed, never subscribed): only the former reach the agent.
        [ "$(record "$CLIENT_OUT" updates '.result')" = '["glove://fu/file:///data/a.txt","glove://fu/file:///data/b.txt"]' ] ||
                { show_records "$CLIENT_OUT"; fail "updates relayed: $(record "$CLIENT_OUT" updates .result)"; }
        expect_refused sub-denied -32001 policy_denied "default deny"
        audit_has '.event == "notification_dropped" and .from == "fu" and .method == "notifications/resources/updated" and .reason == "not_subscribed"'
        audit_has '.event == "request" and .method == "resources/unsubscribe" and .decision == "allow"'
}

@test "run: progress of a resources/read is relayed with the agent's token" {
        local log=$(upstream_dir)/fu.tap
        gr --upstream "fu=$PY,$TAP,$log,$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES" --allow-resource 'fu:prog://*' "${FCLIENT[@]}" '[
 {"op":"request","method":"resources/read","params":{"uri":"glove://fu/prog://steps"},"progress":true,"label":"read"}]'
        expect_features_pass
        local token
        token=$(tap_in "$log" | jq -c 'select(.method == "resources/read") | .params._meta.progressToken')
        [ -n "$token" ] && [ "$token" != null ] || { show_records "$log"; fail "the read reached the upstream without a progressToken"; }
        [ "$(record "$CLIENT_OUT" read "[.progress_wire[] | select(.progressToken == $token) | .progress]")" = '[1,2,3]' ] ||
                { show_records "$CLIENT_OUT"; fail "the 3 progress notifications did not reach the agent with its token"; }
        [ "$(record "$CLIENT_OUT" read '.result.contents[0].text')" = '"done in 3 steps"' ] || fail "no answer after the progress"
}

@test "run: a cancelled resources/read frees its slot at once: after 1024 cancellations the next read is answered" {
        local log=$(upstream_dir)/fu.tap res=$OUT/cancel.json
        # slow://wait answers after 30 s; with a --call-timeout far longer
        # than the test, 1024 cancelled reads that kept their slots would
        # leave the next read refused (in-flight bound).
        gr --call-timeout 120000 --upstream "fu=$PY,$TAP,$log,$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES" --allow-resource 'fu:*' \
                --audit-log "$AUDIT" --read "$AGENTS" --write "$OUT" -- "$PY" "$AGENTS/cancel-reads.py" "$res" 1024 glove://fu/slow://wait \
                glove://fu/file:///data/a.txt
        [ "$status" -eq 0 ] || fail "glove run failed: $status"
        jq -e '.answered and .result.contents[0].text == "contents of a" and .others == 0' "$res" >/dev/null ||
                { cat "$res" >&2; fail "the read after 1024 cancellations was not answered (or a cancelled one was)"; }
        local reads cancels
        reads=$(tap_in "$log" | jq -c -s '[.[] | select(.method == "resources/read" and .params.uri == "slow://wait") | .id] | sort')
        cancels=$(tap_in "$log" | jq -c -s '[.[] | select(.method == "notifications/cancelled") | .params.requestId] | sort')
        [ "$(jq -n "$reads | length")" -eq 1024 ] || fail "expected 1024 forwarded reads"
        [ "$reads" = "$cancels" ] || fail "the cancellations do not name the forwarded reads' upstream ids"
        [ "$(jq -s '[.[] | select(.event == "request_result" and .method == "resources/read" and .upstream_status == "cancelled")] | length' "$AUDIT")" -eq 1024 ] ||
                fail "expected 1024 cancelled request_result records"
}

@test "run: --upstream-own-names offers an upstream's tools, prompts and URIs under their own names; rules still say NAME.TOOL" {
        gr --upstream "$FU" --upstream "fv=$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES" --upstream-own-names fu \
                --allow 'fu.echo' --allow 'fv.echo' --allow-prompt 'fu.greet' --allow-resource 'fu:file:///data/*' "${FCLIENT[@]}" '[
 {"op":"request","method":"tools/list","label":"tools"},
 {"op":"request","method":"tools/call","params":{"name":"echo","arguments":{"text":"own"}},"label":"own-call"},
 {"op":"request","method":"tools/call","params":{"name":"fu.echo","arguments":{"text":"q"}},"label":"qualified-call"},
 {"op":"request","method":"tools/call","params":{"name":"fv.echo","arguments":{"text":"other"}},"label":"other-call"},
 {"op":"all_pages","method":"prompts/list","key":"prompts","label":"prompts"},
 {"op":"request","method":"prompts/get","params":{"name":"greet","arguments":{"who":"x"}},"label":"own-prompt"},
 {"op":"all_pages","method":"resources/list","key":"resources","label":"resources"},
 {"op":"request","method":"resources/read","params":{"uri":"file:///data/b.txt"},"label":"own-read"}]'
        expect_features_pass
        [ "$(record "$CLIENT_OUT" tools '[.result.tools[].name] | sort')" = '["echo","fv.echo"]' ] ||
                fail "tools/list shows $(record "$CLIENT_OUT" tools '[.result.tools[].name]')"
        [ "$(record "$CLIENT_OUT" own-call '.result.content[0].text')" = '"echo: own"' ] || fail "the own-named tool was not called"
        expect_refused qualified-call -32602 unknown_tool
        [ "$(record "$CLIENT_OUT" other-call '.result.content[0].text')" = '"echo: other"' ] || fail "the other upstream's tool was not called"
        [ "$(record "$CLIENT_OUT" prompts '[.result.items[].name]')" = '["greet"]' ] || fail "prompts/list shows $(record "$CLIENT_OUT" prompts .result)"
        [ "$(record "$CLIENT_OUT" own-prompt '.result.messages[0].content.text')" = '"hello x"' ] || fail "the own-named prompt was not answered"
        [ "$(record "$CLIENT_OUT" resources '[.result.items[].uri]')" = '["file:///data/a.txt","file:///data/b.txt"]' ] ||
                fail "resources/list shows $(record "$CLIENT_OUT" resources .result)"
        [ "$(record "$CLIENT_OUT" own-read '.result.contents[0]')" = '{"uri":"file:///data/b.txt","mimeType":"text/plain","text":"contents of b"}' ] ||
                fail "the own URI was not read unchanged"
}

@test "run: --upstream-own-names is refused at start when two upstreams would offer the same name" {
        local m
        m=$(mcp_marker)
        # A tool both list, both with their own names.
        gr --upstream "$FU,$m" --upstream "fv=$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES,$m" \
                --upstream-own-names fu --upstream-own-names fv --allow 'fu.*' -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = gateway.name_collision ] || fail "expected gateway.name_collision: $RUN_ERROR"
        [[ "$RUN_ERROR" == *"upstream fu"* && "$RUN_ERROR" == *"upstream fv"* && "$RUN_ERROR" == *" as echo "* ]] ||
                fail "the message does not name both: $RUN_ERROR"
        # An own prompt name equal to another upstream's qualified one.
        gr --upstream "$FU,--prompt,fv.hello,$m" --upstream "fv=$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES,--prompt,hello,$m" \
                --upstream-own-names fu -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = gateway.name_collision ] || fail "expected gateway.name_collision: $RUN_ERROR"
        [[ "$RUN_ERROR" == *"prompt fv.hello of upstream fu"* && "$RUN_ERROR" == *"prompt hello of upstream fv"* ]] ||
                fail "the message does not name both prompts: $RUN_ERROR"
        no_leftovers "$m"
        # Control: without a collision the same pair starts.
        gr --upstream "$FU,--prompt,fv.hello" --upstream "fv=$NODE,$AGENTS/features-upstream.mjs,$NODE_MODULES,--prompt,bye" \
                --upstream-own-names fu -- /bin/true
        expect_status 0
}

@test "run: malformed prompt and resource rules and --upstream-own-names of no upstream are refused at start" {
        gr --upstream "$FU" --allow-resource 'fu:file:///*/x' -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = policy.bad_resource_rule ] || fail "expected policy.bad_resource_rule: $RUN_ERROR"
        [[ "$RUN_ERROR" == *"--allow-resource"* ]] || fail "the message does not name the option: $RUN_ERROR"
        gr --upstream "$FU" --deny-resource 'fu' -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = policy.bad_resource_rule ] || fail "expected policy.bad_resource_rule: $RUN_ERROR"
        gr --upstream "$FU" --allow-prompt 'fu' -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = policy.bad_tool_name ] || fail "expected policy.bad_tool_name: $RUN_ERROR"
        gr --upstream "$FU" --allow-prompt 'other.x' -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = policy.unknown_upstream ] || fail "expected policy.unknown_upstream: $RUN_ERROR"
        gr --upstream "$FU" --upstream-own-names other -- /bin/true
        expect_run_error 125
        [ "$(run_error_code)" = upstream.bad_own_names ] || fail "expected upstream.bad_own_names: $RUN_ERROR"
}

@test "run: an own-names upstream that later offers another upstream's qualified name (list_changed) neither lists nor takes its calls" {
        # Found by the red-team pass: after list_changed, calls of fv.x went to
        # the own-names upstream fu, arguments included.
        local log=$(upstream_dir)/calls.jsonl res=$OUT/answers.jsonl
        gr --upstream "fu=$PY,$AGENTS/own-names-upstream.py,fu,$log" --upstream-own-names fu \
                --upstream "fv=$PY,$AGENTS/own-names-upstream.py,fv,$log" --allow 'fu.*' --allow fv.x \
                --read "$AGENTS" --write "$OUT" -- "$PY" "$AGENTS/own-names-agent.py" "$res"
        [ "$status" -eq 0 ] || fail "glove run failed"
        [ "$(jq -c -s '[.[] | select(.id == 5) | .result.content[0].text]' "$res")" = '["answered by fv"]' ] ||
                { cat "$res" >&2; fail "fv.x was not answered by fv after fu offered fv.x"; }
        [ "$(jq -s '[.[] | select(.id == 4) | .result.tools[].name | select(. == "fv.x")] | length' "$res")" -eq 1 ] ||
                { cat "$res" >&2; fail "fv.x is listed other than once"; }
        [ "$(jq -s '[.[] | select(.me == "fu" and .name == "fv.x")] | length' "$log")" -eq 0 ] ||
                { cat "$log" >&2; fail "fu received a call of fv.x"; }
}

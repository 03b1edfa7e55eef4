#!/usr/bin/env bats
# Interoperability: real MCP clients against server-everything, directly and
# as contained agents of `glove run`; what they observe must be the same.
#
# - the SDK client tests/fixtures/interop/sdk-client.mjs exercises every
#   feature (tools, resources, resource templates, prompts, completion,
#   logging, progress, cancellation, sampling, elicitation, roots) with its
#   own handlers for the server-to-client requests, and writes normalized
#   observations (one JSON line per feature);
# - @modelcontextprotocol/inspector-cli (tests/fixtures/interop/inspector-calls.sh)
#   makes one --cli method call per run.
# Under Glove the SDK client is the agent on glove run's stdio channel; the
# inspector, which spawns or dials its server itself, reaches Glove's
# in-sandbox Streamable HTTP endpoint.
# The stdio bridge of the conformance suite (tests/fixtures/conformance/) is
# checked here too: every message kind passes through it.

load helpers
load lib/mcp

# What these tests expect of `glove run` (names from the other parts of
# issue 13; one place to adjust).
OWN_NAMES_OPT=--upstream-own-names # expose an upstream under its own names
ENDPOINT_OPT=--mcp-endpoint        # the in-sandbox endpoint ...
ENDPOINT_VALUE=http                # ... Streamable HTTP
ENDPOINT_URL_VAR=GLOVE_MCP_URL     # its URL, in the agent's environment

setup() {
        mcp_setup
        FIX=${GLOVE_FIXTURES:?run the suite through tests/integration/run.sh (GLOVE_FIXTURES unset)}
        SDK_CLIENT=$FIX/interop/sdk-client.mjs
        INSPECTOR_CALLS=$FIX/interop/inspector-calls.sh
        REF_SERVER=$FIX/conformance/everything-server.mjs
        BRIDGE=$FIX/conformance/stdio-bridge.mjs
        INSPECTOR_DIR=$NODE_MODULES/@modelcontextprotocol/inspector-cli/build
        [ -r "$INSPECTOR_DIR/index.js" ] || { echo "$INSPECTOR_DIR/index.js is missing: run scripts/deps.sh" >&2; return 1; }
        HELP=$("$GLOVE" run --help 2>&1)
}

# own_names: the glove run options that expose upstream ev under its own
# names, and the SDK client's matching --tool-prefix; without the option,
# tools are ev.TOOL.
own_names() {
        if grep -q -- "$OWN_NAMES_OPT" <<<"$HELP"; then
                NAMING=("$OWN_NAMES_OPT" ev)
                PREFIX=()
        else
                NAMING=()
                PREFIX=(--tool-prefix ev.)
        fi
}

# sdk_direct FEATURES [CLIENT-OPTION...]: the SDK client against
# server-everything, spawned.
sdk_direct() {
        local features=$1
        shift
        run --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$NODE" "$SDK_CLIENT" --profile everything \
                --modules "$NODE_MODULES" --only "$features" "$@" --out "$OUT/direct.jsonl" -- "$NODE" "$EVERYTHING" stdio
        [ "$status" -eq 0 ] || { show_records "$OUT/direct.jsonl"; fail "the SDK client failed against server-everything directly"; }
}

# sdk_glove FEATURES [CLIENT-OPTION...] [-- GLOVE-OPTION...]: the same
# client as the agent of glove run, server-everything its upstream ev.
sdk_glove() {
        local features=$1 copts=()
        shift
        while [ $# -gt 0 ] && [ "$1" != -- ]; do copts+=("$1"); shift; done
        [ $# -gt 0 ] && shift
        own_names
        gr "${NAMING[@]}" --upstream "ev=$NODE,$EVERYTHING,stdio" --allow 'ev.*' --audit-log "$AUDIT" "$@" \
                --read "$NODE_MODULES" --read "$FIX" --write "$OUT" -- \
                "$NODE" "$SDK_CLIENT" --profile everything --modules "$NODE_MODULES" --stdio "${PREFIX[@]}" \
                --only "$features" "${copts[@]}" --out "$OUT/glove.jsonl"
        [ "$status" -eq 0 ] || { show_records "$OUT/glove.jsonl" "$AUDIT"; fail "the SDK client failed through glove run"; }
}

# same_observations: every feature passed on both sides and observed the same.
same_observations() {
        local f
        for f in direct glove; do
                jq -e -s 'length > 1 and all(.[]; .pass) and .[-1].feature == "end"' "$OUT/$f.jsonl" >/dev/null ||
                        { show_records "$OUT/$f.jsonl"; fail "$f: a feature failed"; }
        done
        diff <(jq -c 'select(.feature != "end") | {feature, observed}' "$OUT/direct.jsonl") \
                <(jq -c 'select(.feature != "end") | {feature, observed}' "$OUT/glove.jsonl") >&2 ||
                fail "the SDK client observed something else through glove run than directly (< direct, > glove)"
}

# inspector_direct: inspector-calls.sh against server-everything spawned
# directly, once per file (the same nine calls with the same arguments each
# time; they take about 8 s): sets DIRECT to the directory of its answers,
# which both inspector tests read (the positive control judges them, the
# Glove test compares its answers with them).
inspector_direct() {
        DIRECT=$BATS_FILE_TMPDIR/inspector-direct
        [ -f "$DIRECT/done" ] && return 0
        rm -rf "$DIRECT"
        mkdir -p "$DIRECT"
        run --separate-stderr timeout --foreground -k 5 60 /bin/sh "$INSPECTOR_CALLS" "$DIRECT" "$NODE" "$INSPECTOR_DIR" "$NODE" "$EVERYTHING" stdio
        [ -f "$DIRECT/done" ] || fail "inspector-calls.sh did not finish directly"
}

# policy FILE JSON: writes a policy file.
policy() { printf '%s\n' "$2" >"$1"; }

@test "interop: the stdio bridge passes every message kind: the SDK client observes through it what it observes over HTTP" {
        local log=$BATS_TEST_TMPDIR/bridge.log srv=$BATS_TEST_TMPDIR/server.out url i
        "$NODE" "$REF_SERVER" --modules "$NODE_MODULES" >"$srv" 2>&1 </dev/null &
        track_pid $!
        wait_for "$srv" '^listening http://' 20
        url=$(sed -n 's/^listening //p' "$srv")
        run --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$NODE" "$SDK_CLIENT" --profile reference \
                --modules "$NODE_MODULES" --out "$OUT/direct.jsonl" --url "$url"
        [ "$status" -eq 0 ] || { show_records "$OUT/direct.jsonl"; fail "the SDK client failed against the reference server over HTTP"; }
        run --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$NODE" "$SDK_CLIENT" --profile reference \
                --modules "$NODE_MODULES" --out "$OUT/glove.jsonl" -- \
                "$NODE" "$BRIDGE" --modules "$NODE_MODULES" --log "$log" -- "$NODE" "$REF_SERVER" --modules "$NODE_MODULES" --exit-on-eof
        [ "$status" -eq 0 ] || { show_records "$OUT/glove.jsonl"; fail "the SDK client failed through the bridge"; }
        same_observations
        # Every kind of message went through the bridge, each way.
        for i in 'sampling/createMessage' 'elicitation/create' 'roots/list'; do
                sed -n 's/^< //p' "$log" | jq -e -s "any(.[]; .method == \"$i\" and has(\"id\"))" >/dev/null ||
                        { show_records "$log"; fail "no $i request from the server passed the bridge"; }
        done
        for i in 'notifications/progress' 'notifications/message' 'notifications/resources/updated'; do
                sed -n 's/^< //p' "$log" | jq -e -s "any(.[]; .method == \"$i\")" >/dev/null ||
                        { show_records "$log"; fail "no $i from the server passed the bridge"; }
        done
        sed -n 's/^> //p' "$log" | jq -e -s 'any(.[]; .method == "notifications/cancelled")' >/dev/null ||
                { show_records "$log"; fail "the client's notifications/cancelled did not pass the bridge"; }
        [ "$(sed -n 's/^> //p' "$log" | jq -s '[.[] | select(has("method") | not)] | length')" -eq 3 ] ||
                { show_records "$log"; fail "the client's 3 responses (sampling, elicitation, roots) did not all pass the bridge"; }
}

@test "interop: SDK client through glove run as directly: ping, tools/list, tools/call, progress, cancellation" {
        local features=ping,tools_list,tools_call,progress,cancellation
        # No client capabilities on either side: with no policy for them,
        # Glove declares none to the upstream either.
        sdk_direct "$features" --no-client-capabilities
        sdk_glove "$features" --no-client-capabilities
        same_observations
        audit_has '.event == "call_result" and .tool == "ev.trigger-long-running-operation" and .upstream_status == "cancelled"'
}

@test "interop: SDK client through glove run as directly: resources, resource templates, read, subscribe" {
        local features=resources_list,resource_templates,resources_read,resources_template_read,resources_subscribe
        policy "$OUT/policy.json" '{"version": 1, "resources": {"allow": ["ev:*"]}}'
        sdk_direct "$features"
        sdk_glove "$features" -- --policy "$OUT/policy.json"
        same_observations
}

@test "interop: SDK client through glove run as directly: prompts and completion" {
        local features=prompts_list,prompts_get,completion
        policy "$OUT/policy.json" '{"version": 1, "prompts": {"allow": ["ev.*"]}}'
        sdk_direct "$features"
        sdk_glove "$features" -- --policy "$OUT/policy.json"
        same_observations
}

@test "interop: SDK client through glove run as directly: logging/setLevel and notifications/message" {
        sdk_direct logging
        sdk_glove logging -- --upstream-allow ev:logging
        same_observations
}

@test "interop: SDK client through glove run as directly: sampling, elicitation and roots reach the agent where the policy allows" {
        local features=sampling,elicitation,roots
        policy "$OUT/policy.json" '{"version": 1, "upstreams": {"ev": {"client": {"sampling": true, "elicitation": true, "roots": true}}}}'
        sdk_direct "$features"
        sdk_glove "$features" -- --policy "$OUT/policy.json"
        same_observations
}

@test "interop: SDK client through glove run as directly: every feature, and the capabilities announced at initialize" {
        policy "$OUT/policy.json" '{"version": 1, "resources": {"allow": ["ev:*"]}, "prompts": {"allow": ["ev.*"]},
 "upstreams": {"ev": {"client": {"sampling": true, "elicitation": true, "roots": true, "logging": true}}}}'
        local all=initialize,ping,tools_list,tools_call,progress,cancellation,logging,sampling,elicitation,roots
        all+=,resources_list,resource_templates,resources_read,resources_template_read,resources_subscribe,prompts_list,prompts_get,completion
        sdk_direct "$all"
        sdk_glove "$all" -- --policy "$OUT/policy.json"
        same_observations
}

@test "interop: inspector-cli --cli through glove run's HTTP endpoint answers as directly: tools, resources, prompts, logging" {
        inspector_direct
        mkdir -p "$OUT/glove"
        policy "$OUT/policy.json" '{"version": 1, "allow": ["ev.*"], "resources": {"allow": ["ev:*"]}, "prompts": {"allow": ["ev.*"]},
 "upstreams": {"ev": {"client": {"logging": true}, "sandbox": {"ro": ["'"$NODE_MODULES"'"]}}}}'
        run --separate-stderr timeout --foreground -k 5 90 "$GLOVE" run "$ENDPOINT_OPT" "$ENDPOINT_VALUE" "$OWN_NAMES_OPT" ev \
                --upstream "ev=$NODE,$EVERYTHING,stdio" --policy "$OUT/policy.json" --audit-log "$AUDIT" \
                --read "$NODE_MODULES" --read "$FIX" --write "$OUT" -- \
                /bin/sh -c 'exec /bin/sh "$1" "$2" "$3" "$4" "$'"$ENDPOINT_URL_VAR"'" --transport http' \
                sh "$INSPECTOR_CALLS" "$OUT/glove" "$NODE" "$INSPECTOR_DIR"
        [ -f "$OUT/glove/done" ] || fail "inspector-calls.sh did not finish through glove run"
        local f name
        for f in "$DIRECT"/*.json; do
                name=$(basename "$f" .json)
                [ "$(cat "$DIRECT/$name.status")" = 0 ] || { cat "$DIRECT/$name.err" >&2; fail "inspector $name failed directly"; }
                [ "$(cat "$OUT/glove/$name.status")" = 0 ] || { cat "$OUT/glove/$name.err" >&2; fail "inspector $name failed through glove run"; }
                diff <(jq -S . "$f") <(jq -S . "$OUT/glove/$name.json") >&2 ||
                        fail "inspector $name answered otherwise through glove run (< direct, > glove)"
        done
}

@test "interop: inspector-cli --cli against server-everything directly answers every method (positive control)" {
        inspector_direct
        local s
        for s in "$DIRECT"/*.status; do
                [ "$(cat "$s")" = 0 ] || { cat "${s%.status}.err" >&2; fail "inspector $(basename "$s" .status) failed"; }
        done
        jq -e '.tools | map(.name) | index("echo") != null' "$DIRECT"/01-tools-list.json >/dev/null || fail "tools/list lacks echo"
        jq -e '.content[0].text == "Echo: interop"' "$DIRECT"/02-tools-call-echo.json >/dev/null || fail "echo did not echo"
        jq -e '.contents[0].uri == "demo://resource/static/document/architecture.md"' "$DIRECT"/06-resources-read.json >/dev/null ||
                fail "resources/read answered another resource"
        jq -e '.messages[0].content.text | contains("Paris, TX")' "$DIRECT"/08-prompts-get.json >/dev/null || fail "prompts/get did not fill its arguments"
}

#!/usr/bin/env bats
# glove run --mcp-endpoint command|http with MCP 2026-07-28 ("modern")
# clients (docs/mcp-mediation.md, "Endpoints", modern requests): the v2 SDK
# client (@modelcontextprotocol/client 2.4.0, tests/agents/mcp-modern-client.mjs)
# negotiates the era itself on $GLOVE_MCP_URL and through the in-sandbox
# command; a raw HTTP prober (tests/agents/endpoint-probe.py) checks the
# 2026-07-28 binding's headers, statuses and cancellation against the real
# gateway and server-everything. The endpoints' parser runs under ASan in
# run_endpoints.bats; the unit tests (tests/unit/run/test_mcp_endpoint.c)
# prove each transport rule against a fake gateway.

load helpers
load lib/mcp

setup() {
        mcp_setup
        MODERN_CLIENT=(--read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" --
                "$NODE" "$AGENTS/mcp-modern-client.mjs" --modules "$NODE_MODULES" --out "$CLIENT_OUT")
        PROBE_OUT=$OUT/probe.jsonl
        PROBE=(--read "$AGENTS" --write "$OUT" -- "$PY" "$AGENTS/endpoint-probe.py" "$PROBE_OUT")
}

expect_probe_pass() {
        if [ "$status" -ne 0 ] || grep -q '"pass": false' "$PROBE_OUT" || ! grep -q '"check": "end", "pass": true' "$PROBE_OUT"; then
                show_records "$PROBE_OUT" ${AUDIT:+"$AUDIT"}
                echo "stderr: $stderr" >&2
                fail "the endpoint prober reported failed checks (or did not finish)"
        fi
}

@test "endpoints (2026-07-28): the v2 SDK client, auto-negotiating and pinned, discovers, lists and calls over HTTP and through the in-sandbox command; a tool the policy refuses is refused" {
        gr --mcp-endpoint http,command --upstream "ev=$NODE,$EVERYTHING,stdio" --upstream-ro "ev:$NODE_MODULES" \
                --allow 'ev.echo' --audit-log "$AUDIT" "${MODERN_CLIENT[@]}" \
                modern:http,auto modern:http,pin modern:command,auto modern:command,pin
        expect_client_pass
        # Every connection was modern: the era, the version and the refusal
        # are the client's own observations.
        [ "$(grep -c '"era":"modern","version":"2026-07-28"' "$CLIENT_OUT")" -eq 4 ] || fail "not every connection was modern"
        [ "$(grep -c '"refused":{"code":-32001' "$CLIENT_OUT")" -eq 4 ] || fail "ev.get-sum was not refused by policy each time"
        audit_has '.event == "call" and .tool == "ev.echo" and .decision == "allow"'
        audit_has '.event == "call" and .tool == "ev.get-sum" and .decision == "deny"'
        # Modern HTTP requests open no session; each is on record with its
        # transport instead, under the id of the gateway's records of it;
        # nothing was refused.
        audit_lacks '.event == "endpoint_session" and .transport == "http"'
        audit_lacks '.event == "endpoint_refused"'
        jq -se '[.[] | select(.event == "endpoint_request" and .transport == "http" and .method == "tools/call") | .id] as $r
                | ($r | length) == 4 and ([.[] | select(.event == "call") | .id] as $c | all($r[]; . as $i | $c | index($i)))' \
                "$AUDIT" >/dev/null || { show_records "$AUDIT"; fail "the HTTP calls are not each on record with their transport"; }
}

@test "endpoints (2026-07-28): modern POSTs need no session; header mismatches 400 -32020, an unsupported version 400 -32022, DELETE and GET without a session 405; closing a modern call's stream cancels it" {
        gr --mcp-endpoint http --upstream "ev=$NODE,$EVERYTHING,stdio" --upstream-ro "ev:$NODE_MODULES" --allow 'ev.*' \
                --audit-log "$AUDIT" "${PROBE[@]}" modern modern_cancel stream
        expect_probe_pass
        audit_has '.event == "endpoint_refused" and .status == 400 and .reason == "endpoint.header_mismatch"'
        audit_has '.event == "endpoint_refused" and .status == 400 and .reason == "endpoint.protocol_version"'
        audit_has '.event == "endpoint_refused" and .status == 405 and .reason == "endpoint.http_method"'
        audit_has '.event == "call_result" and .tool == "ev.trigger-long-running-operation" and .upstream_status == "cancelled"' \
                "the call whose client closed its stream was cancelled"
}

@test "endpoints (2026-07-28): a client that stops sending once its request is written (a half-close) is still answered, JSON at once or SSE after the endpoint asked; nothing is cancelled" {
        local log
        log=$(upstream_dir)/up.log
        gr --mcp-endpoint http --upstream "up=$PY,$UPY,--log,$log" --allow 'up.*' --audit-log "$AUDIT" \
                "${PROBE[@]}" modern_halfclose
        expect_probe_pass
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "up.sleep" and .upstream_status == "ok")] | length' "$AUDIT")" -eq 2 ] ||
                { show_records "$AUDIT"; fail "the two half-closed calls were not both answered by the upstream"; }
        audit_lacks '.event == "call_result" and .tool == "up.sleep" and .upstream_status == "cancelled"' "a half-closed call was cancelled"
        ! grep -q '"notifications/cancelled"' "$log" || fail "the upstream was told to cancel: $(cat "$log")"
}

@test "endpoints (2026-07-28): Mcp-Param-* headers are checked against the arguments the tool annotates (x-mcp-header): one that differs, is missing or has no value is 400 -32020, audited, and never reaches the upstream" {
        local log
        log=$(upstream_dir)/up.log
        gr --mcp-endpoint http --upstream "up=$PY,$UPY,--headers,--log,$log" --allow 'up.*' --audit-log "$AUDIT" \
                "${PROBE[@]}" modern_params
        expect_probe_pass
        # From the upstream's side: the right call only.
        [ "$(grep -c '"method": *"tools/call".*"region"' "$log")" -eq 1 ] ||
                fail "the upstream did not receive exactly the one right call: $(grep tools/call "$log")"
        [ "$(jq -s '[.[] | select(.event == "endpoint_refused" and .status == 400 and .reason == "endpoint.header_mismatch")] | length' "$AUDIT")" -eq 3 ] ||
                { show_records "$AUDIT"; fail "the three refusals are not on record"; }
        [ "$(jq -s '[.[] | select(.event == "call" and .tool == "up.region")] | length' "$AUDIT")" -eq 1 ] ||
                { show_records "$AUDIT"; fail "a refused call reached the gateway"; }
}

#!/usr/bin/env bats
# glove run --mcp-endpoint http with egress on: the documented URL
# ($GLOVE_MCP_URL) works whatever the client makes of the proxy variables
# (docs/egress.md, "The MCP endpoint through the proxy"). NO_PROXY names the
# endpoint, and the egress proxy hands a request for the endpoint's own
# address to it instead of refusing it; every other loopback port stays
# egress. Real clients run contained: curl (tests/agents/endpoint-proxy-curl.sh)
# and the SDK's client over undici's ProxyAgent and EnvHttpProxyAgent
# (tests/agents/endpoint-proxy-client.mjs), against server-everything.

load helpers
load lib/mcp

setup() {
        mcp_setup
        EV=(--upstream "ev=$NODE,$EVERYTHING,stdio" --upstream-ro "ev:$NODE_MODULES" --allow 'ev.*')
        # Egress on, as every real agent CLI has it (to reach its model).
        EGRESS=(--egress-allow example.com:443)
        CURL_OUT=$OUT/curl.out
        PROXY_CLIENT=(--read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" --
                "$NODE" "$AGENTS/endpoint-proxy-client.mjs" --modules "$NODE_MODULES" --out "$CLIENT_OUT")
}

# The egress records that are not the endpoint's are refusals only, and no
# record is an egress to a loopback address.
no_loopback_egress() {
        audit_lacks '.event == "egress" and .address != ""' "an egress record connected somewhere"
        audit_lacks '.event == "egress" and .route == "mcp_endpoint" and .address != ""'
}

@test "endpoint proxy: curl reaches \$GLOVE_MCP_URL through the proxy (absolute form, CONNECT, localhost, the environment as given); a foreign Origin is still refused by the endpoint, another loopback port by the proxy" {
        gr --mcp-endpoint http "${EGRESS[@]}" "${EV[@]}" --audit-log "$AUDIT" \
                --read "$AGENTS" --write "$OUT" -- "$AGENTS/endpoint-proxy-curl.sh" "$CURL_OUT"
        if [ "$status" -ne 0 ] || ! grep -qx "end pass" "$CURL_OUT"; then
                show_records "$CURL_OUT" "$AUDIT"
                echo "stderr: $stderr" >&2
                fail "curl did not reach the endpoint through the proxy"
        fi
        # Routed to the endpoint, on record as such: CONNECT handed over,
        # absolute-form requests relayed to it.
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "CONNECT" and .host == "127.0.0.1" and .port == 8931 and .phase == "close" and .reason == "handed_over"'
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "CONNECT" and .host == "localhost" and .phase == "close" and .reason == "handed_over"'
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "POST" and .host == "127.0.0.1" and .phase == "close" and .reason == "closed"'
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "POST" and .host == "localhost" and .phase == "close"'
        no_loopback_egress
        # What the proxy hands over meets the endpoint's own checks.
        audit_has '.event == "endpoint_refused" and .status == 403 and .reason == "endpoint.bad_origin"'
        # The other port: refused as egress, in both forms, not routed.
        audit_has '.event == "egress" and .phase == "deny" and .reason == "not_allowed" and .method == "GET" and .host == "127.0.0.1" and .port == 8932 and (has("route") | not)'
        audit_has '.event == "egress" and .phase == "deny" and .reason == "not_allowed" and .method == "CONNECT" and .port == 8932'
        audit_lacks '.event == "egress" and .phase == "deny" and .port == 8931' "a request for the endpoint was refused"
        # Five MCP sessions reached the gateway and their calls the upstream.
        [ "$(jq -s '[.[] | select(.event == "endpoint_session" and .phase == "open" and .transport == "http")] | length' "$AUDIT")" -ge 5 ] ||
                { show_records "$AUDIT"; fail "fewer than five HTTP sessions were opened"; }
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "ev.echo")] | length' "$AUDIT")" -eq 5 ] ||
                { show_records "$AUDIT"; fail "the five echo calls were not all mediated"; }
}

@test "endpoint proxy: the SDK client over undici's ProxyAgent (CONNECT and absolute form) and EnvHttpProxyAgent with NO_PROXY cleared lists and calls tools" {
        gr --mcp-endpoint http "${EGRESS[@]}" "${EV[@]}" --audit-log "$AUDIT" "${PROXY_CLIENT[@]}" \
                no-proxy-env tunnel absolute localhost env-proxied
        expect_client_pass
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "CONNECT" and .reason == "handed_over"'
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "POST" and .phase == "close" and .reason == "closed"'
        no_loopback_egress
        audit_lacks '.event == "egress" and .phase == "deny" and .port == 8931' "a request for the endpoint was refused"
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "ev.echo")] | length' "$AUDIT")" -eq 4 ] ||
                { show_records "$AUDIT"; fail "the four echo calls were not all mediated"; }
}

@test "endpoint proxy: EnvHttpProxyAgent honours NO_PROXY: the endpoint is reached directly, no egress record" {
        gr --mcp-endpoint http "${EGRESS[@]}" "${EV[@]}" --audit-log "$AUDIT" "${PROXY_CLIENT[@]}" no-proxy-env env
        expect_client_pass
        audit_lacks '.event == "egress"' "the client went through the proxy"
        audit_has '.event == "call_result" and .tool == "ev.echo"'
}

@test "endpoint proxy: NO_PROXY stays empty and the endpoint's port is egress without the HTTP endpoint (command only)" {
        gr --mcp-endpoint command "${EGRESS[@]}" "${EV[@]}" --audit-log "$AUDIT" -- /bin/sh -c \
                'echo "NO_PROXY=[$NO_PROXY] no_proxy=[$no_proxy]"; curl -sS --max-time 20 --noproxy "" -o /dev/null -w "%{http_code}\n" http://127.0.0.1:8931/mcp'
        [ "$status" -eq 0 ] || fail "glove run failed: $stderr"
        expect_line "NO_PROXY=[] no_proxy=[]"
        expect_line "403"
        audit_has '.event == "egress" and .phase == "deny" and .reason == "not_allowed" and .port == 8931 and (has("route") | not)'
}

@test "endpoint proxy: a client that stops sending once its request is written (a half-close) is still answered through the proxy, in absolute form (relayed) and after a CONNECT (handed over); one that closes is cancelled" {
        local log probe_out=$OUT/probe.jsonl
        log=$(upstream_dir)/up.log
        gr --mcp-endpoint http "${EGRESS[@]}" --upstream "up=$PY,$UPY,--log,$log" --allow 'up.*' --audit-log "$AUDIT" \
                --read "$AGENTS" --write "$OUT" --read "$(upstream_dir)" -- "$PY" "$AGENTS/endpoint-probe.py" "$probe_out" \
                modern_halfclose modern_close_proxy "$log"
        if [ "$status" -ne 0 ] || grep -q '"pass": false' "$probe_out" || [ "$(grep -c '"check": "modern_halfclose' "$probe_out")" -ne 6 ] ||
                ! grep -q '"check": "modern_close_proxy.cancelled", "pass": true' "$probe_out"; then
                show_records "$probe_out" "$AUDIT"
                echo "stderr: $stderr" >&2
                fail "a half-closed client was not answered (or the three ways were not all tried), or a closed one's call not cancelled"
        fi
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "POST" and .phase == "close"'
        audit_has '.event == "egress" and .route == "mcp_endpoint" and .method == "CONNECT" and .reason == "handed_over"'
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "up.sleep" and .upstream_status == "ok")] | length' "$AUDIT")" -eq 6 ] ||
                { show_records "$AUDIT"; fail "the six half-closed calls were not all answered by the upstream"; }
        # Only the closed one's call was cancelled.
        [ "$(jq -s '[.[] | select(.event == "call_result" and .tool == "up.sleep" and .upstream_status == "cancelled")] | length' "$AUDIT")" -eq 1 ] ||
                { show_records "$AUDIT"; fail "not exactly the closed client's call was cancelled"; }
        [ "$(grep -c '"notifications/cancelled"' "$log")" -eq 1 ] || fail "the upstream was told to cancel other than once: $(cat "$log")"
}

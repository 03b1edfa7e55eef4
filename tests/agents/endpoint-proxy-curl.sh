#!/bin/bash
# curl reaching glove run's MCP HTTP endpoint ($GLOVE_MCP_URL) with egress on
# (docs/egress.md, "The MCP endpoint through the proxy"): an MCP session
# (initialize, notifications/initialized, tools/list, tools/call ev.echo,
# DELETE) through the proxy in absolute form, through a CONNECT tunnel, by
# the name localhost, and with the environment as given (NO_PROXY naming the
# endpoint); the endpoint still refuses a foreign Origin it gets that way;
# the proxy still refuses another port of the loopback.
#
#   endpoint-proxy-curl.sh OUT
#
# One line per check in OUT: "pass NAME" or "fail NAME: why"; the last line
# is "end pass" or "end fail".
out=$1
ok=1
say() { echo "$*" >>"$out"; }
check() { if [ "$2" = 1 ]; then say "pass $1"; else say "fail $1: $3"; ok=0; fi; }

port=${GLOVE_MCP_URL##*:}
port=${port%%/*}
want="127.0.0.1:$port,localhost:$port"
check no_proxy "$([ "$NO_PROXY" = "$want" ] && [ "$no_proxy" = "$want" ] && echo 1)" "NO_PROXY=$NO_PROXY no_proxy=$no_proxy, want $want"

H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')

# session NAME URL CURL-OPTION...: one MCP session through curl.
session() {
        local name=$1 url=$2
        shift 2
        local d
        d=$(mktemp -d)
        local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
        if ! curl -sS --max-time 20 "$@" "${H[@]}" -D "$d/h1" -o "$d/b1" -d "$init" "$url" 2>"$d/err"; then
                check "$name" 0 "initialize: $(cat "$d/err")"
                return
        fi
        local sid
        sid=$(tr -d '\r' <"$d/h1" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p')
        if [ -z "$sid" ] || ! grep -q '"serverInfo"' "$d/b1"; then
                check "$name" 0 "initialize answered: $(head -c 300 "$d/h1" "$d/b1")"
                return
        fi
        local S=(-H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-06-18')
        curl -sS --max-time 20 "$@" "${H[@]}" "${S[@]}" -o /dev/null -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$url"
        curl -sS --max-time 20 "$@" "${H[@]}" "${S[@]}" -o "$d/b2" -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$url"
        if ! grep -q '"ev.echo"' "$d/b2"; then
                check "$name" 0 "tools/list: $(head -c 300 "$d/b2")"
                return
        fi
        curl -sS --max-time 20 "$@" "${H[@]}" "${S[@]}" -o "$d/b3" \
                -d "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"ev.echo\",\"arguments\":{\"message\":\"via-$name\"}}}" "$url"
        if ! grep -q "via-$name" "$d/b3"; then
                check "$name" 0 "tools/call: $(head -c 300 "$d/b3")"
                return
        fi
        local del
        del=$(curl -sS --max-time 20 "$@" "${S[@]}" -o /dev/null -w '%{http_code}' -X DELETE "$url")
        check "$name" "$([ "$del" = 200 ] && echo 1)" "DELETE answered $del"
}

session absolute "$GLOVE_MCP_URL" --noproxy ''
session tunnel "$GLOVE_MCP_URL" --noproxy '' --proxytunnel
session localhost "http://localhost:$port/mcp" --noproxy ''
session localhost_tunnel "http://localhost:$port/mcp" --noproxy '' --proxytunnel
# As given: whatever this curl makes of NO_PROXY, the URL works.
session as_given "$GLOVE_MCP_URL"

# The endpoint's own checks still apply to what the proxy hands it: a
# foreign Origin is refused by the endpoint (403 endpoint.bad_origin).
for form in absolute tunnel; do
        opt=()
        [ $form = tunnel ] && opt=(--proxytunnel)
        body=$(curl -sS --max-time 20 --noproxy '' "${opt[@]}" "${H[@]}" -H 'Origin: http://evil.example' \
                -w '\n%{http_code}' -d '{"jsonrpc":"2.0","id":1,"method":"ping"}' "$GLOVE_MCP_URL" 2>&1)
        check "origin_$form" "$([ "${body##*$'\n'}" = 403 ] && [[ "$body" == *endpoint.bad_origin* ]] && echo 1)" "answered: $body"
done

# Another port of the loopback is still egress, refused by the proxy.
other=$((port + 1))
code=$(curl -sS --max-time 20 --noproxy '' -o /dev/null -w '%{http_code}' "http://127.0.0.1:$other/mcp" 2>&1)
check other_port "$([ "$code" = 403 ] && echo 1)" "absolute form answered $code"
code=$(curl -sS --max-time 20 --noproxy '' --proxytunnel -o /dev/null -w '%{http_connect}' "http://127.0.0.1:$other/mcp" 2>/dev/null)
check other_port_tunnel "$([ "$code" = 403 ] && echo 1)" "CONNECT answered $code"

say "end $([ $ok = 1 ] && echo pass || echo fail)"
[ $ok = 1 ]

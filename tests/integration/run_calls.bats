#!/usr/bin/env bats
# glove run: which tool calls reach the upstream. A real MCP client (the
# SDK's Client, tests/agents/mcp-client.mjs) runs contained and talks to
# server-filesystem through Glove; every refusal is proven from the upstream
# side too: the upstream's input is logged by tests/agents/mcp-tap.py, and
# the files a refused write would have made do not exist.

load helpers
load lib/mcp

setup() { mcp_setup; }

@test "run: an allowed call reaches the upstream; denied and unknown tools are refused before it; tools/list shows only allowed tools" {
        local d=$BATS_TEST_TMPDIR root log
        root=$d/root
        log=$(upstream_dir)/fs.tap
        mkdir -p "$root/sub"
        echo "hello from the host" >"$root/hello.txt"
        local scenario
        scenario=$(cat <<EOF
[
 {"op":"list","expect":["fs.read_text_file","fs.list_directory"],"described":true},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/hello.txt"},"expect":"ok","text":"hello from the host"},
 {"op":"call","tool":"fs.list_directory","args":{"path":"$root"},"expect":"ok","text":"hello.txt"},
 {"op":"call","tool":"fs.list_directory","args":{"path":"$d"},"expect":"policy_denied","code":-32001},
 {"op":"call","tool":"fs.write_file","args":{"path":"$root/denied.txt","content":"x"},"expect":"policy_denied","code":-32001,"rule":"deny fs.write_file"},
 {"op":"call","tool":"fs.create_directory","args":{"path":"$root/newdir"},"expect":"policy_denied","code":-32001,"rule":"default deny"},
 {"op":"call","tool":"fs.no_such_tool","args":{},"expect":"unknown_tool","code":-32602},
 {"op":"call","tool":"nope.read_text_file","args":{"path":"$root/hello.txt"},"expect":"unknown_tool"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/hello.txt","head":1},"expect":"ok","text":"hello"}
]
EOF
)
        gr --upstream "fs=$PY,$TAP,$log,$NODE,$FILESYSTEM,$root" --upstream-ro "fs:$root" \
                --allow fs.read_text_file --allow fs.list_directory --allow fs.write_file --deny fs.write_file \
                --allow-arg "fs.list_directory:/path=$root" \
                "${CLIENT[@]}" "$scenario"
        expect_client_pass
        [ ! -e "$root/denied.txt" ] || fail "a denied write_file created its file"
        [ ! -e "$root/newdir" ] || fail "a denied create_directory created its directory"
        # The upstream's side: what reached it.
        upstream_saw "$log" '.method == "tools/call" and .params.name == "read_text_file" and .params.arguments.path == "'"$root/hello.txt"'"'
        upstream_saw "$log" '.method == "tools/call" and .params.name == "list_directory" and .params.arguments.path == "'"$root"'"'
        upstream_never_saw "$log" '.method == "tools/call" and (.params.name | IN("write_file", "create_directory", "no_such_tool"))'
        upstream_never_saw "$log" '.method == "tools/call" and .params.arguments.path == "'"$d"'"'
        # Exactly the three allowed calls were forwarded.
        [ "$(tap_in "$log" | jq -s '[.[] | select(.method == "tools/call")] | length')" -eq 3 ] ||
                { show_records "$log"; fail "expected exactly 3 forwarded tools/call"; }
}

@test "run: a path_within rule from --policy stops ../ escapes on server-filesystem while paths inside succeed" {
        local d=$BATS_TEST_TMPDIR root log
        root=$d/root
        log=$(upstream_dir)/fs.tap
        mkdir -p "$root" "$d/rootkit"
        echo "inside the root" >"$root/inside.txt"
        echo "host secret" >"$d/secret.txt"
        echo "neighbour secret" >"$d/rootkit/secret.txt"
        cat >"$d/policy.json" <<EOF
{
  "version": 1,
  "allow": ["fs.read_text_file", "fs.write_file"],
  "arguments": {
    "fs.read_text_file": [{"kind": "path_within", "pointer": "/path", "root": "$root"}],
    "fs.write_file": [
      {"kind": "path_within", "pointer": "/path", "root": "$root"},
      {"kind": "max_length", "pointer": "/content", "max": 64}
    ]
  }
}
EOF
        # server-filesystem itself may use all of $d: only Glove's rule keeps
        # the agent inside $root. Any ".." component is refused, even one that
        # stays beneath the root (docs/policy.md). (NUL: see the next test.)
        local scenario
        scenario=$(cat <<EOF
[
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/inside.txt"},"expect":"ok","text":"inside the root"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/./inside.txt"},"expect":"ok","text":"inside the root"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/../secret.txt"},"expect":"policy_denied","code":-32001},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/sub/../../secret.txt"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/sub/../inside.txt"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$d/secret.txt"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$d/rootkit/secret.txt"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"$root/../rootkit/secret.txt"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"inside.txt"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":["$root/inside.txt"]},"expect":"policy_denied"},
 {"op":"call","tool":"fs.read_text_file","args":{},"expect":"policy_denied"},
 {"op":"call","tool":"fs.write_file","args":{"path":"$root/../escape.txt","content":"out"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.write_file","args":{"path":"$root/long.txt","content":"$(printf 'x%.0s' {1..65})"},"expect":"policy_denied"},
 {"op":"call","tool":"fs.write_file","args":{"path":"$root/new.txt","content":"written through glove"},"expect":"ok"}
]
EOF
)
        gr --upstream "fs=$PY,$TAP,$log,$NODE,$FILESYSTEM,$d" --upstream-rw "fs:$d" --policy "$d/policy.json" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        # Every refusal names the argument rule that decided.
        local rule
        rule=$(record "$CLIENT_OUT" 3 .rule)
        [[ "$rule" == *path_within* && "$rule" == *"$root"* ]] || { show_records "$CLIENT_OUT"; fail "the rule of a ../ refusal is $rule"; }
        rule=$(record "$CLIENT_OUT" 13 .rule)
        [[ "$rule" == *max_length* ]] || { show_records "$CLIENT_OUT"; fail "the rule of a max_length refusal is $rule"; }
        [ "$(cat "$root/new.txt")" = "written through glove" ] || fail "the allowed write did not reach the host"
        [ ! -e "$d/escape.txt" ] || fail "a ../ write escaped the root"
        [ ! -e "$root/long.txt" ] || fail "a write over max_length reached the upstream"
        upstream_never_saw "$log" '.method == "tools/call" and ((.params.arguments.path | tostring | (contains("secret") or contains("escape") or contains("long"))))'
        [ "$(tap_in "$log" | jq -s '[.[] | select(.method == "tools/call")] | length')" -eq 3 ] ||
                { show_records "$log"; fail "expected exactly 3 forwarded tools/call"; }
}

@test "run: notifications/tools/list_changed from an upstream reaches the agent and the new tool becomes callable" {
        local scenario='[
 {"op":"list","includes":["py.echo","py.grow"],"excludes":["py.extra"]},
 {"op":"call","tool":"py.extra","expect":"unknown_tool"},
 {"op":"call","tool":"py.grow","expect":"ok","text":"grown"},
 {"op":"wait_list_changed","timeout_ms":5000},
 {"op":"list","includes":["py.echo","py.grow","py.extra"]},
 {"op":"call","tool":"py.extra","expect":"ok","text":"extra"}
]'
        gr --upstream "py=$PY,$UPY" --allow 'py.*' "${CLIENT[@]}" "$scenario"
        expect_client_pass
}

@test "run: a NUL inside a path argument is refused with an answer to that request, and never forwarded" {
        # JSON allows "\u0000" in strings; docs/policy.md has path_within
        # refuse a NUL: policy_denied, carrying the request's own id (an
        # id-less -32700 would leave a real client waiting until its timeout).
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/py.log
        cat >"$d/policy.json" <<EOF
{"version": 1, "allow": ["py.echo"],
 "arguments": {"py.echo": [{"kind": "path_within", "pointer": "/text", "root": "$d"}]}}
EOF
        local scenario
        scenario=$(cat <<EOF
[
 {"op":"call","tool":"py.echo","args":{"text":"$d/ok"},"expect":"ok","text":"$d/ok"},
 {"op":"call","tool":"py.echo","args":{"text":"$d/x\u0000/../../etc/passwd"},"expect":"policy_denied","timeout_ms":3000},
 {"op":"ping"}
]
EOF
)
        gr --upstream "py=$PY,$UPY,--log,$log" --policy "$d/policy.json" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        upstream_never_saw "$log" '.method == "tools/call" and (.params.arguments.text | contains("passwd"))'
}

@test "run: tools/list follows an upstream's pages and pages a long list to the agent, hiding denied tools" {
        # mcp-upstream.py --tools 250 --page 40: 260 tools in pages of 40.
        local scenario='[
 {"op":"list","count":259,"pages":3,"includes":["py.echo","py.pad0","py.pad249"],"excludes":["py.pad7"]},
 {"op":"call","tool":"py.pad249","expect":"ok","text":"pad"},
 {"op":"call","tool":"py.pad7","expect":"policy_denied","rule":"deny py.pad7"}
]'
        gr --upstream "py=$PY,$UPY,--tools,250,--page,40" --allow 'py.*' --deny py.pad7 --audit-log "$AUDIT" \
                "${CLIENT[@]}" "$scenario"
        expect_client_pass
        audit_has '.event == "upstream_ready" and .name == "py" and .tools == 260'
}

@test "run: a contained upstream sees only the sandbox's minimal environment and the --upstream-env variables named for it; an uncontained one PATH, HOME, LANG and its own" {
        export MCP_TEST_SHARED=for-a-only MCP_TEST_SECRET=never-copied
        local scenario='[
 {"op":"call","label":"a","tool":"a.env","expect":"ok","text":"for-a-only","text_excludes":"never-copied"},
 {"op":"call","label":"b","tool":"b.env","expect":"ok","text_excludes":"MCP_TEST"},
 {"op":"call","label":"c","tool":"c.env","expect":"ok","text":"for-a-only","text_excludes":"never-copied"}
]'
        gr --upstream "a=$PY,$UPY" --upstream "b=$PY,$UPY" --upstream "c=$PY,$UPY" --upstream-uncontained c \
                --upstream-env a:MCP_TEST_SHARED --upstream-env c:MCP_TEST_SHARED --allow a.env --allow b.env --allow c.env \
                "${CLIENT[@]}" "$scenario"
        expect_client_pass
        # Python adds LC_CTYPE itself under a C locale; leave it out.
        local keys
        keys=$(record "$CLIENT_OUT" a .text | jq -r 'fromjson | keys - ["LC_CTYPE", "TERM"] | join(" ")')
        [ "$keys" = "GLOVE_SANDBOXED HOME LANG MCP_TEST_SHARED PATH TMPDIR" ] || fail "upstream a's environment has: $keys"
        [ "$(record "$CLIENT_OUT" a .text | jq -r 'fromjson | .HOME')" = /home/agent ] || fail "upstream a's HOME is not the sandbox's"
        keys=$(record "$CLIENT_OUT" b .text | jq -r 'fromjson | keys - ["LC_CTYPE", "TERM"] | join(" ")')
        [ "$keys" = "GLOVE_SANDBOXED HOME LANG PATH TMPDIR" ] || fail "upstream b's environment has: $keys"
        keys=$(record "$CLIENT_OUT" c .text | jq -r 'fromjson | keys - ["LC_CTYPE"] | join(" ")')
        [ "$keys" = "HOME LANG MCP_TEST_SHARED PATH" ] || fail "upstream c's (uncontained) environment has: $keys"
}

@test "run: an unknown tool is a -32602 protocol error (MCP spec) even where the SDK upstream itself answers an isError result; it is never forwarded" {
        local d=$BATS_TEST_TMPDIR log
        log=$(upstream_dir)/ev.tap
        # The difference Glove documents: server-everything (the TypeScript
        # SDK's McpServer) answers a call of a tool it lacks with a result
        # carrying isError, not with the protocol error of the spec.
        "$PY" - "$NODE" "$EVERYTHING" >"$d/direct.json" <<'PYEOF'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], sys.argv[2], "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def answer(i):
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i and "method" not in m:
            return m
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
answer(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "no-such-tool", "arguments": {}}})
print(json.dumps(answer(2)))
p.kill()
PYEOF
        jq -e '.result.isError == true' "$d/direct.json" >/dev/null || { cat "$d/direct.json" >&2; fail "positive control: server-everything no longer answers isError"; }
        local scenario='[
 {"op":"call","tool":"ev.no-such-tool","args":{},"expect":"unknown_tool","code":-32602,"rule":"no such upstream tool"},
 {"op":"call","tool":"ev.echo","args":{"message":"known"},"expect":"ok","text":"known"}
]'
        gr --upstream "ev=$PY,$TAP,$log,$NODE,$EVERYTHING,stdio" --allow 'ev.*' "${CLIENT[@]}" "$scenario"
        expect_client_pass
        upstream_never_saw "$log" '.method == "tools/call" and .params.name == "no-such-tool"'
        upstream_saw "$log" '.method == "tools/call" and .params.name == "echo"'
}

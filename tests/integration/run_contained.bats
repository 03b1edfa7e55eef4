#!/usr/bin/env bats
# glove run: contained upstreams (docs/mcp-mediation.md, Upstreams). Every
# upstream runs in a glove exec sandbox of its own with only the grants given
# for it: --upstream-ro, --upstream-rw, --upstream-egress, --upstream-env and
# the policy file's "upstreams": {NAME: {"sandbox": ...}}. Each property is
# tried from inside the upstream with a real program: the probe tools of
# tests/agents/mcp-upstream.py --probe (read, write, connect, fetch),
# server-filesystem and server-everything; --upstream-uncontained runs the
# same upstream on the host as the positive control.

load helpers
load lib/mcp

setup() {
        mcp_setup
        # These tests give each upstream exactly the grants they name.
        export GR_GRANTS=0
        HOSTD=$BATS_TEST_TMPDIR/host
        mkdir -p "$HOSTD"
        echo "HOST-SECRET-$$" >"$HOSTD/secret.txt"
}

# wait_for_pids MARKER: some host process carries MARKER (a positive
# control; polled, never timed).
wait_for_pids() {
        local i
        for ((i = 0; i < 300; i++)); do
                [ -n "$(host_pids "$1")" ] && return 0
                sleep 0.1
        done
        fail "positive control: no process carries $1"
}

# A call of TOOL with ARGS (JSON) expecting E (mcp-client.mjs), and what the
# text must and must not hold.
step() { # TOOL ARGS EXPECT [TEXT] [EXCLUDES]
        printf '{"op":"call","tool":"%s","args":%s,"expect":"%s"%s%s}' "$1" "$2" "$3" \
                "${4:+,\"text\":\"$4\"}" "${5:+,\"text_excludes\":\"$5\"}"
}

@test "contained: an upstream reads only what it was granted and writes only where it may; uncontained it reaches the host file (audited, warned)" {
        local ro=$BATS_TEST_TMPDIR/ro rw=$BATS_TEST_TMPDIR/rw
        mkdir -p "$ro" "$rw"
        echo "granted-ro" >"$ro/f.txt"
        local scenario="[
 $(step py.read "{\"path\":\"$HOSTD/secret.txt\"}" tool_error FileNotFoundError HOST-SECRET),
 $(step py.read "{\"path\":\"$ro/f.txt\"}" ok granted-ro),
 $(step py.write "{\"path\":\"$ro/new.txt\",\"text\":\"x\"}" tool_error "Read-only file system"),
 $(step py.write "{\"path\":\"$rw/new.txt\",\"text\":\"written inside\"}" ok written),
 $(step py.write "{\"path\":\"$HOSTD/new.txt\",\"text\":\"x\"}" tool_error FileNotFoundError)
]"
        gr --upstream "py=$PY,$UPY,--probe" --upstream-ro "py:$AGENTS" --upstream-ro "py:$ro" --upstream-rw "py:$rw" \
                --allow 'py.*' --audit-log "$AUDIT" "${CLIENT[@]}" "$scenario"
        expect_client_pass
        [ "$(cat "$rw/new.txt")" = "written inside" ] || fail "the write to the read-write grant did not reach the host"
        [ ! -e "$ro/new.txt" ] && [ ! -e "$HOSTD/new.txt" ] || fail "a write outside the read-write grant reached the host"
        audit_has '.event == "upstream_start" and .name == "py" and .contained == true and .sandbox.ro == ["'"$AGENTS"'", "'"$ro"'"]
                and .sandbox.rw == ["'"$rw"'"] and .sandbox.env == [] and .sandbox.egress == []'
        audit_has '.event == "launch" and .upstreams[0].contained == true'
        [[ "$stderr" != *upstream.uncontained* ]] || fail "a contained upstream was reported uncontained"

        # The same upstream uncontained: it runs on the host, as before.
        gr --upstream "py=$PY,$UPY,--probe" --upstream-uncontained py --allow 'py.*' --audit-log "$AUDIT.2" "${CLIENT[@]}" \
                "[$(step py.read "{\"path\":\"$HOSTD/secret.txt\"}" ok "HOST-SECRET-$$")]"
        expect_client_pass
        [[ "$stderr" == *"glove: warning: upstream.uncontained: upstream py runs uncontained"* ]] ||
                fail "no upstream.uncontained warning on stderr"
        AUDIT=$AUDIT.2 audit_has '.event == "upstream_start" and .name == "py" and .contained == false and (has("sandbox") | not)'
        AUDIT=$AUDIT.2 audit_has '.event == "launch" and .upstreams[0].contained == false'
}

@test "contained: an upstream is offline unless granted egress; --upstream-egress lets it through its own proxy to that target only" {
        local pf=$BATS_TEST_TMPDIR/http.port
        "$PY" -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"hello from the host server\n"
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.server_port)
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()' "$pf" 3>&- &
        track_pid $!
        disown $!
        wait_for "$pf" '^[0-9]+$' 10
        local port
        port=$(cat "$pf")
        local url="http://127.0.0.1:$port/x"
        gr --upstream "py=$PY,$UPY,--probe" --upstream-ro "py:$AGENTS" --allow 'py.*' --audit-log "$AUDIT" "${CLIENT[@]}" "[
 $(step py.connect "{\"host\":\"127.0.0.1\",\"port\":$port}" tool_error),
 $(step py.fetch "{\"url\":\"$url\"}" tool_error "" "hello from the host server")
]"
        expect_client_pass
        # Granted: through the upstream's own audited proxy, to that target.
        gr --upstream "py=$PY,$UPY,--probe" --upstream-ro "py:$AGENTS" --upstream-egress "py:127.0.0.1:$port" --allow 'py.*' \
                --audit-log "$AUDIT.2" "${CLIENT[@]}" "[
 $(step py.fetch "{\"url\":\"$url\"}" ok "hello from the host server"),
 $(step py.connect "{\"host\":\"127.0.0.1\",\"port\":$port}" tool_error),
 $(step py.fetch "{\"url\":\"http://127.0.0.1:1/x\"}" tool_error)
]"
        expect_client_pass
        # Its proxy's refusal is said on Glove's stderr, under its name.
        [[ "$stderr" == *"[upstream py] glove: warning: egress.denied: GET 127.0.0.1:1 refused with 403 (not_allowed: no --upstream-egress py:HOST[:PORT] names it)"* ]] ||
                fail "the upstream's egress refusal is not on stderr: $stderr"
        AUDIT=$AUDIT.2 audit_has '.event == "upstream_start" and .sandbox.egress == ["127.0.0.1:'"$port"'"]'
        # Each connection of the upstream is on record in the run's log, under
        # the run's id and the upstream's name; its glove exec writes no
        # launch or exit of its own.
        local run_id
        run_id=$(jq -r -s 'map(select(.event == "launch"))[0].run_id' "$AUDIT.2")
        AUDIT=$AUDIT.2 audit_has '.event == "egress" and .upstream == "py" and .phase == "open" and .port == '"$port"'
                and .decision == "allow" and .run_id == "'"$run_id"'"'
        AUDIT=$AUDIT.2 audit_has '.event == "egress" and .upstream == "py" and .phase == "close" and .bytes_down > 0'
        [ "$(jq -s 'map(select(.event == "launch" or .event == "exit")) | length' "$AUDIT.2")" -eq 2 ] ||
                { show_records "$AUDIT.2"; fail "the upstream's glove exec wrote records of its own"; }
        [ "$(jq -r -s 'map(.run_id) | unique | length' "$AUDIT.2")" -eq 1 ] || fail "more than one run_id in the log"
        # Positive control: on the host the same connection succeeds.
        gr --upstream "py=$PY,$UPY,--probe" --upstream-uncontained py --allow 'py.*' "${CLIENT[@]}" \
                "[$(step py.connect "{\"host\":\"127.0.0.1\",\"port\":$port}" ok connected)]"
        expect_client_pass
}

@test "contained: server-filesystem with --upstream-rw fs:DIR sees only DIR, even with / as its own root and a policy that allows the call" {
        local dir=$BATS_TEST_TMPDIR/data
        mkdir -p "$dir"
        echo "inside the grant" >"$dir/in.txt"
        gr --upstream "fs=$NODE,$FILESYSTEM,$dir" --upstream-ro "fs:$NODE_MODULES" --upstream-rw "fs:$dir" --allow 'fs.*' \
                --audit-log "$AUDIT" "${CLIENT[@]}" "[
 $(step fs.read_text_file "{\"path\":\"$dir/in.txt\"}" ok "inside the grant"),
 $(step fs.write_file "{\"path\":\"$dir/out.txt\",\"content\":\"written by fs\"}" ok),
 $(step fs.read_text_file "{\"path\":\"$HOSTD/secret.txt\"}" tool_error "" HOST-SECRET)
]"
        expect_client_pass
        [ "$(cat "$dir/out.txt")" = "written by fs" ] || fail "server-filesystem's write did not reach the host"
        # Its own root is / (it accepts every path): the sandbox is what stops
        # it; of the test's directory it sees the granted one only.
        gr --upstream "fs=$NODE,$FILESYSTEM,/" --upstream-ro "fs:$NODE_MODULES" --upstream-rw "fs:$dir" --allow 'fs.*' \
                "${CLIENT[@]}" "[
 $(step fs.read_text_file "{\"path\":\"$dir/in.txt\"}" ok "inside the grant"),
 $(step fs.read_text_file "{\"path\":\"$HOSTD/secret.txt\"}" tool_error ENOENT HOST-SECRET),
 $(step fs.list_directory "{\"path\":\"$BATS_TEST_TMPDIR\"}" ok "[DIR] data" host)
]"
        expect_client_pass
        # Positive control: uncontained, the same call reads the host file.
        gr --upstream "fs=$NODE,$FILESYSTEM,/" --upstream-uncontained fs --allow 'fs.*' "${CLIENT[@]}" \
                "[$(step fs.read_text_file "{\"path\":\"$HOSTD/secret.txt\"}" ok "HOST-SECRET-$$")]"
        expect_client_pass
}

@test "contained: server-everything works with no grant but its own package, offline and with the sandbox's environment" {
        export MCP_TEST_SECRET=never-copied
        gr --upstream "ev=$NODE,$EVERYTHING,stdio" --upstream-ro "ev:$NODE_MODULES" --allow 'ev.*' --audit-log "$AUDIT" \
                "${CLIENT[@]}" "[
 $(step ev.echo '{"message":"hi"}' ok "Echo: hi"),
 $(step ev.get-sum '{"a":2,"b":3}' ok 5),
 $(step ev.get-env '{}' ok GLOVE_SANDBOXED MCP_TEST_SECRET)
]"
        expect_client_pass
        audit_has '.event == "upstream_ready" and .name == "ev"'
        audit_has '.event == "upstream_start" and .name == "ev" and .contained == true and .sandbox.ro == ["'"$NODE_MODULES"'"]'
}

@test "contained: grants and environment from the policy file's upstreams.NAME.sandbox; \"contained\": false runs it on the host" {
        export MCP_TEST_VAR=from-the-policy
        local ro=$BATS_TEST_TMPDIR/pro
        mkdir -p "$ro"
        echo "policy-granted" >"$ro/f.txt"
        cat >"$BATS_TEST_TMPDIR/policy.json" <<EOF
{"version": 1, "allow": ["py.*"],
 "upstreams": {"py": {"sandbox": {"ro": ["$AGENTS", "$ro"], "env": ["MCP_TEST_VAR"]}}}}
EOF
        gr --upstream "py=$PY,$UPY,--probe" --policy "$BATS_TEST_TMPDIR/policy.json" --audit-log "$AUDIT" "${CLIENT[@]}" "[
 $(step py.read "{\"path\":\"$ro/f.txt\"}" ok policy-granted),
 $(step py.read "{\"path\":\"$HOSTD/secret.txt\"}" tool_error FileNotFoundError HOST-SECRET),
 $(step py.env '{}' ok from-the-policy)
]"
        expect_client_pass
        audit_has '.event == "upstream_start" and .sandbox.ro == ["'"$AGENTS"'", "'"$ro"'"] and .sandbox.env == ["MCP_TEST_VAR"]'
        cat >"$BATS_TEST_TMPDIR/policy2.json" <<EOF
{"version": 1, "allow": ["py.*"], "upstreams": {"py": {"sandbox": {"contained": false}}}}
EOF
        gr --upstream "py=$PY,$UPY,--probe" --policy "$BATS_TEST_TMPDIR/policy2.json" --audit-log "$AUDIT.2" "${CLIENT[@]}" \
                "[$(step py.read "{\"path\":\"$HOSTD/secret.txt\"}" ok "HOST-SECRET-$$")]"
        expect_client_pass
        [[ "$stderr" == *"upstream.uncontained"* ]] || fail "no upstream.uncontained warning"
        AUDIT=$AUDIT.2 audit_has '.event == "upstream_start" and .contained == false'
}

@test "contained: a bad grant is refused at start (125) with its stable code, before anything runs" {
        local d=$BATS_TEST_TMPDIR w=$BATS_TEST_TMPDIR/w
        mkdir -p "$w"
        local agent=(--write "$w" -- /bin/sh -c "touch $w/ran")
        local up=(--upstream "py=$PY,$UPY")
        check() { # CODE ARGS...
                local code=$1
                shift
                gr "${up[@]}" "$@" "${agent[@]}"
                expect_run_error 125
                [ "$(run_error_code)" = "$code" ] || fail "$*: expected $code, got: $RUN_ERROR"
                [ ! -e "$w/ran" ] || fail "$*: the agent ran"
        }
        check grant.missing_path --upstream-ro "py:$d/nonexistent"
        check grant.system_directory --upstream-rw py:/etc
        check grant.restricted --upstream-ro py:/proc
        check upstream.bad_grant --upstream-ro "nope:$AGENTS"
        check upstream.bad_grant --upstream-rw "$AGENTS"
        check upstream.bad_grant --upstream-egress nope:example.com
        check egress.bad_host --upstream-egress "py:exa mple.com"
        check upstream.bad_limit --upstream-ro "py:$AGENTS" --upstream-limit py:cores=2
        check usage.bad_number --upstream-ro "py:$AGENTS" --upstream-limit py:memory=1
        check upstream.uncontained_grants --upstream-uncontained py --upstream-limit py:pids=64
        check upstream.bad_uncontained --upstream-uncontained nope
        check upstream.uncontained_grants --upstream-uncontained py --upstream-ro "py:$AGENTS"
        export GLOVE_X=1
        check env.reserved --upstream-ro "py:$AGENTS" --upstream-env py:GLOVE_X
        # An upstream may not reach the run's audit log either.
        check grant.exposes_audit_log --upstream-ro "py:$AGENTS" --upstream-rw "py:$d" --audit-log "$d/audit.jsonl"
        # The policy file's sandbox is checked as strictly.
        local p=$d/p.json
        echo '{"version":1,"upstreams":{"py":{"sandbox":{"ro":["'"$AGENTS"'"],"net":[]}}}}' >"$p"
        check policy.unknown_field --policy "$p"
        echo '{"version":1,"upstreams":{"py":{"other":{},"sandbox":{}}}}' >"$p"
        check policy.unknown_field --policy "$p"
        echo '{"version":1,"upstreams":{"py":{"sandbox":{"ro":["relative/path"]}}}}' >"$p"
        check policy.bad_grant --policy "$p"
        echo '{"version":1,"upstreams":{"other":{"sandbox":{"ro":["'"$AGENTS"'"]}}}}' >"$p"
        check policy.unknown_upstream --policy "$p"
        echo '{"version":1,"upstreams":{"py":{"sandbox":{"contained":false,"ro":["'"$AGENTS"'"]}}}}' >"$p"
        check policy.uncontained_grants --policy "$p"
        echo '{"version":1,"upstreams":{"py":{"sandbox":{"ro":["/nonexistent-glove-grant"]}}}}' >"$p"
        check grant.missing_path --policy "$p"
        # Without its script granted, the contained upstream cannot start:
        # the interpreter inside says so on its stderr, each line prefixed
        # with its name, and Glove stops, saying what it could see and how
        # to grant more.
        gr "${up[@]}" "${agent[@]}"
        expect_status 125
        [[ "$stderr" == *"[upstream py] "*"$UPY"*"No such file or directory"* ]] ||
                fail "the script was visible without a grant, or the upstream's stderr is not prefixed with its name"
        [[ "$stderr" == *"glove: upstream.start: upstream py failed during initialization: "*"it runs contained"*"add --upstream-ro py:PATH"*"granted now: nothing besides the system"* ]] ||
                fail "the upstream.start line does not say what the upstream sees and how to grant more"
        [ "$(printf '%s\n' "$stderr" | grep -v -e '^\[upstream py\]' -e '^glove: warning: ' | grep -c .)" = 1 ] ||
                fail "a line of the upstream's stderr reached Glove's without its prefix"
        [ ! -e "$w/ran" ] || fail "the agent ran"
        # What it was granted is named; a terminal escape it writes is shown,
        # not acted on; uncontained, its lines are prefixed too, without the
        # hint about grants.
        local say='import sys;sys.stderr.write("esc:\x1b[2J:end\n");sys.exit(3)'
        gr --upstream "py=$PY,-c,$say" --upstream-ro "py:$AGENTS" "${agent[@]}"
        expect_status 125
        [[ "$stderr" == *'[upstream py] esc:\x1b[2J:end'* ]] || fail "the upstream's escape was not shown escaped"
        [[ "$stderr" != *$'\e'* ]] || fail "a terminal escape of the upstream reached Glove's stderr"
        [[ "$stderr" == *"granted now: read-only $AGENTS"* ]] || fail "the upstream.start line does not name its grant"
        gr --upstream "py=$PY,-c,$say" --upstream-uncontained py "${agent[@]}"
        expect_status 125
        [[ "$stderr" == *'[upstream py] esc:\x1b[2J:end'* ]] || fail "an uncontained upstream's stderr is not prefixed"
        [[ "$stderr" == *"glove: upstream.start: upstream py failed during initialization"* && "$stderr" != *"granted now"* ]] ||
                fail "an uncontained upstream's failure speaks of grants"
}

@test "contained: killing glove run (SIGKILL, or SIGTERM) leaves no upstream sandbox process behind" {
        local m sig
        for sig in KILL TERM; do
                m=$(mcp_marker)-$sig
                local a=$BATS_TEST_TMPDIR/audit-$sig.jsonl
                # An upstream that ignores SIGTERM and detaches a process of its
                # own: inside its sandbox both die with it.
                local stubborn="trap '' TERM; setsid /bin/sh -c 'exec $PY -c \"import time; time.sleep(600)\" $m-orphan' </dev/null >/dev/null 2>&1 & exec $PY $UPY $m"
                "$PY" "$LIB/spawn.py" "$GLOVE" run --upstream "py=/bin/sh,-c,$stubborn" --upstream-ro "py:$AGENTS" \
                        --upstream "ev=$NODE,$EVERYTHING,stdio,$m" --upstream-ro "ev:$NODE_MODULES" \
                        --audit-log "$a" -- /bin/sleep 600 >/dev/null 2>"$BATS_TEST_TMPDIR/err-$sig" </dev/null 3>&- &
                local pid=$!
                track_pid "$pid"
                wait_for "$a" '"event":"launch"' 30
                # Positive control: the upstreams and the orphan run.
                wait_for_pids "$m-orphan"
                [ -n "$(host_pids "$m")" ] || fail "positive control: no upstream process carries the marker"
                kill -"$sig" "$pid"
                # Poll (no timing assertion): everything must go.
                local i
                for ((i = 0; i < 200; i++)); do
                        [ -z "$(host_pids "$m")" ] && break
                        sleep 0.1
                done
                no_leftovers "$m"
                wait "$pid" 2>/dev/null || true
        done
}

@test "contained: when the agent exits, a contained upstream that ignores SIGTERM is killed with its sandbox, and what it detached dies too" {
        local m
        m=$(mcp_marker)
        local stubborn="trap '' TERM; setsid /bin/sh -c 'exec $PY -c \"import time; time.sleep(600)\" $m-orphan' </dev/null >/dev/null 2>&1 & exec $PY $UPY $m"
        gr --upstream "py=/bin/sh,-c,$stubborn" --upstream-ro "py:$AGENTS" --allow 'py.*' --audit-log "$AUDIT" "${CLIENT[@]}" \
                '[{"op":"call","tool":"py.echo","args":{"text":"hi"},"expect":"ok"}]'
        expect_client_pass
        no_leftovers "$m"
        audit_has '.event == "upstream_exit" and .name == "py" and .signal == 9' "the stubborn upstream was killed with SIGKILL"
}

@test "contained: --upstream-limit sets one upstream's own limits: a wall-time breach kills that upstream's sandbox, not the run" {
        gr --upstream "py=$PY,$UPY" --upstream-ro "py:$AGENTS" --upstream-limit py:wall-time=1000 --upstream-limit py:nofile=64 \
                --upstream "other=$PY,$UPY" --upstream-ro "other:$AGENTS" --allow 'py.*' --allow 'other.*' --audit-log "$AUDIT" \
                "${CLIENT[@]}" "[
 $(step py.sleep '{"ms":60000}' upstream_unavailable),
 $(step other.echo '{"text":"still here"}' ok "still here")
]"
        expect_client_pass
        [[ "$stderr" == *"limits.wall_time: $PY exceeded its wall_time limit"* ]] || fail "the upstream's limit breach was not reported"
        audit_has '.event == "upstream_start" and .name == "py" and .sandbox.limits == {"wall-time": "1000", "nofile": "64"}'
        audit_has '.event == "upstream_exit" and .name == "py" and .signal == 9'
        audit_has '.event == "upstream_start" and .name == "other" and .sandbox.limits == {}'
}

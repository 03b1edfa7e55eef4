#!/usr/bin/env bats
# Runs sharing one audit log can be told apart (issue 14): every record of a
# run (launch, exit, egress, upstream and tool call records alike) carries
# the same run_id, new for every run, and the launch record carries the
# effective limits, egress rules and tool policy.

load helpers
load lib/mcp

setup() { mcp_setup; }

# A one-shot HTTP server on loopback: prints its port to $1.
start_http() {
        local pf=$BATS_TEST_TMPDIR/http.port
        "$PY" -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"hello from the host\n"
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write("%d\n" % s.server_address[1])
s.serve_forever()' "$pf" 3>&- &
        track_pid $!
        disown $!
        wait_for "$pf" '^[0-9]+$' 10
        HTTP_PORT=$(cat "$pf")
}

@test "audit: three runs appending to one log: each record has a run_id, one per run, distinct between runs" {
        local log=$BATS_TEST_TMPDIR/shared.jsonl n1 n2
        AUDIT=$log
        # 1: glove exec with audited egress (launch, egress, exit).
        start_http
        gx --audit-log "$log" --memory 256M --egress-allow "127.0.0.1:$HTTP_PORT" --egress-allow-private localhost:9 \
                -- /usr/bin/curl -sS --max-time 10 --proxytunnel "http://127.0.0.1:$HTTP_PORT/x"
        if [ "$status" -eq 125 ] && [[ "$(glove_error_code)" == cgroup.* ]]; then
                gx --audit-log "$log" --egress-allow "127.0.0.1:$HTTP_PORT" --egress-allow-private localhost:9 \
                        -- /usr/bin/curl -sS --max-time 10 --proxytunnel "http://127.0.0.1:$HTTP_PORT/x"
        fi
        expect_status 0
        expect_output "hello from the host"
        n1=$(wc -l <"$log")
        # 2: glove run with a tool call (upstream, launch, call, exit records).
        local root=$BATS_TEST_TMPDIR/root
        mkdir -p "$root"
        echo "hi" >"$root/hi.txt"
        gr --audit-log "$log" --upstream "fs=$NODE,$FILESYSTEM,$root" --upstream-ro "fs:$root" --allow fs.read_text_file \
                --allow-arg "fs.read_text_file:/path=$root/" "${CLIENT[@]}" \
                '[{"op":"call","tool":"fs.read_text_file","args":{"path":"'"$root/hi.txt"'"},"expect":"ok","text":"hi"}]'
        expect_client_pass
        n2=$(wc -l <"$log")
        # 3: a plain glove exec.
        gx --audit-log "$log" --wall-time 60000 --nofile 64 -- /bin/true
        expect_status 0
        # Degraded (no delegated cgroup): the record must say memory and pids
        # are not enforced.
        local cg=True
        [[ "$stderr" == *"limits.degraded"* ]] && cg=False
        run "$PY" - "$log" "$n1" "$n2" "$cg" <<'EOF'
import json, re, sys
path, n1, n2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
recs = [json.loads(l) for l in open(path, encoding="utf-8")]
runs = [recs[:n1], recs[n1:n2], recs[n2:]]
ids = []
for i, rs in enumerate(runs):
    assert rs, "run %d wrote no record" % i
    for r in rs:
        assert re.fullmatch(r"[0-9a-f]{32}", r.get("run_id", "")), "record without a run id: %r" % r
        assert list(r)[:3] == ["ts", "event", "run_id"], "run_id is not the third field: %r" % r
    got = {r["run_id"] for r in rs}
    assert len(got) == 1, "run %d has several run ids: %r" % (i, got)
    ids.append(got.pop())
assert len(set(ids)) == 3, "two runs share a run id: %r" % ids
ev = [[r["event"] for r in rs] for rs in runs]
assert "egress" in ev[0] and "launch" in ev[0] and "exit" in ev[0], ev[0]
assert "call" in ev[1] and "call_result" in ev[1] and "upstream_ready" in ev[1], ev[1]
assert "upstream_start" in ev[1] and "launch" in ev[1], ev[1]
launch = [next(r for r in rs if r["event"] == "launch") for rs in runs]
# Effective limits, egress rules and tool policy.
assert launch[0]["limits"]["memory_bytes"] in (256 << 20, 4 << 30), launch[0]["limits"]
assert launch[0]["egress"]["allow"][0].startswith("127.0.0.1:"), launch[0]["egress"]
assert launch[0]["egress"]["allow_private"] == ["localhost:9"], launch[0]["egress"]
assert launch[1]["tool_policy"]["allow"] == ["fs.read_text_file"], launch[1]["tool_policy"]
assert launch[1]["tool_policy"]["deny"] == [], launch[1]["tool_policy"]
assert list(launch[1]["tool_policy"]["arguments"]) == ["fs.read_text_file"], launch[1]["tool_policy"]
assert launch[1]["egress"] is None, launch[1]
assert launch[2]["limits"]["wall_time_ms"] == 60000, launch[2]["limits"]
for k in ("cpu_time_ms", "memory_bytes", "pids", "disk_bytes", "output_bytes"):
    assert isinstance(launch[2]["limits"][k], int) and launch[2]["limits"][k] > 0, (k, launch[2]["limits"])
assert launch[2]["egress"] is None and launch[2]["home_from"] is None, launch[2]
assert launch[2]["limits"]["nofile"] == 64 and launch[1]["limits"]["nofile"] == 1024, launch[2]["limits"]
assert launch[2]["limits"]["cgroup"] is (sys.argv[4] == "True"), (sys.argv[4], launch[2]["limits"])
print("ok")
EOF
        [ "$status" -eq 0 ] && [ "${lines[-1]}" = ok ] || { show_records "$log"; fail "the shared log: $output"; }
}

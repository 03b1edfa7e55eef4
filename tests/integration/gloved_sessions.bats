#!/usr/bin/env bats
# gloved managed sessions: construction, capabilities, start refusals, and
# (where the launch resolves) a session run to its receipt.

load helpers
load "$GLOVE_IT_LIB/gloved"

SESSCTL="$LIB/sessctl.py"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        mkdir -p -m 700 "$T/gs"
        "$PY" "$SESSCTL" policy "$GLOVED" "$T/policy.json" \
                '["/usr/bin/python3","-c","import sys; print(\"hello managed\"); sys.exit(3)"]'
}

teardown() {
        gloved_teardown
        return 0
}

sc() { run --separate-stderr timeout --foreground -k 5 60 "$PY" "$SESSCTL" "$@"; }

start_managed() {
        start_gloved "$T/g" --session-policy "$T/policy.json" --session-store "$T/gs/sessions" \
                --materialization-root "$T/mroot" "$@"
}

@test "gloved sessions: --materialization-root needs the policy and the store" {
        gloved_fails --runtime-dir "$T/r" --state-dir "$T/s" --materialization-root "$T/m"
        expect_status 2
        [[ "$stderr" == *"usage.root_needs_store"* ]] || fail "expected usage.root_needs_store"
}

@test "gloved sessions: capabilities advertise lifecycle only with --materialization-root" {
        start_gloved "$T/a" --session-policy "$T/policy.json" --session-store "$T/gs/sessions"
        sc call "$RT" capabilities '{}'
        expect_status 0
        "$PY" -c 'import json,sys; c=json.loads(sys.argv[1])["result"]; assert c["lifecycle_operational"] is False and "start_session" not in c["methods"] and "list_sessions" in c["methods"] and c["agent_runtime_adapter_schema_version"]==0 and c["cgroup_placement"] is None, c' "$output" || fail "$output"
        sc call "$RT" start_session '{"session_id":"x"}'
        [[ "$output" == *'"code":"method_not_found"'* ]] || fail "$output"
        # It says which option gloved lacks.
        [[ "$output" == *'"reason":"option_missing"'* && "$output" == *"without --materialization-root DIR"* ]] || fail "$output"
        stop_gloved
        start_managed
        [ "$(stat -c %a "$T/mroot")" = 700 ] || fail "the materialization root is not 0700"
        sc call "$RT" capabilities '{}'
        if grep -q "managed sessions are not operational" "$GD_ERR"; then
                "$PY" -c 'import json,sys; c=json.loads(sys.argv[1])["result"]; assert c["lifecycle_operational"] is False and "start_session" not in c["methods"] and c["resource_mechanisms_missing"] and c["cgroup_placement"]=="none" and c["lifecycle_reason"].startswith("managed sessions are not operational: cgroup."), c' "$output" || fail "$output"
                skip "no delegated cgroup here: $(grep 'not operational' "$GD_ERR")"
        fi
        "$PY" -c 'import json,sys; c=json.loads(sys.argv[1])["result"]; assert c["lifecycle_operational"] is True and c["lifecycle_reason"] is None and c["managed_runtime_ids"]==["pyrt"] and "attach" in c["methods"] and len(c["resource_mechanisms"])==6, c' "$output" || fail "$output"
        # Where run cgroups go (docs/limits.md): on a hybrid host, v1; on a
        # v2 host beside gloved's cgroup or in its delegated parent.
        "$PY" -c 'import json,sys; c=json.loads(sys.argv[1])["result"]; m=[x["mechanism"] for x in c["resource_mechanisms"] if x["limit"]=="memory_bytes"][0]; p=c["cgroup_placement"]; assert (m=="cgroup_v1" and p=="v1") or (m=="cgroup_v2" and p in ("under","beside","delegated_subgroup","delegated_moved")), c' "$output" || fail "$output"
}

@test "gloved sessions: a wrong materialization root is refused" {
        mkdir -m 755 "$T/open"
        gloved_fails --runtime-dir "$T/r" --state-dir "$T/s" --session-policy "$T/policy.json" \
                --session-store "$T/gs/sessions" --materialization-root "$T/open"
        expect_status 1
        [[ "$stderr" == *"dirs.insecure"* ]] || fail "$stderr"
}

@test "gloved sessions: unknown session, expired plan, unknown signal, cleanup of a live state" {
        start_managed
        grep -q "not operational" "$GD_ERR" && skip "no delegated cgroup here"
        sc call "$RT" start_session '{"session_id":"nope"}'
        [[ "$output" == *'"code":"session.not_found"'* ]] || fail "$output"
        "$PY" "$SESSCTL" plan "$T/short.json" '{}' 1500
        sc create "$RT" short "$T/short.json"
        [[ "$output" == *'"state":"created"'* ]] || fail "$output"
        sleep 2 # the plan expires
        sc call "$RT" start_session '{"session_id":"short"}'
        [[ "$output" == *'"code":"plan.expired"'* ]] || fail "$output"
        sc call "$RT" session_status '{"session_id":"short"}'
        [[ "$output" == *'"state":"created"'* ]] || fail "an expired plan changed state: $output"
        sc call "$RT" signal '{"session_id":"short","signal":"SIGSEGV"}'
        [[ "$output" == *'"code":"signal.unknown"'* ]] || fail "$output"
        sc call "$RT" cleanup_session '{"session_id":"short"}'
        [[ "$output" == *'"code":"session.not_terminal"'* ]] || fail "$output"
        sc call "$RT" write_stdin '{"session_id":"short","data_b64":"aGk="}'
        [[ "$output" == *'"code":"session.not_running"'* ]] || fail "$output"
        sc call "$RT" list_sessions '{}'
        [[ "$output" == *'"session_id":"short"'* ]] || fail "$output"
}

@test "gloved sessions: start -> running -> exit with a verified receipt" {
        start_managed
        grep -q "not operational" "$GD_ERR" && skip "no delegated cgroup here"
        "$PY" "$SESSCTL" plan "$T/plan.json" '{}'
        sc create "$RT" s1 "$T/plan.json"
        sc call "$RT" start_session '{"session_id":"s1"}'
        echo "$output"
        [[ "$output" == *'"result"'* ]] || fail "start failed: $output"
        # Idempotent: a second start answers the current state (or, when the
        # agent already ended, that the session is terminal).
        sc call "$RT" start_session '{"session_id":"s1"}'
        [[ "$output" == *'"result"'* || "$output" == *'"code":"session.terminal"'* ]] || fail "$output"
        for _ in $(seq 100); do
                sc call "$RT" session_status '{"session_id":"s1"}'
                [[ "$output" == *'"state":"exited"'* ]] && break
                sleep 0.1
        done
        [[ "$output" == *'"state":"exited"'* ]] || fail "$output"
        sc watch "$RT" s1
        [[ "$output" == *'hello managed'* ]] || fail "no transcript: $output"
        sc call "$RT" receipts_page '{"after_sequence":0,"limit":10}'
        "$PY" -c 'import json,sys; p=json.loads(sys.argv[1])["result"]; r=p["envelopes"][-1]["envelope"]["receipt"]; assert r["state"]=="exited" and r["exit_code"]==3 and r["termination"]=={"kind":"exit"} and "executable_digest" in r["launch_binding"] and "cgroup" not in r["launch_binding"], r' "$output" || fail "$output"
        sc call "$RT" start_session '{"session_id":"s1"}'
        [[ "$output" == *'"code":"session.terminal"'* ]] || fail "$output"
}

@test "gloved sessions: start answers preparing at once; a stop right after 8 starts leaves each terminal with a receipt" {
        start_managed
        grep -q "not operational" "$GD_ERR" && skip "no delegated cgroup here"
        "$PY" "$SESSCTL" plan "$T/plan.json" '{}'
        for i in 1 2 3 4 5 6 7 8; do
                sc create "$RT" "p$i" "$T/plan.json"
                [[ "$output" == *'"state":"created"'* ]] || fail "$output"
        done
        # Eight starts pipelined on one connection, then SIGTERM at once: each
        # answer is "preparing" (the launch is prepared off the loop thread),
        # and gloved stops with some of them preparing, starting or running.
        run "$PY" - "$RT" "$GD_PID" <<'PY'
import json, os, signal, socket, struct, sys
rt, pid = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.path.join(rt, "gloved.sock"))
s.settimeout(30)
def send(o):
    b = json.dumps(o).encode()
    s.sendall(struct.pack(">I", len(b)) + b)
def exact(n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        assert c, "EOF"
        buf += c
    return buf
def read():
    return json.loads(exact(struct.unpack(">I", exact(4))[0]))
send({"id": 0, "method": "authenticate", "params": {"secret": open(rt + "/bootstrap-secret").read().strip()}})
read()
for i in range(1, 9):
    send({"id": i, "method": "start_session", "params": {"session_id": "p%d" % i}})
got = [read() for _ in range(8)]
os.kill(pid, signal.SIGTERM)
for r in got:
    assert r.get("result", {}).get("state") == "preparing", r
print("ok")
PY
        [ "$status" -eq 0 ] && [[ "$output" == *ok* ]] || fail "$output"
        wait_exit "$GD_PID" 20 || fail "gloved did not stop"
        start_managed
        for i in 1 2 3 4 5 6 7 8; do
                sc call "$RT" session_status "{\"session_id\":\"p$i\"}"
                [[ "$output" == *'"state":"exited"'* || "$output" == *'"state":"failed"'* ]] ||
                        fail "p$i is not terminal after the stop: $output"
        done
        sc call "$RT" receipts_page '{"after_sequence":0,"limit":100}'
        "$PY" -c 'import json,sys; p=json.loads(sys.argv[1])["result"]; ids=sorted(e["envelope"]["session_id"] for e in p["envelopes"] if e["envelope"]["kind"]=="session.terminal"); assert ids==["p%d"%i for i in range(1,9)], ids' "$output" ||
                fail "not one terminal receipt per session: $output"
        ! grep -q "$T/mroot" /proc/self/mountinfo || fail "a mount under the materialization root was left"
}

# run_to_end ID: create, start and wait until exited; then cleanup.
run_to_end() {
        sc create "$RT" "$1" "$T/plan.json"
        [[ "$output" == *'"state":"created"'* ]] || fail "create $1: $output"
        sc call "$RT" start_session "{\"session_id\":\"$1\"}"
        [[ "$output" == *'"result"'* ]] || fail "start $1: $output"
        local idx
        for ((idx = 0; idx < 200; idx++)); do
                sc call "$RT" session_status "{\"session_id\":\"$1\"}"
                [[ "$output" == *'"state":"exited"'* ]] && break
                sleep 0.05
        done
        [[ "$output" == *'"state":"exited"'* ]] || fail "$1 did not exit: $output"
        sc call "$RT" cleanup_session "{\"session_id\":\"$1\"}"
        [[ "$output" == *'"result"'* ]] || fail "cleanup $1: $output"
}

# ack_all: acknowledges the receipt journal's head.
ack_all() {
        sc call "$RT" receipts_page '{"after_sequence":0,"limit":1}'
        if [[ "$output" == *receipts.compacted* ]]; then
                local base
                base=$(jq -r .error.message <<<"$output" | sed -n 's/.*page from after_sequence \([0-9]*\).*/\1/p')
                sc call "$RT" receipts_page "{\"after_sequence\":$base,\"limit\":1}"
        fi
        local seq mac
        seq=$(jq -r .result.head.sequence <<<"$output")
        mac=$(jq -r .result.head.mac <<<"$output")
        sc call "$RT" receipts_ack "{\"sequence\":$seq,\"head_mac\":\"$mac\"}"
        [[ "$output" == *'"result"'* ]] || fail "ack: $output"
}

@test "gloved sessions: an id is taken again only once its receipt left the journal; the new session then starts" {
        start_managed --compact-records 8
        grep -q "not operational" "$GD_ERR" && skip "no delegated cgroup here"
        "$PY" "$SESSCTL" plan "$T/plan.json" '{}'
        run_to_end r1
        ack_all
        # Enough records for the session store to compact r1 away.
        local i
        for i in 1 2 3; do
                sc create "$RT" "fill$i" "$T/plan.json"
        done
        sc call "$RT" session_status '{"session_id":"r1"}'
        [[ "$output" == *session.not_found* ]] || fail "r1 is still in the store: $output"
        # Its receipt is still in the receipt journal: the id is in use.
        sc create "$RT" r1 "$T/plan.json"
        [[ "$output" == *'"code":"session.id_in_use"'* ]] || fail "r1 was taken again: $output"
        # Eight acknowledged receipts compact the receipt journal: r1's leaves.
        for i in 2 3 4 5 6 7 8; do
                run_to_end "r$i"
        done
        ack_all
        for i in 4 5 6; do
                sc create "$RT" "fill$i" "$T/plan.json"
        done
        run_to_end r1
}

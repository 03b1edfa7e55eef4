#!/usr/bin/env bats
# gloved's managed sessions with a real Python agent (issue 9, "Tests"):
# an ephemeral copy and a retained ext4 image (across cleanup and a gloved
# restart), each of the six limits and its receipt, stop with a grace,
# several attached clients, a slow attached client, 32 sessions at once, and
# attach to an ended session. The agent is tests/agents/managed_agent.py,
# run by the policy that tests/integration/lib/managed.py writes.

load helpers
load "$GLOVE_IT_LIB/gloved"

MANAGED="$LIB/managed.py"
SESSCTL="$LIB/sessctl.py"
VERIFY="$AGENTS/verify_receipts.py"
ZERO64=0000000000000000000000000000000000000000000000000000000000000000
# Loops here count with "idx", never "i": bats' own `run` assigns a global i
# (bats_any_in in bats-core's common.bash), which would restart a loop.

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
}

teardown() {
        gloved_teardown
        return 0
}

# start_py: host directories $T/host/{src,ref,keep}, the Python policy, and
# gloved with a store and a materialization root. Skips, saying why, when
# the runtime is not operational (no delegated cgroups for this user).
start_py() {
        grep -q -- --materialization-root "$GLOVED" ||
                skip "this gloved has no managed runtime (--materialization-root unknown)"
        mkdir -p "$T/host/src/sub" "$T/host/ref" "$T/host/keep"
        printf 'original a\n' >"$T/host/src/a.txt"
        printf 'original b\n' >"$T/host/src/sub/b.txt"
        printf 'mode\n' >"$T/host/src/mode.txt"
        chmod 755 "$T/host/src/mode.txt"
        printf 'reference\n' >"$T/host/ref/r.txt"
        chmod -R a+rX "$T/host"
        mkdir -m 700 -p "$T/cfg"
        "$PY" "$MANAGED" pypolicy "$T/cfg/policy.json" "$T/host"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat" ${GLOVED_EXTRA[@]+"${GLOVED_EXTRA[@]}"})
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json capabilities
        expect_status 0
        if [[ "$output" == *'"lifecycle_operational":false'* && "$output" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): managed sessions are not operational"
        fi
        [[ "$output" == *'"start_session"'* ]] || fail "gloved does not advertise start_session: $output"
}

# new_py ID TEMPLATE PROFILE: creates (does not start) a session.
new_py() {
        "$PY" "$MANAGED" pyplan "$T/cfg/policy.json" "$T/cfg/$1.plan" "$2" "$3"
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

# start_py_session ID TEMPLATE PROFILE: creates and starts it, and waits
# until it is past starting (write_stdin answers session.not_running before
# the running transition).
start_py_session() {
        new_py "$@"
        ctl start "$1"
        expect_status 0
        local idx s
        for ((idx = 0; idx < 300; idx++)); do
                s=$(state "$1")
                [[ "$s" == created || "$s" == preparing || "$s" == starting ]] || return 0
                sleep 0.1
        done
        fail "session $1 is still $s"
}

# sc ARGS...: sessctl.py ARGS..., captured by bats run.
sc() {
        run --separate-stderr timeout --foreground -k 5 120 "$PY" "$SESSCTL" "$@"
}

# state ID: the session's state (session_status).
state() {
        "$PY" "$SESSCTL" call "$RT" session_status "{\"session_id\":\"$1\"}" | jq -r .result.state
}

# wait_ended ID [SECONDS]: until the session is exited or failed.
wait_ended() {
        local idx s
        for ((idx = 0; idx < ${2:-60} * 10; idx++)); do
                s=$(state "$1")
                [ "$s" = exited ] || [ "$s" = failed ] && return 0
                sleep 0.1
        done
        fail "session $1 did not end (state $s)"
}

# receipts: all receipts so far, one compact JSON receipt per line, in order.
receipts() {
        "$PY" "$SESSCTL" call "$RT" receipts_page '{"after_sequence":0,"limit":256}' |
                jq -c '.result.envelopes[].envelope.receipt'
}

# receipt_is ID JQ-EXPR: the terminal receipt of ID satisfies the expression.
receipt_is() {
        local r
        r=$(receipts | jq -c --arg id "$1" 'select(.session_id == $id)')
        [ -n "$r" ] || fail "no receipt for $1"
        jq -e "$2" <<<"$r" >/dev/null || fail "receipt of $1 is not '$2': $(jq -c '{termination,exit_code,usage,state}' <<<"$r")"
}

# host_listing DIR: every entry with its type, mode, size and content digest.
host_listing() {
        (cd "$1" && find . -printf '%p %y %m %s %T@\n' | sort && find . -type f -exec sha256sum {} + | sort)
}

# ---------------------------------------------------------------- 1 materializations

@test "gloved managed: a Python agent edits its ephemeral copy (host unchanged) and a retained image that survives cleanup and a restart" {
        command -v debugfs >/dev/null || skip "debugfs (e2fsprogs) is needed to read the image"
        [ -e /dev/loop-control ] && is_root || skip "retained images need root and /dev/loop-control"
        start_py
        host_listing "$T/host" >"$T/before"
        start_py_session e1 py-edit roomy
        wait_ended e1
        sc watch "$RT" e1
        expect_status 0
        [[ "$output" == *'"state":"exited"'* ]] || fail "the session did not exit: $output"
        local o
        o=$(sed -n 's/^output //p' <<<"$output")
        [[ "$o" == *"edited original a|agent was here|"* ]] || fail "the agent did not edit its copy: $o"
        [[ "$o" == *"ref-refused EROFS"* ]] || fail "the read alias was writable: $o"
        [[ "$o" == *"read reference"* ]] || fail "the read alias was not readable: $o"
        receipt_is e1 '.termination.kind == "exit" and .exit_code == 0'
        receipt_is e1 '[.launch_binding.mounts[] | .kind] | (index("ephemeral_tmpfs") != null and index("retained_image") != null and index("read_bind") != null)'
        # The retained image's loop device and host identity stay in the
        # kept binding; the receipt has its alias, kind and size only.
        receipt_is e1 '.launch_binding.materializations == [{"alias":"keep","kind":"retained_image","size":8388608}]'
        receipt_is e1 '[.. | strings | select(startswith("/dev/") or startswith("/sys/"))] == []'
        jq -e '.materializations[0].loop.device | startswith("/dev/loop")' "$ST/bindings/e1.json" >/dev/null ||
                fail "the kept binding does not name the loop device: $(jq -c .materializations "$ST/bindings/e1.json")"
        # The host source is unchanged, byte for byte (and so is everything else).
        host_listing "$T/host" >"$T/after"
        diff "$T/before" "$T/after" >&2 || fail "the host tree changed"
        local img=$T/mat/images/e1/keep.ext4
        [ -f "$img" ] || fail "no retained image at $img"
        [ "$(stat -c %s "$img")" -eq $((8 << 20)) ] || fail "the image is not exactly max_bytes"
        # A mount gloved did not make, where the image was mounted: cleanup
        # detaches only a retained image it identified (a loop device's
        # ext4), so this one stays, and cleanup says why.
        local mp=$T/mat/mounts/e1/keep seen
        mkdir -p "$mp" "$T/decoy"
        echo decoy >"$T/decoy/mark"
        mount --bind "$T/decoy" "$mp" || fail "mount --bind of the decoy failed"
        sc call "$RT" cleanup_session '{"session_id":"e1"}'
        seen=$(cat "$mp/mark" 2>/dev/null || true)
        umount "$mp" 2>/dev/null || true
        [ "$seen" = decoy ] || fail "cleanup_session unmounted a mount gloved did not make: $output"
        [[ "$output" == *materialize.cleanup* ]] || fail "cleanup over a foreign mount must fail materialize.cleanup: $output"
        sc call "$RT" cleanup_session '{"session_id":"e1"}'
        expect_status 0
        [ "$(jq -c .result <<<"$output")" = '{"kept":["keep"],"removed":["src"]}' ] || fail "cleanup: $output"
        [ -f "$img" ] || fail "cleanup removed the retained image"
        # gloved restarted with the same directories: the image is intact.
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS on SIGTERM"
        start_gloved "$T/g" "${GD_ARGS[@]}"
        [ "$(state e1)" = exited ] || fail "e1 is not exited after the restart"
        sc call "$RT" cleanup_session '{"session_id":"e1"}'
        expect_status 0
        [ "$(jq -c .result.kept <<<"$output")" = '["keep"]' ] || fail "second cleanup: $output"
        [ -f "$img" ] || fail "the image is gone after the restart"
        run debugfs -R 'cat /note.txt' "$img"
        [[ "$output" == *"kept by the agent"* ]] || fail "the change is not in the image: $output"
        # Not mounted and not attached any more.
        ! grep -q " $T/mat/" /proc/self/mountinfo || fail "a mount under the materialization root is left"
        ! losetup -a 2>/dev/null | grep -q "$img" || fail "a loop device still holds the image"
}

# ---------------------------------------------------------------- 2 limits

# limit_case ID MODE PROFILE LIMIT: the session ends with termination limit LIMIT.
limit_case() {
        start_py_session "$1" "py-$2" "$3"
        wait_ended "$1" 60
        [ "$(state "$1")" = exited ] || fail "$1 is $(state "$1")"
        receipt_is "$1" ".termination.kind == \"limit\" and .termination.limit == \"$4\""
        receipt_is "$1" '.usage | (has("cpu_time_ms") and has("disk_bytes") and has("output_bytes") and has("peak_memory_bytes") and has("wall_time_ms"))'
        receipt_is "$1" '.usage.wall_time_ms > 0 and .started_at_ms != null and .ended_at_ms >= .started_at_ms'
}

@test "gloved managed: each of the six limits ends a session with its receipt" {
        start_py
        limit_case l-cpu cpu cpu cpu_time_ms
        receipt_is l-cpu '.usage.cpu_time_ms >= 500 and .termination.signal == 9'
        # At whole seconds the per-process RLIMIT_CPU backstop once sat at the
        # limit and its SIGXCPU was receipted as a plain signal.
        limit_case l-cpu1 cpu cpu1s cpu_time_ms
        receipt_is l-cpu1 '.usage.cpu_time_ms >= 1000 and .termination.signal == 9'
        limit_case l-mem mem mem memory_bytes
        receipt_is l-mem '.usage.peak_memory_bytes > 0 and .usage.peak_memory_bytes <= 50331648'
        limit_case l-pids fork pids pids
        receipt_is l-pids '.termination.signal == 9'
        sc watch "$RT" l-pids
        [[ "$output" != *coped* ]] || fail "the agent outlived the refused fork: $output"
        limit_case l-wall sleep wall wall_time_ms
        receipt_is l-wall '.usage.wall_time_ms >= 1000 and .termination.signal == 9'
        limit_case l-out flood out terminal_output_bytes
        # As with glove exec: the agent's output is counted (so at least the
        # limit), exactly the limit is relayed (to the transcript here).
        receipt_is l-out '.usage.output_bytes >= 40000'
        sc call "$RT" attach '{"session_id":"l-out"}'
        [ "$(jq -r .result.transcript_bytes <<<"$output")" -eq 40000 ] || fail "the transcript is not the limit: $output"
        limit_case l-disk disk disk disk_bytes
        receipt_is l-disk '.usage.disk_bytes == 1048576 and .exit_code == 3'
        sc watch "$RT" l-disk
        [[ "$output" == *"disk ENOSPC"* ]] || fail "the agent did not see ENOSPC: $output"
        # A session inside its limits ends with a plain exit and no limit.
        start_py_session l-ok py-quick roomy
        wait_ended l-ok
        receipt_is l-ok '.termination == {"kind":"exit"} and .exit_code == 0 and .usage.disk_bytes == 0'
}

# ---------------------------------------------------------------- 3 stop

# transitions ID: "from>to" for each history entry, space separated.
transitions() {
        "$PY" "$SESSCTL" call "$RT" session_status "{\"session_id\":\"$1\"}" |
                jq -r '[.result.history[] | .from + ">" + .to] | join(" ")'
}

@test "gloved managed: stop with a grace kills an agent that ignores SIGTERM; one that exits on TERM keeps its code" {
        start_py
        start_py_session st1 py-noterm roomy
        start_py_session st2 py-term roomy
        # Both agents must be waiting (their handlers installed) before the stop.
        local id idx
        for id in st1 st2; do
                for ((idx = 0; idx < 100; idx++)); do
                        "$PY" "$SESSCTL" call "$RT" attach "{\"session_id\":\"$id\"}" |
                                jq -r .result.transcript_b64 | base64 -d | grep -q ready && break
                        sleep 0.1
                done
                [ "$idx" -lt 100 ] || fail "$id never printed ready"
        done
        sc call "$RT" stop_session '{"session_id":"st1","grace_ms":300}'
        expect_status 0
        [ "$(jq -r .result.state <<<"$output")" = stopping ] || fail "stop did not answer stopping: $output"
        sc call "$RT" stop_session '{"session_id":"st2","grace_ms":20000}'
        expect_status 0
        wait_ended st1 30
        wait_ended st2 30
        receipt_is st1 '.termination == {"kind":"stopped","signal":9} and .exit_code == null'
        receipt_is st2 '.termination.kind == "stopped" and (.exit_code == 5 or .termination.signal == 15)'
        # The agent chose its exit code: it was not killed after the 20 s grace.
        receipt_is st2 '.exit_code == 5'
        for id in st1 st2; do
                local h
                h=$(transitions "$id")
                [[ "$h" == *"running>stopping stopping>exited" ]] || fail "$id history: $h"
        done
        # Idempotent on an ended session? stop answers a stable code or the state.
        sc call "$RT" stop_session '{"session_id":"st1","grace_ms":0}'
        expect_status 0
}

# ---------------------------------------------------------------- 4, 5 attach

@test "gloved managed: two attached clients see the same output, in order, while a third writes stdin" {
        start_py
        start_py_session a1 py-echo roomy
        "$PY" -u "$SESSCTL" watch "$RT" a1 >"$T/w1" 2>&1 &
        track_pid $!
        "$PY" -u "$SESSCTL" watch "$RT" a1 >"$T/w2" 2>&1 &
        track_pid $!
        wait_for "$T/w1" '^attach ' 20 && wait_for "$T/w2" '^attach ' 20 || fail "the watchers did not attach"
        local idx
        for idx in 1 2 3 4 5 6 7 8; do
                printf 'line%s\n' "$idx" >"$T/in"
                run --separate-stderr "$GLOVE" ctl --runtime-dir "$RT" write-stdin a1 <"$T/in"
                expect_status 0
        done
        printf 'quit\n' | "$GLOVE" ctl --runtime-dir "$RT" write-stdin a1
        wait_for "$T/w1" '^session_ended ' 30 && wait_for "$T/w2" '^session_ended ' 30 ||
                fail "the watchers did not see the end: $(cat "$T/w1" "$T/w2")"
        local o1 o2
        o1=$(sed -n 's/^output //p' "$T/w1")
        o2=$(sed -n 's/^output //p' "$T/w2")
        [ -n "$o1" ] && [ "$o1" = "$o2" ] || fail "the two clients saw different output: $o1 / $o2"
        "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])
want = ["got:line%d" % i for i in range(1, 9)] + ["got:quit"]
got = [l for l in o.replace("\r", "").split("\n") if l.startswith("got:")]
assert got == want, got' "$o1" || fail "the output is not every line in order: $o1"
        grep -q '"kind":"exit"' "$T/w1" || fail "no exit termination: $(cat "$T/w1")"
        receipt_is a1 '.exit_code == 7'
}

@test "gloved managed: a slow client skips output (session_output_gap) and a client that never reads is closed; neither stalls the session nor another client" {
        # A short send deadline, so that the client that never reads is
        # closed soon; the trickling client keeps making progress.
        GLOVED_EXTRA=(--client-timeout-ms 3000)
        start_py
        start_py_session b1 py-burst roomy
        "$PY" -u "$SESSCTL" trickle "$RT" b1 "$T/tready" "$T/go" >"$T/trickle" 2>&1 &
        local tpid=$!
        track_pid "$tpid"
        "$PY" -u "$SESSCTL" slow "$RT" b1 "$T/ready" "$T/go" >"$T/slow" 2>&1 &
        local spid=$!
        track_pid "$spid"
        local idx
        for ((idx = 0; idx < 200; idx++)); do
                [ -e "$T/ready" ] && [ -e "$T/tready" ] && break
                sleep 0.1
        done
        [ -e "$T/ready" ] && [ -e "$T/tready" ] || fail "the slow clients did not attach"
        "$PY" -u "$SESSCTL" watch "$RT" b1 >"$T/fast" 2>&1 &
        local fpid=$!
        track_pid "$fpid"
        for ((idx = 0; idx < 200; idx++)); do
                grep -q '^attach ' "$T/fast" && break
                sleep 0.1
        done
        [ "$idx" -lt 200 ] || fail "the other client did not attach"
        printf 'go\n' | "$GLOVE" ctl --runtime-dir "$RT" write-stdin b1 || fail "write-stdin failed"
        # The session ends while one slow client trickles and the other has
        # read nothing.
        wait_exit "$fpid" 60 || fail "the other client did not finish"
        local last
        last=$(tail -n 1 "$T/fast")
        [[ "$last" == "session_ended "*'"state":"exited"'* ]] || fail "the other client did not see the end: ${last:0:300}"
        ! grep -q 'session_output_gap' "$T/fast" || fail "the other client had output skipped"
        wait_ended b1
        grep -q 'burst-done' "$T/fast" || fail "the other client missed output"
        receipt_is b1 '.termination.kind == "exit" and .exit_code == 0 and .usage.output_bytes > 4194304'
        # The client that never reads is closed by the send deadline.
        wait_for "$GD_ERR" 'connection dropped: send deadline passed' 30 || fail "the never-reading client was not closed"
        [ ! -s "$T/slow" ] && [ ! -s "$T/trickle" ] || fail "a slow client finished early: $(cat "$T/slow" "$T/trickle")"
        touch "$T/go"
        wait_exit "$spid" 60 || fail "the never-reading client did not finish"
        wait_exit "$tpid" 60 || fail "the trickling client did not finish"
        local s t
        s=$(cat "$T/slow")
        t=$(cat "$T/trickle")
        echo "# never-reading client: $s; trickling client: $t" >&3
        [[ "$s" == *"last=EOF" ]] || fail "the never-reading client was not closed: $s"
        # The trickling client kept its attachment: it saw gaps (skipped
        # bytes counted, each gap after output) and the end of the session.
        [[ "$t" =~ gaps=([0-9]+)\ skipped=([-0-9]+)\ last=session_ended$ ]] || fail "the trickling client: $t"
        [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[2]}" -gt 0 ] || fail "no output gap was reported: $t"
        running "$GD_PID" || fail "gloved died"
}

# ---------------------------------------------------------------- 6 many

@test "gloved managed: 32 sessions at once, each in its own cgroup; receipts verify; nothing left behind" {
        start_py
        grep -v " $T/" /proc/self/mountinfo | awk '{print $5}' | sort >"$T/mounts.before"
        losetup -a -O NAME,BACK-FILE 2>/dev/null | sort >"$T/loops.before" || true
        # Each with a retained image where this user can attach loop devices
        # (root), else with the ephemeral copy only.
        local idx tpl=py-many nloops=32
        if ! { [ -e /dev/loop-control ] && is_root; }; then
                tpl=py-many-eph nloops=0
                echo "# uid $(id -u): ephemeral copies only (retained images need root and /dev/loop-control)" >&3
        fi
        for ((idx = 0; idx < 32; idx++)); do
                new_py "m$idx" "$tpl" roomy
        done
        local t0=$SECONDS
        local pids=()
        for ((idx = 0; idx < 32; idx++)); do
                "$GLOVE" ctl --runtime-dir "$RT" start "m$idx" >"$T/start.$idx" 2>&1 &
                pids+=($!)
        done
        wait "${pids[@]}" # not a bare wait: gloved is a child too
        for ((idx = 0; idx < 32; idx++)); do
                grep -Eq "^session m$idx: (preparing|starting|running|stopping|exited)$" "$T/start.$idx" ||
                        fail "start m$idx: $(cat "$T/start.$idx")"
        done
        for ((idx = 0; idx < 32; idx++)); do
                wait_ended "m$idx" 120
        done
        echo "# 32 sessions started and ended in $((SECONDS - t0)) s" >&3
        receipts >"$T/receipts"
        [ "$(wc -l <"$T/receipts")" -eq 32 ] || fail "expected 32 receipts"
        jq -e -s 'all(.[]; .state == "exited" and .termination.kind == "exit" and .exit_code == 0)' "$T/receipts" >/dev/null ||
                fail "not every session exited 0: $(jq -c '{session_id,termination}' "$T/receipts")"
        # Cgroups and loop devices stay local: in the bindings gloved keeps,
        # never in a receipt.
        jq -e -s 'all(.[]; .launch_binding | has("cgroup") | not)' "$T/receipts" >/dev/null ||
                fail "a receipt names its cgroup"
        cat "$ST"/bindings/m*.json | jq -r '.cgroup.path' | sort >"$T/cgroups"
        [ "$(sort -u "$T/cgroups" | grep -c .)" -eq 32 ] || fail "the cgroups are not distinct: $(cat "$T/cgroups")"
        cat "$ST"/bindings/m*.json | jq -r '.materializations[]? | .loop.device' | grep -c . >"$T/nloops" || true
        [ "$(cat "$T/nloops")" -eq "$nloops" ] || fail "expected $nloops loop attachments, got $(cat "$T/nloops")"
        cp "$ST/receipts.journal" "$T/j"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --journal "$T/j"
        expect_status 0
        [[ "$output" == "ok: journal: 32 records verified"* ]] || fail "verifier: $output $stderr"
        # Nothing left: no run cgroup, mount or loop device.
        local cg
        while read -r cg; do
                [ ! -e "/sys/fs/cgroup$cg" ] || fail "run cgroup $cg is left"
        done <"$T/cgroups"
        grep -v " $T/" /proc/self/mountinfo | awk '{print $5}' | sort >"$T/mounts.after"
        diff "$T/mounts.before" "$T/mounts.after" >&2 || fail "mounts changed"
        ! grep -q " $T/mat" /proc/self/mountinfo || fail "a mount under the materialization root is left"
        losetup -a -O NAME,BACK-FILE 2>/dev/null | sort >"$T/loops.after" || true
        diff "$T/loops.before" "$T/loops.after" >&2 || fail "loop devices are left"
}

# ---------------------------------------------------------------- 7 ended

@test "gloved managed: attach to an exited session returns the transcript and the final status" {
        start_py
        start_py_session x1 py-echo roomy
        printf 'hello\nquit\n' >"$T/in"
        run --separate-stderr "$GLOVE" ctl --runtime-dir "$RT" write-stdin x1 <"$T/in"
        expect_status 0
        wait_ended x1
        sc watch "$RT" x1
        expect_status 0
        local a
        a=$(sed -n 's/^attach //p' <<<"$output")
        jq -e '.result.attached == false and .result.state == "exited" and .result.termination.kind == "exit" and (.result.receipt_sequence | type) == "number"' <<<"$a" >/dev/null ||
                fail "attach result: $a"
        [[ "$output" == *'output "'*"got:hello"*"got:quit"* ]] || fail "no transcript: $output"
        run --separate-stderr timeout -k 5 30 "$GLOVE" ctl --runtime-dir "$RT" attach x1 --no-stdin
        expect_status 7
        [[ "$output" == *"got:hello"* ]] || fail "glove ctl attach printed no transcript"
        [[ "$stderr" == *"session x1 exited: exit, status 7"* ]] || fail "no final status: $stderr"
}

#!/usr/bin/env bats
# Managed sessions in gloved: bad input and failure (issue 9, "Bad input and
# failure"), then the escape probes of the exec suite run as managed
# sessions. Every refusal has a stable code and message and leaves nothing
# half-made: no mount under the materialization root or of its images in
# /proc/self/mountinfo, no loop device of ours, no image, no run cgroup, no
# session directory; the store shows the session failed with the code as its
# reason, exactly one session.terminal receipt exists for a session that
# entered preparing, the chain verifies (tests/agents/verify_receipts.py),
# and gloved restarts cleanly on the same store.

load helpers
load "$GLOVE_IT_LIB/gloved"

FS="$LIB/managed_fs.py"
SESSCTL="$LIB/sessctl.py"
VERIFY="$AGENTS/verify_receipts.py"
ZERO64=0000000000000000000000000000000000000000000000000000000000000000

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        mkdir -m 700 -p "$T/cfg"
}

teardown() {
        gloved_teardown
        if [ -n "${TMPFS_ROOT:-}" ]; then
                umount "$TMPFS_ROOT" 2>/dev/null || true
        fi
        return 0
}

# ---------------------------------------------------------------- helpers

# fs_gloved SPEC_JSON: writes the policy (managed_fs.py policy) and starts
# gloved with a store and the materialization root $T/mat. Skips with the
# reason when managed sessions are not operational for this user.
fs_gloved() {
        grep -q -- --materialization-root "$GLOVED" ||
                skip "this gloved has no managed runtime (--materialization-root unknown)"
        "$PY" "$FS" policy "$T/cfg/policy.json" "$1"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat")
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json capabilities
        expect_status 0
        if [[ "$output" == *'"lifecycle_operational":false'* ]]; then
                local why
                why=$("$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); print("; ".join(m.get("reason","") for m in c.get("resource_mechanisms_missing",[]))[:300] or "not operational")' "$output" 2>/dev/null || echo "not operational")
                skip "managed sessions are not operational for uid $(id -u): $why"
        fi
        [[ "$output" == *'"start_session"'* ]] || fail "gloved does not advertise start_session: $output"
        CAPS=$output
}

# need_retained: skips unless gloved built the retained mechanism (root with
# loop-control and mkfs.ext4).
need_retained() {
        [ -e /dev/loop-control ] && is_root || skip "retained images need root and /dev/loop-control"
        grep -q "retained" "$GD_ERR" && grep -q "retained.no_" "$GD_ERR" &&
                skip "gloved did not construct the retained mechanism: $(grep retained "$GD_ERR" | head -1)"
        return 0
}

# new_fs ID TEMPLATE GRANTS_JSON [OFFSET_MS]: a plan, created (not started).
new_fs() {
        "$PY" "$FS" plan "$T/cfg/$1.plan" "$T/cfg/policy.json" "$2" "$3" "${4:-60000}"
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

# call METHOD PARAMS_JSON: one raw request; $output is the response.
call() {
        run --separate-stderr timeout -k 5 60 "$PY" "$SESSCTL" call "$RT" "$@"
        [ "$status" -eq 0 ] || fail "sessctl call $1 failed"
}

# expect_error CODE: the raw response is an error with CODE and a message.
expect_error() {
        "$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); e=r.get("error") or {}; sys.exit(0 if e.get("code")==sys.argv[2] and e.get("message") else 1)' \
                "$output" "$1" || fail "expected error $1 with a message, got: $output"
}

# status_field ID EXPR: a Python expression over s (the session-status result).
status_field() {
        "$GLOVE" ctl --runtime-dir "$RT" --json session-status "$1" |
                "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}

# wait_state ID STATE [SECONDS]
wait_state() {
        local i st=""
        for ((i = 0; i < ${3:-20} * 10; i++)); do
                st=$(status_field "$1" 's["state"]')
                [ "$st" = "$2" ] && return 0
                sleep 0.1
        done
        fail "session $1 is $st, not $2"
}

# terminal_receipts ID: how many session.terminal receipts name ID (one page
# holds every receipt of these tests); prints "N KIND CODE" of the last one.
terminal_receipts() {
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 | "$PY" -c '
import json, sys
p = json.load(sys.stdin)
rs = [e["envelope"] for e in p["envelopes"] if e["envelope"]["session_id"] == sys.argv[1] and e["envelope"]["kind"] == "session.terminal"]
t = rs[-1]["receipt"]["termination"] if rs else {}
print(len(rs), t.get("kind", "-"), t.get("code", "-"))' "$1"
}

# verify_chain: the whole receipt journal verifies independently.
verify_chain() {
        cp "$ST/receipts.journal" "$T/j.copy"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --journal "$T/j.copy"
        [ "$status" -eq 0 ] || fail "the receipt chain does not verify"
        [[ "$output" == "ok: journal: "* ]] || fail "verifier: $output"
}

# nothing_left ID: nothing of session ID is left on the host.
nothing_left() {
        local id=$1 i
        if grep -F -- "$T/mat/" /proc/self/mountinfo >&2; then
                fail "a mount under the materialization root is left"
        fi
        if grep -F -- "/$id/" /proc/self/mountinfo | grep -F -- "$T" >&2; then
                fail "a mount of session $id is left"
        fi
        if command -v losetup >/dev/null && losetup -a 2>/dev/null | grep -F -e "$T/mat" -e "$id/" >&2; then
                fail "a loop device of ours is left"
        fi
        [ ! -e "$T/mat/images/$id" ] || fail "session $id's image directory is left: $(ls -la "$T/mat/images/$id")"
        [ ! -e "$T/mat/mounts/$id" ] || fail "session $id's mount directory is left"
        if [ -d "$T/mat" ] && [ -n "$(find "$T/mat" -type f -print -quit)" ]; then
                fail "a file is left under the materialization root: $(find "$T/mat" -type f)"
        fi
        # The run cgroup (glove-GLOVEDPID-*) goes right after the terminal
        # transition; allow it the moment to be removed.
        for ((i = 0; i < 50; i++)); do
                [ -z "$(find /sys/fs/cgroup -maxdepth 8 -type d -name "glove-$GD_PID-*" -print -quit 2>/dev/null)" ] &&
                        break
                sleep 0.1
        done
        [ -z "$(find /sys/fs/cgroup -maxdepth 8 -type d -name "glove-$GD_PID-*" -print 2>/dev/null)" ] ||
                fail "a run cgroup of gloved is left: $(find /sys/fs/cgroup -maxdepth 8 -type d -name "glove-$GD_PID-*")"
}

# restart_clean: gloved stops cleanly and starts again on the same store,
# receipt journal and materialization root.
restart_clean() {
        stop_gloved || fail "gloved did not stop"
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS on SIGTERM: $(cat "$GD_ERR")"
        start_gloved "$T/g" "${GD_ARGS[@]}" || fail "gloved did not restart on the same store: $(cat "$GD_ERR")"
        ctl --json capabilities
        expect_status 0
}

# failed_cleanly ID CODE: the session is failed with CODE as the reason of
# its last transition, one session.terminal receipt (start_failed, CODE),
# nothing is left, the chain verifies, gloved restarts and still says so.
failed_cleanly() {
        local id=$1 code=$2
        wait_state "$id" failed
        [ "$(status_field "$id" 's["history"][-1]["reason"]')" = "$code" ] ||
                fail "the failed transition's reason is not $code: $(status_field "$id" 's["history"]')"
        [[ "$(status_field "$id" '",".join(h["to"] for h in s["history"])')" == preparing,*failed ]] ||
                fail "history is not preparing ... failed: $(status_field "$id" 's["history"]')"
        [ "$(terminal_receipts "$id")" = "1 start_failed $code" ] ||
                fail "expected one start_failed receipt with $code, got: $(terminal_receipts "$id")"
        nothing_left "$id"
        verify_chain
        restart_clean
        [ "$(status_field "$id" 's["state"]')" = failed ] || fail "after the restart $id is not failed"
        [ "$(terminal_receipts "$id")" = "1 start_failed $code" ] || fail "after the restart: $(terminal_receipts "$id")"
        # A failed session stays failed: a retry is session.terminal.
        ctl start "$id"
        expect_refused session.terminal
        nothing_left "$id"
}

# start_fails ID CODE: start_session answers CODE (one stderr line, with a
# message) and the session failed cleanly.
start_fails() {
        ctl start "$1"
        START_ERR=$stderr
        if [ "$status" -eq 0 ]; then
                # A failure inside the sandbox child (the copy) ends the
                # session after start answered "starting".
                failed_cleanly "$1" "$2"
                return
        fi
        expect_refused "$2"
        failed_cleanly "$1" "$2"
}

# Templates shared by the failure tests.
SLEEPER='{"id":"sleeper","argv":["/usr/bin/sleep","60"]}'
ECHO='{"id":"echo","argv":["/usr/bin/dash","-c","echo out-line; exit 4"]}'

# ---------------------------------------------------------------- bad input

@test "gloved failures: start of an unknown session is session.not_found, and nothing is made" {
        fs_gloved "{\"templates\":[$SLEEPER]}"
        ctl start nosuch
        expect_refused session.not_found
        ctl --json sessions
        expect_status 0
        [ "$output" = '{"sessions":[]}' ] || fail "a session appeared: $output"
        [ "$(terminal_receipts nosuch)" = "0 - -" ] || fail "a receipt appeared"
        nothing_left nosuch
        restart_clean
}

@test "gloved failures: an expired plan never starts: plan.expired, stays created, no receipt" {
        fs_gloved "{\"templates\":[$SLEEPER]}"
        new_fs e1 sleeper '[]' 1200
        sleep 1.5
        ctl start e1
        expect_refused plan.expired
        [ "$(status_field e1 's["state"]')" = created ] || fail "e1 left created"
        [ "$(status_field e1 'len(s["history"])')" = 0 ] || fail "e1 has transitions: $(status_field e1 's["history"]')"
        [ "$(terminal_receipts e1)" = "0 - -" ] || fail "an expired plan produced a receipt"
        ctl start e1
        expect_refused plan.expired
        nothing_left e1
        restart_clean
        [ "$(status_field e1 's["state"]')" = created ] || fail "e1 is not created after the restart"
}

@test "gloved failures: start of an exited or failed session is session.terminal; attach to it gives transcript and status" {
        fs_gloved "{\"templates\":[$ECHO]}"
        new_fs x1 echo '[]'
        ctl start x1
        expect_status 0
        wait_state x1 exited
        ctl start x1
        expect_refused session.terminal
        [ "$(terminal_receipts x1)" = "1 exit -" ] || fail "receipts: $(terminal_receipts x1)"
        # Attach to the exited session: the transcript, the final state, no stream.
        run --separate-stderr timeout -k 5 30 "$PY" "$SESSCTL" watch "$RT" x1
        expect_status 0
        "$PY" -c '
import json, sys
a = json.loads(sys.argv[1].split(" ", 1)[1])["result"]
assert a["attached"] is False and a["state"] == "exited", a
assert a["termination"]["kind"] == "exit" and a["receipt_sequence"] >= 1, a
' "${lines[0]}" || fail "attach result: ${lines[0]}"
        [[ "${lines[1]}" == output*out-line* ]] || fail "no transcript: ${lines[1]}"
        run --separate-stderr timeout -k 5 30 "$GLOVE" ctl --runtime-dir "$RT" attach x1 --no-stdin
        expect_status 4
        [[ "$output" == *out-line* ]] || fail "ctl attach shows no transcript"
        [[ "$stderr" == *"session x1 exited: exit, status 4"* ]] || fail "no final status: $stderr"
        # Still after a restart (the transcript is gone with the process; the state stays).
        restart_clean
        ctl start x1
        expect_refused session.terminal
        verify_chain
        nothing_left x1
}

@test "gloved failures: a conflicting create is session.conflict and the first plan stays" {
        fs_gloved "{\"templates\":[$SLEEPER,$ECHO]}"
        new_fs c1 echo '[]'
        "$PY" "$FS" plan "$T/cfg/c1b.plan" "$T/cfg/policy.json" sleeper '[]'
        ctl create-session --session-id c1 --idempotency-key k-c1 --controller-digest "$CDIGEST" --plan "$T/cfg/c1b.plan"
        expect_refused session.conflict
        ctl create-session --session-id c1 --idempotency-key k-other --controller-digest "$CDIGEST" --plan "$T/cfg/c1.plan"
        expect_refused session.conflict
        ctl create-session --session-id c2 --idempotency-key k-c1 --controller-digest "$CDIGEST" --plan "$T/cfg/c1b.plan"
        expect_refused session.conflict
        # The identical retry is answered, and the stored plan is the first.
        ctl create-session --session-id c1 --idempotency-key k-c1 --controller-digest "$CDIGEST" --plan "$T/cfg/c1.plan"
        expect_status 0
        [ "$(status_field c1 's["plan_content_digest"]')" = "$(sha256sum <"$T/cfg/c1.plan" | cut -d' ' -f1)" ] ||
                fail "the stored plan is not the first one"
        ctl --json sessions
        [ "$("$PY" -c 'import json,sys; print(len(json.loads(sys.argv[1])["sessions"]))' "$output")" = 1 ] ||
                fail "the conflicting create stored something: $output"
        ctl start c1
        expect_status 0
        wait_state c1 exited
        [ "$(terminal_receipts c1)" = "1 exit -" ] || fail "receipts: $(terminal_receipts c1)"
        verify_chain
        restart_clean
}

@test "gloved failures: write_stdin over 65536 decoded bytes is stdin.too_large; an unknown signal is signal.unknown" {
        fs_gloved "{\"templates\":[$SLEEPER]}"
        new_fs w1 sleeper '[]'
        ctl start w1
        expect_status 0
        wait_state w1 running
        local big ok
        big=$("$PY" -c 'import base64; print(base64.b64encode(b"a" * 65537).decode())')
        call write_stdin "{\"session_id\":\"w1\",\"data_b64\":\"$big\"}"
        expect_error stdin.too_large
        ok=$("$PY" -c 'import base64; print(base64.b64encode(b"a" * 65536).decode())')
        call write_stdin "{\"session_id\":\"w1\",\"data_b64\":\"$ok\"}"
        [[ "$output" == '{"id":1,"result":{"accepted":'* ]] || fail "65536 bytes must be taken (or partly): $output"
        call write_stdin '{"session_id":"w1","data_b64":"not base64!"}'
        expect_error invalid_params
        call write_stdin '{"session_id":"nosuch","data_b64":"YQ=="}'
        expect_error session.not_found
        local s
        for s in SIGBOGUS sigterm TERM SIGRTMIN 15 ""; do
                call signal "{\"session_id\":\"w1\",\"signal\":\"$s\"}"
                expect_error signal.unknown
        done
        # The session took none of it badly: still running; SIGKILL (which
        # PID 1 cannot forward) kills the whole sandbox: exited by signal 9.
        [ "$(status_field w1 's["state"]')" = running ] || fail "w1 is no longer running"
        call signal '{"session_id":"w1","signal":"SIGKILL"}'
        [ "$output" = '{"id":1,"result":{}}' ] || fail "SIGKILL: $output"
        wait_state w1 exited || fail "history: $(status_field w1 's["history"]'); receipts: $(terminal_receipts w1); $(cat "$GD_ERR")"
        call write_stdin '{"session_id":"w1","data_b64":"YQ=="}'
        expect_error session.terminal
        call signal '{"session_id":"w1","signal":"SIGTERM"}'
        expect_error session.terminal
        [ "$(terminal_receipts w1)" = "1 signal -" ] || fail "receipts: $(terminal_receipts w1)"
        nothing_left w1
        verify_chain
        restart_clean
}

@test "gloved failures: a stop whose grace runs out ends the session stopped (SIGKILL), not lost" {
        fs_gloved '{"templates":[{"id":"stubborn","argv":["/usr/bin/dash","-c","trap \"\" TERM; echo ready; while :; do sleep 0.2; done"]}]}'
        new_fs g1 stubborn '[]'
        ctl start g1
        expect_status 0
        wait_state g1 running
        ctl stop g1 --grace 300
        expect_status 0
        wait_state g1 exited || fail "history: $(status_field g1 's["history"]'); $(terminal_receipts g1)"
        [ "$(status_field g1 's["history"][-1]["reason"]')" = stopped ] || fail "reason: $(status_field g1 's["history"]')"
        [ "$(terminal_receipts g1)" = "1 stopped -" ] || fail "receipts: $(terminal_receipts g1)"
        run --separate-stderr timeout -k 5 30 "$GLOVE" ctl --runtime-dir "$RT" attach g1 --no-stdin
        expect_status 137
        nothing_left g1
        verify_chain
}

# ---------------------------------------------------------------- failures while preparing

@test "gloved failures: an alias host path removed since create is materialize.missing" {
        mkdir -p "$T/host/gone"
        fs_gloved "{\"aliases\":[{\"alias\":\"src\",\"host_path\":\"$T/host/gone\",\"target_path\":\"/src\",
                \"access\":[{\"access\":\"read\",\"materialization\":\"bind\",\"max_bytes\":1048576}]}],
                \"templates\":[{\"id\":\"r\",\"argv\":[\"/usr/bin/true\"],\"aliases\":[\"src\"]}]}"
        new_fs m1 r '[{"alias":"src","access":"read","materialization":"bind"}]'
        rmdir "$T/host/gone"
        start_fails m1 materialize.missing
        [[ "$START_ERR" == *"$T/host/gone"* ]] || fail "the message does not name the path: $START_ERR"
}

@test "gloved failures: an alias host path turned into a symbolic link since create is materialize.symlink" {
        mkdir -p "$T/host/real" "$T/host/link"
        echo secret >"$T/host/real/f"
        fs_gloved "{\"aliases\":[{\"alias\":\"src\",\"host_path\":\"$T/host/link\",\"target_path\":\"/src\",
                \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"max_bytes\":1048576},
                            {\"access\":\"read\",\"materialization\":\"bind\",\"max_bytes\":1048576}]}],
                \"templates\":[{\"id\":\"r\",\"argv\":[\"/usr/bin/true\"],\"aliases\":[\"src\"]}]}"
        new_fs l1 r '[{"alias":"src","access":"read","materialization":"bind"}]'
        new_fs l2 r '[{"alias":"src","access":"ephemeral_write","materialization":"copy"}]'
        rmdir "$T/host/link"
        ln -s "$T/host/real" "$T/host/link"
        start_fails l1 materialize.symlink
        start_fails l2 materialize.symlink
}

@test "gloved failures: a copy larger than max_bytes is materialize.quota_exceeded, after the sandbox was made" {
        mkdir -p "$T/host/big"
        head -c 300000 /dev/urandom >"$T/host/big/blob"
        fs_gloved "{\"aliases\":[{\"alias\":\"src\",\"host_path\":\"$T/host/big\",\"target_path\":\"/src\",
                \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"max_bytes\":1048576}]}],
                \"templates\":[{\"id\":\"r\",\"argv\":[\"/usr/bin/true\"],\"aliases\":[\"src\"]}]}"
        new_fs q1 r '[{"alias":"src","access":"ephemeral_write","materialization":"copy","max_bytes":65536}]'
        start_fails q1 materialize.quota_exceeded
        cmp <(head -c 0 /dev/null) <(find "$T/host/big" -newer "$T/cfg/q1.plan" -print) || fail "the host source changed"
}

@test "gloved failures: direct_write is refused at launch: launch.direct_write" {
        mkdir -p "$T/host/dw"
        fs_gloved "{\"aliases\":[{\"alias\":\"dw\",\"host_path\":\"$T/host/dw\",\"target_path\":\"/dw\",
                \"access\":[{\"access\":\"direct_write\",\"materialization\":\"bind\",\"max_bytes\":1048576}]}],
                \"templates\":[{\"id\":\"r\",\"argv\":[\"/usr/bin/touch\",\"/dw/written\"],\"aliases\":[\"dw\"]}]}"
        new_fs d1 r '[{"alias":"dw","access":"direct_write","materialization":"bind"}]'
        ctl validate-plan "$T/cfg/d1.plan"
        expect_status 0
        start_fails d1 launch.direct_write
        [ ! -e "$T/host/dw/written" ] || fail "the agent wrote to the host directory"
}

@test "gloved failures: a retained image too small for ext4 is materialize.mkfs" {
        fs_gloved "{\"aliases\":[{\"alias\":\"keep\",\"host_path\":\"$T/host/keep\",\"target_path\":\"/keep\",
                \"access\":[{\"access\":\"retained_write\",\"materialization\":\"snapshot\",\"max_bytes\":16777216}]}],
                \"templates\":[{\"id\":\"r\",\"argv\":[\"/usr/bin/true\"],\"aliases\":[\"keep\"]}]}"
        need_retained
        new_fs k1 r '[{"alias":"keep","access":"retained_write","materialization":"snapshot","max_bytes":65536}]'
        start_fails k1 materialize.mkfs
        [[ "$START_ERR" == *"failed (exit status 1)"* && "$START_ERR" == *"too small"* ]] || fail "the message does not carry mkfs's status and output: $START_ERR"
}

@test "gloved failures: a full materialization root is materialize.root_full" {
        is_root || skip "mounting a small tmpfs at the materialization root needs root"
        mkdir -m 700 "$T/mat"
        mount -t tmpfs -o size=4m,mode=0700 glove-it-root "$T/mat"
        TMPFS_ROOT=$T/mat
        fs_gloved "{\"aliases\":[{\"alias\":\"keep\",\"host_path\":\"$T/host/keep\",\"target_path\":\"/keep\",
                \"access\":[{\"access\":\"retained_write\",\"materialization\":\"snapshot\",\"max_bytes\":16777216}]}],
                \"templates\":[{\"id\":\"r\",\"argv\":[\"/usr/bin/true\"],\"aliases\":[\"keep\"]}]}"
        need_retained
        new_fs f1 r '[{"alias":"keep","access":"retained_write","materialization":"snapshot","max_bytes":8388608}]'
        start_fails f1 materialize.root_full
        # The root itself is still there and empty of this session.
        [ -z "$(find "$T/mat" -mindepth 2 -print -quit)" ] || fail "left under the root: $(find "$T/mat")"
}

@test "gloved failures: a receipt journal without room refuses start: start.receipts_full, nothing recorded" {
        mkdir -m 700 -p "$T/g/state"
        local n
        n=$("$PY" "$FS" fill-receipts "$T/g/state")
        [ "$n" -gt 1000 ] || fail "the filler wrote $n receipts"
        fs_gloved "{\"templates\":[$ECHO]}"
        new_fs r1 echo '[]'
        ctl start r1
        expect_refused start.receipts_full
        [ "$(status_field r1 's["state"]')" = created ] || fail "r1 left created"
        [ "$(status_field r1 'len(s["history"])')" = 0 ] || fail "r1 has transitions"
        ctl start r1
        expect_refused start.receipts_full
        nothing_left r1
        verify_chain
        restart_clean
        [ "$(status_field r1 's["state"]')" = created ] || fail "r1 not created after restart"
}

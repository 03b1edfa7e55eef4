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
load "$GLOVE_IT_LIB/managed_fs"

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
        if command -v losetup >/dev/null && losetup -a 2>/dev/null | grep -F -e "$T/mat/" >&2; then
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
                # Preparation runs after start answered "preparing", and a
                # failure inside the sandbox child (the copy) after
                # "starting": the code is in the receipt and the store; a
                # failure of gloved's own preparation also has its message
                # on gloved's stderr (a keeper's does not). Wait for the
                # message until the session is failed, and a second more.
                local i failed_at=""
                for i in $(seq 100); do
                        START_ERR=$(grep -F "session $1: " "$GD_ERR" | grep -F "$2" || true)
                        [ -n "$START_ERR" ] && break
                        if [ -z "$failed_at" ] && [ "$(status_field "$1" 's["state"]')" = failed ]; then
                                failed_at=$i
                        fi
                        [ -n "$failed_at" ] && [ $((i - failed_at)) -ge 10 ] && break
                        sleep 0.1
                done
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

@test "gloved create_policy: empty_directory copies an existing source, starts empty only when it is absent, and still vets the host path" {
        mkdir -p "$T/seed/sub" "$T/real"
        echo seeded >"$T/seed/sub/f"
        chmod -R a+rX "$T/seed"
        ln -s "$T/real" "$T/lnk"
        local tpl tpl2
        tpl=$(probe_template cp "seed,absent" read /seed/sub/f list /absent)
        tpl2=$(probe_template cl "lnk" list /lnk)
        fs_gloved "{\"aliases\":[
                {\"alias\":\"absent\",\"host_path\":\"$T/absent\",\"target_path\":\"/absent\",
                 \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"create_policy\":\"empty_directory\",\"max_bytes\":1048576}]},
                {\"alias\":\"lnk\",\"host_path\":\"$T/lnk\",\"target_path\":\"/lnk\",
                 \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"create_policy\":\"empty_directory\",\"max_bytes\":1048576}]},
                {\"alias\":\"seed\",\"host_path\":\"$T/seed\",\"target_path\":\"/seed\",
                 \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"create_policy\":\"empty_directory\",\"max_bytes\":1048576}]}],
                \"templates\":[$tpl,$tpl2]}"
        run_managed cp1 cp '[{"alias":"absent","access":"ephemeral_write","materialization":"copy"},{"alias":"seed","access":"ephemeral_write","materialization":"copy"}]'
        # The existing source is copied; the absent one starts empty.
        expect_line "read /seed/sub/f ok:seeded"
        expect_line "list /absent ok:"
        [ ! -e "$T/absent" ] || fail "the absent source was created on the host"
        # A host path that is a symbolic link is refused, empty_directory or not.
        new_fs cl1 cl '[{"alias":"lnk","access":"ephemeral_write","materialization":"copy"}]'
        ctl start cl1
        wait_state cl1 failed
        [ "$(status_field cl1 's["history"][-1]["reason"]')" = materialize.symlink ] ||
                fail "the link was not refused: $(status_field cl1 's["history"]')"
}

@test "gloved receipts: no receipt names a host path; each commits by digest to the whole binding gloved keeps locally" {
        mkdir -p "$T/ro" "$T/eph" "$T/big"
        echo ro >"$T/ro/f"
        echo eph >"$T/eph/f"
        head -c 300000 /dev/urandom >"$T/big/blob"
        chmod -R a+rX "$T/ro" "$T/eph" "$T/big"
        local tpl
        tpl=$(probe_template rp "eph,ro" read /ro/f)
        fs_gloved "{\"aliases\":[
                {\"alias\":\"big\",\"host_path\":\"$T/big\",\"target_path\":\"/big\",
                 \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"max_bytes\":1048576}]},
                {\"alias\":\"eph\",\"host_path\":\"$T/eph\",\"target_path\":\"/eph\",
                 \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"max_bytes\":1048576}]},
                {\"alias\":\"ro\",\"host_path\":\"$T/ro\",\"target_path\":\"/ro\",
                 \"access\":[{\"access\":\"read\",\"materialization\":\"bind\",\"max_bytes\":1048576}]}],
                \"templates\":[$tpl,{\"id\":\"q\",\"argv\":[\"/usr/bin/true\"],\"aliases\":[\"big\"]}]}"
        # An exited session, and one that failed after its sandbox was made.
        run_managed rx rp '[{"alias":"eph","access":"ephemeral_write","materialization":"copy"},{"alias":"ro","access":"read","materialization":"bind"}]'
        expect_line "read /ro/f ok:ro"
        new_fs rq q '[{"alias":"big","access":"ephemeral_write","materialization":"copy","max_bytes":65536}]'
        ctl start rq
        wait_state rq failed
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 >"$T/page.json"
        run --separate-stderr "$PY" -c '
import hashlib, json, os, sys
page, kept, t, agents = sys.argv[1:5]
rs = [e["envelope"] for e in json.load(open(page))["envelopes"] if e["envelope"]["kind"] == "session.terminal"]
assert sorted(e["session_id"] for e in rs) == ["rq", "rx"], [e["session_id"] for e in rs]
targets = {"/big", "/eph", "/ro"}
def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
for e in rs:
    r = e["receipt"]
    # Every string that starts with "/" is a sandbox target, never a host path.
    bad = [s for s in strings(r) if s.startswith("/") and s not in targets and not s.startswith("/home/agent")]
    assert not bad, (e["session_id"], bad)
    text = json.dumps(r)
    for host in (t, agents, "/usr/bin", "/dev/loop", "/sys/fs/cgroup"):
        assert host not in text, (e["session_id"], host)
    # The digest is the SHA-256 of the binding kept locally, which holds
    # the host paths (the executable, the read-only path, the cgroup).
    raw = open(os.path.join(kept, e["session_id"] + ".json"), "rb").read()
    assert hashlib.sha256(raw).hexdigest() == r["launch_binding_digest"], e["session_id"]
    full = json.loads(raw)
    assert full["argv"][0] in ("/usr/bin/python3", "/usr/bin/true"), full["argv"]
    assert any(m["kind"] == "read_only_path" for m in full["mounts"]) == (e["session_id"] == "rx"), full["mounts"]
    b = r["launch_binding"]
    assert len(b["executable_digest"]) == 64 and len(b["read_only_paths_digest"]) == 64, b
' "$T/page.json" "$ST/bindings" "$T" "$AGENTS"
        [ "$status" -eq 0 ] || fail "a receipt names a host path, or does not commit to the kept binding: $output $stderr"
        jq -e '.cgroup.path' "$ST/bindings/rx.json" >/dev/null || fail "the kept binding has no cgroup"
        cp "$ST/receipts.journal" "$T/j.copy"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --journal "$T/j.copy" \
                --bindings "$ST/bindings"
        [ "$status" -eq 0 ] || fail "the chain does not verify against the kept bindings: $stderr"
        # cleanup_session forgets the kept binding.
        ctl cleanup rx
        expect_status 0
        [ ! -e "$ST/bindings/rx.json" ] || fail "cleanup_session left the kept binding"
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
        mkdir -p "$T/host/keep"
        new_fs k1 r '[{"alias":"keep","access":"retained_write","materialization":"snapshot","max_bytes":65536}]'
        start_fails k1 materialize.mkfs
        [[ "$START_ERR" == *"failed (exit status 1)"* && "$START_ERR" == *"too small"* ]] || fail "the message does not carry mkfs's status and output: $START_ERR"
}

@test "gloved failures: a retained copy takes only what the agent's ids could read (materialize.copy), and a source larger than max_bytes is materialize.quota_exceeded; neither makes an image" {
        [ -e /dev/loop-control ] && is_root || skip "retained images need root and /dev/loop-control"
        mkdir -p "$T/host/keep/priv"
        echo secret >"$T/host/keep/priv/secret"
        chmod 600 "$T/host/keep/priv/secret"
        chown -R 1234:1234 "$T/host/keep/priv"
        chmod 700 "$T/host/keep/priv"
        fs_gloved "{\"aliases\":[{\"alias\":\"keep\",\"host_path\":\"$T/host/keep\",\"target_path\":\"/keep\",
                \"access\":[{\"access\":\"retained_write\",\"materialization\":\"snapshot\",\"max_bytes\":16777216}]}],
                \"templates\":[{\"id\":\"r\",\"argv\":[\"/usr/bin/true\"],\"aliases\":[\"keep\"]}]}"
        need_retained
        new_fs k1 r '[{"alias":"keep","access":"retained_write","materialization":"snapshot","max_bytes":4194304}]'
        start_fails k1 materialize.copy
        [[ "$START_ERR" == *"priv: the service user"*"may not read it"* ]] || fail "the message does not name the entry: $START_ERR"
        [ ! -e "$T/mat/images/k1/keep.ext4" ] || fail "an image was made for a source that cannot be copied"
        # A source larger than the grant's max_bytes: refused before any
        # image is made, before the agent runs.
        rm -rf "$T/host/keep/priv"
        head -c 5000000 /dev/zero >"$T/host/keep/big"
        new_fs k2 r '[{"alias":"keep","access":"retained_write","materialization":"snapshot","max_bytes":4194304}]'
        start_fails k2 materialize.quota_exceeded
        [ ! -e "$T/mat/images/k2/keep.ext4" ] || fail "an image was made for a source that does not fit"
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
        mkdir -p "$T/host/keep"
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

# ---------------------------------------------------------------- escape probes as managed sessions
#
# The probes of seccomp.bats, identity.bats, processes.bats, network.bats and
# filesystem.bats, run by a launch template (/usr/bin/python3 probe.py OPS,
# the agents directory as a read_only_paths entry) in a session started
# through gloved; the same denials must come back.




@test "gloved escape probes: seccomp denials and no network, no Unix socket but socketpair, in a managed session" {
        local ops=() n
        for n in mount umount2 pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr \
                unshare-newuser unshare-newns unshare-newnet unshare-newpid unshare-fs setns clone-newuser clone-newns \
                clone-newpid clone-newnet clone-newipc clone-newuts clone-newcgroup keyctl add_key request_key bpf \
                perf_event_open userfaultfd ptrace process_vm_readv process_vm_writev kexec_load acct swapon reboot; do
                ops+=(sys "$n")
        done
        fs_gloved "{\"templates\":[$(probe_template p "" "${ops[@]}" sys clone3 sys clone-plain sys connect sys setsockopt fork threads socket-all unix setuid0 sethostname evil)]}"
        run_managed p1 p '[]'
        for n in mount umount2 pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr \
                unshare-newuser unshare-newns unshare-newnet unshare-newpid unshare-fs setns clone-newuser clone-newns \
                clone-newpid clone-newnet clone-newipc clone-newuts clone-newcgroup keyctl add_key request_key bpf \
                perf_event_open userfaultfd ptrace process_vm_readv process_vm_writev kexec_load acct swapon reboot; do
                expect_line "sys $n EPERM"
        done
        expect_line "sys clone3 ENOSYS"
        # Positive controls: plain clone, fork, threads work; socketpair
        # works but socket(AF_UNIX) does not (the spec's managed rule).
        expect_line "sys clone-plain ok"
        expect_line "fork ok:7"
        expect_line "threads ok:ran"
        expect_line "socket-all attempts=180 not-eperm=0"
        expect_line "unix EPERM"
        expect_line "sys connect EPERM"
        expect_line "sys setsockopt EPERM"
        [[ "$output" == *$'\nsetuid0 EPERM\n'* || "$output" == *$'\nsetuid0 EINVAL\n'* ]] || fail "setuid(0) must fail"
        expect_line "sethostname evil EPERM"
        [[ "$MEND" == *'"kind":"exit"'* ]] || fail "the probe did not exit normally: $MEND"
}

@test "gloved escape probes: identity, /proc, host processes and interfaces, in a managed session" {
        local m h hex
        m="3000.$$$RANDOM$BATS_TEST_NUMBER"
        sleep "$m" </dev/null >/dev/null 2>&1 3>&- &
        h=$!
        track_pid "$h"
        hex=$(printf %s "$m" | od -An -tx1 | tr -d ' \n')
        local script='grep -E "^(Cap|NoNewPrivs|Seccomp|Uid|Gid)" /proc/self/status; echo "init: $(tr "\0" " " </proc/1/cmdline)";
                echo "pids: $(ls /proc | grep -E "^[0-9]+$" | sort -n | tr "\n" " ")";
                echo "ifaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")";
                echo "hostname: $(cat /proc/sys/kernel/hostname)"'
        fs_gloved "{\"templates\":[$(sh_template id "$script"),$(probe_template pr "" procscan "$hex" signal0 "$h" kill "$h" signal0 1)]}"
        run_managed i1 id '[]'
        local k
        for k in CapInh CapPrm CapEff CapBnd CapAmb; do
                expect_line "$(printf '%s:\t0000000000000000' "$k")"
        done
        expect_line "$(printf 'NoNewPrivs:\t1')"
        expect_line "$(printf 'Seccomp:\t2')"
        grep -qE $'^Uid:\t[1-9][0-9]*\t' "$T/i1.out" || fail "the agent's uid is 0 or missing"
        [[ "$output" == *"init: glove-init"* ]] || fail "PID 1 is not glove-init"
        local p pids
        pids=$(sed -n 's/^pids: //p' "$T/i1.out")
        for p in $pids; do
                [ "$p" -le 10 ] || fail "pid $p inside looks like a host pid"
        done
        [[ " $pids " == *" 1 "* ]] || fail "no pid 1 inside"
        expect_line "ifaces: lo "
        expect_line "hostname: glove"
        run_managed i2 pr '[]'
        expect_line "procscan $hex none"
        expect_line "signal0 $h ESRCH"
        expect_line "kill $h ESRCH"
        expect_line "signal0 1 ok"
        running "$h" || fail "the host process was killed"
}

@test "gloved escape probes: host files and gloved's own state are invisible; read alias read-only; the copy never reaches the host" {
        mkdir -p "$T/secret" "$T/ro" "$T/eph/sub"
        echo "host-secret-$$" >"$T/secret/file"
        echo "ro-content" >"$T/ro/file"
        printf 'orig\n' >"$T/eph/f"
        printf 'deep\n' >"$T/eph/sub/g"
        ln -s "$T/secret/file" "$T/eph/esc"
        ln -s /etc/hostname "$T/eph/etc-link"
        chmod -R a+rX "$T/ro" "$T/eph"
        (cd "$T/eph" && find . -printf '%p %m %s %l\n' | sort && cat f sub/g) >"$T/eph.before"
        local st=$T/g/state rt=$T/g/run
        local tpl
        tpl=$(probe_template fsp "eph,ro" exists "$T/secret/file" read "$T/secret/file" exists "$st" exists "$st/receipt.key" \
                exists "$rt" exists "$rt/bootstrap-secret" exists "$rt/gloved.sock" exists "$T/mat" exists "$T/cfg/policy.json" \
                read /etc/shadow exists /root exists /sys exists /run list /home \
                read /ro/file append /ro/file create /ro/new unlink /ro/file mkdir /ro/d chmod /ro/file 0777 \
                read /eph/f append /eph/f create /eph/new unlink /eph/sub/g mkdir /eph/d read /eph/esc read /eph/etc-link \
                chmod /eph/f 4755 exists "$T/eph" exists "$T/ro")
        fs_gloved "{\"aliases\":[
                {\"alias\":\"eph\",\"host_path\":\"$T/eph\",\"target_path\":\"/eph\",
                 \"access\":[{\"access\":\"ephemeral_write\",\"materialization\":\"copy\",\"max_bytes\":1048576}]},
                {\"alias\":\"ro\",\"host_path\":\"$T/ro\",\"target_path\":\"/ro\",
                 \"access\":[{\"access\":\"read\",\"materialization\":\"bind\",\"max_bytes\":1048576}]}],
                \"templates\":[$tpl]}"
        run_managed fs1 fsp '[{"alias":"eph","access":"ephemeral_write","materialization":"copy"},{"alias":"ro","access":"read","materialization":"bind"}]'
        local p
        for p in "$T/secret/file" "$st" "$st/receipt.key" "$rt" "$rt/bootstrap-secret" "$rt/gloved.sock" "$T/mat" \
                "$T/cfg/policy.json" /root /sys /run "$T/eph" "$T/ro"; do
                expect_line "exists $p no"
        done
        expect_line "read $T/secret/file ENOENT"
        expect_line "read /etc/shadow ENOENT"
        expect_line "list /home ok:agent"
        expect_line "read /ro/file ok:ro-content"
        expect_line "append /ro/file EROFS"
        expect_line "create /ro/new EROFS"
        expect_line "unlink /ro/file EROFS"
        expect_line "mkdir /ro/d EROFS"
        expect_line "chmod /ro/file 0777 EROFS"
        # The copy is writable (positive control) and its links are never
        # followed to the host: the secret's path does not exist inside.
        expect_line "read /eph/f ok:orig"
        expect_line "append /eph/f ok"
        expect_line "create /eph/new ok"
        expect_line "unlink /eph/sub/g ok"
        expect_line "mkdir /eph/d ok"
        expect_line "read /eph/esc ENOENT"
        expect_line "read /eph/etc-link ok:glove"
        # setuid bits are refused inside, as under glove exec (grants.bats).
        expect_line "chmod /eph/f 4755 EPERM"
        # The host: nothing changed, byte for byte.
        (cd "$T/eph" && find . -printf '%p %m %s %l\n' | sort && cat f sub/g) >"$T/eph.after"
        diff "$T/eph.before" "$T/eph.after" || fail "the host source of the copy changed"
        [ "$(cat "$T/ro/file")" = ro-content ] && [ ! -e "$T/ro/new" ] || fail "the read alias changed on the host"
        [ "$(cat "$T/secret/file")" = "host-secret-$$" ] || fail "the secret changed"
        nothing_left fs1
        ctl cleanup fs1
        expect_status 0
        nothing_left fs1
}

@test "gloved escape probes: a retained image holds the agent's writes, never the host path" {
        mkdir -p "$T/keephost"
        echo "host-only" >"$T/keephost/present"
        local tpl
        tpl=$(probe_template ret "keep" list /keep create /keep/new create-mode /keep/suid 4755 exists "$T/keephost" \
                read /keep/new mkdir /keep/d create /keep/d/x)
        fs_gloved "{\"aliases\":[{\"alias\":\"keep\",\"host_path\":\"$T/keephost\",\"target_path\":\"/keep\",
                \"access\":[{\"access\":\"retained_write\",\"materialization\":\"snapshot\",\"max_bytes\":16777216}]}],
                \"templates\":[$tpl]}"
        need_retained
        run_managed k1 ret '[{"alias":"keep","access":"retained_write","materialization":"snapshot","max_bytes":4194304}]'
        # The stage is a copy of the host path (issue 30), without ext4's
        # lost+found; the host path itself is not reachable.
        expect_line "list /keep ok:present"
        expect_line "create /keep/new ok"
        expect_line "exists $T/keephost no"
        expect_line "mkdir /keep/d ok"
        expect_line "create /keep/d/x ok"
        # No setuid file can be left in the image for a later host mount.
        expect_line "create-mode /keep/suid 4755 EPERM"
        [ "$(ls -A "$T/keephost")" = present ] || fail "the host path changed: $(ls -A "$T/keephost")"
        # The image is released (no mount, no loop) and kept.
        grep -F -- "$T/mat/" /proc/self/mountinfo && fail "the image is still mounted on the host"
        losetup -a | grep -F -- "$T/mat" && fail "the image is still attached to a loop device"
        [ -f "$T/mat/images/k1/keep.ext4" ] || fail "the retained image is gone"
        [ "$(stat -c %s "$T/mat/images/k1/keep.ext4")" -eq 4194304 ] || fail "the image is not exactly max_bytes"
        ctl --json cleanup k1
        expect_status 0
        [[ "$output" == *'"kept":["keep"]'* ]] || fail "cleanup did not keep the image: $output"
        verify_chain
}

@test "gloved egress: a managed session reaches exactly its egress policy's targets, through the audited proxy" {
        mkdir -p "$T/www"
        echo "hello from the host" >"$T/www/index.txt"
        "$PY" -u -m http.server --bind 127.0.0.1 0 --directory "$T/www" >"$T/www.log" 2>&1 3>&- &
        track_pid $!
        wait_for "$T/www.log" 'port [0-9]+' 10 || fail "the web server did not start"
        local port other
        port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/www.log" | head -n1)
        other=$((port == 65535 ? port - 1 : port + 1))
        local script="/usr/bin/curl -sS --max-time 10 --proxytunnel http://127.0.0.1:$port/index.txt; echo allowed_exit=\$?;
/usr/bin/curl -sS --max-time 10 --proxytunnel -o /dev/null -w 'other_connect=%{http_connect}\n' http://127.0.0.1:$other/;
/usr/bin/python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0))' 2>/dev/null; echo bind_exit=\$?; echo done"
        fs_gloved "{\"templates\":[$(sh_template web "$script")],\"egress\":[{\"policy_id\":\"web\",\"targets\":[{\"host\":\"127.0.0.1\",\"port\":$port,\"allow_private\":true}]}]}"
        run_managed e1 web '[]' web
        expect_line "hello from the host"
        expect_line "allowed_exit=0"
        expect_line "other_connect=403"
        # No TCP listener of its own (Landlock; docs/limits.md, TCP connections).
        expect_line "bind_exit=1"
        local log="$T/mat/audit/e1.jsonl"
        [ -f "$log" ] || fail "no egress audit log at $log"
        [ "$(stat -c %a "$log")" = 600 ] || fail "the audit log is not 0600"
        "$PY" - "$log" "$port" "$other" <<'PYEOF' || fail "bad audit log: $(cat "$log")"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
eg = [r for r in recs if r["event"] == "egress"]
port, other = int(sys.argv[2]), int(sys.argv[3])
assert [r["phase"] for r in eg if r["port"] == port] == ["open", "close"], eg
assert [(r["phase"], r["reason"]) for r in eg if r["port"] == other] == [("deny", "not_allowed")], eg
PYEOF
        # The receipt's launch binding names the policy and its target.
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 | "$PY" -c '
import json, sys
p = json.load(sys.stdin)
r = [e["envelope"]["receipt"] for e in p["envelopes"] if e["envelope"]["session_id"] == "e1"][0]
assert r["launch_binding"]["egress"] == {"policy_id": "web", "targets": ["127.0.0.1:" + sys.argv[1]]}, r["launch_binding"]["egress"]' "$port" ||
                fail "the binding does not record the egress policy"
}

@test "gloved egress: the audit log counts against disk_bytes: a flood of refused requests stops the session" {
        local script='n=0; while [ $n -lt 2000 ]; do /usr/bin/curl -s --max-time 5 --proxytunnel -o /dev/null http://127.0.0.1:9/; n=$((n+1)); done; echo survived'
        fs_gloved "{\"templates\":[$(sh_template flood "$script")],\"limits\":{\"disk_bytes\":65536},\"egress\":[{\"policy_id\":\"web\",\"targets\":[{\"host\":\"127.0.0.1\",\"port\":8,\"allow_private\":true}]}]}"
        new_fs a1 flood '[]' 60000 web
        ctl start a1
        expect_status 0
        wait_state a1 exited 60
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 | "$PY" -c '
import json, sys
p = json.load(sys.stdin)
r = [e["envelope"]["receipt"] for e in p["envelopes"] if e["envelope"]["session_id"] == "a1"][0]
t = r["termination"]
assert t["kind"] == "limit" and t["limit"] == "disk_bytes" and t["code"] == "egress.audit_full", t' ||
                fail "the flood was not stopped by the audit budget"
        local size
        size=$(stat -c %s "$T/mat/audit/a1.jsonl")
        [ "$size" -gt 65536 ] && [ "$size" -lt $((65536 + 4096)) ] || fail "the audit log is $size bytes"
}

@test "gloved failures: a launch binding too large for a receipt never starts (start.binding_too_large), and its receipt still fits" {
        local t
        t=$("$PY" -c 'import json; print(json.dumps({"id": "big", "argv": ["/usr/bin/dash", "-c", "echo ran", "x" * 60000]}))')
        fs_gloved "{\"templates\":[$t]}"
        new_fs b1 big '[]'
        start_fails b1 start.binding_too_large
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 | "$PY" -c '
import json, sys
p = json.load(sys.stdin)
r = [e["envelope"]["receipt"] for e in p["envelopes"] if e["envelope"]["session_id"] == "b1"][0]
assert r["started_at_ms"] is None and r["launch_binding"]["omitted_bytes"] > 57344, r["launch_binding"]' ||
                fail "the failed start's receipt does not say the binding was omitted"
}

# ---------------------------------------------------------------- the keeper executable

# keeper_pid: the pid of the one keeper under $T/mat (its status file).
keeper_pid() {
        "$PY" -c 'import glob, json, sys; f = glob.glob(sys.argv[1] + "/*.status"); print(json.load(open(f[0]))["keeper"]["pid"])' \
                "$T/mat/keepers"
}

# secrets_in PID: which of gloved's secrets (the receipt key and the
# bootstrap secret, raw and as hex) the memory of PID holds: "key secret",
# "key", "" ...; "unreadable" when /proc/PID/mem cannot be read by this user.
secrets_in() {
        "$PY" - "$1" "$ST/receipt.key" "$RT/bootstrap-secret" <<'PYEOF'
import sys
pid, keyf, secf = sys.argv[1:4]
key = open(keyf, "rb").read()
sec_hex = open(secf, "rb").read().strip()
needles = {"key": [key, key.hex().encode()], "secret": [bytes.fromhex(sec_hex.decode()), sec_hex]}
found = set()
try:
    maps = open(f"/proc/{pid}/maps").read().splitlines()
    mem = open(f"/proc/{pid}/mem", "rb", 0)
except OSError:
    print("unreadable")
    sys.exit(0)
for line in maps:
    f = line.split()
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    if f[1][0] != "r" or hi - lo > (256 << 20) or (len(f) > 5 and f[5] in ("[vvar]", "[vvar_vclock]")):
        continue
    try:
        mem.seek(lo)
        data = mem.read(hi - lo)
    except OSError:
        continue
    for name, ns in needles.items():
        if any(n in data for n in ns):
            found.add(name)
print(" ".join(sorted(found)))
PYEOF
}

@test "gloved keeper: a keeper is glove-keeper exec'd, with an empty environment, its own descriptors only and none of gloved's secrets" {
        # What a keeper holds is a property of the exec, not of the
        # sanitizer: the normal build proves it (the unpriv cell), and a scan
        # of an ASan gloved's memory costs about 12 s.
        if ldd "$GLOVED" 2>/dev/null | grep -q libasan; then
                skip "this gloved is an ASan build: the keeper's memory is scanned with the normal build (unpriv cell)"
        fi
        fs_gloved "{\"templates\":[$SLEEPER]}"
        new_fs kp sleeper '[]'
        ctl start kp
        expect_status 0
        wait_state kp running
        local kpid want
        kpid=$(keeper_pid)
        want=$(readlink -f "$(dirname "$GLOVED")/glove-keeper")
        [ "$(readlink "/proc/$kpid/exe")" = "$want" ] || fail "the keeper runs $(readlink "/proc/$kpid/exe"), not $want"
        [ ! -s "/proc/$kpid/environ" ] || fail "the keeper has an environment: $(tr '\0' ' ' <"/proc/$kpid/environ")"
        # Its descriptors: /dev/null, its files, sockets, the PTY, the event
        # loop's and the session's anonymous inodes; and none that gloved
        # holds (no socket, journal, key or log of gloved's).
        local bad
        bad=$("$PY" - "$kpid" "$GD_PID" "$T" <<'PYEOF'
import os, sys
k, g, t = sys.argv[1:4]
def links(pid):
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return out
kl, gl = links(k), set(links(g).values())
shared = ("/dev/null", "/dev/ptmx")
mine = (t + "/mat/keepers", t + "/mat/audit/", "socket:", "pipe:", "/sys/fs/cgroup/")
for fd, l in sorted(kl.items()):
    if l in shared or l.startswith(("/dev/pts/", "anon_inode:")):
        continue
    if not l.startswith(mine):
        print(f"not its own: {fd}->{l}")
    elif l in gl:
        print(f"shared with gloved: {fd}->{l}")
PYEOF
)
        [ -z "$bad" ] || fail "the keeper's descriptors: $bad"
        # gloved's memory holds both secrets (the scan works); the keeper's neither.
        local g k
        g=$(secrets_in "$GD_PID")
        k=$(secrets_in "$kpid")
        [ "$g" != unreadable ] && [ "$k" != unreadable ] ||
                skip "the memory of gloved and its keeper is not readable as uid $(id -u) (the rest passed)"
        [ "$g" = "key secret" ] || fail "the scan does not find the secrets in gloved's own memory: '$g'"
        [ -z "$k" ] || fail "the keeper's memory holds gloved's: $k"
        ctl stop kp
        wait_state kp exited
}

# launch_fails ID CODE: start_session is accepted, and the launch of the
# keeper fails: the session is failed with CODE, one start_failed receipt,
# nothing left.
launch_fails() {
        ctl start "$1"
        expect_status 0
        wait_state "$1" failed
        [ "$(status_field "$1" 's["history"][-1]["reason"]')" = "$2" ] ||
                fail "the failed transition's reason is not $2: $(status_field "$1" 's["history"]')"
        [ "$(terminal_receipts "$1")" = "1 start_failed $2" ] ||
                fail "expected one start_failed receipt with $2, got: $(terminal_receipts "$1")"
        grep -q "session $1: the start failed: $2: " "$GD_ERR" || fail "gloved did not say why $1 failed: $(cat "$GD_ERR")"
        nothing_left "$1"
}

@test "gloved keeper: a replaced, group/other-writable or missing glove-keeper fails the start: keeper.replaced, keeper.unsafe, keeper.missing" {
        # A private copy of gloved and its glove-keeper, so that they can be changed.
        mkdir -p "$T/bin"
        cp "$GLOVED" "$(dirname "$GLOVED")/glove-keeper" "$T/bin/"
        GLOVED=$T/bin/gloved
        fs_gloved "{\"templates\":[$SLEEPER]}"
        local id
        for id in kr ku km k4; do new_fs "$id" sleeper '[]'; done
        # Another file at the path after gloved started (an upgrade).
        cp "$T/bin/glove-keeper" "$T/bin/glove-keeper.new"
        mv -f "$T/bin/glove-keeper.new" "$T/bin/glove-keeper"
        launch_fails kr keeper.replaced
        chmod o+w "$T/bin/glove-keeper"
        launch_fails ku keeper.unsafe
        rm "$T/bin/glove-keeper"
        launch_fails km keeper.missing
        verify_chain
        # Missing when gloved starts: said on stderr, and every start fails.
        restart_clean
        grep -q '"code":"keeper.missing"' "$GD_ERR" || fail "gloved did not say at start that glove-keeper is missing: $(cat "$GD_ERR")"
        launch_fails k4 keeper.missing
        for id in kr ku km; do
                [ "$(status_field "$id" 's["state"]')" = failed ] || fail "after the restart $id is not failed"
        done
}

#!/usr/bin/env bats
# glove ctl's managed-session commands: help and usage errors (no gloved
# needed), then against a real gloved with the managed runtime: start,
# sessions, attach (scripted and interactive through a pseudo-terminal:
# raw mode, window size, detach key, terminal restored), write-stdin,
# resize, signal, stop, cleanup, and the independent receipt verifier
# (tests/agents/verify_receipts.py) on the receipts they produce.

load helpers
load "$GLOVE_IT_LIB/gloved"

MANAGED="$LIB/managed.py"
VERIFY="$AGENTS/verify_receipts.py"
ZERO64=0000000000000000000000000000000000000000000000000000000000000000

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
}

teardown() {
        gloved_teardown
        return 0
}

# A runtime directory nobody serves: commands that pass their usage checks
# then fail with client.unreachable.
NOBODY=/nonexistent/glove-run

# gctl ARGS...: glove ctl against NOBODY.
gctl() {
        run --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" ctl --runtime-dir "$NOBODY" "$@"
}

@test "ctl sessions: --help lists every session command and the detach key" {
        g ctl --help
        expect_status 0
        local w
        for w in "start ID" "attach ID [--no-stdin]" "write-stdin ID [--data TEXT]" "resize ID ROWS COLS" \
                "signal ID NAME" "stop ID [--grace TIME]" "cleanup ID" "sessions " "Ctrl-] d detaches"; do
                [[ "$output" == *"$w"* ]] || fail "help does not mention '$w'"
        done
        g ctl attach --help
        expect_status 0
        [[ "$output" == "Usage: glove ctl "* ]] || fail "attach --help is not the usage text"
}

@test "ctl sessions: usage errors are usage.ctl with exit 125, before any connection" {
        local args
        while IFS= read -r args; do
                eval "gctl $args"
                expect_glove_error 125
                [ "$(glove_error_code)" = usage.ctl ] || fail "'$args': expected usage.ctl, got: $stderr"
        done <<'LIST'
start
start a b
start ""
attach
attach a b
attach a --bogus
write-stdin
write-stdin a --data
write-stdin a --data x --data y
resize a 24
resize a 0 80
resize a 24 10001
resize a 24 x
signal a
signal a BOGUS
signal a sigterm
stop
stop a --grace
stop a --grace 600001
stop a --grace -1
cleanup
cleanup a b
sessions extra
LIST
        # Accepted forms get as far as the connection.
        for args in "start a" "attach a --no-stdin" "write-stdin a --data x" "resize a 24 80" "signal a TERM" \
                "signal a SIGKILL" "stop a" "stop a --grace 0" "cleanup a" "sessions" "--json sessions"; do
                eval "gctl $args"
                expect_glove_error 125
                [ "$(glove_error_code)" = client.unreachable ] || fail "'$args': expected client.unreachable, got: $stderr"
        done
}

@test "ctl sessions: write-stdin refuses more than 65536 bytes of standard input" {
        run --separate-stderr bash -c "head -c 65537 /dev/zero | '$GLOVE' ctl --runtime-dir '$NOBODY' write-stdin a"
        expect_glove_error 125
        [ "$(glove_error_code)" = ctl.stdin_too_large ] || fail "expected ctl.stdin_too_large: $stderr"
        run --separate-stderr bash -c "head -c 65536 /dev/zero | '$GLOVE' ctl --runtime-dir '$NOBODY' write-stdin a"
        expect_glove_error 125
        [ "$(glove_error_code)" = client.unreachable ] || fail "65536 bytes must be accepted: $stderr"
}

@test "ctl sessions: a gloved without the managed runtime answers method_not_found" {
        start_gloved "$T/a"
        local c
        for c in "start s1" "stop s1" "cleanup s1" "resize s1 24 80" "signal s1 TERM" "write-stdin s1 --data x" \
                "attach s1 --no-stdin"; do
                ctl $c
                expect_refused method_not_found
        done
}

# ---------------------------------------------------------------- managed sessions

# start_managed: gloved with a policy that has the sh-* templates, a store and
# a materialization root. Skips (saying why) only when this gloved predates
# managed sessions (no --materialization-root option).
start_managed() {
        grep -q -- --materialization-root "$GLOVED" ||
                skip "this gloved has no managed runtime (--materialization-root unknown)"
        mkdir -m 700 -p "$T/cfg"
        "$PY" "$MANAGED" policy "$GLOVED_POLICY_SRC" "$T/cfg/policy.json"
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat"
        ctl --json capabilities
        expect_status 0
        # Without delegated cgroups (uid 65534 here) the runtime is built
        # but not operational: that report is tested in gloved_sessions.bats.
        if [[ "$output" == *'"lifecycle_operational":false'* && "$output" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): managed sessions are not operational"
        fi
        [[ "$output" == *'"start_session"'* ]] || fail "gloved does not advertise start_session: $output"
}

# new_session ID TEMPLATE: creates (does not start) a session.
new_session() {
        "$PY" "$MANAGED" plan "$T/cfg/$1.plan" "$2"
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

# session_state ID: its state from glove ctl --json sessions.
session_state() {
        "$GLOVE" ctl --runtime-dir "$RT" --json sessions |
                "$PY" -c 'import json,sys; print(next(s["state"] for s in json.load(sys.stdin)["sessions"] if s["session_id"]==sys.argv[1]))' "$1"
}

@test "ctl sessions: start, sessions, scripted attach with the exit status, cleanup" {
        start_managed
        new_session s1 sh-echo
        ctl sessions
        expect_status 0
        [[ "${lines[0]}" =~ ^SESSION\ +STATE\ +AGE$ ]] || fail "no table header"
        [[ "${lines[1]}" =~ ^s1\ +created\ +[0-9]+s$ ]] || fail "s1 not listed as created"
        ctl --json start s1
        expect_status 0
        [ "${#lines[@]}" -eq 1 ] || fail "--json must print one line"
        "$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["session_id"]=="s1" and r["state"] in ("preparing","starting","running"), r' "$output" ||
                fail "bad start result"
        # A second start answers the current state.
        ctl start s1
        expect_status 0
        [[ "$output" =~ ^session\ s1:\ (preparing|starting|running)$ ]] || fail "retry did not answer the state"
        run --separate-stderr timeout -k 5 30 bash -c "printf 'hello\nquit\n' | '$GLOVE' ctl --runtime-dir '$RT' attach s1"
        expect_status 7
        [[ "$output" == *"got:hello"* ]] || fail "no echoed line in the output"
        [[ "$output" != *"glove:"* ]] || fail "status text on stdout"
        [[ "$stderr" == *"session s1 exited: exit, status 7"* ]] || fail "no final status on stderr"
        [ "$(session_state s1)" = exited ] || fail "s1 is not exited"
        ctl cleanup s1
        expect_status 0
        expect_line "removed: none"
        ctl --json cleanup s1
        expect_status 0
        # Attach to an exited session: the transcript and its status.
        run --separate-stderr timeout -k 5 30 "$GLOVE" ctl --runtime-dir "$RT" attach s1 --no-stdin
        expect_status 7
        [[ "$stderr" == *"status 7"* ]] || fail "no final status for the exited session"
}

@test "ctl sessions: write-stdin, resize, signal; stop with a grace; cleanup only when ended" {
        start_managed
        new_session s2 sh-echo
        ctl start s2
        expect_status 0
        ctl cleanup s2
        expect_refused session.not_terminal
        ctl write-stdin s2 --data "$(printf 'one')"
        expect_status 0
        expect_output "accepted 3 bytes"
        ctl --json resize s2 30 100
        expect_status 0
        expect_output "{}"
        printf '\nsize\n' >"$T/in"
        run --separate-stderr "$GLOVE" ctl --runtime-dir "$RT" write-stdin s2 <"$T/in"
        expect_status 0
        expect_output "accepted 6 bytes"
        "$GLOVE" ctl --runtime-dir "$RT" attach s2 --no-stdin >"$T/out" 2>"$T/err" &
        local apid=$!
        track_pid "$apid"
        wait_for "$T/out" "^30 100" || fail "the resize did not reach the session"
        grep -q "got:one" "$T/out" || fail "write-stdin data did not reach the session"
        ctl signal s2 TERM
        expect_status 0
        expect_output "session s2: sent SIGTERM"
        wait_exit "$apid" 20 || fail "attach did not end"
        [ "$WSTATUS" -eq 143 ] || fail "attach exited $WSTATUS, expected 143 (SIGTERM)"
        new_session s3 sh-echo
        ctl start s3
        # A stop before the agent runs is start.stopped (its own test);
        # this one stops a running session.
        wait_state s3 running || fail "s3 did not run"
        ctl stop s3 --grace 100
        expect_status 0
        [[ "$output" =~ ^session\ s3:\ (stopping|exited)$ ]] || fail "stop did not answer stopping"
        run --separate-stderr timeout -k 5 30 "$GLOVE" ctl --runtime-dir "$RT" attach s3 --no-stdin
        [ "$status" -eq 143 ] || [ "$status" -eq 137 ] || fail "a stopped session ends with 128+signal, got $status"
        [[ "$stderr" == *"session s3 exited: stopped"* ]] || fail "no 'stopped' final status: $stderr"
        ctl cleanup s3
        expect_status 0
}

# interactive ID SCRIPT: runs `glove ctl attach ID` in a pseudo-terminal
# (script(1)) of 40x100, with stty -a saved before and after; SCRIPT (bash,
# run in the background) types into it with `type TEXT` and waits with
# `see REGEX`. Sets ISTATUS (attach's exit status) and leaves $T/pty.out.
interactive() {
        local id=$1 feeder=$2
        rm -f "$T/pty.out" "$T/rc" "$T/before" "$T/after" "$T/tty"
        cat >"$T/inner.sh" <<INNER
tty > "$T/tty"
stty rows 40 cols 100
stty -a > "$T/before"
"$GLOVE" ctl --runtime-dir "$RT" attach $id
echo "rc=\$?" > "$T/rc"
stty -a > "$T/after"
INNER
        {
                type() { printf '%b' "$1"; }
                see() { wait_for "$T/pty.out" "$1" 20 >&2 || { printf '\035d'; return 1; }; }
                eval "$feeder"
                wait_for "$T/rc" '^rc=' 20 >&2
        } | timeout -k 5 60 script -qfec "bash $T/inner.sh" /dev/null >"$T/pty.out"
        ISTATUS=$(sed -n 's/^rc=//p' "$T/rc")
        [ -n "$ISTATUS" ] || fail "attach did not finish; output: $(cat -v "$T/pty.out")"
        # The modes must come back exactly; the window size may have been
        # changed on purpose by the script (SIGWINCH).
        diff <(sed 's/rows [0-9]*; columns [0-9]*;//' "$T/before") \
                <(sed 's/rows [0-9]*; columns [0-9]*;//' "$T/after") >&2 ||
                fail "the terminal settings changed across attach"
}

@test "ctl sessions: interactive attach: raw mode, window size, SIGWINCH, detach key, terminal restored" {
        command -v script >/dev/null || fail "script (util-linux) is needed"
        start_managed
        new_session s4 sh-echo
        ctl start s4
        expect_status 0
        # Raw mode: "ab" reaches the session (its terminal echoes it) before
        # any Enter; the size is the attaching terminal's; Ctrl-] d detaches.
        interactive s4 'see ready; type ab; see "ab"; type "\r"; see "got:ab"; type "size\r"; see "^40 100";
                stty -F "$(cat "$T/tty")" rows 50 cols 120; type "size\r"; see "^50 120"; type "\035d"'
        [ "$ISTATUS" -eq 0 ] || fail "detach must exit 0, got $ISTATUS"
        grep -q "detached from session s4" "$T/pty.out" || fail "no detach message"
        [ "$(session_state s4)" = running ] || fail "the session must keep running after detach"
        # Ctrl-] Ctrl-] sends one Ctrl-] (0x1d): it shows as ^] in the echo.
        # Then "quit" ends the session: attach exits with its status 7.
        interactive s4 'type "x\035\035y\r"; see "got:x"; type "quit\r"'
        [ "$ISTATUS" -eq 7 ] || fail "attach must exit with the session's 7, got $ISTATUS"
        grep -q 'got:x.y' "$T/pty.out" || fail "Ctrl-] Ctrl-] did not send one Ctrl-]"
        grep -q "session s4 exited: exit, status 7" "$T/pty.out" || fail "no final status"
}

@test "ctl sessions: the independent verifier accepts gloved's receipts and rejects a one-byte corruption" {
        start_managed
        new_session s5 sh-echo
        ctl start s5
        run --separate-stderr timeout -k 5 30 bash -c "printf 'quit\n' | '$GLOVE' ctl --runtime-dir '$RT' attach s5"
        expect_status 7
        new_session s6 sh-exit3
        ctl start s6
        run --separate-stderr timeout -k 5 30 "$GLOVE" ctl --runtime-dir "$RT" attach s6 --no-stdin
        expect_status 3
        ctl --json receipts
        expect_status 0
        printf '%s\n' "$output" >"$T/page.json"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --page "$T/page.json"
        expect_status 0
        [[ "$output" == "ok: page: 2 records verified"*"2 session.terminal receipts"* ]] || fail "page: $output $stderr"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" <"$T/page.json"
        expect_status 0
        cp "$ST/receipts.journal" "$T/j"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --journal "$T/j"
        expect_status 0
        [[ "$output" == "ok: journal: 2 records verified"* ]] || fail "journal: $output $stderr"
        # The wrong anchor or key is refused.
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "${ZERO64%0}1" --journal "$T/j"
        expect_status 1
        head -c 32 /dev/urandom >"$T/otherkey"
        run --separate-stderr "$PY" "$VERIFY" --key "$T/otherkey" --anchor "$ZERO64" --journal "$T/j"
        expect_status 1
        [[ "$stderr" == "verify_receipts: record 1: MAC"* ]] || fail "wrong key: $stderr"
        # One byte changed inside the second record: the first bad record is named.
        local size off
        size=$(stat -c %s "$T/j")
        off=$((size - 32 - 20))
        printf '\x01' | dd of="$T/j" bs=1 seek="$off" conv=notrunc status=none
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --journal "$T/j"
        expect_status 1
        [[ "$stderr" == "verify_receipts: record 2: "* ]] || fail "corruption not pinned to record 2: $stderr"
        # A page whose receipt was altered (exit code 3 -> 4) is refused too.
        "$PY" -c 'import json,sys; p=json.load(open(sys.argv[1])); p["envelopes"][1]["envelope"]["receipt"]["exit_code"]=4; print(json.dumps(p))' \
                "$T/page.json" >"$T/bad.json"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --page "$T/bad.json"
        expect_status 1
        [[ "$stderr" == "verify_receipts: record 2: MAC"* ]] || fail "altered page: $stderr"
}

@test "ctl sessions: a SIGKILLed gloved leaves its session running in its keeper; the next start adopts it, and its one receipt comes at its end" {
        start_managed
        new_session r1 sh-sleep
        ctl start r1
        expect_status 0
        wait_state r1 running || fail "r1 did not reach running"
        # The sandbox's PID 1 is the keeper's child, not gloved's.
        local keeper pid1 i
        keeper=$(jq -r .keeper.pid "$T"/mat/keepers/*.status)
        [ -n "$keeper" ] || fail "no glove-keeper process while r1 runs"
        pid1=$(pgrep -P "$keeper" | head -n1)
        [ -n "$pid1" ] || fail "no sandbox process under the keeper"
        [ -z "$(pgrep -P "$GD_PID")" ] || fail "gloved has children: $(pgrep -a -P "$GD_PID")"
        kill -KILL "$GD_PID"
        wait_exit "$GD_PID" 10 || fail "gloved did not die"
        sleep 0.3
        kill -0 "$keeper" 2>/dev/null || fail "the keeper died with gloved"
        kill -0 "$pid1" 2>/dev/null || fail "the sandbox died with gloved"
        # What a killed gloved leaves in its runtime directory (start_gloved
        # waits for these to appear).
        rm -f "$RT/gloved.sock" "$RT/bootstrap-secret"
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat"
        grep -qF '"msg":"reconcile: r1: reconcile.adopted: ' "$GD_ERR" || fail "r1 was not adopted: $(cat "$GD_ERR")"
        [ "$(session_state r1)" = running ] || fail "r1 is not running after the restart"
        ctl stop r1 --grace 100
        expect_status 0
        wait_state r1 exited || fail "r1 did not end after its stop"
        for i in $(seq 100); do kill -0 "$keeper" 2>/dev/null || break; sleep 0.05; done
        ! kill -0 "$keeper" 2>/dev/null || fail "the keeper outlived its session"
        ! kill -0 "$pid1" 2>/dev/null || fail "the sandbox outlived its session"
        ctl --json receipts
        expect_status 0
        "$PY" -c '
import json, sys
p = json.loads(sys.argv[1])
mine = [e["envelope"]["receipt"] for e in p["envelopes"] if e["envelope"]["session_id"] == "r1"]
assert len(mine) == 1, mine
r = mine[0]
assert r["state"] == "exited" and r["termination"]["kind"] == "stopped", r
assert isinstance(r["started_at_ms"], int) and r["launch_binding"].get("executable_digest"), r
assert "cgroup" not in r["launch_binding"], r' "$output" || fail "bad receipt: $output"
        # The adopted session'"'"'s whole binding (its cgroup included) is kept
        # locally, and the receipt'"'"'s digest commits to it.
        jq -e '.cgroup.path' "$ST/bindings/r1.json" >/dev/null || fail "no kept binding with the cgroup for r1"
        printf '%s' "$output" | "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" --bindings "$ST/bindings" \
                >/dev/null || fail "the receipt chain does not verify"
        [ -z "$(ls -A "$T/mat/keepers" 2>/dev/null)" ] || fail "keeper files are left: $(ls "$T/mat/keepers")"
        # A second restart finds nothing to reconcile.
        stop_gloved
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat"
        ! grep -q "reconcile" "$GD_ERR" || fail "a session was reconciled twice: $(cat "$GD_ERR")"
}

# receipt_of ID: the session.terminal receipt of ID (one line of JSON).
receipt_of() {
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 |
                "$PY" -c 'import json,sys; r=[e["envelope"]["receipt"] for e in json.load(sys.stdin)["envelopes"] if e["envelope"]["session_id"]==sys.argv[1]]; assert len(r)==1, r; print(json.dumps(r[0]))' "$1"
}

# wait_state ID STATE: up to 10 s.
wait_state() {
        local i
        for i in $(seq 100); do [ "$(session_state "$1")" = "$2" ] && return 0; sleep 0.1; done
        return 1
}

@test "ctl sessions: a kill by the controller is receipted as what it was: stopped or signal 9, never lost" {
        start_managed
        new_session k1 sh-sleep
        ctl start k1
        wait_state k1 running || fail "k1 did not run"
        ctl stop k1 --grace 0
        expect_status 0
        wait_state k1 exited || fail "k1 is $(session_state k1) after stop --grace 0"
        "$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["state"]=="exited" and r["termination"]=={"kind":"stopped","signal":9}, r' "$(receipt_of k1)" ||
                fail "bad receipt for a stop without grace: $(receipt_of k1)"
        new_session k2 sh-sleep
        ctl start k2
        wait_state k2 running || fail "k2 did not run"
        ctl signal k2 KILL
        expect_status 0
        wait_state k2 exited || fail "k2 is $(session_state k2) after SIGKILL"
        "$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["state"]=="exited" and r["termination"]=={"kind":"signal","signal":9}, r' "$(receipt_of k2)" ||
                fail "bad receipt for SIGKILL: $(receipt_of k2)"
        # SIGSTOP would stop PID 1, not the agent: it is not offered.
        ctl signal k2 STOP
        expect_status 125
        # A stop right after start is honoured whatever the state reached:
        # before release the agent never starts (failed, start.stopped).
        new_session k3 sh-sleep
        ctl start k3
        expect_status 0
        ctl stop k3 --grace 0
        expect_status 0
        local i
        for i in $(seq 100); do
                case "$(session_state k3)" in exited | failed) break ;; esac
                sleep 0.1
        done
        "$PY" -c '
import json, sys
r = json.loads(sys.argv[1])
assert (r["state"], r["termination"]) in (("failed", {"kind": "start_failed", "code": "start.stopped"}),
                                          ("exited", {"kind": "stopped", "signal": 9})), r' "$(receipt_of k3)" ||
                fail "bad receipt for a stop during start: $(receipt_of k3)"
}

@test "ctl sessions: write-stdin right after start waits for the session's input to open" {
        start_managed
        local n
        for n in 1 2 3 4; do
                new_session w$n sh-echo
                ctl start w$n
                expect_status 0
                # At once: the session is still preparing or starting.
                ctl write-stdin w$n --data "quit"
                expect_status 0
                expect_output "accepted 4 bytes"
        done
}

@test "ctl plan: prints a canonical plan from the policy file that validates, creates and starts; refuses what it cannot choose" {
        mkdir -m 700 -p "$T/cfg"
        "$PY" "$MANAGED" policy "$GLOVED_POLICY_SRC" "$T/cfg/policy.json"
        # No gloved, no runtime directory: plan reads the policy file only.
        run --separate-stderr env -u XDG_RUNTIME_DIR "$GLOVE" ctl plan --policy "$T/cfg/policy.json" \
                --template sh-echo --profile interactive --expires-in 90s
        expect_status 0
        printf '%s\n' "$output" >"$T/cfg/plan.json"
        "$PY" - "$T/cfg/plan.json" <<'PYEOF' || fail "not the canonical plan expected: $output"
import json, sys, time
raw = open(sys.argv[1]).read().rstrip("\n")
p = json.loads(raw)
assert raw == json.dumps(p, sort_keys=True, separators=(",", ":"), ensure_ascii=False), "not canonical"
now = time.time() * 1000
assert now + 80000 < p["expires_at_ms"] <= now + 90000, p["expires_at_ms"]
assert p["runtime_template_id"] == "sh-echo" and p["egress_policy_id"] == "no-network"
assert p["secret_handles"] == [] and p["path_grants"] == [] and p["library_projections"] == []
PYEOF
        # What it cannot choose alone, and bad values: before any policy read
        # for usage, after it for choices.
        g ctl plan --policy "$T/cfg/policy.json" --template sh-echo
        expect_status 125
        [[ "$stderr" == "glove: ctl.plan_choice: "*"--profile"*"interactive small"* ]] || fail "profile choice: $stderr"
        g ctl plan --policy "$T/cfg/policy.json" --template nope --profile interactive
        expect_status 125
        [[ "$stderr" == "glove: ctl.plan_choice: --template nope is not in the policy"* ]] || fail "unknown template: $stderr"
        g ctl plan --policy "$T/cfg/policy.json" --template sh-echo --profile interactive --expires-in 10m
        expect_status 125
        [[ "$stderr" == *"max_plan_ttl_ms"* ]] || fail "a ttl past the policy's: $stderr"
        g ctl plan --policy "$T/cfg/policy.json" --template sh-echo --expires-in 5x
        expect_status 125
        [[ "$stderr" == "glove: usage.ctl: "* ]] || fail "bad duration: $stderr"
        g ctl plan --profile interactive
        expect_status 125
        [[ "$stderr" == "glove: usage.ctl: plan needs --template"* ]] || fail "no template: $stderr"
        chmod 644 "$T/cfg/policy.json"
        g ctl plan --policy "$T/cfg/policy.json" --template sh-echo --profile interactive
        expect_status 125
        [[ "$stderr" == "glove: policy."* ]] || fail "a policy file gloved would refuse: $stderr"
        chmod 600 "$T/cfg/policy.json"
        # The printed plan validates, creates and starts.
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat"
        ctl validate-plan "$T/cfg/plan.json"
        expect_status 0
        [[ "$output" == "valid plan: "* ]] || fail "the printed plan is not valid: $output // $stderr"
        ctl create-session --session-id p1 --idempotency-key k-p1 --controller-digest "$CDIGEST" --plan "$T/cfg/plan.json"
        expect_status 0
        ctl --json capabilities
        if [[ "$output" == *'"lifecycle_operational":false'* && "$output" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): the plan validated and was created; starting needs managed sessions"
        fi
        ctl start p1
        expect_status 0
        run --separate-stderr timeout -k 5 30 bash -c "printf 'quit\n' | '$GLOVE' ctl --runtime-dir '$RT' attach p1"
        expect_status 7
        [[ "$output" == *"got:quit"* ]] || fail "the session did not run: $output // $stderr"
}

#!/usr/bin/env bats
# What happens to the agent's input and output at the edges (issue "One
# session engine"; found by the red team after the engine rewrite): end of
# Glove's input reaches an agent on a PTY; a failed write to Glove's stdout is
# never silent.

load helpers

@test "output: --tty with a pipe as stdin: the agent on its PTY reads the input, then end of file" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c 'printf "abc\n" | "$1" exec --tty -- /bin/cat' _ "$GLOVE"
        expect_status 0
        [[ "$output" == *abc* ]] || fail "the input did not reach the agent"
}

@test "output: --tty with a partial last line as stdin still ends the agent's input" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c 'printf "no newline" | "$1" exec --tty -- /bin/cat' _ "$GLOVE"
        expect_status 0
        [[ "$output" == *"no newline"* ]] || fail "the partial line did not reach the agent"
}

@test "output: --tty with /dev/null as stdin: the agent reads end of file at once" {
        run --separate-stderr timeout --foreground -k 5 20 "$GLOVE" exec --tty -- /bin/cat </dev/null
        expect_status 0
}

@test "output: a full stdout stops the agent with output.write (125), never a silent success" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c '"$1" exec -- /bin/sh -c "echo hello; sleep 30" >/dev/full' _ "$GLOVE"
        expect_glove_error 125
        [ "$(glove_error_code)" = output.write ] || fail "expected output.write, got: $stderr"
        [[ "$stderr" == *"No space left on device"* ]] || fail "the reason is missing: $stderr"
}

@test "output: stdout whose reader went away gives the agent SIGPIPE, as in a pipeline (141)" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c '"$1" exec -- /usr/bin/yes | head -c 10 >/dev/null; echo "glove=${PIPESTATUS[0]}"' _ "$GLOVE"
        expect_status 0
        expect_line "glove=141"
}

@test "signals: a second SIGTERM stops an agent that ignores the first (Glove exits 143)" {
        local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
        spawn_glove "$out" "$err" -- /bin/sh -c 'trap "" TERM INT HUP; echo up; sleep 30; echo survived'
        wait_for "$out" '^up$' 10 || fail "the agent did not start"
        kill -TERM "$GPID"
        sleep 0.3
        kill -TERM "$GPID"
        wait_exit "$GPID" 10 || fail "glove did not stop"
        [ "$WSTATUS" -eq 143 ] || fail "expected 143, got $WSTATUS; stderr: $(cat "$err")"
        ! grep -q survived "$out" || fail "the agent survived"
        grep -q "exec.stopped" "$err" || fail "no exec.stopped line: $(cat "$err")"
}

@test "signals: SIGALRM to Glove stops the agent and leaves no run cgroup behind (142)" {
        local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
        spawn_glove "$out" "$err" -- /bin/sh -c 'echo up; sleep 30'
        wait_for "$out" '^up$' 10 || fail "the agent did not start"
        kill -ALRM "$GPID"
        wait_exit "$GPID" 10 || fail "glove did not stop"
        [ "$WSTATUS" -eq 142 ] || fail "expected 142, got $WSTATUS; stderr: $(cat "$err")"
        if [ -d /sys/fs/cgroup/pids ]; then
                ! find /sys/fs/cgroup -maxdepth 3 -name "glove-$GPID-*" 2>/dev/null | grep -q . || fail "a run cgroup was left behind"
        fi
}

@test "limits: --wall-time below the poll interval is enforced at its value" {
        gx --wall-time 20 -- /bin/sleep 1
        [ "$status" -eq 137 ] || fail "expected 137, got $status: $stderr"
        [[ "$stderr" == *"limits.wall_time"* ]] || fail "the limit was not named: $stderr"
}

@test "limits: --pids 1 is refused (the sandbox's init and the agent are two); glove run --tty is refused" {
        gx --pids 1 -- /bin/true
        expect_glove_error 125
        run --separate-stderr timeout --foreground 20 "$GLOVE" run --tty --upstream u=/bin/true -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = usage.tty_run ] || fail "expected usage.tty_run: $stderr"
}

@test "limits: an agent that ends on its own between two CPU readings is not reported as stopped by --cpu-time" {
        # The setup alone is past 1 ms of CPU: the first reading of the
        # limit watch stops an agent still alive then (137, "cpu_time",
        # right). On a loaded host that reading can come before `echo`
        # ended, so up to five tries; every one must be one of the two
        # right outcomes, and one must have ended on its own.
        local try ended=0 verdict
        for try in 1 2 3 4 5; do
                gx --cpu-time 1 --status-json "$BATS_TEST_TMPDIR/s.json" -- /bin/sh -c 'echo hi'
                if [ "$status" -eq 125 ] && [[ "$stderr" == *cgroup.not_delegated* ]]; then
                        skip "no delegated cgroup for uid $(id -u): --cpu-time needs one"
                fi
                verdict=$("$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["exit_code"], s["limit"])' "$BATS_TEST_TMPDIR/s.json")
                case "$status:$verdict" in
                "0:0 None") expect_line hi; ended=1; break ;;
                "137:137 cpu_time") echo "# try $try: stopped by the watch before echo ended" >&3 ;;
                *) fail "try $try: exit $status, status object $verdict: $stderr" ;;
                esac
        done
        [ $ended = 1 ] || fail "the agent never ended before the first reading in five tries"
}

@test "output: a stderr nobody reads cannot hold Glove after a limit killed the agent (it exits, 137)" {
        run --separate-stderr "$PY" - "$GLOVE" <<'PYEOF'
import os, subprocess, sys
r, w = os.pipe()  # stdout and stderr on one pipe that nobody reads
p = subprocess.Popen([sys.argv[1], "exec", "--wall-time", "1000", "--", "/bin/sh", "-c", "head -c 200000 /dev/zero; sleep 30"],
                     stdout=w, stderr=w, stdin=subprocess.DEVNULL)
os.close(w)
try:
    print("exit", p.wait(timeout=60))
except subprocess.TimeoutExpired:
    p.kill(); p.wait(); print("hung")
PYEOF
        expect_status 0
        expect_output "exit 137"
}

@test "output: --status-json naming the audit log (or a hard link to it) is refused before anything runs" {
        local log=$BATS_TEST_TMPDIR/audit.jsonl
        gx --audit-log "$log" -- /bin/true
        expect_status 0
        local before; before=$(wc -l <"$log")
        gx --audit-log "$log" --status-json "$log" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = status.is_audit_log ] || fail "expected status.is_audit_log: $stderr"
        ln "$log" "$BATS_TEST_TMPDIR/link.json"
        gx --audit-log "$log" --status-json "$BATS_TEST_TMPDIR/link.json" -- /bin/true
        expect_glove_error 125
        [ "$(wc -l <"$log")" -ge "$before" ] || fail "the audit log lost records"
        "$PY" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$log" || fail "the audit log is no longer JSON lines"
}

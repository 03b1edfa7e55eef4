#!/usr/bin/env bats
# Sessions outlive gloved (issue 10, "Tests"): gloved killed with SIGKILL at
# each point of the lifecycle and restarted on the same directories; an
# identity mismatch that must signal nothing; a host restart simulated by a
# boot id bind-mounted in gloved's own mount namespace; a keeper killed while
# gloved is down. After each: the right state for every session, exactly one
# terminal receipt per ended session and a chain that verifies, nothing left
# on the host (process, cgroup, mount, loop device, tmpfs, keeper file), and
# a running agent whose output has no gap.
#
# The crash points are exact and need no back door in gloved: gloved runs
# with the test shim build/glove-crashpoint.so (tests/integration/lib/
# crashpoint.c) preloaded, which SIGKILLs gloved around the store write that
# holds a given transition. The agent is tests/agents/managed_agent.py
# "count" (numbered lines until "quit"); the host checks are
# tests/integration/lib/recovery.py. Expected reconciler codes:
# docs/recovery.md.

load helpers
load "$GLOVE_IT_LIB/gloved"

MANAGED="$LIB/managed.py"
REC="$LIB/recovery.py"
CRASHPOINT="$(dirname "$GLOVE")/glove-crashpoint.so"
# Loops count with "idx", never "i" (bats' run assigns a global i).

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        GD_N=0
}

teardown() {
        if [ -n "${GD_PID:-}" ] && running "$GD_PID"; then
                kill -KILL "$GD_PID" 2>/dev/null || true
                wait_exit "$GD_PID" 10 || true
        fi
        # Sessions outlive gloved: whatever this test started and left is
        # taken away as a host restart would, so no later test sees it.
        if [ -f "$T/snap" ]; then
                "$PY" "$REC" simulate-reboot "$T/snap" "$T/mat" >&2 || true
        fi
        kill_tracked
        if [ -n "${FIXTURE_CG:-}" ]; then
                rmdir "$FIXTURE_CG" 2>/dev/null || true
        fi
        local f
        for f in "$T"/g.gloved.err.*; do
                [ -f "$f" ] && no_sanitizer_reports "$f"
        done
        return 0
}

# ------------------------------------------------------------ set-up

# require_recovery: root (delegated cgroups, loop devices, mount namespaces)
# and a managed runtime; skips saying why otherwise.
require_recovery() {
        is_root || skip "the recovery tests need root (loop devices, mount namespaces, cgroups to inspect); running as uid $(id -u)"
        grep -q -- --materialization-root "$GLOVED" ||
                skip "this gloved has no managed runtime (--materialization-root unknown)"
        [ -f "$CRASHPOINT" ] || fail "the crash-point shim $CRASHPOINT is missing (meson builds glove-crashpoint.so)"
}

# setup_rec: host directories, the Python policy, the store and
# materialization root, and a snapshot of the host (recovery.py snapshot).
setup_rec() {
        require_recovery
        mkdir -p "$T/host/src/sub" "$T/host/ref" "$T/host/keep"
        printf 'original a\n' >"$T/host/src/a.txt"
        printf 'reference\n' >"$T/host/ref/r.txt"
        chmod -R a+rX "$T/host"
        mkdir -m 700 -p "$T/cfg"
        "$PY" "$MANAGED" pypolicy "$T/cfg/policy.json" "$T/host"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat")
        "$PY" "$REC" snapshot "$T/snap"
}

# gd_start [MATCH WHEN]: starts gloved on $T/g with GD_ARGS and waits until it
# accepts (its "listening on" line: a socket that an earlier, killed gloved
# left does not count).
# With MATCH and WHEN (before|after|synced) the crash point is armed: gloved
# SIGKILLs itself around its write to the session store that holds MATCH.
# Each gloved gets its own stderr file, GD_ERR. Sets GD_PID, RT, ST.
gd_start() {
        local envs=()
        if [ $# -ge 2 ]; then
                envs=(LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH="$1" GLOVE_CRASH_WHEN="$2"
                        GLOVE_CRASH_PATH=sessions.journal GLOVE_CRASH_REPORT="$T/crash.report"
                        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
        fi
        gd_launch env "${envs[@]}" "$GLOVED"
}

# gd_launch PROGRAM...: PROGRAM... --runtime-dir ... GD_ARGS, in the
# background (PROGRAM execs gloved, so $! is gloved).
gd_launch() {
        RT=$T/g/run ST=$T/g/state
        GD_N=$((GD_N + 1))
        GD_ERR=$T/g.gloved.err.$GD_N
        "$@" --runtime-dir "$RT" --state-dir "$ST" "${GD_ARGS[@]}" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        echo "$GD_PID" >>"$T/snap.pids" # recovery.py: this test's gloved
        local idx
        for ((idx = 0; idx < 400; idx++)); do
                if grep -qF '"msg":"listening on ' "$GD_ERR" && [ -S "$RT/gloved.sock" ] &&
                        [ -f "$RT/bootstrap-secret" ]; then
                        return 0
                fi
                running "$GD_PID" || fail "gloved exited during start-up: $(cat "$GD_ERR")"
                sleep 0.025
        done
        fail "gloved did not listen within 10 s: $(cat "$GD_ERR")"
}

# gd_kill: SIGKILL to gloved (the keepers stay).
gd_kill() {
        kill -KILL "$GD_PID"
        wait_exit "$GD_PID" 10 || fail "gloved survived SIGKILL"
}

# gd_crashed WHEN: gloved died of the armed crash point, at WHEN.
gd_crashed() {
        wait_exit "$GD_PID" 60 || fail "gloved never reached the crash point ($1)"
        [ "$WSTATUS" -eq 137 ] || fail "gloved exited $WSTATUS, not of SIGKILL: $(cat "$GD_ERR")"
        grep -q "^crashpoint: pid $GD_PID: $1: match 1 on fd [0-9]* (.*sessions.journal)\$" "$T/crash.report" ||
                fail "the crash was not the armed point: $(cat "$T/crash.report" 2>&1)"
}

# new_session ID [TEMPLATE]: creates (does not start) a session (py-count).
new_session() {
        "$PY" "$MANAGED" pyplan "$T/cfg/policy.json" "$T/cfg/$1.plan" "${2:-py-count}" roomy
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

# start_session ID: start_session; the answer is not checked (an armed
# gloved may die before it answers).
start_session() {
        run --separate-stderr timeout --foreground -k 5 60 "$GLOVE" ctl --runtime-dir "$RT" start "$1"
}

# wait_state ID STATE[,STATE...] [SECONDS]
wait_state() {
        run --separate-stderr "$PY" "$REC" wait "$RT" "$@"
        [ "$status" -eq 0 ] || fail "$stderr; gloved said: $(cat "$GD_ERR"); receipts: $("$PY" "$LIB/sessctl.py" call "$RT" receipts_page '{}' | head -c 3000)"
}

# wait_seq ID N: until the session's transcript holds "seq N".
wait_seq() {
        local idx
        for ((idx = 0; idx < 600; idx++)); do
                "$PY" "$LIB/sessctl.py" call "$RT" attach "{\"session_id\":\"$1\"}" |
                        jq -r '.result.transcript_b64 // ""' | base64 -d | tr '\r' '\n' | grep -qx "seq $2" && return 0
                sleep 0.1
        done
        fail "session $1 never printed seq $2"
}

# reconciled ID CODE_REGEX: gloved's stderr has exactly one reconciler line
# for ID with a code that matches (a retained image re-attached after a host
# restart may add its own reconcile.frozen line).
reconciled() {
        local n
        n=$(grep -Ec "\"msg\":\"reconcile: $1: reconcile\.($2): ." "$GD_ERR" || true)
        [ "$n" -eq 1 ] || fail "expected one reconcile.$2 line for $1, got $n: $(grep "reconcile: " "$GD_ERR")"
}

# receipts_ok ARGS...: recovery.py receipts $RT $ST ARGS...
receipts_ok() {
        run --separate-stderr "$PY" "$REC" receipts "$RT" "$ST" "$@"
        expect_status 0
}

# receipt_is ID JQ-EXPR: the terminal receipt of ID satisfies the expression.
receipt_is() {
        local r
        r=$("$PY" "$LIB/sessctl.py" call "$RT" receipts_page '{"after_sequence":0,"limit":256}' |
                jq -c --arg id "$1" '.result.envelopes[].envelope | select(.session_id == $id) | .receipt')
        [ -n "$r" ] || fail "no receipt for $1"
        jq -e "$2" <<<"$r" >/dev/null || fail "receipt of $1 is not '$2': $(jq -c '{termination,exit_code,started_at_ms,usage}' <<<"$r")"
}

# nothing_left [ARGS...]: recovery.py leftovers with the snapshot.
nothing_left() {
        run --separate-stderr "$PY" "$REC" leftovers "$T/snap" "$T/mat" "$@"
        expect_status 0
}

# count_ok ID [ARGS...]: the count agent's whole output is contiguous, it
# ended when told to (recovery.py count), and its receipt says exit 0.
count_ok() {
        run --separate-stderr timeout --foreground -k 5 180 "$PY" "$REC" count "$RT" "$@"
        expect_status 0
        echo "# $1: $output" >&3
}

# ------------------------------------------------------------ the shim itself

# cp_prog FILE WORDS...: a small program that writes each WORD (and a
# newline) with write(2) to FILE; run with the shim preloaded.
CP_PROG='
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
for w in sys.argv[2:]:
    if w.startswith("pwrite:"):
        os.pwrite(fd, (w[7:] + "\n").encode(), os.fstat(fd).st_size)
    elif w.startswith("writev:"):
        os.writev(fd, [b"v", (w[7:] + "\n").encode()])
    elif w == "fork":
        pid = os.fork()
        if pid == 0:
            os.write(fd, b"child MATCH\n")
            os.execv("/usr/bin/env", ["env"])
        _, st = os.waitpid(pid, 0)
        os.write(fd, b"child status %d\n" % st)
    else:
        os.write(fd, (w + "\n").encode())
'

@test "crashpoint: SIGKILL before or after the matching write, after N skips, through pwrite and writev; unset: a pass-through" {
        [ -f "$CRASHPOINT" ] || fail "the crash-point shim $CRASHPOINT is missing (meson builds glove-crashpoint.so)"
        local f=$T/out
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=before \
                GLOVE_CRASH_REPORT="$T/report" "$PY" -c "$CP_PROG" "$f" one xMATCHx three
        expect_status 137
        [ "$(cat "$f")" = one ] || fail "before: the file holds $(cat "$f")"
        grep -Eq "^crashpoint: pid [0-9]+: before: match 1 on fd [0-9]+ \\($f\\)\$" "$T/report" ||
                fail "no report line: $(cat "$T/report")"
        rm -f "$f"
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=after \
                "$PY" -c "$CP_PROG" "$f" one xMATCHx three
        expect_status 137
        [ "$(cat "$f")" = "$(printf 'one\nxMATCHx')" ] || fail "after: the file holds $(cat "$f")"
        rm -f "$f"
        # The default is after; GLOVE_CRASH_SKIP lets the first N pass.
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_SKIP=2 \
                "$PY" -c "$CP_PROG" "$f" MATCH-1 MATCH-2 MATCH-3 four
        expect_status 137
        [ "$(cat "$f")" = "$(printf 'MATCH-1\nMATCH-2\nMATCH-3')" ] || fail "skip: the file holds $(cat "$f")"
        rm -f "$f"
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=before \
                "$PY" -c "$CP_PROG" "$f" one pwrite:MATCH three
        expect_status 137
        [ "$(cat "$f")" = one ] || fail "pwrite: the file holds $(cat "$f")"
        rm -f "$f"
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=before \
                "$PY" -c "$CP_PROG" "$f" one writev:MATCH three
        expect_status 137
        [ "$(cat "$f")" = one ] || fail "writev: the file holds $(cat "$f")"
        rm -f "$f"
        # synced: the bytes are written, and the process dies at their sync.
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=synced \
                "$PY" -c "$CP_PROG"$'\nos.fsync(fd)\nos.write(fd, b"after sync\\n")' "$f" one MATCH three
        expect_status 137
        [ "$(cat "$f")" = "$(printf 'one\nMATCH\nthree')" ] || fail "synced: the file holds $(cat "$f")"
        rm -f "$f"
        # A write to another file than GLOVE_CRASH_PATH names is not a match.
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_PATH=elsewhere.journal \
                "$PY" -c "$CP_PROG" "$f" one MATCH three
        expect_status 0
        [ "$(cat "$f")" = "$(printf 'one\nMATCH\nthree')" ] || fail "path: the file holds $(cat "$f")"
        rm -f "$f"
        # Unset: a pure pass-through.
        run env LD_PRELOAD="$CRASHPOINT" "$PY" -c "$CP_PROG" "$f" one MATCH three
        expect_status 0
        [ "$(cat "$f")" = "$(printf 'one\nMATCH\nthree')" ] || fail "unset: the file holds $(cat "$f")"
        # A typo in GLOVE_CRASH_WHEN disarms it rather than crash elsewhere.
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=befor "$PY" -c "$CP_PROG" "$T/o2" MATCH
        expect_status 0
}

@test "crashpoint: a forked child never crashes and an exec'd program does not load the shim; the process that loaded it does" {
        [ -f "$CRASHPOINT" ] || fail "the crash-point shim $CRASHPOINT is missing (meson builds glove-crashpoint.so)"
        local f=$T/out
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=before GLOVE_CRASH_PATH=out \
                GLOVE_CRASH_REPORT="$T/report" "$PY" -c "$CP_PROG" "$f" fork MATCH
        expect_status 137
        # The child wrote the matching bytes and lived (status 0); the
        # parent then died before its own match.
        [ "$(cat "$f")" = "$(printf 'child MATCH\nchild status 0')" ] || fail "the file holds $(cat "$f")"
        # The exec'd env saw neither the trigger nor the shim.
        [ "$(grep -c 'crashpoint' "$T/report")" -eq 1 ] || fail "report: $(cat "$T/report")"
        run env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=MATCH GLOVE_CRASH_WHEN=before \
                "$PY" -c 'import os; os.execv("/usr/bin/env", ["env"])'
        expect_status 0
        ! grep -Eq '^(GLOVE_CRASH_|LD_PRELOAD=.*glove-crashpoint)' <<<"$output" ||
                fail "the environment kept the trigger: $(grep -E '^(GLOVE_CRASH_|LD_PRELOAD=)' <<<"$output")"
}

# ------------------------------------------------------------ crash points

# start_interrupted_case MATCH: gloved dies before the store write that
# holds MATCH, while a session starts; restarted, it ends the start failed
# (start_failed, service.restarted), the agent never released, and nothing
# is left.
start_interrupted_case() {
        setup_rec
        gd_start "$1" before
        new_session c1
        start_session c1
        gd_crashed before
        gd_start
        reconciled c1 start_interrupted
        wait_state c1 failed
        receipts_ok --exact c1=failed:start_failed:service.restarted
        receipt_is c1 '.started_at_ms == null'
        nothing_left
}

@test "gloved recovery: SIGKILL during preparing (materializations made, starting not recorded): start_failed, nothing left" {
        start_interrupted_case '"to":"starting"'
}

@test "gloved recovery: SIGKILL before the durable running gate (keeper ready, running not recorded): aborted, start_failed, nothing left" {
        start_interrupted_case '"to":"running"'
}

@test "gloved recovery: SIGKILL after the durable running gate: the session is re-adopted, released, and its output has no gap" {
        setup_rec
        gd_start '"to":"running"' synced
        new_session c1
        start_session c1
        gd_crashed synced
        gd_start
        reconciled c1 'released|adopted'
        wait_state c1 running
        count_ok c1 --min 50 --resize
        wait_state c1 exited
        receipts_ok --exact c1=exited:exit:-
        receipt_is c1 '.exit_code == 0 and .started_at_ms != null'
        nothing_left
}

@test "gloved recovery: SIGKILL while running with an attached client: the agent never notices; created and ended sessions keep their state and one receipt" {
        setup_rec
        gd_start
        new_session c0
        new_session c2
        start_session c2
        count_ok c2 --min 3
        wait_state c2 exited
        new_session c1
        start_session c1
        wait_state c1 running
        "$PY" -u "$REC" watch "$RT" c1 "$T/watch" 2>"$T/watch.err" &
        track_pid $!
        wait_seq c1 20
        local k1
        k1=$("$PY" "$REC" keepers "$T/snap" "$T/mat")
        [ -n "$k1" ] && [ "$(wc -l <<<"$k1")" -eq 1 ] || fail "expected one keeper, found: $k1"
        gd_kill
        wait_for "$T/watch.end" '^EOF$' 20 || fail "the attached client did not see gloved go"
        run --separate-stderr "$PY" "$REC" seqcheck "$T/watch"
        expect_status 0
        local seen=${output#seqcheck ok last=}
        # The agent goes on while gloved is down.
        running "$k1" || fail "the keeper died with gloved"
        gd_start
        reconciled c1 adopted
        [ "$(grep -cF '"msg":"reconcile: ' "$GD_ERR")" -eq 1 ] || fail "the reconciler acted on more than c1: $(cat "$GD_ERR")"
        [ "$("$PY" "$REC" keepers "$T/snap" "$T/mat")" = "$k1" ] || fail "the keeper is not the same process"
        wait_state c1 running
        count_ok c1 --min $((seen + 50)) --resize
        wait_state c1 exited
        wait_state c0 created
        receipts_ok --exact c1=exited:exit:- c2=exited:exit:-
        receipt_is c1 '.exit_code == 0'
        nothing_left
}

@test "gloved recovery: SIGKILL during stop (stopping recorded): the stop completes after the restart, one receipt" {
        setup_rec
        gd_start '"to":"stopping"' synced
        new_session c1
        start_session c1
        wait_state c1 running
        wait_seq c1 5
        run --separate-stderr "$PY" "$LIB/sessctl.py" call "$RT" stop_session '{"session_id":"c1","grace_ms":20000}'
        gd_crashed synced
        gd_start
        reconciled c1 'adopted|ended_while_down'
        wait_state c1 exited
        receipts_ok --exact c1=exited:stopped:-
        receipt_is c1 '.termination.signal == 15'
        nothing_left
}

@test "gloved recovery: SIGKILL after the receipt append, before the exited transition: exited, no second receipt" {
        setup_rec
        gd_start '"to":"exited"' before
        new_session c1
        start_session c1
        wait_state c1 running
        wait_seq c1 5
        printf 'quit\n' | "$GLOVE" ctl --runtime-dir "$RT" write-stdin c1 || true
        gd_crashed before
        gd_start
        reconciled c1 receipt_present
        wait_state c1 exited
        receipts_ok --exact c1=exited:exit:-
        receipt_is c1 '.exit_code == 0'
        nothing_left
}

# ------------------------------------------------------------ identity

# mismatch_case KEEPER_START: a fixture store (journal_format.py, the
# store's own format) holds a session recorded running whose PID 1 is an
# unrelated process with a wrong start time, in a cgroup whose inode is not
# the recorded one, and whose keeper is another unrelated process with its
# real start time (KEEPER_START=real: the keeper looks alive) or a wrong one.
# Both processes record every signal they get; gloved must send none.
mismatch_case() {
        setup_rec
        "$PY" "$REC" sigrec "$T/sig.pid" "$T/ready.pid" &
        local a=$!
        track_pid "$a"
        "$PY" "$REC" sigrec "$T/sig.keeper" "$T/ready.keeper" &
        local b=$!
        track_pid "$b"
        local idx
        for ((idx = 0; idx < 200; idx++)); do
                [ -e "$T/ready.pid" ] && [ -e "$T/ready.keeper" ] && break
                sleep 0.05
        done
        [ -e "$T/ready.pid" ] && [ -e "$T/ready.keeper" ] || fail "the signal recorders did not start"
        local cg dir ino
        cg=$("$PY" "$REC" cgroup "recovery-fixture-$$-$BATS_TEST_NUMBER" "$a")
        if [ "$cg" = none ]; then
                dir=/sys/fs/cgroup/glove-fixture-absent ino=1
        else
                dir=${cg% *} ino=${cg#* }
                FIXTURE_CG=$dir
        fi
        local ast bst
        ast=$("$PY" "$REC" starttime "$a")
        bst=$("$PY" "$REC" starttime "$b")
        [ "$1" = real ] || bst=$((bst + 777))
        "$PY" "$MANAGED" pyplan "$T/cfg/policy.json" "$T/cfg/m1.plan" py-sleep roomy
        run --separate-stderr "$PY" "$REC" fixture "$T/cfg/sessions.journal" "$T/cfg/m1.plan" m1 \
                --pid "$a" --pid-start-time $((ast + 1000)) --keeper-pid "$b" --keeper-start-time "$bst" \
                --cgroup-dir "$dir" --cgroup-inode $((ino + 1000))
        expect_status 0
        if [ "${2:-}" = outcome ]; then
                # The recorded keeper wrote how the session ended before it
                # went (its pid now reused by b): keeper.h's status file.
                mkdir -m 700 -p "$T/mat" "$T/mat/keepers"; chmod 700 "$T/mat"
                local stem
                stem=k$(printf '%s' m1 | sha256sum | cut -c1-32)
                "$PY" -c '
import json, sys
pid, start, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
o = {"boot_id": open("/proc/sys/kernel/random/boot_id").read().strip(), "identity": None,
     "keeper": {"pid": pid, "start_time": start}, "session_id": "m1", "updated_at_ms": 0, "version": 1,
     "usage": {"cpu_time_ms": 7, "output_bytes": 3, "peak_memory_bytes": 4096, "wall_time_ms": 900},
     "outcome": {"kind": "exited", "value": 0, "limit": None, "released": True, "cpu_time_ms": 7,
                 "output_bytes": 3, "peak_memory_bytes": 4096, "wall_time_ms": 900}}
open(path, "w").write(json.dumps(o, sort_keys=True, separators=(",", ":")))' "$b" "$bst" "$T/mat/keepers/$stem.status"
                chmod 600 "$T/mat/keepers/$stem.status"
        fi
        gd_start
        if [ "${2:-}" = outcome ]; then
                wait_state m1 exited
        else
                wait_state m1 failed
                receipt_is m1 '.termination.kind == "lost"'
        fi
        # Neither process got a signal, and both are alive.
        for p in "$a" "$b"; do
                local log=$T/sig.pid
                [ "$p" = "$b" ] && log=$T/sig.keeper
                run --separate-stderr "$PY" "$REC" signals "$p" "$log"
                expect_status 0
        done
        if [ -n "${FIXTURE_CG:-}" ]; then
                [ -d "$FIXTURE_CG" ] || fail "the recorded cgroup's directory (another inode) was removed"
                grep -qx "$a" "$FIXTURE_CG/cgroup.procs" || fail "the unrelated process left its cgroup"
        fi
}

@test "gloved recovery: identity mismatch (PID 1 reused, the cgroup replaced; the keeper pid alive): no signal to anything, failed identity.mismatch" {
        require_recovery
        mismatch_case real
        reconciled m1 identity_mismatch
        receipts_ok --exact m1=failed:lost:identity.mismatch
        nothing_left
}

@test "gloved recovery: identity mismatch with the keeper's pid reused as well: no signal to anything, failed identity.mismatch" {
        require_recovery
        mismatch_case wrong
        reconciled m1 identity_mismatch
        receipts_ok --exact m1=failed:lost:identity.mismatch
        nothing_left
}

@test "gloved recovery: a keeper that ended while gloved was down, its pid reused since: the outcome it wrote counts, and nothing is signalled" {
        require_recovery
        mismatch_case wrong outcome
        reconciled m1 ended_while_down
        receipts_ok --exact m1=exited:exit:-
        receipt_is m1 '.exit_code == 0 and .usage.wall_time_ms == 900'
        nothing_left
}

# ------------------------------------------------------------ host restart

@test "gloved recovery: boot id changed (a host restart): failed host_restarted, the retained image re-attached read-only, nothing else left" {
        setup_rec
        command -v unshare >/dev/null || skip "unshare (util-linux) is needed to give gloved its own boot id"
        gd_start
        new_session c1
        start_session c1
        wait_state c1 running
        wait_seq c1 5
        gd_kill
        # What a restart takes away: every process, cgroup, mount and loop
        # device; the files stay.
        run --separate-stderr "$PY" "$REC" simulate-reboot "$T/snap" "$T/mat"
        expect_status 0
        local img=$T/mat/images/c1/keep.ext4
        [ -f "$img" ] || fail "no retained image at $img"
        cat /proc/sys/kernel/random/uuid >"$T/boot_id"
        ! cmp -s "$T/boot_id" /proc/sys/kernel/random/boot_id || fail "the new boot id is the old one"
        # The second gloved, in its own mount namespace where boot_id differs.
        gd_launch unshare -m --propagation private -- /bin/sh -c \
                'mount --bind "$1" /proc/sys/kernel/random/boot_id && shift && exec "$@"' sh "$T/boot_id" "$GLOVED"
        [ "$(cat "/proc/$GD_PID/root/proc/sys/kernel/random/boot_id")" = "$(cat "$T/boot_id")" ] ||
                fail "gloved does not see the new boot id"
        reconciled c1 host_restarted
        wait_state c1 failed
        receipts_ok --exact c1=failed:lost:host_restarted
        # The retained image is attached and mounted read-only, for inspection.
        run --separate-stderr "$PY" "$REC" frozen "$img" "$GD_PID"
        expect_status 0
        nothing_left --ns-pid "$GD_PID" --frozen-images
        # cleanup_session keeps it and takes the mount away.
        run --separate-stderr "$PY" "$LIB/sessctl.py" call "$RT" cleanup_session '{"session_id":"c1"}'
        expect_status 0
        [ "$(jq -c .result.kept <<<"$output")" = '["keep"]' ] || fail "cleanup: $output"
        [ -f "$img" ] || fail "cleanup removed the retained image"
        nothing_left --ns-pid "$GD_PID"
        if command -v debugfs >/dev/null; then
                run debugfs -R 'cat /count.txt' "$img"
                [[ "$output" == *counting* ]] || fail "the agent's file is not in the image: $output"
        fi
}

# ------------------------------------------------------------ keeper lost

@test "gloved recovery: the keeper killed while gloved is down: failed keeper.lost with its usage; cgroup, mounts and loop devices removed" {
        setup_rec
        gd_start
        new_session c1
        start_session c1
        wait_state c1 running
        # Long enough for the keeper's status file to hold usage.
        wait_seq c1 150
        local k
        k=$("$PY" "$REC" keepers "$T/snap" "$T/mat")
        [ -n "$k" ] && [ "$(wc -l <<<"$k")" -eq 1 ] || fail "expected one keeper, found: $k"
        gd_kill
        kill -KILL "$k"
        local idx
        for ((idx = 0; idx < 200; idx++)); do
                running "$k" || break
                sleep 0.05
        done
        ! running "$k" || fail "the keeper survived SIGKILL"
        gd_start
        reconciled c1 keeper_lost
        wait_state c1 failed
        receipts_ok --exact --usage c1 c1=failed:lost:keeper.lost
        nothing_left
}

@test "gloved recovery: a clean stop (SIGTERM) leaves a running session running; the next start adopts it, and attach, write_stdin, signal and the receipt work as before" {
        setup_rec
        gd_start
        new_session c1
        start_session c1
        wait_state c1 running
        wait_seq c1 10
        local k1
        k1=$("$PY" "$REC" keepers "$T/snap" "$T/mat")
        [ -n "$k1" ] && [ "$(wc -l <<<"$k1")" -eq 1 ] || fail "expected one keeper, found: $k1"
        kill -TERM "$GD_PID"
        wait_exit "$GD_PID" 20 || fail "gloved did not stop on SIGTERM"
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS on SIGTERM: $(cat "$GD_ERR")"
        running "$k1" || fail "the keeper ended with a clean stop of gloved"
        ! grep -q "receipt" "$GD_ERR" || fail "a clean stop wrote a receipt: $(cat "$GD_ERR")"
        gd_start
        reconciled c1 adopted
        wait_state c1 running
        # signal reaches the adopted agent (the count agent ignores
        # SIGWINCH-like noise: SIGCONT does nothing visible), and the count
        # still runs without a gap, then ends when told (write_stdin).
        run --separate-stderr "$PY" "$LIB/sessctl.py" call "$RT" signal '{"session_id":"c1","signal":"SIGCONT"}'
        expect_status 0
        [[ "$output" == *'"result":{}'* ]] || fail "signal on an adopted session: $output"
        count_ok c1 --min 20
        wait_state c1 exited
        receipts_ok --exact c1=exited:exit:-
        receipt_is c1 '.exit_code == 0 and .started_at_ms != null'
        nothing_left
}

@test "gloved recovery: another peer of the service user taking the keeper's one connection does not lose the session: gloved links again" {
        setup_rec
        gd_start
        new_session c1
        start_session c1
        wait_state c1 running
        wait_seq c1 5
        local sock
        sock=$(ls "$T"/mat/keepers/*.sock)
        [ -S "$sock" ] || fail "no keeper socket: $sock"
        # Connect as the keeper's own uid (the only one the 0700 directory
        # lets through): the keeper takes the new connection, gloved's ends.
        # Through the directory's descriptor, as gloved does: the path may
        # be longer than sun_path holds.
        "$PY" -c '
import os, socket, sys, time
d = os.open(os.path.dirname(sys.argv[1]), os.O_RDONLY | os.O_DIRECTORY)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect("/proc/self/fd/%d/%s" % (d, os.path.basename(sys.argv[1])))
time.sleep(0.5)
s.close()' "$sock"
        for ((i = 0; i < 100; i++)); do
                grep -q "keeper.relinked" "$GD_ERR" && break
                sleep 0.05
        done
        grep -qF '"msg":"session c1: keeper.relinked: ' "$GD_ERR" || fail "gloved did not link again: $(cat "$GD_ERR")"
        wait_state c1 running
        count_ok c1 --min 20
        wait_state c1 exited
        receipts_ok --exact c1=exited:exit:-
        nothing_left
}

@test "gloved recovery: a keeper slow to answer (SIGSTOP) when gloved restarts is adopted all the same; its state comes on the loop" {
        setup_rec
        gd_start
        new_session c1
        start_session c1
        wait_state c1 running
        wait_seq c1 5
        local k1
        k1=$("$PY" "$REC" keepers "$T/snap" "$T/mat")
        [ -n "$k1" ] && [ "$(wc -l <<<"$k1")" -eq 1 ] || fail "expected one keeper, found: $k1"
        kill -STOP "$k1"
        gd_kill
        gd_start
        kill -CONT "$k1"
        reconciled c1 adopted
        grep -q "reconcile: c1: reconcile.adopted: .*slow to answer" "$GD_ERR" || fail "not adopted as slow: $(cat "$GD_ERR")"
        wait_state c1 running
        count_ok c1 --min 20
        wait_state c1 exited
        receipts_ok --exact c1=exited:exit:-
        nothing_left
}

@test "gloved recovery: SIGTERM right after start_session, at whatever step the start is: a session that ran goes on and ends with its receipt, one that did not fails (service.stopped), nothing is left" {
        setup_rec
        local idx
        for ((idx = 0; idx < 6; idx++)); do
                gd_start
                new_session "t$idx" py-brief
                "$GLOVE" ctl --runtime-dir "$RT" start "t$idx" >/dev/null 2>&1 &
                sleep "0.0$((idx * 15 / 10 + 1))"
                kill -TERM "$GD_PID"
                wait_exit "$GD_PID" 20 || fail "gloved did not stop on SIGTERM"
        done
        gd_start
        local st
        for ((idx = 0; idx < 6; idx++)); do
                st=$("$PY" "$LIB/sessctl.py" call "$RT" session_status "{\"session_id\":\"t$idx\"}" | jq -r .result.state)
                # created: the SIGTERM came before the start request was read.
                [ "$st" = created ] && continue
                wait_state "t$idx" exited,failed
                receipt_is "t$idx" '(.state == "exited" and .exit_code == 0) or (.state == "failed" and .termination.code == "service.stopped")'
        done
        [ -z "$(ls -A "$T/mat/keepers" 2>/dev/null)" ] || fail "keeper files are left: $(ls "$T/mat/keepers")"
        nothing_left
}

# store_with_sessions DIR N: a stopped gloved left a store of N created
# sessions in DIR (sessions.journal); sets J and SARGS.
store_with_sessions() {
        mkdir -m 700 "$1"
        install_policy "$1/policy.json"
        plan_file "$T/plan.json"
        J=$1/sessions.journal
        SARGS=(--session-policy "$1/policy.json" --session-store "$J")
        start_gloved "$T/a" "${SARGS[@]}"
        local n
        for ((n = 1; n <= $2; n++)); do
                ctl create-session --session-id "s-$n" --idempotency-key "k-$n" --controller-digest "$CDIGEST" --plan "$T/plan.json"
                expect_status 0
        done
        stop_gloved
}

@test "gloved recovery: the newest seal slot zeroed and the journal cut at the end of the previous record (a lost answered record) refuses start: journal.record_lost" {
        store_with_sessions "$T/p" 3
        # The journal's records: header 64 bytes, then length, payload, tag.
        "$PY" - "$J" <<'PYEOF'
import struct, sys
path = sys.argv[1]
b = open(path, "rb").read()
off, ends = 64, []
while off < len(b):
    n = struct.unpack(">I", b[off:off + 4])[0]
    off += 4 + n + 32
    ends.append(off)
assert len(ends) == 3 and ends[-1] == len(b), ends
# The newest slot (3 records) is at (3 mod 2) * 512: zeroed. The journal is
# cut at the end of record 2: a consistent-looking store of two sessions.
with open(path + ".seal", "r+b") as fh:
    fh.seek(512)
    fh.write(b"\0" * 64)
with open(path, "r+b") as fh:
    fh.truncate(ends[1])
PYEOF
        before=$(cat "$J" "$J.seal" | sha256sum)
        gloved_fails --runtime-dir "$T/b/run" --state-dir "$T/b/state" "${SARGS[@]}"
        expect_status 1
        [[ "$stderr" == *'"level":"error","code":"journal.record_lost","msg":"journal.record_lost: '* ]] || fail "expected journal.record_lost: $stderr"
        [ "$(cat "$J" "$J.seal" | sha256sum)" = "$before" ] || fail "the evidence was rewritten"
}

@test "gloved recovery: the crash windows of the seal still recover: a record past a zeroed newest slot, and a seal write torn after it" {
        store_with_sessions "$T/p" 3
        cp "$J" "$T/j.good"
        cp "$J.seal" "$T/s.good"
        # The newest slot zeroed with its record still there: the crash
        # between the record's sync and its slot's (the record was never
        # answered): accepted, every session there.
        "$PY" -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(512); f.write(b"\0"*64)' "$J.seal"
        start_gloved "$T/c" "${SARGS[@]}"
        grep -q "3 sessions" "$GD_ERR" || fail "the store did not replay 3 sessions: $(cat "$GD_ERR")"
        grep -q "accepted one complete record" "$GD_ERR" || fail "the unsealed record was not reported"
        # The next append seals both records, and a restart is clean.
        ctl create-session --session-id s-4 --idempotency-key k-4 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        stop_gloved
        start_gloved "$T/d" "${SARGS[@]}"
        grep -q "4 sessions" "$GD_ERR" || fail "the restart after the re-seal lost a session: $(cat "$GD_ERR")"
        ! grep -q "accepted one complete record" "$GD_ERR" || fail "the record stayed unsealed"
        stop_gloved
        # A torn write of the newest slot (garbage, not zeros): the same.
        cp "$T/j.good" "$J"
        cp "$T/s.good" "$J.seal"
        "$PY" -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(520); f.write(b"\x5a"*16)' "$J.seal"
        start_gloved "$T/e" "${SARGS[@]}"
        grep -q "3 sessions" "$GD_ERR" || fail "a torn newest slot: $(cat "$GD_ERR")"
}

@test "gloved recovery: a session store created empty where one was expected is said on stderr (store.created_empty)" {
        store_with_sessions "$T/p" 1
        # A clean empty creation says nothing.
        grep -q "store.created_empty" "$T/a.gloved.err" && fail "a first start must not warn"
        # The journal gone, its seal left (it committed a record): refused.
        mv "$J" "$T/moved"
        gloved_fails --runtime-dir "$T/b/run" --state-dir "$T/b/state" "${SARGS[@]}"
        expect_status 1
        [[ "$stderr" == *"journal.missing"* ]] || fail "a seal without its journal: $stderr"
        # Both gone: a new empty store, as on a first start.
        rm -f "$J.seal"
        start_gloved "$T/a" "${SARGS[@]}"
        grep -q "0 sessions" "$GD_ERR" || fail "a new store: $(cat "$GD_ERR")"
        stop_gloved
        # A seal that committed nothing, without its journal.
        rm -f "$J"
        start_gloved "$T/a" "${SARGS[@]}"
        grep -q "store.created_empty: $J.seal was there without its journal" "$GD_ERR" ||
                fail "a lone empty seal was replaced silently: $(cat "$GD_ERR")"
        stop_gloved
        # The torn evidence of an earlier store next to a missing one.
        rm -f "$J" "$J.seal"
        printf 'x' >"$J.torn"
        chmod 600 "$J.torn"
        start_gloved "$T/a" "${SARGS[@]}"
        grep -q "store.created_empty: created an empty session store $J next to $J.torn" "$GD_ERR" ||
                fail "no warning next to .torn: $(cat "$GD_ERR")"
}

@test "gloved recovery: a corrupt session-store checkpoint, or one whose MAC does not verify, refuses start and deletes nothing" {
        store_with_sessions "$T/p" 1
        # Not a checkpoint at all.
        head -c 300 /dev/urandom >"$J.ckpt"
        chmod 600 "$J.ckpt"
        before=$(cat "$J" "$J.seal" "$J.ckpt" | sha256sum)
        gloved_fails --runtime-dir "$T/b/run" --state-dir "$T/b/state" "${SARGS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"checkpoint.corrupt","msg":"checkpoint.corrupt: '*"nothing was deleted"* ]] || fail "expected checkpoint.corrupt: $stderr"
        [ "$(cat "$J" "$J.seal" "$J.ckpt" | sha256sum)" = "$before" ] || fail "the evidence was rewritten"
        # Well formed, with a MAC that does not verify.
        "$PY" - "$J.ckpt" <<'PYEOF'
import struct, sys
h = b"GLVCKPT1" + b"GLVSESS1" + struct.pack(">II", 1, 0) + struct.pack(">Q", 1) + b"\1" * 64
h += struct.pack(">Q", 1) + b"\2" * 32 + struct.pack(">QQ", 1, 1) + b"\2" * 32 + struct.pack(">QQ", 0, 0)
assert len(h) == 200
open(sys.argv[1], "wb").write(h + b"\3" * 32)
PYEOF
        gloved_fails --runtime-dir "$T/b/run" --state-dir "$T/b/state" "${SARGS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"checkpoint.mac_mismatch","msg":"checkpoint.mac_mismatch: '* ]] || fail "expected checkpoint.mac_mismatch: $stderr"
        [ -s "$J" ] && [ -s "$J.ckpt" ] || fail "a file was deleted"
}

# gd_start_at MATCH WHEN PATH: gloved armed to SIGKILL itself around its
# write of MATCH to a file whose name holds PATH (a compaction's checkpoint or
# rewritten journal). Returns once it listens, or once it died: a compaction
# that was due at start-up may reach the point before it listens.
gd_start_at() {
        rm -f "$T/crash.report"
        RT=$T/g/run ST=$T/g/state
        GD_N=$((GD_N + 1))
        GD_ERR=$T/g.gloved.err.$GD_N
        env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH="$1" GLOVE_CRASH_WHEN="$2" GLOVE_CRASH_PATH="$3" \
                GLOVE_CRASH_REPORT="$T/crash.report" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
                "$GLOVED" --runtime-dir "$RT" --state-dir "$ST" "${GD_ARGS[@]}" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        echo "$GD_PID" >>"$T/snap.pids"
        local idx
        for ((idx = 0; idx < 400; idx++)); do
                running "$GD_PID" || return 0
                grep -qF '"msg":"listening on ' "$GD_ERR" && [ -S "$RT/gloved.sock" ] && return 0
                sleep 0.025
        done
        fail "gloved did not listen within 10 s: $(cat "$GD_ERR")"
}

@test "gloved recovery: compaction killed before its checkpoint, after it, after the new journal and in the receipt journal: every live session and receipt survives and the chain verifies" {
        setup_rec
        GD_ARGS+=(--compact-records 8)
        # The churned sessions only have to live their whole life (records
        # until a compaction): py-quick exits at once (py-brief sleeps 1 s).
        "$PY" "$MANAGED" pyplan "$T/cfg/policy.json" "$T/cfg/quick.plan" py-quick roomy
        gd_start
        new_session live-1 # created, never started: live through every compaction
        gd_kill
        local n=0 round=0 point match when path
        for point in "GLVCKPT1 before sessions.journal.ckpt.new" "GLVCKPT1 synced sessions.journal.ckpt.new" \
                "GLVSESS1 synced sessions.journal.compact" "GLVCKPT1 synced receipts.journal.ckpt.new"; do
                read -r match when path <<<"$point"
                round=$((round + 1))
                gd_start_at "$match" "$when" "$path"
                if running "$GD_PID"; then
                        # Each round its own names: the session a crash
                        # interrupted stays as the crash left it.
                        run --separate-stderr "$PY" "$REC" churn "$RT" "$T/cfg/quick.plan" "c$round" $((n + 1)) $((n + 40))
                        [ "$status" -eq 0 ] || fail "churn: $stderr"
                        n=$output
                fi
                wait_exit "$GD_PID" 60 || fail "gloved never reached the crash point $point (after $n sessions)"
                [ "$WSTATUS" -eq 137 ] || fail "gloved exited $WSTATUS at $point: $(cat "$GD_ERR")"
                grep -q "^crashpoint: pid $GD_PID: $when: match 1 on fd [0-9]* (.*$path)\$" "$T/crash.report" ||
                        fail "the crash was not at $point: $(cat "$T/crash.report" 2>&1)"
                echo "# killed at $point after $n sessions" >&3
        done
        # Unarmed: the restart finds the old or the new state, never a mix.
        gd_start
        [ -s "$T/cfg/sessions.journal.ckpt" ] || fail "no session checkpoint was installed"
        [ -s "$ST/receipts.journal.ckpt" ] || fail "no receipt checkpoint was installed"
        run --separate-stderr "$PY" "$REC" churn "$RT" "$T/cfg/quick.plan" d $((n + 1)) $((n + 4))
        [ "$output" -eq $((n + 4)) ] || fail "sessions after the crashes: $output: $stderr; $(cat "$GD_ERR")"
        run --separate-stderr "$PY" "$LIB/sessctl.py" call "$RT" session_status '{"session_id":"live-1"}'
        [ "$(jq -r .result.state <<<"$output")" = created ] || fail "the live session was lost: $output"
        # The first sessions ended, were cleaned up and acknowledged: compacted away.
        run --separate-stderr "$PY" "$LIB/sessctl.py" call "$RT" session_status '{"session_id":"c1-1"}'
        [ "$(jq -r .error.code <<<"$output")" = session.not_found ] || fail "c1-1 is still live: $output"
        # A restart replays the checkpoints and verifies both chains; the
        # acknowledged receipts left the journal, the sequence went on.
        gd_kill
        gd_start
        grep -q '"code":"store.compaction_failed"\|"code":"receipts.compaction_failed"' "$GD_ERR" &&
                fail "a compaction failed: $(cat "$GD_ERR")"
        run --separate-stderr "$PY" "$LIB/sessctl.py" call "$RT" receipts_page '{"after_sequence":0,"limit":1}'
        [ "$(jq -r .error.code <<<"$output")" = receipts.compacted ] || fail "no receipt was compacted away: $output"
        base=$(jq -r .error.message <<<"$output" | sed -n 's/.*page from after_sequence \([0-9]*\).*/\1/p')
        run --separate-stderr "$PY" "$LIB/sessctl.py" call "$RT" receipts_page "{\"after_sequence\":$base,\"limit\":256}"
        [ "$(jq -r '.result.head.sequence' <<<"$output")" -ge $((n + 4)) ] || fail "receipts: $output"
        # The compacted journal itself verifies independently, its chain
        # continued from the checkpoint beside it.
        local anchor
        anchor=$(jq -r .result.anchor <<<"$output")
        run --separate-stderr "$PY" "$AGENTS/verify_receipts.py" --key "$ST/receipt.key" --anchor "$anchor" \
                --journal "$ST/receipts.journal"
        [ "$status" -eq 0 ] && [[ "$output" == "ok: journal (compacted: "* ]] ||
                fail "the compacted journal does not verify: $output $stderr"
        nothing_left
}

# Helpers for tests/integration/gloved_*.bats (load after helpers):
#   load helpers; load "$GLOVE_IT_LIB/gloved"
#
# gloved is the binary next to $GLOVE. Each test gets its own runtime and
# state directories under $BATS_TEST_TMPDIR; every gloved started here is
# killed in teardown if it is still running.

GLOVED="$(dirname "$GLOVE")/gloved"
CTLFRAME="$LIB/ctlframe.py"
# A real session policy (a copy of the supervisor's accepted fixture) and a
# plan template it accepts; plan_file re-stamps the expiry.
GLOVED_POLICY_SRC="$LIB/gloved/policy.json"
GLOVED_PLAN_SRC="$LIB/gloved/plan.json"

require_gloved() {
        [ -x "$GLOVED" ] || fail "gloved is not next to glove ($GLOVED); build it with make, and let run.sh copy it"
}

# install_policy PATH: a protected (0600) copy of the policy.
install_policy() {
        install -m 600 "$GLOVED_POLICY_SRC" "$1"
}

# plan_file PATH [OFFSET_MS]: a canonical plan that expires OFFSET_MS (60000)
# after now, so it is inside the policy's 120 s window.
plan_file() {
        "$PY" - "$GLOVED_PLAN_SRC" "$1" "${2:-60000}" <<'PYEOF'
import json, sys, time
src, dst, off = sys.argv[1], sys.argv[2], int(sys.argv[3])
plan = json.load(open(src))
plan["expires_at_ms"] = int(time.time() * 1000) + off
open(dst, "w").write(json.dumps(plan, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
PYEOF
}

# wait_gloved RUNTIME_DIR PID: until the socket is there (the secret is
# written before it), or gloved exits.
wait_gloved() {
        local rt=$1 pid=$2 i
        for ((i = 0; i < 400; i++)); do
                [ -S "$rt/gloved.sock" ] && [ -f "$rt/bootstrap-secret" ] && return 0
                running "$pid" || { echo "gloved exited during start-up:" >&2; cat "$GD_ERR" >&2; return 1; }
                sleep 0.025
        done
        echo "gloved did not create $rt/gloved.sock in 10 s" >&2
        return 1
}

# start_gloved [--as-nobody] BASE [GLOVED-ARGS...]: starts gloved with
# --runtime-dir BASE/run --state-dir BASE/state and waits until it accepts.
# Sets GD_PID, RT (runtime dir), ST (state dir), GD_ERR (its stderr).
start_gloved() {
        local pre=()
        if [ "$1" = --as-nobody ]; then
                pre=(setpriv --reuid=65534 --regid=65534 --clear-groups)
                shift
        fi
        local base=$1
        shift
        RT=$base/run ST=$base/state GD_ERR=$base.gloved.err
        "${pre[@]}" "$GLOVED" --runtime-dir "$RT" --state-dir "$ST" "$@" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RT" "$GD_PID"
}

# stop_gloved: SIGTERM, then wait; sets WSTATUS.
stop_gloved() {
        kill -TERM "$GD_PID"
        wait_exit "$GD_PID" 10
}

# gloved_teardown: stops a gloved still running with SIGTERM (so a clean
# exit is exercised and no "Killed" noise appears), then the usual cleanup,
# and checks gloved's stderr for sanitizer reports.
gloved_teardown() {
        if [ -n "${GD_PID:-}" ] && running "$GD_PID"; then
                kill -TERM "$GD_PID" 2>/dev/null || true
                wait_exit "$GD_PID" 5 || true
        fi
        kill_tracked
        if [ -n "${GD_ERR:-}" ] && [ -f "$GD_ERR" ]; then
                no_sanitizer_reports "$GD_ERR"
        fi
        return 0
}

# expect_refused CODE: glove ctl exited 1 with exactly one stderr line
# "glove: CODE: message" (protocol codes such as method_not_found have no dot).
expect_refused() {
        expect_status 1 || return 1
        local n
        n=$(printf '%s\n' "${stderr-}" | grep -c .)
        [ "$n" -eq 1 ] || fail "expected exactly one stderr line, got $n"
        [[ "$stderr" == "glove: $1: "?* ]] || fail "expected 'glove: $1: <message>' on stderr"
}

# gloved_fails ARGS...: gloved must refuse to start; captured by bats run.
gloved_fails() {
        run --separate-stderr timeout --foreground -k 5 20 "$GLOVED" "$@"
}

# ctl ARGS...: `glove ctl --runtime-dir $RT ARGS...`, captured by bats run.
ctl() {
        run --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" ctl --runtime-dir "$RT" "$@"
}

# frames ARGS...: ctlframe.py $RT ARGS..., captured by bats run.
frames() {
        run --separate-stderr timeout --foreground -k 5 60 "$PY" "$CTLFRAME" "$RT" "$@"
}

# no_sanitizer_reports FILE: gloved's stderr holds no ASan/UBSan report.
no_sanitizer_reports() {
        if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$1"; then
                cat "$1" >&2
                fail "gloved reported a sanitizer error"
        fi
}

CDIGEST=1111111111111111111111111111111111111111111111111111111111111111

# Shared helpers for tests/integration/*.bats (load with `load helpers`).
#
# Run the suite through tests/integration/run.sh, which exports:
#   GLOVE         the glove binary under test
#   GLOVE_MODE    root | unprivileged
#   GLOVE_AGENTS  the probe agents (tests/agents), to be granted with --read
#   GLOVE_IT_LIB  host-side helper programs (tests/integration/lib)
bats_require_minimum_version 1.5.0

: "${GLOVE:?run the suite through tests/integration/run.sh (GLOVE unset)}"
: "${GLOVE_MODE:?run the suite through tests/integration/run.sh (GLOVE_MODE unset)}"
: "${GLOVE_AGENTS:?run the suite through tests/integration/run.sh (GLOVE_AGENTS unset)}"
: "${GLOVE_IT_LIB:?run the suite through tests/integration/run.sh (GLOVE_IT_LIB unset)}"

PY=/usr/bin/python3
NODE=/usr/bin/node
AGENTS=$GLOVE_AGENTS
LIB=$GLOVE_IT_LIB
# Upper bound for one glove run; a hang fails the test instead of the suite.
GLOVE_TIMEOUT=${GLOVE_TIMEOUT:-30}
# `glove exec` options and program that run the probe agent:
#   gx --write "$d" "${PROBE[@]}" create "$d/x"
PROBE=(--read "$AGENTS" -- "$PY" "$AGENTS/probe.py")

# ------------------------------------------------------------ identity

is_root() { [ "$(id -u)" -eq 0 ]; }
# The uid/gid the agent has inside: the invoker's, or 1000 for root.
inside_uid() { if is_root; then echo 1000; else id -u; fi; }
inside_gid() { if [ "$(id -g)" -eq 0 ]; then echo 1000; else id -g; fi; }

# ------------------------------------------------------------ running glove

# gx [-N] ARGS...: `glove exec ARGS...` under a timeout, captured by bats
# `run`: $status, $output (stdout only), $stderr, $lines. A leading -N (e.g.
# -127) is handed to `run` as the expected status: bats warns about a bare 127.
gx() {
        local expect=()
        if [[ "${1:-}" =~ ^-[0-9]+$ ]]; then expect=("$1"); shift; fi
        run "${expect[@]}" --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec "$@"
}

# g [-N] ARGS...: any glove command line (e.g. --version), captured the same way.
g() {
        local expect=()
        if [[ "${1:-}" =~ ^-[0-9]+$ ]]; then expect=("$1"); shift; fi
        run "${expect[@]}" --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" "$@"
}

# ------------------------------------------------------------ assertions

show_run() {
        {
                echo "--- exit status: $status"
                echo "--- stdout:"
                printf '%s\n' "$output"
                echo "--- stderr:"
                printf '%s\n' "${stderr-}"
        } >&2
}

fail() {
        show_run
        printf 'FAIL: %s\n' "$*" >&2
        return 1
}

expect_status() { # N
        [ "$status" -eq "$1" ] || fail "expected exit status $1, got $status"
}

expect_output() { # EXACT-STDOUT
        [ "$output" = "$1" ] || fail "expected stdout to be exactly: $1"
}

expect_line() { # EXACT-LINE: stdout has this line
        local l
        for l in "${lines[@]}"; do [ "$l" = "$1" ] && return 0; done
        fail "expected a stdout line: $1"
}

expect_no_line() { # EXACT-LINE
        local l
        for l in "${lines[@]}"; do [ "$l" = "$1" ] && fail "unexpected stdout line: $1"; done
        return 0
}

expect_no_text() { # FIXED-STRING: appears in neither stdout nor stderr
        if [[ "$output" == *"$1"* || "${stderr-}" == *"$1"* ]]; then
                fail "output must not contain: $1"
        fi
}

# expect_glove_error CODE: glove exited CODE and said why on stderr in exactly
# one line `glove: <stable.code>: <message>`. Warning lines
# (`glove: warning: ...`, e.g. limits.degraded for an unprivileged user
# without a delegated cgroup) are not errors and are set aside first.
expect_glove_error() {
        expect_status "$1" || return 1
        stderr=$(printf '%s\n' "${stderr-}" | grep -v '^glove: warning: ' || true)
        local n
        n=$(printf '%s\n' "${stderr-}" | grep -c .)
        [ "$n" -eq 1 ] || fail "expected exactly one stderr line, got $n"
        [[ "$stderr" =~ ^glove:\ [a-z0-9_-]+(\.[a-z0-9_-]+)+:\ [^[:space:]].*$ ]] ||
                fail "stderr is not 'glove: <stable.code>: <message>'"
}

# glove_error_code: the stable code of the last glove error line.
glove_error_code() {
        [[ "$stderr" =~ ^glove:\ ([a-z0-9_.-]+):\  ]] && echo "${BASH_REMATCH[1]}"
}

# ------------------------------------------------------------ background work

# spawn_glove OUT ERR ARGS...: start `glove exec ARGS...` in the background
# with default signal dispositions (see lib/spawn.py), stdout/stderr to files;
# sets GPID. The process is killed in teardown if still alive.
spawn_glove() {
        local out=$1 err=$2
        shift 2
        "$PY" "$LIB/spawn.py" "$GLOVE" exec "$@" >"$out" 2>"$err" </dev/null 3>&- &
        GPID=$!
        track_pid "$GPID"
}

# track_pid PID: remember a process this test started, to kill in teardown.
track_pid() { echo "$1" >>"$BATS_TEST_TMPDIR/.pids"; }

kill_tracked() {
        local f=$BATS_TEST_TMPDIR/.pids p
        [ -f "$f" ] || return 0
        while read -r p; do
                kill -KILL "$p" 2>/dev/null || true
        done <"$f"
        rm -f "$f"
}

teardown() { kill_tracked; }

# wait_for FILE REGEX [SECONDS]: poll until FILE has a line matching REGEX.
wait_for() {
        local file=$1 re=$2 secs=${3:-10} i
        for ((i = 0; i < secs * 20; i++)); do
                grep -qE -- "$re" "$file" 2>/dev/null && return 0
                sleep 0.05
        done
        echo "timed out after ${secs}s waiting for /$re/ in $file; it holds:" >&2
        cat "$file" >&2 2>/dev/null || true
        return 1
}

# running PID: the process exists and is not a zombie.
running() {
        local st
        st=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
        [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# wait_exit PID [SECONDS]: wait for a background child; sets WSTATUS.
wait_exit() {
        local pid=$1 secs=${2:-10} i
        for ((i = 0; i < secs * 20; i++)); do
                running "$pid" || break
                sleep 0.05
        done
        if running "$pid"; then
                echo "process $pid still running after ${secs}s" >&2
                return 1
        fi
        WSTATUS=0
        wait "$pid" || WSTATUS=$?
}

# host_pids MARKER: host PIDs whose command line contains MARKER.
host_pids() { "$PY" "$LIB/procs.py" "$1"; }

# mkd PATH...: mkdir -p, returning nothing.
mkd() { mkdir -p "$@"; }

#!/usr/bin/env bash
# The test harness's own test (make check, stage "harness"): the verdicts
# of tests/integration/matrix.sh on a small suite of its own, made here, in
# which every way a file can go wrong happens once.
#
#   tests/harness/selftest.sh BUILD_DIR
#
#   pass.bats     two tests pass, one skips with a reason       -> ok
#   fail.bats     one of two tests fails                        -> failed
#   hang.bats     sleeps past the 10 s timeout                   -> failed, "timed out"
#   cut.bats      its bats is killed after the first of 3 tests -> failed, "the plan says 3"
#   noplan.bats   its TAP log is emptied, then bats dies         -> failed, "no TAP plan"
#   serial.bats   marked serial; runs after the parallel files  -> ok
# and a .bats file missing from the matrix stops the run (exit 2) before
# anything runs. Prints TAP (one test per assertion) and exits 1 when the
# runner's verdict on any of them is wrong.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$1

t=$(mktemp -d /tmp/glove-harness.XXXXXX)
trap 'rm -rf "$t"' EXIT
suite=$t/suite
mkdir "$suite"
cat >"$suite/pass.bats" <<'EOF'
@test "passes" { true; }
@test "passes too" { [ 1 -eq 1 ]; }
@test "skips" { skip "the self-test skips this on purpose"; }
EOF
cat >"$suite/fail.bats" <<'EOF'
@test "passes" { true; }
@test "fails" { false; }
EOF
cat >"$suite/hang.bats" <<'EOF'
@test "hangs" { sleep 300; }
EOF
# kill_bats: SIGKILL to every bats process above the calling test (not the
# harness that started it).
kill_bats='kill_bats() { # [empty]: first empty the TAP log (the top bats stdout)
        local p=$$ pids="" top=""
        while [ "$p" -gt 1 ]; do
                case "$(ps -o args= -p "$p")" in *bats-core*|*/bin/bats*) pids="$pids $p" top=$p ;; esac
                p=$(ps -o ppid= -p "$p" | tr -d " ")
        done
        if [ "${1:-}" = empty ]; then : >"/proc/$top/fd/1"; fi
        kill -KILL $pids
        sleep 5
}'
cat >"$suite/cut.bats" <<EOF
$kill_bats
@test "first" { true; }
@test "kills its own bats" { kill_bats; }
@test "never reported" { true; }
EOF
# The TAP log lost (as when a temporary log was deleted): the test empties
# the file bats writes its TAP to, then bats dies.
cat >"$suite/noplan.bats" <<EOF
$kill_bats
@test "empties its TAP log" { kill_bats empty; }
EOF
cat >"$suite/serial.bats" <<'EOF'
@test "runs alone" { [ -f "$BATS_TEST_DIRNAME/serial.bats" ]; }
EOF
cat >"$suite/matrix" <<'EOF'
# FILE   CELLS  SCHEDULE  SECONDS  WHY
pass.bats    root  parallel  1  the self-test
fail.bats    root  parallel  1  the self-test
hang.bats    root  parallel  9  the self-test
cut.bats     root  parallel  1  the self-test
noplan.bats  root  parallel  1  the self-test
serial.bats  root  serial    1  the self-test
EOF

n=0 bad=0
check() { # description, command...
        n=$((n + 1))
        if "${@:2}"; then echo "ok $n $1"; else echo "not ok $n $1"; bad=1; fi
}
verdict() { # file: "verdict<TAB>note" of results.tsv
        awk -F'\t' -v f="$1" '$2 == f { print $7 "\t" $8 }' "$t/logs/results.tsv"
}
is() { # file verdict note-substring
        local v
        v=$(verdict "$1")
        [ "${v%%$'\t'*}" = "$2" ] && [[ "${v#*$'\t'}" == *"$3"* ]] ||
                { echo "# $1: got '$v', expected $2 with a note containing '$3'" >&2; return 1; }
}

echo "1..9"
rc=0
GLOVE_IT_SUITE=$suite "$repo/tests/integration/matrix.sh" --timeout 10 --logs "$t/logs" "$build" "$build" \
        >"$t/out" 2>&1 || rc=$?
check "the runner exits 1 when files failed" [ $rc -eq 1 ]
check "a passing file with a skip is ok, counted 2 passed and 1 skipped" \
        sh -c '[ "$(awk -F"\t" "\$2 == \"pass.bats\" { print \$4, \$5, \$6, \$7 }" "$0")" = "2 0 1 ok" ]' "$t/logs/results.tsv"
check "a failing test fails its file" is fail.bats failed "1 failed"
check "a hanging file is killed at its timeout and named" is hang.bats failed "timed out after 10 s"
check "a file cut short fails on its plan" is cut.bats failed "the plan says 3 tests"
check "a file without a plan fails" is noplan.bats failed "no TAP plan"
check "a serial file runs, after the parallel ones" \
        sh -c 'is_ok=$(awk -F"\t" "\$2 == \"serial.bats\" { print \$7 }" "$0"); [ "$is_ok" = ok ] &&
                [ "$(tail -n1 "$1" | cut -f2)" = serial.bats ]' "$t/logs/results.tsv" "$t/logs/jobs.serial.sorted"
check "the failed files are printed with their TAP" grep -q '^==== root fail.bats: 1 failed' "$t/out"

echo '@test "x" { true; }' >"$suite/unlisted.bats"
rc=0
GLOVE_IT_SUITE=$suite "$repo/tests/integration/matrix.sh" --logs "$t/logs2" "$build" "$build" >"$t/out2" 2>&1 || rc=$?
check "a .bats file missing from the matrix stops the run" \
        sh -c '[ "$0" -eq 2 ] && grep -q "unlisted.bats is not in" "$1" && [ ! -e "$2/results.tsv" ]' "$rc" "$t/out2" "$t/logs2"
if [ $bad = 1 ]; then
        echo "# runner output:" >&2
        sed 's/^/#   /' "$t/out" >&2
fi
exit $bad

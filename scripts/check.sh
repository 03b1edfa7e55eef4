#!/usr/bin/env bash
# make check / make check-full.
#
#   scripts/check.sh [--full] BUILD_DIR ASAN_BUILD_DIR
#
# Stages, in order, each timed:
#   deps            scripts/deps.sh (Debian build and test packages, npm test packages)
#   build, build-asan   the normal and the ASan/UBSan build (make build, make asan)
#   layering        scripts/layering.py: includes point down DESIGN.md's layers
#   harness         tests/harness/selftest.sh: the integration runner's verdicts
#                   on a failing, hanging, cut-short and plan-less file
#   unit, unit-asan meson's unit suite on each build, every core
#   integration     tests/integration/matrix.sh: each .bats file in the cells
#                   tests/integration/matrix names (--full: all four cells),
#                   in parallel where safe
#   package         man pages against --help, completions, make install
#   demo            make demo (scripts/demo.sh) on the normal build
#   conformance     the official MCP conformance suite, directly and through glove run
#   agents          the five real agent CLIs (tests/agents/run.sh)
#   fuzz            each libFuzzer target for 3 s (scripts/fuzz.sh short)
#
# Every stage writes its whole output to a log in BUILD_DIR/check-logs/
# (made anew each run); a failing stage's log is printed. A stage fails when
# its command fails, when its TAP plan or meson's test log is missing, or
# when the plan does not match what ran. At the end: the table of stages,
# the ten slowest test files, and one closing line
#   N passed, N failed, N skipped[; failed: WHAT...]
# Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
# The integration matrix makes its cells as root and runs them as root and
# as uid 65534 (tests/integration/cell.sh): say so before building anything.
if [ "$(id -u)" -ne 0 ] && [ -z "${GLOVE_CHECK_UNPRIVILEGED:-}" ]; then
        echo "make check: run it as root (sudo make check): the integration matrix runs every file as root and as uid 65534," >&2
        echo "  in cells it makes under /srv/glove-it; unprivileged, make and make demo work" >&2
        exit 2
fi
full=0
if [ "${1:-}" = --full ]; then full=1; shift; fi
build=${1:-build}
asan=${2:-build-asan}
mkdir -p "$build"
logs=$(cd "$build" && pwd)/check-logs
rm -rf "$logs"
mkdir -p "$logs"
jobs=$(nproc 2>/dev/null || echo 2)

passed=0 failed=0 skipped=0
failures=()
table=()
check_start=$(date +%s)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# record NAME SECONDS PASSED FAILED SKIPPED [WHY]
record() {
        local name=$1 secs=$2 p=$3 f=$4 s=$5 why=${6:-}
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        local verdict=ok
        if [ "$f" -gt 0 ]; then
                verdict=FAILED
                failures+=("$name${why:+ ($why)}")
        fi
        table+=("$(printf '%-12s %7s %7d %7d %7d  %s' "$name" "$(fmt_time "$secs")" "$p" "$f" "$s" "$verdict")")
        echo "-- $name: $(fmt_time "$secs"), $p passed, $f failed, $s skipped${why:+ ($why)}"
}

# tap_counts LOG: "ran plan ok nok skip" of a TAP stream (plan "" if none).
tap_counts() {
        local log=$1 plan ran nok skip
        plan=$(grep -m1 -E '^1\.\.[0-9]+$' "$log" | cut -d. -f3)
        ran=$(grep -cE '^(not )?ok [0-9]+' "$log")
        nok=$(grep -cE '^not ok [0-9]+' "$log")
        skip=$(grep -cE '^ok [0-9]+ .*# [Ss][Kk][Ii][Pp]' "$log")
        echo "$ran ${plan:-none} $((ran - nok - skip)) $nok $skip"
}

# stage_single NAME CMD...: passes when CMD exits 0.
stage_single() {
        local name=$1 t rc=0
        shift
        echo "== $name"
        t=$(now)
        "$@" >"$logs/$name.log" 2>&1 || rc=$?
        local secs
        secs=$(elapsed "$t")
        if [ $rc -eq 0 ]; then
                record "$name" "$secs" 1 0 0
        else
                tail -n 60 "$logs/$name.log"
                record "$name" "$secs" 0 1 0 "exit $rc; log $logs/$name.log"
        fi
        return $rc
}

# stage_tap NAME CMD...: CMD writes TAP on stdout; the plan must match.
stage_tap() {
        local name=$1 t rc=0
        shift
        echo "== $name"
        t=$(now)
        "$@" >"$logs/$name.log" 2>"$logs/$name.err" || rc=$?
        local secs ran plan ok nok skip why=""
        secs=$(elapsed "$t")
        if [ ! -s "$logs/$name.log" ]; then
                why="no output (exit $rc)"; ran=0 plan=none ok=0 nok=1 skip=0
        else
                read -r ran plan ok nok skip < <(tap_counts "$logs/$name.log")
                if [ "$plan" = none ]; then
                        why="no TAP plan (exit $rc)"; nok=$((nok + 1))
                elif [ "$plan" -ne "$ran" ]; then
                        why="the plan says $plan tests, $ran reported"; nok=$((nok + 1))
                elif [ $rc -ne 0 ] && [ "$nok" -eq 0 ]; then
                        why="runner exit $rc with every test ok"; nok=1
                elif [ "$nok" -gt 0 ]; then
                        why="$nok failed"
                fi
        fi
        grep -E '# [Ss][Kk][Ii][Pp]' "$logs/$name.log" | sed 's/^/   /' || true
        if [ "$nok" -gt 0 ]; then
                grep -vE '^ok [0-9]+' "$logs/$name.log" | tail -n 120
                tail -n 30 "$logs/$name.err"
        fi
        record "$name" "$secs" "$ok" "$nok" "$skip" "$why"
}

# stage_meson NAME BUILD_DIR: meson's unit suite, counted from its test log.
stage_meson() {
        local name=$1 dir=$2 t rc=0
        echo "== $name ($dir)"
        rm -f "$dir/meson-logs/testlog.json"
        t=$(now)
        meson test -C "$dir" --suite unit --print-errorlogs --num-processes "$jobs" >"$logs/$name.log" 2>&1 || rc=$?
        local secs
        secs=$(elapsed "$t")
        cp "$dir/meson-logs/testlog.json" "$logs/$name.testlog.json" 2>/dev/null || true
        if [ ! -s "$logs/$name.testlog.json" ]; then
                tail -n 60 "$logs/$name.log"
                record "$name" "$secs" 0 1 0 "meson wrote no test log (exit $rc)"
                return
        fi
        local p f s
        read -r p f s < <(python3 -c '
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["result"] == "OK": p += 1
    elif r["result"] == "SKIP": s += 1
    else: f += 1
print(p, f, s)' "$logs/$name.testlog.json")
        grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|ERROR|TIMEOUT|SKIP)' "$logs/$name.log" || true
        if [ "$f" -gt 0 ]; then tail -n 120 "$logs/$name.log"; fi
        if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
                tail -n 60 "$logs/$name.log"
                record "$name" "$secs" "$p" 1 "$s" "meson exit $rc with every test ok"
        else
                record "$name" "$secs" "$p" "$f" "$s" "$([ "$f" -gt 0 ] && echo "$f failed")"
        fi
}

# stage_matrix: the integration matrix, counted from its results.tsv.
stage_matrix() {
        local name=integration t rc=0
        local -a opts=(--logs "$logs/integration")
        [ $full = 0 ] || opts+=(--full)
        echo "== $name$([ $full = 1 ] && echo " (full matrix: every file in all four cells)")"
        t=$(now)
        tests/integration/matrix.sh "${opts[@]}" "$build" "$asan" 2>&1 | tee "$logs/$name.log"
        rc=${PIPESTATUS[0]}
        local secs
        secs=$(elapsed "$t")
        local res=$logs/integration/results.tsv
        if [ ! -s "$res" ]; then
                record "$name" "$secs" 0 1 0 "the matrix left no results (exit $rc)"
                return
        fi
        local p f s bad
        read -r p f s < <(awk -F'\t' '{ p += $4; f += $5; s += $6 } END { print p + 0, f + 0, s + 0 }' "$res")
        bad=$(awk -F'\t' '$7 == "failed" { printf "%s%s %s", sep, $1, $2; sep = ", " }' "$res")
        if [ $rc -ne 0 ] && [ -z "$bad" ]; then
                record "$name" "$secs" "$p" $((f + 1)) "$s" "matrix exit $rc"
        else
                record "$name" "$secs" "$p" "$f" "$s" "$bad"
        fi
        # Every skip, with its reason (a whole cell the host cannot run is
        # one line).
        awk -F'\t' '$7 == "skipped" { print "   cell skipped: " $1 ": " $8 }' "$res" | sort -u
        local tap c
        for tap in "$logs"/integration/*/*.tap; do
                [ -e "$tap" ] || continue
                c=$(basename "$(dirname "$tap")")
                [ -f "$logs/integration/$c.skipped" ] && continue
                grep -E '^ok [0-9]+ .*# [Ss][Kk][Ii][Pp]' "$tap" | sed -E "s/^ok [0-9]+ /   skip ($c) /"
        done
}

stage_single deps scripts/deps.sh
stage_single build make --no-print-directory BUILD="$build" build ||
        { echo "check: the build failed; nothing can be tested"; }
stage_single build-asan make --no-print-directory ASAN_BUILD="$asan" asan
stage_single layering sh -c 'scripts/layering.py --self-test && scripts/layering.py'
stage_tap harness tests/harness/selftest.sh "$build"
stage_meson unit "$build"
stage_meson unit-asan "$asan"
stage_matrix
stage_tap package tests/package/run.sh "$build"
stage_single demo scripts/demo.sh "$build"
stage_tap conformance tests/conformance/run.sh "$build"
sed -n '/^revision  *| scenario/,/ran in/p' "$logs/conformance.log"
stage_tap agents tests/agents/run.sh "$build"
if [ -x scripts/fuzz.sh ]; then stage_single fuzz scripts/fuzz.sh short; fi

total=$(($(date +%s) - check_start))
echo
echo "stage           time  passed  failed skipped"
printf '%s\n' "${table[@]}"
printf '%-12s %7s\n' total "$(fmt_time "$total")"
echo
echo "the ten slowest test files:"
{
        [ -s "$logs/integration/results.tsv" ] &&
                awk -F'\t' '{ printf "%s\tintegration %s %s\n", $3, $1, $2 }' "$logs/integration/results.tsv"
        for u in unit unit-asan; do
                [ -s "$logs/$u.testlog.json" ] && python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print("%.1f\t%s %s" % (r["duration"], sys.argv[2], r["name"]))' "$logs/$u.testlog.json" "$u"
        done
} | sort -t$'\t' -k1,1nr | head -n 10 | awk -F'\t' '{ printf "%8.1f s  %s\n", $1, $2 }'
echo "logs: $logs"
echo
if [ "$failed" -eq 0 ]; then
        echo "$passed passed, $failed failed, $skipped skipped"
else
        echo "$passed passed, $failed failed, $skipped skipped; failed: $(printf '%s; ' "${failures[@]}" | sed 's/; $//')"
fi
[ "$failed" -eq 0 ]

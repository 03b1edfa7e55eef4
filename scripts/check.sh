#!/usr/bin/env bash
# make check: unit tests on both builds, then the integration suite (as root
# and as an unprivileged user) against both binaries, then the package checks
# (man pages against --help, completions, make install) on the normal build,
# then the MCP conformance suite, directly and through glove run, with its
# scenario table (tests/conformance/run.sh; the normal build only), then the
# agent CLI suite (tests/agents/run.sh; the normal build only, it is the slow
# one).
# Prints one closing line "N passed, N failed[, N skipped]" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
asan=${2:-build-asan}
passed=0 failed=0 skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count_meson() { # dir
        local dir=$1
        echo "== unit tests ($dir)"
        meson test -C "$dir" --suite unit --print-errorlogs --num-processes 2 >"$log" 2>&1
        local rc=$?
        cat "$log" | grep -E '^(Ok|Fail|Skipped|Expected Fail|Unexpected Pass|Timeout):|FAIL|ERROR' || true
        local ok fail skip to
        ok=$(awk '/^Ok:/{print $2}' "$log"); fail=$(awk '/^Fail:/{print $2}' "$log")
        skip=$(awk '/^Skipped:/{print $2}' "$log"); to=$(awk '/^Timeout:/{print $2}' "$log")
        passed=$((passed + ${ok:-0})); failed=$((failed + ${fail:-0} + ${to:-0})); skipped=$((skipped + ${skip:-0}))
        if [ $rc -ne 0 ] && [ "${fail:-0}" = 0 ]; then cat "$log"; failed=$((failed + 1)); fi
}

count_bats() { # label, command...
        local label=$1; shift
        echo "== integration tests ($label)"
        "$@" >"$log" 2>&1
        local rc=$?
        cat "$log"
        local ok nok skip
        ok=$(grep -cE '^ok [0-9]+' "$log"); nok=$(grep -cE '^not ok [0-9]+' "$log")
        skip=$(grep -cE '^ok [0-9]+ .*# skip' "$log")
        passed=$((passed + ok - skip)); failed=$((failed + nok)); skipped=$((skipped + skip))
        if [ $rc -ne 0 ] && [ "$nok" = 0 ]; then echo "integration runner failed (exit $rc)"; failed=$((failed + 1)); fi
}

count_meson "$build"
count_meson "$asan"
for dir in "$build" "$asan"; do
        count_bats "$dir, as root" tests/integration/run.sh "$dir" root
        count_bats "$dir, as an unprivileged user" tests/integration/run.sh "$dir" unprivileged
done
count_bats "$build, package" tests/package/run.sh "$build"
count_bats "conformance, $build" tests/conformance/run.sh "$build"
count_bats "agent CLIs, $build" tests/agents/run.sh "$build"
if [ -x scripts/fuzz.sh ]; then
        echo "== fuzz smoke"
        if scripts/fuzz.sh short; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# The integration matrix: every tests/integration/*.bats in the cells
# tests/integration/matrix names, files in parallel where it is safe.
#
#   tests/integration/matrix.sh [--full] [--jobs N] [--timeout SECS] [--only FILE]...
#                               [--cells CELL,...] --logs DIR BUILD_DIR ASAN_BUILD_DIR
#
# The cells (a build's binaries, run by one user):
#   root     BUILD_DIR as root
#   unpriv   BUILD_DIR as uid 65534 (setpriv), in a delegated cgroup
#   asan     ASAN_BUILD_DIR (AddressSanitizer and UBSan) as root
#   asan-unpriv  ASAN_BUILD_DIR as uid 65534
# Without --full each file runs in the cells its matrix line names (a cell
# written CELL/WORD runs only the file's tests whose name matches WORD, a
# bats --filter); with
# --full every file runs in all four (the release or nightly matrix,
# `make check-full`). --only FILE (repeatable) and --cells keep to those
# files and cells, for a run by hand.
#
# Files marked "parallel" run --jobs at a time (default: the number of CPUs),
# longest first by the matrix's time hint; then the files marked "serial"
# (host-wide or per-uid state: host limits, cgroup sweeps, the gloved
# service and daemon, recovery) run one at a time with nothing else
# running. Each file is one bats process under a timeout of --timeout
# seconds (default 900, or $GLOVE_IT_FILE_TIMEOUT): a file that hangs is
# killed, counted as failed with its name, and the run goes on.
#
# Writes into DIR: CELL/FILE.tap (bats's TAP) and CELL/FILE.err (its
# stderr) for every job, CELL.skipped (the reason) for a cell this host
# cannot run, joblog.* (GNU parallel's job logs) and
# results.tsv, one line per job:
#   cell  file  seconds  passed  failed  skipped  verdict  note
# where verdict is ok, failed (a test failed, the plan is missing or does
# not match what ran, the file timed out or bats failed) or skipped (the
# cell cannot run on this host; note says why). Prints a line per finished
# job, the TAP of every failed job, and exits 1 when any job failed, 2 on a
# usage or setup error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The suite: this directory's matrix and .bats files, or GLOVE_IT_SUITE's
# (tests/harness/selftest.sh proves the runner's verdicts on a suite of its
# own).
suite_src=${GLOVE_IT_SUITE:-$here}

usage() {
        echo "usage: $0 [--full] [--jobs N] [--timeout SECS] [--only FILE]... [--cells CELL,...] --logs DIR BUILD_DIR ASAN_BUILD_DIR" >&2
        exit 2
}

# ------------------------------------------------------------ one job
# matrix.sh --job WORK LOGS TIMEOUT CELL FILE FILTER (run by GNU parallel;
# FILTER "-" for the whole file)
if [ "${1:-}" = --job ]; then
        [ $# -eq 7 ] || usage
        work=$2 logs=$3 timeout_s=$4 cell=$5 file=$6 filter=$7
        fopts=()
        [ "$filter" = - ] || fopts=(--filter "$filter")
        tap=$logs/$cell/$file.tap err=$logs/$cell/$file.err
        start=$(date +%s.%N)
        rc=0
        if [ -f "$work/$cell.skip" ]; then
                why=$(cat "$work/$cell.skip")
                printf '1..1\nok 1 %s in the %s cell # skip %s\n' "$file" "$cell" "$why" >"$tap"
                : >"$err"
        else
                # timeout signals its whole process group: bats and every
                # program the file started (but not a sandbox's own session).
                timeout -k 10 "$timeout_s" "$here/cell.sh" run "$work/$cell" "$file" "${fopts[@]}" >"$tap" 2>"$err" || rc=$?
        fi
        secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        plan=$(grep -m1 -E '^1\.\.[0-9]+$' "$tap" | cut -d. -f3)
        ran=$(grep -cE '^(not )?ok [0-9]+' "$tap")
        nok=$(grep -cE '^not ok [0-9]+' "$tap")
        skip=$(grep -cE '^ok [0-9]+ .*# [Ss][Kk][Ii][Pp]' "$tap")
        ok=$((ran - nok - skip))
        verdict=ok note=""
        if [ -f "$work/$cell.skip" ]; then
                verdict=skipped note=$(cat "$work/$cell.skip")
        elif [ $rc -eq 124 ] || { [ $rc -eq 137 ] && awk -v s="$secs" -v t="$timeout_s" 'BEGIN { exit !(s >= t) }'; }; then
                verdict=failed note="timed out after ${timeout_s} s (killed); $ran of ${plan:-?} tests reported"
                nok=$((nok + 1))
        elif [ -z "$plan" ]; then
                verdict=failed note="no TAP plan (bats exit $rc; see $err)"
                nok=$((nok + 1))
        elif [ "$plan" -ne "$ran" ]; then
                verdict=failed note="the plan says $plan tests, $ran reported (bats exit $rc)"
                nok=$((nok + 1))
        elif [ "$nok" -gt 0 ]; then
                verdict=failed note="$nok failed"
        elif [ $rc -ne 0 ]; then
                verdict=failed note="bats exited $rc with every test ok (see $err)"
                nok=1
        fi
        printf '%s\t%s\t%.1f\t%d\t%d\t%d\t%s\t%s\n' "$cell" "$file" "$secs" "$ok" "$nok" "$skip" "$verdict" "$note" \
                >"$logs/$cell/$file.result"
        printf '%-11s %-24s %6.1f s  %3d passed %2d failed %2d skipped%s\n' "$cell" "$file" "$secs" "$ok" "$nok" "$skip" \
                "${note:+  ($note)}"
        exit 0
fi

# ------------------------------------------------------------ options
full=0 jobs=$(nproc 2>/dev/null || echo 2) timeout_s=${GLOVE_IT_FILE_TIMEOUT:-900} logs="" only=() keep_cells=""
while [ $# -gt 0 ]; do
        case "$1" in
        --full) full=1 ;;
        --jobs) jobs=${2:?}; shift ;;
        --timeout) timeout_s=${2:?}; shift ;;
        --logs) logs=${2:?}; shift ;;
        --only) only+=("${2:?}"); shift ;;
        --cells)
                keep_cells=",${2:?},"
                for x in ${2//,/ }; do
                        case "$x" in root|unpriv|asan|asan-unpriv) ;;
                        *) echo "matrix.sh: --cells: unknown cell $x (root, unpriv, asan, asan-unpriv)" >&2; exit 2 ;;
                        esac
                done
                shift ;;
        -*) usage ;;
        *) break ;;
        esac
        shift
done
[ $# -eq 2 ] && [ -n "$logs" ] || usage
build=$1 asan=$2
command -v parallel >/dev/null || { echo "matrix.sh: GNU parallel is not installed (scripts/deps.sh installs it)" >&2; exit 2; }
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)

# The ASan build records 5 frames of each allocation's and free's stack, not
# 30: the ASan cells run 12 to 17 % faster, and a report still gives the
# whole stack of the bad access (set ASAN_OPTIONS, even empty, to choose).
export ASAN_OPTIONS=${ASAN_OPTIONS-malloc_context_size=5}

# ------------------------------------------------------------ the matrix
# Lines: FILE CELLS SCHEDULE SECONDS REASON...; every .bats file exactly once.
matrix=$suite_src/matrix
declare -A cells_of sched_of secs_of
order=()
while read -r f c s t _; do
        case "$f" in ''|'#'*) continue ;; esac
        if [ -n "${cells_of[$f]+x}" ]; then echo "matrix.sh: $f is listed twice in $matrix" >&2; exit 2; fi
        [ -f "$suite_src/$f" ] || { echo "matrix.sh: $matrix names $f, which does not exist" >&2; exit 2; }
        case "$s" in parallel|serial) ;; *) echo "matrix.sh: $f: schedule must be parallel or serial, not $s" >&2; exit 2 ;; esac
        [[ "$t" =~ ^[0-9]+$ ]] || { echo "matrix.sh: $f: the time hint must be whole seconds, not $t" >&2; exit 2; }
        for x in ${c//,/ }; do
                case "${x%%/*}" in root|unpriv|asan|asan-unpriv) ;; *) echo "matrix.sh: $f: unknown cell ${x%%/*} (root, unpriv, asan, asan-unpriv)" >&2; exit 2 ;; esac
        done
        cells_of[$f]=$c sched_of[$f]=$s secs_of[$f]=$t
        order+=("$f")
done <"$matrix"
for p in "$suite_src"/*.bats; do
        f=$(basename "$p")
        [ -n "${cells_of[$f]+x}" ] || { echo "matrix.sh: $f is not in $matrix: give it its cells, schedule and reason" >&2; exit 2; }
done
if [ ${#only[@]} -gt 0 ]; then
        for f in "${only[@]}"; do [ -n "${cells_of[$f]+x}" ] || { echo "matrix.sh: --only $f: no such file in $matrix" >&2; exit 2; }; done
        order=("${only[@]}")
fi

# Relative cost of a cell, for ordering the jobs only (measured: ASan runs
# the suite about 1.5 times slower; uid 65534 about as fast as root).
declare -A cell_cost=([root]=10 [unpriv]=10 [asan]=15 [asan-unpriv]=15)
declare -A cell_build=([root]=$build [unpriv]=$build [asan]=$asan [asan-unpriv]=$asan)
declare -A cell_mode=([root]=root [unpriv]=unprivileged [asan]=root [asan-unpriv]=unprivileged)

: >"$logs/jobs.parallel"
: >"$logs/jobs.serial"
declare -A used
for f in "${order[@]}"; do
        if [ $full = 1 ]; then cs="root unpriv asan asan-unpriv"; else cs=${cells_of[$f]//,/ }; fi
        for c in $cs; do
                filter=- cost=1
                if [[ "$c" == */* ]]; then filter=${c#*/} c=${c%%/*} cost=4; fi
                [ -z "$keep_cells" ] || [[ "$keep_cells" == *",$c,"* ]] || continue
                used[$c]=1
                printf '%d\t%s\t%s\t%s\n' $((secs_of[$f] * cell_cost[$c] / cost)) "$c" "$f" "$filter" >>"$logs/jobs.${sched_of[$f]}"
        done
done
for s in parallel serial; do
        sort -t$'\t' -k1,1nr -s "$logs/jobs.$s" | cut -f2,3,4 >"$logs/jobs.$s.sorted"
done

# ------------------------------------------------------------ the cells
# Not under /tmp: discovery's trust rule refuses a sticky world-writable
# ancestor (cell.sh base).
work=$(mktemp -d "$("$here/cell.sh" base "$build")/glove-it.XXXXXX")
chmod 0755 "$work"
cleanup() {
        local c
        for c in "${!used[@]}"; do "$here/cell.sh" cleanup "$work/$c"; done
        rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for c in root unpriv asan asan-unpriv; do
        [ -n "${used[$c]+x}" ] || continue
        mkdir -p "$logs/$c"
        rc=0
        why=$("$here/cell.sh" prepare "${cell_build[$c]}" "${cell_mode[$c]}" "$work/$c") || rc=$?
        if [ $rc -eq 3 ]; then
                echo "matrix.sh: the $c cell cannot run on this host: $why"
                echo "$why" >"$work/$c.skip"
                echo "$why" >"$logs/$c.skipped"
        elif [ $rc -ne 0 ]; then
                echo "matrix.sh: could not prepare the $c cell (exit $rc)" >&2
                exit 2
        elif [ -s "$work/$c/cgroup_procs" ]; then
                echo "matrix.sh: $c cell: cgroups delegated to uid 65534: $(paste -sd' ' "$work/$c/cgroups")"
        fi
done

np=$(wc -l <"$logs/jobs.parallel.sorted") ns=$(wc -l <"$logs/jobs.serial.sorted")
echo "matrix.sh: $np files in parallel ($jobs at a time), then $ns one at a time; cells: ${!used[*]}; logs in $logs"
run_jobs() { # list jobs joblog
        [ -s "$1" ] || return 0
        parallel --will-cite --jobs "$3" --line-buffer --joblog "$2" --colsep '\t' -a "$1" \
                "$here/matrix.sh" --job "$work" "$logs" "$timeout_s" '{1}' '{2}' '{3}'
}
run_jobs "$logs/jobs.parallel.sorted" "$logs/joblog.parallel" "$jobs"
run_jobs "$logs/jobs.serial.sorted" "$logs/joblog.serial" 1

# ------------------------------------------------------------ results
: >"$logs/results.tsv"
failed=0
while IFS=$'\t' read -r c f _; do
        r=$logs/$c/$f.result
        if [ ! -s "$r" ]; then
                printf '%s\t%s\t0\t0\t1\t0\tfailed\tthe job left no result (it did not run to its end)\n' "$c" "$f" >>"$logs/results.tsv"
                failed=1
                continue
        fi
        cat "$r" >>"$logs/results.tsv"
        if [ "$(cut -f7 "$r")" = failed ]; then
                failed=1
                echo
                echo "==== $c $f: $(cut -f8 "$r")"
                grep -vE '^ok [0-9]+' "$logs/$c/$f.tap" | tail -n 200
                echo "---- stderr (last 40 lines):"
                tail -n 40 "$logs/$c/$f.err"
        fi
done < <(cat "$logs/jobs.parallel.sorted" "$logs/jobs.serial.sorted")
exit $failed

#!/usr/bin/env bash
# libFuzzer runs of every fuzz/*.c target (DESIGN.md, "fuzzing").
#
#   scripts/fuzz.sh short [TARGET...]   each target for 3 s (make check; 9 targets,
#                                       2 at a time: about 55 s with the builds)
#   scripts/fuzz.sh long  [TARGET...]   each target for FUZZ_SECONDS (default 600; make fuzz)
#
# Each target is built into build-fuzz/ with clang
# -fsanitize=fuzzer,address,undefined, compiled from the sources directly
# (never linked against the gcc-built libraries): the target file, every
# src/base/*.c, and whatever the target declares in comment lines; a source
# two targets share is compiled once per run (build-fuzz/obj/)
#
#   // fuzz-sources: src/protocol/frame.c src/supervisor/*.c
#   // fuzz-pkgs: libsystemd
#
# (paths relative to the repository root, globs allowed; pkg-config names
# beyond the default jansson and libcrypto). A target is run on a work
# corpus build-fuzz/corpus/TARGET/ (new inputs go there) seeded from
# fuzz/corpus/TARGET/, which is never written. Crashes, leaks, timeouts
# and sanitizer reports are saved under build-fuzz/artifacts/TARGET/ and
# make the script exit 1; the log of each run is build-fuzz/logs/TARGET.log.
# Targets run in parallel, FUZZ_JOBS at a time (default: number of CPUs).
set -uo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
short) seconds=3 ;;
long) seconds=${FUZZ_SECONDS:-600} ;;
*)
        echo "usage: scripts/fuzz.sh short|long [TARGET...]" >&2
        exit 2
        ;;
esac
shift

out=build-fuzz
cc=${FUZZ_CC:-clang}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
mkdir -p "$out/logs" "$out/bin"

if ! command -v "$cc" >/dev/null 2>&1; then
        echo "fuzz.sh: $cc not found; install clang (scripts/deps.sh) to build the libFuzzer targets" >&2
        exit 1
fi
probe="$out/probe.c"
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$out/probe" "$probe" >"$out/logs/probe.log" 2>&1; then
        echo "fuzz.sh: $cc cannot build libFuzzer targets (-fsanitize=fuzzer); see $out/logs/probe.log" >&2
        exit 1
fi

if [ $# -gt 0 ]; then
        targets=("$@")
else
        targets=()
        for f in fuzz/*.c; do
                [ -e "$f" ] && targets+=("$(basename "$f" .c)")
        done
fi
if [ ${#targets[@]} -eq 0 ]; then
        echo "fuzz.sh: no targets in fuzz/" >&2
        exit 1
fi

# Words after "// KEY:" on any line of FILE.
declared() { # file key
        sed -n "s|^// $2:||p" "$1" | tr -s ' \t' '\n\n' | sed '/^$/d'
}

# The sources and pkg-config names of TARGET, one per line, into the
# arrays SOURCES and PKGS.
collect() { # target
        local t=$1 src=fuzz/$1.c f g
        SOURCES=("$src") PKGS=(jansson libcrypto)
        for f in src/base/*.c; do SOURCES+=("$f"); done
        while read -r g; do
                local matched=0
                for f in $g; do
                        [ -e "$f" ] || continue
                        matched=1
                        [[ " ${SOURCES[*]} " == *" $f "* ]] || SOURCES+=("$f")
                done
                if [ $matched = 0 ]; then
                        echo "fuzz.sh: $t: fuzz-sources entry $g matches no file" >&2
                        return 1
                fi
        done < <(declared "$src" fuzz-sources)
        while read -r g; do PKGS+=("$g"); done < <(declared "$src" fuzz-pkgs)
}

# The object of SOURCE in $out/obj (every target shares it: the flags are
# the same for all).
object_of() { # source
        local o=${1//\//_}
        echo "$out/obj/${o%.c}.o"
}

# Compiles one source into its object.
compile() { # source
        # shellcheck disable=SC2086
        "$cc" -std=gnu17 -g -O1 -fno-omit-frame-pointer \
                -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
                -D_GNU_SOURCE -DGLOVE_VERSION='"fuzz"' -Iinclude $CFLAGS_ALL \
                -c -o "$(object_of "$1")" "$1"
}

link() { # target
        local t=$1 f libs
        local -a objs=()
        collect "$t" || return 1
        for f in "${SOURCES[@]}"; do objs+=("$(object_of "$f")"); done
        libs=$(pkg-config --libs "${PKGS[@]}") || return 1
        # shellcheck disable=SC2086
        "$cc" -fsanitize=fuzzer,address,undefined -o "$out/bin/$t" "${objs[@]}" $libs
}

run() { # target
        local t=$1 log=$out/logs/$1.log
        local work=$out/corpus/$t seeds=fuzz/corpus/$t
        mkdir -p "$work" "$out/artifacts/$t"
        local -a dirs=("$work")
        if [ -d "$seeds" ]; then
                dirs+=("$seeds")
        else
                echo "fuzz.sh: $t: no seed corpus in $seeds (starting empty)" >&2
        fi
        if ! link "$t" >"$log" 2>&1; then
                echo "FAIL $t: build failed"
                tail -n 30 "$log"
                return 1
        fi
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                "$out/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
                -max_len=1048576 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" \
                "${dirs[@]}" >>"$log" 2>&1
        local rc=$?
        local execs
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        if [ $rc -ne 0 ]; then
                echo "FAIL $t (exit $rc); artifacts in $out/artifacts/$t/"
                grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|Test unit written' "$log" | head -n 20
                return 1
        fi
        echo "ok   $t: ${execs:-?} runs in ${seconds}s, $(find "$work" -type f | wc -l) new corpus files"
}

# Every source any target needs is compiled once, $jobs at a time, into a
# fresh $out/obj; each target is then only linked.
all_sources=() all_pkgs=()
for t in "${targets[@]}"; do
        [ -f "fuzz/$t.c" ] || continue
        collect "$t" || exit 1
        for f in "${SOURCES[@]}"; do
                [[ " ${all_sources[*]} " == *" $f "* ]] || all_sources+=("$f")
        done
        for f in "${PKGS[@]}"; do
                [[ " ${all_pkgs[*]} " == *" $f "* ]] || all_pkgs+=("$f")
        done
done
CFLAGS_ALL=$(pkg-config --cflags "${all_pkgs[@]}") || exit 1
rm -rf "$out/obj"
mkdir -p "$out/obj"
for f in "${all_sources[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
                sleep 0.05
        done
        compile "$f" >"$(object_of "$f").log" 2>&1 &
done
wait
compile_failed=0
for f in "${all_sources[@]}"; do
        if [ ! -s "$(object_of "$f")" ]; then
                echo "FAIL compiling $f:"
                tail -n 30 "$(object_of "$f").log"
                compile_failed=1
        fi
done
[ $compile_failed = 0 ] || exit 1

echo "fuzz.sh: $mode run, ${seconds}s per target, ${#targets[@]} target(s), $jobs at a time"
failed=0
names=()
for t in "${targets[@]}"; do
        if [ ! -f "fuzz/$t.c" ]; then
                echo "FAIL $t: fuzz/$t.c does not exist"
                failed=1
                continue
        fi
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
                sleep 0.2
        done
        rm -f "$out/logs/$t.rc"
        (
                run "$t" >"$out/logs/$t.summary" 2>&1
                echo $? >"$out/logs/$t.rc"
        ) &
        names+=("$t")
done
wait
for t in "${names[@]}"; do
        cat "$out/logs/$t.summary"
        [ "$(cat "$out/logs/$t.rc" 2>/dev/null)" = 0 ] || failed=1
done
exit $failed

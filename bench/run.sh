#!/usr/bin/env bash
# make bench: start-up cost of `glove exec -- /bin/true` next to an equivalent
# bubblewrap sandbox, measured side by side in one run; then `glove run`
# tools/call round trips against the same client talking directly to the same
# upstream (bench/mcp/mcp_bench.py, JSON lines in bench/results/mcp.jsonl);
# then start-up with limits against without, and egress throughput through
# the proxy against a direct loopback transfer (bench/limits_egress.py, JSON
# lines in bench/results/limits-egress.jsonl).
#
#   bench/run.sh BUILD_DIR [ROUNDS]        (ROUNDS defaults to 200)
#
# Prints medians, p90 and the glove/bwrap ratio; appends JSON lines to
# bench/results/exec-startup.jsonl (bench/exec_startup.py). When hyperfine is
# installed it measures the same two commands as a second opinion. Times are
# reported, never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-200}
glove="$(cd "$build" && pwd)/glove"
[ -x "$glove" ] || { echo "bench: $glove is missing (run make build)" >&2; exit 2; }
mkdir -p bench/results

# The perimeter bwrap builds by hand that is closest to glove's: every
# namespace, read-only /usr with the merged-/usr links, a fresh /proc, a
# minimal /dev and a private /tmp.
bwrap_cmd=(bwrap --unshare-all --die-with-parent --ro-bind /usr /usr
        --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
        --symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp -- /bin/true)
glove_cmd=("$glove" exec -- /bin/true)
words() { printf '%q ' "$@"; }

bwrap_args=()
if ! command -v bwrap >/dev/null; then
        echo "bench: bwrap is not installed; measuring glove alone (scripts/deps.sh installs bubblewrap)" >&2
elif ! why=$("${bwrap_cmd[@]}" 2>&1); then
        echo "bench: bwrap cannot run here ($why); measuring glove alone" >&2
else
        bwrap_args=(--bwrap "$(words "${bwrap_cmd[@]}")")
fi

echo "== exec start-up: glove ($glove) vs bwrap, $(uname -r), uid $(id -u)"
rc=0
/usr/bin/python3 bench/exec_startup.py --rounds "$rounds" \
        --results bench/results/exec-startup.jsonl \
        --glove "$(words "${glove_cmd[@]}")" "${bwrap_args[@]}" || rc=$?

if command -v hyperfine >/dev/null; then
        echo
        echo "== hyperfine, same commands (second opinion)"
        hf=(hyperfine -N --warmup 10 --runs $((rounds / 2 > 10 ? rounds / 2 : 10)) --style basic
                -n glove "$(words "${glove_cmd[@]}")")
        [ ${#bwrap_args[@]} -gt 0 ] && hf+=(-n bwrap "$(words "${bwrap_cmd[@]}")")
        "${hf[@]}" || echo "bench: hyperfine failed (not fatal)" >&2
else
        echo "bench: hyperfine is not installed; no second opinion (scripts/deps.sh installs it)" >&2
fi

echo
echo "== glove run: tools/call round trips through glove vs the same client direct to the same upstream"
/usr/bin/python3 bench/mcp/mcp_bench.py --glove "$glove" --results bench/results/mcp.jsonl || rc=$?

echo
echo "== gloved: durable create_session rate, validate_plan latency, replay of 10 000 sessions"
bench/gloved.sh "$build" || rc=$?

echo
echo "== limits and egress: start-up with vs without a run cgroup; 256 MiB through the egress proxy vs direct"
/usr/bin/python3 bench/limits_egress.py --glove "$glove" --results bench/results/limits-egress.jsonl || rc=$?
exit $rc

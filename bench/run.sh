#!/usr/bin/env bash
# make bench: start-up cost of `glove exec -- /bin/true` next to an equivalent
# bubblewrap sandbox, measured side by side in one run; then `glove run`
# tools/call round trips against the same client talking directly to the same
# upstream, in both protocol eras (legacy initialize and MCP 2026-07-28), at
# 1 and 16 calls in flight (bench/mcp/mcp_bench.py, JSON lines in
# bench/results/mcp.jsonl);
# then start-up with limits against without, and egress throughput through
# the proxy against a direct loopback transfer (bench/limits_egress.py, JSON
# lines in bench/results/limits-egress.jsonl); then managed sessions in
# gloved, as root only: start_session to the first output byte against
# `glove exec`, 32 sessions started at once, and attach throughput against a
# direct pipe and a bare PTY read by C (bench/managed.py, JSON lines in
# bench/results/managed.jsonl); then, as root only, a soak of gloved with
# many real short managed sessions: RSS, descriptors, keepers, journal and
# checkpoint bytes every 1 000 sessions and the replay time of a restart
# (bench/gloved_soak.py, JSON lines in bench/results/gloved-soak.jsonl;
# GLOVED_SOAK_SESSIONS, default 2 000; 10 000 is the full soak). Before
# limits and egress: one local-service exchange direct to an echo upstream
# against the same through the proxy, its audit file on tmpfs and on disk
# (bench/services_exchange.c, JSON lines in bench/results/services.jsonl;
# SERVICES_EXCHANGES rounds, default 1 000).
#
#   bench/run.sh BUILD_DIR [ROUNDS]        (ROUNDS defaults to 200)
#
# GLOVE_BEFORE=PATH (another glove binary, e.g. one built from an older
# commit in its own build directory) adds it to the glove run round trips,
# measured in the same rounds as BUILD_DIR's (mcp_bench.py --glove-before).
#
# The start-up comparison runs as root and again unprivileged (as nobody,
# under setpriv, like tests/integration/run.sh; skipped with the reason when
# that cannot run): wall time and CPU time (user + sys) per start, medians,
# p90 and the glove/bwrap ratios, and the system calls of one start of each
# (strace -f -c: total and the top five). Appends JSON lines to
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

strace_args=()
if command -v strace >/dev/null; then
        strace_args=(--strace "$(command -v strace)")
else
        echo "bench: strace is not installed; no system-call counts (scripts/deps.sh installs it)" >&2
fi

# One side-by-side run, each command behind the prefix run_as (none: as this
# user).
# Prints a reason and returns 0 when bwrap cannot run that way.
startup() { # mode glove-binary results run_as...
        local mode=$1 g=$2 results=$3
        shift 3
        local -a as=("$@") args=()
        if ! command -v bwrap >/dev/null; then
                echo "bench: bwrap is not installed; measuring glove alone (scripts/deps.sh installs bubblewrap)" >&2
        elif ! why=$(cd / && "${as[@]}" "${bwrap_cmd[@]}" 2>&1); then
                echo "bench: bwrap cannot run here as $mode ($why); measuring glove alone" >&2
        else
                args=(--bwrap "$(words "${bwrap_cmd[@]}")")
        fi
        [ -n "${commit_args[*]:-}" ] && args+=("${commit_args[@]}")
        echo "== exec start-up as $mode: glove vs bwrap, $(uname -r)"
        "${as[@]}" /usr/bin/python3 "$driver" --rounds "$rounds" --mode "$mode" \
                --results "$results" --glove "$(words "$g" exec -- /bin/true)" "${args[@]}" "${strace_args[@]}"
}

rc=0
driver=bench/exec_startup.py
if [ "$(id -u)" -eq 0 ]; then
        startup root "$glove" bench/results/exec-startup.jsonl || rc=$?
else
        echo "bench: not root; the root start-up run is skipped"
fi

# Unprivileged: the same run as nobody (as tests/integration/run.sh does),
# with private copies of the binaries and the driver in a world-readable
# directory, since the checkout may sit in a 0700 directory.
echo
nobody=65534
if [ "$(id -u)" -eq 0 ]; then
        if ! command -v setpriv >/dev/null; then
                echo "bench: setpriv is missing (util-linux); the unprivileged start-up run is skipped"
        else
                ud=$(mktemp -d /tmp/glove-bench.XXXXXX)
                trap 'rm -rf "$ud"' EXIT
                mkdir -p "$ud/bin" "$ud/home"
                cp "$glove" "$ud/bin/glove"
                for extra in "$(dirname "$glove")"/glove-* "$(dirname "$glove")"/gloved; do
                        if [ -f "$extra" ] && [ -x "$extra" ]; then cp "$extra" "$ud/bin/"; fi
                done
                cp bench/exec_startup.py "$ud/exec_startup.py"
                : >"$ud/results.jsonl"
                chmod 0755 "$ud" "$ud/bin" "$ud/bin"/* "$ud/exec_startup.py"
                chown "$nobody:$nobody" "$ud/home" "$ud/results.jsonl"
                as=(setpriv --reuid=$nobody --regid=$nobody --clear-groups env HOME="$ud/home" USER=nobody LOGNAME=nobody)
                if ! why=$(cd / && "${as[@]}" unshare --user --map-root-user /bin/true 2>&1); then
                        echo "bench: unprivileged user namespaces are unavailable (${why:-unshare failed}); the unprivileged start-up run is skipped"
                else
                        # The records name this checkout's commit.
                        commit=$(git rev-parse HEAD 2>/dev/null || true)
                        [ -n "$commit" ] && [ -n "$(git status --porcelain --untracked-files=no)" ] &&
                                commit="$commit-dirty"
                        urc=0
                        (cd "$ud/home" && driver="$ud/exec_startup.py" && commit_args=(--commit "$commit") &&
                                startup unprivileged "$ud/bin/glove" "$ud/results.jsonl" "${as[@]}") || urc=$?
                        cat "$ud/results.jsonl" >>bench/results/exec-startup.jsonl
                        [ $urc -eq 0 ] || rc=$urc
                fi
        fi
elif ! why=$(cd / && unshare --user --map-root-user /bin/true 2>&1); then
        echo "bench: unprivileged user namespaces are unavailable (${why:-unshare failed}); the unprivileged start-up run is skipped"
else
        startup unprivileged "$glove" bench/results/exec-startup.jsonl || rc=$?
fi

bwrap_args=()
if command -v bwrap >/dev/null && (cd / && "${bwrap_cmd[@]}") >/dev/null 2>&1; then
        bwrap_args=(--bwrap)
fi
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
echo "== glove run: tools/call round trips through glove vs the same client direct to the same upstream, legacy and 2026-07-28"
mcp_before=()
[ -n "${GLOVE_BEFORE:-}" ] && mcp_before=(--glove-before "$GLOVE_BEFORE")
/usr/bin/python3 bench/mcp/mcp_bench.py --glove "$glove" "${mcp_before[@]}" --results bench/results/mcp.jsonl || rc=$?

echo
echo "== gloved: durable create_session rate, validate_plan latency, replay of 10 000 sessions"
bench/gloved.sh "$build" || rc=$?

echo
echo "== session store: 1 000 000 sessions through store and receipts alone (every transition, receipt, acknowledgement, cleanup), then the same next to 10 000 live sessions; RSS, descriptors, bytes and replay time every 100 000"
# On tmpfs when there is one: this measures growth (memory, descriptors,
# bytes, replay), not the disk's fsync latency (gloved.sh measures that).
soak_sessions=${STORE_SOAK_SESSIONS:-1000000}
soak_tmp=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/glove-soak.XXXXXX")
for live in 0 10000; do
        rm -rf "${soak_tmp:?}"/* && chmod 0700 "$soak_tmp"
        "$build/glove-bench-store-soak" "$soak_tmp" --sessions "$soak_sessions" --every 100000 --live "$live" |
                tee -a bench/results/store-soak.jsonl || rc=$?
done
rm -rf "$soak_tmp"

echo
echo "== local services: one framed exchange direct to an echo upstream vs through the proxy (inherited-stream-v1), its audit file on tmpfs and on disk"
# On disk (/var/tmp unless TMPDIR), as a session's audit file under the
# materialization root: each audit record's fdatasync is part of the cost.
svc_tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/glove-bench-services.XXXXXX")
if svc_out=$("$build/glove-bench-services" "$svc_tmp" --exchanges "${SERVICES_EXCHANGES:-1000}"); then
        printf '%s\n' "$svc_out"
        grep '^{' <<<"$svc_out" >>bench/results/services.jsonl
else
        rc=$?
        printf '%s\n' "$svc_out"
fi
rm -rf "$svc_tmp"

echo
echo "== limits and egress: start-up with vs without a run cgroup; 256 MiB through the egress proxy vs direct"
/usr/bin/python3 bench/limits_egress.py --glove "$glove" --results bench/results/limits-egress.jsonl || rc=$?

echo
echo "== managed sessions: start_session -> first byte vs glove exec; 32 at once; attach throughput (glove ctl attach) vs a pipe and a bare PTY (root only)"
/usr/bin/python3 bench/managed.py --build "$build" --results bench/results/managed.jsonl || rc=$?

echo
echo "== gloved soak: short managed sessions 8 at a time (create, start, attach to the end, cleanup, receipts acknowledged); RSS, descriptors, keepers, journal and checkpoint bytes every 1 000; restart replay time (root only)"
# 2 000 sessions here (a few minutes); --sessions 10000 is the full soak.
/usr/bin/python3 bench/gloved_soak.py --build "$build" --sessions "${GLOVED_SOAK_SESSIONS:-2000}" --results bench/results/gloved-soak.jsonl || rc=$?
exit $rc

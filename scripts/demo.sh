#!/usr/bin/env bash
# make demo: a short narrated run of a contained agent.
#
#   scripts/demo.sh BUILD_DIR
#
# Creates a temporary workspace with a small file, lets a contained program
# read and write it, then has it try what a misbehaving agent would: read
# /etc/shadow, read a file in your real home, write into /usr, open an
# internet socket. Exit 0 when everything behaved as expected, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
glove="$(cd "$build" 2>/dev/null && pwd)/glove"
[ -x "$glove" ] || { echo "demo: $glove is missing (run make build)" >&2; exit 2; }
py=/usr/bin/python3

work=$(mktemp -d /tmp/glove-demo.XXXXXX)
ws=$work/workspace
canary=""
cleanup() {
        rm -rf "$work"
        [ -n "$canary" ] && rm -f "$canary"
        return 0
}
trap cleanup EXIT
mkdir "$ws"
printf 'buy milk\nfix the flaky test\nship glove\n' >"$ws/notes.txt"

failed=0
step=0
out=$work/out

# attempt TITLE EXPECT(allowed|refused) CHECK-PATTERN ARGS...: run
# `glove exec ARGS...`, show what the agent printed, and judge the outcome:
# allowed = exit 0; refused = non-zero exit and output matching CHECK-PATTERN.
attempt() {
        local title=$1 expect=$2 pattern=$3 rc=0
        shift 3
        step=$((step + 1))
        echo
        echo "$step. $title"
        local a line='   $ glove exec'
        for a in "$@"; do
                # Single quotes read better than %q for the short commands here.
                if [[ "$a" =~ ^[A-Za-z0-9_./=:-]+$ ]]; then line+=" $a"; else line+=" '${a//\'/\'\\\'\'}'"; fi
        done
        echo "${line//$work/\$DEMO}"
        timeout --foreground -k 5 30 "$glove" exec "$@" >"$out" 2>&1 </dev/null || rc=$?
        sed "s|$work|\$DEMO|g; s/^/   | /" "$out"
        if [ "$expect" = allowed ] && [ "$rc" -eq 0 ]; then
                echo "   => allowed, as it should be (exit 0)"
        elif [ "$expect" = refused ] && [ "$rc" -ne 0 ] && grep -qE -- "$pattern" "$out"; then
                echo "   => refused, as it should be (exit $rc)"
        else
                echo "   => UNEXPECTED: expected $expect, got exit $rc"
                failed=1
        fi
}

echo "Glove demo: an untrusted program runs contained and gets only what it was granted."
echo "Workspace \$DEMO/workspace ($ws) holds notes.txt (3 lines)."

attempt "The agent reads and writes its workspace (granted with --workspace)" allowed "" \
        --workspace "$ws" -- "$py" -c 'lines = open("notes.txt").read().splitlines(); open("summary.txt", "w").write("%d tasks, first: %s\n" % (len(lines), lines[0])); print("read %d lines from notes.txt, wrote summary.txt" % len(lines))'
if [ "$(cat "$ws/summary.txt" 2>/dev/null)" = "3 tasks, first: buy milk" ]; then
        echo "   the host now has \$DEMO/workspace/summary.txt: $(cat "$ws/summary.txt")"
else
        echo "   => UNEXPECTED: summary.txt did not reach the host"
        failed=1
fi

host_note="exists on the host"
[ -e /etc/shadow ] || host_note="absent on this host too"
attempt "It tries to read /etc/shadow ($host_note)" refused "No such file or directory|Permission denied" \
        -- /bin/cat /etc/shadow

# A file in the invoker's real home: a canary made for the demo, else an
# existing file.
if [ -n "${HOME:-}" ] && [ -d "$HOME" ] && [ -w "$HOME" ]; then
        canary=$(mktemp "$HOME/.glove-demo-canary.XXXXXX")
        echo "private note of $(id -un)" >"$canary"
        home_file=$canary
        home_note="a canary written for this demo, removed afterwards"
else
        home_file=$(find "${HOME:-/root}" -maxdepth 1 -type f -readable 2>/dev/null | head -1)
        home_note="an existing file"
fi
if [ -n "$home_file" ]; then
        attempt "It tries to read $home_file in your home ($home_note)" refused "No such file or directory" \
                -- /bin/cat "$home_file"
else
        echo
        echo "(no readable file in HOME=${HOME:-} to try; step skipped)"
fi

attempt "It tries to write into /usr" refused "Read-only file system" \
        -- /bin/sh -c 'echo pwned >/usr/glove-demo && echo "wrote /usr/glove-demo"'
if [ -e /usr/glove-demo ]; then
        echo "   => UNEXPECTED: /usr/glove-demo exists on the host"
        failed=1
fi

attempt "It tries to open an internet socket (AF_INET)" refused "Operation not permitted" \
        -- "$py" -c 'import socket, sys
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("got an AF_INET socket")
except OSError as e:
    sys.exit("socket(AF_INET): %s" % e)'

echo
if [ "$failed" -eq 0 ]; then
        echo "Everything behaved as expected: the workspace was usable, everything else was refused."
else
        echo "Something did NOT behave as expected (see UNEXPECTED above)."
fi
exit "$failed"

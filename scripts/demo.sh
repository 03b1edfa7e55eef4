#!/usr/bin/env bash
# make demo: a short narrated run of a contained agent.
#
#   scripts/demo.sh BUILD_DIR
#
# Creates a temporary workspace with a small file, lets a contained program
# read and write it, then has it try what a misbehaving agent would: read
# /etc/shadow, read a file in your real home, write into /usr, open an
# internet socket. Then `glove run`: a contained MCP client (built on
# @modelcontextprotocol/sdk) uses server-filesystem, which Glove starts in a
# sandbox of its own that sees only node_modules and a demo directory; one
# tool call is allowed, one is refused by policy before it reaches the
# server. Exit 0 when everything behaved as expected, 1 otherwise.
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

# ---------------------------------------------------------------- glove run
# The agent is now an MCP client; Glove is its MCP server and forwards only
# the tool calls the policy allows to server-filesystem, which runs in a
# sandbox of its own over $DEMO/data (granted read-only, as is node_modules).
# The agent itself is granted nothing of $DEMO/data.
node=/usr/bin/node
modules=$PWD/tests/node_modules
fs_server=$modules/@modelcontextprotocol/server-filesystem/dist/index.js
echo
echo "Now glove run: the agent is an MCP client, and Glove decides which of its tool calls reach the MCP server."
if [ ! -x "$node" ] || [ ! -r "$fs_server" ] || [ ! -r "$modules/@modelcontextprotocol/sdk/package.json" ]; then
        echo "(glove run part skipped: it needs $node and tests/node_modules; scripts/deps.sh test installs both)"
else
        data=$work/data
        mkdir "$data" "$work/agent-out"
        printf 'Q3 plan: ship glove run\n' >"$data/plan.txt"
        step=$((step + 1))
        echo
        echo "$step. A contained MCP client uses server-filesystem on \$DEMO/data, allowed to read but not to write"
        echo "   $ glove run --upstream fs=node,server-filesystem,\$DEMO/data \\"
        echo "         --upstream-ro fs:tests/node_modules --upstream-ro fs:\$DEMO/data \\"
        echo "         --allow fs.read_text_file --allow fs.list_directory --audit-log \$DEMO/audit.jsonl \\"
        echo "         -- node tests/agents/mcp-client.mjs  (lists tools, reads plan.txt, tries write_file)"
        scenario='[
 {"op":"list"},
 {"op":"call","tool":"fs.read_text_file","args":{"path":"'"$data"'/plan.txt"},"expect":"ok","text":"ship glove run"},
 {"op":"call","tool":"fs.write_file","args":{"path":"'"$data"'/plan.txt","content":"pwned"},"expect":"policy_denied"}
]'
        rc=0
        timeout --foreground -k 5 60 "$glove" run \
                --upstream "fs=$node,$fs_server,$data" \
                --upstream-ro "fs:$modules" --upstream-ro "fs:$data" \
                --allow fs.read_text_file --allow fs.list_directory \
                --audit-log "$work/audit.jsonl" \
                --read "$modules" --read "$PWD/tests/agents" --write "$work/agent-out" \
                -- "$node" "$PWD/tests/agents/mcp-client.mjs" --modules "$modules" --out "$work/agent-out/steps.jsonl" \
                "$scenario" >"$out" 2>&1 </dev/null || rc=$?
        # What the agent saw, one line per step.
        "$py" - "$work/agent-out/steps.jsonl" "$work" <<'EOF' || true
import json, sys
work = sys.argv[2]
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError:
    lines = []
for line in lines:
    r = json.loads(line)
    if r["op"] == "list":
        print("   | tools/list -> %s" % ", ".join(r["tools"]))
    elif r["op"] == "call":
        if r["outcome"] == "ok":
            print("   | tools/call %s -> ok: %s" % (r["tool"], r["text"].strip().replace(work, "$DEMO")))
        else:
            print("   | tools/call %s -> refused: %s (rule: %s)" % (r["tool"], r.get("reason"), r.get("rule")))
EOF
        if [ "$rc" -eq 0 ] && [ "$(cat "$data/plan.txt")" = "Q3 plan: ship glove run" ] &&
                grep -q '"tool":"fs.write_file","decision":"deny"' "$work/audit.jsonl"; then
                echo "   => the read was allowed, the write was refused before it reached the server"
                echo "      (\$DEMO/data/plan.txt is unchanged); the audit log holds both decisions:"
                "$py" -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "call":
        print("      %s %s (rule: %s)" % (r["decision"], r["tool"], r["rule"]))' "$work/audit.jsonl"
        else
                sed "s|$work|\$DEMO|g; s/^/   | /" "$out"
                echo "   => UNEXPECTED: expected exit 0, the read allowed and the write refused (glove exit $rc)"
                failed=1
        fi
fi

echo
if [ "$failed" -eq 0 ]; then
        echo "Everything behaved as expected: the workspace was usable, everything else was refused."
else
        echo "Something did NOT behave as expected (see UNEXPECTED above)."
fi
exit "$failed"

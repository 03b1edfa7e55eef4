#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in tests/package.json) against the reference everything-server,
# (a) directly and (b) through Glove.
#
#   tests/conformance/run.sh BUILD_DIR
#
# (a) starts tests/fixtures/conformance/everything-server.mjs on a free
#     loopback port and runs `conformance server --url URL` on the host.
# (b) runs the same suite as the contained agent of `glove run`, talking to
#     Glove's in-sandbox Streamable HTTP endpoint; Glove's upstream "ref" is
#     tests/fixtures/conformance/stdio-bridge.mjs, which starts the reference
#     server as its own child (so the whole upstream is one process tree that
#     can be contained) and bridges stdio to it, exposed under its own names.
#     When this glove has no in-sandbox HTTP endpoint (its `glove run --help`
#     does not name the option), (b) is skipped and says why.
#
# Prints the table "scenario | direct | glove" and TAP lines (one per
# scenario and side, for scripts/check.sh). Exits 1 when a scenario fails
# directly (the harness or the reference server is broken) or passes
# directly and fails through Glove; 2 on a usage or setup error.
#
# Environment: CONFORMANCE_SUITE (active, the default; all; pending) is the
# conformance --suite; CONFORMANCE_KEEP=1 keeps the results directory.
# The suite needs Node >= 22: the node from tests/node_modules/node (npm
# package `node`, pinned) runs it, the server and the bridge; the system
# Node is not used.
set -euo pipefail

# ---- what this script expects of `glove run` (one place to adjust) --------
# The option that turns on the in-sandbox Streamable HTTP endpoint, and its
# value.
ENDPOINT_OPT=--mcp-endpoint
ENDPOINT_VALUE=http
# The environment variable Glove sets inside the sandbox to the endpoint's
# URL (http://127.0.0.1:PORT/mcp).
ENDPOINT_URL_VAR=GLOVE_MCP_URL
# The option that exposes one upstream's tools, resources and prompts under
# their own names (the suite calls test_simple_text, not ref.test_simple_text).
OWN_NAMES_OPT=--upstream-own-names
# How the upstream "ref" runs. The bridge starts the reference server, which
# listens on a loopback port: a contained upstream's sandbox refuses to
# listen (glove exec's seccomp filter offline), so "ref" runs uncontained,
# explicitly and audited. What the suite tests is Glove's agent-facing side;
# containment of real upstreams is tested in run_contained.bats.
UPSTREAM_GRANT_OPTS=(--upstream-uncontained ref)
# The policy file (version 1) that allows everything the suite uses; written
# by write_policy below.
# ---------------------------------------------------------------------------

usage() { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ -d "$1" ] || { echo "conformance: build directory $1 does not exist" >&2; exit 2; }
glove="$(cd "$1" && pwd)/glove"
[ -x "$glove" ] || { echo "conformance: $glove is missing (run make build)" >&2; exit 2; }
suite=${CONFORMANCE_SUITE:-active}

nm_src=$repo/tests/node_modules
for f in "$nm_src/node/bin/node" "$nm_src/@modelcontextprotocol/conformance/dist/index.js" "$nm_src/@modelcontextprotocol/sdk/package.json"; do
        [ -e "$f" ] || { echo "conformance: $f is missing: run scripts/deps.sh test (npm ci in tests/)" >&2; exit 2; }
done

# A fresh directory both the host side and the sandbox can read: the
# checkout may be in a 0700 directory. node_modules as hard links when the
# file system allows (only new directories are chmod'ed), else a copy.
work=$(mktemp -d /tmp/glove-conformance.XXXXXX)
server_pid=""
cleanup() {
        [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
        rm -rf "$work/node_modules"
        if [ "${CONFORMANCE_KEEP:-}" = 1 ]; then echo "conformance: results kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
chmod 0755 "$work"
mkdir -p "$work/fixtures" "$work/direct" "$work/glove"
if cp -al "$nm_src" "$work/node_modules" 2>/dev/null &&
        [ -z "$(find "$work/node_modules" -type f ! -perm -o+r -print -quit)" ]; then
        find "$work/node_modules" -type d -exec chmod a+rx {} +
else
        rm -rf "$work/node_modules"
        cp -r "$nm_src" "$work/node_modules"
        chmod -R a+rX "$work/node_modules"
fi
cp "$repo"/tests/fixtures/conformance/*.mjs "$work/fixtures/"
chmod -R a+rX "$work/fixtures"
chmod a+rwx "$work/glove"
nm=$work/node_modules
node=$nm/node/bin/node
conformance=$nm/@modelcontextprotocol/conformance/dist/index.js
server=$work/fixtures/everything-server.mjs
bridge=$work/fixtures/stdio-bridge.mjs
"$node" --version | grep -q '^v2[2-9]\.' || { echo "conformance: $node is not Node >= 22 ($("$node" --version))" >&2; exit 2; }

# results DIR: "SCENARIO pass|fail" per scenario directory the suite wrote
# (server-SCENARIO-TIMESTAMP/checks.json); a scenario passes when none of
# its checks is a FAILURE.
results() {
        local d s
        for d in "$1"/server-*/; do
                [ -d "$d" ] || continue
                s=$(basename "$d" | sed -E 's/^server-//; s/-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9-]+Z$//')
                if [ -f "$d/checks.json" ] && jq -e 'type == "array" and all(.[]; .status != "FAILURE")' "$d/checks.json" >/dev/null 2>&1; then
                        echo "$s pass"
                else
                        echo "$s fail"
                fi
        done
}

write_policy() { # FILE
        # Keys beyond "allow" follow the shared design of issue 13: top-level
        # "resources" and "prompts" (their rules), and "upstreams.ref" with
        # "client" (the server-to-client features relayed to the agent) and
        # "sandbox" (the contained upstream's grants).
        cat >"$1" <<EOF
{
  "version": 1,
  "allow": ["ref.*"],
  "resources": {"allow": ["ref:*"]},
  "prompts": {"allow": ["ref.*"]},
  "upstreams": {
    "ref": {
      "client": {"sampling": true, "elicitation": true, "roots": true, "logging": true, "instructions": true}
    }
  }
}
EOF
}

start=$(date +%s)

# ---- (a) directly ----------------------------------------------------------
"$node" "$server" --modules "$nm" >"$work/server.out" 2>"$work/server.err" </dev/null &
server_pid=$!
url=""
for _ in $(seq 1 200); do
        url=$(sed -n 's/^listening //p' "$work/server.out")
        [ -n "$url" ] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
done
[ -n "$url" ] || { echo "conformance: the reference server did not start:" >&2; cat "$work/server.err" >&2; exit 2; }
echo "# conformance: (a) direct, against $url (suite $suite)" >&2
(cd "$work/direct" && "$node" "$conformance" server --url "$url" --suite "$suite" -o "$work/direct" >"$work/direct.log" 2>&1) || true
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=""
results "$work/direct" | sort >"$work/direct.txt"
[ -s "$work/direct.txt" ] || { echo "conformance: the direct run produced no results:" >&2; tail -20 "$work/direct.log" >&2; exit 2; }

# ---- (b) through Glove -----------------------------------------------------
skip_glove=""
help=$("$glove" run --help 2>&1 || true)
if ! grep -q -- "$ENDPOINT_OPT" <<<"$help"; then
        skip_glove="glove run has no in-sandbox HTTP endpoint ($ENDPOINT_OPT $ENDPOINT_VALUE is not in glove run --help)"
elif ! grep -q -- "$OWN_NAMES_OPT" <<<"$help"; then
        skip_glove="glove run cannot expose an upstream under its own names ($OWN_NAMES_OPT is not in glove run --help)"
fi
if [ -z "$skip_glove" ]; then
        write_policy "$work/policy.json"
        echo "# conformance: (b) through glove run $ENDPOINT_OPT $ENDPOINT_VALUE" >&2
        # The conformance client is the contained agent; it finds the
        # endpoint in \$$ENDPOINT_URL_VAR and writes its results under
        # $work/glove (granted read-write).
        (cd "$work" && timeout --foreground -k 5 600 "$glove" run "$ENDPOINT_OPT" "$ENDPOINT_VALUE" \
                --upstream "ref=$node,$bridge,--modules,$nm,--,$node,$server,--modules,$nm,--exit-on-eof" \
                "$OWN_NAMES_OPT" ref "${UPSTREAM_GRANT_OPTS[@]}" --policy "$work/policy.json" \
                --read "$nm" --read "$work/fixtures" --write "$work/glove" \
                -- /bin/sh -c 'cd "$3" && exec "$1" "$2" server --url "$'"$ENDPOINT_URL_VAR"'" --suite "$4" -o "$3"' \
                sh "$node" "$conformance" "$work/glove" "$suite" </dev/null >"$work/glove.log" 2>&1) || true
        results "$work/glove" | sort >"$work/glove.txt"
else
        : >"$work/glove.txt"
fi

# ---- the table and the verdict --------------------------------------------
elapsed=$(($(date +%s) - start))
n=0 bad=0 direct_pass=0 glove_pass=0 total=0
tap=$work/tap.txt
: >"$tap"
printf '\n%-32s | %-6s | %s\n' scenario direct glove
printf '%s\n' "---------------------------------+--------+------"
while read -r scenario d; do
        total=$((total + 1))
        g=$(awk -v s="$scenario" '$1 == s {print $2}' "$work/glove.txt")
        if [ -n "$skip_glove" ]; then g=skip; elif [ -z "$g" ]; then g=fail; fi
        printf '%-32s | %-6s | %s\n' "$scenario" "$d" "$g"
        [ "$d" = pass ] && direct_pass=$((direct_pass + 1))
        [ "$g" = pass ] && glove_pass=$((glove_pass + 1))
        n=$((n + 1))
        if [ "$d" = pass ]; then
                echo "ok $n conformance: $scenario, direct" >>"$tap"
        else
                echo "not ok $n conformance: $scenario, direct (the reference server fails it)" >>"$tap"
                bad=$((bad + 1))
        fi
        n=$((n + 1))
        if [ -n "$skip_glove" ]; then
                echo "ok $n conformance: $scenario, through glove # skip $skip_glove" >>"$tap"
        elif [ "$g" = pass ]; then
                echo "ok $n conformance: $scenario, through glove" >>"$tap"
        elif [ "$d" = pass ]; then
                echo "not ok $n conformance: $scenario, through glove (passes directly)" >>"$tap"
                bad=$((bad + 1))
        else
                echo "ok $n conformance: $scenario, through glove # skip fails directly too" >>"$tap"
        fi
done <"$work/direct.txt"
echo
if [ -n "$skip_glove" ]; then
        echo "direct: $direct_pass of $total pass; through glove: skipped: $skip_glove"
else
        echo "direct: $direct_pass of $total pass; through glove: $glove_pass of $total pass"
fi
echo "conformance suite ($suite) ran in ${elapsed}s"
echo "1..$n"
cat "$tap"
if [ "$bad" -ne 0 ]; then
        echo "# direct run log: $work/direct.log; glove run log: $work/glove.log (CONFORMANCE_KEEP=1 keeps them)" >&2
        [ -s "$work/glove.log" ] && tail -40 "$work/glove.log" >&2
        exit 1
fi

# Helpers for the `glove run` tests (tests/integration/run_*.bats); load
# after helpers: `load helpers; load lib/mcp`.
#
# Real MCP peers come from tests/node_modules (tests/package.json, pinned by
# its lockfile, installed by scripts/deps.sh). tests/integration/run.sh
# exports its location, readable by the test user, as GLOVE_NODE_MODULES.
#
# Agents:   the SDK client tests/agents/mcp-client.mjs (run inside the
#           sandbox with node_modules granted read-only) and the adversarial
#           tests/agents/adversarial.py.
# Upstreams (host side): server-everything and server-filesystem run with
#           /usr/bin/node directly (no npx); tests/agents/mcp-upstream.py is a
#           tiny server with a slow, a crashing and a list-changing tool;
#           tests/agents/mcp-tap.py LOG CMD... logs every line an upstream
#           receives ("> ") and sends ("< ").

# Resolved: glove refuses grants through a symbolic link.
NODE_MODULES=${GLOVE_NODE_MODULES:+$(cd "$GLOVE_NODE_MODULES" 2>/dev/null && pwd -P)}
EVERYTHING=$NODE_MODULES/@modelcontextprotocol/server-everything/dist/index.js
FILESYSTEM=$NODE_MODULES/@modelcontextprotocol/server-filesystem/dist/index.js
UPY=$AGENTS/mcp-upstream.py
TAP=$AGENTS/mcp-tap.py

# need_node_modules: fails (never skips) when the npm peers are not there:
# they are a dependency of the suite, like bats.
need_node_modules() {
        [ -n "$NODE_MODULES" ] ||
                { echo "GLOVE_NODE_MODULES is empty: tests/node_modules is not installed (scripts/deps.sh runs npm ci in tests/)" >&2; return 1; }
        local f
        for f in "$NODE_MODULES/@modelcontextprotocol/sdk/package.json" "$EVERYTHING" "$FILESYSTEM"; do
                [ -r "$f" ] || { echo "$f is missing: run scripts/deps.sh (npm ci in tests/)" >&2; return 1; }
        done
        [ -x "$NODE" ] || { echo "$NODE is missing: node is required (scripts/deps.sh)" >&2; return 1; }
}

# Upstreams run contained (docs/mcp-mediation.md, Upstreams). The test
# upstreams need their scripts ($AGENTS), the npm peers ($NODE_MODULES) and a
# directory of their own to write their logs in: upstream_dir prints it
# ($BATS_TEST_TMPDIR/up, created), kept apart from the audit log and the
# client's records, which no upstream may reach.
upstream_dir() { mkdir -p "$BATS_TEST_TMPDIR/up" && echo "$BATS_TEST_TMPDIR/up"; }

# gr [-N] ARGS...: `glove run ARGS...` under a timeout, captured by bats
# `run` like gx: $status, $output, $stderr. Each --upstream NAME=... gets
# --upstream-ro NAME:$AGENTS, --upstream-ro NAME:$NODE_MODULES and
# --upstream-rw NAME:$(upstream_dir), unless --upstream-uncontained NAME is
# among ARGS or GR_GRANTS=0 (tests of the grants themselves).
gr() {
        local expect=() grants=() a prev="" up uncontained=" "
        if [[ "${1:-}" =~ ^-[0-9]+$ ]]; then expect=("$1"); shift; fi
        if [ "${GR_GRANTS:-1}" = 1 ]; then
                up=$(upstream_dir)
                for a in "$@"; do
                        [ "$a" = -- ] && break
                        [ "$prev" = --upstream-uncontained ] && uncontained+="$a "
                        prev=$a
                done
                prev=""
                for a in "$@"; do
                        [ "$a" = -- ] && break
                        if [ "$prev" = --upstream ] && [[ "$a" =~ ^([a-z0-9_-]+)= ]] &&
                                [[ "$uncontained" != *" ${BASH_REMATCH[1]} "* ]]; then
                                grants+=(--upstream-ro "${BASH_REMATCH[1]}:$AGENTS" --upstream-ro "${BASH_REMATCH[1]}:$NODE_MODULES"
                                         --upstream-rw "${BASH_REMATCH[1]}:$up")
                        fi
                        prev=$a
                done
        fi
        run "${expect[@]}" --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" run "${grants[@]}" "$@"
}

# The glove run options and agent command line for the SDK client, writing
# its records to $CLIENT_OUT (under $OUT, granted read-write):
#   gr --upstream ... --allow ... "${CLIENT[@]}" "$scenario"
mcp_setup() {
        need_node_modules || return 1
        OUT=$BATS_TEST_TMPDIR/out
        mkdir -p "$OUT"
        CLIENT_OUT=$OUT/client.jsonl
        CLIENT=(--read "$NODE_MODULES" --read "$AGENTS" --write "$OUT" --
                "$NODE" "$AGENTS/mcp-client.mjs" --modules "$NODE_MODULES" --out "$CLIENT_OUT")
        ADV_OUT=$OUT/adversarial.jsonl
        ADVERSARIAL=(--read "$AGENTS" --write "$OUT" -- "$PY" "$AGENTS/adversarial.py" --out "$ADV_OUT")
        AUDIT=$BATS_TEST_TMPDIR/audit.jsonl
}

# A number that appears in no other command line: marks the upstream
# processes of one test, to look for leftovers with host_pids.
mcp_marker() { echo "glove-mcp-$$-$RANDOM-$BATS_TEST_NUMBER"; }

# show_records FILE...: dumps JSON lines files for a failure report.
show_records() {
        local f
        for f in "$@"; do
                echo "--- $f:" >&2
                cat "$f" >&2 2>/dev/null || echo "(missing)" >&2
        done
}

# expect_client_pass: glove exited 0 and every step of the SDK client passed.
expect_client_pass() {
        if [ "$status" -ne 0 ] || [ ! -s "$CLIENT_OUT" ] || grep -q '"pass":false' "$CLIENT_OUT" ||
                ! grep -q '"step":"end".*"pass":true' "$CLIENT_OUT"; then
                show_records "$CLIENT_OUT" ${AUDIT:+"$AUDIT"}
                fail "the MCP client reported failed steps (or did not finish)"
        fi
}

# expect_adversarial_pass: as expect_client_pass, for adversarial.py.
expect_adversarial_pass() {
        if [ "$status" -ne 0 ] || grep -q '"pass": false' "$ADV_OUT" || ! grep -q '"case": "end", "pass": true' "$ADV_OUT"; then
                show_records "$ADV_OUT" ${AUDIT:+"$AUDIT"}
                fail "the adversarial agent reported failed cases (or did not finish)"
        fi
}

# record FILE STEP-OR-LABEL JQ: the value of JQ in the client record whose
# step number or label is STEP-OR-LABEL.
record() {
        jq -c --arg s "$2" "select((.step|tostring) == \$s or .label == \$s) | $3" "$1"
}

# audit_has FILTER [DESC]: some record of $AUDIT satisfies the jq FILTER.
audit_has() {
        jq -e -s "any(.[]; $1)" "$AUDIT" >/dev/null ||
                { show_records "$AUDIT"; fail "no audit record satisfies: ${2:-$1}"; }
}

# audit_lacks FILTER [DESC]: no record of $AUDIT satisfies the jq FILTER.
audit_lacks() {
        jq -e -s "any(.[]; $1) | not" "$AUDIT" >/dev/null ||
                { show_records "$AUDIT"; fail "an audit record satisfies: ${2:-$1}"; }
}

# tap_in LOG: the messages an upstream received, one JSON per line.
tap_in() { sed -n 's/^> //p' "$1"; }

# upstream_saw LOG JQ-FILTER: the upstream received a message matching it.
upstream_saw() {
        tap_in "$1" | jq -e -s "any(.[]; $2)" >/dev/null ||
                { show_records "$1"; fail "the upstream never received a message satisfying: $2"; }
}

# upstream_never_saw LOG JQ-FILTER
upstream_never_saw() {
        tap_in "$1" | jq -e -s "any(.[]; $2) | not" >/dev/null ||
                { show_records "$1"; fail "the upstream received a message satisfying: $2"; }
}

# no_leftovers MARKER: no host process carries MARKER in its command line.
no_leftovers() {
        local left
        left=$(host_pids "$1")
        [ -z "$left" ] || { ps -o pid,ppid,stat,args -p "$(echo $left | tr ' ' ,)" >&2 || true; fail "processes left behind: $left"; }
}

# expect_run_error CODE: glove exited CODE and said why on stderr in exactly
# one line `glove: <stable.code>: <message>`, besides documented warning lines
# (`glove: warning: ...`, e.g. limits.degraded for a user without a delegated
# cgroup, docs/limits.md) and the upstreams' own stderr lines (`[upstream
# NAME] ...`). Sets RUN_ERROR to that line.
expect_run_error() {
        expect_status "$1" || return 1
        local errs n
        errs=$(printf '%s\n' "${stderr-}" | grep -v -e '^glove: warning: ' -e '^\[upstream [a-z0-9_-]*\]' | grep . || true)
        n=$(printf '%s' "$errs" | grep -c . || true)
        [ "$n" -eq 1 ] || fail "expected exactly one stderr line besides warnings, got $n"
        [[ "$errs" =~ ^glove:\ [a-z0-9_-]+(\.[a-z0-9_-]+)+:\ [^[:space:]].*$ ]] ||
                fail "stderr is not 'glove: <stable.code>: <message>'"
        RUN_ERROR=$errs
}

# run_error_code: the stable code of RUN_ERROR.
run_error_code() { [[ "$RUN_ERROR" =~ ^glove:\ ([a-z0-9_.-]+):\  ]] && echo "${BASH_REMATCH[1]}"; }

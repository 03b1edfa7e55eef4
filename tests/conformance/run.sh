#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in tests/package.json) against the reference server, for both
# requirement sets it knows (`--requirements 2026-07-28` and
# `--requirements 2025-11-25`), each three ways:
#
#   tests/conformance/run.sh BUILD_DIR
#
# direct   the suite on the host against tests/fixtures/conformance/
#          reference-server.mjs, which serves both revisions over Streamable
#          HTTP on a free loopback port;
# http     the suite as the contained agent of `glove run --mcp-endpoint
#          http`, talking to Glove's in-sandbox Streamable HTTP endpoint
#          ($GLOVE_MCP_URL);
# command  the suite on the host against tests/fixtures/conformance/
#          command-bridge.mjs, a Streamable HTTP front that reaches Glove
#          only through the in-sandbox command endpoint: it runs `glove run
#          --mcp-endpoint command` whose agent, command-relay.mjs, starts
#          $GLOVE_MCP_COMMAND once per client session (an agent can listen
#          on no socket in the sandbox, so the suite cannot run there).
# Through Glove the upstream "ref" is the reference server on stdio, in its
# own sandbox, exposed under its own names: for 2026-07-28 a 2026-07-28-only
# server (--legacy reject: Glove discovers it with server/discover), for
# 2025-11-25 a dual-era one that Glove initializes as a legacy server; so
# each revision is judged with agent and upstream of that revision.
#
# Prints the table "revision | scenario | direct | http | command" (one row
# per scenario of each requirement set, its not_scored entries marked), the
# totals per revision and column, notes (why each scenario that fails does,
# and which ones judge the bridge rather than Glove on the command column),
# and TAP lines (one per scenario and column, for scripts/check.sh). Exits 1
# when a scored scenario passes directly and fails through Glove on either
# endpoint ("not ok"); a scenario failing directly is a skip that says why,
# and so is a not_scored one failing through Glove. Exits 2 on a usage or
# setup error.
#
# Environment: CONFORMANCE_REVISIONS (default "2026-07-28 2025-11-25");
# CONFORMANCE_KEEP=1 keeps the results directory (each scenario's
# checks.json, the logs, the audit logs). The suite needs Node >= 22: the
# node from tests/node_modules/node (npm package `node`, pinned) runs it, the
# server, the bridge and the relay; the system Node is not used.
set -euo pipefail

# ---- what this script expects of `glove run` (one place to adjust) --------
# The option choosing the in-sandbox endpoints, and its two values.
ENDPOINT_OPT=--mcp-endpoint
# The environment variable Glove sets inside the sandbox to the HTTP
# endpoint's URL (http://127.0.0.1:PORT/mcp).
ENDPOINT_URL_VAR=GLOVE_MCP_URL
# The option that exposes one upstream's tools, resources and prompts under
# their own names (the suite calls test_simple_text, not ref.test_simple_text).
OWN_NAMES_OPT=--upstream-own-names
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
revisions=${CONFORMANCE_REVISIONS:-2026-07-28 2025-11-25}

nm_src=$repo/tests/node_modules
for f in "$nm_src/node/bin/node" "$nm_src/@modelcontextprotocol/conformance/dist/index.js" "$nm_src/@modelcontextprotocol/server/package.json"; do
        [ -e "$f" ] || { echo "conformance: $f is missing: run scripts/deps.sh test (npm ci in tests/)" >&2; exit 2; }
done
for r in $revisions; do
        [ -f "$nm_src/@modelcontextprotocol/conformance/requirements/$r.yaml" ] ||
                { echo "conformance: the suite has no requirement set $r (requirements/$r.yaml)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "conformance: python3 is missing (it prints the table)" >&2; exit 2; }

# A fresh directory both the host side and the sandbox can read: the
# checkout may be in a 0700 directory. node_modules as hard links when the
# file system allows (only new directories are chmod'ed), else a copy.
work=$(mktemp -d /tmp/glove-conformance.XXXXXX)
pids=()
cleanup() {
        local p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        rm -rf "$work/node_modules"
        if [ "${CONFORMANCE_KEEP:-}" = 1 ]; then echo "conformance: results kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
chmod 0755 "$work"
mkdir -p "$work/fixtures"
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
nm=$work/node_modules
node=$nm/node/bin/node
conformance=$nm/@modelcontextprotocol/conformance/dist/index.js
server=$work/fixtures/reference-server.mjs
"$node" --version | grep -q '^v2[2-9]\.' || { echo "conformance: $node is not Node >= 22 ($("$node" --version))" >&2; exit 2; }

write_policy() { # FILE
        # Keys beyond "allow" follow the shared design of issue 13: top-level
        # "resources" and "prompts" (their rules), and "upstreams.ref" with
        # "client" (the server-to-client features relayed to the agent).
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
write_policy "$work/policy.json"

# What this glove offers; a column it cannot serve is skipped, saying why.
skip_http="" skip_command=""
help=$("$glove" run --help 2>&1 || true)
if ! grep -q -- "$ENDPOINT_OPT" <<<"$help"; then
        skip_http="glove run has no in-sandbox endpoint ($ENDPOINT_OPT is not in glove run --help)"
        skip_command=$skip_http
elif ! grep -q -- "$OWN_NAMES_OPT" <<<"$help"; then
        skip_http="glove run cannot expose an upstream under its own names ($OWN_NAMES_OPT is not in glove run --help)"
        skip_command=$skip_http
else
        grep -q -- "$ENDPOINT_OPT.*http" <<<"$help" || skip_http="glove run has no in-sandbox HTTP endpoint ($ENDPOINT_OPT http)"
        grep -q -- "$ENDPOINT_OPT.*command" <<<"$help" || skip_command="glove run has no in-sandbox command endpoint ($ENDPOINT_OPT command)"
fi

# wait_line FILE PID: the URL of FILE's line "listening URL", once PID
# printed it (at most 20 s); empty when PID ended first.
wait_line() {
        local url="" i
        for i in $(seq 1 400); do
                url=$(sed -n 's/^listening //p' "$1")
                [ -n "$url" ] && break
                kill -0 "$2" 2>/dev/null || break
                sleep 0.05
        done
        echo "$url"
}

# upstream REVISION: the --upstream of the reference server on stdio.
upstream() {
        local era=""
        [ "$1" = 2025-11-25 ] || era=",--legacy,reject"
        echo "ref=$node,$server,--modules,$nm,--stdio$era"
}

# The suite, with a bound on each run: the per-scenario timeout is 30 s.
suite() { # URL REVISION OUTDIR
        timeout --foreground -k 5 600 "$node" "$conformance" server --url "$1" --requirements "$2" -o "$3"
}

# ---- the three columns, as jobs ---------------------------------------------
run_direct() { # REVISION URL
        local out=$work/$1/direct
        (cd "$out" && suite "$2" "$1" "$out") >"$out.log" 2>&1 || true
}

run_http() { # REVISION
        local out=$work/$1/http
        # The suite is the contained agent; it finds the endpoint in
        # $ENDPOINT_URL_VAR and writes its results under $out (granted
        # read-write).
        (cd "$work" && timeout --foreground -k 5 600 "$glove" run "$ENDPOINT_OPT" http \
                --upstream "$(upstream "$1")" "$OWN_NAMES_OPT" ref --upstream-ro "ref:$nm" --upstream-ro "ref:$work/fixtures" \
                --policy "$work/policy.json" --audit-log "$out.audit.jsonl" --read "$nm" --write "$out" \
                -- /bin/sh -c 'cd "$3" && exec "$1" "$2" server --url "$'"$ENDPOINT_URL_VAR"'" --requirements "$4" -o "$3"' \
                sh "$node" "$conformance" "$out" "$1" </dev/null >"$out.log" 2>&1) || true
}

run_command() { # REVISION
        local out=$work/$1/command bridge url
        "$node" "$work/fixtures/command-bridge.mjs" -- "$glove" run "$ENDPOINT_OPT" command \
                --upstream "$(upstream "$1")" "$OWN_NAMES_OPT" ref --upstream-ro "ref:$nm" --upstream-ro "ref:$work/fixtures" \
                --policy "$work/policy.json" --audit-log "$out.audit.jsonl" --read "$nm" --read "$work/fixtures" \
                -- "$node" "$work/fixtures/command-relay.mjs" </dev/null >"$out.bridge" 2>"$out.bridge.err" &
        bridge=$!
        url=$(wait_line "$out.bridge" "$bridge")
        if [ -z "$url" ]; then
                echo "conformance: the command bridge did not start:" >"$out.log"
                cat "$out.bridge.err" >>"$out.log"
                return 0
        fi
        (cd "$out" && suite "$url" "$1" "$out") >"$out.log" 2>&1 || true
        kill "$bridge" 2>/dev/null || true
        wait "$bridge" 2>/dev/null || true
        cat "$out.bridge.err" >>"$out.log"
}

start=$(date +%s)

"$node" "$server" --modules "$nm" >"$work/server.out" 2>"$work/server.err" </dev/null &
pids+=($!)
url=$(wait_line "$work/server.out" "${pids[0]}")
[ -n "$url" ] || { echo "conformance: the reference server did not start:" >&2; cat "$work/server.err" >&2; exit 2; }

# The six runs in parallel: they share no state (each glove run has its own
# sandbox, endpoint and upstream; the direct runs share the server, which
# keeps no state between requests beyond its own sessions).
jobs_=()
for r in $revisions; do
        mkdir -p "$work/$r/direct" "$work/$r/http" "$work/$r/command"
        echo "# conformance: $r: direct against $url; through glove run $ENDPOINT_OPT http and command" >&2
        run_direct "$r" "$url" &
        jobs_+=($!)
        if [ -z "$skip_http" ]; then run_http "$r" & jobs_+=($!); fi
        if [ -z "$skip_command" ]; then run_command "$r" & jobs_+=($!); fi
done
for j in "${jobs_[@]}"; do wait "$j" || true; done
kill "${pids[0]}" 2>/dev/null || true
wait "${pids[0]}" 2>/dev/null || true
pids=()
elapsed=$(($(date +%s) - start))

# ---- the table and the verdict --------------------------------------------
rc=0
python3 - "$work" "$nm/@modelcontextprotocol/conformance/requirements" "$elapsed" "$skip_http" "$skip_command" $revisions <<'EOF' || rc=$?
import glob, json, os, re, sys

work, reqdir, elapsed, skip_http, skip_command = sys.argv[1:6]
revisions = sys.argv[6:]
skips = {"http": skip_http, "command": skip_command}
columns = ("direct", "http", "command")

# On the command column the bridge, not Glove, answers these (HTTP that the
# command endpoint does not have): tests/fixtures/conformance/command-bridge.mjs.
BRIDGE = {
    "dns-rebinding-protection": "the Host/Origin check is the bridge's",
    "http-header-validation": "the header checks are the bridge's",
    "http-custom-header-server-validation": "Mcp-Param-* headers are the bridge's (it does not check them)",
    "server-session-lifecycle": "the session ids are the bridge's",
    "server-stateless": "its HTTP header checks (-32020; a 2026-07-28 header without an envelope, -32602) are the bridge's",
}
# ... and of those, the ones that judge nothing but HTTP headers the command
# endpoint has no counterpart for: not applicable there (n/a, not counted).
NOT_APPLICABLE = {
    "http-custom-header-server-validation": "only Mcp-Param-* headers are judged, and the command endpoint has no HTTP headers",
}


def requirements(path):
    """The server scenarios of a requirement set, in order: (name, not_scored reason or None)."""
    scored, extra, section, entry = [], [], None, {}
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            section = line.rstrip(":")
            continue
        if section == "server" and line.startswith("  - "):
            scored.append((line[4:].strip(), None))
        elif section == "not_scored":
            m = re.match(r"^  - scenario: (\S+)", line)
            if m:
                entry = {"scenario": m.group(1)}
                extra.append(entry)
            m = re.match(r"^    (leg|reason): (\S+)", line)
            if m and entry:
                entry[m.group(1)] = m.group(2)
    return scored + [(e["scenario"], e.get("reason", "?")) for e in extra if e.get("leg") == "server"]


def result(outdir, scenario):
    """(verdict, reason): pass, fail (the first failing check's message) or none."""
    dirs = sorted(d for d in glob.glob(os.path.join(outdir, "server-*")) if re.fullmatch(
        re.escape("server-" + scenario) + r"-\d{4}-\d{2}-\d{2}T[0-9-]+Z", os.path.basename(d)))
    if not dirs:
        return "none", "no result: the suite recorded nothing for it (see the log)"
    try:
        checks = json.load(open(os.path.join(dirs[-1], "checks.json")))
    except (OSError, ValueError) as e:
        return "fail", f"no checks.json ({e})"
    bad = [c for c in checks if isinstance(c, dict) and c.get("status") == "FAILURE"]
    if not isinstance(checks, list) or bad:
        c = bad[0] if bad else {}
        msg = " ".join(str(c.get("errorMessage") or c.get("description") or "a check failed").split())
        return "fail", f"{c.get('id', '?')}: {msg[:200]}"
    return "pass", ""


rows, notes, tap = [], [], []
totals = {}
for rev in revisions:
    t = totals.setdefault(rev, {c: [0, 0] for c in columns})
    for scenario, not_scored in requirements(os.path.join(reqdir, rev + ".yaml")):
        cells = {}
        for col in columns:
            if col != "direct" and skips[col]:
                cells[col] = ("skip", skips[col])
            elif col == "command" and scenario in NOT_APPLICABLE:
                cells[col] = ("n/a", NOT_APPLICABLE[scenario])
            else:
                cells[col] = result(os.path.join(work, rev, col), scenario)
        label = scenario + (f" (not scored: {not_scored})" if not_scored else "")
        rows.append((rev, label, *(cells[c][0] for c in columns)))
        for col in columns:
            if cells[col][0] not in ("skip", "n/a"):
                t[col][1] += 1
                t[col][0] += cells[col][0] == "pass"
        d, why_d = cells["direct"]
        name = f"conformance {rev} {scenario}"
        if d == "pass":
            tap.append(("ok", f"{name}: direct"))
        else:
            tap.append(("ok", f"{name}: direct # skip fails directly: {why_d}"))
            notes.append(f"{rev} {scenario}: fails directly: {why_d}")
        failing = {}  # column -> why, of a scenario passing directly
        for col in ("http", "command"):
            v, why = cells[col]
            where = f"through glove ({col})"
            if v in ("skip", "n/a"):
                tap.append(("ok", f"{name}: {where} # skip {'not applicable: ' if v == 'n/a' else ''}{why}"))
            elif v == "pass":
                tap.append(("ok", f"{name}: {where}"))
            elif d != "pass":
                tap.append(("ok", f"{name}: {where} # skip fails directly too"))
            elif not_scored:
                tap.append(("ok", f"{name}: {where} # skip not scored ({not_scored}); fails through glove: {why}"))
                failing[col] = why
            else:
                tap.append(("not ok", f"{name}: {where}: passes directly, fails through glove: {why}"))
                failing[col] = why
        if failing:
            what = "fails through glove, not scored" if not_scored else "FAILS through glove, passes directly"
            whys = sorted(set(failing.values()))
            if len(whys) == 1:
                notes.append(f"{rev} {scenario}: {what} ({', '.join(failing)}): {whys[0]}")
            else:
                notes.append(f"{rev} {scenario}: {what}: " + "; ".join(f"{c}: {w}" for c, w in failing.items()))
            if "command" in failing and scenario in BRIDGE:
                notes.append(f"    (on the command column {BRIDGE[scenario]})")

w = max([len("scenario")] + [len(r[1]) for r in rows])
print()
print(f"{'revision':<10} | {'scenario':<{w}} | direct | http   | command")
print(f"{'-' * 10}-+-{'-' * w}-+--------+--------+--------")
for r in rows:
    print(f"{r[0]:<10} | {r[1]:<{w}} | {r[2]:<6} | {r[3]:<6} | {r[4]}")
print()
for rev in revisions:
    print(f"{rev}: " + "; ".join(
        f"{col} {'skipped' if col != 'direct' and skips[col] else f'{totals[rev][col][0]} of {totals[rev][col][1]} pass'}"
        for col in columns))
print()
print("notes:")
for n in notes:
    print(f"  {n}")
print("  command column: the suite reaches Glove through tests/fixtures/conformance/command-bridge.mjs")
print("  (HTTP, on the host) and command-relay.mjs (the contained agent, one $GLOVE_MCP_COMMAND per")
print("  session); it answers itself what the command endpoint has no counterpart for, so on the")
print("  command column these scenarios judge the bridge, in part or whole:")
for k, v in BRIDGE.items():
    print(f"    {k}: {v}" + (" (n/a there: " + NOT_APPLICABLE[k] + ")" if k in NOT_APPLICABLE else ""))
print(f"conformance suite ({' and '.join(revisions)}, three columns in parallel) ran in {elapsed}s")
print(f"1..{len(tap)}")
for i, (ok, text) in enumerate(tap, 1):
    print(f"{ok} {i} {text}")
sys.exit(1 if any(ok == "not ok" for ok, _ in tap) else 0)
EOF
if [ "$rc" -ne 0 ]; then
        echo "# logs: $work/REVISION/{direct,http,command}.log (CONFORMANCE_KEEP=1 keeps them)" >&2
fi
exit "$rc"

#!/usr/bin/env bats
# The five real agent CLIs (issue 11, "Real agent CLIs, in CI"): codex,
# claude-code, pi, copilot and opencode, pinned in tests/package.json, each
# complete one scripted turn against tests/agents/fake_model.py (HTTPS on
# loopback with a CA made here), reached only through Glove's egress proxy:
#   - its first model request carries the marker of a SKILL.md placed in the
#     CLI's native skills directory (the CLI discovered the skill);
#   - it runs the fake model's one call of its own shell tool, which writes
#     the proof file into its workspace, and sends back a tool result holding
#     the file's content "glove-proof-TOKEN" (a text only the command's run
#     produces: the command spells it differently).
# Once under `glove exec` (the skill in a granted configuration directory;
# against an https:// endpoint and again against a plain http:// one),
# once as a gloved managed session: runtime_discovery over node_modules/.bin,
# the skill from a library bundle, an egress policy naming only the fake
# server, an ephemeral_write copy workspace. Each run prints its wall time and
# peak memory (no timing assertions).
# The four with an MCP client (codex, claude-code, copilot, opencode; pi has
# none) also complete one turn each under `glove run`, once over each
# in-sandbox endpoint (--mcp-endpoint command: $GLOVE_MCP_COMMAND; http:
# $GLOVE_MCP_URL), in which the fake model calls an upstream's MCP tool
# through Glove twice in one response: one call allowed, one refused by an
# argument rule of a policy file (mcp_turn below). Run with `make agents`
# (tests/agents/run.sh).

load helpers
load "$GLOVE_IT_LIB/gloved"

FAKE="$AGENTS/fake_model.py"
CLIS="$AGENTS/clis.py"
POLICY="$AGENTS/agent_policy.py"
SESSCTL="$LIB/sessctl.py"
NM=$GLOVE_NODE_MODULES
MARKER=glove-skill-marker-5d1c9e
SKILL_KEY=glove-proof
SKILL_MD="---
name: $SKILL_KEY
description: $MARKER Use this skill whenever you are asked to write the glove proof file.
---
# Glove proof

$MARKER: the proof file is written with the shell tool.
"

setup_file() {
        export CERTS=$BATS_FILE_TMPDIR/certs
        "$PY" "$FAKE" certs "$CERTS"
        chmod 0755 "$BATS_FILE_TMPDIR" "$CERTS"
}

setup() {
        T=$BATS_TEST_TMPDIR
        chmod 0755 "$T"
        TOKEN=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
}

teardown() {
        # The fake server ends quietly (no "Killed" job notice in the TAP).
        if [ -n "${FAKE_PID:-}" ]; then
                { kill -TERM "$FAKE_PID" && wait "$FAKE_PID"; } 2>/dev/null || true
        fi
        gloved_teardown
        return 0
}

# start_fake PROOF_PATH [OPTION...]: the fake model server (OPTIONs are
# fake_model.py serve's), its log at $T/model.jsonl;
# sets PORT and BASE. With SCHEME=http the server speaks plain HTTP (a local
# Ollama or vLLM endpoint), reached through the proxy's absolute-form
# forwarding instead of a CONNECT tunnel.
start_fake() {
        local plain=()
        [ "${SCHEME:-https}" = http ] && plain=(--plain)
        "$PY" "$FAKE" serve --cert "$CERTS" --port-file "$T/port" --log "$T/model.jsonl" --marker "$MARKER" \
                --proof-path "$1" --proof-token "$TOKEN" "${plain[@]}" "${@:2}" 2>"$T/fake.err" &
        FAKE_PID=$!
        local idx
        for ((idx = 0; idx < 200; idx++)); do
                [ -s "$T/port" ] && break
                sleep 0.05
        done
        [ -s "$T/port" ] || { cat "$T/fake.err" >&2; return 1; }
        PORT=$(cat "$T/port")
        BASE=${SCHEME:-https}://127.0.0.1:$PORT
        : >>"$T/model.jsonl"
}

# expect_turn CLI: the fake model's log shows the whole turn: the request
# answered with the tool call saw the skill marker; a later request carried
# the tool result with the proof text.
expect_turn() {
        local log=$T/model.jsonl call final
        call=$(jq -c 'select(.reply == "tool_call")' "$log" | head -n 1)
        [ -n "$call" ] || fail "$1: the fake model never answered with a tool call; its log: $(cat "$log")"
        [ "$(jq -r .marker_seen <<<"$call")" = true ] ||
                fail "$1: its first model request did not carry the skill marker (the SKILL.md was not discovered): $call"
        final=$(jq -c --arg p "glove-proof-$TOKEN" 'select(.reply == "final" and any(.tool_results[]; contains($p)))' "$log" | head -n 1)
        [ -n "$final" ] || fail "$1: no request carried a tool result with glove-proof-$TOKEN; the log: $(cat "$log")"
}

# spec [--mcp=ENDPOINT] CLI [CONFIG_ROOT]: clis.py's description of CLI
# against $BASE.
spec() {
        local mcp=()
        [[ "$1" == --mcp=* ]] && { mcp=("$1"); shift; }
        "$PY" "$CLIS" spec "${mcp[@]}" "$1" "$BASE" "$CERTS/ca.pem" ${2:+"$2"}
}

mib() { echo $(($1 >> 20)); }

# expect_http_forwarded CLI [forwarded]: the run's audit log shows the model
# requests reaching the plain-HTTP fake server through the proxy (open
# records to its port), none of them refused. Clients differ in how they proxy an
# http:// URL: codex, claude-code, copilot and opencode send absolute-form
# requests, which the proxy forwards (required with "forwarded"; the proxy
# answered them 405 before it forwarded plain HTTP); pi tunnels with CONNECT
# even for http://. Each run prints which.
expect_http_forwarded() {
        local fwd tun deny
        fwd=$(jq -c --argjson p "$PORT" 'select(.event == "egress" and .phase == "open" and .method != "CONNECT" and .port == $p)' \
                "$T/audit.jsonl" | wc -l)
        tun=$(jq -c --argjson p "$PORT" 'select(.event == "egress" and .phase == "open" and .method == "CONNECT" and .port == $p)' \
                "$T/audit.jsonl" | wc -l)
        # (Refusals of the CLIs' own telemetry and update checks to other
        # hosts are expected: only the fake server is allowed.)
        deny=$(jq -c --argjson p "$PORT" 'select(.event == "egress" and .phase == "deny" and .port == $p)' "$T/audit.jsonl")
        [ -z "$deny" ] || fail "$1: the proxy refused a request to the model server: $deny"
        [ $((fwd + tun)) -ge 1 ] || fail "$1: no request to the fake server in the audit log"
        if [ "${2:-}" = forwarded ]; then
                [ "$fwd" -ge 1 ] || fail "$1: no forwarded plain-HTTP request in the audit log"
        fi
        echo "# $1 over http://: $fwd forwarded requests, $tun CONNECT tunnels" >&3
}

# ------------------------------------------------------------------ glove exec

# exec_turn CLI: the CLI under glove exec with --workspace $T/ws, its
# configuration directory (holding the SKILL.md) granted writable at
# $T/cfg, egress only to the fake server.
exec_turn() {
        local cli=$1 s exe
        mkdir -p "$T/ws" "$T/cfg"
        start_fake "$T/ws/agent-proof.txt"
        s=$(spec "$cli" "$T/cfg")
        mkdir -p "$T/cfg/$(jq -r .skills_rel <<<"$s")/$SKILL_KEY"
        printf '%s' "$SKILL_MD" >"$T/cfg/$(jq -r .skills_rel <<<"$s")/$SKILL_KEY/SKILL.md"
        chmod -R a+rwX "$T/ws" "$T/cfg"
        local envs=() names=() kv
        while IFS= read -r kv; do
                [[ "$kv" == PATH=* ]] && continue # glove exec sets PATH itself
                envs+=("$kv")
                names+=(--env "${kv%%=*}")
        done < <(jq -r '.environment[], .config_env[]' <<<"$s")
        local args=()
        mapfile -t args < <(jq -r '.arguments[]' <<<"$s")
        exe=$(jq -r .executable <<<"$s")
        run --separate-stderr timeout --foreground -k 5 300 env "${envs[@]}" "$GLOVE" exec \
                --workspace "$T/ws" --write "$T/cfg" --read "$NM" --read "$CERTS/ca.pem" \
                --egress-allow "127.0.0.1:$PORT" \
                --memory "$(jq -r .limits.memory_bytes <<<"$s")" --pids "$(jq -r .limits.pids <<<"$s")" \
                --disk "$(jq -r .limits.disk_bytes <<<"$s")" --wall-time 240000 \
                --status-json "$T/status.json" --audit-log "$T/audit.jsonl" "${names[@]}" -- "$NM/.bin/$exe" "${args[@]}"
        expect_status 0
        expect_turn "$cli"
        [ "$(cat "$T/ws/agent-proof.txt")" = "glove-proof-$TOKEN" ] || fail "$cli: the proof file in the workspace is wrong"
        echo "# $cli under glove exec: wall $(jq .wall_time_ms "$T/status.json") ms," \
                "peak memory $(mib "$(jq .peak_memory_bytes "$T/status.json")") MiB," \
                "cpu $(jq .cpu_time_ms "$T/status.json") ms" >&3
}

@test "agents exec: codex finds its skill and writes the proof file through its shell tool" {
        exec_turn codex
}

@test "agents exec: claude-code finds its skill and writes the proof file through its shell tool" {
        exec_turn claude-code
}

@test "agents exec: pi finds its skill and writes the proof file through its shell tool" {
        exec_turn pi
}

@test "agents exec: copilot finds its skill and writes the proof file through its shell tool" {
        exec_turn copilot
}

@test "agents exec: opencode finds its skill and writes the proof file through its shell tool" {
        exec_turn opencode
}

@test "agents exec http: codex completes its turn against a plain http:// model endpoint (absolute-form forwarding)" {
        SCHEME=http exec_turn codex
        expect_http_forwarded codex forwarded
}

@test "agents exec http: claude-code completes its turn against a plain http:// model endpoint (absolute-form forwarding)" {
        SCHEME=http exec_turn claude-code
        expect_http_forwarded claude-code forwarded
}

@test "agents exec http: pi completes its turn against a plain http:// model endpoint (absolute-form forwarding)" {
        SCHEME=http exec_turn pi
        expect_http_forwarded pi
}

@test "agents exec http: copilot completes its turn against a plain http:// model endpoint (absolute-form forwarding)" {
        SCHEME=http exec_turn copilot
        expect_http_forwarded copilot forwarded
}

@test "agents exec http: opencode completes its turn against a plain http:// model endpoint (absolute-form forwarding)" {
        SCHEME=http exec_turn opencode
        expect_http_forwarded opencode forwarded
}

# ------------------------------------------------------- MCP tools through Glove

# mcp_turn CLI ENDPOINT: the CLI under `glove run --mcp-endpoint ENDPOINT`
# (command: its MCP configuration starts $GLOVE_MCP_COMMAND; http: it
# connects to $GLOVE_MCP_URL, past the egress proxy that its model requests
# take), its MCP server "glove" being Glove with the upstream
# tests/agents/mcp-upstream.py as "up", whose log shows what reached it. A
# policy file allows up.echo with the argument rule /text prefix
# "glove-mcp-ok-". In one turn the fake model calls the echo tool twice in
# one response (fake_model.py --mcp-allowed/--mcp-refused): with
# glove-mcp-ok-TOKEN (allowed) and glove-mcp-no-TOKEN (refused by the rule).
# Proved: the upstream received the allowed call and never the refused
# text; the audit log (--audit-arguments) records both decisions with those
# arguments; the model's next request carries the allowed call's result
# and the refusal's text.
mcp_turn() {
        local cli=$1 ep=$2 s exe ok="glove-mcp-ok-$TOKEN" no="glove-mcp-no-$TOKEN"
        mkdir -p "$T/ws" "$T/cfg" "$T/up"
        start_fake "$T/ws/agent-proof.txt" --mcp-allowed "$ok" --mcp-refused "$no"
        printf '%s\n' '{"version": 1, "allow": ["up.echo"],' \
                ' "arguments": {"up.echo": [{"pointer": "/text", "kind": "prefix", "value": "glove-mcp-ok-"}]}}' \
                >"$T/policy.json"
        s=$(spec --mcp="$ep" "$cli" "$T/cfg")
        mkdir -p "$(jq -r '.config_env[0] | sub("^[^=]*="; "")' <<<"$s")"
        chmod -R a+rwX "$T/ws" "$T/cfg" "$T/up"
        chmod a+r "$T/policy.json"
        local envs=() names=() kv
        while IFS= read -r kv; do
                [[ "$kv" == PATH=* ]] && continue # glove run sets PATH itself
                envs+=("$kv")
                names+=(--env "${kv%%=*}")
        done < <(jq -r '.environment[], .config_env[]' <<<"$s")
        local args=()
        mapfile -t args < <(jq -r '.arguments[]' <<<"$s")
        exe=$(jq -r .executable <<<"$s")
        run --separate-stderr timeout --foreground -k 5 300 env "${envs[@]}" "$GLOVE" run --mcp-endpoint "$ep" \
                --upstream "up=$PY,$AGENTS/mcp-upstream.py,--log,$T/up/upstream.log" \
                --upstream-ro "up:$AGENTS" --upstream-rw "up:$T/up" --policy "$T/policy.json" --audit-arguments \
                --workspace "$T/ws" --write "$T/cfg" --read "$NM" --read "$CERTS/ca.pem" --read "$AGENTS" \
                --egress-allow "127.0.0.1:$PORT" \
                --memory "$(jq -r .limits.memory_bytes <<<"$s")" --pids "$(jq -r .limits.pids <<<"$s")" \
                --disk "$(jq -r .limits.disk_bytes <<<"$s")" --wall-time 240000 \
                --status-json "$T/status.json" --audit-log "$T/audit.jsonl" "${names[@]}" -- \
                "$AGENTS/mcp-launch.sh" "$NM/.bin/$exe" "${args[@]}" </dev/null
        echo "# $cli over the $ep endpoint: wall $(jq .wall_time_ms "$T/status.json") ms," \
                "peak memory $(mib "$(jq .peak_memory_bytes "$T/status.json")") MiB" >&3
        expect_status 0
        local log=$T/model.jsonl call
        # The model was offered the MCP tool and called it twice.
        call=$(jq -c 'select(.reply == "tool_call")' "$log" | head -n 1)
        [ -n "$call" ] || fail "$cli/$ep: the fake model never answered with an MCP tool call (was the tool offered?); its log: $(cat "$log")"
        echo "# $cli/$ep: the MCP tool offered as $(jq -c '[.calls[] | [.namespace, .tool] | map(select(.)) | join("/")] | unique' <<<"$call")" >&3
        # The upstream's side: the allowed call arrived, the refused one did not.
        grep -F '"tools/call"' "$T/up/upstream.log" | grep -qF "\"$ok\"" ||
                fail "$cli/$ep: the allowed call never reached the upstream; it received: $(cat "$T/up/upstream.log" 2>&1)"
        ! grep -qF "$no" "$T/up/upstream.log" || fail "$cli/$ep: the refused call reached the upstream: $(grep -F "$no" "$T/up/upstream.log")"
        [ "$(grep -cF '"tools/call"' "$T/up/upstream.log")" -eq 1 ] ||
                fail "$cli/$ep: the upstream received other calls than the allowed one: $(grep -F '"tools/call"' "$T/up/upstream.log")"
        # Glove's audit log: both decisions, with their arguments.
        jq -se --arg t "$ok" 'any(.[]; .event == "call" and .tool == "up.echo" and .decision == "allow" and .arguments.text == $t)' \
                "$T/audit.jsonl" >/dev/null || fail "$cli/$ep: no allowed call in the audit log: $(jq -c 'select(.event == "call")' "$T/audit.jsonl")"
        jq -se --arg t "$no" 'any(.[]; .event == "call" and .tool == "up.echo" and .decision == "deny" and .reason == "policy_denied"
                and .arguments.text == $t and .rule == "up.echo:/text prefix \"glove-mcp-ok-\"")' "$T/audit.jsonl" >/dev/null ||
                fail "$cli/$ep: no call refused by the argument rule in the audit log: $(jq -c 'select(.event == "call")' "$T/audit.jsonl")"
        # The model's next request carries both: the allowed call's result and
        # the refusal (the gateway's message; data.rule as the CLI shows it).
        jq -se --arg t "$ok" 'any(.[]; any(.tool_results[]?; contains($t)))' "$log" >/dev/null ||
                fail "$cli/$ep: the allowed call's result never reached the model; the log: $(cat "$log")"
        jq -se 'any(.[]; any(.tool_results[]?; contains("not allowed by policy")))' "$log" >/dev/null ||
                fail "$cli/$ep: the refusal never reached the model; the log: $(cat "$log")"
        jq -se --arg t "$ok" 'any(.[]; .reply == "final" and any(.tool_results[]; contains($t))
                and any(.tool_results[]; contains("not allowed by policy")))' "$log" >/dev/null ||
                fail "$cli/$ep: no one request carried both results (the two calls were not one step of the turn); the log: $(cat "$log")"
        # The MCP traffic took the endpoint under test: the run serves no
        # other (--mcp-endpoint http refuses the command, command serves no
        # HTTP, and the agent's stdin is not the channel), and no session
        # of the other transport is on record. A legacy client's session
        # is on record as endpoint_session; a 2026-07-28 client over HTTP
        # has no session (the revision has none), so none is required.
        local other=http
        [ "$ep" = http ] && other=command
        jq -se --arg e "$other" 'any(.[]; .event == "endpoint_session" and .transport == $e) | not' \
                "$T/audit.jsonl" >/dev/null || fail "$cli/$ep: a $other endpoint session in the audit log"
        jq -se 'any(.[]; .event == "egress" and .route == "mcp_endpoint" and .phase == "deny") | not' \
                "$T/audit.jsonl" >/dev/null ||
                fail "$cli/$ep: the proxy refused a request for the endpoint: $(jq -c 'select(.route == "mcp_endpoint")' "$T/audit.jsonl")"
        if [ "$ep" = http ]; then
                # How the CLI reached $GLOVE_MCP_URL: directly (NO_PROXY) or
                # handed over by the egress proxy (docs/egress.md).
                echo "# $cli/http: $(jq -s '[.[] | select(.event == "endpoint_session" and .phase == "open")] | length' \
                        "$T/audit.jsonl") endpoint sessions (a 2026-07-28 client opens none), $(jq -s '[.[] | select(.event == "egress"
                        and .route == "mcp_endpoint" and .phase == "open")] | length' "$T/audit.jsonl") connections" \
                        "handed over by the egress proxy" >&3
        fi
        # What else the gateway refused on the way (e.g. methods of the
        # 2026-07-28 revision it does not serve yet): printed, not judged.
        local refused
        refused=$(jq -c 'select(.event == "era_refused" or .event == "endpoint_refused") | del(.ts, .run_id)' "$T/audit.jsonl")
        [ -z "$refused" ] || echo "# $cli/$ep: refused besides the call: $(tr '\n' ' ' <<<"$refused")" >&3
}

@test "agents mcp command: codex calls an MCP tool through \$GLOVE_MCP_COMMAND; an argument rule refuses a second call" {
        mcp_turn codex command
}

@test "agents mcp command: claude-code calls an MCP tool through \$GLOVE_MCP_COMMAND; an argument rule refuses a second call" {
        mcp_turn claude-code command
}

@test "agents mcp command: copilot calls an MCP tool through \$GLOVE_MCP_COMMAND; an argument rule refuses a second call" {
        mcp_turn copilot command
}

@test "agents mcp command: opencode calls an MCP tool through \$GLOVE_MCP_COMMAND; an argument rule refuses a second call" {
        mcp_turn opencode command
}

@test "agents mcp http: codex calls an MCP tool at \$GLOVE_MCP_URL; an argument rule refuses a second call" {
        mcp_turn codex http
}

@test "agents mcp http: claude-code calls an MCP tool at \$GLOVE_MCP_URL; an argument rule refuses a second call" {
        mcp_turn claude-code http
}

@test "agents mcp http: copilot calls an MCP tool at \$GLOVE_MCP_URL; an argument rule refuses a second call" {
        mcp_turn copilot http
}

@test "agents mcp http: opencode calls an MCP tool at \$GLOVE_MCP_URL; an argument rule refuses a second call" {
        mcp_turn opencode http
}

# ------------------------------------------------------------ managed sessions

# state ID: the session's state (session_status).
state() {
        "$PY" "$SESSCTL" call "$RT" session_status "{\"session_id\":\"$1\"}" | jq -r .result.state
}

# wait_ended ID SECONDS: until the session is exited or failed.
wait_ended() {
        local idx s
        for ((idx = 0; idx < $2 * 10; idx++)); do
                s=$(state "$1")
                [ "$s" = exited ] || [ "$s" = failed ] && return 0
                sleep 0.1
        done
        fail "session $1 did not end in $2 s (state $s)"
}

# receipt_of ID: the terminal receipt of ID (compact JSON).
receipt_of() {
        "$PY" "$SESSCTL" call "$RT" receipts_page '{"after_sequence":0,"limit":256}' |
                jq -c --arg id "$1" '.result.envelopes[].envelope.receipt | select(.session_id == $id)'
}

# managed_turn CLI: one managed session of CLI: the template discovers the
# CLI in node_modules/.bin; the skill comes from a library bundle that gloved
# expands into the adapter's native skills directory in the private home;
# the workspace is an ephemeral copy of $T/host/ws at /workspace; egress
# names only the fake server. The host workspace stays unchanged.
managed_turn() {
        local cli=$1 id=s1
        require_gloved
        grep -q -- --library-bundle-root "$GLOVED" ||
                skip "this gloved has no --library-bundle-root (library bundles not built yet)"
        mkdir -p "$T/host/ws"
        printf 'a workspace file\n' >"$T/host/ws/README"
        chmod -R a+rX "$T/host"
        mkdir -m 700 -p "$T/cfg" "$T/bundles"
        start_fake /workspace/agent-proof.txt
        printf '%s' "$SKILL_MD" >"$T/skill.md"
        local bd
        bd=$("$PY" "$POLICY" bundle "$T/bundles" "$SKILL_KEY" "$T/skill.md")
        run --separate-stderr "$PY" "$POLICY" policy "$GLOVED" "$T/cfg/policy.json" "$cli" "$BASE" "$CERTS/ca.pem" \
                "$NM" "$T/host/ws" "$PORT"
        expect_status 0
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat" --library-bundle-root "$T/bundles"
        ctl --json capabilities
        expect_status 0
        if [[ "$output" == *'"lifecycle_operational":false'* && "$output" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): managed sessions are not operational"
        fi
        [[ "$output" == *'"agent_runtime_adapter_schema_version":1'* ]] ||
                skip "this gloved has no native adapter runtime (agent_runtime_adapter_schema_version is not 1: no discovery yet)"
        [[ "$output" == *'"library_bundle_root":true'* ]] || fail "gloved does not report its bundle root: $output"
        "$PY" "$POLICY" plan "$T/cfg/policy.json" "$T/cfg/$id.plan" "$bd"
        ctl create-session --session-id "$id" --idempotency-key "k-$id" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$id.plan"
        expect_status 0
        ctl start "$id"
        expect_status 0
        wait_ended "$id" 280
        run --separate-stderr timeout --foreground -k 5 60 "$PY" "$SESSCTL" watch "$RT" "$id"
        local out=$output r
        r=$(receipt_of "$id")
        [ -n "$r" ] || fail "$cli: no receipt for the session; its status: $("$PY" "$SESSCTL" call "$RT" session_status "{\"session_id\":\"$id\"}"); its output: $out"
        echo "# $cli managed session: wall $(jq .usage.wall_time_ms <<<"$r") ms," \
                "peak memory $(mib "$(jq .usage.peak_memory_bytes <<<"$r")") MiB," \
                "cpu $(jq .usage.cpu_time_ms <<<"$r") ms" >&3
        jq -e '.termination.kind == "exit" and .exit_code == 0' <<<"$r" >/dev/null ||
                fail "$cli: the session did not exit 0: $(jq -c '{termination,exit_code,usage}' <<<"$r"); output: $out"
        expect_turn "$cli"
        # The binding commits the discovered executable, the bundle and the skill.
        jq -e --arg d "$bd" '[.launch_binding.projections[]? | .content_digest] | index($d) != null' <<<"$r" \
                >/dev/null || fail "$cli: the receipt does not commit the bundle: $(jq -c .launch_binding <<<"$r")"
        local skill_md
        skill_md=/home/agent/$(jq -r .skills_rel <<<"$(spec "$cli")")/$SKILL_KEY/SKILL.md
        jq -e --arg p "$skill_md" '[.launch_binding.skills[]? | .path] == [$p]' <<<"$r" >/dev/null ||
                fail "$cli: the receipt does not commit the skill at $skill_md: $(jq -c .launch_binding <<<"$r")"
        jq -e --arg c "$cli" '.launch_binding.adapter.runtime_id == $c and .launch_binding.adapter.executable.discovered' \
                <<<"$r" >/dev/null || fail "$cli: the receipt does not commit the discovered adapter: $(jq -c .launch_binding <<<"$r")"
        # The proof went to the ephemeral copy, never to the host directory.
        [ ! -e "$T/host/ws/agent-proof.txt" ] || fail "$cli: the agent wrote the host workspace"
        [ "$(ls "$T/host/ws")" = README ] || fail "$cli: the host workspace changed"
}

@test "agents managed: codex discovered in node_modules/.bin, its bundled skill seen, the proof written in its workspace copy" {
        managed_turn codex
}

@test "agents managed: claude-code discovered in node_modules/.bin, its bundled skill seen, the proof written in its workspace copy" {
        managed_turn claude-code
}

@test "agents managed: pi discovered in node_modules/.bin, its bundled skill seen, the proof written in its workspace copy" {
        managed_turn pi
}

@test "agents managed: copilot discovered in node_modules/.bin, its bundled skill seen, the proof written in its workspace copy" {
        managed_turn copilot
}

@test "agents managed: opencode discovered in node_modules/.bin, its bundled skill seen, the proof written in its workspace copy" {
        managed_turn opencode
}

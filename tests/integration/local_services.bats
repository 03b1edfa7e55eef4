#!/usr/bin/env bats
# Local services and guest channels (issue 28; docs/local-services.md,
# docs/guest-channels.md): a managed agent reaches one operator-approved host
# service through one bounded, audited channel. Real agents: a Node agent
# adopts descriptor 3 (inherited-stream-v1) and sends observations that
# gloved's observation server admits into the session's queue; a Node agent
# connects through the pathname transport to a host echo service. From
# inside, the probe attacks the seccomp boundary around descriptor 3.
# Framing faults poison the stream, each delivery is audited in three phases,
# grants never expose a socket, and the capability reports 1 only for the
# sealed composition. Managed sessions: the ASan build as root (the proxy
# and the observation server parse untrusted frames in long-lived
# processes).

load helpers
load "$GLOVE_IT_LIB/gloved"
load "$GLOVE_IT_LIB/managed_fs"

FS="$LIB/managed_fs.py"
SESSCTL="$LIB/sessctl.py"
ECHO_SVC="$LIB/echo_service.py"
CRASHPOINT="$(dirname "$GLOVE")/glove-crashpoint.so"
SAGE=sage.glove-observation.v1

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        is_root || skip "managed sessions with local services are proved in the root cell"
        mkdir -m 700 -p "$T/cfg"
        # Socket paths must fit sun_path: a short owner-only directory.
        S=$(mktemp -d /tmp/gls.XXXXXX)
        mkdir -m 700 "$S/svc"
}

teardown() {
        gloved_teardown
        [ -n "${ECHO_PID:-}" ] && kill "$ECHO_PID" 2>/dev/null
        if [ -n "${B:-}" ]; then
                umount "$B" 2>/dev/null
                rmdir "$B"
        fi
        if [ -n "${A:-}" ]; then
                umount "$A" 2>/dev/null
                rmdir "$A"
        fi
        if [ -n "${O:-}" ]; then
                umount "$O/deep/in" 2>/dev/null
                rm -rf "$O"
        fi
        rm -rf "$S"
        return 0
}

# services_file ENDPOINTS_JSON: the local-services file (0600).
services_file() {
        printf '{"endpoints":%s,"schema_version":1}\n' "$1" >"$T/cfg/services.json"
        chmod 600 "$T/cfg/services.json"
}

# ls_gloved ENDPOINTS_JSON SPEC_JSON: gloved with that local-services file
# and the managed_fs.py policy SPEC; skips when managed sessions are not
# operational here.
ls_gloved() {
        services_file "$1"
        "$PY" "$FS" policy "$T/cfg/policy.json" "$2"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat" --local-services "$T/cfg/services.json")
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json capabilities
        expect_status 0
        [[ "$output" == *'"lifecycle_operational":true'* ]] || skip "managed sessions are not operational here"
        CAPS=$output
}

# echo_up [NAME]: the host echo service at $S/svc/NAME (echo.sock).
echo_up() {
        "$PY" "$ECHO_SVC" "$S/svc/${1:-echo.sock}" "$T/echo.log" &
        ECHO_PID=$!
        track_pid "$ECHO_PID"
        local i
        for ((i = 0; i < 100; i++)); do
                [ -S "$S/svc/${1:-echo.sock}" ] && return 0
                sleep 0.05
        done
        fail "the echo service did not start"
}

# intent KEY SUMMARY: one Sage observation intent (canonical JSON), issued now.
intent() {
        "$PY" -c 'import json,sys,time; print(json.dumps({"body":{"kind":"progress","seq":1,"summary":sys.argv[2]},
                "idempotency_key":sys.argv[1],"issued_at_ms":int(time.time()*1000),"schema_id":"sage.glove-observation.v1",
                "ttl_ms":600000},sort_keys=True,separators=(",",":")))' "$1" "$2"
}

# node_template ID ARG...: the Node agent (tests/agents/service_agent.js).
node_template() {
        "$PY" -c 'import json,sys; print(json.dumps({"id": sys.argv[1], "runtime_id": "pi", "argv": ["/usr/bin/node", sys.argv[2] + "/service_agent.js"] + sys.argv[3:], "read_only_paths": [sys.argv[2]]}))' \
                "$1" "$AGENTS" "${@:2}"
}

# probe_pi ID OP...: the probe as runtime pi (an adapter runtime: its
# executable is pinned without following links, so python3's real file).
probe_pi() {
        "$PY" -c 'import json,sys; print(json.dumps({"id": sys.argv[1], "runtime_id": "pi", "argv": [sys.argv[3], sys.argv[2] + "/probe.py"] + sys.argv[4:], "read_only_paths": [sys.argv[2]]}))' \
                "$1" "$AGENTS" "$(readlink -f /usr/bin/python3)" "${@:2}"
}

# dummy_template: a template (a policy needs one).
dummy_template() { echo '{"id":"none","runtime_id":"pyrt","argv":["/usr/bin/true"]}'; }

# audit_phases ID: "phase status" per local_service record of session ID.
audit_phases() {
        jq -r 'select(.event == "local_service") | .phase + " " + .status' "$T/mat/audit/$1.jsonl"
}

# dead LABEL: the probe's line for LABEL says the stream was closed on it
# (end of file, ECONNRESET or EPIPE), never a response.
dead() {
        grep -qxE "$1 (ok:EOF|ECONNRESET|EPIPE)" <<<"$output"
}

sage_endpoint() { echo "[{\"alias\":\"observe\",\"guest_channel\":\"$SAGE\",\"runtime_ids\":[\"${1:-pi}\"],\"socket_path\":\"$S/svc/obs.sock\"}]"; }
echo_endpoint() { echo "[{\"alias\":\"echo\",\"runtime_ids\":[\"${1:-pi}\"],\"socket_path\":\"$S/svc/echo.sock\"}]"; }

@test "local services: a Node agent adopts descriptor 3 and its observations reach the session's guest queue (inherited-stream-v1)" {
        local i1 i2
        i1=$(intent obs-1 "tests pass")
        i2=$(intent obs-2 "all done")
        ls_gloved "$(sage_endpoint)" "{\"templates\":[$(node_template node observe "$i1" "$i2" "$i1")]}"
        [[ "$CAPS" == *'"guest_channel_schema_version":1'* ]] || fail "the sealed composition is not advertised: $CAPS"
        run_managed n1 node '[]'
        [[ "$output" == *"transport inherited 3"* ]] || fail "no inherited stream: $output"
        [[ "${lines[1]}" == 'response 0 {"digest":'*'"duplicate":false,"ok":true,"seq":1}' ]] || fail "first: $output"
        [[ "${lines[2]}" == 'response 1 {"digest":'*'"duplicate":false,"ok":true,"seq":2}' ]] || fail "second: $output"
        # The same intent again is the first admission, nothing new written.
        [[ "${lines[3]}" == 'response 2 {"digest":'*'"duplicate":true,"ok":true,"seq":1}' ]] || fail "repeat: $output"
        run audit_phases n1
        [ "$output" = "$(printf 'delivery_pending pending\ndelivered ok\n%.0s' 1 2 3)" ] || fail "audit: $output"
        ctl --json guest-queue n1
        expect_status 0
        [ "$(jq -r '[.entries[] | .state + ":" + .runtime_id + ":" + .idempotency_key + ":" + .body.summary] | join(",")' <<<"$output")" = \
                "admitted:pi:obs-1:tests pass,admitted:pi:obs-2:all done" ] || fail "queue: $output"
        # The binding commits the transport, the descriptor map and both
        # socket identities.
        run jq -c '.local_services | [.transport, .descriptors, (.guest_socket | has("ino")), (.supervisor_socket | has("ino")), .upstreams[0].alias, .factory_generation]' "$ST/bindings/n1.json"
        [ "$output" = '["inherited-stream-v1",{"observe":3},true,true,"observe",1]' ] || fail "binding: $output"
        # The queue survives gloved: a new gloved pages it from its file.
        stop_gloved
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json guest-queue n1 --after 1
        expect_status 0
        [ "$(jq -r '[.entries[].seq] | join(",")' <<<"$output")" = "2" ] || fail "after a restart: $output"
}

@test "local services: from inside, only getsockname and getsockopt(SO_TYPE) on descriptor 3 are allowed" {
        ls_gloved "$(sage_endpoint)" "{\"templates\":[$(probe_pi pr fds fd-sockname 3 fd-sockopt 3 type fd-sockopt 3 rcvbuf fd-sockopt 3 peercred fd-sockopt 3 domain fd-peername 3 fd-setsockopt 3 fd-bind 3 fd-listen 3 fd-connect 3 "$S/svc/obs.sock" fd-socket-unix fd-sockname 1 fd-sockopt 0 type exists /run/glove-services)]}"
        run_managed p1 pr '[]'
        for want in "fds ok:0,1,2,3" "fd-sockname 3 ok" "fd-sockopt 3 type ok:1" "fd-sockopt 3 rcvbuf EPERM" \
                "fd-sockopt 3 peercred EPERM" "fd-sockopt 3 domain EPERM" "fd-peername 3 EPERM" "fd-setsockopt 3 EPERM" \
                "fd-bind 3 EPERM" "fd-listen 3 EPERM" "fd-connect 3 $S/svc/obs.sock EPERM" "fd-socket-unix EPERM" \
                "fd-sockname 1 EPERM" "fd-sockopt 0 type EPERM" "exists /run/glove-services no"; do
                grep -qxF "$want" <<<"$output" || fail "missing \"$want\" in: $output"
        done
}

@test "local services: a pipelined, empty or oversized request poisons the stream for good, and the audit says so" {
        local i1
        i1=$(intent obs-p "x")
        ls_gloved "$(sage_endpoint)" "{\"templates\":[$(probe_pi pipe frame-pipelined 3 "$i1" frame 3 "$i1"),$(probe_pi empty frame-raw 3 0 x frame 3 "$i1"),$(probe_pi big frame-raw 3 4001 x frame 3 "$i1"),$(probe_pi huge frame-raw 3 ffffffff x)]}"
        run_managed q1 pipe '[]'
        # No response for either request; the stream is closed (a peer
        # that closes with input unread makes the reader's next call fail
        # with ECONNRESET, and a write after it EPIPE).
        dead "frame-pipelined 3" || fail "pipelined: $output"
        dead "frame 3" || fail "after pipelining: $output"
        run audit_phases q1
        [[ "$output" == *"delivery_failed services.pipelined"* ]] || fail "audit: $output"
        [[ "$output" != *"delivered ok"* ]] || fail "a pipelined exchange was claimed delivered: $output"
        run_managed q2 empty '[]'
        dead "frame-raw 3 0" || fail "empty: $output"
        dead "frame 3" || fail "after empty: $output"
        run audit_phases q2
        [ "$output" = "delivery_failed services.frame_empty" ] || fail "audit: $output"
        run_managed q3 big '[]'
        dead "frame-raw 3 4001" || fail "16 KiB + 1: $output"
        run audit_phases q3
        [ "$output" = "delivery_failed services.frame_too_large" ] || fail "audit: $output"
        run_managed q4 huge '[]'
        dead "frame-raw 3 ffffffff" || fail "2^32-1: $output"
        ctl --json guest-queue q1
        [ "$(jq '.entries | length' <<<"$output")" -le 1 ] || fail "queue: $output"
}

@test "local services: a Node agent reaches a host service through the pathname transport; a timeout poisons the connection" {
        echo_up
        ls_gloved "$(echo_endpoint)" "{\"templates\":[$(node_template pn echo one two 'sleep:6000:late' three)]}"
        [[ "$CAPS" == *'"guest_channel_schema_version":0'* ]] || fail "pathname advertised a channel: $CAPS"
        run_managed m1 pn '[]'
        [[ "${lines[0]}" == "transport pathname" ]] || fail "$output"
        [[ "${lines[1]}" == "response 0 echo:one" && "${lines[2]}" == "response 1 echo:two" ]] || fail "$output"
        [[ "$output" != *"late"* && "$output" != *"three"* ]] || fail "the late answer was released: $output"
        run audit_phases m1
        [ "$output" = "$(printf 'delivery_pending pending\ndelivered ok\ndelivery_pending pending\ndelivered ok\ndelivery_failed services.timeout')" ] ||
                fail "audit: $output"
        run jq -c '.local_services | [.transport, (.directory | has("ino")), .upstreams[0].alias]' "$ST/bindings/m1.json"
        [ "$output" = '["pathname",true,"echo"]' ] || fail "binding: $output"
        # The alias directory is gone with the session.
        [ -z "$(ls -A "$T/mat/services" 2>/dev/null)" ] || fail "left: $(ls -A "$T/mat/services")"
}

@test "local services: an upstream replaced after gloved pinned it, a grant of its directory or an ancestor, reserved variables and mixed transports never start" {
        echo_up zz.sock
        echo_up
        local eps
        eps="[{\"alias\":\"echo\",\"runtime_ids\":[\"pi\",\"pyrt\"],\"socket_path\":\"$S/svc/echo.sock\"},{\"alias\":\"observe\",\"guest_channel\":\"$SAGE\",\"runtime_ids\":[\"mixed\"],\"socket_path\":\"$S/svc/obs.sock\"},{\"alias\":\"zz\",\"runtime_ids\":[\"mixed\"],\"socket_path\":\"$S/svc/zz.sock\"}]"
        # The ancestor $S under another name: a bind mount of it elsewhere
        # (aliases may not overlap each other by path, so by identity only).
        B=$(mktemp -d /tmp/glb.XXXXXX)
        mount --bind "$S" "$B"
        # An unrelated directory with a bind mount of the socket's directory
        # somewhere inside it.
        O=$(mktemp -d /tmp/glo.XXXXXX)
        mkdir -p "$O/deep/in"
        mount --bind "$S/svc" "$O/deep/in"
        local spec
        spec=$("$PY" -c 'import json,sys; s,b,o=sys.argv[1],sys.argv[2],sys.argv[3]; print(json.dumps({
                "aliases":[{"alias":a,"host_path":p,"target_path":"/g/"+a,"access":[{"access":"read","materialization":"bind","max_bytes":1048576}]}
                           for a,p in (("ancestor",b),("outer",o),("parent",s+"/svc"))],
                "templates":[{"id":"g","runtime_id":"pyrt","argv":["/usr/bin/true"],"aliases":["ancestor","outer","parent"]},
                             {"id":"env","runtime_id":"pyrt","argv":["/usr/bin/true"],"environment":["GLOVE_LOCAL_SERVICE_DIR=/x","PATH=/usr/bin:/bin"]},
                             {"id":"mixed","runtime_id":"mixed","argv":["/usr/bin/true"]},
                             {"id":"ok","runtime_id":"pyrt","argv":["/usr/bin/true"]}]}))' "$S" "$B" "$O")
        ls_gloved "$eps" "$spec"
        local a id=0
        for a in parent ancestor outer; do
                id=$((id + 1))
                new_fs "g$id" g "[{\"alias\":\"$a\",\"access\":\"read\",\"materialization\":\"bind\"}]"
                ctl start "g$id"
                wait_state "g$id" failed
                [ "$(status_field "g$id" 's["history"][-1]["reason"]')" = services.grant_exposes_socket ] ||
                        fail "$a: $(status_field "g$id" 's')"
        done
        new_fs e1 env '[]'
        ctl start e1
        wait_state e1 failed
        [ "$(status_field e1 's["history"][-1]["reason"]')" = services.reserved_environment ] || fail "$(status_field e1 's')"
        new_fs x1 mixed '[]'
        ctl start x1
        wait_state x1 failed
        [ "$(status_field x1 's["history"][-1]["reason"]')" = services.mixed_transport ] || fail "$(status_field x1 's')"
        # Same path, another socket: the start refuses the drifted upstream.
        # (The new one is made while the old still exists, so that the
        # file system cannot hand it the old inode number: an ABA swap
        # with a reused number is what no pathname check can see,
        # docs/local-services.md.)
        kill "$ECHO_PID"
        wait "$ECHO_PID" 2>/dev/null || true
        echo_up echo2.sock
        mv -f "$S/svc/echo2.sock" "$S/svc/echo.sock"
        new_fs r1 ok '[]'
        ctl start r1
        wait_state r1 failed
        [ "$(status_field r1 's["history"][-1]["reason"]')" = services.endpoint_replaced ] || fail "$(status_field r1 's')"
}

@test "local services: the keeper killed between delivery_pending and delivered leaves the pending record, never a delivery" {
        command -v strace >/dev/null || skip "strace is not installed"
        local i1
        i1=$(intent obs-k "killed")
        local tpl
        tpl=$("$PY" -c 'import json,shlex,sys; print(json.dumps({"id":"slow","runtime_id":"pi","argv":["/usr/bin/dash","-c",
                "sleep 3; exec /usr/bin/python3 %s/probe.py frame 3 %s" % (sys.argv[1], shlex.quote(sys.argv[2]))],
                "read_only_paths":[sys.argv[1]]}))' "$AGENTS" "$i1")
        ls_gloved "$(sage_endpoint)" "{\"templates\":[$tpl]}"
        new_fs k1 slow '[]'
        ctl start k1
        wait_state k1 running
        # The session's keeper: the one process holding its audit file.
        local kp="" f want
        want=$(readlink -f "$T/mat/audit/k1.jsonl")
        for f in $(for p in $(pgrep -x glove-keeper); do echo /proc/$p/fd/*; done); do
                if [ "$(readlink "$f" 2>/dev/null)" = "$want" ]; then
                        kp=${f#/proc/}
                        kp=${kp%%/*}
                        break
                fi
        done
        [ -n "$kp" ] || fail "no keeper holds the session's audit file"
        # The second write to the audit file (delivered) kills the keeper
        # before it happens: the first (delivery_pending) went through.
        timeout 20 strace -f -qq -p "$kp" -e trace=write -e inject=write:signal=SIGKILL:when=2 -P "$want" \
                -o /dev/null &
        local st=$!
        wait_state k1 failed 30
        wait "$st" 2>/dev/null || true
        run audit_phases k1
        [ "$output" = "delivery_pending pending" ] || fail "audit: $output"
        # The observation was admitted (before its response was released);
        # its delivery is never claimed.
        ctl --json guest-queue k1
        [ "$(jq -r '[.entries[].idempotency_key] | join(",")' <<<"$output")" = "obs-k" ] || fail "queue: $output"
}

@test "local services: the guest-channel capability is 1 only for the sealed composition" {
        # codex-only and opencode-only endpoint sets: 0.
        local rid
        for rid in codex opencode; do
                ls_gloved "$(sage_endpoint "$rid")" '{"templates":['"$(dummy_template)"']}'
                [[ "$CAPS" == *'"guest_channel_schema_version":0'* && "$CAPS" == *'"guest_channel_reason":"channel.capability_no_intersection"'* ]] ||
                        fail "$rid: $CAPS"
                stop_gloved
        done
        # An unbound service, even one allowed for pi: a generic proxy, 0.
        echo_up
        ls_gloved "$(echo_endpoint pi)" '{"templates":['"$(dummy_template)"']}'
        [[ "$CAPS" == *'"guest_channel_schema_version":0'* ]] || fail "unbound: $CAPS"
        stop_gloved
        # The exact composition: 1; the socket replaced: 0 (drift).
        ls_gloved "$(sage_endpoint pi)" '{"templates":['"$(dummy_template)"']}'
        [[ "$CAPS" == *'"guest_channel_schema_version":1'* ]] || fail "sealed: $CAPS"
        # A second gloved never takes over a served observation socket.
        run timeout 10 "$GLOVED" --runtime-dir "$T/g3/run" --state-dir "$T/g3/state" --session-policy "$T/cfg/policy.json" \
                --session-store "$T/cfg/other.journal" --materialization-root "$T/mat3" --local-services "$T/cfg/services.json"
        [ "$status" -ne 0 ] && [[ "$output" == *services.endpoint_in_use* ]] || fail "second gloved: $status $output"
        ctl --json capabilities
        [[ "$output" == *'"guest_channel_schema_version":1'* ]] || fail "the first gloved lost its socket: $output"
        "$PY" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$S/svc/obs2.sock"
        chmod 600 "$S/svc/obs2.sock"
        mv -f "$S/svc/obs2.sock" "$S/svc/obs.sock"
        ctl --json capabilities
        [[ "$output" == *'"guest_channel_schema_version":0'* && "$output" == *'"guest_channel_reason":"channel.capability_drifted"'* ]] ||
                fail "drifted: $output"
        stop_gloved
        # An unsupported binding refuses the start.
        services_file "[{\"alias\":\"observe\",\"guest_channel\":\"sage.glove-proposal.v1\",\"runtime_ids\":[\"pi\"],\"socket_path\":\"$S/svc/obs.sock\"}]"
        run timeout 10 "$GLOVED" --runtime-dir "$T/g2/run" --state-dir "$T/g2/state" "${GD_ARGS[@]}"
        [ "$status" -ne 0 ] || fail "gloved started with an unsupported binding"
        [[ "$output" == *adapters.binding_unsupported* ]] || fail "$output"
}

@test "local services: gloved killed once it made an observation durable, before it answered: the stream is poisoned, nothing claims delivery, the admission survives" {
        [ -f "$CRASHPOINT" ] || fail "the crash-point shim $CRASHPOINT is missing (meson builds glove-crashpoint.so)"
        local i1
        i1=$(intent obs-g "gloved dies")
        services_file "$(sage_endpoint)"
        "$PY" "$FS" policy "$T/cfg/policy.json" "{\"templates\":[$(probe_pi gd frame 3 "$i1")]}"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat" --local-services "$T/cfg/services.json")
        # The shim (tests/integration/lib/crashpoint.c) kills gloved when
        # the registry's write holding the key has been synced; the keeper
        # is exec'd with an empty environment and never loads it.
        LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH=obs-g GLOVE_CRASH_WHEN=synced GLOVE_CRASH_PATH=.channel \
                GLOVE_CRASH_REPORT="$T/crash.report" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
                start_gloved "$T/g" "${GD_ARGS[@]}"
        new_fs g1 gd '[]'
        ctl start g1
        expect_status 0
        wait_exit "$GD_PID" 30 || fail "gloved was not killed at its registry write"
        grep -q "synced" "$T/crash.report" || fail "$(cat "$T/crash.report" 2>/dev/null)"
        # The killed gloved's socket and secret are still there: gone first,
        # so that start_gloved waits for the new gloved's.
        rm -f "$T/g/run/gloved.sock" "$T/g/run/bootstrap-secret"
        start_gloved "$T/g" "${GD_ARGS[@]}"
        wait_state g1 exited 30
        # The upstream closed without an answer: the exchange failed before
        # any delivery_pending, and nothing was released.
        run audit_phases g1
        [ "$output" = "delivery_failed services.closed" ] || fail "audit: $output"
        ctl --json guest-queue g1
        [ "$(jq -r '[.entries[] | .state + ":" + .idempotency_key] | join(",")' <<<"$output")" = "admitted:obs-g" ] ||
                fail "queue: $output"
}

@test "local services: an endpoint every sandbox would see (under /usr or a bound /etc entry, also mounted there after start) is refused" {
        echo_up
        # A bind mount of the upstream's directory inside /etc/alternatives,
        # which the standard perimeter binds into every sandbox.
        A=/etc/alternatives/glove-it.$$.$BATS_TEST_NUMBER
        mkdir "$A"
        mount --bind "$S/svc" "$A"
        services_file "$(echo_endpoint pyrt)"
        "$PY" "$FS" policy "$T/cfg/policy.json" '{"templates":[{"id":"ok","runtime_id":"pyrt","argv":["/usr/bin/true"]}]}'
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat" --local-services "$T/cfg/services.json")
        run timeout 10 "$GLOVED" --runtime-dir "$T/g2/run" --state-dir "$T/g2/state" "${GD_ARGS[@]}"
        [ "$status" -ne 0 ] && [[ "$output" == *services.grant_exposes_socket* && "$output" == *"$A"* ]] ||
                fail "gloved started with the upstream in every sandbox's view: $status $output"
        # Mounted there after gloved started: the next pathname session.
        umount "$A"
        ls_gloved "$(echo_endpoint pyrt)" '{"templates":[{"id":"ok","runtime_id":"pyrt","argv":["/usr/bin/true"]}]}'
        mount --bind "$S/svc" "$A"
        new_fs v1 ok '[]'
        ctl start v1
        wait_state v1 failed
        [ "$(status_field v1 's["history"][-1]["reason"]')" = services.grant_exposes_socket ] || fail "$(status_field v1 's')"
}

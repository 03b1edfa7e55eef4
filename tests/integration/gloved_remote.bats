#!/usr/bin/env bats
# gloved --remote-backend: the construction-only remote backend
# (docs/remote-backend.md). The accepted file and its OpenSSH artifacts
# (modes, exact lines, what ssh itself reads from them in a network
# namespace without a route), one refusal per code, a runtime directory of
# the wrong owner or mode, a full runtime directory that leaves nothing
# behind, the capabilities row, the lifecycle methods refused with nothing
# started, remote plans accepted and stored, and strace's proof that
# nothing is contacted. The many malformed references and keys are in
# tests/unit/remote/test_backend.c.

load helpers
load "$GLOVE_IT_LIB/gloved"

CF_POLICY_SRC="$GLOVE_FIXTURES/cloudflare-os-session-policy.json"
DIGEST=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
IDENTITY=registry.example.net/glove/runtime@$DIGEST
# The ssh-ed25519 key whose 32 bytes are 1, 2, ..., 32 (RFC 8709 blob).
HOST_KEY="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        [ -f "$CF_POLICY_SRC" ] || fail "the Cloudflare OS template is not in the cell's fixtures ($CF_POLICY_SRC; tests/integration/cell.sh copies it)"
}

teardown() {
        gloved_teardown
        return 0
}

# remote_config FILE [JQ-FILTER]: the valid configuration (mode 0600),
# changed first by JQ-FILTER ($digest is the image digest, $key the key).
remote_config() {
        jq -n --arg key "$HOST_KEY" --arg digest "$DIGEST" '
                {"schema": "glove.remote-backend-v1",
                 "remote_backend": {"ssh_destination": {"host": "builder.example.net", "port": 2222, "user": "glove"},
                                    "host_key": $key,
                                    "container_identity": ("registry.example.net/glove/runtime@" + $digest),
                                    "container_image_digest": $digest}} | '"${2:-.}" >"$1"
        chmod 600 "$1"
}

# cf_plan FILE: a canonical plan (sorted keys, no spaces) of the Cloudflare
# OS template (its one workspace grant, cfos-small), expiring in a minute.
cf_plan() {
        jq -ncS --argjson exp "$(($(date +%s%3N) + 60000))" '
                {"adapter_command_digest": "2c3af3985743cc37adbc120a49290f48ac04ddc1e3bde1aa16fee8301a259cee",
                 "egress_policy_id": "cloudflare-os-loopback", "expires_at_ms": $exp, "library_projections": [],
                 "limits": {"cpu_time_ms": 120000, "disk_bytes": 6442450944, "memory_bytes": 2147483648, "pids": 256,
                            "terminal_output_bytes": 16777216, "wall_time_ms": 300000},
                 "path_grants": [{"access": "ephemeral_write", "alias": "workspace", "cleanup_policy": "remove",
                                  "materialization": "copy", "max_bytes": 4294967296, "ttl_secs": 300}],
                 "policy_revision": 1, "runtime_id": "cloudflare-os", "runtime_template_id": "cloudflare-os-dev",
                 "sandbox_backend": "remote_linux_container", "schema_version": 1, "secret_handles": [],
                 "tool_policy_id": "sage-readonly"}' | tr -d '\n' >"$1"
}

# expect_start_refused CODE PATH-PREFIX: gloved_fails ended with status 1 and
# one error log line of that code whose message names PATH-PREFIX.
expect_start_refused() {
        expect_status 1 || return 1
        jq -e --arg c "$1" --arg p "$2" 'select(.level == "error") | .code == $c and (.msg | contains($p))' \
                <<<"$stderr" >/dev/null || fail "expected an error line of code $1 naming $2"
}

# no_artifacts DIR: neither remote file (nor a temporary of one) is in DIR.
no_artifacts() {
        local left
        [ -d "$1" ] || fail "no runtime directory $1"
        left=$(find "$1" -maxdepth 1 -name '*remote-*')
        [ -z "$left" ] || fail "left behind in $1: $left"
}

@test "remote: the accepted file: 0600 artifacts with exactly the pinned options, read as such by ssh -G without a network; removed at stop" {
        remote_config "$T/remote.json"
        start_gloved "$T/a" --remote-backend "$T/remote.json"
        local f
        for f in remote-ssh_config remote-known_hosts; do
                [ "$(stat -c '%a %u %h %F' "$RT/$f")" = "600 $(id -u) 1 regular file" ] ||
                        fail "$f: $(stat -c '%a %u %h %F' "$RT/$f")"
        done
        [ "$(cat "$RT/remote-known_hosts")" = "glove-remote $HOST_KEY" ] || fail "known_hosts: $(cat "$RT/remote-known_hosts")"
        # Every option line, exactly and in order (comments aside).
        local want
        want=$(printf '%s\n' "GlobalKnownHostsFile none" "UserKnownHostsFile $RT/remote-known_hosts" \
                "StrictHostKeyChecking yes" "HostKeyAlgorithms ssh-ed25519" "UpdateHostKeys no" "ControlMaster no" \
                "ControlPath none" "ControlPersist no" "IdentitiesOnly yes" "IdentityFile none" "IdentityAgent none" \
                "BatchMode yes" "" "Host glove-remote" $'\tHostName builder.example.net' \
                $'\tPort 2222' $'\tUser glove' $'\tHostKeyAlias glove-remote')
        [ "$(grep -v '^#' "$RT/remote-ssh_config")" = "$want" ] || fail "config: $(cat "$RT/remote-ssh_config")"
        # What OpenSSH makes of it, parsed without connecting, in a network
        # namespace with no route (so it could not reach anything).
        run --separate-stderr unshare -n ssh -T -G -F "$RT/remote-ssh_config" glove-remote </dev/null
        expect_status 0
        for f in "hostname builder.example.net" "port 2222" "user glove" "hostkeyalias glove-remote" \
                "hostkeyalgorithms ssh-ed25519" "globalknownhostsfile none" \
                "userknownhostsfile $RT/remote-known_hosts" "stricthostkeychecking true" "updatehostkeys false" \
                "controlmaster false" "controlpersist no" "identitiesonly yes" "identityfile none" "identityagent none" \
                "batchmode yes"; do
                expect_line "$f"
        done
        # No key of the invoker's (~/.ssh/id_*) nor an agent would be offered.
        [ "$(grep -c '^identityfile ' <<<"$output")" = 1 ] || fail "ssh would offer other identities: $output"
        # ControlPath none: ssh -G prints no control path at all.
        ! grep -q '^controlpath ' <<<"$output" || fail "ssh reads a control path"
        # The pin is found under the alias, and only there.
        run ssh-keygen -F glove-remote -f "$RT/remote-known_hosts"
        expect_status 0
        expect_line "glove-remote $HOST_KEY"
        run ssh-keygen -F builder.example.net -f "$RT/remote-known_hosts"
        [ "$status" -ne 0 ] || fail "the key is pinned under the host name too"
        grep -q '"code":"remote.constructed"' "$GD_ERR" || fail "no remote.constructed line"
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS"
        no_artifacts "$RT"
        # Files an earlier gloved left go when gloved starts without the
        # backend (they name no backend now).
        echo stale >"$RT/remote-ssh_config"
        echo stale >"$RT/remote-known_hosts"
        start_gloved "$T/a"
        no_artifacts "$RT"
        grep -q '"code":"remote.stale_artifacts"' "$GD_ERR" || fail "no remote.stale_artifacts line"
}

@test "remote: capabilities: the row is a construction diagnostic; every lifecycle method is method_not_found and starts nothing; cloudflare-os plans are validated and stored" {
        install -m 600 "$CF_POLICY_SRC" "$T/policy.json"
        remote_config "$T/remote.json"
        mkdir -m 700 "$T/store"
        start_gloved "$T/a" --remote-backend "$T/remote.json" --session-policy "$T/policy.json" \
                --session-store "$T/store/sessions.journal"
        ctl --json capabilities
        expect_status 0
        jq -e --arg id "$IDENTITY" --arg d "$DIGEST" '
                .remote_backend == {"construction":"validated","sandbox_backend":"remote_linux_container",
                        "lifecycle_operational":false,"agent_runtime_adapter_schema_version":0,
                        "managed_runtime_ids":[],"resource_mechanisms":[],"verified_receipts":false,
                        "container_identity":$id,"container_image_digest":$d,"host_key_algorithm":"ssh-ed25519"}
                and .lifecycle_operational == false and .agent_runtime_adapter_schema_version == 0
                and .managed_runtime_ids == [] and .resource_mechanisms == []
                and .refinement_evaluation_protocol_schema_version == 0
                and (.lifecycle_reason | startswith("the remote backend is construction-only"))
                and .methods == ["authenticate","capabilities","receipts_page","receipts_ack","validate_plan",
                                 "create_session","session_status","list_sessions"]' <<<"$output" >/dev/null ||
                fail "capabilities: $output"
        [[ "$output" != *builder.example.net* && "$output" != *AAAAC3Nza* ]] || fail "the row shows the destination or key"
        ctl capabilities
        expect_status 0
        expect_line "remote backend: validated, construction only (lifecycle operational: no)"
        expect_line "  container identity: $IDENTITY"
        expect_line "  host key algorithm: ssh-ed25519"
        # A remote plan is validated and stored: acceptance, not authority.
        cf_plan "$T/plan.json"
        ctl validate-plan "$T/plan.json"
        expect_status 0
        ctl create-session --session-id s1 --idempotency-key k1 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        ctl start s1
        expect_refused method_not_found
        local methods=(start_session attach write_stdin resize signal detach stop_session cleanup_session) m n=0 items=()
        for m in "${methods[@]}"; do items+=("{\"id\":1,\"method\":\"$m\",\"params\":{\"session_id\":\"s1\"}}"); done
        frames exchange "${items[@]}"
        expect_status 0
        for m in "${methods[@]}"; do
                n=$((n + 1))
                jq -e --arg m "$m" '.error.code == "method_not_found" and .error.data.method == $m
                        and .error.data.reason == "remote_construction_only"' <<<"${lines[$n]}" >/dev/null ||
                        fail "$m: ${lines[$n]}"
        done
        [ "$n" -eq 8 ] && [ "${#lines[@]}" -eq 9 ] || fail "expected 8 answers: $output"
        ctl --json session-status s1
        expect_status 0
        jq -e '.state == "created"' <<<"$output" >/dev/null || fail "the session moved: $output"
        # Nothing was started: gloved has no child, and nothing but its own
        # files is in its runtime directory.
        [ -z "$(pgrep -P "$GD_PID")" ] || fail "gloved has children: $(pgrep -a -P "$GD_PID")"
        [ "$(LC_ALL=C ls "$RT" | tr '\n' ' ')" = "bootstrap-secret gloved.lock gloved.sock remote-known_hosts remote-ssh_config " ] ||
                fail "runtime dir: $(ls "$RT")"
}

@test "remote: one refusal per reason, naming the JSON path, with nothing written (the other cases: tests/unit/remote)" {
        local k=0
        # refused CODE JSON-PATH JQ-FILTER: the configuration changed by
        # JQ-FILTER refuses the start with CODE at JSON-PATH, and leaves no
        # artifact.
        refused() {
                k=$((k + 1))
                remote_config "$T/r$k.json" "$3"
                gloved_fails --runtime-dir "$T/$k/run" --state-dir "$T/$k/state" --remote-backend "$T/r$k.json"
                expect_start_refused "$1" "$2: " || fail "case $k ($3)"
                no_artifacts "$T/$k/run"
        }
        refused remote.backend_conflict '$.apple_container' '.apple_container = {}'
        refused remote.image_tagged '$.remote_backend.container_identity' \
                '.remote_backend.container_identity = "registry.example.net/glove/runtime:1.0@" + $digest'
        refused remote.image_digest_mismatch '$.remote_backend.container_identity' \
                '.remote_backend.container_image_digest = "sha256:" + ("f" * 64)'
        refused remote.image_invalid '$.remote_backend.container_identity' \
                '.remote_backend.container_identity += "@" + $digest'
        refused remote.image_invalid '$.remote_backend.container_identity' \
                '.remote_backend.container_identity = "registry.example.net/glove/runtime@sha256:" + ($digest[7:] | ascii_upcase)'
        refused remote.host_key_type '$.remote_backend.host_key' \
                '.remote_backend.host_key = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7"'
        refused remote.host_key_invalid '$.remote_backend.host_key' '.remote_backend.host_key += " root@builder"'
        refused remote.destination_host '$.remote_backend.ssh_destination.host' \
                '.remote_backend.ssh_destination.host = "-oProxyCommand=touch /tmp/x"'
        [ "$k" -eq 8 ] || fail "only $k cases ran"
        # The file itself: group-readable is refused like a session policy.
        remote_config "$T/open.json"
        chmod 640 "$T/open.json"
        gloved_fails --runtime-dir "$T/o/run" --state-dir "$T/o/state" --remote-backend "$T/open.json"
        expect_start_refused remote.file_mode "mode 0640"
        # Both backends: a usage error, before anything is made.
        gloved_fails --runtime-dir "$T/u/run" --state-dir "$T/u/state" --remote-backend "$T/r1.json" \
                --session-policy "$T/p.json" --session-store "$T/s.journal" --materialization-root "$T/m"
        expect_status 2
        [[ "$stderr" == "gloved: usage.backend_conflict: "* ]] || fail "$stderr"
        [ ! -e "$T/u" ] && [ ! -e "$T/m" ] || fail "a usage error created directories"
}

@test "remote: a second --remote-backend or a FILE/ value is a usage error; SIGINT then SIGTERM still stops cleanly" {
        remote_config "$T/r.json"
        # The first value would be dropped unchecked: refused, whichever is valid.
        gloved_fails --runtime-dir "$T/u/run" --state-dir "$T/u/state" --remote-backend /nonexistent/remote.json \
                --remote-backend "$T/r.json"
        expect_status 2
        [[ "$stderr" == "gloved: usage.repeated_option: --remote-backend is given more than once"* ]] || fail "$stderr"
        gloved_fails --runtime-dir "$T/u/run" --state-dir "$T/u/state" --remote-backend "$T/r.json/"
        expect_status 2
        [[ "$stderr" == "gloved: usage.bad_value: --remote-backend $T/r.json/ ends in '/'"* ]] || fail "$stderr"
        [ ! -e "$T/u" ] || fail "a usage error created directories"
        # Two stop signals at once (Ctrl-C, then a service manager's stop):
        # the second must not kill gloved before it removed its files.
        start_gloved "$T/a" --remote-backend "$T/r.json"
        [ -e "$RT/remote-ssh_config" ] || fail "no artifacts to remove"
        kill -INT "$GD_PID"
        kill -TERM "$GD_PID"
        wait_exit "$GD_PID" 10
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS after SIGINT and SIGTERM"
        [ "$(ls "$RT")" = gloved.lock ] || fail "left behind: $(ls "$RT")"
}

@test "remote: a runtime directory of another owner or mode is refused before anything is written" {
        is_root || skip "needs root to give the runtime directory to another owner"
        remote_config "$T/remote.json"
        mkdir -m 700 "$T/theirs" "$T/open"
        chown 65534:65534 "$T/theirs"
        chmod 750 "$T/open"
        gloved_fails --runtime-dir "$T/theirs" --state-dir "$T/s1" --remote-backend "$T/remote.json"
        expect_start_refused dirs.insecure "$T/theirs"
        gloved_fails --runtime-dir "$T/open" --state-dir "$T/s2" --remote-backend "$T/remote.json"
        expect_start_refused dirs.insecure "$T/open"
        no_artifacts "$T/theirs"
        no_artifacts "$T/open"
}

@test "remote: a runtime directory without room for the second artifact keeps neither; a later failure removes both" {
        is_root || skip "needs root to mount a tmpfs in a private mount namespace"
        remote_config "$T/remote.json"
        # A tmpfs of 3 inodes: its root, gloved.lock and one artifact, so
        # the configuration (written second) finds no inode. Then one of 4:
        # both artifacts fit, the bootstrap secret does not, and the stop
        # that follows removes them.
        local n want
        for n in 3 4; do
                mkdir -m 700 "$T/rt$n"
                run --separate-stderr unshare -m sh -c '
                        mount -t tmpfs -o size=1m,nr_inodes=$1,mode=0700 glove-remote-test "$2" || exit 99
                        "$3" --runtime-dir "$2" --state-dir "$4" --remote-backend "$5" </dev/null
                        echo "status $?"
                        ls -A "$2"' sh "$n" "$T/rt$n" "$GLOVED" "$T/state$n" "$T/remote.json"
                [ "$status" -eq 0 ] || fail "nr_inodes=$n: the tmpfs could not be made"
                no_sanitizer_reports <(printf '%s\n' "$stderr")
                expect_output "status 1
gloved.lock" || fail "nr_inodes=$n: something was left"
                if [ "$n" = 3 ]; then
                        want='.code == "remote.artifact_write" and (.msg | contains("remote-ssh_config: create: No space left on device; neither"))'
                else
                        want='.code == "dirs.write" and (.msg | contains("bootstrap-secret"))'
                fi
                jq -e "select(.level == \"error\") | $want" <<<"$stderr" >/dev/null || fail "nr_inodes=$n: $stderr"
        done
        [ "$n" = 4 ] && grep -q '"code":"remote.constructed"' <<<"$stderr" || fail "the artifacts were never written"
}

# network_activity TRACE EXE: the lines of strace output TRACE that show a
# network socket or connection, an execve of anything but EXE, or an open of
# the resolver's or ssh's configuration.
network_activity() {
        grep -E 'socket\(AF_(INET|INET6|NETLINK|PACKET)|connect\([0-9]+, \{sa_family=AF_(INET|INET6|NETLINK)|"/etc/(resolv\.conf|hosts|nsswitch\.conf|gai\.conf|ssh/[^"]*)"' "$1" || true
        grep -E 'execve(at)?\(' "$1" | grep -vF "execve(\"$2\"" || true
}

@test "remote: nothing is contacted: gloved with the backend, traced in a network namespace without a route, resolves, connects and runs nothing" {
        is_root || skip "needs root for a network namespace and strace of another process"
        command -v strace >/dev/null || fail "strace is not installed (scripts/deps.sh test)"
        remote_config "$T/remote.json"
        install -m 600 "$CF_POLICY_SRC" "$T/policy.json"
        RT=$T/a/run ST=$T/a/state GD_ERR=$T/a.gloved.err
        # LeakSanitizer stops the process under ptrace: off for this test.
        env -u NOTIFY_SOCKET -u LISTEN_FDS ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
                unshare -n strace -f -qq -o "$T/trace" \
                -e trace=socket,connect,bind,sendto,sendmsg,execve,execveat,open,openat,openat2 \
                "$GLOVED" --runtime-dir "$RT" --state-dir "$ST" --remote-backend "$T/remote.json" \
                --session-policy "$T/policy.json" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RT" "$GD_PID"
        ctl --json capabilities
        expect_status 0
        jq -e '.remote_backend.construction == "validated"' <<<"$output" >/dev/null || fail "no remote row"
        kill -TERM "$(head -1 "$RT/gloved.lock")"
        wait_exit "$GD_PID" 10
        [ "$WSTATUS" -eq 0 ] || fail "strace/gloved exited $WSTATUS: $(cat "$GD_ERR")"
        # The trace saw gloved do its work (so an empty answer below means
        # something): its own execve, the backend file, its Unix socket.
        grep -qF "execve(\"$GLOVED\"" "$T/trace" || fail "no execve of gloved in the trace"
        grep -qF "\"$T/remote.json\"" "$T/trace" || fail "the trace does not show the backend file opened"
        grep -qE "bind\([0-9]+, \{sa_family=AF_UNIX, sun_path=\"$RT/gloved.sock\"" "$T/trace" ||
                fail "the trace does not show gloved's socket"
        local bad
        bad=$(network_activity "$T/trace" "$GLOVED")
        [ -z "$bad" ] || fail "gloved reached for the network, a resolver or a program: $bad"
        # The same check sees a resolver, an AF_INET connect and an exec
        # when they happen (a control, traced the same way).
        unshare -n strace -f -qq -o "$T/control" -e trace=socket,connect,execve,execveat,open,openat,openat2 \
                bash -c 'getent hosts builder.example.net; exec 3<>/dev/tcp/127.0.0.1/9' >/dev/null 2>&1 || true
        bad=$(network_activity "$T/control" /bin/bash)
        [[ "$bad" == *'socket(AF_INET'* && "$bad" == *'"/etc/nsswitch.conf"'* && "$bad" == *'execve("'*getent* ]] ||
                fail "the check misses activity: $bad"
}

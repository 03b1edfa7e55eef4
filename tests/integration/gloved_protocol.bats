#!/usr/bin/env bats
# The gloved control protocol under attack and load: authentication, peer
# uid, frame bounds and strictness, many clients, stalled clients, and the
# idempotency of create_session, through glove ctl and raw frames.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
}

teardown() {
        gloved_teardown
        [ -n "${UID_DIR:-}" ] && rm -rf "$UID_DIR"
        return 0
}

@test "protocol: a wrong or missing secret closes the connection" {
        start_gloved "$T/a"
        frames exchange --secret "$(printf '0%.0s' {1..64})" '{"id":1,"method":"capabilities"}'
        expect_status 0
        expect_line 'auth {"error":{"code":"auth.failed","data":{},"message":"authentication failed"},"id":0}'
        [ "${lines[1]}" = EOF ] && [ "${#lines[@]}" -eq 2 ] || fail "the connection must close after a failed authentication"
        frames exchange --secret abc '{"id":1,"method":"capabilities"}'
        expect_line 'auth {"error":{"code":"auth.failed","data":{},"message":"authentication failed"},"id":0}'
        frames exchange --no-auth '{"id":1,"method":"capabilities"}'
        expect_output '{"error":{"code":"auth.required","data":{},"message":"the first request must be authenticate"},"id":1}'
        frames exchange --no-auth '{"id":1,"method":"authenticate","params":{"secret":"x","extra":1}}'
        [[ "$output" == *'"code":"auth.failed"'* ]] || fail "unknown authenticate params must fail"
        # Positive control: the right secret is accepted on the same service.
        frames exchange '{"id":1,"method":"capabilities"}'
        [[ "${lines[0]}" == 'auth {"id":0,"result":{"authenticated":true'* ]] || fail "the right secret must work"
        [[ "${lines[1]}" == '{"id":1,"result":{'* ]] || fail "capabilities after authentication"
}

@test "protocol: a peer with another uid is closed before any byte" {
        is_root || skip "connecting as another uid needs root (the unprivileged run cannot switch users)"
        UID_DIR=$(mktemp -d /tmp/gloved-uid.XXXXXX)
        chown 65534:65534 "$UID_DIR"
        chmod 700 "$UID_DIR"
        start_gloved --as-nobody "$UID_DIR/a"
        # Root can open the nobody-owned 0600 socket and read the secret, so
        # only the SO_PEERCRED check stands between it and the service.
        frames exchange '{"id":1,"method":"capabilities"}'
        expect_status 0
        expect_output "auth EOF"
        grep -q "peer uid 0 is not the service uid 65534" "$GD_ERR" || fail "gloved did not log the refusal"
        # Positive control: the service user itself is served.
        run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$CTLFRAME" "$RT" exchange '{"id":1,"method":"capabilities"}'
        [[ "${lines[1]}" == '{"id":1,"result":{'* ]] || fail "the service user must be served"
}

@test "protocol: oversized frames are refused from their prefix" {
        start_gloved "$T/a"
        frames exchange raw:00100001
        expect_line '{"error":{"code":"frame.too_large","data":{},"message":"a frame of 1048577 bytes exceeds the bound of 1048576"},"id":null}'
        frames exchange raw:ffffffff
        [[ "${lines[1]}" == *'"code":"frame.too_large"'* ]] || fail "4 GiB prefix"
        frames exchange --no-auth raw:7fffffff
        [[ "$output" == *'"code":"frame.too_large"'* ]] || fail "before authentication too"
        # A frame of exactly 1 MiB is read (and refused only as a request).
        frames exchange pad:1048576
        [[ "${lines[1]}" == *'"code":"invalid_params"'* ]] || fail "a 1 MiB frame must be read whole"
}

@test "protocol: malformed frames are answered with a stable code and closed" {
        start_gloved "$T/a"
        check() { # ITEM CODE
                frames exchange "$1" '{"id":9,"method":"capabilities"}'
                expect_status 0
                [[ "${lines[1]}" == *"\"code\":\"$2\""* ]] || fail "item $1: expected $2"
                [ "${lines[2]}" = EOF ] || fail "item $1: the connection must be closed"
        }
        check '{"id":1,"method":' frame.malformed
        check '{"id":1,"id":2,"method":"capabilities"}' frame.malformed
        check '[1,2]' frame.malformed
        check '{"id":1,"method":"capabilities"} {}' frame.malformed
        check 'raw:00000000' frame.empty
        check 'raw:000000047b226964' frame.malformed
        # Invalid UTF-8 inside a string.
        check "raw:$("$PY" -c 'import struct; b=b"{\"id\":\"\xff\xfe\",\"method\":\"x\"}"; print((struct.pack(">I",len(b))+b).hex())')" frame.malformed
        check '{"id":1,"method":"capabilities","extra":0}' request.invalid
        check '{"id":-5,"method":"capabilities"}' request.invalid
        check '{"id":1,"method":"Capabilities"}' request.invalid
        check '{"id":1,"method":"capabilities","params":[]}' request.invalid
        # Errors inside a well-formed request keep the connection open.
        frames exchange '{"id":1,"method":"no_such_method"}' '{"id":2,"method":"start_session"}' \
                '{"id":3,"method":"capabilities","params":{"x":1}}' '{"id":4,"method":"capabilities"}'
        [[ "${lines[1]}" == '{"error":{"code":"method_not_found"'*'"id":1}' ]] || fail "unknown method"
        [[ "${lines[2]}" == '{"error":{"code":"method_not_found"'*'"id":2}' ]] || fail "unadvertised method"
        [[ "${lines[3]}" == *'"code":"invalid_params"'*'"id":3}' ]] || fail "bad params"
        [[ "${lines[4]}" == '{"id":4,"result":'* ]] || fail "the connection must still serve"
}

# create_item ID SESSION KEY: a create_session request for $T/plan.json.
create_item() {
        "$PY" -c 'import json, sys
print(json.dumps({"id": int(sys.argv[1]), "method": "create_session", "params": {"session_id": sys.argv[2],
      "idempotency_key": sys.argv[3], "controller_plan_digest": sys.argv[4], "plan": open(sys.argv[5]).read()}}))' \
                "$1" "$2" "$3" "$CDIGEST" "$T/plan.json"
}

@test "protocol: requests pipelined in one write are all answered, in order" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        plan_file "$T/plan.json"
        start_gloved "$T/a" --session-policy "$T/p/policy.json" --session-store "$T/p/sessions.journal"
        status_item() { printf '{"id":%d,"method":"session_status","params":{"session_id":"%s"}}' "$1" "$2"; }
        # authenticate + 16 requests in ONE write: more than two frames, and
        # more than the service answers per wakeup. Each request sees the
        # effect of the one before it (id 3 finds the session id 2 created);
        # an error answer (id 6) does not stop the rest.
        items=('{"id":1,"method":"capabilities"}' "$(create_item 2 p-1 k-1)" "$(status_item 3 p-1)"
                "$(create_item 4 p-2 k-2)" "$(create_item 5 p-3 k-3)" '{"id":6,"method":"no_such_method"}')
        for id in {7..16}; do items+=("$(status_item "$id" p-3)"); done
        frames pipeline "${items[@]}"
        expect_status 0
        [ "${#lines[@]}" -eq 17 ] || fail "expected the auth answer and 16 responses"
        [[ "${lines[0]}" == 'auth {"id":0,"result":{"authenticated":true'* ]] || fail "authentication"
        [[ "${lines[1]}" == '{"id":1,"result":{'* ]] || fail "capabilities"
        [[ "${lines[2]}" == '{"id":2,"result":{'*'"session_id":"p-1","state":"created"}}' ]] || fail "create p-1"
        [[ "${lines[3]}" == '{"id":3,"result":{'*'"session_id":"p-1"'* ]] || fail "status p-1 after its creation"
        [[ "${lines[4]}" == '{"id":4,"result":{'*'"session_id":"p-2","state":"created"}}' ]] || fail "create p-2"
        [[ "${lines[5]}" == '{"id":5,"result":{'*'"session_id":"p-3","state":"created"}}' ]] || fail "create p-3"
        [[ "${lines[6]}" == '{"error":{"code":"method_not_found"'*'"id":6}' ]] || fail "unknown method"
        for id in {7..16}; do
                [[ "${lines[id]}" == "{\"id\":$id,\"result\":{"*'"session_id":"p-3"'* ]] || fail "status $id"
        done
        # The sessions are stored: a separate client finds every one.
        for sid in p-1 p-2 p-3; do
                ctl session-status "$sid"
                expect_status 0
                expect_line "session $sid: created"
        done

        # Frames split across writes, some writes ending two or three frames
        # and starting the next: the same answers, in order.
        items=()
        for id in {1..12}; do items+=("$(status_item "$id" "p-$((id % 3 + 1))")"); done
        frames pipeline --chunk 150 "${items[@]}"
        expect_status 0
        [ "${#lines[@]}" -eq 13 ] || fail "expected the auth answer and 12 responses (split writes)"
        for id in {1..12}; do
                [[ "${lines[id]}" == "{\"id\":$id,\"result\":{"*"\"session_id\":\"p-$((id % 3 + 1))\""* ]] ||
                        fail "split writes: status $id"
        done

        # A client that writes its requests and shuts down its write side
        # still gets every answer; then the service closes the connection.
        frames pipeline --shut "$(status_item 1 p-1)" "$(create_item 2 p-4 k-4)" '{"id":3,"method":"capabilities"}'
        expect_status 0
        [ "${#lines[@]}" -eq 5 ] || fail "expected the auth answer, 3 responses and EOF (half-close)"
        [[ "${lines[2]}" == '{"id":2,"result":{'*'"session_id":"p-4","state":"created"}}' ]] || fail "create p-4"
        [[ "${lines[3]}" == '{"id":3,"result":{'* ]] || fail "capabilities after half-close"
        [ "${lines[4]}" = EOF ] || fail "the service must close after answering a half-closed client"
        ctl session-status p-4
        expect_status 0
        ! grep -q "deadline passed" "$GD_ERR" || fail "no connection may wait for a deadline"
}

@test "protocol: 100 concurrent clients are all served" {
        start_gloved "$T/a"
        frames concurrent 100
        expect_status 0
        expect_output "ok 100"
        ctl capabilities
        expect_status 0
}

@test "protocol: a stalled client is dropped without stalling the others" {
        start_gloved "$T/a" --client-timeout-ms 400
        for kind in half-frame silent no-read; do
                frames stall "$kind" 4
                expect_status 0
                [[ "${lines[0]}" =~ ^a-closed\ [0-9.]+$ ]] || fail "$kind: the stalled client was not dropped"
                [ "${lines[1]#b-ok }" -ge 5 ] || fail "$kind: the other client was not served"
                # Not a timing benchmark: only that nobody waited for the stall.
                [ "${lines[2]#b-max-ms }" -lt 400 ] || fail "$kind: the other client waited for the stalled one"
        done
        grep -q "connection dropped: frame deadline passed" "$GD_ERR" || fail "no frame deadline drop"
        grep -q "connection dropped: authentication deadline passed" "$GD_ERR" || fail "no auth deadline drop"
        grep -q "connection dropped: send deadline passed" "$GD_ERR" || fail "no send deadline drop"
}

@test "protocol: create_session is idempotent; conflicts and invalid plans are refused" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        plan_file "$T/plan.json"
        plan_file "$T/other.json" 61000
        start_gloved "$T/a" --session-policy "$T/p/policy.json" --session-store "$T/p/sessions.journal"
        ctl validate-plan "$T/plan.json"
        expect_status 0
        [[ "$output" == "valid plan: plan_content_digest "* ]] || fail "the plan must validate"
        digest=$(sha256sum <"$T/plan.json" | cut -d' ' -f1)
        [[ "$output" == *"$digest"* ]] || fail "plan_content_digest must be the SHA-256 of the plan bytes"

        ctl --json create-session --session-id s-1 --idempotency-key k-1 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        first=$output
        [[ "$first" == *'"state":"created"'* ]] || fail "a new session is created"
        ctl --json create-session --session-id s-1 --idempotency-key k-1 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        expect_output "$first"

        ctl create-session --session-id s-1 --idempotency-key k-1 --controller-digest "$CDIGEST" --plan "$T/other.json"
        expect_refused session.conflict
        ctl create-session --session-id s-1 --idempotency-key k-2 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_refused session.conflict
        ctl create-session --session-id s-2 --idempotency-key k-1 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_refused session.conflict
        ctl create-session --session-id s-3 --idempotency-key k-3 --controller-digest "${CDIGEST/1/2}" --plan "$T/plan.json"
        expect_status 0
        ctl create-session --session-id s-4 --idempotency-key k-4 --controller-digest ABC --plan "$T/plan.json"
        expect_refused store.invalid_digest

        plan_file "$T/expired.json" -1000
        ctl create-session --session-id s-5 --idempotency-key k-5 --controller-digest "$CDIGEST" --plan "$T/expired.json"
        expect_status 1
        [[ "$stderr" == "glove: plan.invalid: "* ]] || fail "an expired plan must be refused"
        expect_line 'reason plan.expired at $.expires_at_ms'
        ctl validate-plan "$T/expired.json"
        expect_status 1
        ctl --json validate-plan "$T/expired.json"
        expect_status 1
        [[ "$output" == *'"valid":false'* ]] || fail "--json shows the verdict"
        printf '{"b":1,"a":2}' >"$T/noncanonical.json"
        ctl validate-plan "$T/noncanonical.json"
        expect_status 1
        expect_line 'reason plan.not_canonical at $'

        ctl session-status s-1
        expect_status 0
        expect_line "session s-1: created"
        ctl session-status s-9
        expect_refused session.not_found
        ctl receipts
        expect_status 0
        expect_line "head: 0 0000000000000000000000000000000000000000000000000000000000000000"
        ctl receipts-ack --sequence 1 --head-mac "$CDIGEST"
        expect_refused receipts.ack_mismatch
        ctl receipts-ack --sequence 0 --head-mac 0000000000000000000000000000000000000000000000000000000000000000
        expect_status 0
}

@test "protocol: glove ctl exit codes and usage" {
        RT=$T/nothing-here
        ctl capabilities
        expect_glove_error 125
        [ "$(glove_error_code)" = client.unreachable ] || fail "no service"
        start_gloved "$T/a"
        ctl frobnicate
        expect_glove_error 125
        ctl session-status
        expect_glove_error 125
        ctl --help
        expect_status 0
        [[ "$output" == *"create-session --session-id ID"* ]] || fail "help text"
        run --separate-stderr "$GLOVE" --help
        [[ "$output" == *"ctl [OPTIONS] COMMAND"* ]] || fail "glove --help lists ctl"
}

# leak_runtime: $T/leak/rt holds a hard link of gloved's socket and a copy of
# its bootstrap secret (what an agent granted a live runtime directory would
# reach; such a grant is itself refused, grant.gloved_runtime, so the peer
# check is tested as the second layer); sets LEAK.
leak_runtime() {
        LEAK=$T/leak
        rm -rf "$LEAK" && mkdir -p "$LEAK/rt"
        ln "$RT/gloved.sock" "$LEAK/rt/gloved.sock"
        cp "$RT/bootstrap-secret" "$LEAK/rt/bootstrap-secret"
}

@test "protocol: a sandbox that reads the bootstrap secret through a grant is refused (auth.foreign_user_namespace); the host's glove ctl is served" {
        start_gloved "$T/a"
        # Granting the runtime directory itself is refused at the grant.
        run --separate-stderr timeout -k 5 60 "$GLOVE" exec --read "$RT" --read "$LIB" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.gloved_runtime ] || fail "expected grant.gloved_runtime: $stderr"
        # The agent reaches the socket and the secret anyway (leaked): it
        # authenticates with the right secret, and is refused for its namespace.
        leak_runtime
        run --separate-stderr timeout -k 5 60 "$GLOVE" exec --unix-sockets --read "$LEAK" --read "$LIB" -- \
                "$PY" "$CTLFRAME" "$LEAK/rt" exchange '{"id":1,"method":"capabilities"}'
        [[ "${lines[0]-}" == 'auth {"error":{"code":"auth.foreign_user_namespace",'* ]] ||
                fail "a sandbox's peer was not refused: $output // $stderr"
        [ "${lines[1]-}" = EOF ] || fail "the connection must close after the refusal: $output"
        grep -q "connection refused: auth.foreign_user_namespace" "$GD_ERR" || fail "gloved did not log the refusal"
        # Any first request gets the same answer, not auth.required.
        run --separate-stderr timeout -k 5 60 "$GLOVE" exec --unix-sockets --read "$LEAK" --read "$LIB" -- \
                "$PY" "$CTLFRAME" "$LEAK/rt" exchange --no-auth '{"id":1,"method":"capabilities"}'
        [[ "$output" == *'"code":"auth.foreign_user_namespace"'* ]] || fail "an unauthenticated request: $output"
        # A peer in a user namespace of its own outside any sandbox as well.
        if unshare --user --map-current-user true 2>/dev/null; then
                run --separate-stderr timeout -k 5 60 unshare --user --map-current-user "$GLOVE" ctl --runtime-dir "$RT" capabilities
                expect_status 125
                [[ "$stderr" == *"client.auth_failed"*"auth.foreign_user_namespace"* ]] || fail "unshare --user peer: $stderr"
        fi
        # The host's own glove ctl, in gloved's user namespace.
        ctl capabilities
        expect_status 0
        [[ "$output" == *"service: gloved"* ]] || fail "the host's glove ctl was not served: $output // $stderr"
}

@test "protocol: gloved in a user namespace of its own (unshare --user) serves the host's glove ctl, and refuses a sibling namespace" {
        unshare --user --map-root-user true 2>/dev/null || skip "unshare --user --map-root-user is not permitted here"
        RT=$T/u/run ST=$T/u/state GD_ERR=$T/u.gloved.err
        unshare --user --map-root-user "$GLOVED" --runtime-dir "$RT" --state-dir "$ST" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RT" "$GD_PID"
        [ "$(readlink /proc/$GD_PID/ns/user 2>/dev/null || echo x)" != "$(readlink /proc/self/ns/user)" ] ||
                fail "gloved is not in a user namespace of its own"
        # The shell's namespace is an ancestor of gloved's: glove ctl proves
        # it with a descriptor of gloved's namespace and is served.
        ctl capabilities
        expect_status 0
        [[ "$output" == *"service: gloved"* ]] || fail "the host's glove ctl was refused: $output // $stderr"
        # A sibling namespace (what glove exec makes) is refused, secret or not.
        leak_runtime
        run --separate-stderr timeout -k 5 60 "$GLOVE" exec --unix-sockets --read "$LEAK" --read "$LIB" -- \
                "$PY" "$CTLFRAME" "$LEAK/rt" exchange '{"id":1,"method":"capabilities"}'
        [[ "${lines[0]-}" == 'auth {"error":{"code":"auth.foreign_user_namespace",'* ]] ||
                fail "a sandbox beside gloved was not refused: $output // $stderr"
        run --separate-stderr timeout -k 5 60 unshare --user --map-current-user "$GLOVE" ctl --runtime-dir "$RT" capabilities
        expect_status 125
        [[ "$stderr" == *"auth.foreign_user_namespace"* ]] || fail "a sibling glove ctl was not refused: $stderr"
}

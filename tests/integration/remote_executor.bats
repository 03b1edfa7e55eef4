#!/usr/bin/env bats
# glove-remote-executor --stdio, the forced command of a remote host for the
# construction-only remote backend (docs/remote-executor.md): its argument
# list, its identity file, and its frames, driven by a frame client
# (lib/rexec.py).
#
# The executor reads its identity only from /etc/glove/remote-executor.identity
# (no option, no environment). Each test gives it its own: the executor runs
# in a private mount namespace (unshare -m) where /etc is a read-only
# overlay whose top layer is the test's directory $ETCX (holding
# glove/remote-executor.identity) over the host's /etc. The test's
# glove directory is opaque (trusted.overlay.opaque), so a host's own
# /etc/glove never shows through. Needs root (mount); runs in the asan cell.

load helpers

setup_file() {
        is_root || skip "the executor's fixed /etc path is given to it in a mount namespace, which needs root"
        export EXE
        EXE="$(dirname "$GLOVE")/glove-remote-executor"
        [ -x "$EXE" ] || { echo "no glove-remote-executor beside $GLOVE" >&2; return 1; }
        export EXE_SHA IMAGE_SHA
        EXE_SHA=$(sha256sum "$EXE" | cut -d' ' -f1)
        IMAGE_SHA=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
        # The overlay must work here; when it cannot, say why (never a silent pass).
        local probe why
        probe=$(mktemp -d)
        mkdir -p "$probe/etcx/glove"
        if ! why=$(unshare -m sh -c 'mount -t overlay overlay -o lowerdir="$1":/etc /etc && test -d /etc/glove' \
                sh "$probe/etcx" 2>&1); then
                rm -rf "$probe"
                skip "an overlay on /etc in a mount namespace is not possible on this host: ${why:-mount failed}"
        fi
        rm -rf "$probe"
}

setup() {
        ETCX=$BATS_TEST_TMPDIR/etcx
        case "$ETCX" in *[:,]*) fail "the test directory $ETCX holds ':' or ',' (overlay lowerdir)" ;; esac
        mkdir -p "$ETCX/glove"
        chmod 0755 "$ETCX" "$ETCX/glove"
        "$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.overlay.opaque", b"y")' "$ETCX/glove"
        IDF=$ETCX/glove/remote-executor.identity
}

# identity TEXT: writes the identity file (root, 0644).
identity() {
        printf '%s' "$1" >"$IDF"
        chmod 0644 "$IDF"
}

good_identity() {
        identity "{\"executable_sha256\": \"$EXE_SHA\", \"image_sha256\": \"$IMAGE_SHA\"}
"
}

# rx [--hold=pipe|--hold=socket] ITEM...: the frame client (lib/rexec.py)
# against the executor with $ETCX as the top of /etc; stdout is the
# client's report: the responses, "exit N", "stderr: LINE"... With RX_AS
# set, the executor runs as that uid and gid (setpriv, after the mount).
rx() {
        local as=()
        [ -z "${RX_AS:-}" ] || as=(setpriv --reuid="$RX_AS" --regid="$RX_AS" --clear-groups)
        run --separate-stderr timeout -k 5 30 "$PY" "$LIB/rexec.py" "$@" -- \
                unshare -m sh -c 'mount -t overlay overlay -o lowerdir="$1":/etc /etc && shift && exec "$@" --stdio' \
                sh "$ETCX" "${as[@]}" "$EXE"
        [ "$status" -eq 0 ] || fail "the frame client failed"
}

HEALTH='{"id":1,"method":"remote_health","ttl_ms":5000}'

# The response of a healthy request with id N.
health_of() {
        echo "{\"id\":$1,\"result\":{\"executable_sha256\":\"$EXE_SHA\",\"image_sha256\":\"$IMAGE_SHA\",\"status\":\"not_operational\"}}"
}

# refused CODE: the executor stopped on its identity: no response to the
# request sent, exit 3, one stderr line with CODE.
refused() {
        [ "${#lines[@]}" -eq 2 ] || fail "expected exactly 'exit 3' and one stderr line"
        expect_line "exit 3"
        [[ "${lines[1]}" == "stderr: glove-remote-executor: $1: "* ]] || fail "expected the stderr line of $1"
}

@test "remote executor: any argument list but exactly --stdio is executor.usage, exit 2, before the identity is read" {
        local args
        for args in "" "--help" "--stdio --help" "--stdio --stdio" "--stdio=1"; do
                # shellcheck disable=SC2086
                run --separate-stderr timeout 10 "$EXE" $args </dev/null
                [ "$status" -eq 2 ] || fail "argv '$args': expected exit 2"
                [ -z "$output" ] || fail "argv '$args': something on stdout"
                [[ "$stderr" == "glove-remote-executor: executor.usage: usage: glove-remote-executor --stdio "* ]] ||
                        fail "argv '$args': expected the executor.usage line"
                [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ] || fail "argv '$args': more than one stderr line"
        done
}

@test "remote executor: remote_health answers not_operational with both digests; every other method is method_not_found; end of input is exit 0" {
        good_identity
        rx "$HEALTH" read status:Umask \
                '{"id":2,"method":"start_session","ttl_ms":5000,"params":{"runtime_id":"cloudflare-os"}}' \
                '{"id":3,"method":"attach","ttl_ms":5000}' \
                '{"id":4,"method":"cleanup_session","ttl_ms":5000,"params":{}}' \
                '{"id":5,"method":"remote_health","ttl_ms":5000,"params":{}}'
        expect_output "$(health_of 1)
Umask: 0077
{\"error\":{\"code\":\"method_not_found\",\"message\":\"no method start_session: this executor is construction evidence only and answers remote_health alone\"},\"id\":2}
{\"error\":{\"code\":\"method_not_found\",\"message\":\"no method attach: this executor is construction evidence only and answers remote_health alone\"},\"id\":3}
{\"error\":{\"code\":\"method_not_found\",\"message\":\"no method cleanup_session: this executor is construction evidence only and answers remote_health alone\"},\"id\":4}
$(health_of 5)
exit 0"
}

@test "remote executor: a missing or empty identity is refused before any frame is read (exit 3, nothing on stdout)" {
        rx "$HEALTH"
        refused executor.identity_missing
        [[ "${lines[1]}" == *"/etc/glove/remote-executor.identity does not exist"* ]] || fail "the path is not named"
        identity ""
        rx "$HEALTH"
        refused executor.identity_empty
        identity $'  \n\n'
        rx "$HEALTH"
        refused executor.identity_empty
}

@test "remote executor: a malformed identity is refused: not JSON, an extra member, duplicate keys, bad hex (the unit tests try the rest)" {
        local upper
        upper=$(printf '%s' "$EXE_SHA" | tr a-f A-F)
        local bad
        for bad in "not json" \
                "{\"executable_sha256\": \"$EXE_SHA\", \"image_sha256\": \"$IMAGE_SHA\", \"tag\": \"latest\"}" \
                "{\"executable_sha256\": \"$EXE_SHA\", \"executable_sha256\": \"$EXE_SHA\", \"image_sha256\": \"$IMAGE_SHA\"}" \
                "{\"executable_sha256\": \"$upper\", \"image_sha256\": \"$IMAGE_SHA\"}" \
                "{\"executable_sha256\": \"$EXE_SHA\", \"image_sha256\": \"sha256:$IMAGE_SHA\"}"; do
                identity "$bad"
                rx "$HEALTH"
                refused executor.identity_malformed
        done
}

@test "remote executor: an identity file or directory writable by group or others is refused" {
        good_identity
        local mode
        for mode in 0664 0646; do
                chmod "$mode" "$IDF"
                rx "$HEALTH"
                refused executor.identity_writable
        done
        chmod 0644 "$IDF"
        chmod 0775 "$ETCX/glove"
        rx "$HEALTH"
        refused executor.identity_writable
        [[ "${lines[1]}" == *"directory /etc/glove"* ]] || fail "the directory is not named"
        # The same file, once protected, is accepted: the refusals were the mode.
        chmod 0755 "$ETCX/glove"
        rx "$HEALTH"
        expect_output "$(health_of 1)
exit 0"
}

@test "remote executor: an identity file or directory not owned by root is refused, and a symbolic link is not followed" {
        good_identity
        chown 65534:65534 "$IDF"
        rx "$HEALTH"
        refused executor.identity_owner
        [[ "${lines[1]}" == *"owned by uid 65534"* ]] || fail "the owner is not named"
        chown 0:0 "$IDF"
        chown 65534:0 "$ETCX/glove"
        rx "$HEALTH"
        refused executor.identity_owner
        chown 0:0 "$ETCX/glove"
        mv "$IDF" "$ETCX/glove/real"
        ln -s real "$IDF"
        rx "$HEALTH"
        refused executor.identity_type
}

# The unit tests try a FIFO and a directory too.
@test "remote executor: an identity that is a socket or a device is executor.identity_type, never opened" {
        good_identity
        rm "$IDF"
        # Bound from inside the directory: the whole path may be too long for sun_path.
        (cd "$ETCX/glove" && "$PY" -c 'import socket; socket.socket(socket.AF_UNIX).bind("remote-executor.identity")')
        chmod 0644 "$IDF"
        rx "$HEALTH"
        refused executor.identity_type
        [[ "${lines[1]}" == *"/etc/glove/remote-executor.identity is a socket, not a regular file"* ]] ||
                fail "the socket is not reported as one"
        rm "$IDF"
        mknod -m 0644 "$IDF" c 1 3
        rx "$HEALTH"
        refused executor.identity_type
        [[ "${lines[1]}" == *"is a character device, not a regular file"* ]] || fail "the device is not reported as one"
}

@test "remote executor: an identity naming another executable is executor.identity_mismatch" {
        local other
        other=$(printf 'another build' | sha256sum | cut -d' ' -f1)
        identity "{\"executable_sha256\": \"$other\", \"image_sha256\": \"$IMAGE_SHA\"}"
        rx "$HEALTH"
        refused executor.identity_mismatch
        [[ "${lines[1]}" == *"is $EXE_SHA but the identity expects $other"* ]] || fail "the digests are not given"
}

@test "remote executor: an oversized frame ends the channel after one error frame (exit 4)" {
        good_identity
        # A 16385-byte length prefix; no payload needs to follow.
        rx "$HEALTH" read raw:00004001 "$HEALTH"
        expect_output "$(health_of 1)
{\"error\":{\"code\":\"executor.frame_too_large\",\"message\":\"a frame of 16385 bytes exceeds the bound of 16384 bytes\"},\"id\":null}
exit 4
stderr: glove-remote-executor: executor.frame_too_large: a frame of 16385 bytes exceeds the bound of 16384 bytes"
}

@test "remote executor: end of input inside a frame ends the channel after one error frame (exit 4)" {
        good_identity
        # 48 bytes announced, 4 sent, then the client closes its side.
        rx "$HEALTH" raw:000000307b226964
        expect_output "$(health_of 1)
{\"error\":{\"code\":\"executor.frame_truncated\",\"message\":\"the input ended after 4 of the 48 bytes of a frame\"},\"id\":null}
exit 4
stderr: glove-remote-executor: executor.frame_truncated: the input ended after 4 of the 48 bytes of a frame"
        rx "$HEALTH" raw:0000
        [ "${lines[1]}" = '{"error":{"code":"executor.frame_truncated","message":"the input ended after 2 of the 4 bytes of a frame'"'"'s length prefix"},"id":null}' ] ||
                fail "expected frame_truncated in the prefix"
        expect_line "exit 4"
}

@test "remote executor: a frame whose receipt uses up its TTL is rejected with executor.ttl_expired, and the channel goes on" {
        good_identity
        # The read of response 1 makes sure the executor waits for frame 2
        # before its prefix is sent; its body follows 400 ms later, so the
        # receipt alone takes longer than the 200 ms TTL (a test input).
        rx "$HEALTH" read 'split:400:{"id":2,"method":"remote_health","ttl_ms":200}' \
                '{"id":3,"method":"remote_health","ttl_ms":5000}'
        [ "${#lines[@]}" -eq 4 ] || fail "expected three responses and the exit"
        [ "${lines[0]}" = "$(health_of 1)" ] || fail "response 1"
        [[ "${lines[1]}" == '{"error":{"code":"executor.ttl_expired","message":"the request'"'"'s TTL of 200 ms was used up while its frame was received ('*' ms)"},"id":2}' ]] ||
                fail "expected ttl_expired for request 2"
        [ "${lines[2]}" = "$(health_of 3)" ] || fail "response 3"
        expect_line "exit 0"
}

@test "remote executor: malformed bodies, invalid requests and empty frames get an error response and the channel goes on" {
        good_identity
        rx "$HEALTH" 'body:{"id":2,' 'body:[1]' raw:00000000 \
                '{"id":"4","method":"remote_health","ttl_ms":5000}' \
                '{"id":5,"method":"remote_health","ttl_ms":0}' \
                '{"id":6,"method":"remote_health","ttl_ms":5000,"jsonrpc":"2.0"}' \
                '{"id":7,"method":"remote_health","ttl_ms":5000,"params":{"verbose":true}}' \
                '{"id":8,"method":"remote_health","ttl_ms":5000}'
        local want=(
                "$(health_of 1)"
                '{"error":{"code":"executor.frame_malformed",*"id":null}'
                '{"error":{"code":"executor.frame_malformed",*json.not_object*"id":null}'
                '{"error":{"code":"executor.frame_empty",*"id":null}'
                '{"error":{"code":"executor.request_invalid","message":"$.id: *"id":null}'
                '{"error":{"code":"executor.request_invalid","message":"$.ttl_ms: *"id":5}'
                '{"error":{"code":"executor.request_invalid","message":"$.jsonrpc: unknown field*"id":6}'
                '{"error":{"code":"executor.request_invalid","message":"remote_health takes no params"},"id":7}'
                "$(health_of 8)"
                "exit 0"
        )
        [ "${#lines[@]}" -eq "${#want[@]}" ] || fail "expected ${#want[@]} lines"
        local i
        for i in "${!want[@]}"; do
                # shellcheck disable=SC2053
                [[ "${lines[$i]}" == ${want[$i]} ]] || fail "line $i: expected ${want[$i]}"
        done
}

TOO_LARGE='a frame of 16385 bytes exceeds the bound of 16384 bytes'

# framing_exit_of STATE: the client's report after --hold=pipe "$HEALTH"
# read flags raw:00004001 (exit 4), the held stdout being STATE (blocking or
# O_NONBLOCK) while the executor ran.
framing_exit_of() {
        echo "$(health_of 1)
stdout: $1
{\"error\":{\"code\":\"executor.frame_too_large\",\"message\":\"$TOO_LARGE\"},\"id\":null}
exit 4
stdin flags: unchanged
stdout flags: unchanged
stderr: glove-remote-executor: executor.frame_too_large: $TOO_LARGE"
}

# Standard input and output are open file descriptions shared with the
# caller (sshd, a wrapper script, a pipeline): the client holds the
# executor's own ends too and compares their F_GETFL flags before and after.
@test "remote executor: the caller's stdin and stdout (pipes or sockets it holds too) keep their flags, after exit 0 and exit 4" {
        good_identity
        local hold
        for hold in pipe socket; do
                rx --hold=$hold "$HEALTH" read flags
                expect_output "$(health_of 1)
stdout: blocking
exit 0
stdin flags: unchanged
stdout flags: unchanged"
        done
        rx --hold=pipe "$HEALTH" read flags raw:00004001
        expect_output "$(framing_exit_of blocking)"
}

# A pipe created by root cannot be reopened by uid 65534 (mode 0600): the
# executor has to set O_NONBLOCK on the shared description (seen while it
# runs) and must clear it on every way out.
@test "remote executor: when stdout cannot be reopened privately, the O_NONBLOCK set on it is cleared again after exit 0, exit 4 and SIGTERM" {
        good_identity
        setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$EXE" || fail "uid 65534 cannot run $EXE"
        RX_AS=65534
        rx --hold=pipe "$HEALTH" read flags
        expect_output "$(health_of 1)
stdout: O_NONBLOCK
exit 0
stdin flags: unchanged
stdout flags: unchanged"
        rx --hold=pipe "$HEALTH" read flags raw:00004001
        expect_output "$(framing_exit_of O_NONBLOCK)"
        rx --hold=pipe "$HEALTH" read flags signal:TERM
        expect_output "$(health_of 1)
stdout: O_NONBLOCK
signal TERM
stdin flags: unchanged
stdout flags: unchanged"
}

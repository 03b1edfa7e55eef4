#!/usr/bin/env bats
# Network: only a loopback interface, and socket() for any family but AF_UNIX
# fails with EPERM. Every attempt targets this machine only.

load helpers

teardown() { kill_tracked; }

@test "network: AF_INET and AF_INET6 sockets are refused with EPERM (python socket)" {
        gx "${PROBE[@]}" socket AF_INET SOCK_STREAM socket AF_INET SOCK_DGRAM socket AF_INET SOCK_RAW \
                socket AF_INET6 SOCK_STREAM socket AF_INET6 SOCK_DGRAM
        expect_status 0
        expect_line "socket AF_INET SOCK_STREAM EPERM"
        expect_line "socket AF_INET SOCK_DGRAM EPERM"
        expect_line "socket AF_INET SOCK_RAW EPERM"
        expect_line "socket AF_INET6 SOCK_STREAM EPERM"
        expect_line "socket AF_INET6 SOCK_DGRAM EPERM"
}

@test "network: AF_NETLINK, AF_PACKET, AF_VSOCK, AF_ALG and AF_KEY sockets are refused with EPERM" {
        gx "${PROBE[@]}" socket AF_NETLINK SOCK_RAW socket AF_NETLINK SOCK_DGRAM socket AF_PACKET SOCK_RAW \
                socket AF_PACKET SOCK_DGRAM socket AF_VSOCK SOCK_STREAM socket AF_ALG SOCK_SEQPACKET socket AF_KEY SOCK_RAW
        expect_status 0
        expect_line "socket AF_NETLINK SOCK_RAW EPERM"
        expect_line "socket AF_NETLINK SOCK_DGRAM EPERM"
        expect_line "socket AF_PACKET SOCK_RAW EPERM"
        expect_line "socket AF_PACKET SOCK_DGRAM EPERM"
        expect_line "socket AF_VSOCK SOCK_STREAM EPERM"
        expect_line "socket AF_ALG SOCK_SEQPACKET EPERM"
        expect_line "socket AF_KEY SOCK_RAW EPERM"
}

@test "network: every address family but AF_UNIX is refused with EPERM" {
        gx "${PROBE[@]}" socket-all
        expect_status 0
        expect_output "socket-all attempts=180 not-eperm=0"
}

@test "network: socketpair works, socket(AF_UNIX) is refused unless --unix-sockets (positive control)" {
        gx "${PROBE[@]}" unix
        expect_status 0
        expect_output "unix EPERM"
        gx --unix-sockets "${PROBE[@]}" unix
        expect_status 0
        expect_output "unix ok:ping"
}

@test "network: only a loopback interface exists" {
        gx -- /bin/sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
        expect_status 0
        expect_output "lo"
        # Positive control: the host has another interface (or the test proves nothing new).
        local host_ifaces
        host_ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -vx lo || true)
        [ -n "$host_ifaces" ] || skip "the host itself has only loopback"
}

@test "network: a service on the host's loopback is unreachable (python and node)" {
        local portfile=$BATS_TEST_TMPDIR/port
        "$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(20)
try:
    while True:
        c, _ = s.accept(); c.sendall(b"HOST-SERVICE\n"); c.close()
except Exception:
    pass
' "$portfile" 3>&- &
        track_pid $!
        wait_for "$portfile" '^[0-9]+$' 10
        local port
        port=$(cat "$portfile")
        # Positive control: reachable from the host.
        "$PY" -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3); assert s.recv(64).startswith(b"HOST-SERVICE")' "$port"

        gx "${PROBE[@]}" connect 127.0.0.1 "$port" connect ::1 "$port"
        expect_status 0
        expect_line "connect 127.0.0.1 $port EPERM"
        expect_line "connect ::1 $port EPERM"

        gx --read "$AGENTS" -- "$NODE" -e '
const net = require("net");
const s = net.connect({host: "127.0.0.1", port: Number(process.argv[1])});
s.on("connect", () => { console.log("connected"); process.exit(0); });
s.on("error", (e) => { console.log("error " + e.code); process.exit(0); });
' "$port"
        expect_status 0
        expect_output "error EPERM"
}

@test "network: the host's abstract AF_UNIX sockets are unreachable" {
        local name=glove-it-abstract-$$-$RANDOM ready=$BATS_TEST_TMPDIR/ready
        "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(b"\0" + sys.argv[1].encode()); s.listen(8); s.settimeout(20)
open(sys.argv[2], "w").write("ready\n")
try:
    while True:
        c, _ = s.accept(); c.sendall(b"HOST-ABSTRACT\n"); c.close()
except Exception:
    pass
' "$name" "$ready" 3>&- &
        track_pid $!
        wait_for "$ready" '^ready$' 10
        # Positive control: reachable from the host.
        run "$PY" "$AGENTS/probe.py" connect-abstract "$name"
        [ "$output" = "connect-abstract $name ok:HOST-ABSTRACT" ] || fail "host cannot reach its own abstract socket"
        gx "${PROBE[@]}" connect-abstract "$name"
        expect_status 0
        expect_output "connect-abstract $name EPERM"
        # With Unix sockets allowed, the network namespace still confines them.
        gx --unix-sockets "${PROBE[@]}" connect-abstract "$name"
        expect_status 0
        expect_output "connect-abstract $name ECONNREFUSED"
}

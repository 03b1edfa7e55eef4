#!/usr/bin/env bats
# Descriptors: only 0, 1 and 2 reach the agent, whatever glove inherited.

load helpers

@test "descriptors: a descriptor the parent leaked (exec 7</etc/hostname) is not inherited" {
        exec 7</etc/hostname
        # Positive control: this shell (and so glove) really holds fd 7.
        [ -e /proc/self/fd/7 ] || fail "fd 7 is not open in the test shell"
        gx -- /bin/sh -c 'ls /proc/self/fd | tr "\n" " "; echo; test -e /proc/self/fd/7 && echo fd7-present; cat <&7 && echo read-fd7'
        exec 7<&-
        expect_output "0 1 2 3 "
        expect_no_text fd7-present
        expect_no_text read-fd7
}

@test "descriptors: ls /proc/self/fd shows 0 1 2 and its own, with many descriptors leaked" {
        local log=$BATS_TEST_TMPDIR/leak.log
        : >"$log"
        exec 8>>"$log" 9</ 200</etc/passwd
        gx -- /bin/ls /proc/self/fd
        exec 8>&- 9<&- 200<&-
        expect_status 0
        expect_output "$(printf '0\n1\n2\n3')"
}

@test "descriptors: a leaked writable descriptor cannot be written, a leaked directory cannot be escaped through" {
        local log=$BATS_TEST_TMPDIR/leak.log
        : >"$log"
        exec 8>>"$log" 9</
        gx -- /bin/sh -c 'echo escaped >&8; ls /proc/self/fd/9/ 2>&1 | head -3; cd /proc/self/fd/9 2>/dev/null && ls'
        exec 8>&- 9<&-
        [ ! -s "$log" ] || fail "the agent wrote through a leaked descriptor"
        expect_no_line etc
        expect_no_line root
}

@test "descriptors: descriptors passed by a launcher (socket, pipe, file) are closed for the agent" {
        run --separate-stderr "$PY" - "$GLOVE" "$PY" <<'EOF'
import os, socket, subprocess, sys
glove, py = sys.argv[1], sys.argv[2]
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
r, w = os.pipe()
f = os.open("/etc/passwd", os.O_RDONLY)
fds = [srv.fileno(), r, w, f]
for fd in fds:
    os.set_inheritable(fd, True)
p = subprocess.run([glove, "exec", "--", py, "-c",
                    "import os; print(sorted(int(x) for x in os.listdir('/proc/self/fd')))"],
                   pass_fds=fds, capture_output=True, text=True, timeout=30)
print("passed", sorted(fds))
print(p.stdout.strip())
sys.stderr.write(p.stderr)
sys.exit(p.returncode)
EOF
        expect_status 0
        # python's listdir holds one descriptor of its own (3).
        [ "${lines[1]}" = "[0, 1, 2, 3]" ] || fail "only 0 1 2 may reach the agent"
}

@test "descriptors: a file given read-only as stdin cannot be reopened for writing (/proc/self/fd/0)" {
        local f=$BATS_TEST_TMPDIR/task.txt
        echo "original task" >"$f"
        run --separate-stderr timeout --foreground 30 "$GLOVE" exec -- /bin/sh -c \
                'read -r line; echo "read: $line"; echo pwned 2>/dev/null >/proc/self/fd/0 && echo reopened-for-write' <"$f"
        expect_status 0
        expect_line "read: original task"
        # The file reaches the agent through a pipe: reopening /proc/self/fd/0
        # for writing gives the pipe's other end, never the file.
        [ "$(cat "$f")" = "original task" ] || fail "the agent rewrote the stdin file outside its grants: $(cat "$f")"
}

@test "descriptors: a file given append-only as stdout cannot be reopened to read or truncate it (/proc/self/fd/1)" {
        local f=$BATS_TEST_TMPDIR/session.log
        echo "earlier secret record" >"$f"
        local a=$BATS_TEST_TMPDIR/agent
        mkdir -p "$a"
        cat >"$a/reopen.py" <<'EOF'
import os, sys
try:
    # stdout may be a pipe to Glove: reopening it then reads at most the
    # agent's own output (non-blocking, so an empty pipe cannot hang the test).
    fd = os.open("/proc/self/fd/1", os.O_RDONLY | os.O_NONBLOCK)
    sys.stderr.write(os.read(fd, 4096).decode())
except OSError as e:
    sys.stderr.write("reopen for reading: %s\n" % e.strerror)
try:
    os.close(os.open("/proc/self/fd/1", os.O_WRONLY | os.O_TRUNC))
except OSError as e:
    sys.stderr.write("reopen for truncating: %s\n" % e.strerror)
print("appended", flush=True)
EOF
        run --separate-stderr timeout --foreground 30 bash -c '"$1" exec --read "$4" -- "$2" "$4/reopen.py" >>"$3"' \
                _ "$GLOVE" "$PY" "$f" "$a"
        expect_status 0
        [[ "${stderr-}" != *"earlier secret record"* ]] || fail "the agent read earlier content of its append-only stdout file"
        grep -qx "earlier secret record" "$f" || fail "the agent truncated its append-only stdout file: $(cat "$f")"
        grep -qx appended "$f" || fail "positive control: the agent's output must be appended"
}

@test "descriptors: a file given as stderr cannot be reopened to read its earlier content (/proc/self/fd/2)" {
        local f=$BATS_TEST_TMPDIR/errors.log
        echo "earlier secret error" >"$f"
        run --separate-stderr timeout --foreground 30 bash -c '"$1" exec -- "$2" -c "$3" 2>>"$4"' _ "$GLOVE" "$PY" '
import os
try:
    fd = os.open("/proc/self/fd/2", os.O_RDONLY | os.O_NONBLOCK)
    print("read:", os.read(fd, 4096).decode().strip())
except OSError as e:
    print("reopen for reading:", e.strerror)' "$f"
        expect_status 0
        expect_no_text "earlier secret error"
        grep -qx "earlier secret error" "$f" || fail "the stderr file lost its earlier content"
}

# Glove's stdin is never handed to the agent as it is: without a terminal the
# agent reads a fresh pipe that Glove fills from its own stdin, so the host
# object behind it (a socket, a pipe, a device) cannot be written to, sent
# through, reopened or chmod'ed from inside.

@test "descriptors: a unix socketpair as stdin cannot be written back to the peer; every byte still arrives" {
        run --separate-stderr "$PY" - "$GLOVE" "$PY" <<'EOF'
import hashlib, os, socket, subprocess, sys, threading
glove, py = sys.argv[1], sys.argv[2]
# What Node's child_process 'pipe' stdio and socket activation give a child.
# Glove's end is non-blocking, as a launcher may leave it, and the second
# half is sent only once the agent has read the first: Glove's stdin is then
# empty for a while, which is not its end.
a, b = socket.socketpair()
os.set_blocking(b.fileno(), False)
half = 1 << 19
data = os.urandom(2 * half)
agent = r"""
import hashlib, os, socket, sys
first = sys.stdin.buffer.read(%d)
print("half", len(first), flush=True)
d = first + sys.stdin.buffer.read()
print("read", len(d), hashlib.sha256(d).hexdigest(), flush=True)
for name, try_it in (("write", lambda: os.write(0, b"escaped through stdin\n")),
                     ("send", lambda: socket.socket(fileno=os.dup(0)).send(b"escaped through stdin\n"))):
    try:
        try_it(); print(name, "ok", flush=True)
    except OSError as e:
        print(name, "failed:", e.strerror, flush=True)
""" % half
p = subprocess.Popen([glove, "exec", "--", py, "-c", agent], stdin=b.fileno(), stdout=subprocess.PIPE, text=True)
b.close()
threading.Thread(target=a.sendall, args=(data[:half],), daemon=True).start()
out = [p.stdout.readline()]
a.sendall(data[half:])
a.shutdown(socket.SHUT_WR)
out += p.stdout.readlines()
rc = p.wait(timeout=30)
a.settimeout(5)
back = b""
try:
    while True:
        chunk = a.recv(65536)
        if not chunk:
            break
        back += chunk
except socket.timeout:
    pass
print("".join(out), end="")
print("expected", len(data), hashlib.sha256(data).hexdigest())
print("peer received %r" % back)
sys.exit(rc)
EOF
        expect_status 0
        expect_line "half 524288"
        [ "${lines[1]#read }" = "${lines[4]#expected }" ] || fail "the agent did not read exactly the bytes sent to Glove's stdin"
        expect_line "peer received b''"
        expect_no_line "write ok"
        expect_no_line "send ok"
}

@test "descriptors: a UDP socket as stdin cannot send to a host service; its datagram is read as bytes" {
        run --separate-stderr "$PY" - "$GLOVE" "$PY" <<'EOF'
import socket, subprocess, sys
glove, py = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
srv.bind(("127.0.0.1", 0))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
u.sendto(b"task by datagram\n", u.getsockname())  # positive control: the agent reads it
agent = r"""
import os, socket, sys
print("read", os.read(0, 100).decode().strip(), flush=True)
try:
    socket.socket(fileno=os.dup(0)).sendto(b"escaped through stdin", ("127.0.0.1", %d))
    print("sendto ok", flush=True)
except OSError as e:
    print("sendto failed:", e.strerror, flush=True)
""" % srv.getsockname()[1]
p = subprocess.run([glove, "exec", "--", py, "-c", agent], stdin=u.fileno(), capture_output=True, text=True, timeout=30)
srv.settimeout(2)
try:
    print(p.stdout, end="")
    print("host service received %r" % (srv.recvfrom(100),))
except socket.timeout:
    print("host service received nothing")
sys.stderr.write(p.stderr)
sys.exit(p.returncode)
EOF
        expect_status 0
        expect_line "read task by datagram"
        expect_no_line "sendto ok"
        expect_line "host service received nothing"
}

@test "descriptors: an anonymous pipe as stdin cannot be reopened for writing into the host pipe (/proc/self/fd/0)" {
        run --separate-stderr "$PY" - "$GLOVE" "$PY" <<'EOF'
import os, subprocess, sys
glove, py = sys.argv[1], sys.argv[2]
r, w = os.pipe()
os.write(w, b"task line\n")
agent = r"""
import os
print("read", os.read(0, 100).decode().strip(), flush=True)
try:
    fd = os.open("/proc/self/fd/0", os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"injected into the host pipe\n")
    print("reopened for writing", flush=True)
except OSError as e:
    print("reopen failed:", e.strerror, flush=True)
"""
# The host keeps its write end open, as a shell pipeline's producer would.
p = subprocess.run([glove, "exec", "--", py, "-c", agent], stdin=r, capture_output=True, text=True, timeout=30)
os.close(w)
os.set_blocking(r, False)
try:
    left = os.read(r, 4096)
except BlockingIOError:
    left = b""
print(p.stdout, end="")
print("host pipe holds %r" % left)
sys.stderr.write(p.stderr)
sys.exit(p.returncode)
EOF
        expect_status 0
        expect_line "read task line"
        expect_line "host pipe holds b''"
}

@test "descriptors: a named FIFO as stdin cannot be chmod'ed by the agent" {
        local fifo=$BATS_TEST_TMPDIR/tasks.fifo
        mkfifo -m 0600 "$fifo"
        run --separate-stderr timeout --foreground 30 bash -c '
                exec 3<>"$2"          # keeps a writer, so opening for reading does not block
                echo "task from fifo" >&3
                "$1" exec -- "$3" -c "
import os
print(\"read\", os.read(0, 100).decode().strip(), flush=True)
try:
    os.fchmod(0, 0o666); print(\"fchmod ok\")
except OSError as e:
    print(\"fchmod failed:\", e.strerror)" <"$2"' _ "$GLOVE" "$fifo" "$PY"
        expect_status 0
        expect_line "read task from fifo"
        [ "$(stat -c %a "$fifo")" = 600 ] || fail "the agent changed the mode of the host's FIFO to $(stat -c %a "$fifo")"
}

@test "descriptors: a null device as stdin reads end of file at once and cannot be chmod'ed by the agent" {
        # A root invoker's agent passes owner checks on root's files: given the
        # host's /dev/null itself, fchmod(0) would change it for the whole
        # host. This test uses its own node of the same device.
        is_root || skip "needs CAP_MKNOD for a null device node of the test's own; an unprivileged invoker's agent cannot chmod root's /dev/null"
        local null=$BATS_TEST_TMPDIR/null
        mknod -m 0666 "$null" c 1 3
        : <"$null" 2>/dev/null || skip "device nodes cannot be opened here (nodev): $BATS_TEST_TMPDIR"
        run --separate-stderr timeout --foreground 30 "$GLOVE" exec -- "$PY" -c '
import os, sys
print("read %r" % sys.stdin.buffer.read(), flush=True)
try:
    os.fchmod(0, 0o600); print("fchmod ok")
except OSError as e:
    print("fchmod failed:", e.strerror)' <"$null"
        expect_status 0
        expect_line "read b''"
        [ "$(stat -c %a "$null")" = 666 ] || fail "the agent changed the mode of the host's null device to $(stat -c %a "$null")"
}

@test "descriptors: end of Glove's stdin reaches the agent however soon it comes (empty file, listening socket; 200 runs)" {
        # The copy into the agent's pipe may meet end of input before Glove
        # has finished starting it; the agent must still see end of file.
        run --separate-stderr "$PY" - "$GLOVE" "$BATS_TEST_TMPDIR/empty" <<'EOF'
import os, socket, subprocess, sys
glove, empty = sys.argv[1], sys.argv[2]
open(empty, "w").close()
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
hangs = 0
for i in range(200):
    with open(empty, "rb") as f:
        stdin = f.fileno() if i % 2 == 0 else listener.fileno()
        try:
            p = subprocess.run([glove, "exec", "--", "/bin/cat"], stdin=stdin, capture_output=True, timeout=10)
            if p.returncode != 0 or p.stdout:
                print("run", i, "exit", p.returncode, p.stdout, p.stderr)
        except subprocess.TimeoutExpired:
            hangs += 1
            print("run", i, "hung: the agent never saw end of file", flush=True)
            if hangs == 2:
                break
print("hangs", hangs)
EOF
        expect_status 0
        expect_output "hangs 0"
}
